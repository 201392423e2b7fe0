//! Issue 33: the second runbook (the air-gapped deployment, Vault Secrets Operator), encoded in
//! `secret-specs-airgap/` apart from the first runbook's `secret-specs/`. Its specs lint; `apply`
//! against real OpenBao writes every path, each Secret's keys at one path, the CloudNativePG
//! superuser's as the import marker; `import` copies CNPG's password from its Secret (issue 45).
//! The runbook installs no Reloader: a workload relying on Reloader's annotation with pods older
//! than its Secret is not done (issue 45).

use crate::common;

use base64::Engine as _;

use common::fake_kube::{
    reloader_deployment, secret, vso_destination_secret, vso_fixture, workload, FakeKube,
};
use common::{has, OpenBao, Out, Run};
use serde_json::{json, Value};
use std::path::PathBuf;

const ENV: &str = "auh1-dev";
const SUPERUSER: &str = "ask/zitadel-psql-secret";
/// What CloudNativePG writes as the superuser's password (a test value).
const CNPG_PASSWORD: &str = "Pg0superuserPassw0rdFromCnpg0001";

/// Each path vault-seed owns and the keys of the Secret its VaultStaticSecret writes.
const OWNED: [(&str, &[&str]); 5] = [
    (
        "ask/core-service-secret",
        &[
            "DATABASE__PASSWORD",
            "SECURITY__API_KEY_SALT",
            "SECURITY__MASTER_ENCRYPTION_KEY",
            "APP__CORE_SERVICES_MACHINE_TOKEN",
            "IAM_SERVICE__PAT",
        ],
    ),
    (
        "ask/zitadel-secret-kv",
        &["masterkey", "DATABASE__PASSWORD", "ADMIN_PASSWORD"],
    ),
    (
        "ask/harbor-pull-secret",
        &[
            "robot_name",
            "robot_token",
            "robot_auth",
            ".dockerconfigjson",
        ],
    ),
    ("ask/frontend", &["oidc_client_id"]),
    (SUPERUSER, &["db-admin-password"]),
];

/// The Secret CloudNativePG makes for Cluster `ask-pg` with `enableSuperuserAccess: true`:
/// named by `Cluster.GetSuperuserSecretName` (`<cluster>-superuser`, api/v1/cluster_funcs.go),
/// its keys as `specs.CreateSecret` writes them (pkg/specs/secrets.go: `username`, `password`,
/// ...), cloudnative-pg at its main branch of 2026-08.
pub(crate) fn cnpg_superuser_secret() -> Value {
    let mut s = secret(
        "ask",
        "ask-pg-superuser",
        &[
            ("username", "postgres"),
            ("user", "postgres"),
            ("password", CNPG_PASSWORD),
            ("dbname", "*"),
        ],
    );
    s["type"] = json!("kubernetes.io/basic-auth");
    s
}

/// What `vault-seed policy auh1-dev --for vso` prints for these specs: each path, since
/// `secret/ask/` is a folder other applications share (`tests/suite/policy_scope.rs`).
const VSO_POLICY: &str = r#"path "secret/data/ask/core-service-secret" { capabilities = ["read"] }
path "secret/data/ask/frontend"            { capabilities = ["read"] }
path "secret/data/ask/harbor-pull-secret"  { capabilities = ["read"] }
path "secret/data/ask/zitadel-psql-secret" { capabilities = ["read"] }
path "secret/data/ask/zitadel-secret-kv"   { capabilities = ["read"] }
"#;

fn airgap_specs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("secret-specs-airgap")
}

fn run(bao: &OpenBao, args: &[&str]) -> Run {
    Run::new(bao).specs(airgap_specs()).args(args)
}

/// Every value a run must never print: what is under `secret/ask/`, but the markers.
#[track_caller]
fn no_value_in(bao: &OpenBao, outs: &[&Out]) {
    let mut values = Vec::new();
    for path in OWNED.iter().map(|(p, _)| *p) {
        if let Some((data, _)) = bao.kv_get("secret", path) {
            values.extend(
                data.values()
                    .filter_map(|v| v.as_str())
                    .filter(|v| !v.contains("placeholder") && *v != "import-from-cluster")
                    .map(str::to_string),
            );
        }
    }
    assert!(!values.is_empty());
    for out in outs {
        let all = out.all_text();
        for v in &values {
            assert!(!all.contains(v.as_str()), "a value leaked:\n{all}");
        }
    }
}

