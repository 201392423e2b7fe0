//! Where Vault is and who we are to it, resolved as the `vault` CLI does.
//!
//! Address: `--address`, else `VAULT_ADDR`, else `BAO_ADDR`, else the spec's environment.
//! Token: `VAULT_TOKEN`, else `BAO_TOKEN`, else `~/.vault-token`; never a flag (flags show in `ps`).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;
use secrecy::SecretString;

use super::{address, VaultError};

/// The default per-request timeout, as the vault CLI's.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The default time to open a connection to Vault.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The default time from sending a request to the start of Vault's answer (its headers). Vault
/// answers the requests vault-seed sends in milliseconds; this catches a server that accepts
/// connections and never answers, long before the per-request timeout.
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// The default time one request may take with its retries, before vault-seed gives up: what a
/// person at a terminal waits for.
pub const DEFAULT_GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// The variables that clap reads through `env = ...` (the others are read by [`env`]).
const CLAP_ENV: &[&str] = &[
    "VAULT_ADDR",
    "VAULT_CACERT",
    "VAULT_CAPATH",
    "VAULT_NAMESPACE",
    "VAULT_SKIP_VERIFY",
    "VAULT_CLIENT_TIMEOUT",
    "VAULT_SEED_SPECS",
    "VAULT_SEED_CONNECT_TIMEOUT",
    "VAULT_SEED_ANSWER_TIMEOUT",
    "VAULT_SEED_GIVE_UP_AFTER",
    "VAULT_SEED_AUTH",
    "VAULT_SEED_ROLE",
    "VAULT_SEED_AUTH_MOUNT",
    "VAULT_SEED_JWT_FILE",
    "VAULT_SEED_JWT_ENV",
    "VAULT_SEED_ROLE_ID_FILE",
    "VAULT_SEED_SECRET_ID_FILE",
    "VAULT_SEED_KEEP_TOKEN",
    "VAULT_SEED_SKIP_TARGET_SECRETS",
];

/// An empty (or blank) `VAULT_*` / `BAO_*` variable means unset, as the vault CLI reads them
/// (`api/client.go`, `ReadEnvironment`: `if v := ReadBaoVariable(...); v != ""`). clap's `env`
/// takes an empty value as given ("a value is required for '--ca-cert'"), so the empty ones are
/// removed before the command line is parsed. Call it first, while the process has one thread.
pub fn unset_empty_env() {
    for name in CLAP_ENV {
        if std::env::var_os(name).is_some_and(|v| v.to_string_lossy().trim().is_empty()) {
            std::env::remove_var(name);
        }
    }
}

/// How to reach Vault as the operator asked, before the `BAO_*` twins, the spec and the defaults
/// fill the gaps (kube-rs has `KubeConfigOptions` for the same role). The command line fills it
/// from its flags, which clap reads from `VAULT_*` too.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Vault's address (`--address`, `VAULT_ADDR`).
    pub address: Option<String>,
    /// PEM file of CAs to trust (`--ca-cert`, `VAULT_CACERT`).
    pub ca_cert: Option<PathBuf>,
    /// Directory of PEM CA files (`--ca-path`, `VAULT_CAPATH`).
    pub ca_path: Option<PathBuf>,
    /// Namespace (`--namespace`, `VAULT_NAMESPACE`).
    pub namespace: Option<String>,
    /// Do not verify Vault's certificate (`--skip-verify`, `VAULT_SKIP_VERIFY`).
    pub skip_verify: Option<bool>,
    /// Per-request timeout (`--timeout`, `VAULT_CLIENT_TIMEOUT`).
    pub timeout: Option<Duration>,
    /// Time to open a connection (`--connect-timeout`).
    pub connect_timeout: Option<Duration>,
    /// Time from a request to the start of the answer (`--answer-timeout`).
    pub answer_timeout: Option<Duration>,
    /// Time one request may take with its retries (`--give-up-after`).
    pub give_up_after: Option<Duration>,
    /// Allow the token over plain http:// off loopback (`--insecure-http`).
    pub insecure_http: bool,
}

