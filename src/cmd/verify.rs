//! `vault-seed verify ENV`: is this environment's secret bootstrap done?

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use secrecy::SecretString;
use serde::Serialize;

use crate::cli::{GlobalArgs, VerifyArgs};
use crate::exit::Exit;
use crate::kube::EsoCluster;
use crate::policy::KvVersion;
use crate::report::text::for_terminal as t;
use crate::report::{self, Format, Style};
use crate::seed::{self, Outcome, PathResult};
use crate::spec::EnvPlan;
use crate::verify::kube::{self as kube_check, KubePart, PathFacts, Wanted};
use crate::verify::policy::{self as policy_check, PolicyPart};

use super::session::{detect_mounts, preflight, MountTrust, Mounts, Session};

const PARTS: [&str; 3] = ["vault", "policy", "kube"];
const POLL: Duration = Duration::from_secs(2);

/// The Vault part: each field's status.
#[derive(Serialize)]
struct VaultRow {
    path: String,
    field: String,
    generator: String,
    status: &'static str,
    version: Option<u64>,
    created_time: Option<String>,
    detail: Option<String>,
}

#[derive(Serialize)]
struct VaultPart {
    ok: bool,
    counts: BTreeMap<&'static str, usize>,
    results: Vec<VaultRow>,
    notes: Vec<String>,
}

/// A part that could not be checked.
#[derive(Serialize)]
struct Failed {
    ok: bool,
    error: String,
    help: Option<String>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Part<T> {
    Done(T),
    Failed(Failed),
}

#[derive(Serialize)]
struct VerifyReport {
    command: &'static str,
    env: String,
    ok: bool,
    strict: bool,
    vault: Option<Part<VaultPart>>,
    policy: Option<Part<PolicyPart>>,
    kube: Option<Part<KubePart>>,
    notes: Vec<String>,
}

fn status(o: Outcome) -> &'static str {
    match o {
        Outcome::Exists => "valid",
        Outcome::Pending => "pending",
        Outcome::Created | Outcome::Extended | Outcome::Missing => "missing",
        Outcome::Recreated => "deleted",
        Outcome::Invalid => "invalid",
        Outcome::Denied => "denied",
        Outcome::Error => "error",
        Outcome::Skipped => "skipped",
    }
}

fn failed<T>(message: String, help: Option<String>) -> Part<T> {
    Part::Failed(Failed {
        ok: false,
        error: message,
        help,
    })
}

fn part_ok<T>(p: &Option<Part<T>>, ok: impl Fn(&T) -> bool) -> bool {
    match p {
        None => true,
        Some(Part::Done(t)) => ok(t),
        Some(Part::Failed(_)) => false,
    }
}

