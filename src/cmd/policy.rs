//! `vault-seed policy ENV [--for eso|seeder|vso]`: print the minimal Vault policy ESO, vault-seed
//! itself or the Vault Secrets Operator needs for an environment; with `--merge NAME`, the policy
//! `NAME` read from Vault with what it lacks added.

use crate::acl;
use crate::app::cli::{GlobalArgs, PolicyArgs, PolicyFor};
use crate::report::hcl::{Merging, PolicyReport};
use crate::spec::EnvPlan;

use super::session::Session;
use super::Failure;

pub(super) fn run(g: &GlobalArgs, args: &PolicyArgs) -> Result<PolicyReport, Failure> {
    // NAME goes into `sys/policies/acl/NAME` and into the printed text: checked as the spec's
    // `policies` are, before anything is read or sent (a `..` segment would be resolved away on
    // the way and another path read).
    if let Some(name) = &args.merge {
        if let Err(why) = crate::spec::check_segment(name) {
            return Err(Failure::usage(format!(
                "`--merge` `{}` {why}",
                crate::base::text::quoted(name)
            ))
            .help(format!(
                "a Vault policy's name; {}",
                crate::spec::SEGMENT_HELP
            )));
        }
    }
    let set = super::load_specs(g)?;
    let plan = set.plan(&args.env, &[])?;
    let mut report = match args.holder {
        PolicyFor::Eso => eso(args, &plan)?,
        PolicyFor::Seeder => seeder(args, &plan),
        PolicyFor::Vso => vso(args, &plan)?,
    };
    if let Some(name) = &args.merge {
        report.merge = Some(merge(g, args, &plan, name, &report.rules)?);
    }
    Ok(report)
}

/// `--merge NAME`: the policy `NAME` as Vault holds it, and the rules it lacks for what this
/// environment needs (ESO's and VSO's paths, or the seeder's rules as they are printed).
fn merge(
    g: &GlobalArgs,
    args: &PolicyArgs,
    plan: &EnvPlan<'_>,
    name: &str,
    rules: &[acl::Rule],
) -> Result<Merging, Failure> {
    let requirements = match args.holder {
        PolicyFor::Eso => acl::requirements(plan, &|_| None),
        PolicyFor::Vso => acl::vso_requirements(plan, &|_| None),
        PolicyFor::Seeder => rules.iter().map(rule_requirement).collect(),
    };
    let session = Session::from_plan(g, plan, &args.vault)?;
    let text = super::runtime()?.block_on(async {
        let read = session.checked(session.vault.read_policy(name)).await?;
        read.map_err(|e| {
            let help = e.help();
            Failure::new(format!("cannot read policy `{name}` to merge into it: {e}"))
                .maybe_help(help)
        })
    })?;
    let merged = acl::merge(name, text.as_deref(), &requirements).map_err(|e| {
        let help = e.help();
        Failure::new(e.to_string()).maybe_help(help)
    })?;
    Ok(Merging {
        name: name.to_string(),
        text,
        added: merged.added,
        diff: args.diff,
    })
}

/// A printed rule as a requirement: what its pattern matches needs its capabilities (the
/// seeder's rules are made per folder, without a record per path).
fn rule_requirement(r: &acl::Rule) -> acl::Requirement {
    acl::Requirement {
        path: r.pattern.trim_end_matches('*').to_string(),
        capabilities: r.capabilities,
        uses: Vec::new(),
        folder_rule: r.pattern.as_str().into(),
        params: Vec::new(),
    }
}

/// vault-seed's own policy: never empty (it always checks its token and its mounts).
fn seeder(args: &PolicyArgs, plan: &EnvPlan<'_>) -> PolicyReport {
    let (rules, scope) = acl::seeder_rules_and_notes(plan);
    PolicyReport {
        env: args.env.clone(),
        apps: plan.specs.iter().map(|(s, _)| s.name.to_string()).collect(),
        holder: "vault-seed",
        policy_name: Some("vault-seed".into()),
        notes: std::iter::once(
            "what `apply`, `verify`, `set` and `rotate` send: each application's secrets, and `read` on the paths other applications provide"
                .to_string(),
        )
        .chain(acl::seeder_notes(plan))
        .collect(),
        scope,
        rules,
        for_flag: " --for seeder",
        merge: None,
    }
}

fn eso(args: &PolicyArgs, plan: &EnvPlan<'_>) -> Result<PolicyReport, Failure> {
    // No server is asked here: a spec without `kv_version` is taken as KV v2, as on `secret/`.
    // One rule per folder, made without a record per path (`acl::eso_rules`).
    let rules = acl::eso_rules(plan, &|_| None);
    if rules.is_empty() {
        return Err(Failure::new(format!(
            "the specs of environment `{}` give ESO no access to any secret",
            args.env
        ))
        .help("set `access = [\"read\"]` (or `push`, `list`) under `[eso]` in the spec"));
    }
    Ok(PolicyReport {
        env: args.env.clone(),
        apps: plan.specs.iter().map(|(s, _)| s.name.to_string()).collect(),
        holder: "ESO",
        notes: Vec::new(),
        scope: acl::eso_scope_notes(plan, &|_| None),
        policy_name: plan
            .specs
            .iter()
            .flat_map(|(s, _)| s.eso.policies.iter())
            .next()
            .cloned(),
        rules,
        for_flag: "",
        merge: None,
    })
}

/// VSO's policy: `read` on each path's data (never metadata), for the specs with `[vso]`.
fn vso(args: &PolicyArgs, plan: &EnvPlan<'_>) -> Result<PolicyReport, Failure> {
    let rules = acl::minimal_rules(&acl::vso_requirements(plan, &|_| None));
    if rules.is_empty() {
        return Err(Failure::new(format!(
            "no spec of environment `{}` has a `[vso]` section",
            args.env
        ))
        .help("add `[vso]` with `static_secrets = [...]` to the specs whose secrets VSO reads"));
    }
    Ok(PolicyReport {
        env: args.env.clone(),
        apps: plan
            .specs
            .iter()
            .filter(|(s, _)| s.vso.is_some())
            .map(|(s, _)| s.name.to_string())
            .collect(),
        holder: "VSO",
        notes: Vec::new(),
        scope: acl::vso_scope_notes(plan, &|_| None),
        policy_name: plan
            .specs
            .iter()
            .filter_map(|(s, _)| s.vso.as_ref())
            .flat_map(|v| v.policies.iter())
            .next()
            .cloned(),
        rules,
        for_flag: " --for vso",
        merge: None,
    })
}