/// Resolved connection settings. Holds the token: `Debug` is written by hand and redacts it.
pub struct Settings {
    /// Vault's address as shown: the parsed URL, without a trailing slash.
    pub addr: String,
    /// Vault's address, parsed once: requests are built on this very URL, and the plain-http
    /// check was made on it ([`address::parse`]).
    pub url: Url,
    /// The token, from the environment or `~/.vault-token`.
    pub token: SecretString,
    /// Where the token came from (`VAULT_TOKEN`, `BAO_TOKEN`, `~/.vault-token`), for messages.
    pub token_source: String,
    /// PEM file of CAs to trust besides the system's (`VAULT_CACERT`).
    pub ca_cert: Option<PathBuf>,
    /// Directory of PEM CA files (`VAULT_CAPATH`).
    pub ca_path: Option<PathBuf>,
    /// Do not verify Vault's certificate.
    pub skip_verify: bool,
    /// Vault namespace (`X-Vault-Namespace`).
    pub namespace: Option<String>,
    /// Per-request timeout (`VAULT_CLIENT_TIMEOUT`): one attempt, answer and body.
    pub timeout: Duration,
    /// Time to open a connection.
    pub connect_timeout: Duration,
    /// Time from sending a request to the start of the answer.
    pub answer_timeout: Duration,
    /// Time one request may take with its retries.
    pub give_up_after: Duration,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("addr", &self.addr)
            .field("token", &"[redacted]")
            .field("token_source", &self.token_source)
            .field("ca_cert", &self.ca_cert)
            .field("ca_path", &self.ca_path)
            .field("skip_verify", &self.skip_verify)
            .field("namespace", &self.namespace)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("answer_timeout", &self.answer_timeout)
            .field("give_up_after", &self.give_up_after)
            .finish()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn config_err(message: impl Into<String>, help: impl Into<String>) -> VaultError {
    VaultError::Config {
        message: message.into(),
        help: help.into(),
    }
}

impl Settings {
    /// Resolve from the operator's options, the `BAO_*` twins, and the spec's environment.
    pub fn resolve(
        args: &ConnectOptions,
        spec_addr: Option<&str>,
        spec_namespace: Option<&str>,
    ) -> Result<Settings, VaultError> {
        let mut settings = Settings::resolve_without_token(args, spec_addr, spec_namespace)?;
        (settings.token, settings.token_source) = resolve_token()?;
        crate::base::redact::register(&settings.token);
        Ok(settings)
    }

