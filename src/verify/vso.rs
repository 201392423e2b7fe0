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
use super::findings::{
    any_problem, before_in_whole_seconds, joined, rfc3339, shown_namespace, Finding, Severity,
    Verdict,
};
use super::notes::RunNote;
use super::secret_type;
use super::vault_namespace;
use crate::base::kv::KvVersion;
use crate::kube::{
    parse_ref, BadField, Cluster, FieldProblem, KubeError, VaultAuthLogin, VaultStaticSecretInfo,
    VsoKind, VsoObjectInfo, VAULT_AUTH, VAULT_CONNECTION,
};
use crate::seed::Status;
use crate::spec::{AuthRole, EnvPlan, Target, TargetIndex};
use crate::vault::address::same_vault;
use crate::vault::Vault;

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
    /// What is wrong (one sentence each, most important first), why it is not synced (from
    /// vault-seed's view and VSO's Warning events), and what is worth knowing that is not
    /// wrong (a stale `SecretSynced`); `findings` with their codes.
    #[serde(flatten)]
    pub verdict: Verdict,
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

/// What VSO must use for its reads to be the ones vault-seed seeded and judged: the same Vault,
/// the same Vault namespace, and the role whose policies the policy part judged.
#[derive(Debug, Clone, Default)]
pub struct Expected {
    /// The address vault-seed talked to.
    pub vault_addr: String,
    /// The addresses the specs declare for the same Vault seen from the cluster
    /// (`cluster_vault_addr`).
    pub cluster_vault_addrs: Vec<String>,
    /// The Vault namespace in use (`None`: the root).
    pub vault_namespace: Option<String>,
    /// Each VaultStaticSecret `(namespace, name)` and the `[vso] auth_role` of the first spec
    /// naming it.
    pub roles: Vec<((String, String), Option<AuthRole>)>,
}

impl Expected {
    /// From the specs of `plan` and the Vault vault-seed talked to; VaultStaticSecrets are in
    /// the namespace [`super::cluster::wanted`] gives them.
    pub fn of(plan: &EnvPlan<'_>, vault: &Vault, default_namespace: &str) -> Expected {
        let mut e = Expected {
            vault_addr: vault.addr().to_string(),
            vault_namespace: vault_namespace(vault.namespace()),
            ..Expected::default()
        };
        for (spec, env) in &plan.specs {
            for a in &env.cluster_vault_addrs {
                if !e.cluster_vault_addrs.contains(a) {
                    e.cluster_vault_addrs.push(a.clone());
                }
            }
            let Some(v) = &spec.vso else { continue };
            let ns = vso_namespace(v, env, default_namespace);
            for name in &v.static_secrets {
                let key = (ns.clone(), name.clone());
                if !e.roles.iter().any(|(k, _)| *k == key) {
                    e.roles.push((key, v.auth_role.clone()));
                }
            }
        }
        e
    }

    /// The spec's role for the VaultStaticSecret `ns/name`.
    fn role(&self, ns: &str, name: &str) -> Option<&AuthRole> {
        self.roles
            .iter()
            .find(|((n, m), _)| n == ns && m == name)
            .and_then(|(_, r)| r.as_ref())
    }
}

