//! The command line itself: help that teaches (headings, defaults, where the JSON schema is),
//! shell completions that the shells accept and that complete, and a man page that renders.
//!
//! bash, zsh, fish and groff are required: a missing one is a failure (`.ci/run` installs them,
//! `scripts/test` names the missing ones before it starts), unless `VAULT_SEED_TEST_SKIP` names
//! it (`VAULT_SEED_TEST_SKIP=zsh,fish`), and then each check left out says so. PowerShell and
//! elvish cannot be installed here: their scripts' structure is checked.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::{repo_specs, OpenBao, Out, Run};

/// `name` on PATH, a failure when it is not; `None` (with a note) only when
/// `VAULT_SEED_TEST_SKIP` names it, the one way to leave its checks out.
fn tool(name: &str) -> Option<PathBuf> {
    let skipped = std::env::var("VAULT_SEED_TEST_SKIP")
        .unwrap_or_default()
        .split(',')
        .any(|t| t.trim() == name);
    if skipped && name != "bash" {
        eprintln!("note: `{name}`'s check is left out (VAULT_SEED_TEST_SKIP names it)");
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    Some(found.unwrap_or_else(|| {
        panic!(
            "`{name}` is not on PATH and the tests need it (Debian: apt-get install zsh fish \
             groff-base; .ci/run installs them); VAULT_SEED_TEST_SKIP={name} leaves its check out"
        )
    }))
}

/// The sections of a `--help` text: heading -> its lines.
fn sections(help: &str) -> HashMap<String, String> {
    let mut out: HashMap<String, String> = HashMap::new();
    let mut current = String::from("(top)");
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            current = line.trim_end_matches(':').to_string();
            continue;
        }
        let entry = out.entry(current.clone()).or_default();
        entry.push_str(line);
        entry.push('\n');
    }
    out
}

/// The commands whose `--help` is snapshotted (a command added later is checked for its
/// headings all the same, see [`commands`]).
const SUBCOMMANDS: &[&str] = &[
    "lint",
    "gen",
    "plan",
    "apply",
    "verify",
    "set",
    "rotate",
    "import",
    "policy",
    "completions",
    "man",
];
const WITH_VAULT: &[&str] = &["plan", "apply", "verify", "set", "rotate", "import"];

const GLOBAL_FLAGS: [&str; 4] = [
    "--specs <DIR>",
    "--output <FORMAT>",
    "--color <WHEN>",
    "--verbose",
];
const VAULT_FLAGS: [&str; 7] = [
    "--address <URL>",
    "--ca-cert <FILE>",
    "--ca-path <DIR>",
    "--namespace <NS>",
    "--skip-verify",
    "--timeout <DURATION>",
    "--insecure-http",
];

/// The section `heading` of a command's help, which must hold every one of `flags`.
fn under<'a>(s: &'a HashMap<String, String>, heading: &str, flags: &[&str], cmd: &str) -> &'a str {
    let text = s
        .get(heading)
        .unwrap_or_else(|| panic!("{cmd} --help has no `{heading}:` heading"));
    for flag in flags {
        assert!(text.contains(flag), "{cmd}: {flag} not under {heading}");
    }
    text
}

/// Every command the top-level `--help` lists (but `help`).
fn commands() -> Vec<String> {
    let help = Run::offline().args(["--help"]).output().stdout_text();
    let list = sections(&help)
        .remove("Commands")
        .expect("a Commands: section");
    let names: Vec<String> = list
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    for cmd in SUBCOMMANDS {
        assert!(names.iter().any(|n| n == cmd), "--help does not list {cmd}");
    }
    names
}

