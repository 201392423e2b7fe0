//! `vault-seed verify`: Vault (real OpenBao), ESO's policy, and ExternalSecrets in Kubernetes
//! (a fake API server reached through a real kubeconfig by the real kube-rs client).

use crate::common;

use std::time::Duration;

use common::fake_kube::{self, FakeKube};
use common::{has, OpenBao, Run};
use serde_json::{json, Value};

/// The runbook's grant, and ESO's read of the database passwords ask-db pushes (issue 15).
pub(crate) const RUNBOOK_POLICY: &str = r#"
path "secret/data/ask/core-service/*"     { capabilities = ["create", "update", "read"] }
path "secret/data/ask/postgresql/*"       { capabilities = ["read"] }
path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"] }
"#;
const FOLDER: &str = "ask/core-service/auh1-dev";

/// OpenBao with the real spec applied, ESO's role `kubernetes/eso` carrying `policy`.
pub(crate) fn vault_with(policy: &str) -> OpenBao {
    let bao = OpenBao::dev();
    Run::new(&bao)
        .real_specs()
        .args(["apply", "auh1-dev"])
        .output();
    bao.ask_db_pushes();
    bao.eso_role(policy);
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

/// The cluster as it is once the bootstrap is done: store Valid and reading `bao`, both
/// ExternalSecrets Ready after seeding, target Secrets holding what Vault holds now.
pub(crate) fn healthy_cluster(bao: &OpenBao) -> FakeKube {
    let kube = FakeKube::start();
    eso_synced(bao, &kube);
    kube
}

/// What the secrets app's sync leaves once ESO ran: the store, both ExternalSecrets Ready after
/// seeding, their target Secrets holding what Vault holds now, the runbook's Argo CD layout.
pub(crate) fn eso_synced(bao: &OpenBao, kube: &FakeKube) {
    kube.put(fake_kube::real_spec_store(&bao.addr));
    kube.put(
        fake_kube::external_secret("ask", "core-service-secret", CORE_KEYS).ready_synced(&later()),
    );
    kube.put(
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS).ready_synced(&later()),
    );
    delivered(bao, kube);
    argocd_layout(kube);
}

/// The runbook's fixed Argo CD layout, as the repository's spec's `[argocd]` names it: the
/// secrets app at app wave 0, Synced and Healthy; core-service at app wave 1; argocd-cm with the
/// Application health check.
pub(crate) fn argocd_layout(kube: &FakeKube) {
    kube.put(fake_kube::argocd_fixture("application-secrets-synced.yaml"));
    kube.put(fake_kube::argocd_fixture(
        "application-core-service-progressing.yaml",
    ));
    kube.put(fake_kube::argocd_fixture("argocd-cm-with-app-health.yaml"));
}

/// ESO's sync of both target Secrets: each key holding the value Vault has now at the path and
/// field its remoteRef reads.
pub(crate) fn delivered(bao: &OpenBao, kube: &FakeKube) {
    for (name, refs) in [
        ("core-service-secret", CORE_KEYS),
        ("zitadel-secret", ZITADEL_KEYS),
    ] {
        let values: Vec<(&str, String)> = refs
            .iter()
            .map(|(k, key, property)| (*k, vault_value(bao, key, property.unwrap_or("value"))))
            .collect();
        let pairs: Vec<(&str, &str)> = values.iter().map(|(k, v)| (*k, v.as_str())).collect();
        kube.put(fake_kube::secret("ask", name, &pairs));
    }
}

/// The value Vault holds now at `key` (below the mount `secret`), field `property`; empty when
/// there is none.
pub(crate) fn vault_value(bao: &OpenBao, key: &str, property: &str) -> String {
    bao.kv_get("secret", key)
        .and_then(|(d, _)| d.get(property).and_then(|v| v.as_str()).map(str::to_string))
        .unwrap_or_default()
}

/// `verify auh1-dev` of the real spec with `args`, against `kube` when given: a run to set
/// expectations on ([`Run::output`]).
fn verify(bao: &OpenBao, kube: Option<&FakeKube>, args: &[&str]) -> Run {
    let mut run = Run::new(bao)
        .real_specs()
        .args(["verify", "auh1-dev"])
        .args(args);
    if let Some(k) = kube {
        run = run.arg("--kubeconfig").arg(k.kubeconfig());
    }
    run
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
    let kube = healthy_cluster(&bao);
    let out = verify(&bao, Some(&kube), &["-o", "json"]).output();
    let doc = out.json();
    assert_eq!(doc["ok"], true);
    // 4 generated, and ask-db's 3 provided database passwords.
    assert_eq!(doc["vault"]["counts"]["valid"], 7);
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
    verify(&bao, Some(&kube), &[])
        .stdout_has("verify auh1-dev: done")
        .output();
    // --strict makes the pending placeholders a failure.
    verify(&bao, Some(&kube), &["--strict"]).status(1).output();
}

