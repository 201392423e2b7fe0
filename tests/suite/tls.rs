//! TLS: OpenBao with a TLS listener whose certificate a CA made here signed. VAULT_CACERT works,
//! a wrong CA fails with a clear error, VAULT_SKIP_VERIFY works with a warning.

use crate::common;

use std::path::{Path, PathBuf};

use common::{OpenBao, Run};

struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// A CA, a server certificate for 127.0.0.1 signed by it, and an unrelated second CA.
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "vault-seed test CA");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let server_key = rcgen::KeyPair::generate().unwrap();
        let mut server = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        server
            .subject_alt_names
            .push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
        let server_cert = server.signed_by(&server_key, &issuer).unwrap();
        let other_key = rcgen::KeyPair::generate().unwrap();
        let mut other = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        other.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        other
            .distinguished_name
            .push(rcgen::DnType::CommonName, "some other CA");
        let other_cert = other.self_signed(&other_key).unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(dir.path().join("other-ca.pem"), other_cert.pem()).unwrap();
        std::fs::write(dir.path().join("server.pem"), server_cert.pem()).unwrap();
        std::fs::write(
            dir.path().join("server-key.pem"),
            server_key.serialize_pem(),
        )
        .unwrap();
        Pki { dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// `vault-seed plan auh1-dev` on the repository's specs, run by `c` with these variables added.
fn plan_on(mut run: Run, vars: &[(&str, &std::ffi::OsStr)]) -> Run {
    for (k, v) in vars {
        run = run.env(k, v);
    }
    run.real_specs().args(["plan", "auh1-dev"])
}

fn plan_with(bao: &OpenBao, envs: &[(&str, &Path)]) -> Run {
    let vars: Vec<(&str, &std::ffi::OsStr)> =
        envs.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    plan_on(Run::new(bao), &vars)
}

#[test]
fn ca_cert_wrong_ca_and_skip_verify() {
    let pki = Pki::new();
    let bao = OpenBao::persistent(Some((&pki.file("server.pem"), &pki.file("server-key.pem"))));
    assert!(bao.addr.starts_with("https://127.0.0.1:"));

    let ok = plan_with(&bao, &[("VAULT_CACERT", &pki.file("ca.pem"))]).output();
    assert!(ok.stdout_text().contains("6 to create"));

    let wrong = plan_with(&bao, &[("VAULT_CACERT", &pki.file("other-ca.pem"))])
        .status(1)
        .output();
    let err = wrong.stderr_text();
    assert!(
        err.contains(&format!("TLS with Vault at `{}` failed", bao.addr)),
        "{err}"
    );
    assert!(err.contains("VAULT_CACERT"), "{err}");

    // The system roots do not know this CA.
    plan_with(&bao, &[]).status(1).output();

    let skip = plan_with(&bao, &[("VAULT_SKIP_VERIFY", Path::new("true"))]).output();
    assert!(skip
        .stderr_text()
        .contains("warning: TLS verification is off"));

    let missing = plan_with(&bao, &[("VAULT_CACERT", Path::new("/nonexistent/ca.pem"))])
        .status(2)
        .output();
    assert!(missing
        .stderr_text()
        .contains("cannot read the CA file `/nonexistent/ca.pem`"));
}

/// `vault-seed plan auh1-dev` with exactly these variables (and a scratch HOME, NO_COLOR):
/// nothing else from the environment.
fn plan_env(home: &Path, vars: &[(&str, &std::ffi::OsStr)]) -> Run {
    plan_on(Run::home(home), vars)
}

#[test]
fn a_ca_file_that_is_not_pem_is_named_before_any_request() {
    let pki = Pki::new();
    let bao = OpenBao::persistent(Some((&pki.file("server.pem"), &pki.file("server-key.pem"))));
    let der = pki.file("ca.der");
    // The CA in DER: the PEM's base64 body, decoded.
    let pem = std::fs::read_to_string(pki.file("ca.pem")).unwrap();
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    use base64::Engine;
    std::fs::write(
        &der,
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
    .unwrap();
    let junk = pki.file("junk.txt");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let empty_dir = tempfile::tempdir().unwrap();
    for (var, file, says) in [
        ("VAULT_CACERT", der.as_path(), "it looks like DER"),
        (
            "VAULT_CACERT",
            junk.as_path(),
            "VAULT_CACERT must be a PEM file",
        ),
        ("VAULT_CAPATH", empty_dir.path(), "holds no PEM certificate"),
    ] {
        let out = plan_with(&bao, &[(var, file)]).status(2).output();
        let err = out.stderr_text();
        assert!(err.contains(says), "{err}");
        assert!(err.contains(&format!("`{}`", file.display())), "{err}");
        assert!(!err.contains("UnknownIssuer"), "{err}");
        if var == "VAULT_CACERT" {
            assert!(err.contains("is not PEM"), "{err}");
        }
    }
    // A CA directory with other files in it is fine, as with the vault CLI.
    plan_with(&bao, &[("VAULT_CAPATH", pki.dir.path())]).output();
}

#[test]
fn a_tls_failure_at_default_verbosity_prints_only_our_error() {
    let pki = Pki::new();
    let bao = OpenBao::persistent(Some((&pki.file("server.pem"), &pki.file("server-key.pem"))));
    let out = plan_with(&bao, &[("VAULT_CACERT", &pki.file("other-ca.pem"))])
        .status(1)
        .output();
    let err = out.stderr_text();
    // The announcement of what runs where, then the error and its help: nothing else.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with("vault-seed plan `auh1-dev`"), "{err}");
    assert!(lines[1].starts_with("error: TLS with Vault at"), "{err}");
    assert!(lines[2].starts_with("  help: "), "{err}");
    assert!(!err.contains("rustls"), "{err}");
    // From -vv on, the dependencies' own lines show too.
    let out = Run::new(&bao)
        .env("VAULT_CACERT", pki.file("other-ca.pem"))
        .real_specs()
        .args(["plan", "auh1-dev", "-vv"])
        .status(1)
        .output();
    let err = out.stderr_text();
    assert!(err.contains("rustls"), "{err}");
}

#[test]
fn empty_vault_and_bao_variables_count_as_unset() {
    let pki = Pki::new();
    let bao = OpenBao::persistent(Some((&pki.file("server.pem"), &pki.file("server-key.pem"))));
    let home = tempfile::tempdir().unwrap();
    let s = |v: &str| std::ffi::OsString::from(v);
    let ca = pki.file("ca.pem").into_os_string();
    let dir = pki.dir.path().as_os_str().to_os_string();
    let (addr, token) = (s(&bao.addr), s(&bao.token));
    // A working set, to which each case adds an empty variable and, where it has one, the twin
    // that must then be used.
    let base = |extra: &[(&'static str, std::ffi::OsString)]| {
        let mut v: Vec<(&'static str, std::ffi::OsString)> = vec![
            ("VAULT_ADDR", addr.clone()),
            ("VAULT_TOKEN", token.clone()),
            ("VAULT_CACERT", ca.clone()),
        ];
        for (k, val) in extra {
            v.retain(|(name, _)| name != k);
            v.push((k, val.clone()));
        }
        v
    };
    let cases: Vec<Vec<(&'static str, std::ffi::OsString)>> = vec![
        base(&[("VAULT_ADDR", s("")), ("BAO_ADDR", addr.clone())]),
        base(&[("VAULT_ADDR", s(" ")), ("BAO_ADDR", addr.clone())]),
        base(&[("BAO_ADDR", s("")), ("VAULT_ADDR", addr.clone())]),
        base(&[("VAULT_TOKEN", s("")), ("BAO_TOKEN", token.clone())]),
        base(&[("BAO_TOKEN", s(""))]),
        base(&[("VAULT_CACERT", s("")), ("BAO_CACERT", ca.clone())]),
        base(&[("BAO_CACERT", s(""))]),
        base(&[("VAULT_CACERT", s("")), ("VAULT_CAPATH", dir.clone())]),
        base(&[("VAULT_CAPATH", s(""))]),
        base(&[
            ("VAULT_CACERT", s("")),
            ("VAULT_CAPATH", s("")),
            ("BAO_CAPATH", dir.clone()),
        ]),
        base(&[("BAO_CAPATH", s(""))]),
        base(&[
            ("VAULT_CACERT", s("")),
            ("VAULT_SKIP_VERIFY", s("")),
            ("BAO_SKIP_VERIFY", s("true")),
        ]),
        base(&[("BAO_SKIP_VERIFY", s(""))]),
        base(&[("VAULT_NAMESPACE", s(""))]),
        base(&[("BAO_NAMESPACE", s(""))]),
        base(&[("VAULT_CLIENT_TIMEOUT", s(""))]),
        base(&[("BAO_CLIENT_TIMEOUT", s(""))]),
        base(&[("VAULT_SEED_CONNECT_TIMEOUT", s(""))]),
        base(&[("VAULT_SEED_ANSWER_TIMEOUT", s(""))]),
        base(&[("VAULT_SEED_GIVE_UP_AFTER", s(""))]),
    ];
    for vars in cases {
        let refs: Vec<(&str, &std::ffi::OsStr)> =
            vars.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        plan_env(home.path(), &refs).output();
    }
    // VAULT_SEED_SPECS="" is the default directory, `secret-specs`.
    Run::home(home.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("VAULT_SEED_SPECS", "")
        .arg("lint")
        .output();
}
