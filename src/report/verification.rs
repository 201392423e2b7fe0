//! `verify`'s report: each part's verdict and what to do, or the JSON document
//! `{"command": "verify", "env", "ok", "strict", "vault", "policy", "kube", "argocd", "notes",
//! "checked", "not_checked"}`.

use std::fmt::Write;
use std::io;

use serde::Serialize;

use super::{gaps, Format, Rendered, Report, Style, View};
use crate::seed::Status;
use crate::text::for_terminal as t;
use crate::verify::argocd::ArgocdPart;
use crate::verify::cluster::ClusterPart;
use crate::verify::consumers::ConsumersPart;
use crate::verify::grants::{GrantsPart, PolicyPart};
use crate::verify::imports::ImportsPart;
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
        Some(Checked::Done(p)) => policy(&mut rest, style, &v.env, p, verbose),
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
    match &v.consumers {
        Some(Checked::Done(c)) => consumers(&mut rest, style, c),
        Some(Checked::Failed(f)) => failed(&mut rest, style, "consumers", f),
        None => {}
    }
    match &v.imports {
        Some(Checked::Done(p)) => imports(&mut rest, style, p),
        Some(Checked::Failed(f)) => failed(&mut rest, style, "imports", f),
        None => {}
    }
    let _ = writeln!(
        rest,
        "verify {}: {}{} ({})",
        v.env,
        if v.ok {
            style.ok("done")
        } else {
            style.error("NOT done")
        },
        undecided(v),
        coverage(v)
    );
    out.write_all(rest.as_bytes())
}

/// What the facts could not decide, after the verdict: `; cannot tell for 2 workload(s)`.
fn undecided(v: &Verification) -> String {
    v.cannot_tell
        .iter()
        .map(|c| format!("; cannot tell for {} {}", c.count, c.what))
        .collect()
}

/// What the verdict is about: `vault, policy checked; not checked: kube, argocd, consumers (--skip-kube)`,
/// the parts left out for the same reason named together.
fn coverage(v: &Verification) -> String {
    let mut s = if v.checked.is_empty() {
        "nothing checked".to_string()
    } else {
        format!("{} checked", v.checked.join(", "))
    };
    let mut left = v.not_checked.iter().peekable();
    if left.peek().is_some() {
        s.push_str("; not checked: ");
    }
    let mut groups = Vec::new();
    while let Some(first) = left.next() {
        let mut parts = vec![first.part];
        while let Some(next) = left.next_if(|n| n.why == first.why) {
            parts.push(next.part);
        }
        groups.push(format!("{} ({})", parts.join(", "), first.why));
    }
    s.push_str(&groups.join("; "));
    s
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
            (Status::Pending, _) if row.is_imported() => format!("run: vault-seed import {env}"),
            // Made from a value still to be filled in: the detail names it.
            (Status::Pending, _) if row.is_derived() => t(row.detail.unwrap_or_default()),
            (Status::Pending, _) => {
                format!("fill in: vault-seed set {env} {} < value.txt", row.set_as())
            }
            // Where it was before the layout changed, and the command that moves it.
            (Status::Missing | Status::Deleted, None) if row.detail.is_some() => {
                t(row.detail.unwrap_or_default())
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
    for n in &v.notes {
        writeln!(out, "       {}: {}", style.help("note"), t(n))?;
    }
    Ok(())
}

/// ESO's grants, then VSO's, each under its own line (`policy:` alone when only ESO counts, as
/// before VSO was known).
fn policy(out: &mut String, style: &Style, env: &str, p: &PolicyPart, verbose: bool) {
    let mut operators = p.operators().peekable();
    if operators.peek().is_none() {
        grants(out, style, env, &p.eso, "policy", verbose);
    }
    for g in operators {
        let title = match (&p.vso, g.operator) {
            (None, _) => "policy".to_string(),
            (Some(_), who) => format!("policy ({})", who.name()),
        };
        grants(out, style, env, g, &title, verbose);
    }
}

fn grants(out: &mut String, style: &Style, env: &str, p: &GrantsPart, title: &str, verbose: bool) {
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
        for line in (gaps::render(&p.report, &p.policies, style, verbose)
            + &gaps::merge_hint(&p.report, &merge_command(env, p), style))
            .lines()
        {
            if line.is_empty() {
                let _ = writeln!(out);
            } else {
                let _ = writeln!(out, "       {line}");
            }
        }
    }
}

