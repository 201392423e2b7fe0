//! `rotate` and `set --force` name what reads a value before they replace it: the
//! ExternalSecrets and VaultStaticSecrets the spec lists that map its path, read from the fake
//! Kubernetes API server by the real kube-rs client, the value in a real OpenBao. A cluster that
//! cannot tell never stops the write.

use crate::common;

use common::fake_kube::{
    external_secret, kubeconfig_yaml, reloader_deployment, secret, vso_fixture, with_data_manager,
    workload,
};
use common::{has, Out, Run, World};
use serde_json::{json, Value};

const FERNET: &str = "ask/core-service/auh1-dev/SECURITY__MASTER_ENCRYPTION_KEY";
const SALT: &str = "ask/core-service/auh1-dev/SECURITY__API_KEY_SALT";
const PAT: &str = "ask/core-service/auh1-dev/IAM_SERVICE__PAT";

/// The runbook's shape: one ExternalSecret and one VaultStaticSecret read the Fernet key, one
/// of each reads the salt; a placeholder a person fills in.
const SPEC: &str = r#"
name = "core-service"
[vault]
mount = "secret"
path = "ask/core-service/{env}"
[environments.auh1-dev]
kube_namespace = "ask"
[eso]
external_secrets = ["core-service-secret", "salt-secret"]
[vso]
static_secrets = ["fernet-key", "salt"]
auth_mount = "kubernetes"
auth_role = "ask-core-service"
[secrets.SECURITY__MASTER_ENCRYPTION_KEY]
description = "Fernet key"
fields.password = { generator = "fernet", rotation = "replace" }
[secrets.SECURITY__API_KEY_SALT]
description = "salt"
fields.password = { generator = "hex32" }
[secrets.IAM_SERVICE__PAT]
description = "PAT"
fields.value = { generator = "placeholder" }
"#;

/// Rotate the Fernet key, JSON on stdout.
pub(crate) const ROTATE: &[&str] = &[
    "rotate",
    "auh1-dev",
    "SECURITY__MASTER_ENCRYPTION_KEY",
    "--yes",
    "-o",
    "json",
];

/// OpenBao with the spec applied; a cluster holding the four readers.
pub(crate) fn world() -> World {
    let w = World::new(SPEC);
    w.apply("auh1-dev");
    let kube = &w.kube;
    kube.put(external_secret(
        "ask",
        "core-service-secret",
        &[("SECURITY__MASTER_ENCRYPTION_KEY", FERNET, Some("password"))],
    ));
    kube.put(external_secret(
        "ask",
        "salt-secret",
        &[("SECURITY__API_KEY_SALT", SALT, Some("password"))],
    ));
    kube.put(vss("fernet-key", FERNET, None));
    kube.put(vss("salt", SALT, None));
    w
}

/// A VaultStaticSecret `ask/<name>` reading `path` on `secret`, pinned to `version` if given.
fn vss(name: &str, path: &str, version: Option<u64>) -> Value {
    let mut obj = vso_fixture("vaultstaticsecret-synced.yaml").remove(0);
    obj["metadata"]["name"] = json!(name);
    obj["spec"]["path"] = json!(path);
    obj["spec"]["destination"]["name"] = json!(name);
    if let Some(v) = version {
        obj["spec"]["version"] = json!(v);
    }
    obj
}

impl World {
    fn version(&self, path: &str) -> u64 {
        self.bao.kv_get("secret", path).unwrap().1
    }

    /// Every value of the environment, the Vault token and the cluster's bearer token.
    fn secrets(&self) -> Vec<String> {
        let mut all = vec![self.bao.token.clone(), self.kube.token.clone()];
        for path in [FERNET, SALT] {
            let (data, _) = self.bao.kv_get("secret", path).unwrap();
            all.extend(data.values().filter_map(|v| v.as_str()).map(str::to_string));
        }
        all
    }
}

fn readers_named(doc: &Value) -> Vec<String> {
    doc["readers"]
        .as_array()
        .unwrap_or_else(|| panic!("no readers in {doc:#}"))
        .iter()
        .map(|r| {
            format!(
                "{} {}/{}",
                r["kind"].as_str().unwrap(),
                r["namespace"].as_str().unwrap(),
                r["name"].as_str().unwrap()
            )
        })
        .collect()
}

