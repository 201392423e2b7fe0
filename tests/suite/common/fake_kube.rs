//! A fake Kubernetes API server on loopback, for the client code that cannot meet a real one here.
//!
//! It speaks the REST paths kube-rs requests (discovery, ESO kinds in `v1`, `v1beta1` and
//! `v1alpha1`, VSO kinds in `secrets.hashicorp.com/v1beta1` (with lists across namespaces by
//! field selector), core/v1 Secrets, ConfigMaps and Events with field selectors, JSON merge
//! patches on ExternalSecrets and VaultStaticSecrets, Argo CD's `argoproj.io/v1alpha1`
//! Applications) and answers 404 with a real `Status` object for anything it does not serve.
//! It refuses what a real API server refuses (`docs/development.md`, "What the fake Kubernetes
//! API enforces"): unsupported field selectors, RBAC denials in the server's words, groups whose
//! CRDs are not installed; and it can shed load (429) or fail PATCHes in a webhook (500).
//! Objects are plain JSON shaped like `tests/fixtures/eso/`, `tests/fixtures/vso/` and
//! `tests/fixtures/argocd/`; the helpers below build or load them.
//! [`FakeKube::start`] writes a real kubeconfig (bearer token, context `fake`) that the client
//! under test reads; the server stops when dropped.
//!
//! ```ignore
//! let kube = FakeKube::start();
//! kube.put(external_secret("apps", "db", &[("password", "apps/db", Some("password"))]).ready_synced("2026-01-01T00:00:00Z"));
//! let cluster = Cluster::connect(Some(kube.kubeconfig()), None).await?;
//! ```

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use base64::Engine as _;
use serde_json::{json, Value};

/// The ESO API group.
pub const ESO_GROUP: &str = "external-secrets.io";
/// The VSO API group (served in `v1beta1`).
pub const VSO_GROUP: &str = "secrets.hashicorp.com";
const VSO_RESOURCES: [(&str, &str, bool); 3] = [
    ("vaultstaticsecrets", "VaultStaticSecret", true),
    ("vaultauths", "VaultAuth", true),
    ("vaultconnections", "VaultConnection", true),
];
/// Argo CD's API group (Applications in `v1alpha1`).
pub const ARGOCD_GROUP: &str = "argoproj.io";

/// A PATCH the server received.
#[derive(Debug, Clone)]
pub struct RecordedPatch {
    /// The request path (no query).
    pub path: String,
    /// Its `Content-Type`.
    pub content_type: String,
    /// Its body.
    pub body: Value,
}

/// One request line the server saw: method, path and query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    /// `GET`, `PATCH`...
    pub method: String,
    /// The path, percent-decoded query kept apart.
    pub path: String,
    /// The raw query string (without `?`), empty when none.
    pub query: String,
}

/// Key of a stored object: resource plural, namespace (None when cluster-scoped), name.
type Key = (String, Option<String>, String);

#[derive(Default)]
struct State {
    objects: BTreeMap<Key, Value>,
    events: Vec<Value>,
    /// Versions of ExternalSecret/SecretStore/ClusterSecretStore served.
    es_versions: Vec<String>,
    patches: Vec<RecordedPatch>,
    requests: Vec<SeenRequest>,
    unknown: Vec<String>,
    /// Resources (plural) whose requests RBAC denies.
    denied: Vec<String>,
    /// Resources (plural) whose requests at the cluster scope RBAC denies (namespace-only RBAC).
    denied_cluster_wide: Vec<String>,
    /// Which operators' CRDs the cluster has.
    installed: Installed,
    /// `(part of a path, times)`: that many requests to such a path answered 429 first.
    throttled: Vec<(String, usize)>,
    /// The admission webhook that fails every PATCH (500), by name.
    failing_webhook: Option<String>,
    resource_version: u64,
    /// How TokenReviews are answered (`None`: 404, as an API server without the API).
    review: Option<Review>,
    /// The TokenReview request bodies received.
    reviews: Vec<Value>,
    /// Bearer tokens accepted besides the server's own (a pod's service-account token).
    bearers: Vec<String>,
    /// Secrets served as `PartialObjectMetadata` (`namespace/name`), in order.
    metadata_reads: Vec<String>,
    /// At most this many objects a page, whatever the `limit` asked (a server may send fewer).
    page_cap: Option<usize>,
    /// Continue tokens of a list at or before this resource version are expired (etcd compacted
    /// past them): asking with one answers 410.
    compacted: u64,
    /// Pages served with a continue token before every token given so far expires.
    expire_after: Option<usize>,
}

/// Which operators' CRDs the cluster has: a group not installed is absent from discovery and
/// every path under it is a 404, as on a cluster where the CRDs were never applied.
#[derive(Debug, Clone, Copy)]
struct Installed {
    /// External Secrets Operator (`external-secrets.io`, PushSecrets included).
    eso: bool,
    /// Vault Secrets Operator (`secrets.hashicorp.com`).
    vso: bool,
    /// Argo CD (`argoproj.io`).
    argocd: bool,
}

impl Default for Installed {
    fn default() -> Self {
        Installed {
            eso: true,
            vso: true,
            argocd: true,
        }
    }
}

impl Installed {
    /// Whether the API group `group` is served (groups the fake does not model are not).
    fn serves(self, group: &str) -> bool {
        match group {
            ESO_GROUP => self.eso,
            VSO_GROUP => self.vso,
            ARGOCD_GROUP => self.argocd,
            _ => true,
        }
    }
}

/// How the fake answers `POST /apis/authentication.k8s.io/v1/tokenreviews` (OpenBao's kubernetes
/// auth asks it about every login's JWT).
#[derive(Debug, Clone)]
pub enum Review {
    /// `status.authenticated: true` for `system:serviceaccount:<namespace>:<name>` with this
    /// uid, and these audiences (`None`: the audiences the request asked about, as the API server
    /// answers for a token valid for them).
    Authenticated {
        /// The service account's namespace.
        namespace: String,
        /// The service account's name.
        name: String,
        /// Its uid.
        uid: String,
        /// `status.audiences`.
        audiences: Option<Vec<String>>,
    },
    /// `status.authenticated: false` with this `status.error` (a deleted service account, an
    /// expired or revoked token).
    Unauthenticated {
        /// `status.error`.
        error: String,
    },
}

/// The server side of TLS: a certificate for `127.0.0.1` signed by a CA made for the server.
struct Tls {
    config: Arc<rustls::ServerConfig>,
}

/// A running fake API server.
pub struct FakeKube {
    /// `http://127.0.0.1:<port>`, or `https://` for [`FakeKube::start_tls`].
    pub addr: String,
    /// The address it listens on (loopback unless [`FakeKube::start_on`]).
    ip: std::net::IpAddr,
    /// The port it listens on.
    pub port: u16,
    /// The PEM certificate of the CA that signed its certificate (TLS servers only): a pod's
    /// `ca.crt`.
    pub ca_pem: Option<String>,
    /// The bearer token the kubeconfig carries and the server demands.
    pub token: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    dir: tempfile::TempDir,
}

