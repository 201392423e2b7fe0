//! The part `policy` of `verify`: do ESO's Vault policies grant what it needs on every path? And
//! the Vault Secrets Operator's (VSO), for specs with `[vso]`: the same evaluator and the same
//! server fallbacks, each operator reported on its own ([`PolicyPart`]).
//!
//! ESO's policies are the spec's `policies`, the `token_policies` of its auth role, and `default`
//! unless the role sets `token_no_default_policy`. vault-seed reads them
//! (`sys/policies/acl/<name>`) and evaluates them itself, the parameter constraints OpenBao
//! checks on each request included. Only when it cannot (a policy it may not read, or cannot
//! parse, or a templated rule whose match depends on ESO's identity) does it ask the server,
//! never for the capabilities of a token that is not ESO's:
//!
//! 1. `sys/capabilities` for ESO's own token (`--eso-token-file`);
//! 2. `sys/capabilities` for a short-lived token it creates with exactly ESO's policies and
//!    revokes at once (when the running token may create one);
//! 3. `sys/capabilities-self`, only when the running token carries exactly ESO's policies.
//!
//! Otherwise the part is *unknown*: not ok, and the report says how to make it decidable.

use std::collections::{BTreeMap, BTreeSet};

use secrecy::SecretString;
use serde::Serialize;

use super::findings::{joined, Code, Coded, Finding, Severity};
use crate::acl::{
    self, Capabilities, Capability, PathCheck, Policy, PolicyReport, Requirements, Rule,
};
use crate::base::kv::KvVersion;
use crate::spec::EnvPlan;
use crate::vault::{Vault, VaultError};

/// Whose policies are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Operator {
    /// External Secrets Operator (`[eso]`).
    Eso,
    /// Vault Secrets Operator (`[vso]`).
    Vso,
}

impl Operator {
    /// Its short name, for people (`ESO`).
    pub fn name(self) -> &'static str {
        match self {
            Operator::Eso => "ESO",
            Operator::Vso => "VSO",
        }
    }

    fn section(self) -> &'static str {
        match self {
            Operator::Eso => "[eso]",
            Operator::Vso => "[vso]",
        }
    }
}

/// How the granted capabilities were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// vault-seed read the policies and evaluated them.
    Policies,
    /// The server answered for ESO's token (`sys/capabilities`).
    ServerEsoToken,
    /// The server answered for a short-lived token with ESO's policies (`sys/capabilities`).
    ServerProbeToken,
    /// The server answered for the caller's own token, which carries ESO's policies
    /// (`sys/capabilities-self`).
    ServerSelf,
    /// Nothing could answer for ESO: the part is not ok.
    Unknown,
}

impl Method {
    /// For people, about `who`'s policies.
    pub fn describe(self, who: Operator) -> String {
        let who = who.name();
        match self {
            Method::Policies => format!("read {who}'s policies from Vault and evaluated them"),
            Method::ServerEsoToken => {
                "asked Vault (`sys/capabilities`) for ESO's token from --eso-token-file".into()
            }
            Method::ServerProbeToken => format!(
                "asked Vault (`sys/capabilities`) for a short-lived token with exactly {who}'s policies, revoked at once"
            ),
            Method::ServerSelf => format!(
                "asked Vault (`sys/capabilities-self`): this token carries exactly {who}'s policies"
            ),
            Method::Unknown => "cannot be decided".into(),
        }
    }
}

/// The part `policy`: ESO's grants, and VSO's when a spec has `[vso]`. In JSON, ESO's report
/// keeps its place at the top (as before VSO was known), `ok` covers both, and `vso` holds VSO's
/// report of the same shape (`null` when no spec has `[vso]`).
#[derive(Debug)]
pub struct PolicyPart {
    /// ESO's grants.
    pub eso: GrantsPart,
    /// VSO's grants; `None` when no spec has `[vso]`.
    pub vso: Option<GrantsPart>,
}

