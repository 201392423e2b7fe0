//! Reading ACL policies as OpenBao reads them: the syntax of `hcl1` (HCL 1, or its JSON form when
//! the text starts with `{`), then the rules of `vault/policy/policy.go` (`ParseACLPolicy`,
//! `parsePaths`) and HCL 1's decoder (`decoder.go`) for every key a `path` block may hold.

use std::collections::{BTreeMap, BTreeSet};

use super::hcl1::{self, Item, Kind, Node, Token};
use super::{Capabilities, Capability, Constraints, ParamValue, Policy, Rule};
use crate::base::backticks::backticked;

/// Why a policy could not be read. Each variant names the policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The text is neither valid HCL nor valid JSON, as OpenBao reads them.
    #[error("policy `{policy}` cannot be parsed as {format}: {message}")]
    Syntax {
        /// The policy's name.
        policy: String,
        /// `HCL` or `JSON`.
        format: &'static str,
        /// The parser's message, with its line.
        message: String,
    },
    /// A key OpenBao does not accept: at the top level (`path` and `name` only), or in a rule.
    #[error("policy `{policy}` has an unknown {} key `{key}`", match .path { Some(p) => format!("`path \"{p}\"`"), None => "top-level".to_string() })]
    UnknownKey {
        /// The policy's name.
        policy: String,
        /// The rule it is in, if any.
        path: Option<String>,
        /// The key.
        key: String,
    },
    /// `{ }` and `[ ]` nested deeper than vault-seed reads: no real policy comes close, and
    /// the parsers recurse once per level.
    #[error("policy `{policy}` nests deeper than {limit} levels at line {line}")]
    TooDeep {
        /// The policy's name.
        policy: String,
        /// How deep a policy may nest.
        limit: usize,
        /// The line of the first bracket too deep.
        line: usize,
    },
    /// A `path` rule that is not a block.
    #[error("policy `{policy}` has a malformed `path` rule: {what}")]
    MalformedPath {
        /// The policy's name.
        policy: String,
        /// What is wrong with it.
        what: String,
    },
    /// A value of the wrong type (`capabilities = "read"`).
    #[error("policy `{policy}`: `{key}` of path `{path}` must be {expected}")]
    WrongType {
        /// The policy's name.
        policy: String,
        /// The rule's path pattern.
        path: String,
        /// The key.
        key: String,
        /// What it must be.
        expected: &'static str,
    },
    /// Capabilities Vault does not know.
    #[error("policy `{policy}`: unknown capabilities {} on path `{path}`", backticked(.names))]
    UnknownCapability {
        /// The policy's name.
        policy: String,
        /// The rule's path pattern.
        path: String,
        /// The unknown names, as written.
        names: Vec<String>,
    },
    /// An old-style `policy = "..."` other than `deny`, `read`, `write`, `sudo`.
    #[error("policy `{policy}`: unknown `policy = \"{value}\"` on path `{path}`")]
    UnknownOldPolicy {
        /// The policy's name.
        policy: String,
        /// The rule's path pattern.
        path: String,
        /// The value.
        value: String,
    },
    /// `+*` in a path, which Vault forbids.
    #[error("policy `{policy}`: path `{path}` uses `+*`, which Vault forbids")]
    PlusStar {
        /// The policy's name.
        policy: String,
        /// The rule's path pattern.
        path: String,
    },
    /// A value OpenBao would refuse: a duration, a time, a template, a filter path.
    #[error("policy `{policy}`: path `{path}`: {message}")]
    Invalid {
        /// The policy's name.
        policy: String,
        /// The rule's path pattern.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl PolicyError {
    /// What the user can do about it, for the `help:` line.
    pub fn help(&self) -> Option<String> {
        Some(self.advice().to_string())
    }

    /// The advice, as written.
    fn advice(&self) -> &'static str {
        match self {
            PolicyError::Syntax { .. } | PolicyError::MalformedPath { .. } => {
                "a policy is `path \"<path>\" { capabilities = [\"read\"] }` blocks in HCL, or `{\"path\": {\"<path>\": {\"capabilities\": [\"read\"]}}}` in JSON; `bao policy fmt` shows where it is wrong"
            }
            PolicyError::TooDeep { .. } => {
                "a real policy nests a few levels (`path` blocks, `allowed_parameters`); read this one (`bao policy read <name>`), find who wrote it, and write it flat"
            }
            PolicyError::UnknownKey { path: None, .. } => {
                "a policy may only hold `path` rules (and a `name`)"
            }
            PolicyError::UnknownKey { .. } => {
                "a rule takes capabilities, policy, allowed_parameters, denied_parameters, required_parameters, min_wrapping_ttl, max_wrapping_ttl, mfa_methods, pagination_limit, expiration, list_scan_response_keys_filter_path, control_group and comment"
            }
            PolicyError::WrongType { .. } => {
                "write `capabilities = [\"read\", \"list\"]`, a list of quoted names"
            }
            PolicyError::UnknownCapability { .. } => {
                "capabilities are create, read, update, patch, delete, list, scan, sudo and deny (subscribe and recover on Vault)"
            }
            PolicyError::UnknownOldPolicy { .. } => {
                "old-style `policy` is one of deny, read, write, sudo; prefer `capabilities = [...]`"
            }
            PolicyError::PlusStar { .. } => {
                "use `+` for one whole segment or `*` at the end, not `+*`"
            }
            PolicyError::Invalid { .. } => "fix the rule; OpenBao refuses it as written",
        }
    }
}

