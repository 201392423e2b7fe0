//! The entry point, and the one place that prints: a command returns a report or a
//! [`Failure`]; this shows it (people's text on stdout and stderr, or one JSON document on
//! stdout) and turns it into the exit code.
//!
//! A stdout that cannot take the result is an error, not a panic: `error: cannot write to
//! stdout: ...` and exit 1; a closed pipe (`vault-seed policy ENV | head -1`, the reader gone)
//! ends quietly with exit 1. A closed stdout (`>&-`) is the same error, said before the command
//! runs: nothing it did could be shown.

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};

use crate::app::cli;
use crate::base::exit::Exit;
use crate::base::failure::{Failure, Problem};
use crate::base::logging;
use crate::cmd::{self, Done};
use crate::report::{self, diagnostics, Body, Ending, Format, Printer, Report, Style, View};
use crate::vault;

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
    if stdout_is_closed() {
        to_stderr(&report::error_text(
            &view.err,
            "cannot write to stdout: it is closed",
            Some("send the output to a file, a pipe or `>/dev/null` (a /dev/null opened for reading and writing, as Python's `subprocess.DEVNULL` opens it, looks the same as a closed stdout)"),
        ));
        return Exit::Failure.into();
    }
    // Handed to the commands that write their result while they run (`plan`, `apply`); the
    // rows are flushed whenever the run waits.
    let mut out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let done = cmd::execute(
        &cli,
        Printer {
            view,
            out: &mut out,
        },
    );
    let exit = match done {
        Ok(Done::Printed(ending)) => show_ending(ending, out, &view),
        Ok(Done::Report(r)) => {
            drop(out);
            show(r.as_ref(), &view)
        }
        Err(f) => {
            drop(out);
            show_failure(cli.command.name(), &f, &view)
        }
    };
    exit.into()
}

/// Print a report; its exit code.
pub fn show(r: &dyn Report, view: &View) -> Exit {
    let out = r.render(view);
    to_stderr(&out.before);
    let written = match out.stdout {
        Body::Bytes(bytes) => to_stdout(&bytes),
        Body::Stream(write) => {
            let mut stdout = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
            write(&mut stdout).and_then(|()| stdout.flush())
        }
    };
    if let Err(e) = written {
        return stdout_failed(&e, view);
    }
    to_stderr(&out.after);
    if out.refused {
        return Exit::Usage;
    }
    Exit::of(out.ok)
}

/// The end of a result its command wrote while it ran: the rest of stdout flushed, then the
/// notes and what is left to do on stderr.
fn show_ending(ending: Ending, mut out: impl Write, view: &View) -> Exit {
    let written = match ending.stdout {
        Some(e) => Err(e),
        None => out.flush(),
    };
    drop(out);
    to_stderr(&ending.notes);
    if let Err(e) = written {
        return stdout_failed(&e, view);
    }
    to_stderr(&ending.after);
    Exit::of(ending.ok)
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
        let inputs: Vec<_> = f
            .problems
            .iter()
            .filter_map(|p| match p {
                Problem::Input { message, help, .. } => Some((message, help)),
                Problem::Spec(_) => None,
            })
            .collect();
        // As for spec problems: the first in full, then how many more.
        for (message, help) in inputs.iter().take(diagnostics::SHOWN_MAX) {
            out.push_str(&report::error_text(style, message, help.as_deref()));
        }
        if let Some(more) = inputs
            .len()
            .checked_sub(diagnostics::SHOWN_MAX)
            .filter(|&n| n > 0)
        {
            out.push_str(&format!(
                "… and {more} more problems (`-o json` lists them all)\n"
            ));
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
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'static str>,
        help: Option<&'a str>,
        #[serde(skip_serializing_if = "no_problems")]
        errors: &'a [Problem],
    }
    report::json(&Doc {
        command,
        ok: false,
        error: &f.message,
        code: f.code,
        help: f.help.as_deref(),
        errors: &f.problems,
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

/// Whether stdout was closed when the process started (`>&-`). Before `main`, Rust's runtime
/// opens `/dev/null` read-write in place of a closed 0, 1 or 2, so every write to it would
/// "succeed" and the result be lost with exit 0; a shell's `>/dev/null` opens it write-only.
/// When 0, 1 and 2 are all that read-write `/dev/null`, the process was started detached
/// (daemon(3) does this) and discarding the output was meant. A parent that opens `/dev/null`
/// read-write for stdout alone (Python's `subprocess.DEVNULL`) cannot be told from `>&-`: the
/// help line says so.
fn stdout_is_closed() -> bool {
    is_runtime_null(io::stdout().as_fd())
        && !(is_runtime_null(io::stdin().as_fd()) && is_runtime_null(io::stderr().as_fd()))
}

/// Whether `fd` is `/dev/null` open for reading and writing.
fn is_runtime_null(fd: BorrowedFd<'_>) -> bool {
    use rustix::fs::{fcntl_getfl, fstat, stat, FileType, OFlags};
    let (Ok(st), Ok(null)) = (fstat(fd), stat("/dev/null")) else {
        return false;
    };
    FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice
        && st.st_rdev == null.st_rdev
        && fcntl_getfl(fd).is_ok_and(|f| f & OFlags::RWMODE == OFlags::RDWR)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(doc: &[u8]) -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(doc).unwrap();
        v.as_object().unwrap().keys().cloned().collect()
    }

    #[test]
    fn a_failure_document_has_one_shape() {
        let f = Failure::new("Vault at `x` is sealed").help("unseal it");
        let doc = failure_json("apply", &f);
        assert_eq!(keys(&doc), ["command", "error", "help", "ok"]);
        let v: serde_json::Value = serde_json::from_slice(&doc).unwrap();
        assert_eq!(v["ok"], false);
        assert_eq!(v["command"], "apply");
        // Several problems: `errors` lists them; `help` is null when there is none.
        let f = Failure::several(vec![("a".into(), None), ("b".into(), None)], "2".into());
        let v: serde_json::Value = serde_json::from_slice(&failure_json("order", &f)).unwrap();
        assert_eq!(v["errors"].as_array().map(Vec::len), Some(2));
        assert!(v["help"].is_null());
        assert_eq!(
            v["errors"][0],
            serde_json::json!({"message": "a", "help": null})
        );
    }

    #[test]
    fn a_failure_for_people_shows_each_problem_once_then_the_error() {
        let style = Style::plain();
        let one = Failure::several(vec![("bad `x`".into(), Some("fix it".into()))], "1".into());
        assert_eq!(
            failure_text(&one, &style),
            "error: bad `x`\n  help: fix it\n"
        );
        let two = Failure::several(
            vec![("a".into(), Some("h".into())), ("b".into(), None)],
            "2 problem(s)".into(),
        );
        assert_eq!(
            failure_text(&two, &style),
            "error: a\n  help: h\nerror: b\nerror: 2 problem(s)\n"
        );
    }
}
