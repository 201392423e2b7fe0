//! `order`'s report: findings grouped by app (Argo CD's configuration first), worst group first,
//! or the JSON document `{"command": "order", ...the check's report}`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::diagnostics::SHOWN_MAX;
use super::{Format, Rendered, Report, Style, View};
use crate::base::text::escaped as clean;
use crate::order::{self, Finding, Rule, Severity};

/// The report of an order check.
pub struct OrderReport(pub order::Report);

/// The `-o json` document: the report with the command's name.
#[derive(Serialize)]
struct OrderJson<'a> {
    command: &'static str,
    #[serde(flatten)]
    report: &'a order::Report,
}

impl Report for OrderReport {
    /// Ok (exit 0) when no finding is an error.
    fn render(&self, view: &View) -> Rendered<'_> {
        match view.format {
            Format::Json => Rendered::json(
                &OrderJson {
                    command: "order",
                    report: &self.0,
                },
                self.0.ok,
            ),
            Format::Human => Rendered::text(render(&self.0, &view.out), self.0.ok),
        }
    }
}

fn severity_word(style: &Style, s: Severity) -> String {
    match s {
        Severity::Error => style.error("error"),
        Severity::Warning => style.warn("warning"),
        Severity::Note => style.bold("note"),
    }
}

/// How many detail lines of one finding are printed; the rest are counted.
const DETAILS_SHOWN: usize = 20;

fn render_finding(out: &mut String, style: &Style, f: &Finding) {
    use std::fmt::Write;
    // Names in the check's sentences come from manifests: every character that would act on
    // the terminal (controls, bidirectional controls) is shown escaped.
    let _ = writeln!(
        out,
        "  {}: {}",
        severity_word(style, f.severity),
        clean(&f.message)
    );
    for d in f.details.iter().take(DETAILS_SHOWN) {
        let _ = writeln!(out, "      {}", clean(d));
    }
    if let Some(more) = f
        .details
        .len()
        .checked_sub(DETAILS_SHOWN)
        .filter(|&n| n > 0)
    {
        let _ = writeln!(out, "      … and {more} more");
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
        let _ = writeln!(out, "    {}: {}", style.help("help"), clean(h));
    }
}

/// Human output: findings grouped by app (Argo CD's configuration first), worst group first.
#[allow(clippy::too_many_lines)] // one report laid out top to bottom as it prints
fn render(report: &order::Report, style: &Style) -> String {
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
    // The first findings in full, then how many more: a hostile input can make thousands.
    let mut left = SHOWN_MAX;
    for (app, findings) in &order {
        if left == 0 {
            break;
        }
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
        for f in findings.iter().take(left) {
            render_finding(&mut out, style, f);
        }
        left -= findings.len().min(left);
    }
    if let Some(more) = report
        .findings
        .len()
        .checked_sub(SHOWN_MAX)
        .filter(|&n| n > 0)
    {
        let _ = writeln!(
            out,
            "\n… and {more} more findings (`-o json` lists them all)"
        );
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
    let only_unchecked = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .all(|f| f.rule.not_checked());
    let verdict = if report.ok {
        style.ok("the order holds")
    } else if only_unchecked {
        style.error("not checked: some workloads' pod templates cannot be read")
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

    #[test]
    fn a_report_without_findings_says_the_order_holds() {
        let report = order::Report {
            ok: true,
            apps: Vec::new(),
            argocd_cm: None,
            findings: Vec::new(),
            summary: Summary {
                errors: 0,
                warnings: 3,
                notes: 1,
            },
        };
        let text = render(&report, &Style::plain());
        assert!(text.contains("result: 0 error(s), 3 warning(s), 1 note(s): the order holds"));
    }
}
