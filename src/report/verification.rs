//! `verify`'s report: each part's verdict and what to do, or the JSON document
//! `{"command": "verify", "env", "ok", "strict", "vault", "policy", "kube", "argocd", "notes"}`.

use std::fmt::Write;
use std::io;

use serde::Serialize;

use super::text::for_terminal as t;
use super::{gaps, Format, Rendered, Report, Style, View};
use crate::seed::Status;
use crate::verify::argocd::ArgocdPart;
use crate::verify::cluster::ClusterPart;
use crate::verify::grants::{GrantsPart, PolicyPart};
use crate::verify::values::ValuesPart;
use crate::verify::{Checked, PartFailure, Verification};

/// The report of a verification.
pub struct VerifyReport(pub Verification);

#[derive(Serialize)]
struct Doc<'a> {
    command: &'static str,
    #[serde(flatten)]
    verification: &'a Verification,
}

impl Report for VerifyReport {
    fn render(&self, view: &View) -> Rendered<'_> {
        let v = &self.0;
        if view.format == Format::Json {
            // Written as it is serialised: the document lists every path and field.
            return Rendered::stream(
                move |out| {
                    super::json_to(
                        &Doc {
                            command: "verify",
                            verification: v,
                        },
                        out,
                    )
                },
                v.ok,
            );
        }
        // Written as it is made: the part `vault` has a line per field not valid (100,000
        // placeholders are 100,000 lines).
        let (style, verbose) = (view.out, view.verbose > 0);
        let notes: String = v
            .notes
            .iter()
            .map(|n| format!("note: {}\n", t(n)))
            .collect();
        Rendered::stream(move |out| text(out, &style, v, verbose), v.ok).with_after(notes)
    }
}

/// The text report, each part's lines written as they are made.
fn text(out: &mut dyn io::Write, style: &Style, v: &Verification, verbose: bool) -> io::Result<()> {
    match &v.vault {
        Some(Checked::Done(p)) => values(out, style, &v.env, p)?,
        Some(Checked::Failed(f)) => {
            let mut s = String::new();
            failed(&mut s, style, "vault", f);
            out.write_all(s.as_bytes())?;
        }
        None => {}
    }
    let mut rest = String::new();
    match &v.policy {
        Some(Checked::Done(p)) => policy(&mut rest, style, p, verbose),
        Some(Checked::Failed(f)) => failed(&mut rest, style, "policy", f),
        None => {}
    }
    match &v.kube {
        Some(Checked::Done(k)) => cluster(&mut rest, style, k),
        Some(Checked::Failed(f)) => failed(&mut rest, style, "kube", f),
        None => {}
    }
    match &v.argocd {
        Some(Checked::Done(a)) => argocd(&mut rest, style, a),
        Some(Checked::Failed(f)) => failed(&mut rest, style, "argocd", f),
        None => {}
    }
    let _ = writeln!(
        rest,
        "verify {}: {}",
        v.env,
        if v.ok {
            style.ok("done")
        } else {
            style.error("NOT done")
        }
    );
    out.write_all(rest.as_bytes())
}

fn mark(style: &Style, ok: bool) -> String {
    if ok {
        style.ok("ok  ")
    } else {
        style.error("FAIL")
    }
}

// Every string that comes from a server or the cluster goes through `t` (control characters
// out, length capped) before it reaches the terminal.

fn failed(out: &mut String, style: &Style, name: &str, f: &PartFailure) {
    // Our messages may hold a second line: keep it, each line cleaned.
    let mut lines = f.error.lines().map(t);
    let _ = writeln!(
        out,
        "{} {name}: {}",
        mark(style, false),
        lines.next().unwrap_or_default()
    );
    for line in lines {
        let _ = writeln!(out, "     {line}");
    }
    if let Some(h) = &f.help {
        let _ = writeln!(out, "     {}: {}", style.help("help"), t(h));
    }
}

