//! Vault ACL policies: parse them, evaluate them with Vault's exact matching rules, and check
//! them against what External Secrets Operator needs for an environment's secrets.
//!
//! - [`parse`] reads a policy in HCL or JSON into [`Policy`] rules, with OpenBao's own grammar
//!   (HCL 1 and its JSON form, ported in `hcl1`) and every key OpenBao accepts in a rule.
//! - [`Acl`] merges several policies as Vault does and answers, for a path, which capabilities
//!   they grant ([`evaluate`] for one-off questions).
//! - [`requirements`] says what ESO needs on which path, from the spec's `eso.access`;
//!   [`Requirements`] holds them merged by path, each folder and name once, for [`check`].
//! - [`check`] compares the two and proposes the HCL to add, one rule per folder;
//!   [`minimal_policy`] prints the smallest policy that satisfies a spec.
//! - [`merge`] adds what an existing policy lacks below its text, never narrowing it.
//! - [`seeder_rules`] is the smallest policy vault-seed itself needs on an environment.
//!
//! No Vault client code lives here: reading policies from a server is the caller's business.

mod check;
mod eval;
mod hcl1;
mod merge;
mod needs;
mod parse;
mod required;
mod seeder;

use std::fmt;

use serde::Serialize;

pub use check::{
    check, minimal_policy, minimal_rules, render_hcl, undecidable, write_hcl, Fix, GapGroup,
    PathCheck, PolicyReport, Unfixable,
};
pub use eval::{evaluate, Acl, Decision, Grant, MatchKind, Refusal};
pub use merge::{merge, merged_text, Merge, MergeError, TakeOver};
pub use needs::Requirements;
pub use parse::{parse, PolicyError};
pub use required::{
    eso_requirements, eso_rules, eso_scope_notes, provided_read, requirements, vso_requirements,
    vso_scope_notes, Param, Requirement, ScopeNotes, Use,
};
pub use seeder::{seeder_notes, seeder_rules, seeder_rules_and_notes};

/// A capability a Vault policy rule can grant (or `deny`).
///
/// The order of the variants is the order in which vault-seed writes them in HCL, chosen to read
/// like the runbook's grant (`["create", "update", "read"]`, `["read", "list"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    /// Write a path that does not exist yet.
    Create,
    /// Write a path that exists.
    Update,
    /// Partially update a path that exists (JSON merge patch).
    Patch,
    /// Read a path.
    Read,
    /// Delete a path.
    Delete,
    /// List the keys under a path.
    List,
    /// Scan a path recursively (OpenBao).
    Scan,
    /// Subscribe to events (Vault).
    Subscribe,
    /// Recover from a snapshot (Vault).
    Recover,
    /// Root-protected endpoints.
    Sudo,
    /// Deny everything; wins over any other capability of the same pattern.
    Deny,
}

impl Capability {
    /// Every capability, in HCL order.
    pub const ALL: [Capability; 11] = [
        Capability::Create,
        Capability::Update,
        Capability::Patch,
        Capability::Read,
        Capability::Delete,
        Capability::List,
        Capability::Scan,
        Capability::Subscribe,
        Capability::Recover,
        Capability::Sudo,
        Capability::Deny,
    ];

