//! Why the gate refuses a write: one variant per rule, one sentence and one piece of advice
//! each, whichever command asked; and the spec's reason for the field, said with every rule.

use std::sync::Arc;

use serde::Serialize;

use crate::base::codes::Code;

/// A refused write: the rule it would break, and the spec's `reason` for the field (or its
/// secret), when the spec gives one. Shown as the rule's sentence followed by the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The rule.
    #[serde(flatten)]
    pub rule: Rule,
    /// The spec's words for why the value is protected (`reason`).
    pub reason: Option<Arc<str>>,
}

/// Which key of the spec makes a value never change once written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FixedBy {
    /// `fixed = true` on the secret: every field.
    Secret,
    /// `fixed = true` on the field.
    Field,
    /// `rotation = "never"` on the field.
    Never,
}

impl FixedBy {
    /// The key as the spec writes it, and where.
    fn key(self) -> &'static str {
        match self {
            FixedBy::Secret => "`fixed = true` on the secret",
            FixedBy::Field => "`fixed = true` on the field",
            FixedBy::Never => "`rotation = \"never\"` on the field",
        }
    }
}

impl Refusal {
    /// The field the refusal is about, if one.
    pub fn field(&self) -> Option<&str> {
        self.rule.field()
    }

    /// The stable code (the JSON `code`).
    pub fn code(&self) -> &'static str {
        self.rule.code()
    }

    /// What to do, in a sentence. `env` is the environment, for commands to run.
    pub fn help(&self, env: &str) -> String {
        self.rule.help(env)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.rule)?;
        match &self.reason {
            Some(r) => write!(f, " (the spec's reason: {r})"),
            None => Ok(()),
        }
    }
}

/// A rule the write would break. Each names the path and field; none holds a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum Rule {
    /// Another application provides the path (`provided_by`): vault-seed never writes it.
    Provided {
        /// The full path.
        path: String,
        /// Who provides it, in words.
        by: String,
    },
    /// A `fixed` value that exists would change.
    FixedChanges {
        /// The full path.
        path: String,
        /// The field.
        field: String,
        /// The spec's key that makes it fixed.
        by: FixedBy,
    },
    /// A field would be added to a live secret whose fixed value is stored under another name,
    /// or to a fixed secret: the data is encrypted with what is there.
    FixedLacks {
        /// The full path.
        path: String,
        /// The field the spec names and the secret lacks.
        field: String,
        /// The fields the secret holds.
        holds: Vec<String>,
        /// Whether the whole secret is fixed (else the field).
        whole: bool,
    },
    /// A field would be added beside a fixed field that is missing.
    BesideMissingFixed {
        /// The full path.
        path: String,
        /// The field that would be added.
        field: String,
        /// The fixed field the secret lacks.
        fixed: String,
    },
    /// A fixed secret is written whole, by `apply` (or `move`); no other command creates it.
    FixedNotCreated {
        /// The full path.
        path: String,
    },
    /// A real value (not a placeholder's marker) would be replaced without `--force`.
    RealValue {
        /// The full path.
        path: String,
        /// The field.
        field: String,
        /// The version that holds it.
        version: u64,
    },
    /// A marker (a placeholder's, or `import`'s) would replace a real value, or be stored as if
    /// it were one.
    Marker {
        /// The full path.
        path: String,
        /// The field.
        field: String,
        /// Whether Vault holds a real value there (else the marker was given as the value).
        over_real: bool,
    },
    /// The value fails the field's check (its generator's format, a keyring's length).
    Invalid {
        /// The full path.
        path: String,
        /// The field.
        field: String,
        /// What is wrong with it (never the value).
        why: String,
        /// The generator, in words.
        expected: String,
    },
    /// An input would get a new value while a value made from its old one stays: the pair
    /// would disagree (a certificate of another key).
    DerivedStale {
        /// The full path.
        path: String,
        /// The input field.
        input: String,
        /// The stored fields made from it.
        derived: Vec<String>,
    },
    /// A field made from other fields is never given a value by a person.
    Derived {
        /// The full path.
        path: String,
        /// The field.
        field: String,
        /// How it is made.
        how: String,
    },
    /// `rotate` never makes a placeholder: a person fills it in.
    PlaceholderRotates {
        /// The full path.
        path: String,
        /// The field.
        field: String,
    },
    /// `rotate` of a key that encrypts or hashes stored data, whose spec does not say how.
    RotationUnstated {
        /// The full path.
        path: String,
        /// The field.
        field: String,
        /// A Zitadel masterkey (else a Fernet key).
        masterkey: bool,
    },
    /// A secret would be made anew while another secret holds values made from its old one (a
    /// copy, a template): they would disagree.
    FollowerStale {
        /// The secret that would be made.
        path: String,
        /// The other secret's full path.
        follower: String,
        /// Its fields made from the old values.
        fields: Vec<String>,
    },
    /// A fixed secret's copy or template would have to follow the change of its source.
    FixedFollows {
        /// The fixed secret's full path.
        path: String,
        /// Its fields made from the source.
        fields: Vec<String>,
        /// The source's full path.
        source: String,
    },
    /// A field of the secret is not a string: rewriting the secret would change it.
    NotText {
        /// The full path.
        path: String,
        /// The field.
        field: String,
        /// Its JSON kind.
        kind: String,
    },
}

