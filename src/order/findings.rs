//! Findings: what `order` reports, their severity and rule, the report document (`-o json`), and
//! the one sort that makes the output independent of the input order.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde::Serialize;

use crate::model::argo::Phase;
use crate::model::producers::DataKind;

/// How bad a finding is. Ordered worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A consumer may run before its producer: exit 1.
    Error,
    /// Works, but only after retries, or cannot be told offline.
    Warning,
    /// Worth knowing; never fails the run.
    Note,
}

impl Severity {
    /// One step milder (`optional: true` references).
    pub fn milder(self) -> Severity {
        match self {
            Severity::Error => Severity::Warning,
            Severity::Warning | Severity::Note => Severity::Note,
        }
    }

    /// The word printed.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// Which rule a finding comes from (stable names, part of the JSON schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// No app renders the object, and `--exists` does not name it.
    NoProducer,
    /// The consumer's phase runs before the producer's.
    PhaseOrder,
    /// Same phase, the consumer's wave runs before the producer's.
    WaveOrder,
    /// Same phase and wave: applied together, the operator-made Secret comes later.
    SameWave,
    /// The producer is made by an operator Argo CD does not wait for.
    NotWaited,
    /// The producer's app does not sync before the consumer's.
    AppWaveOrder,
    /// Consumers rely on app waves, which do not wait for Healthy.
    AppWavesNotWaited,
    /// Consumers rely on app waves, and no `--argocd-cm` tells whether they wait.
    AppHealthUnknown,
    /// argocd-cm's resource customizations cannot be read by Argo CD.
    ArgocdCmUnreadable,
    /// The producer is a hook deleted when the sync succeeds.
    HookDeleted,
    /// The producer is a hook deleted and re-created at every sync.
    HookRecreated,
    /// A SyncFail hook reads what the failed sync may not have applied.
    SyncFailConsumer,
    /// A key the producer does not make.
    MissingKey,
    /// The producer's keys cannot be known offline.
    KeysUnknown,
    /// An Application source renders nothing.
    EmptySource,
    /// An app has no Application in `--applications`.
    AppUnknown,
    /// A kind with containers or a pod template that vault-seed does not read: not checked.
    PodTemplateUnknown,
    /// A Rollout's `workloadRef` names a workload no app renders: not checked.
    WorkloadRefUnknown,
}

crate::base::codes::codes!(
    Rule,
    Rule {
        NoProducer => "no-producer",
        PhaseOrder => "phase-order",
        WaveOrder => "wave-order",
        SameWave => "same-wave",
        NotWaited => "not-waited",
        AppWaveOrder => "app-wave-order",
        AppWavesNotWaited => "app-waves-not-waited",
        AppHealthUnknown => "app-health-unknown",
        ArgocdCmUnreadable => "argocd-cm-unreadable",
        HookDeleted => "hook-deleted",
        HookRecreated => "hook-recreated",
        SyncFailConsumer => "sync-fail-consumer",
        MissingKey => "missing-key",
        KeysUnknown => "keys-unknown",
        EmptySource => "empty-source",
        AppUnknown => "app-unknown",
        PodTemplateUnknown => "pod-template-unknown",
        WorkloadRefUnknown => "workload-ref-unknown",
    }
);

/// `"rule": ..., "code": ...` of a finding: the code is the rule's kebab-case name.
fn rule_and_code<S: serde::Serializer>(rule: &Rule, s: S) -> Result<S::Ok, S::Error> {
    use crate::base::codes::Code;
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(2))?;
    m.serialize_entry("rule", rule)?;
    m.serialize_entry("code", rule.code())?;
    m.end()
}

impl Rule {
    /// Whether the finding says that something was not checked (rather than found wrong): such
    /// an error fails the run all the same, as a false "the order holds" is the worst outcome.
    pub fn not_checked(self) -> bool {
        matches!(self, Rule::PodTemplateUnknown | Rule::WorkloadRefUnknown)
    }
}

