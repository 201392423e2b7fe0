//! `vault-seed lint`: validate every spec offline.

use serde::Serialize;

use crate::cli::GlobalArgs;
use crate::exit::Exit;
use crate::report::{self, Format, Style};
use crate::spec::{self, Diagnostic, LoadError};

#[derive(Serialize)]
struct LintReport<'a> {
    ok: bool,
    specs: Vec<SpecSummary>,
    errors: &'a [Diagnostic],
}

#[derive(Serialize)]
struct SpecSummary {
    file: String,
    name: String,
    environments: Vec<String>,
    secrets: usize,
    fields: usize,
}

pub(super) fn run(g: &GlobalArgs) -> Exit {
    let result = spec::load_dir(&g.specs);
    match (&result, g.output) {
        (Ok(set), Format::Human) => {
            let style = Style::stdout(g.color);
            for s in &set.specs {
                let fields: usize = s.secrets.iter().map(|x| x.fields.len()).sum();
                println!(
                    "{} {}: `{}`, {} secret(s), {} field(s), environments: {}",
                    style.ok("ok"),
                    s.file.display(),
                    s.name,
                    s.secrets.len(),
                    fields,
                    s.environments
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            Exit::Success
        }
        (Ok(set), Format::Json) => {
            let specs = set
                .specs
                .iter()
                .map(|s| SpecSummary {
                    file: s.file.display().to_string(),
                    name: s.name.clone(),
                    environments: s.environments.keys().cloned().collect(),
                    secrets: s.secrets.len(),
                    fields: s.secrets.iter().map(|x| x.fields.len()).sum(),
                })
                .collect();
            emit_json(&LintReport {
                ok: true,
                specs,
                errors: &[],
            });
            Exit::Success
        }
        (Err(e), format) => {
            if let (LoadError::Invalid(diags), Format::Json) = (e, format) {
                emit_json(&LintReport {
                    ok: false,
                    specs: Vec::new(),
                    errors: diags,
                });
            }
            super::print_load_error(g, e);
            Exit::Usage
        }
    }
}

fn emit_json<T: Serialize>(v: &T) {
    if let Err(e) = report::print_json(v) {
        eprintln!("error: cannot write to stdout: {e}");
    }
}
