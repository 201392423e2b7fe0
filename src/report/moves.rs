//! `move`'s report: one line, or the JSON document `{"command": "move", "env", "path", "from",
//! "fields", "new_version", "ok", "notes"}`. Never holds a value.

use serde::Serialize;

use super::{Format, Rendered, Report, View};

/// The result of a `move`.
#[derive(Serialize)]
pub struct MoveReport {
    /// `move`.
    pub command: &'static str,
    /// The environment.
    pub env: String,
    /// The spec's full path, where the data is now.
    pub path: String,
    /// The full path it was copied from (kept, marked `vault-seed/moved-to`).
    pub from: String,
    /// The fields copied.
    pub fields: Vec<String>,
    /// The version written (KV v2), or null.
    pub new_version: Option<u64>,
    /// Always true: a move that failed is a failure, not a report.
    pub ok: bool,
    /// What the person should know (the old path kept; its mark not written).
    pub notes: Vec<String>,
}

impl Report for MoveReport {
    fn render(&self, view: &View) -> Rendered<'_> {
        let notes: String = self
            .notes
            .iter()
            .map(|n| {
                format!(
                    "{}: {}\n",
                    view.err.help("note"),
                    crate::base::text::for_terminal(n)
                )
            })
            .collect();
        if view.format == Format::Json {
            return Rendered::json(self, true).with_after(notes);
        }
        let version = self
            .new_version
            .map(|v| format!("v{v}"))
            .unwrap_or_default();
        let text = format!(
            "{} {}  {}  {version}  from {}\n",
            view.out.ok(&format!("{:<9}", "moved")),
            self.path,
            self.fields.join(","),
            self.from
        );
        Rendered::text(text, true).with_after(notes)
    }
}