/// Every command's `--help` puts the global options under their own heading, and the Vault
/// connection options under another, apart from the command's own (before, `-v` sat between
/// `--ca-cert` and `--ca-path`). Each help text is snapshotted.
#[test]
fn every_help_separates_global_and_vault_options_from_the_commands_own() {
    for cmd in &commands() {
        let cmd = cmd.as_str();
        let out = Run::offline().args([cmd, "--help"]).output();
        let help = out.stdout_text();
        let s = sections(&help);
        under(&s, "Global options", &GLOBAL_FLAGS, cmd);
        let own = s.get("Options").map(String::as_str).unwrap_or_default();
        assert!(
            !own.contains("--verbose") && !own.contains("--specs"),
            "{cmd}: global options among the command's own:\n{own}"
        );
        if WITH_VAULT.contains(&cmd) || s.contains_key("Vault connection") {
            let vault = under(&s, "Vault connection", &VAULT_FLAGS, cmd);
            assert!(!vault.contains("--verbose") && !own.contains("--ca-cert"));
            if cmd == "apply" {
                assert!(
                    own.contains("--no-metadata"),
                    "apply's own option moved:\n{help}"
                );
            }
        } else {
            assert!(!help.contains("--ca-cert"), "{cmd} shows Vault options");
        }
        if SUBCOMMANDS.contains(&cmd) {
            insta::assert_snapshot!(format!("help_{cmd}"), help);
        }
    }
}

/// Defaults show in help: clap's own `[default: ...]` and the generator options' (which are
/// optional flags, so the text states them; `src/app/cli.rs` checks it against the constants).
#[test]
fn help_shows_defaults_and_where_the_json_schema_is() {
    let gen = Run::offline()
        .args(["gen", "--help"])
        .output()
        .stdout_text();
    let gen = gen.split_whitespace().collect::<Vec<_>>().join(" ");
    for d in [
        "[default: 32]",
        "[default: lower,upper,digit]",
        "[default: placeholder]",
    ] {
        assert!(gen.contains(d), "gen --help lacks {d}:\n{gen}");
    }
    let apply = Run::offline()
        .args(["apply", "--help"])
        .output()
        .stdout_text();
    assert!(apply.contains("[default: 16]"), "{apply}");
    assert!(apply.contains("[default: secret-specs]"), "{apply}");
    // Someone with only the binary learns where the `-o json` schema is.
    let short = Run::offline().args(["apply", "-h"]).output().stdout_text();
    let words = short.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("`vault-seed man`, section JSON OUTPUT"),
        "-h does not say where the schema is:\n{short}"
    );
}

/// Global options work before and after the command (the CLI contract of issue 16).
#[test]
fn global_options_work_before_and_after_the_command() {
    let specs = repo_specs();
    let specs = specs.to_str().unwrap();
    for (before, after) in [
        (
            vec!["--specs", specs, "-o", "json", "lint"],
            vec!["lint", "--specs", specs, "-o", "json"],
        ),
        (
            vec!["--specs", specs, "--color", "never", "policy", "auh1-dev"],
            vec!["policy", "auh1-dev", "--color", "never", "--specs", specs],
        ),
    ] {
        let (a, b) = (
            Run::offline().args(&before).output(),
            Run::offline().args(&after).output(),
        );
        assert_eq!(a.stdout_text(), b.stdout_text(), "{before:?} vs {after:?}");
        assert!(!a.stdout_text().is_empty());
    }
}

/// `apply --dry-run` / `--dryrun` is a usage error that points to `plan` (before: "to pass
/// '--dryrun' as a value, use '-- --dryrun'"), and nothing reaches Vault.
#[test]
fn apply_dry_run_points_to_plan_and_sends_nothing() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let specs = repo_specs();
    for flag in ["--dry-run", "--dryrun"] {
        let out = Run::offline()
            .addr(&addr)
            .token("not-a-real-token")
            .specs(&specs)
            .args(["apply", "auh1-dev", flag])
            .status(2)
            .output();
        let err = out.stderr_text();
        assert!(
            err.contains(&format!("unexpected argument '{flag}'"))
                && err.contains("`vault-seed plan ENV` shows what apply would write"),
            "{flag}: {err}"
        );
        assert!(
            !err.contains("as a value"),
            "{flag}: clap's misleading tip:\n{err}"
        );
        assert!(out.stdout_text().is_empty());
    }
    assert!(
        listener.accept().is_err(),
        "apply --dry-run connected to Vault"
    );
}

