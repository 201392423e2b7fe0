//! The real `Cluster` (kubeconfig, kube-rs) against the fake Kubernetes API server.

use crate::common;

use std::time::{Duration, Instant};

use common::fake_kube::{
    cluster_secret_store, event, external_secret, fixture, kubeconfig_yaml, push_secret, secret,
    secret_store, FakeKube,
};
use serde_json::json;
use time::OffsetDateTime;
use vault_seed::kube::{Cluster, KubeError, StoreKind};

const NS: &str = "core-service";

/// The ESO objects of a healthy environment: two ExternalSecrets synced, their Secrets, the store.
fn put_healthy_environment(kube: &FakeKube) {
    kube.put(secret_store(
        NS,
        "vault-backend",
        true,
        "Valid",
        "store validated",
    ));
    kube.put(
        external_secret(
            NS,
            "db",
            &[
                ("DB_PASSWORD", "core-service/auh1-dev/db", Some("password")),
                ("DB_USER", "core-service/auh1-dev/db", Some("username")),
            ],
        )
        .target("db-credentials")
        .ready_synced("2026-03-01T10:00:00Z"),
    );
    kube.put(secret(
        NS,
        "db-credentials",
        &[("DB_PASSWORD", "s3cr3t-db-value"), ("DB_USER", "app")],
    ));
    kube.put(
        external_secret(
            NS,
            "api",
            &[("API_KEY", "core-service/auh1-dev/api", Some("key"))],
        )
        .ready_synced("2026-03-01T10:00:05Z"),
    );
    kube.put(secret(NS, "api", &[("API_KEY", "s3cr3t-api-value")]));
}

#[tokio::test]
async fn all_ready() {
    let kube = FakeKube::start();
    put_healthy_environment(&kube);
    let cluster = kube.connect().await;
    assert_eq!(cluster.server(), kube.addr);
    assert_eq!(cluster.context(), Some("fake"));

    let db = cluster.external_secret(NS, "db").await.unwrap().unwrap();
    assert_eq!(db.api_version, "external-secrets.io/v1");
    assert_eq!(db.condition.ready, Some(true));
    assert_eq!(db.condition.reason.as_deref(), Some("SecretSynced"));
    assert_eq!(db.condition.message.as_deref(), Some("secret synced"));
    assert_eq!(db.target_secret, "db-credentials");
    let store = db.store_ref.clone().unwrap();
    assert_eq!(
        (store.kind, store.name.as_str()),
        (Some(StoreKind::SecretStore), "vault-backend")
    );
    let refs: Vec<_> = db
        .data
        .iter()
        .map(|r| (&*r.secret_key, &*r.key, r.property.as_deref()))
        .collect();
    assert_eq!(
        refs,
        [
            ("DB_PASSWORD", "core-service/auh1-dev/db", Some("password")),
            ("DB_USER", "core-service/auh1-dev/db", Some("username")),
        ]
    );
    assert!(!db.has_data_from);
    assert_eq!(
        cluster
            .secret_keys(NS, &db.target_secret)
            .await
            .unwrap()
            .unwrap(),
        ["DB_PASSWORD", "DB_USER"]
    );

    let api = cluster.external_secret(NS, "api").await.unwrap().unwrap();
    assert_eq!(
        (api.condition.ready, api.target_secret.as_str()),
        (Some(true), "api")
    );

    let store = cluster
        .secret_store(NS, StoreKind::SecretStore, "vault-backend")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            store.condition.ready,
            store.condition.reason.as_deref(),
            store.namespace.as_deref()
        ),
        (Some(true), Some("Valid"), Some(NS))
    );
    assert!(cluster
        .warning_events(NS, "ExternalSecret", "db")
        .await
        .unwrap()
        .is_empty());

    // Absent objects are `None`, not errors.
    assert!(cluster.external_secret(NS, "nope").await.unwrap().is_none());
    assert!(cluster.secret_keys(NS, "nope").await.unwrap().is_none());

    // Nothing the fake does not serve was asked for, and nothing secret came back in errors.
    assert_eq!(kube.unknown_requests(), Vec::<String>::new());
}