impl PolicyPart {
    /// Each operator's report that has something to say: ESO's when a spec gives it access or
    /// names its policies, VSO's when a spec has `[vso]`.
    pub fn operators(&self) -> impl Iterator<Item = &GrantsPart> {
        std::iter::once(&self.eso)
            .filter(|e| e.used)
            .chain(self.vso.as_ref())
    }
}

impl super::Part for PolicyPart {
    fn ok(&self) -> bool {
        self.eso.ok && self.vso.as_ref().is_none_or(|v| v.ok)
    }
}

impl Serialize for PolicyPart {
    /// ESO's report with `ok` covering both operators and `vso` beside it, serialised as it is
    /// written (it lists every path: held whole as a `serde_json::Value`, it took 25 MB at
    /// 10,000 paths). The top-level keys keep the sorted order they had as a `Value`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Doc<'a> {
            errors: &'a [String],
            findings: &'a [Coded],
            help: &'a Option<String>,
            method: &'a Method,
            notes: &'a [String],
            ok: bool,
            operator: &'a Operator,
            policies: &'a [String],
            report: &'a PolicyReport,
            vso: &'a Option<GrantsPart>,
        }
        // Every field named: one added to `GrantsPart` must be placed here too.
        let GrantsPart {
            operator,
            used: _,
            carries_default: _,
            ok: _,
            method,
            policies,
            report,
            errors,
            notes,
            help,
            findings,
        } = &self.eso;
        Doc {
            errors,
            findings,
            help,
            method,
            notes,
            ok: super::Part::ok(self),
            operator,
            policies,
            report,
            vso: &self.vso,
        }
        .serialize(serializer)
    }
}

/// One operator's grants.
#[derive(Debug, Serialize)]
pub struct GrantsPart {
    /// Whose policies: `eso` or `vso`.
    pub operator: Operator,
    /// Whether the specs give this operator anything to do (else the report is empty and ok).
    #[serde(skip)]
    pub used: bool,
    /// Every required capability is granted and nothing went wrong.
    pub ok: bool,
    /// How the answer was found.
    pub method: Method,
    /// The policies that count (the auth role's when Vault answers for it, else the spec's;
    /// `default` is not listed).
    pub policies: Vec<String>,
    /// Whether the token judged carries `default` too.
    #[serde(skip)]
    pub carries_default: bool,
    /// Per path: required, granted, missing; and the HCL to add.
    pub report: PolicyReport,
    /// Problems that are not a gap on a path (a missing policy, an unreadable role, a part that
    /// cannot be decided).
    pub errors: Vec<String>,
    /// Things worth knowing (why the server was asked).
    pub notes: Vec<String>,
    /// What to do when the part cannot be decided; `null` otherwise.
    pub help: Option<String>,
    /// `errors` and `notes`, each with its code.
    pub findings: Vec<Coded>,
}

/// An operator's policies as far as vault-seed can tell.
struct EsoPolicies {
    /// The spec's and the roles', without `default` and `root`.
    names: Vec<String>,
    /// ESO's token carries `default` too.
    default: bool,
    /// ESO's token carries `root`.
    root: bool,
}

impl EsoPolicies {
    /// Every name the token carries, `default` included.
    fn all(&self) -> BTreeSet<String> {
        let mut all: BTreeSet<String> = self.names.iter().cloned().collect();
        if self.default {
            all.insert("default".into());
        }
        if self.root {
            all.insert("root".into());
        }
        all
    }
}

/// Check ESO's access for `plan`, and VSO's when a spec has `[vso]`. `detected` is each mount's
/// KV version as the server reports it.
pub async fn check(
    vault: &Vault,
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
    eso_token: Option<&SecretString>,
) -> Result<PolicyPart, VaultError> {
    let eso = check_for(Operator::Eso, vault, plan, detected, eso_token).await?;
    let vso = if plan.specs.iter().any(|(s, _)| s.vso.is_some()) {
        Some(check_for(Operator::Vso, vault, plan, detected, None).await?)
    } else {
        None
    };
    Ok(PolicyPart { eso, vso })
}

