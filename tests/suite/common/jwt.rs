//! Signed JWTs for the login tests: ES256 (a P-256 key made per test with rcgen, signed with
//! ring), shaped like a Kubernetes projected service-account token or a GitLab CI ID token.
//! OpenBao's kubernetes auth checks the claims and asks TokenReview; its jwt auth checks the
//! signature against `jwt_validation_pubkeys`.

use base64::Engine as _;
use serde_json::{json, Value};

/// A signing key and its public key (PEM, for `jwt_validation_pubkeys`).
pub struct Signer {
    key: ring::signature::EcdsaKeyPair,
    /// The public key, PEM (SubjectPublicKeyInfo).
    pub public_pem: String,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

impl Signer {
    /// A fresh P-256 key.
    pub fn new() -> Self {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        let rng = ring::rand::SystemRandom::new();
        let key = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &pair.serialize_der(),
            &rng,
        )
        .expect("pkcs8");
        Signer {
            key,
            public_pem: pair.public_key_pem(),
        }
    }

    /// `header.claims.signature`, ES256.
    pub fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "typ": "JWT", "kid": "vault-seed-test"});
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let sig = self
            .key
            .sign(&ring::rand::SystemRandom::new(), input.as_bytes())
            .expect("sign");
        format!("{input}.{}", b64(sig.as_ref()))
    }
}

/// The claims of a projected service-account token (Kubernetes 1.30) for `namespace/name`.
pub fn service_account_claims(namespace: &str, name: &str, uid: &str, aud: &[&str]) -> Value {
    let now = now();
    json!({
        "aud": aud,
        "exp": now + 3600,
        "iat": now,
        "nbf": now,
        "iss": "https://kubernetes.default.svc.cluster.local",
        "jti": "0b6a0a8f-3a62-4c8e-9b0e-5f0c0b2f6a11",
        "kubernetes.io": {
            "namespace": namespace,
            "node": {"name": "node-1", "uid": "8d6f0c0e-1111-4222-8333-444455556666"},
            "pod": {"name": format!("{name}-presync-x7k2p"), "uid": "5e0c2f8a-aaaa-4bbb-8ccc-dddd0000eeee"},
            "serviceaccount": {"name": name, "uid": uid},
        },
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
    })
}

/// The claims of a GitLab CI ID token (`id_tokens:`) for `project_path` on `ref_`.
pub fn gitlab_claims(aud: &str, project_path: &str, ref_: &str) -> Value {
    let now = now();
    json!({
        "namespace_id": "72",
        "namespace_path": project_path.rsplit_once('/').map(|(n, _)| n).unwrap_or(project_path),
        "project_id": "1337",
        "project_path": project_path,
        "user_id": "42",
        "user_login": "ci-bot",
        "user_email": "ci-bot@example.invalid",
        "pipeline_id": "1000001",
        "pipeline_source": "push",
        "job_id": "2000002",
        "ref": ref_,
        "ref_type": "branch",
        "ref_path": format!("refs/heads/{ref_}"),
        "ref_protected": "true",
        "runner_id": 7,
        "runner_environment": "self-hosted",
        "sha": "5d1e6b7c0e8e2f1d3c4b5a69788796a5b4c3d2e1",
        "jti": "b8f5c3a2-1d4e-4f6a-9b8c-7d6e5f4a3b2c",
        "iss": "https://gitlab.example.invalid",
        "iat": now,
        "nbf": now - 5,
        "exp": now + 300,
        "sub": format!("project_path:{project_path}:ref_type:branch:ref:{ref_}"),
        "aud": aud,
    })
}
