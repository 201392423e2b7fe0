//! `import` copies into Vault the value a component wrote to a Kubernetes Secret (Zitadel's
//! admin PAT, CloudNativePG's superuser password) for each `from_secret` field, with
//! check-and-set, against a real OpenBao and the fake Kubernetes API read by the real kube
//! client; `verify` checks that Vault and the Secret agree. No value is ever shown.

use crate::common;

use common::fake_kube::{secret, FakeKube};
use common::{has, spec_dir, Run, World};
use serde_json::{json, Value};

pub(crate) const SPEC: &str = r#"
name = "zitadel"
[vault]
mount = "secret"
path = "ask/zitadel/{env}"
[environments.dev]
kube_namespace = "ask"
[eso]
policies = ["eso-zitadel"]
[secrets.ADMIN]
description = "Zitadel's admin machine user: its PAT from the setup job, and a client id"
fields.pat = { from_secret = "ask/zitadel-admin-pat:pat" }
fields.client = { generator = "uuid" }
[secrets.DB]
description = "CloudNativePG's superuser password"
fields.password = { from_secret = "ask/zitadel-psql-superuser:password" }
"#;

const ADMIN: &str = "ask/zitadel/dev/ADMIN";
const DB: &str = "ask/zitadel/dev/DB";
const PAT: &str = "zitadel-pat-Tq8vLw3nXe5RkZ1m";
const DB_PASSWORD: &str = "cnpg-superuser-Hb7s2KdQ9pW4";

/// OpenBao with nothing applied; a cluster holding both components' Secrets.
fn world() -> World {
    world_of(SPEC)
}

/// [`world`] with another spec. No run shows the Secrets' values.
pub(crate) fn world_of(spec: &str) -> World {
    let w = World::new(spec).never_shows([PAT, DB_PASSWORD]);
    w.kube.put(secret(
        "ask",
        "zitadel-admin-pat",
        &[("pat", PAT), ("other", "not-wanted")],
    ));
    w.kube.put(secret(
        "ask",
        "zitadel-psql-superuser",
        &[("username", "postgres"), ("password", DB_PASSWORD)],
    ));
    w
}

impl World {
    /// `field` of the KV path `path` on `secret`, if it holds text.
    fn field(&self, path: &str, field: &str) -> Option<String> {
        let (data, _) = self.bao.kv_get("secret", path)?;
        data.get(field)?.as_str().map(str::to_string)
    }

    /// The current version of the KV path `path` on `secret` (from its metadata), or None.
    fn current_version(&self, path: &str) -> Option<u64> {
        self.bao.kv_version("secret", path)
    }
}

/// The row of `path`'s `field` in an `import -o json` document.
fn row<'a>(doc: &'a Value, path: &str, field: &str) -> &'a Value {
    doc["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results in {doc:#}"))
        .iter()
        .find(|r| r["path"] == format!("secret/{path}") && r["field"] == field)
        .unwrap_or_else(|| panic!("no row for {path} {field} in {doc:#}"))
}

/// Paths that do not exist yet: each gets only its imported field, with `cas=0`; `apply` then
/// adds the others and keeps the imported value.
#[test]
fn an_absent_field_is_imported_and_apply_adds_the_others_later() {
    let w = world();
    let doc = w.run(&["import", "dev", "-o", "json"]).output().json();
    assert_eq!(doc["command"], "import");
    let keys: std::collections::BTreeSet<String> =
        doc.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        Some(&keys),
        crate::cli::documented_keys().get("import"),
        "the man page's keys"
    );
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["counts"], json!({"imported": 2}));
    let r = row(&doc, DB, "password");
    assert_eq!(
        (&r["outcome"], &r["secret"], &r["key"]),
        (
            &json!("imported"),
            &json!("ask/zitadel-psql-superuser"),
            &json!("password")
        )
    );
    assert_eq!(
        (&r["old_version"], &r["new_version"]),
        (&Value::Null, &json!(1))
    );
    assert_eq!(w.field(DB, "password").as_deref(), Some(DB_PASSWORD));
    assert_eq!(w.field(ADMIN, "pat").as_deref(), Some(PAT));
    assert_eq!(w.field(ADMIN, "client"), None, "only the imported field");
    w.apply("dev");
    assert_eq!(w.field(ADMIN, "pat").as_deref(), Some(PAT), "apply kept it");
    assert!(w.field(ADMIN, "client").is_some(), "apply added the other");
}

