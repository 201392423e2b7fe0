//! Consumers: the pod templates of Deployment, StatefulSet, DaemonSet, ReplicaSet,
//! ReplicationController, Job, CronJob (`spec.jobTemplate`), Pod and Argo Rollouts' Rollout
//! (`spec.template`, or the template of the workload its `spec.workloadRef` names, which the
//! check looks up), and every Secret or
//! ConfigMap they read: `envFrom` (`secretRef`, `configMapRef`), `env[].valueFrom`
//! (`secretKeyRef`, `configMapKeyRef`) of containers and initContainers, volumes (`secret`,
//! `configMap`, `projected` sources, with their `items[].key`), and `imagePullSecrets`.
//!
//! The view is tolerant: it reads only these fields and skips anything of another shape, so a
//! rendered chart with fields newer than this code is never rejected. It never reads an inline
//! `env[].value`.

use serde::Serialize;
use serde_json::Value;

use super::producers::DataKind;

/// How a consumer runs, which decides how bad a missing input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// A controller that keeps retrying (Deployment, StatefulSet, DaemonSet, ReplicaSet,
    /// ReplicationController, CronJob, Rollout): its pods restart until the input exists.
    Restarting,
    /// Runs once (Job, Pod): Argo CD waits for it when it is a hook, and a pod that cannot start
    /// holds the sync.
    RunOnce,
}

/// Where in the pod template a reference is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Via {
    /// `envFrom` of a container.
    EnvFrom {
        /// The container.
        container: String,
    },
    /// `env[].valueFrom` of a container.
    Env {
        /// The container.
        container: String,
        /// The variable.
        var: String,
    },
    /// A `secret`/`configMap` volume.
    Volume {
        /// The volume.
        volume: String,
    },
    /// A source of a `projected` volume.
    Projected {
        /// The volume.
        volume: String,
    },
    /// `imagePullSecrets`.
    ImagePullSecrets,
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Via::EnvFrom { container } => write!(f, "envFrom of container {container}"),
            Via::Env { container, var } => write!(f, "env {var} of container {container}"),
            Via::Volume { volume } => write!(f, "volume {volume}"),
            Via::Projected { volume } => write!(f, "projected volume {volume}"),
            Via::ImagePullSecrets => f.write_str("imagePullSecrets"),
        }
    }
}

/// One reference to a Secret or ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Read {
    /// Secret or ConfigMap.
    pub data: DataKind,
    /// Its name.
    pub name: String,
    /// The key read, for `*KeyRef` and volume `items`.
    pub key: Option<String>,
    /// `optional: true`: the pod starts without it.
    pub optional: bool,
    /// Where.
    pub via: Via,
}

/// A workload and what it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    /// How it runs.
    pub workload: Workload,
    /// Its references, in template order.
    pub reads: Vec<Read>,
    /// A Rollout's `spec.workloadRef`: its pods read what that workload's template reads.
    pub workload_ref: Option<WorkloadRef>,
}

/// The workload whose pod template a Rollout uses (Argo Rollouts `rollout/templateref.go`:
/// a Deployment, a ReplicaSet or a PodTemplate, in the Rollout's namespace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadRef {
    /// API group of its `apiVersion` (`apps`; `""` for core).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
}

/// Whether an object that is not a [`consumer`] still carries a pod template or containers
/// somewhere in its `spec` (a custom controller's workload, a KEDA ScaledJob, an operator's CR):
/// what its pods read cannot be checked, and the check must say so.
pub fn has_unknown_pod_template(value: &Value) -> bool {
    fn walk(v: &Value, depth: usize) -> bool {
        if depth == 0 {
            return false;
        }
        match v {
            Value::Object(m) => m.iter().any(|(k, v)| {
                (k == "jobTemplate" && v.is_object())
                    || (matches!(k.as_str(), "containers" | "initContainers") && v.is_array())
                    || walk(v, depth - 1)
            }),
            Value::Array(items) => items.iter().any(|v| walk(v, depth - 1)),
            _ => false,
        }
    }
    // Deep enough for `spec.jobTargetRef.template.spec.containers`; a hostile depth is bounded by
    // the YAML reader already.
    value.get("spec").is_some_and(|s| walk(s, 12))
}

