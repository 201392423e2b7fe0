//! Does the controller a workload relies on for its restart run, and does it act on that
//! workload? A Reloader annotation restarts nothing unless a Reloader runs that watches the
//! workload's namespace; a VaultStaticSecret's `rolloutRestartTargets` nothing unless VSO's
//! controller runs. [`Running`] answers from the Deployments the cluster runs, read once and
//! only when a workload relies on one.
//!
//! Reloader's rules come from stakater/Reloader v1.4.21 (Helm chart 2.2.15):
//!
//! - Its Deployment: the chart labels it `app: <release>-reloader` and
//!   `app.kubernetes.io/name: reloader` (`deployments/kubernetes/chart/reloader/templates/_helpers.tpl`,
//!   `reloader-labels.chart`, the name unless `nameOverride`); the plain manifests
//!   (`deployments/kubernetes/reloader.yaml`) give the Deployment no label, but both set the
//!   container's `RELOADER_DEPLOYMENT_NAME` (`templates/deployment.yaml`) and run
//!   `ghcr.io/stakater/reloader` (older releases: `stakater/reloader`).
//! - What it watches (`internal/pkg/cmd/reloader.go`, `resolveWatchNamespaces`, `startReloader`):
//!   the namespaces of `--namespaces` when given; else the one in `KUBERNETES_NAMESPACE`
//!   (the chart sets it to the pod's namespace unless `watchGlobally`); else all, less
//!   `--namespaces-to-ignore`, and only those whose labels match `--namespace-selector`
//!   (`pkg/common/common.go` `GetNamespaceLabelSelector`: `key:value` and `key=*` forms).
//!   `--resources-to-ignore=secrets` stops it watching Secrets, `--resource-label-selector`
//!   limits it to Secrets with those labels (`GetResourceLabelSelector`), a Rollout is restarted
//!   only with `--is-Argo-Rollouts=true` (`internal/pkg/handler/upgrade.go`), and with
//!   `--webhook-url` it calls the webhook instead of restarting (`handler/update.go`). Flags
//!   as `internal/pkg/util/util.go` `ConfigureReloaderFlags` declares them.
//!
//! VSO's (hashicorp/vault-secrets-operator v1.4.1): its controller Deployment carries
//! `app.kubernetes.io/name: vault-secrets-operator` (`chart/templates/deployment.yaml`,
//! `vso.chart.labels`), watches every namespace (`main.go` sets no namespace on the manager's
//! cache), and acts on `rolloutRestartTargets` only with `hmacSecretData` on
//! (`controllers/vaultstaticsecret_controller.go`, "Ignoring RolloutRestartTargets").

use std::collections::BTreeMap;

use tokio::sync::{Mutex, OnceCell};

use crate::kube::{selector, Cluster, DeploymentInfo, EnvSource, KubeError, WorkloadKind};

/// Labels of an object.
pub type Labels = BTreeMap<String, String>;

/// Whether the controller a workload relies on will restart it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    /// It runs and acts on the workload: which Deployment (`Reloader's Deployment `r/r` Ready
    /// and watching namespace `ns``).
    Runs(String),
    /// It does not: why (none runs, not Ready, it does not watch the namespace).
    NotRunning(String),
    /// The facts do not decide: why (a permission missing, a setting vault-seed cannot read).
    CannotTell(String),
}

/// The label selector that finds VSO's controller Deployment.
pub const VSO_SELECTOR: &str = "app.kubernetes.io/name=vault-secrets-operator";

/// What restarts workloads in this cluster, read lazily and once.
pub struct Running<'a> {
    cluster: &'a Cluster,
    reloaders: OnceCell<Result<Vec<Reloader>, String>>,
    vso: OnceCell<Result<Vec<DeploymentInfo>, String>>,
    namespaces: Mutex<BTreeMap<String, Result<Option<Labels>, String>>>,
}

