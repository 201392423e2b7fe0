//! What vault-seed reads from the Vault Secrets Operator's objects (`secrets.hashicorp.com/v1beta1`),
//! and how it is read from their JSON. Kept apart from fetching so it is tested on the objects
//! VSO v1.4.1 writes (`tests/fixtures/vso/`, whose README says which source file each fact comes
//! from).
//!
//! VSO's rules, from hashicorp/vault-secrets-operator v1.4.1:
//! - a VaultStaticSecret's conditions are `SecretSynced`, `Healthy` and (from v1.3.0) `Ready`
//!   (`consts/types.go`); `Healthy`/`Ready` describe the latest reconcile, `SecretSynced` only
//!   moves when the Secret is (re)written or a sync fails (`controllers/vaultstaticsecret_controller.go`,
//!   issue #1225), so it can stay False after a recovery;
//! - `status.lastGeneration` is written on every status update, failed or not, so it says
//!   whether VSO processed the current spec, not whether it succeeded;
//! - `status.secretMAC` is set once the Secret was written (with `hmacSecretData`, default true);
//! - `spec.vaultAuthRef` is `name` or `namespace/name`; empty means the VaultAuth `default` in the
//!   operator's namespace, and a VaultAuth's empty `vaultConnectionRef` the VaultConnection
//!   `default` there (`common/common.go` `ParseResourceRef`, `setVaultConnectionRef`).

use serde::Serialize;
use serde_json::Value;

use super::field::{BadField, FieldProblem};
use super::status::{condition, name_and_namespace, object_name};
use super::vso_transformation::{transformation_of, Transformation};
use super::KubeError;

/// The group of every VSO kind.
pub const VSO_GROUP: &str = "secrets.hashicorp.com";
/// The version vault-seed reads (the only one VSO v1.x serves).
pub const VSO_VERSION: &str = "v1beta1";
/// The name VSO gives the default VaultAuth and VaultConnection (`consts.NameDefault`).
pub const VSO_DEFAULT_NAME: &str = "default";

/// One VSO kind: its kind and its REST plural.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VsoKind {
    /// `VaultStaticSecret`.
    pub kind: &'static str,
    /// `vaultstaticsecrets`.
    pub plural: &'static str,
}

/// `VaultStaticSecret`.
pub const VAULT_STATIC_SECRET: VsoKind = VsoKind {
    kind: "VaultStaticSecret",
    plural: "vaultstaticsecrets",
};
/// `VaultAuth`.
pub const VAULT_AUTH: VsoKind = VsoKind {
    kind: "VaultAuth",
    plural: "vaultauths",
};
/// `VaultConnection`.
pub const VAULT_CONNECTION: VsoKind = VsoKind {
    kind: "VaultConnection",
    plural: "vaultconnections",
};

/// How a VaultAuth logs in to Vault, as its own spec says (no VaultAuthGlobal merged in).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VaultAuthLogin {
    /// `spec.method`.
    pub method: Option<String>,
    /// `spec.mount`: the auth method's mount.
    pub mount: Option<String>,
    /// The method's role: `spec.<method>.role`, or `spec.appRole.roleId`.
    pub role: Option<String>,
    /// `spec.namespace`: the Vault namespace it logs in to; `None` for none (the root).
    pub vault_namespace: Option<String>,
    /// `spec.vaultAuthGlobalRef` is set: empty fields come from a VaultAuthGlobal.
    pub global_ref: bool,
}

/// One `metav1.Condition` of a VSO object (its status in `ready`, whatever its type).
pub type Condition = super::ReadyCondition;

