//! `plan`'s and `apply`'s report: a table of every path and field with its outcome and a
//! summary, or the JSON document `{"command", "env", "vault_addr", "dry_run", "results",
//! "interrupted", "ok", "notes", "findings", "summary"}`, written while the run goes.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{self, Write as _};

use serde::Serialize;

use super::{error_text, Ending, Format, JsonObject, Style, View};
use crate::base::codes::Code;
use crate::seed::{FieldResult, Outcome, PathResult, Run, Sink, Summary};
use crate::spec::Target;
use crate::verify::findings::said;
use crate::write::replace::selector;

/// The report of a `plan` or `apply` run, written while the run goes: the command hands each
/// path's result to [`SeedReport::rows`] (a [`Sink`]) as soon as it has them in order, and the
/// rows are written at once, then the summary ([`Rows::finish`]). No result is held once
/// written: memory does not grow with the results.
pub struct SeedReport {
    /// `plan` or `apply`.
    pub command: &'static str,
    /// The environment.
    pub env: String,
    /// Vault's address.
    pub vault_addr: String,
    /// `plan`: nothing was written.
    pub dry_run: bool,
    /// Secret names more than one application of the environment uses (for the `set` hints).
    pub shared_names: BTreeSet<String>,
    /// The table's columns, measured on the targets before the run.
    widths: Widths,
}

/// The widths of the table's path, field and generator columns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Widths {
    path: usize,
    field: usize,
    generator: usize,
}

impl Widths {
    /// Measured on the targets, whose fields are the rows' (a row's field and generator are its
    /// target's).
    fn of(targets: &[Target]) -> Widths {
        let mut w = Widths::default();
        for t in targets {
            w.path = w.path.max(t.mount().len() + 1 + t.path.len());
            for f in t.fields.iter() {
                w.field = w.field.max(f.name.len());
                w.generator = w.generator.max(f.generator.to_string().len());
            }
        }
        w
    }
}

impl SeedReport {
    /// The report of a run on `targets`.
    pub fn new(
        command: &'static str,
        env: String,
        vault_addr: String,
        dry_run: bool,
        shared_names: BTreeSet<String>,
        targets: &[Target],
    ) -> SeedReport {
        SeedReport {
            command,
            env,
            vault_addr,
            dry_run,
            shared_names,
            widths: Widths::of(targets),
        }
    }

    /// Where the run puts its results: written to `out` as `view` asks, as they come.
    pub fn rows<'r, 'o>(&'r self, view: View, out: &'o mut dyn io::Write) -> Rows<'r, 'o> {
        Rows {
            report: self,
            view,
            out: Out::Fresh(out),
            error: None,
            summary: Summary::default(),
            unflushed: false,
        }
    }
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
    /// The outcome's stable code (`docs/errors.md`), the same for `plan` and `apply`.
    code: &'static str,
    version: Option<u64>,
    written: bool,
    detail: Option<&'a str>,
    /// The provider, in words, of a path another application provides; else null.
    provided_by: Option<&'a str>,
}

/// Where the rows go as the run hands them on: written at once and counted.
pub struct Rows<'r, 'o> {
    report: &'r SeedReport,
    view: View,
    out: Out<'o>,
    /// Why stdout stopped taking rows; the run goes on to its end.
    error: Option<io::Error>,
    summary: Summary,
    /// Rows were written since stdout was last flushed.
    unflushed: bool,
}