/// The keys a `path` block may hold (`parsePaths`' `valid`).
const RULE_KEYS: [&str; 13] = [
    "comment",
    "policy",
    "capabilities",
    "allowed_parameters",
    "denied_parameters",
    "required_parameters",
    "min_wrapping_ttl",
    "max_wrapping_ttl",
    "mfa_methods",
    "pagination_limit",
    "expiration",
    "list_scan_response_keys_filter_path",
    "control_group",
];

/// Parse the text of the policy `name`, as OpenBao does: JSON when the text starts with `{`,
/// else HCL 1. Rules whose `expiration` has passed are left out, as OpenBao leaves them out.
/// Never panics, whatever the text.
pub fn parse(name: &str, text: &str) -> Result<Policy, PolicyError> {
    parse_at(name, text, time::OffsetDateTime::now_utc())
}

fn parse_at(name: &str, text: &str, now: time::OffsetDateTime) -> Result<Policy, PolicyError> {
    let json = text.trim_start().starts_with('{');
    let syntax = |e: hcl1::SyntaxError| match e.too_deep {
        true => PolicyError::TooDeep {
            policy: name.to_string(),
            limit: hcl1::MAX_DEPTH,
            line: e.line,
        },
        false => PolicyError::Syntax {
            policy: name.to_string(),
            format: if json { "JSON" } else { "HCL" },
            message: e.to_string(),
        },
    };
    let d = Decoder {
        policy: name.to_string(),
        path: String::new(),
    };
    let mut read = Reader {
        d: &d,
        now,
        top: None,
        names: Vec::new(),
        rules: Vec::new(),
        rule: None,
    };
    if json {
        // HCL's JSON reader flattens the whole tree before it gives any item.
        for item in hcl1::parse_json(text).map_err(syntax)? {
            read.item(item);
        }
    } else if !hcl1::parse_hcl_each(text, &mut |item| read.item(item)).map_err(syntax)? {
        return Ok(Policy {
            name: name.to_string(),
            rules: Vec::new(),
        });
    }
    read.finish()
}

/// The top-level items of a policy, judged as they are read, in the order OpenBao judges the
/// whole list: a syntax error anywhere first (the caller's), then the first item whose key is
/// neither `name` nor `path`, then the `name`s, then the first rule that cannot be read. Each
/// rule is decoded as soon as its item is read, and the item dropped.
struct Reader<'d> {
    d: &'d Decoder,
    now: time::OffsetDateTime,
    /// The first top-level key that is unreadable or unknown.
    top: Option<PolicyError>,
    /// The `name` items, checked at the end.
    names: Vec<Item>,
    rules: Vec<Rule>,
    /// The first rule that cannot be read; the rules after it are not decoded.
    rule: Option<PolicyError>,
}

impl Reader<'_> {
    fn item(&mut self, item: Item) {
        match self.d.key(&item.keys[0]) {
            Ok(key) if key == "name" => self.names.push(item),
            Ok(key) if key == "path" => {
                if self.top.is_some() || self.rule.is_some() {
                    return;
                }
                let pattern = match item.keys.get(1) {
                    Some(k) => self.d.key(k),
                    None => Ok("path".to_string()),
                };
                match pattern.and_then(|p| self.d.rule(p, &item.val, self.now)) {
                    Ok(Some(rule)) => self.rules.push(rule),
                    Ok(None) => {}
                    Err(e) => self.rule = Some(e),
                }
            }
            Ok(key) => {
                self.top.get_or_insert(PolicyError::UnknownKey {
                    policy: self.d.policy.clone(),
                    path: None,
                    key,
                });
            }
            Err(e) => {
                self.top.get_or_insert(e);
            }
        }
    }

    fn finish(self) -> Result<Policy, PolicyError> {
        if let Some(e) = self.top {
            return Err(e);
        }
        // `name` must be a string (it is then ignored: the policy's name is where it is stored).
        self.d.field(&self.names, "name", |d, node| {
            d.string(node, "name").map(drop)
        })?;
        if let Some(e) = self.rule {
            return Err(e);
        }
        let mut rules = self.rules;
        // At its length: a rule per `path` item was pushed, the vector grown by doubling.
        rules.shrink_to_fit();
        Ok(Policy {
            name: self.d.policy.clone(),
            rules,
        })
    }
}

/// A node as the decoder sees it: a value, or the items of an object (`ObjectList`).
enum Val<'a> {
    Node(&'a Node),
    Items(Vec<Item>),
}

/// A decoded `interface{}` (`decodeInterface`), for `min_wrapping_ttl` and friends.
enum Any {
    Bool,
    Int(i64),
    Float(f64),
    Str(String),
    Other,
}

/// The fields of one `path` block as written, before they are given meaning.
#[derive(Default)]
struct RuleFields {
    names: Vec<String>,
    old_policy: String,
    expiration: String,
    min_wrap: Option<Any>,
    max_wrap: Option<Any>,
    allowed: BTreeMap<String, Vec<ParamValue>>,
    denied: BTreeMap<String, Vec<ParamValue>>,
    required: Vec<String>,
    mfa: Vec<String>,
    pagination_limit: i64,
    list_filter: String,
    control_group: Option<Vec<Vec<String>>>,
}

struct Decoder {
    policy: String,
    /// The rule being decoded, for messages.
    path: String,
}

impl Decoder {
    fn key(&self, t: &Token) -> Result<String, PolicyError> {
        t.string_value().map_err(|e| self.syntax(e.to_string()))
    }

    fn syntax(&self, message: String) -> PolicyError {
        PolicyError::Syntax {
            policy: self.policy.clone(),
            format: "HCL",
            message,
        }
    }

