//! `vault-seed man`: the manual pages (roff, clap_mangen), from the same command definition as
//! `--help`. The main page adds what someone who has only the binary needs: the `-o json`
//! documents (JSON OUTPUT); docs/ has the full reference.

use std::path::Path;

use clap::CommandFactory;
use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;

use crate::app::cli::{Cli, ManArgs};
use crate::report::Text;

use super::Failure;

/// Each command's `-o json` document as the man page describes it: its top-level keys, then
/// what the nested ones hold. `tests/suite/cli.rs` checks the keys against real output.
pub const JSON_DOCUMENTS: &[(&str, &[&str], &str)] = &[
    (
        "plan, apply",
        &[
            "command",
            "env",
            "vault_addr",
            "dry_run",
            "results",
            "interrupted",
            "ok",
            "notes",
            "findings",
            "summary",
        ],
        "results: one object per path and field, in spec order: path, mount, spec, field, \
         generator, outcome (created, exists, pending, recreated, extended, invalid, denied, \
         error, skipped; with dry_run: create, recreate, extend; on a path another application \
         provides: provided-present, provided-absent), version (the KV v2 version after the \
         run, or null), written, detail (a reason, never a value), provided_by (the provider, or \
         null). notes: about the run, not one path; findings: the same with code, message, \
         severity. summary counts the outcomes. Written while the run goes: each row when it is \
         known, the keys after results at the end.",
    ),
    (
        "verify",
        &[
            "command", "env", "ok", "strict", "vault", "policy", "kube", "argocd", "consumers",
            "notes", "findings", "checked", "not_checked", "cannot_tell",
        ],
        "A part not asked for is null; a part that could not be checked is {ok: false, error, \
         help}. notes: about the run, not one part; findings: the same with code, message, \
         severity. checked: the parts checked (ok is about these only); not_checked: {part, why, \
         code} \
         for each part left out (why: --only, --skip-kube, no [argocd] section, could not be \
         checked) and for target Secrets under --skip-target-secrets. cannot_tell: {part, \
         count, what, code} for what was checked but the facts could not decide (never a failure). imports (only when a field has \
         from_secret, absent otherwise): ok, server, context, results (path, field, secret, key, \
         status: agrees, pending, differs, not-checked; ok, message). vault.results: path, field, generator, status (valid, pending, missing, deleted, \
         invalid, denied, error, skipped), version, created_time, detail, provided_by; vault.notes, and vault.findings: the same with code, message, severity. \
         kube.provided: the paths other applications provide (path, provided_by, ok, state: \
         absent, invalid, unreadable; push_secret, ready, reason, message, event, explanations). argocd (specs with \
         [argocd]): apps (namespace, name, role, after, ok, exists, app_wave, parent, sync, \
         health, operation, unhealthy, problems, notes), argocd_cm (namespace, name, ok, exists, \
         key, problems). policy: ESO's report (ok covers both operators) and policy.vso, VSO's \
         report of the same shape (null without [vso]). kube.vault_static_secrets: namespace, \
         name, ok, synced, ready, healthy, secret_synced, generation, last_generation, path, \
         type, destination_secret, vault_auth, reconciled_at, message, problems, explanations, \
         notes. kube.objects: stores, PushSecrets, VaultAuths, VaultConnections. consumers: \
         ok, server, context, not_checked (readers not checked, never ok), secrets (namespace, \
         name, source, read, exists, changed_at, changed_by), workloads (kind, namespace, name, \
         ok, checked, secrets, how, restarted_by, fix, problems, notes), problems, notes.",
    ),
    (
        "audit",
        &[
            "command",
            "env",
            "ok",
            "kube_checked",
            "mount_scanned",
            "scanned",
            "findings",
            "counts",
        ],
        "findings, worst first: kind (unnamed-path, marked-path, unnamed-field, \
         orphan-consumer, not-checked, note), severity (orphan, not-checked, note), place, \
         message, and the kind's facts (mount, path, app, spec_file, secret, field, object_kind, \
         namespace, name, reads, what, why); never a value. scanned: folders, lists, \
         secrets_read, metadata_reads, mounts_scanned, namespaces, external_secrets, \
         vault_static_secrets, ignored (paths, objects: what --ignore left out). counts: \
         orphans, not_checked, notes.",
    ),
    (
        "set, rotate",
        &[
            "command",
            "env",
            "path",
            "fields",
            "outcome",
            "old_version",
            "new_version",
            "ok",
            "readers",
            "readers_checked",
            "readers_note",
            "restarts",
            "restarts_note",
            "findings",
            "followed",
        ],
        "outcome: set, replaced-placeholder, added, unchanged, rotated, would-rotate. readers: \
         kind, namespace, name, field, secret_key, secret, via, pinned_version, certain (what \
         reads the value replaced); readers_checked: false when the cluster was not asked or \
         could not tell, readers_note says why. restarts: kind, namespace, name, secret, how \
         (env, sub-path; null when the workload could not be read), restarted_by, \
         restarter_problem (only when what it relies on restarts nothing), command (the \
         workloads that keep the old value until restarted); restarts_note: why they were not \
         looked for. findings: code, message, severity (warning, note): each sentence said on \
         stderr about the readers, the workloads and the next step. followed: path, fields, old_version, new_version, error (the secrets whose \
         copies and templates of the changed fields were made again after it; error when one \
         could not be written, and the exit code is 1).",
    ),
    (
        "import",
        &[
            "command", "env", "dry_run", "ok", "counts", "results", "notes", "findings",
        ],
        "results: one object per from_secret field, in spec order: path, field, secret \
         (namespace/name), key, outcome (imported, replaced, exists, refused, not-done, \
         not-checked; with dry_run: would-import, would-replace), old_version, new_version \
         (KV v2, or null), detail (a reason, never a value). counts: fields per outcome. \
         notes: about the run, not one field; findings: the same with code, message, \
         severity.",
    ),
    (
        "move",
        &[
            "command",
            "env",
            "path",
            "from",
            "fields",
            "new_version",
            "ok",
            "notes",
        ],
        "path: the spec's full path, where the data was copied with cas=0; from: the old full \
         path, kept and marked vault-seed/moved-to; fields: the fields copied (never a value); \
         new_version: the version written (KV v2).",
    ),
    (
        "policy",
        &["env", "policy", "rules"],
        "policy: the HCL text; rules: path, capabilities. With --merge: merge_policy, exists, \
         merged (the text to write back), added (rules as in rules, each with constraints when it \
         carries some: the HCL lines that set them).",
    ),
    (
        "lint",
        &["ok", "specs", "errors"],
        "specs: file, name, environments, secrets, fields; errors is empty (specs with problems \
         are a failure, whose errors list them: message, location (file, line, col), help).",
    ),
    (
        "gen",
        &["generator", "value"],
        "The one document that holds a value, on purpose.",
    ),
];

