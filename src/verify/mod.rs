//! `verify`: is an environment's secret bootstrap done? One module per part, each returning a
//! typed report that says whether it is ok:
//!
//! - [`values`], the part `vault`: each field's value in Vault, judged by its generator
//!   (read only: [`crate::seed::inspect`]);
//! - [`grants`], the part `policy`: do ESO's Vault policies grant what it needs on every path;
//! - [`cluster`], the part `kube`: finds the cluster and the namespaces, waits while `--wait`
//!   lasts, and runs the cluster checks: [`eso`] (ExternalSecrets Ready and fresh, their target
//!   Secrets, PushSecrets and stores, each store's Vault provider judged by [`store`] against
//!   what was seeded) and [`vso`] (VaultStaticSecrets synced and fresh, their
//!   destination Secrets, VaultAuths and VaultConnections);
//! - [`argocd`], the part `argocd` (specs with `[argocd]`): the secrets app Synced and Healthy,
//!   each consumer Application at a later app wave, argocd-cm's Application health check.
//! - [`consumers`], the part `consumers`: the workloads reading the target Secrets run pods that
//!   started after the data last changed (or something restarts them); `--restart`.
//! - [`imports`], the part `imports` (specs with a `from_secret` field): Vault holds the value
//!   of each field's Kubernetes Secret key, once imported.
//!
//! The object checks return typed findings ([`findings`]: severity, and each part's enum words
//! its own), from which their reports' sentence lists are made.
//!
//! [`readers`] is not a part: `set` and `rotate` ask it, before they replace a value, which of
//! the objects the specs list read it.
//!
//! [`restarters`] tells whether the controller a workload relies on for its restart (Reloader,
//! VSO) runs and acts on it, for [`consumers`].
//!
//! [`facts`] carries what the Vault and policy parts found into the cluster checks'
//! explanations. A new part (the Vault Secrets Operator's objects, Argo CD's Applications) is a
//! module with its typed report implementing [`Part`], and a line in [`run`] (or, checked in the
//! cluster, a field of [`cluster::ClusterPart`] and a line in its `check_once`).

pub mod argocd;
pub mod cluster;
pub mod consumers;
pub mod delivery;
pub mod eso;
pub mod facts;
pub mod findings;
pub mod grants;
pub mod imports;
pub mod notes;
pub mod readers;
pub mod restarters;
pub(crate) mod secret_type;
pub mod store;
pub mod stuck;
pub mod values;
pub mod vso;

use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use serde::Serialize;

use crate::base::codes::Code;
use crate::spec::mounts::Mounts;
use crate::spec::EnvPlan;
use crate::vault::Vault;
use notes::Unchecked;

/// The parts `--only` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartName {
    /// Vault's values.
    Vault,
    /// ESO's policy.
    Policy,
    /// The cluster's objects.
    Kube,
    /// Argo CD's Applications and argocd-cm.
    Argocd,
    /// The workloads that read the target Secrets.
    Consumers,
    /// The `from_secret` fields against their Kubernetes Secrets.
    Imports,
}

impl PartName {
    /// Every part, in report order.
    pub const ALL: [PartName; 6] = [
        PartName::Vault,
        PartName::Policy,
        PartName::Kube,
        PartName::Argocd,
        PartName::Consumers,
        PartName::Imports,
    ];

    /// Its name on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PartName::Vault => "vault",
            PartName::Policy => "policy",
            PartName::Kube => "kube",
            PartName::Argocd => "argocd",
            PartName::Consumers => "consumers",
            PartName::Imports => "imports",
        }
    }

    /// The part named `name`.
    pub fn parse(name: &str) -> Option<PartName> {
        PartName::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Whether the part reads the cluster (`--skip-kube` leaves it out).
    fn in_cluster(self) -> bool {
        matches!(
            self,
            PartName::Kube | PartName::Argocd | PartName::Consumers | PartName::Imports
        )
    }
}

/// What to verify, and how.
pub struct Request {
    /// Placeholders still unreplaced are failures.
    pub strict: bool,
    /// The parts asked for; empty for all.
    pub parts: Vec<PartName>,
    /// Leave the cluster out.
    pub skip_kube: bool,
    /// Poll the cluster until its checks are done or this time is up.
    pub wait: Option<Duration>,
    /// Ask ESO to sync the ExternalSecrets now.
    pub force_sync: bool,
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// ESO's own token, to ask the server for its capabilities.
    pub eso_token: Option<SecretString>,
    /// Requests to Vault in flight at once.
    pub concurrency: usize,
    /// Read no target Secret (`--skip-target-secrets`): their keys go unchecked.
    pub skip_target_secrets: bool,
    /// Restart the workloads that run with a Secret's old data (`--restart`).
    pub restart: bool,
}

