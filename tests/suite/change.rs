//! `vault-seed set` and `vault-seed rotate` against a real OpenBao server.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;

use common::{OpenBao, Run};
use serde_json::{json, Value};

const SPEC: &str = r#"
[vault]
mount = "secret"
path = "app/{env}"
[environments.dev]
vault_addr = "{addr}"
[secrets.PAT]
description = "a token with a note beside it"
fields.value = { generator = "placeholder" }
fields.note = { generator = "uuid" }
[secrets.SALT]
description = "a salt"
fields.password = { generator = "hex32" }
[secrets.MASTERKEY]
description = "a masterkey that may be set by hand"
fields.password = { generator = "masterkey" }
[secrets.FIXED_KEY]
description = "never changes"
fixed = true
fields.password = { generator = "masterkey" }
"#;

fn setup() -> (OpenBao, tempfile::TempDir) {
    let bao = OpenBao::dev();
    let dir = common::spec_dir(&SPEC.replace("{addr}", &bao.addr));
    Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev"])
        .output();
    (bao, dir)
}

fn get(bao: &OpenBao, name: &str) -> (serde_json::Map<String, Value>, u64) {
    bao.kv_get("secret", &format!("app/dev/{name}")).unwrap()
}

#[test]
fn set_replaces_a_placeholder_and_keeps_other_fields() {
    let (bao, dir) = setup();
    let (before, v) = get(&bao, "PAT");
    assert_eq!((before["value"].as_str(), v), (Some("placeholder"), 1));
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "PAT.value", "-o", "json"])
        .stdin("zitadel-pat-abc123\n")
        .output();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["outcome"], "replaced-placeholder");
    assert_eq!(
        (doc["old_version"].as_u64(), doc["new_version"].as_u64()),
        (Some(1), Some(2))
    );
    let (after, v) = get(&bao, "PAT");
    assert_eq!(v, 2);
    assert_eq!(
        after["value"], "zitadel-pat-abc123",
        "one trailing newline is stripped"
    );
    assert_eq!(after["note"], before["note"], "the other field is intact");
    let (_, meta) = bao.api("GET", "secret/metadata/app/dev/PAT", None);
    assert_eq!(
        meta["data"]["custom_metadata"]["vault-seed/last-action"],
        "set"
    );
    assert!(
        !out.stdout_text().contains("zitadel-pat-abc123")
            && !out.stderr_text().contains("zitadel-pat-abc123")
    );
    // A secret with several fields must be told which.
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "PAT"])
        .stdin("x")
        .status(2)
        .output();
    assert!(
        out.stderr_text().contains("has several fields"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn set_refuses_a_real_value_without_force() {
    let (bao, dir) = setup();
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "SALT"])
        .stdin("cd".repeat(32))
        .status(2)
        .output();
    // A refused request: exit 2, as `rotate`'s refusals (issue 14.9).
    assert!(
        out.stderr_text().contains("holds a real value (version 1)"),
        "{}",
        out.stderr_text()
    );
    assert_eq!(get(&bao, "SALT").1, 1);
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "SALT", "--force"])
        .stdin("cd".repeat(32))
        .output();
    assert!(
        out.stderr_text().contains("version 1 -> 2"),
        "{}",
        out.stderr_text()
    );
    let (d, v) = get(&bao, "SALT");
    assert_eq!(
        (d["password"].as_str().unwrap(), v),
        ("cd".repeat(32).as_str(), 2)
    );
}

#[test]
fn set_rejects_a_value_in_the_wrong_format_and_writes_nothing() {
    let (bao, dir) = setup();
    let before = get(&bao, "MASTERKEY");
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "MASTERKEY", "--force"])
        .stdin("k".repeat(31))
        .status(2)
        .output();
    let err = out.stderr_text();
    assert!(
        err.contains(
            "is 31 bytes long, a Zitadel masterkey must be exactly 32 bytes; nothing was written"
        ),
        "{err}"
    );
    assert!(!err.contains(&"k".repeat(31)));
    assert_eq!(get(&bao, "MASTERKEY"), before);
    // A fixed secret is never changed, --force or not.
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "FIXED_KEY", "--force"])
        .stdin("k".repeat(32))
        .status(2)
        .output();
    // A refused request: exit 2, as `rotate` of a fixed secret (issue 14.9).
    assert!(
        out.stderr_text().contains("is fixed"),
        "{}",
        out.stderr_text()
    );
    assert_eq!(get(&bao, "FIXED_KEY").1, 1);
    // Empty input writes nothing.
    Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "PAT.value"])
        .stdin("")
        .status(2)
        .output();
    assert_eq!(get(&bao, "PAT").1, 1);
}

