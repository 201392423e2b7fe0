//! From a generator's name and options (a spec's `{ generator = "hex", bytes = 32 }`, or
//! `vault-seed gen hex --bytes 32`) to a [`Generator`]: the one place that knows which generator
//! takes which option and in what range.

use super::{
    CharClass, CharClasses, Generator, JwkAlg, KeyType, DEFAULT_BYTES, DEFAULT_MARKER,
    DEFAULT_PASSWORD_LENGTH, DEFAULT_RSA_BITS, GENERATOR_NAMES, MAX_BYTES, MIN_BYTES,
    PASSWORD_LENGTHS, RSA_BITS,
};

/// Which option a problem is about, so the caller can point at it (a span, a flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// The generator's name.
    Generator,
    /// `bytes`.
    Bytes,
    /// `length`.
    Length,
    /// `classes`, the item at this index.
    Classes(usize),
    /// `marker`.
    Marker,
    /// `bits`.
    Bits,
    /// `alg`.
    Alg,
}

/// How option names are written in messages: spec keys (`bytes = 4`) or flags (`--bytes 4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// A spec's TOML keys.
    Spec,
    /// `vault-seed gen` flags.
    Flag,
}

impl Syntax {
    fn key(self, name: &str) -> String {
        match self {
            Syntax::Spec => name.to_string(),
            Syntax::Flag => format!("--{name}"),
        }
    }

    fn assign(self, name: &str, value: i64) -> String {
        match self {
            Syntax::Spec => format!("{name} = {value}"),
            Syntax::Flag => format!("--{name} {value}"),
        }
    }
}

/// A generator's name and the options given with it, not yet checked.
#[derive(Debug, Clone, Default)]
pub struct Params<'a> {
    /// `hex`, `fernet`, ...
    pub name: &'a str,
    /// `bytes`, if given.
    pub bytes: Option<i64>,
    /// `length`, if given.
    pub length: Option<i64>,
    /// `classes`, if given.
    pub classes: Option<&'a [String]>,
    /// `marker`, if given.
    pub marker: Option<&'a str>,
    /// `bits`, if given.
    pub bits: Option<i64>,
    /// `alg`, if given.
    pub alg: Option<&'a str>,
}

/// One problem with the options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The option at fault.
    pub param: Param,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub help: String,
}