/// What vault-seed needs to know about one VaultStaticSecret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VaultStaticSecretInfo {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.lastGeneration`: the generation VSO last processed.
    pub last_generation: Option<i64>,
    /// The `Ready` condition (VSO >= 1.3).
    pub ready: Option<Condition>,
    /// The `Healthy` condition (VSO >= 1.0).
    pub healthy: Option<Condition>,
    /// The `SecretSynced` condition.
    pub secret_synced: Option<Condition>,
    /// `status.secretMAC` is set.
    pub has_secret_mac: bool,
    /// `spec.hmacSecretData` (default true).
    pub hmac: bool,
    /// `spec.mount`.
    pub mount: String,
    /// `spec.type`: `kv-v1` or `kv-v2`.
    pub kv_type: String,
    /// `spec.path`.
    pub path: String,
    /// `spec.version`: a KV v2 version VSO reads instead of the latest; `None` for the latest.
    pub pinned_version: Option<u64>,
    /// `spec.destination.name`.
    pub destination: String,
    /// `spec.destination.type` as written; empty when unset (VSO then writes `Opaque`).
    pub destination_type: String,
    /// `spec.destination.create`: VSO owns the Secret and sets its type (default false).
    pub destination_create: bool,
    /// `spec.destination.transformation`: which keys VSO writes into the destination Secret
    /// ([`Transformation::destination_keys`]).
    pub transformation: Transformation,
    /// `spec.vaultAuthRef` as written; `None` when empty (the default VaultAuth).
    pub vault_auth_ref: Option<String>,
    /// `spec.namespace`: the Vault namespace it reads in, instead of its VaultAuth's.
    pub vault_namespace: Option<String>,
    /// Fields missing or malformed (`spec.mount`, `spec.path`, `spec.type`, ...).
    pub bad: Vec<BadField>,
    /// `spec.rolloutRestartTargets`: the workloads VSO restarts when it changes the Secret's
    /// data, as `(kind, name)` with VSO's kind names (`argo.Rollout`).
    pub rollout_restart_targets: Vec<(String, String)>,
    /// `spec.rolloutRestartTargets` (or an entry) is not of the shape VSO writes: what is wrong.
    pub rollout_restart_bad: Option<String>,
}

/// What vault-seed needs to know about a VaultAuth or a VaultConnection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VsoObjectInfo {
    /// `VaultAuth` or `VaultConnection`.
    pub kind: &'static str,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `status.valid`.
    pub valid: Option<bool>,
    /// `status.error` (VaultAuth), when set.
    pub error: Option<String>,
    /// The `Healthy` condition.
    pub healthy: Option<Condition>,
    /// A VaultAuth's `spec.vaultConnectionRef`; `None` when empty.
    pub connection_ref: Option<String>,
    /// A VaultAuth's `spec.method`/`spec.mount`/`spec.kubernetes.role` as `method auth/<mount>
    /// role <role>`, for people.
    pub login: Option<String>,
    /// A VaultAuth's login, field by field.
    pub auth: Option<VaultAuthLogin>,
    /// A VaultConnection's `spec.address`.
    pub address: Option<String>,
    /// Fields missing or malformed.
    pub bad: Vec<BadField>,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The JSON type of `v`, for a message.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The string at `pointer` (`field` in messages): `None` when absent, `null` or empty; a value
/// that is not a string is recorded in `bad`. With `required`, absent or empty is recorded too.
fn string_field(
    obj: &Value,
    pointer: &str,
    field: &'static str,
    required: bool,
    bad: &mut Vec<BadField>,
) -> Option<String> {
    let problem = match obj.pointer(pointer) {
        None | Some(Value::Null) => FieldProblem::Missing,
        Some(Value::String(s)) if s.is_empty() => FieldProblem::Empty,
        Some(Value::String(s)) => return Some(text(s)),
        Some(other) => FieldProblem::NotA {
            want: "a string",
            found: Some(json_type(other)),
        },
    };
    if required || matches!(problem, FieldProblem::NotA { .. }) {
        bad.push(BadField::new(field, problem));
    }
    None
}

/// Where a method's role is (`api/v1beta1/vaultauth_types.go`: `VaultAuthConfig*`); `None` for a
/// method vault-seed does not know.
fn role_field(method: &str) -> Option<(&'static str, &'static str)> {
    Some(match method {
        "kubernetes" => ("/spec/kubernetes/role", "spec.kubernetes.role"),
        "jwt" => ("/spec/jwt/role", "spec.jwt.role"),
        "appRole" => ("/spec/appRole/roleId", "spec.appRole.roleId"),
        "aws" => ("/spec/aws/role", "spec.aws.role"),
        "gcp" => ("/spec/gcp/role", "spec.gcp.role"),
        _ => return None,
    })
}