/// A consumer or producer, as findings name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Party {
    /// The app (null for `--exists`).
    pub app: Option<String>,
    /// The app's wave in the app-of-apps (null when unknown).
    pub app_wave: Option<i64>,
    /// Kind (`Job`, `ExternalSecret`, `Secret`).
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace (null when neither the manifest nor the Application says).
    pub namespace: Option<String>,
    /// First sync phase it runs in (null for `--exists`).
    pub phase: Option<Phase>,
    /// Wave (null for `--exists`).
    pub wave: Option<i64>,
    /// Whether it is a hook.
    pub hook: bool,
    /// File it was read from.
    pub file: Option<String>,
    /// Line of that file.
    pub line: Option<usize>,
}

/// The Secret or ConfigMap a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ObjectRef {
    /// `Secret` or `ConfigMap`.
    pub kind: DataKind,
    /// Namespace, when known.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// The spec that seeds a Secret's values (with `--env`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Bootstrap {
    /// The spec's name.
    pub spec: String,
    /// The environment.
    pub env: String,
    /// The ExternalSecret of the spec's `[eso] external_secrets` that makes the Secret.
    pub external_secret: String,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// error, warning or note.
    pub severity: Severity,
    /// The rule, and beside it in the JSON its `code` (the same word, as every command's
    /// findings carry one: `docs/errors.md`).
    #[serde(flatten, serialize_with = "rule_and_code")]
    pub rule: Rule,
    /// The app it is about (null: all apps, Argo CD's configuration).
    pub app: Option<String>,
    /// What is wrong, in the runbook's terms.
    pub message: String,
    /// What to change.
    pub help: Option<String>,
    /// More lines (the consumers of a missing object, the references relying on app waves).
    pub details: Vec<String>,
    /// The consumer.
    pub consumer: Option<Party>,
    /// The producer.
    pub producer: Option<Party>,
    /// The Secret or ConfigMap.
    pub object: Option<ObjectRef>,
    /// The key, for key findings.
    pub key: Option<String>,
    /// Whether every reference concerned is `optional: true`.
    pub optional: bool,
    /// Set when the object is a target of the specs' ExternalSecrets (`--env`).
    pub bootstrap: Option<Bootstrap>,
}

impl Finding {
    /// A finding with its severity, rule, app and message, and nothing else yet.
    pub fn new(severity: Severity, rule: Rule, app: Option<String>, message: String) -> Finding {
        Finding {
            severity,
            rule,
            app,
            message,
            help: None,
            details: Vec::new(),
            consumer: None,
            producer: None,
            object: None,
            key: None,
            optional: false,
            bootstrap: None,
        }
    }

    /// An object of a kind vault-seed does not read carries a pod template or containers.
    pub fn pod_template_unknown(party: Party) -> Finding {
        let message = format!(
            "kind {} has a pod template vault-seed does not understand: what {} {} reads is not \
             checked",
            clean(&party.kind),
            clean(&party.kind),
            clean(&party.name)
        );
        Finding {
            help: Some(
                "vault-seed reads the pod templates of Pod, Deployment, StatefulSet, DaemonSet, \
                 ReplicaSet, ReplicationController, Job, CronJob and Argo Rollouts' Rollout: check \
                 by hand that what its pods read exists before they run, or render the workload \
                 it makes and pass that instead"
                    .into(),
            ),
            ..Finding::new(
                Severity::Error,
                Rule::PodTemplateUnknown,
                party.app.clone(),
                message,
            )
            .with_consumer(party)
        }
    }

    /// A Rollout's `workloadRef` names a workload whose template is not in the input.
    pub fn workload_ref_unknown(party: Party, kind: &str, name: &str) -> Finding {
        let message = format!(
            "{} {} takes its pod template from {} {} (`spec.workloadRef`), which no app \
             renders in its namespace: what its pods read is not checked",
            clean(&party.kind),
            clean(&party.name),
            clean(kind),
            clean(name)
        );
        Finding {
            help: Some(
                "pass the manifests of the Deployment or ReplicaSet it names (`--app`), in the \
                 Rollout's namespace; Argo Rollouts refuses a Rollout whose workload is missing"
                    .into(),
            ),
            ..Finding::new(
                Severity::Error,
                Rule::WorkloadRefUnknown,
                party.app.clone(),
                message,
            )
            .with_consumer(party)
        }
    }

    fn with_consumer(mut self, party: Party) -> Finding {
        self.consumer = Some(party);
        self
    }

