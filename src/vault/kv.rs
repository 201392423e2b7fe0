//! KV secrets engine operations, v1 and v2, with values held as [`SecretString`] from the moment
//! they are parsed out of a response body.

use std::collections::BTreeMap;
use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::client::{decode, Call, Reply};
use super::{Vault, VaultError};
use crate::base::kv::{KvMount, KvVersion};

/// One field's value as read from Vault.
pub enum FieldValue {
    /// A string, kept secret.
    Text(SecretString),
    /// Not a string (a number, a list, an object, null): its JSON kind. The value is dropped.
    NotText(&'static str),
}

impl fmt::Debug for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Text(_) => f.write_str("Text([redacted])"),
            FieldValue::NotText(kind) => write!(f, "NotText({kind})"),
        }
    }
}

impl<'de> Deserialize<'de> for FieldValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FieldValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FieldValue, E> {
                self.visit_string(v.to_string())
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<FieldValue, E> {
                let v = SecretString::from(v);
                crate::base::redact::register(&v);
                Ok(FieldValue::Text(v))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<FieldValue, E> {
                Ok(FieldValue::NotText("a boolean"))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<FieldValue, E> {
                Ok(FieldValue::NotText("a number"))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<FieldValue, E> {
                Ok(FieldValue::NotText("a number"))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<FieldValue, E> {
                Ok(FieldValue::NotText("a number"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<FieldValue, E> {
                Ok(FieldValue::NotText("null"))
            }
            fn visit_none<E: de::Error>(self) -> Result<FieldValue, E> {
                Ok(FieldValue::NotText("null"))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<FieldValue, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FieldValue::NotText("a list"))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<FieldValue, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(FieldValue::NotText("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

/// What is at a path.
#[derive(Debug)]
pub enum Existing {
    /// Nothing: never written (or its metadata was deleted).
    Absent,
    /// A live version.
    Present(Present),
    /// The latest version was soft-deleted or destroyed (KV v2).
    Deleted {
        /// The latest version's number, to write the next one with `cas`.
        version: u64,
        /// Its custom metadata, kept when vault-seed writes metadata again.
        custom_metadata: BTreeMap<String, String>,
    },
}

/// A live secret.
#[derive(Debug)]
pub struct Present {
    /// Its version (KV v2; 0 on KV v1).
    pub version: u64,
    /// When that version was created (RFC 3339), KV v2.
    pub created_time: Option<String>,
    /// Its fields.
    pub fields: BTreeMap<String, FieldValue>,
    /// Its custom metadata (KV v2).
    pub custom_metadata: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Envelope<T> {
    data: Option<T>,
}

#[derive(Deserialize)]
struct Kv2Data {
    data: Option<BTreeMap<String, FieldValue>>,
    metadata: Option<Kv2VersionMeta>,
}

#[derive(Deserialize)]
struct Kv2VersionMeta {
    #[serde(default)]
    version: u64,
    #[serde(default)]
    created_time: Option<String>,
    #[serde(default)]
    deletion_time: Option<String>,
    #[serde(default)]
    destroyed: bool,
    #[serde(default)]
    custom_metadata: Option<BTreeMap<String, String>>,
}

/// A write's fields: names with borrowed secret values, exposed only while serialised.
pub struct WriteFields<'a>(pub Vec<(&'a str, &'a SecretString)>);

impl Serialize for WriteFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v.expose_secret())?;
        }
        m.end()
    }
}

fn body<T: Serialize>(v: &T) -> Vec<u8> {
    // Serialising our own maps of strings cannot fail.
    serde_json::to_vec(v).unwrap_or_default()
}

impl Vault {
    /// LIST a folder: the names under it (sub-folders end with `/`); `None` when it is empty or
    /// absent (404).
    pub async fn kv_list(
        &self,
        mount: &KvMount,
        folder: &str,
    ) -> Result<Option<Vec<String>>, VaultError> {
        #[derive(Deserialize)]
        struct Keys {
            #[serde(default)]
            keys: Vec<String>,
        }
        let path = mount.list_path(folder);
        let reply = self.send(|| Call::list(&path), "list").await?;
        match reply {
            Reply::NotFound(_) => Ok(None),
            Reply::Ok(b) => {
                let env: Envelope<Keys> = decode(&b, "LIST", &path)?;
                Ok(Some(env.data.map(|k| k.keys).unwrap_or_default()))
            }
        }
    }

    /// Read a secret's latest version.
    pub async fn kv_read(&self, mount: &KvMount, path: &str) -> Result<Existing, VaultError> {
        self.kv_read_at(mount, path, None).await
    }

    /// Read one version of a secret (KV v2; `None`, or KV v1: the latest). A version that was
    /// deleted or destroyed is [`Existing::Deleted`], one never written [`Existing::Absent`].
    pub async fn kv_read_at(
        &self,
        mount: &KvMount,
        path: &str,
        version: Option<u64>,
    ) -> Result<Existing, VaultError> {
        let api = mount.data_path(path);
        let call = || match (mount.version, version) {
            (KvVersion::V2, Some(v)) => Call::get_version(&api, v),
            _ => Call::get(&api),
        };
        let reply = self.send(call, "read").await?;
        match (mount.version, reply) {
            (KvVersion::V2, Reply::Ok(b)) => {
                let env: Envelope<Kv2Data> = decode(&b, "GET", &api)?;
                let d = env.data.ok_or_else(|| VaultError::Decode {
                    method: "GET",
                    path: api.clone(),
                    detail: "no `data`".into(),
                })?;
                let meta = d.metadata.unwrap_or(Kv2VersionMeta {
                    version: 0,
                    created_time: None,
                    deletion_time: None,
                    destroyed: false,
                    custom_metadata: None,
                });
                match d.data {
                    Some(fields) => Ok(Existing::Present(Present {
                        version: meta.version,
                        created_time: meta.created_time,
                        fields,
                        custom_metadata: meta.custom_metadata.unwrap_or_default(),
                    })),
                    None => Ok(Existing::Deleted {
                        version: meta.version,
                        custom_metadata: meta.custom_metadata.unwrap_or_default(),
                    }),
                }
            }
            (KvVersion::V2, Reply::NotFound(b)) => {
                // A soft-deleted or destroyed latest version answers 404 with its metadata.
                let env: Option<Envelope<Kv2Data>> = serde_json::from_slice(&b).ok();
                match env.and_then(|e| e.data).and_then(|d| d.metadata) {
                    Some(m)
                        if m.version > 0
                            && (m.destroyed
                                || m.deletion_time.as_deref().is_some_and(|t| !t.is_empty())) =>
                    {
                        Ok(Existing::Deleted {
                            version: m.version,
                            custom_metadata: m.custom_metadata.unwrap_or_default(),
                        })
                    }
                    _ => Ok(Existing::Absent),
                }
            }
            (_, Reply::Ok(b)) => {
                let env: Envelope<BTreeMap<String, FieldValue>> = decode(&b, "GET", &api)?;
                Ok(Existing::Present(Present {
                    version: 0,
                    created_time: None,
                    fields: env.data.unwrap_or_default(),
                    custom_metadata: BTreeMap::new(),
                }))
            }
            (_, Reply::NotFound(_)) => Ok(Existing::Absent),
        }
    }

    /// Write a secret. On KV v2 with `cas` (0 = only if absent); returns the new version (0 on
    /// v1). `capability` is what a 403 means is missing (`create` or `update`).
    pub async fn kv_write(
        &self,
        mount: &KvMount,
        path: &str,
        fields: &WriteFields<'_>,
        cas: Option<u64>,
        capability: &'static str,
    ) -> Result<u64, VaultError> {
        let api = mount.data_path(path);
        let payload = if mount.version == KvVersion::V2 {
            #[derive(Serialize)]
            struct Opts {
                #[serde(skip_serializing_if = "Option::is_none")]
                cas: Option<u64>,
            }
            #[derive(Serialize)]
            struct Body<'a, 'b> {
                options: Opts,
                data: &'a WriteFields<'b>,
            }
            zeroize::Zeroizing::new(body(&Body {
                options: Opts { cas },
                data: fields,
            }))
        } else {
            zeroize::Zeroizing::new(body(fields))
        };
        let reply = self
            .send(|| Call::post(&api, payload.to_vec()), capability)
            .await?;
        match (mount.version, reply) {
            (KvVersion::V2, Reply::Ok(b)) => {
                #[derive(Deserialize)]
                struct Written {
                    version: u64,
                }
                let env: Envelope<Written> = decode(&b, "POST", &api)?;
                Ok(env.data.map(|w| w.version).unwrap_or(0))
            }
            (_, Reply::Ok(_)) => Ok(0),
            (_, Reply::NotFound(_)) => Err(VaultError::Api {
                method: "POST",
                path: api,
                status: 404,
                errors: vec!["no handler for this path: is the mount a KV engine?".into()],
            }),
        }
    }

    /// A KV v2 secret's custom metadata, read from its metadata path (no value is read); `None`
    /// when the path has no metadata (absent). `audit` reads only this of paths no spec names.
    pub async fn kv_read_custom_metadata(
        &self,
        mount: &KvMount,
        path: &str,
    ) -> Result<Option<BTreeMap<String, String>>, VaultError> {
        #[derive(Deserialize)]
        struct Meta {
            #[serde(default)]
            custom_metadata: Option<BTreeMap<String, String>>,
        }
        let api = mount.metadata_path(path);
        match self.send(|| Call::get(&api), "read").await? {
            Reply::NotFound(_) => Ok(None),
            Reply::Ok(b) => {
                let env: Envelope<Meta> = decode(&b, "GET", &api)?;
                Ok(Some(
                    env.data.and_then(|m| m.custom_metadata).unwrap_or_default(),
                ))
            }
        }
    }

    /// Replace a KV v2 secret's custom metadata.
    pub async fn kv_set_custom_metadata(
        &self,
        mount: &KvMount,
        path: &str,
        custom: &BTreeMap<String, String>,
    ) -> Result<(), VaultError> {
        let api = mount.metadata_path(path);
        let payload = body(&serde_json::json!({ "custom_metadata": custom }));
        self.send(|| Call::post(&api, payload.clone()), "update")
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_values_keep_strings_secret_and_drop_others() {
        let m: BTreeMap<String, FieldValue> = serde_json::from_str(
            r#"{"a":"s3cr3t","b":1,"c":[1,2],"d":{"x":"y"},"e":null,"f":true}"#,
        )
        .unwrap();
        assert!(matches!(&m["a"], FieldValue::Text(s) if s.expose_secret() == "s3cr3t"));
        assert!(matches!(m["b"], FieldValue::NotText("a number")));
        assert!(matches!(m["c"], FieldValue::NotText("a list")));
        assert!(matches!(m["d"], FieldValue::NotText("an object")));
        assert!(matches!(m["e"], FieldValue::NotText("null")));
        assert!(matches!(m["f"], FieldValue::NotText("a boolean")));
        assert!(!format!("{:?}", m["a"]).contains("s3cr3t"));
    }
}
