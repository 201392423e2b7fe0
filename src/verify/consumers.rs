//! The part `consumers`: do the workloads that read the spec's target Secrets run with their
//! current data?
//!
//! For each target Secret (of the ExternalSecrets and VaultStaticSecrets the specs name), the
//! workloads of its namespace (Deployment, StatefulSet, DaemonSet, CronJob, Argo Rollout) that
//! read it, through the consumer view `order` uses ([`crate::model::consumers`]), and how:
//!
//! - a plain volume (`secret` or `projected`): the kubelet refreshes the files, fine;
//! - env (`env[].valueFrom.secretKeyRef`, `envFrom`) or a volume mounted with `subPath`: read
//!   once when the container starts, so every running pod must have started after the Secret's
//!   data last changed. When it did not, the workload is not done, unless something restarts it:
//!   Reloader's annotations with a Reloader running that watches the namespace, or the
//!   VaultStaticSecret's `rolloutRestartTargets` with VSO's controller running (VSO restarts
//!   them when it changes the data: [`super::restarters`]); then a note says which, and `--wait`
//!   waits for it. An annotation no running controller acts on is not done; one whose
//!   controller cannot be told is "cannot tell";
//! - a CronJob: its next run reads the Secret as it is then.
//!
//! When the data last changed is the latest `time` of the Secret's `managedFields` entries that
//! own a key of `data` ([`crate::kube::DataChange`]): the API server stamps an entry when that
//! manager's write changes the object, so the time is at or after the change (a write of the
//! same manager that changes only labels moves it later, which can only make pods look older).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;

use super::delivery::{self, Compare, Held, Mapping};
use super::findings::{
    any_problem, before_in_whole_seconds, rfc3339, Finding, Severity, Shape, Verdict,
};
use super::notes::RunNote;
use super::restarters::{Running, Watch};
use super::{Checked, Part, Progress, Request};
use crate::kube::names::is_dns1123_subdomain;
use crate::kube::{
    Cluster, DataChange, KeyDigest, KubeError, PodInfo, ReadKind, ReplicaSetInfo, WorkloadKind,
};
use crate::model::consumers::{consumer, Via};
use crate::model::producers::DataKind;
use crate::spec::EnvPlan;

/// A target Secret the part looks for readers of.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub secret: String,
    /// The object that writes it (`ExternalSecret ask/db`).
    pub source: String,
    /// The VaultStaticSecret's `rolloutRestartTargets`: VSO restarts these when it changes the
    /// data.
    pub restarted_by_vso: Vec<(WorkloadKind, String)>,
    /// The VaultStaticSecret's `hmacSecretData` (true for an ExternalSecret): without it VSO
    /// ignores `rolloutRestartTargets`.
    pub vso_hmac: bool,
    /// What feeds each of its keys from Vault, to tell which version of the data it holds.
    pub mappings: Vec<(Arc<str>, Mapping)>,
}

/// How a workload reads a Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// `env[].valueFrom.secretKeyRef` or `envFrom`: read when a container starts.
    Env,
    /// A volume mounted with `subPath`: the file is copied when the container starts.
    SubPath,
    /// A volume: the kubelet refreshes the files.
    Volume,
}

impl How {
    /// As said in a sentence ("reads it through env").
    pub fn as_str(self) -> &'static str {
        match self {
            How::Env => "env",
            How::SubPath => "a subPath volume",
            How::Volume => "a volume",
        }
    }
}

/// What restarts a workload when the Secret changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restarter {
    /// A Reloader annotation on the workload (its key).
    Reloader(String),
    /// A VaultStaticSecret's `rolloutRestartTargets`.
    Vso {
        /// The VaultStaticSecret (`namespace/name`).
        object: String,
        /// Its `hmacSecretData`.
        hmac: bool,
    },
}

impl std::fmt::Display for Restarter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Restarter::Reloader(a) => write!(f, "Reloader (annotation `{a}`)"),
            Restarter::Vso { object, .. } => {
                write!(f, "VSO (`rolloutRestartTargets` of {object})")
            }
        }
    }
}

impl Restarter {
    /// Whether its controller runs and acts on a `kind` of `ns` reading a Secret labelled
    /// `secret_labels`.
    async fn watch(
        &self,
        running: &Running<'_>,
        ns: &str,
        kind: WorkloadKind,
        secret_labels: &crate::kube::selector::LabelSet,
    ) -> Watch {
        match self {
            Restarter::Reloader(_) => running.reloader(ns, kind, secret_labels).await,
            Restarter::Vso { hmac, .. } => running.vso(*hmac).await,
        }
    }
}

/// What the part finds about one workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerFinding {
    /// It reads the Secret through a plain volume: refreshed by the kubelet.
    Volume {
        /// The Secret.
        secret: String,
    },
    /// A CronJob: its next run reads the Secret fresh.
    CronJob {
        /// The Secret.
        secret: String,
    },
    /// Every running pod started after the data changed.
    Fresh {
        /// The Secret.
        secret: String,
        /// How it reads it.
        how: How,
        /// Pods running.
        pods: usize,
    },
    /// Pods started before the change, and nothing restarts them.
    Stale {
        /// The Secret.
        secret: String,
        /// How it reads it.
        how: How,
        /// When the data changed.
        changed_at: OffsetDateTime,
        /// Who changed it (the `managedFields` manager).
        manager: Option<String>,
        /// The pods that started before.
        old: Vec<String>,
    },
    /// Pods started before the change, and something will restart them.
    WillRestart {
        /// The Secret.
        secret: String,
        /// How it reads it.
        how: How,
        /// What restarts it.
        by: Restarter,
        /// Which controller runs and acts on it.
        runs: String,
        /// Pods that started before the change.
        old: usize,
    },
    /// Pods started before the change, and what should restart them does not: the annotation
    /// or target is there, but no controller that runs acts on this workload.
    RestarterNotRunning {
        /// The Secret.
        secret: String,
        /// How it reads it.
        how: How,
        /// What was to restart it.
        by: Restarter,
        /// Why it does not (none runs, not Ready, the namespace not watched).
        why: String,
        /// When the data changed.
        changed_at: OffsetDateTime,
        /// Who changed it.
        manager: Option<String>,
        /// The pods that started before.
        old: Vec<String>,
    },
    /// Pods started before the change, and whether what should restart them acts cannot be
    /// told (a permission missing, a setting vault-seed does not read).
    RestarterCannotTell {
        /// The Secret.
        secret: String,
        /// How it reads it.
        how: How,
        /// What is to restart it.
        by: Restarter,
        /// Why it cannot be told.
        why: String,
        /// The pods that started before.
        old: Vec<String>,
    },
    /// Pods whose containers started after Vault had the data the Secret holds but before the
    /// Secret last changed: whether they read the current data cannot be told.
    CannotTell {
        /// The Secret.
        secret: String,
        /// How it reads it.
        how: How,
        /// When the Secret last changed (`managedFields`).
        changed_at: OffsetDateTime,
        /// Since when Vault has had the values the Secret holds, when known.
        held_since: Option<OffsetDateTime>,
        /// Why that is not known, when it is not.
        why: Option<String>,
        /// The pods.
        pods: Vec<String>,
    },
    /// When the data changed cannot be known here: not checked.
    NotChecked {
        /// The Secret.
        secret: String,
        /// How it reads it.
        how: How,
        /// Why.
        why: String,
    },
    /// A shape the check does not expect: named and skipped, never taken as fine.
    Shape {
        /// What is wrong.
        what: String,
    },
    /// A Rollout whose pod template is another object's (`spec.workloadRef`): not checked.
    WorkloadRef,
    /// A pod's `status.startTime` is not a time.
    BadStart {
        /// The pod.
        pod: String,
    },
    /// `--restart` sent the restart.
    Restarted {
        /// When.
        at: OffsetDateTime,
    },
    /// `--restart` could not restart it.
    RestartFailed {
        /// Why.
        error: String,
    },
}

impl Finding for ConsumerFinding {
    fn severity(&self) -> Severity {
        match self {
            ConsumerFinding::Stale { .. } | ConsumerFinding::RestarterNotRunning { .. } => {
                Severity::Leading
            }
            ConsumerFinding::Shape { .. }
            | ConsumerFinding::WorkloadRef
            | ConsumerFinding::BadStart { .. }
            | ConsumerFinding::RestartFailed { .. } => Severity::Problem,
            ConsumerFinding::Volume { .. }
            | ConsumerFinding::CronJob { .. }
            | ConsumerFinding::Fresh { .. }
            | ConsumerFinding::WillRestart { .. }
            | ConsumerFinding::NotChecked { .. }
            | ConsumerFinding::CannotTell { .. }
            | ConsumerFinding::RestarterCannotTell { .. }
            | ConsumerFinding::Restarted { .. } => Severity::Note,
        }
    }

    fn message(&self) -> String {
        match self {
            ConsumerFinding::Volume { secret } => format!(
                "reads `{secret}` through a volume: the kubelet refreshes its files, no restart needed"
            ),
            ConsumerFinding::CronJob { secret } => {
                format!("reads `{secret}`; a CronJob's next run reads it as it is then")
            }
            ConsumerFinding::Fresh { secret, how, pods } => format!(
                "reads `{secret}` through {}; its {pods} pod(s) started after the data last changed",
                how.as_str()
            ),
            ConsumerFinding::Stale {
                secret,
                how,
                changed_at,
                manager,
                old,
            } => format!(
                "reads `{secret}` through {}, but {} pod(s) started before its data changed at {}{} ({}): they run with the old value",
                how.as_str(),
                old.len(),
                rfc3339(*changed_at),
                manager.as_ref().map(|m| format!(" by `{m}`")).unwrap_or_default(),
                first_pods(old),
            ),
            ConsumerFinding::WillRestart { .. }
            | ConsumerFinding::RestarterNotRunning { .. }
            | ConsumerFinding::RestarterCannotTell { .. } => self.restart_message(),
            ConsumerFinding::CannotTell {
                secret,
                how,
                changed_at,
                held_since,
                why,
                pods,
            } => format!(
                "cannot tell: reads `{secret}` through {}, and {} pod(s) (`{}`{}) started {} but before the Secret last changed at {} (a change of its labels or annotations moves that time too): restart it to be sure",
                how.as_str(),
                pods.len(),
                pods.iter().take(3).cloned().collect::<Vec<_>>().join("`, `"),
                if pods.len() > 3 { ", …" } else { "" },
                match (held_since, why) {
                    (Some(t), _) => format!("after Vault had the data it holds ({})", rfc3339(*t)),
                    (None, Some(why)) => format!("at a time that cannot be set against Vault's ({why})"),
                    (None, None) => "when Vault already had its data".to_string(),
                },
                rfc3339(*changed_at),
            ),
            ConsumerFinding::NotChecked { secret, how, why } => format!(
                "not checked: reads `{secret}` through {}, and {why}",
                how.as_str()
            ),
            ConsumerFinding::Shape { what } => {
                format!("not checked: {what}; skipped, not taken as fine")
            }
            ConsumerFinding::WorkloadRef => "not checked: its pod template is another object's (`spec.workloadRef`), which vault-seed does not read".into(),
            ConsumerFinding::BadStart { pod } => {
                format!("not checked: pod `{pod}` has a `status.startTime` that is not a time")
            }
            ConsumerFinding::Restarted { at } => {
                format!("restarted at {} (--restart)", rfc3339(*at))
            }
            ConsumerFinding::RestartFailed { error } => format!("--restart failed: {error}"),
        }
    }
}

