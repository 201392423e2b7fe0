//! The store check of the part `kube`: is the SecretStore or ClusterSecretStore the spec's
//! ExternalSecrets read through the one vault-seed seeded and judged? Its `spec.provider.vault`
//! ([`crate::kube::VaultStore`]) is compared with what vault-seed used: the Vault (`server`,
//! or an address the spec declares as the same Vault seen from the cluster,
//! `cluster_vault_addr`), the mount and KV version of the paths read (`path`, `version`), the
//! Vault namespace, and the login (`auth`): the role ESO logs in as must be the spec's, or,
//! when the spec names none, carry exactly the policies the part `policy` judged. Nothing here
//! writes anything; what cannot be told is said "not checked", never taken as matching.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use super::facts::Facts;
use super::findings::{joined, shown_namespace, Finding, Severity};
use crate::base::kv::KvVersion;
use crate::kube::{RemoteRef, StoreAuth, StoreKv, StoreProblem, VaultStore};
use crate::spec::{AuthRole, EnvPlan, Environment, Spec, Target};
use crate::vault::{Vault, VaultError};

/// What the store checks need besides the store: Vault as vault-seed reached it, the plan, and
/// where ExternalSecrets are looked for.
pub struct Inputs<'a> {
    /// The Vault vault-seed talked to (its address and namespace; roles are read through it).
    pub vault: &'a Vault,
    /// The environment's specs.
    pub plan: &'a EnvPlan<'a>,
    /// The kubeconfig context's namespace, for specs that give none.
    pub default_namespace: &'a str,
    /// Whether ESO's own token was given (`--eso-token-file`).
    pub eso_token_given: bool,
}

/// One ExternalSecret reading through a store: its namespace, name and remoteRefs.
#[derive(Debug, Clone)]
pub struct StoreUser<'w> {
    /// Its namespace.
    pub namespace: &'w str,
    /// Its name.
    pub name: &'w str,
    /// Its `spec.data[]` remoteRefs.
    pub refs: Arc<[RemoteRef]>,
}

/// What the check of a store's Vault provider finds.
#[derive(Debug, Clone)]
pub(crate) enum StoreFinding {
    /// The provider cannot be read (not Vault, a field missing or malformed).
    Unreadable { problem: StoreProblem },
    /// It points at another Vault.
    OtherVault {
        server: String,
        expected: Vec<String>,
    },
    /// It reads another mount than the one the spec's path is on.
    OtherMount {
        store: String,
        key: String,
        spec: String,
    },
    /// It has no `path`: ESO takes the key's first segment as the mount.
    KeyMount {
        key: String,
        read: String,
        spec: String,
    },
    /// Its KV version is not the mount's.
    OtherVersion {
        store: StoreKv,
        mount: String,
        spec: KvVersion,
    },
    /// Its Vault namespace is not the one vault-seed used.
    OtherNamespace {
        store: Option<String>,
        used: Option<String>,
    },
    /// It logs in as another role, or on another mount, than the spec says.
    OtherRole { store: String, spec: String },
    /// The spec names no role, and the store's role carries other policies than those judged.
    OtherPolicies {
        role: String,
        gives: Vec<String>,
        judged: Vec<String>,
    },
    /// The store's role does not exist in Vault.
    RoleMissing { role_path: String },
    /// Its AppRole `roleId` is not the spec's role's.
    OtherRoleId { role: String },
    /// Something about its login cannot be told.
    NotChecked { what: String },
    /// It logs in with a static token, judged from `--eso-token-file` (`given`) or not at all.
    Token { given: bool },
}

crate::base::codes::codes!(
    StoreFinding,
    StoreFinding {
        Unreadable => "store-unreadable",
        OtherVault => "other-vault",
        OtherMount => "other-mount",
        KeyMount => "mount-from-key",
        OtherVersion => "other-kv-version",
        OtherNamespace => "other-namespace",
        OtherRole => "other-role",
        OtherPolicies => "other-policies",
        RoleMissing => "role-missing",
        OtherRoleId => "other-role-id",
        NotChecked => "login-not-checked",
        Token => "static-token",
    }
);

impl Finding for StoreFinding {
    fn severity(&self) -> Severity {
        match self {
            StoreFinding::Token { given: true } => Severity::Note,
            _ => Severity::Problem,
        }
    }

