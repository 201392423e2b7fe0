//! Which capabilities a set of policies grants on a path, with Vault's exact rules.
//!
//! This follows `vault/acl.go` (OpenBao and Vault): `NewACL` merges the rules of every policy
//! per pattern, and `Capabilities` (what `sys/capabilities` answers) picks one winning pattern:
//!
//! 1. an exact pattern equal to the path (or to the path without its trailing `/`: the server
//!    evaluates capabilities as a `list` request) wins outright;
//! 2. otherwise, among the longest plain prefix (`secret/data/*`) and every matching `+`
//!    pattern, the highest priority wins: the first wildcard (`+` or `*`) later in the pattern,
//!    then not ending in `*`, then fewer `+` segments, then longer, then lexicographically
//!    greater. A path ending in `/` that no wildcard pattern matches is tried without it.
//!
//! The winner's merged capabilities are the answer; `deny` among them removes everything; no
//! winner means nothing is granted.
//!
//! `sys/capabilities` stops there. A real request is then checked against the winner's
//! constraints (`AllowOperation` past its `capCheckOnly` return, and `needsApproval` in
//! `request_handling.go`): [`Acl::refusals`] says which of ESO's requests they refuse although
//! the capability is granted.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Serialize;

use super::{Capabilities, Capability, Constraints, Param, ParamValue, Policy, Rule};

/// How the deciding pattern matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    /// A pattern without wildcards, equal to the path.
    Exact,
    /// A pattern ending in `*` (and without `+` segments): a prefix of the path.
    Prefix,
    /// A pattern with `+` segments (possibly ending in `*`).
    Segment,
}

/// The rule that decided a path's capabilities, merged over all policies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The pattern as written in the policies (`secret/data/ask/core-service/*`); shared with
    /// the ACL's entry (one string per rule, not one per path decided).
    pub pattern: Arc<str>,
    /// How it matched.
    pub kind: MatchKind,
    /// Its merged capabilities include `deny`.
    pub denied: bool,
    /// The policies with a rule for this pattern (the one that denies, when denied); shared
    /// with the ACL's entry.
    pub policies: Arc<[String]>,
}

/// What a set of policies grants on one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    /// The granted capabilities; empty when nothing matched or the winner denies. Never
    /// contains `deny`.
    pub capabilities: Capabilities,
    /// The rule that decided, if any matched.
    pub decided_by: Option<Decision>,
}

impl Grant {
    /// The answer `sys/capabilities` gives for this path: the capability names, or `["deny"]`
    /// when nothing is granted. Vault-only or OpenBao-only capabilities appear as granted.
    pub fn server_answer(&self) -> BTreeSet<String> {
        if self.capabilities.is_empty() {
            BTreeSet::from(["deny".to_string()])
        } else {
            self.capabilities
                .iter()
                .map(|c| c.as_str().to_string())
                .collect()
        }
    }
}

/// A capability granted on a path but refused for the request ESO makes, by a constraint of the
/// deciding rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The capability ESO's request needs.
    pub capability: Capability,
    /// The pattern of the deciding rule.
    pub pattern: String,
    /// The policies with a rule for that pattern.
    pub policies: Vec<String>,
    /// Why OpenBao refuses the request, naming the key of the rule.
    pub reason: String,
}

/// The rules of one pattern, merged across policies (opaque outside this module). 48 bytes:
/// the pattern and the policy names are shared (one string of names per distinct set of
/// policies, not one per pattern), the constraints are boxed and absent when there are none.
#[derive(Debug, Clone)]
pub(crate) struct Merged {
    /// The pattern as written; also the entry's key in its [`Table`].
    pattern: Arc<str>,
    policies: Arc<[String]>,
    constraints: Option<Box<Constraints>>,
    capabilities: Capabilities,
    /// Taken out ([`Acl::take_from`]): the entry stays in its place in the table, so that
    /// taking one out and putting it back moves nothing, but no lookup finds it.
    gone: bool,
}

impl Merged {
    fn constraints(&self) -> &Constraints {
        Constraints::or_none(&self.constraints)
    }
}

/// `NewACL`'s merge of a rule's constraints into those already held for its pattern (the
/// capabilities are merged by the caller; `deny` never reaches here).
fn merge(into: &mut Constraints, new: &Constraints) {
    // The smallest wrapping TTLs set win.
    let least = |old: i64, new: i64| {
        if new > 0 && (old == 0 || new < old) {
            new
        } else {
            old
        }
    };
    into.max_wrapping_ttl = least(into.max_wrapping_ttl, new.max_wrapping_ttl);
    into.min_wrapping_ttl = least(into.min_wrapping_ttl, new.min_wrapping_ttl);
    // Parameter lists are joined, and an empty list (any value) wins.
    let join = |into: &mut BTreeMap<String, Vec<ParamValue>>,
                new: &BTreeMap<String, Vec<ParamValue>>| {
        for (k, v) in new {
            match into.get_mut(k) {
                Some(old) if v.is_empty() || old.is_empty() => old.clear(),
                Some(old) => old.extend(v.iter().cloned()),
                None => {
                    into.insert(k.clone(), v.clone());
                }
            }
        }
    };
    join(&mut into.allowed_parameters, &new.allowed_parameters);
    join(&mut into.denied_parameters, &new.denied_parameters);
    for p in &new.required_parameters {
        if !into.required_parameters.contains(p) {
            into.required_parameters.push(p.clone());
        }
    }
    if new.pagination_limit > 0
        && (into.pagination_limit <= 0 || new.pagination_limit < into.pagination_limit)
    {
        into.pagination_limit = new.pagination_limit;
    }
    if into.list_filter.is_none() {
        into.list_filter = new.list_filter.clone();
    }
    for m in &new.mfa_methods {
        if !into.mfa_methods.contains(m) {
            into.mfa_methods.push(m.clone());
        }
    }
    // The control group of the first rule of a pattern stays (upstream copies it only when it
    // creates the entry).
}

