//! Command-line arguments (clap derive). Every flag has help text and, where the `vault` and
//! `kubectl` CLIs have one, the same environment variable.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::base::duration;
use crate::report::{ColorChoice, Format};
use crate::vault::login::{self, Kind};
use crate::vault::ConnectOptions;

const ABOUT: &str =
    "Bootstrap the Vault secrets a Kubernetes platform needs before its first GitOps sync.";

const LONG_ABOUT: &str = "\
Bootstrap the Vault secrets a Kubernetes platform needs before its first GitOps sync.

vault-seed reads typed secret specs (TOML files under ./secret-specs), creates every missing \
secret in Vault in the right format (hex salts, Fernet keys, a 32-byte Zitadel masterkey, \
placeholders for tokens a person fills in later), never overwrites one that exists (KV v2 \
check-and-set), checks that External Secrets Operator's Vault policy grants what it needs, and \
confirms that the ExternalSecrets went Ready.";

const AFTER_HELP: &str = "\
The bootstrap of an environment:
  vault-seed lint                         check every spec offline
  vault-seed plan auh1-dev                show what apply would write (writes nothing)
  vault-seed apply auh1-dev               create what is missing, never overwrite
  vault-seed verify auh1-dev --wait 5m    Vault, policy and ExternalSecrets Ready
  vault-seed set auh1-dev IAM_SERVICE__PAT < pat.txt    fill a placeholder after deploy

Vault connection, as the vault CLI: VAULT_ADDR (else the spec's environment), VAULT_TOKEN or \
~/.vault-token, VAULT_CACERT, VAULT_CAPATH, VAULT_NAMESPACE, VAULT_SKIP_VERIFY, \
VAULT_CLIENT_TIMEOUT; the BAO_* twins work too.

Exit codes: 0 done, 1 something is not right (invalid, denied, failed, not Ready), 2 usage or \
spec error (nothing was sent).";

const COMPLETIONS_LONG_ABOUT: &str = "\
Print a shell completion script (bash, zsh, fish, powershell, elvish) on stdout.

Install it where the shell looks for it:
  bash: vault-seed completions bash > ~/.local/share/bash-completion/completions/vault-seed
  zsh:  vault-seed completions zsh > ~/.zfunc/_vault-seed
        (and in ~/.zshrc, before compinit: fpath+=(~/.zfunc))
  fish: vault-seed completions fish > ~/.config/fish/completions/vault-seed.fish
  powershell: vault-seed completions powershell >> $PROFILE";

/// vault-seed: typed, idempotent, race-free seeding of Vault secrets.
#[derive(Debug, Parser)]
#[command(name = "vault-seed", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    /// Global options.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options of every command, before or after the command's name. Under their own heading in
/// every `--help`, apart from the command's own options.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Directory of secret specs (`*.toml`).
    #[arg(
        long,
        global = true,
        env = "VAULT_SEED_SPECS",
        default_value = "secret-specs",
        value_name = "DIR"
    )]
    pub specs: PathBuf,

    /// Result format on stdout: `human` tables or one `json` document (its schema: `vault-seed
    /// man`, section JSON OUTPUT).
    #[arg(long, short = 'o', global = true, value_enum, default_value_t = Format::Human, value_name = "FORMAT")]
    pub output: Format,

    /// Colour: `auto` (a terminal, unless NO_COLOR is set), `always`, `never`.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// More diagnostics on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides. Secrets
    /// and tokens are never logged at any level.
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// How to log in to Vault.
    #[command(flatten)]
    pub auth: AuthArgs,
}

