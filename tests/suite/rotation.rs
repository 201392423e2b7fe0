//! How values may rotate: fixed fields, `rotation = "replace" | "keyring" | "never"`, the
//! refusal of a data key whose spec does not say, fields no spec names, against real OpenBao.

use crate::common;

use std::sync::atomic::Ordering;

use common::{OpenBao, Run};
use serde_json::{json, Map, Value};

const SPEC: &str = r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
[secrets.ZITADEL]
description = "a fixed masterkey beside a password that rotates"
fields.masterkey = { generator = "masterkey", fixed = true }
fields.password = { generator = "password", length = 24, rotation = "replace" }
[secrets.FERNET]
description = "a MultiFernet keyring keeping two previous keys"
fields.key = { generator = "fernet", rotation = "keyring", keep = 2 }
[secrets.UNSTATED]
description = "data keys whose spec does not say how they rotate"
fields.fernet = { generator = "fernet" }
fields.master = { generator = "masterkey" }
[secrets.TOKEN]
description = "a token, replaced as today"
fields.password = { generator = "hex32" }
"#;

fn setup() -> (OpenBao, tempfile::TempDir) {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev"])
        .output();
    (bao, dir)
}

fn get(bao: &OpenBao, name: &str) -> (Map<String, Value>, u64) {
    bao.kv_get("secret", &format!("app/dev/{name}")).unwrap()
}

fn text(v: &Value) -> String {
    v.as_str().unwrap().to_string()
}

#[test]
fn a_fixed_field_never_rotates_and_its_neighbour_does() {
    let (bao, dir) = setup();
    let (before, _) = get(&bao, "ZITADEL");
    let run = || Run::new(&bao).specs(dir.path());
    // The whole secret: refused before anything is sent, naming the field and the command
    // that rotates the other one.
    run()
        .args(["rotate", "dev", "ZITADEL", "--yes", "-v"])
        .status(2)
        .stderr_has("field `masterkey` of `secret/app/dev/ZITADEL` is fixed")
        .stderr_has("`vault-seed rotate dev ZITADEL.password --yes`")
        .output();
    run()
        .args(["rotate", "dev", "ZITADEL.masterkey", "--yes"])
        .status(2)
        .stderr_has("is fixed")
        .output();
    run()
        .args(["set", "dev", "ZITADEL.masterkey", "--force"])
        .stdin("0123456789abcdef0123456789abcdef\n")
        .status(2)
        .stderr_has("field `masterkey` of `secret/app/dev/ZITADEL` is fixed")
        .output();
    assert_eq!(get(&bao, "ZITADEL"), (before.clone(), 1), "nothing written");
    run()
        .args(["rotate", "dev", "ZITADEL.password", "--yes"])
        .output();
    let (after, version) = get(&bao, "ZITADEL");
    assert_eq!(version, 2);
    assert_eq!(
        after["masterkey"], before["masterkey"],
        "the fixed field kept"
    );
    assert_ne!(
        after["password"], before["password"],
        "its neighbour rotated"
    );
}

#[test]
fn a_secret_lacking_a_fixed_field_is_invalid_and_nothing_is_added() {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    // Seeded by hand under another field name: the masterkey Zitadel's data is encrypted with.
    let by_hand = "4d4b5f68616e645f736565646564215f";
    bao.kv_put("secret", "app/dev/ZITADEL", json!({ "key": by_hand }));
    let run = || Run::new(&bao).specs(dir.path());
    for command in ["plan", "apply"] {
        run()
            .args([command, "dev"])
            .status(1)
            .stdout_has("holds `key`; the spec says `masterkey`")
            .stdout_has("not added while fixed field `masterkey` is missing")
            .never_shows(by_hand)
            .output();
    }
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .stdout_has("the spec says `masterkey`")
        .output();
    let (data, version) = get(&bao, "ZITADEL");
    assert_eq!(version, 1, "never extended");
    assert_eq!(data, json!({ "key": by_hand }).as_object().unwrap().clone());
}