/// The bash script parses, and completes: commands, and a command's own options (which
/// clap_complete's script misses for a hyphenated binary name, clap-rs/clap#6421).
#[test]
fn bash_completion_parses_and_completes_commands_and_their_options() {
    let bash = tool("bash").expect("bash");
    let script = Run::offline()
        .args(["completions", "bash"])
        .output()
        .stdout_text();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vault-seed.bash");
    std::fs::write(&file, &script).unwrap();
    let check = Out::from(Command::new(&bash).arg("-n").arg(&file).output().unwrap());
    assert!(check.status.success(), "bash -n: {}", check.stderr_text());
    // Complete as bash's programmable completion calls the function: words, index, then
    // (command, current word, previous word).
    let complete = |words: &[&str]| -> Vec<String> {
        let cword = words.len() - 1;
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let program = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; _vault__seed vault-seed '{}' '{}'; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display(),
            quoted.join(" "),
            words[cword],
            words[cword - 1]
        );
        let out = Out::from(Command::new(&bash).args(["-c", &program]).output().unwrap());
        assert!(out.status.success(), "{words:?}: {}", out.stderr_text());
        let mut words: Vec<String> = out
            .stdout_text()
            .lines()
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        words.sort();
        words
    };
    assert_eq!(complete(&["vault-seed", "ap"]), ["apply"]);
    assert_eq!(complete(&["vault-seed", "co"]), ["completions"]);
    assert_eq!(
        complete(&["vault-seed", "apply", "--ca"]),
        ["--ca-cert", "--ca-path"]
    );
    assert_eq!(
        complete(&["vault-seed", "verify", "--skip-"]),
        ["--skip-kube", "--skip-target-secrets", "--skip-verify"]
    );
    assert_eq!(complete(&["vault-seed", "completions", "f"]), ["fish"]);
    // No flag that --help does not show (apply has no --dry-run).
    assert!(complete(&["vault-seed", "apply", "--d"]).is_empty());
}

/// zsh and fish accept their scripts; fish also completes with it. PowerShell and elvish (not
/// installable here) get scripts that register a completer for `vault-seed` and know its
/// commands.
#[test]
fn other_shells_accept_their_completion_scripts() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let out = Run::offline().args(["completions", shell]).output();
        let script = out.stdout_text();
        for word in ["vault-seed", "apply", "verify", "completions", "ca-cert"] {
            assert!(script.contains(word), "{shell} script lacks {word}");
        }
        let file = dir.path().join(format!("vault-seed.{shell}"));
        std::fs::write(&file, &script).unwrap();
        match shell {
            "zsh" | "fish" => {
                let Some(bin) = tool(shell) else { continue };
                let check = Out::from(Command::new(&bin).arg("-n").arg(&file).output().unwrap());
                assert!(
                    check.status.success(),
                    "{shell} -n: {}",
                    check.stderr_text()
                );
                if shell == "fish" {
                    let program = format!(
                        "source '{}'; complete -C 'vault-seed apply --ca'",
                        file.display()
                    );
                    let out =
                        Out::from(Command::new(&bin).args(["-c", &program]).output().unwrap());
                    let words: Vec<&str> = std::str::from_utf8(&out.stdout)
                        .unwrap()
                        .lines()
                        .map(|l| l.split('\t').next().unwrap_or_default())
                        .collect();
                    assert_eq!(words, ["--ca-cert", "--ca-path"], "{}", out.stderr_text());
                } else {
                    assert!(script.starts_with("#compdef vault-seed"), "{script}");
                }
            }
            "powershell" => {
                assert!(
                    script.contains("Register-ArgumentCompleter -Native -CommandName 'vault-seed'")
                );
                assert!(script.contains("'vault-seed;apply'"));
            }
            _ => assert!(script.contains("edit:completion:arg-completer[vault-seed]")),
        }
    }
}

/// The roff of a page renders without groff warnings; returns it as plain text (or the roff
/// itself when groff is not installed).
fn rendered(roff: &str) -> String {
    let Some(groff) = tool("groff") else {
        return roff.to_string();
    };
    let mut child = Command::new(groff)
        .args(["-man", "-Tascii", "-ww", "-P-cbou", "-rLL=200n"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(roff.as_bytes())
        .unwrap();
    let out = Out::from(child.wait_with_output().unwrap());
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "groff warns:\n{}",
        out.stderr_text()
    );
    out.stdout_text()
}

/// `vault-seed man` prints vault-seed(1): its sections, the global options under their heading,
/// every command, and JSON OUTPUT; it renders with groff without a warning.
#[test]
fn man_page_has_its_sections_and_renders() {
    let out = Run::offline().args(["man"]).output();
    let roff = out.stdout_text();
    assert!(roff.contains(".TH vault-seed 1 "), "{roff}");
    for section in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH DESCRIPTION",
        ".SH \"GLOBAL OPTIONS\"",
        ".SH SUBCOMMANDS",
        ".SH NOTES",
        ".SH \"JSON OUTPUT\"",
        ".SH VERSION",
    ] {
        assert!(roff.contains(section), "man page lacks {section}");
    }
    let text = rendered(&roff);
    for cmd in commands() {
        assert!(
            text.contains(&format!("vault-seed-{cmd}(1)")),
            "man page does not list {cmd}"
        );
    }
    for word in [
        "JSON OUTPUT",
        "vault_addr",
        "Exit codes",
        "VAULT_SEED_SPECS",
    ] {
        assert!(text.contains(word), "man page lacks {word}:\n{text}");
    }
}