/// A VaultAuth's login. Without `vaultAuthGlobalRef`, the method, mount and role are required
/// (VSO's `Validate` refuses an empty role); with it, empty ones come from the VaultAuthGlobal.
fn vault_auth_login(obj: &Value, bad: &mut Vec<BadField>) -> VaultAuthLogin {
    let global_ref = obj
        .pointer("/spec/vaultAuthGlobalRef")
        .is_some_and(|g| !g.is_null());
    let required = !global_ref;
    let method = string_field(obj, "/spec/method", "spec.method", required, bad);
    let mount = string_field(obj, "/spec/mount", "spec.mount", required, bad);
    let role = method
        .as_deref()
        .and_then(role_field)
        .and_then(|(pointer, field)| string_field(obj, pointer, field, required, bad));
    let vault_namespace = string_field(obj, "/spec/namespace", "spec.namespace", false, bad);
    VaultAuthLogin {
        method,
        mount,
        role,
        vault_namespace,
        global_ref,
    }
}

/// Text from the cluster, capped where it enters.
fn text(s: &str) -> String {
    crate::base::text::cap(s).into_owned()
}

/// Read a VaultStaticSecret (its whole JSON).
pub fn vault_static_secret_info(obj: &Value) -> Result<VaultStaticSecretInfo, KubeError> {
    const KIND: &str = "VaultStaticSecret";
    let (name, namespace) = name_and_namespace(obj);
    let object = object_name(Some(&namespace), &name);
    let mut bad = Vec::new();
    let mount = string_field(obj, "/spec/mount", "spec.mount", true, &mut bad);
    let kv_type = string_field(obj, "/spec/type", "spec.type", true, &mut bad);
    let path = string_field(obj, "/spec/path", "spec.path", true, &mut bad);
    let vault_namespace = string_field(obj, "/spec/namespace", "spec.namespace", false, &mut bad);
    let vault_auth_ref = string_field(
        obj,
        "/spec/vaultAuthRef",
        "spec.vaultAuthRef",
        false,
        &mut bad,
    );
    let (rollout_restart_targets, rollout_restart_bad) = rollout_restart_targets(obj);
    Ok(VaultStaticSecretInfo {
        generation: obj.pointer("/metadata/generation").and_then(Value::as_i64),
        last_generation: obj
            .pointer("/status/lastGeneration")
            .and_then(Value::as_i64),
        ready: condition(obj, "Ready", KIND, &object)?,
        healthy: condition(obj, "Healthy", KIND, &object)?,
        secret_synced: condition(obj, "SecretSynced", KIND, &object)?,
        has_secret_mac: str_at(obj, "/status/secretMAC").is_some_and(|m| !m.is_empty()),
        hmac: obj
            .pointer("/spec/hmacSecretData")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        mount: mount.unwrap_or_default(),
        kv_type: kv_type.unwrap_or_default(),
        path: path.unwrap_or_default(),
        pinned_version: obj
            .pointer("/spec/version")
            .and_then(Value::as_u64)
            .filter(|v| *v > 0),
        destination: text(str_at(obj, "/spec/destination/name").unwrap_or_default()),
        destination_type: text(str_at(obj, "/spec/destination/type").unwrap_or_default()),
        destination_create: obj
            .pointer("/spec/destination/create")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        transformation: transformation_of(obj),
        vault_auth_ref,
        vault_namespace,
        bad,
        rollout_restart_targets,
        rollout_restart_bad,
        namespace,
        name,
    })
}

/// `spec.rolloutRestartTargets` as `(kind, name)` pairs, or what is wrong with it.
fn rollout_restart_targets(obj: &Value) -> (Vec<(String, String)>, Option<String>) {
    let Some(list) = obj.pointer("/spec/rolloutRestartTargets") else {
        return (Vec::new(), None);
    };
    let Some(items) = list.as_array() else {
        return (
            Vec::new(),
            Some("`spec.rolloutRestartTargets` is not a list".into()),
        );
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match (str_at(item, "/kind"), str_at(item, "/name")) {
            (Some(k), Some(n)) if !k.is_empty() && !n.is_empty() => {
                out.push((text(k), text(n)));
            }
            _ => {
                return (
                    out,
                    Some(format!(
                        "`spec.rolloutRestartTargets[{i}]` has no string `kind` and `name`"
                    )),
                )
            }
        }
    }
    (out, None)
}