    /// The same, without a token (an empty one): for a client that logs in
    /// ([`super::login`]), which never reads `VAULT_TOKEN` or `~/.vault-token`.
    #[allow(clippy::too_many_lines)] // one exchange with Vault, each answer handled where it arrives
    pub fn resolve_without_token(
        args: &ConnectOptions,
        spec_addr: Option<&str>,
        spec_namespace: Option<&str>,
    ) -> Result<Settings, VaultError> {
        let addr = args
            .address
            .clone()
            .filter(|a| !a.trim().is_empty())
            .or_else(|| env("BAO_ADDR"))
            .or_else(|| spec_addr.map(str::to_string))
            .ok_or_else(|| {
                config_err(
                    "no Vault address",
                    "set VAULT_ADDR, pass --address, or give the environment a `vault_addr` in its spec",
                )
            })?;
        let url = address::parse(&addr, args.insecure_http).map_err(|e| match &e {
            // The host as parsed, which is where the token would go.
            address::AddressError::PlainHttp(host) => config_err(
                format!("refusing to send the Vault token over plain http:// to `{host}`"),
                e.help().unwrap_or_default(),
            ),
            // Not echoed: the text may hold a user name and password.
            address::AddressError::Userinfo => config_err(
                format!("the Vault address {e}"),
                e.help().unwrap_or_default(),
            ),
            _ => config_err(
                format!("the Vault address `{}` {e}", addr.trim()),
                e.help().unwrap_or_default(),
            ),
        })?;

        let ca_cert = args
            .ca_cert
            .clone()
            .or_else(|| env("BAO_CACERT").map(PathBuf::from));
        let ca_path = args
            .ca_path
            .clone()
            .or_else(|| env("BAO_CAPATH").map(PathBuf::from));
        let skip_verify = args
            .skip_verify
            .or_else(|| {
                env("BAO_SKIP_VERIFY")
                    .map(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "t" | "yes"))
            })
            .unwrap_or(false);
        let namespace = args
            .namespace
            .clone()
            .filter(|n| !n.trim().is_empty())
            .or_else(|| env("BAO_NAMESPACE"))
            .or_else(|| spec_namespace.map(str::to_string));
        let timeout = match args.timeout {
            Some(t) => t,
            None => match env("BAO_CLIENT_TIMEOUT") {
                Some(v) => crate::base::duration::parse(&v).map_err(|e| {
                    config_err(
                        format!("BAO_CLIENT_TIMEOUT: {e}"),
                        "e.g. BAO_CLIENT_TIMEOUT=30s",
                    )
                })?,
                None => DEFAULT_TIMEOUT,
            },
        };
        if timeout.is_zero() {
            return Err(config_err(
                "the client timeout is zero",
                "set VAULT_CLIENT_TIMEOUT to e.g. 30s",
            ));
        }
        let nonzero = |d: Option<Duration>, default: Duration, flag: &str| {
            let d = d.unwrap_or(default);
            if d.is_zero() {
                Err(config_err(
                    format!("`{flag}` is zero"),
                    format!("give `{flag}` a duration such as 10s"),
                ))
            } else {
                Ok(d)
            }
        };
        Ok(Settings {
            addr: address::display(&url),
            url,
            token: SecretString::from(String::new()),
            token_source: String::new(),
            ca_cert,
            ca_path,
            skip_verify,
            namespace,
            timeout,
            connect_timeout: nonzero(
                args.connect_timeout,
                DEFAULT_CONNECT_TIMEOUT,
                "--connect-timeout",
            )?,
            answer_timeout: nonzero(
                args.answer_timeout,
                DEFAULT_ANSWER_TIMEOUT,
                "--answer-timeout",
            )?,
            give_up_after: nonzero(args.give_up_after, DEFAULT_GIVE_UP_AFTER, "--give-up-after")?,
        })
    }
}

#[cfg(test)]
impl Settings {
    /// Settings for unit tests: this address and token, defaults otherwise.
    pub(crate) fn for_test(addr: &str, token: SecretString) -> Settings {
        let url = address::parse(addr, true).expect("test address");
        Settings {
            addr: address::display(&url),
            url,
            token,
            token_source: "VAULT_TOKEN".into(),
            ca_cert: None,
            ca_path: None,
            skip_verify: false,
            namespace: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
            give_up_after: DEFAULT_GIVE_UP_AFTER,
        }
    }
}

/// The token from `VAULT_TOKEN`, `BAO_TOKEN` or `~/.vault-token`.
fn resolve_token() -> Result<(SecretString, String), VaultError> {
    for var in ["VAULT_TOKEN", "BAO_TOKEN"] {
        if let Ok(t) = std::env::var(var) {
            let t = t.trim();
            if !t.is_empty() {
                return Ok((SecretString::from(t.to_string()), var.to_string()));
            }
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(file) = home.map(|h| h.join(".vault-token")) {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let t = text.trim();
            if !t.is_empty() {
                return Ok((SecretString::from(t.to_string()), "~/.vault-token".into()));
            }
        }
    }
    Err(config_err(
        "no Vault token",
        "set VAULT_TOKEN, or log in with `vault login` / `bao login` (which writes ~/.vault-token)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_token() {
        let s = Settings::for_test(
            "http://127.0.0.1:1",
            SecretString::from("hvs.very-secret".to_string()),
        );
        let d = format!("{s:?}");
        assert!(!d.contains("very-secret"), "{d}");
        assert!(d.contains("[redacted]"));
    }
}
