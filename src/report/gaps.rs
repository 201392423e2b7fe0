//! ESO's policy gaps for people (`verify`'s policy part): one error per rule that closes gaps,
//! the rule to add, and the HCL to paste. The grouping is [`PolicyReport::groups`]'s; this only
//! words it.

use crate::acl::{render_hcl, Capabilities, Fix, PathCheck, PolicyReport, Use};
use crate::base::backticks::backticked;
use crate::base::text::for_terminal as t;
use crate::report::Style;

/// The report for people: one `error:` per rule that closes gaps (with the number of paths it
/// covers; `verbose` lists them) and that rule, then the full HCL to add. `policies` names the
/// policies checked. What comes from the server (patterns, names, parameter names) is made safe
/// for a terminal. [`merge_hint`] goes after it.
#[allow(clippy::too_many_lines)] // one report laid out top to bottom as it prints
pub fn render(report: &PolicyReport, policies: &[String], style: &Style, verbose: bool) -> String {
    let mut out = String::new();
    let names = if policies.is_empty() {
        "no policy".to_string()
    } else {
        t(&format!(
            "{} `{}`",
            if policies.len() == 1 {
                "policy"
            } else {
                "policies"
            },
            policies.join("`, `")
        ))
    };
    let verb = if policies.len() == 1 { "does" } else { "do" };
    for g in report.groups() {
        let mut missing = Capabilities::new();
        let mut uses: Vec<Use> = Vec::new();
        for p in &g.paths {
            missing.extend(p.missing.iter().copied());
            for u in &p.uses {
                if !uses.contains(u) {
                    uses.push(*u);
                }
            }
        }
        uses.sort();
        let uses: Vec<&str> = uses.iter().map(|u| u.describe()).collect();
        let first = g.paths[0];
        let granted = if g.paths.iter().all(|p| p.granted == first.granted) {
            if first.granted.is_empty() {
                "nothing".to_string()
            } else {
                list(&first.granted)
            }
        } else {
            "varies".to_string()
        };
        let reason = if g.paths.iter().all(|p| why(p) == why(first)) {
            t(&why(first))
        } else {
            String::new()
        };
        let (on, listing) = if g.paths.len() == 1 {
            (format!("`{}`", first.path), "")
        } else {
            (
                format!(
                    "{} paths under `{}`",
                    g.paths.len(),
                    common_folder(g.paths.iter().map(|p| p.path.as_str()))
                ),
                if verbose { "" } else { "; -v lists them" },
            )
        };
        out.push_str(&format!(
            "{}: {names} {verb} not grant {} on {on} ({}; granted: {granted}{reason}{listing})\n",
            style.error("error"),
            backticked(missing),
            uses.join(", "),
        ));
        if verbose && g.paths.len() > 1 {
            for p in &g.paths {
                out.push_str(&format!(
                    "    `{}`: lacks {}{}\n",
                    p.path,
                    backticked(p.missing),
                    t(&why(p))
                ));
            }
        }
        match g.fix {
            Fix::Remove(u) if u.reason == "deny" => out.push_str(&format!(
                "  {}: {}\n",
                style.help("help"),
                t(&format!(
                    "remove the `deny` on `{}` in {}",
                    u.pattern,
                    backticked(&u.policies)
                ))
            )),
            Fix::Remove(u) => out.push_str(&format!(
                "  {}: {}\n",
                style.help("help"),
                t(&format!(
                    "the rule `{}` in {} refuses it ({}): remove that from the rule",
                    u.pattern,
                    backticked(&u.policies),
                    u.reason
                ))
            )),
            Fix::Add(rule) => out.push_str(&format!(
                "  {}: {}\n",
                style.help("add"),
                render_hcl(std::slice::from_ref(rule)).trim_end()
            )),
            Fix::None => {}
        }
    }
    if report.add.len() > 1 {
        out.push_str(&format!(
            "\n{}: add to {}:\n{SCOPE_COMMENT}\n{}",
            style.help("help"),
            if policies.is_empty() {
                "ESO's policy".to_string()
            } else {
                format!("`{}`", policies[0])
            },
            report.suggestion_hcl()
        ));
    }
    out
}

/// Above the rules to add: why some are globs and others exact paths (the requirements' folder
/// rules, `acl::required`'s `scope`).
const SCOPE_COMMENT: &str = "# vault-seed: `*` only over a folder the specs own; exact paths elsewhere, where a `*` would reach other applications' secrets";

/// How to add the rules to the policy (`merge`, the `policy --merge` command): a policy is often
/// shared, and writing only these rules under its name would drop every other application's.
/// Empty when there is nothing to add.
pub fn merge_hint(report: &PolicyReport, merge: &str, style: &Style) -> String {
    if report.add.is_empty() {
        return String::new();
    }
    format!(
        "  {}: {}\n",
        style.help("help"),
        t(&format!(
            "add them keeping the policy's other rules (writing only these would replace it): `{merge}`"
        ))
    )
}

/// What decided a gap beyond "not granted": a `deny`, or a constraint refusing ESO's request.
fn why(p: &PathCheck) -> String {
    if let Some(d) = p.decided_by.as_ref().filter(|d| d.denied) {
        return format!(
            "; denied by the `deny` on `{}` in {}",
            d.pattern,
            backticked(d.policies.iter())
        );
    }
    match p.refused.first() {
        Some(r) => format!(
            "; OpenBao refuses ESO's `{}` request: {} (rule `{}` in {})",
            r.capability,
            r.reason,
            r.pattern,
            backticked(&r.policies)
        ),
        None => String::new(),
    }
}

/// The longest folder (ending in `/`) every path is in.
fn common_folder<'a>(mut paths: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = paths.next() else {
        return String::new();
    };
    let mut prefix = first.to_string();
    for p in paths {
        let n = prefix
            .chars()
            .zip(p.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum();
        prefix.truncate(n);
    }
    match prefix.rfind('/') {
        Some(i) => prefix[..=i].to_string(),
        None => String::new(),
    }
}

fn list(c: &Capabilities) -> String {
    c.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}
