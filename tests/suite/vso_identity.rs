//! `verify`'s part `kube` judges what VSO really uses: the Vault its VaultConnection points at,
//! the Vault namespace, and the method, mount and role of its VaultAuth, against what
//! vault-seed seeded and judged. Real OpenBao, VSO's objects (`tests/fixtures/vso/`) served by
//! the fake Kubernetes API server to the real kube-rs client. Each case differs from the good
//! one in one field of one object, exits 1 and names both sides; on code without these rules
//! each of them exited 0 (the VaultStaticSecret synced, its VaultAuth and VaultConnection
//! valid).

use crate::common;

use common::fake_kube::{self, vso_fixture};
use common::{spec_dir, Run, World};
use serde_json::{json, Value};

/// The fixtures' VaultConnection address (`vaultconnection.yaml`).
const FIXTURE_ADDR: &str = "https://vault.cl1.sq4.aegis.internal";

/// One path, read by one VaultStaticSecret, through VSO's role `kubernetes/ask-core-service`;
/// the cluster reaches this Vault at the fixtures' address.
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
"#;

const ROLE_LINES: &str = "auth_mount = \"kubernetes\"\nauth_role = \"ask-core-service\"\n";

/// Seeded OpenBao with VSO's role and policy; the cluster with a synced VaultStaticSecret (a
/// reconcile after the seeding), its destination Secret, VaultAuth and VaultConnection.
fn world(spec: &str) -> World {
    let w = World::new(spec);
    w.apply("auh1-dev");
    w.bao.vso_role(
        "ask-core-service",
        r#"path "secret/data/ask/core-service/*" { capabilities = ["read"] }"#,
    );
    for f in [
        "vaultauth.yaml",
        "vaultconnection.yaml",
        "destination-secret.yaml",
    ] {
        for obj in vso_fixture(f) {
            w.kube.put(obj);
        }
    }
    w.kube.put(synced_now());
    w
}

