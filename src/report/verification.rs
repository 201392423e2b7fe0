//! `verify`'s report: each part's verdict and what to do, or the JSON document
//! `{"command": "verify", "env", "ok", "strict", "vault", "policy", "kube", "argocd",
//! "consumers", "imports", "notes", "findings", "checked", "not_checked", "cannot_tell"}`
//! (`docs/verify.md`).

use std::collections::BTreeSet;
use std::fmt::Write;
use std::io;

use serde::Serialize;

use super::{gaps, Format, Rendered, Report, Style, View};
use crate::base::text::for_terminal as t;
use crate::seed::Status;
use crate::verify::argocd::ArgocdPart;
use crate::verify::cluster::ClusterPart;
use crate::verify::consumers::ConsumersPart;
use crate::verify::grants::{GrantsPart, PolicyPart};
use crate::verify::imports::ImportsPart;
use crate::verify::values::ValuesPart;
use crate::verify::{Checked, PartFailure, Verification};

/// The report of a verification.
pub struct VerifyReport {
    /// What was found.
    pub verification: Verification,
    /// `--all`: the text lists every object each part checked, not only what fails or warns.
    pub all: bool,
    /// What was said on stderr as it was done (`--force-sync`, `--restart`): the text's notes
    /// leave it out, so that each is said once.
    pub said: Vec<String>,
}

#[derive(Serialize)]
struct Doc<'a> {
    command: &'static str,
    #[serde(flatten)]
    verification: &'a Verification,
}

impl Report for VerifyReport {
    fn render(&self, view: &View) -> Rendered<'_> {
        let v = &self.verification;
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
        let (style, verbose, all) = (view.out, view.verbose > 0, self.all);
        let notes: String = v
            .notes
            .iter()
            .filter(|n| !self.said.contains(n))
            .map(|n| format!("note: {}\n", t(n)))
            .collect();
        Rendered::stream(move |out| text(out, &style, v, (verbose, all)), v.ok).with_after(notes)
    }
}