/// Rotating the Fernet key names, before the write, the ExternalSecret and the
/// VaultStaticSecret that map its path (with the field and key); those reading the salt are not
/// named. The JSON document carries them.
#[test]
fn rotate_names_the_objects_that_map_the_path_and_only_those() {
    let w = world();
    let out = w.run(ROTATE).output();
    let err = out.stderr_text();
    has(
        &err,
        "read by ExternalSecret `ask/core-service-secret` (field `password` -> key `SECURITY__MASTER_ENCRYPTION_KEY` of Secret `core-service-secret`, remoteRef)",
    );
    has(
        &err,
        "read by VaultStaticSecret `ask/fernet-key` (every field -> Secret `fernet-key`, spec.path)",
    );
    has(&err, "`vault-seed verify auh1-dev --force-sync` asks now");
    assert!(
        !err.contains("salt-secret") && !err.contains("`ask/salt`"),
        "a reader of another path is named:\n{err}"
    );
    assert_eq!(w.version(FERNET), 2, "the rotation was written");
    let doc = out.json();
    assert_eq!(doc["readers_checked"], true);
    assert_eq!(doc["readers_note"], Value::Null);
    assert_eq!(
        readers_named(&doc),
        [
            "ExternalSecret ask/core-service-secret",
            "VaultStaticSecret ask/fernet-key"
        ]
    );
    let es = &doc["readers"][0];
    assert_eq!(
        (&es["field"], &es["secret_key"], &es["pinned_version"]),
        (
            &json!("password"),
            &json!("SECURITY__MASTER_ENCRYPTION_KEY"),
            &Value::Null
        )
    );
    assert_eq!(
        doc["readers"][1]["field"],
        Value::Null,
        "VSO reads every field"
    );
}

/// `set --force` of a real value names its readers; filling a placeholder that no object the
/// specs list reads asks the cluster and says nothing more.
#[test]
fn set_force_names_the_readers_and_a_placeholder_nobody_reads_says_nothing_more() {
    let w = world();
    let out = w
        .run(&["set", "auh1-dev", "SECURITY__API_KEY_SALT", "--force"])
        .stdin("ab".repeat(32))
        .output();
    has(
        &out.stderr_text(),
        "read by ExternalSecret `ask/salt-secret` (field `password` -> key `SECURITY__API_KEY_SALT`",
    );
    has(&out.stderr_text(), "read by VaultStaticSecret `ask/salt`");
    assert_eq!(w.version(SALT), 2);
    let asked = w.kube.requests().len();
    assert!(asked > 0);
    let doc = w
        .run(&["set", "auh1-dev", "IAM_SERVICE__PAT", "-o", "json"])
        .stdin("a-pat-made-by-a-person")
        .output()
        .json();
    assert_eq!(doc["outcome"], "replaced-placeholder");
    // Whether the placeholder reached the cluster was asked: no listed object reads it.
    assert_eq!(doc["readers_checked"], true);
    assert_eq!(doc["readers"], json!([]));
    assert!(w.kube.requests().len() > asked);
}

