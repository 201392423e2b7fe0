//! `plan`'s and `apply`'s report: a table of every path and field with its outcome and a
//! summary, or the JSON document `{"command", "env", "vault_addr", "dry_run", "interrupted",
//! "ok", "results", "notes", "summary"}`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io;

use serde::Serialize;

use super::{error_text, Format, Rendered, Report, Style, View};
use crate::replace::selector;
use crate::seed::{FieldResult, Outcome, PathResult, Run, Summary};

/// The report of a `plan` or `apply` run.
pub struct SeedReport {
    /// `plan` or `apply`.
    pub command: &'static str,
    /// The environment.
    pub env: String,
    /// Vault's address.
    pub vault_addr: String,
    /// `plan`: nothing was written.
    pub dry_run: bool,
    /// What the run found and did.
    pub run: Run,
    /// Secret names more than one application of the environment uses (for the `set` hints).
    pub shared_names: BTreeSet<String>,
}

/// One row of the JSON report: a path and field.
#[derive(Serialize)]
struct JsonRow<'a> {
    path: String,
    mount: &'a str,
    spec: String,
    field: &'a str,
    generator: &'a str,
    outcome: &'static str,
    version: Option<u64>,
    written: bool,
    detail: Option<&'a str>,
    /// The provider, in words, of a path another application provides; else null.
    provided_by: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    command: &'a str,
    env: &'a str,
    vault_addr: &'a str,
    dry_run: bool,
    interrupted: bool,
    ok: bool,
    results: Rows<'a>,
    notes: &'a [String],
    summary: Summary,
}

/// The rows of the JSON report, serialised one at a time as stdout takes them.
struct Rows<'a>(&'a SeedReport);

impl Serialize for Rows<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let report = self.0;
        s.collect_seq(report.run.paths.iter().flat_map(|p| {
            p.fields.iter().map(move |f| JsonRow {
                path: p.target.full_path(),
                mount: &p.target.mount,
                spec: p.target.spec_file.display().to_string(),
                field: &f.field,
                generator: &f.generator,
                outcome: f.outcome.label(report.dry_run),
                version: p.version,
                written: p.written,
                detail: f.detail.as_deref().or(p.detail.as_deref()),
                provided_by: p.target.provided.as_ref().map(|x| x.by.as_str()),
            })
        }))
    }
}

impl Report for SeedReport {
    fn render(&self, view: &View) -> Rendered<'_> {
        let run = &self.run;
        let summary = Summary::of(&run.paths);
        let ok = !summary.failed() && !run.interrupted;
        let before: String = run
            .notes
            .iter()
            .map(|n| format!("{}: {n}\n", view.err.help("note")))
            .collect();
        let after = if run.interrupted {
            error_text(
                &view.err,
                "interrupted: some paths were not attempted",
                Some("run the same command again to finish; nothing is written twice"),
            )
        } else {
            String::new()
        };
        let rendered = match view.format {
            Format::Json => Rendered::stream(
                move |out| {
                    super::json_to(
                        &JsonReport {
                            command: self.command,
                            env: &self.env,
                            vault_addr: &self.vault_addr,
                            dry_run: self.dry_run,
                            interrupted: run.interrupted,
                            ok,
                            results: Rows(self),
                            notes: &run.notes,
                            summary: summary.clone(),
                        },
                        out,
                    )
                },
                ok,
            ),
            Format::Human => {
                let style = view.out;
                Rendered::stream(move |out| self.table(&style, &summary, out), ok)
            }
        };
        rendered.with_before(before).with_after(after)
    }
}

