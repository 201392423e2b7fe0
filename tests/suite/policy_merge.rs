//! `policy ENV --merge NAME` against a real OpenBao: a shared policy keeps every rule of the
//! other applications byte for byte and gains only what the spec lacks; written back, the
//! server grants both. `--diff`, a policy that does not exist, one that cannot be read, a
//! `deny`, and the hints that no longer say to overwrite a policy. Issue 44: a merge never
//! widens: a real token of the merged policy may do, on every path the old one governed, only
//! what it could before and what the specs need, under the old rule's constraints; when that
//! cannot be, the merge refuses and says which rule and why.

use crate::common;

use std::collections::BTreeSet;

use common::{OpenBao, Run};
use serde_json::json;

const ENV: &str = "auh1-dev";

/// `eso-ask-push` as the platform holds it before core-service: ask-db's and Hatchet's push
/// grants, with comments and spacing of its own.
const SHARED: &str = r#"# ESO push grants, shared by the ask applications
path "secret/data/ask/postgresql/*" {
  capabilities = ["create", "update", "read"]
}
path "secret/metadata/ask/postgresql/*" { capabilities = ["read", "list"] }

# Hatchet
path "secret/data/ask/hatchet/*"     { capabilities = ["create", "update", "read", "delete"] }
path "secret/metadata/ask/hatchet/*" { capabilities = ["read", "list"] }"#;

fn merge(bao: &OpenBao, args: &[&str]) -> Run {
    Run::new(bao).real_specs().args(["policy", ENV]).args(args)
}

