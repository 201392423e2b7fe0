//! `lint`'s report: one line per valid spec, or the JSON document `{"ok", "specs", "errors"}`.
//! Invalid specs are a failure (`crate::base::failure::Failure::specs`), not a report.

use serde::Serialize;

use super::{Format, Rendered, Report, View};
use crate::spec::{Diagnostic, SpecSet};

/// Every spec of a directory, valid.
#[derive(Serialize)]
pub struct LintReport {
    /// Always true: invalid specs are a failure.
    pub ok: bool,
    /// One summary per spec file.
    pub specs: Vec<SpecSummary>,
    /// Always empty here (the failure lists them).
    pub errors: Vec<Diagnostic>,
}

/// One spec file.
#[derive(Serialize)]
pub struct SpecSummary {
    /// The file.
    pub file: String,
    /// The application's name.
    pub name: String,
    /// Its environments.
    pub environments: Vec<String>,
    /// Its secrets.
    pub secrets: usize,
    /// Their fields.
    pub fields: usize,
}

impl LintReport {
    /// The report of a valid set of specs.
    pub fn of(set: &SpecSet) -> LintReport {
        LintReport {
            ok: true,
            specs: set
                .specs
                .iter()
                .map(|s| SpecSummary {
                    file: s.file.display().to_string(),
                    name: s.name.to_string(),
                    environments: s.environments.keys().cloned().collect(),
                    secrets: s.secrets.len(),
                    fields: s.secrets.iter().map(|x| x.fields.len()).sum(),
                })
                .collect(),
            errors: Vec::new(),
        }
    }
}

impl Report for LintReport {
    fn render(&self, view: &View) -> Rendered<'_> {
        if view.format == Format::Json {
            return Rendered::json(self, true);
        }
        let mut out = String::new();
        for s in &self.specs {
            out.push_str(&format!(
                "{} {}: `{}`, {} secret(s), {} field(s), environments: {}\n",
                view.out.ok("ok"),
                s.file,
                s.name,
                s.secrets,
                s.fields,
                s.environments.join(", ")
            ));
        }
        Rendered::text(out, true)
    }
}
