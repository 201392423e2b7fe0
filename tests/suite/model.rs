//! The write gate's guarantees over any sequence of commands (issue 42): a model test. From a
//! random prior state (secrets absent, as `apply` made them, a fixed secret's key under an old
//! name or beside a field no spec names, keyrings of two to six keys, a certificate without its
//! key or of another key, markers and real values; each secret also kept at an older layout's
//! path) a random sequence of `apply`, `set` (a valid value, an invalid one, the marker) with and
//! without `--force`, `rotate` (`--yes` or `--dry-run`), `move` from the older path and `import`
//! (the cluster's Secret holding a real value, the marker, or nothing) runs for real against one
//! real OpenBao, and after every step Vault is read directly and these hold:
//! - a command that exited 2 (refused) changed no path's version;
//! - a fixed secret that was live never changed, not a field nor a value, and gained nothing;
//! - a keyring lost keys only by `rotate --yes` (only those past `keep`) or an explicit
//!   `set --force` of a new one, and a keyring a command wrote holds at most `keep` + 1 keys;
//! - a secret a command changed has its derived values agree with their inputs (the public key
//!   and certificate with the key, the template with the PAT), as `verify` judges them;
//! - a marker never replaced a real value;
//! - a `move` that exited 0 wrote where nothing was, exactly the older path's data;
//! - no value read from Vault ever shows in a command's output.
//!
//! Shrunk failures are kept in `model.proptest-regressions` beside this file; a bug the model
//! found gets a named test too.

use crate::common;

use std::collections::BTreeMap;

use base64::Engine;
use common::fake_kube::{secret, FakeKube};
use common::{OpenBao, Out, Run};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};

/// Cases run (`VAULT_SEED_MODEL_CASES` to run more or fewer).
const CASES: u32 = 256;
const KEEP: usize = 2;
const MARKER: &str = "placeholder";
const IMPORT_MARKER: &str = "import-from-cluster";
const SECRETS: [&str; 5] = ["FIX", "RING", "TLS", "PAT", "DB"];

fn spec(case: u32, addr: &str) -> String {
    format!(
        r#"
[vault]
mount = "secret"
path = "model/c{case}/{{env}}"
[environments.dev]
vault_addr = "{addr}"
kube_namespace = "ask"
[secrets.FIX]
description = "a fixed secret: data is encrypted with its key"
fixed = true
fields.key = {{ generator = "masterkey" }}
fields.pw = {{ generator = "password", length = 24 }}
[secrets.RING]
description = "a keyring keeping two previous keys"
fields.key = {{ generator = "fernet", rotation = "keyring", keep = {KEEP} }}
[secrets.TLS]
description = "a key, its certificate and its public key"
fields.k = {{ generator = "ecdsa-p256" }}
fields.c = {{ generator = "x509-self-signed", key = "k", cn = "svc", days = 30 }}
fields.p = {{ derive = {{ public_key = "k" }} }}
[secrets.PAT]
description = "a PAT a person fills in, and a header made from it"
fields.value = {{ generator = "placeholder" }}
fields.h = {{ template = "Bearer {{value}}" }}
[secrets.DB]
description = "a password a component writes to a Secret"
fields.password = {{ from_secret = "ask/db-{case}:password" }}
"#
    )
}

/// What a secret is before the commands run.
#[derive(Debug, Clone, Copy)]
enum Prior {
    /// As `apply` made it.
    Applied,
    /// Absent (its metadata deleted).
    Absent,
    /// One variant of the secret's own shapes (see [`shape`]).
    Shape(u8),
}

/// The cluster's Secret for `DB`.
#[derive(Debug, Clone, Copy)]
enum Cluster {
    Nothing,
    Real,
    Marker,
}

#[derive(Debug, Clone, Copy)]
enum Given {
    Valid,
    Invalid,
    Marker,
}

#[derive(Debug, Clone)]
enum Cmd {
    Apply,
    Set {
        target: &'static str,
        given: Given,
        ring: usize,
        force: bool,
    },
    Rotate {
        target: &'static str,
        dry_run: bool,
    },
    Import {
        force: bool,
    },
    /// `move` from where the secret was before a layout change (the prior state keeps a copy).
    Move {
        target: &'static str,
    },
}

fn prior() -> impl Strategy<Value = Prior> {
    prop_oneof![
        2 => Just(Prior::Applied),
        1 => Just(Prior::Absent),
        3 => (0u8..3).prop_map(Prior::Shape),
    ]
}

