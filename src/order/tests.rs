//! Tests of the check on small hand-built layouts, one rule at a time, and a property test that
//! the input order never changes the findings.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::model::applications::Application;
use crate::model::argocd_cm::ArgoCdCm;
use crate::model::manifests::{Doc, Origin};
use crate::model::object::Object;
use crate::model::{argo, producers};

fn origin(line: usize) -> Origin {
    Origin {
        file: "t.yaml".into(),
        line,
    }
}

fn obj(v: Value) -> Object {
    Object::from_doc(&Doc {
        value: v,
        origin: origin(1),
    })
    .unwrap()
}

fn meta(name: &str, ann: &[(&str, &str)]) -> Value {
    let ann: serde_json::Map<String, Value> = ann
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    json!({"name": name, "namespace": "ask", "annotations": ann})
}

fn secret(name: &str, ann: &[(&str, &str)], keys: &[&str]) -> Object {
    let data: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| (k.to_string(), json!("dmFsdWU=")))
        .collect();
    obj(json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta(name, ann), "data": data}))
}

fn configmap(name: &str, ann: &[(&str, &str)]) -> Object {
    obj(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name, ann), "data": {"k": "v"}}),
    )
}

fn external_secret(name: &str, ann: &[(&str, &str)], spec: Value) -> Object {
    obj(
        json!({"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": meta(name, ann), "spec": spec}),
    )
}

fn workload(kind: &str, name: &str, ann: &[(&str, &str)], pod: Value) -> Object {
    let api = if kind == "Job" { "batch/v1" } else { "apps/v1" };
    obj(
        json!({"apiVersion": api, "kind": kind, "metadata": meta(name, ann), "spec": {"template": {"spec": pod}}}),
    )
}

