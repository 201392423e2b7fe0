//! `verify` and `policy` for the Vault Secrets Operator: real OpenBao, and VSO's objects
//! (`tests/fixtures/vso/`, as VSO v1.4.1 writes them) served by the fake Kubernetes API server
//! to the real kube-rs client. Every case checks its exit code, the explanation it shows, and
//! that no value (Vault's, or the fixtures' destination Secrets') appears in any output.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};

use common::fake_kube::{self, vso_fixture, FakeKube};
use common::{has, spec_dir, OpenBao, Run, World};
use serde_json::{json, Value};

const PATH: &str = "ask/core-service/auh1-dev/ZITADEL_MASTERKEY";
const MULTI: &str = "ask/core-service/auh1-dev/zitadel-secret-kv";

/// The runbook's VSO shape: one path per VaultStaticSecret; `zitadel-secret-kv` holds the three
/// fields one Secret needs; a placeholder the person fills in later.
const SPEC: &str = r#"
name = "core-service"
[vault]
mount = "secret"
path = "ask/core-service/{env}"
[environments.auh1-dev]
cluster_vault_addr = "https://vault.cl1.sq4.aegis.internal"
[vso]
namespace = "ask"
static_secrets = ["zitadel-masterkey"]
auth_mount = "kubernetes"
auth_role = "ask-core-service"
[secrets.ZITADEL_MASTERKEY]
description = "Zitadel masterkey"
fixed = true
fields.password = { generator = "masterkey" }
[secrets.zitadel-secret-kv]
description = "Zitadel's Secret: one path, three fields"
fields.ADMIN_PASSWORD = { generator = "password" }
fields.DATABASE__PASSWORD = { generator = "password" }
fields.masterkey = { generator = "masterkey" }
[secrets.IAM_SERVICE__PAT]
description = "Zitadel PAT, created by a person after deploy"
fields.value = { generator = "placeholder" }
"#;

const VSO_SECTION: &str = r#"[vso]
namespace = "ask"
static_secrets = ["zitadel-masterkey"]
auth_mount = "kubernetes"
auth_role = "ask-core-service"
"#;

const VSO_POLICY: &str = r#"path "secret/data/ask/core-service/*" { capabilities = ["read"] }"#;

/// Values the fixtures' destination Secrets hold (decoded and as the API sends them).
const FIXTURE_VALUES: &[&str] = &[
    "ccefdc63b8e823bff7f62980f3b5f14b",
    "Y2NlZmRjNjNiOGU4MjNiZmY3ZjYyOTgwZjNiNWYxNGI=",
    "Zqumpm08hsE8JNpjJOQGa2rb",
    "19FlY0mG1ylvuhfJXqIEnomef2mSJ5CM",
    "236a23e238e3b1c77fc4c011f1bd38f1",
];

/// OpenBao with the spec applied (unless `seed` is false), VSO's role `kubernetes/ask-core-service`
/// carrying policy `vso-ask` with `policy`; a fake cluster with the VaultAuth and VaultConnection.
/// No run shows the fixtures' Secret values.
fn world(seed: bool, policy: &str) -> World {
    let w = World::new(SPEC).never_shows(FIXTURE_VALUES.iter().copied());
    if seed {
        w.apply("auh1-dev");
    }
    w.bao.vso_role("ask-core-service", policy);
    for f in ["vaultauth.yaml", "vaultconnection.yaml"] {
        put_fixture(&w.kube, f);
    }
    w
}

fn put_fixture(kube: &FakeKube, file: &str) {
    for obj in vso_fixture(file) {
        kube.put(obj);
    }
}

/// A fixture's object with its `Ready`/`Healthy` conditions rewritten at `at` (a reconcile after
/// this test seeded Vault: the fixtures' own times are from 2026-08).
fn reconciled_at(file: &str, at: &str) -> Value {
    let mut obj = vso_fixture(file).remove(0);
    for c in obj["status"]["conditions"].as_array_mut().unwrap() {
        if c["type"] == "Ready" || c["type"] == "Healthy" {
            c["lastTransitionTime"] = json!(at);
        }
    }
    obj
}

fn later() -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::minutes(1);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

impl World {
    /// `verify auh1-dev ARGS`, expected to show none of Vault's values either (as they are
    /// before it: verify writes nothing).
    fn verify_hiding(&self, args: &[&str]) -> Run {
        let mut run = self.run(&["verify", "auh1-dev"]).args(args);
        for path in [PATH, MULTI] {
            if let Some((data, _)) = self.bao.kv_get("secret", path) {
                for v in data.values().filter_map(|v| v.as_str()) {
                    run = run.never_shows(v);
                }
            }
        }
        run
    }
}

fn vss<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["kube"]["vault_static_secrets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no VaultStaticSecret {name} in {doc:#}"))
}

