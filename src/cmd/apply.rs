//! `vault-seed plan ENV` and `vault-seed apply ENV`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::cli::{ApplyArgs, GlobalArgs};
use crate::mounts::{self, MountTrust};
use crate::report::{self, seeding::SeedReport};
use crate::seed;

use super::session::Session;
use super::Failure;

/// Which of the two commands runs.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mode {
    /// Decide only; write nothing.
    Plan,
    /// Write, and record vault-seed's custom_metadata on each path written when `metadata`.
    Apply { metadata: bool },
}

/// Run `plan` or `apply`.
pub(super) fn run(g: &GlobalArgs, args: &ApplyArgs, mode: Mode) -> Result<SeedReport, Failure> {
    let dry_run = matches!(mode, Mode::Plan);
    let command = if dry_run { "plan" } else { "apply" };
    let session = Session::open(g, &args.env, &args.only, &args.vault)?;
    let runtime = super::runtime()?;
    runtime.block_on(async {
        session.announce(command);
        let vault = &session.vault;
        let cancel = Arc::new(AtomicBool::new(false));
        // The token check and the mount detection go out together (`Session::checked`); the
        // engine sends no LIST, read or write before both are in and good. A stop signal is
        // handled from then on: before, nothing was sent that needs finishing.
        let gate = {
            let (session, cancel) = (&session, cancel.clone());
            async move {
                let detected = session
                    .checked(mounts::detect(
                        vault,
                        &session.targets,
                        MountTrust::Write {
                            assumed: &args.assume_kv_mount,
                        },
                    ))
                    .await?;
                tokio::spawn(async move {
                    if let Some(signal) = super::stop_signal().await {
                        cancel.store(true, Ordering::SeqCst);
                        report::say(&format!(
                            "{signal}: finishing requests in flight, starting no new ones"
                        ));
                    }
                });
                Ok::<_, Failure>(detected)
            }
        };
        let bar = progress_bar(session.targets.len());
        let tick = {
            let bar = bar.clone();
            move || bar.inc(1)
        };
        let opts = seed::Options {
            dry_run,
            concurrency: usize::from(args.concurrency),
            metadata: matches!(mode, Mode::Apply { metadata: true }),
        };
        let run = seed::run(vault, gate, &session.targets, &opts, cancel, &tick).await?;
        bar.finish_and_clear();
        tracing::info!(requests = vault.requests(), "requests sent to Vault");
        Ok(SeedReport {
            command,
            env: session.env.clone(),
            vault_addr: vault.addr().to_string(),
            dry_run,
            run,
            shared_names: session.shared_names.clone(),
        })
    })
}

fn progress_bar(len: usize) -> indicatif::ProgressBar {
    if len < 25 || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} {pos}/{len} paths [{bar:30}] {per_sec} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
