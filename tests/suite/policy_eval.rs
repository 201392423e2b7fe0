//! The policy evaluator against a real OpenBao server, the oracle: random policies and paths,
//! the evaluator's answer must equal `sys/capabilities`. Plus the runbook's policy and the
//! output of `vault-seed policy`, checked both ways.

use crate::common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{OpenBao, Run};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;
use vault_seed::acl::{self as policy, Acl, MatchKind, Policy, Requirement};

/// A token holding exactly `policies`: no `default` policy, whose rules would blur the answer.
fn token_without_default(bao: &OpenBao, policies: &[String]) -> String {
    let (status, body) = bao.api(
        "POST",
        "auth/token/create",
        Some(&json!({ "policies": policies, "no_default_policy": true, "ttl": "1h" })),
    );
    assert_eq!(status, 200, "token create: {body}");
    body["auth"]["client_token"]
        .as_str()
        .expect("client_token")
        .to_string()
}

/// `sys/capabilities` for many paths in one call; the answer per path is under `data.<path>`.
fn server_capabilities(bao: &OpenBao, token: &str, paths: &[String]) -> Vec<BTreeSet<String>> {
    let (status, body) = bao.api(
        "POST",
        "sys/capabilities",
        Some(&json!({ "token": token, "paths": paths })),
    );
    assert_eq!(status, 200, "sys/capabilities: {body}");
    paths
        .iter()
        .map(|p| {
            body["data"][p]
                .as_array()
                .unwrap_or_else(|| panic!("no answer for `{p}` in {body}"))
                .iter()
                .map(|c| c.as_str().expect("capability name").to_string())
                .collect()
        })
        .collect()
}

// ---- the differential property test --------------------------------------------------------

/// Segment names chosen so that patterns and paths collide often, including partial globs
/// (`a*` matches `ab`).
const SEGMENTS: &[&str] = &["a", "b", "ab", "c"];
/// The capabilities OpenBao knows (`subscribe` and `recover` are Vault's only).
const CAPS: &[&str] = &[
    "create", "read", "update", "patch", "delete", "list", "sudo", "scan",
];

fn segment() -> impl Strategy<Value = String> {
    prop::sample::select(SEGMENTS).prop_map(str::to_string)
}

/// A pattern: 1 to 4 segments (names or `+`), then exact, a partial glob (`x/a*`) or a folder
/// glob (`x/a/*`); sometimes `*` alone or with a leading `/`.
fn pattern() -> impl Strategy<Value = String> {
    // `+a` is no wildcard but makes Vault rank the pattern as one (`/+` in it): a corner case.
    let seg_or_plus = prop_oneof![
        6 => segment(),
        2 => Just("+".to_string()),
        1 => Just("+a".to_string()),
    ];
    let body = (
        prop::collection::vec(seg_or_plus, 1..=4),
        0u8..3,
        any::<bool>(),
    )
        .prop_map(|(segs, end, slash)| {
            let mut p = segs.join("/");
            match end {
                1 if !p.ends_with('+') => p.push('*'),
                1 | 2 => p.push_str("/*"),
                _ => {}
            }
            if slash && p.len() % 3 == 0 {
                p.insert(0, '/');
            }
            p
        });
    prop_oneof![12 => body, 1 => Just("*".to_string())]
}

fn capabilities() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        8 => prop::sample::subsequence(CAPS, 0..=4)
            .prop_map(|c| c.into_iter().map(str::to_string).collect()),
        1 => Just(vec!["deny".to_string()]),
        1 => prop::sample::subsequence(CAPS, 1..=2).prop_map(|c| {
            let mut v: Vec<String> = c.into_iter().map(str::to_string).collect();
            v.push("deny".to_string());
            v
        }),
    ]
}

/// One policy: its rules as (index into the case's pattern pool, capabilities), and whether it is
/// written as JSON.
type RawPolicy = (Vec<(usize, Vec<String>)>, bool);

#[derive(Debug, Clone)]
struct Case {
    pool: Vec<String>,
    policies: Vec<RawPolicy>,
    paths: Vec<String>,
}

fn path() -> impl Strategy<Value = String> {
    (prop::collection::vec(segment(), 1..=5), 0u8..6).prop_map(|(segs, end)| {
        let mut p = segs.join("/");
        if end == 0 {
            p.push('/');
        }
        p
    })
}

