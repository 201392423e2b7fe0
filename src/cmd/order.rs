//! `vault-seed order`: the Argo CD ordering check of rendered manifests (offline).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::cli::{GlobalArgs, OrderArgs};
use crate::exit::Exit;
use crate::order::findings::clean;
use crate::order::{self, Finding, Input, LoadError, Report, Rule, Severity, SpecEso};
use crate::report::{self, Format, Style};

/// The `-o json` document: the report with the command's name.
#[derive(Serialize)]
struct OrderJson<'a> {
    command: &'static str,
    #[serde(flatten)]
    report: &'a Report,
}

/// The `-o json` document when the input cannot be read (exit 2).
#[derive(Serialize)]
struct OrderFailure {
    command: &'static str,
    ok: bool,
    error: String,
    help: Option<String>,
    errors: Vec<String>,
}

/// Exit code of a finished check: 0 when no finding is an error, else 1.
fn exit_for(report: &Report) -> Exit {
    if report.ok {
        Exit::Success
    } else {
        Exit::Failure
    }
}

/// A problem with the command line or the input, with what to do.
struct Bad {
    error: String,
    help: String,
}

impl From<&LoadError> for Bad {
    fn from(e: &LoadError) -> Bad {
        Bad {
            error: e.to_string(),
            help: e.help().to_string(),
        }
    }
}

fn fail(g: &GlobalArgs, bad: &[Bad]) -> Exit {
    let style = Style::stderr(g.color);
    for (i, b) in bad.iter().enumerate() {
        // One help line per kind of problem is enough.
        let repeat = bad[..i].iter().any(|x| x.help == b.help);
        report::error(&style, &b.error, (!repeat).then_some(b.help.as_str()));
    }
    eprintln!(
        "{}: {} problem(s) in the input; nothing was checked",
        style.error("error"),
        bad.len()
    );
    if g.output == Format::Json {
        let doc = OrderFailure {
            command: "order",
            ok: false,
            error: bad.first().map(|b| b.error.clone()).unwrap_or_default(),
            help: bad.first().map(|b| b.help.clone()),
            errors: bad.iter().map(|b| b.error.clone()).collect(),
        };
        if let Err(e) = report::print_json(&doc) {
            eprintln!("error: cannot write to stdout: {e}");
        }
    }
    Exit::Usage
}