/// After `apply`, the fields hold the import marker: `apply`'s rows and `verify` say to run
/// `import` (not `set`), `--dry-run` writes nothing, and `import` replaces the marker with cas.
#[test]
fn the_marker_apply_wrote_is_replaced_and_verify_pointed_to_import() {
    let w = world();
    let out = w.apply("dev");
    has(&out.stdout_text(), "after deploy: vault-seed import dev");
    assert_eq!(
        w.field(DB, "password").as_deref(),
        Some("import-from-cluster")
    );
    let out = w.run(&["verify", "dev", "--only", "vault"]).output();
    let text = out.stdout_text();
    has(
        &text,
        "pending  secret/ask/zitadel/dev/DB  password  run: vault-seed import dev",
    );
    assert!(!text.contains("vault-seed set dev DB"), "{text}");
    let out = w
        .run(&["import", "dev", "--dry-run"])
        .stdout_has("would-replace")
        .output();
    assert!(
        !out.stdout_text().contains("replaced "),
        "{}",
        out.stdout_text()
    );
    assert_eq!(w.current_version(DB), Some(1), "a dry run writes nothing");
    let out = w.run(&["import", "dev"]).output();
    let text = out.stdout_text();
    has(&text, "replaced");
    has(&text, "secret/ask/zitadel/dev/DB");
    has(&text, "v1 -> v2");
    has(&text, "import dev: done (2 field(s): 2 replaced)");
    assert_eq!(w.field(DB, "password").as_deref(), Some(DB_PASSWORD));
    assert_eq!(w.current_version(DB), Some(2));
    assert!(w.field(ADMIN, "client").is_some(), "the other field kept");
}

/// Run again, Vault already holds the Secrets' values: `exists`, nothing written.
#[test]
fn the_same_value_again_is_exists_and_nothing_is_written() {
    let w = world();
    w.apply("dev");
    w.run(&["import", "dev"]).output();
    let before = (w.current_version(ADMIN), w.current_version(DB));
    let doc = w.run(&["import", "dev", "-o", "json"]).output().json();
    assert_eq!(doc["counts"], json!({"exists": 2}), "{doc:#}");
    assert_eq!(row(&doc, ADMIN, "pat")["new_version"], Value::Null);
    assert_eq!((w.current_version(ADMIN), w.current_version(DB)), before);
}

/// A value a person put there that differs from the Secret's: refused by the write gate (exit 2,
/// naming the path and field, help with `--force`), Vault unchanged; `--force` replaces it with
/// cas.
#[test]
fn another_value_is_refused_without_force_and_replaced_with_it() {
    let w = world();
    w.apply("dev");
    w.bao
        .kv_put("secret", DB, json!({"password": "set-by-hand-0123456789"}));
    let out = w
        .run(&["import", "dev", "--only", "DB"])
        .status(2)
        .stdout_has("refused")
        .stdout_has("field `password` of `secret/ask/zitadel/dev/DB` holds a real value (version 2), not a placeholder; pass --force to replace it")
        .stderr_has("`vault-seed import dev --force` replaces it")
        .output();
    has(&out.stdout_text(), "import dev: NOT done");
    assert_eq!(w.current_version(DB), Some(2));
    assert_eq!(
        w.field(DB, "password").as_deref(),
        Some("set-by-hand-0123456789"),
        "Vault unchanged"
    );
    let doc = w
        .run(&["import", "dev", "--only", "DB", "--force", "-o", "json"])
        .output()
        .json();
    let r = row(&doc, DB, "password");
    assert_eq!(r["outcome"], "replaced");
    assert_eq!(
        (&r["old_version"], &r["new_version"]),
        (&json!(2), &json!(3))
    );
    assert_eq!(w.field(DB, "password").as_deref(), Some(DB_PASSWORD));
}