/// A page, or every page written into a directory (their paths).
pub fn run(args: &ManArgs) -> Result<Text, Failure> {
    let main = root_command();
    if let Some(dir) = &args.dir {
        return write_all(&main, dir);
    }
    match &args.command {
        None => Ok(Text(main_page(&main))),
        Some(name) => match main.find_subcommand(name) {
            Some(sub) => Ok(Text(render(sub))),
            None => Err(Failure::usage(format!("no command `{name}`"))
                .help(format!("one of: {}", command_names(&main).join(", ")))),
        },
    }
}

/// The command tree as the pages show it: built (global options propagated, each subcommand
/// named `vault-seed-<name>`), without clap's `help` subcommand.
fn root_command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn command_names(main: &clap::Command) -> Vec<&str> {
    main.get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name())
        .collect()
}

fn render(cmd: &clap::Command) -> String {
    let mut out = Vec::new();
    Man::new(cmd.clone())
        .source(format!("vault-seed {}", env!("CARGO_PKG_VERSION")))
        .render(&mut out)
        .expect("writing to memory cannot fail");
    String::from_utf8(out).expect("clap_mangen writes UTF-8")
}

/// vault-seed(1): clap_mangen's sections, the `--help` epilogue (examples, connection, exit
/// codes) under NOTES, and JSON OUTPUT.
pub fn main_page(main: &clap::Command) -> String {
    let man = Man::new(main.clone());
    // Each section into memory (which cannot fail), as text.
    let section = |render: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| {
        let mut out = Vec::new();
        render(&mut out).expect("writing to memory cannot fail");
        String::from_utf8(out).expect("clap_mangen writes UTF-8")
    };
    let mut page = String::new();
    page.push_str(&section(&|w| man.render_title(w)));
    page.push_str(&section(&|w| man.render_name_section(w)));
    page.push_str(&section(&|w| man.render_synopsis_section(w)));
    page.push_str(&section(&|w| man.render_description_section(w)));
    page.push_str(&section(&|w| man.render_options_section(w)));
    page.push_str(&section(&|w| man.render_subcommands_section(w)));
    page.push_str(&section(&|w| man.render_extra_section(w)).replacen(".SH EXTRA", ".SH NOTES", 1));
    let mut roff = Roff::new();
    roff.control("SH", ["JSON OUTPUT"]);
    roff.text([roman(
        "With -o json (--output json) a command prints one JSON document on stdout; diagnostics \
         stay on stderr. ok is false exactly when the exit code is 1. A command that fails (exit 1 \
         or 2) prints {command, ok: false, error, help}, with errors when several problems are \
         behind it (a spec's: message, location, help). Keys are only ever added; the \
         documentation (docs/ in the repository: each command's page) describes each field in full. The top-level keys of each document, then what \
         the nested ones hold:",
    )]);
    for (commands, keys, details) in JSON_DOCUMENTS {
        roff.control("TP", []);
        roff.text([bold(*commands)]);
        roff.text([roman(format!("{}.", keys.join(", ")))]);
        roff.control("br", []);
        roff.text([roman(*details)]);
    }
    page.push_str(&roff.to_roff());
    page.push_str(&section(&|w| man.render_version_section(w)));
    page
}

fn write_all(main: &clap::Command, dir: &Path) -> Result<Text, Failure> {
    let cannot =
        |what: String| Failure::new(what).help("give `--dir` a directory you may write to");
    std::fs::create_dir_all(dir)
        .map_err(|e| cannot(format!("cannot create `{}`: {e}", dir.display())))?;
    let mut pages = vec![("vault-seed.1".to_string(), main_page(main))];
    for sub in main.get_subcommands().filter(|c| !c.is_hide_set()) {
        pages.push((format!("vault-seed-{}.1", sub.get_name()), render(sub)));
    }
    let mut written = Vec::new();
    for (name, text) in pages {
        let path = dir.join(&name);
        replace_file(dir, &name, text.as_bytes())
            .map_err(|e| cannot(format!("cannot write `{}`: {e}", path.display())))?;
        written.push(path.display().to_string());
    }
    written.push(String::new());
    Ok(Text(written.join("\n")))
}

/// `dir/name` holding `bytes`, never written through what is there: a new file is created
/// beside it (`create_new`: `O_EXCL`, which fails on any existing name, a symbolic link
/// included) and renamed over it, which replaces a link planted at `name` instead of the file
/// it points to.
fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    // From here the temporary file is ours: removed if anything fails.
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temp, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
