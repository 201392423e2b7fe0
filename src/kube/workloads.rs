//! Workloads and their pods, for the part `consumers`: which workloads of a namespace read a
//! Secret, when their pods started, when the Secret's data last changed, and the restart that
//! `kubectl rollout restart` sends.
//!
//! Workloads and pods are read as plain JSON (a shape the check does not expect is named by it,
//! never a reason to fail the whole list). A Secret is read as its metadata only
//! (`PartialObjectMetadata`): its values are never sent to vault-seed.

use ::kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use ::kube::core::ErrorResponse;
use k8s_openapi::api::core::v1::{Pod, Secret};
use serde_json::Value;
use time::OffsetDateTime;

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::reads::{ListedPod, ReadKind};
use super::selector;
use super::{Cluster, KubeError, Op};

/// A kind of workload whose pods can read a Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` DaemonSet.
    DaemonSet,
    /// `batch/v1` CronJob: each run starts new pods.
    CronJob,
    /// Argo Rollouts' `argoproj.io/v1alpha1` Rollout.
    Rollout,
}

impl WorkloadKind {
    /// Every kind, in the order listed.
    pub const ALL: [WorkloadKind; 5] = [
        WorkloadKind::Deployment,
        WorkloadKind::StatefulSet,
        WorkloadKind::DaemonSet,
        WorkloadKind::CronJob,
        WorkloadKind::Rollout,
    ];

    /// The kind's name.
    pub fn kind(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::CronJob => "CronJob",
            WorkloadKind::Rollout => "Rollout",
        }
    }

    /// Its API group.
    pub fn group(self) -> &'static str {
        match self {
            WorkloadKind::Deployment | WorkloadKind::StatefulSet | WorkloadKind::DaemonSet => {
                "apps"
            }
            WorkloadKind::CronJob => "batch",
            WorkloadKind::Rollout => "argoproj.io",
        }
    }

    pub(super) fn version(self) -> &'static str {
        match self {
            WorkloadKind::Rollout => "v1alpha1",
            _ => "v1",
        }
    }

    /// Its resource name (RBAC's and the URL's).
    pub fn plural(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "deployments",
            WorkloadKind::StatefulSet => "statefulsets",
            WorkloadKind::DaemonSet => "daemonsets",
            WorkloadKind::CronJob => "cronjobs",
            WorkloadKind::Rollout => "rollouts",
        }
    }

    /// The kind as VSO's `rolloutRestartTargets[].kind` names it (`argo.Rollout`).
    pub fn from_vso(kind: &str) -> Option<WorkloadKind> {
        match kind {
            "Deployment" => Some(WorkloadKind::Deployment),
            "StatefulSet" => Some(WorkloadKind::StatefulSet),
            "DaemonSet" => Some(WorkloadKind::DaemonSet),
            "argo.Rollout" => Some(WorkloadKind::Rollout),
            _ => None,
        }
    }

    fn resource(self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group(), self.version(), self.kind()),
            self.plural(),
        )
    }
}

/// A pod, as far as the part needs it: who owns it, whether it runs, and when each container
/// last started (core/v1 `PodStatus`, `ContainerStatus.state.running.startedAt`:
/// kubernetes `staging/src/k8s.io/api/core/v1/types.go`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInfo {
    /// Its name.
    pub name: String,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `metadata.deletionTimestamp` is set: it is going away.
    pub deleting: bool,
    /// Its controller (`ownerReferences[]` with `controller: true`): kind, name, uid.
    pub owner: Option<Owner>,
    /// Its `controller-revision-hash` label (a StatefulSet's revision).
    pub revision: Option<String>,
    /// Each container (not the init containers) and when it started running; `None` while it
    /// does not run (waiting for its Secret, crashed): it reads the Secret when it starts.
    pub containers: Vec<(String, Option<OffsetDateTime>)>,
    /// A container's `startedAt` is there but not a time: the pod is named, never taken as
    /// fresh.
    pub bad_start: bool,
}

/// An object's controller, from its `ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// A ReplicaSet, as far as finding a Deployment's or a Rollout's current pods needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaSetInfo {
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
    /// Its controller.
    pub owner: Option<Owner>,
    /// `deployment.kubernetes.io/revision`, which the Deployment controller also writes on the
    /// Deployment for its newest ReplicaSet.
    pub revision: Option<String>,
    /// `rollouts-pod-template-hash`, which Argo Rollouts compares with `status.currentPodHash`.
    pub rollout_hash: Option<String>,
}

/// The controller of an object's JSON.
pub fn controller_of(obj: &Value) -> Option<Owner> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let s = |k: &str| {
                r.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Owner {
                kind: s("kind"),
                name: s("name"),
                uid: s("uid"),
            }
        })
}

