//! `ssh-ed25519`: an OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`), unencrypted,
//! encoded by the `ssh-key` crate from a seed of the OS CSPRNG; ring derives its public half.

use ring::signature::{Ed25519KeyPair, KeyPair as _};
use ssh_key::private::{Ed25519Keypair, Ed25519PrivateKey, KeypairData};
use ssh_key::public::Ed25519PublicKey;
use ssh_key::{Algorithm, LineEnding, PrivateKey};
use zeroize::Zeroize as _;

use super::{RngError, Validity};

/// The public key of an Ed25519 seed.
fn public_of(seed: &[u8; 32]) -> Result<[u8; 32], String> {
    let pair = Ed25519KeyPair::from_seed_unchecked(seed).map_err(|e| e.to_string())?;
    let mut public = [0u8; 32];
    public.copy_from_slice(pair.public_key().as_ref());
    Ok(public)
}

/// A fresh OpenSSH Ed25519 private key, without a comment.
pub(super) fn generate() -> Result<String, RngError> {
    let raw = super::random_bytes(32)?;
    let mut seed = [0u8; 32];
    seed.copy_from_slice(&raw);
    let public = public_of(&seed);
    let pair = Ed25519Keypair {
        public: Ed25519PublicKey(public.map_err(RngError::Failed)?),
        private: Ed25519PrivateKey::from_bytes(&seed),
    };
    seed.zeroize();
    let pem = PrivateKey::new(KeypairData::Ed25519(pair), "")
        .and_then(|key| key.to_openssh(LineEnding::LF))
        .map_err(|e| RngError::Failed(e.to_string()))?;
    Ok(pem.to_string())
}

/// Whether `v` is one unencrypted OpenSSH Ed25519 private key whose halves agree.
pub(super) fn validate(v: &str) -> Validity {
    let t = v.trim();
    if !t.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----") {
        return Validity::Invalid(
            "is not an OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`)".into(),
        );
    }
    let key = match PrivateKey::from_openssh(t) {
        Ok(key) => key,
        Err(_) => {
            return Validity::Invalid("is an OpenSSH private key block that does not parse".into())
        }
    };
    if key.is_encrypted() {
        return Validity::Invalid(
            "is an encrypted OpenSSH key; vault-seed expects one without a passphrase".into(),
        );
    }
    let Some(pair) = key.key_data().ed25519() else {
        let found = match key.algorithm() {
            Algorithm::Rsa { .. } => "RSA",
            Algorithm::Ecdsa { .. } => "ECDSA",
            Algorithm::Dsa => "DSA",
            _ => "another kind of",
        };
        return Validity::Invalid(format!("is an OpenSSH {found} key, expected Ed25519"));
    };
    let mut seed = pair.private.to_bytes();
    let public = public_of(&seed);
    seed.zeroize();
    match public {
        Ok(p) if p == pair.public.0 => Validity::Valid,
        _ => Validity::Invalid(
            "is an OpenSSH Ed25519 key whose public half does not match its private half".into(),
        ),
    }
}
