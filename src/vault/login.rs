//! Logging in to Vault by another method than a token, as `vault login -method=...` does, and
//! revoking the token at exit.
//!
//! A pod, a CI job or an Argo CD hook holds no Vault token; it holds a credential an auth method
//! exchanges for one: a Kubernetes service-account JWT (`auth/kubernetes`), a CI system's OIDC ID
//! token (`auth/jwt`), or an AppRole's role-id and secret-id (`auth/approle`). The interface:
//!
//! 1. [`Options`] (what the command line and environment say) → [`Options::method`], a checked
//!    [`Method`]; nothing is read yet.
//! 2. [`Method::credentials`] reads the JWT or the role-id and secret-id (files, an environment
//!    variable) into [`SecretString`]s and registers them with [`crate::base::redact`]; nothing is sent.
//! 3. [`login`] sends one `POST auth/<mount>/login` on a client without a token and returns the
//!    client token as a [`SecretString`] ([`LoggedIn`]). A refusal names the method, mount and
//!    role, gives Vault's reason and what to do ([`LoginError`]).
//! 4. [`Revoker`] revokes the token (`auth/token/revoke-self`) when dropped, unless kept.
//!
//! What each auth method answers, and why, is read from OpenBao's sources (cited where used):
//! `builtin/credential/kubernetes/path_login.go`, `token_review.go`,
//! `builtin/credential/jwt/path_login.go`, `builtin/credential/approle/path_login.go`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::client::{decode, Call};
use super::{Vault, VaultError};

/// Where a pod's service-account token is mounted (Kubernetes' default projected volume).
pub const SERVICE_ACCOUNT_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// The most bytes read from a credential file: a JWT is a few KiB; a mistaken file is not read.
const MAX_CREDENTIAL_BYTES: u64 = 64 * 1024;

/// How long revoking the token at exit may take before vault-seed gives up on it.
const REVOKE_WITHIN: Duration = Duration::from_secs(10);

/// The login method (`--auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Kind {
    /// A token: `VAULT_TOKEN`, `BAO_TOKEN`, `~/.vault-token` (no login).
    #[default]
    Token,
    /// Kubernetes auth: the pod's service-account JWT.
    Kubernetes,
    /// JWT/OIDC auth: a signed JWT such as a CI system's OIDC ID token.
    Jwt,
    /// AppRole auth: a role-id and a secret-id.
    Approle,
}

impl Kind {
    /// The name as `--auth` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Token => "token",
            Kind::Kubernetes => "kubernetes",
            Kind::Jwt => "jwt",
            Kind::Approle => "approle",
        }
    }

    /// The mount OpenBao enables the method at by default (`bao auth enable kubernetes`).
    fn default_mount(self) -> &'static str {
        match self {
            Kind::Token => "token",
            Kind::Kubernetes => "kubernetes",
            Kind::Jwt => "jwt",
            Kind::Approle => "approle",
        }
    }
}

/// What the command line and the environment say about logging in (`--auth` & co).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--auth`.
    pub kind: Kind,
    /// `--role`: the auth method's role (kubernetes, jwt; a name for messages with approle).
    pub role: Option<String>,
    /// `--auth-mount`: where the auth method is enabled, without `auth/`.
    pub mount: Option<String>,
    /// `--jwt-file`.
    pub jwt_file: Option<PathBuf>,
    /// `--jwt-env`: the name of an environment variable holding the JWT.
    pub jwt_env: Option<String>,
    /// `--role-id-file`.
    pub role_id_file: Option<PathBuf>,
    /// `--secret-id-file`.
    pub secret_id_file: Option<PathBuf>,
    /// `--keep-token`: do not revoke the login token at exit.
    pub keep_token: bool,
}

/// Where a JWT comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwtSource {
    /// A file (a service-account token, a CI token written to disk).
    File(PathBuf),
    /// An environment variable, named (GitLab CI hands OIDC ID tokens over this way).
    Env(String),
}

impl fmt::Display for JwtSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JwtSource::File(p) => write!(f, "`{}`", p.display()),
            JwtSource::Env(v) => write!(f, "environment variable `{v}`"),
        }
    }
}

/// A checked login method with its inputs (nothing read yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// No login: the token from the environment or `~/.vault-token`.
    Token,
    /// `POST auth/<mount>/login {role, jwt}` with a service-account JWT.
    Kubernetes {
        /// The mount, without `auth/`.
        mount: String,
        /// The role.
        role: String,
        /// The service-account token file.
        jwt_file: PathBuf,
    },
    /// `POST auth/<mount>/login {role, jwt}` with a JWT.
    Jwt {
        /// The mount, without `auth/`.
        mount: String,
        /// The role.
        role: String,
        /// Where the JWT is.
        jwt: JwtSource,
    },
    /// `POST auth/<mount>/login {role_id, secret_id}`.
    AppRole {
        /// The mount, without `auth/`.
        mount: String,
        /// A name for the role in messages (`--role`); AppRole logs in by role-id alone.
        role: Option<String>,
        /// The role-id file.
        role_id_file: PathBuf,
        /// The secret-id file.
        secret_id_file: PathBuf,
    },
}

/// Why a login could not be made.
#[derive(Debug)]
pub enum LoginError {
    /// The options do not make a login (a missing `--role`, a flag of another method); nothing
    /// was read or sent.
    Usage {
        /// What is wrong.
        message: String,
        /// What to do.
        help: String,
    },
    /// A credential could not be read (a missing file, an unset variable); nothing was sent.
    Credentials {
        /// What is wrong.
        message: String,
        /// What to do.
        help: String,
    },
    /// Vault refused the login.
    Refused {
        /// The login, named: method, mount and role.
        what: String,
        /// HTTP status.
        status: u16,
        /// Vault's reasons (its `errors`), redacted.
        reasons: Vec<String>,
        /// What to do.
        help: String,
    },
    /// Vault could not be asked (unreachable, sealed, a bad answer).
    Vault {
        /// The login, named: method, mount and role.
        what: String,
        /// The failure.
        error: VaultError,
    },
    /// Vault answered the login, but not so that vault-seed can use the answer: a token may
    /// have been issued ([`Issued`]: revoke it, or say that it may be alive).
    Unusable {
        /// The login, named: method, mount and role.
        what: String,
        /// What is wrong with the answer.
        error: Box<VaultError>,
        /// What the answer said of its token.
        issued: Box<Issued>,
    },
}

