//! `vault-seed plan` and `apply` against a real OpenBao server: idempotent, race-free seeding.

use crate::common;

use base64::Engine as _;
use common::proxy::{FaultProxy, Hook, Verdict};
use common::{OpenBao, Run};
use serde_json::{json, Value};

const ENV: &str = "auh1-dev";
const FOLDER: &str = "ask/core-service/auh1-dev";
const REAL: &[(&str, &str)] = &[
    ("SECURITY__API_KEY_SALT", "password"),
    ("SECURITY__MASTER_ENCRYPTION_KEY", "password"),
    ("APP__CORE_SERVICES_MACHINE_TOKEN", "password"),
    ("ZITADEL_MASTERKEY", "password"),
    ("IAM_SERVICE__PAT", "value"),
    ("HATCHET__CLIENT_TOKEN", "value"),
];

fn outcomes(doc: &Value) -> Vec<(String, String)> {
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string(),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn outcome_of(doc: &Value, name: &str) -> String {
    outcomes(doc)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, o)| o)
        .unwrap_or_else(|| panic!("{name} not in report: {doc}"))
}

/// A spec directory with one file; `{addr}` in `body` is replaced by the server's address.
fn spec_dir(bao: &OpenBao, body: &str) -> tempfile::TempDir {
    common::spec_dir(&body.replace("{addr}", &bao.addr))
}

fn assert_formats(bao: &OpenBao) {
    for (name, field) in REAL {
        let (data, version) = bao
            .kv_get("secret", &format!("{FOLDER}/{name}"))
            .unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(version, 1, "{name}");
        let v = data[*field].as_str().unwrap();
        match *name {
            "SECURITY__API_KEY_SALT" | "APP__CORE_SERVICES_MACHINE_TOKEN" => {
                assert_eq!(v.len(), 64);
                assert!(v.bytes().all(|b| b.is_ascii_hexdigit()));
            }
            "SECURITY__MASTER_ENCRYPTION_KEY" => {
                assert_eq!(v.len(), 44);
                assert_eq!(
                    base64::engine::general_purpose::URL_SAFE
                        .decode(v)
                        .unwrap()
                        .len(),
                    32
                );
            }
            "ZITADEL_MASTERKEY" => assert_eq!(v.len(), 32),
            _ => assert_eq!(v, "placeholder"),
        }
    }
}

