//! Where a secret was before the layout changed. vault-seed marks each secret it writes with
//! the spec, environment and secret name ([`crate::gate::custom_metadata`]), so a marked secret
//! of the same spec, environment and name at another path of the mount is the same secret, left
//! behind by a change of the specs' folders. `plan` and `apply` look for it when a secret is
//! absent: a fixed one is then never made anew (its value would be a second key the data was
//! never encrypted with), and `vault-seed move` copies the old one over. `audit` walks mounts
//! with the same [`walk`].

use std::collections::{HashMap, HashSet};

use futures::stream::{self, StreamExt};

use crate::base::kv::KvMount;
use crate::base::text::cap;
use crate::spec::Target;
use crate::vault::{Existing, Vault, VaultError};

/// What a walk of folders found.
#[derive(Default)]
pub struct Walk {
    /// Each path found, with the index of the root it was found under.
    pub leaves: Vec<(usize, String)>,
    /// Folders whose LIST failed, and why.
    pub failed: Vec<(String, String)>,
    /// The bound was reached with folders left to list.
    pub cut: bool,
}

/// LIST `roots` and every folder below them (not those `skip` says), breadth first, at most
/// `budget` LISTs (taken from it), counting each in `lists`.
pub async fn walk(
    vault: &Vault,
    mount: &KvMount,
    roots: &[String],
    skip: &dyn Fn(&str) -> bool,
    budget: &mut usize,
    concurrency: usize,
    lists: &mut usize,
) -> Walk {
    let mut out = Walk::default();
    let mut frontier: Vec<(usize, String)> = roots.iter().cloned().enumerate().collect();
    while !frontier.is_empty() {
        if frontier.len() > *budget {
            frontier.truncate(*budget);
            out.cut = true;
        }
        *budget -= frontier.len();
        *lists += frontier.len();
        let answers: Vec<_> = stream::iter(frontier)
            .map(|(root, folder)| async move {
                let r = vault.kv_list(mount, &folder).await;
                (root, folder, r)
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        frontier = Vec::new();
        for (root, folder, r) in answers {
            match r {
                Ok(names) => {
                    for name in names.unwrap_or_default() {
                        match name.strip_suffix('/') {
                            Some(sub) => {
                                let sub = join(&folder, sub);
                                if !skip(&sub) {
                                    frontier.push((root, sub));
                                }
                            }
                            None => out.leaves.push((root, join(&folder, &name))),
                        }
                    }
                }
                Err(e) => out.failed.push((folder, why(&e))),
            }
        }
        if out.cut {
            break;
        }
    }
    out
}

fn join(folder: &str, name: &str) -> String {
    if folder.is_empty() {
        name.to_string()
    } else {
        format!("{folder}/{name}")
    }
}

/// Why a request failed, said once: a denial names the capability, anything else its error.
pub fn why(e: &VaultError) -> String {
    match e {
        VaultError::Denied { capability, .. } => {
            format!("the token may not `{capability}` it")
        }
        e => cap(&e.to_string()).into_owned(),
    }
}

/// The most LISTs and metadata reads one look for earlier layouts sends on a mount.
pub const SCAN_BUDGET: usize = 5_000;

/// A marked secret's names, as its custom_metadata gives them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Mark {
    spec: String,
    env: Option<String>,
    secret: Option<String>,
}

/// What one look over a mount found: the secrets vault-seed marked that no spec names at their
/// path now, and what could not be looked at.
#[derive(Debug, Default)]
pub struct Earlier {
    marked: Vec<(Mark, String)>,
    /// Why part of the mount could not be looked at (a LIST denied, the budget reached).
    pub unsure: Option<String>,
}

impl Earlier {
    /// Look under the roots of `wanted` on `mount` for marked secrets where a looked-for secret
    /// may have been ([`Wanted::may_be`]): one read each (the data read carries the
    /// custom_metadata, and the seeder policy grants it where it grants the LIST).
    async fn scan(vault: &Vault, mount: &KvMount, wanted: &Wanted, concurrency: usize) -> Earlier {
        let mut budget = SCAN_BUDGET;
        let mut lists = 0;
        let w = walk(
            vault,
            mount,
            &wanted.roots,
            &|_| false,
            &mut budget,
            concurrency,
            &mut lists,
        )
        .await;
        let mut out = Earlier::default();
        if let Some((folder, why)) = w.failed.first() {
            out.unsure = Some(format!("folder `{}/{}`: {why}", mount.path, cap(folder)));
        } else if w.cut {
            out.unsure = Some(format!(
                "mount `{}` holds more than {SCAN_BUDGET} folders",
                mount.path
            ));
        }
        let mut paths: Vec<String> = w
            .leaves
            .into_iter()
            .map(|(_, p)| p)
            .filter(|p| wanted.may_be(p))
            .collect();
        if paths.len() > budget {
            paths.truncate(budget);
            out.unsure.get_or_insert_with(|| {
                format!("mount `{}` holds more than {SCAN_BUDGET} paths", mount.path)
            });
        }
        let mut answers = stream::iter(paths)
            .map(|p| async move {
                let r = vault.kv_read(mount, &p).await;
                (p, r)
            })
            .buffer_unordered(concurrency.max(1));
        while let Some((path, r)) = answers.next().await {
            match r {
                // Only a live secret can be moved; a deleted one's data is gone.
                Ok(Existing::Present(p)) => {
                    let meta = p.custom_metadata;
                    let get = |k: &str| meta.get(k).cloned();
                    if get("managed-by").as_deref() != Some("vault-seed")
                        || meta.contains_key("vault-seed/moved-to")
                    {
                        continue;
                    }
                    let Some(spec) = get("vault-seed/spec") else {
                        continue;
                    };
                    let mark = Mark {
                        spec,
                        env: get("vault-seed/env"),
                        secret: get("vault-seed/secret"),
                    };
                    out.marked.push((mark, path));
                }
                Ok(_) => {}
                Err(e) => {
                    out.unsure.get_or_insert_with(|| {
                        format!("path `{}/{}`: {}", mount.path, cap(&path), why(&e))
                    });
                }
            }
        }
        out.marked.sort_by(|a, b| a.1.cmp(&b.1));
        out
    }

    /// The path under the mount of a secret vault-seed made for `t`'s spec, environment and
    /// name, elsewhere. A mark from before the environment and secret were recorded matches by
    /// the spec, the path's last segment (the secret's name) and a segment that is the
    /// environment.
    pub fn of(&self, t: &Target) -> Option<&str> {
        let spec = t.spec_file().file_name()?.to_string_lossy();
        self.marked
            .iter()
            .find(|(m, path)| {
                m.spec == spec
                    && match (&m.env, &m.secret) {
                        (Some(env), Some(secret)) => env == t.env() && **secret == *t.name,
                        _ => {
                            path.rsplit('/').next() == Some(&*t.name)
                                && path.split('/').any(|s| s == t.env())
                        }
                    }
            })
            .map(|(_, p)| p.as_str())
    }
}

/// Whether a layout change could make vault-seed mint a second value of `t` that data depends
/// on: a secret with a fixed field. Only those are looked for: any other is made again safely
/// (the old path stays, and `audit` lists it).
pub fn looked_for(t: &Target) -> bool {
    t.provided.is_none() && t.fields.iter().any(|f| t.is_fixed(f))
}

/// One look per mount, made the first time a run asks about a fixed secret of that mount that is
/// absent, and shared by every later question of the run.
pub struct Looks {
    wanted: HashMap<String, Wanted>,
    done: HashMap<String, tokio::sync::OnceCell<Earlier>>,
    concurrency: usize,
}

/// What a look over one mount walks, skips and reads.
#[derive(Default)]
struct Wanted {
    /// The folders walked: each looked-for secret's folder above its environment's segment
    /// (`ask/core-service` of `ask/core-service/auh1-dev`; the folder itself without one), so
    /// a token with the seeder policy, which lists the specs' folders, may look.
    roots: Vec<String>,
    /// The paths the run's targets have now (never an earlier layout).
    named: HashSet<String>,
    /// Each looked-for secret's name, with its folder and environment.
    secrets: HashMap<String, Vec<(String, String)>>,
}

impl Wanted {
    /// Whether the leaf at `path` may be where a looked-for secret was: its last segment is the
    /// secret's name, and it is not the path the same layout gives another environment (the
    /// folder with the environment's segment changed), which is that environment's own secret.
    fn may_be(&self, path: &str) -> bool {
        if self.named.contains(path) {
            return false;
        }
        let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
        let Some(found) = self.secrets.get(name) else {
            return false;
        };
        found.iter().any(|(ours, env)| {
            let (a, b): (Vec<&str>, Vec<&str>) =
                (folder.split('/').collect(), ours.split('/').collect());
            let other_env =
                a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x == y || *y == env.as_str());
            !other_env
        })
    }
}