impl ConsumerFinding {
    /// The sentence of a finding about what restarts the workload.
    fn restart_message(&self) -> String {
        match self {
            ConsumerFinding::WillRestart {
                secret,
                how,
                by,
                runs,
                old,
            } => format!(
                "reads `{secret}` through {}; {old} pod(s) started before its data changed, and {by} restarts it, with {runs} (--wait waits for it)",
                how.as_str()
            ),
            ConsumerFinding::RestarterNotRunning {
                secret,
                how,
                by,
                why,
                changed_at,
                manager,
                old,
            } => format!(
                "reads `{secret}` through {}, but {} pod(s) started before its data changed at {}{} ({}): they run with the old value, and {by} restarts nothing: {why}",
                how.as_str(),
                old.len(),
                rfc3339(*changed_at),
                manager.as_ref().map(|m| format!(" by `{m}`")).unwrap_or_default(),
                first_pods(old),
            ),
            ConsumerFinding::RestarterCannotTell {
                secret,
                how,
                by,
                why,
                old,
            } => format!(
                "cannot tell: reads `{secret}` through {}, {} pod(s) ({}) started before its data changed, and whether {by} restarts it is not known: {why}",
                how.as_str(),
                old.len(),
                first_pods(old),
            ),
            _ => String::new(),
        }
    }
}

crate::base::codes::codes!(
    ConsumerFinding,
    ConsumerFinding {
        Volume => "volume-reader",
        CronJob => "cronjob-reader",
        Fresh => "fresh-pods",
        Stale => "stale-pods",
        WillRestart => "will-restart",
        RestarterNotRunning => "restarter-not-running",
        RestarterCannotTell => "restarter-cannot-tell",
        CannotTell => "cannot-tell",
        NotChecked => "not-checked",
        Shape => "unexpected-shape",
        WorkloadRef => "workload-ref",
        BadStart => "bad-start-time",
        Restarted => "restarted",
        RestartFailed => "restart-failed",
    }
);

/// What the part finds beyond one workload: a target whose readers cannot be looked for, and
/// target Secrets left unread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetFinding {
    /// An ExternalSecret the specs name does not exist (`object`: `namespace/name`).
    EsMissing {
        /// `namespace/name`.
        object: String,
    },
    /// A VaultStaticSecret the specs name does not exist.
    VssMissing {
        /// `namespace/name`.
        object: String,
    },
    /// A VaultStaticSecret's `rolloutRestartTargets` names a kind VSO does not restart.
    RestartKindUnknown {
        /// `namespace/name`.
        object: String,
        /// The kind, as written.
        kind: String,
    },
    /// A VaultStaticSecret's `rolloutRestartTargets` cannot be read.
    RestartTargetsBad {
        /// `namespace/name`.
        object: String,
        /// What is wrong with it.
        bad: String,
    },
    /// A VaultStaticSecret names no destination Secret.
    NoDestination {
        /// `namespace/name`.
        object: String,
    },
    /// `--skip-target-secrets`: when the data changed is not known.
    TargetsNotRead,
}

crate::base::codes::codes!(
    TargetFinding,
    TargetFinding {
        EsMissing => "external-secret-missing",
        VssMissing => "static-secret-missing",
        RestartKindUnknown => "restart-kind-unknown",
        RestartTargetsBad => "restart-targets-unreadable",
        NoDestination => "no-destination",
        TargetsNotRead => "targets-not-read",
    }
);

impl Finding for TargetFinding {
    fn severity(&self) -> Severity {
        match self {
            TargetFinding::TargetsNotRead => Severity::Note,
            TargetFinding::EsMissing { .. }
            | TargetFinding::VssMissing { .. }
            | TargetFinding::RestartKindUnknown { .. }
            | TargetFinding::RestartTargetsBad { .. }
            | TargetFinding::NoDestination { .. } => Severity::Problem,
        }
    }

    fn message(&self) -> String {
        match self {
            TargetFinding::EsMissing { object } => format!(
                "ExternalSecret `{object}` does not exist: the readers of its target Secret are not checked"
            ),
            TargetFinding::VssMissing { object } => format!(
                "VaultStaticSecret `{object}` does not exist: the readers of its destination Secret are not checked"
            ),
            TargetFinding::RestartKindUnknown { object, kind } => format!(
                "VaultStaticSecret `{object}`: `rolloutRestartTargets` kind `{kind}` is not one VSO restarts (`Deployment`, `StatefulSet`, `DaemonSet`, `argo.Rollout`)"
            ),
            TargetFinding::RestartTargetsBad { object, bad } => format!(
                "VaultStaticSecret `{object}`: {bad}: what VSO restarts is not known"
            ),
            TargetFinding::NoDestination { object } => format!(
                "VaultStaticSecret `{object}` names no `spec.destination.name`: its readers are not checked"
            ),
            TargetFinding::TargetsNotRead => "target Secrets were not read (--skip-target-secrets): when their data changed is not known, so readers through env or subPath are not checked".into(),
        }
    }
}

/// The part's own findings: its targets' problems, and whether target Secrets were read.
fn part_findings(pass: &Pass<'_>) -> Vec<TargetFinding> {
    let mut found = pass.problems.to_vec();
    if !pass.read {
        found.push(TargetFinding::TargetsNotRead);
    }
    found
}

/// The first three pod names, for a sentence: `a`, `b`, `c`, ….
fn first_pods(pods: &[String]) -> String {
    let mut s = format!(
        "`{}`",
        pods.iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("`, `")
    );
    if pods.len() > 3 {
        s.push_str(", …");
    }
    s
}

/// One workload that reads a target Secret.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadCheck {
    /// `Deployment`, `StatefulSet`, `DaemonSet`, `CronJob`, `Rollout`.
    pub kind: &'static str,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// No problem.
    pub ok: bool,
    /// Some reader's state could not be checked (and no problem).
    pub checked: bool,
    /// Whether its pods read the current data cannot be told (and no problem): not a failure;
    /// `fix` then suggests the restart that settles it.
    pub cannot_tell: bool,
    /// The target Secrets it reads.
    pub secrets: Vec<String>,
    /// How it reads them (`env`, `sub-path`, `volume`).
    pub how: Vec<How>,
    /// What restarts it (Reloader, VSO), when something does.
    pub restarted_by: Option<String>,
    /// The command that restarts it, when it needs one.
    pub fix: Option<String>,
    /// What is wrong, and what is worth knowing; `findings` with their codes.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Its findings while it is judged; let go once its last [`finish`] made them `verdict` (a
    /// platform has a check per workload, held to the end of the run).
    #[serde(skip)]
    findings: Vec<ConsumerFinding>,
    /// Whether time may help it: its pods older than a change, or being restarted.
    #[serde(skip)]
    waits: bool,
    #[serde(skip)]
    kind_of: Option<WorkloadKind>,
}

/// A target Secret, and when its data last changed.
#[derive(Debug, Clone, Serialize)]
pub struct SecretCheck {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// What writes it.
    pub source: String,
    /// Whether it was read (`--skip-target-secrets` reads none).
    pub read: bool,
    /// It exists (`null` when not read).
    pub exists: Option<bool>,
    /// When its data last changed (RFC 3339), when known.
    pub changed_at: Option<String>,
    /// The `managedFields` manager of that change.
    pub changed_by: Option<String>,
    /// When the newest Vault version its keys hold was created (RFC 3339), when its values
    /// were compared with Vault's and matched.
    pub vault_version_created: Option<String>,
}

/// The part's report.
#[derive(Debug, Clone, Serialize)]
pub struct ConsumersPart {
    /// Nothing is wrong.
    pub ok: bool,
    /// The API server.
    pub server: String,
    /// The kubeconfig context; `None` in a pod.
    pub context: Option<String>,
    /// Workloads whose reading could not be checked (each says why); not failures, but never
    /// shown as checked.
    pub not_checked: usize,
    /// Workloads whose pods may run with old data, which the facts cannot decide: not
    /// failures, named in the verdict.
    pub cannot_tell: usize,
    /// The target Secrets.
    pub secrets: Vec<SecretCheck>,
    /// The workloads that read them.
    pub workloads: Vec<WorkloadCheck>,
    /// What is wrong beyond one workload (a target that cannot be found), and what is worth
    /// knowing; `findings` with their codes.
    #[serde(flatten)]
    pub verdict: Verdict,
}

impl Part for ConsumersPart {
    fn ok(&self) -> bool {
        self.ok
    }
}

impl ConsumersPart {
    /// Whether time may help: pods older than a change, being restarted.
    fn worth_waiting(&self) -> bool {
        self.workloads.iter().any(|w| w.waits)
    }

    fn progress(&self) -> String {
        let waiting: Vec<&WorkloadCheck> = self
            .workloads
            .iter()
            .filter(|w| !w.ok || w.restarted_by.is_some())
            .collect();
        let named = super::cluster::named(waiting.iter().map(|w| {
            let why = w
                .verdict
                .problems()
                .first()
                .map(String::as_str)
                .or(w
                    .restarted_by
                    .as_deref()
                    .map(|_| "its restart is under way"))
                .unwrap_or("not done");
            format!("{} {}/{} ({why})", w.kind, w.namespace, w.name)
        }));
        format!(
            "{}/{} workload(s) run with the current data{named}",
            self.workloads.len() - waiting.len().min(self.workloads.len()),
            self.workloads.len()
        )
    }

    /// The namespaces of the workloads waited for.
    fn waited_namespaces(&self) -> BTreeSet<String> {
        self.workloads
            .iter()
            .filter(|w| !w.ok || w.restarted_by.is_some())
            .map(|w| w.namespace.clone())
            .collect()
    }
}

/// A workload's name as shown: escaped (control characters written out) and capped, so that
/// what a terminal shows is what the cluster sent.
fn shown_name(name: &str) -> String {
    crate::base::text::cap(&crate::base::text::escaped(name)).into_owned()
}

/// The `kubectl` command that restarts a workload.
pub fn restart_command(kind: WorkloadKind, ns: &str, name: &str) -> String {
    match kind {
        WorkloadKind::Rollout => format!("kubectl argo rollouts -n {ns} restart {name}"),
        k => format!(
            "kubectl -n {ns} rollout restart {}/{name}",
            k.kind().to_lowercase()
        ),
    }
}

