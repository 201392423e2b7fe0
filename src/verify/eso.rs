//! The ESO check of `verify`'s cluster part: are the spec's ExternalSecrets Ready, synced after seeding,
//! with every key in their target Secret, reading only paths the spec knows? When one is not
//! Ready, say why from what vault-seed sees itself and from its Warning events, since ESO's
//! condition message is generic ("could not get secret data from provider").

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use time::OffsetDateTime;

use super::facts::{Facts, PathFacts};
use super::findings::{any_problem, colon, joined, rfc3339, Finding, Lines, Severity};
use super::store::{self, StoreFinding, StoreUser};
use crate::kube::{
    EsoCluster, ExternalSecretInfo, KubeError, ReadyCondition, RemoteRef, StoreKind,
};
use crate::seed::Status;
use crate::spec::{Provided, Target};

/// One ExternalSecret's check.
#[derive(Debug, Clone, Serialize)]
pub struct EsCheck {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Whether everything about it is right.
    pub ok: bool,
    /// The API version that answered (`external-secrets.io/v1`), when found.
    pub api_version: Option<String>,
    /// The Ready condition's status.
    pub ready: Option<bool>,
    /// Its reason (`SecretSynced`, `SecretSyncedError`).
    pub reason: Option<String>,
    /// Its message.
    pub message: Option<String>,
    /// Last successful sync.
    #[serde(with = "time::serde::rfc3339::option")]
    pub refresh_time: Option<OffsetDateTime>,
    /// The target Secret.
    pub target_secret: Option<String>,
    /// What is wrong, one sentence each, most important first.
    pub problems: Vec<String>,
    /// Why it is not Ready, from vault-seed's view and from ESO's Warning events.
    pub explanations: Vec<String>,
}

/// A PushSecret's or a store's check.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectCheck {
    /// `PushSecret`, `SecretStore` or `ClusterSecretStore`.
    pub kind: String,
    /// Namespace (none for a ClusterSecretStore).
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Ready and with a good reason.
    pub ok: bool,
    /// The Ready condition's reason.
    pub reason: Option<String>,
    /// What is wrong.
    pub problems: Vec<String>,
    /// Worth knowing (how a store logs in, when that is judged elsewhere).
    pub notes: Vec<String>,
    /// The findings `problems` is made from.
    #[serde(skip)]
    pub(crate) findings: Vec<ObjectFinding>,
}

/// A path another application provides (a spec's `provided_by`), and, while it is absent or
/// invalid, what its provider's PushSecret says.
#[derive(Debug, Clone, Serialize)]
pub struct ProvidedCheck {
    /// The full path (`secret/ask/postgresql/auh1-dev/core-service-db-password`).
    pub path: String,
    /// The provider, in words.
    pub provided_by: String,
    /// Present and valid in Vault.
    pub ok: bool,
    /// The provider's PushSecret (`namespace/name`), when the spec declares it.
    pub push_secret: Option<String>,
    /// Its Ready condition's status, when it was looked at and has one.
    pub ready: Option<bool>,
    /// Its Ready condition's reason (`Errored`).
    pub reason: Option<String>,
    /// Its Ready condition's message.
    pub message: Option<String>,
    /// Its latest Warning event, `REASON: message` (a 403 from Vault: the provider's policy).
    pub event: Option<String>,
    /// The cause, in one sentence per finding.
    pub explanations: Vec<String>,
}

/// The ESO check's result (in the JSON of the part `kube`).
#[derive(Debug, Clone, Serialize)]
pub struct EsoReport {
    /// ExternalSecrets.
    pub external_secrets: Vec<EsCheck>,
    /// PushSecrets and the stores the ExternalSecrets use.
    pub objects: Vec<ObjectCheck>,
    /// The paths other applications provide, and why each absent one is.
    pub provided: Vec<ProvidedCheck>,
}

impl EsoReport {
    /// Every ExternalSecret, PushSecret and store is right.
    pub fn ok(&self) -> bool {
        self.external_secrets.iter().all(|e| e.ok) && self.objects.iter().all(|o| o.ok)
    }

    /// ExternalSecrets done, of all, for progress while waiting.
    pub fn progress(&self) -> String {
        format!(
            "{}/{} ExternalSecret(s) done",
            self.external_secrets.iter().filter(|e| e.ok).count(),
            self.external_secrets.len()
        )
    }
}