fn env_from(secret: &str) -> Value {
    json!({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": secret}}]}]})
}

fn key_ref(secret: &str, key: &str, optional: bool) -> Value {
    json!({"containers": [{"name": "c", "env": [{"name": "V", "valueFrom": {"secretKeyRef": {"name": secret, "key": key, "optional": optional}}}]}]})
}

fn cm_volume(cm: &str) -> Value {
    json!({"containers": [{"name": "c"}], "volumes": [{"name": "v", "configMap": {"name": cm}}]})
}

fn app(name: &str, objects: Vec<Object>) -> App {
    App {
        name: name.into(),
        objects,
    }
}

fn one_app(objects: Vec<Object>) -> Report {
    check(&Input {
        apps: vec![app("core-service", objects)],
        ..Input::default()
    })
}

fn rules(r: &Report) -> Vec<(Severity, Rule)> {
    r.findings.iter().map(|f| (f.severity, f.rule)).collect()
}

fn only(r: &Report, rule: Rule) -> &Finding {
    let found: Vec<&Finding> = r.findings.iter().filter(|f| f.rule == rule).collect();
    assert_eq!(found.len(), 1, "{rule:?} in {:#?}", r.findings);
    found[0]
}

const PRESYNC: (&str, &str) = ("argocd.argoproj.io/hook", "PreSync");
const SYNC_HOOK: (&str, &str) = ("argocd.argoproj.io/hook", "Sync");

fn wave(w: &'static str) -> (&'static str, &'static str) {
    ("argocd.argoproj.io/sync-wave", w)
}

#[test]
fn a_secret_in_the_same_wave_is_applied_before_the_workload() {
    let r = one_app(vec![
        workload("Deployment", "api", &[], env_from("s")),
        secret("s", &[], &["a"]),
    ]);
    assert!(r.ok && r.findings.is_empty(), "{:#?}", r.findings);
}

#[test]
fn presync_hook_reading_a_sync_phase_configmap_is_the_runbooks_bug_2() {
    let r = one_app(vec![
        workload("Job", "migrate", &[PRESYNC], cm_volume("config-toml")),
        configmap("config-toml", &[]),
    ]);
    assert!(!r.ok);
    let f = only(&r, Rule::PhaseOrder);
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(
        f.message,
        "Job migrate (core-service, PreSync, wave 0) reads ConfigMap config-toml, created in the \
         Sync phase of the same app (wave 0): PreSync runs before the whole Sync phase"
    );
    assert_eq!(
        f.help.as_deref(),
        Some(
            "make the Job a Sync hook at a wave after the ConfigMap (wave 1 or later), or move \
             the ConfigMap to an app with a lower app wave"
        )
    );
    let c = f.consumer.as_ref().unwrap();
    assert_eq!(
        (c.phase, c.wave, c.hook),
        (Some(argo::Phase::PreSync), Some(0), true)
    );
    assert_eq!(f.producer.as_ref().unwrap().phase, Some(argo::Phase::Sync));
}

#[test]
fn the_fix_a_sync_hook_at_wave_4_after_config_at_0() {
    let r = one_app(vec![
        workload(
            "Job",
            "migrate",
            &[SYNC_HOOK, wave("4")],
            cm_volume("config-toml"),
        ),
        configmap("config-toml", &[]),
    ]);
    assert!(r.ok && r.findings.is_empty(), "{:#?}", r.findings);
}

#[test]
fn helm_pre_install_hooks_cannot_see_the_sync_phase() {
    let hook = [
        ("helm.sh/hook", "pre-install,pre-upgrade"),
        ("helm.sh/hook-weight", "2"),
    ];
    let r = one_app(vec![
        workload(
            "Job",
            "zitadel-setup",
            &hook,
            key_ref("zitadel-secret", "masterkey", false),
        ),
        external_secret(
            "zitadel-secret",
            &[],
            json!({"data": [{"secretKey": "masterkey", "remoteRef": {"key": "k"}}]}),
        ),
    ]);
    let f = only(&r, Rule::PhaseOrder);
    assert!(
        f.message.contains("(core-service, PreSync, wave 2)"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("Argo CD maps its `helm.sh/hook: pre-install,pre-upgrade` to PreSync"),
        "{}",
        f.message
    );
    assert!(f
        .help
        .as_deref()
        .unwrap()
        .starts_with("move the ExternalSecret to an app with a lower app wave"));
}

#[test]
fn a_later_wave_of_the_same_phase_is_an_error_and_optional_makes_it_a_warning() {
    let r = one_app(vec![
        workload("Deployment", "api", &[], key_ref("s", "a", false)),
        secret("s", &[wave("1")], &["a"]),
    ]);
    let f = only(&r, Rule::WaveOrder);
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("wave 0 runs first"), "{}", f.message);
    assert!(f
        .message
        .contains("waits for the Deployment to be Healthy before wave 1"));
    let r = one_app(vec![
        workload("Deployment", "api", &[], key_ref("s", "a", true)),
        secret("s", &[wave("1")], &["a"]),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Warning, Rule::WaveOrder)]);
    assert!(r.ok);
}

#[test]
fn an_operator_made_secret_in_the_same_wave_races_a_deployment_and_fails_a_hook_job() {
    let es = || external_secret("s", &[], json!({}));
    let r = one_app(vec![
        workload("Deployment", "api", &[], env_from("s")),
        es(),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Warning, Rule::SameWave)]);
    assert!(r.findings[0]
        .message
        .contains("its pods restart until it exists"));
    let r = one_app(vec![
        workload("Job", "migrate", &[SYNC_HOOK], env_from("s")),
        es(),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Error, Rule::SameWave)]);
}

#[test]
fn an_external_secret_at_an_earlier_wave_is_waited_for() {
    let r = one_app(vec![
        workload("Deployment", "api", &[wave("5")], env_from("s")),
        external_secret("s", &[], json!({})),
    ]);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
}

fn vso(create: bool) -> Object {
    obj(
        json!({"apiVersion": "secrets.hashicorp.com/v1beta1", "kind": "VaultStaticSecret",
        "metadata": meta("vss", &[wave("-1")]),
        "spec": {"destination": {"name": "s", "create": create}}}),
    )
}

fn cm_with(pairs: &[(&str, &str)]) -> ArgoCdCm {
    let data = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ArgoCdCm::from_data("argocd-cm", origin(1), &data)
}

