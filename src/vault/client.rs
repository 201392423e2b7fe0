//! The HTTP client (reqwest with rustls), built here, and the requests sent on it with the token.
//!
//! The token is held as a [`SecretString`], exposed only while the header is built, and
//! `X-Vault-Token` is marked sensitive so no HTTP layer prints it. The client:
//!
//! - connects to the one parsed address URL ([`super::address`]), the one the plain-http check
//!   was made on; system proxies are not used for plain http to loopback (as Go's
//!   `ProxyFromEnvironment`, which the vault CLI uses, never proxies loopback);
//! - follows no redirect: a 3xx is an error naming where it pointed. The vault CLI follows one
//!   (`api/client.go`, `RawRequestWithContext`: 301/302/307 once, refusing only a downgrade to
//!   http) and sends the token and body along, wherever it points;
//! - gives up on an attempt that gets no answer within the answer timeout, retries transient
//!   failures with capped, jittered backoff, says so on stderr, and bounds one request with its
//!   retries by `--give-up-after`;
//! - reads at most [`MAX_BODY`] of an answer;
//! - shows server text (its `errors`) only through [`crate::base::redact::redact`].
//!
//! vaultrs is not used: it cannot be told not to follow redirects, it reads a `VAULT_CACERT` that
//! holds no PEM as no CA at all, and its request path keeps the token in a plain `String`.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use reqwest::{Method, StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};

use super::connect::Settings;
use super::VaultError;

/// Retries of a transient failure, after the first attempt.
pub const MAX_RETRIES: u32 = 5;
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_CAP: Duration = Duration::from_secs(3);

/// The most of one answer vault-seed reads: 8 MiB. Vault's answers here are small (a token
/// lookup, a secret, a policy); the largest is a folder's LIST, about 40 bytes per key, so this
/// holds some 200,000 keys in one folder.
pub const MAX_BODY: usize = 8 * 1024 * 1024;

/// Retry notices on stderr: at most one per this interval (requests run concurrently).
const NOTICE_EVERY: Duration = Duration::from_secs(1);

/// A Vault client for one address and token.
pub struct Vault {
    http: reqwest::Client,
    /// `<addr>/v1/`: the parsed address URL with `v1/` added to its path.
    base: Url,
    auth: Auth,
    addr: String,
    answer_timeout: Duration,
    client_timeout: Duration,
    give_up_after: Duration,
    /// When a retry was last announced on stderr.
    last_notice: Mutex<Option<Instant>>,
    /// HTTP requests sent, retries included: `-v` reports it, `bench/run` reads it.
    requests: AtomicU64,
}

struct Auth {
    token: SecretString,
    namespace: Option<HeaderValue>,
}

impl Auth {
    fn new(token: &SecretString, namespace: Option<&str>) -> Result<Auth, VaultError> {
        if HeaderValue::from_str(token.expose_secret()).is_err() {
            return Err(VaultError::Config {
                message: "the Vault token has characters not allowed in an HTTP header".into(),
                help: "check VAULT_TOKEN or the token file for stray characters".into(),
            });
        }
        let namespace = namespace
            .map(|ns| {
                HeaderValue::from_str(ns).map_err(|_| VaultError::Config {
                    message: format!(
                        "the Vault namespace `{ns}` has characters not allowed in an HTTP header"
                    ),
                    help: "check VAULT_NAMESPACE".into(),
                })
            })
            .transpose()?;
        Ok(Auth {
            token: SecretString::from(token.expose_secret().to_string()),
            namespace,
        })
    }

    /// The headers of every request: the token (sensitive), the namespace, `X-Vault-Request`.
    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::with_capacity(3);
        headers.insert("X-Vault-Request", HeaderValue::from_static("true"));
        // Checked in `Auth::new`: cannot fail. A client made to log in has no token, and sends
        // no header.
        let token = Some(self.token.expose_secret()).filter(|t| !t.is_empty());
        if let Some(Ok(mut token)) = token.map(HeaderValue::from_str) {
            token.set_sensitive(true);
            headers.insert("X-Vault-Token", token);
        }
        if let Some(ns) = &self.namespace {
            headers.insert("X-Vault-Namespace", ns.clone());
        }
        headers
    }
}