impl SeedReport {
    /// One row of the table for a path's field: outcome, path, field, generator, version,
    /// detail.
    fn row<'a>(
        &self,
        p: &'a PathResult,
        f: &'a FieldResult,
    ) -> (Outcome, String, &'a str, &'a str, String, String) {
        let version = p.version.map(|v| format!("v{v}")).unwrap_or_default();
        let placeholder_hint = f.generator == "placeholder"
            && matches!(f.outcome, Outcome::Created | Outcome::Pending);
        let provided = p.target.provided.as_ref().map(|x| x.by.as_str());
        let detail = match (f.outcome, provided) {
            (Outcome::ProvidedPresent, _) => Some(format!(
                "provided: {}",
                f.detail.as_deref().unwrap_or("present")
            )),
            (Outcome::ProvidedAbsent, Some(by)) => Some(format!(
                "provided: absent (waiting for {by}){}",
                f.detail
                    .as_deref()
                    .map(|d| format!("; {d}"))
                    .unwrap_or_default()
            )),
            _ => None,
        };
        let detail = detail
            .or_else(|| f.detail.clone())
            .or_else(|| p.detail.clone())
            .or_else(|| {
                placeholder_hint.then(|| {
                    format!(
                        "fill in after deploy: vault-seed set {} {} < value.txt",
                        self.env,
                        selector(&p.target, &f.field, &self.shared_names)
                    )
                })
            });
        (
            f.outcome,
            p.target.full_path(),
            f.field.as_str(),
            f.generator.as_str(),
            version,
            detail.unwrap_or_default(),
        )
    }

    /// The table, written row by row: a first pass measures the columns, a second writes
    /// them, so no row is held (100,000 paths are a few megabytes of text).
    fn table(&self, style: &Style, s: &Summary, out: &mut dyn io::Write) -> io::Result<()> {
        let dry_run = self.dry_run;
        let fields = || {
            self.run
                .paths
                .iter()
                .flat_map(|p| p.fields.iter().map(move |f| (p, f)))
        };
        let (mut w_path, mut w_field, mut w_gen) = (0, 0, 0);
        for (p, f) in fields() {
            w_path = w_path.max(p.target.mount.len() + 1 + p.target.path.len());
            w_field = w_field.max(f.field.len());
            w_gen = w_gen.max(f.generator.len());
        }
        for (p, f) in fields() {
            let (o, path, field, gen, version, detail) = self.row(p, f);
            let word = match o {
                Outcome::ProvidedPresent | Outcome::ProvidedAbsent => "provided",
                o => o.label(dry_run),
            };
            let label = format!("{word:<9}");
            let label = if o.is_failure() {
                style.error(&label)
            } else if matches!(o, Outcome::Pending | Outcome::ProvidedAbsent) {
                style.warn(&label)
            } else if matches!(o, Outcome::Exists | Outcome::ProvidedPresent) {
                label
            } else {
                style.ok(&label)
            };
            let line = format!(
                "{label} {path:<w_path$}  {field:<w_field$}  {gen:<w_gen$}  {version:<4} {detail}"
            );
            writeln!(out, "{}", line.trim_end())?;
        }
        let mut tail = String::new();
        let verb =
            |n: usize, done: &str, todo: &str| format!("{n} {}", if dry_run { todo } else { done });
        let _ = writeln!(
            tail,
            "{}: {} path(s), {} field(s): {}, {} exist, {} pending, {}, {}, {} invalid, {} denied, {} error(s){}",
            style.bold(if dry_run { "plan" } else { "summary" }),
            s.paths,
            s.fields,
            verb(s.created, "created", "to create"),
            s.exists,
            s.pending,
            verb(s.recreated, "recreated", "to recreate"),
            verb(s.extended, "extended", "to extend"),
            s.invalid,
            s.denied,
            s.error,
            if s.skipped > 0 { format!(", {} skipped", s.skipped) } else { String::new() }
        );
        if s.provided_present + s.provided_absent > 0 {
            let _ = writeln!(
                tail,
                "provided by other applications (never written): {} field(s) present, {} absent",
                s.provided_present, s.provided_absent
            );
        }
        for p in self.run.paths.iter().filter(|p| {
            p.fields
                .iter()
                .any(|f| f.outcome == Outcome::ProvidedAbsent)
        }) {
            let by = p.target.provided.as_ref().map_or("", |x| x.by.as_str());
            let _ = writeln!(
                tail,
                "  {}: {} (provided by {by})",
                style.warn("waiting"),
                p.target.full_path()
            );
        }
        if dry_run {
            let _ = writeln!(tail, "nothing was written (plan)");
        }
        out.write_all(tail.as_bytes())
    }
}
