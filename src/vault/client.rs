//! The HTTP client: vaultrs builds it (TLS, CA files, timeout), rustify's endpoint mechanism
//! sends the requests, and our own middleware adds the token.
//!
//! vaultrs' own middleware keeps the token in a plain `String` inside `Debug` structs and does not
//! mark the header sensitive; ours holds it as a [`SecretString`], exposes it only while the
//! header is built, and marks `X-Vault-Token` sensitive so no HTTP layer prints it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use http::{HeaderValue, Request, Response};
use rustify::endpoint::{Endpoint, MiddleWare};
use rustify::enums::{RequestMethod, RequestType, ResponseType};
use rustify::errors::ClientError;
use secrecy::{ExposeSecret, SecretString};
use serde::de::{DeserializeOwned, IgnoredAny};

use super::connect::Settings;
use super::VaultError;

/// Retries of a transient failure, after the first attempt.
pub const MAX_RETRIES: u32 = 5;
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_CAP: Duration = Duration::from_secs(3);

/// A Vault client for one address and token.
pub struct Vault {
    http: rustify::clients::reqwest::Client,
    auth: Auth,
    addr: String,
    /// HTTP requests sent, retries included: `-v` reports it, `bench/run` reads it.
    requests: AtomicU64,
}

struct Auth {
    token: SecretString,
    namespace: Option<String>,
}

impl MiddleWare for Auth {
    fn request<E: Endpoint>(&self, _: &E, req: &mut Request<Vec<u8>>) -> Result<(), ClientError> {
        let headers = req.headers_mut();
        headers.insert("X-Vault-Request", HeaderValue::from_static("true"));
        let mut token = HeaderValue::from_str(self.token.expose_secret()).map_err(|_| {
            ClientError::GenericError {
                source: anyhow::anyhow!(
                    "the Vault token has characters not allowed in an HTTP header"
                ),
            }
        })?;
        token.set_sensitive(true);
        headers.insert("X-Vault-Token", token);
        if let Some(ns) = &self.namespace {
            let v = HeaderValue::from_str(ns).map_err(|_| ClientError::GenericError {
                source: anyhow::anyhow!(
                    "the Vault namespace has characters not allowed in an HTTP header"
                ),
            })?;
            headers.insert("X-Vault-Namespace", v);
        }
        Ok(())
    }

    fn response<E: Endpoint>(&self, _: &E, _: &mut Response<Vec<u8>>) -> Result<(), ClientError> {
        Ok(())
    }
}

/// One request to Vault's HTTP API: vaultrs has no endpoint that keeps KV values out of plain
/// `String`s, so KV bodies are built here from [`SecretString`]s and sent as bytes.
pub(crate) struct Call {
    pub method: RequestMethod,
    /// Path under `/v1/`, segments separated by `/` (rustify percent-encodes each segment).
    pub path: String,
    pub query: Option<String>,
    pub body: Option<Vec<u8>>,
}

#[async_trait]
impl Endpoint for Call {
    type Response = IgnoredAny;
    const REQUEST_BODY_TYPE: RequestType = RequestType::JSON;
    const RESPONSE_BODY_TYPE: ResponseType = ResponseType::JSON;

    fn path(&self) -> String {
        self.path.clone()
    }
    fn method(&self) -> RequestMethod {
        self.method.clone()
    }
    fn query(&self) -> Result<Option<String>, ClientError> {
        Ok(self.query.clone())
    }
    fn body(&self) -> Result<Option<Vec<u8>>, ClientError> {
        Ok(self.body.clone())
    }
}

/// Vault's answer to a request that succeeded or found nothing.
pub(crate) enum Reply {
    /// 2xx with its body (possibly empty, for 204).
    Ok(Vec<u8>),
    /// 404 with its body: KV v2 puts a deleted version's metadata there.
    NotFound(Vec<u8>),
}

fn method_name(m: &RequestMethod) -> &'static str {
    match m {
        RequestMethod::GET => "GET",
        RequestMethod::POST => "POST",
        RequestMethod::PUT => "PUT",
        RequestMethod::DELETE => "DELETE",
        RequestMethod::LIST => "LIST",
        RequestMethod::HEAD => "HEAD",
        RequestMethod::PATCH => "PATCH",
        _ => "REQUEST",
    }
}