/// The statuses of `verify`'s vault part that are not `valid`, as (path, field, status).
fn not_valid(doc: &Value) -> Vec<(String, String, String)> {
    doc["vault"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] != "valid")
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("path"), s("field"), s("status"))
        })
        .collect()
}

#[test]
fn the_airgap_specs_lint_clean_apart_from_the_first_runbooks() {
    let out = Run::offline()
        .specs(airgap_specs())
        .args(["lint", "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(doc["ok"], true, "{doc}");
    let text = Run::offline()
        .specs(airgap_specs())
        .arg("lint")
        .output()
        .stdout_text();
    assert!(
        text.contains("`core-service-airgap`, 5 secret(s), 14 field(s), environments: auh1-dev"),
        "{text}"
    );
    // The first runbook's folder holds none of the second's.
    let first = Run::offline()
        .real_specs()
        .arg("lint")
        .output()
        .stdout_text();
    assert!(!first.contains("core-service-airgap"), "{first}");
}

/// `apply` writes each Secret's keys at one path, in their formats, CNPG's superuser password as
/// the import marker; the placeholders it creates are counted pending (issue 45: "0 pending"
/// while creating them), and the Harbor robot's are to be filled in before the first sync; run
/// again it writes nothing.
#[test]
fn apply_writes_every_path_and_counts_the_placeholders_it_creates_pending() {
    let bao = OpenBao::dev();
    let apply = run(&bao, &["apply", ENV, "-o", "json"]).output();
    let doc = apply.json();
    assert_eq!(doc["summary"]["created"], 14, "{doc}");
    assert_eq!(doc["summary"]["written_paths"], 5, "{doc}");
    assert_eq!(doc["summary"]["provided_absent"], 0, "{doc}");
    // The PAT, the robot's name and token and the two made from them, the OIDC client id,
    // CNPG's password (the import marker).
    assert_eq!(doc["summary"]["pending"], 7, "{doc}");
    assert_eq!(doc["summary"]["pending_written"], 7, "{doc}");
    for (path, keys) in OWNED {
        let (data, _) = bao
            .kv_get("secret", path)
            .unwrap_or_else(|| panic!("{path} not written"));
        let mut got: Vec<&str> = data.keys().map(String::as_str).collect();
        let mut want = keys.to_vec();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{path}");
    }
    let (zitadel, _) = bao.kv_get("secret", "ask/zitadel-secret-kv").unwrap();
    assert_eq!(zitadel["masterkey"].as_str().unwrap().len(), 32);
    let (pull, _) = bao.kv_get("secret", "ask/harbor-pull-secret").unwrap();
    // Made from the placeholders: a docker config Kubernetes accepts while a person has yet to
    // fill them in.
    let config: Value = serde_json::from_str(pull[".dockerconfigjson"].as_str().unwrap()).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode("robot-name-to-fill:placeholder");
    assert_eq!(
        config,
        json!({ "auths": { "harbor.cl1.sq4.aegis.internal": { "auth": auth } } })
    );
    let (superuser, _) = bao.kv_get("secret", SUPERUSER).unwrap();
    assert_eq!(superuser["db-admin-password"], "import-from-cluster");

    let again = run(&bao, &["apply", ENV]).output();
    let text = again.stdout_text();
    assert!(
        text.contains("0 created, 7 exist, 7 pending, 0 recreated"),
        "{text}"
    );
    assert!(
        text.contains("fill in before the first sync (needed = \"before-sync\"): vault-seed set auh1-dev harbor-pull-secret.robot_name < value.txt"),
        "{text}"
    );
    assert!(
        text.contains("fill in after deploy: vault-seed set auh1-dev frontend < value.txt"),
        "{text}"
    );
    assert!(
        !text.contains("fill in after deploy: vault-seed set auh1-dev harbor-pull-secret"),
        "{text}"
    );
    let fresh = OpenBao::dev();
    let created = run(&fresh, &["apply", ENV]).output().stdout_text();
    assert!(
        created.contains("14 created, 0 exist, 7 pending (7 written now: placeholders to fill in)"),
        "{created}"
    );
    no_value_in(&bao, &[&apply, &again]);
}

/// After `apply`, with VSO's role and policy in place, `verify --skip-kube` finds the
/// placeholders people fill in and CNPG's password still the import marker pending; `import`
/// copies the password CloudNativePG wrote to its Secret into Vault, as the runbook does
/// (Phase 5), and the verify is done.
#[test]
fn import_copies_cnpg_superuser_password_and_verify_is_done() {
    let bao = OpenBao::dev();
    run(&bao, &["apply", ENV]).output();
    // VSO's side as the spec names it: role `vso-ask` on `kubernetes`, policy `vso-ask`.
    bao.vso_role("vso-ask", VSO_POLICY);
    let verify = run(&bao, &["verify", ENV, "--skip-kube", "-o", "json"]).output();
    let doc = verify.json();
    let row = |p: &str, f: &str, s: &str| (format!("secret/{p}"), f.to_string(), s.to_string());
    assert_eq!(
        not_valid(&doc),
        [
            row("ask/core-service-secret", "IAM_SERVICE__PAT", "pending"),
            row(SUPERUSER, "db-admin-password", "pending"),
            row("ask/harbor-pull-secret", "robot_name", "pending"),
            row("ask/harbor-pull-secret", "robot_token", "pending"),
            row("ask/harbor-pull-secret", "robot_auth", "pending"),
            row("ask/harbor-pull-secret", ".dockerconfigjson", "pending"),
            row("ask/frontend", "oidc_client_id", "pending"),
        ],
        "{doc}"
    );
    assert_eq!(doc["policy"]["ok"], true, "{doc}");
    // The Harbor robot's hint says it is needed before the first sync; the PAT's does not.
    let human = run(&bao, &["verify", ENV, "--skip-kube"]).output();
    let text = human.stdout_text();
    has(&text, "robot_name  fill in before the first sync (needed = \"before-sync\"): vault-seed set auh1-dev harbor-pull-secret.robot_name < value.txt");
    has(&text, "IAM_SERVICE__PAT  fill in: vault-seed set auh1-dev core-service-secret.IAM_SERVICE__PAT < value.txt");
    let kube = FakeKube::start();
    kube.put(cnpg_superuser_secret());
    let import = Run::new(&bao)
        .specs(airgap_specs())
        .args(["import", ENV, "--kubeconfig"])
        .arg(kube.kubeconfig())
        .output();
    let text = import.stdout_text();
    assert!(
        text.contains("from Secret ask/ask-pg-superuser key password"),
        "{text}"
    );
    let (data, _) = bao.kv_get("secret", SUPERUSER).unwrap();
    assert_eq!(data["db-admin-password"], CNPG_PASSWORD);
    let done = run(&bao, &["verify", ENV, "--skip-kube"]).output();
    let text = done.stdout_text();
    assert!(text.contains("verify auh1-dev: done"), "{text}");
    no_value_in(&bao, &[&verify, &human, &done, &import]);
}

/// Issue 45: a refusal names the rule that refused and the spec's reason: the database
/// password is `rotation = "never"` (not "data is encrypted with it"), Zitadel's Secret is fixed
/// as a whole, each with its own reason.
#[test]
fn refusals_name_the_rule_and_the_specs_reason() {
    let bao = OpenBao::dev();
    run(&bao, &["apply", ENV]).output();
    let out = run(
        &bao,
        &[
            "rotate",
            ENV,
            "core-service-secret.DATABASE__PASSWORD",
            "--yes",
        ],
    )
    .status(2)
    .output();
    let err = out.stderr_text();
    assert!(
        err.contains("field `DATABASE__PASSWORD` of `secret/ask/core-service-secret` has `rotation = \"never\"` in the spec: it never changes once written (the spec's reason: postgresInit created the database user with it: a new value in Vault alone locks the API out); nothing was sent"),
        "{err}"
    );
    assert!(!err.contains("encrypted"), "{err}");
    let out = Run::new(&bao)
        .specs(airgap_specs())
        .args([
            "set",
            ENV,
            "zitadel-secret-kv.ADMIN_PASSWORD",
            "--force",
            "--skip-kube",
        ])
        .stdin("Aa1!Aa1!Aa1!Aa1!Aa1!Aa1!Aa1!Aa1!")
        .status(2)
        .output();
    let err = out.stderr_text();
    assert!(
        err.contains("`secret/ask/zitadel-secret-kv` is fixed: field `ADMIN_PASSWORD` never changes once written (the spec's reason: Zitadel's data is encrypted with the masterkey, and the database user and first instance were made with these passwords)"),
        "{err}"
    );
}

/// The second runbook never installs Reloader. VSO delivered `core-service-secret` (its
/// VaultStaticSecret synced, the Secret holding Vault's values) after core-service's pod
/// started, and core-service relies on `secret.reloader.stakater.com/reload` for its restart:
/// nothing restarts it, so `verify` is not done and names the restart. With a Reloader running
/// (as its chart installs it), the same cluster passes.
#[test]
fn without_reloader_a_stale_reader_of_the_airgap_secrets_is_not_done() {
    let bao = OpenBao::dev();
    run(&bao, &["apply", ENV]).output();
    let kube = FakeKube::start();
    let path = "ask/core-service-secret";
    let written = bao
        .kv_created("secret", path)
        .replace_nanosecond(0)
        .unwrap()
        + time::Duration::seconds(2);
    let written = written
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    vso_synced(&bao, &kube, &written);
    let mut api = workload(
        "Deployment",
        "ask",
        "core-service",
        json!({"containers": [{"name": "app", "envFrom": [{"secretRef": {"name": "core-service-secret"}}]}]}),
    );
    api["metadata"]["annotations"]["secret.reloader.stakater.com/reload"] =
        json!("core-service-secret");
    kube.put(api.clone());
    kube.run(&api, "core-service-1", "2026-01-01T00:00:00Z");
    let verify = |code: i32| {
        let out = Run::new(&bao)
            .specs(airgap_specs())
            .args([
                "verify",
                ENV,
                "--only",
                "consumers",
                "--all",
                "--kubeconfig",
            ])
            .arg(kube.kubeconfig())
            .env("NO_COLOR", "1")
            .status(code)
            .output();
        no_value_in(&bao, &[&out]);
        out.stdout_text()
    };
    let text = verify(1);
    has(&text, "FAIL Deployment ask/core-service");
    has(
        &text,
        "reads `core-service-secret` through env, but 1 pod(s) started before its data changed",
    );
    has(&text, "Reloader (annotation `secret.reloader.stakater.com/reload`) restarts nothing: no Reloader runs");
    has(
        &text,
        "fix: kubectl -n ask rollout restart deployment/core-service",
    );
    has(&text, "verify auh1-dev: NOT done");

    kube.put(reloader_deployment("reloader", &[], true));
    let text = verify(0);
    has(&text, "ok   Deployment ask/core-service");
}

/// What VSO writes once the Application synced, at `at`: each VaultStaticSecret of the spec synced after
/// the values were written, its destination Secret holding Vault's fields (the pull secret of
/// type `kubernetes.io/dockerconfigjson`, as `destination.type` asks: VSO v1.4.1
/// `helpers/secrets.go` `SyncSecret`).
pub(crate) fn vso_synced(bao: &OpenBao, kube: &FakeKube, at: &str) {
    for name in [
        "core-service-secret",
        "zitadel-secret-kv",
        "zitadel-psql-secret",
        "harbor-pull-secret",
    ] {
        let mut vss = vso_fixture("vaultstaticsecret-synced.yaml").remove(0);
        vss["metadata"]["name"] = json!(name);
        vss["metadata"]["uid"] = json!(format!("vss-{name}"));
        vss["spec"]["path"] = json!(format!("ask/{name}"));
        vss["spec"]["destination"]["name"] = json!(name);
        if name == "harbor-pull-secret" {
            vss["spec"]["destination"]["type"] = json!("kubernetes.io/dockerconfigjson");
        }
        for c in vss["status"]["conditions"].as_array_mut().unwrap() {
            c["lastTransitionTime"] = json!(at);
        }
        let (data, _) = bao.kv_get("secret", &format!("ask/{name}")).unwrap();
        let values: Vec<(String, String)> = data
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        let pairs: Vec<(&str, &str)> = values
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        kube.put(vso_destination_secret(&vss, &pairs, at));
        kube.put(vss);
    }
}
