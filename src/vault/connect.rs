//! Where Vault is and who we are to it, resolved as the `vault` CLI does.
//!
//! Address: `--address`, else `VAULT_ADDR`, else `BAO_ADDR`, else the spec's environment.
//! Token: `VAULT_TOKEN`, else `BAO_TOKEN`, else `~/.vault-token`; never a flag (flags show in `ps`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;

use super::VaultError;
use crate::cli::VaultArgs;

/// The default per-request timeout, as the vault CLI's.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Resolved connection settings. Holds the token: `Debug` is written by hand and redacts it.
pub struct Settings {
    /// Vault's address, without a trailing slash.
    pub addr: String,
    /// The token, from the environment or `~/.vault-token`.
    pub token: SecretString,
    /// Where the token came from (`VAULT_TOKEN`, `BAO_TOKEN`, `~/.vault-token`), for messages.
    pub token_source: String,
    /// PEM files of CAs to trust besides the system's.
    pub ca_files: Vec<PathBuf>,
    /// Do not verify Vault's certificate.
    pub skip_verify: bool,
    /// Vault namespace (`X-Vault-Namespace`).
    pub namespace: Option<String>,
    /// Per-request timeout.
    pub timeout: Duration,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("addr", &self.addr)
            .field("token", &"[redacted]")
            .field("token_source", &self.token_source)
            .field("ca_files", &self.ca_files)
            .field("skip_verify", &self.skip_verify)
            .field("namespace", &self.namespace)
            .field("timeout", &self.timeout)
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
    /// Resolve from flags (which clap already filled from `VAULT_*`), the `BAO_*` twins, and the
    /// spec's environment.
    pub fn resolve(
        args: &VaultArgs,
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
        let addr = addr.trim().trim_end_matches('/').to_string();
        check_scheme(&addr, args.insecure_http)?;

        let (token, token_source) = resolve_token()?;

        let mut ca_files = Vec::new();
        if let Some(f) = args
            .ca_cert
            .clone()
            .or_else(|| env("BAO_CACERT").map(PathBuf::from))
        {
            ca_files.push(f);
        }
        if let Some(dir) = args
            .ca_path
            .clone()
            .or_else(|| env("BAO_CAPATH").map(PathBuf::from))
        {
            ca_files.extend(ca_dir_files(&dir)?);
        }
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
                Some(v) => crate::cli::parse_duration(&v).map_err(|e| {
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
        Ok(Settings {
            addr,
            token,
            token_source,
            ca_files,
            skip_verify,
            namespace,
            timeout,
        })
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

/// Refuse to send a token over plain HTTP to anything but loopback, unless told to.
fn check_scheme(addr: &str, insecure_http: bool) -> Result<(), VaultError> {
    if let Some(rest) = addr.strip_prefix("http://") {
        let host = host_of(rest);
        let loopback = host == "localhost"
            || host == "::1"
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !loopback && !insecure_http {
            return Err(config_err(
                format!("refusing to send the Vault token over plain http:// to `{host}`"),
                "use an https:// address, or pass --insecure-http if this network is trusted",
            ));
        }
        Ok(())
    } else if addr.starts_with("https://") {
        Ok(())
    } else {
        Err(config_err(
            format!("Vault address `{addr}` is not an http:// or https:// URL"),
            "e.g. VAULT_ADDR=https://vault.example.internal:8200",
        ))
    }
}

fn host_of(rest: &str) -> &str {
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or("");
    }
    authority.split(':').next().unwrap_or("")
}

fn ca_dir_files(dir: &Path) -> Result<Vec<PathBuf>, VaultError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        config_err(
            format!("cannot read VAULT_CAPATH `{}`: {e}", dir.display()),
            "point VAULT_CAPATH at a directory of PEM files",
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_to_loopback() {
        assert!(check_scheme("http://127.0.0.1:8200", false).is_ok());
        assert!(check_scheme("http://localhost:8200", false).is_ok());
        assert!(check_scheme("http://[::1]:8200", false).is_ok());
        assert!(check_scheme("https://vault.example", false).is_ok());
        let e = check_scheme("http://vault.example:8200", false).unwrap_err();
        assert!(e.to_string().contains("`vault.example`"), "{e}");
        assert!(check_scheme("http://vault.example:8200", true).is_ok());
        assert!(check_scheme("vault.example", false).is_err());
    }

    #[test]
    fn debug_redacts_token() {
        let s = Settings {
            addr: "http://127.0.0.1:1".into(),
            token: SecretString::from("hvs.very-secret".to_string()),
            token_source: "VAULT_TOKEN".into(),
            ca_files: vec![],
            skip_verify: false,
            namespace: None,
            timeout: DEFAULT_TIMEOUT,
        };
        let d = format!("{s:?}");
        assert!(!d.contains("very-secret"), "{d}");
        assert!(d.contains("[redacted]"));
    }
}