/// One request to Vault's HTTP API: vaultrs has no endpoint that keeps KV values out of plain
/// `String`s, so KV bodies are built from [`SecretString`]s and sent as bytes.
pub(crate) struct Call {
    pub method: Method,
    /// Path under `/v1/`, segments separated by `/` (each is percent-encoded; `.` and `..` are
    /// dropped, so a path cannot climb out of `/v1/`).
    pub path: String,
    pub body: Option<Vec<u8>>,
    /// A KV v2 version to read (`?version=N`), the one query vault-seed sends.
    pub version: Option<u64>,
}

impl Call {
    /// `GET /v1/<path>`.
    pub fn get(path: &str) -> Call {
        Call {
            method: Method::GET,
            path: path.to_string(),
            body: None,
            version: None,
        }
    }

    /// `GET /v1/<path>?version=<version>`: one KV v2 version.
    pub fn get_version(path: &str, version: u64) -> Call {
        Call {
            version: Some(version),
            ..Call::get(path)
        }
    }

    /// `LIST /v1/<path>` (Vault's own verb).
    pub fn list(path: &str) -> Call {
        Call {
            method: Method::from_bytes(b"LIST").unwrap_or(Method::GET),
            ..Call::get(path)
        }
    }

    /// `POST /v1/<path>` with a JSON body.
    pub fn post(path: &str, body: Vec<u8>) -> Call {
        Call {
            method: Method::POST,
            body: Some(body),
            ..Call::get(path)
        }
    }

    fn url(&self, base: &Url) -> Url {
        let mut url = base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().extend(self.path.split('/'));
        }
        if let Some(v) = self.version {
            url.query_pairs_mut().append_pair("version", &v.to_string());
        }
        url
    }
}

/// Vault's answer to a login ([`Vault::send_login`]): its status; the body when it succeeded
/// (it holds the new token: parse it straight into a `SecretString` and wipe it); else Vault's
/// `errors`, redacted and capped.
pub(crate) struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The body of a 2xx answer; empty otherwise.
    pub body: Vec<u8>,
    /// Vault's `errors` of a refusal, as shown.
    pub errors: Vec<String>,
}

/// Vault's answer to a request that succeeded or found nothing.
pub(crate) enum Reply {
    /// 2xx with its body (possibly empty, for 204).
    Ok(Vec<u8>),
    /// 404 with its body: KV v2 puts a deleted version's metadata there.
    NotFound(Vec<u8>),
}

fn method_name(m: &Method) -> &'static str {
    match m.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "LIST" => "LIST",
        "HEAD" => "HEAD",
        "PATCH" => "PATCH",
        _ => "REQUEST",
    }
}