impl Looks {
    /// For the run's `targets`.
    pub fn new(targets: &[Target], concurrency: usize) -> Looks {
        let mut wanted: HashMap<String, Wanted> = HashMap::new();
        // Each mount's roots as a set too: a platform has one per application.
        let mut roots: HashMap<String, HashSet<String>> = HashMap::new();
        for t in targets {
            let w = wanted.entry(t.mount().to_string()).or_default();
            w.named.insert(t.path.to_string());
            if looked_for(t) {
                let folder = t.path.rsplit_once('/').map_or("", |(f, _)| f);
                let root: Vec<&str> = folder.split('/').take_while(|s| *s != t.env()).collect();
                let root = root.join("/");
                if roots
                    .entry(t.mount().to_string())
                    .or_default()
                    .insert(root.clone())
                {
                    w.roots.push(root);
                }
                w.secrets
                    .entry(t.name.to_string())
                    .or_default()
                    .push((folder.to_string(), t.env().to_string()));
            }
        }
        wanted.retain(|_, w| !w.secrets.is_empty());
        for (mount, w) in wanted.iter_mut() {
            // A root under another (a folder above it, or the mount's top) is walked with it.
            let Some(all) = roots.get(mount) else {
                continue;
            };
            w.roots.retain(|r| {
                let top = !r.is_empty() && all.contains("");
                let above = r.match_indices('/').any(|(i, _)| all.contains(&r[..i]));
                !top && !above
            });
        }
        let done = wanted
            .keys()
            .map(|m| (m.clone(), tokio::sync::OnceCell::new()))
            .collect();
        Looks {
            wanted,
            done,
            concurrency,
        }
    }