#[tokio::test]
async fn secret_values_never_leave_the_module() {
    let kube = FakeKube::start();
    put_healthy_environment(&kube);
    let cluster = kube.connect().await;
    let keys = cluster.secret_keys(NS, "db-credentials").await.unwrap();
    let es = cluster.external_secret(NS, "db").await.unwrap();
    let seen = format!("{keys:?} {es:?}");
    assert!(seen.contains("DB_PASSWORD"));
    for value in ["s3cr3t-db-value", "czNjcjN0LWRiLXZhbHVl"] {
        assert!(!seen.contains(value), "{value} leaked");
    }
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
async fn sync_error_is_explained_by_the_update_failed_event() {
    let kube = FakeKube::start();
    kube.put(
        external_secret(
            NS,
            "db",
            &[("DB_PASSWORD", "core-service/auh1-dev/db", Some("password"))],
        )
        .sync_error("2026-03-01T10:00:00Z"),
    );
    let forbidden = "error retrieving secret at .data[0], key: core-service/auh1-dev/db, err: cannot read secret data from Vault: Error making API request. Code: 403. Errors: * 1 error occurred: * permission denied";
    kube.add_event(event(
        NS,
        "ExternalSecret",
        "db",
        "Warning",
        "UpdateFailed",
        "error processing spec.data[0] (key: core-service/auh1-dev/db), err: Secret does not exist",
    )
    .seen("2026-03-01T09:00:00Z", 2));
    kube.add_event(
        event(
            NS,
            "ExternalSecret",
            "db",
            "Warning",
            "UpdateFailed",
            forbidden,
        )
        .seen("2026-03-01T10:00:00Z", 5),
    );
    kube.add_event(
        event(
            NS,
            "ExternalSecret",
            "db",
            "Normal",
            "Updated",
            "Updated Secret",
        )
        .seen("2026-03-01T10:30:00Z", 1),
    );
    // Same name, other kind, and same kind, other name: not about this ExternalSecret.
    kube.add_event(
        event(NS, "Secret", "db", "Warning", "Other", "not me").seen("2026-03-01T11:00:00Z", 1),
    );
    kube.add_event(
        event(
            NS,
            "ExternalSecret",
            "api",
            "Warning",
            "UpdateFailed",
            "not me either",
        )
        .seen("2026-03-01T11:00:00Z", 1),
    );
    let cluster = kube.connect().await;

    let es = cluster.external_secret(NS, "db").await.unwrap().unwrap();
    assert_eq!(es.condition.ready, Some(false));
    assert_eq!(es.condition.reason.as_deref(), Some("SecretSyncedError"));
    assert_eq!(
        es.condition.message.as_deref(),
        Some("could not get secret data from provider")
    );
    assert_eq!(es.refresh_time, None);

    let events = cluster
        .warning_events(NS, "ExternalSecret", "db")
        .await
        .unwrap();
    let got: Vec<_> = events
        .iter()
        .map(|e| (e.reason.as_deref(), e.count))
        .collect();
    assert_eq!(got, [(Some("UpdateFailed"), 5), (Some("UpdateFailed"), 2)]);
    assert_eq!(events[0].message.as_deref(), Some(forbidden));
    assert_eq!(
        events[0].last_timestamp.map(|t| t.unix_timestamp()),
        Some(
            OffsetDateTime::parse(
                "2026-03-01T10:00:00Z",
                &time::format_description::well_known::Rfc3339
            )
            .unwrap()
            .unix_timestamp()
        )
    );
    // The selector kube-rs sent is the one the API server filters on.
    let list = kube
        .requests()
        .into_iter()
        .find(|r| r.path == format!("/api/v1/namespaces/{NS}/events"))
        .expect("events listed");
    assert!(
        list.query.contains(
            "fieldSelector=involvedObject.name%3Ddb%2CinvolvedObject.kind%3DExternalSecret"
        ),
        "{}",
        list.query
    );
}

/// `refreshTime` is read as a time; whether it is stale is `verify`'s judgement
/// (`src/verify/eso.rs`, and `tests/suite/eso_sync.rs` through the command).
#[tokio::test]
async fn the_refresh_time_is_read_as_a_time() {
    let kube = FakeKube::start();
    kube.put(
        external_secret(
            NS,
            "db",
            &[("DB_PASSWORD", "core-service/db", Some("password"))],
        )
        .ready_synced("2025-06-01T08:00:00Z"),
    );
    let cluster = kube.connect().await;
    let es = cluster.external_secret(NS, "db").await.unwrap().unwrap();
    assert_eq!(es.condition.ready, Some(true));
    let refreshed = es.refresh_time.expect("refreshTime parsed");
    assert_eq!(
        (
            refreshed.year(),
            u8::from(refreshed.month()),
            refreshed.day(),
            refreshed.hour()
        ),
        (2025, 6, 1, 8)
    );
}

/// The target Secret's keys as the cluster has them; which are missing is `verify`'s judgement
/// (`tests/suite/verify.rs`: the target Secret lacks a key).
#[tokio::test]
async fn the_target_secrets_keys_are_read() {
    let kube = FakeKube::start();
    kube.put(
        external_secret(
            NS,
            "db",
            &[
                ("DB_PASSWORD", "core-service/db", Some("password")),
                ("DB_USER", "core-service/db", Some("username")),
            ],
        )
        .ready_synced("2026-03-01T10:00:00Z"),
    );
    kube.put(secret(NS, "db", &[("DB_PASSWORD", "pw")]));
    let cluster = kube.connect().await;
    let es = cluster.external_secret(NS, "db").await.unwrap().unwrap();
    let keys = cluster
        .secret_keys(NS, &es.target_secret)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(keys, ["DB_PASSWORD"]);
}

#[tokio::test]
async fn only_v1beta1_served_falls_back_and_says_so() {
    let kube = FakeKube::start();
    kube.serve_versions(&["v1beta1"]);
    // Fixture 02 as served by a cluster of that time.
    for obj in fixture("02_es-v1beta1-vault-kv2-ready-true_okdp-docs.yaml") {
        kube.put(obj);
    }
    let cluster = kube.connect().await;

    let es = cluster
        .external_secret("demo", "app-secret-example")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(es.api_version, "external-secrets.io/v1beta1");
    assert_eq!(
        (
            es.condition.ready,
            es.condition.reason.as_deref(),
            es.target_secret.as_str()
        ),
        (Some(true), Some("SecretSynced"), "app-secret-example")
    );
    assert_eq!(
        es.refresh_time.map(|t| t.unix_timestamp()),
        Some(1_788_443_625)
    );
    assert_eq!(&*es.data[0].key, "example-secret");
    assert_eq!(&*es.data[0].secret_key, "secret_key");
    let store = es.store_ref.unwrap();
    let store = cluster
        .secret_store("demo", store.kind.unwrap(), &store.name)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            store.api_version.as_str(),
            store.condition.reason.as_deref()
        ),
        ("external-secrets.io/v1beta1", Some("Valid"))
    );

    // v1 was asked first; then discovery showed it is not served.
    let paths: Vec<String> = kube
        .requests()
        .into_iter()
        .map(|r| r.path)
        .filter(|p| p.starts_with("/apis/"))
        .collect();
    assert_eq!(
        &paths[..3],
        [
            "/apis/external-secrets.io/v1/namespaces/demo/externalsecrets/app-secret-example",
            "/apis/external-secrets.io/v1",
            "/apis/external-secrets.io/v1beta1/namespaces/demo/externalsecrets/app-secret-example",
        ]
    );
    // Learnt once: the next ExternalSecret goes straight to v1beta1.
    assert!(cluster
        .external_secret("demo", "other")
        .await
        .unwrap()
        .is_none());
    let after: Vec<String> = kube
        .requests()
        .into_iter()
        .map(|r| r.path)
        .filter(|p| p.contains("/externalsecrets/other"))
        .collect();
    assert_eq!(
        after,
        ["/apis/external-secrets.io/v1beta1/namespaces/demo/externalsecrets/other"]
    );
}

