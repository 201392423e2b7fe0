//! `jwks`: a JSON Web Key Set (RFC 7517) holding one private signing key, RSA (`RS256`, 2048
//! bits, RustCrypto's `rsa`) or EC (`ES256`, P-256, RustCrypto's `p256`), from the OS CSPRNG,
//! with its RFC 7638 thumbprint as `kid`. An existing set is judged by rebuilding its key.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rsa::traits::{PrivateKeyParts as _, PublicKeyParts as _};
use rsa::BigUint;
use serde_json::{json, Map, Value};
use sha2::Digest as _;

use super::{RngError, Validity};

/// The RSA key size of an `RS256` set.
pub(super) const RSA_BITS: usize = 2048;

/// The signature algorithm of the set's key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum JwkAlg {
    /// RSASSA-PKCS1-v1_5 with SHA-256: an RSA key.
    Rs256,
    /// ECDSA on P-256 with SHA-256: an EC key.
    Es256,
}

impl JwkAlg {
    /// The names a spec may use.
    pub const NAMES: &'static [&'static str] = &["RS256", "ES256"];

    /// From its JOSE name.
    pub fn from_name(s: &str) -> Option<JwkAlg> {
        match s {
            "RS256" => Some(JwkAlg::Rs256),
            "ES256" => Some(JwkAlg::Es256),
            _ => None,
        }
    }

    /// Its JOSE name.
    pub fn name(self) -> &'static str {
        match self {
            JwkAlg::Rs256 => "RS256",
            JwkAlg::Es256 => "ES256",
        }
    }

    fn kty(self) -> &'static str {
        match self {
            JwkAlg::Rs256 => "RSA",
            JwkAlg::Es256 => "EC",
        }
    }
}

fn b64(n: &BigUint) -> String {
    URL_SAFE_NO_PAD.encode(n.to_bytes_be())
}

/// RFC 7638: SHA-256 of the required members, in lexical order, without whitespace.
fn thumbprint(key: &Map<String, Value>, alg: JwkAlg) -> Option<String> {
    let s = |k: &str| key.get(k).and_then(Value::as_str);
    let canonical = match alg {
        JwkAlg::Rs256 => json!({ "e": s("e")?, "kty": "RSA", "n": s("n")? }),
        JwkAlg::Es256 => json!({ "crv": s("crv")?, "kty": "EC", "x": s("x")?, "y": s("y")? }),
    };
    // serde_json's maps keep keys sorted, which is the order RFC 7638 asks for.
    let digest = sha2::Sha256::digest(canonical.to_string().as_bytes());
    Some(URL_SAFE_NO_PAD.encode(digest))
}

/// A fresh set of one private key, compact JSON.
pub(super) fn generate(alg: JwkAlg) -> Result<String, RngError> {
    let failed = |e: &dyn std::fmt::Display| RngError::Failed(e.to_string());
    let mut key: Map<String, Value> = match alg {
        JwkAlg::Rs256 => {
            let k = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, RSA_BITS)
                .map_err(|e| failed(&e))?;
            let (p, q) = (&k.primes()[0], &k.primes()[1]);
            let crt = |v: Option<&BigUint>| v.map(b64).ok_or_else(|| failed(&"no CRT values"));
            let qi = k
                .crt_coefficient()
                .ok_or_else(|| failed(&"no CRT coefficient"))?;
            let mut m = Map::new();
            m.insert("kty".into(), "RSA".into());
            m.insert("n".into(), b64(k.n()).into());
            m.insert("e".into(), b64(k.e()).into());
            m.insert("d".into(), b64(k.d()).into());
            m.insert("p".into(), b64(p).into());
            m.insert("q".into(), b64(q).into());
            m.insert("dp".into(), crt(k.dp())?.into());
            m.insert("dq".into(), crt(k.dq())?.into());
            m.insert("qi".into(), b64(&qi).into());
            m
        }
        JwkAlg::Es256 => {
            let k = p256::SecretKey::random(&mut rsa::rand_core::OsRng);
            serde_json::from_str(&k.to_jwk_string()).map_err(|e| failed(&e))?
        }
    };
    let kid = thumbprint(&key, alg).ok_or_else(|| failed(&"no thumbprint"))?;
    key.insert("kid".into(), kid.into());
    key.insert("alg".into(), alg.name().into());
    key.insert("use".into(), "sig".into());
    Ok(json!({ "keys": [key] }).to_string())
}

/// Whether `v` is a set of exactly one private key of `alg`, with a `kid`, that rebuilds.
pub(super) fn validate(v: &str, alg: JwkAlg) -> Validity {
    let bad = |s: String| Validity::Invalid(s);
    let Ok(doc) = serde_json::from_str::<Value>(v) else {
        return bad("is not JSON: a JWKS is `{\"keys\": [...]}`".into());
    };
    let Some(keys) = doc.get("keys").and_then(Value::as_array) else {
        return bad("has no `keys` array: a JWKS is `{\"keys\": [...]}`".into());
    };
    let [Value::Object(key)] = keys.as_slice() else {
        return bad(format!(
            "holds {} keys (or a key that is not an object), expected one",
            keys.len()
        ));
    };
    if key
        .get("kid")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return bad("its key has no `kid`".into());
    }
    let kty = key.get("kty").and_then(Value::as_str).unwrap_or_default();
    if kty != alg.kty() {
        let named = ["RSA", "EC", "OKP", "oct"]
            .iter()
            .find(|k| **k == kty)
            .map_or_else(|| "no known `kty`".to_string(), |k| format!("`kty` {k}"));
        return bad(format!(
            "its key has {named}, expected {} for {}",
            alg.kty(),
            alg.name()
        ));
    }
    match key.get("alg").and_then(Value::as_str) {
        Some(a) if a != alg.name() => {
            return bad(format!("its key's `alg` is not {}", alg.name()));
        }
        _ => {}
    }
    if key.get("d").is_none() {
        return bad("its key is a public key only; expected a private key".into());
    }
    let rebuilt = match alg {
        JwkAlg::Rs256 => rsa_key(key),
        JwkAlg::Es256 => {
            let mut ec = Map::new();
            for k in ["kty", "crv", "x", "y", "d"] {
                if let Some(v) = key.get(k) {
                    ec.insert(k.into(), v.clone());
                }
            }
            p256::SecretKey::from_jwk_str(&Value::Object(ec).to_string())
                .map(|_| ())
                .map_err(|_| "its EC key does not rebuild as a P-256 private key".to_string())
        }
    };
    match rebuilt {
        Ok(()) => Validity::Valid,
        Err(why) => bad(why),
    }
}

fn rsa_key(key: &Map<String, Value>) -> Result<(), String> {
    let part = |k: &str| {
        key.get(k)
            .and_then(Value::as_str)
            .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
            .map(|b| BigUint::from_bytes_be(&zeroize::Zeroizing::new(b)))
            .ok_or_else(|| format!("its RSA key lacks `{k}` or it is not base64url"))
    };
    let k = rsa::RsaPrivateKey::from_components(
        part("n")?,
        part("e")?,
        part("d")?,
        vec![part("p")?, part("q")?],
    )
    .map_err(|_| "its RSA key's parts do not make a key".to_string())?;
    k.validate()
        .map_err(|_| "its RSA key's parts do not agree".to_string())?;
    let bits = k.size() * 8;
    if bits < RSA_BITS {
        return Err(format!(
            "its RSA key is {bits}-bit, expected at least {RSA_BITS}"
        ));
    }
    Ok(())
}