    /// What the look over `t`'s mount found, made now if it is the first question about it;
    /// `None` for a secret that is not looked for ([`looked_for`]).
    pub async fn on(&self, vault: &Vault, mount: &KvMount, t: &Target) -> Option<&Earlier> {
        if !looked_for(t) {
            return None;
        }
        let cell = self.done.get(&mount.path)?;
        let wanted = self.wanted.get(&mount.path)?;
        Some(
            cell.get_or_init(|| Earlier::scan(vault, mount, wanted, self.concurrency))
                .await,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metadata read only where a fixed secret may have been: its name last, and not the path
    /// the same layout gives another environment (that environment's own secret).
    #[test]
    fn only_paths_that_may_be_an_earlier_layout_are_read() {
        let mut w = Wanted::default();
        w.named.insert("ask/zk".into());
        w.secrets
            .insert("zk".into(), vec![("ask".into(), "auh1-dev".into())]);
        assert!(w.may_be("ask/auh1-dev/zk"), "the old layout");
        assert!(w.may_be("old/zk"));
        assert!(!w.may_be("ask/zk"), "its own path");
        assert!(!w.may_be("ask/auh1-dev/other"), "another name");
        let mut w = Wanted::default();
        w.secrets
            .insert("zk".into(), vec![("app/dev2".into(), "dev2".into())]);
        assert!(!w.may_be("app/dev/zk"), "another environment's path");
        assert!(w.may_be("app/zk"));
    }

    /// Each root once, and a root under another walked with it, not on its own.
    #[test]
    fn a_root_is_walked_once_and_one_under_another_with_it() {
        let fixed = |folder: &str, name: &str| {
            let mut t = crate::write::replace::tests::target(folder, name, &["password"]);
            t.fixed = true;
            t
        };
        let targets = [
            fixed("app", "a"),
            fixed("app", "b"),
            fixed("app/dev/inner", "c"),
            fixed("other", "d"),
            fixed("application", "e"),
        ];
        let looks = Looks::new(&targets, 1);
        let roots = &looks.wanted["secret"].roots;
        assert_eq!(roots, &["app/dev", "other/dev", "application/dev"]);
    }
}
