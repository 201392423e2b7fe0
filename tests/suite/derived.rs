//! Issue 33, items 2 and 3: fields made from other fields (`template`, `copy`, `derive`,
//! `x509-self-signed`) against real OpenBao. Each is written after its inputs, never without
//! them; `verify` compares it with its inputs without printing either; one made from a
//! placeholder is pending and follows `set`; rotating a source rewrites what is made from it, in
//! its secret and in others, in the same run.

use crate::common;

use base64::Engine as _;
use common::{OpenBao, Run};
use serde_json::{json, Value};

/// `K` comes first, yet reads `DB`: the engine must seed `DB` first.
const SPEC: &str = r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
[secrets.K]
description = "the application's connection settings"
fields.password = { generator = "password", length = 24 }
fields.dsn = { template = "postgresql://core:{password}@pg.ask.svc:5432/core?db={DB.password|base64}" }
fields.db_password = { copy = "DB.password" }
[secrets.DB]
description = "the database's password"
fields.password = { generator = "password", length = 24, rotation = "replace" }
[secrets.PULL]
description = "registry pull secret"
fields.password = { generator = "placeholder", marker = "fill-me" }
fields.dockerconfigjson = { template = "{{\"auths\":{{\"harbor.local\":{{\"auth\":\"{robot|base64}\"}}}}}}" }
fields.robot = { template = "robot$core:{password}" }
"#;

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The field `field` of `path` under `secret/`.
fn value(bao: &OpenBao, path: &str, field: &str) -> String {
    let (data, _) = bao.kv_get("secret", path).unwrap();
    data[field].as_str().unwrap().to_string()
}

#[test]
fn templates_and_copies_are_made_after_their_sources_and_judged_against_them() {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    let run = || Run::new(&bao).specs(dir.path()).env("RUST_LOG", "trace");
    let first = run().args(["apply", "dev", "-o", "json", "-vvv"]).output();
    let doc = first.json();
    for f in ["password", "dsn", "db_password"] {
        assert_eq!(
            common::field_outcome(&doc, "app/dev/K", f).0,
            "created",
            "{f}"
        );
    }
    let password = value(&bao, "app/dev/K", "password");
    let db = value(&bao, "app/dev/DB", "password");
    assert_eq!(
        value(&bao, "app/dev/K", "dsn"),
        format!(
            "postgresql://core:{password}@pg.ask.svc:5432/core?db={}",
            b64(&db)
        )
    );
    assert_eq!(value(&bao, "app/dev/K", "db_password"), db);
    let again = run().args(["apply", "dev", "-vvv"]).output();
    assert_eq!(bao.kv_version("secret", "app/dev/K"), Some(1));
    let verified = run().args(["verify", "dev", "--only", "vault"]).output();
    // Someone changes the source by hand: the copy and the template no longer agree with it.
    bao.kv_put(
        "secret",
        "app/dev/DB",
        json!({ "password": "a-new-db-password-24chr!" }),
    );
    let out = run()
        .args(["verify", "dev", "--only", "vault", "-vvv"])
        .status(1)
        .output();
    let text = out.stdout_text();
    common::has(
        &text,
        "invalid  secret/app/dev/K  dsn  does not match its source",
    );
    common::has(
        &text,
        "invalid  secret/app/dev/K  db_password  does not match its source `DB.password`",
    );
    // apply never overwrites what exists: it says so, and writes nothing.
    let applied = run()
        .args(["apply", "dev", "-o", "json"])
        .status(1)
        .output();
    assert_eq!(
        common::field_outcome(&applied.json(), "app/dev/K", "db_password").0,
        "invalid"
    );
    assert_eq!(bao.kv_version("secret", "app/dev/K"), Some(1));
    for o in [&first, &again, &verified, &out, &applied] {
        let all = o.all_text();
        for v in [&password, &db, &"a-new-db-password-24chr!".to_string()] {
            assert!(!all.contains(v.as_str()), "a value is in the output");
            assert!(!all.contains(&b64(v)), "a value's base64 is in the output");
        }
    }
}

