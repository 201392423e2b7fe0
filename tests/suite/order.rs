//! `vault-seed order` through the binary, on the sync-wave runbook's layouts
//! (`tests/fixtures/order/runbook`, with the argocd-cm variants of `tests/fixtures/argocd`): the
//! broken layout fails with each of the runbook's findings, the fixed one passes; bad input is
//! exit 2 with file and line; no Secret value ever reaches the output.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use common::{repo_specs, Run};

fn fixture(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
        .display()
        .to_string()
}

fn runbook(p: &str) -> String {
    fixture(&format!("order/runbook/{p}"))
}

fn app(name: &str, path: &str) -> String {
    format!("{name}={path}")
}

/// Run `vault-seed order ARGS`; (exit code, stdout, stderr): the caller asserts the code.
fn order_with_stdin(args: &[String], stdin: &[u8]) -> (i32, String, String) {
    let out = Run::home("/nonexistent")
        .arg("order")
        .args(args)
        .stdin(stdin)
        .any_status()
        .output();
    (out.code(), out.stdout_text(), out.stderr_text())
}

fn order(args: &[String]) -> (i32, String, String) {
    order_with_stdin(args, b"")
}

/// Run with `-o json`; (exit code, document).
pub(crate) fn order_json(args: &[String]) -> (i32, Value) {
    let mut args = args.to_vec();
    args.extend(["-o".to_string(), "json".to_string()]);
    let (code, stdout, stderr) = order(&args);
    let doc = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{stderr}"));
    (code, doc)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The runbook's broken layout: several rules fire.
pub(crate) fn broken() -> Vec<String> {
    vec![
        "--app".into(),
        app("core-service", &runbook("broken/core-service.yaml")),
        "--app".into(),
        app("ask-db", &runbook("fixed/ask-db.yaml")),
        "--applications".into(),
        runbook("broken/applications.yaml"),
        "--argocd-cm".into(),
        fixture("argocd/argocd-cm-without.yaml"),
    ]
}

fn fixed(cm: Option<&str>) -> Vec<String> {
    let mut a = vec![
        "--app".into(),
        app("core-service", &runbook("fixed/core-service.yaml")),
        "--app".into(),
        app(
            "core-service-secrets",
            &runbook("fixed/core-service-secrets.yaml"),
        ),
        "--app".into(),
        app("ask-db", &runbook("fixed/ask-db.yaml")),
        "--applications".into(),
        runbook("fixed/applications.yaml"),
    ];
    if let Some(cm) = cm {
        a.extend(["--argocd-cm".into(), fixture(&format!("argocd/{cm}"))]);
    }
    a
}

fn findings(doc: &Value) -> &Vec<Value> {
    doc["findings"].as_array().unwrap()
}

/// The findings of a rule, as (severity, app, message).
fn of_rule(doc: &Value, rule: &str) -> Vec<(String, Value, String)> {
    findings(doc)
        .iter()
        .filter(|f| f["rule"] == rule)
        .map(|f| {
            (
                f["severity"].as_str().unwrap().to_string(),
                f["app"].clone(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn broken_layout_fails_with_each_of_the_runbooks_findings() {
    let (code, doc) = order_json(&broken());
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["command"], "order");
    assert_eq!(doc["ok"], false);

    // Bug 1: the `ref: values` source without path never renders the secrets file.
    let missing = of_rule(&doc, "no-producer");
    let hint = "(Application core-service's source 2 is `ref: values` with no path: it only \
                provides value files)";
    for secret in ["core-service-secret", "zitadel-secret"] {
        assert!(
            missing.iter().any(|(sev, app, msg)| sev == "error"
                && app == "core-service"
                && *msg == format!("no app renders Secret {secret} {hint}")),
            "{secret}: {missing:#?}"
        );
    }
    // Every reader of the missing Secrets is named: the Deployment, the migration, Zitadel's
    // hooks and Deployment.
    let readers: Vec<String> = findings(&doc)
        .iter()
        .filter(|f| f["rule"] == "no-producer")
        .flat_map(|f| f["details"].as_array().unwrap().iter())
        .map(|d| d.as_str().unwrap().to_string())
        .collect();
    for who in [
        "Deployment core-service (core-service, Sync, wave 0)",
        "Job migrate (core-service, PreSync, wave 0)",
        "Job zitadel-init (core-service, PreSync, wave 1)",
        "Job zitadel-setup (core-service, PreSync, wave 2)",
        "Deployment zitadel (core-service, Sync, wave 0)",
    ] {
        assert!(
            readers.iter().any(|r| r.contains(who)),
            "{who}: {readers:#?}"
        );
    }

    // Bug 2: the migration is a PreSync hook reading the Sync phase's ConfigMap.
    assert_eq!(
        of_rule(&doc, "phase-order"),
        vec![(
            "error".to_string(),
            Value::from("core-service"),
            "Job migrate (core-service, PreSync, wave 0) reads ConfigMap config-toml, created in \
             the Sync phase of the same app (wave 0): PreSync runs before the whole Sync phase"
                .to_string()
        )]
    );
    let f = findings(&doc)
        .iter()
        .find(|f| f["rule"] == "phase-order")
        .unwrap();
    assert_eq!(
        f["help"],
        "make the Job a Sync hook at a wave after the ConfigMap (wave 1 or later), or move the \
         ConfigMap to an app with a lower app wave"
    );
    assert_eq!(f["consumer"]["phase"], "PreSync");
    assert_eq!(f["producer"]["phase"], "Sync");
    assert_eq!(f["object"]["kind"], "ConfigMap");

    // Section 3: app waves do not wait without the Application health check (the DB-init
    // Jobs read ask-db's Secrets).
    let waves = of_rule(&doc, "app-waves-not-waited");
    assert_eq!(
        waves,
        vec![(
            "error".to_string(),
            Value::Null,
            "app waves do not wait for Healthy: argocd-cm has no health check for \
             argoproj.io/Application"
                .to_string()
        )]
    );
    assert_eq!(doc["argocd_cm"]["application_health"], false);

    // The same in human output: grouped by app, worst first, with help lines.
    let (code, stdout, _) = order(&broken());
    assert_eq!(code, 1);
    let global = stdout.find("Argo CD (all apps)").unwrap();
    let app = stdout.find("app core-service (app wave 1)").unwrap();
    assert!(global < app, "{stdout}");
    assert!(stdout.contains(
        "  error: Job migrate (core-service, PreSync, wave 0) reads ConfigMap config-toml, created in the Sync phase of the same app (wave 0): PreSync runs before the whole Sync phase\n"
    ), "{stdout}");
    assert!(
        stdout.contains("    help: make the Job a Sync hook"),
        "{stdout}"
    );
    assert!(stdout.contains("\nok: ask-db\n"), "{stdout}");
    assert!(stdout.contains("result: 4 error(s)"), "{stdout}");
}

#[test]
fn secrets_inside_the_core_service_app_cannot_serve_its_presync_hooks() {
    // The secrets file rendered into the core-service app itself (as if its source had a path):
    // Zitadel's helm pre-install hooks and the PreSync migration still run before it.
    let mut a = broken();
    a.extend([
        "--app".to_string(),
        app("core-service", &runbook("fixed/core-service-secrets.yaml")),
    ]);
    let (code, doc) = order_json(&a);
    assert_eq!(code, 1);
    let phase = of_rule(&doc, "phase-order");
    for (job, secret) in [
        (
            "zitadel-init (core-service, PreSync, wave 1)",
            "zitadel-secret",
        ),
        (
            "zitadel-setup (core-service, PreSync, wave 2)",
            "zitadel-secret",
        ),
        (
            "migrate (core-service, PreSync, wave 0)",
            "core-service-secret",
        ),
    ] {
        let want = format!(
            "Job {job} reads Secret {secret}, made by ExternalSecret {secret} in the Sync phase \
             of the same app (wave 0): PreSync runs before the whole Sync phase"
        );
        assert!(
            phase
                .iter()
                .any(|(s, _, m)| s == "error" && m.starts_with(&want)),
            "{want}\n{phase:#?}"
        );
    }
    assert!(phase.iter().any(|(_, _, m)| m
        .contains("(Argo CD maps its `helm.sh/hook: pre-install,pre-upgrade` to PreSync)")));
    // The unwaved Deployments race ESO in the same wave: pods restart until the Secret exists.
    let same = of_rule(&doc, "same-wave");
    assert_eq!(same.len(), 2, "{same:#?}");
    assert!(same
        .iter()
        .all(|(s, _, m)| s == "warning" && m.contains("its pods restart")));
    assert!(of_rule(&doc, "no-producer").is_empty());
}

#[test]
fn fixed_layout_passes_with_the_application_health_check_in_either_form() {
    for cm in [
        "argocd-cm-with-app-health.yaml",
        "argocd-cm-with-app-health-legacy-key.yaml",
    ] {
        let (code, doc) = order_json(&fixed(Some(cm)));
        assert_eq!(code, 0, "{cm}: {doc:#}");
        assert_eq!(doc["ok"], true);
        assert_eq!(doc["summary"]["errors"], 0, "{cm}");
        assert_eq!(doc["summary"]["warnings"], 0, "{cm}: {doc:#}");
        assert_eq!(doc["argocd_cm"]["application_health"], true);
        // What cannot be told offline is said: the DB passwords come from `dataFrom`.
        assert!(!of_rule(&doc, "keys-unknown").is_empty());
        let apps: Vec<(&str, i64)> = doc["apps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["name"].as_str().unwrap(), a["app_wave"].as_i64().unwrap()))
            .collect();
        assert_eq!(
            apps,
            vec![
                ("ask-db", 0),
                ("core-service", 1),
                ("core-service-secrets", 0)
            ]
        );
    }
    let (code, stdout, _) = order(&fixed(Some("argocd-cm-with-app-health.yaml")));
    assert_eq!(code, 0);
    assert!(stdout.contains("the order holds"), "{stdout}");
    assert!(
        stdout.contains("ok: ask-db, core-service-secrets"),
        "{stdout}"
    );
}

#[test]
fn fixed_layout_fails_when_app_waves_do_not_wait_for_healthy() {
    let (code, doc) = order_json(&fixed(Some("argocd-cm-without.yaml")));
    assert_eq!(code, 1);
    let f = findings(&doc)
        .iter()
        .find(|f| f["rule"] == "app-waves-not-waited")
        .unwrap();
    let details: Vec<&str> = f["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        details.contains(
            &"Job zitadel-setup (core-service, app wave 1, PreSync, wave 2) reads Secret \
          zitadel-secret, made by ExternalSecret zitadel-secret in app core-service-secrets \
          (app wave 0)"
        ),
        "{details:#?}"
    );
    assert!(f["help"]
        .as_str()
        .unwrap()
        .contains("resource.customizations.health.argoproj.io_Application"));
    assert_eq!(doc["summary"]["errors"], 1);
}

#[test]
fn fixed_layout_without_argocd_cm_warns_that_it_cannot_tell() {
    let (code, doc) = order_json(&fixed(None));
    assert_eq!(code, 0);
    let w = of_rule(&doc, "app-health-unknown");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].0, "warning");
    assert_eq!(doc["argocd_cm"], Value::Null);
}

#[test]
fn argo_cds_own_application_objects_and_exists_for_ask_dbs_secrets() {
    // --applications reads Application objects as Argo CD writes them (status and all); ask-db's
    // DB-password Secrets are named with --exists instead of rendering ask-db.
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "application-core-service-progressing.yaml",
        "application-secrets-synced.yaml",
    ] {
        std::fs::copy(fixture(&format!("argocd/{f}")), dir.path().join(f)).unwrap();
    }
    let a = vec![
        "--app".into(),
        app("core-service", &runbook("fixed/core-service.yaml")),
        "--app".into(),
        app(
            "core-service-secrets",
            &runbook("fixed/core-service-secrets.yaml"),
        ),
        "--applications".into(),
        dir.path().display().to_string(),
        "--argocd-cm".into(),
        fixture("argocd/argocd-cm-with-app-health.yaml"),
        "--exists".into(),
        "Secret/ask/core-pg-superuser".into(),
        "--exists".into(),
        "secret/ask/core-service-db-password".into(),
        "--exists".into(),
        "Secret/ask/zitadel-db-password".into(),
    ];
    let (code, doc) = order_json(&a);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["summary"]["warnings"], 0, "{doc:#}");
    assert!(of_rule(&doc, "keys-unknown")
        .iter()
        .any(|(_, _, m)| m.contains("made outside these apps (`--exists`)")));
    // The progressing fixture is bug 1's Application: its ref-only source is noted.
    assert!(!of_rule(&doc, "empty-source").is_empty());
}

#[test]
fn manifests_from_stdin() {
    let text = std::fs::read(runbook("broken/core-service.yaml")).unwrap();
    let a = vec![
        "--app".into(),
        "core-service=-".into(),
        "--exists".into(),
        "Secret/ask/core-service-secret".into(),
        "--exists".into(),
        "Secret/ask/zitadel-secret".into(),
        "--exists".into(),
        "Secret/ask/core-pg-superuser".into(),
        "--exists".into(),
        "Secret/ask/core-service-db-password".into(),
        "--exists".into(),
        "Secret/ask/zitadel-db-password".into(),
        "-o".into(),
        "json".into(),
    ];
    let (code, stdout, stderr) = order_with_stdin(&a, &text);
    assert_eq!(code, 1, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    // Only bug 2 is left when the Secrets exist before the sync.
    let errors: Vec<&Value> = findings(&doc)
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{doc:#}");
    assert_eq!(errors[0]["rule"], "phase-order");
    assert_eq!(errors[0]["consumer"]["file"], "<stdin>");
}

const SECRET_VALUES: [&str; 4] = [
    "c3VwZXItc2VjcmV0LWJhc2U2NA==",
    "super-secret-string-data",
    "super-secret-inline-env",
    "hunter2-in-broken-yaml",
];

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    p
}

#[test]
fn secret_values_never_appear_in_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(
        dir.path(),
        "app.yaml",
        &format!(
            "apiVersion: v1
kind: Secret
metadata:
  name: db
  annotations: {{argocd.argoproj.io/sync-wave: \"3\"}}
data:
  password: {}
stringData:
  other: {}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api}}
spec:
  template:
    spec:
      containers:
      - name: api
        env:
        - {{name: INLINE, value: {}}}
        - name: PW
          valueFrom: {{secretKeyRef: {{name: db, key: missing-key}}}}
",
            SECRET_VALUES[0], SECRET_VALUES[1], SECRET_VALUES[2]
        ),
    );
    let bad = write(
        dir.path(),
        "bad.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: db}}\nstringData:\n  password: \"{}\n  next: [\n",
            SECRET_VALUES[3]
        ),
    );
    for (path, want) in [(&good, 1), (&bad, 2)] {
        for extra in [&[][..], &["-o", "json"][..], &["-vvv"][..]] {
            let mut a = vec!["--app".to_string(), format!("x={}", path.display())];
            a.extend(extra.iter().map(|s| s.to_string()));
            let (code, stdout, stderr) = order(&a);
            assert_eq!(code, want, "{stdout}{stderr}");
            for v in SECRET_VALUES {
                assert!(
                    !stdout.contains(v) && !stderr.contains(v),
                    "{v} leaked:\n{stdout}\n{stderr}"
                );
            }
        }
    }
    // The findings are about the Secret, by name and key only.
    let (_, stdout, _) = order(&["--app".to_string(), format!("x={}", good.display())]);
    assert!(
        stdout.contains("reads key `missing-key` of Secret db"),
        "{stdout}"
    );
}