impl fmt::Display for LoginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoginError::Usage { message, .. } | LoginError::Credentials { message, .. } => {
                f.write_str(message)
            }
            LoginError::Refused {
                what,
                status,
                reasons,
                ..
            } => {
                write!(f, "{what} was refused (HTTP {status}): ")?;
                if reasons.is_empty() {
                    f.write_str("Vault gave no reason")
                } else {
                    f.write_str(&reasons.join("; "))
                }
            }
            LoginError::Vault { what, error } => write!(f, "{what} failed: {error}"),
            LoginError::Unusable { what, error, .. } => write!(f, "{what} failed: {error}"),
        }
    }
}

impl LoginError {
    /// What to do about it.
    pub fn help(&self) -> Option<String> {
        match self {
            LoginError::Usage { help, .. }
            | LoginError::Credentials { help, .. }
            | LoginError::Refused { help, .. } => Some(help.clone()),
            LoginError::Vault { error, .. } => error.help(),
            LoginError::Unusable { error, .. } => error.help(),
        }
    }

    /// What the answer said of the token it issued, when the answer could not be used.
    pub fn take_issued(&mut self) -> Option<Issued> {
        match self {
            LoginError::Unusable { issued, .. } => Some(*std::mem::replace(
                issued,
                Box::new(Issued {
                    token: None,
                    accessor: None,
                    ttl: 0,
                }),
            )),
            _ => None,
        }
    }

    /// Nothing was sent: the command line or a credential file is wrong (exit 2). Else Vault
    /// refused or could not be reached (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LoginError::Usage { .. } | LoginError::Credentials { .. }
        )
    }
}

fn usage(message: impl Into<String>, help: impl Into<String>) -> LoginError {
    LoginError::Usage {
        message: message.into(),
        help: help.into(),
    }
}

impl Options {
    /// The login these options ask for, checked: each method has what it needs and nothing of
    /// another method's (a `--role-id-file` with `--auth kubernetes` is a mistake, not noise).
    #[allow(clippy::too_many_lines)] // one exchange with Vault, each answer handled where it arrives
    pub fn method(&self) -> Result<Method, LoginError> {
        let kind = self.kind;
        let given = |flag: &str, set: bool| -> Result<(), LoginError> {
            if set {
                let for_ = match flag {
                    "--jwt-env" => "`--auth jwt`",
                    "--role-id-file" | "--secret-id-file" => "`--auth approle`",
                    "--jwt-file" => "`--auth kubernetes` and `--auth jwt`",
                    _ => "`--auth kubernetes`, `jwt` and `approle`",
                };
                return Err(usage(
                    format!("`{flag}` is not used by `--auth {}`", kind.name()),
                    format!("it is for {for_}: drop it (or its VAULT_SEED_ variable), or pick that method with `--auth`"),
                ));
            }
            Ok(())
        };
        if kind == Kind::Token {
            given("--role", self.role.is_some())?;
            given("--auth-mount", self.mount.is_some())?;
            given("--jwt-file", self.jwt_file.is_some())?;
            given("--jwt-env", self.jwt_env.is_some())?;
            given("--role-id-file", self.role_id_file.is_some())?;
            given("--secret-id-file", self.secret_id_file.is_some())?;
            return Ok(Method::Token);
        }
        let mount = check_mount(self.mount.as_deref().unwrap_or(kind.default_mount()))?;
        let role = match self.role.as_deref().map(str::trim) {
            Some("") => return Err(usage("`--role` is empty", "name the auth method's role")),
            Some(r) if r.contains('/') || r.chars().any(char::is_control) => {
                return Err(usage(
                    format!(
                        "`--role {}` is not a role name",
                        crate::base::redact::redact(r)
                    ),
                    "a role name has no `/` and no control characters",
                ))
            }
            r => r.map(str::to_string),
        };
        let need_role = |role: Option<String>| {
            role.ok_or_else(|| {
                usage(
                    format!("`--auth {}` needs `--role`", kind.name()),
                    format!(
                        "name the role of `auth/{mount}` to log in as: `--role vault-seed` (or VAULT_SEED_ROLE)"
                    ),
                )
            })
        };
        match kind {
            Kind::Token => unreachable!("handled above"),
            Kind::Kubernetes => {
                given("--jwt-env", self.jwt_env.is_some())?;
                given("--role-id-file", self.role_id_file.is_some())?;
                given("--secret-id-file", self.secret_id_file.is_some())?;
                Ok(Method::Kubernetes {
                    role: need_role(role)?,
                    jwt_file: self
                        .jwt_file
                        .clone()
                        .unwrap_or_else(|| PathBuf::from(SERVICE_ACCOUNT_TOKEN)),
                    mount,
                })
            }
            Kind::Jwt => {
                given("--role-id-file", self.role_id_file.is_some())?;
                given("--secret-id-file", self.secret_id_file.is_some())?;
                let jwt = match (&self.jwt_file, &self.jwt_env) {
                    (Some(f), None) => JwtSource::File(f.clone()),
                    (None, Some(v)) if !v.trim().is_empty() => JwtSource::Env(v.trim().to_string()),
                    (Some(_), Some(_)) => {
                        return Err(usage(
                            "`--jwt-file` and `--jwt-env` both name the JWT",
                            "give one of them",
                        ))
                    }
                    _ => {
                        return Err(usage(
                            "`--auth jwt` needs the JWT: `--jwt-file PATH` or `--jwt-env VAR`",
                            "in GitLab CI, declare an ID token (`id_tokens: VAULT_ID_TOKEN: aud: ...`) and pass `--jwt-env VAULT_ID_TOKEN`",
                        ))
                    }
                };
                Ok(Method::Jwt {
                    role: need_role(role)?,
                    jwt,
                    mount,
                })
            }
            Kind::Approle => {
                given("--jwt-file", self.jwt_file.is_some())?;
                given("--jwt-env", self.jwt_env.is_some())?;
                let (Some(role_id_file), Some(secret_id_file)) =
                    (&self.role_id_file, &self.secret_id_file)
                else {
                    return Err(usage(
                        "`--auth approle` needs `--role-id-file` and `--secret-id-file`",
                        "give both files (never the values on the command line: it shows in `ps`)",
                    ));
                };
                Ok(Method::AppRole {
                    mount,
                    role,
                    role_id_file: role_id_file.clone(),
                    secret_id_file: secret_id_file.clone(),
                })
            }
        }
    }
}