    fn wrong(&self, key: &str, expected: &'static str) -> PolicyError {
        PolicyError::WrongType {
            policy: self.policy.clone(),
            path: self.path.clone(),
            key: key.to_string(),
            expected,
        }
    }

    fn invalid(&self, message: impl Into<String>) -> PolicyError {
        PolicyError::Invalid {
            policy: self.policy.clone(),
            path: self.path.clone(),
            message: message.into(),
        }
    }

    /// Every field of a `path` block, as written; `rule` gives them meaning.
    fn rule_fields(&self, body: &[Item]) -> Result<RuleFields, PolicyError> {
        let mut f = RuleFields {
            control_group: self.control_group(body)?,
            ..RuleFields::default()
        };
        self.field(body, "capabilities", |d, v| {
            d.strings(v, "capabilities", &mut f.names)
        })?;
        self.field(body, "policy", |d, v| {
            f.old_policy = d.string(v, "policy")?;
            Ok(())
        })?;
        self.field(body, "expiration", |d, v| {
            f.expiration = d.string(v, "expiration")?;
            Ok(())
        })?;
        self.field(body, "min_wrapping_ttl", |d, v| {
            f.min_wrap = Some(d.any(v, "min_wrapping_ttl")?);
            Ok(())
        })?;
        self.field(body, "max_wrapping_ttl", |d, v| {
            f.max_wrap = Some(d.any(v, "max_wrapping_ttl")?);
            Ok(())
        })?;
        self.field(body, "allowed_parameters", |d, v| {
            d.param_map(v, "allowed_parameters", &mut f.allowed)
        })?;
        self.field(body, "denied_parameters", |d, v| {
            d.param_map(v, "denied_parameters", &mut f.denied)
        })?;
        self.field(body, "required_parameters", |d, v| {
            d.strings(v, "required_parameters", &mut f.required)
        })?;
        self.field(body, "mfa_methods", |d, v| {
            d.strings(v, "mfa_methods", &mut f.mfa)
        })?;
        self.field(body, "pagination_limit", |d, v| {
            f.pagination_limit = d.int(v, "pagination_limit")?;
            Ok(())
        })?;
        self.field(body, "list_scan_response_keys_filter_path", |d, v| {
            f.list_filter = d.string(v, "list_scan_response_keys_filter_path")?;
            Ok(())
        })?;
        Ok(f)
    }

    /// `capabilities` with the old `policy` shorthand added. A `deny` ends the list: what
    /// follows it is not even checked, and the result is `deny` alone.
    fn capabilities(
        &self,
        pattern: &str,
        mut names: Vec<String>,
        old_policy: &str,
    ) -> Result<Capabilities, PolicyError> {
        match old_policy {
            "" => {}
            "deny" => names = vec!["deny".to_string()],
            "read" => names.extend(["read", "list"].map(String::from)),
            "write" => {
                names.extend(["create", "read", "update", "delete", "list"].map(String::from))
            }
            "sudo" => names
                .extend(["create", "read", "update", "delete", "list", "sudo"].map(String::from)),
            other => {
                return Err(PolicyError::UnknownOldPolicy {
                    policy: self.policy.clone(),
                    path: pattern.to_string(),
                    value: other.to_string(),
                })
            }
        }
        let mut capabilities = Capabilities::new();
        let mut unknown: Vec<String> = Vec::new();
        for n in &names {
            if n == "deny" {
                capabilities = Capabilities::from([Capability::Deny]);
                break;
            }
            // `subscribe` and `recover` are Vault's (OpenBao refuses a policy with them, so it
            // never stores one): read as Vault reads them.
            match Capability::from_name(n) {
                None if !unknown.contains(n) => unknown.push(n.clone()),
                None => {}
                Some(c) => {
                    capabilities.insert(c);
                }
            }
        }
        if !unknown.is_empty() {
            return Err(PolicyError::UnknownCapability {
                policy: self.policy.clone(),
                path: pattern.to_string(),
                names: unknown,
            });
        }
        Ok(capabilities)
    }

    /// The constraints of a rule that does not deny.
    fn constraints(
        &self,
        f: RuleFields,
        capabilities: &Capabilities,
    ) -> Result<Constraints, PolicyError> {
        let lower = |m: BTreeMap<String, Vec<ParamValue>>| {
            m.into_iter()
                .map(|(k, v)| (k.to_lowercase(), v))
                .collect::<BTreeMap<_, _>>()
        };
        let ttl = |v: Option<_>, what: &str| match v {
            Some(v) => {
                duration_second(v).ok_or_else(|| self.invalid(format!("error parsing {what}")))
            }
            None => Ok(0),
        };
        let min_wrapping_ttl = ttl(f.min_wrap, "min_wrapping_ttl")?;
        let max_wrapping_ttl = ttl(f.max_wrap, "max_wrapping_ttl")?;
        if min_wrapping_ttl != 0 && max_wrapping_ttl != 0 && max_wrapping_ttl < min_wrapping_ttl {
            return Err(self.invalid("max_wrapping_ttl cannot be less than min_wrapping_ttl"));
        }
        if !f.list_filter.is_empty() && !capabilities.contains(&Capability::List) {
            return Err(self.invalid(
                "list_scan_response_keys_filter_path needs to be used on a path with the list capability",
            ));
        }
        Ok(Constraints {
            min_wrapping_ttl,
            max_wrapping_ttl,
            allowed_parameters: lower(f.allowed),
            denied_parameters: lower(f.denied),
            required_parameters: f.required,
            pagination_limit: f.pagination_limit,
            control_group: f.control_group,
            list_filter: (!f.list_filter.is_empty()).then_some(f.list_filter),
            mfa_methods: f.mfa,
        })
    }