pub(super) fn run(g: &GlobalArgs, args: &VerifyArgs) -> Exit {
    let style = Style::stderr(g.color);
    if let Some(bad) = args.only.iter().find(|p| !PARTS.contains(&p.as_str())) {
        report::error(
            &style,
            &format!("unknown part `{bad}` for --only"),
            Some("parts: vault, policy, kube"),
        );
        return Exit::Usage;
    }
    let wants = |part: &str| args.only.is_empty() || args.only.iter().any(|p| p == part);
    let want_kube = wants("kube") && !args.skip_kube;
    if args.force_sync && !want_kube {
        report::error(
            &style,
            "--force-sync needs the Kubernetes part",
            Some("drop --skip-kube (or add `kube` to --only)"),
        );
        return Exit::Usage;
    }
    let eso_token = match &args.eso_token_file {
        None => None,
        Some(path) => match std::fs::read_to_string(path) {
            Ok(t) if !t.trim().is_empty() => {
                Some(SecretString::from(t.trim().to_string())).inspect(crate::redact::register)
            }
            Ok(_) => {
                report::error(
                    &style,
                    &format!("`{}` is empty", path.display()),
                    Some("it must hold ESO's Vault token"),
                );
                return Exit::Usage;
            }
            Err(e) => {
                report::error(
                    &style,
                    &format!("cannot read `{}`: {e}", path.display()),
                    None,
                );
                return Exit::Usage;
            }
        },
    };
    let set = match super::load_specs(g) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let plan = match set.plan(&args.env, &[]) {
        Ok(p) => p,
        Err(d) => {
            eprint!("{}", d.render(&style));
            return Exit::Usage;
        }
    };
    let session = match Session::from_plan(g, "verify", &plan, &args.vault) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let runtime = match super::runtime() {
        Ok(r) => r,
        Err(exit) => return exit,
    };
    runtime.block_on(async {
        session.announce(&style, "verify");
        let mut notes = Vec::new();
        if let Err(e) = preflight(&session.vault, &style).await {
            super::fail(g, "verify", &e);
            return Exit::Failure;
        }
        let Mounts {
            mounts,
            errors: mount_errors,
            ..
        } = detect_mounts(&session.vault, &session.targets, MountTrust::Read).await;
        // The Vault part also feeds the Kubernetes part's explanations.
        let ready: Vec<_> = session
            .targets
            .iter()
            .filter(|t| mounts.contains_key(&t.mount))
            .cloned()
            .collect();
        let opts = seed::Options {
            dry_run: true,
            concurrency: usize::from(args.concurrency),
            metadata: false,
        };
        let mut seeded = seed::run(
            &session.vault,
            &mounts,
            ready,
            &opts,
            Arc::new(AtomicBool::new(false)),
            &|| {},
        )
        .await;
        for t in session
            .targets
            .iter()
            .filter(|t| !mounts.contains_key(&t.mount))
        {
            seeded.paths.push(PathResult::all(
                t,
                Outcome::Error,
                None,
                mount_errors.get(&t.mount).cloned(),
            ));
        }
        let vault_part = vault_part(&seeded, args.strict);
        let kv = if mounts.values().all(|m| m.version == 1) && !mounts.is_empty() {
            KvVersion::V1
        } else {
            KvVersion::V2
        };
        let policy_part = if wants("policy") || want_kube {
            Some(
                match policy_check::check(&session.vault, &plan, kv, eso_token.as_ref()).await {
                    Ok(p) => Part::Done(p),
                    Err(e) => failed(e.to_string(), e.help()),
                },
            )
        } else {
            None
        };
        let kube_part = if want_kube {
            let facts = facts(&seeded.paths, policy_part.as_ref());
            Some(kube_part(g, args, &plan, &session, &facts, &mut notes).await)
        } else {
            None
        };
        let report = VerifyReport {
            command: "verify",
            env: session.env.clone(),
            ok: false,
            strict: args.strict,
            vault: wants("vault").then_some(Part::Done(vault_part)),
            policy: if wants("policy") { policy_part } else { None },
            kube: kube_part,
            notes,
        };
        let ok = part_ok(&report.vault, |v| v.ok)
            && part_ok(&report.policy, |p| p.ok)
            && part_ok(&report.kube, |k| k.ok);
        let report = VerifyReport { ok, ..report };
        print(g, &report);
        if ok {
            Exit::Success
        } else {
            Exit::Failure
        }
    })
}

fn vault_part(run: &seed::Run, strict: bool) -> VaultPart {
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut results = Vec::new();
    for p in &run.paths {
        for f in &p.fields {
            let s = status(f.outcome);
            *counts.entry(s).or_default() += 1;
            results.push(VaultRow {
                path: p.target.full_path(),
                field: f.field.clone(),
                generator: f.generator.clone(),
                status: s,
                version: p.version,
                created_time: p.created_time.clone(),
                detail: f.detail.clone().or_else(|| p.detail.clone()),
            });
        }
    }
    let bad = results
        .iter()
        .any(|r| r.status != "valid" && (r.status != "pending" || strict));
    VaultPart {
        ok: !bad,
        counts,
        results,
        notes: run.notes.clone(),
    }
}

/// What the Vault and policy parts know about each path, for the Kubernetes explanations.
fn facts(paths: &[PathResult], policy: Option<&Part<PolicyPart>>) -> BTreeMap<String, PathFacts> {
    let mut out = BTreeMap::new();
    for p in paths {
        let created = p.created_time.as_deref().and_then(|t| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
        });
        let policy_missing = match policy {
            Some(Part::Done(part)) => part
                .report
                .paths
                .iter()
                .filter(|c| {
                    c.path == format!("{}/data/{}", p.target.mount, p.target.path)
                        || c.path == p.target.full_path()
                })
                .flat_map(|c| c.missing.iter().map(|m| m.as_str().to_string()))
                .collect(),
            _ => Vec::new(),
        };
        out.insert(
            p.target.full_path(),
            PathFacts {
                fields: p
                    .fields
                    .iter()
                    .map(|f| (f.field.clone(), status(f.outcome).to_string()))
                    .collect(),
                created,
                policy_missing,
            },
        );
    }
    out
}