impl Request {
    /// Whether `part` is asked for.
    pub fn wants(&self, part: PartName) -> bool {
        self.left_out(part).is_none()
    }

    /// The option that leaves `part` out, if one does.
    pub fn left_out(&self, part: PartName) -> Option<&'static str> {
        if !self.parts.is_empty() && !self.parts.contains(&part) {
            Some("--only")
        } else if self.skip_kube && part.in_cluster() {
            Some("--skip-kube")
        } else if self.skip_target_secrets && part == PartName::Imports {
            // Comparing means reading the Secrets' values, which this option is there to avoid.
            Some("--skip-target-secrets")
        } else {
            None
        }
    }
}

/// A Vault namespace as operators and vault-seed name it, compared: without the `/` at either
/// end, and none for the root (empty).
pub(crate) fn vault_namespace(ns: Option<&str>) -> Option<String> {
    ns.map(|n| n.trim_matches('/'))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}

/// A part's typed report.
pub trait Part {
    /// Whether everything the part checks is right.
    fn ok(&self) -> bool;
}

/// A part's result: its report, or why it could not be checked.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Checked<T> {
    /// Checked.
    Done(T),
    /// Not checked.
    Failed(PartFailure),
}

/// Why a part could not be checked.
#[derive(Debug, Serialize)]
pub struct PartFailure {
    /// Always false.
    pub ok: bool,
    /// What went wrong.
    pub error: String,
    /// What to do.
    pub help: Option<String>,
}

impl<T: Part> Checked<T> {
    /// A part that could not be checked.
    pub fn failed(error: String, help: Option<String>) -> Checked<T> {
        Checked::Failed(PartFailure {
            ok: false,
            error,
            help,
        })
    }

    /// Whether the part is ok (one not checked is not).
    pub fn ok(&self) -> bool {
        match self {
            Checked::Done(t) => t.ok(),
            Checked::Failed(_) => false,
        }
    }
}

/// Progress while the cluster part runs, for the command to show.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// Something was done (an ExternalSecret annotated): also kept in the notes.
    Did(&'a str),
    /// Still waiting: how far, and the time left.
    Waiting(&'a str),
}

/// The whole verification.
#[derive(Debug, Serialize)]
pub struct Verification {
    /// The environment.
    pub env: String,
    /// Every part asked for is ok.
    pub ok: bool,
    /// Whether placeholders count as failures.
    pub strict: bool,
    /// Vault's values; `None` when not asked for.
    pub vault: Option<Checked<values::ValuesPart>>,
    /// ESO's policy; `None` when not asked for.
    pub policy: Option<Checked<grants::PolicyPart>>,
    /// The cluster's objects; `None` when not asked for.
    pub kube: Option<Checked<cluster::ClusterPart>>,
    /// Argo CD's Applications; `None` when not asked for or no spec has `[argocd]`.
    pub argocd: Option<Checked<argocd::ArgocdPart>>,
    /// The workloads that read the target Secrets; `None` when not asked for.
    pub consumers: Option<Checked<consumers::ConsumersPart>>,
    /// The `from_secret` fields against their Secrets; `None` when not asked for or no field
    /// has `from_secret` (then it is in neither `checked` nor `not_checked`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imports: Option<Checked<imports::ImportsPart>>,
    /// What is not about one part (waiting ran out, ExternalSecrets annotated).
    pub notes: Vec<String>,
    /// The same sentences with their codes ([`notes::RunNote`]).
    pub findings: Vec<findings::Coded>,
    /// The parts checked, in report order.
    pub checked: Vec<&'static str>,
    /// What was not checked, and why: a verdict of "done" is about the parts checked only.
    pub not_checked: Vec<NotChecked>,
    /// What was checked but the facts could not decide: never a failure, always named with the
    /// verdict.
    pub cannot_tell: Vec<CannotTell>,
}

/// Objects of a part whose state the facts could not decide.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct CannotTell {
    /// The part (`consumers`).
    pub part: &'static str,
    /// How many.
    pub count: usize,
    /// Of what (`workload(s)`).
    pub what: &'static str,
    /// Its code ([`notes::Undecided`]).
    pub code: &'static str,
}

/// Something a verification did not check, and why.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct NotChecked {
    /// A part (`kube`), or what of one was left out (`target Secrets`).
    pub part: &'static str,
    /// The option that left it out (`--skip-kube`), or another reason.
    pub why: &'static str,
    /// The reason's code ([`notes::Unchecked`]).
    pub code: &'static str,
}

