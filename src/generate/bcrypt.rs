//! Interim: bcrypt hashes, until their implementation lands; every answer is "cannot".
use super::Validity;
use secrecy::SecretString;
/// Not built yet: always an error.
pub fn hash(_s: &SecretString, _c: u32) -> Result<SecretString, String> {
    Err("this build cannot make bcrypt hashes".into())
}
/// Not built yet: never valid.
pub fn validate(_v: &str, _c: u32) -> Validity {
    Validity::Invalid("cannot be checked by this build".into())
}
/// Not built yet: never matches.
pub fn matches(_h: &SecretString, _s: &SecretString) -> bool {
    false
}
/// Costs a spec may give.
pub const COSTS: std::ops::RangeInclusive<u32> = 4..=16;
