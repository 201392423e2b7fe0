//! How long a field's values can be, in bytes, as far as its spec tells: what `lint` needs to
//! refuse a bcrypt hash of an input longer than bcrypt can take ([`super::bcrypt::MAX_SOURCE`]).

use std::fmt;

use super::derived::Piece;
use super::{Derived, FieldRef, Generator, JwkAlg, KeyType, IMPORT_MARKER};

/// A length that the longest value of a field reaches, in bytes.
///
/// Exact for values of a fixed length (a `hex`, a `password`, an Ed25519 key); a floor where
/// values vary (an RSA key's numbers have no fixed width) or where a person or `import` puts in
/// what they have (a placeholder reaches its marker, which vault-seed writes first). A floor
/// never claims a value longer than one that is made, so a refusal on it is never wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Longest {
    /// The bytes reached.
    pub bytes: usize,
    /// Whether a value may be longer still.
    pub or_more: bool,
}

impl Longest {
    /// Exactly `bytes` long.
    pub const fn exactly(bytes: usize) -> Longest {
        Longest {
            bytes,
            or_more: false,
        }
    }

    /// `bytes` long or longer.
    pub const fn at_least(bytes: usize) -> Longest {
        Longest {
            bytes,
            or_more: true,
        }
    }

    /// A value of this length followed by one of `next`'s.
    fn then(self, next: Longest) -> Longest {
        Longest {
            bytes: self.bytes.saturating_add(next.bytes),
            or_more: self.or_more || next.or_more,
        }
    }

    /// Standard base64 of such a value, padded.
    fn base64(self) -> Longest {
        Longest {
            bytes: self.bytes.div_ceil(3).saturating_mul(4),
            ..self
        }
    }
}

impl fmt::Display for Longest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes", self.bytes)?;
        if self.or_more {
            f.write_str(" or more")?;
        }
        Ok(())
    }
}

/// The PEM armour of a certificate: `-----BEGIN CERTIFICATE-----` and `-----END CERTIFICATE-----`,
/// each with its line ending.
const CERTIFICATE_ARMOUR: usize = 28 + 26;

impl Generator {
    /// How long its values can be; `input` tells it of a derived value's inputs.
    pub fn longest(&self, input: &dyn Fn(&FieldRef) -> Longest) -> Longest {
        match self {
            Generator::Hex { bytes } => Longest::exactly(bytes * 2),
            Generator::Fernet => Longest::exactly(44),
            Generator::Masterkey => Longest::exactly(32),
            Generator::Placeholder { marker } => Longest::at_least(marker.len()),
            Generator::Base64 { bytes, .. } => Longest::exactly(*bytes).base64(),
            // Every class is ASCII: a character is a byte.
            Generator::Password { length, .. } => Longest::exactly(*length),
            Generator::Uuid => Longest::exactly(36),
            Generator::Key(kind) => kind.longest(),
            // OpenSSH's format without a comment, fixed for an Ed25519 key.
            Generator::SshEd25519 => Longest::exactly(387),
            Generator::Jwks { alg: JwkAlg::Es256 } => Longest::exactly(265),
            Generator::Jwks { alg: JwkAlg::Rs256 } => rsa_floor(super::jwks::RSA_BITS),
            Generator::Derived(d) => d.longest(input),
            Generator::FromSecret { .. } => Longest::at_least(IMPORT_MARKER.len()),
            Generator::Any => Longest::at_least(0),
        }
    }
}

impl KeyType {
    /// How long its PKCS#8 PEM is.
    fn longest(self) -> Longest {
        match self {
            // PKCS#8 v1 of a 32-byte seed: 48 bytes of DER.
            KeyType::Ed25519 => Longest::exactly(119),
            // The scalar and the public point, each of a fixed width: 138 bytes of DER.
            KeyType::EcdsaP256 => Longest::exactly(241),
            KeyType::Rsa { bits } => rsa_floor(bits),
        }
    }
}

/// A floor of an RSA private key's length, PEM or JWK: it holds the modulus and the private
/// exponent (`bits / 8` bytes each) and five numbers half that size, 4.5 · `bits / 8` bytes in
/// all, which base64 makes 0.75 · `bits` characters.
fn rsa_floor(bits: usize) -> Longest {
    Longest::at_least(bits * 3 / 4)
}

