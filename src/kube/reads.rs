//! Reads by LIST: `verify` asks for one kind in the namespaces its specs name once
//! ([`Cluster::read_by_list`]), a LIST per kind across namespaces where the identity may list
//! there (else one per namespace, after the 403), paged ([`super::pager`]), requests going out
//! together up to a bound. What was listed is kept on the client and answers the per-object
//! questions ([`Cluster::external_secret`], [`Cluster::secret_digests`],
//! [`Cluster::pods`]...) of every part that asks them, so each object is read once; a question
//! about a namespace or kind not listed is asked of the server as before.
//!
//! A kind is a [`ReadKind`]: its resource, and how an item is kept (typed and small: a Secret as
//! its keys' digests and its metadata, never its values). Adding one is a variant, its resource,
//! and a parse.
//!
//! `--wait` re-reads only what is not done ([`Cluster::reread`]): per namespace, each object
//! by GET when that takes no more requests than listing the namespace again, else the LIST.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Mutex;

use futures::{stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::pager::{json_page, Each, ListAt, ListMeta, Pages};
use super::status::{self, ExternalSecretInfo};
use super::value::{DataDigests, KeyDigest};
use super::vso::{self, VaultStaticSecretInfo, VAULT_STATIC_SECRET, VSO_GROUP, VSO_VERSION};
use super::workloads::{self, DataChange, PodInfo, WorkloadKind};
use super::{Cluster, KubeError, ESO_GROUP, EXTERNAL_SECRET, EXTERNAL_SECRET_VERSIONS};
use crate::base::digest::Digester;
use crate::base::interned::Interner;

/// A kind read by LIST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReadKind {
    /// ESO's ExternalSecrets (`v1`, else `v1beta1`).
    ExternalSecrets,
    /// VSO's VaultStaticSecrets.
    VaultStaticSecrets,
    /// Secrets in full: each key's value digested while parsing (never kept), and the metadata.
    Secrets,
    /// Secrets as `PartialObjectMetadataList`: their metadata only, no value travels.
    SecretMetadata,
    /// Workloads of one kind (a part reads their pod templates).
    Workloads(WorkloadKind),
    /// `apps/v1` ReplicaSets.
    ReplicaSets,
    /// Pods.
    Pods,
    /// Argo CD's Applications.
    Applications,
}

impl ReadKind {
    fn group(self) -> &'static str {
        match self {
            ReadKind::ExternalSecrets => ESO_GROUP,
            ReadKind::VaultStaticSecrets => VSO_GROUP,
            ReadKind::Secrets | ReadKind::SecretMetadata | ReadKind::Pods => "",
            ReadKind::Workloads(k) => k.group(),
            ReadKind::ReplicaSets => "apps",
            ReadKind::Applications => super::argocd::ARGOCD_GROUP,
        }
    }

    fn versions(self) -> &'static [&'static str] {
        match self {
            ReadKind::ExternalSecrets => &EXTERNAL_SECRET_VERSIONS,
            ReadKind::VaultStaticSecrets => &[VSO_VERSION],
            ReadKind::Workloads(WorkloadKind::Rollout) => &["v1alpha1"],
            ReadKind::Applications => &[super::argocd::APPLICATION_VERSION],
            _ => &["v1"],
        }
    }

    fn plural(self) -> &'static str {
        match self {
            ReadKind::ExternalSecrets => EXTERNAL_SECRET.plural,
            ReadKind::VaultStaticSecrets => VAULT_STATIC_SECRET.plural,
            ReadKind::Secrets | ReadKind::SecretMetadata => "secrets",
            ReadKind::Workloads(k) => k.plural(),
            ReadKind::ReplicaSets => "replicasets",
            ReadKind::Pods => "pods",
            ReadKind::Applications => "applications",
        }
    }

    /// The resource with its group, as errors name it.
    fn resource(self) -> String {
        match self.group() {
            "" => self.plural().to_string(),
            g => format!("{}.{g}", self.plural()),
        }
    }

    /// The collection's URL path at `version`, in `ns` or across namespaces.
    fn path(self, version: &str, ns: Option<&str>) -> String {
        let base = match self.group() {
            "" => format!("/api/{version}"),
            g => format!("/apis/{g}/{version}"),
        };
        match ns {
            Some(ns) => format!("{base}/namespaces/{ns}/{}", self.plural()),
            None => format!("{base}/{}", self.plural()),
        }
    }

    /// Whether a list of it that holds nothing is read again while waiting: the objects a
    /// check waits for are re-read by name, so only the workloads' kinds are left alone.
    fn kept_when_empty(self) -> bool {
        matches!(self, ReadKind::Workloads(_))
    }
}

/// An object of a list that could not be read as its kind: the error its GET would give.
#[derive(Debug, Clone)]
pub(super) struct Shape(String, Option<(&'static str, &'static str, String)>);

impl Shape {
    fn of(e: &KubeError) -> Shape {
        match e {
            KubeError::BadField {
                kind,
                object,
                field,
                value,
            } => Shape(object.clone(), Some((kind, field, value.clone()))),
            other => Shape(other.to_string(), None),
        }
    }

    fn error(&self, kind: ReadKind) -> KubeError {
        match &self.1 {
            Some((k, field, value)) => KubeError::BadField {
                kind: k,
                object: self.0.clone(),
                field,
                value: value.clone(),
            },
            None => KubeError::Decode {
                verb: "list",
                resource: kind.resource(),
                object: String::new(),
                detail: self.0.clone(),
            },
        }
    }
}

/// A Secret as listed: its keys (digested when a digester was given) unless only its metadata
/// was asked for, and when its data last changed.
#[derive(Debug, Clone)]
pub(super) struct SecretRead {
    /// Each key of `data`; `None` for metadata alone.
    pub keys: Option<KeyList>,
    /// Whether the keys carry digests.
    pub digested: bool,
    /// When its data changed, and Reloader's annotations.
    pub change: DataChange,
}

