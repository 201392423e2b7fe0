//! `policy`'s report: the minimal ESO (or vault-seed) policy as HCL with a comment naming the environment, or
//! the JSON document `{"env", "policy", "rules"}`.

use serde::Serialize;

use super::{Format, Rendered, Report, View};
use crate::acl::{render_hcl, Rule};

/// The minimal policy of an environment.
pub struct PolicyReport {
    /// The environment.
    pub env: String,
    /// Its applications.
    pub apps: Vec<String>,
    /// Whose policy it is, for the header (`ESO`).
    pub holder: &'static str,
    /// Comment lines above the rules (text output only).
    pub notes: Vec<String>,
    /// The policy the specs name first, to write it under that name.
    pub policy_name: Option<String>,
    /// The rules.
    pub rules: Vec<Rule>,
}

/// `--output json`: `{"env", "policy", "rules": [{"path", "capabilities"}]}`.
#[derive(Serialize)]
struct PolicyJson<'a> {
    env: &'a str,
    policy: &'a str,
    rules: &'a [Rule],
}

impl Report for PolicyReport {
    fn render(&self, view: &View) -> Rendered {
        let hcl = render_hcl(&self.rules);
        if view.format == Format::Json {
            return Rendered::json(
                &PolicyJson {
                    env: &self.env,
                    policy: &hcl,
                    rules: &self.rules,
                },
                true,
            );
        }
        let mut out = format!(
            "# vault-seed: minimal {} policy for environment `{}` ({})\n",
            self.holder,
            self.env,
            self.apps.join(", ")
        );
        for note in &self.notes {
            out.push_str(&format!("# vault-seed: {note}\n"));
        }
        if let Some(name) = &self.policy_name {
            out.push_str(&format!(
                "# vault-seed: write it with `vault policy write {name} FILE`\n"
            ));
        }
        out.push_str(&hcl);
        Rendered::text(out, true)
    }
}
