//! The write gate (issue 42): what `apply` protects, no other command breaks. Each case is one
//! the issue found broken through a command that was not the one fixed, against real OpenBao.

use crate::common;

use common::fake_kube::{secret, FakeKube};
use common::{OpenBao, Run};
use serde_json::{json, Map, Value};

const SPEC: &str = r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
kube_namespace = "ask"
[secrets.ZITADEL]
description = "Zitadel's masterkey secret: data is encrypted with the masterkey"
fixed = true
fields.masterkey = { generator = "masterkey" }
fields.DATABASE__PASSWORD = { generator = "password", length = 24 }
fields.ADMIN_PASSWORD = { generator = "password", length = 24 }
[secrets.TLS]
description = "a key, its certificate and its public key"
fields.k = { generator = "ecdsa-p256" }
fields.c = { generator = "x509-self-signed", key = "k", cn = "svc", days = 30 }
fields.p = { derive = { public_key = "k" } }
[secrets.FERNET]
description = "a MultiFernet keyring keeping two previous keys"
fields.key = { generator = "fernet", rotation = "keyring", keep = 2 }
[secrets.DB]
description = "CloudNativePG's superuser password, imported"
fields.password = { from_secret = "ask/cnpg-superuser:password" }
"#;

/// The masterkey Zitadel's data is encrypted with, stored under an older field name.
const REAL_KEY: &str = "4d4b5f68616e645f736565646564215f";

fn setup() -> (OpenBao, tempfile::TempDir) {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    (bao, dir)
}

fn get(bao: &OpenBao, name: &str) -> (Map<String, Value>, u64) {
    bao.kv_get("secret", &format!("app/dev/{name}"))
        .unwrap_or_else(|| panic!("{name} absent"))
}

