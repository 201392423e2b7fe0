//! Reading ACL policies written in HCL (with hcl-rs) or JSON, as Vault accepts them.

use std::collections::BTreeSet;

use hcl::{BlockLabel, Expression};
use serde_json::Value;

use super::{backticked, Capability, Policy, Rule};

/// Why a policy could not be read. Each variant names the policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The text is neither valid HCL nor valid JSON.
    #[error("policy `{policy}` cannot be parsed as {format}: {message}")]
    Syntax {
        /// The policy's name.
        policy: String,
        /// `HCL` or `JSON`.
        format: &'static str,
        /// The parser's own message, with its line and column.
        message: String,
    },
    /// A top-level key other than `path` and `name`, which Vault rejects too.
    #[error("policy `{policy}` has an unknown top-level key `{key}`")]
    UnknownKey {
        /// The policy's name.
        policy: String,
        /// The key.
        key: String,
    },
    /// A `path` block without exactly one label, or a JSON `path` that is not an object.
    #[error("policy `{policy}` has a malformed `path` rule: {what}")]
    MalformedPath {
        /// The policy's name.
        policy: String,
        /// What is wrong with it.
        what: String,
    },
    /// `capabilities` is not a list of strings, or `policy` is not a string.
    #[error("policy `{policy}`: `{key}` of path `{path}` must be {expected}")]
    WrongType {
        /// The policy's name.
        policy: String,
        /// The rule's path pattern.
        path: String,
        /// `capabilities` or `policy`.
        key: &'static str,
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
}

impl PolicyError {
    /// What the user can do about it, for the `help:` line.
    pub fn help(&self) -> &'static str {
        match self {
            PolicyError::Syntax { format: "HCL", .. } => {
                "vault-seed reads HCL 2, Vault's HCL 1 also takes commas after attributes and several attributes or blocks on one line: write one attribute per line, or ask the server with `sys/capabilities`"
            }
            PolicyError::Syntax { .. } | PolicyError::MalformedPath { .. } => {
                "a policy is `path \"<path>\" { capabilities = [\"read\"] }` blocks in HCL, or `{\"path\": {\"<path>\": {\"capabilities\": [\"read\"]}}}` in JSON"
            }
            PolicyError::UnknownKey { .. } => "a policy may only hold `path` rules (and a `name`)",
            PolicyError::WrongType { .. } => {
                "write `capabilities = [\"read\", \"list\"]`, a list of quoted names"
            }
            PolicyError::UnknownCapability { .. } => {
                "capabilities are create, read, update, patch, delete, list, sudo, deny (and scan on OpenBao, subscribe and recover on Vault)"
            }
            PolicyError::UnknownOldPolicy { .. } => {
                "old-style `policy` is one of deny, read, write, sudo; prefer `capabilities = [...]`"
            }
            PolicyError::PlusStar { .. } => {
                "use `+` for one whole segment or `*` at the end, not `+*`"
            }
        }
    }
}

/// Parse the text of the policy `name`, in HCL or JSON (chosen as Vault does: JSON when the
/// text starts with `{`).
///
/// Other keys inside a path block (`allowed_parameters`, `required_parameters`,
/// `min_wrapping_ttl`...) are accepted and ignored: they do not change capabilities. Never
/// panics, whatever the text.
pub fn parse(name: &str, text: &str) -> Result<Policy, PolicyError> {
    let rules = if text.trim_start().starts_with('{') {
        parse_json(name, text)?
    } else {
        parse_hcl(name, text)?
    };
    Ok(Policy {
        name: name.to_string(),
        rules,
    })
}

/// One path block's content, whichever syntax it came from.
struct RawRule {
    path: String,
    capabilities: Vec<String>,
    old_policy: Option<String>,
}

