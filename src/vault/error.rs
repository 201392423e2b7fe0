//! Errors of the Vault client. Each names the path and, where the user can act, says what to do.
//! None carries a response body: a body may hold secret values. Text that came from the server
//! (its `errors`, a `Location`) passes through [`crate::base::redact::redact`] before it is kept here.

use std::time::Duration;

/// `2s`, `4.8s`, `1m 30s`: to a tenth of a second below a minute, whole seconds above.
fn human(d: &Duration) -> String {
    let tenths = (d.as_millis() + 50) / 100;
    if tenths < 600 {
        if tenths.is_multiple_of(10) {
            format!("{}s", tenths / 10)
        } else {
            format!("{}.{}s", tenths / 10, tenths % 10)
        }
    } else {
        humantime::format_duration(Duration::from_secs(d.as_secs_f64().round() as u64)).to_string()
    }
}

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
    /// Vault did not answer in time: no answer (response headers) within the answer timeout, or
    /// the whole request not done within the client timeout.
    #[error("Vault at `{addr}` did not answer {method} `{path}` {}", timeout_what(.after, *.whole))]
    Timeout {
        /// Vault's address.
        addr: String,
        /// HTTP method.
        method: &'static str,
        /// The API path.
        path: String,
        /// How long it waited.
        after: Duration,
        /// The client timeout (whole request) ran out, not the answer timeout.
        whole: bool,
    },
    /// Vault answered with a redirect, which vault-seed does not follow: the token and the body
    /// (values) would go along to wherever it points.
    #[error("Vault at `{addr}` answered {method} `{path}` with HTTP {status}, a redirect to `{location}`; vault-seed does not follow redirects (the token and the values would go along)")]
    Redirect {
        /// Vault's address.
        addr: String,
        /// HTTP method.
        method: &'static str,
        /// The API path.
        path: String,
        /// HTTP status (301, 302, 307, 308, ...).
        status: u16,
        /// Scheme, host and port the `Location` header names (redacted), or what was wrong.
        location: String,
    },
    /// Vault's answer was larger than vault-seed reads.
    #[error("Vault's answer to {method} `{path}` is larger than {} MiB; it was not read", .limit / (1024 * 1024))]
    TooLarge {
        /// HTTP method.
        method: &'static str,
        /// The API path.
        path: String,
        /// The cap, in bytes.
        limit: usize,
    },
    /// A connection failure or timeout outlasted the retries or the time allowed for them.
    #[error("{last}; gave up after {attempts} attempts in {}{}", human(.elapsed), limit_note(.limit, *.out_of_time))]
    GaveUp {
        /// The last attempt's failure (a `Transport` or `Timeout`).
        last: Box<VaultError>,
        /// Attempts made.
        attempts: u32,
        /// Time from the first attempt to giving up.
        elapsed: Duration,
        /// The time allowed for one request and its retries (`--give-up-after`).
        limit: Duration,
        /// Whether that time ran out (rather than the retries).
        out_of_time: bool,
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

fn timeout_what(after: &Duration, whole: bool) -> String {
    if whole {
        format!("within the client timeout ({})", human(after))
    } else {
        format!("in {}", human(after))
    }
}

fn limit_note(limit: &Duration, out_of_time: bool) -> String {
    if out_of_time {
        format!(" (limit: --give-up-after {})", human(limit))
    } else {
        String::new()
    }
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
        match self {
            VaultError::GaveUp { last, .. } => last.is_unavailable(),
            e => matches!(
                e,
                VaultError::Transport { .. }
                    | VaultError::Timeout { .. }
                    | VaultError::Sealed { .. }
            ),
        }
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
            VaultError::Timeout { whole: true, .. } => {
                "Vault is slow or unreachable; raise VAULT_CLIENT_TIMEOUT, or check the network".into()
            }
            VaultError::Timeout { whole: false, .. } => {
                "Vault accepted the connection but did not answer: check that it is up and healthy (`vault status`), or raise --answer-timeout (VAULT_SEED_ANSWER_TIMEOUT)".into()
            }
            VaultError::Redirect { .. } => {
                "set VAULT_ADDR to the address Vault should be reached at (for a standby node, the active node's address) if you trust where the redirect points".into()
            }
            VaultError::TooLarge { .. } => {
                "Vault's answers here are small: check that VAULT_ADDR points at Vault and not at something else".into()
            }
            VaultError::GaveUp { last, .. } => return last.help(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        let h = |ms: u64| human(&Duration::from_millis(ms));
        assert_eq!(h(2000), "2s");
        assert_eq!(h(4767), "4.8s");
        assert_eq!(h(59_990), "1m");
        assert_eq!(h(90_400), "1m 30s");
        assert_eq!(h(10), "0s");
    }
}