impl FakeKube {
    /// Start a server serving `external-secrets.io` `v1` and `v1beta1` (ESO 0.16), and
    /// `v1alpha1` for PushSecrets; write its kubeconfig.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// The same over HTTPS, as a cluster's API server (and kube-rs's in-cluster configuration,
    /// which is always `https://`): its certificate names `127.0.0.1` and is signed by a CA made
    /// here ([`FakeKube::ca_pem`]).
    pub fn start_tls() -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "fake kubernetes CA");
        let ca_cert = ca.self_signed(&ca_key).expect("CA");
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().expect("server key");
        let mut params = rcgen::CertificateParams::new(vec!["kubernetes.default.svc".to_string()])
            .expect("params");
        params
            .subject_alt_names
            .push(rcgen::SanType::IpAddress("127.0.0.1".parse().expect("ip")));
        let cert = params.signed_by(&key, &issuer).expect("server certificate");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        )
        .expect("server config");
        let mut kube = Self::start_with(Some(Tls {
            config: Arc::new(config),
        }));
        kube.ca_pem = Some(ca_cert.pem());
        // Its kubeconfig trusts the CA.
        let yaml = kubeconfig_yaml(&kube.addr, &kube.token, "fake").replace(
            "    server: ",
            &format!(
                "    certificate-authority-data: {}\n    server: ",
                base64::engine::general_purpose::STANDARD.encode(ca_cert.pem())
            ),
        );
        std::fs::write(kube.kubeconfig(), yaml).expect("write kubeconfig");
        kube
    }

    /// Plain HTTP on `ip`, an address of this machine that is not loopback: what a request
    /// sent to that address would reach ([`FakeKube::requests`] says whether one was).
    pub fn start_on(ip: std::net::IpAddr) -> Self {
        Self::start_at(None, ip)
    }

    fn start_with(tls: Option<Tls>) -> Self {
        Self::start_at(tls, std::net::Ipv4Addr::LOCALHOST.into())
    }

    fn start_at(tls: Option<Tls>, ip: std::net::IpAddr) -> Self {
        let listener = TcpListener::bind((ip, 0)).expect("bind the fake API server");
        let port = listener.local_addr().expect("local addr").port();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let addr = format!("{scheme}://{}", std::net::SocketAddr::new(ip, port));
        let tls = tls.map(Arc::new);
        let token = format!("fake-token-{port}");
        let state = Arc::new(Mutex::new(State {
            es_versions: vec!["v1".into(), "v1beta1".into()],
            resource_version: 1000,
            ..State::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            let token = token.clone();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let state = Arc::clone(&state);
                    let token = token.clone();
                    let tls = tls.clone();
                    std::thread::spawn(move || {
                        serve_connection(conn, &state, &token, tls.as_deref())
                    });
                }
            })
        };
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("kubeconfig"),
            kubeconfig_yaml(&addr, &token, "fake"),
        )
        .expect("write kubeconfig");
        FakeKube {
            addr,
            ip,
            port,
            ca_pem: None,
            token,
            state,
            stop,
            thread: Some(thread),
            dir,
        }
    }

    /// The kubeconfig file pointing at this server (current context `fake`, namespace
    /// `default`).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// The real `Cluster` (kube-rs), connected through this server's kubeconfig.
    pub async fn connect(&self) -> vault_seed::kube::Cluster {
        vault_seed::init_crypto();
        vault_seed::kube::Cluster::connect(Some(&self.kubeconfig()), None)
            .await
            .expect("connect to the fake API server")
    }

    /// Serve ExternalSecrets, SecretStores and ClusterSecretStores only in these versions
    /// (`&["v1beta1"]`: ESO before 0.16; `&["v1"]`: ESO 0.17 and later). Others answer 404.
    pub fn serve_versions(&self, versions: &[&str]) {
        self.state().es_versions = versions.iter().map(|v| v.to_string()).collect();
    }

    /// Serve no `external-secrets.io` kinds (PushSecrets neither), as a cluster without ESO's
    /// CRDs: the group is not in discovery and its paths answer 404.
    pub fn without_eso(&self) {
        self.state().installed.eso = false;
    }

    /// Serve no `secrets.hashicorp.com` kinds, as a cluster without VSO's CRDs.
    pub fn without_vso(&self) {
        self.state().installed.vso = false;
    }

    /// Serve no `argoproj.io` kinds, as a cluster without Argo CD.
    pub fn without_argocd(&self) {
        self.state().installed.argocd = false;
    }

    /// Deny every request on this resource (`secrets`, `events`, `externalsecrets`...) with a
    /// 403, as RBAC would for a user without the verb.
    pub fn deny(&self, plural: &str) {
        self.state().denied.push(plural.to_string());
    }

    /// Send at most `n` objects a page, whatever the client's `limit` (the API server may send
    /// fewer than asked, with a `continue` token for the rest).
    pub fn cap_pages(&self, n: usize) {
        self.state().page_cap = Some(n);
    }

    /// After `pages` more pages served with a `continue` token, expire every token given so far,
    /// as etcd's compaction does: the next page asked with one is a 410 `Expired`.
    pub fn expire_continue_after(&self, pages: usize) {
        self.state().expire_after = Some(pages);
    }

    /// Deny the requests on this resource made at the cluster scope (a list across namespaces,
    /// a cluster-scoped object) and allow those in a namespace: RBAC granted by RoleBindings
    /// only, the common case for a CI or a person's account.
    pub fn deny_cluster_wide(&self, plural: &str) {
        self.state().denied_cluster_wide.push(plural.to_string());
    }

    /// Answer the next `times` requests whose path contains `path_part` with 429, as API
    /// Priority and Fairness sheds load: a plain-text body and `Retry-After: 1`.
    pub fn throttle(&self, path_part: &str, times: usize) {
        self.state().throttled.push((path_part.to_string(), times));
    }

    /// Fail every PATCH with the 500 an admission webhook that cannot be called gives
    /// (`failurePolicy: Fail` and its service down), naming the webhook `name`.
    pub fn fail_patches_in_webhook(&self, name: &str) {
        self.state().failing_webhook = Some(name.to_string());
    }

    /// Add or replace an object (any kind the server knows; the group in its `apiVersion` is
    /// kept, the version is whatever the client asks for). Events go to [`FakeKube::add_event`].
    pub fn put(&self, obj: impl Into<Value>) {
        let mut obj: Value = obj.into();
        let mut st = self.state();
        st.resource_version += 1;
        obj["metadata"]["resourceVersion"] = json!(st.resource_version.to_string());
        if obj["kind"] == "Event" {
            st.events.push(obj);
        } else {
            let key = key_of(&obj);
            st.objects.insert(key, obj);
        }
    }

    /// Change a stored object in place (e.g. flip its Ready condition while a client polls).
    pub fn update(&self, kind: &str, ns: Option<&str>, name: &str, f: impl FnOnce(&mut Value)) {
        let key = (
            plural_of(kind).to_string(),
            ns.map(str::to_string),
            name.to_string(),
        );
        let mut st = self.state();
        st.resource_version += 1;
        let rv = st.resource_version.to_string();
        let obj = st
            .objects
            .get_mut(&key)
            .unwrap_or_else(|| panic!("fake kube: no {kind} {ns:?}/{name} to update"));
        f(obj);
        obj["metadata"]["resourceVersion"] = json!(rv);
    }

    /// A stored object, as it is now.
    pub fn get(&self, kind: &str, ns: Option<&str>, name: &str) -> Option<Value> {
        let key = (
            plural_of(kind).to_string(),
            ns.map(str::to_string),
            name.to_string(),
        );
        self.state().objects.get(&key).cloned()
    }

    /// Answer TokenReviews this way from now on.
    pub fn answer_token_reviews(&self, review: Review) {
        self.state().review = Some(review);
    }

    /// Accept `token` as a bearer token too (a pod's service-account token, which the
    /// in-cluster configuration sends).
    pub fn accept_bearer(&self, token: &str) {
        self.state().bearers.push(token.to_string());
    }

    /// The TokenReview request bodies received, in order.
    pub fn token_reviews(&self) -> Vec<Value> {
        self.state().reviews.clone()
    }

    /// Add a core/v1 Event.
    pub fn add_event(&self, event: impl Into<Value>) {
        self.put(event.into());
    }

    /// The PATCH requests received, in order.
    pub fn patches(&self) -> Vec<RecordedPatch> {
        self.state().patches.clone()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.state().requests.clone()
    }

    /// The Secrets served as their metadata alone (`namespace/name`), in order.
    pub fn metadata_reads(&self) -> Vec<String> {
        self.state().metadata_reads.clone()
    }

    /// Requests the server does not know (answered 404), as `METHOD path?query`.
    pub fn unknown_requests(&self) -> Vec<String> {
        self.state().unknown.clone()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect((self.ip, self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A kubeconfig with one cluster at `server`, one token user and one context `context`
/// (also the current one).
pub fn kubeconfig_yaml(server: &str, token: &str, context: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: fake-cluster
  cluster:
    server: {server}
users:
- name: fake-user
  user:
    token: {token}
contexts:
- name: {context}
  context:
    cluster: fake-cluster
    user: fake-user
    namespace: default
current-context: {context}
"
    )
}

fn plural_of(kind: &str) -> &'static str {
    match kind {
        "ExternalSecret" => "externalsecrets",
        "PushSecret" => "pushsecrets",
        "SecretStore" => "secretstores",
        "ClusterSecretStore" => "clustersecretstores",
        "Secret" => "secrets",
        "Event" => "events",
        "VaultStaticSecret" => "vaultstaticsecrets",
        "VaultAuth" => "vaultauths",
        "VaultConnection" => "vaultconnections",
        "Application" => "applications",
        "ConfigMap" => "configmaps",
        "Namespace" => "namespaces",
        other => {
            workload_plural(other).unwrap_or_else(|| panic!("fake kube: unknown kind {other}"))
        }
    }
}

fn key_of(obj: &Value) -> Key {
    let kind = obj["kind"].as_str().expect("object has a kind");
    let plural = plural_of(kind);
    let ns = obj["metadata"]["namespace"].as_str().map(str::to_string);
    let ns = if plural == "clustersecretstores" {
        None
    } else {
        ns
    };
    let name = obj["metadata"]["name"]
        .as_str()
        .expect("object has a name")
        .to_string();
    (plural.to_string(), ns, name)
}

// ----- HTTP -----

struct HttpRequest {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn serve_connection(conn: TcpStream, state: &Mutex<State>, token: &str, tls: Option<&Tls>) {
    // Each answer goes out at once, as one write: no Nagle delay on small answers.
    let _ = conn.set_nodelay(true);
    match tls {
        None => serve_stream(conn, state, token),
        Some(tls) => {
            let Ok(session) = rustls::ServerConnection::new(tls.config.clone()) else {
                return;
            };
            serve_stream(rustls::StreamOwned::new(session, conn), state, token);
        }
    }
}

fn serve_stream<S: Read + Write>(conn: S, state: &Mutex<State>, token: &str) {
    let mut reader = BufReader::new(conn);
    // Keep-alive: hyper reuses connections; serve requests until the client closes.
    while let Some(req) = read_request(&mut reader) {
        let conn = reader.get_mut();
        let (status, body) = handle(&req, state, token);
        let reason = match status {
            200 => "OK",
            201 => "Created",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            410 => "Gone",
            415 => "Unsupported Media Type",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            _ => "Error",
        };
        // A bare string is sent as plain text, as Go's `http.Error` sends it (the 429 of API
        // Priority and Fairness is not a Status object).
        let (content_type, body) = match body {
            Value::String(text) => ("text/plain; charset=utf-8", text + "\n"),
            json => ("application/json", json.to_string()),
        };
        let retry_after = if status == 429 {
            "Retry-After: 1\r\n"
        } else {
            ""
        };
        let mut answer = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n{retry_after}Content-Length: {}\r\n\r\n",
            body.len()
        );
        answer.push_str(&body);
        if conn.write_all(answer.as_bytes()).is_err() {
            break;
        }
        let _ = conn.flush();
    }
}

fn read_request<S: Read>(reader: &mut BufReader<S>) -> Option<HttpRequest> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut req = HttpRequest {
        method,
        path: String::new(),
        query: String::new(),
        headers,
        body: Vec::new(),
    };
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    req.path = path.to_string();
    req.query = query.to_string();
    if req
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            req.body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = req.header("content-length").and_then(|v| v.parse().ok()) {
        let mut body = vec![0; n];
        reader.read_exact(&mut body).ok()?;
        req.body = body;
    }
    Some(req)
}

fn status_object(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

fn not_found(what: &str) -> (u16, Value) {
    let mut s = status_object(404, "NotFound", what);
    s["details"] = json!({});
    (404, s)
}

/// The 404 of a path the server does not serve (an API group whose CRDs are not installed).
fn not_served() -> (u16, Value) {
    not_found("the server could not find the requested resource")
}

fn handle(req: &HttpRequest, state: &Mutex<State>, token: &str) -> (u16, Value) {
    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
    st.requests.push(SeenRequest {
        method: req.method.clone(),
        path: req.path.clone(),
        query: req.query.clone(),
    });
    let bearer = req
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "));
    if bearer != Some(token) && !st.bearers.iter().any(|b| Some(b.as_str()) == bearer) {
        return (401, status_object(401, "Unauthorized", "Unauthorized"));
    }
    if let Some(shed) = throttled(&mut st, &req.path) {
        return shed;
    }
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    if let Some(attrs) = Attributes::of(&segs, &req.method, &req.query) {
        if st.denied.iter().any(|d| d == attrs.resource)
            || (attrs.namespace.is_none()
                && st.denied_cluster_wide.iter().any(|d| d == attrs.resource))
        {
            return forbidden(&attrs);
        }
    }
    let answer = route(req, &segs, &mut st);
    if let Some(a) = answer {
        return a;
    }
    let line = format!("{} {}?{}", req.method, req.path, req.query);
    eprintln!("fake kube: unknown request {line}");
    st.unknown.push(line);
    not_found("the server could not find the requested resource")
}

/// The user RBAC names in its answers.
const USER: &str = "system:serviceaccount:ci:verifier";

/// What RBAC judges a resource request by (`k8s.io/apiserver` `RequestInfo`): its verb, API
/// group, resource, namespace (none at the cluster scope) and object name (none for a list).
struct Attributes<'a> {
    verb: &'static str,
    group: &'a str,
    resource: &'a str,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
}

