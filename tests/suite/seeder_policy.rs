//! `vault-seed policy ENV --for seeder` against a real OpenBao: a token holding exactly the
//! printed policy (not even `default`) can `apply`, `verify --skip-kube`, `set` and `rotate` the
//! real spec, logging in and revoking its token; it is denied another application's folder and
//! `sys/policies`; and every capability of the policy is used (without any one of them, some
//! command fails or does less and says so).

use crate::common;

use common::{has, OpenBao, Run};
use serde_json::{json, Value};

const ENV: &str = "auh1-dev";
const FOLDER: &str = "ask/core-service/auh1-dev";
const SECRETS: &[&str] = &[
    "SECURITY__API_KEY_SALT",
    "SECURITY__MASTER_ENCRYPTION_KEY",
    "APP__CORE_SERVICES_MACHINE_TOKEN",
    "ZITADEL_MASTERKEY",
    "IAM_SERVICE__PAT",
    "HATCHET__CLIENT_TOKEN",
];

/// What `apply` notes, the seeder policy granting only `read` on the paths ask-db provides.
const PROVIDED_NOT_LISTED: &str =
    "the token may not `list` `secret/metadata/ask/postgresql/auh1-dev`: each path was read instead";

/// `policy ENV --for WHO -o json`'s HCL (the real spec), and the rules as (path, capabilities).
pub(crate) fn printed(who: &str) -> (String, Vec<(String, Vec<String>)>) {
    let doc = Run::offline()
        .real_specs()
        .args(["policy", ENV, "--for", who, "-o", "json"])
        .output()
        .json();
    let rules = doc["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let caps = r["capabilities"].as_array().unwrap();
            (
                r["path"].as_str().unwrap().to_string(),
                caps.iter()
                    .map(|c| c.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    (doc["policy"].as_str().unwrap().to_string(), rules)
}

/// Rules back to HCL.
fn hcl(rules: &[(String, Vec<String>)]) -> String {
    rules
        .iter()
        .filter(|(_, caps)| !caps.is_empty())
        .map(|(path, caps)| format!("path {path:?} {{ capabilities = {caps:?} }}\n"))
        .collect()
}

fn ok(status: u16, body: &Value, what: &str) {
    assert!((200..300).contains(&status), "{what}: HTTP {status} {body}");
}

/// OpenBao with ESO's side as the spec names it (policy `eso-ask-push` as `policy --for eso`
/// prints it, role `auth/kubernetes/role/eso`), and an AppRole `seeder` whose tokens carry only
/// policy `vault-seed` (no `default`). Returns the role-id and secret-id files' directory.
fn vault() -> (OpenBao, tempfile::TempDir) {
    let bao = OpenBao::dev();
    bao.eso_role(&printed("eso").0);
    // The paths ask-db provides exist, as after its sync: `verify` can be done.
    bao.ask_db_pushes();
    let (s, b) = bao.api(
        "POST",
        "sys/auth/approle",
        Some(&json!({"type": "approle"})),
    );
    ok(s, &b, "enable approle");
    let (s, b) = bao.api(
        "POST",
        "auth/approle/role/seeder",
        Some(&json!({"token_policies": ["vault-seed"], "token_no_default_policy": true, "token_ttl": "10m"})),
    );
    ok(s, &b, "approle role");
    let (s, b) = bao.api("GET", "auth/approle/role/seeder/role-id", None);
    ok(s, &b, "role-id");
    let role_id = b["data"]["role_id"].as_str().unwrap().to_string();
    let (s, b) = bao.api("POST", "auth/approle/role/seeder/secret-id", None);
    ok(s, &b, "secret-id");
    let secret_id = b["data"]["secret_id"].as_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("role-id"), role_id).unwrap();
    std::fs::write(dir.path().join("secret-id"), secret_id).unwrap();
    (bao, dir)
}

/// A token carrying exactly policy `vault-seed`: not `default` either.
fn seeder_token(bao: &OpenBao) -> String {
    let (s, b) = bao.api(
        "POST",
        "auth/token/create",
        Some(&json!({"policies": ["vault-seed"], "no_default_policy": true, "ttl": "10m"})),
    );
    ok(s, &b, "token create");
    assert_eq!(b["auth"]["policies"], json!(["vault-seed"]), "{b}");
    b["auth"]["client_token"].as_str().unwrap().to_string()
}

/// What one round of the four commands did with policy `vault-seed` as given.
struct Round {
    /// Each command's exit code and everything it printed.
    runs: Vec<(&'static str, i32, String)>,
    /// vault-seed's custom_metadata is on every path.
    metadata: bool,
    /// The AppRole login's token is gone after `apply`.
    revoked: bool,
}

impl Round {
    /// Every command succeeded, did all of its work and said nothing was refused.
    fn complete(&self) -> bool {
        self.runs.iter().all(|(_, code, out)| {
            // The one refusal the policy means: the provider's folder is not listed, its paths
            // are read one by one.
            let out: String = out
                .lines()
                .filter(|l| !l.contains(PROVIDED_NOT_LISTED))
                .collect();
            *code == 0
                && !out.contains("permission denied")
                && !out.contains("may not")
                && !out.contains("could not")
        }) && self.metadata
            && self.revoked
    }

    fn show(&self) -> String {
        let mut s = format!("metadata: {}, revoked: {}\n", self.metadata, self.revoked);
        for (cmd, code, out) in &self.runs {
            s.push_str(&format!("--- {cmd}: exit {code}\n{out}\n"));
        }
        s
    }
}

/// With policy `vault-seed` = `policy`, on an empty folder: `apply` (logged in by AppRole),
/// `verify --skip-kube`, `set`, `rotate` (with a plain token of that policy).
fn round(bao: &OpenBao, login: &std::path::Path, policy: &str) -> Round {
    for name in SECRETS {
        let (s, b) = bao.api("DELETE", &format!("secret/metadata/{FOLDER}/{name}"), None);
        ok(s, &b, "reset");
    }
    bao.put_policy("vault-seed", policy);
    // Every run is judged at the end, together (`runs`).
    let seed = || Run::offline().real_specs().addr(&bao.addr).any_status();
    let mut runs = Vec::new();
    let accessors =
        |bao: &OpenBao| bao.api("LIST", "auth/token/accessors", None).1["data"]["keys"].clone();
    let before = accessors(bao);
    let out = seed()
        .env("VAULT_SEED_AUTH", "approle")
        .env("VAULT_SEED_ROLE_ID_FILE", login.join("role-id"))
        .env("VAULT_SEED_SECRET_ID_FILE", login.join("secret-id"))
        .args(["apply", ENV])
        .output();
    runs.push(("apply", out.code(), out.all_text()));
    let revoked = accessors(bao) == before;
    let token = seeder_token(bao);
    let out = seed()
        .token(&token)
        .args(["verify", ENV, "--skip-kube", "-o", "json"])
        .output();
    let method = serde_json::from_slice::<Value>(&out.stdout)
        .map(|d| d["policy"]["method"].clone())
        .unwrap_or_default();
    runs.push((
        "verify",
        out.code(),
        format!("policy method: {method}\n{}", out.all_text()),
    ));
    if method != "policies" {
        // Decided otherwise than by reading ESO's policies: something was refused.
        runs.push((
            "verify's policy part",
            1,
            "not decided from the policies".into(),
        ));
    }
    let out = seed()
        .token(&token)
        .args(["set", ENV, "IAM_SERVICE__PAT"])
        .stdin("pat-from-zitadel-0123456789")
        .output();
    runs.push(("set", out.code(), out.all_text()));
    let out = seed()
        .token(&token)
        .args(["rotate", ENV, "APP__CORE_SERVICES_MACHINE_TOKEN", "--yes"])
        .output();
    runs.push(("rotate", out.code(), out.all_text()));
    let metadata = SECRETS.iter().all(|name| {
        let (_, meta) = bao.api("GET", &format!("secret/metadata/{FOLDER}/{name}"), None);
        meta["data"]["custom_metadata"]["managed-by"] == "vault-seed"
    });
    Round {
        runs,
        metadata,
        revoked,
    }
}

#[test]
fn a_token_with_exactly_the_seeder_policy_applies_verifies_sets_and_rotates() {
    let (bao, login) = vault();
    let (policy, _) = printed("seeder");
    let r = round(&bao, login.path(), &policy);
    assert!(r.complete(), "{}", r.show());
    // Each did its work: every path written, the PAT set, the machine token rotated.
    for name in SECRETS {
        assert!(
            bao.kv_get("secret", &format!("{FOLDER}/{name}")).is_some(),
            "{name}"
        );
    }
    let (pat, version) = bao
        .kv_get("secret", &format!("{FOLDER}/IAM_SERVICE__PAT"))
        .unwrap();
    assert_eq!(pat["value"], "pat-from-zitadel-0123456789");
    assert_eq!(version, 2);
    assert_eq!(
        bao.kv_version(
            "secret",
            &format!("{FOLDER}/APP__CORE_SERVICES_MACHINE_TOKEN")
        ),
        Some(2)
    );
    has(&r.runs[0].2, "token from approle login at `auth/approle`");
    has(&r.runs[0].2, "3 field(s) present, 0 absent");
    has(&r.runs[0].2, PROVIDED_NOT_LISTED);
    // No value read back, the PAT typed at `set` included, appears in any output.
    let all: String = r.runs.iter().map(|(_, _, o)| o.as_str()).collect();
    for name in SECRETS {
        let (data, _) = bao.kv_get("secret", &format!("{FOLDER}/{name}")).unwrap();
        // (A placeholder's marker is no secret.)
        let values = data.values().filter_map(Value::as_str);
        for v in values.filter(|v| v.len() >= 8 && *v != "placeholder") {
            assert!(!all.contains(v), "a value of {name} appears in the output");
        }
    }
}

#[test]
fn the_seeder_policy_is_denied_elsewhere() {
    let (bao, _login) = vault();
    bao.put_policy("vault-seed", &printed("seeder").0);
    let token = seeder_token(&bao);
    // Another application's folder, next to core-service's: vault-seed is refused there and
    // writes nothing.
    let other = common::spec_dir(
        r#"
name = "billing"
[vault]
mount = "secret"
path = "ask/billing/{env}"
kv_version = 2
[environments.auh1-dev]
[secrets.STRIPE_KEY]
description = "s"
fields.password = { generator = "hex32" }
"#,
    );
    let out = Run::new(&bao)
        .token(&token)
        .specs(other.path())
        .args(["apply", ENV])
        .status(1)
        .output();
    has(&out.all_text(), "denied");
    let (s, _) = bao.api("LIST", "secret/metadata/ask/billing/auh1-dev", None);
    assert_eq!(
        s, 404,
        "something was written to another application's folder"
    );
    // Directly: other folders, the policies, tokens, deleting its own secrets.
    for (method, path, body) in [
        ("GET", "secret/data/ask/billing/auh1-dev/STRIPE_KEY", None),
        (
            "POST",
            "secret/data/ask/billing/auh1-dev/STRIPE_KEY",
            Some(json!({"data": {"password": "x"}})),
        ),
        ("LIST", "secret/metadata/ask/", None),
        ("GET", "secret/data/ask/core-service-admin/auh1-dev/X", None),
        (
            "PUT",
            "sys/policies/acl/vault-seed",
            Some(json!({"policy": "path \"*\" { capabilities = [\"sudo\"] }"})),
        ),
        ("GET", "sys/policies/acl/vault-seed", None),
        ("LIST", "sys/policies/acl", None),
        ("DELETE", "sys/policies/acl/eso-ask-push", None),
        (
            "POST",
            "auth/kubernetes/role/eso",
            Some(json!({"token_policies": ["vault-seed"]})),
        ),
        (
            "POST",
            "auth/token/create",
            Some(json!({"policies": ["eso-ask-push"]})),
        ),
        (
            "DELETE",
            "secret/metadata/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
            None,
        ),
        (
            "POST",
            "secret/destroy/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
            Some(json!({"versions": [1]})),
        ),
        ("GET", "sys/mounts", None),
    ] {
        let (s, b) = bao.api_as(&token, method, path, body.as_ref());
        assert_eq!(s, 403, "{method} {path}: {b}");
    }
}

#[test]
fn every_capability_of_the_seeder_policy_is_used() {
    let (bao, login) = vault();
    let (_, rules) = printed("seeder");
    let mut unused = Vec::new();
    for (i, (path, caps)) in rules.iter().enumerate() {
        for cap in caps {
            let mut less = rules.clone();
            less[i].1.retain(|c| c != cap);
            let r = round(&bao, login.path(), &hcl(&less));
            if r.complete() {
                unused.push(format!("`{cap}` on `{path}`"));
            }
        }
    }
    // The full policy, as a control: the rounds above failed for want of a capability.
    let r = round(&bao, login.path(), &hcl(&rules));
    assert!(r.complete(), "{}", r.show());
    assert!(unused.is_empty(), "not needed: {unused:?}");
}