/// An auth mount as the login path will hold it: `kubernetes`, `k8s/cluster-1`. Refused: empty
/// segments, `.`/`..`, characters that cannot be in a path, and an `auth/` prefix (which
/// vault-seed adds; `auth/auth/...` would be a wrong path).
fn check_mount(mount: &str) -> Result<String, LoginError> {
    let m = mount.trim().trim_matches('/');
    let bad = |why: &str| {
        Err(usage(
            format!(
                "`--auth-mount {}` {why}",
                crate::base::redact::redact(mount.trim())
            ),
            "give the path the auth method is enabled at, without `auth/` (e.g. `kubernetes`, `k8s/cluster-1`)",
        ))
    };
    if m.is_empty() {
        return bad("is empty");
    }
    if m == "auth" || m.starts_with("auth/") {
        return bad("starts with `auth/`, which vault-seed adds itself");
    }
    if m.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
        return bad("has an empty, `.` or `..` segment");
    }
    if m.chars()
        .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '?' | '#' | '%' | '\\'))
    {
        return bad("has characters a mount path cannot have");
    }
    Ok(m.to_string())
}

impl Method {
    /// The method's name, as `--auth` spells it.
    pub fn kind(&self) -> Kind {
        match self {
            Method::Token => Kind::Token,
            Method::Kubernetes { .. } => Kind::Kubernetes,
            Method::Jwt { .. } => Kind::Jwt,
            Method::AppRole { .. } => Kind::Approle,
        }
    }

    /// `kubernetes login at `auth/kubernetes` as role `vault-seed``: what a message names.
    pub fn describe(&self) -> String {
        match self {
            Method::Token => "the token".into(),
            Method::Kubernetes { mount, role, .. } | Method::Jwt { mount, role, .. } => format!(
                "{} login at `auth/{mount}` as role `{role}`",
                self.kind().name()
            ),
            Method::AppRole { mount, role, .. } => match role {
                Some(r) => format!("approle login at `auth/{mount}` as role `{r}`"),
                None => format!("approle login at `auth/{mount}`"),
            },
        }
    }

    /// Read the credentials, each into a [`SecretString`] registered for redaction. Sends
    /// nothing.
    pub fn credentials(&self) -> Result<Credentials, LoginError> {
        let body = match self {
            Method::Token => {
                return Err(usage(
                    "`--auth token` does not log in",
                    "the token comes from VAULT_TOKEN, BAO_TOKEN or ~/.vault-token",
                ))
            }
            Method::Kubernetes { role, jwt_file, .. } => {
                let jwt = read_secret_file(jwt_file, "the service-account token", || {
                    if jwt_file == Path::new(SERVICE_ACCOUNT_TOKEN) {
                        "vault-seed reads the pod's service-account token there: run it in a pod whose service account token is mounted (`automountServiceAccountToken`), or pass `--jwt-file`".to_string()
                    } else {
                        "point `--jwt-file` at a service-account token (a projected volume)"
                            .to_string()
                    }
                })?;
                login_body(&RoleJwt {
                    role,
                    jwt: jwt.expose_secret(),
                })
            }
            Method::Jwt { role, jwt, .. } => {
                let token = match jwt {
                    JwtSource::File(f) => read_secret_file(f, "the JWT", || {
                        "point `--jwt-file` at the file holding the JWT".to_string()
                    })?,
                    JwtSource::Env(var) => read_secret_env(var)?,
                };
                login_body(&RoleJwt {
                    role,
                    jwt: token.expose_secret(),
                })
            }
            Method::AppRole {
                role_id_file,
                secret_id_file,
                ..
            } => {
                let role_id = read_secret_file(role_id_file, "the role-id", || {
                    "point `--role-id-file` at the file holding the role-id (`bao read auth/approle/role/NAME/role-id`)".to_string()
                })?;
                let secret_id = read_secret_file(secret_id_file, "the secret-id", || {
                    "point `--secret-id-file` at the file holding a secret-id (`bao write -f auth/approle/role/NAME/secret-id`)".to_string()
                })?;
                login_body(&AppRoleBody {
                    role_id: role_id.expose_secret(),
                    secret_id: secret_id.expose_secret(),
                })
            }
        };
        Ok(Credentials {
            method: self.clone(),
            body,
        })
    }
}

/// What the login sends: the method and the request body (it holds the JWT or secret-id).
/// Not `Debug`.
pub struct Credentials {
    method: Method,
    body: zeroize::Zeroizing<Vec<u8>>,
}

impl Credentials {
    /// The method these credentials are for.
    pub fn method(&self) -> &Method {
        &self.method
    }
}

#[derive(Serialize)]
struct RoleJwt<'a> {
    role: &'a str,
    jwt: &'a str,
}

#[derive(Serialize)]
struct AppRoleBody<'a> {
    role_id: &'a str,
    secret_id: &'a str,
}

fn login_body(body: &impl Serialize) -> zeroize::Zeroizing<Vec<u8>> {
    // Serialising strings into a Vec cannot fail.
    zeroize::Zeroizing::new(serde_json::to_vec(body).unwrap_or_default())
}

