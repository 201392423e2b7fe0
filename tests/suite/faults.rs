//! Faults: OpenBao killed mid-run and restarted, sealed, slow; transient network faults injected
//! by a TCP proxy; Ctrl-C. Nothing lost, nothing overwritten, every outcome clear. The faults
//! are placed by counts and events (the n-th request, the run's progress), never by a window of
//! time that a loaded machine could stretch.

use crate::common;

use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::proxy::{request_line, Fault, FaultProxy, Flaky, Hook, Verdict};
use common::{OpenBao, Out, Run, Silent};
use serde_json::Value;

fn spec_with(n: usize, addr: &str) -> tempfile::TempDir {
    let mut s = format!("[vault]\nmount = \"secret\"\npath = \"faults/{{env}}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n");
    for i in 0..n {
        let g = ["hex32", "fernet", "uuid"][i % 3];
        s.push_str(&format!(
            "[secrets.K{i:05}]\ndescription = \"k\"\nfields.password = {{ generator = \"{g}\" }}\n"
        ));
    }
    common::spec_dir(&s)
}

/// Whether every request in `sent` is one of those sent before the token check is answered
/// (docs/apply.md): none that depends on its answer (a LIST, a read, a write).
fn only_start_up(sent: &[String]) -> bool {
    sent.iter().all(|l| common::proxy::start_up(l))
}

/// `apply dev -o json` on `specs`, against `bao` reached at `addr` (the server or a proxy).
fn apply(bao: &OpenBao, addr: &str, specs: &std::path::Path) -> Run {
    Run::new(bao)
        .specs(specs)
        .addr(addr)
        .args(["apply", "dev", "-o", "json"])
}

fn listed(bao: &OpenBao) -> usize {
    let (s, body) = bao.api("LIST", "secret/metadata/faults/dev", None);
    if s != 200 {
        return 0;
    }
    body["data"]["keys"].as_array().map_or(0, |k| k.len())
}

fn assert_all_version_one(bao: &OpenBao, n: usize) {
    for i in 0..n {
        assert_eq!(
            bao.kv_version("secret", &format!("faults/dev/K{i:05}")),
            Some(1),
            "K{i:05}"
        );
    }
}

#[test]
fn killed_mid_apply_then_restarted_rerun_completes_and_nothing_passes_version_one() {
    const N: usize = 1000;
    let mut bao = OpenBao::persistent(None);
    let dir = spec_with(N, &bao.addr);
    let mut child = apply(&bao, &bao.addr.clone(), dir.path())
        .env("VAULT_CLIENT_TIMEOUT", "2s")
        .spawn();
    // The report is written while the run goes: a pipe nobody reads would fill and pause it.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut bytes).map(|_| bytes)
    });
    let start = Instant::now();
    while listed(&bao) < 200 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "apply made no progress"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    bao.kill();
    let mut output = child.wait_with_output().unwrap();
    output.stdout = reader.join().unwrap().unwrap();
    let out = Out::from(output).expect_code(1);
    // A JSON report even when the server died.
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    // Each path says whether it was written; the failed ones say nothing was written.
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), N);
    let failed: Vec<&Value> = results.iter().filter(|r| r["outcome"] == "error").collect();
    assert!(!failed.is_empty(), "the kill should have failed some paths");
    for r in &failed {
        assert_eq!(r["written"], false);
        assert!(
            r["detail"].as_str().unwrap().contains("cannot reach Vault"),
            "{r}"
        );
    }
    // vault-seed stopped starting work once Vault was gone, rather than retrying every path.
    let skipped = results.iter().filter(|r| r["outcome"] == "skipped").count();
    assert!(skipped > 0, "{doc}");
    assert!(results
        .iter()
        .filter(|r| r["outcome"] == "skipped")
        .all(|r| r["detail"] == "not attempted: Vault stopped answering"));
    assert!(
        out.stderr_text()
            .contains("Vault stopped answering part way"),
        "{}",
        out.stderr_text()
    );

    bao.start_again();
    bao.unseal();
    apply(&bao, &bao.addr.clone(), dir.path()).output();
    assert_all_version_one(&bao, N);
}

