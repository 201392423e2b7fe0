//! Required against granted, and the HCL that closes every gap: one rule per folder, as the
//! runbook's grant.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{backticked, Acl, Capabilities, Capability, Decision, Policy, Requirement, Rule, Use};
use crate::report::Style;

/// One path: what ESO needs, what the policies grant, and what is missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathCheck {
    /// The API path.
    pub path: String,
    /// Why ESO needs it.
    pub uses: Vec<Use>,
    /// What ESO needs.
    pub required: Capabilities,
    /// What the policies grant.
    pub granted: Capabilities,
    /// `required` minus `granted`; empty when the path is fine.
    pub missing: Capabilities,
    /// The rule that decided, if any matched.
    pub decided_by: Option<Decision>,
}

/// A gap no added rule can close: an exact rule for the path itself denies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unfixable {
    /// The API path.
    pub path: String,
    /// The exact pattern that denies it.
    pub pattern: String,
    /// The policies that deny it.
    pub policies: Vec<String>,
}

/// The result of [`check`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyReport {
    /// True when every required capability is granted.
    pub ok: bool,
    /// Every required path, sorted.
    pub paths: Vec<PathCheck>,
    /// The rules to add (to any of the policies) so that every fixable gap closes, one per
    /// folder where possible. Adding them never takes away what the policies grant on the
    /// required paths today.
    pub add: Vec<Rule>,
    /// Gaps that only removing a `deny` can close.
    pub unfixable: Vec<Unfixable>,
}

impl PolicyReport {
    /// The paths with a gap.
    pub fn gaps(&self) -> impl Iterator<Item = &PathCheck> {
        self.paths.iter().filter(|p| !p.missing.is_empty())
    }

    /// The rules to add, as HCL ready to paste into the policy file.
    pub fn suggestion_hcl(&self) -> String {
        render_hcl(&self.add)
    }

    /// The rule of `add` that covers `path` once added (the one that decides it).
    pub fn fix_for(&self, path: &str) -> Option<&Rule> {
        let policy = Policy {
            name: String::new(),
            rules: self.add.clone(),
        };
        let pattern = Acl::new(&[policy]).capabilities(path).decided_by?.pattern;
        self.add.iter().find(|r| r.pattern == pattern)
    }

    /// The report for people: one `error:` per gap with the rule to add, then the full HCL.
    /// `policies` names the policies checked.
    pub fn render(&self, policies: &[String], style: &Style) -> String {
        let mut out = String::new();
        let names = if policies.is_empty() {
            "no policy".to_string()
        } else {
            format!(
                "{} `{}`",
                if policies.len() == 1 {
                    "policy"
                } else {
                    "policies"
                },
                policies.join("`, `")
            )
        };
        let verb = if policies.len() == 1 { "does" } else { "do" };
        for p in &self.paths {
            if p.missing.is_empty() {
                out.push_str(&format!(
                    "{} `{}`: {}\n",
                    style.ok("ok"),
                    p.path,
                    list(&p.required)
                ));
                continue;
            }
            let uses: Vec<&str> = p.uses.iter().map(|u| u.describe()).collect();
            out.push_str(&format!(
                "{}: {names} {verb} not grant {} on `{}` ({}; granted: {})\n",
                style.error("error"),
                backticked(&p.missing),
                p.path,
                uses.join(", "),
                if p.granted.is_empty() {
                    "nothing".to_string()
                } else {
                    list(&p.granted)
                },
            ));
            if let Some(u) = self.unfixable.iter().find(|u| u.path == p.path) {
                out.push_str(&format!(
                    "  {}: remove the `deny` on `{}` in {}\n",
                    style.help("help"),
                    u.pattern,
                    backticked(&u.policies)
                ));
            } else if let Some(rule) = self.fix_for(&p.path) {
                out.push_str(&format!(
                    "  {}: {}\n",
                    style.help("add"),
                    render_hcl(std::slice::from_ref(rule)).trim_end()
                ));
            }
        }
        if !self.add.is_empty() {
            out.push_str(&format!(
                "\n{}: add to {}:\n{}",
                style.help("help"),
                if policies.is_empty() {
                    "ESO's policy".to_string()
                } else {
                    format!("`{}`", policies[0])
                },
                self.suggestion_hcl()
            ));
        }
        out
    }
}