fn cmd() -> impl Strategy<Value = Cmd> {
    let given = prop_oneof![
        3 => Just(Given::Valid),
        1 => Just(Given::Invalid),
        1 => Just(Given::Marker)
    ];
    prop_oneof![
        2 => Just(Cmd::Apply),
        4 => (
            prop::sample::select(vec!["FIX.key", "FIX.pw", "RING", "PAT.value", "TLS.k", "PAT.h"]),
            given,
            1usize..=5,
            any::<bool>()
        )
            .prop_map(|(target, given, ring, force)| Cmd::Set {
                target,
                given,
                ring,
                force
            }),
        3 => (
            prop::sample::select(vec!["FIX", "RING", "TLS.k", "TLS", "PAT.h", "DB"]),
            any::<bool>()
        )
            .prop_map(|(target, dry_run)| Cmd::Rotate { target, dry_run }),
        2 => any::<bool>().prop_map(|force| Cmd::Import { force }),
        1 => prop::sample::select(vec!["FIX", "RING", "TLS"]).prop_map(|target| Cmd::Move { target }),
    ]
}

/// A case: each secret's prior state, the cluster's Secret, the commands.
type Case = ([Prior; 5], Cluster, Vec<Cmd>);

fn case() -> impl Strategy<Value = Case> {
    (
        [prior(), prior(), prior(), prior(), prior()],
        prop_oneof![
            Just(Cluster::Nothing),
            Just(Cluster::Real),
            Just(Cluster::Marker)
        ],
        prop::collection::vec(cmd(), 1..=5),
    )
}

