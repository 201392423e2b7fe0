//! `verify --only consumers` and `--restart`: the workloads that read the spec's target Secrets,
//! served by the fake Kubernetes API server (workloads, pods, the Secret's `managedFields`) to the
//! real kube-rs client, with a real OpenBao for the session.

use crate::common;

use common::fake_kube::{
    deployment_unready_status, external_secret, namespace, pod_of, reloader_deployment, secret,
    vso_controller_deployment, with_data_manager, workload,
};
use common::{has, spec_dir, Run, World};
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

const NS: &str = "apps";

const SPEC: &str = r#"
name = "core-service"
[vault]
mount = "secret"
path = "core-service/{env}"
[environments.auh1-dev]
kube_namespace = "apps"
[eso]
external_secrets = ["db"]
[secrets.db]
description = "the database password"
fields.password = { generator = "password" }
"#;

/// The Secret's value, which must never show.
const VALUE: &str = "s3cr3t-consumer-value";

/// When the Secret's data changed, and instants around it, for the pods a test starts.
struct Times {
    /// When ESO wrote the Secret's data: two seconds after Vault's version was created.
    changed: String,
    /// A day before Vault had the value.
    before: String,
    /// A minute after ESO wrote it.
    after: String,
    /// The whole second Vault's version was created in.
    second: OffsetDateTime,
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap()
}

/// Vault holding `VALUE` at `core-service/auh1-dev/db`; the ExternalSecret `apps/db` and its
/// Secret `db` holding the same value, whose data ESO wrote two seconds later (whole seconds,
/// as the API server stamps `managedFields`). No run shows the value.
fn world() -> (World, Times) {
    let w = World::new(SPEC).never_shows([VALUE]);
    w.bao.kv_put(
        "secret",
        "core-service/auh1-dev/db",
        json!({ "password": VALUE }),
    );
    let created = w.bao.kv_created("secret", "core-service/auh1-dev/db");
    let second = created.replace_nanosecond(0).unwrap();
    let changed = rfc3339(second + Duration::seconds(2));
    w.kube.put(
        external_secret(
            NS,
            "db",
            &[("password", "core-service/auh1-dev/db", Some("password"))],
        )
        .ready_synced(&changed),
    );
    w.kube.put(with_data_manager(
        secret(NS, "db", &[("password", VALUE)]),
        "externalsecrets.external-secrets.io/db",
        &changed,
    ));
    let t = Times {
        changed,
        before: rfc3339(second - Duration::days(1)),
        after: rfc3339(second + Duration::seconds(62)),
        second,
    };
    (w, t)
}

impl World {
    /// A running pod `pod` of the workload `app` (already put in `NS`), started at `started`.
    fn start_pod(&self, app: &str, pod: &str, started: &str) {
        let w = ["Deployment", "StatefulSet", "DaemonSet", "Rollout"]
            .iter()
            .find_map(|k| self.kube.get(k, Some(NS), app))
            .expect("the workload is put first");
        self.kube.run(&w, pod, started);
    }

    /// `verify auh1-dev --only consumers ARGS`.
    fn verify_consumers(&self, args: &[&str]) -> Run {
        self.run(&["verify", "auh1-dev", "--only", "consumers"])
            .args(args)
    }
}

/// A pod spec reading Secret `db` through `how`: `env`, `envFrom`, `volume`, `subPath`.
fn reads(how: &str) -> Value {
    let container = match how {
        "env" => {
            json!({"name": "app", "env": [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]})
        }
        "envFrom" => json!({"name": "app", "envFrom": [{"secretRef": {"name": "db"}}]}),
        "volume" => {
            json!({"name": "app", "volumeMounts": [{"name": "creds", "mountPath": "/creds"}]})
        }
        "subPath" => {
            json!({"name": "app", "volumeMounts": [{"name": "creds", "mountPath": "/creds/password", "subPath": "password"}]})
        }
        other => panic!("{other}"),
    };
    json!({
        "containers": [container],
        "volumes": [{"name": "creds", "secret": {"secretName": "db"}}],
    })
}

fn only_workload(doc: &Value) -> &Value {
    let w = doc["consumers"]["workloads"].as_array().expect("workloads");
    assert_eq!(w.len(), 1, "{doc:#}");
    &w[0]
}