#[test]
fn set_detects_a_concurrent_change_between_read_and_write() {
    let (bao, dir) = setup();
    let mut child = Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "PAT.value"])
        .spawn();
    // vault-seed has read version 1 once it asks for the value.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("reading the new value") {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "vault-seed ended before asking for the value"
        );
    }
    // Meanwhile a person writes the secret by hand.
    bao.kv_put(
        "secret",
        "app/dev/PAT",
        json!({ "value": "someone-else", "note": "n" }),
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"mine\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(
        rest.contains("changed after vault-seed read it (version 1); nothing was written"),
        "{rest}"
    );
    let (d, v) = get(&bao, "PAT");
    assert_eq!(
        (d["value"].as_str(), v),
        (Some("someone-else"), 2),
        "the other change stands"
    );
}

/// Run `vault-seed set dev PAT.value` under a real pseudo-terminal (Python's pty module),
/// answering with `interaction` (Python using `os.write(fd, ...)` and `wait_for(b"...")`). Vault
/// answers only once the interaction calls `vault_open.set()` (a relay in the script holds the
/// connections until then), so input written before it is written before any prompt.
/// Returns everything the terminal showed, and the exit code.
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn set_on_a_terminal(bao: &OpenBao, dir: &Path, interaction: &str) -> (String, Option<i32>) {
    let script = r#"
import os, pty, sys, select, socket, threading
argv = sys.argv[1:]
# vault-seed reaches Vault through a relay here that passes nothing on until the interaction
# calls `vault_open.set()`: it reads Vault before its prompt, so what the interaction writes
# before that is written before any prompt, however loaded the machine.
real_host, real_port = os.environ["VAULT_ADDR"].split("//", 1)[1].rsplit(":", 1)
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
os.environ["VAULT_ADDR"] = "http://127.0.0.1:%d" % listener.getsockname()[1]
vault_open = threading.Event()
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def relay():
    while True:
        client, _ = listener.accept()
        vault_open.wait()
        server = socket.create_connection((real_host, int(real_port)))
        for a, b in ((client, server), (server, client)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
threading.Thread(target=relay, daemon=True).start()
out = b""
def wait_for(pat):
    global out
    while pat not in out:
        r, _, _ = select.select([fd], [], [], 30)
        if not r:
            sys.exit("timeout waiting for %r; got %r" % (pat, out))
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            sys.exit("eof waiting for %r; got %r" % (pat, out))
        if not chunk:
            sys.exit("eof waiting for %r" % pat)
        out += chunk
INTERACTION
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#
    .replace("INTERACTION", interaction);
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(common::run::bin())
        .arg("--specs")
        .arg(dir)
        .args(["set", "dev", "PAT.value"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", bao.home.path())
        .env("VAULT_ADDR", &bao.addr)
        .env("VAULT_TOKEN", &bao.token)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let out = common::Out::from(out);
    (out.all_text(), out.status.code())
}

/// On a terminal the value is read with a hidden prompt, twice, and never comes back on the
/// screen: echo is off before each prompt shows, so an answer typed at once is not echoed.
#[test]
fn set_reads_from_a_terminal_without_echo() {
    let (bao, dir) = setup();
    let (screen, code) = set_on_a_terminal(
        &bao,
        dir.path(),
        r#"
# Typed before any prompt (vault-seed is waiting for Vault, which answers only after): discarded
# when echo goes off, so it can never become the value.
os.write(fd, b"early-typeahead\n")
vault_open.set()
# Answer the moment each prompt shows, with a typo fixed by backspace.
wait_for(b"value (hidden): ")
os.write(fd, b"typed-secret-9f3X\x7fa\n")
wait_for(b"again: ")
os.write(fd, b"typed-secret-9f3a\r")
"#,
    );
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("value (hidden): "), "{screen}");
    assert!(
        !screen.contains("typed-secret") && !screen.contains("9f3"),
        "the value was echoed:\n{screen}"
    );
    assert_eq!(get(&bao, "PAT").0["value"], "typed-secret-9f3a");
}

/// Ctrl-C at the hidden prompt cancels: nothing is written, and it says so.
#[test]
fn ctrl_c_at_the_prompt_cancels_and_writes_nothing() {
    let (bao, dir) = setup();
    let before = get(&bao, "PAT");
    let (screen, code) = set_on_a_terminal(
        &bao,
        dir.path(),
        r#"
vault_open.set()
wait_for(b"value (hidden): ")
os.write(fd, b"half-typed\x03")
"#,
    );
    assert_ne!(code, Some(0), "{screen}");
    assert!(
        screen.contains("cancelled; nothing was written"),
        "{screen}"
    );
    assert!(!screen.contains("half-typed"), "{screen}");
    assert_eq!(get(&bao, "PAT"), before);
}

/// A stop signal at the hidden prompt (`kill`, a closing terminal) puts the terminal's settings
/// back before the run ends: echo is on again, and nothing was written.
#[test]
fn a_stop_signal_at_the_prompt_puts_the_terminal_back() {
    let (bao, dir) = setup();
    let before = get(&bao, "PAT");
    for (signal, code) in [("SIGTERM", 143), ("SIGHUP", 129), ("SIGINT", 130)] {
        let (screen, exit) = set_on_a_terminal(
            &bao,
            dir.path(),
            &format!(
                r#"
import signal, termios
vault_open.set()
wait_for(b"value (hidden): ")
os.write(fd, b"half-typed")
os.kill(pid, signal.{signal})
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
out += b"ECHO-ON" if termios.tcgetattr(fd)[3] & termios.ECHO else b"ECHO-OFF"
"#
            ),
        );
        assert!(screen.contains("ECHO-ON"), "{signal}: {screen}");
        assert_eq!(exit, Some(code), "{signal}: {screen}");
        assert!(!screen.contains("half-typed"), "{signal}: {screen}");
        assert_eq!(get(&bao, "PAT"), before, "{signal}");
    }
}

#[test]
fn rotate_makes_a_new_version_in_format_and_keeps_the_old_in_history() {
    let (bao, dir) = setup();
    let (old, _) = get(&bao, "SALT");
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "SALT", "--dry-run"])
        .output();
    assert!(out.stdout_text().contains("would-rotate"));
    assert_eq!(get(&bao, "SALT").1, 1, "dry run wrote nothing");
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "SALT", "--yes", "-o", "json", "-vvv"])
        .output();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (doc["old_version"].as_u64(), doc["new_version"].as_u64()),
        (Some(1), Some(2))
    );
    let (new, v) = get(&bao, "SALT");
    assert_eq!(v, 2);
    let new_value = new["password"].as_str().unwrap();
    assert_eq!(new_value.len(), 64);
    assert!(new_value.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(new["password"], old["password"]);
    let (s, v1) = bao.api("GET", "secret/data/app/dev/SALT?version=1", None);
    assert_eq!(s, 200);
    assert_eq!(
        v1["data"]["data"]["password"], old["password"],
        "version 1 kept in history"
    );
    for secret in [old["password"].as_str().unwrap(), new_value] {
        assert!(!out.stdout_text().contains(secret) && !out.stderr_text().contains(secret));
    }
    let (_, meta) = bao.api("GET", "secret/metadata/app/dev/SALT", None);
    assert_eq!(
        meta["data"]["custom_metadata"]["vault-seed/last-action"],
        "rotate"
    );
}