fn values(out: &mut dyn io::Write, style: &Style, env: &str, v: &ValuesPart) -> io::Result<()> {
    let counts: Vec<String> = v.counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    writeln!(
        out,
        "{} vault: {} field(s): {}",
        mark(style, v.ok),
        v.fields(),
        counts.join(", ")
    )?;
    for row in v.rows().filter(|x| x.status != Status::Valid) {
        let hint = match (row.status, row.provided_by) {
            (Status::Missing | Status::Deleted, Some(by)) => {
                format!("waiting for {}: vault-seed never writes it", t(by))
            }
            (Status::Invalid, Some(by)) => format!(
                "{}; provided by {}: vault-seed never changes it",
                t(row.detail.unwrap_or_default()),
                t(by)
            ),
            (Status::Pending, _) => {
                format!("fill in: vault-seed set {env} {} < value.txt", row.set_as())
            }
            (Status::Missing | Status::Deleted, None) => format!("run: vault-seed apply {env}"),
            _ => t(row.detail.unwrap_or_default()),
        };
        writeln!(
            out,
            "       {:<8} {}  {}  {hint}",
            row.status.as_str(),
            row.path,
            row.field
        )?;
    }
    Ok(())
}

/// ESO's grants, then VSO's, each under its own line (`policy:` alone when only ESO counts, as
/// before VSO was known).
fn policy(out: &mut String, style: &Style, p: &PolicyPart, verbose: bool) {
    let mut operators = p.operators().peekable();
    if operators.peek().is_none() {
        grants(out, style, &p.eso, "policy", verbose);
    }
    for g in operators {
        let title = match (&p.vso, g.operator) {
            (None, _) => "policy".to_string(),
            (Some(_), who) => format!("policy ({})", who.name()),
        };
        grants(out, style, g, &title, verbose);
    }
}

fn grants(out: &mut String, style: &Style, p: &GrantsPart, title: &str, verbose: bool) {
    let _ = writeln!(
        out,
        "{} {title}: {} ({})",
        mark(style, p.ok),
        if p.policies.is_empty() {
            "no policy".to_string()
        } else {
            t(&format!("`{}`", p.policies.join("`, `")))
        },
        p.method.describe(p.operator)
    );
    for n in &p.notes {
        let _ = writeln!(out, "       note: {}", t(n));
    }
    for e in &p.errors {
        let _ = writeln!(out, "       {}: {}", style.error("error"), t(e));
    }
    if let Some(h) = &p.help {
        let _ = writeln!(out, "       {}: {}", style.help("help"), t(h));
    }
    if !p.report.ok {
        for line in gaps::render(&p.report, &p.policies, style, verbose).lines() {
            if line.is_empty() {
                let _ = writeln!(out);
            } else {
                let _ = writeln!(out, "       {line}");
            }
        }
    }
}

/// An object's problems, then why (`why:`), then notes (`note:`), under its line.
fn details(out: &mut String, problems: &[String], why: &[String], notes: &[String]) {
    for p in problems {
        let _ = writeln!(out, "            {}", t(p));
    }
    for x in why {
        let _ = writeln!(out, "            why: {}", t(x));
    }
    for n in notes {
        let _ = writeln!(out, "            note: {}", t(n));
    }
}