#[test]
fn vso_has_no_health_check_so_no_wave_waits_for_it_unless_argocd_cm_adds_one() {
    let objects = vec![workload("Deployment", "api", &[], env_from("s")), vso(true)];
    let r = one_app(objects.clone());
    assert_eq!(rules(&r), vec![(Severity::Warning, Rule::NotWaited)]);
    assert!(r.findings[0]
        .help
        .as_deref()
        .unwrap()
        .contains("resource.customizations.health.secrets.hashicorp.com_VaultStaticSecret"));
    let r = check(&Input {
        apps: vec![app("core-service", objects)],
        argocd_cm: Some(cm_with(&[(
            "resource.customizations.health.secrets.hashicorp.com_VaultStaticSecret",
            "hs = {}",
        )])),
        ..Input::default()
    });
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
}

#[test]
fn producers_that_make_nothing_are_named_in_the_no_producer_finding() {
    for (producer, hint) in [
        (vso(false), "`destination.create` is false"),
        (
            external_secret("s", &[], json!({"target": {"creationPolicy": "None"}})),
            "`creationPolicy: None` creates no Secret",
        ),
        (
            external_secret("s", &[], json!({"target": {"creationPolicy": "Merge"}})),
            "`creationPolicy: Merge` only merges",
        ),
        (
            secret("s", &[("argocd.argoproj.io/hook", "Skip")], &[]),
            "`argocd.argoproj.io/hook: Skip`",
        ),
        (
            secret("s", &[("helm.sh/hook", "test")], &[]),
            "`helm.sh/hook: test` hook",
        ),
        (
            secret("s", &[("argocd.argoproj.io/hook", "PreDelete")], &[]),
            "PreDelete and PostDelete hooks run only when the Application is deleted",
        ),
    ] {
        let r = one_app(vec![
            workload("Deployment", "api", &[], env_from("s")),
            producer,
        ]);
        let f = only(&r, Rule::NoProducer);
        assert_eq!(f.severity, Severity::Error);
        assert!(
            f.message.starts_with("no app renders Secret s ("),
            "{}",
            f.message
        );
        assert!(f.message.contains(hint), "{hint}: {}", f.message);
        assert!(f.help.as_deref().unwrap().contains("--exists Secret/ask/s"));
    }
}

#[test]
fn consumers_argo_never_applies_are_not_checked() {
    for ann in [
        ("argocd.argoproj.io/hook", "Skip"),
        ("helm.sh/hook", "test-success"),
    ] {
        let r = one_app(vec![workload("Job", "t", &[ann], env_from("missing"))]);
        assert!(r.findings.is_empty(), "{ann:?}: {:#?}", r.findings);
    }
}

#[test]
fn a_postsync_producer_comes_after_the_sync_phase() {
    let r = one_app(vec![
        workload("Deployment", "api", &[], env_from("s")),
        secret("s", &[("argocd.argoproj.io/hook", "PostSync")], &[]),
    ]);
    let f = only(&r, Rule::PhaseOrder);
    assert!(
        f.message
            .contains("Sync runs before the whole PostSync phase"),
        "{}",
        f.message
    );
    assert!(f
        .help
        .as_deref()
        .unwrap()
        .starts_with("make the Secret a normal resource"));
}

#[test]
fn hook_delete_policies() {
    let deleted = [
        PRESYNC,
        ("argocd.argoproj.io/hook-delete-policy", "HookSucceeded"),
    ];
    // A workload keeps reading it after the sync deleted it.
    let r = one_app(vec![
        workload("Deployment", "api", &[], env_from("s")),
        secret("s", &deleted, &[]),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Error, Rule::HookDeleted)]);
    // A hook later in the same sync still sees it.
    let r = one_app(vec![
        workload("Job", "j", &[PRESYNC, wave("1")], env_from("s")),
        secret("s", &deleted, &[]),
    ]);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    // An ExternalSecret hook's Secret goes with it under `creationPolicy: Owner` (the default),
    // not under `Orphan`.
    let es_hook = |policy: &str| {
        external_secret("s", &deleted, json!({"target": {"creationPolicy": policy}}))
    };
    let r = one_app(vec![
        workload("Deployment", "api", &[], env_from("s")),
        es_hook("Owner"),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Error, Rule::HookDeleted)]);
    let r = one_app(vec![
        workload("Deployment", "api", &[], env_from("s")),
        es_hook("Orphan"),
    ]);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    // The default policy deletes and re-creates it at every sync.
    let r = one_app(vec![
        workload("Deployment", "api", &[], env_from("s")),
        secret("s", &[PRESYNC], &[]),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Warning, Rule::HookRecreated)]);
}