/// The ExternalSecrets and PushSecrets to check, per namespace.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// (namespace, name) of each ExternalSecret.
    pub external_secrets: Vec<(String, String)>,
    /// (namespace, name) of each PushSecret.
    pub push_secrets: Vec<(String, String)>,
    /// (namespace, name) of each VSO VaultStaticSecret.
    pub static_secrets: Vec<(String, String)>,
    /// Do not read target Secrets (`--skip-target-secrets`): their keys are not checked.
    pub skip_target_secrets: bool,
}

/// Annotate each wanted ExternalSecret with `force-sync=<unix time>`; returns what was done.
pub async fn force_sync(cluster: &EsoCluster, wanted: &Wanted) -> Vec<String> {
    let mut done = Vec::new();
    for (ns, name) in &wanted.external_secrets {
        let version = match cluster.external_secret(ns, name).await {
            Ok(Some(es)) => es.api_version,
            _ => continue,
        };
        match cluster.force_sync(ns, name, &version).await {
            Ok(_) => done.push(format!(
                "annotated ExternalSecret `{ns}/{name}` with force-sync"
            )),
            Err(e) => done.push(format!(
                "could not annotate ExternalSecret `{ns}/{name}`: {e}"
            )),
        }
    }
    done
}

/// What the check of one ExternalSecret finds.
#[derive(Debug, Clone)]
pub(crate) enum EsFinding {
    /// It does not exist.
    Missing { namespace: String, name: String },
    /// A remoteRef reads a path the spec does not have.
    NotSpecPath { key: String, secret_key: String },
    /// A remoteRef's property is not a field of its path.
    NotSpecField { key: String, property: String },
    /// A field it reads is not valid in Vault.
    FieldNot {
        path: String,
        field: String,
        status: Status,
    },
    /// A provided path it reads is not right yet: the provided check's sentence, as shown.
    Provided { line: String },
    /// ESO's policy lacks capabilities on a path it reads.
    PolicyMissing {
        caps: Vec<String>,
        data_path: String,
    },
    /// It also uses `dataFrom`.
    DataFrom,
    /// Ready, but synced before the secret was created in Vault.
    SyncedBeforeSeeding {
        refreshed: OffsetDateTime,
        created: OffsetDateTime,
    },
    /// Ready without a `refreshTime`.
    NeverSynced,
    /// Not Ready.
    NotReady {
        reason: Option<String>,
        message: Option<String>,
    },
    /// One of its Warning events.
    Event { reason: String, message: String },
    /// Its target Secret does not exist.
    TargetMissing { namespace: String, secret: String },
    /// Its target Secret lacks keys it maps.
    TargetLacksKeys {
        namespace: String,
        secret: String,
        keys: Vec<String>,
    },
}

impl Finding for EsFinding {
    fn severity(&self) -> Severity {
        use EsFinding::*;
        match self {
            SyncedBeforeSeeding { .. } | NeverSynced | NotReady { .. } => Severity::Leading,
            Missing { .. }
            | NotSpecPath { .. }
            | NotSpecField { .. }
            | TargetMissing { .. }
            | TargetLacksKeys { .. } => Severity::Problem,
            FieldNot { .. } | Provided { .. } | PolicyMissing { .. } | DataFrom | Event { .. } => {
                Severity::Cause
            }
        }
    }

    fn message(&self) -> String {
        use EsFinding::*;
        match self {
            Missing { namespace, name } => format!(
                "ExternalSecret `{namespace}/{name}` does not exist (is the secrets app synced?)"
            ),
            NotSpecPath { key, secret_key } => format!(
                "remoteRef `{key}` (secretKey `{secret_key}`) is not a path of the spec"
            ),
            NotSpecField { key, property } => {
                format!("remoteRef `{key}` property `{property}` is not a field of the spec")
            }
            FieldNot { path, field, status: Status::Pending } => {
                format!("`{path}` field `{field}` is still a placeholder")
            }
            FieldNot { path, field, status } => {
                format!("`{path}` field `{field}` is {status} in Vault")
            }
            Provided { line } => line.clone(),
            PolicyMissing { caps, data_path } => format!(
                "ESO's policy does not grant `{}` on `{data_path}`",
                joined(caps)
            ),
            DataFrom => "it also uses `dataFrom`, which vault-seed does not cross-check".into(),
            SyncedBeforeSeeding { refreshed, created } => format!(
                "Ready, but last synced at {} — before the secret was created in Vault at {}: the Ready is from before seeding (try --force-sync)",
                rfc3339(*refreshed),
                rfc3339(*created)
            ),
            NeverSynced => "Ready, but it has no `refreshTime`: it never synced".into(),
            NotReady { reason, message } => format!(
                "not Ready: {}{}",
                reason.as_deref().unwrap_or("no Ready condition yet"),
                colon(message.as_deref())
            ),
            Event { reason, message } => format!("event {reason}: {message}"),
            TargetMissing { namespace, secret } => {
                format!("target Secret `{namespace}/{secret}` does not exist")
            }
            TargetLacksKeys { namespace, secret, keys } => format!(
                "target Secret `{namespace}/{secret}` lacks key(s) `{}`",
                joined(keys)
            ),
        }
    }
}

