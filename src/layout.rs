//! Where a secret was before the layout changed. vault-seed marks each secret it writes with
//! the spec, environment and secret name ([`crate::gate::custom_metadata`]), so a marked secret
//! of the same spec, environment and name at another path of the mount is the same secret, left
//! behind by a change of the specs' folders. `plan` and `apply` look for it when a secret is
//! absent: a fixed one is then never made anew (its value would be a second key the data was
//! never encrypted with), and `vault-seed move` copies the old one over. `audit` walks mounts
//! with the same [`walk`].

use std::collections::{HashMap, HashSet};

use futures::stream::{self, StreamExt};

use crate::kv::KvMount;
use crate::spec::Target;
use crate::text::cap;
use crate::vault::{Vault, VaultError};

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

/// LIST `roots` and every folder below them (not those in `skip`), breadth first, at most
/// `budget` LISTs (taken from it), counting each in `lists`.
pub async fn walk(
    vault: &Vault,
    mount: &KvMount,
    roots: &[String],
    skip: &HashSet<&str>,
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
                                if !skip.contains(sub.as_str()) {
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
    /// Look over `mount` (from its root) for marked secrets at paths not in `named` (the paths
    /// the specs give the mount's secrets now).
    pub async fn scan(
        vault: &Vault,
        mount: &KvMount,
        named: &HashSet<String>,
        concurrency: usize,
    ) -> Earlier {
        let mut budget = SCAN_BUDGET;
        let mut lists = 0;
        let w = walk(
            vault,
            mount,
            &[String::new()],
            &HashSet::new(),
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
            .filter(|p| !named.contains(p))
            .collect();
        if paths.len() > budget {
            paths.truncate(budget);
            out.unsure.get_or_insert_with(|| {
                format!("mount `{}` holds more than {SCAN_BUDGET} paths", mount.path)
            });
        }
        let mut answers = stream::iter(paths)
            .map(|p| async move {
                let r = vault.kv_read_custom_metadata(mount, &p).await;
                (p, r)
            })
            .buffer_unordered(concurrency.max(1));
        while let Some((path, r)) = answers.next().await {
            match r {
                Ok(Some(meta)) => {
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
                Ok(None) => {}
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

/// One look per mount, made the first time a run asks about a secret of that mount and shared
/// by every later question of the run.
pub struct Looks {
    named: HashMap<String, HashSet<String>>,
    done: HashMap<String, tokio::sync::OnceCell<Earlier>>,
    concurrency: usize,
}

impl Looks {
    /// For the run's `targets` (what they name is not looked at).
    pub fn new(targets: &[Target], concurrency: usize) -> Looks {
        let mut named: HashMap<String, HashSet<String>> = HashMap::new();
        for t in targets {
            named
                .entry(t.mount().to_string())
                .or_default()
                .insert(t.path.to_string());
        }
        let done = named
            .keys()
            .map(|m| (m.clone(), tokio::sync::OnceCell::new()))
            .collect();
        Looks {
            named,
            done,
            concurrency,
        }
    }

    /// What the look over `mount` found (made now if it is the first question about it).
    pub async fn on(&self, vault: &Vault, mount: &KvMount) -> Option<&Earlier> {
        let cell = self.done.get(&mount.path)?;
        let named = self.named.get(&mount.path)?;
        Some(
            cell.get_or_init(|| Earlier::scan(vault, mount, named, self.concurrency))
                .await,
        )
    }
}
