//! `audit`'s Vault side: the folders the specs own, listed to the bottom; the fields of the
//! environment's secrets; the specs' mounts scanned for paths marked as vault-seed's. Requests
//! go `concurrency` at once through the client's retries, as `apply`'s; LISTs and metadata
//! reads are counted per mount against the bound.

use std::collections::{BTreeSet, HashMap, HashSet};

use futures::stream::{self, StreamExt};

use super::findings::Finding;
use super::{NamedPaths, Request, Scanned};
use crate::kv::{KvMount, KvVersion};
use crate::layout::why;
use crate::mounts::Mounts;
use crate::spec::EnvPlan;
use crate::text::cap;
use crate::vault::{Existing, Vault};

/// The custom_metadata `apply` writes on what it made ([`crate::seed::custom_metadata`]).
const MARK_KEY: &str = "managed-by";
const MARK_VALUE: &str = "vault-seed";
const SPEC_KEY: &str = "vault-seed/spec";

/// `mount/folder` as findings name a folder (the mount's root: `mount/`).
fn folder_name(mount: &str, folder: &str) -> String {
    format!("{mount}/{}", cap(folder))
}

/// The Vault side of the audit; findings and counts added to `found` and `scanned`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn audit(
    vault: &Vault,
    plan: &EnvPlan<'_>,
    named: &NamedPaths,
    owned: &[(String, String, String)],
    detected: &Mounts,
    req: &Request,
    found: &mut Vec<Finding>,
    scanned: &mut Scanned,
) {
    let mut budgets: HashMap<&str, usize> = HashMap::new();
    let mounts: BTreeSet<&str> = owned.iter().map(|(m, _, _)| m.as_str()).collect();
    for &m in &mounts {
        budgets.insert(m, req.max_scan_requests);
        let Some(kv) = detected.get(m) else {
            let why = detected
                .errors
                .get(m)
                .cloned()
                .unwrap_or_else(|| format!("mount `{m}` cannot be used"));
            found.push(Finding::NotChecked {
                what: format!("mount `{m}`"),
                why,
            });
            continue;
        };
        let roots: Vec<(&str, &str)> = owned
            .iter()
            .filter(|(om, _, _)| om == m)
            .map(|(_, f, app)| (f.as_str(), app.as_str()))
            .collect();
        let budget = budgets.get_mut(m).expect("inserted above");
        folders(vault, kv, &roots, named, req, budget, found, scanned).await;
    }
    fields(vault, plan, detected, req.concurrency, found, scanned).await;
    if !req.mount_scan {
        return;
    }
    for &m in &mounts {
        let Some(kv) = detected.get(m) else { continue };
        if kv.version == KvVersion::V1 {
            found.push(Finding::Note {
                text: format!("mount `{m}` is KV v1, which keeps no custom_metadata: no path there carries vault-seed's mark, so it was not scanned beyond the specs' folders"),
            });
            continue;
        }
        let skip: HashSet<&str> = owned
            .iter()
            .filter(|(om, _, _)| om == m)
            .map(|(_, f, _)| f.as_str())
            .collect();
        let budget = budgets.get_mut(m).expect("inserted above");
        scan_mount(vault, kv, named, &skip, req, budget, found, scanned).await;
    }
}

/// The folders the specs own on one mount: every path below them that no spec names.
#[allow(clippy::too_many_arguments)]
async fn folders(
    vault: &Vault,
    kv: &KvMount,
    roots: &[(&str, &str)],
    named: &NamedPaths,
    req: &Request,
    budget: &mut usize,
    found: &mut Vec<Finding>,
    scanned: &mut Scanned,
) {
    let m = kv.path.as_str();
    // A folder all of which `--ignore` leaves out is not listed, a root neither.
    let ignored = |folder: &str| req.ignore.folder(m, folder);
    let kept: Vec<usize> = (0..roots.len()).filter(|&i| !ignored(roots[i].0)).collect();
    let start: Vec<String> = kept.iter().map(|&i| roots[i].0.to_string()).collect();
    scanned.folders += start.len();
    let w = crate::layout::walk(
        vault,
        kv,
        &start,
        &ignored,
        budget,
        req.concurrency,
        &mut scanned.lists,
    )
    .await;
    for (root, path) in w.leaves {
        if req.ignore.path(m, &path) {
            scanned.ignored.paths += 1;
            continue;
        }
        if !named.contains(&(m.to_string(), path.clone())) {
            found.push(Finding::UnnamedPath {
                mount: m.to_string(),
                path: cap(&path).into_owned(),
                app: roots[kept[root]].1.to_string(),
            });
        }
    }
    for (folder, why) in w.failed {
        found.push(Finding::NotChecked {
            what: format!("folder `{}`", folder_name(m, &folder)),
            why,
        });
    }
    if w.cut {
        found.push(out_of_bound(m, req.max_scan_requests, "the specs' folders"));
    }
}