#[test]
fn a_template_of_a_placeholder_is_pending_and_follows_set_in_the_same_write() {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    let run = || Run::new(&bao).specs(dir.path());
    run().args(["apply", "dev"]).output();
    let out = run().args(["verify", "dev", "--only", "vault"]).output();
    common::has(
        &out.stdout_text(),
        "pending  secret/app/dev/PULL  dockerconfigjson  made from `robot`, still to be filled in",
    );
    common::has(
        &out.stdout_text(),
        "pending  secret/app/dev/PULL  robot  made from `password`, still to be filled in",
    );
    // A derived field is never set by hand.
    run()
        .args(["set", "dev", "PULL.robot", "--skip-kube"])
        .stdin("x")
        .status(2)
        .stderr_has("is made from other fields")
        .output();
    let set = run()
        .args(["set", "dev", "PULL.password", "--skip-kube", "-o", "json"])
        .stdin("s3cret-robot-token")
        .output()
        .json();
    assert_eq!(
        set["fields"],
        json!(["password", "robot", "dockerconfigjson"])
    );
    assert_eq!(bao.kv_version("secret", "app/dev/PULL"), Some(2));
    let auth = b64("robot$core:s3cret-robot-token");
    let doc: Value =
        serde_json::from_str(&value(&bao, "app/dev/PULL", "dockerconfigjson")).unwrap();
    assert_eq!(doc["auths"]["harbor.local"]["auth"], json!(auth));
    let out = run().args(["verify", "dev", "--only", "vault"]).output();
    assert!(
        !out.stdout_text().contains("pending"),
        "{}",
        out.stdout_text()
    );
}

#[test]
fn rotating_a_source_rewrites_what_is_made_from_it_in_the_same_run() {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    let run = || Run::new(&bao).specs(dir.path());
    run().args(["apply", "dev"]).output();
    let dry = run()
        .args([
            "rotate",
            "dev",
            "DB.password",
            "--dry-run",
            "--skip-kube",
            "-o",
            "json",
        ])
        .output()
        .json();
    assert_eq!(dry["followed"][0]["path"], json!("secret/app/dev/K"));
    assert_eq!(bao.kv_version("secret", "app/dev/K"), Some(1));
    let out = run()
        .args(["rotate", "dev", "DB.password", "--yes", "--skip-kube"])
        .output();
    common::has(
        &out.stdout_text(),
        "followed  secret/app/dev/K  dsn,db_password  v1 -> v2",
    );
    let db = value(&bao, "app/dev/DB", "password");
    assert_eq!(value(&bao, "app/dev/K", "db_password"), db);
    assert!(value(&bao, "app/dev/K", "dsn").ends_with(&format!("?db={}", b64(&db))));
    run().args(["verify", "dev", "--only", "vault"]).output();
    // A copy changed by hand is made again from its source by `rotate` of the copy.
    let (mut data, _) = bao.kv_get("secret", "app/dev/K").unwrap();
    data["db_password"] = json!("changed-by-hand");
    bao.kv_put("secret", "app/dev/K", Value::Object(data));
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .output();
    run()
        .args(["rotate", "dev", "K.db_password", "--yes", "--skip-kube"])
        .output();
    assert_eq!(value(&bao, "app/dev/K", "db_password"), db);
    run().args(["verify", "dev", "--only", "vault"]).output();
    assert!(!out.all_text().contains(&db));
}