/// Whether a parameter's value is in a policy's value list (`valueInParameterList`): `None`
/// when it depends on a value vault-seed does not know (a string ESO pushes).
fn value_in_list(param: &Param, list: &[ParamValue]) -> Option<bool> {
    if list.is_empty() {
        return Some(true);
    }
    if param.object {
        // An object equals no string, and vault-seed does not model object values in policies.
        return Some(false);
    }
    // `strutil.GlobbedStringsMatch`: `**` matches every string; any other string may match.
    let texts: Vec<&str> = list
        .iter()
        .filter_map(|v| match v {
            ParamValue::Text(t) => Some(t.as_str()),
            ParamValue::Other => None,
        })
        .collect();
    if texts.contains(&"**") {
        Some(true)
    } else if texts.is_empty() {
        Some(false)
    } else {
        None
    }
}

/// Why OpenBao refuses ESO's request needing `cap`, sending `params` (a write's top-level
/// parameters; reads and lists send none), under constraints `c`; `None` when it lets it through.
fn refusal(c: &Constraints, cap: Capability, params: &[Param]) -> Option<String> {
    request_refusal(c, cap, params).or_else(|| {
        let held = c.control_group.as_ref()?.iter().any(|controlled| {
            controlled.is_empty() || controlled.iter().any(|op| op == cap.as_str())
        });
        held.then(|| {
            format!("`control_group` holds ESO's `{cap}` request until someone approves it")
        })
    })
}

/// `AllowOperation`'s checks past the capabilities: wrapping TTLs, then parameters (reads and
/// writes) or the page limit (lists).
#[allow(clippy::too_many_lines)] // Vault's rule followed step by step as its source has it
fn request_refusal(c: &Constraints, cap: Capability, params: &[Param]) -> Option<String> {
    use Capability::*;
    if c.max_wrapping_ttl > 0 || c.min_wrapping_ttl > 0 {
        let key = if c.max_wrapping_ttl > 0 {
            "max_wrapping_ttl"
        } else {
            "min_wrapping_ttl"
        };
        return Some(format!(
            "`{key}` lets only response-wrapped requests through, and ESO's are not wrapped"
        ));
    }
    match cap {
        Read | Create | Update | Patch => {
            let data: &[Param] = if cap == Read { &[] } else { params };
            let what = if cap == Read { "read" } else { "write" };
            let missing: Vec<&String> = c
                .required_parameters
                .iter()
                .filter(|r| !data.iter().any(|p| p.name == r.to_lowercase()))
                .collect();
            if !missing.is_empty() {
                return Some(format!(
                    "`required_parameters` asks for {}, which ESO's {what} does not send",
                    crate::base::backticks::backticked(&missing)
                ));
            }
            if data.is_empty() {
                return None;
            }
            if c.denied_parameters.contains_key("*") {
                return Some("`denied_parameters` denies every parameter (`*`)".into());
            }
            for p in data {
                if let Some(list) = c.denied_parameters.get(&p.name.to_lowercase()) {
                    match value_in_list(p, list) {
                        Some(true) => {
                            return Some(format!("`denied_parameters` denies `{}`", p.name))
                        }
                        None => {
                            return Some(format!(
                                "`denied_parameters` denies some values of `{}`, and the value ESO pushes is not known here",
                                p.name
                            ))
                        }
                        Some(false) => {}
                    }
                }
            }
            let allowed = &c.allowed_parameters;
            let all = allowed.contains_key("*");
            if allowed.is_empty() || (allowed.len() == 1 && all) {
                return None;
            }
            for p in data {
                match allowed.get(&p.name.to_lowercase()) {
                    None if !all => {
                        return Some(format!("`allowed_parameters` does not allow `{}`", p.name))
                    }
                    None => {}
                    Some(list) => match value_in_list(p, list) {
                        Some(true) => {}
                        Some(false) => {
                            return Some(format!(
                                "`allowed_parameters` allows `{}` only with the values it lists",
                                p.name
                            ))
                        }
                        None => {
                            return Some(format!(
                                "`allowed_parameters` allows `{}` only with the values it lists, and the value ESO pushes is not known here",
                                p.name
                            ))
                        }
                    },
                }
            }
            None
        }
        List | Scan
            if c.pagination_limit > 0
                && c.required_parameters.iter().any(|r| r.eq_ignore_ascii_case("limit")) =>
        {
            Some("`pagination_limit` with `limit` in `required_parameters`: ESO's list sends no `limit`".into())
        }
        _ => None,
    }
}

