//! The harness works: a real OpenBao dev server (a KV v2 write and read through vaultrs), and the
//! fake Kubernetes API refusing what a real API server refuses.

use crate::common;

use std::collections::HashMap;

use serde_json::json;
use vaultrs::client::{VaultClient, VaultClientSettingsBuilder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv2_write_and_read_through_vaultrs() {
    vault_seed::init_crypto();
    let bao = common::OpenBao::dev();
    let client = VaultClient::new(
        VaultClientSettingsBuilder::default()
            .address(&bao.addr)
            .token(&bao.token)
            .build()
            .unwrap(),
    )
    .unwrap();
    let mut data = HashMap::new();
    data.insert("password", "s3cr3t-harness");
    let meta = vaultrs::kv2::set(&client, "secret", "harness/check", &data)
        .await
        .unwrap();
    assert_eq!(meta.version, 1);
    let back: HashMap<String, String> = vaultrs::kv2::read(&client, "secret", "harness/check")
        .await
        .unwrap();
    assert_eq!(back["password"], "s3cr3t-harness");
    // And the same through the raw HTTP API the other tests use to read back.
    let (fields, version) = bao.kv_get("secret", "harness/check").unwrap();
    assert_eq!(
        (fields["password"].as_str(), version),
        (Some("s3cr3t-harness"), 1)
    );
}

#[test]
fn server_stops_on_drop() {
    let addr = {
        let bao = common::OpenBao::dev();
        assert!(common::raw_http(&bao.addr, "GET", "/v1/sys/health", None, None).is_some());
        bao.addr.clone()
    };
    assert!(common::raw_http(&addr, "GET", "/v1/sys/health", None, None).is_none());
}

/// One request to the fake Kubernetes API with its bearer token: status, headers (names
/// lowercased) and body.
fn kube_http(
    kube: &common::fake_kube::FakeKube,
    method: &str,
    path: &str,
    patch: Option<&str>,
) -> (u16, Vec<(String, String)>, String) {
    use std::io::{BufRead, BufReader, Read, Write};
    let host = kube.addr.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(host).unwrap();
    let body = patch.unwrap_or("");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n",
        kube.token,
        body.len()
    );
    if patch.is_some() {
        req.push_str("Content-Type: application/merge-patch+json\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        headers.push((k.trim().to_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .unwrap();
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    (status, headers, String::from_utf8(body).unwrap())
}

fn json_of(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// Field selectors: the labels a real API server accepts per kind, 400 for any other
/// (`pkg/apis/core/v1/conversion.go`; custom resources: `metadata.name`/`metadata.namespace`).
#[test]
fn the_fake_kube_refuses_field_selectors_a_real_server_refuses() {
    let kube = common::fake_kube::FakeKube::start();
    let ok = [
        "/api/v1/namespaces/apps/events?fieldSelector=involvedObject.name%3Ddb%2CinvolvedObject.kind%3DExternalSecret",
        "/api/v1/namespaces/apps/events?fieldSelector=type%3DWarning%2Creason%21%3DUpdated%2Csource%3Dexternal-secrets",
        "/apis/secrets.hashicorp.com/v1beta1/vaultauths?fieldSelector=metadata.name%3Ddefault",
        "/apis/secrets.hashicorp.com/v1beta1/vaultauths?fieldSelector=metadata.namespace%3Dvso",
    ];
    for path in ok {
        assert_eq!(kube_http(&kube, "GET", path, None).0, 200, "{path}");
    }
    let refused = [
        (
            "/api/v1/namespaces/apps/events?fieldSelector=message%3Dx",
            "field label not supported: message",
        ),
        (
            "/apis/secrets.hashicorp.com/v1beta1/vaultauths?fieldSelector=spec.method%3Dkubernetes",
            "field label not supported: spec.method",
        ),
        (
            "/apis/secrets.hashicorp.com/v1beta1/vaultconnections?fieldSelector=status.valid%3Dtrue",
            "field label not supported: status.valid",
        ),
        (
            "/api/v1/namespaces/apps/events?fieldSelector=type",
            "invalid selector: 'type'; can't understand 'type'",
        ),
    ];
    for (path, message) in refused {
        let (status, _, body) = kube_http(&kube, "GET", path, None);
        let body = json_of(&body);
        assert_eq!(
            (status, &body["reason"], &body["message"]),
            (400, &json!("BadRequest"), &json!(message)),
            "{path}"
        );
    }
}

/// RBAC's 403 in the API server's words: the object's name for a get, the verb `list` and
/// "at the cluster scope" for a list across namespaces; namespace-only RBAC allows the rest.
#[test]
fn the_fake_kube_forbids_in_the_api_servers_words() {
    let kube = common::fake_kube::FakeKube::start();
    kube.deny("secrets");
    kube.deny_cluster_wide("vaultauths");
    let (status, _, body) = kube_http(&kube, "GET", "/api/v1/namespaces/apps/secrets/db", None);
    let body = json_of(&body);
    assert_eq!(status, 403);
    assert_eq!(
        body["message"],
        "secrets \"db\" is forbidden: User \"system:serviceaccount:ci:verifier\" cannot get resource \"secrets\" in API group \"\" in the namespace \"apps\""
    );
    assert_eq!(
        body["details"],
        json!({"name": "db", "group": "", "kind": "secrets"})
    );
    let (status, _, body) = kube_http(
        &kube,
        "GET",
        "/apis/secrets.hashicorp.com/v1beta1/vaultauths?fieldSelector=metadata.name%3Ddefault",
        None,
    );
    assert_eq!(status, 403);
    assert_eq!(
        json_of(&body)["message"],
        "vaultauths.secrets.hashicorp.com is forbidden: User \"system:serviceaccount:ci:verifier\" cannot list resource \"vaultauths\" in API group \"secrets.hashicorp.com\" at the cluster scope"
    );
    let (status, _, body) = kube_http(
        &kube,
        "GET",
        "/apis/secrets.hashicorp.com/v1beta1/namespaces/ask/vaultauths/vault-auth",
        None,
    );
    assert_eq!(
        (status, &json_of(&body)["reason"]),
        (404, &json!("NotFound"))
    );
}

/// A cluster without an operator's CRDs: its group is not in discovery and every path under
/// it, PushSecrets' `v1alpha1` included, is a 404.
#[test]
fn the_fake_kube_without_a_crd_serves_neither_its_group_nor_its_paths() {
    let kube = common::fake_kube::FakeKube::start();
    let groups = |kube: &common::fake_kube::FakeKube| -> Vec<String> {
        let (_, _, body) = kube_http(kube, "GET", "/apis", None);
        json_of(&body)["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        groups(&kube),
        [
            "external-secrets.io",
            "secrets.hashicorp.com",
            "argoproj.io"
        ]
    );
    kube.without_eso();
    kube.without_vso();
    kube.without_argocd();
    assert!(groups(&kube).is_empty());
    for path in [
        "/apis/external-secrets.io/v1",
        "/apis/external-secrets.io/v1alpha1",
        "/apis/external-secrets.io/v1alpha1/namespaces/ask/pushsecrets/p",
        "/apis/secrets.hashicorp.com/v1beta1/vaultauths",
        "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/a",
    ] {
        let (status, _, body) = kube_http(&kube, "GET", path, None);
        assert_eq!(
            (status, &json_of(&body)["message"]),
            (
                404,
                &json!("the server could not find the requested resource")
            ),
            "{path}"
        );
    }
}

/// API Priority and Fairness sheds a request with a plain-text 429 and `Retry-After`; an
/// admission webhook that cannot be called fails a PATCH with a 500 Status naming it.
#[test]
fn the_fake_kube_sheds_load_and_fails_patches_as_a_real_server_does() {
    let kube = common::fake_kube::FakeKube::start();
    kube.put(common::fake_kube::external_secret("apps", "db", &[]));
    let path = "/apis/external-secrets.io/v1/namespaces/apps/externalsecrets/db";
    kube.throttle("/externalsecrets/db", 1);
    let (status, headers, body) = kube_http(&kube, "GET", path, None);
    assert_eq!(
        (status, body.as_str()),
        (429, "Too many requests, please try again later.\n")
    );
    assert!(headers.contains(&("retry-after".into(), "1".into())));
    assert!(headers.contains(&("content-type".into(), "text/plain; charset=utf-8".into())));
    assert_eq!(kube_http(&kube, "GET", path, None).0, 200, "once only");

    kube.fail_patches_in_webhook("validate.example.com");
    let (status, _, body) = kube_http(&kube, "PATCH", path, Some(r#"{"metadata":{}}"#));
    let body = json_of(&body);
    assert_eq!((status, &body["reason"]), (500, &json!("InternalError")));
    assert!(body["message"]
        .as_str()
        .unwrap()
        .starts_with("Internal error occurred: failed calling webhook \"validate.example.com\": failed to call webhook: Post"));
}