/// How to log in to Vault, as `vault login -method=...` (src/vault/login.rs). Global: before or
/// after the command's name. Under their own heading in `--help`.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Vault login")]
pub struct AuthArgs {
    /// How to log in to Vault; every method but `token` revokes its token at exit.
    #[arg(long, global = true, env = "VAULT_SEED_AUTH", value_enum, default_value_t = Kind::Token, value_name = "METHOD")]
    pub auth: Kind,
    /// The auth method's role to log in as (kubernetes, jwt).
    #[arg(long, global = true, env = "VAULT_SEED_ROLE", value_name = "ROLE")]
    pub role: Option<String>,
    /// Where the auth method is enabled, without `auth/` [default: the method's name].
    #[arg(
        long,
        global = true,
        env = "VAULT_SEED_AUTH_MOUNT",
        value_name = "PATH"
    )]
    pub auth_mount: Option<String>,
    /// File holding the JWT [kubernetes default:
    /// /var/run/secrets/kubernetes.io/serviceaccount/token].
    #[arg(long, global = true, env = "VAULT_SEED_JWT_FILE", value_name = "FILE")]
    pub jwt_file: Option<PathBuf>,
    /// Environment variable holding the JWT (`--auth jwt`; CI systems hand OIDC ID tokens over
    /// this way).
    #[arg(long, global = true, env = "VAULT_SEED_JWT_ENV", value_name = "VAR")]
    pub jwt_env: Option<String>,
    /// File holding the AppRole role-id.
    #[arg(
        long,
        global = true,
        env = "VAULT_SEED_ROLE_ID_FILE",
        value_name = "FILE"
    )]
    pub role_id_file: Option<PathBuf>,
    /// File holding the AppRole secret-id.
    #[arg(
        long,
        global = true,
        env = "VAULT_SEED_SECRET_ID_FILE",
        value_name = "FILE"
    )]
    pub secret_id_file: Option<PathBuf>,
    /// Do not revoke the login token at exit (it lives until its TTL).
    #[arg(long, global = true, env = "VAULT_SEED_KEEP_TOKEN")]
    pub keep_token: bool,
}

