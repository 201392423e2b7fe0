//! The ESO check of `verify`'s cluster part: are the spec's ExternalSecrets Ready, synced after seeding,
//! with every key in their target Secret, reading only paths the spec knows? When one is not
//! Ready, say why from what vault-seed sees itself and from its Warning events, since ESO's
//! condition message is generic ("could not get secret data from provider").

use std::collections::BTreeSet;

use serde::Serialize;
use time::OffsetDateTime;

use super::facts::Facts;
use crate::kube::{EsoCluster, KubeError, StoreKind};
use crate::seed::Status;
use crate::spec::Target;

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

/// Check everything once.
pub async fn check(
    cluster: &EsoCluster,
    wanted: &Wanted,
    targets: &[Target],
    facts: &Facts<'_>,
) -> Result<EsoReport, KubeError> {
    let provided = provided_checks(cluster, targets, facts).await;
    let mut external_secrets = Vec::new();
    let mut stores: BTreeSet<(Option<String>, StoreKind, String)> = BTreeSet::new();
    for (ns, name) in &wanted.external_secrets {
        let check = match cluster.external_secret(ns, name).await? {
            None => EsCheck {
                namespace: ns.clone(),
                name: name.clone(),
                ok: false,
                api_version: None,
                ready: None,
                reason: None,
                message: None,
                refresh_time: None,
                target_secret: None,
                problems: vec![format!(
                    "ExternalSecret `{ns}/{name}` does not exist (is the secrets app synced?)"
                )],
                explanations: Vec::new(),
            },
            Some(es) => {
                let mut problems = Vec::new();
                let mut explanations = Vec::new();
                // Each remoteRef must be a path and field of the spec, present in Vault.
                let mut newest_created: Option<OffsetDateTime> = None;
                for r in &es.data {
                    let key = r.key.trim_start_matches('/');
                    let Some(t) = targets
                        .iter()
                        .find(|t| &*t.path == key || t.full_path() == key)
                    else {
                        problems.push(format!(
                            "remoteRef `{}` (secretKey `{}`) is not a path of the spec",
                            r.key, r.secret_key
                        ));
                        continue;
                    };
                    if let Some(p) = &r.property {
                        if !t.fields.iter().any(|f| &f.name == p) {
                            problems.push(format!(
                                "remoteRef `{}` property `{p}` is not a field of the spec",
                                r.key
                            ));
                            continue;
                        }
                    }
                    let f = facts.get(&t.full_path()).unwrap_or_default();
                    newest_created = newest_created.max(f.created);
                    let fields: Vec<&String> = match &r.property {
                        Some(p) => vec![p],
                        None => t.fields.iter().map(|f| &f.name).collect(),
                    };
                    for field in fields {
                        match f.fields.get(field) {
                            Some(Status::Valid) | None => {}
                            Some(Status::Pending) => explanations.push(format!(
                                "`{}` field `{field}` is still a placeholder",
                                t.full_path()
                            )),
                            Some(other) => explanations.push(format!(
                                "`{}` field `{field}` is {other} in Vault",
                                t.full_path()
                            )),
                        }
                    }
                    // A provided path not yet right: who makes it, and what its PushSecret says.
                    if let Some(pc) = provided.iter().find(|p| !p.ok && p.path == t.full_path()) {
                        explanations.extend(pc.explanations.iter().cloned());
                    }
                    if !f.policy_missing.is_empty() {
                        let missing: Vec<&str> =
                            f.policy_missing.iter().map(|c| c.as_str()).collect();
                        explanations.push(format!(
                            "ESO's policy does not grant `{}` on `{}`",
                            missing.join("`, `"),
                            f.data_path
                        ));
                    }
                }
                if es.has_data_from {
                    explanations.push(
                        "it also uses `dataFrom`, which vault-seed does not cross-check".into(),
                    );
                }
                match es.condition.ready {
                    Some(true) => match (es.refresh_time, newest_created) {
                        (Some(refreshed), Some(created)) if refreshed < created => problems.insert(0, format!(
                            "Ready, but last synced at {} — before the secret was created in Vault at {}: the Ready is from before seeding (try --force-sync)",
                            rfc3339(refreshed), rfc3339(created)
                        )),
                        (None, _) => problems.insert(0, "Ready, but it has no `refreshTime`: it never synced".into()),
                        _ => {}
                    },
                    _ => {
                        problems.insert(0, format!(
                            "not Ready: {}{}",
                            es.condition.reason.clone().unwrap_or_else(|| "no Ready condition yet".into()),
                            es.condition.message.as_ref().map(|m| format!(": {m}")).unwrap_or_default()
                        ));
                        for ev in cluster.warning_events(ns, "ExternalSecret", name).await?.into_iter().take(3) {
                            explanations.push(format!(
                                "event {}: {}",
                                ev.reason.unwrap_or_default(),
                                ev.message.unwrap_or_default()
                            ));
                        }
                    }
                }
                // The target Secret exists and has every key the ExternalSecret maps; unless
                // reading Secrets is not allowed (a Role without `get secrets`).
                let keys = if wanted.skip_target_secrets {
                    None
                } else {
                    Some(cluster.secret_keys(ns, &es.target_secret).await?)
                };
                match keys {
                    None => {}
                    Some(None) => problems.push(format!(
                        "target Secret `{ns}/{}` does not exist",
                        es.target_secret
                    )),
                    Some(Some(keys)) => {
                        let missing: Vec<&str> = es
                            .data
                            .iter()
                            .map(|r| r.secret_key.as_str())
                            .filter(|k| !keys.iter().any(|x| x == k))
                            .collect();
                        if !missing.is_empty() {
                            problems.push(format!(
                                "target Secret `{ns}/{}` lacks key(s) `{}`",
                                es.target_secret,
                                missing.join("`, `")
                            ));
                        }
                    }
                }
                if let Some(store) = &es.store_ref {
                    let kind = store.kind.unwrap_or(StoreKind::SecretStore);
                    let store_ns = (kind == StoreKind::SecretStore).then(|| ns.clone());
                    stores.insert((store_ns, kind, store.name.clone()));
                }
                EsCheck {
                    namespace: ns.clone(),
                    name: name.clone(),
                    ok: problems.is_empty(),
                    api_version: Some(es.api_version),
                    ready: es.condition.ready,
                    reason: es.condition.reason,
                    message: es.condition.message,
                    refresh_time: es.refresh_time,
                    target_secret: Some(es.target_secret),
                    problems,
                    explanations,
                }
            }
        };
        external_secrets.push(check);
    }
    let mut objects = Vec::new();
    for (ns, name) in &wanted.push_secrets {
        let (ok, reason, problems) = match cluster.push_secret(ns, name).await? {
            None => (
                false,
                None,
                vec![format!("PushSecret `{ns}/{name}` does not exist")],
            ),
            Some(ps) if ps.condition.ready == Some(true) => (true, ps.condition.reason, Vec::new()),
            Some(ps) => (
                false,
                ps.condition.reason.clone(),
                vec![format!(
                    "not Ready: {}{}",
                    ps.condition.reason.unwrap_or_default(),
                    ps.condition
                        .message
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                )],
            ),
        };
        objects.push(ObjectCheck {
            kind: "PushSecret".into(),
            namespace: Some(ns.clone()),
            name: name.clone(),
            ok,
            reason,
            problems,
        });
    }
    for (ns, kind, name) in stores {
        let (ok, reason, problems) = match cluster
            .secret_store(ns.as_deref().unwrap_or(""), kind, &name)
            .await?
        {
            None => (
                false,
                None,
                vec![format!("{} `{name}` does not exist", kind.kind())],
            ),
            Some(s) if s.condition.ready == Some(true) => (true, s.condition.reason, Vec::new()),
            Some(s) => (
                false,
                s.condition.reason.clone(),
                vec![format!(
                    "not Ready: {}{}",
                    s.condition.reason.unwrap_or_default(),
                    s.condition
                        .message
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                )],
            ),
        };
        objects.push(ObjectCheck {
            kind: kind.kind().into(),
            namespace: ns,
            name,
            ok,
            reason,
            problems,
        });
    }
    // Sentences that quote the cluster (a remoteRef, a condition message) stay bounded in JSON
    // too.
    let bound = |lines: &mut Vec<String>| {
        for line in lines.iter_mut() {
            if let std::borrow::Cow::Owned(c) = crate::report::text::cap(line) {
                *line = c;
            }
        }
    };
    for e in &mut external_secrets {
        bound(&mut e.problems);
        bound(&mut e.explanations);
    }
    for o in &mut objects {
        bound(&mut o.problems);
    }
    Ok(EsoReport {
        external_secrets,
        objects,
        provided,
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
        if !seen.insert(path.clone()) {
            continue;
        }
        let f = facts.get(&path).unwrap_or_default();
        let wrong: Vec<(&String, Status)> = f
            .fields
            .iter()
            .filter(|(_, s)| !matches!(s, Status::Valid | Status::Pending))
            .map(|(k, s)| (k, *s))
            .collect();
        let mut check = ProvidedCheck {
            path: path.clone(),
            provided_by: p.by.clone(),
            ok: wrong.is_empty() && !f.fields.is_empty(),
            push_secret: p.push_secret.as_ref().map(|(n, m)| format!("{n}/{m}")),
            ready: None,
            reason: None,
            message: None,
            event: None,
            explanations: Vec::new(),
        };
        if check.ok {
            out.push(check);
            continue;
        }
        let state = match wrong.first() {
            Some((_, Status::Invalid)) => "is invalid in Vault",
            Some((_, Status::Denied)) => "cannot be read by vault-seed",
            _ => "is not in Vault yet",
        };
        check
            .explanations
            .push(format!("`{path}` {state}: it is provided by {}", p.by));
        if let Some((ns, name)) = &p.push_secret {
            match cluster.push_secret(ns, name).await {
                Ok(None) => check.explanations.push(format!(
                    "PushSecret `{ns}/{name}` does not exist (has its app synced?)"
                )),
                Ok(Some(ps)) => {
                    check.ready = ps.condition.ready;
                    check.reason = ps.condition.reason.clone();
                    check.message = ps.condition.message.clone();
                    let state = match ps.condition.ready {
                        Some(true) => "Ready".to_string(),
                        Some(false) => "not Ready".to_string(),
                        None => "no Ready condition yet".to_string(),
                    };
                    check.explanations.push(format!(
                        "PushSecret `{ns}/{name}`: {state}{}{}",
                        ps.condition
                            .reason
                            .map(|r| format!(" ({r})"))
                            .unwrap_or_default(),
                        ps.condition
                            .message
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default()
                    ));
                }
                Err(e) => check
                    .explanations
                    .push(format!("cannot read PushSecret `{ns}/{name}`: {e}")),
            }
            match cluster.warning_events(ns, "PushSecret", name).await {
                Ok(events) => {
                    if let Some(ev) = events.into_iter().next() {
                        let line = format!(
                            "{}: {}",
                            ev.reason.unwrap_or_default(),
                            ev.message.unwrap_or_default()
                        );
                        check.explanations.push(format!(
                            "PushSecret `{ns}/{name}` latest Warning event {line}"
                        ));
                        check.event = Some(line);
                    }
                }
                Err(e) => check.explanations.push(format!(
                    "cannot read the events of PushSecret `{ns}/{name}`: {e}"
                )),
            }
        }
        for line in check.explanations.iter_mut() {
            if let std::borrow::Cow::Owned(c) = crate::report::text::cap(line) {
                *line = c;
            }
        }
        out.push(check);
    }
    out
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