/// Restarts done by `--restart`: each workload's, or why it failed.
type Restarted = BTreeMap<(WorkloadKind, String, String), Result<OffsetDateTime, String>>;

/// What one pass of the checks reads with.
struct Pass<'a> {
    cluster: &'a Cluster,
    targets: &'a [Target],
    problems: &'a [TargetFinding],
    read: bool,
    compare: Option<&'a Compare<'a>>,
    concurrency: usize,
    /// No pass follows this one (no `--wait`, no `--restart`): what it has read is forgotten
    /// once it is judged.
    last: bool,
}

impl Pass<'_> {
    /// The kinds each namespace of the targets is listed for (Pods and ReplicaSets are listed
    /// where a workload's reads need its pods, in [`check_once`]).
    fn kinds(&self) -> Vec<ReadKind> {
        let mut kinds: Vec<ReadKind> = WorkloadKind::ALL.map(ReadKind::Workloads).to_vec();
        if self.read {
            kinds.push(match self.compare {
                Some(_) => ReadKind::Secrets,
                None => ReadKind::SecretMetadata,
            });
        }
        kinds
    }

    /// List the kinds of [`Pass::kinds`] in `namespaces` (again, when `again`: their pods too).
    async fn list(&self, namespaces: &BTreeSet<String>, again: bool) {
        let digester = self.compare.map(Compare::digester);
        if again {
            self.cluster
                .forget(&[ReadKind::Pods, ReadKind::ReplicaSets], namespaces);
            self.cluster
                .relist(&self.kinds(), namespaces, digester, self.concurrency)
                .await;
        } else {
            self.cluster
                .read_by_list(&self.kinds(), namespaces, digester, self.concurrency)
                .await;
        }
    }
}

/// Find the target Secrets, check (with `--restart`, restart what needs it) and wait.
pub async fn check(
    connected: &super::cluster::Connected,
    plan: &EnvPlan<'_>,
    compare: Option<&Compare<'_>>,
    req: &Request,
    deadline: Option<Instant>,
    progress: &dyn Fn(Progress<'_>),
    notes: &mut Vec<RunNote>,
) -> Checked<ConsumersPart> {
    let cluster = match connected {
        Ok(c) => c,
        Err((error, help)) => return Checked::failed(error.clone(), Some(help.clone())),
    };
    // Listed already when the part `kube` ran; else listed here, not read one by one.
    super::cluster::list_objects(cluster, plan, req.concurrency).await;
    let (targets, problems) = match targets(cluster, plan, true).await {
        Ok(t) => t,
        Err(e) => return Checked::failed(e.to_string(), e.help()),
    };
    // This part is the last to read them (the part `kube` and Argo CD's ran before it).
    super::cluster::forget_objects(cluster, plan);
    let pass = Pass {
        cluster,
        targets: &targets,
        problems: &problems,
        read: !req.skip_target_secrets,
        compare,
        concurrency: req.concurrency,
        last: req.wait.is_none() && !req.restart,
    };
    pass.list(
        &targets.iter().map(|t| t.namespace.clone()).collect(),
        false,
    )
    .await;
    let mut restarted = Restarted::new();
    if req.restart {
        if let Err(e) = restart(&pass, &mut restarted, progress, notes).await {
            return Checked::failed(e.to_string(), e.help());
        }
    }
    let (pass, restarted) = (&pass, &restarted);
    let (result, ran_out) = super::cluster::poll(
        deadline,
        progress,
        |before: Option<ConsumersPart>| async move {
            // Again only where a workload is waited for; Vault's versions stay those read
            // after the part `kube` (its own waiting compared with Vault as it was then).
            if let Some(before) = before {
                pass.list(&before.waited_namespaces(), true).await;
            }
            check_once(pass, restarted).await
        },
        ConsumersPart::worth_waiting,
        ConsumersPart::progress,
    )
    .await;
    if let (Some(wait), true) = (req.wait, ran_out) {
        notes.push(RunNote::WaitRanOut {
            wait,
            what: "not every workload ran with the current data",
        });
    }
    match result {
        Ok(p) => Checked::Done(p),
        Err(e) => Checked::failed(e.to_string(), e.help()),
    }
}

/// `--restart`: check once, restart each workload that needs it, and note what was done.
async fn restart(
    pass: &Pass<'_>,
    restarted: &mut Restarted,
    progress: &dyn Fn(Progress<'_>),
    notes: &mut Vec<RunNote>,
) -> Result<(), KubeError> {
    let first = check_once(pass, restarted).await?;
    let mut touched = BTreeSet::new();
    for w in first.workloads.iter().filter(|w| w.fix.is_some()) {
        let Some(kind) = w.kind_of else { continue };
        let result = pass
            .cluster
            .restart(kind, &w.namespace, &w.name)
            .await
            .map_err(|e| e.to_string());
        if let Ok(at) = &result {
            let line = format!(
                "restarted {} {}/{} at {} (--restart)",
                kind.kind(),
                w.namespace,
                w.name,
                rfc3339(*at)
            );
            progress(Progress::Did(&line));
            notes.push(RunNote::Restarted { line });
            touched.insert(w.namespace.clone());
        }
        restarted.insert((kind, w.namespace.clone(), w.name.clone()), result);
    }
    if !touched.is_empty() {
        pass.list(&touched, true).await;
    }
    Ok(())
}

/// The target Secrets of the specs' ExternalSecrets and VaultStaticSecrets, read from the
/// cluster (`spec.target.name`, `spec.destination.name`); what cannot be found is a problem.
/// With `forget`, each namespace's objects are forgotten once its last is read: no part reads
/// them after this one, and a platform's are many to hold while its targets are made.
async fn targets(
    cluster: &Cluster,
    plan: &EnvPlan<'_>,
    forget: bool,
) -> Result<(Vec<Target>, Vec<TargetFinding>), KubeError> {
    let wanted = super::cluster::wanted(plan, cluster.default_namespace());
    let mut last = LastRead::new(cluster, forget, &wanted);
    let index = crate::spec::TargetIndex::new(&plan.targets);
    // Sized once: a platform's targets are many, and a doubled list is held to the end.
    let mut out: Vec<Target> =
        Vec::with_capacity(wanted.external_secrets.len() + wanted.static_secrets.len());
    let mut problems = Vec::new();
    let mut names = crate::base::interned::Interner::default();
    for (ns, name) in &wanted.external_secrets {
        match cluster.external_secret(ns, name).await? {
            Some(es) => out.push(Target {
                namespace: ns.clone(),
                secret: es.target_secret.clone(),
                source: format!("ExternalSecret {ns}/{name}"),
                restarted_by_vso: Vec::new(),
                vso_hmac: true,
                mappings: delivery::eso_mappings(&es, &index, &mut names),
            }),
            None => problems.push(TargetFinding::EsMissing {
                object: format!("{ns}/{name}"),
            }),
        }
        last.read(ReadKind::ExternalSecrets, ns);
    }
    for (ns, name) in &wanted.static_secrets {
        let found = cluster.vault_static_secret(ns, name).await?;
        last.read(ReadKind::VaultStaticSecrets, ns);
        match found {
            Some(v) => {
                let mut restarted_by_vso = Vec::new();
                for (kind, target) in &v.rollout_restart_targets {
                    match WorkloadKind::from_vso(kind) {
                        Some(k) => restarted_by_vso.push((k, target.clone())),
                        None => problems.push(TargetFinding::RestartKindUnknown {
                            object: format!("{ns}/{name}"),
                            kind: kind.clone(),
                        }),
                    }
                }
                if let Some(bad) = &v.rollout_restart_bad {
                    problems.push(TargetFinding::RestartTargetsBad {
                        object: format!("{ns}/{name}"),
                        bad: bad.to_string(),
                    });
                }
                if v.destination.is_empty() {
                    problems.push(TargetFinding::NoDestination {
                        object: format!("{ns}/{name}"),
                    });
                    continue;
                }
                out.push(Target {
                    namespace: ns.clone(),
                    secret: v.destination.clone(),
                    source: format!("VaultStaticSecret {ns}/{name}"),
                    restarted_by_vso,
                    vso_hmac: v.hmac,
                    mappings: delivery::vso_mappings(&v, &index, &mut names),
                });
            }
            None => problems.push(TargetFinding::VssMissing {
                object: format!("{ns}/{name}"),
            }),
        }
    }
    Ok((out, problems))
}

/// The targets of each namespace, in order, grouped in one pass (a filter of every target per
/// namespace is quadratic on a platform of one namespace per few applications).
fn by_namespace(targets: &[Target]) -> BTreeMap<&str, Vec<&Target>> {
    let mut out: BTreeMap<&str, Vec<&Target>> = BTreeMap::new();
    for t in targets {
        out.entry(t.namespace.as_str()).or_default().push(t);
    }
    out
}

/// A workload that reads, through env or a `subPath`, a Secret a value of `set` or `rotate`
/// reaches: it runs with the old value until it restarts (`set`'s and `rotate`'s `restarts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restart {
    /// `Deployment`, `StatefulSet`, `DaemonSet`, `Rollout`.
    pub kind: &'static str,
    /// Its namespace.
    pub namespace: String,
    /// Its name (capped).
    pub name: String,
    /// The Secret it reads.
    pub secret: String,
    /// How it reads it; `None`: its shape could not be read, so it may read it.
    pub how: Option<How>,
    /// What restarts it when the Secret changes, if anything does.
    pub restarted_by: Option<String>,
    /// Why what it relies on for its restart will not do it, or may not (no Reloader runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarter_problem: Option<String>,
    /// The command that restarts it.
    pub command: String,
}

/// Forgets a namespace's objects of a kind once the last of them is read.
struct LastRead<'c> {
    cluster: &'c Cluster,
    /// By kind and namespace, the objects not read yet (none to count without forgetting).
    left: HashMap<(ReadKind, String), usize>,
}

impl<'c> LastRead<'c> {
    /// The ExternalSecrets and VaultStaticSecrets of `wanted` to read.
    fn new(cluster: &'c Cluster, forget: bool, wanted: &super::eso::Wanted) -> Self {
        let mut left = HashMap::new();
        let all = [
            (ReadKind::ExternalSecrets, &wanted.external_secrets),
            (ReadKind::VaultStaticSecrets, &wanted.static_secrets),
        ];
        for (kind, objects) in all.into_iter().filter(|_| forget) {
            for (ns, _) in objects {
                *left.entry((kind, ns.clone())).or_default() += 1;
            }
        }
        LastRead { cluster, left }
    }

    /// One object of `kind` in `ns` was read.
    fn read(&mut self, kind: ReadKind, ns: &str) {
        if let Some(left) = self.left.get_mut(&(kind, ns.to_string())) {
            *left -= 1;
            if *left == 0 {
                self.cluster
                    .forget(&[kind], &BTreeSet::from([ns.to_string()]));
            }
        }
    }
}

