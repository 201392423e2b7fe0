//! A label selector string (`a=b,c in (d,e),!f,n>1`) matched against an object's labels here:
//! one LIST of a namespace's pods serves every workload's selector, and Reloader's
//! `--namespace-selector` and `--resource-label-selector` are judged without asking anyone.
//!
//! One grammar serves both, apimachinery's `labels.Parse` (`pkg/labels/selector.go`: its
//! `Lexer`, `Parser.parseRequirement`, `NewRequirement` and `Requirement.Matches`). The API
//! server parses a LIST's `labelSelector` with it (`pkg/apis/meta/v1/conversion.go`,
//! `Convert_string_To_labels_Selector`), and Reloader v1.4.21 checks its selectors with it
//! (`pkg/common/common.go`, `GetNamespaceLabelSelector`, `GetResourceLabelSelector`). A
//! `metav1.LabelSelector` (a workload's `spec.selector`) has no `Gt`/`Lt` operator
//! (`LabelSelectorAsSelector`), but that only narrows the strings made from it, not how they
//! are read. So `>` and `<` are read here too, as upstream reads them: the value must be an
//! integer, and a label that is not one never matches.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Whether `labels` match `selector` (the empty selector matches everything); an error says
/// why `labels.Parse` would refuse the selector (never taken for a match, nor for none).
pub fn matches(selector: &str, labels: &impl Labels) -> Result<bool, String> {
    Ok(selects(&parse(selector)?, labels))
}

/// Whether `labels` meet every requirement of a parsed selector.
pub fn selects(requirements: &[Requirement], labels: &impl Labels) -> bool {
    requirements.iter().all(|r| r.matches(labels))
}

