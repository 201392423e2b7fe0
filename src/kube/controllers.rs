//! The controllers that restart workloads, as their Deployments show them: whether one runs
//! (Ready) and how it was started (its containers' images, arguments and environment), and the
//! labels of a namespace, for the part `consumers` to judge whether Reloader or VSO will
//! restart a workload.
//!
//! Deployments are read with one list across all namespaces (`list` on `deployments.apps` at the
//! cluster scope), asked only when a workload relies on a controller.

use std::collections::BTreeMap;

use ::kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use k8s_openapi::api::core::v1::Namespace;
use serde_json::Value;

use super::{Cluster, KubeError, Op};

/// Where an environment variable's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvSource {
    /// `value`.
    Value(String),
    /// `valueFrom.fieldRef.fieldPath` (the downward API: `metadata.namespace`).
    Field(String),
    /// Another `valueFrom` (a ConfigMap's or Secret's key, a resource): not known here.
    Other,
}

/// A container of a Deployment's pod template, as far as telling a controller's settings needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInfo {
    /// Its name.
    pub name: String,
    /// Its image (`ghcr.io/stakater/reloader:v1.4.21`).
    pub image: String,
    /// `command` then `args`, as given.
    pub args: Vec<String>,
    /// Its `env` entries, in order.
    pub env: Vec<(String, EnvSource)>,
    /// It has `envFrom`: more variables than `env` names, not known here.
    pub env_from: bool,
}

/// A Deployment, as far as telling whether a controller runs needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentInfo {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `status.readyReplicas` is at least one: some pod of it passes its readiness probe
    /// (apps/v1 `DeploymentStatus`, written by the Deployment controller, kubernetes
    /// `pkg/controller/deployment/sync.go` `calculateStatus`).
    pub ready: bool,
    /// The pod template's containers (not the init containers).
    pub containers: Vec<ContainerInfo>,
}

impl Cluster {
    /// The Deployments of every namespace that the label selector `selector` matches (all of
    /// them with `None`).
    pub async fn deployments_everywhere(
        &self,
        selector: Option<&str>,
    ) -> Result<Vec<DeploymentInfo>, KubeError> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        );
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        let params = match selector {
            Some(s) => ListParams::default().labels(s),
            None => ListParams::default(),
        };
        let list = api.list(&params).await.map_err(|e| {
            self.error(
                e,
                Op {
                    verb: "list",
                    resource: "deployments.apps".into(),
                    namespace: None,
                    name: selector.unwrap_or_default(),
                },
            )
        })?;
        Ok(list
            .items
            .iter()
            .filter_map(|d| serde_json::to_value(d).ok())
            .map(|d| deployment_info(&d))
            .collect())
    }

    /// The labels of namespace `ns`; `None` when it does not exist.
    pub async fn namespace_labels(
        &self,
        ns: &str,
    ) -> Result<Option<BTreeMap<String, String>>, KubeError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let found = api.get_opt(ns).await.map_err(|e| {
            self.error(
                e,
                Op {
                    verb: "get",
                    resource: "namespaces".into(),
                    namespace: None,
                    name: ns,
                },
            )
        })?;
        Ok(found.map(|n| n.metadata.labels.unwrap_or_default()))
    }
}

/// A Deployment's JSON as [`DeploymentInfo`]; what is missing or of another shape reads as
/// empty (a container without an image, a Deployment without status: not Ready).
pub fn deployment_info(d: &Value) -> DeploymentInfo {
    let s = |v: &Value, ptr: &str| {
        v.pointer(ptr)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect()
    };
    let containers = d
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let mut args = strings(c.get("command"));
            args.extend(strings(c.get("args")));
            ContainerInfo {
                name: s(c, "/name"),
                image: s(c, "/image"),
                args,
                env: c
                    .get("env")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|e| (s(e, "/name"), env_source(e)))
                    .collect(),
                env_from: c
                    .get("envFrom")
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty()),
            }
        })
        .collect();
    DeploymentInfo {
        namespace: s(d, "/metadata/namespace"),
        name: s(d, "/metadata/name"),
        labels: d
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
        ready: d
            .pointer("/status/readyReplicas")
            .and_then(Value::as_u64)
            .is_some_and(|n| n >= 1),
        containers,
    }
}

fn env_source(e: &Value) -> EnvSource {
    if let Some(v) = e.get("value").and_then(Value::as_str) {
        return EnvSource::Value(v.to_string());
    }
    match e
        .pointer("/valueFrom/fieldRef/fieldPath")
        .and_then(Value::as_str)
    {
        Some(f) => EnvSource::Field(f.to_string()),
        None if e.get("valueFrom").is_some() => EnvSource::Other,
        // Neither: the variable is set to the empty string.
        None => EnvSource::Value(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deployment_reads_as_its_containers_and_readiness() {
        let d = json!({
            "metadata": {"namespace": "reloader", "name": "reloader-reloader", "labels": {"app": "reloader-reloader"}},
            "spec": {"template": {"spec": {"containers": [{
                "name": "reloader-reloader", "image": "ghcr.io/stakater/reloader:v1.4.21",
                "args": ["--namespaces-to-ignore=kube-system"],
                "env": [
                    {"name": "KUBERNETES_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                    {"name": "X", "value": "y"},
                ],
            }]}}},
            "status": {"readyReplicas": 1},
        });
        let info = deployment_info(&d);
        assert!(info.ready);
        assert_eq!(info.labels["app"], "reloader-reloader");
        let c = &info.containers[0];
        assert_eq!(c.args, ["--namespaces-to-ignore=kube-system"]);
        assert_eq!(
            c.env,
            [
                (
                    "KUBERNETES_NAMESPACE".to_string(),
                    EnvSource::Field("metadata.namespace".into())
                ),
                ("GOMAXPROCS".to_string(), EnvSource::Other),
                ("X".to_string(), EnvSource::Value("y".into())),
            ]
        );
        assert!(!c.env_from);
        let mut d = d;
        d["status"] = json!({"replicas": 1, "unavailableReplicas": 1});
        assert!(!deployment_info(&d).ready);
    }
}
