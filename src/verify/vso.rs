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

use super::eso::ObjectCheck;
use super::facts::Facts;
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

/// Check everything once. `wanted` holds `(namespace, name)` of each VaultStaticSecret;
/// `skip_secrets` leaves the destination Secrets unread (`--skip-target-secrets`).
pub async fn check(
    cluster: &EsoCluster,
    wanted: &[(String, String)],
    skip_secrets: bool,
    targets: &[Target],
    facts: &Facts<'_>,
) -> Result<VsoReport, KubeError> {
    let mut out = Vec::new();
    // VaultAuths to check: (namespace, name) as referenced, or None for VSO's default.
    let mut auths: BTreeSet<Option<(String, String)>> = BTreeSet::new();
    // Per VaultStaticSecret (in `out`'s order), the VaultAuth it names, when it names one VSO
    // takes (`None` inside: VSO's default).
    let mut auth_of: Vec<Option<Option<(String, String)>>> = Vec::new();
    for (ns, name) in wanted {
        let Some(v) = cluster.vault_static_secret(ns, name).await? else {
            out.push(VssCheck {
                namespace: ns.clone(),
                name: name.clone(),
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
                problems: vec![format!(
                    "VaultStaticSecret `{ns}/{name}` does not exist (is the secrets app synced?)"
                )],
                explanations: Vec::new(),
                notes: Vec::new(),
            });
            auth_of.push(None);
            continue;
        };
        let mut problems = Vec::new();
        let mut explanations = Vec::new();
        let mut notes = Vec::new();

        // The path it reads must be one of the spec's, at the mount's KV version.
        let full = format!("{}/{}", v.mount.trim_matches('/'), v.path.trim_matches('/'));
        let target = targets.iter().find(|t| {
            t.mount() == v.mount.trim_matches('/') && &*t.path == v.path.trim_matches('/')
        });
        let path_facts = target.and_then(|t| facts.get(&t.full_path()));
        let path_facts = path_facts.as_ref();
        match (target, path_facts) {
            (None, _) => problems.push(format!(
                "it reads `{full}` (mount `{}`, path `{}`), which is not a path of the spec",
                v.mount, v.path
            )),
            (Some(t), Some(f)) => {
                // On KV v1 the data path is the full path itself.
                let kv_v2 = f.data_path != t.full_path();
                let expected = if kv_v2 { "kv-v2" } else { "kv-v1" };
                if v.kv_type != expected {
                    problems.push(format!(
                        "its `type` is `{}` but mount `{}` is {}: VSO would read `{}`",
                        v.kv_type,
                        t.mount(),
                        if kv_v2 { "KV v2" } else { "KV v1" },
                        if v.kv_type == "kv-v2" {
                            format!("{}/data/{}", t.mount(), t.path)
                        } else {
                            t.full_path()
                        }
                    ));
                }
            }
            (Some(_), None) => {}
        }

        // Synced: the latest reconcile succeeded and it was of the current spec.
        let generation_current = match (v.generation, v.last_generation) {
            (Some(g), Some(l)) => l >= g,
            (None, _) => true,
            (Some(_), None) => false,
        };
        let latest_ok = match latest(&v) {
            Some(c) => c.ready == Some(true),
            // VSO <= 0.10 writes no conditions: lastGeneration only on success, with the MAC.
            None => v.has_secret_mac && v.last_generation.is_some(),
        };
        let synced = latest_ok && generation_current;
        if !generation_current {
            problems.push(format!(
                "not reconciled: generation {} but VSO last processed generation {}; if this lasts, VSO is not processing it (operator down, not watching namespace `{ns}`, or `destination.create: false` with the destination Secret missing)",
                v.generation.unwrap_or_default(),
                v.last_generation.map_or("none".into(), |l| l.to_string())
            ));
        } else if !latest_ok {
            let which = if v.ready.is_some() {
                "Ready"
            } else {
                "Healthy"
            };
            let detail = v
                .secret_synced
                .as_ref()
                .filter(|c| c.ready == Some(false))
                .and_then(|c| c.message.clone())
                .map(|m| format!(": {}", one_line(&m)))
                .unwrap_or_default();
            problems.push(match latest(&v) {
                Some(_) => format!("not synced: {which} is not True{detail}"),
                None => "not synced: no status yet (VSO has not reconciled it)".into(),
            });
        }
        if synced && v.secret_synced.as_ref().and_then(|c| c.ready) == Some(false) {
            notes.push(
                "`SecretSynced` is False from an earlier failure, but the latest reconcile is Ready with the current generation: synced (`SecretSynced` is only rewritten when the Secret is; VSO issue #1225)"
                    .into(),
            );
        }
        if v.hmac && !v.has_secret_mac && latest_ok {
            problems.push(
                "no `status.secretMAC` although HMAC is on: VSO has never written the Secret"
                    .into(),
            );
        }
        // Fresh: the reconcile that found the Secret equal to Vault ran after the value was
        // written. VSO records no sync time of its own (no `refreshTime`); `Ready`/`Healthy` are
        // rewritten at every reconcile, which compares Vault's data with the Secret.
        let reconciled_at = latest(&v)
            .filter(|c| c.ready == Some(true))
            .and_then(|c| c.last_transition_time);
        if let (true, Some(at), Some(created)) =
            (synced, reconciled_at, path_facts.and_then(|f| f.created))
        {
            if at < created {
                problems.insert(0, format!(
                    "synced, but last reconciled at {} — before the secret's current version was written to Vault at {}: the destination Secret may hold an older value (VSO reads again within its refreshAfter; --force-sync asks now)",
                    rfc3339(at), rfc3339(created)
                ));
            }
        }
        if let (true, Some(t), Some(f)) = (synced, target, path_facts) {
            for field in t.fields.iter() {
                if f.fields.get(&field.name) == Some(&Status::Pending) {
                    notes.push(format!(
                        "`{}` field `{}` is still a placeholder: the destination Secret holds the marker until it is filled in (`vault-seed set`)",
                        t.full_path(),
                        field.name
                    ));
                }
            }
        }
        // `spec.version` pins a KV v2 version: VSO reads that one, never a newer value.
        if let (Some(pin), Some(current)) = (v.pinned_version, path_facts.and_then(|f| f.version)) {
            if pin != current {
                problems.push(format!(
                    "it reads version {pin} (`spec.version`), but the secret's current version in Vault is {current}: the destination Secret holds the pinned value"
                ));
            }
        }
        if synced && latest(&v).is_none() {
            notes.push("VSO before 1.0 writes no conditions: freshness cannot be judged".into());
        }

        // The destination Secret exists with the KV fields as keys (and `_raw`).
        if skip_secrets {
            // Not read: a Role without `get secrets` suffices (the run's notes say so).
        } else if v.destination.is_empty() {
            problems.push("it names no destination Secret (`spec.destination.name`)".into());
        } else {
            match cluster.secret_keys(ns, &v.destination).await? {
                None => problems.push(format!(
                    "destination Secret `{ns}/{}` does not exist",
                    v.destination
                )),
                Some(keys) if v.keys_transformed => {
                    if keys.is_empty() {
                        problems.push(format!(
                            "destination Secret `{ns}/{}` has no keys",
                            v.destination
                        ));
                    }
                    notes.push("its transformation renames or filters keys: the destination Secret's keys are not checked against the spec's fields".into());
                }
                Some(keys) => {
                    let mut expected: Vec<&str> = target
                        .map(|t| t.fields.iter().map(|f| f.name.as_str()).collect())
                        .unwrap_or_default();
                    if !v.exclude_raw {
                        expected.push(RAW_KEY);
                    }
                    let missing: Vec<&str> = expected
                        .into_iter()
                        .filter(|k| !keys.iter().any(|x| x == k))
                        .collect();
                    if !missing.is_empty() {
                        problems.push(format!(
                            "destination Secret `{ns}/{}` lacks key(s) `{}`",
                            v.destination,
                            missing.join("`, `")
                        ));
                    }
                }
            }
        }

        // Why it is not synced: what vault-seed sees, then VSO's own Warning events.
        if !synced {
            if let (Some(t), Some(f)) = (target, path_facts) {
                for field in t.fields.iter() {
                    match f.fields.get(&field.name) {
                        Some(Status::Valid) | None => {}
                        Some(Status::Pending) => explanations.push(format!(
                            "`{}` field `{}` is still a placeholder",
                            t.full_path(),
                            field.name
                        )),
                        Some(other) => explanations.push(format!(
                            "`{}` field `{}` is {other} in Vault",
                            t.full_path(),
                            field.name
                        )),
                    }
                }
                if !f.vso_policy_missing.is_empty() {
                    let missing: Vec<&str> =
                        f.vso_policy_missing.iter().map(|c| c.as_str()).collect();
                    explanations.push(format!(
                        "VSO's policy does not grant `{}` on `{}`",
                        missing.join("`, `"),
                        f.data_path
                    ));
                }
            }
            for ev in cluster
                .warning_events(ns, "VaultStaticSecret", name)
                .await?
                .into_iter()
                .take(3)
            {
                let reason = ev.reason.unwrap_or_default();
                let why = meaning(&reason)
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                explanations.push(format!(
                    "event {reason}{why}: {}",
                    one_line(&ev.message.unwrap_or_default())
                ));
            }
        }

        // The VaultAuth it logs in with.
        let auth = match parse_ref(v.vault_auth_ref.as_deref(), ns) {
            Ok(r) => {
                auths.insert(r.clone());
                auth_of.push(Some(r.clone()));
                r.map(|(a, b)| format!("{a}/{b}"))
            }
            Err(e) => {
                problems.push(format!("its `vaultAuthRef` is refused by VSO: {e}"));
                auth_of.push(None);
                None
            }
        };

        out.push(VssCheck {
            namespace: ns.clone(),
            name: name.clone(),
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
            vault_auth: auth,
            reconciled_at,
            message: v.secret_synced.as_ref().and_then(|c| c.message.clone()),
            problems,
            explanations,
            notes,
        });
    }

    // The VaultAuths, then the VaultConnections they name; each VaultStaticSecret learns what
    // is wrong with its own.
    type Ref = Option<(String, String)>;
    let mut objects = Vec::new();
    let mut connections: Vec<(Ref, Ref)> = Vec::new(); // (VaultAuth, its VaultConnection)
    let mut why: Vec<(Ref, String)> = Vec::new(); // (VaultAuth, what is wrong)
    let mut resolved: Vec<(Ref, String)> = Vec::new(); // (VaultAuth, `namespace/name` found)
    for r in &auths {
        let (check, found) = check_object(cluster, VAULT_AUTH, r.as_ref()).await?;
        if let Some(a) = &found {
            resolved.push((r.clone(), format!("{}/{}", a.namespace, a.name)));
            match parse_ref(a.connection_ref.as_deref(), &a.namespace) {
                // The default VaultAuth with no reference uses the default VaultConnection of
                // its own namespace (`common/common.go` `setVaultConnectionRef`).
                Ok(None) if r.is_none() => connections.push((
                    r.clone(),
                    Some((a.namespace.clone(), crate::kube::VSO_DEFAULT_NAME.into())),
                )),
                Ok(c) => connections.push((r.clone(), c)),
                Err(e) => why.push((
                    r.clone(),
                    format!("its VaultAuth's `vaultConnectionRef` is refused by VSO: {e}"),
                )),
            }
        }
        if !check.ok {
            let text = format!(
                "its VaultAuth {} is not valid{}",
                shown_ref(r.as_ref()),
                first_problem(&check)
            );
            why.push((r.clone(), text));
        }
        objects.push(check);
    }
    let distinct: BTreeSet<Ref> = connections.iter().map(|(_, c)| c.clone()).collect();
    for c in &distinct {
        let (check, _) = check_object(cluster, VAULT_CONNECTION, c.as_ref()).await?;
        if !check.ok {
            for (auth, _) in connections.iter().filter(|(_, x)| x == c) {
                let text = format!(
                    "its VaultAuth's VaultConnection {} is not valid{}",
                    shown_ref(c.as_ref()),
                    first_problem(&check)
                );
                why.push((auth.clone(), text));
            }
        }
        objects.push(check);
    }
    for (v, r) in out.iter_mut().zip(&auth_of) {
        if let Some(r) = r {
            if let Some((_, found)) = resolved.iter().find(|(x, _)| x == r) {
                v.vault_auth = Some(found.clone());
            }
            if !v.synced {
                v.explanations
                    .extend(why.iter().filter(|(x, _)| x == r).map(|(_, w)| w.clone()));
            }
        }
        v.ok = v.problems.is_empty();
    }

    // Sentences that quote the cluster stay bounded in JSON too.
    let bound = |lines: &mut Vec<String>| {
        for line in lines.iter_mut() {
            if let std::borrow::Cow::Owned(c) = crate::report::text::cap(line) {
                *line = c;
            }
        }
    };
    for v in &mut out {
        bound(&mut v.problems);
        bound(&mut v.explanations);
    }
    for o in &mut objects {
        bound(&mut o.problems);
    }
    Ok(VsoReport {
        vault_static_secrets: out,
        objects,
    })
}

