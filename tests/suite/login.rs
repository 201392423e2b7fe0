//! Logging in without a token: `--auth kubernetes|jwt|approle` against a real OpenBao with the
//! auth methods enabled. Kubernetes auth asks the TokenReview API of the fake Kubernetes API
//! server (tests/suite/common/fake_kube.rs) about each JWT.
//!
//! vault-seed runs behind a recording proxy (tests/suite/common/proxy.rs), so each test sees every
//! request it sends and the token it sends them with: the login is one request without a token,
//! a refused login is the only request, and the token it logged in with is revoked at the end
//! (Vault no longer knows it, and the token accessors are those from before the run).

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use common::fake_kube::{self, FakeKube, Review};
use common::jwt::{self, Signer};
use common::proxy::{Fault, FaultProxy, Verdict};
use common::{has, text, OpenBao, Run};
use serde_json::{json, Value};

const FOLDER: &str = "ask/core-service/auh1-dev";

/// Enough for `apply` and `verify --skip-kube` of the real spec (the seeder policy of
/// `vault-seed policy --for seeder` is tested on its own).
const SEEDER: &str = r#"
path "secret/data/ask/*"         { capabilities = ["create", "read", "update"] }
path "secret/metadata/ask/*"     { capabilities = ["read", "list", "update"] }
path "sys/internal/ui/mounts/*"  { capabilities = ["read"] }
"#;

fn ok(status: u16, body: &Value, what: &str) {
    assert!((200..300).contains(&status), "{what}: HTTP {status} {body}");
}

/// A proxy in front of OpenBao that keeps every byte vault-seed sends.
struct Recorder {
    proxy: FaultProxy,
    sent: Arc<Mutex<Vec<u8>>>,
}

impl Recorder {
    fn start(bao: &OpenBao) -> Recorder {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let keep = sent.clone();
        let proxy = FaultProxy::start(&bao.addr, move |_| {
            let keep = keep.clone();
            Fault::Requests(Arc::new(move |chunk: &[u8]| {
                keep.lock().unwrap().extend_from_slice(chunk);
                Verdict::Forward
            }))
        });
        Recorder { proxy, sent }
    }

    fn lines(&self) -> Vec<String> {
        text(&self.sent.lock().unwrap())
            .split("\r\n")
            .map(str::to_string)
            .collect()
    }

    /// Request lines: `POST /v1/auth/kubernetes/login`.
    fn requests(&self) -> Vec<String> {
        // A request line may follow the previous request's body on the same line.
        self.lines()
            .into_iter()
            .filter_map(|l| {
                let l = l.strip_suffix(" HTTP/1.1")?;
                let start = ["GET", "POST", "PUT", "LIST", "DELETE"]
                    .iter()
                    .filter_map(|m| l.rfind(&format!("{m} /v1/")))
                    .max()?;
                Some(l[start..].to_string())
            })
            .collect()
    }

    /// Every `X-Vault-Token` value sent.
    fn tokens(&self) -> BTreeSet<String> {
        self.lines()
            .into_iter()
            .filter_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("x-vault-token")
                    .then(|| value.trim().to_string())
            })
            .collect()
    }

    fn count(&self, request: &str) -> usize {
        self.requests().iter().filter(|r| *r == request).count()
    }
}

/// `vault-seed` with no Vault token anywhere: HOME is an empty directory, no VAULT_TOKEN. At
/// `RUST_LOG=trace`, so that every login test's search of the output for the JWT, secret-id
/// and token ([`never_shown`]) covers the most vault-seed logs.
fn seed(rec: &Recorder, home: &Path) -> Run {
    Run::home(home)
        .addr(&rec.proxy.addr)
        .real_specs()
        .env("RUST_LOG", "trace")
}

/// The token accessors Vault holds now.
fn accessors(bao: &OpenBao) -> BTreeSet<String> {
    accessors_at(bao, "")
}