fn parse_hcl(name: &str, text: &str) -> Result<Vec<Rule>, PolicyError> {
    let body = hcl::parse(text).map_err(|e| PolicyError::Syntax {
        policy: name.to_string(),
        format: "HCL",
        message: e.to_string(),
    })?;
    let mut rules = Vec::new();
    for attr in body.attributes() {
        if attr.key.as_str() != "name" {
            return Err(PolicyError::UnknownKey {
                policy: name.to_string(),
                key: attr.key.to_string(),
            });
        }
    }
    for block in body.blocks() {
        if block.identifier() != "path" {
            return Err(PolicyError::UnknownKey {
                policy: name.to_string(),
                key: block.identifier().to_string(),
            });
        }
        let [label] = block.labels() else {
            return Err(PolicyError::MalformedPath {
                policy: name.to_string(),
                what: format!(
                    "a `path` block needs exactly one label, the path; this one has {}",
                    block.labels().len()
                ),
            });
        };
        let path = match label {
            BlockLabel::String(s) => s.clone(),
            BlockLabel::Identifier(i) => i.to_string(),
        };
        let mut raw = RawRule {
            path,
            capabilities: Vec::new(),
            old_policy: None,
        };
        for attr in block.body().attributes() {
            match attr.key.as_str() {
                "capabilities" => {
                    raw.capabilities = hcl_strings(&attr.expr).ok_or(PolicyError::WrongType {
                        policy: name.to_string(),
                        path: raw.path.clone(),
                        key: "capabilities",
                        expected: "a list of strings",
                    })?
                }
                "policy" => match &attr.expr {
                    Expression::String(s) => raw.old_policy = Some(s.clone()),
                    _ => {
                        return Err(PolicyError::WrongType {
                            policy: name.to_string(),
                            path: raw.path,
                            key: "policy",
                            expected: "a string",
                        })
                    }
                },
                // allowed_parameters, min_wrapping_ttl, ...: no effect on capabilities.
                _ => {}
            }
        }
        rules.push(to_rule(name, raw)?);
    }
    Ok(rules)
}