#[test]
fn bad_yaml_is_exit_2_with_file_and_line_and_a_json_document() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "chart.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\n# Source: x\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  labels: {a: b\ndata: {}\n",
    );
    let a = vec!["--app".to_string(), format!("x={}", bad.display())];
    let (code, stdout, stderr) = order(&a);
    assert_eq!(code, 2);
    assert!(stdout.is_empty(), "{stdout}");
    let at = format!("`{}:", bad.display());
    assert!(stderr.contains(&at), "{stderr}");
    let line: usize = stderr[stderr.find(&at).unwrap() + at.len()..]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((10..=11).contains(&line), "line {line}: {stderr}");
    assert!(stderr.contains("not valid YAML"), "{stderr}");
    assert!(stderr.contains("help:"), "{stderr}");

    let (code, doc) = order_json(&a);
    assert_eq!(code, 2);
    assert_eq!(doc["command"], "order");
    assert_eq!(doc["ok"], false);
    assert!(doc["error"].as_str().unwrap().contains("not valid YAML"));

    // An annotation Argo CD would reject (a number, not a string) is bad input too.
    let num = write(
        dir.path(),
        "num.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    argocd.argoproj.io/sync-wave: 4\n",
    );
    let (code, _, stderr) = order(&["--app".to_string(), format!("x={}", num.display())]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(&format!("`{}:1`", num.display()))
            && stderr.contains("`argocd.argoproj.io/sync-wave` is not a string"),
        "{stderr}"
    );
}