/// The text report, each part's lines written as they are made; `all` lists every object,
/// else each part lists what fails or warns under a line of counts.
fn text(
    out: &mut dyn io::Write,
    style: &Style,
    v: &Verification,
    (verbose, all): (bool, bool),
) -> io::Result<()> {
    match &v.vault {
        Some(Checked::Done(p)) => values(out, style, &v.env, p, (provided_in_kube(v), all))?,
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
        Some(Checked::Done(k)) => cluster(&mut rest, style, k, all),
        Some(Checked::Failed(f)) => failed(&mut rest, style, "kube", f),
        None => {}
    }
    match &v.argocd {
        Some(Checked::Done(a)) => argocd(&mut rest, style, a, all),
        Some(Checked::Failed(f)) => failed(&mut rest, style, "argocd", f),
        None => {}
    }
    match &v.consumers {
        Some(Checked::Done(c)) => consumers(&mut rest, style, c, all),
        Some(Checked::Failed(f)) => failed(&mut rest, style, "consumers", f),
        None => {}
    }
    match &v.imports {
        Some(Checked::Done(p)) => imports(&mut rest, style, p, all),
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

/// `----` for what is neither ok nor failing (not checked, cannot tell), else [`mark`].
fn mark_or_warn(style: &Style, ok: bool, warn: bool) -> String {
    if warn {
        style.warn("----")
    } else {
        mark(style, ok)
    }
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

/// The provided paths the part `kube` lists as not right: their rows here leave the provider
/// and its causes to that list, so that each is said once.
fn provided_in_kube(v: &Verification) -> BTreeSet<&str> {
    match &v.kube {
        Some(Checked::Done(k)) => k
            .eso
            .provided
            .iter()
            .filter(|p| !p.ok)
            .map(|p| p.path.as_str())
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// Pending fields listed by default before the rest are counted: a platform right after its
/// first `apply` has thousands, each the same advice.
const PENDING_SHOWN: usize = 10;

fn values(
    out: &mut dyn io::Write,
    style: &Style,
    env: &str,
    v: &ValuesPart,
    (in_kube, all): (BTreeSet<&str>, bool),
) -> io::Result<()> {
    let counts: Vec<String> = v.counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    writeln!(
        out,
        "{} vault: {} field(s): {}",
        mark(style, v.ok),
        v.fields(),
        counts.join(", ")
    )?;
    let mut pending = 0;
    for row in v.rows().filter(|x| x.status != Status::Valid) {
        // Only a placeholder of this spec's is left out: anything failing, or provided by
        // another application, is always listed.
        if row.status == Status::Pending && row.provided_by.is_none() {
            pending += 1;
            if pending > PENDING_SHOWN && !all {
                continue;
            }
        }
        let hint = match (row.status, row.provided_by) {
            (_, Some(_)) if in_kube.contains(row.path.as_str()) => {
                "provided by another application: vault-seed never writes it (see `provided` under kube)".to_string()
            }
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
            (Status::Pending, _) if row.before_sync() => format!(
                "fill in before the first sync (needed = \"before-sync\"): vault-seed set {env} {} < value.txt",
                row.set_as()
            ),
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
    if pending > PENDING_SHOWN && !all {
        writeln!(
            out,
            "       ... {} more pending (--all lists them; -o json lists every field)",
            thousands(pending - PENDING_SHOWN)
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

/// An object's problems, then why (`why:`, only under an object that is not ok: an ok one's
/// causes explain nothing the reader needs), then notes (`note:`), under its line.
fn details(out: &mut String, ok: bool, problems: &[String], why: &[String], notes: &[String]) {
    for p in problems {
        let _ = writeln!(out, "            {}", t(p));
    }
    for x in why.iter().filter(|_| !ok) {
        let _ = writeln!(out, "            why: {}", t(x));
    }
    for n in notes {
        let _ = writeln!(out, "            note: {}", t(n));
    }
}

/// `n` with a comma between each group of three digits (`2,000`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a part's objects of one kind came to, for its line of counts.
struct Tally {
    /// `ExternalSecret(s)`.
    what: String,
    /// What the ok ones are (`Ready and fresh`).
    state: &'static str,
    ok: usize,
    all: usize,
}

impl Tally {
    fn new(what: impl Into<String>, state: &'static str) -> Tally {
        Tally {
            what: what.into(),
            state,
            ok: 0,
            all: 0,
        }
    }

    fn add(&mut self, ok: bool) {
        self.all += 1;
        self.ok += usize::from(ok);
    }

    /// `2,000 ExternalSecret(s) Ready and fresh`, or `1,999 of 2,000 ExternalSecret(s) Ready
    /// and fresh`; `None` when there are none.
    fn phrase(&self) -> Option<String> {
        (self.all > 0).then(|| {
            let of = if self.ok == self.all {
                String::new()
            } else {
                format!("{} of ", thousands(self.ok))
            };
            format!("{of}{} {} {}", thousands(self.all), self.what, self.state)
        })
    }
}

/// The counts after a part's line (`: 2,000 ExternalSecret(s) Ready and fresh, ...`), and,
/// when objects with notes are left out, how many and how to see them.
fn counts(tallies: &[Tally], hidden_notes: usize) -> String {
    let mut phrases: Vec<String> = tallies.iter().filter_map(Tally::phrase).collect();
    if hidden_notes > 0 {
        phrases.push(format!(
            "{} more with notes (--all shows them)",
            thousands(hidden_notes)
        ));
    }
    if phrases.is_empty() {
        String::new()
    } else {
        format!(": {}", phrases.join(", "))
    }
}

/// Whether an object's line is written: every one with `--all`; else one that fails or warns.
/// An ok object left out whose notes would have been shown is counted in `hidden_notes`.
fn listed(all: bool, shown: bool, has_notes: bool, hidden_notes: &mut usize) -> bool {
    if all || shown {
        return true;
    }
    *hidden_notes += usize::from(has_notes);
    false
}

fn consumers(out: &mut String, style: &Style, c: &ConsumersPart, all: bool) {
    let mut body = String::new();
    let mut hidden = 0;
    for w in &c.workloads {
        let warn = w.ok && (!w.checked || w.cannot_tell);
        if !listed(
            all,
            !w.ok || warn,
            !w.verdict.notes().is_empty(),
            &mut hidden,
        ) {
            continue;
        }
        let m = mark_or_warn(style, w.ok, warn);
        let _ = writeln!(
            body,
            "     {m} {} {}/{}",
            w.kind,
            t(&w.namespace),
            t(&w.name)
        );
        details(
            &mut body,
            w.ok,
            w.verdict.problems(),
            &[],
            w.verdict.notes(),
        );
        if let Some(fix) = &w.fix {
            let label = if w.cannot_tell { "to be sure" } else { "fix" };
            let _ = writeln!(body, "            {}: {}", style.help(label), t(fix));
        }
    }
    let _ = writeln!(
        out,
        "{} consumers: {} ({}): {} workload(s) read {} target Secret(s){}{}",
        // A reader not checked is never shown as ok, nor is the part holding it.
        if c.ok && (c.not_checked > 0 || c.cannot_tell > 0) {
            style.warn("----")
        } else {
            mark(style, c.ok)
        },
        t(&c.server),
        t(c.context.as_deref().unwrap_or("in-cluster")),
        thousands(c.workloads.len()),
        thousands(c.secrets.len()),
        [
            (c.not_checked, "not checked"),
            (c.cannot_tell, "cannot tell")
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!(", {} {what}", thousands(*n)))
        .collect::<String>(),
        if hidden > 0 {
            format!(", {} more with notes (--all shows them)", thousands(hidden))
        } else {
            String::new()
        }
    );
    for p in c.verdict.problems() {
        let _ = writeln!(out, "       {}: {}", style.error("error"), t(p));
    }
    for n in c.verdict.notes() {
        let _ = writeln!(out, "       note: {}", t(n));
    }
    out.push_str(&body);
}

/// Each `from_secret` field compared with its Secret; one not checked is never shown as ok.
fn imports(out: &mut String, style: &Style, p: &ImportsPart, all: bool) {
    let not_checked = p.not_checked();
    let mut tally = Tally::new("field(s) from Kubernetes Secrets", "as imported");
    let mut body = String::new();
    for r in &p.results {
        tally.add(r.ok);
        let warn = r.status == "not-checked";
        if !(all || !r.ok || warn) {
            continue;
        }
        let m = mark_or_warn(style, r.ok, warn);
        let _ = writeln!(
            body,
            "     {m} {}  {}  (Secret {} key {})",
            r.path,
            r.field,
            t(&r.secret),
            t(&r.key)
        );
        let _ = writeln!(body, "            {}", t(&r.message));
    }
    let _ = writeln!(
        out,
        "{} imports: {} ({}){}{}",
        mark(style, p.ok),
        t(&p.server),
        t(p.context.as_deref().unwrap_or("in-cluster")),
        counts(&[tally], 0),
        if not_checked > 0 {
            format!(", {} not checked", thousands(not_checked))
        } else {
            String::new()
        }
    );
    out.push_str(&body);
}

/// What an object's line says of its state when it fails although its controller's status is
/// fine (`ESO says Valid, but:`): the problems under it are vault-seed's own, and the status
/// alone must not read as the verdict.
fn but(controller: &str, state: &str) -> String {
    format!("{controller} says {state}, but:")
}

fn cluster(out: &mut String, style: &Style, k: &ClusterPart, all: bool) {
    let mut body = String::new();
    let mut hidden = 0;
    let mut tallies = vec![
        external_secrets(&mut body, style, k, all, &mut hidden),
        static_secrets(&mut body, style, k, all, &mut hidden),
    ];
    for p in k.eso.provided.iter().filter(|p| !p.ok) {
        let _ = writeln!(
            body,
            "     {} provided {}: {}, waiting for {}",
            style.warn("wait"),
            t(&p.path),
            p.state_words().unwrap_or("not right"),
            t(&p.provided_by)
        );
        for x in p.verdict.explanations() {
            let _ = writeln!(body, "            why: {}", t(x));
        }
    }
    tallies.extend(objects(&mut body, style, k, all));
    let _ = writeln!(
        out,
        "{} kube: {} ({}){}",
        mark(style, k.ok),
        t(&k.server),
        t(k.context.as_deref().unwrap_or("in-cluster")),
        counts(&tallies, hidden)
    );
    out.push_str(&body);
}

fn external_secrets(
    out: &mut String,
    style: &Style,
    k: &ClusterPart,
    all: bool,
    hidden: &mut usize,
) -> Tally {
    let unread =
        |es: &crate::verify::eso::EsCheck| es.target_secret.is_some() && !es.target_checked;
    let state = if k.eso.external_secrets.iter().any(unread) {
        "Ready and fresh, target Secrets not checked"
    } else {
        "Ready and fresh"
    };
    let mut tally = Tally::new("ExternalSecret(s)", state);
    for es in &k.eso.external_secrets {
        tally.add(es.ok);
        if !listed(
            all,
            !es.ok || es.warned,
            !es.verdict.notes().is_empty(),
            hidden,
        ) {
            continue;
        }
        let state = match (es.ready, &es.reason) {
            (Some(true), Some(reason)) if !es.ok => but("ESO", &format!("Ready ({})", t(reason))),
            (Some(true), Some(reason)) => format!("Ready ({})", t(reason)),
            (_, Some(reason)) => format!("not Ready ({})", t(reason)),
            _ => "no status".into(),
        };
        // A target Secret left unread is said on the object's own line, never looking checked.
        let unread = if unread(es) {
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
        details(
            out,
            es.ok,
            es.verdict.problems(),
            es.verdict.explanations(),
            es.verdict.notes(),
        );
    }
    tally
}

fn static_secrets(
    out: &mut String,
    style: &Style,
    k: &ClusterPart,
    all: bool,
    hidden: &mut usize,
) -> Tally {
    let mut tally = Tally::new("VaultStaticSecret(s)", "synced and fresh");
    for v in &k.vault_static_secrets {
        tally.add(v.ok);
        if !listed(all, !v.ok, !v.verdict.notes().is_empty(), hidden) {
            continue;
        }
        let state = match (v.synced, v.ready.or(v.healthy)) {
            (true, _) if !v.ok => but("VSO", "synced"),
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
        details(
            out,
            v.ok,
            v.verdict.problems(),
            v.verdict.explanations(),
            v.verdict.notes(),
        );
    }
    tally
}

/// PushSecrets, stores, VaultAuths and VaultConnections, a tally per kind in the order met.
fn objects(out: &mut String, style: &Style, k: &ClusterPart, all: bool) -> Vec<Tally> {
    let mut tallies: Vec<Tally> = Vec::new();
    for o in &k.eso.objects {
        let what = format!("{}(s)", o.kind);
        match tallies.iter_mut().find(|x| x.what == what) {
            Some(x) => x.add(o.ok),
            None => {
                let mut x = Tally::new(what, "ok");
                x.add(o.ok);
                tallies.push(x);
            }
        }
        // Few, and a note there says how it was judged: listed with it.
        if !(all || !o.ok || !o.verdict.notes().is_empty()) {
            continue;
        }
        let reason = t(o.reason.as_deref().unwrap_or_default());
        let state = if !o.ok && !reason.is_empty() && !o.status_fails() {
            let controller = match o.kind.as_str() {
                "VaultAuth" | "VaultConnection" => "VSO",
                _ => "ESO",
            };
            but(controller, &reason)
        } else {
            reason
        };
        let _ = writeln!(
            out,
            "     {} {} {}{}: {state}",
            mark(style, o.ok),
            o.kind,
            t(&o.namespace
                .as_ref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default()),
            t(&o.name),
        );
        details(out, o.ok, o.verdict.problems(), &[], o.verdict.notes());
    }
    tallies
}

fn argocd(out: &mut String, style: &Style, a: &ArgocdPart, all: bool) {
    let mut body = String::new();
    let mut apps = Tally::new("Application(s)", "ok");
    for app in &a.apps {
        apps.add(app.ok);
        // Few, and a note there says what Argo CD is doing: listed with it.
        if !(all || !app.ok || !app.verdict.notes().is_empty()) {
            continue;
        }
        application(&mut body, style, app);
    }
    let mut cms = Tally::new("argocd-cm", "ok");
    for cm in &a.argocd_cm {
        cms.add(cm.ok);
        if !all && cm.ok {
            continue;
        }
        let state = match &cm.key {
            Some(key) => format!("app waves wait for Healthy (`{}`)", t(key)),
            None => "no health check for argoproj.io/Application".to_string(),
        };
        let _ = writeln!(
            body,
            "     {} ConfigMap {}/{}: {state}",
            mark(style, cm.ok),
            t(&cm.namespace),
            cm.name
        );
        argocd_problems(&mut body, style, cm.verdict.problems());
    }
    let _ = writeln!(
        out,
        "{} argocd: {} ({}){}",
        mark(style, a.ok),
        t(&a.server),
        t(a.context.as_deref().unwrap_or("in-cluster")),
        counts(&[apps, cms], 0)
    );
    out.push_str(&body);
}

fn argocd_problems(out: &mut String, style: &Style, problems: &[crate::verify::argocd::Problem]) {
    for p in problems {
        let _ = writeln!(
            out,
            "            {}: {}",
            style.error("error"),
            t(&p.message)
        );
        let _ = writeln!(out, "              {}: {}", style.help("help"), t(&p.help));
    }
}

fn application(out: &mut String, style: &Style, app: &crate::verify::argocd::AppCheck) {
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
    for n in app.verdict.notes() {
        let _ = writeln!(out, "            note: {}", t(n));
    }
    argocd_problems(out, style, app.verdict.problems());
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
        let target =
            |app: &str, fields: &[&str]| crate::write::replace::tests::target(app, "A", fields);
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

    /// Past the first ten, pending placeholders are counted, not listed (unless `--all`); a
    /// failing field is listed wherever it falls.
    #[test]
    fn pending_placeholders_past_ten_are_counted_and_failures_always_listed() {
        let target =
            |app: &str, fields: &[&str]| crate::write::replace::tests::target(app, "A", fields);
        let mut targets: Vec<Target> = (0..12)
            .map(|i| target(&format!("p{i:02}"), &["value"]))
            .collect();
        targets.push(target("zabsent", &["password"]));
        let mut inspection = Inspection::new(targets.len(), targets.len());
        for (i, t) in targets.iter().enumerate() {
            let r = if i < 12 {
                let mut r = PathResult::all(t, Outcome::Exists, Some(1), None);
                r.fields[0].outcome = Outcome::Pending;
                r
            } else {
                PathResult::all(t, Outcome::Missing, None, None)
            };
            inspection.add(i, r);
        }
        let part = values::judge(inspection, targets, false, BTreeSet::new());
        let shown = |all: bool| {
            let mut out = Vec::new();
            let style = Style::for_stream(ColorChoice::Never, false);
            values(&mut out, &style, "dev", &part, (BTreeSet::new(), all)).unwrap();
            String::from_utf8(out).unwrap()
        };
        let short = shown(false);
        let lines: Vec<&str> = short.lines().collect();
        assert_eq!(lines.len(), 1 + 10 + 1 + 1, "{short}");
        assert!(lines[10].contains("secret/p09/dev/A"), "{short}");
        assert!(
            short.contains("missing  secret/zabsent/dev/A  password  run: vault-seed apply dev"),
            "{short}"
        );
        assert_eq!(
            lines.last(),
            Some(&"       ... 2 more pending (--all lists them; -o json lists every field)")
        );
        let every = shown(true);
        assert_eq!(every.lines().count(), 1 + 12 + 1, "{every}");
        assert!(
            every.contains("secret/p11/dev/A") && !every.contains("more pending"),
            "{every}"
        );
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
        values(&mut out, &style, "dev", part, (BTreeSet::new(), false)).unwrap();
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

    /// An ExternalSecret `ask/app{i}`: Ready, or not; with a cause and a note either way.
    fn es(i: usize, ok: bool) -> crate::verify::eso::EsCheck {
        crate::verify::eso::EsCheck {
            namespace: "ask".into(),
            name: format!("app{i}"),
            ok,
            api_version: Some("external-secrets.io/v1".into()),
            ready: Some(ok),
            reason: Some(
                if ok {
                    "SecretSynced"
                } else {
                    "SecretSyncedError"
                }
                .into(),
            ),
            message: None,
            refresh_time: None,
            target_secret: Some(format!("app{i}")),
            target_checked: true,
            values_match: Some(ok),
            verdict: crate::verify::findings::Verdict::of_sentences(
                if ok {
                    Vec::new()
                } else {
                    vec!["not Ready: SecretSyncedError".into()]
                },
                vec![format!(
                    "`secret/app{i}/dev/A` field `value` is still a placeholder"
                )],
                Vec::new(),
            ),
            warned: false,
            stuck: Vec::new(),
        }
    }

    /// A platform of `n` ExternalSecrets, those in `failing` not Ready, read through a
    /// ClusterSecretStore that ESO calls Valid but that reads another Vault.
    fn platform(n: usize, failing: &[usize]) -> ClusterPart {
        use crate::verify::eso::{EsoReport, ObjectCheck, ObjectFinding};
        use crate::verify::store::StoreFinding;
        let store = ObjectCheck::new(
            "ClusterSecretStore",
            None,
            "vault-backend".into(),
            Some("Valid".into()),
            vec![ObjectFinding::Store(StoreFinding::OtherVault {
                server: "https://vault.other:8200".into(),
                expected: vec!["https://vault:8200".into()],
            })],
        );
        ClusterPart {
            ok: false,
            server: "https://k8s:6443".into(),
            context: Some("dev".into()),
            eso: EsoReport {
                external_secrets: (0..n).map(|i| es(i, !failing.contains(&i))).collect(),
                objects: vec![store],
                provided: Vec::new(),
            },
            vault_static_secrets: Vec::new(),
        }
    }

    fn kube_text(k: &ClusterPart, all: bool) -> String {
        let mut out = String::new();
        cluster(
            &mut out,
            &Style::for_stream(ColorChoice::Never, false),
            k,
            all,
        );
        out
    }

    /// By default a part lists what fails under one line of counts; an ok object's causes are
    /// never shown (a placeholder pending is the part vault's to say), with `--all` neither.
    #[test]
    fn a_part_lists_its_failures_under_a_line_of_counts() {
        let k = platform(2000, &[7]);
        let text = kube_text(&k, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "FAIL kube: https://k8s:6443 (dev): 1,999 of 2,000 ExternalSecret(s) Ready and fresh, 0 of 1 ClusterSecretStore(s) ok",
            "{text}"
        );
        assert_eq!(
            lines[1],
            "     FAIL ExternalSecret ask/app7: not Ready (SecretSyncedError)"
        );
        assert_eq!(lines.len(), 6, "{text}");
        assert!(!text.contains("app8"), "{text}");
        let all = kube_text(&k, true);
        assert_eq!(all.matches(" ExternalSecret ask/app").count(), 2000);
        // The failing one keeps its cause; the 1,999 ok ones show none.
        assert_eq!(all.matches("why:").count(), 1, "{all}");
        let healthy = kube_text(&platform(2000, &[]), false);
        assert!(
            healthy.starts_with(
                "FAIL kube: https://k8s:6443 (dev): 2,000 ExternalSecret(s) Ready and fresh"
            ),
            "{healthy}"
        );
    }

    /// A store ESO calls Valid that vault-seed fails does not read `FAIL ...: Valid`: the line
    /// says whose word `Valid` is, and the problem follows.
    #[test]
    fn a_failing_line_never_carries_an_ok_reason_as_its_state() {
        let text = kube_text(&platform(1, &[]), false);
        let store: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains("ClusterSecretStore vault-backend"))
            .take(2)
            .collect();
        assert_eq!(
            store[0], "     FAIL ClusterSecretStore vault-backend: ESO says Valid, but:",
            "{text}"
        );
        assert!(
            store[1].contains("it reads Vault at `https://vault.other:8200`"),
            "{text}"
        );
        let mut ready_but = platform(1, &[]);
        let es = &mut ready_but.eso.external_secrets[0];
        es.ok = false;
        // The same sentences but its problem.
        es.verdict = crate::verify::findings::Verdict::of_sentences(
            vec!["target Secret `ask/app0` lacks key(s) `A`".into()],
            es.verdict.explanations().to_vec(),
            es.verdict.notes().to_vec(),
        );
        assert!(kube_text(&ready_but, false)
            .contains("FAIL ExternalSecret ask/app0: ESO says Ready (SecretSynced), but:\n"),);
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        let shown: Vec<String> = [0, 7, 999, 1000, 12345, 1234567]
            .into_iter()
            .map(thousands)
            .collect();
        assert_eq!(shown, ["0", "7", "999", "1,000", "12,345", "1,234,567"]);
    }
}