#[test]
fn runbook_policy_without_the_metadata_rule_is_a_gap_with_the_rule_to_add() {
    let bao = vault_with(
        r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"] }"#,
    );
    verify(&bao, None, &["--only", "policy"])
        .status(1)
        .stdout_has(format!("policy `eso-ask-push` does not grant `read`, `list` on 6 paths under `secret/metadata/{FOLDER}/`"))
        .stdout_has(r#"add: path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"] }"#)
        .output();
    // With the runbook's grant it passes.
    bao.put_policy("eso-ask-push", RUNBOOK_POLICY);
    verify(&bao, None, &["--only", "policy"]).output();
}

/// Fifteen gaps closed by three rules are three errors, each with its rule and the number of
/// paths it covers (the third: ESO's read of ask-db's provided database passwords); `-v` lists
/// the paths; JSON keeps every path with the rule that closes it.
#[test]
fn gaps_are_grouped_by_the_rule_that_closes_them() {
    let bao = vault_with(r#"path "nothing/*" { capabilities = ["read"] }"#);
    let out = verify(&bao, None, &["--only", "policy"])
        .status(1)
        .stdout_has(format!("does not grant `create`, `update`, `read` on 6 paths under `secret/data/{FOLDER}/` (ExternalSecret read, PushSecret; granted: nothing; -v lists them)"))
        .stdout_has(format!("does not grant `read`, `list` on 6 paths under `secret/metadata/{FOLDER}/` (PushSecret; granted: nothing; -v lists them)"))
        // A path ask-db provides is closed by a rule of its own (a glob over ask-db's folder
        // would reach its other secrets).
        .stdout_has("does not grant `read` on `secret/data/ask/postgresql/auh1-dev/core-service-db-password` (ExternalSecret read; granted: nothing)")
        .stdout_has(r#"add: path "secret/data/ask/postgresql/auh1-dev/core-service-db-password" { capabilities = ["read"] }"#)
        // The paths are listed only with -v.
        .stdout_lacks("ZITADEL_MASTERKEY")
        // The whole grant once more, ready to paste.
        .stdout_has("help: add to `eso-ask-push`:")
        .output();
    let stdout = out.stdout_text();
    assert_eq!(stdout.matches("error:").count(), 5, "{stdout}");
    assert_eq!(stdout.matches("  add: ").count(), 5, "{stdout}");

    let listed = [
        "ZITADEL_MASTERKEY",
        "IAM_SERVICE__PAT",
        "HATCHET__CLIENT_TOKEN",
    ]
    .iter()
    .fold(
        verify(&bao, None, &["--only", "policy", "-v"]).status(1),
        |run, name| {
            run.stdout_has(format!(
                "`secret/data/{FOLDER}/{name}`: lacks `create`, `update`, `read`"
            ))
            .stdout_has(format!(
                "`secret/metadata/{FOLDER}/{name}`: lacks `read`, `list`"
            ))
        },
    );
    let stdout = listed.output().stdout_text();
    assert_eq!(stdout.matches("error:").count(), 5, "{stdout}");

    let doc = verify(&bao, None, &["--only", "policy", "-o", "json"])
        .status(1)
        .json();
    let paths = doc["policy"]["report"]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 15);
    for p in paths {
        let path = p["path"].as_str().unwrap();
        let fix = if path.starts_with("secret/data/ask/postgresql/") {
            path
        } else if path.starts_with("secret/data/") {
            "secret/data/ask/core-service/*"
        } else {
            "secret/metadata/ask/core-service/*"
        };
        assert_eq!(p["fix"], fix, "{p}");
        assert_eq!(p["missing"], p["required"], "{p}");
        assert_eq!(p["refused"], json!([]), "{p}");
    }
    assert_eq!(doc["policy"]["report"]["add"].as_array().unwrap().len(), 5);
}

#[test]
fn vault_seed_policy_output_makes_the_check_pass() {
    let bao = vault_with("path \"nothing/*\" { capabilities = [\"read\"] }");
    verify(&bao, None, &["--only", "policy"]).status(1).output();
    let out = Run::new(&bao)
        .real_specs()
        .args(["policy", "auh1-dev"])
        .output();
    bao.put_policy("eso-ask-push", &out.stdout_text());
    verify(&bao, None, &["--only", "policy"]).output();
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
    let out = Run::new(&bao)
        .token(&caller)
        .real_specs()
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
        // ESO's token.
        .never_shows(&eso)
        .output();
    let doc = out.json();
    assert_eq!(doc["policy"]["method"], "server-eso-token");
    assert!(
        doc["policy"]["notes"]
            .to_string()
            .contains("may not read `sys/policies/acl/eso-ask-push`"),
        "{doc}"
    );
    // Run as ESO's own token: sys/capabilities-self, and a gap is found the same way.
    bao.put_policy(
        "eso-ask-push",
        r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"] }
path "secret/data/ask/postgresql/*" { capabilities = ["read"] }"#,
    );
    let doc = Run::new(&bao)
        .token(&eso)
        .real_specs()
        .args(["verify", "auh1-dev", "--only", "policy", "-o", "json"])
        .status(1)
        .output()
        .json();
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
    let kube = healthy_cluster(&bao);
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
    let out = verify(&bao, Some(&kube), &["-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
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
    verify(&bao, Some(&kube), &[])
        .status(1)
        .stdout_has("why: ESO's policy does not grant `read`")
        .output();
}

#[test]
fn stale_ready_missing_key_and_unknown_remote_ref_are_reported() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    // Ready, but synced before the secrets were seeded: its Secret holds what it held then.
    kube.put(
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS)
            .ready_synced("2020-01-01T00:00:00Z"),
    );
    kube.put(fake_kube::secret(
        "ask",
        "zitadel-secret",
        &[("masterkey", "from-before-seeding")],
    ));
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
    let out = verify(&bao, Some(&kube), &["-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
    let z = es(&doc, "zitadel-secret");
    assert!(
        z["problems"][0]
            .as_str()
            .unwrap()
            .contains("the Ready is from before seeding"),
        "{z}"
    );
    assert_eq!(z["values_match"], false, "{z}");
    assert!(
        z["problems"].to_string().contains(
            "target Secret `ask/zitadel-secret` key `masterkey` does not hold the value in Vault (version 1)"
        ),
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
    let kube = healthy_cluster(&bao);
    kube.serve_versions(&["v1beta1"]);
    let out = verify(&bao, Some(&kube), &["-o", "json", "--force-sync"]).output();
    let doc = out.json();
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
    let kube = healthy_cluster(&bao);
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
        verify(&bao, Some(&kube), &["--wait", "30s"])
            .stderr_has("waiting: 1/2 ExternalSecret(s) done")
            .output();
    });
    // Without --wait the same failure is reported at once.
    kube.put(
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS).sync_error(&later()),
    );
    verify(&bao, Some(&kube), &[]).status(1).output();
}

#[test]
fn unreachable_cluster_and_skip_kube() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let kubeconfig = kube.kubeconfig();
    let copy = bao.home.path().join("kubeconfig");
    std::fs::copy(&kubeconfig, &copy).unwrap();
    drop(kube);
    Run::new(&bao)
        .real_specs()
        .args(["verify", "auh1-dev", "--kubeconfig"])
        .arg(&copy)
        .status(1)
        .stdout_has("FAIL kube:")
        .stdout_has("--skip-kube")
        .output();
    verify(&bao, None, &["--skip-kube"]).output();
}

#[test]
fn no_secret_appears_in_a_full_session_at_trace_level() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let mut all = String::new();
    // Each run must do its work (checked below), else the search would cover only early exits.
    let run = |args: &[&str]| {
        Run::new(&bao)
            .env("RUST_LOG", "trace")
            .real_specs()
            .args(args)
            .arg("-vvv")
    };
    // Run, check that logging was on (and what else is expected of it), and keep its output.
    let mut seen = |run: Run| {
        let out = run.stderr_has(" INFO vault_seed").output();
        all.push_str(&out.all_text());
        out
    };
    // Everything exists already (vault_with applied the spec): nothing to write.
    seen(run(&["apply", "auh1-dev"]));
    let out = seen(run(&["apply", "auh1-dev", "-o", "json"]));
    assert_eq!(out.json()["summary"]["exists"], 4, "{}", out.stdout_text());
    seen(run(&["set", "auh1-dev", "IAM_SERVICE__PAT"]).stdin("pat-from-stdin-5e1f\n"));
    let (pat, version) = bao
        .kv_get("secret", &format!("{FOLDER}/IAM_SERVICE__PAT"))
        .unwrap();
    assert_eq!(
        (pat["value"].as_str(), version),
        (Some("pat-from-stdin-5e1f"), 2)
    );
    seen(run(&[
        "rotate",
        "auh1-dev",
        "APP__CORE_SERVICES_MACHINE_TOKEN",
        "--yes",
    ]));
    assert_eq!(
        bao.kv_version(
            "secret",
            &format!("{FOLDER}/APP__CORE_SERVICES_MACHINE_TOKEN")
        ),
        Some(2)
    );
    // ESO syncs what `set` and `rotate` wrote.
    delivered(&bao, &kube);
    let doc = seen(
        run(&["verify", "auh1-dev", "-o", "json"])
            .arg("--kubeconfig")
            .arg(kube.kubeconfig()),
    )
    .json();
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(
        doc["kube"]["external_secrets"].as_array().map(Vec::len),
        Some(2),
        "the cluster was read: {doc}"
    );
    seen(run(&["plan", "auh1-dev"]).stdout_has("nothing was written (plan)"));
    seen(
        run(&["policy", "auh1-dev", "--merge", "eso-ask-push"])
            .stdout_has("path \"secret/data/ask/core-service/*\""),
    );
    let mut secrets = vec![
        bao.token.clone(),
        kube.token.clone(),
        "pat-from-stdin-5e1f".to_string(),
    ];
    // What ask-db provides (read by apply, plan and verify), and what the cluster's target
    // Secrets hold (read by verify for their keys), as text and as the API sends it (base64).
    secrets.extend(common::ASK_DB_PASSWORDS.map(|(_, v)| v.to_string()));
    for (_, key, property) in CORE_KEYS.iter().chain(ZITADEL_KEYS) {
        use base64::Engine as _;
        let value = vault_value(&bao, key, property.unwrap_or("value"));
        secrets.push(base64::engine::general_purpose::STANDARD.encode(&value));
    }
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
        16,
        "the token, the cluster's token, PAT, 3 provided values, the 5 target Secret values as \
         the API sends them (base64), 4 generated values and the rotated one's new one"
    );
    for s in &secrets {
        assert!(!all.contains(s.as_str()), "a secret leaked into the output");
    }
}

