//! `set`'s and `rotate`'s report: one line (outcome, path, fields, versions), or the JSON
//! document `{"command", "env", "path", "fields", "outcome", "old_version", "new_version", "ok",
//! "readers", "readers_checked", "readers_note"}`.

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
    /// What reads the value replaced (`readers`, `readers_checked`, `readers_note`).
    #[serde(flatten)]
    pub readers: Readers,
}

impl Report for ChangeReport {
    fn render(&self, view: &View) -> Rendered<'_> {
        if view.format == Format::Json {
            return Rendered::json(self, true);
        }
        let versions = match (self.old_version, self.new_version) {
            (Some(a), Some(b)) => format!("v{a} -> v{b}"),
            (Some(a), None) => format!("v{a}"),
            _ => String::new(),
        };
        Rendered::text(
            format!(
                "{} {}  {}  {versions}\n",
                view.out.ok(&format!("{:<9}", self.outcome)),
                self.path,
                self.fields.join(",")
            ),
            true,
        )
    }
}
