//! A label selector string (`a=b,c in (d,e),!f`) matched against an object's labels here, so
//! that one LIST of a namespace's pods serves every workload's selector. The terms and what
//! each matches are the API server's (apimachinery `pkg/labels/selector.go`, `Requirement.Matches`:
//! `!=` and `notin` also match an object without the label).

use std::collections::BTreeMap;

/// Whether `labels` match `selector`; `None` when the selector is not one this reads (the
/// caller then asks the server).
pub fn matches(selector: &str, labels: &BTreeMap<String, String>) -> Option<bool> {
    let mut all = true;
    for term in terms(selector)? {
        all &= term_matches(term.trim(), labels)?;
    }
    Some(all)
}

/// The terms, split at the commas outside parentheses; `None` when they do not balance.
fn terms(selector: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    (depth == 0).then_some(())?;
    out.push(&selector[start..]);
    Some(out.into_iter().filter(|t| !t.trim().is_empty()).collect())
}

fn term_matches(term: &str, labels: &BTreeMap<String, String>) -> Option<bool> {
    let label = |k: &str| labels.get(k.trim()).map(String::as_str);
    let set = |v: &str| -> Option<Vec<String>> {
        let inner = v.trim().strip_prefix('(')?.strip_suffix(')')?;
        Some(inner.split(',').map(|s| s.trim().to_string()).collect())
    };
    Some(if let Some((k, v)) = term.split_once(" notin ") {
        let set = set(v)?;
        !label(k).is_some_and(|l| set.iter().any(|s| s == l))
    } else if let Some((k, v)) = term.split_once(" in ") {
        let set = set(v)?;
        label(k).is_some_and(|l| set.iter().any(|s| s == l))
    } else if let Some((k, v)) = term.split_once("!=") {
        label(k) != Some(v.trim())
    } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
        label(k) == Some(v.trim())
    } else if let Some(k) = term.strip_prefix('!') {
        label(k).is_none()
    } else if term.contains(['(', ')', ' ', '<', '>']) {
        return None;
    } else {
        label(term).is_some()
    })
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
        assert_eq!(matches("app=a", &l), Some(true));
        assert_eq!(matches("app==a,tier in (x,y)", &l), Some(true));
        assert_eq!(matches("app=a,tier notin (x)", &l), Some(false));
        assert_eq!(matches("app=a,!old", &l), Some(true));
        assert_eq!(matches("old", &l), Some(false));
        // `!=` and `notin` match an object without the label.
        assert_eq!(matches("old!=1,gone notin (a)", &l), Some(true));
        assert_eq!(matches("app=b", &l), Some(false));
        assert_eq!(matches("tier in (x", &l), None);
        assert_eq!(matches("app>1", &l), None);
    }
}
