//! Issue 45: the README's two runbook sections run as written. Each `$` line of their console
//! blocks goes through bash, unchanged, against the demo's servers: a real OpenBao set up as
//! `scripts/demo` leaves it (ask-db's passwords pushed, the operator's Kubernetes auth role) and
//! the fake Kubernetes API, reached through `KUBECONFIG` as a platform engineer's shell would.
//! `vault` is OpenBao's `bao` (the same CLI); `argocd app sync` has no Argo CD here, so the test
//! plays the sync: what ESO or VSO writes once the Application synced (the fixtures' shapes, as
//! the other modules serve them). A line that shows output is followed by that output in the
//! README: each line of it must be in what the command printed.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::fake_kube::{vso_fixture, FakeKube};
use common::OpenBao;
use serde_json::json;

/// One `$` line of a console block and the lines the README shows under it.
#[derive(Debug)]
struct Line {
    command: String,
    shown: Vec<String>,
}

/// The `$` lines of every console block in the README's section `title`, in order.
fn section(title: &str) -> Vec<Line> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("README.md has no section `{title}`"));
    let body = &readme[start + 1..];
    let body = &body[..body[3..].find("\n## ").map_or(body.len(), |e| e + 3)];
    let mut lines = Vec::new();
    let mut in_console = false;
    for l in body.lines() {
        match l {
            "```console" => in_console = true,
            "```" => in_console = false,
            _ if !in_console => {}
            _ => match l.strip_prefix("$ ") {
                Some(command) => lines.push(Line {
                    command: command.to_string(),
                    shown: Vec::new(),
                }),
                None => lines
                    .last_mut()
                    .expect("output before a command")
                    .shown
                    .push(l.to_string()),
            },
        }
    }
    assert!(!lines.is_empty(), "no console block in `{title}`");
    lines
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A shell as a platform engineer has it: `vault-seed` and `vault` on `PATH`, `VAULT_ADDR` and
/// `VAULT_TOKEN` for the demo's OpenBao, `KUBECONFIG` for the cluster, the working directory
/// holding the repository's spec folders and the files the commands read.
struct Shell {
    dir: tempfile::TempDir,
    env: BTreeMap<String, String>,
}

impl Shell {
    fn new(bao: &OpenBao, kube: &FakeKube, files: &[(&str, &str)]) -> Shell {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(common::run::bin(), bin.join("vault-seed")).unwrap();
        std::os::unix::fs::symlink(common::bao_bin(), bin.join("vault")).unwrap();
        for specs in ["secret-specs", "secret-specs-airgap"] {
            std::os::unix::fs::symlink(root().join(specs), dir.path().join(specs)).unwrap();
        }
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )))
        .unwrap();
        let env = [
            ("PATH", path.to_string_lossy().into_owned()),
            ("HOME", dir.path().display().to_string()),
            ("VAULT_ADDR", bao.addr.clone()),
            ("VAULT_TOKEN", bao.token.clone()),
            ("KUBECONFIG", kube.kubeconfig().display().to_string()),
            ("NO_COLOR", "1".into()),
        ];
        Shell {
            dir,
            env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        }
    }

    /// Run `line` as written; an `export` is kept for the lines after it. Returns stdout and
    /// stderr together, after checking the exit status is 0 and the shown output is there.
    fn run(&mut self, line: &Line) -> String {
        if let Some((k, v)) = line
            .command
            .strip_prefix("export ")
            .and_then(|a| a.split_once('='))
        {
            self.env.insert(k.to_string(), v.to_string());
            return String::new();
        }
        let out = Command::new("bash")
            .args(["-c", &line.command])
            .current_dir(self.dir.path())
            .env_clear()
            .envs(&self.env)
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "`{}` failed:\n{all}", line.command);
        for shown in &line.shown {
            assert!(
                all.contains(shown.trim_end()),
                "`{}` did not print the README's line {shown:?}:\n{all}",
                line.command
            );
        }
        all
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Run the section's lines in order; `sync` plays each `argocd app sync` line.
fn walk(title: &str, shell: &mut Shell, mut sync: impl FnMut(&str)) -> Vec<(String, String)> {
    let mut said = Vec::new();
    for line in section(title) {
        let command = line.command.split("  #").next().unwrap().trim_end();
        if let Some(app) = command.strip_prefix("argocd app sync ") {
            sync(app);
            continue;
        }
        let out = shell.run(&line);
        said.push((line.command.clone(), out));
    }
    said
}