    fn message(&self) -> String {
        use StoreFinding::*;
        match self {
            Unreadable { problem } => format!("cannot judge its Vault provider: {problem}"),
            OtherVault { server, expected } => format!(
                "it reads Vault at `{server}`, not the Vault vault-seed seeded (`{}`); if it is the same Vault seen from the cluster, add `cluster_vault_addr = \"{server}\"` to the environment",
                joined(expected)
            ),
            OtherMount { store, key, spec } => format!(
                "it reads mount `{store}` (`path`), but remoteRef `{key}` is on mount `{spec}` in the spec"
            ),
            KeyMount { key, read, spec } => format!(
                "it has no `path`, so ESO reads remoteRef `{key}` on mount `{read}`; the spec's path is on mount `{spec}`"
            ),
            OtherVersion { store, mount, spec } => format!(
                "it reads KV `{}` (`version`), but mount `{mount}` is KV v{}",
                store.as_str(),
                spec.number()
            ),
            OtherNamespace { store, used } => format!(
                "it reads Vault namespace {}, but vault-seed used {}",
                shown_namespace(store.as_deref()),
                shown_namespace(used.as_deref())
            ),
            OtherRole { store, spec } => format!("ESO logs in as {store}; the spec says {spec}"),
            OtherPolicies { role, gives, judged } => format!(
                "ESO logs in as {role}, which gives `{}`; the policy part judged `{}` (name the role in `[eso] auth_role`, or list its policies)",
                joined(gives),
                joined(judged)
            ),
            RoleMissing { role_path } => {
                format!("ESO logs in with `{role_path}`, which does not exist in Vault")
            }
            OtherRoleId { role } => format!("its AppRole `roleId` is not the role ID of {role}"),
            NotChecked { what } => format!("not checked: {what}"),
            Token { given: true } => "ESO logs in with a static token (`tokenSecretRef`): its policies were judged from --eso-token-file".into(),
            Token { given: false } => "not checked: ESO logs in with a static token (`tokenSecretRef`), whose policies vault-seed cannot see; the spec's policies were judged instead (pass --eso-token-file with that token)".into(),
        }
    }
}

/// `role `R` on `M``, as the findings name a role.
fn role_words(mount: &str, role: &str) -> String {
    format!("role `{role}` on `{mount}`")
}

/// The namespace of a spec's ExternalSecrets: the environment's `kube_namespace`, else the
/// spec's `[eso] namespace`, else the context's.
pub fn eso_namespace(spec: &Spec, env: &Environment, default_namespace: &str) -> String {
    env.kube_namespace
        .clone()
        .or_else(|| spec.eso.namespace.clone())
        .unwrap_or_else(|| default_namespace.to_string())
}

/// The specs (with their environments) naming any of `users`.
fn specs_of<'a>(inputs: &Inputs<'a>, users: &[StoreUser<'_>]) -> Vec<(&'a Spec, &'a Environment)> {
    let users: HashSet<(&str, &str)> = users.iter().map(|u| (u.namespace, u.name)).collect();
    inputs
        .plan
        .specs
        .iter()
        .filter(|(spec, env)| {
            let ns = eso_namespace(spec, env, inputs.default_namespace);
            spec.eso
                .external_secrets
                .iter()
                .any(|name| users.contains(&(ns.as_str(), name.as_str())))
        })
        .copied()
        .collect()
}

/// Every finding about a store read through by `users`.
pub(crate) async fn check(
    inputs: &Inputs<'_>,
    facts: &Facts<'_>,
    vault: &Result<VaultStore, StoreProblem>,
    users: &[StoreUser<'_>],
) -> Vec<StoreFinding> {
    let store = match vault {
        Ok(s) => s,
        Err(problem) => {
            return vec![StoreFinding::Unreadable {
                problem: problem.clone(),
            }]
        }
    };
    let specs = specs_of(inputs, users);
    let mut found = Vec::new();
    found.extend(server(inputs, &specs, store));
    found.extend(mounts(facts, store, users));
    found.extend(namespace(inputs, store));
    found.extend(login(inputs, facts, &specs, store).await);
    found
}

/// The store's `server` is the Vault vault-seed talked to, or an address an environment of the
/// specs declares as that Vault (`cluster_vault_addr`); compared as normalised URLs.
fn server(
    inputs: &Inputs<'_>,
    specs: &[(&Spec, &Environment)],
    store: &VaultStore,
) -> Option<StoreFinding> {
    let mut expected = vec![inputs.vault.addr().trim_end_matches('/').to_string()];
    for (_, env) in specs {
        for a in &env.cluster_vault_addrs {
            if !expected.contains(a) {
                expected.push(a.clone());
            }
        }
    }
    let same = expected
        .iter()
        .any(|e| crate::vault::address::same_vault(&store.server, e));
    (!same).then(|| StoreFinding::OtherVault {
        server: store.server.clone(),
        expected,
    })
}

/// The mount and KV version each remoteRef is read at (ESO's `buildPath`,
/// `providers/v1/vault/client_get.go`): with `path`, the store's mount, a leading `<path>/`
/// of the key cut; without, the key's first segment is the mount (on v2, `data` goes after it),
/// so the key must be the full path on a one-segment mount. Each mismatch is said once.
fn mounts(facts: &Facts<'_>, store: &VaultStore, users: &[StoreUser<'_>]) -> Vec<StoreFinding> {
    let mut found = Vec::new();
    let mut said = BTreeSet::new();
    for r in users.iter().flat_map(|u| u.refs.iter()) {
        let Some(t) = facts.index().of_key(&r.key) else {
            continue; // the ExternalSecret's check says it is not a path of the spec
        };
        let mount = t.mount();
        let key = r.key.trim_start_matches('/');
        let wrong = match &store.path {
            Some(p) if p.trim_end_matches('/') != mount => Some(StoreFinding::OtherMount {
                store: p.clone(),
                key: r.key.to_string(),
                spec: mount.to_string(),
            }),
            Some(_) => None,
            None => {
                let read = match store.version {
                    StoreKv::V2 => key.split('/').next().unwrap_or_default(),
                    // On v1 the key is the API path as it is.
                    StoreKv::V1 if key.starts_with(&format!("{mount}/")) => mount,
                    StoreKv::V1 => key.split('/').next().unwrap_or_default(),
                };
                (read != mount || key != t.full_path()).then(|| StoreFinding::KeyMount {
                    key: r.key.to_string(),
                    read: read.to_string(),
                    spec: mount.to_string(),
                })
            }
        };
        if let Some(f) = wrong.filter(|f| said.insert(f.message())) {
            found.push(f);
        }
        found.extend(version(facts, store, t).filter(|f| said.insert(f.message())));
    }
    found
}

