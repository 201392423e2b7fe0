//! What `verify`'s object checks find, as typed findings. Each check (ExternalSecret,
//! VaultStaticSecret, store, PushSecret, Argo CD Application) pushes one variant per rule with
//! the facts it needs; its enum says in one place how bad each variant is, how it reads, and
//! its stable code ([`crate::base::codes::codes!`]). The report structs' sentence lists (`problems`,
//! `explanations`, `notes`) and their coded `findings` are made from the findings by
//! [`Verdict::of`], so a new rule is a variant, its code, its wording, and the small function
//! that finds it (`docs/development.md`, "Adding a verify rule").

use std::borrow::Cow;

use serde::Serialize;

pub use crate::base::codes::Code;

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

/// A finding: its severity, its sentence, and its code ([`Code`]).
pub trait Finding: Code {
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

impl Severity {
    /// The list its sentence goes to, as the JSON `severity` says it.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Leading | Severity::Problem => "problem",
            Severity::Cause => "explanation",
            Severity::Note => "note",
        }
    }
}

/// A finding as the JSON `findings[]` shows it: its code beside its sentence (owned, or
/// borrowed from the list it is in: [`Verdict::findings`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coded<M = String> {
    /// The stable code (`docs/errors.md`).
    pub code: &'static str,
    /// The sentence, as in the list it is in.
    pub message: M,
    /// `problem`, `explanation` or `note`: the list it is in.
    pub severity: &'static str,
}

/// Notes about a whole run (not one object): the sentences (`notes`) and the same with their
/// codes (`findings`).
pub fn said<F: Finding>(notes: &[F]) -> (Vec<String>, Vec<Coded>) {
    let coded = notes
        .iter()
        .map(|n| Coded {
            code: n.code(),
            message: n.message(),
            severity: n.severity().name(),
        })
        .collect::<Vec<_>>();
    (coded.iter().map(|c| c.message.clone()).collect(), coded)
}

/// Which sentence lists an object's JSON carries (each kind of object has had its own set:
/// a store has no `explanations`, a provided path only those); `findings` is always there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    problems: bool,
    explanations: bool,
    notes: bool,
}

impl Shape {
    /// `problems`, `explanations` and `notes`.
    pub const ALL: Shape = Shape {
        problems: true,
        explanations: true,
        notes: true,
    };
    /// `problems` and `notes`.
    pub const PROBLEMS_NOTES: Shape = Shape {
        explanations: false,
        ..Shape::ALL
    };
    /// `problems` only.
    pub const PROBLEMS: Shape = Shape {
        notes: false,
        ..Shape::PROBLEMS_NOTES
    };
    /// `explanations` only.
    pub const EXPLANATIONS: Shape = Shape {
        problems: false,
        explanations: true,
        notes: false,
    };
}

/// An object's verdict in words, shared by every object `verify` checks and flattened into its
/// JSON: the sentence lists (leading problems first, then the others in the order found;
/// problems and causes capped, since they quote the cluster) and `findings`, each sentence with
/// its code. `P` is how a problem is shown (Argo CD's carry their help). Each sentence is held
/// once: `findings` is written from the lists and the codes beside them (a platform holds a
/// verdict per object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict<P = String> {
    /// What is wrong, most important first.
    problems: Vec<P>,
    /// Why.
    explanations: Vec<String>,
    /// Worth knowing.
    notes: Vec<String>,
    /// Each sentence's code, in the order of the lists: problems, explanations, notes.
    codes: Vec<&'static str>,
    /// Which lists the JSON carries.
    shape: Shape,
}

/// A problem as shown, and the sentence it says ([`Verdict`]'s `P`).
pub trait Said {
    /// Its sentence, as `findings` shows it.
    fn said(&self) -> &str;
}

impl Said for String {
    fn said(&self) -> &str {
        self
    }
}

impl<P> Default for Verdict<P> {
    fn default() -> Self {
        Verdict {
            problems: Vec::new(),
            explanations: Vec::new(),
            notes: Vec::new(),
            codes: Vec::new(),
            shape: Shape::ALL,
        }
    }
}