#[test]
fn bad_arguments_and_inputs_are_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cm = write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    );
    let core = runbook("fixed/core-service.yaml");
    let binary = dir.path().join("binary.yaml");
    std::fs::write(&binary, b"kind: \xff\xfe\n").unwrap();
    for (a, want) in [
        (
            vec!["--app".into(), format!("a={}", binary.display())],
            "not UTF-8",
        ),
        (args(&["--app", "core-service"]), "is not NAME=PATH"),
        (args(&["--app", "=x.yaml"]), "is not NAME=PATH"),
        (
            vec![
                "--app".into(),
                app("a", &core),
                "--exists".into(),
                "Pod/ask/x".into(),
            ],
            "must be `Secret` or `ConfigMap`",
        ),
        (
            vec![
                "--app".into(),
                app("a", &core),
                "--exists".into(),
                "Secret/ask".into(),
            ],
            "is not KIND/NAMESPACE/NAME",
        ),
        (
            args(&["--app", "a=/nonexistent/x.yaml"]),
            "cannot read `/nonexistent/x.yaml`",
        ),
        (
            args(&["--app", "a=-", "--app", "b=-"]),
            "stdin (`-`) is given for more than one",
        ),
        (
            vec![
                "--app".into(),
                app("a", &core),
                "--applications".into(),
                cm.display().to_string(),
            ],
            "holds no Argo CD Application",
        ),
        (
            vec![
                "--app".into(),
                app("a", &core),
                "--argocd-cm".into(),
                core.clone(),
            ],
            "holds no ConfigMap named `argocd-cm`",
        ),
        (
            vec![
                "--app".into(),
                app("a", &core),
                "--env".into(),
                "nowhere".into(),
                "--specs".into(),
                repo_specs().display().to_string(),
            ],
            "nowhere",
        ),
    ] {
        let (code, stdout, stderr) = order(&a);
        assert_eq!(code, 2, "{a:?}: {stdout}{stderr}");
        assert!(stderr.contains(want), "{a:?}: {stderr}");
    }
    // Without any --app, clap refuses (exit 2 too).
    let (code, _, stderr) = order(&[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--app <NAME=PATH>"), "{stderr}");
}

#[test]
fn hostile_names_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "evil.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: \"api\\e]0;pwned\\a\"}\nspec:\n  template:\n    spec:\n      containers:\n      - name: \"c\\e[2J\"\n        envFrom: [{secretRef: {name: \"s\\e[31m\\nfake: ok\"}}]\n",
    );
    for extra in [&[][..], &["-o", "json"][..]] {
        let mut a = vec![
            "--app".to_string(),
            format!("evil\u{1b}[1m={}", p.display()),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        let (code, stdout, stderr) = order(&a);
        assert_eq!(code, 1, "{stdout}{stderr}");
        assert!(
            !stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'),
            "{stdout:?}"
        );
        assert!(!stdout.contains("\u{7}"), "{stdout:?}");
    }
}

