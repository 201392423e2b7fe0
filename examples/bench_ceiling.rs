//! The reqwest ceiling for `bench/run`: the requests of one case (a file `bench/lib.sh`'s
//! `gen_requests` wrote, the same one wrk sends) sent on vault-seed's own HTTP stack (reqwest and
//! hyper on tokio's current-thread runtime, one thread, as `vault-seed`) with nothing else: no
//! spec, no decisions, no barriers, the next request as soon as one of CONCURRENCY finishes. Where
//! wrk says what the server can take, this says what vault-seed's stack can send: the gap between
//! the two is the stack's, the gap between this and `vault-seed` the engine's. An example, so it
//! never grows the `vault-seed` binary.
//!
//! ```text
//! bench_ceiling ADDR REQUESTS_FILE CONCURRENCY     (token from VAULT_TOKEN)
//! ```
//!
//! A line of the file: `METHOD PATH BODY` (PATH under `/v1/`, BODY compact JSON or `-`). Values
//! in it are filler, not secrets, and are never printed. Prints `requests=<n> not_found=<n>
//! bad=<n>` (bad: an answer not 200, 204 or 404, or no answer).

use futures::stream::{self, StreamExt};
use reqwest::Method;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, file, conc] = args.as_slice() else {
        anyhow::bail!("usage: bench_ceiling ADDR REQUESTS_FILE CONCURRENCY");
    };
    let conc: usize = conc.parse()?;
    let token = std::env::var("VAULT_TOKEN")?;
    let text = std::fs::read_to_string(file)?;
    let mut requests = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(method), Some(path), Some(body)) = (parts.next(), parts.next(), parts.next())
        else {
            anyhow::bail!("{file}: not `METHOD PATH BODY`: {line}");
        };
        let method = Method::from_bytes(method.as_bytes())?;
        let body = (body != "-").then(|| body.as_bytes().to_vec());
        requests.push((method, format!("{addr}/v1/{path}"), body));
    }
    vault_seed::init_crypto();
    let client = reqwest::Client::builder()
        .tls_backend_rustls()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let (client, token) = (&client, token.as_str());
    let statuses: Vec<u16> = stream::iter(requests)
        .map(|(method, url, body)| async move {
            let mut req = client
                .request(method, url)
                .header("X-Vault-Token", token)
                .header("X-Vault-Request", "true");
            if let Some(body) = body {
                req = req.header("Content-Type", "application/json").body(body);
            }
            match req.send().await {
                Ok(r) => {
                    let status = r.status().as_u16();
                    if r.bytes().await.is_ok() {
                        status
                    } else {
                        0
                    }
                }
                Err(_) => 0,
            }
        })
        .buffer_unordered(conc.max(1))
        .collect()
        .await;
    let not_found = statuses.iter().filter(|s| **s == 404).count();
    let bad = statuses
        .iter()
        .filter(|s| !matches!(**s, 200 | 204 | 404))
        .count();
    println!(
        "requests={} not_found={not_found} bad={bad}",
        statuses.len()
    );
    Ok(())
}
