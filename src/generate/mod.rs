//! Generators of secret values, and validators for values that already exist in Vault.
//!
//! Every generator draws its randomness from the operating system's CSPRNG
//! ([`rand::rngs::SysRng`], i.e. `getrandom(2)` on Linux) and returns a [`SecretString`].
//! Validators never echo the value they judge: their reasons speak of lengths and alphabets.

pub mod bcrypt;
mod charset;
pub mod derived;
mod jwks;
mod keys;
mod length;
mod params;
pub mod pubkey;
mod ssh;
pub mod x509;

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine as _;
use rand::rngs::SysRng;
use rand::TryRng as _;
use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

pub use charset::{CharClass, CharClasses};
pub use derived::{Derived, FieldRef};
pub use jwks::JwkAlg;
pub use keys::{KeyType, DEFAULT_RSA_BITS, RSA_BITS};
pub use length::Longest;
pub use params::{Param, ParamError, Params, Syntax};

/// What `apply` writes in a `from_secret` field until `vault-seed import` copies the value
/// from the cluster: a placeholder, judged pending.
pub const IMPORT_MARKER: &str = "import-from-cluster";
/// Default number of random bytes for `hex`, `base64` and `base64url`.
pub const DEFAULT_BYTES: usize = 32;
/// Default length of a `password`.
pub const DEFAULT_PASSWORD_LENGTH: usize = 32;
/// Default marker text of a `placeholder`.
pub const DEFAULT_MARKER: &str = "placeholder";
/// The most random bytes a spec may ask for: large enough for any key, small enough that a typo
/// (`bytes = 320000`) is caught rather than written to Vault.
pub const MAX_BYTES: usize = 4096;
/// The smallest number of random bytes a spec may ask for (128 bits).
pub const MIN_BYTES: usize = 16;
/// Password lengths allowed in a spec.
pub const PASSWORD_LENGTHS: std::ops::RangeInclusive<usize> = 12..=4096;

/// How a field's value is produced, and what an existing value must look like.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Generator {
    /// `bytes` random bytes as lowercase hex (`2 * bytes` characters).
    Hex {
        /// Number of random bytes.
        bytes: usize,
    },
    /// A Fernet key: 32 random bytes, URL-safe base64 with padding (44 characters).
    Fernet,
    /// A Zitadel masterkey: exactly 32 characters (16 random bytes as hex).
    Masterkey,
    /// A fixed marker, replaced by a person after deploy (a PAT, a client token).
    Placeholder {
        /// The marker text written until a person replaces it.
        marker: String,
    },
    /// `bytes` random bytes in base64, standard or URL-safe alphabet, with padding.
    Base64 {
        /// Number of random bytes.
        bytes: usize,
        /// URL-safe alphabet (`-_`) instead of the standard one (`+/`).
        url_safe: bool,
    },
    /// A random password of `length` characters drawn from `classes`, with at least one of each.
    Password {
        /// Number of characters.
        length: usize,
        /// Character classes the password draws from.
        classes: CharClasses,
    },
    /// A random UUID, version 4.
    Uuid,
    /// An asymmetric private key, PKCS#8 PEM (`ed25519`, `ecdsa-p256`, `rsa`).
    Key(KeyType),
    /// An OpenSSH Ed25519 private key, unencrypted.
    SshEd25519,
    /// A JSON Web Key Set of one private key for `alg`, with a `kid`.
    Jwks {
        /// `RS256` (RSA 2048) or `ES256` (P-256).
        alg: JwkAlg,
    },
    /// Made from other fields' values (`derive`, `template`, `copy`, `x509-self-signed`).
    Derived(Derived),
    /// `from_secret = "NAMESPACE/NAME:KEY"`: the value a component wrote to a Kubernetes
    /// Secret, copied into Vault by `vault-seed import`; until then, [`IMPORT_MARKER`].
    FromSecret {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The key under its `data`.
        key: String,
    },
    /// Not a generator: the field of a provided secret (`provided_by`) declared without one.
    /// Another application makes the value; any non-empty text is accepted and nothing is ever
    /// generated (no spec or `gen` can name it).
    Any,
}

/// The names a spec or `vault-seed gen` may use for a generator.
pub const GENERATOR_NAMES: &[&str] = &[
    "hex",
    "hex32",
    "fernet",
    "masterkey",
    "placeholder",
    "base64",
    "base64url",
    "password",
    "uuid",
    "ed25519",
    "ecdsa-p256",
    "rsa",
    "ssh-ed25519",
    "jwks",
];

/// What a validator thinks of a value that already exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validity {
    /// The value has the generator's format.
    Valid,
    /// A placeholder still holding its marker: a person has yet to fill it in.
    Pending,
    /// The value does not have the generator's format. The reason never contains the value.
    Invalid(String),
}

/// No value could be made.
#[derive(Debug, thiserror::Error)]
pub enum RngError {
    /// The operating system's random number generator failed.
    #[error("the operating system's random number generator failed: {0}")]
    Failed(String),
    /// The field's value is made by another application ([`Generator::Any`]).
    #[error("the value is made by another application; vault-seed generates none")]
    NotGenerated,
    /// The field's value is made from other fields ([`Generator::Derived`]).
    #[error("the value is made from other fields, not generated on its own")]
    Derived,
}

