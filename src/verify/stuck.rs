//! Causes that waiting cannot fix: while `--wait` lasts, an object that is not done only for
//! such a cause stops the waiting when every object still waited for has one (and the verdict
//! says what it is, at once, instead of after the timeout).
//!
//! Each is read from what ESO writes: a store that does not exist (the store check's own GET), a
//! Vault 403 (vault-seed's reading of ESO's policy, or Vault's own `Code: 403` in the error ESO
//! writes: the Vault API client's `ResponseError`, hashicorp/vault `api/response.go`), and
//! ESO's Vault provider refusing a PushSecret's value that is not a JSON object (external-secrets
//! v2.9.0 `providers/v1/vault/client_push.go`, `PushSecret`: "error unmarshalling incoming
//! secret value: invalid JSON format", which the PushSecret controller writes into its Ready
//! condition and a Warning event, `pkg/controllers/pushsecret/pushsecret_controller.go`,
//! `errFailedSetSecret`). A missing store named by a PushSecret is its controller's
//! `errGetSecretStore` ("could not get SecretStore %q, ...").

use serde::Serialize;

/// One cause that waiting cannot fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "kebab-case")]
pub enum Stuck {
    /// Vault refuses ESO a path it reads (403): its policy lacks a grant.
    VaultDenied {
        /// The path, when known.
        path: Option<String>,
    },
    /// A PushSecret's value is not the JSON object ESO's Vault provider pushes whole.
    PushNotJson {
        /// The PushSecret, `namespace/name`.
        push_secret: String,
    },
    /// A store an object reads through does not exist.
    StoreMissing {
        /// The store, `Kind name` (or as its user names it).
        store: String,
    },
}

crate::base::codes::codes!(
    Stuck,
    Stuck {
        VaultDenied => "vault-denied",
        PushNotJson => "push-invalid-json",
        StoreMissing => "store-missing",
    }
);

impl Stuck {
    /// The sentence.
    pub fn message(&self) -> String {
        match self {
            Stuck::VaultDenied { path: Some(p) } => {
                format!("Vault denies ESO `{p}` (403): its policy must grant it")
            }
            Stuck::VaultDenied { path: None } => {
                "Vault denies ESO a path it reads (403): its policy must grant it".into()
            }
            Stuck::PushNotJson { push_secret } => format!(
                "PushSecret `{push_secret}` pushes a value that is not a JSON object (ESO: \"invalid JSON format\")"
            ),
            Stuck::StoreMissing { store } => format!("{store} does not exist"),
        }
    }

    /// What an error message ESO wrote (a Ready condition's message, a Warning event's) says
    /// that waiting cannot fix; `push_secret` names the object for [`Stuck::PushNotJson`].
    pub fn in_eso_message(message: &str, push_secret: &str) -> Option<Stuck> {
        if message.contains("invalid JSON format") {
            return Some(Stuck::PushNotJson {
                push_secret: push_secret.to_string(),
            });
        }
        if message.contains("Code: 403") {
            return Some(Stuck::VaultDenied { path: None });
        }
        for kind in ["SecretStore", "ClusterSecretStore"] {
            let lead = format!("could not get {kind} \"");
            if let Some(rest) = message.split(&lead).nth(1) {
                if message.contains("not found") {
                    let name = rest.split('"').next().unwrap_or_default();
                    return Some(Stuck::StoreMissing {
                        store: format!("{kind} `{name}`"),
                    });
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::codes::Code;

    #[test]
    fn esos_messages_name_the_causes_waiting_cannot_fix() {
        let push = "set secret failed: could not write remote ref ask/x to target secretstore vault: error unmarshalling incoming secret value: invalid JSON format";
        assert_eq!(
            Stuck::in_eso_message(push, "ns/p").map(|s| s.code()),
            Some("push-invalid-json")
        );
        let denied = "set secret failed: could not write remote ref a to target secretstore v: Error making API request.\n\nURL: PUT http://v/v1/secret/data/a\nCode: 403. Errors:\n\n* 1 error occurred:\n\t* permission denied\n\n";
        assert_eq!(
            Stuck::in_eso_message(denied, "ns/p"),
            Some(Stuck::VaultDenied { path: None })
        );
        let store = "could not get SecretStore \"test-store\", secretstores.external-secrets.io \"test-store\" not found";
        assert_eq!(
            Stuck::in_eso_message(store, "ns/p"),
            Some(Stuck::StoreMissing {
                store: "SecretStore `test-store`".into()
            })
        );
        assert_eq!(Stuck::in_eso_message("secret synced", "ns/p"), None);
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify --wait: causes waiting cannot fix",
            &Stuck::codes(),
            &Stuck::all_codes(),
        );
    }
}