/// Every bidirectional control ("Trojan Source": embeddings, overrides, isolates, marks).
const BIDI: [char; 12] = [
    '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
];

/// A name that reorders the line it is printed in (issue 28 item 8: U+202E reached the terminal
/// raw in `order`'s messages) is shown escaped, in findings, app names and input errors.
#[test]
fn bidirectional_controls_in_names_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let names: String = BIDI.iter().map(|c| format!("x{c}")).collect();
    let p = write(
        dir.path(),
        "evil.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: \"api\u{202e}lave\"}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        envFrom: [{{secretRef: {{name: \"{names}\"}}}}]\n"
        ),
    );
    let clean = |what: &str, text: &str| {
        for c in BIDI {
            assert!(
                !text.contains(c),
                "{what}: U+{:04X} raw in {text:?}",
                u32::from(c)
            );
        }
    };
    let evil_app = format!("evil\u{2067}={}", p.display());
    let (code, stdout, stderr) = order(&[String::from("--app"), evil_app.clone()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    clean("text", &(stdout.clone() + &stderr));
    // Shown, escaped: the reader sees that something is there.
    assert!(stdout.contains("api\\u{202e}lave"), "{stdout}");
    assert!(stdout.contains("x\\u{202a}x\\u{202b}"), "{stdout}");
    assert!(stdout.contains("x\\u{61c}"), "{stdout}");
    assert!(stdout.contains("app evil\\u{2067}"), "{stdout}");
    // JSON escapes them (`\u202e`); the document still holds the names as they are.
    let (code, stdout, stderr) = order(&["--app".into(), evil_app, "-o".into(), "json".into()]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    clean("json", &(stdout.clone() + &stderr));
    assert!(stdout.contains("\\u202e"), "{stdout}");
    // An input error quoting the argument.
    let (code, stdout, stderr) = order(&["--app".into(), "no-equals\u{202e}sign".into()]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    clean("error", &(stdout.clone() + &stderr));
    assert!(stderr.contains("no-equals\\u{202e}sign"), "{stderr}");
}

#[test]
fn env_marks_findings_about_the_specs_external_secrets_as_the_bootstraps() {
    let mut a = broken();
    a.extend([
        "--env".to_string(),
        "auh1-dev".to_string(),
        "--specs".to_string(),
        repo_specs().display().to_string(),
    ]);
    let (code, doc) = order_json(&a);
    assert_eq!(code, 1);
    for f in findings(&doc) {
        let name = f["object"]["name"].as_str().unwrap_or_default();
        let own = matches!(name, "core-service-secret" | "zitadel-secret");
        assert_eq!(f["bootstrap"].is_object(), own, "{f:#}");
        if own {
            assert_eq!(f["bootstrap"]["spec"], "core-service");
            assert_eq!(f["bootstrap"]["env"], "auh1-dev");
            assert_eq!(f["bootstrap"]["external_secret"], name);
        }
    }
    let (_, stdout, _) = order(&a);
    assert!(
        stdout.contains("    bootstrap: made by ExternalSecret zitadel-secret of spec core-service: `vault-seed apply auh1-dev` seeds its Vault paths"),
        "{stdout}"
    );
}

#[test]
fn json_document_has_the_documented_schema() {
    let (_, doc) = order_json(&broken());
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&doc),
        ["apps", "argocd_cm", "command", "findings", "ok", "summary"]
    );
    assert_eq!(
        keys(&findings(&doc)[0]),
        [
            "app",
            "bootstrap",
            "code",
            "consumer",
            "details",
            "help",
            "key",
            "message",
            "object",
            "optional",
            "producer",
            "rule",
            "severity"
        ]
    );
    let f = findings(&doc)
        .iter()
        .find(|f| f["rule"] == "phase-order")
        .unwrap();
    assert_eq!(
        keys(&f["consumer"]),
        [
            "app",
            "app_wave",
            "file",
            "hook",
            "kind",
            "line",
            "name",
            "namespace",
            "phase",
            "wave"
        ]
    );
    assert_eq!(keys(&f["object"]), ["kind", "name", "namespace"]);
    assert_eq!(
        keys(&doc["apps"][0]),
        [
            "app_wave",
            "consumers",
            "name",
            "namespace",
            "objects",
            "references"
        ]
    );
    assert_eq!(keys(&doc["summary"]), ["errors", "notes", "warnings"]);
    assert_eq!(
        keys(&doc["argocd_cm"]),
        ["application_health", "file", "key"]
    );
    // Worst first.
    let sev: Vec<&str> = findings(&doc)
        .iter()
        .map(|f| f["severity"].as_str().unwrap())
        .collect();
    let mut sorted = sev.clone();
    sorted.sort_by_key(|s| ["error", "warning", "note"].iter().position(|x| x == s));
    assert_eq!(sev, sorted);
}

#[test]
fn a_merge_key_carrying_env_from_is_read_as_kubernetes_reads_it() {
    // The Secret's name reaches the container only through `<<: *anchor`, as an attacker (or a
    // chart sharing its env blocks) writes it; nested merges and a sequence of maps too.
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "merge.yaml",
        "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: ask}
spec:
  template:
    spec:
      containers:
      - &base
        name: api
        envFrom: [{secretRef: {name: merged-secret}}]
      - <<: *base
        name: sidecar
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: ask}
spec:
  template:
    spec:
      containers:
      - <<: [{env: [{name: PW, valueFrom: {secretKeyRef: {name: listed-secret, key: pw}}}]}, {name: x}]
        name: migrate
",
    );
    let (code, doc) = order_json(&["--app".to_string(), format!("x={}", p.display())]);
    assert_eq!(code, 1, "{doc:#}");
    let missing: Vec<&str> = findings(&doc)
        .iter()
        .filter(|f| f["rule"] == "no-producer")
        .map(|f| f["object"]["name"].as_str().unwrap())
        .collect();
    assert!(missing.contains(&"merged-secret"), "{doc:#}");
    assert!(missing.contains(&"listed-secret"), "{doc:#}");
    let merged = findings(&doc)
        .iter()
        .find(|f| f["object"]["name"] == "merged-secret")
        .unwrap();
    let details = merged["details"].to_string();
    assert!(
        details.contains("envFrom of container sidecar"),
        "{details}"
    );
}