/// A policy in HCL 1 forms hcl-rs rejected (several blocks on one line, trailing commas) is read
/// as OpenBao reads it and evaluated here, with the server's verdict.
#[test]
fn a_policy_in_hcl1_one_line_form_is_evaluated_here() {
    let hcl1 = r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"], } path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"], } path "secret/data/ask/postgresql/*" { capabilities = ["read",] }"#;
    let bao = vault_with(hcl1);
    let out = verify(&bao, None, &["--only", "policy", "-o", "json"]).output();
    let doc = out.json();
    assert_eq!(doc["policy"]["method"], "policies");
    assert_eq!(doc["policy"]["notes"], json!([]));
}

/// The attacker's probe: ESO's policy denies everything under `secret/`, and has one rule in a
/// form hcl-rs could not read. vault-seed used to fall back to `sys/capabilities-self`, which
/// for the root token running it said everything was granted (`ok policy`, "done", exit 0).
/// Now the policy is read and the `deny` found: not ok, with the rule that denies.
#[test]
fn a_deny_everything_policy_is_denied_even_when_run_as_root() {
    let probe = "path \"secret/*\" { capabilities = [\"deny\"] }\npath \"auth/token/lookup-self\" { capabilities = [\"read\"] required_parameters = [\"x\"] }";
    let bao = vault_with(probe);
    // What OpenBao says for ESO's token.
    let eso = bao.token_with_policies(&["eso-ask-push"]);
    let (_, answer) = bao.api(
        "POST",
        "sys/capabilities",
        Some(
            &json!({ "token": eso, "paths": [format!("secret/data/{FOLDER}/ZITADEL_MASTERKEY")] }),
        ),
    );
    assert_eq!(answer["capabilities"], json!(["deny"]), "{answer}");

    verify(&bao, None, &["--only", "policy"])
        .status(1)
        .stdout_has(
            "FAIL policy: `eso-ask-push` (read ESO's policies from Vault and evaluated them)",
        )
        .stdout_has("verify auh1-dev: NOT done")
        .stdout_has("granted: nothing; denied by the `deny` on `secret/*` in `eso-ask-push`")
        .stdout_lacks("ok   policy")
        .output();
    let doc = verify(&bao, None, &["--only", "policy", "-o", "json"])
        .status(1)
        .json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["policy"]["method"], "policies");
    for p in doc["policy"]["report"]["paths"].as_array().unwrap() {
        assert_eq!(p["granted"], json!([]), "{p}");
        assert_eq!(p["decided_by"]["pattern"], "secret/*", "{p}");
        assert_eq!(p["decided_by"]["denied"], true, "{p}");
    }
}