/// The policies of a token, merged as Vault merges them, ready to answer questions.
#[derive(Debug, Clone)]
pub struct Acl {
    /// Patterns without wildcards.
    exact: Table,
    /// Patterns ending in `*` without `+` segments, keyed without the `*`.
    prefix: Table,
    /// Patterns with `+` segments, keyed as written.
    segment: Table,
}

impl Default for Acl {
    fn default() -> Acl {
        Acl {
            exact: Table::new(Kind::Exact),
            prefix: Table::new(Kind::Prefix),
            segment: Table::new(Kind::Segment),
        }
    }
}

/// Which of an [`Acl`]'s tables holds a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Exact,
    Prefix,
    Segment,
}

/// Where a pattern is filed, and its key there: patterns with `+` segments as written, ones
/// ending in `*` without it, the others as they are.
fn filed(pattern: &str) -> (Kind, &str) {
    if has_segment_wildcards(pattern) {
        (Kind::Segment, pattern)
    } else if let Some(prefix) = pattern.strip_suffix('*') {
        (Kind::Prefix, prefix)
    } else {
        (Kind::Exact, pattern)
    }
}

/// Vault's test for a segment-wildcard pattern: `/+` anywhere, so a segment that merely starts
/// with `+` (`a/+b`) counts too; it then matches literally but is still ranked as a `+`
/// pattern, by the position of its first `+`.
fn has_segment_wildcards(pattern: &str) -> bool {
    pattern == "+" || pattern.contains("/+") || pattern.starts_with("+/")
}

/// The entries of one kind of pattern, sorted by key, one per pattern, found by binary search.
/// The key is read from the entry's pattern (without its `*` in the prefix table), not held a
/// second time, as a `BTreeMap<String, Merged>` would hold it (its nodes half empty, every
/// pattern in it twice).
#[derive(Debug, Clone)]
struct Table {
    kind: Kind,
    entries: Vec<Merged>,
}

impl Table {
    fn new(kind: Kind) -> Table {
        Table {
            kind,
            entries: Vec::new(),
        }
    }

    /// The key of a pattern filed here.
    fn key<'a>(&self, pattern: &'a str) -> &'a str {
        match self.kind {
            Kind::Prefix => pattern.strip_suffix('*').unwrap_or(pattern),
            Kind::Exact | Kind::Segment => pattern,
        }
    }

    /// Where `key`'s entry is (`Ok`), or would go (`Err`).
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|m| self.key(&m.pattern).cmp(key))
    }

    /// The entry of `key`, unless there is none or it is taken out.
    fn get(&self, key: &str) -> Option<&Merged> {
        self.find(key)
            .ok()
            .map(|i| &self.entries[i])
            .filter(|m| !m.gone)
    }

    /// The entries, in key order (a `BTreeMap`'s), without those taken out.
    fn iter(&self) -> impl Iterator<Item = &Merged> {
        self.entries.iter().filter(|m| !m.gone)
    }

    /// Whether no entry is left.
    fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Set (or take out) `key`'s entry; the one it had.
    fn set(&mut self, key: &str, entry: Option<Merged>) -> Option<Merged> {
        match (self.find(key), entry) {
            (Ok(i), Some(m)) => {
                let old = std::mem::replace(&mut self.entries[i], m);
                (!old.gone).then_some(old)
            }
            (Ok(i), None) => {
                let m = &mut self.entries[i];
                let old = Merged {
                    pattern: Arc::clone(&m.pattern),
                    policies: Arc::clone(&m.policies),
                    constraints: m.constraints.take(),
                    capabilities: m.capabilities,
                    gone: false,
                };
                (!std::mem::replace(&mut m.gone, true)).then_some(old)
            }
            // A pattern the table never had (not the case of `check`'s suggestions, which are
            // in the ACL they are taken out of): inserted in its place.
            (Err(i), Some(m)) => {
                self.entries.insert(i, m);
                None
            }
            (Err(_), None) => None,
        }
    }
}

/// One `Arc` per distinct list of policy names: the patterns of a policy all share one.
#[derive(Default)]
struct Names<'a>(HashMap<Vec<&'a str>, Arc<[String]>>);

impl<'a> Names<'a> {
    fn get(&mut self, names: &[&'a str]) -> Arc<[String]> {
        if let Some(a) = self.0.get(names) {
            return Arc::clone(a);
        }
        let a: Arc<[String]> = names.iter().map(|n| n.to_string()).collect();
        self.0.insert(names.to_vec(), Arc::clone(&a));
        a
    }
}

impl Acl {
    /// Merge the rules of `policies`: the capabilities of one pattern are united across rules and
    /// policies, except that once a pattern has `deny`, `deny` is all it has.
    ///
    /// Templated rules are left out: what they match depends on the token's entity (see
    /// [`super::undecidable`]).
    pub fn new(policies: &[Policy]) -> Acl {
        probes::built();
        let mut acl = Acl::default();
        let mut names = Names::default();
        for table in [&mut acl.exact, &mut acl.prefix, &mut acl.segment] {
            // This table's rules with their policy, in policy then file order; sorted by key,
            // stably, so that each pattern's rules are merged in that order (as `NewACL` does).
            // Both lists at their length, counted first: grown by doubling, they would be up to
            // twice their size while the ACL is built.
            let of_table = || {
                policies
                    .iter()
                    .flat_map(|p| p.rules.iter().map(|r| (r, p.name.as_str())))
                    .filter(|(r, _)| !r.templated && filed(&r.pattern).0 == table.kind)
            };
            let mut rules: Vec<(&Rule, &str)> = Vec::with_capacity(of_table().count());
            rules.extend(of_table());
            rules.sort_by(|(a, _), (b, _)| table.key(&a.pattern).cmp(table.key(&b.pattern)));
            let same = |(a, _): &(&Rule, &str), (b, _): &(&Rule, &str)| a.pattern == b.pattern;
            let mut entries = Vec::with_capacity(rules.chunk_by(same).count());
            for group in rules.chunk_by(same) {
                entries.push(merged(group, &mut names));
            }
            table.entries = entries;
        }
        acl
    }

