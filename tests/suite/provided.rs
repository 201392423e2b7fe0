//! Issue 15: paths another application provides (the real spec's ask-db database passwords,
//! `provided_by`). Never written by `apply`, `set` or `rotate`; listed as waiting while absent;
//! `verify` is done only when they are there and valid, and explains an absent one with its
//! provider and its PushSecret (real OpenBao, the fake Kubernetes API through kube-rs).

use crate::common;

use common::fake_kube::{self, FakeKube};
use common::{has, OpenBao, Out, Run, ASK_DB_PASSWORDS};
use serde_json::{json, Value};

const ENV: &str = "auh1-dev";
const DB: &str = "ask/postgresql/auh1-dev/core-service-db-password";
const PROVIDER: &str = "ask-db: CNPG password pushed by PushSecret core-service-db-password";

/// ESO's policy: the runbook's grant and the read of ask-db's paths.
const POLICY: &str = r#"
path "secret/data/ask/core-service/*"     { capabilities = ["create", "update", "read"] }
path "secret/data/ask/postgresql/*"       { capabilities = ["read"] }
path "secret/metadata/ask/core-service/*" { capabilities = ["read", "list"] }
"#;

fn run(bao: &OpenBao, args: &[&str]) -> Run {
    Run::new(bao).real_specs().args(args)
}

/// Every value under `secret/` that a run must never print: what vault-seed generated and what
/// ask-db pushed.
fn values_in_vault(bao: &OpenBao) -> Vec<String> {
    let mut out = Vec::new();
    for folder in ["ask/core-service/auh1-dev", "ask/postgresql/auh1-dev"] {
        let (status, list) = bao.api("LIST", &format!("secret/metadata/{folder}"), None);
        if status != 200 {
            continue;
        }
        for key in list["data"]["keys"].as_array().unwrap() {
            let path = format!("{folder}/{}", key.as_str().unwrap());
            if let Some((data, _)) = bao.kv_get("secret", &path) {
                out.extend(
                    data.values()
                        .filter_map(|v| v.as_str())
                        .filter(|v| *v != "placeholder")
                        .map(str::to_string),
                );
            }
        }
    }
    out
}

#[track_caller]
fn no_value_in(bao: &OpenBao, outs: &[&Out]) {
    let values = values_in_vault(bao);
    assert!(!values.is_empty());
    for out in outs {
        let all = out.all_text();
        for v in &values {
            assert!(!all.contains(v.as_str()), "a value leaked:\n{all}");
        }
    }
}

fn row<'a>(doc: &'a Value, key: &str, path_end: &str) -> &'a Value {
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str().unwrap().ends_with(path_end))
        .unwrap_or_else(|| panic!("{path_end} not in {doc}"))
}

