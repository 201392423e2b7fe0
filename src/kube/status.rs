//! What vault-seed reads from ESO objects, and how it is read from their JSON.
//!
//! Reading is kept apart from fetching so it can be tested on the objects real clusters show
//! (`tests/fixtures/eso/`). Rules from ESO's source: the `Ready` condition's `status` is the
//! READY column and its `reason` the STATUS column of `kubectl get`; `refreshTime` only moves on
//! a successful sync; the target Secret is `spec.target.name`, else the ExternalSecret's own name
//! (`status.binding.name` is the one it last wrote).

use std::sync::Arc;

use crate::base::interned::Interner;

use serde::Serialize;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::field::{BadField, FieldProblem};
use super::store::{vault_provider, StoreProblem, VaultStore};
use super::KubeError;

/// The group of every ESO kind.
pub const ESO_GROUP: &str = "external-secrets.io";

/// Which kind of store an ExternalSecret or PushSecret uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum StoreKind {
    /// A namespaced `SecretStore`.
    SecretStore,
    /// A cluster-scoped `ClusterSecretStore`.
    ClusterSecretStore,
}

impl StoreKind {
    /// The Kubernetes kind.
    pub fn kind(self) -> &'static str {
        match self {
            StoreKind::SecretStore => "SecretStore",
            StoreKind::ClusterSecretStore => "ClusterSecretStore",
        }
    }

    /// The resource's plural, as it appears in REST paths.
    pub fn plural(self) -> &'static str {
        match self {
            StoreKind::SecretStore => "secretstores",
            StoreKind::ClusterSecretStore => "clustersecretstores",
        }
    }

    /// Read a `secretStoreRef.kind`; ESO's default when it is absent is `SecretStore`.
    pub fn from_ref_kind(kind: Option<&str>) -> Option<StoreKind> {
        match kind {
            None | Some("SecretStore") => Some(StoreKind::SecretStore),
            Some("ClusterSecretStore") => Some(StoreKind::ClusterSecretStore),
            Some(_) => None,
        }
    }
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind())
    }
}

/// An ExternalSecret's `spec.secretStoreRef`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreRef {
    /// `SecretStore` or `ClusterSecretStore`; `None` for a kind ESO does not define here
    /// (`kind_name` keeps what was written).
    pub kind: Option<StoreKind>,
    /// The kind as written in the object (`SecretStore` when it was left out).
    pub kind_name: String,
    /// The store's name.
    pub name: String,
}

/// One `spec.data[]` entry of an ExternalSecret: which Vault path and field feed which key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteRef {
    /// The key in the target Secret (`secretKey`); shared, as a platform's ExternalSecrets
    /// name a few keys many times.
    pub secret_key: Arc<str>,
    /// `remoteRef.key`: the path below the store's mount.
    pub key: Box<str>,
    /// `remoteRef.property`: the field of the KV secret; `None` takes the whole secret.
    /// Shared, as `secret_key`.
    pub property: Option<Arc<str>>,
    /// `remoteRef.version`: a pinned KV v2 version; `None` reads the current one.
    pub version: Option<Box<str>>,
    /// `remoteRef.decodingStrategy` as written (`None`, `Base64`, `Base64URL`, `Auto`); `None`
    /// when left out (ESO's default: no decoding).
    pub decoding: Option<Box<str>>,
    /// `metadataPolicy` and `conversionStrategy` are ESO's defaults (`None`, `Default`): ESO
    /// delivers the field's value itself, not its metadata nor a conversion of it.
    pub as_is: bool,
}

/// One `spec.dataFrom[]` entry of an ExternalSecret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum DataFrom {
    /// `extract`: every field of one path becomes a key (renamed when `rewrite` is set).
    Extract {
        /// The path (`remoteRef.key` shape), its property, version and decoding.
        reference: RemoteRef,
        /// Whether `rewrite` renames the keys.
        rewritten: bool,
    },
    /// `find`: paths chosen by ESO (by name or tags); vault-seed does not judge them.
    Find,
    /// `sourceRef` (a generator or another store): not read from Vault through the spec.
    SourceRef,
    /// None of the above (an entry ESO would reject).
    Empty,
}