/// Read a VaultAuth or a VaultConnection.
pub fn vso_object_info(obj: &Value, kind: VsoKind) -> Result<VsoObjectInfo, KubeError> {
    let (name, namespace) = name_and_namespace(obj);
    let object = object_name(Some(&namespace), &name);
    let mut bad = Vec::new();
    let auth = (kind == VAULT_AUTH).then(|| vault_auth_login(obj, &mut bad));
    let address = (kind == VAULT_CONNECTION)
        .then(|| string_field(obj, "/spec/address", "spec.address", true, &mut bad))
        .flatten();
    let connection_ref = (kind == VAULT_AUTH)
        .then(|| {
            let (pointer, field) = ("/spec/vaultConnectionRef", "spec.vaultConnectionRef");
            string_field(obj, pointer, field, false, &mut bad)
        })
        .flatten();
    let login = auth.as_ref().map(|a| {
        let method = a.method.as_deref().unwrap_or("?");
        let mount = a.mount.as_deref().unwrap_or("?");
        match &a.role {
            Some(role) => format!("{method} auth/{mount} role {role}"),
            None => format!("{method} auth/{mount}"),
        }
    });
    Ok(VsoObjectInfo {
        kind: kind.kind,
        valid: obj.pointer("/status/valid").and_then(Value::as_bool),
        error: str_at(obj, "/status/error")
            .filter(|e| !e.is_empty())
            .map(text),
        healthy: condition(obj, "Healthy", kind.kind, &object)?,
        connection_ref,
        login,
        auth,
        address,
        bad,
        namespace,
        name,
    })
}

