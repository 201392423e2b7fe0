//! `policy --merge`: an existing policy's text with the rules it lacks added below it. Nothing
//! it granted is taken away, and nothing is added beyond what the specs need.
//!
//! How OpenBao reads the result (`vault/policy/policy.go` `parsePaths`, `vault/policy/acl.go`
//! `NewACL`, `AllowOperation` and `CheckAllowedFromNonExactPaths`, v2.6.2):
//! - every `path` block is kept, and the blocks of one pattern are merged into one entry:
//!   capabilities united (`deny` wins), `allowed_parameters`, `denied_parameters` and
//!   `required_parameters` joined, the smallest wrapping TTLs kept. So a block added with a
//!   pattern the policy has adds capabilities under that pattern's constraints, as they are.
//! - a request is decided by one entry only: the exact pattern equal to the path, else the
//!   highest of the longest plain prefix and the matching `+` patterns (the first wildcard
//!   latest, then not a prefix, then fewer `+`, then longer). Its capabilities and its
//!   constraints alone apply: a wider pattern's are not consulted.
//!
//! So a block of a new, more specific pattern takes the paths it matches away from the rule
//! that decided them, with that rule's constraints. [`merge`] adds, per folder rule with a gap,
//! exactly the capabilities the specs need there; where such a rule takes paths from a rule of
//! the policy, it carries that rule's `required_parameters`, `allowed_parameters`,
//! `denied_parameters`, wrapping TTLs (and `pagination_limit`, the list filter, `mfa_methods`) as
//! they are. It refuses ([`MergeError::TakesOver`]) when it cannot: that rule grants more there
//! than the specs need (it would be lost), its constraints refuse what the specs need, two such
//! rules' constraints differ, or one cannot be written back (`control_group`). The result is
//! parsed again and evaluated before it is answered.

use std::collections::BTreeMap;
use std::fmt;

use super::check::rules_in_order;
use super::{
    check, parse, Acl, Capabilities, Constraints, ParamValue, Policy, PolicyError, Requirement,
    Rule,
};

/// An existing policy with what it lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// The rules added, in the order they are written, with the constraints they carry.
    pub added: Vec<Rule>,
}

/// Why an added rule cannot take paths from a rule of the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TakeOver {
    /// The rule grants there capabilities the specs do not need: an added rule grants only what
    /// they need, so these would be lost.
    Narrows {
        /// What would be lost.
        lost: Capabilities,
    },
    /// Carried, the rule's constraints refuse a request the specs need.
    Refused {
        /// The capability of the request.
        capability: super::Capability,
        /// Why OpenBao refuses it.
        reason: String,
    },
    /// The added rule also takes paths from another rule whose constraints differ.
    Conflicting {
        /// The other rule's pattern.
        other: String,
    },
    /// The rule has a constraint vault-seed cannot write into an added rule.
    Uncarriable {
        /// Which, in words.
        what: &'static str,
    },
}

impl fmt::Display for TakeOver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TakeOver::Narrows { lost } => {
                let lost = crate::base::backticks::backticked(lost.iter());
                write!(f, ", which grants {lost} there: an added rule grants only what the specs need, so {lost} would be lost")
            }
            TakeOver::Refused { capability, reason } => write!(
                f,
                ", so it must carry that rule's constraints, and with them OpenBao refuses ESO's `{capability}` request: {reason}"
            ),
            TakeOver::Conflicting { other } => write!(
                f,
                ", and paths from its rule `{other}`, whose constraints differ: one rule cannot carry both"
            ),
            TakeOver::Uncarriable { what } => {
                write!(f, ", whose {what} vault-seed cannot write into an added rule")
            }
        }
    }
}