fn list(c: &Capabilities) -> String {
    c.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}

/// Check `policies` (the union of ESO's policies) against `requirements`, and work out the
/// rules to add.
///
/// The added rules are checked with the evaluator before they are proposed: first one rule per
/// folder (with what ESO needs there plus what the policies grant there today, so nothing is
/// taken away); where a more specific rule still decides a path, that rule's pattern with the
/// missing capabilities (Vault unites rules of one pattern); where a `deny` on a wildcard
/// pattern decides it, an exact rule for the path. Only an exact `deny` is left unfixable.
pub fn check(policies: &[Policy], requirements: &[Requirement]) -> PolicyReport {
    let acl = Acl::new(policies);
    let paths: Vec<PathCheck> = requirements
        .iter()
        .map(|r| {
            let g = acl.capabilities(&r.path);
            PathCheck {
                path: r.path.clone(),
                uses: r.uses.clone(),
                required: r.capabilities.clone(),
                missing: r
                    .capabilities
                    .difference(&g.capabilities)
                    .copied()
                    .collect(),
                granted: g.capabilities,
                decided_by: g.decided_by,
            }
        })
        .collect();
    let ok = paths.iter().all(|p| p.missing.is_empty());
    let (add, unfixable) = if ok {
        (Vec::new(), Vec::new())
    } else {
        suggest(policies, requirements, &paths)
    };
    PolicyReport {
        ok,
        paths,
        add,
        unfixable,
    }
}

