//! `derive = { bcrypt = "FIELD", cost = N }`: the bcrypt hash of another field, and its check.

use secrecy::{ExposeSecret as _, SecretString};

use super::Validity;

/// The longest source hashed, in bytes. bcrypt reads 72 bytes of its input, the last of them a
/// C string's terminating NUL: the crate refuses (rather than cuts) a source of 72 bytes or more.
pub const MAX_SOURCE: usize = 71;

/// Costs a spec may give (bcrypt's own range is 4..=31; keep it to 4..=16 so a run stays fast).
pub const COSTS: std::ops::RangeInclusive<u32> = 4..=16;

/// The bcrypt hash (`$2b$`, cost `cost`) of `source`, salt from the OS CSPRNG.
pub fn hash(source: &SecretString, cost: u32) -> Result<SecretString, String> {
    let raw = super::random_bytes(16).map_err(|e| e.to_string())?;
    let mut salt = [0u8; 16];
    salt.copy_from_slice(&raw);
    salted(source, cost, salt)
}

/// [`hash`] with a given salt. bcrypt reads at most 72 bytes of its input, so a longer source is
/// refused rather than cut: two sources alike in their first 72 bytes would share a hash.
fn salted(source: &SecretString, cost: u32, salt: [u8; 16]) -> Result<SecretString, String> {
    if !COSTS.contains(&cost) {
        return Err(format!(
            "bcrypt cost {cost} is outside {}..={}",
            COSTS.start(),
            COSTS.end()
        ));
    }
    let len = source.expose_secret().len();
    match ::bcrypt::non_truncating_hash_with_salt(source.expose_secret(), cost, salt) {
        Ok(parts) => Ok(SecretString::from(
            parts.format_for_version(::bcrypt::Version::TwoB),
        )),
        Err(::bcrypt::BcryptError::Truncation(_)) => Err(format!(
            "the source is {len} bytes long; bcrypt reads at most {MAX_SOURCE} bytes of it"
        )),
        Err(_) => Err("bcrypt could not hash the source".into()),
    }
}

/// Judge a stored hash by shape: a `$2a$`/`$2b$`/`$2y$` bcrypt hash of 60 characters; Invalid
/// (saying both costs) when its cost is not `cost`.
pub fn validate(v: &str, cost: u32) -> Validity {
    const ALPHABET: &[u8] = b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let b = v.as_bytes();
    if b.len() != 60 {
        return Validity::Invalid(format!(
            "is {} characters long, a bcrypt hash is 60 (`$2b$NN$` and 53 more)",
            v.chars().count()
        ));
    }
    if !matches!(&b[..4], b"$2a$" | b"$2b$" | b"$2y$") {
        return Validity::Invalid("does not start with `$2a$`, `$2b$` or `$2y$`".into());
    }
    let found = match (&b[4..6], b[6]) {
        (digits, b'$') if digits.iter().all(u8::is_ascii_digit) => {
            u32::from(digits[0] - b'0') * 10 + u32::from(digits[1] - b'0')
        }
        _ => return Validity::Invalid("has no two-digit cost after its prefix".into()),
    };
    if !b[7..].iter().all(|c| ALPHABET.contains(c)) {
        return Validity::Invalid(
            "has characters outside bcrypt's base64 alphabet (`./A-Za-z0-9`)".into(),
        );
    }
    if found != cost {
        return Validity::Invalid(format!(
            "is a bcrypt hash of cost {found}, expected cost {cost}"
        ));
    }
    Validity::Valid
}

