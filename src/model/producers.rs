//! Producers: what makes a Secret or ConfigMap, and which keys it will hold.
//!
//! - a Secret or ConfigMap manifest (keys: `data`, `stringData`, `binaryData`);
//! - an ESO ExternalSecret (`external-secrets.io`): its `spec.target.name`, else its own name,
//!   unless `creationPolicy` is `None` (creates nothing) or `Merge` (only merges into a Secret that
//!   must exist already); keys from `spec.data[].secretKey`, or the template's `data` keys
//!   (`ApplyTemplate` in ESO's `pkg/controllers/externalsecret/externalsecret_controller_template.go`);
//!   `dataFrom` and `templateFrom` make them unknowable offline;
//! - a VSO secret (`secrets.hashicorp.com` VaultStaticSecret, VaultDynamicSecret, VaultPKISecret,
//!   HCPVaultSecretsApp): `spec.destination.name` when `destination.create` is true (default false:
//!   VSO then writes only into an existing Secret; VSO `api/v1beta1/common.go`, `Destination`);
//!   keys come from Vault, so they are unknowable offline;
//! - `--exists KIND/NAMESPACE/NAME`: made outside the apps checked.
//!
//! Only key names are ever read; values are never kept.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

/// The two kinds a Pod reads data from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum DataKind {
    /// `v1` Secret.
    Secret,
    /// `v1` ConfigMap.
    ConfigMap,
}

impl DataKind {
    /// The Kubernetes kind.
    pub fn name(self) -> &'static str {
        match self {
            DataKind::Secret => "Secret",
            DataKind::ConfigMap => "ConfigMap",
        }
    }

    /// Parse a kind as `--exists` takes it (case-insensitive).
    pub fn parse(s: &str) -> Option<DataKind> {
        match s.to_ascii_lowercase().as_str() {
            "secret" => Some(DataKind::Secret),
            "configmap" => Some(DataKind::ConfigMap),
            _ => None,
        }
    }
}

impl std::fmt::Display for DataKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The keys a producer makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keys {
    /// Exactly these.
    Known(BTreeSet<String>),
    /// At least these; others cannot be known offline, for the reason given.
    Open {
        /// Keys known to be there.
        known: BTreeSet<String>,
        /// Why the rest is unknowable.
        why: String,
    },
}

impl Keys {
    /// The keys known to be there.
    pub fn known(&self) -> &BTreeSet<String> {
        match self {
            Keys::Known(k) | Keys::Open { known: k, .. } => k,
        }
    }
}

/// Who writes the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Maker {
    /// The manifest is the object itself: it exists once Argo CD applied it.
    Manifest,
    /// An operator writes it some time after Argo CD applied this object (its kind and group).
    Operator {
        /// API group of the object (`external-secrets.io`, `secrets.hashicorp.com`).
        group: String,
        /// Its kind.
        kind: String,
    },
}

/// One Secret or ConfigMap an object makes (or would make, see `creates`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Make {
    /// Secret or ConfigMap.
    pub data: DataKind,
    /// Its name.
    pub name: String,
    /// Its namespace, when the manifest says.
    pub namespace: Option<String>,
    /// False when the object does not create it (`creationPolicy: None`/`Merge`,
    /// `destination.create: false`); `why_not` says why.
    pub creates: bool,
    /// Why it does not create the object.
    pub why_not: Option<String>,
    /// Its keys.
    pub keys: Keys,
    /// Who writes it.
    pub maker: Maker,
    /// Deleted with the object that makes it: the manifest itself; an ExternalSecret's Secret
    /// under `creationPolicy: Owner` (ESO sets an ownerReference; `Orphan` and `CreateOrMerge`
    /// keep the Secret); a VSO Secret it created (VSO sets ownerReferences,
    /// `helpers/secrets.go`). A hook deleted after the sync takes an owned object with it.
    pub owned: bool,
}

/// VSO kinds whose `spec.destination` names a Secret.
pub const VSO_KINDS: [&str; 4] = [
    "VaultStaticSecret",
    "VaultDynamicSecret",
    "VaultPKISecret",
    "HCPVaultSecretsApp",
];