#[test]
fn a_keyring_rotation_keeps_the_previous_keys_newest_first() {
    let (bao, dir) = setup();
    let run = || Run::new(&bao).specs(dir.path());
    let mut keys = vec![text(&get(&bao, "FERNET").0["key"])];
    assert!(!keys[0].contains(','), "a first write is one key");
    for round in 2..=4u64 {
        run()
            .args(["rotate", "dev", "FERNET", "--yes"])
            .stderr_has("the new key first")
            .output();
        let (data, version) = get(&bao, "FERNET");
        assert_eq!(version, round);
        let ring: Vec<String> = text(&data["key"]).split(',').map(String::from).collect();
        // The new key, then at most two of the previous ones, newest first.
        let mut want = keys.iter().rev().take(2).cloned().collect::<Vec<_>>();
        want.insert(0, ring[0].clone());
        assert_eq!(ring, want, "round {round}");
        assert!(!keys.contains(&ring[0]), "a new key");
        keys.push(ring[0].clone());
    }
    run().args(["verify", "dev", "--only", "vault"]).output();
    // A keyring with a bad second key: named by its place, never by its text; not carried on.
    let good = keys.last().unwrap().clone();
    bao.kv_put(
        "secret",
        "app/dev/FERNET",
        json!({ "key": format!("{good},too-short-key") }),
    );
    run()
        .args(["verify", "dev", "--only", "vault"])
        .status(1)
        .stdout_has("key 2 of 2 (newest first)")
        .never_shows("too-short-key")
        .never_shows(&good)
        .output();
    run()
        .args(["rotate", "dev", "FERNET", "--yes"])
        .status(1)
        .stderr_has("is not a valid keyring")
        .never_shows("too-short-key")
        .output();
    assert_eq!(get(&bao, "FERNET").1, 5, "nothing written");
}

/// Issue 45: backing out a keyring rotation with the command docs/set-and-rotate.md gives:
/// `vault kv get -version=N -field=F PATH | vault-seed set ENV SECRET.F --force` (run here with
/// OpenBao's `bao`, the same CLI). The keyring is the one before, through the write gate.
#[test]
fn a_keyring_rotation_is_backed_out_with_the_documented_command() {
    let (bao, dir) = setup();
    let before = text(&get(&bao, "FERNET").0["key"]);
    Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "FERNET", "--yes"])
        .output();
    assert_eq!(get(&bao, "FERNET").1, 2);
    let old = std::process::Command::new(common::bao_bin())
        .args([
            "kv",
            "get",
            "-version=1",
            "-field=key",
            "secret/app/dev/FERNET",
        ])
        .env("BAO_ADDR", &bao.addr)
        .env("BAO_TOKEN", &bao.token)
        .env("HOME", bao.home.path())
        .output()
        .unwrap();
    assert!(old.status.success(), "{old:?}");
    Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "FERNET.key", "--force", "--skip-kube"])
        .stdin(&old.stdout)
        .never_shows(&before)
        .output();
    let (data, version) = get(&bao, "FERNET");
    assert_eq!((text(&data["key"]), version), (before, 3));
}

/// Issue 45: a reader of one Fernet key handed a keyring does not stop: Python's
/// `cryptography` (`Fernet(key)`, whose base64 decoding stops at the first key's padding)
/// takes the first key, the new one, and what the old key encrypted no longer decrypts.
/// docs/set-and-rotate.md says so.
#[test]
fn a_single_key_fernet_reader_silently_takes_the_first_key_of_a_ring() {
    let (bao, dir) = setup();
    let old = text(&get(&bao, "FERNET").0["key"]);
    Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "FERNET", "--yes"])
        .output();
    let ring = text(&get(&bao, "FERNET").0["key"]);
    let script = "import sys\nfrom cryptography.fernet import Fernet, InvalidToken\n\
        ring, old = sys.stdin.read().split()\n\
        token = Fernet(old).encrypt(b'x')\n\
        reader = Fernet(ring)\n\
        new = Fernet(ring.split(',')[0])\n\
        assert new.decrypt(reader.encrypt(b'y')) == b'y'\n\
        try:\n    reader.decrypt(token)\n    print('old')\nexcept InvalidToken:\n    print('first')\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{ring} {old}").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "first");
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/set-and-rotate.md"),
    )
    .unwrap();
    assert!(
        doc.contains("silently takes the first key"),
        "docs/set-and-rotate.md"
    );
    assert!(
        doc.contains("vault kv get -version=1 -field=password secret/ask/core-service/auh1-dev/SECURITY__MASTER_ENCRYPTION_KEY | vault-seed set auh1-dev SECURITY__MASTER_ENCRYPTION_KEY --force"),
        "docs/set-and-rotate.md"
    );
}

