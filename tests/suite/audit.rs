//! Issue 32: `vault-seed audit ENV` lists what the specs no longer describe and changes nothing:
//! paths in the specs' folders no spec names, paths elsewhere on the mount marked as
//! vault-seed's, fields a spec does not name, ExternalSecrets and VaultStaticSecrets reading a
//! path nobody seeds. Real OpenBao; the fake Kubernetes API through a real kubeconfig.

use crate::common;

use common::fake_kube::{external_secret, FakeKube};
use common::{spec_dir, OpenBao, Run, World};
use serde_json::{json, Value};

const ENV: &str = "auh1-dev";
const FOLDER: &str = "ask/core-service/auh1-dev";

/// Two environments on one mount: `auh1-prod`'s paths are named by the spec too, so the mount
/// scan of `auh1-dev` must not take them for orphans.
const SPEC: &str = r#"
name = "core-service"
[vault]
mount = "secret"
path = "ask/core-service/{env}"
[environments.auh1-dev]
kube_namespace = "ask"
[environments.auh1-prod]
kube_namespace = "ask-prod"
[eso]
external_secrets = ["core-service-secret"]
[vso]
static_secrets = ["db"]
auth_mount = "kubernetes"
auth_role = "ask-core-service"
[secrets.API_KEY]
description = "an API key"
fields.password = { generator = "hex32" }
[secrets.db]
description = "a database login"
fields.password = { generator = "password" }
fields.username = { generator = "uuid" }
"#;

/// Both environments applied; a cluster whose ExternalSecret and VaultStaticSecret read only
/// named paths.
fn world() -> World {
    let w = World::new(SPEC);
    for env in [ENV, "auh1-prod"] {
        w.apply(env);
    }
    let kube = &w.kube;
    kube.put(external_secret(
        "ask",
        "core-service-secret",
        &[
            ("API_KEY", &format!("{FOLDER}/API_KEY"), Some("password")),
            ("DB_USER", &format!("secret/{FOLDER}/db"), Some("username")),
        ],
    ));
    kube.put(vault_static_secret(
        "ask",
        "db",
        "secret",
        &format!("{FOLDER}/db"),
    ));
    w
}

/// A VaultStaticSecret as VSO v1.4.1's CRD shapes it, reading `mount`/`path`.
fn vault_static_secret(ns: &str, name: &str, mount: &str, path: &str) -> Value {
    json!({
        "apiVersion": "secrets.hashicorp.com/v1beta1",
        "kind": "VaultStaticSecret",
        "metadata": {"name": name, "namespace": ns, "generation": 1},
        "spec": {
            "mount": mount, "path": path, "type": "kv-v2",
            "destination": {"name": name, "create": true},
            "refreshAfter": "30s",
        },
    })
}

impl World {
    fn audit(&self, args: &[&str]) -> Run {
        self.run(&["audit", ENV]).args(args)
    }

    /// `API_KEY` written again with `extra` fields besides its own.
    fn add_fields(&self, extra: Value) {
        let path = format!("{FOLDER}/API_KEY");
        let (mut data, _) = self.bao.kv_get("secret", &path).unwrap();
        data.extend(extra.as_object().unwrap().clone());
        self.bao.kv_put("secret", &path, Value::Object(data));
    }

    /// Every value under the mount, to prove none is printed.
    fn values(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut folders = vec![String::new()];
        while let Some(f) = folders.pop() {
            let (status, list) = self.bao.api("LIST", &format!("secret/metadata/{f}"), None);
            if status != 200 {
                continue;
            }
            for key in list["data"]["keys"].as_array().unwrap() {
                let key = key.as_str().unwrap();
                let path = format!("{f}{key}");
                if key.ends_with('/') {
                    folders.push(path);
                } else if let Some((data, _)) = self.bao.kv_get("secret", &path) {
                    out.extend(data.values().filter_map(|v| v.as_str()).map(str::to_string));
                }
            }
        }
        assert!(out.len() >= 6, "{out:?}");
        out
    }

