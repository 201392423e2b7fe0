//! The entry point, and the one place that prints: a command returns a report or a
//! [`Failure`]; this shows it (people's text on stdout and stderr, or one JSON document on
//! stdout) and turns it into the exit code.
//!
//! A stdout that cannot take the result is an error, not a panic: `error: cannot write to
//! stdout: ...` and exit 1; a closed pipe (`vault-seed policy ENV | head -1`, the reader gone)
//! ends quietly with exit 1.

use std::io::{self, Write};

use crate::cmd::{self, Failure, Problem};
use crate::exit::Exit;
use crate::report::{self, diagnostics, Format, Report, Style, View};
use crate::{cli, logging, vault};

/// Install rustls' `ring` crypto provider for the process (idempotent). The Vault and
/// Kubernetes clients share it; we build without aws-lc so no C toolchain step is needed.
pub fn init_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Parse the command line, run it, print its result, and return the process exit code.
pub fn main() -> std::process::ExitCode {
    vault::connect::unset_empty_env();
    let cli = cli::parse();
    logging::init(cli.global.verbose);
    init_crypto();
    let view = View {
        format: cli.global.output,
        out: Style::stdout(cli.global.color),
        err: Style::stderr(cli.global.color),
        verbose: cli.global.verbose,
    };
    let exit = match cmd::execute(&cli) {
        Ok(r) => show(r.as_ref(), &view),
        Err(f) => show_failure(cli.command.name(), &f, &view),
    };
    exit.into()
}

/// Print a report; its exit code.
pub fn show(r: &dyn Report, view: &View) -> Exit {
    let out = r.render(view);
    to_stderr(&out.before);
    if let Err(e) = to_stdout(&out.stdout) {
        return stdout_failed(&e, view);
    }
    to_stderr(&out.after);
    Exit::of(out.ok)
}

/// Print a failure: every problem behind it, then `error: ...` and `  help: ...` on stderr;
/// under `-o json` also `{"command", "ok": false, "error", "help", "errors"?, ...}` on stdout.
pub fn show_failure(command: &str, f: &Failure, view: &View) -> Exit {
    to_stderr(&failure_text(f, &view.err));
    if view.format == Format::Json {
        if let Err(e) = to_stdout(&failure_json(command, f)) {
            return stdout_failed(&e, view);
        }
    }
    f.exit
}

/// A failure for people.
pub fn failure_text(f: &Failure, style: &Style) -> String {
    let mut out = String::new();
    let specs: Vec<_> = f
        .problems
        .iter()
        .filter_map(|p| match p {
            Problem::Spec(d) => Some(d.clone()),
            Problem::Input { .. } => None,
        })
        .collect();
    out.push_str(&diagnostics::render_all(
        &specs,
        style,
        "`vault-seed lint -o json` lists them all",
    ));
    if !f.is_its_one_problem() {
        for p in &f.problems {
            if let Problem::Input { message, help } = p {
                out.push_str(&report::error_text(style, message, help.as_deref()));
            }
        }
    }
    out.push_str(&report::error_text(style, &f.message, f.help.as_deref()));
    out
}

/// A failure's JSON document.
pub fn failure_json(command: &str, f: &Failure) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        command: &'a str,
        ok: bool,
        error: &'a str,
        help: Option<&'a str>,
        #[serde(skip_serializing_if = "no_problems")]
        errors: &'a [Problem],
        #[serde(flatten)]
        extra: &'a serde_json::Map<String, serde_json::Value>,
    }
    report::json(&Doc {
        command,
        ok: false,
        error: &f.message,
        help: f.help.as_deref(),
        errors: &f.problems,
        extra: &f.extra,
    })
}

fn no_problems(p: &&[Problem]) -> bool {
    p.is_empty()
}

fn to_stdout(bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// stderr is where errors go; if it cannot take them there is nowhere else to say so.
fn to_stderr(text: &str) {
    if !text.is_empty() {
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
}

fn stdout_failed(e: &io::Error, view: &View) -> Exit {
    if e.kind() != io::ErrorKind::BrokenPipe {
        to_stderr(&report::error_text(
            &view.err,
            &format!("cannot write to stdout: {e}"),
            Some("send the output to a file or a pipe that takes it"),
        ));
    }
    Exit::Failure
}
