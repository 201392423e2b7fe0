//! `verify`'s store check: the SecretStore the spec's ExternalSecrets read through is compared
//! with what vault-seed seeded and judged (its Vault, mount, KV version, namespace and login),
//! through the fake cluster and a real OpenBao. Before it, each store below passed: only its
//! Ready condition was read.

use crate::common;
use crate::verify::{healthy_cluster, vault_with, RUNBOOK_POLICY};

use common::fake_kube::FakeKube;
use common::{has, OpenBao, Out, Run};
use serde_json::{json, Value};

/// The real spec, changed by `edit`, alone in a scratch directory.
fn real_spec_with(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let text = std::fs::read_to_string(common::repo_specs().join("core-service.toml")).unwrap();
    let changed = edit(text.clone());
    assert_ne!(changed, text, "the edit changed nothing");
    common::spec_dir(&changed)
}

/// The real spec, its environment also declaring `cluster_vault_addr = addr`.
fn with_cluster_addr(addr: &str) -> tempfile::TempDir {
    real_spec_with(|s| {
        s.replace(
            "kube_namespace = \"ask\"\n",
            &format!("kube_namespace = \"ask\"\ncluster_vault_addr = \"{addr}\"\n"),
        )
    })
}

/// The real spec naming no auth role (only its `policies`).
fn without_role() -> tempfile::TempDir {
    real_spec_with(|s| s.replace("auth_mount = \"kubernetes\"\nauth_role = \"eso\"\n", ""))
}

/// `verify auh1-dev` of `specs` (the repository's when `None`) against `bao` and `kube`.
fn verify(bao: &OpenBao, specs: Option<&tempfile::TempDir>, kube: &FakeKube, args: &[&str]) -> Run {
    let run = match specs {
        Some(d) => Run::new(bao).specs(d.path()),
        None => Run::new(bao).real_specs(),
    };
    run.args(["verify", "auh1-dev", "--kubeconfig"])
        .arg(kube.kubeconfig())
        .args(args)
}

/// Change the store's `spec.provider.vault`.
fn store_vault(kube: &FakeKube, f: impl FnOnce(&mut Value)) {
    kube.update("SecretStore", Some("ask"), "vault-backend", |o| {
        f(&mut o["spec"]["provider"]["vault"])
    });
}

/// The store's line in `out` (a run that exited 1) says `wanted`.
#[track_caller]
fn fails_saying(out: &Out, wanted: &str) {
    let text = out.all_text();
    has(&text, "SecretStore ask/vault-backend");
    has(&text, wanted);
}

/// The store's JSON check.
fn store_json(out: &Out) -> Value {
    let doc = out.json();
    doc["kube"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "SecretStore")
        .cloned()
        .unwrap()
}

#[test]
fn the_store_vault_seed_seeded_passes() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let out = verify(&bao, None, &kube, &["-o", "json"]).output();
    let store = store_json(&out);
    assert_eq!(
        (store["ok"].clone(), store["problems"].clone()),
        (json!(true), json!([]))
    );
}

#[test]
fn a_store_reading_another_vault_fails_unless_the_spec_declares_its_address() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(&kube, |v| {
        v["server"] = json!("http://vault.other.svc:8200")
    });
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "it reads Vault at `http://vault.other.svc:8200`, not the Vault vault-seed seeded",
    );
    has(&out.all_text(), &bao.addr);
    has(
        &out.all_text(),
        "add `cluster_vault_addr = \"http://vault.other.svc:8200\"`",
    );
    // Declared (with another spelling of the same URL: upper-case host, trailing slash), it is
    // the same Vault.
    let specs = with_cluster_addr("http://VAULT.other.svc:8200/");
    verify(&bao, Some(&specs), &kube, &[]).output();
    // Another port is another Vault, declared or not.
    store_vault(&kube, |v| {
        v["server"] = json!("http://vault.other.svc:8201")
    });
    let out = verify(&bao, Some(&specs), &kube, &[]).status(1).output();
    fails_saying(&out, "it reads Vault at `http://vault.other.svc:8201`");
}

#[test]
fn a_store_on_another_mount_fails_naming_both_mounts() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(&kube, |v| v["path"] = json!("kv"));
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "it reads mount `kv` (`path`), but remoteRef `ask/core-service/auh1-dev/SECURITY__API_KEY_SALT` is on mount `secret` in the spec",
    );
}

