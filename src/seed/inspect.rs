//! Read and judge, never write: what is in Vault for each target, as `verify` reports it.
//!
//! The same discovery (one `LIST` per folder) and the same judgement of a live value as the
//! engine's, with no write anywhere on the path: a target absent, deleted or missing a field is
//! reported so, not planned for.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::{self, StreamExt};
use serde::Serialize;

use super::{discover, judge, known_absent, Outcome, PathResult};
use crate::kv::KvMount;
use crate::mounts::Mounts;
use crate::spec::Target;
use crate::vault::{Existing, FieldValue, Vault};

/// What is in Vault for one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Present and in its generator's format.
    Valid,
    /// A placeholder still holding its marker.
    Pending,
    /// Not there: the path is absent, or the secret lacks the field.
    Missing,
    /// The latest version was soft-deleted or destroyed.
    Deleted,
    /// Present but not in its generator's format.
    Invalid,
    /// The token may not read it (HTTP 403).
    Denied,
    /// Anything else that failed, or a mount that cannot be used.
    Error,
    /// Not looked at: Vault stopped answering.
    Skipped,
}

impl Status {
    /// The word for reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Valid => "valid",
            Status::Pending => "pending",
            Status::Missing => "missing",
            Status::Deleted => "deleted",
            Status::Invalid => "invalid",
            Status::Denied => "denied",
            Status::Error => "error",
            Status::Skipped => "skipped",
        }
    }

    /// Whether the field is as the bootstrap wants it: valid, or a placeholder not yet filled
    /// in unless `strict`.
    pub fn is_done(self, strict: bool) -> bool {
        self == Status::Valid || (self == Status::Pending && !strict)
    }

    fn of(o: Outcome) -> Status {
        match o {
            Outcome::Exists | Outcome::ProvidedPresent => Status::Valid,
            Outcome::Pending => Status::Pending,
            Outcome::Created | Outcome::Extended | Outcome::Missing | Outcome::ProvidedAbsent => {
                Status::Missing
            }
            Outcome::Recreated => Status::Deleted,
            Outcome::Invalid => Status::Invalid,
            Outcome::Denied => Status::Denied,
            Outcome::Error => Status::Error,
            Outcome::Skipped => Status::Skipped,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One field's state.
#[derive(Debug, Clone)]
pub struct FieldState {
    /// The field's name.
    pub field: String,
    /// Its generator (`hex(bytes=32)`).
    pub generator: String,
    /// What is there.
    pub status: Status,
    /// Why, when there is more to say (never a value).
    pub detail: Option<String>,
}

/// One path's state.
#[derive(Debug, Clone)]
pub struct PathState {
    /// The target.
    pub target: Target,
    /// The secret's current version (KV v2), when read.
    pub version: Option<u64>,
    /// Per field.
    pub fields: Vec<FieldState>,
    /// A note about the whole path.
    pub detail: Option<String>,
    /// When the current version was created (RFC 3339), when read.
    pub created_time: Option<String>,
}

impl PathState {
    pub(super) fn from(r: PathResult) -> PathState {
        PathState {
            fields: r
                .fields
                .into_iter()
                .map(|f| FieldState {
                    field: f.field,
                    generator: f.generator,
                    status: Status::of(f.outcome),
                    detail: f.detail,
                })
                .collect(),
            target: r.target,
            version: r.version,
            detail: r.detail,
            created_time: r.created_time,
        }
    }
}

/// One field's state as [`inspect`] keeps it: its name and generator are its target's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFound {
    /// What is there.
    pub status: Status,
    /// Why, when there is more to say (never a value).
    pub detail: Option<Box<str>>,
}

/// One path's state as [`inspect`] keeps it: its target by index, and only what the report
/// says of it (a run holds one per path to its end; a copy of the target and of each field's
/// name and generator per path was the largest part of the values' memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its target: an index into the targets given to [`inspect`].
    pub target: usize,
    /// The secret's current version (KV v2), when read.
    pub version: Option<u64>,
    /// When the current version was created (RFC 3339, as Vault wrote it), when read.
    pub created_time: Option<Box<str>>,
    /// A note about the whole path.
    pub detail: Option<Box<str>>,
    /// One per field of the target, in the target's order.
    pub fields: Box<[FieldFound]>,
}

impl Found {
    /// `r`, the result for the target at `target`, kept compact.
    fn of(target: usize, r: PathResult) -> Found {
        Found {
            target,
            version: r.version,
            created_time: r.created_time.map(String::into_boxed_str),
            detail: r.detail.map(String::into_boxed_str),
            fields: r
                .fields
                .into_iter()
                .map(|f| FieldFound {
                    status: Status::of(f.outcome),
                    detail: f.detail.map(String::into_boxed_str),
                })
                .collect(),
        }
    }
}