/// Why a policy cannot be merged. Nothing is printed as a policy then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// The existing policy does not parse.
    #[error(transparent)]
    Parse(#[from] PolicyError),
    /// A rule of the existing policy denies (or its constraints refuse) a path the specs need
    /// and decides it whatever is added.
    #[error("policy `{policy}` denies `{path}` with its rule `{pattern}` ({reason}): adding rules cannot grant it")]
    Denied {
        /// The policy.
        policy: String,
        /// The path the specs need.
        path: String,
        /// The rule's pattern.
        pattern: String,
        /// `deny`, or the constraint that refuses the request.
        reason: String,
    },
    /// An added rule would take over a path the existing policy denies.
    #[error("policy `{policy}`: the rule `{added}` vault-seed would add overrides the `deny` of `{pattern}` on `{path}`")]
    Overrides {
        /// The policy.
        policy: String,
        /// The added rule's pattern.
        added: String,
        /// The denying pattern.
        pattern: String,
        /// A path it would no longer deny.
        path: String,
    },
    /// An added rule would take paths from a rule of the policy, and cannot do so as that rule
    /// governs them.
    #[error("policy `{policy}`: the rule `{added}` vault-seed would add takes `{path}` from its rule `{pattern}`{why}")]
    TakesOver {
        /// The policy.
        policy: String,
        /// The added rule's pattern.
        added: String,
        /// The rule it takes paths from.
        pattern: String,
        /// A path it takes.
        path: String,
        /// Why that cannot be.
        why: Box<TakeOver>,
    },
    /// The policy is stored as JSON, and rules would be added: HCL cannot be appended to it.
    #[error("policy `{policy}` is stored as JSON: vault-seed adds its rules as HCL below a policy's text, and cannot add them to JSON")]
    Json {
        /// The policy.
        policy: String,
    },
    /// The evaluator does not find the merged text granting everything, or finds it granting
    /// more (a case vault-seed does not handle).
    #[error("policy `{policy}`: the merged text would not grant {what} on `{path}`")]
    Unproven {
        /// The policy.
        policy: String,
        /// The path.
        path: String,
        /// What is missing.
        what: String,
    },
}

impl MergeError {
    /// What the user can do about it.
    pub fn help(&self) -> Option<String> {
        match self {
            MergeError::Parse(e) => e.help(),
            MergeError::Denied { reason, .. } if reason != "deny" => Some(
                "vault-seed never drops a rule's constraints: change that rule by hand (`vault policy read`), or give the application a policy of its own".into(),
            ),
            MergeError::Denied { .. } | MergeError::Overrides { .. } => Some(
                "vault-seed never removes a rule: change or remove that `deny` by hand (`vault policy read`), or give the application a policy of its own".into(),
            ),
            MergeError::TakesOver { why, .. } if matches!(**why, TakeOver::Narrows { .. }) => Some(
                "vault-seed adds only what the specs need and never takes a grant away: add the rule by hand with the capabilities to keep, or give the application a policy of its own".into(),
            ),
            MergeError::TakesOver { .. } => Some(
                "vault-seed never drops a rule's constraints, and a more specific rule replaces them on the paths it takes: change that rule by hand (`vault policy read`), or give the application a policy of its own".into(),
            ),
            MergeError::Json { .. } => Some(
                "add what `vault-seed policy ENV` prints to its `path` object by hand, or write the policy back as HCL and merge again".into(),
            ),
            MergeError::Unproven { .. } => Some(
                "add the rules `vault-seed policy ENV` prints to the policy by hand, keeping its other rules".into(),
            ),
        }
    }
}

/// An added rule: the capabilities the specs need under its pattern, and the constraints it
/// carries from the rule it takes paths from (with that rule's pattern).
#[derive(Debug, Clone, Default)]
struct Adding {
    capabilities: Capabilities,
    carried: Option<(String, Constraints)>,
}

impl Adding {
    fn rule(&self, pattern: &str) -> Rule {
        Rule {
            pattern: pattern.to_string(),
            capabilities: self.capabilities,
            constraints: self.carried.as_ref().and_then(|(_, c)| c.clone().boxed()),
            templated: false,
        }
    }
}