impl Vault {
    /// Build a client. Does not contact Vault.
    pub fn new(settings: &Settings) -> Result<Vault, VaultError> {
        let auth = Auth::new(&settings.token, settings.namespace.as_deref())?;
        let mut builder = reqwest::Client::builder()
            .tls_backend_rustls()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout)
            .tls_danger_accept_invalid_certs(settings.skip_verify);
        if settings.url.scheme() == "http" {
            // No TLS: an empty root store spares setting up the platform verifier
            // (reqwest#2988, as vaultrs does).
            builder = builder.tls_certs_only(Vec::new());
            if super::address::is_loopback(&settings.url) {
                builder = builder.no_proxy();
            }
        } else {
            if let Some(file) = &settings.ca_cert {
                builder = builder.tls_certs_merge(ca_file(file)?);
            }
            if let Some(dir) = &settings.ca_path {
                builder = builder.tls_certs_merge(ca_dir(dir)?);
            }
        }
        let http = builder.build().map_err(|e| VaultError::Config {
            message: format!("cannot set up the HTTP client: {}", error_chain(&e)),
            help: "check VAULT_CACERT / VAULT_CAPATH".into(),
        })?;
        let mut base = settings.url.clone();
        if let Ok(mut segments) = base.path_segments_mut() {
            segments.pop_if_empty().push("v1").push("");
        } else {
            return Err(VaultError::Config {
                message: format!(
                    "the Vault address `{}` is not an http(s) URL",
                    settings.addr
                ),
                help: "e.g. VAULT_ADDR=https://vault.example.internal:8200".into(),
            });
        }
        Ok(Vault {
            http,
            base,
            auth,
            addr: settings.addr.clone(),
            // One attempt never waits longer than all of them may.
            answer_timeout: settings.answer_timeout.min(settings.give_up_after),
            client_timeout: settings.timeout,
            give_up_after: settings.give_up_after,
            last_notice: Mutex::new(None),
            requests: AtomicU64::new(0),
        })
    }

    /// The same client, its open connections included, with another token (the one a login
    /// returned): the requests after a login reuse the login's connection instead of opening
    /// one (a round trip over a network, two with TLS). Used in the runtime that opened them
    /// (a connection lives in the runtime it was opened in).
    pub fn with_token(
        &self,
        token: &SecretString,
        namespace: Option<&str>,
    ) -> Result<Vault, VaultError> {
        Ok(Vault {
            http: self.http.clone(),
            base: self.base.clone(),
            auth: Auth::new(token, namespace)?,
            addr: self.addr.clone(),
            answer_timeout: self.answer_timeout,
            client_timeout: self.client_timeout,
            give_up_after: self.give_up_after,
            last_notice: Mutex::new(None),
            requests: AtomicU64::new(0),
        })
    }

    /// Vault's address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The Vault namespace requests are sent to (`VAULT_NAMESPACE`), if any.
    pub fn namespace(&self) -> Option<&str> {
        self.auth.namespace.as_ref().and_then(|n| n.to_str().ok())
    }

    /// HTTP requests sent so far, retries included.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Open one more connection to Vault, for requests about to go out at once: one
    /// `HEAD sys/health` (unauthenticated in Vault and OpenBao, `http/sys_health.go`; it reads
    /// and changes nothing), its answer ignored and never retried. Over a network a new
    /// connection costs a round trip (TCP) or two (TLS) before its first request; paid here
    /// while other requests are out, it is not paid again after them.
    pub async fn warm_connection(&self) {
        let call = Call {
            method: Method::HEAD,
            ..Call::get("sys/health")
        };
        if let Err(e) = self.send_once(call, "read").await {
            tracing::debug!(error = %e, "warming a connection failed");
        }
    }

    /// Send a request, retrying transient failures with capped exponential backoff and jitter,
    /// for at most `--give-up-after` in all. `capability` names what a 403 means the token lacks.
    pub(crate) async fn send(
        &self,
        make: impl Fn() -> Call,
        capability: &'static str,
    ) -> Result<Reply, VaultError> {
        self.retrying(|| self.send_once(make(), capability)).await
    }

    /// Send a login request (`auth/<mount>/login`, no token), retried as [`Vault::send`] retries.
    /// Vault's refusal comes back as an [`Answer`] with its status and `errors` (redacted), for
    /// the login to explain: a login's 403 says why (`service account name not authorized`) where
    /// [`Vault::send`] would only say "denied", and a login's 500 (an auth method without its
    /// configuration) is not retried.
    pub(crate) async fn send_login(&self, make: impl Fn() -> Call) -> Result<Answer, VaultError> {
        self.retrying(|| self.login_once(make())).await
    }

    /// Run `attempt` until it succeeds or fails for good: transient failures are retried with
    /// capped exponential backoff and jitter, for at most `--give-up-after` in all.
    async fn retrying<T, F>(&self, attempt_once: impl Fn() -> F) -> Result<T, VaultError>
    where
        F: std::future::Future<Output = Result<T, VaultError>>,
    {
        let start = Instant::now();
        // The longest one attempt waits for an answer; a retry that could not get it within
        // --give-up-after is not started.
        let longest = self.answer_timeout.min(self.client_timeout);
        let mut attempt = 0;
        loop {
            let e = match attempt_once().await {
                Err(e) if e.is_transient() => e,
                other => return other,
            };
            let delay = backoff(attempt + 1);
            let out_of_time = start.elapsed() + delay + longest > self.give_up_after;
            if attempt >= MAX_RETRIES || out_of_time {
                return Err(match e {
                    VaultError::Transport { .. } | VaultError::Timeout { .. } => {
                        VaultError::GaveUp {
                            last: Box::new(e),
                            attempts: attempt + 1,
                            elapsed: start.elapsed(),
                            limit: self.give_up_after,
                            out_of_time,
                        }
                    }
                    e => e,
                });
            }
            attempt += 1;
            self.notice(&e, attempt);
            tokio::time::sleep(delay).await;
        }
    }

    /// Say on stderr that a request is retried, at most once a second; `-vv` logs each.
    fn notice(&self, e: &VaultError, attempt: u32) {
        tracing::debug!(attempt, error = %e, "transient failure; retrying");
        let now = Instant::now();
        let mut last = self.last_notice.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| now.duration_since(t) < NOTICE_EVERY) {
            return;
        }
        *last = Some(now);
        let what = match e {
            VaultError::Timeout {
                after,
                whole: false,
                ..
            } => format!(
                "Vault did not answer in {}",
                humantime::format_duration(Duration::from_millis(after.as_millis() as u64))
            ),
            e => e.to_string(),
        };
        // A stderr that cannot take it (full, closed) must not stop the run.
        let _ = writeln!(
            std::io::stderr().lock(),
            "warning: {what}; retrying {attempt}/{MAX_RETRIES}"
        );
    }

    fn request(&self, call: Call) -> reqwest::RequestBuilder {
        let url = call.url(&self.base);
        // Each request's method and path as they go on the wire, at trace level under a target
        // of their own (`RUST_LOG=vault_seed::request=trace`): what bench/run compares with its
        // replay. Never a header or the body: the token and the values stay out.
        tracing::trace!(target: "vault_seed::request", "{} {}", call.method, url.path());
        let mut req = self
            .http
            .request(call.method.clone(), url)
            .headers(self.auth.headers());
        if let Some(body) = call.body {
            req = req
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body);
        }
        req
    }

    /// One attempt: an answer within the answer timeout, then a body of at most [`MAX_BODY`].
    async fn send_once(&self, call: Call, capability: &'static str) -> Result<Reply, VaultError> {
        let (status, body, method, path) = self.exchange(call).await?;
        if status.is_success() {
            return Ok(Reply::Ok(body));
        }
        if status == StatusCode::NOT_FOUND {
            return Ok(Reply::NotFound(body));
        }
        Err(self.classify(status, &body, method, path, capability))
    }

    /// One attempt of a login: any answer but a transient one (429, 502, 503, 504) or a sealed
    /// Vault comes back as it is.
    async fn login_once(&self, call: Call) -> Result<Answer, VaultError> {
        let (status, body, method, path) = self.exchange(call).await?;
        if status.is_success() {
            return Ok(Answer {
                status: status.as_u16(),
                body,
                errors: Vec::new(),
            });
        }
        match status.as_u16() {
            429 | 502 | 503 | 504 => Err(self.classify(status, &body, method, path, "update")),
            code => Ok(Answer {
                status: code,
                body: Vec::new(),
                errors: shown_errors(&vault_errors(&body)),
            }),
        }
    }

    /// Send one request and read its answer: within the answer timeout, no redirect, a body of
    /// at most [`MAX_BODY`]. Returns the status, the body, and the method and path for errors.
    async fn exchange(
        &self,
        call: Call,
    ) -> Result<(StatusCode, Vec<u8>, &'static str, String), VaultError> {
        let method = method_name(&call.method);
        let path = call.path.clone();
        self.requests.fetch_add(1, Ordering::Relaxed);
        let wait = self.answer_timeout;
        let timeout = |whole: bool, after: Duration| VaultError::Timeout {
            addr: self.addr.clone(),
            method,
            path: path.clone(),
            after,
            whole,
        };
        let sent = self.request(call).send();
        // When the client timeout is the shorter, it alone applies (and says so).
        let answer = if wait < self.client_timeout {
            tokio::time::timeout(wait, sent).await
        } else {
            Ok(sent.await)
        };
        let mut response = match answer {
            Err(_) => return Err(timeout(false, wait)),
            Ok(r) => r.map_err(|e| self.transport(method, &path, &e))?,
        };
        let status = response.status();
        if status.is_redirection() {
            return Err(self.redirect(&response, method, path));
        }
        let too_large = || VaultError::TooLarge {
            method,
            path: path.clone(),
            limit: MAX_BODY,
        };
        let announced = response.content_length();
        if announced.is_some_and(|n| n > MAX_BODY as u64) {
            return Err(too_large());
        }
        // The announced length at once (at most `MAX_BODY`): grown by doubling, a large answer
        // would take up to twice its size and, while it grew, the old copy too.
        let mut body = Vec::with_capacity(announced.map_or(0, |n| n as usize));
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport(method, &path, &e))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body, method, path))
    }

    /// A 3xx: where it points (scheme, host and port, redacted), never followed.
    fn redirect(
        &self,
        response: &reqwest::Response,
        method: &'static str,
        path: String,
    ) -> VaultError {
        let location = match response.headers().get(reqwest::header::LOCATION) {
            None => "nowhere (no Location header)".to_string(),
            Some(v) => match v.to_str().ok().map(|l| response.url().join(l)) {
                Some(Ok(u)) => crate::base::redact::redact(&format!(
                    "{}://{}",
                    u.scheme(),
                    u.host_str().map_or_else(String::new, |h| match u.port() {
                        Some(p) => format!("{h}:{p}"),
                        None => h.to_string(),
                    })
                )),
                _ => "an address that is not a URL".to_string(),
            },
        };
        VaultError::Redirect {
            addr: self.addr.clone(),
            method,
            path,
            status: response.status().as_u16(),
            location,
        }
    }

    fn transport(&self, method: &'static str, path: &str, e: &reqwest::Error) -> VaultError {
        if e.is_timeout() && e.is_connect() {
            return VaultError::Transport {
                addr: self.addr.clone(),
                detail: "no connection within the connect timeout (--connect-timeout)".into(),
            };
        }
        if e.is_timeout() {
            return VaultError::Timeout {
                addr: self.addr.clone(),
                method,
                path: path.to_string(),
                after: self.client_timeout,
                whole: true,
            };
        }
        transport(&self.addr, e)
    }

    /// The error a non-2xx, non-404 answer means. Only Vault's `errors` list is kept, redacted
    /// and capped: a server (or a proxy) may echo the token or a request body there.
    fn classify(
        &self,
        status: StatusCode,
        body: &[u8],
        method: &'static str,
        path: String,
        capability: &'static str,
    ) -> VaultError {
        // Judged on Vault's own words; shown only redacted.
        let errors = vault_errors(body);
        let joined = errors.join(" ").to_ascii_lowercase();
        let errors = shown_errors(&errors);
        match status.as_u16() {
            403 => VaultError::Denied { capability, path },
            503 if joined.contains("sealed") => VaultError::Sealed {
                addr: self.addr.clone(),
            },
            400 if joined.contains("check-and-set") => VaultError::CasMismatch { path },
            code => VaultError::Api {
                method,
                path,
                status: code,
                errors,
            },
        }
    }
}