/// A rule that grants `read` but requires a parameter ESO's read never sends: the capability
/// shows in `sys/capabilities`, and ESO's read is refused. verify says so and why.
#[test]
fn a_constraint_that_refuses_esos_requests_is_a_gap() {
    let bao = vault_with(&format!(
        "{RUNBOOK_POLICY}\npath \"secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY\" {{ capabilities = [\"read\"] required_parameters = [\"version\"] }}"
    ));
    // OpenBao indeed refuses ESO's read (no parameters) with a token holding the policy.
    let eso = bao.token_with_policies(&["eso-ask-push"]);
    let (status, _) = bao.api_as(
        &eso,
        "GET",
        &format!("secret/data/{FOLDER}/ZITADEL_MASTERKEY"),
        None,
    );
    assert_eq!(status, 403);
    verify(&bao, None, &["--only", "policy"])
        .status(1)
        .stdout_has(format!("on `secret/data/{FOLDER}/ZITADEL_MASTERKEY` (ExternalSecret read, PushSecret; granted: read; OpenBao refuses ESO's `read` request: `required_parameters` asks for `version`, which ESO's read does not send"))
        .stdout_has("help: the rule `secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY` in `eso-ask-push` refuses it")
        .output();
}

/// `verify --only policy` run with `token`.
fn verify_policy_as(bao: &OpenBao, token: &str, args: &[&str]) -> Run {
    Run::new(bao)
        .token(token)
        .real_specs()
        .args(["verify", "auh1-dev", "--only", "policy"])
        .args(args)
}

/// Find the probe tokens vault-seed created that still exist.
pub(crate) fn live_probe_tokens(bao: &OpenBao) -> usize {
    let (status, body) = bao.api("LIST", "auth/token/accessors", None);
    assert_eq!(status, 200, "{body}");
    body["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| {
            let (_, info) = bao.api(
                "POST",
                "auth/token/lookup-accessor",
                Some(&json!({ "accessor": a })),
            );
            info["data"]["display_name"]
                .as_str()
                .is_some_and(|n| n.contains("vault-seed-verify-probe"))
        })
        .count()
}

/// A token that may not read the policies but may create tokens: verify asks the server about a
/// short-lived token with exactly ESO's policies, and revokes it.
#[test]
fn unreadable_policies_are_checked_with_a_probe_token_that_is_revoked() {
    let bao = vault_with(
        r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"] }
path "secret/data/ask/postgresql/*" { capabilities = ["read"] }"#,
    );
    bao.put_policy(
        "prober",
        r#"
path "secret/*" { capabilities = ["read", "list"] }
path "auth/kubernetes/role/*" { capabilities = ["read"] }
path "auth/token/create" { capabilities = ["update", "sudo"] }
path "auth/token/revoke-accessor" { capabilities = ["update"] }
path "sys/capabilities" { capabilities = ["update"] }
"#,
    );
    let caller = bao.token_with_policies(&["prober"]);
    // Nothing that looks like a token in the output (below), even at trace level; never the
    // caller's token.
    let run = |args: &[&str]| verify_policy_as(&bao, &caller, args).never_shows(&caller);
    let out = run(&["-o", "json"]).status(1).output();
    let doc = out.json();
    assert_eq!(doc["policy"]["method"], "server-probe-token", "{doc}");
    assert_eq!(
        doc["policy"]["report"]["add"][0]["path"],
        "secret/metadata/ask/core-service/*"
    );
    assert!(
        doc["policy"]["notes"]
            .to_string()
            .contains("may not read `sys/policies/acl/eso-ask-push`"),
        "{doc}"
    );
    assert_eq!(live_probe_tokens(&bao), 0, "the probe token was revoked");
    let human = run(&[])
        .status(1)
        .stdout_has("asked Vault (`sys/capabilities`) for a short-lived token with exactly ESO's policies, revoked at once")
        .output();
    let traced = Run::new(&bao)
        .token(&caller)
        .env("RUST_LOG", "trace")
        .real_specs()
        .args(["verify", "auh1-dev", "--only", "policy", "-vvv"])
        .status(1)
        // Trace logs were on.
        .stderr_has("vault_seed")
        .never_shows(&caller)
        .output();
    for out in [&out, &human, &traced] {
        let all = format!("{}{}", out.stdout_text(), out.stderr_text());
        assert!(
            !all.split(|c: char| !c.is_ascii_alphanumeric() && c != '.')
                .any(|w| w.starts_with("s.") && w.len() > 20),
            "a token-like string in the output:\n{all}"
        );
    }
    // With the runbook's grant the same check passes.
    bao.put_policy("eso-ask-push", RUNBOOK_POLICY);
    run(&[]).output();
    assert_eq!(live_probe_tokens(&bao), 0);
}

