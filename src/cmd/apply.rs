//! `vault-seed plan ENV` and `vault-seed apply ENV`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::cli::{ApplyArgs, GlobalArgs};
use crate::exit::Exit;
use crate::report::{self, Format, Style};
use crate::seed::{self, Outcome, PathResult, Summary};

use super::session::{detect_mounts, preflight, MountTrust, Mounts, Session};
use crate::spec::Target;

/// Which of the two commands runs.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mode {
    /// Decide only; write nothing.
    Plan,
    /// Write, and record vault-seed's custom_metadata on each path written when `metadata`.
    Apply { metadata: bool },
}

/// Run `plan` or `apply`.
pub(super) fn run(g: &GlobalArgs, args: &ApplyArgs, mode: Mode) -> Exit {
    let dry_run = matches!(mode, Mode::Plan);
    let command = if dry_run { "plan" } else { "apply" };
    let err_style = Style::stderr(g.color);
    let session = match Session::open(g, command, &args.env, &args.only, &args.vault) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let runtime = match super::runtime() {
        Ok(r) => r,
        Err(exit) => return exit,
    };
    let Session {
        env,
        targets,
        vault,
        ..
    } = &session;
    runtime.block_on(async {
        session.announce(&err_style, command);
        if let Err(e) = preflight(vault, &err_style).await {
            super::fail(g, command, &e);
            return Exit::Failure;
        }
        let Mounts {
            mounts,
            errors: mount_errors,
            notes: mount_notes,
        } = detect_mounts(
            vault,
            targets,
            MountTrust::Write {
                assumed: &args.assume_kv_mount,
            },
        )
        .await;
        let (ready, failed): (Vec<Target>, Vec<Target>) = targets
            .iter()
            .cloned()
            .partition(|t| mounts.contains_key(&t.mount));
        let cancel = Arc::new(AtomicBool::new(false));
        {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                if let Some(signal) = super::stop_signal().await {
                    cancel.store(true, Ordering::SeqCst);
                    eprintln!("{signal}: finishing requests in flight, starting no new ones");
                }
            });
        }
        let bar = progress_bar(ready.len());
        let tick = {
            let bar = bar.clone();
            move || bar.inc(1)
        };
        let opts = seed::Options {
            dry_run,
            concurrency: usize::from(args.concurrency),
            metadata: matches!(mode, Mode::Apply { metadata: true }),
        };
        let mut run = seed::run(vault, &mounts, ready, &opts, cancel, &tick).await;
        run.notes.splice(0..0, mount_notes);
        bar.finish_and_clear();
        tracing::info!(requests = vault.requests(), "requests sent to Vault");
        for t in &failed {
            let msg = mount_errors.get(&t.mount).cloned().unwrap_or_default();
            run.paths
                .push(PathResult::all(t, Outcome::Error, None, Some(msg)));
        }
        print_report(g, command, env, vault.addr(), dry_run, &run)
    })
}

fn progress_bar(len: usize) -> indicatif::ProgressBar {
    if len < 25 || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} {pos}/{len} paths [{bar:30}] {per_sec} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
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
    version: Option<u64>,
    written: bool,
    detail: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    command: &'a str,
    env: &'a str,
    vault_addr: &'a str,
    dry_run: bool,
    interrupted: bool,
    ok: bool,
    results: Vec<JsonRow<'a>>,
    notes: &'a [String],
    summary: Summary,
}

