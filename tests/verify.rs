//! `vault-seed verify`: Vault (real OpenBao), ESO's policy, and ExternalSecrets in Kubernetes
//! (a fake API server reached through a real kubeconfig by the real kube-rs client).

mod common;

use std::process::Output;
use std::time::Duration;

use common::fake_kube::{self, FakeKube};
use common::OpenBao;
use serde_json::{json, Value};

const RUNBOOK_POLICY: &str = r#"
path "secret/data/ask/core-service/*"     { capabilities = ["create", "update", "read"] }
path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"] }
"#;
const FOLDER: &str = "ask/core-service/auh1-dev";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// OpenBao with the real spec applied, ESO's role `kubernetes/eso` carrying `policy`.
fn vault_with(policy: &str) -> OpenBao {
    let bao = OpenBao::dev();
    let out = bao
        .vault_seed()
        .arg("--specs")
        .arg(common::repo_specs())
        .args(["apply", "auh1-dev"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    bao.put_policy("eso-ask-push", policy);
    let (s, b) = bao.api(
        "POST",
        "sys/auth/kubernetes",
        Some(&json!({ "type": "kubernetes" })),
    );
    assert!(s == 204 || s == 200, "{b}");
    let (s, b) = bao.api(
        "POST",
        "auth/kubernetes/role/eso",
        Some(&json!({ "bound_service_account_names": ["external-secrets"], "bound_service_account_namespaces": ["external-secrets"], "token_policies": ["eso-ask-push"] })),
    );
    assert!(s == 204 || s == 200, "{b}");
    bao
}

fn later() -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::minutes(1);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

const CORE_KEYS: &[(&str, &str, Option<&str>)] = &[
    (
        "SECURITY__API_KEY_SALT",
        "ask/core-service/auh1-dev/SECURITY__API_KEY_SALT",
        Some("password"),
    ),
    (
        "SECURITY__MASTER_ENCRYPTION_KEY",
        "ask/core-service/auh1-dev/SECURITY__MASTER_ENCRYPTION_KEY",
        Some("password"),
    ),
    (
        "APP__CORE_SERVICES_MACHINE_TOKEN",
        "ask/core-service/auh1-dev/APP__CORE_SERVICES_MACHINE_TOKEN",
        Some("password"),
    ),
    (
        "IAM_SERVICE__PAT",
        "ask/core-service/auh1-dev/IAM_SERVICE__PAT",
        Some("value"),
    ),
];
const ZITADEL_KEYS: &[(&str, &str, Option<&str>)] = &[(
    "masterkey",
    "ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
    Some("password"),
)];

/// The cluster as it is once the bootstrap is done: store Valid, both ExternalSecrets Ready
/// after seeding, target Secrets with every key.
fn healthy_cluster() -> FakeKube {
    let kube = FakeKube::start();
    kube.put(fake_kube::secret_store(
        "ask",
        "vault-backend",
        true,
        "Valid",
        "store validated",
    ));
    kube.put(
        fake_kube::external_secret("ask", "core-service-secret", CORE_KEYS).ready_synced(&later()),
    );
    kube.put(
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS).ready_synced(&later()),
    );
    let core: Vec<(&str, &str)> = CORE_KEYS.iter().map(|(k, _, _)| (*k, "x")).collect();
    kube.put(fake_kube::secret("ask", "core-service-secret", &core));
    kube.put(fake_kube::secret(
        "ask",
        "zitadel-secret",
        &[("masterkey", "x")],
    ));
    kube
}

fn verify(bao: &OpenBao, kube: Option<&FakeKube>, args: &[&str]) -> Output {
    let mut c = bao.vault_seed();
    c.arg("--specs")
        .arg(common::repo_specs())
        .args(["verify", "auh1-dev"])
        .args(args);
    if let Some(k) = kube {
        c.arg("--kubeconfig").arg(k.kubeconfig());
    }
    c.output().unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

fn es<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["kube"]["external_secrets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap()
}

#[test]
fn the_whole_chain_is_done() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster();
    let out = verify(&bao, Some(&kube), &["-o", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let doc = json_of(&out);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["vault"]["counts"]["valid"], 4);
    assert_eq!(
        doc["vault"]["counts"]["pending"], 2,
        "placeholders are a warning, not a failure"
    );
    assert_eq!(doc["policy"]["method"], "policies");
    assert_eq!(doc["policy"]["policies"], json!(["eso-ask-push"]));
    assert_eq!(es(&doc, "core-service-secret")["ready"], true);
    assert_eq!(doc["kube"]["objects"][0]["kind"], "SecretStore");
    assert_eq!(doc["kube"]["objects"][0]["ok"], true);
    // Human output says so too.
    let human = verify(&bao, Some(&kube), &[]);
    assert!(
        text(&human.stdout).contains("verify auh1-dev: done"),
        "{}",
        text(&human.stdout)
    );
    // --strict makes the pending placeholders a failure.
    let strict = verify(&bao, Some(&kube), &["--strict"]);
    assert_eq!(strict.status.code(), Some(1));
}

#[test]
fn runbook_policy_without_the_metadata_rule_is_a_gap_with_the_rule_to_add() {
    let bao = vault_with(
        r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"] }"#,
    );
    let out = verify(&bao, None, &["--only", "policy"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("policy `eso-ask-push` does not grant `read`, `list` on `secret/metadata/{FOLDER}/ZITADEL_MASTERKEY`")), "{stdout}");
    assert!(
        stdout.contains(
            r#"path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"] }"#
        ),
        "{stdout}"
    );
    // With the runbook's grant it passes.
    bao.put_policy("eso-ask-push", RUNBOOK_POLICY);
    let out = verify(&bao, None, &["--only", "policy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn vault_seed_policy_output_makes_the_check_pass() {
    let bao = vault_with("path \"nothing/*\" { capabilities = [\"read\"] }");
    assert_eq!(
        verify(&bao, None, &["--only", "policy"]).status.code(),
        Some(1)
    );
    let out = bao
        .vault_seed()
        .arg("--specs")
        .arg(common::repo_specs())
        .args(["policy", "auh1-dev"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    bao.put_policy("eso-ask-push", &text(&out.stdout));
    let out = verify(&bao, None, &["--only", "policy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn policies_unreadable_falls_back_to_asking_the_server() {
    let bao = vault_with(RUNBOOK_POLICY);
    // The caller may read and list the secrets, but not the policies.
    bao.put_policy("reader", "path \"secret/*\" { capabilities = [\"read\", \"list\"] }\npath \"sys/capabilities\" { capabilities = [\"update\"] }");
    let caller = bao.token_with_policies(&["reader"]);
    let eso = bao.token_with_policies(&["eso-ask-push"]);
    let file = bao.home.path().join("eso-token");
    std::fs::write(&file, &eso).unwrap();
    let out = bao
        .vault_seed()
        .env("VAULT_TOKEN", &caller)
        .arg("--specs")
        .arg(common::repo_specs())
        .args([
            "verify",
            "auh1-dev",
            "--only",
            "policy",
            "-o",
            "json",
            "--eso-token-file",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let doc = json_of(&out);
    assert_eq!(doc["policy"]["method"], "server-eso-token");
    assert!(
        doc["policy"]["notes"]
            .to_string()
            .contains("may not read `sys/policies/acl/eso-ask-push`"),
        "{doc}"
    );
    assert!(
        !text(&out.stdout).contains(&eso) && !text(&out.stderr).contains(&eso),
        "ESO's token leaked"
    );
    // Run as ESO's own token: sys/capabilities-self, and a gap is found the same way.
    bao.put_policy(
        "eso-ask-push",
        r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"] }"#,
    );
    let out = bao
        .vault_seed()
        .env("VAULT_TOKEN", &eso)
        .arg("--specs")
        .arg(common::repo_specs())
        .args(["verify", "auh1-dev", "--only", "policy", "-o", "json"])
        .output()
        .unwrap();
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(doc["policy"]["method"], "server-self");
    assert_eq!(
        doc["policy"]["report"]["add"][0]["path"],
        "secret/metadata/ask/core-service/*"
    );
}

#[test]
fn a_sync_error_is_explained_by_the_policy_gap_and_the_event() {
    let bao = vault_with(
        r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update"] }"#,
    );
    let kube = healthy_cluster();
    kube.put(
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS).sync_error(&later()),
    );
    kube.add_event(fake_kube::event(
        "ask",
        "ExternalSecret",
        "zitadel-secret",
        "Warning",
        "UpdateFailed",
        "error retrieving secret at .data[0], key: ask/core-service/auh1-dev/ZITADEL_MASTERKEY, err: cannot read secret data from Vault: Error making API request. Code: 403. Errors: * 1 error occurred: * permission denied",
    ));
    let out = verify(&bao, Some(&kube), &["-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json_of(&out);
    let z = es(&doc, "zitadel-secret");
    assert_eq!(z["ok"], false);
    assert!(
        z["problems"][0]
            .as_str()
            .unwrap()
            .starts_with("not Ready: SecretSyncedError: could not get secret data from provider"),
        "{z}"
    );
    let why = z["explanations"].to_string();
    assert!(
        why.contains(&format!(
            "ESO's policy does not grant `read` on `secret/data/{FOLDER}/ZITADEL_MASTERKEY`"
        )),
        "{why}"
    );
    assert!(
        why.contains("event UpdateFailed") && why.contains("Code: 403"),
        "{why}"
    );
    let human = verify(&bao, Some(&kube), &[]);
    assert!(
        text(&human.stdout).contains("why: ESO's policy does not grant `read`"),
        "{}",
        text(&human.stdout)
    );
}

#[test]
fn stale_ready_missing_key_and_unknown_remote_ref_are_reported() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster();
    // Ready, but synced before the secrets were seeded.
    kube.put(
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS)
            .ready_synced("2020-01-01T00:00:00Z"),
    );
    // The target Secret lacks a key; and a remoteRef the spec does not know.
    let mut refs = CORE_KEYS.to_vec();
    refs.push((
        "EXTRA",
        "ask/core-service/auh1-dev/NOT_IN_SPEC",
        Some("password"),
    ));
    kube.put(
        fake_kube::external_secret("ask", "core-service-secret", &refs).ready_synced(&later()),
    );
    let out = verify(&bao, Some(&kube), &["-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json_of(&out);
    let z = es(&doc, "zitadel-secret");
    assert!(
        z["problems"][0]
            .as_str()
            .unwrap()
            .contains("the Ready is from before seeding"),
        "{z}"
    );
    let c = es(&doc, "core-service-secret");
    let problems = c["problems"].to_string();
    assert!(problems.contains("remoteRef `ask/core-service/auh1-dev/NOT_IN_SPEC` (secretKey `EXTRA`) is not a path of the spec"), "{problems}");
    assert!(
        problems.contains("target Secret `ask/core-service-secret` lacks key(s) `EXTRA`"),
        "{problems}"
    );
}

#[test]
fn only_v1beta1_served_and_force_sync() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster();
    kube.serve_versions(&["v1beta1"]);
    let out = verify(&bao, Some(&kube), &["-o", "json", "--force-sync"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let doc = json_of(&out);
    assert_eq!(
        es(&doc, "core-service-secret")["api_version"],
        "external-secrets.io/v1beta1"
    );
    let patches = kube.patches();
    assert_eq!(patches.len(), 2, "one force-sync patch per ExternalSecret");
    for p in &patches {
        assert!(
            p.path
                .contains("/apis/external-secrets.io/v1beta1/namespaces/ask/externalsecrets/"),
            "{}",
            p.path
        );
        assert!(
            p.body["metadata"]["annotations"]["force-sync"].is_string(),
            "{}",
            p.body
        );
    }
}

#[test]
fn wait_sees_an_external_secret_become_ready() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster();
    kube.put(
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS).sync_error(&later()),
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            // Flip it only once verify has seen it not Ready (however slow this machine is).
            let seen = || {
                kube.requests().iter().any(|r| {
                    r.method == "GET" && r.path.ends_with("/externalsecrets/zitadel-secret")
                })
            };
            let start = std::time::Instant::now();
            while !seen() && start.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(500));
            kube.update("ExternalSecret", Some("ask"), "zitadel-secret", |v| {
                *v = fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS)
                    .ready_synced(&later())
                    .into();
            });
        });
        let out = verify(&bao, Some(&kube), &["--wait", "30s"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("waiting: 1/2 ExternalSecret(s) done"),
            "{}",
            text(&out.stderr)
        );
    });
    // Without --wait the same failure is reported at once.
    kube.put(
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS).sync_error(&later()),
    );
    assert_eq!(verify(&bao, Some(&kube), &[]).status.code(), Some(1));
}

#[test]
fn unreachable_cluster_and_skip_kube() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster();
    let kubeconfig = kube.kubeconfig();
    let copy = bao.home.path().join("kubeconfig");
    std::fs::copy(&kubeconfig, &copy).unwrap();
    drop(kube);
    let out = bao
        .vault_seed()
        .arg("--specs")
        .arg(common::repo_specs())
        .args(["verify", "auh1-dev", "--kubeconfig"])
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("FAIL kube:"), "{stdout}");
    assert!(stdout.contains("--skip-kube"), "{stdout}");
    let out = verify(&bao, None, &["--skip-kube"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn no_secret_appears_in_a_full_session_at_trace_level() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster();
    let mut all = String::new();
    let mut run = |args: &[&str], stdin: &str| {
        let mut c = bao.vault_seed();
        c.env("RUST_LOG", "trace")
            .arg("--specs")
            .arg(common::repo_specs())
            .args(args)
            .arg("-vvv");
        c.write_stdin(stdin.as_bytes().to_vec());
        let out = c.output().unwrap();
        all.push_str(&text(&out.stdout));
        all.push_str(&text(&out.stderr));
    };
    run(&["apply", "auh1-dev"], "");
    run(
        &["set", "auh1-dev", "IAM_SERVICE__PAT"],
        "pat-from-stdin-5e1f\n",
    );
    run(
        &["rotate", "auh1-dev", "SECURITY__API_KEY_SALT", "--yes"],
        "",
    );
    run(
        &[
            "verify",
            "auh1-dev",
            "--kubeconfig",
            kube.kubeconfig().to_str().unwrap(),
            "-o",
            "json",
        ],
        "",
    );
    run(&["plan", "auh1-dev"], "");
    assert!(all.contains("vault_seed"), "trace logs were on");
    let mut secrets = vec![bao.token.clone(), "pat-from-stdin-5e1f".to_string()];
    for name in [
        "SECURITY__API_KEY_SALT",
        "SECURITY__MASTER_ENCRYPTION_KEY",
        "APP__CORE_SERVICES_MACHINE_TOKEN",
        "ZITADEL_MASTERKEY",
    ] {
        for version in [1, 2] {
            let (s, body) = bao.api(
                "GET",
                &format!("secret/data/{FOLDER}/{name}?version={version}"),
                None,
            );
            if s == 200 {
                secrets.push(
                    body["data"]["data"]["password"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                );
            }
        }
    }
    assert_eq!(
        secrets.len(),
        7,
        "token, PAT, 4 generated values and the rotated salt's new one"
    );
    for s in &secrets {
        assert!(!all.contains(s.as_str()), "a secret leaked into the output");
    }
}

/// A policy in an HCL 1 form the server accepts but vault-seed's parser does not: verify says so
/// and asks the server instead, with the same verdict.
#[test]
fn a_policy_vault_seed_cannot_parse_is_checked_by_the_server() {
    // Several blocks on one line, with trailing commas: valid HCL 1, rejected by hcl-rs.
    let hcl1 = r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"], } path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"], }"#;
    let bao = vault_with(hcl1);
    let eso = bao.token_with_policies(&["eso-ask-push"]);
    let file = bao.home.path().join("eso-token");
    std::fs::write(&file, &eso).unwrap();
    let out = verify(
        &bao,
        None,
        &[
            "--only",
            "policy",
            "-o",
            "json",
            "--eso-token-file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let doc = json_of(&out);
    assert_eq!(doc["policy"]["method"], "server-eso-token");
    assert!(
        doc["policy"]["notes"]
            .to_string()
            .contains("cannot evaluate policy `eso-ask-push` here"),
        "{doc}"
    );
}