/// `vault-seed man --dir DIR` writes one page per command (what the README's install line
/// does); `man COMMAND` prints the same page; an unknown command is a usage error.
#[test]
fn man_writes_a_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("man1");
    let out = Run::offline()
        .args(["man", "--dir", target.to_str().unwrap()])
        .output();
    let mut names: BTreeSet<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.remove("vault-seed.1"));
    let expected: BTreeSet<String> = commands()
        .iter()
        .map(|c| format!("vault-seed-{c}.1"))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(out.stdout_text().lines().count(), expected.len() + 1);
    for name in &expected {
        let roff = std::fs::read_to_string(target.join(name)).unwrap();
        let text = rendered(&roff);
        assert!(
            text.contains("GLOBAL OPTIONS"),
            "{name} lacks GLOBAL OPTIONS"
        );
    }
    let apply = std::fs::read_to_string(target.join("vault-seed-apply.1")).unwrap();
    assert!(apply.contains(".SH \"VAULT CONNECTION\"") && apply.contains("ca\\-cert"));
    assert!(
        apply.contains(".TH vault-seed-apply 1  \"vault-seed "),
        "{apply}"
    );
    assert_eq!(
        Run::offline().args(["man", "apply"]).output().stdout_text(),
        apply
    );

    let out = Run::offline().args(["man", "nope"]).status(2).output();
    assert!(
        out.stderr_text().contains("no command `nope`")
            && out.stderr_text().contains("help: one of: lint"),
        "{}",
        out.stderr_text()
    );
}

/// `man --dir DIR` never writes through a symbolic link planted in DIR: the page replaces the
/// link, and the file it pointed at is left as it was (a dangling link too creates nothing).
#[test]
fn man_dir_never_writes_through_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("man1");
    std::fs::create_dir(&target).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep me\n").unwrap();
    std::os::unix::fs::symlink(&victim, target.join("vault-seed.1")).unwrap();
    let nowhere = dir.path().join("created-through-a-link");
    std::os::unix::fs::symlink(&nowhere, target.join("vault-seed-apply.1")).unwrap();
    Run::offline()
        .args(["man", "--dir", target.to_str().unwrap()])
        .output();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    assert!(
        !nowhere.exists(),
        "a page was written through a dangling link"
    );
    for page in ["vault-seed.1", "vault-seed-apply.1"] {
        let meta = std::fs::symlink_metadata(target.join(page)).unwrap();
        assert!(meta.file_type().is_file(), "{page} is still a link");
        assert!(std::fs::read_to_string(target.join(page))
            .unwrap()
            .starts_with(".ie"));
    }
    // Nothing but the pages is left in DIR (no temporary file).
    let left = std::fs::read_dir(&target).unwrap().count();
    assert_eq!(left, commands().len() + 1);
}

/// The top-level keys the man page's JSON OUTPUT lists per command, read from the page.
pub(crate) fn documented_keys() -> HashMap<String, BTreeSet<String>> {
    let roff = Run::offline().args(["man"]).output().stdout_text();
    let section = roff
        .split(".SH \"JSON OUTPUT\"")
        .nth(1)
        .expect("JSON OUTPUT")
        .split("\n.SH ")
        .next()
        .unwrap();
    let mut docs = HashMap::new();
    let lines: Vec<&str> = section.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if *line != ".TP" {
            continue;
        }
        let commands = lines[i + 1]
            .trim_start_matches("\\fB")
            .trim_end_matches("\\fR");
        let keys: BTreeSet<String> = lines[i + 2]
            .trim_end_matches('.')
            .split(", ")
            .map(|k| k.replace("\\_", "_"))
            .collect();
        for command in commands.split(", ") {
            docs.insert(command.to_string(), keys.clone());
        }
    }
    docs
}

