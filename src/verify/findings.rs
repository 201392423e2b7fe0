//! What `verify`'s object checks find, as typed findings. Each check (ExternalSecret,
//! VaultStaticSecret, store, PushSecret, Argo CD Application) pushes one variant per rule with
//! the facts it needs; its enum says in one place how bad each variant is and how it reads. The
//! report structs' sentence lists (`problems`, `explanations`, `notes`) are made from the
//! findings by [`Lines::of`], so a new rule is a variant, its wording, and the small function
//! that finds it.

use std::borrow::Cow;

/// How a finding counts for its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Something wrong that the object shows first (its state: not Ready, stale): not ok.
    Leading,
    /// Something wrong: the object is not ok.
    Problem,
    /// Why it is not right, from vault-seed's view or the operator's events; never fails it.
    Cause,
    /// Worth knowing, not wrong.
    Note,
}

/// A finding: its severity and its sentence.
pub trait Finding {
    /// How it counts.
    fn severity(&self) -> Severity;
    /// The sentence shown, in JSON and text alike.
    fn message(&self) -> String;
}

impl<F: Finding> Finding for &F {
    fn severity(&self) -> Severity {
        (*self).severity()
    }

    fn message(&self) -> String {
        (*self).message()
    }
}

/// An object's findings as the report's sentence lists: leading problems first, then the others
/// in the order found; problems and causes capped, since they quote the cluster.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lines {
    /// What is wrong, most important first.
    pub problems: Vec<String>,
    /// Why.
    pub explanations: Vec<String>,
    /// Worth knowing.
    pub notes: Vec<String>,
}

impl Lines {
    /// The lines of `findings`.
    pub fn of<F: Finding>(findings: &[F]) -> Lines {
        let mut lines = Lines::default();
        let mut rest = Vec::new();
        for f in findings {
            match f.severity() {
                Severity::Leading => lines.problems.push(capped(f.message())),
                Severity::Problem => rest.push(capped(f.message())),
                Severity::Cause => lines.explanations.push(capped(f.message())),
                Severity::Note => lines.notes.push(f.message()),
            }
        }
        lines.problems.extend(rest);
        lines
    }
}

/// Whether any of `findings` makes its object not ok.
pub fn any_problem<F: Finding>(findings: &[F]) -> bool {
    findings
        .iter()
        .any(|f| matches!(f.severity(), Severity::Leading | Severity::Problem))
}

/// A sentence bounded like the text report's lines (in JSON too).
pub fn capped(line: String) -> String {
    match crate::base::text::cap(&line) {
        Cow::Owned(c) => c,
        Cow::Borrowed(_) => line,
    }
}

/// `: <message>`, or nothing.
pub fn colon(message: Option<&str>) -> String {
    message.map(|m| format!(": {m}")).unwrap_or_default()
}

/// Names joined for a sentence: `a`, `b` (the outer backticks are the caller's).
pub fn joined(names: &[String]) -> String {
    names.join("`, `")
}

/// Whether a controller's time (`status.refreshTime`, a condition's `lastTransitionTime`, a
/// container's `startedAt`: whole seconds, as apimachinery's `metav1.Time` marshals them) is
/// surely before a time Vault gives with nanoseconds: only when it is before Vault's second
/// itself (a sync in the same second may have been after the write).
pub fn before_in_whole_seconds(
    controller: time::OffsetDateTime,
    vault: time::OffsetDateTime,
) -> bool {
    controller < vault.replace_nanosecond(0).unwrap_or(vault)
}

/// A Vault namespace for a sentence: `` `ns` ``, or "none (the root namespace)".
pub fn shown_namespace(ns: Option<&str>) -> String {
    ns.map_or("none (the root namespace)".into(), |n| format!("`{n}`"))
}

/// A time as RFC 3339.
pub fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    enum Test {
        Lead(&'static str),
        Wrong(&'static str),
        Why(String),
        Note(String),
    }

    impl Finding for Test {
        fn severity(&self) -> Severity {
            match self {
                Test::Lead(_) => Severity::Leading,
                Test::Wrong(_) => Severity::Problem,
                Test::Why(_) => Severity::Cause,
                Test::Note(_) => Severity::Note,
            }
        }
        fn message(&self) -> String {
            match self {
                Test::Lead(s) | Test::Wrong(s) => s.to_string(),
                Test::Why(s) | Test::Note(s) => s.clone(),
            }
        }
    }

    #[test]
    fn leading_problems_come_first_causes_are_capped_notes_are_not() {
        let long = "x".repeat(5000);
        let found = [
            Test::Wrong("a"),
            Test::Why(long.clone()),
            Test::Lead("first"),
            Test::Note(long.clone()),
            Test::Wrong("b"),
        ];
        let lines = Lines::of(&found);
        assert_eq!(lines.problems, ["first", "a", "b"]);
        assert_eq!(lines.explanations.len(), 1);
        assert!(lines.explanations[0].len() < long.len());
        assert!(lines.explanations[0].ends_with("more characters)"));
        assert_eq!(lines.notes, [long]);
        assert!(any_problem(&found));
        assert!(!any_problem(&[
            Test::Why("w".into()),
            Test::Note("n".into())
        ]));
    }
}