/// The token accessors of namespace `ns` (`team/`), or of the root namespace (``).
fn accessors_at(bao: &OpenBao, ns: &str) -> BTreeSet<String> {
    let (status, body) = bao.api("LIST", &format!("{ns}auth/token/accessors"), None);
    if status == 404 {
        return BTreeSet::new();
    }
    ok(status, &body, "list accessors");
    body["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect()
}

/// Whether Vault still knows `token`.
fn token_alive(bao: &OpenBao, token: &str) -> bool {
    let (status, _) = bao.api(
        "POST",
        "auth/token/lookup",
        Some(&json!({ "token": token })),
    );
    status == 200
}

/// Every value of the real spec's paths, read back with the root token (not the placeholders'
/// marker, which is no secret).
fn values(bao: &OpenBao) -> Vec<String> {
    let (status, body) = bao.api("LIST", &format!("secret/metadata/{FOLDER}"), None);
    if status != 200 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for k in body["data"]["keys"].as_array().unwrap() {
        let (data, _) = bao
            .kv_get("secret", &format!("{FOLDER}/{}", k.as_str().unwrap()))
            .unwrap();
        out.extend(
            data.values()
                .map(|v| v.as_str().unwrap().to_string())
                .filter(|v| v != "placeholder"),
        );
    }
    out
}

/// Nothing was written: the spec's folder does not exist.
fn nothing_written(bao: &OpenBao) {
    let (status, body) = bao.api("LIST", &format!("secret/metadata/{FOLDER}"), None);
    assert_eq!(status, 404, "something was written: {body}");
}

/// None of `secrets` in stdout or stderr.
fn never_shown(out: &Output, secrets: &[&str]) {
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    for (i, s) in secrets.iter().enumerate() {
        assert!(s.len() >= 8, "a secret too short to search for: {s:?}");
        assert!(!all.contains(s), "secret {i} appears in the output:\n{all}");
    }
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// OpenBao with the seeder policy, and kubernetes auth at `auth/kubernetes` asking the API
/// server at `kube_host` (with `reviewer` as its TokenReview bearer); role `vault-seed` bound
/// to service account `ask/vault-seed`.
fn kubernetes_auth(kube_host: &str, reviewer: &str) -> OpenBao {
    let bao = OpenBao::dev();
    bao.put_policy("vault-seed", SEEDER);
    let (s, b) = bao.api(
        "POST",
        "sys/auth/kubernetes",
        Some(&json!({"type": "kubernetes"})),
    );
    ok(s, &b, "enable kubernetes auth");
    let (s, b) = bao.api(
        "POST",
        "auth/kubernetes/config",
        Some(&json!({
            "kubernetes_host": kube_host,
            "kubernetes_ca_cert": fake_kube::some_ca_pem(),
            "disable_local_ca_jwt": true,
            "token_reviewer_jwt": reviewer,
        })),
    );
    ok(s, &b, "kubernetes auth config");
    let (s, b) = bao.api(
        "POST",
        "auth/kubernetes/role/vault-seed",
        Some(&json!({
            "bound_service_account_names": ["vault-seed"],
            "bound_service_account_namespaces": ["ask"],
            "token_policies": ["vault-seed"],
            "token_ttl": "15m",
        })),
    );
    ok(s, &b, "kubernetes role");
    bao
}

const SA_UID: &str = "3f6c0d2a-7b1e-4c5d-9e8f-0a1b2c3d4e5f";
const K8S_AUD: &str = "https://kubernetes.default.svc.cluster.local";

fn authenticated(name: &str) -> Review {
    Review::Authenticated {
        namespace: "ask".into(),
        name: name.into(),
        uid: SA_UID.into(),
        audiences: None,
    }
}

#[test]
fn kubernetes_login_seeds_the_spec_and_revokes_its_token() {
    let kube = FakeKube::start();
    kube.answer_token_reviews(authenticated("vault-seed"));
    let bao = kubernetes_auth(&kube.addr, &kube.token);
    let signer = Signer::new();
    let sa_jwt = signer.sign(&jwt::service_account_claims(
        "ask",
        "vault-seed",
        SA_UID,
        &[K8S_AUD],
    ));
    let dir = tempfile::tempdir().unwrap();
    let jwt_file = write(dir.path(), "token", &format!("{sa_jwt}\n"));
    let before = accessors(&bao);
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .env("RUST_LOG", "trace")
        .args([
            "apply",
            "auh1-dev",
            "--auth",
            "kubernetes",
            "--role",
            "vault-seed",
        ])
        .arg("--jwt-file")
        .arg(&jwt_file)
        .stderr_has("token from kubernetes login at `auth/kubernetes` as role `vault-seed`")
        .output();
    let stderr = text(&out.stderr);
    // It did its work: every path of the spec exists.
    let written = values(&bao);
    assert_eq!(written.len(), 4, "{stderr}");
    // One login, first, without a token; one revoke-self, last.
    let requests = rec.requests();
    assert_eq!(
        requests[0], "POST /v1/auth/kubernetes/login",
        "{requests:?}"
    );
    assert_eq!(rec.count("POST /v1/auth/kubernetes/login"), 1);
    assert_eq!(
        requests.last().map(String::as_str),
        Some("POST /v1/auth/token/revoke-self"),
        "{requests:?}"
    );
    let tokens = rec.tokens();
    assert_eq!(tokens.len(), 1, "one token for the whole run: {tokens:?}");
    let token = tokens.iter().next().unwrap();
    assert!(!token_alive(&bao, token), "the login token is still valid");
    assert_eq!(
        accessors(&bao),
        before,
        "the login token's accessor is left"
    );
    // OpenBao asked TokenReview about exactly this JWT.
    let reviews = kube.token_reviews();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    assert_eq!(reviews[0]["spec"]["token"], sa_jwt.as_str());
    // At trace level: neither the JWT, the client token nor a value.
    let mut secrets = vec![sa_jwt.as_str(), token.as_str()];
    secrets.extend(written.iter().map(String::as_str).filter(|v| v.len() >= 8));
    never_shown(&out, &secrets);
}

#[test]
fn keep_token_leaves_the_login_token_alive_and_names_only_its_accessor() {
    let kube = FakeKube::start();
    kube.answer_token_reviews(authenticated("vault-seed"));
    let bao = kubernetes_auth(&kube.addr, &kube.token);
    let sa_jwt = Signer::new().sign(&jwt::service_account_claims(
        "ask",
        "vault-seed",
        SA_UID,
        &[K8S_AUD],
    ));
    let dir = tempfile::tempdir().unwrap();
    let jwt_file = write(dir.path(), "token", &sa_jwt);
    let rec = Recorder::start(&bao);
    // The environment's spelling of every option, and `--keep-token` before the command.
    let out = seed(&rec, dir.path())
        .env("VAULT_SEED_AUTH", "kubernetes")
        .env("VAULT_SEED_ROLE", "vault-seed")
        .env("VAULT_SEED_JWT_FILE", &jwt_file)
        .env("RUST_LOG", "trace")
        .args(["--keep-token", "verify", "auh1-dev", "--skip-kube"])
        // Nothing is seeded yet: verify says not done, after logging in.
        .status(1)
        .stdout_has("missing")
        .output();
    let stderr = text(&out.stderr);
    assert_eq!(rec.count("POST /v1/auth/token/revoke-self"), 0);
    let token = rec.tokens().into_iter().next().expect("a token was used");
    assert!(token_alive(&bao, &token));
    let (s, body) = bao.api(
        "POST",
        "auth/token/lookup",
        Some(&json!({ "token": token })),
    );
    ok(s, &body, "lookup");
    let accessor = body["data"]["accessor"].as_str().unwrap();
    has(
        &stderr,
        format!("the login token is kept (--keep-token): accessor `{accessor}`"),
    );
    assert_eq!(body["data"]["meta"]["service_account_name"], "vault-seed");
    never_shown(&out, &[sa_jwt.as_str(), token.as_str()]);
}

/// Run `apply` with a kubernetes login that must be refused: exit 1, the login named with
/// Vault's reason and what to do, the login the only request, nothing written.
fn refused(bao: &OpenBao, jwt: &str, role: &str, reason: &str, help: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let jwt_file = write(dir.path(), "token", jwt);
    let rec = Recorder::start(bao);
    let out = seed(&rec, dir.path())
        .env("RUST_LOG", "trace")
        .args(["apply", "auh1-dev", "--auth", "kubernetes", "--role", role])
        .arg("--jwt-file")
        .arg(&jwt_file)
        .status(1)
        .stderr_has(format!(
            "error: kubernetes login at `auth/kubernetes` as role `{role}` was refused"
        ))
        .stderr_has(reason)
        .stderr_has(help)
        .never_shows(jwt)
        .output();
    let stderr = text(&out.stderr);
    assert_eq!(
        rec.requests(),
        vec!["POST /v1/auth/kubernetes/login".to_string()]
    );
    assert!(
        rec.tokens().is_empty(),
        "a token was sent: {:?}",
        rec.tokens()
    );
    nothing_written(bao);
    never_shown(&out, &[jwt]);
    stderr
}

#[test]
fn kubernetes_refusals_name_the_login_give_the_reason_and_write_nothing() {
    let kube = FakeKube::start();
    kube.answer_token_reviews(authenticated("vault-seed"));
    let bao = kubernetes_auth(&kube.addr, &kube.token);
    let signer = Signer::new();
    let sa = |ns: &str, name: &str, aud: &str| {
        signer.sign(&jwt::service_account_claims(ns, name, SA_UID, &[aud]))
    };
    let good = sa("ask", "vault-seed", K8S_AUD);

    // A service account the role is not bound to.
    let stderr = refused(
        &bao,
        &sa("ask", "ci-runner", K8S_AUD),
        "vault-seed",
        "(HTTP 403): service account name not authorized",
        "role `vault-seed` is not bound to service account `ask/ci-runner`",
    );
    has(&stderr, "`bound_service_account_names`");
    refused(
        &bao,
        &sa("default", "vault-seed", K8S_AUD),
        "vault-seed",
        "namespace not authorized",
        "`bound_service_account_namespaces`",
    );

    // A role that does not exist.
    refused(
        &bao,
        &good,
        "seeder",
        "(HTTP 400): invalid role name \"seeder\"",
        "role `seeder` does not exist at `auth/kubernetes`: create it (`bao write auth/kubernetes/role/seeder",
    );

    // The role wants an audience the token does not carry.
    let (s, b) = bao.api(
        "POST",
        "auth/kubernetes/role/vault-seed-aud",
        Some(&json!({
            "bound_service_account_names": ["vault-seed"],
            "bound_service_account_namespaces": ["ask"],
            "token_policies": ["vault-seed"],
            "audience": "vault",
        })),
    );
    ok(s, &b, "role with audience");
    refused(
        &bao,
        &good,
        "vault-seed-aud",
        "(HTTP 403): invalid audience (aud) claim",
        &format!("the service-account token's audience (`{K8S_AUD}`) is not role `vault-seed-aud`'s `audience`"),
    );

    // TokenReview says the token is not valid (a deleted service account).
    kube.answer_token_reviews(Review::Unauthenticated {
        error: "[invalid bearer token, service account ask/vault-seed has been deleted]".into(),
    });
    let reviews = kube.token_reviews().len();
    refused(
        &bao,
        &good,
        "vault-seed",
        "(HTTP 403): permission denied",
        "Kubernetes did not confirm it: OpenBao asks the TokenReview API at the `kubernetes_host` of `auth/kubernetes/config`",
    );
    assert_eq!(
        kube.token_reviews().len(),
        reviews + 1,
        "TokenReview was asked"
    );

    // TokenReview cannot be reached: the API server is gone.
    let addr = kube.addr.clone();
    drop(kube);
    assert!(
        std::net::TcpStream::connect(addr.trim_start_matches("http://")).is_err(),
        "the fake API server still listens"
    );
    refused(
        &bao,
        &good,
        "vault-seed",
        "(HTTP 403): permission denied",
        "or could not be reached",
    );
}

#[test]
fn a_refused_login_is_one_json_failure_document() {
    let bao = kubernetes_auth("http://127.0.0.1:9", "reviewer");
    let dir = tempfile::tempdir().unwrap();
    let sa_jwt = Signer::new().sign(&jwt::service_account_claims(
        "ask",
        "other",
        SA_UID,
        &[K8S_AUD],
    ));
    let jwt_file = write(dir.path(), "token", &sa_jwt);
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .args(["-o", "json", "apply", "auh1-dev", "--auth", "kubernetes"])
        .args(["--role", "vault-seed", "--jwt-file"])
        .arg(&jwt_file)
        .status(1)
        .output();
    never_shown(&out, &[sa_jwt.as_str()]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["command"], "apply");
    let error = doc["error"].as_str().unwrap();
    assert!(
        error.starts_with("kubernetes login at `auth/kubernetes` as role `vault-seed` was refused (HTTP 403): service account name not authorized"),
        "{error}"
    );
    assert!(doc["help"]
        .as_str()
        .unwrap()
        .contains("bound_service_account_names"));
    nothing_written(&bao);
}

#[test]
fn options_that_make_no_login_send_nothing() {
    let bao = OpenBao::dev();
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::start(&bao);
    let cases: &[(&[&str], &str)] = &[
        (
            &["apply", "auh1-dev", "--auth", "kubernetes"],
            "`--auth kubernetes` needs `--role`",
        ),
        (
            // The default path, which does not exist outside a pod.
            &["apply", "auh1-dev", "--auth", "kubernetes", "--role", "r"],
            "cannot read the service-account token `/var/run/secrets/kubernetes.io/serviceaccount/token`",
        ),
        (
            &["apply", "auh1-dev", "--auth", "jwt", "--role", "ci", "--jwt-env", "NOT_SET_HERE"],
            "environment variable `NOT_SET_HERE` (`--jwt-env`) is not set or empty",
        ),
        (
            &["apply", "auh1-dev", "--auth", "jwt", "--jwt-env", "VAULT_ID_TOKEN"],
            "`--auth jwt` needs `--role`",
        ),
        (
            &["plan", "auh1-dev", "--auth", "approle", "--role-id-file", "x"],
            "`--auth approle` needs `--role-id-file` and `--secret-id-file`",
        ),
        (
            &["plan", "auh1-dev", "--role", "vault-seed"],
            "`--role` is not used by `--auth token`",
        ),
        (
            &["plan", "auh1-dev", "--auth", "kubernetes", "--role", "r", "--auth-mount", "auth/kubernetes"],
            "`--auth-mount auth/kubernetes` starts with `auth/`",
        ),
    ];
    // A JWT in the environment that a bad option leaves unused, searched for in the output.
    let id_token = Signer::new().sign(&jwt::gitlab_claims(
        "https://vault.example.invalid",
        "platform/secret-specs",
        "main",
    ));
    for (args, message) in cases {
        let out = seed(&rec, dir.path())
            .env("VAULT_ID_TOKEN", &id_token)
            .args(*args)
            .status(2)
            .stderr_has(*message)
            .stderr_has("help:")
            .output();
        never_shown(&out, &[id_token.as_str()]);
    }
    assert_eq!(
        rec.proxy
            .connections
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    // clap refuses a method it does not know, naming the ones it does.
    seed(&rec, dir.path())
        .args(["plan", "auh1-dev", "--auth", "userpass"])
        .status(2)
        .stderr_has("[possible values: token, kubernetes, jwt, approle]")
        .output();
}

/// OpenBao with jwt auth at `auth/jwt` checking `signer`'s key, and role `ci` shaped like
/// GitLab's: bound audience, `user_claim`, `bound_claims` on `project_path` and `ref`.
fn jwt_auth(signer: &Signer) -> OpenBao {
    let bao = OpenBao::dev();
    bao.put_policy("vault-seed", SEEDER);
    let (s, b) = bao.api("POST", "sys/auth/jwt", Some(&json!({"type": "jwt"})));
    ok(s, &b, "enable jwt auth");
    let (s, b) = bao.api(
        "POST",
        "auth/jwt/config",
        Some(&json!({
            "jwt_validation_pubkeys": [signer.public_pem],
            "bound_issuer": "https://gitlab.example.invalid",
        })),
    );
    ok(s, &b, "jwt config");
    let (s, b) = bao.api(
        "POST",
        "auth/jwt/role/ci",
        Some(&json!({
            "role_type": "jwt",
            "bound_audiences": ["https://vault.example.invalid"],
            "user_claim": "user_email",
            "bound_claims_type": "glob",
            "bound_claims": {"project_path": "platform/secret-specs", "ref": "main"},
            "token_policies": ["vault-seed"],
            "token_ttl": "10m",
        })),
    );
    ok(s, &b, "jwt role");
    bao
}

#[test]
fn jwt_login_with_a_gitlab_id_token_from_the_environment_or_a_file() {
    let signer = Signer::new();
    let bao = jwt_auth(&signer);
    // What ask-db provides exists, so that `verify --only vault` can be done.
    bao.ask_db_pushes();
    let id_token = signer.sign(&jwt::gitlab_claims(
        "https://vault.example.invalid",
        "platform/secret-specs",
        "main",
    ));
    let dir = tempfile::tempdir().unwrap();
    let before = accessors(&bao);
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .env("VAULT_ID_TOKEN", &id_token)
        .env("RUST_LOG", "trace")
        .args(["apply", "auh1-dev", "--auth", "jwt", "--role", "ci"])
        .args(["--jwt-env", "VAULT_ID_TOKEN"])
        .stderr_has("token from jwt login at `auth/jwt` as role `ci`")
        .output();
    let written = values(&bao);
    assert_eq!(written.len(), 4);
    let token = rec.tokens().into_iter().next().expect("a token");
    assert!(!token_alive(&bao, &token));
    assert_eq!(accessors(&bao), before);
    let mut secrets = vec![id_token.as_str(), token.as_str()];
    secrets.extend(written.iter().map(String::as_str).filter(|v| v.len() >= 8));
    never_shown(&out, &secrets);

    // The same token from a file, `verify --skip-kube`: done.
    let file = write(dir.path(), "id_token", &id_token);
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .args([
            "verify", "auh1-dev", "--only", "vault", "--auth", "jwt", "--role", "ci",
        ])
        .arg("--jwt-file")
        .arg(&file)
        .output();
    let token = rec.tokens().into_iter().next().expect("a token");
    let mut secrets = vec![id_token.as_str(), token.as_str()];
    secrets.extend(written.iter().map(String::as_str).filter(|v| v.len() >= 8));
    never_shown(&out, &secrets);
    assert_eq!(rec.count("POST /v1/auth/jwt/login"), 1);
    assert_eq!(rec.count("POST /v1/auth/token/revoke-self"), 1);
    assert_eq!(accessors(&bao), before);
}

#[test]
fn jwt_refusals_say_which_check_failed_and_write_nothing() {
    let signer = Signer::new();
    let bao = jwt_auth(&signer);
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            jwt::gitlab_claims("https://other.example.invalid", "platform/secret-specs", "main"),
            "invalid audience (aud) claim",
            "the JWT's audience (`https://other.example.invalid`) is not among role `ci`'s `bound_audiences`",
        ),
        (
            jwt::gitlab_claims("https://vault.example.invalid", "platform/secret-specs", "feature-x"),
            "error validating claims",
            "the JWT's claims do not match role `ci`'s `bound_claims`",
        ),
    ];
    for (claims, reason, help) in cases {
        let id_token = signer.sign(&claims);
        let rec = Recorder::start(&bao);
        let out = seed(&rec, dir.path())
            .env("CI_JOB_JWT", &id_token)
            .args(["apply", "auh1-dev", "--auth", "jwt", "--role", "ci"])
            .args(["--jwt-env", "CI_JOB_JWT"])
            .status(1)
            .stderr_has("error: jwt login at `auth/jwt` as role `ci` was refused (HTTP 400)")
            .stderr_has(reason)
            .stderr_has(help)
            .output();
        assert_eq!(rec.requests(), vec!["POST /v1/auth/jwt/login".to_string()]);
        never_shown(&out, &[id_token.as_str()]);
    }
    // A token signed by another key.
    let forged = Signer::new().sign(&jwt::gitlab_claims(
        "https://vault.example.invalid",
        "platform/secret-specs",
        "main",
    ));
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .env("CI_JOB_JWT", &forged)
        .args([
            "apply",
            "auh1-dev",
            "--auth",
            "jwt",
            "--role",
            "ci",
            "--jwt-env",
            "CI_JOB_JWT",
        ])
        .status(1)
        .stderr_has("does not verify against `auth/jwt/config`")
        .output();
    never_shown(&out, &[forged.as_str()]);
    nothing_written(&bao);
}

/// OpenBao with approle at `auth/<mount>` (in namespace `ns` when given), role `seeder`;
/// returns (role-id, secret-id).
fn approle(bao: &OpenBao, ns: Option<&str>, mount: &str) -> (String, String) {
    let call = |method: &str, path: &str, body: Option<Value>| {
        let path = match ns {
            Some(ns) => format!("{ns}/{path}"),
            None => path.to_string(),
        };
        let (s, b) = bao.api(method, &path, body.as_ref());
        ok(s, &b, &path);
        b
    };
    call(
        "PUT",
        "sys/policies/acl/vault-seed",
        Some(json!({ "policy": SEEDER })),
    );
    call(
        "POST",
        &format!("sys/auth/{mount}"),
        Some(json!({"type": "approle"})),
    );
    call(
        "POST",
        &format!("auth/{mount}/role/seeder"),
        Some(
            json!({"token_policies": ["vault-seed"], "token_ttl": "10m", "secret_id_num_uses": 0}),
        ),
    );
    let role_id = call("GET", &format!("auth/{mount}/role/seeder/role-id"), None)["data"]
        ["role_id"]
        .as_str()
        .unwrap()
        .to_string();
    let secret_id = call("POST", &format!("auth/{mount}/role/seeder/secret-id"), None)["data"]
        ["secret_id"]
        .as_str()
        .unwrap()
        .to_string();
    (role_id, secret_id)
}

#[test]
fn approle_login_from_files_and_a_wrong_secret_id_refused_unshown() {
    let bao = OpenBao::dev();
    let (role_id, secret_id) = approle(&bao, None, "approle");
    let dir = tempfile::tempdir().unwrap();
    let role_file = write(dir.path(), "role-id", &role_id);
    let secret_file = write(dir.path(), "secret-id", &format!("{secret_id}\n"));
    let before = accessors(&bao);
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .env("RUST_LOG", "trace")
        .env("VAULT_SEED_AUTH", "approle")
        .env("VAULT_SEED_ROLE_ID_FILE", &role_file)
        .env("VAULT_SEED_SECRET_ID_FILE", &secret_file)
        .args(["apply", "auh1-dev"])
        .output();
    let token = rec.tokens().into_iter().next().expect("a token");
    assert!(!token_alive(&bao, &token));
    assert_eq!(accessors(&bao), before);
    let written = values(&bao);
    let mut secrets = vec![secret_id.as_str(), token.as_str()];
    secrets.extend(written.iter().map(String::as_str).filter(|v| v.len() >= 8));
    never_shown(&out, &secrets);

    let wrong = "0a1b2c3d-wrong-4e5f-8a9b-secretid0001";
    let wrong_file = write(dir.path(), "wrong", wrong);
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .env("RUST_LOG", "trace")
        .args([
            "set",
            "auh1-dev",
            "IAM_SERVICE__PAT",
            "--auth",
            "approle",
            "--role",
            "seeder",
        ])
        .arg("--role-id-file")
        .arg(&role_file)
        .arg("--secret-id-file")
        .arg(&wrong_file)
        .stdin("a-real-pat-value-1234")
        .status(1)
        .stderr_has("error: approle login at `auth/approle` as role `seeder` was refused (HTTP 400): invalid role or secret ID")
        .stderr_has("issue a new one (`bao write -f auth/approle/role/seeder/secret-id`)")
        .output();
    assert_eq!(
        rec.requests(),
        vec!["POST /v1/auth/approle/login".to_string()]
    );
    never_shown(&out, &[wrong, secret_id.as_str(), "a-real-pat-value-1234"]);
}

#[test]
fn the_requests_after_a_login_reuse_its_connection() {
    // Over a network a new connection costs a round trip (two with TLS): the token check after
    // a login goes on the login's connection. One request at a time after the start-up
    // (`--concurrency 1`: no connection opened ahead), the run opens three: the login's (then
    // the token check's), the mount detection's (sent with the token check), and the
    // revocation's at the end (on a runtime of its own). A session with a client of its own
    // opens a fourth.
    let bao = OpenBao::dev();
    let (role_id, secret_id) = approle(&bao, None, "approle");
    let dir = tempfile::tempdir().unwrap();
    let role_file = write(dir.path(), "role-id", &role_id);
    let secret_file = write(dir.path(), "secret-id", &secret_id);
    let before = accessors(&bao);
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .env("VAULT_SEED_AUTH", "approle")
        .env("VAULT_SEED_ROLE_ID_FILE", &role_file)
        .env("VAULT_SEED_SECRET_ID_FILE", &secret_file)
        .args(["apply", "auh1-dev", "--concurrency", "1"])
        .output();
    assert_eq!(rec.count("POST /v1/auth/approle/login"), 1);
    assert_eq!(rec.count("POST /v1/auth/token/revoke-self"), 1);
    assert_eq!(
        rec.proxy
            .connections
            .load(std::sync::atomic::Ordering::SeqCst),
        3,
        "{:?}",
        rec.requests()
    );
    let token = rec.tokens().into_iter().next().expect("a token");
    assert!(!token_alive(&bao, &token));
    assert_eq!(accessors(&bao), before);
    let written = values(&bao);
    let mut secrets = vec![secret_id.as_str(), token.as_str()];
    secrets.extend(written.iter().map(String::as_str).filter(|v| v.len() >= 8));
    never_shown(&out, &secrets);
}

#[test]
fn the_login_happens_in_the_namespace() {
    let bao = OpenBao::dev();
    let (s, b) = bao.api("POST", "sys/namespaces/team", Some(&json!({})));
    ok(s, &b, "create namespace");
    let (s, b) = bao.api(
        "POST",
        "team/sys/mounts/secret",
        Some(&json!({"type": "kv", "options": {"version": "2"}})),
    );
    ok(s, &b, "mount kv in the namespace");
    let (role_id, secret_id) = approle(&bao, Some("team"), "ci/approle");
    let dir = tempfile::tempdir().unwrap();
    let role_file = write(dir.path(), "role-id", &role_id);
    let secret_file = write(dir.path(), "secret-id", &secret_id);
    // A token of the namespace's own, so that its accessor list is a list (an empty one is a
    // 404, which would also be what a wrong path gives).
    let (s, b) = bao.api("POST", "team/auth/token/create", Some(&json!({})));
    ok(s, &b, "a token in the namespace");
    let before = accessors_at(&bao, "team/");
    assert_eq!(before.len(), 1, "{before:?}");
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .env("VAULT_NAMESPACE", "team")
        .args([
            "apply",
            "auh1-dev",
            "--auth",
            "approle",
            "--auth-mount",
            "ci/approle",
        ])
        .arg("--role-id-file")
        .arg(&role_file)
        .arg("--secret-id-file")
        .arg(&secret_file)
        .output();
    assert_eq!(rec.requests()[0], "POST /v1/auth/ci/approle/login");
    // Written in the namespace, not at the root.
    let (s, _) = bao.api(
        "GET",
        &format!("team/secret/data/{FOLDER}/ZITADEL_MASTERKEY"),
        None,
    );
    assert_eq!(s, 200);
    nothing_written(&bao);
    let token = rec.tokens().into_iter().next().unwrap();
    let (s, body) = bao.api(
        "POST",
        "team/auth/token/lookup",
        Some(&json!({ "token": token })),
    );
    assert_eq!(
        (s, &body["errors"]),
        (403, &json!(["bad token"])),
        "the namespace's login token is not revoked: {body}"
    );
    assert_eq!(accessors_at(&bao, "team/"), before);
    never_shown(&out, &[secret_id.as_str(), token.as_str()]);
}

/// `sh -c 'mount -o remount,bind,ro / && exec "$@"'`: a private mount namespace whose root is
/// read-only (a pod's `readOnlyRootFilesystem`). We run the tests as root; a machine where the
/// namespace cannot be made fails here, saying why, instead of skipping.
fn read_only_root(program: &Path) -> std::process::Command {
    common::pod::in_private_mounts(
        "mount -o remount,bind,ro / || { echo 'cannot make / read-only in a private mount namespace (the test needs root and unshare -m)' >&2; exit 97; }; exec \"$@\"",
        program,
    )
}

#[test]
fn logs_in_and_seeds_with_no_home_on_a_read_only_root() {
    let bao = OpenBao::dev();
    let (role_id, secret_id) = approle(&bao, None, "approle");
    let dir = tempfile::tempdir().unwrap();
    let role_file = write(dir.path(), "role-id", &role_id);
    let secret_file = write(dir.path(), "secret-id", &secret_id);
    let rec = Recorder::start(&bao);
    let bin = common::run::bin();
    let out = read_only_root(&bin)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("VAULT_ADDR", &rec.proxy.addr)
        .arg("--specs")
        .arg(common::repo_specs())
        .args(["apply", "auh1-dev", "--auth", "approle"])
        .arg("--role-id-file")
        .arg(&role_file)
        .arg("--secret-id-file")
        .arg(&secret_file)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(97), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(values(&bao).len(), 4);
    assert_eq!(rec.count("POST /v1/auth/token/revoke-self"), 1);
    // The root really was read-only for it.
    let probe = read_only_root(Path::new("touch"))
        .arg(dir.path().join("probe"))
        .output()
        .unwrap();
    assert!(!probe.status.success() && !dir.path().join("probe").exists());
    has(&text(&probe.stderr), "Read-only file system");
    // With `--auth token` and no HOME, the missing token is named: no ~/.vault-token is read.
    let out = read_only_root(&bin)
        .env_clear()
        .env("VAULT_ADDR", &rec.proxy.addr)
        .arg("--specs")
        .arg(common::repo_specs())
        .args(["plan", "auh1-dev"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    has(&text(&out.stderr), "error: no Vault token");
}

/// Holds every request whose line starts with `prefix` until [`Hold::release`]: a run stopped
/// on cue, mid-way, with its login done.
struct Hold {
    prefix: String,
    /// (requests held now, released)
    state: Mutex<(u32, bool)>,
    changed: std::sync::Condvar,
}

impl Hold {
    fn new(prefix: &str) -> Arc<Hold> {
        Arc::new(Hold {
            prefix: prefix.to_string(),
            state: Mutex::new((0, false)),
            changed: std::sync::Condvar::new(),
        })
    }

    fn proxy(self: &Arc<Self>, bao: &OpenBao) -> FaultProxy {
        let hold = self.clone();
        FaultProxy::with_hook(
            &bao.addr,
            Arc::new(move |chunk: &[u8]| {
                if chunk.starts_with(hold.prefix.as_bytes()) {
                    let mut st = hold.state.lock().unwrap();
                    if !st.1 {
                        st.0 += 1;
                        hold.changed.notify_all();
                        st = hold.changed.wait_while(st, |st| !st.1).unwrap();
                        st.0 -= 1;
                    }
                }
                Verdict::Forward
            }),
        )
    }

    fn wait_until_holding(&self) {
        let st = self.state.lock().unwrap();
        let (_held, timeout) = self
            .changed
            .wait_timeout_while(st, std::time::Duration::from_secs(60), |st| st.0 == 0)
            .unwrap();
        assert!(!timeout.timed_out(), "no `{}` request came", self.prefix);
    }

    fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

/// Send `signal` (`TERM`, `INT`, `HUP`) to `pid` with the shell's `kill`.
fn kill(pid: u32, signal: &str) {
    assert!(std::process::Command::new("sh")
        .args(["-c", &format!("kill -{signal} {pid}")])
        .status()
        .unwrap()
        .success());
}

/// Wait for `child` for at most a minute; its output.
fn wait_bounded(child: std::process::Child) -> Output {
    let pid = child.id();
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output().unwrap());
    });
    waited
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| {
            kill(pid, "KILL");
            panic!("vault-seed did not end within a minute of the signal")
        })
}

