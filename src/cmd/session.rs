//! What every command that talks to Vault does first: load the specs, resolve the environment,
//! resolve the connection, build the client; then, inside the runtime, check the token and
//! detect the mounts.

use std::collections::HashMap;

use crate::cli::{GlobalArgs, VaultArgs};
use crate::exit::Exit;
use crate::report::{self, Style};
use crate::spec::{EnvPlan, Target};
use crate::vault::login::{self, LoginError, Method, Revoker};
use crate::vault::{KvMount, Settings, Vault, VaultError};

/// A command's session with Vault for one environment.
pub(crate) struct Session {
    /// The environment's name.
    pub env: String,
    /// Every target of the environment (narrowed by `--only`).
    pub targets: Vec<Target>,
    /// Connection settings (hold the token; never printed).
    pub settings: Settings,
    /// The client.
    pub vault: Vault,
    /// Revokes the login token when the session ends (`None`: a token from the environment,
    /// never revoked).
    _revoker: Option<Revoker>,
}

/// Log in by `method` (one request, before any other) and put the token into `settings`; the
/// returned [`Revoker`] revokes it when dropped, unless `--keep-token`.
fn log_in(
    g: &GlobalArgs,
    command: &str,
    method: &Method,
    settings: &mut Settings,
) -> Result<Revoker, Exit> {
    let credentials = method
        .credentials()
        .map_err(|e| login_failed(g, command, &e))?;
    let config_failed = |e: VaultError| {
        super::fail(g, command, &e);
        Exit::Usage
    };
    let anonymous = Vault::new(settings).map_err(config_failed)?;
    let logged_in = super::runtime()?
        .block_on(login::login(&anonymous, &credentials))
        .map_err(|e| login_failed(g, command, &e))?;
    settings.token = logged_in.token.clone();
    settings.token_source = logged_in.source.clone();
    let own = Vault::new(settings).map_err(config_failed)?;
    Ok(Revoker::new(own, &logged_in, g.auth.keep_token))
}

/// Report a login failure as every command reports a failure before its results; exit 2 when
/// nothing was sent (options, credential files), else 1.
fn login_failed(g: &GlobalArgs, command: &str, e: &LoginError) -> Exit {
    super::fail(
        g,
        command,
        &VaultError::Config {
            message: e.to_string(),
            help: e.help().unwrap_or_default(),
        },
    );
    if e.is_usage() {
        Exit::Usage
    } else {
        Exit::Failure
    }
}

impl Session {
    /// Load and resolve everything that needs no network. Problems are printed; the error is
    /// the exit code (2: nothing was sent).
    pub fn open(
        g: &GlobalArgs,
        command: &str,
        env: &str,
        only: &[String],
        vault_args: &VaultArgs,
    ) -> Result<Session, Exit> {
        let style = Style::stderr(g.color);
        let set = super::load_specs(g)?;
        let plan = set.plan(env, only).map_err(|d| {
            eprint!("{}", d.render(&style));
            Exit::Usage
        })?;
        Session::from_plan(g, command, &plan, vault_args)
    }

    /// The same, for a caller that keeps the resolved plan.
    pub fn from_plan(
        g: &GlobalArgs,
        command: &str,
        plan: &EnvPlan<'_>,
        vault_args: &VaultArgs,
    ) -> Result<Session, Exit> {
        let style = Style::stderr(g.color);
        let method = login::Options::from(&g.auth)
            .method()
            .map_err(|e| login_failed(g, command, &e))?;
        let resolve = match method {
            Method::Token => Settings::resolve,
            _ => Settings::resolve_without_token,
        };
        let mut settings =
            resolve(vault_args, plan.vault_addr(), plan.vault_namespace()).map_err(|e| {
                super::fail(g, command, &e);
                Exit::Usage
            })?;
        if settings.skip_verify {
            report::warn(&style, "TLS verification is off (VAULT_SKIP_VERIFY): anyone on the path can read the token and the secrets");
        }
        let revoker = match method {
            Method::Token => None,
            _ => Some(log_in(g, command, &method, &mut settings)?),
        };
        let vault = Vault::new(&settings).map_err(|e| {
            super::fail(g, command, &e);
            Exit::Usage
        })?;
        Ok(Session {
            env: plan.env.clone(),
            targets: plan.targets.clone(),
            settings,
            vault,
            _revoker: revoker,
        })
    }

    /// One line on stderr saying what runs where.
    pub fn announce(&self, style: &Style, command: &str) {
        eprintln!(
            "{} {command} `{}`: {} path(s) at {} (token from {})",
            style.bold("vault-seed"),
            self.env,
            self.targets.len(),
            self.settings.addr,
            self.settings.token_source
        );
    }
}