#[test]
fn rotating_a_data_key_without_a_stated_rotation_is_refused() {
    // A Vault that never answers: a refusal that sent anything would hang, not exit 2.
    let silent = common::Silent::start();
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    let offline = || {
        Run::new(&bao)
            .specs(dir.path())
            .addr(&silent.addr)
            .token("s.never-sent")
    };
    offline()
        .args(["rotate", "dev", "UNSTATED.fernet", "--yes"])
        .status(2)
        .stderr_has("is a Fernet key that encrypts or hashes stored data, and the spec does not say how it may rotate")
        .stderr_has("`rotation = \"keyring\"`")
        .output();
    offline()
        .args(["rotate", "dev", "UNSTATED.master", "--yes"])
        .status(2)
        .stderr_has("is a Zitadel masterkey")
        .stderr_has("`rotation = \"replace\"`")
        .stderr_lacks("keyring")
        .output();
    offline()
        .args(["rotate", "dev", "UNSTATED", "--yes"])
        .status(2)
        .output();
    assert_eq!(silent.connections.load(Ordering::SeqCst), 0, "nothing sent");
    // A generator whose values hash or encrypt nothing rotates as before.
    Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev"])
        .output();
    Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "TOKEN", "--yes"])
        .output();
    assert_eq!(get(&bao, "TOKEN").1, 2);
}

#[test]
fn the_real_spec_never_rotates_the_fernet_key_or_the_salt() {
    let bao = OpenBao::dev();
    Run::new(&bao)
        .real_specs()
        .args(["apply", "auh1-dev"])
        .output();
    // Issue 45: the refusal names the rule that refused (`rotation = "never"`, not "fixed") and
    // the spec's reason for the field.
    for (secret, reason) in [
        (
            "SECURITY__MASTER_ENCRYPTION_KEY",
            "it encrypts stored credentials, and core-service reads one key",
        ),
        (
            "SECURITY__API_KEY_SALT",
            "it hashes every API key issued: a new salt makes them all fail",
        ),
    ] {
        Run::new(&bao)
            .real_specs()
            .args(["rotate", "auh1-dev", secret, "--yes"])
            .status(2)
            .stderr_has(format!(
                "field `password` of `secret/ask/core-service/auh1-dev/{secret}` has `rotation = \"never\"` in the spec: it never changes once written (the spec's reason: {reason}"
            ))
            .stderr_has("take that key out of the spec first")
            .never_shows("is fixed")
            .output();
        let path = format!("ask/core-service/auh1-dev/{secret}");
        assert_eq!(bao.kv_version("secret", &path), Some(1), "{secret}");
    }
    Run::new(&bao)
        .real_specs()
        .args([
            "rotate",
            "auh1-dev",
            "APP__CORE_SERVICES_MACHINE_TOKEN",
            "--yes",
        ])
        .output();
}

#[test]
fn fields_no_spec_names_get_a_note_and_are_left_alone() {
    let (bao, dir) = setup();
    let (mut data, _) = get(&bao, "TOKEN");
    // The value a rename left behind, and a hostile field name.
    data.insert("old_password".into(), json!("0ld-va1ue-kept-by-hand"));
    data.insert("\u{1b}[31mred".into(), json!("x"));
    bao.kv_put("secret", "app/dev/TOKEN", Value::Object(data.clone()));
    let run = || Run::new(&bao).specs(dir.path());
    for args in [
        &["plan", "dev"][..],
        &["apply", "dev"],
        &["verify", "dev", "--only", "vault"],
    ] {
        let out = run()
            .args(args)
            .never_shows("0ld-va1ue-kept-by-hand")
            .output();
        let all = out.all_text();
        let note = all
            .lines()
            .find(|l| l.contains("fields no spec names: `secret/app/dev/TOKEN` ("))
            .unwrap_or_else(|| panic!("{args:?}: no note in {all}"));
        assert!(note.contains("`old_password`"), "{args:?}: {note}");
        assert!(!all.contains('\u{1b}'), "{args:?}: the name is cleaned");
    }
    let doc = run().args(["apply", "dev", "-o", "json"]).output().json();
    assert!(doc["notes"].to_string().contains("old_password"), "{doc}");
    assert_eq!(get(&bao, "TOKEN"), (data, 2), "left as it is");
}

#[test]
fn set_says_replacing_only_after_the_value_passed_its_checks() {
    let (bao, dir) = setup();
    let run = || Run::new(&bao).specs(dir.path());
    let current = text(&get(&bao, "TOKEN").0["password"]);
    run()
        .args(["set", "dev", "TOKEN", "--force"])
        .stdin("not-hex\n")
        .status(2)
        .stderr_lacks("replacing")
        .output();
    run()
        .args(["set", "dev", "TOKEN", "--force"])
        .stdin(format!("{current}\n"))
        .stderr_lacks("replacing")
        .stdout_has("unchanged")
        .output();
    run()
        .args(["set", "dev", "TOKEN", "--force"])
        .stdin(format!("{}\n", "ab".repeat(32)))
        .stderr_has("replacing field `password` of `secret/app/dev/TOKEN`: version 1 -> 2")
        .output();
}