fn case() -> impl Strategy<Value = Case> {
    let pool = prop::collection::vec(pattern(), 2..=6);
    let rule = (any::<prop::sample::Index>(), capabilities());
    let policy = (prop::collection::vec(rule, 1..=5), any::<bool>());
    let policies = prop::collection::vec(policy, 1..=3);
    let paths = prop::collection::vec(path(), 8..=14);
    let fills = prop::collection::vec((segment(), 0u8..3), 8);
    (pool, policies, paths, fills).prop_map(|(pool, policies, mut paths, fills)| {
        let policies = policies
            .into_iter()
            .map(|(rules, as_json)| {
                (
                    rules
                        .into_iter()
                        .map(|(i, c)| (i.index(pool.len()), c))
                        .collect(),
                    as_json,
                )
            })
            .collect();
        // Paths derived from the patterns, so that most patterns match something.
        for (i, p) in pool.iter().enumerate() {
            let (fill, extra) = &fills[i % fills.len()];
            let derived = p
                .trim_start_matches('/')
                .split('/')
                .map(|s| if s == "+" { fill.as_str() } else { s })
                .collect::<Vec<_>>()
                .join("/")
                .replace('*', "");
            let longer = match extra {
                0 => format!("{derived}{fill}"),
                1 => format!("{derived}/{fill}"),
                _ => format!("{derived}/"),
            };
            paths.extend([derived, longer].into_iter().filter(|p| !p.is_empty()));
        }
        paths.sort();
        paths.dedup();
        Case {
            pool,
            policies,
            paths,
        }
    })
}

/// Constraints that restrict requests but never change capabilities, in the forms hcl-rs could
/// not read (several on one line, trailing commas): `sys/capabilities` must ignore them as the
/// evaluator does.
const CONSTRAINTS: &[&str] = &[
    "",
    "min_wrapping_ttl = \"1s\"",
    "required_parameters = [\"x\"] allowed_parameters = { \"y\" = [] },",
    "denied_parameters = { \"*\" = [] } max_wrapping_ttl = 90, pagination_limit = 5",
    "expiration = 4102444800 comment = [\"until 2100\"]",
];

fn policy_text(pool: &[String], rules: &[(usize, Vec<String>)], as_json: bool) -> String {
    if as_json {
        // A list of single-path objects, so one pattern may occur twice in one policy.
        let items: Vec<serde_json::Value> = rules
            .iter()
            .map(|(i, c)| json!({ pool[*i].clone(): { "capabilities": c, "required_parameters": ["x"] } }))
            .collect();
        json!({ "path": items }).to_string()
    } else {
        rules
            .iter()
            .enumerate()
            .map(|(n, (i, c))| {
                let caps = serde_json::to_string(c).unwrap();
                let extra = CONSTRAINTS[(n + *i) % CONSTRAINTS.len()];
                // One line (several blocks may share it), or one key per line.
                if (n + *i) % 2 == 0 {
                    format!(
                        "path \"{}\" {{ capabilities = {caps}, {extra} }} ",
                        pool[*i]
                    )
                } else {
                    format!(
                        "path \"{}\" {{\n  capabilities = {caps}\n  {extra}\n}}\n",
                        pool[*i]
                    )
                }
            })
            .collect()
    }
}

