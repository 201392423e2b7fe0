//! The cluster, read through kube-rs as kubectl would read it: what ESO, VSO, Argo CD and the
//! kubelet wrote, for `verify`, `audit`, `import` and the readers `set`/`rotate` name.
//!
//! [`Cluster::connect`] finds the cluster like kubectl (`--kubeconfig`, `KUBECONFIG`,
//! `~/.kube/config`, in-cluster) and then answers questions about its objects: ExternalSecrets,
//! PushSecrets and stores (their `Ready` condition, `refreshTime`, the Warning events that hold
//! the provider's real error); VaultStaticSecrets, VaultAuths and VaultConnections; Argo CD's
//! Applications and argocd-cm; the workloads, ReplicaSets and pods that read a Secret, and the
//! controllers that restart them. It only reads, except [`Cluster::force_sync`] and the
//! restarts `verify --restart` asks for, the opt-in writes.
//!
//! ESO kinds are read as dynamic objects, asking `external-secrets.io/v1` first and falling back
//! to `v1beta1` when the cluster does not serve v1 (ESO before 0.16, or a chart that re-enables
//! v1beta1 only). Secret values never leave this module: a Secret's keys and, for `verify`'s
//! delivery check, HMAC digests of its values are returned, except the one key
//! [`Cluster::secret_value`] reads for `import`, as a [`SecretString`].

mod argocd;
mod config;
mod controllers;
mod error;
mod field;
mod list;
pub mod names;
mod pager;
mod reads;
pub mod selector;
mod status;
mod store;
mod value;
mod vso;
mod vso_transformation;
mod workloads;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use ::kube::api::{
    Api, ApiResource, DynamicObject, GetParams, GroupVersionKind, ListParams, Patch, PatchParams,
};
use ::kube::core::{ErrorResponse, Request};
use ::kube::{Client, Resource};
use k8s_openapi::api::core::v1::{Event, Secret};
use secrecy::SecretString;
use time::OffsetDateTime;

pub use argocd::{AppLookup, AppResource, ApplicationInfo, OperationInfo, ARGOCD_GROUP};
pub use controllers::{deployment_info, ContainerInfo, DeploymentInfo, EnvSource};
pub use error::KubeError;
pub use field::{BadField, FieldProblem};
pub use list::{Listed, Unreadable};
pub use pager::PAGE_SIZE;
pub use reads::ReadKind;
pub use status::{
    template_reads, DataFrom, EventInfo, ExternalSecretInfo, PushSecretInfo, ReadyCondition,
    RemoteRef, SecretStoreInfo, StoreKind, StoreRef, TemplateEntry, ESO_GROUP,
};
pub use store::{vault_provider, StoreAuth, StoreKv, StoreProblem, VaultStore};
pub use value::{KeyDigest, SecretKey};

pub use vso::{
    parse_ref, Condition, VaultAuthLogin, VaultStaticSecretInfo, VsoKind, VsoObjectInfo,
    VAULT_AUTH, VAULT_CONNECTION, VAULT_STATIC_SECRET, VSO_DEFAULT_NAME, VSO_GROUP, VSO_VERSION,
};
pub use vso_transformation::{plain_field, DestinationKeys, KeySource, Transformation};

pub use workloads::{
    controller_of, restart_patch, DataChange, Kept, Owner, PodInfo, ReplicaSetInfo, WorkloadKind,
};

use status::object_name;

/// API versions of ExternalSecret, SecretStore and ClusterSecretStore, in the order asked.
pub const EXTERNAL_SECRET_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
/// API versions of PushSecret.
pub const PUSH_SECRET_VERSIONS: [&str; 1] = ["v1alpha1"];

/// The annotation that makes ESO refresh an ExternalSecret at once.
pub const FORCE_SYNC_ANNOTATION: &str = "force-sync";

/// The annotation vault-seed sets on a VaultStaticSecret to make VSO reconcile it at once. VSO
/// has no resync annotation that it reads (`consts.AnnotationResync` is defined and never used in
/// v1.4.1), but any change of a VaultStaticSecret's annotations re-queues it
/// (`controllers/predicates.go` `annotationChangedPredicate`, installed as the event filter in
/// `SetupWithManager`): the reconcile reads Vault, rewrites the Secret if the data differs, and
/// rewrites `Ready`/`Healthy` either way.
pub const VSO_FORCE_SYNC_ANNOTATION: &str = "vault-seed/force-sync";

