//! System endpoints: token lookup, mount detection, policies and capabilities.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::client::{decode, Call, Reply};
use super::{Vault, VaultError};
use crate::base::kv::KvVersion;

/// What Vault says about the caller's token. Deliberately without the token's `id`.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenInfo {
    /// Display name (`root`, `token-ci`).
    #[serde(default)]
    pub display_name: String,
    /// Policies attached.
    #[serde(default)]
    pub policies: Vec<String>,
    /// Seconds left; 0 for a token that never expires.
    #[serde(default)]
    pub ttl: i64,
    /// Expiry (RFC 3339), absent for non-expiring tokens.
    #[serde(default)]
    pub expire_time: Option<String>,
}

#[derive(Deserialize)]
struct Envelope<T> {
    data: Option<T>,
}

/// The text of `data.policy` in the answer of `sys/policies/acl/<name>`: `None` without `data`,
/// empty without `policy` or with `policy` null.
fn policy_text(body: &[u8], path: &str) -> Result<Option<String>, VaultError> {
    #[derive(Deserialize)]
    struct Policy {
        #[serde(default)]
        policy: Option<String>,
    }
    Ok(decode::<Envelope<Policy>>(body, "GET", path)?
        .data
        .map(|p| p.policy.unwrap_or_default()))
}

/// The body of `sys/capabilities(-self)`; the token, when there is one, is borrowed.
#[derive(serde::Serialize)]
struct CapabilitiesBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<&'a str>,
    paths: &'a [String],
}

/// What `sys/internal/ui/mounts/<path>` says about a mount.
#[derive(Debug, Clone)]
pub struct MountInfo {
    /// Engine type (`kv`, `generic`, ...).
    pub kind: String,
    /// KV version from the mount options (1 when unset).
    pub kv_version: KvVersion,
    /// The mount's path as Vault names it, without slashes.
    pub path: String,
}

impl Vault {
    /// GET an endpoint whose answer is `{"data": T}`; `None` on 404.
    async fn get_data<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, VaultError> {
        let reply = self.send(|| Call::get(path), "read").await?;
        match reply {
            Reply::Ok(b) => Ok(decode::<Envelope<T>>(&b, "GET", path)?.data),
            Reply::NotFound(_) => Ok(None),
        }
    }