#[test]
fn evaluator_agrees_with_the_server_on_random_policies() {
    let started = std::time::Instant::now();
    let bao = OpenBao::dev();
    let counter = AtomicUsize::new(0);
    let compared = AtomicUsize::new(0);
    let matched = AtomicUsize::new(0);
    // How often each kind of rule decided, and how often the decision was a `deny`.
    let kinds = [
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ];
    let mut runner = TestRunner::new(Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |case| {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let mut names = Vec::new();
        let mut parsed: Vec<Policy> = Vec::new();
        let mut texts = Vec::new();
        for (i, (rules, as_json)) in case.policies.iter().enumerate() {
            let name = format!("case{n}-p{i}");
            let text = policy_text(&case.pool, rules, *as_json);
            bao.put_policy(&name, &text);
            parsed.push(
                policy::parse(&name, &text)
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?,
            );
            names.push(name);
            texts.push(text);
        }
        let token = token_without_default(&bao, &names);
        let answers = server_capabilities(&bao, &token, &case.paths);
        let acl = Acl::new(&parsed);
        for (path, server) in case.paths.iter().zip(answers) {
            let grant = acl.capabilities(path);
            compared.fetch_add(1, Ordering::Relaxed);
            if let Some(d) = &grant.decided_by {
                matched.fetch_add(1, Ordering::Relaxed);
                let k = match d.kind {
                    MatchKind::Exact => 0,
                    MatchKind::Prefix => 1,
                    MatchKind::Segment => 2,
                };
                kinds[k].fetch_add(1, Ordering::Relaxed);
                if d.denied {
                    kinds[3].fetch_add(1, Ordering::Relaxed);
                }
            }
            if grant.server_answer() != server {
                return Err(TestCaseError::fail(format!(
                    "path `{path}`: server {server:?}, evaluator {:?} (decided by {:?})\npolicies:\n{}",
                    grant.server_answer(),
                    grant.decided_by,
                    texts.join("\n---\n")
                )));
            }
        }
        Ok(())
    });
    let (compared, matched) = (compared.into_inner(), matched.into_inner());
    let [exact, prefix, segment, denied] = kinds.map(AtomicUsize::into_inner);
    eprintln!(
        "{} cases, {compared} paths compared, {matched} matched a rule (exact {exact}, prefix {prefix}, `+` {segment}; {denied} denied) in {:.1?}",
        counter.into_inner(),
        started.elapsed()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    // The generator must make matches frequent, or the comparison proves little.
    assert!(compared >= 3000, "only {compared} paths compared");
    assert!(
        matched * 2 >= compared,
        "only {matched} of {compared} paths matched a rule"
    );
}

// ---- the real spec, the runbook's policy, and `vault-seed policy` ---------------------------

/// The runbook's grant, and ESO's read of the database passwords ask-db pushes (issue 15: the
/// spec's provided paths, under `ask/postgresql/`).
const RUNBOOK: &str = r#"
path "secret/data/ask/core-service/*"     { capabilities = ["create", "update", "read"] }
path "secret/data/ask/postgresql/*"       { capabilities = ["read"] }
path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"] }
"#;

/// What `vault-seed policy auh1-dev` prints as rules: the runbook's folder grants, and ESO's
/// read of each path ask-db provides by its own path (a glob over `ask/postgresql/` would reach
/// every password ask-db keeps there).
const PRINTED: &str = r#"path "secret/data/ask/core-service/*"                               { capabilities = ["create", "update", "read"] }
path "secret/data/ask/postgresql/auh1-dev/core-pg-superuser"        { capabilities = ["read"] }
path "secret/data/ask/postgresql/auh1-dev/core-service-db-password" { capabilities = ["read"] }
path "secret/data/ask/postgresql/auh1-dev/zitadel-db-password"      { capabilities = ["read"] }
path "secret/metadata/ask/core-service/*"                           { capabilities = ["read", "list"] }
"#;

fn core_service_requirements() -> Vec<Requirement> {
    let set = vault_seed::spec::load_dir(&common::repo_specs()).expect("repo specs load");
    let plan = set.plan("auh1-dev", &[]).expect("auh1-dev plan");
    policy::requirements(&plan, &|_| None)
}

/// Every requirement is granted by the server for a token holding `policy_text` alone.
fn server_grants_all(bao: &OpenBao, name: &str, policy_text: &str, reqs: &[Requirement]) -> bool {
    bao.put_policy(name, policy_text);
    let token = token_without_default(bao, &[name.to_string()]);
    let paths: Vec<String> = reqs.iter().map(|r| r.path.clone()).collect();
    let answers = server_capabilities(bao, &token, &paths);
    reqs.iter()
        .zip(answers)
        .all(|(r, server)| r.capabilities.iter().all(|c| server.contains(c.as_str())))
}

#[test]
fn runbook_policy_passes_and_without_metadata_fails() {
    let reqs = core_service_requirements();
    // 6 secrets: data and metadata paths of each (access = read, push); 3 provided: read on
    // their data paths only.
    assert_eq!(reqs.len(), 15);

    let full = policy::parse("eso-ask-push", RUNBOOK).unwrap();
    let report = policy::check(&[full], reqs.clone());
    assert!(report.ok, "{report:#?}");
    assert!(report.add.is_empty());

    let data_only = RUNBOOK
        .lines()
        .filter(|l| !l.contains("metadata"))
        .collect::<Vec<_>>()
        .join("\n");
    let partial = policy::parse("eso-ask-push", &data_only).unwrap();
    let report = policy::check(&[partial], reqs.clone());
    assert!(!report.ok);
    let gaps: Vec<_> = report.gaps().collect();
    assert_eq!(gaps.len(), 6);
    for g in &gaps {
        assert!(
            g.path
                .starts_with("secret/metadata/ask/core-service/auh1-dev/"),
            "{}",
            g.path
        );
        let missing: Vec<&str> = g.missing.iter().map(|c| c.as_str()).collect();
        assert_eq!(missing, ["read", "list"]);
    }
    assert_eq!(
        report.suggestion_hcl(),
        "path \"secret/metadata/ask/core-service/*\" { capabilities = [\"read\", \"list\"] }\n"
    );
    let text = vault_seed::report::gaps::render(
        &report,
        &["eso-ask-push".to_string()],
        &vault_seed::report::Style::plain(),
        false,
    );
    // The six gaps are one: one error, one rule.
    assert!(text.starts_with(
        "error: policy `eso-ask-push` does not grant `read`, `list` on 6 paths under `secret/metadata/ask/core-service/auh1-dev/` (PushSecret; granted: nothing; -v lists them)\n"
    ), "{text}");
    assert_eq!(text.matches("error:").count(), 1, "{text}");
    assert!(text.contains(
        "  add: path \"secret/metadata/ask/core-service/*\" { capabilities = [\"read\", \"list\"] }"
    ), "{text}");

    // The server agrees on both.
    let bao = OpenBao::dev();
    assert!(server_grants_all(&bao, "eso-ask-push", RUNBOOK, &reqs));
    assert!(!server_grants_all(
        &bao,
        "eso-ask-push-partial",
        &data_only,
        &reqs
    ));
    // And the suggested rule, added, closes the gap on the server too.
    let fixed = format!("{data_only}\n{}", report.suggestion_hcl());
    assert!(server_grants_all(&bao, "eso-ask-push-fixed", &fixed, &reqs));
}

#[test]
fn vault_seed_policy_output_makes_the_check_pass() {
    let bao = OpenBao::dev();
    let out = Run::home(bao.home.path())
        .real_specs()
        .args(["policy", "auh1-dev"])
        .output();
    let hcl = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(hcl.starts_with("# vault-seed: "), "{hcl}");
    assert!(hcl.ends_with(PRINTED), "not the runbook's grant:\n{hcl}");

    let reqs = core_service_requirements();
    // The evaluator says it passes...
    let parsed = policy::parse("eso-minimal", &hcl).unwrap();
    assert!(policy::check(&[parsed], reqs.clone()).ok);
    // ...and so does the server, for a token holding only that policy.
    assert!(server_grants_all(&bao, "eso-minimal", &hcl, &reqs));
    // Read back from the server, it still parses to the same rules.
    let (status, body) = bao.api("GET", "sys/policies/acl/eso-minimal", None);
    assert_eq!(status, 200);
    let stored = policy::parse("eso-minimal", body["data"]["policy"].as_str().unwrap()).unwrap();
    assert_eq!(stored, policy::parse("eso-minimal", &hcl).unwrap());
}

#[test]
fn vault_seed_policy_json_output() {
    let out = Run::offline()
        .real_specs()
        .args(["policy", "auh1-dev", "--output", "json"])
        .output();
    let v = out.json();
    assert_eq!(v["env"], "auh1-dev");
    assert_eq!(v["policy"].as_str().unwrap(), PRINTED);
    let db = |name: &str| json!({"path": format!("secret/data/ask/postgresql/auh1-dev/{name}"), "capabilities": ["read"]});
    assert_eq!(
        v["rules"],
        json!([
            {"path": "secret/data/ask/core-service/*", "capabilities": ["create", "update", "read"]},
            db("core-pg-superuser"),
            db("core-service-db-password"),
            db("zitadel-db-password"),
            {"path": "secret/metadata/ask/core-service/*", "capabilities": ["read", "list"]},
        ])
    );
}

#[test]
fn vault_seed_policy_unknown_environment_is_a_usage_error() {
    let out = Run::offline()
        .real_specs()
        .args(["policy", "nowhere"])
        .status(2)
        .output();
    assert!(out.stdout.is_empty());
    let err = out.stderr_text();
    assert!(
        err.contains("no spec defines the environment `nowhere`"),
        "{err}"
    );
    assert!(err.contains("auh1-dev"), "{err}");
}

fn server_refuses(bao: &OpenBao, text: &str) {
    let (status, _) = bao.api(
        "PUT",
        "sys/policies/acl/bad",
        Some(&json!({ "policy": text })),
    );
    assert_eq!(status, 400, "the server refuses {text:?}");
}

/// What OpenBao refuses, vault-seed refuses too, with a message naming the policy.
#[test]
fn what_the_server_refuses_gives_clear_errors() {
    let bao = OpenBao::dev();
    for (text, format) in [
        ("path \"secret/*\" { capabilities = [\"read\" }", "HCL"),
        ("path \"secret/*\" {", "HCL"),
        ("path \"a\" = {\n  capabilities = [\"read\"]\n}", "HCL"),
        ("path \"a\" { capabilities = ['read'] }", "HCL"),
        ("path <<EOF\na\nEOF\n { capabilities = [\"read\"] }", "HCL"),
        ("path \"a\" { capabilities = [<<-EOT\nread\nEOT\n] }", "HCL"),
        ("{\"path\": [", "JSON"),
        (
            "{\"path\": {\"a\": {\"capabilities\": [\"read\"], \"x\": nul}}}",
            "JSON",
        ),
    ] {
        server_refuses(&bao, text);
        let e = policy::parse("eso-broken", text).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "policy `eso-broken` cannot be parsed as {format}: line "
            )),
            "{msg}"
        );
    }
    for text in [
        "path \"a\" { capabilities = \"read\" }",
        "path \"a\" { capabilities = [1] }",
        "path \"a\" { capabilities = [\"bogus\", \"deny\"] }",
        "path \"a\" { capabilities = [\"read\"] unknown = 1 }",
        "path \"a\" { capabilities = [\"read\"] min_wrapping_ttl = \"10s\" max_wrapping_ttl = \"5s\" }",
        "path \"a\" { capabilities = [\"read\"] list_scan_response_keys_filter_path = \"{{ .key }}\" }",
        "path \"a/}}\" { capabilities = [\"read\"] }",
        "path \"a/+*\" { capabilities = [\"read\"] }",
        "PATH \"a\" { capabilities = [\"read\"] }",
        "name = [\"x\"]",
        "path \"a\" { policy = <<EOT\nread\nEOT\n }",
        "{\"path\": {\"a\": {\"capabilities\": [\"read\", null]}}}",
    ] {
        server_refuses(&bao, text);
        let e = policy::parse("eso-broken", text).unwrap_err();
        assert!(e.to_string().contains("`eso-broken`"), "{e}");
        assert!(!e.help().unwrap_or_default().is_empty());
    }
}