/// A credential file's content, trimmed, as a registered secret. A missing, unreadable, empty or
/// oversized file is an error naming it.
fn read_secret_file(
    path: &Path,
    what: &str,
    help: impl Fn() -> String,
) -> Result<SecretString, LoginError> {
    let failed = |message: String| LoginError::Credentials {
        message,
        help: help(),
    };
    let bytes = crate::base::files::read_small(path, MAX_CREDENTIAL_BYTES)
        .map_err(|e| failed(format!("cannot read {what} `{}`: {e}", path.display())))?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(failed(format!(
            "{what} `{}` is not UTF-8 text",
            path.display()
        )));
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(failed(format!("{what} `{}` is empty", path.display())));
    }
    let secret = SecretString::from(text.to_string());
    crate::base::redact::register(&secret);
    Ok(secret)
}

/// A JWT from an environment variable, as a registered secret.
fn read_secret_env(var: &str) -> Result<SecretString, LoginError> {
    let value = std::env::var(var).ok().map(zeroize::Zeroizing::new);
    match value.as_deref().map(|v| v.trim()) {
        Some(v) if !v.is_empty() => {
            let secret = SecretString::from(v.to_string());
            crate::base::redact::register(&secret);
            Ok(secret)
        }
        _ => Err(LoginError::Credentials {
            message: format!("environment variable `{var}` (`--jwt-env`) is not set or empty"),
            help: format!("in GitLab CI, declare the ID token: `id_tokens: {var}: aud: <the role's bound audience>`"),
        }),
    }
}

/// A logged-in token. Not `Debug`: it holds the token.
pub struct LoggedIn {
    /// The client token.
    pub token: SecretString,
    /// Its accessor (not a credential: it can look the token up or revoke it, not use it).
    pub accessor: String,
    /// The policies Vault attached.
    pub policies: Vec<String>,
    /// Its time to live, in seconds (0: none).
    pub ttl: u64,
    /// Where it came from, for messages: `kubernetes login at `auth/kubernetes` as role `x``.
    pub source: String,
}

/// Log in: `POST auth/<mount>/login` on `vault`, a client made without a token (it carries the
/// namespace, when one is set, so the login happens in it). One request (retried only on
/// connection failures and 429/502/503/504).
#[allow(clippy::too_many_lines)] // one exchange with Vault, each answer handled where it arrives
pub async fn login(vault: &Vault, credentials: &Credentials) -> Result<LoggedIn, LoginError> {
    #[derive(Deserialize)]
    struct Auth {
        client_token: SecretString,
        #[serde(default)]
        accessor: String,
        #[serde(default)]
        policies: Vec<String>,
        #[serde(default)]
        lease_duration: u64,
    }
    #[derive(Deserialize)]
    struct Envelope {
        auth: Option<Auth>,
    }
    let method = &credentials.method;
    let what = method.describe();
    let mount = match method {
        Method::Kubernetes { mount, .. }
        | Method::Jwt { mount, .. }
        | Method::AppRole { mount, .. } => mount,
        Method::Token => unreachable!("credentials are never made for a token"),
    };
    let path = format!("auth/{mount}/login");
    let answer = vault
        .send_login(|| Call::post(&path, credentials.body.to_vec()))
        .await
        .map_err(|error| LoginError::Vault {
            what: what.clone(),
            error,
        })?;
    if !(200..300).contains(&answer.status) {
        let help = explain(method, answer.status, &answer.errors, credentials);
        return Err(LoginError::Refused {
            what,
            status: answer.status,
            reasons: answer.errors,
            help,
        });
    }
    // The body holds the token: parsed straight into a SecretString, then wiped.
    let body = zeroize::Zeroizing::new(answer.body);
    let unusable = |error: VaultError| {
        let issued = Box::new(issued_in(&body));
        LoginError::Unusable {
            what: what.clone(),
            error: Box::new(error),
            issued,
        }
    };
    let auth = decode::<Envelope>(&body, "POST", &path)
        .map_err(unusable)?
        .auth
        .ok_or_else(|| LoginError::Vault {
            what: what.clone(),
            error: VaultError::Decode {
                method: "POST",
                path: path.clone(),
                detail: "no `auth` in the answer".into(),
            },
        })?;
    if auth.client_token.expose_secret().is_empty() {
        return Err(LoginError::Vault {
            what,
            error: VaultError::Decode {
                method: "POST",
                path,
                detail: "an empty `client_token`".into(),
            },
        });
    }
    crate::base::redact::register(&auth.client_token);
    let accessor = shown_accessor(&auth.accessor, Some(&auth.client_token));
    tracing::info!(accessor = %accessor, policies = ?auth.policies.iter().map(|p| crate::base::redact::redact(p)).collect::<Vec<_>>(), ttl = auth.lease_duration, "logged in: {what}");
    Ok(LoggedIn {
        token: auth.client_token,
        accessor,
        policies: auth.policies,
        ttl: auth.lease_duration,
        source: what,
    })
}

/// What can be read of the token in a login's answer that could not be read whole: the token
/// (registered for redaction), its accessor and time to live, each when it is there in its type.
fn issued_in(body: &[u8]) -> Issued {
    #[derive(Deserialize)]
    struct Envelope {
        auth: Option<Part>,
    }
    #[derive(Deserialize)]
    struct Part {
        #[serde(default)]
        client_token: Option<SecretString>,
        #[serde(default)]
        accessor: Option<serde_json::Value>,
        #[serde(default)]
        lease_duration: Option<serde_json::Value>,
    }
    let Some(part) = serde_json::from_slice::<Envelope>(body)
        .ok()
        .and_then(|e| e.auth)
    else {
        return Issued {
            token: None,
            accessor: None,
            ttl: 0,
        };
    };
    let token = part.client_token.filter(|t| !t.expose_secret().is_empty());
    if let Some(t) = &token {
        crate::base::redact::register(t);
    }
    Issued {
        accessor: part
            .accessor
            .as_ref()
            .and_then(|a| a.as_str())
            .map(|a| shown_accessor(a, token.as_ref())),
        ttl: part
            .lease_duration
            .as_ref()
            .and_then(|d| d.as_u64())
            .unwrap_or(0),
        token,
    }
}

