//! Secret specs: what must exist in Vault for an application, and how ESO consumes it.
//!
//! Loading has two phases, as in cargo-deny: `load` parses each TOML file keeping the span of
//! every key and value, then validates into the typed values below, collecting every problem with
//! `file:line:col` before anything touches the network.

pub mod diag;
mod index;
mod load;
pub mod mounts;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};

use crate::base::kv::{KvMount, KvVersion};
use crate::generate::{Generator, Validity};
pub use diag::{Diagnostic, Location};
pub use index::TargetIndex;
/// A Vault policy's or role's name as a spec may give it: one plain path segment.
pub(crate) use load::{check_segment, SEGMENT_HELP};
pub use load::{load_dir, load_files, load_sources, LoadError};

/// The placeholder in a path template that an environment's name replaces.
pub const ENV_PLACEHOLDER: &str = "{env}";

/// All spec files of a directory, validated.
#[derive(Debug)]
pub struct SpecSet {
    /// The specs, in file name order.
    pub specs: Vec<Spec>,
}

/// One application's spec (one file). The descriptions (`description`) are for people reading
/// the file: checked, not kept (nothing reads them).
#[derive(Debug, Clone)]
pub struct Spec {
    /// The file it came from.
    pub file: Arc<Path>,
    /// The application's name (`name`, else the file stem).
    pub name: Arc<str>,
    /// Where in Vault its secrets live.
    pub vault: VaultTarget,
    /// The environments it may be applied to, by name.
    pub environments: Environments,
    /// How External Secrets Operator consumes the secrets; shared by the specs whose `[eso]` is
    /// the same (a platform's applications repeat it).
    pub eso: Arc<Eso>,
    /// How the Vault Secrets Operator consumes them (`[vso]`); `None` when the spec has no
    /// such section.
    pub vso: Option<Box<Vso>>,
    /// How Argo CD deploys the secrets and their consumers (`[argocd]`), for `verify`.
    pub argocd: Option<Box<Argocd>>,
    /// The secrets, in file order.
    pub secrets: Vec<Secret>,
}

/// The KV mount and the folder of an application's secrets.
#[derive(Debug, Clone)]
pub struct VaultTarget {
    /// The KV secrets engine's mount path, without slashes (`secret`).
    pub mount: Arc<str>,
    /// The folder under the mount, with `{env}` (`ask/core-service/{env}`).
    pub path: String,
    /// The KV version the spec expects (`kv_version = 1` or `2`); `None` lets vault-seed detect
    /// it.
    pub kv_version: Option<KvVersion>,
}

/// A spec's environments, sorted by name: a list, not a map (there are one or a few). Shared by
/// the specs whose environments are the same (a platform's applications repeat them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Environments(Arc<[Environment]>);

impl Environments {
    /// The environment named `name`.
    pub fn get(&self, name: &str) -> Option<&Environment> {
        self.0
            .binary_search_by(|e| e.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.0[i])
    }

    /// Their names, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|e| &e.name)
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<Environment> for Environments {
    /// Sorted by name; names are unique (they are a TOML table's keys).
    fn from_iter<I: IntoIterator<Item = Environment>>(iter: I) -> Self {
        let mut all: Vec<Environment> = iter.into_iter().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Environments(all.into())
    }
}

/// One environment an application can be applied to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Environment {
    /// Its name (`auh1-dev`).
    pub name: String,
    /// Vault's address for it, used when neither `--address` nor `VAULT_ADDR` is given.
    pub vault_addr: Option<String>,
    /// Vault Enterprise / OpenBao namespace.
    pub vault_namespace: Option<String>,
    /// The kubeconfig context of its cluster.
    pub kube_context: Option<String>,
    /// The Kubernetes namespace of its ExternalSecrets (else `eso.namespace`).
    pub kube_namespace: Option<String>,
    /// The addresses by which the cluster reaches the same Vault (`cluster_vault_addr`, e.g.
    /// `http://vault.vault.svc:8200`): a store or VaultConnection pointing at one of them, or at
    /// the address vault-seed talked to, reads the Vault vault-seed seeded.
    pub cluster_vault_addrs: Vec<String>,
    /// Per-environment changes to secrets, by secret name.
    pub overrides: BTreeMap<String, SecretOverride>,
}

/// A per-environment change to one secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SecretOverride {
    /// Leave the secret out of this environment.
    pub skip: bool,
    /// Replace the generator of these fields (or add fields) in this environment.
    pub fields: BTreeMap<String, Generator>,
}

impl SecretOverride {
    /// A secret's `fields` as this override changes them: a field it names takes its generator,
    /// in its place; one the secret lacks is added after the others.
    pub fn apply(&self, fields: &Arc<[Field]>) -> Arc<[Field]> {
        if self.fields.is_empty() {
            return Arc::clone(fields);
        }
        let mut fields = fields.to_vec();
        // By name through a map: a hostile spec may give thousands of fields.
        let mut at: HashMap<String, usize> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        for (name, generator) in &self.fields {
            match at.get(name) {
                Some(&i) => fields[i].generator = generator.clone(),
                None => {
                    at.insert(name.clone(), fields.len());
                    fields.push(Field::new(name.clone(), generator.clone()));
                }
            }
        }
        fields.into()
    }
}