/// Vault and OpenBao read policies with HCL 1, whose forms HCL 2 (and hcl-rs) reject or read
/// otherwise: several blocks or keys on one line, commas after keys, extra labels, a dangling
/// key at the end, lenient JSON. vault-seed reads each as the server does: the server accepts
/// it, and the evaluator's answer is the server's on every path.
#[test]
fn hcl1_forms_the_server_accepts() {
    let bao = OpenBao::dev();
    let forms = [
        "path \"a\" { capabilities = [\"read\"], }",
        "path \"a\" {\n  capabilities = [\"read\"],\n  policy = \"read\"\n}",
        "path \"a\" { capabilities = [\"read\"] policy = \"read\" }",
        "path \"b\" { capabilities = [\"list\"] } path \"a\" { capabilities = [\"read\"] }",
        "path \"a\" { capabilities = [\"read\"]\n}",
        "path \"a\" {\n  capabilities = [\"read\"]\n  allowed_parameters {\n    \"x\" = []\n  }\n}",
        "path \"a\" { capabilities = [\"read\"] required_parameters = [\"x\"] }",
        "path \"a\" { capabilities = [\"read\"] min_wrapping_ttl = \"1s\" max_wrapping_ttl = \"1h\" }",
        "path \"a\" { capabilities = [\"read\"] denied_parameters = { \"*\" = [] }, allowed_parameters = { x = [\"*\"], \"y\" = [] } }",
        "path \"a\" {\n  capabilities = [\"read\",\n  ]\n}",
        "name = \"x\"\npath \"a\" { capabilities = [\"read\"] }",
        "path \"a\" {\n  policy = \"write\"\n}",
        "path { capabilities = [\"read\"] }",
        "path \"a\" \"b\" { capabilities = [\"read\"] }",
        "path \"a\" { capabilities = [\"read\"]\n capabilities = [\"list\"] }",
        "path \"a\" { capabilities {} }",
        "path \"a\" { capabilities = [\"read\"] }\nname =",
        "path \"a\" { capabilities = [\"deny\", \"bogus\"] }",
        "path \"a\" { capabilities = [\"bogus\"] expiration = \"2020-01-01T00:00:00Z\" }",
        "path \"a\" { capabilities = [\"read\"] expiration = 1577836800 }",
        "path \"a\" { capabilities = [\"read\"] expiration = \"2100-01-01T00:00:00Z\" }",
        "path \"a\" { comment = [\"x\", {}] capabilities = [\"read\"] }",
        "path \"a\" { capabilities = [\"list\"] pagination_limit = \"0x10\" }",
        "path \"a\" { capabilities = [\"read\"] mfa_methods = [\"m\"] }",
        "path \"a/${x}\" { capabilities = [\"read\"] }",
        "path \"a\" { capabilities = [\"read\"] control_group = { factor \"f\" { controlled_capabilities = [\"read\"] identity { group_names = [\"g\"] approvals = 1 } } } }",
        "# c\n// d\n/* e */ path \"a\" { comment = <<EOT\nanything\nEOT\n capabilities = [\"read\"] }",
        "path \"a\" { capabilities = [\"read\"] allowed_parameters \"x\" {} }",
        "{\"path\": {\"a\": {\"capabilities\": [{}]}}}",
        "{\"path\": {\"secret/*\": ",
        "{\"path\": {\"a\": {\"capabilities\": [\"read\"]",
        "{\"path\": {\"a\": {\"capabilities\": [true, \"read\"]}}}",
        "{\"path\": {\"a\": {\"b\": {\"capabilities\": [\"read\"]}}}}",
        "{\"path\": {\"a\": {\"capabilities\": [\"read\"]}, \"a\": {\"capabilities\": [\"list\"]}}}",
        "{\"path\": {\"a\": {\"capabilities\": [\"read\"]}}} garbage [[[",
        "{\"path\": [{\"a\": {\"capabilities\": [\"read\"]}}, {\"b\": {\"policy\": \"read\"}}]}",
    ];
    let paths: Vec<String> = ["a", "a/", "b", "path", "a/x", "secret/x"]
        .map(String::from)
        .to_vec();
    for (i, text) in forms.iter().enumerate() {
        let name = format!("hcl1-{i}");
        let (status, body) = bao.api(
            "PUT",
            &format!("sys/policies/acl/{name}"),
            Some(&json!({ "policy": text })),
        );
        assert_eq!(status, 204, "the server accepts {text:?}: {body}");
        let parsed = policy::parse(&name, text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let token = token_without_default(&bao, std::slice::from_ref(&name));
        let server = server_capabilities(&bao, &token, &paths);
        let acl = Acl::new(&[parsed]);
        for (p, s) in paths.iter().zip(server) {
            assert_eq!(acl.capabilities(p).server_answer(), s, "{text:?} on `{p}`");
        }
    }
}

/// Paths of the real spec (and one beside it) that policies are cut from.
const SPEC_PATHS: &[&str] = &[
    "secret/data/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
    "secret/metadata/ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
    "secret/data/ask/core-service/auh1-dev/IAM_SERVICE__PAT",
    "secret/metadata/ask/core-service/auh1-dev/HATCHET__CLIENT_TOKEN",
    "secret/data/ask/other/auh1-dev/X",
];

/// A pattern cut from a real path: its first segments, some replaced by `+`, then exact, a
/// partial glob (`secret/data/ask/co*`) or a folder glob.
fn spec_pattern() -> impl Strategy<Value = String> {
    (
        prop::sample::select(SPEC_PATHS),
        any::<prop::sample::Index>(),
        prop::collection::vec(0u8..5, 6),
        0u8..4,
        1usize..4,
    )
        .prop_map(|(path, depth, plus, end, cut)| {
            let segs: Vec<&str> = path.split('/').collect();
            let depth = 1 + depth.index(segs.len());
            let mut segs: Vec<String> = segs[..depth]
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    if i > 0 && plus[i % plus.len()] == 0 {
                        "+".to_string()
                    } else {
                        s.to_string()
                    }
                })
                .collect();
            let last = segs.len() - 1;
            match end {
                1 if segs[last] != "+" => {
                    segs[last] = format!("{}*", &segs[last][..cut.min(segs[last].len())])
                }
                1 | 2 => segs.push("*".to_string()),
                _ => {}
            }
            segs.join("/")
        })
}

