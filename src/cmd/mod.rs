//! One module per subcommand. `run` dispatches and maps outcomes to exit codes.

mod apply;
mod change;
mod completions;
mod gen;
mod lint;
mod man;
mod order;
mod policy;
mod prompt;
mod rotate;
mod session;
mod set;
mod verify;

use crate::cli::{Cli, Command, GlobalArgs};
use crate::exit::Exit;
use crate::report::{self, Style};
use crate::spec::{self, LoadError, SpecSet};
use crate::vault::VaultError;

/// Run a parsed command line.
pub fn run(cli: Cli) -> Exit {
    let g = &cli.global;
    match &cli.command {
        Command::Lint => lint::run(g),
        Command::Gen(args) => gen::run(g, args),
        Command::Plan(args) => apply::run(g, args, apply::Mode::Plan),
        Command::Apply(args) => apply::run(
            g,
            &args.common,
            apply::Mode::Apply {
                metadata: !args.no_metadata,
            },
        ),
        Command::Set(args) => set::run(g, args),
        Command::Rotate(args) => rotate::run(g, args),
        Command::Policy(args) => policy::run(g, args),
        Command::Verify(args) => verify::run(g, args),
        Command::Order(args) => order::run(g, args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(g, args),
    }
}

pub(crate) fn print_load_error(g: &GlobalArgs, e: &LoadError) {
    let style = Style::stderr(g.color);
    match e {
        LoadError::Invalid(diags) => {
            // The first problems in full, the rest counted: a hostile spec can have thousands.
            for d in diags.iter().take(spec::diag::SHOWN_MAX) {
                eprint!("{}", d.render(&style));
            }
            if let Some(more) = diags
                .len()
                .checked_sub(spec::diag::SHOWN_MAX)
                .filter(|&n| n > 0)
            {
                eprintln!("… and {more} more problems (`vault-seed lint -o json` lists them all)");
            }
            eprintln!(
                "{}: {} problem(s) in the specs under `{}`; nothing was sent to Vault",
                style.error("error"),
                diags.len(),
                g.specs.display()
            );
        }
        LoadError::Empty(dir) => report::error(
            &style,
            &format!("no spec files (`*.toml`) in `{}`", dir.display()),
            Some("point `--specs` (or VAULT_SEED_SPECS) at the directory of your specs"),
        ),
        LoadError::Dir { .. } => report::error(
            &style,
            &e.to_string(),
            Some("run from the repository that holds `secret-specs/`, or pass `--specs DIR`"),
        ),
    }
}

/// Load the specs, printing every problem on stderr; `Err(Exit::Usage)` when any.
pub(crate) fn load_specs(g: &GlobalArgs) -> Result<SpecSet, Exit> {
    spec::load_dir(&g.specs).map_err(|e| {
        print_load_error(g, &e);
        Exit::Usage
    })
}

/// The tokio runtime for the commands that talk to servers: one thread. vault-seed waits on the
/// network, not the CPU; a multi-threaded runtime spent about 60 % more CPU per request on
/// waking its threads (measured with `perf` on a re-run of 10,000 paths), CPU that a local
/// server on the same small machine then lacks.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Exit> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("error: cannot start the async runtime: {e}");
            Exit::Failure
        })
}

/// Wait for a request to stop: SIGINT (Ctrl-C), SIGTERM (`kill`, a Job's deadline, a pod's
/// deletion) or SIGHUP (the terminal went away). All three are handled alike: no new work
/// starts, requests in flight finish (a created path's custom_metadata write included), the
/// report is printed and the exit code is 1. `None` when no handler could be installed.
pub(crate) async fn stop_signal() -> Option<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return tokio::signal::ctrl_c().await.ok().map(|()| "interrupted");
        };
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.ok().map(|()| "interrupted"),
            _ = term.recv() => Some("terminated (SIGTERM)"),
            _ = hup.recv() => Some("hung up (SIGHUP)"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.ok().map(|()| "interrupted")
    }
}

#[derive(serde::Serialize)]
struct JsonFailure<'a> {
    command: &'a str,
    ok: bool,
    error: String,
    help: Option<String>,
}

/// Report an error that stopped a command before it had per-path results: on stderr, and as a
/// JSON document on stdout with `--output json`.
pub(crate) fn fail(g: &GlobalArgs, command: &str, e: &VaultError) {
    report::error(&Style::stderr(g.color), &e.to_string(), e.help().as_deref());
    if g.output == report::Format::Json {
        let _ = report::print_json(&JsonFailure {
            command,
            ok: false,
            error: e.to_string(),
            help: e.help(),
        });
    }
}

/// Write a command's whole result to stdout; a closed stdout is an error, not a panic.
pub(crate) fn write_stdout(bytes: &[u8]) -> Exit {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Exit::Success,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            Exit::Failure
        }
    }
}