    /// The sort: worst first, then by app, then by when the consumer runs (app wave, phase,
    /// wave, kind order, name), then by everything else, so that equal inputs in any order give
    /// equal output.
    pub fn cmp_for_report(&self, other: &Finding) -> Ordering {
        fn timeline(p: &Option<Party>) -> impl Ord + '_ {
            p.as_ref().map(|p| {
                (
                    p.app_wave.map_or((1, 0), |w| (0, w)),
                    p.phase,
                    p.wave,
                    crate::model::argo::kind_order(&p.kind),
                    &p.kind,
                    &p.name,
                    &p.namespace,
                )
            })
        }
        self.severity
            .cmp(&other.severity)
            .then_with(|| self.app.cmp(&other.app))
            .then_with(|| timeline(&self.consumer).cmp(&timeline(&other.consumer)))
            .then_with(|| self.rule.cmp(&other.rule))
            .then_with(|| self.object.cmp(&other.object))
            .then_with(|| self.key.cmp(&other.key))
            .then_with(|| self.producer.cmp(&other.producer))
            .then_with(|| self.consumer.cmp(&other.consumer))
            .then_with(|| self.message.cmp(&other.message))
            .then_with(|| self.details.cmp(&other.details))
            .then_with(|| self.help.cmp(&other.help))
            .then_with(|| self.optional.cmp(&other.optional))
            .then_with(|| self.bootstrap.cmp(&other.bootstrap))
    }
}

/// An app checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppSummary {
    /// `--app NAME`.
    pub name: String,
    /// Its app wave (null when unknown).
    pub app_wave: Option<i64>,
    /// Its Application's destination namespace, when known.
    pub namespace: Option<String>,
    /// Objects read.
    pub objects: usize,
    /// Workloads among them.
    pub consumers: usize,
    /// Their references to Secrets and ConfigMaps.
    pub references: usize,
}

/// What the argocd-cm says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CmSummary {
    /// The file.
    pub file: String,
    /// Whether app waves wait for Healthy (a health check for `argoproj.io/Application`).
    pub application_health: bool,
    /// The argocd-cm key that sets it.
    pub key: Option<String>,
}

/// Counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Error findings.
    pub errors: usize,
    /// Warning findings.
    pub warnings: usize,
    /// Notes.
    pub notes: usize,
}

/// The result of `order` (the `-o json` document, with `command` added by the command).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// True when no finding is an error (exit 0).
    pub ok: bool,
    /// The apps, in name order.
    pub apps: Vec<AppSummary>,
    /// The argocd-cm, when given.
    pub argocd_cm: Option<CmSummary>,
    /// The findings, sorted (see [`Finding::cmp_for_report`]).
    pub findings: Vec<Finding>,
    /// Counts.
    pub summary: Summary,
}

/// Names from manifests are untrusted: control characters are shown escaped, so a hostile name
/// cannot drive the terminal.
pub fn clean(s: &str) -> Cow<'_, str> {
    if s.chars().any(char::is_control) {
        Cow::Owned(
            s.chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_default().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect(),
        )
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_sort_worst_first_and_soften() {
        assert!(Severity::Error < Severity::Warning && Severity::Warning < Severity::Note);
        assert_eq!(Severity::Error.milder(), Severity::Warning);
        assert_eq!(Severity::Warning.milder(), Severity::Note);
    }

    /// Each rule's code is its JSON name (`rule`), listed in `docs/errors.md`.
    #[test]
    fn every_rule_has_its_names_code_listed() {
        use crate::base::codes::Code;
        let own = Rule::codes();
        crate::base::codes::assert_documented("order", &own, &Rule::all_codes());
        let f = Finding::new(Severity::Note, Rule::KeysUnknown, None, "m".into());
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["rule"], "keys-unknown");
        assert_eq!(v["code"], Rule::KeysUnknown.code());
        let text = serde_json::to_string(&f).unwrap();
        assert!(
            text.starts_with(r#"{"severity":"note","rule":"keys-unknown","code":"keys-unknown","#),
            "{text}"
        );
    }

    #[test]
    fn clean_escapes_control_characters() {
        assert_eq!(clean("ok-name"), "ok-name");
        assert_eq!(clean("a\u{1b}[31mb\nc"), "a\\u{1b}[31mb\\nc");
    }
}