/// A copy of a secret another application provides, absent yet: the copy is not written (never
/// without its source), the secret's other fields are; once the source is there, `apply` adds
/// the copy.
#[test]
fn a_copy_whose_source_has_no_value_waits_and_is_added_once_it_has() {
    let bao = OpenBao::dev();
    let spec = r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
[secrets.APP]
description = "the application's settings"
fields.salt = { generator = "hex32" }
fields.db_password = { copy = "PG.password" }
[secrets.PG]
description = "pushed by the database operator"
provided_by = "cnpg"
path = "db/{env}/pg"
fields.password = {}
"#
    .replace("{addr}", &bao.addr);
    let dir = common::spec_dir(&spec);
    let run = || Run::new(&bao).specs(dir.path());
    let doc = run()
        .args(["apply", "dev", "-o", "json"])
        .status(1)
        .output()
        .json();
    assert_eq!(
        common::field_outcome(&doc, "app/dev/APP", "salt").0,
        "created"
    );
    let (outcome, detail) = common::field_outcome(&doc, "app/dev/APP", "db_password");
    assert_eq!(outcome, "missing");
    assert!(
        detail.contains("made from `PG.password`, which has no value yet"),
        "{detail}"
    );
    let (data, _) = bao.kv_get("secret", "app/dev/APP").unwrap();
    assert!(
        data.get("db_password").is_none(),
        "a copy was written without its source"
    );
    bao.kv_put(
        "secret",
        "db/dev/pg",
        json!({ "password": "pushed-by-cnpg" }),
    );
    let doc = run().args(["apply", "dev", "-o", "json"]).output().json();
    assert_eq!(
        common::field_outcome(&doc, "app/dev/APP", "db_password").0,
        "extended"
    );
    assert_eq!(value(&bao, "app/dev/APP", "db_password"), "pushed-by-cnpg");
}

#[test]
fn derivations_that_cannot_be_made_are_lint_errors_at_their_place_and_nothing_is_sent() {
    let spec = r#"[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "http://127.0.0.1:9"
[secrets.A]
description = "d"
fields.x = { copy = "B.y" }
fields.t = { template = "{nope}" }
fields.k = { generator = "hex32" }
fields.p = { derive = { public_key = "k" } }
fields.g = { generator = "hex32", copy = "B.y" }
fields.c = { generator = "x509-self-signed", key = "k", cn = "a", days = 99999 }
"#;
    let dir = common::spec_dir(spec);
    let out = Run::offline()
        .specs(dir.path())
        .args(["apply", "dev"])
        .status(2)
        .output();
    let err = out.stderr_text();
    let file = "app.toml";
    for (line_col, text) in [
        (
            ":9:12",
            "field `t` of `[secrets.A]` is made from `nope`, which is not a field of the secret",
        ),
        (
            ":11:12",
            "field `p` of `[secrets.A]` is a `public_key` of `k`, which is a `hex`",
        ),
        (
            ":12:43",
            "field `g` of `[secrets.A]` has both `generator` and `copy`",
        ),
        (
            ":13:74",
            "`days = 99999` in field `c` of `[secrets.A]` is out of range",
        ),
    ] {
        common::has(&err, format!("{file}{line_col}"));
        common::has(&err, text);
    }
    common::has(&err, "nothing was sent to Vault");
    // Across secrets, once each file reads well: a secret the environment lacks, a cycle.
    let spec = r#"[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "http://127.0.0.1:9"
[secrets.A]
description = "d"
fields.x = { copy = "B.y" }
fields.m = { copy = "MISSING.y" }
[secrets.B]
description = "d"
fields.y = { template = "{A.x}!" }
"#;
    let dir = common::spec_dir(spec);
    let out = Run::offline()
        .specs(dir.path())
        .args(["apply", "dev"])
        .status(2)
        .output();
    let err = out.stderr_text();
    common::has(&err, "app.toml:6:10");
    common::has(&err, "field `m` of secret `A` is made from `MISSING.y`, but environment `dev` has no secret `MISSING`");
    common::has(
        &err,
        "fields are made from each other in environment `dev`: `A.x` -> `B.y` -> `A.x`",
    );
    common::has(&err, "nothing was sent to Vault");
}

const KEYS_SPEC: &str = r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
[secrets.TLS]
description = "the service's certificate"
fields.key = { generator = "ecdsa-p256" }
fields.crt = { generator = "x509-self-signed", key = "key", cn = "core.local", sans = ["core.local", "10.0.0.1"], days = 30 }
fields.key_pub = { derive = { public_key = "key" } }
[secrets.RSA]
description = "a signing key"
fields.rsa = { generator = "rsa", bits = 2048, rotation = "replace" }
fields.rsa_pub = { derive = { public_key = "rsa" } }
[secrets.SSH]
description = "a deploy key"
fields.ssh = { generator = "ssh-ed25519" }
fields.ssh_pub = { derive = { public_key = "ssh" } }
[secrets.ADMIN]
description = "Argo CD's admin password and its hash"
fields.password = { generator = "password", length = 24, rotation = "replace" }
fields.hash = { derive = { bcrypt = "password", cost = 10 } }
"#;