/// One `spec.target.template.data` entry: a key of the target Secret and the keys of the
/// fetched data its template text reads (`.key`, `index . "key"`); the text itself is not held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TemplateEntry {
    /// The key of the target Secret.
    pub key: String,
    /// Names the template's actions read from the fetched data.
    pub reads: Vec<String>,
    /// The fetched key whose value the entry is, when its text is one plain reference to it
    /// and nothing else (`{{ .password }}`): ESO then writes that value unchanged.
    pub plain: Option<String>,
}

/// The `Ready` condition of an ESO object, as `kubectl get` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ReadyCondition {
    /// `status: "True"` / `"False"`; `None` when there is no `Ready` condition or it is
    /// `Unknown`.
    pub ready: Option<bool>,
    /// `SecretSynced`, `SecretSyncedError`, `Synced`, `Errored`, `Valid`...
    pub reason: Option<String>,
    /// ESO's message (generic for ExternalSecrets: the cause is in Warning events).
    pub message: Option<String>,
    /// When the condition last changed.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_transition_time: Option<OffsetDateTime>,
}

/// What vault-seed needs to know about one ExternalSecret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExternalSecretInfo {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The API version that answered: `external-secrets.io/v1` or `external-secrets.io/v1beta1`.
    pub api_version: String,
    /// The `Ready` condition: status, reason (`SecretSynced`, `SecretSyncedError`...), message, when it last changed (flattened in JSON).
    #[serde(flatten)]
    pub condition: ReadyCondition,
    /// `status.refreshTime`: the last successful sync.
    #[serde(with = "time::serde::rfc3339::option")]
    pub refresh_time: Option<OffsetDateTime>,
    /// `status.syncedResourceVersion`.
    pub synced_resource_version: Option<String>,
    /// `metadata.generation`: the spec's version the API server counts.
    pub generation: Option<i64>,
    /// The generation ESO last synced: the number before the `-` of `syncedResourceVersion`
    /// (ESO writes `<metadata.generation>-<hash of labels and annotations>`).
    pub synced_generation: Option<i64>,
    /// `metadata.deletionTimestamp`, as written: the object is being deleted.
    pub deletion_timestamp: Option<String>,
    /// The `Ready` conditions after the first, which is `condition` (ESO keeps one; more than
    /// one is not its doing).
    pub other_ready_conditions: Vec<ReadyCondition>,
    /// `spec.dataFrom[]`.
    pub data_from: Vec<DataFrom>,
    /// `spec.target.template.data`, by key; empty without a template.
    pub template: Vec<TemplateEntry>,
    /// ESO keeps the fetched keys beside the template's ([`crate::model::producers::keeps_fetched_keys`]):
    /// no template, `mergePolicy: Merge`, or a template with neither `data` nor `templateFrom`.
    pub keeps_fetched: bool,
    /// `spec.target.template.templateFrom` has entries: keys only ESO knows.
    pub template_from: bool,
    /// `spec.target.template.type`, when set: the type ESO gives the target Secret.
    pub template_type: Option<String>,
    /// `spec.refreshPolicy` (`Periodic`, `OnChange`, `CreatedOnce`), when set.
    pub refresh_policy: Option<String>,
    /// Fields missing or not of their type.
    pub bad_fields: Vec<BadField>,
    /// The target Secret: `spec.target.name`, else `name`.
    pub target_secret: String,
    /// `spec.secretStoreRef`, when set.
    pub store_ref: Option<StoreRef>,
    /// `spec.data[]`: shared, as every part that reads an ExternalSecret takes a copy of it.
    pub data: Arc<[RemoteRef]>,
    /// Whether `spec.dataFrom` has entries (their keys are only known to ESO).
    pub has_data_from: bool,
}

/// What vault-seed needs to know about one PushSecret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PushSecretInfo {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The API version that answered (`external-secrets.io/v1alpha1`).
    pub api_version: String,
    /// The `Ready` condition: status, reason (`Synced`, `Errored`, `SourceDeleted`), message (for `Errored`, the provider's error), when it last changed (flattened in JSON).
    #[serde(flatten)]
    pub condition: ReadyCondition,
}

/// What vault-seed needs to know about one SecretStore or ClusterSecretStore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecretStoreInfo {
    /// `SecretStore` or `ClusterSecretStore`.
    pub kind: StoreKind,
    /// Its namespace; `None` for a ClusterSecretStore.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// The API version that answered.
    pub api_version: String,
    /// The `Ready` condition: status, reason (`Valid`, `ValidationUnknown`, `InvalidProviderConfig`), message, when it last changed (flattened in JSON).
    #[serde(flatten)]
    pub condition: ReadyCondition,
    /// Its `spec.provider.vault`, or why it cannot be read (carried, not an error: one bad store
    /// is that store's problem, not the whole part's).
    pub vault: Result<VaultStore, StoreProblem>,
}