/// A Secret's keys with their digests, in key order: a platform's Secrets are many, each with
/// a few keys, held as a slice rather than a map.
#[derive(Debug, Clone)]
pub(super) struct KeyList(Box<[(Box<str>, KeyDigest)]>);

impl KeyList {
    fn new(keys: BTreeMap<String, KeyDigest>) -> KeyList {
        KeyList(keys.into_iter().map(|(k, d)| (k.into(), d)).collect())
    }

    /// Each key with its digest, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &KeyDigest)> {
        self.0.iter().map(|(k, d)| (&**k, d))
    }

    /// As a map, for the callers.
    pub fn to_map(&self) -> BTreeMap<String, KeyDigest> {
        self.iter().map(|(k, d)| (k.to_string(), *d)).collect()
    }
}

/// A pod as listed: its labels (for the selectors matched here) and what the checks read.
#[derive(Debug, Clone)]
pub(super) struct ListedPod {
    pub labels: super::selector::LabelSet,
    pub info: PodInfo,
}

/// The objects of one kind in one namespace, by name, and the pages its LIST took.
struct Listing<T> {
    items: Named<T>,
    pages: usize,
}

/// Objects sorted by name, each name once: held at their number (a map's spare room, for every
/// namespace of a platform, is most of what a listing of ten objects takes).
struct Named<T>(Vec<(String, T)>);

impl<T> Named<T> {
    /// `items` in list order; of two with one name, the later is kept (as a map would).
    fn new(mut items: Vec<(String, T)>) -> Named<T> {
        // Stable: equal names stay in list order, so the last of each run is the later; it
        // takes the place of the one kept. In place: a platform's listings are large.
        items.sort_by(|a, b| a.0.cmp(&b.0));
        items.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        items.shrink_to_fit();
        Named(items)
    }

    fn at(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    fn get(&self, name: &str) -> Option<&T> {
        self.at(name).ok().map(|i| &self.0[i].1)
    }

    /// Put `item` under `name`, or take the name out (`None`).
    fn set(&mut self, name: &str, item: Option<T>) {
        match (self.at(name), item) {
            (Ok(i), Some(item)) => self.0[i].1 = item,
            (Ok(i), None) => {
                self.0.remove(i);
            }
            (Err(i), Some(item)) => self.0.insert(i, (name.to_string(), item)),
            (Err(_), None) => {}
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// What the client keeps of its LISTs.
#[derive(Default)]
pub(super) struct Lists {
    /// `(kind, namespace)` → `Listing<T>` of that kind's item type.
    listed: HashMap<(ReadKind, String), Box<dyn Any + Send + Sync>>,
    /// Kinds whose LIST across namespaces RBAC refused: listed per namespace from then on.
    per_namespace: HashSet<ReadKind>,
    /// Kinds the server does not serve, or whose first LIST held nothing
    /// ([`ReadKind::kept_when_empty`]): not listed again.
    settled: HashSet<ReadKind>,
}

/// A LIST's items put away by namespace as its pages arrive, in list order within each. Items
/// of a namespace not asked about are dropped as they come: a cluster's pods are mostly
/// elsewhere.
struct ByNamespace<'n, T> {
    /// The one namespace listed, or `None` across the namespaces of `wanted`.
    one: Option<&'n str>,
    wanted: &'n BTreeSet<String>,
    runs: BTreeMap<String, Vec<(String, T)>>,
    /// The namespace of the last item: a LIST across namespaces comes in namespace order (the
    /// API server's storage order), so a namespace's run is complete, and shrunk to its length,
    /// when the next begins. Another order only costs a run growing again.
    last: Option<String>,
    /// The list held no item at all, of any namespace.
    empty: bool,
}

impl<'n, T> ByNamespace<'n, T> {
    fn new(one: Option<&'n str>, wanted: &'n BTreeSet<String>) -> Self {
        ByNamespace {
            one,
            wanted,
            runs: BTreeMap::new(),
            last: None,
            empty: true,
        }
    }

    fn wants(&self, ns: &str) -> bool {
        match self.one {
            Some(one) => one == ns,
            None => self.wanted.contains(ns),
        }
    }

    /// Each namespace's items (every namespace asked about, an empty run where none came).
    fn runs(mut self) -> Vec<(String, Vec<(String, T)>)> {
        let names: Vec<&str> = match self.one {
            Some(one) => vec![one],
            None => self.wanted.iter().map(String::as_str).collect(),
        };
        names
            .into_iter()
            .map(|ns| (ns.to_string(), self.runs.remove(ns).unwrap_or_default()))
            .collect()
    }
}

impl<T> Pages<(String, String, T)> for ByNamespace<'_, T> {
    fn page(&mut self, items: Vec<(String, String, T)>) {
        for (ns, name, item) in items {
            self.empty = false;
            if !self.wants(&ns) {
                continue;
            }
            if self.last.as_ref() != Some(&ns) {
                if let Some(run) = self.last.take().and_then(|at| self.runs.get_mut(&at)) {
                    run.shrink_to_fit();
                }
                self.last = Some(ns.clone());
            }
            self.runs.entry(ns).or_default().push((name, item));
        }
    }

    fn restart(&mut self) {
        self.runs.clear();
        self.last = None;
        self.empty = true;
    }
}

/// A pod as listed ([`ReadKind::Pods`]), with its namespace and name.
fn pod_item(o: &Value, _: &str) -> ListedPod {
    ListedPod {
        labels: workloads::labels_of(o),
        info: workloads::pod_info(o),
    }
}

/// A LIST across namespaces whose namespaces are each kept, and named to `ready`, as soon as
/// their run is complete. The API server lists in storage-key order
/// (`/registry/<resource>/<namespace>/<name>`: apiserver `pkg/storage/etcd3/store.go`
/// `GetList` reads a key range, and the watch cache serves it sorted by key), so one
/// namespace's objects come together and its run is complete when another's begins.
///
/// A namespace that comes again after its run was kept (a server listing in another order) was
/// kept from part of its objects: it is forgotten, its later objects are dropped, and
/// [`Streamed::finish`] returns it to be listed alone. After the list starts over (an expired
/// `continue` token), the runs kept before stand: each was whole in the listing it came from.
struct Streamed<'n, T> {
    wanted: &'n BTreeSet<String>,
    /// Keeps a namespace's run; forgets what was kept of a namespace.
    keep: KeepRun<'n, T>,
    forget: &'n (dyn Fn(&str) + Sync),
    ready: &'n (dyn Fn(&str) + Sync),
    run: Option<(String, Vec<(String, T)>)>,
    kept: BTreeSet<String>,
    again: BTreeSet<String>,
    started_over: bool,
}

/// Keeps one namespace's run of a [`Streamed`] list.
type KeepRun<'n, T> = &'n (dyn Fn(&str, Vec<(String, T)>) + Sync);

impl<'n, T: Send + Sync + 'static> Streamed<'n, T> {
    fn new(
        wanted: &'n BTreeSet<String>,
        keep: KeepRun<'n, T>,
        forget: &'n (dyn Fn(&str) + Sync),
        ready: &'n (dyn Fn(&str) + Sync),
    ) -> Self {
        Streamed {
            wanted,
            keep,
            forget,
            ready,
            run: None,
            kept: BTreeSet::new(),
            again: BTreeSet::new(),
            started_over: false,
        }
    }