/// A run's stderr, read line by line on a thread of its own: a test waits for a line that says
/// the run got where the test wants it, then takes the whole of it once the run has ended.
struct Stderr(std::sync::mpsc::Receiver<Option<String>>);

impl Stderr {
    fn watch(child: &mut std::process::Child, cue: &'static str) -> Stderr {
        let stderr = child.stderr.take().unwrap();
        let (said, reading) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut lines = Vec::new();
            for line in std::io::BufReader::new(stderr).lines() {
                let line = line.unwrap_or_default();
                if line.contains(cue) {
                    let _ = said.send(None);
                }
                lines.push(line);
            }
            let _ = said.send(Some(lines.join("\n")));
        });
        Stderr(reading)
    }

    /// Wait (a minute at most) for the cue; fail with `otherwise` if the run ended first.
    fn wait_for_it(&self, otherwise: &str) {
        let first = self
            .0
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap();
        assert!(first.is_none(), "{otherwise}: {first:?}");
    }

    /// Everything the run wrote to stderr, once it has ended.
    fn all(&self) -> String {
        loop {
            match self
                .0
                .recv_timeout(std::time::Duration::from_secs(10))
                .unwrap()
            {
                Some(all) => return all,
                None => continue,
            }
        }
    }
}

const STOP_SIGNALS: [(&str, i32); 3] = [("TERM", 143), ("INT", 130), ("HUP", 129)];

