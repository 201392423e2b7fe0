//! Interim: self-signed certificates, until their implementation lands; every answer is "cannot".
use super::Validity;
use secrecy::SecretString;
/// Not built yet: always an error.
pub fn self_signed(_k: &SecretString, _cn: &str, _s: &[String], _d: u32) -> Result<String, String> {
    Err("this build cannot make certificates".into())
}
/// Not built yet: never valid.
pub fn validate(_v: &str) -> Validity {
    Validity::Invalid("cannot be checked by this build".into())
}
/// Not built yet: always an error.
pub fn matches_key(_c: &str, _k: &SecretString) -> Result<bool, String> {
    Err("cannot be checked by this build".into())
}
