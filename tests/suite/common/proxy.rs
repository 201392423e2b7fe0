//! A TCP proxy on loopback that injects faults between vault-seed and OpenBao: it decides, for
//! each new connection, to pass it through, drop it, answer a 5xx/429 itself, close it after the
//! request arrived, delay it, or cut it part way. The client's keep-alive connections are cut
//! too (`CutAfter`), so faults keep happening through a long run.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Called with each chunk the client sends, before the chunk is forwarded: a request's start
/// arrives in one chunk (vault-seed sends whole requests, one at a time per connection), so a
/// test can act between two requests, e.g. write a competing value just before vault-seed's
/// write or read-back reaches the server.
pub type Inspect = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// What to do with one connection.
#[derive(Clone)]
pub enum Fault {
    /// Close at once, before reading anything.
    Drop,
    /// Read the request, then close without answering.
    CloseAfterRequest,
    /// Read the request, answer with this HTTP status and `Connection: close`.
    Status(u16),
    /// Wait, then forward.
    Delay(Duration),
    /// Forward, but cut both sides after this long (requests in flight are lost).
    CutAfter(Duration),
    /// Forward, calling the hook with each chunk from the client before forwarding it.
    Inspect(Inspect),
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
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_request(client: &mut TcpStream) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 8192];
    let _ = client.read(&mut buf);
}

fn handle(mut client: TcpStream, upstream: &str, fault: Fault) {
    match fault {
        Fault::Drop => {
            let _ = client.shutdown(Shutdown::Both);
        }
        Fault::CloseAfterRequest => {
            read_request(&mut client);
            let _ = client.shutdown(Shutdown::Both);
        }
        Fault::Status(code) => {
            read_request(&mut client);
            let body = format!("{{\"errors\":[\"injected fault {code}\"]}}");
            let _ = write!(
                client,
                "HTTP/1.1 {code} Injected\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = client.shutdown(Shutdown::Both);
        }
        Fault::Delay(d) => {
            std::thread::sleep(d);
            forward(client, upstream, None, None);
        }
        Fault::CutAfter(d) => forward(client, upstream, Some(d), None),
        Fault::Inspect(hook) => forward(client, upstream, None, Some(hook)),
    }
}

fn forward(client: TcpStream, upstream: &str, cut_after: Option<Duration>, hook: Option<Inspect>) {
    let Ok(server) = TcpStream::connect(upstream) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (Ok(mut c_read), Ok(mut s_write)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let (mut s_read, mut c_write) = (server, client);
    if let Some(d) = cut_after {
        let (Ok(a), Ok(b)) = (c_read.try_clone(), s_write.try_clone()) else {
            return;
        };
        std::thread::spawn(move || {
            std::thread::sleep(d);
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        });
    }
    let up = std::thread::spawn(move || {
        match hook {
            None => {
                let _ = std::io::copy(&mut c_read, &mut s_write);
            }
            Some(hook) => {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = c_read.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    hook(&buf[..n]);
                    if s_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = s_write.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut s_read, &mut c_write);
    let _ = c_write.shutdown(Shutdown::Both);
    let _ = up.join();
}
