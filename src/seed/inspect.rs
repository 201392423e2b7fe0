//! Read and judge, never write: what is in Vault for each target, as `verify` reports it.
//!
//! The same discovery (one `LIST` per folder) and the same judgement of a live value as the
//! engine's, with no write anywhere on the path: a target absent, deleted or missing a field is
//! reported so, not planned for.

use std::borrow::Cow;
use std::fmt;
use std::num::{NonZeroU32, NonZeroU64};
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::{self, StreamExt};
use indexmap::IndexSet;
use serde::Serialize;

use super::notes::SeedNote;
use super::{discover, judge, Outcome, PathResult, Unnamed};
use crate::base::kv::KvMount;
use crate::spec::mounts::Mounts;
use crate::spec::Target;
use crate::vault::{Existing, Vault};

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
    /// Every status, in `Status::index` order.
    pub const ALL: [Status; 8] = [
        Status::Valid,
        Status::Pending,
        Status::Missing,
        Status::Deleted,
        Status::Invalid,
        Status::Denied,
        Status::Error,
        Status::Skipped,
    ];

    /// Its place in [`Status::ALL`].
    fn index(self) -> usize {
        self as usize
    }

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

/// A detail's text in its inspection: an index into the texts it holds once each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detail(NonZeroU32);

/// One field's state as [`inspect`] keeps it: its name and generator are its target's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldFound {
    /// What is there.
    pub status: Status,
    /// Why, when there is more to say (never a value): [`Inspection::detail`].
    pub detail: Option<Detail>,
}

/// One path's state as [`inspect`] keeps it: its target by index, and only what the report
/// says of it (a run holds one per path to its end). Its fields and details are in its
/// [`Inspection`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its target: an index into the targets given to [`inspect`].
    target: u32,
    /// A note about the whole path: [`Inspection::detail`].
    pub detail: Option<Detail>,
    /// Its fields: where they start in its inspection's, and how many (its target's).
    fields: (u32, u32),
    /// The secret's current version (KV v2), when read (a KV version starts at 1: 0 is none).
    version: Option<NonZeroU64>,
    /// When the current version was created, when read: the server's text byte for byte, not
    /// parsed (its bytes are what the report prints).
    created_time: Option<Box<str>>,
}

impl Found {
    /// Its target: an index into the targets given to [`inspect`].
    pub fn target(&self) -> usize {
        self.target as usize
    }

    /// The secret's current version (KV v2), when read.
    pub fn version(&self) -> Option<u64> {
        self.version.map(NonZeroU64::get)
    }
}

/// What [`inspect`] found: a state per path, and each field counted.
#[derive(Debug)]
pub struct Inspection {
    /// One state per path, in spec order; a target on a mount that cannot be used after
    /// the others.
    pub paths: Vec<Found>,
    /// Things that are not about one path (a `list` fallback, Vault gone part way).
    pub notes: Vec<SeedNote>,
    /// Every path's fields, each path's together ([`Found::fields`]).
    fields: Vec<FieldFound>,
    /// The details, each text once ([`Detail`] is an index here): 100,000 paths "present, not
    /// marked" hold one copy.
    details: IndexSet<Box<str>>,
    /// Fields per status, over every path, by [`Status::index`].
    counts: [usize; Status::ALL.len()],
    /// The secrets holding fields no spec names, for a note.
    unnamed: Unnamed,
}

impl Inspection {
    /// Nothing yet. `paths` and `fields` are the number of paths and fields that will come in
    /// (their room is taken once).
    pub fn new(paths: usize, fields: usize) -> Inspection {
        Inspection {
            paths: Vec::with_capacity(paths),
            notes: Vec::new(),
            fields: Vec::with_capacity(fields),
            details: IndexSet::new(),
            counts: [0; Status::ALL.len()],
            unnamed: Unnamed::default(),
        }
    }

