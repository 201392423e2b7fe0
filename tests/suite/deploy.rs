//! deploy/ (the Argo CD hook manifests) and the Dockerfile.
//!
//! Every manifest is parsed into its typed k8s-openapi object (Argo CD's Application and
//! ApplicationSet, which are CRDs, into a small serde view) and must survive the round trip
//! unchanged, so a misspelt field cannot hide. deploy/ is rendered as kustomize renders it (the
//! few kustomization features it uses, emulated here; an unknown one fails the test). Then:
//! hook phases, waves and delete policies; the restricted security context, resources and Job
//! limits; each Job's args parse as a vault-seed command line; the ApplicationSet's patch hits
//! the ENV argument of each Job. And the hook Jobs run as a pod runs them (tests/suite/common/pod.rs):
//! the PreSync Job seeds a real OpenBao, logging in with its projected service-account token
//! (kubernetes auth asks the fake API server's TokenReview), the PostSync Job waits until the
//! ExternalSecrets are Ready; every request it makes to the API server is allowed by the Role
//! and ClusterRole, and every rule is used. Finally the binary built by the Dockerfile's cargo
//! command runs as the image's user on a read-only root with only VAULT_CACERT to trust.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::Parser as _;
use common::fake_kube::{self, FakeKube, Review};
use common::jwt::{self, Signer};
use common::pod::{Pod, ServiceAccount, SETUP_FAILED, UID};
use common::{has, text, OpenBao, Run};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount as ServiceAccountObject};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use vault_seed::app::cli::{Cli, Command};
use vault_seed::vault::login::Kind;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The YAML documents of a file, as JSON values.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .filter(|v| !v.is_null())
        .collect()
}

/// `v` as `T`, which must give `v` back unchanged: a field the type does not know (a typo, a
/// field at the wrong level) would be dropped on the way.
fn typed<T: DeserializeOwned + Serialize>(v: &Value, what: &str) -> T {
    let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{what}: {e}\n{v}"));
    let back = serde_json::to_value(&t).unwrap();
    assert_eq!(&back, v, "{what}: fields lost in the typed round trip");
    t
}