/// Connecting never waits longer than this for a TCP/TLS handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// No single (non-watch) request waits longer than this for an answer.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection to one cluster's API server, for ESO questions.
pub struct Cluster {
    client: Client,
    server: String,
    /// The kubeconfig context used, `None` for in-cluster configuration.
    context: Option<String>,
    /// `(plural, version)` → whether the cluster serves it, learnt from discovery.
    served: Mutex<HashMap<(&'static str, &'static str), bool>>,
    /// What was read by LIST ([`Cluster::read_by_list`]), answering per-object reads.
    lists: Mutex<reads::Lists>,
}

/// One ESO kind, for the version fallback.
#[derive(Clone, Copy)]
struct EsoKind {
    kind: &'static str,
    plural: &'static str,
    versions: &'static [&'static str],
}

const EXTERNAL_SECRET: EsoKind = EsoKind {
    kind: "ExternalSecret",
    plural: "externalsecrets",
    versions: &EXTERNAL_SECRET_VERSIONS,
};
const PUSH_SECRET: EsoKind = EsoKind {
    kind: "PushSecret",
    plural: "pushsecrets",
    versions: &PUSH_SECRET_VERSIONS,
};

fn store_kind(kind: StoreKind) -> EsoKind {
    EsoKind {
        kind: kind.kind(),
        plural: kind.plural(),
        versions: &EXTERNAL_SECRET_VERSIONS,
    }
}

/// What a request was about, so an error can name it.
struct Op<'a> {
    verb: &'static str,
    resource: String,
    namespace: Option<&'a str>,
    name: &'a str,
}

/// What the cluster's configuration says before anything is sent ([`Cluster::preflight`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    /// The API server URL.
    pub server: String,
    /// `insecure-skip-tls-verify: true`: the server's certificate is not checked, so anyone on
    /// the path can read the credentials.
    pub skip_tls_verify: bool,
}

impl Cluster {
    /// Find the cluster like kubectl and check that its API server answers (`GET /version`).
    ///
    /// `kubeconfig` is `--kubeconfig`; without it `KUBECONFIG`, then `~/.kube/config`, then the
    /// pod's service account are used. `context` picks a kubeconfig context, else its
    /// `current-context`. The process's rustls crypto provider must be installed first (the
    /// entry point does it).
    pub async fn connect(
        kubeconfig: Option<&Path>,
        context: Option<&str>,
    ) -> Result<Cluster, KubeError> {
        let (mut cfg, source) =
            config::resolve(kubeconfig, context, &config::Env::from_process()).await?;
        config::refuse_plain_http(&cfg)?;
        cfg.connect_timeout = Some(CONNECT_TIMEOUT);
        cfg.read_timeout = Some(READ_TIMEOUT);
        let server = cfg
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let context = match &source {
            config::Source::Kubeconfig { context, .. } => Some(context.clone()),
            config::Source::Inferred => None,
        };
        tracing::debug!(%server, ?source, "kubernetes configuration");
        let client = Client::try_from(cfg).map_err(|source| KubeError::Client {
            server: server.clone(),
            source: Box::new(source),
        })?;
        let cluster = Cluster {
            client,
            server,
            context,
            served: Mutex::new(HashMap::new()),
            lists: Mutex::new(reads::Lists::default()),
        };
        let version = cluster.client.apiserver_version().await.map_err(|e| {
            cluster.error(
                e,
                Op {
                    verb: "get",
                    resource: "version".into(),
                    namespace: None,
                    name: "/version",
                },
            )
        })?;
        tracing::debug!(server = %cluster.server, version = %version.git_version, "kubernetes api server answers");
        Ok(cluster)
    }

    /// What [`Cluster::connect`] would use, read before anything is sent: refused
    /// ([`KubeError::PlainHttp`]) when it would send the credentials in clear off loopback; else
    /// whether TLS verification is off. Other problems are `connect`'s to report.
    pub async fn preflight(
        kubeconfig: Option<&Path>,
        context: Option<&str>,
    ) -> Result<Option<Preflight>, KubeError> {
        let Ok((cfg, _)) = config::resolve(kubeconfig, context, &config::Env::from_process()).await
        else {
            return Ok(None);
        };
        config::refuse_plain_http(&cfg)?;
        Ok(Some(Preflight {
            server: cfg
                .cluster_url
                .to_string()
                .trim_end_matches('/')
                .to_string(),
            skip_tls_verify: cfg.accept_invalid_certs,
        }))
    }