    /// The result `r` for the target at `target`: its fields counted, and its state kept.
    pub fn add(&mut self, target: usize, r: PathResult) {
        self.unnamed.add(&r);
        for f in &r.fields {
            self.counts[Status::of(f.outcome).index()] += 1;
        }
        let start = self.fields.len();
        for f in r.fields {
            let detail = self.intern(f.detail);
            self.fields.push(FieldFound {
                status: Status::of(f.outcome),
                detail,
            });
        }
        let count = self.fields.len() - start;
        let found = Found {
            target: index(target),
            detail: self.intern(r.detail),
            fields: (index(start), index(count)),
            version: r.version.and_then(NonZeroU64::new),
            created_time: r.created_time.map(String::into_boxed_str),
        };
        self.paths.push(found);
    }

    /// The result `r` for the target at `target` in place of the one added before (its fields'
    /// counts moved; the note about unnamed fields stays the first read's).
    pub fn replace(&mut self, target: usize, r: PathResult) {
        // The paths are in target order but for those on a mount that cannot be used, put
        // after them: a search, else a scan.
        let key = index(target);
        let found = match self.paths.binary_search_by_key(&key, |p| p.target) {
            Ok(at) => Some(at),
            Err(_) => self.paths.iter().position(|p| p.target == key),
        };
        let Some(at) = found else {
            return;
        };
        let (start, count) = (
            self.paths[at].fields.0 as usize,
            self.paths[at].fields.1 as usize,
        );
        for f in &self.fields[start..start + count] {
            self.counts[f.status.index()] -= 1;
        }
        let unnamed = std::mem::take(&mut self.unnamed);
        self.add(target, r);
        self.unnamed = unnamed;
        if let Some(found) = self.paths.pop() {
            self.paths[at] = found;
        }
    }

    /// Every path added: the lists at their length.
    fn finish(&mut self) {
        self.notes.extend(self.unnamed.note());
        self.details.shrink_to_fit();
        self.fields.shrink_to_fit();
        self.paths.shrink_to_fit();
    }

    /// `text`, held once.
    fn intern(&mut self, text: Option<String>) -> Option<Detail> {
        let (i, _) = self.details.insert_full(text?.into_boxed_str());
        Some(Detail(NonZeroU32::MIN.saturating_add(index(i))))
    }

    /// `p`'s `created_time`, byte for byte as the server wrote it, when read.
    pub fn created_time<'a>(&'a self, p: &'a Found) -> Option<Cow<'a, str>> {
        p.created_time.as_deref().map(Cow::Borrowed)
    }

    /// `p`'s fields, in its target's order.
    pub fn fields(&self, p: &Found) -> &[FieldFound] {
        let (start, count) = (p.fields.0 as usize, p.fields.1 as usize);
        &self.fields[start..start + count]
    }

    /// A detail's text.
    pub fn detail(&self, d: Option<Detail>) -> Option<&str> {
        d.map(|d| &*self.details[d.0.get() as usize - 1])
    }

    /// How many fields, over every path, are `status`.
    pub fn count(&self, status: Status) -> usize {
        self.counts[status.index()]
    }
}

/// `i` as a `u32`: a run never has 4 billion paths or fields (each path costs more than a byte),
/// so one that did could not be held anyway.
fn index(i: usize) -> u32 {
    u32::try_from(i).expect("fewer than 2^32 paths and fields")
}

/// Told what each target's read found (its index in the targets, and what is there), before it
/// is judged: `verify` compares the cluster's copies with these reads.
pub type Seen<'a> = dyn Fn(usize, &Existing) + Sync + 'a;

