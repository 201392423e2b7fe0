//! `Run`: the built `vault-seed` as the tests run it, with a clean environment (only PATH, a
//! scratch HOME, NO_COLOR, and what the test adds), and `Out`, what it printed.
//!
//! ```ignore
//! let doc = Run::new(&bao).specs(dir.path()).args(["apply", "dev", "-o", "json"]).json();
//! let out = Run::offline().args(["gen", "hex32"]).output();
//! let out = Run::offline().args(["lint", "nowhere"]).status(2).output();
//! ```
//!
//! A run is expected to exit 0 unless the test says otherwise (casey/just's `Test`): a test
//! that forgot to expect a failure fails instead of passing on a command that failed.

use std::ffi::OsStr;
use std::io::Write;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use super::OpenBao;

/// The `vault-seed` binary cargo built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vault-seed"))
}

/// One run of `vault-seed`, built up and then run with [`Run::output`] or [`Run::json`], which
/// check every expectation first, or started with [`Run::spawn`].
pub struct Run {
    cmd: Command,
    stdin: Option<Vec<u8>>,
    /// Where stdout goes instead of being captured.
    stdout: Option<Stdio>,
    /// The scratch HOME of a run that has no server's, removed after the run.
    _home: Option<tempfile::TempDir>,
    /// What [`Run::output`] asserts of the run, in one place.
    expect: Expect,
}

/// What a run is expected to do (as casey/just's `Test`): its exit code (0 unless told) and what
/// its streams hold or must not hold. Checked together by [`Run::output`], which shows both
/// streams when any of them fails.
struct Expect {
    /// `None` only through [`Run::any_status`].
    status: Option<i32>,
    stdout_has: Vec<String>,
    stderr_has: Vec<String>,
    stdout_lacks: Vec<String>,
    stderr_lacks: Vec<String>,
    never: Vec<String>,
}

impl Default for Expect {
    fn default() -> Expect {
        Expect {
            status: Some(0),
            stdout_has: Vec::new(),
            stderr_has: Vec::new(),
            stdout_lacks: Vec::new(),
            stderr_lacks: Vec::new(),
            never: Vec::new(),
        }
    }
}

impl Expect {
    /// Assert every expectation of `out` at once: see [`Run::output`].
    #[track_caller]
    fn check(&self, out: &Out) {
        let (stdout, stderr) = (out.stdout_text(), out.stderr_text());
        let mut unmet = Vec::new();
        if let Some(code) = self.status.filter(|&c| c != out.code()) {
            unmet.push(format!("exit code {}, expected {code}", out.code()));
        }
        for t in self
            .stdout_has
            .iter()
            .filter(|t| !stdout.contains(t.as_str()))
        {
            unmet.push(format!("stdout lacks {t:?}"));
        }
        for t in self
            .stderr_has
            .iter()
            .filter(|t| !stderr.contains(t.as_str()))
        {
            unmet.push(format!("stderr lacks {t:?}"));
        }
        for t in self
            .stdout_lacks
            .iter()
            .filter(|t| stdout.contains(t.as_str()))
        {
            unmet.push(format!("stdout holds {t:?}"));
        }
        for t in self
            .stderr_lacks
            .iter()
            .filter(|t| stderr.contains(t.as_str()))
        {
            unmet.push(format!("stderr holds {t:?}"));
        }
        for t in &self.never {
            if stdout.contains(t.as_str()) || stderr.contains(t.as_str()) {
                unmet.push(format!(
                    "a text of {} bytes that must never show is shown",
                    t.len()
                ));
            }
        }
        assert!(
            unmet.is_empty(),
            "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            unmet.join("\n")
        );
    }
}

impl Run {
    /// `vault-seed` against `bao`: `VAULT_ADDR` and `VAULT_TOKEN` are the server's, HOME is its
    /// scratch directory (no `~/.vault-token` of the machine's reaches the run).
    pub fn new(bao: &OpenBao) -> Run {
        Run::home(bao.home.path())
            .env("VAULT_ADDR", &bao.addr)
            .env("VAULT_TOKEN", &bao.token)
    }

    /// `vault-seed` with no server: no `VAULT_*`, `BAO_*` or `KUBECONFIG`, a scratch HOME.
    pub fn offline() -> Run {
        let home = tempfile::tempdir().expect("scratch HOME");
        let mut run = Run::home(home.path());
        run._home = Some(home);
        run
    }