/// `version` against the mount's: the spec's `kv_version`, else what the server reports.
fn version(facts: &Facts<'_>, store: &VaultStore, t: &Target) -> Option<StoreFinding> {
    let mount = t.mount();
    let Some(spec) = t.kv_version().or_else(|| facts.detected(mount)) else {
        return Some(StoreFinding::NotChecked {
            what: format!(
                "the KV version of mount `{mount}` is unknown, so `version` is not compared"
            ),
        });
    };
    let same = matches!(
        (store.version, spec),
        (StoreKv::V1, KvVersion::V1) | (StoreKv::V2, KvVersion::V2)
    );
    (!same).then(|| StoreFinding::OtherVersion {
        store: store.version,
        mount: mount.to_string(),
        spec,
    })
}

/// The store's Vault namespace is the one vault-seed used (none on both sides is the same).
fn namespace(inputs: &Inputs<'_>, store: &VaultStore) -> Option<StoreFinding> {
    let (theirs, used) = (
        super::vault_namespace(store.namespace.as_deref()),
        super::vault_namespace(inputs.vault.namespace()),
    );
    (theirs != used).then_some(StoreFinding::OtherNamespace {
        store: theirs,
        used,
    })
}

/// The distinct `[eso] auth_role`s of the specs.
fn spec_roles<'a>(specs: &[(&'a Spec, &'a Environment)]) -> Vec<&'a AuthRole> {
    let mut roles: Vec<&AuthRole> = Vec::new();
    for (spec, _) in specs {
        if let Some(r) = &spec.eso.auth_role {
            if !roles.contains(&r) {
                roles.push(r);
            }
        }
    }
    roles
}

/// How ESO logs in, against the spec's role or the policies judged.
async fn login(
    inputs: &Inputs<'_>,
    facts: &Facts<'_>,
    specs: &[(&Spec, &Environment)],
    store: &VaultStore,
) -> Vec<StoreFinding> {
    let roles = spec_roles(specs);
    let (mount, role) = match &store.auth {
        StoreAuth::Kubernetes { mount, role } => (mount, role),
        StoreAuth::Jwt {
            mount,
            role: Some(role),
        } => (mount, role),
        StoreAuth::Jwt { mount, role: None } => {
            return vec![StoreFinding::NotChecked {
                what: format!("the store names no jwt `role`: ESO logs in as the `default_role` of `auth/{mount}`"),
            }]
        }
        StoreAuth::AppRole { mount, role_id } => {
            return app_role(inputs, &roles, mount, role_id.as_deref()).await
        }
        StoreAuth::Token => {
            return vec![StoreFinding::Token {
                given: inputs.eso_token_given,
            }]
        }
        StoreAuth::Other(method) => {
            return vec![StoreFinding::NotChecked {
                what: format!("vault-seed does not judge `{method}` auth"),
            }]
        }
        StoreAuth::None => {
            return vec![StoreFinding::NotChecked {
                what: "the store has no `auth`: ESO sends no token".into(),
            }]
        }
    };
    if roles.is_empty() {
        return role_policies(inputs, facts, mount, role).await;
    }
    roles
        .into_iter()
        .filter(|r| (&r.mount, &r.name) != (mount, role))
        .map(|r| StoreFinding::OtherRole {
            store: role_words(mount, role),
            spec: role_words(&r.mount, &r.name),
        })
        .collect()
}