    /// Keep the run being read, and name its namespace.
    fn close(&mut self) {
        if let Some((ns, items)) = self.run.take() {
            (self.keep)(&ns, items);
            (self.ready)(&ns);
            self.kept.insert(ns);
        }
    }

    /// The list ended (`listed`: read to its end, else it failed or is not served): keep the
    /// last run and, when it was read to its end, an empty listing for each namespace wanted that
    /// had no object. The namespaces to list again alone.
    fn finish(mut self, listed: bool) -> BTreeSet<String> {
        if !listed {
            return BTreeSet::new();
        }
        self.close();
        for ns in self.wanted {
            if !self.kept.contains(ns) && !self.again.contains(ns) {
                self.run = Some((ns.clone(), Vec::new()));
                self.close();
            }
        }
        self.again
    }
}

impl<T: Send + Sync + 'static> Pages<(String, String, T)> for Streamed<'_, T> {
    fn page(&mut self, items: Vec<(String, String, T)>) {
        for (ns, name, item) in items {
            if !self.wanted.contains(&ns) || self.again.contains(&ns) {
                continue;
            }
            if self.run.as_ref().map(|(at, _)| at) != Some(&ns) {
                self.close();
                if self.kept.contains(&ns) {
                    if !self.started_over {
                        (self.forget)(&ns);
                        self.again.insert(ns);
                    }
                    continue;
                }
                self.run = Some((ns, Vec::new()));
            }
            if let Some((_, run)) = &mut self.run {
                run.push((name, item));
            }
        }
    }

    fn restart(&mut self) {
        self.run = None;
        self.started_over = true;
    }
}

/// One namespace's items of a kind, `(namespace, name, item)`.
type Items<T> = Vec<(String, String, T)>;

impl Cluster {
    /// List each of `kinds` in `namespaces` and keep what the checks read of them: across
    /// namespaces when more than one is named (per namespace after a 403), `concurrency` requests
    /// at once. `digester` digests the Secrets' values ([`ReadKind::Secrets`]). A LIST that
    /// fails is left to the per-object reads, which ask the server and report the error where
    /// it matters.
    pub async fn read_by_list(
        &self,
        kinds: &[ReadKind],
        namespaces: &BTreeSet<String>,
        digester: Option<&Digester>,
        concurrency: usize,
    ) {
        // What another part listed already is not listed again.
        let namespaces: BTreeSet<String> = namespaces
            .iter()
            .filter(|ns| kinds.iter().any(|k| !self.has_listing(*k, ns)))
            .cloned()
            .collect();
        let namespaces = &namespaces;
        let kinds: Vec<ReadKind> = kinds
            .iter()
            .copied()
            .filter(|k| !self.settled(*k))
            .filter(|k| namespaces.iter().any(|ns| !self.has_listing(*k, ns)))
            .collect();
        if namespaces.is_empty() || kinds.is_empty() {
            return;
        }
        let across = namespaces.len() > 1;
        // First each kind across namespaces, then per namespace what that could not read.
        let wide: Vec<ReadKind> = kinds
            .iter()
            .copied()
            .filter(|k| across && !self.lists().per_namespace.contains(k))
            .collect();
        let refused: Vec<ReadKind> = stream::iter(wide.iter().copied())
            .map(|k| async move {
                let done = self.list_into(k, None, namespaces, digester).await;
                (k, done)
            })
            .buffer_unordered(concurrency.max(1))
            .filter_map(|(k, done)| async move { (!done).then_some(k) })
            .collect()
            .await;
        let narrow: Vec<(ReadKind, &String)> = kinds
            .iter()
            .copied()
            .filter(|k| !wide.contains(k) || refused.contains(k))
            .flat_map(|k| namespaces.iter().map(move |ns| (k, ns)))
            .filter(|(k, ns)| !self.has_listing(*k, ns))
            .collect();
        stream::iter(narrow)
            .map(|(k, ns)| async move {
                if !self.settled(k) {
                    self.list_into(k, Some(ns), namespaces, digester).await;
                }
            })
            .buffer_unordered(concurrency.max(1))
            .collect::<Vec<()>>()
            .await;
    }

