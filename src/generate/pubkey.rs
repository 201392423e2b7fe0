//! `derive = { public_key = "FIELD" }`: the public half of a stored private key, and its check.

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256, PKCS_ED25519};
use rsa::pkcs8::{DecodePrivateKey as _, EncodePublicKey as _};
use secrecy::{ExposeSecret as _, SecretString};
use ssh_key::{Algorithm, PrivateKey, PublicKey};
use x509_parser::der_parser::oid::Oid;
use x509_parser::oid_registry::{
    OID_EC_P256, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_PKCS1_RSAENCRYPTION, OID_SIG_ED25519,
};
use x509_parser::prelude::FromDer as _;
use x509_parser::public_key::PublicKey as ParsedKey;
use x509_parser::x509::SubjectPublicKeyInfo;

use super::keys::{algorithm_label, pem_der, pkcs8_der};
use super::Validity;

/// The PEM label of a SubjectPublicKeyInfo (RFC 7468, section 13).
const SPKI_LABEL: &str = "PUBLIC KEY";
/// What [`pem_der`] says is expected.
const SPKI_WHAT: &str = "an X.509 SubjectPublicKeyInfo";

/// The public half of a private key made by `ed25519`, `ecdsa-p256` or `rsa` (PKCS#8 PEM ->
/// SubjectPublicKeyInfo PEM, label "PUBLIC KEY"), or by `ssh-ed25519` (OpenSSH private key ->
/// the one-line OpenSSH public key `ssh-ed25519 AAAA...`, no comment). Err: why, never the value.
pub fn public_key(private: &SecretString) -> Result<String, String> {
    let v = private.expose_secret();
    if v.trim_start()
        .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----")
    {
        return openssh_public(v);
    }
    let der = pkcs8_der(v)?;
    let spki = pkcs8_spki(&der)?;
    Ok(pem::encode_config(
        &pem::Pem::new(SPKI_LABEL, spki),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    ))
}

/// The SubjectPublicKeyInfo (DER) of a PKCS#8 private key of Ed25519, P-256 or RSA.
pub(super) fn pkcs8_spki(der: &[u8]) -> Result<Vec<u8>, String> {
    // RustCrypto reads RSA keys of any size (ring only 2048 to 4096 bits) and zeroizes on drop.
    if let Ok(key) = rsa::RsaPrivateKey::from_pkcs8_der(der) {
        if key.validate().is_err() {
            return Err("is a PKCS#8 RSA key whose parts do not agree".into());
        }
        return key
            .to_public_key()
            .to_public_key_der()
            .map(|d| d.into_vec())
            .map_err(|_| "is a PKCS#8 RSA key whose public half cannot be encoded".into());
    }
    let key = KeyPair::try_from(der)
        .map_err(|_| "is a `PRIVATE KEY` PEM block that does not parse as a PKCS#8 key")?;
    let alg = key.algorithm();
    if alg != &PKCS_ED25519 && alg != &PKCS_ECDSA_P256_SHA256 {
        return Err(format!(
            "is a PKCS#8 {} key, expected Ed25519, ECDSA P-256 or RSA",
            algorithm_label(alg)
        ));
    }
    Ok(rcgen::PublicKeyData::subject_public_key_info(&key))
}

/// `ssh-ed25519 AAAA...` of an OpenSSH Ed25519 private key whose halves agree.
fn openssh_public(v: &str) -> Result<String, String> {
    if let Validity::Invalid(reason) = super::ssh::validate(v) {
        return Err(reason);
    }
    let key = PrivateKey::from_openssh(v.trim())
        .map_err(|_| "is an OpenSSH private key block that does not parse")?;
    PublicKey::new(key.public_key().key_data().clone(), "")
        .to_openssh()
        .map_err(|_| "is an OpenSSH key whose public half cannot be encoded".into())
}

/// Judge a stored public key by its shape: one SPKI "PUBLIC KEY" PEM of an Ed25519, P-256 or RSA
/// key, or an `ssh-ed25519` OpenSSH public key line.
pub fn validate(v: &str) -> Validity {
    let t = v.trim();
    if t.starts_with("ssh-") || t.starts_with("ecdsa-") {
        return openssh_check(t);
    }
    let der = match pem_der(v, SPKI_LABEL, SPKI_WHAT) {
        Ok(der) => der,
        Err(reason) => {
            return Validity::Invalid(format!("{reason}, or an `ssh-ed25519 AAAA...` line"))
        }
    };
    match spki_kind(&der) {
        Ok(_) => Validity::Valid,
        Err(reason) => Validity::Invalid(reason),
    }
}

