//! The check itself: for every consumer's reference to a Secret or ConfigMap, find its producers
//! and decide whether Argo CD guarantees that one exists before the consumer runs.
//!
//! A sync runs in this order (docs `user-guide/sync-waves.md`, "Combining Sync waves and hooks";
//! gitops-engine `pkg/sync/sync_tasks.go`): app wave (the child Application's sync-wave in its
//! parent app-of-apps), then phase (PreSync, Sync, PostSync; SyncFail only on failure), then wave,
//! then kind. Within one app, Argo CD starts a phase or wave only when the one before is done: its
//! hooks completed and, when the sync has more than one step, its resources Healthy
//! (`sync_context.go`: "if (a) we are multi-step and we have any running tasks, or (b) there are
//! any running hooks, then wait"). A resource without a health check (a Secret, a ConfigMap) is done
//! once applied; an ExternalSecret is Healthy when its Ready condition is True (argo-cd
//! `resource_customizations/external-secrets.io/ExternalSecret/health.lua`), i.e. once ESO wrote
//! its Secret; VSO's kinds have no built-in health check in v3.5.1, so nothing waits for VSO.
//! Across apps, a parent applies its next wave of child Applications when the earlier ones are
//! Healthy, but only if argocd-cm gives `argoproj.io/Application` a health check (removed from
//! Argo CD in 1.8; docs `operator-manual/health.md`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::findings::{
    clean, AppSummary, Bootstrap, CmSummary, Finding, ObjectRef, Party, Report, Rule, Severity,
    Summary,
};
use crate::model::applications::Application;
use crate::model::argo::Phase;
use crate::model::argocd_cm::ArgoCdCm;
use crate::model::consumers::{Read, Workload};
use crate::model::object::Object;
use crate::model::producers::{DataKind, Keys, Make, Maker};

/// One app's rendered manifests.
#[derive(Debug, Clone)]
pub struct App {
    /// `--app NAME`, matched to an Application's name.
    pub name: String,
    /// Its objects.
    pub objects: Vec<Object>,
}

/// `--exists KIND/NAMESPACE/NAME`: made outside these apps, before they sync.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Exists {
    /// Secret or ConfigMap.
    pub data: DataKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// The Application manifests of `--applications`.
#[derive(Debug, Clone)]
pub struct Applications {
    /// The path given, for messages.
    pub source: String,
    /// The Applications.
    pub items: Vec<Application>,
}

/// An environment of a spec (`--env`): its ExternalSecrets, whose targets are the bootstrap's.
#[derive(Debug, Clone)]
pub struct SpecEso {
    /// The spec's name.
    pub spec: String,
    /// The environment.
    pub env: String,
    /// The ExternalSecrets' namespace (`kube_namespace`, else `[eso] namespace`).
    pub namespace: Option<String>,
    /// `[eso] external_secrets`.
    pub external_secrets: Vec<String>,
}

/// Everything the check reads.
#[derive(Debug, Clone, Default)]
pub struct Input {
    /// The apps (names unique).
    pub apps: Vec<App>,
    /// `--applications`.
    pub applications: Option<Applications>,
    /// `--argocd-cm`.
    pub argocd_cm: Option<ArgoCdCm>,
    /// `--exists`.
    pub exists: Vec<Exists>,
    /// The specs' ExternalSecrets, with `--env`.
    pub specs: Vec<SpecEso>,
}

/// Whether app waves wait for Healthy.
enum AppHealth {
    Checked,
    Unchecked,
    Unknown,
}

struct AppInfo<'a> {
    wave: Option<i64>,
    namespace: Option<&'a str>,
    application: Option<&'a Application>,
}

/// A producer of one Secret or ConfigMap.
#[derive(Clone, Copy)]
enum Source<'a> {
    Made {
        app: usize,
        obj: &'a Object,
        make: &'a Make,
    },
    Exists(&'a Exists),
}

/// The judgement of one consumer/producer pair, best first.
enum Verdict {
    Ok,
    /// Guaranteed only when app waves wait for Healthy; the line says which reference.
    NeedsAppHealth(String),
    Problem {
        severity: Severity,
        rule: Rule,
        message: String,
        help: String,
    },
}

impl Verdict {
    fn rank(&self) -> u8 {
        match self {
            Verdict::Ok => 0,
            Verdict::NeedsAppHealth(_) => 1,
            Verdict::Problem { severity, .. } => 4 - *severity as u8,
        }
    }
}

/// One step milder for `optional: true` references: the pod starts without them.
fn soften(severity: Severity, optional: bool) -> Severity {
    if optional {
        severity.milder()
    } else {
        severity
    }
}

fn ns_match(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// The operator behind an operator-made Secret, for messages.
fn operator(group: &str) -> &'static str {
    if group == "external-secrets.io" {
        "ESO"
    } else {
        "VSO"
    }
}

struct Checker<'a> {
    input: &'a Input,
    apps: Vec<AppInfo<'a>>,
    health: AppHealth,
    index: HashMap<(DataKind, &'a str), Vec<Source<'a>>>,
    findings: Vec<Finding>,
    /// References that rely on app waves waiting for Healthy.
    wave_deps: BTreeSet<String>,
}

/// A consumer and its references to one object.
struct Pair<'a> {
    app: usize,
    obj: &'a Object,
    workload: Workload,
    data: DataKind,
    name: &'a str,
    reads: Vec<&'a Read>,
    optional: bool,
}