    /// Read again, for `--wait`, the objects of `kind` named in `objects` (namespace, name):
    /// per namespace listed before, each by GET when they are no more than the pages its LIST
    /// took, else that namespace's LIST again. `digester` as for [`Cluster::read_by_list`].
    pub async fn reread(
        &self,
        kind: ReadKind,
        objects: &[(String, String)],
        digester: Option<&Digester>,
        concurrency: usize,
    ) {
        let mut by_ns: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (ns, name) in objects {
            by_ns.entry(ns).or_default().push(name);
        }
        let mut relist = BTreeSet::new();
        let mut gets = Vec::new();
        for (ns, names) in by_ns {
            match self.pages_of(kind, ns) {
                None => {}
                Some(pages) if names.len() > pages => {
                    relist.insert(ns.to_string());
                }
                Some(_) => gets.extend(names.into_iter().map(|n| (ns, n))),
            }
        }
        stream::iter(gets)
            .map(|(ns, name)| self.get_into(kind, ns, name, digester))
            .buffer_unordered(concurrency.max(1))
            .collect::<Vec<()>>()
            .await;
        self.relist(&[kind], &relist, digester, concurrency).await;
    }

    /// List `kinds` again in each of `namespaces` (one LIST per namespace), replacing what was
    /// kept; kinds not served or found empty before are not listed again.
    pub async fn relist(
        &self,
        kinds: &[ReadKind],
        namespaces: &BTreeSet<String>,
        digester: Option<&Digester>,
        concurrency: usize,
    ) {
        let jobs: Vec<(ReadKind, &String)> = kinds
            .iter()
            .copied()
            .filter(|k| !self.settled(*k))
            .flat_map(|k| namespaces.iter().map(move |ns| (k, ns)))
            .collect();
        stream::iter(jobs)
            .map(|(k, ns)| async move {
                self.list_into(k, Some(ns), namespaces, digester).await;
            })
            .buffer_unordered(concurrency.max(1))
            .collect::<Vec<()>>()
            .await;
    }

    /// Forget what was listed of `kinds` in `namespaces`: their next reads ask again.
    pub fn forget(&self, kinds: &[ReadKind], namespaces: &BTreeSet<String>) {
        let mut lists = self.lists();
        for k in kinds {
            for ns in namespaces {
                lists.listed.remove(&(*k, ns.clone()));
            }
        }
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, Lists> {
        self.lists.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `kind` is listed in `ns` (Secrets in full also answer for their metadata).
    fn has_listing(&self, kind: ReadKind, ns: &str) -> bool {
        let lists = self.lists();
        let has = |k| lists.listed.contains_key(&(k, ns.to_string()));
        has(kind) || (kind == ReadKind::SecretMetadata && has(ReadKind::Secrets))
    }

    fn settled(&self, kind: ReadKind) -> bool {
        self.lists().settled.contains(&kind)
    }

    /// The pages the LIST of `kind` in `ns` took; `None` when it was not listed.
    fn pages_of(&self, kind: ReadKind, ns: &str) -> Option<usize> {
        let lists = self.lists();
        let any = lists.listed.get(&(kind, ns.to_string()))?;
        Some(match kind {
            ReadKind::ExternalSecrets => pages::<Result<ExternalSecretInfo, Shape>>(any.as_ref()),
            ReadKind::VaultStaticSecrets => {
                pages::<Result<VaultStaticSecretInfo, Shape>>(any.as_ref())
            }
            ReadKind::Secrets | ReadKind::SecretMetadata => pages::<SecretRead>(any.as_ref()),
            _ => 1,
        })
    }

    /// What was listed of `kind` in `ns` about `name`: `None` when the namespace was not listed
    /// (ask the server), `Some(None)` when the object is not there.
    pub(super) fn listed<T: Clone + 'static>(
        &self,
        kind: ReadKind,
        ns: &str,
        name: &str,
    ) -> Option<Option<T>> {
        self.listed_with(kind, ns, name, T::clone)
    }

    /// [`Cluster::listed`], taking only what `f` reads of the object (not a copy of it all).
    fn listed_with<T: 'static, U>(
        &self,
        kind: ReadKind,
        ns: &str,
        name: &str,
        f: impl FnOnce(&T) -> U,
    ) -> Option<Option<U>> {
        let lists = self.lists();
        let listing = lists
            .listed
            .get(&(kind, ns.to_string()))?
            .downcast_ref::<Listing<T>>()?;
        Some(listing.items.get(name).map(f))
    }