    /// The table that files `pattern`, and its key there ([`filed`]).
    fn slot(&mut self, pattern: &str) -> (&mut Table, String) {
        let (kind, key) = filed(pattern);
        let table = match kind {
            Kind::Exact => &mut self.exact,
            Kind::Prefix => &mut self.prefix,
            Kind::Segment => &mut self.segment,
        };
        (table, key.to_string())
    }

    /// `pattern`'s entry, if it has one.
    fn entry(&self, pattern: &str) -> Option<&Merged> {
        let (kind, key) = filed(pattern);
        match kind {
            Kind::Exact => &self.exact,
            Kind::Prefix => &self.prefix,
            Kind::Segment => &self.segment,
        }
        .get(key)
    }

    /// Make this ACL's entry for `pattern` what `other` has for it (none when `other` has none):
    /// this ACL as if one policy's rule of that pattern were gone, when `other` is the ACL of
    /// the other policies. Returns the entry it had, for [`Acl::restore`].
    pub(crate) fn take_from(&mut self, pattern: &str, other: &Acl) -> Option<Merged> {
        self.restore_returning(pattern, other.entry(pattern).cloned())
    }

    /// Put back the entry [`Acl::take_from`] returned.
    pub(crate) fn restore(&mut self, pattern: &str, entry: Option<Merged>) {
        self.restore_returning(pattern, entry);
    }

    /// Set (or remove) `pattern`'s entry; the one it had.
    fn restore_returning(&mut self, pattern: &str, entry: Option<Merged>) -> Option<Merged> {
        let (table, key) = self.slot(pattern);
        table.set(&key, entry)
    }

    /// What the policies grant on `path` (a full API path such as
    /// `secret/data/ask/core-service/auh1-dev/X`; leading `/` ignored), as `sys/capabilities`
    /// computes it.
    pub fn capabilities(&self, path: &str) -> Grant {
        let path = path.trim_start_matches('/');
        let decided = self.decide(path);
        match decided {
            None => Grant {
                capabilities: Capabilities::new(),
                decided_by: None,
            },
            Some((kind, merged)) => {
                let denied = merged.capabilities.contains(&Capability::Deny);
                Grant {
                    capabilities: if denied {
                        Capabilities::new()
                    } else {
                        merged.capabilities
                    },
                    decided_by: Some(Decision {
                        pattern: Arc::clone(&merged.pattern),
                        kind,
                        denied,
                        policies: Arc::clone(&merged.policies),
                    }),
                }
            }
        }
    }

    /// The capabilities of `required` that the policies grant on `path` but whose request, as
    /// ESO sends it, OpenBao refuses: a write sends `params` (the top-level keys of its body), a
    /// read or list nothing, and no request is response-wrapped.
    pub fn refusals(&self, path: &str, required: &Capabilities, params: &[Param]) -> Vec<Refusal> {
        let path = path.trim_start_matches('/');
        let Some((_, m)) = self.decide(path) else {
            return Vec::new();
        };
        if m.capabilities.contains(&Capability::Deny) {
            return Vec::new();
        }
        required
            .intersection(&m.capabilities)
            .filter_map(|&cap| {
                refusal(m.constraints(), cap, params).map(|reason| Refusal {
                    capability: cap,
                    pattern: m.pattern.to_string(),
                    policies: m.policies.to_vec(),
                    reason,
                })
            })
            .collect()
    }

    /// The constraints of the rule that decides `path` (merged across the blocks of its
    /// pattern, as OpenBao merges them); `None` when no rule matches.
    pub fn deciding_constraints(&self, path: &str) -> Option<&Constraints> {
        self.decide(path.trim_start_matches('/'))
            .map(|(_, m)| m.constraints())
    }

    fn decide(&self, path: &str) -> Option<(MatchKind, &Merged)> {
        probes::decided();
        if let Some(m) = self.exact.get(path) {
            return Some((MatchKind::Exact, m));
        }
        // `sys/capabilities` evaluates as a list request: `a/` also finds the exact rule `a`...
        let trimmed = path.strip_suffix('/');
        if let Some(m) = trimmed.and_then(|t| self.exact.get(t)) {
            return Some((MatchKind::Exact, m));
        }
        // ...and, only when no wildcard pattern matches `a/` itself, the wildcard patterns that
        // match `a` (OpenBao 2.7.2, checked against the server; newer sources try `a` first).
        self.non_exact(path)
            .or_else(|| trimmed.and_then(|t| self.non_exact(t)))
    }

