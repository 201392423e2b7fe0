//! The part `imports`: each `from_secret` field whose Vault value is no longer the import
//! marker holds the value of its Kubernetes Secret's key (compared without showing either). A
//! Secret or a Vault value that cannot be read is "not checked", never ok. Applies only when a
//! field of the environment has `from_secret`.

use secrecy::ExposeSecret;
use serde::Serialize;

use super::findings::{Code, Finding, Severity};
use super::{cluster, Checked, Part};
use crate::generate::IMPORT_MARKER;
use crate::kube::Cluster;
use crate::spec::mounts::Mounts;
use crate::spec::{EnvPlan, Target};
use crate::vault::{Existing, FieldValue, Present, Vault};
use crate::write::import::{read_source, Source, Unavailable};

/// What the part finds about one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportFinding {
    /// Vault holds the Secret's value.
    Agrees,
    /// Vault still holds the import marker: nothing to compare yet (the part `vault` says it
    /// is pending).
    Pending {
        /// The environment, for the command to run.
        env: String,
    },
    /// Vault holds a value other than the Secret's.
    Differs {
        /// `namespace/name`.
        secret: String,
        /// The key.
        key: String,
        /// The environment, for the command to run.
        env: String,
    },
    /// Vault's value could not be read or is not there.
    VaultNotRead(String),
    /// The Secret's key gave no value to compare.
    Source(Unavailable),
}

crate::base::codes::codes!(
    ImportFinding,
    ImportFinding {
        Agrees => "agrees",
        Pending => "pending",
        Differs => "differs",
        VaultNotRead => "vault-not-read",
        Source => "source-unavailable",
    }
);

impl ImportFinding {
    /// `agrees`, `pending`, `differs` or `not-checked`.
    pub fn status(&self) -> &'static str {
        match self {
            ImportFinding::Agrees => "agrees",
            ImportFinding::Pending { .. } => "pending",
            ImportFinding::Differs { .. } => "differs",
            ImportFinding::VaultNotRead(_) | ImportFinding::Source(_) => "not-checked",
        }
    }

    /// Whether it was not checked.
    pub fn not_checked(&self) -> bool {
        self.status() == "not-checked"
    }
}

impl Finding for ImportFinding {
    fn severity(&self) -> Severity {
        match self {
            ImportFinding::Agrees | ImportFinding::Pending { .. } => Severity::Note,
            ImportFinding::Differs { .. } => Severity::Leading,
            ImportFinding::VaultNotRead(_) | ImportFinding::Source(_) => Severity::Problem,
        }
    }

    fn message(&self) -> String {
        match self {
            ImportFinding::Agrees => "Vault holds the Secret's value".into(),
            ImportFinding::Pending { env } => {
                format!("Vault holds the import marker: run `vault-seed import {env}`")
            }
            ImportFinding::Differs { secret, key, env } => format!(
                "Vault holds a value other than key `{key}` of Secret `{secret}`: run `vault-seed import {env} --force` to copy the Secret's"
            ),
            ImportFinding::VaultNotRead(why) => format!("not checked: {why}"),
            ImportFinding::Source(u) => format!("not checked: {}", u.message()),
        }
    }
}

/// One field's check.
#[derive(Debug, Clone, Serialize)]
pub struct ImportCheck {
    /// The secret's full path.
    pub path: String,
    /// The field.
    pub field: String,
    /// The Secret: `namespace/name`.
    pub secret: String,
    /// Its key.
    pub key: String,
    /// `agrees`, `pending`, `differs`, `not-checked`.
    pub status: &'static str,
    /// Agrees or pending.
    pub ok: bool,
    /// The sentence.
    pub message: String,
    /// The finding's code (`docs/errors.md`): `status`, with why it was not checked.
    pub code: &'static str,
}

/// The part's report.
#[derive(Debug, Clone, Serialize)]
pub struct ImportsPart {
    /// Every field agrees or is pending.
    pub ok: bool,
    /// The API server.
    pub server: String,
    /// The kubeconfig context; `None` in a pod.
    pub context: Option<String>,
    /// One per `from_secret` field, in spec order.
    pub results: Vec<ImportCheck>,
}

impl Part for ImportsPart {
    fn ok(&self) -> bool {
        self.ok
    }
}

impl ImportsPart {
    /// Fields that could not be checked.
    pub fn not_checked(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.status == "not-checked")
            .count()
    }
}

/// Check each `from_secret` field of `plan` on the cluster `connected`.
pub async fn check(
    connected: &cluster::Connected,
    vault: &Vault,
    plan: &EnvPlan<'_>,
    mounts: &Mounts,
) -> Checked<ImportsPart> {
    let cluster = match connected {
        Ok(c) => c,
        Err((error, help)) => return Checked::failed(error.clone(), Some(help.clone())),
    };
    let mut results = Vec::new();
    for t in &plan.targets {
        if crate::write::import::imports_into(t) {
            results.extend(check_target(vault, cluster, mounts, t, &plan.env).await);
        }
    }
    Checked::Done(ImportsPart {
        ok: results.iter().all(|r| r.ok),
        server: cluster.server().to_string(),
        context: cluster.context().map(str::to_string),
        results,
    })
}

/// The `from_secret` fields of `t`: Vault read once, each Secret only when Vault holds a value
/// to compare with it.
async fn check_target(
    vault: &Vault,
    cluster: &Cluster,
    mounts: &Mounts,
    t: &Target,
    env: &str,
) -> Vec<ImportCheck> {
    let current: Result<Present, String> = match mounts.get(t.mount()) {
        None => Err(mounts.errors.get(t.mount()).cloned().unwrap_or_default()),
        Some(mount) => match vault.kv_read(mount, &t.path).await {
            Ok(Existing::Present(p)) => Ok(p),
            Ok(_) => Err(format!("`{}` is not in Vault", t.full_path())),
            Err(e) => Err(e.to_string()),
        },
    };
    let mut checks = Vec::new();
    for f in t.fields.iter() {
        let Some(source) = Source::of(f) else {
            continue;
        };
        let finding = match current.as_ref().map(|p| p.fields.get(&f.name)) {
            Err(why) => ImportFinding::VaultNotRead(why.clone()),
            Ok(None) => ImportFinding::VaultNotRead(format!(
                "field `{}` of `{}` is not in Vault",
                f.name,
                t.full_path()
            )),
            Ok(Some(FieldValue::NotText(kind))) => ImportFinding::VaultNotRead(format!(
                "field `{}` of `{}` is {kind}, not a string",
                f.name,
                t.full_path()
            )),
            Ok(Some(FieldValue::Text(v))) if v.expose_secret() == IMPORT_MARKER => {
                ImportFinding::Pending { env: env.into() }
            }
            Ok(Some(FieldValue::Text(v))) => match read_source(cluster, &source).await {
                Err(u) => ImportFinding::Source(u),
                Ok(s) if s.expose_secret() == v.expose_secret() => ImportFinding::Agrees,
                Ok(_) => ImportFinding::Differs {
                    secret: source.secret(),
                    key: source.key.into(),
                    env: env.into(),
                },
            },
        };
        checks.push(ImportCheck {
            path: t.full_path(),
            field: f.name.clone(),
            secret: source.secret(),
            key: source.key.into(),
            status: finding.status(),
            ok: !matches!(finding.severity(), Severity::Leading | Severity::Problem),
            message: super::findings::capped(finding.message()),
            code: finding.code(),
        });
    }
    checks
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify imports",
            &ImportFinding::codes(),
            &ImportFinding::all_codes(),
        );
    }
}
