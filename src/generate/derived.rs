//! Values made from other values: a key's public half, a bcrypt hash, a self-signed certificate,
//! a template, a copy. Each names its inputs ([`Derived::inputs`]); the seeding engine makes
//! the inputs first, then the value from them ([`Derived::make`]), and judges a stored value
//! against them ([`Derived::agrees`]) without ever printing either.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};

use super::Validity;

/// The most days a self-signed certificate may be valid (ten years).
pub const MAX_DAYS: u32 = 3650;

/// A field an input comes from: one of the same secret, or `SECRET.field` of another secret of
/// the environment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldRef {
    /// The other secret's name, or `None` for the same secret.
    pub secret: Option<String>,
    /// The field.
    pub field: String,
}

impl FieldRef {
    /// A field of the same secret.
    pub fn here(field: impl Into<String>) -> FieldRef {
        FieldRef {
            secret: None,
            field: field.into(),
        }
    }
}

impl fmt::Display for FieldRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.secret {
            Some(s) => write!(f, "{s}.{}", self.field),
            // As a template names it: a field of its own secret whose name holds a dot is
            // written with a leading dot, so that it is not read as `SECRET.field`.
            None if self.field.contains('.') => write!(f, ".{}", self.field),
            None => f.write_str(&self.field),
        }
    }
}

/// One piece of a `template`: text as written, or an input's value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Piece {
    /// Text copied as it is.
    Text(String),
    /// `{field}`, `{SECRET.field}`, `{.field}` (a field of this secret by its whole name, dots
    /// included: `{.tls.crt}`), or any of them with `|base64` (standard alphabet, padded).
    Value {
        /// Where the value comes from.
        from: FieldRef,
        /// Encoded as base64 (a `.dockerconfigjson`'s `auth`).
        base64: bool,
    },
}

/// How a derived field's value is made from other fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Derived {
    /// `derive = { public_key = "FIELD" }`: the public half of a key field.
    PublicKey {
        /// The private key field (same secret).
        from: String,
    },
    /// `derive = { bcrypt = "FIELD", cost = N }`: a bcrypt hash of another field.
    Bcrypt {
        /// The hashed field (same secret).
        from: String,
        /// bcrypt's cost.
        cost: u32,
    },
    /// `generator = "x509-self-signed"`: a certificate for the key field `key`.
    X509 {
        /// The private key field (same secret).
        key: String,
        /// Subject common name.
        cn: String,
        /// subjectAltNames.
        sans: Vec<String>,
        /// Days of validity from when it is made.
        days: u32,
    },
    /// `template = "..."`: text with inputs' values in it.
    Template(Vec<Piece>),
    /// `copy = "SECRET.FIELD"`: the same value as another secret's field.
    Copy(FieldRef),
}

/// A derived value could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    /// An input has no value.
    #[error("its input `{0}` has no value")]
    Missing(String),
    /// An input's value cannot be used (a key that does not parse).
    #[error("cannot be made from `{from}`: {why}")]
    Failed {
        /// The input.
        from: String,
        /// Why, never the value.
        why: String,
    },
}

/// An input's value, if it has one.
pub type Inputs<'a> = dyn Fn(&FieldRef) -> Option<SecretString> + 'a;