crate::base::codes::codes!(
    Rule,
    Rule {
        Provided => "provided",
        FixedChanges => "fixed-changes",
        FixedLacks => "fixed-lacks",
        BesideMissingFixed => "beside-missing-fixed",
        FixedNotCreated => "fixed-not-created",
        RealValue => "real-value",
        Marker => "marker",
        Invalid => "invalid",
        DerivedStale => "derived-stale",
        Derived => "derived",
        PlaceholderRotates => "placeholder-rotates",
        RotationUnstated => "rotation-unstated",
        FixedFollows => "fixed-follows",
        FollowerStale => "follower-stale",
        NotText => "not-text",
    }
);

impl Rule {
    /// The field the refusal is about, if one.
    pub fn field(&self) -> Option<&str> {
        use Rule as Refusal;
        match self {
            Refusal::Provided { .. } | Refusal::FixedNotCreated { .. } => None,
            Refusal::FixedFollows { fields, .. } => fields.first().map(String::as_str),
            Refusal::FollowerStale { .. } => None,
            Refusal::FixedChanges { field, .. }
            | Refusal::FixedLacks { field, .. }
            | Refusal::BesideMissingFixed { field, .. }
            | Refusal::RealValue { field, .. }
            | Refusal::Marker { field, .. }
            | Refusal::Invalid { field, .. }
            | Refusal::Derived { field, .. }
            | Refusal::PlaceholderRotates { field, .. }
            | Refusal::RotationUnstated { field, .. }
            | Refusal::NotText { field, .. } => Some(field),
            Refusal::DerivedStale { input, .. } => Some(input),
        }
    }