/// One Warning event about an object (core/v1 Event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventInfo {
    /// `UpdateFailed` and the like.
    pub reason: Option<String>,
    /// The event's message: for ExternalSecrets, the provider's real error.
    pub message: Option<String>,
    /// When it was last seen (`lastTimestamp`, else the series' or the event's own time).
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_timestamp: Option<OffsetDateTime>,
    /// How many times it happened (at least 1).
    pub count: u32,
}

/// An object's `metadata.name` and `metadata.namespace` (empty when absent).
pub(crate) fn name_and_namespace(obj: &Value) -> (String, String) {
    let at = |p| str_at(obj, p).unwrap_or_default().to_string();
    (at("/metadata/name"), at("/metadata/namespace"))
}

/// `namespace/name`, the way errors name an object.
pub(crate) fn object_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn time_at(
    v: &Value,
    pointer: &'static str,
    kind: &'static str,
    object: &str,
) -> Result<Option<OffsetDateTime>, KubeError> {
    match str_at(v, pointer) {
        None => Ok(None),
        Some(s) => OffsetDateTime::parse(s, &Rfc3339)
            .map(Some)
            .map_err(|_| KubeError::BadField {
                kind,
                object: object.to_string(),
                field: pointer,
                value: crate::base::text::for_terminal(s),
            }),
    }
}

/// Read the `Ready` condition of an ESO object (`status.conditions[type=Ready]`).
pub fn ready_condition(
    obj: &Value,
    kind: &'static str,
    object: &str,
) -> Result<ReadyCondition, KubeError> {
    Ok(condition(obj, "Ready", kind, object)?.unwrap_or_default())
}

/// The conditions of type `type_`, in order.
fn conditions_of<'a>(obj: &'a Value, type_: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// Read the condition of type `type_` (`Ready`, VSO's `Healthy`, `SecretSynced`); `None` when
/// the object has none. Its status is in [`ReadyCondition::ready`] whatever the type.
pub fn condition(
    obj: &Value,
    type_: &str,
    kind: &'static str,
    object: &str,
) -> Result<Option<ReadyCondition>, KubeError> {
    conditions_of(obj, type_)
        .next()
        .map(|c| read_condition(c, kind, object))
        .transpose()
}

fn read_condition(
    cond: &Value,
    kind: &'static str,
    object: &str,
) -> Result<ReadyCondition, KubeError> {
    let ready = match cond.get("status").and_then(Value::as_str) {
        Some("True") => Some(true),
        Some("False") => Some(false),
        _ => None,
    };
    // Text from the cluster is capped where it enters (control characters are removed where
    // it is shown to people).
    let text = |s: &str| crate::base::text::cap(s).into_owned();
    Ok(ReadyCondition {
        ready,
        reason: str_at(cond, "/reason").map(text),
        message: str_at(cond, "/message").map(text),
        last_transition_time: time_at(cond, "/lastTransitionTime", kind, object)?,
    })
}

/// Reads fields of one object, keeping each that is missing (where required) or not of its type
/// as a [`BadField`] rather than taking it for empty.
#[derive(Default)]
struct FieldReader {
    bad: Vec<BadField>,
}

impl FieldReader {
    fn bad(&mut self, field: String, problem: FieldProblem) {
        self.bad.push(BadField::new(&field, problem));
    }

    /// A string at `base` + `pointer`; `required` makes its absence a bad field too.
    fn string(&mut self, v: &Value, base: &str, pointer: &str, required: bool) -> Option<String> {
        match v.pointer(pointer) {
            Some(Value::String(s)) => Some(s.clone()),
            None | Some(Value::Null) if !required => None,
            None | Some(Value::Null) => {
                self.bad(format!("{base}{pointer}"), FieldProblem::Missing);
                None
            }
            Some(_) => {
                self.bad(
                    format!("{base}{pointer}"),
                    FieldProblem::NotA {
                        want: "a string",
                        found: None,
                    },
                );
                None
            }
        }
    }

