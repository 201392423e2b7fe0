//! A TCP proxy on loopback that injects faults between vault-seed and OpenBao. What it does is
//! decided by counts and events, never by the clock, so a loaded machine sees the same faults as
//! a quiet one: per connection (hold the request until the client
//! gives up), or per request, by a hook that sees the first bytes of each request before they
//! are forwarded and decides (forward it, lose it, answer it, or let it reach the server and lose
//! the answer). A hook may also block, holding that request, until the test lets it go.
//! [`recording`] logs each request and answer in order, for tests of what waits for what.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What to do with what the client just sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forward it (and the server's answer).
    Forward,
    /// Drop it and close the connection: the request never reaches the server.
    Close,
    /// Drop it and answer this HTTP status with `Connection: close`.
    Answer(u16),
    /// Forward it, and close the connection as the server's answer begins: the request
    /// reached the server (a write may have happened), its answer is lost.
    LoseAnswer,
}

/// Called with each chunk the client sends, before the chunk is forwarded. vault-seed sends
/// whole requests, one at a time per connection (HTTP/1.1, no pipelining), so a request's start
/// arrives in one chunk: a test can act between two requests (write a competing value just
/// before vault-seed's write reaches the server), fail chosen requests, or block to hold one.
pub type Hook = Arc<dyn Fn(&[u8]) -> Verdict + Send + Sync>;

/// Called with a request's line (`GET /v1/sys/health`) when the first bytes of its answer are in
/// from the server, just before they are passed on to the client: an event a test can wait for
/// ("the mount detection has been answered"), and that comes before anything the client sends
/// because of that answer.
pub type Answered = Arc<dyn Fn(&str) + Send + Sync>;

/// What to do with one connection.
#[derive(Clone)]
pub enum Fault {
    /// Read the request and never answer: a server slower than any timeout. The connection
    /// closes when the client gives up on it.
    Stall,
    /// Forward both ways, asking the hook about each chunk the client sends.
    Requests(Hook),
    /// As `Requests`, and told when each request's answer reaches the client.
    Watched(Hook, Answered),
}

