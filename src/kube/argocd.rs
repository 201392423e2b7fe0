//! Argo CD's objects, read for `verify`'s part `argocd`: an `argoproj.io/v1alpha1` Application's
//! app wave, parent, sync and health status, running operation and resources, and the resource
//! health customizations of `argocd-cm`.
//!
//! Both are fetched as text and parsed into types that keep only those fields: an Application's
//! spec may hold Helm values or parameters, and argocd-cm may hold credentials (an inline
//! `dex.config`), neither of which may be held, logged or shown. Field names and enums are Argo
//! CD v3.5.1's (`pkg/apis/application/v1alpha1/types.go`; see `tests/fixtures/argocd/`).

use std::collections::BTreeMap;
use std::fmt;

use ::kube::api::GetParams;
use ::kube::core::{ErrorResponse, Request};
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::{Cluster, KubeError, Op};
use crate::base::text::cap;
use crate::model::applications::{Application, Source};
use crate::model::argocd_cm::ArgoCdCm;
use crate::model::manifests::Origin;

/// Argo CD's API group.
pub const ARGOCD_GROUP: &str = "argoproj.io";
/// The Application kind's version (the only one Argo CD serves).
pub const APPLICATION_VERSION: &str = "v1alpha1";
/// The tracking annotation Argo CD sets on every resource of an app, the Application resources
/// of an app-of-apps included: `<app>:<group>/<Kind>:<namespace>/<name>` (argo-cd
/// `util/argo/resource_tracking.go`, `common/common.go` `AnnotationKeyAppInstance`).
const TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";
/// The tracking label of label-based tracking (Argo CD's default before 3.0).
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// The argocd-cm keys the health customizations live in (`util/settings/settings.go`).
const CUSTOMIZATIONS: &str = "resource.customizations";

/// One resource an Application manages (`status.resources[]`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AppResource {
    /// API group (empty for core kinds).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `Synced`, `OutOfSync`, `Unknown`; none for hooks.
    pub status: Option<String>,
    /// Its health (`Healthy`, `Progressing`, `Degraded`...), when Argo CD persists it
    /// (`controller.resource.health.persist`, off by default since 3.0).
    pub health: Option<String>,
    /// The health message.
    pub health_message: Option<String>,
    /// A hook (hooks do not count toward app health).
    pub hook: bool,
}

/// The state of an Application's operation (`status.operationState`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OperationInfo {
    /// `Running`, `Terminating`, `Failed`, `Error`, `Succeeded`.
    pub phase: String,
    /// Argo CD's message (`waiting for completion of hook batch/Job/zitadel-setup`).
    pub message: Option<String>,
}

/// What `verify` reads of one Application.
#[derive(Debug, Clone)]
pub struct ApplicationInfo {
    /// The order check's view: app wave (the same `syncwaves.Wave` rule as any resource) and
    /// sources.
    pub app: Application,
    /// The app-of-apps that manages this Application, from its tracking annotation or label.
    pub parent: Option<String>,
    /// `status.sync.status`.
    pub sync: Option<String>,
    /// `status.health.status`.
    pub health: Option<String>,
    /// `status.operationState`.
    pub operation: Option<OperationInfo>,
    /// `status.conditions[]` as `(type, message)` (`ComparisonError`, `SyncError`...).
    pub conditions: Vec<(String, String)>,
    /// `status.resources[]`.
    pub resources: Vec<AppResource>,
    /// `status.resourceHealthSource`: `appTree` when Argo CD keeps its resources' health out of
    /// the Application (`controller.resource.health.persist: false`, the default since 3.0).
    pub resource_health_source: Option<String>,
}

/// What a lookup of an Application found.
#[derive(Debug, Clone)]
pub enum AppLookup {
    /// The Application.
    Found(Box<ApplicationInfo>),
    /// The cluster serves Applications and this one does not exist.
    Missing,
    /// The cluster serves no `argoproj.io/v1alpha1` Application (Argo CD is not installed).
    NotServed,
}

// ----- The parts of an Application that are read; everything else is skipped while parsing.