    fn never_shows_a_value(&self, mut run: Run) -> Run {
        for v in self.values() {
            run = run.never_shows(v);
        }
        run
    }
}

/// The findings of a JSON document of `kind`.
fn of_kind<'a>(doc: &'a Value, kind: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

#[test]
fn a_clean_environment_exits_0_and_its_json_says_what_was_looked_at() {
    let w = world();
    w.audit(&[]).stdout_has("nothing found").output();
    let out = w.audit(&["-o", "json"]).output();
    let doc = out.json();
    assert_eq!(doc["command"], "audit");
    assert_eq!(doc["env"], ENV);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["kube_checked"], true);
    assert_eq!(doc["mount_scanned"], true);
    assert_eq!(doc["findings"], json!([]));
    assert_eq!(
        doc["counts"],
        json!({"orphans": 0, "not_checked": 0, "notes": 0})
    );
    let s = &doc["scanned"];
    assert_eq!(s["folders"], 1);
    assert_eq!(s["secrets_read"], 2);
    assert_eq!(s["mounts_scanned"], json!(["secret"]));
    assert_eq!(s["namespaces"], json!(["ask"]));
    assert_eq!(s["external_secrets"], 1);
    assert_eq!(s["vault_static_secrets"], 1);
    // auh1-prod's two paths were looked at, and are named by the spec.
    assert_eq!(s["metadata_reads"], 0, "{doc}");
    assert_eq!(w.kube.unknown_requests(), Vec::<String>::new());
}

#[test]
fn a_path_in_a_specs_folder_that_no_spec_names_is_an_orphan() {
    let w = world();
    w.bao.kv_put(
        "secret",
        &format!("{FOLDER}/OLD_KEY"),
        json!({"password": "s3cr3t-old-key"}),
    );
    w.bao.kv_put(
        "secret",
        &format!("{FOLDER}/retired/deeper"),
        json!({"x": "s3cr3t-deeper"}),
    );
    w.never_shows_a_value(w.audit(&[]))
        .status(1)
        .stdout_has(format!("secret/{FOLDER}/OLD_KEY"))
        .stdout_has(format!("secret/{FOLDER}/retired/deeper"))
        .stdout_has("in the folder of `core-service`, and no spec names it")
        .stdout_has("2 orphan(s), 0 not checked")
        .output();
    let doc = w.audit(&["-o", "json"]).status(1).output().json();
    let found = of_kind(&doc, "unnamed-path");
    assert_eq!(found.len(), 2, "{doc}");
    assert_eq!(found[0]["mount"], "secret");
    assert_eq!(found[0]["path"], format!("{FOLDER}/OLD_KEY"));
    assert_eq!(found[0]["severity"], "orphan");
    assert_eq!(found[0]["app"], "core-service");
    assert_eq!(doc["ok"], false);
}

#[test]
fn a_path_elsewhere_on_the_mount_marked_as_vault_seeds_is_an_orphan() {
    let w = world();
    let retired = "ask/retired-app/auh1-dev/TOKEN";
    w.bao
        .kv_put("secret", retired, json!({"password": "s3cr3t-retired"}));
    let (s, b) = w.bao.api(
        "POST",
        &format!("secret/metadata/{retired}"),
        Some(&json!({"custom_metadata": {"managed-by": "vault-seed", "vault-seed/spec": "retired-app.toml"}})),
    );
    assert!(s == 200 || s == 204, "{b}");
    // Not vault-seed's: left out.
    w.bao
        .kv_put("secret", "team/hand-made", json!({"k": "s3cr3t-hand-made"}));
    w.never_shows_a_value(w.audit(&[]))
        .status(1)
        .stdout_has(format!("secret/{retired}"))
        .stdout_has(
            "marked as made by vault-seed (spec `retired-app.toml`), and no spec names it now",
        )
        .stdout_lacks("hand-made")
        .stdout_lacks("auh1-prod")
        .output();
    let doc = w.audit(&["-o", "json"]).status(1).json();
    let found = of_kind(&doc, "marked-path");
    assert_eq!(found.len(), 1, "{doc}");
    assert_eq!(found[0]["path"], retired);
    assert_eq!(found[0]["spec_file"], "retired-app.toml");
    // Only the paths no spec names had their metadata read.
    assert_eq!(doc["scanned"]["metadata_reads"], 2, "{doc}");
    // Skipped, the scan finds nothing and says it was skipped.
    w.audit(&["--skip-mount-scan"])
        .stdout_has("mount scan skipped (--skip-mount-scan)")
        .stdout_lacks("retired-app")
        .output();
}

