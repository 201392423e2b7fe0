//! The Vault Secrets Operator check of `verify`'s cluster part: is each VaultStaticSecret of the
//! spec's `[vso] static_secrets` synced with the current value, reading a path of the spec, with
//! every field in its destination Secret, through a valid VaultAuth and VaultConnection? When
//! one is not synced, say why from what vault-seed sees itself and from VSO's Warning events.
//!
//! VSO's rules come from hashicorp/vault-secrets-operator v1.4.1 (`tests/fixtures/vso/README.md`
//! and `SOURCES.txt` say which file each comes from); [`crate::kube`] reads the objects.

use std::collections::BTreeSet;

use serde::Serialize;
use time::OffsetDateTime;

use super::eso::{ObjectCheck, ObjectFinding};
use super::facts::{Facts, PathFacts};
use super::findings::{any_problem, joined, rfc3339, Finding, Lines, Severity};
use crate::kube::{
    parse_ref, EsoCluster, KubeError, VaultStaticSecretInfo, VsoKind, VsoObjectInfo, VAULT_AUTH,
    VAULT_CONNECTION,
};
use crate::seed::Status;
use crate::spec::Target;

/// The key VSO adds to every destination Secret unless `excludeRaw` (`helpers/secrets.go`
/// `SecretDataKeyRaw`).
const RAW_KEY: &str = "_raw";

