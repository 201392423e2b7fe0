//! Errors of the Vault client. Each names the path and, where the user can act, says what to do.
//! None carries a response body: a body may hold secret values.

/// What went wrong talking to Vault.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The token lacks a capability on a path (HTTP 403).
    #[error("permission denied: the token lacks `{capability}` on `{path}`")]
    Denied {
        /// The capability the operation needs (`create`, `update`, `read`, `list`).
        capability: &'static str,
        /// The API path (`secret/data/ask/core-service/auh1-dev/X`).
        path: String,
    },
    /// Vault is sealed (HTTP 503).
    #[error("Vault at `{addr}` is sealed")]
    Sealed {
        /// Vault's address.
        addr: String,
    },
    /// KV v2 check-and-set refused the write: the path changed since it was read.
    #[error("check-and-set refused the write to `{path}`: it was changed meanwhile")]
    CasMismatch {
        /// The API path.
        path: String,
    },
    /// Vault answered with another HTTP error.
    #[error("Vault answered HTTP {status} to {method} `{path}`{}", errors_suffix(.errors))]
    Api {
        /// HTTP method.
        method: &'static str,
        /// The API path.
        path: String,
        /// HTTP status.
        status: u16,
        /// Vault's `errors` list.
        errors: Vec<String>,
    },
    /// The connection to Vault failed (refused, reset, DNS, closed early).
    #[error("cannot reach Vault at `{addr}`: {detail}")]
    Transport {
        /// Vault's address.
        addr: String,
        /// The cause, from the HTTP stack.
        detail: String,
    },
    /// Vault did not answer within the client timeout.
    #[error("Vault at `{addr}` did not answer {method} `{path}` within the client timeout")]
    Timeout {
        /// Vault's address.
        addr: String,
        /// HTTP method.
        method: &'static str,
        /// The API path.
        path: String,
    },
    /// TLS with Vault failed (unknown CA, wrong host name, plain HTTP server).
    #[error("TLS with Vault at `{addr}` failed: {detail}")]
    Tls {
        /// Vault's address.
        addr: String,
        /// The cause.
        detail: String,
    },
    /// Vault's answer could not be understood.
    #[error("unexpected answer from Vault to {method} `{path}`: {detail}")]
    Decode {
        /// HTTP method.
        method: &'static str,
        /// The API path.
        path: String,
        /// What did not fit (never the body itself).
        detail: String,
    },
    /// The client could not be set up (address, token, CA file).
    #[error("{message}")]
    Config {
        /// What is wrong.
        message: String,
        /// What to do.
        help: String,
    },
}

fn errors_suffix(errors: &[String]) -> String {
    let shown: Vec<&str> = errors
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
        .collect();
    if shown.is_empty() {
        String::new()
    } else {
        format!(": {}", shown.join("; "))
    }
}

impl VaultError {
    /// Worth retrying: the connection failed or Vault said to come back (429, 5xx but sealed).
    pub fn is_transient(&self) -> bool {
        match self {
            VaultError::Transport { .. } | VaultError::Timeout { .. } => true,
            VaultError::Api { status, .. } => matches!(status, 412 | 429 | 500 | 502 | 503 | 504),
            _ => false,
        }
    }

    /// Vault is gone for now: unreachable, not answering in time, or sealed. Further requests
    /// would fail the same way.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            VaultError::Transport { .. } | VaultError::Timeout { .. } | VaultError::Sealed { .. }
        )
    }

    /// What the user can do about it.
    pub fn help(&self) -> Option<String> {
        Some(match self {
            VaultError::Denied { capability, path } => {
                let (folder, _) = path.rsplit_once('/').unwrap_or((path.as_str(), ""));
                format!("grant it in the token's policy, e.g. path \"{folder}/*\" {{ capabilities = [\"{capability}\"] }}")
            }
            VaultError::Sealed { .. } => {
                "unseal it (`vault operator unseal`) and run the command again".into()
            }
            VaultError::Transport { .. } => {
                "check VAULT_ADDR (or the spec's `vault_addr`) and that Vault is up and reachable from here".into()
            }
            VaultError::Timeout { .. } => {
                "Vault is slow or unreachable; raise VAULT_CLIENT_TIMEOUT, or check the network".into()
            }
            VaultError::Tls { .. } => {
                "point VAULT_CACERT at the PEM file of the CA that signed Vault's certificate (VAULT_SKIP_VERIFY=true only for a test server)".into()
            }
            VaultError::Config { help, .. } => help.clone(),
            VaultError::CasMismatch { .. } => {
                "someone changed it meanwhile; run the command again to see its new state".into()
            }
            VaultError::Api { .. } | VaultError::Decode { .. } => return None,
        })
    }
}