/// Read every target and judge what is there; write nothing. Targets on a mount `mounts` cannot
/// use are reported as errors, with why. Each result is kept ([`Found`]) as it comes in.
pub async fn inspect(
    vault: &Vault,
    mounts: &Mounts,
    targets: &[Target],
    concurrency: usize,
    seen: Option<&Seen<'_>>,
) -> Inspection {
    let usable = |t: &Target| mounts.mounts.contains_key(t.mount());
    let mut notes = Vec::new();
    // One bit per path, whether its folder's LIST lacks it (no folder's names are held); a
    // target on a mount that cannot be used gets no LIST (`discover` lists only on mounts it has).
    let absent = discover(vault, &mounts.mounts, targets, concurrency, &mut notes).await;
    let fields = targets.iter().map(|t| t.fields.len()).sum();
    let mut inspection = Inspection::new(targets.len(), fields);
    inspection.notes = notes;
    let vault_down = AtomicBool::new(false);
    let looks = crate::seed::layout::Looks::new(targets, concurrency);
    // By index: a copy of every target (as `Mounts::partition` makes) is not needed here.
    stream::iter((0..targets.len()).filter(|&i| usable(&targets[i])))
        .map(|i| {
            let (vault_down, looks) = (&vault_down, &looks);
            let (t, known_absent) = (&targets[i], absent[i]);
            async move {
                let r = if vault_down.load(Ordering::SeqCst) {
                    PathResult::all(
                        t,
                        Outcome::Skipped,
                        None,
                        Some("not attempted: Vault stopped answering".into()),
                    )
                } else {
                    let seen = seen.map(|f| move |e: &Existing| f(i, e));
                    let seen = seen.as_ref().map(|f| f as &(dyn Fn(&Existing) + Sync));
                    let r = read_one(vault, mounts, t, known_absent, looks, seen).await;
                    if r.vault_unavailable {
                        vault_down.store(true, Ordering::SeqCst);
                    }
                    r
                };
                (i, r)
            }
        })
        .buffer_unordered(concurrency.max(1))
        .for_each(|(i, r)| {
            inspection.add(i, r);
            futures::future::ready(())
        })
        .await;
    inspection.paths.sort_unstable_by_key(|p| p.target);
    if vault_down.load(Ordering::SeqCst) {
        inspection
            .notes
            .push(SeedNote::VaultStopped { reading: true });
    }
    for (i, t) in targets.iter().enumerate().filter(|(_, t)| !usable(t)) {
        let why = mounts.errors.get(t.mount()).cloned().unwrap_or_default();
        inspection.add(i, PathResult::all(t, Outcome::Error, None, Some(why)));
    }
    inspection.finish();
    inspection
}