impl Generator {
    /// The generator's name as written in specs and in reports (`hex`, `fernet`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Generator::Hex { .. } => "hex",
            Generator::Fernet => "fernet",
            Generator::Masterkey => "masterkey",
            Generator::Placeholder { .. } => "placeholder",
            Generator::Base64 {
                url_safe: false, ..
            } => "base64",
            Generator::Base64 { url_safe: true, .. } => "base64url",
            Generator::Password { .. } => "password",
            Generator::Uuid => "uuid",
            Generator::Key(KeyType::Ed25519) => "ed25519",
            Generator::Key(KeyType::EcdsaP256) => "ecdsa-p256",
            Generator::Key(KeyType::Rsa { .. }) => "rsa",
            Generator::SshEd25519 => "ssh-ed25519",
            Generator::Jwks { .. } => "jwks",
            Generator::Derived(d) => d.name(),
            Generator::FromSecret { .. } => "from_secret",
            Generator::Any => "any",
        }
    }

    /// Whether its values encrypt or hash stored data (a Fernet key, Zitadel's masterkey): a
    /// new value makes that data unreadable unless the old one stays, so `rotate` asks the
    /// spec to say how it may rotate.
    pub fn keys_data(&self) -> bool {
        matches!(self, Generator::Fernet | Generator::Masterkey)
    }

    /// Whether a comma-separated list of its values is a keyring a reader can take: keys of
    /// a fixed alphabet without commas (Fernet, hex, base64), not free text.
    pub fn keyring_allowed(&self) -> bool {
        matches!(
            self,
            Generator::Fernet | Generator::Hex { .. } | Generator::Base64 { .. }
        )
    }

    /// Whether the value is meant to be written by a person after deploy, or imported.
    pub fn is_placeholder(&self) -> bool {
        matches!(
            self,
            Generator::Placeholder { .. } | Generator::FromSecret { .. }
        )
    }

    /// How it is made from other fields, if it is.
    pub fn derived(&self) -> Option<&Derived> {
        match self {
            Generator::Derived(d) => Some(d),
            _ => None,
        }
    }

    /// A fresh value. Random bytes come from the OS CSPRNG and are zeroized after encoding.
    pub fn generate(&self) -> Result<SecretString, RngError> {
        let value = match self {
            Generator::Hex { bytes } => hex::encode(&*random_bytes(*bytes)?),
            Generator::Fernet => URL_SAFE.encode(&*random_bytes(32)?),
            Generator::Masterkey => hex::encode(&*random_bytes(16)?),
            Generator::Placeholder { marker } => marker.clone(),
            Generator::Base64 { bytes, url_safe } => {
                let raw = random_bytes(*bytes)?;
                if *url_safe {
                    URL_SAFE.encode(&*raw)
                } else {
                    STANDARD.encode(&*raw)
                }
            }
            Generator::Password { length, classes } => classes.password(*length)?,
            Generator::Uuid => {
                let raw = random_bytes(16)?;
                let mut b = [0u8; 16];
                b.copy_from_slice(&raw);
                let id = uuid::Builder::from_random_bytes(b).into_uuid();
                zeroize::Zeroize::zeroize(&mut b);
                id.hyphenated().to_string()
            }
            Generator::Key(kind) => kind.generate()?,
            Generator::SshEd25519 => ssh::generate()?,
            Generator::Jwks { alg } => jwks::generate(*alg)?,
            Generator::FromSecret { .. } => IMPORT_MARKER.to_string(),
            Generator::Derived(_) => return Err(RngError::Derived),
            Generator::Any => return Err(RngError::NotGenerated),
        };
        let value = SecretString::from(value);
        if !matches!(
            self,
            Generator::Placeholder { .. } | Generator::FromSecret { .. }
        ) {
            crate::base::redact::register(&value);
        }
        Ok(value)
    }

    /// Judge a value that already exists. Never includes the value in the reason.
    pub fn validate(&self, value: &SecretString) -> Validity {
        let v = value.expose_secret();
        match self {
            Generator::Hex { bytes } => hex_check(v, *bytes),
            Generator::Fernet => match decoded_len(&URL_SAFE, v) {
                Some(32) if v.len() == 44 => Validity::Valid,
                Some(n) => Validity::Invalid(format!(
                    "decodes to {n} bytes, a Fernet key is exactly 32 bytes (44 URL-safe base64 characters)"
                )),
                None => Validity::Invalid(format!(
                    "is not URL-safe base64 with padding ({} characters); a Fernet key is 44 characters",
                    v.chars().count()
                )),
            },
            Generator::Masterkey => {
                if v.len() == 32 {
                    Validity::Valid
                } else {
                    Validity::Invalid(format!(
                        "is {} bytes long, a Zitadel masterkey must be exactly 32 bytes",
                        v.len()
                    ))
                }
            }
            Generator::Placeholder { marker } => {
                if v == marker {
                    Validity::Pending
                } else {
                    Validity::Valid
                }
            }
            Generator::Base64 { bytes, url_safe } => {
                let engine = if *url_safe { &URL_SAFE } else { &STANDARD };
                let alphabet = if *url_safe { "URL-safe base64" } else { "base64" };
                match decoded_len(engine, v) {
                    Some(n) if n == *bytes => Validity::Valid,
                    Some(n) => Validity::Invalid(format!(
                        "decodes to {n} bytes, expected exactly {bytes}"
                    )),
                    None => Validity::Invalid(format!("is not {alphabet} with padding")),
                }
            }
            Generator::Password { length, classes } => {
                let n = v.chars().count();
                let outside = v.chars().filter(|c| !classes.contains(*c)).count();
                if n != *length {
                    Validity::Invalid(format!("is {n} characters long, expected {length}"))
                } else if outside > 0 {
                    Validity::Invalid(format!(
                        "has {outside} character(s) outside the classes {classes}"
                    ))
                } else {
                    Validity::Valid
                }
            }
            Generator::Uuid => match uuid::Uuid::try_parse(v) {
                Ok(_) => Validity::Valid,
                Err(_) => Validity::Invalid("is not a UUID".to_string()),
            },
            Generator::Key(kind) => kind.validate(v),
            Generator::SshEd25519 => ssh::validate(v),
            Generator::Jwks { alg } => jwks::validate(v, *alg),
            Generator::Derived(d) => d.validate(value),
            Generator::FromSecret { .. } if v == IMPORT_MARKER => Validity::Pending,
            Generator::FromSecret { .. } if v.is_empty() => {
                Validity::Invalid("is empty".to_string())
            }
            Generator::FromSecret { .. } => Validity::Valid,
            Generator::Any if v.is_empty() => Validity::Invalid("is empty".to_string()),
            Generator::Any => Validity::Valid,
        }
    }

    /// A one-line description of the format, for reports and `--help`.
    pub fn describe(&self) -> String {
        match self {
            Generator::Hex { bytes } => {
                format!("{bytes} random bytes as hex ({} chars)", bytes * 2)
            }
            Generator::Fernet => "Fernet key: 32 random bytes, URL-safe base64 (44 chars)".into(),
            Generator::Masterkey => {
                "Zitadel masterkey: exactly 32 chars (16 random bytes, hex)".into()
            }
            Generator::Placeholder { marker } => {
                format!("placeholder `{marker}`, filled in by a person")
            }
            Generator::Base64 { bytes, url_safe } => format!(
                "{bytes} random bytes, {} base64",
                if *url_safe { "URL-safe" } else { "standard" }
            ),
            Generator::Password { length, classes } => {
                format!("{length}-char password from {classes}")
            }
            Generator::Uuid => "random UUID v4".into(),
            Generator::Key(kind) => format!("{} private key, PKCS#8 PEM", kind.label()),
            Generator::SshEd25519 => "Ed25519 private key, OpenSSH format".into(),
            Generator::Jwks { alg } => format!("JWKS of one {} private key with a kid", alg.name()),
            Generator::Derived(d) => d.describe(),
            Generator::FromSecret {
                namespace,
                name,
                key,
            } => format!("imported from Secret {namespace}/{name}, key {key}"),
            Generator::Any => "any non-empty text, made by another application".into(),
        }
    }
}

