//! `vault-seed gen`: one fresh value on stdout in the generator's format.

use crate::common::Run;

/// `vault-seed gen ARGS`; (exit code, stdout without its newline, stderr): the caller asserts
/// the code.
fn gen(args: &[&str]) -> (i32, String, String) {
    let out = Run::home("/nonexistent")
        .arg("gen")
        .args(args)
        .any_status()
        .output();
    (
        out.code(),
        out.stdout_text().trim_end().to_string(),
        out.stderr_text(),
    )
}

#[test]
fn each_generator_prints_its_format() {
    let (c, v, _) = gen(&["fernet"]);
    assert_eq!((c, v.len()), (0, 44));
    let (c, v, _) = gen(&["hex32"]);
    assert_eq!((c, v.len()), (0, 64));
    let (c, v, _) = gen(&["hex", "--bytes", "16"]);
    assert_eq!((c, v.len()), (0, 32));
    let (c, v, _) = gen(&["masterkey"]);
    assert_eq!((c, v.len()), (0, 32));
    let (c, v, _) = gen(&["uuid"]);
    assert_eq!((c, v.len()), (0, 36));
    let (c, v, _) = gen(&["password", "--length", "20", "--classes", "digit"]);
    assert_eq!(c, 0);
    assert!(
        v.len() == 20 && v.bytes().all(|b| b.is_ascii_digit()),
        "{v}"
    );
    let (c, v, _) = gen(&["placeholder"]);
    assert_eq!((c, v.as_str()), (0, "placeholder"));
}

#[test]
fn two_runs_differ() {
    assert_ne!(gen(&["fernet"]).1, gen(&["fernet"]).1);
}

#[test]
fn bad_options_are_usage_errors() {
    let (c, v, e) = gen(&["fernet", "--bytes", "16"]);
    assert_eq!(c, 2);
    assert!(v.is_empty());
    assert!(
        e.contains("generator `fernet` does not take `--bytes`"),
        "{e}"
    );
    let (c, _, e) = gen(&["hex33"]);
    assert_eq!(c, 2);
    assert!(e.contains("unknown generator `hex33`"), "{e}");
    let (c, _, e) = gen(&["hex", "--bytes", "2"]);
    assert_eq!(c, 2);
    assert!(e.contains("out of range"), "{e}");
}

#[test]
fn an_rsa_size_vault_seed_does_not_make_is_a_usage_error() {
    let (c, v, e) = gen(&["rsa", "--bits", "1024"]);
    assert_eq!((c, v.as_str()), (2, ""));
    assert!(e.contains("`--bits 1024` is not an RSA key size"), "{e}");
    let (c, _, e) = gen(&["ed25519", "--bits", "2048"]);
    assert_eq!(c, 2);
    assert!(
        e.contains("generator `ed25519` does not take `--bits`"),
        "{e}"
    );
}