#[test]
fn a_store_without_path_reads_the_keys_first_segment_as_the_mount() {
    // ESO's `buildPath`: no `path`, so `ask/core-service/...` is read at `ask/data/core-service/...`.
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(&kube, |v| {
        v.as_object_mut().unwrap().remove("path");
    });
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "it has no `path`, so ESO reads remoteRef `ask/core-service/auh1-dev/SECURITY__API_KEY_SALT` on mount `ask`; the spec's path is on mount `secret`",
    );
}

#[test]
fn a_kv_v1_store_for_a_kv_v2_spec_fails() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(&kube, |v| v["version"] = json!("v1"));
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "it reads KV `v1` (`version`), but mount `secret` is KV v2",
    );
}

#[test]
fn a_store_in_another_vault_namespace_fails() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(&kube, |v| v["namespace"] = json!("team-a"));
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "it reads Vault namespace `team-a`, but vault-seed used none (the root namespace)",
    );
}

#[test]
fn a_store_logging_in_as_another_role_fails_naming_both_roles() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(
        &kube,
        |v| v["auth"] = json!({"kubernetes": {"mountPath": "kubernetes", "role": "eso-other"}}),
    );
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "ESO logs in as role `eso-other` on `kubernetes`; the spec says role `eso` on `kubernetes`",
    );
    // Another mount, the same role name: another role.
    store_vault(&kube, |v| {
        v["auth"] = json!({"kubernetes": {"mountPath": "k8s-b", "role": "eso"}})
    });
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "ESO logs in as role `eso` on `k8s-b`; the spec says role `eso` on `kubernetes`",
    );
}

#[test]
fn without_a_spec_role_the_stores_role_must_carry_the_policies_judged() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let specs = without_role();
    // Role `eso` carries exactly the spec's `eso-ask-push` (and `default`): what was judged.
    verify(&bao, Some(&specs), &kube, &[]).output();
    // A role carrying more than the spec lists: its grants were never judged.
    bao.put_policy(
        "eso-wide",
        "path \"secret/*\" { capabilities = [\"read\"] }",
    );
    let (s, b) = bao.api(
        "POST",
        "auth/kubernetes/role/eso-wide",
        Some(&json!({"bound_service_account_names": ["external-secrets"], "bound_service_account_namespaces": ["external-secrets"], "token_policies": ["eso-ask-push", "eso-wide"]})),
    );
    assert!(s == 204 || s == 200, "{b}");
    store_vault(&kube, |v| {
        v["auth"]["kubernetes"]["role"] = json!("eso-wide")
    });
    let out = verify(&bao, Some(&specs), &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "ESO logs in as role `eso-wide` on `kubernetes`, which gives `default`, `eso-ask-push`, `eso-wide`; the policy part judged `default`, `eso-ask-push`",
    );
    // A role that does not exist.
    store_vault(&kube, |v| {
        v["auth"]["kubernetes"]["role"] = json!("eso-gone")
    });
    let out = verify(&bao, Some(&specs), &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "ESO logs in with `auth/kubernetes/role/eso-gone`, which does not exist in Vault",
    );
}

#[test]
fn a_spec_policy_the_role_does_not_give_is_a_policy_problem() {
    // Before, the spec's `policies` were added to the role's: `eso-extra` was judged as ESO's
    // though its token never carries it.
    let bao = vault_with(RUNBOOK_POLICY);
    bao.put_policy(
        "eso-extra",
        "path \"secret/data/other/*\" { capabilities = [\"read\"] }",
    );
    let specs = real_spec_with(|s| {
        s.replace(
            "policies = [\"eso-ask-push\"]",
            "policies = [\"eso-ask-push\", \"eso-extra\"]",
        )
    });
    let out = Run::new(&bao)
        .specs(specs.path())
        .args(["-o", "json", "verify", "auh1-dev", "--only", "policy"])
        .status(1)
        .output();
    let doc = out.json();
    assert_eq!(
        doc["policy"]["errors"],
        json!(["the spec says ESO's token carries `eso-extra`; role `eso` on `kubernetes` gives `default`, `eso-ask-push`"]),
        "{doc:#}"
    );
    assert_eq!(doc["policy"]["policies"], json!(["eso-ask-push"]));
}

