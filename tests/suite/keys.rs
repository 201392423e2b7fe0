//! Key-material generators (`ed25519`, `ecdsa-p256`, `rsa`, `ssh-ed25519`, `jwks`) against real
//! OpenBao: what `apply` writes and `gen` prints parses with an independent tool (the `openssl`
//! CLI, OpenSSH's `ssh-keygen`, Python's `cryptography`), a key made by openssl or ssh-keygen is
//! kept, one of the wrong type or size or that does not parse is `invalid` and never
//! overwritten, and no line of a key appears in any output, trace logs included.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use common::{OpenBao, Run};
use serde_json::{json, Value};

const SPEC: &str = r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
[secrets.KEYS]
description = "signing keys"
fields.ed = { generator = "ed25519" }
fields.ec = { generator = "ecdsa-p256" }
fields.rsa = { generator = "rsa", bits = 2048 }
fields.ssh = { generator = "ssh-ed25519" }
fields.jwks = { generator = "jwks", alg = "RS256" }
fields.jwks_ec = { generator = "jwks", alg = "ES256" }
"#;

/// `program ARGS` with `input` on stdin; (success, stdout). The test fails, never skips, when
/// the program is missing: `install` says how to get it.
pub(crate) fn piped(program: &str, args: &[&str], input: &str, install: &str) -> (bool, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} checks the keys independently ({e}): {install}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `openssl ARGS` with `input` on stdin; (success, stdout).
pub(crate) fn openssl(args: &[&str], input: &str) -> (bool, String) {
    piped("openssl", args, input, "apt-get install openssl")
}

/// `ssh-keygen ARGS -f FILE` on a private key written to a 0600 file; (success, stdout).
pub(crate) fn ssh_keygen(args: &[&str], key: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, key).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let out = Command::new("ssh-keygen")
        .args(args)
        .arg("-f")
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .expect("OpenSSH's `ssh-keygen` checks the ssh keys: install it (apt-get install openssh-client)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// An unencrypted OpenSSH key made by `ssh-keygen -t TYPE`, with `passphrase`.
fn ssh_keygen_key(kind: &str, passphrase: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-N", passphrase, "-C", "", "-f"])
        .arg(&file)
        .stdin(Stdio::null())
        .status()
        .expect("OpenSSH's `ssh-keygen` makes the test's ssh keys")
        .success();
    assert!(ok);
    std::fs::read_to_string(&file).unwrap()
}

/// Python's `cryptography` rebuilds the one private key of a JWKS and checks its `kid` is the
/// RFC 7638 thumbprint; it prints the key type and size.
const JWKS_CHECK: &str = r#"
import base64, hashlib, json, sys
from cryptography.hazmat.primitives.asymmetric import ec, rsa
[k] = json.load(sys.stdin)["keys"]
def n(s): return int.from_bytes(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)), "big")
req = {"RSA": ["e", "kty", "n"], "EC": ["crv", "kty", "x", "y"]}[k["kty"]]
canon = json.dumps({m: k[m] for m in req}, separators=(",", ":"), sort_keys=True)
assert k["kid"] == base64.urlsafe_b64encode(hashlib.sha256(canon.encode()).digest()).rstrip(b"=").decode()
if k["kty"] == "RSA":
    pub = rsa.RSAPublicNumbers(n(k["e"]), n(k["n"]))
    key = rsa.RSAPrivateNumbers(n(k["p"]), n(k["q"]), n(k["d"]), n(k["dp"]), n(k["dq"]), n(k["qi"]), pub).private_key()
    print("RSA", key.key_size, k["alg"])
else:
    pub = ec.EllipticCurvePublicNumbers(n(k["x"]), n(k["y"]), ec.SECP256R1())
    key = ec.EllipticCurvePrivateNumbers(n(k["d"]), pub).private_key()
    print("EC", key.curve.name, k["alg"])
"#;

/// What Python's `cryptography` makes of a JWKS (see [`JWKS_CHECK`]).
fn python_reads_jwks(jwks: &str) -> String {
    let install = "apt-get install python3-cryptography";
    let (ok, out) = piped("python3", &["-c", JWKS_CHECK], jwks, install);
    assert!(ok, "python's cryptography could not rebuild the JWKS key");
    out.trim().to_string()
}