impl<'a> Running<'a> {
    /// Nothing read yet.
    pub fn new(cluster: &'a Cluster) -> Self {
        Running {
            cluster,
            reloaders: OnceCell::new(),
            vso: OnceCell::new(),
            namespaces: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether a running Reloader restarts a `kind` of namespace `ns` when a Secret labelled
    /// `secret_labels` changes (its annotations already name that Secret).
    pub async fn reloader(
        &self,
        ns: &str,
        kind: WorkloadKind,
        secret_labels: &impl selector::Labels,
    ) -> Watch {
        let found = self
            .reloaders
            .get_or_init(|| async {
                let all = self.cluster.deployments_everywhere(None).await;
                all.map(|d| d.iter().filter_map(Reloader::of).collect())
                    .map_err(|e| missing(&e, "Reloader runs"))
            })
            .await;
        let reloaders = match found {
            Ok(r) => r,
            Err(why) => return Watch::CannotTell(why.clone()),
        };
        let mut verdicts = Vec::new();
        for r in reloaders {
            let labels = match r.namespace_selector() {
                Some(_) => Some(self.labels_of(ns).await),
                None => None,
            };
            verdicts.push(r.watches(ns, kind, labels.as_ref(), secret_labels));
        }
        overall(verdicts, NO_RELOADER)
    }

    /// Whether VSO's controller runs (it watches every namespace); `hmac`: the
    /// VaultStaticSecret's `hmacSecretData`, without which VSO ignores its targets.
    pub async fn vso(&self, hmac: bool) -> Watch {
        if !hmac {
            return Watch::NotRunning(
                "VSO ignores `rolloutRestartTargets` while `hmacSecretData` is false".into(),
            );
        }
        let found = self
            .vso
            .get_or_init(|| async {
                self.cluster
                    .deployments_everywhere(Some(VSO_SELECTOR))
                    .await
                    .map_err(|e| missing(&e, "VSO's controller runs"))
            })
            .await;
        match found {
            Err(why) => Watch::CannotTell(why.clone()),
            Ok(all) => overall(
                all.iter()
                    .map(|d| match d.ready {
                        true => Watch::Runs(format!(
                            "VSO's Deployment `{}/{}` Ready",
                            d.namespace, d.name
                        )),
                        false => Watch::NotRunning(not_ready("VSO's", d)),
                    })
                    .collect(),
                NO_VSO,
            ),
        }
    }

    async fn labels_of(&self, ns: &str) -> Result<Option<Labels>, String> {
        let mut known = self.namespaces.lock().await;
        if let Some(l) = known.get(ns) {
            return l.clone();
        }
        let read = self.cluster.namespace_labels(ns).await.map_err(|e| {
            missing(
                &e,
                "the namespace matches Reloader's `--namespace-selector`",
            )
        });
        known.insert(ns.to_string(), read.clone());
        read
    }
}

const NO_RELOADER: &str = "no Reloader runs: no Deployment in any namespace is labelled `app.kubernetes.io/name=reloader` (Reloader's Helm chart), sets `RELOADER_DEPLOYMENT_NAME` or runs image `stakater/reloader`";
const NO_VSO: &str =
    "VSO's controller does not run: no Deployment in any namespace is labelled `app.kubernetes.io/name=vault-secrets-operator` (VSO's Helm chart)";

/// One verdict of several controllers: any that runs wins; else one that cannot be told makes
/// the whole unknown; else none runs (`none` when there is none at all).
fn overall(verdicts: Vec<Watch>, none: &str) -> Watch {
    if let Some(runs) = verdicts.iter().find(|v| matches!(v, Watch::Runs(_))) {
        return runs.clone();
    }
    let why = |f: fn(&Watch) -> Option<&String>| -> Vec<String> {
        verdicts.iter().filter_map(f).cloned().collect()
    };
    let unknown = why(|v| match v {
        Watch::CannotTell(w) => Some(w),
        _ => None,
    });
    if !unknown.is_empty() {
        return Watch::CannotTell(unknown.join("; "));
    }
    let not = why(|v| match v {
        Watch::NotRunning(w) => Some(w),
        _ => None,
    });
    if not.is_empty() {
        Watch::NotRunning(none.to_string())
    } else {
        Watch::NotRunning(not.join("; "))
    }
}

/// Why a read failed, naming the permission when RBAC refused it.
fn missing(e: &KubeError, what: &str) -> String {
    match e {
        KubeError::Forbidden {
            verb,
            resource,
            namespace,
            ..
        } => format!(
            "whether {what} cannot be told: this identity may not {verb} `{resource}` {} (403)",
            namespace
                .as_ref()
                .map(|ns| format!("in namespace `{ns}`"))
                .unwrap_or_else(|| "at the cluster scope".into())
        ),
        other => format!(
            "whether {what} cannot be told: {}",
            crate::base::text::cap(&other.to_string())
        ),
    }
}

fn not_ready(whose: &str, d: &DeploymentInfo) -> String {
    format!(
        "{whose} Deployment `{}/{}` is not Ready (no ready replica)",
        d.namespace, d.name
    )
}

/// A Reloader Deployment and the settings its container was started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reloader {
    deployment: DeploymentInfo,
    /// Its settings, or why they cannot be read.
    settings: Result<Settings, String>,
}

/// What of Reloader's flags and environment decides whether it acts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Settings {
    /// Exactly these namespaces (`--namespaces`, or `KUBERNETES_NAMESPACE`); `None`: all.
    only: Option<Vec<String>>,
    /// `--namespaces-to-ignore` (global mode only).
    ignored: Vec<String>,
    /// `--namespace-selector`, as Reloader joins it (global mode only).
    namespace_selector: Option<String>,
    /// `--resource-label-selector`, as Reloader joins it.
    resource_selector: Option<String>,
    /// `--resources-to-ignore` names `secrets`.
    ignores_secrets: bool,
    /// `--is-Argo-Rollouts=true`.
    argo_rollouts: bool,
    /// `--webhook-url` is set.
    webhook: bool,
    /// The annotation flags given another name than their default.
    renamed: Vec<String>,
}

