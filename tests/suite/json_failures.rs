//! Every command, every failure: under `-o json` exactly one JSON document on stdout, in one
//! shape, `{"command", "ok": false, "error", "help", ...}` (plus `errors` when several problems
//! are behind it), the same error and help on stderr in the one voice (`error: ...`,
//! `  help: ...`), and the documented exit code: 1 when something is not right, 2 for a usage or
//! spec error or a refused request (issue 13.1, issue 14.9). Usage errors from clap itself are
//! aside.

use crate::common;

use std::path::Path;

use common::{repo_specs, OpenBao, Run};
use serde_json::Value;

/// The failure document of `run`, expected to exit with `code`, checked: one JSON document on
/// stdout, `command`, `ok: false`, `error` and `help` as on stderr.
#[track_caller]
fn failure(run: Run, command: &str, code: i32) -> Value {
    let out = run.status(code).output();
    let (stdout, stderr) = (out.stdout_text(), out.stderr_text());
    // One document: the whole of stdout parses as one value.
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{command}: stdout is not one JSON document ({e}): {stdout}"));
    assert_eq!(doc["command"], command, "{doc:#}");
    assert_eq!(doc["ok"], false, "{doc:#}");
    let error = doc["error"].as_str().expect("`error` is a string");
    assert!(!error.is_empty());
    assert!(doc["help"].is_string() || doc["help"].is_null(), "{doc:#}");
    for key in ["command", "ok", "error", "help"] {
        assert!(doc.get(key).is_some(), "`{key}` missing: {doc:#}");
    }
    // The same error on stderr, in the one voice.
    assert!(
        stderr.contains(&format!("error: {error}")),
        "{command}: {error:?} not on stderr:\n{stderr}"
    );
    if let Some(help) = doc["help"].as_str() {
        assert!(
            stderr.contains(&format!("\n  help: {help}")),
            "{command}: help {help:?} not on stderr:\n{stderr}"
        );
    }
    assert!(!stderr.contains("= help"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    doc
}

/// A run that sends nothing: the refusals and usage errors come before any request (a token
/// and an address where nothing listens are there for the commands that resolve them first).
fn offline(home: &Path, specs: &Path, args: &[&str]) -> Run {
    Run::home(home)
        .addr(&closed_addr())
        .token("s.unused")
        .specs(specs)
        .args(["-o", "json"])
        .args(args)
}

/// A Vault address where nothing listens.
fn closed_addr() -> String {
    format!("http://127.0.0.1:{}", common::free_port())
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn offline_failures_of_every_command_are_one_document_in_one_shape() {
    let home = tempfile::tempdir().unwrap();
    let specs = repo_specs();
    let run = |args: &[&str]| offline(home.path(), &specs, args);

    // lint: a spec with problems; each one in `errors`, with its location.
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(
        bad.path().join("broken.toml"),
        "name = \"b\"\n[vault]\nmount = \"secret\"\npath = \"b/{env}\"\n[environments.dev]\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex33\" }\n[secrets.B]\nfields.password = { generator = \"hex32\" }\n",
    )
    .unwrap();
    let out = offline(home.path(), bad.path(), &["lint"]);
    let doc = failure(out, "lint", 2);
    let errors = doc["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{doc:#}");
    assert!(
        errors.iter().all(|e| e["location"]["line"].is_u64()),
        "{doc:#}"
    );
    assert!(doc["error"]
        .as_str()
        .unwrap()
        .starts_with("2 problem(s) in the specs under"));
    // The same specs stop every command that reads them, with the same document.
    let out = offline(home.path(), bad.path(), &["plan", "dev"]);
    assert_eq!(failure(out, "plan", 2)["errors"], doc["errors"]);

    // gen: a generator that does not exist; several wrong options at once.
    let doc = failure(run(&["gen", "nope"]), "gen", 2);
    assert!(doc["help"].is_string(), "{doc:#}");
    let doc = failure(
        run(&["gen", "hex", "--bytes", "1", "--length", "20"]),
        "gen",
        2,
    );
    assert_eq!(doc["errors"].as_array().map(Vec::len), Some(2), "{doc:#}");

    // Commands of an environment: one the specs do not define.
    for command in ["plan", "apply", "verify", "policy"] {
        let doc = failure(run(&[command, "nowhere"]), command, 2);
        assert!(
            doc["error"]
                .as_str()
                .unwrap()
                .contains("no spec defines the environment `nowhere`"),
            "{doc:#}"
        );
        assert!(
            doc["help"].as_str().unwrap().contains("auh1-dev"),
            "{doc:#}"
        );
    }
    let doc = failure(run(&["apply", "auh1-dev", "--only", "NOPE"]), "apply", 2);
    assert!(doc["error"].as_str().unwrap().contains("--only NOPE"));
    failure(run(&["verify", "auh1-dev", "--only", "bogus"]), "verify", 2);
    failure(
        run(&["verify", "auh1-dev", "--skip-kube", "--force-sync"]),
        "verify",
        2,
    );

    // set and rotate: names that fit no secret, and refusals that need no server.
    failure(run(&["set", "auh1-dev", "NOPE"]), "set", 2);
    failure(run(&["rotate", "auh1-dev", "NOPE", "--yes"]), "rotate", 2);
    let doc = failure(
        run(&["rotate", "auh1-dev", "ZITADEL_MASTERKEY", "--yes"]),
        "rotate",
        2,
    );
    assert!(doc["error"].as_str().unwrap().contains("is fixed"));
    failure(
        run(&["rotate", "auh1-dev", "IAM_SERVICE__PAT", "--yes"]),
        "rotate",
        2,
    );
    failure(
        run(&["rotate", "auh1-dev", "APP__CORE_SERVICES_MACHINE_TOKEN"]),
        "rotate",
        2,
    );

    // order: bad input, one problem and several.
    let doc = failure(run(&["order", "--app", "no-equals-sign"]), "order", 2);
    assert_eq!(doc["errors"].as_array().map(Vec::len), Some(1), "{doc:#}");
    assert!(doc["errors"][0]["message"].is_string());
    let doc = failure(
        run(&[
            "order", "--app", "x", "--exists", "Pod/a/b", "--exists", "c",
        ]),
        "order",
        2,
    );
    assert_eq!(doc["errors"].as_array().map(Vec::len), Some(3), "{doc:#}");
    assert_eq!(
        doc["error"],
        "3 problem(s) in the input; nothing was checked"
    );

    // man: a page that does not exist.
    failure(run(&["man", "nope"]), "man", 2);
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn failures_against_a_server_are_one_document_and_refusals_exit_2() {
    let home = tempfile::tempdir().unwrap();
    let specs = repo_specs();
    // Vault does not answer: exit 1, before any result.
    let addr = closed_addr();
    for args in [
        vec!["plan", "auh1-dev"],
        vec!["apply", "auh1-dev"],
        vec!["verify", "auh1-dev", "--skip-kube"],
        vec!["set", "auh1-dev", "IAM_SERVICE__PAT"],
        vec![
            "rotate",
            "auh1-dev",
            "APP__CORE_SERVICES_MACHINE_TOKEN",
            "--yes",
        ],
    ] {
        let out = Run::home(home.path())
            .addr(&addr)
            .token("not-a-real-token")
            .env("VAULT_SEED_GIVE_UP_AFTER", "1s")
            .specs(&specs)
            .args(["-o", "json"])
            .args(&args)
            .stdin("value\n");
        let doc = failure(out, args[0], 1);
        assert!(
            doc["error"]
                .as_str()
                .unwrap()
                .contains("cannot reach Vault"),
            "{doc:#}"
        );
    }
    // A token Vault rejects; a connection setting that is wrong (exit 2: nothing was sent).
    let bao = OpenBao::dev();
    let seed = |args: &[&str], stdin: &str| {
        Run::new(&bao)
            .specs(&specs)
            .args(["-o", "json"])
            .args(args)
            .stdin(stdin)
    };
    let out = Run::new(&bao).token("s.rejected").specs(&specs).args([
        "-o",
        "json",
        "verify",
        "auh1-dev",
        "--skip-kube",
    ]);
    failure(out, "verify", 1);
    let out = Run::new(&bao)
        .addr("http://user:pw@127.0.0.1:1")
        .specs(&specs)
        .args(["-o", "json", "plan", "auh1-dev"]);
    failure(out, "plan", 2);

    seed(&["apply", "auh1-dev"], "").output();
    let before = bao.kv_get("secret", "ask/core-service/auh1-dev/ZITADEL_MASTERKEY");
    // Refused requests exit 2 and write nothing, `set` and `rotate` alike; under -o json each is
    // a document (they printed none before).
    let doc = failure(
        seed(
            &["set", "auh1-dev", "ZITADEL_MASTERKEY", "--force"],
            &"k".repeat(32),
        ),
        "set",
        2,
    );
    assert!(
        doc["error"].as_str().unwrap().contains("is fixed"),
        "{doc:#}"
    );
    let doc = failure(
        seed(&["rotate", "auh1-dev", "ZITADEL_MASTERKEY", "--yes"], ""),
        "rotate",
        2,
    );
    assert!(
        doc["error"].as_str().unwrap().contains("is fixed"),
        "{doc:#}"
    );
    assert_eq!(
        bao.kv_get("secret", "ask/core-service/auh1-dev/ZITADEL_MASTERKEY"),
        before
    );
    let doc = failure(
        seed(
            &[
                "set",
                "auh1-dev",
                "APP__CORE_SERVICES_MACHINE_TOKEN",
                "--force",
            ],
            "not-hex\n",
        ),
        "set",
        2,
    );
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .contains("nothing was written"),
        "{doc:#}"
    );
    let doc = failure(
        seed(
            &["set", "auh1-dev", "APP__CORE_SERVICES_MACHINE_TOKEN"],
            &"ab".repeat(32),
        ),
        "set",
        2,
    );
    assert!(doc["help"].as_str().unwrap().contains("--force"), "{doc:#}");
    // The value given never shows in the failure.
    assert!(!doc.to_string().contains(&"ab".repeat(32)));
    // A secret that does not exist yet: not a refusal, exit 1.
    bao.api(
        "DELETE",
        "secret/metadata/ask/core-service/auh1-dev/HATCHET__CLIENT_TOKEN",
        None,
    );
    let doc = failure(
        seed(
            &["set", "auh1-dev", "HATCHET__CLIENT_TOKEN"],
            "t0ken-value\n",
        ),
        "set",
        1,
    );
    assert!(
        doc["help"]
            .as_str()
            .unwrap()
            .contains("vault-seed apply auh1-dev"),
        "{doc:#}"
    );
}

#[test]
fn human_failures_speak_in_one_voice() {
    let home = tempfile::tempdir().unwrap();
    let specs = repo_specs();
    // The spec problem and the command error both say `  help:` on their own line.
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(
        bad.path().join("broken.toml"),
        "name = \"b\"\n[vault]\nmount = \"secret\"\npath = \"b/{env}\"\n[environments.dev]\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex33\" }\n",
    )
    .unwrap();
    for (dir, args, code) in [
        (bad.path(), vec!["lint"], 2),
        (specs.as_path(), vec!["policy", "nowhere"], 2),
        (
            specs.as_path(),
            vec!["rotate", "auh1-dev", "ZITADEL_MASTERKEY"],
            2,
        ),
    ] {
        let out = Run::home(home.path())
            .specs(dir)
            .args(&args)
            .status(code)
            .output();
        let err = out.stderr_text();
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(err.contains("error: "), "{args:?}: {err}");
        assert!(err.contains("\n  help: "), "{args:?}: {err}");
        assert!(!err.contains("= help"), "{args:?}: {err}");
    }
}

/// A kubeconfig that cannot be read is named once (kube-rs' own message quoted the path again,
/// as `'"/…/config"'`), and the kube part gives one help line, not two overlapping ones
/// (issue 14.9); no kubeconfig at all says what was looked for.
#[test]
fn kube_errors_name_the_file_once_and_help_once() {
    let bao = OpenBao::dev();
    let missing = bao.home.path().join("no-such-kubeconfig");
    let specs = repo_specs();
    for kubeconfig in [Some(missing.as_path()), None] {
        let mut run = Run::new(&bao)
            .specs(&specs)
            .args(["verify", "auh1-dev", "--only", "kube"]);
        if let Some(k) = kubeconfig {
            run = run.env("KUBECONFIG", k);
        }
        let out = run.status(1).output();
        let stdout = out.stdout_text();
        let part: Vec<&str> = stdout
            .lines()
            .skip_while(|l| !l.starts_with("FAIL kube:"))
            .take_while(|l| !l.starts_with("verify "))
            .collect();
        assert!(!part.is_empty(), "{stdout}");
        assert!(!stdout.contains("'\""), "a path quoted twice: {stdout}");
        let helps = part.iter().filter(|l| l.contains("help:")).count();
        assert_eq!(helps, 1, "{stdout}");
        assert!(stdout.contains("--skip-kube"), "{stdout}");
        match kubeconfig {
            Some(k) => assert!(
                part[0].contains(&format!("cannot read kubeconfig `{}`", k.display()))
                    && part[0].matches(&k.display().to_string()).count() == 1,
                "{stdout}"
            ),
            None => assert!(
                part[0].contains("`KUBECONFIG` is unset")
                    && part[0].contains(".kube/config` does not exist"),
                "{stdout}"
            ),
        }
    }
}
