//! A latency proxy for `bench/latency`: a TCP delay line on loopback that makes a server on this
//! machine look DELAY_MS away, each way. An example, so it never grows the `vault-seed` binary;
//! std only, no new dependency.
//!
//! ```text
//! latency_proxy UPSTREAM DELAY_MS LOG      (UPSTREAM: 127.0.0.1:PORT)
//! ```
//!
//! Prints `127.0.0.1:<port>` (where it listens) on stdout, then forwards every connection to
//! UPSTREAM, bytes unchanged (TLS passes through end to end). Each chunk arrives at the other side
//! DELAY_MS after it was read, in order, so that pipelined traffic stays pipelined; a new
//! connection's first bytes reach the server no earlier than 3 × DELAY_MS after it was accepted,
//! as on a network where the TCP handshake costs a round trip before the client can send. The
//! client side's local connect is instant, so what a client pays is what it would pay over a real
//! network of that delay, no more.
//!
//! LOG gets one line per chunk the client sent: milliseconds since the proxy's first connection,
//! the connection's number, and the chunk's first line when it starts an HTTP request (method and
//! path: never a header or body, so never a token or a value).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

type Log = Arc<Mutex<std::fs::File>>;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [upstream, delay, log] = args.as_slice() else {
        eprintln!("usage: latency_proxy UPSTREAM DELAY_MS LOG");
        std::process::exit(2);
    };
    let delay = Duration::from_millis(delay.parse().unwrap_or(25));
    let log: Log = Arc::new(Mutex::new(std::fs::File::create(log)?));
    let listener = TcpListener::bind("127.0.0.1:0")?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let epoch: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    for (n, client) in listener.incoming().enumerate() {
        let Ok(client) = client else { continue };
        let accepted = Instant::now();
        let epoch = *epoch.get_or_init(|| accepted);
        let Ok(server) = TcpStream::connect(upstream) else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (c2, s2) = (client.try_clone()?, server.try_clone()?);
        let log = log.clone();
        // Client to server: not before the handshake's round trip and the one-way delay.
        let first = accepted + 3 * delay;
        delay_line(client, server, delay, Some(first), Some((log, epoch, n)));
        delay_line(s2, c2, delay, None, None);
    }
    Ok(())
}

/// Forward `from` to `to`, each chunk `delay` after it was read (and not before `not_before`).
fn delay_line(
    mut from: TcpStream,
    mut to: TcpStream,
    delay: Duration,
    not_before: Option<Instant>,
    log: Option<(Log, Instant, usize)>,
) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let now = Instant::now();
                    if let Some((log, epoch, conn)) = &log {
                        log_chunk(log, now - *epoch, *conn, &buf[..n]);
                    }
                    let due = (now + delay).max(not_before.unwrap_or(now));
                    if tx.send((due, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping `tx` ends the writer once it has delivered what is queued.
    });
    thread::spawn(move || {
        for (due, chunk) in rx {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

fn log_chunk(log: &Log, at: Duration, conn: usize, chunk: &[u8]) {
    let line = chunk.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    // An HTTP request line (`METHOD /path HTTP/1.1`); anything else (TLS, a body) is not shown.
    let words: Vec<&str> = line.trim_end().split(' ').collect();
    let what = match words.as_slice() {
        [method, path, version]
            if version.starts_with("HTTP/")
                && method.bytes().all(|b| b.is_ascii_uppercase())
                && path.starts_with('/') =>
        {
            format!("{method} {}", path.split('?').next().unwrap_or(path))
        }
        _ => format!("({} bytes)", chunk.len()),
    };
    if let Ok(mut f) = log.lock() {
        let _ = writeln!(f, "{:.1} c{conn} {what}", at.as_secs_f64() * 1000.0);
    }
}