/// Reloader's flags that rename an annotation, and their defaults (`util.go`).
const ANNOTATION_FLAGS: [(&str, &str); 6] = [
    ("auto-annotation", "reloader.stakater.com/auto"),
    (
        "secret-auto-annotation",
        "secret.reloader.stakater.com/auto",
    ),
    ("secret-annotation", "secret.reloader.stakater.com/reload"),
    ("auto-search-annotation", "reloader.stakater.com/search"),
    ("search-match-annotation", "reloader.stakater.com/match"),
    ("ignore-annotation", "reloader.stakater.com/ignore"),
];

/// Reloader's boolean flags: they take no separate value (pflag's `NoOptDefVal`).
const BOOL_FLAGS: [&str; 5] = [
    "auto-reload-all",
    "enable-ha",
    "sync-after-restart",
    "enable-pprof",
    "enable-csi-integration",
];

impl Reloader {
    /// `d` as a Reloader, when it is one.
    pub fn of(d: &DeploymentInfo) -> Option<Reloader> {
        let image = |c: &crate::kube::ContainerInfo| {
            let repo = c.image.split('@').next().unwrap_or_default();
            let repo = match repo.rsplit_once(':') {
                Some((r, tag)) if !tag.contains('/') => r,
                _ => repo,
            };
            repo == "stakater/reloader" || repo.ends_with("/stakater/reloader")
        };
        let named = |c: &crate::kube::ContainerInfo| {
            c.env.iter().any(|(n, _)| n == "RELOADER_DEPLOYMENT_NAME")
        };
        let container = d
            .containers
            .iter()
            .find(|c| named(c) || image(c))
            .or_else(|| {
                (d.labels.get("app.kubernetes.io/name").map(String::as_str) == Some("reloader"))
                    .then(|| d.containers.first())
                    .flatten()
            })?;
        Some(Reloader {
            deployment: d.clone(),
            settings: settings(&d.namespace, container),
        })
    }

    fn namespace_selector(&self) -> Option<&str> {
        let s = self.settings.as_ref().ok()?;
        s.only.is_none().then_some(())?;
        s.namespace_selector.as_deref()
    }