/// The workloads that will need a restart once the Secrets `secrets` (namespace, name) change:
/// those reading one through env or a `subPath`, each with what restarts it, if anything.
/// CronJobs (their next run reads the Secret) and plain volumes (the kubelet refreshes them)
/// need none. A workload whose shape cannot be read is named as needing one: never taken as
/// not reading.
pub async fn restarts(
    cluster: &Cluster,
    plan: &EnvPlan<'_>,
    secrets: &BTreeSet<(String, String)>,
) -> Result<Vec<Restart>, KubeError> {
    let (all, _) = targets(cluster, plan, false).await?;
    let targets: Vec<Target> = all
        .into_iter()
        .filter(|t| secrets.contains(&(t.namespace.clone(), t.secret.clone())))
        .collect();
    let running = Running::new(cluster);
    let mut out = Vec::new();
    for (ns, in_ns) in by_namespace(&targets) {
        let mut changes = BTreeMap::new();
        for t in &in_ns {
            // Only the Secret's annotations and labels are used here; unreadable, none count.
            let change = cluster
                .secret_data_change(ns, &t.secret)
                .await
                .ok()
                .flatten()
                .unwrap_or(DataChange {
                    at: None,
                    manager: None,
                    reloader_match: false,
                    reloader_ignore: false,
                    labels: crate::kube::selector::LabelSet::default(),
                });
            changes.insert(t.secret.clone(), change);
        }
        for kind in WorkloadKind::ALL
            .into_iter()
            .filter(|k| *k != WorkloadKind::CronJob)
        {
            for kept in cluster.workloads(kind, ns).await? {
                let obj = kept.object();
                let on = Workload {
                    kind,
                    ns,
                    obj: &obj,
                };
                out.extend(restarts_of(&on, &in_ns, &changes, &running).await);
            }
        }
    }
    Ok(out)
}

/// The restarts workload `on` will need when the Secrets of `targets` change.
async fn restarts_of(
    on: &Workload<'_>,
    targets: &[&Target],
    changes: &BTreeMap<String, DataChange>,
    running: &Running<'_>,
) -> Vec<Restart> {
    let (kind, ns, obj) = (on.kind, on.ns, on.obj);
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let restart = |secret: &str, how| Restart {
        kind: kind.kind(),
        namespace: ns.to_string(),
        name: shown_name(name),
        secret: secret.to_string(),
        how,
        restarted_by: None,
        restarter_problem: None,
        command: if is_dns1123_subdomain(name) {
            restart_command(kind, ns, name)
        } else {
            "(not a valid Kubernetes name: no command is offered)".into()
        },
    };
    let readable = shape_problem(kind, obj).is_none();
    let Some(c) = readable
        .then(|| consumer(kind.group(), kind.kind(), obj))
        .flatten()
    else {
        if readable {
            return Vec::new();
        }
        return targets.iter().map(|t| restart(&t.secret, None)).collect();
    };
    let mut out = Vec::new();
    for (secret, how) in target_reads(kind, obj, &c.reads, targets) {
        if how == How::Volume {
            continue;
        }
        let mut r = restart(&secret, Some(how));
        let Some(change) = changes.get(&secret) else {
            out.push(r);
            continue;
        };
        if let Some(by) = restarter(kind, name, obj, &secret, change, targets) {
            match by.watch(running, ns, kind, &change.labels).await {
                Watch::Runs(runs) => r.restarted_by = Some(format!("{by}, with {runs},")),
                Watch::NotRunning(why) => {
                    r.restarter_problem = Some(format!("{by} restarts nothing: {why}"))
                }
                Watch::CannotTell(why) => {
                    r.restarter_problem =
                        Some(format!("whether {by} restarts it is not known: {why}"))
                }
            }
        }
        out.push(r);
    }
    out
}

/// Each target Secret's [`Change`], sorted by namespace and name (borrowed from the targets: a
/// platform's are many to copy).
struct Changes<'t>(Vec<((&'t str, &'t str), Change<'t>)>);

impl<'t> Changes<'t> {
    /// In any order, each Secret once.
    fn new(mut changes: Vec<((&'t str, &'t str), Change<'t>)>) -> Self {
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        changes.shrink_to_fit();
        Changes(changes)
    }

    /// The change of Secret `ns/name`, if it is a target.
    fn get(&self, ns: &str, name: &str) -> Option<&Change<'t>> {
        let at = self
            .0
            .binary_search_by(|((n, s), _)| (*n, *s).cmp(&(ns, name)))
            .ok()?;
        Some(&self.0[at].1)
    }
}

/// What the Secret tells: when its data changed, Reloader's annotations, and which of Vault's
/// versions its keys hold.
struct Change<'t> {
    data: Option<DataChange>,
    read: bool,
    held: Holding<'t>,
}

/// What Vault says of the data a Secret holds.
#[derive(Debug, Clone)]
enum Holding<'t> {
    /// Keys holding the Vault version their mapping selects, compared by digest.
    Known(Box<[KeyHeld<'t>]>),
    /// No key could be matched with a version: why.
    Unknown(String),
}

/// One key of a Secret holding a known version of Vault's data.
#[derive(Debug, Clone)]
struct KeyHeld<'t> {
    mapping: &'t Mapping,
    digest: KeyDigest,
    version: Option<u64>,
    created: OffsetDateTime,
}

impl Holding<'_> {
    /// When the newest version the Secret holds was created in Vault.
    fn newest(&self) -> Option<OffsetDateTime> {
        match self {
            Holding::Known(keys) => keys.iter().map(|k| k.created).max(),
            Holding::Unknown(_) => None,
        }
    }
}

/// Which versions of Vault's data the Secret `t` (read as `digests`) holds.
async fn holding<'t>(
    compare: &Compare<'_>,
    t: &'t Target,
    digests: &BTreeMap<String, KeyDigest>,
) -> Holding<'t> {
    let mut known = Vec::new();
    let mut why = Vec::new();
    for (key, mapping) in &t.mappings {
        let Some(d) = digests.get(&**key) else {
            continue;
        };
        match compare.held(mapping, d).await {
            Held::Selected {
                version,
                created: Some(created),
            } => known.push(KeyHeld {
                mapping,
                digest: *d,
                version,
                created,
            }),
            Held::Selected { created: None, .. } => why.push(format!(
                "key `{key}`: when its version was created is not known"
            )),
            Held::Other { .. } => why.push(format!(
                "key `{key}` does not hold the value Vault's version has"
            )),
            Held::NotCompared(w) => why.push(format!("key `{key}` not compared ({w})")),
        }
    }
    if known.is_empty() {
        Holding::Unknown(if why.is_empty() {
            "none of its keys is fed from a path of the spec".into()
        } else {
            why.join("; ")
        })
    } else {
        Holding::Known(known.into_boxed_slice())
    }
}

/// Each target Secret once: when its data changed, and which of Vault's versions it holds.
async fn read_secrets<'t>(
    cluster: &Cluster,
    targets: &'t [Target],
    read: bool,
    compare: Option<&Compare<'_>>,
) -> Result<(Vec<SecretCheck>, Changes<'t>), KubeError> {
    // At most one a target, held to the end.
    let mut secrets = Vec::with_capacity(targets.len());
    let mut changes = Vec::with_capacity(targets.len());
    let mut seen = HashSet::new();
    for t in targets {
        let key = (t.namespace.as_str(), t.secret.as_str());
        if !seen.insert(key) {
            continue;
        }
        let data = if read {
            cluster.secret_data_change(&t.namespace, &t.secret).await?
        } else {
            None
        };
        let held = match (compare, data.is_some()) {
            (Some(c), true) => {
                match cluster
                    .secret_digests(&t.namespace, &t.secret, c.digester())
                    .await?
                {
                    Some(d) => holding(c, t, &d).await,
                    None => Holding::Unknown("the Secret is gone".into()),
                }
            }
            _ => Holding::Unknown("its values were not compared with Vault".into()),
        };
        secrets.push(SecretCheck {
            namespace: t.namespace.clone(),
            name: t.secret.clone(),
            source: t.source.clone(),
            read,
            exists: read.then_some(data.is_some()),
            changed_at: data.as_ref().and_then(|d| d.at).map(rfc3339),
            changed_by: data.as_ref().and_then(|d| d.manager.clone()),
            vault_version_created: held.newest().map(rfc3339),
        });
        changes.push((key, Change { data, read, held }));
    }
    secrets.shrink_to_fit();
    Ok((secrets, Changes::new(changes)))
}

/// Every check of the part, once: each workload's reads judged, then the pods of those whose
/// reads need them (listed together, each namespace judged as its pods come in). A workload is
/// parsed where it is judged and again where its pods are, never held parsed: a platform's are
/// many.
async fn check_once(pass: &Pass<'_>, restarted: &Restarted) -> Result<ConsumersPart, KubeError> {
    let cluster = pass.cluster;
    let (secrets, changes) = read_secrets(cluster, pass.targets, pass.read, pass.compare).await?;
    if pass.last {
        // Said in `changes`: a platform's Secrets, their keys digested, are many to hold while
        // the pods are listed.
        let namespaces = pass.targets.iter().map(|t| t.namespace.clone()).collect();
        cluster.forget(&[ReadKind::Secrets, ReadKind::SecretMetadata], &namespaces);
    }
    let by_ns = by_namespace(pass.targets);
    // Each workload's check, and beside it where it was found: one list of checks, each
    // finished in place (a platform's checks are many to hold twice).
    let mut workloads = Vec::new();
    let mut found = Vec::new();
    for (&ns, in_ns) in &by_ns {
        for kind in WorkloadKind::ALL {
            for kept in cluster.workloads(kind, ns).await? {
                if let Some(w) = judge_workload(kind, ns, &kept.object(), in_ns, &changes) {
                    found.push((kind, ns, kept));
                    workloads.push(w);
                }
            }
        }
    }
    // Held while the pods are listed and judged: at their length, not at the last doubling.
    workloads.shrink_to_fit();
    found.shrink_to_fit();
    let judge = Judge {
        pass,
        restarted,
        running: &Running::new(cluster),
        changes: &changes,
        by_ns: &by_ns,
    };
    judge.all(&found, &mut workloads).await?;
    Ok(part(pass, secrets, workloads))
}

/// What judging a namespace's workloads with their pods reads.
struct Judge<'a> {
    pass: &'a Pass<'a>,
    restarted: &'a Restarted,
    running: &'a Running<'a>,
    changes: &'a Changes<'a>,
    by_ns: &'a BTreeMap<&'a str, Vec<&'a Target>>,
}