/// At most this many of Vault's `errors` are shown; the rest are counted.
const MAX_ERRORS: usize = 4;

/// Vault's `{"errors": [...]}`; empty when the body is something else. Not for showing as is.
fn vault_errors(body: &[u8]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Errors {
        #[serde(default)]
        errors: Vec<String>,
    }
    serde_json::from_slice::<Errors>(body)
        .map(|e| e.errors)
        .unwrap_or_default()
}

/// Vault's `errors` as shown: the first [`MAX_ERRORS`], each redacted and capped.
fn shown_errors(errors: &[String]) -> Vec<String> {
    let mut shown: Vec<String> = errors
        .iter()
        .take(MAX_ERRORS)
        .map(|e| crate::base::redact::redact(e))
        .collect();
    if errors.len() > MAX_ERRORS {
        shown.push(format!("and {} more", errors.len() - MAX_ERRORS));
    }
    shown
}

/// The causes of an error, outermost first, joined.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(e), |c| c.source())
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}

fn transport(addr: &str, e: &reqwest::Error) -> VaultError {
    let chain = || {
        std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |c| {
            c.source()
        })
    };
    // The innermost cause says most ("Connection refused (os error 111)", "invalid peer
    // certificate: UnknownIssuer"). Redacted: a proxy's answer could be quoted there.
    let detail = crate::base::redact::redact(
        &chain()
            .last()
            .map(|c| c.to_string())
            .unwrap_or_else(|| e.to_string()),
    );
    let all: String = chain()
        .map(|c| c.to_string().to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    if all.contains("certificate") || all.contains("tls") || all.contains("handshake") {
        VaultError::Tls {
            addr: addr.to_string(),
            detail,
        }
    } else {
        VaultError::Transport {
            addr: addr.to_string(),
            detail,
        }
    }
}

