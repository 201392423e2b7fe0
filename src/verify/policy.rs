//! The policy part of `verify`: do ESO's Vault policies grant what it needs on every path?
//!
//! vault-seed reads ESO's policies (`sys/policies/acl/<name>`, plus the `token_policies` of its
//! auth role) and evaluates them itself. When it may not read them, or cannot parse one, it asks
//! the server instead: `sys/capabilities` for ESO's own token (`--eso-token-file`), else
//! `sys/capabilities-self` (right only when running as ESO's token), and says which it used.

use std::collections::BTreeMap;

use secrecy::SecretString;
use serde::Serialize;

use crate::policy::{
    self, Capabilities, Capability, PathCheck, Policy, PolicyReport, Requirement, Rule,
};
use crate::spec::EnvPlan;
use crate::vault::{Vault, VaultError};

/// How the granted capabilities were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// vault-seed read the policies and evaluated them.
    Policies,
    /// The server answered for ESO's token (`sys/capabilities`).
    ServerEsoToken,
    /// The server answered for the caller's own token (`sys/capabilities-self`).
    ServerSelf,
}

impl Method {
    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            Method::Policies => "read ESO's policies from Vault and evaluated them",
            Method::ServerEsoToken => "asked Vault (`sys/capabilities`) for ESO's token from --eso-token-file",
            Method::ServerSelf => "asked Vault (`sys/capabilities-self`) for this token: right only when it is ESO's own",
        }
    }
}

/// The policy part's result.
#[derive(Debug, Serialize)]
pub struct PolicyPart {
    /// Every required capability is granted and nothing went wrong.
    pub ok: bool,
    /// How the answer was found.
    pub method: Method,
    /// The policies that count (the spec's and the auth role's).
    pub policies: Vec<String>,
    /// Per path: required, granted, missing; and the HCL to add.
    pub report: PolicyReport,
    /// Problems that are not a gap on a path (a missing policy, an unreadable role).
    pub errors: Vec<String>,
    /// Things worth knowing (why the server was asked).
    pub notes: Vec<String>,
}

/// Check ESO's access for `plan`. `kv_version` is what the mounts report.
pub async fn check(
    vault: &Vault,
    plan: &EnvPlan<'_>,
    kv_version: policy::KvVersion,
    eso_token: Option<&SecretString>,
) -> Result<PolicyPart, VaultError> {
    let requirements = policy::requirements(plan, kv_version);
    let mut errors = Vec::new();
    let mut notes = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (spec, _) in &plan.specs {
        names.extend(spec.eso.policies.iter().cloned());
        if let Some(role) = &spec.eso.auth_role {
            let role_path = format!("auth/{}/role/{}", role.mount, role.name);
            match vault.role_policies(&role.mount, &role.name).await {
                Ok(Some(p)) => names.extend(p),
                Ok(None) => errors.push(format!("ESO's auth role `{role_path}` does not exist")),
                Err(VaultError::Denied { .. }) => notes.push(format!(
                    "this token may not read `{role_path}`: only the spec's `policies` are checked"
                )),
                Err(e) => return Err(e),
            }
        }
    }
    names.retain(|n| n != "default" && n != "root");
    names.sort();
    names.dedup();

    let mut policies: Vec<Policy> = Vec::new();
    let mut ask_server = false;
    for name in &names {
        match vault.read_policy(name).await {
            Ok(Some(text)) => match policy::parse(name, &text) {
                Ok(p) => policies.push(p),
                Err(e) => {
                    notes.push(format!(
                        "cannot evaluate policy `{name}` here ({e}); asking Vault instead"
                    ));
                    ask_server = true;
                }
            },
            Ok(None) => errors.push(format!("policy `{name}` does not exist in Vault")),
            Err(VaultError::Denied { .. }) => {
                notes.push(format!(
                    "this token may not read `sys/policies/acl/{name}`; asking Vault instead"
                ));
                ask_server = true;
            }
            Err(e) => return Err(e),
        }
    }
    if names.is_empty() && !requirements.is_empty() {
        errors.push(
            "the spec names no ESO policy (`[eso] policies`) and no auth role (`[eso] auth_role`)"
                .into(),
        );
    }

    let (method, report) = if ask_server {
        let paths: Vec<String> = requirements.iter().map(|r| r.path.clone()).collect();
        let (method, answer) = match eso_token {
            Some(t) => (
                Method::ServerEsoToken,
                vault.capabilities_of(t, &paths).await,
            ),
            None => (Method::ServerSelf, vault.capabilities_self(&paths).await),
        };
        let answer = answer.map_err(|e| match e {
            VaultError::Denied { .. } => VaultError::Config {
                message: "cannot check ESO's policy: this token may read neither the policies nor `sys/capabilities`".into(),
                help: "run with a token that may read `sys/policies/acl/*`, or pass --eso-token-file with ESO's own token".into(),
            },
            other => other,
        })?;
        (method, from_server(&requirements, &answer))
    } else {
        (Method::Policies, policy::check(&policies, &requirements))
    };
    Ok(PolicyPart {
        ok: report.ok && errors.is_empty(),
        method,
        policies: names,
        report,
        errors,
        notes,
    })
}

/// A report from the server's answers: granted as Vault says; the fix is the requirement's
/// folder rule with the missing capabilities.
fn from_server(
    requirements: &[Requirement],
    answer: &BTreeMap<String, Vec<String>>,
) -> PolicyReport {
    let mut add: BTreeMap<String, Capabilities> = BTreeMap::new();
    let paths: Vec<PathCheck> = requirements
        .iter()
        .map(|r| {
            let names = answer.get(&r.path).cloned().unwrap_or_default();
            let granted: Capabilities = if names.iter().any(|n| n == "root") {
                Capability::ALL
                    .iter()
                    .copied()
                    .filter(|c| *c != Capability::Deny)
                    .collect()
            } else {
                names
                    .iter()
                    .filter_map(|n| Capability::from_name(n))
                    .filter(|c| *c != Capability::Deny)
                    .collect()
            };
            let missing: Capabilities = r.capabilities.difference(&granted).copied().collect();
            if !missing.is_empty() {
                add.entry(r.folder_rule.clone())
                    .or_default()
                    .extend(r.capabilities.iter().copied());
            }
            PathCheck {
                path: r.path.clone(),
                uses: r.uses.clone(),
                required: r.capabilities.clone(),
                granted,
                missing,
                decided_by: None,
            }
        })
        .collect();
    let ok = paths.iter().all(|p| p.missing.is_empty());
    PolicyReport {
        ok,
        paths,
        add: add
            .into_iter()
            .map(|(pattern, capabilities)| Rule {
                pattern,
                capabilities,
            })
            .collect(),
        unfixable: Vec::new(),
    }
}