/// What the check of one operator's grants finds besides the gaps on its paths (which its
/// `report` holds): errors fail the part, notes say how the answer was found.
#[derive(Debug, Clone)]
enum GrantFinding {
    /// No spec names a policy or an auth role for the operator, though it has paths to read.
    NothingNamed { who: Operator },
    /// A policy nested too deep to parse (the parser's error, and what to do about it).
    TooDeep { error: String, help: String },
    /// A policy named does not exist.
    PolicyMissing { policy: String },
    /// An auth role named does not exist.
    RoleMissing { who: Operator, role_path: String },
    /// Nothing could answer for the operator (`too_deep`: what to do about a policy too deep,
    /// if one is).
    Undecidable {
        who: Operator,
        templated: bool,
        too_deep: Option<String>,
    },
    /// Its policies include `root`.
    Root { who: Operator },
    /// A policy that cannot be evaluated here.
    CannotEvaluate { policy: String, error: String },
    /// A policy this token may not read.
    PolicyUnreadable { policy: String },
    /// An auth role this token may not read.
    RoleUnreadable { who: Operator, role_path: String },
    /// A policy the spec says the operator's token carries, which its auth role does not give
    /// (`gives`: what the role gives, `default` included when it does).
    NotFromRole {
        who: Operator,
        policy: String,
        role: crate::spec::AuthRole,
        gives: Vec<String>,
    },
    /// A templated rule whose match needs the operator's identity.
    Templated {
        who: Operator,
        policy: String,
        pattern: String,
    },
    /// The server is asked: it answers for capabilities only.
    CapabilitiesOnly,
    /// This token may not use `sys/capabilities`.
    CapabilitiesDenied,
    /// The short-lived token could not be created.
    ProbeRefused { error: String },
    /// `sys/capabilities` refused for the short-lived token.
    ProbeCapabilitiesRefused { error: String },
    /// The short-lived token could not be revoked.
    ProbeNotRevoked { error: String },
    /// This token's policies are not the operator's: `sys/capabilities-self` cannot answer.
    NotTheOperatorsToken { who: Operator, own: Vec<String> },
}

crate::base::codes::codes!(
    GrantFinding,
    GrantFinding {
        NothingNamed => "nothing-named",
        TooDeep => "policy-too-deep",
        PolicyMissing => "policy-missing",
        RoleMissing => "role-missing",
        Undecidable => "undecidable",
        Root => "root-policy",
        CannotEvaluate => "cannot-evaluate",
        PolicyUnreadable => "policy-unreadable",
        RoleUnreadable => "role-unreadable",
        NotFromRole => "not-from-role",
        Templated => "templated-rule",
        CapabilitiesOnly => "server-asked",
        CapabilitiesDenied => "capabilities-denied",
        ProbeRefused => "probe-token-refused",
        ProbeCapabilitiesRefused => "probe-capabilities-refused",
        ProbeNotRevoked => "probe-not-revoked",
        NotTheOperatorsToken => "not-the-operators-token",
    }
);

impl Finding for GrantFinding {
    fn severity(&self) -> Severity {
        use GrantFinding::*;
        match self {
            NothingNamed { .. }
            | TooDeep { .. }
            | PolicyMissing { .. }
            | RoleMissing { .. }
            | NotFromRole { .. }
            | Undecidable { .. } => Severity::Problem,
            _ => Severity::Note,
        }
    }