/// A running proxy; stops when dropped.
pub struct FaultProxy {
    /// `http://127.0.0.1:<port>`, to give vault-seed as VAULT_ADDR.
    pub addr: String,
    stop: Arc<AtomicBool>,
    /// Connections accepted so far.
    pub connections: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// Proxy to `upstream` (`127.0.0.1:PORT`); `plan(n)` decides the fate of the n-th connection.
    pub fn start(upstream: &str, plan: impl Fn(u64) -> Fault + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU64::new(0));
        let upstream = upstream.trim_start_matches("http://").to_string();
        let plan = Arc::new(plan);
        let thread = {
            let stop = stop.clone();
            let connections = connections.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            let _ = client.set_nonblocking(false);
                            let n = connections.fetch_add(1, Ordering::SeqCst);
                            let fault = plan(n);
                            let upstream = upstream.clone();
                            std::thread::spawn(move || handle(client, &upstream, fault));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            })
        };
        FaultProxy {
            addr: format!("http://127.0.0.1:{port}"),
            stop,
            connections,
            thread: Some(thread),
        }
    }

    /// Proxy to `upstream`, every connection forwarded and every request shown to `hook`.
    pub fn with_hook(upstream: &str, hook: Hook) -> Self {
        FaultProxy::start(upstream, move |_| Fault::Requests(hook.clone()))
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The request line's method and path (`POST /v1/secret/data/a`) when `chunk` starts a request.
pub fn request_line(chunk: &[u8]) -> Option<String> {
    let line = chunk.split(|&b| b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let (method, rest) = line.split_once(' ')?;
    let path = rest.strip_suffix(" HTTP/1.1")?;
    (method.bytes().all(|b| b.is_ascii_uppercase()) && path.starts_with('/'))
        .then(|| format!("{method} {path}"))
}

/// Transient faults on a fixed share of requests: every `every`-th request fails, in turn lost
/// before the server, answered 502, answered 429, or lost after the server wrote it; but no
/// request (method and path) fails more than `per_request` times, so a client that retries more
/// often than that always gets through, however slow the machine.
pub struct Flaky {
    every: u64,
    per_request: u32,
    requests: AtomicU64,
    failed: Mutex<HashMap<String, u32>>,
    injected: AtomicU64,
}

impl Flaky {
    pub fn new(every: u64, per_request: u32) -> Arc<Flaky> {
        Arc::new(Flaky {
            every,
            per_request,
            requests: AtomicU64::new(0),
            failed: Mutex::new(HashMap::new()),
            injected: AtomicU64::new(0),
        })
    }

    /// The hook to give the proxy.
    pub fn hook(self: &Arc<Self>) -> Hook {
        let me = self.clone();
        Arc::new(move |chunk: &[u8]| me.verdict(chunk))
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    fn verdict(&self, chunk: &[u8]) -> Verdict {
        let Some(line) = request_line(chunk) else {
            return Verdict::Forward; // the rest of a request's body
        };
        let n = self.requests.fetch_add(1, Ordering::SeqCst);
        if n % self.every != self.every - 1 {
            return Verdict::Forward;
        }
        let mut failed = self.failed.lock().unwrap();
        let times = failed.entry(line).or_default();
        if *times >= self.per_request {
            return Verdict::Forward;
        }
        *times += 1;
        self.injected.fetch_add(1, Ordering::SeqCst);
        match (n / self.every) % 4 {
            0 => Verdict::Close,
            1 => Verdict::Answer(502),
            2 => Verdict::Answer(429),
            _ => Verdict::LoseAnswer,
        }
    }
}

fn answer(client: &mut TcpStream, code: u16) {
    let body = format!("{{\"errors\":[\"injected fault {code}\"]}}");
    let _ = write!(
        client,
        "HTTP/1.1 {code} Injected\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn handle(mut client: TcpStream, upstream: &str, fault: Fault) {
    match fault {
        Fault::Stall => {
            // Keep reading (and ignoring) until the client closes its side.
            let mut buf = [0u8; 8192];
            while matches!(client.read(&mut buf), Ok(n) if n > 0) {}
            let _ = client.shutdown(Shutdown::Both);
        }
        Fault::Requests(hook) => forward(client, upstream, hook, None),
        Fault::Watched(hook, answered) => forward(client, upstream, hook, Some(answered)),
    }
}

fn forward(client: TcpStream, upstream: &str, hook: Hook, answered: Option<Answered>) {
    let Ok(server) = TcpStream::connect(upstream) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    // Close both sides at once: what is in flight either way is lost.
    let cut = {
        let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) else {
            return;
        };
        Arc::new(move || {
            let _ = c.shutdown(Shutdown::Both);
            let _ = s.shutdown(Shutdown::Both);
        })
    };
    let (Ok(mut c_read), Ok(mut c_answer), Ok(mut s_write)) =
        (client.try_clone(), client.try_clone(), server.try_clone())
    else {
        return;
    };
    let lose_answer = Arc::new(AtomicBool::new(false));
    // The request whose answer has not begun yet (one at a time per connection).
    let pending: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let up = {
        let (cut, lose_answer, pending) = (cut.clone(), lose_answer.clone(), pending.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n) = c_read.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Some(line) = request_line(&buf[..n]) {
                    *pending.lock().unwrap() = Some(line);
                }
                match hook(&buf[..n]) {
                    Verdict::Forward => {}
                    Verdict::LoseAnswer => lose_answer.store(true, Ordering::SeqCst),
                    Verdict::Close => {
                        cut();
                        break;
                    }
                    Verdict::Answer(code) => {
                        answer(&mut c_answer, code);
                        cut();
                        break;
                    }
                }
                if s_write.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = s_write.shutdown(Shutdown::Write);
        })
    };
    let (mut s_read, mut c_write) = (server, client);
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = s_read.read(&mut buf) {
        if n == 0 {
            break;
        }
        if lose_answer.load(Ordering::SeqCst) {
            cut();
            break;
        }
        if let Some(answered) = &answered {
            let line = pending.lock().unwrap().take();
            if let Some(line) = line {
                answered(&line);
            }
        }
        if c_write.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = c_write.shutdown(Shutdown::Both);
    let _ = up.join();
}

/// What a [`recording`] proxy saw, in order: `sent <request line>` when a request is passed on to
/// the server (after its hold), `answered <request line>` when its answer comes back (before it
/// is passed on), and the connections accepted.
#[derive(Default)]
pub struct Events {
    log: Mutex<Vec<String>>,
    accepted: AtomicU64,
    changed: Condvar,
}

impl Events {
    /// The events so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Wait until `cond(events, connections accepted)` holds: an event, not a time. A run that
    /// never gets there is let go after a minute (so a test fails on its assertions, not by
    /// hanging); returns whether it held.
    pub fn wait_until(&self, cond: impl Fn(&[String], u64) -> bool) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut log = self.log.lock().unwrap();
        loop {
            if cond(&log, self.accepted()) {
                return true;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            log = self
                .changed
                .wait_timeout(log, left.min(Duration::from_millis(50)))
                .unwrap()
                .0;
        }
    }

    fn push(&self, event: String) {
        self.log.lock().unwrap().push(event);
        self.changed.notify_all();
    }
}

/// Whether a request line (`GET /v1/...`, or an event `sent GET /v1/...`) is one that vault-seed
/// sends before the token check is answered: the token check, the mount detection sent with it,
/// a warm-up (`HEAD sys/health`, no token). Anything else (a LIST, a read, a write) depends on
/// their answers.
pub fn start_up(line: &str) -> bool {
    let line = line.trim_start_matches("sent ");
    line == "GET /v1/auth/token/lookup-self"
        || line.starts_with("GET /v1/sys/internal/ui/mounts/")
        || line == "HEAD /v1/sys/health"
}

/// Whether `events` has `event` (`sent GET /v1/...`, `answered LIST /v1/...`), by its start.
pub fn seen(events: &[String], event: &str) -> bool {
    events.iter().any(|e| e.starts_with(event))
}

/// Where `event` (by its start) first is in `events`.
pub fn first(events: &[String], event: &str) -> Option<usize> {
    events.iter().position(|e| e.starts_with(event))
}

/// A recording proxy that holds the token check until the mount detection has been answered
/// and `warm_ups` connections were opened ahead (`HEAD sys/health`): a client that sends them
/// only after the token check's answer never gets it (the hold lets go after a minute).
pub fn holding_the_token_check(upstream: &str, warm_ups: usize) -> (FaultProxy, Arc<Events>) {
    recording(upstream, move |line, events| {
        if line == "GET /v1/auth/token/lookup-self" {
            events.wait_until(|log, _| {
                seen(log, "answered GET /v1/sys/internal/ui/mounts/")
                    && log
                        .iter()
                        .filter(|e| *e == "sent HEAD /v1/sys/health")
                        .count()
                        >= warm_ups
            });
        }
    })
}

/// A proxy to `upstream` that records [`Events`]. `hold(line, events)` is called with each
/// request line before the request is passed on, and may wait there for other events
/// ([`Events::wait_until`]), holding that request.
pub fn recording(
    upstream: &str,
    hold: impl Fn(&str, &Events) + Send + Sync + 'static,
) -> (FaultProxy, Arc<Events>) {
    let events = Arc::new(Events::default());
    let hold = Arc::new(hold);
    let proxy = FaultProxy::start(upstream, {
        let events = events.clone();
        move |n| {
            events.accepted.store(n + 1, Ordering::SeqCst);
            events.changed.notify_all();
            let (sent, answered, hold) = (events.clone(), events.clone(), hold.clone());
            Fault::Watched(
                Arc::new(move |chunk: &[u8]| {
                    if let Some(line) = request_line(chunk) {
                        hold(&line, &sent);
                        sent.push(format!("sent {line}"));
                    }
                    Verdict::Forward
                }),
                Arc::new(move |line: &str| answered.push(format!("answered {line}"))),
            )
        }
    });
    (proxy, events)
}
