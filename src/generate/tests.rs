use super::*;
use proptest::prelude::*;

fn s(v: &str) -> SecretString {
    SecretString::from(v.to_string())
}

fn any_generator() -> impl Strategy<Value = Generator> {
    let classes = proptest::sample::subsequence(CharClass::ALL.to_vec(), 1..=4)
        .prop_map(|c| CharClasses::new(c).expect("non-empty"));
    prop_oneof![
        (MIN_BYTES..=256usize).prop_map(|bytes| Generator::Hex { bytes }),
        Just(Generator::Fernet),
        Just(Generator::Masterkey),
        "[a-zA-Z_-]{1,20}".prop_map(|marker| Generator::Placeholder { marker }),
        (MIN_BYTES..=256usize, any::<bool>())
            .prop_map(|(bytes, url_safe)| Generator::Base64 { bytes, url_safe }),
        (*PASSWORD_LENGTHS.start()..=200usize, classes)
            .prop_map(|(length, classes)| Generator::Password { length, classes }),
        Just(Generator::Uuid),
        Just(Generator::Key(KeyType::Ed25519)),
        Just(Generator::Key(KeyType::EcdsaP256)),
        Just(Generator::SshEd25519),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every generator's output passes its own validator (a placeholder is `Pending` by design).
    #[test]
    fn output_passes_own_validator(g in any_generator()) {
        let v = g.generate().unwrap();
        let want = if g.is_placeholder() { Validity::Pending } else { Validity::Valid };
        prop_assert_eq!(g.validate(&v), want);
    }

    /// Exact length and alphabet for each generator.
    #[test]
    fn exact_length_and_alphabet(g in any_generator()) {
        let v = g.generate().unwrap();
        let v = v.expose_secret();
        match &g {
            Generator::Hex { bytes } => {
                prop_assert_eq!(v.len(), bytes * 2);
                prop_assert!(v.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            }
            Generator::Fernet => {
                prop_assert_eq!(v.len(), 44);
                prop_assert!(v.ends_with('='));
                prop_assert!(v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_=".contains(&b)));
            }
            Generator::Masterkey => {
                prop_assert_eq!(v.len(), 32);
                prop_assert!(v.bytes().all(|b| b.is_ascii_hexdigit()));
            }
            Generator::Placeholder { marker } => prop_assert_eq!(v, marker.as_str()),
            Generator::Base64 { bytes, url_safe } => {
                prop_assert_eq!(v.len(), bytes.div_ceil(3) * 4);
                let extra: &[u8] = if *url_safe { b"-_=" } else { b"+/=" };
                prop_assert!(v.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b)));
            }
            Generator::Password { length, classes } => {
                prop_assert_eq!(v.chars().count(), *length);
                prop_assert!(v.chars().all(|c| classes.contains(c)));
                for class in classes.classes() {
                    prop_assert!(v.chars().any(|c| class.chars().contains(c)), "missing {}", class.name());
                }
            }
            Generator::Uuid => {
                let id = uuid::Uuid::parse_str(v).unwrap();
                prop_assert_eq!(id.get_version_num(), 4);
                prop_assert_eq!(v.len(), 36);
            }
            Generator::Key(_) => {
                prop_assert!(v.starts_with("-----BEGIN PRIVATE KEY-----\n"));
                prop_assert!(v.ends_with("-----END PRIVATE KEY-----\n"));
            }
            Generator::SshEd25519 => {
                prop_assert!(v.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"));
            }
            Generator::Jwks { .. } => prop_assert!(v.starts_with(r#"{"keys":[{"#), "not a JWKS"),
            Generator::Any | Generator::Derived(_) | Generator::FromSecret { .. } => {
                unreachable!("not among the generators drawn")
            }
        }
    }

    /// Every value made is as long as its generator says it can be: exactly, or at least.
    #[test]
    fn values_are_as_long_as_said(g in any_generator()) {
        let v = g.generate().unwrap();
        let n = v.expose_secret().len();
        let longest = g.longest(&|_| unreachable!("no input"));
        match longest.or_more {
            false => prop_assert_eq!(n, longest.bytes),
            true => prop_assert!(n >= longest.bytes, "{} < {}", n, longest.bytes),
        }
    }

    /// Two calls never give the same value (except the placeholder, which is a fixed marker).
    #[test]
    fn values_differ_between_calls(g in any_generator()) {
        prop_assume!(!g.is_placeholder());
        let a = g.generate().unwrap();
        let b = g.generate().unwrap();
        prop_assert_ne!(a.expose_secret(), b.expose_secret());
    }

    /// A hex value of the wrong length is invalid, and the reason never contains the value.
    #[test]
    fn invalid_reason_never_contains_value(v in "[0-9a-f]{20,63}") {
        let r = Generator::Hex { bytes: 32 }.validate(&s(&v));
        match r {
            Validity::Invalid(reason) => prop_assert!(!reason.contains(&v)),
            other => prop_assert!(false, "expected invalid, got {:?}", other),
        }
    }
}

/// The Fernet key is accepted by an independent Fernet implementation (the `fernet` crate) for an
/// encrypt/decrypt round trip.
#[test]
fn fernet_key_round_trips_in_independent_implementation() {
    for _ in 0..32 {
        let key = Generator::Fernet.generate().unwrap();
        let f = fernet::Fernet::new(key.expose_secret()).expect("fernet crate accepts the key");
        let token = f.encrypt(b"core-service data");
        assert_eq!(f.decrypt(&token).unwrap(), b"core-service data");
    }
}

#[test]
fn runbook_openssl_values_validate() {
    // `openssl rand -hex 32`, `openssl rand -base64 32 | tr '+/' '-_'`, `openssl rand -hex 16`.
    let hex64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    assert_eq!(
        Generator::Hex { bytes: 32 }.validate(&s(hex64)),
        Validity::Valid
    );
    let fernet = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo=";
    assert_eq!(Generator::Fernet.validate(&s(fernet)), Validity::Valid);
    assert_eq!(
        Generator::Masterkey.validate(&s("0123456789abcdef0123456789abcdef")),
        Validity::Valid
    );
}

#[test]
fn masterkey_of_31_or_33_bytes_is_invalid() {
    for n in [0, 31, 33, 64] {
        let v = "a".repeat(n);
        match Generator::Masterkey.validate(&s(&v)) {
            Validity::Invalid(reason) => assert!(reason.contains(&format!("{n} bytes"))),
            other => panic!("{n}: {other:?}"),
        }
    }
}

#[test]
fn fernet_with_standard_alphabet_or_no_padding_is_invalid() {
    let std_alphabet = "+/+/YmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo=";
    assert!(matches!(
        Generator::Fernet.validate(&s(std_alphabet)),
        Validity::Invalid(_)
    ));
    let unpadded = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo";
    assert!(matches!(
        Generator::Fernet.validate(&s(unpadded)),
        Validity::Invalid(_)
    ));
    let short = URL_SAFE.encode([7u8; 16]);
    assert!(matches!(
        Generator::Fernet.validate(&s(&short)),
        Validity::Invalid(r) if r.contains("16 bytes")
    ));
}

#[test]
fn placeholder_is_pending_until_replaced() {
    let g = Generator::Placeholder {
        marker: "placeholder".into(),
    };
    assert_eq!(g.validate(&s("placeholder")), Validity::Pending);
    assert_eq!(g.validate(&s("pat-abc")), Validity::Valid);
}

#[test]
fn password_outside_alphabet_is_invalid() {
    let g = Generator::Password {
        length: 12,
        classes: CharClasses::new(vec![CharClass::Digit]).unwrap(),
    };
    assert_eq!(g.validate(&s("123456789012")), Validity::Valid);
    assert!(matches!(
        g.validate(&s("12345678901a")),
        Validity::Invalid(_)
    ));
    assert!(matches!(g.validate(&s("1234")), Validity::Invalid(_)));
}

#[test]
fn uuid_validation() {
    assert_eq!(
        Generator::Uuid.validate(&s("67e55044-10b1-426f-9247-bb680e5fe0c8")),
        Validity::Valid
    );
    assert!(matches!(
        Generator::Uuid.validate(&s("not-a-uuid")),
        Validity::Invalid(_)
    ));
}

#[test]
fn debug_of_generator_shows_format_only() {
    let g = Generator::Hex { bytes: 32 };
    assert_eq!(format!("{g:?}"), "32 random bytes as hex (64 chars)");
}

/// `any` (a provided field without a validator) accepts any non-empty text and never makes a
/// value: a provided path is never written, and this holds even if a caller forgets that.
#[test]
fn any_validates_non_empty_text_and_generates_nothing() {
    assert_eq!(Generator::Any.validate(&s("x")), Validity::Valid);
    assert!(matches!(
        Generator::Any.validate(&s("")),
        Validity::Invalid(_)
    ));
    assert!(matches!(
        Generator::Any.generate(),
        Err(RngError::NotGenerated)
    ));
    assert!(!GENERATOR_NAMES.contains(&Generator::Any.name()));
}

#[test]
fn key_generators_make_pkcs8_pem_keys_of_their_type() {
    let ed = Generator::Key(KeyType::Ed25519);
    let ec = Generator::Key(KeyType::EcdsaP256);
    for g in [&ed, &ec] {
        let a = g.generate().unwrap();
        let b = g.generate().unwrap();
        assert_ne!(a.expose_secret(), b.expose_secret());
        let pem = a.expose_secret();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{g}");
        assert!(pem.trim_end().ends_with("-----END PRIVATE KEY-----"), "{g}");
        assert_eq!(g.validate(&a), Validity::Valid, "{g}");
    }
    let an_ec_key = ec.generate().unwrap();
    assert_eq!(
        ed.validate(&an_ec_key),
        Validity::Invalid("is a PKCS#8 ECDSA P-256 key, expected Ed25519".into())
    );
    let an_ed_key = ed.generate().unwrap();
    assert_eq!(
        ec.validate(&an_ed_key),
        Validity::Invalid("is a PKCS#8 Ed25519 key, expected ECDSA P-256".into())
    );
}

#[test]
fn keys_that_do_not_parse_are_invalid_and_never_quoted() {
    let ed = Generator::Key(KeyType::Ed25519);
    let key = ed.generate().unwrap();
    let pem = key.expose_secret();
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let relabelled = pem.replace("PRIVATE KEY", "RSA PRIVATE KEY");
    let odd_label = pem.replace("PRIVATE KEY", "SECRET STUFF");
    let twice = format!("{pem}{pem}");
    // The right armour around DER that is no key.
    let not_a_key = pem::encode(&pem::Pem::new("PRIVATE KEY", b"0123456789abcdef".to_vec()));
    let truncated = pem.replacen(&body[..20], "", 1);
    let cases: [(&str, &str); 6] = [
        (&body, "is not PEM"),
        (
            &relabelled,
            "labelled `RSA PRIVATE KEY`, expected `PRIVATE KEY`",
        ),
        (&odd_label, "labelled another label"),
        (&twice, "holds 2 PEM blocks"),
        (
            &not_a_key,
            "does not parse as a PKCS#8 key (expected Ed25519)",
        ),
        (&truncated, "does not parse as a PKCS#8 key"),
    ];
    for (value, want) in cases {
        match ed.validate(&s(value)) {
            Validity::Invalid(reason) => {
                assert!(reason.contains(want), "{reason:?} lacks {want:?}");
                assert!(!reason.contains(&body[..16]), "{reason}");
                assert!(!reason.contains("SECRET"), "{reason}");
            }
            other => panic!("{want}: {other:?}"),
        }
    }
}

#[test]
fn an_rsa_key_has_its_size_and_keys_of_another_size_or_type_are_invalid() {
    let rsa = Generator::Key(KeyType::Rsa { bits: 2048 });
    let key = rsa.generate().unwrap();
    assert!(key
        .expose_secret()
        .starts_with("-----BEGIN PRIVATE KEY-----\n"));
    assert_eq!(rsa.validate(&key), Validity::Valid);
    assert_eq!(
        Generator::Key(KeyType::Rsa { bits: 3072 }).validate(&key),
        Validity::Invalid("is a PKCS#8 RSA 2048-bit key, expected RSA 3072-bit".into())
    );
    assert_eq!(
        Generator::Key(KeyType::Ed25519).validate(&key),
        Validity::Invalid("is a PKCS#8 RSA key, expected Ed25519".into())
    );
    let ed = Generator::Key(KeyType::Ed25519).generate().unwrap();
    assert_eq!(
        rsa.validate(&ed),
        Validity::Invalid("is a PKCS#8 Ed25519 key, expected RSA 2048-bit".into())
    );
}

#[test]
fn rsa_sizes_are_2048_3072_or_4096() {
    let build = |bits| {
        Generator::from_params(
            &Params {
                name: "rsa",
                bits: Some(bits),
                ..Params::default()
            },
            Syntax::Spec,
        )
    };
    assert_eq!(build(4096), Ok(Generator::Key(KeyType::Rsa { bits: 4096 })));
    for bad in [1024, 2047, 8192, -1] {
        let e = build(bad).unwrap_err();
        assert_eq!((e.len(), e[0].param), (1, Param::Bits), "{bad}");
        assert_eq!(e[0].help, "2048, 3072 or 4096");
    }
    let rsa = Generator::from_params(
        &Params {
            name: "rsa",
            ..Params::default()
        },
        Syntax::Spec,
    );
    assert_eq!(
        rsa,
        Ok(Generator::Key(KeyType::Rsa {
            bits: DEFAULT_RSA_BITS
        }))
    );
}

#[test]
fn ssh_ed25519_keys_are_openssh_and_checked_half_against_half() {
    let ssh = Generator::SshEd25519;
    let a = ssh.generate().unwrap();
    let b = ssh.generate().unwrap();
    assert_ne!(a.expose_secret(), b.expose_secret());
    assert!(a
        .expose_secret()
        .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"));
    assert_eq!(ssh.validate(&a), Validity::Valid);
    // The public half of another key beside this private half.
    let key = ssh_key::PrivateKey::from_openssh(a.expose_secret()).unwrap();
    let other = ssh_key::PrivateKey::from_openssh(b.expose_secret()).unwrap();
    let mut pair = key.key_data().ed25519().unwrap().clone();
    pair.public = other.key_data().ed25519().unwrap().public;
    let mixed = ssh_key::PrivateKey::new(ssh_key::private::KeypairData::Ed25519(pair), "")
        .unwrap()
        .to_openssh(ssh_key::LineEnding::LF)
        .unwrap();
    assert_eq!(
        ssh.validate(&s(&mixed)),
        Validity::Invalid(
            "is an OpenSSH Ed25519 key whose public half does not match its private half".into()
        )
    );
    let pkcs8 = Generator::Key(KeyType::Ed25519).generate().unwrap();
    assert!(
        matches!(ssh.validate(&pkcs8), Validity::Invalid(r) if r.starts_with("is not an OpenSSH private key"))
    );
    let cut = a.expose_secret().replacen("b3BlbnNzaC1rZXk", "", 1);
    assert_eq!(
        ssh.validate(&s(&cut)),
        Validity::Invalid("is an OpenSSH private key block that does not parse".into())
    );
}

#[test]
fn a_jwks_holds_one_private_key_of_its_alg_with_a_kid() {
    for (alg, other) in [
        (JwkAlg::Rs256, JwkAlg::Es256),
        (JwkAlg::Es256, JwkAlg::Rs256),
    ] {
        let g = Generator::Jwks { alg };
        let v = g.generate().unwrap();
        assert_eq!(g.validate(&v), Validity::Valid, "{g}");
        let doc: serde_json::Value = serde_json::from_str(v.expose_secret()).unwrap();
        let key = &doc["keys"][0];
        assert_eq!(doc["keys"].as_array().unwrap().len(), 1);
        assert_eq!(key["alg"], alg.name());
        assert_eq!(
            key["kid"].as_str().unwrap().len(),
            43,
            "a SHA-256 thumbprint"
        );
        assert!(matches!(
            Generator::Jwks { alg: other }.validate(&v),
            Validity::Invalid(r) if r.starts_with("its key has `kty`")
        ));
        // A private part changed: the key no longer rebuilds.
        let mut broken = doc.clone();
        let d = key["d"].as_str().unwrap();
        let flipped = if d.starts_with('A') { "B" } else { "A" };
        broken["keys"][0]["d"] = format!("{flipped}{}", &d[1..]).into();
        match g.validate(&s(&broken.to_string())) {
            Validity::Invalid(r) => assert!(!r.contains(&d[..12]), "{r}"),
            other => panic!("{g}: {other:?}"),
        }
        let two = serde_json::json!({ "keys": [key, key] }).to_string();
        assert!(
            matches!(g.validate(&s(&two)), Validity::Invalid(r) if r.starts_with("holds 2 keys"))
        );
    }
    assert!(matches!(
        Generator::Jwks { alg: JwkAlg::Rs256 }.validate(&s("not json")),
        Validity::Invalid(r) if r.starts_with("is not JSON")
    ));
}