impl Derived {
    /// The name a spec uses for it.
    pub fn name(&self) -> &'static str {
        match self {
            Derived::PublicKey { .. } => "public_key",
            Derived::Bcrypt { .. } => "bcrypt",
            Derived::X509 { .. } => "x509-self-signed",
            Derived::Template(_) => "template",
            Derived::Copy(_) => "copy",
        }
    }

    /// The fields it is made from, each once, in the order written.
    pub fn inputs(&self) -> Vec<FieldRef> {
        let mut out: Vec<FieldRef> = Vec::new();
        let mut add = |r: FieldRef| {
            if !out.contains(&r) {
                out.push(r);
            }
        };
        match self {
            Derived::PublicKey { from } | Derived::Bcrypt { from, .. } => {
                add(FieldRef::here(from.clone()))
            }
            Derived::X509 { key, .. } => add(FieldRef::here(key.clone())),
            Derived::Template(pieces) => {
                for p in pieces {
                    if let Piece::Value { from, .. } = p {
                        add(from.clone());
                    }
                }
            }
            Derived::Copy(from) => add(from.clone()),
        }
        out
    }

    /// Whether one of its inputs is another secret's field.
    pub fn reads_other_secrets(&self) -> bool {
        self.inputs().iter().any(|r| r.secret.is_some())
    }

    /// Make the value from its inputs' values.
    pub fn make(&self, inputs: &Inputs<'_>) -> Result<SecretString, DeriveError> {
        let get = |r: &FieldRef| inputs(r).ok_or_else(|| DeriveError::Missing(r.to_string()));
        let failed = |from: &str, why: String| DeriveError::Failed {
            from: from.to_string(),
            why,
        };
        let value = match self {
            Derived::PublicKey { from } => {
                let key = get(&FieldRef::here(from.clone()))?;
                SecretString::from(super::pubkey::public_key(&key).map_err(|w| failed(from, w))?)
            }
            Derived::Bcrypt { from, cost } => {
                let source = get(&FieldRef::here(from.clone()))?;
                super::bcrypt::hash(&source, *cost).map_err(|w| failed(from, w))?
            }
            Derived::X509 {
                key,
                cn,
                sans,
                days,
            } => {
                let k = get(&FieldRef::here(key.clone()))?;
                SecretString::from(
                    super::x509::self_signed(&k, cn, sans, *days).map_err(|w| failed(key, w))?,
                )
            }
            Derived::Template(pieces) => {
                let mut out = zeroize::Zeroizing::new(String::new());
                for p in pieces {
                    match p {
                        Piece::Text(t) => out.push_str(t),
                        Piece::Value { from, base64 } => {
                            let v = get(from)?;
                            if *base64 {
                                out.push_str(&STANDARD.encode(v.expose_secret()));
                            } else {
                                out.push_str(v.expose_secret());
                            }
                        }
                    }
                }
                SecretString::from(out.as_str())
            }
            Derived::Copy(from) => get(from)?,
        };
        // The public half of a key, a certificate and a template's text are not all secret,
        // but they may carry a secret (a DSN's password): kept out of output like any value.
        crate::base::redact::register(&value);
        Ok(value)
    }

    /// Judge a stored value by its shape alone (no inputs needed).
    pub fn validate(&self, value: &SecretString) -> Validity {
        let v = value.expose_secret();
        if v.is_empty() {
            return Validity::Invalid("is empty".into());
        }
        match self {
            Derived::PublicKey { .. } => super::pubkey::validate(v),
            Derived::Bcrypt { cost, .. } => super::bcrypt::validate(v, *cost),
            Derived::X509 { .. } => super::x509::validate(v),
            Derived::Template(_) | Derived::Copy(_) => Validity::Valid,
        }
    }

    /// Whether a stored value is what its inputs make: `None` when an input has no value (not
    /// checked), else `Valid` or `Invalid` saying which input it disagrees with. Compared
    /// without printing either.
    pub fn agrees(&self, value: &SecretString, inputs: &Inputs<'_>) -> Option<Validity> {
        let disagree = |from: &dyn fmt::Display| {
            Validity::Invalid(format!(
                "does not match its source `{from}` (made from an older value?); `vault-seed rotate ENV SECRET.FIELD` makes it again from its source"
            ))
        };
        let fixed_by_source = |ok: bool, from: &dyn fmt::Display| {
            if ok {
                Validity::Valid
            } else {
                disagree(from)
            }
        };
        Some(match self {
            Derived::PublicKey { from } => {
                let key = inputs(&FieldRef::here(from.clone()))?;
                match super::pubkey::public_key(&key) {
                    Ok(want) => fixed_by_source(
                        normalized(&want) == normalized(value.expose_secret()),
                        from,
                    ),
                    Err(_) => return None,
                }
            }
            Derived::Bcrypt { from, .. } => {
                let source = inputs(&FieldRef::here(from.clone()))?;
                fixed_by_source(super::bcrypt::matches(value, &source), from)
            }
            Derived::X509 { key, .. } => {
                let k = inputs(&FieldRef::here(key.clone()))?;
                match super::x509::matches_key(value.expose_secret(), &k) {
                    Ok(ok) => fixed_by_source(ok, key),
                    Err(_) => return None,
                }
            }
            Derived::Template(_) | Derived::Copy(_) => {
                let want = match self.make(inputs) {
                    Ok(w) => w,
                    Err(_) => return None,
                };
                let same = constant_time_eq(want.expose_secret(), value.expose_secret());
                match self {
                    Derived::Copy(from) => fixed_by_source(same, from),
                    _ => {
                        let names: Vec<String> =
                            self.inputs().iter().map(ToString::to_string).collect();
                        fixed_by_source(same, &names.join("`, `"))
                    }
                }
            }
        })
    }

    /// A one-line description, for reports.
    pub fn describe(&self) -> String {
        match self {
            Derived::PublicKey { from } => format!("public key of `{from}`"),
            Derived::Bcrypt { from, cost } => format!("bcrypt hash (cost {cost}) of `{from}`"),
            Derived::X509 { key, cn, days, .. } => {
                format!("self-signed certificate for `{key}` (CN {cn}, {days} days)")
            }
            Derived::Template(_) => {
                let names: Vec<String> = self.inputs().iter().map(ToString::to_string).collect();
                format!("template of `{}`", names.join("`, `"))
            }
            Derived::Copy(from) => format!("copy of `{from}`"),
        }
    }
}