/// One secret: a KV path with one or more fields.
#[derive(Debug, Clone)]
pub struct Secret {
    /// Its name: the last path segments under the application's folder.
    pub name: Arc<str>,
    /// Never rotated once written (data is encrypted with it).
    pub fixed: bool,
    /// Its fields, in file order.
    pub fields: Arc<[Field]>,
    /// Another application provides it (`provided_by`): vault-seed reads and judges it, never
    /// writes it.
    pub provided: Option<Arc<Provided>>,
    /// The type the Kubernetes Secret it reaches the cluster as must have (`secret_type`, e.g.
    /// `kubernetes.io/dockerconfigjson`); `verify` checks it.
    pub secret_type: Option<Arc<str>>,
    /// Where it is defined.
    pub location: Location,
}

/// A secret the application reads but another application writes (ask-db's database
/// passwords, pushed by its PushSecrets): declared so that `verify` can wait for it and explain
/// its absence, ESO's policy covers it, and `apply`, `set` and `rotate` never write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provided {
    /// Who provides it, in words (`provided_by`, e.g. `ask-db: CNPG password pushed by
    /// PushSecret core-service-db-password`).
    pub by: String,
    /// The provider's PushSecret (`push_secret = "NAMESPACE/NAME"`): `verify` shows its Ready
    /// condition and latest Warning event while the path is absent.
    pub push_secret: Option<(String, String)>,
    /// Its KV mount (`mount`), when not the spec's `[vault] mount`.
    pub mount: Option<String>,
    /// Its path under the mount, with `{env}` (`path`); else the spec's folder and its name.
    pub path: Option<String>,
}

/// One field of a secret and how its value is made.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    /// The key inside the KV secret (`password`, `value`).
    pub name: String,
    /// Its generator.
    pub generator: Generator,
    /// What `rotate` may do to it (`rotation`, or `fixed = true`).
    pub rotation: Rotation,
    /// Why the spec protects it as it does (`reason`, the field's or its secret's), in words:
    /// every refusal of a write to it says it.
    pub reason: Option<Arc<str>>,
    /// A placeholder a person must fill in before the first sync (`needed = "before-sync"`),
    /// not after deploy: the hints say so.
    pub before_sync: bool,
}

impl Field {
    /// A field made by `generator`, with no stated rotation.
    pub fn new(name: impl Into<String>, generator: Generator) -> Field {
        Field {
            name: name.into(),
            generator,
            rotation: Rotation::Unstated,
            reason: None,
            before_sync: false,
        }
    }

    /// Judge a live value: a keyring's every key, newest first, else the value itself. A bad
    /// key is named by its place, never by its text.
    /// A keyring holds the newest key and at most `keep` previous ones: a longer list would
    /// lose its oldest keys at the next rotation without a word.
    pub fn validate(&self, value: &SecretString) -> Validity {
        let Rotation::Keyring { keep } = self.rotation else {
            return self.generator.validate(value);
        };
        let n = value.expose_secret().split(',').count();
        if n > usize::from(keep) + 1 {
            return Validity::Invalid(format!(
                "holds {n} keys; the keyring keeps the newest and at most {keep} previous ({} in all)",
                usize::from(keep) + 1
            ));
        }
        self.validate_keys(value)
    }

    /// Judge each key of a keyring (of any length), newest first; a value of one key as it is.
    /// `rotate` judges a ring it is about to shorten with it.
    pub fn validate_keys(&self, value: &SecretString) -> Validity {
        let keys: Vec<&str> = value.expose_secret().split(',').collect();
        if keys.len() == 1 {
            return self.generator.validate(value);
        }
        for (i, key) in keys.iter().enumerate() {
            let at = || format!("key {} of {} (newest first)", i + 1, keys.len());
            match self
                .generator
                .validate(&SecretString::from(key.to_string()))
            {
                Validity::Valid => {}
                Validity::Pending => {
                    return Validity::Invalid(format!("{} is the placeholder marker", at()))
                }
                Validity::Invalid(why) => return Validity::Invalid(format!("{} {why}", at())),
            }
        }
        Validity::Valid
    }
}

/// What `rotate` may do to a field's value (`rotation`): data encrypted or hashed with a key
/// needs that key, so the spec says whether the old one must stay readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rotation {
    /// No `rotation` key: `rotate` replaces the value, but refuses a generator whose values
    /// encrypt or hash stored data ([`Generator::keys_data`]) until the spec says.
    Unstated,
    /// `"replace"`: a new value replaces the old one.
    Replace,
    /// `"keyring"`: the new key first, then up to `keep` previous keys, comma-separated (the
    /// form MultiFernet and Airflow's `fernet_key` read).
    Keyring {
        /// How many previous keys stay after a rotation (1 to [`MAX_KEEP`]).
        keep: u8,
    },
    /// `"never"`: the value never changes once written.
    Never,
    /// `fixed = true` on the field: the same as `"never"`, kept apart so that a refusal names
    /// the key the spec wrote.
    Fixed,
}

/// The most previous keys a keyring keeps.
pub const MAX_KEEP: u8 = 10;