    /// Whether it restarts a `kind` of `ns` on a change of a Secret labelled `secret_labels`;
    /// `ns_labels`, read when it has a namespace selector.
    fn watches(
        &self,
        ns: &str,
        kind: WorkloadKind,
        ns_labels: Option<&Result<Option<Labels>, String>>,
        secret_labels: &impl selector::Labels,
    ) -> Watch {
        let d = &self.deployment;
        let at = format!("Reloader's Deployment `{}/{}`", d.namespace, d.name);
        if !d.ready {
            return Watch::NotRunning(not_ready("Reloader's", d));
        }
        let s = match &self.settings {
            Ok(s) => s,
            Err(why) => return Watch::CannotTell(format!("{at}: {why}")),
        };
        let no = |why: String| Watch::NotRunning(format!("{at} {why}"));
        let unsure = |why: String| Watch::CannotTell(format!("{at} {why}"));
        if s.ignores_secrets {
            return no("ignores Secrets (`--resources-to-ignore=secrets`)".into());
        }
        if kind == WorkloadKind::Rollout && !s.argo_rollouts {
            return no("restarts Argo Rollouts only with `--is-Argo-Rollouts=true`".into());
        }
        if s.webhook {
            return unsure("calls its `--webhook-url` instead of restarting".into());
        }
        if !s.renamed.is_empty() {
            return unsure(format!(
                "reads renamed annotations (`--{}`), which vault-seed does not follow",
                s.renamed.join("`, `--")
            ));
        }
        if let Some(only) = &s.only {
            if !only.iter().any(|n| n == ns) {
                return no(format!("watches only namespace(s) `{}`", only.join("`, `")));
            }
        } else if s.ignored.iter().any(|n| n == ns) {
            return no(format!(
                "ignores namespace `{ns}` (`--namespaces-to-ignore`)"
            ));
        } else if let Some(sel) = &s.namespace_selector {
            let labels = match ns_labels {
                Some(Ok(Some(l))) => l,
                Some(Err(why)) => {
                    return unsure(format!("has a `--namespace-selector`, and {why}"))
                }
                _ => {
                    return unsure(format!(
                        "has a `--namespace-selector`, and namespace `{ns}` cannot be read"
                    ))
                }
            };
            match selector::matches(sel, labels) {
                Ok(true) => {}
                Ok(false) => {
                    return no(format!(
                        "does not watch namespace `{ns}`: its labels do not match `--namespace-selector` `{sel}`"
                    ))
                }
                Err(e) => return unsure(format!("has a `--namespace-selector` vault-seed cannot read ({e})")),
            }
        }
        if let Some(sel) = &s.resource_selector {
            match selector::matches(sel, secret_labels) {
                Ok(true) => {}
                Ok(false) => {
                    return no(format!(
                        "does not watch the Secret: its labels do not match `--resource-label-selector` `{sel}`"
                    ))
                }
                Err(e) => return unsure(format!("has a `--resource-label-selector` vault-seed cannot read ({e})")),
            }
        }
        Watch::Runs(format!("{at} Ready and watching namespace `{ns}`"))
    }
}

/// Reloader's settings from its container's arguments and `KUBERNETES_NAMESPACE`.
fn settings(own_ns: &str, c: &crate::kube::ContainerInfo) -> Result<Settings, String> {
    let flags = flags(&c.args);
    let list = |name: &str| -> Vec<String> {
        flags
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| csv_fields(v))
            .filter(|v| !v.is_empty())
            .collect()
    };
    let last = |name: &str| {
        flags
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let namespaces = list("namespaces");
    let only = if !namespaces.is_empty() {
        Some(namespaces)
    } else {
        match c.env.iter().rev().find(|(n, _)| n == "KUBERNETES_NAMESPACE") {
            Some((_, EnvSource::Field(f))) if f == "metadata.namespace" => Some(vec![own_ns.to_string()]),
            Some((_, EnvSource::Value(v))) if !v.is_empty() => Some(vec![v.clone()]),
            Some((_, EnvSource::Value(_))) => None,
            Some(_) => return Err("its `KUBERNETES_NAMESPACE` comes from a source vault-seed does not read, so which namespaces it watches is not known".into()),
            None if c.env_from => return Err("its container takes variables from `envFrom`, so whether `KUBERNETES_NAMESPACE` limits it to one namespace is not known".into()),
            None => None,
        }
    };
    let selector = |name: &str| Some(label_selector_of(list(name))).filter(|s| !s.is_empty());
    Ok(Settings {
        only,
        ignored: list("namespaces-to-ignore"),
        namespace_selector: selector("namespace-selector"),
        resource_selector: selector("resource-label-selector"),
        ignores_secrets: list("resources-to-ignore")
            .iter()
            .any(|r| r.eq_ignore_ascii_case("secrets")),
        argo_rollouts: last("is-Argo-Rollouts").as_deref() == Some("true"),
        webhook: last("webhook-url").is_some_and(|u| !u.is_empty()),
        renamed: ANNOTATION_FLAGS
            .iter()
            .filter(|(f, default)| last(f).is_some_and(|v| v != *default))
            .map(|(f, _)| f.to_string())
            .collect(),
    })
}