/// The consumer view of an object, if its group and kind carry a pod template.
pub fn consumer(group: &str, kind: &str, value: &Value) -> Option<Consumer> {
    let spec = value.get("spec");
    fn template_spec(s: Option<&Value>) -> Option<&Value> {
        s?.get("template")?.get("spec")
    }
    let (workload, pod) = match (group, kind) {
        ("", "Pod") => (Workload::RunOnce, spec),
        ("batch", "Job") => (Workload::RunOnce, template_spec(spec)),
        ("batch", "CronJob") => (
            Workload::Restarting,
            template_spec(spec.and_then(|s| s.get("jobTemplate")?.get("spec"))),
        ),
        ("", "ReplicationController") => (Workload::Restarting, template_spec(spec)),
        ("apps" | "extensions", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => {
            (Workload::Restarting, template_spec(spec))
        }
        ("argoproj.io", "Rollout") => (Workload::Restarting, template_spec(spec)),
        _ => return None,
    };
    let mut reads = Vec::new();
    if let Some(pod) = pod {
        pod_reads(pod, &mut reads);
    }
    let workload_ref = (kind == "Rollout")
        .then(|| spec?.get("workloadRef"))
        .flatten()
        .map(|r| WorkloadRef {
            group: super::group_of(s(r, "apiVersion").unwrap_or_default()).to_string(),
            kind: s(r, "kind").unwrap_or_default().to_string(),
            name: s(r, "name").unwrap_or_default().to_string(),
        });
    Some(Consumer {
        workload,
        reads,
        workload_ref,
    })
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn arr<'a>(v: &'a Value, k: &str) -> impl Iterator<Item = &'a Value> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter())
        .into_iter()
        .flatten()
}

fn optional(v: &Value) -> bool {
    v.get("optional").and_then(Value::as_bool).unwrap_or(false)
}

/// `items[].key` of a volume source, or None for the whole object.
fn item_keys(src: &Value) -> Vec<Option<String>> {
    let keys: Vec<Option<String>> = arr(src, "items")
        .filter_map(|i| s(i, "key").map(|k| Some(k.to_string())))
        .collect();
    if keys.is_empty() {
        vec![None]
    } else {
        keys
    }
}

