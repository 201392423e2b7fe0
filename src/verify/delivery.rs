//! Delivered means the value matches: each key of a target Secret is compared with the value in
//! Vault its mapping selects (path, field, version, decoding), both as keyed digests
//! ([`crate::base::digest`]), so neither value is printed, logged or kept. A match proves delivery
//! whatever the controllers' clocks say; a mismatch is looked up in the recent versions, so the
//! report can say which one the Secret holds.
//!
//! A key whose value ESO or VSO changes on the way (a template that is more than one plain
//! reference, a decoding vault-seed does not model, metadata instead of the value) is not
//! compared: its mapping says why ([`Mapping::Opaque`]), and the callers fall back to their
//! timing rules there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use secrecy::ExposeSecret;
use time::OffsetDateTime;

use crate::base::digest::{Digest, Digester};
use crate::base::interned::Interner;
use crate::kube::KeyDigest;
use crate::spec::mounts::Mounts;
use crate::spec::{Target, TargetIndex};
use crate::vault::kv::{Existing, FieldValue};
use crate::vault::Vault;

/// How many versions before the selected one a mismatch is looked for in.
const RECENT: u64 = 5;

/// How many older versions the search for a value's first version reads at most.
const HISTORY: u64 = 50;

/// How the controller decodes a Vault value before writing it into the Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decoding {
    /// As it is (ESO's `None`, VSO always).
    None,
    /// Standard base64 (ESO's `Base64`: Go's `StdEncoding`).
    Base64,
    /// URL-safe base64 (ESO's `Base64URL`: Go's `URLEncoding`).
    Base64Url,
}

/// Where one key of a target Secret takes its value from in Vault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The spec's target: an index into the targets the [`Compare`] was made with.
    pub target: usize,
    /// The KV field (shared: a platform's keys name a few fields many times).
    pub field: Arc<str>,
    /// A pinned KV v2 version; `None` reads the current one.
    pub version: Option<u64>,
    /// How the value is decoded on the way.
    pub decoding: Decoding,
}

/// What feeds one key of a target Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    /// One Vault value, delivered as it is (or decoded as said).
    Value(Source),
    /// Something vault-seed does not reproduce: why, in a few words.
    Opaque(String),
}

/// What one key of a target Secret holds, compared with Vault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// The value of the version the mapping selects (`version`: `None` on KV v1), created at
    /// `created`.
    Selected {
        /// Its KV v2 version.
        version: Option<u64>,
        /// When it was created in Vault.
        created: Option<OffsetDateTime>,
    },
    /// Another value than the selected version's.
    Other {
        /// The version the mapping selects (`None` on KV v1).
        selected: Option<u64>,
        /// The recent older version whose value it holds, if one does.
        older: Option<u64>,
    },
    /// Not compared, and why.
    NotCompared(String),
}

/// One version of a path as read for comparing: each text field's digests.
#[derive(Debug, Clone)]
enum VersionRead {
    Fields {
        version: Option<u64>,
        created: Option<OffsetDateTime>,
        fields: Fields,
    },
    /// Never written, trimmed, or its metadata deleted.
    Absent,
    /// Soft-deleted or destroyed: its value is not known.
    Deleted,
    /// The read failed: why (never a value).
    Failed(String),
}

/// A version's text fields, each digested, by their shared names: a run holds one version of
/// every path, and most paths hold one field, so one is held in place rather than in a slice.
#[derive(Debug, Clone)]
enum Fields {
    One(Arc<str>, FieldDigests),
    Many(Box<[(Arc<str>, FieldDigests)]>),
}

impl Fields {
    fn new(mut fields: Vec<(Arc<str>, FieldDigests)>) -> Fields {
        match fields.pop() {
            Some((name, d)) if fields.is_empty() => Fields::One(name, d),
            Some(last) => {
                fields.push(last);
                Fields::Many(fields.into_boxed_slice())
            }
            None => Fields::Many(Box::default()),
        }
    }