pub(crate) fn keys_of(out: &Out) -> BTreeSet<String> {
    out.json()
        .as_object()
        .expect("a JSON object")
        .keys()
        .cloned()
        .collect()
}

/// What the man page says about each `-o json` document is what the commands print: the
/// top-level keys of lint, gen, policy (offline), plan, apply, verify and rotate (against a real
/// OpenBao), and of a command that stops before it has results. No secret value appears in any
/// output but `gen`'s.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn json_documents_have_the_keys_the_man_page_lists() {
    let docs = documented_keys();
    let specs = repo_specs();
    let specs = specs.to_str().unwrap();
    let expect = |command: &str, out: &Out| {
        let want = docs
            .get(command)
            .unwrap_or_else(|| panic!("man page documents no `{command}`: {docs:?}"));
        assert_eq!(
            &keys_of(out),
            want,
            "`{command} -o json` keys differ from the man page"
        );
    };
    expect(
        "lint",
        &Run::offline()
            .args(["--specs", specs, "-o", "json", "lint"])
            .output(),
    );
    expect(
        "gen",
        &Run::offline().args(["-o", "json", "gen", "hex"]).output(),
    );
    expect(
        "policy",
        &Run::offline()
            .args(["--specs", specs, "-o", "json", "policy", "auh1-dev"])
            .output(),
    );

    let bao = OpenBao::dev();
    let mut outputs = Vec::new();
    let mut seed = |args: &[&str], code: i32| {
        let out = Run::new(&bao)
            .args(["--specs", specs, "-o", "json"])
            .args(args)
            .status(code)
            .output();
        outputs.push(out.clone());
        out
    };
    let plan = seed(&["plan", "auh1-dev"], 0);
    let apply = seed(&["apply", "auh1-dev"], 0);
    // Not done: the paths apply does not write (placeholders, values from elsewhere) wait.
    let verify = seed(&["verify", "auh1-dev", "--skip-kube"], 1);
    let rotate = seed(
        &[
            "rotate",
            "auh1-dev",
            "APP__CORE_SERVICES_MACHINE_TOKEN",
            "--dry-run",
        ],
        0,
    );
    let audit = seed(&["audit", "auh1-dev", "--skip-kube"], 0);
    expect("plan", &plan);
    expect("apply", &apply);
    expect("verify", &verify);
    expect("rotate", &rotate);
    expect("audit", &audit);

    // Stopped before results: Vault does not answer.
    let closed = format!("http://127.0.0.1:{}", common::free_port());
    let failed = Run::offline()
        .addr(&closed)
        .token("not-a-real-token")
        .args(["--specs", specs, "-o", "json", "plan", "auh1-dev"])
        .status(1)
        .output();
    let want: BTreeSet<String> = ["command", "ok", "error", "help"].map(String::from).into();
    assert_eq!(keys_of(&failed), want);
    let roff = Run::offline().args(["man"]).output().stdout_text();
    assert!(roff.contains("{command, ok: false, error, help}"));

    // No value written by apply shows in any output.
    let doc = apply.json();
    let mut values = Vec::new();
    for row in doc["results"].as_array().unwrap() {
        if row["generator"] == "placeholder" || row["provided_by"].is_string() {
            continue; // a marker, not a secret; or another application's path, never written
        }
        let mount = row["mount"].as_str().unwrap();
        let path = row["path"].as_str().unwrap();
        let rel = path.strip_prefix(&format!("{mount}/")).unwrap();
        let (fields, _) = bao.kv_get(mount, rel).expect("written");
        values.extend(
            fields
                .values()
                .filter_map(|v| v.as_str().map(str::to_string)),
        );
    }
    assert!(values.len() >= 4, "{values:?}");
    for out in outputs.iter().chain([&failed]) {
        let all = out.all_text();
        for v in &values {
            if v.len() >= 8 {
                assert!(
                    !all.contains(v.as_str()),
                    "a secret value appears in output"
                );
            }
        }
    }
}
