//! Issue 44 §2: a glob only over a folder the environment's specs own (the application's or the
//! environment's name is a segment of it); elsewhere each path exactly, and a comment above the
//! rules says which and why. For `policy --for eso`, `--for vso`, `--for seeder` and the rules
//! `verify`'s policy part asks for; each printed policy written to a real OpenBao, where a token
//! of it may do what the specs need and is denied the other applications' paths beside them.

use crate::common;

use std::path::PathBuf;

use common::{has, OpenBao, Run};
use serde_json::json;

/// Two applications on one environment: `api` with a folder of its own (`team/api/{env}`), and
/// `web`, whose secrets sit directly in `team/`, a folder other applications share.
const SPECS: &[(&str, &str)] = &[
    (
        "api.toml",
        r#"name = "api"
[vault]
mount = "secret"
path = "team/api/{env}"
[environments.dev]
vault_addr = "ADDR"
[eso]
policies = ["eso-team"]
access = ["read", "push"]
[secrets.KEY]
description = "k"
fields.password = { generator = "hex32" }
"#,
    ),
    (
        "web.toml",
        r#"name = "web"
[vault]
mount = "secret"
path = "team"
[environments.dev]
vault_addr = "ADDR"
[eso]
policies = ["eso-team"]
access = ["read", "push", "list"]
[secrets.A]
description = "a"
fields.password = { generator = "hex32" }
[secrets.B]
description = "b"
fields.password = { generator = "hex32" }
"#,
    ),
];

fn specs(addr: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in SPECS {
        std::fs::write(dir.path().join(name), text.replace("ADDR", addr)).unwrap();
    }
    dir
}

/// `policy dev --for WHO -o json`'s rules as (path, capabilities), and its text output.
fn printed(dir: &std::path::Path, env: &str, who: &str) -> (Vec<(String, Vec<String>)>, String) {
    let doc = Run::offline()
        .specs(dir)
        .args(["policy", env, "--for", who, "-o", "json"])
        .output()
        .json();
    let rules = doc["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["capabilities"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    let text = Run::offline()
        .specs(dir)
        .args(["policy", env, "--for", who])
        .output()
        .stdout_text();
    (rules, text)
}

fn rules(v: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    v.iter()
        .map(|(p, c)| (p.to_string(), c.iter().map(|c| c.to_string()).collect()))
        .collect()
}

/// Whether a token may do `method` on `path` (OpenBao's ACL said yes: anything but a 403).
fn may(bao: &OpenBao, token: &str, method: &str, path: &str) -> bool {
    let body = (method == "POST").then(|| json!({"data": {"k": "v"}}));
    let (status, body) = bao.api_as(token, method, path, body.as_ref());
    assert_ne!(status, 0, "{method} {path}: {body}");
    status != 403
}

#[test]
fn esos_policy_globs_only_over_a_folder_its_spec_owns() {
    let bao = OpenBao::dev();
    let dir = specs(&bao.addr);
    let (got, text) = printed(dir.path(), "dev", "eso");
    assert_eq!(
        got,
        rules(&[
            ("secret/data/team/A", &["create", "update", "read"]),
            ("secret/data/team/B", &["create", "update", "read"]),
            ("secret/data/team/api/*", &["create", "update", "read"]),
            ("secret/metadata/team", &["list"]),
            ("secret/metadata/team/A", &["read", "list"]),
            ("secret/metadata/team/B", &["read", "list"]),
            ("secret/metadata/team/api/*", &["read", "list"]),
        ])
    );
    has(
        &text,
        "# vault-seed: `*` only over a folder the specs own (the application or the environment names it): `secret/data/team/api/`, `secret/metadata/team/api/`\n",
    );
    has(
        &text,
        "# vault-seed: exact paths under `secret/data/team/`, `secret/metadata/team/`: a folder neither application `web` nor environment `dev` names, which other applications may share\n",
    );

    // Written to OpenBao: ESO's requests pass, the neighbours' paths stay out of reach.
    bao.put_policy(
        "eso-team",
        &Run::offline()
            .specs(dir.path())
            .args(["policy", "dev"])
            .output()
            .stdout_text(),
    );
    let token = bao.token_with_policies(&["eso-team"]);
    bao.kv_put("secret", "team/other-app-secret", json!({"k": "v"}));
    bao.kv_put("secret", "team/other/x", json!({"k": "v"}));
    for (method, path) in [
        ("POST", "secret/data/team/A"),
        ("GET", "secret/data/team/A"),
        ("GET", "secret/metadata/team/B"),
        ("LIST", "secret/metadata/team/"),
        ("POST", "secret/data/team/api/dev/KEY"),
    ] {
        assert!(may(&bao, &token, method, path), "{method} {path}");
    }
    for (method, path) in [
        ("GET", "secret/data/team/other-app-secret"),
        ("POST", "secret/data/team/other-app-secret"),
        ("GET", "secret/data/team/other/x"),
        ("GET", "secret/metadata/team/other-app-secret"),
        ("LIST", "secret/metadata/team/other/"),
    ] {
        assert!(!may(&bao, &token, method, path), "{method} {path}");
    }
}

#[test]
fn the_seeders_policy_globs_only_over_a_folder_its_spec_owns_and_is_enough() {
    let bao = OpenBao::dev();
    let dir = specs(&bao.addr);
    let (got, text) = printed(dir.path(), "dev", "seeder");
    let secret_rules: Vec<(String, Vec<String>)> = got
        .iter()
        .filter(|(p, _)| p.starts_with("secret/"))
        .cloned()
        .collect();
    assert_eq!(
        secret_rules,
        rules(&[
            ("secret/data/team/A", &["create", "update", "read"]),
            ("secret/data/team/B", &["create", "update", "read"]),
            ("secret/data/team/api/*", &["create", "update", "read"]),
            ("secret/metadata/team", &["list"]),
            ("secret/metadata/team/A", &["update"]),
            ("secret/metadata/team/B", &["update"]),
            ("secret/metadata/team/api/*", &["update", "list"]),
        ])
    );
    has(&text, "# vault-seed: exact paths under `secret/data/team/`");
    // A token holding exactly it applies and verifies both applications' secrets.
    let policy = Run::offline()
        .specs(dir.path())
        .args(["policy", "dev", "--for", "seeder"])
        .output()
        .stdout_text();
    bao.put_policy("vault-seed", &policy);
    let token = bao.token_with_policies(&["vault-seed"]);
    bao.kv_put("secret", "team/other-app-secret", json!({"k": "v"}));
    Run::new(&bao)
        .token(&token)
        .specs(dir.path())
        .args(["apply", "dev"])
        .output();
    assert_eq!(bao.kv_version("secret", "team/A"), Some(1));
    Run::new(&bao)
        .token(&token)
        .specs(dir.path())
        .args(["verify", "dev", "--only", "vault"])
        .output();
    assert!(!may(
        &bao,
        &token,
        "GET",
        "secret/data/team/other-app-secret"
    ));
    assert!(!may(
        &bao,
        &token,
        "POST",
        "secret/data/team/other-app-secret"
    ));
}

/// An environment's own folder (`{env}` a segment of the folder) is owned; so is the
/// application's (its name a segment); a path another application provides is named exactly.
#[test]
fn a_folder_named_by_the_environment_is_owned_and_a_provided_path_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("app.toml"),
        r#"name = "app"
[vault]
mount = "secret"
path = "shared/{env}"
[environments.dev]
[eso]
access = ["read"]
[secrets.A]
description = "a"
fields.password = { generator = "hex32" }
[secrets.DB]
description = "the database's"
provided_by = "the database app"
path = "db/{env}/app-password"
fields.password = {}
"#,
    )
    .unwrap();
    let (got, text) = printed(dir.path(), "dev", "eso");
    assert_eq!(
        got,
        rules(&[
            ("secret/data/db/dev/app-password", &["read"]),
            ("secret/data/shared/dev/*", &["read"]),
        ])
    );
    has(
        &text,
        "# vault-seed: exact paths for what other applications provide: their folders are theirs\n",
    );
}