/// What to do about a refused login, from Vault's reason. The reasons are OpenBao's own words
/// (sources cited per method); an unknown one gets the generic advice.
fn explain(method: &Method, status: u16, reasons: &[String], credentials: &Credentials) -> String {
    let said = reasons.join(" ").to_ascii_lowercase();
    let has = |s: &str| said.contains(s);
    let (mount, role, kind) = match method {
        Method::Kubernetes { mount, role, .. } | Method::Jwt { mount, role, .. } => {
            (mount.as_str(), role.as_str(), method.kind())
        }
        Method::AppRole { mount, role, .. } => (
            mount.as_str(),
            role.as_deref().unwrap_or("NAME"),
            Kind::Approle,
        ),
        Method::Token => return String::new(),
    };
    // A path no auth method serves: the router's "no handler for route" (404), or a mount of
    // another type that has no `login` (405 "unsupported operation").
    if status == 404 || has("no handler for route") {
        return format!(
            "no auth method is enabled at `auth/{mount}`: enable it (`bao auth enable -path={mount} {}`) or pass the right `--auth-mount`",
            kind.name()
        );
    }
    if status == 405 || has("unsupported operation") {
        return format!(
            "`auth/{mount}` is not a `{}` auth method: pass the right `--auth-mount` or `--auth`",
            kind.name()
        );
    }
    let claims = Claims::of(credentials, method);
    match method {
        // builtin/credential/kubernetes/path_login.go: `invalid role name %q` (400) for an
        // unknown role; `service account name not authorized` / `namespace not authorized`
        // (403) from the role's bindings; the JWT validator's error (403) for a wrong audience
        // or an expired token; a bare `permission denied` (403) when the TokenReview lookup
        // fails, whatever the reason (token_review.go: not authenticated, unreachable API
        // server, audiences that do not overlap, a username that is not a service account).
        Method::Kubernetes { .. } => {
            let sa = claims.service_account();
            if has("invalid role name") {
                format!("role `{role}` does not exist at `auth/{mount}`: create it (`bao write auth/{mount}/role/{role} bound_service_account_names=vault-seed bound_service_account_namespaces=NAMESPACE token_policies=vault-seed token_ttl=15m`), or pass the right `--role` / `--auth-mount`")
            } else if has("service account name not authorized") {
                format!("role `{role}` is not bound to service account {sa}: add its name to the role's `bound_service_account_names`, or run vault-seed as a service account the role names (the Job's `serviceAccountName`)")
            } else if has("namespace not authorized") {
                format!("role `{role}` is not bound to the namespace of service account {sa}: add the namespace to the role's `bound_service_account_namespaces`, or run the Job in a namespace the role names")
            } else if has("(aud)") || has("audience") {
                format!("the service-account token's audience ({}) is not role `{role}`'s `audience`: give the role the token's audience, or mount a projected token with the role's audience (`serviceAccountToken.audience`) and point `--jwt-file` at it", claims.audiences())
            } else if has("expired") || has("(exp)") {
                "the service-account token has expired: point `--jwt-file` at the pod's current token (the kubelet rotates projected tokens)".to_string()
            } else if has("could not load backend configuration") {
                format!("`auth/{mount}` is not configured: `bao write auth/{mount}/config kubernetes_host=https://KUBERNETES_API:443`")
            } else if status == 403 && has("permission denied") {
                format!("the JWT of service account {sa} passed role `{role}`'s bindings, but Kubernetes did not confirm it: OpenBao asks the TokenReview API at the `kubernetes_host` of `auth/{mount}/config`, which either said the token is not valid (the service account was deleted or recreated, the token was revoked, its audiences are not the role's) or could not be reached; OpenBao's log says which at debug level. Check `bao read auth/{mount}/config`, that OpenBao reaches the API server, and that its reviewer may create TokenReviews (ClusterRole `system:auth-delegator`)")
            } else {
                format!("check role `{role}` (`bao read auth/{mount}/role/{role}`) and `auth/{mount}/config`; OpenBao's log has the details")
            }
        }
        // builtin/credential/jwt/path_login.go: `role %q could not be found` (400); `error
        // validating token: ...` (signature, issuer, expiry); `error validating claims: ...`
        // (bound_claims, bound_subject); the audience checks; `could not load configuration`.
        Method::Jwt { .. } => {
            if has("could not be found") {
                format!("role `{role}` does not exist at `auth/{mount}`: create it (`bao write auth/{mount}/role/{role} role_type=jwt user_claim=sub bound_audiences=... bound_claims=... token_policies=vault-seed token_ttl=15m`), or pass the right `--role` / `--auth-mount`")
            } else if has("no audiences bound") {
                format!("the JWT has an audience ({}) but role `{role}` binds none: set the role's `bound_audiences`", claims.audiences())
            } else if has("(aud)") || has("audience") {
                format!("the JWT's audience ({}) is not among role `{role}`'s `bound_audiences`: issue the token for that audience (GitLab CI: `id_tokens: VAULT_ID_TOKEN: aud: <audience>`), or add it to the role", claims.audiences())
            } else if has("expired") || has("(exp)") {
                "the JWT has expired: CI ID tokens live minutes; take a fresh one".to_string()
            } else if has("could not load configuration") {
                format!("`auth/{mount}` is not configured: `bao write auth/{mount}/config` with `jwt_validation_pubkeys`, `jwks_url` or `oidc_discovery_url`")
            } else if has("validating claims") || has("claim") {
                format!("the JWT's claims do not match role `{role}`'s `bound_claims`/`bound_subject` (GitLab: `project_path`, `ref`, `ref_type`): run from the project and branch the role names, or change the role")
            } else if has("validating token") || has("signature") || has("issuer") {
                format!("the JWT does not verify against `auth/{mount}/config` (its keys: `jwt_validation_pubkeys`, `jwks_url`; `bound_issuer`): check that the role and the config are for this issuer")
            } else {
                format!("check role `{role}` (`bao read auth/{mount}/role/{role}`) and `auth/{mount}/config`")
            }
        }
        // builtin/credential/approle/path_login.go: `invalid role or secret ID` (400) for an
        // unknown role-id, a wrong, expired or used-up secret-id; `invalid secret_id %q` (which
        // quotes it: shown redacted); a CIDR binding's refusal.
        Method::AppRole { .. } => {
            if has("invalid role or secret id") || has("invalid secret_id") {
                format!("the role-id or the secret-id is wrong, or the secret-id has expired or was used up (`secret_id_ttl`, `secret_id_num_uses`): issue a new one (`bao write -f auth/{mount}/role/{role}/secret-id`) and update `--secret-id-file`")
            } else if has("cidr") || has("source address") {
                format!("the role's or secret-id's CIDR binding refuses this address: run from an allowed network or change `secret_id_bound_cidrs`/`token_bound_cidrs` of role `{role}`")
            } else {
                format!("check the role at `auth/{mount}/role/{role}` and its secret-ids")
            }
        }
        Method::Token => String::new(),
    }
}

