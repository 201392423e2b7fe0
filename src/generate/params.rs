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
        let mut c = Checker {
            p,
            syntax,
            errors: Vec::new(),
        };
        c.options_taken();
        let bits = c.bits();
        let alg = c.alg();
        let bytes = c.bytes();
        let length = c.length();
        let classes = c.classes();
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
                c.unknown_generator(other);
                return Err(c.errors);
            }
        };
        if c.errors.is_empty() {
            Ok(generator)
        } else {
            Err(c.errors)
        }
    }
}

/// The generator's options being checked, and every problem found so far.
struct Checker<'p, 'a> {
    p: &'p Params<'a>,
    syntax: Syntax,
    errors: Vec<ParamError>,
}

impl Checker<'_, '_> {
    fn err(&mut self, param: Param, message: String, help: String) {
        self.errors.push(ParamError {
            param,
            message,
            help,
        })
    }

    /// An option given to a generator that does not take it.
    fn not_for(&mut self, param: Param, key: &str, who: &str) {
        let (name, syntax) = (self.p.name, self.syntax);
        self.err(
            param,
            format!("generator `{name}` does not take `{}`", syntax.key(key)),
            format!(
                "only {who} take{} `{}`",
                if who.contains(" and ") { "" } else { "s" },
                syntax.key(key)
            ),
        );
    }

    fn options_taken(&mut self) {
        let p = self.p;
        let name = p.name;
        if p.bytes.is_some() && !takes_bytes(name) {
            self.not_for(Param::Bytes, "bytes", "`hex`, `base64` and `base64url`");
        }
        if name != "password" {
            if p.length.is_some() {
                self.not_for(Param::Length, "length", "`password`");
            }
            if p.classes.is_some() {
                self.not_for(Param::Classes(0), "classes", "`password`");
            }
        }
        if p.marker.is_some() && name != "placeholder" {
            self.not_for(Param::Marker, "marker", "`placeholder`");
        }
        if p.bits.is_some() && name != "rsa" {
            self.not_for(Param::Bits, "bits", "`rsa`");
        }
        if p.alg.is_some() && name != "jwks" {
            self.not_for(Param::Alg, "alg", "`jwks`");
        }
    }

    fn bits(&mut self) -> usize {
        let Some(n) = self.p.bits.filter(|_| self.p.name == "rsa") else {
            return DEFAULT_RSA_BITS;
        };
        match usize::try_from(n) {
            Ok(n) if RSA_BITS.contains(&n) => n,
            _ => {
                let message = format!(
                    "`{}` is not an RSA key size vault-seed makes",
                    self.syntax.assign("bits", n)
                );
                self.err(Param::Bits, message, "2048, 3072 or 4096".into());
                DEFAULT_RSA_BITS
            }
        }
    }

    fn alg(&mut self) -> JwkAlg {
        let Some(a) = self.p.alg.filter(|_| self.p.name == "jwks") else {
            return JwkAlg::Rs256;
        };
        JwkAlg::from_name(a).unwrap_or_else(|| {
            self.err(
                Param::Alg,
                format!("`{a}` is not an algorithm vault-seed makes keys for"),
                "`RS256` (RSA 2048) or `ES256` (P-256)".into(),
            );
            JwkAlg::Rs256
        })
    }

    fn bytes(&mut self) -> usize {
        let Some(n) = self.p.bytes.filter(|_| takes_bytes(self.p.name)) else {
            return DEFAULT_BYTES;
        };
        if self.p.name == "hex32" {
            let message = format!(
                "`hex32` is `hex` with `{}`",
                self.syntax.assign("bytes", 32)
            );
            self.err(
                Param::Bytes,
                message,
                "use generator `hex` to choose `bytes`".into(),
            );
            return DEFAULT_BYTES;
        }
        match usize::try_from(n) {
            Ok(n) if (MIN_BYTES..=MAX_BYTES).contains(&n) => n,
            _ => {
                self.err(
                    Param::Bytes,
                    format!("`{}` is out of range", self.syntax.assign("bytes", n)),
                    format!("between {MIN_BYTES} and {MAX_BYTES}; 32 is the usual key size"),
                );
                DEFAULT_BYTES
            }
        }
    }

    fn length(&mut self) -> usize {
        let Some(n) = self.p.length.filter(|_| self.p.name == "password") else {
            return DEFAULT_PASSWORD_LENGTH;
        };
        match usize::try_from(n) {
            Ok(n) if PASSWORD_LENGTHS.contains(&n) => n,
            _ => {
                self.err(
                    Param::Length,
                    format!("`{}` is out of range", self.syntax.assign("length", n)),
                    format!(
                        "between {} and {}",
                        PASSWORD_LENGTHS.start(),
                        PASSWORD_LENGTHS.end()
                    ),
                );
                DEFAULT_PASSWORD_LENGTH
            }
        }
    }

    fn classes(&mut self) -> CharClasses {
        let (Some(items), "password") = (self.p.classes, self.p.name) else {
            return CharClasses::default();
        };
        let mut parsed = Vec::new();
        for (i, c) in items.iter().enumerate() {
            match CharClass::from_name(c.trim()) {
                Some(class) => parsed.push(class),
                None => self.err(
                    Param::Classes(i),
                    format!("unknown character class `{c}`"),
                    "one of `lower`, `upper`, `digit`, `symbol`".into(),
                ),
            }
        }
        match CharClasses::new(parsed) {
            Some(c) => return c,
            None if items.is_empty() => {
                let message = format!("`{}` is empty", self.syntax.key("classes"));
                self.err(
                    Param::Classes(0),
                    message,
                    "e.g. `classes = [\"lower\", \"upper\", \"digit\"]`".into(),
                )
            }
            None => {}
        }
        CharClasses::default()
    }

    fn unknown_generator(&mut self, other: &str) {
        let known: Vec<String> = GENERATOR_NAMES.iter().map(|s| s.to_string()).collect();
        let list = GENERATOR_NAMES
            .iter()
            .map(|g| format!("`{g}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match crate::base::suggest::suggest(other, &known) {
            Some(s) => format!("did you mean `{s}`? known generators: {list}"),
            None => format!("known generators: {list}"),
        };
        self.err(
            Param::Generator,
            format!("unknown generator `{other}`"),
            help,
        );
    }
}

/// The generators that take `bytes` (`hex32` only to say it is fixed).
fn takes_bytes(name: &str) -> bool {
    matches!(name, "hex" | "base64" | "base64url" | "hex32")
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