impl Rotation {
    /// As written in a spec (`replace`, `keyring`, `never`), or `None` when unstated.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Rotation::Unstated => None,
            Rotation::Replace => Some("replace"),
            Rotation::Keyring { .. } => Some("keyring"),
            Rotation::Never | Rotation::Fixed => Some("never"),
        }
    }
}

/// How External Secrets Operator reaches and uses the secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Eso {
    /// The Kubernetes namespace of the ExternalSecrets.
    pub namespace: Option<String>,
    /// ExternalSecrets that read these paths.
    pub external_secrets: Vec<String>,
    /// PushSecrets that write these paths.
    pub push_secrets: Vec<String>,
    /// Vault policies ESO's token carries.
    pub policies: Vec<String>,
    /// The Vault auth role ESO logs in with, whose `token_policies` count too.
    pub auth_role: Option<AuthRole>,
    /// What ESO does with the paths.
    pub access: EsoAccess,
}

/// How the Vault Secrets Operator (VSO) reaches the secrets: VaultStaticSecrets, each reading
/// one KV path (`read` on `<mount>/data/<path>`; VSO never reads metadata).
#[derive(Debug, Clone, Default)]
pub struct Vso {
    /// The Kubernetes namespace of the VaultStaticSecrets.
    pub namespace: Option<String>,
    /// VaultStaticSecrets that read these paths.
    pub static_secrets: Vec<String>,
    /// Vault policies VSO's token carries.
    pub policies: Vec<String>,
    /// The Vault auth role of the VaultAuth VSO logs in with, whose `token_policies` count too.
    pub auth_role: Option<AuthRole>,
}

/// The Argo CD layout of the runbook's fix (`[argocd]`): a secrets Application that makes the
/// ExternalSecrets, synced at a lower app wave than the Applications that read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argocd {
    /// Argo CD's namespace, where the Application objects and `argocd-cm` live (`argocd`).
    pub namespace: String,
    /// The secrets Application (`core-service-secrets`); `{env}` is replaced.
    pub secrets_app: String,
    /// The Applications that read the secrets (`core-service`); `{env}` is replaced.
    pub consumers: Vec<String>,
}

impl Argocd {
    /// The secrets app's name in `env`.
    pub fn secrets_app(&self, env: &str) -> String {
        self.secrets_app.replace(ENV_PLACEHOLDER, env)
    }

    /// The consumers' names in `env`.
    pub fn consumers(&self, env: &str) -> Vec<String> {
        self.consumers
            .iter()
            .map(|c| c.replace(ENV_PLACEHOLDER, env))
            .collect()
    }
}

/// A Vault auth role (`auth/<mount>/role/<name>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AuthRole {
    /// The auth method's mount (`kubernetes`).
    pub mount: String,
    /// The role's name (`eso`).
    pub name: String,
}

/// What ESO does with the paths, which decides the capabilities its policy needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EsoAccess {
    /// ExternalSecrets read the values: `read` on `<mount>/data/<path>`.
    pub read: bool,
    /// PushSecrets write them: `create`, `update`, `read` on data; `read`, `list` on metadata.
    pub push: bool,
    /// `dataFrom.find` lists them: `list` on metadata.
    pub list: bool,
}

impl Default for EsoAccess {
    /// The runbook's grant: ESO reads and pushes.
    fn default() -> Self {
        EsoAccess {
            read: true,
            push: true,
            list: false,
        }
    }
}

/// What every target of one spec shares: one allocation per spec, pointed to by each of its
/// targets instead of a copy in each.
#[derive(Debug)]
pub struct Origin {
    /// The spec file.
    file: Arc<Path>,
    /// The application's name.
    app: Arc<str>,
    /// The spec's KV mount (`[vault] mount`).
    mount: Arc<str>,
    /// The KV version the spec expects for its mount, if it says.
    kv_version: Option<KvVersion>,
    /// The environment its targets are resolved for (empty when not one: tests' targets).
    env: Arc<str>,
}

impl Origin {
    /// The origin of targets from `file`, application `app`, whose spec's mount is `mount` at
    /// `kv_version` (when it says).
    pub fn new(
        file: Arc<Path>,
        app: Arc<str>,
        mount: Arc<str>,
        kv_version: Option<KvVersion>,
    ) -> Arc<Origin> {
        Arc::new(Origin {
            file,
            app,
            mount,
            kv_version,
            env: Arc::from(""),
        })
    }

    /// The same origin for the targets of environment `env`.
    pub fn in_env(&self, env: &str) -> Arc<Origin> {
        Arc::new(Origin {
            file: Arc::clone(&self.file),
            app: Arc::clone(&self.app),
            mount: Arc::clone(&self.mount),
            kv_version: self.kv_version,
            env: Arc::from(env),
        })
    }
}