#[tokio::test]
async fn fixture_03_ready_false_with_cluster_store() {
    let kube = FakeKube::start();
    kube.serve_versions(&["v1beta1"]);
    for obj in fixture("03_es-v1beta1-ready-false_user-paste-eso-0.10.5.yaml") {
        kube.put(obj);
    }
    let cluster = kube.connect().await;
    let es = cluster
        .external_secret("omnidata", "transaction-rules-v2-dev-java-chart-app-env")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (es.condition.ready, es.condition.reason.as_deref()),
        (Some(false), Some("SecretSyncedError"))
    );
    assert_eq!(es.target_secret, "transaction-data-rules-v2-env");
    assert_eq!(es.data.len(), 5);
    let store = es.store_ref.unwrap();
    assert_eq!(store.kind, Some(StoreKind::ClusterSecretStore));
    let css = cluster
        .secret_store("omnidata", StoreKind::ClusterSecretStore, &store.name)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            css.condition.ready,
            css.condition.reason.as_deref(),
            css.namespace
        ),
        (Some(true), Some("Valid"), None)
    );
}

#[tokio::test]
async fn no_eso_crds_is_a_clear_error() {
    let kube = FakeKube::start();
    kube.serve_versions(&[]);
    let cluster = kube.connect().await;
    let err = cluster.external_secret(NS, "db").await.unwrap_err();
    assert!(matches!(err, KubeError::NotServed { .. }), "{err:?}");
    assert!(
        format!("{err}\n  {}", err.help().unwrap_or_default())
            .starts_with("the cluster serves no `ExternalSecret` in `external-secrets.io` v1 or v1beta1\n  install External Secrets Operator"),
        "{err}"
    );
}

