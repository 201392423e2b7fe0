//! Required against granted, and the HCL that closes every gap: one rule per folder, as the
//! runbook's grant.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use super::{
    Acl, Capabilities, Decision, MatchKind, Param, Policy, Refusal, Requirement, Requirements,
    Rule, Use,
};

/// One path: what ESO needs, what the policies grant, and what is missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathCheck {
    /// The API path.
    pub path: String,
    /// Why ESO needs it.
    pub uses: Vec<Use>,
    /// What ESO needs.
    pub required: Capabilities,
    /// What the policies grant (what `sys/capabilities` answers).
    pub granted: Capabilities,
    /// What ESO's requests do not get: `required` minus `granted`, plus what `refused` holds;
    /// empty when the path is fine.
    pub missing: Capabilities,
    /// Granted, but refused for the request ESO sends by a constraint of the deciding rule
    /// (`required_parameters`, wrapping TTLs, `control_group`...).
    pub refused: Vec<Refusal>,
    /// The rule that decided, if any matched.
    pub decided_by: Option<Decision>,
    /// The pattern of the rule in `add` that closes this path's gap; `null` when it has none or
    /// only removing something closes it (`unfixable`).
    pub fix: Option<String>,
}

/// A gap no added rule can close: an exact rule for the path itself denies or refuses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unfixable {
    /// The API path.
    pub path: String,
    /// The exact pattern that denies it.
    pub pattern: String,
    /// The policies that deny it.
    pub policies: Vec<String>,
    /// `deny`, or the constraint that refuses ESO's request.
    pub reason: String,
}

/// The result of [`check`]. In JSON `{"ok", "paths", "add", "unfixable"}`, `paths` listing every
/// required path's [`PathCheck`], sorted.
#[derive(Debug)]
pub struct PolicyReport {
    /// True when every required capability is granted.
    pub ok: bool,
    /// Every required path's check.
    paths: Paths,
    /// The rules to add (to any of the policies) so that every fixable gap closes, one per
    /// folder where possible. Adding them never takes away what the policies grant on the
    /// required paths today.
    pub add: Vec<Rule>,
    /// Gaps that only removing a `deny` (or a constraint) can close.
    pub unfixable: Vec<Unfixable>,
}

/// How a report holds its paths' checks.
#[derive(Debug)]
enum Paths {
    /// Each one (the server's answers).
    Held(Vec<PathCheck>),
    /// Only those with a gap, by their index in `requirements`; any other is made again when it
    /// is read, from its requirement and the ACL (a check held per path was 30 MB of `verify`
    /// at 100,000 paths, and the requirements they were made from 36 MB more).
    Evaluated {
        requirements: Box<Requirements>,
        acl: Box<Acl>,
        gaps: Vec<(usize, PathCheck)>,
    },
}

/// `{"ok", "paths", "add", "unfixable"}`, the checks serialised as they are made.
impl Serialize for PolicyReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        struct Each<'a>(&'a PolicyReport);
        impl Serialize for Each<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.path_count()))?;
                for p in self.0.paths() {
                    seq.serialize_element(&*p)?;
                }
                seq.end()
            }
        }
        let mut o = s.serialize_struct("PolicyReport", 4)?;
        o.serialize_field("ok", &self.ok)?;
        o.serialize_field("paths", &Each(self))?;
        o.serialize_field("add", &self.add)?;
        o.serialize_field("unfixable", &self.unfixable)?;
        o.end()
    }
}

/// The gaps one fix closes.
pub struct GapGroup<'a> {
    /// What closes them.
    pub fix: Fix<'a>,
    /// The paths, in path order.
    pub paths: Vec<&'a PathCheck>,
}