#[test]
fn a_sealed_server_is_named_and_nothing_is_written() {
    let mut bao = OpenBao::persistent(None);
    let dir = spec_with(3, &bao.addr);
    bao.seal();
    // Every request vault-seed sends, as the proxy in front of the server sees it.
    let sent = Arc::new(Mutex::new(Vec::new()));
    let proxy = FaultProxy::with_hook(&bao.addr, {
        let sent = sent.clone();
        Arc::new(move |chunk: &[u8]| {
            sent.lock().unwrap().extend(request_line(chunk));
            Verdict::Forward
        })
    });
    let out = apply(&bao, &proxy.addr, dir.path()).status(1).output();
    let err = out.stderr_text();
    assert!(
        err.contains(&format!("Vault at `{}` is sealed", proxy.addr)),
        "{err}"
    );
    assert!(err.contains("unseal it"), "{err}");
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    // It stopped at the token check, before any LIST, read or write: the mount detection
    // (sent with it) and the warm-ups went before its answer, nothing after.
    let sent = sent.lock().unwrap().clone();
    assert!(
        sent.contains(&"GET /v1/auth/token/lookup-self".to_string()),
        "{sent:?}"
    );
    assert!(only_start_up(&sent), "{sent:?}\n{err}");
    // Nothing was written: unsealed again, the folder does not exist.
    bao.unseal();
    let (s, body) = bao.api("LIST", "secret/metadata/faults/dev", None);
    assert_eq!(s, 404, "something was written under faults/dev: {body}");
    for i in 0..3 {
        assert_eq!(
            bao.kv_version("secret", &format!("faults/dev/K{i:05}")),
            None
        );
    }
}

/// Sealed part way through: each path's report says whether it was written, and says it truly.
/// Unsealed again, every path reported written is there at version 1 and every other is absent.
#[test]
fn sealed_mid_apply_each_path_says_truly_whether_it_was_written() {
    const N: usize = 400;
    let mut bao = OpenBao::persistent(None);
    let dir = spec_with(N, &bao.addr);
    // Sealed on cue: once 100 secrets were written, the proxy holds the next writes until the
    // server is sealed; they and everything after meet a sealed server.
    let gate = Gate::new("POST /v1/secret/data/faults/dev/", 100);
    let proxy = FaultProxy::with_hook(&bao.addr, gate.hook());
    let child = apply(&bao, &proxy.addr, dir.path()).spawn();
    gate.wait_until_holding();
    bao.seal();
    gate.open();
    let out = Out::from(child.wait_with_output().unwrap()).expect_code(1);
    let doc = out.json();
    assert_eq!(doc["ok"], false);
    let err = out.stderr_text();
    assert!(err.contains("is sealed"), "{err}");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), N);
    bao.unseal();
    let mut written = 0;
    for r in results {
        let path = r["path"].as_str().unwrap();
        let rel = path.strip_prefix("secret/").unwrap();
        let version = bao.kv_version("secret", rel);
        if r["written"] == true {
            written += 1;
            assert_eq!(version, Some(1), "reported written: {r}");
        } else {
            assert_eq!(r["written"], false, "{r}");
            assert_eq!(version, None, "reported not written, but it is there: {r}");
        }
    }
    // Of the first 100 writes, at most --concurrency (16) were still in flight when the seal
    // landed; nothing after them was written.
    assert!((100 - 16..N).contains(&written), "{written} written");
    // A re-run completes, writing exactly the rest.
    let doc = apply(&bao, &bao.addr, dir.path()).output().json();
    assert_eq!(doc["summary"]["created"], (N - written) as u64, "{doc}");
    assert_all_version_one(&bao, N);
}

#[test]
fn a_slow_server_past_the_client_timeout_is_a_clear_error() {
    let bao = OpenBao::dev();
    // The proxy holds every request unanswered until vault-seed gives up on it.
    let proxy = FaultProxy::start(&bao.addr, |_| Fault::Stall);
    let dir = spec_with(2, &proxy.addr);
    let out = apply(&bao, &proxy.addr, dir.path())
        .env("VAULT_CLIENT_TIMEOUT", "1s")
        .status(1)
        .output();
    let err = out.stderr_text();
    assert!(
        err.contains("did not answer GET `auth/token/lookup-self` within the client timeout (1s)"),
        "{err}"
    );
    assert!(err.contains("VAULT_CLIENT_TIMEOUT"), "{err}");
}

#[test]
fn transient_faults_are_retried_and_every_path_ends_at_version_one() {
    const N: usize = 400;
    let bao = OpenBao::dev();
    // Every fifth request fails, in turn lost before the server, answered 502, answered 429,
    // or written by the server with its answer lost; no request fails more than twice, well
    // within vault-seed's five retries, so the run must complete however slow the machine.
    let flaky = Flaky::new(5, 2);
    let proxy = FaultProxy::with_hook(&bao.addr, flaky.hook());
    let dir = spec_with(N, &proxy.addr);
    let out = apply(&bao, &proxy.addr, dir.path()).arg("-v").output();
    let doc = out.json();
    assert_eq!(doc["summary"]["created"], N as u64);
    // Faults were hit, a fixed share whatever the machine's speed, so vault-seed retried and
    // sent more than a clean run's token check + mount detection + one LIST + a write and a
    // metadata write per path.
    let injected = flaky.injected();
    println!(
        "transient faults: {injected} injected, {} requests sent",
        out.requests_sent()
    );
    assert!(
        injected >= (2 * N as u64) / 5 / 2,
        "{injected} faults injected"
    );
    let clean_run = 3 + 2 * N as u64;
    let sent = out.requests_sent();
    assert!(
        sent >= clean_run + injected,
        "{sent} requests for {injected} faults"
    );
    assert!(proxy.connections.load(Ordering::SeqCst) > 5);
    assert_all_version_one(&bao, N);
}