/// One VaultStaticSecret's check.
#[derive(Debug, Clone, Serialize)]
pub struct VssCheck {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Whether everything about it is right.
    pub ok: bool,
    /// Synced: `Ready` (else `Healthy`) True and `status.lastGeneration` = `metadata.generation`.
    pub synced: bool,
    /// The `Ready` condition's status (VSO >= 1.3).
    pub ready: Option<bool>,
    /// The `Healthy` condition's status.
    pub healthy: Option<bool>,
    /// The `SecretSynced` condition's status (can stay False after a recovery: VSO #1225).
    pub secret_synced: Option<bool>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.lastGeneration`.
    pub last_generation: Option<i64>,
    /// `spec.mount`, `spec.type`, `spec.path` as `<mount>/<path>`.
    pub path: Option<String>,
    /// `spec.type` (`kv-v2`, `kv-v1`).
    #[serde(rename = "type")]
    pub kv_type: Option<String>,
    /// The destination Secret (`spec.destination.name`).
    pub destination_secret: Option<String>,
    /// The VaultAuth it uses, `namespace/name`; `None` when VSO's default could not be found.
    pub vault_auth: Option<String>,
    /// When VSO last read Vault and found the Secret equal to it (the `Ready`, else `Healthy`,
    /// condition's `lastTransitionTime` while True).
    #[serde(with = "time::serde::rfc3339::option")]
    pub reconciled_at: Option<OffsetDateTime>,
    /// The `SecretSynced` message (the error when a sync failed).
    pub message: Option<String>,
    /// What is wrong, one sentence each, most important first.
    pub problems: Vec<String>,
    /// Why it is not synced, from vault-seed's view and from VSO's Warning events.
    pub explanations: Vec<String>,
    /// Things worth knowing that are not wrong (a stale `SecretSynced`).
    pub notes: Vec<String>,
}

/// The VSO check's result: the VaultStaticSecrets, and the VaultAuths and VaultConnections they
/// use (which join ESO's `objects` in the JSON).
#[derive(Debug, Clone, Serialize)]
pub struct VsoReport {
    /// VaultStaticSecrets.
    pub vault_static_secrets: Vec<VssCheck>,
    /// VaultAuths and VaultConnections.
    pub objects: Vec<ObjectCheck>,
}

impl VsoReport {
    /// Every VaultStaticSecret, VaultAuth and VaultConnection is right.
    pub fn ok(&self) -> bool {
        self.vault_static_secrets.iter().all(|v| v.ok) && self.objects.iter().all(|o| o.ok)
    }
}

/// Annotate each VaultStaticSecret with `vault-seed/force-sync=<unix time>` so VSO reconciles it
/// now; returns what was done.
pub async fn force_sync(cluster: &EsoCluster, wanted: &[(String, String)]) -> Vec<String> {
    let mut done = Vec::new();
    for (ns, name) in wanted {
        match cluster.vault_static_secret(ns, name).await {
            Ok(Some(_)) => {}
            _ => continue,
        }
        match cluster.force_sync_vso(ns, name).await {
            Ok(_) => done.push(format!(
                "annotated VaultStaticSecret `{ns}/{name}` with vault-seed/force-sync (VSO reconciles it now)"
            )),
            Err(e) => done.push(format!(
                "could not annotate VaultStaticSecret `{ns}/{name}`: {e}"
            )),
        }
    }
    done
}

/// What a Warning event's reason means, in vault-seed's words (VSO's `consts/reasons.go` and
/// the `Eventf` calls of `controllers/vaultstaticsecret_controller.go`).
fn meaning(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "VaultClientError" => "reading Vault failed",
        "VaultClientConfigError" => {
            "login to Vault failed (the role, its bound ServiceAccount or audience, the auth mount, or the VaultAuth/VaultConnection)"
        }
        "VaultStaticSecretError" => "the VaultStaticSecret's spec is refused",
        "TransformationError" | "SecretDataBuilderError" => {
            "building the Secret's data failed (a transformation)"
        }
        "SecretSyncError" => "writing the destination Secret failed",
        "Unrecoverable" => "VSO cannot find the VaultAuth, VaultConnection or ServiceAccount",
        _ => return None,
    })
}

/// The condition VSO's own tools judge by: `Ready` (v1.3+), else `Healthy` (v1.0+).
fn latest(v: &VaultStaticSecretInfo) -> Option<&crate::kube::Condition> {
    v.ready.as_ref().or(v.healthy.as_ref())
}

/// A VaultAuth or VaultConnection as referenced: by namespace and name, or VSO's default.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum ObjRef {
    /// VSO's default (`default` in the operator's namespace).
    Default,
    /// `namespace/name`.
    Named(String, String),
}

impl From<Option<(String, String)>> for ObjRef {
    fn from(r: Option<(String, String)>) -> ObjRef {
        match r {
            Some((ns, name)) => ObjRef::Named(ns, name),
            None => ObjRef::Default,
        }
    }
}

impl ObjRef {
    /// `` `ns/name` ``, or what VSO's default is.
    fn shown(&self) -> String {
        match self {
            ObjRef::Named(ns, name) => format!("`{ns}/{name}`"),
            ObjRef::Default => format!("`{}` (VSO's default)", crate::kube::VSO_DEFAULT_NAME),
        }
    }
}

/// What the check of one VaultStaticSecret finds.
#[derive(Debug, Clone)]
enum VssFinding {
    /// It does not exist.
    Missing { namespace: String, name: String },
    /// It reads a path the spec does not have.
    NotSpecPath {
        full: String,
        mount: String,
        path: String,
    },
    /// Its `type` is not its mount's KV version (`reads`: what VSO would read).
    WrongType {
        kv_type: String,
        mount: String,
        kv_v2: bool,
        reads: String,
    },
    /// VSO has not processed its current generation.
    NotReconciled {
        namespace: String,
        generation: i64,
        last: Option<i64>,
    },
    /// Its latest condition (`which`) is not True; `detail`: the `SecretSynced` message.
    NotSynced {
        which: &'static str,
        detail: Option<String>,
    },
    /// No status at all.
    NoStatus,
    /// `SecretSynced` False from an earlier failure, the latest reconcile fine.
    StaleSecretSynced,
    /// HMAC on, but no `status.secretMAC`.
    NoSecretMac,
    /// Synced before the current version was written to Vault.
    ReconciledBeforeWrite {
        at: OffsetDateTime,
        created: OffsetDateTime,
    },
    /// A field it reads is still a placeholder, while synced.
    SyncedPlaceholder { path: String, field: String },
    /// `spec.version` pins another version than the current.
    Pinned { pin: u64, current: u64 },
    /// VSO before 1.0: no conditions.
    NoConditions,
    /// No `spec.destination.name`.
    NoDestination,
    /// The destination Secret does not exist.
    DestinationMissing { namespace: String, secret: String },
    /// The destination Secret has no keys (its keys transformed).
    DestinationEmpty { namespace: String, secret: String },
    /// Its keys are transformed: not checked against the fields.
    KeysTransformed,
    /// The destination Secret lacks keys.
    DestinationLacksKeys {
        namespace: String,
        secret: String,
        keys: Vec<String>,
    },
    /// A field it reads is not valid in Vault.
    FieldNot {
        path: String,
        field: String,
        status: Status,
    },
    /// VSO's policy lacks capabilities on its path.
    PolicyMissing {
        caps: Vec<String>,
        data_path: String,
    },
    /// One of its Warning events (`message` on one line).
    Event { reason: String, message: String },
    /// Its `vaultAuthRef` is refused by VSO.
    AuthRefRefused { error: String },
    /// Its VaultAuth's `vaultConnectionRef` is refused by VSO.
    ConnectionRefRefused { error: String },
    /// Its VaultAuth is not valid (`problem`: the VaultAuth's first).
    AuthNotValid {
        auth: String,
        problem: Option<String>,
    },
    /// Its VaultAuth's VaultConnection is not valid.
    ConnectionNotValid {
        connection: String,
        problem: Option<String>,
    },
}

impl Finding for VssFinding {
    fn severity(&self) -> Severity {
        use VssFinding::*;
        match self {
            ReconciledBeforeWrite { .. } => Severity::Leading,
            Missing { .. }
            | NotSpecPath { .. }
            | WrongType { .. }
            | NotReconciled { .. }
            | NotSynced { .. }
            | NoStatus
            | NoSecretMac
            | Pinned { .. }
            | NoDestination
            | DestinationMissing { .. }
            | DestinationEmpty { .. }
            | DestinationLacksKeys { .. }
            | AuthRefRefused { .. } => Severity::Problem,
            FieldNot { .. }
            | PolicyMissing { .. }
            | Event { .. }
            | ConnectionRefRefused { .. }
            | AuthNotValid { .. }
            | ConnectionNotValid { .. } => Severity::Cause,
            StaleSecretSynced | SyncedPlaceholder { .. } | NoConditions | KeysTransformed => {
                Severity::Note
            }
        }
    }

    fn message(&self) -> String {
        use VssFinding::*;
        match self {
            Missing { namespace, name } => format!(
                "VaultStaticSecret `{namespace}/{name}` does not exist (is the secrets app synced?)"
            ),
            NotSpecPath { full, mount, path } => format!(
                "it reads `{full}` (mount `{mount}`, path `{path}`), which is not a path of the spec"
            ),
            WrongType { kv_type, mount, kv_v2, reads } => format!(
                "its `type` is `{kv_type}` but mount `{mount}` is {}: VSO would read `{reads}`",
                if *kv_v2 { "KV v2" } else { "KV v1" }
            ),
            NotReconciled { namespace, generation, last } => format!(
                "not reconciled: generation {generation} but VSO last processed generation {}; if this lasts, VSO is not processing it (operator down, not watching namespace `{namespace}`, or `destination.create: false` with the destination Secret missing)",
                last.map_or("none".into(), |l| l.to_string())
            ),
            NotSynced { which, detail } => format!(
                "not synced: {which} is not True{}",
                detail.as_ref().map(|m| format!(": {m}")).unwrap_or_default()
            ),
            NoStatus => "not synced: no status yet (VSO has not reconciled it)".into(),
            StaleSecretSynced => "`SecretSynced` is False from an earlier failure, but the latest reconcile is Ready with the current generation: synced (`SecretSynced` is only rewritten when the Secret is; VSO issue #1225)".into(),
            NoSecretMac => {
                "no `status.secretMAC` although HMAC is on: VSO has never written the Secret".into()
            }
            ReconciledBeforeWrite { at, created } => format!(
                "synced, but last reconciled at {} — before the secret's current version was written to Vault at {}: the destination Secret may hold an older value (VSO reads again within its refreshAfter; --force-sync asks now)",
                rfc3339(*at),
                rfc3339(*created)
            ),
            SyncedPlaceholder { path, field } => format!(
                "`{path}` field `{field}` is still a placeholder: the destination Secret holds the marker until it is filled in (`vault-seed set`)"
            ),
            Pinned { pin, current } => format!(
                "it reads version {pin} (`spec.version`), but the secret's current version in Vault is {current}: the destination Secret holds the pinned value"
            ),
            NoConditions => "VSO before 1.0 writes no conditions: freshness cannot be judged".into(),
            NoDestination => "it names no destination Secret (`spec.destination.name`)".into(),
            DestinationMissing { namespace, secret } => {
                format!("destination Secret `{namespace}/{secret}` does not exist")
            }
            DestinationEmpty { namespace, secret } => {
                format!("destination Secret `{namespace}/{secret}` has no keys")
            }
            KeysTransformed => "its transformation renames or filters keys: the destination Secret's keys are not checked against the spec's fields".into(),
            DestinationLacksKeys { namespace, secret, keys } => format!(
                "destination Secret `{namespace}/{secret}` lacks key(s) `{}`",
                joined(keys)
            ),
            FieldNot { path, field, status: Status::Pending } => {
                format!("`{path}` field `{field}` is still a placeholder")
            }
            FieldNot { path, field, status } => {
                format!("`{path}` field `{field}` is {status} in Vault")
            }
            PolicyMissing { caps, data_path } => format!(
                "VSO's policy does not grant `{}` on `{data_path}`",
                joined(caps)
            ),
            Event { reason, message } => format!(
                "event {reason}{}: {message}",
                meaning(reason).map(|m| format!(" ({m})")).unwrap_or_default()
            ),
            AuthRefRefused { error } => format!("its `vaultAuthRef` is refused by VSO: {error}"),
            ConnectionRefRefused { error } => {
                format!("its VaultAuth's `vaultConnectionRef` is refused by VSO: {error}")
            }
            AuthNotValid { auth, problem } => format!(
                "its VaultAuth {auth} is not valid{}",
                problem.as_ref().map(|p| format!(": {p}")).unwrap_or_default()
            ),
            ConnectionNotValid { connection, problem } => format!(
                "its VaultAuth's VaultConnection {connection} is not valid{}",
                problem.as_ref().map(|p| format!(": {p}")).unwrap_or_default()
            ),
        }
    }
}

/// A VaultStaticSecret checked, before its VaultAuth's findings join it.
struct Checked {
    /// The report's row, its sentence lists still empty.
    check: VssCheck,
    /// What was found.
    findings: Vec<VssFinding>,
    /// The VaultAuth it names, when VSO takes the reference.
    auth: Option<ObjRef>,
}

impl Checked {
    /// The row with its findings in it.
    fn finish(mut self) -> VssCheck {
        let lines = Lines::of(&self.findings);
        self.check.ok = !any_problem(&self.findings);
        self.check.problems = lines.problems;
        self.check.explanations = lines.explanations;
        self.check.notes = lines.notes;
        self.check
    }
}

/// What the checks of one run share.
struct Ctx<'a> {
    cluster: &'a EsoCluster,
    skip_secrets: bool,
    targets: &'a [Target],
    facts: &'a Facts<'a>,
}

/// Check everything once. `wanted` holds `(namespace, name)` of each VaultStaticSecret;
/// `skip_secrets` leaves the destination Secrets unread (`--skip-target-secrets`).
pub async fn check(
    cluster: &EsoCluster,
    wanted: &[(String, String)],
    skip_secrets: bool,
    targets: &[Target],
    facts: &Facts<'_>,
) -> Result<VsoReport, KubeError> {
    let ctx = Ctx {
        cluster,
        skip_secrets,
        targets,
        facts,
    };
    let mut checked = Vec::new();
    for (ns, name) in wanted {
        checked.push(match cluster.vault_static_secret(ns, name).await? {
            None => missing(ns, name),
            Some(v) => check_vss(&ctx, ns, name, &v).await?,
        });
    }
    // The VaultAuths, then the VaultConnections they name; each VaultStaticSecret learns what
    // is wrong with its own.
    let refs: BTreeSet<ObjRef> = checked.iter().filter_map(|c| c.auth.clone()).collect();
    let auths = check_auths(cluster, &refs).await?;
    let mut out = Vec::new();
    for mut c in checked {
        if let Some(r) = &c.auth {
            if let Some((_, found)) = auths.resolved.iter().find(|(x, _)| x == r) {
                c.check.vault_auth = Some(found.clone());
            }
            if !c.check.synced {
                let why = auths.why.iter().filter(|(x, _)| x == r);
                c.findings.extend(why.map(|(_, w)| w.clone()));
            }
        }
        out.push(c.finish());
    }
    Ok(VsoReport {
        vault_static_secrets: out,
        objects: auths.objects,
    })
}

/// A VaultStaticSecret that does not exist.
fn missing(ns: &str, name: &str) -> Checked {
    let check = VssCheck {
        namespace: ns.to_string(),
        name: name.to_string(),
        ok: false,
        synced: false,
        ready: None,
        healthy: None,
        secret_synced: None,
        generation: None,
        last_generation: None,
        path: None,
        kv_type: None,
        destination_secret: None,
        vault_auth: None,
        reconciled_at: None,
        message: None,
        problems: Vec::new(),
        explanations: Vec::new(),
        notes: Vec::new(),
    };
    let findings = vec![VssFinding::Missing {
        namespace: ns.to_string(),
        name: name.to_string(),
    }];
    Checked {
        check,
        findings,
        auth: None,
    }
}

/// One VaultStaticSecret: its path, whether it is synced and fresh, its destination Secret,
/// why it is not synced, and the VaultAuth it names.
async fn check_vss(
    ctx: &Ctx<'_>,
    ns: &str,
    name: &str,
    v: &VaultStaticSecretInfo,
) -> Result<Checked, KubeError> {
    let mut found = Vec::new();
    let full = format!("{}/{}", v.mount.trim_matches('/'), v.path.trim_matches('/'));
    let target = ctx
        .targets
        .iter()
        .find(|t| t.mount() == v.mount.trim_matches('/') && &*t.path == v.path.trim_matches('/'));
    let path_facts = target.and_then(|t| ctx.facts.get(&t.full_path()));
    let read = target.zip(path_facts.as_ref());
    found.extend(path_finding(v, &full, target, path_facts.as_ref()));
    let synced = sync_findings(ns, v, &mut found);
    let reconciled_at = latest(v)
        .filter(|c| c.ready == Some(true))
        .and_then(|c| c.last_transition_time);
    freshness(v, synced, reconciled_at, read, &mut found);
    if !ctx.skip_secrets {
        destination(ctx.cluster, ns, v, target, &mut found).await?;
    }
    // Why it is not synced: what vault-seed sees, then VSO's own Warning events.
    if !synced {
        if let Some((t, f)) = read {
            causes(t, f, &mut found);
        }
        let events = ctx
            .cluster
            .warning_events(ns, "VaultStaticSecret", name)
            .await?;
        found.extend(events.into_iter().take(3).map(|ev| VssFinding::Event {
            reason: ev.reason.unwrap_or_default(),
            message: one_line(&ev.message.unwrap_or_default()),
        }));
    }
    // The VaultAuth it logs in with.
    let auth = match parse_ref(v.vault_auth_ref.as_deref(), ns) {
        Ok(r) => Some(ObjRef::from(r)),
        Err(error) => {
            found.push(VssFinding::AuthRefRefused { error });
            None
        }
    };
    let check = VssCheck {
        namespace: ns.to_string(),
        name: name.to_string(),
        ok: false,
        synced,
        ready: v.ready.as_ref().and_then(|c| c.ready),
        healthy: v.healthy.as_ref().and_then(|c| c.ready),
        secret_synced: v.secret_synced.as_ref().and_then(|c| c.ready),
        generation: v.generation,
        last_generation: v.last_generation,
        path: Some(full),
        kv_type: Some(v.kv_type.clone()),
        destination_secret: Some(v.destination.clone()).filter(|d| !d.is_empty()),
        vault_auth: match &auth {
            Some(ObjRef::Named(a, b)) => Some(format!("{a}/{b}")),
            _ => None,
        },
        reconciled_at,
        message: v.secret_synced.as_ref().and_then(|c| c.message.clone()),
        problems: Vec::new(),
        explanations: Vec::new(),
        notes: Vec::new(),
    };
    Ok(Checked {
        check,
        findings: found,
        auth,
    })
}

/// The path it reads must be one of the spec's, at the mount's KV version.
fn path_finding(
    v: &VaultStaticSecretInfo,
    full: &str,
    target: Option<&Target>,
    facts: Option<&PathFacts>,
) -> Option<VssFinding> {
    let Some(t) = target else {
        return Some(VssFinding::NotSpecPath {
            full: full.to_string(),
            mount: v.mount.clone(),
            path: v.path.clone(),
        });
    };
    // On KV v1 the data path is the full path itself.
    let kv_v2 = facts?.data_path != t.full_path();
    let expected = if kv_v2 { "kv-v2" } else { "kv-v1" };
    (v.kv_type != expected).then(|| VssFinding::WrongType {
        kv_type: v.kv_type.clone(),
        mount: t.mount().to_string(),
        kv_v2,
        reads: if v.kv_type == "kv-v2" {
            format!("{}/data/{}", t.mount(), t.path)
        } else {
            t.full_path()
        },
    })
}

/// Synced: the latest reconcile succeeded and it was of the current spec. Returns whether it is.
fn sync_findings(ns: &str, v: &VaultStaticSecretInfo, found: &mut Vec<VssFinding>) -> bool {
    let generation_current = match (v.generation, v.last_generation) {
        (Some(g), Some(l)) => l >= g,
        (None, _) => true,
        (Some(_), None) => false,
    };
    let latest_ok = match latest(v) {
        Some(c) => c.ready == Some(true),
        // VSO <= 0.10 writes no conditions: lastGeneration only on success, with the MAC.
        None => v.has_secret_mac && v.last_generation.is_some(),
    };
    let synced = latest_ok && generation_current;
    if !generation_current {
        found.push(VssFinding::NotReconciled {
            namespace: ns.to_string(),
            generation: v.generation.unwrap_or_default(),
            last: v.last_generation,
        });
    } else if !latest_ok {
        found.push(match latest(v) {
            Some(_) => VssFinding::NotSynced {
                which: if v.ready.is_some() {
                    "Ready"
                } else {
                    "Healthy"
                },
                detail: v
                    .secret_synced
                    .as_ref()
                    .filter(|c| c.ready == Some(false))
                    .and_then(|c| c.message.as_deref())
                    .map(one_line),
            },
            None => VssFinding::NoStatus,
        });
    }
    if synced && v.secret_synced.as_ref().and_then(|c| c.ready) == Some(false) {
        found.push(VssFinding::StaleSecretSynced);
    }
    if v.hmac && !v.has_secret_mac && latest_ok {
        found.push(VssFinding::NoSecretMac);
    }
    synced
}

/// Fresh: the reconcile that found the Secret equal to Vault ran after the value was written.
/// VSO records no sync time of its own (no `refreshTime`); `Ready`/`Healthy` are rewritten at
/// every reconcile, which compares Vault's data with the Secret. `spec.version` pins a KV v2
/// version: VSO reads that one, never a newer value.
fn freshness(
    v: &VaultStaticSecretInfo,
    synced: bool,
    reconciled_at: Option<OffsetDateTime>,
    read: Option<(&Target, &PathFacts)>,
    found: &mut Vec<VssFinding>,
) {
    let facts = read.map(|(_, f)| f);
    if let (true, Some(at), Some(created)) = (synced, reconciled_at, facts.and_then(|f| f.created))
    {
        if at < created {
            found.push(VssFinding::ReconciledBeforeWrite { at, created });
        }
    }
    if let (true, Some((t, f))) = (synced, read) {
        for field in t.fields.iter() {
            if f.fields.get(&field.name) == Some(&Status::Pending) {
                found.push(VssFinding::SyncedPlaceholder {
                    path: t.full_path(),
                    field: field.name.clone(),
                });
            }
        }
    }
    if let (Some(pin), Some(current)) = (v.pinned_version, facts.and_then(|f| f.version)) {
        if pin != current {
            found.push(VssFinding::Pinned { pin, current });
        }
    }
    if synced && latest(v).is_none() {
        found.push(VssFinding::NoConditions);
    }
}

/// The destination Secret exists with the KV fields as keys (and `_raw`).
async fn destination(
    cluster: &EsoCluster,
    ns: &str,
    v: &VaultStaticSecretInfo,
    target: Option<&Target>,
    found: &mut Vec<VssFinding>,
) -> Result<(), KubeError> {
    if v.destination.is_empty() {
        found.push(VssFinding::NoDestination);
        return Ok(());
    }
    let namespace = ns.to_string();
    let secret = v.destination.clone();
    let Some(keys) = cluster.secret_keys(ns, &v.destination).await? else {
        found.push(VssFinding::DestinationMissing { namespace, secret });
        return Ok(());
    };
    if v.keys_transformed {
        if keys.is_empty() {
            found.push(VssFinding::DestinationEmpty { namespace, secret });
        }
        found.push(VssFinding::KeysTransformed);
        return Ok(());
    }
    let mut expected: Vec<&str> = target
        .map(|t| t.fields.iter().map(|f| f.name.as_str()).collect())
        .unwrap_or_default();
    if !v.exclude_raw {
        expected.push(RAW_KEY);
    }
    let missing: Vec<String> = expected
        .into_iter()
        .filter(|k| !keys.iter().any(|x| x == k))
        .map(String::from)
        .collect();
    if !missing.is_empty() {
        found.push(VssFinding::DestinationLacksKeys {
            namespace,
            secret,
            keys: missing,
        });
    }
    Ok(())
}

/// What vault-seed sees of the path it reads: fields not valid, VSO's policy gaps.
fn causes(t: &Target, f: &PathFacts, found: &mut Vec<VssFinding>) {
    for field in t.fields.iter() {
        match f.fields.get(&field.name) {
            Some(Status::Valid) | None => {}
            Some(status) => found.push(VssFinding::FieldNot {
                path: t.full_path(),
                field: field.name.clone(),
                status: *status,
            }),
        }
    }
    if !f.vso_policy_missing.is_empty() {
        found.push(VssFinding::PolicyMissing {
            caps: f
                .vso_policy_missing
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            data_path: f.data_path.clone(),
        });
    }
}

/// The VaultAuths and VaultConnections checked, and what each VaultAuth's users learn.
struct Auths {
    /// Their checks, VaultAuths first.
    objects: Vec<ObjectCheck>,
    /// Each VaultAuth reference and the `namespace/name` found for it.
    resolved: Vec<(ObjRef, String)>,
    /// Each VaultAuth reference and what is wrong with it, in the order found.
    why: Vec<(ObjRef, VssFinding)>,
}

/// Check each VaultAuth referenced, then the VaultConnections they name.
async fn check_auths(cluster: &EsoCluster, refs: &BTreeSet<ObjRef>) -> Result<Auths, KubeError> {
    let mut auths = Auths {
        objects: Vec::new(),
        resolved: Vec::new(),
        why: Vec::new(),
    };
    let mut connections: Vec<(ObjRef, ObjRef)> = Vec::new(); // (VaultAuth, its VaultConnection)
    for r in refs {
        let (check, found) = check_object(cluster, VAULT_AUTH, r).await?;
        if let Some(a) = &found {
            auths
                .resolved
                .push((r.clone(), format!("{}/{}", a.namespace, a.name)));
            match connection_of(r, a) {
                Ok(c) => connections.push((r.clone(), c)),
                Err(error) => auths
                    .why
                    .push((r.clone(), VssFinding::ConnectionRefRefused { error })),
            }
        }
        if !check.ok {
            let problem = first_problem(&check);
            let auth = r.shown();
            auths
                .why
                .push((r.clone(), VssFinding::AuthNotValid { auth, problem }));
        }
        auths.objects.push(check);
    }
    let distinct: BTreeSet<&ObjRef> = connections.iter().map(|(_, c)| c).collect();
    for c in distinct {
        let (check, _) = check_object(cluster, VAULT_CONNECTION, c).await?;
        if !check.ok {
            for (auth, _) in connections.iter().filter(|(_, x)| x == c) {
                let connection = c.shown();
                let problem = first_problem(&check);
                let why = VssFinding::ConnectionNotValid {
                    connection,
                    problem,
                };
                auths.why.push((auth.clone(), why));
            }
        }
        auths.objects.push(check);
    }
    Ok(auths)
}

/// The VaultConnection a VaultAuth found for `r` uses. The default VaultAuth with no reference
/// uses the default VaultConnection of its own namespace (`common/common.go`
/// `setVaultConnectionRef`).
fn connection_of(r: &ObjRef, a: &VsoObjectInfo) -> Result<ObjRef, String> {
    Ok(
        match parse_ref(a.connection_ref.as_deref(), &a.namespace)? {
            None if *r == ObjRef::Default => {
                ObjRef::Named(a.namespace.clone(), crate::kube::VSO_DEFAULT_NAME.into())
            }
            c => ObjRef::from(c),
        },
    )
}

/// A VaultAuth's or VaultConnection's check, and the object when found. VSO's default is the
/// one named `default` in the operator's namespace, looked for in every namespace since
/// vault-seed does not know which is VSO's.
async fn check_object(
    cluster: &EsoCluster,
    kind: VsoKind,
    r: &ObjRef,
) -> Result<(ObjectCheck, Option<VsoObjectInfo>), KubeError> {
    let check = |namespace, name, reason, findings| {
        ObjectCheck::new(kind.kind, namespace, name, reason, findings)
    };
    let default = || crate::kube::VSO_DEFAULT_NAME.to_string();
    let found = match r {
        ObjRef::Named(ns, name) => cluster.vso_object(kind, ns, name).await?,
        ObjRef::Default => match cluster.vso_defaults(kind).await {
            Ok(mut all) if all.len() <= 1 => all.pop(),
            Ok(all) => {
                let names: Vec<String> = all
                    .iter()
                    .map(|a| format!("`{}/{}`", a.namespace, a.name))
                    .collect();
                let reason = format!(
                    "not checked: several are named `default` ({}), VSO uses the one in its own namespace",
                    names.join(", ")
                );
                return Ok((check(None, default(), Some(reason), Vec::new()), None));
            }
            Err(e @ KubeError::Forbidden { .. }) => {
                let why = ObjectFinding::DefaultUnsearchable {
                    kind: kind.kind.into(),
                    error: e.to_string(),
                };
                return Ok((check(None, default(), None, vec![why]), None));
            }
            Err(e) => return Err(e),
        },
    };
    let Some(o) = found else {
        let (namespace, name, what) = match r {
            ObjRef::Named(ns, n) => (
                Some(ns.clone()),
                n.clone(),
                ObjectFinding::Missing {
                    shown: format!("{} `{ns}/{n}`", kind.kind),
                },
            ),
            ObjRef::Default => (
                None,
                default(),
                ObjectFinding::NoDefault {
                    kind: kind.kind.into(),
                },
            ),
        };
        return Ok((check(namespace, name, None, vec![what]), None));
    };
    let reason = match (&o.login, o.valid) {
        (Some(login), Some(true)) => format!("valid, {login}"),
        (None, Some(true)) => "valid".into(),
        _ => "invalid".into(),
    };
    let findings = validity(&o).into_iter().collect();
    let checked = check(
        Some(o.namespace.clone()),
        o.name.clone(),
        Some(reason),
        findings,
    );
    Ok((checked, Some(o)))
}

/// VSO's verdict on a VaultAuth or VaultConnection: `status.valid`, then `Healthy`.
fn validity(o: &VsoObjectInfo) -> Option<ObjectFinding> {
    if o.valid != Some(true) {
        return Some(ObjectFinding::NotValid {
            valid: o.valid,
            error: o.error.as_deref().map(one_line),
        });
    }
    let healthy = o.healthy.as_ref()?;
    (healthy.ready == Some(false)).then(|| ObjectFinding::NotHealthy {
        message: healthy.message.as_deref().map(one_line),
    })
}

/// The first problem of a check, as found (not yet capped).
fn first_problem(check: &ObjectCheck) -> Option<String> {
    check.findings.first().map(Finding::message)
}

/// Vault's multi-line errors on one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::ReadyCondition;

    fn cond(ready: Option<bool>, message: Option<&str>) -> Option<ReadyCondition> {
        Some(ReadyCondition {
            ready,
            message: message.map(String::from),
            ..ReadyCondition::default()
        })
    }

    fn vss(generation: Option<i64>, last: Option<i64>) -> VaultStaticSecretInfo {
        VaultStaticSecretInfo {
            namespace: "ns".into(),
            name: "app".into(),
            generation,
            last_generation: last,
            ready: cond(Some(true), None),
            healthy: None,
            secret_synced: cond(Some(false), Some("old\n  failure")),
            has_secret_mac: true,
            hmac: true,
            mount: "secret".into(),
            kv_type: "kv-v2".into(),
            path: "app".into(),
            pinned_version: None,
            destination: "app".into(),
            exclude_raw: false,
            keys_transformed: false,
            vault_auth_ref: None,
        }
    }

    #[test]
    fn an_old_generation_is_not_synced_and_a_stale_secret_synced_is_only_a_note() {
        let mut found = Vec::new();
        assert!(!sync_findings("ns", &vss(Some(3), Some(2)), &mut found));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity(), Severity::Problem);
        assert!(found[0]
            .message()
            .starts_with("not reconciled: generation 3 but VSO last processed generation 2;"));

        let mut found = Vec::new();
        assert!(sync_findings("ns", &vss(Some(3), Some(3)), &mut found));
        assert!(matches!(found[..], [VssFinding::StaleSecretSynced]));
        assert!(!any_problem(&found));

        let mut not_ready = vss(Some(3), Some(3));
        not_ready.ready = cond(Some(false), None);
        let mut found = Vec::new();
        assert!(!sync_findings("ns", &not_ready, &mut found));
        assert_eq!(
            found[0].message(),
            "not synced: Ready is not True: old failure"
        );
    }

    #[test]
    fn a_vault_auth_problem_reaches_its_users_uncapped_and_vsos_default_sorts_first() {
        let long = format!("bad {}", "x".repeat(600));
        let auth = VsoObjectInfo {
            kind: "VaultAuth",
            namespace: "ns".into(),
            name: "auth".into(),
            valid: Some(false),
            error: Some(long.clone()),
            healthy: None,
            connection_ref: None,
            login: None,
        };
        let finding = validity(&auth).unwrap();
        let check = ObjectCheck::new("VaultAuth", None, "auth".into(), None, vec![finding]);
        assert!(!check.ok);
        // The object's own line is capped; the sentence its users get is capped once, whole.
        assert!(check.problems[0].ends_with("more characters)"));
        let problem = first_problem(&check).unwrap();
        assert!(problem.ends_with(&long));
        assert!(ObjRef::Default < ObjRef::Named(String::new(), String::new()));
        assert_eq!(
            connection_of(&ObjRef::Default, &auth).unwrap(),
            ObjRef::Named("ns".into(), crate::kube::VSO_DEFAULT_NAME.into())
        );
    }
}
