//! `verify`'s part `argocd` (issue 17, live): the runbook's section 6 verification against Argo
//! CD's Application objects and argocd-cm, served by the fake Kubernetes API server from
//! `tests/fixtures/argocd/` and read by the real kube-rs client through a real kubeconfig.

use crate::common;
use crate::verify::{argocd_layout, healthy_cluster, vault_with, RUNBOOK_POLICY};

use std::time::Duration;

use common::fake_kube::{self, FakeKube};
use common::{has, OpenBao, Out, Run};
use serde_json::{json, Value};

const ARGOCD: &str = "
[argocd]
namespace = \"argocd\"
secrets_app = \"core-service-secrets\"
consumers = [\"core-service\"]
";

/// The repository's spec with its `[argocd]` section replaced by `argocd`.
fn specs_with(argocd: &str) -> tempfile::TempDir {
    common::spec_dir(&format!("{}\n{argocd}", common::repo_spec_without_argocd()))
}

fn verify(bao: &OpenBao, specs: &tempfile::TempDir, kube: &FakeKube, args: &[&str]) -> Run {
    verify_at(bao, specs, &kube.kubeconfig(), args)
}

fn verify_at(
    bao: &OpenBao,
    specs: &tempfile::TempDir,
    kubeconfig: &std::path::Path,
    args: &[&str],
) -> Run {
    Run::new(bao)
        .specs(specs.path())
        .args(["verify", "auh1-dev", "--kubeconfig"])
        .arg(kubeconfig)
        .args(args)
}

fn app<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["argocd"]["apps"]
        .as_array()
        .unwrap_or_else(|| panic!("no argocd.apps in {doc}"))
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no app {name} in {doc}"))
}

fn messages(v: &Value) -> String {
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{} / help: {}\n", p["message"], p["help"]))
        .collect()
}

#[track_caller]
fn has_all(out: &str, wanted: &[&str]) {
    for w in wanted {
        has(out, w);
    }
}

/// Change the Application `name` in Argo CD's namespace.
fn edit_app(kube: &FakeKube, name: &str, f: impl FnOnce(&mut Value)) {
    kube.update("Application", Some("argocd"), name, f);
}

/// Only Vault's token is needed for `--only argocd`.
fn bao() -> OpenBao {
    OpenBao::dev()
}

/// A Vault for `--only argocd` and a cluster with the fixed layout.
fn fixed() -> (OpenBao, FakeKube) {
    let kube = FakeKube::start();
    argocd_layout(&kube);
    (bao(), kube)
}

/// The Applications are read by one LIST of Argo CD's namespace, not a GET each.
#[test]
fn the_applications_are_read_by_one_list() {
    let (bao, kube) = fixed();
    let specs = specs_with(ARGOCD);
    verify(&bao, &specs, &kube, &["--only", "argocd"]).output();
    let paths: Vec<String> = kube.requests().into_iter().map(|r| r.path).collect();
    let lists = paths
        .iter()
        .filter(|p| p.ends_with("/namespaces/argocd/applications"))
        .count();
    let gets = paths
        .iter()
        .filter(|p| p.contains("/applications/"))
        .count();
    assert_eq!((lists, gets), (1, 0), "{paths:?}");
}

