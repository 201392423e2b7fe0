//! Faults: OpenBao killed mid-run and restarted, sealed, slow; transient network faults injected
//! by a TCP proxy; Ctrl-C. Nothing lost, nothing overwritten, every outcome clear.

use crate::common;

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::proxy::{Fault, FaultProxy};
use common::{OpenBao, Run};
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
    let child = apply(&bao, &bao.addr.clone(), dir.path())
        .env("VAULT_CLIENT_TIMEOUT", "2s")
        .spawn();
    let start = Instant::now();
    while listed(&bao) < 200 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "apply made no progress"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    bao.kill();
    let out = common::Out::from(child.wait_with_output().unwrap());
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr_text());
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
    apply(&bao, &bao.addr.clone(), dir.path())
        .output()
        .expect_code(0);
    assert_all_version_one(&bao, N);
}

#[test]
fn a_sealed_server_is_named_and_nothing_is_written() {
    let bao = OpenBao::persistent(None);
    let dir = spec_with(3, &bao.addr);
    bao.seal();
    let out = apply(&bao, &bao.addr, dir.path()).output();
    assert_eq!(out.status.code(), Some(1));
    let err = out.stderr_text();
    assert!(
        err.contains(&format!("Vault at `{}` is sealed", bao.addr)),
        "{err}"
    );
    assert!(err.contains("unseal it"), "{err}");
    let doc = out.json();
    assert_eq!(doc["ok"], false);
}

#[test]
fn a_slow_server_past_the_client_timeout_is_a_clear_error() {
    let bao = OpenBao::dev();
    let proxy = FaultProxy::start(&bao.addr, |_| Fault::Delay(Duration::from_secs(4)));
    let dir = spec_with(2, &proxy.addr);
    let out = apply(&bao, &proxy.addr, dir.path())
        .env("VAULT_CLIENT_TIMEOUT", "1s")
        .output();
    assert_eq!(out.status.code(), Some(1));
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
    // Per connection: about a quarter fail at once in one of four ways; the rest are cut after
    // a short life, so requests in flight (writes included) are lost now and then.
    let proxy = FaultProxy::start(&bao.addr, |n| match n % 16 {
        1 => Fault::Drop,
        5 => Fault::Status(502),
        9 => Fault::CloseAfterRequest,
        13 => Fault::Status(429),
        _ => Fault::CutAfter(Duration::from_millis(40 + (n * 37 % 200))),
    });
    let dir = spec_with(N, &proxy.addr);
    let out = apply(&bao, &proxy.addr, dir.path()).arg("-v").output();
    let err = out.stderr_text();
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc = out.json();
    assert_eq!(doc["summary"]["created"], N as u64);
    // Faults were hit, whatever the machine's speed: connection 5 always answers 502 (16 are
    // opened at concurrency 16), so vault-seed retried and sent more than a clean run's
    // token check + mount detection + one LIST + a write and a metadata write per path.
    let clean_run = 3 + 2 * N as u64;
    let sent = out.requests_sent();
    assert!(sent > clean_run, "no retry happened: {sent} requests");
    assert!(proxy.connections.load(Ordering::SeqCst) > 5);
    assert_all_version_one(&bao, N);
}

#[test]
fn when_faults_outlast_the_retry_cap_the_run_stops_with_a_clear_error() {
    let bao = OpenBao::dev();
    let proxy = FaultProxy::start(&bao.addr, |_| Fault::Status(502));
    let dir = spec_with(2, &proxy.addr);
    let out = apply(&bao, &proxy.addr, dir.path()).output();
    assert_eq!(out.status.code(), Some(1));
    let err = out.stderr_text();
    assert!(err.contains("answered HTTP 502"), "{err}");
    // 1 attempt + 5 retries.
    assert_eq!(proxy.connections.load(Ordering::SeqCst), 6);
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
    let proxy = FaultProxy::start(&bao.addr, |_| Fault::CutAfter(Duration::from_millis(60)));
    let slow = FaultProxy::start(&proxy.addr, |_| Fault::Delay(Duration::from_millis(60)));
    let dir = spec_with(N, &slow.addr);
    let child = apply(&bao, &slow.addr, dir.path())
        .args(["--concurrency", "2"])
        .spawn();
    let start = Instant::now();
    while listed(&bao) < 5 {
        assert!(start.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = child.id().to_string();
    // The shell's builtin `kill`: no procps needed on a fresh machine.
    assert!(Command::new("sh")
        .args(["-c", &format!("kill -{signal} {pid}")])
        .status()
        .unwrap()
        .success());
    let out = common::Out::from(child.wait_with_output().unwrap());
    let err = out.stderr_text();
    assert_eq!(out.status.code(), Some(1), "{err}");
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
    let out = apply(&bao, &bao.addr, dir.path()).output().expect_code(0);
    let doc = out.json();
    assert_eq!(
        doc["summary"]["created"].as_u64().unwrap(),
        skipped,
        "exactly the skipped ones are created now"
    );
    assert_all_version_one(&bao, N);
}

/// A server that accepts connections, reads what comes, and never answers.
struct Silent {
    addr: String,
    connections: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Silent {
    fn start() -> Silent {
        use std::io::Read;
        use std::sync::atomic::{AtomicBool, AtomicU64};
        use std::sync::Arc;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (connections.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        c.fetch_add(1, Ordering::SeqCst);
                        let _ = conn.set_nonblocking(true);
                        let _ = conn.read(&mut [0u8; 4096]);
                        held.push(conn);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Silent {
            addr,
            connections,
            stop,
        }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_server_that_never_answers_is_retried_visibly_and_given_up_on_in_bounded_time() {
    let silent = Silent::start();
    let dir = spec_with(2, &silent.addr);
    let start = Instant::now();
    let out = Run::offline()
        .addr(&silent.addr)
        .token("t")
        .env("VAULT_SEED_GIVE_UP_AFTER", "5s")
        .specs(dir.path())
        .args(["plan", "dev", "--answer-timeout", "1s"])
        .output();
    let elapsed = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr_text());
    let err = out.stderr_text();
    // Each retry shows at default verbosity.
    assert!(
        err.contains("warning: Vault did not answer in 1s; retrying 1/5"),
        "{err}"
    );
    assert!(err.contains("retrying 2/5"), "{err}");
    // The final error says what happened and what bounded the wait.
    assert!(
        err.contains(&format!(
            "error: Vault at `{}` did not answer GET `auth/token/lookup-self` in 1s; gave up after",
            silent.addr
        )),
        "{err}"
    );
    assert!(err.contains("(limit: --give-up-after 5s)"), "{err}");
    assert!(
        err.contains("help: Vault accepted the connection but did not answer"),
        "{err}"
    );
    let attempts = silent.connections.load(Ordering::SeqCst);
    assert!((3..=6).contains(&attempts), "{attempts} attempts");
    // Bounded: the 5s limit and the last attempt's 1s, with room for a slow machine.
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
}