/// Neither readable policies, nor a probe token, nor ESO's own token: the part is unknown, not
/// ok, verify is not done, and the message says how to make it decidable. The same when a
/// templated rule could decide a path (it depends on ESO's identity), even for root.
#[test]
fn an_undecidable_policy_part_is_not_ok_and_says_how_to_decide() {
    let bao = vault_with(RUNBOOK_POLICY);
    bao.put_policy(
        "reader",
        "path \"secret/*\" { capabilities = [\"read\", \"list\"] }",
    );
    let caller = bao.token_with_policies(&["reader"]);
    let run = |token: &str, args: &[&str]| verify_policy_as(&bao, token, args);
    run(&caller, &[])
        .status(1)
        .stdout_has("FAIL policy: `eso-ask-push` (cannot be decided)")
        .stdout_has("error: cannot decide whether ESO's policies grant what it needs")
        .stdout_has("help: run verify with a token that may read `sys/policies/acl/<name>`")
        .stdout_has("note: this token carries `default`, `reader`, not ESO's policies")
        .stdout_has("verify auh1-dev: NOT done")
        .output();
    let doc = run(&caller, &["-o", "json"]).status(1).json();
    assert_eq!(doc["policy"]["method"], "unknown");
    assert_eq!(doc["policy"]["ok"], false);
    assert!(doc["policy"]["help"]
        .as_str()
        .unwrap()
        .contains("--eso-token-file"));

    // A templated rule that could match ESO's paths: root cannot decide it either.
    bao.put_policy(
        "eso-ask-push",
        &format!("{RUNBOOK_POLICY}\npath \"secret/data/ask/{{{{identity.entity.name}}}}/*\" {{ capabilities = [\"deny\"] }}"),
    );
    run(&bao.token, &[])
        .status(1)
        .stdout_has("has the templated rule `secret/data/ask/{{identity.entity.name}}/*`")
        .stdout_has("help: pass --eso-token-file with ESO's own token")
        .output();
    // ESO's own token decides it.
    let eso = bao.token_with_policies(&["eso-ask-push"]);
    let file = bao.home.path().join("eso-token");
    std::fs::write(&file, &eso).unwrap();
    let out = run(
        &bao.token,
        &["--eso-token-file", file.to_str().unwrap(), "-o", "json"],
    )
    .output();
    assert_eq!(out.json()["policy"]["method"], "server-eso-token");
}

/// Text from the cluster (an event's message, a condition's reason and message, a store's
/// reason) reaches the terminal without escape sequences or other control characters, and
/// bounded in length; JSON keeps the characters (escaped) but is bounded too.
#[test]
fn hostile_cluster_text_is_clean_and_bounded() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let hostile = format!(
        "\x1b]0;pwned\x07\x1b[2Jcleared\r\x1b[1Afake line\u{9b}31m\u{202e}desrever\u{2066}\u{202a}\u{202b}\u{202c}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{061c}{}",
        "A".repeat(20 * 1024 * 1024)
    );
    let mut es: serde_json::Value =
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS).into();
    fake_kube::set_ready(
        &mut es,
        false,
        "SecretSyncedError\x1b[5m",
        "could not get secret data\x07\r\nok   kube: fake",
        &later(),
    );
    kube.put(es);
    kube.add_event(fake_kube::event(
        "ask",
        "ExternalSecret",
        "zitadel-secret",
        "Warning",
        "UpdateFailed\x1b]2;title\x1b\\",
        &hostile,
    ));
    kube.put(fake_kube::at_vault(
        fake_kube::secret_store(
            "ask",
            "vault-backend",
            false,
            "Invalid\x07\u{202d}",
            "\x1b[2J",
        ),
        &bao.addr,
    ));
    let clean = |bytes: &[u8], what: &str| {
        let s = String::from_utf8_lossy(bytes);
        for bad in [
            '\x1b', '\x07', '\r', '\u{9b}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
            '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}',
            '\u{061c}',
        ] {
            assert!(!s.contains(bad), "{what} holds {bad:?}");
        }
        assert!(bytes.len() < 64 * 1024, "{what} is {} bytes", bytes.len());
    };

    let out = verify(&bao, Some(&kube), &[])
        .status(1)
        .stdout_has("why: event UpdateFailed: cleared fake line")
        .stdout_has("more characters)")
        // Line breaks became spaces.
        .stdout_has("not Ready: SecretSyncedError: could not get secret data  ok   kube: fake")
        .output();
    clean(&out.stdout, "stdout");
    clean(&out.stderr, "stderr");

    let out = verify(&bao, Some(&kube), &["-o", "json"])
        .status(1)
        .output();
    clean(&out.stdout, "JSON stdout");
    let doc = out.json();
    let z = es_of(&doc, "zitadel-secret");
    let event = z["explanations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_str())
        .find(|e| e.starts_with("event "))
        .expect("the event is explained");
    assert!(
        event.starts_with("event UpdateFailed\x1b]2;title\x1b\\: \x1b]0;pwned\x07\x1b[2Jcleared\r"),
        "JSON keeps the text as it is: {event:?}"
    );
    assert!(
        event.chars().count() < 700,
        "{} chars",
        event.chars().count()
    );
    assert!(event.ends_with("more characters)"), "{event:?}");
    assert_eq!(
        z["message"],
        "could not get secret data\x07\r\nok   kube: fake"
    );
}

