//! Nothing secret reaches the logs, at any verbosity. The check installs the global `tracing`
//! subscriber, so it runs in a process of its own: this test binary run again on this one test.

use crate::common;

use common::fake_kube::{external_secret, secret, FakeKube};
use vault_seed::kube::KubeError;

/// Set in the copy of the test binary that runs the check.
const OWN_PROCESS: &str = "VAULT_SEED_TEST_KUBE_LOGS";

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

#[test]
fn no_secret_value_is_logged_even_at_trace() {
    if std::env::var_os(OWN_PROCESS).is_some() {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(logged_at_trace());
    }
    // Global, in a process of its own: a thread-local default races with other tests
    // registering the same callsites and can miss events, and a global one here would collect
    // every other test's logs.
    let out = std::process::Command::new(common::this_binary())
        .args(common::rerun(
            module_path!(),
            "no_secret_value_is_logged_even_at_trace",
        ))
        .env(OWN_PROCESS, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed") && stdout.contains("kube logs: checked"),
        "the check did not run in its own process:\n{stdout}\n{stderr}"
    );
}

/// Drive the real `Cluster` with every log line captured at trace level; no Secret value,
/// and not the cluster's bearer token, is in them.
async fn logged_at_trace() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let c = captured.clone();
            move || c.clone()
        })
        .finish();
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
        kube.token.as_str(),
    ] {
        assert!(!logs.contains(secret), "{secret} was logged");
        assert!(!err.to_string().contains(secret), "{secret} in the error");
    }
    println!("kube logs: checked {} bytes of trace logs", logs.len());
}