#[test]
fn when_faults_outlast_the_retry_cap_the_run_stops_with_a_clear_error() {
    let bao = OpenBao::dev();
    // Every request answered 502 (and its connection closed), as Fault::Status(502) does.
    let sent = Arc::new(Mutex::new(Vec::new()));
    let proxy = FaultProxy::with_hook(&bao.addr, {
        let sent = sent.clone();
        Arc::new(move |chunk: &[u8]| {
            sent.lock().unwrap().extend(request_line(chunk));
            Verdict::Answer(502)
        })
    });
    let dir = spec_with(2, &proxy.addr);
    let out = apply(&bao, &proxy.addr, dir.path()).status(1).output();
    let err = out.stderr_text();
    assert!(err.contains("answered HTTP 502"), "{err}");
    // The token check: 1 attempt + 5 retries. The mount detection went with it (retried in
    // the same way until the token check gave up); nothing else.
    let sent = sent.lock().unwrap().clone();
    let checks = sent
        .iter()
        .filter(|l| *l == "GET /v1/auth/token/lookup-self")
        .count();
    assert_eq!(checks, 6, "{sent:?}");
    assert!(only_start_up(&sent), "{sent:?}");
}

#[test]
fn ctrl_c_stops_new_work_reports_and_a_rerun_completes() {
    stop_signal_stops_new_work_reports_and_a_rerun_completes("INT", "interrupted");
}

#[test]
fn sigterm_is_handled_as_ctrl_c_and_every_created_path_carries_its_marker() {
    stop_signal_stops_new_work_reports_and_a_rerun_completes("TERM", "terminated (SIGTERM)");
}

#[test]
fn sighup_is_handled_as_ctrl_c_and_every_created_path_carries_its_marker() {
    stop_signal_stops_new_work_reports_and_a_rerun_completes("HUP", "hung up (SIGHUP)");
}

/// Send `signal` mid-apply: no new work starts, the requests in flight finish (each created
/// path's custom_metadata write included), the report says what was skipped, exit 1; a re-run
/// completes and writes nothing twice.
fn stop_signal_stops_new_work_reports_and_a_rerun_completes(signal: &str, said: &str) {
    const N: usize = 300;
    let bao = OpenBao::dev();
    // Every connection lives 60 ms, after a 60 ms delay: slow enough to interrupt.
    // The signal arrives mid-run on cue: after ten secrets were written, the proxy holds the
    // next writes; the signal is sent while one is held, then they go on.
    let gate = Gate::new("POST /v1/secret/data/faults/dev/", 10);
    let proxy = FaultProxy::with_hook(&bao.addr, gate.hook());
    let dir = spec_with(N, &proxy.addr);
    let child = apply(&bao, &proxy.addr, dir.path())
        .args(["--concurrency", "2"])
        .spawn();
    gate.wait_until_holding();
    let pid = child.id().to_string();
    // The shell's builtin `kill`: no procps needed on a fresh machine.
    assert!(Command::new("sh")
        .args(["-c", &format!("kill -{signal} {pid}")])
        .status()
        .unwrap()
        .success());
    gate.open();
    let out = Out::from(child.wait_with_output().unwrap()).expect_code(1);
    let err = out.stderr_text();
    let doc = out.json();
    assert_eq!(doc["interrupted"], true);
    let skipped = doc["summary"]["skipped"].as_u64().unwrap();
    assert!(skipped > 0 && skipped < N as u64, "skipped {skipped}");
    assert!(err.contains(said), "{err}");
    assert!(
        err.contains("interrupted: some paths were not attempted"),
        "{err}"
    );
    // Every path this run created carries vault-seed's marker: its metadata write finished.
    let created: Vec<String> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "created")
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    assert!(!created.is_empty());
    for path in &created {
        let rel = path.strip_prefix("secret/").unwrap();
        let (s, body) = bao.api("GET", &format!("secret/metadata/{rel}"), None);
        assert_eq!(s, 200, "{path}");
        assert_eq!(
            body["data"]["custom_metadata"]["managed-by"], "vault-seed",
            "{path} was created without its marker"
        );
    }
    // A re-run, straight to the server, finishes the job; nothing is written twice.
    let out = apply(&bao, &bao.addr, dir.path()).output();
    let doc = out.json();
    assert_eq!(
        doc["summary"]["created"].as_u64().unwrap(),
        skipped,
        "exactly the skipped ones are created now"
    );
    assert_all_version_one(&bao, N);
}