    /// Every object listed of `kind` in `ns`, in name order; `None` when not listed.
    pub(super) fn listed_all<T: Clone + 'static>(
        &self,
        kind: ReadKind,
        ns: &str,
    ) -> Option<Vec<T>> {
        self.listed_where(kind, ns, |_| true)
    }

    /// The objects of `kind` listed in `ns` that `keep` keeps, copied out of the listing (only
    /// those); `None` when that namespace was not listed.
    pub(super) fn listed_where<T: Clone + 'static>(
        &self,
        kind: ReadKind,
        ns: &str,
        keep: impl Fn(&T) -> bool,
    ) -> Option<Vec<T>> {
        let lists = self.lists();
        let listing = lists
            .listed
            .get(&(kind, ns.to_string()))?
            .downcast_ref::<Listing<T>>()?;
        Some(
            listing
                .items
                .0
                .iter()
                .filter(|(_, t)| keep(t))
                .map(|(_, t)| t.clone())
                .collect(),
        )
    }

    /// An object of a kind read with its shape checked (ExternalSecrets, VaultStaticSecrets)
    /// as listed: the error its GET would give when its shape is wrong.
    pub(super) fn listed_checked<T: Clone + 'static>(
        &self,
        kind: ReadKind,
        ns: &str,
        name: &str,
    ) -> Option<Result<Option<T>, KubeError>> {
        let hit = self.listed::<Result<T, Shape>>(kind, ns, name)?;
        Some(hit.transpose().map_err(|shape| shape.error(kind)))
    }

    /// What `f` reads of a Secret as listed: in full first, else its metadata (when `metadata`
    /// will do).
    pub(super) fn listed_secret<U>(
        &self,
        ns: &str,
        name: &str,
        metadata: bool,
        f: impl Fn(&SecretRead) -> U,
    ) -> Option<Option<U>> {
        self.listed_with(ReadKind::Secrets, ns, name, &f)
            .or_else(|| {
                metadata
                    .then(|| self.listed_with(ReadKind::SecretMetadata, ns, name, &f))
                    .flatten()
            })
    }

    /// List `kind` in `ns` (or across namespaces, keeping those of `namespaces`) and keep it.
    /// `false` when RBAC refused the LIST across namespaces (the caller lists per namespace).
    async fn list_into(
        &self,
        kind: ReadKind,
        ns: Option<&str>,
        namespaces: &BTreeSet<String>,
        digester: Option<&Digester>,
    ) -> bool {
        let result = match kind {
            ReadKind::ExternalSecrets => {
                let names = Mutex::new(Interner::default());
                let parse = |o: &Value, v: &str| {
                    let mut names = names.lock().unwrap_or_else(|p| p.into_inner());
                    status::external_secret_info_in(o, v, &mut names).map_err(|e| Shape::of(&e))
                };
                self.list_json_kept(kind, ns, namespaces, parse).await
            }
            ReadKind::VaultStaticSecrets => {
                let parse = |o: &Value, _: &str| {
                    vso::vault_static_secret_info(o).map_err(|e| Shape::of(&e))
                };
                self.list_json_kept(kind, ns, namespaces, parse).await
            }
            ReadKind::Secrets | ReadKind::SecretMetadata => {
                let digester = digester.filter(|_| kind == ReadKind::Secrets);
                let mut into = ByNamespace::new(ns, namespaces);
                self.list_secrets(kind, ns, digester, &mut into)
                    .await
                    .map(|r| r.map(|pages| self.keep(kind, into, pages)))
            }
            ReadKind::Workloads(_) => {
                let parse = |o: &Value, _: &str| workloads::slim(o);
                self.list_json_kept(kind, ns, namespaces, parse).await
            }
            ReadKind::ReplicaSets => {
                let parse = |o: &Value, _: &str| workloads::replica_set_info(o);
                self.list_json_kept(kind, ns, namespaces, parse).await
            }
            ReadKind::Pods => self.list_json_kept(kind, ns, namespaces, pod_item).await,
            ReadKind::Applications => {
                let at = self.list_at(kind, kind.versions()[0], ns);
                let mut into = ByNamespace::new(ns, namespaces);
                self.list_pages(&at, super::argocd::application_page, &mut into)
                    .await
                    .map(|r| r.map(|pages| self.keep(kind, into, pages)))
            }
        };
        self.listed_as(kind, ns, result)
    }

    /// What a LIST of `kind` in `ns` (across namespaces: `None`) ended in, remembered: `false`
    /// when RBAC refused it across namespaces (the caller lists per namespace).
    fn listed_as(
        &self,
        kind: ReadKind,
        ns: Option<&str>,
        result: Result<Option<()>, KubeError>,
    ) -> bool {
        match result {
            Ok(Some(())) => true,
            Ok(None) => {
                // Not served at any version: not listed again, and its GETs know it.
                for v in kind.versions() {
                    self.remember(kind.plural(), v, false);
                }
                self.lists().settled.insert(kind);
                true
            }
            Err(KubeError::Forbidden { .. }) if ns.is_none() => {
                self.lists().per_namespace.insert(kind);
                false
            }
            Err(e) => {
                tracing::debug!(?kind, namespace = ?ns, error = %e, "list failed: read object by object");
                true
            }
        }
    }

    /// List the pods of `namespaces` as [`Cluster::read_by_list`] does, naming each namespace to
    /// `ready` once its pods are kept (at once when they were kept before; a namespace whose
    /// LIST failed is named too, its reads then ask the server). Across namespaces a namespace is
    /// kept as soon as its run is complete ([`Streamed`]), so that the caller can judge it, and
    /// forget it, while the rest is listed: a platform's pods are many to hold at once.
    pub async fn list_pods_each(
        &self,
        namespaces: &BTreeSet<String>,
        concurrency: usize,
        ready: &(dyn Fn(&str) + Sync),
    ) {
        let kind = ReadKind::Pods;
        let mut todo = BTreeSet::new();
        for ns in namespaces {
            if self.has_listing(kind, ns) || self.settled(kind) {
                ready(ns);
            } else {
                todo.insert(ns.clone());
            }
        }
        if todo.len() > 1 && !self.lists().per_namespace.contains(&kind) {
            let keep = |ns: &str, items| self.keep_run(kind, ns.to_string(), items, None);
            let forget = |ns: &str| self.forget(&[kind], &BTreeSet::from([ns.to_string()]));
            let mut into = Streamed::new(&todo, &keep, &forget, ready);
            let result = self.list_json(kind, None, pod_item, &mut into).await;
            let done = result.as_ref().is_ok_and(Option::is_some);
            let again = into.finish(done);
            let listed = self.listed_as(kind, None, result.map(|r| r.map(|_| ())));
            todo = match (listed, done) {
                // Refused across namespaces: each not kept is listed alone.
                (false, _) => todo
                    .into_iter()
                    .filter(|ns| !self.has_listing(kind, ns))
                    .collect(),
                // Listed: what came out of order is listed again alone.
                (true, true) => again,
                // Not served, or failed: their reads ask the server.
                (true, false) => {
                    for ns in todo.iter().filter(|ns| !self.has_listing(kind, ns)) {
                        ready(ns);
                    }
                    BTreeSet::new()
                }
            };
        }
        let todo = &todo;
        stream::iter(todo)
            .map(|ns| async move {
                if !self.settled(kind) {
                    self.list_into(kind, Some(ns), todo, None).await;
                }
                ready(ns);
            })
            .buffer_unordered(concurrency.max(1))
            .collect::<Vec<()>>()
            .await;
    }

    /// [`Cluster::list_json`], kept ([`Cluster::keep`]).
    async fn list_json_kept<T: Send + Sync + 'static>(
        &self,
        kind: ReadKind,
        ns: Option<&str>,
        namespaces: &BTreeSet<String>,
        parse: impl Fn(&Value, &str) -> T,
    ) -> Result<Option<()>, KubeError> {
        let mut into = ByNamespace::new(ns, namespaces);
        let pages = self.list_json(kind, ns, parse, &mut into).await?;
        Ok(pages.map(|pages| self.keep(kind, into, pages)))
    }

    /// The objects of a JSON kind, each read by `parse` (with the API version that answered),
    /// trying the kind's versions in order, into `into`; the requests it took, `None` when no
    /// version is served.
    async fn list_json<T>(
        &self,
        kind: ReadKind,
        ns: Option<&str>,
        parse: impl Fn(&Value, &str) -> T,
        into: &mut dyn Pages<(String, String, T)>,
    ) -> Result<Option<usize>, KubeError> {
        for version in kind.versions() {
            if self.known_unserved(kind.plural(), version) {
                continue;
            }
            let api_version = match kind.group() {
                "" => version.to_string(),
                g => format!("{g}/{version}"),
            };
            let at = self.list_at(kind, version, ns);
            let item = |o: Value| {
                let (name, ns) = name_and_namespace(&o);
                (ns, name, parse(&o, &api_version))
            };
            let page = |text: &str| json_page(text, &item);
            match self.list_pages(&at, page, into).await? {
                Some(p) => {
                    self.remember(kind.plural(), version, true);
                    return Ok(Some(p));
                }
                None => self.remember(kind.plural(), version, false),
            }
        }
        Ok(None)
    }

    /// Secrets in full (each value digested by `digester` as it is parsed, or only its
    /// emptiness kept) or as metadata.
    async fn list_secrets(
        &self,
        kind: ReadKind,
        ns: Option<&str>,
        digester: Option<&Digester>,
        into: &mut dyn Pages<(String, String, SecretRead)>,
    ) -> Result<Option<usize>, KubeError> {
        let at = self.list_at(kind, "v1", ns);
        let page = |text: &str| {
            let mut de = serde_json::Deserializer::from_str(text);
            SecretPage(digester, kind == ReadKind::Secrets)
                .deserialize(&mut de)
                .map_err(|e| {
                    format!(
                        "not a list of Secrets ({:?} error at line {} column {})",
                        e.classify(),
                        e.line(),
                        e.column()
                    )
                })
        };
        self.list_pages(&at, page, into).await
    }

    fn list_at(&self, kind: ReadKind, version: &str, ns: Option<&str>) -> ListAt {
        ListAt {
            path: kind.path(version, ns),
            labels: None,
            metadata: kind == ReadKind::SecretMetadata,
            resource: kind.resource(),
            namespace: ns.map(str::to_string),
        }
    }

    pub(super) fn known_unserved(&self, plural: &'static str, version: &'static str) -> bool {
        self.served
            .lock()
            .ok()
            .and_then(|m| m.get(&(plural, version)).copied())
            == Some(false)
    }

    /// Keep a LIST's items, each namespace asked about its own listing (a namespace without any
    /// gets an empty one, so its objects are known absent); `pages`, the requests it took.
    fn keep<T: Send + Sync + 'static>(
        &self,
        kind: ReadKind,
        listed: ByNamespace<'_, T>,
        pages: usize,
    ) {
        let (across, empty) = (listed.one.is_none(), listed.empty);
        for (ns, items) in listed.runs() {
            self.keep_run(kind, ns, items, (!across).then_some(pages));
        }
        if empty && across && kind.kept_when_empty() {
            self.lists().settled.insert(kind);
        }
    }

    /// Keep one namespace's items of `kind`; `pages`, the requests its own LIST took (`None`:
    /// listed across namespaces, so the pages its own LIST would take).
    fn keep_run<T: Send + Sync + 'static>(
        &self,
        kind: ReadKind,
        ns: String,
        items: Vec<(String, T)>,
        pages: Option<usize>,
    ) {
        let items = Named::new(items);
        let pages = pages.unwrap_or_else(|| {
            items
                .len()
                .div_ceil(super::pager::PAGE_SIZE as usize)
                .max(1)
        });
        self.lists()
            .listed
            .insert((kind, ns), Box::new(Listing { items, pages }));
    }

    /// GET one object of `kind` and put what it says in place of what was listed.
    async fn get_into(&self, kind: ReadKind, ns: &str, name: &str, digester: Option<&Digester>) {
        match kind {
            ReadKind::ExternalSecrets => {
                let got = self.get_eso(EXTERNAL_SECRET, Some(ns), name).await;
                let item = got.map(|o| {
                    o.map(|(obj, v)| {
                        status::external_secret_info(&obj, &v).map_err(|e| Shape::of(&e))
                    })
                });
                self.replace(kind, ns, name, item);
            }
            ReadKind::VaultStaticSecrets => {
                let got = self.get_vso(VAULT_STATIC_SECRET, ns, name).await;
                let item = got.map(|o| {
                    o.map(|obj| vso::vault_static_secret_info(&obj).map_err(|e| Shape::of(&e)))
                });
                self.replace(kind, ns, name, item);
            }
            ReadKind::SecretMetadata => {
                let got = self.secret_data_change_get(ns, name).await.map(|c| {
                    c.map(|change| SecretRead {
                        keys: None,
                        digested: false,
                        change,
                    })
                });
                self.replace(kind, ns, name, got);
            }
            ReadKind::Secrets => {
                let got = self.secret_text(ns, name).await.and_then(|text| {
                    text.map(|text| {
                        let mut de = serde_json::Deserializer::from_str(&text);
                        let full = kind == ReadKind::Secrets;
                        SecretItem(digester.filter(|_| full), full)
                            .deserialize(&mut de)
                            .map(|(_, _, s)| s)
                            .map_err(|e| self.not_a_secret(ns, name, &e))
                    })
                    .transpose()
                });
                self.replace(kind, ns, name, got);
            }
            // Read by namespace only ([`Cluster::relist`]).
            _ => {}
        }
    }

    /// Put `got` in place of the listed `ns/name`; on an error, forget the namespace's listing
    /// so that the object's next read asks the server and reports it.
    fn replace<T: Send + Sync + 'static>(
        &self,
        kind: ReadKind,
        ns: &str,
        name: &str,
        got: Result<Option<T>, KubeError>,
    ) {
        let mut lists = self.lists();
        let key = (kind, ns.to_string());
        let Ok(got) = got else {
            lists.listed.remove(&key);
            return;
        };
        let Some(listing) = lists
            .listed
            .get_mut(&key)
            .and_then(|l| l.downcast_mut::<Listing<T>>())
        else {
            return;
        };
        listing.items.set(name, got);
    }
}