#[test]
fn the_fixed_layout_passes_with_every_part() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    argocd_layout(&kube);
    let specs = specs_with(ARGOCD);
    let doc = verify(&bao, &specs, &kube, &["-o", "json"]).output().json();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["argocd"]["ok"], true, "{doc}");
    let secrets = app(&doc, "core-service-secrets");
    assert_eq!(secrets["role"], "secrets");
    assert_eq!(secrets["app_wave"], 0);
    assert_eq!(secrets["parent"], "auh1-dev-apps");
    assert_eq!(
        (&secrets["sync"], &secrets["health"]),
        (&json!("Synced"), &json!("Healthy"))
    );
    let core = app(&doc, "core-service");
    assert_eq!(core["role"], "consumer");
    assert_eq!(core["app_wave"], 1);
    assert_eq!(core["after"], json!(["core-service-secrets"]));
    assert_eq!(core["ok"], true, "a consumer's own sync is not judged");
    assert_eq!(
        doc["argocd"]["argocd_cm"][0]["key"],
        "resource.customizations.health.argoproj.io_Application"
    );
    // Every object listed (`--all`): each app's line and its note.
    let human = verify(&bao, &specs, &kube, &["--all"]).output();
    let stdout = human.stdout_text();
    has_all(
        &stdout,
        &[
            "ok   argocd: ",
            "ok   Application argocd/core-service-secrets (secrets app, app wave 0): Synced, Healthy",
            "ok   Application argocd/core-service (app wave 1, after core-service-secrets): OutOfSync, Progressing",
            "note: sync running: waiting for completion of hook batch/Job/zitadel-setup",
            "ok   ConfigMap argocd/argocd-cm: app waves wait for Healthy",
            "verify auh1-dev: done",
        ],
    );

    // The other fixture forms pass too: Argo CD 3.x's default (no per-resource health) and the
    // health check in the old single `resource.customizations` key.
    kube.put(fake_kube::argocd_fixture(
        "application-secrets-synced-v3-default.yaml",
    ));
    kube.put(fake_kube::argocd_fixture(
        "argocd-cm-with-app-health-legacy-key.yaml",
    ));
    let doc = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .output()
        .json();
    assert_eq!(
        doc["argocd"]["argocd_cm"][0]["key"],
        "resource.customizations"
    );
    assert_eq!(doc["vault"], Value::Null, "--only argocd");
    assert_eq!(doc["kube"], Value::Null, "--only argocd");
}

#[test]
fn a_secrets_app_not_synced_progressing_or_degraded_fails_in_the_runbooks_terms() {
    let (bao, kube) = fixed();
    let specs = specs_with(ARGOCD);
    let run = |kube: &FakeKube| {
        verify(&bao, &specs, kube, &["--only", "argocd"])
            .status(1)
            .output()
    };
    let set = |sync: &str, health: &str| {
        edit_app(&kube, "core-service-secrets", |a| {
            a["status"]["sync"]["status"] = json!(sync);
            a["status"]["health"]["status"] = json!(health);
        });
    };

    let cases: [(&str, &str, Option<Value>, &[&str]); 2] = [
        (
            "OutOfSync",
            "Healthy",
            None,
            &[
                "FAIL Application argocd/core-service-secrets (secrets app, app wave 0): OutOfSync, Healthy",
                "error: the secrets app `core-service-secrets` is OutOfSync: what Git holds for it (the ExternalSecrets) is not all applied",
                "help: sync it (`argocd app sync core-service-secrets`)",
                "verify auh1-dev: NOT done",
            ],
        ),
        (
            "Synced",
            "Progressing",
            Some(json!({"status": "Progressing", "message": "Waiting for ExternalSecret"})),
            &[
                "error: the secrets app `core-service-secrets` is Progressing, not Healthy: its ExternalSecrets are not all Ready yet, and the app-of-apps holds `core-service` back until it is",
                "ExternalSecret ask/zitadel-secret: Progressing: Waiting for ExternalSecret",
                "help: wait (`verify --wait 5m`): ESO retries",
            ],
        ),
    ];
    for (sync, health, resource_health, wanted) in cases {
        set(sync, health);
        if let Some(h) = resource_health {
            edit_app(&kube, "core-service-secrets", |a| {
                a["status"]["resources"][1]["health"] = h;
            });
        }
        has_all(&run(&kube).stdout_text(), wanted);
    }

    set("Synced", "Degraded");
    edit_app(&kube, "core-service-secrets", |a| {
        a["status"]["resources"][1]["health"] =
            json!({"status": "Degraded", "message": "could not get secret data from provider"});
        a["status"]["operationState"]["phase"] = json!("Failed");
        a["status"]["operationState"]["message"] =
            json!("one or more synchronization tasks completed unsuccessfully");
    });
    let out = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
    let secrets = app(&doc, "core-service-secrets");
    assert_eq!(secrets["ok"], false);
    assert_eq!(secrets["health"], "Degraded");
    assert_eq!(
        secrets["unhealthy"],
        json!([{"group": "external-secrets.io", "kind": "ExternalSecret", "namespace": "ask", "name": "zitadel-secret", "status": "Synced", "health": "Degraded", "health_message": "could not get secret data from provider", "hook": false}])
    );
    let m = messages(secrets);
    assert!(
        m.contains("is Degraded: an ExternalSecret's Ready condition is False (ESO cannot read its Vault path), and the app-of-apps fails its sync at this app wave, so `core-service` cannot start"),
        "{m}"
    );
    assert!(
        m.contains("`vault-seed apply auh1-dev` creates missing paths"),
        "{m}"
    );
    assert_eq!(
        secrets["notes"],
        json!(["last sync failed: one or more synchronization tasks completed unsuccessfully"])
    );
    assert_eq!(doc["argocd"]["ok"], false);
    assert_eq!(doc["ok"], false);
}