#[test]
fn a_syncfail_hook_may_run_before_anything_was_applied() {
    let r = one_app(vec![
        workload(
            "Job",
            "cleanup",
            &[("argocd.argoproj.io/hook", "SyncFail")],
            env_from("s"),
        ),
        secret("s", &[wave("3")], &[]),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Warning, Rule::SyncFailConsumer)]);
    let r = one_app(vec![
        workload("Deployment", "api", &[], env_from("s")),
        secret("s", &[("argocd.argoproj.io/hook", "SyncFail")], &[]),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Error, Rule::PhaseOrder)]);
}

#[test]
fn keys_the_producer_does_not_make() {
    let r = one_app(vec![
        workload("Deployment", "api", &[], key_ref("s", "b", false)),
        secret("s", &[], &["a"]),
    ]);
    let f = only(&r, Rule::MissingKey);
    assert_eq!((f.severity, f.key.as_deref()), (Severity::Error, Some("b")));
    assert!(
        f.message
            .contains("which the Secret manifest does not make (it makes `a`)"),
        "{}",
        f.message
    );
    let r = one_app(vec![
        workload("Deployment", "api", &[], key_ref("s", "b", true)),
        secret("s", &[], &["a"]),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Warning, Rule::MissingKey)]);
    // An ExternalSecret's keys are its `data[].secretKey`.
    let r = one_app(vec![
        workload(
            "Deployment",
            "api",
            &[wave("1")],
            key_ref("s", "masterkey", false),
        ),
        external_secret(
            "s",
            &[],
            json!({"data": [{"secretKey": "master-key", "remoteRef": {"key": "k"}}]}),
        ),
    ]);
    let f = only(&r, Rule::MissingKey);
    assert!(f
        .help
        .as_deref()
        .unwrap()
        .contains("`secretKey: masterkey`"));
    // `dataFrom`: unknowable, said in a note that never fails the run.
    let r = one_app(vec![
        workload("Deployment", "api", &[wave("1")], key_ref("s", "x", false)),
        external_secret("s", &[], json!({"dataFrom": [{"extract": {"key": "k"}}]})),
    ]);
    assert_eq!(rules(&r), vec![(Severity::Note, Rule::KeysUnknown)]);
    assert!(r.ok && r.findings[0].message.contains("`spec.dataFrom`"));
}

#[test]
fn exists_counts_as_made_before_the_sync_with_unknown_keys() {
    let r = check(&Input {
        apps: vec![app(
            "core-service",
            vec![workload(
                "Job",
                "db-init",
                &[PRESYNC],
                key_ref("core-pg-superuser", "password", false),
            )],
        )],
        exists: vec![parse_exists("Secret/ask/core-pg-superuser").unwrap()],
        ..Input::default()
    });
    assert_eq!(rules(&r), vec![(Severity::Note, Rule::KeysUnknown)]);
    assert!(r.findings[0].message.contains("`--exists`"));
}