/// The kind of key a SubjectPublicKeyInfo holds, when it is one we make and it parses whole.
pub(super) fn spki_kind(der: &[u8]) -> Result<&'static str, String> {
    let spki = match SubjectPublicKeyInfo::from_der(der) {
        Ok((&[], spki)) => spki,
        _ => return Err("is a `PUBLIC KEY` PEM block that does not parse as one".into()),
    };
    let oid = &spki.algorithm.algorithm;
    let key = &spki.subject_public_key.data;
    if *oid == OID_SIG_ED25519 {
        return match key.len() {
            32 => Ok("Ed25519"),
            n => Err(format!(
                "is an Ed25519 public key of {n} bytes, expected 32"
            )),
        };
    }
    if *oid == OID_KEY_TYPE_EC_PUBLIC_KEY {
        if curve(&spki) != Some(OID_EC_P256) {
            return Err("is an EC public key on another curve than P-256".into());
        }
        return match p256::PublicKey::from_sec1_bytes(key) {
            Ok(_) => Ok("ECDSA P-256"),
            Err(_) => Err("is a P-256 public key whose point is not on the curve".into()),
        };
    }
    if *oid == OID_PKCS1_RSAENCRYPTION {
        return match spki.parsed() {
            Ok(ParsedKey::RSA(rsa)) if rsa.key_size() >= 1024 => Ok("RSA"),
            _ => Err("is an RSA public key that does not parse".into()),
        };
    }
    Err("is a public key of another algorithm, expected Ed25519, ECDSA P-256 or RSA".into())
}

/// The named curve of an EC key (its algorithm's parameter).
pub(super) fn curve<'a>(spki: &'a SubjectPublicKeyInfo<'_>) -> Option<Oid<'a>> {
    spki.algorithm
        .parameters
        .as_ref()
        .and_then(|p| p.as_oid().ok())
}