/// Whether libxcrypt, through Python's `crypt`, takes `password` for the bcrypt `hash`: a
/// bcrypt independent of the Rust crate.
fn libxcrypt_accepts(hash: &str, password: &str) -> bool {
    let script = "import sys, warnings\nwarnings.simplefilter('ignore')\nimport crypt\n\
                  h, p = sys.stdin.read().split('\\n', 1)\nprint(crypt.crypt(p, h) == h)";
    let (ok, out) = crate::keys::piped(
        "python3",
        &["-c", script],
        &format!("{hash}\n{password}"),
        "Python 3.11's crypt module (libxcrypt) checks bcrypt hashes",
    );
    assert!(ok, "python3's crypt could not check the hash");
    out.trim() == "True"
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn public_keys_certificates_and_bcrypt_hashes_are_what_openssl_and_libxcrypt_make_of_them() {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&KEYS_SPEC.replace("{addr}", &bao.addr));
    let run = || Run::new(&bao).specs(dir.path()).env("RUST_LOG", "trace");
    let mut outputs = vec![run().args(["apply", "dev", "-vvv"]).output().all_text()];
    let (tls, _) = bao.kv_get("secret", "app/dev/TLS").unwrap();
    let (key, crt) = (tls["key"].as_str().unwrap(), tls["crt"].as_str().unwrap());
    let (ok, text) = crate::keys::openssl(&["x509", "-noout", "-text"], crt);
    assert!(ok, "openssl could not read the certificate");
    common::has(&text, "Subject: CN = core.local");
    common::has(&text, "DNS:core.local, IP Address:10.0.0.1");
    common::has(&text, "CA:FALSE");
    let (_, cert_pub) = crate::keys::openssl(&["x509", "-noout", "-pubkey"], crt);
    let (_, key_pub) = crate::keys::openssl(&["pkey", "-pubout"], key);
    assert_eq!(cert_pub, key_pub, "the certificate is not for the key");
    assert_eq!(tls["key_pub"].as_str().unwrap().trim(), key_pub.trim());
    let dir_crt = tempfile::tempdir().unwrap();
    let file = dir_crt.path().join("crt.pem");
    std::fs::write(&file, crt).unwrap();
    let (ok, _) = crate::keys::openssl(&["verify", "-CAfile", file.to_str().unwrap()], crt);
    assert!(ok, "openssl does not verify the self-signed certificate");
    let (rsa, _) = bao.kv_get("secret", "app/dev/RSA").unwrap();
    let (_, rsa_pub) = crate::keys::openssl(&["pkey", "-pubout"], rsa["rsa"].as_str().unwrap());
    assert_eq!(rsa["rsa_pub"].as_str().unwrap().trim(), rsa_pub.trim());
    let (ssh, _) = bao.kv_get("secret", "app/dev/SSH").unwrap();
    let (ok, ssh_pub) = crate::keys::ssh_keygen(&["-y"], ssh["ssh"].as_str().unwrap());
    assert!(ok);
    let words: Vec<&str> = ssh_pub.split_whitespace().take(2).collect();
    assert_eq!(ssh["ssh_pub"].as_str().unwrap(), words.join(" "));
    let (admin, _) = bao.kv_get("secret", "app/dev/ADMIN").unwrap();
    let (password, hash) = (
        admin["password"].as_str().unwrap(),
        admin["hash"].as_str().unwrap(),
    );
    assert!(hash.starts_with("$2b$10$"), "not a cost-10 bcrypt hash");
    assert!(libxcrypt_accepts(hash, password));
    assert!(!libxcrypt_accepts(hash, "another password"));
    outputs.push(
        run()
            .args(["verify", "dev", "--only", "vault", "-vvv"])
            .output()
            .all_text(),
    );
    // A key replaced by hand: its public half and its certificate no longer agree with it.
    let (ok, other) = crate::keys::openssl(
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ],
        "",
    );
    assert!(ok);
    let mut changed = tls.clone();
    changed.insert("key".into(), json!(other));
    bao.kv_put("secret", "app/dev/TLS", Value::Object(changed));
    let out = run()
        .args(["verify", "dev", "--only", "vault", "-vvv"])
        .status(1)
        .output();
    common::has(
        &out.stdout_text(),
        "invalid  secret/app/dev/TLS  crt  does not match its source `key`",
    );
    common::has(
        &out.stdout_text(),
        "invalid  secret/app/dev/TLS  key_pub  does not match its source `key`",
    );
    outputs.push(out.all_text());
    // Rotating the password makes its hash again in the same write.
    run()
        .args(["rotate", "dev", "ADMIN.password", "--yes", "--skip-kube"])
        .output();
    let (admin, version) = bao.kv_get("secret", "app/dev/ADMIN").unwrap();
    assert_eq!(version, 2);
    let new = admin["password"].as_str().unwrap();
    assert_ne!(new, password);
    assert!(libxcrypt_accepts(admin["hash"].as_str().unwrap(), new));
    for o in &outputs {
        for v in [password, new, hash] {
            assert!(!o.contains(v), "a value is in the output");
        }
        for line in key.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!o.contains(line), "a line of the key is in the output");
        }
    }
}