impl From<&AuthArgs> for login::Options {
    fn from(a: &AuthArgs) -> login::Options {
        login::Options {
            kind: a.auth,
            role: a.role.clone(),
            mount: a.auth_mount.clone(),
            jwt_file: a.jwt_file.clone(),
            jwt_env: a.jwt_env.clone(),
            role_id_file: a.role_id_file.clone(),
            secret_id_file: a.secret_id_file.clone(),
            keep_token: a.keep_token,
        }
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate every spec offline; report each problem with file:line:col.
    Lint,

    /// Print one fresh value to stdout (the one command that prints a value, on purpose).
    ///
    /// A replacement for the runbook's `openssl rand` lines: `vault-seed gen fernet`,
    /// `vault-seed gen hex --bytes 32`, `vault-seed gen masterkey`.
    Gen(GenArgs),

    /// Show what `apply` would do for an environment; writes nothing.
    Plan(ApplyArgs),

    /// Create every secret of an environment that is not in Vault yet; never change one that is.
    ///
    /// KV v2 writes use check-and-set `cas=0`, so Vault itself refuses to overwrite a path that
    /// someone else created meanwhile.
    Apply(ApplyCmd),

    /// Check that the bootstrap is done: values valid, ESO's (and VSO's) policy sufficient,
    /// ExternalSecrets Ready, VaultStaticSecrets synced.
    Verify(VerifyArgs),

    /// Store a value read from stdin (a PAT, a client token) in a secret's field.
    ///
    /// Replaces a placeholder without asking; a real value only with `--force`, after naming on
    /// stderr the ExternalSecrets and VaultStaticSecrets the specs list that read it (a reader
    /// pinned to a version is flagged; a cluster that cannot tell is said, and the write goes
    /// ahead; `--skip-kube` asks no cluster).
    Set(SetArgs),

    /// Replace a secret's value with a fresh one from its generator (old one kept in KV history).
    ///
    /// Each field's `rotation` in the spec decides: `replace`, `keyring` (the new key first, up
    /// to `keep` previous keys kept behind it) or `never` (as `fixed = true`). A fixed field, and
    /// a `fernet` or `masterkey` field whose spec states no `rotation`, are refused (exit 2),
    /// nothing sent.
    ///
    /// Before it writes, names on stderr the ExternalSecrets and VaultStaticSecrets the specs
    /// list that read the value (a reader pinned to a version keeps serving the old one); a
    /// cluster that cannot tell is said, and the rotation goes ahead. `--skip-kube` asks no
    /// cluster.
    Rotate(RotateArgs),

    /// Copy into Vault the values components wrote to Kubernetes Secrets (`from_secret` fields).
    ///
    /// Each `from_secret = "NAMESPACE/NAME:KEY"` field of the environment gets the Secret's
    /// value, with check-and-set: an absent field is added, the import marker `apply` wrote is
    /// replaced, the same value is left alone; a different value is refused unless `--force`.
    /// A Secret or key not there yet is "not done", one that cannot be read "not checked" (exit
    /// 1). Never prints a value.
    Import(ImportArgs),

    /// Move a secret to the path the specs give it now, after the layout changed.
    ///
    /// Copies the current data of OLD_PATH (a full path, `secret/ask/auh1-dev/NAME`, or one under
    /// the secret's mount) to the spec's path with check-and-set `cas=0`: never over a secret that
    /// is there. The copy must pass the spec's checks (each field the spec names in its format; a
    /// fixed secret's fixed fields all there), through the same rules as every write. The old
    /// path is marked `vault-seed/moved-to` in its custom_metadata and never deleted: remove it by
    /// hand once nothing reads it. Never prints a value. Exit 0: moved; 1: refused by a rule or a
    /// check, nothing written; 2: bad input.
    Move(MoveArgs),

    /// Print the minimal Vault policy (HCL) ESO, VSO or vault-seed needs for an environment.
    Policy(PolicyArgs),

    /// List what the specs no longer describe; changes nothing.
    ///
    /// Paths under the specs' folders that no spec names; paths elsewhere on the specs' mounts
    /// marked `managed-by=vault-seed` that no spec names now; fields of a spec's secret the spec
    /// does not name; ExternalSecrets and VaultStaticSecrets in the specs' namespaces reading a
    /// path under the specs' folders that no spec names. Never prints a value. A LIST denied, a
    /// failure or the --max-scan-requests bound reached is "not checked". Exit 0: nothing found;
    /// 1: an orphan, or something not checked.
    #[command(after_help = AUDIT_AFTER_HELP)]
    Audit(AuditArgs),

    /// Check offline that Secrets and ConfigMaps exist before their consumers run (Argo CD order).
    ///
    /// Reads rendered manifests (`helm template`, `argocd app manifests NAME`), the apps'
    /// Application manifests and argocd-cm, and applies Argo CD's sync order: app waves, then
    /// phases (PreSync, Sync, PostSync), then waves, then kinds. Asks no server. Exit 0: the order
    /// holds; 1: a consumer may run before its producer; 2: bad input.
    Order(OrderArgs),

    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    #[command(long_about = COMPLETIONS_LONG_ABOUT)]
    Completions(CompletionsArgs),

    /// Print the manual page (roff), or write one page per command into a directory.
    ///
    /// Install: `vault-seed man --dir ~/.local/share/man/man1`, then `man vault-seed` (or
    /// `man vault-seed-apply`). Read it without installing: `vault-seed man | man -l -`.
    Man(ManArgs),
}

impl Command {
    /// The command's name as typed (`apply`); the JSON documents carry it.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Lint => "lint",
            Command::Gen(_) => "gen",
            Command::Plan(_) => "plan",
            Command::Apply(_) => "apply",
            Command::Verify(_) => "verify",
            Command::Set(_) => "set",
            Command::Rotate(_) => "rotate",
            Command::Import(_) => "import",
            Command::Move(_) => "move",
            Command::Policy(_) => "policy",
            Command::Audit(_) => "audit",
            Command::Order(_) => "order",
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
        }
    }
}

/// `completions` options.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `man` options.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The page of this command (`apply`) instead of the main page.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
    /// Write every page (vault-seed.1, vault-seed-apply.1, ...) into this directory instead.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// `gen` options.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// Generator: hex, hex32, fernet, masterkey, placeholder, base64, base64url, password, uuid,
    /// ed25519, ecdsa-p256, rsa (PKCS#8 PEM private keys), ssh-ed25519 (OpenSSH), jwks.
    #[arg(value_name = "GENERATOR")]
    pub generator: String,
    /// Random bytes for hex, base64, base64url: 16 to 4096 [default: 32].
    #[arg(long, value_name = "N")]
    pub bytes: Option<usize>,
    /// Length of a password: 12 to 4096 [default: 32].
    #[arg(long, value_name = "N")]
    pub length: Option<usize>,
    /// Character classes of a password, comma-separated: lower,upper,digit,symbol [default:
    /// lower,upper,digit].
    #[arg(long, value_delimiter = ',', value_name = "CLASSES")]
    pub classes: Vec<String>,
    /// Marker text of a placeholder [default: placeholder].
    #[arg(long, value_name = "TEXT")]
    pub marker: Option<String>,
    /// Size of an RSA key: 2048, 3072 or 4096 [default: 2048].
    #[arg(long, value_name = "N")]
    pub bits: Option<usize>,
    /// Algorithm of a jwks key: RS256 or ES256 [default: RS256].
    #[arg(long, value_name = "ALG")]
    pub alg: Option<String>,
}