pub(super) fn pod_info(p: &Value) -> PodInfo {
    let s = |ptr: &str| p.pointer(ptr).and_then(Value::as_str).map(str::to_string);
    let mut bad_start = false;
    let containers = p
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .map(|c| {
                    let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
                    let at = c.pointer("/state/running/startedAt");
                    let started = at.and_then(Value::as_str).and_then(parse_time);
                    if at.is_some_and(|a| !a.is_null()) && started.is_none() {
                        bad_start = true;
                    }
                    (crate::base::text::cap(name).into_owned(), started)
                })
                .collect()
        })
        .unwrap_or_default();
    PodInfo {
        name: crate::base::text::cap(&s("/metadata/name").unwrap_or_else(|| "?".into()))
            .into_owned(),
        phase: s("/status/phase"),
        deleting: p
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|d| !d.is_null()),
        owner: controller_of(p),
        revision: s("/metadata/labels/controller-revision-hash"),
        containers,
        bad_start,
    }
}

/// When a Secret's data last changed, as its `managedFields` tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataChange {
    /// The latest `time` of a `managedFields` entry that owns a key under `data`; `None` when no
    /// entry does (managed fields off, or stripped).
    pub at: Option<OffsetDateTime>,
    /// That entry's `manager`.
    pub manager: Option<String>,
    /// The Secret's `reloader.stakater.com/match` is `"true"` (Reloader's `search` mode).
    pub reloader_match: bool,
    /// The Secret's `reloader.stakater.com/ignore` is `"true"`: Reloader skips it.
    pub reloader_ignore: bool,
    /// The Secret's labels (Reloader's `--resource-label-selector` matches them).
    pub labels: selector::LabelSet,
}

impl Cluster {
    /// The objects of `kind` in `ns`, each kept as its JSON text ([`Kept`]: shared with what
    /// was listed, not copied). A kind the cluster does not serve (Argo Rollouts not installed:
    /// the list answers 404) has none.
    pub async fn workloads(&self, kind: WorkloadKind, ns: &str) -> Result<Vec<Kept>, KubeError> {
        if let Some(listed) = self.listed_all::<Kept>(ReadKind::Workloads(kind), ns) {
            return Ok(listed);
        }
        if kind == WorkloadKind::Rollout && self.known_unserved(kind.plural(), kind.version()) {
            return Ok(Vec::new());
        }
        let ar = kind.resource();
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &ar);
        let op = || Op {
            verb: "list",
            resource: plural_in_group(kind.plural(), kind.group()),
            namespace: Some(ns),
            name: "",
        };
        let list = match api.list(&ListParams::default()).await {
            Ok(l) => l,
            Err(::kube::Error::Api(ErrorResponse { code: 404, .. }))
                if kind == WorkloadKind::Rollout =>
            {
                return Ok(Vec::new())
            }
            Err(e) => return Err(self.error(e, op())),
        };
        list.items
            .iter()
            .map(|o| {
                serde_json::to_value(o)
                    .map(|o| slim(&o))
                    .map_err(|e| self.decode_error(&op(), e.to_string()))
            })
            .collect()
    }

    /// The pods of `ns` that the label selector `selector` (`a=b,c in (d)`) matches.
    pub async fn pods(&self, ns: &str, selector: &str) -> Result<Vec<PodInfo>, KubeError> {
        // A selector not read here is the server's to answer (or refuse).
        if let Ok(requirements) = selector::parse(selector) {
            let keep = |p: &ListedPod| selector::selects(&requirements, &p.labels);
            if let Some(listed) = self.listed_where(ReadKind::Pods, ns, keep) {
                return Ok(listed.into_iter().map(|p| p.info).collect());
            }
        }
        let ar = ApiResource::erase::<Pod>(&());
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &ar);
        let list = api
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| {
                self.error(
                    e,
                    Op {
                        verb: "list",
                        resource: "pods".into(),
                        namespace: Some(ns),
                        name: selector,
                    },
                )
            })?;
        Ok(list
            .items
            .iter()
            .filter_map(|p| serde_json::to_value(p).ok())
            .map(|p| pod_info(&p))
            .collect())
    }

    /// The ReplicaSets of `ns`.
    pub async fn replica_sets(&self, ns: &str) -> Result<Vec<ReplicaSetInfo>, KubeError> {
        if let Some(listed) = self.listed_all::<ReplicaSetInfo>(ReadKind::ReplicaSets, ns) {
            return Ok(listed);
        }
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "ReplicaSet"),
            "replicasets",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &ar);
        let list = api.list(&ListParams::default()).await.map_err(|e| {
            self.error(
                e,
                Op {
                    verb: "list",
                    resource: "replicasets.apps".into(),
                    namespace: Some(ns),
                    name: "",
                },
            )
        })?;
        Ok(list
            .items
            .iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .map(|r| replica_set_info(&r))
            .collect())
    }

    /// When Secret `ns/name`'s data last changed; `None` when it does not exist. Only its
    /// metadata is asked for (`PartialObjectMetadata`), so its values never travel.
    pub async fn secret_data_change(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<DataChange>, KubeError> {
        if let Some(listed) = self.listed_secret(ns, name, true, |s| s.change.clone()) {
            return Ok(listed);
        }
        self.secret_data_change_get(ns, name).await
    }

    /// [`Cluster::secret_data_change`], asked of the server.
    pub(super) async fn secret_data_change_get(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<DataChange>, KubeError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), ns);
        let meta = api.get_metadata_opt(name).await.map_err(|e| {
            self.error(
                e,
                Op {
                    verb: "get",
                    resource: "secrets".into(),
                    namespace: Some(ns),
                    name,
                },
            )
        })?;
        Ok(meta.map(|m| data_change(m.metadata)))
    }

    /// Restart a workload as `kubectl rollout restart` does: a strategic merge patch setting the
    /// pod template's `kubectl.kubernetes.io/restartedAt` annotation; for a Rollout, as
    /// `kubectl argo rollouts restart` does, a merge patch of `spec.restartAt`. Returns the time
    /// written.
    pub async fn restart(
        &self,
        kind: WorkloadKind,
        ns: &str,
        name: &str,
    ) -> Result<OffsetDateTime, KubeError> {
        let now = OffsetDateTime::now_utc();
        let now = now.replace_nanosecond(0).unwrap_or(now);
        let stamp = now
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let ar = kind.resource();
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &ar);
        let body = restart_patch(kind, &stamp);
        let patch = match kind {
            WorkloadKind::Rollout => Patch::Merge(&body),
            _ => Patch::Strategic(&body),
        };
        api.patch(name, &PatchParams::default(), &patch)
            .await
            .map_err(|e| {
                self.error(
                    e,
                    Op {
                        verb: "patch",
                        resource: plural_in_group(kind.plural(), kind.group()),
                        namespace: Some(ns),
                        name,
                    },
                )
            })?;
        tracing::debug!(%ns, %name, kind = kind.kind(), at = %stamp, "restarted");
        Ok(now)
    }
}

