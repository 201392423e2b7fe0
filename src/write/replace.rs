//! Changing a secret that exists (`set`, `rotate`, `import`, follow-ups): pick the field, read
//! the current version, and send the write the gate approved (with `cas=<that version>`, so a
//! concurrent change is detected, not overwritten), recording who changed it in the custom
//! metadata. What may be written is [`crate::gate`]'s to decide, not this module's.

use std::collections::BTreeSet;

use crate::base::kv::KvMount;
use crate::gate::{self, Held};
use crate::spec::{Field, Target};
use crate::vault::{Existing, Vault, VaultError};

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
    /// `SECRET[.FIELD]` fits several secrets or fields (the same name in two applications);
    /// nothing is chosen.
    #[error("`{name}` names {} secrets: {}", .candidates.len(), .candidates.join(" and "))]
    Ambiguous {
        /// The name as given (escaped, elided).
        name: String,
        /// Each fit: "`<full path>` (field `<field>`)".
        candidates: Vec<String>,
        /// One of them, as a name that fits it alone.
        example: String,
    },
    /// The path does not exist (or its latest version is deleted).
    #[error("`{path}` does not exist yet")]
    Absent {
        /// The full path.
        path: String,
        /// The environment, for what to do.
        env: String,
    },
    /// Vault refused or failed.
    #[error(transparent)]
    Vault(#[from] VaultError),
}

impl ChangeError {
    /// What the user can do.
    pub fn help(&self) -> Option<String> {
        match self {
            ChangeError::NotInSpec { help, .. } => Some(help.clone()),
            ChangeError::Ambiguous { example, .. } => Some(format!(
                "name it by its path under the mount, e.g. `{example}`, or by its full path"
            )),
            ChangeError::Absent { env, .. } => {
                Some(format!("create it first with `vault-seed apply {env}`"))
            }
            ChangeError::Vault(e) => e.help(),
        }
    }
}