/// How to reach Vault, as the `vault` CLI does. Under their own heading in `--help`.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Vault connection")]
pub struct VaultArgs {
    /// Vault address; else VAULT_ADDR / BAO_ADDR; else the spec's `vault_addr` for the environment.
    #[arg(long, env = "VAULT_ADDR", value_name = "URL")]
    pub address: Option<String>,
    /// PEM file of the CA that signed Vault's certificate (air-gapped internal CA).
    #[arg(long, env = "VAULT_CACERT", value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// Directory of PEM CA certificates.
    #[arg(long, env = "VAULT_CAPATH", value_name = "DIR")]
    pub ca_path: Option<PathBuf>,
    /// Vault Enterprise / OpenBao namespace; else the spec's `vault_namespace`.
    #[arg(long, env = "VAULT_NAMESPACE", value_name = "NS")]
    pub namespace: Option<String>,
    /// Do not verify Vault's TLS certificate. Dangerous: prints a warning.
    #[arg(long, env = "VAULT_SKIP_VERIFY", value_parser = parse_bool_env, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub skip_verify: Option<bool>,
    /// Timeout of each request to Vault (`30s`, `2m`; a bare number is seconds).
    #[arg(long, env = "VAULT_CLIENT_TIMEOUT", value_parser = duration::parse, value_name = "DURATION")]
    pub timeout: Option<std::time::Duration>,
    /// Time to open a connection to Vault [default: 5s].
    #[arg(long, env = "VAULT_SEED_CONNECT_TIMEOUT", value_parser = duration::parse, value_name = "DURATION")]
    pub connect_timeout: Option<std::time::Duration>,
    /// Time from sending a request to the start of Vault's answer; past it the request is retried
    /// [default: 10s].
    #[arg(long, env = "VAULT_SEED_ANSWER_TIMEOUT", value_parser = duration::parse, value_name = "DURATION")]
    pub answer_timeout: Option<std::time::Duration>,
    /// Time one request may take with its retries before vault-seed gives up [default: 1m].
    #[arg(long, env = "VAULT_SEED_GIVE_UP_AFTER", value_parser = duration::parse, value_name = "DURATION")]
    pub give_up_after: Option<std::time::Duration>,
    /// Allow sending the token over plain http:// to a non-loopback address.
    #[arg(long)]
    pub insecure_http: bool,
}

impl VaultArgs {
    /// What vault/ needs to connect: the flags (clap has filled them from `VAULT_*`).
    pub fn options(&self) -> ConnectOptions {
        ConnectOptions {
            address: self.address.clone(),
            ca_cert: self.ca_cert.clone(),
            ca_path: self.ca_path.clone(),
            namespace: self.namespace.clone(),
            skip_verify: self.skip_verify,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            answer_timeout: self.answer_timeout,
            give_up_after: self.give_up_after,
            insecure_http: self.insecure_http,
        }
    }
}

/// `plan` and `apply` options.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The environment, as named in the specs (`auh1-dev`).
    #[arg(value_name = "ENV")]
    pub env: String,
    /// Only these spec files, applications, secrets or paths (repeat or comma-separate).
    #[arg(long, value_delimiter = ',', value_name = "FILE|PATH")]
    pub only: Vec<String>,
    /// Requests to Vault in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// Write to MOUNT although its type cannot be read (the token may not read
    /// `sys/internal/ui/mounts/MOUNT`), taking the spec's `kv_version` on your word. Without it,
    /// nothing is written to a mount vault-seed has not seen to be a KV engine. Repeatable.
    #[arg(long, value_name = "MOUNT")]
    pub assume_kv_mount: Vec<String>,
    /// Vault connection.
    #[command(flatten)]
    pub vault: VaultArgs,
}