fn pages<T: 'static>(any: &(dyn Any + Send + Sync)) -> usize {
    any.downcast_ref::<Listing<T>>().map_or(1, |l| l.pages)
}

/// An object's name and namespace.
fn name_and_namespace(o: &Value) -> (String, String) {
    let s = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (s("/metadata/name"), s("/metadata/namespace"))
}

/// A page of Secrets: its token and each Secret read by [`SecretItem`].
struct SecretPage<'d>(Option<&'d Digester>, bool);

type SecretItems = (Items<SecretRead>, Option<String>);

impl<'de> DeserializeSeed<'de> for SecretPage<'_> {
    type Value = SecretItems;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SecretPage<'_> {
    type Value = SecretItems;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of Secrets")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut items, mut next) = (Vec::new(), None);
        while let Some(member) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match member.as_ref() {
                "metadata" => next = map.next_value::<ListMeta>()?.continue_token,
                "items" => items = map.next_value_seed(Each(SecretItem(self.0, self.1)))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((items, next))
    }
}

/// One Secret (or its `PartialObjectMetadata`, `.1` false): its metadata, and its `data` read
/// by [`DataDigests`]: each value digested with the digester and dropped, never kept.
#[derive(Clone, Copy)]
pub(super) struct SecretItem<'d>(pub Option<&'d Digester>, pub bool);