#[test]
fn exists_is_parsed_strictly() {
    let e = parse_exists("configmap/ns/name").unwrap();
    assert_eq!(
        (e.data, e.namespace.as_str()),
        (producers::DataKind::ConfigMap, "ns")
    );
    for bad in [
        "Secret/ns",
        "Secret/ns/a/b",
        "Pod/ns/x",
        "Secret//x",
        "Secret/ns/",
    ] {
        assert!(parse_exists(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_secret_in_another_namespace_does_not_count() {
    let s = obj(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s", "namespace": "other"}}));
    let r = one_app(vec![workload("Deployment", "api", &[], env_from("s")), s]);
    let f = only(&r, Rule::NoProducer);
    assert!(
        f.message.contains("makes it in namespace other, not ask"),
        "{}",
        f.message
    );
}

#[test]
fn image_pull_secrets_projected_volumes_init_containers_and_cronjobs_are_consumers() {
    let pod = json!({
        "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "c1"}}]}],
        "containers": [{"name": "c"}],
        "volumes": [{"name": "p", "projected": {"sources": [{"secret": {"name": "s1"}}]}}],
        "imagePullSecrets": [{"name": "regcred"}]
    });
    let cron = obj(
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("nightly", &[]),
        "spec": {"jobTemplate": {"spec": {"template": {"spec": pod}}}}}),
    );
    let r = one_app(vec![cron]);
    let missing: Vec<String> = r
        .findings
        .iter()
        .filter(|f| f.rule == Rule::NoProducer)
        .map(|f| f.object.as_ref().unwrap().name.clone())
        .collect();
    // Sorted by kind (Secret before ConfigMap), then name.
    assert_eq!(missing, vec!["regcred", "s1", "c1"]);
}

fn rollout(name: &str, ann: &[(&str, &str)], spec: Value) -> Object {
    obj(
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": meta(name, ann), "spec": spec}),
    )
}

#[test]
fn a_rollouts_template_and_its_workload_refs_template_are_consumers() {
    let wave = |w: &str| ("argocd.argoproj.io/sync-wave", w.to_string());
    // Its own template: a missing Secret fails the run, as a Deployment's would.
    let own = rollout(
        "api",
        &[],
        json!({"template": {"spec": env_from("missing")}}),
    );
    let r = one_app(vec![own]);
    assert_eq!(rules(&r), vec![(Severity::Error, Rule::NoProducer)]);
    assert!(!r.ok);
    // A workloadRef: the Deployment's template (scaled to 0) read at the Rollout's wave, 1, while
    // the Secret comes at wave 2.
    let (w1, w2) = (wave("1"), wave("2"));
    let objects = vec![
        workload("Deployment", "api-template", &[], env_from("db")),
        rollout(
            "api",
            &[(w1.0, &w1.1)],
            json!({"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api-template"}}),
        ),
        secret("db", &[(w2.0, &w2.1)], &["pw"]),
    ];
    let r = one_app(objects);
    let c: Vec<(&str, Rule)> = r
        .findings
        .iter()
        .map(|f| (f.consumer.as_ref().unwrap().kind.as_str(), f.rule))
        .collect();
    assert!(c.contains(&("Rollout", Rule::WaveOrder)), "{c:?}");
    // A workloadRef to nothing rendered: not checked, an error.
    let lone = rollout(
        "api",
        &[],
        json!({"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gone"}}),
    );
    let r = one_app(vec![lone]);
    assert_eq!(rules(&r), vec![(Severity::Error, Rule::WorkloadRefUnknown)]);
    assert!(
        r.findings[0].message.contains("Deployment gone"),
        "{}",
        r.findings[0].message
    );
    // ... and one in another namespace is not it.
    let mut other = workload("Deployment", "gone", &[], env_from("db"));
    other.namespace = Some("elsewhere".into());
    let lone = rollout(
        "api",
        &[],
        json!({"workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gone"}}),
    );
    let r = one_app(vec![lone, other]);
    assert!(rules(&r).contains(&(Severity::Error, Rule::WorkloadRefUnknown)));
}