async fn kube_part(
    g: &GlobalArgs,
    args: &VerifyArgs,
    plan: &EnvPlan<'_>,
    session: &Session,
    facts: &BTreeMap<String, PathFacts>,
    notes: &mut Vec<String>,
) -> Part<KubePart> {
    let context = args
        .context
        .clone()
        .or_else(|| plan.specs.iter().find_map(|(_, e)| e.kube_context.clone()));
    let cluster = match EsoCluster::connect(args.kubeconfig.as_deref(), context.as_deref()).await {
        Ok(c) => c,
        Err(e) => {
            return failed(
                e.to_string(),
                Some(
                    "check --kubeconfig / KUBECONFIG and --context, or run with --skip-kube".into(),
                ),
            )
        }
    };
    let mut wanted = Wanted {
        external_secrets: Vec::new(),
        push_secrets: Vec::new(),
        skip_target_secrets: args.skip_target_secrets,
    };
    if args.skip_target_secrets {
        notes.push(
            "target Secrets were not read (--skip-target-secrets): their keys were not checked"
                .into(),
        );
    }
    let mut seen: HashMap<(String, String), ()> = HashMap::new();
    for (spec, env) in &plan.specs {
        let ns = env
            .kube_namespace
            .clone()
            .or_else(|| spec.eso.namespace.clone())
            .unwrap_or_else(|| cluster.default_namespace().to_string());
        for name in &spec.eso.external_secrets {
            if seen.insert((ns.clone(), name.clone()), ()).is_none() {
                wanted.external_secrets.push((ns.clone(), name.clone()));
            }
        }
        for name in &spec.eso.push_secrets {
            wanted.push_secrets.push((ns.clone(), name.clone()));
        }
    }
    if args.force_sync {
        for line in kube_check::force_sync(&cluster, &wanted).await {
            eprintln!("{}", t(&line));
            notes.push(line);
        }
    }
    let deadline = args.wait.map(|w| Instant::now() + w);
    let spinner = wait_spinner(args.wait.is_some() && g.output == Format::Human);
    loop {
        let result = kube_check::check(&cluster, &wanted, &session.targets, facts).await;
        let done = matches!(&result, Ok(k) if k.ok);
        let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        match remaining {
            Some(left) if !done && !left.is_zero() => {
                let progress = match &result {
                    Ok(k) => format!(
                        "{}/{} ExternalSecret(s) done",
                        k.external_secrets.iter().filter(|e| e.ok).count(),
                        k.external_secrets.len()
                    ),
                    Err(e) => format!("cluster error: {e}"),
                };
                let line = format!(
                    "waiting: {}, {} left",
                    t(&progress),
                    humantime::format_duration(Duration::from_secs(left.as_secs()))
                );
                match &spinner {
                    Some(s) => s.set_message(line),
                    None => eprintln!("{line}"),
                }
                tokio::time::sleep(POLL.min(left)).await;
            }
            _ => {
                if let Some(s) = spinner {
                    s.finish_and_clear();
                }
                if let (Some(_), false) = (deadline, done) {
                    notes.push(format!(
                        "waited {} and not everything was Ready",
                        humantime::format_duration(args.wait.unwrap_or_default())
                    ));
                }
                return match result {
                    Ok(k) => Part::Done(k),
                    Err(e) => failed(e.to_string(), None),
                };
            }
        }
    }
}

fn wait_spinner(on: bool) -> Option<indicatif::ProgressBar> {
    if !on || !std::io::stderr().is_terminal() {
        return None;
    }
    let s = indicatif::ProgressBar::new_spinner();
    s.enable_steady_tick(Duration::from_millis(120));
    Some(s)
}

