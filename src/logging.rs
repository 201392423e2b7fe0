//! `tracing` to stderr: quiet by default, `-v` / `RUST_LOG` to turn it up.
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
    let base = match verbose {
        0 => "warn",
        1 => "vault_seed=info,warn",
        2 => "vault_seed=debug,warn",
        _ => "vault_seed=trace,info",
    };
    let mut filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| EnvFilter::new(base));
    let directives = MUTED_TARGETS
        .iter()
        .map(|t| format!("{t}=warn"))
        .chain(SILENCED_TARGETS.iter().map(|t| format!("{t}=off")));
    for d in directives {
        if let Ok(d) = d.parse() {
            filter = filter.add_directive(d);
        }
    }
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && !no_color)
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        .try_init();
}