    /// The name Vault uses (`read`).
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Create => "create",
            Capability::Update => "update",
            Capability::Patch => "patch",
            Capability::Read => "read",
            Capability::Delete => "delete",
            Capability::List => "list",
            Capability::Scan => "scan",
            Capability::Subscribe => "subscribe",
            Capability::Recover => "recover",
            Capability::Sudo => "sudo",
            Capability::Deny => "deny",
        }
    }

    /// The capability Vault names so (exact, lowercase, as Vault compares them).
    pub fn from_name(name: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of capabilities, in HCL order: one bit each, so that the few sets every checked path
/// holds (required, granted, missing) cost nothing on the heap. Its methods are `BTreeSet`'s.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Capabilities(u16);

/// [`Capability::ALL`] with a `'static` place, for iterators of references as `BTreeSet`'s.
static ALL: [Capability; 11] = Capability::ALL;

impl Capabilities {
    /// The empty set.
    pub const fn new() -> Capabilities {
        Capabilities(0)
    }

    fn bit(c: Capability) -> u16 {
        1 << (c as u16)
    }

    /// Add `c`; whether it was not there.
    pub fn insert(&mut self, c: Capability) -> bool {
        let new = !self.contains(&c);
        self.0 |= Self::bit(c);
        new
    }

    /// Whether `c` is in the set.
    pub fn contains(&self, c: &Capability) -> bool {
        self.0 & Self::bit(*c) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// How many capabilities it holds.
    pub fn len(&self) -> usize {
        self.0.count_ones() as usize
    }

    /// Its capabilities in HCL order.
    pub fn iter(&self) -> impl Iterator<Item = &'static Capability> + Clone + use<> {
        let bits = self.0;
        ALL.iter().filter(move |c| bits & Self::bit(**c) != 0)
    }

    /// Those of `self` not in `other`, in HCL order.
    pub fn difference(&self, other: &Capabilities) -> impl Iterator<Item = &'static Capability> {
        Capabilities(self.0 & !other.0).iter()
    }

    /// Those in both, in HCL order.
    pub fn intersection(&self, other: &Capabilities) -> impl Iterator<Item = &'static Capability> {
        Capabilities(self.0 & other.0).iter()
    }

    /// Whether every capability of `other` is in `self`.
    pub fn is_superset(&self, other: &Capabilities) -> bool {
        other.0 & !self.0 == 0
    }

    /// Move every capability of `other` into `self`.
    pub fn append(&mut self, other: &mut Capabilities) {
        self.0 |= other.0;
        other.0 = 0;
    }
}

impl fmt::Debug for Capabilities {
    /// As a `BTreeSet`'s: `{Create, Read}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for Capabilities {
    /// As a `BTreeSet`'s: a list of names in HCL order.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl Extend<Capability> for Capabilities {
    fn extend<I: IntoIterator<Item = Capability>>(&mut self, iter: I) {
        for c in iter {
            self.insert(c);
        }
    }
}

impl<'a> Extend<&'a Capability> for Capabilities {
    fn extend<I: IntoIterator<Item = &'a Capability>>(&mut self, iter: I) {
        self.extend(iter.into_iter().copied());
    }
}

impl FromIterator<Capability> for Capabilities {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        let mut set = Capabilities::new();
        set.extend(iter);
        set
    }
}

impl<const N: usize> From<[Capability; N]> for Capabilities {
    fn from(caps: [Capability; N]) -> Self {
        caps.into_iter().collect()
    }
}

impl IntoIterator for Capabilities {
    type Item = Capability;
    type IntoIter = std::iter::Copied<std::vec::IntoIter<&'static Capability>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter().collect::<Vec<_>>().into_iter().copied()
    }
}

impl IntoIterator for &Capabilities {
    type Item = &'static Capability;
    type IntoIter = std::vec::IntoIter<&'static Capability>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter().collect::<Vec<_>>().into_iter()
    }
}

/// One `path "<pattern>" { capabilities = [...] }` rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The path pattern as written, without a leading `/` (Vault strips it): an exact path,
    /// a prefix ending in `*`, or a pattern with `+` segments.
    #[serde(rename = "path")]
    pub pattern: String,
    /// The capabilities it grants; only `deny` when it denies (Vault drops the others).
    pub capabilities: Capabilities,
    /// What OpenBao checks on each request besides the capabilities; `None` when there is
    /// nothing to check (nearly every rule, so it is boxed; see [`Rule::constraints`]). In JSON,
    /// when there is some, its HCL lines ([`Constraints::hcl_lines`]).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "constraints_as_hcl"
    )]
    pub constraints: Option<Box<Constraints>>,
    /// The pattern holds identity templating (`{{identity.entity.id}}`): what it matches depends
    /// on the token's entity.
    #[serde(skip)]
    pub templated: bool,
}

/// A rule's constraints in JSON: the lines of HCL that set them.
fn constraints_as_hcl<S: serde::Serializer>(
    c: &Option<Box<Constraints>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(Constraints::or_none(c).hcl_lines())
}