pub(super) fn run(g: &GlobalArgs, args: &OrderArgs) -> Exit {
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
        return fail(g, &bad);
    }
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    for (name, paths) in &apps {
        match order::load_app(name, paths, &mut stdin) {
            Ok(app) => input.apps.push(app),
            Err(errors) => bad.extend(errors.iter().map(Bad::from)),
        }
    }
    if let Some(path) = &args.applications {
        match order::load_applications(path) {
            Ok(a) => input.applications = Some(a),
            Err(errors) => bad.extend(errors.iter().map(Bad::from)),
        }
    }
    if let Some(path) = &args.argocd_cm {
        match order::load_argocd_cm(path) {
            Ok(cm) => input.argocd_cm = Some(cm),
            Err(errors) => bad.extend(errors.iter().map(Bad::from)),
        }
    }
    if !bad.is_empty() {
        return fail(g, &bad);
    }
    if let Some(env) = &args.env {
        let set = match super::load_specs(g) {
            Ok(set) => set,
            Err(exit) => return exit,
        };
        let plan = match set.plan(env, &[]) {
            Ok(plan) => plan,
            Err(d) => {
                eprint!("{}", d.render(&Style::stderr(g.color)));
                return Exit::Usage;
            }
        };
        for (spec, e) in &plan.specs {
            input.specs.push(SpecEso {
                spec: spec.name.clone(),
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
    match g.output {
        Format::Json => {
            if let Err(e) = report::print_json(&OrderJson {
                command: "order",
                report: &report,
            }) {
                eprintln!("error: cannot write to stdout: {e}");
                return Exit::Failure;
            }
        }
        Format::Human => print!("{}", render(&report, &Style::stdout(g.color))),
    }
    exit_for(&report)
}

fn severity_word(style: &Style, s: Severity) -> String {
    match s {
        Severity::Error => style.error("error"),
        Severity::Warning => style.warn("warning"),
        Severity::Note => style.bold("note"),
    }
}

fn render_finding(out: &mut String, style: &Style, f: &Finding) {
    use std::fmt::Write;
    let _ = writeln!(out, "  {}: {}", severity_word(style, f.severity), f.message);
    for d in &f.details {
        let _ = writeln!(out, "      {d}");
    }
    // A missing object's details name every reader with its place already.
    if let Some(c) = f.consumer.as_ref().filter(|_| f.rule != Rule::NoProducer) {
        if let (Some(file), Some(line)) = (&c.file, c.line) {
            let _ = writeln!(out, "    {} {}:{line}", style.dim("-->"), clean(file));
        }
    }
    if let Some(b) = &f.bootstrap {
        let _ = writeln!(
            out,
            "    {}: made by ExternalSecret {} of spec {}: `vault-seed apply {}` seeds its Vault paths, `vault-seed verify {}` checks it",
            style.bold("bootstrap"),
            clean(&b.external_secret),
            clean(&b.spec),
            clean(&b.env),
            clean(&b.env)
        );
    }
    if let Some(h) = &f.help {
        let _ = writeln!(out, "    {}: {h}", style.help("help"));
    }
}

/// Human output: findings grouped by app (Argo CD's configuration first), worst group first.
fn render(report: &Report, style: &Style) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let objects: usize = report.apps.iter().map(|a| a.objects).sum();
    let consumers: usize = report.apps.iter().map(|a| a.consumers).sum();
    let references: usize = report.apps.iter().map(|a| a.references).sum();
    let _ = writeln!(
        out,
        "vault-seed order: {} app(s), {objects} object(s), {consumers} workload(s) with {references} reference(s) to Secrets and ConfigMaps",
        report.apps.len()
    );
    if let Some(cm) = &report.argocd_cm {
        let _ = match &cm.key {
            Some(key) => writeln!(
                out,
                "argocd-cm ({}): app waves wait for Healthy (`{}`)",
                clean(&cm.file),
                clean(key)
            ),
            None => writeln!(
                out,
                "argocd-cm ({}): no health check for argoproj.io/Application",
                clean(&cm.file)
            ),
        };
    }
    let mut groups: BTreeMap<Option<&str>, Vec<&Finding>> = BTreeMap::new();
    for f in &report.findings {
        groups.entry(f.app.as_deref()).or_default().push(f);
    }
    let wave = |app: Option<&str>| {
        app.and_then(|a| report.apps.iter().find(|x| x.name == a))
            .and_then(|a| a.app_wave)
    };
    let mut order: Vec<(Option<&str>, Vec<&Finding>)> = groups.into_iter().collect();
    order.sort_by_key(|(app, fs)| {
        (
            fs.iter().map(|f| f.severity).min(),
            app.is_some(),
            wave(*app).map_or((1, 0), |w| (0, w)),
            *app,
        )
    });
    for (app, findings) in &order {
        let _ = writeln!(out);
        let _ = match app {
            None => writeln!(out, "{}", style.bold("Argo CD (all apps)")),
            Some(a) => writeln!(
                out,
                "{}",
                style.bold(&format!(
                    "app {}{}",
                    clean(a),
                    wave(Some(a)).map_or(String::new(), |w| format!(" (app wave {w})"))
                ))
            ),
        };
        for f in findings {
            render_finding(&mut out, style, f);
        }
    }
    let quiet: Vec<String> = report
        .apps
        .iter()
        .filter(|a| !order.iter().any(|(g, _)| *g == Some(a.name.as_str())))
        .map(|a| clean(&a.name).into_owned())
        .collect();
    if !quiet.is_empty() {
        let _ = writeln!(out, "\n{}: {}", style.ok("ok"), quiet.join(", "));
    }
    let s = &report.summary;
    let verdict = if report.ok {
        style.ok("the order holds")
    } else {
        style.error("a consumer may run before its producer")
    };
    let _ = writeln!(
        out,
        "\nresult: {} error(s), {} warning(s), {} note(s): {verdict}",
        s.errors, s.warnings, s.notes
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::findings::Summary;

    fn report(errors: usize) -> Report {
        Report {
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
        assert_eq!(exit_for(&report(0)).code(), 0);
        assert_eq!(exit_for(&report(2)).code(), 1);
        // Bad input is 2: `fail` is the only way out for it.
        let g = GlobalArgs {
            specs: "specs".into(),
            output: Format::Human,
            color: crate::report::ColorChoice::Never,
            verbose: 0,
            auth: Default::default(),
        };
        assert_eq!(
            fail(
                &g,
                &[Bad {
                    error: "x".into(),
                    help: "y".into()
                }]
            )
            .code(),
            2
        );
    }

    #[test]
    fn a_report_without_findings_says_the_order_holds() {
        let text = render(&report(0), &Style::plain());
        assert!(text.contains("result: 0 error(s), 3 warning(s), 1 note(s): the order holds"));
    }
}
