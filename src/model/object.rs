//! One manifest reduced to what the ordering check needs: identity, placement in the sync, what
//! it makes and what it reads. The JSON value is dropped after this, so no value of a Secret
//! manifest is kept.

use std::collections::BTreeMap;

use serde_json::Value;

use super::argo::{self, Placement};
use super::consumers::{self, Consumer};
use super::group_of;
use super::manifests::{Doc, Origin};
use super::producers::{self, Make};

/// A manifest of an app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// API group (`""` for core).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// `metadata.name`; for a hook with only `generateName`, that prefix and `*` (Argo CD adds a
    /// suffix, so nothing can refer to it by name).
    pub name: String,
    /// `metadata.namespace`, when set.
    pub namespace: Option<String>,
    /// When Argo CD applies it.
    pub placement: Placement,
    /// Where it was read.
    pub origin: Origin,
    /// The Secrets and ConfigMaps it makes.
    pub makes: Vec<Make>,
    /// What it reads, for workloads.
    pub consumer: Option<Consumer>,
    /// Not a workload vault-seed reads, yet its `spec` holds containers or a pod template.
    pub unknown_pod_template: bool,
}

impl Object {
    /// Reduce a document. Errors name what Argo CD itself would reject (annotations that are not
    /// strings).
    pub fn from_doc(doc: &Doc) -> Result<Object, String> {
        let v = &doc.value;
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or_default();
        let group = group_of(
            v.get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        let meta = v.get("metadata").unwrap_or(&Value::Null);
        let text = |k: &str| {
            meta.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let name = text("name")
            .or_else(|| text("generateName").map(|g| format!("{g}*")))
            .unwrap_or_default();
        let namespace = text("namespace");
        let mut annotations = BTreeMap::new();
        if let Some(map) = meta.get("annotations") {
            let Some(map) = map.as_object() else {
                return Err(format!(
                    "the {kind} {name}'s `metadata.annotations` is not a map"
                ));
            };
            for (k, val) in map {
                match val {
                    Value::String(s) => {
                        annotations.insert(k.clone(), s.clone());
                    }
                    Value::Null => {}
                    _ => {
                        return Err(format!(
                            "the {kind} {name}'s annotation `{k}` is not a string (quote it: \
                             Kubernetes and Argo CD reject it)"
                        ))
                    }
                }
            }
        }
        let consumer = consumers::consumer(group, kind, v);
        Ok(Object {
            makes: producers::makes(group, kind, &name, namespace.as_deref(), v),
            unknown_pod_template: consumer.is_none() && consumers::has_unknown_pod_template(v),
            consumer,
            placement: Placement::of(&annotations),
            group: group.to_string(),
            kind: kind.to_string(),
            name,
            namespace,
            origin: doc.origin.clone(),
        })
    }

    /// Argo CD's kind order of this object within its wave.
    pub fn kind_order(&self) -> i32 {
        argo::kind_order(&self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::manifests::parse_stream;

    #[test]
    fn groups() {
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(
            group_of("external-secrets.io/v1beta1"),
            "external-secrets.io"
        );
    }

    #[test]
    fn annotations_must_be_strings() {
        let docs = parse_stream(
            "x.yaml",
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    argocd.argoproj.io/sync-wave: 4\n",
        )
        .unwrap();
        let e = Object::from_doc(&docs[0]).unwrap_err();
        assert!(e.contains("argocd.argoproj.io/sync-wave"), "{e}");
    }

    #[test]
    fn a_hook_job_with_generate_name() {
        let docs = parse_stream(
            "x.yaml",
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n  annotations:\n    argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/sync-wave: \"-1\"\n",
        )
        .unwrap();
        let o = Object::from_doc(&docs[0]).unwrap();
        assert_eq!(o.name, "migrate-*");
        assert_eq!((o.placement.hook, o.placement.wave), (true, -1));
        assert!(o.consumer.is_some() && o.makes.is_empty());
    }
}