impl<'a> Attributes<'a> {
    /// `None` for discovery and other non-resource paths.
    fn of(segs: &[&'a str], method: &str, query: &str) -> Option<Self> {
        let (group, rest) = match segs {
            ["api", "v1", rest @ ..] => ("", rest),
            ["apis", group, _, rest @ ..] => (*group, rest),
            _ => return None,
        };
        let (namespace, resource, name) = match rest {
            ["namespaces", ns, resource, name, ..] => (Some(*ns), *resource, Some(*name)),
            ["namespaces", ns, resource] => (Some(*ns), *resource, None),
            [resource, name, ..] => (None, *resource, Some(*name)),
            [resource] => (None, *resource, None),
            _ => return None,
        };
        let watch = query_param(query, "watch").is_some_and(|w| w == "true" || w == "1");
        let verb = match (method, name) {
            ("GET", None) if watch => "watch",
            ("GET", None) => "list",
            ("GET", Some(_)) => "get",
            ("PATCH", _) => "patch",
            ("PUT", _) => "update",
            ("POST", _) => "create",
            ("DELETE", None) => "deletecollection",
            ("DELETE", Some(_)) => "delete",
            _ => "get",
        };
        Some(Attributes {
            verb,
            group,
            resource,
            namespace,
            name,
        })
    }
}

/// RBAC's 403, as the API server builds it (`responsewriters.Forbidden`, `NewForbidden`):
/// `<resource>[.<group>] ["<name>"] is forbidden: User "<user>" cannot <verb> resource
/// "<resource>" in API group "<group>" in the namespace "<ns>"` (or `at the cluster scope`).
fn forbidden(a: &Attributes<'_>) -> (u16, Value) {
    let qualified = if a.group.is_empty() {
        a.resource.to_string()
    } else {
        format!("{}.{}", a.resource, a.group)
    };
    let named = a.name.map(|n| format!(" \"{n}\"")).unwrap_or_default();
    let scope = match a.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    let message = format!(
        "{qualified}{named} is forbidden: User \"{USER}\" cannot {} resource \"{}\" in API group \"{}\" {scope}",
        a.verb, a.resource, a.group,
    );
    let mut s = status_object(403, "Forbidden", &message);
    s["details"] = json!({"name": a.name.unwrap_or(""), "group": a.group, "kind": a.resource});
    (403, s)
}

/// API Priority and Fairness shedding this request: `Some(429)` while the path has
/// [`FakeKube::throttle`] answers left.
fn throttled(st: &mut State, path: &str) -> Option<(u16, Value)> {
    let (_, left) = st
        .throttled
        .iter_mut()
        .find(|(part, left)| *left > 0 && path.contains(part.as_str()))?;
    *left -= 1;
    // `http.Error(w, "Too many requests, please try again later.", 429)`
    // (`k8s.io/apiserver` `filters.tooManyRequests`).
    Some((429, json!("Too many requests, please try again later.")))
}

/// The 500 of an admission webhook that cannot be called (`failurePolicy: Fail`): a
/// `NewInternalError` around `ErrCallingWebhook`.
fn webhook_failure(webhook: &str) -> (u16, Value) {
    let cause = format!(
        "failed calling webhook \"{webhook}\": failed to call webhook: Post \"https://{webhook}.svc:443/validate?timeout=10s\": context deadline exceeded"
    );
    let mut s = status_object(
        500,
        "InternalError",
        &format!("Internal error occurred: {cause}"),
    );
    s["details"] = json!({"causes": [{"message": cause}]});
    (500, s)
}

/// The answer for a path, or `None` when the path is unknown.
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn route(req: &HttpRequest, segs: &[&str], st: &mut State) -> Option<(u16, Value)> {
    if let Some(answer) = collection(req, segs, st) {
        return Some(answer);
    }
    if let Some(answer) = workload_route(req, segs, st) {
        return Some(answer);
    }
    let get = req.method == "GET";
    match segs {
        ["apis", "authentication.k8s.io", "v1", "tokenreviews"] if req.method == "POST" => {
            Some(token_review(req, st))
        }
        ["version"] if get => Some((
            200,
            json!({"major": "1", "minor": "30", "gitVersion": "v1.30.0-fake", "platform": "linux/amd64"}),
        )),
        ["api"] if get => Some((
            200,
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}),
        )),
        ["api", "v1"] if get => Some((
            200,
            resource_list(
                "v1",
                &[
                    ("secrets", "Secret", true),
                    ("events", "Event", true),
                    ("configmaps", "ConfigMap", true),
                ],
            ),
        )),
        ["apis"] if get => Some((
            200,
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": served_groups(st)}),
        )),
        ["apis", group, ..] if !st.installed.serves(group) => Some(not_served()),
        ["apis", VSO_GROUP] if get => Some((200, vso_group())),
        ["apis", VSO_GROUP, "v1beta1"] if get => Some((
            200,
            resource_list(&format!("{VSO_GROUP}/v1beta1"), &VSO_RESOURCES),
        )),
        ["apis", VSO_GROUP, "v1beta1", plural] if get => {
            if !VSO_RESOURCES.iter().any(|r| r.0 == *plural) {
                return Some(not_found(
                    "the server could not find the requested resource",
                ));
            }
            Some(list_all(st, plural, &req.query))
        }
        ["apis", VSO_GROUP, "v1beta1", "namespaces", ns, plural, name] => {
            if !VSO_RESOURCES.iter().any(|r| r.0 == *plural) {
                return Some(not_found(
                    "the server could not find the requested resource",
                ));
            }
            let api_version = format!("{VSO_GROUP}/v1beta1");
            match req.method.as_str() {
                "GET" => Some(get_object(st, &api_version, plural, Some(ns), name)),
                "PATCH" if *plural == "vaultstaticsecrets" => {
                    Some(patch_object(st, req, &api_version, plural, ns, name))
                }
                _ => Some((
                    405,
                    status_object(405, "MethodNotAllowed", "method not allowed"),
                )),
            }
        }
        ["apis", ESO_GROUP] if get => Some((200, eso_group(st))),
        ["apis", ESO_GROUP, version] if get => {
            let resources = eso_resources(st, version);
            if resources.is_empty() {
                Some(not_found(
                    "the server could not find the requested resource",
                ))
            } else {
                Some((
                    200,
                    resource_list(&format!("{ESO_GROUP}/{version}"), &resources),
                ))
            }
        }
        ["api", "v1", "namespaces", ns, "secrets", name] if get => {
            Some(get_object(st, "v1", "secrets", Some(ns), name))
        }
        ["api", "v1", "namespaces", ns, "configmaps", name] if get => {
            Some(get_object(st, "v1", "configmaps", Some(ns), name))
        }
        ["api", "v1", "namespaces", name] if get => {
            Some(get_object(st, "v1", "namespaces", None, name))
        }
        ["apis", ARGOCD_GROUP, "v1alpha1"] if get => Some((
            200,
            resource_list(
                &format!("{ARGOCD_GROUP}/v1alpha1"),
                &[("applications", "Application", true)],
            ),
        )),
        ["apis", ARGOCD_GROUP, "v1alpha1", "namespaces", ns, "applications", name] if get => {
            Some(get_object(
                st,
                &format!("{ARGOCD_GROUP}/v1alpha1"),
                "applications",
                Some(ns),
                name,
            ))
        }
        ["api", "v1", "namespaces", ns, "events"] if get => Some(list_events(st, ns, &req.query)),
        ["apis", ESO_GROUP, version, "namespaces", ns, plural, name] => {
            if !eso_resources(st, version).iter().any(|r| r.0 == *plural) {
                return Some(not_found(
                    "the server could not find the requested resource",
                ));
            }
            let api_version = format!("{ESO_GROUP}/{version}");
            match req.method.as_str() {
                "GET" => Some(get_object(st, &api_version, plural, Some(ns), name)),
                "PATCH" if *plural == "externalsecrets" => {
                    Some(patch_object(st, req, &api_version, plural, ns, name))
                }
                _ => Some((
                    405,
                    status_object(405, "MethodNotAllowed", "method not allowed"),
                )),
            }
        }
        ["apis", ESO_GROUP, version, "clustersecretstores", name] if get => {
            if !eso_resources(st, version)
                .iter()
                .any(|r| r.0 == "clustersecretstores")
            {
                return Some(not_found(
                    "the server could not find the requested resource",
                ));
            }
            Some(get_object(
                st,
                &format!("{ESO_GROUP}/{version}"),
                "clustersecretstores",
                None,
                name,
            ))
        }
        ["apis", VSO_GROUP, "v1beta1", "namespaces", ns, plural] if get => {
            if !VSO_RESOURCES.iter().any(|r| r.0 == *plural) {
                return Some(not_found(
                    "the server could not find the requested resource",
                ));
            }
            Some(list_in(
                st,
                plural,
                ns,
                &format!("{VSO_GROUP}/v1beta1"),
                &req.query,
            ))
        }
        ["apis", ESO_GROUP, version, "namespaces", ns, plural] if get => {
            if !eso_resources(st, version).iter().any(|r| r.0 == *plural) {
                return Some(not_found(
                    "the server could not find the requested resource",
                ));
            }
            Some(list_in(
                st,
                plural,
                ns,
                &format!("{ESO_GROUP}/{version}"),
                &req.query,
            ))
        }
        _ => None,
    }
}

/// Every stored object of `plural` in namespace `ns` that the `fieldSelector` matches, as a
/// list (`audit` lists them); 400 for a selector the server refuses.
fn list_in(st: &State, plural: &str, ns: &str, api_version: &str, query: &str) -> (u16, Value) {
    let selector = match field_selector(plural, query) {
        Ok(s) => s,
        Err(refused) => return refused,
    };
    let items: Vec<Value> = st
        .objects
        .iter()
        .filter(|((p, n, _), _)| p == plural && n.as_deref() == Some(ns))
        .map(|(_, o)| o.clone())
        .filter(|o| field_selector_matches(o, &selector))
        .collect();
    (
        200,
        json!({
            "kind": "List", "apiVersion": api_version,
            "metadata": {"resourceVersion": st.resource_version.to_string()},
            "items": items,
        }),
    )
}

/// A TokenReview's answer, as the API server gives it (`authentication.k8s.io/v1`, 201).
fn token_review(req: &HttpRequest, st: &mut State) -> (u16, Value) {
    let body: Value = match serde_json::from_slice(&req.body) {
        Ok(b) => b,
        Err(e) => return (400, status_object(400, "BadRequest", &e.to_string())),
    };
    st.reviews.push(body.clone());
    let Some(review) = st.review.clone() else {
        return not_found("the server could not find the requested resource");
    };
    let status = match review {
        Review::Authenticated {
            namespace,
            name,
            uid,
            audiences,
        } => json!({
            "authenticated": true,
            "user": {
                "username": format!("system:serviceaccount:{namespace}:{name}"),
                "uid": uid,
                "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{namespace}"), "system:authenticated"],
            },
            "audiences": audiences.map(Value::from).unwrap_or_else(|| body["spec"]["audiences"].clone()),
        }),
        Review::Unauthenticated { error } => json!({"user": {}, "error": error}),
    };
    (
        201,
        json!({
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "spec": body["spec"],
            "status": status,
        }),
    )
}