impl Judge<'_> {
    /// Finish the checks `workloads` of the workloads `found` (in namespace order): those whose
    /// reads need no pod first; then the ReplicaSets (a Deployment's current pods are found
    /// through them) and the pods, each namespace judged, and forgotten, as soon as its pods
    /// are in: a platform's pods are many to hold at once.
    async fn all(
        &self,
        found: &[(WorkloadKind, &str, crate::kube::Kept)],
        workloads: &mut [WorkloadCheck],
    ) -> Result<(), KubeError> {
        // One namespace's workloads after another, each span in namespace order.
        let mut spans: BTreeMap<&str, std::ops::Range<usize>> = BTreeMap::new();
        for (i, (_, ns, _)) in found.iter().enumerate() {
            spans.entry(ns).or_insert(i..i).end = i + 1;
        }
        let (pods, replica_sets) = needing_pods(found, workloads);
        for (ns, span) in &spans {
            if !pods.contains(*ns) {
                self.span(&found[span.clone()], &mut workloads[span.clone()], false)
                    .await?;
            }
        }
        let (cluster, concurrency) = (self.pass.cluster, self.pass.concurrency);
        cluster
            .read_by_list(&[ReadKind::ReplicaSets], &replica_sets, None, concurrency)
            .await;
        let (tx, mut rx) = futures::channel::mpsc::unbounded::<String>();
        let pods_listed = &pods;
        let list = async move {
            let ready = move |ns: &str| {
                // The receiver is gone only when judging failed: the error is what is reported.
                let _ = tx.unbounded_send(ns.to_string());
            };
            cluster
                .list_pods_each(pods_listed, concurrency, &ready)
                .await;
        };
        let judged = async {
            let mut judged = BTreeSet::new();
            while let Some(ns) = futures::StreamExt::next(&mut rx).await {
                let Some(span) = spans.get(ns.as_str()) else {
                    continue;
                };
                // Named again: its pods were listed again alone, so it is judged again from the
                // start.
                let again = !judged.insert(ns.clone());
                self.span(&found[span.clone()], &mut workloads[span.clone()], again)
                    .await?;
                if self.pass.last {
                    let one = BTreeSet::from([ns]);
                    cluster.forget(&[ReadKind::Pods, ReadKind::ReplicaSets], &one);
                }
            }
            Ok::<_, KubeError>(judged)
        };
        let ((), judged) = futures::join!(list, judged);
        let judged = judged?;
        // Every namespace is named; were one not, its pods are read from the server here.
        for (ns, span) in spans.iter().filter(|(ns, _)| pods.contains(**ns)) {
            if !judged.contains(*ns) {
                self.span(&found[span.clone()], &mut workloads[span.clone()], false)
                    .await?;
            }
        }
        Ok(())
    }

    /// Finish the checks `workloads` of the workloads `found` (one namespace's): their pods
    /// judged where their reads need them, and what `--restart` did. `again`: they were
    /// finished before from part of their pods, so they are judged again from the start.
    async fn span(
        &self,
        found: &[(WorkloadKind, &str, crate::kube::Kept)],
        workloads: &mut [WorkloadCheck],
        again: bool,
    ) -> Result<(), KubeError> {
        // The ReplicaSets of the namespace, read when a workload there first needs them.
        let mut replica_sets: Option<Vec<ReplicaSetInfo>> = None;
        for ((kind, ns, kept), w) in found.iter().zip(workloads.iter_mut()) {
            let (kind, ns) = (*kind, *ns);
            let obj = kept.object();
            let in_ns = &self.by_ns[ns];
            if again {
                match judge_workload(kind, ns, &obj, in_ns, self.changes) {
                    Some(fresh) => *w = fresh,
                    None => continue,
                }
            }
            if w.findings.iter().any(needs_pods) {
                let on = Workload {
                    kind,
                    ns,
                    obj: &obj,
                };
                let ctx = PodsCtx {
                    cluster: self.pass.cluster,
                    compare: self.pass.compare,
                    targets: in_ns,
                    changes: self.changes,
                    running: self.running,
                };
                pods_findings(&ctx, &on, &mut replica_sets, w).await?;
            }
            if let Some(r) = self.restarted.get(&(kind, ns.to_string(), w.name.clone())) {
                w.findings.push(match r {
                    Ok(at) => ConsumerFinding::Restarted { at: *at },
                    Err(e) => ConsumerFinding::RestartFailed { error: e.clone() },
                });
            }
            finish(w);
            // Said in its verdict now, and judged for the last time.
            w.findings = Vec::new();
        }
        Ok(())
    }
}

/// The namespaces where a judged workload's reads need its pods, and of those, the ones where
/// it is a Deployment or a Rollout (whose ReplicaSets are read too).
fn needing_pods(
    found: &[(WorkloadKind, &str, crate::kube::Kept)],
    checks: &[WorkloadCheck],
) -> (BTreeSet<String>, BTreeSet<String>) {
    let needing = found
        .iter()
        .zip(checks)
        .filter(|(_, w)| w.findings.iter().any(needs_pods))
        .map(|(f, _)| f);
    let pods: BTreeSet<String> = needing.clone().map(|(_, ns, ..)| ns.to_string()).collect();
    let rs: BTreeSet<String> = needing
        .filter(|(k, ..)| matches!(k, WorkloadKind::Deployment | WorkloadKind::Rollout))
        .map(|(_, ns, ..)| ns.to_string())
        .collect();
    (pods, rs)
}

/// The part's report from its Secrets and workloads.
fn part(
    pass: &Pass<'_>,
    secrets: Vec<SecretCheck>,
    workloads: Vec<WorkloadCheck>,
) -> ConsumersPart {
    let not_checked = workloads.iter().filter(|w| w.ok && !w.checked).count();
    let cannot_tell = workloads.iter().filter(|w| w.cannot_tell).count();
    let ok = !any_problem(pass.problems) && workloads.iter().all(|w| w.ok);
    ConsumersPart {
        ok,
        server: pass.cluster.server().to_string(),
        context: pass.cluster.context().map(str::to_string),
        not_checked,
        cannot_tell,
        secrets,
        workloads,
        // Not capped: they name the spec's objects, as they always read.
        verdict: Verdict::shown(&part_findings(pass), |_, m| m).shaped(Shape::PROBLEMS_NOTES),
    }
}

/// A placeholder the pods check replaces.
fn needs_pods(f: &ConsumerFinding) -> bool {
    matches!(
        f,
        ConsumerFinding::Fresh {
            pods: usize::MAX,
            ..
        }
    )
}

fn finish(w: &mut WorkloadCheck) {
    w.ok = !any_problem(&w.findings);
    w.checked = !w
        .findings
        .iter()
        .any(|f| matches!(f, ConsumerFinding::NotChecked { .. }));
    w.cannot_tell = w.ok
        && w.findings.iter().any(|f| {
            matches!(
                f,
                ConsumerFinding::CannotTell { .. } | ConsumerFinding::RestarterCannotTell { .. }
            )
        });
    w.fix = w
        .findings
        .iter()
        .any(|f| {
            matches!(
                f,
                ConsumerFinding::Stale { .. }
                    | ConsumerFinding::CannotTell { .. }
                    | ConsumerFinding::RestarterNotRunning { .. }
                    | ConsumerFinding::RestarterCannotTell { .. }
            )
        })
        .then(|| w.kind_of.map(|k| restart_command(k, &w.namespace, &w.name)))
        .flatten();
    w.restarted_by = w.findings.iter().find_map(|f| match f {
        ConsumerFinding::WillRestart { by, .. } => Some(by.to_string()),
        _ => None,
    });
    w.waits = w.findings.iter().any(|f| {
        matches!(
            f,
            ConsumerFinding::Stale { .. }
                | ConsumerFinding::WillRestart { .. }
                | ConsumerFinding::RestarterNotRunning { .. }
                | ConsumerFinding::RestarterCannotTell { .. }
        )
    });
    w.verdict = Verdict::of(&w.findings)
        .explanations_as_notes()
        .shaped(Shape::PROBLEMS_NOTES);
}

/// The workload's reads of the targets, judged without its pods; `None` when it reads none.
fn judge_workload(
    kind: WorkloadKind,
    ns: &str,
    obj: &Value,
    targets: &[&Target],
    changes: &Changes<'_>,
) -> Option<WorkloadCheck> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let mut w = WorkloadCheck {
        kind: kind.kind(),
        namespace: ns.to_string(),
        name: shown_name(name),
        ok: true,
        checked: true,
        cannot_tell: false,
        secrets: Vec::new(),
        how: Vec::new(),
        restarted_by: None,
        fix: None,
        verdict: Verdict::default(),
        findings: Vec::new(),
        waits: false,
        kind_of: Some(kind),
    };
    if !is_dns1123_subdomain(name) {
        // A name the API server would refuse: shown escaped, never put in a command to paste.
        w.findings.push(ConsumerFinding::Shape {
            what: format!(
                "its name `{}` is not a valid Kubernetes name, so no restart is offered for it",
                w.name
            ),
        });
        finish(&mut w);
        return Some(w);
    }
    if let Some(what) = shape_problem(kind, obj) {
        // Whether it reads a target is not known: named, never taken as not reading.
        w.findings.push(ConsumerFinding::Shape { what });
        finish(&mut w);
        return Some(w);
    }
    let c = consumer(kind.group(), kind.kind(), obj)?;
    if c.workload_ref.is_some() {
        w.findings.push(ConsumerFinding::WorkloadRef);
        finish(&mut w);
        return Some(w);
    }
    let reads = target_reads(kind, obj, &c.reads, targets);
    if reads.is_empty() {
        return None;
    }
    for (secret, how) in reads {
        if !w.how.contains(&how) {
            w.how.push(how);
        }
        let change = changes.get(ns, &secret);
        w.secrets.push(secret.clone());
        w.findings.push(reader_finding(kind, how, secret, change));
    }
    // Held for every workload of a platform while their pods are listed.
    w.findings.shrink_to_fit();
    Some(w)
}

/// Each target Secret `reads` reads, with the strongest way it is read (env before subPath
/// before volume).
fn target_reads(
    kind: WorkloadKind,
    obj: &Value,
    reads: &[crate::model::consumers::Read],
    targets: &[&Target],
) -> BTreeMap<String, How> {
    let sub_path = pod_spec(kind, obj)
        .map(sub_path_volumes)
        .unwrap_or_default();
    let mut out: BTreeMap<String, How> = BTreeMap::new();
    for r in reads.iter().filter(|r| r.data == DataKind::Secret) {
        let how = match &r.via {
            Via::Env { .. } | Via::EnvFrom { .. } => How::Env,
            Via::Volume { volume } | Via::Projected { volume } if sub_path.contains(volume) => {
                How::SubPath
            }
            Via::Volume { .. } | Via::Projected { .. } => How::Volume,
            Via::ImagePullSecrets => continue,
        };
        if targets.iter().any(|t| t.secret == r.name) {
            let e = out.entry(r.name.clone()).or_insert(how);
            *e = (*e).min(how);
        }
    }
    out
}