/// The runbook's bug 1 seen live: the secrets app does not manage the spec's ExternalSecrets
/// (here because its only source is `ref` without `path`).
#[test]
fn a_secrets_app_that_does_not_manage_the_external_secrets_is_bug_1() {
    let (bao, kube) = fixed();
    edit_app(&kube, "core-service-secrets", |a| {
        a["spec"]["sources"] = json!([
            {"repoURL": "https://charts.example.internal/ask", "chart": "core-service-secrets", "targetRevision": "0.1.0"},
            {"repoURL": "https://git.example.internal/platform/gitops.git", "ref": "values", "targetRevision": "main"},
        ]);
        a["status"]["resources"] = json!([]);
    });
    let out = verify(&bao, &specs_with(ARGOCD), &kube, &["--only", "argocd"])
        .status(1)
        .output();
    has(
        &out.stdout_text(),
        "error: the secrets app `core-service-secrets` does not manage ExternalSecret `ask/core-service-secret`, `ask/zitadel-secret` (its source 2 is `ref: values` with no path: it only provides value files): Argo CD never applies it, so its Secret never exists (the runbook's bug 1)",
    );
}

#[test]
fn a_consumer_not_after_the_secrets_app_fails() {
    let (bao, kube) = fixed();
    let specs = specs_with(ARGOCD);
    for wave in ["0", "-1"] {
        edit_app(&kube, "core-service", |a| {
            a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = json!(wave);
        });
        let out = verify(&bao, &specs, &kube, &["--only", "argocd"])
            .status(1)
            .output();
        let stdout = out.stdout_text();
        has_all(
            &stdout,
            &[
                &format!("FAIL Application argocd/core-service (app wave {wave}, after core-service-secrets)"),
                &format!("error: Application `core-service` is at app wave {wave}, not after the secrets app `core-service-secrets` (app wave 0): the app-of-apps may start core-service before its secrets exist"),
                "help: annotate `core-service` with `argocd.argoproj.io/sync-wave: \"1\"` (any wave above 0) in the app-of-apps",
            ],
        );
    }
    // No annotation is wave 0 too.
    edit_app(&kube, "core-service", |a| {
        a["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("argocd.argoproj.io/sync-wave");
    });
    let doc = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output()
        .json();
    assert_eq!(app(&doc, "core-service")["app_wave"], 0);

    // A later wave under another app-of-apps orders nothing.
    edit_app(&kube, "core-service", |a| {
        a["metadata"]["annotations"] = json!({
            "argocd.argoproj.io/sync-wave": "1",
            "argocd.argoproj.io/tracking-id": "other-apps:argoproj.io/Application:argocd/core-service",
        });
    });
    let doc = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output()
        .json();
    let m = messages(app(&doc, "core-service"));
    assert!(
        m.contains("is managed by `other-apps` and the secrets app `core-service-secrets` by `auh1-dev-apps`: sync waves order only the children of one app-of-apps"),
        "{m}"
    );
}

#[test]
fn argocd_cm_without_the_application_health_check_fails() {
    let (bao, kube) = fixed();
    kube.put(fake_kube::argocd_fixture("argocd-cm-without.yaml"));
    let specs = specs_with(ARGOCD);
    let out = verify(&bao, &specs, &kube, &["--only", "argocd"])
        .status(1)
        .output();
    let stdout = out.stdout_text();
    has_all(
        &stdout,
        &[
            "FAIL ConfigMap argocd/argocd-cm: no health check for argoproj.io/Application",
            "error: app waves do not wait for Healthy: argocd-cm has no health check for argoproj.io/Application (Argo CD removed it in 1.8), so `core-service` (app wave 1) starts about 2s after `core-service-secrets` (app wave 0) is applied, whatever its state",
            "help: add `resource.customizations.health.argoproj.io_Application` to argocd-cm",
        ],
    );
    // The Applications themselves are fine: counted, not listed.
    has(&stdout, ": 2 Application(s) ok, 0 of 1 argocd-cm ok");
    assert!(
        !stdout.contains("Application argocd/core-service-secrets"),
        "{stdout}"
    );

    // Customizations Argo CD cannot read: it then loads none, the health check included.
    kube.update("ConfigMap", Some("argocd"), "argocd-cm", |cm| {
        cm["data"]["resource.customizations.health.argoproj.io_Application"] =
            json!("hs = {}\nhs.status = \"Healthy\"\nreturn hs");
        cm["data"]["resource.customizations.colour.argoproj.io_Application"] = json!("x");
    });
    let out = verify(&bao, &specs, &kube, &["--only", "argocd"])
        .status(1)
        .output();
    has(
        &out.stdout_text(),
        "error: app waves do not wait for Healthy: Argo CD cannot read argocd-cm's resource customizations (`resource.customizations.colour.argoproj.io_Application`: resource customization type `colour` is not supported), and then loads none",
    );

    // No argocd-cm at all.
    let kube = FakeKube::start();
    kube.put(fake_kube::argocd_fixture("application-secrets-synced.yaml"));
    kube.put(fake_kube::argocd_fixture(
        "application-core-service-progressing.yaml",
    ));
    let doc = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output()
        .json();
    let cm = &doc["argocd"]["argocd_cm"][0];
    assert_eq!(cm["exists"], false);
    assert!(
        messages(cm).contains(
            "ConfigMap `argocd/argocd-cm` does not exist, so app waves do not wait for Healthy"
        ),
        "{cm}"
    );
}

#[test]
fn a_missing_application_is_named() {
    let bao = bao();
    let kube = FakeKube::start();
    kube.put(fake_kube::argocd_fixture("argocd-cm-with-app-health.yaml"));
    let specs = specs_with(ARGOCD);
    let out = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
    let secrets = app(&doc, "core-service-secrets");
    assert_eq!(secrets["exists"], false);
    let m = messages(secrets);
    assert!(
        m.contains("Application `argocd/core-service-secrets` does not exist: the secrets app that creates the ExternalSecrets has not been created"),
        "{m}"
    );
    assert!(m.contains("or correct `[argocd] secrets_app` in `"), "{m}");
    let core = app(&doc, "core-service");
    assert_eq!(core["exists"], false);
    assert!(
        messages(core).contains("Application `argocd/core-service` does not exist, so its app wave cannot be checked against the secrets app `core-service-secrets`"),
        "{core}"
    );
    // A typo in the spec names the Application asked for.
    let specs = specs_with(&ARGOCD.replace("\"core-service\"", "\"core-servcie\""));
    argocd_layout(&kube);
    let out = verify(&bao, &specs, &kube, &["--only", "argocd"])
        .status(1)
        .output();
    has_all(
        &out.stdout_text(),
        &[
            "FAIL Application argocd/core-servcie (after core-service-secrets): does not exist",
            ": 1 of 2 Application(s) ok, 1 argocd-cm ok",
        ],
    );
    // Only reads (a LIST of the Applications, argocd-cm's GET), in Argo CD's namespace.
    for r in kube.requests() {
        assert_eq!(r.method, "GET", "{r:?}");
    }
    assert!(
        kube.unknown_requests().is_empty(),
        "{:?}",
        kube.unknown_requests()
    );
}

#[test]
fn wait_sees_the_secrets_app_become_healthy_and_does_not_wait_for_a_wrong_wave() {
    let (bao, kube) = fixed();
    let progressing = |a: &mut Value| {
        a["status"]["health"]["status"] = json!("Progressing");
    };
    kube.update(
        "Application",
        Some("argocd"),
        "core-service-secrets",
        progressing,
    );
    let specs = specs_with(ARGOCD);
    // Reads of the secrets app: the LIST of Argo CD's namespace's Applications (or its GET).
    let gets = |kube: &FakeKube| {
        kube.requests()
            .iter()
            .filter(|r| {
                r.path.ends_with("/applications/core-service-secrets")
                    || r.path.ends_with("/namespaces/argocd/applications")
            })
            .count()
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            // Flip it once verify has seen it Progressing (however slow this machine is).
            let start = std::time::Instant::now();
            while gets(&kube) == 0 && start.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(500));
            edit_app(&kube, "core-service-secrets", |a| {
                a["status"]["health"]["status"] = json!("Healthy");
            });
        });
        let out = verify(&bao, &specs, &kube, &["--only", "argocd", "--wait", "60s"]);
        let out = out.output();
        has(
            &out.stderr_text(),
            "waiting: Application core-service-secrets Synced, Progressing",
        );
    });
    assert!(gets(&kube) >= 2, "asked again while waiting");

    // A wrong wave is not something time fixes: one look, no waiting.
    kube.update(
        "Application",
        Some("argocd"),
        "core-service-secrets",
        progressing,
    );
    edit_app(&kube, "core-service", |a| {
        a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = json!("0");
    });
    let before = gets(&kube);
    let out = verify(&bao, &specs, &kube, &["--only", "argocd", "--wait", "10m"])
        .status(1)
        .output();
    assert_eq!(gets(&kube), before + 1, "{}", out.stderr_text());
    assert!(
        !out.stderr_text().contains("waiting:"),
        "{}",
        out.stderr_text()
    );
}