/// Whatever ESO's policies say, adding the suggested rules closes every gap but those an exact
/// `deny` causes, takes away nothing granted on a required path, and the server agrees.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn suggested_rules_close_the_gaps() {
    let bao = OpenBao::dev();
    let reqs = core_service_requirements();
    let paths: Vec<String> = reqs.iter().map(|r| r.path.clone()).collect();
    let counter = AtomicUsize::new(0);
    let fixed_gaps = AtomicUsize::new(0);
    // Rules other than the two folder rules (added to a more specific pattern, or an exact
    // rule past a `deny`), and gaps only removing a `deny` closes: the rarer branches.
    let other_rules = AtomicUsize::new(0);
    let unfixable_gaps = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 400,
        failure_persistence: None,
        ..Config::default()
    });
    let policies = prop::collection::vec(
        prop::collection::vec((spec_pattern(), capabilities()), 1..=5),
        1..=2,
    );
    let result = runner.run(&policies, |raw| {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let mut parsed = Vec::new();
        for (i, rules) in raw.iter().enumerate() {
            let text: String = rules
                .iter()
                .map(|(p, c)| format!("path \"{p}\" {{ capabilities = {} }}\n", json!(c)))
                .collect();
            parsed.push(policy::parse(&format!("eso{n}-{i}"), &text).unwrap());
        }
        let before = policy::check(&parsed, reqs.clone());
        let mut names: Vec<String> = Vec::new();
        for (p, rules) in parsed.iter().zip(&raw) {
            let text: String = rules
                .iter()
                .map(|(p, c)| format!("path \"{p}\" {{ capabilities = {} }}\n", json!(c)))
                .collect();
            bao.put_policy(&p.name, &text);
            names.push(p.name.clone());
        }
        let fix_name = format!("eso{n}-fix");
        let mut with_fix = parsed.clone();
        if !before.add.is_empty() {
            bao.put_policy(&fix_name, &before.suggestion_hcl());
            names.push(fix_name.clone());
            with_fix.push(policy::parse(&fix_name, &before.suggestion_hcl()).unwrap());
        }
        let after = policy::check(&with_fix, reqs.clone());

        let unfixable: Vec<&str> = before.unfixable.iter().map(|u| u.path.as_str()).collect();
        let still: Vec<&str> = after.gaps().map(|g| g.path.as_str()).collect();
        prop_assert_eq!(
            &still,
            &unfixable,
            "suggested:\n{}",
            before.suggestion_hcl()
        );
        for (b, a) in before.paths().zip(after.paths()) {
            prop_assert!(
                a.granted.is_superset(&b.granted),
                "`{}` lost {:?}",
                a.path,
                b.granted
            );
        }
        fixed_gaps.fetch_add(before.gaps().count() - still.len(), Ordering::Relaxed);
        unfixable_gaps.fetch_add(still.len(), Ordering::Relaxed);
        other_rules.fetch_add(
            before
                .add
                .iter()
                .filter(|r| !reqs.iter().any(|q| *q.folder_rule == *r.pattern))
                .count(),
            Ordering::Relaxed,
        );

        let token = token_without_default(&bao, &names);
        let server = server_capabilities(&bao, &token, &paths);
        for (r, s) in reqs.iter().zip(server) {
            let needed: BTreeSet<String> = r
                .capabilities
                .iter()
                .map(|c| c.as_str().to_string())
                .collect();
            prop_assert_eq!(
                needed.is_subset(&s),
                !unfixable.contains(&r.path.as_str()),
                "server on `{}`: {:?}",
                r.path,
                s
            );
        }
        Ok(())
    });
    let fixed = fixed_gaps.into_inner();
    let (other, unfixable) = (other_rules.into_inner(), unfixable_gaps.into_inner());
    eprintln!(
        "{} cases, {fixed} gaps closed ({other} rules besides the folder rules), {unfixable} left to an exact deny",
        counter.into_inner()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(
        fixed >= 1000,
        "only {fixed} gaps: the generator grants too much"
    );
    assert!(other >= 10, "only {other} rules besides the folder rules");
    assert!(unfixable >= 1, "no exact deny was generated");
}