/// A secret resolved for one environment: its full path and effective fields.
///
/// Cloned once per path by every part that keeps one (a result, a judgement, a report line),
/// so what it shares with its spec is shared, not copied: a clone allocates only its path.
/// Kept small (`verify` holds 100,000 of them through the run): what its spec gives every
/// target is one [`Origin`], read through [`Target::spec_file`], [`Target::app`],
/// [`Target::mount`] and [`Target::kv_version`].
#[derive(Debug, Clone)]
pub struct Target {
    /// What it shares with the other targets of its spec.
    origin: Arc<Origin>,
    /// The path under the mount (`ask/core-service/auh1-dev/ZITADEL_MASTERKEY`); a `Box<str>`:
    /// it never grows.
    pub path: Box<str>,
    /// The secret's name in the spec.
    pub name: Arc<str>,
    /// Never rotated once written.
    pub fixed: bool,
    /// Effective fields for this environment.
    pub fields: Arc<[Field]>,
    /// Provided by another application: read and judged, never written.
    pub provided: Option<Arc<Provided>>,
    /// The other secrets its derived fields are made from (`copy`, `{SECRET.field}`), found
    /// in its environment ([`attach_sources`]); `None` when it names none.
    pub sources: Option<Arc<[Source]>>,
    /// The type its Kubernetes Secret must have ([`Secret::secret_type`]).
    pub secret_type: Option<Arc<str>>,
}

/// Another secret a target's derived fields are made from, as found in the environment.
#[derive(Debug, Clone)]
pub struct Source {
    /// Its name, as the derived field writes it (`DB` of `copy = "DB.password"`).
    pub name: Arc<str>,
    /// Its KV mount.
    pub mount: Box<str>,
    /// Its path under the mount.
    pub path: Box<str>,
    /// Its fields, which judge the values read from it.
    pub fields: Arc<[Field]>,
}

impl Source {
    /// `mount/path`.
    pub fn full_path(&self) -> String {
        format!("{}/{}", self.mount, self.path)
    }
}

/// Give each target whose derived fields name other secrets those secrets ([`find_source`]),
/// among all of `targets` (the environment's, before `--only` narrows them). A name not found
/// is left out: `lint` reports it, and the engine says the field has no source.
pub fn attach_sources(targets: &mut [Target]) {
    let wanted: Vec<usize> = (0..targets.len())
        .filter(|&i| {
            targets[i]
                .fields
                .iter()
                .filter_map(|f| f.generator.derived())
                .any(|d| d.reads_other_secrets())
        })
        .collect();
    if wanted.is_empty() {
        return;
    }
    let all: Vec<&Target> = targets.iter().collect();
    let mut found: Vec<(usize, Vec<Source>)> = Vec::with_capacity(wanted.len());
    for i in wanted {
        let t = all[i];
        let mut names: Vec<String> = t
            .fields
            .iter()
            .filter_map(|f| f.generator.derived())
            .flat_map(|d| d.inputs())
            .filter_map(|r| r.secret)
            .collect();
        names.sort();
        names.dedup();
        let sources: Vec<Source> = names
            .iter()
            .filter_map(|n| {
                let s = find_source(&all, t, n).ok()?;
                Some(Source {
                    name: Arc::from(n.as_str()),
                    mount: Box::from(s.mount()),
                    path: s.path.clone(),
                    fields: Arc::clone(&s.fields),
                })
            })
            .collect();
        found.push((i, sources));
    }
    for (i, sources) in found {
        targets[i].sources = Some(sources.into());
    }
}

impl Target {
    /// A target of the spec `origin` tells.
    pub fn new(
        origin: Arc<Origin>,
        path: Box<str>,
        name: Arc<str>,
        fixed: bool,
        fields: Arc<[Field]>,
        provided: Option<Arc<Provided>>,
    ) -> Target {
        Target {
            origin,
            path,
            name,
            fixed,
            fields,
            provided,
            sources: None,
            secret_type: None,
        }
    }

    /// Whether `field` never changes once written: the secret is `fixed`, or the field is
    /// (`fixed = true`, `rotation = "never"`).
    pub fn is_fixed(&self, field: &Field) -> bool {
        self.fixed || matches!(field.rotation, Rotation::Never | Rotation::Fixed)
    }

    /// The spec file it comes from.
    pub fn spec_file(&self) -> &Path {
        &self.origin.file
    }

    /// The application's name.
    pub fn app(&self) -> &str {
        &self.origin.app
    }

    /// The environment it is resolved for.
    pub fn env(&self) -> &str {
        &self.origin.env
    }

    /// The KV mount: a provided secret's own (`mount`), else the spec's.
    pub fn mount(&self) -> &str {
        self.provided
            .as_ref()
            .and_then(|p| p.mount.as_deref())
            .unwrap_or(&self.origin.mount)
    }

    /// The KV version the spec expects, if it says: the spec's `kv_version` is about its own
    /// mount, so only when [`Target::mount`] is that mount.
    pub fn kv_version(&self) -> Option<KvVersion> {
        self.origin
            .kv_version
            .filter(|_| self.mount() == &*self.origin.mount)
    }

    /// `mount/path`, as people write it (`secret/ask/core-service/auh1-dev/X`). Made at its
    /// length (`format!` guesses, and grows): asked for every path, by every check.
    pub fn full_path(&self) -> String {
        let mount = self.mount();
        let mut full = String::with_capacity(mount.len() + 1 + self.path.len());
        full.push_str(mount);
        full.push('/');
        full.push_str(&self.path);
        full
    }