fn print(g: &GlobalArgs, r: &VerifyReport) {
    if g.output == Format::Json {
        if let Err(e) = report::print_json(r) {
            eprintln!("error: cannot write to stdout: {e}");
        }
        return;
    }
    let style = Style::stdout(g.color);
    let mark = |ok: bool| {
        if ok {
            style.ok("ok  ")
        } else {
            style.error("FAIL")
        }
    };
    // Every string that comes from a server or the cluster goes through `t` (control characters
    // out, length capped) before it reaches the terminal.
    let print_failed = |name: &str, f: &Failed| {
        // Our messages may hold a second line (what to do): keep it, each line cleaned.
        let mut lines = f.error.lines().map(t);
        println!(
            "{} {name}: {}",
            mark(false),
            lines.next().unwrap_or_default()
        );
        for line in lines {
            println!("     {line}");
        }
        if let Some(h) = &f.help {
            println!("     {}: {}", style.help("help"), t(h));
        }
    };
    match &r.vault {
        Some(Part::Done(v)) => {
            let counts: Vec<String> = v.counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
            println!(
                "{} vault: {} field(s): {}",
                mark(v.ok),
                v.results.len(),
                counts.join(", ")
            );
            for row in v.results.iter().filter(|x| x.status != "valid") {
                let hint = match row.status {
                    "pending" => format!(
                        "fill in: vault-seed set {} {} < value.txt",
                        r.env,
                        row.path.rsplit('/').next().unwrap_or_default()
                    ),
                    "missing" | "deleted" => format!("run: vault-seed apply {}", r.env),
                    _ => t(row.detail.as_deref().unwrap_or_default()),
                };
                println!(
                    "       {:<8} {}  {}  {hint}",
                    row.status, row.path, row.field
                );
            }
        }
        Some(Part::Failed(f)) => print_failed("vault", f),
        None => {}
    }
    match &r.policy {
        Some(Part::Done(p)) => {
            println!(
                "{} policy: {} ({})",
                mark(p.ok),
                if p.policies.is_empty() {
                    "no policy".to_string()
                } else {
                    t(&format!("`{}`", p.policies.join("`, `")))
                },
                p.method.describe()
            );
            for n in &p.notes {
                println!("       note: {}", t(n));
            }
            for e in &p.errors {
                println!("       {}: {}", style.error("error"), t(e));
            }
            if let Some(h) = &p.help {
                println!("       {}: {}", style.help("help"), t(h));
            }
            if !p.report.ok {
                for line in p.report.render(&p.policies, &style, g.verbose > 0).lines() {
                    if line.is_empty() {
                        println!();
                    } else {
                        println!("       {line}");
                    }
                }
            }
        }
        Some(Part::Failed(f)) => print_failed("policy", f),
        None => {}
    }
    match &r.kube {
        Some(Part::Done(k)) => {
            println!(
                "{} kube: {} ({})",
                mark(k.ok),
                t(&k.server),
                t(k.context.as_deref().unwrap_or("in-cluster"))
            );
            for es in &k.external_secrets {
                let state = match (es.ready, &es.reason) {
                    (Some(true), Some(reason)) => format!("Ready ({})", t(reason)),
                    (_, Some(reason)) => format!("not Ready ({})", t(reason)),
                    _ => "no status".into(),
                };
                println!(
                    "     {} ExternalSecret {}/{}: {state}",
                    mark(es.ok),
                    t(&es.namespace),
                    t(&es.name)
                );
                for p in &es.problems {
                    println!("            {}", t(p));
                }
                for x in &es.explanations {
                    println!("            why: {}", t(x));
                }
            }
            for o in &k.objects {
                println!(
                    "     {} {} {}{}: {}",
                    mark(o.ok),
                    o.kind,
                    t(&o.namespace
                        .as_ref()
                        .map(|n| format!("{n}/"))
                        .unwrap_or_default()),
                    t(&o.name),
                    t(o.reason.as_deref().unwrap_or_default())
                );
                for p in &o.problems {
                    println!("            {}", t(p));
                }
            }
        }
        Some(Part::Failed(f)) => print_failed("kube", f),
        None => {}
    }
    for n in &r.notes {
        eprintln!("note: {}", t(n));
    }
    println!(
        "verify {}: {}",
        r.env,
        if r.ok {
            style.ok("done")
        } else {
            style.error("NOT done")
        }
    );
}