/// Issue 45: `set` of a placeholder that ESO already wrote to its Secret ends with the next
/// step: the ExternalSecret and Secret holding it, each workload that keeps it until restarted
/// (one that a running Reloader restarts is a note), and the one command that brings the new
/// value; run as printed, that command force-syncs the ExternalSecret and restarts the workload.
#[test]
fn set_of_a_placeholder_in_the_cluster_ends_with_the_next_step() {
    let w = world();
    let (data, _) = w.bao.kv_get("secret", PAT).unwrap();
    let placeholder = data["value"].as_str().unwrap().to_string();
    w.kube.put(external_secret(
        "ask",
        "core-service-secret",
        &[
            ("SECURITY__MASTER_ENCRYPTION_KEY", FERNET, Some("password")),
            ("IAM_SERVICE__PAT", PAT, Some("value")),
        ],
    ));
    w.kube.put(with_data_manager(
        secret(
            "ask",
            "core-service-secret",
            &[("IAM_SERVICE__PAT", &placeholder)],
        ),
        "externalsecrets.external-secrets.io/core-service-secret",
        "2026-08-18T10:00:00Z",
    ));
    let env_from = json!({"containers": [{"name": "app", "envFrom": [{"secretRef": {"name": "core-service-secret"}}]}]});
    let api = workload("Deployment", "ask", "api", env_from.clone());
    w.kube.put(api.clone());
    w.kube.run(&api, "api-1", "2026-08-17T10:00:00Z");
    let mut web = workload("Deployment", "ask", "web", env_from);
    web["metadata"]["annotations"]["reloader.stakater.com/auto"] = json!("true");
    w.kube.put(web);
    w.kube.put(reloader_deployment("reloader", &[], true));

    let out = w
        .run(&["set", "auh1-dev", "IAM_SERVICE__PAT"])
        .stdin("a-pat-made-by-a-person")
        .output();
    let err = out.stderr_text();
    has(&err, "the placeholder already reached the cluster: ExternalSecret `ask/core-service-secret` wrote it to Secret `core-service-secret`, which keeps it until ESO syncs again");
    has(&err, "Deployment `ask/api` reads Secret `core-service-secret` through env: it keeps the old value until it restarts, once the Secret is refreshed: `kubectl -n ask rollout restart deployment/api`");
    has(&err, "Deployment `ask/web` reads Secret `core-service-secret` through env: Reloader (annotation `reloader.stakater.com/auto: \"true\"`), with Reloader's Deployment `reloader/reloader-reloader` Ready");
    let next = "next: `vault-seed verify auh1-dev --only kube,consumers --force-sync --restart --wait 5m` makes ESO and VSO read the new value now and restarts each workload still running with the placeholder";
    has(&err, next);
    assert!(
        err.find(next).unwrap() > err.find("the placeholder already reached").unwrap(),
        "the next step comes last:\n{err}"
    );
    assert!(!out.all_text().contains("a-pat-made-by-a-person"));

    // The command as printed, waiting less: it asks ESO to sync and restarts `api` only.
    let command = next
        .split('`')
        .nth(1)
        .unwrap()
        .replace("--wait 5m", "--wait 1s");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    // The fake cluster reconciles nothing: still not done after the wait.
    w.run(&args)
        .status(1)
        .stdout_has("verify auh1-dev: NOT done")
        .output();
    let patched: Vec<String> = w.kube.patches().iter().map(|p| p.path.clone()).collect();
    for path in [
        "/apis/external-secrets.io/v1/namespaces/ask/externalsecrets/core-service-secret",
        "/apis/apps/v1/namespaces/ask/deployments/api",
    ] {
        assert!(patched.iter().any(|p| p == path), "{path} in {patched:?}");
    }
    assert!(
        !patched.iter().any(|p| p.ends_with("/deployments/web")),
        "{patched:?}"
    );
}

/// An unreachable cluster, RBAC that forbids reading ExternalSecrets, VSO's CRDs missing: the
/// readers are "not checked", with the reason, and the rotation is written all the same.
#[test]
fn a_cluster_that_cannot_tell_is_said_and_the_write_goes_ahead() {
    let w = world();
    let closed = tempfile::tempdir().unwrap();
    let config = closed.path().join("kubeconfig");
    let server = format!("http://127.0.0.1:{}", common::free_port());
    std::fs::write(&config, kubeconfig_yaml(&server, "t0ken-unused", "fake")).unwrap();
    let out = Run::new(&w.bao)
        .specs(w.specs.path())
        .args(ROTATE)
        .arg("--kubeconfig")
        .arg(&config)
        .output();
    has(
        &out.stderr_text(),
        "readers not checked: cannot reach the Kubernetes API",
    );
    let doc = out.json();
    assert_eq!(doc["outcome"], "rotated");
    assert_eq!(doc["readers_checked"], false);
    has(
        doc["readers_note"].as_str().unwrap(),
        "cannot reach the Kubernetes API",
    );
    assert_eq!(w.version(FERNET), 2);
    // Filling in a placeholder: whether it reached the cluster is a maybe, with the command.
    let out = Run::new(&w.bao)
        .specs(w.specs.path())
        .args(["set", "auh1-dev", "IAM_SERVICE__PAT", "--kubeconfig"])
        .arg(&config)
        .stdin("a-pat-made-by-a-person")
        .output();
    has(
        &out.stderr_text(),
        "note: whether the placeholder reached the cluster was not checked (cannot reach the Kubernetes API",
    );
    has(&out.stderr_text(), "if it did, `vault-seed verify auh1-dev --only kube,consumers --force-sync --restart --wait 5m` brings the new value to its readers");

    w.kube.deny("externalsecrets");
    let doc = w.run(ROTATE).output().json();
    assert_eq!(doc["readers_checked"], false);
    has(doc["readers_note"].as_str().unwrap(), "forbidden");
    assert_eq!(w.version(FERNET), 3);

    let other = world();
    other.kube.without_vso();
    let out = other.run(ROTATE).output();
    has(
        &out.stderr_text(),
        "readers not checked: the cluster serves no `VaultStaticSecret`",
    );
    let doc = out.json();
    // The ExternalSecret read before VSO's kind failed is still named.
    assert_eq!(
        readers_named(&doc),
        ["ExternalSecret ask/core-service-secret"]
    );
    assert_eq!(doc["readers_checked"], false);
    assert_eq!(other.version(FERNET), 2);
}