/// The spec names no role: the store's role, read from Vault, must carry exactly the policies
/// the part `policy` judged (`default` included unless `token_no_default_policy`).
async fn role_policies(
    inputs: &Inputs<'_>,
    facts: &Facts<'_>,
    mount: &str,
    role: &str,
) -> Vec<StoreFinding> {
    let role_path = format!("auth/{mount}/role/{role}");
    let Some(judged) = facts.eso_policies() else {
        return vec![StoreFinding::NotChecked {
            what: format!("the policy part did not judge ESO's policies, so those of `{role_path}` are not compared"),
        }];
    };
    let r = match inputs.vault.role_tokens(mount, role).await {
        Ok(Some(r)) => r,
        Ok(None) => return vec![StoreFinding::RoleMissing { role_path }],
        Err(e) => return vec![unreadable(&role_path, &e)],
    };
    let mut gives: BTreeSet<String> = r.policies.into_iter().filter(|p| !p.is_empty()).collect();
    if !r.no_default_policy {
        gives.insert("default".into());
    }
    if gives == judged {
        return Vec::new();
    }
    vec![StoreFinding::OtherPolicies {
        role: role_words(mount, role),
        gives: gives.into_iter().collect(),
        judged: judged.into_iter().collect(),
    }]
}

fn unreadable(path: &str, e: &VaultError) -> StoreFinding {
    StoreFinding::NotChecked {
        what: match e {
            VaultError::Denied { .. } => format!("this token may not read `{path}`"),
            e => format!("cannot read `{path}`: {e}"),
        },
    }
}

/// AppRole: the store's `roleId` must be the role ID of the spec's role on that mount
/// (`auth/<mount>/role/<name>/role-id`). The `secretRef` is never read.
async fn app_role(
    inputs: &Inputs<'_>,
    roles: &[&AuthRole],
    mount: &str,
    role_id: Option<&str>,
) -> Vec<StoreFinding> {
    let shown = format!("AppRole on `{mount}`");
    let Some(role) = roles.iter().find(|r| r.mount == mount) else {
        return match roles.first() {
            Some(r) => vec![StoreFinding::OtherRole {
                store: shown,
                spec: role_words(&r.mount, &r.name),
            }],
            None => vec![StoreFinding::NotChecked {
                what: format!("ESO logs in with {shown} and the spec names no `[eso] auth_role` there: cannot tell which role `roleId` is"),
            }],
        };
    };
    let Some(role_id) = role_id else {
        return vec![StoreFinding::NotChecked {
            what: format!("the store's `roleId` is in a Secret (`roleRef`), which vault-seed does not read: cannot tell whether it is {}", role_words(mount, &role.name)),
        }];
    };
    let path = format!("auth/{mount}/role/{}/role-id", role.name);
    match inputs.vault.approle_role_id(mount, &role.name).await {
        Ok(Some(id)) if id == role_id => Vec::new(),
        Ok(Some(_)) => vec![StoreFinding::OtherRoleId {
            role: role_words(mount, &role.name),
        }],
        Ok(None) => vec![StoreFinding::RoleMissing {
            role_path: format!("auth/{mount}/role/{}", role.name),
        }],
        Err(e) => vec![unreadable(&path, &e)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a static token judged from `--eso-token-file` is a note: every other finding,
    /// "not checked" included, fails the store.
    #[test]
    fn only_a_judged_static_token_is_a_note_and_not_checked_fails() {
        assert_eq!(
            StoreFinding::Token { given: true }.severity(),
            Severity::Note
        );
        let failing = [
            StoreFinding::Token { given: false },
            StoreFinding::NotChecked { what: "x".into() },
            StoreFinding::Unreadable {
                problem: StoreProblem::Missing {
                    field: "spec.provider.vault.server".into(),
                },
            },
        ];
        for f in failing {
            assert_eq!(f.severity(), Severity::Problem, "{}", f.message());
        }
        let other = StoreFinding::OtherRole {
            store: role_words("kubernetes", "eso-other"),
            spec: role_words("kubernetes", "eso"),
        };
        assert_eq!(
            other.message(),
            "ESO logs in as role `eso-other` on `kubernetes`; the spec says role `eso` on `kubernetes`"
        );
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify kube: store providers",
            &StoreFinding::codes(),
            &StoreFinding::all_codes(),
        );
    }
}