    fn message(&self) -> String {
        use GrantFinding::*;
        match self {
            NothingNamed { who } => format!(
                "the spec names no {name} policy (`{section} policies`) and no auth role (`{section} auth_role`)",
                name = who.name(),
                section = who.section()
            ),
            TooDeep { error, .. } => error.clone(),
            PolicyMissing { policy } => format!("policy `{policy}` does not exist in Vault"),
            RoleMissing { who, role_path } => {
                format!("{}'s auth role `{role_path}` does not exist", who.name())
            }
            NotFromRole { who, policy, role, gives } => format!(
                "the spec says {}'s token carries `{policy}`; role `{}` on `{}` gives {}",
                who.name(),
                role.name,
                role.mount,
                if gives.is_empty() {
                    "no policy".to_string()
                } else {
                    format!("`{}`", joined(gives))
                }
            ),
            Undecidable { who, .. } => format!(
                "cannot decide whether {}'s policies grant what it needs: vault-seed could neither evaluate them nor ask Vault for a token holding exactly them",
                who.name()
            ),
            Root { who } => format!("{}'s policies include `root`: it may do anything", who.name()),
            CannotEvaluate { policy, error } => {
                format!("cannot evaluate policy `{policy}` here: {error}")
            }
            PolicyUnreadable { policy } => {
                format!("this token may not read `sys/policies/acl/{policy}`")
            }
            RoleUnreadable { who, role_path } => format!(
                "this token may not read `{role_path}`: the spec's `policies` are taken as all of {}'s",
                who.name()
            ),
            Templated { who, policy, pattern } => format!(
                "policy `{policy}` has the templated rule `{pattern}`: what it matches depends on {name}'s identity, which only {name}'s own token carries",
                name = who.name()
            ),
            CapabilitiesOnly => "the server's answer covers capabilities only, not the parameter constraints of the rules (`required_parameters`, wrapping TTLs, `control_group`)".into(),
            CapabilitiesDenied => "this token may not use `sys/capabilities`".into(),
            ProbeRefused { error } => {
                format!("this token may not create a token with those policies ({error})")
            }
            ProbeCapabilitiesRefused { error } => {
                format!("this token may not use `sys/capabilities` ({error})")
            }
            ProbeNotRevoked { error } => format!(
                "could not revoke the short-lived token ({error}); it expires within {}",
                crate::vault::token::PROBE_TTL
            ),
            NotTheOperatorsToken { who, own } => format!(
                "this token carries {}, not {name}'s policies: `sys/capabilities-self` would answer for it, not for {name}",
                if own.is_empty() {
                    "no policy".to_string()
                } else {
                    format!("`{}`", joined(own))
                },
                name = who.name()
            ),
        }
    }
}

impl GrantFinding {
    /// What to do, for the finding that makes the part undecidable.
    fn help(&self) -> Option<String> {
        let GrantFinding::Undecidable {
            who,
            templated,
            too_deep,
        } = self
        else {
            return None;
        };
        Some(match (too_deep, who, templated) {
            (Some(help), _, _) => help.clone(),
            (None, Operator::Eso, true) => {
                "pass --eso-token-file with ESO's own token (a templated rule needs ESO's identity)"
                    .to_string()
            }
            (None, Operator::Eso, false) => "run verify with a token that may read `sys/policies/acl/<name>` of ESO's policies, or that may create a token with them (`auth/token/create`) and use `sys/capabilities`; or pass --eso-token-file with ESO's own token".into(),
            (None, Operator::Vso, true) => "replace the templated rule of VSO's policy by plain paths: vault-seed cannot evaluate it without VSO's identity".into(),
            (None, Operator::Vso, false) => "run verify with a token that may read `sys/policies/acl/<name>` of VSO's policies, or that may create a token with them (`auth/token/create`) and use `sys/capabilities`".into(),
        })
    }
}