fn fernet_ring(n: usize) -> String {
    (0..n)
        .map(|_| {
            let out = Run::offline().args(["gen", "fernet"]).output();
            out.stdout_text().trim().to_string()
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Case 1: `apply` refuses to add the spec's `masterkey` to a fixed secret that holds the real
/// key under `password`; `set` refuses it too (exit 2, nothing written), and the missing
/// `ADMIN_PASSWORD` likewise; `verify` is not done while a fixed secret holds a field no spec
/// names, even once the spec's fields are all there.
#[test]
fn set_never_extends_a_fixed_secret_and_verify_is_not_done_beside_an_unnamed_field() {
    let (bao, dir) = setup();
    let run = || Run::new(&bao).specs(dir.path()).never_shows(REAL_KEY);
    bao.kv_put(
        "secret",
        "app/dev/ZITADEL",
        json!({"password": REAL_KEY, "DATABASE__PASSWORD": "db-password-0123456789ab"}),
    );
    run()
        .args(["apply", "dev", "--only", "ZITADEL"])
        .status(1)
        .stdout_has("holds `DATABASE__PASSWORD`, `password`; the spec says `masterkey`")
        .output();
    for (field, value) in [
        ("masterkey", "0123456789abcdef0123456789abcdef"),
        ("ADMIN_PASSWORD", "admin-password-0123456789"),
    ] {
        for force in [false, true] {
            let mut r = run()
                .args(["set", "dev", &format!("ZITADEL.{field}")])
                .stdin(format!("{value}\n"));
            if force {
                r = r.arg("--force");
            }
            r.status(2)
                .stderr_has("`secret/app/dev/ZITADEL` is fixed, and holds")
                .stderr_has("nothing was written")
                .never_shows(value)
                .output();
        }
    }
    assert_eq!(get(&bao, "ZITADEL").1, 1, "nothing written");
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .output();
    // Every field the spec names, by hand, beside the old `password`: still not done.
    bao.kv_put(
        "secret",
        "app/dev/ZITADEL",
        json!({
            "password": REAL_KEY,
            "masterkey": "0123456789abcdef0123456789abcdef",
            "DATABASE__PASSWORD": "db-password-0123456789ab",
            "ADMIN_PASSWORD": "admin-password-0123456789",
        }),
    );
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .stdout_has("also holds `password`, which no spec names")
        .output();
}

/// Case 2: with only the certificate left, `apply` never makes a new key under it (nor the
/// public key made from that new key): the fields are refused, nothing is written, exit 1; and
/// `verify` says why.
#[test]
fn apply_never_makes_a_key_under_an_existing_certificate() {
    let (bao, dir) = setup();
    let run = || Run::new(&bao).specs(dir.path());
    run().args(["apply", "dev", "--only", "TLS"]).output();
    let (data, _) = get(&bao, "TLS");
    let cert = data["c"].clone();
    bao.kv_put("secret", "app/dev/TLS", json!({ "c": cert }));
    for command in ["plan", "apply"] {
        run()
            .args([command, "dev", "--only", "TLS"])
            .status(1)
            .stdout_has("field `k` of `secret/app/dev/TLS` would get a new value while `c` (made from its old value) stays")
            .output();
    }
    let (data, version) = get(&bao, "TLS");
    assert_eq!(version, 2, "nothing written");
    assert_eq!(data.keys().collect::<Vec<_>>(), ["c"]);
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .stdout_has("would get a new value while `c`")
        .output();
    // `rotate` makes the key and everything made from it in one write.
    bao.kv_put(
        "secret",
        "app/dev/TLS",
        json!({ "c": cert, "k": "not-a-key", "p": "x" }),
    );
    run().args(["rotate", "dev", "TLS.k", "--yes"]).output();
    run()
        .args(["apply", "dev", "--only", "TLS"])
        .stdout_has("3 exist")
        .output();
}

/// Case 3: a keyring never holds more than `keep` previous keys after a command: `set --force`
/// of a longer list is refused (exit 2); one written by hand is not done in `verify`; `rotate`
/// says how many keys it drops.
#[test]
fn a_keyring_never_holds_more_than_keep_previous_keys() {
    let (bao, dir) = setup();
    let run = || Run::new(&bao).specs(dir.path());
    run().args(["apply", "dev", "--only", "FERNET"]).output();
    let long = fernet_ring(6);
    run()
        .args(["set", "dev", "FERNET", "--force"])
        .stdin(format!("{long}\n"))
        .status(2)
        .stderr_has("holds 6 keys; the keyring keeps the newest and at most 2 previous (3 in all)")
        .never_shows(&long)
        .output();
    assert_eq!(get(&bao, "FERNET").1, 1, "nothing written");
    let ok = fernet_ring(3);
    run()
        .args(["set", "dev", "FERNET", "--force"])
        .stdin(format!("{ok}\n"))
        .output();
    bao.kv_put("secret", "app/dev/FERNET", json!({ "key": long }));
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .stdout_has("holds 6 keys")
        .never_shows(&long)
        .output();
    run()
        .args(["rotate", "dev", "FERNET", "--dry-run"])
        .stderr_has("would drop 4 old key(s)")
        .output();
    run()
        .args(["rotate", "dev", "FERNET", "--yes"])
        .stderr_has("2 previous key(s) kept, 4 older key(s) dropped")
        .output();
    let (data, _) = get(&bao, "FERNET");
    assert_eq!(data["key"].as_str().unwrap().split(',').count(), 3);
}

/// Case 4: a Secret whose key holds the import marker itself is never imported over a real
/// value, even with `--force` (exit 2, Vault unchanged).
#[test]
fn import_never_stores_its_marker_over_a_real_value() {
    let (bao, dir) = setup();
    let kube = FakeKube::start();
    kube.put(secret(
        "ask",
        "cnpg-superuser",
        &[("password", "import-from-cluster")],
    ));
    bao.kv_put(
        "secret",
        "app/dev/DB",
        json!({"password": "the-real-password-0123"}),
    );
    for force in [false, true] {
        let mut r = Run::new(&bao)
            .specs(dir.path())
            .args(["import", "dev", "--only", "DB", "--kubeconfig"])
            .arg(kube.kubeconfig());
        if force {
            r = r.arg("--force");
        }
        r.status(2)
            .stdout_has("refused")
            .stdout_has("a marker never replaces a real value")
            .never_shows("the-real-password-0123")
            .output();
    }
    let (data, version) = get(&bao, "DB");
    assert_eq!(version, 1);
    assert_eq!(data["password"], "the-real-password-0123");
    // Where Vault holds the marker too, the Secret's marker is no value either: not "exists".
    bao.kv_put(
        "secret",
        "app/dev/DB",
        json!({"password": "import-from-cluster"}),
    );
    Run::new(&bao)
        .specs(dir.path())
        .args(["import", "dev", "--only", "DB", "--kubeconfig"])
        .arg(kube.kubeconfig())
        .status(2)
        .stdout_has("is the marker itself, not a real value")
        .output();
    assert_eq!(get(&bao, "DB").1, 2);
}

/// The specs before and after a layout change: the same spec file, environment and secrets,
/// the folder moved from `ask/{env}` to `ask`.
fn layout(folder: &str, addr: &str) -> String {
    format!(
        r#"
[vault]
mount = "secret"
path = "{folder}"
[environments.auh1-dev]
vault_addr = "{addr}"
[secrets.zitadel-secret-kv]
description = "Zitadel's masterkey: data is encrypted with it"
fixed = true
fields.masterkey = {{ generator = "masterkey" }}
[secrets.SALT]
description = "a salt that may be made again"
fields.value = {{ generator = "hex32" }}
"#
    )
}

/// Case 5: a layout change never mints a fixed value silently. `plan`, `apply` and `verify`
/// find the secret vault-seed made for the same spec, environment and name at the old path: the
/// fixed one is not created (exit 1, naming the old path and the `move` command); the salt, which
/// may be made again, is. `move` copies the old data with cas=0, marks the old path, deletes nothing,
/// and refuses to write over a secret or to move data that fails the spec's checks.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn a_layout_change_never_mints_a_fixed_value_and_move_copies_it() {
    let bao = OpenBao::dev();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("core-service.toml");
    std::fs::write(&spec, layout("ask/{env}", &bao.addr)).unwrap();
    let run = || Run::new(&bao).specs(dir.path());
    run().args(["apply", "auh1-dev"]).output();
    let (old, _) = bao
        .kv_get("secret", "ask/auh1-dev/zitadel-secret-kv")
        .unwrap();
    let key = old["masterkey"].as_str().unwrap().to_string();
    std::fs::write(&spec, layout("ask", &bao.addr)).unwrap();
    let old_path = "secret/ask/auh1-dev/zitadel-secret-kv";
    for command in ["plan", "apply"] {
        run()
            .args([command, "auh1-dev"])
            .status(1)
            .stdout_has(format!("is at `{old_path}`"))
            .stdout_has(format!(
                "`vault-seed move auh1-dev zitadel-secret-kv --from {old_path}`"
            ))
            .never_shows(&key)
            .output();
    }
    assert!(
        bao.kv_get("secret", "ask/zitadel-secret-kv").is_none(),
        "no new masterkey minted"
    );
    run()
        .args(["verify", "auh1-dev", "--only", "vault"])
        .status(1)
        .stdout_has(format!("is at `{old_path}`"))
        .output();
    assert!(
        bao.kv_get("secret", "ask/SALT").is_some(),
        "the salt is made"
    );
    // A move over a secret that is there is refused.
    run()
        .args([
            "move",
            "auh1-dev",
            "SALT",
            "--from",
            "secret/ask/auh1-dev/SALT",
        ])
        .status(1)
        .stderr_has("`secret/ask/SALT` holds a secret already (version 1)")
        .output();
    // Bad input: a path off the mount.
    run()
        .args([
            "move",
            "auh1-dev",
            "zitadel-secret-kv",
            "--from",
            "secret/../x",
        ])
        .status(2)
        .output();
    let doc = run()
        .args([
            "move",
            "auh1-dev",
            "zitadel-secret-kv",
            "--from",
            old_path,
            "-o",
            "json",
        ])
        .never_shows(&key)
        .output()
        .json();
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "command",
            "env",
            "fields",
            "from",
            "new_version",
            "notes",
            "ok",
            "path"
        ]
    );
    assert_eq!(doc["path"], "secret/ask/zitadel-secret-kv");
    assert_eq!(doc["new_version"], 1);
    let (moved, version) = bao.kv_get("secret", "ask/zitadel-secret-kv").unwrap();
    assert_eq!((moved, version), (old.clone(), 1), "the data as it was");
    let (kept, _) = bao
        .kv_get("secret", "ask/auh1-dev/zitadel-secret-kv")
        .unwrap();
    assert_eq!(kept, old, "the old path is kept");
    let (_, meta) = bao.api(
        "GET",
        "secret/metadata/ask/auh1-dev/zitadel-secret-kv",
        None,
    );
    assert_eq!(
        meta["data"]["custom_metadata"]["vault-seed/moved-to"],
        "secret/ask/zitadel-secret-kv"
    );
    let (_, meta) = bao.api("GET", "secret/metadata/ask/zitadel-secret-kv", None);
    assert_eq!(
        meta["data"]["custom_metadata"]["vault-seed/env"],
        "auh1-dev"
    );
    assert_eq!(
        meta["data"]["custom_metadata"]["vault-seed/secret"],
        "zitadel-secret-kv"
    );
    // Done now: the old path, marked as moved, is no longer taken for the secret.
    run()
        .args(["apply", "auh1-dev"])
        .stdout_lacks("is at `secret/ask/auh1-dev")
        .output();
}