/// When a Secret's data last changed, from its metadata: the latest `managedFields` entry that
/// owns a key under `data`, and Reloader's annotations.
pub(super) fn data_change(meta: ObjectMeta) -> DataChange {
    let annotation = |k: &str| {
        meta.annotations
            .as_ref()
            .and_then(|a| a.get(k))
            .is_some_and(|v| v == "true")
    };
    let reloader_match = annotation("reloader.stakater.com/match");
    let reloader_ignore = annotation("reloader.stakater.com/ignore");
    let labels = selector::LabelSet::new(meta.labels.unwrap_or_default());
    let entries = meta.managed_fields.unwrap_or_default();
    let latest = entries
        .iter()
        .filter(|e| {
            e.fields_v1
                .as_ref()
                .and_then(|f| f.0.get("f:data"))
                .and_then(Value::as_object)
                .is_some_and(|d| d.keys().any(|k| k.starts_with("f:")))
        })
        .filter_map(|e| {
            let t = e.time.as_ref()?.0;
            let at = OffsetDateTime::from_unix_timestamp(t.timestamp()).ok()?;
            Some((at, e.manager.clone()))
        })
        .max_by_key(|(at, _)| *at);
    DataChange {
        at: latest.as_ref().map(|l| l.0),
        manager: latest
            .and_then(|l| l.1)
            .map(|m| crate::base::text::cap(&m).into_owned()),
        reloader_match,
        reloader_ignore,
        labels,
    }
}

/// A ReplicaSet's JSON, as far as [`ReplicaSetInfo`] goes.
pub(super) fn replica_set_info(r: &Value) -> ReplicaSetInfo {
    let s = |ptr: &str| r.pointer(ptr).and_then(Value::as_str).map(str::to_string);
    ReplicaSetInfo {
        name: s("/metadata/name").unwrap_or_default(),
        uid: s("/metadata/uid").unwrap_or_default(),
        owner: controller_of(r),
        revision: s("/metadata/annotations/deployment.kubernetes.io~1revision"),
        rollout_hash: s("/metadata/labels/rollouts-pod-template-hash"),
    }
}

/// An object's labels (those that are strings).
pub(super) fn labels_of(o: &Value) -> selector::LabelSet {
    let m = o.pointer("/metadata/labels").and_then(Value::as_object);
    selector::LabelSet::new(
        m.into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))),
    )
}