/// Where a reference (`vaultAuthRef`, `vaultConnectionRef`) points: `(namespace, name)`, the
/// namespace being `default_namespace` when the reference has none. `None` for an empty
/// reference (the operator's default, in a namespace vault-seed does not know) and `Err` for one
/// with more than one `/` (VSO refuses it: `common/common.go` `ParseResourceRef`).
pub fn parse_ref(
    reference: Option<&str>,
    default_namespace: &str,
) -> Result<Option<(String, String)>, String> {
    let Some(r) = reference.filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let parts: Vec<&str> = r.split('/').collect();
    match parts.as_slice() {
        [name] => Ok(Some((default_namespace.to_string(), name.to_string()))),
        [ns, name] => Ok(Some((ns.to_string(), name.to_string()))),
        _ => Err(format!("invalid name: {r}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(file: &str) -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/vso")
            .join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        serde_yaml::from_str(&text).unwrap()
    }

    #[test]
    fn a_synced_vault_static_secret_reads_as_vso_wrote_it() {
        let v = vault_static_secret_info(&fixture("vaultstaticsecret-synced.yaml")).unwrap();
        assert_eq!(
            (v.namespace.as_str(), v.name.as_str()),
            ("ask", "zitadel-masterkey")
        );
        assert_eq!((v.generation, v.last_generation), (Some(2), Some(2)));
        assert_eq!(v.ready.as_ref().unwrap().ready, Some(true));
        assert_eq!(v.healthy.as_ref().unwrap().ready, Some(true));
        assert_eq!(v.secret_synced.as_ref().unwrap().ready, Some(true));
        assert_eq!(
            v.ready
                .as_ref()
                .unwrap()
                .last_transition_time
                .unwrap()
                .unix_timestamp(),
            1_787_220_877 // 2026-08-20T10:14:37Z
        );
        assert!(v.has_secret_mac && v.hmac && !v.transformation.changes_keys());
        assert!(!v.transformation.exclude_raw);
        assert_eq!(
            (v.mount.as_str(), v.kv_type.as_str(), v.path.as_str()),
            (
                "secret",
                "kv-v2",
                "ask/core-service/auh1-dev/ZITADEL_MASTERKEY"
            )
        );
        assert_eq!(v.destination, "zitadel-masterkey");
        assert_eq!(v.vault_auth_ref.as_deref(), Some("vault-auth"));
    }

    #[test]
    fn a_denied_one_failed_although_its_generations_agree() {
        let v = vault_static_secret_info(&fixture("vaultstaticsecret-denied.yaml")).unwrap();
        assert_eq!((v.generation, v.last_generation), (Some(2), Some(2)));
        assert_eq!(v.ready.as_ref().unwrap().ready, Some(false));
        assert!(!v.has_secret_mac);
        assert!(v
            .secret_synced
            .unwrap()
            .message
            .unwrap()
            .contains("Code: 403"));
    }

    #[test]
    fn vault_auth_and_connection() {
        let a = vso_object_info(&fixture("vaultauth.yaml"), VAULT_AUTH).unwrap();
        assert_eq!(a.valid, Some(true));
        assert_eq!(a.connection_ref.as_deref(), Some("vault"));
        assert_eq!(
            a.login.as_deref(),
            Some("kubernetes auth/kubernetes role ask-core-service")
        );
        let c = vso_object_info(&fixture("vaultconnection.yaml"), VAULT_CONNECTION).unwrap();
        assert_eq!(
            (c.valid, c.connection_ref, c.login),
            (Some(true), None, None)
        );
    }

    #[test]
    fn vault_auth_login_and_connection_address_field_by_field() {
        let a = vso_object_info(&fixture("vaultauth.yaml"), VAULT_AUTH).unwrap();
        let login = a.auth.unwrap();
        assert_eq!(
            (
                login.method.as_deref(),
                login.mount.as_deref(),
                login.role.as_deref(),
                login.vault_namespace.as_deref(),
                login.global_ref
            ),
            (
                Some("kubernetes"),
                Some("kubernetes"),
                Some("ask-core-service"),
                None,
                false
            )
        );
        assert!(a.bad.is_empty());
        let c = vso_object_info(&fixture("vaultconnection.yaml"), VAULT_CONNECTION).unwrap();
        assert_eq!(
            c.address.as_deref(),
            Some("https://vault.cl1.sq4.aegis.internal")
        );
        assert!(c.bad.is_empty() && c.auth.is_none());
    }

    /// A field missing or of the wrong type is named, never read as empty and matching.
    #[test]
    fn missing_and_malformed_fields_are_named() {
        let mut obj = fixture("vaultauth.yaml");
        obj["spec"].as_object_mut().unwrap().remove("mount");
        obj["spec"]["kubernetes"]["role"] = serde_json::json!(7);
        obj["spec"]["namespace"] = serde_json::json!(["a"]);
        let a = vso_object_info(&obj, VAULT_AUTH).unwrap();
        assert_eq!(
            a.bad,
            [
                BadField {
                    field: "spec.mount".into(),
                    problem: FieldProblem::Missing
                },
                BadField {
                    field: "spec.kubernetes.role".into(),
                    problem: FieldProblem::NotA {
                        want: "a string",
                        found: Some("a number")
                    }
                },
                BadField {
                    field: "spec.namespace".into(),
                    problem: FieldProblem::NotA {
                        want: "a string",
                        found: Some("a list")
                    }
                },
            ]
        );
        // With a VaultAuthGlobal, empty fields are its to fill: not bad here.
        obj["spec"]["vaultAuthGlobalRef"] = serde_json::json!({"name": "g"});
        obj["spec"].as_object_mut().unwrap().remove("method");
        let a = vso_object_info(&obj, VAULT_AUTH).unwrap();
        assert!(a.auth.unwrap().global_ref);
        assert_eq!(a.bad.len(), 1, "{:?}", a.bad); // spec.namespace, still not a string
        let mut conn = fixture("vaultconnection.yaml");
        conn["spec"]["address"] = serde_json::json!("");
        let c = vso_object_info(&conn, VAULT_CONNECTION).unwrap();
        assert_eq!(
            c.bad,
            [BadField {
                field: "spec.address".into(),
                problem: FieldProblem::Empty
            }]
        );
        let mut vss = fixture("vaultstaticsecret-synced.yaml");
        vss["spec"].as_object_mut().unwrap().remove("type");
        let v = vault_static_secret_info(&vss).unwrap();
        assert_eq!(v.bad[0].field, "spec.type");
        assert_eq!(v.kv_type, "");
    }

    #[test]
    fn references_as_vso_parses_them() {
        assert_eq!(
            parse_ref(Some("a"), "ns"),
            Ok(Some(("ns".into(), "a".into())))
        );
        assert_eq!(
            parse_ref(Some("x/a"), "ns"),
            Ok(Some(("x".into(), "a".into())))
        );
        assert_eq!(parse_ref(Some(""), "ns"), Ok(None));
        assert_eq!(parse_ref(None, "ns"), Ok(None));
        assert!(parse_ref(Some("a/b/c"), "ns").is_err());
    }
}
