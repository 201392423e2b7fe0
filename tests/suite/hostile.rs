//! Hostile addresses and hostile servers: what reaches a host off loopback, redirects, server
//! text that echoes secrets, answers too large to hold. The servers here are small stand-ins on
//! loopback (OpenBao would not misbehave this way); what is measured is what vault-seed sends to
//! them and what it shows.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{Out, Run};
use serde_json::{json, Value};

/// One request as a stand-in received it.
#[derive(Debug, Clone)]
struct Req {
    method: String,
    path: String,
    token: Option<String>,
    body: String,
}

/// How a stand-in answers.
enum Answer {
    /// A JSON body with this status.
    Json(u16, Value),
    /// A status and headers, no body (a redirect).
    Head(u16, Vec<(String, String)>),
    /// 200 with a body of about this many bytes, streamed without holding it: chunked, or with
    /// `Content-Length` given up front.
    Huge { bytes: u64, chunked: bool },
}

/// A loopback (or any address) HTTP/1.1 stand-in: one request per connection.
struct Stub {
    addr: String,
    connections: Arc<AtomicU64>,
    requests: Arc<Mutex<Vec<Req>>>,
    /// Bytes of `Huge` bodies written so far.
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Stub {
    fn start(bind: &str, answer: impl Fn(&Req) -> Answer + Send + Sync + 'static) -> Stub {
        let listener = TcpListener::bind(bind).unwrap_or_else(|e| panic!("bind {bind}: {e}"));
        listener.set_nonblocking(true).unwrap();
        let local = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let answer = Arc::new(answer);
        let thread = {
            let (connections, requests, sent, stop) = (
                connections.clone(),
                requests.clone(),
                sent.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            connections.fetch_add(1, Ordering::SeqCst);
                            let (requests, sent, answer) =
                                (requests.clone(), sent.clone(), answer.clone());
                            std::thread::spawn(move || {
                                serve(conn, &requests, &sent, &*answer);
                            });
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            })
        };
        Stub {
            addr: format!("http://{local}"),
            connections,
            requests,
            sent,
            stop,
            thread: Some(thread),
        }
    }

    fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }

    /// The connections once every one a finished run opened is accepted: the kernel completes
    /// a handshake before the stub's thread takes it, so a count read at once can be short.
    fn settled_connections(&self) -> u64 {
        let mut seen = self.connections();
        loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let now = self.connections();
            if now == seen {
                return now;
            }
            seen = now;
        }
    }

    fn requests(&self) -> Vec<Req> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_req(conn: &TcpStream) -> Option<Req> {
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut r = BufReader::new(conn);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let (mut len, mut token) = (0usize, None);
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        match k.trim().to_ascii_lowercase().as_str() {
            "content-length" => len = v.trim().parse().ok()?,
            "x-vault-token" => token = Some(v.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Req {
        method,
        path,
        token,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn serve(
    mut conn: TcpStream,
    requests: &Mutex<Vec<Req>>,
    sent: &AtomicU64,
    answer: &dyn Fn(&Req) -> Answer,
) {
    let Some(req) = read_req(&conn) else {
        return;
    };
    requests.lock().unwrap().push(req.clone());
    match answer(&req) {
        Answer::Json(status, body) => {
            let body = body.to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
        Answer::Head(status, headers) => {
            let mut head =
                format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n");
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = conn.write_all(head.as_bytes());
        }
        Answer::Huge { bytes, chunked } => {
            let head = if chunked {
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_string()
            } else {
                format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {bytes}\r\n\r\n")
            };
            if conn.write_all(head.as_bytes()).is_err() {
                return;
            }
            // A valid token lookup once complete (an object, then whitespace, then its closing
            // brace), so only its size can stop a reader.
            let (open, close) = (&br#"{"data":{"ttl":0}"#[..], &b"}"[..]);
            let block = vec![b' '; 64 * 1024];
            let mut left = bytes - (open.len() + close.len()) as u64;
            let mut pieces = vec![open];
            loop {
                for piece in pieces.drain(..) {
                    let n = piece.len();
                    let ok = if chunked {
                        write!(conn, "{n:x}\r\n").is_ok()
                            && conn.write_all(piece).is_ok()
                            && conn.write_all(b"\r\n").is_ok()
                    } else {
                        conn.write_all(piece).is_ok()
                    };
                    if !ok {
                        return;
                    }
                    sent.fetch_add(n as u64, Ordering::SeqCst);
                }
                if left == 0 {
                    break;
                }
                let n = left.min(block.len() as u64) as usize;
                left -= n as u64;
                pieces.push(&block[..n]);
                if left == 0 {
                    pieces.push(close);
                }
            }
            if chunked {
                let _ = conn.write_all(b"0\r\n\r\n");
            }
        }
    }
    let _ = conn.flush();
    let _ = conn.shutdown(Shutdown::Write);
}

/// A spec directory with one environment `dev` whose `vault_addr` is `addr` (a TOML literal
/// string: backslashes stay), and `n` secrets under `hostile/dev`.
fn spec_dir(addr: &str, n: usize) -> tempfile::TempDir {
    let mut s = format!(
        "[vault]\nmount = \"secret\"\npath = \"hostile/{{env}}\"\nkv_version = 2\n[environments.dev]\nvault_addr = '{addr}'\n"
    );
    for i in 0..n {
        s.push_str(&format!(
            "[secrets.K{i}]\ndescription = \"k\"\nfields.password = {{ generator = \"hex32\" }}\n"
        ));
    }
    common::spec_dir(&s)
}

/// `vault-seed --specs DIR ARGS` with a clean environment and this token.
fn vault_seed(home: &Path, specs: &Path, token: &str) -> Run {
    Run::home(home).token(token).specs(specs)
}

/// What a KV v2 server answers to the set-up requests every run makes.
fn setup_answer(req: &Req) -> Option<Answer> {
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/v1/auth/token/lookup-self") => Some(Answer::Json(
            200,
            json!({"data": {"display_name": "root", "policies": ["root"], "ttl": 0}}),
        )),
        ("GET", p) if p.starts_with("/v1/sys/internal/ui/mounts/") => Some(Answer::Json(
            200,
            json!({"data": {"type": "kv", "options": {"version": "2"}, "path": "secret/"}}),
        )),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// 1. The plain-http guard, inside a private network namespace.

/// Set in the copy of this test binary that runs inside the namespace.
const IN_NETNS: &str = "VAULT_SEED_TEST_IN_NETNS";
const OFF_LOOPBACK: &str = "192.0.2.1";
const TOKEN: &str = "hvs.guard-token-must-stay-home";

/// Every spelling that once passed, or might pass, a loopback check while pointing at
/// 192.0.2.1 (TEST-NET-1). `{p}` is the port.
const BYPASSES: &[&str] = &[
    "http://192.0.2.1:{p}\\@127.0.0.1:{p}",
    "http://192.0.2.1:{p}?@127.0.0.1:{p}",
    "http://192.0.2.1:{p}#@127.0.0.1:{p}",
    "http://127.0.0.1:{p}@192.0.2.1:{p}",
    "http://192.0.2.1:{p}/@127.0.0.1:{p}",
    "http://3221225985:{p}/",
    "http://0300.0.2.1:{p}/",
    "http://0xc0.0.2.1:{p}/",
    "http://192.0.2.1.:{p}/",
    "HTTP://192.0.2.1:{p}/",
    "http://[::ffff:192.0.2.1]:{p}/",
    "http://192.0.2.1:{p}",
];

#[test]
fn plain_http_guard_sends_nothing_off_loopback_whatever_the_spelling() {
    if std::env::var_os(IN_NETNS).is_some() {
        return guard_inside_netns();
    }
    // A private network namespace: 192.0.2.1 is a local address there, nothing leaves the
    // machine, and a listener on it counts what vault-seed would have sent.
    let exe = common::this_binary();
    let out = Command::new("unshare")
        .args([
            "-n",
            "sh",
            "-c",
            "ip link set lo up && ip addr add 192.0.2.1/32 dev lo && exec \"$@\"",
            "sh",
        ])
        .arg(&exe)
        .args(common::rerun(
            module_path!(),
            "plain_http_guard_sends_nothing_off_loopback_whatever_the_spelling",
        ))
        .env(IN_NETNS, "1")
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `unshare` (util-linux) to make a private network namespace: {e}")
        });
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    assert!(
        out.status.success(),
        "inside the private network namespace (`unshare -n`, needs root or CAP_SYS_ADMIN and `ip`):\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed") && stdout.contains("guard: checked"),
        "the check did not run inside the namespace:\n{stdout}\n{stderr}"
    );
}

fn guard_inside_netns() {
    let home = tempfile::tempdir().unwrap();
    // The same port on both addresses, so a spelling that mixes them is unambiguous.
    let loopback = Stub::start("127.0.0.1:0", |_| {
        Answer::Json(403, json!({"errors": ["permission denied"]}))
    });
    let port = loopback.addr.rsplit(':').next().unwrap().to_string();
    let off = Stub::start(&format!("{OFF_LOOPBACK}:{port}"), |_| {
        Answer::Json(403, json!({"errors": ["permission denied"]}))
    });

    // The listener works: with --insecure-http, vault-seed does reach it (with the token).
    let specs = spec_dir("https://unused.example", 1);
    let out = vault_seed(home.path(), specs.path(), TOKEN)
        .env("VAULT_ADDR", format!("http://{OFF_LOOPBACK}:{port}"))
        .args(["plan", "dev", "--insecure-http"])
        .status(1)
        .stderr_has("error: Vault rejected the token")
        .output();
    assert!(off.connections() > 0, "control: {}", out.all_text());
    assert_eq!(off.requests()[0].token.as_deref(), Some(TOKEN));
    let control = off.settled_connections();

    let mut checked = 0;
    for spelling in BYPASSES {
        let addr = spelling.replace("{p}", &port);
        // Through VAULT_ADDR; then through the spec's vault_addr with VAULT_ADDR unset (refused
        // by the spec check or by the address check: nothing is sent either way).
        for (route, env_addr, spec_addr) in [
            ("VAULT_ADDR", Some(addr.as_str()), "https://unused.example"),
            ("vault_addr", None, addr.as_str()),
        ] {
            let specs = spec_dir(spec_addr, 1);
            let mut run = vault_seed(home.path(), specs.path(), TOKEN);
            if let Some(a) = env_addr {
                run = run.addr(a);
            }
            let out = run.args(["apply", "dev"]).status(2).output();
            assert_eq!(
                off.connections(),
                control,
                "{route} {addr} reached {OFF_LOOPBACK}: {}",
                out.all_text()
            );
            assert!(!out.all_text().contains(TOKEN));
        }
        checked += 1;
    }

    // A proxy from the environment never sees plain http to loopback (the token would cross
    // the network in clear).
    let vault = Stub::start("127.0.0.1:0", |req| {
        setup_answer(req).unwrap_or(Answer::Json(404, json!({"errors": []})))
    });
    let proxy = format!("http://{OFF_LOOPBACK}:{port}");
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY"] {
        let out = vault_seed(home.path(), specs.path(), TOKEN)
            .env("VAULT_ADDR", &vault.addr)
            .env(var, &proxy)
            .args(["plan", "dev"])
            .output();
        assert_eq!(off.connections(), control, "{var}: {}", out.all_text());
    }
    assert!(vault.connections() > 0);
    drop(loopback);
    println!("guard: checked {checked} spellings twice, and 3 proxy variables");
}

/// `lint` refuses the spellings that have no place in an address, with file:line:col, using the
/// same parser as `apply`.
#[test]
fn lint_refuses_userinfo_query_fragment_and_backslash_in_vault_addr() {
    let home = tempfile::tempdir().unwrap();
    for (addr, why) in [
        ("http://192.0.2.1:8200\\@127.0.0.1:8200", "has a backslash"),
        ("http://192.0.2.1:8200?@127.0.0.1:8200", "has a query"),
        ("http://192.0.2.1:8200#@127.0.0.1:8200", "has a fragment"),
        (
            "http://127.0.0.1:8200@192.0.2.1:8200",
            "has a user name or password",
        ),
        ("https://u:p@vault.example", "has a user name or password"),
    ] {
        let out = lint(home.path(), addr, 2);
        let err = out.stderr_text();
        assert!(err.contains(why), "{addr}: {err}");
        assert!(err.contains("app.toml:6:15"), "{addr}: {err}");
    }
    // Plain http off loopback is a run-time decision (--insecure-http), not a spec error.
    lint(home.path(), "http://vault.internal:8200", 0);
}

/// `vault-seed lint` of a spec whose `vault_addr` is `addr`, expected to exit with `code`.
fn lint(home: &Path, addr: &str, code: i32) -> Out {
    let specs = spec_dir(addr, 1);
    Run::home(home)
        .specs(specs.path())
        .arg("lint")
        .status(code)
        .output()
}

// ---------------------------------------------------------------------------------------------
// 4. Redirects are not followed.

#[test]
fn a_redirect_is_not_followed_and_names_where_it_pointed() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = Stub::start("127.0.0.1:0", |req| {
        setup_answer(req).unwrap_or(Answer::Json(404, json!({"errors": []})))
    });
    let target = elsewhere.addr.clone();
    let redirector = Stub::start("127.0.0.1:0", move |req| {
        Answer::Head(
            307,
            vec![("Location".into(), format!("{target}{}", req.path))],
        )
    });
    let specs = spec_dir("https://unused.example", 2);
    for args in [&["plan", "dev"][..], &["apply", "dev", "-o", "json"][..]] {
        let out = vault_seed(home.path(), specs.path(), TOKEN)
            .env("VAULT_ADDR", &redirector.addr)
            .args(args)
            .status(1)
            .output();
        let err = out.stderr_text();
        assert!(
            err.contains(&format!(
                "answered GET `auth/token/lookup-self` with HTTP 307, a redirect to `{}`",
                elsewhere.addr
            )),
            "{err}"
        );
        assert!(err.contains("does not follow redirects"), "{err}");
        assert!(!out.all_text().contains(TOKEN));
    }
    assert!(redirector.connections() > 0);
    assert_eq!(elsewhere.connections(), 0, "the redirect was followed");
}