/// The synced VaultStaticSecret, its `Ready`/`Healthy` rewritten a minute from now.
fn synced_now() -> Value {
    let at = (time::OffsetDateTime::now_utc() + time::Duration::minutes(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let mut obj = vso_fixture("vaultstaticsecret-synced.yaml").remove(0);
    for c in obj["status"]["conditions"].as_array_mut().unwrap() {
        if c["type"] == "Ready" || c["type"] == "Healthy" {
            c["lastTransitionTime"] = json!(at);
        }
    }
    obj
}

impl World {
    /// `vault-seed verify auh1-dev ARGS` against this world (its own name: a plain `verify`
    /// would be a method of every module's `World`).
    fn verify_auh1_dev(&self, args: &[&str]) -> Run {
        self.run(&["verify", "auh1-dev"]).args(args)
    }

    /// `verify` fails (exit 1) with `wanted` among the VaultStaticSecret's problems, in JSON and
    /// in text; the other parts stay ok (the rule is the part `kube`'s).
    fn fails_with(&self, wanted: &str) {
        let doc = self
            .verify_auh1_dev(&["-o", "json"])
            .status(1)
            .output()
            .json();
        assert_eq!(doc["vault"]["ok"], true, "{doc:#}");
        assert_eq!(doc["kube"]["ok"], false);
        let v = &doc["kube"]["vault_static_secrets"][0];
        assert_eq!(v["ok"], false, "{v:#}");
        let problems: Vec<&str> = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        assert!(
            problems.iter().any(|p| p.contains(wanted)),
            "missing {wanted:?} in {problems:#?}"
        );
        let text = self.verify_auh1_dev(&[]).status(1).output().stdout_text();
        assert!(text.contains(wanted), "missing {wanted:?} in:\n{text}");
        assert!(text.contains("verify auh1-dev: NOT done"), "{text}");
        // `--only` keeps its meaning: without `kube`, nothing of this is judged.
        self.verify_auh1_dev(&["--only", "vault,policy"]).output();
    }
}

#[test]
fn the_vault_role_and_namespace_vault_seed_judged_is_done() {
    let w = world(SPEC);
    let doc = w.verify_auh1_dev(&["-o", "json"]).output().json();
    let v = &doc["kube"]["vault_static_secrets"][0];
    assert_eq!(
        (v["ok"].as_bool(), v["problems"].clone()),
        (Some(true), json!([]))
    );
    // The address vault-seed talked to needs no `cluster_vault_addr`.
    let w = World {
        specs: spec_dir(&SPEC.replace(&format!("cluster_vault_addr = \"{FIXTURE_ADDR}\"\n"), "")),
        ..w
    };
    let addr = format!(
        "{}/",
        w.bao.addr.to_uppercase().replace("HTTP://", "http://")
    );
    w.kube.update("VaultConnection", Some("ask"), "vault", |c| {
        c["spec"]["address"] = json!(addr);
    });
    w.verify_auh1_dev(&[]).output();
}

#[test]
fn another_vaults_address() {
    let w = world(SPEC);
    w.kube.update("VaultConnection", Some("ask"), "vault", |c| {
        c["spec"]["address"] = json!("https://vault.other.internal:8200");
    });
    w.fails_with(&format!(
        "VSO reads the Vault at `https://vault.other.internal:8200` (VaultConnection `ask/vault`), not the one vault-seed seeded and judged (`{}` or the spec's `cluster_vault_addr` `{FIXTURE_ADDR}`)",
        w.bao.addr
    ));
}

#[test]
fn another_role() {
    let w = world(SPEC);
    w.kube.update("VaultAuth", Some("ask"), "vault-auth", |a| {
        a["spec"]["kubernetes"]["role"] = json!("platform-admin");
    });
    w.fails_with(
        "VSO logs in as role `platform-admin` on `kubernetes`; the spec says `ask-core-service`",
    );
}

#[test]
fn another_auth_mount() {
    let w = world(SPEC);
    w.kube.update("VaultAuth", Some("ask"), "vault-auth", |a| {
        a["spec"]["mount"] = json!("kubernetes-cl2");
    });
    w.fails_with(
        "VSO logs in as role `ask-core-service` on auth mount `kubernetes-cl2`; the spec says `kubernetes` (`[vso] auth_mount`)",
    );
}

#[test]
fn a_spec_without_a_role() {
    let w = world(&SPEC.replace(ROLE_LINES, "policies = [\"vso-ask\"]\n"));
    w.fails_with(
        "VSO logs in as role `ask-core-service` on `kubernetes`; the spec names no `[vso] auth_role`, so the policies judged are not that role's",
    );
}

#[test]
fn a_method_vault_seed_does_not_judge() {
    let w = world(SPEC);
    w.kube.update("VaultAuth", Some("ask"), "vault-auth", |a| {
        a["spec"]["method"] = json!("appRole");
        a["spec"]["mount"] = json!("approle");
        a["spec"]["appRole"] = json!({ "roleId": "4f1c", "secretRef": "approle-secret" });
    });
    w.fails_with(
        "not checked: vault-seed does not judge `appRole` auth (VaultAuth `ask/vault-auth`)",
    );
}

#[test]
fn a_vault_auth_in_another_vault_namespace() {
    let w = world(SPEC);
    w.kube.update("VaultAuth", Some("ask"), "vault-auth", |a| {
        a["spec"]["namespace"] = json!("team-b");
    });
    w.fails_with(
        "VSO logs in (VaultAuth `ask/vault-auth` `spec.namespace`) to Vault namespace `team-b`; vault-seed used none (the root namespace)",
    );
}

#[test]
fn a_vault_static_secret_reading_in_another_vault_namespace() {
    let w = world(SPEC);
    w.kube
        .update("VaultStaticSecret", Some("ask"), "zitadel-masterkey", |v| {
            v["spec"]["namespace"] = json!("team-b");
        });
    w.fails_with(
        "it reads in (its `spec.namespace`) Vault namespace `team-b`; vault-seed used none (the root namespace)",
    );
}

#[test]
fn a_vault_connection_without_an_address() {
    let w = world(SPEC);
    w.kube.update("VaultConnection", Some("ask"), "vault", |c| {
        c["spec"].as_object_mut().unwrap().remove("address");
    });
    w.fails_with("VaultConnection `ask/vault`: `spec.address` is missing");
}

#[test]
fn a_vault_auth_with_a_malformed_role() {
    let w = world(SPEC);
    w.kube.update("VaultAuth", Some("ask"), "vault-auth", |a| {
        a["spec"]["kubernetes"]["role"] = json!(["ask-core-service"]);
    });
    w.fails_with("VaultAuth `ask/vault-auth`: `spec.kubernetes.role` is a list, not a string");
}

/// Without `vaultAuthRef` VSO uses `default` in its own namespace; two namespaces holding one
/// cannot be told apart by vault-seed, which does not know VSO's namespace.
#[test]
fn two_default_vault_auths() {
    let w = world(SPEC);
    w.kube
        .update("VaultStaticSecret", Some("ask"), "zitadel-masterkey", |v| {
            v["spec"].as_object_mut().unwrap().remove("vaultAuthRef");
        });
    for ns in ["vault-secrets-operator-system", "ask"] {
        let mut default = vso_fixture("vaultauth.yaml").remove(0);
        default["metadata"]["name"] = json!("default");
        default["metadata"]["namespace"] = json!(ns);
        w.kube.put(default);
    }
    w.fails_with(
        "not checked: which Vault and role VSO uses, since its VaultAuth `default` (VSO's default) is not known: several are named `default`",
    );
    let doc = w.verify_auh1_dev(&["-o", "json"]).status(1).output().json();
    let auth = &doc["kube"]["objects"][0];
    assert_eq!(
        (auth["kind"].as_str(), auth["ok"].as_bool()),
        (Some("VaultAuth"), Some(false)),
        "{auth:#}"
    );
    // VSO uses the default in its own namespace: once the controller is found there (its
    // Deployment as VSO v1.4.1's chart labels it, `chart/templates/deployment.yaml`), that one
    // is judged, and it is the spec's.
    w.kube.put(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "vault-secrets-operator-controller-manager",
                     "namespace": "vault-secrets-operator-system",
                     "labels": {"app.kubernetes.io/name": "vault-secrets-operator",
                                "control-plane": "controller-manager"}},
        "spec": {"selector": {"matchLabels": {"control-plane": "controller-manager"}},
                 "template": {"metadata": {"labels": {"control-plane": "controller-manager"}},
                              "spec": {"containers": [{"name": "manager", "image": "hashicorp/vault-secrets-operator:1.4.1"}]}}},
    }));
    // Not done all the same: the VaultConnection it then reads is not in that namespace.
    let doc = w
        .verify_auh1_dev(&["-o", "json"])
        .status(1)
        .stdout_has("VaultConnection `vault-secrets-operator-system/vault` does not exist")
        .json();
    let auth = &doc["kube"]["objects"][0];
    assert_eq!(
        auth["namespace"], "vault-secrets-operator-system",
        "{auth:#}"
    );
    assert!(
        !doc.to_string().contains("several are named `default`"),
        "{doc:#}"
    );
}

