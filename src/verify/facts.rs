//! What the Vault and policy parts found about each path, typed, for the cluster checks'
//! explanations ("`X` field `value` is still a placeholder", "ESO's policy does not grant
//! `read` on `secret/data/X`").

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::grants::GrantsPart;
use super::Checked;
use crate::acl::Capability;
use crate::kv::KvVersion;
use crate::seed::{Inspection, Status};

/// One path's facts.
#[derive(Debug, Clone, Default)]
pub struct PathFacts {
    /// Field name to what is in Vault.
    pub fields: BTreeMap<String, Status>,
    /// When the current version was created in Vault.
    pub created: Option<OffsetDateTime>,
    /// The API path ESO reads (`secret/data/X` on KV v2, `kv/X` on KV v1).
    pub data_path: String,
    /// Capabilities ESO's policy lacks on that API path.
    pub policy_missing: Vec<Capability>,
}

/// Every path's facts, by full path (`secret/ask/core-service/auh1-dev/X`).
#[derive(Debug, Clone, Default)]
pub struct Facts(BTreeMap<String, PathFacts>);

impl Facts {
    /// From what Vault holds, and what the policy part found (if it was checked). `detected` is
    /// each mount's KV version as the server reports it.
    pub fn gather(
        inspection: &Inspection,
        grants: Option<&Checked<GrantsPart>>,
        detected: &dyn Fn(&str) -> Option<KvVersion>,
    ) -> Facts {
        let mut out = BTreeMap::new();
        for p in &inspection.paths {
            let t = &p.target;
            let data_path = t.kv_mount(detected).data_path(&t.path);
            let created = p.created_time.as_deref().and_then(|c| {
                OffsetDateTime::parse(c, &time::format_description::well_known::Rfc3339).ok()
            });
            let policy_missing = match grants {
                Some(Checked::Done(part)) => part
                    .report
                    .paths
                    .iter()
                    .filter(|c| c.path == data_path)
                    .flat_map(|c| c.missing.iter().copied())
                    .collect(),
                _ => Vec::new(),
            };
            out.insert(
                t.full_path(),
                PathFacts {
                    fields: p
                        .fields
                        .iter()
                        .map(|f| (f.field.clone(), f.status))
                        .collect(),
                    created,
                    data_path,
                    policy_missing,
                },
            );
        }
        Facts(out)
    }

    /// The facts of a path, by its full path.
    pub fn get(&self, full_path: &str) -> Option<&PathFacts> {
        self.0.get(full_path)
    }
}