/// Find `SECRET` or `SECRET.FIELD` among the targets, the secret named by its name, its path
/// under the mount or its full path. Without a field, the secret's only field; with several
/// fields, `None` (the caller decides whether all fields are meant). A name that fits more than
/// one secret or field is refused, naming each: never a silent pick.
pub fn select<'a>(
    targets: &'a [Target],
    name: &str,
) -> Result<(&'a Target, Option<&'a Field>), ChangeError> {
    // Each fit: the target, the field, and the name that fits it alone with the path.
    let mut found: Vec<(&Target, Option<&Field>, String)> = Vec::new();
    for t in targets {
        let full = t.full_path();
        for whole in [&*t.name, &*t.path, full.as_str()] {
            let fit = if name == whole {
                let only = (t.fields.len() == 1).then(|| &t.fields[0]);
                Some((only, t.path.to_string()))
            } else {
                name.strip_prefix(whole)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .and_then(|field| t.fields.iter().find(|f| f.name == field))
                    .map(|f| (Some(f), format!("{}.{}", t.path, f.name)))
            };
            if let Some((f, by_path)) = fit {
                let field_name = |f: Option<&Field>| f.map(|f| f.name.clone());
                if !found
                    .iter()
                    .any(|(u, g, _)| std::ptr::eq(*u, t) && field_name(*g) == field_name(f))
                {
                    found.push((t, f, by_path));
                }
            }
        }
    }
    match found.as_slice() {
        [(t, f, _)] => return Ok((t, *f)),
        [] => {}
        many => {
            return Err(ChangeError::Ambiguous {
                name: crate::spec::diag::shown(name),
                candidates: many
                    .iter()
                    .map(|(t, f, _)| match f {
                        Some(f) => format!("`{}` (field `{}`)", t.full_path(), f.name),
                        None => format!("`{}`", t.full_path()),
                    })
                    .collect(),
                example: many[0].2.clone(),
            });
        }
    }
    let names = || {
        crate::spec::few(
            &targets
                .iter()
                .map(|t| t.name.to_string())
                .collect::<Vec<_>>(),
        )
    };
    if let Some((secret, field)) = name.rsplit_once('.') {
        if let Some(t) = targets.iter().find(|t| &*t.name == secret) {
            return Err(ChangeError::NotInSpec {
                message: format!("secret `{secret}` has no field `{field}`"),
                help: format!(
                    "its fields: {}",
                    t.fields
                        .iter()
                        .map(|f| format!("`{}`", f.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }
    Err(ChangeError::NotInSpec {
        message: format!("no secret `{name}` in this environment"),
        help: format!("secrets: {}", names()),
    })
}

/// How `set` and `rotate` name `field` of `t`, so that [`select`] picks exactly it: the secret's
/// name, or its path under the mount when another secret of the environment has the same name
/// (`shared_names`, see [`crate::spec::EnvPlan::shared_names`]); with `.FIELD` when the secret
/// has several fields. `apply`'s and `verify`'s "fill in" hints are built with it.
pub fn selector(t: &Target, field: &str, shared_names: &BTreeSet<String>) -> String {
    let secret: &str = if shared_names.contains(&*t.name) {
        &t.path
    } else {
        &t.name
    };
    if t.fields.len() > 1 {
        format!("{secret}.{field}")
    } else {
        secret.to_string()
    }
}

/// The secret's live version in environment `env`, or why there is none.
pub async fn read_current(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
    env: &str,
) -> Result<Held, ChangeError> {
    match vault.kv_read(mount, &t.path).await? {
        Existing::Present(p) => Ok(Held::live(p)),
        Existing::Absent | Existing::Deleted { .. } => Err(ChangeError::Absent {
            path: t.full_path(),
            env: env.to_string(),
        }),
    }
}

/// Send a write the gate approved ([`gate::write`]: check-and-set against the version read),
/// then record `action` in the custom metadata (a failure there is warned of: the value is
/// written). Returns the new version.
pub async fn write(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
    held: &Held,
    approved: &gate::Approved,
    action: &str,
) -> Result<u64, ChangeError> {
    let version = gate::write(vault, mount, approved).await?;
    if let Err(e) = gate::mark(vault, mount, t, action, held.custom_metadata.clone()).await {
        tracing::warn!(path = %t.full_path(), error = %e, "could not record the change in custom_metadata");
    }
    Ok(version)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::generate::Generator;
    use crate::spec::Origin;

    /// A target `NAME` in folder `FOLDER/dev` on `secret`, with these uuid fields (other modules'
    /// tests use it too).
    pub(crate) fn target(folder: &str, name: &str, fields: &[&str]) -> Target {
        let origin = Origin::new(
            PathBuf::from(format!("specs/{folder}.toml")).into(),
            folder.into(),
            "secret".into(),
            Some(crate::base::kv::KvVersion::V2),
        );
        let fields = fields
            .iter()
            .map(|f| Field::new(*f, Generator::Uuid))
            .collect();
        let path = format!("{folder}/dev/{name}").into();
        Target::new(origin, path, name.into(), false, fields, None)
    }

    fn picked(targets: &[Target], name: &str) -> (String, Option<String>) {
        let (t, f) = select(targets, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        (t.full_path(), f.map(|f| f.name.clone()))
    }

    #[test]
    fn a_secret_is_named_by_name_path_or_full_path_with_an_optional_field() {
        let ts = [
            target("app", "SALT", &["password"]),
            target("app", "PAT", &["value", "note"]),
        ];
        let salt = (
            "secret/app/dev/SALT".to_string(),
            Some("password".to_string()),
        );
        for name in [
            "SALT",
            "SALT.password",
            "app/dev/SALT",
            "secret/app/dev/SALT.password",
        ] {
            assert_eq!(picked(&ts, name), salt, "{name}");
        }
        assert_eq!(picked(&ts, "PAT"), ("secret/app/dev/PAT".into(), None));
        assert_eq!(picked(&ts, "app/dev/PAT.note").1.as_deref(), Some("note"));
        let e = select(&ts, "PAT.nope").err().unwrap().to_string();
        assert_eq!(e, "secret `PAT` has no field `nope`");
        assert!(select(&ts, "NOPE").is_err());
    }

    /// The name `apply` and `verify` print for `set` is one `select` resolves to that very field:
    /// for a secret with several fields, a nested name (`a/b`), and a name two applications use.
    #[test]
    fn the_selector_of_each_field_selects_that_field() {
        let ts = [
            target("app", "SALT", &["password"]),
            target("app", "PAT", &["value", "note"]),
            target("app", "db/ROOT", &["password"]),
            target("app", "db/USERS", &["alice", "bob"]),
            target("other", "SALT", &["password"]),
        ];
        let shared: BTreeSet<String> = ["SALT".to_string()].into();
        let mut shown = Vec::new();
        for t in &ts {
            for f in t.fields.iter() {
                let name = selector(t, &f.name, &shared);
                let (got, field) = select(&ts, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(std::ptr::eq(got, t), "{name} picked {}", got.full_path());
                assert_eq!(
                    field.map(|f| f.name.as_str()),
                    Some(f.name.as_str()),
                    "{name}"
                );
                shown.push(name);
            }
        }
        assert_eq!(
            shown,
            [
                "app/dev/SALT",
                "PAT.value",
                "PAT.note",
                "db/ROOT",
                "db/USERS.alice",
                "db/USERS.bob",
                "other/dev/SALT"
            ]
        );
    }

    /// Found by the probe: a name that fit two secrets picked one silently.
    #[test]
    fn a_name_that_fits_two_secrets_or_fields_is_refused_naming_both() {
        // The same secret name in two applications.
        let ts = [
            target("app", "SALT", &["password"]),
            target("other", "SALT", &["password"]),
        ];
        for name in ["SALT", "SALT.password"] {
            let e = select(&ts, name).err().unwrap();
            assert!(matches!(e, ChangeError::Ambiguous { .. }), "{name}: {e}");
            assert_eq!(
                e.to_string(),
                format!("`{name}` names 2 secrets: `secret/app/dev/SALT` (field `password`) and `secret/other/dev/SALT` (field `password`)")
            );
            assert!(
                e.help().unwrap().contains("`app/dev/SALT"),
                "{:?}",
                e.help()
            );
        }
        assert_eq!(picked(&ts, "other/dev/SALT").0, "secret/other/dev/SALT");
        // Secret `a.b` field `c` against secret `a` field `b.c` (lint refuses such a spec; a
        // name that fits both is refused here too).
        let ts = [target("app", "a.b", &["c"]), target("app", "a", &["b.c"])];
        let e = select(&ts, "a.b.c").err().unwrap().to_string();
        assert!(
            e.contains("`secret/app/dev/a.b` (field `c`)")
                && e.contains("`secret/app/dev/a` (field `b.c`)"),
            "{e}"
        );
    }
}