impl Rule {
    /// A rule granting `capabilities` on `pattern`, with no constraints.
    pub fn new(pattern: impl Into<String>, capabilities: Capabilities) -> Rule {
        Rule {
            pattern: pattern.into(),
            capabilities,
            constraints: None,
            templated: false,
        }
    }

    /// What OpenBao checks on each request besides the capabilities (nothing when none are set).
    pub fn constraints(&self) -> &Constraints {
        Constraints::or_none(&self.constraints)
    }
}

/// The parts of a rule that restrict requests without changing its capabilities (OpenBao's
/// `ACLPermissions`, `vault/policy/policy.go`). `sys/capabilities` ignores all of them; a request
/// is refused by them although the capability is granted (`vault/policy/acl.go`
/// `AllowOperation`, `request_handling.go` `needsApproval`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Constraints {
    /// `min_wrapping_ttl`, in nanoseconds; above zero, only response-wrapped requests pass.
    pub min_wrapping_ttl: i64,
    /// `max_wrapping_ttl`, in nanoseconds; above zero, only response-wrapped requests pass.
    pub max_wrapping_ttl: i64,
    /// `allowed_parameters`, names lowercased; empty when unset.
    pub allowed_parameters: std::collections::BTreeMap<String, Vec<ParamValue>>,
    /// `denied_parameters`, names lowercased; empty when unset.
    pub denied_parameters: std::collections::BTreeMap<String, Vec<ParamValue>>,
    /// `required_parameters`, as written.
    pub required_parameters: Vec<String>,
    /// `pagination_limit`.
    pub pagination_limit: i64,
    /// `control_group`: the capabilities each factor controls (all when it names none).
    pub control_group: Option<Vec<Vec<String>>>,
    /// `list_scan_response_keys_filter_path`: list answers are filtered (nothing is refused).
    pub list_filter: Option<String>,
    /// `mfa_methods`, as written (OpenBao hands them on with the ACL's answer, and enforces
    /// none of them itself).
    pub mfa_methods: Vec<String>,
}

impl Constraints {
    /// No constraint at all, for the rules that have none.
    pub const NONE: Constraints = Constraints {
        min_wrapping_ttl: 0,
        max_wrapping_ttl: 0,
        allowed_parameters: std::collections::BTreeMap::new(),
        denied_parameters: std::collections::BTreeMap::new(),
        required_parameters: Vec::new(),
        pagination_limit: 0,
        control_group: None,
        list_filter: None,
        mfa_methods: Vec::new(),
    };

    /// These constraints as a rule holds them: boxed, or `None` when there is none.
    pub fn boxed(self) -> Option<Box<Constraints>> {
        (self != Constraints::NONE).then(|| Box::new(self))
    }

    /// The constraints `held` (as [`Constraints::boxed`] made them) stand for.
    pub fn or_none(held: &Option<Box<Constraints>>) -> &Constraints {
        static NONE: Constraints = Constraints::NONE;
        held.as_deref().unwrap_or(&NONE)
    }