/// What one read is, before the pods are looked at: readers through env or subPath whose
/// Secret's change time is known get a placeholder ([`needs_pods`]) that [`pods_findings`]
/// replaces.
fn reader_finding(
    kind: WorkloadKind,
    how: How,
    secret: String,
    change: Option<&Change<'_>>,
) -> ConsumerFinding {
    match (kind, how, change) {
        (WorkloadKind::CronJob, _, _) => ConsumerFinding::CronJob { secret },
        (_, How::Volume, _) => ConsumerFinding::Volume { secret },
        (_, _, Some(Change { read: false, .. })) => ConsumerFinding::NotChecked {
            secret,
            how,
            why: "when its data changed is not known without reading it (--skip-target-secrets)"
                .into(),
        },
        (_, _, Some(Change { data: None, .. }) | None) => ConsumerFinding::Shape {
            what: format!(
                "Secret `{secret}` does not exist, so its readers through env cannot start"
            ),
        },
        (
            _,
            _,
            Some(Change {
                data: Some(DataChange { at: None, .. }),
                ..
            }),
        ) => ConsumerFinding::Shape {
            what: format!(
                "when Secret `{secret}`'s data changed is not known: no `managedFields` entry owns its `data`"
            ),
        },
        (_, _, Some(_)) => ConsumerFinding::Fresh {
            secret,
            how,
            pods: usize::MAX,
        },
    }
}

/// The workload whose pods are looked at.
struct Workload<'a> {
    kind: WorkloadKind,
    ns: &'a str,
    obj: &'a Value,
}

/// What the pods check of one namespace shares.
struct PodsCtx<'a> {
    cluster: &'a Cluster,
    compare: Option<&'a Compare<'a>>,
    targets: &'a [&'a Target],
    changes: &'a Changes<'a>,
    running: &'a Running<'a>,
}

/// How one running container stands to a Secret's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Started {
    /// At or after the data's last change: it read the current data.
    After,
    /// Before Vault had the value the Secret holds: it cannot have read it.
    Before,
    /// Between the two: the facts do not decide.
    Between,
}

/// Replace the placeholders of `w` with what its current pods show: a container that started
/// before Vault had the data the Secret holds runs with old data (not done); one started after
/// the Secret's data last changed runs with the current data; one between the two cannot be
/// told (the `managedFields` time also moves when only labels or annotations change).
async fn pods_findings(
    ctx: &PodsCtx<'_>,
    on: &Workload<'_>,
    replica_sets: &mut Option<Vec<ReplicaSetInfo>>,
    w: &mut WorkloadCheck,
) -> Result<(), KubeError> {
    let selector = match label_selector(on.obj) {
        Ok(s) => s,
        Err(what) => {
            w.findings.retain(|f| !needs_pods(f));
            w.findings.push(ConsumerFinding::Shape { what });
            return Ok(());
        }
    };
    let selected = ctx.cluster.pods(on.ns, &selector).await?;
    if matches!(on.kind, WorkloadKind::Deployment | WorkloadKind::Rollout) && replica_sets.is_none()
    {
        *replica_sets = Some(ctx.cluster.replica_sets(on.ns).await?);
    }
    let pods = current_pods(on, &selected, replica_sets.as_deref().unwrap_or_default());
    for p in pods.iter().filter(|p| p.bad_start) {
        w.findings.push(ConsumerFinding::BadStart {
            pod: p.name.clone(),
        });
    }
    let readers = reading_containers(on);
    let findings = std::mem::take(&mut w.findings);
    for f in findings {
        let ConsumerFinding::Fresh {
            secret,
            how,
            pods: usize::MAX,
        } = f
        else {
            w.findings.push(f);
            continue;
        };
        let Some(
            change @ Change {
                data: Some(data @ DataChange { at: Some(at), .. }),
                ..
            },
        ) = ctx.changes.get(on.ns, &secret)
        else {
            continue;
        };
        let containers = readers.get(&secret).filter(|_| how == How::Env);
        let mut first = None;
        let (mut old, mut between) = (Vec::new(), Vec::new());
        for p in &pods {
            match pod_vs(ctx, change, p, containers, *at, &mut first).await {
                Started::Before => old.push(p.name.clone()),
                Started::Between => between.push(p.name.clone()),
                Started::After => {}
            }
        }
        let by = match restarter(on.kind, &w.name, on.obj, &secret, data, ctx.targets) {
            // Whether its controller acts matters only for pods it would have to restart.
            Some(by) if !old.is_empty() => {
                let watch = by.watch(ctx.running, on.ns, on.kind, &data.labels).await;
                Some((by, watch))
            }
            _ => None,
        };
        let seen = Seen {
            pods: pods.len(),
            old,
            between,
            since: first.flatten().or(change.held.newest()),
        };
        w.findings
            .push(reader_verdict(secret, how, (*at, change, data), by, seen));
    }
    Ok(())
}

/// What the pods of a workload showed about one Secret.
struct Seen {
    /// Current pods.
    pods: usize,
    /// Those that started before Vault had the data.
    old: Vec<String>,
    /// Those the facts cannot place.
    between: Vec<String>,
    /// Since when Vault has had the data the Secret holds, when known.
    since: Option<OffsetDateTime>,
}

/// A reader's finding from what its pods showed: pods older than Vault's data are stale
/// (unless something restarts them); pods the facts cannot place are "cannot tell".
fn reader_verdict(
    secret: String,
    how: How,
    (at, change, data): (OffsetDateTime, &Change<'_>, &DataChange),
    by: Option<(Restarter, Watch)>,
    seen: Seen,
) -> ConsumerFinding {
    match (seen.old.is_empty(), seen.between.is_empty(), by) {
        (true, true, _) => ConsumerFinding::Fresh {
            secret,
            how,
            pods: seen.pods,
        },
        (false, _, Some((by, Watch::Runs(runs)))) => ConsumerFinding::WillRestart {
            secret,
            how,
            by,
            runs,
            old: seen.old.len(),
        },
        (false, _, Some((by, Watch::NotRunning(why)))) => ConsumerFinding::RestarterNotRunning {
            secret,
            how,
            by,
            why,
            changed_at: at,
            manager: data.manager.clone(),
            old: seen.old,
        },
        (false, _, Some((by, Watch::CannotTell(why)))) => ConsumerFinding::RestarterCannotTell {
            secret,
            how,
            by,
            why,
            old: seen.old,
        },
        (false, _, None) => ConsumerFinding::Stale {
            secret,
            how,
            changed_at: at,
            manager: data.manager.clone(),
            old: seen.old,
        },
        (true, false, _) => ConsumerFinding::CannotTell {
            secret,
            how,
            changed_at: at,
            held_since: seen.since,
            why: match &change.held {
                Holding::Unknown(why) => Some(why.clone()),
                Holding::Known(_) => None,
            },
            pods: seen.between,
        },
    }
}

/// How a pod stands to a Secret: as its container that started earliest among those reading
/// it (`containers`; `None`: all) does. Containers not running read it when they start.
async fn pod_vs(
    ctx: &PodsCtx<'_>,
    change: &Change<'_>,
    p: &PodInfo,
    containers: Option<&BTreeSet<String>>,
    changed: OffsetDateTime,
    first: &mut Option<Option<OffsetDateTime>>,
) -> Started {
    let mut worst = Started::After;
    for (name, started) in &p.containers {
        let (Some(s), true) = (started, containers.is_none_or(|c| c.contains(name))) else {
            continue;
        };
        let state = started_vs(ctx, change, *s, changed, first).await;
        worst = match (worst, state) {
            (Started::Before, _) | (_, Started::Before) => Started::Before,
            (Started::Between, _) | (_, Started::Between) => Started::Between,
            _ => Started::After,
        };
    }
    worst
}

/// How a container started at `started` stands to a Secret whose data last changed at or
/// before `changed` (`managedFields`) and which holds `change.held`. `first` keeps, once
/// asked, since when Vault has had the values the Secret holds.
async fn started_vs(
    ctx: &PodsCtx<'_>,
    change: &Change<'_>,
    started: OffsetDateTime,
    changed: OffsetDateTime,
    first: &mut Option<Option<OffsetDateTime>>,
) -> Started {
    if started >= changed {
        return Started::After;
    }
    let Some(newest) = change.held.newest() else {
        return Started::Between;
    };
    if !before_in_whole_seconds(started, newest) {
        return Started::Between;
    }
    // The newest version the Secret holds is younger than the container; the value may be
    // older still (a version written again with the same value): since when Vault has had it.
    if first.is_none() {
        *first = Some(match (ctx.compare, &change.held) {
            (Some(c), Holding::Known(keys)) => {
                let mut since = None;
                for k in keys {
                    let f = c
                        .first_held(k.mapping, &k.digest, k.version, Some(k.created))
                        .await;
                    match f {
                        Some(f) => since = Some(since.map_or(f, |s: OffsetDateTime| s.max(f))),
                        None => {
                            since = None;
                            break;
                        }
                    }
                }
                since
            }
            _ => None,
        });
    }
    match first.flatten() {
        Some(since) if before_in_whole_seconds(started, since) => Started::Before,
        _ => Started::Between,
    }
}

/// The pods that are the workload's now: running, not being deleted, controlled by it (a
/// Deployment's or a Rollout's through its current ReplicaSet, a StatefulSet's of its update
/// revision), not pods of another owner that share its labels, nor finished or evicted ones
/// (they stay until pod garbage collection).
fn current_pods<'p>(
    on: &Workload<'_>,
    selected: &'p [PodInfo],
    replica_sets: &[ReplicaSetInfo],
) -> Vec<&'p PodInfo> {
    let uid = on
        .obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let s = |ptr: &str| on.obj.pointer(ptr).and_then(Value::as_str);
    let owners: Vec<&str> = match on.kind {
        WorkloadKind::Deployment | WorkloadKind::Rollout => {
            let owned: Vec<&ReplicaSetInfo> = replica_sets
                .iter()
                .filter(|r| r.owner.as_ref().is_some_and(|o| o.uid == uid))
                .collect();
            // Deployment controller: `deployment.kubernetes.io/revision` of the newest
            // ReplicaSet is also set on the Deployment (kubernetes
            // `pkg/controller/deployment/sync.go`, `getNewReplicaSet`); Argo Rollouts names its
            // current ReplicaSet's `rollouts-pod-template-hash` in `status.currentPodHash`.
            let current: Vec<&ReplicaSetInfo> = match on.kind {
                WorkloadKind::Deployment => {
                    let rev = s("/metadata/annotations/deployment.kubernetes.io~1revision");
                    owned
                        .iter()
                        .copied()
                        .filter(|r| rev.is_some() && r.revision.as_deref() == rev)
                        .collect()
                }
                _ => {
                    let hash = s("/status/currentPodHash");
                    owned
                        .iter()
                        .copied()
                        .filter(|r| hash.is_some() && r.rollout_hash.as_deref() == hash)
                        .collect()
                }
            };
            // Which is current cannot be told: every ReplicaSet of its own counts.
            let chosen = if current.is_empty() { owned } else { current };
            chosen.iter().map(|r| r.uid.as_str()).collect()
        }
        _ => vec![uid],
    };
    let revision = (on.kind == WorkloadKind::StatefulSet)
        .then(|| s("/status/updateRevision"))
        .flatten();
    selected
        .iter()
        .filter(|p| p.phase.as_deref() == Some("Running") && !p.deleting)
        .filter(|p| {
            p.owner
                .as_ref()
                .is_some_and(|o| !o.uid.is_empty() && owners.contains(&o.uid.as_str()))
        })
        .filter(|p| revision.is_none() || p.revision.as_deref() == revision)
        .collect()
}

