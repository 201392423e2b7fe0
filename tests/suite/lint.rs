//! `vault-seed lint` on the real spec and on broken specs: every problem with file:line:col,
//! exit code 2, snapshots of the error text.

use crate::common;

use std::sync::atomic::Ordering;

use common::{repo_specs, Run, Silent};

/// Run `lint` on one spec file written into a scratch `specs/` folder; (exit code, stdout, stderr).
fn lint_one(toml: &str) -> (i32, String, String) {
    lint_files(&[("broken.toml", toml)])
}

fn lint_files(files: &[(&str, &str)]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join("specs").join(name), text).unwrap();
    }
    let out = Run::home(dir.path())
        .current_dir(dir.path())
        .args(["lint", "--specs", "specs"])
        .any_status()
        .output();
    // The caller asserts the code.
    (out.code(), out.stdout_text(), out.stderr_text())
}

const GOOD: &str = r#"
name = "demo"
[vault]
mount = "secret"
path = "team/demo/{env}"
[environments.dev]
vault_addr = "http://127.0.0.1:8200"
[environments.prod]
vault_addr = "http://127.0.0.1:8200"
[secrets.SALT]
description = "a salt"
fields.password = { generator = "hex32" }
"#;

#[test]
fn real_spec_passes() {
    let out = Run::home("/nonexistent")
        .args(["lint", "--specs"])
        .arg(repo_specs())
        .output();
    let stdout = out.stdout_text();
    assert!(
        stdout.contains("`core-service`, 9 secret(s), 9 field(s), environments: auh1-dev"),
        "{stdout}"
    );
}

#[test]
fn good_spec_passes_with_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    std::fs::write(dir.path().join("specs/demo.toml"), GOOD).unwrap();
    let out = Run::home(dir.path())
        .current_dir(dir.path())
        .args(["lint", "--specs", "specs", "--output", "json"])
        .output();
    let v = out.json();
    assert_eq!(v["ok"], true);
    assert_eq!(v["specs"][0]["name"], "demo");
    assert_eq!(
        v["specs"][0]["environments"],
        serde_json::json!(["dev", "prod"])
    );
}