/// What closes a group of gaps.
#[derive(Debug, PartialEq)]
pub enum Fix<'a> {
    /// Adding this rule (of [`PolicyReport::add`]).
    Add(&'a Rule),
    /// Removing the `deny` or constraint of an exact rule.
    Remove(&'a Unfixable),
    /// Nothing vault-seed can propose.
    None,
}

impl PolicyReport {
    /// A report of checks already made (the server's answers); `ok` as the caller decided it.
    pub fn from_checks(
        ok: bool,
        paths: Vec<PathCheck>,
        add: Vec<Rule>,
        unfixable: Vec<Unfixable>,
    ) -> PolicyReport {
        PolicyReport {
            ok,
            paths: Paths::Held(paths),
            add,
            unfixable,
        }
    }

    /// The number of required paths.
    pub fn path_count(&self) -> usize {
        match &self.paths {
            Paths::Held(paths) => paths.len(),
            Paths::Evaluated { requirements, .. } => requirements.len(),
        }
    }

    /// Every required path's check, sorted by path; one with no gap is made when it is reached.
    pub fn paths(&self) -> impl Iterator<Item = Cow<'_, PathCheck>> + '_ {
        let (held, evaluated) = match &self.paths {
            Paths::Held(paths) => (Some(paths.iter().map(Cow::Borrowed)), None),
            Paths::Evaluated {
                requirements,
                acl,
                gaps,
            } => {
                let mut gaps = gaps.iter().peekable();
                let each =
                    (0..requirements.len()).map(move |i| match gaps.next_if(|(at, _)| *at == i) {
                        Some((_, p)) => Cow::Borrowed(p),
                        None => Cow::Owned(checked(acl, requirements.get(i)).0),
                    });
                (None, Some(each))
            }
        };
        held.into_iter()
            .flatten()
            .chain(evaluated.into_iter().flatten())
    }

    /// The paths with a gap.
    pub fn gaps(&self) -> Box<dyn Iterator<Item = &PathCheck> + '_> {
        match &self.paths {
            Paths::Held(paths) => Box::new(paths.iter().filter(|p| !p.missing.is_empty())),
            Paths::Evaluated { gaps, .. } => Box::new(gaps.iter().map(|(_, p)| p)),
        }
    }

    /// The rules to add, as HCL ready to paste into the policy file.
    pub fn suggestion_hcl(&self) -> String {
        render_hcl(&self.add)
    }

    /// The gaps grouped by what closes them, in path order: a gap closed by the same added rule
    /// as another joins its group; one only removing something closes stands alone.
    pub fn groups(&self) -> Vec<GapGroup<'_>> {
        // By maps, not scans: at 100,000 paths with gaps a scan per gap was quadratic.
        let mut unfixable: HashMap<&str, &Unfixable> = HashMap::new();
        for u in &self.unfixable {
            unfixable.entry(u.path.as_str()).or_insert(u);
        }
        let rules: HashMap<&str, &Rule> =
            self.add.iter().map(|r| (r.pattern.as_str(), r)).collect();
        let mut groups: Vec<GapGroup<'_>> = Vec::new();
        // The group of each shared fix: by the added rule's pattern, `None` for nothing to propose.
        let mut shared: HashMap<Option<&str>, usize> = HashMap::new();
        for p in self.gaps() {
            let fix = if let Some(u) = unfixable.get(p.path.as_str()) {
                Fix::Remove(u)
            } else if let Some(r) = p.fix.as_deref().and_then(|f| rules.get(f)) {
                Fix::Add(r)
            } else {
                Fix::None
            };
            // A `deny` or constraint on one exact path is that path's alone.
            let key = match fix {
                Fix::Remove(_) => None,
                Fix::Add(r) => Some(Some(r.pattern.as_str())),
                Fix::None => Some(None),
            };
            match key.and_then(|k| shared.get(&k).copied()) {
                Some(i) => groups[i].paths.push(p),
                None => {
                    if let Some(k) = key {
                        shared.insert(k, groups.len());
                    }
                    groups.push(GapGroup {
                        fix,
                        paths: vec![p],
                    });
                }
            }
        }
        groups
    }
}

/// A templated rule that could decide one of `requirements`' paths: what it matches depends on
/// the token's entity, which vault-seed cannot know; `None` when no such rule matters. A
/// templated pattern matches only paths that start with its text before the first template or
/// wildcard.
pub fn undecidable<'a>(
    policies: &'a [Policy],
    requirements: &Requirements,
) -> Option<(&'a str, &'a str)> {
    policies.iter().find_map(|p| {
        p.rules
            .iter()
            .filter(|r| r.templated)
            .find(|r| {
                let end = r.pattern.find(['{', '+', '*']).unwrap_or(r.pattern.len());
                let fixed = &r.pattern[..end];
                requirements
                    .paths()
                    .any(|q| q.starts_with(fixed) || q.trim_end_matches('/').starts_with(fixed))
            })
            .map(|r| (p.name.as_str(), r.pattern.as_str()))
    })
}