/// For each Secret the workload reads through env, the containers that do (`env`, `envFrom`).
fn reading_containers(on: &Workload<'_>) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if let Some(c) = consumer(on.kind.group(), on.kind.kind(), on.obj) {
        for r in c.reads.iter().filter(|r| r.data == DataKind::Secret) {
            if let Via::Env { container, .. } | Via::EnvFrom { container } = &r.via {
                out.entry(r.name.clone())
                    .or_default()
                    .insert(container.clone());
            }
        }
    }
    out
}

/// What restarts workload `kind/name` when `secret` changes: Reloader's annotations on it
/// (`reloader.stakater.com/auto`, `secret.reloader.stakater.com/auto`,
/// `secret.reloader.stakater.com/reload` naming the Secret, `reloader.stakater.com/search` with
/// the Secret's `reloader.stakater.com/match`; none when the Secret has
/// `reloader.stakater.com/ignore`: Reloader's `internal/pkg/handler`), or a VaultStaticSecret's
/// `rolloutRestartTargets` naming it.
fn restarter(
    kind: WorkloadKind,
    name: &str,
    obj: &Value,
    secret: &str,
    change: &DataChange,
    targets: &[&Target],
) -> Option<Restarter> {
    let vso = targets
        .iter()
        .filter(|t| t.secret == secret)
        .find(|t| {
            t.restarted_by_vso
                .iter()
                .any(|(k, n)| *k == kind && n == name)
        })
        .map(|t| Restarter::Vso {
            object: t
                .source
                .trim_start_matches("VaultStaticSecret ")
                .to_string(),
            hmac: t.vso_hmac,
        });
    if vso.is_some() || change.reloader_ignore {
        return vso;
    }
    let ann = |k: &str| {
        obj.pointer("/metadata/annotations")
            .and_then(|a| a.get(k))
            .and_then(Value::as_str)
    };
    let search = "reloader.stakater.com/search";
    if ann(search) == Some("true") && change.reloader_match {
        return Some(Restarter::Reloader(format!(
            "{search}: \"true\"` with the Secret's `reloader.stakater.com/match: \"true\""
        )));
    }
    for key in [
        "reloader.stakater.com/auto",
        "secret.reloader.stakater.com/auto",
    ] {
        if ann(key) == Some("true") {
            return Some(Restarter::Reloader(format!("{key}: \"true\"")));
        }
    }
    let key = "secret.reloader.stakater.com/reload";
    ann(key)
        .is_some_and(|v| v.split(',').any(|s| s.trim() == secret))
        .then(|| Restarter::Reloader(key.to_string()))
}

/// The pod spec of a workload (its template's).
fn pod_spec(kind: WorkloadKind, obj: &Value) -> Option<&Value> {
    match kind {
        WorkloadKind::CronJob => obj.pointer("/spec/jobTemplate/spec/template/spec"),
        _ => obj.pointer("/spec/template/spec"),
    }
}

/// The volumes some container mounts with `subPath` or `subPathExpr`.
fn sub_path_volumes(pod: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for list in ["initContainers", "containers"] {
        for c in pod
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for m in c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let sub = ["subPath", "subPathExpr"].iter().any(|k| {
                    m.get(*k)
                        .and_then(Value::as_str)
                        .is_some_and(|s| !s.is_empty())
                });
                if let (true, Some(v)) = (sub, m.get("name").and_then(Value::as_str)) {
                    out.insert(v.to_string());
                }
            }
        }
    }
    out
}

/// What is wrong with a workload's shape where the consumer view reads it, if anything: the
/// view skips what it does not expect, which here would read as "does not read the Secret".
fn shape_problem(kind: WorkloadKind, obj: &Value) -> Option<String> {
    if obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Some("`metadata.name` is not a string".into());
    }
    if kind == WorkloadKind::Rollout && obj.pointer("/spec/workloadRef").is_some() {
        return None;
    }
    let prefix = match kind {
        WorkloadKind::CronJob => "spec.jobTemplate.spec.template.spec",
        _ => "spec.template.spec",
    };
    let Some(pod) = pod_spec(kind, obj).filter(|p| p.is_object()) else {
        return Some(format!("`{prefix}` is missing or not an object"));
    };
    pod_shape(pod, prefix).err()
}

/// `v.field` is a list of objects (or absent, when not `required`).
fn objects(v: &Value, field: &str, required: bool, at: &str) -> Result<(), String> {
    match v.get(field) {
        None if !required => Ok(()),
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => Ok(()),
        _ => Err(format!("`{at}.{field}` is not a list of objects")),
    }
}

/// The entries of list `v.field`, numbered.
fn entries<'a>(v: &'a Value, field: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    v.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// Where `pointer` is in `v`, it must be a string (`what` names the field).
fn string_at(v: &Value, pointer: &str, what: impl FnOnce() -> String) -> Result<(), String> {
    match v.pointer(pointer) {
        Some(x) if !x.is_string() => Err(format!("`{}` is not a string", what())),
        _ => Ok(()),
    }
}

fn pod_shape(pod: &Value, prefix: &str) -> Result<(), String> {
    objects(pod, "containers", true, prefix)?;
    objects(pod, "initContainers", false, prefix)?;
    objects(pod, "volumes", false, prefix)?;
    for field in ["initContainers", "containers"] {
        for (i, c) in entries(pod, field) {
            container_shape(c, &format!("{prefix}.{field}[{i}]"))?;
        }
    }
    for (i, v) in entries(pod, "volumes") {
        let at = format!("{prefix}.volumes[{i}]");
        if !v.get("name").is_some_and(Value::is_string) {
            return Err(format!("`{at}.name` is not a string"));
        }
        string_at(v, "/secret/secretName", || {
            format!("{at}.secret.secretName")
        })?;
        if v.get("projected").is_some() {
            objects(
                &v["projected"],
                "sources",
                false,
                &format!("{at}.projected"),
            )?;
            for (j, src) in entries(&v["projected"], "sources") {
                string_at(src, "/secret/name", || {
                    format!("{at}.projected.sources[{j}].secret.name")
                })?;
            }
        }
    }
    Ok(())
}

fn container_shape(c: &Value, at: &str) -> Result<(), String> {
    objects(c, "env", false, at)?;
    objects(c, "envFrom", false, at)?;
    objects(c, "volumeMounts", false, at)?;
    for (j, e) in entries(c, "env") {
        string_at(e, "/valueFrom/secretKeyRef/name", || {
            format!("{at}.env[{j}].valueFrom.secretKeyRef.name")
        })?;
        if e.pointer("/valueFrom/secretKeyRef").is_some()
            && e.pointer("/valueFrom/secretKeyRef/name").is_none()
        {
            return Err(format!(
                "`{at}.env[{j}].valueFrom.secretKeyRef.name` is not a string"
            ));
        }
    }
    for (j, e) in entries(c, "envFrom") {
        string_at(e, "/secretRef/name", || {
            format!("{at}.envFrom[{j}].secretRef.name")
        })?;
    }
    for (j, m) in entries(c, "volumeMounts") {
        for key in ["name", "subPath", "subPathExpr"] {
            string_at(m, &format!("/{key}"), || {
                format!("{at}.volumeMounts[{j}].{key}")
            })?;
        }
    }
    Ok(())
}