    fn get(&self, name: &str) -> Option<FieldDigests> {
        match self {
            Fields::One(n, d) => (**n == *name).then_some(*d),
            Fields::Many(all) => all.iter().find(|(n, _)| **n == *name).map(|(_, d)| *d),
        }
    }
}

/// What is known of a target's current version.
#[derive(Debug, Clone)]
enum Current {
    /// Nothing: it is read when a key is compared with it.
    Unread,
    /// As the part `vault` read it, before the cluster was ([`Early`]): a key that does not hold
    /// it is compared again with Vault as it is then.
    Early(VersionRead),
    /// As read for comparing, or read early and held by a key.
    Read(VersionRead),
}

/// One field's value digested as each decoding delivers it (`None`: that decoding fails).
#[derive(Debug, Clone, Copy)]
struct FieldDigests {
    raw: Digest,
    base64: Option<Digest>,
    base64_url: Option<Digest>,
}

impl FieldDigests {
    fn of(digester: &Digester, value: &str) -> FieldDigests {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        use base64::Engine as _;
        let decoded = |engine: &base64::engine::GeneralPurpose| {
            engine
                .decode(value.as_bytes())
                .ok()
                .map(zeroize::Zeroizing::new)
                .map(|b| digester.of(&b))
        };
        FieldDigests {
            raw: digester.of(value.as_bytes()),
            base64: decoded(&STANDARD),
            base64_url: decoded(&URL_SAFE),
        }
    }

    fn as_delivered(&self, decoding: Decoding) -> Option<Digest> {
        match decoding {
            Decoding::None => Some(self.raw),
            Decoding::Base64 => self.base64,
            Decoding::Base64Url => self.base64_url,
        }
    }
}

/// The current versions the part `vault` read ([`crate::seed::inspect`]), digested as they
/// came, for the [`Compare`] made from it: each path is read from Vault once per run, not once
/// to judge its value and again to compare it.
pub struct Early {
    digester: Digester,
    /// The field names, one copy each.
    names: Mutex<Interner>,
    /// By target index: a run reads nearly every target, so a slot each, in place.
    reads: Mutex<Vec<Current>>,
}

impl Early {
    /// Nothing read yet of `targets` targets; `None` when the OS gives no randomness for the
    /// digest key.
    pub fn new(targets: usize) -> Option<Early> {
        Some(Early {
            digester: Digester::new()?,
            names: Mutex::default(),
            reads: Mutex::new(vec![Current::Unread; targets]),
        })
    }

    /// What target `i`'s current version holds, as read.
    pub fn seen(&self, i: usize, existing: &Existing) {
        let read = VersionRead::of(&self.digester, &self.names, existing);
        if let Ok(mut reads) = self.reads.lock() {
            if let Some(slot) = reads.get_mut(i) {
                *slot = Current::Early(read);
            }
        }
    }
}

/// Compares target Secrets' keys with Vault for one run: its own digest key, and each version
/// read once.
pub struct Compare<'a> {
    vault: &'a Vault,
    mounts: &'a Mounts,
    index: &'a TargetIndex<'a>,
    digester: Digester,
    names: Mutex<Interner>,
    read: Mutex<Versions>,
    /// By target index, what is known of its current version: nearly every path has one, so a
    /// slot each rather than a map entry.
    current: Mutex<Vec<Current>>,
}

/// The older versions read, by (target index, version).
type Versions = HashMap<(usize, u64), VersionRead>;

impl<'a> Compare<'a> {
    /// A comparer over `targets` with what `early` read of them.
    pub fn new(
        vault: &'a Vault,
        mounts: &'a Mounts,
        index: &'a TargetIndex<'a>,
        early: Early,
    ) -> Self {
        Compare {
            vault,
            mounts,
            index,
            digester: early.digester,
            names: early.names,
            read: Mutex::new(HashMap::new()),
            current: early.reads,
        }
    }

    /// The digester the Secrets' values must be digested with.
    pub fn digester(&self) -> &Digester {
        &self.digester
    }

