//! `vault-seed policy ENV`: print the minimal Vault policy ESO needs for an environment.

use crate::acl;
use crate::cli::{GlobalArgs, PolicyArgs};
use crate::report::hcl::PolicyReport;

use super::Failure;

pub(super) fn run(g: &GlobalArgs, args: &PolicyArgs) -> Result<PolicyReport, Failure> {
    let set = super::load_specs(g)?;
    let plan = set.plan(&args.env, &[])?;
    // No server is asked here: a spec without `kv_version` is taken as KV v2, as on `secret/`.
    let requirements = acl::requirements(&plan, &|_| None);
    let rules = acl::minimal_rules(&requirements);
    if rules.is_empty() {
        return Err(Failure::new(format!(
            "the specs of environment `{}` give ESO no access to any secret",
            args.env
        ))
        .help("set `access = [\"read\"]` (or `push`, `list`) under `[eso]` in the spec"));
    }
    Ok(PolicyReport {
        env: args.env.clone(),
        apps: plan.specs.iter().map(|(s, _)| s.name.clone()).collect(),
        policy_name: plan
            .specs
            .iter()
            .flat_map(|(s, _)| s.eso.policies.iter())
            .next()
            .cloned(),
        rules,
    })
}