/// Run `vault-seed order ARGS`, failing the test (not hanging it) after `secs` seconds.
fn order_within(args: &[String], secs: u64) -> (i32, String, String) {
    let mut child = std::process::Command::new(common::run::bin())
        .arg("order")
        .args(args)
        .env_clear()
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("`vault-seed order {args:?}` still runs after {secs}s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = common::Out::from(child.wait_with_output().unwrap());
    (out.code(), out.stdout_text(), out.stderr_text())
}

#[test]
fn inputs_that_are_not_regular_files_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("chart.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let inside = dir.path().join("apps");
    std::fs::create_dir(&inside).unwrap();
    write(
        &inside,
        "a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    );
    let made = std::process::Command::new("mkfifo")
        .arg(inside.join("b.yaml"))
        .status()
        .unwrap();
    assert!(made.success());
    let core = runbook("fixed/core-service.yaml");
    let f = fifo.display().to_string();
    for (a, named) in [
        (vec!["--app".into(), format!("a={f}")], f.clone()),
        (
            vec!["--app".into(), format!("a={}", inside.display())],
            inside.join("b.yaml").display().to_string(),
        ),
        (
            vec![
                "--app".into(),
                app("a", &core),
                "--applications".into(),
                f.clone(),
            ],
            f.clone(),
        ),
        (
            vec![
                "--app".into(),
                app("a", &core),
                "--argocd-cm".into(),
                f.clone(),
            ],
            f.clone(),
        ),
        (args(&["--app", "a=/dev/zero"]), "/dev/zero".to_string()),
    ] {
        let (code, stdout, stderr) = order_within(&a, 20);
        assert_eq!(code, 2, "{a:?}: {stdout}{stderr}");
        assert!(
            stderr.contains(&format!("`{named}` is a"))
                && stderr.contains("not a regular file")
                && stderr.contains("help: pass a regular file"),
            "{a:?}: {stderr}"
        );
    }
}

/// Run `vault-seed order ARGS` with its address space limited to `mib` MiB (an upper bound of
/// its peak RSS), sampling its peak RSS while it runs; (exit code, stderr, peak RSS in kB).
fn order_in_budget(args: &[String], mib: u64) -> (i32, String, u64) {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", mib * 1024))
        .arg(common::run::bin())
        .arg("order")
        .args(args)
        .env_clear()
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        let hwm = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        });
        peak = peak.max(hwm.unwrap_or(0));
        assert!(start.elapsed().as_secs() < 120, "still runs after 120s");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let out = common::Out::from(child.wait_with_output().unwrap());
    (out.code(), out.stderr_text(), peak)
}