impl<'a> Checker<'a> {
    fn new(input: &'a Input) -> Checker<'a> {
        let apps = input
            .apps
            .iter()
            .map(|a| {
                let application = input
                    .applications
                    .as_ref()
                    .and_then(|apps| apps.items.iter().find(|x| x.name == a.name));
                AppInfo {
                    wave: application.map(|x| x.wave),
                    namespace: application.and_then(|x| x.destination_namespace.as_deref()),
                    application,
                }
            })
            .collect();
        let health = match &input.argocd_cm {
            None => AppHealth::Unknown,
            Some(cm) if cm.health_check("argoproj.io", "Application").is_some() => {
                AppHealth::Checked
            }
            Some(_) => AppHealth::Unchecked,
        };
        let mut index: HashMap<(DataKind, &str), Vec<Source>> = HashMap::new();
        for (ai, app) in input.apps.iter().enumerate() {
            for obj in &app.objects {
                for make in &obj.makes {
                    index
                        .entry((make.data, make.name.as_str()))
                        .or_default()
                        .push(Source::Made { app: ai, obj, make });
                }
            }
        }
        for e in &input.exists {
            index
                .entry((e.data, e.name.as_str()))
                .or_default()
                .push(Source::Exists(e));
        }
        Checker {
            input,
            apps,
            health,
            index,
            findings: Vec::new(),
            wave_deps: BTreeSet::new(),
        }
    }

    fn app_name(&self, ai: usize) -> &'a str {
        &self.input.apps[ai].name
    }

