//! `policy --merge`: an existing policy's text with the rules it lacks added below it, never a
//! rule removed or narrowed.
//!
//! OpenBao keeps every `path` block of a policy (`internal/vault/policy/policy.go` `parsePaths`
//! appends each one) and `NewACL` (`acl.go`) unites the capabilities of blocks of one pattern,
//! within a policy as across policies (`deny` wins). So a block added at the end of a policy
//! adds to a block of the same pattern above it; a block of a new, more specific pattern takes
//! over the paths it matches from the broader ones, and is given their capabilities there, so
//! that nothing granted today is lost. [`merge`] proves both with the evaluator before it
//! answers.

use std::collections::BTreeMap;

use super::check::rules_in_order;
use super::{check, parse, Acl, Capabilities, Policy, PolicyError, Requirement, Rule};

/// An existing policy with what it lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// The rules added, in the order they are written.
    pub added: Vec<Rule>,
}

/// Why a policy cannot be merged. Nothing is printed as a policy then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// The existing policy does not parse.
    #[error(transparent)]
    Parse(#[from] PolicyError),
    /// A rule of the existing policy denies (or refuses) a path the specs need; no added rule
    /// can change that without overriding it.
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
    /// The evaluator does not find the merged text granting everything (a case vault-seed does
    /// not handle).
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
            MergeError::Denied { .. } | MergeError::Overrides { .. } => Some(
                "vault-seed never removes a rule: change or remove that `deny` by hand (`vault policy read`), or give the application a policy of its own".into(),
            ),
            MergeError::Unproven { .. } => Some(
                "add the rules `vault-seed policy ENV` prints to the policy by hand, keeping its other rules".into(),
            ),
        }
    }
}

/// The rules `text` (the policy `name`; `None` when it does not exist) lacks for
/// `requirements`, checked so that the text with them appended ([`merged_text`]) grants every
/// requirement and still grants everything `text` granted.
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
    let mut add: BTreeMap<String, Capabilities> = report
        .add
        .iter()
        .map(|r| (r.pattern.clone(), r.capabilities))
        .collect();
    let probes = probes(&original, &add, requirements);
    // An added pattern more specific than a rule of the policy takes the paths they share from
    // it: it carries that rule's capabilities there (a few rounds: each only adds).
    for _round in 0..4 {
        let merged = Acl::new(&[original.clone(), added_policy(&add)]);
        let mut changed = false;
        for path in &probes {
            let (before, after) = (acl.capabilities(path), merged.capabilities(path));
            let (Some(now), Some(was)) = (after.decided_by, before.decided_by) else {
                continue;
            };
            if now.pattern == was.pattern || !add.contains_key(&*now.pattern) {
                continue;
            }
            if was.denied {
                return Err(MergeError::Overrides {
                    policy: name.to_string(),
                    added: now.pattern.to_string(),
                    pattern: was.pattern.to_string(),
                    path: path.clone(),
                });
            }
            let caps = add.entry(now.pattern.to_string()).or_default();
            if !caps.is_superset(&before.capabilities) {
                caps.extend(before.capabilities.iter());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let added = rules_in_order(
        add.into_iter()
            .map(|(p, c)| Rule::new(p, c))
            .collect::<Vec<_>>(),
    );
    prove(name, text, &added, requirements, &acl, &probes)?;
    Ok(Merge { added })
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

fn added_policy(add: &BTreeMap<String, Capabilities>) -> Policy {
    Policy {
        name: "(added)".into(),
        rules: add.iter().map(|(p, c)| Rule::new(p.clone(), *c)).collect(),
    }
}

/// The paths whose answer an added rule may change: the needed ones, and for each pattern of
/// the policy and of the additions, a path it matches and no other literal pattern does.
fn probes(
    original: &Policy,
    add: &BTreeMap<String, Capabilities>,
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
    for pattern in add.keys() {
        all.extend(original.rules.iter().map(|r| under(&r.pattern, pattern)));
    }
    all.sort();
    all.dedup();
    all
}

/// The merged text, parsed again as OpenBao would read it, grants every requirement and, on
/// every probe, everything the original granted (and denies what it denied).
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

    const SHARED: &str = "# shared\npath \"secret/data/ask/postgresql/*\" { capabilities = [\"create\", \"update\", \"read\"] }\npath \"secret/data/ask/*\" { capabilities = [\"read\", \"delete\"] }";

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
        // `secret/data/ask/*` granted `delete` under core-service: the added, more specific
        // rule carries it.
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