    /// The API server URL in use.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The namespace of the kubeconfig context (or the pod's), `default` when it sets none: for
    /// specs that name no namespace, as kubectl would use.
    pub fn default_namespace(&self) -> &str {
        self.client.default_namespace()
    }

    /// The kubeconfig context in use; `None` with in-cluster configuration.
    pub fn context(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// An ExternalSecret's status and mappings; `None` when it does not exist.
    pub async fn external_secret(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<ExternalSecretInfo>, KubeError> {
        if let Some(listed) = self.listed_checked(reads::ReadKind::ExternalSecrets, ns, name) {
            return listed;
        }
        match self.get_eso(EXTERNAL_SECRET, Some(ns), name).await? {
            Some((obj, api_version)) => status::external_secret_info(&obj, &api_version).map(Some),
            None => Ok(None),
        }
    }

    /// A PushSecret's `Ready` condition; `None` when it does not exist.
    pub async fn push_secret(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<PushSecretInfo>, KubeError> {
        match self.get_eso(PUSH_SECRET, Some(ns), name).await? {
            Some((obj, api_version)) => status::push_secret_info(&obj, &api_version).map(Some),
            None => Ok(None),
        }
    }

    /// A SecretStore's (in `ns`) or ClusterSecretStore's (`ns` unused) `Ready` condition;
    /// `None` when it does not exist.
    pub async fn secret_store(
        &self,
        ns: &str,
        kind: StoreKind,
        name: &str,
    ) -> Result<Option<SecretStoreInfo>, KubeError> {
        let namespace = match kind {
            StoreKind::SecretStore => Some(ns),
            StoreKind::ClusterSecretStore => None,
        };
        match self.get_eso(store_kind(kind), namespace, name).await? {
            Some((obj, api_version)) => {
                status::secret_store_info(&obj, kind, &api_version).map(Some)
            }
            None => Ok(None),
        }
    }

    /// The keys of a Secret's `data`, sorted; `None` when the Secret does not exist.
    ///
    /// The values are never held in a value, returned or logged ([`Cluster::secret_entries`]).
    pub async fn secret_keys(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<Vec<String>>, KubeError> {
        Ok(self
            .secret_entries(ns, name)
            .await?
            .map(|entries| entries.into_keys().collect()))
    }

    /// A Secret's `type` (the API server sets `Opaque` when none was given); `None` when the
    /// Secret does not exist. Only `type` is kept while parsing; the text is zeroized.
    pub async fn secret_type(&self, ns: &str, name: &str) -> Result<Option<String>, KubeError> {
        /// A Secret's type alone.
        #[derive(serde::Deserialize)]
        struct TypeOnly {
            #[serde(default, rename = "type")]
            kind: Option<String>,
        }
        let Some(text) = self.secret_text(ns, name).await? else {
            return Ok(None);
        };
        let parsed: TypeOnly =
            serde_json::from_str(&text).map_err(|e| self.not_a_secret(ns, name, &e))?;
        Ok(Some(
            crate::base::text::cap(&parsed.kind.unwrap_or_else(|| "Opaque".into())).into_owned(),
        ))
    }

    /// The keys of a Secret's `data`, sorted, each with whether its value is empty; `None` when
    /// the Secret does not exist.
    ///
    /// Each value is read as its length only while parsing and the response text is zeroized:
    /// the values are never held in a value, returned or logged.
    pub async fn secret_entries(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<BTreeMap<String, bool>>, KubeError> {
        /// A Secret with each value read as its length at parse time.
        #[derive(serde::Deserialize)]
        struct KeysOnly {
            #[serde(default)]
            data: Option<BTreeMap<String, Option<ValueLen>>>,
        }
        let entries = |s: &reads::SecretRead| {
            s.keys
                .as_ref()
                .map(|keys| keys.iter().map(|(k, d)| (k.to_string(), d.empty)).collect())
        };
        match self.listed_secret(ns, name, false, entries) {
            Some(None) => return Ok(None),
            Some(Some(Some(entries))) => return Ok(Some(entries)),
            _ => {}
        }
        let Some(text) = self.secret_text(ns, name).await? else {
            return Ok(None);
        };
        let parsed: KeysOnly =
            serde_json::from_str(&text).map_err(|e| self.not_a_secret(ns, name, &e))?;
        drop(text);
        let entries = parsed.data.unwrap_or_default().into_iter();
        Ok(Some(
            entries
                .map(|(k, len)| (k, len.is_none_or(|l| l.0 == 0)))
                .collect(),
        ))
    }

    /// Each key of Secret `ns/name`'s `data` with whether it is empty and its value's digest
    /// ([`crate::base::digest`]); `None` when the Secret does not exist. Each value is decoded and
    /// digested while parsing, in a buffer wiped when dropped, and the response text is zeroized.
    pub async fn secret_digests(
        &self,
        ns: &str,
        name: &str,
        digester: &crate::base::digest::Digester,
    ) -> Result<Option<BTreeMap<String, KeyDigest>>, KubeError> {
        // Listed Secrets were digested with the run's one digester (`verify` gives the same).
        let digests = |s: &reads::SecretRead| match s {
            reads::SecretRead {
                keys: Some(keys),
                digested: true,
                ..
            } => Some(keys.to_map()),
            _ => None,
        };
        match self.listed_secret(ns, name, false, digests) {
            Some(None) => return Ok(None),
            Some(Some(Some(keys))) => return Ok(Some(keys)),
            _ => {}
        }
        let Some(text) = self.secret_text(ns, name).await? else {
            return Ok(None);
        };
        let mut de = serde_json::Deserializer::from_str(&text);
        let digests = serde::de::DeserializeSeed::deserialize(value::Digests(digester), &mut de)
            .map_err(|e| self.not_a_secret(ns, name, &e))?;
        Ok(Some(digests))
    }

    /// The value of key `key` of Secret `ns/name`, base64-decoded, for `import` and its check
    /// in `verify`: the one place a Secret's value leaves this module, as a [`SecretString`]
    /// from the moment it is decoded. Only that key is kept while parsing (the others are
    /// skipped unread) and the response text is zeroized.
    pub async fn secret_value(
        &self,
        ns: &str,
        name: &str,
        key: &str,
    ) -> Result<SecretKey, KubeError> {
        let Some(text) = self.secret_text(ns, name).await? else {
            return Ok(SecretKey::NoSecret);
        };
        let mut de = serde_json::Deserializer::from_str(&text);
        let encoded = serde::de::DeserializeSeed::deserialize(value::OneKey(key), &mut de)
            .map_err(|e| self.not_a_secret(ns, name, &e))?;
        drop(text);
        let Some(encoded) = encoded else {
            return Ok(SecretKey::NoKey);
        };
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_bytes())
            .map(zeroize::Zeroizing::new)
            .map_err(|_| {
                self.decode_error(&secret_op(ns, name), format!("key `{key}` is not base64"))
            })?;
        match std::str::from_utf8(&bytes) {
            Ok("") => Ok(SecretKey::Empty),
            Ok(v) => Ok(SecretKey::Value(SecretString::from(v.to_string()))),
            Err(_) => Ok(SecretKey::NotText),
        }
    }

    /// The Secret `ns/name` as the API server's text, zeroized when dropped; `None` when it
    /// does not exist. Built with k8s-openapi's Secret for the path, but sent as text: kube-rs
    /// logs the whole body when typed parsing fails, and a Secret's body is exactly what must
    /// not be logged.
    async fn secret_text(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<zeroize::Zeroizing<String>>, KubeError> {
        let op = secret_op(ns, name);
        let request = Request::new(Secret::url_path(&(), Some(ns)))
            .get(name, &GetParams::default())
            .map_err(|e| self.decode_error(&op, e.to_string()))?;
        match self.client.request_text(request).await {
            Ok(text) => Ok(Some(zeroize::Zeroizing::new(text))),
            Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => Ok(None),
            Err(e) => Err(self.error(e, op)),
        }
    }

    /// The Secret's text did not parse: where and what kind only, since serde_json's message
    /// can quote the input.
    fn not_a_secret(&self, ns: &str, name: &str, e: &serde_json::Error) -> KubeError {
        self.decode_error(
            &secret_op(ns, name),
            format!(
                "not a Secret ({:?} error at line {} column {})",
                e.classify(),
                e.line(),
                e.column()
            ),
        )
    }

    /// The Warning events about an object (`kind` such as `ExternalSecret`), newest first.
    pub async fn warning_events(
        &self,
        ns: &str,
        kind: &str,
        name: &str,
    ) -> Result<Vec<EventInfo>, KubeError> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), ns);
        let selector = format!("involvedObject.name={name},involvedObject.kind={kind}");
        let list = self
            .list_fields(&api, &selector, "events".into(), Some(ns))
            .await?;
        let mut events: Vec<(Option<OffsetDateTime>, EventInfo)> = list
            .items
            .into_iter()
            .filter(|e| e.type_.as_deref() == Some("Warning"))
            .map(|e| {
                let seen = event_time(&e);
                // Capped where it enters: an event message may be megabytes long.
                let text = |s: String| crate::base::text::cap(&s).into_owned();
                let info = EventInfo {
                    reason: e.reason.map(text),
                    message: e.message.map(text),
                    last_timestamp: seen,
                    count: e
                        .series
                        .as_ref()
                        .and_then(|s| s.count)
                        .or(e.count)
                        .and_then(|c| u32::try_from(c).ok())
                        .unwrap_or(1)
                        .max(1),
                };
                (seen, info)
            })
            .collect();
        // Newest first; events without a time last.
        events.sort_by_key(|e| std::cmp::Reverse(e.0));
        Ok(events.into_iter().map(|(_, e)| e).collect())
    }

    /// Annotate an ExternalSecret with `force-sync=<unix time>` (JSON merge patch) so ESO
    /// refreshes it now. `api_version` is the one [`ExternalSecretInfo::api_version`] reported.
    /// Returns the time written, which a later `refreshTime` should not be older than.
    pub async fn force_sync(
        &self,
        ns: &str,
        name: &str,
        api_version: &str,
    ) -> Result<OffsetDateTime, KubeError> {
        let version = api_version
            .strip_prefix(ESO_GROUP)
            .and_then(|v| v.strip_prefix('/'))
            .unwrap_or(api_version);
        let gvk = GroupVersionKind::gvk(ESO_GROUP, version, EXTERNAL_SECRET.kind);
        self.annotate_now(
            &gvk,
            EXTERNAL_SECRET.plural,
            ns,
            name,
            FORCE_SYNC_ANNOTATION,
        )
        .await
    }

    /// Set annotation `key` of a namespaced object to the unix time now (JSON merge patch);
    /// returns that time, in whole seconds (the annotation holds a unix time, and ESO's
    /// `refreshTime` and VSO's condition times have no fraction).
    async fn annotate_now(
        &self,
        gvk: &GroupVersionKind,
        plural: &str,
        ns: &str,
        name: &str,
        key: &str,
    ) -> Result<OffsetDateTime, KubeError> {
        let now = OffsetDateTime::now_utc();
        let now = now.replace_nanosecond(0).unwrap_or(now);
        let patch = serde_json::json!({
            "metadata": { "annotations": { key: now.unix_timestamp().to_string() } }
        });
        let ar = ApiResource::from_gvk_with_plural(gvk, plural);
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &ar);
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| {
                self.error(
                    e,
                    Op {
                        verb: "patch",
                        resource: format!("{plural}.{}", gvk.group),
                        namespace: Some(ns),
                        name,
                    },
                )
            })?;
        tracing::debug!(%ns, %name, %key, at = now.unix_timestamp(), "annotation set");
        Ok(now)
    }