/// A field made from an imported one (here a template of the PAT) is made again in the same
/// write, never left made from the marker; on a path not written yet it is left to `apply`,
/// which makes it from the imported value.
#[test]
fn fields_made_from_an_imported_one_follow_it_in_the_same_write() {
    let spec = SPEC.replace(
        "fields.client = { generator = \"uuid\" }",
        "fields.client = { generator = \"uuid\" }\nfields.header = { template = \"Bearer {pat}\" }",
    );
    let w = world_of(&spec);
    w.apply("dev");
    assert_eq!(
        w.field(ADMIN, "header").as_deref(),
        Some("Bearer import-from-cluster"),
        "apply made the template from the marker"
    );
    let client = w.field(ADMIN, "client");
    let doc = w
        .run(&["import", "dev", "--only", "ADMIN", "-o", "json"])
        .output()
        .json();
    let r = row(&doc, ADMIN, "pat");
    assert_eq!(r["outcome"], "replaced");
    assert_eq!(
        (&r["old_version"], &r["new_version"]),
        (&json!(1), &json!(2)),
        "one write: {doc:#}"
    );
    assert_eq!(w.field(ADMIN, "pat").as_deref(), Some(PAT));
    assert_eq!(
        w.field(ADMIN, "header"),
        Some(format!("Bearer {PAT}")),
        "the template followed the import in the same write"
    );
    assert_eq!(w.field(ADMIN, "client"), client, "the other fields kept");

    // A path not written yet: the imported field alone, then `apply` adds the others.
    let w = world_of(&spec);
    w.run(&["import", "dev", "--only", "ADMIN"]).output();
    assert_eq!(w.field(ADMIN, "header"), None);
    w.apply("dev");
    assert_eq!(w.field(ADMIN, "header"), Some(format!("Bearer {PAT}")));
    assert_eq!(w.field(ADMIN, "pat").as_deref(), Some(PAT));
}

/// The Secret, or its key, is not there yet: not done, exit 1, nothing written.
#[test]
fn a_secret_or_key_not_there_yet_is_not_done_and_nothing_is_written() {
    let w = world();
    w.apply("dev");
    // Another cluster: the database's Secret without its key, Zitadel's not there at all.
    let w2 = World {
        kube: FakeKube::start(),
        ..w
    };
    w2.kube.put(secret(
        "ask",
        "zitadel-psql-superuser",
        &[("username", "postgres")],
    ));
    let out = w2
        .run(&["import", "dev"])
        .status(1)
        .stdout_has("Secret `ask/zitadel-psql-superuser` has no key `password` yet (the component writes it after deploy)")
        .stdout_has("Secret `ask/zitadel-admin-pat` does not exist yet, so has no key `pat` (the component writes it after deploy)")
        .stderr_has("run `vault-seed import dev` again once the components have written their Secrets")
        .output();
    has(&out.stdout_text(), "not-done");
    assert_eq!(
        (w2.current_version(ADMIN), w2.current_version(DB)),
        (Some(1), Some(1))
    );
    let doc = w2
        .run(&["import", "dev", "-o", "json"])
        .status(1)
        .output()
        .json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["counts"], json!({"not-done": 2}));
}

/// RBAC forbids reading Secrets: not checked, with the server's 403, exit 1, nothing written.
#[test]
fn a_forbidden_secret_is_not_checked() {
    let w = world();
    w.apply("dev");
    w.kube.deny("secrets");
    let doc = w
        .run(&["import", "dev", "-o", "json"])
        .status(1)
        .output()
        .json();
    let r = row(&doc, DB, "password");
    assert_eq!(r["outcome"], "not-checked");
    let detail = r["detail"].as_str().unwrap();
    assert!(
        detail.contains("forbidden to get `secrets` `ask/zitadel-psql-superuser` (403)"),
        "{detail}"
    );
    assert_eq!(
        (w.current_version(ADMIN), w.current_version(DB)),
        (Some(1), Some(1))
    );
}