/// Every command that logs in, stopped by each stop signal while a request after its login is
/// out: the login token is revoked (the token accessors are those from before the run, and the
/// token sent is dead), and the run ends with the shell's code for the signal.
#[test]
fn a_stop_signal_revokes_the_login_token_of_every_command_that_logs_in() {
    let bao = OpenBao::dev();
    let approle = AppRoleLogin::new(&bao);
    let login = |addr: &str| approle.run(addr);
    // The values are there, so that set and rotate get as far as they go.
    login(&bao.addr).args(["apply", "auh1-dev"]).output();
    let commands: [&[&str]; 5] = [
        &["plan", "auh1-dev"],
        &["apply", "auh1-dev"],
        &["verify", "auh1-dev", "--skip-kube"],
        &["set", "auh1-dev", "IAM_SERVICE__PAT", "--force"],
        &[
            "rotate",
            "auh1-dev",
            "APP__CORE_SERVICES_MACHINE_TOKEN",
            "--yes",
        ],
    ];
    for args in commands {
        for (signal, code) in STOP_SIGNALS {
            let before = accessors(&bao);
            // The token check is the first request after the login, in every command.
            let hold = Hold::new("GET /v1/auth/token/lookup-self");
            let proxy = hold.proxy(&bao);
            let child = login(&proxy.addr).args(args).spawn();
            hold.wait_until_holding();
            assert_eq!(
                accessors(&bao).len(),
                before.len() + 1,
                "{args:?}: logged in"
            );
            kill(child.id(), signal);
            let out = wait_bounded(child);
            hold.release();
            let err = text(&out.stderr);
            assert_eq!(
                accessors(&bao),
                before,
                "{args:?} {signal}: the login token outlived the run: {err}"
            );
            assert_eq!(out.status.code(), Some(code), "{args:?} {signal}: {err}");
        }
    }
}