fn eso_resources(st: &State, version: &str) -> Vec<(&'static str, &'static str, bool)> {
    if version == "v1alpha1" {
        return vec![("pushsecrets", "PushSecret", true)];
    }
    if st.es_versions.iter().any(|v| v == version) {
        return vec![
            ("externalsecrets", "ExternalSecret", true),
            ("secretstores", "SecretStore", true),
            ("clustersecretstores", "ClusterSecretStore", false),
        ];
    }
    Vec::new()
}

fn eso_group(st: &State) -> Value {
    let mut versions: Vec<Value> = st
        .es_versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{ESO_GROUP}/{v}"), "version": v}))
        .collect();
    versions.push(json!({"groupVersion": format!("{ESO_GROUP}/v1alpha1"), "version": "v1alpha1"}));
    json!({
        "kind": "APIGroup", "apiVersion": "v1", "name": ESO_GROUP,
        "versions": versions, "preferredVersion": versions[0],
    })
}

/// The API groups discovery lists: ESO, VSO and Argo CD where installed.
fn served_groups(st: &State) -> Vec<Value> {
    let mut groups = Vec::new();
    if st.installed.eso {
        groups.push(eso_group(st));
    }
    if st.installed.vso {
        groups.push(vso_group());
    }
    if st.installed.argocd {
        let v = json!({"groupVersion": format!("{ARGOCD_GROUP}/v1alpha1"), "version": "v1alpha1"});
        groups.push(json!({
            "kind": "APIGroup", "apiVersion": "v1", "name": ARGOCD_GROUP,
            "versions": [v.clone()], "preferredVersion": v,
        }));
    }
    groups
}

fn vso_group() -> Value {
    let v = json!({"groupVersion": format!("{VSO_GROUP}/v1beta1"), "version": "v1beta1"});
    json!({
        "kind": "APIGroup", "apiVersion": "v1", "name": VSO_GROUP,
        "versions": [v.clone()], "preferredVersion": v,
    })
}

/// Every stored object of `plural` in all namespaces that the `fieldSelector` (e.g.
/// `metadata.name=default`) matches, as a list; 400 for a selector the server refuses.
fn list_all(st: &State, plural: &str, query: &str) -> (u16, Value) {
    let selector = match field_selector(plural, query) {
        Ok(s) => s,
        Err(refused) => return refused,
    };
    let items: Vec<Value> = st
        .objects
        .iter()
        .filter(|((p, _, _), _)| p == plural)
        .map(|(_, o)| o.clone())
        .filter(|o| field_selector_matches(o, &selector))
        .collect();
    (
        200,
        json!({
            "kind": "List", "apiVersion": format!("{VSO_GROUP}/v1beta1"),
            "metadata": {"resourceVersion": st.resource_version.to_string()},
            "items": items,
        }),
    )
}

fn resource_list(group_version: &str, resources: &[(&str, &str, bool)]) -> Value {
    let resources: Vec<Value> = resources
        .iter()
        .map(|(plural, kind, namespaced)| {
            json!({
                "name": plural, "singularName": kind.to_lowercase(), "namespaced": namespaced,
                "kind": kind, "verbs": ["get", "list", "watch", "patch"],
            })
        })
        .collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

fn get_object(
    st: &State,
    api_version: &str,
    plural: &str,
    ns: Option<&str>,
    name: &str,
) -> (u16, Value) {
    let key = (plural.to_string(), ns.map(str::to_string), name.to_string());
    match st.objects.get(&key) {
        Some(obj) => {
            let mut obj = obj.clone();
            obj["apiVersion"] = json!(api_version);
            (200, obj)
        }
        None => not_found_object(plural, name),
    }
}

fn not_found_object(plural: &str, name: &str) -> (u16, Value) {
    let group = match plural {
        "secrets" | "configmaps" | "namespaces" => "",
        "applications" => ARGOCD_GROUP,
        p if VSO_RESOURCES.iter().any(|r| r.0 == p) => VSO_GROUP,
        _ => ESO_GROUP,
    };
    let resource = if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    };
    let mut s = status_object(404, "NotFound", &format!("{resource} \"{name}\" not found"));
    s["details"] = json!({"name": name, "group": group, "kind": plural});
    (404, s)
}

fn patch_object(
    st: &mut State,
    req: &HttpRequest,
    api_version: &str,
    plural: &str,
    ns: &str,
    name: &str,
) -> (u16, Value) {
    let content_type = req.header("content-type").unwrap_or_default().to_string();
    let body: Value = match serde_json::from_slice(&req.body) {
        Ok(b) => b,
        Err(e) => return (400, status_object(400, "BadRequest", &e.to_string())),
    };
    st.patches.push(RecordedPatch {
        path: req.path.clone(),
        content_type: content_type.clone(),
        body: body.clone(),
    });
    if content_type != "application/merge-patch+json" {
        return (415, status_object(415, "UnsupportedMediaType", &format!("the body of the request was in an unknown format - accepted media types include: application/merge-patch+json; got {content_type}")));
    }
    if let Some(webhook) = &st.failing_webhook {
        return webhook_failure(webhook);
    }
    st.resource_version += 1;
    let rv = st.resource_version.to_string();
    let key = (plural.to_string(), Some(ns.to_string()), name.to_string());
    let Some(obj) = st.objects.get_mut(&key) else {
        return not_found_object(plural, name);
    };
    merge_patch(obj, &body);
    obj["metadata"]["resourceVersion"] = json!(rv);
    let mut out = obj.clone();
    out["apiVersion"] = json!(api_version);
    (200, out)
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn list_events(st: &State, ns: &str, query: &str) -> (u16, Value) {
    let selector = match field_selector("events", query) {
        Ok(s) => s,
        Err(refused) => return refused,
    };
    let items: Vec<Value> = st
        .events
        .iter()
        .filter(|e| e["metadata"]["namespace"] == ns)
        .filter(|e| field_selector_matches(e, &selector))
        .cloned()
        .collect();
    (
        200,
        json!({
            "kind": "EventList", "apiVersion": "v1",
            "metadata": {"resourceVersion": st.resource_version.to_string()},
            "items": items,
        }),
    )
}

/// The field labels a real API server lets a list of `plural` select on.
enum Selectable {
    /// A core kind with its own conversion function (`pkg/apis/core/v1/conversion.go`
    /// `AddFieldLabelConversionsFor*`): these labels only.
    Fixed(&'static [&'static str]),
    /// A core kind without one: `runtime.DefaultMetaV1FieldSelectorConversion`.
    Meta,
    /// A custom resource (`apiextensions-apiserver` `ConvertFieldLabel`, no `selectableFields`
    /// in ESO's, VSO's or Argo CD's CRDs): `metadata.name`, and `metadata.namespace` unless
    /// cluster-scoped.
    CustomResource { cluster_scoped: bool },
}

fn selectable(plural: &str) -> Selectable {
    match plural {
        "events" => Selectable::Fixed(&[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        ]),
        "secrets" => Selectable::Fixed(&["type", "metadata.namespace", "metadata.name"]),
        "pods" => Selectable::Fixed(&[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ]),
        "configmaps" | "serviceaccounts" | "services" => Selectable::Meta,
        "clustersecretstores" => Selectable::CustomResource {
            cluster_scoped: true,
        },
        _ => Selectable::CustomResource {
            cluster_scoped: false,
        },
    }
}

/// Whether a list of `plural` may select on field `label`; else the server's reason.
fn field_selector_allowed(plural: &str, label: &str) -> Result<(), String> {
    let unsupported = || Err(format!("field label not supported: {label}"));
    match selectable(plural) {
        Selectable::Fixed(labels) if labels.contains(&label) => Ok(()),
        Selectable::Fixed(_) => unsupported(),
        Selectable::Meta if label == "metadata.name" || label == "metadata.namespace" => Ok(()),
        Selectable::Meta => Err(format!(
            "\"{label}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        )),
        Selectable::CustomResource { .. } if label == "metadata.name" => Ok(()),
        Selectable::CustomResource {
            cluster_scoped: false,
        } if label == "metadata.namespace" => Ok(()),
        Selectable::CustomResource { .. } => unsupported(),
    }
}

/// A list's `fieldSelector`, or the 400 a real server answers for one it cannot parse or whose
/// field it does not support.
fn field_selector(plural: &str, query: &str) -> Result<String, (u16, Value)> {
    let selector = query_param(query, "fieldSelector").unwrap_or_default();
    let bad = |message: String| (400, status_object(400, "BadRequest", &message));
    for term in selector.split(',').filter(|t| !t.is_empty()) {
        let Some((label, _)) = term
            .split_once("!=")
            .or_else(|| term.split_once("=="))
            .or_else(|| term.split_once('='))
        else {
            return Err(bad(format!(
                "invalid selector: '{selector}'; can't understand '{term}'"
            )));
        };
        field_selector_allowed(plural, label).map_err(bad)?;
    }
    Ok(selector)
}

fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let s = s.replace('+', " ");
    percent_encoding::percent_decode_str(&s)
        .decode_utf8_lossy()
        .into_owned()
}

/// `a.b=x,c!=y`: every term must hold; a missing field reads as "".
fn field_selector_matches(obj: &Value, selector: &str) -> bool {
    selector.split(',').filter(|t| !t.is_empty()).all(|term| {
        let (field, want, negate) = if let Some((f, v)) = term.split_once("!=") {
            (f, v, true)
        } else if let Some((f, v)) = term.split_once("==") {
            (f, v, false)
        } else if let Some((f, v)) = term.split_once('=') {
            (f, v, false)
        } else {
            return false;
        };
        // An Event's `source` label selects `source.component`.
        let field = if field == "source" {
            "source.component"
        } else {
            field
        };
        let pointer = format!("/{}", field.replace('.', "/"));
        let have = obj.pointer(&pointer).and_then(Value::as_str).unwrap_or("");
        (have == want) != negate
    })
}

// ----- Objects shaped like tests/fixtures/eso/ -----

/// An ExternalSecret builder; `Into<Value>` for [`FakeKube::put`].
#[derive(Clone)]
pub struct ExternalSecret(pub Value);

/// A new ExternalSecret (`v1`, store `SecretStore/vault-backend`, target named like itself)
/// with `spec.data` entries `(secretKey, remoteRef.key, remoteRef.property)`, no status yet.
pub fn external_secret(
    ns: &str,
    name: &str,
    data: &[(&str, &str, Option<&str>)],
) -> ExternalSecret {
    let data: Vec<Value> = data
        .iter()
        .map(|(secret_key, key, property)| {
            let mut remote = json!({"conversionStrategy": "Default", "decodingStrategy": "None", "key": key, "metadataPolicy": "None"});
            if let Some(p) = property {
                remote["property"] = json!(p);
            }
            json!({"remoteRef": remote, "secretKey": secret_key})
        })
        .collect();
    ExternalSecret(json!({
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "generation": 1,
            "name": name,
            "namespace": ns,
            "uid": format!("00000000-0000-4000-8000-{:012x}", name.len()),
        },
        "spec": {
            "data": data,
            "refreshInterval": "1h",
            "secretStoreRef": {"kind": "SecretStore", "name": "vault-backend"},
            "target": {"creationPolicy": "Owner", "deletionPolicy": "Retain", "name": name},
        },
    }))
}