/// `apply` options: those of `plan`, and how to write.
#[derive(Debug, Args)]
pub struct ApplyCmd {
    /// What to apply, and where.
    #[command(flatten)]
    pub common: ApplyArgs,
    /// Write no custom_metadata (`managed-by=vault-seed`, spec file, generators) on the paths
    /// written. KV v2 takes custom_metadata only in a second request per path, so this halves
    /// the requests of a first apply (about twice as fast at thousands of paths); the secrets
    /// then carry no mark of who created them.
    #[arg(long, help_heading = None::<&str>)] // under Options, not the Vault heading before it
    pub no_metadata: bool,
}

/// `verify` options.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The environment.
    #[arg(value_name = "ENV")]
    pub env: String,
    /// Only these parts: vault, policy, kube, argocd, consumers, imports (repeat or
    /// comma-separate).
    #[arg(long, value_delimiter = ',', value_name = "PART")]
    pub only: Vec<String>,
    /// Placeholders still unreplaced are failures, not warnings.
    #[arg(long)]
    pub strict: bool,
    /// List every object each part checked, not only what fails or warns and a line of counts,
    /// and every pending field, not only the first ten (`-o json` always lists everything).
    #[arg(long)]
    pub all: bool,
    /// Poll until every ExternalSecret is Ready, every VaultStaticSecret synced and the secrets
    /// app Healthy, or this time is up (`5m`).
    #[arg(long, value_parser = duration::parse, value_name = "DURATION")]
    pub wait: Option<std::time::Duration>,
    /// Annotate the ExternalSecrets with `force-sync=<unix time>` so ESO refreshes now, and the
    /// VaultStaticSecrets with `vault-seed/force-sync=<unix time>`: VSO reads no resync
    /// annotation, but reconciles a VaultStaticSecret at once when its annotations change (it
    /// re-reads Vault and rewrites the Secret only if the data differs).
    #[arg(long)]
    pub force_sync: bool,
    /// Restart the workloads that read a target Secret through env or subPath and run pods
    /// older than its data (`kubectl rollout restart`'s patch; a Rollout's `spec.restartAt`),
    /// then, with --wait, wait for their new pods. Off by default: verify writes nothing unless
    /// asked.
    #[arg(long)]
    pub restart: bool,
    /// Skip the Kubernetes parts, kube, argocd, consumers and imports (Vault and policy only).
    #[arg(long)]
    pub skip_kube: bool,
    /// Do not read the target Secrets of ExternalSecrets and VaultStaticSecrets (their keys go
    /// unchecked) nor the Secrets of `from_secret` fields (the part imports is left out), so
    /// verify needs no `get` on Secrets, which would also let it read their values (a hook Job's
    /// Role).
    #[arg(long, env = "VAULT_SEED_SKIP_TARGET_SECRETS")]
    pub skip_target_secrets: bool,
    /// The cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// File holding ESO's own Vault token, to ask the server which capabilities it has.
    #[arg(long, value_name = "FILE")]
    pub eso_token_file: Option<PathBuf>,
    /// Requests to Vault in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// Vault connection.
    #[command(flatten)]
    pub vault: VaultArgs,
}

const AUDIT_AFTER_HELP: &str = "\
Examples:
  vault-seed audit auh1-dev                     Vault and the cluster
  vault-seed audit auh1-dev --skip-kube -o json Vault only, one JSON document
  vault-seed audit auh1-dev --skip-mount-scan   only the specs' own folders, fields and consumers
  vault-seed audit auh1-dev --ignore 'secret/ask/hatchet/*' --ignore 'ExternalSecret ask/hatchet-*'
                                                a shared folder and namespace: leave out another app's

A path is named when any spec names it in any environment. The token needs `list` on the \
mounts' metadata and `read` on the secrets and their metadata (what it lacks is reported, \
never fatal). Docs: docs/audit.md.";

/// `audit` options.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The environment.
    #[arg(value_name = "ENV")]
    pub env: String,
    /// Look at Vault only: nothing is sent to the cluster.
    #[arg(long)]
    pub skip_kube: bool,
    /// Do not scan the specs' mounts beyond their folders for paths marked as vault-seed's.
    #[arg(long)]
    pub skip_mount_scan: bool,
    /// The most LISTs and metadata reads per mount; past it, the rest is "not checked".
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_scan_requests: u32,
    /// Requests to Vault in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// What is not this platform's, in a folder or namespace it shares: a Vault path as
    /// MOUNT/PATH (`secret/ask/hatchet/*`) or an object as audit shows it
    /// (`ExternalSecret ask/hatchet-*`); `*` is any run of characters. A matching path or
    /// object is not reported, a folder whose every path matches is not listed, and a consumer
    /// reading a matching path is left out too. Repeat for several.
    #[arg(long = "ignore", value_name = "PATTERN")]
    pub ignore: Vec<String>,
    /// The cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Vault connection.
    #[command(flatten)]
    pub vault: VaultArgs,
}

