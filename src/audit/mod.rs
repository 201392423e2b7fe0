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

use crate::spec::mounts::Mounts;
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
    /// What is not this platform's (`--ignore`).
    pub ignore: Ignore,
}

/// `--ignore PATTERN`s: what a folder or namespace the platform shares holds of other
/// applications. A pattern is matched whole against a Vault path as `MOUNT/PATH` or an object as
/// findings place it (`ExternalSecret NAMESPACE/NAME`); `*` matches any run of characters,
/// anything else itself.
#[derive(Debug, Clone, Default)]
pub struct Ignore(Vec<String>);

impl Ignore {
    /// The patterns as given; Err names the first that is empty or holds a control character
    /// (shown escaped), and why.
    pub fn new(patterns: Vec<String>) -> Result<Ignore, String> {
        for p in &patterns {
            let why = if p.is_empty() {
                Some("is empty".to_string())
            } else {
                p.chars()
                    .find(|c| crate::base::text::is_hidden(*c))
                    .map(|c| format!("contains a control character (U+{:04X})", c as u32))
            };
            if let Some(why) = why {
                return Err(format!(
                    "`--ignore` `{}` {why}",
                    crate::base::text::quoted(p)
                ));
            }
        }
        Ok(Ignore(patterns))
    }

    /// Whether `mount/path` is left out.
    pub fn path(&self, mount: &str, path: &str) -> bool {
        let text = format!("{mount}/{path}");
        self.0.iter().any(|p| glob(p, &text))
    }

    /// Whether every path under `mount/folder/` is left out, so that the folder need not be
    /// listed: a pattern ending in `*` that matches the folder matches all it holds.
    pub fn folder(&self, mount: &str, folder: &str) -> bool {
        let text = format!("{mount}/{folder}/");
        self.0.iter().any(|p| p.ends_with('*') && glob(p, &text))
    }

    /// Whether the object `KIND NAMESPACE/NAME` is left out.
    pub fn object(&self, kind: &str, namespace: &str, name: &str) -> bool {
        let text = format!("{kind} {namespace}/{name}");
        self.0.iter().any(|p| glob(p, &text))
    }
}

/// Whether `text` is `pattern` whole, each `*` standing for any run of characters (the greedy
/// matcher with one backtrack point: linear in practice, never exponential).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if i < p.len() && p[i] == t[j] {
            i += 1;
            j += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// What `--ignore` left out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Ignored {
    /// Vault paths (each path under a folder not listed is not known, and not counted).
    pub paths: usize,
    /// ExternalSecrets and VaultStaticSecrets: matched themselves, or reading a matched path.
    pub objects: usize,
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
    /// What `--ignore` left out.
    pub ignored: Ignored,
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
        cluster::audit(
            plan,
            named,
            &owned,
            kube,
            &req.ignore,
            &mut found,
            &mut scanned,
        )
        .await;
    }
    worst_first(&mut found);
    Audit {
        env: plan.env.clone(),
        ok: findings::clean(&found),
        kube_checked: req.kube.is_some(),
        mount_scanned: req.mount_scan,
        scanned,
        findings: found,
    }
}

/// `found` worst first, then by place, each finding once (a path two folders reach is listed
/// once).
fn worst_first(found: &mut Vec<Finding>) {
    found.sort_by(|a, b| {
        (a.severity(), a.place())
            .cmp(&(b.severity(), b.place()))
            .then_with(|| a.cmp(b))
    });
    found.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_worst_first_then_by_place_each_once() {
        let note = Finding::Note { text: "n".into() };
        let path = |p: &str| Finding::UnnamedPath {
            mount: "secret".into(),
            path: p.into(),
            app: "app".into(),
        };
        let not_checked = Finding::NotChecked {
            what: "folder `secret/a`".into(),
            why: "denied".into(),
        };
        let mut found = vec![
            note.clone(),
            not_checked.clone(),
            path("b/2"),
            path("a/1"),
            path("b/2"),
        ];
        worst_first(&mut found);
        assert_eq!(found, [path("a/1"), path("b/2"), not_checked, note]);
    }

    #[test]
    fn a_pattern_matches_whole_with_star_as_any_run() {
        for (p, t, want) in [
            (
                "secret/ask/hatchet/*",
                "secret/ask/hatchet/auh1-dev/x",
                true,
            ),
            ("secret/ask/hatchet/*", "secret/ask/hatchet/", true),
            ("secret/ask/hatchet/*", "secret/ask/hatchetx/y", false),
            ("secret/ask/other", "secret/ask/other/x", false),
            ("*/hatchet-*", "ExternalSecret ask/hatchet-secret", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("*", "", true),
            ("", "", true),
            ("x", "", false),
        ] {
            assert_eq!(glob(p, t), want, "{p} ~ {t}");
        }
        // A long run of stars and near-misses stays quick.
        let text = "a".repeat(2000);
        assert!(!glob(&format!("{}b", "a*".repeat(50)), &text));
    }

    #[test]
    fn a_folder_is_left_unlisted_only_when_all_it_holds_is_left_out() {
        let ignore = Ignore::new(vec![
            "secret/ask/hatchet/*".into(),
            "secret/ask/exact".into(),
            "ExternalSecret ask/h-*".into(),
        ])
        .unwrap();
        assert!(ignore.folder("secret", "ask/hatchet"));
        assert!(ignore.folder("secret", "ask/hatchet/dev"));
        assert!(!ignore.folder("secret", "ask/exact"));
        assert!(ignore.path("secret", "ask/exact"));
        assert!(!ignore.path("secret", "ask/exact/more"));
        assert!(ignore.object("ExternalSecret", "ask", "h-1"));
        assert!(!ignore.object("VaultStaticSecret", "ask", "h-1"));
        assert!(Ignore::new(vec!["a\u{7}".into()]).is_err());
        assert!(Ignore::new(vec![String::new()]).is_err());
    }
}