/// Whether `hash` is the bcrypt hash of `source` (constant-time compare inside the crate).
pub fn matches(hash: &SecretString, source: &SecretString) -> bool {
    // Non-truncating, as `hash` is: a source past 72 bytes never matches.
    ::bcrypt::non_truncating_verify(source.expose_secret(), hash.expose_secret()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::NO_PAD;
    use base64::engine::GeneralPurpose;
    use base64::Engine as _;

    use super::*;
    use crate::generate::pubkey::tests::assert_invalid;
    use crate::generate::{CharClass, CharClasses, Generator};

    fn s(v: &str) -> SecretString {
        SecretString::from(v.to_string())
    }

    /// Published vectors (Openwall's crypt_blowfish test suite, `wrapper.c`): the tool has no
    /// independent bcrypt on the machine (no Python `bcrypt`, no `htpasswd`), so these stand in.
    const VECTORS: &[(&str, &str)] = &[
        (
            "U*U",
            "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
        ),
        (
            "U*U*",
            "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK",
        ),
        (
            "U*U*U",
            "$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a",
        ),
        (
            "",
            "$2a$05$CCCCCCCCCCCCCCCCCCCCC.7uG0VCzI2bS7j6ymqJi9CdcdxiRTWNy",
        ),
    ];

    #[test]
    fn published_vectors_hash_and_match() {
        let bcrypt64 = GeneralPurpose::new(&base64::alphabet::BCRYPT, NO_PAD);
        for (source, want) in VECTORS {
            assert!(matches(&s(want), &s(source)), "{want}");
            assert!(!matches(&s(want), &s(&format!("{source}x"))), "{want}");
            assert_eq!(validate(want, 5), Validity::Valid);
            let salt: [u8; 16] = bcrypt64.decode(&want[7..29]).unwrap().try_into().unwrap();
            let ours = salted(&s(source), 5, salt).unwrap();
            // `$2b$` and `$2a$` hash ASCII sources alike; only the prefix differs.
            assert_eq!(ours.expose_secret(), &want.replacen("$2a$", "$2b$", 1));
        }
    }

    #[test]
    fn a_hash_of_a_generated_password_matches_it_alone() {
        let classes = CharClasses::new(vec![
            CharClass::Lower,
            CharClass::Upper,
            CharClass::Digit,
            CharClass::Symbol,
        ])
        .unwrap();
        let g = Generator::Password {
            length: 32,
            classes,
        };
        let source = g.generate().unwrap();
        let h = hash(&source, 4).unwrap();
        assert!(h.expose_secret().starts_with("$2b$04$"));
        assert_eq!(validate(h.expose_secret(), 4), Validity::Valid);
        assert!(matches(&h, &source));
        assert!(!matches(&h, &g.generate().unwrap()));
        // A fresh salt each time.
        let again = hash(&source, 4).unwrap();
        assert_ne!(h.expose_secret(), again.expose_secret());
        assert!(matches(&again, &source));
    }

    #[test]
    fn a_source_bcrypt_would_cut_and_a_cost_outside_the_range_are_refused() {
        let long = "x".repeat(72);
        let err = hash(&s(&long), 4).unwrap_err();
        assert_eq!(
            err,
            "the source is 72 bytes long; bcrypt reads at most 71 bytes of it"
        );
        assert!(hash(&s(&long[..71]), 4).is_ok());
        for cost in [3, 17, 31] {
            assert!(hash(&s("pw"), cost).unwrap_err().contains("outside 4..=16"));
        }
        // A hash made elsewhere of a long source, cut by the other tool, is not ours to match.
        let cut = "$2a$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui";
        let source = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789chars after 72 are ignored";
        assert!(
            ::bcrypt::verify(source, cut).unwrap(),
            "the vector holds when cut"
        );
        assert!(!matches(&s(cut), &s(source)));
    }

    #[test]
    fn stored_hashes_are_judged_by_shape_and_cost_without_quoting_them() {
        let h = hash(&s("source"), 5).unwrap();
        let v = h.expose_secret();
        assert_eq!(
            validate(v, 10),
            Validity::Invalid("is a bcrypt hash of cost 5, expected cost 10".into())
        );
        assert_eq!(validate(&v.replacen("$2b$", "$2y$", 1), 5), Validity::Valid);
        let cases = [
            (v[..59].to_string(), "is 59 characters long"),
            (v.replacen("$2b$", "$2x$", 1), "does not start with"),
            (v.replacen("$05$", "$5$$", 1), "no two-digit cost"),
            (format!("{}!", &v[..59]), "outside bcrypt's base64 alphabet"),
            ("s3cret-plain-text".to_string(), "is 17 characters long"),
        ];
        assert_invalid(&cases, |bad| validate(bad, 5));
        assert!(!matches(&s("not a hash"), &s("source")));
    }
}