#[test]
fn kinds_with_a_pod_template_vault_seed_does_not_read_are_not_checked_and_fail() {
    for v in [
        json!({"apiVersion": "example.com/v1", "kind": "MyWorker", "metadata": meta("w", &[]),
            "spec": {"template": {"spec": {"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "s"}}]}]}}}}),
        json!({"apiVersion": "example.com/v1", "kind": "MyCron", "metadata": meta("w", &[]),
            "spec": {"jobTemplate": {"spec": {}}}}),
        json!({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "metadata": meta("w", &[]),
            "spec": {"jobTargetRef": {"template": {"spec": {"containers": []}}}}}),
        // An Argo Rollout of another group is not Argo's.
        json!({"apiVersion": "example.com/v1", "kind": "Rollout", "metadata": meta("w", &[]),
            "spec": {"template": {"spec": {"containers": []}}}}),
    ] {
        let kind = v["kind"].as_str().unwrap().to_string();
        let r = one_app(vec![obj(v)]);
        assert_eq!(
            rules(&r),
            vec![(Severity::Error, Rule::PodTemplateUnknown)],
            "{kind}"
        );
        assert!(!r.ok);
        assert!(
            r.findings[0].message.starts_with(&format!(
                "kind {kind} has a pod template vault-seed does not understand"
            )),
            "{}",
            r.findings[0].message
        );
    }
    // Kinds without containers say nothing; a Skip hook is never applied, so never runs.
    let plain = obj(
        json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": meta("t", &[]),
        "spec": {"template": {"name": "x"}, "replicas": 2}}),
    );
    let skipped = obj(json!({"apiVersion": "example.com/v1", "kind": "MyWorker",
        "metadata": meta("w", &[("argocd.argoproj.io/hook", "Skip")]),
        "spec": {"template": {"spec": {"containers": []}}}}));
    let r = one_app(vec![plain, skipped]);
    assert!(r.findings.is_empty() && r.ok, "{:?}", r.findings);
}

fn applications(waves: &[(&str, i64)]) -> Applications {
    Applications {
        source: "apps.yaml".into(),
        items: waves
            .iter()
            .map(|(name, wave)| {
                let doc = Doc {
                    value: json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                        "metadata": {"name": name, "annotations": {"argocd.argoproj.io/sync-wave": wave.to_string()}},
                        "spec": {"destination": {"namespace": "ask"}}}),
                    origin: origin(1),
                };
                Application::from_doc(&doc).unwrap()
            })
            .collect(),
    }
}

fn two_apps(waves: Option<&[(&str, i64)]>, cm: Option<ArgoCdCm>) -> Report {
    check(&Input {
        apps: vec![
            app(
                "core-service",
                vec![workload(
                    "Job",
                    "zitadel-setup",
                    &[PRESYNC],
                    env_from("zitadel-secret"),
                )],
            ),
            app(
                "core-service-secrets",
                vec![external_secret("zitadel-secret", &[], json!({}))],
            ),
        ],
        applications: waves.map(applications),
        argocd_cm: cm,
        ..Input::default()
    })
}

const HEALTH: (&str, &str) = (
    "resource.customizations.health.argoproj.io_Application",
    "hs = {}",
);

#[test]
fn app_waves_guarantee_the_order_only_with_the_application_health_check() {
    let fixed: &[(&str, i64)] = &[("core-service-secrets", 0), ("core-service", 1)];
    let r = two_apps(Some(fixed), Some(cm_with(&[HEALTH])));
    assert!(r.ok && r.findings.is_empty(), "{:#?}", r.findings);
    assert!(r.argocd_cm.as_ref().unwrap().application_health);

    let r = two_apps(Some(fixed), Some(cm_with(&[])));
    let f = only(&r, Rule::AppWavesNotWaited);
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.app, None);
    assert_eq!(
        f.message,
        "app waves do not wait for Healthy: argocd-cm has no health check for argoproj.io/Application"
    );
    assert_eq!(
        f.details,
        vec![
            "Job zitadel-setup (core-service, app wave 1, PreSync, wave 0) reads Secret \
              zitadel-secret, made by ExternalSecret zitadel-secret in app core-service-secrets \
              (app wave 0)"
        ]
    );

    let r = two_apps(Some(fixed), None);
    assert_eq!(rules(&r), vec![(Severity::Warning, Rule::AppHealthUnknown)]);
    assert!(r.ok);
}

#[test]
fn app_waves_that_do_not_order_the_apps() {
    let cm = || Some(cm_with(&[HEALTH]));
    let r = two_apps(
        Some(&[("core-service-secrets", 1), ("core-service", 1)]),
        cm(),
    );
    let f = only(&r, Rule::AppWaveOrder);
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("same app wave (1)"), "{}", f.message);
    let r = two_apps(
        Some(&[("core-service-secrets", 2), ("core-service", 1)]),
        cm(),
    );
    assert!(only(&r, Rule::AppWaveOrder)
        .message
        .contains("which syncs after app core-service"));
    let r = two_apps(None, cm());
    let f = only(&r, Rule::AppWaveOrder);
    assert!(f
        .message
        .contains("no app wave is known for core-service and core-service-secrets"));
    // An app missing from --applications is named.
    let r = two_apps(Some(&[("core-service", 1)]), cm());
    assert_eq!(
        only(&r, Rule::AppUnknown).app.as_deref(),
        Some("core-service-secrets")
    );
}