/// A fixed secret never changes, so a source it copies cannot rotate: refused before anything is
/// written, naming the fixed secret.
#[test]
fn a_source_a_fixed_secret_copies_cannot_rotate() {
    let bao = OpenBao::dev();
    let spec = r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
[secrets.KEY]
description = "a key"
fields.value = { generator = "hex32", rotation = "replace" }
[secrets.PINNED]
description = "a copy that data is encrypted with"
fixed = true
fields.value = { copy = "KEY.value" }
"#
    .replace("{addr}", &bao.addr);
    let dir = common::spec_dir(&spec);
    let run = || Run::new(&bao).specs(dir.path());
    run().args(["apply", "dev"]).output();
    run()
        .args(["rotate", "dev", "KEY.value", "--yes", "--skip-kube"])
        .status(2)
        .stderr_has("`secret/app/dev/PINNED` is fixed")
        .output();
    assert_eq!(bao.kv_version("secret", "app/dev/KEY"), Some(1));
    assert_eq!(bao.kv_version("secret", "app/dev/PINNED"), Some(1));
}

/// A template reaches a field of its own secret whose name holds dots (`.dockerconfigjson`,
/// `tls.crt`) by a leading `.`: `{.tls.crt}` is this secret's field `tls.crt`, where `{tls.crt}`
/// is field `crt` of a secret `tls`. The error for the latter says how to write the former.
#[test]
fn a_template_reaches_a_dotted_field_of_its_own_secret_with_a_leading_dot() {
    let bao = OpenBao::dev();
    let spec = r#"[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
[secrets.PULL]
description = "a pull secret and what is made of its fields"
fields."tls.crt" = { generator = "hex32" }
fields.".dockerconfigjson" = { generator = "hex32" }
fields.both = { template = "{.tls.crt}:{..dockerconfigjson|base64}:{.tls.crt|base64}" }
"#
    .replace("{addr}", &bao.addr);
    let dir = common::spec_dir(&spec);
    Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev"])
        .output();
    let (crt, dcj) = (
        value(&bao, "app/dev/PULL", "tls.crt"),
        value(&bao, "app/dev/PULL", ".dockerconfigjson"),
    );
    assert_eq!(
        value(&bao, "app/dev/PULL", "both"),
        format!("{crt}:{}:{}", b64(&dcj), b64(&crt))
    );
    Run::new(&bao)
        .specs(dir.path())
        .args(["verify", "dev", "--only", "vault"])
        .output();

    // `{tls.crt}` is secret `tls`, field `crt`: the error names the way to this secret's field.
    let dir = common::spec_dir(&spec.replace("{.tls.crt}:", "{tls.crt}:"));
    let out = Run::offline()
        .specs(dir.path())
        .args(["lint"])
        .status(2)
        .output();
    common::has(
        &out.stderr_text(),
        "field `both` of secret `PULL` is made from `tls.crt`, but environment `dev` has no secret `tls`",
    );
    common::has(
        &out.stderr_text(),
        "secret `PULL` has a field `tls.crt`: write `{.tls.crt}` for it",
    );
}