#[test]
fn a_field_the_spec_does_not_name_is_an_orphan_named_clean_never_its_value() {
    let w = world();
    w.add_fields(json!({
        "legacy": "s3cr3t-legacy-value",
        "evil\u{1b}]0;pwned\u{7}\u{202e}": "s3cr3t-evil-value",
    }));
    let out = w
        .never_shows_a_value(w.audit(&[]))
        .status(1)
        .stdout_has("field `legacy` of secret `API_KEY`: the spec does not name it")
        .stdout_has("evil\\u{1b}]0;pwned\\u{7}\\u{202e}")
        .stdout_lacks("\u{1b}]0;")
        .output();
    assert!(!out.stdout_text().contains('\u{202e}'));
    let doc = w.audit(&["-o", "json"]).status(1).json();
    let found = of_kind(&doc, "unnamed-field");
    assert_eq!(found.len(), 2, "{doc}");
    assert!(found
        .iter()
        .any(|f| f["field"] == "legacy" && f["secret"] == "API_KEY"));
}

#[test]
fn consumers_of_paths_nobody_seeds_are_orphans_and_unreadable_ones_not_checked() {
    let w = world();
    w.kube.put(external_secret(
        "ask",
        "stale",
        &[
            ("GONE", &format!("{FOLDER}/GONE"), Some("password")),
            ("ELSEWHERE", "ask/other-app/auh1-dev/X", Some("password")),
        ],
    ));
    w.kube.put(vault_static_secret(
        "ask",
        "stale-vss",
        "secret",
        &format!("{FOLDER}/GONE_TOO"),
    ));
    // A key from the cluster that would act on a terminal, and is long: escaped and capped.
    let hostile = format!("{FOLDER}/\u{1b}[2J\u{202e}{}", "A".repeat(3000));
    w.kube.put(external_secret(
        "ask",
        "hostile",
        &[("H", &hostile, Some("password"))],
    ));
    let mut finder = external_secret("ask", "finder", &[]).0;
    finder["spec"]["dataFrom"] = json!([{"find": {"name": {"regexp": ".*"}}}]);
    w.kube.put(finder);
    let mut odd = external_secret("ask", "odd", &[("K", "x", None)]).0;
    odd["spec"]["data"][0]["remoteRef"]["key"] = json!(42);
    w.kube.put(odd);
    w.never_shows_a_value(w.audit(&[]))
        .status(1)
        .stdout_has("ExternalSecret ask/stale")
        .stdout_has(format!(
            "reads `{FOLDER}/GONE`, under the specs' folders, and no spec names it"
        ))
        .stdout_has("VaultStaticSecret ask/stale-vss")
        .stdout_has(format!("reads `secret/{FOLDER}/GONE_TOO`"))
        .stdout_has("ExternalSecret `ask/finder`")
        .stdout_has("`dataFrom.find`")
        .stdout_has("ExternalSecret `ask/odd`")
        .stdout_lacks("other-app")
        .stdout_has("ExternalSecret ask/hostile")
        .stdout_has(format!("{FOLDER}/\\u{{1b}}[2J\\u{{202e}}AAAA"))
        .stdout_has("… (2531 more characters)")
        .stdout_lacks("\u{1b}[2J")
        .stdout_lacks("\u{202e}")
        .output();
    let doc = w.audit(&["-o", "json"]).status(1).json();
    let found = of_kind(&doc, "orphan-consumer");
    assert_eq!(found.len(), 3, "{doc}");
    assert_eq!(found[0]["name"], "hostile");
    let found = &found[1..];
    assert_eq!(found[0]["object_kind"], "ExternalSecret");
    assert_eq!(found[0]["namespace"], "ask");
    assert_eq!(found[0]["name"], "stale");
    assert_eq!(found[0]["reads"], format!("{FOLDER}/GONE"));
    assert_eq!(found[1]["object_kind"], "VaultStaticSecret");
    let not_checked = of_kind(&doc, "not-checked");
    assert_eq!(not_checked.len(), 2, "{doc}");
    assert!(not_checked.iter().all(|f| f["severity"] == "not-checked"));
}

