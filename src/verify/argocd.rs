//! The part `argocd`: the sync-wave runbook's verification (its section 6) done by the tool.
//! For each spec with an `[argocd]` section, through the Kubernetes API:
//!
//! - the secrets app (the Application that creates the ExternalSecrets) exists, is `Synced` and
//!   `Healthy`, and manages the spec's ExternalSecrets;
//! - each consumer Application's app wave is higher than the secrets app's, under the same
//!   app-of-apps (sync waves order only the resources of one app's sync);
//! - `argocd-cm` has a health check for `argoproj.io/Application`, without which app waves do
//!   not wait for Healthy (removed in Argo CD 1.8; docs `operator-manual/health.md`).
//!
//! The wave and the health-check rules are the offline `order` command's
//! ([`crate::model::argo::wave`], [`crate::model::argocd_cm`]). `--wait` waits while the only
//! problems are ones that time can fix (the secrets app Progressing, OutOfSync, Degraded while
//! ESO retries, not created yet), not for a wrong wave or a missing health check.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde::Serialize;

use super::findings::{Code, Finding, Severity, Shape, Verdict};
use super::{Checked, Part, Progress, Request};
use crate::kube::{
    AppLookup, AppResource, ApplicationInfo, Cluster, KubeError, OperationInfo, ReadKind,
};
use crate::spec::EnvPlan;

/// At most this many resources that are not Healthy are listed per app.
const UNHEALTHY_SHOWN: usize = 10;
/// Argo CD's ConfigMap of settings (`common.ArgoCDConfigMapName`).
const ARGOCD_CM: &str = "argocd-cm";
/// The documented key of the Application health check (docs `operator-manual/health.md`).
const HEALTH_KEY: &str = "resource.customizations.health.argoproj.io_Application";

/// A problem and what to do about it.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// What is wrong, in the runbook's terms.
    pub message: String,
    /// What to do.
    pub help: String,
    /// Whether time may fix it (a sync or ESO's retries): `--wait` waits only for these.
    #[serde(skip)]
    pub waitable: bool,
}

impl crate::verify::findings::Said for Problem {
    fn said(&self) -> &str {
        &self.message
    }
}

impl Problem {
    fn new(message: String, help: String) -> Problem {
        Problem {
            message,
            help,
            waitable: false,
        }
    }
}

/// One Application's check.
#[derive(Debug, Clone, Serialize)]
pub struct AppCheck {
    /// Argo CD's namespace.
    pub namespace: String,
    /// The Application's name.
    pub name: String,
    /// `secrets` (the secrets app) or `consumer`.
    pub role: &'static str,
    /// For a consumer: the secrets apps it must sync after.
    pub after: Vec<String>,
    /// Everything about it is right.
    pub ok: bool,
    /// Whether it exists.
    pub exists: bool,
    /// Its wave in its app-of-apps (`argocd.argoproj.io/sync-wave`, default 0).
    pub app_wave: Option<i64>,
    /// The app-of-apps that manages it (its tracking annotation or label).
    pub parent: Option<String>,
    /// `status.sync.status`: `Synced`, `OutOfSync`, `Unknown`.
    pub sync: Option<String>,
    /// `status.health.status`: `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing`,
    /// `Unknown`.
    pub health: Option<String>,
    /// The last or running operation.
    pub operation: Option<OperationInfo>,
    /// Its resources that are not Healthy (when Argo CD persists resource health).
    pub unhealthy: Vec<AppResource>,
    /// What is wrong (`problems`, each with what to do) and what explains its state (`notes`:
    /// its operation, conditions, sources, not failures); `findings` with their codes.
    #[serde(flatten)]
    pub verdict: Verdict<Problem>,
    /// What was found, from which `verdict` is made once every check ran.
    #[serde(skip)]
    findings: Vec<AppFinding>,
}

/// argocd-cm's check, per Argo CD namespace.
#[derive(Debug, Clone, Serialize)]
pub struct CmCheck {
    /// Argo CD's namespace.
    pub namespace: String,
    /// `argocd-cm`.
    pub name: &'static str,
    /// It has the Application health check.
    pub ok: bool,
    /// Whether it exists.
    pub exists: bool,
    /// The key that holds the health check.
    pub key: Option<String>,
    /// What is wrong (`problems`, each with what to do); `findings` with their codes.
    #[serde(flatten)]
    pub verdict: Verdict<Problem>,
}

/// The part's report.
#[derive(Debug, Clone, Serialize)]
pub struct ArgocdPart {
    /// Every check passed.
    pub ok: bool,
    /// The API server.
    pub server: String,
    /// The kubeconfig context; `None` in a pod.
    pub context: Option<String>,
    /// The Applications: each secrets app, then its consumers.
    pub apps: Vec<AppCheck>,
    /// argocd-cm of each Argo CD namespace whose app waves are relied on.
    pub argocd_cm: Vec<CmCheck>,
}

impl Part for ArgocdPart {
    fn ok(&self) -> bool {
        self.ok
    }
}

impl ArgocdPart {
    fn problems(&self) -> impl Iterator<Item = &Problem> {
        self.apps
            .iter()
            .flat_map(|a| a.verdict.problems())
            .chain(self.argocd_cm.iter().flat_map(|c| c.verdict.problems()))
    }

    /// Whether waiting can help: something is wrong, and only things that time may fix.
    fn worth_waiting(&self) -> bool {
        !self.ok && self.problems().all(|p| p.waitable)
    }