/// What [`inspect`] found.
#[derive(Debug)]
pub struct Inspection {
    /// One state per target, in spec order; a target on a mount that cannot be used after the
    /// others.
    pub paths: Vec<Found>,
    /// Things that are not about one path (a `list` fallback, Vault gone part way).
    pub notes: Vec<String>,
}

/// Read every target and judge what is there; write nothing. Targets on a mount `mounts` cannot
/// use are reported as errors, with why. Each result is kept compact ([`Found`]) as it comes in.
pub async fn inspect(
    vault: &Vault,
    mounts: &Mounts,
    targets: &[Target],
    concurrency: usize,
) -> Inspection {
    // By index: a copy of every target (as `Mounts::partition` makes) is not needed here.
    let (ready, failed): (Vec<usize>, Vec<usize>) =
        (0..targets.len()).partition(|&i| mounts.mounts.contains_key(&*targets[i].mount));
    let mut notes = Vec::new();
    // A target on a mount that cannot be used gets no LIST either way (`discover` lists only
    // on mounts it has).
    let listings = discover(vault, &mounts.mounts, targets, concurrency, &mut notes).await;
    // What the reads need of the listings is one bit per path: the listings (every folder's
    // names, 16,667 folders at 100,000 paths) are dropped before the reads start.
    let absent: Vec<bool> = ready
        .iter()
        .map(|&i| known_absent(&listings, &targets[i]))
        .collect();
    drop(listings);
    let vault_down = AtomicBool::new(false);
    let mut paths: Vec<Found> = Vec::with_capacity(targets.len());
    stream::iter(ready.into_iter().zip(absent))
        .map(|(i, known_absent)| {
            let vault_down = &vault_down;
            let t = &targets[i];
            async move {
                let r = if vault_down.load(Ordering::SeqCst) {
                    PathResult::all(
                        t,
                        Outcome::Skipped,
                        None,
                        Some("not attempted: Vault stopped answering".into()),
                    )
                } else {
                    let r = read_one(vault, mounts, t, known_absent).await;
                    if r.vault_unavailable {
                        vault_down.store(true, Ordering::SeqCst);
                    }
                    r
                };
                Found::of(i, r)
            }
        })
        .buffer_unordered(concurrency.max(1))
        .for_each(|found| {
            paths.push(found);
            futures::future::ready(())
        })
        .await;
    paths.sort_unstable_by_key(|p| p.target);
    if vault_down.load(Ordering::SeqCst) {
        notes.push("Vault stopped answering part way: the paths not read are marked `skipped`; run the same command again when it is back".into());
    }
    for i in failed {
        let t = &targets[i];
        let why = mounts.errors.get(&*t.mount).cloned().unwrap_or_default();
        paths.push(Found::of(
            i,
            PathResult::all(t, Outcome::Error, None, Some(why)),
        ));
    }
    Inspection { paths, notes }
}

/// One target, read and judged: absent without a request when its folder's LIST lacks it.
async fn read_one(vault: &Vault, mounts: &Mounts, t: &Target, known_absent: bool) -> PathResult {
    let Some(mount) = mounts.mounts.get(&*t.mount) else {
        return PathResult::all(
            t,
            Outcome::Error,
            None,
            Some(format!("mount `{}` was not checked", t.mount)),
        );
    };
    tracing::debug!(path = %t.full_path(), known_absent, "deciding");
    read_known(vault, mount, t, known_absent).await
}

/// One target on its (usable) mount, read and judged: absent without a request when its
/// folder's LIST lacks it (the engine's pipeline, for provided paths).
pub(super) async fn read_known(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
    known_absent: bool,
) -> PathResult {
    if known_absent {
        return judged(t, Existing::Absent);
    }
    match vault.kv_read(mount, &t.path).await {
        Ok(e) => judged(t, e),
        Err(e) => PathResult::from_error(t, &e, false),
    }
}

/// What is at `t`'s path, judged.
fn judged(t: &Target, existing: Existing) -> PathResult {
    match existing {
        Existing::Absent => PathResult::all(t, Outcome::Missing, None, None),
        Existing::Deleted { .. } => PathResult::all(t, Outcome::Recreated, None, None),
        Existing::Present(p) => {
            let mut r = judge(t, &p);
            // A missing field that `apply` could not add either: an existing field is not a
            // string.
            if let Some((k, kind)) = p.fields.iter().find_map(|(k, v)| match v {
                FieldValue::NotText(kind) => Some((k, *kind)),
                FieldValue::Text(_) => None,
            }) {
                for f in r
                    .fields
                    .iter_mut()
                    .filter(|f| f.outcome == Outcome::Missing)
                {
                    f.outcome = Outcome::Error;
                    f.detail = Some(format!("cannot add the field: existing field `{k}` is {kind}, and vault-seed writes strings only"));
                }
            }
            r
        }
    }
}