fn out_of_bound(mount: &str, bound: usize, what: &str) -> Finding {
    Finding::NotChecked {
        what: format!("mount `{mount}`"),
        why: format!("stopped at {bound} requests (--max-scan-requests): {what} not all looked at"),
    }
}

/// Each secret of the environment (not provided ones) read: the fields its spec does not name.
/// Its values are dropped as read; only field names are kept.
async fn fields(
    vault: &Vault,
    plan: &EnvPlan<'_>,
    detected: &Mounts,
    concurrency: usize,
    found: &mut Vec<Finding>,
    scanned: &mut Scanned,
) {
    let wanted: Vec<(&crate::spec::Target, &KvMount)> = plan
        .targets
        .iter()
        .filter(|t| t.provided.is_none())
        .filter_map(|t| detected.get(t.mount()).map(|m| (t, m)))
        .collect();
    scanned.secrets_read += wanted.len();
    let mut answers = stream::iter(wanted)
        .map(|(t, m)| async move {
            let r = vault.kv_read(m, &t.path).await.map(|e| match e {
                Existing::Present(p) => p.fields.into_keys().collect::<Vec<String>>(),
                Existing::Absent | Existing::Deleted { .. } => Vec::new(),
            });
            (t, r)
        })
        .buffer_unordered(concurrency.max(1));
    while let Some((t, r)) = answers.next().await {
        match r {
            Ok(names) => {
                for name in names {
                    if !t.fields.iter().any(|f| f.name == name) {
                        found.push(Finding::UnnamedField {
                            mount: t.mount().to_string(),
                            path: t.path.to_string(),
                            secret: t.name.to_string(),
                            field: cap(&name).into_owned(),
                        });
                    }
                }
            }
            Err(e) => found.push(Finding::NotChecked {
                what: format!("secret `{}`", t.full_path()),
                why: why(&e),
            }),
        }
    }
}

/// One mount beyond the specs' folders (`skip`): each path no spec names has its metadata read;
/// those marked as vault-seed's are found.
#[allow(clippy::too_many_arguments)]
async fn scan_mount(
    vault: &Vault,
    kv: &KvMount,
    named: &NamedPaths,
    skip: &HashSet<&str>,
    req: &Request,
    budget: &mut usize,
    found: &mut Vec<Finding>,
    scanned: &mut Scanned,
) {
    let m = kv.path.as_str();
    scanned.mounts_scanned.push(m.to_string());
    let skip = |folder: &str| skip.contains(folder) || req.ignore.folder(m, folder);
    let w = crate::layout::walk(
        vault,
        kv,
        &[String::new()],
        &skip,
        budget,
        req.concurrency,
        &mut scanned.lists,
    )
    .await;
    for (folder, why) in w.failed {
        found.push(Finding::NotChecked {
            what: format!("folder `{}`", folder_name(m, &folder)),
            why: format!("{why}: the mount scan could not look there"),
        });
    }
    let mut unnamed: Vec<String> = w
        .leaves
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| !named.contains(&(m.to_string(), p.clone())))
        .filter(|p| {
            let ignored = req.ignore.path(m, p);
            scanned.ignored.paths += usize::from(ignored);
            !ignored
        })
        .collect();
    let mut cut = w.cut;
    if unnamed.len() > *budget {
        unnamed.truncate(*budget);
        cut = true;
    }
    *budget -= unnamed.len();
    scanned.metadata_reads += unnamed.len();
    let mut answers = stream::iter(unnamed)
        .map(|p| async move {
            let r = vault.kv_read_custom_metadata(kv, &p).await;
            (p, r)
        })
        .buffer_unordered(req.concurrency.max(1));
    while let Some((path, r)) = answers.next().await {
        match r {
            Ok(Some(meta)) if meta.get(MARK_KEY).map(String::as_str) == Some(MARK_VALUE) => {
                found.push(Finding::MarkedPath {
                    mount: m.to_string(),
                    path: cap(&path).into_owned(),
                    spec_file: meta.get(SPEC_KEY).map(|s| cap(s).into_owned()),
                });
            }
            Ok(_) => {}
            Err(e) => found.push(Finding::NotChecked {
                what: format!("path `{}`", folder_name(m, &path)),
                why: format!("{}: whether vault-seed made it is not known", why(&e)),
            }),
        }
    }
    if cut {
        found.push(out_of_bound(m, req.max_scan_requests, "the mount"));
    }
}
