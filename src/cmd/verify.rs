//! `vault-seed verify ENV`: is this environment's secret bootstrap done? The parts live in
//! `verify/`; this turns the arguments into a [`Request`] and shows progress while it runs.

use std::io::IsTerminal;
use std::time::Duration;

use secrecy::SecretString;

use crate::app::cli::{GlobalArgs, VerifyArgs};
use crate::base::exit::Exit;
use crate::base::text::for_terminal as t;
use crate::kube::Cluster;
use crate::report::verification::VerifyReport;
use crate::report::{self, Format};
use crate::seed;
use crate::spec::mounts::{self, MountTrust};
use crate::verify::{self, PartName, Progress, Request};

use super::session::Session;
use super::Failure;

pub(super) fn run(g: &GlobalArgs, args: &VerifyArgs) -> Result<VerifyReport, Failure> {
    let req = request(args)?;
    let mut set = super::load_specs(g)?;
    let mut plan = set.plan_without_secrets(&args.env, &[])?;
    if req.parts.contains(&PartName::Argocd) && !verify::argocd::configured(&plan) {
        return Err(Failure::usage(format!(
            "no spec of environment `{}` has an `[argocd]` section",
            args.env
        ))
        .help("add `[argocd]` with `secrets_app` and `consumers` to the spec (docs/spec.md has an example), or leave `argocd` out of --only"));
    }
    if req.parts.contains(&PartName::Imports) && !crate::write::import::any(&plan.targets) {
        return Err(Failure::usage(format!(
            "no field of environment `{}` has `from_secret`",
            args.env
        ))
        .help("the part imports compares such fields with their Kubernetes Secrets; leave `imports` out of --only"));
    }
    let runtime = super::runtime()?;
    if [
        PartName::Kube,
        PartName::Argocd,
        PartName::Consumers,
        PartName::Imports,
    ]
    .into_iter()
    .any(|p| req.wants(p))
    {
        runtime.block_on(check_cluster_config(g, &plan, &req))?;
    }
    let session = Session::from_plan(g, &plan, &args.vault)?;
    runtime.block_on(async {
        session.announce("verify");
        // The token check and the mount detection at once, with the connections the reads
        // after them use (`HEAD sys/health`, no token); nothing is read before both are in.
        let vault = &session.vault;
        let mut ahead = seed::connections_ahead(&plan.targets, req.concurrency);
        if req.wants(verify::PartName::Policy) || req.wants(verify::PartName::Kube) {
            // The policy part's reads go with the values' (`verify::run`): one per policy the
            // specs name for ESO, and `default`.
            ahead += 1 + policy_reads(&plan);
        }
        let detected = session
            .checked(async {
                let (detected, _) = futures::join!(
                    mounts::detect(vault, &plan.targets, MountTrust::Read),
                    futures::future::join_all((0..ahead).map(|_| vault.warm_connection()))
                );
                detected
            })
            .await?;
        let spinner = wait_spinner(args.wait.is_some() && g.output == Format::Human);
        // What was done is said as it is done; the report's notes leave those lines out.
        let said = std::cell::RefCell::new(Vec::new());
        let progress = |p: Progress<'_>| match (p, &spinner) {
            (Progress::Waiting(line), Some(s)) => s.set_message(t(line)),
            (Progress::Waiting(line), None) => report::say(&t(line)),
            (Progress::Did(line), _) => {
                report::say(&t(line));
                said.borrow_mut().push(line.to_string());
            }
        };
        let verification = verify::run(&session.vault, &mut plan, &detected, &req, &progress).await;
        if let Some(s) = spinner {
            s.finish_and_clear();
        }
        Ok(VerifyReport {
            verification,
            all: args.all,
            said: said.into_inner(),
        })
    })
}

/// The cluster's configuration, read before anything is sent to Vault or the cluster: plain
/// `http://` off loopback is refused (exit 2), as Vault's address is; TLS verification turned
/// off (`insecure-skip-tls-verify`) is said once, as `VAULT_SKIP_VERIFY` is.
async fn check_cluster_config(
    g: &GlobalArgs,
    plan: &crate::spec::EnvPlan<'_>,
    req: &Request,
) -> Result<(), Failure> {
    let context = verify::cluster::context(plan, req);
    cluster_preflight(g, req.kubeconfig.as_deref(), context.as_deref()).await
}