    /// Decode every item named `key` in `items` with `f`, as `decodeStruct` does for a field:
    /// first the items with more keys (as one object), then each plain one in order.
    fn field(
        &self,
        items: &[Item],
        key: &str,
        mut f: impl FnMut(&Decoder, Val<'_>) -> Result<(), PolicyError>,
    ) -> Result<(), PolicyError> {
        let mut nested = Vec::new();
        let mut plain = Vec::new();
        for item in items {
            if self.key(&item.keys[0])? != key {
                continue;
            }
            if item.keys.len() > 1 {
                nested.push(Item {
                    keys: item.keys[1..].to_vec(),
                    val: item.val.clone(),
                });
            } else {
                plain.push(&item.val);
            }
        }
        if !nested.is_empty() {
            f(self, Val::Items(nested))?;
        }
        for node in plain {
            // An object's value is decoded as its list of items.
            match node {
                Node::Object(items) => f(self, Val::Items(items.clone()))?,
                other => f(self, Val::Node(other))?,
            }
        }
        Ok(())
    }

    /// `decodeString`: a string, a heredoc, or a number's text.
    fn string(&self, v: Val<'_>, key: &str) -> Result<String, PolicyError> {
        match v {
            Val::Node(Node::Literal(t))
                if matches!(t.kind, Kind::String | Kind::Heredoc | Kind::Number) =>
            {
                t.string_value().map_err(|e| self.syntax(e.to_string()))
            }
            _ => Err(self.wrong(key, "a string")),
        }
    }

    /// `decodeSlice` into `[]string`, appended to `out` (a key given twice adds up).
    fn strings(&self, v: Val<'_>, key: &str, out: &mut Vec<String>) -> Result<(), PolicyError> {
        match v {
            Val::Node(Node::List(elems)) => {
                for e in elems {
                    out.push(self.string(Val::Node(e), key)?);
                }
                Ok(())
            }
            // `key {}`: no items, nothing added; items cannot be strings.
            Val::Items(items) if items.is_empty() => Ok(()),
            _ => Err(self.wrong(key, "a list of strings")),
        }
    }

    /// `decodeInt`: a number, or a string holding one (Go's `ParseInt(s, 0, 0)`).
    fn int(&self, v: Val<'_>, key: &str) -> Result<i64, PolicyError> {
        let text = match v {
            Val::Node(Node::Literal(t)) if t.kind == Kind::Number => t.text.clone(),
            Val::Node(Node::Literal(t)) if t.kind == Kind::String => {
                t.string_value().map_err(|e| self.syntax(e.to_string()))?
            }
            _ => return Err(self.wrong(key, "a number")),
        };
        go_parse_int(&text).ok_or_else(|| self.invalid(format!("`{key}` is not a number")))
    }

    /// `decodeInterface` of a scalar, as `interface{}` fields take it.
    fn any(&self, v: Val<'_>, key: &str) -> Result<Any, PolicyError> {
        Ok(match v {
            Val::Node(Node::Literal(t)) => match t.kind {
                Kind::Bool => Any::Bool,
                Kind::Float => Any::Float(t.text.parse().unwrap_or(0.0)),
                Kind::Number => Any::Int(self.int(Val::Node(&Node::Literal(t.clone())), key)?),
                _ => Any::Str(t.string_value().map_err(|e| self.syntax(e.to_string()))?),
            },
            _ => Any::Other,
        })
    }

    /// `decodeMap` into `map[string][]interface{}`, merged into `out` (values of a repeated name
    /// add up).
    fn param_map(
        &self,
        v: Val<'_>,
        key: &str,
        out: &mut BTreeMap<String, Vec<ParamValue>>,
    ) -> Result<(), PolicyError> {
        let items = match v {
            Val::Items(items) => items,
            _ => return Err(self.wrong(key, "an object")),
        };
        let mut done = BTreeSet::new();
        for item in &items {
            let name = self.key(&item.keys[0])?;
            if done.contains(&name) {
                continue;
            }
            if item.keys.len() > 1 {
                // Upstream decodes these into `[]interface{}` element by element and fails.
                done.insert(name);
                return Err(self.wrong(key, "an object of lists"));
            }
            let values = out.entry(name).or_default();
            match &item.val {
                Node::List(elems) => {
                    for e in elems {
                        values.push(match e {
                            Node::Literal(t) if matches!(t.kind, Kind::String | Kind::Heredoc) => {
                                ParamValue::Text(
                                    t.string_value().map_err(|e| self.syntax(e.to_string()))?,
                                )
                            }
                            _ => ParamValue::Other,
                        });
                    }
                }
                Node::Object(_) => values.push(ParamValue::Other),
                Node::Literal(_) => return Err(self.wrong(key, "an object of lists")),
            }
        }
        Ok(())
    }

    /// One `path` block (`parsePaths`); `None` when its `expiration` has passed.
    fn rule(
        &self,
        pattern: String,
        val: &Node,
        now: time::OffsetDateTime,
    ) -> Result<Option<Rule>, PolicyError> {
        let d = Decoder {
            policy: self.policy.clone(),
            path: pattern.clone(),
        };
        let templated = is_templated(&pattern).map_err(|m| d.invalid(m))?;
        let Node::Object(body) = val else {
            return Err(PolicyError::MalformedPath {
                policy: self.policy.clone(),
                what: format!("`path \"{pattern}\"` must be a block `{{ ... }}`"),
            });
        };
        for item in body {
            let key = d.key(&item.keys[0])?;
            if !RULE_KEYS.contains(&key.as_str()) {
                return Err(PolicyError::UnknownKey {
                    policy: self.policy.clone(),
                    path: Some(pattern),
                    key,
                });
            }
        }
        let mut fields = d.rule_fields(body)?;
        if !fields.expiration.is_empty() {
            let at = parse_absolute_time(&fields.expiration).ok_or_else(|| {
                d.invalid(format!("invalid expiration time `{}`", fields.expiration))
            })?;
            if now > at {
                return Ok(None);
            }
        }
        let pattern = pattern.strip_prefix('/').unwrap_or(&pattern).to_string();
        if pattern.contains("+*") {
            return Err(PolicyError::PlusStar {
                policy: self.policy.clone(),
                path: pattern,
            });
        }
        let names = std::mem::take(&mut fields.names);
        let capabilities = d.capabilities(&pattern, names, &fields.old_policy)?;
        // A `deny` ends the list: the rule keeps nothing else (no parameters, no wrapping TTLs).
        if capabilities.contains(&Capability::Deny) {
            return Ok(Some(Rule {
                pattern,
                capabilities,
                constraints: Constraints {
                    control_group: fields.control_group,
                    ..Constraints::default()
                }
                .boxed(),
                templated,
            }));
        }
        let constraints = d.constraints(fields, &capabilities)?;
        Ok(Some(Rule {
            pattern,
            capabilities,
            constraints: constraints.boxed(),
            templated,
        }))
    }

    /// `control_group { factor "name" { controlled_capabilities = [...] ... } }`: the controlled
    /// capabilities of each factor; the last `control_group` of a rule counts.
    fn control_group(&self, body: &[Item]) -> Result<Option<Vec<Vec<String>>>, PolicyError> {
        let mut group = None;
        for item in body {
            if self.key(&item.keys[0])? != "control_group" {
                continue;
            }
            let Node::Object(cg) = &item.val else {
                return Err(self.wrong("control_group", "a block"));
            };
            let mut factors = Vec::new();
            for f in cg {
                let key = self.key(&f.keys[0])?;
                if !["ttl", "self_auth_allowed", "factor"].contains(&key.as_str()) {
                    return Err(self.invalid(format!("unknown key `{key}` in `control_group`")));
                }
                if key != "factor" {
                    continue;
                }
                let Node::Object(fbody) = &f.val else {
                    return Err(self.wrong("factor", "a block"));
                };
                let mut caps = Vec::new();
                self.field(fbody, "controlled_capabilities", |d, v| {
                    d.strings(v, "controlled_capabilities", &mut caps)
                })?;
                factors.push(caps);
            }
            group = Some(factors);
        }
        Ok(group)
    }
}

/// `identitytpl.PopulateString` with `ValidityCheckOnly`: whether the path holds `{{...}}`
/// templates; unbalanced braces are an error.
fn is_templated(path: &str) -> Result<bool, String> {
    let parts: Vec<&str> = path.split("{{").collect();
    if parts[0].contains("}}") {
        return Err("unbalanced templating characters".into());
    }
    for part in &parts[1..] {
        if part.split("}}").count() != 2 {
            return Err("unbalanced templating characters".into());
        }
    }
    Ok(parts.len() > 1)
}

/// Go's `strconv.ParseInt(s, 0, 64)`: sign, `0x`/`0o`/`0b`/`0` prefixes, `_` after a prefix.
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.to_string(), true)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.to_string(), true)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.to_string(), true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string(), true)
    } else {
        (10, lower.clone(), false)
    };
    let digits = if prefixed {
        if digits.starts_with('_') && radix == 8 && !lower.starts_with("0o") {
            // `0_7` is allowed upstream; the `_` follows the prefix `0`.
            digits.replace('_', "")
        } else if digits.contains("__") || digits.ends_with('_') {
            return None;
        } else {
            digits.replace('_', "")
        }
    } else if digits.contains('_') {
        return None;
    } else {
        digits
    };
    if digits.is_empty() {
        return None;
    }
    let v = i128::from_str_radix(&digits, radix).ok()?;
    i64::try_from(if neg { -v } else { v }).ok()
}