/// Annotate each VaultStaticSecret with `vault-seed/force-sync=<unix time>` so VSO reconciles it
/// now; returns what was done.
pub async fn force_sync(cluster: &Cluster, wanted: &[(String, String)]) -> Vec<RunNote> {
    let mut done = Vec::new();
    for (ns, name) in wanted {
        let object = format!("{ns}/{name}");
        let failed = |unread, e: KubeError| RunNote::ForceSyncFailed {
            kind: "VaultStaticSecret",
            object: object.clone(),
            unread,
            why: e.to_string(),
        };
        match cluster.vault_static_secret(ns, name).await {
            Ok(Some(_)) => {}
            // Its check says it does not exist.
            Ok(None) => continue,
            Err(e) => {
                done.push(failed(true, e));
                continue;
            }
        }
        done.push(match cluster.force_sync_vso(ns, name).await {
            Ok(_) => RunNote::ForceSynced {
                kind: "VaultStaticSecret",
                object: object.clone(),
            },
            Err(e) => failed(false, e),
        });
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
        "StatusUpdateError" => "writing its status failed",
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
    /// What its destination Secret's keys are against those VSO writes.
    Keys(Keys),
    /// Its destination Secret's type, or the one VSO writes, is not the spec's `secret_type`.
    SecretType(super::secret_type::TypeFinding),
    /// Reconciled in the second the current version was written: the whole seconds of
    /// `lastTransitionTime` cannot tell which came first.
    ReconciledSameSecond {
        at: OffsetDateTime,
        created: OffsetDateTime,
    },
    /// Reconciled before the write by its `Ready` time, but VSO failed to write its status at
    /// `failed` (a `StatusUpdateError` event), after the write: the Secret may be fresh.
    StatusNotWritten {
        at: OffsetDateTime,
        created: OffsetDateTime,
        failed: OffsetDateTime,
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
    /// What VSO uses (Vault, namespace, login) is not what vault-seed seeded and judged, or
    /// is not known.
    Identity(Identity),
}

crate::base::codes::codes!(
    VssFinding,
    VssFinding {
        Missing => "missing",
        NotSpecPath => "not-spec-path",
        WrongType => "wrong-kv-type",
        NotReconciled => "not-reconciled",
        NotSynced => "not-synced",
        NoStatus => "no-status",
        StaleSecretSynced => "stale-secret-synced",
        NoSecretMac => "no-secret-mac",
        ReconciledBeforeWrite => "reconciled-before-write",
        SyncedPlaceholder => "synced-placeholder",
        Pinned => "pinned-version",
        NoConditions => "no-conditions",
        ReconciledSameSecond => "reconciled-same-second",
        StatusNotWritten => "status-not-written",
        FieldNot => "field-not-valid",
        PolicyMissing => "policy-missing",
        Event => "warning-event",
        AuthRefRefused => "auth-ref-refused",
        ConnectionRefRefused => "connection-ref-refused",
        AuthNotValid => "auth-not-valid",
        ConnectionNotValid => "connection-not-valid",
    } nested {
        Keys => Keys,
        SecretType => super::secret_type::TypeFinding,
        Identity => Identity,
    }
);

impl Finding for VssFinding {
    fn severity(&self) -> Severity {
        use VssFinding::*;
        match self {
            ReconciledBeforeWrite { .. } => Severity::Leading,
            Keys(k) => k.severity(),
            SecretType(t) => t.severity(),
            Missing { .. }
            | NotSpecPath { .. }
            | WrongType { .. }
            | NotReconciled { .. }
            | NotSynced { .. }
            | NoStatus
            | NoSecretMac
            | Pinned { .. }
            | AuthRefRefused { .. }
            | ConnectionRefRefused { .. }
            | Identity(_) => Severity::Problem,
            FieldNot { .. }
            | PolicyMissing { .. }
            | Event { .. }
            | AuthNotValid { .. }
            | ConnectionNotValid { .. } => Severity::Cause,
            StaleSecretSynced
            | SyncedPlaceholder { .. }
            | NoConditions
            | ReconciledSameSecond { .. }
            | StatusNotWritten { .. } => Severity::Note,
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
            Keys(k) => k.message(),
            SecretType(t) => t.message(),
            ReconciledSameSecond { at, created } => format!(
                "cannot tell from the times alone: last reconciled at {}, in the second the secret's current version was written to Vault ({}); `lastTransitionTime` has whole seconds",
                rfc3339(*at),
                rfc3339(*created)
            ),
            StatusNotWritten { at, created, failed } => format!(
                "cannot tell: `Ready` says it last reconciled at {}, before the secret's current version was written to Vault at {}, but VSO failed to write its status at {} (event StatusUpdateError): a later reconcile may have written the Secret",
                rfc3339(*at),
                rfc3339(*created),
                rfc3339(*failed)
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
            Identity(i) => i.message(),
        }
    }
}

/// What is wrong with what one VaultStaticSecret uses: each makes it not done.
#[derive(Debug, Clone)]
enum Identity {
    /// A field of it, its VaultAuth or its VaultConnection (`object`, as shown) is missing or
    /// malformed: what VSO does with it is not known.
    BadField {
        object: String,
        field: String,
        problem: FieldProblem,
    },
    /// Its VaultAuth or VaultConnection (`object`) was not found or cannot be told apart
    /// (`why`): which Vault and role VSO uses is not known.
    Unresolved { object: String, why: String },
    /// Its VaultConnection's address is no Vault address.
    BadAddress {
        connection: String,
        address: String,
        error: String,
    },
    /// Its VaultConnection points at a Vault other than the one vault-seed talked to (`used`)
    /// and those the spec declares (`declared`, `cluster_vault_addr`).
    OtherVault {
        connection: String,
        address: String,
        used: String,
        declared: Vec<String>,
    },
    /// VSO logs in to, or reads in, a Vault namespace (`theirs`) other than the one in use.
    OtherNamespace {
        whose: String,
        theirs: Option<String>,
        ours: Option<String>,
    },
    /// VSO logs in as another role than the spec's `[vso] auth_role`.
    OtherRole {
        role: String,
        mount: String,
        spec_role: String,
    },
    /// VSO logs in on another auth mount than the spec's `[vso] auth_mount`.
    OtherAuthMount {
        role: String,
        mount: String,
        spec_mount: String,
    },
    /// VSO logs in as a role, and the spec names none: the policies judged are not that role's.
    NoSpecRole { role: String, mount: String },
    /// Its VaultAuth logs in with a method whose role vault-seed does not judge.
    MethodNotJudged { auth: String, method: String },
    /// Its VaultAuth takes what it leaves empty from a VaultAuthGlobal, which is not read.
    GlobalNotRead { auth: String },
    /// Its mount's KV version is not known: its `type` is not checked.
    TypeNotChecked { kv_type: String, mount: String },
}

crate::base::codes::codes!(
    Identity,
    Identity {
        BadField => "bad-field",
        Unresolved => "auth-unresolved",
        BadAddress => "bad-address",
        OtherVault => "other-vault",
        OtherNamespace => "other-namespace",
        OtherRole => "other-role",
        OtherAuthMount => "other-auth-mount",
        NoSpecRole => "no-spec-role",
        MethodNotJudged => "method-not-judged",
        GlobalNotRead => "global-not-read",
        TypeNotChecked => "kv-type-not-checked",
    }
);

impl Finding for Identity {
    fn severity(&self) -> Severity {
        Severity::Problem
    }

    fn message(&self) -> String {
        use Identity::*;
        match self {
            BadField { object, field, problem } => format!(
                "{object}: `{field}` {problem}: what VSO does with it is not checked"
            ),
            Unresolved { object, why } => format!(
                "not checked: which Vault and role VSO uses, since its {object} is not known: {why}"
            ),
            BadAddress { connection, address, error } => format!(
                "its VaultConnection {connection} has `spec.address` `{address}`, which {error}: which Vault VSO reads is not known"
            ),
            OtherVault { connection, address, used, declared } => format!(
                "VSO reads the Vault at `{address}` (VaultConnection {connection}), not the one vault-seed seeded and judged (`{used}`{}); if it is the same Vault as the cluster reaches it, add `cluster_vault_addr = \"{address}\"` to the environment",
                if declared.is_empty() {
                    ", and the spec declares no `cluster_vault_addr`".to_string()
                } else {
                    format!(" or the spec's `cluster_vault_addr` `{}`", joined(declared))
                }
            ),
            OtherNamespace { whose, theirs, ours } => format!(
                "{whose} Vault namespace {}; vault-seed used {}",
                shown_namespace(theirs.as_deref()),
                shown_namespace(ours.as_deref())
            ),
            OtherRole { role, mount, spec_role } => format!(
                "VSO logs in as role `{role}` on `{mount}`; the spec says `{spec_role}` (`[vso] auth_role`), whose policies are the ones judged"
            ),
            OtherAuthMount { role, mount, spec_mount } => format!(
                "VSO logs in as role `{role}` on auth mount `{mount}`; the spec says `{spec_mount}` (`[vso] auth_mount`), whose role's policies are the ones judged"
            ),
            NoSpecRole { role, mount } => format!(
                "VSO logs in as role `{role}` on `{mount}`; the spec names no `[vso] auth_role`, so the policies judged are not that role's"
            ),
            MethodNotJudged { auth, method } => format!(
                "not checked: vault-seed does not judge `{method}` auth (VaultAuth {auth}): VSO's role and its policies are not known"
            ),
            GlobalNotRead { auth } => format!(
                "not checked: VaultAuth {auth} takes what it leaves empty from a VaultAuthGlobal (`spec.vaultAuthGlobalRef`), which vault-seed does not read"
            ),
            TypeNotChecked { kv_type, mount } => format!(
                "not checked: its `type` `{kv_type}`, since mount `{mount}`'s KV version is not known (the spec has no `kv_version` and the server did not say)"
            ),
        }
    }
}

/// What one destination Secret's keys are against those VSO writes
/// ([`crate::kube::Transformation::destination_keys`]); `secret` is `namespace/name`.
#[derive(Debug, Clone)]
enum Keys {
    /// No `spec.destination.name`.
    NoDestination,
    /// The destination Secret does not exist.
    Missing { secret: String },
    /// It lacks keys VSO writes: not done.
    Lacking { secret: String, keys: Vec<String> },
    /// It has no keys, and which keys VSO writes is only partly known: not done.
    Empty { secret: String },
    /// Which keys VSO writes is only partly known (`why`): only its own templates' are checked.
    PartlyKnown { why: String },
    /// The transformation drops these fields and no template names them.
    FieldsDropped { fields: Vec<String> },
    /// It has no `_raw`, which VSO writes unless its global `exclude-raw`, not seen from here.
    NoRaw { secret: String },
}

crate::base::codes::codes!(
    Keys,
    Keys {
        NoDestination => "no-destination",
        Missing => "destination-missing",
        Lacking => "destination-lacks-keys",
        Empty => "destination-empty",
        PartlyKnown => "keys-partly-known",
        FieldsDropped => "fields-dropped",
        NoRaw => "no-raw",
    }
);

impl Finding for Keys {
    fn severity(&self) -> Severity {
        match self {
            Keys::NoDestination
            | Keys::Missing { .. }
            | Keys::Lacking { .. }
            | Keys::Empty { .. } => Severity::Problem,
            Keys::PartlyKnown { .. } | Keys::FieldsDropped { .. } | Keys::NoRaw { .. } => {
                Severity::Note
            }
        }
    }

    fn message(&self) -> String {
        match self {
            Keys::NoDestination => {
                "it names no destination Secret (`spec.destination.name`)".into()
            }
            Keys::Missing { secret } => format!("destination Secret `{secret}` does not exist"),
            Keys::Lacking { secret, keys } => format!(
                "destination Secret `{secret}` lacks key(s) `{}`",
                joined(keys)
            ),
            Keys::Empty { secret } => format!("destination Secret `{secret}` has no keys"),
            Keys::PartlyKnown { why } => format!(
                "which keys its transformation writes is only partly known ({why}): only the keys its own templates write are checked"
            ),
            Keys::FieldsDropped { fields } => format!(
                "its transformation drops field(s) `{}` and no template names them: their values do not reach the destination Secret",
                joined(fields)
            ),
            Keys::NoRaw { secret } => format!(
                "destination Secret `{secret}` has no `_raw`: VSO writes it unless `excludeRaw` or the operator runs with `--global-transformation-options=exclude-raw`, which vault-seed does not see"
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
    /// Its `spec.namespace`: the Vault namespace it reads in instead of its VaultAuth's.
    vault_namespace: Option<String>,
}

impl Checked {
    /// The row with its findings in it.
    fn finish(mut self) -> VssCheck {
        self.check.ok = !any_problem(&self.findings);
        self.check.verdict = Verdict::of(&self.findings);
        self.check
    }
}

/// What the checks of one run share.
struct Ctx<'a> {
    cluster: &'a Cluster,
    skip_secrets: bool,
    facts: &'a Facts<'a>,
}

/// Check everything once. `wanted` holds `(namespace, name)` of each VaultStaticSecret;
/// `skip_secrets` leaves the destination Secrets unread (`--skip-target-secrets`); `expected`
/// is what VSO must use (Vault, namespace, role).
pub async fn check(
    cluster: &Cluster,
    wanted: &[(String, String)],
    skip_secrets: bool,
    facts: &Facts<'_>,
    expected: &Expected,
) -> Result<VsoReport, KubeError> {
    let ctx = Ctx {
        cluster,
        skip_secrets,
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
    let auths = check_auths(cluster, &refs, expected).await?;
    let mut out = Vec::new();
    for mut c in checked {
        if let Some(r) = &c.auth {
            if let Some((_, found)) = auths.resolved.iter().find(|(x, _)| x == r) {
                c.check.vault_auth = Some(format!("{}/{}", found.namespace, found.name));
            }
            if !c.check.synced {
                let why = auths.why.iter().filter(|(x, _)| x == r);
                c.findings.extend(why.map(|(_, w)| w.clone()));
            }
        }
        let found = identity(&c, &auths, expected);
        c.findings.extend(found);
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
        verdict: Verdict::default(),
    };
    let findings = vec![VssFinding::Missing {
        namespace: ns.to_string(),
        name: name.to_string(),
    }];
    Checked {
        check,
        findings,
        auth: None,
        vault_namespace: None,
    }
}

/// The index of the target a VaultStaticSecret reads (`spec.mount`, `spec.path`, slashes
/// trimmed). The one rule `verify` and `audit` match VaultStaticSecrets by.
pub(crate) fn position_of_vss(index: &TargetIndex<'_>, v: &VaultStaticSecretInfo) -> Option<usize> {
    index.position_of(v.mount.trim_matches('/'), v.path.trim_matches('/'))
}

/// The target a VaultStaticSecret reads ([`position_of_vss`]).
pub(crate) fn target_of_vss<'t>(
    index: &TargetIndex<'t>,
    v: &VaultStaticSecretInfo,
) -> Option<&'t Target> {
    position_of_vss(index, v).map(|i| &index.targets()[i])
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
    let target = target_of_vss(ctx.facts.index(), v);
    let path_facts = target.and_then(|t| ctx.facts.get(&t.full_path()));
    let read = target.zip(path_facts.as_ref());
    let object = format!("VaultStaticSecret `{ns}/{name}`");
    found.extend(bad_fields(&object, &v.bad).map(VssFinding::Identity));
    let known = target.and_then(|t| ctx.facts.known_kv_version(t));
    found.extend(path_finding(v, &full, target, known));
    let synced = sync_findings(ns, v, &mut found);
    let reconciled_at = latest(v)
        .filter(|c| c.ready == Some(true))
        .and_then(|c| c.last_transition_time);
    freshness(v, synced, reconciled_at, read, &mut found);
    if !ctx.skip_secrets {
        destination(ctx.cluster, ns, v, target, &mut found).await?;
    }
    why_not(ctx, ns, name, synced, read, &mut found).await?;
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
        verdict: Verdict::default(),
    };
    Ok(Checked {
        check,
        findings: found,
        auth,
        vault_namespace: v.vault_namespace.clone(),
    })
}

/// Why it is not synced, or not fresh: what vault-seed sees, then VSO's own Warning events.
/// A `StatusUpdateError` after the write turns "reconciled before the write" into "cannot tell":
/// VSO writes the Secret before its status, and a status write that fails keeps the old
/// `Ready` time (`controllers/vaultstaticsecret_controller.go` `updateStatus`, lines 323-326,
/// only records the event).
async fn why_not(
    ctx: &Ctx<'_>,
    ns: &str,
    name: &str,
    synced: bool,
    read: Option<(&Target, &PathFacts)>,
    found: &mut Vec<VssFinding>,
) -> Result<(), KubeError> {
    let before = found
        .iter()
        .position(|f| matches!(f, VssFinding::ReconciledBeforeWrite { .. }));
    if synced && before.is_none() {
        return Ok(());
    }
    if let (false, Some((t, f))) = (synced, read) {
        causes(t, f, found);
    }
    let events = ctx
        .cluster
        .warning_events(ns, "VaultStaticSecret", name)
        .await?;
    if let Some(i) = before {
        if let VssFinding::ReconciledBeforeWrite { at, created } = found[i] {
            let failed = events
                .iter()
                .filter(|e| e.reason.as_deref() == Some("StatusUpdateError"))
                .filter_map(|e| e.last_timestamp)
                .find(|t| !before_in_whole_seconds(*t, created));
            if let Some(failed) = failed {
                found[i] = VssFinding::StatusNotWritten {
                    at,
                    created,
                    failed,
                };
            }
        }
    }
    found.extend(events.into_iter().take(3).map(|ev| VssFinding::Event {
        reason: ev.reason.unwrap_or_default(),
        message: one_line(&ev.message.unwrap_or_default()),
    }));
    Ok(())
}

/// The path it reads must be one of the spec's, at the mount's KV version (`known`: the spec's
/// `kv_version`, else the server's; not known, the `type` is not checked, which is a problem).
/// A missing `mount`, `path` or `type` is reported as such ([`bad_fields`]).
fn path_finding(
    v: &VaultStaticSecretInfo,
    full: &str,
    target: Option<&Target>,
    known: Option<KvVersion>,
) -> Option<VssFinding> {
    if v.mount.is_empty() || v.path.is_empty() {
        return None;
    }
    let Some(t) = target else {
        return Some(VssFinding::NotSpecPath {
            full: full.to_string(),
            mount: v.mount.clone(),
            path: v.path.clone(),
        });
    };
    if v.kv_type.is_empty() {
        return None;
    }
    let Some(version) = known else {
        return Some(VssFinding::Identity(Identity::TypeNotChecked {
            kv_type: v.kv_type.clone(),
            mount: t.mount().to_string(),
        }));
    };
    let kv_v2 = version == KvVersion::V2;
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
/// VSO records no sync time of its own (no `refreshTime`). Every reconcile that reads Vault
/// ends in `updateStatus` (`controllers/vaultstaticsecret_controller.go`, lines 305-306 and
/// 315-319), which builds `Healthy` and `Ready` with `time.Now()` (`controllers/common.go`
/// `newConditionNow`, 333-337), taken after the read; `updateConditions` (279-331) keeps an
/// old `lastTransitionTime` only for a condition given none, so the time is rewritten at every
/// status write, not only on a change of status. A `Ready` time before the write's second is
/// therefore a read before the write, unless that status write failed ([`why_not`]).
/// `spec.version` pins a KV v2 version: VSO reads that one, never a newer value.
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
        // `lastTransitionTime` is whole seconds: only a reconcile before the write's second is
        // before it; one in that second may be either side of it.
        if before_in_whole_seconds(at, created) {
            found.push(VssFinding::ReconciledBeforeWrite { at, created });
        } else if before_in_whole_seconds(at, created + time::Duration::SECOND) {
            found.push(VssFinding::ReconciledSameSecond { at, created });
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

/// The destination Secret exists with every key VSO writes: each field of the path under its
/// own name, or what its transformation makes of them ([`crate::kube::Transformation`]).
/// What is only partly known (a SecretTransformation, a pattern Go may read otherwise) and
/// `_raw` (VSO's global `exclude-raw` is not seen from here) never make it not done.
async fn destination(
    cluster: &Cluster,
    ns: &str,
    v: &VaultStaticSecretInfo,
    target: Option<&Target>,
    found: &mut Vec<VssFinding>,
) -> Result<(), KubeError> {
    let mut add = |k: Keys| found.push(VssFinding::Keys(k));
    if v.destination.is_empty() {
        add(Keys::NoDestination);
        return Ok(());
    }
    let shown = format!("{ns}/{}", v.destination);
    let Some(keys) = cluster.secret_keys(ns, &v.destination).await? else {
        add(Keys::Missing { secret: shown });
        return Ok(());
    };
    if let Some(want) = target.and_then(|t| t.secret_type.as_deref()) {
        let has = cluster.secret_type(ns, &v.destination).await?;
        let asks = secret_type::vso_writes(v.destination_create, &v.destination_type)
            .map(|a| ("spec.destination.type", a));
        let found_types = secret_type::check(want, asks, &shown, has.as_deref());
        found.extend(found_types.into_iter().map(VssFinding::SecretType));
    }
    let mut add = |k: Keys| found.push(VssFinding::Keys(k));
    let expected = expected_keys(v, target);
    let has = |k: &str| keys.iter().any(|x| x == k);
    if let Some(why) = &expected.partial {
        if keys.is_empty() {
            add(Keys::Empty {
                secret: shown.clone(),
            });
        }
        add(Keys::PartlyKnown { why: why.clone() });
    }
    if !expected.dropped.is_empty() {
        add(Keys::FieldsDropped {
            fields: expected.dropped.clone(),
        });
    }
    if expected.raw && !has(RAW_KEY) {
        add(Keys::NoRaw {
            secret: shown.clone(),
        });
    }
    let lacking: Vec<String> = expected
        .keys
        .iter()
        .map(|(k, _)| k.clone())
        .filter(|k| !has(k))
        .collect();
    if !lacking.is_empty() {
        add(Keys::Lacking {
            secret: shown,
            keys: lacking,
        });
    }
    Ok(())
}

/// The keys VSO writes into `v`'s destination Secret for the spec's fields of the path it
/// reads (`target`; none when the path is not the spec's).
pub(crate) fn expected_keys(
    v: &VaultStaticSecretInfo,
    target: Option<&Target>,
) -> crate::kube::DestinationKeys {
    let fields: Vec<&str> = target
        .map(|t| t.fields.iter().map(|f| f.name.as_str()).collect())
        .unwrap_or_default();
    v.transformation.destination_keys(&fields)
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
    /// Each VaultAuth reference and the VaultAuth found for it.
    resolved: Vec<(ObjRef, VsoObjectInfo)>,
    /// Each VaultAuth reference and why its users are not synced, in the order found.
    why: Vec<(ObjRef, VssFinding)>,
    /// Each VaultAuth reference and what is wrong with the Vault, namespace or login its users
    /// get, whether synced or not.
    wrong: Vec<(ObjRef, VssFinding)>,
}

/// Check each VaultAuth referenced, then the VaultConnections they name.
async fn check_auths(
    cluster: &Cluster,
    refs: &BTreeSet<ObjRef>,
    expected: &Expected,
) -> Result<Auths, KubeError> {
    let mut auths = Auths {
        objects: Vec::new(),
        resolved: Vec::new(),
        why: Vec::new(),
        wrong: Vec::new(),
    };
    let mut connections: Vec<(ObjRef, ObjRef)> = Vec::new(); // (VaultAuth, its VaultConnection)
    for r in refs {
        let (check, found) = check_object(cluster, VAULT_AUTH, r).await?;
        let shown = format!("VaultAuth {}", r.shown());
        match &found {
            None => {
                let why = VssFinding::Identity(unresolved(shown, &check));
                auths.wrong.push((r.clone(), why));
            }
            Some(a) => {
                let login = login_findings(a, expected.vault_namespace.as_deref());
                let login = login.into_iter().map(VssFinding::Identity);
                auths.wrong.extend(login.map(|f| (r.clone(), f)));
                match connection_of(r, a) {
                    Ok(c) => connections.push((r.clone(), c)),
                    Err(error) => auths
                        .wrong
                        .push((r.clone(), VssFinding::ConnectionRefRefused { error })),
                }
            }
        }
        if !check.ok {
            let problem = first_problem(&check);
            let auth = r.shown();
            auths
                .why
                .push((r.clone(), VssFinding::AuthNotValid { auth, problem }));
        }
        if let Some(a) = found {
            auths.resolved.push((r.clone(), a));
        }
        auths.objects.push(check);
    }
    let distinct: BTreeSet<&ObjRef> = connections.iter().map(|(_, c)| c).collect();
    for c in distinct {
        let (check, found) = check_object(cluster, VAULT_CONNECTION, c).await?;
        let users = || connections.iter().filter(|(_, x)| x == c).map(|(a, _)| a);
        let wrong: Vec<Identity> = match &found {
            None => vec![unresolved(format!("VaultConnection {}", c.shown()), &check)],
            Some(conn) => address_findings(conn, expected),
        };
        for auth in users() {
            let wrong = wrong.iter().map(|w| VssFinding::Identity(w.clone()));
            auths.wrong.extend(wrong.map(|w| (auth.clone(), w)));
            if !check.ok {
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

/// A VaultAuth or VaultConnection (`object`) that was not found or cannot be told apart: why,
/// from its check.
fn unresolved(object: String, check: &ObjectCheck) -> Identity {
    let why = first_problem(check)
        .or_else(|| check.verdict.problems().first().cloned())
        .or_else(|| check.reason.clone())
        .unwrap_or_else(|| "not found".into());
    Identity::Unresolved { object, why }
}

/// A field missing or malformed of `object` (as shown), each a finding.
fn bad_fields<'a>(object: &'a str, bad: &'a [BadField]) -> impl Iterator<Item = Identity> + 'a {
    bad.iter().map(move |b| Identity::BadField {
        object: object.to_string(),
        field: b.field.clone(),
        problem: b.problem.clone(),
    })
}

/// What is wrong with a VaultAuth's login whoever uses it: fields missing or malformed, a
/// VaultAuthGlobal not read, a method vault-seed does not judge, another Vault namespace than
/// `ours` (`spec.namespace`: where it logs in, and where its users read unless they name one).
fn login_findings(a: &VsoObjectInfo, ours: Option<&str>) -> Vec<Identity> {
    let shown = format!("`{}/{}`", a.namespace, a.name);
    let mut found: Vec<Identity> = bad_fields(&format!("VaultAuth {shown}"), &a.bad).collect();
    let Some(login) = &a.auth else {
        return found;
    };
    if login.global_ref {
        found.push(Identity::GlobalNotRead {
            auth: shown.clone(),
        });
        return found;
    }
    if let Some(method) = login.method.as_deref() {
        if !matches!(method, "kubernetes" | "jwt") {
            found.push(Identity::MethodNotJudged {
                auth: shown.clone(),
                method: method.to_string(),
            });
        }
    }
    let theirs = vault_namespace(login.vault_namespace.as_deref());
    if theirs.as_deref() != ours {
        found.push(Identity::OtherNamespace {
            whose: format!("VSO logs in (VaultAuth {shown} `spec.namespace`) to"),
            theirs,
            ours: ours.map(str::to_string),
        });
    }
    found
}

/// A VaultConnection's address must name the Vault vault-seed talked to, or one the spec
/// declares the same (`cluster_vault_addr`), compared as URLs ([`same_vault`]).
fn address_findings(c: &VsoObjectInfo, expected: &Expected) -> Vec<Identity> {
    let connection = format!("`{}/{}`", c.namespace, c.name);
    let mut found: Vec<Identity> =
        bad_fields(&format!("VaultConnection {connection}"), &c.bad).collect();
    let Some(address) = c.address.clone() else {
        return found;
    };
    if let Err(e) = crate::vault::address::parse(&address, true) {
        found.push(Identity::BadAddress {
            connection,
            address,
            error: e.to_string(),
        });
        return found;
    }
    let ours = std::iter::once(&expected.vault_addr).chain(&expected.cluster_vault_addrs);
    if !ours.into_iter().any(|a| same_vault(&address, a)) {
        found.push(Identity::OtherVault {
            connection,
            address,
            used: expected.vault_addr.clone(),
            declared: expected.cluster_vault_addrs.clone(),
        });
    }
    found
}

/// What one VaultStaticSecret gets from its VaultAuth and VaultConnection: what is wrong with
/// them, the role it logs in as against its spec's, and the Vault namespace it reads in.
fn identity(c: &Checked, auths: &Auths, expected: &Expected) -> Vec<VssFinding> {
    let mut found = Vec::new();
    if let Some(ns) = vault_namespace(c.vault_namespace.as_deref()) {
        if Some(ns.as_str()) != expected.vault_namespace.as_deref() {
            found.push(VssFinding::Identity(Identity::OtherNamespace {
                whose: "it reads in (its `spec.namespace`)".into(),
                theirs: Some(ns),
                ours: expected.vault_namespace.clone(),
            }));
        }
    }
    let Some(r) = &c.auth else {
        return found;
    };
    let wrong = auths.wrong.iter().filter(|(x, _)| x == r);
    found.extend(wrong.map(|(_, w)| w.clone()));
    let login = auths
        .resolved
        .iter()
        .find(|(x, _)| x == r)
        .and_then(|(_, a)| a.auth.as_ref());
    if let Some(login) = login {
        let spec = expected.role(&c.check.namespace, &c.check.name);
        found.extend(role_finding(login, spec).map(VssFinding::Identity));
    }
    found
}

/// The role VSO logs in as (`kubernetes` and `jwt`, whose roles hold `token_policies` as the
/// policy part reads them) against the spec's `[vso] auth_mount`/`auth_role`. Other methods,
/// a VaultAuthGlobal and missing fields are reported by [`login_findings`].
fn role_finding(login: &VaultAuthLogin, spec: Option<&AuthRole>) -> Option<Identity> {
    if login.global_ref || !matches!(login.method.as_deref(), Some("kubernetes" | "jwt")) {
        return None;
    }
    let (mount, role) = (login.mount.clone()?, login.role.clone()?);
    let Some(spec) = spec else {
        return Some(Identity::NoSpecRole { role, mount });
    };
    if mount.trim_matches('/') != spec.mount.trim_matches('/') {
        return Some(Identity::OtherAuthMount {
            role,
            mount,
            spec_mount: spec.mount.clone(),
        });
    }
    (role != spec.name).then(|| Identity::OtherRole {
        role,
        mount,
        spec_role: spec.name.clone(),
    })
}

/// The VaultConnection a VaultAuth found for `r` uses (VSO v1.4.1 `common/common.go`). A
/// reference `name` is in the VaultAuth's namespace, `ns/name` where it says
/// (`ParseResourceRef`); an empty one is `default` in the operator's namespace
/// (`GetConnectionNamespacedName`), which for the default VaultAuth is its own namespace
/// (`setVaultConnectionRef`: the `default` VaultAuth of the operator's namespace gets
/// `default`, read in its namespace). Any other VaultAuth without a reference uses the
/// operator's default VaultConnection, not one of its own namespace.
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
/// one named `default` in the operator's namespace (`common/common.go` `ParseResourceRef`,
/// `OperatorNamespace`): every object of that name is listed, and with several, the one in
/// the namespace VSO's controller runs in ([`operator_default`]) is VSO's; when that cannot
/// be told, none is judged ("not checked").
async fn check_object(
    cluster: &Cluster,
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
            Ok(all) => match operator_default(cluster, &all).await {
                // VSO uses the one in its own namespace: when that is known, that one.
                Some(ns) => all.into_iter().find(|a| a.namespace == ns),
                None => {
                    let found = all
                        .iter()
                        .map(|a| format!("{}/{}", a.namespace, a.name))
                        .collect();
                    let why = ObjectFinding::SeveralDefaults { found };
                    let checked = check(None, default(), Some("ambiguous".into()), vec![why]);
                    return Ok((checked, None));
                }
            },
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

/// The namespace of the one default among `all` that VSO uses: the operator's own, when
/// exactly one namespace runs VSO's controller and a default is there. `None` when that cannot
/// be told (several controllers, none found, or no right to list Deployments).
async fn operator_default(cluster: &Cluster, all: &[VsoObjectInfo]) -> Option<String> {
    let namespaces = cluster.vso_operator_namespaces().await.ok()?;
    let [ns] = namespaces.into_iter().collect::<Vec<_>>().try_into().ok()?;
    all.iter().any(|a| a.namespace == ns).then_some(ns)
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

/// The namespace of a spec's VaultStaticSecrets: the environment's `kube_namespace`, else
/// `[vso] namespace`, else the kubeconfig's.
pub(crate) fn vso_namespace(
    v: &crate::spec::Vso,
    env: &crate::spec::Environment,
    default_namespace: &str,
) -> String {
    env.kube_namespace
        .clone()
        .or_else(|| v.namespace.clone())
        .unwrap_or_else(|| default_namespace.to_string())
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

    pub(super) fn vss(generation: Option<i64>, last: Option<i64>) -> VaultStaticSecretInfo {
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
            destination_type: String::new(),
            destination_create: true,
            transformation: crate::kube::Transformation::default(),
            vault_auth_ref: None,
            vault_namespace: None,
            bad: Vec::new(),
            rollout_restart_targets: Vec::new(),
            rollout_restart_bad: None,
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

    /// `lastTransitionTime` has whole seconds: a reconcile in the write's second is a note (the
    /// times cannot tell), one a second before it is not fresh.
    #[test]
    fn a_reconcile_in_the_writes_second_is_not_before_it() {
        let t = |s: &str| {
            OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap()
        };
        let facts = PathFacts {
            created: Some(t("2026-01-01T00:19:24.144975403Z")),
            ..PathFacts::default()
        };
        let origin = crate::spec::Origin::new(
            std::path::Path::new("a.toml").into(),
            "a".into(),
            "secret".into(),
            None,
        );
        let target = Target::new(
            origin,
            "app".into(),
            "A".into(),
            false,
            Vec::new().into(),
            None,
        );
        let judged = |at: &str| {
            let mut found = Vec::new();
            freshness(
                &vss(Some(1), Some(1)),
                true,
                Some(t(at)),
                Some((&target, &facts)),
                &mut found,
            );
            found
        };
        assert!(matches!(
            judged("2026-01-01T00:19:24Z")[..],
            [VssFinding::ReconciledSameSecond { .. }]
        ));
        assert!(!any_problem(&judged("2026-01-01T00:19:24Z")));
        assert!(matches!(
            judged("2026-01-01T00:19:23Z")[..],
            [VssFinding::ReconciledBeforeWrite { .. }]
        ));
        assert!(judged("2026-01-01T00:19:25Z").is_empty());
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
            auth: None,
            address: None,
            bad: Vec::new(),
        };
        let finding = validity(&auth).unwrap();
        let check = ObjectCheck::new("VaultAuth", None, "auth".into(), None, vec![finding]);
        assert!(!check.ok);
        // The object's own line is capped; the sentence its users get is capped once, whole.
        assert!(check.verdict.problems()[0].ends_with("more characters)"));
        let problem = first_problem(&check).unwrap();
        assert!(problem.ends_with(&long));
        assert!(ObjRef::Default < ObjRef::Named(String::new(), String::new()));
        assert_eq!(
            connection_of(&ObjRef::Default, &auth).unwrap(),
            ObjRef::Named("ns".into(), crate::kube::VSO_DEFAULT_NAME.into())
        );
    }

    fn login(method: &str, mount: &str, role: &str) -> VaultAuthLogin {
        VaultAuthLogin {
            method: Some(method.into()),
            mount: Some(mount.into()),
            role: Some(role.into()),
            vault_namespace: None,
            global_ref: false,
        }
    }

    fn spec_role(mount: &str, name: &str) -> AuthRole {
        AuthRole {
            mount: mount.into(),
            name: name.into(),
        }
    }

    #[test]
    fn the_role_vso_logs_in_as_is_the_specs_or_a_problem_naming_both() {
        let k = login("kubernetes", "kubernetes", "x");
        assert!(role_finding(&k, Some(&spec_role("kubernetes", "x"))).is_none());
        assert!(role_finding(&k, Some(&spec_role("/kubernetes/", "x"))).is_none());
        let f = role_finding(&k, Some(&spec_role("kubernetes", "y"))).unwrap();
        assert_eq!(f.severity(), Severity::Problem);
        assert!(f
            .message()
            .starts_with("VSO logs in as role `x` on `kubernetes`; the spec says `y`"));
        let f = role_finding(&k, Some(&spec_role("k8s-b", "x"))).unwrap();
        assert!(f
            .message()
            .contains("on auth mount `kubernetes`; the spec says `k8s-b`"));
        let f = role_finding(&k, None).unwrap();
        assert!(f.message().contains("the spec names no `[vso] auth_role`"));
        // jwt roles are judged as kubernetes ones; other methods are left to login_findings.
        assert!(role_finding(&login("jwt", "jwt", "x"), None).is_some());
        assert!(role_finding(&login("appRole", "approle", "id"), None).is_none());
    }

    fn object(
        kind: &'static str,
        auth: Option<VaultAuthLogin>,
        address: Option<&str>,
    ) -> VsoObjectInfo {
        VsoObjectInfo {
            kind,
            namespace: "ns".into(),
            name: "o".into(),
            valid: Some(true),
            error: None,
            healthy: None,
            connection_ref: None,
            login: None,
            auth,
            address: address.map(String::from),
            bad: Vec::new(),
        }
    }

    #[test]
    fn other_methods_globals_and_namespaces_are_problems() {
        let f = login_findings(
            &object("VaultAuth", Some(login("appRole", "approle", "id")), None),
            None,
        );
        assert!(matches!(&f[..], [Identity::MethodNotJudged { .. }]));
        assert!(f[0]
            .message()
            .starts_with("not checked: vault-seed does not judge `appRole` auth"));
        let mut g = login("kubernetes", "kubernetes", "x");
        g.global_ref = true;
        let f = login_findings(&object("VaultAuth", Some(g), None), None);
        assert!(matches!(&f[..], [Identity::GlobalNotRead { .. }]));
        let mut n = login("kubernetes", "kubernetes", "x");
        n.vault_namespace = Some("team-a/".into());
        assert!(
            login_findings(&object("VaultAuth", Some(n.clone()), None), Some("team-a")).is_empty()
        );
        let f = login_findings(&object("VaultAuth", Some(n), None), None);
        assert_eq!(
            f[0].message(),
            "VSO logs in (VaultAuth `ns/o` `spec.namespace`) to Vault namespace `team-a`; vault-seed used none (the root namespace)"
        );
        assert!(any_problem(&f));
    }

    #[test]
    fn the_address_must_be_the_vault_in_use_or_one_the_spec_declares() {
        let mut e = Expected {
            vault_addr: "http://127.0.0.1:8200".into(),
            ..Expected::default()
        };
        let c = |a: &str| object("VaultConnection", None, Some(a));
        assert!(address_findings(&c("http://127.0.0.1:8200/"), &e).is_empty());
        let f = address_findings(&c("http://vault.vault.svc:8200"), &e);
        assert!(f[0].message().starts_with(
            "VSO reads the Vault at `http://vault.vault.svc:8200` (VaultConnection `ns/o`), not the one vault-seed seeded and judged (`http://127.0.0.1:8200`, and the spec declares no `cluster_vault_addr`)"
        ));
        e.cluster_vault_addrs = vec!["http://Vault.vault.svc:8200".into()];
        assert!(address_findings(&c("http://vault.vault.svc:8200"), &e).is_empty());
        let f = address_findings(&c("vault.vault.svc"), &e);
        assert!(matches!(&f[..], [Identity::BadAddress { .. }]));
    }

    #[test]
    fn a_type_whose_mount_version_is_unknown_is_not_checked_and_not_ok() {
        let origin = crate::spec::Origin::new(
            std::path::Path::new("a.toml").into(),
            "a".into(),
            "secret".into(),
            None,
        );
        let t = Target::new(
            origin,
            "app".into(),
            "A".into(),
            false,
            Vec::new().into(),
            None,
        );
        let v = vss(Some(1), Some(1));
        let f = path_finding(&v, "secret/app", Some(&t), None).unwrap();
        assert!(matches!(
            f,
            VssFinding::Identity(Identity::TypeNotChecked { .. })
        ));
        assert_eq!(f.severity(), Severity::Problem);
        assert!(path_finding(&v, "secret/app", Some(&t), Some(KvVersion::V2)).is_none());
        let f = path_finding(&v, "secret/app", Some(&t), Some(KvVersion::V1)).unwrap();
        assert!(matches!(f, VssFinding::WrongType { .. }));
    }
}

/// The rules of a VaultStaticSecret's own state ([`sync_findings`]), one case per row: what the
/// object says, and the codes found. In-process; the suite's `kube_vso` proves the wiring.
#[cfg(test)]
mod table {
    use super::*;
    use crate::base::codes::Code;
    use crate::kube::ReadyCondition;

    fn state(ready: Option<bool>) -> Option<ReadyCondition> {
        Some(ReadyCondition {
            ready,
            ..ReadyCondition::default()
        })
    }

    /// Ready, of the current generation, `SecretSynced` True.
    fn vss() -> VaultStaticSecretInfo {
        let mut v = super::tests::vss(Some(2), Some(2));
        v.secret_synced = state(Some(true));
        v
    }

    fn with(f: impl FnOnce(&mut VaultStaticSecretInfo)) -> VaultStaticSecretInfo {
        let mut v = vss();
        f(&mut v);
        v
    }

    #[test]
    fn the_state_rules_give_their_codes() {
        let cases: Vec<(&str, VaultStaticSecretInfo, bool, &[&str])> = vec![
            ("ready, current generation", vss(), true, &[]),
            (
                "an older generation processed",
                with(|v| v.last_generation = Some(1)),
                false,
                &["not-reconciled"],
            ),
            (
                "never processed",
                with(|v| v.last_generation = None),
                false,
                &["not-reconciled"],
            ),
            (
                "not ready",
                with(|v| v.ready = state(Some(false))),
                false,
                &["not-synced"],
            ),
            (
                "only Healthy (VSO < 1.3), not true",
                with(|v| {
                    v.ready = None;
                    v.healthy = state(Some(false));
                }),
                false,
                &["not-synced"],
            ),
            (
                "no conditions and no MAC",
                with(|v| {
                    v.ready = None;
                    v.has_secret_mac = false;
                }),
                false,
                &["no-status"],
            ),
            (
                "no conditions, MAC and generation (VSO <= 0.10)",
                with(|v| {
                    v.ready = None;
                    v.secret_synced = None;
                }),
                true,
                &[],
            ),
            (
                "SecretSynced False from an earlier failure",
                with(|v| v.secret_synced = state(Some(false))),
                true,
                &["stale-secret-synced"],
            ),
            (
                "HMAC on, no secretMAC",
                with(|v| v.has_secret_mac = false),
                true,
                &["no-secret-mac"],
            ),
        ];
        for (case, v, synced, want) in cases {
            let mut found = Vec::new();
            assert_eq!(sync_findings("ns", &v, &mut found), synced, "{case}");
            let codes: Vec<&str> = found.iter().map(Code::code).collect();
            assert_eq!(codes, want, "{case}");
        }
    }

    /// The JSON keeps its keys, in their order; `findings` is the only one added.
    #[test]
    fn the_json_keeps_its_keys() {
        let check = missing("ns", "app").finish();
        assert_eq!(
            crate::verify::findings::json_keys(&check),
            [
                "namespace",
                "name",
                "ok",
                "synced",
                "ready",
                "healthy",
                "secret_synced",
                "generation",
                "last_generation",
                "path",
                "type",
                "destination_secret",
                "vault_auth",
                "reconciled_at",
                "message",
                "problems",
                "explanations",
                "notes",
                "findings",
            ]
        );
        assert_eq!(check.verdict.findings().next().unwrap().code, "missing");
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify kube: VaultStaticSecrets",
            &VssFinding::codes(),
            &VssFinding::all_codes(),
        );
        crate::base::codes::assert_documented(
            "verify kube: VaultStaticSecret destination keys",
            &Keys::codes(),
            &Keys::all_codes(),
        );
        crate::base::codes::assert_documented(
            "verify kube: VaultStaticSecret identity",
            &Identity::codes(),
            &Identity::all_codes(),
        );
    }
}