/// One operator's part from how its grants were found, the report, and the findings.
fn part(
    who: Operator,
    eso: &EsoPolicies,
    method: Method,
    report: PolicyReport,
    found: &[GrantFinding],
) -> GrantsPart {
    // Not capped: they quote Vault and the spec, not the cluster.
    let of = |severity| {
        found
            .iter()
            .filter(|f| f.severity() == severity)
            .map(Finding::message)
            .collect::<Vec<_>>()
    };
    let errors = of(Severity::Problem);
    let coded = |severity: Severity| {
        found
            .iter()
            .filter(move |f| f.severity() == severity)
            .map(move |f| Coded {
                code: f.code(),
                message: f.message(),
                severity: severity.name(),
            })
    };
    let findings = coded(Severity::Problem)
        .chain(coded(Severity::Note))
        .collect();
    GrantsPart {
        operator: who,
        used: true,
        ok: report.ok && errors.is_empty() && method != Method::Unknown,
        method,
        policies: eso.names.clone(),
        carries_default: eso.default,
        report,
        errors,
        notes: of(Severity::Note),
        help: found.iter().find_map(GrantFinding::help),
        findings,
    }
}

/// Check one operator's access. `own_token` is that operator's own token, when given.
async fn check_for(
    who: Operator,
    vault: &Vault,
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
    own_token: Option<&SecretString>,
) -> Result<GrantsPart, VaultError> {
    // The requirements are made when first needed, which is after the policies are read and
    // parsed where they are evaluated here: a policy's text is held three times while it is
    // decoded (the body, serde's unescaping buffer, the text), and the requirements were held
    // beside it; made after, they take the room it leaves.
    let needs = || -> Requirements {
        match who {
            Operator::Eso => acl::eso_requirements(plan, detected),
            Operator::Vso => acl::vso_requirements(plan, detected).into(),
        }
    };
    let named = plan.specs.iter().any(|(s, _)| {
        let (policies, role) = access_of(who, s);
        !policies.is_empty() || role.is_some()
    });
    let mut made = None;
    if !named && who != Operator::Vso {
        let requirements = made.insert(needs());
        if requirements.is_empty() {
            // No spec gives this operator anything: nothing to ask Vault.
            return Ok(GrantsPart {
                operator: who,
                used: false,
                ok: true,
                method: Method::Policies,
                policies: Vec::new(),
                carries_default: true,
                report: acl::check(&[], std::mem::take(requirements)),
                errors: Vec::new(),
                notes: Vec::new(),
                help: None,
                findings: Vec::new(),
            });
        }
    }
    let mut found = Vec::new();
    let eso = eso_policies(who, vault, plan, &mut found).await?;
    if eso.names.is_empty() && !eso.root && !made.get_or_insert_with(needs).is_empty() {
        found.push(GrantFinding::NothingNamed { who });
    }
    if eso.root {
        found.push(GrantFinding::Root { who });
        let requirements = made.unwrap_or_else(needs);
        let answer = requirements
            .paths()
            .map(|path| (path, vec!["root".to_string()]))
            .collect();
        let report = from_server(&requirements, &answer);
        return Ok(part(who, &eso, Method::Policies, report, &found));
    }
    let (policies, unreadable) = read_policies(vault, &eso, &mut found).await?;
    let requirements = made.unwrap_or_else(needs);
    let templated = if unreadable {
        None
    } else {
        acl::undecidable(&policies, &requirements)
    };
    match templated {
        None if !unreadable => {
            let report = acl::check(&policies, requirements);
            return Ok(part(who, &eso, Method::Policies, report, &found));
        }
        Some((policy, pattern)) => found.push(GrantFinding::Templated {
            who,
            policy: policy.into(),
            pattern: pattern.into(),
        }),
        None => {}
    }
    found.push(GrantFinding::CapabilitiesOnly);
    let templated = templated.is_some();
    ask_server(who, vault, &eso, &requirements, own_token, templated, found).await
}