#[test]
fn the_ref_only_source_is_named_where_the_secret_is_missing() {
    let doc = Doc {
        value: json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "core-service", "annotations": {"argocd.argoproj.io/sync-wave": "1"}},
            "spec": {"destination": {"namespace": "ask"}, "sources": [
                {"repoURL": "https://charts.example/ask", "chart": "core-service"},
                {"repoURL": "https://git.example/gitops.git", "ref": "values"}]}}),
        origin: origin(1),
    };
    let r = check(&Input {
        apps: vec![app(
            "core-service",
            vec![workload(
                "Deployment",
                "core-service",
                &[],
                env_from("core-service-secret"),
            )],
        )],
        applications: Some(Applications {
            source: "apps.yaml".into(),
            items: vec![Application::from_doc(&doc).unwrap()],
        }),
        ..Input::default()
    });
    assert_eq!(
        only(&r, Rule::NoProducer).message,
        "no app renders Secret core-service-secret (Application core-service's source 2 is \
         `ref: values` with no path: it only provides value files)"
    );
    assert_eq!(only(&r, Rule::EmptySource).severity, Severity::Note);
}

#[test]
fn the_specs_external_secrets_targets_are_marked_as_the_bootstraps() {
    let r = check(&Input {
        apps: vec![app(
            "core-service",
            vec![
                workload("Deployment", "api", &[], env_from("core-service-secret")),
                workload("Deployment", "other", &[], env_from("unrelated")),
            ],
        )],
        specs: vec![SpecEso {
            spec: "core-service".into(),
            env: "auh1-dev".into(),
            namespace: Some("ask".into()),
            external_secrets: vec!["core-service-secret".into()],
        }],
        ..Input::default()
    });
    let marked: Vec<(&str, bool)> = r
        .findings
        .iter()
        .map(|f| {
            (
                f.object.as_ref().unwrap().name.as_str(),
                f.bootstrap.is_some(),
            )
        })
        .collect();
    assert_eq!(
        marked,
        vec![("core-service-secret", true), ("unrelated", false)]
    );
}

#[test]
fn hostile_names_are_escaped_in_messages() {
    let evil = "x\u{1b}]0;pwned\u{7}\ny";
    let r = one_app(vec![workload("Deployment", evil, &[], env_from(evil))]);
    for f in &r.findings {
        let text = format!("{} {:?} {:?}", f.message, f.details, f.help);
        assert!(!text.contains('\u{1b}') && !text.contains('\n'), "{text}");
    }
}

#[test]
fn secret_values_never_reach_the_report() {
    let s = obj(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("s", &[wave("1")]),
        "data": {"k": "c3VwZXJzZWNyZXQtZGF0YQ=="}, "stringData": {"k2": "supersecret-string"}}),
    );
    let d = workload(
        "Deployment",
        "api",
        &[],
        json!({"containers": [{"name": "c", "env": [
            {"name": "INLINE", "value": "supersecret-inline"},
            {"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "nope"}}}]}]}),
    );
    let r = one_app(vec![d, s]);
    assert!(!r.ok);
    let text = serde_json::to_string(&r).unwrap();
    for v in [
        "c3VwZXJzZWNyZXQtZGF0YQ==",
        "supersecret-string",
        "supersecret-inline",
    ] {
        assert!(!text.contains(v), "{v} leaked: {text}");
    }
}

/// A random object of a small world: a few names, kinds, apps, phases and waves, so that
/// producers, consumers, races and missing objects all occur.
fn arb_object() -> impl Strategy<Value = (usize, Value)> {
    let names = prop::sample::select(vec!["a", "b", "c"]);
    let hook = prop::sample::select(vec![
        None,
        Some("PreSync"),
        Some("Sync"),
        Some("PostSync"),
        Some("Skip"),
        Some("SyncFail"),
    ]);
    (0..3usize, 0..7u8, names, hook, -1..3i64, any::<bool>(), any::<bool>()).prop_map(
        |(app, kind, name, hook, w, optional, hook_succeeded)| {
            let mut ann = serde_json::Map::new();
            ann.insert("argocd.argoproj.io/sync-wave".into(), json!(w.to_string()));
            if let Some(h) = hook {
                ann.insert("argocd.argoproj.io/hook".into(), json!(h));
            }
            if hook_succeeded {
                ann.insert("argocd.argoproj.io/hook-delete-policy".into(), json!("HookSucceeded"));
            }
            let m = json!({"name": name, "annotations": ann});
            let pod = json!({"containers": [{"name": "c",
                "envFrom": [{"secretRef": {"name": name, "optional": optional}}],
                "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": name, "key": "k"}}}]}]});
            let v = match kind {
                0 => json!({"apiVersion": "v1", "kind": "Secret", "metadata": m, "data": {"k": "eA=="}}),
                1 => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"j": "x"}}),
                2 => json!({"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": m,
                    "spec": {"data": [{"secretKey": "k"}]}}),
                3 => json!({"apiVersion": "secrets.hashicorp.com/v1beta1", "kind": "VaultStaticSecret", "metadata": m,
                    "spec": {"destination": {"name": name, "create": optional}}}),
                4 => json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": m, "spec": {"template": {"spec": pod}}}),
                5 => json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m, "spec": {"template": {"spec": pod}}}),
                _ => json!({"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": pod}),
            };
            (app, v)
        },
    )
}

