//! What the seeding engine says about a run rather than one path, as typed notes with codes:
//! the closing notes of `apply` and `plan`, the notes of `verify`'s part `vault` and `import`'s
//! mount note (a mount used on the operator's word, LISTs refused, fields no spec names, Vault
//! gone part way, how writes went). The JSON keeps the sentences (`notes`) and adds the codes
//! beside them (`findings`), as `verify`'s run notes do. All are notes (the verdict is the
//! paths'): the severity is given where `verify`'s `Finding` is ([`crate::verify::values`]),
//! since the seeding engine is below `verify` and does not import it.

use crate::spec::mounts::AssumedMount;

/// A note about a seeding run or a reading of Vault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedNote {
    /// A mount whose type could not be read, used on the operator's word
    /// (`--assume-kv-mount`).
    MountAssumed(AssumedMount),
    /// The token may not `list` these folders: each path was read instead.
    ListDenied {
        /// The first folders, by name.
        shown: Vec<String>,
        /// How many more.
        more: usize,
    },
    /// Secrets hold fields no spec names (a renamed field?).
    UnnamedFields {
        /// The first secrets, each with its first such fields.
        shown: Vec<String>,
        /// How many more secrets.
        more: usize,
    },
    /// `--no-metadata`: what was written carries no custom_metadata.
    NoMetadata,
    /// Vault stopped answering part way; the rest is `skipped`.
    VaultStopped {
        /// Whether the run only read (`verify`), so nothing was left unwritten.
        reading: bool,
    },
    /// The token may not write metadata: written without vault-seed's custom_metadata.
    MetadataDenied,
    /// Paths on KV v1 mounts were written read-then-write.
    KvV1NoCas,
    /// Paths on KV v1 mounts another writer wrote at the same time.
    KvV1Contested {
        /// How many.
        count: usize,
    },
}

crate::base::codes::codes!(
    SeedNote,
    SeedNote {
        MountAssumed => "mount-assumed",
        ListDenied => "list-denied",
        UnnamedFields => "unnamed-fields",
        NoMetadata => "no-metadata",
        VaultStopped => "vault-stopped",
        MetadataDenied => "metadata-denied",
        KvV1NoCas => "kv-v1-no-cas",
        KvV1Contested => "kv-v1-contested",
    }
);

impl SeedNote {
    /// The sentence, in text and JSON alike.
    pub fn message(&self) -> String {
        match self {
            SeedNote::MountAssumed(m) => m.to_string(),
            SeedNote::ListDenied { shown, more } => format!(
                "the token may not `list` {}{}: each path was read instead (slower on many paths)",
                crate::base::backticks::backticked(shown),
                if *more > 0 {
                    format!(" and {more} more folder(s)")
                } else {
                    String::new()
                }
            ),
            SeedNote::UnnamedFields { shown, more } => format!(
                "fields no spec names: {}{}; a renamed field? vault-seed leaves them as they are (rename the field in the spec, or remove the old one by hand)",
                shown.join(", "),
                match more {
                    0 => String::new(),
                    n => format!(" and {n} more secret(s)"),
                }
            ),
            SeedNote::NoMetadata => "--no-metadata: the paths written carry no custom_metadata marking them as vault-seed's".into(),
            SeedNote::VaultStopped { reading: false } => "Vault stopped answering part way: the paths not attempted are marked `skipped`; run the same command again when it is back (nothing is written twice)".into(),
            SeedNote::VaultStopped { reading: true } => "Vault stopped answering part way: the paths not read are marked `skipped`; run the same command again when it is back".into(),
            SeedNote::MetadataDenied => "the token may not write metadata: secrets were written without vault-seed's custom_metadata (grant `update` on `<mount>/metadata/...`)".into(),
            SeedNote::KvV1NoCas => "KV v1 has no check-and-set: paths on KV v1 mounts were written read-then-write, which is not race-free; each is reported created only when it read back as written".into(),
            SeedNote::KvV1Contested { count } => format!("KV v1: {count} path(s) were contested (another writer wrote them at the same time as this run); they are judged as they stand, not claimed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::kv::KvVersion;

    #[test]
    fn every_code_of_the_seeding_notes_is_listed() {
        crate::base::codes::assert_documented(
            "apply, plan and verify vault: notes",
            &SeedNote::codes(),
            &SeedNote::all_codes(),
        );
    }

    #[test]
    fn the_sentences_are_those_said_before() {
        let notes: Vec<String> = [
            SeedNote::MountAssumed(AssumedMount {
                mount: "kv".into(),
                version: KvVersion::V2,
            }),
            SeedNote::KvV1Contested { count: 2 },
            SeedNote::UnnamedFields {
                shown: vec!["`secret/a` (`old`)".into()],
                more: 3,
            },
        ]
        .iter()
        .map(SeedNote::message)
        .collect();
        assert_eq!(
            notes,
            [
                format!("mount `kv`: its type could not be read (`sys/internal/ui/mounts/kv` was denied); treated as {} on the operator's word (`--assume-kv-mount kv`)", KvVersion::V2),
                "KV v1: 2 path(s) were contested (another writer wrote them at the same time as this run); they are judged as they stand, not claimed".into(),
                "fields no spec names: `secret/a` (`old`) and 3 more secret(s); a renamed field? vault-seed leaves them as they are (rename the field in the spec, or remove the old one by hand)".into(),
            ]
        );
        assert_eq!(
            crate::base::codes::Code::code(&SeedNote::KvV1Contested { count: 2 }),
            "kv-v1-contested"
        );
    }
}