impl ExternalSecret {
    /// Use this store.
    pub fn store(mut self, kind: &str, name: &str) -> Self {
        self.0["spec"]["secretStoreRef"] = json!({"kind": kind, "name": name});
        self
    }

    /// Name the target Secret in `spec.target.name`.
    pub fn target(mut self, name: &str) -> Self {
        self.0["spec"]["target"]["name"] = json!(name);
        self
    }

    /// Ready=True / `SecretSynced` at `at`, refreshed at `at`, bound to the target Secret.
    pub fn ready_synced(mut self, at: &str) -> Self {
        let target = self.0["spec"]["target"]["name"].clone();
        self.0["status"] = json!({
            "binding": {"name": target},
            "conditions": [ready_condition(true, "SecretSynced", "secret synced", at)],
            "refreshTime": at,
            "syncedResourceVersion": synced_resource_version(&self.0),
        });
        self
    }

    /// Ready=False / `SecretSyncedError` at `at` with ESO's generic message, never refreshed.
    pub fn sync_error(mut self, at: &str) -> Self {
        self.0["status"] = json!({
            "conditions": [ready_condition(false, "SecretSyncedError", "could not get secret data from provider", at)],
        });
        self
    }
}

impl From<ExternalSecret> for Value {
    fn from(es: ExternalSecret) -> Value {
        es.0
    }
}

/// A `Ready` condition.
pub fn ready_condition(status: bool, reason: &str, message: &str, at: &str) -> Value {
    json!({
        "lastTransitionTime": at,
        "message": message,
        "reason": reason,
        "status": if status { "True" } else { "False" },
        "type": "Ready",
    })
}

/// Set an object's `Ready` condition (for [`FakeKube::update`]). An ExternalSecret turned Ready
/// also gets what ESO's `markAsDone` writes with it: `syncedResourceVersion`, its generation
/// and a hash (`pkg/controllers/externalsecret/externalsecret_controller.go`).
pub fn set_ready(obj: &mut Value, status: bool, reason: &str, message: &str, at: &str) {
    obj["status"]["conditions"] = json!([ready_condition(status, reason, message, at)]);
    if status && obj["kind"] == "ExternalSecret" {
        obj["status"]["syncedResourceVersion"] = synced_resource_version(obj);
    }
}

/// `<metadata.generation>-<hash>`, as ESO writes `status.syncedResourceVersion`.
fn synced_resource_version(obj: &Value) -> Value {
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
    json!(format!(
        "{generation}-f47fe3c0b255b6dd8047cdffa772587bb829efe7a1cb70febeda2eb2"
    ))
}

/// A PushSecret (`v1alpha1`) pushing Secret `name` to `store`, with its Ready condition.
pub fn push_secret(
    ns: &str,
    name: &str,
    ready: bool,
    reason: &str,
    message: &str,
    at: &str,
) -> Value {
    json!({
        "apiVersion": "external-secrets.io/v1alpha1",
        "kind": "PushSecret",
        "metadata": {"name": name, "namespace": ns, "generation": 1},
        "spec": {
            "refreshInterval": "1h",
            "secretStoreRefs": [{"kind": "SecretStore", "name": "vault-backend"}],
            "selector": {"secret": {"name": name}},
            "data": [{"match": {"secretKey": "token", "remoteRef": {"remoteKey": format!("{ns}/{name}")}}}],
        },
        "status": {
            "conditions": [ready_condition(ready, reason, message, at)],
            "syncedPushSecrets": {"SecretStore/vault-backend": {}},
        },
    })
}

/// A Vault SecretStore (KV v2 at `secret/`) in `ns`, with its Ready condition.
pub fn secret_store(ns: &str, name: &str, ready: bool, reason: &str, message: &str) -> Value {
    json!({
        "apiVersion": "external-secrets.io/v1",
        "kind": "SecretStore",
        "metadata": {"name": name, "namespace": ns, "generation": 1},
        "spec": {"provider": {"vault": {
            "auth": {"kubernetes": {"mountPath": "kubernetes", "role": "eso"}},
            "path": "secret", "server": "http://openbao.openbao.svc:8200", "version": "v2",
        }}},
        "status": {"capabilities": "ReadWrite", "conditions": [ready_condition(ready, reason, message, "2026-01-01T00:00:00Z")]},
    })
}

/// A Vault ClusterSecretStore, with its Ready condition.
pub fn cluster_secret_store(name: &str, ready: bool, reason: &str, message: &str) -> Value {
    let mut s = secret_store("", name, ready, reason, message);
    s["kind"] = json!("ClusterSecretStore");
    s["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("namespace");
    s
}

/// An Opaque Secret with these `(key, value)` pairs (values base64-encoded as the API does).
pub fn secret(ns: &str, name: &str, data: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                json!(base64::engine::general_purpose::STANDARD.encode(v)),
            )
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": []},
        "type": "Opaque",
        "data": data,
    })
}

/// A core/v1 Event builder; `Into<Value>` for [`FakeKube::add_event`].
#[derive(Clone)]
pub struct Event(pub Value);

/// A core/v1 Event from the ESO controller about `kind` `ns/name`, seen once at
/// 2026-01-01T00:00:00Z until [`Event::seen`] says otherwise.
pub fn event(ns: &str, kind: &str, name: &str, type_: &str, reason: &str, message: &str) -> Event {
    let api_version = if kind == "Secret" {
        "v1".to_string()
    } else {
        format!("{ESO_GROUP}/v1")
    };
    Event(json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name, "namespace": ns},
        "reason": reason,
        "message": message,
        "source": {"component": "external-secrets"},
        "type": type_,
        "reportingComponent": "external-secrets",
        "reportingInstance": "",
    }))
    .seen("2026-01-01T00:00:00Z", 1)
}

impl Event {
    /// Last seen at `last_timestamp` (RFC 3339), `count` times in all.
    pub fn seen(mut self, last_timestamp: &str, count: i32) -> Self {
        let name = self.0["involvedObject"]["name"]
            .as_str()
            .unwrap_or("x")
            .to_string();
        let suffix: u64 = last_timestamp
            .bytes()
            .chain(self.0["message"].as_str().unwrap_or("").bytes())
            .fold(17, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        self.0["metadata"]["name"] = json!(format!("{name}.{suffix:x}"));
        self.0["metadata"]["creationTimestamp"] = json!(last_timestamp);
        self.0["firstTimestamp"] = json!(last_timestamp);
        self.0["lastTimestamp"] = json!(last_timestamp);
        self.0["count"] = json!(count);
        self
    }
}

impl From<Event> for Value {
    fn from(e: Event) -> Value {
        e.0
    }
}

/// The objects of a fixture file in `tests/fixtures/eso/` (multi-document YAML; where each
/// comes from: `tests/fixtures/eso/README.md`).
pub fn fixture(file: &str) -> Vec<Value> {
    fixture_in("eso", file)
}

/// The objects of a fixture file in `tests/fixtures/vso/`: a `kind: List` (the events files, as
/// kubectl prints them) gives its items, which the server then lists as an `EventList`.
pub fn vso_fixture(file: &str) -> Vec<Value> {
    fixture_in("vso", file)
        .into_iter()
        .flat_map(|v| match v["kind"].as_str() {
            Some("List") => v["items"].as_array().cloned().unwrap_or_default(),
            _ => vec![v],
        })
        .collect()
}

fn fixture_in(folder: &str, file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(folder)
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {} cannot be read: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| {
            let v: Value = serde::Deserialize::deserialize(doc)
                .unwrap_or_else(|e| panic!("fixture {file} is not YAML: {e}"));
            v
        })
        .collect()
}

/// The real spec's SecretStore (`secret-specs/core-service.toml`): `ask/vault-backend`, Valid,
/// reading the Vault at `vault_addr` (the one vault-seed talks to in the test: the real spec
/// declares no `cluster_vault_addr`).
pub fn real_spec_store(vault_addr: &str) -> Value {
    at_vault(
        secret_store("ask", "vault-backend", true, "Valid", "store validated"),
        vault_addr,
    )
}

/// `store` with its `spec.provider.vault.server` set to `server`.
pub fn at_vault(mut store: Value, server: &str) -> Value {
    store["spec"]["provider"]["vault"]["server"] = json!(server);
    store
}

/// One of the real spec's ExternalSecrets in `ask` for `auh1-dev`, reading one key:
/// `core-service-secret` (the API key salt) or `zitadel-secret` (the masterkey).
pub fn real_spec_external_secret(name: &str) -> ExternalSecret {
    let (key, secret) = match name {
        "core-service-secret" => ("SECURITY__API_KEY_SALT", "SECURITY__API_KEY_SALT"),
        "zitadel-secret" => ("masterkey", "ZITADEL_MASTERKEY"),
        _ => panic!("the real spec has no ExternalSecret `{name}`"),
    };
    let path = format!("ask/core-service/auh1-dev/{secret}");
    external_secret("ask", name, &[(key, &path, Some("password"))])
}

/// A self-made CA certificate (PEM), signing nothing: what OpenBao's kubernetes auth wants as
/// `kubernetes_ca_cert` outside a pod when the API server is this plain-http fake.
pub fn some_ca_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("CA key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.self_signed(&key).expect("CA").pem()
}

/// The one object of a fixture file in `tests/fixtures/argocd/` (where each comes from:
/// `tests/fixtures/argocd/README.md`): an Application or an argocd-cm, for [`FakeKube::put`].
pub fn argocd_fixture(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/argocd")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {} cannot be read: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("fixture {file} is not YAML: {e}"))
}

// ----- Workloads, pods and Secret metadata (the part `consumers`) -----

/// Workload kinds and pods: (kind, plural, API group, whether strategic merge patches apply).
const WORKLOADS: [(&str, &str, &str, bool); 7] = [
    ("Deployment", "deployments", "apps", true),
    ("ReplicaSet", "replicasets", "apps", true),
    ("StatefulSet", "statefulsets", "apps", true),
    ("DaemonSet", "daemonsets", "apps", true),
    ("CronJob", "cronjobs", "batch", true),
    ("Rollout", "rollouts", ARGOCD_GROUP, false),
    ("Pod", "pods", "", true),
];

fn workload_plural(kind: &str) -> Option<&'static str> {
    WORKLOADS.iter().find(|w| w.0 == kind).map(|w| w.1)
}