    /// What to do, in a sentence. `env` is the environment, for commands to run.
    pub fn help(&self, env: &str) -> String {
        use Rule as Refusal;
        match self {
            Refusal::Provided { .. } => format!("its provider makes and changes it; `vault-seed verify {env}` shows whether it is there and valid"),
            Refusal::FixedChanges { by, .. } => format!("the spec says it never changes ({}); if it really must, change it by hand with the runbook for what depends on it, and take that key out of the spec first", by.key()),
            Refusal::FixedLacks { .. } => format!("the value may be the real key under an old name: rename the field in the spec, or move the value to the spec's name by hand; `vault-seed move {env} SECRET --from OLD_PATH` moves a whole secret"),
            Refusal::BesideMissingFixed { fixed, .. } => format!("first settle fixed field `{fixed}`: rename the field in the spec to the name the value is stored under, or move the value"),
            Refusal::FixedNotCreated { .. } => format!("run `vault-seed apply {env}` first: it writes every field of a fixed secret at once"),
            Refusal::RealValue { .. } => "pass --force to replace it; the old value stays in KV v2 history".into(),
            Refusal::Marker { over_real: true, .. } => "give the real value; a marker stands only where no value is yet".into(),
            Refusal::Marker { over_real: false, .. } => "give the real value".into(),
            Refusal::Invalid { field, expected, .. } => format!("field `{field}` holds a {expected}"),
            Refusal::DerivedStale { input, .. } => format!("restore `{input}` from KV v2 history (`vault kv rollback` or `vault kv get -version=N`), or `vault-seed rotate {env} SECRET.{input} --yes` to make it and what is made from it again together"),
            Refusal::Derived { .. } => format!("set its source instead, and it follows; `vault-seed rotate {env} SECRET.FIELD --yes` makes it again from its source"),
            Refusal::PlaceholderRotates { field, .. } => format!("store a new value with `vault-seed set {env} SECRET.{field} < value.txt`"),
            Refusal::RotationUnstated { field, masterkey: true, .. } => format!("say it in the spec, on `fields.{field}`: `rotation = \"replace\"` (the application re-encrypts its data) or `rotation = \"never\"`"),
            Refusal::RotationUnstated { field, masterkey: false, .. } => format!("say it in the spec, on `fields.{field}`: `rotation = \"keyring\"` (the new key first, the old ones kept: for readers of a key list, such as MultiFernet), `rotation = \"replace\"` (the data is re-encrypted or expendable) or `rotation = \"never\"`"),
            Refusal::FixedFollows { .. } => "make the copy a value of its own (a generator) or remove `fixed` from its secret".into(),
            Refusal::FollowerStale { .. } => "bring the old value back from KV v2 history (`vault kv undelete`, `vault kv rollback`), or remove the fields made from it so that both are made again".into(),
            Refusal::NotText { .. } => "change it by hand, or give the field another name in the spec".into(),
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use Rule as Refusal;
        match self {
            Refusal::Provided { path, by } => write!(f, "`{path}` is provided by another application ({by}): vault-seed never writes it"),
            Refusal::FixedChanges { path, field, by: FixedBy::Secret } => write!(f, "`{path}` is fixed: field `{field}` never changes once written"),
            Refusal::FixedChanges { path, field, by: FixedBy::Field } => write!(f, "field `{field}` of `{path}` is fixed (`fixed = true` on the field): it never changes once written"),
            Refusal::FixedChanges { path, field, by: FixedBy::Never } => write!(f, "field `{field}` of `{path}` has `rotation = \"never\"` in the spec: it never changes once written"),
            Refusal::FixedLacks { path, field, holds, whole } => {
                let holds = match holds.as_slice() {
                    [] => "holds no field".to_string(),
                    names => format!("holds `{}`", names.join("`, `")),
                };
                match whole {
                    true => write!(f, "`{path}` is fixed, and {holds}; the spec says `{field}`: rename the field in the spec, or move the value (vault-seed never adds a field to a fixed secret)"),
                    false => write!(f, "field `{field}` of `{path}` is fixed, and the secret {holds}; the spec says `{field}`: rename the field in the spec, or move the value (vault-seed never adds a fixed field to a secret that exists)"),
                }
            }
            Refusal::BesideMissingFixed { path, field, fixed } => write!(f, "field `{field}` of `{path}` is not added while fixed field `{fixed}` is missing"),
            Refusal::FixedNotCreated { path } => write!(f, "`{path}` is fixed and does not exist yet: only `apply` creates it, whole"),
            Refusal::RealValue { path, field, version } => write!(f, "field `{field}` of `{path}` holds a real value (version {version}), not a placeholder"),
            Refusal::Marker { path, field, over_real: true } => write!(f, "field `{field}` of `{path}` holds a real value, and the new value is a marker: a marker never replaces a real value"),
            Refusal::Marker { path, field, over_real: false } => write!(f, "the value for field `{field}` of `{path}` is the marker itself, not a real value"),
            Refusal::Invalid { path, field, why, .. } => write!(f, "the value for field `{field}` of `{path}` {why}"),
            Refusal::DerivedStale { path, input, derived } => write!(f, "field `{input}` of `{path}` would get a new value while `{}` (made from its old value) stays: they would disagree", derived.join("`, `")),
            Refusal::Derived { path, field, how } => write!(f, "field `{field}` of `{path}` is made from other fields ({how}): vault-seed makes it, never a person"),
            Refusal::PlaceholderRotates { path, field } => write!(f, "field `{field}` of `{path}` is a placeholder: a person fills it in, vault-seed does not generate it"),
            Refusal::RotationUnstated { path, field, masterkey } => write!(f, "field `{field}` of `{path}` is a {} that encrypts or hashes stored data, and the spec does not say how it may rotate", if *masterkey { "Zitadel masterkey" } else { "Fernet key" }),
            Refusal::FixedFollows { path, fields, source } => write!(f, "`{path}` field(s) `{}` are made from `{source}`, and `{path}` is fixed: it never changes, so its source cannot either", fields.join("`, `")),
            Refusal::FollowerStale { path, follower, fields } => write!(f, "`{path}` is absent, and `{follower}` holds `{}` made from its old value: a new value would disagree with them, so none is made", fields.join("`, `")),
            Refusal::NotText { path, field, kind } => write!(f, "field `{field}` of `{path}` is {kind}, not a string; vault-seed writes strings only"),
        }
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented("write gate", &Rule::codes(), &Rule::all_codes());
    }
}