/// Lets the first `pass` requests that start with `prefix` through, then holds every further
/// one until [`Gate::open`].
struct Gate {
    prefix: &'static str,
    pass: u64,
    /// (requests seen, requests held now, open)
    state: Mutex<(u64, u64, bool)>,
    changed: Condvar,
}

impl Gate {
    fn new(prefix: &'static str, pass: u64) -> Arc<Gate> {
        Arc::new(Gate {
            prefix,
            pass,
            state: Mutex::new((0, 0, false)),
            changed: Condvar::new(),
        })
    }

    fn hook(self: &Arc<Self>) -> Hook {
        let gate = self.clone();
        Arc::new(move |chunk: &[u8]| {
            if chunk.starts_with(gate.prefix.as_bytes()) {
                let mut st = gate.state.lock().unwrap();
                st.0 += 1;
                if st.0 > gate.pass && !st.2 {
                    st.1 += 1;
                    gate.changed.notify_all();
                    st = gate.changed.wait_while(st, |st| !st.2).unwrap();
                    st.1 -= 1;
                }
            }
            Verdict::Forward
        })
    }

    /// Wait until a request is held (the run is mid-way, stopped on cue).
    fn wait_until_holding(&self) {
        let st = self.state.lock().unwrap();
        let (st, timeout) = self
            .changed
            .wait_timeout_while(st, Duration::from_secs(120), |st| st.1 == 0)
            .unwrap();
        assert!(!timeout.timed_out(), "no request reached the gate: {st:?}");
    }

    fn open(&self) {
        self.state.lock().unwrap().2 = true;
        self.changed.notify_all();
    }
}

#[test]
fn a_server_that_never_answers_is_retried_visibly_and_given_up_on_in_bounded_time() {
    let silent = Silent::start();
    // What is sent to it, as a proxy in front of it sees it.
    let sent = Arc::new(Mutex::new(Vec::new()));
    let proxy = FaultProxy::with_hook(&silent.addr, {
        let sent = sent.clone();
        Arc::new(move |chunk: &[u8]| {
            sent.lock().unwrap().extend(request_line(chunk));
            Verdict::Forward
        })
    });
    let dir = spec_with(2, &proxy.addr);
    let out = Run::offline()
        .addr(&proxy.addr)
        .token("t")
        .env("VAULT_SEED_GIVE_UP_AFTER", "5s")
        .specs(dir.path())
        .args(["plan", "dev", "--answer-timeout", "1s"])
        .status(1)
        .output();
    let err = out.stderr_text();
    // Each retry shows at default verbosity, numbered in order; how many fit in the 5 s
    // depends on the machine, so the count is read, not assumed.
    let retries: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("warning: Vault did not answer in 1s; retrying "))
        .collect();
    assert!(!retries.is_empty(), "no retry shown: {err}");
    let numbered: Vec<String> = (1..=retries.len()).map(|n| format!("{n}/5")).collect();
    assert_eq!(retries, numbered, "{err}");
    // The final error, after the last retry, says what happened, how many attempts were made
    // and what bounded the wait.
    let last_retry = err.rfind("; retrying ").unwrap();
    let head = format!(
        "error: Vault at `{}` did not answer GET `auth/token/lookup-self` in 1s; gave up after ",
        proxy.addr
    );
    let error = err
        .find(&head)
        .unwrap_or_else(|| panic!("no final error: {err}"));
    let attempts: usize = err[error + head.len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no attempt count: {err}"));
    // The mount detection beside the token check retries on its own count, with its own jitter,
    // and the warning is said at most once a second for both: the last one shown may be its
    // retry the token check did not get to.
    assert!(
        attempts == retries.len() + 1 || attempts == retries.len(),
        "{attempts} attempts, {} retries shown: {err}",
        retries.len()
    );
    assert!(error > last_retry, "{err}");
    assert!(err.contains("(limit: --give-up-after 5s)"), "{err}");
    assert!(
        err.contains("help: Vault accepted the connection but did not answer"),
        "{err}"
    );
    // Every attempt shown was sent: the token check's first request and its retries, the
    // mount detection beside them, and nothing else.
    let sent = sent.lock().unwrap().clone();
    let sent_attempts = sent
        .iter()
        .filter(|l| *l == "GET /v1/auth/token/lookup-self")
        .count();
    assert_eq!(sent_attempts, attempts, "{sent:?}\n{err}");
    assert!(only_start_up(&sent), "{sent:?}");
    assert!(silent.connections.load(Ordering::SeqCst) >= 2);
}