    /// The entries of an array at `pointer`, none when it is absent.
    fn array<'a>(&mut self, v: &'a Value, pointer: &str) -> &'a [Value] {
        match v.pointer(pointer) {
            Some(Value::Array(a)) => a,
            None | Some(Value::Null) => &[],
            Some(_) => {
                self.bad(
                    pointer.to_string(),
                    FieldProblem::NotA {
                        want: "a list",
                        found: None,
                    },
                );
                &[]
            }
        }
    }

    /// A `remoteRef` (or `dataFrom[].extract`) at `base`, for the Secret key `secret_key`.
    fn remote_ref(
        &mut self,
        r: &Value,
        base: &str,
        secret_key: Arc<str>,
        names: &mut Interner,
    ) -> RemoteRef {
        let text = |s: Option<String>| s.map(String::into_boxed_str);
        RemoteRef {
            secret_key,
            key: self
                .string(r, base, "/key", true)
                .unwrap_or_default()
                .into(),
            property: self
                .string(r, base, "/property", false)
                .map(|p| names.get(&p)),
            version: text(self.string(r, base, "/version", false)),
            decoding: text(self.string(r, base, "/decodingStrategy", false)),
            as_is: matches!(
                self.string(r, base, "/metadataPolicy", false).as_deref(),
                None | Some("None")
            ) && matches!(
                self.string(r, base, "/conversionStrategy", false)
                    .as_deref(),
                None | Some("Default")
            ),
        }
    }

    /// `spec.data[]`.
    fn data(&mut self, obj: &Value, names: &mut Interner) -> Vec<RemoteRef> {
        let entries = self.array(obj, "/spec/data");
        let mut out = Vec::with_capacity(entries.len());
        for (i, d) in entries.iter().enumerate() {
            let base = format!("/spec/data/{i}");
            let secret_key = names.get(
                &self
                    .string(d, &base, "/secretKey", true)
                    .unwrap_or_default(),
            );
            match d.get("remoteRef") {
                Some(r @ Value::Object(_)) => {
                    let at = format!("{base}/remoteRef");
                    let reference = self.remote_ref(r, &at, secret_key, names);
                    out.push(reference);
                }
                // A generator's or another store's value (`sourceRef`): not a path of the spec.
                _ if d.get("sourceRef").is_some() => {}
                _ => self.bad(
                    format!("{base}/remoteRef"),
                    FieldProblem::MissingOrNotA("an object"),
                ),
            }
        }
        out
    }

    /// `spec.dataFrom[]`.
    fn data_from(&mut self, obj: &Value, names: &mut Interner) -> Vec<DataFrom> {
        let entries = self.array(obj, "/spec/dataFrom");
        let mut out = Vec::with_capacity(entries.len());
        for (i, d) in entries.iter().enumerate() {
            let base = format!("/spec/dataFrom/{i}");
            out.push(if d.get("sourceRef").is_some_and(|v| !v.is_null()) {
                DataFrom::SourceRef
            } else if let Some(e) = d.get("extract").filter(|v| !v.is_null()) {
                let at = format!("{base}/extract");
                let reference = self.remote_ref(e, &at, names.get(""), names);
                let rewritten = d
                    .get("rewrite")
                    .and_then(Value::as_array)
                    .is_some_and(|r| !r.is_empty());
                DataFrom::Extract {
                    reference,
                    rewritten,
                }
            } else if d.get("find").is_some_and(|v| !v.is_null()) {
                DataFrom::Find
            } else {
                DataFrom::Empty
            });
        }
        out
    }

    /// `spec.target.template.data`: each key and the fetched keys its text reads.
    fn template(&mut self, obj: &Value) -> Vec<TemplateEntry> {
        const AT: &str = "/spec/target/template/data";
        let entries = match obj.pointer(AT) {
            Some(Value::Object(m)) => m,
            None | Some(Value::Null) => return Vec::new(),
            Some(_) => {
                self.bad(
                    AT.into(),
                    FieldProblem::NotA {
                        want: "a map",
                        found: None,
                    },
                );
                return Vec::new();
            }
        };
        let mut out = Vec::with_capacity(entries.len());
        for (key, text) in entries {
            match text.as_str() {
                Some(text) => out.push(TemplateEntry {
                    key: key.clone(),
                    reads: template_reads(text),
                    plain: plain_reference(text),
                }),
                None => self.bad(
                    format!("{AT}/{key}"),
                    FieldProblem::NotA {
                        want: "a string",
                        found: None,
                    },
                ),
            }
        }
        out
    }

    /// `metadata.generation` and the generation in `status.syncedResourceVersion`.
    fn generations(&mut self, obj: &Value, synced: Option<&str>) -> (Option<i64>, Option<i64>) {
        let generation = match obj.pointer("/metadata/generation") {
            Some(v) => v.as_i64().or_else(|| {
                self.bad(
                    "/metadata/generation".into(),
                    FieldProblem::NotA {
                        want: "a number",
                        found: None,
                    },
                );
                None
            }),
            None => None,
        };
        // ESO writes `<generation>-<hash>` (`pkg/controllers/util/util.go`, `GetResourceVersion`).
        let synced_generation = synced.and_then(|s| {
            let parsed = s.split_once('-').and_then(|(g, _)| g.parse::<i64>().ok());
            if parsed.is_none() {
                self.bad(
                    "/status/syncedResourceVersion".into(),
                    FieldProblem::NotForm("`<generation>-<hash>`"),
                );
            }
            parsed
        });
        (generation, synced_generation)
    }
}