#[test]
fn an_env_reader_with_pods_older_than_the_data_is_not_done_and_names_the_restart() {
    let (w, t) = world();
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    w.start_pod("web", "web-1", &t.before);
    w.start_pod("web", "web-2", &t.after);
    // Another app's pod, not selected by `app=web`, never counts.
    w.kube.put(pod_of(NS, "other", "other-1", &t.before));
    let out = w.verify_consumers(&[]).status(1).output();
    let text = out.stdout_text();
    has(&text, "FAIL Deployment apps/web");
    has(&text, format!("reads `db` through env, but 1 pod(s) started before its data changed at {} by `externalsecrets.external-secrets.io/db` (`web-1`)", t.changed));
    has(&text, "fix: kubectl -n apps rollout restart deployment/web");
    has(&text, "verify auh1-dev: NOT done");
    assert!(w.kube.patches().is_empty(), "verify wrote to the cluster");

    let doc = w
        .verify_consumers(&["-o", "json"])
        .status(1)
        .output()
        .json();
    let c = only_workload(&doc);
    assert_eq!(c["ok"], false);
    assert_eq!(c["how"], json!(["env"]));
    assert_eq!(c["fix"], "kubectl -n apps rollout restart deployment/web");
    assert_eq!(doc["consumers"]["secrets"][0]["changed_at"], t.changed);
    assert_eq!(
        doc["consumers"]["secrets"][0]["changed_by"],
        "externalsecrets.external-secrets.io/db"
    );
    // Each run listed the namespace's Secrets once, in full: their values digested as parsed
    // (to compare them with Vault's) and their metadata (when the data changed), shared by the
    // parts `kube` and `consumers`; the Secret was never read alone.
    let count = |path: &str| w.kube.requests().iter().filter(|r| r.path == path).count();
    assert_eq!(count("/api/v1/namespaces/apps/secrets"), 2);
    assert_eq!(count("/api/v1/namespaces/apps/secrets/db"), 0);
    assert_eq!(w.kube.metadata_reads().len(), 0);
    let created = rfc3339(w.bao.kv_created("secret", "core-service/auh1-dev/db"));
    assert_eq!(
        doc["consumers"]["secrets"][0]["vault_version_created"],
        created
    );
}

#[test]
fn readers_whose_pods_started_after_the_change_and_volume_readers_pass() {
    let (w, t) = world();
    w.kube
        .put(workload("StatefulSet", NS, "db-client", reads("envFrom")));
    w.start_pod("db-client", "db-client-0", &t.after);
    w.kube
        .put(workload("DaemonSet", NS, "agent", reads("volume")));
    w.start_pod("agent", "agent-x", &t.before);
    w.kube.put(workload("CronJob", NS, "report", reads("env")));
    let out = w.verify_consumers(&["--all"]).output();
    let text = out.stdout_text();
    has(&text, "ok   StatefulSet apps/db-client");
    has(&text, "its 1 pod(s) started after the data last changed");
    has(&text, "ok   DaemonSet apps/agent");
    has(
        &text,
        "reads `db` through a volume: the kubelet refreshes its files, no restart needed",
    );
    has(&text, "ok   CronJob apps/report");
    has(&text, "a CronJob's next run reads it as it is then");
    has(&text, "verify auh1-dev: done");
    // Without `--all`, the part's line counts them and lists none: nothing fails or warns.
    let summary = w.verify_consumers(&[]).output().stdout_text();
    has(&summary, "ok   consumers: ");
    has(
        &summary,
        ": 3 workload(s) read 1 target Secret(s), 3 more with notes (--all shows them)",
    );
    assert!(!summary.contains("apps/"), "{summary}");
}

#[test]
fn a_subpath_volume_is_read_once_like_env() {
    let (w, t) = world();
    w.kube
        .put(workload("Deployment", NS, "web", reads("subPath")));
    w.start_pod("web", "web-1", &t.before);
    let out = w.verify_consumers(&[]).status(1).output();
    has(
        &out.stdout_text(),
        "reads `db` through a subPath volume, but 1 pod(s)",
    );
}

#[test]
fn reloader_and_vso_restart_targets_pass_with_a_note() {
    let (w, t) = world();
    // Reloader as its chart installs it by default: watching every namespace.
    w.kube.put(reloader_deployment("reloader", &[], true));
    let mut auto = workload("Deployment", NS, "auto", reads("env"));
    auto["metadata"]["annotations"]["reloader.stakater.com/auto"] = json!("true");
    w.kube.put(auto);
    w.start_pod("auto", "auto-1", &t.before);
    let mut named = workload("Deployment", NS, "named", reads("env"));
    named["metadata"]["annotations"]["secret.reloader.stakater.com/reload"] = json!("other, db");
    w.kube.put(named);
    w.start_pod("named", "named-1", &t.before);
    // `search` counts only with the Secret's `match`.
    let mut search = workload("Deployment", NS, "search", reads("env"));
    search["metadata"]["annotations"]["reloader.stakater.com/search"] = json!("true");
    w.kube.put(search);
    w.start_pod("search", "search-1", &t.before);
    let out = w.verify_consumers(&["--all"]).status(1).output();
    let text = out.stdout_text();
    has(&text, "ok   Deployment apps/auto");
    has(
        &text,
        "Reloader (annotation `reloader.stakater.com/auto: \"true\"`) restarts it, with Reloader's Deployment `reloader/reloader-reloader` Ready and watching namespace `apps`",
    );
    has(&text, "ok   Deployment apps/named");
    has(
        &text,
        "Reloader (annotation `secret.reloader.stakater.com/reload`",
    );
    has(&text, "FAIL Deployment apps/search");

    w.kube.update("Secret", Some(NS), "db", |s| {
        s["metadata"]["annotations"] = json!({"reloader.stakater.com/match": "true"});
    });
    let out = w.verify_consumers(&["--all"]).output();
    has(&out.stdout_text(), "ok   Deployment apps/search");
    has(&out.stdout_text(), "reloader.stakater.com/search");

    // The Secret's `ignore` turns Reloader off for it.
    w.kube.update("Secret", Some(NS), "db", |s| {
        s["metadata"]["annotations"] = json!({"reloader.stakater.com/ignore": "true"});
    });
    let out = w.verify_consumers(&[]).status(1).output();
    has(&out.stdout_text(), "FAIL Deployment apps/auto");
}