/// Read again the targets of `inspection` (made by [`inspect`] over `targets`) whose fields are
/// not all valid, and put what is found in place of what it held of them: `verify --wait`
/// judges a path written while it waits. Valid ones are not read again.
pub async fn reinspect(
    vault: &Vault,
    mounts: &Mounts,
    targets: &[Target],
    concurrency: usize,
    inspection: &mut Inspection,
) {
    let again: Vec<usize> = inspection
        .paths
        .iter()
        .filter(|p| mounts.mounts.contains_key(targets[p.target()].mount()))
        .filter(|p| {
            inspection
                .fields(p)
                .iter()
                .any(|f| f.status != Status::Valid)
        })
        .map(Found::target)
        .collect();
    if again.is_empty() {
        return;
    }
    let looks = crate::seed::layout::Looks::new(targets, concurrency);
    let found: Vec<(usize, PathResult)> = stream::iter(again)
        .map(|i| {
            let looks = &looks;
            async move {
                let r = read_one(vault, mounts, &targets[i], false, looks, None).await;
                (i, r)
            }
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    for (i, r) in found {
        inspection.replace(i, r);
    }
}

/// One target, read and judged: absent without a request when its folder's LIST lacks it. An
/// absent one says where a secret vault-seed made for it is, when the layout changed
/// ([`crate::seed::layout`]).
async fn read_one(
    vault: &Vault,
    mounts: &Mounts,
    t: &Target,
    known_absent: bool,
    looks: &crate::seed::layout::Looks,
    seen: Option<&(dyn Fn(&Existing) + Sync)>,
) -> PathResult {
    let Some(mount) = mounts.mounts.get(t.mount()) else {
        return PathResult::all(
            t,
            Outcome::Error,
            None,
            Some(format!("mount `{}` was not checked", t.mount())),
        );
    };
    tracing::debug!(path = %t.full_path(), known_absent, "deciding");
    let outside = match super::derive::source_mounts(t, mounts) {
        Ok(sources) => super::derive::read_sources(vault, &sources).await,
        Err(why) => Err(why),
    };
    let mut r = match outside {
        Ok(outside) => match read_existing(vault, mount, t, known_absent).await {
            Ok(e) => {
                if let Some(seen) = seen {
                    seen(&e);
                }
                judged(t, e, &outside)
            }
            Err(r) => r,
        },
        Err(why) => return PathResult::all(t, Outcome::Error, None, Some(why)),
    };
    let absent = r.fields.iter().all(|f| f.outcome == Outcome::Missing) && r.version.is_none();
    if absent && t.provided.is_none() {
        if let Some(old) = looks.on(vault, mount, t).await.and_then(|e| e.of(t)) {
            let old = format!("{}/{old}", mount.path);
            let why = format!(
                "absent here, and a secret vault-seed made for the same spec, environment and name is at `{old}` (did the specs' folders change?): `vault-seed move {} {} --from {old}` copies it here",
                t.env(),
                t.name
            );
            for f in r.fields.iter_mut() {
                f.detail = Some(why.clone());
            }
        }
    }
    r
}

/// One target on its (usable) mount, read and judged: absent without a request when its
/// folder's LIST lacks it (the engine's pipeline, for provided paths).
pub(super) async fn read_known(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
    known_absent: bool,
    outside: &super::derive::Outside,
) -> PathResult {
    match read_existing(vault, mount, t, known_absent).await {
        Ok(e) => judged(t, e, outside),
        Err(r) => r,
    }
}

/// What is at `t`'s path (absent without a request when `known_absent`), or the result that
/// says the read failed.
async fn read_existing(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
    known_absent: bool,
) -> Result<Existing, PathResult> {
    if known_absent {
        return Ok(Existing::Absent);
    }
    vault
        .kv_read(mount, &t.path)
        .await
        .map_err(|e| PathResult::from_error(t, &e, false))
}

/// What is at `t`'s path, judged.
fn judged(t: &Target, existing: Existing, outside: &super::derive::Outside) -> PathResult {
    match existing {
        Existing::Absent => PathResult::all(t, Outcome::Missing, None, None),
        Existing::Deleted { .. } => PathResult::all(t, Outcome::Recreated, None, None),
        Existing::Present(p) => judge(t, &crate::gate::Held::live(p), outside),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unmarked(t: &Target) -> PathResult {
        let mut r = PathResult::all(
            t,
            Outcome::Exists,
            Some(1),
            Some("present, not marked (no vault-seed custom_metadata)".into()),
        );
        r.created_time = Some("2026-11-30T16:27:41.123456789Z".into());
        r
    }

    /// A detail many paths share ("present, not marked", after `apply --no-metadata`) is held
    /// once, and the room for the paths and fields is taken once, at the start.
    #[test]
    fn a_shared_detail_is_held_once_and_the_room_taken_once() {
        let targets: Vec<Target> = (0..1000)
            .map(|i| crate::write::replace::tests::target(&format!("app{i}"), "A", &["password"]))
            .collect();
        let mut inspection = Inspection::new(targets.len(), targets.len());
        let (paths, fields) = (inspection.paths.as_ptr(), inspection.fields.as_ptr());
        for (i, t) in targets.iter().enumerate() {
            inspection.add(i, unmarked(t));
        }
        inspection.finish();
        assert_eq!(inspection.details.len(), 1, "the shared detail, once");
        assert_eq!(
            (inspection.paths.as_ptr(), inspection.fields.as_ptr()),
            (paths, fields),
            "the room taken once, at the start"
        );
        for p in &inspection.paths {
            assert_eq!(
                inspection.created_time(p).as_deref(),
                Some("2026-11-30T16:27:41.123456789Z")
            );
            assert_eq!(
                inspection.detail(p.detail),
                Some("present, not marked (no vault-seed custom_metadata)")
            );
            assert_eq!(p.version(), Some(1));
        }
        assert_eq!(inspection.count(Status::Valid), 1000);
    }

    /// A path read again takes its own place, whether among those in target order or among
    /// those put after them (on a mount that cannot be used), and the counts follow.
    #[test]
    fn a_path_read_again_replaces_its_own() {
        let t = crate::write::replace::tests::target("app", "A", &["x"]);
        let mut inspection = Inspection::new(5, 5);
        for i in [0, 1, 2, 7, 5] {
            inspection.add(i, PathResult::all(&t, Outcome::Pending, Some(1), None));
        }
        inspection.replace(1, PathResult::all(&t, Outcome::Exists, Some(2), None));
        inspection.replace(5, PathResult::all(&t, Outcome::Exists, Some(2), None));
        inspection.replace(4, PathResult::all(&t, Outcome::Exists, Some(2), None));
        let got: Vec<(usize, Status)> = inspection
            .paths
            .iter()
            .map(|p| (p.target(), inspection.fields(p)[0].status))
            .collect();
        use Status::{Pending, Valid};
        assert_eq!(
            got,
            [
                (0, Pending),
                (1, Valid),
                (2, Pending),
                (7, Pending),
                (5, Valid)
            ]
        );
        assert_eq!((inspection.count(Valid), inspection.count(Pending)), (2, 3));
    }

    /// A `created_time` is the server's text byte for byte, whatever it is (an offset, a longer
    /// fraction, not a time, not ASCII, empty).
    #[test]
    fn a_created_time_is_the_servers_text_byte_for_byte() {
        let t = crate::write::replace::tests::target("app", "A", &["x"]);
        let texts = [
            "2026-11-30T16:27:41.123456789Z",
            "2026-11-30T16:27:41Z",
            "2026-11-30T16:27:41.050Z",
            "",
            "2026-11-30T16:27:41.1234567890Z",
            "2026-11-30T16:27:41.123456789+05:30",
            "2026-11-30T16:27:41.5Zé",
            "not a time at all, from a hostile server\u{1b}[31m",
        ];
        let mut inspection = Inspection::new(texts.len(), texts.len());
        for (i, text) in texts.iter().enumerate() {
            let mut r = PathResult::all(&t, Outcome::Pending, Some(1), None);
            r.created_time = Some((*text).into());
            inspection.add(i, r);
        }
        let got: Vec<_> = inspection
            .paths
            .iter()
            .map(|p| inspection.created_time(p))
            .collect();
        assert_eq!(got, texts.map(|t| Some(Cow::Borrowed(t))));
    }

    /// Each detail reads back as it came; equal texts are held once.
    #[test]
    fn details_are_shared_only_when_their_text_is_equal() {
        let t = crate::write::replace::tests::target("app", "A", &["x", "y"]);
        let mut inspection = Inspection::new(3, 6);
        for (i, d) in ["one", "two", "one"].into_iter().enumerate() {
            let mut r = PathResult::all(&t, Outcome::Invalid, None, Some(format!("path {d}")));
            r.fields[0].detail = Some(d.into());
            r.fields[1].detail = Some("two".into());
            inspection.add(i, r);
        }
        let mut r = PathResult::all(&t, Outcome::Invalid, None, None);
        r.fields[0].detail = Some("three".into());
        inspection.add(3, r);
        let shown: Vec<(Option<&str>, Vec<Option<&str>>)> = inspection
            .paths
            .iter()
            .map(|p| {
                let fields = inspection.fields(p).iter();
                (
                    inspection.detail(p.detail),
                    fields.map(|f| inspection.detail(f.detail)).collect(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (Some("path one"), vec![Some("one"), Some("two")]),
                (Some("path two"), vec![Some("two"), Some("two")]),
                (Some("path one"), vec![Some("one"), Some("two")]),
                (None, vec![Some("three"), None]),
            ]
        );
        assert_eq!(
            inspection.details.len(),
            5,
            "one, two, path one, path two, three"
        );
    }
}
