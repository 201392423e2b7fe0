//! `audit`: what the specs no longer describe. Lists, and changes nothing:
//! - paths under the folders the specs own that no spec names ([`vault`]);
//! - paths elsewhere on the specs' mounts marked as vault-seed's (`custom_metadata`
//!   `managed-by=vault-seed`, as `apply` writes it: [`crate::seed::custom_metadata`]) that no
//!   spec names now;
//! - fields of a spec's secret that the spec does not name (provided secrets left out: their
//!   provider writes what it likes);
//! - ExternalSecrets and VaultStaticSecrets in the specs' namespaces reading a path under the
//!   specs' folders that no spec names ([`cluster`]).
//!
//! "Named" is by any spec, in any environment: a path another environment's spec names on the
//! same mount is described. Bounded: LIST only under the specs' folders and mounts, at most
//! [`Request::max_scan_requests`] LISTs and metadata reads per mount; what is denied, failed or
//! past the bound is a "not checked" finding (exit 1), never fatal and never clean.

pub mod cluster;
pub mod findings;
pub mod vault;

use std::collections::HashSet;
use std::path::PathBuf;

use serde::Serialize;

pub use findings::{Finding, Severity};

use crate::mounts::Mounts;
use crate::spec::{EnvPlan, SpecSet, Target};
use crate::vault::Vault;

/// What to audit and how.
#[derive(Debug, Clone)]
pub struct Request {
    /// Requests to Vault in flight at once.
    pub concurrency: usize,
    /// The most LISTs and metadata reads per mount.
    pub max_scan_requests: usize,
    /// Scan the specs' mounts beyond their folders for paths marked as vault-seed's.
    pub mount_scan: bool,
    /// The cluster to look at; `None` with `--skip-kube` (nothing is sent to it).
    pub kube: Option<KubeTarget>,
}

/// Which cluster.
#[derive(Debug, Clone)]
pub struct KubeTarget {
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`, else the specs' `kube_context`.
    pub context: Option<String>,
}

/// How much was looked at.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Scanned {
    /// The folders the specs own, listed.
    pub folders: usize,
    /// LISTs sent.
    pub lists: usize,
    /// Secrets read for their fields.
    pub secrets_read: usize,
    /// Metadata reads of paths no spec names (the mount scan).
    pub metadata_reads: usize,
    /// The mounts scanned beyond the folders.
    pub mounts_scanned: Vec<String>,
    /// Namespaces whose ExternalSecrets and VaultStaticSecrets were listed.
    pub namespaces: Vec<String>,
    /// ExternalSecrets looked at.
    pub external_secrets: usize,
    /// VaultStaticSecrets looked at.
    pub vault_static_secrets: usize,
}

/// An audit's result.
#[derive(Debug, Clone, Serialize)]
pub struct Audit {
    /// The environment.
    pub env: String,
    /// Nothing found (no orphan, nothing left unchecked): exit 0.
    pub ok: bool,
    /// Whether the cluster was looked at (`false` with `--skip-kube`).
    pub kube_checked: bool,
    /// Whether the mounts were scanned beyond the folders (`false` with `--skip-mount-scan`).
    pub mount_scanned: bool,
    /// How much was looked at.
    pub scanned: Scanned,
    /// What was found, worst first.
    pub findings: Vec<Finding>,
}

/// Every target of every spec in every environment: what "a spec names" means here.
pub fn named_targets(set: &SpecSet) -> Vec<Target> {
    let mut out = Vec::new();
    for spec in &set.specs {
        for env in spec.environments.keys() {
            if let Some(e) = spec.environments.get(env) {
                out.extend(spec.targets(e));
            }
        }
    }
    out
}

/// The (mount, path) of every named target.
pub(crate) type NamedPaths = HashSet<(String, String)>;

/// The folders the specs of `plan` own: (mount, folder, application), each once.
pub(crate) fn owned_folders(plan: &EnvPlan<'_>) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for (spec, env) in &plan.specs {
        let mount = spec.vault.mount.trim_matches('/').to_string();
        let folder = spec.folder(&env.name).trim_matches('/').to_string();
        if !out.iter().any(|(m, f, _)| *m == mount && *f == folder) {
            out.push((mount, folder, spec.name.to_string()));
        }
    }
    out
}

/// Audit `plan`'s environment: Vault (its folders, its secrets' fields, its mounts), then the
/// cluster unless `req.kube` is `None`. `named` is [`named_targets`]; `detected` the mount
/// detection (a mount that cannot be used is "not checked").
pub async fn run(
    vault: &Vault,
    plan: &EnvPlan<'_>,
    named: &[Target],
    detected: &Mounts,
    req: &Request,
) -> Audit {
    let paths: NamedPaths = named
        .iter()
        .map(|t| (t.mount().to_string(), t.path.to_string()))
        .collect();
    let owned = owned_folders(plan);
    let mut found = Vec::new();
    let mut scanned = Scanned::default();
    vault::audit(
        vault,
        plan,
        &paths,
        &owned,
        detected,
        req,
        &mut found,
        &mut scanned,
    )
    .await;
    if let Some(kube) = &req.kube {
        cluster::audit(plan, named, &owned, kube, &mut found, &mut scanned).await;
    }
    found.sort_by(|a, b| {
        (a.severity(), a.place())
            .cmp(&(b.severity(), b.place()))
            .then_with(|| a.cmp(b))
    });
    found.dedup();
    Audit {
        env: plan.env.clone(),
        ok: findings::clean(&found),
        kube_checked: req.kube.is_some(),
        mount_scanned: req.mount_scan,
        scanned,
        findings: found,
    }
}