#[derive(Deserialize)]
struct AppObject {
    metadata: Meta,
    #[serde(default)]
    spec: AppSpec,
    #[serde(default)]
    status: AppStatus,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct AppSpec {
    source: Option<SourceObj>,
    sources: Option<Vec<SourceObj>>,
    destination: Option<Destination>,
}

#[derive(Deserialize, Default)]
struct Destination {
    namespace: Option<String>,
}

#[derive(Deserialize)]
struct SourceObj {
    #[serde(default, rename = "repoURL")]
    repo_url: String,
    path: Option<String>,
    chart: Option<String>,
    #[serde(rename = "ref")]
    ref_name: Option<String>,
}

#[derive(Deserialize, Default)]
struct AppStatus {
    sync: Option<StatusCode>,
    health: Option<StatusCode>,
    #[serde(rename = "operationState")]
    operation_state: Option<OperationState>,
    #[serde(default)]
    conditions: Vec<Condition>,
    #[serde(default)]
    resources: Vec<ResourceStatus>,
    #[serde(rename = "resourceHealthSource")]
    resource_health_source: Option<String>,
}

#[derive(Deserialize)]
struct StatusCode {
    status: Option<String>,
}

#[derive(Deserialize)]
struct OperationState {
    phase: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct Condition {
    #[serde(rename = "type", default)]
    type_: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct ResourceStatus {
    #[serde(default)]
    group: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
    status: Option<String>,
    health: Option<HealthStatus>,
    #[serde(default)]
    hook: bool,
}

#[derive(Deserialize)]
struct HealthStatus {
    status: Option<String>,
    message: Option<String>,
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

/// Text from the cluster, capped where it enters.
fn capped(s: String) -> String {
    cap(&s).into_owned()
}

/// The parent app-of-apps of an Application: the `<app>` of its tracking id, else its instance
/// label (label tracking).
fn parent_of(meta: &Meta) -> Option<String> {
    meta.annotations
        .get(TRACKING_ID)
        .and_then(|id| id.split_once(':').map(|(app, _)| app.to_string()))
        .or_else(|| meta.labels.get(INSTANCE_LABEL).cloned())
        .filter(|p| !p.is_empty())
        .map(capped)
}

impl ApplicationInfo {
    /// Read an Application's JSON (`origin` names where it came from in reports).
    pub fn parse(text: &str, origin: Origin) -> Result<ApplicationInfo, serde_json::Error> {
        let obj: AppObject = serde_json::from_str(text)?;
        Ok(ApplicationInfo::of(obj, origin))
    }

    fn of(obj: AppObject, origin: Origin) -> ApplicationInfo {
        let source = |s: SourceObj| Source {
            repo_url: s.repo_url,
            path: non_empty(s.path),
            chart: non_empty(s.chart),
            ref_name: non_empty(s.ref_name),
        };
        let (sources, multi_source) = match obj.spec.sources {
            Some(list) if !list.is_empty() => (list.into_iter().map(source).collect(), true),
            _ => (obj.spec.source.map(source).into_iter().collect(), false),
        };
        let parent = parent_of(&obj.metadata);
        let app = Application {
            name: capped(obj.metadata.name),
            wave: crate::model::argo::wave(&obj.metadata.annotations).0,
            destination_namespace: obj.spec.destination.and_then(|d| non_empty(d.namespace)),
            sources,
            multi_source,
            origin,
        };
        let status = obj.status;
        ApplicationInfo {
            resource_health_source: non_empty(status.resource_health_source).map(capped),
            app,
            parent,
            sync: status.sync.and_then(|s| non_empty(s.status)).map(capped),
            health: status.health.and_then(|s| non_empty(s.status)).map(capped),
            operation: status.operation_state.map(|o| OperationInfo {
                phase: capped(o.phase.unwrap_or_default()),
                message: non_empty(o.message).map(capped),
            }),
            conditions: status
                .conditions
                .into_iter()
                .map(|c| (capped(c.type_), capped(c.message)))
                .collect(),
            resources: status
                .resources
                .into_iter()
                .map(|r| AppResource {
                    group: capped(r.group),
                    kind: capped(r.kind),
                    namespace: capped(r.namespace),
                    name: capped(r.name),
                    status: non_empty(r.status).map(capped),
                    health: r
                        .health
                        .as_ref()
                        .and_then(|h| h.status.clone())
                        .filter(|s| !s.is_empty())
                        .map(capped),
                    health_message: r.health.and_then(|h| non_empty(h.message)).map(capped),
                    hook: r.hook,
                })
                .collect(),
        }
    }
}

/// A page of a LIST of Applications, each read into the fields [`ApplicationInfo`] keeps while
/// parsing (never held as JSON: a spec may hold Helm values), with the page's `continue` token.
pub(super) type ApplicationPage = (Vec<(String, String, ApplicationInfo)>, Option<String>);

/// Read a page of Applications ([`ApplicationPage`]).
pub(super) fn application_page(text: &str) -> Result<ApplicationPage, String> {
    #[derive(Deserialize)]
    struct AppList {
        #[serde(default)]
        metadata: super::pager::ListMeta,
        #[serde(default)]
        items: Option<Vec<AppObject>>,
    }
    let list: AppList = serde_json::from_str(text).map_err(|e| {
        format!(
            "not a list of Applications ({:?} error at line {} column {})",
            e.classify(),
            e.line(),
            e.column()
        )
    })?;
    let items = list
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|o| {
            let (ns, name) = (o.metadata.namespace.clone(), o.metadata.name.clone());
            let origin = Origin {
                file: format!("Application {ns}/{name}"),
                line: 0,
            };
            (ns, name, ApplicationInfo::of(o, origin))
        })
        .collect();
    Ok((items, list.metadata.continue_token))
}

/// A ConfigMap's `data`, keeping only the keys of Argo CD's resource customizations: the others
/// are skipped while parsing, never held.
#[derive(Default)]
struct CustomizationsOnly(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for CustomizationsOnly {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keep;
        impl<'de> Visitor<'de> for Keep {
            type Value = CustomizationsOnly;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a ConfigMap's data")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut kept = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key.starts_with(CUSTOMIZATIONS) {
                        kept.insert(key, map.next_value::<String>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(CustomizationsOnly(kept))
            }
        }
        d.deserialize_map(Keep)
    }
}

#[derive(Deserialize)]
struct ConfigMapObject {
    #[serde(default)]
    data: Option<CustomizationsOnly>,
}

/// argocd-cm's health customizations from its JSON (the other keys are never held).
pub fn argocd_cm_from_json(
    text: &str,
    name: &str,
    origin: Origin,
) -> Result<ArgoCdCm, serde_json::Error> {
    let cm: ConfigMapObject = serde_json::from_str(text)?;
    Ok(ArgoCdCm::from_data(
        name,
        origin,
        &cm.data.unwrap_or_default().0,
    ))
}

impl Cluster {
    /// The Application `ns/name`: as listed ([`super::ReadKind::Applications`]), else by GET.
    pub async fn application(&self, ns: &str, name: &str) -> Result<AppLookup, KubeError> {
        let listed = self.listed::<ApplicationInfo>(super::ReadKind::Applications, ns, name);
        if let Some(listed) = listed {
            // Listed: the kind is served, so one not in the list does not exist.
            return Ok(match listed {
                Some(a) => AppLookup::Found(Box::new(a)),
                None => AppLookup::Missing,
            });
        }
        let op = Op {
            verb: "get",
            resource: format!("applications.{ARGOCD_GROUP}"),
            namespace: Some(ns),
            name,
        };
        let path =
            format!("/apis/{ARGOCD_GROUP}/{APPLICATION_VERSION}/namespaces/{ns}/applications");
        let Some(text) = self.get_text(&path, &op).await? else {
            return Ok(if self.serves_applications().await? {
                AppLookup::Missing
            } else {
                AppLookup::NotServed
            });
        };
        let origin = Origin {
            file: format!("Application {ns}/{name}"),
            line: 0,
        };
        ApplicationInfo::parse(&text, origin)
            .map(|a| AppLookup::Found(Box::new(a)))
            .map_err(|e| self.decode_error(&op, json_error(&e, "an Application")))
    }

    /// The health customizations of ConfigMap `ns/name` (argocd-cm); `None` when it does not
    /// exist.
    pub async fn argocd_cm(&self, ns: &str, name: &str) -> Result<Option<ArgoCdCm>, KubeError> {
        let op = Op {
            verb: "get",
            resource: "configmaps".into(),
            namespace: Some(ns),
            name,
        };
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let Some(text) = self.get_text(&path, &op).await? else {
            return Ok(None);
        };
        let origin = Origin {
            file: format!("ConfigMap {ns}/{name}"),
            line: 0,
        };
        argocd_cm_from_json(&text, name, origin)
            .map(Some)
            .map_err(|e| self.decode_error(&op, json_error(&e, "a ConfigMap")))
    }

    /// GET `<collection>/<name>` as text (zeroized when dropped); `None` on 404. Sent as text:
    /// kube-rs logs a whole body when typed parsing fails.
    async fn get_text(
        &self,
        collection: &str,
        op: &Op<'_>,
    ) -> Result<Option<zeroize::Zeroizing<String>>, KubeError> {
        let request = Request::new(collection)
            .get(op.name, &GetParams::default())
            .map_err(|e| self.decode_error(op, e.to_string()))?;
        match self.client.request_text(request).await {
            Ok(text) => Ok(Some(zeroize::Zeroizing::new(text))),
            Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => Ok(None),
            Err(e) => Err(self.error(
                e,
                Op {
                    verb: op.verb,
                    resource: op.resource.clone(),
                    namespace: op.namespace,
                    name: op.name,
                },
            )),
        }
    }

    /// Whether the cluster serves `argoproj.io/v1alpha1` `applications` (discovery).
    async fn serves_applications(&self) -> Result<bool, KubeError> {
        let group_version = format!("{ARGOCD_GROUP}/{APPLICATION_VERSION}");
        match self.client.list_api_group_resources(&group_version).await {
            Ok(list) => Ok(list.resources.iter().any(|r| r.name == "applications")),
            Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => Ok(false),
            Err(e) => Err(self.error(
                e,
                Op {
                    verb: "get",
                    resource: "apiresources".into(),
                    namespace: None,
                    name: &group_version,
                },
            )),
        }
    }
}

/// serde_json's error without the input it may quote: where, and what kind.
fn json_error(e: &serde_json::Error, what: &str) -> String {
    format!(
        "not {what} ({:?} error at line {} column {})",
        e.classify(),
        e.line(),
        e.column()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture_json(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/argocd/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_yaml::from_str(&text).unwrap();
        v.to_string()
    }

    fn origin() -> Origin {
        Origin {
            file: "Application argocd/x".into(),
            line: 0,
        }
    }

    #[test]
    fn the_secrets_app_fixture() {
        let a = ApplicationInfo::parse(&fixture_json("application-secrets-synced.yaml"), origin())
            .unwrap();
        assert_eq!(a.app.name, "core-service-secrets");
        assert_eq!(a.app.wave, 0);
        assert_eq!(a.parent.as_deref(), Some("auh1-dev-apps"));
        assert_eq!(a.sync.as_deref(), Some("Synced"));
        assert_eq!(a.health.as_deref(), Some("Healthy"));
        let op = a.operation.unwrap();
        assert_eq!(op.phase, "Succeeded");
        assert_eq!(
            op.message.as_deref(),
            Some("successfully synced (all tasks run)")
        );
        assert_eq!(a.resources.len(), 2);
        assert_eq!(a.resources[1].kind, "ExternalSecret");
        assert_eq!(a.resources[1].name, "zitadel-secret");
        assert_eq!(a.resources[1].health.as_deref(), Some("Healthy"));
        // Argo CD 3.x's default: no per-resource health.
        let v3 = ApplicationInfo::parse(
            &fixture_json("application-secrets-synced-v3-default.yaml"),
            origin(),
        )
        .unwrap();
        assert!(v3.resources.iter().all(|r| r.health.is_none()));
        assert_eq!(v3.health.as_deref(), Some("Healthy"));
    }

    #[test]
    fn the_core_service_fixture() {
        let a = ApplicationInfo::parse(
            &fixture_json("application-core-service-progressing.yaml"),
            origin(),
        )
        .unwrap();
        assert_eq!(a.app.wave, 1);
        assert_eq!(a.health.as_deref(), Some("Progressing"));
        assert_eq!(a.sync.as_deref(), Some("OutOfSync"));
        let op = a.operation.unwrap();
        assert_eq!(op.phase, "Running");
        assert_eq!(
            op.message.as_deref(),
            Some("waiting for completion of hook batch/Job/zitadel-setup")
        );
        assert_eq!(a.app.empty_sources().len(), 1);
        assert!(a
            .resources
            .iter()
            .any(|r| r.hook && r.name == "zitadel-setup"));
    }

    #[test]
    fn only_the_customizations_of_argocd_cm_are_kept() {
        let text = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "argocd-cm"},
            "data": {
                "dex.config": "clientSecret: s3cr3t-dex-value",
                "resource.customizations.health.argoproj.io_Application": "hs = {}\nreturn hs",
            },
        })
        .to_string();
        let cm = argocd_cm_from_json(&text, "argocd-cm", origin()).unwrap();
        assert_eq!(
            cm.health_check("argoproj.io", "Application"),
            Some("resource.customizations.health.argoproj.io_Application")
        );
        assert!(!format!("{cm:?}").contains("s3cr3t"));
        let none = argocd_cm_from_json(
            r#"{"metadata": {"name": "argocd-cm"}}"#,
            "argocd-cm",
            origin(),
        )
        .unwrap();
        assert_eq!(none.health_check("argoproj.io", "Application"), None);
    }

    #[test]
    fn parent_from_tracking_id_else_label() {
        let meta = |ann: &[(&str, &str)], labels: &[(&str, &str)]| Meta {
            name: "x".into(),
            namespace: "argocd".into(),
            annotations: ann
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        assert_eq!(
            parent_of(&meta(
                &[(TRACKING_ID, "apps:argoproj.io/Application:argocd/x")],
                &[]
            )),
            Some("apps".into())
        );
        assert_eq!(
            parent_of(&meta(&[], &[(INSTANCE_LABEL, "root")])),
            Some("root".into())
        );
        assert_eq!(parent_of(&meta(&[], &[])), None);
    }
}