/// Check the token once before any work; say clearly when it is missing, expired, or the server
/// is sealed or unreachable.
pub(crate) async fn preflight(vault: &Vault, style: &Style) -> Result<(), VaultError> {
    let info = vault.lookup_self().await?;
    if info.ttl > 0 && info.ttl < 120 {
        report::warn(
            style,
            &format!(
                "the token expires in {} s; a long run may fail part way",
                info.ttl
            ),
        );
    }
    tracing::info!(display_name = %info.display_name, policies = ?info.policies, "token ok");
    Ok(())
}

/// How far a command may trust a mount whose type it cannot read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MountTrust<'a> {
    /// The command only reads: a mount whose type cannot be read is taken at the spec's
    /// `kv_version`.
    Read,
    /// The command writes: only to mounts seen to be KV, or named by the operator for this run
    /// (`--assume-kv-mount`), taken at the spec's `kv_version`.
    Write { assumed: &'a [String] },
}

/// Detect each mount's KV version and compare with what the specs expect. Returns the usable
/// mounts; for the others why not; and notes (mounts written on the operator's word).
pub(crate) async fn detect_mounts(
    vault: &Vault,
    targets: &[Target],
    trust: MountTrust<'_>,
) -> Mounts {
    let mut wanted: HashMap<String, Option<u8>> = HashMap::new();
    for t in targets {
        let e = wanted.entry(t.mount.clone()).or_insert(t.kv_version);
        if e.is_none() {
            *e = t.kv_version;
        }
    }
    let mut out = Mounts::default();
    let mut names: Vec<_> = wanted.into_iter().collect();
    names.sort();
    for (mount, expected) in names {
        match vault.mount_info(&mount).await {
            Ok(Some(info)) if info.path != mount => {
                out.errors.insert(mount.clone(), format!("`{mount}` is not a mount: it is a path under mount `{}/`; nothing was written", info.path));
            }
            Ok(Some(info)) if info.kind != "kv" && info.kind != "generic" => {
                out.errors.insert(
                    mount.clone(),
                    format!(
                        "mount `{mount}` is a `{}` engine, not KV; nothing was written",
                        info.kind
                    ),
                );
            }
            Ok(Some(info)) => match expected {
                Some(v) if v != info.kv_version => {
                    out.errors.insert(mount.clone(), format!("mount `{mount}` is KV v{} but the spec says `kv_version = {v}`; nothing was written", info.kv_version));
                }
                _ => {
                    out.mounts.insert(
                        mount.clone(),
                        KvMount {
                            path: mount.clone(),
                            version: info.kv_version,
                        },
                    );
                }
            },
            Ok(None) => {
                out.errors.insert(mount.clone(), format!("there is no secrets engine mounted at `{mount}/`; enable one (`vault secrets enable -path={mount} kv-v2`) or fix the spec's `[vault] mount`"));
            }
            Err(VaultError::Denied { .. }) => {
                let assumed = match trust {
                    MountTrust::Read => true,
                    MountTrust::Write { assumed } => {
                        assumed.iter().any(|a| a.trim_matches('/') == mount)
                    }
                };
                match (expected, assumed) {
                    (Some(v), true) => {
                        tracing::info!(%mount, "cannot read the mount's configuration; trusting the spec's kv_version");
                        if matches!(trust, MountTrust::Write { .. }) {
                            out.notes.push(format!("mount `{mount}`: its type could not be read (`sys/internal/ui/mounts/{mount}` was denied); treated as KV v{v} on the operator's word (`--assume-kv-mount {mount}`)"));
                        }
                        out.mounts.insert(
                            mount.clone(),
                            KvMount {
                                path: mount.clone(),
                                version: v,
                            },
                        );
                    }
                    (None, _) => {
                        out.errors.insert(mount.clone(), format!("cannot detect the KV version of mount `{mount}` (the token may not read `sys/internal/ui/mounts/{mount}`); set `kv_version` in the spec's `[vault]`"));
                    }
                    (Some(v), false) => {
                        out.errors.insert(mount.clone(), format!("cannot read the type of mount `{mount}` (`sys/internal/ui/mounts/{mount}` was denied), so vault-seed cannot tell that it is a KV engine; nothing was written to it. If it is KV v{v}, grant `read` on `sys/internal/ui/mounts/{mount}` or pass `--assume-kv-mount {mount}` for this run"));
                    }
                }
            }
            Err(e) => {
                out.errors.insert(mount.clone(), e.to_string());
            }
        }
    }
    out
}

/// What [`detect_mounts`] found.
#[derive(Debug, Default)]
pub(crate) struct Mounts {
    /// The usable mounts, by path.
    pub mounts: HashMap<String, KvMount>,
    /// Why each other mount cannot be used.
    pub errors: HashMap<String, String>,
    /// Mounts used on the operator's word.
    pub notes: Vec<String>,
}
