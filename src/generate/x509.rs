//! `generator = "x509-self-signed"`: a self-signed certificate for a stored private key (rcgen),
//! and a stored certificate judged and matched to its key (x509-parser).

use std::net::IpAddr;

use rcgen::{
    CertificateParams, DistinguishedName, DnType, IsCa, KeyPair, SerialNumber,
    PKCS_ECDSA_P256_SHA256, PKCS_ED25519, PKCS_RSA_SHA256,
};
use secrecy::{ExposeSecret as _, SecretString};
use time::{Duration, OffsetDateTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::oid_registry::OID_KEY_TYPE_EC_PUBLIC_KEY;
use x509_parser::prelude::FromDer as _;
use x509_parser::x509::SubjectPublicKeyInfo;

use super::keys::{algorithm_label, pem_der, pkcs8_der};
use super::pubkey::curve;
use super::Validity;

/// The PEM label of a certificate (RFC 7468, section 5).
const CERT_LABEL: &str = "CERTIFICATE";
/// What [`pem_der`] says is expected.
const CERT_WHAT: &str = "an X.509 certificate";

/// A self-signed certificate (PEM, label CERTIFICATE) for the private key `key` (PKCS#8 PEM of
/// ed25519, ecdsa-p256 or rsa, as keys.rs makes them): subject CN `cn`, the DNS (or IP, when it
/// parses as one) subjectAltNames `sans`, valid from now for `days` days, random serial, CA=false.
pub fn self_signed(
    key: &SecretString,
    cn: &str,
    sans: &[String],
    days: u32,
) -> Result<String, String> {
    if days == 0 {
        return Err("a certificate must be valid for at least one day; `days` is 0".into());
    }
    if cn.trim().is_empty() {
        return Err("the common name (`cn`) is empty".into());
    }
    if let Some(i) = sans.iter().position(|s| !san_shape(s)) {
        return Err(format!(
            "subjectAltName #{} is neither an IP address nor a DNS name (ASCII letters, digits, `-`, `.`, `*`)",
            i + 1
        ));
    }
    let der = pkcs8_der(key.expose_secret()).map_err(|r| format!("the key {r}"))?;
    let pair = KeyPair::try_from(der.as_slice()).map_err(|_| {
        "the key is a `PRIVATE KEY` PEM block that does not parse as a PKCS#8 key (rcgen reads \
         Ed25519, P-256 and RSA keys of 2048 to 4096 bits)"
            .to_string()
    })?;
    let alg = pair.algorithm();
    if ![&PKCS_ED25519, &PKCS_ECDSA_P256_SHA256, &PKCS_RSA_SHA256].contains(&alg) {
        return Err(format!(
            "the key is a PKCS#8 {} key, expected Ed25519, ECDSA P-256 or RSA",
            algorithm_label(alg)
        ));
    }
    let now = OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .map_err(|e| e.to_string())?;
    let not_after = now
        .checked_add(Duration::days(i64::from(days)))
        .filter(|t| t.year() <= 9999)
        .ok_or_else(|| format!("{days} days from now is past the year 9999"))?;
    // RFC 5280: a positive serial of at most 20 octets; 127 random bits.
    let mut serial = super::random_bytes(16).map_err(|e| e.to_string())?;
    serial[0] &= 0x7f;
    let mut params = CertificateParams::new(sans.to_vec())
        .map_err(|_| "a subjectAltName is neither an IP address nor a DNS name".to_string())?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.not_before = now;
    params.not_after = not_after;
    params.serial_number = Some(SerialNumber::from_slice(&serial));
    params.is_ca = IsCa::ExplicitNoCa;
    params
        .self_signed(&pair)
        .map(|cert| cert.pem())
        .map_err(|e| format!("the certificate could not be signed: {e}"))
}

/// What rcgen writes as an IP address or as an IA5 DNS name, and a DNS name can hold.
fn san_shape(s: &str) -> bool {
    s.parse::<IpAddr>().is_ok()
        || (!s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.*_".contains(&b)))
}

/// Judge a stored certificate: exactly one CERTIFICATE PEM block that parses as X.509; Invalid
/// when expired (say when, as a date) or not yet valid.
pub fn validate(v: &str) -> Validity {
    let der = match pem_der(v, CERT_LABEL, CERT_WHAT) {
        Ok(der) => der,
        Err(reason) => return Validity::Invalid(reason),
    };
    let cert = match parse(&der) {
        Ok(cert) => cert,
        Err(reason) => return Validity::Invalid(reason),
    };
    let now = OffsetDateTime::now_utc();
    let validity = cert.validity();
    let (from, until) = (
        validity.not_before.to_datetime(),
        validity.not_after.to_datetime(),
    );
    if now < from {
        Validity::Invalid(format!("is a certificate not valid before {}", when(from)))
    } else if now > until {
        Validity::Invalid(format!("is a certificate that expired on {}", when(until)))
    } else {
        Validity::Valid
    }
}

/// Whether the certificate's public key is the public half of `key`. Err when either does not parse.
pub fn matches_key(cert: &str, key: &SecretString) -> Result<bool, String> {
    let der = pem_der(cert, CERT_LABEL, CERT_WHAT).map_err(|r| format!("the certificate {r}"))?;
    let cert = parse(&der).map_err(|r| format!("the certificate {r}"))?;
    let key_der = pkcs8_der(key.expose_secret()).map_err(|r| format!("the key {r}"))?;
    let spki = super::pubkey::pkcs8_spki(&key_der).map_err(|r| format!("the key {r}"))?;
    let ours = match SubjectPublicKeyInfo::from_der(&spki) {
        Ok((&[], ours)) => ours,
        _ => return Err("the key's public half does not parse back".into()),
    };
    Ok(same_key(cert.public_key(), &ours))
}

/// Same algorithm, same curve (for EC keys) and same key bits. RSA parameters are not compared:
/// a NULL and an absent one mean the same.
fn same_key(a: &SubjectPublicKeyInfo<'_>, b: &SubjectPublicKeyInfo<'_>) -> bool {
    a.algorithm.algorithm == b.algorithm.algorithm
        && (a.algorithm.algorithm != OID_KEY_TYPE_EC_PUBLIC_KEY || curve(a) == curve(b))
        && a.subject_public_key.data == b.subject_public_key.data
}

/// One whole X.509 certificate, nothing after it.
fn parse(der: &[u8]) -> Result<X509Certificate<'_>, String> {
    match X509Certificate::from_der(der) {
        Ok((&[], cert)) => Ok(cert),
        Ok(_) => Err("is a `CERTIFICATE` PEM block with bytes after the certificate".into()),
        Err(_) => Err("is a `CERTIFICATE` PEM block that does not parse as X.509".into()),
    }
}

/// A date and time for a reason: `2026-12-03 14:05 UTC`.
fn when(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!("{} {:02}:{:02} UTC", t.date(), t.hour(), t.minute())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::generate::pubkey::tests::{assert_invalid, tool};
    use crate::generate::{pubkey, KeyType};

    fn s(v: &str) -> SecretString {
        SecretString::from(v.to_string())
    }

    fn sans() -> Vec<String> {
        vec![
            "app.example.org".into(),
            "*.example.org".into(),
            "10.0.0.1".into(),
            "::1".into(),
        ]
    }

    /// A certificate for `key` whose dates are `from` and `until` (UTC).
    fn dated(key: &str, from: OffsetDateTime, until: OffsetDateTime) -> String {
        let pair = KeyPair::from_pem(key).unwrap();
        let mut params = CertificateParams::new(vec!["old.example.org".to_string()]).unwrap();
        params.not_before = from;
        params.not_after = until;
        params.self_signed(&pair).unwrap().pem()
    }

    #[test]
    fn a_self_signed_certificate_is_what_openssl_reads_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let cert_file = dir.path().join("cert.pem");
        let arg = cert_file.as_os_str();
        for kind in [
            KeyType::Ed25519,
            KeyType::EcdsaP256,
            KeyType::Rsa { bits: 2048 },
        ] {
            let key = s(&kind.generate().unwrap());
            let cert = self_signed(&key, "app.example.org", &sans(), 30).unwrap();
            assert_eq!(validate(&cert), Validity::Valid, "{kind:?}");
            assert_eq!(matches_key(&cert, &key), Ok(true), "{kind:?}");
            std::fs::write(&cert_file, &cert).unwrap();
            let text = tool(
                "openssl",
                &[
                    "x509".as_ref(),
                    "-noout".as_ref(),
                    "-text".as_ref(),
                    "-in".as_ref(),
                    arg,
                ],
            );
            for want in [
                "Subject: CN = app.example.org",
                "Issuer: CN = app.example.org",
                "DNS:app.example.org, DNS:*.example.org, IP Address:10.0.0.1, IP Address:0:0:0:0:0:0:0:1",
                "CA:FALSE",
            ] {
                assert!(text.contains(want), "{kind:?}: no {want} in\n{text}");
            }
            // openssl's view of the public key is ours.
            let spki = tool(
                "openssl",
                &[
                    "x509".as_ref(),
                    "-noout".as_ref(),
                    "-pubkey".as_ref(),
                    "-in".as_ref(),
                    arg,
                ],
            );
            assert_eq!(spki, pubkey::public_key(&key).unwrap(), "{kind:?}");
            // Self-signed and its signature good: it verifies against itself as the only anchor.
            let ok = tool(
                "openssl",
                &["verify".as_ref(), "-CAfile".as_ref(), arg, arg],
            );
            assert!(ok.trim_end().ends_with(": OK"), "{kind:?}: {ok}");
            // Valid for 30 days: still valid in 29 days and some hours, no longer in 30 days and a minute.
            let checkend = |secs: u64| {
                Command::new("openssl")
                    .args(["x509", "-noout", "-checkend", &secs.to_string(), "-in"])
                    .arg(arg)
                    .output()
                    .unwrap()
                    .status
                    .success()
            };
            assert!(checkend(30 * 86400 - 600), "{kind:?}: expires too early");
            assert!(!checkend(30 * 86400 + 60), "{kind:?}: expires too late");
        }
    }

    #[test]
    fn each_certificate_has_its_own_positive_serial() {
        let key = s(&KeyType::EcdsaP256.generate().unwrap());
        let serial = |pem: &str| {
            let der = pem_der(pem, CERT_LABEL, CERT_WHAT).unwrap();
            let cert = parse(&der).unwrap();
            (cert.raw_serial().to_vec(), cert.serial.bits())
        };
        let (a, bits) = serial(&self_signed(&key, "a", &[], 1).unwrap());
        let (b, _) = serial(&self_signed(&key, "a", &[], 1).unwrap());
        assert_ne!(a, b);
        assert!(a.len() <= 20 && a[0] < 0x80, "positive, at most 20 octets");
        assert!(bits > 64, "a serial of {bits} bits is not random enough");
    }

    #[test]
    fn a_certificate_matches_its_own_key_only() {
        let ed = s(&KeyType::Ed25519.generate().unwrap());
        let cert = self_signed(&ed, "a", &[], 1).unwrap();
        let other_ed = s(&KeyType::Ed25519.generate().unwrap());
        let rsa = s(&KeyType::Rsa { bits: 2048 }.generate().unwrap());
        assert_eq!(matches_key(&cert, &other_ed), Ok(false));
        assert_eq!(matches_key(&cert, &rsa), Ok(false));
        let rsa_cert = self_signed(&rsa, "a", &[], 1).unwrap();
        assert_eq!(matches_key(&rsa_cert, &rsa), Ok(true));
        assert_eq!(matches_key(&rsa_cert, &ed), Ok(false));
        let err = matches_key("garbage", &ed).unwrap_err();
        assert!(err.starts_with("the certificate is not PEM"), "{err}");
        let err = matches_key(&cert, &s(&cert)).unwrap_err();
        assert!(
            err.contains("the key is a PEM block labelled `CERTIFICATE`"),
            "{err}"
        );
        let public = pubkey::public_key(&ed).unwrap();
        let err = matches_key(&cert, &s(&public)).unwrap_err();
        assert!(
            err.contains("labelled `PUBLIC KEY`, expected `PRIVATE KEY`"),
            "{err}"
        );
        assert!(!err.contains(public.lines().nth(1).unwrap()), "{err}");
    }

    #[test]
    fn an_expired_or_future_certificate_is_invalid_and_says_when() {
        let key = KeyType::EcdsaP256.generate().unwrap();
        let day = |y, m, d| {
            time::Date::from_calendar_date(y, m, d)
                .unwrap()
                .midnight()
                .assume_utc()
        };
        let expired = dated(
            &key,
            day(2020, time::Month::January, 1),
            day(2021, time::Month::March, 4),
        );
        assert_eq!(
            validate(&expired),
            Validity::Invalid("is a certificate that expired on 2021-03-04 00:00 UTC".into())
        );
        let future = dated(
            &key,
            day(2999, time::Month::June, 2),
            day(3000, time::Month::January, 1),
        );
        assert_eq!(
            validate(&future),
            Validity::Invalid("is a certificate not valid before 2999-06-02 00:00 UTC".into())
        );
        // Expired or not, it is still the key's certificate.
        assert_eq!(matches_key(&expired, &s(&key)), Ok(true));
    }

    #[test]
    fn what_is_not_one_certificate_is_invalid_and_never_quoted() {
        let key = KeyType::Ed25519.generate().unwrap();
        let cert = self_signed(&s(&key), "a", &[], 1).unwrap();
        let public = pubkey::public_key(&s(&key)).unwrap();
        let body: String = cert.lines().filter(|l| !l.starts_with("-----")).collect();
        let truncated = {
            let der = pem_der(&cert, CERT_LABEL, CERT_WHAT).unwrap();
            pem::encode(&pem::Pem::new(CERT_LABEL, der[..der.len() - 10].to_vec()))
        };
        let cases = [
            (body, "is not PEM"),
            (format!("{cert}{cert}"), "holds 2 PEM blocks"),
            (
                key.clone(),
                "labelled `PRIVATE KEY`, expected `CERTIFICATE`",
            ),
            (public, "labelled `PUBLIC KEY`, expected `CERTIFICATE`"),
            (truncated, "does not parse as X.509"),
        ];
        assert_invalid(&cases, validate);
    }

    #[test]
    fn bad_requests_are_refused_before_signing() {
        let key = s(&KeyType::Ed25519.generate().unwrap());
        let err = |cn: &str, sans: &[String], days| self_signed(&key, cn, sans, days).unwrap_err();
        assert!(err("a", &[], 0).contains("`days` is 0"));
        assert!(err(" ", &[], 1).contains("`cn`"));
        assert!(err("a", &["ok.org".into(), "bad name".into()], 1).contains("subjectAltName #2"));
        assert!(err("a", &[], u32::MAX).contains("past the year 9999"));
        let p384 = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384)
            .unwrap()
            .serialize_pem();
        let e = self_signed(&s(&p384), "a", &[], 1).unwrap_err();
        assert!(e.contains("ECDSA P-384 key, expected Ed25519"), "{e}");
        let e = self_signed(&s("nope"), "a", &[], 1).unwrap_err();
        assert!(
            e.starts_with("the key is not PEM") && !e.contains("nope"),
            "{e}"
        );
    }
}
