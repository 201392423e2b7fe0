//! The model of Kubernetes and Argo CD objects that `order`, `kube` and `verify` stand on: plain
//! JSON values and annotation maps in, the facts each rule needs out, whether the objects come
//! from rendered manifests (`order`) or from the cluster (`verify`).
//!
//! The modules, one concept each:
//! - [`manifests`]: reading YAML streams, files, directories and stdin into objects;
//! - [`yaml`]: the YAML reader under it, with the line each document starts at;
//! - [`argo`]: Argo CD's rules for one object (phase, wave, hook, delete policy, kind order);
//! - [`applications`], [`argocd_cm`]: the Application manifests and argocd-cm;
//! - [`producers`], [`consumers`]: who makes a Secret/ConfigMap, who reads one;
//! - [`object`]: one manifest reduced to those facts.

pub mod applications;
pub mod argo;
pub mod argocd_cm;
pub mod consumers;
pub mod manifests;
pub mod object;
pub mod producers;
pub mod yaml;

/// The API group of an `apiVersion` (`apps/v1` -> `apps`, `v1` -> ``).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}