impl Verification {
    /// Whether `part` was asked for but could not be checked.
    fn could_not_check(&self, part: PartName) -> bool {
        fn failed<T>(p: &Option<Checked<T>>) -> bool {
            matches!(p, Some(Checked::Failed(_)))
        }
        match part {
            PartName::Vault => failed(&self.vault),
            PartName::Policy => failed(&self.policy),
            PartName::Kube => failed(&self.kube),
            PartName::Argocd => failed(&self.argocd),
            PartName::Consumers => failed(&self.consumers),
            // A field whose Secret or value could not be read leaves the part not checked.
            PartName::Imports => {
                failed(&self.imports)
                    || matches!(&self.imports, Some(Checked::Done(p)) if p.not_checked() > 0)
            }
        }
    }

    /// Fills `checked` and `not_checked`, each row with its code: each part is checked unless an option left it out,
    /// it does not apply to the specs, or it could not be checked.
    fn name_what_was_checked(&mut self, req: &Request, argocd_configured: bool, imports: bool) {
        for part in PartName::ALL {
            if part == PartName::Imports && !imports {
                continue;
            }
            let why = req
                .left_out(part)
                .map(|o| (Unchecked::LeftOut, o))
                .or_else(|| {
                    (part == PartName::Argocd && !argocd_configured)
                        .then_some((Unchecked::NoArgocd, "no spec has an `[argocd]` section"))
                })
                .or_else(|| {
                    self.could_not_check(part)
                        .then_some((Unchecked::Failed, "it could not be checked"))
                });
            match why {
                None => self.checked.push(part.as_str()),
                Some((code, why)) => self.not_checked.push(NotChecked {
                    part: part.as_str(),
                    why,
                    code: code.code(),
                }),
            }
        }
        if req.skip_target_secrets && self.checked.contains(&PartName::Kube.as_str()) {
            self.not_checked.push(NotChecked {
                part: "target Secrets",
                why: "--skip-target-secrets",
                code: Unchecked::TargetSecrets.code(),
            });
        }
        if let Some(Checked::Done(c)) = &self.consumers {
            if c.cannot_tell > 0 {
                self.cannot_tell.push(CannotTell {
                    part: PartName::Consumers.as_str(),
                    count: c.cannot_tell,
                    what: "workload(s)",
                    code: notes::Undecided::Workloads.code(),
                });
            }
            if c.not_checked > 0 {
                self.not_checked.push(NotChecked {
                    part: "consumers' readers through env or subPath",
                    why: "--skip-target-secrets",
                    code: Unchecked::ConsumerReaders.code(),
                });
            }
        }
    }
}

impl Verification {
    /// Every part asked for is ok.
    fn parts_ok(&self) -> bool {
        ok_or_absent(&self.vault)
            && ok_or_absent(&self.policy)
            && ok_or_absent(&self.kube)
            && ok_or_absent(&self.argocd)
            && ok_or_absent(&self.consumers)
            && ok_or_absent(&self.imports)
    }
}

fn ok_or_absent<T: Part>(part: &Option<Checked<T>>) -> bool {
    part.as_ref().is_none_or(Checked::ok)
}

/// Verify `plan` with the mounts already detected. Vault's values are read even when the part
/// `vault` is not asked for, and ESO's policy when the cluster is: their findings explain what
/// the cluster shows. The part `vault` takes the plan's targets and shared names over at the end
/// (moved, not copied: its rows are made from them when shown).
pub async fn run(
    vault: &Vault,
    plan: &mut EnvPlan<'_>,
    mounts: &Mounts,
    req: &Request,
    progress: &dyn Fn(Progress<'_>),
) -> Verification {
    let detected = |mount: &str| mounts.version(mount);
    // The target Secrets' values are compared with Vault's unless they are not to be read; the
    // comparer takes over the values' reads, digested, when a part that compares runs.
    let early = (!req.skip_target_secrets)
        .then(|| delivery::Early::new(plan.targets.len()))
        .flatten();
    let compares = req.wants(PartName::Kube) || req.wants(PartName::Consumers);
    let seen = |i: usize, e: &crate::vault::Existing| {
        if let Some(early) = &early {
            early.seen(i, e);
        }
    };
    let seen: Option<&crate::seed::Seen<'_>> = (compares && early.is_some()).then_some(&seen);
    let (inspection, policy) = {
        let plan: &EnvPlan<'_> = plan;
        // The values and the policy part at once: neither needs the other's answers (over a
        // network, the policy part's round trips are paid while the values are read).
        let policy = async {
            if req.wants(PartName::Policy) || req.wants(PartName::Kube) {
                Some(
                    match grants::check(vault, plan, &detected, req.eso_token.as_ref()).await {
                        Ok(p) => Checked::Done(p),
                        Err(e) => Checked::failed(e.to_string(), e.help()),
                    },
                )
            } else {
                None
            }
        };
        futures::join!(
            crate::seed::inspect(vault, mounts, &plan.targets, req.concurrency, seen),
            policy
        )
    };
    // The part `kube` reads again, while it waits, the paths not yet valid.
    let inspection = tokio::sync::RwLock::new(inspection);
    let mut notes: Vec<notes::RunNote> = Vec::new();
    // One `--wait` for the cluster's parts together, counted from here.
    let deadline = req.wait.map(|w| std::time::Instant::now() + w);
    let InCluster {
        kube,
        argocd,
        consumers,
        imports,
        has_imports,
    } = in_cluster(
        vault,
        plan,
        mounts,
        req,
        (&inspection, policy.as_ref(), early),
        (deadline, progress, &mut notes),
    )
    .await;
    let values = req.wants(PartName::Vault).then(|| {
        Checked::Done(values::judge(
            inspection.into_inner(),
            std::mem::take(&mut plan.targets),
            req.strict,
            std::mem::take(&mut plan.shared_names),
        ))
    });
    let (said, coded) = findings::said(&notes);
    let mut v = Verification {
        env: plan.env.clone(),
        ok: false,
        strict: req.strict,
        vault: values,
        policy: policy.filter(|_| req.wants(PartName::Policy)),
        kube,
        argocd,
        consumers,
        imports,
        notes: said,
        findings: coded,
        checked: Vec::new(),
        not_checked: Vec::new(),
        cannot_tell: Vec::new(),
    };
    v.name_what_was_checked(req, argocd::configured(plan), has_imports);
    v.ok = v.parts_ok();
    v
}

/// What the parts after Vault's and the policy's get.
type Gathered<'a> = (
    &'a tokio::sync::RwLock<crate::seed::Inspection>,
    Option<&'a Checked<grants::PolicyPart>>,
    Option<delivery::Early>,
);

