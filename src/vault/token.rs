//! Tokens for `verify`'s policy check: what ESO's auth role gives its tokens, and a short-lived
//! probe token holding exactly ESO's policies, to ask `sys/capabilities` about when vault-seed
//! cannot evaluate the policies itself.

use secrecy::SecretString;
use serde::Deserialize;

use super::client::{decode, Call, Reply};
use super::{Vault, VaultError};

/// What an auth role (`auth/<mount>/role/<name>`) attaches to the tokens it issues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleTokens {
    /// `token_policies` (or the older `policies`).
    pub policies: Vec<String>,
    /// `token_no_default_policy`: the `default` policy is not attached.
    pub no_default_policy: bool,
}

/// A token created by [`Vault::create_probe_token`]. Not `Debug`: it holds a token.
pub struct ProbeToken {
    /// The token, to ask `sys/capabilities` about.
    pub token: SecretString,
    /// Its accessor, to revoke it without sending the token again.
    pub accessor: String,
}

/// How long a probe token lives at most, should revoking it fail.
pub const PROBE_TTL: &str = "60s";

impl Vault {
    /// ESO's role's token settings; `None` when the role does not exist.
    pub async fn role_tokens(
        &self,
        auth_mount: &str,
        role: &str,
    ) -> Result<Option<RoleTokens>, VaultError> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            token_policies: Vec<String>,
            #[serde(default)]
            policies: Vec<String>,
            #[serde(default)]
            token_no_default_policy: bool,
        }
        #[derive(Deserialize)]
        struct Envelope {
            data: Option<Raw>,
        }
        let path = format!("auth/{auth_mount}/role/{role}");
        let raw = match self.send(|| Call::get(&path), "read").await? {
            Reply::Ok(b) => decode::<Envelope>(&b, "GET", &path)?.data,
            Reply::NotFound(_) => None,
        };
        // OpenBao's role read returns both (`policies` is the older name of the same list,
        // kept in step with it); a role written by an older server may have only one. Both count.
        Ok(raw.map(|r| {
            let mut policies = r.token_policies;
            for p in r.policies {
                if !policies.contains(&p) {
                    policies.push(p);
                }
            }
            RoleTokens {
                policies,
                no_default_policy: r.token_no_default_policy,
            }
        }))
    }

    /// The `role_id` of AppRole role `role` on `auth_mount` (`auth/<mount>/role/<role>/role-id`);
    /// `None` when the role does not exist. A role ID names a role, it is not a credential.
    pub async fn approle_role_id(
        &self,
        auth_mount: &str,
        role: &str,
    ) -> Result<Option<String>, VaultError> {
        #[derive(Deserialize)]
        struct Raw {
            role_id: Option<String>,
        }
        #[derive(Deserialize)]
        struct Envelope {
            data: Option<Raw>,
        }
        let path = format!("auth/{auth_mount}/role/{role}/role-id");
        Ok(match self.send(|| Call::get(&path), "read").await? {
            Reply::Ok(b) => decode::<Envelope>(&b, "GET", &path)?
                .data
                .and_then(|d| d.role_id),
            Reply::NotFound(_) => None,
        })
    }

    /// Create a child token of the caller's holding exactly `policies` (plus `default` unless
    /// `no_default_policy`), living [`PROBE_TTL`], not renewable, usable once. Needs `update` on
    /// `auth/token/create`, and Vault lets a non-root token give only policies it holds itself.
    pub async fn create_probe_token(
        &self,
        policies: &[String],
        no_default_policy: bool,
    ) -> Result<ProbeToken, VaultError> {
        #[derive(Deserialize)]
        struct Auth {
            client_token: SecretString,
            accessor: String,
        }
        #[derive(Deserialize)]
        struct Created {
            auth: Auth,
        }
        let path = "auth/token/create";
        let body = serde_json::json!({
            "policies": policies,
            "no_default_policy": no_default_policy,
            "ttl": PROBE_TTL,
            "explicit_max_ttl": PROBE_TTL,
            "renewable": false,
            "num_uses": 1,
            "display_name": "vault-seed-verify-probe",
            "meta": { "purpose": "vault-seed verify: capabilities of ESO's policies" },
        })
        .to_string()
        .into_bytes();
        let reply = self
            .send(|| Call::post(path, body.clone()), "update")
            .await?;
        let Reply::Ok(b) = reply else {
            return Err(VaultError::Config {
                message: format!("Vault has no `{path}` (the token auth method)"),
                help: "ask for ESO's token instead: --eso-token-file".into(),
            });
        };
        // The body holds the token: parsed straight into a SecretString, then wiped.
        let b = zeroize::Zeroizing::new(b);
        let created: Created = decode(&b, "POST", path)?;
        Ok(ProbeToken {
            token: created.auth.client_token,
            accessor: created.auth.accessor,
        })
    }

    /// Revoke a token by its accessor (`auth/token/revoke-accessor`).
    pub async fn revoke_accessor(&self, accessor: &str) -> Result<(), VaultError> {
        let body = serde_json::json!({ "accessor": accessor })
            .to_string()
            .into_bytes();
        self.send(
            || Call::post("auth/token/revoke-accessor", body.clone()),
            "update",
        )
        .await?;
        Ok(())
    }
}