/// OpenBao with AppRole at `approle` and role `eso` carrying `eso-ask-push`; its role ID.
fn approle_eso(bao: &OpenBao) -> String {
    let (s, b) = bao.api(
        "POST",
        "sys/auth/approle",
        Some(&json!({"type": "approle"})),
    );
    assert!(s == 204 || s == 200, "{b}");
    let (s, b) = bao.api(
        "POST",
        "auth/approle/role/eso",
        Some(&json!({"token_policies": ["eso-ask-push"]})),
    );
    assert!(s == 204 || s == 200, "{b}");
    let (s, b) = bao.api("GET", "auth/approle/role/eso/role-id", None);
    assert_eq!(s, 200, "{b}");
    b["data"]["role_id"].as_str().unwrap().to_string()
}

#[test]
fn an_approle_store_must_use_the_spec_roles_role_id() {
    let bao = vault_with(RUNBOOK_POLICY);
    let role_id = approle_eso(&bao);
    let kube = healthy_cluster(&bao);
    let specs =
        real_spec_with(|s| s.replace("auth_mount = \"kubernetes\"", "auth_mount = \"approle\""));
    let approle = |id: &str| {
        json!({"appRole": {"path": "approle", "roleId": id,
                           "secretRef": {"name": "eso-approle", "key": "secret-id"}}})
    };
    store_vault(&kube, |v| {
        v["auth"] = approle("00000000-0000-4000-8000-000000000000")
    });
    let out = verify(&bao, Some(&specs), &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "its AppRole `roleId` is not the role ID of role `eso` on `approle`",
    );
    store_vault(&kube, |v| v["auth"] = approle(&role_id));
    verify(&bao, Some(&specs), &kube, &[]).output();
    // The spec naming no role there: which role the ID is cannot be told.
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "ESO logs in as AppRole on `approle`; the spec says role `eso` on `kubernetes`",
    );
    let out = verify(&bao, Some(&without_role()), &kube, &[])
        .status(1)
        .output();
    fails_saying(&out, "not checked: ESO logs in with AppRole on `approle` and the spec names no `[eso] auth_role` there: cannot tell which role `roleId` is");
}

#[test]
fn a_token_store_is_judged_by_the_eso_token_file_or_not_checked() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(&kube, |v| {
        v["auth"] = json!({"tokenSecretRef": {"name": "vault-token", "key": "token"}})
    });
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "not checked: ESO logs in with a static token (`tokenSecretRef`)",
    );
    let token = bao.token_with_policies(&["eso-ask-push"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("eso-token");
    std::fs::write(&file, &token).unwrap();
    let out = verify(
        &bao,
        None,
        &kube,
        &["--eso-token-file", file.to_str().unwrap()],
    )
    .output();
    let text = out.all_text();
    has(&text, "note: ESO logs in with a static token (`tokenSecretRef`): its policies were judged from --eso-token-file");
    assert!(!text.contains(&token));
}

#[test]
fn an_auth_method_vault_seed_does_not_judge_is_not_checked() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(
        &kube,
        |v| {
            v["auth"] =
                json!({"cert": {"path": "cert", "clientCert": {"name": "c", "key": "tls.crt"}}})
        },
    );
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(&out, "not checked: vault-seed does not judge `cert` auth");
}

#[test]
fn a_malformed_store_is_reported_with_its_field_never_as_matching() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    store_vault(&kube, |v| {
        v.as_object_mut().unwrap().remove("server");
    });
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "cannot judge its Vault provider: field `spec.provider.vault.server` is missing",
    );
    store_vault(&kube, |v| v["server"] = json!(8200));
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(&out, "field `spec.provider.vault.server` is not a string");
    kube.update("SecretStore", Some("ask"), "vault-backend", |o| {
        o["spec"]["provider"] = json!({"aws": {"service": "SecretsManager", "region": "eu-west-1"}})
    });
    let out = verify(&bao, None, &kube, &[]).status(1).output();
    fails_saying(
        &out,
        "cannot judge its Vault provider: its provider is not Vault (`spec.provider` has `aws`)",
    );
}