/// `--name=value` and `--name value` (a boolean flag alone is `true`), in order.
fn flags(args: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let Some(flag) = a.strip_prefix("--").filter(|f| !f.is_empty()) else {
            continue;
        };
        match flag.split_once('=') {
            Some((n, v)) => out.push((n.to_string(), v.to_string())),
            None if BOOL_FLAGS.contains(&flag) => out.push((flag.to_string(), "true".into())),
            None => {
                let v = it
                    .next_if(|v| !v.starts_with("--"))
                    .cloned()
                    .unwrap_or_default();
                out.push((flag.to_string(), v));
            }
        }
    }
    out
}

/// A string slice flag's value as pflag reads it: comma-separated fields, as CSV (a field in
/// double quotes may hold commas: the chart passes `--namespace-selector="a=b,c=d"`).
fn csv_fields(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    out.push(field);
    out
}

/// Reloader's selector from its list (`GetNamespaceLabelSelector`): `key:value` is `key=value`,
/// `key:*` and `key=*` are `key` (exists), then joined with commas.
fn label_selector_of(items: Vec<String>) -> String {
    items
        .into_iter()
        .map(|kv| {
            let mut out = kv.clone();
            if kv.contains(':') {
                let split: Vec<&str> = kv.split(':').collect();
                out = match split[1] {
                    "*" => split[0].to_string(),
                    v => format!("{}={v}", split[0]),
                };
            }
            if kv.contains('=') {
                let split: Vec<&str> = kv.split('=').collect();
                if split[1] == "*" {
                    out = split[0].to_string();
                }
            }
            out
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::ContainerInfo;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Reloader's Deployment as the chart makes it in namespace `reloader`, with `args` and,
    /// unless `watch_globally`, `KUBERNETES_NAMESPACE` from the downward API.
    fn reloader(args: &[&str], watch_globally: bool) -> DeploymentInfo {
        let mut env = vec![(
            "RELOADER_DEPLOYMENT_NAME".to_string(),
            EnvSource::Value("reloader-reloader".into()),
        )];
        if !watch_globally {
            env.push((
                "KUBERNETES_NAMESPACE".into(),
                EnvSource::Field("metadata.namespace".into()),
            ));
        }
        DeploymentInfo {
            namespace: "reloader".into(),
            name: "reloader-reloader".into(),
            labels: labels(&[
                ("app", "reloader-reloader"),
                ("app.kubernetes.io/name", "reloader"),
            ]),
            ready: true,
            containers: vec![ContainerInfo {
                name: "reloader-reloader".into(),
                image: "ghcr.io/stakater/reloader:v1.4.21".into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env,
                env_from: false,
            }],
        }
    }

    fn watch(d: &DeploymentInfo, ns: &str, ns_labels: &Labels) -> Watch {
        let r = Reloader::of(d).expect("a Reloader");
        let read = Ok(Some(ns_labels.clone()));
        r.watches(ns, WorkloadKind::Deployment, Some(&read), &Labels::new())
    }

    fn runs(w: &Watch) -> bool {
        matches!(w, Watch::Runs(_))
    }

    #[test]
    fn a_reloader_is_told_by_label_environment_or_image() {
        let chart = reloader(&[], true);
        assert!(Reloader::of(&chart).is_some());
        // The plain manifests: no label, but the variable and the image.
        let mut manifest = chart.clone();
        manifest.labels.clear();
        assert!(Reloader::of(&manifest).is_some());
        manifest.containers[0].env.clear();
        assert!(Reloader::of(&manifest).is_some());
        // A mirror keeps the path; another image is not Reloader.
        manifest.containers[0].image = "harbor.local/stakater/reloader@sha256:00".into();
        assert!(Reloader::of(&manifest).is_some());
        manifest.containers[0].image = "nginx:1.27".into();
        assert!(Reloader::of(&manifest).is_none());
    }

    #[test]
    fn what_a_reloader_watches() {
        let none = Labels::new();
        // The chart's default (`watchGlobally: true`): every namespace.
        assert!(runs(&watch(&reloader(&[], true), "apps", &none)));
        // `watchGlobally: false`: its own namespace only.
        let own = watch(&reloader(&[], false), "apps", &none);
        assert_eq!(
            own,
            Watch::NotRunning("Reloader's Deployment `reloader/reloader-reloader` watches only namespace(s) `reloader`".into())
        );
        let listed = reloader(&["--namespaces=a,apps"], false);
        assert!(runs(&watch(&listed, "apps", &none)));
        let ignored = reloader(&["--namespaces-to-ignore=kube-system,apps"], true);
        assert!(!runs(&watch(&ignored, "apps", &none)));
        // The chart quotes the selector; `key:value` is the legacy form.
        let selected = reloader(
            &["--namespace-selector=\"team=ask,reloader:enabled\""],
            true,
        );
        assert!(runs(&watch(
            &selected,
            "apps",
            &labels(&[("team", "ask"), ("reloader", "enabled")])
        )));
        assert!(!runs(&watch(
            &selected,
            "apps",
            &labels(&[("team", "ask")])
        )));
        let unread: Result<Option<Labels>, String> = Err("forbidden".into());
        let r = Reloader::of(&selected).unwrap();
        assert!(matches!(
            r.watches("apps", WorkloadKind::Deployment, Some(&unread), &none),
            Watch::CannotTell(_)
        ));
        let secrets_off = reloader(&["--resources-to-ignore", "secrets"], true);
        assert!(!runs(&watch(&secrets_off, "apps", &none)));
        let r = Reloader::of(&reloader(&[], true)).unwrap();
        assert!(!runs(&r.watches(
            "apps",
            WorkloadKind::Rollout,
            None,
            &none
        )));
        let argo = Reloader::of(&reloader(&["--is-Argo-Rollouts=true"], true)).unwrap();
        assert!(runs(&argo.watches(
            "apps",
            WorkloadKind::Rollout,
            None,
            &none
        )));
        let renamed = reloader(&["--auto-annotation", "example.com/auto"], true);
        assert!(matches!(
            watch(&renamed, "apps", &none),
            Watch::CannotTell(_)
        ));
        let mut not_ready = reloader(&[], true);
        not_ready.ready = false;
        assert!(!runs(&watch(&not_ready, "apps", &none)));
    }

    #[test]
    fn several_reloaders_and_none() {
        let yes = Watch::Runs("a".into());
        let no = Watch::NotRunning("b".into());
        let unsure = Watch::CannotTell("c".into());
        assert_eq!(overall(vec![no.clone(), yes.clone()], "none"), yes);
        assert_eq!(overall(vec![no.clone(), unsure.clone()], "none"), unsure);
        assert_eq!(overall(vec![no.clone()], "none"), no);
        assert_eq!(
            overall(Vec::new(), "none"),
            Watch::NotRunning("none".into())
        );
    }

    /// Reloader's lists become one selector string (read by [`selector::matches`]).
    #[test]
    fn label_selectors() {
        let l = labels(&[("env", "prod"), ("n", "5")]);
        assert_eq!(
            label_selector_of(vec!["a:b".into(), "c:*".into(), "d=*".into()]),
            "a=b,c,d"
        );
        let sel = label_selector_of(vec!["env:prod".into(), "n>4".into()]);
        assert_eq!(selector::matches(&sel, &l), Ok(true));
        assert_eq!(csv_fields("\"a=b,c=d\",e"), ["a=b,c=d", "e"]);
    }
}
