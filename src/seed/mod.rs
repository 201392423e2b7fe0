//! Seeding: for every target of an environment, create what is absent, never change what exists.
//!
//! The rule, on KV v2: a new path is written with check-and-set `cas=0`, so Vault itself refuses
//! the write if anyone created the path meanwhile. A soft-deleted or destroyed latest version is
//! written again with `cas=<its version>` (*recreated*); a path missing a field the spec added
//! later gets that field with `cas=<current version>` (*extended*), its other fields unchanged.
//! KV v1 has no check-and-set: read-then-write, reported as not race-free.

mod derive;
mod inspect;
pub mod layout;
pub mod notes;
mod outcome;
mod provided;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::LocalBoxFuture;
use futures::stream::{self, FuturesUnordered, StreamExt};
use secrecy::{ExposeSecret, SecretString};

use crate::base::kv::{KvMount, KvVersion};
use crate::gate::{self, Held, Intent, Refusal};
use crate::generate::Validity;
use crate::seed::layout::Looks;
use crate::spec::mounts::Mounts;
use crate::spec::Target;
use crate::vault::{Existing, FieldValue, Vault, VaultError};

use derive::follower_index;
pub use derive::{follow, read_sources, source_mounts, Outside};
pub use inspect::{
    inspect, reinspect, Detail, FieldFound, FieldState, Found, Inspection, PathState, Seen, Status,
};
use notes::SeedNote;
pub use outcome::{FieldResult, Outcome, PathResult, Summary, Unnamed};

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Decide only: read, write nothing (`plan`).
    pub dry_run: bool,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Record vault-seed's custom_metadata on each path written (a second request per path).
    pub metadata: bool,
}

/// What a run found and did besides its results, which went to the sink one at a time ([`run`]).
#[derive(Debug)]
pub struct Run {
    /// Things the user should know that are not about one path.
    pub notes: Vec<SeedNote>,
    /// Whether Ctrl-C stopped the run early.
    pub interrupted: bool,
}

/// Called after each path is done (for a progress bar).
pub type Progress = dyn Fn() + Send + Sync;

/// Where a run's results go, in the report's order ([`run`]).
pub trait Sink {
    /// Take a path's result.
    fn path(&mut self, r: PathResult);
    /// The run is about to wait for Vault: the moment to pass on what was taken (rows written
    /// to a buffer reach stdout, so that a person or a program reading it sees them as the run
    /// goes, not in blocks).
    fn idle(&mut self) {}
}

/// A folder: (mount, path under it).
type FolderKey = (String, String);
/// A LIST's answer: the names, or `None` for an empty folder.
type ListResult = Result<Option<Vec<String>>, VaultError>;

/// What the engine knows of a folder after one LIST.
enum Listing {
    /// The names in the folder.
    Names(HashSet<String>),
    /// LIST was not allowed or failed: read each path instead.
    Unavailable,
}

/// Seed `targets`, handing each path's result to `sink` as soon as it and every result before it
/// in the report's order are in (spec order; paths on mounts that cannot be used after the
/// others, unless the run has provided paths: then all in spec order). Only the results that
/// came in ahead of their turn are held (about the requests in flight), never the run's, so
/// memory does not grow with the paths.
///
/// Once `gate` (the token check and the mount detection, both out at once:
/// [`crate::spec::mounts::detect`]) says where they may be written; a gate that fails (the token was
/// refused, Vault is sealed or gone) is the run's error, and nothing but connections was opened.
/// Targets on a mount the gate's [`Mounts`] cannot use are reported as errors, with why, after
/// the others (with provided paths, in spec order among them, as `provided` always did).
///
/// Nothing but connections is opened before the gate is in: a mount not seen to be KV (nor
/// vouched for, [`crate::spec::mounts::MountTrust`]), or a token not known good, gets no LIST, read or
/// write. Then one pipeline keeps `concurrency` requests in flight to the end: each folder's
/// paths start as soon as its LIST is in, while other folders are still being listed (no LIST
/// phase before the first write, no wait for a whole folder), a path's metadata write follows
/// its data write while other paths go on, and paths another application provides
/// (`provided_by`) are read and judged in the same pipeline, never written (`provided`).
pub async fn run<E>(
    vault: &Vault,
    gate: impl Future<Output = Result<Mounts, E>>,
    targets: &[Target],
    opts: &Options,
    cancel: Arc<AtomicBool>,
    progress: &Progress,
    sink: &mut dyn Sink,
) -> Result<Run, E> {
    let warm = connections_ahead(targets, opts.concurrency);
    pipeline(vault, gate, warm, targets, opts, cancel, progress, sink).await
}

/// The connections to open while the gate (the token check and the mount detection) is out, for
/// the requests after it: as many as those go out at once (the concurrency, or fewer targets),
/// less those the gate's own requests open (the token check's and one per mount detection, all
/// out at the same time). `apply`, `plan` and `verify` open them ([`Vault::warm_connection`]).
pub fn connections_ahead(targets: &[Target], concurrency: usize) -> usize {
    // Inserted one by one: collected, the set would be sized for every target, for the one or
    // two mounts there are.
    let mut mounts: HashSet<&str> = HashSet::new();
    for t in targets {
        mounts.insert(t.mount());
    }
    (concurrency.max(1).min(targets.len())).saturating_sub(1 + mounts.len())
}