/// Text compared without an early exit on the first difference.
fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A public key's text without the line endings and surrounding space a person or a tool may
/// have added, and without an OpenSSH line's comment (`ssh-ed25519 AAAA... user@host`).
fn normalized(s: &str) -> String {
    let words = s.split_whitespace();
    if s.trim_start().starts_with("ssh-") {
        words.take(2).collect::<Vec<_>>().join(" ")
    } else {
        words.collect::<Vec<_>>().join(" ")
    }
}

/// Parse a `template`'s text: `{field}`, `{SECRET.field}` (the field after the last dot), or
/// `{.field}` (this secret's field by its whole name: `{.tls.crt}` is field `tls.crt`, where
/// `{tls.crt}` is field `crt` of secret `tls`), optionally `|base64`; `{{` and `}}` are literal
/// braces. Err: what is wrong, and the byte offset in `text` where.
pub fn parse_template(text: &str) -> Result<Vec<Piece>, (String, usize)> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut rest = text.char_indices().peekable();
    while let Some((i, c)) = rest.next() {
        match c {
            '{' if rest.peek().map(|p| p.1) == Some('{') => {
                rest.next();
                lit.push('{');
            }
            '}' if rest.peek().map(|p| p.1) == Some('}') => {
                rest.next();
                lit.push('}');
            }
            '}' => return Err(("a `}` without its `{` (write `}}` for a brace)".into(), i)),
            '{' => {
                let start = i + 1;
                let Some(end) = text[start..].find('}').map(|e| start + e) else {
                    return Err(("a `{` without its `}` (write `{{` for a brace)".into(), i));
                };
                let inner = &text[start..end];
                while rest.peek().is_some_and(|(j, _)| *j <= end) {
                    rest.next();
                }
                let (name, base64) = match inner.split_once('|') {
                    None => (inner, false),
                    Some((n, "base64")) => (n, true),
                    Some((_, f)) => {
                        return Err((
                            format!("unknown filter `{f}`: the only filter is `base64`"),
                            start,
                        ))
                    }
                };
                let from = match name.rsplit_once('.') {
                    _ if name.starts_with('.') => FieldRef::here(&name[1..]),
                    Some((s, f)) => FieldRef {
                        secret: Some(s.to_string()),
                        field: f.to_string(),
                    },
                    None => FieldRef::here(name),
                };
                let bad = |s: &str| {
                    s.is_empty()
                        || !s
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_-/.".contains(c))
                };
                if bad(&from.field) || from.secret.as_deref().is_some_and(bad) {
                    return Err((
                        format!(
                            "`{{{inner}}}` is not `{{field}}`, `{{SECRET.field}}` or `{{.field}}`"
                        ),
                        i,
                    ));
                }
                if !lit.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut lit)));
                }
                pieces.push(Piece::Value { from, base64 });
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() {
        pieces.push(Piece::Text(lit));
    }
    if !pieces.iter().any(|p| matches!(p, Piece::Value { .. })) {
        return Err((
            "names no field: a template without `{field}` is a constant, not a secret".into(),
            0,
        ));
    }
    Ok(pieces)
}

