//! The part `kube`: find the cluster as kubectl does, resolve the namespace of each object the
//! specs name, then run the cluster checks ([`super::eso`], [`super::vso`]) once, or again every
//! few seconds until they are done or `--wait` runs out.

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::delivery::Compare;
use super::eso::{self, EsoReport, Wanted};
use super::facts::Facts;
use super::findings::Finding;
use super::grants::PolicyPart;
use super::notes::RunNote;
use super::store;
use super::stuck::Stuck;
use super::vso::{self, vso_namespace, VssCheck};
use super::{Checked, Part, Progress, Request};
use crate::base::kv::KvVersion;
use crate::kube::{Cluster, KubeError, ReadKind};
use crate::seed::Inspection;
use crate::spec::mounts::Mounts;
use crate::spec::{EnvPlan, TargetIndex};
use crate::vault::Vault;
use tokio::sync::RwLock;

/// The first pause before the cluster is asked again while waiting.
const POLL: Duration = Duration::from_secs(2);
/// The longest pause between two polls.
const POLL_CAP: Duration = Duration::from_secs(15);
/// How many objects the waiting line names.
const NAMED: usize = 3;

/// The part's report.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterPart {
    /// Every cluster check passed.
    pub ok: bool,
    /// The API server.
    pub server: String,
    /// The kubeconfig context; `None` in a pod.
    pub context: Option<String>,
    /// ESO's objects (`external_secrets`, `objects`); VSO's VaultAuths and VaultConnections join
    /// `objects`.
    #[serde(flatten)]
    pub eso: EsoReport,
    /// VSO's VaultStaticSecrets.
    pub vault_static_secrets: Vec<VssCheck>,
}

impl Part for ClusterPart {
    fn ok(&self) -> bool {
        self.ok
    }
}

/// The ExternalSecrets and PushSecrets of `plan`, each in its namespace: the environment's
/// `kube_namespace`, else the spec's `[eso] namespace`, else the context's namespace.
pub fn wanted(plan: &EnvPlan<'_>, default_namespace: &str) -> Wanted {
    let mut wanted = Wanted {
        external_secrets: Vec::new(),
        push_secrets: Vec::new(),
        static_secrets: Vec::new(),
        skip_target_secrets: false,
    };
    let (mut seen, mut seen_static) = (HashSet::new(), HashSet::new());
    for (spec, env) in &plan.specs {
        let ns = store::eso_namespace(spec, env, default_namespace);
        for name in &spec.eso.external_secrets {
            if seen.insert((ns.clone(), name.clone())) {
                wanted.external_secrets.push((ns.clone(), name.clone()));
            }
        }
        for name in &spec.eso.push_secrets {
            wanted.push_secrets.push((ns.clone(), name.clone()));
        }
        if let Some(v) = &spec.vso {
            let ns = vso_namespace(v, env, default_namespace);
            for name in &v.static_secrets {
                if seen_static.insert((ns.clone(), name.clone())) {
                    wanted.static_secrets.push((ns.clone(), name.clone()));
                }
            }
        }
    }
    wanted
}

/// The kubeconfig context: `--context`, else the first `kube_context` the specs give.
pub fn context(plan: &EnvPlan<'_>, req: &Request) -> Option<String> {
    context_of(plan, req.context.as_deref())
}

/// The kubeconfig context: `given` (`--context`), else the first `kube_context` the specs give.
pub fn context_of(plan: &EnvPlan<'_>, given: Option<&str>) -> Option<String> {
    given
        .map(str::to_string)
        .or_else(|| plan.specs.iter().find_map(|(_, e)| e.kube_context.clone()))
}

/// The connection every cluster part shares, or why there is none (the error and one help
/// line: [`connect`]).
pub type Connected = Result<Cluster, (String, String)>;

/// What Vault's and the policy's parts found, from which each poll's [`Facts`] are gathered:
/// Vault's paths not yet valid are read again before each poll after the first.
pub struct Judged<'a> {
    /// What Vault holds.
    pub inspection: &'a RwLock<Inspection>,
    /// The targets by the names the cluster's objects give them.
    pub index: &'a TargetIndex<'a>,
    /// The part `policy`, when checked.
    pub policy: Option<&'a Checked<PolicyPart>>,
    /// Each mount's KV version as the server reports it.
    pub detected: &'a dyn Fn(&str) -> Option<KvVersion>,
    /// The mounts the paths are on.
    pub mounts: &'a Mounts,
}

impl Judged<'_> {
    /// Read again Vault's paths not yet valid (a path written while `--wait` lasts is judged).
    async fn reinspect(&self, vault: &Vault, plan: &EnvPlan<'_>, concurrency: usize) {
        let mut inspection = self.inspection.write().await;
        crate::seed::reinspect(
            vault,
            self.mounts,
            &plan.targets,
            concurrency,
            &mut inspection,
        )
        .await;
    }
}