/// An object's labels, as a selector reads them.
pub trait Labels {
    /// The value of label `key`, if it has one.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// Labels as kept for many objects (a platform's pods): sorted pairs, shared when copied. A
/// map takes a node of room for eleven labels however few an object has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSet(Arc<[(Box<str>, Box<str>)]>);

impl LabelSet {
    /// The pairs, each key once (the later of two).
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> LabelSet {
        let sorted: BTreeMap<String, String> = pairs.into_iter().collect();
        LabelSet(
            sorted
                .into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
                .collect(),
        )
    }
}

impl Labels for LabelSet {
    fn label(&self, key: &str) -> Option<&str> {
        let i = self.0.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
        Some(&self.0[i].1)
    }
}

/// A selector's requirements, each term as `labels.Parse` reads it.
pub fn parse(selector: &str) -> Result<Vec<Requirement>, String> {
    let tokens = lex(selector)?;
    let mut p = Parser { tokens, at: 0 };
    let mut out = Vec::new();
    if p.peek() == &Token::End {
        return Ok(out);
    }
    loop {
        out.push(p.requirement()?);
        match p.next() {
            Token::End => return Ok(out),
            Token::Comma if matches!(p.peek(), Token::Ident(_) | Token::Not) => {}
            t => return Err(format!("found {}, expected `,` then a term", t.shown())),
        }
    }
}

/// One term: a key, an operator, and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

/// `selection.Operator`, as the parser makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `=`, `==`, `in`.
    In,
    /// `!=`, `notin`.
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

impl Requirement {
    /// `Requirement.Matches`: `!=` and `notin` also match an object without the label.
    fn matches(&self, labels: &impl Labels) -> bool {
        let value = labels.label(&self.key);
        let listed = || value.is_some_and(|v| self.values.iter().any(|w| w == v));
        match self.op {
            Op::In => listed(),
            Op::NotIn => !listed(),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::GreaterThan | Op::LessThan => {
                let (Some(have), Some(limit)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.op == Op::GreaterThan {
                    have > limit
                } else {
                    have < limit
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `!`
    Not,
    /// `=`, `==`, `!=`, `>`, `<`
    Sym(&'static str),
    In,
    NotIn,
    Open,
    Close,
    Comma,
    End,
}

impl Token {
    fn shown(&self) -> String {
        match self {
            Token::Ident(s) => format!("`{s}`"),
            Token::Not => "`!`".into(),
            Token::Sym(s) => format!("`{s}`"),
            Token::In => "`in`".into(),
            Token::NotIn => "`notin`".into(),
            Token::Open => "`(`".into(),
            Token::Close => "`)`".into(),
            Token::Comma => "`,`".into(),
            Token::End => "the end".into(),
        }
    }
}

/// `Lexer.Lex`: blanks separate; `=!(),<>` are symbols (the longest of `==`, `!=` first);
/// anything else up to a blank or a symbol is an identifier, `in` and `notin` keywords.
fn lex(s: &str) -> Result<Vec<Token>, String> {
    let special = |c: char| "=!(),<>".contains(c);
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, ' ' | '\t' | '\r' | '\n') {
            continue;
        }
        let two = s.get(i..i + 2);
        let token = match (c, two) {
            (_, Some(t @ ("==" | "!="))) => {
                chars.next();
                Token::Sym(if t == "==" { "==" } else { "!=" })
            }
            ('=', _) => Token::Sym("="),
            ('>', _) => Token::Sym(">"),
            ('<', _) => Token::Sym("<"),
            ('!', _) => Token::Not,
            ('(', _) => Token::Open,
            (')', _) => Token::Close,
            (',', _) => Token::Comma,
            _ => {
                let mut end = s.len();
                while let Some(&(j, d)) = chars.peek() {
                    if special(d) || matches!(d, ' ' | '\t' | '\r' | '\n') {
                        end = j;
                        break;
                    }
                    chars.next();
                }
                match &s[i..end] {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    word => Token::Ident(word.to_string()),
                }
            }
        };
        out.push(token);
    }
    out.push(Token::End);
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.at.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        self.at += 1;
        t
    }

    /// A token where a value goes: `in` and `notin` are words there.
    fn value_token(&mut self) -> Token {
        match self.next() {
            Token::In => Token::Ident("in".into()),
            Token::NotIn => Token::Ident("notin".into()),
            t => t,
        }
    }

    /// `parseRequirement` then `NewRequirement`'s checks.
    fn requirement(&mut self) -> Result<Requirement, String> {
        let negated = self.peek() == &Token::Not;
        if negated {
            self.next();
        }
        // The key is read as a value is (`in` is a key there).
        let key = match self.value_token() {
            Token::Ident(k) => k,
            t => return Err(format!("found {}, expected a label key", t.shown())),
        };
        valid_key(&key)?;
        let bare = matches!(self.peek(), Token::Comma | Token::End);
        let (op, values) = match (negated, bare) {
            (true, true) => (Op::DoesNotExist, Vec::new()),
            (true, false) => return Err(format!("`!{key}` takes no operator")),
            (false, true) => (Op::Exists, Vec::new()),
            (false, false) => self.operator_and_values(&key)?,
        };
        for v in &values {
            valid_value(v)?;
        }
        Ok(Requirement { key, op, values })
    }

    fn operator_and_values(&mut self, key: &str) -> Result<(Op, Vec<String>), String> {
        let op = match self.next() {
            Token::Sym("=" | "==") => Op::In,
            Token::Sym("!=") => Op::NotIn,
            Token::Sym(">") => Op::GreaterThan,
            Token::Sym("<") => Op::LessThan,
            Token::In => return Ok((Op::In, self.set(key)?)),
            Token::NotIn => return Ok((Op::NotIn, self.set(key)?)),
            t => {
                return Err(format!(
                    "found {} after `{key}`, expected an operator",
                    t.shown()
                ))
            }
        };
        // `parseExactValue`: nothing before `,` or the end is the empty value.
        let value = match self.peek() {
            Token::Comma | Token::End => String::new(),
            _ => match self.value_token() {
                Token::Ident(v) => v,
                t => {
                    return Err(format!(
                        "found {} after `{key}`, expected a value",
                        t.shown()
                    ))
                }
            },
        };
        if matches!(op, Op::GreaterThan | Op::LessThan) && value.parse::<i64>().is_err() {
            return Err(format!(
                "`{key}` is compared with `{value}`, which is not an integer"
            ));
        }
        Ok((op, vec![value]))
    }

    /// `parseValues`: `(a,b)`; empty entries are empty values, an empty set is refused.
    fn set(&mut self, key: &str) -> Result<Vec<String>, String> {
        if self.next() != Token::Open {
            return Err(format!("`{key} in`/`notin` needs `(`"));
        }
        if self.peek() == &Token::Close {
            return Err(format!("`{key}`'s set of values is empty"));
        }
        let mut values = Vec::new();
        let mut current = String::new();
        loop {
            match self.value_token() {
                Token::Ident(v) if current.is_empty() => current = v,
                Token::Comma => values.push(std::mem::take(&mut current)),
                Token::Close => {
                    values.push(current);
                    return Ok(values);
                }
                t => return Err(format!("found {} in `{key}`'s set of values", t.shown())),
            }
        }
    }
}

/// `validateLabelKey`: a qualified name (`prefix/name`), as `IsQualifiedName` checks it.
fn valid_key(key: &str) -> Result<(), String> {
    let bad = || Err(format!("`{key}` is not a label key"));
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if name.len() > 63 || name.is_empty() || !name_chars(name) {
        return bad();
    }
    if let Some(p) = prefix {
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if p.len() > 253 || !p.split('.').all(label_ok) {
            return bad();
        }
    }
    Ok(())
}

/// `validateLabelValue`: empty, or at most 63 characters of a name.
fn valid_value(v: &str) -> Result<(), String> {
    if v.is_empty() || (v.len() <= 63 && name_chars(v)) {
        Ok(())
    } else {
        Err(format!("`{v}` is not a label value"))
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn name_chars(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let b = s.as_bytes();
    !b.is_empty()
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn terms_match_as_the_api_server_matches_them() {
        let l = labels(&[("app", "a"), ("tier", "x")]);
        assert_eq!(matches("app=a", &l), Ok(true));
        assert_eq!(matches("app==a,tier in (x,y)", &l), Ok(true));
        assert_eq!(matches("app=a,tier notin (x)", &l), Ok(false));
        assert_eq!(matches("app=a,!old", &l), Ok(true));
        assert_eq!(matches("old", &l), Ok(false));
        // `!=` and `notin` match an object without the label.
        assert_eq!(matches("old!=1,gone notin (a)", &l), Ok(true));
        assert_eq!(matches("app=b", &l), Ok(false));
        assert!(matches("tier in (x", &l).is_err());
        // `labels.Parse` reads `>` (`GreaterThanToken`), and `Requirement.Matches` compares
        // integers only: `a` is not one, so the term is false, not unreadable.
        assert_eq!(matches("app>1", &l), Ok(false));
    }

    /// Reloader's selectors and the `>`/`<` terms, as `labels.Parse` reads them.
    #[test]
    fn the_whole_grammar() {
        let l = labels(&[("env", "prod"), ("tier", "web"), ("n", "5"), ("e", "")]);
        for (sel, want) in [
            ("", true),
            ("  ", true),
            ("env=prod", true),
            ("env==prod,tier", true),
            ("env!=prod", false),
            ("env in (dev, prod)", true),
            ("env notin (prod)", false),
            ("!missing,tier in (web)", true),
            ("missing", false),
            ("n>4,n<6", true),
            ("n>5", false),
            ("n > 4", true),
            ("env>1", false),
            ("missing<9", false),
            ("e=", true),
            ("e in (,x)", true),
            ("tier in (in,notin)", false),
            ("example.com/app!=x", true),
            ("in=x", false),
        ] {
            assert_eq!(matches(sel, &l), Ok(want), "{sel}");
            // The pods' compact labels answer as the map does.
            let set = LabelSet::new(l.clone());
            assert_eq!(matches(sel, &set), Ok(want), "{sel} (LabelSet)");
        }
        for bad in [
            "env in (a",
            "env in ()",
            "a=b,",
            ",a",
            "n>x",
            "n>",
            "!a=b",
            "a=b=c",
            "a b",
            "a==(b)",
            "-a",
            "a=-b",
            "Example.com/a",
        ] {
            assert!(matches(bad, &l).is_err(), "{bad}");
        }
    }

    /// Pairs kept sorted, the later of two with one key, found by key.
    #[test]
    fn a_label_set_keeps_the_later_of_two_and_finds_each_key() {
        let pairs = [("b", "1"), ("a", "2"), ("c", "3"), ("a", "4")];
        let set = LabelSet::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!(set.label("a"), Some("4"));
        assert_eq!(set.label("b"), Some("1"));
        assert_eq!(set.label("c"), Some("3"));
        assert_eq!(set.label("d"), None);
        assert_eq!(LabelSet::default().label("a"), None);
    }
}