/// Lists of workloads and pods (with `labelSelector`), their PATCHes (strategic merge for the
/// built-in kinds, merge for the Rollout CRD, as the API server takes them; the body recorded),
/// and a Secret's metadata alone when the client asks for `PartialObjectMetadata`.
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn workload_route(req: &HttpRequest, segs: &[&str], st: &mut State) -> Option<(u16, Value)> {
    let (group, version, ns, plural, name) = match segs {
        ["api", "v1", "namespaces", ns, "secrets", name]
            if req.method == "GET"
                && req
                    .header("accept")
                    .is_some_and(|a| a.contains("as=PartialObjectMetadata")) =>
        {
            st.metadata_reads.push(format!("{ns}/{name}"));
            return Some(secret_metadata(st, ns, name));
        }
        ["api", "v1", "namespaces", ns, "pods"] => ("", "v1", *ns, "pods", None),
        ["apis", g, v, "namespaces", ns, plural] => (*g, *v, *ns, *plural, None),
        // A list across namespaces (`*` below stands for all).
        ["apis", g @ "apps", v, plural] if req.method == "GET" => (*g, *v, "*", *plural, None),
        ["apis", g, v, "namespaces", ns, plural, name] => (*g, *v, *ns, *plural, Some(*name)),
        _ => return None,
    };
    let w = WORKLOADS.iter().find(|w| w.1 == plural && w.2 == group)?;
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    match (req.method.as_str(), name) {
        ("GET", None) => {
            let selector = query_param(&req.query, "labelSelector").unwrap_or_default();
            let items: Vec<Value> = st
                .objects
                .iter()
                .filter(|((p, n, _), _)| p == plural && (ns == "*" || n.as_deref() == Some(ns)))
                .map(|(_, o)| {
                    let mut o = o.clone();
                    o["apiVersion"] = json!(api_version);
                    o
                })
                .filter(|o| label_selector_matches(&o["metadata"]["labels"], &selector))
                .collect();
            Some((
                200,
                json!({
                    "kind": format!("{}List", w.0), "apiVersion": api_version,
                    "metadata": {"resourceVersion": st.resource_version.to_string()},
                    "items": items,
                }),
            ))
        }
        ("GET", Some(name)) => Some(get_object(st, &api_version, plural, Some(ns), name)),
        ("PATCH", Some(name)) => {
            let content_type = req.header("content-type").unwrap_or_default().to_string();
            let body: Value = match serde_json::from_slice(&req.body) {
                Ok(b) => b,
                Err(e) => return Some((400, status_object(400, "BadRequest", &e.to_string()))),
            };
            st.patches.push(RecordedPatch {
                path: req.path.clone(),
                content_type: content_type.clone(),
                body: body.clone(),
            });
            let accepted: &[&str] = if w.3 {
                &[
                    "application/strategic-merge-patch+json",
                    "application/merge-patch+json",
                ]
            } else {
                &["application/merge-patch+json"]
            };
            if !accepted.contains(&content_type.as_str()) {
                return Some((415, status_object(415, "UnsupportedMediaType", &format!("the body of the request was in an unknown format - accepted media types include: {}", accepted.join(", ")))));
            }
            st.resource_version += 1;
            let rv = st.resource_version.to_string();
            let key = (plural.to_string(), Some(ns.to_string()), name.to_string());
            let Some(obj) = st.objects.get_mut(&key) else {
                let mut s = status_object(
                    404,
                    "NotFound",
                    &format!("{plural}.{group} \"{name}\" not found"),
                );
                s["details"] = json!({"name": name, "group": group, "kind": plural});
                return Some((404, s));
            };
            // The restart patches only set map keys, where both kinds of patch agree.
            merge_patch(obj, &body);
            obj["metadata"]["resourceVersion"] = json!(rv);
            let mut out = obj.clone();
            out["apiVersion"] = json!(api_version);
            Some((200, out))
        }
        _ => Some((
            405,
            status_object(405, "MethodNotAllowed", "method not allowed"),
        )),
    }
}

/// A Secret as `PartialObjectMetadata`: its metadata, never its data.
fn secret_metadata(st: &State, ns: &str, name: &str) -> (u16, Value) {
    let key = (
        "secrets".to_string(),
        Some(ns.to_string()),
        name.to_string(),
    );
    match st.objects.get(&key) {
        Some(obj) => (
            200,
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}),
        ),
        None => not_found_object("secrets", name),
    }
}

/// A label selector (`a=b,c in (d,e),!f,g,h notin (i)`) against `labels`.
fn label_selector_matches(labels: &Value, selector: &str) -> bool {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&selector[start..]);
    let label = |k: &str| labels.get(k.trim()).and_then(Value::as_str);
    let set = |v: &str| -> Vec<String> {
        v.trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|s| s.trim().to_string())
            .collect()
    };
    terms.iter().filter(|t| !t.trim().is_empty()).all(|t| {
        if let Some((k, v)) = t.split_once(" notin ") {
            !label(k).is_some_and(|l| set(v).iter().any(|s| s == l))
        } else if let Some((k, v)) = t.split_once(" in ") {
            label(k).is_some_and(|l| set(v).iter().any(|s| s == l))
        } else if let Some((k, v)) = t.split_once("!=") {
            label(k) != Some(v.trim())
        } else if let Some((k, v)) = t.split_once('=') {
            label(k.trim_end_matches('=')) == Some(v.trim())
        } else if let Some(k) = t.trim().strip_prefix('!') {
            label(k).is_none()
        } else {
            label(t).is_some()
        }
    })
}

/// A workload of `kind` (`Deployment`, `StatefulSet`, `DaemonSet`, `Rollout`; `CronJob` puts
/// `pod` under `spec.jobTemplate`) selecting pods labelled `app=<name>`, with `pod` as its pod
/// template's spec, and the metadata and status its controller writes (the uid the API server
/// gives; a Deployment's `deployment.kubernetes.io/revision` annotation, kubernetes v1.34
/// `pkg/controller/deployment/util/deployment_util.go`, `SetDeploymentRevision`; a
/// StatefulSet's `status.updateRevision`, `pkg/controller/statefulset/stateful_set_control.go`;
/// a Rollout's `status.currentPodHash`, argo-rollouts `rollout/sync.go`), so that
/// [`FakeKube::run`] can give it pods as those controllers own them.
pub fn workload(kind: &str, ns: &str, name: &str, pod: Value) -> Value {
    let (_, _, group, _) = WORKLOADS
        .iter()
        .find(|w| w.0 == kind)
        .expect("a workload kind");
    let api_version = match *group {
        "apps" | "batch" => format!("{group}/v1"),
        g => format!("{g}/v1alpha1"),
    };
    let template = json!({"metadata": {"labels": {"app": name}}, "spec": pod});
    let spec = if kind == "CronJob" {
        json!({"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}})
    } else {
        json!({"selector": {"matchLabels": {"app": name}}, "template": template})
    };
    let mut w = json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": ns, "annotations": {}, "uid": uid_of(kind, name)},
        "spec": spec,
    });
    match kind {
        "Deployment" => {
            w["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1")
        }
        "StatefulSet" => w["status"] = json!({"updateRevision": format!("{name}-7d9f8b6c5d")}),
        "Rollout" => w["status"] = json!({"currentPodHash": "6b7c9d8f5"}),
        _ => {}
    }
    w
}

/// The uid the fake API server gives an object of `kind` named `name`.
pub fn uid_of(kind: &str, name: &str) -> String {
    let n = format!("{kind}/{name}")
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    format!("00000000-0000-4000-8000-{:012x}", n & 0xffff_ffff_ffff)
}

impl FakeKube {
    /// A running pod `pod` of `workload` (from [`workload`]), its container `app` started at
    /// `started`, owned as the controllers own theirs: a Deployment's or a Rollout's through
    /// its current ReplicaSet (put here too, with the revision or hash its owner names:
    /// kubernetes `pkg/controller/deployment/sync.go`, `getNewReplicaSet`), a StatefulSet's
    /// and a DaemonSet's directly (`pkg/controller/controller_ref_manager.go`), labelled as
    /// they label them. Its status is the kubelet's (`pkg/kubelet/kubelet_pods.go`,
    /// `generateAPIPodStatus`): `startTime` when the kubelet took the pod, which the image
    /// pull comes after, and each container's `state.running.startedAt`.
    pub fn run(&self, workload: &Value, pod: &str, started: &str) {
        self.run_accepted(workload, pod, started, started);
    }

    /// As [`FakeKube::run`], the pod taken by the kubelet at `accepted` and its container
    /// running since `started`.
    pub fn run_accepted(&self, workload: &Value, pod: &str, accepted: &str, started: &str) {
        if let Some(rs) = current_replica_set(workload) {
            self.put(rs);
        }
        self.put(running_pod(workload, pod, accepted, started));
    }
}

/// The pod [`FakeKube::run`] serves; a Deployment's or a Rollout's ReplicaSet is put first
/// (see there).
pub fn running_pod(workload: &Value, pod: &str, accepted: &str, started: &str) -> Value {
    let kind = workload["kind"].as_str().expect("a kind");
    let name = workload["metadata"]["name"].as_str().expect("a name");
    let ns = workload["metadata"]["namespace"]
        .as_str()
        .expect("a namespace");
    let mut labels = json!({"app": name});
    let owner = match kind {
        "Deployment" | "Rollout" => {
            let (hash_label, hash) = if kind == "Deployment" {
                ("pod-template-hash", "5d8f7c9b6")
            } else {
                ("rollouts-pod-template-hash", "6b7c9d8f5")
            };
            labels[hash_label] = json!(hash);
            let rs = format!("{name}-{hash}");
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": uid_of("ReplicaSet", &rs), "controller": true, "blockOwnerDeletion": true})
        }
        _ => {
            let revision = workload
                .pointer("/status/updateRevision")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{name}-6c8d9f7b5"), str::to_string);
            labels["controller-revision-hash"] = json!(revision);
            json!({"apiVersion": workload["apiVersion"], "kind": kind, "name": name, "uid": workload["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true})
        }
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod, "namespace": ns, "labels": labels, "ownerReferences": [owner], "uid": uid_of("Pod", pod)},
        "spec": {"containers": [{"name": "app", "image": "app"}]},
        "status": {
            "phase": "Running",
            "startTime": accepted,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}],
            "containerStatuses": [{
                "name": "app", "image": "app", "imageID": "", "ready": true, "restartCount": 0, "started": true,
                "state": {"running": {"startedAt": started}},
            }],
        },
    })
}

/// A running pod labelled `app=<app>` that no workload of the tests owns (a bare pod, or
/// one of another owner sharing the labels), started at `started`.
pub fn pod_of(ns: &str, app: &str, name: &str, started: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}, "uid": uid_of("Pod", name)},
        "spec": {"containers": [{"name": "app", "image": "app"}]},
        "status": {
            "phase": "Running", "startTime": started,
            "containerStatuses": [{"name": "app", "image": "app", "imageID": "", "ready": true, "restartCount": 0, "started": true, "state": {"running": {"startedAt": started}}}],
        },
    })
}

