//! What every command that talks to Vault does first: load the specs, resolve the environment,
//! resolve the connection, build the client; then, inside the runtime, check the token (at the
//! same time as the mount detection: [`Session::checked`]).

use std::collections::BTreeSet;
use std::future::Future;

use futures::FutureExt;

use crate::app::cli::{GlobalArgs, VaultArgs};
use crate::base::exit::Exit;
use crate::base::kv::KvMount;
use crate::report::{self, Style};
use crate::spec::mounts::{self, MountTrust};
use crate::spec::{EnvPlan, Target};
use crate::vault::login::{self, Method, Revoker};
use crate::vault::{Settings, Vault};

use super::Failure;

/// A command's session with Vault for one environment.
pub(crate) struct Session {
    /// The environment's name.
    pub env: String,
    /// Every target of the environment (narrowed by `--only`); empty for a session made by
    /// [`Session::from_plan`], whose caller keeps the plan's.
    pub targets: Vec<Target>,
    /// How many targets the environment has (narrowed by `--only`).
    pub paths: usize,
    /// Secret names more than one application of the environment uses.
    pub shared_names: BTreeSet<String>,
    /// Connection settings (hold the token; never printed).
    pub settings: Settings,
    /// The client.
    pub vault: Vault,
    /// Styling of stderr, for what the session says while it runs.
    pub style: Style,
    /// Revokes the login token when the session ends (`None`: a token from the environment,
    /// never revoked).
    _revoker: Option<Revoker>,
}

/// Log in by `method` (one request, before any other) and put the token into `settings`; the
/// returned [`Revoker`] revokes it when dropped or when a stop signal ends the run, unless
/// `--keep-token`. Also returns the client for the session: the login's, with the new token, so
/// that the requests after the login reuse its connection (the command's runtime is the
/// login's: [`super::runtime`]). A failure is exit 2 when nothing was sent (options, credential
/// files), else 1; a token Vault issued is revoked whichever way this ends.
fn log_in(
    g: &GlobalArgs,
    method: &Method,
    settings: &mut Settings,
) -> Result<(Revoker, Vault), Failure> {
    let usage = |e| Failure::from(e).exit(Exit::Usage);
    let credentials = method.credentials()?;
    let anonymous = Vault::new(settings).map_err(usage)?;
    let runtime = super::runtime()?;
    let revoker = Revoker::before_login(g.auth.keep_token);
    let logged_in = match runtime.block_on(login::login(&anonymous, &credentials)) {
        Ok(l) => l,
        Err(mut e) => {
            if let Some(issued) = e.take_issued() {
                let accessor = issued.accessor.as_deref();
                match issued.token {
                    Some(token) => {
                        settings.token = token;
                        hand_over(&revoker, settings, accessor, issued.ttl);
                    }
                    None => revoker.unrevocable(
                        accessor,
                        issued.ttl,
                        "its answer could not be read".into(),
                    ),
                }
            }
            return Err(e.into());
        }
    };
    settings.token = logged_in.token.clone();
    settings.token_source = logged_in.source.clone();
    if !hand_over(&revoker, settings, Some(&logged_in.accessor), logged_in.ttl) {
        // The token cannot go in a request (the same check made the revoker's client fail).
        let e = Vault::new(settings).err();
        return Err(e.map_or_else(
            || Failure::new("the login token cannot be used"),
            Failure::from,
        ));
    }
    let session = anonymous
        .with_token(&settings.token, settings.namespace.as_deref())
        .map_err(usage)?;
    Ok((revoker, session))
}

/// Give `revoker` a client of its own that carries the token in `settings`; when none can be
/// made (a token that cannot go in a request), the token cannot be revoked and is said to be
/// alive. Whether the client was made.
fn hand_over(revoker: &Revoker, settings: &Settings, accessor: Option<&str>, ttl: u64) -> bool {
    match Vault::new(settings) {
        Ok(own) => {
            revoker.hold(own, accessor.unwrap_or("unknown"), ttl);
            true
        }
        Err(e) => {
            revoker.unrevocable(accessor, ttl, format!("it cannot be sent: {e}"));
            false
        }
    }
}

impl Session {
    /// Load and resolve everything that needs no network (a failure here is exit 2: nothing was
    /// sent).
    pub fn open(
        g: &GlobalArgs,
        env: &str,
        only: &[String],
        vault_args: &VaultArgs,
    ) -> Result<Session, Failure> {
        // Each spec is dropped once its targets are made, and the session takes the targets
        // over: the set, the targets and a copy of them are never held together (at 100,000
        // paths they were the peak of a run).
        let resolved = super::load_specs(g)?.into_targets(env, only)?;
        let mut session = Session::from_parts(
            g,
            &resolved.env,
            (
                resolved.vault_addr.as_deref(),
                resolved.vault_namespace.as_deref(),
            ),
            vault_args,
        )?;
        session.paths = resolved.targets.len();
        session.targets = resolved.targets;
        session.shared_names = resolved.shared_names;
        Ok(session)
    }