/// The issue's first test: nothing has pushed the database passwords yet. `apply` seeds the rest,
/// lists each provided path as waiting and exits 0; it writes nothing there. `verify` exits 1 and
/// names the provider.
#[test]
fn an_absent_provided_path_waits_in_apply_and_fails_verify_naming_the_provider() {
    let bao = OpenBao::dev();
    let plan = run(&bao, &["plan", ENV]).output();
    has(
        &plan.stdout_text(),
        format!("provided: absent (waiting for {PROVIDER})"),
    );
    let apply = run(&bao, &["apply", ENV, "-o", "json"]).output();
    let doc = apply.json();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["summary"]["created"], 6);
    assert_eq!(doc["summary"]["provided_absent"], 3);
    assert_eq!(doc["summary"]["provided_present"], 0);
    let db = row(&doc, "results", DB);
    assert_eq!(db["outcome"], "provided-absent");
    assert_eq!(db["written"], false);
    assert_eq!(db["provided_by"], PROVIDER);
    // Rows stay in spec order: the provided ones come after the six seeded ones.
    let outcomes = outcomes(&doc);
    assert_eq!(outcomes[..6], ["created"; 6]);
    assert_eq!(outcomes[6..], ["provided-absent"; 3]);
    for (name, _) in ASK_DB_PASSWORDS {
        assert_eq!(
            bao.kv_get("secret", &format!("ask/postgresql/auh1-dev/{name}")),
            None,
            "{name} was written"
        );
    }
    // People see the waiting paths counted in the summary (each named once, on its row).
    let again = run(&bao, &["apply", ENV]).output();
    let text = again.stdout_text();
    has(
        &text,
        "provided by other applications (never written): 0 field(s) present, 3 absent",
    );

    bao.eso_role(POLICY);
    let verify = run(&bao, &["verify", ENV, "--skip-kube"])
        .status(1)
        .output();
    let text = verify.stdout_text();
    has(
        &text,
        format!(
            "missing  secret/{DB}  password  waiting for {PROVIDER}: vault-seed never writes it"
        ),
    );
    has(&text, "verify auh1-dev: NOT done");
    let doc = run(&bao, &["verify", ENV, "--skip-kube", "-o", "json"])
        .status(1)
        .output()
        .json();
    let db = row(&doc["vault"], "results", DB);
    assert_eq!(db["status"], "missing");
    assert_eq!(db["provided_by"], PROVIDER);
    assert_eq!(doc["vault"]["ok"], false);
    // The policy part reads the provided paths too, and is satisfied.
    assert_eq!(doc["policy"]["ok"], true, "{doc}");
    no_value_in(&bao, &[&plan, &apply, &again, &verify]);
}

/// Issue 33: `plan` and `apply` name each provided path once, on its row with its provider;
/// the summary under the table counts them and never lists the rows a second time.
#[test]
fn plan_and_apply_name_each_provided_path_once() {
    let bao = OpenBao::dev();
    for command in ["plan", "apply"] {
        let text = run(&bao, &[command, ENV]).output().stdout_text();
        for (name, _) in ASK_DB_PASSWORDS {
            let path = format!("secret/ask/postgresql/auh1-dev/{name}");
            let lines: Vec<&str> = text.lines().filter(|l| l.contains(&path)).collect();
            assert_eq!(lines.len(), 1, "{command}: {path} not said once:\n{text}");
            assert!(
                lines[0].starts_with("provided ")
                    && lines[0].contains("provided: absent (waiting for ask-db: "),
                "{command}: {}",
                lines[0]
            );
        }
        has(
            &text,
            "provided by other applications (never written): 0 field(s) present, 3 absent\n",
        );
    }
}