/// `n` valid Fernet keys, comma-separated, distinct per `seed`.
fn ring(n: usize, seed: u32) -> String {
    (0..n)
        .map(|i| {
            let mut bytes = [0u8; 32];
            bytes[..4].copy_from_slice(&seed.to_le_bytes());
            bytes[4] = i as u8;
            bytes[5] = 0x5a;
            base64::engine::general_purpose::URL_SAFE.encode(bytes)
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What Vault holds at each secret: its data and version (None: not live).
type State = BTreeMap<&'static str, Option<(Map<String, Value>, u64)>>;

struct World {
    bao: OpenBao,
    kube: FakeKube,
    /// A valid ecdsa-p256 key, made once by `vault-seed gen`.
    key: String,
}

impl World {
    fn read(&self, case: u32) -> State {
        SECRETS
            .iter()
            .map(|s| {
                (
                    *s,
                    self.bao.kv_get("secret", &format!("model/c{case}/dev/{s}")),
                )
            })
            .collect()
    }

    fn path(case: u32, s: &str) -> String {
        format!("model/c{case}/dev/{s}")
    }

    fn old_path(case: u32, s: &str) -> String {
        format!("model/c{case}/old/dev/{s}")
    }

    /// The prior state: `apply`, then each secret made into its prior shape by hand.
    fn prepare(&self, case: u32, dir: &std::path::Path, (priors, cluster, _): &Case) {
        Run::new(&self.bao)
            .specs(dir)
            .args(["apply", "dev"])
            .output();
        let state = self.read(case);
        let data = |s: &str| state[s].as_ref().map(|(d, _)| d.clone()).unwrap();
        // Each secret as it was, at the path of an older layout, for `move`.
        for s in SECRETS {
            self.bao
                .kv_put("secret", &World::old_path(case, s), Value::Object(data(s)));
        }
        for (s, p) in SECRETS.iter().zip(priors) {
            let path = World::path(case, s);
            let put = |v: Value| self.bao.kv_put("secret", &path, v);
            match (p, *s) {
                (Prior::Applied, _) => {}
                (Prior::Absent, _) => {
                    let (status, _) =
                        self.bao
                            .api("DELETE", &format!("secret/metadata/{path}"), None);
                    assert_eq!(status, 204);
                }
                (Prior::Shape(n), "FIX") => {
                    let d = data("FIX");
                    match n {
                        // The real key under an older name.
                        0 => put(json!({"password": d["key"], "pw": d["pw"]})),
                        // Beside a field no spec names.
                        1 => put(json!({"key": d["key"], "pw": d["pw"], "old": "x"})),
                        _ => put(json!({"key": d["key"]})),
                    }
                }
                (Prior::Shape(n), "RING") => put(json!({"key": ring(2 + 2 * *n as usize, case)})),
                (Prior::Shape(n), "TLS") => {
                    let d = data("TLS");
                    match n {
                        // The key lost: a certificate made from it stays.
                        0 => put(json!({"c": d["c"], "p": d["p"]})),
                        1 => put(json!({"c": d["c"]})),
                        _ => put(json!({"k": self.key, "c": d["c"], "p": d["p"]})),
                    }
                }
                (Prior::Shape(n), "PAT") => match n {
                    0 => put(
                        json!({"value": format!("pat-real-{case}"), "h": format!("Bearer pat-real-{case}")}),
                    ),
                    1 => {
                        put(json!({"value": format!("pat-real-{case}"), "h": "Bearer placeholder"}))
                    }
                    _ => put(json!({"value": MARKER})),
                },
                (Prior::Shape(n), _) => match n {
                    0 => put(json!({"password": format!("db-real-{case}")})),
                    _ => put(json!({"password": IMPORT_MARKER})),
                },
            }
        }
        let value = match cluster {
            Cluster::Nothing => return,
            Cluster::Real => format!("db-cluster-{case}"),
            Cluster::Marker => IMPORT_MARKER.to_string(),
        };
        self.kube.put(secret(
            "ask",
            &format!("db-{case}"),
            &[("password", &value)],
        ));
    }

    fn run(&self, dir: &std::path::Path, cmd: &Cmd, case: u32) -> Out {
        let r = Run::new(&self.bao).specs(dir);
        let r = match cmd {
            Cmd::Apply => r.args(["apply", "dev"]),
            Cmd::Set {
                target,
                given,
                ring: n,
                force,
            } => {
                let value = match (given, *target) {
                    (Given::Marker, _) => MARKER.to_string(),
                    (Given::Invalid, _) => "x".to_string(),
                    (Given::Valid, "FIX.key") => "0123456789abcdef0123456789abcdef".into(),
                    (Given::Valid, "FIX.pw") => "Abcdefghijklmnopqrstuv12".into(),
                    (Given::Valid, "RING") => ring(*n, case + 100_000),
                    (Given::Valid, "TLS.k") => self.key.clone(),
                    (Given::Valid, _) => format!("pat-set-{case}"),
                };
                let r = r.args(["set", "dev", target, "--skip-kube"]).stdin(value);
                if *force {
                    r.arg("--force")
                } else {
                    r
                }
            }
            Cmd::Rotate { target, dry_run } => r
                .args(["rotate", "dev", target, "--skip-kube"])
                .arg(if *dry_run { "--dry-run" } else { "--yes" }),
            Cmd::Move { target } => r
                .args(["move", "dev", target, "--from"])
                .arg(format!("secret/{}", World::old_path(case, target))),
            Cmd::Import { force } => {
                let r = r
                    .args(["import", "dev", "--kubeconfig"])
                    .arg(self.kube.kubeconfig());
                if *force {
                    r.arg("--force")
                } else {
                    r
                }
            }
        };
        // The model judges every exit code itself (`check_step`).
        r.any_status().output()
    }

    /// `verify --only vault`'s status of each field of `secret`.
    fn statuses(&self, dir: &std::path::Path, case: u32, s: &str) -> BTreeMap<String, String> {
        let doc = Run::new(&self.bao)
            .specs(dir)
            .args(["verify", "dev", "--only", "vault", "-o", "json"])
            // Done or not, depending on the state: the model reads each field's status.
            .any_status()
            .json();
        let path = format!("secret/{}", World::path(case, s));
        doc["vault"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["path"] == path)
            .map(|r| {
                (
                    r["field"].as_str().unwrap().to_string(),
                    r["status"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

fn text(d: &Map<String, Value>, f: &str) -> Option<String> {
    d.get(f).and_then(Value::as_str).map(str::to_string)
}

fn keys(state: &State) -> Vec<String> {
    state["RING"]
        .as_ref()
        .and_then(|(d, _)| text(d, "key"))
        .map(|k| k.split(',').map(str::to_string).collect())
        .unwrap_or_default()
}

/// Every value Vault holds that is not a marker: never shown.
fn values(state: &State) -> Vec<String> {
    state
        .values()
        .flatten()
        .flat_map(|(d, _)| d.values().filter_map(Value::as_str).map(str::to_string))
        .filter(|v| v.len() >= 8 && v != IMPORT_MARKER && v != MARKER && !v.starts_with("Bearer"))
        .collect()
}

/// The invariants of one step, `before` and `after` it ran `cmd` with `out`.
fn check_step(
    w: &World,
    dir: &std::path::Path,
    case: u32,
    cmd: &Cmd,
    out: &Out,
    before: &State,
    after: &State,
) -> Result<(), TestCaseError> {
    let code = out.code();
    let why = || format!("{cmd:?} exited {code}\n{}", out.all_text());
    let version = |s: &State, n: &str| s[n].as_ref().map(|(_, v)| *v);
    let changed = |n: &str| version(before, n) != version(after, n);
    let all = out.all_text();
    for v in values(before).iter().chain(values(after).iter()) {
        prop_assert!(
            !all.contains(v.as_str()),
            "a value ({} bytes) was shown by {cmd:?}",
            v.len()
        );
    }
    if code == 2 {
        for s in SECRETS {
            prop_assert!(!changed(s), "refused, yet {s} changed: {}", why());
        }
    }
    // A live fixed secret never changes.
    if let Some((d, _)) = &before["FIX"] {
        let now = after["FIX"].as_ref().map(|(d, _)| d);
        prop_assert_eq!(Some(d), now, "the fixed secret changed: {}", why());
    }
    // A keyring loses keys only by rotate --yes (past `keep`) or set --force of a new one.
    let (b, a) = (keys(before), keys(after));
    if changed("RING") && !b.is_empty() {
        match cmd {
            Cmd::Rotate { dry_run: false, .. } => {
                let kept = b.len().min(KEEP);
                prop_assert_eq!(&a[1..], &b[..kept], "rotate kept the wrong keys: {}", why());
            }
            Cmd::Set { force: true, .. } => {}
            _ => prop_assert!(false, "the keyring changed: {}", why()),
        }
    }
    if changed("RING") {
        prop_assert!(a.len() <= KEEP + 1, "{} keys written: {}", a.len(), why());
    }
    // A move copies the old path's data, and only where nothing was.
    if let (Cmd::Move { target }, 0) = (cmd, code) {
        let old = w.bao.kv_get("secret", &World::old_path(case, target));
        prop_assert!(
            before[*target].is_none(),
            "moved over a live secret: {}",
            why()
        );
        prop_assert_eq!(
            after[*target].as_ref().map(|(d, _)| d),
            old.as_ref().map(|(d, _)| d),
            "the move is not the old data: {}",
            why()
        );
    }
    // Markers never replace a real value.
    for (s, f, marker) in [("PAT", "value", MARKER), ("DB", "password", IMPORT_MARKER)] {
        let was = before[s].as_ref().and_then(|(d, _)| text(d, f));
        let now = after[s].as_ref().and_then(|(d, _)| text(d, f));
        if was.as_deref().is_some_and(|v| v != marker) {
            prop_assert!(
                now.as_deref() != Some(marker),
                "a marker replaced {s}.{f}: {}",
                why()
            );
        }
    }
    // Derived values agree with their inputs wherever a command wrote.
    for (s, derived) in [("TLS", &["c", "p"][..]), ("PAT", &["h"][..])] {
        if changed(s) && after[s].is_some() {
            let statuses = w.statuses(dir, case, s);
            for f in derived {
                let st = statuses.get(*f).map(String::as_str);
                prop_assert!(
                    matches!(st, Some("valid" | "pending" | "missing")),
                    "{s}.{f} is {st:?} after a write: {}",
                    why()
                );
            }
        }
    }
    Ok(())
}

#[test]
fn the_write_gates_guarantees_hold_over_any_sequence_of_commands() {
    let bao = OpenBao::dev();
    let key = Run::offline()
        .args(["gen", "ecdsa-p256"])
        .output()
        .stdout_text();
    let w = World {
        bao,
        kube: FakeKube::start(),
        key,
    };
    let cases = std::env::var("VAULT_SEED_MODEL_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        source_file: Some(file!()),
        ..Config::default()
    });
    let counter = std::sync::atomic::AtomicU32::new(0);
    let result = runner.run(&case(), |c| {
        // A folder of its own per case (and per shrink step).
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = common::spec_dir(&spec(n, &w.bao.addr));
        w.prepare(n, dir.path(), &c);
        let mut before = w.read(n);
        for cmd in &c.2 {
            let out = w.run(dir.path(), cmd, n);
            let after = w.read(n);
            check_step(&w, dir.path(), n, cmd, &out, &before, &after)?;
            before = after;
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