impl Verdict {
    /// The verdict of `findings`.
    pub fn of<F: Finding>(findings: &[F]) -> Verdict {
        Verdict::build(findings, capped, |_, m| m)
    }
}

impl<P> Verdict<P> {
    /// The verdict of `findings`, each problem shown by `problem` (from the finding and its
    /// sentence), sentences as they are (Argo CD's, which say what to do).
    pub fn shown<F: Finding>(findings: &[F], problem: impl FnMut(&F, String) -> P) -> Self {
        Verdict::build(findings, |m| m, problem)
    }

    fn build<F: Finding>(
        findings: &[F],
        capped: impl Fn(String) -> String,
        mut problem: impl FnMut(&F, String) -> P,
    ) -> Self {
        let mut v = Verdict::default();
        let (mut leading, mut rest) = (Vec::new(), Vec::new());
        let (mut causes, mut notes) = (Vec::new(), Vec::new());
        for f in findings {
            match f.severity() {
                Severity::Leading => leading.push(f),
                Severity::Problem => rest.push(f),
                Severity::Cause => causes.push(f),
                Severity::Note => notes.push(f),
            }
        }
        // Sized once: a platform holds a verdict per object, most with a sentence or two.
        v.problems.reserve_exact(leading.len() + rest.len());
        v.explanations.reserve_exact(causes.len());
        v.notes.reserve_exact(notes.len());
        v.codes.reserve_exact(findings.len());
        for f in leading.into_iter().chain(rest) {
            v.problems.push(problem(f, capped(f.message())));
            v.codes.push(f.code());
        }
        for f in causes {
            v.explanations.push(capped(f.message()));
            v.codes.push(f.code());
        }
        for f in notes {
            v.notes.push(f.message());
            v.codes.push(f.code());
        }
        v
    }

    /// With the explanations said as notes, before them (an object whose JSON has no
    /// `explanations`).
    pub fn explanations_as_notes(mut self) -> Self {
        let mut notes = std::mem::take(&mut self.explanations);
        notes.append(&mut self.notes);
        notes.shrink_to_fit();
        self.notes = notes;
        self
    }

    /// With `shown`, a problem of its own (a finding that is no [`Finding`]), said by
    /// `shown`'s sentence.
    pub fn with_problem(mut self, code: &'static str, shown: P) -> Self {
        self.codes.insert(self.problems.len(), code);
        self.problems.push(shown);
        self
    }

    /// With only the lists of `shape` in its JSON.
    pub fn shaped(mut self, shape: Shape) -> Self {
        self.shape = shape;
        self
    }

    /// Whether it has no problem.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// What is wrong, most important first.
    pub fn problems(&self) -> &[P] {
        &self.problems
    }

    /// Why.
    pub fn explanations(&self) -> &[String] {
        &self.explanations
    }

    /// Worth knowing.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

#[cfg(test)]
impl Verdict {
    /// A verdict of these sentences, each coded `test` (an object of a report's test).
    pub(crate) fn of_sentences(
        problems: Vec<String>,
        explanations: Vec<String>,
        notes: Vec<String>,
    ) -> Verdict {
        let codes = vec!["test"; problems.len() + explanations.len() + notes.len()];
        Verdict {
            problems,
            explanations,
            notes,
            codes,
            shape: Shape::ALL,
        }
    }
}

impl<P: Said> Verdict<P> {
    /// Every sentence with its code and list, as the JSON's `findings` shows them.
    pub fn findings(&self) -> impl Iterator<Item = Coded<&str>> {
        let problems = self.problems.iter().map(|p| (p.said(), Severity::Problem));
        let explanations = self.explanations.iter().map(|m| (&**m, Severity::Cause));
        let notes = self.notes.iter().map(|m| (&**m, Severity::Note));
        problems
            .chain(explanations)
            .chain(notes)
            .zip(&self.codes)
            .map(|((message, severity), code)| Coded {
                code,
                message,
                severity: severity.name(),
            })
    }
}

impl<P: Serialize + Said> Serialize for Verdict<P> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        /// The findings, written as they are made from the lists.
        struct Findings<'v, P>(&'v Verdict<P>);
        impl<P: Said> Serialize for Findings<'_, P> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.findings())
            }
        }
        let Shape {
            problems,
            explanations,
            notes,
        } = self.shape;
        let n = [problems, explanations, notes, true]
            .into_iter()
            .filter(|b| *b)
            .count();
        let mut st = s.serialize_struct("Verdict", n)?;
        if problems {
            st.serialize_field("problems", &self.problems)?;
        }
        if explanations {
            st.serialize_field("explanations", &self.explanations)?;
        }
        if notes {
            st.serialize_field("notes", &self.notes)?;
        }
        st.serialize_field("findings", &Findings(self))?;
        st.end()
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