/// [`run`]'s engine. `warm`: connections to open while the gate is out (see
/// [`Vault::warm_connection`]).
#[allow(clippy::too_many_arguments)]
async fn pipeline<E>(
    vault: &Vault,
    gate: impl Future<Output = Result<Mounts, E>>,
    warm: usize,
    targets: &[Target],
    opts: &Options,
    cancel: Arc<AtomicBool>,
    progress: &Progress,
    sink: &mut dyn Sink,
) -> Result<Run, E> {
    let conc = opts.concurrency.max(1);
    let meta_warned = AtomicBool::new(false);
    let looks = Looks::new(targets, conc);
    let vault_down = AtomicBool::new(false);
    let contested = AtomicUsize::new(0);
    let followers_of = follower_index(targets);
    let mut gate = std::pin::pin!(gate);
    let mut detected: Option<Mounts> = None;
    let mut running: FuturesUnordered<LocalBoxFuture<'_, Done<'_>>> = FuturesUnordered::new();
    let mut q = Queues::new(targets);
    let ctx = Ctx {
        vault,
        opts,
        targets,
        followers_of: &followers_of,
        cancel: &cancel,
        meta_warned: &meta_warned,
        contested: &contested,
        looks: &looks,
        vault_down: &vault_down,
    };
    // Over a network a new connection costs a round trip (two with TLS) before its first
    // request: open those the requests after the gate will use now, alongside the gate's, rather
    // than after it. (`HEAD sys/health` carries no token and depends on no answer.)
    for _ in 0..warm {
        running.push(Box::pin(async {
            vault.warm_connection().await;
            Done::Warm
        }));
    }
    loop {
        if let Some(d) = detected.as_ref() {
            fill(ctx, &mut q, &mut running, d, sink, progress);
        }
        if running.is_empty() && detected.is_some() {
            break;
        }
        sink.idle();
        tokio::select! {
            // The gate first: its requests go out before the warm-ups'.
            biased;
            d = &mut gate, if detected.is_none() => {
                let d = d?;
                q.order = InOrder::new(targets, &d);
                detected = Some(d);
            }
            Some(done) = running.next() => match done {
                Done::Warm => {}
                Done::Listed(members, r) => {
                    let listing = listing_of(r, &mut q.denied);
                    q.listed(members, listing);
                }
                Done::Path(i, r) => {
                    q.written |= r.written;
                    q.unnamed.add(&r);
                    q.finish(i, *r, sink, progress);
                }
            },
        }
    }
    debug_assert!(q.order.waiting.is_empty(), "every result was handed on");
    debug_assert!(q.parked.is_empty(), "every waiting target was seeded");
    let empty = Mounts::default();
    let state = EndState {
        detected: detected.as_ref().unwrap_or(&empty),
        written: q.written,
        vault_down: vault_down.load(Ordering::SeqCst),
        meta_warned: meta_warned.load(Ordering::SeqCst),
        contested: contested.load(Ordering::SeqCst),
    };
    let notes = closing_notes(state, q.denied, q.unnamed, opts);
    Ok(Run {
        notes,
        interrupted: cancel.load(Ordering::SeqCst),
    })
}

/// Starts work while slots are free: a folder's LIST while fewer paths wait than there are
/// slots, else a path.
fn fill<'a>(
    ctx: Ctx<'a>,
    q: &mut Queues<'a>,
    running: &mut FuturesUnordered<LocalBoxFuture<'a, Done<'a>>>,
    d: &Mounts,
    sink: &mut dyn Sink,
    progress: &Progress,
) {
    let conc = ctx.opts.concurrency.max(1);
    let stop = ctx.cancel.load(Ordering::SeqCst) || ctx.vault_down.load(Ordering::SeqCst);
    while running.len() < conc {
        if q.ready.len() < conc {
            if let Some(f) = q.folders.pop_front() {
                match d.get(&f.key.0) {
                    // Its mount cannot be used, or the run stops: no LIST.
                    Some(m) if !stop => {
                        running.push(Box::pin(list(ctx.vault, m.clone(), f.key, f.members)));
                    }
                    _ => q.listed(f.members, Listing::Unavailable),
                }
                continue;
            }
        }
        let Some((i, t, listing)) = q.ready.pop_front() else {
            break;
        };
        if q.parks(i, t, &listing) {
            continue;
        }
        let (mount, sources) = match turn(t, d, ctx.cancel, ctx.vault_down) {
            Ok(start) => start,
            Err(judged) => {
                q.finish(i, *judged, sink, progress);
                continue;
            }
        };
        let known_absent =
            matches!(&*listing, Listing::Names(names) if !names.contains(parent(&t.path).1));
        let followers = followers(ctx.followers_of, ctx.targets, d, t);
        running.push(start_path(
            ctx,
            i,
            t,
            mount,
            sources,
            known_absent,
            followers,
        ));
    }
}

/// A path's work: a provided path is read, any other seeded.
fn start_path<'a>(
    ctx: Ctx<'a>,
    i: usize,
    t: &'a Target,
    mount: KvMount,
    sources: SourceMounts,
    known_absent: bool,
    followers: Vec<(&'a Target, KvMount)>,
) -> LocalBoxFuture<'a, Done<'a>> {
    Box::pin(async move {
        let r = if t.provided.is_some() {
            provided::read(ctx.vault, &mount, t, known_absent).await
        } else {
            seed_one(&ctx, &mount, t, known_absent, &sources, &followers).await
        };
        // After its retries, a path found Vault gone (unreachable, timing out, sealed): start
        // no more work against it; the report says what was done.
        if r.vault_unavailable {
            ctx.vault_down.store(true, Ordering::SeqCst);
        }
        Done::Path(i, Box::new(r))
    })
}