/// `set` options.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The environment.
    #[arg(value_name = "ENV")]
    pub env: String,
    /// The secret, and its field when it has several: `IAM_SERVICE__PAT` or `NAME.FIELD`.
    #[arg(value_name = "SECRET[.FIELD]")]
    pub target: String,
    /// Replace a real value, not only a placeholder. Before it writes, it names the
    /// ExternalSecrets and VaultStaticSecrets the specs list that read the value (see --skip-kube).
    #[arg(long)]
    pub force: bool,
    /// Write to MOUNT although its type cannot be read (the token may not read
    /// `sys/internal/ui/mounts/MOUNT`), taking the spec's `kv_version` on your word. Without it,
    /// nothing is written to a mount vault-seed has not seen to be a KV engine. Repeatable.
    #[arg(long, value_name = "MOUNT")]
    pub assume_kv_mount: Vec<String>,
    /// The cluster, asked who reads the value before it is replaced.
    #[command(flatten)]
    pub readers: ReadersArgs,
    /// Vault connection.
    #[command(flatten)]
    pub vault: VaultArgs,
}

/// `move` options.
#[derive(Debug, Args)]
pub struct MoveArgs {
    /// The environment.
    #[arg(value_name = "ENV")]
    pub env: String,
    /// The secret, as the specs name it now: `NAME`, its path under the mount, or its full path.
    #[arg(value_name = "SECRET")]
    pub target: String,
    /// Where the secret was before the layout changed: `secret/ask/auh1-dev/NAME` (or the path
    /// under the secret's mount). `plan` and `apply` name it when they find it.
    #[arg(long, value_name = "OLD_PATH")]
    pub from: String,
    /// Write to MOUNT although its type cannot be read (the token may not read
    /// `sys/internal/ui/mounts/MOUNT`), taking the spec's `kv_version` on your word. Repeatable.
    #[arg(long, value_name = "MOUNT")]
    pub assume_kv_mount: Vec<String>,
    /// Vault connection.
    #[command(flatten)]
    pub vault: VaultArgs,
}