fn airgap_specs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("secret-specs-airgap")
}

/// The air-gap spec keeps its secrets directly under `secret/ask/`, which other applications
/// share: VSO's policy names each path, and `verify` asks for exactly those.
#[test]
fn vsos_policy_for_the_airgap_spec_names_each_path_and_verify_asks_for_those() {
    let bao = OpenBao::dev();
    let (got, text) = printed(&airgap_specs(), "auh1-dev", "vso");
    let paths = [
        "secret/data/ask/core-service-secret",
        "secret/data/ask/frontend",
        "secret/data/ask/harbor-pull-secret",
        "secret/data/ask/zitadel-psql-secret",
        "secret/data/ask/zitadel-secret-kv",
    ];
    assert_eq!(
        got,
        paths
            .iter()
            .map(|p| (p.to_string(), vec!["read".to_string()]))
            .collect::<Vec<_>>()
    );
    assert!(!text.contains("ask/*"), "{text}");
    has(
        &text,
        "# vault-seed: exact paths under `secret/data/ask/`: a folder neither application `core-service-airgap` nor environment `auh1-dev` names, which other applications may share\n",
    );

    // Written as `vso-ask`: VSO reads each Secret's path, and nothing else under `ask/`.
    let policy = Run::offline()
        .specs(airgap_specs())
        .args(["policy", "auh1-dev", "--for", "vso"])
        .output()
        .stdout_text();
    bao.vso_role("vso-ask", &policy);
    let token = bao.token_with_policies(&["vso-ask"]);
    for p in paths {
        assert!(may(&bao, &token, "GET", p), "{p}");
    }
    bao.kv_put("secret", "ask/hatchet/auh1-dev/x", json!({"k": "v"}));
    assert!(!may(
        &bao,
        &token,
        "GET",
        "secret/data/ask/hatchet/auh1-dev/x"
    ));
    assert!(!may(&bao, &token, "GET", "secret/data/ask/other"));
    Run::new(&bao)
        .specs(airgap_specs())
        .args(["verify", "auh1-dev", "--only", "policy"])
        .output();

    // A policy that lacks them: `verify`'s fix lines name the paths, never `ask/*`.
    bao.put_policy(
        "vso-ask",
        r#"path "secret/data/ask/frontend" { capabilities = ["read"] }"#,
    );
    let out = Run::new(&bao)
        .specs(airgap_specs())
        .args(["verify", "auh1-dev", "--only", "policy"])
        .status(1)
        .output();
    let text = out.stdout_text();
    has(
        &text,
        r#"add: path "secret/data/ask/core-service-secret" { capabilities = ["read"] }"#,
    );
    assert!(!text.contains("ask/*"), "{text}");
    has(
        &text,
        "# vault-seed: `*` only over a folder the specs own; exact paths elsewhere, where a `*` would reach other applications' secrets",
    );
}