/// Every policy read at once (over a network, one round trip for them all) and parsed, judged in
/// name order; and whether one could not be read or parsed here.
async fn read_policies(
    vault: &Vault,
    eso: &EsoPolicies,
    found: &mut Vec<GrantFinding>,
) -> Result<(Vec<Policy>, bool), VaultError> {
    let mut policies: Vec<Policy> = Vec::new();
    let mut unreadable = false;
    let names = eso.all();
    let texts = futures::future::join_all(names.iter().map(|n| vault.read_policy(n))).await;
    for (name, text) in names.iter().zip(texts) {
        let policy = name.clone();
        match text {
            Ok(Some(text)) => match acl::parse(name, &text) {
                Ok(p) => policies.push(p),
                // Nested to break parsers: a problem of its own, not only a reason to ask the
                // server instead (which still happens).
                Err(e @ acl::PolicyError::TooDeep { .. }) => {
                    found.push(GrantFinding::TooDeep {
                        error: e.to_string(),
                        help: e.help().unwrap_or_default(),
                    });
                    unreadable = true;
                }
                Err(e) => {
                    let error = e.to_string();
                    found.push(GrantFinding::CannotEvaluate { policy, error });
                    unreadable = true;
                }
            },
            Ok(None) if name == "default" => {}
            Ok(None) => found.push(GrantFinding::PolicyMissing { policy }),
            Err(VaultError::Denied { .. }) => {
                found.push(GrantFinding::PolicyUnreadable { policy });
                unreadable = true;
            }
            Err(e) => return Err(e),
        }
    }
    Ok((policies, unreadable))
}

/// Ask the server, for the operator's token or one with exactly its policies, else for this
/// token when it carries exactly them; else the part cannot be decided.
async fn ask_server(
    who: Operator,
    vault: &Vault,
    eso: &EsoPolicies,
    requirements: &Requirements,
    own_token: Option<&SecretString>,
    templated: bool,
    mut found: Vec<GrantFinding>,
) -> Result<GrantsPart, VaultError> {
    let paths: Vec<String> = requirements.paths().collect();
    let answered = |method, answer, found: &[GrantFinding]| {
        part(who, eso, method, from_server(requirements, &answer), found)
    };
    if let Some(t) = own_token {
        match vault.capabilities_of(t, &paths).await {
            Ok(answer) => return Ok(answered(Method::ServerEsoToken, answer, &found)),
            Err(VaultError::Denied { .. }) => found.push(GrantFinding::CapabilitiesDenied),
            Err(e) => return Err(e),
        }
    }
    if !templated && !eso.names.is_empty() {
        match probe(vault, eso, &paths, &mut found).await {
            Ok(answer) => return Ok(answered(Method::ServerProbeToken, answer, &found)),
            Err(why) => found.push(why),
        }
    }
    let own = vault.lookup_self().await?;
    let own_policies: BTreeSet<String> = own.policies.iter().cloned().collect();
    if own_policies == eso.all() {
        let answer = vault.capabilities_self(&paths).await?;
        return Ok(answered(Method::ServerSelf, answer, &found));
    }
    let own = own_policies.into_iter().collect();
    found.push(GrantFinding::NotTheOperatorsToken { who, own });
    let too_deep = found.iter().rev().find_map(|f| match f {
        GrantFinding::TooDeep { help, .. } => Some(help.clone()),
        _ => None,
    });
    found.push(GrantFinding::Undecidable {
        who,
        templated,
        too_deep,
    });
    let report = PolicyReport::from_checks(false, Vec::new(), Vec::new(), Vec::new());
    Ok(part(who, eso, Method::Unknown, report, &found))
}

/// The policies and auth role a spec names for `who`.
fn access_of(
    who: Operator,
    spec: &crate::spec::Spec,
) -> (&[String], Option<&crate::spec::AuthRole>) {
    match who {
        Operator::Eso => (&spec.eso.policies, spec.eso.auth_role.as_ref()),
        Operator::Vso => match &spec.vso {
            Some(v) => (&v.policies, v.auth_role.as_ref()),
            None => (&[], None),
        },
    }
}