/// `move` of data that fails the spec's checks, or lacks a fixed field under the spec's name,
/// is refused (exit 1) and writes nothing.
#[test]
fn move_refuses_data_that_fails_the_specs_checks() {
    let bao = OpenBao::dev();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("core-service.toml"),
        layout("ask", &bao.addr),
    )
    .unwrap();
    let run = || Run::new(&bao).specs(dir.path());
    bao.kv_put("secret", "old/zk", json!({"masterkey": "too-short"}));
    run()
        .args([
            "move",
            "auh1-dev",
            "zitadel-secret-kv",
            "--from",
            "secret/old/zk",
        ])
        .status(1)
        .stderr_has("the value for field `masterkey` of `secret/ask/zitadel-secret-kv`")
        .never_shows("too-short")
        .output();
    bao.kv_put("secret", "old/zk2", json!({"key": REAL_KEY}));
    run()
        .args(["move", "auh1-dev", "zitadel-secret-kv", "--from", "old/zk2"])
        .status(1)
        .stderr_has("not fixed field(s) `masterkey` the spec names")
        .output();
    assert!(bao.kv_get("secret", "ask/zitadel-secret-kv").is_none());
}

/// An input is never made anew while a value made from its old one stays in another secret: with
/// the source deleted and its copy still in Vault, `plan` and `apply` refuse to make the source
/// (exit 1, naming the copy), and nothing is written.
#[test]
fn apply_never_remakes_a_source_whose_copy_stays() {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&format!(
        r#"
[vault]
mount = "secret"
path = "app/{{env}}"
[environments.dev]
vault_addr = "{}"
[secrets.DB]
description = "the database password"
fields.password = {{ generator = "hex32" }}
[secrets.APP]
description = "the application's copy of it"
fields.db_password = {{ copy = "DB.password" }}
"#,
        bao.addr
    ));
    let run = || Run::new(&bao).specs(dir.path());
    run().args(["apply", "dev"]).output();
    let (copy, _) = get(&bao, "APP");
    let (status, _) = bao.api("DELETE", "secret/metadata/app/dev/DB", None);
    assert_eq!(status, 204);
    for command in ["plan", "apply"] {
        run()
            .args([command, "dev"])
            .status(1)
            .stdout_has("`secret/app/dev/DB` is absent, and `secret/app/dev/APP` holds `db_password` made from its old value")
            .output();
    }
    assert!(
        bao.kv_get("secret", "app/dev/DB").is_none(),
        "no new source"
    );
    assert_eq!(get(&bao, "APP"), (copy, 1), "the copy unchanged");
}