/// The rules `text` (the policy `name`; `None` when it does not exist) lacks for
/// `requirements`, checked so that the text with them appended ([`merged_text`]) grants every
/// requirement, still grants everything `text` granted, and grants more only what the
/// requirements need, under the constraints that governed there.
#[allow(clippy::too_many_lines)] // Vault's rule followed step by step as its source has it
pub fn merge(
    name: &str,
    text: Option<&str>,
    requirements: &[Requirement],
) -> Result<Merge, MergeError> {
    let original = Policy {
        name: name.to_string(),
        rules: match text {
            Some(t) => parse(name, t)?.rules,
            None => Vec::new(),
        },
    };
    let acl = Acl::new(std::slice::from_ref(&original));
    // A `deny` deciding a needed path: the specs' rule would have to override it.
    for r in requirements {
        if let Some(d) = acl.capabilities(&r.path).decided_by.filter(|d| d.denied) {
            return Err(MergeError::Denied {
                policy: name.to_string(),
                path: r.path.clone(),
                pattern: d.pattern.to_string(),
                reason: "deny".into(),
            });
        }
    }
    let report = check(std::slice::from_ref(&original), requirements.to_vec());
    if let Some(u) = report.unfixable.first() {
        return Err(MergeError::Denied {
            policy: name.to_string(),
            path: u.path.clone(),
            pattern: u.pattern.clone(),
            reason: u.reason.clone(),
        });
    }
    if report.ok {
        return Ok(Merge { added: Vec::new() });
    }
    if text.is_some_and(|t| t.trim_start().starts_with('{')) {
        return Err(MergeError::Json {
            policy: name.to_string(),
        });
    }
    let missing = |acl: &Acl, r: &Requirement| {
        let g = acl.capabilities(&r.path);
        let refused = acl.refusals(&r.path, &r.capabilities, &r.params);
        !g.capabilities.is_superset(&r.capabilities) || !refused.is_empty()
    };
    // Exactly what the specs need, under each folder rule with a gap: the rule `policy ENV`
    // prints for that folder (a glob over a folder they own, else a path).
    let mut add: BTreeMap<String, Adding> = BTreeMap::new();
    let gaps: std::collections::HashSet<&str> = requirements
        .iter()
        .filter(|r| missing(&acl, r))
        .map(|r| &*r.folder_rule)
        .collect();
    for r in requirements
        .iter()
        .filter(|r| gaps.contains(&*r.folder_rule))
    {
        add.entry(r.folder_rule.to_string())
            .or_default()
            .capabilities
            .extend(r.capabilities.iter());
    }
    let probes = probes(&original, &add, requirements);
    // Rounds, each only adding: the constraints each new pattern carries, then what still has a
    // gap, closed under the pattern of the policy's rule that decides it (a block of that
    // pattern adds to it, under its constraints).
    // A rule that would lose capabilities is said after any constraint that refuses what the
    // specs need: that is the graver reason, and the one a person must decide on first.
    let mut narrows = None;
    for _round in 0..4 {
        narrows = narrows.or(carry(name, &original, &acl, &mut add, &probes)?);
        let merged = Acl::new(&[original.clone(), added_policy(&add)]);
        let mut changed = false;
        for r in requirements {
            if !missing(&merged, r) {
                continue;
            }
            let g = merged.capabilities(&r.path);
            let refused = merged.refusals(&r.path, &r.capabilities, &r.params);
            let Some(d) = g.decided_by else {
                continue;
            };
            if let Some(x) = refused.first() {
                // Refused by constraints: an added rule's (carried from the policy's) or the
                // policy's own rule's, which no block of that pattern can loosen.
                let (added, from) = match add.get(&*d.pattern).and_then(|a| a.carried.clone()) {
                    Some((from, _)) if !original_has(&original, &d.pattern) => {
                        (d.pattern.to_string(), from)
                    }
                    _ => {
                        return Err(MergeError::Denied {
                            policy: name.to_string(),
                            path: r.path.clone(),
                            pattern: d.pattern.to_string(),
                            reason: x.reason.clone(),
                        })
                    }
                };
                return Err(MergeError::TakesOver {
                    policy: name.to_string(),
                    added,
                    pattern: from,
                    path: r.path.clone(),
                    why: Box::new(TakeOver::Refused {
                        capability: x.capability,
                        reason: x.reason.clone(),
                    }),
                });
            }
            let lacking: Capabilities = r
                .capabilities
                .difference(&g.capabilities)
                .copied()
                .collect();
            let a = add.entry(d.pattern.to_string()).or_default();
            if !a.capabilities.is_superset(&lacking) {
                a.capabilities.extend(lacking.iter());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if let Some(e) = narrows.or(carry(name, &original, &acl, &mut add, &probes)?) {
        return Err(e);
    }
    let added = rules_in_order(add.iter().map(|(p, a)| a.rule(p)).collect::<Vec<_>>());
    prove(name, text, &added, requirements, &acl, &probes)?;
    Ok(Merge { added })
}

/// Whether the policy has a rule of `pattern`.
fn original_has(original: &Policy, pattern: &str) -> bool {
    original.rules.iter().any(|r| r.pattern == pattern)
}

/// For each added pattern the policy does not have: the rule of the policy it takes paths from
/// (on the probes), whose constraints it carries; an error when it cannot. A rule that would
/// lose capabilities is returned, not raised, so that the caller says a refused need first.
fn carry(
    name: &str,
    original: &Policy,
    before: &Acl,
    add: &mut BTreeMap<String, Adding>,
    probes: &[String],
) -> Result<Option<MergeError>, MergeError> {
    let mut narrows = None;
    let merged = Acl::new(&[original.clone(), added_policy(add)]);
    let takes_over = |added: &str, pattern: &str, path: &str, why: TakeOver| {
        Err::<Option<MergeError>, _>(MergeError::TakesOver {
            policy: name.to_string(),
            added: added.to_string(),
            pattern: pattern.to_string(),
            path: path.to_string(),
            why: Box::new(why),
        })
    };
    for path in probes {
        let (was, now) = (before.capabilities(path), merged.capabilities(path));
        let (Some(now_d), Some(was_d)) = (now.decided_by, was.decided_by) else {
            continue;
        };
        if now_d.pattern == was_d.pattern || original_has(original, &now_d.pattern) {
            continue;
        }
        let Some(a) = add.get_mut(&*now_d.pattern) else {
            continue;
        };
        if was_d.denied {
            return Err(MergeError::Overrides {
                policy: name.to_string(),
                added: now_d.pattern.to_string(),
                pattern: was_d.pattern.to_string(),
                path: path.clone(),
            });
        }
        let constraints = before
            .deciding_constraints(path)
            .cloned()
            .unwrap_or_default();
        if let Some(what) = uncarriable(&constraints, &a.capabilities) {
            return takes_over(
                &now_d.pattern,
                &was_d.pattern,
                path,
                TakeOver::Uncarriable { what },
            );
        }
        match &a.carried {
            Some((from, c)) if *c != constraints => {
                return takes_over(
                    &now_d.pattern,
                    from,
                    path,
                    TakeOver::Conflicting {
                        other: was_d.pattern.to_string(),
                    },
                )
            }
            Some(_) => {}
            None => a.carried = Some((was_d.pattern.to_string(), constraints)),
        }
        let lost: Capabilities = was
            .capabilities
            .difference(&a.capabilities)
            .copied()
            .collect();
        if !lost.is_empty() && narrows.is_none() {
            narrows = takes_over(
                &now_d.pattern,
                &was_d.pattern,
                path,
                TakeOver::Narrows { lost },
            )
            .err();
        }
    }
    Ok(narrows)
}

/// What of `c` cannot be written into an added rule granting `caps`: a control group (its
/// factors are not kept), a parameter value that is not a string (kept only as "other"), a
/// list filter on a rule without `list` (OpenBao refuses such a rule).
fn uncarriable(c: &Constraints, caps: &Capabilities) -> Option<&'static str> {
    let other = |m: &BTreeMap<String, Vec<ParamValue>>| {
        m.values().flatten().any(|v| matches!(v, ParamValue::Other))
    };
    if c.control_group.is_some() {
        Some("`control_group`")
    } else if other(&c.allowed_parameters) || other(&c.denied_parameters) {
        Some("parameter value that is not a string")
    } else if c.list_filter.is_some() && !caps.contains(&super::Capability::List) {
        Some("`list_scan_response_keys_filter_path` (which needs `list`, not needed here)")
    } else {
        None
    }
}

/// The text OpenBao would be given: `text` as it is (a newline added if it lacks its last),
/// then `comment` and the added rules.
pub fn merged_text(text: Option<&str>, comment: &str, added: &[Rule]) -> String {
    let mut out = text.unwrap_or_default().to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !added.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(comment);
        out.push('\n');
        out.push_str(&super::render_hcl(added));
    }
    out
}

fn added_policy(add: &BTreeMap<String, Adding>) -> Policy {
    Policy {
        name: "(added)".into(),
        rules: add.iter().map(|(p, a)| a.rule(p)).collect(),
    }
}

/// The paths whose answer an added rule may change: the needed ones, and for each pattern of
/// the policy and of the additions, the pattern itself, a path it matches and no other literal
/// pattern does, and a path both it and each added pattern match.
fn probes(
    original: &Policy,
    add: &BTreeMap<String, Adding>,
    requirements: &[Requirement],
) -> Vec<String> {
    let instance = |pattern: &str| {
        let fixed: Vec<&str> = pattern
            .trim_end_matches('*')
            .split('/')
            .map(|s| if s == "+" { "\u{1}" } else { s })
            .collect();
        format!("{}\u{1}", fixed.join("/"))
    };
    // A path both `rule` and the added `pattern` match: `rule`'s `+` segments filled with
    // `pattern`'s segments where it has them.
    let under = |rule: &str, pattern: &str| {
        let outer: Vec<&str> = pattern.trim_end_matches('*').split('/').collect();
        let whole = outer.len().saturating_sub(1);
        let inner: Vec<&str> = rule
            .trim_end_matches('*')
            .split('/')
            .enumerate()
            .map(|(i, s)| match s {
                "+" if i < whole => outer[i],
                "+" => "\u{1}",
                s => s,
            })
            .collect();
        format!("{}\u{1}", inner.join("/"))
    };
    let mut all: Vec<String> = requirements.iter().map(|r| r.path.clone()).collect();
    all.extend(original.rules.iter().map(|r| instance(&r.pattern)));
    all.extend(original.rules.iter().map(|r| r.pattern.clone()));
    all.extend(add.keys().map(|p| instance(p)));
    // An exact added rule decides its path and, for a LIST, the path with a `/`.
    all.extend(add.keys().filter(|p| !p.ends_with('*')).cloned());
    all.extend(
        add.keys()
            .filter(|p| !p.ends_with('*'))
            .map(|p| format!("{p}/")),
    );
    for pattern in add.keys() {
        all.extend(original.rules.iter().map(|r| under(&r.pattern, pattern)));
    }
    all.sort();
    all.dedup();
    all
}

/// The merged text, parsed again as OpenBao would read it, grants every requirement (and lets
/// ESO's requests through) and, on every probe, everything the original granted (and denies
/// what it denied); where an added rule decides a probe the original's rule decided, it holds
/// that rule's constraints.
fn prove(
    name: &str,
    text: Option<&str>,
    added: &[Rule],
    requirements: &[Requirement],
    before: &Acl,
    probes: &[String],
) -> Result<(), MergeError> {
    let merged = parse(name, &merged_text(text, "# vault-seed: added", added))?;
    let after = Acl::new(&[merged]);
    let unproven = |path: &str, what: String| MergeError::Unproven {
        policy: name.to_string(),
        path: path.to_string(),
        what,
    };
    for r in requirements {
        let g = after.capabilities(&r.path);
        let refused = after.refusals(&r.path, &r.capabilities, &r.params);
        if !g.capabilities.is_superset(&r.capabilities) || !refused.is_empty() {
            return Err(unproven(&r.path, format!("{:?}", r.capabilities)));
        }
    }
    for p in probes {
        let (was, now) = (before.capabilities(p), after.capabilities(p));
        if !now.capabilities.is_superset(&was.capabilities) {
            return Err(unproven(
                p,
                format!("{:?} (granted before)", was.capabilities),
            ));
        }
        let denied = |g: &super::Grant| g.decided_by.as_ref().is_some_and(|d| d.denied);
        if denied(&was) && !denied(&now) {
            return Err(unproven(p, "`deny` (denied before)".into()));
        }
        if was.decided_by.is_some()
            && before.deciding_constraints(p) != after.deciding_constraints(p)
            && was.decided_by.as_ref().map(|d| &d.pattern)
                != now.decided_by.as_ref().map(|d| &d.pattern)
        {
            return Err(unproven(
                p,
                "the constraints of the rule that governed it".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{evaluate, Capability, Use};
    use std::sync::Arc;

    fn need(path: &str, caps: &[Capability], folder: &str) -> Requirement {
        Requirement {
            path: path.into(),
            capabilities: caps.iter().copied().collect(),
            uses: vec![Use::Read],
            folder_rule: Arc::from(folder),
            params: Vec::new(),
        }
    }

    const SHARED: &str = "# shared\npath \"secret/data/ask/postgresql/*\" { capabilities = [\"create\", \"update\", \"read\"] }\npath \"secret/data/ask/*\" { capabilities = [\"read\"] }";

    fn core() -> Vec<Requirement> {
        use Capability::*;
        vec![
            need(
                "secret/data/ask/core-service/auh1-dev/A",
                &[Create, Update, Read],
                "secret/data/ask/core-service/*",
            ),
            need(
                "secret/metadata/ask/core-service/auh1-dev/A",
                &[Read, List],
                "secret/metadata/ask/core-service/*",
            ),
        ]
    }

    /// The merged text grants every requirement, and everything the original granted on the
    /// paths of both rules, re-read as OpenBao reads it.
    #[test]
    fn the_merged_text_grants_the_needs_and_keeps_every_grant() {
        let m = merge("p", Some(SHARED), &core()).unwrap();
        let text = merged_text(Some(SHARED), "# vault-seed: added", &m.added);
        assert!(text.starts_with(SHARED));
        let before = [parse("p", SHARED).unwrap()];
        let after = [parse("p", &text).unwrap()];
        for r in core() {
            assert!(evaluate(&after, &r.path)
                .capabilities
                .is_superset(&r.capabilities));
        }
        // The added rule grants what the spec needs under its folder, nothing more.
        assert_eq!(
            m.added[0],
            Rule::new(
                "secret/data/ask/core-service/*",
                [Capability::Create, Capability::Update, Capability::Read].into()
            )
        );
        for path in [
            "secret/data/ask/core-service/other-env/B",
            "secret/data/ask/postgresql/auh1-dev/x",
            "secret/data/ask/hatchet/x",
        ] {
            let (was, now) = (evaluate(&before, path), evaluate(&after, path));
            assert!(
                now.capabilities.is_superset(&was.capabilities),
                "{path}: {text}"
            );
        }
    }

    /// A rule that grants more than the specs need on the paths an added rule would take:
    /// those capabilities would be lost, so the merge refuses, naming the rule and what.
    #[test]
    fn an_added_rule_never_takes_capabilities_away_nor_copies_them() {
        let wide = "path \"secret/data/ask/*\" { capabilities = [\"read\", \"delete\"] }\npath \"secret/metadata/ask/*\" { capabilities = [\"read\", \"list\"] }";
        let e = merge("p", Some(wide), &core()).unwrap_err();
        assert!(
            matches!(&e, MergeError::TakesOver { added, pattern, why, .. }
                if added == "secret/data/ask/core-service/*" && pattern == "secret/data/ask/*"
                    && **why == TakeOver::Narrows { lost: [Capability::Delete].into() }),
            "{e}"
        );
        assert!(e.to_string().contains("which grants `delete` there"), "{e}");
    }

    /// The constraints of the rule an added rule takes paths from are carried, as they are
    /// (merged across that pattern's blocks, as OpenBao merges them), and read back equal.
    #[test]
    fn constraints_are_carried_as_they_are() {
        let wide = r#"path "secret/data/ask/*" {
  capabilities = ["read"]
  allowed_parameters = { "Data" = [], "v" = ["a*", "\u00e9\"q"] }
  denied_parameters = { "options" = [] }
  pagination_limit = 7
  mfa_methods = ["m1"]
}
path "secret/data/ask/*" { capabilities = ["read"] denied_parameters = { "x" = ["1"] } }
path "secret/metadata/ask/*" { capabilities = ["read", "list"] }
"#;
        let m = merge("p", Some(wide), &core()).unwrap();
        assert_eq!(m.added.len(), 1, "{:?}", m.added);
        let text = merged_text(Some(wide), "# c", &m.added);
        let before = Acl::new(&[parse("p", wide).unwrap()]);
        let after = Acl::new(&[parse("p", &text).unwrap()]);
        let path = "secret/data/ask/core-service/auh1-dev/A";
        let carried = after.deciding_constraints(path).unwrap();
        assert_eq!(Some(carried), before.deciding_constraints(path), "{text}");
        assert_eq!(carried.allowed_parameters.len(), 2);
        assert_eq!(carried.denied_parameters.len(), 2);
        assert_eq!(carried.pagination_limit, 7);
        // What was written is OpenBao's syntax: a block of its own, one key a line.
        assert!(
            text.contains("path \"secret/data/ask/core-service/*\" {\n  capabilities = [\"create\", \"update\", \"read\"]\n  allowed_parameters = { \"data\" = [], \"v\" = [\"a*\", \"é\\\"q\"] }\n"),
            "{text}"
        );
    }

    /// Carried, a wide rule's constraint that refuses what the specs need makes the merge
    /// refuse; so does one vault-seed cannot write back, and two rules whose differ.
    #[test]
    fn a_constraint_that_cannot_be_carried_is_a_refusal_naming_the_rule() {
        let cases = [
            (
                "path \"secret/data/ask/*\" { capabilities = [\"create\", \"update\", \"read\"] required_parameters = [\"nonexistent\"] }",
                "`required_parameters` asks for `nonexistent`",
            ),
            (
                "path \"secret/data/ask/*\" { capabilities = [\"read\"] control_group = { factor \"f\" { controlled_capabilities = [\"delete\"] identity { group_names = [\"g\"] approvals = 1 } } } }",
                "whose `control_group` vault-seed cannot write",
            ),
            (
                "path \"secret/data/ask/*\" { capabilities = [\"read\"] allowed_parameters = { \"data\" = [1] } }",
                "parameter value that is not a string",
            ),
            (
                "path \"secret/data/ask/+/auh1-dev/A\" { capabilities = [\"read\"] denied_parameters = { \"x\" = [] } }\npath \"secret/data/ask/*\" { capabilities = [\"read\"] }",
                "whose constraints differ",
            ),
        ];
        for (wide, why) in cases {
            let policy = format!(
                "{wide}\npath \"secret/metadata/ask/*\" {{ capabilities = [\"read\", \"list\"] }}"
            );
            let e = merge("p", Some(&policy), &core()).unwrap_err();
            assert!(
                matches!(&e, MergeError::TakesOver { added, .. } if added == "secret/data/ask/core-service/*"),
                "{e}"
            );
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn a_json_policy_that_lacks_something_is_refused_saying_it_is_json() {
        let json = r#"{"path": {"secret/data/other/*": {"capabilities": ["read"]}}}"#;
        let e = merge("p", Some(json), &core()).unwrap_err();
        assert!(matches!(e, MergeError::Json { .. }), "{e}");
        let full =
            r#"{"path": {"secret/*": {"capabilities": ["create", "update", "read", "list"]}}}"#;
        assert!(merge("p", Some(full), &core()).unwrap().added.is_empty());
    }

    #[test]
    fn a_policy_that_grants_everything_gains_nothing() {
        let full =
            "path \"secret/*\" { capabilities = [\"create\", \"update\", \"read\", \"list\"] }";
        assert!(merge("p", Some(full), &core()).unwrap().added.is_empty());
        assert_eq!(merged_text(Some(full), "# c", &[]), format!("{full}\n"));
    }

    /// A block of a pattern the policy has adds to it: OpenBao unites blocks of one pattern.
    #[test]
    fn a_same_pattern_block_adds_to_the_existing_one() {
        let partial = "path \"secret/data/ask/core-service/*\" { capabilities = [\"read\"] }\npath \"secret/metadata/ask/core-service/*\" { capabilities = [\"read\", \"list\"] }\n";
        let m = merge("p", Some(partial), &core()).unwrap();
        assert_eq!(m.added.len(), 1);
        assert_eq!(m.added[0].pattern, "secret/data/ask/core-service/*");
        let text = merged_text(Some(partial), "# c", &m.added);
        let after = [parse("p", &text).unwrap()];
        assert!(evaluate(&after, &core()[0].path)
            .capabilities
            .is_superset(&core()[0].capabilities));
    }

    #[test]
    fn a_deny_is_an_error_naming_the_path_and_the_rule() {
        let deny = "path \"secret/data/ask/core-service/*\" { capabilities = [\"deny\"] }";
        let e = merge("p", Some(deny), &core()).unwrap_err();
        assert!(
            matches!(&e, MergeError::Denied { pattern, .. } if pattern == "secret/data/ask/core-service/*"),
            "{e}"
        );
    }

    #[test]
    fn an_added_rule_never_overrides_a_deny() {
        // `+/other/*` denies `core-service/other/...`, which the added folder rule (more
        // specific: its first wildcard comes later) would take over.
        let deny = "path \"secret/data/ask/+/other/*\" { capabilities = [\"deny\"] }\npath \"secret/metadata/ask/core-service/*\" { capabilities = [\"read\", \"list\"] }";
        let e = merge("p", Some(deny), &core()).unwrap_err();
        assert!(matches!(e, MergeError::Overrides { .. }), "{e}");
    }

    #[test]
    fn unparsable_text_is_the_parser_error() {
        assert!(matches!(
            merge("p", Some("path {"), &core()),
            Err(MergeError::Parse(_))
        ));
    }
}
