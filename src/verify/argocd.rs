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
//! ([`crate::order::argo::wave`], [`crate::order::argocd_cm`]). `--wait` waits while the only
//! problems are ones that time can fix (the secrets app Progressing, OutOfSync, Degraded while
//! ESO retries, not created yet), not for a wrong wave or a missing health check.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use super::{Checked, Part, Progress, Request};
use crate::kube::{AppLookup, AppResource, ApplicationInfo, EsoCluster, KubeError, OperationInfo};
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

impl Problem {
    fn new(message: String, help: String) -> Problem {
        Problem {
            message,
            help,
            waitable: false,
        }
    }

    fn waitable(mut self) -> Problem {
        self.waitable = true;
        self
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
    /// What is wrong.
    pub problems: Vec<Problem>,
    /// What explains its state (its operation, conditions, sources), not failures.
    pub notes: Vec<String>,
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
    /// What is wrong.
    pub problems: Vec<Problem>,
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
            .flat_map(|a| &a.problems)
            .chain(self.argocd_cm.iter().flat_map(|c| &c.problems))
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
    plan: &EnvPlan<'_>,
    req: &Request,
    deadline: Option<Instant>,
    progress: &dyn Fn(Progress<'_>),
    notes: &mut Vec<String>,
) -> Checked<ArgocdPart> {
    let cluster = match super::cluster::connect(plan, req).await {
        Ok(c) => c,
        Err((error, help)) => return Checked::failed(error, Some(help)),
    };
    let layouts = layouts(plan);
    let (result, ran_out) = super::cluster::poll(
        deadline,
        progress,
        || check_once(&cluster, &layouts),
        ArgocdPart::worth_waiting,
        ArgocdPart::progress,
    )
    .await;
    if let (Some(wait), true) = (req.wait, ran_out) {
        notes.push(format!(
            "waited {} and the secrets app was not Synced and Healthy",
            humantime::format_duration(wait)
        ));
    }
    match result {
        Ok(p) => Checked::Done(p),
        Err(e) => Checked::failed(e.to_string(), e.help()),
    }
}

/// Every check, once.
async fn check_once(cluster: &EsoCluster, layouts: &[Layout]) -> Result<ArgocdPart, KubeError> {
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
    for l in layouts {
        let secrets = match lookup(&l.namespace, &l.secrets_app) {
            AppLookup::Found(a) => Some(&**a),
            _ => None,
        };
        for c in &l.consumers {
            let after = l.secrets_app.clone();
            if let Some(existing) = apps
                .iter_mut()
                .find(|a| a.role == "consumer" && a.namespace == l.namespace && &a.name == c)
            {
                existing.after.push(after);
                consumer_order(existing, lookup(&l.namespace, c), secrets, &l.secrets_app);
                continue;
            }
            let mut check = consumer(l, c, lookup(&l.namespace, c));
            consumer_order(&mut check, lookup(&l.namespace, c), secrets, &l.secrets_app);
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
        a.ok = a.problems.is_empty();
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
        problems: Vec::new(),
        notes: Vec::new(),
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
        let message = op.message.as_deref().unwrap_or("no message");
        match op.phase.as_str() {
            "Running" | "Terminating" => check
                .notes
                .push(format!("sync {}: {message}", op.phase.to_lowercase())),
            "Failed" | "Error" => check
                .notes
                .push(format!("last sync {}: {message}", op.phase.to_lowercase())),
            _ => {}
        }
    }
    for (kind, message) in a.conditions.iter().take(UNHEALTHY_SHOWN) {
        check.notes.push(format!("{kind}: {message}"));
    }
}

fn not_found(l: &Layout, name: &str, lookup: &AppLookup, role: &'static str) -> Problem {
    match lookup {
        AppLookup::NotServed => Problem::new(
            "the cluster serves no Argo CD Application (`argoproj.io/v1alpha1`): Argo CD is not \
             installed in this cluster"
                .into(),
            "check the kubeconfig context (`--context`, the environment's `kube_context`), or \
             run with --skip-kube"
                .into(),
        ),
        _ if role == "secrets" => Problem::new(
            format!(
                "Application `{}/{name}` does not exist: the secrets app that creates the \
                 ExternalSecrets has not been created",
                l.namespace
            ),
            format!(
                "add it to the app-of-apps at a lower app wave than {} (the runbook: \
                 core-service-secrets at wave \"0\", core-service at \"1\") and sync the parent; \
                 or correct `[argocd] secrets_app` in `{}`",
                names(&l.consumers).unwrap_or_else(|| "its consumers".into()),
                l.spec_file
            ),
        )
        .waitable(),
        _ => Problem::new(
            format!(
                "Application `{}/{name}` does not exist, so its app wave cannot be checked \
                 against the secrets app `{}`",
                l.namespace, l.secrets_app
            ),
            format!(
                "sync the app-of-apps that creates it, or correct `[argocd] consumers` in `{}`",
                l.spec_file
            ),
        )
        .waitable(),
    }
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
        check
            .problems
            .push(not_found(l, &l.secrets_app, lookup, "secrets"));
        return check;
    };
    fill(&mut check, a);
    let name = &l.secrets_app;
    let consumers = names(&l.consumers).unwrap_or_else(|| "its consumers".into());
    match a.sync.as_deref() {
        Some("Synced") => {}
        Some("OutOfSync") => check.problems.push(
            Problem::new(
                format!(
                    "the secrets app `{name}` is OutOfSync: what Git holds for it (the \
                     ExternalSecrets) is not all applied"
                ),
                format!(
                    "sync it (`argocd app sync {name}`), or wait for its automated sync \
                     (`verify --wait 5m`)"
                ),
            )
            .waitable(),
        ),
        other => check.problems.push(
            Problem::new(
                format!(
                    "the secrets app `{name}` is not Synced ({}): Argo CD has not compared it \
                     with Git",
                    other.unwrap_or("no sync status yet")
                ),
                "see its conditions (`argocd app get` or `kubectl describe application`); wait \
                 for Argo CD to reconcile it"
                    .into(),
            )
            .waitable(),
        ),
    }
    let health = a.health.as_deref();
    let (message, help) = match health {
        Some("Healthy") => (None, String::new()),
        Some("Progressing") => (
            Some(format!(
                "the secrets app `{name}` is Progressing, not Healthy: its ExternalSecrets are not \
                 all Ready yet, and the app-of-apps holds {consumers} back until it is"
            )),
            "wait (`verify --wait 5m`): ESO retries (the runbook: it stays Progressing until \
             ask-db has pushed the DB passwords to Vault); if it does not change, the part `kube` \
             says why an ExternalSecret is not Ready"
                .to_string(),
        ),
        Some("Degraded") => (
            Some(format!(
                "the secrets app `{name}` is Degraded: an ExternalSecret's Ready condition is \
                 False (ESO cannot read its Vault path), and the app-of-apps fails its sync at \
                 this app wave, so {consumers} cannot start"
            )),
            format!(
                "the part `kube` (`verify --only kube`) says why the ExternalSecret is not \
                 Ready: `vault-seed apply {env}` creates missing paths, `vault-seed policy {env}` \
                 prints the grant ESO needs; ESO retries, then Argo CD syncs again",
                env = l.env
            ),
        ),
        Some("Missing") => (
            Some(format!(
                "the secrets app `{name}` is Missing: none of its resources exist in the cluster \
                 (it has not synced)"
            )),
            format!("sync it (`argocd app sync {name}`)"),
        ),
        other => (
            Some(format!(
                "the secrets app `{name}` is {}, not Healthy, so the app-of-apps holds \
                 {consumers} back",
                other.unwrap_or("without a health status")
            )),
            format!("see its resources (`argocd app get {name}`)"),
        ),
    };
    if let Some(message) = message {
        check.problems.push(Problem::new(message, help).waitable());
    }
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
    if unhealthy.len() > UNHEALTHY_SHOWN {
        check.notes.push(format!(
            "{} more resources are not Healthy (`argocd app get {name}` lists them)",
            unhealthy.len() - UNHEALTHY_SHOWN
        ));
    }
    // Bug 1 live: the spec's ExternalSecrets must be resources of the secrets app.
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
    if let Some(list) = names(&missing) {
        let why = a
            .app
            .empty_sources()
            .into_iter()
            .map(|(i, why)| format!(" (its source {i} {why})"))
            .next()
            .unwrap_or_default();
        check.problems.push(Problem::new(
            format!(
                "the secrets app `{name}` does not manage ExternalSecret {list}{why}: Argo CD \
                 never applies it, so its Secret never exists (the runbook's bug 1)"
            ),
            format!(
                "give `{name}` a source whose path holds the ExternalSecrets (a `ref` source \
                 without `path` only provides value files), or correct `[eso] external_secrets` \
                 in `{}`",
                l.spec_file
            ),
        ));
    }
    check
}

fn consumer(l: &Layout, name: &str, lookup: &AppLookup) -> AppCheck {
    let mut check = blank(&l.namespace, name, "consumer");
    check.after.push(l.secrets_app.clone());
    match lookup {
        AppLookup::Found(a) => fill(&mut check, a),
        other => check.problems.push(not_found(l, name, other, "consumer")),
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
    let name = &check.name;
    if c.app.wave <= s.app.wave {
        check.problems.push(Problem::new(
            format!(
                "Application `{name}` is at app wave {}, not after the secrets app \
                 `{secrets_name}` (app wave {}): the app-of-apps may start {name} before its \
                 secrets exist (the runbook's bug 1: CreateContainerConfigError, and PreSync \
                 hooks without their Secret)",
                c.app.wave, s.app.wave
            ),
            format!(
                "annotate `{name}` with `argocd.argoproj.io/sync-wave: \"{}\"` (any wave above \
                 {}) in the app-of-apps, as the runbook puts core-service at \"1\" after \
                 core-service-secrets at \"0\"",
                s.app.wave + 1,
                s.app.wave
            ),
        ));
    }
    match (&c.parent, &s.parent) {
        (Some(cp), Some(sp)) if cp != sp => check.problems.push(Problem::new(
            format!(
                "Application `{name}` is managed by `{cp}` and the secrets app `{secrets_name}` \
                 by `{sp}`: sync waves order only the children of one app-of-apps, so nothing \
                 makes {name} wait for its secrets"
            ),
            format!("make `{name}` and `{secrets_name}` children of one app-of-apps"),
        )),
        (None, _) | (_, None) => check.notes.push(format!(
            "no tracking annotation or label names the app-of-apps of `{}`: app waves order it \
             only as a child of the same app-of-apps as `{secrets_name}`",
            if c.parent.is_none() {
                name.as_str()
            } else {
                secrets_name
            }
        )),
        _ => {}
    }
}

fn cm_check(
    ns: &str,
    cm: Option<&crate::order::argocd_cm::ArgoCdCm>,
    apps: &[AppCheck],
) -> CmCheck {
    let mut check = CmCheck {
        namespace: ns.to_string(),
        name: ARGOCD_CM,
        ok: false,
        exists: cm.is_some(),
        key: None,
        problems: Vec::new(),
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
    let help = format!(
        "add `{HEALTH_KEY}` to argocd-cm with the Lua of Argo CD's docs \
         (operator-manual/health.md, \"Argocd App\")"
    );
    match cm {
        None => check.problems.push(Problem::new(
            format!(
                "ConfigMap `{ns}/{ARGOCD_CM}` does not exist, so app waves do not wait for \
                 Healthy{consequence}"
            ),
            format!("is Argo CD installed in namespace `{ns}` (`[argocd] namespace`)? {help}"),
        )),
        Some(cm) => match (cm.health_check("argoproj.io", "Application"), &cm.problem) {
            (Some(key), _) => {
                check.ok = true;
                check.key = Some(key.to_string());
            }
            (None, Some(problem)) => check.problems.push(Problem::new(
                format!(
                    "app waves do not wait for Healthy: Argo CD cannot read argocd-cm's resource \
                     customizations ({problem}), and then loads none{consequence}"
                ),
                format!("fix that key; {help}"),
            )),
            (None, None) => check.problems.push(Problem::new(
                format!(
                    "app waves do not wait for Healthy: argocd-cm has no health check for \
                     argoproj.io/Application (Argo CD removed it in 1.8){consequence}"
                ),
                help,
            )),
        },
    }
    check
}