/// The world with the specs naming a VaultStaticSecret `db` instead, whose
/// `rolloutRestartTargets` name `kind`/`name` (VSO v1.4.1 `api/v1beta1/vaultstaticsecret_types.go`).
fn vso_world(kind: &str, name: &str) -> (World, Times) {
    let (mut w, t) = world();
    w.specs = spec_dir(&SPEC.replace("[eso]\nexternal_secrets", "[vso]\nstatic_secrets"));
    w.kube.put(json!({
        "apiVersion": "secrets.hashicorp.com/v1beta1", "kind": "VaultStaticSecret",
        "metadata": {"name": "db", "namespace": NS, "generation": 1},
        "spec": {"mount": "secret", "path": "core-service/auh1-dev/db", "type": "kv-v2",
                 "destination": {"name": "db", "create": true},
                 "rolloutRestartTargets": [{"kind": kind, "name": name}]},
    }));
    (w, t)
}

#[test]
fn a_vso_rollout_restart_target_passes_with_a_note() {
    let (w, t) = vso_world("argo.Rollout", "web");
    w.kube.put(workload("Rollout", NS, "web", reads("env")));
    w.start_pod("web", "web-1", &t.before);
    w.kube.put(workload("Deployment", NS, "api", reads("env")));
    w.start_pod("api", "api-1", &t.before);
    w.kube
        .put(vso_controller_deployment("vault-secrets-operator-system"));
    let out = w.verify_consumers(&["--all"]).status(1).output();
    let text = out.stdout_text();
    has(&text, "ok   Rollout apps/web");
    has(
        &text,
        "VSO (`rolloutRestartTargets` of apps/db) restarts it, with VSO's Deployment `vault-secrets-operator-system/vault-secrets-operator-controller-manager` Ready",
    );
    has(&text, "FAIL Deployment apps/api");
    has(&text, "fix: kubectl -n apps rollout restart deployment/api");
}

/// The line of workload `name` and its detail lines, from a text report.
fn block_of(text: &str, name: &str) -> String {
    let head = format!("Deployment {NS}/{name}");
    let mut lines = text.lines().skip_while(|l| !l.ends_with(&head));
    let mut out: Vec<&str> = lines.next().into_iter().collect();
    out.extend(lines.take_while(|l| l.starts_with("            ")));
    out.join("\n")
}