/// What the check of a PushSecret, a store, a VaultAuth or a VaultConnection finds.
#[derive(Debug, Clone)]
pub(crate) enum ObjectFinding {
    /// It does not exist (`shown`: the kind and name as the sentence names them).
    Missing { shown: String },
    /// Its Ready condition is not True.
    NotReady {
        reason: Option<String>,
        message: Option<String>,
    },
    /// VSO's default cannot be looked for.
    DefaultUnsearchable { kind: String, error: String },
    /// No VSO default exists.
    NoDefault { kind: String },
    /// VSO says it is not valid (`error` on one line).
    NotValid {
        valid: Option<bool>,
        error: Option<String>,
    },
    /// VSO says it is not Healthy (`message` on one line).
    NotHealthy { message: Option<String> },
    /// What the store check finds about a store's Vault provider ([`super::store`]).
    Store(StoreFinding),
}

impl Finding for ObjectFinding {
    fn severity(&self) -> Severity {
        match self {
            ObjectFinding::Store(f) => f.severity(),
            _ => Severity::Problem,
        }
    }

    fn message(&self) -> String {
        use ObjectFinding::*;
        match self {
            Store(f) => f.message(),
            Missing { shown } => format!("{shown} does not exist"),
            NotReady { reason, message } => format!(
                "not Ready: {}{}",
                reason.as_deref().unwrap_or_default(),
                colon(message.as_deref())
            ),
            DefaultUnsearchable { kind, error } => format!(
                "VSO's default {kind} (`default` in the operator's namespace) cannot be looked for: {error}"
            ),
            NoDefault { kind } => format!(
                "no {kind} named `default` exists: VSO's default, used when nothing names one, is missing"
            ),
            NotValid { valid, error } => format!(
                "not valid (`status.valid` is {}){}",
                valid.map_or("unset".into(), |v| v.to_string()),
                colon(error.as_deref())
            ),
            NotHealthy { message } => format!("not Healthy{}", colon(message.as_deref())),
        }
    }
}

impl ObjectCheck {
    /// The check of an object of `kind`, from its findings.
    pub(crate) fn new(
        kind: &str,
        namespace: Option<String>,
        name: String,
        reason: Option<String>,
        findings: Vec<ObjectFinding>,
    ) -> ObjectCheck {
        let lines = Lines::of(&findings);
        ObjectCheck {
            kind: kind.into(),
            namespace,
            name,
            ok: !any_problem(&findings),
            reason,
            problems: lines.problems,
            notes: lines.notes,
            findings,
        }
    }
}

/// What the check of a provided path finds: each is a cause.
#[derive(Debug, Clone)]
enum ProvidedFinding {
    /// The path is not right in Vault.
    NotRight {
        path: String,
        state: &'static str,
        by: String,
    },
    /// The provider's PushSecret does not exist.
    PushMissing { shown: String },
    /// The provider's PushSecret's Ready condition.
    PushState {
        shown: String,
        condition: ReadyCondition,
    },
    /// The provider's PushSecret cannot be read.
    PushUnreadable { shown: String, error: String },
    /// Its latest Warning event, `REASON: message`.
    PushEvent { shown: String, line: String },
    /// Its events cannot be read.
    EventsUnreadable { shown: String, error: String },
}

impl Finding for ProvidedFinding {
    fn severity(&self) -> Severity {
        Severity::Cause
    }