impl fmt::Debug for Generator {
    // Hand-written so that a placeholder's marker (not secret, but user text) prints plainly and
    // nothing else can ever be added here by accident.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl fmt::Display for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Generator::Hex { bytes } => write!(f, "hex(bytes={bytes})"),
            Generator::Base64 { bytes, .. } => write!(f, "{}(bytes={bytes})", self.name()),
            Generator::Key(KeyType::Rsa { bits }) => write!(f, "rsa(bits={bits})"),
            Generator::Jwks { alg } => write!(f, "jwks(alg={})", alg.name()),
            Generator::Password { length, classes } => {
                write!(f, "password(length={length}, classes={classes})")
            }
            _ => f.write_str(self.name()),
        }
    }
}

/// `n` bytes from the OS CSPRNG, zeroized when dropped.
pub(crate) fn random_bytes(n: usize) -> Result<Zeroizing<Vec<u8>>, RngError> {
    let mut buf = Zeroizing::new(vec![0u8; n]);
    SysRng
        .try_fill_bytes(&mut buf)
        .map_err(|e| RngError::Failed(e.to_string()))?;
    Ok(buf)
}

fn hex_check(v: &str, bytes: usize) -> Validity {
    let want = bytes * 2;
    if v.len() != want {
        return Validity::Invalid(format!(
            "is {} characters long, expected exactly {want} hex characters ({bytes} bytes)",
            v.chars().count()
        ));
    }
    if !v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Validity::Invalid("has characters that are not hex digits".into());
    }
    Validity::Valid
}

fn decoded_len(engine: &base64::engine::GeneralPurpose, v: &str) -> Option<usize> {
    engine
        .decode(v.as_bytes())
        .ok()
        .map(|d| Zeroizing::new(d).len())
}

#[cfg(test)]
mod tests;