/// A VaultAuth without `vaultConnectionRef` uses the VaultConnection `default` of the
/// operator's namespace (VSO v1.4.1 `common/common.go` `GetConnectionNamespacedName`,
/// `ParseResourceRef`), and VSO's operator namespace is its pod's (`init`, `OperatorNamespace`).
/// With a `default` in two namespaces, the one where VSO's controller Deployment runs (as its
/// chart labels it) is judged: done when that one points at this Vault; its twin, VSO running
/// in the other namespace, names the other Vault; and when the controller is not found once,
/// which one VSO uses is not checked.
#[test]
fn several_default_vault_connections_vso_uses_its_own_namespaces() {
    const OPERATOR_NS: &str = "vault-secrets-operator-system";
    let w = world(SPEC);
    w.kube.update("VaultAuth", Some("ask"), "vault-auth", |a| {
        a["spec"]
            .as_object_mut()
            .unwrap()
            .remove("vaultConnectionRef");
    });
    w.kube
        .put(fake_kube::vso_default_connection(OPERATOR_NS, FIXTURE_ADDR));
    let other = "https://vault.other.internal:8200";
    w.kube.put(fake_kube::vso_default_connection("ask", other));
    // The controller not found: which `default` VSO reads is not known.
    w.fails_with(
        "not checked: which Vault and role VSO uses, since its VaultConnection `default` (VSO's default) is not known: several are named `default` (`ask/default`, `vault-secrets-operator-system/default`)",
    );

    w.kube
        .put(fake_kube::vso_controller_deployment(OPERATOR_NS));
    let doc = w.verify_auh1_dev(&["-o", "json"]).output().json();
    let conn = doc["kube"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "VaultConnection")
        .unwrap();
    assert_eq!(
        (
            conn["namespace"].as_str(),
            conn["name"].as_str(),
            conn["ok"].as_bool()
        ),
        (Some(OPERATOR_NS), Some("default"), Some(true)),
        "{doc:#}"
    );
    assert!(!doc.to_string().contains("several are named"), "{doc:#}");

    // VSO installed in `ask` instead: its default there reads another Vault.
    let mut moved = fake_kube::vso_controller_deployment(OPERATOR_NS);
    w.kube.update(
        "Deployment",
        Some(OPERATOR_NS),
        "vault-secrets-operator-controller-manager",
        |d| {
            d["metadata"]["labels"] = json!({});
        },
    );
    moved["metadata"]["namespace"] = json!("ask");
    w.kube.put(moved);
    w.fails_with(&format!(
        "VSO reads the Vault at `{other}` (VaultConnection `ask/default`)"
    ));

    // Two controllers: not told apart.
    w.kube
        .put(fake_kube::vso_controller_deployment(OPERATOR_NS));
    w.fails_with("several are named `default`");
}
