//! What the Vault and policy parts found about each path, typed, for the cluster checks'
//! explanations ("`X` field `value` is still a placeholder", "ESO's policy does not grant
//! `read` on `secret/data/X`").

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::grants::{GrantsPart, PolicyPart};
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
    /// The current KV v2 version (`None` on KV v1 or when unknown).
    pub version: Option<u64>,
    /// The API path ESO reads (`secret/data/X` on KV v2, `kv/X` on KV v1).
    pub data_path: String,
    /// Capabilities ESO's policy lacks on that API path.
    pub policy_missing: Vec<Capability>,
    /// Capabilities VSO's policy lacks on that API path (VSO reads the same one).
    pub vso_policy_missing: Vec<Capability>,
}

/// Every path's facts, by full path (`secret/ask/core-service/auh1-dev/X`).
#[derive(Debug, Clone, Default)]
pub struct Facts(BTreeMap<String, PathFacts>);

impl Facts {
    /// From what Vault holds, and what the policy part found (if it was checked). `detected` is
    /// each mount's KV version as the server reports it.
    pub fn gather(
        inspection: &Inspection,
        grants: Option<&Checked<PolicyPart>>,
        detected: &dyn Fn(&str) -> Option<KvVersion>,
    ) -> Facts {
        let mut out = BTreeMap::new();
        for p in &inspection.paths {
            let t = &p.target;
            let data_path = t.kv_mount(detected).data_path(&t.path);
            let created = p.created_time.as_deref().and_then(|c| {
                OffsetDateTime::parse(c, &time::format_description::well_known::Rfc3339).ok()
            });
            let missing = |part: Option<&GrantsPart>| -> Vec<Capability> {
                part.into_iter()
                    .flat_map(|p| p.report.paths.iter())
                    .filter(|c| c.path == data_path)
                    .flat_map(|c| c.missing.iter().copied())
                    .collect()
            };
            let (policy_missing, vso_policy_missing) = match grants {
                Some(Checked::Done(part)) => (missing(Some(&part.eso)), missing(part.vso.as_ref())),
                _ => (Vec::new(), Vec::new()),
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
                    version: p.version,
                    data_path,
                    policy_missing,
                    vso_policy_missing,
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::acl::{PathCheck, PolicyReport};
    use crate::generate::Generator;
    use crate::seed::{FieldState, PathState};
    use crate::spec::{Field, Target};
    use crate::verify::grants::{Method, Operator};

    fn state(mount: &str) -> PathState {
        PathState {
            target: Target {
                spec_file: PathBuf::from("specs/app.toml").into(),
                app: "app".into(),
                mount: mount.into(),
                path: "app/dev/A".into(),
                name: "A".into(),
                fixed: false,
                fields: vec![Field {
                    name: "value".into(),
                    generator: Generator::Uuid,
                }]
                .into(),
                kv_version: None,
                provided: None,
            },
            version: None,
            fields: vec![FieldState {
                field: "value".into(),
                generator: "uuid".into(),
                status: Status::Pending,
                detail: None,
            }],
            detail: None,
            created_time: None,
        }
    }

    /// On a KV v1 mount the explanation names the path ESO reads there (`kv/app/dev/A`), not a
    /// `data/` path it never reads (which the kube part printed for every mount before).
    #[test]
    fn the_policy_gap_of_a_path_is_found_at_its_mounts_version() {
        let inspection = Inspection {
            paths: vec![state("kv"), state("secret")],
            notes: Vec::new(),
        };
        let gap = |path: &str| PathCheck {
            path: path.into(),
            uses: Vec::new(),
            required: [Capability::Read].into(),
            granted: Default::default(),
            missing: [Capability::Read].into(),
            refused: Vec::new(),
            decided_by: None,
            fix: None,
        };
        let eso = GrantsPart {
            operator: Operator::Eso,
            used: true,
            ok: false,
            method: Method::Policies,
            policies: Vec::new(),
            report: PolicyReport {
                ok: false,
                paths: vec![gap("kv/app/dev/A"), gap("secret/data/app/dev/A")],
                add: Vec::new(),
                unfixable: Vec::new(),
            },
            errors: Vec::new(),
            notes: Vec::new(),
            help: None,
        };
        let grants = Checked::Done(PolicyPart { eso, vso: None });
        let detected = |m: &str| match m {
            "kv" => Some(KvVersion::V1),
            _ => Some(KvVersion::V2),
        };
        let facts = Facts::gather(&inspection, Some(&grants), &detected);
        let v1 = facts.get("kv/app/dev/A").unwrap();
        assert_eq!(v1.data_path, "kv/app/dev/A");
        assert_eq!(v1.policy_missing, [Capability::Read]);
        assert_eq!(v1.fields["value"], Status::Pending);
        let v2 = facts.get("secret/app/dev/A").unwrap();
        assert_eq!(v2.data_path, "secret/data/app/dev/A");
        assert_eq!(v2.policy_missing, [Capability::Read]);
    }
}
