//! `verify` in a pod: kube-rs's in-cluster configuration (no kubeconfig, no HOME), pointed at the
//! fake API server over HTTPS through the service account's files at their fixed path
//! (tests/suite/common/pod.rs), and `--skip-target-secrets`, which lets a hook Job's Role leave out
//! `get secrets`.

use crate::common;

use std::path::Path;

use common::fake_kube::{self, FakeKube};
use common::pod::{Pod, ServiceAccount, SETUP_FAILED};
use common::{has, text, OpenBao, Run};

/// OpenBao with the real spec applied, the paths ask-db provides pushed, and ESO's role with the
/// policy `vault-seed policy ENV` prints.
fn seeded_vault() -> OpenBao {
    let bao = OpenBao::dev();
    bao.ask_db_pushes();
    Run::new(&bao)
        .real_specs()
        .args(["apply", "auh1-dev"])
        .output();
    bao.eso_role(&crate::seeder_policy::printed("eso").0);
    bao
}

/// The two ExternalSecrets of the real spec Ready after seeding, their store Valid; no target
/// Secret (a cluster whose Secrets vault-seed may not read).
fn ready_cluster(bao: &OpenBao) -> FakeKube {
    let kube = FakeKube::start_tls();
    let later = (time::OffsetDateTime::now_utc() + time::Duration::minutes(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    kube.put(fake_kube::real_spec_store(&bao.addr));
    for name in ["core-service-secret", "zitadel-secret"] {
        kube.put(fake_kube::real_spec_external_secret(name).ready_synced(&later));
    }
    crate::verify::argocd_layout(&kube);
    kube
}

fn pod(kube: &FakeKube, bao: &OpenBao) -> Pod {
    Pod::new()
        .service_account(
            &ServiceAccount {
                token: kube.token.clone(),
                ca_pem: kube.ca_pem.clone().expect("a TLS server"),
                namespace: "ask".into(),
            },
            kube.port,
        )
        .volume(&common::repo_specs(), "/etc/vault-seed/secret-specs")
        .env("VAULT_SEED_SPECS", "/etc/vault-seed/secret-specs")
        .env("VAULT_ADDR", &bao.addr)
        .env("VAULT_TOKEN", &bao.token)
        .env("NO_COLOR", "1")
}

#[test]
fn verify_in_a_pod_reads_the_cluster_through_the_in_cluster_configuration() {
    let bao = seeded_vault();
    let kube = ready_cluster(&bao);
    let bin = common::run::bin();
    let out = pod(&kube, &bao)
        .command(&bin)
        .args(["verify", "auh1-dev", "--skip-target-secrets"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(SETUP_FAILED), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // In-cluster: the API server from KUBERNETES_SERVICE_HOST/PORT, over TLS trusting ca.crt,
    // with the service account's token (the fake answers 401 to anything else).
    has(
        &stdout,
        format!("ok   kube: https://127.0.0.1:{} (in-cluster)", kube.port),
    );
    has(
        &stdout,
        "ExternalSecret(s) Ready and fresh, target Secrets not checked",
    );
    has(
        &stderr,
        "note: target Secrets were not read (--skip-target-secrets)",
    );
    let requests = kube.requests();
    // The namespace's ExternalSecrets, in one LIST.
    assert!(
        requests
            .iter()
            .any(|r| r.path == "/apis/external-secrets.io/v1/namespaces/ask/externalsecrets"),
        "{requests:?}"
    );
    // No Secret was asked for, alone or listed.
    assert!(
        !requests
            .iter()
            .any(|r| r.path.contains("/secrets/") || r.path.ends_with("/secrets")),
        "{requests:?}"
    );

    // Without the flag the target Secrets are read, and here they do not exist: not done.
    let out = pod(&kube, &bao)
        .command(&bin)
        .args(["verify", "auh1-dev", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = doc["kube"]["external_secrets"][0]["problems"].to_string();
    has(
        &problems,
        "target Secret `ask/core-service-secret` does not exist",
    );
    assert!(kube
        .requests()
        .iter()
        .any(|r| r.path == "/api/v1/namespaces/ask/secrets"));
}

#[test]
fn without_a_service_account_verify_says_no_cluster_is_configured() {
    let bao = seeded_vault();
    let bin = common::run::bin();
    let out = Pod::new()
        .volume(&common::repo_specs(), "/etc/vault-seed/secret-specs")
        .env("VAULT_SEED_SPECS", "/etc/vault-seed/secret-specs")
        .env("VAULT_ADDR", &bao.addr)
        .env("VAULT_TOKEN", &bao.token)
        .command(Path::new(&bin))
        .args(["verify", "auh1-dev", "--only", "kube"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_ne!(
        out.status.code(),
        Some(SETUP_FAILED),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    has(&stdout, "FAIL kube: no Kubernetes configuration");
    // Both places were looked in: the kubeconfig and the pod's service account.
    has(&stdout, "`KUBECONFIG` is unset");
    has(
        &stdout,
        "this is not a pod with a service account (failed to read an incluster environment variable",
    );
}
