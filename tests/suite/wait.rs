//! `verify --wait`: each poll reads again only what is not done, the waiting line names what it
//! waits for, and waiting stops early when what is not done cannot become done by waiting.

use crate::common;

use std::time::{Duration, Instant};

use common::fake_kube::{self, FakeKube};
use common::{OpenBao, Run};
use serde_json::json;

fn later() -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::minutes(1);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

fn verify(bao: &OpenBao, kube: &FakeKube, args: &[&str]) -> common::Run {
    Run::new(bao)
        .real_specs()
        .args(["verify", "auh1-dev", "--kubeconfig"])
        .arg(kube.kubeconfig())
        .args(args)
}

fn count(kube: &FakeKube, path: &str) -> usize {
    kube.requests().iter().filter(|r| r.path == path).count()
}

/// ExternalSecret `ask/name` not Ready, with ESO's generic message (external-secrets v2.9.0
/// `pkg/controllers/externalsecret/externalsecret_controller.go`, `SecretSyncedError`).
fn not_ready(kube: &FakeKube, name: &str) {
    kube.update("ExternalSecret", Some("ask"), name, |o| {
        fake_kube::set_ready(
            o,
            false,
            "SecretSyncedError",
            "could not get secret data from provider",
            "2026-01-01T00:00:00Z",
        );
    });
}

const ES: &str = "/apis/external-secrets.io/v1/namespaces/ask/externalsecrets";

/// One ExternalSecret of two not Ready (ESO retries after seeding, as in the runbook): each poll
/// reads that one again, alone, and its target Secret; the one done is read once, in the list.
#[test]
fn a_poll_reads_again_only_what_is_not_done_and_names_it() {
    let bao = crate::verify::vault_with(crate::verify::RUNBOOK_POLICY);
    let kube = crate::verify::healthy_cluster(&bao);
    not_ready(&kube, "zitadel-secret");
    // ESO syncs it once verify has read it again by name (the second poll).
    let flipped = std::thread::scope(|s| {
        let flipper = s.spawn(|| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if count(&kube, &format!("{ES}/zitadel-secret")) > 0 {
                    let at = later();
                    kube.update("ExternalSecret", Some("ask"), "zitadel-secret", |o| {
                        fake_kube::set_ready(o, true, "SecretSynced", "secret synced", &at);
                        o["status"]["refreshTime"] = json!(at);
                    });
                    return true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            false
        });
        let out = verify(&bao, &kube, &["--wait", "1m"]).output();
        let stderr = out.stderr_text();
        assert!(
            stderr.contains("waiting: 1/2 ExternalSecret(s) done; waiting for ExternalSecret ask/zitadel-secret (not Ready: SecretSyncedError"),
            "{stderr}"
        );
        flipper.join().unwrap()
    });
    assert!(flipped, "the ExternalSecret not Ready was never read again");
    assert_eq!(count(&kube, ES), 1, "{:?}", kube.requests());
    assert_eq!(count(&kube, &format!("{ES}/core-service-secret")), 0);
    assert_eq!(count(&kube, "/api/v1/namespaces/ask/secrets"), 1);
    assert_eq!(
        count(&kube, "/api/v1/namespaces/ask/secrets/core-service-secret"),
        0
    );
    assert!(count(&kube, "/api/v1/namespaces/ask/secrets/zitadel-secret") >= 1);
}

/// OpenBao with the real spec applied and ESO's role, without ask-db's pushes: the provided
/// paths are absent.
fn vault_without_pushes() -> OpenBao {
    let bao = OpenBao::dev();
    Run::new(&bao)
        .real_specs()
        .args(["apply", "auh1-dev"])
        .output();
    bao.eso_role(crate::verify::RUNBOOK_POLICY);
    bao
}

/// Not done for a cause waiting cannot fix: `--wait` stops at once, names the cause, and the
/// verdict is not done (exit 1).
fn stops_early(bao: &OpenBao, kube: &FakeKube, cause: &str) {
    let start = Instant::now();
    let doc = verify(bao, kube, &["--wait", "1m", "-o", "json"])
        .status(1)
        .output()
        .json();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "waited {:?}",
        start.elapsed()
    );
    assert_eq!(doc["ok"], false);
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("stopped waiting: waiting cannot make it done: "),
        "{notes}"
    );
    assert!(notes.contains(cause), "{notes}");
    assert!(!notes.contains("waited 1m"), "{notes}");
}