    /// Check the token (`auth/token/lookup-self`): valid, and what it carries.
    pub async fn lookup_self(&self) -> Result<TokenInfo, VaultError> {
        let path = "auth/token/lookup-self";
        match self.get_data::<TokenInfo>(path).await {
            Ok(Some(info)) => Ok(info),
            Ok(None) => Err(VaultError::Decode {
                method: "GET",
                path: path.into(),
                detail: "no `data`".into(),
            }),
            Err(VaultError::Denied { .. }) => Err(VaultError::Config {
                message: "Vault rejected the token: it is missing, expired or revoked".into(),
                help:
                    "log in again (`vault login` / `bao login`) or set VAULT_TOKEN to a valid token"
                        .into(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Detect a mount's engine and KV version (`sys/internal/ui/mounts/<mount>`, allowed by
    /// Vault's default policy).
    pub async fn mount_info(&self, mount: &str) -> Result<Option<MountInfo>, VaultError> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "type", default)]
            kind: String,
            #[serde(default)]
            options: Option<BTreeMap<String, String>>,
            #[serde(default)]
            path: String,
        }
        match self
            .get_data::<Raw>(&format!("sys/internal/ui/mounts/{mount}"))
            .await
        {
            Ok(Some(raw)) => {
                let version = KvVersion::from_mount_option(
                    raw.options
                        .as_ref()
                        .and_then(|o| o.get("version"))
                        .map(String::as_str),
                );
                Ok(Some(MountInfo {
                    kind: raw.kind,
                    kv_version: version,
                    path: raw.path.trim_matches('/').to_string(),
                }))
            }
            Ok(None) => Ok(None),
            // Vault answers 400 "no matching mount" for a path under no mount.
            Err(VaultError::Api { status: 400, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The text of an ACL policy (`sys/policies/acl/<name>`); `None` when it does not exist.
    pub async fn read_policy(&self, name: &str) -> Result<Option<String>, VaultError> {
        let path = format!("sys/policies/acl/{name}");
        match self.send(|| Call::get(&path), "read").await? {
            Reply::Ok(body) => policy_text(&body, &path),
            Reply::NotFound(_) => Ok(None),
        }
    }

    /// The capabilities the caller's own token has on each path (`sys/capabilities-self`).
    pub async fn capabilities_self(
        &self,
        paths: &[String],
    ) -> Result<BTreeMap<String, Vec<String>>, VaultError> {
        let body = CapabilitiesBody { token: None, paths };
        self.capabilities_call("sys/capabilities-self", &body, paths)
            .await
    }

    /// The capabilities another token has on each path (`sys/capabilities`; needs `sudo`-less
    /// `update` on it). The token is sent in the body and never kept.
    pub async fn capabilities_of(
        &self,
        token: &secrecy::SecretString,
        paths: &[String],
    ) -> Result<BTreeMap<String, Vec<String>>, VaultError> {
        use secrecy::ExposeSecret;
        let body = CapabilitiesBody {
            token: Some(token.expose_secret()),
            paths,
        };
        self.capabilities_call("sys/capabilities", &body, paths)
            .await
    }

    async fn capabilities_call(
        &self,
        api: &str,
        body: &CapabilitiesBody<'_>,
        paths: &[String],
    ) -> Result<BTreeMap<String, Vec<String>>, VaultError> {
        // Serialised from borrowed parts straight into a buffer that is zeroized on drop.
        let payload = zeroize::Zeroizing::new(serde_json::to_vec(body).unwrap_or_default());
        let reply = self
            .send(|| Call::post(api, payload.to_vec()), "update")
            .await?;
        let Reply::Ok(b) = reply else {
            return Err(VaultError::Api {
                method: "POST",
                path: api.to_string(),
                status: 404,
                errors: vec![],
            });
        };
        // The answer has one key per path at the top level (and in `data`), plus `capabilities`
        // when a single path was asked.
        let v: serde_json::Value = decode(&b, "POST", api)?;
        let src = v.get("data").filter(|d| d.is_object()).unwrap_or(&v);
        let mut out = BTreeMap::new();
        for p in paths {
            let caps = src
                .get(p)
                .or_else(|| {
                    (paths.len() == 1)
                        .then(|| src.get("capabilities"))
                        .flatten()
                })
                .and_then(|c| c.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            out.insert(p.clone(), caps);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The text as serde_json decodes the same body.
    fn by_serde(body: &[u8]) -> Option<String> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            policy: String,
        }
        serde_json::from_slice::<Envelope<Raw>>(body)
            .unwrap()
            .data
            .map(|r| r.policy)
    }

    fn body(policy_json: &str) -> Vec<u8> {
        format!(
            r#"{{"request_id":"x","data":{{"name":"eso","policy":{policy_json}}},"warnings":null}}"#
        )
        .into_bytes()
    }

    #[test]
    fn every_escape_is_read_as_serde_json_reads_it() {
        for json in [
            r#""""#,
            r#""path \"secret/data/*\" {\n  capabilities = [\"read\"]\n}\n""#,
            r#""\/\b\f\n\r\t\\\"""#,
            r#""caf\u00e9 \u00E9 \u20ac \ud83d\ude00 end""#,
            r#""\u0000\u001f""#,
            r#""no escape at all""#,
            r#""\\u0041 is not an escape""#,
        ] {
            let b = body(json);
            assert_eq!(
                policy_text(&b, "sys/policies/acl/eso").unwrap(),
                by_serde(&b),
                "{json}"
            );
        }
    }

    #[test]
    fn no_data_is_none_and_no_policy_is_empty_text() {
        let p = "sys/policies/acl/eso";
        assert_eq!(policy_text(br#"{"data":null}"#, p).unwrap(), None);
        assert_eq!(policy_text(br#"{"errors":[]}"#, p).unwrap(), None);
        assert_eq!(
            policy_text(br#"{"data":{"name":"eso"}}"#, p).unwrap(),
            Some(String::new())
        );
    }

    #[test]
    fn a_policy_that_is_no_valid_string_is_an_error_naming_the_path() {
        for json in [
            r#"42"#,
            r#"["a"]"#,
            r#""\ud83d alone""#,
            r#""\udc00""#,
            r#""\ud83d\u0041""#,
        ] {
            let e = policy_text(&body(json), "sys/policies/acl/eso").unwrap_err();
            assert!(
                e.to_string().contains("sys/policies/acl/eso"),
                "{json}: {e}"
            );
        }
    }

    /// Any text, with each character written as itself or as a `\u` escape (a pair beyond the
    /// basic plane), as a server may write it.
    fn escaped(text: &str, as_escape: &[bool]) -> String {
        let mut out = String::from("\"");
        for (c, &esc) in text.chars().zip(as_escape.iter().cycle()) {
            if esc || c == '"' || c == '\\' || c < ' ' {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            } else {
                out.push(c);
            }
        }
        out.push('"');
        out
    }

    proptest! {
        #[test]
        fn any_text_comes_back_as_it_was_written(
            text in any::<String>(),
            as_escape in proptest::collection::vec(any::<bool>(), 1..8),
        ) {
            let path = "sys/policies/acl/eso";
            let plain = body(&serde_json::to_string(&text).unwrap());
            prop_assert_eq!(policy_text(&plain, path).unwrap(), Some(text.clone()));
            let b = body(&escaped(&text, &as_escape));
            prop_assert_eq!(policy_text(&b, path).unwrap(), Some(text));
        }
    }
}