fn hcl_strings(expr: &Expression) -> Option<Vec<String>> {
    match expr {
        Expression::Array(items) => items
            .iter()
            .map(|i| match i {
                Expression::String(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn parse_json(name: &str, text: &str) -> Result<Vec<Rule>, PolicyError> {
    let value: Value = serde_json::from_str(text).map_err(|e| PolicyError::Syntax {
        policy: name.to_string(),
        format: "JSON",
        message: e.to_string(),
    })?;
    let Value::Object(top) = value else {
        return Err(PolicyError::MalformedPath {
            policy: name.to_string(),
            what: "the JSON document must be an object with a `path` key".to_string(),
        });
    };
    let mut rules = Vec::new();
    for (key, value) in &top {
        match key.as_str() {
            "name" => {}
            "path" => {
                // HCL's JSON form allows `"path": {...}` and `"path": [{...}, ...]`.
                let objects: Vec<&Value> = match value {
                    Value::Array(items) => items.iter().collect(),
                    other => vec![other],
                };
                for obj in objects {
                    let Value::Object(paths) = obj else {
                        return Err(PolicyError::MalformedPath {
                            policy: name.to_string(),
                            what: "`path` must map each path to its rule".to_string(),
                        });
                    };
                    for (path, body) in paths {
                        let bodies: Vec<&Value> = match body {
                            Value::Array(items) => items.iter().collect(),
                            other => vec![other],
                        };
                        for body in bodies {
                            rules.push(to_rule(name, json_rule(name, path, body)?)?);
                        }
                    }
                }
            }
            other => {
                return Err(PolicyError::UnknownKey {
                    policy: name.to_string(),
                    key: other.to_string(),
                })
            }
        }
    }
    Ok(rules)
}

fn json_rule(name: &str, path: &str, body: &Value) -> Result<RawRule, PolicyError> {
    let Value::Object(body) = body else {
        return Err(PolicyError::MalformedPath {
            policy: name.to_string(),
            what: format!("the rule of path `{path}` must be an object"),
        });
    };
    let wrong = |key, expected| PolicyError::WrongType {
        policy: name.to_string(),
        path: path.to_string(),
        key,
        expected,
    };
    let capabilities = match body.get("capabilities") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| wrong("capabilities", "a list of strings"))?,
        Some(_) => return Err(wrong("capabilities", "a list of strings")),
    };
    let old_policy = match body.get("policy") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(wrong("policy", "a string")),
    };
    Ok(RawRule {
        path: path.to_string(),
        capabilities,
        old_policy,
    })
}

/// Vault's checks and normalisation of one rule (vault/policy.go `parsePaths`).
fn to_rule(name: &str, raw: RawRule) -> Result<Rule, PolicyError> {
    let pattern = raw.path.strip_prefix('/').unwrap_or(&raw.path).to_string();
    if pattern.contains("+*") {
        return Err(PolicyError::PlusStar {
            policy: name.to_string(),
            path: pattern,
        });
    }
    let mut names = raw.capabilities;
    if let Some(old) = &raw.old_policy {
        let implied: &[&str] = match old.as_str() {
            "deny" => &["deny"],
            "read" => &["read", "list"],
            "write" => &["create", "read", "update", "delete", "list"],
            "sudo" => &["create", "read", "update", "delete", "list", "sudo"],
            _ => {
                return Err(PolicyError::UnknownOldPolicy {
                    policy: name.to_string(),
                    path: pattern,
                    value: old.clone(),
                })
            }
        };
        names.extend(implied.iter().map(|s| s.to_string()));
    }
    let mut capabilities = BTreeSet::new();
    let mut unknown = Vec::new();
    for n in &names {
        match Capability::from_name(n) {
            Some(c) => {
                capabilities.insert(c);
            }
            None if !unknown.contains(n) => unknown.push(n.clone()),
            None => {}
        }
    }
    if !unknown.is_empty() {
        return Err(PolicyError::UnknownCapability {
            policy: name.to_string(),
            path: pattern,
            names: unknown,
        });
    }
    // Vault keeps only `deny` when a rule lists it with others.
    if capabilities.contains(&Capability::Deny) {
        capabilities = BTreeSet::from([Capability::Deny]);
    }
    Ok(Rule {
        pattern,
        capabilities,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use Capability::*;

    fn caps(c: &[Capability]) -> BTreeSet<Capability> {
        c.iter().copied().collect()
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
                Rule {
                    pattern: "secret/data/ask/core-service/*".into(),
                    capabilities: caps(&[Create, Update, Read])
                },
                Rule {
                    pattern: "secret/metadata/ask/core-service/*".into(),
                    capabilities: caps(&[Read, List])
                },
            ]
        );
    }

    #[test]
    fn other_keys_in_a_path_block_are_ignored() {
        let p = parse(
            "p",
            r#"
path "/secret/data/x" {
  capabilities = ["create", "update"]
  allowed_parameters = { "foo" = [] }
  required_parameters = ["bar"]
  denied_parameters = { "baz" = ["a"] }
  min_wrapping_ttl = "1s"
  max_wrapping_ttl = "90s"
}
path "secret/data/x" { capabilities = ["read"] }
"#,
        )
        .unwrap();
        assert_eq!(p.rules.len(), 2);
        assert_eq!(p.rules[0].pattern, "secret/data/x", "leading `/` stripped");
        assert_eq!(p.rules[0].capabilities, caps(&[Create, Update]));
        assert_eq!(p.rules[1].capabilities, caps(&[Read]));
    }

    #[test]
    fn json_form_object_and_list() {
        let p = parse(
            "j",
            r#"{"path": {"a/*": {"capabilities": ["read", "deny"]}, "b": {"capabilities": ["list"], "min_wrapping_ttl": "1s"}}}"#,
        )
        .unwrap();
        assert_eq!(
            p.rules,
            vec![
                Rule {
                    pattern: "a/*".into(),
                    capabilities: caps(&[Deny])
                },
                Rule {
                    pattern: "b".into(),
                    capabilities: caps(&[List])
                },
            ]
        );
        let p = parse("j", r#"{"path": [{"c": {"capabilities": ["sudo"]}}]}"#).unwrap();
        assert_eq!(p.rules[0].capabilities, caps(&[Sudo]));
    }

    #[test]
    fn old_style_policy_maps_to_capabilities() {
        let p = parse("old", r#"path "a" { policy = "read" }"#).unwrap();
        assert_eq!(p.rules[0].capabilities, caps(&[Read, List]));
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
        assert!(!message.is_empty());
        assert!(e
            .to_string()
            .starts_with("policy `broken` cannot be parsed as HCL: "));
        assert!(!e.help().is_empty());

        let e = parse("j", "{\"path\": ").unwrap_err();
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
        let e = parse("l", "path { capabilities = [] }").unwrap_err();
        assert!(matches!(e, PolicyError::MalformedPath { .. }), "{e}");
        let e = parse("s", "path \"a/+*\" { capabilities = [\"read\"] }").unwrap_err();
        assert!(matches!(e, PolicyError::PlusStar { .. }), "{e}");
    }

    #[test]
    fn empty_policy_has_no_rules() {
        assert!(parse("e", "").unwrap().rules.is_empty());
        assert!(parse("e", "# nothing\n").unwrap().rules.is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            let _ = parse("fuzz", &text);
        }

        #[test]
        fn policy_like_text_never_panics(
            text in r#"(path|"|\{|\}|\[|\]|=|capabilities|read|deny|\*|\+|/|a|,| |\n|#|\$\{|%\{|<<EOF\n|EOF|:|\\){0,40}"#
        ) {
            let _ = parse("fuzz", &text);
            let _ = parse("fuzz", &format!("{{{text}"));
        }
    }
}