/// How the cluster's parts report as they go.
type Going<'a> = (
    Option<std::time::Instant>,
    &'a dyn Fn(Progress<'_>),
    &'a mut Vec<notes::RunNote>,
);

/// The parts read in the cluster, and the imports.
struct InCluster {
    kube: Option<Checked<cluster::ClusterPart>>,
    argocd: Option<Checked<argocd::ArgocdPart>>,
    consumers: Option<Checked<consumers::ConsumersPart>>,
    imports: Option<Checked<imports::ImportsPart>>,
    /// Whether a field has `from_secret`.
    has_imports: bool,
}

/// The parts read in the cluster (and the imports), with one comparer of the target Secrets'
/// values with Vault's ([`delivery`]) for them all.
async fn in_cluster(
    vault: &Vault,
    plan: &EnvPlan<'_>,
    mounts: &Mounts,
    req: &Request,
    (inspection, policy, early): Gathered<'_>,
    (deadline, progress, notes): Going<'_>,
) -> InCluster {
    let detected = |mount: &str| mounts.version(mount);
    // The targets by the names the cluster's objects give them, for every part.
    let index = crate::spec::TargetIndex::new(&plan.targets);
    let compare = early.map(|e| delivery::Compare::new(vault, mounts, &index, e));
    let has_imports = crate::write::import::any(&plan.targets);
    let wants_argocd = req.wants(PartName::Argocd) && argocd::configured(plan);
    let wants_imports = req.wants(PartName::Imports) && has_imports;
    // One connection for every part, so each object is read once ([`crate::kube::ReadKind`]).
    let connected = if req.wants(PartName::Kube)
        || wants_argocd
        || req.wants(PartName::Consumers)
        || wants_imports
    {
        Some(cluster::connect(plan, req).await)
    } else {
        None
    };
    let connected = connected.as_ref();
    let kube = match connected.filter(|_| req.wants(PartName::Kube)) {
        Some(c) => {
            let judged = cluster::Judged {
                inspection,
                index: &index,
                policy,
                detected: &detected,
                mounts,
            };
            Some(
                cluster::check(
                    c,
                    vault,
                    plan,
                    &judged,
                    compare.as_ref(),
                    req,
                    progress,
                    notes,
                )
                .await,
            )
        }
        None => None,
    };
    let argocd = match connected.filter(|_| wants_argocd) {
        Some(c) => Some(argocd::check(c, plan, req, deadline, progress, notes).await),
        None => None,
    };
    let consumers = match connected.filter(|_| req.wants(PartName::Consumers)) {
        Some(c) => {
            Some(consumers::check(c, plan, compare.as_ref(), req, deadline, progress, notes).await)
        }
        None => None,
    };
    let imports = match connected.filter(|_| wants_imports) {
        Some(c) => Some(imports::check(c, vault, plan, mounts).await),
        None => None,
    };
    InCluster {
        kube,
        argocd,
        consumers,
        imports,
        has_imports,
    }
}