    /// The targets the sources index.
    pub fn targets(&self) -> &'a [Target] {
        self.index.targets()
    }

    /// The targets by the names the cluster's objects give them.
    pub fn index(&self) -> &'a TargetIndex<'a> {
        self.index
    }

    /// Forget what was read (a new poll of `--wait` reads Vault again).
    pub fn forget(&self) {
        if let Ok(mut read) = self.read.lock() {
            read.clear();
        }
        if let Ok(mut current) = self.current.lock() {
            current.fill(Current::Unread);
        }
    }

    /// What the Secret's key, digested as `secret`, holds of `mapping`.
    pub async fn held(&self, mapping: &Mapping, secret: &KeyDigest) -> Held {
        let source = match mapping {
            Mapping::Value(s) => s,
            Mapping::Opaque(why) => return Held::NotCompared(why.clone()),
        };
        let Some(digest) = secret.digest else {
            return Held::NotCompared("the Secret's value is not base64".into());
        };
        // Taken: whatever it proves, the next key compares with the current version.
        let early = match source.version {
            None => self.current.lock().ok().and_then(|mut c| {
                let slot = c.get_mut(source.target)?;
                match std::mem::replace(slot, Current::Unread) {
                    Current::Early(read) => Some(read),
                    other => {
                        *slot = other;
                        None
                    }
                }
            }),
            Some(_) => None,
        };
        if let Some(early) = early {
            let held = self.held_in(source, digest, &early).await;
            if matches!(held, Held::Selected { .. }) {
                // Kept for the keys and parts after this one that read the same path.
                if let Ok(mut c) = self.current.lock() {
                    if let Some(slot @ Current::Unread) = c.get_mut(source.target) {
                        *slot = Current::Read(early);
                    }
                }
                return held;
            }
            // Read before the Secret was: Vault may have moved on since, so not holding it
            // proves nothing yet; the path is compared as it is now.
        }
        let selected = self.version(source.target, source.version).await;
        self.held_in(source, digest, &selected).await
    }

    /// What a key digested as `digest` holds of `source`, whose selected version is `selected`.
    async fn held_in(&self, source: &Source, digest: Digest, selected: &VersionRead) -> Held {
        let (version, created, found) = match selected {
            VersionRead::Fields {
                version,
                created,
                fields,
            } => (*version, *created, fields.get(&source.field)),
            VersionRead::Absent => {
                return Held::NotCompared("the version it selects is not in Vault".into())
            }
            VersionRead::Deleted => {
                return Held::NotCompared("the version it selects is deleted in Vault".into())
            }
            VersionRead::Failed(why) => return Held::NotCompared(why.clone()),
        };
        let Some(field) = found else {
            return Held::NotCompared(format!(
                "field `{}` is not text in Vault (or not there)",
                source.field
            ));
        };
        match field.as_delivered(source.decoding) {
            Some(d) if d == digest => return Held::Selected { version, created },
            Some(_) => {}
            None => return Held::NotCompared("its decoding fails on Vault's value".into()),
        }
        let older = match version {
            Some(v) => self.older_match(source, v, digest).await,
            None => None,
        };
        Held::Other {
            selected: version,
            older,
        }
    }

    /// The newest of the `RECENT` versions before `v` whose value matches.
    async fn older_match(&self, source: &Source, v: u64, digest: Digest) -> Option<u64> {
        for n in (v.saturating_sub(RECENT).max(1)..v).rev() {
            if self.matches(source, n, digest).await == Some(true) {
                return Some(n);
            }
        }
        None
    }

    /// Whether version `n` holds the value digested as `digest`; `None` when not known.
    async fn matches(&self, source: &Source, n: u64, digest: Digest) -> Option<bool> {
        match &self.version(source.target, Some(n)).await {
            VersionRead::Fields { fields, .. } => Some(
                fields
                    .get(&source.field)
                    .and_then(|f| f.as_delivered(source.decoding))
                    .is_some_and(|d| d == digest),
            ),
            VersionRead::Absent => Some(false),
            VersionRead::Deleted | VersionRead::Failed(_) => None,
        }
    }

    /// Since when Vault has had the value the key holds (`held`, of version `version` created at
    /// `created`): the creation of the oldest version with that value. `None` when it cannot be
    /// told (an older version deleted, a read failed, too long a history). A version trimmed by
    /// `max_versions` ends the history.
    pub async fn first_held(
        &self,
        mapping: &Mapping,
        secret: &KeyDigest,
        version: Option<u64>,
        created: Option<OffsetDateTime>,
    ) -> Option<OffsetDateTime> {
        let (Mapping::Value(source), Some(digest)) = (mapping, secret.digest) else {
            return None;
        };
        let mut first = created?;
        let Some(v) = version else {
            // KV v1 keeps no history: the value is as old as the secret's one version.
            return Some(first);
        };
        if v > HISTORY + 1 {
            return None;
        }
        for n in (1..v).rev() {
            match &self.version(source.target, Some(n)).await {
                VersionRead::Fields {
                    fields, created, ..
                } => {
                    let same = fields
                        .get(&source.field)
                        .and_then(|f| f.as_delivered(source.decoding))
                        .is_some_and(|d| d == digest);
                    if same {
                        first = first.min((*created)?);
                    }
                }
                VersionRead::Absent => break,
                VersionRead::Deleted | VersionRead::Failed(_) => return None,
            }
        }
        Some(first)
    }

    /// Version `n` (`None`: the current one) of target `i`, read once per run.
    async fn version(&self, i: usize, n: Option<u64>) -> VersionRead {
        let hit = match n {
            None => self.current.lock().ok().and_then(|c| match c.get(i) {
                Some(Current::Read(read)) => Some(read.clone()),
                _ => None,
            }),
            Some(n) => self.read.lock().ok().and_then(|m| m.get(&(i, n)).cloned()),
        };
        if let Some(hit) = hit {
            return hit;
        }
        let read = self.read_version(i, n).await;
        match n {
            None => {
                if let Ok(mut c) = self.current.lock() {
                    if let Some(slot) = c.get_mut(i) {
                        *slot = Current::Read(read.clone());
                    }
                }
            }
            Some(n) => {
                if let Ok(mut m) = self.read.lock() {
                    m.insert((i, n), read.clone());
                }
            }
        }
        read
    }

    async fn read_version(&self, i: usize, n: Option<u64>) -> VersionRead {
        let Some(t) = self.targets().get(i) else {
            return VersionRead::Failed("not a path of the spec".into());
        };
        let Some(mount) = self.mounts.get(t.mount()) else {
            return VersionRead::Failed(format!("mount `{}` cannot be read", t.mount()));
        };
        match self.vault.kv_read_at(mount, &t.path, n).await {
            Ok(e) => VersionRead::of(&self.digester, &self.names, &e),
            Err(e) => VersionRead::Failed(format!("`{}` cannot be read: {e}", t.full_path())),
        }
    }
}

