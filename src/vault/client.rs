//! The HTTP client: vaultrs builds it (TLS, CA files, timeout); requests are sent on it
//! directly, with the token added here.
//!
//! vaultrs' own request path keeps the token in a plain `String` inside `Debug` structs and does
//! not mark the header sensitive; ours holds it as a [`SecretString`], exposes it only while the
//! header is built, and marks `X-Vault-Token` sensitive so no HTTP layer prints it. Requests skip
//! vaultrs' endpoint layer (rustify) too: it parsed every URL twice and copied every body
//! (secret values included) into several buffers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use reqwest::{Method, StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;

use super::connect::Settings;
use super::VaultError;

/// Retries of a transient failure, after the first attempt.
pub const MAX_RETRIES: u32 = 5;
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_CAP: Duration = Duration::from_secs(3);

/// A Vault client for one address and token.
pub struct Vault {
    http: reqwest::Client,
    /// `<addr>/v1/`, parsed once.
    base: Url,
    auth: Auth,
    addr: String,
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
        // Checked in `Auth::new`: cannot fail.
        if let Ok(mut token) = HeaderValue::from_str(self.token.expose_secret()) {
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
}

impl Call {
    /// `GET /v1/<path>`.
    pub fn get(path: &str) -> Call {
        Call {
            method: Method::GET,
            path: path.to_string(),
            body: None,
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
        url
    }
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
        crate::init_crypto();
        let auth = Auth::new(&settings.token, settings.namespace.as_deref())?;
        let mut builder = vaultrs::client::VaultClientSettingsBuilder::default();
        builder
            .address(&settings.addr)
            // vaultrs never sees the token: ours is added to each request here.
            .token("")
            .verify(!settings.skip_verify)
            .ca_certs(
                settings
                    .ca_files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>(),
            )
            .timeout(Some(settings.timeout));
        let invalid_addr = |e: &dyn std::fmt::Display| VaultError::Config {
            message: format!("invalid Vault address `{}`: {e}", settings.addr),
            help: "e.g. VAULT_ADDR=https://vault.example.internal:8200".into(),
        };
        let vs = builder.build().map_err(|e| invalid_addr(&e))?;
        let client = vaultrs::client::VaultClient::new(vs).map_err(|e| match e {
            vaultrs::error::ClientError::FileReadError { path, source } => VaultError::Config {
                message: format!("cannot read the CA file `{path}`: {source}"),
                help: "point VAULT_CACERT at a readable PEM file".into(),
            },
            vaultrs::error::ClientError::ParseCertificateError { path, .. } => VaultError::Config {
                message: format!("`{path}` is not a PEM certificate"),
                help: "VAULT_CACERT must be a PEM file (-----BEGIN CERTIFICATE-----)".into(),
            },
            other => VaultError::Config {
                message: format!("cannot set up the HTTP client: {other}"),
                help: "check VAULT_CACERT / VAULT_CAPATH".into(),
            },
        })?;
        let base = Url::parse(&format!("{}/v1/", settings.addr.trim_end_matches('/')))
            .map_err(|e| invalid_addr(&e))?;
        if base.cannot_be_a_base() {
            return Err(invalid_addr(&"not an http(s) URL"));
        }
        Ok(Vault {
            http: client.http.http.clone(),
            base,
            auth,
            addr: settings.addr.clone(),
            requests: AtomicU64::new(0),
        })
    }

    /// Vault's address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// HTTP requests sent so far, retries included.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Send a request, retrying transient failures with capped exponential backoff and jitter.
    /// `capability` names what a 403 means the token lacks.
    pub(crate) async fn send(
        &self,
        make: impl Fn() -> Call,
        capability: &'static str,
    ) -> Result<Reply, VaultError> {
        let mut attempt = 0;
        loop {
            match self.send_once(make(), capability).await {
                Err(e) if e.is_transient() && attempt < MAX_RETRIES => {
                    attempt += 1;
                    let delay = backoff(attempt);
                    tracing::debug!(attempt, ?delay, error = %e, "transient failure; retrying");
                    tokio::time::sleep(delay).await;
                }
                other => return other,
            }
        }
    }

    fn request(&self, call: Call) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .request(call.method.clone(), call.url(&self.base))
            .headers(self.auth.headers());
        if let Some(body) = call.body {
            req = req
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body);
        }
        req
    }

    async fn send_once(&self, call: Call, capability: &'static str) -> Result<Reply, VaultError> {
        let method = method_name(&call.method);
        let path = call.path.clone();
        self.requests.fetch_add(1, Ordering::Relaxed);
        let response = self
            .request(call)
            .send()
            .await
            .map_err(|e| transport(&self.addr, method, path.clone(), &e))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| transport(&self.addr, method, path.clone(), &e))?
            .to_vec();
        if status.is_success() {
            return Ok(Reply::Ok(body));
        }
        if status == StatusCode::NOT_FOUND {
            return Ok(Reply::NotFound(body));
        }
        Err(self.classify(status, &body, method, path, capability))
    }

    /// The error a non-2xx, non-404 answer means. Vault's error bodies hold messages, not
    /// secrets; only its `errors` list is kept.
    fn classify(
        &self,
        status: StatusCode,
        body: &[u8],
        method: &'static str,
        path: String,
        capability: &'static str,
    ) -> VaultError {
        let errors = vault_errors(body);
        let joined = errors.join(" ").to_ascii_lowercase();
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

/// Vault's `{"errors": [...]}`; empty when the body is something else.
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

fn transport(addr: &str, method: &'static str, path: String, e: &reqwest::Error) -> VaultError {
    let chain = || {
        std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |c| {
            c.source()
        })
    };
    if chain().any(|c| {
        c.downcast_ref::<reqwest::Error>()
            .is_some_and(|r| r.is_timeout())
    }) {
        return VaultError::Timeout {
            addr: addr.to_string(),
            method,
            path,
        };
    }
    // The innermost cause says most ("Connection refused (os error 111)", "invalid peer
    // certificate: UnknownIssuer").
    let detail = chain()
        .last()
        .map(|c| c.to_string())
        .unwrap_or_else(|| e.to_string());
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
pub(crate) fn decode<T: DeserializeOwned>(
    body: &[u8],
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
        Settings {
            addr: "http://127.0.0.1:8200".into(),
            token: SecretString::from(token.to_string()),
            token_source: "VAULT_TOKEN".into(),
            ca_files: Vec::new(),
            skip_verify: false,
            namespace: namespace.map(str::to_string),
            timeout: Duration::from_secs(5),
        }
    }

    fn test_vault(namespace: Option<&str>) -> Vault {
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