/// The ReplicaSet a Deployment's or a Rollout's pods of [`running_pod`] are owned by: its
/// owner's current one (the Deployment's revision, the Rollout's `currentPodHash`).
pub fn current_replica_set(workload: &Value) -> Option<Value> {
    let kind = workload["kind"].as_str()?;
    let name = workload["metadata"]["name"].as_str()?;
    let ns = workload["metadata"]["namespace"].as_str()?;
    let (hash_label, hash) = match kind {
        "Deployment" => ("pod-template-hash", "5d8f7c9b6"),
        "Rollout" => ("rollouts-pod-template-hash", "6b7c9d8f5"),
        _ => return None,
    };
    let rs = format!("{name}-{hash}");
    let mut obj = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": rs, "namespace": ns, "uid": uid_of("ReplicaSet", &rs),
            "labels": {"app": name, hash_label: hash},
            "annotations": {},
            "ownerReferences": [{"apiVersion": workload["apiVersion"], "kind": kind, "name": name, "uid": workload["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {"selector": {"matchLabels": {"app": name, hash_label: hash}}},
    });
    if kind == "Deployment" {
        obj["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1");
    }
    Some(obj)
}

/// `secret` with a `managedFields` entry of `manager` owning its `data` keys, stamped `at`.
pub fn with_data_manager(mut secret: Value, manager: &str, at: &str) -> Value {
    let keys: serde_json::Map<String, Value> = secret["data"]
        .as_object()
        .map(|d| d.keys().map(|k| (format!("f:{k}"), json!({}))).collect())
        .unwrap_or_default();
    secret["metadata"]["managedFields"] = json!([
        {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": "2020-01-01T00:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}},
        {"manager": manager, "operation": "Update", "apiVersion": "v1", "time": at,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": keys, "f:type": {}}},
    ]);
    secret
}

// ----- VSO objects built in tests (the files are in tests/fixtures/vso/, README.md there) -----

/// The destination Secret VSO v1.4.1 writes for the VaultStaticSecret `vss` (with
/// `destination.create: true`), holding `data` (`(key, value)`, base64-encoded as the API
/// does), written at `at`. As `helpers/secrets.go` `SyncSecret` builds it: type
/// `destination.type` or `Opaque`; labels `destination.labels` then `OwnerLabelsForObj` (the
/// three `OwnerLabels` and `secrets.hashicorp.com/vso-ownerRefUID`); annotations
/// `destination.annotations`; one ownerReference with `apiVersion`, `kind`, `name` and `uid`
/// only (no `controller`, no `blockOwnerDeletion`). VSO sets no field manager and no user agent
/// (`main.go`), so client-go's default user agent names the binary (`rest/config.go`
/// `DefaultKubernetesUserAgent`, the image's entrypoint `/vault-secrets-operator`), and the API
/// server records its part before the first `/` as the manager (apiserver v0.36.2
/// `pkg/endpoints/handlers/create.go` `managerOrUserAgent`): `vault-secrets-operator`, an
/// `Update` owning every field the Secret was created with.
pub fn vso_destination_secret(vss: &Value, data: &[(&str, &str)], at: &str) -> Value {
    let s = |p: &str| vss.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let (ns, owner, uid) = (
        s("/metadata/namespace"),
        s("/metadata/name"),
        s("/metadata/uid"),
    );
    let mut labels = vss
        .pointer("/spec/destination/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    for (k, v) in [
        ("app.kubernetes.io/managed-by", "hashicorp-vso"),
        ("app.kubernetes.io/name", "vault-secrets-operator"),
        ("app.kubernetes.io/component", "secret-sync"),
        ("secrets.hashicorp.com/vso-ownerRefUID", uid),
    ] {
        labels[k] = json!(v);
    }
    let mut secret = secret(ns, s("/spec/destination/name"), data);
    let type_ = vss
        .pointer("/spec/destination/type")
        .and_then(Value::as_str)
        .unwrap_or("Opaque");
    secret["type"] = json!(type_);
    secret["metadata"]["creationTimestamp"] = json!(at);
    secret["metadata"]["uid"] = json!(uid_of("Secret", s("/spec/destination/name")));
    secret["metadata"]["labels"] = labels.clone();
    if let Some(a) = vss.pointer("/spec/destination/annotations") {
        secret["metadata"]["annotations"] = a.clone();
    }
    secret["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "secrets.hashicorp.com/v1beta1", "kind": "VaultStaticSecret",
        "name": owner, "uid": uid,
    }]);
    let owned = |m: &Value| -> Value {
        let mut o = serde_json::Map::from_iter([(".".to_string(), json!({}))]);
        for k in m.as_object().into_iter().flat_map(|m| m.keys()) {
            o.insert(format!("f:{k}"), json!({}));
        }
        Value::Object(o)
    };
    let mut metadata = json!({
        "f:labels": owned(&labels),
        "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{uid}\"}}"): {}},
    });
    if let Some(a) = secret["metadata"].get("annotations") {
        metadata["f:annotations"] = owned(a);
    }
    secret["metadata"]["managedFields"] = json!([{
        "manager": "vault-secrets-operator", "operation": "Update", "apiVersion": "v1",
        "time": at, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": owned(&secret["data"]), "f:metadata": metadata, "f:type": {}},
    }]);
    secret
}

/// A core/v1 Event VSO v1.4.1 records about the VaultStaticSecret `vss`, last seen at `at`,
/// `count` times: through controller-runtime's `GetEventRecorderFor("VaultStaticSecret")`
/// (`main.go`), so `source.component` and `reportingComponent` are `VaultStaticSecret` and
/// `reportingInstance` is empty (client-go v0.36.2 `tools/record/event.go` `makeEvent`); named
/// `<object>.<hex of UnixNano>` (`tools/record/util/util.go`). As the files
/// `tests/fixtures/vso/events-*.yaml`.
pub fn vso_event(
    vss: &Value,
    type_: &str,
    reason: &str,
    message: &str,
    at: &str,
    count: i32,
) -> Value {
    let mut e = event(
        vss["metadata"]["namespace"].as_str().unwrap_or_default(),
        "VaultStaticSecret",
        vss["metadata"]["name"].as_str().unwrap_or_default(),
        type_,
        reason,
        message,
    )
    .seen(at, count)
    .0;
    e["involvedObject"]["apiVersion"] = json!("secrets.hashicorp.com/v1beta1");
    e["involvedObject"]["uid"] = vss["metadata"]["uid"].clone();
    e["source"] = json!({"component": "VaultStaticSecret"});
    e["reportingComponent"] = json!("VaultStaticSecret");
    e["eventTime"] = Value::Null;
    e
}

/// The labels VSO v1.4.1's Helm chart gives what it installs in its release namespace
/// (`chart/templates/_helpers.tpl` `vso.chart.labels`, release `vault-secrets-operator`, no
/// `nameOverride`), with `control-plane`/`app.kubernetes.io/component` of the controller
/// (`chart/templates/deployment.yaml`, `default-vault-connection.yaml`).
fn vso_chart_labels() -> Value {
    json!({
        "control-plane": "controller-manager",
        "app.kubernetes.io/component": "controller-manager",
        "helm.sh/chart": "vault-secrets-operator-1.4.1",
        "app.kubernetes.io/name": "vault-secrets-operator",
        "app.kubernetes.io/instance": "vault-secrets-operator",
        "app.kubernetes.io/version": "1.4.1",
        "app.kubernetes.io/managed-by": "Helm",
    })
}

/// VSO v1.4.1's controller Deployment as its Helm chart makes it in namespace `ns` (the release
/// namespace; `chart/templates/deployment.yaml`): named `<fullname>-controller-manager`, the
/// chart's labels, two containers (`kube-rbac-proxy`, and `manager` running
/// `/vault-secrets-operator` with the downward-API `OPERATOR_POD_NAME`/`OPERATOR_POD_UID`).
/// VSO's `OperatorNamespace` is its pod's namespace (`common/common.go` `init`).
pub fn vso_controller_deployment(ns: &str) -> Value {
    let selector = json!({
        "control-plane": "controller-manager",
        "app.kubernetes.io/name": "vault-secrets-operator",
        "app.kubernetes.io/instance": "vault-secrets-operator",
    });
    let field = |p: &str| json!({"fieldRef": {"fieldPath": p}});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "vault-secrets-operator-controller-manager", "namespace": ns,
            "labels": vso_chart_labels(),
            "uid": uid_of("Deployment", &format!("{ns}/vault-secrets-operator-controller-manager")),
            "annotations": {"deployment.kubernetes.io/revision": "1"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector, "annotations": {"kubectl.kubernetes.io/default-container": "manager"}},
                "spec": {"containers": [
                    {"name": "kube-rbac-proxy", "image": "quay.io/brancz/kube-rbac-proxy:v0.18.1",
                     "args": ["--secure-listen-address=0.0.0.0:8443", "--upstream=http://127.0.0.1:8080/", "--logtostderr=true", "--v=0"]},
                    {"name": "manager", "image": "hashicorp/vault-secrets-operator:1.4.1",
                     "command": ["/vault-secrets-operator"],
                     "args": ["--health-probe-bind-address=:8081", "--metrics-bind-address=127.0.0.1:8080", "--leader-elect"],
                     "env": [
                        {"name": "OPERATOR_POD_NAME", "valueFrom": field("metadata.name")},
                        {"name": "OPERATOR_POD_UID", "valueFrom": field("metadata.uid")},
                        {"name": "KUBERNETES_CLUSTER_DOMAIN", "value": "cluster.local"},
                     ]},
                ]},
            },
        },
        "status": deployment_ready_status(1, "vault-secrets-operator-controller-manager-6d9f7c9b8d"),
    })
}

/// The `status` the Deployment controller writes once `replicas` pods of the ReplicaSet
/// `replica_set` are ready and available (kubernetes v1.34 `pkg/controller/deployment/sync.go`
/// `calculateStatus`: the counts and the `Available` condition `MinimumReplicasAvailable`;
/// `progress.go` `syncRolloutStatus`: `Progressing` with `NewReplicaSetAvailable`).
pub fn deployment_ready_status(replicas: u64, replica_set: &str) -> Value {
    json!({
        "observedGeneration": 1,
        "replicas": replicas, "updatedReplicas": replicas,
        "readyReplicas": replicas, "availableReplicas": replicas,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability.",
             "lastUpdateTime": "2026-08-18T09:50:40Z", "lastTransitionTime": "2026-08-18T09:50:40Z"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": format!("ReplicaSet \"{replica_set}\" has successfully progressed."),
             "lastUpdateTime": "2026-08-18T09:50:40Z", "lastTransitionTime": "2026-08-18T09:50:12Z"},
        ],
    })
}

/// The `status` of a Deployment whose one pod is not ready (its readiness probe fails): the
/// controller counts it in `replicas` and `unavailableReplicas` and writes no `readyReplicas`
/// (omitted when zero), `Available` false (`sync.go` `calculateStatus`).
pub fn deployment_unready_status() -> Value {
    json!({
        "observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "unavailableReplicas": 1,
        "conditions": [
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
             "message": "Deployment does not have minimum availability.",
             "lastUpdateTime": "2026-08-18T09:50:12Z", "lastTransitionTime": "2026-08-18T09:50:12Z"},
        ],
    })
}