impl VersionRead {
    /// What a read found, each text field digested with `digester`, named from `names`.
    fn of(digester: &Digester, names: &Mutex<Interner>, existing: &Existing) -> VersionRead {
        let name = |k: &str| names.lock().unwrap_or_else(|p| p.into_inner()).get(k);
        match existing {
            Existing::Present(p) => VersionRead::Fields {
                version: (p.version > 0).then_some(p.version),
                created: p.created_time.as_deref().and_then(|c| {
                    OffsetDateTime::parse(c, &time::format_description::well_known::Rfc3339).ok()
                }),
                fields: Fields::new(
                    p.fields
                        .iter()
                        .filter_map(|(k, v)| match v {
                            FieldValue::Text(s) => {
                                Some((name(k), FieldDigests::of(digester, s.expose_secret())))
                            }
                            FieldValue::NotText(_) => None,
                        })
                        .collect(),
                ),
            },
            Existing::Absent => VersionRead::Absent,
            Existing::Deleted { .. } => VersionRead::Deleted,
        }
    }
}

/// The decoding of an ESO `decodingStrategy`; `None` for one vault-seed does not reproduce
/// (`Auto` guesses by the value's shape).
pub fn eso_decoding(strategy: Option<&str>) -> Option<Decoding> {
    match strategy.unwrap_or("None") {
        "None" | "" => Some(Decoding::None),
        "Base64" => Some(Decoding::Base64),
        "Base64URL" => Some(Decoding::Base64Url),
        _ => None,
    }
}

