//! vault-seed: bootstrap the Vault secrets a Kubernetes platform needs before its first GitOps
//! sync, from typed specs, idempotently and race-free, and prove the result.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
pub mod cli;
pub mod cmd;
pub mod duration;
pub mod exit;
pub mod generate;
pub mod kube;
pub mod kv;
pub mod logging;
pub mod order;
pub mod redact;
pub mod replace;
pub mod report;
pub mod seed;
pub mod spec;
mod suggest;
pub mod vault;
pub mod verify;

/// Install rustls' `ring` crypto provider for the process (idempotent). The Vault and
/// Kubernetes clients share it; we build without aws-lc so no C toolchain step is needed.
pub fn init_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Parse the command line, run it, and return the process exit code.
pub fn main() -> std::process::ExitCode {
    vault::connect::unset_empty_env();
    let cli = cli::parse();
    logging::init(cli.global.verbose);
    init_crypto();
    cmd::run(cli).into()
}