/// Text from Argo CD's objects reaches the terminal clean and bounded; what an Application's
/// spec or argocd-cm may hold besides what is checked (Helm values, an inline Dex client secret)
/// is never read into the report, logged or shown, at any verbosity.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn hostile_argocd_text_is_clean_and_nothing_else_of_the_objects_is_shown() {
    let (bao, kube) = fixed();
    let hostile = format!(
        "\x1b]0;pwned\x07\x1b[2Jcleared\r\x1b[1Afake line\u{9b}31m\u{202e}desrever{}",
        "A".repeat(2 * 1024 * 1024)
    );
    const HELM_SECRET: &str = "helm-value-secret-7f3a9c";
    const DEX_SECRET: &str = "dex-client-secret-91be2d";
    edit_app(&kube, "core-service-secrets", |a| {
        a["status"]["health"]["status"] = json!("Degraded\x1b[5m");
        a["status"]["operationState"]["phase"] = json!("Running");
        a["status"]["operationState"]["message"] = json!(hostile);
        a["status"]["conditions"] =
            json!([{"type": "ComparisonError\x07", "message": "ok   argocd: fine\r\n\x1b[1A"}]);
        // Many entries, each past the cap (the 2 MiB text once is enough).
        let long = format!("\x1b[2J\u{202e}{}", "B".repeat(600));
        let many: Vec<Value> = (0..5000)
            .map(|i| json!({"group": "external-secrets.io", "kind": "ExternalSecret", "namespace": "ask", "name": format!("es-{i}"), "status": "Synced", "health": {"status": "Degraded", "message": long}}))
            .chain((0..5000).map(|i| json!({"type": "SyncError", "message": format!("{i}{long}")})))
            .collect();
        let (resources, conditions) = many.split_at(5000);
        a["status"]["resources"] = json!(resources);
        a["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .extend(conditions.iter().cloned());
        a["spec"]["source"]["helm"] = json!({"values": format!("password: {HELM_SECRET}"), "parameters": [{"name": "p", "value": HELM_SECRET}]});
    });
    kube.update("ConfigMap", Some("argocd"), "argocd-cm", |cm| {
        cm["data"]["dex.config"] = json!(format!(
            "connectors:\n- config:\n    clientSecret: {DEX_SECRET}\n"
        ));
    });
    let specs = specs_with(ARGOCD);
    let clean = |bytes: &[u8], what: &str| {
        let s = String::from_utf8_lossy(bytes);
        for bad in ['\x1b', '\x07', '\r', '\u{9b}', '\u{202e}'] {
            assert!(!s.contains(bad), "{what} holds {bad:?}");
        }
        assert!(bytes.len() < 64 * 1024, "{what} is {} bytes", bytes.len());
    };
    let out = verify(&bao, &specs, &kube, &["--only", "argocd"])
        .status(1)
        .output();
    clean(&out.stdout, "stdout");
    clean(&out.stderr, "stderr");
    let stdout = out.stdout_text();
    has_all(
        &stdout,
        &[
            "note: sync running: cleared fake line",
            "more characters)",
            "note: ComparisonError: ok   argocd: fine",
            "note: 4990 more resources are not Healthy (`argocd app get core-service-secrets` lists them)",
        ],
    );

    let out = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output();
    clean(&out.stdout, "JSON stdout");
    let doc = out.json();
    let secrets = app(&doc, "core-service-secrets");
    assert_eq!(secrets["health"], "Degraded\x1b[5m", "JSON keeps the text");
    let message = secrets["operation"]["message"].as_str().unwrap();
    assert!(message.starts_with("\x1b]0;pwned\x07"), "{message:?}");
    assert!(message.chars().count() < 700, "capped where it enters");

    // Nothing but what is checked, at trace level too.
    let mut all = String::new();
    for args in [
        &["--only", "argocd", "-vvv"][..],
        &["--only", "argocd", "-o", "json", "-vvv"],
    ] {
        let out = Run::new(&bao)
            .env("RUST_LOG", "trace")
            .specs(specs.path())
            .args(["verify", "auh1-dev", "--kubeconfig"])
            .arg(kube.kubeconfig())
            .args(args)
            .status(1)
            .output();
        assert!(
            out.stderr_text().contains(" INFO vault_seed"),
            "logging was on"
        );
        all.push_str(&out.all_text());
    }
    for secret in [
        HELM_SECRET,
        DEX_SECRET,
        kube.token.as_str(),
        bao.token.as_str(),
    ] {
        assert!(!all.contains(secret), "{secret} leaked into the output");
    }
}