/// What the policies leave missing on one path that needs `required`, a write there sending
/// `params`; and what decided it.
fn gap(
    acl: &Acl,
    path: &str,
    required: &Capabilities,
    params: &[Param],
) -> (super::Grant, Vec<Refusal>, Capabilities) {
    let g = acl.capabilities(path);
    let refused = acl.refusals(path, required, params);
    let mut missing: Capabilities = required.difference(&g.capabilities).copied().collect();
    missing.extend(refused.iter().map(|x| x.capability));
    (g, refused, missing)
}

/// `r` checked against `acl` (its fix not yet known), and what the suggestion needs of `r`
/// besides.
fn checked(acl: &Acl, r: Requirement) -> (PathCheck, Rest) {
    let (g, refused, missing) = gap(acl, &r.path, &r.capabilities, &r.params);
    let check = PathCheck {
        path: r.path,
        uses: r.uses,
        required: r.capabilities,
        missing,
        granted: g.capabilities,
        refused,
        decided_by: g.decided_by,
        fix: None,
    };
    let rest = Rest {
        folder_rule: r.folder_rule,
        params: r.params,
    };
    (check, rest)
}

/// What [`check`] keeps of a requirement besides its [`PathCheck`], for [`suggest`]: the folder
/// rule and the parameters of ESO's write.
struct Rest {
    folder_rule: Arc<str>,
    params: Vec<Param>,
}

/// Check `policies` (the union of ESO's policies) against `requirements`, and work out the
/// rules to add.
///
/// A capability counts as granted when `sys/capabilities` would say so and OpenBao lets ESO's
/// request for it through (see [`Acl::refusals`]). The added rules are checked with the
/// evaluator before they are proposed: first one rule per folder (with what ESO needs there plus
/// what the policies grant there today, so nothing is taken away); where a more specific rule
/// still decides a path, that rule's pattern with the missing capabilities (Vault unites rules
/// of one pattern); where a `deny` or a constraint on a wildcard pattern decides it, an exact
/// rule for the path. Only an exact `deny` or constraint is left unfixable.
pub fn check(policies: &[Policy], requirements: impl Into<Requirements>) -> PolicyReport {
    let requirements = requirements.into();
    let acl = Acl::new(policies);
    // First only whether every path is granted: when it is (the common case), no check is
    // held; the report makes each when it is read.
    let missing = |r: &Requirement| !gap(&acl, &r.path, &r.capabilities, &r.params).2.is_empty();
    if !requirements.iter().any(|r| missing(&r)) {
        return PolicyReport {
            ok: true,
            paths: Paths::Evaluated {
                requirements: Box::new(requirements),
                acl: Box::new(acl),
                gaps: Vec::new(),
            },
            add: Vec::new(),
            unfixable: Vec::new(),
        };
    }
    // A gap: the suggestion looks at every path, so every check is made and held while it is
    // worked out; then only the gaps are kept.
    let mut rest: Vec<Rest> = Vec::with_capacity(requirements.len());
    let mut paths: Vec<PathCheck> = requirements
        .iter()
        .map(|r| {
            let (check, r) = checked(&acl, r);
            rest.push(r);
            check
        })
        .collect();
    let (add, unfixable) = suggest(policies, &rest, &paths);
    drop(rest);
    // Each gap's rule in the suggestion: the one that decides it there (one ACL for them all).
    let unfixable_paths: HashSet<&str> = unfixable.iter().map(|u| u.path.as_str()).collect();
    let suggested: HashSet<&str> = add.iter().map(|r| r.pattern.as_str()).collect();
    let fixes = Acl::new(&[Policy {
        name: String::new(),
        rules: add.clone(),
    }]);
    for p in &mut paths {
        if !p.missing.is_empty() && !unfixable_paths.contains(p.path.as_str()) {
            p.fix = fixes
                .capabilities(&p.path)
                .decided_by
                .map(|d| d.pattern.to_string())
                .filter(|pattern| suggested.contains(pattern.as_str()));
        }
    }
    let gaps = paths
        .into_iter()
        .enumerate()
        .filter(|(_, p)| !p.missing.is_empty())
        .collect();
    PolicyReport {
        ok: false,
        paths: Paths::Evaluated {
            requirements: Box::new(requirements),
            acl: Box::new(acl),
            gaps,
        },
        add,
        unfixable,
    }
}