/// What a JWT says about itself, read without checking its signature (Vault checks it): only to
/// name the service account or the audience in a message. Values are shown redacted and
/// cleaned (a hostile token is text from outside).
#[derive(Default)]
struct Claims {
    sa_namespace: Option<String>,
    sa_name: Option<String>,
    audiences: Vec<String>,
    source: String,
}

impl Claims {
    fn of(credentials: &Credentials, method: &Method) -> Claims {
        use base64::Engine as _;
        let source = match method {
            Method::Kubernetes { jwt_file, .. } => format!("(from `{}`)", jwt_file.display()),
            Method::Jwt { jwt, .. } => format!("(from {jwt})"),
            _ => String::new(),
        };
        #[derive(Deserialize)]
        struct Body<'a> {
            #[serde(borrow)]
            jwt: Option<std::borrow::Cow<'a, str>>,
        }
        let body: Option<Body<'_>> = serde_json::from_slice(&credentials.body).ok();
        let payload = body
            .and_then(|b| b.jwt)
            .and_then(|jwt| jwt.split('.').nth(1).map(str::to_string))
            .map(zeroize::Zeroizing::new)
            .and_then(|p| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p.trim_end_matches('='))
                    .ok()
            })
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
        let Some(claims) = payload else {
            return Claims {
                source,
                ..Claims::default()
            };
        };
        let text = |v: &serde_json::Value| v.as_str().map(crate::base::redact::redact);
        // Projected tokens (`kubernetes.io: {namespace, serviceaccount: {name}}`) and the legacy
        // secret-based ones (`kubernetes.io/serviceaccount/namespace`), as path_login.go reads
        // them.
        let k8s = &claims["kubernetes.io"];
        let sa_namespace = text(&k8s["namespace"])
            .or_else(|| text(&claims["kubernetes.io/serviceaccount/namespace"]));
        let sa_name = text(&k8s["serviceaccount"]["name"])
            .or_else(|| text(&claims["kubernetes.io/serviceaccount/service-account.name"]));
        let audiences = match &claims["aud"] {
            serde_json::Value::String(a) => vec![crate::base::redact::redact(a)],
            serde_json::Value::Array(list) => list.iter().filter_map(text).take(8).collect(),
            _ => Vec::new(),
        };
        Claims {
            sa_namespace,
            sa_name,
            audiences,
            source,
        }
    }

    /// `` `ask/vault-seed` (from `FILE`) ``, or what is known of it.
    fn service_account(&self) -> String {
        match (&self.sa_namespace, &self.sa_name) {
            (Some(ns), Some(n)) => format!("`{ns}/{n}` {}", self.source),
            (None, Some(n)) => format!("`{n}` {}", self.source),
            _ => format!("of the token {}", self.source),
        }
    }

    /// `` `a`, `b` `` or `none`.
    fn audiences(&self) -> String {
        if self.audiences.is_empty() {
            "none".into()
        } else {
            self.audiences
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

impl Vault {
    /// Revoke the client's own token (`auth/token/revoke-self`).
    pub async fn revoke_self(&self) -> Result<(), VaultError> {
        self.send(
            || Call::post("auth/token/revoke-self", b"{}".to_vec()),
            "update",
        )
        .await?;
        Ok(())
    }
}

/// Revokes a logged-in token at the end of the command, whichever way it ends (an error, a
/// panic that unwinds, a stop signal: [`crate::base::stop`]), unless it is kept (`--keep-token`).
///
/// Made before the login is sent: a stop signal while the login is out waits (boundedly) for
/// its answer, so that a token Vault issues just then is revoked too. The token is revoked with
/// a client of its own, in a short runtime on a thread of its own: from the end of the command
/// (inside or outside a runtime) and from the signal's thread alike. Whichever of the two comes
/// first revokes; the other waits for it.
pub struct Revoker {
    shared: Arc<Shared>,
    keep: bool,
    _on_stop: Option<crate::base::stop::Registered>,
}

struct Shared {
    held: Mutex<Held>,
    changed: Condvar,
}

/// Where the login's token stands.
enum Held {
    /// The login is out: a token may come.
    Pending,
    /// A token to revoke with `vault`, a client that carries it.
    Token {
        vault: Box<Vault>,
        accessor: String,
        ttl: u64,
    },
    /// Vault issued a token that vault-seed cannot send, or answered so that its token cannot
    /// be read: it may be alive, and all vault-seed can do is say so.
    Unrevocable {
        accessor: Option<String>,
        ttl: u64,
        why: String,
    },
    /// Being revoked, or said, by the other side.
    Settling,
    /// Nothing (more) to do.
    Done,
}

/// What Vault's answer to a login said of the token it issued, when vault-seed could not use
/// that answer ([`LoginError::Unusable`]). Not `Debug` beyond what may be shown.
pub struct Issued {
    /// The token, when its text could be read from the answer.
    pub token: Option<SecretString>,
    /// Its accessor, as shown ([`shown_accessor`]).
    pub accessor: Option<String>,
    /// Its time to live, in seconds (0: unknown or none).
    pub ttl: u64,
}

impl fmt::Debug for Issued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Issued")
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("accessor", &self.accessor)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl Revoker {
    /// A revoker for the login about to be sent.
    pub fn before_login(keep: bool) -> Revoker {
        let shared = Arc::new(Shared {
            held: Mutex::new(Held::Pending),
            changed: Condvar::new(),
        });
        let on_stop = (!keep).then(|| {
            let shared = shared.clone();
            crate::base::stop::on_stop(move || settle(&shared, false, true))
        });
        Revoker {
            shared,
            keep,
            _on_stop: on_stop,
        }
    }

    /// The login's token, revoked with `vault`, a client of its own that carries it.
    pub fn hold(&self, vault: Vault, accessor: &str, ttl: u64) {
        self.set(Held::Token {
            vault: Box::new(vault),
            accessor: accessor.to_string(),
            ttl,
        });
    }

    /// Vault issued a token that cannot be revoked (`why`): said at the end, with how to find
    /// and revoke it.
    pub fn unrevocable(&self, accessor: Option<&str>, ttl: u64, why: String) {
        self.set(Held::Unrevocable {
            accessor: accessor.map(str::to_string),
            ttl,
            why,
        });
    }

    fn set(&self, to: Held) {
        let mut held = lock(&self.shared);
        *held = to;
        self.shared.changed.notify_all();
    }
}

impl Drop for Revoker {
    fn drop(&mut self) {
        settle(&self.shared, self.keep, false);
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Held> {
    shared.held.lock().unwrap_or_else(|e| e.into_inner())
}

/// Revoke the token, or say that it is kept or may be alive, once: the first caller does it,
/// a caller that comes while it runs waits for it (boundedly). `wait_for_login`: a login still
/// out is waited for (a stop signal's caller); else a login still out never issued a token.
fn settle(shared: &Shared, keep: bool, wait_for_login: bool) {
    let deadline = std::time::Instant::now() + REVOKE_WITHIN + Duration::from_secs(1);
    let mut held = lock(shared);
    loop {
        match &*held {
            Held::Pending if wait_for_login => {}
            Held::Pending => {
                *held = Held::Done;
                return;
            }
            Held::Settling => {}
            Held::Done => return,
            Held::Token { .. } | Held::Unrevocable { .. } => break,
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            if matches!(*held, Held::Pending) {
                say(&format!(
                    "warning: the login was still unanswered: if Vault issued a token, it is alive; {}",
                    find_it(None)
                ));
            }
            return;
        }
        held = shared
            .changed
            .wait_timeout(held, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    let taken = std::mem::replace(&mut *held, Held::Settling);
    drop(held);
    match taken {
        Held::Token {
            vault,
            accessor,
            ttl,
        } => {
            if keep {
                say(&format!(
                    "note: the login token is kept (--keep-token): accessor `{accessor}`; {}",
                    expires(ttl)
                ));
            } else {
                match revoke(*vault) {
                    Ok(()) => tracing::info!(accessor = %accessor, "login token revoked"),
                    Err(e) => say(&format!(
                        "warning: could not revoke the login token (accessor `{accessor}`): {e}; {}",
                        expires(ttl)
                    )),
                }
            }
        }
        Held::Unrevocable { accessor, ttl, why } => say(&format!(
            "warning: Vault issued a login token that vault-seed could not use ({why}): it may be alive; {}{}",
            find_it(accessor.as_deref()),
            if ttl > 0 { format!(" (it expires by itself in {ttl} s)") } else { String::new() }
        )),
        _ => {}
    }
    *lock(shared) = Held::Done;
    shared.changed.notify_all();
}

/// How a token's end comes, for a message.
fn expires(ttl: u64) -> String {
    if ttl > 0 {
        format!("it expires by itself in {ttl} s")
    } else {
        "it has no time to live: revoke it by hand".to_string()
    }
}

/// How to find and revoke a token vault-seed could not revoke.
fn find_it(accessor: Option<&str>) -> String {
    match accessor {
        Some(a) => format!("revoke it with `bao token revoke -accessor {a}`"),
        None => "find it with `bao list auth/token/accessors` and `bao token lookup -accessor ACCESSOR` (its `display_name` names the auth method), then `bao token revoke -accessor ACCESSOR`".to_string(),
    }
}

/// Revoke `vault`'s token, within [`REVOKE_WITHIN`], in a runtime of its own on a thread of its
/// own (a runtime cannot be started on a thread that runs one).
fn revoke(vault: Vault) -> Result<(), String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                match tokio::time::timeout(REVOKE_WITHIN, vault.revoke_self()).await {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(_) => Err(format!("no answer within {}s", REVOKE_WITHIN.as_secs())),
                }
            })
        })
        .join()
        .unwrap_or_else(|_| Err("the revoking thread panicked".into()))
    })
}