/// `ns/name`, or what VSO's default is.
fn shown_ref(r: Option<&(String, String)>) -> String {
    match r {
        Some((ns, name)) => format!("`{ns}/{name}`"),
        None => format!("`{}` (VSO's default)", crate::kube::VSO_DEFAULT_NAME),
    }
}

/// A VaultAuth's or VaultConnection's check, and the object when found. `None` as the reference
/// is VSO's default: the one named `default` in the operator's namespace, looked for in every
/// namespace since vault-seed does not know which is VSO's.
async fn check_object(
    cluster: &EsoCluster,
    kind: VsoKind,
    r: Option<&(String, String)>,
) -> Result<(ObjectCheck, Option<VsoObjectInfo>), KubeError> {
    let check = |namespace: Option<String>,
                 name: String,
                 reason: Option<String>,
                 problems: Vec<String>| ObjectCheck {
        kind: kind.kind.into(),
        namespace,
        name,
        ok: problems.is_empty(),
        reason,
        problems,
    };
    let default = || crate::kube::VSO_DEFAULT_NAME.to_string();
    let found = match r {
        Some((ns, name)) => cluster.vso_object(kind, ns, name).await?,
        None => match cluster.vso_defaults(kind).await {
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
                let why = format!(
                    "VSO's default {} (`default` in the operator's namespace) cannot be looked for: {e}",
                    kind.kind
                );
                return Ok((check(None, default(), None, vec![why]), None));
            }
            Err(e) => return Err(e),
        },
    };
    let Some(o) = found else {
        let (namespace, name, what) = match r {
            Some((ns, n)) => (Some(ns.clone()), n.clone(), format!("{} `{ns}/{n}` does not exist", kind.kind)),
            None => (None, default(), format!(
                "no {} named `default` exists: VSO's default, used when nothing names one, is missing",
                kind.kind
            )),
        };
        return Ok((check(namespace, name, None, vec![what]), None));
    };
    let mut problems = Vec::new();
    if o.valid != Some(true) {
        problems.push(format!(
            "not valid (`status.valid` is {}){}",
            o.valid.map_or("unset".into(), |v| v.to_string()),
            o.error
                .as_ref()
                .map(|e| format!(": {}", one_line(e)))
                .unwrap_or_default()
        ));
    } else if o.healthy.as_ref().and_then(|c| c.ready) == Some(false) {
        problems.push(format!(
            "not Healthy{}",
            o.healthy
                .as_ref()
                .and_then(|c| c.message.as_ref())
                .map(|m| format!(": {}", one_line(m)))
                .unwrap_or_default()
        ));
    }
    let reason = match (&o.login, o.valid) {
        (Some(login), Some(true)) => format!("valid, {login}"),
        (None, Some(true)) => "valid".into(),
        _ => "invalid".into(),
    };
    let checked = check(
        Some(o.namespace.clone()),
        o.name.clone(),
        Some(reason),
        problems,
    );
    Ok((checked, Some(o)))
}

/// `: <first problem>`, or nothing.
fn first_problem(check: &ObjectCheck) -> String {
    check
        .problems
        .first()
        .map(|p| format!(": {p}"))
        .unwrap_or_default()
}

/// Vault's multi-line errors on one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
