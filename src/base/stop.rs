//! What a stop signal does to a run: SIGINT (Ctrl-C), SIGTERM (`kill`, a Job's
//! `activeDeadlineSeconds`, a pod's deletion) and SIGHUP (the terminal went away).
//!
//! Left to the default, a signal ends the process where it stands, and what the run must undo
//! is left behind: a login token stays alive for its whole TTL, a terminal stays without echo.
//! So a run that holds such a thing registers it here ([`on_stop`]); from the first
//! registration on, one thread watches for the three signals. When one arrives it undoes what
//! is registered (each undo bounds its own time), then ends the process with the shell's code
//! for that signal: 130, 143 or 129. A second signal while that runs ends the process at once.
//!
//! A part of a run that stops cleanly by itself (`apply`'s engine: requests in flight finish,
//! the report is printed) takes the signal instead while it runs ([`graceful`]); what is
//! registered is then undone as the run ends, as at any end.
//!
//! Nothing here knows what it undoes: the login ([`crate::vault::login`]) and the prompt
//! (`cmd/prompt.rs`) register their own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};

/// A signal that stops a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM: `kill`, a Job's deadline, a pod's deletion.
    Terminate,
    /// SIGHUP: the terminal went away.
    HangUp,
}

impl Signal {
    /// How it is named in a message.
    pub fn describe(self) -> &'static str {
        match self {
            Signal::Interrupt => "interrupted",
            Signal::Terminate => "terminated (SIGTERM)",
            Signal::HangUp => "hung up (SIGHUP)",
        }
    }

    /// The exit code a shell gives a process this signal ended: 128 and the signal's number.
    pub fn exit_code(self) -> i32 {
        128 + match self {
            Signal::HangUp => 1,
            Signal::Interrupt => 2,
            Signal::Terminate => 15,
        }
    }
}

type Undo = Arc<dyn Fn() + Send + Sync>;
type Handler = Arc<dyn Fn(Signal) + Send + Sync>;

#[derive(Default)]
struct State {
    /// What to undo, in the order registered.
    undo: Vec<(u64, Undo)>,
    /// A part of the run that stops by itself, newest last.
    graceful: Vec<(u64, Handler)>,
    /// A signal was handed to the part that stops by itself.
    handed: bool,
    /// A signal came and the undoing has started.
    undoing: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    undo: Vec::new(),
    graceful: Vec::new(),
    handed: false,
    undoing: false,
});
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Undoes nothing more when dropped: what it registered is no longer there to undo.
#[must_use = "what is registered is dropped with the guard"]
pub struct Registered {
    id: u64,
    graceful: bool,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut st = state();
        if self.graceful {
            st.graceful.retain(|(id, _)| *id != self.id);
        } else {
            st.undo.retain(|(id, _)| *id != self.id);
        }
    }
}

/// Run `undo` if a stop signal ends the run while the guard lives. `undo` runs on another
/// thread and must bound its own time; it may also run at the same time as the code that
/// registered it, which must make running both harmless.
pub fn on_stop(undo: impl Fn() + Send + Sync + 'static) -> Registered {
    watch();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    state().undo.push((id, Arc::new(undo)));
    Registered {
        id,
        graceful: false,
    }
}

/// While the guard lives, a stop signal calls `handler` instead of ending the run: the caller
/// stops by itself. A second signal still ends the run at once, after undoing what is
/// registered.
pub fn graceful(handler: impl Fn(Signal) + Send + Sync + 'static) -> Registered {
    watch();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    state().graceful.push((id, Arc::new(handler)));
    Registered { id, graceful: true }
}

/// Start watching for stop signals, once per process; returns once the handlers are in place.
fn watch() {
    static START: Once = Once::new();
    START.call_once(|| {
        let (ready, installed) = std::sync::mpsc::channel();
        let started = std::thread::Builder::new()
            .name("stop-signals".into())
            .spawn(move || watcher(ready));
        match started {
            Ok(_) => {
                if installed.recv().is_err() {
                    tracing::warn!("stop signals are not watched: no handler could be installed");
                }
            }
            Err(e) => tracing::warn!("stop signals are not watched: {e}"),
        }
    });
}

/// The watcher's own runtime: signals need its I/O driver, nothing else.
fn watcher_runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .ok()
}

#[cfg(unix)]
fn watcher(ready: std::sync::mpsc::Sender<()>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Some(runtime) = watcher_runtime() else {
        return;
    };
    runtime.block_on(async move {
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        let _ = ready.send(());
        loop {
            let got = tokio::select! {
                _ = int.recv() => Signal::Interrupt,
                _ = term.recv() => Signal::Terminate,
                _ = hup.recv() => Signal::HangUp,
            };
            arrived(got);
        }
    });
}

#[cfg(not(unix))]
fn watcher(ready: std::sync::mpsc::Sender<()>) {
    let Some(runtime) = watcher_runtime() else {
        return;
    };
    runtime.block_on(async move {
        let _ = ready.send(());
        while tokio::signal::ctrl_c().await.is_ok() {
            arrived(Signal::Interrupt);
        }
    });
}

/// A stop signal arrived: hand it to the part that stops by itself, or undo what is registered
/// and end the run (on a thread of its own, so that a second signal is still heard).
fn arrived(signal: Signal) {
    let mut st = state();
    if st.undoing {
        say(&format!(
            "{}: stopping at once, without waiting for the clean-up",
            signal.describe()
        ));
        std::process::exit(signal.exit_code());
    }
    if !st.handed {
        if let Some((_, handler)) = st.graceful.last() {
            let handler = handler.clone();
            // Only the first: a second signal ends the run, as Ctrl-C twice does elsewhere.
            st.handed = true;
            drop(st);
            handler(signal);
            return;
        }
    }
    st.undoing = true;
    let undo: Vec<Undo> = st.undo.iter().rev().map(|(_, u)| u.clone()).collect();
    drop(st);
    let ending = std::thread::Builder::new()
        .name("stop-undo".into())
        .spawn(move || {
            for u in &undo {
                u();
            }
            std::process::exit(signal.exit_code());
        });
    if ending.is_err() {
        std::process::exit(signal.exit_code());
    }
}

/// A line on stderr; a stderr that is gone is no reason to stop undoing.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_the_shells() {
        assert_eq!(Signal::Interrupt.exit_code(), 130);
        assert_eq!(Signal::Terminate.exit_code(), 143);
        assert_eq!(Signal::HangUp.exit_code(), 129);
    }

    #[test]
    fn a_dropped_guard_leaves_nothing_registered() {
        let a = on_stop(|| {});
        let b = graceful(|_| {});
        let ids = (a.id, b.id);
        assert!(state().undo.iter().any(|(id, _)| *id == ids.0));
        assert!(state().graceful.iter().any(|(id, _)| *id == ids.1));
        drop((a, b));
        assert!(!state().undo.iter().any(|(id, _)| *id == ids.0));
        assert!(!state().graceful.iter().any(|(id, _)| *id == ids.1));
    }
}