#[test]
fn a_denied_list_is_reported_not_checked_and_the_audit_goes_on() {
    let w = world();
    w.add_fields(json!({"legacy": "s3cr3t-legacy-value"}));
    w.bao.put_policy(
        "read-only",
        r#"path "secret/data/*" { capabilities = ["read"] }
path "secret/metadata/*" { capabilities = ["read"] }
path "sys/internal/ui/mounts/*" { capabilities = ["read"] }"#,
    );
    let token = w.bao.token_with_policies(&["read-only"]);
    w.never_shows_a_value(w.audit(&[]).token(&token))
        .status(1)
        .stdout_has(format!("folder `secret/{FOLDER}`"))
        .stdout_has("the token may not `list` it")
        .stdout_has("field `legacy` of secret `API_KEY`")
        .stderr_lacks("error:")
        .never_shows(&token)
        .output();
    let doc = w.audit(&["-o", "json"]).token(&token).status(1).json();
    assert_eq!(doc["ok"], false);
    assert!(!of_kind(&doc, "not-checked").is_empty(), "{doc}");
}

#[test]
fn skip_kube_sends_nothing_to_the_cluster() {
    let w = world();
    w.kube.put(external_secret(
        "ask",
        "stale",
        &[("GONE", &format!("{FOLDER}/GONE"), Some("password"))],
    ));
    w.audit(&["--skip-kube"])
        .stdout_has("cluster skipped (--skip-kube)")
        .stdout_lacks("stale")
        .output();
    assert_eq!(w.kube.requests(), Vec::new());
    let doc = w.audit(&["--skip-kube", "-o", "json"]).json();
    assert_eq!(doc["kube_checked"], false);
    assert_eq!(w.kube.requests(), Vec::new());
}

#[test]
fn the_scan_bound_reached_is_not_checked_never_clean() {
    let w = world();
    let doc = w
        .audit(&["--max-scan-requests", "1", "-o", "json"])
        .status(1)
        .output();
    let doc = doc.json();
    let cut: Vec<_> = of_kind(&doc, "not-checked")
        .into_iter()
        .filter(|f| {
            f["message"]
                .as_str()
                .unwrap()
                .contains("--max-scan-requests")
        })
        .collect();
    assert_eq!(cut.len(), 1, "{doc}");
    assert_eq!(cut[0]["what"], "mount `secret`");
}