/// Whether ESO keeps the fetched keys in the target Secret beside a `spec.target.template`
/// (`None`: no template): with `mergePolicy: Merge`, or a template with neither `data` nor
/// `templateFrom`; the default `Replace` writes only the template's keys (external-secrets
/// v2.9.0 `pkg/controllers/externalsecret/externalsecret_controller_template.go`,
/// `ApplyTemplate`; the default in `apis/externalsecrets/v1/externalsecret_types.go`).
pub fn keeps_fetched_keys(template: Option<&Value>) -> bool {
    let Some(t) = template.filter(|t| t.is_object()) else {
        return true;
    };
    let has = |k: &str| match t.get(k) {
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    str_at(t, &["mergePolicy"]) == Some("Merge") || (!has("data") && !has("templateFrom"))
}

fn keys_of(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

/// What an object with this group, kind, name and namespace makes.
pub fn makes(
    group: &str,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    value: &Value,
) -> Vec<Make> {
    let namespace = namespace.map(str::to_string);
    match (group, kind) {
        ("", "Secret") => {
            let known: BTreeSet<String> = keys_of(value.get("data"))
                .into_iter()
                .chain(keys_of(value.get("stringData")))
                .collect();
            // Kubernetes' token controller fills in `token`, `ca.crt` and `namespace`.
            let keys = if str_at(value, &["type"]) == Some("kubernetes.io/service-account-token") {
                Keys::Open {
                    known,
                    why: "the token controller fills in a service-account-token Secret".into(),
                }
            } else {
                Keys::Known(known)
            };
            vec![Make {
                data: DataKind::Secret,
                name: name.to_string(),
                namespace,
                creates: true,
                why_not: None,
                keys,
                maker: Maker::Manifest,
                owned: true,
            }]
        }
        ("", "ConfigMap") => vec![Make {
            data: DataKind::ConfigMap,
            name: name.to_string(),
            namespace,
            creates: true,
            why_not: None,
            keys: Keys::Known(
                keys_of(value.get("data"))
                    .into_iter()
                    .chain(keys_of(value.get("binaryData")))
                    .collect(),
            ),
            maker: Maker::Manifest,
            owned: true,
        }],
        ("external-secrets.io", "ExternalSecret") => external_secret(name, namespace, value)
            .into_iter()
            .collect(),
        ("secrets.hashicorp.com", k) if VSO_KINDS.contains(&k) => {
            vso(k, namespace, value).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

fn external_secret(name: &str, namespace: Option<String>, value: &Value) -> Option<Make> {
    let spec = value.get("spec").unwrap_or(&Value::Null);
    let target = spec.get("target").unwrap_or(&Value::Null);
    // `ExternalSecretTarget.Manifest`: a generic target makes another kind instead of a Secret.
    let data = match str_at(target, &["manifest", "kind"]) {
        None | Some("Secret") => DataKind::Secret,
        Some("ConfigMap") => DataKind::ConfigMap,
        Some(_) => return None,
    };
    let target_name = str_at(target, &["name"])
        .filter(|s| !s.is_empty())
        .unwrap_or(name);
    // `creationPolicy` defaults to Owner (`+kubebuilder:default="Owner"`).
    let policy = str_at(target, &["creationPolicy"]).unwrap_or("Owner");
    let (creates, why_not) = match policy {
        "Owner" | "Orphan" | "CreateOrMerge" => (true, None),
        "Merge" => (
            false,
            Some("its `creationPolicy: Merge` only merges keys into a Secret that must exist already"),
        ),
        "None" => (false, Some("its `creationPolicy: None` creates no Secret")),
        _ => (false, Some("its `creationPolicy` is not one ESO knows")),
    };
    let data_keys: BTreeSet<String> = spec
        .get("data")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|d| d.get("secretKey").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let has_data_from = spec
        .get("dataFrom")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    // ESO's ApplyTemplate: template.data (and templateFrom) replace the fetched keys unless
    // `mergePolicy: Merge`; a template with neither keeps the fetched keys.
    let template = target.get("template").filter(|t| t.is_object());
    let template_keys = template.map(|t| keys_of(t.get("data"))).unwrap_or_default();
    let template_from = template
        .and_then(|t| t.get("templateFrom"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let merge_fetched = keeps_fetched_keys(template);
    let mut known = template_keys;
    let mut unknowable = Vec::new();
    if template_from {
        unknowable.push("`spec.target.template.templateFrom`");
    }
    if merge_fetched {
        known.extend(data_keys);
        if has_data_from {
            unknowable.push("`spec.dataFrom`");
        }
    }
    if matches!(policy, "Merge" | "CreateOrMerge") {
        unknowable.push("the keys the Secret already has (`creationPolicy` merges)");
    }
    let keys = if unknowable.is_empty() {
        Keys::Known(known)
    } else {
        Keys::Open {
            known,
            why: format!("it takes keys from {}", unknowable.join(" and ")),
        }
    };
    Some(Make {
        data,
        name: target_name.to_string(),
        namespace,
        creates,
        why_not: why_not.map(str::to_string),
        keys,
        maker: Maker::Operator {
            group: "external-secrets.io".into(),
            kind: "ExternalSecret".into(),
        },
        owned: policy == "Owner",
    })
}

fn vso(kind: &str, namespace: Option<String>, value: &Value) -> Option<Make> {
    let dest = value.get("spec")?.get("destination")?;
    let name = str_at(dest, &["name"]).filter(|s| !s.is_empty())?;
    let create = dest.get("create").and_then(Value::as_bool).unwrap_or(false);
    let templates = dest
        .get("transformation")
        .map(|t| keys_of(t.get("templates")))
        .unwrap_or_default();
    Some(Make {
        data: DataKind::Secret,
        name: name.to_string(),
        namespace,
        creates: create,
        why_not: (!create).then(|| {
            "its `destination.create` is false (the default): VSO then writes only into a Secret that exists already".to_string()
        }),
        keys: Keys::Open {
            known: templates,
            why: "VSO copies them from Vault".into(),
        },
        maker: Maker::Operator {
            group: "secrets.hashicorp.com".into(),
            kind: kind.to_string(),
        },
        owned: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn es(spec: Value) -> Make {
        let v = json!({"spec": spec});
        let mut m = makes(
            "external-secrets.io",
            "ExternalSecret",
            "es",
            Some("ns"),
            &v,
        );
        assert_eq!(m.len(), 1);
        m.remove(0)
    }

    fn set(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn secret_and_configmap_keys_never_values() {
        let v = json!({"data": {"a": "c2VjcmV0"}, "stringData": {"b": "hunter2"}});
        let m = makes("", "Secret", "s", None, &v);
        assert_eq!(m[0].keys, Keys::Known(set(&["a", "b"])));
        let v = json!({"data": {"x": "1"}, "binaryData": {"y": "AA=="}});
        let m = makes("", "ConfigMap", "c", None, &v);
        assert_eq!(m[0].keys, Keys::Known(set(&["x", "y"])));
        let v = json!({"type": "kubernetes.io/service-account-token", "data": {}});
        assert!(matches!(
            makes("", "Secret", "t", None, &v)[0].keys,
            Keys::Open { .. }
        ));
        // A Secret of another API group is not a core Secret.
        assert!(makes("example.com", "Secret", "s", None, &v).is_empty());
    }

    #[test]
    fn external_secret_target_name_defaults_to_its_own_name() {
        assert_eq!(es(json!({})).name, "es");
        assert_eq!(es(json!({"target": {"name": "t"}})).name, "t");
        assert!(es(json!({})).creates);
    }

    #[test]
    fn external_secret_creation_policies() {
        for (p, creates) in [
            ("Owner", true),
            ("Orphan", true),
            ("CreateOrMerge", true),
            ("Merge", false),
            ("None", false),
        ] {
            let m = es(json!({"target": {"creationPolicy": p}}));
            assert_eq!(m.creates, creates, "{p}");
            assert_eq!(m.why_not.is_some(), !creates, "{p}");
        }
    }

    #[test]
    fn external_secret_keys() {
        let data = json!([{"secretKey": "a", "remoteRef": {"key": "k"}}, {"secretKey": "b"}]);
        assert_eq!(
            es(json!({"data": data})).keys,
            Keys::Known(set(&["a", "b"]))
        );
        let m = es(json!({"data": data, "dataFrom": [{"extract": {"key": "x"}}]}));
        assert!(
            matches!(&m.keys, Keys::Open { known, why } if *known == set(&["a", "b"]) && why.contains("dataFrom"))
        );
        // A template with data replaces the fetched keys...
        let m = es(json!({"data": data, "target": {"template": {"data": {"url": "{{ .a }}"}}}}));
        assert_eq!(m.keys, Keys::Known(set(&["url"])));
        // ...unless mergePolicy is Merge; a template without data keeps them.
        let m = es(
            json!({"data": data, "target": {"template": {"mergePolicy": "Merge", "data": {"url": "x"}}}}),
        );
        assert_eq!(m.keys, Keys::Known(set(&["a", "b", "url"])));
        let m = es(json!({"data": data, "target": {"template": {"type": "Opaque"}}}));
        assert_eq!(m.keys, Keys::Known(set(&["a", "b"])));
        let m = es(json!({"target": {"template": {"templateFrom": [{"configMap": {}}]}}}));
        assert!(matches!(m.keys, Keys::Open { .. }));
    }

    #[test]
    fn external_secret_generic_target() {
        let m = es(json!({"target": {"manifest": {"apiVersion": "v1", "kind": "ConfigMap"}}}));
        assert_eq!(m.data, DataKind::ConfigMap);
        let v = json!({"spec": {"target": {"manifest": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application"}}}});
        assert!(makes("external-secrets.io", "ExternalSecret", "es", None, &v).is_empty());
    }

    #[test]
    fn vso_destination_create() {
        let v = json!({"spec": {"destination": {"name": "d", "create": true}}});
        let m = &makes("secrets.hashicorp.com", "VaultStaticSecret", "v", None, &v)[0];
        assert!(m.creates && m.name == "d");
        assert!(matches!(m.keys, Keys::Open { .. }));
        let v = json!({"spec": {"destination": {"name": "d"}}});
        let m = &makes("secrets.hashicorp.com", "VaultDynamicSecret", "v", None, &v)[0];
        assert!(!m.creates && m.why_not.is_some());
        assert!(makes("secrets.hashicorp.com", "VaultAuth", "v", None, &v).is_empty());
    }
}