/// The issue's cases, where each command waits: `set` reading the value from stdin, `verify
/// --wait` waiting for the cluster, `apply` mid-way through its writes (it stops by itself:
/// the requests in flight finish, the report says what was skipped, exit 1). Each logs in,
/// each signal ends it with the login token revoked.
#[test]
fn a_stop_signal_while_a_command_waits_revokes_its_login_token() {
    let bao = OpenBao::dev();
    let approle = AppRoleLogin::new(&bao);
    let login = |addr: &str| approle.run(addr);
    for (signal, code) in STOP_SIGNALS {
        // apply, held at its first write: it finishes what is in flight and ends with exit 1.
        // Each round starts from an empty folder, so that apply has writes to make.
        wipe(&bao);
        let before = accessors(&bao);
        let hold = Hold::new("POST /v1/secret/data/");
        let proxy = hold.proxy(&bao);
        let child = login(&proxy.addr)
            .args(["apply", "auh1-dev", "--concurrency", "1"])
            .spawn();
        hold.wait_until_holding();
        kill(child.id(), signal);
        // The engine says it stops before the held write is let go.
        std::thread::sleep(std::time::Duration::from_millis(300));
        hold.release();
        let out = wait_bounded(child);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "apply {signal}: {err}");
        has(&err, "finishing requests in flight");
        assert_eq!(accessors(&bao), before, "apply {signal}: {err}");

        // set, waiting for its value on stdin (the pipe stays open, nothing comes), once a
        // re-run has finished the writes.
        login(&bao.addr).args(["apply", "auh1-dev"]).output();
        let before = accessors(&bao);
        let mut child = login(&bao.addr)
            .args(["set", "auh1-dev", "IAM_SERVICE__PAT", "--force"])
            .spawn();
        let stdin = child.stdin.take();
        let stderr = Stderr::watch(&mut child, "from stdin");
        stderr.wait_for_it("set ended before reading stdin");
        kill(child.id(), signal);
        let out = wait_bounded(child);
        let err = stderr.all();
        drop(stdin);
        assert_eq!(accessors(&bao), before, "set {signal}: {err}");
        assert_eq!(out.status.code(), Some(code), "set {signal}: {err}");
    }
}

