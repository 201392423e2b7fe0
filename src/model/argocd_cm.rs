//! The `argocd-cm` ConfigMap's resource health customizations: whether Argo CD assesses the health
//! of a kind, which decides whether a sync wave waits for it.
//!
//! Argo CD removed the health assessment of `argoproj.io/Application` in 1.8 (docs
//! `operator-manual/health.md`, "Argocd App"), so without a customization a parent app-of-apps
//! applies its next wave of child Applications without waiting for the earlier ones to be Healthy.
//! Argo CD reads the customizations (`GetResourceOverrides` in argo-cd `util/settings/settings.go`)
//! from the old single key `resource.customizations` (a YAML map `<group>/<Kind>: {health.lua}`)
//! and then from split keys `resource.customizations.<type>.<group>_<Kind>`, which win; a health
//! script is looked up by exact `<group>/<Kind>` first, then by wildcard keys (`GetHealthScript`
//! in `util/lua/lua.go`). vault-seed checks that a non-empty script is configured; it does not
//! run the Lua.

use std::collections::BTreeMap;

use serde_json::Value;

use super::manifests::{Doc, Origin};

const LEGACY_KEY: &str = "resource.customizations";

/// The health customizations of an argocd-cm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgoCdCm {
    /// `metadata.name` (normally `argocd-cm`).
    pub name: String,
    /// Where it was read.
    pub origin: Origin,
    /// Override key (`group/Kind`, `Kind`, or a wildcard) -> the argocd-cm key that set a
    /// non-empty health script.
    health: BTreeMap<String, String>,
    /// Set when Argo CD cannot read the customizations at all (it then fails to load every
    /// override).
    pub problem: Option<String>,
}

/// `convertToOverrideKey`: `<group>_<Kind>` -> `group/Kind`; `<Kind>` alone for core kinds.
fn override_key(group_kind: &str) -> Result<String, String> {
    let parts: Vec<&str> = group_kind.split('_').collect();
    match parts.as_slice() {
        [g, k] => Ok(format!("{g}/{k}")),
        [k] if !k.is_empty() => Ok(k.to_string()),
        _ => Err(format!(
            "`{group_kind}` is not `<group>_<Kind>` or `<Kind>`"
        )),
    }
}

/// gobwas/glob without separators (as `argoglob.Match` compiles it), for `*` and `?`.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

impl ArgoCdCm {
    /// Read the health customizations from a ConfigMap's `data`.
    pub fn from_data(name: &str, origin: Origin, data: &BTreeMap<String, String>) -> ArgoCdCm {
        let mut health: BTreeMap<String, (String, bool)> = BTreeMap::new();
        let mut problem = None;
        if let Some(text) = data.get(LEGACY_KEY).filter(|t| !t.is_empty()) {
            match serde_yaml::from_str::<BTreeMap<String, serde_yaml::Value>>(text) {
                Ok(map) => {
                    for (k, v) in map {
                        let lua = v
                            .get("health.lua")
                            .and_then(serde_yaml::Value::as_str)
                            .unwrap_or_default();
                        health.insert(k, (LEGACY_KEY.to_string(), !lua.is_empty()));
                    }
                }
                Err(_) => {
                    problem = Some(format!("`{LEGACY_KEY}` is not a YAML map"));
                }
            }
        }
        // `appendResourceOverridesFromSplitKeys`: split keys are applied after the legacy map.
        for (k, v) in data {
            if !k.starts_with(LEGACY_KEY) {
                continue;
            }
            let parts: Vec<&str> = k.splitn(4, '.').collect();
            if parts.len() < 4 {
                continue;
            }
            let key = match override_key(parts[3]) {
                Ok(key) if key == "all" => "*/*".to_string(),
                Ok(key) => key,
                Err(e) => {
                    problem.get_or_insert(format!("`{k}`: {e}"));
                    continue;
                }
            };
            match parts[2] {
                "health" => {
                    health.insert(key, (k.clone(), !v.is_empty()));
                }
                // `strconv.ParseBool`'s accepted spellings.
                "useOpenLibs"
                    if !matches!(
                        v.as_str(),
                        "1" | "t"
                            | "T"
                            | "TRUE"
                            | "true"
                            | "True"
                            | "0"
                            | "f"
                            | "F"
                            | "FALSE"
                            | "false"
                            | "False"
                    ) =>
                {
                    problem.get_or_insert(format!("`{k}` is not a boolean"));
                }
                "useOpenLibs"
                | "actions"
                | "ignoreDifferences"
                | "ignoreResourceUpdates"
                | "knownTypeFields" => {}
                other => {
                    problem.get_or_insert(format!(
                        "`{k}`: resource customization type `{other}` is not supported"
                    ));
                }
            }
        }
        ArgoCdCm {
            name: name.to_string(),
            origin,
            health: health
                .into_iter()
                .filter(|(_, (_, set))| *set)
                .map(|(k, (from, _))| (k, from))
                .collect(),
            problem,
        }
    }