impl Derived {
    /// How long its values can be, given how long its inputs' can be.
    pub fn longest(&self, input: &dyn Fn(&FieldRef) -> Longest) -> Longest {
        match self {
            // The shortest public half is an OpenSSH line: `ssh-ed25519 `, then 68 characters.
            Derived::PublicKey { .. } => Longest::at_least(80),
            Derived::Bcrypt { .. } => Longest::exactly(60),
            // At least an Ed25519 key's 32 bytes and its 64-byte signature, in base64.
            Derived::X509 { .. } => Longest::at_least(CERTIFICATE_ARMOUR + 128),
            Derived::Template(pieces) => {
                pieces
                    .iter()
                    .fold(Longest::exactly(0), |sum, piece| match piece {
                        Piece::Text(t) => sum.then(Longest::exactly(t.len())),
                        Piece::Value {
                            from,
                            base64: false,
                        } => sum.then(input(from)),
                        Piece::Value { from, base64: true } => sum.then(input(from).base64()),
                    })
            }
            Derived::Copy(from) => input(from),
        }
    }
}

#[cfg(test)]
mod tests {
    use secrecy::{ExposeSecret as _, SecretString};

    use super::*;
    use crate::generate::derived::parse_template;
    use crate::generate::{CharClass, CharClasses};

    /// Whether `value` is as long as `longest` says: exactly, or at least.
    fn fits(value: &SecretString, longest: Longest) -> bool {
        let n = value.expose_secret().len();
        match longest.or_more {
            false => n == longest.bytes,
            true => n >= longest.bytes,
        }
    }

    fn no_input(_: &FieldRef) -> Longest {
        unreachable!("no input")
    }

    /// The keys and key sets, which the property tests of every generator leave out as slow:
    /// each value made is as long as its generator says, and each public half and certificate
    /// of each key.
    #[test]
    fn keys_their_public_halves_and_certificates_are_as_long_as_said() {
        let keys = [
            Generator::Key(KeyType::Ed25519),
            Generator::Key(KeyType::EcdsaP256),
            Generator::Key(KeyType::Rsa { bits: 2048 }),
            Generator::Key(KeyType::Rsa { bits: 3072 }),
            Generator::SshEd25519,
        ];
        let public = Derived::PublicKey { from: "k".into() };
        let x509 = Derived::X509 {
            key: "k".into(),
            cn: "a".into(),
            sans: Vec::new(),
            days: 1,
        };
        for g in &keys {
            let key = g.generate().unwrap();
            assert!(fits(&key, g.longest(&no_input)), "{g}");
            let with_key = |_: &FieldRef| Some(key.clone());
            let half = public.make(&with_key).unwrap();
            assert!(fits(&half, public.longest(&no_input)), "public half of {g}");
            if let Generator::Key(_) = g {
                let crt = x509.make(&with_key).unwrap();
                assert!(fits(&crt, x509.longest(&no_input)), "certificate of {g}");
            }
        }
        for alg in [JwkAlg::Es256, JwkAlg::Rs256] {
            let g = Generator::Jwks { alg };
            assert!(fits(&g.generate().unwrap(), g.longest(&no_input)), "{g}");
        }
    }

    /// A template is its text and its inputs, each base64'd where it says; a copy, its source;
    /// a placeholder and an import reach their markers.
    #[test]
    fn a_template_adds_its_pieces_and_a_copy_is_its_source() {
        let template = Derived::Template(parse_template("{a}:{b|base64}/{a}").unwrap());
        let input = |r: &FieldRef| match r.field.as_str() {
            "a" => Longest::exactly(10),
            _ => Longest::at_least(4),
        };
        // 10 + 1 + base64 of 4 (8) + 1 + 10.
        assert_eq!(template.longest(&input), Longest::at_least(30));
        let copy = Derived::Copy(FieldRef::here("a"));
        assert_eq!(copy.longest(&input), Longest::exactly(10));
        let values = |r: &FieldRef| {
            Some(SecretString::from(match r.field.as_str() {
                "a" => "0123456789",
                _ => "four",
            }))
        };
        assert!(fits(
            &template.make(&values).unwrap(),
            template.longest(&input)
        ));
        let marker = Generator::Placeholder {
            marker: "fill-me-in".into(),
        };
        assert_eq!(marker.longest(&no_input).to_string(), "10 bytes or more");
        let import = Generator::FromSecret {
            namespace: "ask".into(),
            name: "pat".into(),
            key: "pat".into(),
        };
        assert!(fits(&import.generate().unwrap(), import.longest(&no_input)));
        let classes = CharClasses::new(CharClass::ALL.to_vec()).unwrap();
        let password = Generator::Password {
            length: 71,
            classes,
        };
        assert_eq!(password.longest(&no_input).to_string(), "71 bytes");
    }
}