/// Reloader's Deployment as its Helm chart makes it for release `reloader` in namespace `ns`
/// (stakater/Reloader v1.4.21, chart 2.2.15, `deployments/kubernetes/chart/reloader/templates/deployment.yaml`
/// and `_helpers.tpl` `reloader-labels.chart`): named `reloader-reloader`, labels
/// `app: reloader-reloader` and `app.kubernetes.io/name: reloader`, one container running
/// `ghcr.io/stakater/reloader:v1.4.21` with `RELOADER_NAMESPACE`/`RELOADER_DEPLOYMENT_NAME`,
/// and `KUBERNETES_NAMESPACE` from the pod's namespace unless `reloader.watchGlobally` (default
/// true) or `reloader.namespaces`; `args` as the chart renders its values (`--namespaces-to-ignore=…`,
/// `--namespace-selector="…"`). Ready, as the Deployment controller writes it.
pub fn reloader_deployment(ns: &str, args: &[&str], watch_globally: bool) -> Value {
    let field = |p: &str| json!({"fieldRef": {"fieldPath": p}});
    let resource = |r: &str| json!({"resourceFieldRef": {"resource": r, "divisor": "1"}});
    let mut env = vec![
        json!({"name": "GOMAXPROCS", "valueFrom": resource("limits.cpu")}),
        json!({"name": "GOMEMLIMIT", "valueFrom": resource("limits.memory")}),
    ];
    if !watch_globally {
        env.push(json!({"name": "KUBERNETES_NAMESPACE", "valueFrom": field("metadata.namespace")}));
    }
    env.push(json!({"name": "RELOADER_NAMESPACE", "valueFrom": field("metadata.namespace")}));
    env.push(json!({"name": "RELOADER_DEPLOYMENT_NAME", "value": "reloader-reloader"}));
    let selector = json!({"app": "reloader-reloader", "release": "reloader"});
    let labels = json!({
        "app": "reloader-reloader", "release": "reloader",
        "app.kubernetes.io/name": "reloader", "app.kubernetes.io/instance": "reloader",
        "helm.sh/chart": "reloader-2.2.15", "chart": "reloader-2.2.15", "heritage": "Helm",
        "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/version": "v1.4.20",
    });
    let mut container = json!({
        "image": "ghcr.io/stakater/reloader:v1.4.20", "imagePullPolicy": "IfNotPresent",
        "name": "reloader-reloader", "env": env,
        "ports": [{"name": "http", "containerPort": 9090}],
        "livenessProbe": {"httpGet": {"path": "/live", "port": "http"}},
        "readinessProbe": {"httpGet": {"path": "/metrics", "port": "http"}},
    });
    if !args.is_empty() {
        container["args"] = json!(args);
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "reloader-reloader", "namespace": ns, "labels": labels,
            "annotations": {"meta.helm.sh/release-namespace": ns, "meta.helm.sh/release-name": "reloader",
                            "deployment.kubernetes.io/revision": "1"},
            "uid": uid_of("Deployment", &format!("{ns}/reloader-reloader")),
        },
        "spec": {
            "replicas": 1, "revisionHistoryLimit": 2,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], "serviceAccountName": "reloader-reloader"},
            },
        },
        "status": deployment_ready_status(1, "reloader-reloader-7f6b9c8d5c"),
    })
}

/// A Namespace `name` with `labels`, as the API server serves it (the namespace controller's
/// `kubernetes.io/metadata.name` label, `status.phase: Active`).
pub fn namespace(name: &str, labels: Value) -> Value {
    let mut all = json!({"kubernetes.io/metadata.name": name});
    for (k, v) in labels.as_object().into_iter().flatten() {
        all[k] = v.clone();
    }
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": all, "uid": uid_of("Namespace", name)},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

/// The VaultConnection `default` VSO v1.4.1's Helm chart makes in namespace `ns` with
/// `defaultVaultConnection.enabled` (`chart/templates/default-vault-connection.yaml`: the
/// chart's labels plus `component: controller-manager`, `spec.address`, `skipTLSVerify`),
/// with the status VSO's controller then writes (as `tests/fixtures/vso/vaultconnection.yaml`,
/// `controllers/vaultconnection_controller.go`).
pub fn vso_default_connection(ns: &str, address: &str) -> Value {
    let mut c = vso_fixture("vaultconnection.yaml").remove(0);
    let mut labels = vso_chart_labels();
    labels["component"] = json!("controller-manager");
    c["metadata"] = json!({
        "name": "default", "namespace": ns, "labels": labels, "generation": 1,
        "creationTimestamp": "2026-08-18T09:50:12Z",
        "finalizers": ["vaultconnection.secrets.hashicorp.com/finalizer"],
        "uid": uid_of("VaultConnection", &format!("{ns}/default")),
    });
    c["spec"] = json!({"address": address, "skipTLSVerify": false});
    for cond in c["status"]["conditions"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if let Some(m) = cond["message"].as_str() {
            if let Some((head, _)) = m.split_once("address=") {
                cond["message"] = json!(format!("{head}address={address}"));
            }
        }
    }
    c
}

// ----- Lists: every collection the fake serves, paged -----

/// Whether the fake lists `plural` in `group`/`version` (ESO's follow the versions served,
/// [`eso_resources`]; cluster-scoped kinds are read by name only).
fn listable(st: &State, group: &str, version: &str, plural: &str) -> bool {
    match (group, version) {
        ("", "v1") => matches!(plural, "secrets" | "configmaps" | "pods"),
        (ESO_GROUP, v) => eso_resources(st, v).iter().any(|r| r.0 == plural && r.2),
        (VSO_GROUP, "v1beta1") => VSO_RESOURCES.iter().any(|r| r.0 == plural),
        (ARGOCD_GROUP, "v1alpha1") => matches!(plural, "applications" | "rollouts"),
        ("apps", "v1") => matches!(
            plural,
            "deployments" | "replicasets" | "statefulsets" | "daemonsets"
        ),
        ("batch", "v1") => plural == "cronjobs",
        _ => false,
    }
}

/// A GET of a collection, in a namespace or across them: the objects the label and field
/// selectors match, in name order, paged as the API server pages them (`limit`, `continue`; a
/// token of a list the store compacted past is a 410 `Expired`), as a
/// `PartialObjectMetadataList` when the client asks for one.
fn collection(req: &HttpRequest, segs: &[&str], st: &mut State) -> Option<(u16, Value)> {
    let (group, version, ns, plural) = match segs {
        ["api", "v1", "namespaces", ns, plural] => ("", "v1", Some(*ns), *plural),
        ["api", "v1", plural] => ("", "v1", None, *plural),
        ["apis", g, v, "namespaces", ns, plural] => (*g, *v, Some(*ns), *plural),
        ["apis", g, v, plural] => (*g, *v, None, *plural),
        _ => return None,
    };
    if req.method != "GET" || !st.installed.serves(group) || !listable(st, group, version, plural) {
        return None;
    }
    let fields = match field_selector(plural, &req.query) {
        Ok(s) => s,
        Err(refused) => return Some(refused),
    };
    let labels = query_param(&req.query, "labelSelector").unwrap_or_default();
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let from = (plural.to_string(), ns.map(str::to_string), String::new());
    let items: Vec<&Value> = st
        .objects
        .range(from..)
        .take_while(|((p, n, _), _)| p == plural && (ns.is_none() || n.as_deref() == ns))
        .map(|(_, o)| o)
        .filter(|o| label_selector_matches(&o["metadata"]["labels"], &labels))
        .filter(|o| field_selector_matches(o, &fields))
        .collect();
    let paging = Paging {
        resource_version: st.resource_version,
        page_cap: st.page_cap,
        compacted: &mut st.compacted,
        expire_after: &mut st.expire_after,
    };
    let (range, next) = match page(paging, &req.query, items.len()) {
        Ok(p) => p,
        Err(gone) => return Some(gone),
    };
    let as_metadata = req
        .header("accept")
        .is_some_and(|a| a.contains("as=PartialObjectMetadataList"));
    let items: Vec<Value> = items[range]
        .iter()
        .map(|o| {
            if as_metadata {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]})
            } else {
                let mut o = (*o).clone();
                o["apiVersion"] = json!(api_version);
                o
            }
        })
        .collect();
    let mut metadata = json!({"resourceVersion": st.resource_version.to_string()});
    if let Some(next) = next {
        metadata["continue"] = json!(next);
    }
    let (kind, api_version) = if as_metadata {
        ("PartialObjectMetadataList", "meta.k8s.io/v1".to_string())
    } else {
        ("List", api_version)
    };
    Some((
        200,
        json!({"kind": kind, "apiVersion": api_version, "metadata": metadata, "items": items}),
    ))
}

/// Which of a list's `total` items the query's page holds, and the token of the next page; the
/// 410 of an expired token (`apierrors.NewResourceExpired`, apiserver `pkg/storage/etcd3/errors.go`
/// `inconsistentContinue`).
fn page(
    st: Paging<'_>,
    query: &str,
    total: usize,
) -> Result<(std::ops::Range<usize>, Option<String>), (u16, Value)> {
    let limit = query_param(query, "limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let (rv, start) = match query_param(query, "continue").filter(|c| !c.is_empty()) {
        None => (st.resource_version, 0),
        Some(token) => {
            let Some((rv, start)) = decode_continue(&token) else {
                return Err((
                    400,
                    status_object(400, "BadRequest", "continue key is not valid"),
                ));
            };
            if rv <= *st.compacted {
                return Err((410, status_object(410, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")));
            }
            (rv, start.min(total))
        }
    };
    // Without `limit` the whole list: a server pages only when asked to.
    let size = limit.map(|l| st.page_cap.map_or(l, |c| l.min(c)));
    let Some(size) = size.filter(|s| start + s < total) else {
        return Ok((start..total, None));
    };
    match *st.expire_after {
        Some(0) => {
            *st.compacted = rv;
            *st.expire_after = None;
        }
        Some(left) => *st.expire_after = Some(left - 1),
        None => {}
    }
    Ok((start..start + size, Some(encode_continue(rv, start + size))))
}

/// What paging reads and changes of the server's state.
struct Paging<'a> {
    resource_version: u64,
    page_cap: Option<usize>,
    compacted: &'a mut u64,
    expire_after: &'a mut Option<usize>,
}

/// A continue token: the list's resource version and where the next page starts, base64 of
/// JSON as the API server's (opaque to clients).
fn encode_continue(rv: u64, start: usize) -> String {
    base64::engine::general_purpose::STANDARD
        .encode(json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string())
}

fn decode_continue(token: &str) -> Option<(u64, usize)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(token)
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    Some((
        v["rv"].as_u64()?,
        usize::try_from(v["start"].as_u64()?).ok()?,
    ))
}
