//! `audit`'s report: a table of what the specs no longer describe (worst first), or the JSON
//! document `{"command": "audit", "env", "ok", "kube_checked", "mount_scanned", "scanned",
//! "findings": [{"code", "kind", "severity", "place", "message", ...the finding's facts}], "counts"}`.
//! Every name came from Vault or the cluster: escaped here, as it was capped where found.

use std::fmt::Write;

use serde::Serialize;

use super::{Format, Rendered, Report, Style, View};
use crate::audit::{Audit, Finding, Severity};
use crate::base::codes::Code;
use crate::base::text::escaped as clean;

/// The report of an audit.
pub struct AuditReport(pub Audit);

#[derive(Serialize)]
struct FindingJson<'a> {
    /// The stable code (`docs/errors.md`), the same as `kind`.
    code: &'static str,
    severity: Severity,
    place: String,
    message: String,
    #[serde(flatten)]
    finding: &'a Finding,
}

#[derive(Serialize)]
struct Counts {
    orphans: usize,
    not_checked: usize,
    notes: usize,
}

#[derive(Serialize)]
struct AuditJson<'a> {
    command: &'static str,
    env: &'a str,
    ok: bool,
    kube_checked: bool,
    mount_scanned: bool,
    scanned: &'a crate::audit::Scanned,
    findings: Vec<FindingJson<'a>>,
    counts: Counts,
}

fn counts(a: &Audit) -> Counts {
    let n = |s: Severity| a.findings.iter().filter(|f| f.severity() == s).count();
    Counts {
        orphans: n(Severity::Orphan),
        not_checked: n(Severity::NotChecked),
        notes: n(Severity::Note),
    }
}

impl Report for AuditReport {
    /// Ok (exit 0) when nothing was found and everything was checked.
    fn render(&self, view: &View) -> Rendered<'_> {
        let a = &self.0;
        match view.format {
            Format::Json => Rendered::json(
                &AuditJson {
                    command: "audit",
                    env: &a.env,
                    ok: a.ok,
                    kube_checked: a.kube_checked,
                    mount_scanned: a.mount_scanned,
                    scanned: &a.scanned,
                    findings: a
                        .findings
                        .iter()
                        .map(|f| FindingJson {
                            code: f.code(),
                            severity: f.severity(),
                            place: f.place(),
                            message: f.message(),
                            finding: f,
                        })
                        .collect(),
                    counts: counts(a),
                },
                a.ok,
            ),
            Format::Human => Rendered::text(render(a, &view.out), a.ok).with_after(after(a, view)),
        }
    }
}

/// What to do, on stderr, when something was found.
fn after(a: &Audit, view: &View) -> String {
    let c = counts(a);
    let mut out = String::new();
    if c.orphans > 0 {
        out.push_str(&format!(
            "  {}: audit changed nothing: name each orphan in a spec, or remove it by hand once nothing reads it\n",
            view.err.help("help")
        ));
    }
    if c.not_checked > 0 {
        out.push_str(&format!(
            "  {}: what was not checked may hide orphans: grant the token `list` and `read` there, or raise --max-scan-requests\n",
            view.err.help("help")
        ));
    }
    out
}

fn severity_word(style: &Style, s: Severity) -> String {
    let word = format!("{:<11}", s.name());
    match s {
        Severity::Orphan => style.error(&word),
        Severity::NotChecked => style.warn(&word),
        Severity::Note => style.bold(&word),
    }
}

/// The table for people: one row per finding, then the verdict.
fn render(a: &Audit, style: &Style) -> String {
    let mut out = String::new();
    let s = &a.scanned;
    let _ = writeln!(
        out,
        "vault-seed audit `{}`: {} folder(s), {} LIST(s), {} secret(s) read, {} mount(s) scanned, {} ExternalSecret(s), {} VaultStaticSecret(s)",
        clean(&a.env),
        s.folders,
        s.lists,
        s.secrets_read,
        s.mounts_scanned.len(),
        s.external_secrets,
        s.vault_static_secrets,
    );
    if !a.mount_scanned {
        let _ = writeln!(out, "mount scan skipped (--skip-mount-scan)");
    }
    let ignored = &s.ignored;
    if ignored.paths + ignored.objects > 0 {
        let _ = writeln!(
            out,
            "{} path(s) and {} object(s) left out (--ignore)",
            ignored.paths, ignored.objects
        );
    }
    if !a.kube_checked {
        let _ = writeln!(out, "cluster skipped (--skip-kube)");
    }
    let width = a
        .findings
        .iter()
        .map(|f| clean(&f.place()).chars().count())
        .max()
        .unwrap_or(0)
        .min(72);
    for f in &a.findings {
        let place = clean(&f.place()).into_owned();
        let _ = writeln!(
            out,
            "{}  {place:<width$}  {}",
            severity_word(style, f.severity()),
            clean(&f.message())
        );
    }
    let c = counts(a);
    if a.ok {
        let _ = writeln!(
            out,
            "{}: the specs describe everything audit looked at",
            style.ok("nothing found")
        );
    } else {
        let _ = writeln!(
            out,
            "{} orphan(s), {} not checked",
            c.orphans, c.not_checked
        );
    }
    out
}