fn cluster(out: &mut String, style: &Style, k: &ClusterPart) {
    let _ = writeln!(
        out,
        "{} kube: {} ({})",
        mark(style, k.ok),
        t(&k.server),
        t(k.context.as_deref().unwrap_or("in-cluster"))
    );
    for es in &k.eso.external_secrets {
        let state = match (es.ready, &es.reason) {
            (Some(true), Some(reason)) => format!("Ready ({})", t(reason)),
            (_, Some(reason)) => format!("not Ready ({})", t(reason)),
            _ => "no status".into(),
        };
        let _ = writeln!(
            out,
            "     {} ExternalSecret {}/{}: {state}",
            mark(style, es.ok),
            t(&es.namespace),
            t(&es.name)
        );
        details(out, &es.problems, &es.explanations, &[]);
    }
    for v in &k.vault_static_secrets {
        let state = match (v.synced, v.ready.or(v.healthy)) {
            (true, _) => "synced".to_string(),
            (false, Some(_)) if v.generation > v.last_generation => "not reconciled".into(),
            (false, Some(_)) => "not synced".into(),
            (false, None) => "no status".into(),
        };
        let _ = writeln!(
            out,
            "     {} VaultStaticSecret {}/{}: {state}",
            mark(style, v.ok),
            t(&v.namespace),
            t(&v.name)
        );
        details(out, &v.problems, &v.explanations, &v.notes);
    }
    for p in k.eso.provided.iter().filter(|p| !p.ok) {
        let _ = writeln!(
            out,
            "     {} provided {}: waiting for {}",
            style.warn("wait"),
            t(&p.path),
            t(&p.provided_by)
        );
        for x in &p.explanations {
            let _ = writeln!(out, "            why: {}", t(x));
        }
    }
    for o in &k.eso.objects {
        let _ = writeln!(
            out,
            "     {} {} {}{}: {}",
            mark(style, o.ok),
            o.kind,
            t(&o.namespace
                .as_ref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default()),
            t(&o.name),
            t(o.reason.as_deref().unwrap_or_default())
        );
        for p in &o.problems {
            let _ = writeln!(out, "            {}", t(p));
        }
    }
}

fn argocd(out: &mut String, style: &Style, a: &ArgocdPart) {
    let _ = writeln!(
        out,
        "{} argocd: {} ({})",
        mark(style, a.ok),
        t(&a.server),
        t(a.context.as_deref().unwrap_or("in-cluster"))
    );
    let problems = |out: &mut String, problems: &[crate::verify::argocd::Problem]| {
        for p in problems {
            let _ = writeln!(
                out,
                "            {}: {}",
                style.error("error"),
                t(&p.message)
            );
            let _ = writeln!(out, "              {}: {}", style.help("help"), t(&p.help));
        }
    };
    for app in &a.apps {
        let role = match (app.role, app.app_wave) {
            ("secrets", Some(w)) => format!("secrets app, app wave {w}"),
            ("secrets", None) => "secrets app".to_string(),
            (_, Some(w)) => format!("app wave {w}, after {}", app.after.join(", ")),
            (_, None) => format!("after {}", app.after.join(", ")),
        };
        let state = if app.exists {
            format!(
                "{}, {}",
                app.sync.as_deref().unwrap_or("no sync status"),
                app.health.as_deref().unwrap_or("no health")
            )
        } else {
            "does not exist".to_string()
        };
        let _ = writeln!(
            out,
            "     {} Application {}/{} ({}): {}",
            mark(style, app.ok),
            t(&app.namespace),
            t(&app.name),
            t(&role),
            t(&state)
        );
        for r in &app.unhealthy {
            let _ = writeln!(
                out,
                "            {} {}/{}: {}{}",
                t(&r.kind),
                t(&r.namespace),
                t(&r.name),
                t(r.health.as_deref().unwrap_or_default()),
                r.health_message
                    .as_deref()
                    .map(|m| format!(": {}", t(m)))
                    .unwrap_or_default()
            );
        }
        for n in &app.notes {
            let _ = writeln!(out, "            note: {}", t(n));
        }
        problems(out, &app.problems);
    }
    for cm in &a.argocd_cm {
        let state = match &cm.key {
            Some(key) => format!("app waves wait for Healthy (`{}`)", t(key)),
            None => "no health check for argoproj.io/Application".to_string(),
        };
        let _ = writeln!(
            out,
            "     {} ConfigMap {}/{}: {state}",
            mark(style, cm.ok),
            t(&cm.namespace),
            cm.name
        );
        problems(out, &cm.problems);
    }
}