/// The command that writes the missing rules into the first policy without dropping its others:
/// `vault-seed policy ENV [--for vso] --merge NAME > FILE && vault policy write NAME FILE`.
fn merge_command(env: &str, p: &GrantsPart) -> String {
    let name = p.policies.first().map_or("NAME", String::as_str);
    let holder = match p.operator {
        crate::verify::grants::Operator::Eso => "",
        crate::verify::grants::Operator::Vso => " --for vso",
    };
    format!(
        "vault-seed policy {env}{holder} --merge {name} > FILE && vault policy write {name} FILE"
    )
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

fn consumers(out: &mut String, style: &Style, c: &ConsumersPart) {
    let _ = writeln!(
        out,
        "{} consumers: {} ({}): {} workload(s) read {} target Secret(s){}",
        // A reader not checked is never shown as ok, nor is the part holding it.
        if c.ok && (c.not_checked > 0 || c.cannot_tell > 0) {
            style.warn("----")
        } else {
            mark(style, c.ok)
        },
        t(&c.server),
        t(c.context.as_deref().unwrap_or("in-cluster")),
        c.workloads.len(),
        c.secrets.len(),
        [
            (c.not_checked, "not checked"),
            (c.cannot_tell, "cannot tell")
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!(", {n} {what}"))
        .collect::<String>()
    );
    for p in &c.problems {
        let _ = writeln!(out, "       {}: {}", style.error("error"), t(p));
    }
    for n in &c.notes {
        let _ = writeln!(out, "       note: {}", t(n));
    }
    for w in &c.workloads {
        let m = if w.ok && (!w.checked || w.cannot_tell) {
            style.warn("----")
        } else {
            mark(style, w.ok)
        };
        let _ = writeln!(
            out,
            "     {m} {} {}/{}",
            w.kind,
            t(&w.namespace),
            t(&w.name)
        );
        details(out, &w.problems, &[], &w.notes);
        if let Some(fix) = &w.fix {
            let label = if w.cannot_tell { "to be sure" } else { "fix" };
            let _ = writeln!(out, "            {}: {}", style.help(label), t(fix));
        }
    }
}

/// Each `from_secret` field compared with its Secret; one not checked is never shown as ok.
fn imports(out: &mut String, style: &Style, p: &ImportsPart) {
    let not_checked = p.not_checked();
    let _ = writeln!(
        out,
        "{} imports: {} ({}): {} field(s) from Kubernetes Secrets{}",
        mark(style, p.ok),
        t(&p.server),
        t(p.context.as_deref().unwrap_or("in-cluster")),
        p.results.len(),
        if not_checked > 0 {
            format!(", {not_checked} not checked")
        } else {
            String::new()
        }
    );
    for r in &p.results {
        let m = match r.status {
            "not-checked" => style.warn("----"),
            _ => mark(style, r.ok),
        };
        let _ = writeln!(
            out,
            "     {m} {}  {}  (Secret {} key {})",
            r.path,
            r.field,
            t(&r.secret),
            t(&r.key)
        );
        let _ = writeln!(out, "            {}", t(&r.message));
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
        // A target Secret left unread is said on the object's own line, never looking checked.
        let unread = if es.target_secret.is_some() && !es.target_checked {
            ", target Secret not checked"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "     {} ExternalSecret {}/{}: {state}{unread}",
            mark(style, es.ok),
            t(&es.namespace),
            t(&es.name)
        );
        details(out, &es.problems, &es.explanations, &es.notes);
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
        for n in &o.notes {
            let _ = writeln!(out, "            note: {}", t(n));
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::*;
    use crate::report::ColorChoice;
    use crate::seed::{Inspection, Outcome, PathResult};
    use crate::spec::{Provided, Target};
    use crate::verify::values;

    /// A path of each kind `verify` meets, each field with its outcome and the status it reads
    /// as: valid, pending (unmarked: a path detail), several fields (valid, invalid with a
    /// detail, missing) with a `created_time` that is not Vault's (an offset), absent (no
    /// version, no time), denied (a path detail), two provided by another application (absent;
    /// invalid, whose path detail is not shown), an error with a field detail, and skipped.
    fn mix() -> (Vec<Target>, Vec<(PathResult, Vec<Status>)>) {
        let target = |app: &str, fields: &[&str]| crate::replace::tests::target(app, "A", fields);
        let provided = |app: &str| {
            let mut t = target(app, &["password"]);
            t.provided = Some(Arc::new(Provided {
                by: format!("{app}-db: CNPG password"),
                push_secret: None,
                mount: None,
                path: None,
            }));
            t
        };
        let targets = vec![
            target("valid", &["password"]),
            target("pending", &["value"]),
            target("multi", &["username", "password", "note"]),
            target("absent", &["password"]),
            target("denied", &["password"]),
            provided("absentdb"),
            provided("invaliddb"),
            target("error", &["x", "y"]),
            target("skipped", &["password"]),
        ];
        let read = |t: &Target, version: u64, time: &str, detail: Option<&str>| {
            let mut r = PathResult::all(t, Outcome::Exists, Some(version), detail.map(Into::into));
            r.created_time = Some(time.into());
            r
        };
        let unmarked = Some("present, not marked (no vault-seed custom_metadata)");
        let mut multi = read(&targets[2], 5, "2026-11-30T16:27:43.123456789+05:30", None);
        multi.fields[1].outcome = Outcome::Invalid;
        multi.fields[1].detail = Some("not a UUID".into());
        multi.fields[2].outcome = Outcome::Missing;
        let mut pending = read(&targets[1], 1, "2026-11-30T16:27:42Z", unmarked);
        pending.fields[0].outcome = Outcome::Pending;
        let mut invalid = read(&targets[6], 1, "2026-11-30T16:27:44.5Z", unmarked);
        invalid.fields[0].outcome = Outcome::Invalid;
        invalid.fields[0].detail = Some("is number, not a string".into());
        let mut error = read(&targets[7], 2, "2026-11-30T16:27:45.25Z", None);
        error.fields[1].outcome = Outcome::Error;
        error.fields[1].detail = Some("cannot add the field: existing field `x` is number, and vault-seed writes strings only".into());
        let denied = Some("the token lacks `read` on `secret/data/denied/dev/A`".into());
        let skipped = Some("not attempted: Vault stopped answering".into());
        let results = vec![
            (
                read(&targets[0], 2, "2026-11-30T16:27:41.512345678Z", None),
                vec![Status::Valid],
            ),
            (pending, vec![Status::Pending]),
            (multi, vec![Status::Valid, Status::Invalid, Status::Missing]),
            (
                PathResult::all(&targets[3], Outcome::Missing, None, None),
                vec![Status::Missing],
            ),
            (
                PathResult::all(&targets[4], Outcome::Denied, None, denied),
                vec![Status::Denied],
            ),
            (
                PathResult::all(&targets[5], Outcome::Missing, None, None),
                vec![Status::Missing],
            ),
            (invalid, vec![Status::Invalid]),
            (error, vec![Status::Valid, Status::Error]),
            (
                PathResult::all(&targets[8], Outcome::Skipped, None, skipped),
                vec![Status::Skipped],
            ),
        ];
        (targets, results)
    }

    /// The rows as the part made them when it held each path's whole result: every field with
    /// its path's version and time, and its own detail, else its path's (not on a provided path).
    fn rows_from_whole_results(
        targets: &[Target],
        results: &[(PathResult, Vec<Status>)],
    ) -> serde_json::Value {
        let rows = targets.iter().zip(results).flat_map(|(t, (r, statuses))| {
            r.fields.iter().zip(statuses).map(move |(f, status)| {
                let detail = f.detail.clone().or(match &t.provided {
                    Some(_) => None,
                    None => r.detail.clone(),
                });
                serde_json::json!({
                    "path": t.full_path(),
                    "field": f.field,
                    "generator": f.generator,
                    "status": status.as_str(),
                    "version": r.version,
                    "created_time": r.created_time,
                    "detail": detail,
                    "provided_by": t.provided.as_ref().map(|p| p.by.clone()),
                })
            })
        });
        serde_json::Value::Array(rows.collect())
    }

    fn part() -> ValuesPart {
        let (targets, results) = mix();
        let fields = results.iter().map(|(r, _)| r.fields.len()).sum();
        let mut inspection = Inspection::new(results.len(), fields);
        for (i, (r, _)) in results.into_iter().enumerate() {
            inspection.add(i, r);
        }
        values::judge(inspection, targets, false, BTreeSet::new())
    }

    fn text(part: &ValuesPart) -> String {
        let mut out = Vec::new();
        let style = Style::for_stream(ColorChoice::Never, false);
        values(&mut out, &style, "dev", part).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// What the part keeps of each path is enough for the same report as when it held each
    /// whole result: the JSON lists every field with the same values, and the text report
    /// shows the fields not valid.
    #[test]
    fn what_is_kept_makes_the_same_rows_and_json_as_the_whole_results() {
        let (targets, results) = mix();
        let all = part();
        let doc: serde_json::Value = serde_json::from_slice(&crate::report::json(&all)).unwrap();
        assert_eq!(doc["results"], rows_from_whole_results(&targets, &results));
        assert_eq!(
            doc["counts"],
            serde_json::json!({"denied": 1, "error": 1, "invalid": 2, "missing": 3,
                "pending": 1, "skipped": 1, "valid": 3})
        );
        let shown = text(&all);
        let expected = [
            "FAIL vault: 12 field(s): 1 denied, 1 error, 2 invalid, 3 missing, 1 pending, 1 skipped, 3 valid",
            "       pending  secret/pending/dev/A  value  fill in: vault-seed set dev A < value.txt",
            "       invalid  secret/multi/dev/A  password  not a UUID",
            "       missing  secret/multi/dev/A  note  run: vault-seed apply dev",
            "       missing  secret/absent/dev/A  password  run: vault-seed apply dev",
            "       denied   secret/denied/dev/A  password  the token lacks `read` on `secret/data/denied/dev/A`",
            "       missing  secret/absentdb/dev/A  password  waiting for absentdb-db: CNPG password: vault-seed never writes it",
            "       invalid  secret/invaliddb/dev/A  password  is number, not a string; provided by invaliddb-db: CNPG password: vault-seed never changes it",
            "       error    secret/error/dev/A  y  cannot add the field: existing field `x` is number, and vault-seed writes strings only",
            "       skipped  secret/skipped/dev/A  password  not attempted: Vault stopped answering",
        ];
        assert_eq!(shown.lines().collect::<Vec<_>>(), expected, "{shown}");
        assert_eq!(all.rows().count(), 12);
    }
}