/// A Reloader annotation counts only while a Reloader runs that watches the workload's
/// namespace: none at all, one not Ready, one watching its own namespace only
/// (`watchGlobally: false`), one that ignores the namespace: not done, with the restart.
#[test]
fn a_reloader_annotation_without_a_reloader_watching_is_not_done() {
    let (w, t) = world();
    let mut web = workload("Deployment", NS, "web", reads("env"));
    web["metadata"]["annotations"]["reloader.stakater.com/auto"] = json!("true");
    w.kube.put(web);
    w.start_pod("web", "web-1", &t.before);
    let not_done = |reason: &str| {
        let out = w.verify_consumers(&["--all"]).status(1).output();
        let text = out.stdout_text();
        let block = block_of(&text, "web");
        has(&block, "FAIL Deployment apps/web");
        has(
            &block,
            "reads `db` through env, but 1 pod(s) started before its data changed",
        );
        has(
            &block,
            "and Reloader (annotation `reloader.stakater.com/auto: \"true\"`) restarts nothing: ",
        );
        has(&block, reason);
        has(
            &block,
            "fix: kubectl -n apps rollout restart deployment/web",
        );
        has(&text, "verify auh1-dev: NOT done");
        let doc = w
            .verify_consumers(&["-o", "json"])
            .status(1)
            .output()
            .json();
        let c = only_workload(&doc);
        assert_eq!(c["ok"], false);
        assert_eq!(c["restarted_by"], Value::Null);
        assert_eq!(c["fix"], "kubectl -n apps rollout restart deployment/web");
    };
    not_done("no Reloader runs: no Deployment in any namespace is labelled `app.kubernetes.io/name=reloader`");

    let mut reloader = reloader_deployment("reloader", &[], true);
    reloader["status"] = deployment_unready_status();
    w.kube.put(reloader);
    not_done("Reloader's Deployment `reloader/reloader-reloader` is not Ready (no ready replica)");

    w.kube.put(reloader_deployment("reloader", &[], false));
    not_done(
        "Reloader's Deployment `reloader/reloader-reloader` watches only namespace(s) `reloader`",
    );

    w.kube.put(reloader_deployment(
        "reloader",
        &["--namespaces-to-ignore=kube-system,apps"],
        true,
    ));
    not_done("ignores namespace `apps` (`--namespaces-to-ignore`)");

    // Listed in `--namespaces` (the chart's scoped mode), the namespace is watched.
    w.kube.put(reloader_deployment(
        "reloader",
        &["--namespaces=apps,reloader"],
        false,
    ));
    let out = w.verify_consumers(&["--all"]).output();
    has(&out.stdout_text(), "ok   Deployment apps/web");
}

/// `--namespace-selector` needs the namespace's labels: matching, the workload passes; not
/// matching, it is not done; unreadable, cannot tell (never ok). An identity that may not list
/// Deployments across namespaces cannot tell either, and is told which permission is missing.
#[test]
fn whether_reloader_watches_that_cannot_be_read_is_cannot_tell() {
    let (w, t) = world();
    let mut web = workload("Deployment", NS, "web", reads("env"));
    web["metadata"]["annotations"]["secret.reloader.stakater.com/reload"] = json!("db");
    w.kube.put(web);
    w.start_pod("web", "web-1", &t.before);
    // As the chart renders `reloader.namespaceSelector: "reloader=enabled"`.
    w.kube.put(reloader_deployment(
        "reloader",
        &["--namespace-selector=\"reloader=enabled\""],
        true,
    ));
    w.kube.put(namespace(NS, json!({"reloader": "enabled"})));
    let out = w.verify_consumers(&["--all"]).output();
    has(&out.stdout_text(), "ok   Deployment apps/web");

    w.kube.put(namespace(NS, json!({"team": "ask"})));
    let out = w.verify_consumers(&["--all"]).status(1).output();
    has(
        &out.stdout_text(),
        "does not watch namespace `apps`: its labels do not match `--namespace-selector` `reloader=enabled`",
    );

    let cannot_tell = |reason: &str| {
        let out = w.verify_consumers(&["--all"]).output();
        let text = out.stdout_text();
        let block = block_of(&text, "web");
        has(&block, "---- Deployment apps/web");
        has(&block, "cannot tell: reads `db` through env, 1 pod(s) (`web-1`) started before its data changed, and whether Reloader (annotation `secret.reloader.stakater.com/reload`) restarts it is not known: ");
        has(&block, reason);
        has(
            &block,
            "to be sure: kubectl -n apps rollout restart deployment/web",
        );
        has(
            &text,
            "verify auh1-dev: done; cannot tell for 1 workload(s)",
        );
        let doc = w.verify_consumers(&["-o", "json"]).output().json();
        assert_eq!(only_workload(&doc)["cannot_tell"], true);
    };
    w.kube.deny("namespaces");
    cannot_tell("whether the namespace matches Reloader's `--namespace-selector` cannot be told: this identity may not get `namespaces` at the cluster scope (403)");
    w.kube.deny_cluster_wide("deployments");
    cannot_tell("whether Reloader runs cannot be told: this identity may not list `deployments.apps` at the cluster scope (403)");
}

/// `rolloutRestartTargets` restart only while VSO's controller runs: without its Deployment,
/// or with it not Ready, the target is not done.
#[test]
fn a_vso_rollout_restart_target_without_vso_running_is_not_done() {
    let (w, t) = vso_world("Deployment", "web");
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    w.start_pod("web", "web-1", &t.before);
    let out = w.verify_consumers(&["--all"]).status(1).output();
    let block = block_of(&out.stdout_text(), "web");
    has(&block, "FAIL Deployment apps/web");
    has(&block, "VSO (`rolloutRestartTargets` of apps/db) restarts nothing: VSO's controller does not run: no Deployment in any namespace is labelled `app.kubernetes.io/name=vault-secrets-operator`");
    has(
        &block,
        "fix: kubectl -n apps rollout restart deployment/web",
    );

    let mut vso = vso_controller_deployment("vault-secrets-operator-system");
    vso["status"] = deployment_unready_status();
    w.kube.put(vso);
    let out = w.verify_consumers(&["--all"]).status(1).output();
    has(
        &out.stdout_text(),
        "VSO's Deployment `vault-secrets-operator-system/vault-secrets-operator-controller-manager` is not Ready",
    );

    // With `hmacSecretData: false` VSO ignores the targets, running or not.
    w.kube
        .put(vso_controller_deployment("vault-secrets-operator-system"));
    w.kube.update("VaultStaticSecret", Some(NS), "db", |v| {
        v["spec"]["hmacSecretData"] = json!(false);
    });
    let out = w.verify_consumers(&[]).status(1).output();
    has(
        &out.stdout_text(),
        "restarts nothing: VSO ignores `rolloutRestartTargets` while `hmacSecretData` is false",
    );
}