    /// Vault's `CheckAllowedFromNonExactPaths`.
    fn non_exact(&self, path: &str) -> Option<(MatchKind, &Merged)> {
        struct Candidate<'a> {
            first_wildcard: usize,
            is_prefix: bool,
            wildcards: usize,
            wc_path: &'a str,
            kind: MatchKind,
            merged: &'a Merged,
        }
        let mut candidates = Vec::new();
        // Only the longest plain prefix competes (Vault: `prefixRules.LongestPrefix`, a radix
        // tree). One lookup per prefix of the path, longest first, so that the work grows with
        // the path's length and not with the number of rules: a scan of every rule made
        // `verify` quadratic (10,000 paths under a 3,334-rule policy: over 10 minutes).
        if let Some((prefix, merged)) = (0..=path.len())
            .rev()
            .filter(|&i| path.is_char_boundary(i))
            .find_map(|i| {
                probes::count();
                let m = self.prefix.get(&path[..i])?;
                Some((self.prefix.key(&m.pattern), m))
            })
        {
            if self.segment.is_empty() {
                return Some((MatchKind::Prefix, merged));
            }
            candidates.push(Candidate {
                first_wildcard: prefix.len(),
                is_prefix: true,
                wildcards: 0,
                wc_path: prefix,
                kind: MatchKind::Prefix,
                merged,
            });
        }
        let parts: Vec<&str> = path.split('/').collect();
        'patterns: for merged in self.segment.iter() {
            let full: &str = &merged.pattern;
            if full.is_empty() {
                continue;
            }
            let first_wildcard = full.find('+').unwrap_or(full.len());
            let (wc_path, is_prefix) = match full.strip_suffix('*') {
                Some(p) => (p, true),
                None => (full, false),
            };
            let acl_parts: Vec<&str> = wc_path.split('/').collect();
            if parts.len() < acl_parts.len() || (!is_prefix && acl_parts.len() != parts.len()) {
                continue;
            }
            let mut wildcards = 0;
            for (i, acl_part) in acl_parts.iter().enumerate() {
                if *acl_part == "+" {
                    wildcards += 1;
                } else if *acl_part == parts[i]
                    || (is_prefix && i == acl_parts.len() - 1 && parts[i].starts_with(acl_part))
                {
                } else {
                    continue 'patterns;
                }
            }
            candidates.push(Candidate {
                first_wildcard,
                is_prefix,
                wildcards,
                wc_path,
                kind: MatchKind::Segment,
                merged,
            });
        }
        candidates
            .into_iter()
            .max_by_key(|c| {
                (
                    c.first_wildcard,
                    !c.is_prefix,
                    Reverse(c.wildcards),
                    c.wc_path.len(),
                    c.wc_path,
                )
            })
            .map(|c| (c.kind, c.merged))
    }
}

/// The entry of one pattern from its rules (`group`, each with its policy's name, in policy
/// then file order), merged as `NewACL` merges them.
fn merged<'a>(group: &[(&Rule, &'a str)], names: &mut Names<'a>) -> Merged {
    let (first, name) = group[0];
    let mut capabilities = first.capabilities;
    let mut policies = vec![name];
    let mut constraints = first.constraints.clone();
    for &(rule, name) in &group[1..] {
        if capabilities.contains(&Capability::Deny) {
            continue;
        }
        if rule.capabilities.contains(&Capability::Deny) {
            capabilities = Capabilities::from([Capability::Deny]);
            policies = vec![name];
            if let Some(c) = &mut constraints {
                c.allowed_parameters.clear();
                c.denied_parameters.clear();
            }
            continue;
        }
        capabilities.extend(rule.capabilities.iter().copied());
        if !policies.contains(&name) {
            policies.push(name);
        }
        // Merging no constraints changes nothing.
        if let Some(new) = &rule.constraints {
            merge(constraints.get_or_insert_default(), new);
        }
    }
    Merged {
        pattern: first.pattern.as_str().into(),
        policies: names.get(&policies),
        constraints,
        capabilities,
        gone: false,
    }
}

/// What the union of `policies` grants on `path`. Build an [`Acl`] once to ask about many paths.
pub fn evaluate(policies: &[Policy], path: &str) -> Grant {
    Acl::new(policies).capabilities(path)
}

/// The ACL module's work, counted in tests (work, not time: the machines that run the tests are
/// shared): prefix rules a decision looked at, ACLs built ([`super::Acl::new`]), decisions made
/// (`Acl::decide`), and per-path requirement records made (`acl::required`). Outside tests each
/// count is nothing.
pub(crate) mod probes {
    #[cfg(test)]
    use std::cell::Cell;
    #[cfg(test)]
    thread_local!(pub static COUNT: Cell<usize> = const { Cell::new(0) });
    #[cfg(test)]
    thread_local!(pub static BUILDS: Cell<usize> = const { Cell::new(0) });
    #[cfg(test)]
    thread_local!(pub static DECISIONS: Cell<usize> = const { Cell::new(0) });
    #[cfg(test)]
    thread_local!(pub static RECORDS: Cell<usize> = const { Cell::new(0) });

    /// Add one to a counter (in tests).
    macro_rules! bump {
        ($counter:ident) => {
            #[cfg(test)]
            $counter.with(|c| c.set(c.get() + 1));
        };
    }

    #[inline]
    pub fn count() {
        bump!(COUNT);
    }

    #[inline]
    pub fn built() {
        bump!(BUILDS);
    }