#[tokio::test]
async fn unreachable_cluster_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // A port that was free a moment ago and has no listener now.
    let port = common::free_port();
    let server = format!("http://127.0.0.1:{port}");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_yaml(&server, "t", "gone")).unwrap();
    vault_seed::init_crypto();
    let started = Instant::now();
    let err = match Cluster::connect(Some(&kubeconfig), None).await {
        Ok(_) => panic!("connected to a closed port"),
        Err(e) => e,
    };
    assert!(started.elapsed() < Duration::from_secs(10));
    match &err {
        KubeError::Unreachable { server: s, detail } => {
            assert_eq!(s, &server);
            assert!(detail.to_lowercase().contains("connect"), "{detail}");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    let text = format!("{err}\n  {}", err.help().unwrap_or_default());
    assert!(
        text.starts_with(&format!("cannot reach the Kubernetes API at `{server}`: ")),
        "{text}"
    );
    assert!(text.ends_with(
        "\n  check the cluster is up and the context is the right one: `kubectl cluster-info`"
    ));
}

#[tokio::test]
async fn unknown_context_is_a_clear_error() {
    let kube = FakeKube::start();
    vault_seed::init_crypto();
    let err = match Cluster::connect(Some(&kube.kubeconfig()), Some("prod")).await {
        Ok(_) => panic!("connected with an unknown context"),
        Err(e) => e,
    };
    assert!(
        matches!(&err, KubeError::UnknownContext { context, known, .. } if context == "prod" && known == &["fake"])
    );
    assert_eq!(
        format!("{err}\n  {}", err.help().unwrap_or_default()),
        format!(
            "context `prod` is not in kubeconfig `{}`\n  known contexts: `fake`; list them with `kubectl config get-contexts`",
            kube.kubeconfig().display()
        )
    );
    // The fake was never asked anything.
    assert!(kube.requests().is_empty());
    // And the context that exists works when named.
    let cluster = Cluster::connect(Some(&kube.kubeconfig()), Some("fake"))
        .await
        .unwrap();
    assert_eq!(cluster.context(), Some("fake"));
}

#[tokio::test]
async fn wrong_token_is_unauthorized() {
    let kube = FakeKube::start();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_yaml(&kube.addr, "stolen", "fake")).unwrap();
    vault_seed::init_crypto();
    let err = match Cluster::connect(Some(&kubeconfig), None).await {
        Ok(_) => panic!("the fake accepted a wrong token"),
        Err(e) => e,
    };
    assert!(
        matches!(&err, KubeError::Unauthorized { server, .. } if server == &kube.addr),
        "{err:?}"
    );
}

#[tokio::test]
async fn force_sync_sends_the_merge_patch() {
    let kube = FakeKube::start();
    kube.put(
        external_secret(
            NS,
            "db",
            &[("DB_PASSWORD", "core-service/db", Some("password"))],
        )
        .ready_synced("2026-03-01T10:00:00Z"),
    );
    let cluster = kube.connect().await;
    let es = cluster.external_secret(NS, "db").await.unwrap().unwrap();
    let before = OffsetDateTime::now_utc().unix_timestamp();
    let at = cluster.force_sync(NS, "db", &es.api_version).await.unwrap();
    let after = OffsetDateTime::now_utc().unix_timestamp();
    assert!((before..=after).contains(&at.unix_timestamp()));

    let patches = kube.patches();
    assert_eq!(patches.len(), 1);
    let p = &patches[0];
    assert_eq!(
        p.path,
        format!("/apis/external-secrets.io/v1/namespaces/{NS}/externalsecrets/db")
    );
    assert_eq!(p.content_type, "application/merge-patch+json");
    assert_eq!(
        p.body,
        serde_json::json!({"metadata": {"annotations": {"force-sync": at.unix_timestamp().to_string()}}})
    );
    // The server applied it and left the rest alone.
    let stored = kube.get("ExternalSecret", Some(NS), "db").unwrap();
    assert_eq!(
        stored["metadata"]["annotations"]["force-sync"],
        at.unix_timestamp().to_string()
    );
    assert_eq!(stored["status"]["conditions"][0]["reason"], "SecretSynced");
}