/// The secrets made from `t`, on mounts that can be used (one that cannot is judged on its own,
/// with its error).
fn followers<'t>(
    followers_of: &HashMap<(&str, &str), Vec<usize>>,
    targets: &'t [Target],
    d: &Mounts,
    t: &Target,
) -> Vec<(&'t Target, KvMount)> {
    followers_of
        .get(&(t.mount(), &*t.path))
        .into_iter()
        .flatten()
        .filter_map(|&j| d.get(targets[j].mount()).map(|m| (&targets[j], m.clone())))
        .collect()
}

/// The sources a target is made from, each with its mount.
type SourceMounts = Vec<(crate::spec::Source, KvMount)>;

/// Where a target whose turn came starts: its mount and its sources' mounts; or, when it cannot
/// start, its result at once.
fn turn(
    t: &Target,
    d: &Mounts,
    cancel: &AtomicBool,
    vault_down: &AtomicBool,
) -> Result<(KvMount, SourceMounts), Box<PathResult>> {
    let error = |why: String| Box::new(PathResult::all(t, Outcome::Error, None, Some(why)));
    let Some(mount) = d.get(t.mount()).cloned() else {
        return Err(error(d.errors.get(t.mount()).cloned().unwrap_or_default()));
    };
    let sources = derive::source_mounts(t, d).map_err(error)?;
    let skipped = if cancel.load(Ordering::SeqCst) {
        "not attempted: interrupted"
    } else if vault_down.load(Ordering::SeqCst) {
        "not attempted: Vault stopped answering"
    } else {
        return Ok((mount, sources));
    };
    Err(Box::new(PathResult::all(
        t,
        Outcome::Skipped,
        None,
        Some(skipped.into()),
    )))
}

/// The run's work in its stages: folders to LIST, paths ready for a slot, paths held back until
/// a target they read from has its result, and results handed on in the report's order.
struct Queues<'t> {
    folders: VecDeque<Folder<'t>>,
    ready: VecDeque<(usize, &'t Target, Rc<Listing>)>,
    waits: derive::Waits,
    parked: HashMap<usize, (&'t Target, Rc<Listing>)>,
    // The report's order, known once the gate says which mounts can be used.
    order: InOrder,
    written: bool,
    denied: Denied,
    unnamed: Unnamed,
}

impl<'t> Queues<'t> {
    fn new(targets: &'t [Target]) -> Self {
        Queues {
            folders: folders(targets),
            ready: VecDeque::new(),
            waits: derive::Waits::new(targets),
            parked: HashMap::new(),
            order: InOrder::default(),
            written: false,
            denied: Denied::default(),
            unnamed: Unnamed::default(),
        }
    }

    /// A folder's paths, ready once it is listed (or is not to be).
    fn listed(&mut self, members: Vec<(usize, &'t Target)>, listing: Listing) {
        let listing = Rc::new(listing);
        self.ready
            .extend(members.into_iter().map(|(i, t)| (i, t, listing.clone())));
    }

    /// Whether path `i` waits for another's result: it is then parked until that is in.
    fn parks(&mut self, i: usize, t: &'t Target, listing: &Rc<Listing>) -> bool {
        let waits = self.waits.waits(i);
        if waits {
            self.parked.insert(i, (t, listing.clone()));
        }
        waits
    }

    /// Target `i`'s result, handed on in order; the targets that waited for it are released.
    fn finish(&mut self, i: usize, r: PathResult, sink: &mut dyn Sink, progress: &Progress) {
        self.order.put(i, r, sink);
        for f in self.waits.done(i) {
            if let Some((t, l)) = self.parked.remove(&f) {
                self.ready.push_back((f, t, l));
            }
        }
        progress();
    }
}

/// What a finished run knows that its closing notes tell.
struct EndState<'a> {
    detected: &'a Mounts,
    written: bool,
    vault_down: bool,
    meta_warned: bool,
    contested: usize,
}

/// The notes under a run's report: mounts, LISTs refused, unnamed paths, and how writes went.
fn closing_notes(
    s: EndState<'_>,
    denied: Denied,
    unnamed: Unnamed,
    opts: &Options,
) -> Vec<SeedNote> {
    let mut notes: Vec<SeedNote> = s
        .detected
        .notes
        .iter()
        .cloned()
        .map(SeedNote::MountAssumed)
        .collect();
    notes.extend(list_denied_note(denied));
    notes.extend(unnamed.note());
    if !opts.metadata && !opts.dry_run && s.written {
        notes.push(SeedNote::NoMetadata);
    }
    if s.vault_down {
        notes.push(SeedNote::VaultStopped { reading: false });
    }
    if s.meta_warned {
        notes.push(SeedNote::MetadataDenied);
    }
    if s.detected
        .mounts
        .values()
        .any(|m| m.version == KvVersion::V1)
        && !opts.dry_run
    {
        notes.push(SeedNote::KvV1NoCas);
    }
    if s.contested > 0 {
        notes.push(SeedNote::KvV1Contested { count: s.contested });
    }
    notes
}

/// Results put in the report's order: each is handed on when every one before it has been.
#[derive(Default)]
struct InOrder {
    /// Each target's place in the report.
    place: Vec<u32>,
    /// The next place to hand on.
    next: u32,
    /// Results that came in ahead of their turn, by place.
    waiting: BTreeMap<u32, PathResult>,
}

impl InOrder {
    /// The report's order of `targets` on the mounts `detected`: spec order, with the targets
    /// whose mount cannot be used after the others; with provided paths, all in spec order.
    fn new(targets: &[Target], detected: &Mounts) -> InOrder {
        let in_spec_order = targets.iter().any(|t| t.provided.is_some());
        let usable = |t: &Target| in_spec_order || detected.get(t.mount()).is_some();
        let mut place = vec![0; targets.len()];
        let mut next = 0;
        for pass in [true, false] {
            for (i, t) in targets.iter().enumerate() {
                if usable(t) == pass {
                    place[i] = next;
                    next += 1;
                }
            }
        }
        InOrder {
            place,
            next: 0,
            waiting: BTreeMap::new(),
        }
    }

    /// Take target `i`'s result; hand on every result whose turn has come.
    fn put(&mut self, i: usize, r: PathResult, sink: &mut dyn Sink) {
        let place = self.place[i];
        if place != self.next {
            self.waiting.insert(place, r);
            return;
        }
        sink.path(r);
        self.next += 1;
        while let Some(r) = self.waiting.remove(&self.next) {
            sink.path(r);
            self.next += 1;
        }
    }
}

/// A folder's targets, with their places in spec order.
struct Folder<'t> {
    key: FolderKey,
    members: Vec<(usize, &'t Target)>,
}

/// The targets grouped by folder, folders in the order of their first target.
fn folders(targets: &[Target]) -> VecDeque<Folder<'_>> {
    let mut index: HashMap<FolderKey, usize> = HashMap::new();
    let mut out: Vec<Folder<'_>> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let key = (t.mount().to_string(), parent(&t.path).0.to_string());
        let at = *index.entry(key.clone()).or_insert_with(|| {
            out.push(Folder {
                key,
                members: Vec::new(),
            });
            out.len() - 1
        });
        out[at].members.push((i, t));
    }
    out.into()
}