#[test]
fn restart_sends_exactly_the_rollout_patch_and_waits_for_new_pods() {
    let (w, t) = world();
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    w.start_pod("web", "web-1", &t.before);
    w.kube
        .put(workload("Rollout", NS, "canary", reads("envFrom")));
    w.start_pod("canary", "canary-1", &t.before);
    w.kube
        .put(workload("Deployment", NS, "fresh", reads("env")));
    w.start_pod("fresh", "fresh-1", &t.after);
    let kube = &w.kube;
    // The controllers replace the pods once the restart arrives: no timing involved.
    let replaced = std::thread::scope(|s| {
        let controller = s.spawn(|| {
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_secs(120) {
                if kube.patches().len() == 2 {
                    w.start_pod("web", "web-1", &t.after);
                    w.start_pod("canary", "canary-1", &t.after);
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            false
        });
        let out = w.verify_consumers(&["--restart", "--wait", "2m"]).output();
        has(&out.stderr_text(), "restarted Deployment apps/web at ");
        // Said once, as it is done: not again among the notes after the report.
        assert_eq!(
            out.stderr_text()
                .matches("restarted Deployment apps/web at ")
                .count(),
            1,
            "{}",
            out.stderr_text()
        );
        has(&out.stdout_text(), "verify auh1-dev: done");
        controller.join().unwrap()
    });
    assert!(replaced, "verify sent no restart");
    let patches = w.kube.patches();
    assert_eq!(patches.len(), 2, "{patches:?}");
    let web = &patches[0];
    assert_eq!(web.path, "/apis/apps/v1/namespaces/apps/deployments/web");
    assert_eq!(web.content_type, "application/strategic-merge-patch+json");
    let at = web.body["spec"]["template"]["metadata"]["annotations"]
        ["kubectl.kubernetes.io/restartedAt"]
        .as_str()
        .expect("restartedAt")
        .to_string();
    assert!(
        time::OffsetDateTime::parse(&at, &time::format_description::well_known::Rfc3339).is_ok()
    );
    assert_eq!(
        web.body,
        json!({"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": at}}}}})
    );
    let canary = &patches[1];
    assert_eq!(
        canary.path,
        "/apis/argoproj.io/v1alpha1/namespaces/apps/rollouts/canary"
    );
    assert_eq!(canary.content_type, "application/merge-patch+json");
    let at = canary.body["spec"]["restartAt"]
        .as_str()
        .expect("restartAt");
    assert_eq!(canary.body, json!({"spec": {"restartAt": at}}));
    // The workload written to carries the annotation, as the API server keeps it.
    assert_eq!(
        w.kube.get("Deployment", Some(NS), "web").unwrap()["spec"]["template"]["metadata"]
            ["annotations"]["kubectl.kubernetes.io/restartedAt"],
        json!(
            web.body["spec"]["template"]["metadata"]["annotations"]
                ["kubectl.kubernetes.io/restartedAt"]
        )
    );
}

#[test]
fn restart_without_wait_is_still_not_done_until_new_pods_run() {
    let (w, t) = world();
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    w.start_pod("web", "web-1", &t.before);
    let out = w.verify_consumers(&["--restart"]).status(1).output();
    has(&out.stdout_text(), "restarted at ");
    has(&out.stdout_text(), "FAIL Deployment apps/web");
    assert_eq!(w.kube.patches().len(), 1);
}