#[tokio::test]
async fn push_secret_errored() {
    let kube = FakeKube::start();
    let message = "set secret failed: could not write remote ref token to target secretstore vault-backend: failed to convert value to a valid JSON: invalid character 'e' in literal true (expecting 'r')";
    kube.put(push_secret(
        NS,
        "token-push",
        false,
        "Errored",
        message,
        "2026-03-01T10:00:00Z",
    ));
    let cluster = kube.connect().await;
    let ps = cluster
        .push_secret(NS, "token-push")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ps.api_version, "external-secrets.io/v1alpha1");
    assert_eq!(
        (
            ps.condition.ready,
            ps.condition.reason.as_deref(),
            ps.condition.message.as_deref()
        ),
        (Some(false), Some("Errored"), Some(message))
    );
    assert!(ps.condition.last_transition_time.is_some());
    assert!(cluster.push_secret(NS, "absent").await.unwrap().is_none());
}

#[tokio::test]
async fn cluster_secret_store_valid() {
    let kube = FakeKube::start();
    kube.put(cluster_secret_store(
        "vault",
        true,
        "Valid",
        "store validated",
    ));
    // A namespaced store of the same name must not be confused with it.
    kube.put(secret_store(
        NS,
        "vault",
        false,
        "InvalidProviderConfig",
        "bad",
    ));
    let cluster = kube.connect().await;
    let css = cluster
        .secret_store(NS, StoreKind::ClusterSecretStore, "vault")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(css.kind, StoreKind::ClusterSecretStore);
    assert_eq!(css.api_version, "external-secrets.io/v1");
    assert_eq!(
        (
            css.condition.ready,
            css.condition.reason.as_deref(),
            css.namespace
        ),
        (Some(true), Some("Valid"), None)
    );
    let ss = cluster
        .secret_store(NS, StoreKind::SecretStore, "vault")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (ss.condition.ready, ss.condition.reason.as_deref()),
        (Some(false), Some("InvalidProviderConfig"))
    );
    assert!(kube
        .requests()
        .iter()
        .any(|r| r.path == "/apis/external-secrets.io/v1/clustersecretstores/vault"));
}

#[tokio::test]
async fn discovery_requests_are_only_the_ones_expected() {
    let kube = FakeKube::start();
    kube.serve_versions(&["v1beta1"]);
    put_healthy_environment(&kube);
    let cluster = kube.connect().await;
    cluster.external_secret(NS, "db").await.unwrap().unwrap();
    cluster.push_secret(NS, "absent").await.unwrap();
    let discovery: Vec<String> = kube
        .requests()
        .into_iter()
        .map(|r| r.path)
        .filter(|p| !p.contains("/namespaces/"))
        .collect();
    assert_eq!(
        discovery,
        [
            "/version",
            "/apis/external-secrets.io/v1",
            "/apis/external-secrets.io/v1alpha1"
        ]
    );
    assert!(kube.unknown_requests().is_empty());
}

#[tokio::test]
async fn rbac_denial_says_which_can_i_to_run() {
    let kube = FakeKube::start();
    put_healthy_environment(&kube);
    kube.deny("secrets");
    let cluster = kube.connect().await;
    let err = cluster.secret_keys(NS, "db-credentials").await.unwrap_err();
    assert!(
        matches!(&err, KubeError::Forbidden { verb: "get", resource, namespace: Some(ns), .. } if resource == "secrets" && ns == NS),
        "{err:?}"
    );
    let text = format!("{err}\n  {}", err.help().unwrap_or_default());
    assert!(
        text.starts_with("forbidden to get `secrets` `core-service/db-credentials` (403): secrets \"db-credentials\" is forbidden: User \"system:serviceaccount:ci:verifier\" cannot get resource \"secrets\" in API group \"\" in the namespace \"core-service\"\n"),
        "{text}"
    );
    assert!(text.ends_with("\n  check with `kubectl auth can-i get secrets -n core-service`"));
    // The ExternalSecret itself is still readable.
    assert!(cluster.external_secret(NS, "db").await.unwrap().is_some());
}

/// `verify auh1-dev` of the real spec against `kube`, with `args`.
fn verify_real(bao: &common::OpenBao, kube: &FakeKube, args: &[&str]) -> common::Run {
    common::Run::new(bao)
        .real_specs()
        .args(["verify", "auh1-dev", "--kubeconfig"])
        .arg(kube.kubeconfig())
        .args(args)
}