// ---------------------------------------------------------------------------------------------
// 5. Server text is redacted and capped.

#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn server_text_echoing_the_token_and_values_is_redacted_and_capped() {
    let home = tempfile::tempdir().unwrap();
    let token = "hvs.echoed-token-9d2c41";
    // A value that exists (read by vault-seed, then echoed back) and is a valid hex32.
    let existing = "5e".repeat(32);
    let existing_answer = existing.clone();
    let vault = Stub::start("127.0.0.1:0", move |req| {
        if let Some(a) = setup_answer(req) {
            return a;
        }
        match req.method.as_str() {
            "LIST" => Answer::Json(200, json!({"data": {"keys": ["K0"]}})),
            "GET" if req.path.ends_with("/K0") => Answer::Json(
                200,
                json!({"data": {"data": {"password": existing_answer},
                       "metadata": {"version": 1, "created_time": "2024-01-01T00:00:00Z"}}}),
            ),
            // Echo everything it holds: the token, the request body (generated values), and to
            // `rotate` of K0 (which read it first) the value before; then 50 KB of noise.
            _ => {
                let was = if req.path.ends_with("/K0") {
                    format!(" (was {existing_answer})")
                } else {
                    String::new()
                };
                Answer::Json(
                    400,
                    json!({"errors": [format!(
                        "invalid request with token {} and body {}{was} {}",
                        req.token.clone().unwrap_or_default(),
                        req.body,
                        "x".repeat(50_000)
                    ), "second", "third", "fourth", "fifth", "sixth"]}),
                )
            }
        }
    });
    let specs = spec_dir("https://unused.example", 3);
    let runs = [
        vec!["apply", "dev", "-o", "json"],
        vec!["apply", "dev"],
        vec!["apply", "dev", "-vvv"],
        vec!["rotate", "dev", "K0", "--yes"],
    ];
    for args in runs {
        let out = vault_seed(home.path(), specs.path(), token)
            .env("VAULT_ADDR", &vault.addr)
            .args(&args)
            .status(1)
            .output();
        let all = out.all_text();
        // The server did echo them: the requests carried the token and the new values.
        let writes: Vec<Req> = vault
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect();
        assert!(!writes.is_empty());
        let mut secrets = vec![token.to_string(), existing.clone()];
        for w in &writes {
            let body: Value = serde_json::from_str(&w.body).unwrap();
            secrets.push(body["data"]["password"].as_str().unwrap().to_string());
        }
        for s in &secrets {
            assert!(
                !all.contains(s.as_str()),
                "{args:?}: a secret was shown:\n{all}"
            );
        }
        assert!(
            all.contains("invalid request with token [redacted] and body"),
            "{all}"
        );
        if args[0] == "rotate" {
            assert!(all.contains("(was [redacted])"), "{all}");
        }
        // Capped: no 50 KB message, at most four of the server's errors.
        assert!(all.contains("more characters)"), "{all}");
        assert!(all.contains("and 2 more"), "{all}");
        assert!(!all.contains("sixth"), "{all}");
        if args.contains(&"json") {
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            let failed: Vec<&Value> = doc["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["outcome"] == "error")
                .collect();
            assert_eq!(failed.len(), 2, "{doc}");
            for r in failed {
                let detail = r["detail"].as_str().unwrap();
                assert!(detail.contains("[redacted]"), "{detail}");
                assert!(detail.len() < 2_000, "{} bytes", detail.len());
            }
        }
    }

    // A token check that echoes the token.
    let rude = Stub::start("127.0.0.1:0", |req| {
        Answer::Json(
            400,
            json!({"errors": [format!("bad token {}\u{1b}]0;owned\u{7}", req.token.clone().unwrap_or_default())]}),
        )
    });
    let out = vault_seed(home.path(), specs.path(), token)
        .env("VAULT_ADDR", &rude.addr)
        .args(["plan", "dev", "-o", "json"])
        .status(1)
        .output();
    let all = out.all_text();
    assert!(!all.contains(token), "{all}");
    assert!(all.contains("bad token [redacted]"), "{all}");
    // Control characters from the server are shown, not sent to the terminal.
    assert!(!all.contains('\u{1b}'), "{all}");
}