    #[inline]
    pub fn decided() {
        bump!(DECISIONS);
    }

    #[inline]
    pub fn record() {
        bump!(RECORDS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::parse;

    #[test]
    fn the_longest_prefix_is_found_with_work_independent_of_the_number_of_rules() {
        let rules: String = (0..20_000)
            .map(|i| {
                format!("path \"secret/data/ask/app-{i:05}/*\" {{ capabilities = [\"read\"] }}\n")
            })
            .collect();
        let p = policy(
            "many",
            &format!("{rules}path \"secret/data/*\" {{ capabilities = [\"list\"] }}\n"),
        );
        let acl = Acl::new(std::slice::from_ref(&p));
        for (path, want, pattern) in [
            (
                "secret/data/ask/app-12345/X",
                Read,
                "secret/data/ask/app-12345/*",
            ),
            (
                "secret/data/ask/app-12345/a/b/X",
                Read,
                "secret/data/ask/app-12345/*",
            ),
            ("secret/data/ask/app-123456/X", List, "secret/data/*"),
            ("secret/data/other/X", List, "secret/data/*"),
        ] {
            probes::COUNT.with(|c| c.set(0));
            let g = acl.capabilities(path);
            assert_eq!(g.capabilities, caps(&[want]), "{path}");
            assert_eq!(&*g.decided_by.unwrap().pattern, pattern, "{path}");
            let looked_at = probes::COUNT.with(|c| c.get());
            assert!(
                looked_at <= path.len() + 1,
                "{path}: {looked_at} prefix rules looked at for a path of {} bytes",
                path.len()
            );
        }
    }
    use Capability::*;

    fn policy(name: &str, hcl: &str) -> Policy {
        parse(name, hcl).unwrap()
    }

    fn caps(c: &[Capability]) -> Capabilities {
        c.iter().copied().collect()
    }

    fn granted(policies: &[Policy], path: &str) -> Capabilities {
        evaluate(policies, path).capabilities
    }

    #[test]
    fn exact_beats_glob() {
        let p = policy(
            "p",
            r#"
path "secret/*"     { capabilities = ["create", "read", "update", "delete", "list"] }
path "secret/super" { capabilities = ["read"] }
path "secret/+"     { capabilities = ["list"] }
"#,
        );
        let g = evaluate(std::slice::from_ref(&p), "secret/super");
        assert_eq!(g.capabilities, caps(&[Read]));
        let d = g.decided_by.unwrap();
        assert_eq!((&*d.pattern, d.kind), ("secret/super", MatchKind::Exact));
        assert_eq!(
            granted(&[p], "secret/other/x"),
            caps(&[Create, Read, Update, Delete, List])
        );
    }

    #[test]
    fn documented_priority_examples() {
        // The examples of Vault's docs ("Priority matching") and of acl.go's comments.
        let cases: &[(&str, &str, &str)] = &[
            // first wildcard later wins
            ("secret/+/bar", "secret/foo/*", "secret/foo/bar"),
            ("foo/+", "foo/a*", "foo/ab"),
            ("foo/+/bar/baz", "foo/bar/+/baz", "foo/bar/bar/baz"),
            // same position: not ending in `*` wins
            ("secret/+/*", "secret/+/bar", "secret/foo/bar"),
            ("foo/*", "foo/+", "foo/x"),
            // more `+` loses
            ("foo/+/+/baz", "foo/+/bar/baz", "foo/a/bar/baz"),
            // shorter loses
            ("secret/+/b*", "secret/+/ba*", "secret/x/bar"),
            ("secret/*", "secret/foo/*", "secret/foo/bar"),
        ];
        for (loser, winner, path) in cases {
            let p = policy(
                "p",
                &format!(
                    "path \"{loser}\" {{ capabilities = [\"read\"] }}\npath \"{winner}\" {{ capabilities = [\"list\"] }}"
                ),
            );
            let g = evaluate(&[p], path);
            assert_eq!(
                g.capabilities,
                caps(&[List]),
                "{winner} over {loser} on {path}"
            );
            assert_eq!(&*g.decided_by.unwrap().pattern, *winner);
        }
    }

    #[test]
    fn lexicographic_tie_break_prefers_greater() {
        // Same first `+`, neither a prefix, two `+` each, same length: `a` > `+`.
        let p = policy(
            "p",
            r#"
path "x/+/a/+" { capabilities = ["read"] }
path "x/+/+/a" { capabilities = ["list"] }
"#,
        );
        assert_eq!(granted(&[p], "x/k/a/a"), caps(&[Read]));
    }

    #[test]
    fn deny_wins_in_the_merge() {
        let a = policy(
            "a",
            r#"path "secret/data/x/*" { capabilities = ["read", "list"] }"#,
        );
        let b = policy("b", r#"path "secret/data/x/*" { capabilities = ["deny"] }"#);
        let g = evaluate(&[a.clone(), b.clone()], "secret/data/x/y");
        assert!(g.capabilities.is_empty());
        let d = g.decided_by.unwrap();
        assert!(d.denied);
        assert_eq!(d.policies.to_vec(), vec!["b".to_string()]);
        assert_eq!(
            g_answer(&[b.clone(), a.clone()], "secret/data/x/y"),
            ["deny"]
        );
        // A more specific pattern is not affected by a deny on a less specific one.
        let c = policy("c", r#"path "secret/data/x/y" { capabilities = ["read"] }"#);
        assert_eq!(granted(&[a, b, c], "secret/data/x/y"), caps(&[Read]));
    }

    fn g_answer(p: &[Policy], path: &str) -> Vec<String> {
        evaluate(p, path).server_answer().into_iter().collect()
    }

    #[test]
    fn union_across_policies_of_the_same_pattern() {
        let a = policy(
            "a",
            r#"path "secret/data/app/*" { capabilities = ["read"] }"#,
        );
        let b = policy(
            "b",
            r#"path "secret/data/app/*" { capabilities = ["create", "update"] }"#,
        );
        let g = evaluate(&[a, b], "secret/data/app/k");
        assert_eq!(g.capabilities, caps(&[Create, Update, Read]));
        assert_eq!(g.decided_by.unwrap().policies.to_vec(), vec!["a", "b"]);
    }

    #[test]
    fn the_winner_alone_decides_no_union_across_patterns() {
        let a = policy("a", r#"path "secret/*" { capabilities = ["list"] }"#);
        let b = policy("b", r#"path "secret/data/*" { capabilities = ["read"] }"#);
        assert_eq!(granted(&[a, b], "secret/data/k"), caps(&[Read]));
    }

    #[test]
    fn no_match_is_nothing() {
        let a = policy(
            "a",
            r#"path "secret/data/app/*" { capabilities = ["read"] }"#,
        );
        let g = evaluate(&[a], "secret/metadata/app/k");
        assert!(g.capabilities.is_empty());
        assert!(g.decided_by.is_none());
        assert_eq!(g.server_answer(), BTreeSet::from(["deny".to_string()]));
        assert!(granted(&[], "anything").is_empty());
    }

    #[test]
    fn plus_is_one_whole_segment() {
        let a = policy("a", r#"path "secret/+/x" { capabilities = ["read"] }"#);
        assert_eq!(
            granted(std::slice::from_ref(&a), "secret/k/x"),
            caps(&[Read])
        );
        assert!(granted(std::slice::from_ref(&a), "secret/k/j/x").is_empty());
        assert!(granted(std::slice::from_ref(&a), "secret/k/x/y").is_empty());
        assert!(granted(&[a], "secret/k").is_empty());
    }

    #[test]
    fn trailing_slash_is_evaluated_as_a_list_request() {
        let a = policy(
            "a",
            r#"path "secret/metadata/app" { capabilities = ["list"] }"#,
        );
        assert_eq!(granted(&[a], "secret/metadata/app/"), caps(&[List]));
        let b = policy(
            "b",
            r#"
path "s/a*" { capabilities = ["read"] }
path "s/a/*" { capabilities = ["list"] }
"#,
        );
        // `s/a/*` matches `s/a/` itself and wins over `s/a*`.
        assert_eq!(granted(&[b], "s/a/"), caps(&[List]));
        // `s/+` does not match `s/a/` (three segments), so `s/a` is tried and matches.
        let c = policy("c", r#"path "s/+" { capabilities = ["read"] }"#);
        assert_eq!(granted(std::slice::from_ref(&c), "s/a/"), caps(&[Read]));
        // But any wildcard match of `s/a/`, even one granting nothing, stops there.
        let d = policy("d", r#"path "s*" { capabilities = [] }"#);
        assert!(granted(&[c, d], "s/a/").is_empty());
    }

    /// A policy of many rules (33,334 at 100,000 paths) is read and merged for `verify`; what
    /// its rules repeat is shared.
    #[test]
    fn an_acl_shares_what_its_rules_repeat() {
        let rules: String = (0..100)
            .map(|i| {
                format!(
                    "path \"secret/data/ask/app-{i}/*\" {{ capabilities = [\"read\"] }}\npath \"secret/metadata/ask/app-{i}\" {{ capabilities = [\"list\"] }}\n"
                )
            })
            .collect();
        let p = policy("eso-ask-push", &rules);
        assert!(p.rules.iter().all(|r| r.constraints.is_none()));
        assert_eq!(p.rules.capacity(), p.rules.len());
        let acl = Acl::new(std::slice::from_ref(&p));
        assert_eq!(
            (acl.exact.entries.len(), acl.prefix.entries.len()),
            (100, 100)
        );
        assert_eq!(acl.prefix.entries.capacity(), 100);
        // One list of policy names for every pattern of the policy.
        let a = acl
            .capabilities("secret/data/ask/app-7/X")
            .decided_by
            .unwrap();
        let b = acl
            .capabilities("secret/metadata/ask/app-93")
            .decided_by
            .unwrap();
        assert_eq!((a.kind, b.kind), (MatchKind::Prefix, MatchKind::Exact));
        assert!(Arc::ptr_eq(&a.policies, &b.policies));
        assert_eq!(a.policies.to_vec(), ["eso-ask-push"]);
        // A rule with a constraint keeps it, boxed.
        let c = policy(
            "c",
            r#"path "a" { capabilities = ["read"] required_parameters = ["x"] }"#,
        );
        assert_eq!(c.rules[0].constraints().required_parameters, ["x"]);
        assert!(c.rules[0].constraints.is_some());
    }

    /// The paths the table tests ask about: every kind of match, a longer prefix whose entry is
    /// taken out, a segment rule, nothing.
    const PROBES: &[&str] = &[
        "secret/data/a/x",
        "secret/data/a/b/x",
        "secret/data/a/b",
        "secret/data/a/b/",
        "secret/data/ab",
        "secret/data/c/d/e",
        "secret/data/c/d",
        "secret/metadata/a",
        "secret/metadata/a/",
        "other/x",
        "secret/data/z/k/v",
        "secret/data/z/k",
    ];

    fn decisions(acl: &Acl) -> Vec<(String, Grant)> {
        PROBES
            .iter()
            .map(|p| (p.to_string(), acl.capabilities(p)))
            .collect()
    }

    /// Taking a pattern's entry out of an ACL (for the policies without one rule) and putting it
    /// back decides every path as an ACL built from those policies does, whether the pattern is
    /// exact, a prefix or has `+` segments, whether the other policies have it or not.
    #[test]
    fn taking_an_entry_out_and_back_decides_as_a_fresh_acl() {
        let base = policy(
            "base",
            r#"
path "secret/data/*"       { capabilities = ["list"] }
path "secret/data/a/b"     { capabilities = ["update"] }
path "secret/data/+/d/*"   { capabilities = ["delete"] }
path "secret/metadata/a"   { capabilities = ["read"] required_parameters = ["x"] }
"#,
        );
        let added: &[(&str, &[Capability])] = &[
            ("secret/data/a/*", &[Read]),
            ("secret/data/a/b/*", &[Create]),
            ("secret/data/a/b", &[Read]),
            ("secret/data/+/d/*", &[Read]),
            ("secret/data/z/+", &[Patch]),
            ("secret/metadata/a", &[List]),
            ("secret/data/*", &[Read]),
        ];
        let with = |skip: Option<usize>| Policy {
            name: "(suggested)".into(),
            rules: added
                .iter()
                .enumerate()
                .filter(|(i, _)| Some(*i) != skip)
                .map(|(_, (p, c))| Rule::new(*p, caps(c)))
                .collect(),
        };
        let base_acl = Acl::new(std::slice::from_ref(&base));
        let mut acl = Acl::new(&[base.clone(), with(None)]);
        let all = decisions(&acl);
        for (i, (pattern, _)) in added.iter().enumerate() {
            let had = acl.take_from(pattern, &base_acl);
            assert!(had.is_some(), "{pattern}");
            let fresh = Acl::new(&[base.clone(), with(Some(i))]);
            assert_eq!(decisions(&acl), decisions(&fresh), "without {pattern}");
            // Taken out twice: still out, and nothing to give back.
            let again = acl.take_from(pattern, &Acl::default());
            assert_eq!(again.is_some(), base_acl.entry(pattern).is_some());
            acl.restore(pattern, again);
            assert_eq!(
                decisions(&acl),
                decisions(&fresh),
                "without {pattern}, twice"
            );
            acl.restore(pattern, had);
            assert_eq!(decisions(&acl), all, "{pattern} put back");
        }
        // A pattern the ACL never had goes in its place and out again.
        let extra = Acl::new(&[policy(
            "x",
            r#"path "secret/data/a/b/x" { capabilities = ["sudo"] }"#,
        )]);
        let had = acl.take_from("secret/data/a/b/x", &extra);
        assert!(had.is_none());
        assert_eq!(
            acl.capabilities("secret/data/a/b/x").capabilities,
            caps(&[Sudo])
        );
        acl.restore("secret/data/a/b/x", had);
        assert_eq!(decisions(&acl), all);
    }

    /// The rules of one pattern merge in policy then file order wherever they are in the
    /// policies: `deny` once seen is all there is, names are listed once in order, the first
    /// rule's control group stays.
    #[test]
    fn rules_of_one_pattern_merge_in_order_across_policies() {
        let a = policy(
            "a",
            r#"
path "k/*" { capabilities = ["read"] }
path "z" { capabilities = ["read"] }
path "k/*" { capabilities = ["list"] min_wrapping_ttl = "10s" }
path "m" { capabilities = ["read"] control_group = { factor "f" { controlled_capabilities = ["read"] } } }
"#,
        );
        let b = policy(
            "b",
            r#"
path "m" { capabilities = ["update"] control_group = { factor "g" { controlled_capabilities = ["update"] } } }
path "k/*" { capabilities = ["create"] min_wrapping_ttl = "5s" }
path "z" { capabilities = ["deny"] }
"#,
        );
        let c = policy("c", r#"path "z" { capabilities = ["read"] }"#);
        let acl = Acl::new(&[a, b, c]);
        let k = acl.prefix.get("k/").unwrap();
        assert_eq!(k.capabilities, caps(&[Create, Read, List]));
        assert_eq!(k.policies.to_vec(), ["a", "b"]);
        assert_eq!(k.constraints().min_wrapping_ttl, 5_000_000_000);
        let z = acl.capabilities("z").decided_by.unwrap();
        assert!(z.denied);
        assert_eq!(z.policies.to_vec(), ["b"]);
        let m = acl.exact.get("m").unwrap();
        assert_eq!(
            m.constraints().control_group,
            Some(vec![vec!["read".to_string()]])
        );
        assert_eq!(m.capabilities, caps(&[Update, Read]));
    }
}