/// A cluster without ESO's CRDs (no `external-secrets.io` at all): `verify` says ESO is not
/// installed and is not done; a PushSecret is not "absent" there but not served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_eso_is_not_installed_and_never_done() {
    let bao = crate::verify::vault_with(crate::verify::RUNBOOK_POLICY);
    let kube = crate::verify::healthy_cluster(&bao);
    kube.without_eso();
    let doc = verify_real(&bao, &kube, &["-o", "json"])
        .status(1)
        .output()
        .json();
    assert_eq!(
        (&doc["ok"], &doc["kube"]["ok"]),
        (&json!(false), &json!(false))
    );
    let error = doc["kube"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("the cluster serves no `") && error.contains("in `external-secrets.io`"),
        "{error}"
    );
    assert!(
        doc["kube"]["help"]
            .as_str()
            .unwrap()
            .starts_with("install External Secrets Operator (its CRDs) or check the context"),
        "{doc}"
    );
    let text = verify_real(&bao, &kube, &[])
        .status(1)
        .output()
        .stdout_text();
    assert!(text.contains("verify auh1-dev: NOT done"), "{text}");

    let cluster = kube.connect().await;
    let err = cluster.push_secret("ask", "ask-db").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the cluster serves no `PushSecret` in `external-secrets.io` v1alpha1"
    );
}

/// An admission webhook failing the `--force-sync` PATCH (500): the note names the object and
/// the webhook; the verdict rests on the ExternalSecrets' own state (here Ready after seeding).
#[test]
fn force_sync_refused_by_a_webhook_names_the_object() {
    let bao = crate::verify::vault_with(crate::verify::RUNBOOK_POLICY);
    let kube = crate::verify::healthy_cluster(&bao);
    kube.fail_patches_in_webhook("validate.externalsecrets.example.com");
    let out = verify_real(&bao, &kube, &["--force-sync", "-o", "json"]).output();
    let notes = out.json()["notes"].to_string();
    assert!(
        notes.contains("could not annotate ExternalSecret `ask/core-service-secret`: cannot patch `externalsecrets.external-secrets.io` `ask/core-service-secret`: 500 InternalError: Internal error occurred: failed calling webhook \\\"validate.externalsecrets.example.com\\\""),
        "{notes}"
    );
    assert_eq!(kube.patches().len(), 2, "both were tried");
    assert!(kube
        .get("ExternalSecret", Some("ask"), "core-service-secret")
        .unwrap()["metadata"]
        .get("annotations")
        .is_none());
}

/// API Priority and Fairness sheds a request (429, plain text): a clear error naming what was
/// asked, never a silent pass; `--wait` asks again and gets through.
#[test]
fn a_throttled_api_server_is_a_clear_error_and_wait_asks_again() {
    let bao = crate::verify::vault_with(crate::verify::RUNBOOK_POLICY);
    let kube = crate::verify::healthy_cluster(&bao);
    // The namespace's list is shed, then the read of the first ExternalSecret alone.
    kube.throttle("/namespaces/ask/externalsecrets", 2);
    let doc = verify_real(&bao, &kube, &["-o", "json"])
        .status(1)
        .output()
        .json();
    assert_eq!(doc["kube"]["ok"], false);
    assert_eq!(
        doc["kube"]["error"],
        format!("the Kubernetes API at `{}` is overloaded and refused to get `externalsecrets.external-secrets.io` `ask/core-service-secret` (429 Too Many Requests)", kube.addr)
    );
    assert!(
        doc["kube"]["help"]
            .as_str()
            .unwrap()
            .starts_with("retry in a moment (`verify --wait 2m` keeps asking)"),
        "{doc}"
    );

    // The list shed once more (each ExternalSecret is then read alone), and that read twice:
    // when `--force-sync` reads it (said), and at the first check, which `--wait` asks again.
    kube.throttle("/namespaces/ask/externalsecrets", 1);
    kube.throttle("/externalsecrets/core-service-secret", 2);
    let doc = verify_real(&bao, &kube, &["--force-sync", "--wait", "1m", "-o", "json"])
        .output()
        .json();
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("could not annotate ExternalSecret `ask/core-service-secret`: it cannot be read: the Kubernetes API at"),
        "{notes}"
    );
    assert!(
        notes.contains("annotated ExternalSecret `ask/zitadel-secret` with force-sync"),
        "{notes}"
    );
}
