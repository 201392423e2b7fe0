//! Keyed digests of secret values: how `verify` tells whether a Kubernetes Secret holds the value
//! in Vault without keeping, printing or comparing either value itself.
//!
//! Each run draws its own HMAC-SHA256 key from the OS CSPRNG, so a digest means nothing outside
//! the run that made it (a leaked one cannot be tested against guesses), and two digests are
//! compared in constant time. A digest is the tag's first 128 bits, as a truncated HMAC is
//! (RFC 2104 section 5): far beyond any chance of two values meeting, at half the room (a
//! platform's run holds a digest per field, per decoding, per Secret key).

use ring::hmac;
use subtle::ConstantTimeEq;

/// What digests values: one per run, its key never leaves it.
pub struct Digester {
    key: hmac::Key,
}

impl std::fmt::Debug for Digester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Digester([redacted])")
    }
}

impl Digester {
    /// A digester with a fresh random key; `None` when the OS gives no randomness (then nothing
    /// is compared).
    pub fn new() -> Option<Digester> {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).ok()?;
        Some(Digester { key })
    }

    /// The digest of `value`'s bytes.
    pub fn of(&self, value: &[u8]) -> Digest {
        let tag = hmac::sign(&self.key, value);
        let mut out = [0u8; DIGEST_LEN];
        out.copy_from_slice(&tag.as_ref()[..DIGEST_LEN]);
        Digest(out)
    }
}

/// The bytes of a digest: the leading half of an HMAC-SHA256 tag.
const DIGEST_LEN: usize = 16;

/// A value's keyed digest. Equal digests (compared in constant time) mean equal values.
#[derive(Clone, Copy)]
pub struct Digest([u8; DIGEST_LEN]);

impl PartialEq for Digest {
    fn eq(&self, other: &Digest) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for Digest {}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Digest([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_have_equal_digests_and_nothing_shows() {
        let d = Digester::new().unwrap();
        assert_eq!(d.of(b"s3cret"), d.of(b"s3cret"));
        assert_ne!(d.of(b"s3cret"), d.of(b"s3cres"));
        assert_ne!(d.of(b""), d.of(b"\0"));
        // Another run's key: its digests of the same value differ.
        let other = Digester::new().unwrap();
        assert_ne!(d.of(b"s3cret"), other.of(b"s3cret"));
        let shown = format!("{:?} {:?}", d, d.of(b"s3cret"));
        assert_eq!(shown, "Digester([redacted]) Digest([redacted])");
    }
}