/// What a Vault that echoes everything answers a request it does not serve: 400, with the
/// request's token and body in its text.
fn echo(req: &Req) -> Answer {
    Answer::Json(
        400,
        json!({"errors": [format!(
            "invalid request with token {} and body {}",
            req.token.clone().unwrap_or_default(),
            req.body
        )]}),
    )
}

/// An echoing Vault (KV v2 at `secret/`) holding only `K0` (when given, its `password`): other
/// reads find no path, writes are echoed.
fn echoing_vault(k0: Option<String>) -> Stub {
    Stub::start("127.0.0.1:0", move |req| {
        if let Some(a) = setup_answer(req) {
            return a;
        }
        match (req.method.as_str(), &k0) {
            ("GET", Some(password)) if req.path.ends_with("/K0") => Answer::Json(
                200,
                json!({"data": {"data": {"password": password},
                       "metadata": {"version": 1, "created_time": "2024-01-01T00:00:00Z"}}}),
            ),
            ("GET" | "LIST", _) => Answer::Json(404, json!({"errors": []})),
            _ => echo(req),
        }
    })
}

/// `run` as text and as `-o json`: each fails on the echoed write (exit 1) and shows the
/// server's text with `[redacted]`, never `value`; and each write to `path` did carry `value`,
/// so the server did echo it.
fn echoed_never_shown(vault: &Stub, path: &str, value: &str, run: impl Fn() -> Run) {
    for output in [&[][..], &["-o", "json"][..]] {
        let out = run().args(output).status(1).never_shows(value).output();
        let all = out.all_text();
        assert!(
            all.contains("invalid request with token [redacted] and body"),
            "{output:?}: {all}"
        );
    }
    let writes: Vec<Req> = vault
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with(path))
        .collect();
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert!(writes.iter().all(|w| w.body.contains(value)), "{writes:?}");
}