impl<'de> DeserializeSeed<'de> for SecretItem<'_> {
    type Value = (String, String, SecretRead);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SecretItem<'_> {
    type Value = (String, String, SecretRead);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Secret")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut meta = ObjectMeta::default();
        let mut keys = None;
        while let Some(member) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match member.as_ref() {
                "metadata" => meta = map.next_value()?,
                "data" => keys = Some(map.next_value_seed(DataDigests(self.0))?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let (name, ns) = (
            meta.name.clone().unwrap_or_default(),
            meta.namespace.clone().unwrap_or_default(),
        );
        // A Secret without `data` has no keys; metadata alone says nothing of them.
        let read = SecretRead {
            keys: if self.1 {
                Some(KeyList::new(keys.unwrap_or_default()))
            } else {
                None
            },
            digested: self.0.is_some(),
            change: workloads::data_change(meta),
        };
        Ok((ns, name, read))
    }
}

#[cfg(test)]
mod tests {
    use super::{ByNamespace, Named, Pages, Streamed};
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    /// Found by name in name order; of two items with one name the later is kept, as a map
    /// filled in list order keeps it; a GET's answer replaces, adds or takes out one.
    #[test]
    fn a_listing_answers_by_name_and_keeps_the_later_of_two() {
        let list = |items: &[(&str, u32)]| {
            Named::new(items.iter().map(|(n, v)| (n.to_string(), *v)).collect())
        };
        let mut named = list(&[("b", 1), ("a", 2), ("c", 3), ("a", 4)]);
        assert_eq!(named.len(), 3);
        assert_eq!(named.get("a"), Some(&4));
        assert_eq!(named.get("b"), Some(&1));
        assert_eq!(named.get("d"), None);
        named.set("b", Some(5));
        named.set("aa", Some(6));
        named.set("c", None);
        named.set("zz", None);
        let all: Vec<(&str, u32)> = named.0.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        assert_eq!(all, [("a", 4), ("aa", 6), ("b", 5)]);
        let thrice = list(&[("a", 1), ("b", 2), ("a", 3), ("a", 7)]);
        assert_eq!((thrice.len(), thrice.get("a")), (2, Some(&7)));
    }