#[test]
fn the_part_is_asked_for_only_where_a_spec_has_argocd() {
    let bao = bao();
    let kube = FakeKube::start();
    // A spec without `[argocd]`: the part is null, and asking for it is a usage error.
    let without = common::spec_dir(&common::repo_spec_without_argocd());
    let out = Run::new(&bao)
        .specs(without.path())
        .args(["verify", "auh1-dev", "--only", "argocd", "-o", "json"])
        .status(2)
        .output();
    let doc = out.json();
    assert_eq!(
        doc["error"],
        "no spec of environment `auh1-dev` has an `[argocd]` section"
    );
    has(doc["help"].as_str().unwrap(), "add `[argocd]`");
    let doc = Run::new(&bao)
        .specs(without.path())
        .args(["verify", "auh1-dev", "--only", "vault", "-o", "json"])
        // Nothing was applied: the part `vault` is not done.
        .status(1)
        .stdout_has(r#""missing": 9"#)
        .json();
    assert_eq!(doc["argocd"], Value::Null);
    // --skip-kube leaves the cluster alone, Argo CD included.
    let specs = specs_with(ARGOCD);
    let doc = verify(&bao, &specs, &kube, &["--skip-kube", "-o", "json"])
        .status(1)
        .json();
    assert_eq!(doc["argocd"], Value::Null);
    assert!(kube.requests().is_empty(), "{:?}", kube.requests());
    // RBAC that denies reading argocd-cm: the part cannot be checked, and says what to ask.
    argocd_layout(&kube);
    kube.deny("configmaps");
    let only = ["--only", "argocd", "-o", "json"];
    let doc = verify(&bao, &specs, &kube, &only).status(1).output().json();
    assert_eq!(doc["argocd"]["ok"], false, "{doc}");
    has(doc["argocd"]["error"].as_str().unwrap(), "argocd/argocd-cm");
    assert_eq!(
        doc["argocd"]["help"],
        "check with `kubectl auth can-i get configmaps -n argocd`"
    );
    // An unreachable cluster is the part's failure, with what to do.
    let kubeconfig = bao.home.path().join("kubeconfig");
    std::fs::copy(kube.kubeconfig(), &kubeconfig).unwrap();
    drop(kube);
    let doc = verify_at(&bao, &specs, &kubeconfig, &only)
        .status(1)
        .output()
        .json();
    assert_eq!(doc["argocd"]["ok"], false);
    has(doc["argocd"]["help"].as_str().unwrap(), "--skip-kube");
}

/// Two specs whose secrets one secrets app makes: the app is checked once, for the
/// ExternalSecrets of both; a consumer of both is listed once.
#[test]
fn specs_sharing_a_secrets_app_are_checked_together() {
    let (bao, kube) = fixed();
    let specs = specs_with(ARGOCD);
    std::fs::write(
        specs.path().join("hatchet.toml"),
        "[vault]\nmount = \"secret\"\npath = \"ask/hatchet/{env}\"\n\
         [environments.auh1-dev]\nkube_namespace = \"ask\"\n\
         [eso]\nexternal_secrets = [\"hatchet-secret\"]\n\
         [argocd]\nsecrets_app = \"core-service-secrets\"\nconsumers = [\"hatchet\", \"core-service\"]\n\
         [secrets.TOKEN]\ndescription = \"d\"\nfields.value = { generator = \"hex32\" }\n",
    )
    .unwrap();
    let doc = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output()
        .json();
    let names: Vec<&str> = doc["argocd"]["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["core-service-secrets", "core-service", "hatchet"]);
    let m = messages(app(&doc, "core-service-secrets"));
    assert!(
        m.contains("does not manage ExternalSecret `ask/hatchet-secret`: Argo CD never applies it"),
        "{m}"
    );
    assert!(!m.contains("zitadel-secret"), "{m}");
    assert_eq!(app(&doc, "core-service")["ok"], true);
    assert_eq!(
        app(&doc, "core-service")["after"],
        json!(["core-service-secrets"])
    );
    assert_eq!(app(&doc, "hatchet")["exists"], false);
    assert_eq!(doc["argocd"]["argocd_cm"].as_array().unwrap().len(), 1);
}

/// `vault-seed lint` of the specs in `dir`, expected to exit with `code`.
fn lint(dir: &std::path::Path, code: i32) -> Out {
    Run::offline().specs(dir).arg("lint").status(code).output()
}

/// `[argocd]` is validated like the rest of a spec: every problem at its `file:line:col`.
#[test]
fn lint_checks_the_argocd_section() {
    let dir = tempfile::tempdir().unwrap();
    let real = common::repo_spec_without_argocd();
    let real = real.replace(
        "[environments.auh1-dev]",
        "[environments.Prod_1]\n[environments.auh1-dev]",
    );
    let broken = format!(
        "{real}\n[argocd]\nnamespace = \"Argo CD\"\nsecrets_app = \"{{env}}-secrets\"\nconsumers = [\"core-service\", \"core-service\", \"{{env}}-secrets\"]\nwave = 1\n"
    );
    std::fs::write(dir.path().join("app.toml"), &broken).unwrap();
    let line_of = |needle: &str| {
        broken
            .lines()
            .position(|l| l.contains(needle))
            .map(|i| i + 1)
            .unwrap()
    };
    let out = lint(dir.path(), 2);
    let err = out.stderr_text();
    has_all(
        &err,
        &[
            "is not a valid Kubernetes namespace name",
            &format!("app.toml:{}:14", line_of("namespace = \"Argo CD\"")),
            "`secrets_app` in environment `Prod_1` `Prod_1-secrets` is not a valid Kubernetes name",
            &format!("app.toml:{}:16", line_of("secrets_app =")),
            "consumer `core-service` is listed twice",
            "unknown key `wave`",
        ],
    );
    // Without `secrets_app`.
    std::fs::write(
        dir.path().join("app.toml"),
        format!(
            "{}\n[argocd]\nconsumers = [\"core-service\"]\n",
            real.replace("[environments.Prod_1]\n", "")
        ),
    )
    .unwrap();
    let out = lint(dir.path(), 2);
    has(
        &out.stderr_text(),
        "missing key `secrets_app` in `[argocd]`",
    );
    // A good one passes.
    std::fs::write(
        dir.path().join("app.toml"),
        format!("{}\n{ARGOCD}", real.replace("[environments.Prod_1]\n", "")),
    )
    .unwrap();
    lint(dir.path(), 0);
}

/// A cluster without Argo CD (no `argoproj.io`): said so, and not done.
#[test]
fn a_cluster_without_argo_cd_says_it_is_not_installed() {
    let (bao, kube) = fixed();
    kube.without_argocd();
    let specs = specs_with(ARGOCD);
    let doc = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output()
        .json();
    assert_eq!(
        (&doc["ok"], &doc["argocd"]["ok"]),
        (&json!(false), &json!(false))
    );
    has(
        &messages(app(&doc, "core-service-secrets")),
        "the cluster serves no Argo CD Application (`argoproj.io/v1alpha1`): Argo CD is not installed in this cluster",
    );
}

/// Argo CD 3.x's default keeps resource health out of the Application: a Degraded secrets app
/// lists no unhealthy resource, and is still not done; a note says where to look.
#[test]
fn a_degraded_secrets_app_without_persisted_resource_health_is_not_done() {
    let (bao, kube) = fixed();
    kube.put(fake_kube::argocd_fixture(
        "application-secrets-synced-v3-default.yaml",
    ));
    edit_app(&kube, "core-service-secrets", |a| {
        a["status"]["health"]["status"] = json!("Degraded");
    });
    let specs = specs_with(ARGOCD);
    let doc = verify(&bao, &specs, &kube, &["--only", "argocd", "-o", "json"])
        .status(1)
        .output()
        .json();
    let secrets = app(&doc, "core-service-secrets");
    assert_eq!(
        (&secrets["ok"], &secrets["health"], &secrets["unhealthy"]),
        (&json!(false), &json!("Degraded"), &json!([]))
    );
    has(
        &messages(secrets),
        "the secrets app `core-service-secrets` is Degraded",
    );
    has(
        &secrets["notes"].to_string(),
        "Argo CD keeps its resources' health out of the Application (`status.resourceHealthSource: appTree`, the default since 3.0): `argocd app get core-service-secrets` shows which resource is not Healthy",
    );
    has(
        &verify(&bao, &specs, &kube, &["--only", "argocd"])
            .status(1)
            .output()
            .stdout_text(),
        "verify auh1-dev: NOT done",
    );
}