    /// The namespace an object lands in: its own, else its Application's destination.
    fn ns(&self, ai: usize, obj: &'a Object) -> Option<&'a str> {
        obj.namespace.as_deref().or(self.apps[ai].namespace)
    }

    fn source_ns(&self, s: &Source<'a>) -> Option<&'a str> {
        match s {
            Source::Made { app, obj, make } => {
                make.namespace.as_deref().or_else(|| self.ns(*app, obj))
            }
            Source::Exists(e) => Some(&e.namespace),
        }
    }

    /// A producer that creates the object during the sync (or before it).
    fn creates(s: &Source) -> bool {
        match s {
            Source::Made { obj, make, .. } => make.creates && !obj.placement.phases.is_empty(),
            Source::Exists(_) => true,
        }
    }

    fn party(&self, ai: usize, obj: &Object) -> Party {
        Party {
            app: Some(self.app_name(ai).to_string()),
            app_wave: self.apps[ai].wave,
            kind: obj.kind.clone(),
            name: obj.name.clone(),
            namespace: self.ns(ai, obj).map(str::to_string),
            phase: obj.placement.first_phase(),
            wave: Some(obj.placement.wave),
            hook: obj.placement.hook,
            file: Some(obj.origin.file.clone()),
            line: Some(obj.origin.line),
        }
    }

    fn source_party(&self, s: &Source) -> Party {
        match s {
            Source::Made { app, obj, .. } => self.party(*app, obj),
            Source::Exists(e) => Party {
                app: None,
                app_wave: None,
                kind: e.data.name().to_string(),
                name: e.name.clone(),
                namespace: Some(e.namespace.clone()),
                phase: None,
                wave: None,
                hook: false,
                file: None,
                line: None,
            },
        }
    }

    /// "Job migrate (core-service, PreSync, wave 0)", with the app wave when asked.
    fn who(&self, ai: usize, obj: &Object, app_wave: bool) -> String {
        let phase = obj
            .placement
            .first_phase()
            .map_or("never applied".to_string(), |p| p.to_string());
        let aw = match (app_wave, self.apps[ai].wave) {
            (true, Some(w)) => format!(", app wave {w}"),
            (true, None) => ", app wave unknown".to_string(),
            _ => String::new(),
        };
        format!(
            "{} {} ({}{aw}, {phase}, wave {})",
            obj.kind,
            clean(&obj.name),
            clean(self.app_name(ai)),
            obj.placement.wave
        )
    }

    /// "created" or "made by ExternalSecret x".
    fn made(obj: &Object, make: &Make) -> String {
        match &make.maker {
            Maker::Manifest => "created".to_string(),
            Maker::Operator { kind, .. } => format!("made by {kind} {}", clean(&obj.name)),
        }
    }

    fn target(data: DataKind, name: &str) -> String {
        format!("{data} {}", clean(name))
    }

    /// What a restarting consumer or a run-once one suffers in a race.
    fn race_severity(p: &Pair) -> Severity {
        let base = if p.obj.placement.hook || p.workload == Workload::RunOnce {
            Severity::Error
        } else {
            Severity::Warning
        };
        soften(base, p.optional)
    }

    fn hard(p: &Pair) -> Severity {
        soften(Severity::Error, p.optional)
    }

    fn race_consequence(p: &Pair) -> String {
        if p.obj.placement.hook || p.workload == Workload::RunOnce {
            format!(
                "; the {}'s pod cannot start until it exists, and Argo CD waits on it",
                p.obj.kind
            )
        } else {
            "; its pods restart until it exists".to_string()
        }
    }

    /// Whether Argo CD waits for an operator-made object's health (built-in check for
    /// ExternalSecret; VSO kinds only with a custom check in argocd-cm).
    fn health_gated(&self, make: &Make) -> bool {
        match &make.maker {
            Maker::Manifest => true,
            Maker::Operator { group, kind } => {
                group == "external-secrets.io"
                    || self
                        .input
                        .argocd_cm
                        .as_ref()
                        .is_some_and(|cm| cm.health_check(group, kind).is_some())
            }
        }
    }

    /// The verdict when Argo CD does not wait for an operator-made producer (no health check
    /// for its kind); None when it does. `lead` says what is read from where, `then` what follows
    /// from not waiting, given the operator's name.
    fn unwaited(
        &self,
        p: &Pair,
        make: &Make,
        lead: &str,
        then: impl Fn(&str) -> String,
    ) -> Option<Verdict> {
        let Maker::Operator { group, kind } = &make.maker else {
            return None;
        };
        if self.health_gated(make) {
            return None;
        }
        Some(Verdict::Problem {
            severity: Self::race_severity(p),
            rule: Rule::NotWaited,
            message: format!(
                "{lead}, but Argo CD has no health check for {kind}, so {}{}",
                then(operator(group)),
                Self::race_consequence(p)
            ),
            help: format!(
                "add a health check for it to argocd-cm \
                 (`resource.customizations.health.{group}_{kind}`), or make the Secret with an \
                 ExternalSecret (Argo CD waits for its Ready condition)"
            ),
        })
    }

    #[allow(clippy::too_many_lines)] // one of order's rules, its cases in the order Argo CD applies them
    fn judge(&self, p: &Pair<'a>, s: &Source<'a>) -> Verdict {
        let (pa, pobj, make) = match s {
            Source::Exists(_) => return Verdict::Ok,
            Source::Made { app, obj, make } => (*app, *obj, *make),
        };
        let c = self.who(p.app, p.obj, pa != p.app);
        let t = Self::target(p.data, p.name);
        let made = Self::made(pobj, make);
        let pkind = match &make.maker {
            Maker::Manifest => p.data.name().to_string(),
            Maker::Operator { kind, .. } => kind.clone(),
        };
        let ckind = &p.obj.kind;
        // Both have phases: consumers without are skipped, producers without do not create.
        let cp = p.obj.placement.first_phase().unwrap_or(Phase::Sync);
        let pp = pobj.placement.first_phase().unwrap_or(Phase::Sync);
        let (cw, pw) = (p.obj.placement.wave, pobj.placement.wave);
        let pa_name = clean(self.app_name(pa)).into_owned();

        // A hook with HookSucceeded is deleted once the whole sync succeeded (`sync_context.go`
        // calls `deleteHooks(hooksPendingDeletionSuccessful)` only on success).
        if pobj.placement.deleted_after_sync()
            && make.owned
            && (pa != p.app || !p.obj.placement.hook)
        {
            let after = if pa == p.app {
                format!(", and the {ckind} keeps reading it after the sync")
            } else {
                format!(", before app {} uses it", clean(self.app_name(p.app)))
            };
            return Verdict::Problem {
                severity: Self::hard(p),
                rule: Rule::HookDeleted,
                message: format!(
                    "{c} reads {t}, a {pp} hook of app {pa_name} with delete policy \
                     HookSucceeded: Argo CD deletes it when the sync succeeds{after}"
                ),
                help: "drop HookSucceeded from its `argocd.argoproj.io/hook-delete-policy` \
                       (or `hook-succeeded` from `helm.sh/hook-delete-policy`), or make it a \
                       normal resource"
                    .to_string(),
            };
        }

        if pa != p.app {
            return self.judge_across_apps(p, pa, pobj, make, &c, &t, &made, &pkind);
        }

        if cp == Phase::SyncFail && pp != Phase::SyncFail {
            return Verdict::Problem {
                severity: soften(Severity::Warning, p.optional),
                rule: Rule::SyncFailConsumer,
                message: format!(
                    "{c} is a SyncFail hook: it runs when the sync fails, which can be before \
                     {t} ({made} in the {pp} phase, wave {pw}) was applied"
                ),
                help: format!(
                    "let the hook start without it (`optional: true`), or move the {pkind} to an \
                     app with a lower app wave"
                ),
            };
        }
        if pp == Phase::SyncFail && cp != Phase::SyncFail {
            return Verdict::Problem {
                severity: Self::hard(p),
                rule: Rule::PhaseOrder,
                message: format!(
                    "{c} reads {t}, {made} only in the SyncFail phase of the same app, which \
                     runs only when the sync fails"
                ),
                help: format!("make the {pkind} a normal resource at a wave before the {ckind}"),
            };
        }

        match (pp, pw).cmp(&(cp, cw)) {
            std::cmp::Ordering::Less => self
                .unwaited(
                    p,
                    make,
                    &format!("{c} reads {t}, {made} at an earlier step ({pp}, wave {pw})"),
                    |op| format!("it does not wait for {op} to write the Secret"),
                )
                .unwrap_or(Verdict::Ok),
            std::cmp::Ordering::Equal => match &make.maker {
                Maker::Operator { group, kind } => Verdict::Problem {
                    severity: Self::race_severity(p),
                    rule: Rule::SameWave,
                    message: format!(
                        "{c} reads {t}, {made} in the same wave ({pp}, wave {pw}): Argo CD \
                         applies custom resources after workloads and does not wait for {} to \
                         write the Secret{}",
                        operator(group),
                        Self::race_consequence(p)
                    ),
                    help: format!(
                        "give the {kind} a lower wave than the {ckind} \
                         (`argocd.argoproj.io/sync-wave: \"{}\"`): Argo CD then waits for it to \
                         be Healthy first",
                        cw.saturating_sub(1)
                    ),
                },
                Maker::Manifest if pobj.kind_order() < p.obj.kind_order() => Verdict::Ok,
                Maker::Manifest => Verdict::Problem {
                    severity: Self::race_severity(p),
                    rule: Rule::SameWave,
                    message: format!(
                        "{c} reads {t}, created in the same wave ({pp}, wave {pw}) but applied \
                         after it ({} comes after {ckind} in Argo CD's kind order){}",
                        pobj.kind,
                        Self::race_consequence(p)
                    ),
                    help: format!("give the {pkind} a lower wave than the {ckind}"),
                },
            },
            std::cmp::Ordering::Greater if pp != cp => {
                let helm = match (&p.obj.placement.helm_hook, p.obj.placement.hook) {
                    (Some(h), true) => {
                        format!(" (Argo CD maps its `helm.sh/hook: {}` to {cp})", clean(h))
                    }
                    _ => String::new(),
                };
                let help = if !p.obj.placement.hook {
                    format!(
                        "make the {pkind} a normal resource (or a PreSync hook) at a wave before \
                         the {ckind}"
                    )
                } else if p.obj.placement.helm_hook.is_some() {
                    format!(
                        "move the {pkind} to an app with a lower app wave (a {cp} hook of a \
                         chart can only see what exists before the {pp} phase), or make the \
                         {ckind} a {pp} hook at a wave after it"
                    )
                } else {
                    format!(
                        "make the {ckind} a {pp} hook at a wave after the {pkind} (wave {} or \
                         later), or move the {pkind} to an app with a lower app wave",
                        pw.saturating_add(1)
                    )
                };
                Verdict::Problem {
                    severity: Self::hard(p),
                    rule: Rule::PhaseOrder,
                    message: format!(
                        "{c} reads {t}, {made} in the {pp} phase of the same app (wave {pw}): \
                         {cp} runs before the whole {pp} phase{helm}"
                    ),
                    help,
                }
            }
            std::cmp::Ordering::Greater => {
                let wait = if p.obj.placement.hook {
                    format!("; Argo CD waits for the hook to complete before wave {pw}")
                } else {
                    format!(
                        "; Argo CD waits for the {ckind} to be Healthy before wave {pw}, which it \
                         cannot be without the {}",
                        p.data
                    )
                };
                Verdict::Problem {
                    severity: Self::hard(p),
                    rule: Rule::WaveOrder,
                    message: format!(
                        "{c} reads {t}, {made} at wave {pw} of the same {pp} phase: wave {cw} \
                         runs first{wait}"
                    ),
                    help: format!(
                        "give the {pkind} a wave below {cw} (`argocd.argoproj.io/sync-wave: \
                         \"{}\"`), or the {ckind} a wave above {pw}",
                        cw.saturating_sub(1)
                    ),
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[allow(clippy::too_many_lines)] // one of order's rules, its cases in the order Argo CD applies them
    fn judge_across_apps(
        &self,
        p: &Pair<'a>,
        pa: usize,
        pobj: &'a Object,
        make: &'a Make,
        c: &str,
        t: &str,
        made: &str,
        pkind: &str,
    ) -> Verdict {
        let pa_name = clean(self.app_name(pa)).into_owned();
        let ca_name = clean(self.app_name(p.app)).into_owned();
        let pp = pobj.placement.first_phase().unwrap_or(Phase::Sync);
        let wave_help = |w: Option<i64>| {
            format!(
                "give Application {pa_name} a lower `argocd.argoproj.io/sync-wave` than \
                 Application {ca_name}{}",
                w.map_or(String::new(), |w| format!(" ({w})"))
            )
        };
        match (self.apps[pa].wave, self.apps[p.app].wave) {
            (Some(pw), Some(cw)) if pw < cw => {
                if let Some(v) = self.unwaited(
                    p,
                    make,
                    &format!("{c} reads {t}, {made} in app {pa_name} (app wave {pw})"),
                    |op| format!("app {pa_name} can be Healthy before {op} writes the Secret"),
                ) {
                    return v;
                }
                if pobj.placement.hook && pp >= Phase::PostSync {
                    return Verdict::Problem {
                        severity: Self::race_severity(p),
                        rule: Rule::NotWaited,
                        message: format!(
                            "{c} reads {t}, {made} by a {pp} hook of app {pa_name} (app wave \
                             {pw}): hooks do not count toward app health, so app {pa_name} can \
                             be Healthy before it exists{}",
                            Self::race_consequence(p)
                        ),
                        help: format!("make the {pkind} a normal resource of app {pa_name}"),
                    };
                }
                Verdict::NeedsAppHealth(format!(
                    "{c} reads {t}, {made} in app {pa_name} (app wave {pw})"
                ))
            }
            (Some(pw), Some(cw)) if pw == cw => Verdict::Problem {
                severity: Self::race_severity(p),
                rule: Rule::AppWaveOrder,
                message: format!(
                    "{c} reads {t}, {made} in app {pa_name}, which has the same app wave ({pw}): \
                     Argo CD syncs the two apps at the same time{}",
                    Self::race_consequence(p)
                ),
                help: wave_help(Some(cw)),
            },
            (Some(pw), Some(cw)) => Verdict::Problem {
                severity: Self::hard(p),
                rule: Rule::AppWaveOrder,
                message: format!(
                    "{c} reads {t}, {made} in app {pa_name} (app wave {pw}), which syncs after \
                     app {ca_name} (app wave {cw})"
                ),
                help: wave_help(Some(cw)),
            },
            _ => {
                let unknown: Vec<String> = [p.app, pa]
                    .iter()
                    .filter(|a| self.apps[**a].wave.is_none())
                    .map(|a| clean(self.app_name(*a)).into_owned())
                    .collect();
                Verdict::Problem {
                    severity: Self::race_severity(p),
                    rule: Rule::AppWaveOrder,
                    message: format!(
                        "{c} reads {t}, {made} in app {pa_name}, but no app wave is known for \
                         {}: apps without an order sync at the same time{}",
                        unknown.join(" and "),
                        Self::race_consequence(p)
                    ),
                    help: format!(
                        "pass `--applications` with their Application manifests (their \
                         `argocd.argoproj.io/sync-wave`), or `--exists {}/{}/{}` if it exists \
                         before these apps sync",
                        p.data,
                        self.ns(p.app, p.obj).unwrap_or("NAMESPACE"),
                        clean(p.name)
                    ),
                }
            }
        }
    }

    #[allow(clippy::too_many_lines)] // one of order's rules, its cases in the order Argo CD applies them
    fn check_pair(&mut self, p: Pair<'a>, missing: &mut BTreeMap<MissingKey<'a>, Vec<Pair<'a>>>) {
        let c_ns = self.ns(p.app, p.obj);
        let all: Vec<Source<'a>> = self
            .index
            .get(&(p.data, p.name))
            .cloned()
            .unwrap_or_default();
        let same_ns: Vec<Source<'a>> = all
            .into_iter()
            .filter(|s| ns_match(c_ns, self.source_ns(s)))
            .collect();
        let creators: Vec<Source<'a>> = same_ns.iter().copied().filter(Self::creates).collect();
        if creators.is_empty() {
            missing
                .entry((p.app, p.data, p.name, c_ns))
                .or_default()
                .push(p);
            return;
        }
        let mut judged: Vec<(Verdict, Source<'a>)> =
            creators.iter().map(|s| (self.judge(&p, s), *s)).collect();
        if matches!(self.health, AppHealth::Checked) {
            for (v, _) in &mut judged {
                if matches!(v, Verdict::NeedsAppHealth(_)) {
                    *v = Verdict::Ok;
                }
            }
        }
        judged.sort_by(|a, b| {
            a.0.rank()
                .cmp(&b.0.rank())
                .then_with(|| self.source_party(&a.1).cmp(&self.source_party(&b.1)))
        });
        let (verdict, best) = judged.swap_remove(0);
        let object = Some(ObjectRef {
            kind: p.data,
            namespace: c_ns.map(str::to_string),
            name: p.name.to_string(),
        });
        let consumer = Some(self.party(p.app, p.obj));
        let producer = Some(self.source_party(&best));
        if let Verdict::NeedsAppHealth(line) = &verdict {
            self.wave_deps.insert(line.clone());
        }
        if let Verdict::Problem {
            severity,
            rule,
            message,
            help,
        } = verdict
        {
            self.findings.push(Finding {
                help: Some(help),
                details: via_lines(&p.reads),
                consumer: consumer.clone(),
                producer: producer.clone(),
                object: object.clone(),
                optional: p.optional,
                ..Finding::new(
                    severity,
                    rule,
                    Some(self.app_name(p.app).to_string()),
                    message,
                )
            });
        } else if let Source::Made {
            app: pa,
            obj: pobj,
            make,
        } = best
        {
            // Deleted before it is created again (`deleteBeforeCreation`), at every sync.
            if pobj.placement.recreated_each_sync()
                && make.owned
                && (pa != p.app || !p.obj.placement.hook)
            {
                let pp = pobj.placement.first_phase().unwrap_or(Phase::Sync);
                self.findings.push(Finding {
                    help: Some(format!(
                        "make the {} a normal resource at a wave before the {}",
                        p.data, p.obj.kind
                    )),
                    details: via_lines(&p.reads),
                    consumer: consumer.clone(),
                    producer: producer.clone(),
                    object: object.clone(),
                    optional: p.optional,
                    ..Finding::new(
                        soften(Severity::Warning, p.optional),
                        Rule::HookRecreated,
                        Some(self.app_name(p.app).to_string()),
                        format!(
                            "{} reads {}, a {pp} hook of app {} with delete policy \
                             BeforeHookCreation: Argo CD deletes and re-creates it at every sync, \
                             and pods of the {} that start in between cannot start",
                            self.who(p.app, p.obj, pa != p.app),
                            Self::target(p.data, p.name),
                            clean(self.app_name(pa)),
                            p.obj.kind
                        ),
                    )
                });
            }
        }
        self.check_keys(&p, &same_ns, object, consumer);
    }

    /// Keys read that the producers do not make; keys that cannot be known offline.
    #[allow(clippy::too_many_lines)] // one of order's rules, its cases in the order Argo CD applies them
    fn check_keys(
        &mut self,
        p: &Pair<'a>,
        sources: &[Source<'a>],
        object: Option<ObjectRef>,
        consumer: Option<Party>,
    ) {
        let mut wanted: BTreeMap<&str, (bool, Vec<&Read>)> = BTreeMap::new();
        for r in &p.reads {
            if let Some(k) = &r.key {
                let e = wanted.entry(k.as_str()).or_insert((true, Vec::new()));
                e.0 &= r.optional;
                e.1.push(r);
            }
        }
        if wanted.is_empty() {
            return;
        }
        let mut known = BTreeSet::new();
        let mut open = Vec::new();
        let mut makers = Vec::new();
        for s in sources {
            match s {
                Source::Made { obj, make, .. } => {
                    let merges = make.why_not.as_deref().is_some_and(|w| w.contains("Merge"));
                    if !(Self::creates(s) || merges) {
                        continue;
                    }
                    known.extend(make.keys.known().iter().cloned());
                    let who = match &make.maker {
                        Maker::Manifest => format!("the {} manifest", make.data),
                        Maker::Operator { kind, .. } => format!("{kind} {}", clean(&obj.name)),
                    };
                    if let Keys::Open { why, .. } = &make.keys {
                        open.push(format!("{who}: {why}"));
                    }
                    makers.push(who);
                }
                Source::Exists(_) => {
                    open.push("it is made outside these apps (`--exists`)".to_string());
                }
            }
        }
        open.sort();
        open.dedup();
        makers.sort();
        makers.dedup();
        let c = self.who(p.app, p.obj, false);
        let t = Self::target(p.data, p.name);
        let mut unknown = Vec::new();
        for (key, (optional, reads)) in wanted {
            if known.contains(key) {
                continue;
            }
            if !open.is_empty() {
                unknown.push(key);
                continue;
            }
            let list = if known.is_empty() {
                "it makes no key".to_string()
            } else {
                format!(
                    "it makes {}",
                    known
                        .iter()
                        .map(|k| format!("`{}`", clean(k)))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let is_es = sources.iter().any(|s| {
                matches!(s, Source::Made { make, .. } if matches!(&make.maker, Maker::Operator { kind, .. } if kind == "ExternalSecret"))
            });
            let help = if is_es {
                format!(
                    "add a `spec.data` entry with `secretKey: {}` to the ExternalSecret, or fix \
                     the key in the {}",
                    clean(key),
                    p.obj.kind
                )
            } else {
                format!(
                    "add `{}` to the {}'s `data`, or fix the key in the {}",
                    clean(key),
                    p.data,
                    p.obj.kind
                )
            };
            self.findings.push(Finding {
                help: Some(help),
                details: via_lines(&reads),
                consumer: consumer.clone(),
                object: object.clone(),
                key: Some(key.to_string()),
                optional,
                ..Finding::new(
                    soften(Severity::Error, optional),
                    Rule::MissingKey,
                    Some(self.app_name(p.app).to_string()),
                    format!(
                        "{c} reads key `{}` of {t}, which {} does not make ({list})",
                        clean(key),
                        makers.join(" and ")
                    ),
                )
            });
        }
        if !unknown.is_empty() {
            self.findings.push(Finding {
                consumer,
                object,
                ..Finding::new(
                    Severity::Note,
                    Rule::KeysUnknown,
                    Some(self.app_name(p.app).to_string()),
                    format!(
                        "{c} reads key(s) {} of {t}, whose keys cannot be known offline ({})",
                        unknown
                            .iter()
                            .map(|k| format!("`{}`", clean(k)))
                            .collect::<Vec<_>>()
                            .join(", "),
                        open.join("; ")
                    ),
                )
            });
        }
    }

    /// One finding per object no app renders, per app reading it.
    fn report_missing(&mut self, key: MissingKey<'a>, pairs: Vec<Pair<'a>>) {
        let (ai, data, name, ns) = key;
        let mut hints = BTreeSet::new();
        for s in self.index.get(&(data, name)).cloned().unwrap_or_default() {
            let Source::Made { app, obj, make } = s else {
                continue;
            };
            let where_ = format!(
                "{} {} of app {}",
                obj.kind,
                clean(&obj.name),
                clean(self.app_name(app))
            );
            let s_ns = self.source_ns(&s);
            if !ns_match(ns, s_ns) {
                hints.insert(format!(
                    "{where_} makes it in namespace {}, not {}",
                    clean(s_ns.unwrap_or_default()),
                    clean(ns.unwrap_or_default())
                ));
            } else if let Some(why) = &make.why_not {
                hints.insert(format!("{where_}: {why}"));
            } else if let Some(na) = &obj.placement.not_applied {
                hints.insert(format!("{where_}: {}", na.explain()));
            }
        }
        if let Some(application) = self.apps[ai].application {
            for (i, why) in application.empty_sources() {
                hints.insert(format!(
                    "Application {}'s source {i} {why}",
                    clean(&application.name)
                ));
            }
        }
        let optional = pairs.iter().all(|p| p.optional);
        let mut details: Vec<String> = pairs
            .iter()
            .map(|p| {
                format!(
                    "read by {} at {} via {}",
                    self.who(p.app, p.obj, false),
                    clean(&p.obj.origin.to_string()),
                    vias(&p.reads).join(", ")
                )
            })
            .collect();
        details.sort();
        details.dedup();
        let first = pairs.iter().map(|p| self.party(p.app, p.obj)).min();
        let hint = if hints.is_empty() {
            String::new()
        } else {
            format!(" ({})", hints.into_iter().collect::<Vec<_>>().join("; "))
        };
        self.findings.push(Finding {
            help: Some(format!(
                "render it in an app with a lower app wave (a secrets app synced first), or pass \
                 `--exists {data}/{}/{}` if something outside these apps makes it",
                clean(ns.unwrap_or("NAMESPACE")),
                clean(name)
            )),
            details,
            consumer: first,
            object: Some(ObjectRef {
                kind: data,
                namespace: ns.map(str::to_string),
                name: name.to_string(),
            }),
            optional,
            ..Finding::new(
                soften(Severity::Error, optional),
                Rule::NoProducer,
                Some(self.app_name(ai).to_string()),
                format!("no app renders {}{hint}", Self::target(data, name)),
            )
        });
    }

    fn global_findings(&mut self) {
        let problem = self
            .input
            .argocd_cm
            .as_ref()
            .and_then(|cm| cm.problem.clone());
        if let Some(problem) = &problem {
            self.findings.push(Finding {
                help: Some("fix that key: while it is wrong, Argo CD loads none of them".into()),
                ..Finding::new(
                    Severity::Warning,
                    Rule::ArgocdCmUnreadable,
                    None,
                    format!(
                        "Argo CD cannot read argocd-cm's resource customizations: {}",
                        clean(problem)
                    ),
                )
            });
        }
        if self.wave_deps.is_empty() {
            return;
        }
        let details: Vec<String> = std::mem::take(&mut self.wave_deps).into_iter().collect();
        let (severity, rule, message, help) = match self.health {
            AppHealth::Checked => return,
            AppHealth::Unchecked => (
                Severity::Error,
                Rule::AppWavesNotWaited,
                match &problem {
                    None => "app waves do not wait for Healthy: argocd-cm has no health check \
                             for argoproj.io/Application"
                        .to_string(),
                    Some(p) => format!(
                        "app waves do not wait for Healthy: Argo CD cannot read argocd-cm's \
                         resource customizations ({})",
                        clean(p)
                    ),
                },
                "add `resource.customizations.health.argoproj.io_Application` to argocd-cm, with \
                 the Lua of Argo CD's docs (operator-manual/health.md, \"Argocd App\"); without \
                 it app wave N starts as soon as wave N-1 is applied, not when it is Healthy"
                    .to_string(),
            ),
            AppHealth::Unknown => (
                Severity::Warning,
                Rule::AppHealthUnknown,
                format!(
                    "{} reference(s) rely on app waves, which wait for Healthy only when \
                     argocd-cm has a health check for argoproj.io/Application",
                    details.len()
                ),
                "pass `--argocd-cm` with your argocd-cm \
                 (`kubectl get configmap argocd-cm -n argocd -o yaml`)"
                    .to_string(),
            ),
        };
        self.findings.push(Finding {
            help: Some(help),
            details,
            ..Finding::new(severity, rule, None, message)
        });
    }

    fn app_notes(&mut self) {
        for (ai, info) in self.apps.iter().enumerate() {
            let name = self.input.apps[ai].name.clone();
            match (info.application, &self.input.applications) {
                (Some(application), _) => {
                    for (i, why) in application.empty_sources() {
                        self.findings.push(Finding {
                            ..Finding::new(
                                Severity::Note,
                                Rule::EmptySource,
                                Some(name.clone()),
                                format!(
                                    "Application {}'s source {i} {why}",
                                    clean(&application.name)
                                ),
                            )
                        });
                    }
                }
                (None, Some(apps)) => self.findings.push(Finding {
                    help: Some(format!(
                        "add its Application manifest to `{}`, or check the `--app` name",
                        clean(&apps.source)
                    )),
                    ..Finding::new(
                        Severity::Warning,
                        Rule::AppUnknown,
                        Some(name.clone()),
                        format!(
                            "app {} has no Application in `{}`: its app wave is unknown",
                            clean(&name),
                            clean(&apps.source)
                        ),
                    )
                }),
                (None, None) => {}
            }
        }
    }

    /// The Secrets the specs' ExternalSecrets make: the target of each named ExternalSecret
    /// found in the manifests, else a Secret of the ExternalSecret's own name (ESO's default).
    fn bootstrap_targets(&self) -> Vec<(Option<String>, String, Bootstrap)> {
        let mut out = Vec::new();
        for spec in &self.input.specs {
            for es in &spec.external_secrets {
                let mut found = false;
                for (ai, app) in self.input.apps.iter().enumerate() {
                    for obj in &app.objects {
                        if obj.group == "external-secrets.io"
                            && obj.kind == "ExternalSecret"
                            && obj.name == *es
                            && ns_match(spec.namespace.as_deref(), self.ns(ai, obj))
                        {
                            for make in obj.makes.iter().filter(|m| m.data == DataKind::Secret) {
                                found = true;
                                out.push((
                                    spec.namespace.clone(),
                                    make.name.clone(),
                                    Bootstrap {
                                        spec: spec.spec.clone(),
                                        env: spec.env.clone(),
                                        external_secret: es.clone(),
                                    },
                                ));
                            }
                        }
                    }
                }
                if !found {
                    out.push((
                        spec.namespace.clone(),
                        es.clone(),
                        Bootstrap {
                            spec: spec.spec.clone(),
                            env: spec.env.clone(),
                            external_secret: es.clone(),
                        },
                    ));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// (consumer's app, kind, name, namespace) of an object nothing makes.
type MissingKey<'a> = (usize, DataKind, &'a str, Option<&'a str>);

fn vias(reads: &[&Read]) -> Vec<String> {
    let mut v: Vec<String> = reads
        .iter()
        .map(|r| {
            let via = clean(&r.via.to_string()).into_owned();
            match &r.key {
                Some(k) => format!("{via} (key `{}`)", clean(k)),
                None => via,
            }
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn via_lines(reads: &[&Read]) -> Vec<String> {
    vias(reads)
        .into_iter()
        .map(|v| format!("via {v}"))
        .collect()
}

/// Run the check.
#[allow(clippy::too_many_lines)] // one of order's rules, its cases in the order Argo CD applies them
pub fn check(input: &Input) -> Report {
    let mut ck = Checker::new(input);
    let mut missing: BTreeMap<MissingKey, Vec<Pair>> = BTreeMap::new();
    // The workloads a Rollout's `workloadRef` can name (Argo Rollouts reads a Deployment's or a
    // ReplicaSet's template), by name.
    let mut templates: HashMap<(&str, &str), Vec<(usize, &Object)>> = HashMap::new();
    for (ai, app) in input.apps.iter().enumerate() {
        for obj in &app.objects {
            if obj.group == "apps" && matches!(obj.kind.as_str(), "Deployment" | "ReplicaSet") {
                templates
                    .entry((obj.kind.as_str(), obj.name.as_str()))
                    .or_default()
                    .push((ai, obj));
            }
        }
    }
    for (ai, app) in input.apps.iter().enumerate() {
        for obj in &app.objects {
            // Never applied by a sync (Skip, helm test hooks, PreDelete): never runs.
            if obj.placement.phases.is_empty() {
                continue;
            }
            let Some(consumer) = &obj.consumer else {
                if obj.unknown_pod_template {
                    let f = Finding::pod_template_unknown(ck.party(ai, obj));
                    ck.findings.push(f);
                }
                continue;
            };
            let mut reads: Vec<&Read> = consumer.reads.iter().collect();
            // A Rollout with a `workloadRef` runs the pods of that workload's template, at the
            // Rollout's own place in the sync; its own app's workload first.
            if let Some(r) = &consumer.workload_ref {
                let ns = ck.ns(ai, obj);
                let found = (r.group == "apps")
                    .then(|| templates.get(&(r.kind.as_str(), r.name.as_str())))
                    .flatten()
                    .and_then(|c| {
                        c.iter()
                            .filter(|(a, o)| ns_match(ns, ck.ns(*a, o)))
                            .min_by_key(|(a, _)| *a != ai)
                    });
                match found.and_then(|(_, o)| o.consumer.as_ref()) {
                    Some(target) => reads.extend(&target.reads),
                    None => {
                        let f = Finding::workload_ref_unknown(ck.party(ai, obj), &r.kind, &r.name);
                        ck.findings.push(f);
                    }
                }
            }
            let mut by_target: BTreeMap<(DataKind, &str), Vec<&Read>> = BTreeMap::new();
            for r in reads {
                by_target
                    .entry((r.data, r.name.as_str()))
                    .or_default()
                    .push(r);
            }
            for ((data, name), reads) in by_target {
                let optional = reads.iter().all(|r| r.optional);
                ck.check_pair(
                    Pair {
                        app: ai,
                        obj,
                        workload: consumer.workload,
                        data,
                        name,
                        reads,
                        optional,
                    },
                    &mut missing,
                );
            }
        }
    }
    for (key, pairs) in missing {
        ck.report_missing(key, pairs);
    }
    ck.global_findings();
    ck.app_notes();

    let targets = ck.bootstrap_targets();
    let mut findings = std::mem::take(&mut ck.findings);
    for f in &mut findings {
        let Some(obj) = &f.object else { continue };
        if obj.kind != DataKind::Secret {
            continue;
        }
        f.bootstrap = targets
            .iter()
            .find(|(ns, name, _)| {
                *name == obj.name && ns_match(ns.as_deref(), obj.namespace.as_deref())
            })
            .map(|(_, _, b)| b.clone());
    }
    for f in &mut findings {
        f.details.sort();
        f.details.dedup();
    }
    findings.sort_by(Finding::cmp_for_report);
    findings.dedup();

    let summary = Summary {
        errors: findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count(),
        warnings: findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count(),
        notes: findings
            .iter()
            .filter(|f| f.severity == Severity::Note)
            .count(),
    };
    let mut apps: Vec<AppSummary> = input
        .apps
        .iter()
        .zip(&ck.apps)
        .map(|(a, info)| AppSummary {
            name: a.name.clone(),
            app_wave: info.wave,
            namespace: info.namespace.map(str::to_string),
            objects: a.objects.len(),
            consumers: a.objects.iter().filter(|o| o.consumer.is_some()).count(),
            references: a
                .objects
                .iter()
                .filter_map(|o| o.consumer.as_ref())
                .map(|c| c.reads.len())
                .sum(),
        })
        .collect();
    apps.sort_by(|a, b| a.name.cmp(&b.name));
    let argocd_cm = input.argocd_cm.as_ref().map(|cm| {
        let key = cm.health_check("argoproj.io", "Application");
        CmSummary {
            file: cm.origin.file.clone(),
            application_health: key.is_some(),
            key: key.map(str::to_string),
        }
    });
    Report {
        ok: summary.errors == 0,
        apps,
        argocd_cm,
        findings,
        summary,
    }
}