/// What feeds each key of an ExternalSecret's target Secret, as ESO builds it: `dataFrom`
/// first, then `spec.data` over it (external-secrets `externalsecret_controller_secret.go`,
/// `GetProviderSecretData`), then the template over it (`ApplyTemplate`): a key whose entry is
/// one plain reference to a fetched key holds that key's value, other rendered keys are opaque,
/// and the fetched keys stay only under `mergePolicy: Merge`.
pub fn eso_mappings(
    es: &crate::kube::ExternalSecretInfo,
    index: &TargetIndex<'_>,
    names: &mut Interner,
) -> Vec<(Arc<str>, Mapping)> {
    use crate::kube::DataFrom;
    let targets = index.targets();
    let mut out: Vec<(Arc<str>, Mapping)> = Vec::new();
    let mut put = |key: Arc<str>, m: Mapping| match out.iter_mut().find(|(k, _)| *k == key) {
        Some(e) => e.1 = m,
        None => out.push((key, m)),
    };
    for d in &es.data_from {
        if let DataFrom::Extract {
            reference,
            rewritten: false,
        } = d
        {
            if reference.property.is_some() {
                continue;
            }
            let Some(i) = index.position_of_key(&reference.key) else {
                continue;
            };
            for f in targets[i].fields.iter() {
                let name = names.get(&f.name);
                put(name.clone(), eso_mapping(reference, i, name));
            }
        }
    }
    for r in es.data.iter() {
        let m = match (index.position_of_key(&r.key), &r.property) {
            // Shared by the listing already.
            (Some(i), Some(p)) => eso_mapping(r, i, p.clone()),
            (None, _) => Mapping::Opaque("not a path of the spec".into()),
            (_, None) => Mapping::Opaque("the whole secret, as JSON".into()),
        };
        put(r.secret_key.clone(), m);
    }
    let mut out = templated(es, out, names);
    // Held for every target of a platform until its last part.
    out.shrink_to_fit();
    out
}

/// The keys after ESO's template (`ApplyTemplate`) over the fetched ones `out`.
fn templated(
    es: &crate::kube::ExternalSecretInfo,
    out: Vec<(Arc<str>, Mapping)>,
    names: &mut Interner,
) -> Vec<(Arc<str>, Mapping)> {
    if es.template.is_empty() && !es.template_from {
        return out;
    }
    // A template entry that is one plain reference to a fetched key writes that key's value
    // unchanged; any other text is rendered. The fetched keys stay only when ESO keeps them.
    let mut templated: Vec<(Arc<str>, Mapping)> = Vec::new();
    for t in &es.template {
        let m = t
            .plain
            .as_ref()
            .and_then(|p| out.iter().find(|(k, _)| **k == **p))
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| Mapping::Opaque("rendered by the target's template".into()));
        templated.push((names.get(&t.key), m));
    }
    let mut kept = if es.keeps_fetched { out } else { Vec::new() };
    if es.template_from {
        for (_, m) in &mut kept {
            *m = Mapping::Opaque("the target's `templateFrom` may render it".into());
        }
    }
    for (k, m) in templated {
        match kept.iter_mut().find(|(key, _)| *key == k) {
            Some(e) => e.1 = m,
            None => kept.push((k, m)),
        }
    }
    kept
}