/// A token quoted by the cluster (issue 28 item 11: an ESO event message quoting ESO's token was
/// printed as it was) is redacted by its shape, in an event, a condition and a store's message,
/// text and JSON, though this run never held it.
#[test]
fn vault_tokens_quoted_by_the_cluster_are_redacted() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    // A token OpenBao minted (its dev server's are `s.` and 24 characters), and a signed service
    // token's shape (`hvs.` and base64url).
    let legacy = bao.token_with_policies(&["default"]);
    let legacy = legacy.as_str();
    let service =
        "hvs.CAESIJlU8oQp3vW_kX-9x7Tq1bq2Yw3yZcFvJ6n8sWbK0mE1Gh4KHGh2cy5ZV0V3WkM0dE1UZ3pPRFF4";
    let mut es: serde_json::Value =
        fake_kube::external_secret("ask", "zitadel-secret", ZITADEL_KEYS).into();
    fake_kube::set_ready(
        &mut es,
        false,
        "SecretSyncedError",
        &format!("could not get secret data: invalid token {legacy}"),
        &later(),
    );
    kube.put(es);
    kube.add_event(fake_kube::event(
        "ask",
        "ExternalSecret",
        "zitadel-secret",
        "Warning",
        "UpdateFailed",
        &format!("error processing spec.data[0], token={service}: permission denied"),
    ));
    kube.put(fake_kube::at_vault(
        fake_kube::secret_store(
            "ask",
            "vault-backend",
            false,
            "InvalidProviderConfig",
            &format!("cannot login with {service} or {legacy}"),
        ),
        &bao.addr,
    ));
    let secrets = [&service[4..], &legacy[legacy.find('.').unwrap() + 1..]];
    // No token reaches the output.
    let out = secrets
        .iter()
        .fold(verify(&bao, Some(&kube), &[]).status(1), |run, s| {
            run.never_shows(*s)
        })
        .output();
    let text = out.all_text();
    has(&text, "token=hvs.[redacted]: permission denied");
    let prefix = &legacy[..legacy.find('.').unwrap() + 1];
    has(&text, format!("invalid token {prefix}[redacted]"));
    // Nor the JSON.
    let out = secrets
        .iter()
        .fold(
            verify(&bao, Some(&kube), &["-o", "json"]).status(1),
            |run, s| run.never_shows(*s),
        )
        .output();
    let json = out.all_text();
    let z = es_of(&out.json(), "zitadel-secret").clone();
    assert_eq!(
        z["message"],
        format!("could not get secret data: invalid token {prefix}[redacted]")
    );
    assert!(
        json.contains("token=hvs.[redacted]: permission denied"),
        "{json}"
    );
}

fn es_of<'a>(doc: &'a Value, name: &str) -> &'a Value {
    es(doc, name)
}

#[test]
fn verify_sends_the_mount_detection_and_opens_its_connections_with_the_token_check() {
    use common::proxy::{first, holding_the_token_check};
    // The proxy holds the token check until the mount detection has been answered and nine
    // warm-ups are out (eleven connections: the token check's, the mount detection's, seven more
    // for the nine reads after them, two for ESO's two policies read with them); one after the
    // other, they never are (the hold lets go after a minute). Nothing is read before both
    // answers are in.
    let bao = vault_with(RUNBOOK_POLICY);
    let (proxy, events) = holding_the_token_check(&bao.addr, 9);
    Run::new(&bao)
        .real_specs()
        .addr(&proxy.addr)
        .args(["verify", "auh1-dev", "--skip-kube"])
        .stdout_has("verify auh1-dev: done")
        .output();
    let log = events.log();
    let token_sent = first(&log, "sent GET /v1/auth/token/lookup-self").unwrap();
    let token_answered = first(&log, "answered GET /v1/auth/token/lookup-self").unwrap();
    let mounts_answered = first(&log, "answered GET /v1/sys/internal/ui/mounts/").unwrap();
    assert!(mounts_answered < token_sent, "{log:#?}");
    let ahead = log[..token_sent]
        .iter()
        .filter(|e| *e == "sent HEAD /v1/sys/health")
        .count();
    assert_eq!(ahead, 9, "{log:#?}");
    let first_dependent = log
        .iter()
        .position(|e| e.starts_with("sent ") && !common::proxy::start_up(e))
        .unwrap();
    assert!(first_dependent > token_answered, "{log:#?}");
}