/// The value `set` reads from stdin is held for redaction from the moment it is read: a Vault
/// echoing the write's body shows `[redacted]`, never the value.
#[test]
fn server_text_echoing_the_value_set_reads_is_redacted() {
    let home = tempfile::tempdir().unwrap();
    // A valid hex32, given only on stdin (nothing else in the run holds it); it replaces
    // another (`set` writes only over a path that exists).
    let value = "7c".repeat(32);
    let vault = echoing_vault(Some("5e".repeat(32)));
    let specs = spec_dir("https://unused.example", 1);
    echoed_never_shown(&vault, "/hostile/dev/K0", &value, || {
        vault_seed(home.path(), specs.path(), "hvs.echoed-token-set-1")
            .addr(&vault.addr)
            .args(["set", "dev", "K0.password", "--force", "--skip-kube"])
            .stdin(&value)
    });
}

/// The value `import` copies from a Kubernetes Secret is held for redaction from the moment it
/// is read: a Vault echoing the write's body shows `[redacted]`, never the value.
#[test]
fn server_text_echoing_the_value_import_copies_is_redacted() {
    let home = tempfile::tempdir().unwrap();
    let value = "zitadel-pat-echoed-Vq2m8Kd4";
    let kube = common::fake_kube::FakeKube::start();
    kube.put(common::fake_kube::secret(
        "ask",
        "admin-pat",
        &[("pat", value)],
    ));
    let vault = echoing_vault(None);
    let specs = common::spec_dir(
        "[vault]\nmount = \"secret\"\npath = \"hostile/{env}\"\nkv_version = 2\n\
         [environments.dev]\nvault_addr = 'https://unused.example'\nkube_namespace = \"ask\"\n\
         [secrets.PAT]\ndescription = \"the admin PAT\"\n\
         fields.pat = { from_secret = \"ask/admin-pat:pat\" }\n",
    );
    echoed_never_shown(&vault, "/hostile/dev/PAT", value, || {
        vault_seed(home.path(), specs.path(), "hvs.echoed-token-import-1")
            .addr(&vault.addr)
            .args(["import", "dev", "--kubeconfig"])
            .arg(kube.kubeconfig())
    });
}