    /// The secrets apps' states, for progress while waiting.
    fn progress(&self) -> String {
        let states: Vec<String> = self
            .apps
            .iter()
            .filter(|a| a.role == "secrets")
            .map(|a| match (&a.sync, &a.health) {
                _ if !a.exists => format!("Application {} does not exist", a.name),
                (s, h) => format!(
                    "Application {} {}, {}",
                    a.name,
                    s.as_deref().unwrap_or("no sync status"),
                    h.as_deref().unwrap_or("no health")
                ),
            })
            .collect();
        states.join("; ")
    }
}

/// One spec's `[argocd]`, resolved for the environment.
#[derive(Debug, Clone)]
struct Layout {
    namespace: String,
    secrets_app: String,
    consumers: Vec<String>,
    /// The spec's ExternalSecrets as `(namespace if the spec names one, name)`.
    external_secrets: Vec<(Option<String>, String)>,
    spec_file: String,
    /// The environment.
    env: String,
}

fn layouts(plan: &EnvPlan<'_>) -> Vec<Layout> {
    let mut out: Vec<Layout> = Vec::new();
    for (spec, env) in &plan.specs {
        let Some(a) = &spec.argocd else { continue };
        let ns = env
            .kube_namespace
            .clone()
            .or_else(|| spec.eso.namespace.clone());
        let layout = Layout {
            namespace: a.namespace.clone(),
            secrets_app: a.secrets_app(&plan.env),
            consumers: a.consumers(&plan.env),
            external_secrets: spec
                .eso
                .external_secrets
                .iter()
                .map(|n| (ns.clone(), n.clone()))
                .collect(),
            spec_file: spec.file.display().to_string(),
            env: plan.env.clone(),
        };
        // Two specs naming one secrets app (two applications' secrets in one secrets app).
        match out
            .iter_mut()
            .find(|l| l.namespace == layout.namespace && l.secrets_app == layout.secrets_app)
        {
            Some(l) => {
                for c in layout.consumers {
                    if !l.consumers.contains(&c) {
                        l.consumers.push(c);
                    }
                }
                l.external_secrets.extend(layout.external_secrets);
            }
            None => out.push(layout),
        }
    }
    out
}

/// Whether a spec of the plan has an `[argocd]` section.
pub fn configured(plan: &EnvPlan<'_>) -> bool {
    plan.specs.iter().any(|(s, _)| s.argocd.is_some())
}

