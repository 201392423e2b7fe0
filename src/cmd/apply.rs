//! `vault-seed plan ENV` and `vault-seed apply ENV`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::app::cli::{ApplyArgs, GlobalArgs};
use crate::base::stop;
use crate::report::{self, seeding::SeedReport, Ending, Printer};
use crate::seed;
use crate::spec::mounts::{self, MountTrust};

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

/// `plan` or `apply`: what needs no network first (specs, the environment, the connection; a
/// failure is exit 2 and nothing was sent), then the run, its rows written to `printer` as it
/// goes ([`SeedReport`]). A failure is from before any row (a refused token, a sealed Vault).
pub(super) fn run(
    g: &GlobalArgs,
    args: &ApplyArgs,
    mode: Mode,
    printer: Printer<'_>,
) -> Result<Ending, Failure> {
    let dry_run = matches!(mode, Mode::Plan);
    let command = if dry_run { "plan" } else { "apply" };
    let session = Session::open(g, &args.env, &args.only, &args.vault)?;
    let runtime = super::runtime()?;
    let opts = seed::Options {
        dry_run,
        concurrency: usize::from(args.concurrency),
        metadata: matches!(mode, Mode::Apply { metadata: true }),
    };
    let assumed = args.assume_kv_mount.clone();
    let (env, addr) = (session.env.clone(), session.vault.addr().to_string());
    let report = SeedReport::new(
        command,
        env,
        addr,
        dry_run,
        session.shared_names.clone(),
        &session.targets,
    );
    let mut rows = report.rows(printer.view, printer.out);
    let run = {
        let sink: &mut dyn seed::Sink = &mut rows;
        runtime.block_on(async {
            session.announce(command);
            let vault = &session.vault;
            let cancel = Arc::new(AtomicBool::new(false));
            // The token check and the mount detection go out together (`Session::checked`); the
            // engine sends no LIST, read or write before both are in and good. A stop signal is
            // handled from then on: before, nothing was sent that needs finishing.
            // From then on until the engine ends, the signal is the engine's (`stop::graceful`);
            // before and after, a signal revokes a login token and ends the run.
            let graceful = std::cell::RefCell::new(None);
            let gate = {
                let (session, cancel, graceful) = (&session, cancel.clone(), &graceful);
                async move {
                    let detected = session
                        .checked(mounts::detect(
                            vault,
                            &session.targets,
                            MountTrust::Write { assumed: &assumed },
                        ))
                        .await?;
                    *graceful.borrow_mut() = Some(stop::graceful(move |signal| {
                        cancel.store(true, Ordering::SeqCst);
                        report::say(&format!(
                            "{}: finishing requests in flight, starting no new ones",
                            signal.describe()
                        ));
                    }));
                    Ok::<_, Failure>(detected)
                }
            };
            let bar = progress_bar(session.targets.len());
            let tick = {
                let bar = bar.clone();
                move || bar.inc(1)
            };
            let run = seed::run(vault, gate, &session.targets, &opts, cancel, &tick, sink).await;
            drop(graceful.take());
            let run = run?;
            bar.finish_and_clear();
            tracing::info!(requests = vault.requests(), "requests sent to Vault");
            Ok::<_, Failure>(run)
        })?
    };
    Ok(rows.finish(&run))
}

/// A progress bar on stderr for a long run, when stderr is a terminal and stdout is not: on one
/// terminal the rows, written as the run goes, are the progress.
fn progress_bar(len: usize) -> indicatif::ProgressBar {
    if len < 25 || !std::io::stderr().is_terminal() || std::io::stdout().is_terminal() {
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