#[test]
fn rotate_refuses_fixed_secrets_placeholders_and_missing_yes() {
    let (bao, dir) = setup();
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "FIXED_KEY", "--yes"])
        .status(2)
        .output();
    assert!(
        out.stderr_text()
            .contains("`secret/app/dev/FIXED_KEY` is fixed: field `password` never changes once written; nothing was sent"),
        "{}",
        out.stderr_text()
    );
    assert_eq!(get(&bao, "FIXED_KEY").1, 1);
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "PAT.value", "--yes"])
        .status(2)
        .output();
    assert!(
        out.stderr_text().contains("is a placeholder"),
        "{}",
        out.stderr_text()
    );
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "SALT"])
        .status(2)
        .output();
    assert!(
        out.stderr_text().contains("add --yes"),
        "{}",
        out.stderr_text()
    );
    assert_eq!(get(&bao, "SALT").1, 1);
    // The real spec: the Zitadel masterkey never rotates.
    let out = Run::new(&bao)
        .real_specs()
        .args(["rotate", "auh1-dev", "ZITADEL_MASTERKEY", "--yes"])
        .status(2)
        .output();
    assert!(out.stderr_text().contains("never changes once written"));
}

/// Found by the probe: `set dev a.b.c` silently picked one of two secrets. A name that fits
/// several secrets or fields (here the same secret name in two applications) is refused, exit 2,
/// naming each; the path under the mount picks one.
#[test]
fn set_and_rotate_refuse_an_ambiguous_name_and_a_path_picks_one() {
    let (bao, dir) = setup();
    let other = SPEC
        .replace("{addr}", &bao.addr)
        .replace("app/{env}", "other/{env}");
    std::fs::write(dir.path().join("other.toml"), other).unwrap();
    Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev"])
        .output();
    for args in [
        &["set", "dev", "MASTERKEY"][..],
        &["set", "dev", "MASTERKEY.password"][..],
        &["rotate", "dev", "SALT", "--yes"][..],
    ] {
        let out = Run::new(&bao)
            .specs(dir.path())
            .args(args)
            .stdin("0123456789abcdef0123456789abcdef\n")
            .status(2)
            .output();
        let err = out.stderr_text();
        let name = args[2].split('.').next().unwrap();
        assert!(
            err.contains(&format!("`{}` names 2 secrets", args[2]))
                && err.contains(&format!("`secret/app/dev/{name}`"))
                && err.contains(&format!("`secret/other/dev/{name}`")),
            "{args:?}: {err}"
        );
        assert!(err.contains("name it by its path"), "{err}");
    }
    assert_eq!(get(&bao, "MASTERKEY").1, 1);
    assert_eq!(get(&bao, "SALT").1, 1);
    assert_eq!(bao.kv_get("secret", "other/dev/SALT").unwrap().1, 1);
    // The path under the mount, or the full path, picks one.
    Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "other/dev/MASTERKEY.password", "--force"])
        .stdin("0123456789abcdef0123456789abcdef\n")
        .output();
    assert_eq!(bao.kv_get("secret", "other/dev/MASTERKEY").unwrap().1, 2);
    assert_eq!(get(&bao, "MASTERKEY").1, 1);
    Run::new(&bao)
        .specs(dir.path())
        .args(["rotate", "dev", "secret/app/dev/SALT", "--yes"])
        .output();
    assert_eq!(get(&bao, "SALT").1, 2);
    assert_eq!(bao.kv_get("secret", "other/dev/SALT").unwrap().1, 1);
}

/// A spec whose names clash (`a.b` field `c`, `a` field `b.c`) is refused before anything is
/// read or written, naming both.
#[test]
fn set_of_a_name_that_could_mean_two_fields_is_refused() {
    let (bao, dir) = setup();
    let clash = format!(
        "[vault]\nmount = \"secret\"\npath = \"clash/{{env}}\"\n[environments.dev]\nvault_addr = \"{}\"\n[secrets.\"a.b\"]\ndescription = \"x\"\nfields.c = {{ generator = \"placeholder\" }}\n[secrets.a]\ndescription = \"y\"\nfields.\"b.c\" = {{ generator = \"placeholder\" }}\n",
        bao.addr
    );
    std::fs::write(dir.path().join("clash.toml"), clash).unwrap();
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["set", "dev", "a.b.c"])
        .stdin("value\n")
        .status(2)
        .output();
    let err = out.stderr_text();
    assert!(
        err.contains("could not tell apart secret `a.b` field `c` and secret `a` field `b.c`"),
        "{err}"
    );
    assert!(bao.kv_get("secret", "clash/dev/a.b").is_none());
    assert!(bao.kv_get("secret", "clash/dev/a").is_none());
}