// ---- ESO's requests: constraints the capabilities do not show -------------------------------

/// A rule's constraints, as one line of HCL: each is something OpenBao checks on a request but
/// `sys/capabilities` ignores.
fn constraint() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        "",
        "",
        "required_parameters = [\"data\"]",
        "required_parameters = [\"version\"]",
        "required_parameters = [\"Data\"]",
        "allowed_parameters = { \"data\" = [] }",
        "allowed_parameters = { \"*\" = [] }",
        "allowed_parameters = { \"other\" = [] }",
        "allowed_parameters = { \"data\" = [\"x\"] }",
        "allowed_parameters = { \"*\" = [], \"other\" = [\"y\"] }",
        "denied_parameters = { \"data\" = [] }",
        "denied_parameters = { \"*\" = [] }",
        "denied_parameters = { \"data\" = [\"y\"] }",
        "denied_parameters = { \"version\" = [] }",
        "max_wrapping_ttl = \"1h\"",
        "min_wrapping_ttl = 1",
        "max_wrapping_ttl = \"0s\" min_wrapping_ttl = 0",
        "pagination_limit = 5 required_parameters = [\"limit\"]",
        "pagination_limit = 5",
        "control_group = { factor \"f\" { controlled_capabilities = [\"read\"] identity { group_names = [\"g\"] approvals = 1 } } }",
        "control_group = { factor \"f\" { controlled_capabilities = [\"list\", \"update\"] identity { group_names = [\"g\"] approvals = 1 } } }",
    ])
    .prop_map(str::to_string)
}