impl Vault {
    /// Build a client. Does not contact Vault.
    pub fn new(settings: &Settings) -> Result<Vault, VaultError> {
        crate::init_crypto();
        let mut builder = vaultrs::client::VaultClientSettingsBuilder::default();
        builder
            .address(&settings.addr)
            // vaultrs never sees the token: ours is added by our middleware.
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
        let vs = builder.build().map_err(|e| VaultError::Config {
            message: format!("invalid Vault address `{}`: {e}", settings.addr),
            help: "e.g. VAULT_ADDR=https://vault.example.internal:8200".into(),
        })?;
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
        Ok(Vault {
            http: rustify::clients::reqwest::Client::new(
                &format!("{}/v1", settings.addr),
                client.http.http.clone(),
            ),
            auth: Auth {
                token: SecretString::from(settings.token.expose_secret().to_string()),
                namespace: settings.namespace.clone(),
            },
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

    async fn send_once(&self, call: Call, capability: &'static str) -> Result<Reply, VaultError> {
        let method = method_name(&call.method);
        let path = call.path.clone();
        self.requests.fetch_add(1, Ordering::Relaxed);
        match call.with_middleware(&self.auth).exec(&self.http).await {
            Ok(result) => Ok(Reply::Ok(result.response.into_body())),
            Err(e) => match self.classify(e, method, path, capability) {
                Classified::NotFound(body) => Ok(Reply::NotFound(body)),
                Classified::Error(e) => Err(e),
            },
        }
    }

    fn classify(
        &self,
        e: ClientError,
        method: &'static str,
        path: String,
        capability: &'static str,
    ) -> Classified {
        match e {
            ClientError::ServerResponseError { code, content } => {
                let body = content.unwrap_or_default();
                if code == 404 {
                    return Classified::NotFound(body.into_bytes());
                }
                let errors = vault_errors(&body);
                let joined = errors.join(" ").to_ascii_lowercase();
                Classified::Error(if code == 403 {
                    VaultError::Denied { capability, path }
                } else if code == 503 && joined.contains("sealed") {
                    VaultError::Sealed {
                        addr: self.addr.clone(),
                    }
                } else if code == 400 && joined.contains("check-and-set") {
                    VaultError::CasMismatch { path }
                } else {
                    VaultError::Api {
                        method,
                        path,
                        status: code,
                        errors,
                    }
                })
            }
            ClientError::RequestError { source, .. } => {
                Classified::Error(transport(&self.addr, method, path, &source))
            }
            ClientError::ResponseError { source } => {
                Classified::Error(transport(&self.addr, method, path, &source))
            }
            // Never the variant's `content`: it may be a body holding secrets.
            other => Classified::Error(VaultError::Decode {
                method,
                path,
                detail: other.to_string(),
            }),
        }
    }
}

enum Classified {
    NotFound(Vec<u8>),
    Error(VaultError),
}

/// Vault's `{"errors": [...]}`; empty when the body is something else.
fn vault_errors(body: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Errors {
        #[serde(default)]
        errors: Vec<String>,
    }
    serde_json::from_str::<Errors>(body)
        .map(|e| e.errors)
        .unwrap_or_default()
}

fn transport(addr: &str, method: &'static str, path: String, source: &anyhow::Error) -> VaultError {
    let timed_out = source.chain().any(|c| {
        c.downcast_ref::<reqwest::Error>()
            .is_some_and(|r| r.is_timeout())
    });
    if timed_out {
        return VaultError::Timeout {
            addr: addr.to_string(),
            method,
            path,
        };
    }
    // The innermost cause says most ("Connection refused (os error 111)", "invalid peer
    // certificate: UnknownIssuer").
    let detail = source
        .chain()
        .last()
        .map(|c| c.to_string())
        .unwrap_or_else(|| source.to_string());
    let all: String = source
        .chain()
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

    #[test]
    fn token_goes_only_in_a_sensitive_header() {
        let auth = Auth {
            token: SecretString::from("s.tok-123".to_string()),
            namespace: Some("team".into()),
        };
        let call = Call {
            method: RequestMethod::GET,
            path: "auth/token/lookup-self".into(),
            query: None,
            body: None,
        };
        let mut req = call.request("http://127.0.0.1:8200/v1").unwrap();
        auth.request(&call, &mut req).unwrap();
        let header = req.headers().get("X-Vault-Token").unwrap();
        assert!(header.is_sensitive());
        assert_eq!(header.to_str().unwrap(), "s.tok-123");
        // Sensitive headers print redacted.
        assert!(!format!("{:?}", req.headers()).contains("tok-123"));
        assert!(!req.uri().to_string().contains("tok-123"));
        assert_eq!(req.headers().get("X-Vault-Namespace").unwrap(), "team");
    }

    #[test]
    fn path_segments_are_encoded_and_cannot_climb() {
        let call = Call {
            method: RequestMethod::GET,
            path: "secret/data/a b/c?d#e/%2e%2e".into(),
            query: None,
            body: None,
        };
        let uri = call
            .request("http://127.0.0.1:8200/v1")
            .unwrap()
            .uri()
            .to_string();
        assert!(
            uri.starts_with("http://127.0.0.1:8200/v1/secret/data/"),
            "{uri}"
        );
        assert!(
            !uri.contains(' ') && !uri.contains('?') && !uri.contains('#'),
            "{uri}"
        );
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
            vault_errors(r#"{"errors":["permission denied"]}"#),
            vec!["permission denied"]
        );
        assert!(vault_errors("not json").is_empty());
        assert!(vault_errors(r#"{"errors":[]}"#).is_empty());
    }
}