/// Whether `t` is one `ssh-ed25519` OpenSSH public key line.
fn openssh_check(t: &str) -> Validity {
    if t.lines().count() != 1 {
        return Validity::Invalid(format!(
            "holds {} lines, an OpenSSH public key is one `ssh-ed25519 AAAA...` line",
            t.lines().count()
        ));
    }
    match PublicKey::from_openssh(t) {
        Ok(key) if key.algorithm() == Algorithm::Ed25519 => Validity::Valid,
        Ok(_) => Validity::Invalid(
            "is an OpenSSH public key of another algorithm, expected `ssh-ed25519`".into(),
        ),
        Err(_) => Validity::Invalid("is an OpenSSH public key line that does not parse".into()),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::process::Command;

    use super::*;
    use crate::generate::{ssh, KeyType};

    fn s(v: &str) -> SecretString {
        SecretString::from(v.to_string())
    }

    fn key_types() -> [KeyType; 3] {
        [
            KeyType::Ed25519,
            KeyType::EcdsaP256,
            KeyType::Rsa { bits: 2048 },
        ]
    }

    /// Runs `cmd` with `args`, and returns its stdout; fails the test on a non-zero exit.
    pub(in crate::generate) fn tool(cmd: &str, args: &[&std::ffi::OsStr]) -> String {
        let out = Command::new(cmd)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("`{cmd}` runs (CI installs it: .ci/run): {e}"));
        assert!(
            out.status.success(),
            "`{cmd}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Each value is Invalid by `judge`, with a reason that holds its `want` and quotes no line of it.
    pub(in crate::generate) fn assert_invalid(
        cases: &[(String, &str)],
        judge: impl Fn(&str) -> Validity,
    ) {
        for (v, want) in cases {
            let Validity::Invalid(reason) = judge(v) else {
                panic!("valid: {want}");
            };
            assert!(reason.contains(want), "{reason}");
            for line in v.lines().filter(|l| l.len() > 8 && !l.starts_with("-----")) {
                assert!(
                    !reason.contains(line),
                    "the reason quotes the value: {reason}"
                );
            }
        }
    }

    #[test]
    fn the_public_half_of_each_pkcs8_key_is_what_openssl_derives() {
        let dir = tempfile::tempdir().unwrap();
        for kind in key_types() {
            let private = kind.generate().unwrap();
            let public = public_key(&s(&private)).unwrap();
            assert!(
                public.starts_with("-----BEGIN PUBLIC KEY-----\n"),
                "{kind:?}"
            );
            assert_eq!(validate(&public), Validity::Valid, "{kind:?}");
            let key_file = dir.path().join("key.pem");
            std::fs::write(&key_file, &private).unwrap();
            let by_openssl = tool(
                "openssl",
                &[
                    "pkey".as_ref(),
                    "-pubout".as_ref(),
                    "-in".as_ref(),
                    key_file.as_os_str(),
                ],
            );
            assert_eq!(public, by_openssl, "{kind:?}");
            // And openssl reads ours back as a public key.
            let pub_file = dir.path().join("pub.pem");
            std::fs::write(&pub_file, &public).unwrap();
            let reread = tool(
                "openssl",
                &[
                    "pkey".as_ref(),
                    "-pubin".as_ref(),
                    "-in".as_ref(),
                    pub_file.as_os_str(),
                ],
            );
            assert_eq!(public, reread, "{kind:?}");
        }
    }

    #[test]
    fn the_public_half_of_an_openssh_key_is_what_ssh_keygen_derives() {
        let dir = tempfile::tempdir().unwrap();
        let private = ssh::generate().unwrap();
        let public = public_key(&s(&private)).unwrap();
        assert!(public.starts_with("ssh-ed25519 AAAA"));
        assert!(
            !public.contains('\n') && public.split(' ').count() == 2,
            "no comment"
        );
        assert_eq!(validate(&public), Validity::Valid);
        let key_file = dir.path().join("id_ed25519");
        std::fs::write(&key_file, &private).unwrap();
        let mut perms = std::fs::metadata(&key_file).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o600);
        std::fs::set_permissions(&key_file, perms).unwrap();
        let by_keygen = tool(
            "ssh-keygen",
            &["-y".as_ref(), "-f".as_ref(), key_file.as_os_str()],
        );
        assert_eq!(public, by_keygen.trim_end());
    }

    #[test]
    fn wrong_private_keys_are_refused_without_quoting_them() {
        let ed = KeyType::Ed25519.generate().unwrap();
        let public = public_key(&s(&ed)).unwrap();
        let cert = crate::generate::x509::self_signed(&s(&ed), "example", &[], 1).unwrap();
        let p384 = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384)
            .unwrap()
            .serialize_pem();
        let ssh_key = ssh::generate().unwrap();
        // One key's private half with another's public half: its public key would be a lie.
        let halves = |pem: &str| {
            let key = PrivateKey::from_openssh(pem).unwrap();
            key.key_data().ed25519().unwrap().clone()
        };
        let mut mixed = halves(&ssh_key);
        mixed.public = halves(&ssh::generate().unwrap()).public;
        let mixed = PrivateKey::new(ssh_key::private::KeypairData::Ed25519(mixed), "")
            .unwrap()
            .to_openssh(ssh_key::LineEnding::LF)
            .unwrap()
            .to_string();
        let cases = [
            ("garbage that is no key at all".to_string(), "is not PEM"),
            (
                public.clone(),
                "labelled `PUBLIC KEY`, expected `PRIVATE KEY`",
            ),
            (cert, "labelled `CERTIFICATE`, expected `PRIVATE KEY`"),
            (format!("{ed}{ed}"), "holds 2 PEM blocks"),
            (p384, "is a PKCS#8 ECDSA P-384 key, expected Ed25519"),
            (
                ssh_key.replace("AAAA", "AAAB"),
                "OpenSSH private key block that does not parse",
            ),
            (mixed, "public half does not match its private half"),
        ];
        assert_invalid(&cases, |v| match public_key(&s(v)) {
            Ok(_) => Validity::Valid,
            Err(reason) => Validity::Invalid(reason),
        });
    }

    #[test]
    fn stored_public_keys_are_judged_by_shape() {
        let ed = KeyType::Ed25519.generate().unwrap();
        let public = public_key(&s(&ed)).unwrap();
        let ssh_public = public_key(&s(&ssh::generate().unwrap())).unwrap();
        assert_eq!(validate(&format!("{ssh_public} me@host")), Validity::Valid);
        let p384 = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384)
            .unwrap()
            .public_key_pem();
        let cert = crate::generate::x509::self_signed(&s(&ed), "example", &[], 1).unwrap();
        let cases = [
            ("not a key".to_string(), "is not PEM"),
            (ed.clone(), "labelled `PRIVATE KEY`, expected `PUBLIC KEY`"),
            (cert, "labelled `CERTIFICATE`, expected `PUBLIC KEY`"),
            (format!("{public}{public}"), "holds 2 PEM blocks"),
            (p384, "another curve than P-256"),
            (
                public.replace(
                    "-----BEGIN PUBLIC KEY-----\n",
                    "-----BEGIN PUBLIC KEY-----\nAAAA",
                ),
                "`PUBLIC KEY` PEM block that does not parse as one",
            ),
            (
                ssh_public.replace("ssh-ed25519", "ssh-rsa"),
                "OpenSSH public key line that does not parse",
            ),
            (format!("{ssh_public}\n{ssh_public}"), "holds 2 lines"),
        ];
        assert_invalid(&cases, validate);
    }
}