/// `verify`'s part `imports`: Vault and the Secret agree → ok; differ → FAIL saying to run
/// `import --force`; a Secret that cannot be read → not checked, never ok; `--skip-kube` and
/// `--skip-target-secrets` leave it out, said.
#[test]
fn verify_compares_vault_with_the_secret() {
    let w = world();
    w.apply("dev");
    w.run(&["import", "dev"]).output();
    let verify = |extra: &[&str]| {
        let mut args = vec!["verify", "dev", "--only", "vault,imports"];
        args.extend_from_slice(extra);
        w.run(&args)
    };
    let out = verify(&[]).output();
    has(&out.stdout_text(), "ok   imports: ");
    has(&out.stdout_text(), "2 field(s) from Kubernetes Secrets");
    has(
        &out.stdout_text(),
        "verify dev: done (vault, imports checked;",
    );
    let doc = verify(&["-o", "json"]).output().json();
    assert_eq!(doc["imports"]["ok"], true);
    assert_eq!(doc["imports"]["results"][0]["status"], "agrees");
    assert!(doc["checked"]
        .as_array()
        .unwrap()
        .contains(&json!("imports")));

    // The component wrote a new password; Vault still has the old one.
    w.kube
        .update("Secret", Some("ask"), "zitadel-psql-superuser", |s| {
            s["data"]["password"] = json!("bmV3LXBhc3N3b3Jk"); // new-password
        });
    let out = verify(&[]).status(1).never_shows("new-password").output();
    let text = out.stdout_text();
    has(&text, "FAIL imports: ");
    has(&text, "Vault holds a value other than key `password` of Secret `ask/zitadel-psql-superuser`: run `vault-seed import dev --force` to copy the Secret's");
    has(&text, "verify dev: NOT done");

    w.kube.deny("secrets");
    let doc = verify(&["-o", "json"]).status(1).output().json();
    let db = &doc["imports"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["field"] == "password")
        .unwrap()
        .clone();
    assert_eq!(
        (&db["status"], &db["ok"]),
        (&json!("not-checked"), &json!(false))
    );
    assert!(
        db["message"]
            .as_str()
            .unwrap()
            .starts_with("not checked: forbidden to get `secrets`"),
        "{db:#}"
    );
    assert!(
        doc["not_checked"].as_array().unwrap().contains(
            &json!({"part": "imports", "why": "it could not be checked", "code": "could-not-check"})
        ),
        "{doc:#}"
    );
    let out = verify(&[]).status(1).output();
    has(
        &out.stdout_text(),
        "---- secret/ask/zitadel/dev/DB  password",
    );
    assert!(!out.stdout_text().contains("ok   imports"));

    for (flag, why) in [
        ("--skip-kube", "--skip-kube"),
        ("--skip-target-secrets", "--skip-target-secrets"),
    ] {
        let doc = verify(&[flag, "-o", "json"]).output().json();
        assert!(
            doc["not_checked"]
                .as_array()
                .unwrap()
                .contains(&json!({"part": "imports", "why": why, "code": "left-out"})),
            "{flag}: {doc:#}"
        );
        assert_eq!(doc["imports"], Value::Null, "{flag}");
    }
}

/// The values never show, at any verbosity, trace logs of every crate included, in text and
/// JSON, for `import` (each outcome) and `verify`.
#[test]
fn the_values_never_show_even_at_trace_level() {
    let w = world();
    w.apply("dev");
    for args in [
        &["import", "dev", "-vvv"][..],
        &["import", "dev", "-o", "json", "-vvv"],
        &["verify", "dev", "--only", "vault,imports", "-vvv"],
        &[
            "verify",
            "dev",
            "--only",
            "vault,imports",
            "-o",
            "json",
            "-vvv",
        ],
    ] {
        // Checked to have logged, so the search covers real logs, not a quiet run.
        w.run(args)
            .env("RUST_LOG", "trace")
            .stderr_has(" DEBUG vault_seed::kube")
            .output();
    }
    w.bao
        .kv_put("secret", DB, json!({"password": "set-by-hand-0123456789"}));
    w.run(&["import", "dev", "-vvv", "--force"])
        .env("RUST_LOG", "trace")
        .never_shows("set-by-hand-0123456789")
        .output();
}

/// A value in Vault other than its Secret's (put by hand, no `import`): the whole `verify`,
/// every other part of which passes, is not done, and says to import with `--force`.
#[test]
fn verify_is_not_done_while_vault_and_the_secret_disagree() {
    let w = world();
    w.apply("dev");
    let policy = Run::offline()
        .specs(w.specs.path())
        .args(["policy", "dev"])
        .output()
        .stdout_text();
    w.bao.put_policy("eso-zitadel", &policy);
    // By hand, not by `import`: the database's value agrees, the PAT does not.
    w.bao.kv_put("secret", DB, json!({"password": DB_PASSWORD}));
    let client = w.field(ADMIN, "client").unwrap();
    w.bao.kv_put(
        "secret",
        ADMIN,
        json!({"pat": "typed-by-hand-PAT-77", "client": client}),
    );
    let out = w
        .run(&["verify", "dev"])
        .never_shows("typed-by-hand-PAT-77")
        .status(1)
        .output();
    let text = out.stdout_text();
    has(&text, "ok   vault: 3 field(s): 3 valid");
    has(&text, "ok   policy: ");
    has(&text, "FAIL imports: ");
    has(&text, "Vault holds a value other than key `pat` of Secret `ask/zitadel-admin-pat`: run `vault-seed import dev --force`");
    has(&text, "verify dev: NOT done");
}