/// What OpenBao answers for `paths` to a token holding only `policy`.
fn granted(bao: &OpenBao, policy: &str, paths: &[&str]) -> Vec<BTreeSet<String>> {
    let (s, body) = bao.api(
        "POST",
        "auth/token/create",
        Some(&json!({"policies": [policy], "no_default_policy": true, "ttl": "10m"})),
    );
    assert_eq!(s, 200, "{body}");
    let token = body["auth"]["client_token"].as_str().unwrap();
    let (s, body) = bao.api(
        "POST",
        "sys/capabilities",
        Some(&json!({"token": token, "paths": paths})),
    );
    assert_eq!(s, 200, "{body}");
    paths
        .iter()
        .map(|p| {
            body["data"][p]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

fn set(caps: &[&str]) -> BTreeSet<String> {
    caps.iter().map(|c| c.to_string()).collect()
}

#[test]
fn a_shared_policy_keeps_every_rule_and_gains_what_the_spec_lacks() {
    let bao = OpenBao::dev();
    // ESO's role carries it, as `verify` reads it below.
    bao.eso_role(SHARED);
    let out = merge(&bao, &["--merge", "eso-ask-push"])
        .stdout_has("# vault-seed: added for environment `auh1-dev` (core-service)\n")
        .stdout_has(r#"path "secret/data/ask/core-service/*""#)
        .stdout_has(r#"path "secret/metadata/ask/core-service/*""#)
        .output();
    let merged = out.stdout_text();
    // The original text, byte for byte and first; the additions after it.
    assert!(merged.starts_with(&format!("{SHARED}\n")), "{merged}");
    let added = &merged[SHARED.len()..];
    assert!(
        !added.contains("postgresql") && !added.contains("hatchet"),
        "{added}"
    );

    // Written back, OpenBao grants core-service what it needs and the others what they had.
    bao.put_policy("eso-ask-push", &merged);
    let paths = [
        "secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
        "secret/metadata/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
        "secret/data/ask/postgresql/auh1-dev/core-service-db",
        "secret/metadata/ask/postgresql/auh1-dev/x",
        "secret/data/ask/hatchet/auh1-dev/x",
        "secret/metadata/ask/hatchet/auh1-dev/x",
    ];
    let got = granted(&bao, "eso-ask-push", &paths);
    assert!(
        got[0].is_superset(&set(&["create", "update", "read"])),
        "{got:?}"
    );
    assert!(got[1].is_superset(&set(&["read", "list"])), "{got:?}");
    assert_eq!(got[2], set(&["create", "update", "read"]));
    assert_eq!(got[3], set(&["list", "read"]));
    assert_eq!(got[4], set(&["create", "delete", "read", "update"]));
    assert_eq!(got[5], set(&["list", "read"]));
    // And `verify`'s policy part judges it done; merging again adds nothing.
    Run::new(&bao)
        .real_specs()
        .args(["verify", ENV, "--only", "policy"])
        .output();
    let again = merge(&bao, &["--merge", "eso-ask-push"]).output();
    assert_eq!(again.stdout_text(), merged);

    // JSON keeps `policy` and `rules`, and gives the merge.
    bao.put_policy("eso-ask-push", SHARED);
    let doc = merge(&bao, &["--merge", "eso-ask-push", "-o", "json"])
        .output()
        .json();
    assert_eq!(doc["merge_policy"], "eso-ask-push");
    assert_eq!(doc["exists"], true);
    assert_eq!(doc["merged"], merged.as_str());
    assert!(doc["policy"].as_str().unwrap().contains("core-service"));
    assert_eq!(doc["added"].as_array().unwrap().len(), 2, "{doc}");
}

#[test]
fn diff_prints_only_the_additions() {
    let bao = OpenBao::dev();
    bao.put_policy("eso-ask-push", SHARED);
    let out = merge(&bao, &["--merge", "eso-ask-push", "--diff"])
        .stdout_lacks("postgresql/*")
        .stdout_lacks("hatchet")
        .stdout_lacks("shared by the ask applications")
        .output();
    let diff = out.stdout_text();
    assert!(
        diff.starts_with("# vault-seed: added for environment `auh1-dev`"),
        "{diff}"
    );
    assert_eq!(diff.matches("path \"").count(), 2, "{diff}");
    // Valid HCL, as OpenBao reads it.
    bao.put_policy("diff-only", &diff);
}

#[test]
fn a_missing_policy_merges_with_nothing_and_says_so() {
    let bao = OpenBao::dev();
    merge(&bao, &["--merge", "eso-ask-push"])
        .stdout_has(
            "# vault-seed: policy `eso-ask-push` does not exist in Vault: merged with nothing\n",
        )
        .stdout_has(r#"path "secret/data/ask/core-service/*""#)
        .output();
}

#[test]
fn a_policy_vault_seed_cannot_parse_is_an_error_and_no_policy() {
    let bao = OpenBao::dev();
    // OpenBao stores it; vault-seed's parser refuses its nesting.
    let n = 100;
    let deep = format!(
        "path \"secret/data/ask/*\" {{\n  capabilities = [\"read\"]\n  comment {}{{}}{}\n}}\n",
        "{ x\n".repeat(n),
        "}".repeat(n)
    );
    bao.put_policy("eso-ask-push", &deep);
    let out = merge(&bao, &["--merge", "eso-ask-push"])
        .status(1)
        .stderr_has("error: policy `eso-ask-push` nests deeper than 64 levels")
        .output();
    assert_eq!(out.stdout_text(), "");
}

#[test]
fn a_deny_on_a_needed_path_is_an_error_and_no_policy() {
    let bao = OpenBao::dev();
    bao.put_policy(
        "eso-ask-push",
        &format!(
            "{SHARED}\npath \"secret/data/ask/core-service/*\" {{ capabilities = [\"deny\"] }}\n"
        ),
    );
    let out = merge(&bao, &["--merge", "eso-ask-push"])
        .status(1)
        .stderr_has("error: policy `eso-ask-push` denies `secret/data/ask/core-service/auh1-dev/")
        .stderr_has("with its rule `secret/data/ask/core-service/*` (deny)")
        .stderr_has("help: vault-seed never removes a rule")
        .output();
    assert_eq!(out.stdout_text(), "");
}

#[test]
fn a_token_that_cannot_read_the_policy_is_told_what_it_lacks() {
    let bao = OpenBao::dev();
    bao.put_policy("eso-ask-push", SHARED);
    // `default` and a policy of its own (a token made with none would inherit root's).
    bao.put_policy(
        "elsewhere",
        r#"path "secret/data/elsewhere" { capabilities = ["read"] }"#,
    );
    let token = bao.token_with_policies(&["elsewhere"]);
    let out = merge(&bao, &["--merge", "eso-ask-push"])
        .env("VAULT_TOKEN", &token)
        .status(1)
        .stderr_has("error: cannot read policy `eso-ask-push` to merge into it: permission denied: the token lacks `read` on `sys/policies/acl/eso-ask-push`")
        .output();
    assert_eq!(out.stdout_text(), "");
}

#[test]
fn no_hint_says_to_overwrite_a_policy() {
    let merge_hint = "# vault-seed: merge it into the existing policy, keeping its other rules: `vault-seed policy auh1-dev --merge eso-ask-push > FILE && vault policy write eso-ask-push FILE`";
    Run::offline()
        .real_specs()
        .args(["policy", ENV])
        .stdout_has(merge_hint)
        .stdout_lacks("write it with")
        .output();
    Run::offline()
        .real_specs()
        .args(["policy", ENV, "--for", "seeder"])
        .stdout_has("`vault-seed policy auh1-dev --for seeder --merge vault-seed > FILE && vault policy write vault-seed FILE`")
        .output();
    // `verify`'s fix lines too.
    let bao = OpenBao::dev();
    bao.put_policy("eso-ask-push", SHARED);
    Run::new(&bao)
        .real_specs()
        .args(["verify", ENV, "--only", "policy"])
        .status(1)
        .stdout_has("help: add them keeping the policy's other rules (writing only these would replace it): `vault-seed policy auh1-dev --merge eso-ask-push > FILE && vault policy write eso-ask-push FILE`")
        .output();
}

/// `--merge NAME` goes into `sys/policies/acl/NAME`: it is checked as the spec's `policies` are
/// (one plain segment), before anything is sent, and shown escaped.
#[test]
fn a_merge_name_that_is_not_a_policy_name_is_a_usage_error_shown_escaped() {
    let bao = OpenBao::dev();
    bao.put_policy("mounts", SHARED);
    for (name, why) in [
        ("../../sys/mounts", "contains `/`"),
        ("..", "is a relative path segment"),
        ("", "is empty"),
        ("eso\u{1b}[2Jpush", "contains a control character (U+001B)"),
    ] {
        let out = merge(&bao, &["--merge", name])
            .status(2)
            .stderr_has(why)
            .stderr_has("help: a Vault policy's name; use letters, digits")
            .output();
        assert_eq!(out.stdout_text(), "", "{name:?}");
        assert!(
            !out.all_text().contains('\u{1b}'),
            "{name:?}: {}",
            out.all_text()
        );
    }
}

// ---- issue 44 §1: a merge never widens ---------------------------------------------------------

/// A request as a token sends it, and whether OpenBao's ACL let it through (anything but a
/// 403). Writes send ESO's body (`{"data": ...}` on a data path, `{"custom_metadata": ...}` on a
/// metadata path) or, for `+options`, that and `options` besides. The path is made absent
/// (`create`) or present (`update`, `delete`) by the root token first.
const OPS: &[&str] = &[
    "read",
    "list",
    "create",
    "update",
    "delete",
    "create+options",
];

/// `policy` with every rule granting every capability these tests try, its constraints kept:
/// what its constraints let through, as the server says.
fn widened(policy: &str) -> String {
    let mut out = String::new();
    let mut rest = policy;
    while let Some(at) = rest.find("capabilities") {
        let end = at + rest[at..].find(']').expect("a capability list") + 1;
        out.push_str(&rest[..at]);
        out.push_str(r#"capabilities = ["create", "update", "read", "delete", "list"]"#);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn kv_path(path: &str) -> &str {
    path.strip_prefix("secret/data/")
        .or_else(|| path.strip_prefix("secret/metadata/"))
        .expect("a KV v2 path under secret/")
}

fn allowed_ops(bao: &OpenBao, token: &str, path: &str) -> BTreeSet<&'static str> {
    let kv = kv_path(path);
    let body = |options: bool| {
        let mut b = if path.starts_with("secret/data/") {
            json!({"data": {"k": "v"}})
        } else {
            json!({"custom_metadata": {"k": "v"}})
        };
        if options {
            b["options"] = json!({"x": 1});
        }
        b
    };
    let absent = || {
        let (s, b) = bao.api("DELETE", &format!("secret/metadata/{kv}"), None);
        assert!(s == 204 || s == 200 || s == 404, "{b}");
    };
    let present = || bao.kv_put("secret", kv, json!({"k": "root"}));
    let mut out = BTreeSet::new();
    for op in OPS {
        let (status, _) = match *op {
            "read" => {
                present();
                bao.api_as(token, "GET", path, None)
            }
            "list" => bao.api_as(token, "LIST", &format!("{path}/"), None),
            "create" => {
                absent();
                bao.api_as(token, "POST", path, Some(&body(false)))
            }
            "create+options" => {
                absent();
                bao.api_as(token, "POST", path, Some(&body(true)))
            }
            "update" => {
                present();
                bao.api_as(token, "POST", path, Some(&body(false)))
            }
            "delete" => {
                present();
                bao.api_as(token, "DELETE", path, None)
            }
            _ => unreachable!(),
        };
        assert_ne!(status, 0, "{op} {path}");
        if status != 403 {
            out.insert(*op);
        }
    }
    out
}

/// Paths the old policies of these tests govern (an instance of each of their rules), the
/// spec's paths, and their neighbours: other environments of the spec's folder, ask-db's other
/// passwords, other applications' folders.
const PROBES: &[&str] = &[
    "secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
    "secret/metadata/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
    "secret/data/ask/core-service/auh1-prod/OTHER",
    "secret/data/ask/postgresql/auh1-dev/core-service-db-password",
    "secret/metadata/ask/postgresql/auh1-dev/core-service-db-password",
    "secret/data/ask/postgresql/auh1-dev/hatchet-db-password",
    "secret/data/ask/hatchet/auh1-dev/x",
    "secret/metadata/ask/hatchet/auh1-dev/x",
    "secret/data/ask/x",
    "secret/data/other/x",
];

/// `old` merged for the real spec and written back: a token of the result may do, on every
/// probe, what a token of `old` could, and more only where the specs need it: what a token of
/// `vault-seed policy` alone may do, and, on a path a rule of `old` governs, only what that
/// rule's constraints let through (a token of `old` with every capability says what that is).
/// ESO's requests for the spec pass.
fn merged_never_widens(bao: &OpenBao, n: usize, old: &str) -> String {
    bao.put_policy("eso-ask-push", old);
    let merged = merge(bao, &["--merge", "eso-ask-push"])
        .output()
        .stdout_text();
    assert!(merged.starts_with(old.trim_end()), "{merged}");
    let minimal = Run::offline()
        .real_specs()
        .args(["policy", ENV])
        .output()
        .stdout_text();
    bao.put_policy(&format!("before-{n}"), old);
    bao.put_policy(&format!("after-{n}"), &merged);
    bao.put_policy(&format!("minimal-{n}"), &minimal);
    bao.put_policy(&format!("constraints-{n}"), &widened(old));
    let token = |p: &str| bao.token_with_policies(&[&format!("{p}-{n}")]);
    let (before, after) = (token("before"), token("after"));
    let (needed, constraints) = (token("minimal"), token("constraints"));
    for path in PROBES {
        let was = allowed_ops(bao, &before, path);
        let now = allowed_ops(bao, &after, path);
        let need = allowed_ops(bao, &needed, path);
        let governed = allowed_ops(bao, &constraints, path);
        let gained: BTreeSet<&&str> = now.difference(&was).collect();
        assert!(
            gained.iter().all(|op| need.contains(**op)),
            "`{path}`: gained {gained:?} beyond the specs' need {need:?}\nbefore:\n{old}\nafter:\n{merged}"
        );
        assert!(
            governed.is_empty() || gained.iter().all(|op| governed.contains(**op)),
            "`{path}`: gained {gained:?}, which the constraints of the rule governing it let not through ({governed:?})\nbefore:\n{old}\nafter:\n{merged}"
        );
        assert!(
            now.is_superset(&was),
            "`{path}`: lost {:?}\nafter:\n{merged}",
            was.difference(&now).collect::<Vec<_>>()
        );
    }
    // What the specs need passes, as ESO sends it.
    for (path, ops) in [
        (
            "secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
            &["read", "create", "update"][..],
        ),
        (
            "secret/metadata/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
            &["read", "list"][..],
        ),
        (
            "secret/data/ask/postgresql/auh1-dev/core-service-db-password",
            &["read"][..],
        ),
    ] {
        let now = allowed_ops(bao, &after, path);
        assert!(
            ops.iter().all(|op| now.contains(op)),
            "`{path}`: {now:?}\n{merged}"
        );
    }
    merged
}

/// Issue 44's `eso-ask-push`: a wide rule whose `required_parameters` keeps ESO's token from
/// writing (or reading) anything under `secret/ask/`. Merging used to add rules without it, and
/// ESO's token could then overwrite ask-db's database password. Carrying the constraint refuses
/// what the specs need, so the merge refuses, naming the rule and the constraint.
#[test]
fn a_wide_rules_constraint_is_never_dropped_the_issues_policy_is_refused() {
    let bao = OpenBao::dev();
    let old = r#"path "secret/data/ask/*" {
  capabilities = ["create", "update", "read"]
  required_parameters = ["nonexistent"]
}
path "secret/metadata/ask/*" { capabilities = ["read", "list"] }
"#;
    bao.eso_role(old);
    bao.ask_db_pushes();
    let eso = bao.token_with_policies(&["eso-ask-push"]);
    let password = "secret/data/ask/postgresql/auh1-dev/core-service-db-password";
    assert!(!allowed_ops(&bao, &eso, password).contains("update"));
    let out = merge(&bao, &["--merge", "eso-ask-push"])
        .status(1)
        .stderr_has("error: policy `eso-ask-push`: the rule `secret/data/ask/core-service/*` vault-seed would add takes `secret/data/ask/core-service/auh1-dev/")
        .stderr_has("from its rule `secret/data/ask/*`, so it must carry that rule's constraints, and with them OpenBao refuses ESO's")
        .stderr_has("`required_parameters` asks for `nonexistent`")
        .stderr_has("help: vault-seed never drops a rule's constraints")
        .output();
    assert_eq!(out.stdout_text(), "");
    // `--diff` and `-o json` refuse alike.
    merge(&bao, &["--merge", "eso-ask-push", "--diff"])
        .status(1)
        .output();
    assert!(!allowed_ops(&bao, &eso, password).contains("update"));
}

/// A wide rule's `allowed_parameters` and `denied_parameters` are carried, as they are, into the
/// more specific rule that takes the spec's folder from it; written back, nothing widens.
#[test]
fn a_wide_rules_parameters_are_carried_into_the_rule_that_takes_paths_from_it() {
    let bao = OpenBao::dev();
    bao.ask_db_pushes();
    let old = r#"path "secret/data/ask/*" {
  capabilities = ["read"]
  allowed_parameters = { "data" = [], "version" = ["1", "2"] }
  denied_parameters = { "options" = [] }
}
path "secret/metadata/ask/*" { capabilities = ["read", "list"] }
"#;
    let merged = merged_never_widens(&bao, 1, old);
    let added = &merged[old.len()..];
    assert!(
        added.contains("path \"secret/data/ask/core-service/*\" {\n  capabilities = [\"create\", \"update\", \"read\"]\n  allowed_parameters = { \"data\" = [], \"version\" = [\"1\", \"2\"] }\n  denied_parameters = { \"options\" = [] }\n}\n"),
        "{added}"
    );
    // Nothing for ask-db's paths: the wide rule grants ESO's read there already.
    assert!(!added.contains("postgresql"), "{added}");
    // `-o json` gives the carried constraints with each added rule.
    let doc = merge(&bao, &["--merge", "eso-ask-push", "-o", "json"])
        .output()
        .json();
    let rule = &doc["added"][0];
    assert_eq!(rule["path"], "secret/data/ask/core-service/*");
    assert_eq!(
        rule["constraints"],
        json!([
            "allowed_parameters = { \"data\" = [], \"version\" = [\"1\", \"2\"] }",
            "denied_parameters = { \"options\" = [] }"
        ])
    );
}

/// The runbook's shared policy, one whose wide rule only reads, and ones whose wide rule limits
/// the parameters of a write: merged, written back and tried with a real token
/// on every path they govern, nothing widens and nothing is lost.
#[test]
fn merged_policies_never_widen_on_the_paths_the_old_policy_governed() {
    let bao = OpenBao::dev();
    bao.ask_db_pushes();
    merged_never_widens(&bao, 2, &format!("{SHARED}\n"));
    for (n, constraint) in [
        (4, r#"denied_parameters = { "options" = [] }"#),
        (5, r#"allowed_parameters = { "data" = [] }"#),
    ] {
        let old = format!(
            "path \"secret/data/ask/*\" {{\n  capabilities = [\"read\"]\n  {constraint}\n}}\npath \"secret/data/ask/postgresql/*\" {{ capabilities = [\"read\"] }}\npath \"secret/metadata/ask/*\" {{ capabilities = [\"read\", \"list\"] }}\n"
        );
        merged_never_widens(&bao, n, &old);
    }
    let merged = merged_never_widens(
        &bao,
        3,
        "path \"secret/data/ask/*\" { capabilities = [\"read\"] }\npath \"secret/metadata/ask/*\" { capabilities = [\"read\", \"list\"] }\n",
    );
    // The added rule grants exactly what the spec needs there, nothing copied from the wide one.
    assert!(
        merged.ends_with("path \"secret/data/ask/core-service/*\" { capabilities = [\"create\", \"update\", \"read\"] }\n"),
        "{merged}"
    );
}

/// An added rule grants only what the specs need: when it would take paths from a rule that
/// grants more there (`delete`), or from a rule whose constraints refuse ESO's requests
/// (`max_wrapping_ttl`), or from two rules with different constraints, the merge refuses and
/// says which rule and why.
#[test]
fn a_merge_that_would_narrow_or_cannot_carry_a_constraint_is_refused() {
    let bao = OpenBao::dev();
    for (old, wanted) in [
        (
            "path \"secret/data/ask/*\" { capabilities = [\"read\", \"delete\"] }\npath \"secret/metadata/ask/*\" { capabilities = [\"read\", \"list\"] }\n",
            "from its rule `secret/data/ask/*`, which grants `delete` there: an added rule grants only what the specs need, so `delete` would be lost",
        ),
        (
            "path \"secret/data/ask/*\" { capabilities = [\"read\"]\n max_wrapping_ttl = \"1h\" }\npath \"secret/metadata/ask/*\" { capabilities = [\"read\", \"list\"] }\n",
            "`max_wrapping_ttl` lets only response-wrapped requests through",
        ),
        (
            // `+/auh1-dev/ZITADEL_MASTERKEY` beats `ask/*` there (no `*`: OpenBao's
            // `CheckAllowedFromNonExactPaths` ranks it first at the same first wildcard), and
            // `core-service/*` beats both (its first wildcard comes later).
            "path \"secret/data/ask/+/auh1-dev/ZITADEL_MASTERKEY\" { capabilities = [\"read\"]\n denied_parameters = { \"x\" = [] } }\npath \"secret/data/ask/*\" { capabilities = [\"read\"]\n denied_parameters = { \"y\" = [] } }\npath \"secret/metadata/ask/*\" { capabilities = [\"read\", \"list\"] }\n",
            "and paths from its rule",
        ),
    ] {
        bao.put_policy("eso-ask-push", old);
        let out = merge(&bao, &["--merge", "eso-ask-push"])
            .status(1)
            .stderr_has("error: policy `eso-ask-push`: the rule `secret/data/ask/core-service/*` vault-seed would add takes")
            .stderr_has(wanted)
            .output();
        assert_eq!(out.stdout_text(), "");
    }
}

/// A policy stored as JSON cannot have HCL appended: the refusal says that it is JSON; one that
/// lacks nothing merges as it is.
#[test]
fn a_policy_stored_as_json_is_refused_saying_so() {
    let bao = OpenBao::dev();
    let old = r#"{"path": {"secret/data/ask/hatchet/*": {"capabilities": ["read"]}}}"#;
    bao.put_policy("eso-ask-push", old);
    let out = merge(&bao, &["--merge", "eso-ask-push"])
        .status(1)
        .stderr_has("error: policy `eso-ask-push` is stored as JSON: vault-seed adds its rules as HCL below a policy's text, and cannot add them to JSON")
        .stderr_lacks("would not grant")
        .output();
    assert_eq!(out.stdout_text(), "");
    let full = r#"{"path": {"secret/*": {"capabilities": ["create", "update", "read", "list"]}}}"#;
    bao.put_policy("eso-ask-push", full);
    let out = merge(&bao, &["--merge", "eso-ask-push"]).output();
    assert_eq!(out.stdout_text(), format!("{full}\n"));
}

/// Random shared policies (rules over the spec's paths and their neighbours, with and without
/// constraints) merged for the real spec by the library, both written to OpenBao: wherever the
/// merge answers, a token of the result does, with real requests on every probe, what a token
/// of the old policy did, and more only what the specs need and the old rule's constraints let
/// through. Refusals are counted, and so are merges that carried constraints.
#[test]
fn random_shared_policies_merged_never_widen_nor_narrow() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use vault_seed::acl;

    let bao = OpenBao::dev();
    bao.ask_db_pushes();
    let set = vault_seed::spec::load_dir(&common::repo_specs()).unwrap();
    let plan = set.plan(ENV, &[]).unwrap();
    let reqs = acl::requirements(&plan, &|_| None);
    let minimal = acl::minimal_policy(&reqs);
    bao.put_policy("minimal", &minimal);
    let needed = bao.token_with_policies(&["minimal"]);
    let probes = [
        "secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
        "secret/metadata/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
        "secret/data/ask/core-service/auh1-prod/OTHER",
        "secret/data/ask/postgresql/auh1-dev/core-service-db-password",
        "secret/data/ask/postgresql/auh1-dev/hatchet-db-password",
        "secret/data/ask/hatchet/auh1-dev/x",
    ];
    let need: Vec<BTreeSet<&str>> = probes
        .iter()
        .map(|p| allowed_ops(&bao, &needed, p))
        .collect();
    const PATTERNS: &[&str] = &[
        "secret/data/ask/*",
        "secret/data/ask/+/auh1-dev/*",
        "secret/data/ask/+/auh1-dev/ZITADEL_MASTERKEY",
        "secret/data/ask/core*",
        "secret/data/ask/core-service/auh1-dev/*",
        "secret/data/ask/postgresql/*",
        "secret/data/*",
        "secret/metadata/ask/*",
        "secret/metadata/ask/core-service/*",
    ];
    // Constraints ESO's requests pass (carried, the merge goes on) and ones they do not (carried,
    // the merge refuses).
    const CONSTRAINTS: &[&str] = &[
        "",
        "",
        "",
        "denied_parameters = { \"options\" = [] }",
        "denied_parameters = { \"options\" = [] }",
        "allowed_parameters = { \"data\" = [] }",
        "allowed_parameters = { \"data\" = [] }",
        "required_parameters = [\"nonexistent\"]",
        "max_wrapping_ttl = \"1h\"",
    ];
    // Mostly what ESO's grants hold; sometimes more (`delete`, `list`), which an added rule
    // taking paths would lose: a refusal.
    let caps = prop_oneof![
        6 => prop::sample::subsequence(vec!["create", "update", "read"], 1..=3),
        1 => prop::sample::subsequence(vec!["create", "update", "read", "delete", "list"], 1..=4),
    ];
    let rule = (0..PATTERNS.len(), caps, 0..CONSTRAINTS.len());
    let policies = prop::collection::vec(rule, 1..=4);
    let counter = AtomicUsize::new(0);
    let kinds = std::sync::Mutex::new(std::collections::BTreeMap::<&str, usize>::new());
    let (merged_n, refused_n, carried_n) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    let mut runner = TestRunner::new(Config {
        cases: 120,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&policies, |rules| {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let old: String = rules
            .iter()
            .map(|(p, c, k)| {
                format!(
                    "path \"{}\" {{\n  capabilities = {}\n  {}\n}}\n",
                    PATTERNS[*p],
                    json!(c),
                    CONSTRAINTS[*k]
                )
            })
            .collect();
        let m = match acl::merge("old", Some(&old), &reqs) {
            Ok(m) => m,
            Err(e) => {
                refused_n.fetch_add(1, Ordering::Relaxed);
                let kind = match &e {
                    acl::MergeError::TakesOver { why, .. } => match **why {
                        acl::TakeOver::Narrows { .. } => "narrows",
                        acl::TakeOver::Refused { .. } => "refused-after-carrying",
                        acl::TakeOver::Conflicting { .. } => "conflicting",
                        acl::TakeOver::Uncarriable { .. } => "uncarriable",
                    },
                    acl::MergeError::Denied { .. } => "denied-or-constrained",
                    acl::MergeError::Unproven { .. } => {
                        return Err(TestCaseError::fail(format!("unproven: {e}\n{old}")))
                    }
                    _ => "other",
                };
                *kinds.lock().unwrap().entry(kind).or_insert(0) += 1;
                return Ok(());
            }
        };
        merged_n.fetch_add(1, Ordering::Relaxed);
        if m.added.iter().any(|r| r.constraints.is_some()) {
            carried_n.fetch_add(1, Ordering::Relaxed);
        }
        let merged = acl::merged_text(Some(&old), "# added", &m.added);
        bao.put_policy(&format!("old-{n}"), &old);
        bao.put_policy(&format!("merged-{n}"), &merged);
        bao.put_policy(&format!("widened-{n}"), &widened(&old));
        let before = bao.token_with_policies(&[&format!("old-{n}")]);
        let after = bao.token_with_policies(&[&format!("merged-{n}")]);
        let governing = bao.token_with_policies(&[&format!("widened-{n}")]);
        for (path, need) in probes.iter().zip(&need) {
            let was = allowed_ops(&bao, &before, path);
            let now = allowed_ops(&bao, &after, path);
            let governed = allowed_ops(&bao, &governing, path);
            let gained: BTreeSet<&str> = now.difference(&was).copied().collect();
            prop_assert!(
                gained.is_subset(need),
                "`{}`: gained {:?} beyond the need {:?}\n{}",
                path,
                gained,
                need,
                merged
            );
            prop_assert!(
                governed.is_empty() || gained.is_subset(&governed),
                "`{}`: gained {:?} past the old rule's constraints ({:?})\n{}",
                path,
                gained,
                governed,
                merged
            );
            prop_assert!(
                now.is_superset(&was),
                "`{}`: lost {:?}\n{}",
                path,
                was,
                merged
            );
        }
        // What the specs need passes, as ESO sends it.
        for (path, ops) in [
            (probes[0], &["read", "create", "update"][..]),
            (probes[1], &["read", "list"][..]),
            (probes[3], &["read"][..]),
        ] {
            let now = allowed_ops(&bao, &after, path);
            prop_assert!(
                ops.iter().all(|op| now.contains(op)),
                "`{}`: {:?}\n{}",
                path,
                now,
                merged
            );
        }
        Ok(())
    });
    let (merged, refused, carried) = (
        merged_n.into_inner(),
        refused_n.into_inner(),
        carried_n.into_inner(),
    );
    eprintln!(
        "{merged} merged ({carried} carrying constraints), {refused} refused: {:?}",
        kinds.into_inner().unwrap()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(merged >= 25, "only {merged} merges");
    assert!(refused >= 25, "only {refused} refusals");
    assert!(carried >= 4, "only {carried} merges carried constraints");
}