/// The fetched key a template text is exactly one plain reference to (`{{ .key }}`, spaces
/// and Go's `{{-`/`-}}` trims allowed, nothing around it).
pub fn plain_reference(text: &str) -> Option<String> {
    let inner = text.strip_prefix("{{")?.strip_suffix("}}")?;
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let inner = inner.strip_suffix('-').unwrap_or(inner).trim();
    let name = inner.strip_prefix('.')?;
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then(|| name.to_string())
}

/// The names a Go template's actions (`{{ ... }}`) read from the data: `.name` (not a field of
/// something else: `.a.b` reads `a`) and quoted strings (`index . "name"`).
pub fn template_reads(text: &str) -> Vec<String> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut reads = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let close = after.find("}}").unwrap_or(after.len());
        let action = &after[..close];
        let mut prev = ' ';
        let mut chars = action.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '.' && !ident(prev) && prev != '.' && prev != ')' {
                let name: String = action[i + 1..].chars().take_while(|c| ident(*c)).collect();
                if !name.is_empty() {
                    reads.push(name);
                }
            } else if c == '"' || c == '`' {
                let body: String = action[i + 1..].chars().take_while(|d| *d != c).collect();
                for _ in 0..body.chars().count() + 1 {
                    chars.next();
                }
                reads.push(body);
                prev = c;
                continue;
            }
            prev = c;
        }
        rest = &after[(close + 2).min(after.len())..];
    }
    reads.sort();
    reads.dedup();
    reads
}

/// Read an ExternalSecret (its whole JSON: metadata, spec, status).
pub fn external_secret_info(
    obj: &Value,
    api_version: &str,
) -> Result<ExternalSecretInfo, KubeError> {
    external_secret_info_in(obj, api_version, &mut Interner::default())
}