/// The token a login returns is held for redaction as soon as it is read: a Vault that answers
/// the login (`POST auth/<mount>/login`, with the `auth` block of OpenBao's `api/secret.go`
/// `SecretAuth`: `client_token`, `accessor`, `policies`, `lease_duration`) and then echoes the token it is sent shows `[redacted]`, never the token.
/// The token has no Vault prefix, so only the registration can hide it, not its shape.
#[test]
fn server_text_echoing_the_login_token_is_redacted_for_each_method() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, content: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        p
    };
    let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzZWVkZXIifQ.c2lnbmF0dXJl";
    let jwt_file = file("jwt", jwt);
    let role_file = file("role-id", "0f1e2d3c-role-id-4b5a");
    let secret_file = file("secret-id", "9a8b7c6d-secret-id-5e4f");
    let specs = spec_dir("https://unused.example", 1);
    for method in ["kubernetes", "jwt", "approle"] {
        let token = format!("login-token-{method}-not-shaped-5c31e9");
        let issued = token.clone();
        let vault = Stub::start("127.0.0.1:0", move |req| {
            if req.method == "POST" && req.path.ends_with("/login") {
                return Answer::Json(
                    200,
                    json!({"auth": {"client_token": issued, "accessor": "accessor-of-the-login",
                           "policies": ["default", "seeder"], "lease_duration": 600}}),
                );
            }
            Answer::Json(
                400,
                json!({"errors": [format!("bad token {}", req.token.clone().unwrap_or_default())]}),
            )
        });
        let run = Run::home(dir.path())
            .specs(specs.path())
            .addr(&vault.addr)
            .env("VAULT_SEED_AUTH", method)
            .env("GITLAB_ID_TOKEN", jwt);
        let run = match method {
            "kubernetes" => run.args(["--role", "seeder", "--jwt-file"]).arg(&jwt_file),
            "jwt" => run.args(["--role", "seeder", "--jwt-env", "GITLAB_ID_TOKEN"]),
            _ => run
                .env("VAULT_SEED_ROLE_ID_FILE", &role_file)
                .env("VAULT_SEED_SECRET_ID_FILE", &secret_file),
        };
        let out = run
            .args(["plan", "dev"])
            .status(1)
            .never_shows(&token)
            .status(1)
            .output();
        let all = out.all_text();
        assert!(all.contains("bad token [redacted]"), "{method}: {all}");
        // The token was sent, so the server did echo it.
        let sent: Vec<Req> = vault
            .requests()
            .into_iter()
            .filter(|r| r.token.as_deref() == Some(token.as_str()))
            .collect();
        assert!(!sent.is_empty(), "{method}: {:?}", vault.requests());
    }
}