/// [`check_cluster_config`] for a kubeconfig and context (`audit` shares it).
pub(super) async fn cluster_preflight(
    g: &GlobalArgs,
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> Result<(), Failure> {
    let preflight = Cluster::preflight(kubeconfig, context)
        .await
        .map_err(|e| Failure::from(e).exit(Exit::Usage))?;
    if let Some(p) = preflight.filter(|p| p.skip_tls_verify) {
        report::warn(
            &report::Style::stderr(g.color),
            &format!(
                "TLS verification of the Kubernetes API at `{}` is off (insecure-skip-tls-verify in the kubeconfig): anyone on the path can read the cluster credentials",
                t(&p.server)
            ),
        );
    }
    Ok(())
}

/// The policies the specs name for ESO, each counted once: the policy part reads each once
/// (`verify::grants`), however many specs name it. Counted per spec, 16,667 specs naming the
/// same policy opened 16,668 connections ahead (about 33 KiB each in vault-seed, held to the end).
fn policy_reads(plan: &crate::spec::EnvPlan<'_>) -> usize {
    plan.specs
        .iter()
        .flat_map(|(s, _)| s.eso.policies.iter().map(String::as_str))
        .filter(|n| !n.is_empty() && *n != "default" && *n != "root")
        .collect::<std::collections::BTreeSet<&str>>()
        .len()
}

/// The arguments as a request; a usage error when they do not fit together (exit 2).
fn request(args: &VerifyArgs) -> Result<Request, Failure> {
    let parts = args
        .only
        .iter()
        .map(|p| {
            PartName::parse(p).ok_or_else(|| {
                Failure::usage(format!("unknown part `{p}` for --only")).help(format!(
                    "parts: {}",
                    PartName::ALL.map(PartName::as_str).join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut req = Request {
        strict: args.strict,
        parts,
        skip_kube: args.skip_kube,
        wait: args.wait,
        force_sync: args.force_sync,
        kubeconfig: args.cluster.kubeconfig.clone(),
        context: args.cluster.context.clone(),
        eso_token: None,
        concurrency: usize::from(args.concurrency),
        skip_target_secrets: args.skip_target_secrets,
        restart: args.restart,
    };
    if args.restart && !req.wants(PartName::Consumers) {
        return Err(Failure::usage("--restart needs the consumers part")
            .help("drop --skip-kube (or add `consumers` to --only)"));
    }
    if args.force_sync && !req.wants(PartName::Kube) {
        return Err(Failure::usage("--force-sync needs the Kubernetes part")
            .help("drop --skip-kube (or add `kube` to --only)"));
    }
    if let Some(path) = &args.eso_token_file {
        let cannot = |why: String| {
            Failure::usage(format!("cannot read `{}`: {why}", path.display()))
                .help("--eso-token-file names a regular file holding ESO's Vault token")
        };
        let bytes = crate::base::files::read_small(path, MAX_TOKEN_FILE_BYTES)
            .map_err(|e| cannot(e.to_string()))?;
        let text =
            std::str::from_utf8(&bytes).map_err(|_| cannot("it is not UTF-8 text".into()))?;
        if text.trim().is_empty() {
            return Err(Failure::usage(format!("`{}` is empty", path.display()))
                .help("it must hold ESO's Vault token"));
        }
        let token = SecretString::from(text.trim().to_string());
        crate::base::redact::register(&token);
        req.eso_token = Some(token);
    }
    Ok(req)
}

/// The most bytes read from `--eso-token-file`: a token is tens of bytes.
const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

fn wait_spinner(on: bool) -> Option<indicatif::ProgressBar> {
    if !on || !std::io::stderr().is_terminal() {
        return None;
    }
    let s = indicatif::ProgressBar::new_spinner();
    s.enable_steady_tick(Duration::from_millis(120));
    Some(s)
}