    /// What a [`Streamed`] list did, in order: `keep ns [names]`, `ready ns`, `forget ns`.
    fn streamed(
        pages: &[&[(&str, &str)]],
        restart_after: Option<usize>,
    ) -> (Vec<String>, Vec<String>) {
        let wanted: BTreeSet<String> = ["a", "a-b", "b", "d"].map(String::from).into();
        let log = Mutex::new(Vec::new());
        let say = |line: String| log.lock().unwrap().push(line);
        let keep = |ns: &str, items: Vec<(String, u32)>| {
            let names: Vec<String> = items.into_iter().map(|(n, _)| n).collect();
            say(format!("keep {ns} {names:?}"));
        };
        let forget = |ns: &str| say(format!("forget {ns}"));
        let ready = |ns: &str| say(format!("ready {ns}"));
        let mut into = Streamed::new(&wanted, &keep, &forget, &ready);
        for (i, page) in pages.iter().enumerate() {
            let items = page
                .iter()
                .map(|(ns, n)| (ns.to_string(), n.to_string(), 0))
                .collect();
            into.page(items);
            if restart_after == Some(i) {
                into.restart();
            }
        }
        let again: Vec<String> = into.finish(true).into_iter().collect();
        let log = log.into_inner().unwrap();
        (log, again)
    }

    /// In storage-key order (`a-b` before `a`: `-` sorts before `/`) each namespace is kept and
    /// named when the next begins, whatever the pages; a wanted namespace with no object gets an
    /// empty listing; others are dropped.
    #[test]
    fn a_namespace_is_kept_and_named_once_its_run_is_complete() {
        let pages: &[&[(&str, &str)]] = &[
            &[("a-b", "p1"), ("a-b", "p2"), ("a", "p3")],
            &[("a", "p4"), ("c", "x"), ("b", "p5")],
        ];
        let (log, again) = streamed(pages, None);
        assert_eq!(
            log,
            [
                r#"keep a-b ["p1", "p2"]"#,
                "ready a-b",
                r#"keep a ["p3", "p4"]"#,
                "ready a",
                r#"keep b ["p5"]"#,
                "ready b",
                "keep d []",
                "ready d",
            ]
        );
        assert!(again.is_empty());
    }

    /// A namespace that comes again after it was kept was kept from part of its objects: it is
    /// forgotten and returned to be listed alone, its later objects dropped. After the list
    /// starts over, what was kept before stands and is not kept twice.
    #[test]
    fn a_namespace_seen_again_is_listed_again_unless_the_list_started_over() {
        let pages: &[&[(&str, &str)]] = &[&[("a", "p1"), ("b", "p2")], &[("a", "p3"), ("d", "p4")]];
        let (log, again) = streamed(pages, None);
        assert_eq!(
            log,
            [
                r#"keep a ["p1"]"#,
                "ready a",
                r#"keep b ["p2"]"#,
                "ready b",
                "forget a",
                r#"keep d ["p4"]"#,
                "ready d",
                "keep a-b []",
                "ready a-b",
            ]
        );
        assert_eq!(again, ["a"]);
        // An expired token after the first page: `b`'s run was not complete and is dropped;
        // `a`, complete, stands; the full list that follows keeps `b` whole.
        let pages: &[&[(&str, &str)]] = &[
            &[("a", "p1"), ("b", "p2")],
            &[("a", "p1"), ("b", "p2"), ("b", "p3")],
        ];
        let (log, again) = streamed(pages, Some(0));
        assert_eq!(
            log,
            [
                r#"keep a ["p1"]"#,
                "ready a",
                r#"keep b ["p2", "p3"]"#,
                "ready b",
                "keep a-b []",
                "ready a-b",
                "keep d []",
                "ready d",
            ]
        );
        assert!(again.is_empty());
    }

    /// Each namespace asked about gets its items in list order, whether the LIST came in
    /// namespace order or not, wherever its pages end (a namespace's run across pages, an empty
    /// page) and after a restart; other namespaces' items are dropped.
    #[test]
    fn a_listing_is_put_away_per_namespace_in_list_order() {
        let item = |ns: &str, name: &str, v: u32| (ns.to_string(), name.to_string(), v);
        let sorted = vec![
            item("a", "y", 2),
            item("b", "x", 1),
            item("b", "a", 3),
            item("c", "z", 4),
        ];
        let unsorted = vec![
            item("b", "x", 1),
            item("c", "z", 4),
            item("a", "y", 2),
            item("b", "a", 3),
        ];
        for items in [sorted, unsorted] {
            for cut in [vec![], vec![1], vec![2], vec![2, 2], vec![1, 3], vec![4]] {
                let mut pages = Vec::new();
                let mut rest = items.clone();
                for &at in cut.iter().rev() {
                    pages.insert(0, rest.split_off(at.min(rest.len())));
                }
                pages.insert(0, rest);
                let wanted: BTreeSet<String> = ["a", "b", "d"].map(String::from).into();
                let mut into = ByNamespace::new(None, &wanted);
                // A first try that ran into an expired token: dropped, never kept twice.
                into.page(items[..2].to_vec());
                into.restart();
                for page in pages {
                    into.page(page);
                }
                assert!(!into.empty);
                let want = vec![
                    ("a".to_string(), vec![("y".to_string(), 2)]),
                    (
                        "b".to_string(),
                        vec![("x".to_string(), 1), ("a".to_string(), 3)],
                    ),
                    ("d".to_string(), vec![]),
                ];
                assert_eq!(into.runs(), want, "pages cut at {cut:?}");
                let mut one = ByNamespace::new(Some("b"), &wanted);
                one.page(items.clone());
                let want = vec![(
                    "b".to_string(),
                    vec![("x".to_string(), 1), ("a".to_string(), 3)],
                )];
                assert_eq!(one.runs(), want);
            }
        }
        let nothing = BTreeSet::new();
        let mut none = ByNamespace::<u32>::new(None, &nothing);
        none.page(Vec::new());
        assert!(none.empty);
    }
}