/// `--skip-kube` sends nothing to the cluster, though a kubeconfig is given.
#[test]
fn skip_kube_sends_nothing_to_the_cluster() {
    let w = world();
    let out = w.run(ROTATE).arg("--skip-kube").output();
    assert_eq!(w.kube.requests(), [], "the cluster was asked");
    has(&out.stderr_text(), "readers not checked: --skip-kube");
    let doc = out.json();
    assert_eq!(
        (&doc["readers_checked"], &doc["readers"]),
        (&json!(false), &json!([]))
    );
    assert_eq!(w.version(FERNET), 2);
    w.run(&[
        "set",
        "auh1-dev",
        "SECURITY__API_KEY_SALT",
        "--force",
        "--skip-kube",
    ])
    .stdin("cd".repeat(32))
    .output();
    assert_eq!(w.kube.requests(), [], "the cluster was asked");
    assert_eq!(w.version(SALT), 2);
}

/// A reader pinned to a version (`remoteRef.version`, `spec.version`) keeps serving the old
/// value: said as a warning, and in JSON.
#[test]
fn a_reader_pinned_to_a_version_is_flagged() {
    let w = world();
    let mut es = external_secret(
        "ask",
        "core-service-secret",
        &[("SECURITY__MASTER_ENCRYPTION_KEY", FERNET, Some("password"))],
    );
    es.0["spec"]["data"][0]["remoteRef"]["version"] = json!("1");
    w.kube.put(es);
    w.kube.put(vss("fernet-key", FERNET, Some(1)));
    let out = w.run(ROTATE).output();
    let err = out.stderr_text();
    has(
        &err,
        "warning: ExternalSecret `ask/core-service-secret` is pinned to version 1 (`remoteRef.version`): it will keep serving the old value",
    );
    has(
        &err,
        "warning: VaultStaticSecret `ask/fernet-key` is pinned to version 1 (`spec.version`)",
    );
    // Every reader is pinned: none takes the new value at its next sync, and none is said to.
    assert!(!err.contains("next sync"), "{err}");
    let doc = out.json();
    let pins: Vec<&Value> = doc["readers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["pinned_version"])
        .collect();
    assert_eq!(pins, [&json!("1"), &json!("1")]);
}

/// Issue 45: a reader pinned to the current version keeps serving it after a rotation. Without
/// `--yes` the rotation is refused before anything is read (exit 2, nothing written);
/// `--dry-run` names the pinned reader; with `--yes` it goes ahead, and the pinned reader is
/// never said to take the new value at its next sync.
#[test]
fn a_reader_pinned_to_the_current_version_needs_yes_and_is_never_said_to_refresh() {
    let w = world();
    w.kube.put(vss("fernet-key", FERNET, Some(1)));
    let unconfirmed = ["rotate", "auh1-dev", "SECURITY__MASTER_ENCRYPTION_KEY"];
    let out = w.run(&unconfirmed).status(2).output();
    has(
        &out.stderr_text(),
        "rotating replaces the live value of `secret/ask/core-service/auh1-dev/SECURITY__MASTER_ENCRYPTION_KEY`",
    );
    assert_eq!(w.version(FERNET), 1, "nothing written");
    let dry = [
        "rotate",
        "auh1-dev",
        "SECURITY__MASTER_ENCRYPTION_KEY",
        "--dry-run",
    ];
    let out = w.run(&dry).output();
    has(
        &out.stderr_text(),
        "VaultStaticSecret `ask/fernet-key` is pinned to version 1 (`spec.version`): it will keep serving the old value, not the new one",
    );
    assert_eq!(w.version(FERNET), 1, "nothing written");
    let out = w.run(ROTATE).output();
    let err = out.stderr_text();
    has(
        &err,
        "those not pinned take the new value at their next sync",
    );
    assert!(!err.contains("they take the new value"), "{err}");
    assert_eq!(w.version(FERNET), 2);
    // Every reader pinned: no sentence about a next sync at all.
    let mut es = external_secret(
        "ask",
        "core-service-secret",
        &[("SECURITY__MASTER_ENCRYPTION_KEY", FERNET, Some("password"))],
    );
    es.0["spec"]["data"][0]["remoteRef"]["version"] = json!("2");
    w.kube.put(es);
    w.kube.put(vss("fernet-key", FERNET, Some(2)));
    let out = w.run(ROTATE).output();
    assert!(
        !out.stderr_text().contains("next sync"),
        "{}",
        out.stderr_text()
    );
}

/// At trace level (vault-seed's and kube-rs' logs), no value, old or new, and no token shows.
#[test]
fn no_value_or_token_in_any_output_at_trace_level() {
    let w = world();
    let before = w.secrets();
    let rotate = w.run(ROTATE).env("RUST_LOG", "trace").output();
    let set = w
        .run(&["set", "auh1-dev", "SECURITY__API_KEY_SALT", "--force"])
        .env("RUST_LOG", "trace")
        .stdin("ef".repeat(32))
        .output();
    let outs: [Out; 2] = [rotate, set];
    let mut secrets = before;
    secrets.extend(w.secrets());
    for out in &outs {
        let all = out.all_text();
        has(&all, "read by ExternalSecret");
        has(&all, "vault_seed::kube");
        for s in &secrets {
            assert!(!all.contains(s.as_str()), "a secret appears in the output");
        }
    }
}

/// After the write, `rotate` names the workloads that read the value through env and will keep
/// the old one until restarted, with the command; one that a running Reloader restarts gets a
/// note (without a Reloader running, its annotation restarts nothing: the command); a plain
/// volume, a CronJob and a reader of another Secret are not named.
#[test]
fn rotate_ends_with_the_workloads_that_will_need_a_restart() {
    let w = world();
    let env_from = |secret: &str| json!({"containers": [{"name": "app", "envFrom": [{"secretRef": {"name": secret}}]}]});
    w.kube.put(workload(
        "Deployment",
        "ask",
        "api",
        env_from("core-service-secret"),
    ));
    let mut web = workload("Deployment", "ask", "web", env_from("core-service-secret"));
    web["metadata"]["annotations"]["reloader.stakater.com/auto"] = json!("true");
    w.kube.put(web);
    w.kube.put(workload(
        "Deployment",
        "ask",
        "files",
        json!({
            "containers": [{"name": "app", "volumeMounts": [{"name": "c", "mountPath": "/c"}]}],
            "volumes": [{"name": "c", "secret": {"secretName": "core-service-secret"}}],
        }),
    ));
    w.kube.put(workload(
        "CronJob",
        "ask",
        "nightly",
        env_from("core-service-secret"),
    ));
    w.kube.put(workload(
        "Deployment",
        "ask",
        "other",
        env_from("salt-secret"),
    ));
    let out = w.run(ROTATE).output();
    has(
        &out.stderr_text(),
        "Deployment `ask/web` reads Secret `core-service-secret` through env: it keeps the old value until it restarts, once the Secret is refreshed (Reloader (annotation `reloader.stakater.com/auto: \"true\"`) restarts nothing: no Reloader runs",
    );
    has(
        &out.stderr_text(),
        "`kubectl -n ask rollout restart deployment/web`",
    );
    w.kube.put(reloader_deployment("reloader", &[], true));
    let out = w.run(ROTATE).output();
    let err = out.stderr_text();
    has(
        &err,
        "Deployment `ask/api` reads Secret `core-service-secret` through env: it keeps the old value until it restarts, once the Secret is refreshed: `kubectl -n ask rollout restart deployment/api`",
    );
    has(
        &err,
        "Deployment `ask/web` reads Secret `core-service-secret` through env: Reloader (annotation `reloader.stakater.com/auto: \"true\"`), with Reloader's Deployment `reloader/reloader-reloader` Ready and watching namespace `ask`, restarts it when the Secret is refreshed",
    );
    let written = err.find("is kept in KV v2 history").unwrap();
    assert!(
        err.find("`ask/api`").unwrap() > written,
        "said after the write:\n{err}"
    );
    for absent in ["`ask/files`", "`ask/nightly`", "`ask/other`"] {
        assert!(!err.contains(absent), "{absent} named:\n{err}");
    }
    let doc = out.json();
    let named: Vec<&str> = doc["restarts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["api", "web"], "{doc:#}");
    // --skip-kube: nothing asked, nothing named.
    let asked = w.kube.requests().len();
    let out = w.run(ROTATE).arg("--skip-kube").output();
    assert!(!out.stderr_text().contains("`ask/api`"));
    assert_eq!(w.kube.requests().len(), asked);
}