    /// Its mount as a KV engine, at the version [`KvVersion::resolve`] gives from the spec's
    /// `kv_version` and what `detected` reports.
    pub fn kv_mount(&self, detected: &dyn Fn(&str) -> Option<KvVersion>) -> KvMount {
        let mount = self.mount();
        KvMount::new(
            mount,
            KvVersion::resolve(self.kv_version(), detected(mount)),
        )
    }
}

impl Spec {
    /// The folder of this spec's secrets in `env` (`ask/core-service/auh1-dev`).
    pub fn folder(&self, env: &str) -> String {
        self.vault.path.replace(ENV_PLACEHOLDER, env)
    }

    /// What every target of this spec shares; made once per spec and given to
    /// [`Spec::target`] for each of its secrets.
    pub fn origin(&self) -> Arc<Origin> {
        Origin::new(
            Arc::clone(&self.file),
            Arc::clone(&self.name),
            Arc::clone(&self.vault.mount),
            self.vault.kv_version,
        )
    }

    /// Every secret of this spec, resolved for `env` (which must be one of its environments).
    pub fn targets(&self, env: &Environment) -> Vec<Target> {
        let origin = self.origin().in_env(&env.name);
        self.secrets
            .iter()
            .filter_map(|s| self.target(&origin, env, s))
            .collect()
    }

    /// One secret of this spec resolved for `env`; `None` when `env` skips it. `origin` is
    /// [`Spec::origin`].
    pub fn target(&self, origin: &Arc<Origin>, env: &Environment, s: &Secret) -> Option<Target> {
        let ov = env.overrides.get(&*s.name);
        if ov.is_some_and(|o| o.skip) {
            return None;
        }
        let fields = match ov {
            None => Arc::clone(&s.fields),
            Some(ov) => ov.apply(&s.fields),
        };
        let path = match s.provided.as_ref().and_then(|p| p.path.as_deref()) {
            Some(template) => template.replace(ENV_PLACEHOLDER, &env.name),
            None => {
                // At its length: every target holds its path through the run (`format!` left
                // a fifth of 100,000 of them unused).
                let folder = self.folder(&env.name);
                let mut path = String::with_capacity(folder.len() + 1 + s.name.len());
                path.push_str(&folder);
                path.push('/');
                path.push_str(&s.name);
                path
            }
        };
        Some(Target {
            origin: Arc::clone(origin),
            path: path.into_boxed_str(),
            name: Arc::clone(&s.name),
            fixed: s.fixed,
            fields,
            provided: s.provided.clone(),
            sources: None,
            secret_type: s.secret_type.clone(),
        })
    }
}

/// The specs that define an environment, with their targets.
#[derive(Debug)]
pub struct EnvPlan<'a> {
    /// The environment's name.
    pub env: String,
    /// Each spec that defines it, with its environment settings.
    pub specs: Vec<(&'a Spec, &'a Environment)>,
    /// Every secret of those specs, resolved.
    pub targets: Vec<Target>,
    /// Names that more than one secret of the environment has (in different applications),
    /// counted before `--only`: `set` and `rotate` name those secrets by their path instead.
    pub shared_names: BTreeSet<String>,
}

impl EnvPlan<'_> {
    /// The targets of each spec, one entry per spec of `specs` in its order. A plan that
    /// [`SpecSet`] made holds each spec's targets together and in the order of its specs: they
    /// are taken as they lie, in one pass. A plan put together otherwise has them gathered by
    /// spec file, also in one pass (a filter per spec would be quadratic in the specs).
    pub fn targets_by_spec(&self) -> Vec<SpecTargets<'_>> {
        let mut runs = Vec::with_capacity(self.specs.len());
        let mut at = 0;
        for (spec, _) in &self.specs {
            let start = at;
            while self
                .targets
                .get(at)
                .is_some_and(|t| t.spec_file() == &*spec.file)
            {
                at += 1;
            }
            runs.push(SpecTargets::Together(&self.targets[start..at]));
        }
        if at == self.targets.len() {
            return runs;
        }
        let mut by: HashMap<&Path, Vec<&Target>> = HashMap::new();
        for t in &self.targets {
            by.entry(t.spec_file()).or_default().push(t);
        }
        self.specs
            .iter()
            .map(|(s, _)| SpecTargets::Gathered(by.remove(&*s.file).unwrap_or_default()))
            .collect()
    }

    /// The Vault address the specs give for this environment (the first that says one).
    pub fn vault_addr(&self) -> Option<&str> {
        self.specs.iter().find_map(|(_, e)| e.vault_addr.as_deref())
    }

    /// The Vault namespace the specs give for this environment.
    pub fn vault_namespace(&self) -> Option<&str> {
        self.specs
            .iter()
            .find_map(|(_, e)| e.vault_namespace.as_deref())
    }
}