#[test]
fn first_apply_creates_every_path_in_its_format_and_second_writes_nothing() {
    let bao = OpenBao::dev();
    let out = Run::new(&bao)
        .real_specs()
        .args(["apply", ENV, "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["summary"]["created"], 6);
    // Two of them are placeholders a person fills in: pending as soon as they are written.
    assert_eq!(doc["summary"]["pending"], 2, "{doc}");
    Run::new(&OpenBao::dev())
        .real_specs()
        .args(["apply", ENV])
        .stdout_has("6 created, 0 exist, 2 pending")
        .output();
    // ask-db's database passwords are provided: absent here, waiting, never written.
    assert_eq!(doc["summary"]["provided_absent"], 3);
    assert!(
        outcomes(&doc)
            .iter()
            .all(|(_, o)| o == "created" || o == "provided-absent"),
        "{doc}"
    );
    assert_formats(&bao);
    // Custom metadata marks the path as vault-seed's, never external-secrets'.
    let (_, meta) = bao.api(
        "GET",
        &format!("secret/metadata/{FOLDER}/ZITADEL_MASTERKEY"),
        None,
    );
    let custom = &meta["data"]["custom_metadata"];
    assert_eq!(custom["managed-by"], "vault-seed");
    assert_eq!(custom["vault-seed/generators"], "password=masterkey");
    assert_eq!(custom["vault-seed/spec"], "core-service.toml");

    let again = Run::new(&bao)
        .real_specs()
        .args(["apply", ENV, "-o", "json"])
        .output();
    let doc = again.json();
    assert_eq!(doc["summary"]["written_paths"], 0);
    assert_eq!(doc["summary"]["exists"], 4);
    assert_eq!(doc["summary"]["pending"], 2);
    for (name, _) in REAL {
        assert_eq!(
            bao.kv_version("secret", &format!("{FOLDER}/{name}")),
            Some(1),
            "{name}"
        );
    }
}

#[test]
fn hand_made_values_are_left_alone_and_invalid_ones_fail_the_run() {
    let bao = OpenBao::dev();
    // As the runbook did by hand: a valid salt, and a masterkey of the wrong length.
    let salt = "ab".repeat(32);
    bao.kv_put(
        "secret",
        &format!("{FOLDER}/SECURITY__API_KEY_SALT"),
        json!({ "password": salt }),
    );
    bao.kv_put(
        "secret",
        &format!("{FOLDER}/ZITADEL_MASTERKEY"),
        json!({ "password": "x".repeat(31) }),
    );
    let out = Run::new(&bao)
        .real_specs()
        .args(["apply", ENV, "-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
    assert_eq!(outcome_of(&doc, "SECURITY__API_KEY_SALT"), "exists");
    assert_eq!(outcome_of(&doc, "ZITADEL_MASTERKEY"), "invalid");
    let row = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str().unwrap().ends_with("ZITADEL_MASTERKEY"))
        .unwrap();
    assert!(
        row["detail"].as_str().unwrap().contains("31 bytes"),
        "{row}"
    );
    // Untouched: same value, still version 1.
    let (d, v) = bao
        .kv_get("secret", &format!("{FOLDER}/SECURITY__API_KEY_SALT"))
        .unwrap();
    assert_eq!((d["password"].as_str().unwrap(), v), (salt.as_str(), 1));
    let (d, v) = bao
        .kv_get("secret", &format!("{FOLDER}/ZITADEL_MASTERKEY"))
        .unwrap();
    assert_eq!((d["password"].as_str().unwrap().len(), v), (31, 1));
    // The others were created.
    assert_eq!(
        outcome_of(&doc, "SECURITY__MASTER_ENCRYPTION_KEY"),
        "created"
    );
    // Human output names the problem and exits 1 too.
    Run::new(&bao)
        .real_specs()
        .args(["apply", ENV])
        .status(1)
        .stdout_has("invalid")
        .output();
}

const MANY: usize = 120;

fn many_secrets_spec() -> String {
    let mut s = String::from("[vault]\nmount = \"secret\"\npath = \"race/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n");
    for i in 0..MANY {
        let g = ["hex32", "fernet", "masterkey", "uuid"][i % 4];
        s.push_str(&format!(
            "[secrets.S{i:03}]\ndescription = \"s\"\nfields.password = {{ generator = \"{g}\" }}\n"
        ));
    }
    s
}

#[test]
fn eight_concurrent_applies_leave_every_path_at_version_one() {
    let bao = OpenBao::dev();
    let dir = spec_dir(&bao, &many_secrets_spec());
    let children: Vec<_> = (0..8)
        .map(|_| {
            Run::new(&bao)
                .specs(dir.path())
                .args(["apply", "dev", "-o", "json", "--concurrency", "8"])
                .spawn()
        })
        .collect();
    let mut created = 0;
    for child in children {
        let out = common::Out::from(child.wait_with_output().unwrap());
        assert_eq!(out.status.code(), Some(0), "{}", out.stderr_text());
        created += out.json()["summary"]["created"].as_u64().unwrap();
    }
    // Each path was created by exactly one of the eight runs.
    assert_eq!(created, MANY as u64);
    for i in 0..MANY {
        assert_eq!(
            bao.kv_version("secret", &format!("race/dev/S{i:03}")),
            Some(1),
            "S{i:03}"
        );
    }
}

/// A proxy in front of `bao` that, just before the first request whose start is `trigger`
/// reaches the server (and only after a request starting with `after` went through, when
/// given), writes `competing` at `path` straight to the server. Forces a race that concurrent
/// runs hit only by chance.
fn competing_writer(
    bao: &OpenBao,
    after: Option<&'static str>,
    trigger: &'static str,
    path: &'static str,
    competing: Value,
) -> FaultProxy {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let seen = Arc::new(AtomicBool::new(after.is_none()));
    let done = Arc::new(AtomicBool::new(false));
    let (addr, token) = (bao.addr.clone(), bao.token.clone());
    let body = competing.to_string();
    let hook: Hook = Arc::new(move |chunk: &[u8]| {
        if after.is_some_and(|a| chunk.starts_with(a.as_bytes())) {
            seen.store(true, Ordering::SeqCst);
        } else if chunk.starts_with(trigger.as_bytes())
            && seen.load(Ordering::SeqCst)
            && !done.swap(true, Ordering::SeqCst)
        {
            let (status, text) = common::raw_http(
                &addr,
                "POST",
                &format!("/v1/{path}"),
                Some(&token),
                Some(&body),
            )
            .expect("competing write");
            assert!(status < 300, "competing write: {status} {text}");
        }
        Verdict::Forward
    });
    FaultProxy::with_hook(&bao.addr, hook)
}

/// Issue 42: `apply` adding a field to a live path writes with `cas=<the version it read>`. A
/// writer who changes the path between that read and the write is never overwritten: Vault
/// refuses the write, the field's row says so, and the competitor's version stands.
#[test]
fn a_writer_racing_an_extend_between_its_read_and_its_write_is_never_overwritten() {
    let bao = OpenBao::dev();
    bao.kv_put("secret", "race2/dev/A", json!({"a": "a".repeat(64)}));
    let theirs = "t".repeat(64);
    let proxy = competing_writer(
        &bao,
        Some("GET /v1/secret/data/race2/dev/A"),
        "POST /v1/secret/data/race2/dev/A ",
        "secret/data/race2/dev/A",
        json!({"data": {"a": theirs, "other": "theirs"}}),
    );
    let spec = "[vault]\nmount = \"secret\"\npath = \"race2/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.A]\ndescription = \"a\"\nfields.a = { generator = \"hex32\" }\nfields.b = { generator = \"hex32\" }\n";
    let dir = spec_dir(&bao, spec);
    let doc = Run::new(&bao)
        .addr(&proxy.addr)
        .env("VAULT_SEED_SPECS", dir.path())
        .args(["apply", "dev", "-o", "json"])
        .status(1)
        .output()
        .json();
    let b = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == "b")
        .unwrap_or_else(|| panic!("no row for b: {doc}"));
    assert_eq!(b["outcome"], "error", "{doc}");
    assert!(
        b["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("changed by someone else"),
        "{doc}"
    );
    let (data, version) = bao.kv_get("secret", "race2/dev/A").unwrap();
    assert_eq!(version, 2, "only the competitor wrote");
    assert_eq!(data["a"], theirs.as_str());
    assert_eq!(data["other"], "theirs");
    assert!(data.get("b").is_none(), "nothing of the extend landed");
}

#[test]
fn a_competing_create_between_discovery_and_write_is_never_overwritten() {
    let bao = OpenBao::dev();
    // The competitor's cas=0 write lands after vault-seed listed the folder (and found the path
    // absent) and just before vault-seed's own cas=0 write reaches the server.
    let theirs = "c".repeat(64);
    let proxy = competing_writer(
        &bao,
        None,
        "POST /v1/secret/data/race1/dev/A ",
        "secret/data/race1/dev/A",
        json!({"options": {"cas": 0}, "data": {"password": theirs}}),
    );
    let spec = "[vault]\nmount = \"secret\"\npath = \"race1/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex32\" }\n";
    let dir = spec_dir(&bao, spec);
    let out = Run::new(&bao)
        .addr(&proxy.addr)
        .env("VAULT_SEED_SPECS", dir.path())
        .args(["apply", "dev", "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(outcome_of(&doc, "A"), "exists", "{doc}");
    assert_eq!(doc["summary"]["created"], 0, "{doc}");
    assert!(
        doc["results"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("created concurrently"),
        "{doc}"
    );
    let (data, version) = bao.kv_get("secret", "race1/dev/A").unwrap();
    assert_eq!(version, 1, "nothing written over the competitor's version");
    assert_eq!(data["password"], theirs.as_str());
}

#[test]
fn kv_v1_reports_created_only_when_the_value_reads_back_and_counts_contested_paths() {
    let bao = OpenBao::dev();
    bao.mount_kv("kv1", 1);
    // KV v1 cannot refuse: the competitor writes between vault-seed's write and its read-back.
    let theirs = "d".repeat(64);
    let proxy = competing_writer(
        &bao,
        Some("POST /v1/kv1/app/dev/A "),
        "GET /v1/kv1/app/dev/A ",
        "kv1/app/dev/A",
        json!({"password": theirs}),
    );
    let dir = spec_dir(&bao, "[vault]\nmount = \"kv1\"\npath = \"app/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex32\" }\n[secrets.B]\ndescription = \"b\"\nfields.password = { generator = \"hex32\" }\n");
    let out = Run::new(&bao)
        .addr(&proxy.addr)
        .env("VAULT_SEED_SPECS", dir.path())
        .args(["apply", "dev", "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(outcome_of(&doc, "A"), "exists", "{doc}");
    assert_eq!(outcome_of(&doc, "B"), "created", "{doc}");
    assert_eq!(doc["summary"]["created"], 1, "{doc}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("1 path(s) were contested"), "{notes}");
    let (_, body) = bao.api("GET", "kv1/app/dev/A", None);
    assert_eq!(body["data"]["password"], theirs.as_str());
}

#[test]
fn nothing_is_written_to_a_mount_whose_type_cannot_be_read_unless_the_operator_names_it() {
    let bao = OpenBao::dev();
    bao.mount_kv("kv9", 2);
    // A token with nothing on `kv9`: OpenBao then answers `sys/internal/ui/mounts/kv9` with 403
    // (as it does for `auth`, even for root), so vault-seed cannot see that it is a KV engine.
    bao.put_policy(
        "elsewhere",
        "path \"secret/data/x\" { capabilities = [\"read\"] }\n",
    );
    let token = bao.token_with_policies(&["elsewhere"]);
    let dir = spec_dir(&bao, "[vault]\nmount = \"kv9\"\npath = \"app/{env}\"\nkv_version = 2\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex32\" }\n");
    let as_token = |args: &[&str]| Run::new(&bao).token(&token).specs(dir.path()).args(args);
    let out = as_token(&["apply", "dev", "-o", "json", "-v"])
        .status(1)
        .output();
    let doc = out.json();
    assert_eq!(outcome_of(&doc, "A"), "error", "{doc}");
    let detail = doc["results"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("--assume-kv-mount kv9"), "{detail}");
    assert!(detail.contains("nothing was written"), "{detail}");
    // Token check and mount detection only: no LIST, no write was sent.
    assert_eq!(out.requests_sent(), 2, "{}", out.stderr_text());
    // `plan` shows the same refusal before anyone runs apply.
    let plan = as_token(&["plan", "dev", "-o", "json"]).status(1).json();
    assert_eq!(outcome_of(&plan, "A"), "error", "{plan}");
    // Named for this run, the mount is taken at the spec's kv_version, and the report says so
    // (here the token then lacks the capability, which is reported as usual).
    let doc = as_token(&["apply", "dev", "-o", "json", "--assume-kv-mount", "kv9"])
        .status(1)
        .json();
    assert_eq!(outcome_of(&doc, "A"), "denied", "{doc}");
    assert!(
        doc["notes"].to_string().contains("on the operator's word"),
        "{doc}"
    );
    let plan = as_token(&["plan", "dev", "-o", "json", "--assume-kv-mount", "kv9"])
        .status(1)
        .json();
    assert!(
        plan["notes"].to_string().contains("--assume-kv-mount kv9"),
        "{plan}"
    );
}

#[test]
fn a_path_under_a_mount_is_not_taken_for_a_mount() {
    let bao = OpenBao::dev();
    // `secret/foo` is not a mount: writes would land under `secret/` at other API paths.
    let dir = spec_dir(&bao, "[vault]\nmount = \"secret/foo\"\npath = \"app/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex32\" }\n");
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json", "-v"])
        .status(1)
        .output();
    let doc = out.json();
    let detail = doc["results"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("`secret/foo` is not a mount"), "{detail}");
    assert_eq!(out.requests_sent(), 2, "{}", out.stderr_text());
    let (s, body) = bao.api("LIST", "secret/metadata", None);
    assert_eq!(s, 404, "nothing was written under secret/: {body}");
}

#[test]
fn soft_deleted_and_destroyed_paths_are_recreated() {
    let bao = OpenBao::dev();
    Run::new(&bao).real_specs().args(["apply", ENV]).output();
    let salt = format!("{FOLDER}/SECURITY__API_KEY_SALT");
    let token = format!("{FOLDER}/APP__CORE_SERVICES_MACHINE_TOKEN");
    let (s, b) = bao.api("DELETE", &format!("secret/data/{salt}"), None);
    assert_eq!(s, 204, "{b}");
    let (s, b) = bao.api(
        "PUT",
        &format!("secret/destroy/{token}"),
        Some(&json!({ "versions": [1] })),
    );
    assert_eq!(s, 204, "{b}");
    let plan = Run::new(&bao)
        .real_specs()
        .args(["plan", ENV, "-o", "json"])
        .json();
    assert_eq!(outcome_of(&plan, "SECURITY__API_KEY_SALT"), "recreate");
    let out = Run::new(&bao)
        .real_specs()
        .args(["apply", ENV, "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(outcome_of(&doc, "SECURITY__API_KEY_SALT"), "recreated");
    assert_eq!(
        outcome_of(&doc, "APP__CORE_SERVICES_MACHINE_TOKEN"),
        "recreated"
    );
    assert_eq!(bao.kv_get("secret", &salt).unwrap().1, 2);
    assert_eq!(bao.kv_get("secret", &token).unwrap().1, 2);
    assert_eq!(
        bao.kv_version("secret", &format!("{FOLDER}/ZITADEL_MASTERKEY")),
        Some(1)
    );
}

#[test]
fn kv_v1_mount_falls_back_to_read_then_write_and_says_so() {
    let bao = OpenBao::dev();
    bao.mount_kv("kv1", 1);
    let dir = spec_dir(&bao, "[vault]\nmount = \"kv1\"\npath = \"app/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex32\" }\n");
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        .stderr_has("not race-free")
        .output();
    let doc = out.json();
    assert_eq!(outcome_of(&doc, "A"), "created");
    let (s, body) = bao.api("GET", "kv1/app/dev/A", None);
    assert_eq!(s, 200);
    assert_eq!(body["data"]["password"].as_str().unwrap().len(), 64);
    let again = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        .json();
    assert_eq!(outcome_of(&again, "A"), "exists");
}

#[test]
fn cas_required_mount_works_unchanged() {
    let bao = OpenBao::dev();
    bao.mount_kv("strict", 2);
    let (s, b) = bao.api(
        "POST",
        "strict/config",
        Some(&json!({ "cas_required": true })),
    );
    assert!(s == 200 || s == 204, "{b}");
    let dir = spec_dir(&bao, "[vault]\nmount = \"strict\"\npath = \"app/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"fernet\" }\n");
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        .output();
    assert_eq!(outcome_of(&out.json(), "A"), "created");
    assert_eq!(bao.kv_version("strict", "app/dev/A"), Some(1));
}

const ONE_FIELD: &str = "[vault]\nmount = \"secret\"\npath = \"grow/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.DB]\ndescription = \"db\"\nfields.password = { generator = \"hex32\" }\n";

#[test]
fn a_field_added_to_the_spec_later_extends_the_secret_only() {
    let bao = OpenBao::dev();
    let dir = spec_dir(&bao, ONE_FIELD);
    Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev"])
        .output();
    let (before, _) = bao.kv_get("secret", "grow/dev/DB").unwrap();
    std::fs::write(
        dir.path().join("app.toml"),
        format!(
            "{}fields.username = {{ generator = \"uuid\" }}\n",
            ONE_FIELD.replace("{addr}", &bao.addr)
        ),
    )
    .unwrap();
    let plan = Run::new(&bao)
        .specs(dir.path())
        .args(["plan", "dev", "-o", "json"])
        .json();
    let rows = plan["results"].clone();
    assert_eq!(rows[0]["outcome"], "exists");
    assert_eq!(rows[1]["outcome"], "extend");
    let out = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(doc["results"][0]["outcome"], "exists");
    assert_eq!(doc["results"][1]["outcome"], "extended");
    let (after, version) = bao.kv_get("secret", "grow/dev/DB").unwrap();
    assert_eq!(version, 2);
    assert_eq!(
        after["password"], before["password"],
        "the existing field is unchanged"
    );
    assert_eq!(after["username"].as_str().unwrap().len(), 36);
}

#[test]
fn token_without_update_or_without_access_is_denied_with_path_and_capability() {
    let bao = OpenBao::dev();
    let dir = spec_dir(&bao, ONE_FIELD);
    // Create-only: may create new paths and read, but not update an existing one.
    bao.put_policy(
        "create-only",
        r#"
path "secret/data/grow/*"     { capabilities = ["create", "read"] }
path "secret/metadata/grow/*" { capabilities = ["read", "list"] }
"#,
    );
    let create_only = bao.token_with_policies(&["create-only"]);
    Run::new(&bao)
        .token(&create_only)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        // The metadata warning.
        .stderr_has("custom_metadata")
        .output();
    std::fs::write(
        dir.path().join("app.toml"),
        format!(
            "{}fields.username = {{ generator = \"uuid\" }}\n",
            ONE_FIELD.replace("{addr}", &bao.addr)
        ),
    )
    .unwrap();
    let out = Run::new(&bao)
        .token(&create_only)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
    let row = &doc["results"][1];
    assert_eq!(row["outcome"], "denied", "{doc}");
    assert!(
        row["detail"]
            .as_str()
            .unwrap()
            .contains("lacks `update` on `secret/data/grow/dev/DB`"),
        "{row}"
    );
    assert_eq!(bao.kv_version("secret", "grow/dev/DB"), Some(1));

    // No access at all (only the default policy): Vault hides even the mount's version, and
    // vault-seed refuses to guess it.
    let nobody = bao.token_with_policies(&["default"]);
    let out = Run::new(&bao)
        .token(&nobody)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
    assert_eq!(doc["results"][0]["outcome"], "error");
    assert!(
        doc["results"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("set `kv_version` in the spec"),
        "{doc}"
    );
    // With the version in the spec, vault-seed still writes nothing to a mount it has not seen
    // to be KV, unless the operator names it for this run; then the read itself is denied,
    // named with the path.
    let spec = std::fs::read_to_string(dir.path().join("app.toml")).unwrap();
    std::fs::write(
        dir.path().join("app.toml"),
        spec.replace(
            "path = \"grow/{env}\"",
            "path = \"grow/{env}\"\nkv_version = 2",
        ),
    )
    .unwrap();
    let out = Run::new(&bao)
        .token(&nobody)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        .status(1)
        .output();
    let doc = out.json();
    assert_eq!(doc["results"][0]["outcome"], "error");
    assert!(
        doc["results"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("--assume-kv-mount secret"),
        "{doc}"
    );
    let out = Run::new(&bao)
        .token(&nobody)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json", "--assume-kv-mount", "secret"])
        .status(1)
        .stderr_has("may not `list`")
        .output();
    let doc = out.json();
    assert_eq!(doc["results"][0]["outcome"], "denied");
    assert!(
        doc["results"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("lacks `read` on `secret/data/grow/dev/DB`"),
        "{doc}"
    );
}

#[test]
fn plan_writes_nothing() {
    let bao = OpenBao::dev();
    bao.kv_put(
        "secret",
        &format!("{FOLDER}/ZITADEL_MASTERKEY"),
        json!({ "password": "m".repeat(32) }),
    );
    let (_, meta_before) = bao.api(
        "GET",
        &format!("secret/metadata/{FOLDER}/ZITADEL_MASTERKEY"),
        None,
    );
    let out = Run::new(&bao)
        .real_specs()
        .args(["plan", ENV, "-o", "json"])
        .output();
    let doc = out.json();
    assert_eq!(doc["dry_run"], true);
    assert_eq!(outcome_of(&doc, "ZITADEL_MASTERKEY"), "exists");
    assert_eq!(outcome_of(&doc, "SECURITY__API_KEY_SALT"), "create");
    let (_, meta_after) = bao.api(
        "GET",
        &format!("secret/metadata/{FOLDER}/ZITADEL_MASTERKEY"),
        None,
    );
    assert_eq!(meta_before["data"], meta_after["data"], "metadata changed");
    for (name, _) in REAL.iter().filter(|(n, _)| *n != "ZITADEL_MASTERKEY") {
        assert_eq!(
            bao.kv_version("secret", &format!("{FOLDER}/{name}")),
            None,
            "{name} was written"
        );
    }
    Run::new(&bao)
        .real_specs()
        .args(["plan", ENV])
        .stdout_has("nothing was written (plan)")
        .output();
}

/// No secret (the token, a generated value, a hand-made one, a value typed at `set`, a rotated
/// one) appears in what any command prints, at any verbosity: apply (human and JSON), plan, set,
/// rotate, verify and policy, each quiet, with -v, -vv, -vvv, and at trace level. Every run is
/// checked to have done its work, so the search covers real output, not early failures.
#[test]
#[allow(clippy::too_many_lines)] // one scenario told step by step; splitting it would hide the story
fn no_value_appears_in_any_output_at_any_verbosity() {
    let bao = OpenBao::dev();
    // Hand-made and invalid (31 bytes, not 32): reported by apply and verify, never echoed.
    let hand_made = "hand-made-masterkey-value-31byt";
    bao.kv_put(
        "secret",
        &format!("{FOLDER}/ZITADEL_MASTERKEY"),
        json!({ "password": hand_made }),
    );
    let policy = Run::offline()
        .real_specs()
        .args(["policy", ENV])
        .output()
        .stdout_text();
    bao.eso_role(&policy);
    // (flags, RUST_LOG=trace, what each run against Vault then logs, what one of them logs)
    let levels: [(&[&str], bool, &str, &str); 5] = [
        (&[], false, "", ""),
        (&["-v"], false, " INFO vault_seed", " INFO vault_seed"),
        (&["-vv"], false, " INFO vault_seed", " DEBUG vault_seed"),
        (&["-vvv"], false, " INFO vault_seed", " DEBUG vault_seed"),
        (&["-vvv"], true, " INFO vault_seed", " DEBUG vault_seed"),
    ];
    let mut outputs = Vec::new();
    let mut typed = Vec::new();
    for (i, (flags, trace, logs, some_log)) in levels.into_iter().enumerate() {
        let before = outputs.len();
        let run = |args: &[&str]| {
            let run = Run::new(&bao).real_specs().args(args).args(flags);
            if trace {
                run.env("RUST_LOG", "trace")
            } else {
                run
            }
        };
        // Run, check that it logged at this level (and what else is expected of it), and keep
        // what it printed.
        let mut seen = |run: Run| {
            let out = run.stderr_has(logs).output();
            outputs.push(out.all_text());
            out
        };
        // apply creates what is missing (the first time) and fails on the invalid masterkey.
        seen(run(&["apply", ENV]).status(1).stdout_has("invalid"));
        let doc = seen(run(&["apply", ENV, "-o", "json"]).status(1)).json();
        assert_eq!(outcome_of(&doc, "ZITADEL_MASTERKEY"), "invalid", "{doc}");
        assert_eq!(
            outcome_of(&doc, "SECURITY__API_KEY_SALT"),
            "exists",
            "{doc}"
        );
        seen(run(&["plan", ENV]).status(1));
        let value = format!("typed-pat-{i}-3c9e1d77");
        seen(run(&["set", ENV, "IAM_SERVICE__PAT", "--force"]).stdin(format!("{value}\n")));
        let (pat, _) = bao
            .kv_get("secret", &format!("{FOLDER}/IAM_SERVICE__PAT"))
            .unwrap();
        assert_eq!(pat["value"], value.as_str(), "set did its work");
        typed.push(value);
        seen(run(&[
            "rotate",
            ENV,
            "APP__CORE_SERVICES_MACHINE_TOKEN",
            "--yes",
        ]));
        assert_eq!(
            bao.kv_version(
                "secret",
                &format!("{FOLDER}/APP__CORE_SERVICES_MACHINE_TOKEN")
            ),
            Some(i as u64 + 2),
            "rotate did its work"
        );
        // verify reads every value (and ESO's policy, granted): only the masterkey fails.
        seen(
            run(&["verify", ENV, "--skip-kube"])
                .status(1)
                .stdout_has("ZITADEL_MASTERKEY"),
        );
        assert!(
            outputs[before..].iter().any(|o| o.contains(some_log)),
            "{flags:?}: no {some_log:?} logged"
        );
        // policy is offline: it has nothing to log.
        let out = run(&["policy", ENV]).output();
        assert_eq!(out.stdout_text(), policy);
        outputs.push(out.all_text());
    }
    let all = outputs.join("\n");
    // Every value each secret ever held: the machine token's rotated versions too.
    let mut secrets = vec![bao.token.clone(), hand_made.to_string()];
    secrets.extend(typed);
    for (name, field) in REAL {
        let path = format!("{FOLDER}/{name}");
        for version in 1..=bao.kv_version("secret", &path).unwrap() {
            let (s, body) = bao.api(
                "GET",
                &format!("secret/data/{path}?version={version}"),
                None,
            );
            assert_eq!(s, 200, "{path} v{version}: {body}");
            let v = body["data"]["data"][*field].as_str().unwrap().to_string();
            if v != "placeholder" {
                secrets.push(v);
            }
        }
    }
    // The token, the hand-made value, the 5 typed PATs; read back: the hand-made value, the 5
    // PATs, the 3 generated values and the salt's 5 rotations.
    assert_eq!(secrets.len(), 2 + 5 + (1 + 5 + 3 + 5), "{}", secrets.len());
    for s in &secrets {
        assert!(!all.contains(s.as_str()), "a secret leaked into the output");
    }
}

#[test]
fn connection_problems_are_clear() {
    // Unreachable server: exit 1, named.
    let port = common::free_port();
    Run::offline()
        .addr(&format!("http://127.0.0.1:{port}"))
        .token("t")
        .env("VAULT_CLIENT_TIMEOUT", "2s")
        .real_specs()
        .args(["apply", ENV])
        .status(1)
        .stderr_has(format!("cannot reach Vault at `http://127.0.0.1:{port}`"))
        .output();
    // No token anywhere: usage error, nothing sent.
    Run::offline()
        .addr("http://127.0.0.1:1")
        .real_specs()
        .args(["apply", ENV])
        .status(2)
        .stderr_has("no Vault token")
        .output();
    // A bad token: exit 1 and says so.
    let bao = OpenBao::dev();
    Run::new(&bao)
        .token("not-a-token")
        .real_specs()
        .args(["apply", ENV])
        .status(1)
        .stderr_has("rejected the token")
        .output();
    // Plain http to a non-loopback host is refused before anything is sent.
    Run::offline()
        .addr("http://vault.example:8200")
        .token("t")
        .real_specs()
        .args(["apply", ENV])
        .status(2)
        .stderr_has("refusing to send the Vault token over plain http://")
        .output();
    // An unknown environment is a usage error.
    Run::new(&bao)
        .real_specs()
        .args(["apply", "nope"])
        .status(2)
        .stderr_has("known environments: `auh1-dev`")
        .output();
}

#[test]
fn token_from_vault_token_file_and_bao_twins() {
    let bao = OpenBao::dev();
    std::fs::write(
        bao.home.path().join(".vault-token"),
        format!("{}\n", bao.token),
    )
    .unwrap();
    Run::home(bao.home.path())
        .env("BAO_ADDR", &bao.addr)
        .real_specs()
        .args(["plan", ENV])
        .stderr_has("token from ~/.vault-token")
        .output();
    // BAO_TOKEN, VAULT_TOKEN's twin, comes before ~/.vault-token (here made wrong), and after
    // VAULT_TOKEN: each time the run names where its token came from, and a wrong token used
    // would have been rejected.
    std::fs::write(bao.home.path().join(".vault-token"), "not-a-token\n").unwrap();
    let run = |vars: &[(&str, &str)]| {
        let mut run = Run::home(bao.home.path()).env("BAO_ADDR", &bao.addr);
        for (k, v) in vars {
            run = run.env(k, v);
        }
        run.real_specs().args(["plan", ENV])
    };
    run(&[("BAO_TOKEN", &bao.token)])
        .stderr_has("(token from BAO_TOKEN)")
        .output();
    run(&[("VAULT_TOKEN", &bao.token), ("BAO_TOKEN", "not-a-token")])
        .stderr_has("(token from VAULT_TOKEN)")
        .output();
    run(&[("VAULT_TOKEN", "not-a-token"), ("BAO_TOKEN", &bao.token)])
        .status(1)
        .stderr_has("rejected the token")
        .output();
    run(&[])
        .status(1)
        .stderr_has("(token from ~/.vault-token)")
        .output();
}

#[test]
fn hostile_values_in_vault_are_judged_not_trusted() {
    let bao = OpenBao::dev();
    let huge = "h".repeat(2 << 20);
    bao.kv_put(
        "secret",
        &format!("{FOLDER}/SECURITY__API_KEY_SALT"),
        json!({ "password": 12345 }),
    );
    bao.kv_put(
        "secret",
        &format!("{FOLDER}/APP__CORE_SERVICES_MACHINE_TOKEN"),
        json!({ "password": huge }),
    );
    bao.kv_put(
        "secret",
        &format!("{FOLDER}/SECURITY__MASTER_ENCRYPTION_KEY"),
        json!({ "password": ["a", {"b": null}] }),
    );
    bao.kv_put(
        "secret",
        &format!("{FOLDER}/ZITADEL_MASTERKEY"),
        json!({ "other": "x" }),
    );
    let out = Run::new(&bao)
        .real_specs()
        .args(["apply", ENV, "-o", "json"])
        .status(1)
        // The huge value never reaches the output.
        .never_shows("hhhhhhhhhh")
        .output();
    let doc = out.json();
    let detail = |name: &str| {
        doc["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"].as_str().unwrap().ends_with(name))
            .unwrap()["detail"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(outcome_of(&doc, "SECURITY__API_KEY_SALT"), "invalid");
    assert!(detail("SECURITY__API_KEY_SALT").contains("is a number, not a string"));
    assert_eq!(
        outcome_of(&doc, "APP__CORE_SERVICES_MACHINE_TOKEN"),
        "invalid"
    );
    assert_eq!(
        outcome_of(&doc, "SECURITY__MASTER_ENCRYPTION_KEY"),
        "invalid"
    );
    assert!(detail("SECURITY__MASTER_ENCRYPTION_KEY").contains("is a list"));
    // The masterkey is fixed: missing the spec's field, it is invalid and never extended (a
    // new key beside the hand-made field would be used instead of it).
    assert_eq!(outcome_of(&doc, "ZITADEL_MASTERKEY"), "invalid");
    assert!(detail("ZITADEL_MASTERKEY").contains("holds `other`; the spec says `password`"));
    let (d, v) = bao
        .kv_get("secret", &format!("{FOLDER}/ZITADEL_MASTERKEY"))
        .unwrap();
    assert_eq!(
        (d["other"].as_str(), d.get("password"), v),
        (Some("x"), None, 1)
    );
    // Nothing hostile was overwritten (and the huge value was not shown: checked above).
    assert_eq!(
        bao.kv_version("secret", &format!("{FOLDER}/SECURITY__API_KEY_SALT")),
        Some(1)
    );
}

/// Concurrent applies of placeholder-only secrets: each path is reported created by exactly one
/// run (a marker is the same in every run, so it cannot prove who wrote it).
#[test]
fn concurrent_applies_of_placeholders_claim_each_path_once() {
    let bao = OpenBao::dev();
    let mut spec = String::from("[vault]\nmount = \"secret\"\npath = \"ph/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n");
    for i in 0..60 {
        spec.push_str(&format!("[secrets.P{i:02}]\ndescription = \"p\"\nfields.value = {{ generator = \"placeholder\" }}\n"));
    }
    let dir = spec_dir(&bao, &spec);
    let children: Vec<_> = (0..4)
        .map(|_| {
            Run::new(&bao)
                .specs(dir.path())
                .args(["apply", "dev", "-o", "json"])
                .spawn()
        })
        .collect();
    let mut created = 0;
    for child in children {
        let out = common::Out::from(child.wait_with_output().unwrap());
        assert_eq!(out.status.code(), Some(0), "{}", out.stderr_text());
        created += out.json()["summary"]["created"].as_u64().unwrap();
    }
    assert_eq!(created, 60);
}

#[test]
fn no_metadata_saves_one_request_per_created_path_and_marks_nothing() {
    let bao = OpenBao::dev();
    // Two environments of the same 120 secrets, in two folders.
    let spec = many_secrets_spec().replace(
        "[environments.dev]\n",
        "[environments.dev]\nvault_addr = \"{addr}\"\n[environments.dev2]\n",
    );
    let dir = spec_dir(&bao, &spec);
    let with = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json", "-v"])
        .output();
    let without = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev2", "--no-metadata", "-o", "json", "-v"])
        .output();
    let doc = without.json();
    assert_eq!(doc["summary"]["created"], MANY as u64, "{doc}");
    assert!(
        doc["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("--no-metadata")),
        "{doc}"
    );
    assert_eq!(with.json()["notes"], json!([]));
    // Exactly the custom_metadata writes are saved: one per created path.
    assert_eq!(
        with.requests_sent() - without.requests_sent(),
        MANY as u64,
        "with: {}, without: {}",
        with.requests_sent(),
        without.requests_sent()
    );
    for i in [0, 57, MANY - 1] {
        let (_, marked) = bao.api("GET", &format!("secret/metadata/race/dev/S{i:03}"), None);
        assert_eq!(
            marked["data"]["custom_metadata"]["managed-by"],
            "vault-seed"
        );
        let (_, bare) = bao.api("GET", &format!("secret/metadata/race/dev2/S{i:03}"), None);
        assert_eq!(bare["data"]["custom_metadata"], Value::Null, "{bare}");
        assert_eq!(
            bao.kv_version("secret", &format!("race/dev2/S{i:03}")),
            Some(1)
        );
    }
    // A re-run claims none of the unmarked paths: they exist, "present, not marked"; the
    // marked ones carry no such remark.
    let doc = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev2", "-o", "json"])
        .json();
    assert_eq!(doc["summary"]["exists"], MANY as u64, "{doc}");
    assert_eq!(doc["summary"]["created"], 0, "{doc}");
    for row in doc["results"].as_array().unwrap() {
        assert_eq!(row["outcome"], "exists", "{row}");
        assert!(
            row["detail"]
                .as_str()
                .unwrap_or("")
                .contains("present, not marked"),
            "{row}"
        );
    }
    let marked = Run::new(&bao)
        .specs(dir.path())
        .args(["apply", "dev", "-o", "json"])
        .json();
    assert!(
        marked["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["detail"].is_null()),
        "{marked}"
    );
    // `plan` has no such flag: it writes nothing.
    Run::new(&bao)
        .specs(dir.path())
        .args(["plan", "dev", "--no-metadata"])
        .status(2)
        .output();
}

/// Request lines seen by a proxy, each with the connection it came on (0: the first accepted).
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, u64)>>>;

/// Request lines as a proxy in front of the server sees them, each with its connection. `hold`
/// is called with each line and the count of connections accepted so far, before the request is
/// forwarded.
fn watching_proxy(
    bao: &OpenBao,
    hold: impl Fn(&str, &std::sync::atomic::AtomicU64) + Send + Sync + 'static,
) -> (FaultProxy, Seen) {
    use common::proxy::Fault;
    use std::sync::{Arc, Mutex, OnceLock};
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let accepted: Arc<OnceLock<Arc<std::sync::atomic::AtomicU64>>> = Arc::new(OnceLock::new());
    let hold = Arc::new(hold);
    let proxy = FaultProxy::start(&bao.addr, {
        let (seen, accepted) = (seen.clone(), accepted.clone());
        move |conn| {
            let (seen, accepted, hold) = (seen.clone(), accepted.clone(), hold.clone());
            Fault::Requests(Arc::new(move |chunk: &[u8]| {
                if let (Some(line), Some(n)) = (common::proxy::request_line(chunk), accepted.get())
                {
                    seen.lock().unwrap().push((line.clone(), conn));
                    hold(&line, n);
                }
                Verdict::Forward
            }))
        }
    });
    let _ = accepted.set(proxy.connections.clone());
    (proxy, seen)
}

/// No value read back from `paths` (secret/data/...) appears in `text`.
fn assert_no_value_in(bao: &OpenBao, paths: &[String], text: &str) {
    for p in paths {
        let (data, _) = bao
            .kv_get("secret", p)
            .unwrap_or_else(|| panic!("{p} missing"));
        for v in data.values() {
            let v = v.as_str().unwrap();
            assert!(!text.contains(v), "a value of {p} appears in the output");
        }
    }
}

#[test]
fn the_mount_detection_and_the_connections_go_out_with_the_token_check_and_nothing_else_before_both_are_answered(
) {
    use common::proxy::{first, holding_the_token_check};
    // Over a network each exchange costs a round trip: the token check, the mount detection and
    // the connections of the first writes (each a round trip before its first request) go out
    // at once (bench/latency counts the round trips). The proxy holds the token check until the
    // mount detection has been answered and the seven warm-ups are out (nine connections for
    // the real spec's nine paths: the token check's, the mount detection's, seven more); a run
    // that sends them only after the token check never gets there (the hold lets go after a
    // minute). Nothing that depends on either answer goes before both are in.
    let bao = OpenBao::dev();
    let (proxy, events) = holding_the_token_check(&bao.addr, 7);
    let out = Run::new(&bao)
        .real_specs()
        .addr(&proxy.addr)
        .args(["apply", ENV, "-o", "json"])
        .output();
    assert_eq!(out.json()["summary"]["created"], 6, "{}", out.stdout_text());
    let log = events.log();
    let token_sent = first(&log, "sent GET /v1/auth/token/lookup-self").unwrap();
    let token_answered = first(&log, "answered GET /v1/auth/token/lookup-self").unwrap();
    let mounts_answered = first(&log, "answered GET /v1/sys/internal/ui/mounts/").unwrap();
    assert!(
        mounts_answered < token_sent,
        "the mount detection waited for the token check: {log:#?}"
    );
    let opened_before = log[..token_sent]
        .iter()
        .filter(|e| *e == "sent HEAD /v1/sys/health")
        .count();
    assert_eq!(
        opened_before, 7,
        "warm-ups before the token check: {log:#?}"
    );
    // No LIST, read or write before both answers were in.
    let first_dependent = log
        .iter()
        .position(|e| e.starts_with("sent ") && !common::proxy::start_up(e))
        .unwrap();
    assert!(
        first_dependent > token_answered && first_dependent > mounts_answered,
        "{log:#?}"
    );
    // The generated ones (the placeholders' markers are no secret).
    let paths: Vec<String> = REAL
        .iter()
        .filter(|(_, field)| *field == "password")
        .map(|(n, _)| format!("{FOLDER}/{n}"))
        .collect();
    assert_no_value_in(&bao, &paths, &out.all_text());
}

#[test]
fn a_refused_token_is_the_error_though_the_mount_detection_answered_and_nothing_is_listed() {
    use common::proxy::{first, recording, seen};
    // The mount detection goes with the token check and is answered first (the proxy holds the
    // token check until then): the token check's refusal is still the error, and no LIST, read
    // or write follows.
    let bao = OpenBao::dev();
    for command in ["apply", "plan"] {
        let (proxy, events) = recording(&bao.addr, |line, events| {
            if line == "GET /v1/auth/token/lookup-self" {
                events.wait_until(|log, _| seen(log, "answered GET /v1/sys/internal/ui/mounts/"));
            }
        });
        Run::new(&bao)
            .real_specs()
            .addr(&proxy.addr)
            .token("hvs.not-a-token-4f1c")
            .args([command, ENV])
            .status(1)
            .stderr_has("Vault rejected the token: it is missing, expired or revoked")
            .never_shows("hvs.not-a-token-4f1c")
            .output();
        let log = events.log();
        let mounts = first(&log, "answered GET /v1/sys/internal/ui/mounts/");
        let token = first(&log, "answered GET /v1/auth/token/lookup-self");
        assert!(mounts.unwrap() < token.unwrap(), "{log:#?}");
        assert!(
            !log.iter()
                .any(|e| e.starts_with("sent ") && !common::proxy::start_up(e)),
            "{command}: {log:#?}"
        );
    }
    assert_eq!(
        bao.kv_version("secret", &format!("{FOLDER}/ZITADEL_MASTERKEY")),
        None
    );
}

#[test]
fn the_mounts_of_a_run_are_detected_at_once() {
    use common::proxy::{recording, seen};
    // Two mounts: the detection of the first (in name order) is held until the second's is out;
    // one after the other, it never is (the hold lets go after a minute).
    let bao = OpenBao::dev();
    bao.mount_kv("other", 2);
    let dir = tempfile::tempdir().unwrap();
    for (file, mount) in [("a.toml", "secret"), ("b.toml", "other")] {
        std::fs::write(
            dir.path().join(file),
            format!("[vault]\nmount = \"{mount}\"\npath = \"two/{{env}}\"\n[environments.dev]\nvault_addr = \"{}\"\n[secrets.{mount}-A]\ndescription = \"a\"\nfields.password = {{ generator = \"hex32\" }}\n", bao.addr),
        )
        .unwrap();
    }
    let (proxy, events) = recording(&bao.addr, |line, events| {
        if line == "GET /v1/sys/internal/ui/mounts/other" {
            events.wait_until(|log, _| seen(log, "sent GET /v1/sys/internal/ui/mounts/secret"));
        }
    });
    let out = Run::new(&bao)
        .specs(dir.path())
        .addr(&proxy.addr)
        .args(["apply", "dev", "-o", "json"])
        .output();
    assert_eq!(out.json()["summary"]["created"], 2, "{}", out.stdout_text());
    let log = events.log();
    let at = |e: &str| log.iter().position(|x| x == e).unwrap();
    assert!(
        at("sent GET /v1/sys/internal/ui/mounts/secret")
            < at("answered GET /v1/sys/internal/ui/mounts/other"),
        "{log:#?}"
    );
}

#[test]
fn paths_are_written_while_other_folders_are_still_being_listed() {
    // 40 folders of two paths: no LIST phase before the first write, so the server is never left
    // waiting for the last LIST while writes could go (and a LIST's answer is used at once).
    let bao = OpenBao::dev();
    let dir = tempfile::tempdir().unwrap();
    for f in 0..40 {
        std::fs::write(
            dir.path().join(format!("app{f:02}.toml")),
            format!("[vault]\nmount = \"secret\"\npath = \"pipe/app{f:02}/{{env}}\"\n[environments.dev]\nvault_addr = \"{}\"\n[secrets.A]\ndescription = \"a\"\nfields.password = {{ generator = \"hex32\" }}\n[secrets.B]\ndescription = \"b\"\nfields.password = {{ generator = \"fernet\" }}\n", bao.addr),
        )
        .unwrap();
    }
    let (proxy, seen) = watching_proxy(&bao, |_, _| {});
    let out = Run::new(&bao)
        .specs(dir.path())
        .addr(&proxy.addr)
        .args(["apply", "dev", "-o", "json"])
        .output();
    assert_eq!(
        out.json()["summary"]["created"],
        80,
        "{}",
        out.stdout_text()
    );
    let lines: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(l, _)| l.clone())
        .collect();
    assert_eq!(lines.iter().filter(|l| l.starts_with("LIST ")).count(), 40);
    let first_write = lines
        .iter()
        .position(|l| l.starts_with("POST /v1/secret/data/"))
        .unwrap();
    let last_list = lines.iter().rposition(|l| l.starts_with("LIST ")).unwrap();
    assert!(
        first_write < last_list,
        "every LIST went before the first write: {:?}",
        &lines[..50]
    );
    let paths: Vec<String> = (0..40)
        .flat_map(|f| ["A", "B"].map(|s| format!("pipe/app{f:02}/dev/{s}")))
        .collect();
    assert_no_value_in(&bao, &paths, &out.all_text());
}

/// Specs of two applications, `a` and `b`, each with two generated secrets (`ONE`, `TWO`) in
/// its own folder (`secret/<app>/dev`).
fn two_applications() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for app in ["a", "b"] {
        let spec = format!(
            "[vault]\nmount = \"secret\"\npath = \"{app}/{{env}}\"\n[environments.dev]\n\
             [secrets.ONE]\ndescription = \"d\"\nfields.password = {{ generator = \"hex32\" }}\n\
             [secrets.TWO]\ndescription = \"d\"\nfields.password = {{ generator = \"fernet\" }}\n"
        );
        std::fs::write(dir.path().join(format!("{app}.toml")), spec).unwrap();
    }
    dir
}

#[test]
fn rows_are_written_while_the_run_goes_not_at_its_end() {
    use common::proxy::recording;
    use std::io::BufRead;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    // Issue 19: the report is written as the run goes, not held to its end (at 100,000 paths
    // the held results were most of the run's memory). Two applications in two folders; the
    // proxy holds every request about the second folder until the test has read a row of the
    // first from vault-seed's stdout, a pipe. A report printed at the run's end shows no row
    // while the run waits there (the hold lets go after a minute, and the assertions fail).
    let bao = OpenBao::dev();
    let dir = two_applications();
    let released = Arc::new(AtomicBool::new(false));
    let (proxy, events) = recording(&bao.addr, {
        let released = released.clone();
        move |line, events| {
            if line.contains("/b/dev") {
                events.wait_until(|_, _| released.load(Ordering::SeqCst));
            }
        }
    });
    // The table of `apply`, then the JSON of `plan` (its rows are items of `results`).
    for (args, first_row) in [
        (&["apply", "dev"][..], "secret/a/dev/ONE"),
        (
            &["plan", "dev", "-o", "json"][..],
            "\"path\": \"secret/a/dev/ONE\"",
        ),
    ] {
        released.store(false, Ordering::SeqCst);
        let earlier = events.log().len();
        let mut child = Run::new(&bao)
            .specs(dir.path())
            .addr(&proxy.addr)
            .args(args)
            .spawn();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut seen = String::new();
        let mut line = String::new();
        while stdout.read_line(&mut line).unwrap() > 0 && !line.contains(first_row) {
            seen.push_str(&line);
            line.clear();
        }
        // What the run had done about the second folder when its first row was on stdout.
        let second_folder = events
            .log()
            .into_iter()
            .skip(earlier)
            .filter(|e| e.starts_with("answered") && e.contains("/b/dev"))
            .collect::<Vec<_>>();
        released.store(true, Ordering::SeqCst);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        let out = common::Out::from(child.wait_with_output().unwrap());
        assert!(
            line.contains(first_row),
            "{args:?}: no row `{first_row}`: {seen}{rest}"
        );
        assert!(
            second_folder.is_empty(),
            "{args:?}: the first row came out only after the second folder was answered: {second_folder:?}"
        );
        assert_eq!(out.status.code(), Some(0), "{}", out.stderr_text());
        assert!(rest.contains("b/dev/TWO"), "{args:?}: {rest}");
    }
    // `apply` made the four paths; `plan` found them.
    for app in ["a", "b"] {
        assert_eq!(bao.kv_version("secret", &format!("{app}/dev/ONE")), Some(1));
    }
}

/// `-vvv` lists each request as it goes on the wire, method and path (bench/run compares this
/// list with its replay's): the same list as the server receives, and never the token or a
/// value, which travel in the headers and bodies it leaves out.
#[test]
fn the_request_log_is_the_list_the_server_receives() {
    use common::proxy::recording;
    let bao = OpenBao::dev();
    let dir = two_applications();
    let (proxy, events) = recording(&bao.addr, |_, _| {});
    let mut shown = String::new();
    // `-vvv`, and the request log alone (what bench/run asks for).
    for (args, filter, one) in [
        (
            &["apply", "dev", "-vvv"][..],
            None,
            "POST /v1/secret/data/b/dev/TWO",
        ),
        (
            &["plan", "dev"][..],
            Some("off,vault_seed::request=trace"),
            "GET /v1/secret/data/a/dev/ONE",
        ),
    ] {
        let earlier = events.log().len();
        let mut run = Run::new(&bao)
            .specs(dir.path())
            .addr(&proxy.addr)
            .args(args);
        if let Some(filter) = filter {
            run = run.env("RUST_LOG", filter);
        }
        let out = run.output();
        let mut logged: Vec<String> = out
            .stderr_text()
            .lines()
            .filter_map(|l| l.split_once(" vault_seed::request: "))
            .map(|(_, r)| r.to_string())
            .collect();
        let mut received: Vec<String> = events
            .log()
            .into_iter()
            .skip(earlier)
            .filter_map(|e| e.strip_prefix("sent ").map(str::to_string))
            .collect();
        assert!(logged.iter().any(|l| l == one), "{args:?}: {logged:?}");
        logged.sort();
        received.sort();
        assert_eq!(logged, received, "{args:?}");
        shown.push_str(&out.all_text());
    }
    assert!(!shown.contains(&bao.token), "the token was shown");
    let paths: Vec<String> = ["a", "b"]
        .iter()
        .flat_map(|app| ["ONE", "TWO"].map(|s| format!("{app}/dev/{s}")))
        .collect();
    assert_no_value_in(&bao, &paths, &shown);
}

/// A hand-seeded masterkey under another field name than the spec's: a fixed secret is never
/// extended (a new key beside the old would be used instead, and the data encrypted with the
/// old one lost). `plan`, `apply` and `verify` call the field invalid and say what it holds.
#[test]
fn a_fixed_secret_lacking_the_specs_field_is_invalid_and_never_extended() {
    const FIXED: &str = "[vault]\nmount = \"secret\"\npath = \"zitadel/{env}\"\n[environments.dev]\nvault_addr = \"{addr}\"\n[secrets.ZITADEL_MASTERKEY]\ndescription = \"masterkey\"\nfixed = true\nfields.password = { generator = \"masterkey\" }\n";
    let bao = OpenBao::dev();
    let dir = spec_dir(&bao, FIXED);
    let hand_made = "0123456789abcdef0123456789abcdef";
    bao.kv_put(
        "secret",
        "zitadel/dev/ZITADEL_MASTERKEY",
        json!({ "masterkey": hand_made }),
    );
    let said = "fixed, and holds `masterkey`; the spec says `password`: rename the field in the spec, or move the value";
    for command in ["plan", "apply"] {
        let out = Run::new(&bao)
            .specs(dir.path())
            .args([command, "dev", "-o", "json"])
            .status(1)
            .stdout_has(said)
            .never_shows(hand_made)
            .output();
        let doc = out.json();
        let row = &doc["results"][0];
        assert_eq!(row["outcome"], "invalid", "{command}: {doc}");
        assert_eq!(row["field"], "password", "{command}: {doc}");
    }
    Run::new(&bao)
        .specs(dir.path())
        .args(["verify", "dev", "--skip-kube"])
        .status(1)
        .stdout_has(said)
        .never_shows(hand_made)
        .output();
    let (data, version) = bao
        .kv_get("secret", "zitadel/dev/ZITADEL_MASTERKEY")
        .unwrap();
    assert_eq!(version, 1, "nothing written");
    assert_eq!(data.keys().collect::<Vec<_>>(), ["masterkey"]);
    assert_eq!(data["masterkey"], hand_made);
}