/// `parseutil.ParseDurationSecond`, in nanoseconds: numbers are seconds; strings are seconds,
/// days (`7d`) or Go durations (`1h30m`).
fn duration_second(v: Any) -> Option<i64> {
    const SECOND: i64 = 1_000_000_000;
    match v {
        Any::Str(s) if s.is_empty() => Some(0),
        Any::Str(s) => {
            if let Ok(secs) = s.parse::<i64>() {
                return secs.checked_mul(SECOND);
            }
            if let Some(days) = s.strip_suffix('d') {
                return days.parse::<i64>().ok()?.checked_mul(86_400 * SECOND);
            }
            go_parse_duration(&s)
        }
        Any::Int(secs) => secs.checked_mul(SECOND),
        // `time.Duration(f)` truncates before it is multiplied.
        Any::Float(f) if f.is_finite() => (f.trunc() as i64).checked_mul(SECOND),
        Any::Float(_) | Any::Bool | Any::Other => None,
    }
}

/// Go's `time.ParseDuration`, in nanoseconds.
fn go_parse_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return None;
        }
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale: f64 = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += num.parse::<f64>().ok()? * scale;
    }
    if total > i64::MAX as f64 {
        return None;
    }
    let ns = total as i64;
    Some(if neg { -ns } else { ns })
}

