//! An environment with a KV v1 mount and a KV v2 mount (issue 13, "Defects to fix on the way"):
//! `verify` judged ESO's policy against one KV version for every mount, so the KV v1 mount's
//! requirements were built on `<mount>/data/...`, paths ESO never reads there. Each mount's
//! requirements now come from its own detected version; the server (`sys/capabilities` for a
//! token with ESO's policies, and real reads with it) is the oracle.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{OpenBao, Run};
use serde_json::{json, Value};

/// Two applications of environment `dev`: `a` on `secret/` (KV v2), `b` on `legacy/` (KV v1,
/// and its spec does not say so: the mount's version is detected).
fn specs(dir: &Path) {
    std::fs::write(
        dir.join("a.toml"),
        "[vault]\nmount = \"secret\"\npath = \"a/{env}\"\n[environments.dev]\n[eso]\npolicies = [\"eso-mixed\"]\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex32\" }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.toml"),
        "[vault]\nmount = \"legacy\"\npath = \"b/{env}\"\n[environments.dev]\n[eso]\npolicies = [\"eso-mixed\"]\n[secrets.B]\ndescription = \"b\"\nfields.password = { generator = \"hex32\" }\n",
    )
    .unwrap();
}

/// The policy part of `verify dev --skip-kube -o json`, and the exit code (the caller asserts
/// it).
fn policy_part(bao: &OpenBao, dir: &Path) -> (i32, Value) {
    let out = Run::new(bao)
        .specs(dir)
        .args(["-o", "json", "verify", "dev", "--skip-kube"])
        .any_status()
        .output();
    (out.status.code().unwrap(), out.json()["policy"].clone())
}

/// What the server grants a token on each path (`sys/capabilities`).
fn server_grants(bao: &OpenBao, token: &str, paths: &[String]) -> Vec<BTreeSet<String>> {
    let (status, body) = bao.api(
        "POST",
        "sys/capabilities",
        Some(&json!({ "token": token, "paths": paths })),
    );
    assert_eq!(status, 200, "{body}");
    paths
        .iter()
        .map(|p| {
            body["data"][p]
                .as_array()
                .unwrap_or_else(|| panic!("no answer for `{p}`: {body}"))
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// vault-seed's verdict on every required path agrees with the server's answer for a token
/// carrying ESO's policies (`default` included, as ESO's token has it).
fn agrees_with_server(bao: &OpenBao, policy: &Value) {
    let token = bao.token_with_policies(&["eso-mixed"]);
    let paths: Vec<&Value> = policy["report"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let names: Vec<String> = paths
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    for (p, server) in paths.iter().zip(server_grants(bao, &token, &names)) {
        let required: Vec<&str> = p["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let server_has_all = required.iter().all(|c| server.contains(*c));
        let missing = p["missing"].as_array().unwrap();
        assert_eq!(
            missing.is_empty(),
            server_has_all,
            "`{}`: vault-seed says missing {missing:?}, the server grants {server:?}",
            p["path"]
        );
    }
}

#[test]
fn each_mount_is_judged_at_its_own_kv_version() {
    let bao = OpenBao::dev();
    bao.mount_kv("legacy", 1);
    let dir = tempfile::tempdir().unwrap();
    specs(dir.path());
    Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev"])
        .output();
    assert_eq!(bao.api("GET", "legacy/b/dev/B", None).0, 200);

    // The policy right for each engine: KV v2 paths under `data/` and `metadata/`, KV v1 paths
    // as they are.
    bao.put_policy(
        "eso-mixed",
        r#"
path "secret/data/a/*"     { capabilities = ["create", "update", "read"] }
path "secret/metadata/a/*" { capabilities = ["read", "list"] }
path "legacy/b/*"          { capabilities = ["create", "update", "read"] }
"#,
    );
    let (code, policy) = policy_part(&bao, dir.path());
    assert_eq!(code, 0, "{policy:#}");
    assert_eq!(policy["ok"], true, "{policy:#}");
    let paths: Vec<&str> = policy["report"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "legacy/b/dev/B",
            "secret/data/a/dev/A",
            "secret/metadata/a/dev/A"
        ]
    );
    agrees_with_server(&bao, &policy);
    // ESO, with such a token, reads both.
    let token = bao.token_with_policies(&["eso-mixed"]);
    assert_eq!(bao.api_as(&token, "GET", "legacy/b/dev/B", None).0, 200);
    assert_eq!(
        bao.api_as(&token, "GET", "secret/data/a/dev/A", None).0,
        200
    );

    // The policy a tool that took every mount for KV v2 would write: vault-seed says ESO cannot
    // read `legacy/b/dev/B`, and so does the server.
    bao.put_policy(
        "eso-mixed",
        r#"
path "secret/data/a/*"       { capabilities = ["create", "update", "read"] }
path "secret/metadata/a/*"   { capabilities = ["read", "list"] }
path "legacy/data/b/*"       { capabilities = ["create", "update", "read"] }
path "legacy/metadata/b/*"   { capabilities = ["read", "list"] }
"#,
    );
    let (code, policy) = policy_part(&bao, dir.path());
    assert_eq!(code, 1, "{policy:#}");
    assert_eq!(policy["ok"], false, "{policy:#}");
    let gaps: Vec<&str> = policy["report"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["missing"].as_array().unwrap().is_empty())
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(gaps, ["legacy/b/dev/B"], "{policy:#}");
    assert_eq!(
        policy["report"]["add"][0]["path"], "legacy/b/*",
        "{policy:#}"
    );
    agrees_with_server(&bao, &policy);
    let token = bao.token_with_policies(&["eso-mixed"]);
    assert_eq!(bao.api_as(&token, "GET", "legacy/b/dev/B", None).0, 403);
}