/// A workload's `spec.selector` as a label selector string, or what is wrong with it.
fn label_selector(obj: &Value) -> Result<String, String> {
    let Some(sel) = obj.pointer("/spec/selector").filter(|s| s.is_object()) else {
        return Err("`spec.selector` is missing or not an object: its pods cannot be found".into());
    };
    let mut terms = Vec::new();
    if let Some(labels) = sel.get("matchLabels") {
        let Some(labels) = labels.as_object() else {
            return Err("`spec.selector.matchLabels` is not an object".into());
        };
        for (k, v) in labels {
            let Some(v) = v.as_str() else {
                return Err(format!("`spec.selector.matchLabels.{k}` is not a string"));
            };
            terms.push(format!("{k}={v}"));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions") {
        let Some(exprs) = exprs.as_array() else {
            return Err("`spec.selector.matchExpressions` is not a list".into());
        };
        for (i, e) in exprs.iter().enumerate() {
            let bad = || format!("`spec.selector.matchExpressions[{i}]` is not a selector term");
            let key = e.get("key").and_then(Value::as_str).ok_or_else(bad)?;
            let values = || -> Result<String, String> {
                let vs: Option<Vec<&str>> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>());
                vs.filter(|v| !v.is_empty())
                    .map(|v| v.join(","))
                    .ok_or_else(bad)
            };
            terms.push(match e.get("operator").and_then(Value::as_str) {
                Some("In") => format!("{key} in ({})", values()?),
                Some("NotIn") => format!("{key} notin ({})", values()?),
                Some("Exists") => key.to_string(),
                Some("DoesNotExist") => format!("!{key}"),
                _ => return Err(bad()),
            });
        }
    }
    if terms.is_empty() {
        return Err("`spec.selector` is empty: which pods are its own is not known".into());
    }
    Ok(terms.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_become_label_selector_strings() {
        let d = json!({"spec": {"selector": {"matchLabels": {"app": "a"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["x", "y"]},
            {"key": "old", "operator": "DoesNotExist"}
        ]}}});
        assert_eq!(label_selector(&d).unwrap(), "app=a,tier in (x,y),!old");
        assert!(label_selector(&json!({"spec": {"selector": {}}})).is_err());
        assert!(label_selector(&json!({"spec": {"selector": {"matchLabels": {"a": 1}}}})).is_err());
    }

    #[test]
    fn odd_shapes_are_named() {
        let d =
            json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": "x"}}}});
        assert_eq!(
            shape_problem(WorkloadKind::Deployment, &d).unwrap(),
            "`spec.template.spec.containers` is not a list of objects"
        );
        let d = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [
            {"name": "a", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": 5}}}]}
        ]}}}});
        assert!(shape_problem(WorkloadKind::Deployment, &d)
            .unwrap()
            .contains("secretKeyRef.name"));
    }

    fn pod(name: &str, phase: &str, owner_uid: &str, revision: Option<&str>) -> PodInfo {
        PodInfo {
            name: name.into(),
            phase: Some(phase.into()),
            deleting: false,
            owner: Some(crate::kube::Owner {
                kind: "ReplicaSet".into(),
                name: "x".into(),
                uid: owner_uid.into(),
            }),
            revision: revision.map(Into::into),
            containers: Vec::new(),
            bad_start: false,
        }
    }

    fn rs(uid: &str, owner_uid: &str, revision: &str) -> ReplicaSetInfo {
        ReplicaSetInfo {
            name: uid.into(),
            uid: uid.into(),
            owner: Some(crate::kube::Owner {
                kind: "Deployment".into(),
                name: "web".into(),
                uid: owner_uid.into(),
            }),
            revision: Some(revision.into()),
            rollout_hash: None,
        }
    }

    fn names(pods: Vec<&PodInfo>) -> Vec<&str> {
        pods.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn only_the_current_running_pods_of_the_workload_count() {
        let obj = json!({"metadata": {"uid": "d1", "annotations": {"deployment.kubernetes.io/revision": "2"}}});
        let on = Workload {
            kind: WorkloadKind::Deployment,
            ns: "ns",
            obj: &obj,
        };
        let sets = [
            rs("rs2", "d1", "2"),
            rs("rs1", "d1", "1"),
            rs("other", "d9", "2"),
        ];
        let mut going = pod("going", "Running", "rs2", None);
        going.deleting = true;
        let pods = [
            pod("now", "Running", "rs2", None),
            pod("done", "Succeeded", "rs2", None),
            pod("evicted", "Failed", "rs2", None),
            pod("pending", "Pending", "rs2", None),
            pod("previous", "Running", "rs1", None),
            pod("foreign", "Running", "other", None),
            going,
        ];
        assert_eq!(names(current_pods(&on, &pods, &sets)), ["now"]);
        // Which ReplicaSet is current cannot be told: every one of its own counts.
        let obj = json!({"metadata": {"uid": "d1"}});
        let on = Workload { obj: &obj, ..on };
        assert_eq!(names(current_pods(&on, &pods, &sets)), ["now", "previous"]);
        // A StatefulSet's pods of its update revision.
        let obj = json!({"metadata": {"uid": "s1"}, "status": {"updateRevision": "web-2"}});
        let on = Workload {
            kind: WorkloadKind::StatefulSet,
            obj: &obj,
            ..on
        };
        let pods = [
            pod("web-0", "Running", "s1", Some("web-2")),
            pod("web-1", "Running", "s1", Some("web-1")),
        ];
        assert_eq!(names(current_pods(&on, &pods, &[])), ["web-0"]);
    }

    #[test]
    fn restart_commands() {
        assert_eq!(
            restart_command(WorkloadKind::StatefulSet, "ask", "db"),
            "kubectl -n ask rollout restart statefulset/db"
        );
        assert_eq!(
            restart_command(WorkloadKind::Rollout, "ask", "web"),
            "kubectl argo rollouts -n ask restart web"
        );
    }
}

/// The rules of the part, one case per row, in-process (the suite's `consumers` module proves
/// the wiring): a workload as the cluster serves it (JSON) and the codes [`judge_workload`]
/// gives before the pods are looked at; then what the pods showed and the code
/// [`reader_verdict`] gives.
#[cfg(test)]
mod table {
    use serde_json::{json, Value};

    use super::*;
    use crate::base::codes::Code;

    fn target() -> Target {
        Target {
            namespace: "ns".into(),
            secret: "db".into(),
            source: "ExternalSecret ns/db".into(),
            restarted_by_vso: Vec::new(),
            vso_hmac: true,
            mappings: Vec::new(),
        }
    }

    fn data_change(at: Option<i64>) -> DataChange {
        DataChange {
            at: at.map(|s| OffsetDateTime::from_unix_timestamp(s).unwrap()),
            manager: Some("external-secrets".into()),
            reloader_match: false,
            reloader_ignore: false,
            labels: crate::kube::selector::LabelSet::default(),
        }
    }

    fn change(data: Option<DataChange>, read: bool) -> Change<'static> {
        Change {
            data,
            read,
            held: Holding::Unknown("not compared".into()),
        }
    }

    /// A Deployment `app` whose container reads Secret `db` as `container` says.
    fn deployment(name: &str, container: Value, volumes: Value) -> Value {
        let mut c = json!({"name": "app", "image": "app:1"});
        for (k, v) in container.as_object().unwrap() {
            c[k] = v.clone();
        }
        json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [c], "volumes": volumes},
                },
            },
        })
    }

    fn env() -> Value {
        json!({"env": [{"name": "DB", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]})
    }

    fn volume() -> Value {
        json!([{"name": "db", "secret": {"secretName": "db"}}])
    }

    type ReadRow = (
        &'static str,
        WorkloadKind,
        Value,
        Option<Change<'static>>,
        &'static [&'static str],
    );

    /// Readers whose Secret is there and read.
    fn reading_cases() -> Vec<ReadRow> {
        vec![
            (
                "env, the data's change known: the pods decide",
                WorkloadKind::Deployment,
                deployment("app", env(), json!([])),
                Some(change(Some(data_change(Some(1_000))), true)),
                &["fresh-pods"],
            ),
            (
                "a plain volume",
                WorkloadKind::Deployment,
                deployment(
                    "app",
                    json!({"volumeMounts": [{"name": "db", "mountPath": "/db"}]}),
                    volume(),
                ),
                Some(change(Some(data_change(Some(1_000))), true)),
                &["volume-reader"],
            ),
            (
                "a subPath volume reads like env",
                WorkloadKind::Deployment,
                deployment(
                    "app",
                    json!({"volumeMounts": [{"name": "db", "mountPath": "/db/p", "subPath": "password"}]}),
                    volume(),
                ),
                Some(change(Some(data_change(Some(1_000))), true)),
                &["fresh-pods"],
            ),
            (
                "the Secret not read (--skip-target-secrets)",
                WorkloadKind::Deployment,
                deployment("app", env(), json!([])),
                Some(change(None, false)),
                &["not-checked"],
            ),
        ]
    }

    /// Secrets and workloads the check cannot judge, and a workload reading none.
    fn odd_cases() -> Vec<ReadRow> {
        vec![
            (
                "the Secret does not exist",
                WorkloadKind::Deployment,
                deployment("app", env(), json!([])),
                Some(change(None, true)),
                &["unexpected-shape"],
            ),
            (
                "no managedFields entry owns its data",
                WorkloadKind::Deployment,
                deployment("app", env(), json!([])),
                Some(change(Some(data_change(None)), true)),
                &["unexpected-shape"],
            ),
            (
                "a name the API server would refuse",
                WorkloadKind::Deployment,
                deployment("App_1", env(), json!([])),
                None,
                &["unexpected-shape"],
            ),
            (
                "a Rollout with a workloadRef",
                WorkloadKind::Rollout,
                json!({"metadata": {"name": "app", "namespace": "ns"},
                    "spec": {"selector": {"matchLabels": {"app": "app"}},
                        "workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"}}}),
                None,
                &["workload-ref"],
            ),
            (
                "reads another Secret",
                WorkloadKind::Deployment,
                deployment(
                    "app",
                    json!({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}),
                    json!([]),
                ),
                None,
                &[],
            ),
        ]
    }

    #[test]
    fn the_reading_rules_give_their_codes() {
        let cases = reading_cases().into_iter().chain(odd_cases());
        let t = target();
        for (case, kind, obj, c, want) in cases {
            let changes = Changes::new(c.map(|c| (("ns", "db"), c)).into_iter().collect());
            let codes: Vec<&str> = judge_workload(kind, "ns", &obj, &[&t], &changes)
                .map(|w| w.findings.iter().map(Code::code).collect())
                .unwrap_or_default();
            assert_eq!(codes, want, "{case}");
        }
    }

    #[test]
    fn the_pods_rules_give_their_codes() {
        let data = data_change(Some(1_000));
        let c = change(Some(data.clone()), true);
        let at = data.at.unwrap();
        let seen = |old: &[&str], between: &[&str]| Seen {
            pods: 2,
            old: old.iter().map(|p| p.to_string()).collect(),
            between: between.iter().map(|p| p.to_string()).collect(),
            since: None,
        };
        let reloader = || Restarter::Reloader("reloader.stakater.com/auto".into());
        type Row = (&'static str, Seen, Option<(Restarter, Watch)>, &'static str);
        let cases: Vec<Row> = vec![
            (
                "every pod started after the change",
                seen(&[], &[]),
                None,
                "fresh-pods",
            ),
            (
                "a pod started before, nothing restarts it",
                seen(&["p1"], &[]),
                None,
                "stale-pods",
            ),
            (
                "a pod started before, Reloader runs",
                seen(&["p1"], &[]),
                Some((reloader(), Watch::Runs("r/r".into()))),
                "will-restart",
            ),
            (
                "a pod started before, Reloader does not run",
                seen(&["p1"], &[]),
                Some((reloader(), Watch::NotRunning("none runs".into()))),
                "restarter-not-running",
            ),
            (
                "a pod started before, Reloader cannot be told",
                seen(&["p1"], &[]),
                Some((reloader(), Watch::CannotTell("forbidden".into()))),
                "restarter-cannot-tell",
            ),
            (
                "a pod the facts cannot place",
                seen(&[], &["p2"]),
                None,
                "cannot-tell",
            ),
        ];
        for (case, seen, by, want) in cases {
            let f = reader_verdict("db".into(), How::Env, (at, &c, &data), by, seen);
            assert_eq!(f.code(), want, "{case}");
        }
    }

    /// The JSON keeps its keys, in their order; `findings` is the only one added.
    #[test]
    fn the_json_keeps_its_keys() {
        let obj = deployment("app", env(), json!([]));
        let changes = Changes::new(vec![(("ns", "db"), change(None, false))]);
        let mut w =
            judge_workload(WorkloadKind::Deployment, "ns", &obj, &[&target()], &changes).unwrap();
        finish(&mut w);
        assert_eq!(
            crate::verify::findings::json_keys(&w),
            [
                "kind",
                "namespace",
                "name",
                "ok",
                "checked",
                "cannot_tell",
                "secrets",
                "how",
                "restarted_by",
                "fix",
                "problems",
                "notes",
                "findings",
            ]
        );
        // A workload's JSON has no `explanations`: they are its notes.
        let first = w.verdict.findings().next().unwrap();
        assert_eq!(first.code, "not-checked");
        assert_eq!(first.severity, "note");
        assert_eq!(w.verdict.notes().len(), 1);
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify consumers: workloads",
            &ConsumerFinding::codes(),
            &ConsumerFinding::all_codes(),
        );
        crate::base::codes::assert_documented(
            "verify consumers: targets",
            &TargetFinding::codes(),
            &TargetFinding::all_codes(),
        );
    }
}