/// A server's accessor as it may be shown: never the token itself, cleaned and capped like all
/// server text ([`crate::base::redact::redact`]).
pub fn shown_accessor(accessor: &str, token: Option<&SecretString>) -> String {
    if token.is_some_and(|t| t.expose_secret() == accessor) {
        return "(not shown: Vault gave the token itself as its accessor)".to_string();
    }
    crate::base::redact::redact(accessor)
}

/// A line on stderr at the end of a run (the report is printed by then); a stderr that is gone is
/// no reason not to revoke.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kind: Kind) -> Options {
        Options {
            kind,
            ..Options::default()
        }
    }

    #[test]
    fn each_method_takes_its_inputs_and_refuses_others() {
        assert_eq!(opts(Kind::Token).method().unwrap(), Method::Token);
        let k = Options {
            role: Some("vault-seed".into()),
            ..opts(Kind::Kubernetes)
        };
        assert_eq!(
            k.method().unwrap(),
            Method::Kubernetes {
                mount: "kubernetes".into(),
                role: "vault-seed".into(),
                jwt_file: PathBuf::from(SERVICE_ACCOUNT_TOKEN),
            }
        );
        let e = opts(Kind::Kubernetes).method().unwrap_err();
        assert!(e.to_string().contains("needs `--role`"), "{e}");
        assert!(e.is_usage());
        let e = Options {
            role_id_file: Some("r".into()),
            ..k.clone()
        }
        .method()
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("`--role-id-file` is not used by `--auth kubernetes`"),
            "{e}"
        );
        let e = Options {
            role: Some("x".into()),
            ..opts(Kind::Token)
        }
        .method()
        .unwrap_err();
        assert!(e
            .to_string()
            .contains("`--role` is not used by `--auth token`"));
        let j = Options {
            role: Some("ci".into()),
            jwt_env: Some("VAULT_ID_TOKEN".into()),
            mount: Some("/gitlab/".into()),
            ..opts(Kind::Jwt)
        };
        assert_eq!(
            j.method().unwrap(),
            Method::Jwt {
                mount: "gitlab".into(),
                role: "ci".into(),
                jwt: JwtSource::Env("VAULT_ID_TOKEN".into())
            }
        );
        let e = Options {
            jwt_file: Some("f".into()),
            ..j.clone()
        }
        .method()
        .unwrap_err();
        assert!(e.to_string().contains("both name the JWT"), "{e}");
        let e = Options { jwt_env: None, ..j }.method().unwrap_err();
        assert!(e.to_string().contains("needs the JWT"), "{e}");
        let e = Options {
            role_id_file: Some("r".into()),
            ..opts(Kind::Approle)
        }
        .method()
        .unwrap_err();
        assert!(e.to_string().contains("`--secret-id-file`"), "{e}");
    }

    #[test]
    fn mounts_and_roles_that_cannot_be_a_path_are_refused() {
        for bad in [
            "",
            "/",
            "auth/kubernetes",
            "a//b",
            "a/../b",
            "k8s?x",
            "a b",
            "a\u{1b}b",
        ] {
            let e = Options {
                role: Some("r".into()),
                mount: Some(bad.into()),
                ..opts(Kind::Kubernetes)
            }
            .method()
            .unwrap_err();
            assert!(e.to_string().contains("--auth-mount"), "{bad:?}: {e}");
        }
        assert_eq!(check_mount("k8s/cluster-1/").unwrap(), "k8s/cluster-1");
        for bad in ["", "a/b", "x\ny"] {
            let e = Options {
                role: Some(bad.into()),
                ..opts(Kind::Kubernetes)
            }
            .method()
            .unwrap_err();
            assert!(e.to_string().contains("--role"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn credentials_are_read_trimmed_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("jwt");
        std::fs::write(&f, "  eyJhbGciOiJFUzI1NiJ9.e30.c2ln-login-unit\n").unwrap();
        let m = Method::Kubernetes {
            mount: "kubernetes".into(),
            role: "vault-seed".into(),
            jwt_file: f.clone(),
        };
        let c = m.credentials().unwrap();
        let body: serde_json::Value = serde_json::from_slice(&c.body).unwrap();
        assert_eq!(body["jwt"], "eyJhbGciOiJFUzI1NiJ9.e30.c2ln-login-unit");
        assert_eq!(body["role"], "vault-seed");
        // Registered: server text quoting it is redacted.
        assert!(
            !crate::base::redact::redact("bad eyJhbGciOiJFUzI1NiJ9.e30.c2ln-login-unit")
                .contains("c2ln-login-unit")
        );
        std::fs::write(&f, " \n").unwrap();
        let e = m.credentials().err().unwrap();
        assert!(e.to_string().contains("is empty") && e.is_usage(), "{e}");
        std::fs::write(&f, vec![b'a'; 70 * 1024]).unwrap();
        assert!(m
            .credentials()
            .err()
            .unwrap()
            .to_string()
            .contains("larger than"));
        let missing = Method::Kubernetes {
            mount: "kubernetes".into(),
            role: "r".into(),
            jwt_file: PathBuf::from(SERVICE_ACCOUNT_TOKEN),
        };
        if !Path::new(SERVICE_ACCOUNT_TOKEN).exists() {
            let e = missing.credentials().err().unwrap();
            assert!(e.to_string().contains(SERVICE_ACCOUNT_TOKEN), "{e}");
            assert!(e.help().unwrap().contains("--jwt-file"));
        }
    }

    #[test]
    fn claims_name_the_service_account_and_audience_without_trusting_them() {
        use base64::Engine as _;
        let enc = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        let jwt = format!(
            "{}.{}.sig",
            enc(serde_json::json!({"alg": "ES256"})),
            enc(serde_json::json!({
                "aud": ["https://kubernetes.default.svc", "evil\u{1b}[2J"],
                "kubernetes.io": {"namespace": "ask", "serviceaccount": {"name": "vault-seed", "uid": "u"}},
            }))
        );
        let method = Method::Kubernetes {
            mount: "kubernetes".into(),
            role: "r".into(),
            jwt_file: "/t".into(),
        };
        let credentials = Credentials {
            method: method.clone(),
            body: login_body(&RoleJwt {
                role: "r",
                jwt: &jwt,
            }),
        };
        let c = Claims::of(&credentials, &method);
        assert_eq!(c.service_account(), "`ask/vault-seed` (from `/t`)");
        assert_eq!(
            c.audiences(),
            "`https://kubernetes.default.svc`, `evil\\u{1b}[2J`"
        );
        let garbage = Credentials {
            method: method.clone(),
            body: login_body(&RoleJwt {
                role: "r",
                jwt: "not-a-jwt",
            }),
        };
        assert_eq!(
            Claims::of(&garbage, &method).service_account(),
            "of the token (from `/t`)"
        );
    }
}