/// stdout, as the rows have it.
enum Out<'o> {
    /// Nothing written yet: a JSON document is opened with the first result, so that a run that
    /// fails before any (a refused token) has only its failure document on stdout.
    Fresh(&'o mut dyn io::Write),
    /// The table.
    Table(&'o mut dyn io::Write),
    /// The JSON document, its `results` list open.
    Json(JsonObject<'o>),
    /// Between two of the above.
    Moving,
}

impl Sink for Rows<'_, '_> {
    fn path(&mut self, p: PathResult) {
        self.summary.add(&p);
        if self.error.is_none() {
            self.unflushed = true;
            if let Err(e) = self.write(&p) {
                self.error = Some(e);
            }
        }
    }

    fn idle(&mut self) {
        if self.unflushed && self.error.is_none() {
            self.unflushed = false;
            let flushed = match &mut self.out {
                Out::Fresh(out) | Out::Table(out) => out.flush(),
                Out::Json(doc) => doc.flush(),
                Out::Moving => Ok(()),
            };
            if let Err(e) = flushed {
                self.error = Some(e);
            }
        }
    }
}

impl<'o> Rows<'_, 'o> {
    /// stdout, the JSON document opened or the table begun.
    fn started(&mut self) -> io::Result<&mut Out<'o>> {
        if let Out::Fresh(_) = self.out {
            let Out::Fresh(out) = std::mem::replace(&mut self.out, Out::Moving) else {
                unreachable!()
            };
            self.out = match self.view.format {
                Format::Human => Out::Table(out),
                Format::Json => {
                    let r = self.report;
                    let mut doc = JsonObject::begin(out)?;
                    doc.member("command", r.command)?;
                    doc.member("env", &r.env)?;
                    doc.member("vault_addr", &r.vault_addr)?;
                    doc.member("dry_run", &r.dry_run)?;
                    doc.begin_list("results")?;
                    Out::Json(doc)
                }
            };
        }
        Ok(&mut self.out)
    }

    fn write(&mut self, p: &PathResult) -> io::Result<()> {
        let report = self.report;
        let style = self.view.out;
        match self.started()? {
            Out::Json(doc) => {
                for f in &p.fields {
                    doc.item(&JsonRow {
                        path: p.target.full_path(),
                        mount: p.target.mount(),
                        spec: p.target.spec_file().display().to_string(),
                        field: &f.field,
                        generator: &f.generator,
                        outcome: f.outcome.label(report.dry_run),
                        code: f.outcome.code(),
                        version: p.version,
                        written: p.written,
                        detail: f.detail.as_deref().or(p.detail.as_deref()),
                        provided_by: p.target.provided.as_ref().map(|x| x.by.as_str()),
                    })?;
                }
            }
            Out::Table(out) => {
                for f in &p.fields {
                    writeln!(out, "{}", report.line(&style, p, f))?;
                }
            }
            Out::Fresh(_) | Out::Moving => unreachable!("started"),
        }
        Ok(())
    }

    /// The run's end: the summary written after the rows; the notes and what is left to do.
    pub fn finish(mut self, run: &Run) -> Ending {
        let ok = !self.summary.failed() && !run.interrupted;
        if self.error.is_none() {
            if let Err(e) = self.end(run, ok) {
                self.error = Some(e);
            }
        }
        let err = self.view.err;
        Ending {
            notes: run
                .notes
                .iter()
                .map(|n| format!("{}: {}\n", err.help("note"), n.message()))
                .collect(),
            after: if run.interrupted {
                error_text(
                    &err,
                    "interrupted: some paths were not attempted",
                    Some("run the same command again to finish; nothing is written twice"),
                )
            } else {
                String::new()
            },
            ok,
            stdout: self.error,
        }
    }

    fn end(&mut self, run: &Run, ok: bool) -> io::Result<()> {
        match std::mem::replace(self.started()?, Out::Moving) {
            Out::Json(mut doc) => {
                doc.end_list()?;
                doc.member("interrupted", &run.interrupted)?;
                doc.member("ok", &ok)?;
                let (notes, findings) = said(&run.notes);
                doc.member("notes", &notes)?;
                doc.member("findings", &findings)?;
                doc.member("summary", &self.summary)?;
                doc.end()
            }
            Out::Table(out) => {
                let tail = self.report.tail(&self.view.out, &self.summary);
                out.write_all(tail.as_bytes())
            }
            Out::Fresh(_) | Out::Moving => unreachable!("started"),
        }
    }
}

impl SeedReport {
    /// The table's line for a path's field: outcome, path, field, generator, version, detail.
    fn line(&self, style: &Style, p: &PathResult, f: &FieldResult) -> String {
        let version = p.version.map(|v| format!("v{v}")).unwrap_or_default();
        let waiting = matches!(f.outcome, Outcome::Created | Outcome::Pending);
        let placeholder_hint = f.generator == "placeholder" && waiting;
        // The import marker: the component writes the value to its Secret after deploy.
        let import_hint = f.generator == "from_secret" && waiting;
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
                import_hint.then(|| format!("after deploy: vault-seed import {}", self.env))
            })
            .or_else(|| {
                placeholder_hint.then(|| {
                    let before_sync = p
                        .target
                        .fields
                        .iter()
                        .any(|x| x.name == f.field && x.before_sync);
                    format!(
                        "fill in {}: vault-seed set {} {} < value.txt",
                        if before_sync {
                            "before the first sync (needed = \"before-sync\")"
                        } else {
                            "after deploy"
                        },
                        self.env,
                        selector(&p.target, &f.field, &self.shared_names)
                    )
                })
            })
            .unwrap_or_default();
        let o = f.outcome;
        let word = match o {
            Outcome::ProvidedPresent | Outcome::ProvidedAbsent => "provided",
            o => o.label(self.dry_run),
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
        let path = p.target.full_path();
        let (field, gen) = (&f.field, &f.generator);
        let Widths {
            path: w_path,
            field: w_field,
            generator: w_gen,
        } = self.widths;
        let line = format!(
            "{label} {path:<w_path$}  {field:<w_field$}  {gen:<w_gen$}  {version:<4} {detail}"
        );
        line.trim_end().to_string()
    }

    /// The lines after the table: the summary, the count of provided paths, and for `plan` that
    /// nothing was written. Each provided path's row already names its provider and whether it
    /// waits for it, so the summary counts them and does not list them again.
    fn tail(&self, style: &Style, s: &Summary) -> String {
        let dry_run = self.dry_run;
        let mut tail = String::new();
        let verb =
            |n: usize, done: &str, todo: &str| format!("{n} {}", if dry_run { todo } else { done });
        let _ = writeln!(
            tail,
            "{}: {} path(s), {} field(s): {}, {} exist, {} pending{}, {}, {}, {} invalid, {} denied, {} error(s){}",
            style.bold(if dry_run { "plan" } else { "summary" }),
            s.paths,
            s.fields,
            verb(s.created, "created", "to create"),
            s.exists,
            s.pending,
            match (s.pending_written, dry_run) {
                (0, _) => String::new(),
                (n, false) => format!(" ({n} written now: placeholders to fill in)"),
                (n, true) => format!(" ({n} to write: placeholders to fill in)"),
            },
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
        if dry_run {
            let _ = writeln!(tail, "nothing was written (plan)");
        }
        tail
    }
}