// ---------------------------------------------------------------------------------------------
// 10. Answers larger than vault-seed reads.

#[test]
fn an_answer_larger_than_the_cap_fails_clearly_without_being_held() {
    const BODY: u64 = 256 * 1024 * 1024;
    let home = tempfile::tempdir().unwrap();
    let specs = spec_dir("https://unused.example", 1);
    for chunked in [true, false] {
        let vault = Stub::start("127.0.0.1:0", move |_| Answer::Huge {
            bytes: BODY,
            chunked,
        });
        let (out, peak_kb) = vault_seed(home.path(), specs.path(), TOKEN)
            .addr(&vault.addr)
            .args(["plan", "dev"])
            .status(1)
            .output_with_peak_rss();
        let err = out.stderr_text();
        assert!(
            err.contains("Vault's answer to GET `auth/token/lookup-self` is larger than 8 MiB"),
            "{err}"
        );
        // vault-seed stopped reading at the cap: far less than the body was sent (socket
        // buffers hold a few MiB), and its memory stayed low.
        let sent = vault.sent.load(Ordering::SeqCst);
        assert!(sent < BODY / 4, "chunked={chunked}: {sent} bytes were read");
        println!(
            "chunked={chunked}: {sent} bytes sent of {BODY}, vault-seed's peak RSS {peak_kb} kB"
        );
        // The kernel's peak for the process, so nothing is missed; the bound leaves room for a
        // debug build's own size and still says the body was not held.
        assert!(
            peak_kb > 0 && peak_kb < BODY / 2 / 1024,
            "chunked={chunked}: vault-seed's peak RSS reached {peak_kb} kB"
        );
        // Not retried. The mount detection went with the token check (and met the same
        // answer); nothing else did.
        let sent: Vec<String> = vault
            .requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        let checks = sent
            .iter()
            .filter(|l| *l == "GET /v1/auth/token/lookup-self")
            .count();
        assert_eq!(checks, 1, "retried: {sent:?}");
        assert!(sent.iter().all(|l| common::proxy::start_up(l)), "{sent:?}");
    }
}