fn ca_err(message: String, help: &str) -> VaultError {
    VaultError::Config {
        message,
        help: help.into(),
    }
}

/// The certificates of a PEM file, or why not. A file without one is an error, as the vault CLI
/// has it (`api/rootcerts.go`, `appendCAFile`: "Couldn't parse PEM"); reqwest alone would read
/// it as no certificate and the handshake would later fail with `UnknownIssuer`.
fn ca_file(file: &std::path::Path) -> Result<Vec<reqwest::Certificate>, VaultError> {
    const HELP: &str = "VAULT_CACERT must be a PEM file (-----BEGIN CERTIFICATE-----)";
    let bytes = std::fs::read(file).map_err(|e| {
        ca_err(
            format!("cannot read the CA file `{}`: {e}", file.display()),
            "point VAULT_CACERT at a readable PEM file",
        )
    })?;
    let certs = reqwest::Certificate::from_pem_bundle(&bytes).map_err(|e| {
        ca_err(
            format!(
                "the CA file `{}` is not a valid PEM certificate: {}",
                file.display(),
                error_chain(&e)
            ),
            HELP,
        )
    })?;
    if certs.is_empty() {
        // DER starts with a SEQUENCE tag.
        let what = if bytes.first() == Some(&0x30) {
            "it looks like DER; convert it with `openssl x509 -inform der -in FILE -out ca.pem`"
        } else {
            HELP
        };
        return Err(ca_err(
            format!(
                "the CA file `{}` is not PEM: it holds no `-----BEGIN CERTIFICATE-----` block",
                file.display()
            ),
            what,
        ));
    }
    Ok(certs)
}