/// Check (and wait) on the cluster `connected`. What was done and whether waiting ran out go to
/// `notes`. `vault` is the Vault vault-seed talked to: the stores are compared with it.
#[allow(clippy::too_many_arguments)]
pub async fn check(
    connected: &Connected,
    vault: &Vault,
    plan: &EnvPlan<'_>,
    judged: &Judged<'_>,
    compare: Option<&Compare<'_>>,
    req: &Request,
    progress: &dyn Fn(Progress<'_>),
    notes: &mut Vec<RunNote>,
) -> Checked<ClusterPart> {
    let cluster = match connected {
        Ok(c) => c,
        Err((error, help)) => return Checked::failed(error.clone(), Some(help.clone())),
    };
    let wanted = wanted_for(plan, cluster, req, notes);
    let expected = vso::Expected::of(plan, vault, cluster.default_namespace());
    let deadline = req.wait.map(|w| Instant::now() + w);
    let inputs = store::Inputs {
        vault,
        plan,
        default_namespace: cluster.default_namespace(),
        eso_token_given: req.eso_token.is_some(),
    };
    let digester = compare.map(Compare::digester);
    cluster
        .read_by_list(
            &list_kinds(&wanted),
            &namespaces(&wanted),
            digester,
            req.concurrency,
        )
        .await;
    if req.force_sync {
        let mut lines = eso::force_sync(cluster, &wanted).await;
        lines.extend(vso::force_sync(cluster, &wanted.static_secrets).await);
        for note in lines {
            progress(Progress::Did(&note.message()));
            notes.push(note);
        }
    }
    let (wanted, inputs, expected) = (&wanted, &inputs, &expected);
    let (result, ran_out) = poll(
        deadline,
        progress,
        |before: Option<ClusterPart>| async move {
            let done = match &before {
                Some(before) => {
                    reread(cluster, before, wanted, digester, req.concurrency).await;
                    judged.reinspect(vault, plan, req.concurrency).await;
                    // Each poll compares with Vault as it is then.
                    if let Some(c) = compare {
                        c.forget();
                    }
                    before.done()
                }
                None => eso::Done::new(),
            };
            let inspection = judged.inspection.read().await;
            let facts = Facts::gather(&inspection, judged.index, judged.policy, judged.detected);
            check_once(
                cluster, wanted, plan, &facts, inputs, expected, compare, &done,
            )
            .await
        },
        |k| !k.ok && k.stuck().is_none(),
        |k| k.how_far(wanted),
    )
    .await;
    wait_notes(req.wait, ran_out, &result, notes);
    match result {
        Ok(k) => Checked::Done(k),
        Err(e) => Checked::failed(e.to_string(), e.help()),
    }
}

/// What waiting `wait` ended in, for `notes`: the time ran out, or it stopped early because
/// what is not done cannot become done by waiting (named).
fn wait_notes(
    wait: Option<Duration>,
    ran_out: bool,
    result: &Result<ClusterPart, KubeError>,
    notes: &mut Vec<RunNote>,
) {
    let Some(wait) = wait else { return };
    if ran_out {
        notes.push(RunNote::WaitRanOut {
            wait,
            what: "not everything was Ready",
        });
    } else if let Some(stuck) = result.as_ref().ok().and_then(ClusterPart::stuck) {
        notes.push(RunNote::StoppedWaiting {
            causes: stuck.iter().map(Stuck::message).collect(),
        });
    }
}

/// The objects of `plan` in `cluster`; with `--skip-target-secrets` (a Role without `get
/// secrets`, which would also grant their values), their target Secrets left unread, noted.
fn wanted_for(
    plan: &EnvPlan<'_>,
    cluster: &Cluster,
    req: &Request,
    notes: &mut Vec<RunNote>,
) -> Wanted {
    let mut wanted = wanted(plan, cluster.default_namespace());
    if req.skip_target_secrets {
        wanted.skip_target_secrets = true;
        notes.push(RunNote::TargetSecretsNotRead);
    }
    wanted
}

/// List the ExternalSecrets and VaultStaticSecrets `plan` names (what is listed already is not
/// listed again).
pub(super) async fn list_objects(cluster: &Cluster, plan: &EnvPlan<'_>, concurrency: usize) {
    let mut wanted = wanted(plan, cluster.default_namespace());
    wanted.skip_target_secrets = true;
    let kinds = list_kinds(&wanted);
    cluster
        .read_by_list(&kinds, &namespaces(&wanted), None, concurrency)
        .await;
}

/// Forget the ExternalSecrets and VaultStaticSecrets `plan` names, once no part is left to read
/// them: a platform's are many to hold to the end of the run.
pub(super) fn forget_objects(cluster: &Cluster, plan: &EnvPlan<'_>) {
    let wanted = wanted(plan, cluster.default_namespace());
    cluster.forget(
        &[ReadKind::ExternalSecrets, ReadKind::VaultStaticSecrets],
        &namespaces(&wanted),
    );
}

/// The kinds the checks of `wanted` read.
fn list_kinds(wanted: &Wanted) -> Vec<ReadKind> {
    let mut kinds = Vec::new();
    if !wanted.external_secrets.is_empty() {
        kinds.push(ReadKind::ExternalSecrets);
    }
    if !wanted.static_secrets.is_empty() {
        kinds.push(ReadKind::VaultStaticSecrets);
    }
    if !wanted.skip_target_secrets {
        kinds.push(ReadKind::Secrets);
    }
    kinds
}

/// The namespaces of the objects `wanted` names.
fn namespaces(wanted: &Wanted) -> BTreeSet<String> {
    wanted
        .external_secrets
        .iter()
        .chain(&wanted.static_secrets)
        .map(|(ns, _)| ns.clone())
        .collect()
}

/// Read again what the poll `before` found not done: those ExternalSecrets and
/// VaultStaticSecrets, and their target Secrets.
async fn reread(
    cluster: &Cluster,
    before: &ClusterPart,
    wanted: &Wanted,
    digester: Option<&crate::base::digest::Digester>,
    concurrency: usize,
) {
    let es: Vec<&eso::EsCheck> = before
        .eso
        .external_secrets
        .iter()
        .filter(|e| !e.ok)
        .collect();
    let vss: Vec<&VssCheck> = before
        .vault_static_secrets
        .iter()
        .filter(|v| !v.ok)
        .collect();
    let names = |all: &mut dyn Iterator<Item = (&String, &String)>| -> Vec<(String, String)> {
        all.map(|(ns, name)| (ns.clone(), name.clone())).collect()
    };
    let objects = names(&mut es.iter().map(|e| (&e.namespace, &e.name)));
    let statics = names(&mut vss.iter().map(|v| (&v.namespace, &v.name)));
    let mut secrets = names(
        &mut es
            .iter()
            .filter_map(|e| Some((&e.namespace, e.target_secret.as_ref()?))),
    );
    secrets.extend(names(
        &mut vss
            .iter()
            .filter_map(|v| Some((&v.namespace, v.destination_secret.as_ref()?))),
    ));
    futures::join!(
        cluster.reread(ReadKind::ExternalSecrets, &objects, None, concurrency),
        cluster.reread(ReadKind::VaultStaticSecrets, &statics, None, concurrency),
        async {
            if !wanted.skip_target_secrets {
                cluster
                    .reread(ReadKind::Secrets, &secrets, digester, concurrency)
                    .await;
            }
        }
    );
}

/// Connect to the cluster of `plan` (see [`context`]); else the error and one help line: what
/// fixes the connection, or leaving the cluster out.
pub async fn connect(plan: &EnvPlan<'_>, req: &Request) -> Result<Cluster, (String, String)> {
    let context = context(plan, req);
    Cluster::connect(req.kubeconfig.as_deref(), context.as_deref())
        .await
        .map_err(|e| {
            let help = match e.help() {
                Some(h) => format!("{h}; or run with --skip-kube"),
                None => "run with --skip-kube to check Vault and the policy only".into(),
            };
            (e.to_string(), help)
        })
}

/// Run `check` once; with a `deadline`, again while it fails or `waiting` says time may help
/// and time is left, telling `progress` how far (`how_far`). Each run after the first is given
/// the result before it, so that it reads again only what was not done. The pause between runs
/// grows from [`POLL`] to [`POLL_CAP`]. Returns the last result and whether the time ran out
/// while still waiting.
pub async fn poll<T, F: Future<Output = Result<T, KubeError>>>(
    deadline: Option<Instant>,
    progress: &dyn Fn(Progress<'_>),
    check: impl Fn(Option<T>) -> F,
    waiting: impl Fn(&T) -> bool,
    how_far: impl Fn(&T) -> String,
) -> (Result<T, KubeError>, bool) {
    let mut pause = POLL;
    let mut before = None;
    loop {
        let result = check(before.take()).await;
        let wait = result.as_ref().map_or(true, &waiting);
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        match left {
            Some(left) if wait && !left.is_zero() => {
                let how_far = match &result {
                    Ok(t) => how_far(t),
                    Err(e) => format!("cluster error: {e}"),
                };
                progress(Progress::Waiting(&format!(
                    "waiting: {how_far}, {} left",
                    humantime::format_duration(Duration::from_secs(left.as_secs()))
                )));
                tokio::time::sleep(pause.min(left)).await;
                pause = next_pause(pause);
                before = result.ok();
            }
            _ => return (result, deadline.is_some() && wait),
        }
    }
}

/// The pause after `pause`: half as long again, up to [`POLL_CAP`].
fn next_pause(pause: Duration) -> Duration {
    (pause + pause / 2).min(POLL_CAP)
}

impl ClusterPart {
    /// The ExternalSecrets done, to keep in the next poll.
    fn done(&self) -> eso::Done {
        self.eso
            .external_secrets
            .iter()
            .filter(|e| e.ok)
            .map(|e| ((e.namespace.clone(), e.name.clone()), e.clone()))
            .collect()
    }

    /// When every object not done has a cause waiting cannot fix, those causes; `None` when one
    /// has none (or everything is done).
    pub fn stuck(&self) -> Option<Vec<Stuck>> {
        let mut all: Vec<Stuck> = Vec::new();
        let mut add = |s: &Stuck| {
            if !all.contains(s) {
                all.push(s.clone());
            }
        };
        for e in self.eso.external_secrets.iter().filter(|e| !e.ok) {
            if e.stuck.is_empty() {
                return None;
            }
            e.stuck.iter().for_each(&mut add);
        }
        for o in self.eso.objects.iter().filter(|o| !o.ok) {
            add(o.stuck.as_ref()?);
        }
        if self.vault_static_secrets.iter().any(|v| !v.ok) {
            return None;
        }
        (!all.is_empty()).then_some(all)
    }

    /// How far, for the waiting line: the counts, and the first few objects not done with
    /// their first problem.
    fn how_far(&self, wanted: &Wanted) -> String {
        let counts = match (
            wanted.external_secrets.is_empty(),
            wanted.static_secrets.is_empty(),
        ) {
            (false, true) | (true, true) => self.eso.progress(),
            (true, false) => progress_of_vso(&self.vault_static_secrets),
            (false, false) => format!(
                "{}, {}",
                self.eso.progress(),
                progress_of_vso(&self.vault_static_secrets)
            ),
        };
        let es = self.eso.external_secrets.iter().filter(|e| !e.ok).map(|e| {
            let why = e
                .verdict
                .problems()
                .first()
                .map(String::as_str)
                .unwrap_or("not done");
            format!("ExternalSecret {}/{} ({why})", e.namespace, e.name)
        });
        let vss = self.vault_static_secrets.iter().filter(|v| !v.ok).map(|v| {
            let why = v
                .verdict
                .problems()
                .first()
                .map(String::as_str)
                .unwrap_or("not done");
            format!("VaultStaticSecret {}/{} ({why})", v.namespace, v.name)
        });
        let objects = self.eso.objects.iter().filter(|o| !o.ok).map(|o| {
            let why = o
                .verdict
                .problems()
                .first()
                .map(String::as_str)
                .unwrap_or("not Ready");
            let shown = match &o.namespace {
                Some(ns) => format!("{ns}/{}", o.name),
                None => o.name.clone(),
            };
            format!("{} {shown} ({why})", o.kind)
        });
        format!("{counts}{}", named(es.chain(vss).chain(objects)))
    }
}

/// `; waiting for A, B, C and N more`, naming the first [`NAMED`] of `all`; empty when none.
pub fn named(all: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = all.collect();
    if all.is_empty() {
        return String::new();
    }
    let more = all.len().saturating_sub(NAMED);
    let first = all.into_iter().take(NAMED).collect::<Vec<_>>().join(", ");
    match more {
        0 => format!("; waiting for {first}"),
        n => format!("; waiting for {first} and {n} more"),
    }
}

/// Every cluster check, once. A new check (VSO's VaultStaticSecrets) is a field of
/// [`ClusterPart`] and a line here.
#[allow(clippy::too_many_arguments)]
async fn check_once(
    cluster: &Cluster,
    wanted: &Wanted,
    plan: &EnvPlan<'_>,
    facts: &Facts<'_>,
    inputs: &store::Inputs<'_>,
    expected: &vso::Expected,
    compare: Option<&Compare<'_>>,
    done: &eso::Done,
) -> Result<ClusterPart, KubeError> {
    let mut eso = eso::check(cluster, wanted, &plan.targets, facts, inputs, compare, done).await?;
    let vso = vso::check(
        cluster,
        &wanted.static_secrets,
        wanted.skip_target_secrets,
        facts,
        expected,
    )
    .await?;
    let ok = eso.ok() && vso.ok();
    eso.objects.extend(vso.objects);
    Ok(ClusterPart {
        ok,
        server: cluster.server().to_string(),
        context: cluster.context().map(str::to_string),
        eso,
        vault_static_secrets: vso.vault_static_secrets,
    })
}

fn progress_of_vso(checks: &[VssCheck]) -> String {
    format!(
        "{}/{} VaultStaticSecret(s) done",
        checks.iter().filter(|v| v.ok).count(),
        checks.len()
    )
}
