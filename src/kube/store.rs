//! A store's Vault provider (`spec.provider.vault` of a SecretStore or ClusterSecretStore), read
//! into plain values: which Vault ESO reads, at which mount and KV version, in which namespace,
//! and how it logs in. Field names and defaults are ESO's
//! (`apis/externalsecrets/v1/secretstore_vault_types.go`): `version` defaults to `v2`, the
//! kubernetes method's `mountPath` to `kubernetes`, jwt's `path` to `jwt`, appRole's `path` to
//! `approle` (kubebuilder defaults, which the API server writes into objects it stores; applied
//! here too when a field is absent). A store whose provider is not Vault, lacks `server`, or
//! has a field of the wrong type is a [`StoreProblem`] naming the field: never taken as
//! matching.

use serde::Serialize;
use serde_json::Value;

/// The KV version a store reads (`spec.provider.vault.version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StoreKv {
    /// `v1`.
    V1,
    /// `v2` (ESO's default).
    V2,
}

impl StoreKv {
    /// As written in the store (`v1`, `v2`).
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKv::V1 => "v1",
            StoreKv::V2 => "v2",
        }
    }
}

/// How ESO logs in to Vault with this store (`spec.provider.vault.auth`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum StoreAuth {
    /// `kubernetes`: `mountPath` (default `kubernetes`) and `role`.
    Kubernetes {
        /// The auth mount.
        mount: String,
        /// The Vault role.
        role: String,
    },
    /// `jwt`: `path` (default `jwt`) and `role` (optional: the mount's `default_role` then).
    Jwt {
        /// The auth mount.
        mount: String,
        /// The Vault role, when named.
        role: Option<String>,
    },
    /// `appRole`: `path` (default `approle`) and `roleId`, or `roleRef` (a Secret's key). The
    /// `secretRef` is never read.
    AppRole {
        /// The auth mount.
        mount: String,
        /// `roleId`, when written in the store.
        role_id: Option<String>,
    },
    /// `tokenSecretRef`: a static token from a Secret.
    Token,
    /// Another method (`cert`, `iam`, `userPass`, `ldap`, `gcp`), by its key.
    Other(String),
    /// No `auth` at all: ESO sends no token.
    None,
}

/// A store's Vault provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VaultStore {
    /// `server`: the Vault address ESO reads.
    pub server: String,
    /// `path`: the KV mount; `None` when absent (ESO then takes each key's first segment as
    /// the mount).
    pub path: Option<String>,
    /// `version`.
    pub version: StoreKv,
    /// `namespace`: the Vault namespace.
    pub namespace: Option<String>,
    /// `auth`.
    pub auth: StoreAuth,
}

/// Why a store's provider cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum StoreProblem {
    /// `spec.provider` has no `vault` (its providers' keys, or none).
    #[error("its provider is not Vault (`spec.provider` has {})", if found.is_empty() { "no provider".to_string() } else { format!("`{}`", found.join("`, `")) })]
    NotVault {
        /// The keys of `spec.provider`.
        found: Vec<String>,
    },
    /// A required field is absent or empty.
    #[error("field `{field}` is missing")]
    Missing {
        /// The field's JSON path (`spec.provider.vault.server`).
        field: String,
    },
    /// A field is not a string.
    #[error("field `{field}` is not a string")]
    NotString {
        /// The field's JSON path.
        field: String,
    },
    /// A field has a value ESO does not accept.
    #[error("field `{field}` is `{value}`, not one of {allowed}")]
    BadValue {
        /// The field's JSON path.
        field: String,
        /// The value found.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
}

const BASE: &str = "spec.provider.vault";

/// The string at `key` of `obj` (`None` when absent or null); `field` names it in a problem.
fn opt_str(obj: &Value, key: &str, field: &str) -> Result<Option<String>, StoreProblem> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(crate::base::text::cap(s).into_owned())),
        Some(_) => Err(StoreProblem::NotString {
            field: format!("{field}.{key}"),
        }),
    }
}

/// A string that must be there and not empty.
fn required(obj: &Value, key: &str, field: &str) -> Result<String, StoreProblem> {
    opt_str(obj, key, field)?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| StoreProblem::Missing {
            field: format!("{field}.{key}"),
        })
}

