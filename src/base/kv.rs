//! The KV secrets engine's vocabulary, in one place: its version, the API paths of a secret's
//! data, its metadata and a folder's listing, and the check-and-set option of a write. The Vault
//! client, the spec, the ACL requirements and `verify` all take their paths from here.
//!
//! OpenBao's KV engine (`builtin/logical/kv`): version 1 serves a secret at `<mount>/<path>` and
//! lists a folder with `LIST <mount>/<folder>`; version 2 (`path_data.go`, `path_metadata.go`)
//! serves the data at `<mount>/data/<path>`, the metadata at `<mount>/metadata/<path>`, lists
//! with `LIST <mount>/metadata/<folder>`, and takes `options.cas` on a data write (0: only if
//! absent; N: only if the current version is N). Version 1 has no check-and-set and no history.

use std::fmt;

use serde::{Serialize, Serializer};

/// The KV secrets engine's version, which decides the API paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum KvVersion {
    /// KV v1: `<mount>/<path>`; no check-and-set, no history.
    V1,
    /// KV v2: `<mount>/data/<path>` and `<mount>/metadata/<path>`.
    #[default]
    V2,
}

impl KvVersion {
    /// The version a spec's `kv_version = N` or a mount's `version` option names.
    pub fn from_number(n: i64) -> Option<KvVersion> {
        match n {
            1 => Some(KvVersion::V1),
            2 => Some(KvVersion::V2),
            _ => None,
        }
    }

    /// The version of a mount from its `version` option (`sys/internal/ui/mounts/<mount>`):
    /// `"2"` is KV v2; unset (or anything else) is KV v1, as OpenBao reads it
    /// (`builtin/logical/kv/backend.go`: `version` defaults to 1).
    pub fn from_mount_option(option: Option<&str>) -> KvVersion {
        match option.map(str::trim) {
            Some("2") => KvVersion::V2,
            _ => KvVersion::V1,
        }
    }

    /// A mount's version: what the spec says (`kv_version`), else what the server reports, else
    /// KV v2, as on `secret/`.
    pub fn resolve(spec: Option<KvVersion>, detected: Option<KvVersion>) -> KvVersion {
        spec.or(detected).unwrap_or_default()
    }

    /// 1 or 2.
    pub fn number(self) -> u8 {
        match self {
            KvVersion::V1 => 1,
            KvVersion::V2 => 2,
        }
    }

    /// Whether writes take check-and-set (and the engine keeps history): KV v2 only.
    pub fn has_cas(self) -> bool {
        self == KvVersion::V2
    }
}

impl fmt::Display for KvVersion {
    /// `KV v1`, `KV v2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KV v{}", self.number())
    }
}

impl Serialize for KvVersion {
    /// As the number (`1`, `2`).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.number())
    }
}

/// A KV mount and its engine version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvMount {
    /// Mount path without slashes (`secret`).
    pub path: String,
    /// Its engine version.
    pub version: KvVersion,
}

impl KvMount {
    /// A mount at `path` (slashes trimmed) of `version`.
    pub fn new(path: &str, version: KvVersion) -> KvMount {
        KvMount {
            path: path.trim_matches('/').to_string(),
            version,
        }
    }

    /// The API prefix of secrets' data, with a trailing `/` (`secret/data/` on v2, `kv/` on v1).
    pub fn data_prefix(&self) -> String {
        match self.version {
            KvVersion::V2 => format!("{}/data/", self.path),
            KvVersion::V1 => format!("{}/", self.path),
        }
    }

    /// The API prefix of secrets' metadata and of folder listings, with a trailing `/`
    /// (`secret/metadata/` on v2; on v1, which has no metadata, the data prefix).
    pub fn metadata_prefix(&self) -> String {
        match self.version {
            KvVersion::V2 => format!("{}/metadata/", self.path),
            KvVersion::V1 => format!("{}/", self.path),
        }
    }

    /// API path of a secret's data (`secret/data/x` on v2, `kv/x` on v1).
    pub fn data_path(&self, path: &str) -> String {
        format!("{}{path}", self.data_prefix())
    }

    /// API path of a secret's metadata (`secret/metadata/x` on v2; the data path on v1).
    pub fn metadata_path(&self, path: &str) -> String {
        format!("{}{path}", self.metadata_prefix())
    }

    /// API path to `LIST` a folder (`secret/metadata/a` on v2, `kv/a` on v1).
    pub fn list_path(&self, folder: &str) -> String {
        self.metadata_path(folder)
    }

    /// The check-and-set option of a data write that expects the secret at `version` (0: absent):
    /// `Some` on KV v2, `None` on KV v1, which has none.
    pub fn cas(&self, version: u64) -> Option<u64> {
        self.version.has_cas().then_some(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_per_version() {
        let v2 = KvMount::new("secret", KvVersion::V2);
        assert_eq!(v2.data_path("a/b"), "secret/data/a/b");
        assert_eq!(v2.metadata_path("a"), "secret/metadata/a");
        assert_eq!(v2.list_path("a"), "secret/metadata/a");
        assert_eq!(v2.cas(3), Some(3));
        let v1 = KvMount::new("/kv/", KvVersion::V1);
        assert_eq!(v1.data_path("a/b"), "kv/a/b");
        assert_eq!(v1.metadata_path("a"), "kv/a");
        assert_eq!(v1.list_path("a"), "kv/a");
        assert_eq!(v1.cas(0), None);
    }

    #[test]
    fn versions_from_numbers_and_mount_options() {
        assert_eq!(KvVersion::from_number(1), Some(KvVersion::V1));
        assert_eq!(KvVersion::from_number(2), Some(KvVersion::V2));
        assert_eq!(KvVersion::from_number(3), None);
        assert_eq!(KvVersion::from_mount_option(Some("2")), KvVersion::V2);
        assert_eq!(KvVersion::from_mount_option(Some("1")), KvVersion::V1);
        assert_eq!(KvVersion::from_mount_option(None), KvVersion::V1);
        assert_eq!(KvVersion::V2.to_string(), "KV v2");
        assert_eq!(serde_json::to_string(&KvVersion::V1).unwrap(), "1");
    }
}