/// Parse `SECRET.FIELD` (a `copy`): the secret's name may hold dots and slashes, the field is
/// after the last dot.
pub fn parse_copy(text: &str) -> Option<FieldRef> {
    let (s, f) = text.rsplit_once('.')?;
    (!s.is_empty() && !f.is_empty()).then(|| FieldRef {
        secret: Some(s.to_string()),
        field: f.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(r: &FieldRef) -> Option<SecretString> {
        match (r.secret.as_deref(), r.field.as_str()) {
            (None, "password") => Some(SecretString::from("p@ss")),
            (Some("DB"), "user") => Some(SecretString::from("core")),
            _ => None,
        }
    }

    #[test]
    fn a_template_puts_each_value_in_its_place_and_braces_can_be_escaped() {
        let t = parse_template("{{\"auth\":\"{DB.user}:{password}|{password|base64}\"}}").unwrap();
        let d = Derived::Template(t);
        assert_eq!(
            d.inputs(),
            [
                FieldRef {
                    secret: Some("DB".into()),
                    field: "user".into()
                },
                FieldRef::here("password")
            ]
        );
        let v = d.make(&values).unwrap();
        assert_eq!(v.expose_secret(), "{\"auth\":\"core:p@ss|cEBzcw==\"}");
        assert_eq!(d.agrees(&v, &values), Some(Validity::Valid));
        let other = SecretString::from("{\"auth\":\"core:stale|c3RhbGU=\"}");
        assert!(
            matches!(d.agrees(&other, &values), Some(Validity::Invalid(w)) if !w.contains("stale"))
        );
    }

    /// A leading dot names this secret's field by its whole name; without it the text after
    /// the last dot is another secret's field. Either is written back as it was read.
    #[test]
    fn a_leading_dot_names_a_dotted_field_of_this_secret() {
        let cases = [
            ("{.tls.crt}", FieldRef::here("tls.crt")),
            ("{..dockerconfigjson}", FieldRef::here(".dockerconfigjson")),
            ("{.password}", FieldRef::here("password")),
            (
                "{tls.crt}",
                FieldRef {
                    secret: Some("tls".into()),
                    field: "crt".into(),
                },
            ),
        ];
        for (text, want) in cases {
            let pieces = parse_template(text).unwrap();
            let [Piece::Value { from, .. }] = &pieces[..] else {
                panic!("{text}: {pieces:?}");
            };
            assert_eq!(from, &want, "{text}");
            let shown = from.to_string();
            if text != "{.password}" {
                assert_eq!(format!("{{{shown}}}"), text);
            }
        }
        assert!(parse_template("{.}").is_err());
        assert!(parse_template("{.|base64}").is_err());
    }

    #[test]
    fn bad_templates_say_what_and_where() {
        for (text, at) in [
            ("a{b", 1),
            ("a}b", 1),
            ("x{p|hex}", 2),
            ("{}", 0),
            ("no fields", 0),
        ] {
            let e = parse_template(text).unwrap_err();
            assert_eq!(e.1, at, "{text}: {}", e.0);
        }
    }

    #[test]
    fn a_value_whose_input_is_absent_is_not_checked() {
        let d = Derived::Copy(parse_copy("OTHER.password").unwrap());
        assert_eq!(d.agrees(&SecretString::from("x"), &values), None);
        assert!(matches!(d.make(&values), Err(DeriveError::Missing(m)) if m == "OTHER.password"));
    }
}