/// Issue 44: a spec whose folder is `ask/` itself, in namespace `ask`, both shared with other
/// applications (the air-gap layout). What is theirs is named with `--ignore` (a Vault path as
/// `MOUNT/PATH`, an object as the place column shows it, `*` any run of characters): the audit
/// is then clean, and an ignored folder is not even listed.
#[test]
fn ignore_names_what_a_shared_folder_and_namespace_hold_of_other_applications() {
    let bao = OpenBao::dev();
    let specs = spec_dir(
        r#"
name = "core-service-airgap"
[vault]
mount = "secret"
path = "ask"
[environments.auh1-dev]
kube_namespace = "ask"
[vso]
static_secrets = ["frontend"]
[secrets.frontend]
description = "the frontend's client id"
fields.oidc_client_id = { generator = "hex32" }
"#,
    );
    Run::new(&bao)
        .specs(specs.path())
        .args(["apply", ENV])
        .output();
    // The other applications' secrets beside it, and their objects in the namespace.
    bao.kv_put(
        "secret",
        "ask/hatchet/auh1-dev/x",
        json!({"k": "s3cr3t-hatchet"}),
    );
    bao.kv_put(
        "secret",
        "ask/other-app-secret",
        json!({"k": "s3cr3t-other"}),
    );
    let kube = FakeKube::start();
    kube.put(vault_static_secret(
        "ask",
        "frontend",
        "secret",
        "ask/frontend",
    ));
    kube.put(external_secret(
        "ask",
        "hatchet-secret",
        &[("X", "ask/hatchet/auh1-dev/x", Some("k"))],
    ));
    kube.put(vault_static_secret(
        "ask",
        "other-app",
        "secret",
        "ask/other-app-secret",
    ));
    let mut finder = external_secret("ask", "hatchet-finder", &[]).0;
    finder["spec"]["dataFrom"] = json!([{"find": {"name": {"regexp": ".*"}}}]);
    kube.put(finder);
    let audit = |args: &[&str]| {
        Run::new(&bao)
            .specs(specs.path())
            .args(["audit", ENV, "--kubeconfig"])
            .arg(kube.kubeconfig())
            .args(args)
    };

    let before = audit(&["-o", "json"]).status(1).output().json();
    assert_eq!(of_kind(&before, "unnamed-path").len(), 2, "{before}");
    assert_eq!(of_kind(&before, "orphan-consumer").len(), 2, "{before}");
    assert_eq!(of_kind(&before, "not-checked").len(), 1, "{before}");

    let ignore = [
        "--ignore",
        "secret/ask/hatchet/*",
        "--ignore",
        "secret/ask/other-app-secret",
        "--ignore",
        "ExternalSecret ask/hatchet-*",
    ];
    audit(&ignore)
        .stdout_has("nothing found")
        .stdout_has("1 path(s) and 3 object(s) left out (--ignore)")
        .stdout_lacks("hatchet")
        .output();
    let doc = audit(&ignore).args(["-o", "json"]).output().json();
    assert_eq!(doc["findings"], json!([]), "{doc}");
    // A path is counted when it was seen: those under a folder left unlisted are not.
    assert_eq!(doc["scanned"]["ignored"], json!({"paths": 1, "objects": 3}));
    // `ask/hatchet/` and the folder below it were not listed.
    assert_eq!(
        before["scanned"]["lists"].as_u64().unwrap() - doc["scanned"]["lists"].as_u64().unwrap(),
        2,
        "{doc}"
    );
    // Only what matches is left out: the VaultStaticSecret reading `ask/other-app-secret` goes
    // with the path; with the path kept, it is an orphan again.
    let doc = audit(&[
        "--ignore",
        "secret/ask/hatchet/*",
        "--ignore",
        "ExternalSecret ask/hatchet-*",
        "-o",
        "json",
    ])
    .status(1)
    .output()
    .json();
    assert_eq!(of_kind(&doc, "unnamed-path").len(), 1, "{doc}");
    assert_eq!(of_kind(&doc, "orphan-consumer")[0]["name"], "other-app");

    // A pattern is checked before anything is sent, and shown escaped.
    let out = audit(&["--ignore", "secret/\u{1b}[2J*"])
        .status(2)
        .stderr_has("`--ignore` `secret/\\u{1b}[2J*` contains a control character (U+001B)")
        .output();
    assert!(!out.all_text().contains('\u{1b}'));
    audit(&["--ignore", ""])
        .status(2)
        .stderr_has("`--ignore` `` is empty")
        .output();
}