/// A workload as kept from a LIST: its JSON text, without `metadata.managedFields` and the
/// annotation `kubectl.kubernetes.io/last-applied-configuration` (which no check reads: the
/// first is most of a real object, the second a copy of its manifest that client-side apply,
/// Argo CD's default, writes on every object). Text, parsed again by the check that reads
/// it ([`Kept::object`]) and dropped after: parsed, an object takes several times the room of
/// its text (a map node per object however few its keys), and every workload of a platform is
/// kept while `verify` runs.
#[derive(Clone)]
pub struct Kept(Arc<str>);

impl Kept {
    /// The workload as JSON.
    pub fn object(&self) -> Value {
        // The text is serde_json's own writing of a value: it reads back.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kept({} bytes)", self.0.len())
    }
}

pub(super) fn slim(o: &Value) -> Kept {
    Kept(
        serde_json::to_string(&WithoutManagedFields(o))
            .unwrap_or_default()
            .into(),
    )
}

/// The annotation client-side apply keeps the applied manifest in (k8s.io/api `core/v1`
/// `annotation_key_constants.go`, `LastAppliedConfigAnnotation`).
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A workload written as JSON without `metadata.managedFields` and its last applied
/// configuration ([`Kept`]), without copying the rest.
struct WithoutManagedFields<'a>(&'a Value);

impl serde::Serialize for WithoutManagedFields<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(top) = self.0 else {
            return self.0.serialize(s);
        };
        let mut map = s.serialize_map(Some(top.len()))?;
        for (k, v) in top {
            match v {
                Value::Object(meta) if k == "metadata" => {
                    map.serialize_entry(k, &Metadata(meta))?;
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

/// A workload's metadata without `managedFields`, its annotations without the last applied
/// configuration.
struct Metadata<'a>(&'a serde_json::Map<String, Value>);

impl serde::Serialize for Metadata<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.0.iter().filter(|(k, _)| *k != "managedFields") {
            match v {
                Value::Object(a) if k == "annotations" => {
                    map.serialize_entry(k, &Skipping(a, LAST_APPLIED))?
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

/// An object written without one of its keys.
struct Skipping<'a>(&'a serde_json::Map<String, Value>, &'static str);

impl serde::Serialize for Skipping<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.0.iter().filter(|(k, _)| *k != self.1) {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The body of the restart patch of a `kind`, stamped `at` (RFC 3339).
pub fn restart_patch(kind: WorkloadKind, at: &str) -> Value {
    match kind {
        WorkloadKind::Rollout => serde_json::json!({"spec": {"restartAt": at}}),
        _ => serde_json::json!({"spec": {"template": {"metadata": {"annotations": {
            "kubectl.kubernetes.io/restartedAt": at
        }}}}}),
    }
}

fn plural_in_group(plural: &str, group: &str) -> String {
    format!("{plural}.{group}")
}

fn parse_time(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload is kept whole but for `metadata.managedFields` and its last applied
    /// configuration, and reads back as it was; the same names elsewhere are kept.
    #[test]
    fn a_kept_workload_is_the_object_without_its_managed_fields() {
        let o = serde_json::json!({
            "metadata": {"name": "web", "managedFields": [{"manager": "kubectl"}],
                "annotations": {"a": "1", LAST_APPLIED: "{\"kind\":\"Deployment\"}",
                    "reloader.stakater.com/auto": "true"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "env": []}]},
                "metadata": {"annotations": {LAST_APPLIED: "kept: the pods'"}}},
                "metadata": {"managedFields": "kept: not the object's"}},
            "status": {"replicas": 2}
        });
        let mut want = o.clone();
        let meta = want["metadata"].as_object_mut().unwrap();
        meta.remove("managedFields");
        meta["annotations"]
            .as_object_mut()
            .unwrap()
            .remove(LAST_APPLIED);
        assert_eq!(slim(&o).object(), want);
        // Annotations that are not an object are the server's to answer for: kept as sent.
        let odd = serde_json::json!({"metadata": {"annotations": "x", "managedFields": []}});
        assert_eq!(
            slim(&odd).object(),
            serde_json::json!({"metadata": {"annotations": "x"}})
        );
        assert_eq!(
            slim(&serde_json::json!([1])).object(),
            serde_json::json!([1])
        );
    }

    #[test]
    fn the_restart_patch_is_kubectls() {
        assert_eq!(
            restart_patch(WorkloadKind::Deployment, "2026-01-01T00:00:00Z").to_string(),
            r#"{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z"}}}}}"#
        );
        assert_eq!(
            restart_patch(WorkloadKind::Rollout, "2026-01-01T00:00:00Z").to_string(),
            r#"{"spec":{"restartAt":"2026-01-01T00:00:00Z"}}"#
        );
        assert_eq!(
            WorkloadKind::from_vso("argo.Rollout"),
            Some(WorkloadKind::Rollout)
        );
        assert_eq!(WorkloadKind::from_vso("Rollout"), None);
    }
}