/// What a command printed, found by the start of its line.
fn of<'a>(said: &'a [(String, String)], start: &str) -> &'a str {
    let (_, out) = said
        .iter()
        .find(|(c, _)| c.starts_with(start))
        .unwrap_or_else(|| panic!("no `{start}` line ran"));
    out
}

/// The first runbook (ESO): `apply`, the secrets app's sync, `verify --wait 5m` done with every
/// part (app order included); then the PAT's `set` and the policy the README shows.
#[test]
fn the_first_runbook_runs_as_the_readme_writes_it() {
    let bao = OpenBao::dev();
    bao.ask_db_pushes();
    bao.eso_role(crate::verify::RUNBOOK_POLICY);
    let kube = FakeKube::start();
    let pat = "pat-from-zitadel-Xq7rT2vK9mWz";
    let mut shell = Shell::new(&bao, &kube, &[("pat.txt", pat)]);
    let said = walk("The runbook, with vault-seed", &mut shell, |app| {
        assert_eq!(app, "core-service-secrets");
        crate::verify::eso_synced(&bao, &kube);
    });
    let verify = of(&said, "vault-seed verify auh1-dev --wait 5m");
    assert!(
        verify.contains("verify auh1-dev: done (vault, policy, kube, argocd, consumers checked)"),
        "{verify}"
    );
    let set = of(&said, "vault-seed set auh1-dev IAM_SERVICE__PAT");
    assert!(!set.contains(pat), "{set}");
    let path = "ask/core-service/auh1-dev/IAM_SERVICE__PAT";
    assert_eq!(crate::verify::vault_value(&bao, path, "value"), pat);
}

/// The second runbook (VSO, air-gap): lint, VSO's policy merged and written with `vault`,
/// `apply`, the Harbor robot set before the sync, CNPG's password imported, the sync, and
/// `verify --wait 5m` done (the pull secret of its type); then Phase 10's `set`s.
#[test]
fn the_second_runbook_runs_as_the_readme_writes_it() {
    let bao = OpenBao::dev();
    // VSO's role as the platform has it before core-service: the shared policy `vso-ask`
    // holding another application's grant, which the README's merge keeps.
    let other = "path \"secret/data/ask/other-app\" { capabilities = [\"read\"] }\n";
    bao.vso_role("vso-ask", other);
    let kube = FakeKube::start();
    kube.put(crate::airgap::cnpg_superuser_secret());
    let vault_auth = {
        let mut a = vso_fixture("vaultauth.yaml").remove(0);
        a["spec"]["kubernetes"]["role"] = json!("vso-ask");
        a
    };
    kube.put(vault_auth);
    // The connection VSO's chart makes for the demo's OpenBao.
    let mut connection = vso_fixture("vaultconnection.yaml").remove(0);
    connection["spec"]["address"] = json!(bao.addr);
    kube.put(connection);
    let files = [
        ("name.txt", "robot$core-service+pull"),
        ("token.txt", "harbor-robot-token-4fG7hJ2kL9"),
        ("client-id.txt", "318026411965202435"),
        ("pat.txt", "pat-from-zitadel-Xq7rT2vK9mWz"),
    ];
    let mut shell = Shell::new(&bao, &kube, &files);
    let title = "The second runbook: the air-gap, with the Vault Secrets Operator";
    let said = walk(title, &mut shell, |app| {
        assert_eq!(app, "core-service");
        crate::airgap::vso_synced(&bao, &kube, &later());
    });
    let verify = of(&said, "vault-seed verify auh1-dev --wait 5m");
    assert!(verify.contains("verify auh1-dev: done"), "{verify}");
    let written = std::fs::read_to_string(shell.path().join("vso-ask.hcl")).unwrap();
    assert!(written.contains("secret/data/ask/other-app"), "{written}");
    let (policy, _) = bao.api("GET", "sys/policy/vso-ask", None);
    assert_eq!(policy, 200);
    for (file, text) in files {
        let (path, field) = match file {
            "name.txt" => ("ask/harbor-pull-secret", "robot_name"),
            "token.txt" => ("ask/harbor-pull-secret", "robot_token"),
            "client-id.txt" => ("ask/frontend", "oidc_client_id"),
            _ => ("ask/core-service-secret", "IAM_SERVICE__PAT"),
        };
        assert_eq!(
            crate::verify::vault_value(&bao, path, field),
            text,
            "{path}"
        );
        for (command, out) in &said {
            assert!(!out.contains(text), "`{command}` printed a value:\n{out}");
        }
    }
}

fn later() -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::minutes(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}
