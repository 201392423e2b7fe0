//! A field of a cluster object that is missing or not of its type. Such an object is reported,
//! never taken as matching anything: a controller would not read the field as vault-seed guessed.

use std::fmt;

use serde::{Serialize, Serializer};

/// One field at fault, in any object vault-seed reads (ESO's, VSO's, Argo CD's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadField {
    /// The field's path as its reader names it (`/spec/data/0/remoteRef/key`, `spec.mount`).
    pub field: String,
    /// What is wrong with it.
    pub problem: FieldProblem,
}

impl BadField {
    /// `field` with `problem`; a path longer than a line is cut.
    pub fn new(field: &str, problem: FieldProblem) -> Self {
        BadField {
            field: crate::base::text::cap(field).into_owned(),
            problem,
        }
    }
}

/// What is wrong with a field. Never quotes the field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldProblem {
    /// It is absent (or `null`) where the controller needs it.
    Missing,
    /// It is an empty string where the controller needs one.
    Empty,
    /// It is not of the type wanted (`want`: "a string"); `found` names the JSON type when told.
    NotA {
        /// The type wanted, with its article.
        want: &'static str,
        /// The JSON type found, when told.
        found: Option<&'static str>,
    },
    /// It is absent, or not of the type wanted (`want`: "an object").
    MissingOrNotA(&'static str),
    /// It is a string, not in the form its controller writes (`` `<generation>-<hash>` ``).
    NotForm(&'static str),
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldProblem::Missing => f.write_str("is missing"),
            FieldProblem::Empty => f.write_str("is empty"),
            FieldProblem::NotA {
                want,
                found: Some(found),
            } => write!(f, "is {found}, not {want}"),
            FieldProblem::NotA { want, found: None } => write!(f, "is not {want}"),
            FieldProblem::MissingOrNotA(want) => write!(f, "is missing or not {want}"),
            FieldProblem::NotForm(form) => write!(f, "is not {form}"),
        }
    }
}

/// In JSON, the sentence (`"is missing"`), as before the kinds were told apart.
impl Serialize for FieldProblem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_reads_as_a_sentence_end() {
        let cases = [
            (FieldProblem::Missing, "is missing"),
            (FieldProblem::Empty, "is empty"),
            (
                FieldProblem::NotA {
                    want: "a string",
                    found: Some("a number"),
                },
                "is a number, not a string",
            ),
            (
                FieldProblem::NotA {
                    want: "a list",
                    found: None,
                },
                "is not a list",
            ),
            (
                FieldProblem::MissingOrNotA("an object"),
                "is missing or not an object",
            ),
            (
                FieldProblem::NotForm("`<generation>-<hash>`"),
                "is not `<generation>-<hash>`",
            ),
        ];
        for (p, want) in cases {
            assert_eq!(p.to_string(), want);
            assert_eq!(serde_json::to_value(&p).unwrap(), want);
        }
    }
}