/// The provided paths are read in the same pipeline as the owned ones are written, not after
/// them: the proxy holds the first write of an owned path until all three provided reads are
/// out. Read after the owned paths (as before), they never are while it holds (it lets go after
/// a minute) and the test fails. Everything else as before: present, judged, never written.
#[test]
fn the_provided_paths_are_read_while_the_owned_paths_are_written() {
    use common::proxy::{recording, Events};
    let bao = OpenBao::dev();
    bao.ask_db_pushes();
    const READ: &str = "sent GET /v1/secret/data/ask/postgresql/auh1-dev/";
    let reads = |log: &[String]| log.iter().filter(|e| e.starts_with(READ)).count();
    let (proxy, events) = recording(&bao.addr, move |line, events: &Events| {
        if line.starts_with("POST /v1/secret/data/ask/core-service/") {
            events.wait_until(|log, _| reads(log) == 3);
        }
    });
    let out = Run::new(&bao)
        .real_specs()
        .addr(&proxy.addr)
        .args(["apply", ENV, "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(doc["summary"]["created"], 6, "{doc}");
    assert_eq!(doc["summary"]["provided_present"], 3, "{doc}");
    let log = events.log();
    let first_write = log
        .iter()
        .position(|e| e.starts_with("sent POST /v1/secret/data/ask/core-service/"))
        .unwrap();
    assert_eq!(reads(&log[..first_write]), 3, "{log:#?}");
    // Rows in spec order; the provided paths untouched.
    let outcomes = outcomes(&doc);
    assert_eq!(outcomes[..6], ["created"; 6]);
    assert_eq!(outcomes[6..], ["provided-present"; 3]);
    assert!(!log.iter().any(
        |e| e.starts_with("sent POST /v1/secret/data/ask/postgresql/")
            || e.starts_with("sent POST /v1/secret/metadata/ask/postgresql/")
    ));
    for (name, _) in ASK_DB_PASSWORDS {
        assert_eq!(
            bao.kv_version("secret", &format!("ask/postgresql/auh1-dev/{name}")),
            Some(1)
        );
    }
    no_value_in(&bao, &[&out]);
}

/// The cluster once ask-db has pushed: `core-service-secret` reads a provided path (as the
/// runbook's secrets app does) and is Ready; its Secret has every key.
fn cluster_reading_a_provided_path(bao: &OpenBao) -> FakeKube {
    let kube = FakeKube::start();
    crate::verify::argocd_layout(&kube);
    kube.put(fake_kube::real_spec_store(&bao.addr));
    let later = (time::OffsetDateTime::now_utc() + time::Duration::minutes(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let core = [
        (
            "SECURITY__API_KEY_SALT",
            "ask/core-service/auh1-dev/SECURITY__API_KEY_SALT",
            Some("password"),
        ),
        ("DATABASE__PASSWORD", DB, Some("password")),
    ];
    kube.put(fake_kube::external_secret("ask", "core-service-secret", &core).ready_synced(&later));
    // Holding what Vault holds, as ESO writes it once synced.
    let value = |key: &str| crate::verify::vault_value(bao, key, "password");
    let (salt, db) = (
        value("ask/core-service/auh1-dev/SECURITY__API_KEY_SALT"),
        value(DB),
    );
    kube.put(fake_kube::secret(
        "ask",
        "core-service-secret",
        &[
            ("SECURITY__API_KEY_SALT", &salt),
            ("DATABASE__PASSWORD", &db),
        ],
    ));
    kube.put(
        fake_kube::external_secret(
            "ask",
            "zitadel-secret",
            &[(
                "masterkey",
                "ask/core-service/auh1-dev/ZITADEL_MASTERKEY",
                Some("password"),
            )],
        )
        .ready_synced(&later),
    );
    let masterkey = value("ask/core-service/auh1-dev/ZITADEL_MASTERKEY");
    kube.put(fake_kube::secret(
        "ask",
        "zitadel-secret",
        &[("masterkey", &masterkey)],
    ));
    crate::verify::argocd_layout(&kube);
    kube
}

fn verify_with(bao: &OpenBao, kube: &FakeKube, args: &[&str]) -> Run {
    Run::new(bao)
        .real_specs()
        .args(["verify", ENV, "--kubeconfig"])
        .arg(kube.kubeconfig())
        .args(args)
}

/// Present and valid: `verify` is done, and an ExternalSecret that reads a provided path passes
/// the remoteRef cross-check (it used to be "not a path of the spec"). `apply` reports them
/// present and leaves them alone.
#[test]
fn present_and_valid_provided_paths_let_verify_say_done() {
    let bao = OpenBao::dev();
    run(&bao, &["apply", ENV]).output();
    bao.ask_db_pushes();
    bao.eso_role(POLICY);
    let kube = cluster_reading_a_provided_path(&bao);
    let out = verify_with(&bao, &kube, &["-o", "json"]).output();
    let doc = out.json();
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(row(&doc["vault"], "results", DB)["status"], "valid");
    let es = &doc["kube"]["external_secrets"][0];
    assert_eq!(es["name"], "core-service-secret");
    assert_eq!(es["problems"], json!([]), "{es}");
    assert!(doc["kube"]["provided"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["ok"] == true));
    let human = verify_with(&bao, &kube, &[]).output();
    has(&human.stdout_text(), "verify auh1-dev: done");

    let apply = run(&bao, &["apply", ENV, "-o", "json"]).output();
    let doc = apply.json();
    assert_eq!(doc["summary"]["provided_present"], 3);
    assert_eq!(doc["summary"]["written_paths"], 0);
    assert_eq!(row(&doc, "results", DB)["outcome"], "provided-present");
    let text = run(&bao, &["plan", ENV]).output().stdout_text();
    has(&text, "provided: present");
    for (name, _) in ASK_DB_PASSWORDS {
        assert_eq!(
            bao.kv_version("secret", &format!("ask/postgresql/auh1-dev/{name}")),
            Some(1),
            "{name} was written"
        );
    }
    no_value_in(&bao, &[&out, &human, &apply]);
}

/// Present but not in its validator's format (a 31-character password): `verify` exits 1, and
/// nothing ever overwrites it; `apply` says so and, not being its maker, does not fail.
#[test]
fn an_invalid_provided_value_fails_verify_and_is_never_overwritten() {
    let bao = OpenBao::dev();
    run(&bao, &["apply", ENV]).output();
    bao.ask_db_pushes();
    let short = "Sh0rtPassw0rdFromAskDbPushSecre";
    assert_eq!(short.len(), 31);
    bao.kv_put("secret", DB, json!({ "password": short }));
    bao.eso_role(POLICY);

    let verify = run(&bao, &["verify", ENV, "--skip-kube"])
        .status(1)
        .output();
    let text = verify.stdout_text();
    has(&text, format!("invalid  secret/{DB}  password  is 31 characters long, expected 32; provided by {PROVIDER}: vault-seed never changes it"));
    has(&text, "verify auh1-dev: NOT done");

    let apply = run(&bao, &["apply", ENV, "-o", "json"]).output();
    let doc = apply.json();
    let db = row(&doc, "results", DB);
    assert_eq!(db["outcome"], "provided-present");
    assert_eq!(db["written"], false);
    has(db["detail"].as_str().unwrap(), "is 31 characters long");
    let (data, version) = bao.kv_get("secret", DB).unwrap();
    assert_eq!((data["password"].as_str(), version), (Some(short), 2));
    no_value_in(&bao, &[&verify, &apply]);
}

/// `set` and `rotate` refuse a provided path before sending anything: exit 2, the provider named,
/// nothing written, one JSON failure document. "Nothing sent" is counted: each refusal is run
/// again against a listener standing in for Vault, which must see no connection; a control run
/// (`set` of a secret the spec owns) shows that it does count.
#[test]
fn set_and_rotate_refuse_a_provided_path() {
    let bao = OpenBao::dev();
    bao.ask_db_pushes();
    let before = bao.kv_get("secret", DB).unwrap();
    let stand_in = common::Silent::start();
    let connections = || {
        stand_in
            .connections
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    for (args, stdin) in [
        (
            vec!["set", ENV, "core-service-db-password"],
            "An0therPassw0rdOf32CharactersXyz",
        ),
        (vec!["set", ENV, "core-service-db-password.password"], "x"),
        (vec!["rotate", ENV, "core-service-db-password", "--yes"], ""),
        (vec!["rotate", ENV, DB, "--dry-run"], ""),
    ] {
        let out = Run::new(&bao)
            .real_specs()
            .args(&args)
            .stdin(stdin)
            .status(2)
            .output();
        let err = out.stderr_text();
        has(&err, format!("`secret/{DB}` is provided by another application ({PROVIDER}): vault-seed never writes it; nothing was sent"));
        has(&err, "help: its provider makes and changes it");
        assert!(out.stdout.is_empty(), "{args:?}");
        let doc = Run::new(&bao)
            .real_specs()
            .args(&args)
            .args(["-o", "json"])
            .stdin(stdin)
            .status(2)
            .output()
            .json();
        assert_eq!(doc["ok"], false);
        assert_eq!(doc["command"], args[0]);
        has(
            doc["error"].as_str().unwrap(),
            "is provided by another application",
        );
        assert_eq!(bao.kv_get("secret", DB).unwrap(), before, "{args:?}");
        Run::new(&bao)
            .real_specs()
            .addr(&stand_in.addr)
            .args(&args)
            .stdin(stdin)
            .status(2)
            .output();
        assert_eq!(connections(), 0, "{args:?} connected before refusing");
    }
    Run::new(&bao)
        .real_specs()
        .addr(&stand_in.addr)
        .env("VAULT_SEED_GIVE_UP_AFTER", "2s")
        .args(["set", ENV, "IAM_SERVICE__PAT", "--answer-timeout", "1s"])
        .stdin("a-personal-access-token")
        .status(1)
        .output();
    assert!(connections() > 0, "the stand-in for Vault counts nothing");
}

/// The provider's PushSecret failing with Vault's 403 (the provider's own policy lacks the
/// grant) is shown as the cause of the absent path, with its Ready condition and latest Warning
/// event. Its status is fixture 05's shape (Ready=False, `Errored`) with the message ESO writes
/// for a failed push (`set secret failed: could not write remote ref ...`) around fixture 07(c)'s
/// Vault 403.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn the_providers_push_secret_failing_with_a_403_is_shown_as_the_cause() {
    let bao = OpenBao::dev();
    run(&bao, &["apply", ENV]).output();
    bao.eso_role(POLICY);
    let kube = cluster_reading_a_provided_path(&bao);
    // Without ask-db's push, core-service-secret cannot sync.
    kube.update("ExternalSecret", Some("ask"), "core-service-secret", |es| {
        fake_kube::set_ready(
            es,
            false,
            "SecretSyncedError",
            "could not get secret data from provider",
            "2026-01-01T00:00:00Z",
        );
    });
    let denied = "set secret failed: could not write remote ref password to target secretstore vault: \
        error retrieving secret at .data[0], key: ask/postgresql/auh1-dev/core-service-db-password, err: \
        cannot read secret data from Vault: Error making API request. Code: 403. Errors: * 1 error occurred: * permission denied";
    let mut ps = fake_kube::push_secret(
        "ask",
        "core-service-db-password",
        false,
        "Errored",
        denied,
        "2026-01-01T00:00:00Z",
    );
    // The status is fixture 05's, as ESO wrote it (its reason, `Errored`, is what verify must
    // show), with the 403's message and this provider's store.
    let mut status =
        fake_kube::fixture("05_pushsecret-vault-ready-false_issue-2320.yaml")[0]["status"].clone();
    status["conditions"][0]["message"] = denied.into();
    status["syncedPushSecrets"] = json!({"ClusterSecretStore/vault": {}});
    ps["status"] = status;
    kube.put(ps);
    // An older failure, and the latest: only the latest is shown.
    for (message, at, count) in [
        (
            "set secret failed: an older failure",
            "2026-01-01T00:00:00Z",
            3,
        ),
        (denied, "2026-01-01T00:05:00Z", 7),
    ] {
        kube.add_event(
            fake_kube::event(
                "ask",
                "PushSecret",
                "core-service-db-password",
                "Warning",
                "Errored",
                message,
            )
            .seen(at, count),
        );
    }

    let out = verify_with(&bao, &kube, &[]).status(1).output();
    let text = out.stdout_text();
    has(
        &text,
        format!("wait provided secret/{DB}: not in Vault yet, waiting for {PROVIDER}"),
    );
    has(
        &text,
        "why: PushSecret `ask/core-service-db-password`: not Ready (Errored): set secret failed",
    );
    assert!(
        !text.contains("an older failure"),
        "only the latest event:\n{text}"
    );
    // Each explanation once: the provider in the part kube's `provided` line (the values'
    // row and the ExternalSecret point to it), and the 403 that ESO writes in both the
    // PushSecret's condition and its latest event, once.
    assert_eq!(text.matches("Code: 403").count(), 1, "{text}");
    assert_eq!(
        text.matches(&format!("waiting for {PROVIDER}")).count(),
        1,
        "{text}"
    );
    has(
        &text,
        format!("missing  secret/{DB}  password  provided by another application: vault-seed never writes it (see `provided` under kube)"),
    );
    has(
        &text,
        format!("why: `secret/{DB}` is provided by another application and is not right yet (its `provided` entry says why)"),
    );
    // The ExternalSecret reading the path gets the same cause, and no cross-check problem.
    let doc = verify_with(&bao, &kube, &["-o", "json"])
        .status(1)
        .output()
        .json();
    let es = &doc["kube"]["external_secrets"][0];
    assert_eq!(es["name"], "core-service-secret");
    assert!(
        !es["problems"]
            .to_string()
            .contains("not a path of the spec"),
        "{es}"
    );
    has(
        &es["explanations"].to_string(),
        "is provided by another application and is not right yet",
    );
    let p = row(&doc["kube"], "provided", DB);
    assert_eq!(p["ok"], false);
    assert_eq!(p["push_secret"], "ask/core-service-db-password");
    assert_eq!(p["ready"], false);
    assert_eq!(p["reason"], "Errored");
    has(p["event"].as_str().unwrap(), "Code: 403");
    // A provider whose PushSecret is not declared is still named; one that does not exist is
    // said to be missing.
    let pg = row(&doc["kube"], "provided", "core-pg-superuser");
    has(
        &pg["explanations"].to_string(),
        "PushSecret `ask/core-pg-superuser` does not exist",
    );
}

/// Lint: what a provided secret may and may not say, each problem at its place.
#[test]
fn lint_checks_provided_secrets() {
    let dir = common::spec_dir(
        r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
[secrets.OWN]
description = "d"
path = "elsewhere/{env}/OWN"
push_secret = "ask/own"
fields.v = { generator = "hex32" }
[secrets.FIXED]
description = "d"
provided_by = "db: pushed by PushSecret fixed"
fixed = true
fields.v = {}
[secrets.MARKER]
description = "d"
provided_by = "db"
fields.v = { generator = "placeholder" }
[secrets.BADPUSH]
description = "d"
provided_by = "db"
push_secret = "no-slash"
path = "db/{env}/../x"
fields.v = {}
[secrets.EMPTY]
description = "d"
provided_by = ""
fields.v = {}
[secrets.OK]
description = "d"
provided_by = "db: pushed by PushSecret ok"
push_secret = "ask/ok"
mount = "kv"
path = "db/{env}/ok"
fields.v = {}
fields.w = { generator = "password", length = 32, classes = ["lower", "digit"] }
"#,
    );
    let out = Run::offline()
        .specs(dir.path())
        .args(["lint"])
        .status(2)
        .output();
    let err = out.stderr_text();
    has(
        &err,
        "error: `path` in `[secrets.OWN]` is for a secret another application provides",
    );
    has(
        &err,
        "error: `push_secret` in `[secrets.OWN]` is for a secret another application provides",
    );
    has(&err, "app.toml:8:9");
    has(&err, "app.toml:9:16");
    has(&err, "error: provided secret `FIXED` cannot be `fixed`");
    has(&err, "error: field `v` of `[secrets.MARKER]` is provided by another application: a placeholder cannot validate it");
    has(
        &err,
        "error: `push_secret` `no-slash` is not `NAMESPACE/NAME`",
    );
    has(
        &err,
        "error: path `db/{env}/../x` is a relative path segment",
    );
    has(&err, "error: `provided_by` is empty");
    assert!(!err.contains("[secrets.OK]"), "{err}");
    has(&err, "error: 7 problem(s) in the specs");
}

/// The outcome of each row of a JSON report of `apply` or `plan`, in order.
fn outcomes(doc: &serde_json::Value) -> Vec<&str> {
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect()
}
