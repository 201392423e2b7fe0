//! What `audit` finds, its severity and wording in one place (as `order/findings.rs`). Every
//! name in a finding came from Vault or the cluster: it is capped where the finding is made
//! ([`crate::base::text::cap`]) and escaped where it is shown.

use serde::Serialize;

/// How bad a finding is. Ordered worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Something the specs no longer describe: exit 1.
    Orphan,
    /// Something audit could not look at: exit 1, never taken as clean.
    NotChecked,
    /// Worth knowing; never fails the run.
    Note,
}

impl Severity {
    /// The word shown.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Orphan => "orphan",
            Severity::NotChecked => "not checked",
            Severity::Note => "note",
        }
    }
}

/// One finding, with the facts it needs (the JSON document's `findings[]`, tagged by `kind`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Finding {
    /// A path under a folder a spec owns that no spec names.
    UnnamedPath {
        /// The KV mount.
        mount: String,
        /// The path under the mount.
        path: String,
        /// The application whose folder holds it.
        app: String,
    },
    /// A path elsewhere on a spec's mount whose `custom_metadata` says vault-seed made it, that
    /// no spec names now.
    MarkedPath {
        /// The KV mount.
        mount: String,
        /// The path under the mount.
        path: String,
        /// The spec file its `vault-seed/spec` metadata names, if any.
        spec_file: Option<String>,
    },
    /// A field of a spec's secret that the spec does not name.
    UnnamedField {
        /// The KV mount.
        mount: String,
        /// The path under the mount.
        path: String,
        /// The secret's name in the spec.
        secret: String,
        /// The field's name (never its value).
        field: String,
    },
    /// An ExternalSecret or VaultStaticSecret reading a path under the specs' folders that no
    /// spec names: a consumer of something nobody seeds.
    OrphanConsumer {
        /// `ExternalSecret` or `VaultStaticSecret`.
        object_kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The key or path it reads, as written.
        reads: String,
    },
    /// Something audit could not look at, and why.
    NotChecked {
        /// What (a folder, a mount, an object).
        what: String,
        /// Why.
        why: String,
    },
    /// A fact worth knowing that fails nothing.
    Note {
        /// The note.
        text: String,
    },
}

crate::base::codes::codes!(
    Finding,
    Finding {
        UnnamedPath => "unnamed-path",
        MarkedPath => "marked-path",
        UnnamedField => "unnamed-field",
        OrphanConsumer => "orphan-consumer",
        NotChecked => "not-checked",
        Note => "note",
    }
);

impl Finding {
    /// How bad it is.
    pub fn severity(&self) -> Severity {
        match self {
            Finding::UnnamedPath { .. }
            | Finding::MarkedPath { .. }
            | Finding::UnnamedField { .. }
            | Finding::OrphanConsumer { .. } => Severity::Orphan,
            Finding::NotChecked { .. } => Severity::NotChecked,
            Finding::Note { .. } => Severity::Note,
        }
    }

    /// Where it is: a Vault path, an object, or what was not checked.
    pub fn place(&self) -> String {
        match self {
            Finding::UnnamedPath { mount, path, .. }
            | Finding::MarkedPath { mount, path, .. }
            | Finding::UnnamedField { mount, path, .. } => format!("{mount}/{path}"),
            Finding::OrphanConsumer {
                object_kind,
                namespace,
                name,
                ..
            } => format!("{object_kind} {namespace}/{name}"),
            Finding::NotChecked { what, .. } => what.clone(),
            Finding::Note { .. } => String::new(),
        }
    }

    /// The sentence that says what is wrong.
    pub fn message(&self) -> String {
        match self {
            Finding::UnnamedPath { app, .. } => {
                format!("in the folder of `{app}`, and no spec names it")
            }
            Finding::MarkedPath { spec_file, .. } => match spec_file {
                Some(f) => {
                    format!("marked as made by vault-seed (spec `{f}`), and no spec names it now")
                }
                None => "marked as made by vault-seed, and no spec names it now".into(),
            },
            Finding::UnnamedField { secret, field, .. } => {
                format!("field `{field}` of secret `{secret}`: the spec does not name it")
            }
            Finding::OrphanConsumer { reads, .. } => {
                format!("reads `{reads}`, under the specs' folders, and no spec names it")
            }
            Finding::NotChecked { why, .. } => why.clone(),
            Finding::Note { text } => text.clone(),
        }
    }
}

/// Whether `findings` leave the environment clean: no orphan and nothing left unchecked.
pub fn clean(findings: &[Finding]) -> bool {
    findings.iter().all(|f| f.severity() == Severity::Note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_notes_are_clean_and_not_checked_never_is() {
        let note = Finding::Note { text: "n".into() };
        let not_checked = Finding::NotChecked {
            what: "folder `secret/a`".into(),
            why: "the token may not `list` it".into(),
        };
        assert!(clean(&[]));
        assert!(clean(std::slice::from_ref(&note)));
        assert!(!clean(&[note.clone(), not_checked]));
        let field = Finding::UnnamedField {
            mount: "secret".into(),
            path: "a/b".into(),
            secret: "b".into(),
            field: "old".into(),
        };
        assert_eq!(field.severity(), Severity::Orphan);
        assert!(!clean(&[field]));
    }

    #[test]
    fn the_json_is_tagged_by_kind() {
        let f = Finding::OrphanConsumer {
            object_kind: "ExternalSecret",
            namespace: "ns".into(),
            name: "es".into(),
            reads: "ask/x/OLD".into(),
        };
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["kind"], "orphan-consumer");
        assert_eq!(crate::base::codes::Code::code(&f), "orphan-consumer");
        assert_eq!(v["object_kind"], "ExternalSecret");
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented("audit", &Finding::codes(), &Finding::all_codes());
    }
}