#[allow(clippy::too_many_lines)] // its steps in the order they run; split when it next changes
fn pod_reads(pod: &Value, out: &mut Vec<Read>) {
    for c in arr(pod, "initContainers").chain(arr(pod, "containers")) {
        let container = s(c, "name").unwrap_or("?").to_string();
        for ef in arr(c, "envFrom") {
            for (field, data) in [
                ("secretRef", DataKind::Secret),
                ("configMapRef", DataKind::ConfigMap),
            ] {
                if let Some(r) = ef.get(field) {
                    if let Some(name) = s(r, "name") {
                        out.push(Read {
                            data,
                            name: name.to_string(),
                            key: None,
                            optional: optional(r),
                            via: Via::EnvFrom {
                                container: container.clone(),
                            },
                        });
                    }
                }
            }
        }
        for e in arr(c, "env") {
            let Some(vf) = e.get("valueFrom") else {
                continue;
            };
            for (field, data) in [
                ("secretKeyRef", DataKind::Secret),
                ("configMapKeyRef", DataKind::ConfigMap),
            ] {
                if let Some(r) = vf.get(field) {
                    if let Some(name) = s(r, "name") {
                        out.push(Read {
                            data,
                            name: name.to_string(),
                            key: s(r, "key").map(str::to_string),
                            optional: optional(r),
                            via: Via::Env {
                                container: container.clone(),
                                var: s(e, "name").unwrap_or("?").to_string(),
                            },
                        });
                    }
                }
            }
        }
    }
    for vol in arr(pod, "volumes") {
        let volume = s(vol, "name").unwrap_or("?").to_string();
        if let Some(src) = vol.get("secret") {
            if let Some(name) = s(src, "secretName") {
                for key in item_keys(src) {
                    out.push(Read {
                        data: DataKind::Secret,
                        name: name.to_string(),
                        key,
                        optional: optional(src),
                        via: Via::Volume {
                            volume: volume.clone(),
                        },
                    });
                }
            }
        }
        if let Some(src) = vol.get("configMap") {
            if let Some(name) = s(src, "name") {
                for key in item_keys(src) {
                    out.push(Read {
                        data: DataKind::ConfigMap,
                        name: name.to_string(),
                        key,
                        optional: optional(src),
                        via: Via::Volume {
                            volume: volume.clone(),
                        },
                    });
                }
            }
        }
        if let Some(projected) = vol.get("projected") {
            for source in arr(projected, "sources") {
                for (field, data) in [
                    ("secret", DataKind::Secret),
                    ("configMap", DataKind::ConfigMap),
                ] {
                    if let Some(src) = source.get(field) {
                        if let Some(name) = s(src, "name") {
                            for key in item_keys(src) {
                                out.push(Read {
                                    data,
                                    name: name.to_string(),
                                    key,
                                    optional: optional(src),
                                    via: Via::Projected {
                                        volume: volume.clone(),
                                    },
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    for ips in arr(pod, "imagePullSecrets") {
        if let Some(name) = s(ips, "name") {
            out.push(Read {
                data: DataKind::Secret,
                name: name.to_string(),
                key: None,
                optional: false,
                via: Via::ImagePullSecrets,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "s1"}}]}],
            "containers": [{
                "name": "app",
                "env": [
                    {"name": "PLAIN", "value": "inline-value-never-read"},
                    {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s2", "key": "pw"}}},
                    {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "c1", "key": "k", "optional": true}}},
                    {"name": "FIELD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
                ],
                "envFrom": [{"configMapRef": {"name": "c2"}, "prefix": "X_"}]
            }],
            "volumes": [
                {"name": "v1", "secret": {"secretName": "s3", "items": [{"key": "a", "path": "a"}, {"key": "b", "path": "b"}]}},
                {"name": "v2", "configMap": {"name": "c3", "optional": true}},
                {"name": "v3", "projected": {"sources": [
                    {"secret": {"name": "s4"}},
                    {"configMap": {"name": "c4", "items": [{"key": "z", "path": "z"}]}},
                    {"serviceAccountToken": {"path": "t"}}
                ]}},
                {"name": "v4", "emptyDir": {}}
            ],
            "imagePullSecrets": [{"name": "regcred"}]
        })
    }

    fn summary(c: &Consumer) -> Vec<(DataKind, String, Option<String>, bool)> {
        c.reads
            .iter()
            .map(|r| (r.data, r.name.clone(), r.key.clone(), r.optional))
            .collect()
    }

    #[test]
    fn every_kind_of_reference_in_a_pod_template() {
        let d = json!({"spec": {"template": {"spec": pod()}}});
        let c = consumer("apps", "Deployment", &d).unwrap();
        assert_eq!(c.workload, Workload::Restarting);
        use DataKind::*;
        let k = |s: &str| Some(s.to_string());
        assert_eq!(
            summary(&c),
            vec![
                (Secret, "s1".into(), None, false),
                (ConfigMap, "c2".into(), None, false),
                (Secret, "s2".into(), k("pw"), false),
                (ConfigMap, "c1".into(), k("k"), true),
                (Secret, "s3".into(), k("a"), false),
                (Secret, "s3".into(), k("b"), false),
                (ConfigMap, "c3".into(), None, true),
                (Secret, "s4".into(), None, false),
                (ConfigMap, "c4".into(), k("z"), false),
                (Secret, "regcred".into(), None, false),
            ]
        );
        assert_eq!(c.reads[0].via.to_string(), "envFrom of container init");
        assert_eq!(c.reads[2].via.to_string(), "env PW of container app");
    }

    #[test]
    fn pod_template_locations_per_kind() {
        let t = json!({"spec": {"template": {"spec": pod()}}});
        for (g, k, w) in [
            ("apps", "StatefulSet", Workload::Restarting),
            ("apps", "DaemonSet", Workload::Restarting),
            ("apps", "ReplicaSet", Workload::Restarting),
            ("", "ReplicationController", Workload::Restarting),
            ("batch", "Job", Workload::RunOnce),
        ] {
            let c = consumer(g, k, &t).unwrap();
            assert_eq!((c.workload, c.reads.len()), (w, 10), "{k}");
        }
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": pod()}}}}});
        assert_eq!(consumer("batch", "CronJob", &cron).unwrap().reads.len(), 10);
        let p = json!({"spec": pod()});
        let c = consumer("", "Pod", &p).unwrap();
        assert_eq!((c.workload, c.reads.len()), (Workload::RunOnce, 10));
        let c = consumer("argoproj.io", "Rollout", &t).unwrap();
        assert_eq!((c.workload, c.reads.len()), (Workload::Restarting, 10));
        assert!(c.workload_ref.is_none());
        let r = json!({"spec": {"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}});
        let c = consumer("argoproj.io", "Rollout", &r).unwrap();
        assert_eq!(
            c.workload_ref,
            Some(WorkloadRef {
                group: "apps".into(),
                kind: "Deployment".into(),
                name: "d".into()
            })
        );
    }

    #[test]
    fn other_kinds_and_odd_shapes_are_tolerated() {
        assert!(consumer("example.com", "Deployment", &json!({})).is_none());
        assert!(consumer("", "ConfigMap", &json!({})).is_none());
        let odd = json!({"spec": {"template": {"spec": {
            "containers": "not a list",
            "volumes": [{"secret": {"secretName": 5}}, 7],
            "imagePullSecrets": [{"name": ""}]
        }}}});
        assert!(consumer("apps", "Deployment", &odd)
            .unwrap()
            .reads
            .is_empty());
    }
}
