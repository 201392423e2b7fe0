//! TLS: OpenBao with a TLS listener whose certificate a CA made here signed. VAULT_CACERT works,
//! a wrong CA fails with a clear error, VAULT_SKIP_VERIFY works with a warning.

mod common;

use std::path::{Path, PathBuf};

use common::OpenBao;

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

fn plan_with(bao: &OpenBao, envs: &[(&str, &Path)]) -> std::process::Output {
    let mut c = bao.vault_seed();
    for (k, v) in envs {
        c.env(k, v);
    }
    c.arg("--specs")
        .arg(common::repo_specs())
        .args(["plan", "auh1-dev"])
        .output()
        .unwrap()
}

#[test]
fn ca_cert_wrong_ca_and_skip_verify() {
    let pki = Pki::new();
    let bao = OpenBao::persistent(Some((&pki.file("server.pem"), &pki.file("server-key.pem"))));
    assert!(bao.addr.starts_with("https://127.0.0.1:"));

    let ok = plan_with(&bao, &[("VAULT_CACERT", &pki.file("ca.pem"))]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("6 to create"));

    let wrong = plan_with(&bao, &[("VAULT_CACERT", &pki.file("other-ca.pem"))]);
    assert_eq!(wrong.status.code(), Some(1));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        err.contains(&format!("TLS with Vault at `{}` failed", bao.addr)),
        "{err}"
    );
    assert!(err.contains("VAULT_CACERT"), "{err}");

    let none = plan_with(&bao, &[]);
    assert_eq!(
        none.status.code(),
        Some(1),
        "the system roots do not know this CA"
    );

    let skip = plan_with(&bao, &[("VAULT_SKIP_VERIFY", Path::new("true"))]);
    assert_eq!(
        skip.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&skip.stderr)
    );
    assert!(String::from_utf8_lossy(&skip.stderr).contains("warning: TLS verification is off"));

    let missing = plan_with(&bao, &[("VAULT_CACERT", Path::new("/nonexistent/ca.pem"))]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr)
        .contains("cannot read the CA file `/nonexistent/ca.pem`"));
}
