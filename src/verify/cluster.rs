//! The part `kube`: find the cluster as kubectl does, resolve the namespace of each object the
//! specs name, then run the cluster checks ([`super::eso`], [`super::vso`]) once, or again every
//! few seconds until they are done or `--wait` runs out.

use std::collections::HashSet;
use std::future::Future;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::delivery::Compare;
use super::eso::{self, EsoReport, Wanted};
use super::facts::Facts;
use super::store;
use super::vso::{self, VssCheck};
use super::{Checked, Part, Progress, Request};
use crate::kube::{EsoCluster, KubeError};
use crate::spec::{EnvPlan, Environment, Vso};
use crate::vault::Vault;

/// How often the cluster is asked again while waiting.
const POLL: Duration = Duration::from_secs(2);

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
    let mut seen = HashSet::new();
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
                if !wanted.static_secrets.contains(&(ns.clone(), name.clone())) {
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

/// Connect, then check (and wait). What was done and whether waiting ran out go to `notes`.
/// `vault` is the Vault vault-seed talked to: the stores are compared with it.
#[allow(clippy::too_many_arguments)]
pub async fn check(
    vault: &Vault,
    plan: &EnvPlan<'_>,
    facts: &Facts<'_>,
    compare: Option<&Compare<'_>>,
    req: &Request,
    progress: &dyn Fn(Progress<'_>),
    notes: &mut Vec<String>,
) -> Checked<ClusterPart> {
    let cluster = match connect(plan, req).await {
        Ok(c) => c,
        Err((error, help)) => return Checked::failed(error, Some(help)),
    };
    let mut wanted = wanted(plan, cluster.default_namespace());
    if req.skip_target_secrets {
        // A Role without `get secrets` (which would also grant their values) suffices.
        wanted.skip_target_secrets = true;
        notes.push(
            "target Secrets were not read (--skip-target-secrets): their keys were not checked"
                .into(),
        );
    }
    if req.force_sync {
        let mut lines = eso::force_sync(&cluster, &wanted).await;
        lines.extend(vso::force_sync(&cluster, &wanted.static_secrets).await);
        for line in lines {
            progress(Progress::Did(&line));
            notes.push(line);
        }
    }
    let expected = vso::Expected::of(plan, vault, cluster.default_namespace());
    let deadline = req.wait.map(|w| Instant::now() + w);
    let inputs = store::Inputs {
        vault,
        plan,
        default_namespace: cluster.default_namespace(),
        eso_token_given: req.eso_token.is_some(),
    };
    let (result, ran_out) = poll(
        deadline,
        progress,
        || {
            // Each poll compares with Vault as it is then.
            if let Some(c) = compare {
                c.forget();
            }
            check_once(&cluster, &wanted, plan, facts, &inputs, &expected, compare)
        },
        |k| !k.ok,
        |k| match (
            wanted.external_secrets.is_empty(),
            wanted.static_secrets.is_empty(),
        ) {
            (false, true) | (true, true) => k.eso.progress(),
            (true, false) => progress_of_vso(&k.vault_static_secrets),
            (false, false) => format!(
                "{}, {}",
                k.eso.progress(),
                progress_of_vso(&k.vault_static_secrets)
            ),
        },
    )
    .await;
    if let (Some(wait), true) = (req.wait, ran_out) {
        notes.push(format!(
            "waited {} and not everything was Ready",
            humantime::format_duration(wait)
        ));
    }
    match result {
        Ok(k) => Checked::Done(k),
        Err(e) => Checked::failed(e.to_string(), e.help()),
    }
}

/// Connect to the cluster of `plan` (see [`context`]); else the error and one help line: what
/// fixes the connection, or leaving the cluster out.
pub async fn connect(plan: &EnvPlan<'_>, req: &Request) -> Result<EsoCluster, (String, String)> {
    let context = context(plan, req);
    EsoCluster::connect(req.kubeconfig.as_deref(), context.as_deref())
        .await
        .map_err(|e| {
            let help = match e.help() {
                Some(h) => format!("{h}; or run with --skip-kube"),
                None => "run with --skip-kube to check Vault and the policy only".into(),
            };
            (e.to_string(), help)
        })
}

/// Run `check` once; with a `deadline`, again every `POLL` while it fails or `waiting` says
/// time may help and time is left, telling `progress` how far (`how_far`). Returns the last
/// result and whether the time ran out while still waiting.
pub async fn poll<T, F: Future<Output = Result<T, KubeError>>>(
    deadline: Option<Instant>,
    progress: &dyn Fn(Progress<'_>),
    check: impl Fn() -> F,
    waiting: impl Fn(&T) -> bool,
    how_far: impl Fn(&T) -> String,
) -> (Result<T, KubeError>, bool) {
    loop {
        let result = check().await;
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
                tokio::time::sleep(POLL.min(left)).await;
            }
            _ => return (result, deadline.is_some() && wait),
        }
    }
}

/// Every cluster check, once. A new check (VSO's VaultStaticSecrets) is a field of
/// [`ClusterPart`] and a line here.
async fn check_once(
    cluster: &EsoCluster,
    wanted: &Wanted,
    plan: &EnvPlan<'_>,
    facts: &Facts<'_>,
    inputs: &store::Inputs<'_>,
    expected: &vso::Expected,
    compare: Option<&Compare<'_>>,
) -> Result<ClusterPart, KubeError> {
    let mut eso = eso::check(cluster, wanted, &plan.targets, facts, inputs, compare).await?;
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

/// The namespace of a spec's VaultStaticSecrets: the environment's `kube_namespace`, else
/// `[vso] namespace`, else the kubeconfig's.
pub(crate) fn vso_namespace(v: &Vso, env: &Environment, default_namespace: &str) -> String {
    env.kube_namespace
        .clone()
        .or_else(|| v.namespace.clone())
        .unwrap_or_else(|| default_namespace.to_string())
}
