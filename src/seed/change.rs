//! Changing a secret that exists (`set`, `rotate`): pick the field, read the current version,
//! write the new value with `cas=<that version>` so a concurrent change is detected, not
//! overwritten, and record who changed it in the custom metadata.

use secrecy::SecretString;

use crate::spec::{Field, Target};
use crate::vault::{Existing, FieldValue, KvMount, Present, Vault, VaultError, WriteFields};

/// Why a change cannot be made. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// `SECRET[.FIELD]` names no secret or field of the environment.
    #[error("{message}")]
    NotInSpec {
        /// What is wrong.
        message: String,
        /// What to do.
        help: String,
    },
    /// The path does not exist (or its latest version is deleted).
    #[error("`{path}` does not exist yet")]
    Absent {
        /// The full path.
        path: String,
    },
    /// The secret holds a field that is not a string; rewriting it would change its type.
    #[error("field `{field}` of `{path}` is {kind}, not a string; vault-seed writes strings only")]
    NotText {
        /// The full path.
        path: String,
        /// The field.
        field: String,
        /// Its JSON kind.
        kind: &'static str,
    },
    /// Vault refused or failed.
    #[error(transparent)]
    Vault(#[from] VaultError),
}

impl ChangeError {
    /// What the user can do.
    pub fn help(&self, env: &str) -> Option<String> {
        match self {
            ChangeError::NotInSpec { help, .. } => Some(help.clone()),
            ChangeError::Absent { .. } => {
                Some(format!("create it first with `vault-seed apply {env}`"))
            }
            ChangeError::NotText { .. } => {
                Some("change it by hand, or give the field another name in the spec".into())
            }
            ChangeError::Vault(e) => e.help(),
        }
    }
}

/// Find `SECRET` or `SECRET.FIELD` among the targets. Without a field, the secret's only field;
/// with several fields, `None` (the caller decides whether all fields are meant).
pub fn select<'a>(
    targets: &'a [Target],
    name: &str,
) -> Result<(&'a Target, Option<&'a Field>), ChangeError> {
    let names = || {
        targets
            .iter()
            .map(|t| format!("`{}`", t.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(t) = targets.iter().find(|t| t.name == name) {
        let only = (t.fields.len() == 1).then(|| &t.fields[0]);
        return Ok((t, only));
    }
    if let Some((secret, field)) = name.rsplit_once('.') {
        if let Some(t) = targets.iter().find(|t| t.name == secret) {
            return match t.fields.iter().find(|f| f.name == field) {
                Some(f) => Ok((t, Some(f))),
                None => Err(ChangeError::NotInSpec {
                    message: format!("secret `{secret}` has no field `{field}`"),
                    help: format!(
                        "its fields: {}",
                        t.fields
                            .iter()
                            .map(|f| format!("`{}`", f.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }),
            };
        }
    }
    Err(ChangeError::NotInSpec {
        message: format!("no secret `{name}` in this environment"),
        help: format!("secrets: {}", names()),
    })
}

/// The secret's live version, or why there is none.
pub async fn read_current(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
) -> Result<Present, ChangeError> {
    match vault.kv_read(mount, &t.path).await? {
        Existing::Present(p) => {
            if let Some((field, kind)) = p.fields.iter().find_map(|(k, v)| match v {
                FieldValue::NotText(kind) => Some((k.clone(), *kind)),
                FieldValue::Text(_) => None,
            }) {
                return Err(ChangeError::NotText {
                    path: t.full_path(),
                    field,
                    kind,
                });
            }
            Ok(p)
        }
        Existing::Absent | Existing::Deleted { .. } => Err(ChangeError::Absent {
            path: t.full_path(),
        }),
    }
}

/// Write `replacements` into the secret, keeping its other fields, with `cas=<current.version>`
/// on KV v2; then record `action` in the custom metadata. Returns the new version.
pub async fn write_fields(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
    current: &Present,
    replacements: &[(String, SecretString)],
    action: &str,
) -> Result<u64, ChangeError> {
    let mut all: Vec<(&str, &SecretString)> = current
        .fields
        .iter()
        .filter(|(k, _)| !replacements.iter().any(|(r, _)| r == *k))
        .filter_map(|(k, v)| match v {
            FieldValue::Text(s) => Some((k.as_str(), s)),
            FieldValue::NotText(_) => None,
        })
        .collect();
    all.extend(replacements.iter().map(|(k, v)| (k.as_str(), v)));
    let cas = (mount.version == 2).then_some(current.version);
    let version = vault
        .kv_write(mount, &t.path, &WriteFields(all), cas, "update")
        .await?;
    if mount.version == 2 {
        let meta = super::custom_metadata(t, action, current.custom_metadata.clone());
        if let Err(e) = vault.kv_set_custom_metadata(mount, &t.path, &meta).await {
            tracing::warn!(path = %t.full_path(), error = %e, "could not record the change in custom_metadata");
        }
    }
    Ok(version)
}
