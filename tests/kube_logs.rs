//! Nothing secret reaches the logs, at any verbosity. A binary of its own: it installs the
//! global `tracing` subscriber.

mod common;

use common::fake_kube::{external_secret, secret, FakeKube};
use vault_seed::kube::KubeError;

const NS: &str = "core-service";

/// A `tracing` writer into memory, to read back everything logged.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_secret_value_is_logged_even_at_trace() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let c = captured.clone();
            move || c.clone()
        })
        .finish();
    // Global, in a test binary of its own: a thread-local default races with other tests
    // registering the same callsites and can miss events.
    tracing::subscriber::set_global_default(subscriber).expect("first subscriber");

    let kube = FakeKube::start();
    kube.put(secret(
        NS,
        "db-credentials",
        &[("DB_PASSWORD", "s3cr3t-db-value"), ("DB_USER", "app")],
    ));
    kube.put(
        external_secret(
            NS,
            "db",
            &[("DB_PASSWORD", "core-service/db", Some("password"))],
        )
        .target("db-credentials")
        .ready_synced("2026-03-01T10:00:00Z"),
    );
    // A Secret that is not valid JSON for a Secret still must not be echoed.
    kube.put(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "odd", "namespace": NS},
        "data": ["czNjcjN0LW9kZC12YWx1ZQ=="],
    }));
    let cluster = kube.connect().await;
    let keys = cluster.secret_keys(NS, "db-credentials").await.unwrap();
    assert_eq!(keys.unwrap(), ["DB_PASSWORD", "DB_USER"]);
    let err = cluster.secret_keys(NS, "odd").await.unwrap_err();
    assert!(matches!(err, KubeError::Decode { .. }), "{err:?}");
    cluster.external_secret(NS, "db").await.unwrap();

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("kubernetes api server answers"), "{logs}");
    for secret in [
        "s3cr3t-db-value",
        "czNjcjN0LWRiLXZhbHVl",
        "czNjcjN0LW9kZC12YWx1ZQ",
    ] {
        assert!(!logs.contains(secret), "{secret} was logged");
        assert!(!err.to_string().contains(secret), "{secret} in the error");
    }
}