/// The certificates of every PEM file in a directory. As the vault CLI (`api/rootcerts.go`,
/// `appendCAPath`), files without a certificate are passed over; a directory without any is an
/// error.
fn ca_dir(dir: &std::path::Path) -> Result<Vec<reqwest::Certificate>, VaultError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        ca_err(
            format!("cannot read VAULT_CAPATH `{}`: {e}", dir.display()),
            "point VAULT_CAPATH at a directory of PEM files",
        )
    })?;
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let certs: Vec<reqwest::Certificate> = files
        .iter()
        .filter_map(|f| std::fs::read(f).ok())
        .filter_map(|b| reqwest::Certificate::from_pem_bundle(&b).ok())
        .flatten()
        .collect();
    if certs.is_empty() {
        return Err(ca_err(
            format!("VAULT_CAPATH `{}` holds no PEM certificate", dir.display()),
            "point VAULT_CAPATH at a directory of PEM files (-----BEGIN CERTIFICATE-----)",
        ));
    }
    Ok(certs)
}

/// Full jitter over a doubling base, capped.
fn backoff(attempt: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1u32 << attempt.min(10))
        .min(BACKOFF_CAP);
    let jitter: f64 = rand::random();
    ceiling.mul_f64(0.5 + jitter / 2.0)
}