impl Generator {
    /// Check the options and build the generator; every problem, not only the first.
    pub fn from_params(p: &Params<'_>, syntax: Syntax) -> Result<Generator, Vec<ParamError>> {
        let name = p.name;
        let mut errors = Vec::new();
        let mut err = |param, message: String, help: String| {
            errors.push(ParamError {
                param,
                message,
                help,
            })
        };
        let not_for = |key: &str| format!("generator `{name}` does not take `{}`", syntax.key(key));
        if p.bytes.is_some() && !matches!(name, "hex" | "base64" | "base64url" | "hex32") {
            err(
                Param::Bytes,
                not_for("bytes"),
                format!(
                    "only `hex`, `base64` and `base64url` take `{}`",
                    syntax.key("bytes")
                ),
            );
        }
        if name != "password" {
            if p.length.is_some() {
                err(
                    Param::Length,
                    not_for("length"),
                    format!("only `password` takes `{}`", syntax.key("length")),
                );
            }
            if p.classes.is_some() {
                err(
                    Param::Classes(0),
                    not_for("classes"),
                    format!("only `password` takes `{}`", syntax.key("classes")),
                );
            }
        }
        if p.marker.is_some() && name != "placeholder" {
            err(
                Param::Marker,
                not_for("marker"),
                format!("only `placeholder` takes `{}`", syntax.key("marker")),
            );
        }
        if p.bits.is_some() && name != "rsa" {
            err(
                Param::Bits,
                not_for("bits"),
                format!("only `rsa` takes `{}`", syntax.key("bits")),
            );
        }
        let bits = match p.bits.filter(|_| name == "rsa") {
            None => DEFAULT_RSA_BITS,
            Some(n) => match usize::try_from(n) {
                Ok(n) if RSA_BITS.contains(&n) => n,
                _ => {
                    err(
                        Param::Bits,
                        format!(
                            "`{}` is not an RSA key size vault-seed makes",
                            syntax.assign("bits", n)
                        ),
                        "2048, 3072 or 4096".into(),
                    );
                    DEFAULT_RSA_BITS
                }
            },
        };
        if p.alg.is_some() && name != "jwks" {
            err(
                Param::Alg,
                not_for("alg"),
                format!("only `jwks` takes `{}`", syntax.key("alg")),
            );
        }
        let alg = match p.alg.filter(|_| name == "jwks") {
            None => JwkAlg::Rs256,
            Some(a) => JwkAlg::from_name(a).unwrap_or_else(|| {
                err(
                    Param::Alg,
                    format!("`{}` is not an algorithm vault-seed makes keys for", a),
                    "`RS256` (RSA 2048) or `ES256` (P-256)".into(),
                );
                JwkAlg::Rs256
            }),
        };
        let takes_bytes = matches!(name, "hex" | "base64" | "base64url" | "hex32");
        let bytes = match p.bytes.filter(|_| takes_bytes) {
            None => DEFAULT_BYTES,
            Some(_) if name == "hex32" => {
                err(
                    Param::Bytes,
                    format!("`hex32` is `hex` with `{}`", syntax.assign("bytes", 32)),
                    "use generator `hex` to choose `bytes`".into(),
                );
                DEFAULT_BYTES
            }
            Some(n) => match usize::try_from(n) {
                Ok(n) if (MIN_BYTES..=MAX_BYTES).contains(&n) => n,
                _ => {
                    err(
                        Param::Bytes,
                        format!("`{}` is out of range", syntax.assign("bytes", n)),
                        format!("between {MIN_BYTES} and {MAX_BYTES}; 32 is the usual key size"),
                    );
                    DEFAULT_BYTES
                }
            },
        };
        let length = match p.length.filter(|_| name == "password") {
            None => DEFAULT_PASSWORD_LENGTH,
            Some(n) => match usize::try_from(n) {
                Ok(n) if PASSWORD_LENGTHS.contains(&n) => n,
                _ => {
                    err(
                        Param::Length,
                        format!("`{}` is out of range", syntax.assign("length", n)),
                        format!(
                            "between {} and {}",
                            PASSWORD_LENGTHS.start(),
                            PASSWORD_LENGTHS.end()
                        ),
                    );
                    DEFAULT_PASSWORD_LENGTH
                }
            },
        };
        let mut classes = CharClasses::default();
        if let (Some(items), "password") = (p.classes, name) {
            let mut parsed = Vec::new();
            for (i, c) in items.iter().enumerate() {
                match CharClass::from_name(c.trim()) {
                    Some(class) => parsed.push(class),
                    None => err(
                        Param::Classes(i),
                        format!("unknown character class `{c}`"),
                        "one of `lower`, `upper`, `digit`, `symbol`".into(),
                    ),
                }
            }
            match CharClasses::new(parsed) {
                Some(c) => classes = c,
                None if items.is_empty() => err(
                    Param::Classes(0),
                    format!("`{}` is empty", syntax.key("classes")),
                    "e.g. `classes = [\"lower\", \"upper\", \"digit\"]`".into(),
                ),
                None => {}
            }
        }
        let generator = match name {
            "hex" | "hex32" => Generator::Hex {
                bytes: if name == "hex32" { 32 } else { bytes },
            },
            "fernet" => Generator::Fernet,
            "masterkey" => Generator::Masterkey,
            "placeholder" => Generator::Placeholder {
                marker: p.marker.unwrap_or(DEFAULT_MARKER).to_string(),
            },
            "base64" | "base64url" => Generator::Base64 {
                bytes,
                url_safe: name == "base64url",
            },
            "password" => Generator::Password { length, classes },
            "uuid" => Generator::Uuid,
            "ed25519" => Generator::Key(KeyType::Ed25519),
            "ecdsa-p256" => Generator::Key(KeyType::EcdsaP256),
            "rsa" => Generator::Key(KeyType::Rsa { bits }),
            "ssh-ed25519" => Generator::SshEd25519,
            "jwks" => Generator::Jwks { alg },
            other => {
                let known: Vec<String> = GENERATOR_NAMES.iter().map(|s| s.to_string()).collect();
                let list = GENERATOR_NAMES
                    .iter()
                    .map(|g| format!("`{g}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let help = match crate::suggest::suggest(other, &known) {
                    Some(s) => format!("did you mean `{s}`? known generators: {list}"),
                    None => format!("known generators: {list}"),
                };
                err(
                    Param::Generator,
                    format!("unknown generator `{other}`"),
                    help,
                );
                return Err(errors);
            }
        };
        if errors.is_empty() {
            Ok(generator)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(p: Params<'_>) -> Result<Generator, Vec<ParamError>> {
        Generator::from_params(&p, Syntax::Spec)
    }

    #[test]
    fn defaults_and_options() {
        assert_eq!(
            build(Params {
                name: "hex",
                ..Params::default()
            }),
            Ok(Generator::Hex { bytes: 32 })
        );
        assert_eq!(
            build(Params {
                name: "hex32",
                ..Params::default()
            }),
            Ok(Generator::Hex { bytes: 32 })
        );
        assert_eq!(
            build(Params {
                name: "base64url",
                bytes: Some(16),
                ..Params::default()
            }),
            Ok(Generator::Base64 {
                bytes: 16,
                url_safe: true
            })
        );
        let classes = vec!["digit".to_string()];
        assert_eq!(
            build(Params {
                name: "password",
                length: Some(12),
                classes: Some(&classes),
                ..Params::default()
            }),
            Ok(Generator::Password {
                length: 12,
                classes: CharClasses::new(vec![CharClass::Digit]).unwrap()
            })
        );
    }

    #[test]
    fn every_problem_is_reported_in_its_syntax() {
        let e = Generator::from_params(
            &Params {
                name: "fernet",
                bytes: Some(16),
                length: Some(3),
                ..Params::default()
            },
            Syntax::Flag,
        )
        .unwrap_err();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].message, "generator `fernet` does not take `--bytes`");
        assert_eq!(e[1].param, Param::Length);
        let e = build(Params {
            name: "hex",
            bytes: Some(4),
            ..Params::default()
        })
        .unwrap_err();
        assert_eq!(e[0].message, "`bytes = 4` is out of range");
        let e = build(Params {
            name: "hex33",
            ..Params::default()
        })
        .unwrap_err();
        assert!(e[0].help.starts_with("did you mean `hex32`?"));
    }
}