/// A mount, its default when absent or empty (the CRD's kubebuilder default).
fn mount(obj: &Value, key: &str, field: &str, default: &str) -> Result<String, StoreProblem> {
    Ok(opt_str(obj, key, field)?
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default.to_string()))
}

/// Read a store's `spec.provider.vault`.
pub fn vault_provider(store: &Value) -> Result<VaultStore, StoreProblem> {
    let provider = store.pointer("/spec/provider");
    let Some(vault) = provider
        .and_then(|p| p.get("vault"))
        .filter(|v| v.is_object())
    else {
        let found = provider
            .and_then(Value::as_object)
            .map(|m| {
                m.keys()
                    .map(|k| crate::base::text::cap(k).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        return Err(StoreProblem::NotVault { found });
    };
    let server = required(vault, "server", BASE)?;
    let version = match opt_str(vault, "version", BASE)?.as_deref() {
        None | Some("v2") => StoreKv::V2,
        Some("v1") => StoreKv::V1,
        Some(other) => {
            return Err(StoreProblem::BadValue {
                field: format!("{BASE}.version"),
                value: other.to_string(),
                allowed: "`v1`, `v2`",
            })
        }
    };
    Ok(VaultStore {
        server,
        path: opt_str(vault, "path", BASE)?.filter(|p| !p.is_empty()),
        version,
        namespace: opt_str(vault, "namespace", BASE)?.filter(|n| !n.is_empty()),
        auth: auth(vault.get("auth"))?,
    })
}

/// The auth method, in the order ESO tries them (`providers/v1/vault/auth.go`, `setAuth`:
/// token, appRole, kubernetes, ldap, userPass, jwt, cert, iam, gcp): the first set wins.
fn auth(auth: Option<&Value>) -> Result<StoreAuth, StoreProblem> {
    let Some(auth) = auth.filter(|a| !a.is_null()) else {
        return Ok(StoreAuth::None);
    };
    let at = |key: &str| auth.get(key).filter(|v| !v.is_null());
    let field = |key: &str| format!("{BASE}.auth.{key}");
    if at("tokenSecretRef").is_some() {
        return Ok(StoreAuth::Token);
    }
    if let Some(a) = at("appRole") {
        let f = field("appRole");
        let role_id = opt_str(a, "roleId", &f)?.map(|r| r.trim().to_string());
        let role_id = role_id.filter(|r| !r.is_empty());
        if role_id.is_none() && a.get("roleRef").is_none_or(Value::is_null) {
            return Err(StoreProblem::Missing {
                field: format!("{f}.roleId"),
            });
        }
        return Ok(StoreAuth::AppRole {
            mount: mount(a, "path", &f, "approle")?,
            role_id,
        });
    }
    if let Some(k) = at("kubernetes") {
        let f = field("kubernetes");
        return Ok(StoreAuth::Kubernetes {
            mount: mount(k, "mountPath", &f, "kubernetes")?,
            role: required(k, "role", &f)?,
        });
    }
    for other in ["ldap", "userPass"] {
        if at(other).is_some() {
            return Ok(StoreAuth::Other(other.into()));
        }
    }
    if let Some(j) = at("jwt") {
        let f = field("jwt");
        // `auth_jwt.go` trims the role before it logs in.
        let role = opt_str(j, "role", &f)?.map(|r| r.trim().to_string());
        return Ok(StoreAuth::Jwt {
            mount: mount(j, "path", &f, "jwt")?,
            role: role.filter(|r| !r.is_empty()),
        });
    }
    let other = auth
        .as_object()
        .and_then(|m| m.iter().find(|(k, v)| *k != "namespace" && !v.is_null()))
        .map(|(k, _)| crate::base::text::cap(k).into_owned());
    Ok(other.map_or(StoreAuth::None, StoreAuth::Other))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store(vault: Value) -> Value {
        json!({"metadata": {"name": "s"}, "spec": {"provider": {"vault": vault}}})
    }

    #[test]
    fn reads_a_kubernetes_store_with_its_fields() {
        let s = vault_provider(&store(json!({
            "server": "http://vault.vault.svc:8200", "path": "secret", "version": "v1",
            "namespace": "team", "auth": {"kubernetes": {"mountPath": "k8s", "role": "eso"}}
        })))
        .unwrap();
        assert_eq!(
            s,
            VaultStore {
                server: "http://vault.vault.svc:8200".into(),
                path: Some("secret".into()),
                version: StoreKv::V1,
                namespace: Some("team".into()),
                auth: StoreAuth::Kubernetes {
                    mount: "k8s".into(),
                    role: "eso".into()
                },
            }
        );
    }

    #[test]
    fn absent_fields_take_esos_defaults() {
        let s = vault_provider(&store(json!({
            "server": "https://v", "auth": {"kubernetes": {"role": "eso"}}
        })))
        .unwrap();
        assert_eq!((s.path, s.version, s.namespace), (None, StoreKv::V2, None));
        assert_eq!(
            s.auth,
            StoreAuth::Kubernetes {
                mount: "kubernetes".into(),
                role: "eso".into()
            }
        );
        let jwt = json!({"server": "https://v", "auth": {"jwt": {"role": " r "}}});
        let s = vault_provider(&store(jwt)).unwrap();
        assert_eq!(
            s.auth,
            StoreAuth::Jwt {
                mount: "jwt".into(),
                role: Some("r".into())
            }
        );
        let approle = json!({"server": "https://v", "auth": {"appRole": {
            "roleId": "abc", "secretRef": {"name": "x", "key": "secret-id"}}}});
        let s = vault_provider(&store(approle)).unwrap();
        assert_eq!(
            s.auth,
            StoreAuth::AppRole {
                mount: "approle".into(),
                role_id: Some("abc".into())
            }
        );
    }

    #[test]
    fn token_and_other_methods_are_named_and_the_first_esos_order_tries_wins() {
        let auth = |a: Value| vault_provider(&store(json!({"server": "https://v", "auth": a})));
        let both = json!({"tokenSecretRef": {"name": "t", "key": "token"},
                          "kubernetes": {"role": "eso"}});
        assert_eq!(auth(both).unwrap().auth, StoreAuth::Token);
        let cert = json!({"cert": {"clientCert": {"name": "c"}}});
        assert_eq!(auth(cert).unwrap().auth, StoreAuth::Other("cert".into()));
        let ldap = json!({"ldap": {"username": "u"}, "jwt": {"role": "r"}});
        assert_eq!(auth(ldap).unwrap().auth, StoreAuth::Other("ldap".into()));
        assert_eq!(
            vault_provider(&store(json!({"server": "https://v"})))
                .unwrap()
                .auth,
            StoreAuth::None
        );
    }

    #[test]
    fn missing_and_malformed_fields_are_problems_naming_the_field() {
        let err = |v: Value| vault_provider(&v).unwrap_err().to_string();
        assert_eq!(
            err(store(json!({"path": "secret"}))),
            "field `spec.provider.vault.server` is missing"
        );
        assert_eq!(
            err(store(json!({"server": 8200}))),
            "field `spec.provider.vault.server` is not a string"
        );
        assert_eq!(
            err(store(json!({"server": "https://v", "version": "v3"}))),
            "field `spec.provider.vault.version` is `v3`, not one of `v1`, `v2`"
        );
        assert_eq!(
            err(store(json!({"server": "https://v", "path": ["secret"]}))),
            "field `spec.provider.vault.path` is not a string"
        );
        assert_eq!(
            err(store(
                json!({"server": "https://v", "auth": {"kubernetes": {"mountPath": "k"}}})
            )),
            "field `spec.provider.vault.auth.kubernetes.role` is missing"
        );
        assert_eq!(
            err(store(
                json!({"server": "https://v", "auth": {"appRole": {"secretRef": {"name": "s"}}}})
            )),
            "field `spec.provider.vault.auth.appRole.roleId` is missing"
        );
        assert_eq!(
            err(json!({"spec": {"provider": {"aws": {"service": "SecretsManager"}}}})),
            "its provider is not Vault (`spec.provider` has `aws`)"
        );
        assert_eq!(
            err(json!({"spec": {}})),
            "its provider is not Vault (`spec.provider` has no provider)"
        );
    }
}
