//! Vault ACL policies: parse them, evaluate them with Vault's exact matching rules, and check
//! them against what External Secrets Operator needs for an environment's secrets.
//!
//! - [`parse`] reads a policy in HCL or JSON into [`Policy`] rules, with OpenBao's own grammar
//!   (HCL 1 and its JSON form, ported in `hcl1`) and every key OpenBao accepts in a rule.
//! - [`Acl`] merges several policies as Vault does and answers, for a path, which capabilities
//!   they grant ([`evaluate`] for one-off questions).
//! - [`requirements`] says what ESO needs on which path, from the spec's `eso.access`.
//! - [`check`] compares the two and proposes the HCL to add, one rule per folder;
//!   [`minimal_policy`] prints the smallest policy that satisfies a spec.
//! - [`seeder_rules`] is the smallest policy vault-seed itself needs on an environment.
//!
//! No Vault client code lives here: reading policies from a server is the caller's business.

mod check;
mod eval;
mod hcl1;
mod parse;
mod required;
mod seeder;

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;

pub use check::{
    check, minimal_policy, minimal_rules, render_hcl, undecidable, write_hcl, Fix, GapGroup,
    PathCheck, PolicyReport, Unfixable,
};
pub use eval::{evaluate, Acl, Decision, Grant, MatchKind, Refusal};
pub use parse::{parse, PolicyError};
pub use required::{
    eso_rules, provided_read, requirements, vso_requirements, Param, Requirement, Use,
};
pub use seeder::{seeder_notes, seeder_rules};

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

/// A set of capabilities, in HCL order.
pub type Capabilities = BTreeSet<Capability>;

/// One `path "<pattern>" { capabilities = [...] }` rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The path pattern as written, without a leading `/` (Vault strips it): an exact path,
    /// a prefix ending in `*`, or a pattern with `+` segments.
    #[serde(rename = "path")]
    pub pattern: String,
    /// The capabilities it grants; only `deny` when it denies (Vault drops the others).
    pub capabilities: Capabilities,
    /// What OpenBao checks on each request besides the capabilities.
    #[serde(skip)]
    pub constraints: Constraints,
    /// The pattern holds identity templating (`{{identity.entity.id}}`): what it matches depends
    /// on the token's entity.
    #[serde(skip)]
    pub templated: bool,
}

impl Rule {
    /// A rule granting `capabilities` on `pattern`, with no constraints.
    pub fn new(pattern: impl Into<String>, capabilities: Capabilities) -> Rule {
        Rule {
            pattern: pattern.into(),
            capabilities,
            constraints: Constraints::default(),
            templated: false,
        }
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

/// `a`, `b` as "`a`, `b`".
pub(crate) fn backticked<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