/// What `openssl pkey` reads in a PKCS#8 PEM key: its text dump, which names the key type.
fn openssl_reads(pem: &str) -> String {
    assert!(
        pem.starts_with("-----BEGIN PRIVATE KEY-----\n"),
        "not PKCS#8 PEM"
    );
    let (ok, text) = openssl(&["pkey", "-noout", "-text"], pem);
    assert!(ok, "openssl could not read the key");
    text
}

/// Assert the text dump is of the generator's key type.
fn assert_key_type(generator: &str, pem: &str) {
    if let Some(alg) = generator.strip_prefix("jwks ") {
        let want = if alg == "RS256" {
            "RSA 2048 RS256"
        } else {
            "EC secp256r1 ES256"
        };
        assert_eq!(python_reads_jwks(pem), want);
        return;
    }
    if generator == "ssh-ed25519" {
        assert!(pem.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"));
        let (ok, public) = ssh_keygen(&["-y"], pem);
        assert!(
            ok && public.starts_with("ssh-ed25519 AAAA"),
            "ssh-keygen could not read it"
        );
        return;
    }
    let text = openssl_reads(pem);
    match generator {
        "ed25519" => assert!(text.starts_with("ED25519 Private-Key:"), "{generator}"),
        "ecdsa-p256" => assert!(
            text.starts_with("Private-Key: (256 bit") && text.contains("NIST CURVE: P-256"),
            "{generator}"
        ),
        "rsa" => assert!(
            text.starts_with("Private-Key: (2048 bit, 2 primes)"),
            "{generator}"
        ),
        other => panic!("no check for {other}"),
    }
}

/// A key made by `openssl genpkey`, PKCS#8 PEM.
fn openssl_key(args: &[&str]) -> String {
    let mut all = vec!["genpkey"];
    all.extend_from_slice(args);
    let (ok, pem) = openssl(&all, "");
    assert!(ok && pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    pem
}

/// Each base64 line of a PEM key: none may appear anywhere in the output.
fn assert_never_shown(outputs: &[String], pem: &str) {
    for line in pem.lines().filter(|l| !l.starts_with("-----")) {
        for (i, out) in outputs.iter().enumerate() {
            assert!(!out.contains(line), "a line of a key is in output {i}");
        }
    }
}

#[test]
fn apply_writes_keys_openssl_reads_and_never_shows_them() {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    let run = |args: &[&str]| {
        Run::new(&bao)
            .specs(dir.path())
            .args(args)
            .env("RUST_LOG", "trace")
    };
    let mut outputs = Vec::new();
    let out = run(&["apply", "dev", "-o", "json", "-vvv"]).output();
    outputs.push(out.all_text());
    let doc = out.json();
    assert_eq!(common::field_outcome(&doc, "", "ed").0, "created");
    assert_eq!(common::field_outcome(&doc, "", "ec").0, "created");
    assert_eq!(common::field_outcome(&doc, "", "rsa").0, "created");
    assert_eq!(common::field_outcome(&doc, "", "ssh").0, "created");
    assert_eq!(common::field_outcome(&doc, "", "jwks").0, "created");
    assert_eq!(common::field_outcome(&doc, "", "jwks_ec").0, "created");
    let (data, version) = bao.kv_get("secret", "app/dev/KEYS").unwrap();
    assert_eq!(version, 1);
    let ed = data["ed"].as_str().unwrap().to_string();
    let ec = data["ec"].as_str().unwrap().to_string();
    let rsa = data["rsa"].as_str().unwrap().to_string();
    let ssh = data["ssh"].as_str().unwrap().to_string();
    let jwks = data["jwks"].as_str().unwrap().to_string();
    let jwks_ec = data["jwks_ec"].as_str().unwrap().to_string();
    assert_key_type("jwks RS256", &jwks);
    assert_key_type("jwks ES256", &jwks_ec);
    assert_key_type("ssh-ed25519", &ssh);
    assert_key_type("ed25519", &ed);
    assert_key_type("ecdsa-p256", &ec);
    assert_key_type("rsa", &rsa);
    let (ok, _) = openssl(&["rsa", "-check", "-noout"], &rsa);
    assert!(ok, "openssl rsa -check refused the key");
    // Read back and judged valid: nothing written the second time.
    for args in [
        &["apply", "dev", "-vvv"][..],
        &["apply", "dev", "-o", "json", "-vvv"],
        &["plan", "dev", "-vvv"],
    ] {
        outputs.push(run(args).output().all_text());
    }
    assert_eq!(bao.kv_version("secret", "app/dev/KEYS"), Some(1));
    assert_never_shown(&outputs, &ed);
    assert_never_shown(&outputs, &ec);
    assert_never_shown(&outputs, &rsa);
    assert_never_shown(&outputs, &ssh);
    for key in [&jwks, &jwks_ec] {
        let doc: Value = serde_json::from_str(key).unwrap();
        for part in ["d", "p", "q"] {
            if let Some(v) = doc["keys"][0][part].as_str() {
                assert!(
                    outputs.iter().all(|o| !o.contains(v)),
                    "a JWK `{part}` is in the output"
                );
            }
        }
    }
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn keys_from_openssl_are_kept_and_wrong_ones_are_invalid_never_overwritten() {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    let run = || Run::new(&bao).specs(dir.path()).env("RUST_LOG", "trace");
    let ed = openssl_key(&["-algorithm", "ed25519"]);
    let ec = openssl_key(&["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]);
    let rsa = openssl_key(&["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]);
    let rsa3072 = openssl_key(&["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072"]);
    let ssh = ssh_keygen_key("ed25519", "");
    let ssh_rsa = ssh_keygen_key("rsa", "");
    let ssh_locked = ssh_keygen_key("ed25519", "a passphrase");
    bao.kv_put(
        "secret",
        "app/dev/KEYS",
        json!({ "ed": ed, "ec": ec, "rsa": rsa, "ssh": ssh }),
    );
    let out = run().args(["apply", "dev", "-o", "json"]).output();
    let doc = out.json();
    assert_eq!(common::field_outcome(&doc, "", "ed").0, "exists");
    assert_eq!(common::field_outcome(&doc, "", "ec").0, "exists");
    assert_eq!(common::field_outcome(&doc, "", "rsa").0, "exists");
    assert_eq!(common::field_outcome(&doc, "", "ssh").0, "exists");
    let mut outputs = vec![out.all_text()];
    // The sets apply added beside them, kept in every case below.
    let (data, _) = bao.kv_get("secret", "app/dev/KEYS").unwrap();
    let (jwks, jwks_ec) = (data["jwks"].clone(), data["jwks_ec"].clone());
    let mut public_only: Value = serde_json::from_str(jwks_ec.as_str().unwrap()).unwrap();
    public_only["keys"][0].as_object_mut().unwrap().remove("d");
    let mut no_kid: Value = serde_json::from_str(jwks.as_str().unwrap()).unwrap();
    no_kid["keys"][0].as_object_mut().unwrap().remove("kid");
    let (public_only, no_kid) = (public_only.to_string(), no_kid.to_string());

    // An ECDSA key where an Ed25519 key belongs, a key cut short, an RSA key of another size,
    // an Ed25519 key where an RSA key belongs, an OpenSSH RSA key, an encrypted OpenSSH key and a
    // PKCS#8 key where an OpenSSH key belongs: invalid, and kept.
    let cut = ed.replacen(&ed.lines().nth(1).unwrap()[..16], "", 1);
    for (fields, field, want) in [
        (
            json!({ "ed": ec, "ec": ec, "rsa": rsa, "ssh": ssh }),
            "ed",
            "is a PKCS#8 ECDSA P-256 key, expected Ed25519",
        ),
        (
            json!({ "ed": ed, "ec": cut, "rsa": rsa, "ssh": ssh }),
            "ec",
            "does not parse as a PKCS#8 key (expected ECDSA P-256)",
        ),
        (
            json!({ "ed": ed, "ec": ec, "rsa": rsa3072, "ssh": ssh }),
            "rsa",
            "is a PKCS#8 RSA 3072-bit key, expected RSA 2048-bit",
        ),
        (
            json!({ "ed": ed, "ec": ec, "rsa": ed, "ssh": ssh }),
            "rsa",
            "is a PKCS#8 Ed25519 key, expected RSA 2048-bit",
        ),
        (
            json!({ "ed": ed, "ec": ec, "rsa": rsa, "ssh": ssh_rsa }),
            "ssh",
            "is an OpenSSH RSA key, expected Ed25519",
        ),
        (
            json!({ "ed": ed, "ec": ec, "rsa": rsa, "ssh": ssh_locked }),
            "ssh",
            "is an encrypted OpenSSH key",
        ),
        (
            json!({ "ed": ed, "ec": ec, "rsa": rsa, "ssh": ed }),
            "ssh",
            "is not an OpenSSH private key",
        ),
        (
            json!({ "ed": ed, "ec": ec, "rsa": rsa, "ssh": ssh, "jwks": jwks_ec }),
            "jwks",
            "its key has `kty` EC, expected RSA for RS256",
        ),
        (
            json!({ "ed": ed, "ec": ec, "rsa": rsa, "ssh": ssh, "jwks_ec": public_only }),
            "jwks_ec",
            "its key is a public key only",
        ),
        (
            json!({ "ed": ed, "ec": ec, "rsa": rsa, "ssh": ssh, "jwks": no_kid }),
            "jwks",
            "its key has no `kid`",
        ),
    ] {
        let mut fields = fields;
        let map = fields.as_object_mut().unwrap();
        map.entry("jwks").or_insert(jwks.clone());
        map.entry("jwks_ec").or_insert(jwks_ec.clone());
        bao.kv_put("secret", "app/dev/KEYS", fields.clone());
        let version = bao.kv_version("secret", "app/dev/KEYS");
        let out = run()
            .args(["apply", "dev", "-o", "json"])
            .status(1)
            .output();
        let (o, detail) = common::field_outcome(&out.json(), "", field);
        assert_eq!(o, "invalid");
        assert!(detail.contains(want), "{detail}");
        outputs.push(out.all_text());
        outputs.push(
            run()
                .args(["apply", "dev"])
                .status(1)
                .stdout_has("invalid")
                .output()
                .all_text(),
        );
        let (data, v) = bao.kv_get("secret", "app/dev/KEYS").unwrap();
        assert_eq!((Value::Object(data), Some(v)), (fields, version));
    }
    assert_never_shown(&outputs, &ed);
    assert_never_shown(&outputs, &ec);
    assert_never_shown(&outputs, &rsa);
    assert_never_shown(&outputs, &rsa3072);
    assert_never_shown(&outputs, &ssh);
    assert_never_shown(&outputs, &ssh_rsa);
}

#[test]
fn an_impossible_rsa_size_or_jwks_alg_is_a_located_lint_error_and_apply_sends_nothing() {
    let bao = OpenBao::dev();
    let spec = SPEC
        .replace("{addr}", &bao.addr)
        .replace("bits = 2048", "bits = 1024")
        .replace("alg = \"RS256\"", "alg = \"HS256\"");
    let dir = common::spec_dir(&spec);
    let at = |text: &str| {
        let line = spec.lines().position(|l| l.contains(text)).unwrap();
        let col = spec.lines().nth(line).unwrap().find(text).unwrap();
        format!("app.toml:{}:{}", line + 1, col + 1)
    };
    for cmd in [&["lint"][..], &["apply", "dev"]] {
        let out = Run::new(&bao)
            .specs(dir.path())
            .args(cmd)
            .status(2)
            .output();
        let err = out.stderr_text();
        assert!(err.contains(&at("1024")), "{err}");
        assert!(
            err.contains("`bits = 1024` is not an RSA key size"),
            "{err}"
        );
        assert!(err.contains("2048, 3072 or 4096"), "{err}");
        assert!(err.contains(&at("HS256")), "{err}");
        assert!(
            err.contains("`HS256` is not an algorithm vault-seed makes keys for"),
            "{err}"
        );
    }
    assert_eq!(bao.kv_get("secret", "app/dev/KEYS"), None);
}

#[test]
fn gen_prints_a_key_openssl_reads() {
    for (g, flags) in [
        ("ed25519", &[][..]),
        ("ecdsa-p256", &[]),
        ("rsa", &["--bits", "2048"]),
        ("ssh-ed25519", &[]),
        ("jwks RS256", &["--alg", "RS256"]),
        ("jwks ES256", &["--alg", "ES256"]),
    ] {
        let out = Run::offline()
            .args(["gen", g.split(' ').next().unwrap()])
            .args(flags)
            .output();
        assert_key_type(g, &out.stdout_text());
        assert!(out.stderr_text().is_empty());
    }
}