/// Delete every secret of the spec's folder, all versions.
fn wipe(bao: &OpenBao) {
    let (status, body) = bao.api("LIST", &format!("secret/metadata/{FOLDER}"), None);
    if status == 404 {
        return;
    }
    ok(status, &body, "list the folder");
    for key in body["data"]["keys"].as_array().unwrap() {
        let path = format!("secret/metadata/{FOLDER}/{}", key.as_str().unwrap());
        let (status, body) = bao.api("DELETE", &path, None);
        ok(status, &body, &path);
    }
}

/// `verify --wait` waiting for an ExternalSecret that is not Ready, stopped by each signal
/// (the probe's case: the PostSync Job's deadline): the login token is revoked.
#[test]
fn a_stop_signal_while_verify_waits_for_the_cluster_revokes_its_login_token() {
    let bao = OpenBao::dev();
    let approle = AppRoleLogin::new(&bao);
    let kube = FakeKube::start();
    kube.put(fake_kube::real_spec_store(&bao.addr));
    for name in ["core-service-secret", "zitadel-secret"] {
        kube.put(fake_kube::real_spec_external_secret(name).sync_error("2030-01-01T00:00:00Z"));
    }
    for (signal, code) in STOP_SIGNALS {
        let before = accessors(&bao);
        let mut child = approle
            .run(&bao.addr)
            .args(["verify", "auh1-dev", "--only", "kube", "--wait", "60s"])
            .arg("--kubeconfig")
            .arg(kube.kubeconfig())
            .spawn();
        let stderr = Stderr::watch(&mut child, "waiting");
        stderr.wait_for_it("verify did not wait");
        kill(child.id(), signal);
        let out = wait_bounded(child);
        let err = stderr.all();
        assert_eq!(accessors(&bao), before, "verify {signal}: {err}");
        assert_eq!(out.status.code(), Some(code), "verify {signal}: {err}");
    }
}

