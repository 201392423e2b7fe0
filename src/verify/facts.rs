//! What the Vault and policy parts found about each path, typed, for the cluster checks'
//! explanations ("`X` field `value` is still a placeholder", "ESO's policy does not grant
//! `read` on `secret/data/X`").

use std::collections::{BTreeMap, BTreeSet, HashMap};

use time::OffsetDateTime;

use super::grants::{GrantsPart, Method, PolicyPart};
use super::Checked;
use crate::acl::Capability;
use crate::base::kv::KvVersion;
use crate::seed::{Found, Inspection, Status};
use crate::spec::{Target, TargetIndex};

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

/// An operator's gaps by API path: what its policy lacks there (every check of the path, in the
/// report's order).
fn gaps(part: Option<&GrantsPart>) -> HashMap<&str, Vec<Capability>> {
    let mut by_path: HashMap<&str, Vec<Capability>> = HashMap::new();
    for c in part.into_iter().flat_map(|p| p.report.gaps()) {
        if !c.missing.is_empty() {
            by_path
                .entry(c.path.as_str())
                .or_default()
                .extend(c.missing.iter().copied());
        }
    }
    by_path
}

/// Every path's facts, by full path (`secret/ask/core-service/auh1-dev/X`), each made when it is
/// asked for (the cluster checks ask a few per object) from the values part's compact states,
/// the targets and the policy part's gaps. Held: each path's full path and its state's index.
pub struct Facts<'a> {
    inspection: &'a Inspection,
    targets: &'a [Target],
    /// The targets by the names the cluster's objects give them.
    index: &'a TargetIndex<'a>,
    detected: &'a dyn Fn(&str) -> Option<KvVersion>,
    eso_gaps: HashMap<&'a str, Vec<Capability>>,
    vso_gaps: HashMap<&'a str, Vec<Capability>>,
    /// The policies the part `policy` judged ESO's token by, `default` included when it
    /// counts; `None` when that part could not judge them.
    eso_policies: Option<BTreeSet<String>>,
    /// The indexes of `inspection`'s states, sorted by their full paths (of a path listed
    /// twice, in list order): a platform's full paths are many to hold as strings.
    by_path: Box<[u32]>,
}

/// The full path (`mount/path`) of state `i` of `inspection`, byte by byte, as
/// [`Target::full_path`] writes it.
fn state_path<'t>(
    targets: &'t [Target],
    inspection: &Inspection,
    i: u32,
) -> impl Iterator<Item = u8> + 't {
    let t = &targets[inspection.paths[i as usize].target()];
    t.mount().bytes().chain(*b"/").chain(t.path.bytes())
}