/// [`external_secret_info`], its Secret keys and fields named from `names` (one copy of each
/// for a whole listing).
pub fn external_secret_info_in(
    obj: &Value,
    api_version: &str,
    names: &mut Interner,
) -> Result<ExternalSecretInfo, KubeError> {
    const KIND: &str = "ExternalSecret";
    let (name, namespace) = name_and_namespace(obj);
    let object = object_name(Some(&namespace), &name);
    let mut ready_conditions =
        conditions_of(obj, "Ready").map(|c| read_condition(c, KIND, &object));
    let cond = ready_conditions.next().transpose()?.unwrap_or_default();
    let other_ready_conditions = ready_conditions.collect::<Result<Vec<_>, _>>()?;
    // The Secret ESO writes now: `spec.target.name`, else its own name (external-secrets
    // `externalsecret_controller.go`, `Reconcile`: "the target secret name defaults to the
    // ExternalSecret name"). `status.binding` names the one it last wrote, which lags a rename.
    let mut fields = FieldReader::default();
    let target_secret = fields
        .string(obj, "", "/spec/target/name", false)
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| name.clone());
    let store_ref = obj.pointer("/spec/secretStoreRef").and_then(|r| {
        let name = r.get("name").and_then(Value::as_str)?;
        let kind_name = r.get("kind").and_then(Value::as_str);
        Some(StoreRef {
            kind: StoreKind::from_ref_kind(kind_name),
            kind_name: kind_name.unwrap_or("SecretStore").to_string(),
            name: name.to_string(),
        })
    });
    let synced_resource_version = fields.string(obj, "", "/status/syncedResourceVersion", false);
    let (generation, synced_generation) =
        fields.generations(obj, synced_resource_version.as_deref());
    let deletion_timestamp = fields
        .string(obj, "", "/metadata/deletionTimestamp", false)
        .map(|t| crate::base::text::cap(&t).into_owned());
    let data = fields.data(obj, names).into();
    let data_from = fields.data_from(obj, names);
    let template = fields.template(obj);
    let template_obj = obj.pointer("/spec/target/template");
    let keeps_fetched = crate::model::producers::keeps_fetched_keys(template_obj);
    let template_from = template_obj
        .and_then(|t| t.get("templateFrom"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let refresh_policy = fields.string(obj, "", "/spec/refreshPolicy", false);
    let template_type = template_obj
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(|t| crate::base::text::cap(t).into_owned());
    Ok(ExternalSecretInfo {
        keeps_fetched,
        template_from,
        template_type,
        refresh_policy,
        refresh_time: time_at(obj, "/status/refreshTime", KIND, &object)?,
        synced_resource_version,
        generation,
        synced_generation,
        deletion_timestamp,
        other_ready_conditions,
        has_data_from: !data_from.is_empty(),
        data_from,
        template,
        bad_fields: fields.bad,
        namespace,
        name,
        api_version: api_version.to_string(),
        condition: cond,
        target_secret,
        store_ref,
        data,
    })
}

/// Read a PushSecret.
pub fn push_secret_info(obj: &Value, api_version: &str) -> Result<PushSecretInfo, KubeError> {
    let name = str_at(obj, "/metadata/name")
        .unwrap_or_default()
        .to_string();
    let namespace = str_at(obj, "/metadata/namespace")
        .unwrap_or_default()
        .to_string();
    let cond = ready_condition(obj, "PushSecret", &object_name(Some(&namespace), &name))?;
    Ok(PushSecretInfo {
        namespace,
        name,
        api_version: api_version.to_string(),
        condition: cond,
    })
}

/// Read a SecretStore or ClusterSecretStore.
pub fn secret_store_info(
    obj: &Value,
    kind: StoreKind,
    api_version: &str,
) -> Result<SecretStoreInfo, KubeError> {
    let name = str_at(obj, "/metadata/name")
        .unwrap_or_default()
        .to_string();
    let namespace = match kind {
        StoreKind::SecretStore => str_at(obj, "/metadata/namespace").map(str::to_string),
        StoreKind::ClusterSecretStore => None,
    };
    let cond = ready_condition(obj, kind.kind(), &object_name(namespace.as_deref(), &name))?;
    Ok(SecretStoreInfo {
        kind,
        namespace,
        name,
        api_version: api_version.to_string(),
        condition: cond,
        vault: vault_provider(obj),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Fixture 02 (okdp docs, Vault KV v2, Ready=True), as JSON.
    fn okdp_ready() -> Value {
        json!({
            "apiVersion": "external-secrets.io/v1beta1",
            "kind": "ExternalSecret",
            "metadata": {"name": "app-secret-example", "namespace": "demo", "generation": 2},
            "spec": {
                "data": [{"remoteRef": {"conversionStrategy": "Default", "decodingStrategy": "None",
                          "key": "example-secret", "metadataPolicy": "None"}, "secretKey": "secret_key"}],
                "refreshInterval": "1h",
                "secretStoreRef": {"kind": "SecretStore", "name": "vault-main"},
                "target": {"creationPolicy": "Owner", "deletionPolicy": "Retain", "name": "app-secret-example"}
            },
            "status": {
                "binding": {"name": "app-secret-example"},
                "conditions": [{"lastTransitionTime": "2026-09-03T13:53:45Z", "message": "secret synced",
                                "reason": "SecretSynced", "status": "True", "type": "Ready"}],
                "refreshTime": "2026-09-03T13:53:45Z",
                "syncedResourceVersion": "2-2f2c636d06132f67992c15a1daeb0a5f"
            }
        })
    }

    #[test]
    fn reads_a_ready_external_secret() {
        let info = external_secret_info(&okdp_ready(), "external-secrets.io/v1beta1").unwrap();
        assert_eq!(info.condition.ready, Some(true));
        assert_eq!(info.condition.reason.as_deref(), Some("SecretSynced"));
        assert_eq!(info.condition.message.as_deref(), Some("secret synced"));
        assert_eq!(
            info.refresh_time.map(|t| t.unix_timestamp()),
            Some(1_788_443_625)
        );
        assert_eq!(info.target_secret, "app-secret-example");
        assert_eq!(
            info.store_ref,
            Some(StoreRef {
                kind: Some(StoreKind::SecretStore),
                kind_name: "SecretStore".into(),
                name: "vault-main".into()
            })
        );
        assert_eq!(
            info.data.to_vec(),
            vec![RemoteRef {
                secret_key: "secret_key".into(),
                key: "example-secret".into(),
                property: None,
                version: None,
                decoding: Some("None".into()),
                as_is: true,
            }]
        );
        assert!(!info.has_data_from);
        assert_eq!(
            info.synced_resource_version.as_deref(),
            Some("2-2f2c636d06132f67992c15a1daeb0a5f")
        );
    }

    #[test]
    fn target_falls_back_to_spec_then_to_own_name() {
        let mut es = okdp_ready();
        es["status"].as_object_mut().unwrap().remove("binding");
        es["spec"]["target"]["name"] = json!("from-spec");
        let info = external_secret_info(&es, "v").unwrap();
        assert_eq!(info.target_secret, "from-spec");

        es["spec"].as_object_mut().unwrap().remove("target");
        let info = external_secret_info(&es, "v").unwrap();
        assert_eq!(info.target_secret, "app-secret-example");
    }

    #[test]
    fn store_kind_defaults_to_secret_store_and_keeps_unknown_kinds() {
        let mut es = okdp_ready();
        es["spec"]["secretStoreRef"] = json!({"name": "vault"});
        let r = external_secret_info(&es, "v").unwrap().store_ref.unwrap();
        assert_eq!(r.kind, Some(StoreKind::SecretStore));
        es["spec"]["secretStoreRef"] = json!({"name": "vault", "kind": "Provider"});
        let r = external_secret_info(&es, "v").unwrap().store_ref.unwrap();
        assert_eq!((r.kind, r.kind_name.as_str()), (None, "Provider"));
    }

    #[test]
    fn condition_without_type_is_not_taken_for_ready() {
        // Fixture 04 as pasted: the condition lost its `type` and `status` lines.
        let es = json!({"metadata": {"name": "x", "namespace": "n"}, "status": {"conditions": [
            {"lastTransitionTime": "2023-02-08T16:54:55Z",
             "message": "could not get secret data from provider", "reason": "SecretSyncedError"}]}});
        let info = external_secret_info(&es, "v").unwrap();
        assert_eq!((info.condition.ready, info.condition.reason), (None, None));
        assert_eq!(info.target_secret, "x");
    }

    #[test]
    fn unknown_status_and_missing_status_read_as_none() {
        let es = json!({"metadata": {"name": "x", "namespace": "n"}, "status": {"conditions": [
            {"type": "Ready", "status": "Unknown", "reason": "Pending"}]}});
        let info = external_secret_info(&es, "v").unwrap();
        assert_eq!(info.condition.ready, None);
        assert_eq!(info.condition.reason.as_deref(), Some("Pending"));
        let fresh = json!({"metadata": {"name": "x", "namespace": "n"}, "spec": {"dataFrom": [{"extract": {"key": "k"}}]}});
        let info = external_secret_info(&fresh, "v").unwrap();
        assert_eq!((info.condition.ready, info.refresh_time), (None, None));
        assert!(info.has_data_from);
    }

    #[test]
    fn a_bad_refresh_time_is_an_error_naming_the_field() {
        let mut es = okdp_ready();
        es["status"]["refreshTime"] = json!("yesterday");
        let err = external_secret_info(&es, "v").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`ExternalSecret` `demo/app-secret-example`: field `/status/refreshTime` is not an RFC 3339 time: `yesterday`"
        );
    }

    #[test]
    fn reads_push_secret_errored_and_store_valid() {
        let ps = json!({"metadata": {"name": "p", "namespace": "n"}, "status": {"conditions": [{
            "lastTransitionTime": "2023-05-12T13:28:05Z",
            "message": "set secret failed: could not write remote ref token to target secretstore vault-backend",
            "reason": "Errored", "status": "False", "type": "Ready"}]}});
        let p = push_secret_info(&ps, "external-secrets.io/v1alpha1").unwrap();
        assert_eq!(
            (p.condition.ready, p.condition.reason.as_deref()),
            (Some(false), Some("Errored"))
        );
        assert!(p
            .condition
            .message
            .unwrap()
            .starts_with("set secret failed"));

        let css = json!({"metadata": {"name": "vault"}, "status": {"conditions": [{
            "lastTransitionTime": "2025-12-19T18:47:43Z", "message": "store validated",
            "reason": "Valid", "status": "True", "type": "Ready"}]}});
        let s = secret_store_info(
            &css,
            StoreKind::ClusterSecretStore,
            "external-secrets.io/v1",
        )
        .unwrap();
        assert_eq!(
            (
                s.condition.ready,
                s.condition.reason.as_deref(),
                s.namespace
            ),
            (Some(true), Some("Valid"), None)
        );
    }

    #[test]
    fn reads_generations_conditions_refs_data_from_and_template() {
        let mut es = okdp_ready();
        es["metadata"]["deletionTimestamp"] = json!("2026-09-04T00:00:00Z");
        es["spec"]["data"][0]["remoteRef"]["version"] = json!("3");
        es["spec"]["dataFrom"] = json!([
            {"extract": {"key": "ask/x", "property": "p"}, "rewrite": [{"regexp": {}}]},
            {"find": {"name": {"regexp": ".*"}}},
            {"sourceRef": {"generatorRef": {"kind": "Password", "name": "p"}}},
            {}
        ]);
        es["spec"]["target"]["template"] = json!({"data": {
            "secret_key": "{{ .secret_key | upper }}",
            "url": "postgres://u:{{ index . \"db-pass\" }}@h/{{ .a.b }}",
            "static": "fixed text",
        }});
        let info = external_secret_info(&es, "v").unwrap();
        assert_eq!(
            (info.generation, info.synced_generation),
            (Some(2), Some(2))
        );
        assert_eq!(
            info.deletion_timestamp.as_deref(),
            Some("2026-09-04T00:00:00Z")
        );
        assert!(info.other_ready_conditions.is_empty());
        assert_eq!(info.data[0].version.as_deref(), Some("3"));
        assert!(matches!(
            &info.data_from[..],
            [
                DataFrom::Extract {
                    rewritten: true,
                    ..
                },
                DataFrom::Find,
                DataFrom::SourceRef,
                DataFrom::Empty
            ]
        ));
        let reads: Vec<(&str, Vec<&str>)> = info
            .template
            .iter()
            .map(|t| (t.key.as_str(), t.reads.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            reads,
            [
                ("secret_key", vec!["secret_key"]),
                ("static", vec![]),
                ("url", vec!["a", "db-pass"]),
            ]
        );
        assert!(info.bad_fields.is_empty());
    }

    #[test]
    fn malformed_fields_are_named_not_taken_for_empty() {
        let mut es = okdp_ready();
        es["status"]["syncedResourceVersion"] = json!("abc");
        es["spec"]["data"][0]["remoteRef"]["key"] = json!(7);
        es["spec"]["data"][0]["remoteRef"]["property"] = json!(["x"]);
        es["spec"]["data"]
            .as_array_mut()
            .unwrap()
            .push(json!({"remoteRef": {"key": "k"}}));
        es["spec"]["target"]["template"] = json!({"data": {"k": 1}});
        let info = external_secret_info(&es, "v").unwrap();
        let problems: Vec<String> = info
            .bad_fields
            .iter()
            .map(|b| b.problem.to_string())
            .collect();
        let bad: Vec<(&str, &str)> = info
            .bad_fields
            .iter()
            .zip(&problems)
            .map(|(b, p)| (b.field.as_str(), p.as_str()))
            .collect();
        assert_eq!(
            bad,
            [
                (
                    "/status/syncedResourceVersion",
                    "is not `<generation>-<hash>`"
                ),
                ("/spec/data/0/remoteRef/key", "is not a string"),
                ("/spec/data/0/remoteRef/property", "is not a string"),
                ("/spec/data/1/secretKey", "is missing"),
                ("/spec/target/template/data/k", "is not a string"),
            ]
        );
        assert_eq!(info.synced_generation, None);
    }
}