#[test]
fn without_reading_the_secret_an_env_reader_is_not_checked_never_ok() {
    let (w, t) = world();
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    w.start_pod("web", "web-1", &t.before);
    let out = w.verify_consumers(&["--skip-target-secrets"]).output();
    let text = out.stdout_text();
    has(&text, "---- consumers: ");
    has(
        &text,
        "1 workload(s) read 1 target Secret(s), 1 not checked",
    );
    has(&text, "---- Deployment apps/web");
    has(&text, "not checked: reads `db` through env, and when its data changed is not known without reading it (--skip-target-secrets)");
    has(
        &text,
        "verify auh1-dev: done (consumers checked; not checked: vault, policy, kube, argocd (--only); consumers' readers through env or subPath (--skip-target-secrets))",
    );
    assert!(!text.contains("ok   Deployment"), "{text}");
    assert!(
        w.kube
            .requests()
            .iter()
            .all(|r| !r.path.contains("/secrets")),
        "a Secret was read"
    );
    let doc = w
        .verify_consumers(&["--skip-target-secrets", "-o", "json"])
        .json();
    assert_eq!(doc["consumers"]["not_checked"], 1);
    assert_eq!(only_workload(&doc)["checked"], false);
    assert!(
        doc["not_checked"]
            .as_array()
            .unwrap()
            .contains(&json!({"part": "consumers' readers through env or subPath", "why": "--skip-target-secrets", "code": "consumer-readers-skipped"})),
        "{doc:#}"
    );
}

#[test]
fn odd_shapes_are_named_and_not_taken_as_fine_and_cluster_text_is_cleaned() {
    let (w, _) = world();
    let mut odd = workload("Deployment", NS, "odd", reads("env"));
    odd["spec"]["template"]["spec"]["containers"] = json!("not a list");
    w.kube.put(odd);
    let mut by_ref = workload("Rollout", NS, "by-ref", reads("env"));
    by_ref["spec"]["workloadRef"] =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
    w.kube.put(by_ref);
    let mut no_selector = workload("Deployment", NS, "no-selector", reads("env"));
    no_selector["spec"]["selector"] = json!({});
    w.kube.put(no_selector);
    let out = w.verify_consumers(&[]).status(1).output();
    let text = out.stdout_text();
    assert!(!text.contains('\u{1b}'), "{text}");
    has(&text, "not checked: `spec.template.spec.containers` is not a list of objects; skipped, not taken as fine");
    has(&text, "FAIL Rollout apps/by-ref");
    has(&text, "`spec.workloadRef`");
    has(&text, "FAIL Deployment apps/no-selector");
    has(&text, "`spec.selector` is empty");
}

/// A name the API server would refuse, sent by a hostile cluster: with its escape sequence cut
/// out, `evil\e]8;;\a-web` would read as another workload in a fix line to paste. It is shown
/// escaped, is not done, and gets no fix line and no restart.
#[test]
fn a_workload_name_that_is_not_a_kubernetes_name_is_shown_escaped_and_never_restarted() {
    let (w, t) = world();
    let name = "evil\u{1b}]8;;\u{7}-web";
    w.kube.put(workload("Deployment", NS, name, reads("env")));
    w.start_pod(name, "evil-1", &t.before);
    let out = w.verify_consumers(&["--restart"]).status(1).output();
    let text = out.stdout_text();
    assert!(!text.contains('\u{1b}'), "{text}");
    has(&text, "FAIL Deployment apps/evil\\u{1b}]8;;\\u{7}-web");
    has(
        &text,
        "is not a valid Kubernetes name, so no restart is offered for it",
    );
    assert!(!text.contains("fix:"), "{text}");
    assert!(!text.contains("rollout restart"), "{text}");
    assert!(w.kube.patches().is_empty(), "a restart was sent");
}

#[test]
fn restart_needs_the_consumers_part() {
    let (w, _) = world();
    w.run(&["verify", "auh1-dev", "--skip-kube", "--restart"])
        .stderr_has("--restart needs the consumers part")
        .status(2)
        .output();
}

/// ESO copies the ExternalSecret's labels and annotations onto the Secret and updates it under
/// its one field manager (external-secrets v2.9.0
/// `pkg/controllers/externalsecret/externalsecret_controller_secret.go`, `ApplyTemplate` and the
/// update in `createOrUpdateSecret`); the API server stamps that manager's `managedFields`
/// entry with the time of any change of its fields (apimachinery v0.34
/// `pkg/util/managedfields/internal/managedfieldsupdater.go`). So `verify --force-sync` (ESO's
/// `force-sync` annotation) moves the Secret's "changed" time past pods that read the current
/// data: they cannot be told from stale ones, and the verdict says so without failing.
#[test]
fn a_secret_restamped_by_an_annotation_after_the_pods_started_is_cannot_tell_not_stale() {
    let (w, t) = world();
    let restamped = rfc3339(t.second + Duration::minutes(5));
    w.kube.put(with_data_manager(
        secret(NS, "db", &[("password", VALUE)]),
        "externalsecrets.external-secrets.io/db",
        &restamped,
    ));
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    w.start_pod("web", "web-1", &t.after);
    let out = w.verify_consumers(&[]).output();
    let text = out.stdout_text();
    has(&text, "---- Deployment apps/web");
    has(
        &text,
        "cannot tell: reads `db` through env, and 1 pod(s) (`web-1`) started after Vault had the data it holds",
    );
    has(
        &text,
        "to be sure: kubectl -n apps rollout restart deployment/web",
    );
    has(
        &text,
        "verify auh1-dev: done; cannot tell for 1 workload(s) (consumers checked;",
    );
    let doc = w.verify_consumers(&["-o", "json"]).output().json();
    assert_eq!(doc["ok"], true);
    assert_eq!(
        doc["cannot_tell"],
        json!([{"part": "consumers", "count": 1, "what": "workload(s)", "code": "workloads-cannot-tell"}])
    );
    let c = only_workload(&doc);
    assert_eq!(
        (c["ok"].clone(), c["cannot_tell"].clone()),
        (json!(true), json!(true))
    );
    // The pods that did start before Vault had the data are still not done.
    w.start_pod("web", "web-2", &t.before);
    let out = w.verify_consumers(&[]).status(1).output();
    has(&out.stdout_text(), "FAIL Deployment apps/web");
}

