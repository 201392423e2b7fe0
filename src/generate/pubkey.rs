//! Interim: the public half of a key, until its implementation lands; every answer is "cannot".
use super::Validity;
use secrecy::SecretString;
/// Not built yet: always an error.
pub fn public_key(_p: &SecretString) -> Result<String, String> {
    Err("this build cannot make public keys".into())
}
/// Not built yet: never valid.
pub fn validate(_v: &str) -> Validity {
    Validity::Invalid("cannot be checked by this build".into())
}
