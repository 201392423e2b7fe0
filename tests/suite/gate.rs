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
            let out = Run::offline().args(["gen", "fernet"]).status(0).check();
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
        .check();
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
                .check();
        }
    }
    assert_eq!(get(&bao, "ZITADEL").1, 1, "nothing written");
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .check();
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
        .check();
}

/// Case 2: with only the certificate left, `apply` never makes a new key under it (nor the
/// public key made from that new key): the fields are refused, nothing is written, exit 1; and
/// `verify` says why.
#[test]
fn apply_never_makes_a_key_under_an_existing_certificate() {
    let (bao, dir) = setup();
    let run = || Run::new(&bao).specs(dir.path());
    run()
        .args(["apply", "dev", "--only", "TLS"])
        .status(0)
        .check();
    let (data, _) = get(&bao, "TLS");
    let cert = data["c"].clone();
    bao.kv_put("secret", "app/dev/TLS", json!({ "c": cert }));
    for command in ["plan", "apply"] {
        run()
            .args([command, "dev", "--only", "TLS"])
            .status(1)
            .stdout_has("field `k` of `secret/app/dev/TLS` would get a new value while `c` (made from its old value) stays")
            .check();
    }
    let (data, version) = get(&bao, "TLS");
    assert_eq!(version, 2, "nothing written");
    assert_eq!(data.keys().collect::<Vec<_>>(), ["c"]);
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .stdout_has("would get a new value while `c`")
        .check();
    // `rotate` makes the key and everything made from it in one write.
    bao.kv_put(
        "secret",
        "app/dev/TLS",
        json!({ "c": cert, "k": "not-a-key", "p": "x" }),
    );
    run()
        .args(["rotate", "dev", "TLS.k", "--yes"])
        .status(0)
        .check();
    run()
        .args(["apply", "dev", "--only", "TLS"])
        .status(0)
        .stdout_has("3 exist")
        .check();
}

/// Case 3: a keyring never holds more than `keep` previous keys after a command: `set --force`
/// of a longer list is refused (exit 2); one written by hand is not done in `verify`; `rotate`
/// says how many keys it drops.
#[test]
fn a_keyring_never_holds_more_than_keep_previous_keys() {
    let (bao, dir) = setup();
    let run = || Run::new(&bao).specs(dir.path());
    run()
        .args(["apply", "dev", "--only", "FERNET"])
        .status(0)
        .check();
    let long = fernet_ring(6);
    run()
        .args(["set", "dev", "FERNET", "--force"])
        .stdin(format!("{long}\n"))
        .status(2)
        .stderr_has("holds 6 keys; the keyring keeps the newest and at most 2 previous (3 in all)")
        .never_shows(&long)
        .check();
    assert_eq!(get(&bao, "FERNET").1, 1, "nothing written");
    let ok = fernet_ring(3);
    run()
        .args(["set", "dev", "FERNET", "--force"])
        .stdin(format!("{ok}\n"))
        .status(0)
        .check();
    bao.kv_put("secret", "app/dev/FERNET", json!({ "key": long }));
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .stdout_has("holds 6 keys")
        .never_shows(&long)
        .check();
    run()
        .args(["rotate", "dev", "FERNET", "--dry-run"])
        .status(0)
        .stderr_has("would drop 4 old key(s)")
        .check();
    run()
        .args(["rotate", "dev", "FERNET", "--yes"])
        .status(0)
        .stderr_has("2 previous key(s) kept, 4 older key(s) dropped")
        .check();
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
            .check();
    }
    let (data, version) = get(&bao, "DB");
    assert_eq!(version, 1);
    assert_eq!(data["password"], "the-real-password-0123");
}