/// The kubelet sets `status.startTime` when it takes the pod, before the image is pulled and
/// before a container waiting for its Secret (`CreateContainerConfigError`) can start; env is
/// resolved when the container starts (kubernetes v1.34 `pkg/kubelet/kubelet_pods.go`,
/// `makeEnvironmentVariables`, at `StartContainer`). The container's `startedAt` counts.
#[test]
fn a_container_that_started_after_the_change_is_fresh_whatever_the_pods_start_time() {
    let (w, t) = world();
    let web = workload("Deployment", NS, "web", reads("env"));
    w.kube.put(web.clone());
    w.kube.run_accepted(&web, "web-1", &t.before, &t.after);
    let out = w.verify_consumers(&["--all"]).output();
    has(&out.stdout_text(), "ok   Deployment apps/web");
    has(
        &out.stdout_text(),
        "its 1 pod(s) started after the data last changed",
    );
    // Its twin: the container itself started before Vault had the data.
    w.kube.run_accepted(&web, "web-1", &t.before, &t.before);
    w.verify_consumers(&[]).status(1).output();
}

/// Only the workload's current pods count: Running and not being deleted (finished and evicted
/// pods stay until pod garbage collection: kubernetes `pkg/controller/podgc`), owned through its
/// current ReplicaSet (the one whose `deployment.kubernetes.io/revision` the Deployment carries),
/// not pods of another owner that share its labels.
#[test]
fn finished_evicted_old_and_foreign_pods_do_not_count() {
    let (w, t) = world();
    let web = workload("Deployment", NS, "web", reads("env"));
    w.kube.put(web.clone());
    w.kube.run(&web, "web-now", &t.after);
    let old = |name: &str, f: &dyn Fn(&mut Value)| {
        let mut p = common::fake_kube::running_pod(&web, name, &t.before, &t.before);
        f(&mut p);
        w.kube.put(p);
    };
    old("web-done", &|p| p["status"]["phase"] = json!("Succeeded"));
    old("web-failed", &|p| p["status"]["phase"] = json!("Failed"));
    old("web-evicted", &|p| {
        p["status"]["phase"] = json!("Failed");
        p["status"]["reason"] = json!("Evicted");
    });
    old("web-going", &|p| {
        p["metadata"]["deletionTimestamp"] = json!(t.after)
    });
    // A pod of the previous ReplicaSet, and one of another owner with the same labels.
    let mut previous = common::fake_kube::current_replica_set(&web).unwrap();
    previous["metadata"]["name"] = json!("web-4c7b8a6f5");
    previous["metadata"]["uid"] = json!(common::fake_kube::uid_of("ReplicaSet", "web-4c7b8a6f5"));
    previous["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("0");
    w.kube.put(previous.clone());
    old("web-previous", &|p| {
        p["metadata"]["ownerReferences"][0]["name"] = previous["metadata"]["name"].clone();
        p["metadata"]["ownerReferences"][0]["uid"] = previous["metadata"]["uid"].clone();
    });
    w.kube.put(pod_of(NS, "web", "stray", &t.before));
    let out = w.verify_consumers(&["--all"]).output();
    has(&out.stdout_text(), "ok   Deployment apps/web");
    has(
        &out.stdout_text(),
        "its 1 pod(s) started after the data last changed",
    );
    // Its twin: a current pod from before Vault had the data.
    old("web-stale", &|_| {});
    has(
        &w.verify_consumers(&[]).status(1).output().stdout_text(),
        "1 pod(s) started before its data changed",
    );
}

/// A value written again as a new version was in Vault since the first: a container started
/// between the two versions may hold it, so it is not proven stale.
#[test]
fn a_value_written_again_counts_from_its_first_version() {
    let (w, t) = world();
    std::thread::sleep(std::time::Duration::from_millis(2100));
    w.bao.kv_put(
        "secret",
        "core-service/auh1-dev/db",
        json!({ "password": VALUE }),
    );
    let second = w
        .bao
        .kv_created("secret", "core-service/auh1-dev/db")
        .replace_nanosecond(0)
        .unwrap();
    assert!(second >= t.second + Duration::seconds(2));
    w.kube.put(with_data_manager(
        secret(NS, "db", &[("password", VALUE)]),
        "externalsecrets.external-secrets.io/db",
        &rfc3339(second + Duration::seconds(1)),
    ));
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    // After version 1 was created, before version 2.
    w.start_pod("web", "web-1", &rfc3339(t.second + Duration::seconds(1)));
    let out = w.verify_consumers(&[]).output();
    has(&out.stdout_text(), "cannot tell: reads `db` through env");
}

/// A Secret whose data two managers wrote, a day apart from a pod's start on either side:
/// `kubectl create secret generic db --from-literal=username=…` (manager `kubectl-create`), then
/// ESO merging `password` into it (`creationPolicy: Merge`: external-secrets v2.9.0
/// `pkg/controllers/externalsecret/externalsecret_controller.go`, `updateSecret`, an Update under
/// the field owner `externalsecrets.external-secrets.io/<name>`, adding the
/// `reconcile.external-secrets.io/managed` label and `data-hash` annotation). An Update takes
/// from the other managers only the fields it changes (structured-merge-diff v6.3.0
/// `merge/update.go` `Updater.update`), so both entries keep a key of `data`, each stamped with
/// its own write, and the API server lists them oldest first (apimachinery v0.34.0
/// `pkg/util/managedfields/internal/managedfields.go` `sortEncodedManagedFields`). The pod
/// started between the two writes holds the data before ESO's: the latest entry counts.
#[test]
fn a_secret_whose_data_two_managers_changed_counts_from_the_latest_change() {
    let (w, t) = world();
    let created = rfc3339(t.second - Duration::days(2));
    let mut merged = secret(NS, "db", &[("username", "app"), ("password", VALUE)]);
    merged["metadata"]["labels"] = json!({"reconcile.external-secrets.io/managed": "true"});
    merged["metadata"]["annotations"] =
        json!({"reconcile.external-secrets.io/data-hash": "0c3f5e9a1b2d4c6e8f0a1b2c3d4e5f60"});
    merged["metadata"]["managedFields"] = json!([
        {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": created,
         "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {".": {}, "f:username": {}}, "f:type": {}}},
        {"manager": "externalsecrets.external-secrets.io/db", "operation": "Update",
         "apiVersion": "v1", "time": t.changed, "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:password": {}},
                      "f:metadata": {"f:annotations": {".": {}, "f:reconcile.external-secrets.io/data-hash": {}},
                                     "f:labels": {".": {}, "f:reconcile.external-secrets.io/managed": {}}}}},
    ]);
    w.kube.put(merged);
    w.kube.update("ExternalSecret", Some(NS), "db", |es| {
        es["spec"]["target"]["creationPolicy"] = json!("Merge");
    });
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    // After `kubectl create`, before ESO's write (and before Vault had the value).
    w.start_pod("web", "web-1", &t.before);
    let out = w.verify_consumers(&["--all"]).status(1).output();
    let text = out.stdout_text();
    has(&text, "FAIL Deployment apps/web");
    has(&text, format!("1 pod(s) started before its data changed at {} by `externalsecrets.external-secrets.io/db` (`web-1`)", t.changed));
    let doc = w
        .verify_consumers(&["-o", "json"])
        .status(1)
        .output()
        .json();
    assert_eq!(doc["consumers"]["secrets"][0]["changed_at"], t.changed);
    // Its twin: a pod started after ESO's write is fresh.
    w.start_pod("web", "web-1", &t.after);
    has(
        &w.verify_consumers(&["--all"]).output().stdout_text(),
        "ok   Deployment apps/web",
    );
}

/// The part alone (`--only consumers`) reads the ExternalSecrets by LIST too, never one by one.
#[test]
fn the_part_alone_lists_the_external_secrets() {
    let (w, t) = world();
    w.kube.put(workload("Deployment", NS, "web", reads("env")));
    w.start_pod("web", "web-1", &t.after);
    w.verify_consumers(&["--only", "consumers"]).output();
    let paths: Vec<String> = w.kube.requests().iter().map(|r| r.path.clone()).collect();
    let listed = "/apis/external-secrets.io/v1/namespaces/apps/externalsecrets";
    assert_eq!(
        paths.iter().filter(|p| *p == listed).count(),
        1,
        "{paths:?}"
    );
    assert!(
        !paths.iter().any(|p| p.starts_with(&format!("{listed}/"))),
        "{paths:?}"
    );
}
