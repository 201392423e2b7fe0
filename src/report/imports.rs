//! `import`'s report: a row per `from_secret` field (outcome, path, field, versions, the Secret
//! read, why) and a summary, or the JSON document `{"command": "import", "env", "dry_run",
//! "ok", "counts", "results", "notes", "findings"}`. Never holds a value.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::{Format, Rendered, Report, View};
use crate::base::text::for_terminal as t;
use crate::seed::notes::SeedNote;
use crate::verify::findings::{said, Coded, Finding, Severity};
use crate::write::import::{Outcome, Row};

/// What `import` says about its run rather than one field, with codes as `apply`'s notes have
/// them: the seeding engine's (a mount used on the operator's word) and its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportNote {
    /// A note of the seeding engine, with its code (`mount-assumed`).
    Seeding(SeedNote),
    /// No field of the environment has `from_secret`.
    NothingToImport {
        /// The environment.
        env: String,
    },
}

crate::base::codes::codes!(
    ImportNote,
    ImportNote {
        NothingToImport => "nothing-to-import",
    }
    nested {
        Seeding => SeedNote,
    }
);

/// All notes: the verdict is the fields'.
impl Finding for ImportNote {
    fn severity(&self) -> Severity {
        Severity::Note
    }

    fn message(&self) -> String {
        match self {
            ImportNote::Seeding(n) => n.message(),
            ImportNote::NothingToImport { env } => {
                format!("no field of environment `{env}` has `from_secret`: nothing to import")
            }
        }
    }
}

/// The result of an `import`.
#[derive(Serialize)]
pub struct ImportReport {
    /// Always `import`.
    pub command: &'static str,
    /// The environment.
    pub env: String,
    /// `--dry-run`: nothing was written.
    pub dry_run: bool,
    /// Every field is imported, replaced or already there (or would be).
    pub ok: bool,
    /// Fields per outcome.
    pub counts: BTreeMap<&'static str, usize>,
    /// One row per `from_secret` field, in spec order.
    pub results: Vec<Row>,
    /// What is not about one field (mounts written on the operator's word, nothing to do).
    pub notes: Vec<String>,
    /// The same sentences with their codes.
    pub findings: Vec<Coded>,
}

impl ImportReport {
    /// The report of `results`.
    pub fn new(env: String, dry_run: bool, results: Vec<Row>, notes: &[ImportNote]) -> Self {
        let (notes, findings) = said(notes);
        let mut counts = BTreeMap::new();
        for r in &results {
            *counts.entry(r.outcome.as_str()).or_insert(0) += 1;
        }
        ImportReport {
            command: "import",
            env,
            dry_run,
            ok: results.iter().all(|r| r.outcome.ok()),
            counts,
            results,
            notes,
            findings,
        }
    }

    fn has(&self, outcome: Outcome) -> bool {
        self.results.iter().any(|r| r.outcome == outcome)
    }
}

impl Report for ImportReport {
    fn render(&self, view: &View) -> Rendered<'_> {
        let mut after = String::new();
        if self.has(Outcome::Refused) {
            let _ = writeln!(
                after,
                "{}: a refused field was not written (the rule is on its row); where it holds a value other than its Secret's, `vault-seed import {} --force` replaces it (the old one stays in KV v2 history)",
                view.err.help("help"),
                self.env
            );
        }
        if self.has(Outcome::NotDone) {
            let _ = writeln!(
                after,
                "{}: run `vault-seed import {}` again once the components have written their Secrets",
                view.err.help("help"),
                self.env
            );
        }
        let notes: String = self
            .notes
            .iter()
            .map(|n| format!("{}: {}\n", view.err.help("note"), t(n)))
            .collect();
        if view.format == Format::Json {
            return Rendered::json(self, self.ok)
                .refused(self.has(Outcome::Refused))
                .with_before(notes)
                .with_after(after);
        }
        let mut out = String::new();
        let width = |f: fn(&Row) -> usize| self.results.iter().map(f).max().unwrap_or(0);
        let (wp, wf) = (width(|r| r.path.len()), width(|r| r.field.len()));
        for r in &self.results {
            let word = format!("{:<13}", r.outcome.as_str());
            let versions = match (r.old_version, r.new_version) {
                (Some(a), Some(b)) => format!("v{a} -> v{b}"),
                (None, Some(b)) => format!("v{b}"),
                (Some(a), None) => format!("v{a}"),
                (None, None) => "-".into(),
            };
            let _ = writeln!(
                out,
                "{} {:<wp$}  {:<wf$}  {versions:<10}  from Secret {} key {}{}",
                if r.outcome.ok() {
                    view.out.ok(&word)
                } else {
                    view.out.error(&word)
                },
                r.path,
                r.field,
                t(&r.secret),
                t(&r.key),
                r.detail
                    .as_deref()
                    .map(|d| format!(": {}", t(d)))
                    .unwrap_or_default()
            );
        }
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let _ = writeln!(
            out,
            "import {}: {} ({} field(s){}{})",
            self.env,
            if self.ok {
                view.out.ok("done")
            } else {
                view.out.error("NOT done")
            },
            self.results.len(),
            if counts.is_empty() { "" } else { ": " },
            counts.join(", ")
        );
        Rendered::text(out, self.ok)
            .refused(self.has(Outcome::Refused))
            .with_before(notes)
            .with_after(after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_of_imports_notes_is_listed() {
        crate::base::codes::assert_documented(
            "import: notes",
            &ImportNote::codes(),
            &ImportNote::all_codes(),
        );
    }
}