/// A folder's LIST; `members` are the paths that wait for it.
async fn list<'t>(
    vault: &Vault,
    mount: KvMount,
    (_, folder): FolderKey,
    members: Vec<(usize, &'t Target)>,
) -> Done<'t> {
    Done::Listed(members, vault.kv_list(&mount, &folder).await)
}

/// A finished piece of the pipeline.
enum Done<'t> {
    /// A connection opened ahead.
    Warm,
    /// A folder's LIST, with the paths that wait for it.
    Listed(Vec<(usize, &'t Target)>, ListResult),
    /// A path's result, with its place in spec order.
    Path(usize, Box<PathResult>),
}

#[derive(Clone, Copy)]
struct Ctx<'a> {
    vault: &'a Vault,
    opts: &'a Options,
    targets: &'a [Target],
    /// The targets made from each `(mount, path)`.
    followers_of: &'a HashMap<(&'a str, &'a str), Vec<usize>>,
    /// Set on an interrupt: no more work starts.
    cancel: &'a AtomicBool,
    meta_warned: &'a AtomicBool,
    /// KV v1 paths another writer wrote at the same time as this run.
    contested: &'a AtomicUsize,
    /// Where absent secrets were before a layout change, looked for once per mount.
    looks: &'a Looks,
    /// Set once a path found Vault gone: no more work starts.
    vault_down: &'a AtomicBool,
}

