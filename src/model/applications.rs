//! Argo CD Application manifests (`argoproj.io` `Application`): each app's wave in its parent
//! app-of-apps, its destination namespace, and the sources that render nothing.

use std::collections::BTreeMap;

use serde_json::Value;

use super::argo;
use super::manifests::{Doc, Origin};

/// One source of an Application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `repoURL`.
    pub repo_url: String,
    /// `path`.
    pub path: Option<String>,
    /// `chart`.
    pub chart: Option<String>,
    /// `ref`.
    pub ref_name: Option<String>,
}

/// The parts of an Application the ordering check needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Application {
    /// `metadata.name`, matched to `--app NAME`.
    pub name: String,
    /// Its wave in the parent app: the child Application is a resource of its parent, so the same
    /// `syncwaves.Wave` rule applies (`argocd.argoproj.io/sync-wave`, else Helm's weight, else 0).
    pub wave: i64,
    /// `spec.destination.namespace`: where its objects without a namespace go.
    pub destination_namespace: Option<String>,
    /// `spec.sources`, or `spec.source` alone.
    pub sources: Vec<Source>,
    /// Whether `spec.sources` is used (the ref-only rule applies to multi-source apps only).
    pub multi_source: bool,
    /// Where it was read.
    pub origin: Origin,
}

fn opt(v: &Value, k: &str) -> Option<String> {
    v.get(k)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

impl Application {
    /// The Application view of a document, or None when it is not an `argoproj.io` Application.
    pub fn from_doc(doc: &Doc) -> Option<Application> {
        let v = &doc.value;
        let api = v.get("apiVersion")?.as_str()?;
        if v.get("kind")?.as_str()? != "Application" || !api.starts_with("argoproj.io/") {
            return None;
        }
        let meta = v.get("metadata")?;
        let name = opt(meta, "name")?;
        let annotations: BTreeMap<String, String> = meta
            .get("annotations")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let source = |s: &Value| Source {
            repo_url: opt(s, "repoURL").unwrap_or_default(),
            path: opt(s, "path"),
            chart: opt(s, "chart"),
            ref_name: opt(s, "ref"),
        };
        let (sources, multi_source) = match spec.get("sources").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => (list.iter().map(source).collect(), true),
            _ => (spec.get("source").map(source).into_iter().collect(), false),
        };
        Some(Application {
            name,
            wave: argo::wave(&annotations).0,
            destination_namespace: spec.get("destination").and_then(|d| opt(d, "namespace")),
            sources,
            multi_source,
            origin: doc.origin.clone(),
        })
    }

    /// Sources that render no manifests, as (1-based index, reason). argo-cd
    /// `reposerver/repository/repository.go` (`GenerateManifests`) skips manifest generation for a
    /// source of a multi-source app with `ref` and no `path` ("ref only source"), and for one with
    /// neither `path` nor `chart`; docs `user-guide/multiple_sources.md`: "If the `path` field is
    /// not set, Argo CD will use the repository solely as a source of value files."
    pub fn empty_sources(&self) -> Vec<(usize, String)> {
        if !self.multi_source {
            return Vec::new();
        }
        self.sources
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.path.is_none() && s.chart.is_none() && !s.repo_url.starts_with("oci://")
            })
            .map(|(i, s)| {
                let why = match &s.ref_name {
                    Some(r) => format!("is `ref: {r}` with no path: it only provides value files"),
                    None => "has no `path` and no `chart`: it renders nothing".to_string(),
                };
                (i + 1, why)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::manifests::parse_stream;

    fn app(text: &str) -> Option<Application> {
        Application::from_doc(&parse_stream("a.yaml", text).unwrap()[0])
    }

    #[test]
    fn wave_destination_and_ref_only_source() {
        let a = app("apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: core-service
  annotations: {argocd.argoproj.io/sync-wave: \"1\"}
spec:
  destination: {namespace: ask}
  sources:
  - {repoURL: https://charts.example/ask, chart: core-service, targetRevision: 0.4.3}
  - {repoURL: https://git.example/gitops.git, ref: values, targetRevision: main}
  - {repoURL: https://git.example/gitops.git, ref: more, path: apps/x}
  - {repoURL: https://git.example/gitops.git}
  - {repoURL: oci://registry.example/charts}
")
        .unwrap();
        assert_eq!(a.wave, 1);
        assert_eq!(a.destination_namespace.as_deref(), Some("ask"));
        let empty = a.empty_sources();
        assert_eq!(empty.len(), 2, "{empty:?}");
        assert_eq!(empty[0].0, 2);
        assert!(empty[0].1.contains("`ref: values` with no path"));
        assert_eq!(empty[1].0, 4);
    }

    #[test]
    fn single_source_and_defaults() {
        let a = app("apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: secrets}
spec:
  source: {repoURL: https://git.example/gitops.git, ref: values}
")
        .unwrap();
        assert_eq!(a.wave, 0);
        assert!(a.empty_sources().is_empty());
        assert!(app("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n").is_none());
        assert!(
            app("apiVersion: example.com/v1\nkind: Application\nmetadata: {name: x}\n").is_none()
        );
    }
}