    /// `vault-seed` with no server and HOME at `home`.
    pub fn home(home: impl AsRef<Path>) -> Run {
        let mut cmd = Command::new(bin());
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.as_ref())
            .env("NO_COLOR", "1");
        Run {
            cmd,
            stdin: None,
            stdout: None,
            _home: None,
            expect: Expect::default(),
        }
    }

    /// `--specs DIR`.
    pub fn specs(self, dir: impl AsRef<OsStr>) -> Run {
        self.arg("--specs").arg(dir)
    }

    /// `--specs` the repository's own spec directory.
    pub fn real_specs(self) -> Run {
        self.specs(super::repo_specs())
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Run {
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Run {
        self.cmd.env(key, value);
        self
    }

    /// Run with `VAULT_TOKEN` set to `token`.
    pub fn token(self, token: &str) -> Run {
        self.env("VAULT_TOKEN", token)
    }

    /// Run with `VAULT_ADDR` set to `addr` (a proxy or stand-in in front of the server).
    pub fn addr(self, addr: &str) -> Run {
        self.env("VAULT_ADDR", addr)
    }

    /// Run in `dir`.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Run {
        self.cmd.current_dir(dir);
        self
    }

    /// Give the run these bytes on stdin (else stdin is empty).
    pub fn stdin(mut self, bytes: impl AsRef<[u8]>) -> Run {
        self.stdin = Some(bytes.as_ref().to_vec());
        self
    }

    /// Send stdout to `sink` (a full device, a closed pipe) instead of capturing it.
    pub fn stdout_to(mut self, sink: impl Into<Stdio>) -> Run {
        self.stdout = Some(sink.into());
        self
    }

    /// Run with stdout closed (`>&-`), through `sh` since `Command` cannot close a descriptor.
    pub fn stdout_closed(self) -> Run {
        self.redirected(">&-")
    }

    /// Run through `sh` with these redirections (`>&-`, `<>/dev/null >&0`): the same program,
    /// arguments, environment and directory.
    pub fn redirected(mut self, redirections: &str) -> Run {
        let mut sh = Command::new("sh");
        sh.env_clear()
            .arg("-c")
            .arg(format!(r#"exec "$0" "$@" {redirections}"#))
            .arg(self.cmd.get_program())
            .args(self.cmd.get_args());
        for (key, value) in self.cmd.get_envs() {
            if let Some(value) = value {
                sh.env(key, value);
            }
        }
        if let Some(dir) = self.cmd.get_current_dir() {
            sh.current_dir(dir);
        }
        self.cmd = sh;
        self
    }

    /// Expect the run to exit with `code` instead of 0.
    pub fn status(mut self, code: i32) -> Run {
        self.expect.status = Some(code);
        self
    }

    /// Accept any exit code: for a test that asserts the code itself from what it computed (a
    /// model, a table of cases), never to get a failing run past.
    pub fn any_status(mut self) -> Run {
        self.expect.status = None;
        self
    }

    /// Expect stdout to hold `text` ([`Run::output`]).
    pub fn stdout_has(mut self, text: impl Into<String>) -> Run {
        self.expect.stdout_has.push(text.into());
        self
    }

    /// Expect stderr to hold `text` ([`Run::output`]).
    pub fn stderr_has(mut self, text: impl Into<String>) -> Run {
        self.expect.stderr_has.push(text.into());
        self
    }

    /// Expect stdout not to hold `text` ([`Run::output`]).
    pub fn stdout_lacks(mut self, text: impl Into<String>) -> Run {
        self.expect.stdout_lacks.push(text.into());
        self
    }

    /// Expect stderr not to hold `text` ([`Run::output`]).
    pub fn stderr_lacks(mut self, text: impl Into<String>) -> Run {
        self.expect.stderr_lacks.push(text.into());
        self
    }

    /// Expect `text` (a secret, a token) nowhere in the run's output ([`Run::output`]).
    pub fn never_shows(mut self, text: impl Into<String>) -> Run {
        self.expect.never.push(text.into());
        self
    }

    /// Run to the end and assert every expectation at once (exit 0 unless told); then what it
    /// printed (stdout empty when sent elsewhere) and its exit status. A failure names each
    /// unmet expectation and shows both streams (a text that must never show is named by its
    /// length only).
    #[track_caller]
    pub fn output(mut self) -> Out {
        let expect = std::mem::take(&mut self.expect);
        let out = self.run_to_end();
        expect.check(&out);
        out
    }

    fn run_to_end(mut self) -> Out {
        let stdin = self.stdin.take();
        let stdout = self.stdout.take().unwrap_or_else(Stdio::piped);
        let mut child = self
            .cmd
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .expect("run vault-seed");
        let writer = stdin.map(|bytes| {
            let mut pipe = child.stdin.take().expect("stdin");
            // A run that exits without reading stdin closes the pipe: not the test's concern.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            })
        });
        let output = child.wait_with_output().expect("wait for vault-seed");
        if let Some(w) = writer {
            let _ = w.join();
        }
        Out(output)
    }

    /// [`Run::output`], then stdout as one JSON document (else fail showing both streams).
    #[track_caller]
    pub fn json(self) -> Value {
        self.output().json()
    }

    /// [`Run::output`] under a small Python parent that waits for vault-seed with `os.wait4`:
    /// what it printed, and its peak resident memory in kB as the kernel counted it (nothing
    /// sampled, so no peak is missed). Not a child of this test process: Linux's `ru_maxrss`
    /// keeps the larger of a process's own peak and the memory of the process it was started
    /// from (up to its `exec`), and this test process holds hundreds of MiB.
    #[track_caller]
    pub fn output_with_peak_rss(self) -> (Out, u64) {
        const WAIT4: &str = r#"
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"#;
        let report = tempfile::NamedTempFile::new().expect("a report file");
        let mut cmd = Command::new("python3");
        cmd.arg("-c")
            .arg(WAIT4)
            .arg(report.path())
            .arg(self.cmd.get_program())
            .args(self.cmd.get_args())
            .env_clear()
            .stdin(Stdio::null());
        // Every variable of the run is explicit (`Run::home` clears the environment).
        for (k, v) in self.cmd.get_envs() {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        if let Some(dir) = self.cmd.get_current_dir() {
            cmd.current_dir(dir);
        }
        let out = Out::from(cmd.output().expect("run python3"));
        let kb = std::fs::read_to_string(report.path())
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or_else(|| panic!("no ru_maxrss reported: {}", out.stderr_text()));
        self.expect.check(&out);
        (out, kb)
    }

    /// Start the run and return at once, stdin, stdout and stderr piped: to run several at
    /// once, to talk to it while it runs, or to signal it. Nothing is checked: the test waits.
    pub fn spawn(mut self) -> Child {
        self.cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn vault-seed")
    }
}

/// What a run printed, and how it ended (derefs to [`Output`]).
#[derive(Clone)]
pub struct Out(pub Output);

impl From<Output> for Out {
    fn from(output: Output) -> Out {
        Out(output)
    }
}

impl Deref for Out {
    type Target = Output;
    fn deref(&self) -> &Output {
        &self.0
    }
}

impl Out {
    /// The exit code; -1 when a signal ended the run.
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }

    pub fn stdout_text(&self) -> String {
        text(&self.stdout)
    }

    pub fn stderr_text(&self) -> String {
        text(&self.stderr)
    }

    /// stdout, then stderr: everything a person would see.
    pub fn all_text(&self) -> String {
        self.stdout_text() + &self.stderr_text()
    }

    /// stdout as one JSON document; else fail showing both streams.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
                self.stdout_text(),
                self.stderr_text()
            )
        })
    }

    /// Fail, showing both streams, unless the run exited with `code`; then the run. For what a
    /// [`Run::spawn`]ed child or another program printed: [`Run::output`] checks its own.
    #[track_caller]
    pub fn expect_code(self, code: i32) -> Out {
        assert_eq!(
            self.code(),
            code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout_text(),
            self.stderr_text()
        );
        self
    }

    /// The request count that `vault-seed -v` logs at the end of a run (`requests=N`).
    pub fn requests_sent(&self) -> u64 {
        let err = self.stderr_text();
        err.split("requests=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no request count in -v output: {err}"))
    }
}

/// Bytes as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