/// Parse a JSON body into `T`. On failure the detail gives the position and kind only: serde's
/// message can quote the offending value, and a body may hold secrets.
pub(crate) fn decode<'a, T: serde::Deserialize<'a>>(
    body: &'a [u8],
    method: &'static str,
    path: &str,
) -> Result<T, VaultError> {
    serde_json::from_slice(body).map_err(|e| VaultError::Decode {
        method,
        path: path.to_string(),
        detail: format!(
            "{:?} error at line {} column {}",
            e.classify(),
            e.line(),
            e.column()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(token: &str, namespace: Option<&str>) -> Settings {
        let mut s = Settings::for_test(
            "http://127.0.0.1:8200",
            SecretString::from(token.to_string()),
        );
        s.namespace = namespace.map(str::to_string);
        s
    }

    fn test_vault(namespace: Option<&str>) -> Vault {
        // The entry point installs the process's crypto provider; a unit test does it itself.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Vault::new(&settings("s.tok-123", namespace)).unwrap()
    }

    #[test]
    fn token_goes_only_in_a_sensitive_header() {
        let vault = test_vault(Some("team"));
        let req = vault
            .request(Call::get("auth/token/lookup-self"))
            .build()
            .unwrap();
        let header = req.headers().get("X-Vault-Token").unwrap();
        assert!(header.is_sensitive());
        assert_eq!(header.to_str().unwrap(), "s.tok-123");
        // Sensitive headers print redacted.
        assert!(!format!("{:?}", req.headers()).contains("tok-123"));
        assert!(!format!("{req:?}").contains("tok-123"));
        assert!(!req.url().as_str().contains("tok-123"));
        assert_eq!(req.headers().get("X-Vault-Namespace").unwrap(), "team");
        assert_eq!(
            req.url().as_str(),
            "http://127.0.0.1:8200/v1/auth/token/lookup-self"
        );
    }

    #[test]
    fn a_token_that_cannot_be_a_header_is_refused_without_quoting_it() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let e = Vault::new(&settings("s.tok\n123", None))
            .err()
            .expect("refused");
        assert!(!e.to_string().contains("s.tok"), "{e}");
    }

    #[test]
    fn path_segments_are_encoded_and_cannot_climb() {
        let vault = test_vault(None);
        let call = Call::list("secret/data/a b/c?d#e/../../../sys/%2e%2e");
        let req = vault.request(call).build().unwrap();
        let url = req.url().as_str();
        assert!(
            url.starts_with("http://127.0.0.1:8200/v1/secret/data/"),
            "{url}"
        );
        assert!(!url.contains(' ') && !url.contains('#'), "{url}");
        assert!(!url.contains("/../"), "{url}");
        // `%` is data too: an encoded dot-dot stays a literal segment, never a step up.
        assert!(url.ends_with("/c%3Fd%23e/sys/%252e%252e"), "{url}");
        assert_eq!(req.url().query(), None);
        assert_eq!(req.method().as_str(), "LIST");
        // `?` and `#` inside a segment are data, not a query or fragment.
        assert_eq!(req.url().fragment(), None);
    }

    #[test]
    fn backoff_is_capped_and_grows() {
        for attempt in 1..=MAX_RETRIES + 3 {
            let d = backoff(attempt);
            assert!(d <= BACKOFF_CAP, "{d:?}");
            assert!(d >= BACKOFF_BASE / 2, "{d:?}");
        }
    }

    #[test]
    fn answers_nested_10000_deep_are_refused_or_skipped_not_a_stack_overflow() {
        // serde_json's recursion limit (128) is on: nothing enables `unbounded_depth` or calls
        // `disable_recursion_limit`, and every answer is read through `decode`.
        let deep =
            |open: &str, close: &str| format!("{}1{}", open.repeat(10_000), close.repeat(10_000));
        for nested in [deep("[", "]"), deep("{\"a\":", "}")] {
            let body = format!("{{\"data\": {{\"f\": {nested}}}}}");
            let e = decode::<serde_json::Value>(body.as_bytes(), "GET", "secret/data/x")
                .expect_err("refused");
            assert!(e.to_string().contains("`secret/data/x`"), "{e}");
            // A secret's field is skipped without recursion (serde_json's `IgnoredAny`).
            #[derive(serde::Deserialize)]
            struct Read {
                data: std::collections::BTreeMap<String, crate::vault::kv::FieldValue>,
            }
            let read = decode::<Read>(body.as_bytes(), "GET", "secret/data/x").unwrap();
            assert!(matches!(
                read.data["f"],
                crate::vault::kv::FieldValue::NotText("a list" | "an object")
            ));
        }
    }

    #[test]
    fn decode_errors_never_quote_the_body() {
        let body = br#"{"version": "s3cr3t-value"}"#;
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct V {
            version: u64,
        }
        let e = decode::<V>(body, "GET", "secret/data/x")
            .err()
            .expect("error");
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
    }

    #[test]
    fn vault_errors_parse() {
        assert_eq!(
            vault_errors(br#"{"errors":["permission denied"]}"#),
            vec!["permission denied"]
        );
        assert!(vault_errors(b"not json").is_empty());
        assert!(vault_errors(br#"{"errors":[]}"#).is_empty());
    }
}