/// A stand-in in front of OpenBao that sends every request on as it is, but answers the login
/// with `rewrite` of OpenBao's real answer (its body as JSON, the token in it real): a hostile
/// or broken server whose token Vault really issued.
struct Rewriting {
    addr: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Rewriting {
    fn start(bao: &OpenBao, rewrite: impl Fn(Value) -> Vec<u8> + Send + Sync + 'static) -> Self {
        use std::io::{Read, Write};
        use std::net::{TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let upstream = bao.addr.trim_start_matches("http://").to_string();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let rewrite = Arc::new(rewrite);
        let halt = stop.clone();
        std::thread::spawn(move || {
            // One request per connection: read it whole, send it on with `Connection: close`,
            // read the answer to its end.
            let exchange = |mut conn: TcpStream,
                            upstream: &str,
                            rewrite: &dyn Fn(Value) -> Vec<u8>| {
                conn.set_nonblocking(false).unwrap();
                conn.set_read_timeout(Some(std::time::Duration::from_secs(30)))
                    .unwrap();
                let mut req = Vec::new();
                let mut buf = [0u8; 8192];
                let head_end = loop {
                    let n = conn.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    req.extend_from_slice(&buf[..n]);
                    if let Some(i) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&req[..head_end]).to_string();
                let len = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                while req.len() < head_end + len {
                    let n = conn.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    req.extend_from_slice(&buf[..n]);
                }
                let line_end = req.windows(2).position(|w| w == b"\r\n").unwrap();
                let mut sent = req[..line_end + 2].to_vec();
                sent.extend_from_slice(b"Connection: close\r\n");
                sent.extend_from_slice(&req[line_end + 2..]);
                let mut up = TcpStream::connect(upstream).unwrap();
                up.write_all(&sent).unwrap();
                let mut answer = Vec::new();
                let _ = up.read_to_end(&mut answer);
                if head.starts_with("POST /v1/auth/approle/login") {
                    let at = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    let body: Value = serde_json::from_slice(&answer[at..]).unwrap();
                    let body = rewrite(body);
                    let mut out = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    out.extend_from_slice(&body);
                    answer = out;
                }
                let _ = conn.write_all(&answer);
            };
            while !halt.load(std::sync::atomic::Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (upstream, rewrite) = (upstream.clone(), rewrite.clone());
                        std::thread::spawn(move || exchange(conn, &upstream, &*rewrite));
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(2)),
                }
            }
        });
        Rewriting { addr, stop }
    }
}

impl Drop for Rewriting {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The files of an approle login (role `seeder`, see [`approle`]) and runs that log in with them.
struct AppRoleLogin {
    dir: tempfile::TempDir,
    role_file: PathBuf,
    secret_file: PathBuf,
}

impl AppRoleLogin {
    fn new(bao: &OpenBao) -> AppRoleLogin {
        let (role_id, secret_id) = approle(bao, None, "approle");
        let dir = tempfile::tempdir().unwrap();
        let role_file = write(dir.path(), "role-id", &role_id);
        let secret_file = write(dir.path(), "secret-id", &secret_id);
        AppRoleLogin {
            dir,
            role_file,
            secret_file,
        }
    }

    /// `vault-seed` against `addr`, logging in by approle, with no token anywhere.
    fn run(&self, addr: &str) -> Run {
        Run::home(self.dir.path())
            .addr(addr)
            .real_specs()
            .env("VAULT_SEED_AUTH", "approle")
            .env("VAULT_SEED_ROLE_ID_FILE", &self.role_file)
            .env("VAULT_SEED_SECRET_ID_FILE", &self.secret_file)
    }
}

/// `--keep-token` names the accessor Vault gave as any server text is shown: no escape
/// sequence reaches the terminal, a huge one is capped, and one equal to the token is not shown.
#[test]
fn keep_token_shows_a_hostile_accessor_clean_and_capped_and_never_the_token() {
    let bao = OpenBao::dev();
    let approle = AppRoleLogin::new(&bao);
    let tokens = Arc::new(Mutex::new(Vec::<String>::new()));
    for hostile in ["escape", "huge", "token"] {
        let keep = tokens.clone();
        let stand_in = Rewriting::start(&bao, move |mut body| {
            let token = body["auth"]["client_token"].as_str().unwrap().to_string();
            keep.lock().unwrap().push(token.clone());
            body["auth"]["accessor"] = match hostile {
                "escape" => json!("\u{1b}]0;pwned\u{7}\u{1b}[2Jacc\u{202e}ssor"),
                "huge" => json!("A".repeat(3 << 20)),
                _ => json!(token),
            };
            serde_json::to_vec(&body).unwrap()
        });
        let out = approle
            .run(&stand_in.addr)
            .args(["plan", "auh1-dev", "--keep-token"])
            .stderr_lacks('\u{1b}')
            .stderr_lacks('\u{7}')
            .output();
        let err = text(&out.stderr);
        let token = tokens.lock().unwrap().last().unwrap().clone();
        assert!(
            has_line(&err, "note: the login token is kept"),
            "{hostile}: {err}"
        );
        assert!(
            err.len() < 16 * 1024,
            "{hostile}: {} bytes on stderr",
            err.len()
        );
        assert!(!err.contains(&token), "{hostile}: the token was shown");
        assert!(
            token_alive(&bao, &token),
            "{hostile}: --keep-token keeps it"
        );
    }
}

fn has_line(text: &str, start: &str) -> bool {
    text.lines().any(|l| l.starts_with(start))
}

/// A login answer vault-seed cannot use: when the token's text is in it, the token is revoked
/// (exit 1, token accessors as before); when it is not readable, or cannot be sent, vault-seed
/// says a token may be alive and how to find and revoke it.
#[test]
fn a_token_issued_in_an_answer_that_cannot_be_used_is_revoked_or_said_to_be_alive() {
    let bao = OpenBao::dev();
    let approle = AppRoleLogin::new(&bao);
    // The token is in the answer, but a field is not of its type: revoked.
    let before = accessors(&bao);
    let stand_in = Rewriting::start(&bao, |mut body| {
        body["auth"]["policies"] = json!("not a list");
        serde_json::to_vec(&body).unwrap()
    });
    let out = approle
        .run(&stand_in.addr)
        .args(["plan", "auh1-dev"])
        .status(1)
        .stderr_has("approle login at `auth/approle` failed")
        .output();
    let err = text(&out.stderr);
    assert_eq!(accessors(&bao), before, "the token outlived the run: {err}");
    // The answer is cut short: its token cannot be read. The accessor list names the one
    // vault-seed could not revoke.
    let stand_in = Rewriting::start(&bao, |body| {
        let text = serde_json::to_vec(&body).unwrap();
        text[..text.len() / 2].to_vec()
    });
    approle
        .run(&stand_in.addr)
        .args(["plan", "auh1-dev"])
        .status(1)
        .stderr_has("it may be alive")
        .stderr_has("bao list auth/token/accessors")
        .output();
    assert_eq!(
        accessors(&bao).len(),
        before.len() + 1,
        "one token was issued"
    );
    // The token cannot go in a header: said to be alive, with its accessor to revoke it by.
    let before = accessors(&bao);
    let accessor = Arc::new(Mutex::new(String::new()));
    let seen = accessor.clone();
    let stand_in = Rewriting::start(&bao, move |mut body| {
        *seen.lock().unwrap() = body["auth"]["accessor"].as_str().unwrap().to_string();
        body["auth"]["client_token"] = json!("s.not\na\theader\u{7f}value");
        serde_json::to_vec(&body).unwrap()
    });
    let out = approle
        .run(&stand_in.addr)
        .args(["plan", "auh1-dev"])
        .stderr_has("it may be alive")
        .status(1)
        .output();
    let err = text(&out.stderr);
    let accessor = accessor.lock().unwrap().clone();
    assert!(
        err.contains(&format!("bao token revoke -accessor {accessor}")),
        "{err}"
    );
    assert_eq!(accessors(&bao).len(), before.len() + 1, "{err}");
}

/// A login answered 429 (rate limited) is retried as other requests are, then goes through.
#[test]
fn a_login_answered_429_is_retried() {
    let bao = OpenBao::dev();
    let approle = AppRoleLogin::new(&bao);
    let logins = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let count = logins.clone();
    let proxy = FaultProxy::with_hook(
        &bao.addr,
        Arc::new(move |chunk: &[u8]| {
            if chunk.starts_with(b"POST /v1/auth/approle/login") {
                let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n < 2 {
                    return Verdict::Answer(429);
                }
            }
            Verdict::Forward
        }),
    );
    let before = accessors(&bao);
    let out = approle.run(&proxy.addr).args(["plan", "auh1-dev"]).output();
    let err = text(&out.stderr);
    assert_eq!(logins.load(std::sync::atomic::Ordering::SeqCst), 3, "{err}");
    assert_eq!(accessors(&bao), before, "{err}");
}

/// Credential files that are not regular files (a FIFO with no writer, a directory, a device)
/// are refused at once, naming the file and its kind, exit 2, nothing sent: never a run that
/// blocks for good.
#[test]
fn credential_files_that_are_not_regular_files_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let good = write(dir.path(), "good", "some-id");
    let fifo_s = fifo.to_str().unwrap();
    let good_s = good.to_str().unwrap();
    let dir_s = dir.path().to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec!["--auth", "kubernetes", "--role", "r", "--jwt-file", fifo_s],
            fifo_s,
            "a FIFO (named pipe)",
        ),
        (
            vec!["--auth", "jwt", "--role", "r", "--jwt-file", "/dev/zero"],
            "/dev/zero",
            "a character device",
        ),
        (
            vec![
                "--auth",
                "approle",
                "--role-id-file",
                fifo_s,
                "--secret-id-file",
                good_s,
            ],
            fifo_s,
            "a FIFO (named pipe)",
        ),
        (
            vec![
                "--auth",
                "approle",
                "--role-id-file",
                good_s,
                "--secret-id-file",
                dir_s,
            ],
            dir_s,
            "a directory",
        ),
        (
            vec!["--skip-kube", "--eso-token-file", fifo_s],
            fifo_s,
            "a FIFO (named pipe)",
        ),
    ];
    // Nothing listens here: a request would fail differently.
    let addr = format!("http://127.0.0.1:{}", common::free_port());
    for (args, file, kind) in cases {
        let child = Run::home(dir.path())
            .addr(&addr)
            .env("VAULT_TOKEN", "s.unused-token-for-eso-case")
            .real_specs()
            .args(["verify", "auh1-dev"])
            .args(&args)
            .spawn();
        let out = wait_bounded(child);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("`{file}`: it is {kind}, not a regular file")),
            "{args:?}: {err}"
        );
    }
}