    /// A VaultStaticSecret; `None` when it does not exist.
    pub async fn vault_static_secret(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<VaultStaticSecretInfo>, KubeError> {
        if let Some(listed) = self.listed_checked(reads::ReadKind::VaultStaticSecrets, ns, name) {
            return listed;
        }
        match self.get_vso(VAULT_STATIC_SECRET, ns, name).await? {
            Some(obj) => vso::vault_static_secret_info(&obj).map(Some),
            None => Ok(None),
        }
    }

    /// A VaultAuth or VaultConnection; `None` when it does not exist.
    pub async fn vso_object(
        &self,
        kind: VsoKind,
        ns: &str,
        name: &str,
    ) -> Result<Option<VsoObjectInfo>, KubeError> {
        match self.get_vso(kind, ns, name).await? {
            Some(obj) => vso::vso_object_info(&obj, kind).map(Some),
            None => Ok(None),
        }
    }

    /// The VaultAuths (or VaultConnections) named `default` in any namespace: VSO's default is the
    /// one in its own namespace, which vault-seed does not know (a list across namespaces with
    /// the field selector `metadata.name=default`).
    pub async fn vso_defaults(&self, kind: VsoKind) -> Result<Vec<VsoObjectInfo>, KubeError> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(VSO_GROUP, VSO_VERSION, kind.kind),
            kind.plural,
        );
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        let selector = format!("metadata.name={VSO_DEFAULT_NAME}");
        let resource = format!("{}.{VSO_GROUP}", kind.plural);
        let list = self.list_fields(&api, &selector, resource, None).await?;
        list.items
            .iter()
            .map(|obj| {
                let value = serde_json::to_value(obj).map_err(|e| KubeError::Decode {
                    verb: "list",
                    resource: format!("{}.{VSO_GROUP}", kind.plural),
                    object: selector.clone(),
                    detail: e.to_string(),
                })?;
                vso::vso_object_info(&value, kind)
            })
            .collect()
    }

    /// The namespaces the Vault Secrets Operator's controller runs in: those of the Deployments
    /// its Helm chart labels `app.kubernetes.io/name=vault-secrets-operator` (VSO v1.4.1
    /// `chart/templates/deployment.yaml`, the label from `_helpers.tpl` `vso.chart.name`, the
    /// chart's name unless `nameOverride`). VSO takes its defaults (the VaultAuth and
    /// VaultConnection named `default`) from `OperatorNamespace` (`common/common.go`, `init`):
    /// the namespace of its pod's service account token (`utils/utils.go`
    /// `GetCurrentNamespace`), so its Deployment's; only without that file the
    /// `OPERATOR_NAMESPACE` environment variable, else `default`.
    pub async fn vso_operator_namespaces(&self) -> Result<BTreeSet<String>, KubeError> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        );
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        let selector = "app.kubernetes.io/name=vault-secrets-operator";
        let list = api
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| {
                self.error(
                    e,
                    Op {
                        verb: "list",
                        resource: "deployments.apps".into(),
                        namespace: None,
                        name: selector,
                    },
                )
            })?;
        Ok(list
            .items
            .iter()
            .filter_map(|d| d.metadata.namespace.clone())
            .collect())
    }

    /// Annotate a VaultStaticSecret with `vault-seed/force-sync=<unix time>` (JSON merge patch):
    /// VSO reconciles an object whose annotations changed at once ([`VSO_FORCE_SYNC_ANNOTATION`]).
    /// Returns the time written; a `Ready` condition written later comes from that reconcile.
    pub async fn force_sync_vso(&self, ns: &str, name: &str) -> Result<OffsetDateTime, KubeError> {
        let gvk = GroupVersionKind::gvk(VSO_GROUP, VSO_VERSION, VAULT_STATIC_SECRET.kind);
        self.annotate_now(
            &gvk,
            VAULT_STATIC_SECRET.plural,
            ns,
            name,
            VSO_FORCE_SYNC_ANNOTATION,
        )
        .await
    }

    /// List `api`'s objects that the field selector `selector` matches; an error names
    /// `resource` and the selector.
    async fn list_fields<K>(
        &self,
        api: &Api<K>,
        selector: &str,
        resource: String,
        namespace: Option<&str>,
    ) -> Result<::kube::core::ObjectList<K>, KubeError>
    where
        K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        api.list(&ListParams::default().fields(selector))
            .await
            .map_err(|e| {
                self.error(
                    e,
                    Op {
                        verb: "list",
                        resource,
                        namespace,
                        name: selector,
                    },
                )
            })
    }

    /// Get a VSO object (`v1beta1`). A 404 is followed by a look at the version's resource list:
    /// if the cluster serves the kind, the object is absent; if not, VSO is not installed.
    async fn get_vso(
        &self,
        kind: VsoKind,
        ns: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, KubeError> {
        if self.known_unserved(kind.plural, VSO_VERSION) {
            return Err(KubeError::NotServed {
                kind: kind.kind,
                group: VSO_GROUP,
                versions: vec![VSO_VERSION],
            });
        }
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(VSO_GROUP, VSO_VERSION, kind.kind),
            kind.plural,
        );
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &ar);
        let op = || Op {
            verb: "get",
            resource: format!("{}.{VSO_GROUP}", kind.plural),
            namespace: Some(ns),
            name,
        };
        match api.get(name).await {
            Ok(obj) => serde_json::to_value(&obj)
                .map(Some)
                .map_err(|e| self.decode_error(&op(), e.to_string())),
            Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => {
                if self.serves(VSO_GROUP, kind.plural, VSO_VERSION).await? {
                    Ok(None)
                } else {
                    Err(KubeError::NotServed {
                        kind: kind.kind,
                        group: VSO_GROUP,
                        versions: vec![VSO_VERSION],
                    })
                }
            }
            Err(e) => Err(self.error(e, op())),
        }
    }

    /// Get an ESO object, trying its versions in order. A 404 on a version is followed by a
    /// look at that version's resource list: if the cluster serves the kind there, the object
    /// is absent; if not, the next version is asked.
    async fn get_eso(
        &self,
        kind: EsoKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<(serde_json::Value, String)>, KubeError> {
        for &version in kind.versions {
            if self
                .served
                .lock()
                .ok()
                .and_then(|m| m.get(&(kind.plural, version)).copied())
                == Some(false)
            {
                continue;
            }
            let ar = ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(ESO_GROUP, version, kind.kind),
                kind.plural,
            );
            let api: Api<DynamicObject> = match namespace {
                Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar),
                None => Api::all_with(self.client.clone(), &ar),
            };
            let op = || Op {
                verb: "get",
                resource: format!("{}.{ESO_GROUP}", kind.plural),
                namespace,
                name,
            };
            match api.get(name).await {
                Ok(obj) => {
                    self.remember(kind.plural, version, true);
                    let api_version = ar.api_version.clone();
                    tracing::debug!(kind = kind.kind, object = %object_name(namespace, name), %api_version, "found");
                    let value = serde_json::to_value(&obj)
                        .map_err(|e| self.decode_error(&op(), e.to_string()))?;
                    return Ok(Some((value, api_version)));
                }
                Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => {
                    if self.serves(ESO_GROUP, kind.plural, version).await? {
                        return Ok(None);
                    }
                    tracing::debug!(kind = kind.kind, %version, "not served, trying the next version");
                }
                Err(e) => return Err(self.error(e, op())),
            }
        }
        Err(KubeError::NotServed {
            kind: kind.kind,
            group: ESO_GROUP,
            versions: kind.versions.to_vec(),
        })
    }

    /// Whether `<group>/<version>` lists `plural` (discovery, remembered).
    async fn serves(
        &self,
        group: &str,
        plural: &'static str,
        version: &'static str,
    ) -> Result<bool, KubeError> {
        if let Some(known) = self
            .served
            .lock()
            .ok()
            .and_then(|m| m.get(&(plural, version)).copied())
        {
            return Ok(known);
        }
        let group_version = format!("{group}/{version}");
        let served = match self.client.list_api_group_resources(&group_version).await {
            Ok(list) => list.resources.iter().any(|r| r.name == plural),
            Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => false,
            Err(e) => {
                return Err(self.error(
                    e,
                    Op {
                        verb: "get",
                        resource: "apiresources".into(),
                        namespace: None,
                        name: &group_version,
                    },
                ))
            }
        };
        self.remember(plural, version, served);
        Ok(served)
    }

    fn remember(&self, plural: &'static str, version: &'static str, served: bool) {
        if let Ok(mut m) = self.served.lock() {
            m.insert((plural, version), served);
        }
    }

    fn decode_error(&self, op: &Op<'_>, detail: String) -> KubeError {
        KubeError::Decode {
            verb: op.verb,
            resource: op.resource.clone(),
            object: object_name(op.namespace, op.name),
            detail,
        }
    }

    /// Turn a kube-rs error into one that says what to do. The server's own text is cleaned and
    /// capped.
    fn error(&self, err: ::kube::Error, op: Op<'_>) -> KubeError {
        let object = object_name(op.namespace, op.name);
        let err = match err {
            ::kube::Error::Api(mut status) => {
                // Quoted inside our own two-line messages: made one clean line here.
                status.message = crate::base::text::for_terminal(&status.message);
                status.reason = crate::base::text::for_terminal(&status.reason);
                ::kube::Error::Api(status)
            }
            other => other,
        };
        match err {
            ::kube::Error::Api(ErrorResponse {
                code: 401, message, ..
            }) => KubeError::Unauthorized {
                server: self.server.clone(),
                message,
            },
            ::kube::Error::Api(ErrorResponse {
                code: 403, message, ..
            }) => KubeError::Forbidden {
                verb: op.verb,
                resource: op.resource,
                namespace: op.namespace.map(str::to_string),
                object,
                message,
            },
            ::kube::Error::Api(ErrorResponse { code: 429, .. }) => KubeError::Throttled {
                server: self.server.clone(),
                verb: op.verb,
                resource: op.resource,
                object,
            },
            ::kube::Error::Api(ErrorResponse {
                code,
                reason,
                message,
                ..
            }) => KubeError::Api {
                verb: op.verb,
                resource: op.resource,
                object,
                code,
                reason,
                message,
            },
            ::kube::Error::Auth(source) => KubeError::Credentials {
                server: self.server.clone(),
                source: Box::new(source),
            },
            ::kube::Error::SerdeError(e) => KubeError::Decode {
                verb: op.verb,
                resource: op.resource,
                object,
                detail: e.to_string(),
            },
            // kube-rs' own wrapper text ("ServiceError: ...") says nothing to a user: start at
            // the transport's error.
            ::kube::Error::Service(e) => KubeError::Unreachable {
                server: self.server.clone(),
                detail: error_chain(&*e),
            },
            ::kube::Error::HyperError(e) => KubeError::Unreachable {
                server: self.server.clone(),
                detail: error_chain(&e),
            },
            other => KubeError::Client {
                server: self.server.clone(),
                source: Box::new(other),
            },
        }
    }
}