impl SpecSet {
    /// Every environment name, sorted, without duplicates.
    pub fn environment_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .specs
            .iter()
            .flat_map(|s| s.environments.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Resolve `env` across all specs, optionally narrowed by `--only FILE|PATH`.
    ///
    /// Fails with a diagnostic when no spec defines `env`, when `--only` matches nothing, or when
    /// specs disagree on the environment's Vault address.
    pub fn plan(&self, env: &str, only: &[String]) -> Result<EnvPlan<'_>, Box<Diagnostic>> {
        // Sized once for the most it can hold: growing by doubling held up to twice the list.
        let mut targets = Vec::with_capacity(self.specs.iter().map(|s| s.secrets.len()).sum());
        for spec in &self.specs {
            if let Some(e) = spec.environments.get(env) {
                targets.extend(spec.targets(e));
            }
        }
        self.plan_of(env, only, targets)
    }

    /// [`SpecSet::plan`] for a command that needs the specs' settings but not their secrets once
    /// the targets are made (`verify`): each spec's secrets are dropped as its targets are made
    /// (the targets say all they did, and the secrets would be held through the run beside
    /// them). The specs are left without secrets: this is the set's last plan.
    pub fn plan_without_secrets(
        &mut self,
        env: &str,
        only: &[String],
    ) -> Result<EnvPlan<'_>, Box<Diagnostic>> {
        let mut targets = Vec::with_capacity(self.specs.iter().map(|s| s.secrets.len()).sum());
        for spec in &mut self.specs {
            if let Some(e) = spec.environments.get(env) {
                targets.extend(spec.targets(e));
                spec.secrets = Vec::new();
            }
        }
        self.plan_of(env, only, targets)
    }

    /// The plan of `env` whose targets, those of every spec defining it in order, are made.
    fn plan_of(
        &self,
        env: &str,
        only: &[String],
        mut targets: Vec<Target>,
    ) -> Result<EnvPlan<'_>, Box<Diagnostic>> {
        let mut specs = Vec::new();
        for spec in &self.specs {
            if let Some(e) = spec.environments.get(env) {
                specs.push((spec, e));
            }
        }
        attach_sources(&mut targets);
        let defining: Vec<(&Path, Option<&str>)> = specs
            .iter()
            .map(|(s, e)| (&*s.file, e.vault_addr.as_deref()))
            .collect();
        let shared_names = narrowed(env, &defining, &mut targets, only, || {
            self.environment_names()
        })?;
        if !only.is_empty() {
            let kept: HashSet<&Path> = targets.iter().map(|t| t.spec_file()).collect();
            specs.retain(|(s, _)| kept.contains(&*s.file));
        }
        Ok(EnvPlan {
            env: env.to_string(),
            specs,
            targets,
            shared_names,
        })
    }

    /// [`SpecSet::plan`] for a command that keeps only the targets and the environment's Vault
    /// settings (`apply`, `plan`, `set`, `rotate`): each spec is dropped as soon as its targets
    /// are made, so that the whole set and all the targets are never held at once (at 100,000
    /// paths, together they were the peak of a run).
    pub fn into_targets(self, env: &str, only: &[String]) -> Result<EnvTargets, Box<Diagnostic>> {
        // The known environments, for the refusal when none defines `env` (only then: the specs
        // are gone by the time it is known).
        let known = if self.specs.iter().any(|s| s.environments.get(env).is_some()) {
            Vec::new()
        } else {
            self.environment_names()
        };
        let mut targets = Vec::with_capacity(self.specs.iter().map(|s| s.secrets.len()).sum());
        // Each defining spec's file and Vault address and namespace for `env`.
        let mut defining: Vec<(Arc<Path>, Option<String>, Option<String>)> = Vec::new();
        for spec in self.specs {
            let Some(e) = spec.environments.get(env) else {
                continue;
            };
            defining.push((
                Arc::clone(&spec.file),
                e.vault_addr.clone(),
                e.vault_namespace.clone(),
            ));
            targets.extend(spec.targets(e));
        }
        attach_sources(&mut targets);
        let files: Vec<(&Path, Option<&str>)> = defining
            .iter()
            .map(|(f, a, _)| (&**f, a.as_deref()))
            .collect();
        let shared_names = narrowed(env, &files, &mut targets, only, || known)?;
        // Only with `--only`: without it the set would be sized for every target, for nothing.
        let kept: HashSet<&Path> = if only.is_empty() {
            HashSet::new()
        } else {
            targets.iter().map(|t| t.spec_file()).collect()
        };
        let mut kept_specs = defining
            .iter()
            .filter(|(f, _, _)| only.is_empty() || kept.contains(&**f));
        let (vault_addr, vault_namespace) = (
            kept_specs.clone().find_map(|(_, a, _)| a.clone()),
            kept_specs.find_map(|(_, _, n)| n.clone()),
        );
        Ok(EnvTargets {
            env: env.to_string(),
            vault_addr,
            vault_namespace,
            targets,
            shared_names,
        })
    }
}

/// One spec's targets in a plan ([`EnvPlan::targets_by_spec`]), in plan order.
#[derive(Debug)]
pub enum SpecTargets<'a> {
    /// As they lie in the plan's targets.
    Together(&'a [Target]),
    /// Gathered from the plan's targets.
    Gathered(Vec<&'a Target>),
}

impl<'a> SpecTargets<'a> {
    /// Each target, in plan order.
    pub fn iter(&self) -> impl Iterator<Item = &'a Target> + '_ {
        let (together, gathered): (&'a [Target], &[&'a Target]) = match self {
            SpecTargets::Together(t) => (t, &[]),
            SpecTargets::Gathered(g) => (&[], g),
        };
        together.iter().chain(gathered.iter().copied())
    }
}

