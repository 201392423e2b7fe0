//! `policy`'s report: the minimal ESO (or vault-seed) policy as HCL with a comment naming the environment, or
//! the JSON document `{"env", "policy", "rules"}`.

use serde::Serialize;

use super::{Format, Rendered, Report, View};
use crate::acl::{render_hcl, write_hcl, Rule};

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

/// The applications a policy is for, as the header's comment names them: the first eight, then
/// how many more (a platform's whole set can be thousands: one line, not a page).
fn applications(apps: &[String]) -> String {
    const SHOWN: usize = 8;
    match apps.len().saturating_sub(SHOWN) {
        0 => apps.join(", "),
        more => format!("{} and {more} more", apps[..SHOWN].join(", ")),
    }
}

impl Report for PolicyReport {
    /// Written to stdout as it is made ([`super::Body::Stream`]): for many paths the policy is
    /// large, and its JSON larger.
    fn render(&self, view: &View) -> Rendered<'_> {
        if view.format == Format::Json {
            let hcl = render_hcl(&self.rules);
            return Rendered::stream(
                move |out| {
                    super::json_to(
                        &PolicyJson {
                            env: &self.env,
                            policy: &hcl,
                            rules: &self.rules,
                        },
                        out,
                    )
                },
                true,
            );
        }
        Rendered::stream(
            |out| {
                writeln!(
                    out,
                    "# vault-seed: minimal {} policy for environment `{}` ({})",
                    self.holder,
                    self.env,
                    applications(&self.apps)
                )?;
                for note in &self.notes {
                    writeln!(out, "# vault-seed: {note}")?;
                }
                if let Some(name) = &self.policy_name {
                    writeln!(
                        out,
                        "# vault-seed: write it with `vault policy write {name} FILE`"
                    )?;
                }
                write_hcl(&self.rules, out)
            },
            true,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::applications;

    #[test]
    fn the_header_names_eight_applications_then_counts_the_rest() {
        let apps: Vec<String> = (1..=10).map(|i| format!("app-{i}")).collect();
        assert_eq!(applications(&apps[..2]), "app-1, app-2");
        assert_eq!(applications(&apps[..8]), apps[..8].join(", "));
        assert_eq!(
            applications(&apps),
            "app-1, app-2, app-3, app-4, app-5, app-6, app-7, app-8 and 2 more"
        );
    }
}