/// Connect, then check, and with `--wait` check again until done, until only problems that time
/// cannot fix remain, or until `deadline`. Whether waiting ran out goes to `notes`.
pub async fn check(
    connected: &super::cluster::Connected,
    plan: &EnvPlan<'_>,
    req: &Request,
    deadline: Option<Instant>,
    progress: &dyn Fn(Progress<'_>),
    notes: &mut Vec<super::notes::RunNote>,
) -> Checked<ArgocdPart> {
    let cluster = match connected {
        Ok(c) => c,
        Err((error, help)) => return Checked::failed(error.clone(), Some(help.clone())),
    };
    let layouts = layouts(plan);
    let namespaces: BTreeSet<String> = layouts.iter().map(|l| l.namespace.clone()).collect();
    let (layouts, namespaces) = (&layouts, &namespaces);
    let apps = [ReadKind::Applications];
    let (result, ran_out) = super::cluster::poll(
        deadline,
        progress,
        |before: Option<ArgocdPart>| async move {
            // One LIST of Applications per namespace, not a GET per Application; each later
            // poll lists them again.
            match before {
                None => {
                    cluster
                        .read_by_list(&apps, namespaces, None, req.concurrency)
                        .await
                }
                Some(_) => {
                    cluster
                        .relist(&apps, namespaces, None, req.concurrency)
                        .await
                }
            }
            check_once(cluster, layouts).await
        },
        ArgocdPart::worth_waiting,
        ArgocdPart::progress,
    )
    .await;
    if let (Some(wait), true) = (req.wait, ran_out) {
        notes.push(super::notes::RunNote::WaitRanOut {
            wait,
            what: "the secrets app was not Synced and Healthy",
        });
    }
    match result {
        Ok(p) => Checked::Done(p),
        Err(e) => Checked::failed(e.to_string(), e.help()),
    }
}

/// Every check, once.
async fn check_once(cluster: &Cluster, layouts: &[Layout]) -> Result<ArgocdPart, KubeError> {
    let mut found: BTreeMap<(String, String), AppLookup> = BTreeMap::new();
    for l in layouts {
        for name in std::iter::once(&l.secrets_app).chain(&l.consumers) {
            let key = (l.namespace.clone(), name.clone());
            if let std::collections::btree_map::Entry::Vacant(slot) = found.entry(key) {
                slot.insert(cluster.application(&l.namespace, name).await?);
            }
        }
    }
    let lookup = |ns: &str, name: &str| &found[&(ns.to_string(), name.to_string())];
    let mut apps: Vec<AppCheck> = Vec::new();
    for l in layouts {
        apps.push(secrets_app(l, lookup(&l.namespace, &l.secrets_app)));
    }
    // Each consumer's check by (namespace, name), once however many layouts name it.
    let mut consumers: BTreeMap<(String, String), usize> = BTreeMap::new();
    for l in layouts {
        let secrets = match lookup(&l.namespace, &l.secrets_app) {
            AppLookup::Found(a) => Some(&**a),
            _ => None,
        };
        for c in &l.consumers {
            let after = l.secrets_app.clone();
            let key = (l.namespace.clone(), c.clone());
            if let Some(existing) = consumers.get(&key).and_then(|&i| apps.get_mut(i)) {
                existing.after.push(after);
                consumer_order(existing, lookup(&l.namespace, c), secrets, &l.secrets_app);
                continue;
            }
            let mut check = consumer(l, c, lookup(&l.namespace, c));
            consumer_order(&mut check, lookup(&l.namespace, c), secrets, &l.secrets_app);
            consumers.insert(key, apps.len());
            apps.push(check);
        }
    }
    let mut argocd_cm = Vec::new();
    let mut namespaces: Vec<&str> = layouts
        .iter()
        .filter(|l| !l.consumers.is_empty())
        .map(|l| l.namespace.as_str())
        .collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    for ns in namespaces {
        let cm = cluster.argocd_cm(ns, ARGOCD_CM).await?;
        argocd_cm.push(cm_check(ns, cm.as_ref(), &apps));
    }
    for a in &mut apps {
        a.verdict = verdict(&a.findings);
        a.ok = a.verdict.is_clean();
    }
    let ok = apps.iter().all(|a| a.ok) && argocd_cm.iter().all(|c| c.ok);
    Ok(ArgocdPart {
        ok,
        server: cluster.server().to_string(),
        context: cluster.context().map(str::to_string),
        apps,
        argocd_cm,
    })
}

/// What the checks of an Application find. Problems say what to do (`help`) and whether time
/// may fix them (`waitable`); notes explain its state.
#[derive(Debug, Clone)]
enum AppFinding {
    /// The cluster serves no Application.
    NotServed,
    /// The secrets app does not exist (`consumers`: its consumers, as listed).
    SecretsAppMissing {
        namespace: String,
        name: String,
        consumers: String,
        spec_file: String,
    },
    /// A consumer does not exist.
    ConsumerMissing {
        namespace: String,
        name: String,
        secrets_app: String,
        spec_file: String,
    },
    /// The secrets app is OutOfSync.
    OutOfSync { name: String },
    /// The secrets app is not Synced otherwise.
    NotSynced { name: String, sync: Option<String> },
    /// The secrets app is Progressing.
    Progressing { name: String, consumers: String },
    /// The secrets app is Degraded.
    Degraded {
        name: String,
        consumers: String,
        env: String,
    },
    /// None of the secrets app's resources exist.
    HealthMissing { name: String },
    /// The secrets app is not Healthy otherwise.
    NotHealthy {
        name: String,
        health: Option<String>,
        consumers: String,
    },
    /// The secrets app does not manage the spec's ExternalSecrets (`list`: them; `why`: an
    /// empty source).
    Unmanaged {
        name: String,
        list: String,
        why: String,
        spec_file: String,
    },
    /// A consumer's app wave is not after the secrets app's.
    WaveNotAfter {
        name: String,
        wave: i64,
        secrets_app: String,
        secrets_wave: i64,
    },
    /// A consumer and the secrets app have different app-of-apps.
    OtherParent {
        name: String,
        parent: String,
        secrets_app: String,
        secrets_parent: String,
    },
    /// Note: its operation (`phase`, lowercase; `last`: finished).
    Operation {
        phase: String,
        last: bool,
        message: String,
    },
    /// Note: one of its conditions.
    Condition { kind: String, message: String },
    /// Note: more resources not Healthy than are listed.
    MoreUnhealthy { name: String, more: usize },
    /// Note: `name` is not Healthy and Argo CD keeps its resources' health out of the
    /// Application, so which resource is at fault is not listed.
    HealthNotPersisted { name: String },
    /// Note: no tracking names the app-of-apps of `name`.
    NoTracking { name: String, secrets_app: String },
}

crate::base::codes::codes!(
    AppFinding,
    AppFinding {
        NotServed => "argocd-not-served",
        SecretsAppMissing => "secrets-app-missing",
        ConsumerMissing => "consumer-app-missing",
        OutOfSync => "out-of-sync",
        NotSynced => "not-synced",
        Progressing => "progressing",
        Degraded => "degraded",
        HealthMissing => "resources-missing",
        NotHealthy => "not-healthy",
        Unmanaged => "external-secrets-unmanaged",
        WaveNotAfter => "wave-not-after",
        OtherParent => "other-parent",
        Operation => "operation",
        Condition => "condition",
        MoreUnhealthy => "more-unhealthy",
        HealthNotPersisted => "health-not-persisted",
        NoTracking => "no-tracking",
    }
);

impl Finding for AppFinding {
    fn severity(&self) -> Severity {
        use AppFinding::*;
        match self {
            Operation { .. }
            | Condition { .. }
            | MoreUnhealthy { .. }
            | HealthNotPersisted { .. }
            | NoTracking { .. } => Severity::Note,
            _ => Severity::Problem,
        }
    }

    fn message(&self) -> String {
        use AppFinding::*;
        match self {
            NotServed => "the cluster serves no Argo CD Application (`argoproj.io/v1alpha1`): Argo CD is not \
                 installed in this cluster"
                .into(),
            SecretsAppMissing { namespace, name, .. } => format!(
                "Application `{namespace}/{name}` does not exist: the secrets app that creates the \
                 ExternalSecrets has not been created"
            ),
            ConsumerMissing { namespace, name, secrets_app, .. } => format!(
                "Application `{namespace}/{name}` does not exist, so its app wave cannot be checked \
                 against the secrets app `{secrets_app}`"
            ),
            OutOfSync { name } => format!(
                "the secrets app `{name}` is OutOfSync: what Git holds for it (the \
                 ExternalSecrets) is not all applied"
            ),
            NotSynced { name, sync } => format!(
                "the secrets app `{name}` is not Synced ({}): Argo CD has not compared it \
                 with Git",
                sync.as_deref().unwrap_or("no sync status yet")
            ),
            Progressing { name, consumers } => format!(
                "the secrets app `{name}` is Progressing, not Healthy: its ExternalSecrets are not \
                 all Ready yet, and the app-of-apps holds {consumers} back until it is"
            ),
            Degraded { name, consumers, .. } => format!(
                "the secrets app `{name}` is Degraded: an ExternalSecret's Ready condition is \
                 False (ESO cannot read its Vault path), and the app-of-apps fails its sync at \
                 this app wave, so {consumers} cannot start"
            ),
            HealthMissing { name } => format!(
                "the secrets app `{name}` is Missing: none of its resources exist in the cluster \
                 (it has not synced)"
            ),
            NotHealthy { name, health, consumers } => format!(
                "the secrets app `{name}` is {}, not Healthy, so the app-of-apps holds \
                 {consumers} back",
                health.as_deref().unwrap_or("without a health status")
            ),
            Unmanaged { name, list, why, .. } => format!(
                "the secrets app `{name}` does not manage ExternalSecret {list}{why}: Argo CD \
                 never applies it, so its Secret never exists (the runbook's bug 1)"
            ),
            WaveNotAfter { name, wave, secrets_app, secrets_wave } => format!(
                "Application `{name}` is at app wave {wave}, not after the secrets app \
                 `{secrets_app}` (app wave {secrets_wave}): the app-of-apps may start {name} before its \
                 secrets exist (the runbook's bug 1: CreateContainerConfigError, and PreSync \
                 hooks without their Secret)"
            ),
            OtherParent { name, parent, secrets_app, secrets_parent } => format!(
                "Application `{name}` is managed by `{parent}` and the secrets app `{secrets_app}` \
                 by `{secrets_parent}`: sync waves order only the children of one app-of-apps, so nothing \
                 makes {name} wait for its secrets"
            ),
            Operation { phase, last: false, message } => format!("sync {phase}: {message}"),
            Operation { phase, last: true, message } => format!("last sync {phase}: {message}"),
            Condition { kind, message } => format!("{kind}: {message}"),
            MoreUnhealthy { name, more } => format!(
                "{more} more resources are not Healthy (`argocd app get {name}` lists them)"
            ),
            HealthNotPersisted { name } => format!(
                "Argo CD keeps its resources' health out of the Application \
                 (`status.resourceHealthSource: appTree`, the default since 3.0): \
                 `argocd app get {name}` shows which resource is not Healthy"
            ),
            NoTracking { name, secrets_app } => format!(
                "no tracking annotation or label names the app-of-apps of `{name}`: app waves order it \
                 only as a child of the same app-of-apps as `{secrets_app}`"
            ),
        }
    }
}

impl AppFinding {
    /// What to do about a problem.
    fn help(&self) -> String {
        use AppFinding::*;
        match self {
            NotServed => "check the kubeconfig context (`--context`, the environment's `kube_context`), or \
             run with --skip-kube"
                .into(),
            SecretsAppMissing { consumers, spec_file, .. } => format!(
                "add it to the app-of-apps at a lower app wave than {consumers} (the runbook: \
                 core-service-secrets at wave \"0\", core-service at \"1\") and sync the parent; \
                 or correct `[argocd] secrets_app` in `{spec_file}`"
            ),
            ConsumerMissing { spec_file, .. } => format!(
                "sync the app-of-apps that creates it, or correct `[argocd] consumers` in `{spec_file}`"
            ),
            OutOfSync { name } => format!(
                "sync it (`argocd app sync {name}`), or wait for its automated sync \
                 (`verify --wait 5m`)"
            ),
            NotSynced { .. } => "see its conditions (`argocd app get` or `kubectl describe application`); wait \
                 for Argo CD to reconcile it"
                .into(),
            Progressing { .. } => "wait (`verify --wait 5m`): ESO retries (the runbook: it stays Progressing until \
             ask-db has pushed the DB passwords to Vault); if it does not change, the part `kube` \
             says why an ExternalSecret is not Ready"
                .into(),
            Degraded { env, .. } => format!(
                "the part `kube` (`verify --only kube`) says why the ExternalSecret is not \
                 Ready: `vault-seed apply {env}` creates missing paths, `vault-seed policy {env}` \
                 prints the grant ESO needs; ESO retries, then Argo CD syncs again"
            ),
            HealthMissing { name } => format!("sync it (`argocd app sync {name}`)"),
            NotHealthy { name, .. } => format!("see its resources (`argocd app get {name}`)"),
            Unmanaged { name, spec_file, .. } => format!(
                "give `{name}` a source whose path holds the ExternalSecrets (a `ref` source \
                 without `path` only provides value files), or correct `[eso] external_secrets` \
                 in `{spec_file}`"
            ),
            WaveNotAfter { name, secrets_wave, .. } => format!(
                "annotate `{name}` with `argocd.argoproj.io/sync-wave: \"{}\"` (any wave above \
                 {secrets_wave}) in the app-of-apps, as the runbook puts core-service at \"1\" after \
                 core-service-secrets at \"0\"",
                secrets_wave + 1
            ),
            OtherParent { name, secrets_app, .. } => {
                format!("make `{name}` and `{secrets_app}` children of one app-of-apps")
            }
            Operation { .. }
            | Condition { .. }
            | MoreUnhealthy { .. }
            | HealthNotPersisted { .. }
            | NoTracking { .. } => String::new(),
        }
    }

    /// Whether time may fix it (a sync, ESO's retries): `--wait` waits only for these.
    fn waitable(&self) -> bool {
        use AppFinding::*;
        matches!(
            self,
            SecretsAppMissing { .. }
                | ConsumerMissing { .. }
                | OutOfSync { .. }
                | NotSynced { .. }
                | Progressing { .. }
                | Degraded { .. }
                | HealthMissing { .. }
                | NotHealthy { .. }
        )
    }
}

/// The verdict of `findings`: problems with what to do, and notes.
fn verdict(findings: &[AppFinding]) -> Verdict<Problem> {
    Verdict::shown(findings, |f, message| Problem {
        message,
        help: f.help(),
        waitable: f.waitable(),
    })
    .shaped(Shape::PROBLEMS_NOTES)
}

fn blank(namespace: &str, name: &str, role: &'static str) -> AppCheck {
    AppCheck {
        namespace: namespace.to_string(),
        name: name.to_string(),
        role,
        after: Vec::new(),
        ok: false,
        exists: false,
        app_wave: None,
        parent: None,
        sync: None,
        health: None,
        operation: None,
        unhealthy: Vec::new(),
        verdict: Verdict::default().shaped(Shape::PROBLEMS_NOTES),
        findings: Vec::new(),
    }
}

/// The state an Application shows, and its notes: the operation, the conditions.
fn fill(check: &mut AppCheck, a: &ApplicationInfo) {
    check.exists = true;
    check.app_wave = Some(a.app.wave);
    check.parent = a.parent.clone();
    check.sync = a.sync.clone();
    check.health = a.health.clone();
    check.operation = a.operation.clone();
    if let Some(op) = &a.operation {
        let last = match op.phase.as_str() {
            "Running" | "Terminating" => Some(false),
            "Failed" | "Error" => Some(true),
            _ => None,
        };
        if let Some(last) = last {
            check.findings.push(AppFinding::Operation {
                phase: op.phase.to_lowercase(),
                last,
                message: op.message.as_deref().unwrap_or("no message").to_string(),
            });
        }
    }
    for (kind, message) in a.conditions.iter().take(UNHEALTHY_SHOWN) {
        check.findings.push(AppFinding::Condition {
            kind: kind.to_string(),
            message: message.to_string(),
        });
    }
}

fn not_found(l: &Layout, name: &str, lookup: &AppLookup, role: &'static str) -> AppFinding {
    let (namespace, name, spec_file) = (l.namespace.clone(), name.to_string(), l.spec_file.clone());
    match lookup {
        AppLookup::NotServed => AppFinding::NotServed,
        _ if role == "secrets" => AppFinding::SecretsAppMissing {
            namespace,
            name,
            consumers: consumers(l),
            spec_file,
        },
        _ => AppFinding::ConsumerMissing {
            namespace,
            name,
            secrets_app: l.secrets_app.clone(),
            spec_file,
        },
    }
}

/// A secrets app's consumers as its findings name them.
fn consumers(l: &Layout) -> String {
    names(&l.consumers).unwrap_or_else(|| "its consumers".into())
}

/// `a`, `b` as "`a`, `b`"; `None` for none.
fn names(items: &[String]) -> Option<String> {
    (!items.is_empty()).then(|| {
        items
            .iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// The secrets app: exists, Synced, Healthy, and manages the spec's ExternalSecrets.
fn secrets_app(l: &Layout, lookup: &AppLookup) -> AppCheck {
    let mut check = blank(&l.namespace, &l.secrets_app, "secrets");
    let AppLookup::Found(a) = lookup else {
        let finding = not_found(l, &l.secrets_app, lookup, "secrets");
        check.findings.push(finding);
        return check;
    };
    fill(&mut check, a);
    let name = l.secrets_app.clone();
    check
        .findings
        .extend(sync_finding(&name, a.sync.as_deref()));
    check
        .findings
        .extend(health_finding(l, a.health.as_deref()));
    let unhealthy: Vec<&AppResource> = a
        .resources
        .iter()
        .filter(|r| !r.hook && r.health.as_deref().is_some_and(|h| h != "Healthy"))
        .collect();
    // A hostile (or huge) app must not flood the report.
    check.unhealthy = unhealthy
        .iter()
        .take(UNHEALTHY_SHOWN)
        .map(|r| (*r).clone())
        .collect();
    if a.health.as_deref() != Some("Healthy")
        && a.resource_health_source.as_deref() == Some("appTree")
    {
        check
            .findings
            .push(AppFinding::HealthNotPersisted { name: name.clone() });
    }
    if unhealthy.len() > UNHEALTHY_SHOWN {
        let more = unhealthy.len() - UNHEALTHY_SHOWN;
        check
            .findings
            .push(AppFinding::MoreUnhealthy { name, more });
    }
    check.findings.extend(unmanaged(l, a));
    check
}

/// The secrets app is Synced.
fn sync_finding(name: &str, sync: Option<&str>) -> Option<AppFinding> {
    let name = name.to_string();
    match sync {
        Some("Synced") => None,
        Some("OutOfSync") => Some(AppFinding::OutOfSync { name }),
        other => Some(AppFinding::NotSynced {
            name,
            sync: other.map(String::from),
        }),
    }
}

/// The secrets app is Healthy.
fn health_finding(l: &Layout, health: Option<&str>) -> Option<AppFinding> {
    let name = l.secrets_app.clone();
    let consumers = consumers(l);
    Some(match health {
        Some("Healthy") => return None,
        Some("Progressing") => AppFinding::Progressing { name, consumers },
        Some("Degraded") => AppFinding::Degraded {
            name,
            consumers,
            env: l.env.clone(),
        },
        Some("Missing") => AppFinding::HealthMissing { name },
        other => AppFinding::NotHealthy {
            name,
            health: other.map(String::from),
            consumers,
        },
    })
}

/// Bug 1 live: the spec's ExternalSecrets must be resources of the secrets app.
fn unmanaged(l: &Layout, a: &ApplicationInfo) -> Option<AppFinding> {
    let missing: Vec<String> = l
        .external_secrets
        .iter()
        .filter(|(ns, es)| {
            !a.resources.iter().any(|r| {
                r.kind == "ExternalSecret"
                    && &r.name == es
                    && ns.as_deref().is_none_or(|ns| r.namespace == ns)
            })
        })
        .map(|(ns, es)| match ns {
            Some(ns) => format!("{ns}/{es}"),
            None => es.clone(),
        })
        .collect();
    let list = names(&missing)?;
    let why = a
        .app
        .empty_sources()
        .into_iter()
        .map(|(i, why)| format!(" (its source {i} {why})"))
        .next()
        .unwrap_or_default();
    Some(AppFinding::Unmanaged {
        name: l.secrets_app.clone(),
        list,
        why,
        spec_file: l.spec_file.clone(),
    })
}

fn consumer(l: &Layout, name: &str, lookup: &AppLookup) -> AppCheck {
    let mut check = blank(&l.namespace, name, "consumer");
    check.after.push(l.secrets_app.clone());
    match lookup {
        AppLookup::Found(a) => fill(&mut check, a),
        other => check.findings.push(not_found(l, name, other, "consumer")),
    }
    check
}

/// A consumer syncs after the secrets app: a higher app wave under the same app-of-apps.
fn consumer_order(
    check: &mut AppCheck,
    lookup: &AppLookup,
    secrets: Option<&ApplicationInfo>,
    secrets_name: &str,
) {
    let (AppLookup::Found(c), Some(s)) = (lookup, secrets) else {
        return;
    };
    let name = check.name.clone();
    let secrets_app = secrets_name.to_string();
    if c.app.wave <= s.app.wave {
        check.findings.push(AppFinding::WaveNotAfter {
            name: name.clone(),
            wave: c.app.wave,
            secrets_app: secrets_app.clone(),
            secrets_wave: s.app.wave,
        });
    }
    match (&c.parent, &s.parent) {
        (Some(cp), Some(sp)) if cp != sp => check.findings.push(AppFinding::OtherParent {
            name,
            parent: cp.clone(),
            secrets_app,
            secrets_parent: sp.clone(),
        }),
        (None, _) | (_, None) => check.findings.push(AppFinding::NoTracking {
            name: if c.parent.is_none() {
                name
            } else {
                secrets_app.clone()
            },
            secrets_app,
        }),
        _ => {}
    }
}

/// What argocd-cm's check finds (`consequence`: what app waves not waiting means here).
enum CmFinding {
    /// argocd-cm does not exist.
    Missing { consequence: String },
    /// Argo CD cannot read its resource customizations.
    Unreadable {
        problem: String,
        consequence: String,
    },
    /// It has no health check for Applications.
    NoHealthCheck { consequence: String },
}

crate::base::codes::codes!(
    CmFinding,
    CmFinding {
        Missing => "argocd-cm-missing",
        Unreadable => "customizations-unreadable",
        NoHealthCheck => "no-app-health-check",
    }
);

impl CmFinding {
    /// What is wrong, for argocd-cm in `ns`.
    fn message(&self, ns: &str) -> String {
        match self {
            CmFinding::Missing { consequence } => format!(
                "ConfigMap `{ns}/{ARGOCD_CM}` does not exist, so app waves do not wait for \
                 Healthy{consequence}"
            ),
            CmFinding::Unreadable {
                problem,
                consequence,
            } => format!(
                "app waves do not wait for Healthy: Argo CD cannot read argocd-cm's resource \
                 customizations ({problem}), and then loads none{consequence}"
            ),
            CmFinding::NoHealthCheck { consequence } => format!(
                "app waves do not wait for Healthy: argocd-cm has no health check for \
                 argoproj.io/Application (Argo CD removed it in 1.8){consequence}"
            ),
        }
    }

    /// What to do.
    fn help(&self, ns: &str) -> String {
        let help = format!(
            "add `{HEALTH_KEY}` to argocd-cm with the Lua of Argo CD's docs \
             (operator-manual/health.md, \"Argocd App\")"
        );
        match self {
            CmFinding::Missing { .. } => {
                format!("is Argo CD installed in namespace `{ns}` (`[argocd] namespace`)? {help}")
            }
            CmFinding::Unreadable { .. } => format!("fix that key; {help}"),
            CmFinding::NoHealthCheck { .. } => help,
        }
    }
}

fn cm_check(
    ns: &str,
    cm: Option<&crate::model::argocd_cm::ArgoCdCm>,
    apps: &[AppCheck],
) -> CmCheck {
    let mut check = CmCheck {
        namespace: ns.to_string(),
        name: ARGOCD_CM,
        ok: false,
        exists: cm.is_some(),
        key: None,
        verdict: Verdict::default().shaped(Shape::PROBLEMS),
    };
    // The runbook's consequence, with the waves this cluster shows.
    let wave_of = |name: &str| {
        apps.iter()
            .find(|a| a.namespace == ns && a.name == name)
            .and_then(|a| a.app_wave)
    };
    let consequence = apps
        .iter()
        .filter(|a| a.namespace == ns && a.role == "consumer")
        .find_map(|c| {
            let s = c.after.first()?;
            Some(format!(
                ", so `{}` (app wave {}) starts about 2s after `{s}` (app wave {}) is applied, \
                 whatever its state",
                c.name,
                c.app_wave?,
                wave_of(s)?
            ))
        })
        .unwrap_or_else(|| {
            ": app wave N starts as soon as wave N-1 is applied, not when it is Healthy".into()
        });
    let finding = match cm {
        None => Some(CmFinding::Missing { consequence }),
        Some(cm) => match (cm.health_check("argoproj.io", "Application"), &cm.problem) {
            (Some(key), _) => {
                check.key = Some(key.to_string());
                None
            }
            (None, Some(problem)) => Some(CmFinding::Unreadable {
                problem: problem.to_string(),
                consequence,
            }),
            (None, None) => Some(CmFinding::NoHealthCheck { consequence }),
        },
    };
    check.ok = finding.is_none();
    if let Some(f) = finding {
        let (message, help) = (f.message(ns), f.help(ns));
        let problem = Problem::new(message, help);
        check.verdict = std::mem::take(&mut check.verdict).with_problem(f.code(), problem);
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(consumers: &[&str]) -> Layout {
        Layout {
            namespace: "argocd".into(),
            secrets_app: "core-service-secrets".into(),
            consumers: consumers.iter().map(|c| c.to_string()).collect(),
            external_secrets: Vec::new(),
            spec_file: "specs/core.toml".into(),
            env: "dev".into(),
        }
    }

    #[test]
    fn only_what_time_can_fix_is_waited_for_and_notes_are_not_problems() {
        let l = layout(&["core-service"]);
        let degraded = health_finding(&l, Some("Degraded")).unwrap();
        assert!(degraded.waitable());
        assert!(degraded
            .message()
            .ends_with("so `core-service` cannot start"));
        assert!(degraded.help().contains("`vault-seed apply dev`"));
        assert!(health_finding(&l, Some("Healthy")).is_none());
        assert!(sync_finding("s", Some("Synced")).is_none());
        let never = sync_finding("s", None).unwrap();
        assert!(never.message().contains("(no sync status yet)"));
        assert!(health_finding(&layout(&[]), None)
            .unwrap()
            .message()
            .contains("holds its consumers back"));

        let found = [
            AppFinding::WaveNotAfter {
                name: "core-service".into(),
                wave: 0,
                secrets_app: "core-service-secrets".into(),
                secrets_wave: 0,
            },
            AppFinding::Condition {
                kind: "SyncError".into(),
                message: "boom".into(),
            },
        ];
        let v = verdict(&found);
        let p = v.problems();
        assert_eq!(p.len(), 1);
        assert!(!p[0].waitable);
        assert!(p[0].help.contains("sync-wave: \"1\"` (any wave above 0)"));
        assert_eq!(v.notes(), ["SyncError: boom"]);

        let cm = CmFinding::Missing {
            consequence: ": later".into(),
        };
        assert_eq!(
            cm.message("argocd"),
            "ConfigMap `argocd/argocd-cm` does not exist, so app waves do not wait for Healthy: later"
        );
        assert!(cm
            .help("argocd")
            .starts_with("is Argo CD installed in namespace `argocd`"));
    }
}

/// The rules of the part, one case per row: the Applications as the cluster serves them (JSON),
/// and the codes found for the secrets app and its consumer; then argocd-cm's. In-process; the
/// suite's `argocd` module proves the wiring.
#[cfg(test)]
mod table {
    use serde_json::json;

    use super::*;
    use crate::model::manifests::Origin;

    const SECRETS: &str = "core-service-secrets";
    const CONSUMER: &str = "core-service";

    fn layout() -> Layout {
        Layout {
            namespace: "argocd".into(),
            secrets_app: SECRETS.into(),
            consumers: vec![CONSUMER.into()],
            external_secrets: vec![(None, "core-service-db".into())],
            spec_file: "specs/core.toml".into(),
            env: "dev".into(),
        }
    }

    /// An Application: `status` is merged into a Synced, Healthy one managing the
    /// ExternalSecret; `parent` is its app-of-apps (tracking label), none when empty.
    fn app(name: &str, wave: i64, parent: &str, status: serde_json::Value) -> AppLookup {
        let mut st = json!({
            "sync": {"status": "Synced"},
            "health": {"status": "Healthy"},
            "resources": [{"group": "external-secrets.io", "kind": "ExternalSecret",
                "namespace": "ask", "name": "core-service-db", "health": {"status": "Healthy"}}],
        });
        for (k, v) in status.as_object().unwrap() {
            st[k] = v.clone();
        }
        let mut labels = json!({});
        if !parent.is_empty() {
            labels["app.kubernetes.io/instance"] = json!(parent);
        }
        let obj = json!({
            "metadata": {"name": name, "labels": labels,
                "annotations": {"argocd.argoproj.io/sync-wave": wave.to_string()}},
            "spec": {"source": {"repoURL": "https://git.example/x", "path": name}},
            "status": st,
        });
        let origin = Origin {
            file: "cluster".into(),
            line: 1,
        };
        AppLookup::Found(Box::new(
            ApplicationInfo::parse(&obj.to_string(), origin).unwrap(),
        ))
    }

    fn secrets(status: serde_json::Value) -> AppLookup {
        app(SECRETS, 0, "root", status)
    }

    fn consumer_app(wave: i64, parent: &str) -> AppLookup {
        app(CONSUMER, wave, parent, json!({}))
    }

    /// The codes of the secrets app's check, and of its consumer's.
    fn codes(secrets: &AppLookup, consumer: &AppLookup) -> (Vec<&'static str>, Vec<&'static str>) {
        let l = layout();
        let s = secrets_app(&l, secrets);
        let mut c = super::consumer(&l, CONSUMER, consumer);
        let found = match secrets {
            AppLookup::Found(a) => Some(&**a),
            _ => None,
        };
        consumer_order(&mut c, consumer, found, SECRETS);
        let of = |a: &AppCheck| a.findings.iter().map(Code::code).collect();
        (of(&s), of(&c))
    }

    type Row = (
        &'static str,
        AppLookup,
        AppLookup,
        &'static [&'static str],
        &'static [&'static str],
    );

    const NONE: &[&str] = &[];

    /// The secrets app's rules.
    fn secrets_cases() -> Vec<Row> {
        vec![
            (
                "synced, healthy, in order",
                secrets(json!({})),
                consumer_app(1, "root"),
                NONE,
                NONE,
            ),
            (
                "out of sync",
                secrets(json!({"sync": {"status": "OutOfSync"}})),
                consumer_app(1, "root"),
                &["out-of-sync"],
                NONE,
            ),
            (
                "no sync status yet",
                secrets(json!({"sync": {}})),
                consumer_app(1, "root"),
                &["not-synced"],
                NONE,
            ),
            (
                "progressing",
                secrets(json!({"health": {"status": "Progressing"}})),
                consumer_app(1, "root"),
                &["progressing"],
                NONE,
            ),
            (
                "degraded",
                secrets(json!({"health": {"status": "Degraded"}})),
                consumer_app(1, "root"),
                &["degraded"],
                NONE,
            ),
            (
                "its resources missing",
                secrets(json!({"health": {"status": "Missing"}})),
                consumer_app(1, "root"),
                &["resources-missing"],
                NONE,
            ),
            (
                "suspended",
                secrets(json!({"health": {"status": "Suspended"}})),
                consumer_app(1, "root"),
                &["not-healthy"],
                NONE,
            ),
            (
                "the ExternalSecret not among its resources",
                secrets(json!({"resources": []})),
                consumer_app(1, "root"),
                &["external-secrets-unmanaged"],
                NONE,
            ),
            (
                "a sync running and a condition",
                secrets(json!({"operationState": {"phase": "Running"},
                    "conditions": [{"type": "SyncError", "message": "boom"}]})),
                consumer_app(1, "root"),
                &["operation", "condition"],
                NONE,
            ),
        ]
    }

    /// The consumer's rules, and what neither finds.
    fn consumer_cases() -> Vec<Row> {
        vec![
            (
                "the consumer in the same wave",
                secrets(json!({})),
                consumer_app(0, "root"),
                NONE,
                &["wave-not-after"],
            ),
            (
                "the consumer under another app-of-apps",
                secrets(json!({})),
                consumer_app(1, "other-root"),
                NONE,
                &["other-parent"],
            ),
            (
                "the consumer without tracking",
                secrets(json!({})),
                consumer_app(1, ""),
                NONE,
                &["no-tracking"],
            ),
            (
                "neither exists",
                AppLookup::Missing,
                AppLookup::Missing,
                &["secrets-app-missing"],
                &["consumer-app-missing"],
            ),
            (
                "no Argo CD",
                AppLookup::NotServed,
                AppLookup::NotServed,
                &["argocd-not-served"],
                &["argocd-not-served"],
            ),
        ]
    }

    #[test]
    fn the_application_rules_give_their_codes() {
        let cases = secrets_cases().into_iter().chain(consumer_cases());
        for (case, s, c, want_s, want_c) in cases {
            let (got_s, got_c) = codes(&s, &c);
            assert_eq!(
                (got_s.as_slice(), got_c.as_slice()),
                (want_s, want_c),
                "{case}"
            );
        }
    }

    #[test]
    fn the_argocd_cm_rules_give_their_codes() {
        let cm = |data: &[(&str, &str)]| {
            let origin = Origin {
                file: "cluster".into(),
                line: 1,
            };
            let data = data
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            crate::model::argocd_cm::ArgoCdCm::from_data(ARGOCD_CM, origin, &data)
        };
        let with_check = cm(&[(HEALTH_KEY, "hs = {}\nreturn hs")]);
        let without = cm(&[]);
        let cases: Vec<(&str, Option<&crate::model::argocd_cm::ArgoCdCm>, &[&str])> = vec![
            ("no argocd-cm", None, &["argocd-cm-missing"]),
            ("no health check", Some(&without), &["no-app-health-check"]),
            ("the health check", Some(&with_check), &[]),
        ];
        for (case, cm, want) in cases {
            let check = cm_check("argocd", cm, &[]);
            let codes: Vec<&str> = check.verdict.findings().map(|f| f.code).collect();
            assert_eq!(codes, want, "{case}");
            assert_eq!(check.ok, want.is_empty(), "{case}");
        }
    }

    /// The JSON keeps its keys, in their order; `findings` is the only one added.
    #[test]
    fn the_json_of_each_object_keeps_its_keys() {
        use crate::verify::findings::json_keys;
        let mut app = secrets_app(
            &layout(),
            &secrets(json!({"sync": {"status": "OutOfSync"}})),
        );
        app.verdict = verdict(&app.findings);
        assert_eq!(
            json_keys(&app),
            [
                "namespace",
                "name",
                "role",
                "after",
                "ok",
                "exists",
                "app_wave",
                "parent",
                "sync",
                "health",
                "operation",
                "unhealthy",
                "problems",
                "notes",
                "findings",
            ]
        );
        let v = serde_json::to_value(&app).unwrap();
        assert_eq!(v["findings"][0]["code"], "out-of-sync");
        assert_eq!(v["findings"][0]["message"], v["problems"][0]["message"]);
        let cm = cm_check("argocd", None, &[]);
        assert_eq!(
            json_keys(&cm),
            [
                "namespace",
                "name",
                "ok",
                "exists",
                "key",
                "problems",
                "findings"
            ]
        );
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify argocd: Applications",
            &AppFinding::codes(),
            &AppFinding::all_codes(),
        );
        crate::base::codes::assert_documented(
            "verify argocd: argocd-cm",
            &CmFinding::codes(),
            &CmFinding::all_codes(),
        );
    }
}