/// The checked VaultAuth or VaultConnection in `doc`.
fn object<'a>(doc: &'a Value, kind: &str) -> &'a Value {
    doc["kube"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {doc:#}"))
}

fn strings(v: &Value) -> String {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn synced() {
    let w = world(true, VSO_POLICY);
    w.kube
        .put(reconciled_at("vaultstaticsecret-synced.yaml", &later()));
    put_fixture(&w.kube, "destination-secret.yaml");
    put_fixture(&w.kube, "events-synced.yaml");
    let out = w.verify_hiding(&["-o", "json"]).output();
    let doc = out.json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(v["ok"], true, "{v:#}");
    assert_eq!(v["synced"], true);
    assert_eq!(
        (v["generation"].as_i64(), v["last_generation"].as_i64()),
        (Some(2), Some(2))
    );
    assert_eq!(v["path"], format!("secret/{PATH}"));
    assert_eq!(v["type"], "kv-v2");
    assert_eq!(v["destination_secret"], "zitadel-masterkey");
    assert_eq!(v["vault_auth"], "ask/vault-auth");
    assert_eq!(v["problems"], json!([]));
    // VaultAuth and VaultConnection join the objects, valid.
    let kinds: Vec<(&str, bool)> = doc["kube"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["kind"].as_str().unwrap(), o["ok"].as_bool().unwrap()))
        .collect();
    assert_eq!(kinds, [("VaultAuth", true), ("VaultConnection", true)]);
    // VSO's policy: evaluated from Vault, reported beside ESO's (which the spec does not use).
    assert_eq!(doc["policy"]["ok"], true);
    assert_eq!(doc["policy"]["vso"]["operator"], "vso");
    assert_eq!(doc["policy"]["vso"]["method"], "policies");
    assert_eq!(doc["policy"]["vso"]["policies"], json!(["vso-ask"]));
    assert_eq!(doc["policy"]["vso"]["report"]["ok"], true);
    assert_eq!(doc["kube"]["external_secrets"], json!([]));

    let summary = w.verify_hiding(&[]).output().stdout_text();
    has(
        &summary,
        ": 1 VaultStaticSecret(s) synced and fresh, 1 VaultAuth(s) ok, 1 VaultConnection(s) ok",
    );
    let human = w.verify_hiding(&["--all"]).output();
    let text = human.stdout_text();
    has(
        &text,
        "ok   VaultStaticSecret ask/zitadel-masterkey: synced",
    );
    has(
        &text,
        "ok   policy (VSO): `vso-ask` (read VSO's policies from Vault and evaluated them)",
    );
    has(
        &text,
        "ok   VaultAuth ask/vault-auth: valid, kubernetes auth/kubernetes role ask-core-service",
    );
}

/// VSO #1225: `SecretSynced` stays False after a recovery while Ready/Healthy are True: synced,
/// with a note (and the old error is not a problem).
#[test]
fn a_stale_secret_synced_condition_after_a_recovery_is_synced() {
    let w = world(true, VSO_POLICY);
    w.kube.put(reconciled_at(
        "vaultstaticsecret-recovered-syncedcondition-stale.yaml",
        &later(),
    ));
    put_fixture(&w.kube, "destination-secret.yaml");
    let doc = w.verify_hiding(&["-o", "json"]).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(
        (v["ok"].as_bool(), v["secret_synced"].as_bool()),
        (Some(true), Some(false))
    );
    has(&strings(&v["notes"]), "VSO issue #1225");
}

#[test]
fn denied_by_policy() {
    // VSO's policy grants another folder only: Vault answers its read with 403.
    let w = world(
        true,
        r#"path "secret/data/other/*" { capabilities = ["read"] }"#,
    );
    put_fixture(&w.kube, "vaultstaticsecret-denied.yaml");
    put_fixture(&w.kube, "events-denied.yaml");
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(
        (v["ok"].as_bool(), v["synced"].as_bool()),
        (Some(false), Some(false))
    );
    let problems = strings(&v["problems"]);
    has(
        &problems,
        "not synced: Ready is not True: Failed to sync the secret",
    );
    has(
        &problems,
        "destination Secret `ask/zitadel-masterkey` does not exist",
    );
    let why = strings(&v["explanations"]);
    has(
        &why,
        format!("VSO's policy does not grant `read` on `secret/data/{PATH}`"),
    );
    has(&why, "event VaultClientError (reading Vault failed): Failed to read Vault secret: Error making API request. URL: GET");
    has(&why, "Code: 403");
    // The policy part says the same, with the rule that closes the gap.
    assert_eq!(doc["policy"]["ok"], false);
    assert_eq!(doc["policy"]["vso"]["report"]["ok"], false);
    assert_eq!(
        doc["policy"]["vso"]["report"]["add"],
        json!([{"path": "secret/data/ask/core-service/*", "capabilities": ["read"]}])
    );

    let text = w.verify_hiding(&[]).status(1).output().stdout_text();
    has(
        &text,
        "FAIL VaultStaticSecret ask/zitadel-masterkey: not synced",
    );
    has(&text, "why: VSO's policy does not grant `read`");
    has(&text, "FAIL policy (VSO): `vso-ask`");
    has(
        &text,
        r#"add: path "secret/data/ask/core-service/*" { capabilities = ["read"] }"#,
    );
}

#[test]
fn path_missing() {
    let w = world(false, VSO_POLICY);
    put_fixture(&w.kube, "vaultstaticsecret-missing-path.yaml");
    put_fixture(&w.kube, "events-missing-path.yaml");
    let doc = w
        .verify_hiding(&["-o", "json", "--only", "kube"])
        .status(1)
        .output()
        .json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(v["ok"], false);
    let why = strings(&v["explanations"]);
    has(
        &why,
        format!("`secret/{PATH}` field `password` is missing in Vault"),
    );
    has(&why, "event VaultClientError (reading Vault failed): Failed to read Vault secret: empty response from Vault");
    let text = w
        .verify_hiding(&["--only", "kube"])
        .status(1)
        .output()
        .stdout_text();
    has(&text, "why: `secret/ask/core-service/auh1-dev/ZITADEL_MASTERKEY` field `password` is missing in Vault");
}

/// A VaultStaticSecret of the PAT that has not synced: the placeholder is named; once it syncs,
/// the Secret holds the marker, which is a note (the vault part reports it pending).
#[test]
fn placeholder_still_pending() {
    let w = world(true, VSO_POLICY);
    let pat = |file: &str| {
        let mut obj = vso_fixture(file).remove(0);
        obj["metadata"]["name"] = json!("iam-service-pat");
        obj["spec"]["path"] = json!("ask/core-service/auh1-dev/IAM_SERVICE__PAT");
        obj["spec"]["destination"]["name"] = json!("iam-service-pat");
        obj
    };
    let specs = spec_dir(&SPEC.replace(
        r#"static_secrets = ["zitadel-masterkey"]"#,
        r#"static_secrets = ["iam-service-pat"]"#,
    ));
    let w = World { specs, ..w };
    let mut failing = pat("vaultstaticsecret-denied.yaml");
    failing["status"]["conditions"][0]["message"] = json!(
        "Failed to sync the secret, horizon=30s, err=Failed setting up SecretTransformationOption"
    );
    w.kube.put(failing);
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let v = vss(&doc, "iam-service-pat");
    has(
        &strings(&v["explanations"]),
        "`secret/ask/core-service/auh1-dev/IAM_SERVICE__PAT` field `value` is still a placeholder",
    );

    let mut synced = pat("vaultstaticsecret-synced.yaml");
    for c in synced["status"]["conditions"].as_array_mut().unwrap() {
        c["lastTransitionTime"] = json!(later());
    }
    w.kube.put(fake_kube::vso_destination_secret(
        &synced,
        &[("value", "placeholder"), ("_raw", "{}")],
        &later(),
    ));
    w.kube.put(synced);
    let out = w.verify_hiding(&["-o", "json"]).output();
    let v = vss(&out.json(), "iam-service-pat").clone();
    assert_eq!(v["ok"], true);
    has(
        &strings(&v["notes"]),
        "field `value` is still a placeholder: the destination Secret holds the marker",
    );
    // With --strict the pending placeholder fails the run (the vault part's verdict).
    w.verify_hiding(&["--strict"]).status(1).output();
}

/// `lastGeneration` behind `generation`: VSO has not processed the current spec.
#[test]
fn stale() {
    let w = world(true, VSO_POLICY);
    w.kube
        .put(reconciled_at("vaultstaticsecret-stale.yaml", &later()));
    put_fixture(&w.kube, "destination-secret.yaml");
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(
        (v["synced"].as_bool(), v["ready"].as_bool()),
        (Some(false), Some(true))
    );
    has(
        &strings(&v["problems"]),
        "not reconciled: generation 3 but VSO last processed generation 2",
    );
    let text = w.verify_hiding(&[]).status(1).output().stdout_text();
    has(
        &text,
        "FAIL VaultStaticSecret ask/zitadel-masterkey: not reconciled",
    );
}

/// Synced, but the reconcile VSO records ran before this value was written to Vault.
#[test]
fn synced_before_the_value_was_written_is_not_fresh() {
    let w = world(true, VSO_POLICY);
    put_fixture(&w.kube, "vaultstaticsecret-synced.yaml"); // Ready at 2026-08-20, before seeding
    put_fixture(&w.kube, "destination-secret.yaml");
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(v["synced"], true);
    has(
        &strings(&v["problems"]),
        "synced, but last reconciled at 2026-08-20T10:14:37Z — before the secret's current version was written to Vault",
    );
}

/// The runbook's one-path-three-fields Secret, missing one of its keys.
#[test]
fn destination_secret_missing_a_key() {
    let w = world(true, VSO_POLICY);
    let specs = spec_dir(&SPEC.replace(
        r#"static_secrets = ["zitadel-masterkey"]"#,
        r#"static_secrets = ["zitadel-secret-kv"]"#,
    ));
    let w = World { specs, ..w };
    w.kube.put(reconciled_at(
        "vaultstaticsecret-multifield-synced.yaml",
        &later(),
    ));
    let mut secret = vso_fixture("destination-secret-multifield.yaml").remove(0);
    secret["data"].as_object_mut().unwrap().remove("masterkey");
    w.kube.put(secret);
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let v = vss(&doc, "zitadel-secret-kv");
    assert_eq!(v["synced"], true);
    assert_eq!(
        v["problems"],
        json!(["destination Secret `ask/zitadel-secret-kv` lacks key(s) `masterkey`"])
    );
    // With every key (and `_raw`) it is done.
    put_fixture(&w.kube, "destination-secret-multifield.yaml");
    w.verify_hiding(&[]).output();
}

#[test]
fn vault_auth_invalid() {
    let w = world(true, VSO_POLICY);
    w.kube.update("VaultAuth", Some("ask"), "vault-auth", |a| {
        a["status"]["valid"] = json!(false);
        a["status"]["error"] = json!("serviceaccounts \"vso-auth\" not found");
        a["status"]["conditions"][0]["status"] = json!("False");
    });
    put_fixture(&w.kube, "vaultstaticsecret-denied.yaml");
    w.kube.add_event(fake_kube::vso_event(
        &vso_fixture("vaultstaticsecret-denied.yaml")[0],
        "Warning",
        "VaultClientConfigError",
        "Failed to get Vault auth login: serviceaccounts \"vso-auth\" not found",
        &later(),
        12,
    ));
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let auth = object(&doc, "VaultAuth");
    assert_eq!(auth["ok"], false);
    has(
        &strings(&auth["problems"]),
        r#"not valid (`status.valid` is false): serviceaccounts "vso-auth" not found"#,
    );
    let why = strings(&vss(&doc, "zitadel-masterkey")["explanations"]);
    has(&why, "event VaultClientConfigError (login to Vault failed");
    has(&why, "its VaultAuth `ask/vault-auth` is not valid");
    let text = w.verify_hiding(&[]).status(1).output().stdout_text();
    has(&text, "FAIL VaultAuth ask/vault-auth: invalid");
}

/// No `vaultAuthRef`: VSO's default VaultAuth, `default` in its own namespace, is looked for
/// in every namespace; missing, it is a problem.
#[test]
fn the_default_vault_auth_is_found_by_name() {
    let w = world(true, VSO_POLICY);
    let mut obj = reconciled_at("vaultstaticsecret-synced.yaml", &later());
    obj["spec"].as_object_mut().unwrap().remove("vaultAuthRef");
    w.kube.put(obj);
    put_fixture(&w.kube, "destination-secret.yaml");
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    has(
        &serde_json::to_string(&doc["kube"]["objects"]).unwrap(),
        "no VaultAuth named `default` exists",
    );
    let mut default = vso_fixture("vaultauth.yaml").remove(0);
    default["metadata"]["name"] = json!("default");
    default["metadata"]["namespace"] = json!("vault-secrets-operator-system");
    w.kube.put(default);
    let mut conn = vso_fixture("vaultconnection.yaml").remove(0);
    conn["metadata"]["namespace"] = json!("vault-secrets-operator-system");
    w.kube.put(conn);
    let doc = w.verify_hiding(&["-o", "json"]).output().json();
    assert_eq!(
        vss(&doc, "zitadel-masterkey")["vault_auth"],
        "vault-secrets-operator-system/default"
    );
    let names: Vec<String> = doc["kube"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap(),
                o["namespace"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "VaultAuth vault-secrets-operator-system/default",
            "VaultConnection vault-secrets-operator-system/vault"
        ]
    );
}

#[test]
fn spec_names_a_vault_static_secret_that_does_not_exist() {
    let w = world(true, VSO_POLICY);
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(
        v["problems"],
        json!([
            "VaultStaticSecret `ask/zitadel-masterkey` does not exist (is the secrets app synced?)"
        ])
    );
    let text = w.verify_hiding(&[]).status(1).output().stdout_text();
    has(
        &text,
        "FAIL VaultStaticSecret ask/zitadel-masterkey: no status",
    );
}

#[test]
fn a_vault_static_secret_reading_a_path_the_spec_does_not_know() {
    let w = world(true, VSO_POLICY);
    let mut obj = reconciled_at("vaultstaticsecret-synced.yaml", &later());
    obj["spec"]["path"] = json!("ask/core-service/auh1-dev/ZITADEL_MASTER_KEY");
    w.kube.put(obj);
    put_fixture(&w.kube, "destination-secret.yaml");
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    has(
        &strings(&vss(&doc, "zitadel-masterkey")["problems"]),
        "it reads `secret/ask/core-service/auh1-dev/ZITADEL_MASTER_KEY` (mount `secret`, path `ask/core-service/auh1-dev/ZITADEL_MASTER_KEY`), which is not a path of the spec",
    );
    // And a `type` that does not fit the mount.
    let mut obj = reconciled_at("vaultstaticsecret-synced.yaml", &later());
    obj["spec"]["type"] = json!("kv-v1");
    w.kube.put(obj);
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    has(
        &strings(&vss(&doc, "zitadel-masterkey")["problems"]),
        "its `type` is `kv-v1` but mount `secret` is KV v2",
    );
}

/// `--wait` polls until the VaultStaticSecret syncs: it is made synced after the first look at
/// it (counted by requests, not by time).
#[test]
fn wait_waits_for_the_vault_static_secret() {
    let w = world(true, VSO_POLICY);
    put_fixture(&w.kube, "vaultstaticsecret-stale.yaml");
    put_fixture(&w.kube, "destination-secret.yaml");
    let kube = &w.kube;
    let looked = || {
        kube.requests()
            .iter()
            .filter(|r| r.path.ends_with("/vaultstaticsecrets/zitadel-masterkey"))
            .count()
    };
    // Set when the run is over, however it ended (a panic included): the thread then stops
    // waiting for a look that will never come, so a regression fails instead of hanging.
    let over = AtomicBool::new(false);
    struct Over<'a>(&'a AtomicBool);
    impl Drop for Over<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            while looked() < 1 {
                if over.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            kube.put(reconciled_at("vaultstaticsecret-synced.yaml", &later()));
        });
        let _over = Over(&over);
        let out = w.verify_hiding(&["--wait", "2m", "-o", "json"]).output();
        assert_eq!(vss(&out.json(), "zitadel-masterkey")["ok"], true);
    });
    assert!(looked() >= 2);
}