// ----- kustomize, as far as deploy/ uses it -----

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Kustomization {
    api_version: String,
    kind: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    config_map_generator: Vec<Generator>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Generator {
    name: String,
    files: Vec<String>,
    #[serde(default)]
    options: GeneratorOptions,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GeneratorOptions {
    #[serde(default)]
    disable_name_suffix_hash: bool,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

const CLUSTER_SCOPED: &[&str] = &["ClusterRole", "ClusterRoleBinding", "Namespace"];

/// What `kustomize build DIR` gives for the features deploy/ uses: resources (files and
/// directories), `namespace` (set on namespaced objects and on namespace-less ServiceAccount
/// subjects of bindings), and ConfigMaps generated from files.
fn render(dir: &Path) -> Vec<Value> {
    let file = dir.join("kustomization.yaml");
    let k: Kustomization = serde_yaml::from_str(&std::fs::read_to_string(&file).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert_eq!(k.api_version, "kustomize.config.k8s.io/v1beta1");
    assert_eq!(k.kind, "Kustomization");
    let mut out = Vec::new();
    for r in &k.resources {
        let path = dir.join(r);
        if path.is_dir() {
            out.extend(render(&path));
        } else {
            out.extend(documents(&path));
        }
    }
    for g in &k.config_map_generator {
        assert!(
            g.options.disable_name_suffix_hash,
            "{}: a hashed name is not emulated",
            g.name
        );
        let mut data = serde_json::Map::new();
        for f in &g.files {
            let path = dir.join(f);
            // kustomize refuses files outside the kustomization's directory.
            assert!(
                path.canonicalize()
                    .unwrap()
                    .starts_with(dir.canonicalize().unwrap()),
                "{f} is outside {}",
                dir.display()
            );
            let name = Path::new(f)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            data.insert(name, json!(std::fs::read_to_string(&path).unwrap()));
        }
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": g.name}, "data": data});
        if !g.options.annotations.is_empty() {
            cm["metadata"]["annotations"] = json!(g.options.annotations);
        }
        out.push(cm);
    }
    if let Some(ns) = &k.namespace {
        for o in &mut out {
            if !CLUSTER_SCOPED.contains(&o["kind"].as_str().unwrap()) {
                o["metadata"]["namespace"] = json!(ns);
            }
            if let Some(subjects) = o.get_mut("subjects").and_then(Value::as_array_mut) {
                for s in subjects {
                    if s["kind"] == "ServiceAccount" && s.get("namespace").is_none() {
                        s["namespace"] = json!(ns);
                    }
                }
            }
        }
    }
    out
}

/// The secrets app, rendered.
fn app() -> Vec<Value> {
    render(&root().join("deploy/core-service-secrets"))
}

fn find<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objs.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn jobs(objs: &[Value]) -> Vec<Job> {
    objs.iter()
        .filter(|o| o["kind"] == "Job")
        .map(|o| typed(o, "Job"))
        .collect()
}

fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

fn job_named(objs: &[Value], name: &str) -> Job {
    typed(find(objs, "Job", name), name)
}

/// The Job's only container.
fn container(job: &Job) -> &k8s_openapi::api::core::v1::Container {
    let spec = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(spec.containers.len(), 1);
    &spec.containers[0]
}

fn env_of(job: &Job, name: &str) -> Option<String> {
    container(job)
        .env
        .as_ref()?
        .iter()
        .find(|e| e.name == name)
        .map(|e| e.value.clone().expect("plain values only"))
}

// ----- Argo CD's CRDs: the fields deploy/ uses -----

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Application {
    api_version: String,
    kind: String,
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    spec: AppSpec,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AppSpec {
    project: String,
    source: Source,
    destination: Destination,
    sync_policy: SyncPolicy,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Source {
    #[serde(rename = "repoURL")]
    repo_url: String,
    target_revision: String,
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kustomize: Option<KustomizeOptions>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct KustomizeOptions {
    patches: Vec<KustomizePatch>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct KustomizePatch {
    target: PatchTarget,
    patch: String,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PatchTarget {
    group: String,
    version: String,
    kind: String,
    label_selector: String,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Destination {
    server: String,
    namespace: String,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SyncPolicy {
    automated: Value,
    sync_options: Vec<String>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ApplicationSet {
    api_version: String,
    kind: String,
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    spec: AppSetSpec,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AppSetSpec {
    go_template: bool,
    go_template_options: Vec<String>,
    generators: Vec<ClusterGenerator>,
    template: AppTemplate,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ClusterGenerator {
    clusters: Clusters,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Clusters {
    selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct AppTemplate {
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    spec: AppSpec,
}

// ----- the manifests -----

#[test]
fn every_manifest_parses_as_its_typed_object() {
    let mut seen = BTreeMap::<String, usize>::new();
    let mut files = Vec::new();
    let mut stack = vec![root().join("deploy")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    for f in &files {
        let what = f.strip_prefix(root()).unwrap().display().to_string();
        if f.file_name().unwrap() == "kustomization.yaml" {
            continue; // rendered below
        }
        for doc in documents(f) {
            let kind = doc["kind"]
                .as_str()
                .unwrap_or_else(|| panic!("{what}: no kind"))
                .to_string();
            match kind.as_str() {
                "ServiceAccount" => drop(typed::<ServiceAccountObject>(&doc, &what)),
                "Role" => drop(typed::<Role>(&doc, &what)),
                "RoleBinding" => drop(typed::<RoleBinding>(&doc, &what)),
                "ClusterRole" => drop(typed::<ClusterRole>(&doc, &what)),
                "ClusterRoleBinding" => drop(typed::<ClusterRoleBinding>(&doc, &what)),
                "Job" => drop(typed::<Job>(&doc, &what)),
                "Application" => drop(typed::<Application>(&doc, &what)),
                "ApplicationSet" => drop(typed::<ApplicationSet>(&doc, &what)),
                other => panic!("{what}: a {other} the test does not know"),
            }
            *seen.entry(kind).or_default() += 1;
        }
    }
    for kind in [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "Job",
        "Application",
        "ApplicationSet",
    ] {
        assert!(seen.contains_key(kind), "no {kind} in deploy/: {seen:?}");
    }
    // The rendered app: the generated ConfigMap too, every object namespaced where it must be.
    let objs = app();
    let cm: ConfigMap = typed(find(&objs, "ConfigMap", "vault-seed-specs"), "ConfigMap");
    assert_eq!(
        cm.data.unwrap()["core-service.toml"],
        std::fs::read_to_string(root().join("secret-specs/core-service.toml")).unwrap(),
        "deploy/core-service-secrets/secret-specs/ must hold the repository's spec"
    );
    for o in &objs {
        let namespaced = !CLUSTER_SCOPED.contains(&o["kind"].as_str().unwrap());
        assert_eq!(o["metadata"]["namespace"] == "ask", namespaced, "{o}");
    }
}

/// Argo CD's hook annotations.
const HOOK: &str = "argocd.argoproj.io/hook";
const DELETE: &str = "argocd.argoproj.io/hook-delete-policy";
const WAVE: &str = "argocd.argoproj.io/sync-wave";

#[test]
fn hooks_run_in_the_right_phase_and_what_the_presync_job_needs_exists_before_it() {
    let objs = app();
    let apply = job_named(&objs, "vault-seed-apply");
    let verify = job_named(&objs, "vault-seed-verify");
    assert_eq!(annotation(&apply.metadata, HOOK), Some("PreSync"));
    assert_eq!(annotation(&verify.metadata, HOOK), Some("PostSync"));
    for job in [&apply, &verify] {
        assert_eq!(
            annotation(&job.metadata, DELETE),
            Some("BeforeHookCreation,HookSucceeded"),
            "a failed Job stays for its logs until the next sync; a succeeded one goes"
        );
    }
    let job_wave: i32 = annotation(&apply.metadata, WAVE)
        .unwrap_or("0")
        .parse()
        .unwrap();
    // Everything else is a PreSync hook too (a Sync-phase object would not exist yet when the
    // PreSync Job runs), at an earlier wave, kept after the sync for the PostSync Job.
    for o in objs.iter().filter(|o| o["kind"] != "Job") {
        let meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta =
            serde_json::from_value(o["metadata"].clone()).unwrap();
        let what = format!("{} {}", o["kind"], o["metadata"]["name"]);
        assert_eq!(annotation(&meta, HOOK), Some("PreSync"), "{what}");
        assert_eq!(
            annotation(&meta, DELETE),
            Some("BeforeHookCreation"),
            "{what}"
        );
        let wave: i32 = annotation(&meta, WAVE).unwrap_or("0").parse().unwrap();
        assert!(
            wave < job_wave,
            "{what}: wave {wave} is not before the Job's {job_wave}"
        );
    }
    // vault-seed's own ordering check agrees: the ConfigMap the Jobs mount exists before they
    // run (`vault-seed order`, with the external CA bundle named as existing).
    let dir = tempfile::tempdir().unwrap();
    let rendered = dir.path().join("secrets-app.yaml");
    let order = |objs: &[Value]| {
        let yaml: Vec<String> = objs
            .iter()
            .map(|o| serde_yaml::to_string(o).unwrap())
            .collect();
        std::fs::write(&rendered, yaml.join("---\n")).unwrap();
        Run::home(dir.path())
            .arg("order")
            .arg("--app")
            .arg(format!("core-service-secrets={}", rendered.display()))
            .args(["--exists", "ConfigMap/ask/vault-ca"])
    };
    order(&objs).output();
    // Without the hook annotations on the ConfigMap, it would come after the PreSync Job.
    let mut broken = objs.clone();
    for o in &mut broken {
        if o["kind"] == "ConfigMap" {
            o["metadata"]["annotations"] = json!({});
        }
    }
    let out = order(&broken).status(1).output();
    has(&text(&out.stdout), "vault-seed-specs");
}

#[test]
fn jobs_are_restricted_bounded_and_limited() {
    for job in jobs(&app()) {
        let name = job.metadata.name.clone().unwrap();
        let spec = job.spec.as_ref().unwrap();
        assert!(
            spec.backoff_limit.is_some_and(|b| (0..=2).contains(&b)),
            "{name}"
        );
        let deadline = spec.active_deadline_seconds.expect("activeDeadlineSeconds");
        assert!((60..=900).contains(&deadline), "{name}: {deadline}");
        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"), "{name}");
        assert_eq!(pod.service_account_name.as_deref(), Some("vault-seed"));
        let psc = pod.security_context.as_ref().expect("pod securityContext");
        assert_eq!(psc.run_as_non_root, Some(true), "{name}");
        assert_eq!(
            psc.run_as_user,
            Some(i64::from(UID)),
            "{name}: the image's user"
        );
        assert_eq!(
            psc.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
            Some("RuntimeDefault")
        );
        let c = container(&job);
        assert!(c.command.is_none(), "{name}: the image's ENTRYPOINT runs");
        let sc = c
            .security_context
            .as_ref()
            .expect("container securityContext");
        assert_eq!(sc.read_only_root_filesystem, Some(true), "{name}");
        assert_eq!(sc.allow_privilege_escalation, Some(false), "{name}");
        assert_eq!(sc.run_as_non_root, Some(true), "{name}");
        assert_eq!(
            sc.capabilities.as_ref().and_then(|c| c.drop.clone()),
            Some(vec!["ALL".to_string()]),
            "{name}"
        );
        assert!(sc.capabilities.as_ref().unwrap().add.is_none());
        let res = c.resources.as_ref().expect("resources");
        for (what, map) in [("requests", &res.requests), ("limits", &res.limits)] {
            let map = map.as_ref().unwrap_or_else(|| panic!("{name}: no {what}"));
            assert!(
                map.contains_key("memory") && map.contains_key("cpu"),
                "{name}: {what}"
            );
        }
        // Every mount read-only; the specs where the image looks for them.
        for m in c.volume_mounts.as_ref().unwrap() {
            assert_eq!(m.read_only, Some(true), "{name}: {}", m.mount_path);
        }
        assert_eq!(
            env_of(&job, "VAULT_SEED_SPECS").as_deref(),
            Some(dockerfile_specs_path().as_str())
        );
        assert!(c
            .volume_mounts
            .as_ref()
            .unwrap()
            .iter()
            .any(|m| m.mount_path == dockerfile_specs_path()));
    }
}

/// `vault-seed` + the Job's args, as clap parses them.
fn parse_args(job: &Job) -> Cli {
    let args = container(job).args.clone().unwrap();
    Cli::try_parse_from(std::iter::once("vault-seed".to_string()).chain(args))
        .unwrap_or_else(|e| panic!("{:?}: {e}", job.metadata.name))
}

#[test]
fn each_jobs_args_are_a_vault_seed_command_line() {
    let objs = app();
    let apply = job_named(&objs, "vault-seed-apply");
    let cli = parse_args(&apply);
    match &cli.command {
        Command::Apply(a) => assert_eq!(a.common.env, "auh1-dev"),
        other => panic!("the PreSync Job runs {other:?}"),
    }
    assert_eq!(cli.global.auth.auth, Kind::Kubernetes);
    assert_eq!(cli.global.auth.role.as_deref(), Some("vault-seed"));
    assert!(!cli.global.auth.keep_token);
    let verify = job_named(&objs, "vault-seed-verify");
    let cli = parse_args(&verify);
    let Command::Verify(v) = &cli.command else {
        panic!("the PostSync Job runs {:?}", cli.command)
    };
    assert_eq!(v.env, "auh1-dev");
    assert!(v.skip_target_secrets, "the Role has no `get secrets`");
    assert!(!v.force_sync, "the Role has no `patch`");
    let wait = v.wait.expect("--wait");
    assert_eq!(wait.as_secs(), 300);
    let deadline = verify
        .spec
        .as_ref()
        .unwrap()
        .active_deadline_seconds
        .unwrap();
    assert!(
        deadline as u64 >= wait.as_secs() + 60,
        "activeDeadlineSeconds {deadline} leaves no time after --wait {wait:?}"
    );
    assert_eq!(cli.global.auth.auth, Kind::Kubernetes);
    // The login token comes from the projected volume for Vault's audience.
    for job in [&apply, &verify] {
        let file = env_of(job, "VAULT_SEED_JWT_FILE").expect("VAULT_SEED_JWT_FILE");
        let (dir, name) = file.rsplit_once('/').unwrap();
        let c = container(job);
        let mount = c
            .volume_mounts
            .as_ref()
            .unwrap()
            .iter()
            .find(|m| m.mount_path == dir)
            .unwrap();
        let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        let vol = pod
            .volumes
            .as_ref()
            .unwrap()
            .iter()
            .find(|v| v.name == mount.name)
            .unwrap();
        let source = &vol.projected.as_ref().unwrap().sources.as_ref().unwrap()[0];
        let sat = source.service_account_token.as_ref().unwrap();
        assert_eq!(sat.path, name);
        assert_eq!(sat.audience.as_deref(), Some("vault"));
    }
    // Only the PostSync Job talks to the API server.
    let automount = |j: &Job| {
        j.spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .automount_service_account_token
    };
    assert_eq!(automount(&apply), Some(false));
    assert_eq!(automount(&verify), Some(true));
}

#[test]
fn the_applicationset_stamps_the_secrets_app_per_labelled_cluster() {
    let path = root().join("deploy/argocd/applicationset.yaml");
    let set: ApplicationSet = typed(&documents(&path)[0], "ApplicationSet");
    assert_eq!(set.api_version, "argoproj.io/v1alpha1");
    assert!(set.spec.go_template);
    let [gen] = &set.spec.generators[..] else {
        panic!("one generator")
    };
    let expr = &gen.clusters.selector.match_expressions.as_ref().unwrap()[0];
    assert_eq!(expr.operator, "Exists");
    let label = &expr.key;
    let tpl = &set.spec.template;
    assert_eq!(
        annotation(&tpl.metadata, WAVE),
        Some("0"),
        "the runbook's secrets app wave"
    );
    assert!(tpl
        .metadata
        .name
        .as_deref()
        .unwrap()
        .contains("{{ .name }}"));
    assert_eq!(tpl.spec.destination.server, "{{ .server }}");
    // The same app as the single-cluster Application.
    let single: Application = typed(
        &documents(&root().join("deploy/argocd/application-core-service-secrets.yaml"))[0],
        "Application",
    );
    assert_eq!(annotation(&single.metadata, WAVE), Some("0"));
    assert_eq!(tpl.spec.source.path, single.spec.source.path);
    assert!(root()
        .join(&tpl.spec.source.path)
        .join("kustomization.yaml")
        .is_file());
    // Its patch replaces the ENV of every Job it selects, and only Jobs of vault-seed.
    let patches = &tpl.spec.source.kustomize.as_ref().unwrap().patches;
    let [p] = &patches[..] else {
        panic!("one patch")
    };
    assert_eq!(
        (
            p.target.group.as_str(),
            p.target.version.as_str(),
            p.target.kind.as_str()
        ),
        ("batch", "v1", "Job")
    );
    let ops: Vec<Value> = serde_yaml::from_str(&p.patch).unwrap();
    let [op] = &ops[..] else { panic!("one op") };
    assert_eq!(op["op"], "replace");
    assert_eq!(
        op["value"],
        format!("{{{{ index .metadata.labels \"{label}\" }}}}")
    );
    let pointer = op["path"].as_str().unwrap();
    let (key, value) = p.target.label_selector.split_once('=').unwrap();
    let objs = app();
    let selected: Vec<&Value> = objs
        .iter()
        .filter(|o| o["kind"] == "Job" && o["metadata"]["labels"][key] == value)
        .collect();
    assert_eq!(selected.len(), 2);
    for job in selected {
        let mut patched = job.clone();
        *patched.pointer_mut(pointer).expect("the path exists") = json!("cl2-prod");
        let cli = parse_args(&typed(&patched, "patched Job"));
        let env = match &cli.command {
            Command::Apply(a) => a.common.env.clone(),
            Command::Verify(v) => v.env.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(env, "cl2-prod", "the patch does not reach ENV");
    }
}

// ----- the Dockerfile -----

fn dockerfile() -> String {
    std::fs::read_to_string(root().join("Dockerfile")).unwrap()
}

/// Instructions (comments and blank lines out), `(INSTRUCTION, rest)`.
fn instructions() -> Vec<(String, String)> {
    instructions_of(&dockerfile())
}

fn instructions_of(dockerfile: &str) -> Vec<(String, String)> {
    dockerfile
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (i, rest) = l.split_once(' ').unwrap();
            (i.to_string(), rest.trim().to_string())
        })
        .collect()
}

fn dockerfile_specs_path() -> String {
    instructions()
        .iter()
        .find_map(|(i, r)| {
            (i == "ENV")
                .then(|| r.strip_prefix("VAULT_SEED_SPECS=").map(str::to_string))
                .flatten()
        })
        .expect("ENV VAULT_SEED_SPECS")
}

/// The Dockerfile's build command, as arguments to cargo.
fn dockerfile_cargo_args() -> Vec<String> {
    let run = instructions()
        .into_iter()
        .find(|(i, r)| i == "RUN" && r.starts_with("cargo build"))
        .expect("RUN cargo build")
        .1;
    run.split_whitespace().skip(1).map(str::to_string).collect()
}

/// Each `FROM`: the image by its tag (the `# pin:` line above it when it is pinned by digest,
/// as scripts/pin-images writes it), and the rest of the line (` AS build`).
fn froms(dockerfile: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = dockerfile.lines().map(str::trim).collect();
    lines
        .iter()
        .enumerate()
        .filter_map(|(n, l)| {
            let rest = l.strip_prefix("FROM ")?.trim();
            let (image, after) = rest.split_once(' ').unwrap_or((rest, ""));
            let pin = n
                .checked_sub(1)
                .and_then(|p| lines[p].strip_prefix("# pin: "))
                .map(str::to_string);
            if image.contains('@') {
                assert!(
                    pin.is_some(),
                    "`FROM {image}` pinned without its `# pin:` tag"
                );
            }
            Some((pin.unwrap_or_else(|| image.to_string()), after.to_string()))
        })
        .collect()
}

#[test]
fn the_dockerfile_builds_locked_release_and_runs_as_nonroot_from_distroless() {
    let ins = instructions();
    let froms = froms(&dockerfile());
    assert_eq!(froms.len(), 2, "multi-stage: {froms:?}");
    assert_eq!(froms[0].1, "AS build", "{froms:?}");
    assert!(
        froms[1].0.starts_with("gcr.io/distroless/") && froms[1].0.ends_with(":nonroot"),
        "{froms:?}"
    );
    let args = dockerfile_cargo_args();
    for a in ["build", "--locked", "--release"] {
        assert!(args.iter().any(|x| x == a), "{args:?}");
    }
    // The toolchain is at least the rust-version the lock file needs.
    let rust = ins
        .iter()
        .find_map(|(i, r)| {
            (i == "ARG")
                .then(|| r.strip_prefix("RUST_VERSION="))
                .flatten()
        })
        .unwrap();
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    has(&manifest, format!("rust-version = \"{rust}\""));
    let user = ins.iter().find(|(i, _)| i == "USER").unwrap().1.clone();
    assert_eq!(
        user,
        format!("{UID}:{UID}"),
        "a numeric non-root user (runAsNonRoot checks it)"
    );
    let copy = ins
        .iter()
        .find(|(i, r)| i == "COPY" && r.starts_with("--from=build"))
        .unwrap();
    let installed = copy.1.split_whitespace().last().unwrap().to_string();
    let entry = ins.iter().find(|(i, _)| i == "ENTRYPOINT").unwrap();
    assert_eq!(entry.1, format!("[\"{installed}\"]"));
    // The build context holds what the build copies, and no target/.
    let ignore = std::fs::read_to_string(root().join(".dockerignore")).unwrap();
    for p in ["!Cargo.toml", "!Cargo.lock", "!src/"] {
        has(&ignore, p);
    }
    for (i, r) in &ins {
        if i == "COPY" && !r.starts_with("--from") {
            let words: Vec<&str> = r.split_whitespace().collect();
            for src in &words[..words.len() - 1] {
                assert!(root().join(src).exists(), "COPY {src}: no such file");
                let kept = ignore
                    .lines()
                    .any(|l| l.trim_end_matches('/') == format!("!{}", src.trim_end_matches('/')));
                assert!(kept, "COPY {src}: left out of the context by .dockerignore");
            }
        }
    }
}

/// A copy of the Dockerfile and deploy/ in `dir` (made).
fn copy_image_files(dir: &Path) {
    std::fs::create_dir(dir).unwrap();
    std::fs::copy(root().join("Dockerfile"), dir.join("Dockerfile")).unwrap();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(root().join("deploy"))
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Every file under `dir`, with its bytes.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// scripts/pin-images on `dir`, the registry played by `resolve` (a shell script given the
/// reference).
fn pin_images(dir: &Path, resolve: &str, args: &[&str]) -> std::process::Output {
    let stub = dir.join("resolve");
    std::fs::write(&stub, format!("#!/bin/sh\n{resolve}\n")).unwrap();
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&stub)
        .status()
        .unwrap();
    assert!(status.success());
    std::process::Command::new(root().join("scripts/pin-images"))
        .args(args)
        .arg(dir.join("tree"))
        .env("PIN_IMAGES_RESOLVE", &stub)
        .output()
        .unwrap()
}

/// scripts/pin-images (issue 28 item 12: images were pinned by tag only) pins the Dockerfile's
/// base images and the Jobs' image by digest, each digest the registry's answer for the tag,
/// which stays beside it; run again, it changes nothing; a bad answer writes nothing. The
/// registry is a stand-in here (no registry can be reached from the tests): each answer is
/// a different digest, logged, so the test sees that each one went to its own image.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn pin_images_pins_every_image_by_digest_keeping_its_tag() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    copy_image_files(&tree);
    let log = dir.path().join("asked");
    // A digest per reference: sha256 of its text.
    let resolve = format!(
        "d=sha256:$(printf %s \"$1\" | sha256sum | cut -d' ' -f1); echo \"$1 $d\" >> {}; echo $d",
        log.display()
    );
    let before = contents(&tree);
    let check = pin_images(dir.path(), "exit 1", &["--check"]);
    assert_eq!(check.status.code(), Some(1));
    assert_eq!(
        text(&check.stdout).matches("not pinned by digest").count(),
        4
    );

    let out = pin_images(dir.path(), &resolve, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let asked: BTreeMap<String, String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            let (r, d) = l.split_once(' ').unwrap();
            (r.to_string(), d.to_string())
        })
        .collect();
    let rust = instructions()
        .iter()
        .find_map(|(i, r)| {
            (i == "ARG")
                .then(|| r.strip_prefix("RUST_VERSION="))
                .flatten()
                .map(str::to_string)
        })
        .unwrap();
    let job_image = "harbor.cl1.sq4.aegis.internal/platform/vault-seed:0.1.0";
    let rust_image = format!("docker.io/library/rust:{rust}-bookworm");
    let distroless = "gcr.io/distroless/cc-debian12:nonroot";
    assert_eq!(
        asked.keys().map(String::as_str).collect::<Vec<_>>(),
        [rust_image.as_str(), distroless, job_image],
        "each image asked for once, the ARG expanded"
    );
    let pinned = |tagged: &str| {
        let (repo, _) = tagged.rsplit_once(':').unwrap();
        format!("{repo}@{}", asked[tagged])
    };
    // The Dockerfile: each FROM by digest, its tag (ARG and all) on the line above.
    let docker = std::fs::read_to_string(tree.join("Dockerfile")).unwrap();
    assert_eq!(froms(&docker), froms(&dockerfile()), "the tags are kept");
    has(
        &docker,
        format!(
            "# pin: docker.io/library/rust:${{RUST_VERSION}}-bookworm\nFROM {} AS build\n",
            pinned(&rust_image)
        ),
    );
    has(
        &docker,
        format!("# pin: {distroless}\nFROM {}\n", pinned(distroless)),
    );
    // The Jobs: the image by digest, the tag in a comment; still the typed Jobs they were.
    let objs = render(&tree.join("deploy/base"));
    let jobs = jobs(&objs);
    assert_eq!(jobs.len(), 2);
    for job in &jobs {
        assert_eq!(
            container(job).image.as_deref(),
            Some(pinned(job_image).as_str())
        );
    }
    for name in ["job-apply.yaml", "job-verify.yaml"] {
        let yaml = std::fs::read_to_string(tree.join("deploy/base").join(name)).unwrap();
        has(&yaml, format!("image: {}  # 0.1.0\n", pinned(job_image)));
    }
    // Nothing else changed.
    let after = contents(&tree);
    let changed: Vec<_> = before
        .keys()
        .filter(|p| before[*p] != after[*p])
        .map(|p| p.strip_prefix(&tree).unwrap().display().to_string())
        .collect();
    assert_eq!(
        changed,
        [
            "Dockerfile",
            "deploy/base/job-apply.yaml",
            "deploy/base/job-verify.yaml"
        ]
    );
    assert!(pin_images(dir.path(), "exit 1", &["--check"])
        .status
        .success());

    // Again, from the tags in the comments: the same files.
    let out = pin_images(dir.path(), &resolve, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(contents(&tree), after, "pinning again changes nothing");
    // A tag that moved: its new digest.
    let moved = resolve.replace(
        "echo $d",
        "case $1 in *nonroot) echo sha256:$(printf %064d 7);; *) echo $d;; esac",
    );
    assert!(pin_images(dir.path(), &moved, &[]).status.success());
    let docker = std::fs::read_to_string(tree.join("Dockerfile")).unwrap();
    has(
        &docker,
        format!(
            "# pin: {distroless}\nFROM gcr.io/distroless/cc-debian12@sha256:{:064}\n",
            7
        ),
    );

    // An answer that is not a digest: an error, and nothing written.
    let kept = contents(&tree);
    for bad in [
        "echo sha256:abc",
        "echo latest",
        "echo 'sha256:$(rm -rf /)'",
        "exit 3",
    ] {
        let out = pin_images(dir.path(), bad, &[]);
        assert_eq!(out.status.code(), Some(1), "{bad}");
        has(&text(&out.stderr), "error: ");
        assert_eq!(contents(&tree), kept, "{bad}: nothing written");
    }
}

/// The binary the Dockerfile's cargo command builds (built here with that command).
fn release_binary() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = std::process::Command::new(cargo);
    build
        .current_dir(root())
        .args(dockerfile_cargo_args())
        .arg("--message-format=json");
    // What cargo sets for this test (CARGO_PKG_*, CARGO_MANIFEST_DIR, ...), not for a build:
    // ring's build script reruns when they change, so building with them here would rebuild
    // after every build without them (and the other way round).
    const KEEP: &[&str] = &[
        "CARGO_HOME",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_",
        "CARGO_NET_",
        "CARGO_REGISTRIES_",
        "CARGO_HTTP_",
        "CARGO_TERM_",
        "CARGO_PROFILE_",
        "CARGO_INCREMENTAL",
    ];
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if (name.starts_with("CARGO_") && !KEEP.iter().any(|k| name.starts_with(k)))
            || name == "OUT_DIR"
        {
            build.env_remove(&*name);
        }
    }
    let out = build.output().expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build --release failed:\n{}",
        text(&out.stderr)
    );
    text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|m| {
            (m["reason"] == "compiler-artifact" && m["target"]["name"] == "vault-seed")
                .then(|| m["executable"].as_str().map(PathBuf::from))
                .flatten()
        })
        .expect("the vault-seed executable")
}

#[test]
fn the_release_binary_runs_as_the_image_user_read_only_trusting_only_vault_cacert() {
    let bin = release_binary();
    // A CA, and OpenBao serving a certificate it signed for 127.0.0.1.
    let pki = tempfile::tempdir().unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "platform internal CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut server = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    server
        .subject_alt_names
        .push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let cert = server.signed_by(&key, &issuer).unwrap();
    std::fs::write(pki.path().join("server.pem"), cert.pem()).unwrap();
    std::fs::write(pki.path().join("server-key.pem"), key.serialize_pem()).unwrap();
    let bao = OpenBao::persistent(Some((
        &pki.path().join("server.pem"),
        &pki.path().join("server-key.pem"),
    )));
    let specs = dockerfile_specs_path();
    let pod = |cacert: bool| {
        let mut p = Pod::new()
            .volume(&common::repo_specs(), &specs)
            .env("VAULT_ADDR", &bao.addr)
            .env("VAULT_TOKEN", &bao.token)
            .env("VAULT_SEED_SPECS", &specs)
            .env("NO_COLOR", "1");
        if cacert {
            p = p
                .file("/etc/vault-seed/ca/ca.crt", &ca_cert.pem())
                .env("VAULT_CACERT", "/etc/vault-seed/ca/ca.crt");
        }
        p
    };
    // Without VAULT_CACERT nothing is trusted: the pod's /etc holds no CA roots, and the client
    // says so before any request.
    let out = pod(false)
        .command(&bin)
        .args(["plan", "auh1-dev"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(SETUP_FAILED), "{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    has(&stderr, "No CA certificates were loaded from the system");
    has(&stderr, "VAULT_CACERT");
    // With it: apply seeds every path, then plan has nothing left to do.
    let out = pod(true)
        .command(&bin)
        .args(["apply", "auh1-dev", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["created"], 6, "{doc}");
    let out = pod(true)
        .command(&bin)
        .args(["plan", "auh1-dev", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["exists"], 4, "{doc}");
    assert_eq!(doc["summary"]["pending"], 2, "{doc}");
}

// ----- the hook Jobs, run -----

const K8S_AUD: &str = "https://kubernetes.default.svc.cluster.local";

/// A cluster and a Vault, wired as the runbook's: OpenBao's kubernetes auth asks this API
/// server (over TLS, trusting its CA) to review tokens; role `vault-seed` is bound to the
/// service account `ask/vault-seed` with audience `vault`; ESO's role and policy as the runbook.
struct Cluster {
    kube: FakeKube,
    bao: OpenBao,
    signer: Signer,
    vault_ca: String,
}

impl Cluster {
    fn new() -> Cluster {
        let kube = FakeKube::start_tls();
        kube.answer_token_reviews(Review::Authenticated {
            namespace: "ask".into(),
            name: "vault-seed".into(),
            uid: "7d4e1c2b-0000-4000-8000-00000000abcd".into(),
            audiences: None,
        });
        let bao = OpenBao::dev();
        // The Vault side as docs/in-the-sync.md has it: `vault-seed policy ENV --for seeder`'s policy.
        bao.put_policy("vault-seed", &crate::seeder_policy::printed("seeder").0);
        bao.put_policy("eso-ask-push", &crate::seeder_policy::printed("eso").0);
        // ask-db (an app wave before the secrets app) has pushed the paths it provides.
        bao.ask_db_pushes();
        let call = |path: &str, body: Value| {
            let (s, b) = bao.api("POST", path, Some(&body));
            assert!((200..300).contains(&s), "{path}: {s} {b}");
        };
        call("sys/auth/kubernetes", json!({"type": "kubernetes"}));
        call(
            "auth/kubernetes/config",
            json!({"kubernetes_host": kube.addr, "kubernetes_ca_cert": kube.ca_pem, "disable_local_ca_jwt": true, "token_reviewer_jwt": kube.token}),
        );
        call(
            "auth/kubernetes/role/vault-seed",
            json!({"bound_service_account_names": ["vault-seed"], "bound_service_account_namespaces": ["ask"], "audience": "vault", "token_policies": ["vault-seed"], "token_ttl": "15m"}),
        );
        call(
            "auth/kubernetes/role/eso",
            json!({"bound_service_account_names": ["external-secrets"], "bound_service_account_namespaces": ["external-secrets"], "token_policies": ["eso-ask-push"]}),
        );
        Cluster {
            kube,
            bao,
            signer: Signer::new(),
            vault_ca: fake_kube::some_ca_pem(),
        }
    }

    /// A service-account token of `ns/name` for `audience`.
    fn token(&self, ns: &str, name: &str, audience: &str) -> String {
        self.signer.sign(&jwt::service_account_claims(
            ns,
            name,
            "7d4e1c2b-0000-4000-8000-00000000abcd",
            &[audience],
        ))
    }

    /// Run `job` as its pod: its env, volumes (ConfigMaps from `objs`, `vault-ca` made here,
    /// projected service-account tokens), the API token when it mounts one, its args. Vault's
    /// address is added (the spec's is a real cluster's).
    fn run(&self, job: &Job, objs: &[Value]) -> std::process::Output {
        let ns = job.metadata.namespace.clone().unwrap();
        let spec = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        let sa = spec.service_account_name.clone().unwrap();
        let c = container(job);
        let mut pod = Pod::new()
            .env("VAULT_ADDR", &self.bao.addr)
            .env("NO_COLOR", "1");
        for e in c.env.as_ref().unwrap() {
            pod = pod.env(&e.name, e.value.as_deref().expect("plain env values"));
        }
        for m in c.volume_mounts.as_ref().unwrap() {
            let vol = spec
                .volumes
                .as_ref()
                .unwrap()
                .iter()
                .find(|v| v.name == m.name)
                .unwrap();
            let files: Vec<(String, String)> = if let Some(cm) = &vol.config_map {
                if cm.name == "vault-ca" {
                    vec![("ca.crt".into(), self.vault_ca.clone())]
                } else {
                    let o = find(objs, "ConfigMap", &cm.name);
                    o["data"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect()
                }
            } else if let Some(p) = &vol.projected {
                p.sources
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|s| {
                        let t = s
                            .service_account_token
                            .as_ref()
                            .expect("token sources only");
                        (
                            t.path.clone(),
                            self.token(&ns, &sa, t.audience.as_deref().unwrap()),
                        )
                    })
                    .collect()
            } else {
                panic!("volume {} is not emulated", vol.name)
            };
            pod = pod.dir(&m.mount_path, &files);
        }
        if spec.automount_service_account_token == Some(true) {
            let token = self.token(&ns, &sa, K8S_AUD);
            self.kube.accept_bearer(&token);
            pod = pod.service_account(
                &ServiceAccount {
                    token,
                    ca_pem: self.kube.ca_pem.clone().unwrap(),
                    namespace: ns,
                },
                self.kube.port,
            );
        }
        let bin = common::run::bin();
        let out = pod
            .command(&bin)
            .args(c.args.as_ref().unwrap())
            .output()
            .unwrap();
        assert_ne!(
            out.status.code(),
            Some(SETUP_FAILED),
            "{}",
            text(&out.stderr)
        );
        out
    }
}

fn later() -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::minutes(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// What a request to the API server needs from RBAC: (API group, resource, verb, namespaced);
/// `None` for discovery, which every authenticated user may read (`system:discovery`).
fn needs(r: &fake_kube::SeenRequest) -> Option<(String, String, String, bool)> {
    let segs: Vec<&str> = r.path.trim_matches('/').split('/').collect();
    let (group, namespaced, resource, named) = match segs[..] {
        // OpenBao's, with its reviewer's token: not vault-seed's.
        ["apis", "authentication.k8s.io", "v1", "tokenreviews"] => return None,
        ["api", "v1", "namespaces", _, res] => ("", true, res, false),
        ["api", "v1", "namespaces", _, res, _] => ("", true, res, true),
        ["apis", g, _, "namespaces", _, res] => (g, true, res, false),
        ["apis", g, _, "namespaces", _, res, _] => (g, true, res, true),
        ["apis", g, _, res] => (g, false, res, false),
        ["apis", g, _, res, _] => (g, false, res, true),
        ["api" | "apis" | "version", ..] if segs.len() <= 3 => return None,
        _ => panic!("a request the test cannot map to RBAC: {r:?}"),
    };
    let verb = match (r.method.as_str(), named) {
        ("GET", true) => "get",
        ("GET", false) if r.query.contains("watch=true") => "watch",
        ("GET", false) => "list",
        ("PATCH", _) => "patch",
        (m, _) => panic!("{m} {r:?}"),
    };
    Some((group.into(), resource.into(), verb.into(), namespaced))
}

/// Every (group, resource, verb, namespaced) the bound Role and ClusterRole grant.
fn granted(objs: &[Value]) -> BTreeSet<(String, String, String, bool)> {
    let mut out = BTreeSet::new();
    let bound = |kind: &str, role_kind: &str| -> Vec<String> {
        objs.iter()
            .filter(|o| o["kind"] == kind)
            .filter(|o| {
                o["subjects"].as_array().unwrap().iter().any(|s| {
                    s["kind"] == "ServiceAccount"
                        && s["name"] == "vault-seed"
                        && s["namespace"] == "ask"
                })
            })
            .filter(|o| o["roleRef"]["kind"] == role_kind)
            .map(|o| o["roleRef"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    for (binding, role, namespaced) in [
        ("RoleBinding", "Role", true),
        ("ClusterRoleBinding", "ClusterRole", false),
    ] {
        for name in bound(binding, role) {
            let r = find(objs, role, &name);
            for rule in r["rules"].as_array().unwrap() {
                for g in rule["apiGroups"].as_array().unwrap() {
                    for res in rule["resources"].as_array().unwrap() {
                        for v in rule["verbs"].as_array().unwrap() {
                            out.insert((
                                g.as_str().unwrap().into(),
                                res.as_str().unwrap().into(),
                                v.as_str().unwrap().into(),
                                namespaced,
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn the_hook_jobs_seed_and_verify_as_pods_and_rbac_is_exactly_what_verify_reads() {
    let cluster = Cluster::new();
    let objs = app();
    let apply = job_named(&objs, "vault-seed-apply");
    let verify = job_named(&objs, "vault-seed-verify");

    // PreSync: seeds Vault, logged in with the projected token, without the API token.
    let out = cluster.run(&apply, &objs);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    has(
        &text(&out.stderr),
        "token from kubernetes login at `auth/kubernetes` as role `vault-seed`",
    );
    assert!(cluster
        .bao
        .kv_get("secret", "ask/core-service/auh1-dev/ZITADEL_MASTERKEY")
        .is_some());
    let reviews = cluster.kube.token_reviews();
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0]["spec"]["audiences"], json!(["vault"]));
    let from_apply: Vec<_> = cluster.kube.requests().iter().filter_map(needs).collect();
    assert!(
        from_apply.is_empty(),
        "the PreSync Job reached the API server: {from_apply:?}"
    );

    // Sync: the ExternalSecrets appear, one not synced yet (ESO retries after seeding).
    let kube = &cluster.kube;
    kube.put(fake_kube::real_spec_store(&cluster.bao.addr));
    kube.put(fake_kube::real_spec_external_secret("core-service-secret").ready_synced(&later()));
    kube.put(
        fake_kube::real_spec_external_secret("zitadel-secret").sync_error("2026-01-01T00:00:00Z"),
    );
    kube.add_event(fake_kube::event(
        "ask",
        "ExternalSecret",
        "zitadel-secret",
        "Warning",
        "UpdateFailed",
        "error retrieving secret at .data[0], key: ask/core-service/auh1-dev/ZITADEL_MASTERKEY, err: Secret does not exist",
    ));
    // ESO syncs it once verify has looked at it (its events read): no timing involved.
    let flipped = std::thread::scope(|s| {
        let flipper = s.spawn(|| {
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_secs(120) {
                if kube
                    .requests()
                    .iter()
                    .any(|r| r.path == "/api/v1/namespaces/ask/events")
                {
                    let at = later();
                    kube.update("ExternalSecret", Some("ask"), "zitadel-secret", |o| {
                        fake_kube::set_ready(o, true, "SecretSynced", "secret synced", &at);
                        o["status"]["refreshTime"] = json!(at);
                    });
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            false
        });
        // PostSync: waits until both are Ready.
        let out = cluster.run(&verify, &objs);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        has(
            &stdout,
            format!("ok   kube: https://127.0.0.1:{} (in-cluster)", kube.port),
        );
        has(&stdout, "verify auh1-dev: done");
        flipper.join().unwrap()
    });
    assert!(
        flipped,
        "verify never read the events of the ExternalSecret that was not Ready"
    );

    // The other reads verify makes: a PushSecret, and an ExternalSecret on a ClusterSecretStore
    // (a spec with `push_secrets`).
    let mut variant = objs.clone();
    for o in &mut variant {
        if o["kind"] == "ConfigMap" && o["metadata"]["name"] == "vault-seed-specs" {
            let spec = o["data"]["core-service.toml"].as_str().unwrap().replace(
                "external_secrets = [\"core-service-secret\", \"zitadel-secret\"]",
                "external_secrets = [\"core-service-secret\", \"zitadel-secret\"]\npush_secrets = [\"core-service-push\"]",
            );
            assert!(spec.contains("push_secrets"));
            o["data"]["core-service.toml"] = json!(spec);
        }
    }
    kube.put(fake_kube::push_secret(
        "ask",
        "core-service-push",
        true,
        "Synced",
        "PushSecret synced",
        &later(),
    ));
    kube.update("ExternalSecret", Some("ask"), "zitadel-secret", |o| {
        o["spec"]["secretStoreRef"] =
            json!({"kind": "ClusterSecretStore", "name": "vault-cluster"});
    });
    kube.put(fake_kube::at_vault(
        fake_kube::cluster_secret_store("vault-cluster", true, "Valid", "store validated"),
        &cluster.bao.addr,
    ));
    let out = cluster.run(&verify, &variant);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    has(&text(&out.stdout), "1 PushSecret(s) ok");

    // Every request verify made is granted, and every grant was used.
    let used: BTreeSet<_> = kube.requests().iter().filter_map(needs).collect();
    let rules = granted(&objs);
    assert_eq!(
        used, rules,
        "requests made (left) and rules granted (right) differ"
    );
    assert!(
        !rules.iter().any(|r| r.1 == "secrets"),
        "the Role must not grant Secrets"
    );
}
