//! The raw ceiling for `bench/run`: the fewest, cheapest requests that do what `vault-seed
//! apply` or `plan` must do, at the same concurrency over one keep-alive client, with no spec,
//! validation or reporting. An example, so it never grows the `vault-seed` binary.
//!
//! ```text
//! bench_ceiling MODE ADDR MOUNT N CONCURRENCY     (token from VAULT_TOKEN)
//! ```
//!
//! MODE: `write` (POST `<mount>/data/<p>` with `cas=0`), `write-meta` (that, then POST
//! `<mount>/metadata/<p>` with custom_metadata, as apply does for each created path), `read`
//! (GET `<mount>/data/<p>`). Paths and value sizes are those of the spec `bench/run` generates:
//! `bench/svcNNN/bench/SNNN`, cycling 64, 44, 32, 36 and 11 characters. Values are filler, not
//! secrets, and are never printed. Prints `elapsed_s=<seconds> ok=<n> failed=<n>`.
//!
//! One thread (tokio's current-thread runtime), like `vault-seed`: on a 2-core machine that
//! shares its CPU with the server, that was the fastest client measured (a multi-threaded runtime
//! spends its extra CPU waking threads, which the server then lacks).

use std::time::Instant;

use futures::stream::{self, StreamExt};

const SIZES: [(&str, usize); 5] = [
    ("password", 64),
    ("password", 44),
    ("password", 32),
    ("password", 36),
    ("value", 11),
];

fn path(i: usize) -> (String, usize) {
    (
        format!("bench/svc{:03}/bench/S{:03}", i / 100, i % 100),
        i % 100,
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, addr, mount, n, conc] = args.as_slice() else {
        anyhow::bail!("usage: bench_ceiling write|write-meta|read ADDR MOUNT N CONCURRENCY");
    };
    let n: usize = n.parse()?;
    let conc: usize = conc.parse()?;
    let token = std::env::var("VAULT_TOKEN")?;
    vault_seed::init_crypto();
    let client = reqwest::Client::builder().build()?;
    let client = &client;
    let (addr, mount, token, mode) = (addr.as_str(), mount.as_str(), token.as_str(), mode.as_str());
    let start = Instant::now();
    let results: Vec<bool> = stream::iter(0..n)
        .map(|i| async move {
            let (p, j) = path(i);
            let (field, len) = SIZES[j % SIZES.len()];
            let ok = |r: reqwest::Result<reqwest::Response>| async {
                match r {
                    Ok(r) => {
                        let ok = r.status().is_success();
                        r.bytes().await.is_ok() && ok
                    }
                    Err(_) => false,
                }
            };
            match mode {
                "read" => {
                    let r = client
                        .get(format!("{addr}/v1/{mount}/data/{p}"))
                        .header("X-Vault-Token", token)
                        .send()
                        .await;
                    ok(r).await
                }
                _ => {
                    let body = serde_json::json!({
                        "options": {"cas": 0},
                        "data": {field: "x".repeat(len)},
                    });
                    let r = client
                        .post(format!("{addr}/v1/{mount}/data/{p}"))
                        .header("X-Vault-Token", token)
                        .header("Content-Type", "application/json")
                        .body(serde_json::to_vec(&body).unwrap_or_default())
                        .send()
                        .await;
                    let written = ok(r).await;
                    if mode == "write-meta" && written {
                        let meta = serde_json::json!({"custom_metadata": {
                            "managed-by": "vault-seed",
                            "vault-seed/spec": format!("svc{:03}.toml", i / 100),
                            "vault-seed/generators": format!("{field}=hex32"),
                            "vault-seed/last-action": "create",
                            "vault-seed/last-action-at": "2026-01-01T00:00:00Z",
                        }});
                        let r = client
                            .post(format!("{addr}/v1/{mount}/metadata/{p}"))
                            .header("X-Vault-Token", token)
                            .header("Content-Type", "application/json")
                            .body(serde_json::to_vec(&meta).unwrap_or_default())
                            .send()
                            .await;
                        ok(r).await
                    } else {
                        written
                    }
                }
            }
        })
        .buffer_unordered(conc.max(1))
        .collect()
        .await;
    let elapsed = start.elapsed().as_secs_f64();
    let ok = results.iter().filter(|b| **b).count();
    println!("elapsed_s={elapsed:.4} ok={ok} failed={}", n - ok);
    Ok(())
}