/// An environment resolved for a command that keeps only its targets ([`SpecSet::into_targets`]).
#[derive(Debug)]
pub struct EnvTargets {
    /// The environment's name.
    pub env: String,
    /// The Vault address the specs give for it (the first that says one).
    pub vault_addr: Option<String>,
    /// The Vault namespace the specs give for it.
    pub vault_namespace: Option<String>,
    /// Every secret of its specs, resolved (narrowed by `--only`).
    pub targets: Vec<Target>,
    /// Names that more than one secret of the environment has ([`EnvPlan::shared_names`]).
    pub shared_names: BTreeSet<String>,
}

/// The checks of [`SpecSet::plan`] on the targets of `env` from the specs `defining` it (file,
/// Vault address): some spec defines it, they agree on the address, `--only` matches. Narrows
/// `targets` by `only`; the names more than one target has.
fn narrowed(
    env: &str,
    defining: &[(&Path, Option<&str>)],
    targets: &mut Vec<Target>,
    only: &[String],
    known: impl FnOnce() -> Vec<String>,
) -> Result<BTreeSet<String>, Box<Diagnostic>> {
    if defining.is_empty() {
        let known = known();
        return Err(Box::new(
            Diagnostic::global(format!("no spec defines the environment `{env}`")).with_help(
                if known.is_empty() {
                    "add `[environments.<name>]` to a spec under the specs directory".to_string()
                } else {
                    format!("known environments: {}", few(&known))
                },
            ),
        ));
    }
    let addrs: Vec<(&Path, &str)> = defining
        .iter()
        .filter_map(|(file, a)| a.map(|a| (*file, a)))
        .collect();
    if let Some((file, addr)) = addrs.iter().find(|(_, a)| *a != addrs[0].1) {
        return Err(Box::new(Diagnostic::global(format!(
            "environment `{env}` has Vault address `{addr}` in `{}` but `{}` in `{}`",
            file.display(),
            addrs[0].1,
            addrs[0].0.display()
        ))
        .with_help("give every spec the same `vault_addr` for one environment, or apply them one at a time with `--only FILE`")));
    }
    // Each name once as it repeats, then owned: collected straight into the set, every repeat
    // would be a `String` first, made and freed for nothing.
    let mut seen = HashSet::new();
    let mut shared: BTreeSet<&str> = BTreeSet::new();
    for t in targets.iter() {
        if !seen.insert(&*t.name) {
            shared.insert(&t.name);
        }
    }
    let shared_names = shared.into_iter().map(str::to_string).collect();
    if !only.is_empty() {
        let before = targets.len();
        targets.retain(|t| only.iter().any(|o| matches_only(t, o)));
        if targets.is_empty() && before > 0 {
            return Err(Box::new(Diagnostic::global(format!(
                "`--only {}` matches no secret of environment `{env}`",
                only.join(",")
            ))
            .with_help("give a spec file (`secret-specs/core-service.toml`), an application name, a secret name, or a path under the mount (`ask/core-service/auh1-dev/ZITADEL_MASTERKEY`)")));
        }
    }
    targets.shrink_to_fit();
    Ok(shared_names)
}

fn matches_only(t: &Target, only: &str) -> bool {
    let only_trimmed = only.trim_matches('/');
    let as_path = Path::new(only);
    t.spec_file() == as_path
        || t.spec_file().file_name() == as_path.file_name() && as_path.extension().is_some()
        || t.app() == only
        || &*t.name == only
        || &*t.path == only_trimmed
        || t.full_path() == only_trimmed
        || t.path.starts_with(&format!("{only_trimmed}/"))
        || t.full_path().starts_with(&format!("{only_trimmed}/"))
}

/// Why [`find_source`] found no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceLookup {
    /// No secret of the environment has that name.
    Absent,
    /// Secrets of that name in several other specs (their files), none in the field's own.
    Ambiguous(Vec<String>),
}

/// The secret `name` that a derived field of `from` names (`copy = "NAME.field"`,
/// `{NAME.field}`) among an environment's `targets`: the one of `from`'s own spec, else the one
/// secret of that name in the environment's other specs.
pub fn find_source<'t>(
    targets: &[&'t Target],
    from: &Target,
    name: &str,
) -> Result<&'t Target, SourceLookup> {
    let named: Vec<&'t Target> = targets
        .iter()
        .copied()
        .filter(|t| &*t.name == name)
        .collect();
    if let Some(t) = named.iter().find(|t| t.spec_file() == from.spec_file()) {
        return Ok(t);
    }
    match named[..] {
        [] => Err(SourceLookup::Absent),
        [t] => Ok(t),
        _ => Err(SourceLookup::Ambiguous(
            named
                .iter()
                .map(|t| t.spec_file().display().to_string())
                .collect(),
        )),
    }
}