    /// The argocd-cm ConfigMap of a document, or None when it is not a ConfigMap.
    pub fn from_doc(doc: &Doc) -> Option<ArgoCdCm> {
        let v = &doc.value;
        if v.get("kind")?.as_str()? != "ConfigMap" || v.get("apiVersion")?.as_str()? != "v1" {
            return None;
        }
        let name = v
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let data: BTreeMap<String, String> = v
            .get("data")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), str::to_string),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(ArgoCdCm::from_data(name, doc.origin.clone(), &data))
    }

    /// The argocd-cm key that gives `group`/`kind` a health check, if any (None also when
    /// `problem` is set: Argo CD then loads no customization).
    pub fn health_check(&self, group: &str, kind: &str) -> Option<&str> {
        if self.problem.is_some() {
            return None;
        }
        let key = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{group}/{kind}")
        };
        if let Some(from) = self.health.get(&key) {
            return Some(from);
        }
        self.health
            .iter()
            .find(|(pattern, _)| glob_match(pattern, &key))
            .map(|(_, from)| from.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::manifests::parse_stream;

    fn fixture(name: &str) -> ArgoCdCm {
        let path = format!(
            "{}/tests/fixtures/argocd/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        ArgoCdCm::from_doc(&parse_stream(&path, &text).unwrap()[0]).unwrap()
    }

    fn cm(pairs: &[(&str, &str)]) -> ArgoCdCm {
        let data = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ArgoCdCm::from_data(
            "argocd-cm",
            Origin {
                file: "cm.yaml".into(),
                line: 1,
            },
            &data,
        )
    }

    #[test]
    fn the_three_fixture_forms() {
        assert_eq!(
            fixture("argocd-cm-with-app-health.yaml").health_check("argoproj.io", "Application"),
            Some("resource.customizations.health.argoproj.io_Application")
        );
        assert_eq!(
            fixture("argocd-cm-with-app-health-legacy-key.yaml")
                .health_check("argoproj.io", "Application"),
            Some("resource.customizations")
        );
        let without = fixture("argocd-cm-without.yaml");
        assert_eq!(without.health_check("argoproj.io", "Application"), None);
        assert_eq!(without.problem, None);
    }

    #[test]
    fn wildcards_empty_scripts_and_kind_only_keys() {
        let c = cm(&[("resource.customizations.health.argoproj.io_*", "hs = {}")]);
        assert!(c.health_check("argoproj.io", "Application").is_some());
        let c = cm(&[("resource.customizations.health.*.hashicorp.com_Vault*", "x")]);
        assert!(c
            .health_check("secrets.hashicorp.com", "VaultStaticSecret")
            .is_some());
        // An empty split key overrides the legacy script (Argo CD sets HealthLua = "").
        let c = cm(&[
            (
                "resource.customizations",
                "argoproj.io/Application:\n  health.lua: |\n    hs = {}\n",
            ),
            ("resource.customizations.health.argoproj.io_Application", ""),
        ]);
        assert_eq!(c.health_check("argoproj.io", "Application"), None);
        // `Application` alone is a core-group key: it does not match argoproj.io/Application.
        let c = cm(&[("resource.customizations.health.Application", "x")]);
        assert_eq!(c.health_check("argoproj.io", "Application"), None);
    }

    #[test]
    fn unreadable_customizations_give_no_health_check() {
        for pairs in [
            vec![("resource.customizations", "[not, a, map")],
            vec![("resource.customizations.health.a_b_c", "x")],
            vec![(
                "resource.customizations.colour.argoproj.io_Application",
                "x",
            )],
            vec![(
                "resource.customizations.useOpenLibs.argoproj.io_Application",
                "maybe",
            )],
        ] {
            let mut all = pairs.clone();
            all.push((
                "resource.customizations.health.argoproj.io_Application",
                "hs = {}",
            ));
            let c = cm(&all);
            assert!(c.problem.is_some(), "{pairs:?}");
            assert_eq!(c.health_check("argoproj.io", "Application"), None);
        }
    }

    #[test]
    fn glob() {
        assert!(glob_match("*/*", "argoproj.io/Application"));
        assert!(glob_match(
            "argoproj.io/App?ication",
            "argoproj.io/Application"
        ));
        assert!(!glob_match("argoproj.io/App", "argoproj.io/Application"));
        assert!(glob_match("*", ""));
    }
}