fn parent(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// The folders whose LIST was denied ([`listing_of`] gathers them): the first few by name and
/// how many, not every one (a token without `list` on a large platform is denied on thousands).
#[derive(Default)]
struct Denied {
    /// The first [`Denied::SHOWN`] by name.
    first: BTreeSet<String>,
    count: usize,
}

impl Denied {
    const SHOWN: usize = 8;

    fn push(&mut self, folder: String) {
        self.count += 1;
        self.first.insert(folder);
        if self.first.len() > Self::SHOWN {
            self.first.pop_last();
        }
    }
}

/// The note for the folders whose LIST was denied, if any: eight by name, then how many more.
fn list_denied_note(denied: Denied) -> Option<SeedNote> {
    if denied.count == 0 {
        return None;
    }
    let shown: Vec<String> = denied.first.into_iter().collect();
    let more = denied.count - shown.len();
    Some(SeedNote::ListDenied { shown, more })
}

/// What a folder's LIST says: its names, or (denied, noted in `denied`; or failed) that each
/// path is read instead.
fn listing_of(r: ListResult, denied: &mut Denied) -> Listing {
    match r {
        Ok(Some(names)) => Listing::Names(names.into_iter().collect()),
        Ok(None) => Listing::Names(HashSet::new()),
        Err(VaultError::Denied { path, .. }) => {
            denied.push(path);
            Listing::Unavailable
        }
        Err(e) => {
            tracing::debug!(error = %e, "LIST failed; reading each path instead");
            Listing::Unavailable
        }
    }
}

/// One LIST per folder of `targets` on a mount of `mounts`, concurrently: for each target,
/// whether its folder was listed and lacks it (then it is absent, known without a request). A
/// denied or failed LIST falls back to reading each path of its folder. Each listing is looked
/// at as it comes and dropped: every folder's names held until all were listed would grow with
/// the paths.
async fn discover(
    vault: &Vault,
    mounts: &HashMap<String, KvMount>,
    targets: &[Target],
    concurrency: usize,
    notes: &mut Vec<SeedNote>,
) -> Vec<bool> {
    let folder = |i: u32| {
        let t = &targets[i as usize];
        (t.mount(), parent(&t.path).0)
    };
    // The targets by folder, as indexes: each folder's run of them is one LIST.
    let mut order: Vec<u32> = (0..targets.len())
        .filter(|&i| mounts.contains_key(targets[i].mount()))
        .map(|i| u32::try_from(i).expect("fewer than 2^32 targets"))
        .collect();
    order.sort_by(|&a, &b| folder(a).cmp(&folder(b)));
    let runs: Vec<&[u32]> = order.chunk_by(|&a, &b| folder(a) == folder(b)).collect();
    tracing::debug!(folders = runs.len(), "listing folders");
    let mut absent = vec![false; targets.len()];
    let mut denied = Denied::default();
    let mut listed = stream::iter(runs)
        .map(|run| async move {
            let (mount, folder) = folder(run[0]);
            let r = match mounts.get(mount) {
                Some(m) => vault.kv_list(m, folder).await,
                None => Ok(None),
            };
            (run, r)
        })
        .buffer_unordered(concurrency.max(1));
    while let Some((run, r)) = listed.next().await {
        if let Listing::Names(names) = listing_of(r, &mut denied) {
            for &i in run {
                let t = &targets[i as usize];
                absent[i as usize] = !names.contains(parent(&t.path).1);
            }
        }
    }
    notes.extend(list_denied_note(denied));
    absent
}

/// One target on its (usable) mount: absent without a request when its folder's listing lacks
/// it, else read; then created, recreated, judged or extended.
async fn seed_one(
    ctx: &Ctx<'_>,
    mount: &KvMount,
    t: &Target,
    known_absent: bool,
    sources: &[(crate::spec::Source, KvMount)],
    followers: &[(&Target, KvMount)],
) -> PathResult {
    tracing::debug!(path = %t.full_path(), known_absent, "deciding");
    let outside = match derive::read_sources(ctx.vault, sources).await {
        Ok(o) => o,
        Err(why) => return PathResult::all(t, Outcome::Error, None, Some(why)),
    };
    let outside = &outside;
    let existing = if known_absent {
        Existing::Absent
    } else {
        match ctx.vault.kv_read(mount, &t.path).await {
            Ok(e) => e,
            Err(e) => return PathResult::from_error(t, &e, false),
        }
    };
    let (version, meta, outcome) = match existing {
        Existing::Present(p) => {
            return judge_or_extend(ctx, mount, t, Held::live(p), outside).await
        }
        Existing::Absent => (0, BTreeMap::new(), Outcome::Created),
        Existing::Deleted {
            version,
            custom_metadata,
        } => (version, custom_metadata, Outcome::Recreated),
    };
    if let Some(refused) = stale_followers(ctx, t, followers).await {
        return refused;
    }
    let note = match moved_from(ctx, mount, t).await {
        Ok(note) => note,
        Err(refused) => return refused,
    };
    let mut r = create(ctx, mount, t, version, meta, outcome, outside).await;
    if let Some(note) = note {
        r.detail = Some(match r.detail.take() {
            Some(d) => format!("{d}; {note}"),
            None => note,
        });
    }
    r
}

/// Before an absent secret is made: another secret holding values made from its old ones (a
/// copy, a template) would disagree with new ones, so none is made ([`gate`] decides). Each
/// follower is read once; it waits for this secret in the run, so it is read as it was.
async fn stale_followers(
    ctx: &Ctx<'_>,
    t: &Target,
    followers: &[(&Target, KvMount)],
) -> Option<PathResult> {
    if followers.is_empty() {
        return None;
    }
    let mut held = Vec::new();
    for (f, m) in followers {
        match ctx.vault.kv_read(m, &f.path).await {
            Ok(e) => held.push((*f, Held::of(e))),
            Err(e) => return Some(PathResult::from_error(t, &e, false)),
        }
    }
    let refused = gate::refuse_stale_followers(t, &held);
    let why: Vec<String> = refused.iter().map(ToString::to_string).collect();
    (!why.is_empty()).then(|| PathResult::all(t, Outcome::Invalid, None, Some(why.join("; "))))
}

/// Before an absent fixed secret is made: was it at another path of the mount before the specs'
/// folders changed ([`crate::seed::layout`])? Found there, it is not made anew (the result to
/// report). A look that could not see the whole mount is said in a note.
async fn moved_from(
    ctx: &Ctx<'_>,
    mount: &KvMount,
    t: &Target,
) -> Result<Option<String>, PathResult> {
    let Some(earlier) = ctx.looks.on(ctx.vault, mount, t).await else {
        return Ok(None);
    };
    let (env, name) = (t.env(), &*t.name);
    match earlier.of(t) {
        Some(old) => {
            let old = format!("{}/{old}", mount.path);
            Err(PathResult::all(
                t,
                Outcome::Invalid,
                None,
                Some(format!(
                    "absent here, and a secret vault-seed made for the same spec, environment and name is at `{old}` (did the specs' folders change?): it is fixed, so a new value is never made beside the old one; `vault-seed move {env} {name} --from {old}` copies it here"
                )),
            ))
        }
        None => Ok(earlier.unsure.as_ref().map(|why| {
            format!("not checked whether it was at another path before a layout change ({why})")
        })),
    }
}

/// Mark the fields that could not be made as missing, each with why.
fn mark_unmade(r: &mut PathResult, unmade: &[(String, String)]) {
    for (name, why) in unmade {
        if let Some(f) = r.fields.iter_mut().find(|f| &f.field == name) {
            f.outcome = Outcome::Missing;
            f.detail = Some(why.clone());
        }
    }
}

/// Write every field of an absent (or deleted) path with `cas=version`; a derived field whose
/// input has no value yet is left out, and said.
#[allow(clippy::too_many_arguments)]
async fn create(
    ctx: &Ctx<'_>,
    mount: &KvMount,
    t: &Target,
    cas: u64,
    old_meta: BTreeMap<String, String>,
    outcome: Outcome,
    outside: &derive::Outside,
) -> PathResult {
    let all: Vec<&crate::spec::Field> = t.fields.iter().collect();
    if ctx.opts.dry_run {
        return PathResult::all(t, outcome, None, None);
    }
    let (values, unmade) = match derive::make(t, &all, &BTreeMap::new(), outside) {
        Ok(v) => v,
        Err(e) => return PathResult::all(t, Outcome::Error, None, Some(e)),
    };
    if values.is_empty() {
        let mut r = PathResult::all(t, Outcome::Missing, None, None);
        mark_unmade(&mut r, &unmade);
        return r;
    }
    let mut r = create_values(ctx, mount, t, cas, old_meta, outcome, outside, values).await;
    if r.written {
        mark_unmade(&mut r, &unmade);
    }
    r
}

/// [`create`]'s write of the values made.
#[allow(clippy::too_many_arguments)]
#[allow(clippy::too_many_lines)] // its steps in the order they run; split when it next changes
async fn create_values(
    ctx: &Ctx<'_>,
    mount: &KvMount,
    t: &Target,
    cas: u64,
    old_meta: BTreeMap<String, String>,
    outcome: Outcome,
    outside: &derive::Outside,
    values: Vec<(String, SecretString)>,
) -> PathResult {
    let held = Held {
        version: cas,
        ..Held::default()
    };
    let approved = match gate::check(t, &held, Intent::Create, values.clone()) {
        Ok(a) => a,
        Err(refused) => {
            return refused_result(PathResult::all(t, Outcome::Missing, None, None), &refused)
        }
    };
    match gate::write(ctx.vault, mount, &approved).await {
        Ok(version) if mount.version == KvVersion::V1 => {
            // No check-and-set on KV v1: another writer may have written between our read and
            // our write, or after it. The path is ours only if it reads back as what we wrote.
            match ctx.vault.kv_read(mount, &t.path).await {
                Ok(Existing::Present(p)) if holds_exactly(&p, &values) => {
                    PathResult::all(t, outcome, Some(version), None).written()
                }
                Ok(Existing::Present(p)) => {
                    ctx.contested.fetch_add(1, Ordering::SeqCst);
                    let mut r = judge(t, &Held::live(p), outside);
                    r.detail = Some(
                        "KV v1: another writer wrote this path at the same time; the value there now is theirs, judged as it stands".into(),
                    );
                    r
                }
                Ok(_) => {
                    ctx.contested.fetch_add(1, Ordering::SeqCst);
                    PathResult::all(
                        t,
                        Outcome::Error,
                        None,
                        Some("KV v1: written, but the path reads back as absent (deleted by another writer?); run again".into()),
                    )
                }
                Err(e) => PathResult::from_error(t, &e, false),
            }
        }
        Ok(version) => {
            write_metadata(ctx, mount, t, old_meta, outcome.verb()).await;
            PathResult::all(t, outcome, Some(version), None).written()
        }
        Err(VaultError::CasMismatch { .. }) => {
            // Someone created it first, or an earlier attempt of ours went through before the
            // connection failed: read it back and judge it like any existing value.
            match ctx.vault.kv_read(mount, &t.path).await {
                Ok(Existing::Present(p)) => {
                    // Only random values prove authorship: a placeholder's marker is the same in
                    // every run, so a secret of placeholders alone is never claimed as ours.
                    let random = |k: &str| {
                        t.fields
                            .iter()
                            .any(|f| f.name == k && !f.generator.is_placeholder())
                    };
                    let ours = values.iter().any(|(k, _)| random(k)) && holds_exactly(&p, &values);
                    if ours {
                        write_metadata(ctx, mount, t, old_meta, outcome.verb()).await;
                        PathResult::all(
                            t,
                            outcome,
                            Some(p.version),
                            Some("confirmed after a retried request".into()),
                        )
                        .written()
                    } else {
                        let mut r = judge(t, &Held::live(p), outside);
                        r.detail =
                            Some("created concurrently by someone else; left as it is".into());
                        r
                    }
                }
                Ok(_) => PathResult::all(
                    t,
                    Outcome::Error,
                    None,
                    Some(
                        "check-and-set refused the write but the path reads as absent; run again"
                            .into(),
                    ),
                ),
                Err(e) => PathResult::from_error(t, &e, false),
            }
        }
        Err(e) => PathResult::from_error(t, &e, true),
    }
}

/// Whether a live secret holds exactly these values in these fields.
fn holds_exactly(p: &crate::vault::Present, values: &[(String, SecretString)]) -> bool {
    values.iter().all(|(k, v)| {
        matches!(p.fields.get(k), Some(FieldValue::Text(s)) if s.expose_secret() == v.expose_secret())
    })
}

/// Judge each field of a live secret against its generator, and a derived field against its
/// inputs (those of other secrets from `outside`). A field the secret lacks is missing, or
/// invalid when the gate would refuse to add it ([`extend_refusals`]: a fixed secret that holds
/// its value under another name, a key under a certificate made from its lost value).
fn judge(t: &Target, held: &Held, outside: &derive::Outside) -> PathResult {
    let refusals = extend_refusals(t, held);
    // A refusal not about one missing field (a field that is not a string) stops them all.
    let general = refusals
        .iter()
        .find(|r| r.field().is_none_or(|f| held.fields.contains_key(f)));
    let unnamed: Vec<String> = match t.provided {
        Some(_) => Vec::new(),
        None => held
            .fields
            .keys()
            .filter(|k| !t.fields.iter().any(|f| &f.name == *k))
            .cloned()
            .collect(),
    };
    let fields = t
        .fields
        .iter()
        .map(|f| {
            let (outcome, detail) = match held.fields.get(&f.name) {
                None => match refusals.iter().find(|r| r.field() == Some(f.name.as_str())) {
                    Some(r) => (Outcome::Invalid, Some(r.to_string())),
                    None => match (general, refusals.first()) {
                        (Some(r), _) => {
                            (Outcome::Error, Some(format!("cannot add the field: {r}")))
                        }
                        (None, Some(r)) => (
                            Outcome::Missing,
                            Some(format!(
                                "not added while field `{}` is refused",
                                r.field().unwrap_or_default()
                            )),
                        ),
                        (None, None) => (Outcome::Missing, None),
                    },
                },
                Some(FieldValue::NotText(kind)) => {
                    (Outcome::Invalid, Some(format!("is {kind}, not a string")))
                }
                Some(FieldValue::Text(v)) => match f.validate(v) {
                    Validity::Valid if t.fixed && !unnamed.is_empty() => {
                        (Outcome::Invalid, Some(fixed_unnamed(&unnamed)))
                    }
                    Validity::Valid => {
                        match derive::judge(f, v, &held.fields, &t.fields, outside) {
                            None => (Outcome::Exists, None),
                            Some(derive::Judgement::Pending(on)) => (Outcome::Pending, Some(on)),
                            Some(derive::Judgement::Disagrees(why)) => {
                                (Outcome::Invalid, Some(why))
                            }
                        }
                    }
                    Validity::Pending => (Outcome::Pending, None),
                    Validity::Invalid(why) => (Outcome::Invalid, Some(why)),
                },
            };
            FieldResult {
                field: f.name.clone(),
                generator: f.generator.to_string(),
                outcome,
                detail,
            }
        })
        .collect();
    // A first version without vault-seed's marker: made by hand, by `--no-metadata`, or by a
    // run killed between its data and metadata writes. Said, never claimed (nothing proves who
    // wrote it), and never marked now.
    let unmarked = held.version == 1
        && held.custom_metadata.get("managed-by").map(String::as_str) != Some("vault-seed");
    PathResult {
        target: t.clone(),
        version: Some(held.version).filter(|v| *v > 0),
        fields,
        written: false,
        detail: unmarked.then(|| "present, not marked (no vault-seed custom_metadata)".into()),
        vault_unavailable: false,
        created_time: held.created_time.clone(),
        unnamed,
    }
}

/// Why a fixed secret's valid value is not done while the secret holds fields no spec names:
/// one may be the real key under an old name, and the value under the spec's name a newer one
/// that the data was never encrypted with.
fn fixed_unnamed(unnamed: &[String]) -> String {
    format!(
        "the secret is fixed and also holds `{}`, which no spec names: it may be the real value under an old name; name it in the spec (rename the field), or remove it by hand once you know it is not",
        unnamed.join("`, `")
    )
}

/// The gate's refusals of adding the fields a live secret lacks (`plan` predicts them, `apply`
/// and `verify` say them).
fn extend_refusals(t: &Target, held: &Held) -> Vec<Refusal> {
    let missing: Vec<String> = t
        .fields
        .iter()
        .filter(|f| !held.fields.contains_key(&f.name))
        .map(|f| f.name.clone())
        .collect();
    if missing.is_empty() {
        return Vec::new();
    }
    gate::refuse_change(t, held, Intent::Extend, &missing)
}

/// Judge a live secret; add fields the spec has and it lacks, with `cas=<version>`, when the
/// gate allows it (never to a fixed secret: [`judge`] calls those fields invalid).
async fn judge_or_extend(
    ctx: &Ctx<'_>,
    mount: &KvMount,
    t: &Target,
    held: Held,
    outside: &derive::Outside,
) -> PathResult {
    let mut result = judge(t, &held, outside);
    let missing: Vec<&crate::spec::Field> = t
        .fields
        .iter()
        .filter(|f| !held.fields.contains_key(&f.name))
        .collect();
    if missing.is_empty() || !extend_refusals(t, &held).is_empty() {
        return result;
    }
    let mark = |r: &mut PathResult, o: Outcome, d: Option<String>| {
        for f in r
            .fields
            .iter_mut()
            .filter(|f| f.outcome == Outcome::Missing)
        {
            f.outcome = o;
            f.detail = d.clone();
        }
    };
    if ctx.opts.dry_run {
        mark(&mut result, Outcome::Extended, None);
        return result;
    }
    let (new_values, unmade) = match derive::make(t, &missing, &held.fields, outside) {
        Ok(v) => v,
        Err(e) => {
            mark(&mut result, Outcome::Error, Some(e));
            return result;
        }
    };
    mark_unmade(&mut result, &unmade);
    if new_values.is_empty() {
        return result;
    }
    let approved = match gate::check(t, &held, Intent::Extend, new_values) {
        Ok(a) => a,
        Err(refused) => return refused_result(result, &refused),
    };
    match gate::write(ctx.vault, mount, &approved).await {
        Ok(version) => {
            write_metadata(ctx, mount, t, held.custom_metadata.clone(), "extended").await;
            mark(&mut result, Outcome::Extended, None);
            result.version = Some(version).filter(|v| *v > 0);
            result.written = true;
        }
        Err(VaultError::CasMismatch { .. }) => mark(
            &mut result,
            Outcome::Error,
            Some(
                "changed by someone else while vault-seed extended it; nothing written, run again"
                    .into(),
            ),
        ),
        Err(e) => {
            let (o, d) = outcome::error_outcome(&e);
            mark(&mut result, o, Some(d));
        }
    }
    result
}

/// A result whose write the gate refused: each field a refusal names is invalid with why;
/// a refusal of no field is the path's detail. Nothing was written.
fn refused_result(mut r: PathResult, refused: &[Refusal]) -> PathResult {
    for f in r.fields.iter_mut() {
        if let Some(x) = refused.iter().find(|x| x.field() == Some(f.field.as_str())) {
            f.outcome = Outcome::Invalid;
            f.detail = Some(format!("{x}; nothing was written"));
        }
    }
    let general: Vec<String> = refused
        .iter()
        .filter(|x| x.field().is_none())
        .map(ToString::to_string)
        .collect();
    if !general.is_empty() {
        r.detail = Some(general.join("; "));
        for f in r
            .fields
            .iter_mut()
            .filter(|f| f.outcome != Outcome::Invalid)
        {
            f.outcome = Outcome::Error;
        }
    }
    r
}

async fn write_metadata(
    ctx: &Ctx<'_>,
    mount: &KvMount,
    t: &Target,
    base: BTreeMap<String, String>,
    action: &str,
) {
    if !ctx.opts.metadata || !mount.version.has_cas() || ctx.meta_warned.load(Ordering::Relaxed) {
        return;
    }
    match gate::mark(ctx.vault, mount, t, action, base).await {
        Ok(()) => {}
        Err(VaultError::Denied { .. }) => ctx.meta_warned.store(true, Ordering::SeqCst),
        Err(e) => {
            tracing::warn!(path = %t.full_path(), error = %e, "could not write vault-seed's custom_metadata")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Field, Origin, Provided};

    fn target(mount: &str, path: &str, provided: bool) -> Target {
        let origin = Origin::new(
            Arc::from(std::path::Path::new("specs/app.toml")),
            "app".into(),
            mount.into(),
            None,
        );
        let fields = Arc::from(vec![Field::new(
            "password",
            crate::generate::Generator::Fernet,
        )]);
        let provided = provided.then(|| {
            Arc::new(Provided {
                by: "db".into(),
                push_secret: None,
                mount: None,
                path: None,
            })
        });
        Target::new(origin, path.into(), "S".into(), false, fields, provided)
    }

    /// A token denied `list` on thousands of folders gets a note naming eight, by name, and
    /// how many more; the note holds no more than that while the run goes.
    #[test]
    fn the_denied_list_note_names_eight_folders_then_counts_the_rest() {
        let mut denied = Denied::default();
        for i in (0..20).rev() {
            denied.push(format!("secret/metadata/f{i:02}"));
        }
        assert_eq!(denied.first.len(), Denied::SHOWN);
        let note = list_denied_note(denied).unwrap().message();
        assert!(
            note.starts_with(
                "the token may not `list` `secret/metadata/f00`, `secret/metadata/f01`,"
            ),
            "{note}"
        );
        assert!(
            note.contains(
                "`secret/metadata/f07` and 12 more folder(s): each path was read instead"
            ),
            "{note}"
        );
        assert!(!note.contains("f08"), "{note}");
        let mut one = Denied::default();
        one.push("secret/metadata/a".into());
        assert_eq!(
            list_denied_note(one).unwrap().message(),
            "the token may not `list` `secret/metadata/a`: each path was read instead (slower on many paths)"
        );
        assert!(list_denied_note(Denied::default()).is_none());
    }

    /// Records what it is handed.
    #[derive(Default)]
    struct Taken(Vec<String>);

    impl Sink for Taken {
        fn path(&mut self, r: PathResult) {
            self.0.push(r.target.path.to_string());
        }
    }

    /// Results are handed on in the report's order as soon as their turn comes: only those
    /// that came in ahead of it are held.
    #[test]
    fn results_are_handed_on_in_order_holding_only_those_ahead_of_their_turn() {
        let mut detected = Mounts::default();
        detected
            .mounts
            .insert("kv".into(), KvMount::new("kv", KvVersion::V2));
        // `gone/1` is on a mount that cannot be used: after the others.
        let targets: Vec<Target> = ["0", "1", "2", "3"]
            .iter()
            .map(|p| target("kv", p, false))
            .chain([target("gone", "g", false)])
            .collect();
        let mut order = InOrder::new(&targets, &detected);
        let mut taken = Taken::default();
        let result = |i: usize| PathResult::all(&targets[i], Outcome::Exists, None, None);
        order.put(4, result(4), &mut taken);
        order.put(2, result(2), &mut taken);
        order.put(1, result(1), &mut taken);
        assert!(taken.0.is_empty());
        assert_eq!(order.waiting.len(), 3);
        order.put(0, result(0), &mut taken);
        assert_eq!(taken.0, ["0", "1", "2"]);
        assert_eq!(order.waiting.len(), 1, "only `g`, whose turn is last");
        order.put(3, result(3), &mut taken);
        assert_eq!(taken.0, ["0", "1", "2", "3", "g"]);
        assert!(order.waiting.is_empty());

        // With a provided path, spec order for all, the unusable mount's in its place.
        let mut targets = targets;
        targets[1] = target("kv", "1", true);
        let mut order = InOrder::new(&targets, &detected);
        let mut taken = Taken::default();
        for i in [4, 3, 2, 1, 0] {
            order.put(
                i,
                PathResult::all(&targets[i], Outcome::Exists, None, None),
                &mut taken,
            );
        }
        assert_eq!(taken.0, ["0", "1", "2", "3", "g"]);
    }
}