#[test]
fn unknown_key_with_suggestion() {
    let (code, _, err) =
        lint_one(&GOOD.replace("description = \"a salt\"", "descripton = \"a salt\""));
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn unknown_generator() {
    let (code, _, err) = lint_one(&GOOD.replace("\"hex32\"", "\"hex33\""));
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn bad_lengths() {
    let spec = format!(
        "{GOOD}\n[secrets.SHORT]\ndescription = \"x\"\nfields.a = {{ generator = \"hex\", bytes = 4 }}\nfields.b = {{ generator = \"password\", length = 5 }}\nfields.c = {{ generator = \"fernet\", bytes = 32 }}\n"
    );
    let (code, _, err) = lint_one(&spec);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn duplicate_field_is_reported() {
    let spec = GOOD.replace(
        "fields.password = { generator = \"hex32\" }",
        "fields.password = { generator = \"hex32\" }\nfields.password = { generator = \"fernet\" }",
    );
    let (code, _, err) = lint_one(&spec);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn duplicate_path_across_files() {
    let other = GOOD.replace("name = \"demo\"", "name = \"demo2\"");
    let (code, _, err) = lint_files(&[("a.toml", GOOD), ("b.toml", &other)]);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn env_less_template_used_by_several_environments() {
    let (code, _, err) = lint_one(&GOOD.replace("team/demo/{env}", "team/demo"));
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn override_of_unknown_secret_and_hostile_names() {
    let spec = format!(
        "{GOOD}\n[environments.dev.secrets.SALTT]\nskip = true\n\n[secrets.\"../escape\"]\ndescription = \"x\"\nfields.value = {{ generator = \"uuid\" }}\n"
    );
    let (code, _, err) = lint_one(&spec);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn all_problems_of_a_file_in_one_run() {
    let spec = r#"
[vault]
mount = "/secret/"
path = "a//b"
colour = "blue"
[environments."bad env"]
[secrets.X]
fields.v = { generator = "nope" }
[secrets.Y]
description = "y"
fields.v = "hex32"
"#;
    let (code, _, err) = lint_one(spec);
    assert_eq!(code, 2);
    for needle in [
        "mount `/secret/` starts or ends with `/`",
        "path template `a//b` contains `//`",
        "unknown key `colour`",
        "environment name `bad env` contains a space",
        "secret `X` has no `description`",
        "unknown generator `nope`",
        "must be a table, not a string",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    // Every located problem carries file:line:col.
    let located = err
        .lines()
        .filter(|l| l.trim_start().starts_with("--> specs/broken.toml:"))
        .count();
    assert!(located >= 7, "{err}");
    insta::assert_snapshot!(err);
}

#[test]
fn syntax_error_has_location() {
    let (code, _, err) = lint_one("[vault\nmount = 1\n");
    assert_eq!(code, 2);
    assert!(err.contains("--> specs/broken.toml:1:"), "{err}");
}

#[test]
fn empty_directory_is_a_usage_error() {
    let (code, _, err) = lint_files(&[]);
    assert_eq!(code, 2);
    assert!(err.contains("no spec files (`*.toml`) in `specs`"), "{err}");
}

#[test]
fn help_lists_planned_commands() {
    let out = Run::home("/nonexistent").arg("--help").output();
    let text = out.stdout_text();
    for cmd in [
        "lint", "gen", "plan", "apply", "verify", "set", "rotate", "import", "policy", "audit",
        "order",
    ] {
        assert!(
            text.contains(&format!("  {cmd} ")),
            "--help lacks {cmd}:\n{text}"
        );
    }
    insta::assert_snapshot!(text);
}

/// A spec whose secrets all sit in one inline table on one line (issue 12, finding 6).
fn one_line_spec(n: usize) -> String {
    let entries: Vec<String> = (0..n)
        .map(|i| format!("S{i} = {{ fields.password = {{ generator = \"hex32\" }} }}"))
        .collect();
    format!(
        "name = \"big\"\nvault = {{ mount = \"secret\", path = \"big/{{env}}\" }}\nenvironments = {{ dev = {{ vault_addr = \"http://127.0.0.1:8200\" }} }}\nsecrets = {{ {} }}\n",
        entries.join(", ")
    )
}

/// Found by the attacker's probe: each diagnostic copied the whole source line, so a 1 MB
/// one-line spec with 20,000 problems needed about 20 GB. Now each shows a window of the line,
/// 50 are shown and the rest counted, and the run fits in 256 MiB of address space (the old code
/// ran out of memory at 1 GiB).
#[test]
fn one_line_spec_with_thousands_of_problems_has_bounded_output_and_memory() {
    let n = 20_000;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    std::fs::write(dir.path().join("specs/big.toml"), one_line_spec(n)).unwrap();
    let bin = common::run::bin();
    let run = |extra: &[&str]| {
        let out = std::process::Command::new("sh")
            .arg("-c")
            // The limit is on the child's address space: an upper bound of its peak RSS.
            .arg("ulimit -v 262144 && exec \"$0\" \"$@\"")
            .arg(&bin)
            .args(["lint", "--specs", "specs"])
            .args(extra)
            .current_dir(dir.path())
            .env_clear()
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        common::Out::from(out)
    };
    let out = run(&[]).expect_code(2);
    let err = out.stderr_text();
    assert!(err.len() < 40_000, "{} bytes of diagnostics", err.len());
    assert_eq!(err.matches("has no `description`").count(), 50, "{err}");
    assert!(
        err.contains(&format!("… and {} more problems", n - 50)),
        "{err}"
    );
    assert!(
        err.contains(&format!("error: {n} problem(s) in the specs")),
        "{err}"
    );
    // Every shown line is a window of the source line, not the line itself.
    assert!(err.lines().all(|l| l.chars().count() < 300), "{err}");
    // JSON lists every problem, each small.
    let out = run(&["--output", "json"]).expect_code(2);
    let v = out.json();
    assert_eq!(v["errors"].as_array().unwrap().len(), n);
    assert!(
        out.stdout.len() < n * 400,
        "{} bytes of JSON",
        out.stdout.len()
    );
}

#[test]
fn a_long_line_shows_a_window_around_the_problem() {
    let mut entries: Vec<String> = (0..30)
        .map(|i| {
            format!("S{i} = {{ description = \"d\", fields.v = {{ generator = \"hex32\" }} }}")
        })
        .collect();
    entries[15] = "S15 = { description = \"d\", fields.v = { generator = \"hex33\" } }".into();
    let spec = format!(
        "name = \"w\"\nvault = {{ mount = \"secret\", path = \"w/{{env}}\" }}\nenvironments = {{ dev = {{}} }}\nsecrets = {{ {} }}\n",
        entries.join(", ")
    );
    let (code, _, err) = lint_one(&spec);
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

/// A spec's text is shown, never obeyed: control characters (an ESC that would clear the
/// screen) and bidirectional overrides are escaped in messages and in the source window.
#[test]
fn control_characters_in_a_spec_never_reach_the_terminal() {
    let spec = GOOD.replace("[secrets.SALT]", "[secrets.\"SA\\u001b[2J\\u202eLT\"]");
    let (code, _, err) = lint_one(&spec);
    assert_eq!(code, 2);
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{202e}'),
        "{err:?}"
    );
    assert!(
        err.contains("secret name `SA\\u{1b}[2J\\u{202e}LT`"),
        "{err}"
    );
}

/// Found by the probe: a broken symlink `x.toml` was skipped silently, so a spec could vanish
/// from every check without a word.
#[test]
fn broken_symlink_is_an_error_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    std::fs::write(specs.join("demo.toml"), GOOD).unwrap();
    std::os::unix::fs::symlink("gone/other.toml", specs.join("other.toml")).unwrap();
    let out = Run::home(dir.path())
        .current_dir(dir.path())
        .args(["lint", "--specs", "specs"])
        .status(2)
        .output();
    let err = out.stderr_text();
    assert!(
        err.contains(
            "`specs/other.toml` is a symbolic link to `gone/other.toml`, which does not exist"
        ),
        "{err}"
    );
}

/// Found by the probe: a non-UTF-8 spec said "invalid byte at offset 152" with no line.
#[test]
fn non_utf8_spec_names_line_and_column_of_the_first_invalid_byte() {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    let mut bytes = GOOD.replace("a salt", "a sålt").into_bytes();
    let at = bytes.windows(3).position(|w| w == b"lt\"").unwrap();
    bytes[at] = 0xff; // `description = "a så\xfft"`: line 11, column 20
    std::fs::write(specs.join("latin1.toml"), bytes).unwrap();
    let out = Run::home(dir.path())
        .current_dir(dir.path())
        .args(["lint", "--specs", "specs"])
        .status(2)
        .output();
    let err = out.stderr_text();
    assert!(err.contains("--> specs/latin1.toml:11:20"), "{err}");
    assert!(err.contains("invalid UTF-8 byte `0xff`"), "{err}");
}

/// Found by the probe: `vault_namespace = "a\nb"` passed lint, then `apply` blamed
/// `VAULT_NAMESPACE` with no location. Strings that go into HTTP headers or URLs are checked
/// where they are written.
#[test]
fn header_and_url_strings_are_checked_with_locations() {
    let cases = [
        (
            "vault_namespace = \"a\\nb\"",
            "`vault_namespace` `a\\nb` contains a control character",
        ),
        (
            "vault_namespace = \"team/sys\"",
            "`vault_namespace` `team/sys` has the reserved segment `sys`",
        ),
        (
            "vault_namespace = \"a//b\"",
            "`vault_namespace` `a//b` has an empty segment",
        ),
        (
            "vault_namespace = \"a b\"",
            "`vault_namespace` `a b` contains a space",
        ),
        (
            "vault_namespace = \"team*\"",
            "`vault_namespace` `team*` contains `*`",
        ),
        (
            "vault_namespace = \"tëam\"",
            "`vault_namespace` `tëam` contains `ë`",
        ),
        (
            "kube_context = \"ctx\\u001b]0;owned\\u0007\"",
            "`kube_context` `ctx\\u{1b}]0;owned\\u{7}` contains a control character",
        ),
        ("kube_context = \"\"", "`kube_context` is empty"),
        (
            "kube_namespace = \"a.b\"",
            "`kube_namespace` `a.b` is not a valid Kubernetes namespace name",
        ),
    ];
    for (line, expected) in cases {
        let spec = GOOD.replace(
            "[environments.prod]\n",
            &format!("[environments.prod]\n{line}\n"),
        );
        let (code, _, err) = lint_one(&spec);
        assert_eq!(code, 2, "{line}: {err}");
        assert!(
            err.contains(expected),
            "{line}: wanted {expected:?} in:\n{err}"
        );
        assert!(err.contains("--> specs/broken.toml:9:"), "{line}: {err}");
    }
    let eso = [
        (
            "policies = [\"../root\"]",
            "an item of `policies` `../root` contains `/`",
        ),
        (
            "auth_mount = \"kubernetes/../../sys\"",
            "`auth_mount` `kubernetes/../../sys` is a relative path segment",
        ),
        (
            "auth_role = \"eso?x=1\"",
            "`auth_role` `eso?x=1` contains `?`",
        ),
    ];
    for (line, expected) in eso {
        let (code, _, err) = lint_one(&format!("{GOOD}[eso]\n{line}\n"));
        assert_eq!(code, 2, "{line}: {err}");
        assert!(
            err.contains(expected),
            "{line}: wanted {expected:?} in:\n{err}"
        );
        assert!(err.contains("--> specs/broken.toml:14:"), "{line}: {err}");
    }
    // What OpenBao accepts passes.
    let ok = GOOD.replace(
        "[environments.prod]\n",
        "[environments.prod]\nvault_namespace = \"platform/team-a\"\nkube_context = \"arn:aws:eks:eu-west-1:1234:cluster/prod\"\n",
    );
    let (code, _, err) = lint_one(&ok);
    assert_eq!(code, 0, "{err}");
}

/// Found by the probe: `mount = "auth"`, `path = "userpass/users"`, `kv_version = 1` made `apply`
/// create a Vault user with the admin policy, and `mount = "secret/data"` wrote one key's data
/// into another's. A mount is a secrets-engine mount, never an API prefix or a KV v2 endpoint.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn mounts_and_paths_outside_kv_are_refused() {
    let cases = [
        (
            "auth",
            "team/demo/{env}",
            "mount `auth` reaches OpenBao's `auth/` API",
        ),
        (
            "auth/userpass",
            "users/{env}",
            "mount `auth/userpass` reaches OpenBao's `auth/` API",
        ),
        (
            "sys",
            "policies/acl/{env}",
            "mount `sys` reaches OpenBao's `sys/` API",
        ),
        (
            "sys/raw",
            "x/{env}",
            "mount `sys/raw` reaches OpenBao's `sys/` API",
        ),
        (
            "identity",
            "entity/{env}",
            "mount `identity` reaches OpenBao's `identity/` API",
        ),
        (
            "cubbyhole",
            "x/{env}",
            "mount `cubbyhole` reaches OpenBao's `cubbyhole/` API",
        ),
        (
            "audit",
            "x/{env}",
            "mount `audit` reaches OpenBao's `audit/` API",
        ),
        ("Sys", "x/{env}", "mount `Sys` reaches OpenBao's `sys/` API"),
        (
            "team-a/sys",
            "x/{env}",
            "mount `team-a/sys` reaches OpenBao's `sys/` API",
        ),
        (
            "secret/data",
            "x/{env}",
            "mount `secret/data` has the segment `data`, a KV v2 endpoint",
        ),
        (
            "secret/metadata",
            "x/{env}",
            "mount `secret/metadata` has the segment `metadata`, a KV v2 endpoint",
        ),
        (
            "kv/team/destroy",
            "x/{env}",
            "mount `kv/team/destroy` has the segment `destroy`, a KV v2 endpoint",
        ),
        (
            "secret",
            "destroy/{env}",
            "path template `destroy/{env}` starts with `destroy`, a KV v2 endpoint",
        ),
        (
            "secret",
            "{env}/x",
            "path `data/x` of environment `data` starts with `data`, a KV v2 endpoint",
        ),
    ];
    for (mount, path, expected) in cases {
        let spec = GOOD
            .replace(
                "mount = \"secret\"",
                &format!("mount = \"{mount}\"\nkv_version = 1"),
            )
            .replace("team/demo/{env}", path)
            .replace("[environments.prod]", "[environments.data]");
        let (code, _, err) = lint_one(&spec);
        assert_eq!(code, 2, "{mount} {path}: {err}");
        assert!(
            err.contains(expected),
            "{mount} {path}: wanted {expected:?} in:\n{err}"
        );
        assert!(err.contains("--> specs/broken.toml:"), "{err}");
    }
    // A mount or folder that only looks like one is fine.
    for (mount, path) in [
        ("authors", "x/{env}"),
        ("kv-data", "x/{env}"),
        ("data", "x/{env}"),
        ("secret", "x/data/{env}"),
    ] {
        let spec = GOOD
            .replace("mount = \"secret\"", &format!("mount = \"{mount}\""))
            .replace("team/demo/{env}", path);
        let (code, _, err) = lint_one(&spec);
        assert_eq!(code, 0, "{mount} {path}: {err}");
    }
    let (code, _, err) = lint_one(
        &GOOD
            .replace("mount = \"secret\"", "mount = \"auth\"")
            .replace("team/demo/{env}", "userpass/users/{env}"),
    );
    assert_eq!(code, 2);
    insta::assert_snapshot!(err);
}

/// Found by the probe: secret `a.b` with field `c` and secret `a` with field `b.c` both linted,
/// and `set dev a.b.c` silently picked one. Dots in field names are legitimate (ESO reads a key
/// with dots literally before it tries a gjson path), so the clash is refused, not the dots.
#[test]
fn names_that_could_mean_two_fields_are_refused() {
    let spec = format!(
        "{GOOD}\n[secrets.\"a.b\"]\ndescription = \"x\"\nfields.c = {{ generator = \"uuid\" }}\n\n[secrets.a]\ndescription = \"y\"\nfields.\"b.c\" = {{ generator = \"uuid\" }}\n"
    );
    let (code, _, err) = lint_one(&spec);
    assert_eq!(code, 2, "{err}");
    insta::assert_snapshot!(err);
    // A secret named like another's field, and the same across two files sharing a folder.
    let other = "name = \"demo2\"\n[vault]\nmount = \"secret\"\npath = \"team/demo/{env}\"\n[environments.dev]\n[secrets.\"SALT.password\"]\ndescription = \"x\"\nfields.v = { generator = \"uuid\" }\n";
    let (code, _, err) = lint_files(&[("a.toml", GOOD), ("b.toml", other)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`set` and `rotate` could not tell apart secret `SALT` field `password` and secret `SALT.password`: both are `secret/team/demo/dev/SALT.password` in environment `dev`"),
        "{err}"
    );
    // Dots that clash with nothing are fine.
    let fine = format!(
        "{GOOD}\n[secrets.\"a.b\"]\ndescription = \"x\"\nfields.\"c.d\" = {{ generator = \"uuid\" }}\n"
    );
    let (code, _, err) = lint_one(&fine);
    assert_eq!(code, 0, "{err}");
}

/// A broken spec changes nothing and sends nothing: every problem is reported with
/// file:line:col before any connection, for each command that talks to Vault or Kubernetes,
/// whichever variables name the server and the token (`VAULT_*`, their `BAO_*` twins, or only
/// the spec's `vault_addr`). Counted by listeners standing in for Vault and for the Kubernetes
/// API; a control run with the broken file gone shows that they do count.
#[test]
fn a_broken_spec_is_reported_before_any_connection() {
    let vault = Silent::start();
    let kube = Silent::start();
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    std::fs::write(
        specs.join("demo.toml"),
        GOOD.replace("http://127.0.0.1:8200", &vault.addr),
    )
    .unwrap();
    // Line 3, column 1: a key the spec does not know.
    std::fs::write(
        specs.join("broken.toml"),
        "name = \"broken\"\n[vault]\nmonut = \"secret\"\npath = \"b/{env}\"\n",
    )
    .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        common::fake_kube::kubeconfig_yaml(&kube.addr, "kube-token", "fake"),
    )
    .unwrap();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let commands: [(&[&str], &str); 6] = [
        (&["plan", "dev"], ""),
        (&["apply", "dev"], ""),
        (&["apply", "dev", "-o", "json"], ""),
        (&["verify", "dev", "--kubeconfig", kubeconfig], ""),
        (&["set", "dev", "SALT", "--force"], "0123456789abcdef\n"),
        (&["rotate", "dev", "SALT", "--yes"], ""),
    ];
    let routes: [&[(&str, &str)]; 4] = [
        &[("VAULT_ADDR", &vault.addr), ("VAULT_TOKEN", "t-vault")],
        &[("BAO_ADDR", &vault.addr), ("BAO_TOKEN", "t-bao")],
        &[("VAULT_TOKEN", "t-vault")],
        &[("BAO_TOKEN", "t-bao")],
    ];
    let run = |vars: &[(&str, &str)], args: &[&str], stdin: &str| {
        let mut run = Run::offline();
        for (k, v) in vars {
            run = run.env(k, v);
        }
        run.current_dir(dir.path())
            .args(["--specs", "specs"])
            .args(args)
            .stdin(stdin)
    };
    for vars in routes {
        for (args, stdin) in commands {
            let out = run(vars, args, stdin).status(2).output();
            let err = out.stderr_text();
            assert!(
                err.contains("specs/broken.toml:3:1") && err.contains("monut"),
                "{vars:?} {args:?}: {err}"
            );
            assert!(!out.all_text().contains("t-vault") && !out.all_text().contains("t-bao"));
            assert_eq!(
                (
                    vault.connections.load(Ordering::SeqCst),
                    kube.connections.load(Ordering::SeqCst)
                ),
                (0, 0),
                "{vars:?} {args:?} connected before reporting the broken spec: {err}"
            );
        }
    }
    // Control: without the broken file the same run reaches the stand-in for Vault (which
    // never answers; vault-seed gives up within a second or two).
    std::fs::remove_file(specs.join("broken.toml")).unwrap();
    run(
        &[
            ("BAO_ADDR", &vault.addr),
            ("BAO_TOKEN", "t-bao"),
            ("VAULT_SEED_GIVE_UP_AFTER", "2s"),
        ],
        &["plan", "dev", "--answer-timeout", "1s"],
        "",
    )
    .status(1)
    .output();
    assert!(vault.connections.load(Ordering::SeqCst) > 0);
}

/// Issue 28: a spec nested 10,000 deep (arrays, then inline tables) is one problem at its
/// file:line:col naming the limit, exit 2; not a stack overflow.
#[test]
fn a_spec_nested_10000_deep_is_one_problem_naming_the_limit() {
    let n = 10_000;
    for (nesting, col) in [
        (format!("{}1{}", "[".repeat(n), "]".repeat(n)), 133),
        (format!("{}1{}", "{a = ".repeat(n), "}".repeat(n)), 325),
    ] {
        let dir = common::spec_dir(&format!("name = \"app\"\nx = {nesting}\n"));
        let out = Run::offline()
            .specs(dir.path())
            .args(["lint"])
            .status(2)
            .output();
        let err = out.stderr_text();
        assert!(!err.contains("overflow"), "{err}");
        common::has(&err, "error: the spec nests deeper than 128 levels\n");
        common::has(&err, format!("app.toml:2:{col}\n"));
        common::has(&err, "error: 1 problem(s) in the specs");
    }
}

/// `fixed`, `rotation` and `keep` in the wrong place or of the wrong type: each a problem at
/// its own line and column, and nothing loads.
#[test]
fn rotation_keys_in_the_wrong_place_or_of_the_wrong_type_are_problems_with_locations() {
    let spec = r#"[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
[environments.dev.secrets.RING]
fields.key = { generator = "password", rotation = "replace" }
[secrets.RING]
description = "a keyring"
fields.key = { generator = "fernet", rotation = "keyring", keep = 11 }
[secrets.WRONG]
description = "wrong values and types"
fields.a = { generator = "hex32", rotation = "sometimes" }
fields.b = { generator = "hex32", rotation = 3 }
fields.c = { generator = "hex32", keep = 2 }
fields.d = { generator = "hex32", fixed = true, rotation = "replace" }
fields.e = { generator = "uuid", rotation = "keyring" }
fields.f = { generator = "hex32", fixed = "yes" }
[secrets.FIXED]
description = "a fixed secret"
fixed = true
fields.g = { generator = "masterkey", rotation = "replace" }
[secrets.PROVIDED]
description = "another's"
provided_by = "someone else"
fields.h = { generator = "hex32", rotation = "never" }
"#;
    let (code, out, err) = lint_one(spec);
    assert_eq!(code, 2, "{out}{err}");
    // An override may not make a keyring field a generator whose values cannot form one.
    let overridden = spec.replace(", rotation = \"replace\" }", " }");
    let (_, _, ov_err) = lint_one(&overridden[..overridden.find("[secrets.WRONG]").unwrap()]);
    assert!(
        ov_err.contains("environment `dev` makes keyring field `key` of `RING` a `password`, which cannot be a keyring\n  --> specs/broken.toml:5:27"),
        "{ov_err}"
    );
    // Each problem and the line:col of its key or value.
    for (problem, at) in [
        ("the field is an environment's override", "6:52"),
        (
            "`keep = 11` in field `key` of `[secrets.RING]` is out of range",
            "9:67",
        ),
        (
            "`rotation` in field `a` of `[secrets.WRONG]` is `sometimes`",
            "12:47",
        ),
        (
            "`rotation` in field `b` of `[secrets.WRONG]` must be a string",
            "13:46",
        ),
        (
            "`keep` in field `c` of `[secrets.WRONG]` is for `rotation = \"keyring\"`",
            "14:42",
        ),
        ("`fixed = true` together with `rotation`", "15:35"),
        (
            "a `uuid` value cannot be a comma-separated list of keys",
            "16:46",
        ),
        (
            "`fixed` in field `f` of `[secrets.WRONG]` must be `true` or `false`",
            "17:44",
        ),
        (
            "but the secret is `fixed`: its fields never rotate",
            "21:51",
        ),
        ("the field is provided by another application", "25:47"),
    ] {
        let location = problem_lines(&err, problem)[1];
        assert_eq!(
            location.trim_end(),
            format!("  --> specs/broken.toml:{at}"),
            "{problem:?}\n{err}"
        );
    }
}

/// The lines `lint` prints for the problem whose message holds `problem`: the message, its
/// location, the source line and caret, and the help line if any.
fn problem_lines<'e>(err: &'e str, problem: &str) -> Vec<&'e str> {
    let lines: Vec<&str> = err.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("error: ") && l.contains(problem))
        .unwrap_or_else(|| panic!("no {problem:?} in:\n{err}"));
    let rest = lines[first + 1..].iter();
    let more = rest.take_while(|l| !l.starts_with("error: ")).count();
    lines[first..=first + more].to_vec()
}

/// What `apply` could never make is refused before anything runs, each problem at the
/// file:line:col of its key or value with a help line: a keyring that keeps no previous key, a
/// bcrypt hash of an input longer than bcrypt hashes, an override that makes a certificate's key
/// no key, and a `from_secret` key no Secret can hold.
#[test]
fn what_apply_could_never_make_is_refused_at_its_place() {
    let spec = r#"[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
[environments.dev.secrets.TLS]
fields.key = { generator = "hex32" }
[secrets.RING]
description = "a keyring"
fields.key = { generator = "fernet", rotation = "keyring", keep = 0 }
[secrets.ADMIN]
description = "a password and its hash"
fields.password = { generator = "hex", bytes = 64 }
fields.hash = { derive = { bcrypt = "password" } }
[secrets.TLS]
description = "a key and its certificate"
fields.key = { generator = "ecdsa-p256" }
fields.crt = { generator = "x509-self-signed", key = "key", cn = "a" }
[secrets.IAM]
description = "a token a job writes"
fields.pat = { from_secret = "ask/admin-pat:.." }
"#;
    let (code, out, err) = lint_one(spec);
    assert_eq!(code, 2, "{out}{err}");
    common::has(&err, "error: 4 problem(s) in the specs");
    for (problem, at) in [
        (
            "`keep = 0` in field `key` of `[secrets.RING]` is out of range",
            "9:67",
        ),
        (
            "field `hash` of `[secrets.ADMIN]` is a bcrypt hash of `password`, whose values reach 128 bytes: bcrypt hashes at most 71 bytes",
            "13:15",
        ),
        (
            "in environment `dev`, field `crt` of `TLS` is a `x509-self-signed` of `key`, which is a `hex`, not an `ed25519`, `ecdsa-p256` or `rsa` key",
            "6:14",
        ),
        (
            "`from_secret` in field `pat` of `[secrets.IAM]` `ask/admin-pat:..` has key `..`, which a Secret's data cannot have: Kubernetes refuses `.`, `..` and keys starting with `..`",
            "20:31",
        ),
    ] {
        let lines = problem_lines(&err, problem);
        assert_eq!(lines[0], format!("error: {problem}"), "{err}");
        assert_eq!(lines[1], format!("  --> specs/broken.toml:{at}"), "{err}");
        assert!(
            lines.iter().any(|l| l.starts_with("  help: ")),
            "{problem}: no help line\n{err}"
        );
    }
}