/// Where `set` and `rotate` look for the readers of a value before they replace it: the
/// cluster as `verify` finds it. Only read; a cluster that cannot tell never stops the write.
#[derive(Debug, Args)]
pub struct ReadersArgs {
    /// Send nothing to the cluster: the value's readers (ExternalSecrets, VaultStaticSecrets)
    /// are not named before it is replaced.
    #[arg(long)]
    pub skip_kube: bool,
    /// The cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Which cluster, as kubectl finds it: `verify`, `audit`, `import`, and `set`/`rotate`
/// (asking who reads a value).
#[derive(Debug, Args, Clone)]
pub struct ClusterArgs {
    /// kubeconfig file; else KUBECONFIG, ~/.kube/config, in-cluster.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context; else the spec's `kube_context`, else the current context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// `import` options: those of `apply` (what, where, Vault), the cluster, and how to write.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The cluster the Secrets are read from (first: the Vault heading of `common` would
    /// otherwise hold these too).
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// What to import, and where.
    #[command(flatten)]
    pub common: ApplyArgs,
    /// Replace a value Vault holds that differs from the Secret's (the old one stays in KV v2
    /// history); without it such a field is refused.
    #[arg(long, help_heading = None::<&str>)] // under Options, not the Vault heading before it
    pub force: bool,
    /// Show what would be imported; write nothing.
    #[arg(long, help_heading = None::<&str>)]
    pub dry_run: bool,
}

/// `rotate` options.
#[derive(Debug, Args)]
pub struct RotateArgs {
    /// The environment.
    #[arg(value_name = "ENV")]
    pub env: String,
    /// The secret, and its field when it has several: `NAME` or `NAME.FIELD`.
    #[arg(value_name = "SECRET[.FIELD]")]
    pub target: String,
    /// Confirm the rotation (required unless --dry-run).
    #[arg(long)]
    pub yes: bool,
    /// Show what would rotate; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write to MOUNT although its type cannot be read (the token may not read
    /// `sys/internal/ui/mounts/MOUNT`), taking the spec's `kv_version` on your word. Without it,
    /// nothing is written to a mount vault-seed has not seen to be a KV engine. Repeatable.
    #[arg(long, value_name = "MOUNT")]
    pub assume_kv_mount: Vec<String>,
    /// The cluster, asked who reads the value before it is replaced.
    #[command(flatten)]
    pub readers: ReadersArgs,
    /// Vault connection.
    #[command(flatten)]
    pub vault: VaultArgs,
}

/// `policy` options.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// The environment.
    #[arg(value_name = "ENV")]
    pub env: String,
    /// Whose policy to print.
    #[arg(long = "for", value_enum, default_value_t = PolicyFor::Eso, value_name = "WHO")]
    pub holder: PolicyFor,
    /// Read the policy NAME from Vault and print it with the rules it lacks added below its
    /// text, as it is. An added rule grants only what the specs need, and carries the
    /// constraints of a rule it takes paths from; nothing is removed, narrowed or widened, else
    /// it refuses and says why (docs/policy.md). Write the result back under the same name
    /// (`vault policy write NAME FILE`): a shared policy keeps the other applications' rules. A
    /// policy that does not exist merges with nothing. Needs a Vault token with `read` on
    /// `sys/policies/acl/NAME`.
    #[arg(long, value_name = "NAME")]
    pub merge: Option<String>,
    /// With --merge: print only the rules it adds (HCL), to review before writing.
    #[arg(long, requires = "merge")]
    pub diff: bool,
    /// Vault connection (used only with --merge).
    #[command(flatten)]
    pub vault: VaultArgs,
}

/// Whose policy `policy` prints (`--for`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyFor {
    /// External Secrets Operator: what its ExternalSecrets and PushSecrets need.
    Eso,
    /// vault-seed itself: what `apply`, `verify` and `set`/`rotate` need.
    Seeder,
    /// Vault Secrets Operator: what its VaultStaticSecrets read (`read` on each path's data,
    /// from `[vso]`).
    Vso,
}

/// `order` options.
#[derive(Debug, Args)]
pub struct OrderArgs {
    /// One app's rendered manifests: `NAME=PATH`, PATH a YAML file, a directory of them, or `-`
    /// for stdin. Repeat for each app; the same NAME twice adds both paths to that app.
    #[arg(long = "app", value_name = "NAME=PATH", required = true)]
    pub apps: Vec<String>,
    /// Argo CD Application manifests (file or directory): their `argocd.argoproj.io/sync-wave`
    /// is each app's app wave (matched to `--app` by name), their sources are checked for a
    /// `ref` without `path`.
    #[arg(long, value_name = "PATH")]
    pub applications: Option<PathBuf>,
    /// The argocd-cm ConfigMap (YAML): whether app waves wait for Healthy.
    #[arg(long, value_name = "FILE")]
    pub argocd_cm: Option<PathBuf>,
    /// An object made outside these apps before they sync: `Secret/NAMESPACE/NAME` or
    /// `ConfigMap/NAMESPACE/NAME` (repeatable).
    #[arg(long, value_name = "KIND/NS/NAME")]
    pub exists: Vec<String>,
    /// An environment of the specs (the global spec directory option): findings about the Secrets its ExternalSecrets
    /// make are marked as the bootstrap's own.
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
}

/// Parse the command line; on a usage error, print it (with our hints) and exit 2.
pub fn parse() -> Cli {
    Cli::try_parse().unwrap_or_else(|e| with_hints(e).exit())
}