    fn message(&self) -> String {
        use ProvidedFinding::*;
        match self {
            NotRight { path, state, by } => format!("`{path}` {state}: it is provided by {by}"),
            PushMissing { shown } => {
                format!("PushSecret `{shown}` does not exist (has its app synced?)")
            }
            PushState { shown, condition } => format!(
                "PushSecret `{shown}`: {}{}{}",
                match condition.ready {
                    Some(true) => "Ready",
                    Some(false) => "not Ready",
                    None => "no Ready condition yet",
                },
                condition
                    .reason
                    .as_ref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default(),
                colon(condition.message.as_deref())
            ),
            PushUnreadable { shown, error } => format!("cannot read PushSecret `{shown}`: {error}"),
            PushEvent { shown, line } => {
                format!("PushSecret `{shown}` latest Warning event {line}")
            }
            EventsUnreadable { shown, error } => {
                format!("cannot read the events of PushSecret `{shown}`: {error}")
            }
        }
    }
}

/// What the checks of one run share.
struct Ctx<'a> {
    cluster: &'a EsoCluster,
    targets: &'a [Target],
    facts: &'a Facts<'a>,
    provided: &'a [ProvidedCheck],
    skip_target_secrets: bool,
}

/// Check everything once.
pub async fn check(
    cluster: &EsoCluster,
    wanted: &Wanted,
    targets: &[Target],
    facts: &Facts<'_>,
    inputs: &store::Inputs<'_>,
) -> Result<EsoReport, KubeError> {
    let provided = provided_checks(cluster, targets, facts).await;
    let ctx = Ctx {
        cluster,
        targets,
        facts,
        provided: &provided,
        skip_target_secrets: wanted.skip_target_secrets,
    };
    let mut external_secrets = Vec::new();
    let mut stores: BTreeMap<(Option<String>, StoreKind, String), Vec<StoreUser>> = BTreeMap::new();
    for (ns, name) in &wanted.external_secrets {
        let check = match cluster.external_secret(ns, name).await? {
            None => EsCheck::new(
                ns,
                name,
                None,
                vec![EsFinding::Missing {
                    namespace: ns.clone(),
                    name: name.clone(),
                }],
            ),
            Some(es) => {
                let findings = check_external_secret(&ctx, ns, name, &es).await?;
                if let Some(key) = store_of(&es, ns) {
                    stores.entry(key).or_default().push(StoreUser {
                        namespace: ns.clone(),
                        name: name.clone(),
                        refs: es.data.clone(),
                    });
                }
                EsCheck::new(ns, name, Some(es), findings)
            }
        };
        external_secrets.push(check);
    }
    let mut objects = Vec::new();
    for (ns, name) in &wanted.push_secrets {
        let found = cluster.push_secret(ns, name).await?;
        let findings = match &found {
            None => vec![ObjectFinding::Missing {
                shown: format!("PushSecret `{ns}/{name}`"),
            }],
            Some(ps) => ready_finding(&ps.condition),
        };
        let reason = found.and_then(|ps| ps.condition.reason);
        objects.push(ObjectCheck::new(
            "PushSecret",
            Some(ns.clone()),
            name.clone(),
            reason,
            findings,
        ));
    }
    for ((ns, kind, name), users) in stores {
        objects.push(store_check(cluster, inputs, facts, (ns, kind, name), &users).await?);
    }
    Ok(EsoReport {
        external_secrets,
        objects,
        provided,
    })
}

/// A store's check: it exists, is Ready, and its Vault provider is the one vault-seed seeded
/// and judged ([`store::check`]).
async fn store_check(
    cluster: &EsoCluster,
    inputs: &store::Inputs<'_>,
    facts: &Facts<'_>,
    (ns, kind, name): (Option<String>, StoreKind, String),
    users: &[StoreUser],
) -> Result<ObjectCheck, KubeError> {
    let found = cluster
        .secret_store(ns.as_deref().unwrap_or(""), kind, &name)
        .await?;
    let findings = match &found {
        None => vec![ObjectFinding::Missing {
            shown: format!("{} `{name}`", kind.kind()),
        }],
        Some(s) => {
            let mut f = ready_finding(&s.condition);
            let of_store = store::check(inputs, facts, &s.vault, users).await;
            f.extend(of_store.into_iter().map(ObjectFinding::Store));
            f
        }
    };
    let reason = found.and_then(|s| s.condition.reason);
    Ok(ObjectCheck::new(kind.kind(), ns, name, reason, findings))
}

