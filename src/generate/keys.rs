//! Key-material generators: private keys as PKCS#8 PEM from the OS CSPRNG, and existing keys
//! judged by parsing them (ring, through rcgen). Nothing here encodes ASN.1 by hand, and
//! no reason quotes the value (not even its PEM label unless it is a well-known one).

use ed25519::pkcs8::spki::der::pem::LineEnding;
use ed25519::pkcs8::EncodePrivateKey as _;
use ed25519::KeypairBytes;
use rcgen::{KeyPair, SignatureAlgorithm, PKCS_ECDSA_P256_SHA256, PKCS_ED25519};
use rsa::pkcs8::DecodePrivateKey as _;
use rsa::traits::PublicKeyParts as _;
use zeroize::Zeroizing;

use super::{RngError, Validity};

/// The PEM label of a PKCS#8 private key (RFC 7468, section 10).
const PKCS8_LABEL: &str = "PRIVATE KEY";

/// Labels a reason may name: well known, so naming one shows nothing of the value.
const KNOWN_LABELS: &[&str] = &[
    "PRIVATE KEY",
    "ENCRYPTED PRIVATE KEY",
    "RSA PRIVATE KEY",
    "EC PRIVATE KEY",
    "OPENSSH PRIVATE KEY",
    "PUBLIC KEY",
    "RSA PUBLIC KEY",
    "CERTIFICATE",
    "CERTIFICATE REQUEST",
];

/// The asymmetric key types generated as PKCS#8.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum KeyType {
    /// Ed25519 (RFC 8410).
    Ed25519,
    /// ECDSA on NIST P-256 (secp256r1).
    EcdsaP256,
    /// RSA with a modulus of `bits` bits (one of [`RSA_BITS`]).
    Rsa {
        /// Modulus size.
        bits: usize,
    },
}

/// The RSA key sizes a spec may ask for.
pub const RSA_BITS: &[usize] = &[2048, 3072, 4096];
/// The RSA key size when a spec does not say.
pub const DEFAULT_RSA_BITS: usize = 2048;

impl KeyType {
    fn algorithm(self) -> &'static SignatureAlgorithm {
        match self {
            KeyType::Ed25519 => &PKCS_ED25519,
            KeyType::EcdsaP256 => &PKCS_ECDSA_P256_SHA256,
            KeyType::Rsa { .. } => &rcgen::PKCS_RSA_SHA256,
        }
    }

    /// How people name the key type.
    pub fn label(self) -> String {
        match self {
            KeyType::Ed25519 => "Ed25519".into(),
            KeyType::EcdsaP256 => "ECDSA P-256".into(),
            KeyType::Rsa { bits } => format!("RSA {bits}-bit"),
        }
    }

    /// A fresh private key, PKCS#8 PEM.
    pub(super) fn generate(self) -> Result<String, RngError> {
        match self {
            // PKCS#8 v1 (the seed alone), as `openssl genpkey` writes it: ring's v2, with the
            // public key, is refused by OpenSSL 3.0.
            KeyType::Ed25519 => {
                let raw = super::random_bytes(32)?;
                let mut seed = [0u8; 32];
                seed.copy_from_slice(&raw);
                let key = KeypairBytes {
                    secret_key: seed,
                    public_key: None,
                };
                zeroize::Zeroize::zeroize(&mut seed);
                let pem = key
                    .to_pkcs8_pem(LineEnding::LF)
                    .map_err(|e| RngError::Failed(e.to_string()))?;
                Ok(pem.to_string())
            }
            KeyType::EcdsaP256 => KeyPair::generate_for(self.algorithm())
                .map(|key| key.serialize_pem())
                .map_err(|e| RngError::Failed(e.to_string())),
            KeyType::Rsa { bits } => {
                let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, bits)
                    .map_err(|e| RngError::Failed(e.to_string()))?;
                let pem = key
                    .to_pkcs8_pem(LineEnding::LF)
                    .map_err(|e| RngError::Failed(e.to_string()))?;
                Ok(pem.to_string())
            }
        }
    }

    /// Whether `v` is one PKCS#8 PEM private key of this type.
    pub(super) fn validate(self, v: &str) -> Validity {
        let der = match pkcs8_der(v) {
            Ok(der) => der,
            Err(reason) => return Validity::Invalid(reason),
        };
        // ring reads RSA keys of 2048 to 4096 bits only: the rsa crate reads any size, to say it.
        if let KeyType::Rsa { bits } = self {
            if let Ok(key) = rsa::RsaPrivateKey::from_pkcs8_der(&der) {
                let size = key.size() * 8;
                return match key.validate() {
                    Err(_) => Validity::Invalid(format!(
                        "is a PKCS#8 RSA key whose parts do not agree (expected RSA {bits}-bit)"
                    )),
                    Ok(()) if size != bits => Validity::Invalid(format!(
                        "is a PKCS#8 RSA {size}-bit key, expected RSA {bits}-bit"
                    )),
                    Ok(()) => Validity::Valid,
                };
            }
        }
        match KeyPair::try_from(der.as_slice()) {
            Ok(key)
                if key.algorithm() == self.algorithm() && !matches!(self, KeyType::Rsa { .. }) =>
            {
                Validity::Valid
            }
            Ok(key) => Validity::Invalid(format!(
                "is a PKCS#8 {} key, expected {}",
                algorithm_label(key.algorithm()),
                self.label()
            )),
            Err(_) => Validity::Invalid(format!(
                "is a `{PKCS8_LABEL}` PEM block that does not parse as a PKCS#8 key (expected {})",
                self.label()
            )),
        }
    }
}

pub(super) fn algorithm_label(alg: &SignatureAlgorithm) -> &'static str {
    if alg == &PKCS_ED25519 {
        "Ed25519"
    } else if alg == &PKCS_ECDSA_P256_SHA256 {
        "ECDSA P-256"
    } else if alg == &rcgen::PKCS_ECDSA_P384_SHA384 {
        "ECDSA P-384"
    } else if alg == &rcgen::PKCS_RSA_SHA256 {
        "RSA"
    } else {
        "other"
    }
}

/// The DER inside `v`, which must be exactly one PEM block labelled `PRIVATE KEY` and nothing
/// else but surrounding whitespace.
pub(super) fn pkcs8_der(v: &str) -> Result<Zeroizing<Vec<u8>>, String> {
    pem_der(v, PKCS8_LABEL, "an unencrypted PKCS#8 key")
}

/// The DER inside `v`, which must be exactly one PEM block labelled `label` and nothing else but
/// surrounding whitespace; `what` names the thing expected in reasons (`a certificate`).
pub(super) fn pem_der(v: &str, label: &str, what: &str) -> Result<Zeroizing<Vec<u8>>, String> {
    let t = v.trim();
    if !t.starts_with("-----BEGIN ") || !t.ends_with("-----") {
        return Err(format!(
            "is not PEM: {what} is one `-----BEGIN {label}-----` block"
        ));
    }
    let mut blocks = match pem::parse_many(t) {
        Ok(b) => b,
        Err(_) => return Err("is not valid PEM (bad armour or base64)".into()),
    };
    if blocks.len() != 1 {
        return Err(format!(
            "holds {} PEM blocks, expected one `{label}` block",
            blocks.len()
        ));
    }
    let block = blocks.remove(0);
    if block.tag() != label {
        let named = KNOWN_LABELS
            .iter()
            .find(|l| **l == block.tag())
            .map_or_else(|| "another label".to_string(), |l| format!("`{l}`"));
        return Err(format!(
            "is a PEM block labelled {named}, expected `{label}` ({what})"
        ));
    }
    Ok(Zeroizing::new(block.into_contents()))
}
