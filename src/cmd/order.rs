//! `vault-seed order`: the Argo CD ordering check of rendered manifests (offline).

use std::path::Path;

use crate::app::cli::{GlobalArgs, OrderArgs};
use crate::order::findings::clean;
use crate::order::{self, Input, LoadError, SpecEso};
use crate::report::ordering::OrderReport;

use super::Failure;

/// A problem with the command line or the input, with what to do.
struct Bad {
    error: String,
    help: String,
}

impl From<&LoadError> for Bad {
    fn from(e: &LoadError) -> Bad {
        Bad {
            error: e.to_string(),
            help: e.help().unwrap_or_default(),
        }
    }
}

/// Bad input: exit 2, nothing was checked. One help line per kind of problem is enough.
fn fail(bad: Vec<Bad>) -> Failure {
    let n = bad.len();
    let mut helps: Vec<String> = Vec::new();
    let problems = bad
        .into_iter()
        .map(|b| {
            let repeat = helps.contains(&b.help);
            if !repeat {
                helps.push(b.help.clone());
            }
            // Names quoted from the input: shown escaped (controls, bidirectional controls).
            let error = crate::base::text::escaped(&b.error).into_owned();
            (error, (!repeat).then_some(b.help))
        })
        .collect();
    Failure::several(
        problems,
        format!("{n} problem(s) in the input; nothing was checked"),
    )
}

#[allow(clippy::too_many_lines)] // one command's steps in the order they run
pub(super) fn run(g: &GlobalArgs, args: &OrderArgs) -> Result<OrderReport, Failure> {
    let mut bad: Vec<Bad> = Vec::new();
    // `--app NAME=PATH`, grouped by name in the order first given.
    let mut apps: Vec<(String, Vec<&Path>)> = Vec::new();
    for a in &args.apps {
        match a.split_once('=') {
            Some((name, path)) if !name.is_empty() && !path.is_empty() => {
                match apps.iter_mut().find(|(n, _)| n == name) {
                    Some((_, paths)) => paths.push(Path::new(path)),
                    None => apps.push((name.to_string(), vec![Path::new(path)])),
                }
            }
            _ => bad.push(Bad {
                error: format!("`--app {}` is not NAME=PATH", clean(a)),
                help:
                    "name the app as its Application is named: `--app core-service=rendered.yaml`"
                        .into(),
            }),
        }
    }
    if apps
        .iter()
        .flat_map(|(_, p)| p)
        .filter(|p| **p == Path::new("-"))
        .count()
        > 1
    {
        bad.push(Bad {
            error: "stdin (`-`) is given for more than one `--app`".into(),
            help: "read one app from stdin, the others from files".into(),
        });
    }
    let mut input = Input::default();
    for e in &args.exists {
        match order::parse_exists(e) {
            Ok(x) => input.exists.push(x),
            Err(error) => bad.push(Bad {
                error,
                help: "name an object made outside these apps as `Secret/ask/core-pg-superuser`"
                    .into(),
            }),
        }
    }
    if !bad.is_empty() {
        return Err(fail(bad));
    }
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    // One budget for every file: the bound is on the input as a whole.
    let budget = order::Budget::default();
    for (name, paths) in &apps {
        match order::load_app(name, paths, &mut stdin, &budget) {
            Ok(app) => input.apps.push(app),
            Err(errors) => bad.extend(errors.iter().map(Bad::from)),
        }
    }
    if let Some(path) = &args.applications {
        match order::load_applications(path, &budget) {
            Ok(a) => input.applications = Some(a),
            Err(errors) => bad.extend(errors.iter().map(Bad::from)),
        }
    }
    if let Some(path) = &args.argocd_cm {
        match order::load_argocd_cm(path, &budget) {
            Ok(cm) => input.argocd_cm = Some(cm),
            Err(errors) => bad.extend(errors.iter().map(Bad::from)),
        }
    }
    if !bad.is_empty() {
        return Err(fail(bad));
    }
    if let Some(env) = &args.env {
        let set = super::load_specs(g)?;
        let plan = set.plan(env, &[])?;
        for (spec, e) in &plan.specs {
            input.specs.push(SpecEso {
                spec: spec.name.to_string(),
                env: env.clone(),
                namespace: e
                    .kube_namespace
                    .clone()
                    .or_else(|| spec.eso.namespace.clone()),
                external_secrets: spec.eso.external_secrets.clone(),
            });
        }
    }

    let started = std::time::Instant::now();
    let report = order::check(&input);
    tracing::info!(
        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
        findings = report.findings.len(),
        "order check done"
    );
    Ok(OrderReport(report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::exit::Exit;
    use crate::order::findings::Summary;
    use crate::report::{Format, Report, Style, View};

    fn report(errors: usize) -> crate::order::Report {
        crate::order::Report {
            ok: errors == 0,
            apps: Vec::new(),
            argocd_cm: None,
            findings: Vec::new(),
            summary: Summary {
                errors,
                warnings: 3,
                notes: 1,
            },
        }
    }

    #[test]
    fn exit_codes_are_the_documented_ones() {
        let view = View {
            format: Format::Human,
            out: Style::plain(),
            err: Style::plain(),
            verbose: 0,
        };
        let exit = |r| Exit::of(OrderReport(r).render(&view).ok);
        assert_eq!(exit(report(0)).code(), 0);
        assert_eq!(exit(report(2)).code(), 1);
        // Bad input is 2: `fail` is the only way out for it.
        assert_eq!(
            fail(vec![Bad {
                error: "x".into(),
                help: "y".into()
            }])
            .exit
            .code(),
            2
        );
    }
}