fn suggest(
    policies: &[Policy],
    requirements: &[Requirement],
    paths: &[PathCheck],
) -> (Vec<Rule>, Vec<Unfixable>) {
    // Step 1: a folder rule for every folder with a gap, granting what every required path of
    // that folder needs plus what it has today.
    let gap_folders: Vec<&str> = requirements
        .iter()
        .zip(paths)
        .filter(|(_, p)| !p.missing.is_empty())
        .map(|(r, _)| r.folder_rule.as_str())
        .collect();
    let mut add: BTreeMap<String, Capabilities> = BTreeMap::new();
    for (r, p) in requirements.iter().zip(paths) {
        if gap_folders.contains(&r.folder_rule.as_str()) {
            let caps = add.entry(r.folder_rule.clone()).or_default();
            caps.extend(r.capabilities.iter().copied());
            caps.extend(p.granted.iter().copied());
        }
    }
    // Steps 2 and 3, until nothing changes (at most a few rounds: each adds to the pattern that
    // decides, which does not change what decides).
    let mut unfixable = Vec::new();
    for _round in 0..4 {
        let acl = Acl::new(&with_rules(policies, &add));
        let mut changed = false;
        unfixable.clear();
        for r in requirements {
            let g = acl.capabilities(&r.path);
            let missing: Capabilities = r
                .capabilities
                .difference(&g.capabilities)
                .copied()
                .collect();
            if missing.is_empty() {
                continue;
            }
            match g.decided_by {
                Some(d) if d.denied && d.kind == super::MatchKind::Exact => {
                    unfixable.push(Unfixable {
                        path: r.path.clone(),
                        pattern: d.pattern,
                        policies: d.policies,
                    })
                }
                Some(d) if d.denied => {
                    add.entry(r.path.trim_end_matches('/').to_string())
                        .or_default()
                        .extend(r.capabilities.iter().copied());
                    changed = true;
                }
                Some(d) => {
                    add.entry(d.pattern).or_default().extend(missing);
                    changed = true;
                }
                // Cannot happen after step 1 unless a `+` pattern shadows nothing; be safe.
                None => {
                    add.entry(r.folder_rule.clone())
                        .or_default()
                        .extend(r.capabilities.iter().copied());
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let rules = add
        .into_iter()
        .map(|(pattern, capabilities)| Rule {
            pattern,
            capabilities,
        })
        .collect();
    (rules, unfixable)
}

fn with_rules(policies: &[Policy], add: &BTreeMap<String, Capabilities>) -> Vec<Policy> {
    let mut all = policies.to_vec();
    all.push(Policy {
        name: "(suggested)".to_string(),
        rules: add
            .iter()
            .map(|(p, c)| Rule {
                pattern: p.clone(),
                capabilities: c.clone(),
            })
            .collect(),
    });
    all
}

/// The smallest set of rules, one per folder, that grants every requirement: what
/// `vault-seed policy` prints.
pub fn minimal_rules(requirements: &[Requirement]) -> Vec<Rule> {
    let mut rules: BTreeMap<&str, Capabilities> = BTreeMap::new();
    for r in requirements {
        rules
            .entry(&r.folder_rule)
            .or_default()
            .extend(r.capabilities.iter().copied());
    }
    // Data rules before metadata rules of the same mount, as the runbook writes them.
    let mut rules: Vec<Rule> = rules
        .into_iter()
        .map(|(p, c)| Rule {
            pattern: p.to_string(),
            capabilities: c,
        })
        .collect();
    rules.sort_by_key(|r| (r.pattern.contains("/metadata/"), r.pattern.clone()));
    rules
}

/// The minimal policy for `requirements`, as HCL (see [`minimal_rules`]).
pub fn minimal_policy(requirements: &[Requirement]) -> String {
    render_hcl(&minimal_rules(requirements))
}

/// Rules as HCL, one line each, braces aligned as in the runbook:
/// `path "secret/data/ask/core-service/*"     { capabilities = ["create", "update", "read"] }`.
pub fn render_hcl(rules: &[Rule]) -> String {
    let quoted: Vec<String> = rules
        .iter()
        .map(|r| serde_json::to_string(&r.pattern).unwrap_or_default())
        .collect();
    let width = quoted.iter().map(|q| q.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for (r, q) in rules.iter().zip(&quoted) {
        let caps: Vec<String> = r
            .capabilities
            .iter()
            .map(|c: &Capability| format!("\"{c}\""))
            .collect();
        out.push_str(&format!(
            "path {q:<width$} {{ capabilities = [{}] }}\n",
            caps.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{parse, Use};
    use Capability::*;

    fn caps(c: &[Capability]) -> Capabilities {
        c.iter().copied().collect()
    }

    fn req(path: &str, c: &[Capability], folder: &str) -> Requirement {
        Requirement {
            path: path.into(),
            capabilities: caps(c),
            uses: vec![Use::Push],
            folder_rule: folder.into(),
        }
    }

    fn runbook_reqs() -> Vec<Requirement> {
        let d = "secret/data/ask/core-service/*";
        let m = "secret/metadata/ask/core-service/*";
        vec![
            req(
                "secret/data/ask/core-service/dev/A",
                &[Create, Update, Read],
                d,
            ),
            req(
                "secret/data/ask/core-service/dev/B",
                &[Create, Update, Read],
                d,
            ),
            req("secret/metadata/ask/core-service/dev/A", &[Read, List], m),
            req("secret/metadata/ask/core-service/dev/B", &[Read, List], m),
        ]
    }

    #[test]
    fn minimal_policy_is_the_runbook_grant() {
        assert_eq!(
            minimal_policy(&runbook_reqs()),
            "path \"secret/data/ask/core-service/*\"     { capabilities = [\"create\", \"update\", \"read\"] }\n\
             path \"secret/metadata/ask/core-service/*\" { capabilities = [\"read\", \"list\"] }\n"
        );
    }

    #[test]
    fn rendered_hcl_parses_back() {
        let rules = minimal_rules(&runbook_reqs());
        let p = parse("m", &render_hcl(&rules)).unwrap();
        assert_eq!(p.rules, rules);
    }

    #[test]
    fn missing_metadata_rule_is_one_folder_rule() {
        let p = parse(
            "eso-ask-push",
            r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"] }"#,
        )
        .unwrap();
        let r = check(&[p], &runbook_reqs());
        assert!(!r.ok);
        let gaps: Vec<_> = r
            .gaps()
            .map(|g| (g.path.as_str(), g.missing.clone()))
            .collect();
        assert_eq!(
            gaps,
            [
                (
                    "secret/metadata/ask/core-service/dev/A",
                    caps(&[Read, List])
                ),
                (
                    "secret/metadata/ask/core-service/dev/B",
                    caps(&[Read, List])
                ),
            ]
        );
        assert_eq!(
            r.suggestion_hcl(),
            "path \"secret/metadata/ask/core-service/*\" { capabilities = [\"read\", \"list\"] }\n"
        );
        let text = r.render(&["eso-ask-push".into()], &Style::plain());
        assert!(
            text.contains("error: policy `eso-ask-push` does not grant `read`, `list` on `secret/metadata/ask/core-service/dev/A` (PushSecret; granted: nothing)\n  add: path \"secret/metadata/ask/core-service/*\" { capabilities = [\"read\", \"list\"] }\n"),
            "{text}"
        );
    }

    #[test]
    fn folder_rule_keeps_what_is_granted_today() {
        // A broad rule grants read and delete; the folder rule must not take them away.
        let p = parse(
            "p",
            r#"path "secret/data/*" { capabilities = ["read", "delete"] }"#,
        )
        .unwrap();
        let r = check(std::slice::from_ref(&p), &runbook_reqs()[..2]);
        assert_eq!(r.add.len(), 1);
        assert_eq!(r.add[0].pattern, "secret/data/ask/core-service/*");
        assert_eq!(r.add[0].capabilities, caps(&[Create, Update, Read, Delete]));
        let fixed = Policy {
            name: "fix".into(),
            rules: r.add.clone(),
        };
        assert!(check(&[p, fixed], &runbook_reqs()[..2]).ok);
    }

    #[test]
    fn more_specific_rule_gets_the_capabilities() {
        // `secret/data/ask/core-service/dev/*` decides; a folder rule above it would not help.
        let p = parse(
            "p",
            r#"path "secret/data/ask/core-service/dev/*" { capabilities = ["read"] }"#,
        )
        .unwrap();
        let r = check(std::slice::from_ref(&p), &runbook_reqs()[..2]);
        assert!(r
            .add
            .iter()
            .any(|a| a.pattern == "secret/data/ask/core-service/dev/*"
                && a.capabilities.is_superset(&caps(&[Create, Update]))));
        let fixed = Policy {
            name: "fix".into(),
            rules: r.add.clone(),
        };
        assert!(check(&[p, fixed], &runbook_reqs()[..2]).ok);
    }

    #[test]
    fn deny_on_a_glob_is_beaten_by_an_exact_rule_and_exact_deny_is_unfixable() {
        let p = parse(
            "p",
            r#"
path "secret/data/ask/core-service/+/A" { capabilities = ["deny"] }
path "secret/data/ask/core-service/dev/B" { capabilities = ["deny"] }
"#,
        )
        .unwrap();
        let r = check(std::slice::from_ref(&p), &runbook_reqs()[..2]);
        assert!(r
            .add
            .iter()
            .any(|a| a.pattern == "secret/data/ask/core-service/dev/A"));
        assert_eq!(
            r.unfixable,
            [Unfixable {
                path: "secret/data/ask/core-service/dev/B".into(),
                pattern: "secret/data/ask/core-service/dev/B".into(),
                policies: vec!["p".into()],
            }]
        );
        let fixed = Policy {
            name: "fix".into(),
            rules: r.add.clone(),
        };
        let after = check(&[p, fixed], &runbook_reqs()[..2]);
        let still: Vec<_> = after.gaps().map(|g| g.path.as_str()).collect();
        assert_eq!(still, ["secret/data/ask/core-service/dev/B"]);
        let text = r.render(&["p".into()], &Style::plain());
        assert!(
            text.contains("help: remove the `deny` on `secret/data/ask/core-service/dev/B` in `p`"),
            "{text}"
        );
    }

    #[test]
    fn all_granted_is_ok_without_suggestions() {
        let p = parse("p", &minimal_policy(&runbook_reqs())).unwrap();
        let r = check(&[p], &runbook_reqs());
        assert!(r.ok);
        assert!(r.add.is_empty() && r.unfixable.is_empty());
        assert_eq!(r.gaps().count(), 0);
        assert_eq!(r.paths.len(), 4);
    }
}
