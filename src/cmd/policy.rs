//! `vault-seed policy ENV`: print the minimal Vault policy ESO needs for an environment.

use serde::Serialize;

use crate::acl::{self, Rule};
use crate::cli::{GlobalArgs, PolicyArgs};
use crate::exit::Exit;
use crate::report::{self, Format, Style};
use crate::spec;

/// `--output json`: `{"env", "policy", "rules": [{"path", "capabilities"}]}`.
#[derive(Serialize)]
struct PolicyJson<'a> {
    env: &'a str,
    policy: &'a str,
    rules: &'a [Rule],
}

pub(super) fn run(g: &GlobalArgs, args: &PolicyArgs) -> Exit {
    let set = match spec::load_dir(&g.specs) {
        Ok(set) => set,
        Err(e) => {
            super::print_load_error(g, &e);
            return Exit::Usage;
        }
    };
    let plan = match set.plan(&args.env, &[]) {
        Ok(plan) => plan,
        Err(d) => {
            eprint!("{}", d.render(&Style::stderr(g.color)));
            return Exit::Usage;
        }
    };
    // No server is asked here: a spec without `kv_version` is taken as KV v2, as on `secret/`.
    let requirements = acl::requirements(&plan, &|_| None);
    let rules = acl::minimal_rules(&requirements);
    if rules.is_empty() {
        report::error(
            &Style::stderr(g.color),
            &format!(
                "the specs of environment `{}` give ESO no access to any secret",
                args.env
            ),
            Some("set `access = [\"read\"]` (or `push`, `list`) under `[eso]` in the spec"),
        );
        return Exit::Failure;
    }
    let hcl = acl::render_hcl(&rules);
    match g.output {
        Format::Human => {
            let apps: Vec<String> = plan.specs.iter().map(|(s, _)| s.name.clone()).collect();
            let policies: Vec<String> = plan
                .specs
                .iter()
                .flat_map(|(s, _)| s.eso.policies.iter().cloned())
                .collect();
            println!(
                "# vault-seed: minimal ESO policy for environment `{}` ({})",
                args.env,
                apps.join(", ")
            );
            if let Some(name) = policies.first() {
                println!("# vault-seed: write it with `vault policy write {name} FILE`");
            }
            print!("{hcl}");
        }
        Format::Json => {
            if let Err(e) = report::print_json(&PolicyJson {
                env: &args.env,
                policy: &hcl,
                rules: &rules,
            }) {
                eprintln!("error: cannot write to stdout: {e}");
                return Exit::Failure;
            }
        }
    }
    Exit::Success
}