    /// The lines of a `path` block that set these constraints, as OpenBao reads them back
    /// (`vault/policy/policy.go` `parsePaths`): names as held (lowercased by the parser where
    /// OpenBao lowercases them), strings quoted as JSON (whose escapes HCL 1 reads), wrapping
    /// TTLs in seconds. A control group and a parameter value that is not a string are not
    /// written (`acl::merge` refuses to carry them).
    pub fn hcl_lines(&self) -> Vec<String> {
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let list = |items: &mut dyn Iterator<Item = String>| {
            format!("[{}]", items.collect::<Vec<_>>().join(", "))
        };
        let params = |m: &std::collections::BTreeMap<String, Vec<ParamValue>>| {
            let entries: Vec<String> = m
                .iter()
                .map(|(k, vs)| {
                    let values = vs.iter().filter_map(|v| match v {
                        ParamValue::Text(t) => Some(q(t)),
                        ParamValue::Other => None,
                    });
                    format!("{} = {}", q(k), list(&mut values.into_iter()))
                })
                .collect();
            format!("{{ {} }}", entries.join(", "))
        };
        let ttl = |ns: i64| {
            if ns % 1_000_000_000 == 0 {
                format!("\"{}s\"", ns / 1_000_000_000)
            } else {
                format!("\"{ns}ns\"")
            }
        };
        let mut out = Vec::new();
        if !self.required_parameters.is_empty() {
            out.push(format!(
                "required_parameters = {}",
                list(&mut self.required_parameters.iter().map(|p| q(p)))
            ));
        }
        if !self.allowed_parameters.is_empty() {
            out.push(format!(
                "allowed_parameters = {}",
                params(&self.allowed_parameters)
            ));
        }
        if !self.denied_parameters.is_empty() {
            out.push(format!(
                "denied_parameters = {}",
                params(&self.denied_parameters)
            ));
        }
        if self.min_wrapping_ttl != 0 {
            out.push(format!("min_wrapping_ttl = {}", ttl(self.min_wrapping_ttl)));
        }
        if self.max_wrapping_ttl != 0 {
            out.push(format!("max_wrapping_ttl = {}", ttl(self.max_wrapping_ttl)));
        }
        if self.pagination_limit != 0 {
            out.push(format!("pagination_limit = {}", self.pagination_limit));
        }
        if let Some(f) = &self.list_filter {
            out.push(format!("list_scan_response_keys_filter_path = {}", q(f)));
        }
        if !self.mfa_methods.is_empty() {
            out.push(format!(
                "mfa_methods = {}",
                list(&mut self.mfa_methods.iter().map(|m| q(m)))
            ));
        }
        out
    }
}

/// One value of an `allowed_parameters` / `denied_parameters` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamValue {
    /// A string, matched with `*` at either end as a glob.
    Text(String),
    /// A number, bool, list or object: matched only by an equal value.
    Other,
}

/// A parsed ACL policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Its name in Vault (`eso-ask-push`).
    pub name: String,
    /// Its rules in file order; the same pattern may occur more than once.
    pub rules: Vec<Rule>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// `Capabilities` answers as the `BTreeSet<Capability>` it replaced (same order, same JSON,
    /// same `Debug`, same set operations).
    #[test]
    fn capabilities_answer_as_a_btreeset() {
        let subset = |bits: u16| -> Vec<Capability> {
            Capability::ALL
                .into_iter()
                .enumerate()
                .filter(|(i, _)| bits & (1 << i) != 0)
                .map(|(_, c)| c)
                .collect()
        };
        let all: Vec<Vec<Capability>> = (0..1u16 << 11).map(subset).collect();
        for a in &all {
            // Built in reverse: the order of insertion does not matter.
            let set: Capabilities = a.iter().rev().copied().collect();
            let tree: BTreeSet<Capability> = a.iter().copied().collect();
            assert_eq!(
                set.iter().collect::<Vec<_>>(),
                tree.iter().collect::<Vec<_>>()
            );
            assert_eq!(
                serde_json::to_string(&set).unwrap(),
                serde_json::to_string(&tree).unwrap()
            );
            assert_eq!(format!("{set:?}"), format!("{tree:?}"));
            assert_eq!((set.len(), set.is_empty()), (tree.len(), tree.is_empty()));
            for b in all.iter().step_by(37) {
                let (other, other_tree): (Capabilities, BTreeSet<Capability>) =
                    (b.iter().copied().collect(), b.iter().copied().collect());
                assert_eq!(
                    set.difference(&other).collect::<Vec<_>>(),
                    tree.difference(&other_tree).collect::<Vec<_>>()
                );
                assert_eq!(
                    set.intersection(&other).collect::<Vec<_>>(),
                    tree.intersection(&other_tree).collect::<Vec<_>>()
                );
                assert_eq!(set.is_superset(&other), tree.is_superset(&other_tree));
                let (mut x, mut y) = (set, other);
                x.append(&mut y);
                let union: BTreeSet<Capability> = tree.union(&other_tree).copied().collect();
                assert_eq!(x.into_iter().collect::<Vec<_>>(), Vec::from_iter(union));
                assert!(y.is_empty());
            }
        }
    }
}