/// The keys of `v`'s JSON object, in the order they are written (a test of a report's shape:
/// `serde_json::Value` sorts them).
#[cfg(test)]
pub(crate) fn json_keys(v: &impl Serialize) -> Vec<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some((k, IgnoredAny)) = map.next_entry::<String, IgnoredAny>()? {
                keys.push(k);
            }
            Ok(keys)
        }
    }
    let text = serde_json::to_string(v).unwrap();
    serde_json::Deserializer::from_str(&text)
        .deserialize_map(Keys)
        .unwrap()
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

    crate::base::codes::codes!(Test, Test { Lead => "lead", Wrong => "wrong", Why => "why", Note => "note" });

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
        let lines = Verdict::of(&found);
        assert_eq!(lines.problems(), ["first", "a", "b"]);
        let codes: Vec<_> = lines.findings().map(|c| c.code).collect();
        assert_eq!(codes, ["lead", "wrong", "wrong", "why", "note"]);
        assert_eq!(lines.findings().nth(1).unwrap().message, "a");
        assert_eq!(
            lines.findings().nth(3).unwrap().message,
            lines.explanations()[0]
        );
        assert_eq!(lines.findings().nth(3).unwrap().severity, "explanation");
        assert_eq!(lines.explanations().len(), 1);
        assert!(lines.explanations()[0].len() < long.len());
        assert!(lines.explanations()[0].ends_with("more characters)"));
        assert_eq!(lines.notes(), [long]);
        assert!(any_problem(&found));
        assert!(!any_problem(&[
            Test::Why("w".into()),
            Test::Note("n".into())
        ]));
    }

    #[test]
    fn the_json_carries_the_lists_of_its_shape_then_the_findings() {
        let v = Verdict::of(&[Test::Wrong("a"), Test::Note("n".into())]);
        let json = |v: &Verdict| serde_json::to_string(v).unwrap();
        assert_eq!(
            json(&v),
            r#"{"problems":["a"],"explanations":[],"notes":["n"],"findings":[{"code":"wrong","message":"a","severity":"problem"},{"code":"note","message":"n","severity":"note"}]}"#
        );
        let v = v.shaped(Shape::EXPLANATIONS);
        assert!(json(&v).starts_with(r#"{"explanations":[],"findings":["#));
    }

    /// The findings follow the lists as they are changed: explanations said as notes are
    /// notes, before the others; a problem added is a problem, after the others.
    #[test]
    fn the_findings_follow_the_lists_when_they_change() {
        let v = Verdict::of(&[
            Test::Note("n".into()),
            Test::Why("w".into()),
            Test::Wrong("a"),
        ])
        .explanations_as_notes()
        .with_problem("added", "b".to_string())
        .shaped(Shape::PROBLEMS_NOTES);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"problems":["a","b"],"notes":["w","n"],"findings":[{"code":"wrong","message":"a","severity":"problem"},{"code":"added","message":"b","severity":"problem"},{"code":"why","message":"w","severity":"note"},{"code":"note","message":"n","severity":"note"}]}"#
        );
        let owned: Vec<Coded> = v
            .findings()
            .map(|c| Coded {
                code: c.code,
                message: c.message.to_string(),
                severity: c.severity,
            })
            .collect();
        assert_eq!(owned.len(), 4);
        assert_eq!(owned[2].message, v.notes()[0]);
    }
}
