//! `set`'s and `rotate`'s report: one line (outcome, path, fields, versions), or the JSON
//! document `{"command", "env", "path", "fields", "outcome", "old_version", "new_version", "ok",
//! "readers", "readers_checked", "readers_note", "restarts", "restarts_note", "findings",
//! "followed"}` (`docs/set-and-rotate.md`).

use serde::Serialize;

use super::{Format, Rendered, Report, View};
use crate::verify::readers::Readers;

/// The result of a `set` or `rotate`.
#[derive(Serialize)]
pub struct ChangeReport {
    /// `set` or `rotate`.
    pub command: &'static str,
    /// The environment.
    pub env: String,
    /// The secret's full path.
    pub path: String,
    /// The fields changed (or that would be).
    pub fields: Vec<String>,
    /// `set`, `replaced-placeholder`, `added`, `unchanged`, `rotated`, `would-rotate`.
    pub outcome: &'static str,
    /// The version before.
    pub old_version: Option<u64>,
    /// The version after (or that a rotation would make).
    pub new_version: Option<u64>,
    /// Always true: a change that failed is a failure, not a report.
    pub ok: bool,
    /// What reads the value replaced (`readers`, `readers_checked`, `readers_note`,
    /// `restarts`, `restarts_note`, and `findings`: what was said of them, with codes).
    #[serde(flatten)]
    pub readers: Readers,
    /// Fields of other secrets made from the changed ones, written after it (`followed`).
    pub followed: Vec<Followed>,
}

/// A secret whose derived fields (a copy, a template) followed a change of their source.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Followed {
    /// Its full path.
    pub path: String,
    /// The fields made again.
    pub fields: Vec<String>,
    /// The version before.
    pub old_version: Option<u64>,
    /// The version written.
    pub new_version: Option<u64>,
    /// Why it was not written, when it was not.
    pub error: Option<String>,
}

impl Report for ChangeReport {
    fn render(&self, view: &View) -> Rendered<'_> {
        // A change is done; a follower that could not be written makes the run not done.
        let ok = self.followed.iter().all(|f| f.error.is_none());
        if view.format == Format::Json {
            return Rendered::json(self, ok);
        }
        let versions = match (self.old_version, self.new_version) {
            (Some(a), Some(b)) => format!("v{a} -> v{b}"),
            (Some(a), None) => format!("v{a}"),
            _ => String::new(),
        };
        let mut text = format!(
            "{} {}  {}  {versions}\n",
            view.out.ok(&format!("{:<9}", self.outcome)),
            self.path,
            self.fields.join(",")
        );
        for f in &self.followed {
            let versions = match (f.old_version, f.new_version) {
                (Some(a), Some(b)) => format!("v{a} -> v{b}"),
                _ => String::new(),
            };
            let (label, tail) = match (&f.error, self.outcome) {
                (Some(e), _) => (
                    view.out.error(&format!("{:<9}", "not-followed")),
                    crate::base::text::for_terminal(e),
                ),
                (None, "would-rotate") => (
                    view.out.ok(&format!("{:<9}", "would-follow")),
                    String::new(),
                ),
                (None, _) => (view.out.ok(&format!("{:<9}", "followed")), versions),
            };
            text.push_str(&format!(
                "{label} {}  {}  {tail}\n",
                f.path,
                f.fields.join(",")
            ));
        }
        Rendered::text(text, ok)
    }
}
