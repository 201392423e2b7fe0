//! `tracing` to stderr: quiet by default, `-v` / `RUST_LOG` to turn it up.
//!
//! Below `-vv` only vault-seed's own messages show: a dependency's log line (rustls' platform
//! verifier logs a failed handshake at `error`) would repeat, less clearly, the error vault-seed
//! reports itself. From `-vv` on, dependencies show their warnings and errors. `RUST_LOG`
//! replaces these defaults.
//!
//! Whatever the level asked for, the HTTP and TLS layers below the Vault and Kubernetes clients
//! stay at `warn`: at trace level they describe requests and connections, and nothing below our
//! own code may ever get a chance to print a header or a body that holds a token or a secret.

use tracing_subscriber::EnvFilter;

/// Targets held at `warn` at every verbosity.
pub const MUTED_TARGETS: &[&str] = &[
    "hyper",
    "hyper_util",
    "h2",
    "reqwest",
    "rustls",
    "vaultrs",
    "tower",
    "tower_http",
    "kube_client",
    "kube",
    "http",
];

/// Targets silenced entirely: rustify (vaultrs' request layer, which vault-seed no longer sends
/// through) logs every non-2xx answer at `error` through `#[instrument(err)]`; kept silent should
/// any vaultrs call use it. vault-seed reports each error itself, with the path and what to do.
pub const SILENCED_TARGETS: &[&str] = &["rustify"];

/// Install the subscriber. `verbose` is the number of `-v`.
pub fn init(verbose: u8) {
    let filter = filter(verbose, std::env::var("RUST_LOG").ok().as_deref());
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && !no_color)
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        .try_init();
}

/// The filter for `verbose` (`-v` count) and `RUST_LOG`.
fn filter(verbose: u8, rust_log: Option<&str>) -> EnvFilter {
    let base = match verbose {
        0 => "off,vault_seed=warn",
        1 => "off,vault_seed=info",
        2 => "vault_seed=debug,warn",
        _ => "vault_seed=trace,info",
    };
    let custom = rust_log.and_then(|s| EnvFilter::try_new(s).ok());
    let deps_shown = verbose >= 2 || custom.is_some();
    let mut filter = custom.unwrap_or_else(|| EnvFilter::new(base));
    // Below -vv every other target is off already; adding `hyper=warn` there would turn it on.
    let muted = MUTED_TARGETS
        .iter()
        .filter(|_| deps_shown)
        .map(|t| format!("{t}=warn"));
    let directives = muted.chain(SILENCED_TARGETS.iter().map(|t| format!("{t}=off")));
    for d in directives {
        if let Ok(d) = d.parse() {
            filter = filter.add_directive(d);
        }
    }
    filter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_are_off_below_vv_and_capped_from_vv() {
        let shown = |v: u8, rust_log: Option<&str>| filter(v, rust_log).to_string();
        for v in [0, 1] {
            let f = shown(v, None);
            assert!(f.starts_with("off") || f.contains(",off"), "{v}: {f}");
            assert!(
                !f.contains("hyper=warn") && !f.contains("rustls"),
                "{v}: {f}"
            );
        }
        assert!(shown(0, None).contains("vault_seed=warn"));
        let f = shown(2, None);
        assert!(f.contains("hyper=warn") && f.contains("rustls=warn"), "{f}");
        // RUST_LOG replaces the defaults; the muted targets stay capped.
        let f = shown(0, Some("debug"));
        assert!(f.contains("debug") && f.contains("hyper=warn"), "{f}");
        assert!(shown(3, None).contains("rustify=off"));
    }
}