/// Failures are one JSON document: an environment no spec defines (exit 2, nothing sent), a
/// cluster that does not answer (exit 1, nothing written).
#[test]
fn failures_are_one_document_and_nothing_is_written() {
    let w = world();
    let doc = w
        .run(&["import", "nowhere", "-o", "json"])
        .status(2)
        .output()
        .json();
    assert_eq!(
        (&doc["command"], &doc["ok"]),
        (&json!("import"), &json!(false))
    );
    let nowhere = tempfile::tempdir().unwrap();
    let kubeconfig = nowhere.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        common::fake_kube::kubeconfig_yaml(
            &format!("http://127.0.0.1:{}", common::free_port()),
            "t",
            "fake",
        ),
    )
    .unwrap();
    let doc = Run::new(&w.bao)
        .specs(w.specs.path())
        .args(["import", "dev", "-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .status(1)
        .output()
        .json();
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .contains("cannot reach the Kubernetes API"),
        "{doc:#}"
    );
    assert_eq!(
        (w.current_version(ADMIN), w.current_version(DB)),
        (None, None)
    );
    // Without a `from_secret` field there is nothing to import, and `--only imports` is a usage
    // error, as `--only argocd` without `[argocd]`.
    let w = World {
        specs: spec_dir(
            &SPEC
                .replace(
                    r#"{ from_secret = "ask/zitadel-admin-pat:pat" }"#,
                    r#"{ generator = "placeholder" }"#,
                )
                .replace(
                    r#"{ from_secret = "ask/zitadel-psql-superuser:password" }"#,
                    r#"{ generator = "placeholder" }"#,
                ),
        ),
        ..w
    };
    let doc = w.run(&["import", "dev", "-o", "json"]).output().json();
    assert_eq!(doc["results"], json!([]));
    assert!(
        doc["notes"][0]
            .as_str()
            .unwrap()
            .contains("nothing to import"),
        "{doc:#}"
    );
    assert_eq!(doc["findings"][0]["code"], "nothing-to-import", "{doc:#}");
    assert_eq!(doc["findings"][0]["message"], doc["notes"][0]);
    w.run(&["verify", "dev", "--only", "imports"])
        .status(2)
        .stderr_has("no field of environment `dev` has `from_secret`")
        .output();
    let doc = w
        .run(&["verify", "dev", "--only", "vault", "-o", "json"])
        .status(1) // nothing applied: missing
        .output()
        .json();
    assert_eq!(doc["imports"], Value::Null);
    assert!(
        !doc.to_string().contains("imports"),
        "no part imports: {doc:#}"
    );
}

/// Only a mount seen to be KV is written: a spec aimed at another engine's mount gets not done
/// (its reason from the mount detection `apply` uses), exit 1, and that engine gets nothing.
#[test]
fn nothing_is_written_outside_a_kv_mount() {
    let w = world();
    let (status, body) = w.bao.api(
        "POST",
        "sys/mounts/notkv",
        Some(&json!({"type": "transit"})),
    );
    assert!(status < 300, "{status} {body}");
    let w = World {
        specs: spec_dir(&SPEC.replace(r#"mount = "secret""#, r#"mount = "notkv""#)),
        ..w
    };
    let doc = w
        .run(&["import", "dev", "-o", "json"])
        .status(1)
        .output()
        .json();
    for r in doc["results"].as_array().unwrap() {
        assert_eq!(r["outcome"], "not-done", "{doc:#}");
        assert!(
            r["detail"]
                .as_str()
                .unwrap()
                .contains("mount `notkv` is a `transit` engine, not KV; nothing was written"),
            "{doc:#}"
        );
    }
    assert!(
        !w.kube
            .requests()
            .iter()
            .any(|r| r.path.contains("/secrets/")),
        "no Secret read for a path that cannot be written"
    );
}