/// What ESO sends: a read, a KV v2 write `{"data": {...}}` (create or update), a list.
#[derive(Debug, Clone, Copy)]
enum Request {
    Read,
    Write,
    List,
}

/// The evaluator's verdict on ESO's request: granted and not refused by a constraint.
fn predicted(acl: &Acl, path: &str, cap: policy::Capability, params: &[policy::Param]) -> bool {
    acl.capabilities(path).capabilities.contains(&cap)
        && acl
            .refusals(path, &[cap].into_iter().collect(), params)
            .is_empty()
}

/// Whether OpenBao let the request through: a 403 is a refusal, and so is an empty answer (a
/// control group holding the request for approval).
fn went_through(status: u16, body: &serde_json::Value, absent_ok: bool) -> bool {
    match status {
        200 => !body["data"].is_null(),
        404 => absent_ok,
        _ => false,
    }
}

/// The evaluator's refusals against real requests: random rules with constraints on a KV v2
/// mount; each request ESO would send (read, write, list) goes to OpenBao with a token holding
/// exactly those rules, and is let through exactly when the evaluator says ESO's would be.
#[test]
fn refusals_agree_with_real_requests() {
    let bao = OpenBao::dev();
    let counter = AtomicUsize::new(0);
    let refused_seen = AtomicUsize::new(0);
    let through_seen = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 150,
        failure_persistence: None,
        ..Config::default()
    });
    // Patterns by index, filled in with the case's folder `c<n>`.
    const PATTERNS: &[&str] = &[
        "secret/data/{c}/*",
        "secret/data/{c}/e",
        "secret/data/{c}/f",
        "secret/data/+/e",
        "secret/*",
        "secret/metadata/{c}/*",
        "secret/metadata/{c}",
        "secret/metadata/+/",
    ];
    let caps = prop_oneof![
        6 => prop::sample::subsequence(vec!["create", "read", "update", "list"], 1..=4)
            .prop_map(|c| c.into_iter().map(str::to_string).collect::<Vec<_>>()),
        1 => Just(vec!["deny".to_string()]),
    ];
    let rules = prop::collection::vec((0..PATTERNS.len(), caps, constraint()), 1..=5);
    let result = runner.run(&rules, |rules| {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let c = format!("c{n}");
        bao.kv_put("secret", &format!("{c}/e"), json!({ "k": "v" }));
        let text: String = rules
            .iter()
            .map(|(i, caps, extra)| {
                format!(
                    "path \"{}\" {{ capabilities = {} {extra} }}\n",
                    PATTERNS[*i].replace("{c}", &c),
                    json!(caps)
                )
            })
            .collect();
        let name = format!("eso{n}");
        bao.put_policy(&name, &text);
        let parsed =
            policy::parse(&name, &text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let acl = Acl::new(&[parsed]);
        let token = token_without_default(&bao, std::slice::from_ref(&name));
        let data = [policy::Param {
            name: "data".into(),
            object: true,
        }];
        use policy::Capability::*;
        let cases: [(Request, String, policy::Capability, bool); 5] = [
            (Request::Read, format!("secret/data/{c}/e"), Read, false),
            (Request::Read, format!("secret/data/{c}/f"), Read, true),
            (Request::Write, format!("secret/data/{c}/e"), Update, false),
            (Request::Write, format!("secret/data/{c}/f"), Create, false),
            (Request::List, format!("secret/metadata/{c}/"), List, false),
        ];
        for (request, path, cap, absent_ok) in cases {
            let params: &[policy::Param] = match request {
                Request::Write => &data,
                _ => &[],
            };
            let expected = predicted(&acl, &path, cap, params);
            let (status, body) = match request {
                Request::Read => bao.api_as(&token, "GET", &path, None),
                Request::Write => bao.api_as(
                    &token,
                    "POST",
                    &path,
                    Some(&json!({ "data": { "k": "w" } })),
                ),
                Request::List => bao.api_as(&token, "LIST", &path, None),
            };
            let through = went_through(status, &body, absent_ok);
            if through {
                through_seen.fetch_add(1, Ordering::Relaxed);
            } else if acl.capabilities(&path).capabilities.contains(&cap) {
                refused_seen.fetch_add(1, Ordering::Relaxed);
            }
            prop_assert_eq!(
                through,
                expected,
                "{:?} `{}`: server {} {}, evaluator {:?}\npolicy:\n{}",
                request,
                path,
                status,
                body,
                acl.refusals(&path, &[cap].into_iter().collect(), params),
                text
            );
        }
        Ok(())
    });
    let (refused, through) = (refused_seen.into_inner(), through_seen.into_inner());
    eprintln!(
        "{} cases: {through} requests let through, {refused} refused although the capability is granted",
        counter.into_inner()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(through >= 100, "only {through} requests went through");
    assert!(refused >= 50, "only {refused} refusals by a constraint");
}