#[test]
fn hostile_inputs_are_refused_within_a_memory_budget() {
    use std::fmt::Write as _;
    let dir = tempfile::tempdir().unwrap();
    // One mapping of 3 million keys (40 MB): refused before it is parsed.
    let mut big = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n");
    for i in 0..3_000_000 {
        let _ = writeln!(big, "  k{i}: v");
    }
    let big = write(dir.path(), "big.yaml", &big);
    let (code, stderr, peak) =
        order_in_budget(&["--app".into(), format!("a={}", big.display())], 256);
    println!("3 million keys: peak RSS {peak} kB");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "`{}:1`: more YAML than vault-seed reads",
            big.display()
        )),
        "{stderr}"
    );
    // Aliases that copy a mapping far more often than the text shows.
    let mut bomb =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  a: &a {");
    bomb.push_str(
        &(0..1000)
            .map(|i| format!("k{i}: v"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    bomb.push_str("}\n  b: [");
    bomb.push_str(&vec!["*a"; 2000].join(", "));
    bomb.push_str("]\n");
    let bomb = write(dir.path(), "bomb.yaml", &bomb);
    let (code, stderr, _) =
        order_in_budget(&["--app".into(), format!("a={}", bomb.display())], 256);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("more YAML than vault-seed reads"),
        "{stderr}"
    );

    // 100,000 small documents (7 MB) are read, each dropped once reduced.
    let mut many = String::new();
    for i in 0..100_000 {
        let _ = write!(
            many,
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{a: b}}\n"
        );
    }
    let many = write(dir.path(), "many.yaml", &many);
    let (code, stderr, peak) =
        order_in_budget(&["--app".into(), format!("a={}", many.display())], 256);
    println!("100,000 documents: peak RSS {peak} kB");
    assert_eq!(code, 0, "{stderr}");

    // All files together count: four files of 20 MB of comments pass 64 MiB.
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    let comment = format!("# {}\n", "x".repeat(1000)).repeat(20_000);
    for i in 0..4 {
        write(&files, &format!("{i}.yaml"), &comment);
    }
    let (code, stderr, peak) =
        order_in_budget(&["--app".into(), format!("a={}", files.display())], 256);
    println!("80 MB of files: peak RSS {peak} kB");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("the input passes 64 MiB, all files together, at `")
            && stderr.contains("3.yaml`"),
        "{stderr}"
    );
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn rollouts_are_consumers_and_unknown_pod_templates_are_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let rollout = write(
        dir.path(),
        "rollout.yaml",
        "\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: api, namespace: ask}
spec:
  template:
    spec:
      containers:
      - name: api
        envFrom: [{secretRef: {name: rollout-secret}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api-template, namespace: ask}
spec:
  replicas: 0
  template:
    spec:
      containers:
      - name: api
        env: [{name: PW, valueFrom: {secretKeyRef: {name: ref-secret, key: pw}}}]
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: api-ref
  namespace: ask
  annotations: {argocd.argoproj.io/sync-wave: \"-1\"}
spec:
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: api-template}
---
apiVersion: v1
kind: Secret
metadata: {name: ref-secret, namespace: ask}
stringData: {pw: x}
",
    );
    let (code, doc) = order_json(&["--app".to_string(), format!("x={}", rollout.display())]);
    assert_eq!(code, 1, "{doc:#}");
    let about = |rule: &str| -> Vec<String> {
        findings(&doc)
            .iter()
            .filter(|f| f["rule"] == rule)
            .map(|f| format!("{} {}", f["consumer"]["kind"], f["object"]["name"]))
            .collect()
    };
    assert_eq!(
        about("no-producer"),
        ["\"Rollout\" \"rollout-secret\""],
        "{doc:#}"
    );
    // The referenced Deployment's template runs at the Rollout's wave, before the Secret.
    assert_eq!(
        about("wave-order"),
        ["\"Rollout\" \"ref-secret\""],
        "{doc:#}"
    );

    let custom = write(
        dir.path(),
        "custom.yaml",
        "\
apiVersion: workers.example.com/v1
kind: Worker
metadata: {name: w, namespace: ask}
spec:
  template:
    spec:
      containers:
      - name: w
        envFrom: [{secretRef: {name: never-checked}}]
",
    );
    let a = vec!["--app".to_string(), format!("x={}", custom.display())];
    let (code, stdout, stderr) = order(&a);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("error: kind Worker has a pod template vault-seed does not understand")
            && stdout.contains("not checked: some workloads' pod templates cannot be read"),
        "{stdout}"
    );
    assert!(!stdout.contains("the order holds"), "{stdout}");
    let (code, doc) = order_json(&a);
    assert_eq!((code, &doc["ok"]), (1, &Value::Bool(false)));
    assert_eq!(findings(&doc)[0]["rule"], "pod-template-unknown");
}