/// One remoteRef's field, as ESO delivers it.
fn eso_mapping(r: &crate::kube::RemoteRef, target: usize, field: Arc<str>) -> Mapping {
    if !r.as_is {
        return Mapping::Opaque("`metadataPolicy` or `conversionStrategy` changes it".into());
    }
    let Some(decoding) = eso_decoding(r.decoding.as_deref()) else {
        return Mapping::Opaque(format!(
            "`decodingStrategy: {}` is not reproduced",
            r.decoding.as_deref().unwrap_or_default()
        ));
    };
    let version = match r.version.as_deref().map(str::parse::<u64>) {
        None => None,
        Some(Ok(v)) => Some(v),
        Some(Err(_)) => return Mapping::Opaque("`remoteRef.version` is not a number".into()),
    };
    Mapping::Value(Source {
        target,
        field,
        version,
        decoding,
    })
}

/// What feeds each key of a VaultStaticSecret's destination Secret, as VSO writes it
/// ([`crate::kube::Transformation::destination_keys`]): a key that is one KV field's value as
/// it is (the field under its own name, or a template that is only a reference to it) is
/// compared; a rendered key is not. `_raw` (the JSON of the whole response) is never compared.
pub fn vso_mappings(
    v: &crate::kube::VaultStaticSecretInfo,
    index: &TargetIndex<'_>,
    names: &mut Interner,
) -> Vec<(Arc<str>, Mapping)> {
    let Some(i) = super::vso::position_of_vss(index, v) else {
        return Vec::new();
    };
    let found = &index.targets()[i];
    let keys = super::vso::expected_keys(v, Some(found));
    keys.keys
        .into_iter()
        .map(|(key, source)| {
            let m = match source {
                crate::kube::KeySource::Field(field) => Mapping::Value(Source {
                    target: i,
                    field: names.get(&field),
                    version: v.pinned_version,
                    decoding: Decoding::None,
                }),
                crate::kube::KeySource::Rendered => {
                    Mapping::Opaque("rendered by the destination's transformation".into())
                }
            };
            (names.get(&key), m)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::{DataFrom, RemoteRef, TemplateEntry};
    use crate::write::replace::tests::target;

    fn remote(secret_key: &str, key: &str, property: Option<&str>) -> RemoteRef {
        RemoteRef {
            secret_key: secret_key.into(),
            key: key.into(),
            property: property.map(Into::into),
            version: None,
            decoding: None,
            as_is: true,
        }
    }

    fn source(target: usize, field: &str) -> Mapping {
        Mapping::Value(Source {
            target,
            field: field.into(),
            version: None,
            decoding: Decoding::None,
        })
    }

    #[test]
    fn each_key_is_fed_as_eso_builds_the_secret() {
        let targets = [
            target("app", "db", &["password", "user"]),
            target("app", "api", &["value"]),
        ];
        let mut es = super::super::eso::tests::es(Some(true), Some(1));
        es.data = vec![
            remote("PASSWORD", "app/dev/db", Some("password")),
            remote("WHOLE", "secret/app/dev/api", None),
            remote("ELSEWHERE", "other/dev/x", Some("value")),
        ]
        .into();
        es.data_from = vec![DataFrom::Extract {
            reference: remote("", "app/dev/db", None),
            rewritten: false,
        }];
        // `spec.data` over `dataFrom`: `user` from the extract, `password` too (no clash).
        let m = eso_mappings(&es, &TargetIndex::new(&targets), &mut Interner::default());
        let get = |k: &str| {
            m.iter()
                .find(|(key, _)| **key == *k)
                .map(|(_, m)| m.clone())
        };
        assert_eq!(get("password"), Some(source(0, "password")));
        assert_eq!(get("user"), Some(source(0, "user")));
        assert_eq!(get("PASSWORD"), Some(source(0, "password")));
        assert!(matches!(get("WHOLE"), Some(Mapping::Opaque(w)) if w.contains("JSON")));
        assert!(matches!(get("ELSEWHERE"), Some(Mapping::Opaque(_))));
        // A pinned version, and the decodings ESO applies; `Auto` guesses, so it is not compared.
        es.data = vec![RemoteRef {
            version: Some("3".into()),
            decoding: Some("Base64URL".into()),
            ..remote("K", "app/dev/api", Some("value"))
        }]
        .into();
        es.data_from.clear();
        assert_eq!(
            eso_mappings(&es, &TargetIndex::new(&targets), &mut Interner::default())[0].1,
            Mapping::Value(Source {
                target: 1,
                field: "value".into(),
                version: Some(3),
                decoding: Decoding::Base64Url,
            })
        );
        for (r, why) in [
            (
                RemoteRef {
                    decoding: Some("Auto".into()),
                    ..remote("K", "app/dev/api", Some("value"))
                },
                "decodingStrategy: Auto",
            ),
            (
                RemoteRef {
                    as_is: false,
                    ..remote("K", "app/dev/api", Some("value"))
                },
                "metadataPolicy",
            ),
        ] {
            es.data = vec![r].into();
            assert!(
                matches!(&eso_mappings(&es, &TargetIndex::new(&targets), &mut Interner::default())[0].1, Mapping::Opaque(w) if w.contains(why))
            );
        }
    }

    #[test]
    fn a_template_writes_its_keys_and_keeps_the_fetched_ones_only_under_merge() {
        let targets = [target("app", "db", &["password", "user"])];
        let mut es = super::super::eso::tests::es(Some(true), Some(1));
        es.data = vec![remote("password", "app/dev/db", Some("password"))].into();
        es.template = vec![
            TemplateEntry {
                key: "DSN".into(),
                reads: vec!["password".into()],
                plain: None,
            },
            TemplateEntry {
                key: "DB_PASSWORD".into(),
                reads: vec!["password".into()],
                plain: Some("password".into()),
            },
        ];
        // `mergePolicy: Replace` (the default): only the template's keys.
        es.keeps_fetched = false;
        let m = eso_mappings(&es, &TargetIndex::new(&targets), &mut Interner::default());
        assert_eq!(m.len(), 2);
        assert!(matches!(&m[0], (k, Mapping::Opaque(_)) if &**k == "DSN"));
        assert_eq!(m[1], ("DB_PASSWORD".into(), source(0, "password")));
        // `Merge`: the fetched keys too.
        es.keeps_fetched = true;
        let m = eso_mappings(&es, &TargetIndex::new(&targets), &mut Interner::default());
        assert_eq!(m.len(), 3);
        assert_eq!(m[0], ("password".into(), source(0, "password")));
    }

    #[test]
    fn a_version_finds_each_field_by_name_however_many_it_has() {
        let digester = Digester::new().expect("randomness");
        let d = |v: &str| FieldDigests::of(&digester, v);
        let one = Fields::new(vec![("password".into(), d("a"))]);
        assert!(matches!(one, Fields::One(..)));
        assert_eq!(one.get("password").map(|f| f.raw), Some(d("a").raw));
        assert!(one.get("user").is_none());
        let two = Fields::new(vec![("password".into(), d("a")), ("user".into(), d("b"))]);
        assert_eq!(two.get("user").map(|f| f.raw), Some(d("b").raw));
        assert_eq!(two.get("password").map(|f| f.raw), Some(d("a").raw));
        assert!(Fields::new(Vec::new()).get("password").is_none());
    }

    #[test]
    fn a_value_is_digested_as_each_decoding_delivers_it() {
        let d = Digester::new().unwrap();
        let f = FieldDigests::of(&d, "aGk_"); // "hi?" in URL-safe base64
        assert_eq!(f.as_delivered(Decoding::None), Some(d.of(b"aGk_")));
        assert_eq!(f.as_delivered(Decoding::Base64Url), Some(d.of(b"hi?")));
        assert_eq!(f.as_delivered(Decoding::Base64), None);
        assert_eq!(eso_decoding(None), Some(Decoding::None));
        assert_eq!(eso_decoding(Some("Base64")), Some(Decoding::Base64));
        assert_eq!(eso_decoding(Some("Auto")), None);
    }
}