#[allow(clippy::too_many_lines)] // Vault's rule followed step by step as its source has it
fn suggest(policies: &[Policy], rest: &[Rest], paths: &[PathCheck]) -> (Vec<Rule>, Vec<Unfixable>) {
    // Step 1: a folder rule for every folder with a gap, granting what every required path of
    // that folder needs plus what it has today.
    // A set: a list was searched once per requirement, quadratic when every path has a gap (no
    // policy at all, at 100,000 paths).
    let gap_folders: HashSet<&str> = rest
        .iter()
        .zip(paths)
        .filter(|(_, p)| !p.missing.is_empty())
        .map(|(r, _)| &*r.folder_rule)
        .collect();
    let mut add: BTreeMap<String, Capabilities> = BTreeMap::new();
    for (r, p) in rest.iter().zip(paths) {
        if gap_folders.contains(&*r.folder_rule) {
            let caps = add.entry(r.folder_rule.to_string()).or_default();
            caps.extend(p.required.iter().copied());
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
        for (r, p) in rest.iter().zip(paths) {
            let (g, refused, missing) = gap(&acl, &p.path, &p.required, &r.params);
            if missing.is_empty() {
                continue;
            }
            match g.decided_by {
                Some(d) if (d.denied || !refused.is_empty()) && d.kind == MatchKind::Exact => {
                    unfixable.push(Unfixable {
                        path: p.path.clone(),
                        pattern: d.pattern.to_string(),
                        policies: d.policies.to_vec(),
                        reason: match refused.first() {
                            Some(x) if !d.denied => x.reason.clone(),
                            _ => "deny".to_string(),
                        },
                    })
                }
                // Past a `deny` or a constraint on a wildcard: an exact rule of its own.
                Some(d) if d.denied || !refused.is_empty() => {
                    add.entry(p.path.trim_end_matches('/').to_string())
                        .or_default()
                        .extend(p.required.iter().copied());
                    changed = true;
                }
                Some(d) => {
                    add.entry(d.pattern.to_string())
                        .or_default()
                        .extend(missing);
                    changed = true;
                }
                // Cannot happen after step 1 unless a `+` pattern shadows nothing; be safe.
                None => {
                    add.entry(r.folder_rule.to_string())
                        .or_default()
                        .extend(p.required.iter().copied());
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Drop rules the others make unneeded (a folder rule that an exact rule per path overrides
    // everywhere): every gap they close stays closed, and nothing granted today is lost. Taking
    // a rule out changes the decision only on the paths it decides (the best match stays the
    // best when another candidate goes), so only those are evaluated again, on one ACL whose
    // entry for the rule is swapped for what the policies alone have there. (An ACL built and
    // every path evaluated per rule was quadratic: `verify` with no ESO policy at 50,000 paths
    // ran for over 12 CPU-minutes.)
    let base = Acl::new(policies);
    let mut acl = Acl::new(&with_rules(policies, &add));
    let closes = |acl: &Acl, i: usize| {
        let p = &paths[i];
        let (g, _, missing) = gap(acl, &p.path, &p.required, &rest[i].params);
        missing.is_empty() && g.capabilities.is_superset(&p.granted)
    };
    let decider = |acl: &Acl, i: usize| {
        acl.capabilities(&paths[i].path)
            .decided_by
            .map(|d| d.pattern.to_string())
    };
    let wanted: Vec<bool> = (0..paths.len()).map(|i| closes(&acl, i)).collect();
    let mut decides: HashMap<String, Vec<usize>> = HashMap::new();
    for i in 0..paths.len() {
        if let Some(p) = decider(&acl, i) {
            decides.entry(p).or_default().push(i);
        }
    }
    for pattern in add.keys().cloned().collect::<Vec<_>>() {
        let affected = decides.remove(&pattern).unwrap_or_default();
        let had = acl.take_from(&pattern, &base);
        if affected.iter().all(|&i| !wanted[i] || closes(&acl, i)) {
            add.remove(&pattern);
            for i in affected {
                if let Some(p) = decider(&acl, i) {
                    decides.entry(p).or_default().push(i);
                }
            }
        } else {
            acl.restore(&pattern, had);
            decides.insert(pattern, affected);
        }
    }
    let rules = add
        .into_iter()
        .map(|(pattern, capabilities)| Rule::new(pattern, capabilities))
        .collect();
    (rules, unfixable)
}

fn with_rules(policies: &[Policy], add: &BTreeMap<String, Capabilities>) -> Vec<Policy> {
    let mut all = policies.to_vec();
    all.push(Policy {
        name: "(suggested)".to_string(),
        rules: add.iter().map(|(p, c)| Rule::new(p.clone(), *c)).collect(),
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
    rules_in_order(rules.into_iter().map(|(p, c)| Rule::new(p, c)).collect())
}

/// Data rules before metadata rules of the same mount, as the runbook writes them. Sorted in
/// place: the patterns are unique (both callers make the rules from a map keyed by pattern), so
/// an unstable sort gives the one order, without the stable sort's buffer of half the rules
/// (5.9 MB at 100,000 paths: `policy`'s peak).
pub(super) fn rules_in_order(mut rules: Vec<Rule>) -> Vec<Rule> {
    debug_assert!(
        rules.windows(2).all(|w| w[0].pattern != w[1].pattern),
        "one rule per pattern"
    );
    rules.sort_unstable_by(|a, b| {
        (a.pattern.contains("/metadata/"), &a.pattern)
            .cmp(&(b.pattern.contains("/metadata/"), &b.pattern))
    });
    rules
}

/// The minimal policy for `requirements`, as HCL (see [`minimal_rules`]).
pub fn minimal_policy(requirements: &[Requirement]) -> String {
    render_hcl(&minimal_rules(requirements))
}

/// Rules as HCL, one line each, braces aligned as in the runbook:
/// `path "secret/data/ask/core-service/*"     { capabilities = ["create", "update", "read"] }`.
pub fn render_hcl(rules: &[Rule]) -> String {
    let mut out = Vec::new();
    // Writing to a `Vec` cannot fail, and what is written is UTF-8 (the patterns are strings).
    let _ = write_hcl(rules, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// [`render_hcl`], written to `out` a line at a time: a 100,000-path policy is megabytes of
/// HCL, never held whole. A rule with constraints (one `policy --merge` carries) is a block of
/// its own lines.
pub fn write_hcl(rules: &[Rule], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let quoted = |r: &Rule| serde_json::to_string(&r.pattern).unwrap_or_default();
    let width = rules
        .iter()
        .filter(|r| r.constraints.is_none())
        .map(|r| quoted(r).chars().count())
        .max()
        .unwrap_or(0);
    let capabilities = |r: &Rule, out: &mut dyn std::io::Write| -> std::io::Result<()> {
        out.write_all(b"capabilities = [")?;
        for (i, c) in r.capabilities.iter().enumerate() {
            write!(out, "{}\"{c}\"", if i == 0 { "" } else { ", " })?;
        }
        out.write_all(b"]")
    };
    for r in rules {
        if let Some(c) = &r.constraints {
            write!(out, "path {} {{\n  ", quoted(r))?;
            capabilities(r, out)?;
            out.write_all(b"\n")?;
            for line in c.hcl_lines() {
                writeln!(out, "  {line}")?;
            }
            out.write_all(b"}\n")?;
            continue;
        }
        write!(out, "path {:<width$} {{ ", quoted(r))?;
        capabilities(r, out)?;
        out.write_all(b" }\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{parse, Capability, Use};
    // The wording of the gaps is report code; these tests check it with the grouping.
    use crate::report::{gaps::render, Style};
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
            params: Vec::new(),
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
        let r = check(&[p], runbook_reqs());
        assert!(!r.ok);
        let gaps: Vec<_> = r.gaps().map(|g| (g.path.as_str(), g.missing)).collect();
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
        // One error and one rule for both paths; -v lists them.
        let text = render(&r, &["eso-ask-push".into()], &Style::plain(), false);
        assert_eq!(
            text,
            "error: policy `eso-ask-push` does not grant `read`, `list` on 2 paths under `secret/metadata/ask/core-service/dev/` (PushSecret; granted: nothing; -v lists them)\n  add: path \"secret/metadata/ask/core-service/*\" { capabilities = [\"read\", \"list\"] }\n"
        );
        let verbose = render(&r, &["eso-ask-push".into()], &Style::plain(), true);
        assert!(
            verbose.contains("(PushSecret; granted: nothing)\n    `secret/metadata/ask/core-service/dev/A`: lacks `read`, `list`\n    `secret/metadata/ask/core-service/dev/B`: lacks `read`, `list`\n  add: "),
            "{verbose}"
        );
        assert!(r
            .gaps()
            .all(|g| g.fix.as_deref() == Some("secret/metadata/ask/core-service/*")));
    }

    #[test]
    fn folder_rule_keeps_what_is_granted_today() {
        // A broad rule grants read and delete; the folder rule must not take them away.
        let p = parse(
            "p",
            r#"path "secret/data/*" { capabilities = ["read", "delete"] }"#,
        )
        .unwrap();
        let r = check(std::slice::from_ref(&p), runbook_reqs()[..2].to_vec());
        assert_eq!(r.add.len(), 1);
        assert_eq!(r.add[0].pattern, "secret/data/ask/core-service/*");
        assert_eq!(r.add[0].capabilities, caps(&[Create, Update, Read, Delete]));
        let fixed = Policy {
            name: "fix".into(),
            rules: r.add.clone(),
        };
        assert!(check(&[p, fixed], runbook_reqs()[..2].to_vec()).ok);
    }

    #[test]
    fn more_specific_rule_gets_the_capabilities() {
        // `secret/data/ask/core-service/dev/*` decides; a folder rule above it would not help.
        let p = parse(
            "p",
            r#"path "secret/data/ask/core-service/dev/*" { capabilities = ["read"] }"#,
        )
        .unwrap();
        let r = check(std::slice::from_ref(&p), runbook_reqs()[..2].to_vec());
        assert!(r
            .add
            .iter()
            .any(|a| a.pattern == "secret/data/ask/core-service/dev/*"
                && a.capabilities.is_superset(&caps(&[Create, Update]))));
        let fixed = Policy {
            name: "fix".into(),
            rules: r.add.clone(),
        };
        assert!(check(&[p, fixed], runbook_reqs()[..2].to_vec()).ok);
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
        let r = check(std::slice::from_ref(&p), runbook_reqs()[..2].to_vec());
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
                reason: "deny".into(),
            }]
        );
        let fixed = Policy {
            name: "fix".into(),
            rules: r.add.clone(),
        };
        let after = check(&[p, fixed], runbook_reqs()[..2].to_vec());
        let still: Vec<_> = after.gaps().map(|g| g.path.as_str()).collect();
        assert_eq!(still, ["secret/data/ask/core-service/dev/B"]);
        let text = render(&r, &["p".into()], &Style::plain(), false);
        assert!(
            text.contains("help: remove the `deny` on `secret/data/ask/core-service/dev/B` in `p`"),
            "{text}"
        );
        assert!(
            text.contains("on `secret/data/ask/core-service/dev/A` (PushSecret; granted: nothing; denied by the `deny` on `secret/data/ask/core-service/+/A` in `p`)"),
            "{text}"
        );
    }

    #[test]
    fn all_granted_is_ok_without_suggestions() {
        let p = parse("p", &minimal_policy(&runbook_reqs())).unwrap();
        let r = check(&[p], runbook_reqs());
        assert!(r.ok);
        assert!(r.add.is_empty() && r.unfixable.is_empty());
        assert_eq!(r.gaps().count(), 0);
        assert_eq!(r.path_count(), 4);
        assert_eq!(r.paths().count(), 4);
    }

    #[test]
    fn constraints_refuse_what_the_capabilities_grant() {
        let mut reqs = runbook_reqs();
        reqs[0].params = vec![super::super::Param {
            name: "data".into(),
            object: true,
        }];
        let p = parse(
            "p",
            r#"
path "secret/data/ask/core-service/*"     { capabilities = ["create", "update", "read"] required_parameters = ["version"] }
path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"] max_wrapping_ttl = "1h" }
"#,
        )
        .unwrap();
        let r = check(std::slice::from_ref(&p), reqs.clone());
        assert!(!r.ok);
        let paths: Vec<Cow<'_, PathCheck>> = r.paths().collect();
        for g in &paths {
            assert_eq!(g.granted, g.required, "sys/capabilities would grant it all");
            assert_eq!(g.missing, g.required, "and ESO gets none of it");
        }
        assert!(paths[0].refused[0]
            .reason
            .contains("`required_parameters` asks for `version`"));
        assert!(paths[2].refused[0].reason.contains("`max_wrapping_ttl`"));
        // Exact rules, free of the constraints, close every gap.
        let fixed = Policy {
            name: "fix".into(),
            rules: r.add.clone(),
        };
        let added: Vec<&str> = r.add.iter().map(|a| a.pattern.as_str()).collect();
        assert_eq!(
            added,
            [
                "secret/data/ask/core-service/dev/A",
                "secret/data/ask/core-service/dev/B",
                "secret/metadata/ask/core-service/dev/A",
                "secret/metadata/ask/core-service/dev/B",
            ]
        );
        assert!(check(&[p.clone(), fixed], reqs.clone()).ok);
        let text = render(&r, &["p".into()], &Style::plain(), false);
        assert!(
            text.contains("OpenBao refuses ESO's `create` request: `required_parameters` asks for `version`, which ESO's write does not send (rule `secret/data/ask/core-service/*` in `p`)"),
            "{text}"
        );
        // The parameters a write sends count: `data` is there, `allowed_parameters` must allow it.
        let q = parse(
            "q",
            r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"] allowed_parameters = { "data" = [] } required_parameters = ["data"] }"#,
        )
        .unwrap();
        let r = check(&[q], reqs[..1].to_vec());
        // The read sends no `data`: refused; the writes send it: fine.
        let first = r.paths().next().unwrap();
        let refused: Vec<Capability> = first.refused.iter().map(|x| x.capability).collect();
        assert_eq!(refused, [Read]);
        // An exact rule with a constraint can only be removed.
        let e = parse(
            "e",
            r#"path "secret/data/ask/core-service/dev/A" { capabilities = ["create", "update", "read"] control_group = { factor "f" { controlled_capabilities = ["read"] } } }"#,
        )
        .unwrap();
        let r = check(&[e], reqs[..1].to_vec());
        assert_eq!(r.unfixable.len(), 1);
        assert!(
            r.unfixable[0].reason.contains("`control_group`"),
            "{:?}",
            r.unfixable
        );
    }

    #[test]
    fn the_attackers_probe_is_denied_with_the_reason() {
        // `deny` on everything under `secret/`, plus a one-line rule hcl-rs could not read.
        let p = parse(
            "eso-ask-push",
            r#"path "secret/*" { capabilities = ["deny"] }
path "auth/token/lookup-self" { capabilities = ["read"] required_parameters = ["x"] }"#,
        )
        .unwrap();
        let r = check(&[p], runbook_reqs());
        assert!(!r.ok);
        assert!(r.paths().all(|g| g.granted.is_empty()
            && g.decided_by
                .as_ref()
                .is_some_and(|d| d.denied && &*d.pattern == "secret/*")));
        let text = render(&r, &["eso-ask-push".into()], &Style::plain(), false);
        assert!(
            text.contains("denied by the `deny` on `secret/*` in `eso-ask-push`"),
            "{text}"
        );
    }

    #[test]
    fn templated_rules_that_could_match_make_it_undecidable() {
        let reqs = runbook_reqs();
        let far = parse(
            "far",
            r#"path "identity/entity/id/{{identity.entity.id}}" { capabilities = ["read"] }"#,
        )
        .unwrap();
        let reqs = Requirements::from(reqs);
        assert_eq!(undecidable(std::slice::from_ref(&far), &reqs), None);
        let near = parse(
            "near",
            r#"path "secret/+/ask/{{identity.entity.name}}/*" { capabilities = ["deny"] }"#,
        )
        .unwrap();
        assert_eq!(
            undecidable(&[far, near], &reqs),
            Some(("near", "secret/+/ask/{{identity.entity.name}}/*"))
        );
    }

    /// A report whose paths are all granted holds no check: each is made when it is read, from
    /// the compact requirements and the ACL (at 100,000 paths the held checks and the
    /// requirements they were made from were 66 MB of `verify`'s policy part). What is read is
    /// the check itself, and checks decided by one rule share its pattern and policy names with
    /// the ACL.
    #[test]
    fn a_granted_report_holds_no_check_and_makes_each_when_read() {
        let reqs = runbook_reqs();
        let p = parse("eso-ask-push", &minimal_policy(&reqs)).unwrap();
        let acl = Acl::new(std::slice::from_ref(&p));
        let r = check(&[p], reqs.clone());
        assert!(r.ok);
        assert!(
            matches!(&r.paths, Paths::Evaluated { gaps, .. } if gaps.is_empty()),
            "{:?}",
            r.paths
        );
        let made: Vec<PathCheck> = r.paths().map(Cow::into_owned).collect();
        let want: Vec<PathCheck> = reqs
            .iter()
            .map(|q| {
                let (g, refused, missing) = gap(&acl, &q.path, &q.capabilities, &q.params);
                PathCheck {
                    path: q.path.clone(),
                    uses: q.uses.clone(),
                    required: q.capabilities,
                    granted: g.capabilities,
                    missing,
                    refused,
                    decided_by: g.decided_by,
                    fix: None,
                }
            })
            .collect();
        assert_eq!(made, want);
        let d: Vec<&Decision> = made
            .iter()
            .map(|c| c.decided_by.as_ref().unwrap())
            .collect();
        // A and B under the data rule, then A and B under the metadata rule.
        for (x, y) in [(d[0], d[1]), (d[2], d[3])] {
            assert_eq!(x.pattern, y.pattern);
            assert!(Arc::ptr_eq(&x.pattern, &y.pattern), "{}", x.pattern);
            assert!(Arc::ptr_eq(&x.policies, &y.policies), "{}", x.pattern);
        }
    }

    /// A report with gaps holds only the gaps' checks (with their fixes); the others are made
    /// when read, and the JSON lists every path in order, gaps in their places.
    #[test]
    fn a_report_with_gaps_holds_them_and_lists_every_path_in_order() {
        let reqs = runbook_reqs();
        // The data rule only: the metadata paths have gaps.
        let p = parse(
            "p",
            r#"path "secret/data/ask/core-service/*" { capabilities = ["create", "update", "read"] }"#,
        )
        .unwrap();
        let r = check(&[p], reqs.clone());
        assert!(!r.ok);
        let Paths::Evaluated { gaps, .. } = &r.paths else {
            panic!("{:?}", r.paths)
        };
        let held: Vec<usize> = gaps.iter().map(|(i, _)| *i).collect();
        assert_eq!(held, [2, 3], "the metadata paths");
        let made: Vec<Cow<'_, PathCheck>> = r.paths().collect();
        let paths: Vec<&str> = made.iter().map(|c| c.path.as_str()).collect();
        let want: Vec<&str> = reqs.iter().map(|q| q.path.as_str()).collect();
        assert_eq!(paths, want);
        assert!(made[..2]
            .iter()
            .all(|c| c.missing.is_empty() && c.fix.is_none()));
        assert!(made[2..].iter().all(|c| matches!(c, Cow::Borrowed(_))
            && c.fix.as_deref() == Some("secret/metadata/ask/core-service/*")));
        let gaps: Vec<&str> = r.gaps().map(|c| c.path.as_str()).collect();
        assert_eq!(gaps, &want[2..]);
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "ok": false,
                "paths": made,
                "add": r.add,
                "unfixable": r.unfixable,
            })
        );
    }

    /// Suggesting rules is linear in the paths: a few ACLs built whatever the number of paths,
    /// and each path decided a few times. (The pruning built an ACL and decided every path once
    /// per suggested rule: `verify` with no ESO policy at 50,000 paths ran over 12 CPU-minutes.)
    #[test]
    fn suggesting_rules_builds_a_few_acls_and_decides_each_path_a_few_times() {
        use crate::acl::eval::probes::{BUILDS, DECISIONS};
        let reqs = |folders: usize| -> Vec<Requirement> {
            (0..folders)
                .flat_map(|i| {
                    let d = format!("secret/data/ask/app-{i:05}/*");
                    let m = format!("secret/metadata/ask/app-{i:05}/*");
                    [
                        req(
                            &format!("secret/data/ask/app-{i:05}/dev/A"),
                            &[Create, Read],
                            &d,
                        ),
                        req(
                            &format!("secret/data/ask/app-{i:05}/dev/B"),
                            &[Create, Read],
                            &d,
                        ),
                        req(
                            &format!("secret/metadata/ask/app-{i:05}/dev/A"),
                            &[List],
                            &m,
                        ),
                    ]
                })
                .collect()
        };
        // No policy at all; and one whose more specific rule decides the data paths.
        let policies = [
            Vec::new(),
            vec![parse(
                "p",
                r#"path "secret/data/ask/+/dev/*" { capabilities = ["read"] }"#,
            )
            .unwrap()],
        ];
        for policies in &policies {
            let mut per_path = Vec::new();
            for folders in [10, 100, 1000] {
                let r = reqs(folders);
                let paths = r.len();
                BUILDS.with(|c| c.set(0));
                DECISIONS.with(|c| c.set(0));
                let report = check(policies, r);
                assert!(!report.ok && !report.add.is_empty());
                let (builds, decisions) = (BUILDS.with(|c| c.get()), DECISIONS.with(|c| c.get()));
                assert!(builds <= 8, "{builds} ACLs built for {paths} paths");
                assert!(
                    decisions <= 20 * paths,
                    "{decisions} decisions for {paths} paths"
                );
                per_path.push(decisions / paths);
            }
            // The same work per path at 30 paths and at 3,000.
            assert!(per_path.windows(2).all(|w| w[0] == w[1]), "{per_path:?}");
        }
    }
}