/// An operator's policies: the spec's, and those of each auth role; `default` unless every role
/// readable sets `token_no_default_policy`.
async fn eso_policies(
    who: Operator,
    vault: &Vault,
    plan: &EnvPlan<'_>,
    found: &mut Vec<GrantFinding>,
) -> Result<EsoPolicies, VaultError> {
    // Each name held once as it comes (16,667 specs naming the same policy made 33,334 copies
    // of its name before they were sorted and deduplicated).
    let mut names: BTreeSet<String> = BTreeSet::new();
    let add = |names: &mut BTreeSet<String>, list: &[String]| {
        for n in list {
            if !names.contains(n) {
                names.insert(n.clone());
            }
        }
    };
    let mut roles = Vec::new();
    // Every auth role the specs name read at once, each once however many specs name it (a
    // platform's specs all name ESO's one role: read per spec, 16,667 specs sent 16,667 reads at
    // once, a connection each); judged once, for the first spec that names it, in spec order.
    let named: BTreeSet<(&str, &str)> = plan
        .specs
        .iter()
        .filter_map(|(spec, _)| access_of(who, spec).1)
        .map(|role| (role.mount.as_str(), role.name.as_str()))
        .collect();
    let mut answers: BTreeMap<(&str, &str), Result<Option<_>, VaultError>> =
        futures::future::join_all(named.into_iter().map(|(mount, role)| async move {
            ((mount, role), vault.role_tokens(mount, role).await)
        }))
        .await
        .into_iter()
        .collect();
    let mut judged: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut said = BTreeSet::new();
    for (spec, _) in plan.specs.iter() {
        let (policies, role) = access_of(who, spec);
        let Some(role) = role else {
            add(&mut names, policies);
            continue;
        };
        let key = (role.mount.as_str(), role.name.as_str());
        // The role Vault answers for is what the operator's token carries: the spec's
        // `policies` are checked against it, not added to it.
        if let Some(Ok(Some(r))) = answers.get(&key) {
            let new = not_from_role(who, policies, role, r);
            found.extend(new.into_iter().filter(|f| said.insert(f.message())));
        } else {
            add(&mut names, policies);
        }
        if !judged.insert(key) {
            continue;
        }
        let role_path = format!("auth/{}/role/{}", role.mount, role.name);
        match answers.get(&key) {
            Some(Ok(Some(r))) => {
                add(&mut names, &r.policies);
                roles.push(r.no_default_policy);
            }
            Some(Ok(None)) => found.push(GrantFinding::RoleMissing { who, role_path }),
            Some(Err(VaultError::Denied { .. })) => {
                found.push(GrantFinding::RoleUnreadable { who, role_path })
            }
            Some(Err(_)) | None => {
                if let Some(Err(e)) = answers.remove(&key) {
                    return Err(e);
                }
            }
        }
    }
    Ok(EsoPolicies::of(names, &roles))
}

impl EsoPolicies {
    /// From the names found and each readable role's `token_no_default_policy`: `default`
    /// unless every role sets it.
    fn of(mut names: BTreeSet<String>, roles: &[bool]) -> EsoPolicies {
        names.remove("");
        let default = names.contains("default")
            || roles.is_empty()
            || roles.iter().any(|no_default| !no_default);
        let root = names.contains("root");
        let names: Vec<String> = names
            .into_iter()
            .filter(|n| n != "default" && n != "root")
            .collect();
        EsoPolicies {
            names,
            default,
            root,
        }
    }
}

/// The spec's policies that `role` does not give (`default` it gives unless
/// `token_no_default_policy`), each said once.
fn not_from_role(
    who: Operator,
    policies: &[String],
    role: &crate::spec::AuthRole,
    r: &crate::vault::RoleTokens,
) -> Vec<GrantFinding> {
    let mut gives: Vec<String> = r.policies.clone();
    if !r.no_default_policy && !gives.iter().any(|p| p == "default") {
        gives.push("default".into());
    }
    gives.sort();
    let mut seen = BTreeSet::new();
    policies
        .iter()
        .filter(|p| !p.is_empty() && !gives.contains(p) && seen.insert(p.as_str()))
        .map(|p| GrantFinding::NotFromRole {
            who,
            policy: p.clone(),
            role: role.clone(),
            gives: gives.clone(),
        })
        .collect()
}