    /// The same, for a caller that keeps the resolved plan and its targets (`verify`): the
    /// session holds no copy of them.
    pub fn from_plan(
        g: &GlobalArgs,
        plan: &EnvPlan<'_>,
        vault_args: &VaultArgs,
    ) -> Result<Session, Failure> {
        let mut session = Session::from_parts(
            g,
            &plan.env,
            (plan.vault_addr(), plan.vault_namespace()),
            vault_args,
        )?;
        // The caller keeps the plan's targets: not copied here.
        session.paths = plan.targets.len();
        session.shared_names = plan.shared_names.clone();
        Ok(session)
    }

    /// A session for `env`, whose specs give the Vault address and namespace `spec_vault`,
    /// without targets yet (no network but a login's).
    fn from_parts(
        g: &GlobalArgs,
        env: &str,
        spec_vault: (Option<&str>, Option<&str>),
        vault_args: &VaultArgs,
    ) -> Result<Session, Failure> {
        let style = Style::stderr(g.color);
        let usage = |e| Failure::from(e).exit(Exit::Usage);
        let method = login::Options::from(&g.auth).method()?;
        let resolve = match method {
            Method::Token => Settings::resolve,
            _ => Settings::resolve_without_token,
        };
        let mut settings =
            resolve(&vault_args.options(), spec_vault.0, spec_vault.1).map_err(usage)?;
        if settings.skip_verify {
            report::warn(&style, "TLS verification is off (VAULT_SKIP_VERIFY): anyone on the path can read the token and the secrets");
        }
        let (revoker, vault) = match method {
            Method::Token => (None, Vault::new(&settings).map_err(usage)?),
            _ => {
                let (revoker, vault) = log_in(g, &method, &mut settings)?;
                (Some(revoker), vault)
            }
        };
        Ok(Session {
            env: env.to_string(),
            targets: Vec::new(),
            paths: 0,
            shared_names: BTreeSet::new(),
            settings,
            vault,
            style,
            _revoker: revoker,
        })
    }

    /// One line on stderr saying what runs where.
    pub fn announce(&self, command: &str) {
        report::say(&format!(
            "{} {command} `{}`: {} path(s) at {} (token from {})",
            self.style.bold("vault-seed"),
            self.env,
            self.paths,
            self.settings.addr,
            self.settings.token_source
        ));
    }

    /// Check the token once before any work (`auth/token/lookup-self`): a missing, expired or
    /// revoked token, a sealed or unreachable server each get their own message.
    pub async fn check_token(&self) -> Result<(), Failure> {
        let info = self.vault.lookup_self().await?;
        if info.ttl > 0 && info.ttl < 120 {
            report::warn(
                &self.style,
                &format!(
                    "the token expires in {} s; a long run may fail part way",
                    info.ttl
                ),
            );
        }
        tracing::info!(display_name = %info.display_name, policies = ?info.policies, "token ok");
        Ok(())
    }

    /// Check the token while `detection` (the mount detection, [`mounts::detect`]) runs: both
    /// requests go out at once, to the same server with the same token (the token goes there
    /// either way), so over a network they cost one round trip, not two. `detection`'s answer is
    /// given only once the token is known good; a failed token check is the error, whatever
    /// the detection found, and returns at once (the detection, still out, is dropped). Nothing
    /// that depends on either answer (a LIST, a read, a write) is sent before this returns.
    pub async fn checked<T>(&self, detection: impl Future<Output = T>) -> Result<T, Failure> {
        let detection = detection.map(Ok::<T, Failure>);
        let ((), found) = futures::future::try_join(self.check_token(), detection).await?;
        Ok(found)
    }

    /// Check the token and reach `t`'s mount, to change `t` (`set`, `rotate`): a mount not seen
    /// to be KV is used only when named in `assumed` (`--assume-kv-mount`).
    pub async fn mount_for(&self, t: &Target, assumed: &[String]) -> Result<KvMount, Failure> {
        let mut detected = self
            .checked(mounts::detect(
                &self.vault,
                std::slice::from_ref(t),
                MountTrust::Write { assumed },
            ))
            .await?;
        for n in &detected.notes {
            report::say(&format!("{}: {n}", self.style.help("note")));
        }
        match detected.mounts.remove(t.mount()) {
            Some(m) => Ok(m),
            None => Err(Failure::new(
                detected.errors.remove(t.mount()).unwrap_or_default(),
            )),
        }
    }
}