/// Not Ready, unless its Ready condition is True.
fn ready_finding(c: &ReadyCondition) -> Vec<ObjectFinding> {
    if c.ready == Some(true) {
        return Vec::new();
    }
    vec![ObjectFinding::NotReady {
        reason: c.reason.clone(),
        message: c.message.clone(),
    }]
}

/// The store an ExternalSecret in `ns` reads through: (namespace for a SecretStore, kind, name).
fn store_of(es: &ExternalSecretInfo, ns: &str) -> Option<(Option<String>, StoreKind, String)> {
    let store = es.store_ref.as_ref()?;
    let kind = store.kind.unwrap_or(StoreKind::SecretStore);
    let store_ns = (kind == StoreKind::SecretStore).then(|| ns.to_string());
    Some((store_ns, kind, store.name.clone()))
}

impl EsCheck {
    /// The check of `ns/name`, from what was read of it and its findings.
    fn new(
        ns: &str,
        name: &str,
        es: Option<ExternalSecretInfo>,
        findings: Vec<EsFinding>,
    ) -> EsCheck {
        let ok = !any_problem(&findings);
        let lines = Lines::of(&findings);
        let (api_version, condition, refresh_time, target_secret) = match es {
            Some(es) => (
                Some(es.api_version),
                es.condition,
                es.refresh_time,
                Some(es.target_secret),
            ),
            None => (None, ReadyCondition::default(), None, None),
        };
        EsCheck {
            namespace: ns.to_string(),
            name: name.to_string(),
            ok,
            api_version,
            ready: condition.ready,
            reason: condition.reason,
            message: condition.message,
            refresh_time,
            target_secret,
            problems: lines.problems,
            explanations: lines.explanations,
        }
    }
}

/// One ExternalSecret's findings: its remoteRefs, its Ready condition, its target Secret.
async fn check_external_secret(
    ctx: &Ctx<'_>,
    ns: &str,
    name: &str,
    es: &ExternalSecretInfo,
) -> Result<Vec<EsFinding>, KubeError> {
    let mut found = Vec::new();
    let mut newest_created: Option<OffsetDateTime> = None;
    for r in &es.data {
        newest_created = newest_created.max(remote_ref(ctx, r, &mut found));
    }
    if es.has_data_from {
        found.push(EsFinding::DataFrom);
    }
    found.extend(readiness(es, newest_created));
    if es.condition.ready != Some(true) {
        let events = ctx
            .cluster
            .warning_events(ns, "ExternalSecret", name)
            .await?;
        found.extend(events.into_iter().take(3).map(|ev| EsFinding::Event {
            reason: ev.reason.unwrap_or_default(),
            message: ev.message.unwrap_or_default(),
        }));
    }
    // The target Secret exists and has every key the ExternalSecret maps; unless reading
    // Secrets is not allowed (a Role without `get secrets`).
    if !ctx.skip_target_secrets {
        let keys = ctx.cluster.secret_keys(ns, &es.target_secret).await?;
        found.extend(target_keys(ns, es, keys));
    }
    Ok(found)
}

/// A remoteRef must be a path and field of the spec, present in Vault: its findings, and the
/// time its path was created in Vault.
fn remote_ref(ctx: &Ctx<'_>, r: &RemoteRef, found: &mut Vec<EsFinding>) -> Option<OffsetDateTime> {
    let key = r.key.trim_start_matches('/');
    let Some(t) = ctx
        .targets
        .iter()
        .find(|t| &*t.path == key || t.full_path() == key)
    else {
        found.push(EsFinding::NotSpecPath {
            key: r.key.clone(),
            secret_key: r.secret_key.clone(),
        });
        return None;
    };
    if let Some(p) = &r.property {
        if !t.fields.iter().any(|f| &f.name == p) {
            found.push(EsFinding::NotSpecField {
                key: r.key.clone(),
                property: p.clone(),
            });
            return None;
        }
    }
    let path = t.full_path();
    let f = ctx.facts.get(&path).unwrap_or_default();
    let fields: Vec<&String> = match &r.property {
        Some(p) => vec![p],
        None => t.fields.iter().map(|f| &f.name).collect(),
    };
    found.extend(
        fields
            .into_iter()
            .filter_map(|field| field_finding(&path, field, &f)),
    );
    // A provided path not yet right: who makes it, and what its PushSecret says.
    if let Some(pc) = ctx.provided.iter().find(|p| !p.ok && p.path == path) {
        found.extend(
            pc.explanations
                .iter()
                .map(|line| EsFinding::Provided { line: line.clone() }),
        );
    }
    if !f.policy_missing.is_empty() {
        found.push(EsFinding::PolicyMissing {
            caps: f
                .policy_missing
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            data_path: f.data_path.clone(),
        });
    }
    f.created
}