#[test]
fn thousands_of_findings_or_bad_documents_have_bounded_output() {
    use std::fmt::Write as _;
    let n = 30_000;
    let dir = tempfile::tempdir().unwrap();
    // Each Job reads a Secret of its own that nothing makes, and all read one shared one.
    let mut text = String::new();
    for i in 0..n {
        let _ = write!(
            text,
            "---\napiVersion: batch/v1\nkind: Job\nmetadata: {{name: j{i}, namespace: ask}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        envFrom: [{{secretRef: {{name: s{i}}}}}, {{secretRef: {{name: shared}}}}]\n"
        );
    }
    let jobs = write(dir.path(), "jobs.yaml", &text);
    let a = vec!["--app".to_string(), format!("x={}", jobs.display())];
    let (code, stdout, stderr) = order(&a);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.len() < 60_000, "{} bytes of output", stdout.len());
    assert_eq!(
        stdout.matches("error: no app renders").count(),
        50,
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "… and {} more findings (`-o json` lists them all)",
            n + 1 - 50
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("result: {} error(s)", n + 1)),
        "{stdout}"
    );
    // The shared Secret's finding names its first readers and counts the others.
    assert!(
        stdout.contains(&format!("… and {} more", n - 20)),
        "{stdout}"
    );
    let (code, doc) = order_json(&a);
    assert_eq!(code, 1);
    assert_eq!(findings(&doc).len(), n + 1);

    // As many documents that are not objects: exit 2, the first problems and a count.
    let bad = write(dir.path(), "bad.yaml", &"---\njust a string\n".repeat(n));
    let a = vec!["--app".to_string(), format!("x={}", bad.display())];
    let (code, _, stderr) = order(&a);
    assert_eq!(code, 2);
    assert!(
        stderr.len() < 40_000,
        "{} bytes of diagnostics",
        stderr.len()
    );
    assert_eq!(
        stderr.matches("not a Kubernetes object").count(),
        50,
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "… and {} more problems (`-o json` lists them all)",
            n - 50
        )) && stderr.contains(&format!("error: {n} problem(s) in the input")),
        "{stderr}"
    );
    let (code, doc) = order_json(&a);
    assert_eq!(code, 2);
    assert_eq!(doc["errors"].as_array().unwrap().len(), n);
}