/// At most eight items as "`a`, `b`", then how many more: a hostile spec may have thousands.
pub(crate) fn few(items: &[String]) -> String {
    const MAX: usize = 8;
    let shown: Vec<String> = items.iter().take(MAX).map(|i| diag::shown(i)).collect();
    match items.len().saturating_sub(MAX) {
        0 => crate::base::backticks::backticked(&shown),
        more => format!(
            "{} and {more} more",
            crate::base::backticks::backticked(&shown)
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The targets in `dev` of the one spec `text` (`specs/app.toml`).
    fn dev_targets(text: &str) -> Vec<Target> {
        let set = load_sources(
            vec![(PathBuf::from("specs/app.toml"), text.as_bytes().to_vec())],
            Vec::new(),
        )
        .unwrap();
        let spec = &set.specs[0];
        spec.targets(spec.environments.get("dev").unwrap())
    }

    /// What a spec gives every target (its file, application, mount and KV version) is one
    /// shared [`Origin`], not copied into each.
    #[test]
    fn a_targets_spec_is_shared() {
        let text = "[vault]\nmount = \"secret\"\npath = \"app/{env}\"\nkv_version = 2\n\
                    [environments.dev]\n\
                    [secrets.A]\ndescription = \"d\"\nfields.v = { generator = \"uuid\" }\n\
                    [secrets.B]\ndescription = \"d\"\nfields.v = { generator = \"uuid\" }\n";
        let targets = dev_targets(text);
        assert_eq!(targets.len(), 2);
        assert!(Arc::ptr_eq(&targets[0].origin, &targets[1].origin));
        for t in &targets {
            assert_eq!(t.spec_file(), Path::new("specs/app.toml"));
            assert_eq!(t.app(), "app");
            assert_eq!(t.mount(), "secret");
            assert_eq!(t.kv_version(), Some(KvVersion::V2));
        }
        assert_eq!(targets[1].full_path(), "secret/app/dev/B");
    }

    /// A provided secret on a mount of its own has that mount, and the spec's `kv_version`
    /// (about the spec's mount) is not applied to it; on the spec's mount, it is.
    #[test]
    fn a_provided_secret_has_its_own_mount_without_the_specs_kv_version() {
        let text = "[vault]\nmount = \"secret\"\npath = \"app/{env}\"\nkv_version = 1\n\
                    [environments.dev]\n\
                    [secrets.OWN]\ndescription = \"d\"\nfields.v = { generator = \"uuid\" }\n\
                    [secrets.ELSEWHERE]\ndescription = \"d\"\nprovided_by = \"db\"\n\
                    mount = \"kv\"\npath = \"db/{env}/x\"\nfields.v = {}\n\
                    [secrets.HERE]\ndescription = \"d\"\nprovided_by = \"db\"\n\
                    mount = \"secret\"\npath = \"db/{env}/y\"\nfields.v = {}\n";
        let targets = dev_targets(text);
        let seen: Vec<(String, Option<KvVersion>)> = targets
            .iter()
            .map(|t| (t.full_path(), t.kv_version()))
            .collect();
        assert_eq!(
            seen,
            [
                ("secret/app/dev/OWN".to_string(), Some(KvVersion::V1)),
                ("kv/db/dev/x".to_string(), None),
                ("secret/db/dev/y".to_string(), Some(KvVersion::V1)),
            ]
        );
    }

    /// Each spec's targets, in plan order: taken as they lie in a plan the set made, and
    /// gathered by spec file, with the same result, from targets in any other order.
    #[test]
    fn targets_by_spec_gives_each_specs_targets_however_they_lie() {
        let spec = |app: &str, names: &[&str]| {
            let mut text = format!(
                "name = \"{app}\"\n[vault]\nmount = \"secret\"\npath = \"{app}/{{env}}\"\n\
                 [environments.dev]\n[environments.prod]\n"
            );
            // `b` has a secret, skipped in `dev`: no target there.
            if app == "b" {
                text += "[environments.dev.secrets.W]\nskip = true\n";
            }
            for n in names {
                text += &format!(
                    "[secrets.{n}]\ndescription = \"d\"\nfields.v = {{ generator = \"uuid\" }}\n"
                );
            }
            (
                PathBuf::from(format!("specs/{app}.toml")),
                text.into_bytes(),
            )
        };
        let set = load_sources(
            vec![spec("a", &["X", "Y"]), spec("b", &["W"]), spec("c", &["Z"])],
            Vec::new(),
        )
        .unwrap();
        let paths = |plan: &EnvPlan<'_>| -> Vec<Vec<String>> {
            plan.targets_by_spec()
                .iter()
                .map(|run| run.iter().map(Target::full_path).collect())
                .collect()
        };
        let want = [
            vec!["secret/a/dev/X".to_string(), "secret/a/dev/Y".to_string()],
            vec![],
            vec!["secret/c/dev/Z".to_string()],
        ];
        let mut plan = set.plan("dev", &[]).unwrap();
        assert!(plan
            .targets_by_spec()
            .iter()
            .all(|run| matches!(run, SpecTargets::Together(_))));
        assert_eq!(paths(&plan), want);
        // a's targets apart, c's between them.
        plan.targets.swap(1, 2);
        assert!(plan
            .targets_by_spec()
            .iter()
            .all(|run| matches!(run, SpecTargets::Gathered(_))));
        assert_eq!(paths(&plan), want);
    }
}
