//! `vault-seed order`: prove, offline, that every Secret and ConfigMap exists before the first
//! workload that reads it runs, under Argo CD's sync order (app waves, phases, waves, kinds).
//!
//! The sync-wave runbook's bugs are what it catches: a secrets file never rendered (a `ref`
//! source without `path`), a PreSync hook reading what the Sync phase creates, and app waves that
//! do not wait for Healthy because argocd-cm lacks the Application health check.
//!
//! It stands on the model of objects in [`crate::model`] (manifests, Argo CD's rules, producers
//! and consumers), which the live check of `verify` applies to objects read from the cluster.
//! Here: [`check`](mod@check), the judgement; [`findings`], what is reported.

pub mod check;
pub mod findings;

use std::io::Read;
use std::path::Path;

pub use crate::model::manifests::{Budget, LoadError};
pub use check::{check, App, Applications, Exists, Input, SpecEso};
pub use findings::{Finding, Report, Rule, Severity};

use crate::model::applications::Application;
use crate::model::argocd_cm::ArgoCdCm;
use crate::model::manifests;
use crate::model::object::Object;
use crate::model::producers::DataKind;

/// Read one app's manifests from its paths (a file, a directory, or `-` for stdin).
/// Each document is reduced to an [`Object`] as it is read: its JSON is not kept.
pub fn load_app(
    name: &str,
    paths: &[&Path],
    stdin: &mut dyn Read,
    budget: &Budget,
) -> Result<App, Vec<LoadError>> {
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        let read = manifests::for_each_doc(path, stdin, budget, &mut |doc| match Object::from_doc(
            &doc,
        ) {
            Ok(o) => objects.push(o),
            Err(what) => errors.push(LoadError::Invalid {
                file: doc.origin.file.clone(),
                line: doc.origin.line,
                what,
            }),
        });
        if let Err(e) = read {
            errors.extend(e);
        }
    }
    if errors.is_empty() {
        Ok(App {
            name: name.to_string(),
            objects,
        })
    } else {
        Err(errors)
    }
}

/// Read `--applications`: every `argoproj.io` Application of a file or directory.
pub fn load_applications(path: &Path, budget: &Budget) -> Result<Applications, Vec<LoadError>> {
    let docs = manifests::load_path(path, &mut std::io::empty(), budget)?;
    let items: Vec<Application> = docs.iter().filter_map(Application::from_doc).collect();
    if items.is_empty() {
        return Err(vec![LoadError::Missing {
            path: path.display().to_string(),
            what: "Argo CD Application (`apiVersion: argoproj.io/v1alpha1`, `kind: Application`)",
        }]);
    }
    Ok(Applications {
        source: path.display().to_string(),
        items,
    })
}

/// Read `--argocd-cm`: the ConfigMap named `argocd-cm`, else the file's only ConfigMap.
pub fn load_argocd_cm(path: &Path, budget: &Budget) -> Result<ArgoCdCm, Vec<LoadError>> {
    let docs = manifests::load_path(path, &mut std::io::empty(), budget)?;
    let cms: Vec<ArgoCdCm> = docs.iter().filter_map(ArgoCdCm::from_doc).collect();
    let named = cms.iter().position(|c| c.name == "argocd-cm");
    match (named, cms.len()) {
        (Some(i), _) => Ok(cms[i].clone()),
        (None, 1) => Ok(cms[0].clone()),
        _ => Err(vec![LoadError::Missing {
            path: path.display().to_string(),
            what: "ConfigMap named `argocd-cm`",
        }]),
    }
}

/// Parse `--exists KIND/NAMESPACE/NAME`.
pub fn parse_exists(s: &str) -> Result<Exists, String> {
    let parts: Vec<&str> = s.split('/').collect();
    let [kind, namespace, name] = parts.as_slice() else {
        return Err(format!(
            "`{}` is not KIND/NAMESPACE/NAME (e.g. `Secret/ask/core-pg-superuser`)",
            findings::clean(s)
        ));
    };
    let data = DataKind::parse(kind).ok_or_else(|| {
        format!(
            "`{}`: the kind must be `Secret` or `ConfigMap`",
            findings::clean(s)
        )
    })?;
    if namespace.is_empty() || name.is_empty() {
        return Err(format!(
            "`{}`: the namespace and the name must not be empty",
            findings::clean(s)
        ));
    }
    Ok(Exists {
        data,
        namespace: namespace.to_string(),
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests;