/// `--force-sync` annotates the VaultStaticSecret (VSO reconciles on an annotation change).
#[test]
fn force_sync_annotates_the_vault_static_secret() {
    let w = world(true, VSO_POLICY);
    w.kube
        .put(reconciled_at("vaultstaticsecret-synced.yaml", &later()));
    put_fixture(&w.kube, "destination-secret.yaml");
    let out = w.verify_hiding(&["--force-sync", "-o", "json"]).output();
    let patches = w.kube.patches();
    assert_eq!(patches.len(), 1, "{patches:?}");
    assert_eq!(
        patches[0].path,
        "/apis/secrets.hashicorp.com/v1beta1/namespaces/ask/vaultstaticsecrets/zitadel-masterkey"
    );
    assert_eq!(patches[0].content_type, "application/merge-patch+json");
    let at = patches[0].body["metadata"]["annotations"]["vault-seed/force-sync"]
        .as_str()
        .unwrap();
    assert!(at.parse::<i64>().unwrap() > 1_700_000_000);
    has(
        &strings(&out.json()["notes"]),
        "annotated VaultStaticSecret `ask/zitadel-masterkey` with vault-seed/force-sync",
    );
}

#[test]
fn policy_for_vso_prints_read_on_data_only() {
    let dir = spec_dir(SPEC);
    let out = Run::offline()
        .specs(dir.path())
        .args(["policy", "auh1-dev", "--for", "vso"])
        .output();
    let text = out.stdout_text();
    has(
        &text,
        "# vault-seed: minimal VSO policy for environment `auh1-dev` (core-service)",
    );
    has(&text, r#"path "secret/data/ask/core-service/*""#);
    assert!(!text.contains("metadata"), "{text}");
    let doc = Run::offline()
        .specs(dir.path())
        .args(["policy", "auh1-dev", "--for", "vso", "-o", "json"])
        .json();
    assert_eq!(
        doc["rules"],
        json!([{"path": "secret/data/ask/core-service/*", "capabilities": ["read"]}])
    );
    // A spec without [vso] has nothing for VSO: exit 1, and says what to add.
    let eso_only = spec_dir(&SPEC.replace(VSO_SECTION, "[eso]\naccess = [\"read\"]\n"));
    let out = Run::offline()
        .specs(eso_only.path())
        .args(["policy", "auh1-dev", "--for", "vso"])
        .status(1)
        .output();
    has(
        &out.stderr_text(),
        "no spec of environment `auh1-dev` has a `[vso]` section",
    );
}

/// `[vso]` is linted like the rest, each problem at its file:line:col.
#[test]
fn vso_section_is_linted() {
    let dir = spec_dir(
        &SPEC
            .replace(
                r#"namespace = "ask""#,
                "namespace = \"Ask\"\nstatic_secret = [\"x\"]",
            )
            .replace(r#"auth_role = "ask-core-service""#, r#"auth_role = "a/b""#),
    );
    let out = Run::offline()
        .specs(dir.path())
        .arg("lint")
        .status(2)
        .output();
    let err = out.stderr_text();
    has(&err, "`namespace` `Ask` is not");
    has(&err, "app.toml:9:14");
    has(&err, "app.toml:10:1");
    has(&err, "app.toml:13:14");
    has(&err, "static_secret");
    has(&err, "`auth_role` `a/b`");
}

/// A hostile cluster: escape sequences and a megabyte in VSO's condition, event, path and
/// VaultAuth error reach neither the terminal raw nor the output unbounded.
#[test]
fn hostile_vso_objects_are_clean_and_bounded() {
    let w = world(true, VSO_POLICY);
    let mut obj = vso_fixture("vaultstaticsecret-denied.yaml").remove(0);
    obj["spec"]["path"] = json!("ask/\x1b]0;pwned\x07x\u{202e}");
    obj["status"]["conditions"][0]["message"] =
        json!(format!("\x1b[2Jcleared\r\x1b[1A{}", "B".repeat(1 << 20)));
    w.kube.add_event(fake_kube::vso_event(
        &obj,
        "Warning",
        "VaultClientError\x1b[5m",
        &format!("\u{9b}31mred{}", "A".repeat(1 << 20)),
        "2026-08-18T10:22:51Z",
        1,
    ));
    w.kube.put(obj);
    w.kube.update("VaultAuth", Some("ask"), "vault-auth", |a| {
        a["status"]["valid"] = json!(false);
        a["status"]["error"] = json!("\x1b]2;title\x1b\\bad");
    });
    let clean = |bytes: &[u8], what: &str| {
        let s = String::from_utf8_lossy(bytes);
        for bad in ['\x1b', '\x07', '\r', '\u{9b}', '\u{202e}'] {
            assert!(!s.contains(bad), "{what} holds {bad:?}");
        }
        assert!(bytes.len() < 64 * 1024, "{what} is {} bytes", bytes.len());
    };
    let out = w.verify_hiding(&[]).status(1).output();
    clean(&out.stdout, "stdout");
    clean(&out.stderr, "stderr");
    has(&out.stdout_text(), "more characters)");
    let out = w.verify_hiding(&["-o", "json"]).status(1).output();
    assert!(
        out.stdout.len() < 64 * 1024,
        "JSON is {} bytes",
        out.stdout.len()
    );
    let v = vss(&out.json(), "zitadel-masterkey").clone();
    has(&strings(&v["problems"]), "which is not a path of the spec");
}

/// Trace-level logs of a whole VSO verify (kube-rs' and vault-seed's) hold no value.
#[test]
fn no_value_at_trace_level() {
    let w = world(true, VSO_POLICY);
    w.kube
        .put(reconciled_at("vaultstaticsecret-synced.yaml", &later()));
    put_fixture(&w.kube, "destination-secret.yaml");
    let out = w.verify_hiding(&[]).env("RUST_LOG", "trace").output();
    // The run did read the VaultStaticSecret and its Secret, and logged at trace level.
    has(&out.stderr_text(), "vault_seed::kube");
    let asked: Vec<String> = w.kube.requests().iter().map(|r| r.path.clone()).collect();
    assert!(
        asked.iter().any(|p| p == "/api/v1/namespaces/ask/secrets"),
        "{asked:?}"
    );
}

/// A spec with `[eso]` and `[vso]` (a platform moving from one operator to the other): each
/// operator's policy is judged and reported on its own; one failing fails the part.
#[test]
fn both_operators_are_reported_separately() {
    let w = world(true, VSO_POLICY);
    let both = SPEC.replace(
        VSO_SECTION,
        &format!("{VSO_SECTION}[eso]\nnamespace = \"ask\"\npolicies = [\"eso-ask\"]\naccess = [\"read\"]\n"),
    );
    let w = World {
        specs: spec_dir(&both),
        ..w
    };
    // ESO may read one folder only: its gap is ESO's, VSO's policy is fine.
    w.bao.put_policy(
        "eso-ask",
        r#"path "secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY" { capabilities = ["read"] }"#,
    );
    let out = w
        .verify_hiding(&["--only", "policy", "-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
    let p = &doc["policy"];
    assert_eq!(
        (p["ok"].as_bool(), p["operator"].as_str()),
        (Some(false), Some("eso"))
    );
    assert_eq!(p["report"]["ok"], false);
    assert_eq!(p["policies"], json!(["eso-ask"]));
    assert_eq!(
        (p["vso"]["ok"].as_bool(), p["vso"]["policies"].clone()),
        (Some(true), json!(["vso-ask"]))
    );
    let text = w
        .verify_hiding(&["--only", "policy"])
        .status(1)
        .output()
        .stdout_text();
    has(
        &text,
        "FAIL policy (ESO): `eso-ask` (read ESO's policies from Vault and evaluated them)",
    );
    has(
        &text,
        "ok   policy (VSO): `vso-ask` (read VSO's policies from Vault and evaluated them)",
    );
    // `policy` prints each operator's grant on request (both read the same folder here).
    for who in ["eso", "vso"] {
        let out = Run::offline()
            .specs(w.specs.path())
            .args(["policy", "auh1-dev", "--for", who])
            .output();
        has(
            &out.stdout_text(),
            format!("minimal {} policy", who.to_uppercase()),
        );
        has(
            &out.stdout_text(),
            r#"path "secret/data/ask/core-service/*""#,
        );
    }
}

/// VSO's policy that the running token may not read is judged by the server for a short-lived
/// token with exactly VSO's policies (revoked at once), as ESO's is; never by the caller's own.
#[test]
fn an_unreadable_vso_policy_is_asked_of_the_server_for_a_probe_token() {
    let w = world(
        true,
        r#"path "secret/data/other/*" { capabilities = ["read"] }"#,
    );
    w.bao.put_policy(
        "prober",
        r#"
path "secret/*" { capabilities = ["read", "list"] }
path "sys/internal/ui/mounts/*" { capabilities = ["read"] }
path "auth/kubernetes/role/*" { capabilities = ["read"] }
path "auth/token/create" { capabilities = ["update", "sudo"] }
path "auth/token/revoke-accessor" { capabilities = ["update"] }
path "sys/capabilities" { capabilities = ["update"] }
"#,
    );
    let caller = w.bao.token_with_policies(&["prober"]);
    // Neither a value nor the caller's token shows.
    let run = |args: &[&str]| {
        w.verify_hiding(&["--only", "policy"])
            .token(&caller)
            .args(args)
            .never_shows(caller.as_str())
    };
    let doc = run(&["-o", "json"]).status(1).output().json();
    let vso = &doc["policy"]["vso"];
    assert_eq!(vso["method"], "server-probe-token", "{doc:#}");
    assert_eq!(
        vso["report"]["add"],
        json!([{"path": "secret/data/ask/core-service/*", "capabilities": ["read"]}])
    );
    has(
        &vso["notes"].to_string(),
        "may not read `sys/policies/acl/vso-ask`",
    );
    assert_eq!(
        crate::verify::live_probe_tokens(&w.bao),
        0,
        "the probe token was revoked"
    );
    has(
        &run(&[]).status(1).output().stdout_text(),
        "asked Vault (`sys/capabilities`) for a short-lived token with exactly VSO's policies, revoked at once",
    );
    w.bao.put_policy("vso-ask", VSO_POLICY);
    run(&[]).output();
}

/// `spec.version` pins a KV v2 version: once Vault holds a newer one, the Secret is not fresh.
#[test]
fn a_pinned_version_older_than_vaults_is_not_fresh() {
    let w = world(true, VSO_POLICY);
    let mut obj = reconciled_at("vaultstaticsecret-synced.yaml", &later());
    obj["spec"]["version"] = json!(1);
    w.kube.put(obj.clone());
    put_fixture(&w.kube, "destination-secret.yaml");
    w.verify_hiding(&[]).output();
    // A person writes version 2 (a valid 32-byte masterkey).
    w.bao.kv_put(
        "secret",
        PATH,
        json!({"password": "0123456789abcdef0123456789abcdef"}),
    );
    for c in obj["status"]["conditions"].as_array_mut().unwrap() {
        c["lastTransitionTime"] = json!(later());
    }
    w.kube.put(obj);
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    has(
        &strings(&vss(&doc, "zitadel-masterkey")["problems"]),
        "it reads version 1 (`spec.version`), but the secret's current version in Vault is 2",
    );
}

/// Issue 45: a Secret the spec says must be of a type (`secret_type`, here an image pull
/// secret's) is not done while VSO writes it `Opaque`, its `destination.type` left empty (VSO
/// v1.4.1 `helpers/secrets.go` `SyncSecret`: `Opaque` unless `destination.type`); set, and the
/// Secret re-made with the type (as SyncSecret does on a type change), it is done.
#[test]
fn a_secret_of_another_type_than_the_specs_is_not_done() {
    let w = world(true, VSO_POLICY);
    std::fs::write(
        w.specs.path().join("app.toml"),
        SPEC.replace(
            "fixed = true\nfields.password",
            "fixed = true\nsecret_type = \"kubernetes.io/dockerconfigjson\"\nfields.password",
        ),
    )
    .unwrap();
    let mut obj = reconciled_at("vaultstaticsecret-synced.yaml", &later());
    w.kube.put(obj.clone());
    // The fixture's destination Secret is `Opaque`, as VSO writes it without a type.
    put_fixture(&w.kube, "destination-secret.yaml");
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let problems = strings(&vss(&doc, "zitadel-masterkey")["problems"]);
    has(
        &problems,
        "its `spec.destination.type` is `Opaque`, but the spec's `secret_type` is `kubernetes.io/dockerconfigjson`",
    );
    has(
        &problems,
        "Secret `ask/zitadel-masterkey` is of type `Opaque`, not `kubernetes.io/dockerconfigjson`",
    );
    obj["spec"]["destination"]["type"] = json!("kubernetes.io/dockerconfigjson");
    w.kube.put(obj);
    let mut secret = vso_fixture("destination-secret.yaml").remove(0);
    secret["type"] = json!("kubernetes.io/dockerconfigjson");
    w.kube.put(secret);
    w.verify_hiding(&[]).output();
}

/// A cluster without VSO's CRDs: the kube part cannot be checked and says to install VSO.
#[test]
fn a_cluster_without_vso_says_so() {
    let w = world(true, VSO_POLICY);
    w.kube.without_vso();
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    assert_eq!(doc["kube"]["ok"], false);
    has(doc["kube"]["error"].as_str().unwrap(), "VaultStaticSecret");
    has(
        doc["kube"]["error"].as_str().unwrap(),
        "secrets.hashicorp.com",
    );
    assert_eq!(
        doc["kube"]["help"],
        "install the Vault Secrets Operator (its CRDs) or check the context"
    );
}

/// `--skip-target-secrets`: the destination Secret is not read (a Role without `get secrets`).
#[test]
fn skip_target_secrets_leaves_the_destination_unread() {
    let w = world(true, VSO_POLICY);
    w.kube
        .put(reconciled_at("vaultstaticsecret-synced.yaml", &later()));
    w.kube.deny("secrets");
    let doc = w
        .verify_hiding(&["--skip-target-secrets", "-o", "json"])
        .output()
        .json();
    assert_eq!(vss(&doc, "zitadel-masterkey")["ok"], true);
    assert!(
        !w.kube
            .requests()
            .iter()
            .any(|r| r.path.contains("/secrets/")),
        "a Secret was read"
    );
}

/// Namespace-only RBAC (RoleBindings, the common real case): VSO's default VaultAuth cannot be
/// searched for across namespaces, which is said and is not done; a VaultAuth named by its
/// namespace is read as before.
#[test]
fn a_forbidden_cluster_wide_vault_auth_list_is_not_done() {
    let w = world(true, VSO_POLICY);
    w.kube.deny_cluster_wide("vaultauths");
    w.kube.deny_cluster_wide("vaultconnections");
    put_fixture(&w.kube, "destination-secret.yaml");
    w.kube
        .put(reconciled_at("vaultstaticsecret-synced.yaml", &later()));
    w.verify_hiding(&[]).output();

    let mut obj = reconciled_at("vaultstaticsecret-synced.yaml", &later());
    obj["spec"].as_object_mut().unwrap().remove("vaultAuthRef");
    w.kube.put(obj);
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    assert_eq!(
        (&doc["ok"], &doc["kube"]["ok"]),
        (&json!(false), &json!(false))
    );
    let auth = object(&doc, "VaultAuth");
    assert_eq!(auth["ok"], false);
    assert_eq!(
        auth["problems"],
        json!(["VSO's default VaultAuth (`default` in the operator's namespace) cannot be looked for: forbidden to list `vaultauths.secrets.hashicorp.com` `metadata.name=default` (403): vaultauths.secrets.hashicorp.com is forbidden: User \"system:serviceaccount:ci:verifier\" cannot list resource \"vaultauths\" in API group \"secrets.hashicorp.com\" at the cluster scope"])
    );
    has(
        &w.verify_hiding(&[]).status(1).output().stdout_text(),
        "verify auh1-dev: NOT done",
    );
}

/// The second Vault wrote the current version of `PATH` in, moved by `seconds`, as Kubernetes
/// writes a time (whole seconds: apimachinery v0.36.2 `pkg/apis/meta/v1/time.go`
/// `Time.MarshalJSON`, Go's RFC 3339 layout, which truncates).
fn write_second(bao: &OpenBao, seconds: i64) -> String {
    let created = bao
        .kv_created("secret", PATH)
        .replace_nanosecond(0)
        .unwrap();
    (created + time::Duration::seconds(seconds))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// `Ready`'s `lastTransitionTime` is whole seconds, Vault's `created_time` has nanoseconds: a
/// reconcile in the write's own second may be either side of it, so it is not "before" (done,
/// with a note that the times cannot tell); one a whole second before it is (not done). VSO
/// rewrites `Ready` at every status write (`controllers/common.go` `newConditionNow`,
/// `updateConditions`), so the time is the latest reconcile's.
#[test]
fn a_reconcile_in_the_second_of_the_write_is_not_before_it() {
    let w = world(true, VSO_POLICY);
    put_fixture(&w.kube, "destination-secret.yaml");
    w.kube.put(reconciled_at(
        "vaultstaticsecret-synced.yaml",
        &write_second(&w.bao, 0),
    ));
    let doc = w.verify_hiding(&["-o", "json"]).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(
        (v["ok"].as_bool(), v["problems"].clone()),
        (Some(true), json!([]))
    );
    has(
        &strings(&v["notes"]),
        format!(
            "cannot tell from the times alone: last reconciled at {}, in the second the secret's current version was written to Vault",
            write_second(&w.bao, 0)
        ),
    );

    w.kube.put(reconciled_at(
        "vaultstaticsecret-synced.yaml",
        &write_second(&w.bao, -1),
    ));
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    has(
        &strings(&vss(&doc, "zitadel-masterkey")["problems"]),
        format!(
            "synced, but last reconciled at {} — before the secret's current version was written to Vault",
            write_second(&w.bao, -1)
        ),
    );
}

/// VSO writes the Secret, then its status; a status write that fails only records a
/// `StatusUpdateError` event (`controllers/vaultstaticsecret_controller.go` `updateStatus`),
/// so `Ready` keeps the time of an earlier reconcile. Such an event before the write changes
/// nothing (not done, and it is shown as why); one after the write means the Secret may well
/// hold the current value: "cannot tell", a note, done.
#[test]
fn a_failed_status_write_after_the_write_cannot_tell() {
    let w = world(true, VSO_POLICY);
    put_fixture(&w.kube, "destination-secret.yaml");
    let obj = reconciled_at("vaultstaticsecret-synced.yaml", &write_second(&w.bao, -60));
    let conflict = "Failed to update the resource's status, err=Operation cannot be fulfilled on vaultstaticsecrets.secrets.hashicorp.com \"zitadel-masterkey\": the object has been modified; please apply your changes to the latest version and try again";
    let failed =
        |at: &str| fake_kube::vso_event(&obj, "Warning", "StatusUpdateError", conflict, at, 1);
    w.kube.add_event(failed(&write_second(&w.bao, -30)));
    w.kube.put(obj.clone());
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    has(
        &strings(&v["problems"]),
        "before the secret's current version was written to Vault",
    );
    has(
        &strings(&v["explanations"]),
        "event StatusUpdateError (writing its status failed): Failed to update the resource's status",
    );

    let after = write_second(&w.bao, 1);
    w.kube.add_event(fake_kube::vso_event(
        &obj,
        "Normal",
        "SecretSynced",
        "Secret synced",
        &after,
        1,
    ));
    w.kube.add_event(failed(&after));
    let doc = w.verify_hiding(&["-o", "json"]).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(
        (v["ok"].as_bool(), v["problems"].clone()),
        (Some(true), json!([]))
    );
    has(
        &strings(&v["notes"]),
        format!("but VSO failed to write its status at {after} (event StatusUpdateError)"),
    );
}

/// The VaultStaticSecret synced with `transformation` (a spec change: generation 3, processed).
fn transformed(transformation: Value) -> Value {
    let mut obj = reconciled_at("vaultstaticsecret-synced.yaml", &later());
    obj["spec"]["destination"]["transformation"] = transformation;
    obj["metadata"]["generation"] = json!(3);
    obj["status"]["lastGeneration"] = json!(3);
    for c in obj["status"]["conditions"].as_array_mut().unwrap() {
        c["observedGeneration"] = json!(3);
    }
    obj
}

/// The fixtures' README's rename of `password` to `masterkey`: a template that is only
/// `{{- get .Secrets "password" -}}`, every field excluded, no `_raw`. VSO writes `masterkey`
/// alone (`helpers/secrets.go` `makeK8sData`, `helpers/template.go` `FilterData`), so that
/// Secret is done, its keys checked; the twin, a Secret without the template's key (as VSO
/// wrote it before the transformation), is not done. A SecretTransformation (not read) leaves
/// the keys partly known: only the inline template's are checked, and the rest is a note.
#[test]
fn a_transformation_that_renames_keys() {
    let w = world(true, VSO_POLICY);
    let rename = json!({
        "templates": {"masterkey": {"text": "{{- get .Secrets \"password\" -}}"}},
        "excludes": [".*"],
        "excludeRaw": true,
    });
    let obj = transformed(rename.clone());
    w.kube.put(obj.clone());
    put_fixture(&w.kube, "destination-secret.yaml");
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    assert_eq!(
        vss(&doc, "zitadel-masterkey")["problems"],
        json!(["destination Secret `ask/zitadel-masterkey` lacks key(s) `masterkey`"])
    );

    let (data, _) = w.bao.kv_get("secret", PATH).unwrap();
    let value = data["password"].as_str().unwrap().to_string();
    w.kube.put(fake_kube::vso_destination_secret(
        &obj,
        &[("masterkey", &value)],
        &later(),
    ));
    let doc = w.verify_hiding(&["-o", "json"]).output().json();
    let v = vss(&doc, "zitadel-masterkey");
    assert_eq!(
        (v["ok"].as_bool(), v["problems"].clone(), v["notes"].clone()),
        (Some(true), json!([]), json!([])),
        "{v:#}"
    );

    // Without `excludeRaw`, a Secret with no `_raw` is a note: VSO's global option may drop it.
    let mut raw = rename.clone();
    raw["excludeRaw"] = json!(false);
    w.kube.put(transformed(raw));
    let doc = w.verify_hiding(&["-o", "json"]).output().json();
    has(
        &strings(&vss(&doc, "zitadel-masterkey")["notes"]),
        "destination Secret `ask/zitadel-masterkey` has no `_raw`: VSO writes it unless `excludeRaw` or the operator runs with `--global-transformation-options=exclude-raw`",
    );

    let mut shared = rename;
    shared["transformationRefs"] = json!([{"name": "zitadel", "namespace": "platform"}]);
    w.kube.put(transformed(shared));
    let doc = w.verify_hiding(&["-o", "json"]).output().json();
    has(
        &strings(&vss(&doc, "zitadel-masterkey")["notes"]),
        "which keys its transformation writes is only partly known (it takes templates and filters from SecretTransformation `platform/zitadel`, which vault-seed does not read)",
    );
}

/// `includes` keep only the fields they match (after `excludes`): the runbook's three-field
/// Secret without `masterkey` is done, saying that field's value does not reach it; without a
/// key the filters keep, not done.
#[test]
fn includes_drop_a_field_and_the_secret_must_hold_the_rest() {
    let w = world(true, VSO_POLICY);
    let specs = spec_dir(&SPEC.replace(
        r#"static_secrets = ["zitadel-masterkey"]"#,
        r#"static_secrets = ["zitadel-secret-kv"]"#,
    ));
    let w = World { specs, ..w };
    let mut obj = reconciled_at("vaultstaticsecret-multifield-synced.yaml", &later());
    obj["spec"]["destination"]["transformation"] = json!({"includes": ["PASSWORD$"]});
    w.kube.put(obj.clone());
    let (data, _) = w.bao.kv_get("secret", MULTI).unwrap();
    let get = |k: &str| data[k].as_str().unwrap().to_string();
    let (admin, db) = (get("ADMIN_PASSWORD"), get("DATABASE__PASSWORD"));
    w.kube.put(fake_kube::vso_destination_secret(
        &obj,
        &[("ADMIN_PASSWORD", &admin), ("_raw", "{}")],
        &later(),
    ));
    let doc = w.verify_hiding(&["-o", "json"]).status(1).output().json();
    assert_eq!(
        vss(&doc, "zitadel-secret-kv")["problems"],
        json!(["destination Secret `ask/zitadel-secret-kv` lacks key(s) `DATABASE__PASSWORD`"])
    );
    w.kube.put(fake_kube::vso_destination_secret(
        &obj,
        &[
            ("ADMIN_PASSWORD", &admin),
            ("DATABASE__PASSWORD", &db),
            ("_raw", "{}"),
        ],
        &later(),
    ));
    let doc = w.verify_hiding(&["-o", "json"]).output().json();
    has(
        &strings(&vss(&doc, "zitadel-secret-kv")["notes"]),
        "its transformation drops field(s) `masterkey` and no template names them",
    );
}