#[test]
fn a_missing_store_stops_the_wait() {
    let bao = crate::verify::vault_with(crate::verify::RUNBOOK_POLICY);
    let kube = crate::verify::healthy_cluster(&bao);
    // Both read through a SecretStore nobody created; ESO cannot sync them (external-secrets
    // v2.9.0 `pkg/controllers/externalsecret/externalsecret_controller.go`: Ready False).
    for name in ["core-service-secret", "zitadel-secret"] {
        kube.update("ExternalSecret", Some("ask"), name, |o| {
            o["spec"]["secretStoreRef"] = json!({"kind": "SecretStore", "name": "gone"});
        });
        not_ready(&kube, name);
    }
    stops_early(&bao, &kube, "SecretStore `gone` does not exist");
}

#[test]
fn a_vault_403_stops_the_wait() {
    let bao = crate::verify::vault_with(crate::verify::RUNBOOK_POLICY);
    let kube = crate::verify::healthy_cluster(&bao);
    not_ready(&kube, "zitadel-secret");
    // The Warning event ESO records with the provider's error: Vault's API client's text
    // (hashicorp/vault `api/response.go`, `ResponseError.Error`).
    kube.add_event(fake_kube::event(
        "ask",
        "ExternalSecret",
        "zitadel-secret",
        "Warning",
        "UpdateFailed",
        "error retrieving secret at .data[0], key: ask/core-service/auh1-dev/ZITADEL_MASTERKEY, err: Error making API request.\n\nURL: GET http://vault/v1/secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY\nCode: 403. Errors:\n\n* 1 error occurred:\n\t* permission denied\n\n",
    ));
    stops_early(&bao, &kube, "Vault denies ESO a path it reads (403)");
}

#[test]
fn a_push_secret_that_is_not_json_stops_the_wait() {
    let bao = vault_without_pushes();
    let kube = crate::verify::healthy_cluster(&bao);
    kube.put(
        fake_kube::external_secret(
            "ask",
            "zitadel-secret",
            &[(
                "db-password",
                "ask/postgresql/auh1-dev/zitadel-db-password",
                Some("password"),
            )],
        )
        .sync_error("2026-01-01T00:00:00Z"),
    );
    // ESO's Vault provider refuses a whole-secret push of a value that is not JSON (external-secrets
    // v2.9.0 `providers/v1/vault/client_push.go`), written by the PushSecret controller as
    // `errFailedSetSecret` into Ready (`pkg/controllers/pushsecret/pushsecret_controller.go`).
    kube.put(fake_kube::push_secret(
        "ask",
        "zitadel-db-password",
        false,
        "Errored",
        "set secret failed: could not write remote ref ask/postgresql/auh1-dev/zitadel-db-password to target secretstore vault-backend: error unmarshalling incoming secret value: invalid JSON format",
        "2026-01-01T00:00:00Z",
    ));
    stops_early(
        &bao,
        &kube,
        "PushSecret `ask/zitadel-db-password` pushes a value that is not a JSON object",
    );
}

/// A path written while verify waits is judged again: ask-db pushes its password during the
/// wait, ESO then syncs the ExternalSecret reading it, and the provided path is present.
#[test]
fn a_path_written_during_the_wait_is_judged_again() {
    let bao = vault_without_pushes();
    let kube = crate::verify::healthy_cluster(&bao);
    const PATH: &str = "ask/postgresql/auh1-dev/zitadel-db-password";
    kube.put(
        fake_kube::external_secret(
            "ask",
            "zitadel-secret",
            &[("db-password", PATH, Some("password"))],
        )
        .sync_error("2026-01-01T00:00:00Z"),
    );
    let doc = std::thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if count(&kube, &format!("{ES}/zitadel-secret")) > 0 {
                    // ask-db's PushSecret writes the value, then ESO syncs it.
                    bao.ask_db_pushes();
                    let value = crate::verify::vault_value(&bao, PATH, "password");
                    let at = later();
                    kube.put(fake_kube::secret(
                        "ask",
                        "zitadel-secret",
                        &[("db-password", &value)],
                    ));
                    kube.update("ExternalSecret", Some("ask"), "zitadel-secret", |o| {
                        fake_kube::set_ready(o, true, "SecretSynced", "secret synced", &at);
                        o["status"]["refreshTime"] = json!(at);
                    });
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        verify(&bao, &kube, &["--wait", "1m", "-o", "json"])
            .output()
            .json()
    });
    let provided = doc["kube"]["provided"].as_array().unwrap();
    let p = provided
        .iter()
        .find(|p| p["path"] == format!("secret/{PATH}"))
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(p["ok"], true, "{p:#}");
}