/// `parseutil.ParseAbsoluteTime` of a string: RFC 3339 (with or without fraction), or seconds
/// since the Unix epoch.
fn parse_absolute_time(s: &str) -> Option<time::OffsetDateTime> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = time::OffsetDateTime::parse(s, &Rfc3339) {
        return Some(t);
    }
    time::OffsetDateTime::from_unix_timestamp(s.parse().ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use Capability::*;

    fn caps(c: &[Capability]) -> Capabilities {
        c.iter().copied().collect()
    }

    fn rule(pattern: &str, c: &[Capability]) -> Rule {
        Rule::new(pattern, caps(c))
    }

    #[test]
    fn runbook_policy_in_hcl() {
        let p = parse(
            "eso-ask-push",
            r#"
# the runbook's grant
path "secret/data/ask/core-service/*"     { capabilities = ["create", "update", "read"] }
path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"] }
"#,
        )
        .unwrap();
        assert_eq!(p.name, "eso-ask-push");
        assert_eq!(
            p.rules,
            vec![
                rule("secret/data/ask/core-service/*", &[Create, Update, Read]),
                rule("secret/metadata/ask/core-service/*", &[Read, List]),
            ]
        );
    }

    #[test]
    fn every_key_of_a_rule_is_read() {
        let p = parse(
            "p",
            r#"
path "/secret/data/x" {
  capabilities = ["create", "update"]
  allowed_parameters = { "Foo" = [], "bar" = ["a*", 1] }
  required_parameters = ["bar"]
  denied_parameters = { "baz" = ["a"] }
  min_wrapping_ttl = "1s"
  max_wrapping_ttl = 90
  pagination_limit = "0x10"
  mfa_methods = ["m"]
  comment = { anything = [1, {}] }
}
path "secret/data/x" { capabilities = ["read"] required_parameters = ["x"] max_wrapping_ttl = "0s" }
"#,
        )
        .unwrap();
        assert_eq!(p.rules.len(), 2);
        let r = &p.rules[0];
        assert_eq!(r.pattern, "secret/data/x", "leading `/` stripped");
        assert_eq!(r.capabilities, caps(&[Create, Update]));
        let c = r.constraints();
        assert_eq!(
            c.allowed_parameters,
            BTreeMap::from([
                ("foo".to_string(), vec![]),
                (
                    "bar".to_string(),
                    vec![ParamValue::Text("a*".into()), ParamValue::Other]
                ),
            ]),
            "names lowercased"
        );
        assert_eq!(c.required_parameters, ["bar"]);
        assert_eq!(c.min_wrapping_ttl, 1_000_000_000);
        assert_eq!(c.max_wrapping_ttl, 90_000_000_000);
        assert_eq!(c.pagination_limit, 16);
        assert_eq!(p.rules[1].constraints().max_wrapping_ttl, 0);
        assert_eq!(p.rules[1].constraints().required_parameters, ["x"]);
    }

    #[test]
    fn hcl1_forms_hcl2_rejects() {
        for text in [
            // One line, several attributes, trailing commas.
            r#"path "a" { capabilities = ["read"] required_parameters = ["x"], }"#,
            r#"path "b" { capabilities = ["list"] } path "a" { capabilities = ["read"] }"#,
            "path \"a\" {\n  capabilities = [\"read\"],\n  min_wrapping_ttl = \"1s\" max_wrapping_ttl = \"2s\"\n}",
            "path \"a\" {\n  capabilities = [\"read\"]\n  allowed_parameters {\n    \"x\" = []\n  }\n}",
        ] {
            let p = parse("p", text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(p.rules.iter().any(|r| r.pattern == "a"), "{text}");
        }
    }

    #[test]
    fn quirks_as_openbao_reads_them() {
        // Checked against OpenBao 2.7.2 (tests/suite/policy_eval.rs holds the differential test).
        let p = parse("p", r#"path { capabilities = ["read"] }"#).unwrap();
        assert_eq!(
            p.rules,
            [rule("path", &[Read])],
            "no label: the path `path`"
        );
        let p = parse("p", r#"path "a" "b" { capabilities = ["read"] }"#).unwrap();
        assert_eq!(p.rules, [rule("a", &[Read])], "the first label counts");
        let p = parse(
            "p",
            "path \"a\" { capabilities = [\"read\"]\ncapabilities = [\"list\"] }",
        )
        .unwrap();
        assert_eq!(
            p.rules[0].capabilities,
            caps(&[Read, List]),
            "repeated lists add up"
        );
        let p = parse("p", r#"path "a" { capabilities {} }"#).unwrap();
        assert!(p.rules[0].capabilities.is_empty());
        let p = parse("p", r#"path "a" { capabilities = ["deny", "bogus"] }"#).unwrap();
        assert_eq!(
            p.rules[0].capabilities,
            caps(&[Deny]),
            "nothing after `deny` is read"
        );
        assert!(parse("p", r#"path "a" { capabilities = ["bogus", "deny"] }"#).is_err());
        let p = parse(
            "p",
            r#"path "a" { capabilities = ["bogus"] expiration = "2020-01-01T00:00:00Z" }"#,
        )
        .unwrap();
        assert!(p.rules.is_empty(), "an expired rule is left out, unchecked");
        let p = parse(
            "p",
            r#"path "a" { capabilities = ["read"] expiration = 4102444800 }"#,
        )
        .unwrap();
        assert_eq!(p.rules.len(), 1, "expires in 2100");
        let p = parse(
            "p",
            r#"path "a/{{identity.entity.id}}/*" { capabilities = ["read"] }"#,
        )
        .unwrap();
        assert!(p.rules[0].templated);
        assert!(parse("p", r#"path "a/}}" { capabilities = ["read"] }"#).is_err());
        let p = parse(
            "p",
            r#"path "a" { capabilities = ["read"] control_group = { factor "f" { controlled_capabilities = ["read"] identity { group_names = ["g"] approvals = 1 } } } }"#,
        )
        .unwrap();
        assert_eq!(
            p.rules[0].constraints().control_group,
            Some(vec![vec!["read".to_string()]])
        );
        for bad in [
            r#"path "a" { capabilities = "read" }"#,
            r#"path "a" { capabilities = [1] }"#,
            r#"path "a" { capabilities = ["read"] min_wrapping_ttl = "10s" max_wrapping_ttl = "5s" }"#,
            r#"path "a" { capabilities = ["read"] list_scan_response_keys_filter_path = "{{ .key }}" }"#,
            r#"path "a" { capabilities = ["read"] unknown = 1 }"#,
            r#"PATH "a" { capabilities = ["read"] }"#,
            r#"name = ["x"]"#,
            r#"path "a" = { capabilities = ["read"] }"#,
            r#"path = "a""#,
        ] {
            assert!(parse("p", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_form_object_and_list() {
        let p = parse(
            "j",
            r#"{"path": {"a/*": {"capabilities": ["read", "deny"]}, "b": {"capabilities": ["list"], "min_wrapping_ttl": "1s"}}}"#,
        )
        .unwrap();
        assert_eq!(p.rules[0], rule("a/*", &[Deny]));
        assert_eq!(p.rules[1].pattern, "b");
        assert_eq!(p.rules[1].capabilities, caps(&[List]));
        let p = parse("j", r#"{"path": [{"c": {"capabilities": ["sudo"]}}]}"#).unwrap();
        assert_eq!(p.rules[0].capabilities, caps(&[Sudo]));
        // Both rules of a repeated key count, as upstream keeps every item.
        let p = parse(
            "j",
            r#"{"path": {"a": {"capabilities": ["read"]}, "a": {"capabilities": ["list"]}}}"#,
        )
        .unwrap();
        assert_eq!(p.rules.len(), 2);
        // Unterminated: upstream reads what is there.
        let p = parse("j", r#"{"path": {"a": {"capabilities": ["read"]"#).unwrap();
        assert_eq!(p.rules, [rule("a", &[Read])]);
    }

    #[test]
    fn old_style_policy_maps_to_capabilities() {
        let p = parse("old", r#"path "a" { policy = "read" }"#).unwrap();
        assert_eq!(p.rules[0].capabilities, caps(&[Read, List]));
        let p = parse(
            "old",
            r#"path "a" { policy = "deny" capabilities = ["bogus"] }"#,
        )
        .unwrap();
        assert_eq!(p.rules[0].capabilities, caps(&[Deny]));
        let e = parse("old", r#"path "a" { policy = "admin" }"#).unwrap_err();
        assert!(matches!(e, PolicyError::UnknownOldPolicy { .. }), "{e}");
    }

    #[test]
    fn unknown_capabilities_are_named() {
        let e = parse(
            "p",
            r#"path "a" { capabilities = ["read", "raed", "write", "raed"] }"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "policy `p`: unknown capabilities `raed`, `write` on path `a`"
        );
    }

    #[test]
    fn errors_name_the_policy_and_keep_the_parser_message() {
        let e = parse("broken", "path \"a\" { capabilities = [\"read\" }").unwrap_err();
        let PolicyError::Syntax {
            policy,
            format,
            message,
        } = &e
        else {
            panic!("not a syntax error: {e:?}");
        };
        assert_eq!((policy.as_str(), *format), ("broken", "HCL"));
        assert!(message.starts_with("line 1: "), "{message}");
        assert!(e
            .to_string()
            .starts_with("policy `broken` cannot be parsed as HCL: "));
        assert!(!e.help().unwrap_or_default().is_empty());

        let e = parse("j", "{\"path\": [").unwrap_err();
        assert!(
            matches!(e, PolicyError::Syntax { format: "JSON", .. }),
            "{e}"
        );
        let e = parse("t", "pth \"a\" { capabilities = [] }").unwrap_err();
        assert_eq!(
            e.to_string(),
            "policy `t` has an unknown top-level key `pth`"
        );
        let e = parse("w", "path \"a\" { capabilities = \"read\" }").unwrap_err();
        assert!(matches!(e, PolicyError::WrongType { .. }), "{e}");
        let e = parse("s", "path \"a/+*\" { capabilities = [\"read\"] }").unwrap_err();
        assert!(matches!(e, PolicyError::PlusStar { .. }), "{e}");
    }

    /// Rules are decoded as their items are read, but the errors come in the order OpenBao's
    /// checks of the whole list give them: syntax, then the top-level keys, then `name`, then
    /// the first rule that cannot be read, wherever each is in the text.
    #[test]
    fn errors_come_in_openbaos_order_whatever_their_place() {
        let bad_rule = r#"path "a" { capabilities = "read" }"#;
        let bad_rule2 = r#"path "b" { capabilities = ["bogus"] }"#;
        let good = r#"path "c" { capabilities = ["read"] }"#;
        let kind = |text: &str| match parse("p", text) {
            Ok(_) => "ok",
            Err(PolicyError::Syntax { .. }) => "syntax",
            Err(PolicyError::UnknownKey { path: None, .. }) => "top",
            Err(PolicyError::WrongType { key, .. }) if key == "name" => "name",
            Err(PolicyError::WrongType { key, .. }) if key == "capabilities" => "rule",
            Err(PolicyError::UnknownCapability { .. }) => "rule2",
            Err(e) => panic!("{text}: {e:?}"),
        };
        for (text, want) in [
            (format!("{good}\n{bad_rule}\n{bad_rule2}"), "rule"),
            (format!("{bad_rule2}\n{bad_rule}"), "rule2"),
            (format!("{bad_rule}\nname = [\"x\"]"), "name"),
            (format!("{bad_rule}\nname = [\"x\"]\npth \"a\" {{}}"), "top"),
            (
                format!("{bad_rule}\npth \"a\" {{}}\npath \"x\" {{"),
                "syntax",
            ),
            (format!("{good}\nname = \"x\""), "ok"),
        ] {
            assert_eq!(kind(&text), want, "{text}");
        }
        // The first unknown or unreadable top-level key is the one named.
        let e = parse("p", "path \"a\" {}\npth \"a\" {}\nptah \"b\" {}").unwrap_err();
        assert!(e.to_string().ends_with("`pth`"), "{e}");
    }

    #[test]
    fn empty_policy_has_no_rules() {
        assert!(parse("e", "").unwrap().rules.is_empty());
        assert!(parse("e", "# nothing\n").unwrap().rules.is_empty());
        assert!(parse("e", "{}").unwrap().rules.is_empty());
    }

    #[test]
    fn go_numbers_and_durations() {
        assert_eq!(go_parse_int("0x10"), Some(16));
        assert_eq!(go_parse_int("010"), Some(8));
        assert_eq!(go_parse_int("-0b11"), Some(-3));
        assert_eq!(go_parse_int("1_000"), None);
        assert_eq!(go_parse_int("0x1_000"), Some(4096));
        assert_eq!(go_parse_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(go_parse_duration("-1.5s"), Some(-1_500_000_000));
        assert_eq!(go_parse_duration("0"), Some(0));
        assert_eq!(go_parse_duration("5"), None);
        assert_eq!(duration_second(Any::Str("90".into())), Some(90_000_000_000));
        assert_eq!(
            duration_second(Any::Str("2d".into())),
            Some(172_800_000_000_000)
        );
        assert_eq!(duration_second(Any::Float(0.5)), Some(0));
        assert_eq!(duration_second(Any::Bool), None);
    }

    /// The policies of 10,000 levels OpenBao stores (its `sys/policies/acl` accepts each: a
    /// `comment` block, nested values of `allowed_parameters`), and the same in JSON: refused
    /// with the policy's name, the limit and the line, on a test thread's 2 MiB stack.
    #[test]
    fn a_policy_nested_10000_deep_is_refused_naming_it_the_limit_and_the_line() {
        const N: usize = 10_000;
        let rule = "path \"secret/*\" {\n  capabilities = [\"read\"]\n";
        let deep = |open: &str, inner: &str, close: &str| {
            format!("{}{inner}{}", open.repeat(N), close.repeat(N))
        };
        for (what, text, line) in [
            // The rule's block is level 1 (line 1); level 65, the first refused, is on line 66
            // for the blocks (level 2 on line 3), 64 for the objects (levels 2-4 on line 3),
            // 65 for the lists (2-3 on line 3), 62 for the JSON (1-4 on line 1).
            (
                "blocks",
                format!("{rule}comment {} }}", deep("{ x\n", "{}", "}")),
                66,
            ),
            (
                "objects",
                format!(
                    "{rule}allowed_parameters = {{ k = [{}] }} }}",
                    deep("{ x =\n", "1", "}")
                ),
                64,
            ),
            (
                "lists",
                format!(
                    "{rule}allowed_parameters = {{ k = {} }} }}",
                    deep("[\n", "\"v\"", "]")
                ),
                65,
            ),
            (
                "JSON objects",
                format!(
                    "{{\"path\": {{\"secret/*\": {{\"allowed_parameters\": {}}}}}}}",
                    deep("{\"k\":\n", "1", "}")
                ),
                62,
            ),
        ] {
            let e = parse("eso-ask-push", &text).unwrap_err();
            assert_eq!(
                e,
                PolicyError::TooDeep {
                    policy: "eso-ask-push".into(),
                    limit: 64,
                    line,
                },
                "{what}"
            );
            assert_eq!(
                e.to_string(),
                format!("policy `eso-ask-push` nests deeper than 64 levels at line {line}")
            );
            assert!(
                e.help().unwrap_or_default().contains("bao policy read"),
                "{what}"
            );
        }
    }

    /// A policy nested exactly as deep as the limit is read as OpenBao reads it.
    #[test]
    fn a_policy_nested_to_the_limit_is_read() {
        // The rule's block, `allowed_parameters`, then 62 lists.
        let lists = |n: usize| format!("{}\"v\"{}", "[".repeat(n), "]".repeat(n));
        let text = |n: usize| {
            format!(
                "path \"secret/*\" {{ capabilities = [\"read\"] allowed_parameters = {{ k = {} }} }}",
                lists(n)
            )
        };
        let p = parse("eso-ask-push", &text(62)).unwrap();
        assert_eq!(p.rules[0].capabilities, caps(&[Read]));
        assert_eq!(
            p.rules[0].constraints().allowed_parameters["k"],
            [ParamValue::Other]
        );
        assert!(matches!(
            parse("eso-ask-push", &text(63)),
            Err(PolicyError::TooDeep { line: 1, .. })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            let _ = parse("fuzz", &text);
        }

        #[test]
        fn policy_like_text_never_panics(
            text in r#"(path|"|\{|\}|\[|\]|=|,|:|capabilities|required_parameters|allowed_parameters|min_wrapping_ttl|control_group|factor|read|deny|\*|\+|/|a|1|0x|\.|-| |\n|#|/\*|\*/|\$\{|\{\{|\}\}|<<EOF\n|<<-EOF\n|EOF\n|\\|true|null){0,40}"#
        ) {
            let _ = parse("fuzz", &text);
            let _ = parse("fuzz", &format!("{{{text}"));
        }
    }
}
