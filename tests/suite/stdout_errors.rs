//! A stdout that cannot take the result is an error, never a panic (issue 12, finding 12:
//! `vault-seed policy auh1-dev >/dev/full` panicked "failed printing to stdout", exit 101).
//! For every command that prints: a full stdout (`/dev/full`) is `error: cannot write to stdout`
//! and exit 1; a closed pipe (the reader gone, as `| head -1` leaves it) is a quiet exit 1; a
//! closed stdout (`>&-`, issue 28 item 10: exit 0 with the output lost) is
//! `error: cannot write to stdout` and exit 1.

use crate::common;

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use common::{OpenBao, Out, Run};

/// Where stdout goes.
#[derive(Debug, Clone, Copy)]
enum Sink {
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe whose reader was closed before vault-seed wrote: EPIPE.
    Closed,
    /// No stdout at all (`>&-`).
    Shut,
}

const SINKS: [Sink; 3] = [Sink::Full, Sink::Closed, Sink::Shut];

/// `run` with its stdout to `sink`: every such run fails with exit 1 ([`check`] says why).
fn run(run: Run, sink: Sink, stdin: &str) -> Out {
    let run = match sink {
        Sink::Full => run.stdout_to(OpenOptions::new().write(true).open("/dev/full").unwrap()),
        Sink::Closed => {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            run.stdout_to(writer)
        }
        Sink::Shut => run.stdout_closed(),
    };
    run.stdin(stdin).status(1).output()
}

/// The result of `args` could not be written: exit 1, no panic, and the error said (for a full
/// stdout) or not (for a closed pipe).
fn check(what: &str, out: &Out, sink: Sink) {
    let err = out.stderr_text();
    assert!(!err.contains("panicked"), "{what} {sink:?}: {err}");
    match sink {
        Sink::Full => assert!(
            err.contains("error: cannot write to stdout:")
                && err.contains("No space left on device"),
            "{what}: {err}"
        ),
        Sink::Closed => assert!(
            !err.contains("cannot write to stdout"),
            "{what}: a closed pipe ends quietly: {err}"
        ),
        Sink::Shut => assert!(
            err.contains("error: cannot write to stdout: it is closed\n  help: send the output to a file, a pipe or `>/dev/null`"),
            "{what}: {err}"
        ),
    }
}

fn offline(home: &Path, args: &[&str]) -> Run {
    Run::home(home).real_specs().args(args)
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

#[test]
fn offline_commands_fail_cleanly_on_a_full_or_closed_stdout() {
    let home = tempfile::tempdir().unwrap();
    let app = format!(
        "core-service={}",
        fixture("order/runbook/fixed/core-service.yaml").display()
    );
    let commands: Vec<Vec<&str>> = vec![
        vec!["lint"],
        vec!["-o", "json", "lint"],
        vec!["gen", "hex"],
        vec!["-o", "json", "gen", "fernet"],
        vec!["policy", "auh1-dev"],
        vec!["-o", "json", "policy", "auh1-dev"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["order", "--app", &app],
        vec!["-o", "json", "order", "--app", &app],
    ];
    for sink in SINKS {
        for args in &commands {
            let out = run(offline(home.path(), args), sink, "");
            check(&args.join(" "), &out, sink);
        }
        // A failure's JSON document cannot be written either: exit 1 all the same.
        let out = run(
            offline(home.path(), &["-o", "json", "policy", "nowhere"]),
            sink,
            "",
        );
        check("policy nowhere", &out, sink);
    }
}

/// `>/dev/null` is output thrown away on purpose, not a closed stdout: exit 0.
#[test]
fn a_stdout_sent_to_dev_null_is_not_an_error() {
    let home = tempfile::tempdir().unwrap();
    for args in [vec!["gen", "hex"], vec!["policy", "auh1-dev"]] {
        let null = OpenOptions::new().write(true).open("/dev/null").unwrap();
        offline(home.path(), &args).stdout_to(null).output();
        // Started detached (daemon(3): 0, 1 and 2 all one read-write /dev/null): output thrown
        // away on purpose too.
        offline(home.path(), &args)
            .redirected("<>/dev/null >&0 2>&0")
            .output();
    }
}

#[test]
fn commands_against_a_server_fail_cleanly_on_a_full_or_closed_stdout() {
    let bao = OpenBao::dev();
    let seed = |args: &[&str]| Run::new(&bao).real_specs().args(args);
    let first = run(seed(&["apply", "auh1-dev"]), Sink::Full, "");
    check("apply", &first, Sink::Full);
    // The paths were written all the same: only the report was lost.
    assert!(bao
        .kv_get("secret", "ask/core-service/auh1-dev/ZITADEL_MASTERKEY")
        .is_some());
    for sink in SINKS {
        for (args, stdin) in [
            (vec!["plan", "auh1-dev"], ""),
            (vec!["-o", "json", "apply", "auh1-dev"], ""),
            (vec!["verify", "auh1-dev", "--skip-kube"], ""),
            (vec!["-o", "json", "verify", "auh1-dev", "--skip-kube"], ""),
            (
                vec!["set", "auh1-dev", "IAM_SERVICE__PAT", "--force"],
                "a-pat-value\n",
            ),
            (
                vec![
                    "rotate",
                    "auh1-dev",
                    "APP__CORE_SERVICES_MACHINE_TOKEN",
                    "--dry-run",
                ],
                "",
            ),
        ] {
            let out = run(seed(&args), sink, stdin);
            check(&args.join(" "), &out, sink);
        }
    }
}