/// A `get` of Secret `ns/name`, for its errors.
fn secret_op<'a>(ns: &'a str, name: &'a str) -> Op<'a> {
    Op {
        verb: "get",
        resource: "secrets".into(),
        namespace: Some(ns),
        name,
    }
}

/// An error and its causes on one line (transport errors hide the useful part in a source).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// When an event was last seen: `lastTimestamp`, else its series' last observation, else
/// `eventTime`, else `firstTimestamp`, else its creation.
fn event_time(e: &Event) -> Option<OffsetDateTime> {
    let chrono = e
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| {
            e.series
                .as_ref()
                .and_then(|s| s.last_observed_time.as_ref())
                .map(|t| t.0)
        })
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
    OffsetDateTime::from_unix_timestamp(chrono.timestamp()).ok()
}

/// A Secret's value read as its length only: the text is looked at, never kept.
struct ValueLen(usize);

impl<'de> serde::Deserialize<'de> for ValueLen {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Len;
        impl serde::de::Visitor<'_> for Len {
            type Value = ValueLen;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a base64 string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ValueLen, E> {
                Ok(ValueLen(v.len()))
            }
        }
        d.deserialize_str(Len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(json: serde_json::Value) -> Event {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn event_time_prefers_last_timestamp_then_series_then_event_time() {
        let e = event(serde_json::json!({
            "metadata": {"name": "e", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "involvedObject": {},
            "firstTimestamp": "2025-01-01T00:00:01Z",
            "lastTimestamp": "2025-01-01T00:00:09Z",
            "eventTime": "2025-01-01T00:00:05.000000Z",
        }));
        assert_eq!(event_time(&e).unwrap().second(), 9);
        let e = event(serde_json::json!({
            "metadata": {"name": "e"}, "involvedObject": {},
            "eventTime": "2025-01-01T00:00:05.000000Z",
            "series": {"count": 3, "lastObservedTime": "2025-01-01T00:00:07.000000Z"},
        }));
        assert_eq!(event_time(&e).unwrap().second(), 7);
        let e = event(serde_json::json!({"metadata": {"name": "e"}, "involvedObject": {}}));
        assert_eq!(event_time(&e), None);
    }

    #[test]
    fn error_chain_keeps_causes_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ));
        assert_eq!(error_chain(&e), "outer: connection refused");
    }
}