fn build(objects: &[(usize, usize, Value)], app_order: &[usize], exists: &[Exists]) -> Input {
    let names = ["core-service", "core-service-secrets", "ask-db"];
    let apps = app_order
        .iter()
        .map(|&a| App {
            name: names[a].to_string(),
            objects: objects
                .iter()
                .filter(|(app, _, _)| *app == a)
                .map(|(_, line, v)| {
                    Object::from_doc(&Doc {
                        value: v.clone(),
                        origin: origin(*line),
                    })
                    .unwrap()
                })
                .collect(),
        })
        .collect();
    Input {
        apps,
        applications: Some(applications(&[
            ("core-service", 1),
            ("core-service-secrets", 0),
        ])),
        argocd_cm: None,
        exists: exists.to_vec(),
        specs: vec![SpecEso {
            spec: "core-service".into(),
            env: "auh1-dev".into(),
            namespace: None,
            external_secrets: vec!["a".into()],
        }],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn shuffling_the_input_never_changes_the_findings(
        (objects, shuffled) in prop::collection::vec(arb_object(), 0..24).prop_flat_map(|objs| {
            // Each object keeps its own place in the files (its line) wherever it moves.
            let numbered: Vec<(usize, usize, Value)> =
                objs.into_iter().enumerate().map(|(i, (a, v))| (a, i + 1, v)).collect();
            (Just(numbered.clone()), Just(numbered).prop_shuffle())
        }),
        app_order in Just(vec![0usize, 1, 2]).prop_shuffle(),
        exists_first in any::<bool>(),
    ) {
        let mut exists = vec![
            parse_exists("Secret/ask/c").unwrap(),
            parse_exists("ConfigMap/ask/b").unwrap(),
        ];
        let a = check(&build(&objects, &[0, 1, 2], &exists));
        if exists_first {
            exists.reverse();
        }
        let b = check(&build(&shuffled, &app_order, &exists));
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
}

#[test]
fn across_apps_argo_waits_for_app_health_which_ignores_vso_and_hooks() {
    let run = |producer: Object| {
        check(&Input {
            apps: vec![
                app(
                    "core-service",
                    vec![workload("Deployment", "api", &[], env_from("s"))],
                ),
                app("core-service-secrets", vec![producer]),
            ],
            applications: Some(applications(&[
                ("core-service-secrets", 0),
                ("core-service", 1),
            ])),
            argocd_cm: Some(cm_with(&[HEALTH])),
            ..Input::default()
        })
    };
    let r = run(vso(true));
    let f = only(&r, Rule::NotWaited);
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message
            .contains("so app core-service-secrets can be Healthy before VSO writes the Secret"),
        "{}",
        f.message
    );
    let r = run(secret("s", &[("argocd.argoproj.io/hook", "PostSync")], &[]));
    assert!(only(&r, Rule::NotWaited)
        .message
        .contains("hooks do not count toward app health"));
    // A plain Secret of the earlier app is there once that app is Healthy.
    let r = run(secret("s", &[], &[]));
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
}