/// Hints clap cannot give. A command named like another tool's completion command points to
/// `completions`. `apply --dry-run` (or `--dryrun`, as other tools spell it) points to
/// `plan`, instead of clap's "to pass '--dry-run' as a value, use '-- --dry-run'". Done on the
/// error rather than with a hidden flag, which completion scripts would still offer.
pub fn with_hints(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    // `generate-completions`, `completion`, `gen-completions` as other tools name it: clap's
    // nearest name by spelling is `gen`.
    if e.kind() == ErrorKind::InvalidSubcommand {
        if let Some(ContextValue::String(name)) = e.get(ContextKind::InvalidSubcommand) {
            if name.contains("complet") {
                e.insert(
                    ContextKind::SuggestedSubcommand,
                    ContextValue::String("completions".into()),
                );
            }
        }
        return e;
    }
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let flag = arg.split('=').next().unwrap_or_default();
    let in_apply = matches!(
        e.get(ContextKind::Usage),
        Some(ContextValue::StyledStr(usage)) if usage.to_string().contains("vault-seed apply ")
    );
    if in_apply && matches!(flag, "--dry-run" | "--dryrun") {
        e.remove(ContextKind::SuggestedArg);
        e.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![
                "`apply` has no dry run: `vault-seed plan ENV` shows what apply would write, and \
                 writes nothing"
                    .into(),
            ]),
        );
    }
    e
}

/// VAULT_SKIP_VERIFY's values, as the vault CLI reads them.
fn parse_bool_env(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "f" | "no" => Ok(false),
        "1" | "true" | "t" | "yes" => Ok(true),
        other => Err(format!("`{other}` is not a boolean (true/false/1/0)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// The name each JSON document (and failure) carries is the one clap parses.
    #[test]
    fn command_names_are_the_subcommands() {
        let cmd = Cli::command();
        let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
        for args in [
            vec!["lint"],
            vec!["gen", "hex"],
            vec!["plan", "e"],
            vec!["apply", "e"],
            vec!["verify", "e"],
            vec!["set", "e", "S"],
            vec!["rotate", "e", "S"],
            vec!["import", "e"],
            vec!["move", "e", "S", "--from", "secret/old/S"],
            vec!["policy", "e"],
            vec!["audit", "e"],
            vec!["order", "--app", "a=b"],
            vec!["completions", "bash"],
            vec!["man"],
        ] {
            let cli = Cli::try_parse_from(std::iter::once("vault-seed").chain(args.clone()))
                .unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(cli.command.name(), args[0]);
            assert!(names.contains(&args[0]));
        }
        assert_eq!(names.len(), 14, "{names:?}");
    }

    #[test]
    fn hints_point_to_plan_and_to_completions() {
        for flag in ["--dry-run", "--dryrun", "--dry-run=true"] {
            let e = Cli::try_parse_from(["vault-seed", "apply", "auh1-dev", flag]).unwrap_err();
            let text = with_hints(e).to_string();
            assert!(
                text.contains("`vault-seed plan ENV` shows what apply would write"),
                "{flag}: {text}"
            );
            assert!(!text.contains("as a value"), "{flag}: {text}");
        }
        for name in ["generate-completions", "completion", "gen-completions"] {
            let e = Cli::try_parse_from(["vault-seed", name, "bash"]).unwrap_err();
            let text = with_hints(e).to_string();
            assert!(
                text.contains("a similar subcommand exists: 'completions'"),
                "{name}: {text}"
            );
        }
        // Other commands' unknown flags keep clap's message.
        let e = Cli::try_parse_from(["vault-seed", "lint", "--dry-run"]).unwrap_err();
        assert!(!with_hints(e).to_string().contains("vault-seed plan"));
    }

    #[test]
    fn gen_help_states_the_real_defaults() {
        use crate::generate::{DEFAULT_BYTES, DEFAULT_MARKER, DEFAULT_PASSWORD_LENGTH};
        let cmd = Cli::command();
        let gen = cmd.find_subcommand("gen").unwrap();
        let help = |id: &str| {
            gen.get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(|a| a.get_help())
                .map(|h| h.to_string())
                .unwrap()
        };
        assert!(help("bytes").contains(&format!("[default: {DEFAULT_BYTES}]")));
        assert!(help("length").contains(&format!("[default: {DEFAULT_PASSWORD_LENGTH}]")));
        assert!(help("marker").contains(&format!("[default: {DEFAULT_MARKER}]")));
        assert!(help("bits").contains(&format!("[default: {}]", crate::generate::DEFAULT_RSA_BITS)));
        let classes = crate::generate::CharClasses::default();
        let names: Vec<&str> = classes.classes().iter().map(|c| c.name()).collect();
        assert!(help("classes").contains(&format!("[default: {}]", names.join(","))));
    }
}
