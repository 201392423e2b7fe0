//! What `set` and `rotate` share: resolving the secret, reaching its mount, reporting a change.

use serde::Serialize;

use crate::cli::GlobalArgs;
use crate::exit::Exit;
use crate::kv::KvMount;
use crate::replace::ChangeError;
use crate::report::{self, Format, Style};
use crate::spec::Target;

use super::session::{detect_mounts, preflight, MountTrust, Mounts, Session};

/// The result of a `set` or `rotate`, printed on stdout.
#[derive(Serialize)]
pub(super) struct ChangeReport<'a> {
    pub command: &'a str,
    pub env: &'a str,
    pub path: String,
    pub fields: Vec<String>,
    /// `set`, `replaced-placeholder`, `added`, `unchanged`, `rotated`, `would-rotate`.
    pub outcome: &'a str,
    pub old_version: Option<u64>,
    pub new_version: Option<u64>,
    pub ok: bool,
}

impl ChangeReport<'_> {
    pub fn print(&self, g: &GlobalArgs) -> Exit {
        match g.output {
            Format::Json => {
                if let Err(e) = report::print_json(self) {
                    eprintln!("error: cannot write to stdout: {e}");
                    return Exit::Failure;
                }
            }
            Format::Human => {
                let style = Style::stdout(g.color);
                let versions = match (self.old_version, self.new_version) {
                    (Some(a), Some(b)) => format!("v{a} -> v{b}"),
                    (Some(a), None) => format!("v{a}"),
                    _ => String::new(),
                };
                println!(
                    "{} {}  {}  {versions}",
                    style.ok(&format!("{:<9}", self.outcome)),
                    self.path,
                    self.fields.join(",")
                );
            }
        }
        Exit::Success
    }
}

/// Report a change error (stderr, and JSON on stdout with `-o json`); returns the exit code.
pub(super) fn change_failed(
    g: &GlobalArgs,
    command: &str,
    env: &str,
    e: &ChangeError,
    exit: Exit,
) -> Exit {
    report::error(
        &Style::stderr(g.color),
        &e.to_string(),
        e.help(env).as_deref(),
    );
    if g.output == Format::Json {
        let _ = report::print_json(&serde_json::json!({
            "command": command, "env": env, "ok": false, "error": e.to_string(), "help": e.help(env),
        }));
    }
    exit
}

/// Check the token and reach the target's mount.
pub(super) async fn mount_for(
    g: &GlobalArgs,
    command: &str,
    session: &Session,
    t: &Target,
    assumed: &[String],
) -> Result<KvMount, Exit> {
    let style = Style::stderr(g.color);
    if let Err(e) = preflight(&session.vault, &style).await {
        super::fail(g, command, &e);
        return Err(Exit::Failure);
    }
    let Mounts {
        mut mounts,
        errors,
        notes,
    } = detect_mounts(
        &session.vault,
        std::slice::from_ref(t),
        MountTrust::Write { assumed },
    )
    .await;
    for n in &notes {
        eprintln!("{}: {n}", style.help("note"));
    }
    match mounts.remove(&t.mount) {
        Some(m) => Ok(m),
        None => {
            let why = errors.get(&t.mount).cloned().unwrap_or_default();
            report::error(&style, &why, None);
            Err(Exit::Failure)
        }
    }
}
