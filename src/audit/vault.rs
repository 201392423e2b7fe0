//! `audit`'s Vault side: the folders the specs own, listed to the bottom; the fields of the
//! environment's secrets; the specs' mounts scanned for paths marked as vault-seed's. Requests
//! go `concurrency` at once through the client's retries, as `apply`'s; LISTs and metadata
//! reads are counted per mount against the bound.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use futures::stream::{self, StreamExt};

use super::findings::Finding;
use super::{Ignore, NamedPaths, Request, Scanned};
use crate::base::kv::{KvMount, KvVersion};
use crate::base::text::cap;
use crate::seed::layout::why;
use crate::spec::mounts::Mounts;
use crate::spec::EnvPlan;
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
    let w = crate::seed::layout::walk(
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
        match leaf(&req.ignore, named, m, &path, roots[kept[root]].1) {
            Leaf::Ignored => scanned.ignored.paths += 1,
            Leaf::Named => {}
            Leaf::Unnamed(f) => found.push(f),
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

/// What a path found under the folder of application `app` is.
#[derive(Debug, PartialEq)]
enum Leaf {
    /// Left out by `--ignore`: counted, not judged.
    Ignored,
    /// A spec names it.
    Named,
    /// No spec names it.
    Unnamed(Finding),
}

fn leaf(ignore: &Ignore, named: &NamedPaths, mount: &str, path: &str, app: &str) -> Leaf {
    if ignore.path(mount, path) {
        Leaf::Ignored
    } else if named.contains(&(mount.to_string(), path.to_string())) {
        Leaf::Named
    } else {
        Leaf::Unnamed(Finding::UnnamedPath {
            mount: mount.to_string(),
            path: cap(path).into_owned(),
            app: app.to_string(),
        })
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
            Ok(names) => found.extend(unnamed_fields(t, names)),
            Err(e) => found.push(Finding::NotChecked {
                what: format!("secret `{}`", t.full_path()),
                why: why(&e),
            }),
        }
    }
}

/// The fields of `names` (what Vault holds at `t`'s path) that `t`'s spec does not name.
fn unnamed_fields(t: &crate::spec::Target, names: Vec<String>) -> Vec<Finding> {
    names
        .into_iter()
        .filter(|name| !t.fields.iter().any(|f| f.name == *name))
        .map(|name| Finding::UnnamedField {
            mount: t.mount().to_string(),
            path: t.path.to_string(),
            secret: t.name.to_string(),
            field: cap(&name).into_owned(),
        })
        .collect()
}

/// A path no spec names, by its custom_metadata: found when it carries vault-seed's mark
/// exactly (`managed-by=vault-seed`), with the spec file it names.
fn marked(mount: &str, path: &str, meta: Option<&BTreeMap<String, String>>) -> Option<Finding> {
    let meta = meta?;
    (meta.get(MARK_KEY).map(String::as_str) == Some(MARK_VALUE)).then(|| Finding::MarkedPath {
        mount: mount.to_string(),
        path: cap(path).into_owned(),
        spec_file: meta.get(SPEC_KEY).map(|s| cap(s).into_owned()),
    })
}

/// Keep of `paths` only as many as `budget` allows, and spend it; whether any were cut.
fn spend(paths: &mut Vec<String>, budget: &mut usize) -> bool {
    let cut = paths.len() > *budget;
    paths.truncate(*budget);
    *budget -= paths.len();
    cut
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
    let w = crate::seed::layout::walk(
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
    let cut = spend(&mut unnamed, budget) || w.cut;
    scanned.metadata_reads += unnamed.len();
    let mut answers = stream::iter(unnamed)
        .map(|p| async move {
            let r = vault.kv_read_custom_metadata(kv, &p).await;
            (p, r)
        })
        .buffer_unordered(req.concurrency.max(1));
    while let Some((path, r)) = answers.next().await {
        match r {
            Ok(meta) => found.extend(marked(m, &path, meta.as_ref())),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn named(paths: &[&str]) -> NamedPaths {
        paths
            .iter()
            .map(|p| ("secret".to_string(), p.to_string()))
            .collect()
    }

    /// A path under an owned folder: `--ignore` first (counted, never judged), then named or an
    /// orphan of the folder's application.
    #[test]
    fn a_path_in_an_owned_folder_is_ignored_named_or_unnamed() {
        let ignore = Ignore::new(vec!["secret/app/dev/legacy/*".into()]).unwrap();
        let named = named(&["app/dev/S", "app/dev/legacy/KEPT"]);
        let unnamed = |p: &str| {
            Leaf::Unnamed(Finding::UnnamedPath {
                mount: "secret".into(),
                path: p.into(),
                app: "app".into(),
            })
        };
        for (path, want) in [
            ("app/dev/S", Leaf::Named),
            ("app/dev/OLD", unnamed("app/dev/OLD")),
            ("app/dev/S/under", unnamed("app/dev/S/under")),
            ("app/dev/legacy/X", Leaf::Ignored),
            // Ignored wins over named: it is not this platform's to judge.
            ("app/dev/legacy/KEPT", Leaf::Ignored),
        ] {
            assert_eq!(leaf(&ignore, &named, "secret", path, "app"), want, "{path}");
        }
        // Another mount's path of the same name is not named.
        assert_eq!(
            leaf(&Ignore::default(), &named, "kv", "app/dev/S", "app"),
            Leaf::Unnamed(Finding::UnnamedPath {
                mount: "kv".into(),
                path: "app/dev/S".into(),
                app: "app".into()
            })
        );
    }

    #[test]
    fn only_the_fields_the_spec_does_not_name_are_found() {
        let t = crate::write::replace::tests::target("app", "S", &["password", "user"]);
        let found = unnamed_fields(&t, vec!["user".into(), "old".into(), "password".into()]);
        assert_eq!(
            found,
            [Finding::UnnamedField {
                mount: "secret".into(),
                path: "app/dev/S".into(),
                secret: "S".into(),
                field: "old".into(),
            }]
        );
        assert!(unnamed_fields(&t, Vec::new()).is_empty());
    }

    /// Only vault-seed's exact mark makes a path outside the folders vault-seed's.
    #[test]
    fn a_path_outside_the_folders_counts_only_with_vault_seeds_mark() {
        let meta = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let found = |spec_file: Option<&str>| {
            Some(Finding::MarkedPath {
                mount: "secret".into(),
                path: "x/OLD".into(),
                spec_file: spec_file.map(String::from),
            })
        };
        for (case, m, want) in [
            ("absent", None, None),
            ("no metadata", Some(meta(&[])), None),
            (
                "another tool's",
                Some(meta(&[("managed-by", "terraform")])),
                None,
            ),
            (
                "a look-alike",
                Some(meta(&[("managed-by", "vault-seed ")])),
                None,
            ),
            ("another key", Some(meta(&[("owner", "vault-seed")])), None),
            (
                "marked",
                Some(meta(&[("managed-by", "vault-seed")])),
                found(None),
            ),
            (
                "marked, with its spec",
                Some(meta(&[
                    ("managed-by", "vault-seed"),
                    ("vault-seed/spec", "specs/x.toml"),
                ])),
                found(Some("specs/x.toml")),
            ),
        ] {
            assert_eq!(marked("secret", "x/OLD", m.as_ref()), want, "{case}");
        }
    }

    /// Past the bound, what is left is cut (a "not checked" finding), never read.
    #[test]
    fn the_metadata_reads_stop_at_the_bound() {
        let paths = |n: usize| (0..n).map(|i| format!("p{i}")).collect::<Vec<_>>();
        for (n, budget, kept, left, cut) in [
            (3, 5, 3, 2, false),
            (5, 5, 5, 0, false),
            (6, 5, 5, 0, true),
            (1, 0, 0, 0, true),
            (0, 0, 0, 0, false),
        ] {
            let (mut p, mut b) = (paths(n), budget);
            assert_eq!(spend(&mut p, &mut b), cut, "{n} of {budget}");
            assert_eq!((p.len(), b), (kept, left), "{n} of {budget}");
        }
    }
}
