//! `policy ENV --merge NAME` against a real OpenBao: a shared policy keeps every rule of the
//! other applications byte for byte and gains only what the spec lacks; written back, the
//! server grants both. `--diff`, a policy that does not exist, one that cannot be read, a
//! `deny`, and the hints that no longer say to overwrite a policy.

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
        .status(0)
        .stdout_has("# vault-seed: added for environment `auh1-dev` (core-service)\n")
        .stdout_has(r#"path "secret/data/ask/core-service/*""#)
        .stdout_has(r#"path "secret/metadata/ask/core-service/*""#)
        .check();
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
        .status(0)
        .check();
    let again = merge(&bao, &["--merge", "eso-ask-push"]).status(0).check();
    assert_eq!(again.stdout_text(), merged);

    // JSON keeps `policy` and `rules`, and gives the merge.
    bao.put_policy("eso-ask-push", SHARED);
    let doc = merge(&bao, &["--merge", "eso-ask-push", "-o", "json"])
        .status(0)
        .check()
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
        .status(0)
        .stdout_lacks("postgresql/*")
        .stdout_lacks("hatchet")
        .stdout_lacks("shared by the ask applications")
        .check();
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
        .status(0)
        .stdout_has(
            "# vault-seed: policy `eso-ask-push` does not exist in Vault: merged with nothing\n",
        )
        .stdout_has(r#"path "secret/data/ask/core-service/*""#)
        .check();
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
        .check();
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
        .check();
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
        .check();
    assert_eq!(out.stdout_text(), "");
}

#[test]
fn no_hint_says_to_overwrite_a_policy() {
    let merge_hint = "# vault-seed: merge it into the existing policy, keeping its other rules: `vault-seed policy auh1-dev --merge eso-ask-push > FILE && vault policy write eso-ask-push FILE`";
    Run::offline()
        .real_specs()
        .args(["policy", ENV])
        .status(0)
        .stdout_has(merge_hint)
        .stdout_lacks("write it with")
        .check();
    Run::offline()
        .real_specs()
        .args(["policy", ENV, "--for", "seeder"])
        .status(0)
        .stdout_has("`vault-seed policy auh1-dev --for seeder --merge vault-seed > FILE && vault policy write vault-seed FILE`")
        .check();
    // `verify`'s fix lines too.
    let bao = OpenBao::dev();
    bao.put_policy("eso-ask-push", SHARED);
    Run::new(&bao)
        .real_specs()
        .args(["verify", ENV, "--only", "policy"])
        .status(1)
        .stdout_has("help: add them keeping the policy's other rules (writing only these would replace it): `vault-seed policy auh1-dev --merge eso-ask-push > FILE && vault policy write eso-ask-push FILE`")
        .check();
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
            .check();
        assert_eq!(out.stdout_text(), "", "{name:?}");
        assert!(
            !out.all_text().contains('\u{1b}'),
            "{name:?}: {}",
            out.all_text()
        );
    }
}