/// A field read that is not valid in Vault.
fn field_finding(path: &str, field: &str, f: &PathFacts) -> Option<EsFinding> {
    match f.fields.get(field) {
        Some(Status::Valid) | None => None,
        Some(status) => Some(EsFinding::FieldNot {
            path: path.to_string(),
            field: field.to_string(),
            status: *status,
        }),
    }
}

/// Ready, and synced after the newest path it reads was created in Vault.
fn readiness(es: &ExternalSecretInfo, newest_created: Option<OffsetDateTime>) -> Option<EsFinding> {
    match es.condition.ready {
        Some(true) => match (es.refresh_time, newest_created) {
            (Some(refreshed), Some(created)) if refreshed < created => {
                Some(EsFinding::SyncedBeforeSeeding { refreshed, created })
            }
            (None, _) => Some(EsFinding::NeverSynced),
            _ => None,
        },
        _ => Some(EsFinding::NotReady {
            reason: es.condition.reason.clone(),
            message: es.condition.message.clone(),
        }),
    }
}

/// The target Secret exists with every key the ExternalSecret maps.
fn target_keys(ns: &str, es: &ExternalSecretInfo, keys: Option<Vec<String>>) -> Option<EsFinding> {
    let Some(keys) = keys else {
        return Some(EsFinding::TargetMissing {
            namespace: ns.to_string(),
            secret: es.target_secret.clone(),
        });
    };
    let missing: Vec<String> = es
        .data
        .iter()
        .map(|r| r.secret_key.clone())
        .filter(|k| !keys.contains(k))
        .collect();
    (!missing.is_empty()).then(|| EsFinding::TargetLacksKeys {
        namespace: ns.to_string(),
        secret: es.target_secret.clone(),
        keys: missing,
    })
}

/// Each provided path, judged from what Vault holds; for one absent or invalid, its provider
/// named and, when the spec declares the provider's PushSecret, that PushSecret's Ready condition
/// and latest Warning event. A failed push sets Ready=False, reason `Errored`, message
/// `set secret failed: could not write remote ref ...: <the store's error>` and records the same
/// as a Warning event (external-secrets `pkg/controllers/pushsecret/pushsecret_controller.go`,
/// `Reconcile`, `errFailedSetSecret`): there Vault's 403 shows when the provider's own policy lacks
/// a grant. A PushSecret that cannot be read is said, never fatal: it is an explanation.
async fn provided_checks(
    cluster: &EsoCluster,
    targets: &[Target],
    facts: &Facts<'_>,
) -> Vec<ProvidedCheck> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for t in targets {
        let Some(p) = &t.provided else { continue };
        let path = t.full_path();
        if seen.insert(path.clone()) {
            let f = facts.get(&path).unwrap_or_default();
            out.push(provided_check(cluster, path, p, &f).await);
        }
    }
    out
}

/// One provided path's check.
async fn provided_check(
    cluster: &EsoCluster,
    path: String,
    p: &Provided,
    f: &PathFacts,
) -> ProvidedCheck {
    let wrong = f
        .fields
        .values()
        .find(|s| !matches!(s, Status::Valid | Status::Pending));
    let mut check = ProvidedCheck {
        path: path.clone(),
        provided_by: p.by.clone(),
        ok: wrong.is_none() && !f.fields.is_empty(),
        push_secret: p.push_secret.as_ref().map(|(n, m)| format!("{n}/{m}")),
        ready: None,
        reason: None,
        message: None,
        event: None,
        explanations: Vec::new(),
    };
    if check.ok {
        return check;
    }
    let state = match wrong {
        Some(Status::Invalid) => "is invalid in Vault",
        Some(Status::Denied) => "cannot be read by vault-seed",
        _ => "is not in Vault yet",
    };
    let mut found = vec![ProvidedFinding::NotRight {
        path,
        state,
        by: p.by.clone(),
    }];
    if let Some((ns, name)) = &p.push_secret {
        push_secret_state(cluster, ns, name, &mut check, &mut found).await;
    }
    check.explanations = Lines::of(&found).explanations;
    check
}

