//! Which mounts a command may use: each mount's engine and KV version as the server reports it
//! (`sys/internal/ui/mounts/<mount>`), compared with what the specs expect, and how far to trust
//! a mount whose type cannot be read. `apply`, `verify`, `set` and `rotate` share these rules.

use std::collections::HashMap;

use crate::base::kv::{KvMount, KvVersion};
use crate::spec::Target;
use crate::vault::{Vault, VaultError};

/// How far a command may trust a mount whose type it cannot read.
#[derive(Debug, Clone, Copy)]
pub enum MountTrust<'a> {
    /// The command only reads: a mount whose type cannot be read is taken at the spec's
    /// `kv_version`.
    Read,
    /// The command writes: only to mounts seen to be KV, or named by the operator for this run
    /// (`--assume-kv-mount`), taken at the spec's `kv_version`.
    Write {
        /// The mounts named by `--assume-kv-mount`.
        assumed: &'a [String],
    },
}

/// Detect each mount's KV version and compare with what the specs expect. Returns the usable
/// mounts; for the others why not; and notes (mounts written on the operator's word).
pub async fn detect(vault: &Vault, targets: &[Target], trust: MountTrust<'_>) -> Mounts {
    let mut wanted: HashMap<String, Option<KvVersion>> = HashMap::new();
    for t in targets {
        let e = wanted
            .entry(t.mount().to_string())
            .or_insert(t.kv_version());
        if e.is_none() {
            *e = t.kv_version();
        }
    }
    let mut out = Mounts::default();
    let mut names: Vec<_> = wanted.into_iter().collect();
    names.sort();
    // Every mount's detection at once (over a network, one round trip for them all); judged in
    // name order, as before.
    let answers = futures::future::join_all(names.iter().map(|(m, _)| vault.mount_info(m))).await;
    for ((mount, expected), answer) in names.into_iter().zip(answers) {
        match answer {
            Ok(Some(info)) if info.path != mount => {
                out.errors.insert(mount.clone(), format!("`{mount}` is not a mount: it is a path under mount `{}/`; nothing was written", info.path));
            }
            Ok(Some(info)) if info.kind != "kv" && info.kind != "generic" => {
                out.errors.insert(
                    mount.clone(),
                    format!(
                        "mount `{mount}` is a `{}` engine, not KV; nothing was written",
                        info.kind
                    ),
                );
            }
            Ok(Some(info)) => match expected {
                Some(v) if v != info.kv_version => {
                    out.errors.insert(mount.clone(), format!("mount `{mount}` is {} but the spec says `kv_version = {}`; nothing was written", info.kv_version, v.number()));
                }
                _ => {
                    out.mounts
                        .insert(mount.clone(), KvMount::new(&mount, info.kv_version));
                }
            },
            Ok(None) => {
                out.errors.insert(mount.clone(), format!("there is no secrets engine mounted at `{mount}/`; enable one (`vault secrets enable -path={mount} kv-v2`) or fix the spec's `[vault] mount`"));
            }
            Err(VaultError::Denied { .. }) => {
                let assumed = match trust {
                    MountTrust::Read => true,
                    MountTrust::Write { assumed } => {
                        assumed.iter().any(|a| a.trim_matches('/') == mount)
                    }
                };
                match (expected, assumed) {
                    (Some(v), true) => {
                        tracing::info!(%mount, "cannot read the mount's configuration; trusting the spec's kv_version");
                        if matches!(trust, MountTrust::Write { .. }) {
                            out.notes.push(AssumedMount {
                                mount: mount.clone(),
                                version: v,
                            });
                        }
                        out.mounts.insert(mount.clone(), KvMount::new(&mount, v));
                    }
                    (None, _) => {
                        out.errors.insert(mount.clone(), format!("cannot detect the KV version of mount `{mount}` (the token may not read `sys/internal/ui/mounts/{mount}`); set `kv_version` in the spec's `[vault]`"));
                    }
                    (Some(v), false) => {
                        out.errors.insert(mount.clone(), format!("cannot read the type of mount `{mount}` (`sys/internal/ui/mounts/{mount}` was denied), so vault-seed cannot tell that it is a KV engine; nothing was written to it. If it is {v}, grant `read` on `sys/internal/ui/mounts/{mount}` or pass `--assume-kv-mount {mount}` for this run"));
                    }
                }
            }
            Err(e) => {
                out.errors.insert(mount.clone(), e.to_string());
            }
        }
    }
    out
}

/// What [`detect`] found.
#[derive(Debug, Default)]
pub struct Mounts {
    /// The usable mounts, by path.
    pub mounts: HashMap<String, KvMount>,
    /// Why each other mount cannot be used.
    pub errors: HashMap<String, String>,
    /// Mounts used on the operator's word.
    pub notes: Vec<AssumedMount>,
}

/// A mount whose type could not be read, used on the operator's word (`--assume-kv-mount`);
/// shown as its note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssumedMount {
    /// The mount's path.
    pub mount: String,
    /// The spec's `kv_version`, which it is taken at.
    pub version: KvVersion,
}

impl std::fmt::Display for AssumedMount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let AssumedMount { mount, version } = self;
        write!(f, "mount `{mount}`: its type could not be read (`sys/internal/ui/mounts/{mount}` was denied); treated as {version} on the operator's word (`--assume-kv-mount {mount}`)")
    }
}

impl Mounts {
    /// The usable mount of `mount`, if it is one.
    pub fn get(&self, mount: &str) -> Option<&KvMount> {
        self.mounts.get(mount)
    }

    /// The KV version the server reported for `mount` (or the operator vouched for).
    pub fn version(&self, mount: &str) -> Option<KvVersion> {
        self.mounts.get(mount).map(|m| m.version)
    }

    /// `targets` split into those on usable mounts, and the others with why their mount cannot
    /// be used.
    pub fn partition(&self, targets: &[Target]) -> (Vec<Target>, Vec<(Target, String)>) {
        let mut ready = Vec::new();
        let mut failed = Vec::new();
        for t in targets {
            if self.mounts.contains_key(t.mount()) {
                ready.push(t.clone());
            } else {
                let why = self.errors.get(t.mount()).cloned().unwrap_or_default();
                failed.push((t.clone(), why));
            }
        }
        (ready, failed)
    }
}