impl<'a> Facts<'a> {
    /// From what Vault holds, and what the policy part found (if it was checked). `detected` is
    /// each mount's KV version as the server reports it.
    pub fn gather(
        inspection: &'a Inspection,
        index: &'a TargetIndex<'a>,
        grants: Option<&'a Checked<PolicyPart>>,
        detected: &'a dyn Fn(&str) -> Option<KvVersion>,
    ) -> Facts<'a> {
        // Each operator's gaps by API path, looked up once per path (a scan of every checked
        // path per path was quadratic: 100,000 paths, 10^10 comparisons).
        let (eso_gaps, vso_gaps) = match grants {
            Some(Checked::Done(part)) => (gaps(Some(&part.eso)), gaps(part.vso.as_ref())),
            _ => (HashMap::new(), HashMap::new()),
        };
        let eso_policies = match grants {
            Some(Checked::Done(part)) if part.eso.method != Method::Unknown => {
                let mut all: BTreeSet<String> = part.eso.policies.iter().cloned().collect();
                if part.eso.carries_default {
                    all.insert("default".into());
                }
                Some(all)
            }
            _ => None,
        };
        let targets = index.targets();
        let states = u32::try_from(inspection.paths.len()).expect("fewer than 2^32 paths");
        let mut by_path: Box<[u32]> = (0..states).collect();
        // Stable: the states of one path stay in list order, the last of them last.
        by_path.sort_by(|&a, &b| {
            state_path(targets, inspection, a).cmp(state_path(targets, inspection, b))
        });
        Facts {
            inspection,
            targets,
            index,
            detected,
            eso_gaps,
            vso_gaps,
            eso_policies,
            by_path,
        }
    }

    /// The targets by the names the cluster's objects give them.
    pub fn index(&self) -> &'a TargetIndex<'a> {
        self.index
    }

    /// The KV version of `t`'s mount when known: the spec's `kv_version`, else what the server
    /// reports; `None` when neither says (a default is not knowledge).
    pub fn known_kv_version(&self, t: &Target) -> Option<KvVersion> {
        t.kv_version().or((self.detected)(t.mount()))
    }

    /// The policies the part `policy` judged ESO's token by (`default` included when it
    /// counts); `None` when it could not judge them.
    pub fn eso_policies(&self) -> Option<BTreeSet<String>> {
        self.eso_policies.clone()
    }

    /// A mount's KV version as the server reports it.
    pub fn detected(&self, mount: &str) -> Option<KvVersion> {
        (self.detected)(mount)
    }

    /// The facts of a path, by its full path (of a path listed twice, the last).
    pub fn get(&self, full_path: &str) -> Option<PathFacts> {
        let path_of = |i: u32| state_path(self.targets, self.inspection, i);
        // Past every state of `full_path`: the one before, if it is of that path, is the last.
        let past = self
            .by_path
            .partition_point(|&i| path_of(i).cmp(full_path.bytes()).is_le());
        let last = *self.by_path[..past].last()?;
        path_of(last)
            .eq(full_path.bytes())
            .then(|| self.facts_of(&self.inspection.paths[last as usize]))
    }

    fn facts_of(&self, p: &Found) -> PathFacts {
        let t = &self.targets[p.target()];
        let data_path = t.kv_mount(self.detected).data_path(&t.path);
        let created = self.inspection.created_time(p).and_then(|c| {
            OffsetDateTime::parse(&c, &time::format_description::well_known::Rfc3339).ok()
        });
        let missing = |gaps: &HashMap<&str, Vec<Capability>>| {
            gaps.get(data_path.as_str()).cloned().unwrap_or_default()
        };
        let (policy_missing, vso_policy_missing) =
            (missing(&self.eso_gaps), missing(&self.vso_gaps));
        PathFacts {
            fields: t
                .fields
                .iter()
                .zip(self.inspection.fields(p))
                .map(|(spec, f)| (spec.name.clone(), f.status))
                .collect(),
            created,
            version: p.version(),
            data_path,
            policy_missing,
            vso_policy_missing,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::acl::{PathCheck, PolicyReport};
    use crate::generate::Generator;
    use crate::seed::{Outcome, PathResult};
    use crate::spec::{Field, Origin, Target};
    use crate::verify::grants::Operator;
    use crate::verify::values::tests::inspected;

    fn target(mount: &str) -> Target {
        let origin = Origin::new(
            PathBuf::from("specs/app.toml").into(),
            "app".into(),
            mount.into(),
            None,
        );
        let fields = vec![Field::new("value", Generator::Uuid)].into();
        Target::new(origin, "app/dev/A".into(), "A".into(), false, fields, None)
    }

    /// `t` read at `version`, its field a placeholder.
    /// `n` applications' one path each (`secret/app{i}/dev/A`), read at version `i + 1`.
    fn apps(n: usize) -> (Vec<Target>, Inspection) {
        let mut targets: Vec<Target> = (0..n).map(|_| target("secret")).collect();
        for (i, t) in targets.iter_mut().enumerate() {
            t.path = format!("app{i}/dev/A").into();
        }
        let inspection = inspected(
            (0..n)
                .map(|i| state(&targets[i], Some(i as u64 + 1)))
                .collect(),
        );
        (targets, inspection)
    }

    fn state(t: &Target, version: Option<u64>) -> PathResult {
        let mut r = PathResult::all(t, Outcome::Pending, version, None);
        r.created_time = Some("2026-11-30T16:27:41.512345678Z".into());
        r
    }

    /// On a KV v1 mount the explanation names the path ESO reads there (`kv/app/dev/A`), not a
    /// `data/` path it never reads (which the kube part printed for every mount before).
    #[test]
    fn the_policy_gap_of_a_path_is_found_at_its_mounts_version() {
        let targets = [target("kv"), target("secret")];
        let inspection = inspected(targets.iter().map(|t| state(t, None)).collect());
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
            carries_default: true,
            report: PolicyReport::from_checks(
                false,
                vec![gap("kv/app/dev/A"), gap("secret/data/app/dev/A")],
                Vec::new(),
                Vec::new(),
            ),
            errors: Vec::new(),
            notes: Vec::new(),
            help: None,
            findings: Vec::new(),
        };
        let grants = Checked::Done(PolicyPart { eso, vso: None });
        let detected = |m: &str| match m {
            "kv" => Some(KvVersion::V1),
            _ => Some(KvVersion::V2),
        };
        let index = TargetIndex::new(&targets);
        let facts = Facts::gather(&inspection, &index, Some(&grants), &detected);
        let v1 = facts.get("kv/app/dev/A").unwrap();
        assert_eq!(v1.data_path, "kv/app/dev/A");
        assert_eq!(v1.policy_missing, [Capability::Read]);
        assert_eq!(v1.fields["value"], Status::Pending);
        let v2 = facts.get("secret/app/dev/A").unwrap();
        assert_eq!(v2.data_path, "secret/data/app/dev/A");
        assert_eq!(v2.policy_missing, [Capability::Read]);
    }

    /// Each path's facts are found by its full path, made when asked for; a path that was not
    /// verified has none.
    #[test]
    fn each_path_finds_its_own_facts_and_an_unknown_path_none() {
        let (targets, inspection) = apps(50);
        let detected = |_: &str| Some(KvVersion::V2);
        let index = TargetIndex::new(&targets);
        let facts = Facts::gather(&inspection, &index, None, &detected);
        for i in 0..50 {
            let f = facts.get(&format!("secret/app{i}/dev/A")).unwrap();
            assert_eq!(f.version, Some(i as u64 + 1));
            assert_eq!(f.fields["value"], Status::Pending);
            let created = f.created.expect("Vault's time, parsed");
            assert_eq!(created.nanosecond(), 512_345_678);
            assert_eq!(f.data_path, format!("secret/data/app{i}/dev/A"));
            assert!(f.policy_missing.is_empty());
        }
        assert!(facts.get("secret/app50/dev/A").is_none());
        assert!(facts.get("secret/app1/dev").is_none());
        assert!(facts.get("secret").is_none());
    }

    /// A path listed more than once (by two specs, or as two mounts and paths that write the
    /// same full path) has the facts of its last state, wherever the others are.
    #[test]
    fn a_path_listed_twice_has_its_last_states_facts() {
        let at = |mount: &str, path: &str| {
            let mut t = target(mount);
            t.path = path.into();
            t
        };
        let targets = vec![
            at("secret", "b/c"),
            at("secret", "a"),
            at("secret/b", "c"),
            at("kv", "z"),
            at("secret", "b/c"),
            at("secret", "b/c/d"),
            at("secret", "a"),
        ];
        let inspection = inspected(
            (0..targets.len())
                .map(|i| state(&targets[i], Some(i as u64 + 1)))
                .collect(),
        );
        let detected = |_: &str| Some(KvVersion::V2);
        let index = TargetIndex::new(&targets);
        let facts = Facts::gather(&inspection, &index, None, &detected);
        let version = |p: &str| facts.get(p).map(|f| f.version);
        assert_eq!(version("secret/b/c"), Some(Some(5)));
        assert_eq!(version("secret/a"), Some(Some(7)));
        assert_eq!(version("kv/z"), Some(Some(4)));
        assert_eq!(version("secret/b/c/d"), Some(Some(6)));
        for none in [
            "secret/b",
            "secret/b/",
            "secret/b/c/",
            "kv",
            "secret/",
            "",
            "z",
        ] {
            assert_eq!(version(none), None, "{none}");
        }
    }
}
