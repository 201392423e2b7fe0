//! `policy`'s report: the minimal ESO (or vault-seed) policy as HCL with a comment naming the environment, or
//! the JSON document `{"env", "policy", "rules"}`; with `--merge NAME`, the policy `NAME` with
//! what it lacks added (`--diff`: only that), and `{"merge_policy", "exists", "merged", "added"}`
//! besides in JSON.

use serde::Serialize;

use super::{Format, Rendered, Report, View};
use crate::acl::{merged_text, render_hcl, write_hcl, Rule};

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
    /// Where a glob was used and where each path is named, and why: comment lines above the
    /// rules, and above the rules `--merge` adds (text output only).
    pub scope: crate::acl::ScopeNotes,
    /// The policy the specs name first, to write it under that name.
    pub policy_name: Option<String>,
    /// The rules.
    pub rules: Vec<Rule>,
    /// How the hint's command says whose policy (`" --for seeder"`; empty for ESO's).
    pub for_flag: &'static str,
    /// `--merge NAME`: the existing policy and what it lacks.
    pub merge: Option<Merging>,
}

/// An existing policy and the rules added to it (`--merge`).
pub struct Merging {
    /// Its name.
    pub name: String,
    /// Its text as Vault holds it; `None` when it does not exist.
    pub text: Option<String>,
    /// The rules it lacks.
    pub added: Vec<Rule>,
    /// `--diff`: print only the added rules.
    pub diff: bool,
}

impl PolicyReport {
    /// The comment above the added rules.
    fn added_comment(&self, added: &[Rule]) -> String {
        let mut out = format!(
            "# vault-seed: added for environment `{}` ({})",
            self.env,
            applications(&self.apps)
        );
        for line in self.scope.lines(&self.env, added) {
            out.push_str("\n# vault-seed: ");
            out.push_str(&line);
        }
        out
    }

    /// What `--merge` prints: the policy's text as it is, then the added rules under a comment
    /// (`--diff`: only those); a policy that does not exist says so first.
    fn merged(&self, m: &Merging) -> String {
        let mut out = String::new();
        if m.text.is_none() {
            out.push_str(&format!(
                "# vault-seed: policy `{}` does not exist in Vault: merged with nothing\n",
                m.name
            ));
        }
        if m.diff {
            if m.added.is_empty() {
                out.push_str(&format!(
                    "# vault-seed: policy `{}` already grants what environment `{}` needs: nothing to add\n",
                    m.name, self.env
                ));
            } else {
                out.push_str(&self.added_comment(&m.added));
                out.push('\n');
                out.push_str(&render_hcl(&m.added));
            }
            return out;
        }
        out.push_str(&merged_text(
            m.text.as_deref(),
            &self.added_comment(&m.added),
            &m.added,
        ));
        out
    }
}

/// `--output json`: `{"env", "policy", "rules": [{"path", "capabilities"}]}`; with `--merge`,
/// `merge_policy` (its name), `exists`, `merged` (the text to write back) and `added` (the rules
/// added, as `rules`) besides.
#[derive(Serialize)]
struct PolicyJson<'a> {
    env: &'a str,
    policy: &'a str,
    rules: &'a [Rule],
    #[serde(skip_serializing_if = "Option::is_none")]
    merge_policy: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exists: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    merged: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    added: Option<&'a [Rule]>,
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
                            merge_policy: self.merge.as_ref().map(|m| m.name.as_str()),
                            exists: self.merge.as_ref().map(|m| m.text.is_some()),
                            merged: self.merge.as_ref().map(|m| {
                                merged_text(
                                    m.text.as_deref(),
                                    &self.added_comment(&m.added),
                                    &m.added,
                                )
                            }),
                            added: self.merge.as_ref().map(|m| m.added.as_slice()),
                        },
                        out,
                    )
                },
                true,
            );
        }
        if let Some(m) = &self.merge {
            let text = self.merged(m);
            return Rendered::stream(move |out| out.write_all(text.as_bytes()), true);
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
                    // Never `vault policy write NAME FILE` of these rules alone: that replaces a
                    // shared policy and drops the other applications' rules.
                    writeln!(
                        out,
                        "# vault-seed: merge it into the existing policy, keeping its other rules: `vault-seed policy {}{} --merge {name} > FILE && vault policy write {name} FILE`",
                        self.env, self.for_flag
                    )?;
                }
                // Right above the rules: which are globs and which exact paths, and why.
                for line in self.scope.lines(&self.env, &self.rules) {
                    writeln!(out, "# vault-seed: {line}")?;
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