/// The provider's PushSecret: its Ready condition and its latest Warning event.
async fn push_secret_state(
    cluster: &EsoCluster,
    ns: &str,
    name: &str,
    check: &mut ProvidedCheck,
    found: &mut Vec<ProvidedFinding>,
) {
    let shown = format!("{ns}/{name}");
    found.push(match cluster.push_secret(ns, name).await {
        Ok(None) => ProvidedFinding::PushMissing {
            shown: shown.clone(),
        },
        Ok(Some(ps)) => {
            check.ready = ps.condition.ready;
            check.reason = ps.condition.reason.clone();
            check.message = ps.condition.message.clone();
            ProvidedFinding::PushState {
                shown: shown.clone(),
                condition: ps.condition,
            }
        }
        Err(e) => ProvidedFinding::PushUnreadable {
            shown: shown.clone(),
            error: e.to_string(),
        },
    });
    match cluster.warning_events(ns, "PushSecret", name).await {
        Ok(events) => {
            if let Some(ev) = events.into_iter().next() {
                let line = format!(
                    "{}: {}",
                    ev.reason.unwrap_or_default(),
                    ev.message.unwrap_or_default()
                );
                check.event = Some(line.clone());
                found.push(ProvidedFinding::PushEvent { shown, line });
            }
        }
        Err(e) => found.push(ProvidedFinding::EventsUnreadable {
            shown,
            error: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn es(ready: Option<bool>, refresh: Option<i64>) -> ExternalSecretInfo {
        ExternalSecretInfo {
            namespace: "ns".into(),
            name: "app".into(),
            api_version: "external-secrets.io/v1".into(),
            condition: ReadyCondition {
                ready,
                reason: Some("SecretSyncedError".into()),
                message: Some("could not get secret data from provider".into()),
                last_transition_time: None,
            },
            refresh_time: refresh.map(|s| OffsetDateTime::from_unix_timestamp(s).unwrap()),
            synced_resource_version: None,
            target_secret: "app-secret".into(),
            store_ref: None,
            data: ["a", "b", "c"]
                .map(|k| RemoteRef {
                    secret_key: k.into(),
                    key: "ask/app".into(),
                    property: None,
                })
                .to_vec(),
            has_data_from: false,
        }
    }

    #[test]
    fn the_state_leads_the_problems_and_a_ready_before_seeding_is_not_ok() {
        let created = OffsetDateTime::from_unix_timestamp(2_000).ok();
        let stale = es(Some(true), Some(1_000));
        let findings = vec![
            EsFinding::TargetMissing {
                namespace: "ns".into(),
                secret: "app-secret".into(),
            },
            readiness(&stale, created).unwrap(),
        ];
        let check = EsCheck::new("ns", "app", Some(stale), findings);
        assert!(!check.ok);
        assert_eq!(check.problems.len(), 2);
        assert!(check.problems[0].starts_with("Ready, but last synced at 1970-01-01T00:16:40Z"));
        assert_eq!(
            check.problems[1],
            "target Secret `ns/app-secret` does not exist"
        );
        // Synced after seeding: nothing to say; never synced, or not Ready: said.
        assert!(readiness(&es(Some(true), Some(3_000)), created).is_none());
        assert!(matches!(
            readiness(&es(Some(true), None), created),
            Some(EsFinding::NeverSynced)
        ));
        let not_ready = readiness(&es(None, Some(3_000)), created).unwrap();
        assert_eq!(
            not_ready.message(),
            "not Ready: SecretSyncedError: could not get secret data from provider"
        );
    }

    #[test]
    fn a_target_secret_lacking_keys_names_each_missing_key_in_order() {
        let e = es(Some(true), Some(1));
        let keys = Some(vec!["b".to_string(), "A".to_string()]);
        let f = target_keys("ns", &e, keys).unwrap();
        assert_eq!(f.severity(), Severity::Problem);
        assert_eq!(
            f.message(),
            "target Secret `ns/app-secret` lacks key(s) `a`, `c`"
        );
        assert!(target_keys("ns", &e, Some(vec!["c".into(), "b".into(), "a".into()])).is_none());
        // Causes never fail an ExternalSecret on their own.
        let check = EsCheck::new("ns", "app", Some(e), vec![EsFinding::DataFrom]);
        assert!(check.ok && check.problems.is_empty());
        assert_eq!(check.explanations.len(), 1);
    }
}