#[test]
fn verify_reads_the_policies_while_it_reads_the_values() {
    use common::proxy::{recording, seen};
    // The policy part goes while the values are read, its policies read at once: the proxy
    // holds the first read of a value until both of ESO's policies (`default`, `eso-ask-push`)
    // have been asked for, and the read of `default` until `eso-ask-push`'s is out. Read one
    // after the other, or after the values, they never are (the holds let go after a minute).
    let bao = vault_with(RUNBOOK_POLICY);
    let (proxy, events) = recording(&bao.addr, |line, events| {
        if line.starts_with("GET /v1/secret/data/") {
            events.wait_until(|log, _| {
                seen(log, "sent GET /v1/sys/policies/acl/default")
                    && seen(log, "sent GET /v1/sys/policies/acl/eso-ask-push")
            });
        } else if line == "GET /v1/sys/policies/acl/default" {
            events.wait_until(|log, _| seen(log, "sent GET /v1/sys/policies/acl/eso-ask-push"));
        }
    });
    let out = Run::new(&bao)
        .real_specs()
        .addr(&proxy.addr)
        .args(["verify", "auh1-dev", "--skip-kube", "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(doc["vault"]["ok"], true, "{doc}");
    assert_eq!(doc["policy"]["ok"], true, "{doc}");
    let log = events.log();
    let at = |e: &str| log.iter().position(|x| x.starts_with(e)).unwrap();
    assert!(
        at("sent GET /v1/sys/policies/acl/eso-ask-push")
            < at("answered GET /v1/sys/policies/acl/default"),
        "{log:#?}"
    );
    assert!(
        at("sent GET /v1/sys/policies/acl/eso-ask-push") < at("sent GET /v1/secret/data/"),
        "{log:#?}"
    );
}

/// `copies` copies of the real spec, each its own application `core-service-N` at
/// `ask/core-service-N/{env}`, without the paths another application provides (as bench/lib.sh's
/// `gen_specs`): every copy names ESO's policy `eso-ask-push` and its auth role `kubernetes/eso`,
/// as a platform's specs do.
#[test]
fn verify_lists_each_folder_once_and_reads_only_the_paths_its_listing_names() {
    use common::proxy::recording;
    // Two applications (two folders); one path of the first deleted with its metadata. verify
    // lists each folder once and reads only the paths the listing names: the deleted one is
    // missing without a read. (Each listing is now looked at as it comes and dropped.) The path
    // deleted has no fixed field: an absent fixed secret also has its earlier layouts looked for
    // (`tests/suite/gate.rs`), which lists the application's folders again.
    let bao = OpenBao::dev();
    let specs = copies_of_the_real_spec(2);
    Run::new(&bao)
        .specs(specs.path())
        .args(["apply", "auh1-dev"])
        .output();
    let gone = "ask/core-service-1/auh1-dev/APP__CORE_SERVICES_MACHINE_TOKEN";
    let (status, _) = bao.api("DELETE", &format!("secret/metadata/{gone}"), None);
    assert_eq!(status, 204);
    let (proxy, events) = recording(&bao.addr, |_, _| {});
    Run::new(&bao)
        .specs(specs.path())
        .addr(&proxy.addr)
        .args(["verify", "auh1-dev", "--only", "vault"])
        .status(1)
        .stdout_has(format!(
            "missing  secret/{gone}  password  run: vault-seed apply auh1-dev"
        ))
        .stdout_has("FAIL vault: 12 field(s): 1 missing, 4 pending, 7 valid")
        .output();
    let log = events.log();
    let sent = |prefix: &str| log.iter().filter(|e| e.starts_with(prefix)).count();
    assert_eq!(
        sent("sent LIST /v1/secret/metadata/ask/core-service-1/auh1-dev"),
        1,
        "{log:#?}"
    );
    assert_eq!(
        sent("sent LIST /v1/secret/metadata/ask/core-service-2/auh1-dev"),
        1,
        "{log:#?}"
    );
    assert_eq!(sent("sent LIST "), 2, "{log:#?}");
    assert_eq!(
        sent(&format!("sent GET /v1/secret/data/{gone}")),
        0,
        "{log:#?}"
    );
    assert_eq!(sent("sent GET /v1/secret/data/"), 11, "{log:#?}");
}

fn copies_of_the_real_spec(copies: usize) -> tempfile::TempDir {
    let text = std::fs::read_to_string(common::repo_specs().join("core-service.toml")).unwrap();
    // Split before each table header; keep the tables that are not provided by another app.
    let mut tables = vec![String::new()];
    for line in text.lines() {
        if line.starts_with('[') {
            tables.push(String::new());
        }
        let last = tables.last_mut().unwrap();
        last.push_str(line);
        last.push('\n');
    }
    let own: String = tables
        .into_iter()
        .filter(|t| !t.contains("provided_by = "))
        .collect();
    assert!(own.contains("auth_role = \"eso\""), "{own}");
    let dir = tempfile::tempdir().unwrap();
    for i in 1..=copies {
        let app = format!("core-service-{i}");
        let spec = own
            .replace("name = \"core-service\"", &format!("name = \"{app}\""))
            .replace(
                "path = \"ask/core-service/{env}\"",
                &format!("path = \"ask/{app}/{{env}}\""),
            );
        std::fs::write(dir.path().join(format!("{app}.toml")), spec).unwrap();
    }
    dir
}

#[test]
fn an_auth_role_many_specs_name_is_judged_once_so_its_problem_is_said_once() {
    // Three specs name ESO's auth role, which does not exist (nor does its policy). Judged per
    // spec, the report said so three times, and 16,667 times at 100,002 paths.
    let bao = OpenBao::dev();
    let specs = copies_of_the_real_spec(3);
    let out = Run::new(&bao)
        .specs(specs.path())
        .args(["-o", "json", "verify", "auh1-dev", "--only", "policy"])
        .status(1)
        .output();
    let doc = out.json();
    let errors: Vec<&str> = doc["policy"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(
        errors,
        [
            "ESO's auth role `auth/kubernetes/role/eso` does not exist",
            "policy `eso-ask-push` does not exist in Vault"
        ],
        "{doc:#}"
    );
    assert_eq!(
        doc["policy"]["policies"],
        serde_json::json!(["eso-ask-push"])
    );
}

#[test]
fn verify_reads_a_policy_and_an_auth_role_many_specs_name_once_with_one_connection_ahead_for_it() {
    use common::proxy::{first, holding_the_token_check};
    // Three specs name ESO's one policy and its one auth role. The policy part reads each once,
    // and verify opens one connection ahead for the policy (and one for `default`), not one per
    // spec naming it: counted per spec, 16,667 specs opened 16,668 connections ahead, and read
    // the role 16,667 times at once, a connection each (about 33 KiB apiece in vault-seed, held
    // to the end of the run: most of verify's 713 MB peak at 100,002 paths).
    let bao = OpenBao::dev();
    let specs = copies_of_the_real_spec(3);
    Run::new(&bao)
        .specs(specs.path())
        .args(["apply", "auh1-dev"])
        .output();
    bao.eso_role(
        r#"
path "secret/data/ask/*"     { capabilities = ["create", "update", "read"] }
path "secret/metadata/ask/*" { capabilities = ["read", "list"] }
"#,
    );
    // 18 paths at concurrency 16: 14 warm-ups for the reads (16, less the token check's and
    // the mount detection's connections), 2 for ESO's policies (`eso-ask-push`, `default`).
    let (proxy, events) = holding_the_token_check(&bao.addr, 16);
    let out = Run::new(&bao)
        .specs(specs.path())
        .addr(&proxy.addr)
        .args(["verify", "auh1-dev", "--skip-kube"])
        .stdout_has("verify auh1-dev: done")
        .stdout_has("ok   policy: `eso-ask-push`")
        .stdout_has("ok   vault: 18 field(s): 6 pending, 12 valid")
        .output();
    let log = events.log();
    let token_sent = first(&log, "sent GET /v1/auth/token/lookup-self").unwrap();
    let ahead = log[..token_sent]
        .iter()
        .filter(|e| *e == "sent HEAD /v1/sys/health")
        .count();
    assert_eq!(ahead, 16, "{log:#?}");
    let sent = |line: &str| log.iter().filter(|e| *e == line).count();
    assert_eq!(
        sent("sent GET /v1/sys/policies/acl/eso-ask-push"),
        1,
        "{log:#?}"
    );
    // The auth role the three specs name, read once (read per spec, 16,667 specs sent 16,667
    // reads at once: a connection each).
    assert_eq!(sent("sent GET /v1/auth/kubernetes/role/eso"), 1, "{log:#?}");
    let all = out.all_text();
    for i in 1..=3 {
        let path = format!("secret/data/ask/core-service-{i}/auh1-dev/SECURITY__API_KEY_SALT");
        let (_, body) = bao.api("GET", &path, None);
        let salt = body["data"]["data"]["password"].as_str().unwrap();
        assert!(!all.contains(salt), "a secret leaked into the output");
    }
}

/// "done" is about the parts checked: the verdict line and the JSON name each part left out and
/// why (`--skip-kube`, `--only`, `--skip-target-secrets`, a part the specs do not configure), so
/// `verify --skip-kube`'s "done" is never read as the cluster's.
#[test]
fn the_verdict_names_the_parts_it_did_not_check_and_why() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let cases: [(&[&str], String); 4] = [
        (
            &["--skip-kube"],
            "done (vault, policy checked; not checked: kube, argocd, consumers (--skip-kube))"
                .into(),
        ),
        (
            &["--only", "vault"],
            "done (vault checked; not checked: policy, kube, argocd, consumers (--only))".into(),
        ),
        (
            &[],
            "done (vault, policy, kube, argocd, consumers checked)".into(),
        ),
        (
            &["--skip-target-secrets"],
            "done (vault, policy, kube, argocd, consumers checked; not checked: target Secrets \
             (--skip-target-secrets))"
                .into(),
        ),
    ];
    for (args, verdict) in cases {
        let out = verify(&bao, Some(&kube), args).output();
        let stdout = out.stdout_text();
        let line = stdout
            .lines()
            .find(|l| l.starts_with("verify auh1-dev:"))
            .unwrap_or_else(|| panic!("{args:?}: no verdict in:\n{stdout}"));
        assert_eq!(line, format!("verify auh1-dev: {verdict}"), "{args:?}");
    }
    // A part no spec configures is named with why.
    let without = common::spec_dir(&common::repo_spec_without_argocd());
    let out = Run::new(&bao)
        .specs(without.path())
        .args(["verify", "auh1-dev", "--kubeconfig"])
        .arg(kube.kubeconfig())
        .output();
    has(
        &out.stdout_text(),
        "verify auh1-dev: done (vault, policy, kube, consumers checked; not checked: argocd (no \
         spec has an `[argocd]` section))",
    );
    // A part asked for that could not be checked (no cluster answers) is named so.
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("kubeconfig");
    std::fs::write(
        &nowhere,
        fake_kube::kubeconfig_yaml("http://127.0.0.1:9", "kube-token", "fake"),
    )
    .unwrap();
    let out = verify(&bao, None, &[])
        .arg("--kubeconfig")
        .arg(&nowhere)
        .status(1)
        .output();
    let stdout = out.stdout_text();
    assert!(
        stdout.lines().any(|l| l
            == "verify auh1-dev: NOT done (vault, policy checked; not checked: kube, argocd, \
                consumers (it could not be checked))"),
        "{stdout}"
    );
    let doc = verify(&bao, Some(&kube), &["--skip-kube", "-o", "json"])
        .output()
        .json();
    assert_eq!(doc["checked"], json!(["vault", "policy"]));
    assert_eq!(
        doc["not_checked"],
        json!([
            {"part": "kube", "why": "--skip-kube", "code": "left-out"},
            {"part": "argocd", "why": "--skip-kube", "code": "left-out"},
            {"part": "consumers", "why": "--skip-kube", "code": "left-out"}
        ])
    );
}