/// Ask `sys/capabilities` for a short-lived token with exactly ESO's policies, revoked at once;
/// `Err` says why it could not.
async fn probe(
    vault: &Vault,
    eso: &EsoPolicies,
    paths: &[String],
    found: &mut Vec<GrantFinding>,
) -> Result<BTreeMap<String, Vec<String>>, GrantFinding> {
    let probe = vault
        .create_probe_token(&eso.names, !eso.default)
        .await
        .map_err(|e| GrantFinding::ProbeRefused {
            error: e.to_string(),
        })?;
    let answer = vault.capabilities_of(&probe.token, paths).await;
    if let Err(e) = vault.revoke_accessor(&probe.accessor).await {
        found.push(GrantFinding::ProbeNotRevoked {
            error: e.to_string(),
        });
    }
    drop(probe);
    answer.map_err(|e| GrantFinding::ProbeCapabilitiesRefused {
        error: e.to_string(),
    })
}

/// A report from the server's answers: granted as Vault says; the fix is the requirement's
/// folder rule with the missing capabilities.
fn from_server(
    requirements: &Requirements,
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
                add.entry(r.folder_rule.to_string())
                    .or_default()
                    .extend(r.capabilities.iter().copied());
            }
            PathCheck {
                path: r.path,
                uses: r.uses,
                required: r.capabilities,
                granted,
                fix: (!missing.is_empty()).then(|| r.folder_rule.to_string()),
                missing,
                refused: Vec::new(),
                decided_by: None,
            }
        })
        .collect();
    let ok = paths.iter().all(|p| p.missing.is_empty());
    let add = add
        .into_iter()
        .map(|(pattern, capabilities)| Rule::new(pattern, capabilities))
        .collect();
    PolicyReport::from_checks(ok, paths, add, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_report(ok: bool) -> PolicyReport {
        PolicyReport::from_checks(ok, Vec::new(), Vec::new(), Vec::new())
    }

    #[test]
    fn errors_fail_the_part_notes_do_not_and_only_the_undecidable_finding_gives_help() {
        let eso = EsoPolicies {
            names: vec!["eso".into()],
            default: true,
            root: false,
        };
        let notes = [
            GrantFinding::CapabilitiesOnly,
            GrantFinding::PolicyUnreadable {
                policy: "eso".into(),
            },
        ];
        let p = part(
            Operator::Eso,
            &eso,
            Method::ServerSelf,
            empty_report(true),
            &notes,
        );
        assert!(p.ok && p.errors.is_empty() && p.help.is_none());
        assert_eq!(p.notes[1], "this token may not read `sys/policies/acl/eso`");

        let mut found = notes.to_vec();
        found.push(GrantFinding::PolicyMissing {
            policy: "gone".into(),
        });
        let p = part(
            Operator::Eso,
            &eso,
            Method::Policies,
            empty_report(true),
            &found,
        );
        assert!(!p.ok && p.help.is_none());
        assert_eq!(p.errors, ["policy `gone` does not exist in Vault"]);

        found.push(GrantFinding::Undecidable {
            who: Operator::Vso,
            templated: true,
            too_deep: None,
        });
        let p = part(
            Operator::Vso,
            &eso,
            Method::Unknown,
            empty_report(false),
            &found,
        );
        assert!(!p.ok);
        assert_eq!(p.errors.len(), 2);
        assert!(p.errors[1].starts_with("cannot decide whether VSO's policies grant"));
        assert!(p
            .help
            .unwrap()
            .starts_with("replace the templated rule of VSO's policy"));
        let deep = GrantFinding::Undecidable {
            who: Operator::Eso,
            templated: true,
            too_deep: Some("write it flat".into()),
        };
        assert_eq!(deep.help().as_deref(), Some("write it flat"));
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify policy",
            &GrantFinding::codes(),
            &GrantFinding::all_codes(),
        );
    }
}