/// ESO's policy nested 10,000 deep, as someone who may write it can store it (OpenBao parses it
/// with Go's growing stacks): `verify` with an approle login does not overflow its stack; the
/// policy part fails by name and limit, and the token is revoked as after any run.
#[test]
fn a_policy_nested_10000_deep_fails_verify_by_name_and_the_login_token_is_revoked() {
    let bao = OpenBao::dev();
    let (role_id, secret_id) = approle(&bao, None, "approle");
    // The seeder may read ESO's policy and role, so that verify parses the policy itself.
    bao.put_policy(
        "vault-seed",
        &format!(
            "{SEEDER}\npath \"sys/policies/acl/*\" {{ capabilities = [\"read\"] }}\npath \"auth/kubernetes/role/*\" {{ capabilities = [\"read\"] }}\n"
        ),
    );
    let n = 10_000;
    let deep = format!(
        "path \"secret/data/ask/*\" {{\n  capabilities = [\"read\"]\n  comment {}{{}}{}\n}}\n",
        "{ x\n".repeat(n),
        "}".repeat(n)
    );
    bao.eso_role(&deep);
    let (s, body) = bao.api("GET", "sys/policies/acl/eso-ask-push", None);
    ok(s, &body, "read the policy back");
    assert_eq!(body["data"]["policy"], deep.as_str(), "OpenBao stores it");

    let dir = tempfile::tempdir().unwrap();
    let role_file = write(dir.path(), "role-id", &role_id);
    let secret_file = write(dir.path(), "secret-id", &secret_id);
    let before = accessors(&bao);
    let rec = Recorder::start(&bao);
    let out = seed(&rec, dir.path())
        .env("VAULT_SEED_AUTH", "approle")
        .env("VAULT_SEED_ROLE_ID_FILE", &role_file)
        .env("VAULT_SEED_SECRET_ID_FILE", &secret_file)
        .args(["verify", "auh1-dev", "--only", "policy"])
        .status(1)
        .stderr_lacks("overflow")
        // The policy's block is level 1 on line 1, `comment`'s level 2 on line 3: level 65 on 66.
        .stdout_has("error: policy `eso-ask-push` nests deeper than 64 levels at line 66")
        // What to do is about the policy, not about the token's rights (it could read it).
        .stdout_has("help: a real policy nests a few levels (`path` blocks, `allowed_parameters`); read this one (`bao policy read <name>`)")
        .output();
    assert_eq!(rec.count("POST /v1/auth/approle/login"), 1);
    assert_eq!(rec.count("POST /v1/auth/token/revoke-self"), 1);
    let token = rec.tokens().into_iter().next().expect("a token");
    assert!(!token_alive(&bao, &token));
    assert_eq!(accessors(&bao), before);
    never_shown(&out, &[secret_id.as_str(), token.as_str()]);
}

/// Revoking on a stop signal is bounded: a Vault that never answers the revocation does not keep
/// the run alive; it ends with the shell's code and says the token could not be revoked, with
/// its accessor and when it expires.
#[test]
fn a_stop_signal_ends_the_run_in_bounded_time_when_vault_never_answers_the_revocation() {
    let bao = OpenBao::dev();
    let approle = AppRoleLogin::new(&bao);
    // Everything with a token is held: the token check, then the revocation.
    let hold = Hold::new("");
    let gate = hold.clone();
    let proxy = FaultProxy::with_hook(
        &bao.addr,
        Arc::new(move |chunk: &[u8]| {
            if !chunk.starts_with(b"POST /v1/auth/approle/login") && chunk.starts_with(b"GET ")
                || chunk.starts_with(b"POST /v1/auth/token/revoke-self")
            {
                let mut st = gate.state.lock().unwrap();
                if !st.1 {
                    st.0 += 1;
                    gate.changed.notify_all();
                    st = gate.changed.wait_while(st, |st| !st.1).unwrap();
                    st.0 -= 1;
                }
            }
            Verdict::Forward
        }),
    );
    let child = approle.run(&proxy.addr).args(["plan", "auh1-dev"]).spawn();
    hold.wait_until_holding();
    let start = std::time::Instant::now();
    kill(child.id(), "TERM");
    let out = wait_bounded(child);
    let took = start.elapsed();
    hold.release();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        took < std::time::Duration::from_secs(30),
        "took {took:?}: {err}"
    );
    assert!(err.contains("could not revoke the login token"), "{err}");
    assert!(err.contains("no answer within 10s"), "{err}");
    assert!(err.contains("it expires by itself in"), "{err}");
}
