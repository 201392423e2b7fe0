//! One key of a Secret's `data`, read from the API server's answer without keeping the others.

use secrecy::SecretString;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use zeroize::Zeroizing;

use std::collections::BTreeMap;

use crate::base::digest::{Digest, Digester};

/// What key `KEY` of a Secret holds ([`super::Cluster::secret_value`]).
pub enum SecretKey {
    /// The Secret does not exist.
    NoSecret,
    /// The Secret exists and its `data` has no such key.
    NoKey,
    /// The key is there with an empty value.
    Empty,
    /// The value is not UTF-8 text (Vault's fields hold strings).
    NotText,
    /// The value, decoded.
    Value(SecretString),
}

/// Reads a Secret object and keeps `data[self.0]` (still base64), skipping every other member
/// and every other key unread.
pub(super) struct OneKey<'k>(pub &'k str);

impl<'de> DeserializeSeed<'de> for OneKey<'_> {
    type Value = Option<Zeroizing<String>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(Object(self.0))
    }
}

/// The object's members: `data` read with [`Data`], the others skipped.
struct Object<'k>(&'k str);

impl<'de> Visitor<'de> for Object<'_> {
    type Value = Option<Zeroizing<String>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Secret object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(member) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if member == "data" {
                found = map.next_value_seed(Data(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// `data`: null, or a map of which only the key wanted is kept.
struct Data<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for Data<'_> {
    type Value = Option<Zeroizing<String>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Data<'_> {
    type Value = Option<Zeroizing<String>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Secret's data")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == self.0 {
                let v: Option<String> = map.next_value()?;
                found = Some(Zeroizing::new(v.unwrap_or_default()));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// One key of a Secret's `data` as [`super::Cluster::secret_digests`] keeps it: whether it
/// is empty, and the digest of its decoded bytes (`None` when it is not base64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDigest {
    /// The value is empty (or null).
    pub empty: bool,
    /// The decoded value's digest.
    pub digest: Option<Digest>,
}

/// Reads a Secret object and keeps each key of `data` as a [`KeyDigest`]: each value is decoded
/// into a buffer wiped when dropped and digested there, never held beyond that.
pub(super) struct Digests<'d>(pub &'d Digester);

impl<'de> DeserializeSeed<'de> for Digests<'_> {
    type Value = BTreeMap<String, KeyDigest>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Digests<'_> {
    type Value = BTreeMap<String, KeyDigest>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Secret object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = BTreeMap::new();
        while let Some(member) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if member == "data" {
                found = map.next_value_seed(DataDigests(Some(self.0)))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// `data`: null, or a map whose values are digested one by one (without a digester, only
/// whether each is empty is kept).
pub(super) struct DataDigests<'d>(pub Option<&'d Digester>);

impl<'de> DeserializeSeed<'de> for DataDigests<'_> {
    type Value = BTreeMap<String, KeyDigest>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for DataDigests<'_> {
    type Value = BTreeMap<String, KeyDigest>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Secret's data")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use base64::Engine as _;
        let mut found = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let encoded: Zeroizing<String> =
                Zeroizing::new(map.next_value::<Option<String>>()?.unwrap_or_default());
            let digest = self.0.and_then(|digester| {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(encoded.as_bytes())
                    .ok()
                    .map(Zeroizing::new)?;
                Some(digester.of(&decoded))
            });
            found.insert(
                key,
                KeyDigest {
                    empty: encoded.is_empty(),
                    digest,
                },
            );
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(json: &str, key: &str) -> Option<String> {
        let mut de = serde_json::Deserializer::from_str(json);
        OneKey(key)
            .deserialize(&mut de)
            .unwrap()
            .map(|v| v.to_string())
    }

    #[test]
    fn only_the_key_asked_for_is_kept() {
        let s = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a","data":{"pat":"no"}},
                    "data":{"other":"b3RoZXI=","pat":"cGF0"},"type":"Opaque"}"#;
        assert_eq!(one(s, "pat").as_deref(), Some("cGF0"));
        assert_eq!(one(s, "nope"), None);
        assert_eq!(one(r#"{"kind":"Secret"}"#, "pat"), None);
        assert_eq!(one(r#"{"data":null}"#, "pat"), None);
        assert_eq!(one(r#"{"data":{"pat":null}}"#, "pat").as_deref(), Some(""));
        let mut de = serde_json::Deserializer::from_str("[1]");
        assert!(OneKey("pat").deserialize(&mut de).is_err());
    }

    #[test]
    fn each_value_is_kept_as_its_digest_only() {
        let d = Digester::new().unwrap();
        let s = r#"{"kind":"Secret","metadata":{"name":"a"},
                    "data":{"pat":"cGF0","empty":"","null":null,"bad":"%%"},"type":"Opaque"}"#;
        let mut de = serde_json::Deserializer::from_str(s);
        let got = Digests(&d).deserialize(&mut de).unwrap();
        assert_eq!(got["pat"].digest, Some(d.of(b"pat")));
        assert!(!got["pat"].empty);
        assert_eq!(got["empty"].digest, Some(d.of(b"")));
        assert!(got["empty"].empty && got["null"].empty);
        assert_eq!(got["bad"].digest, None);
        let mut de = serde_json::Deserializer::from_str(r#"{"data":null}"#);
        assert!(Digests(&d).deserialize(&mut de).unwrap().is_empty());
    }
}