fn print_report(
    g: &GlobalArgs,
    command: &str,
    env: &str,
    addr: &str,
    dry_run: bool,
    run: &seed::Run,
) -> Exit {
    let summary = Summary::of(&run.paths);
    let ok = !summary.failed() && !run.interrupted;
    let err_style = Style::stderr(g.color);
    for n in &run.notes {
        eprintln!("{}: {n}", err_style.help("note"));
    }
    match g.output {
        Format::Json => {
            let results = run
                .paths
                .iter()
                .flat_map(|p| {
                    p.fields.iter().map(move |f| JsonRow {
                        path: p.target.full_path(),
                        mount: &p.target.mount,
                        spec: p.target.spec_file.display().to_string(),
                        field: &f.field,
                        generator: &f.generator,
                        outcome: f.outcome.label(dry_run),
                        version: p.version,
                        written: p.written,
                        detail: f.detail.as_deref().or(p.detail.as_deref()),
                    })
                })
                .collect();
            let doc = JsonReport {
                command,
                env,
                vault_addr: addr,
                dry_run,
                interrupted: run.interrupted,
                ok,
                results,
                notes: &run.notes,
                summary: summary.clone(),
            };
            if let Err(e) = report::print_json(&doc) {
                report::error(&err_style, &format!("cannot write to stdout: {e}"), None);
                return Exit::Failure;
            }
        }
        Format::Human => print_table(g, env, dry_run, run, &summary),
    }
    if run.interrupted {
        report::error(
            &err_style,
            "interrupted: some paths were not attempted",
            Some("run the same command again to finish; nothing is written twice"),
        );
    }
    if ok {
        Exit::Success
    } else {
        Exit::Failure
    }
}

fn print_table(g: &GlobalArgs, env: &str, dry_run: bool, run: &seed::Run, s: &Summary) {
    let style = Style::stdout(g.color);
    let rows: Vec<(Outcome, String, &str, &str, String, String)> = run
        .paths
        .iter()
        .flat_map(|p| {
            p.fields.iter().map(move |f| {
                let version = p.version.map(|v| format!("v{v}")).unwrap_or_default();
                let placeholder_hint = f.generator == "placeholder"
                    && matches!(f.outcome, Outcome::Created | Outcome::Pending);
                let detail = f.detail.clone().or_else(|| p.detail.clone()).or_else(|| {
                    placeholder_hint.then(|| {
                        let target = if p.fields.len() > 1 {
                            format!("{}.{}", p.target.name, f.field)
                        } else {
                            p.target.name.clone()
                        };
                        format!("fill in after deploy: vault-seed set {env} {target} < value.txt")
                    })
                });
                (
                    f.outcome,
                    p.target.full_path(),
                    f.field.as_str(),
                    f.generator.as_str(),
                    version,
                    detail.unwrap_or_default(),
                )
            })
        })
        .collect();
    let w_path = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let w_field = rows.iter().map(|r| r.2.len()).max().unwrap_or(0);
    let w_gen = rows.iter().map(|r| r.3.len()).max().unwrap_or(0);
    for (o, path, field, gen, version, detail) in &rows {
        let label = format!("{:<9}", o.label(dry_run));
        let label = if o.is_failure() {
            style.error(&label)
        } else if *o == Outcome::Pending {
            style.warn(&label)
        } else if matches!(o, Outcome::Exists) {
            label
        } else {
            style.ok(&label)
        };
        let line = format!(
            "{label} {path:<w_path$}  {field:<w_field$}  {gen:<w_gen$}  {version:<4} {detail}"
        );
        println!("{}", line.trim_end());
    }
    let verb =
        |n: usize, done: &str, todo: &str| format!("{n} {}", if dry_run { todo } else { done });
    println!(
        "{}: {} path(s), {} field(s): {}, {} exist, {} pending, {}, {}, {} invalid, {} denied, {} error(s){}",
        style.bold(if dry_run { "plan" } else { "summary" }),
        s.paths,
        s.fields,
        verb(s.created, "created", "to create"),
        s.exists,
        s.pending,
        verb(s.recreated, "recreated", "to recreate"),
        verb(s.extended, "extended", "to extend"),
        s.invalid,
        s.denied,
        s.error,
        if s.skipped > 0 { format!(", {} skipped", s.skipped) } else { String::new() }
    );
    if dry_run {
        println!("nothing was written (plan)");
    }
}
