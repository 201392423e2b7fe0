//! What ESO needs on which Vault path, from the spec's `eso.access` and an environment's secrets;
//! and what the Vault Secrets Operator needs, from the spec's `[vso]`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;

use super::{Capabilities, Capability, Requirements, Rule};
use crate::base::kv::{KvMount, KvVersion};
use crate::spec::{EnvPlan, Field, Spec, Target, ENV_PLACEHOLDER};

/// Why ESO needs a capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Use {
    /// An ExternalSecret reads the value.
    Read,
    /// A PushSecret writes it (and reads its metadata first).
    Push,
    /// `dataFrom.find` lists the folder.
    List,
    /// A VSO VaultStaticSecret reads the value.
    #[serde(rename = "vault-static-secret")]
    StaticSecret,
}

impl Use {
    /// The ESO feature, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Use::Read => "ExternalSecret read",
            Use::Push => "PushSecret",
            Use::List => "dataFrom.find",
            Use::StaticSecret => "VaultStaticSecret read",
        }
    }
}

/// Capabilities ESO needs on one API path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// The API path (`secret/data/ask/core-service/auh1-dev/X`; a folder to list ends in `/`).
    pub path: String,
    /// What ESO needs there.
    pub capabilities: Capabilities,
    /// Why.
    pub uses: Vec<Use>,
    /// The folder rule that grants it as the runbook does (`secret/data/ask/core-service/*`);
    /// one per folder, shared by its paths' requirements.
    pub folder_rule: Arc<str>,
    /// The top-level parameters of the write ESO sends here (PushSecret); empty when it only
    /// reads or lists. OpenBao checks a rule's parameter constraints against them.
    #[serde(skip)]
    pub params: Vec<Param>,
}

/// A top-level parameter of a request body, as OpenBao's parameter checks see it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Param {
    /// Its name (`data`).
    pub name: String,
    /// A JSON object (KV v2's `data`, `custom_metadata`); else a string vault-seed does not know
    /// (a value ESO pushes to KV v1).
    pub object: bool,
}

impl Param {
    fn object(name: &str) -> Param {
        Param {
            name: name.to_string(),
            object: true,
        }
    }
}

/// Everything ESO needs for `plan`'s secrets, one entry per API path, sorted by path.
///
/// Each spec's `eso.access` decides: `read` needs `read` on `<mount>/data/<path>`; `push` needs
/// `create`, `update`, `read` there and `read`, `list` on `<mount>/metadata/<path>`; `list`
/// needs `list` on `<mount>/metadata/<folder>/`. On KV v1 the paths have no `data/` or
/// `metadata/` ([`KvMount`]). Each spec's mount has its own version: the spec's `kv_version`
/// when it says, else what `detected` reports for that mount (the server's answer), else KV v2
/// ([`KvVersion::default`]), as on `secret/`.
pub fn requirements(
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
) -> Vec<Requirement> {
    // Every need as it comes, then merged by path ([`merged`]): a map by path would hold each
    // path twice (its key and the requirement's).
    let mut all: Vec<Requirement> = Vec::new();
    each_need(plan, detected, &mut |n| {
        // A target's read and push of one data path come one after the other: merged at once
        // (as [`merged`] would, in the same order), one record where there were two.
        match all.last_mut() {
            Some(last) if last.path == n.path => merge_into(last, &mut n.requirement()),
            _ => all.push(n.requirement()),
        }
    });
    merged(all)
}

/// [`requirements`], held compactly ([`Requirements`]): what `verify` checks ESO's policies
/// against. Each need goes into the set as it is found; no record per path is kept.
pub fn eso_requirements(
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
) -> Requirements {
    let mut all = super::needs::Builder::new();
    // At most a data and a metadata path per secret and a folder per spec.
    all.reserve(2 * plan.targets.len() + plan.specs.len());
    each_need(plan, detected, &mut |n| all.push(n.requirement()));
    all.finish()
}

/// The smallest set of rules, one per folder, that grants everything ESO needs for `plan`'s
/// secrets: [`super::minimal_rules`] of [`requirements`], found without a record per path.
///
/// Each need's capabilities go straight to its folder rule, which is what merging by path first
/// gives whenever every need of one API path has one folder rule. That holds when each mount has
/// one KV version and no mount lies inside another (then an API path names one target, and a
/// target's needs share its spec's rule), and no secret's path ends in `/` (a folder's listing
/// does); the folders' listings, one per spec, are merged by path first. Otherwise (a spec set
/// Vault could not serve), the requirements are made and merged as before.
pub fn eso_rules(plan: &EnvPlan<'_>, detected: &dyn Fn(&str) -> Option<KvVersion>) -> Vec<Rule> {
    let mut rules: BTreeMap<Arc<str>, Capabilities> = BTreeMap::new();
    let mut lists: Vec<Requirement> = Vec::new();
    let mut mounts: HashMap<String, KvVersion> = HashMap::new();
    let mut exact = true;
    each_need(plan, detected, &mut |n| {
        if *mounts
            .entry(n.mount.path.clone())
            .or_insert(n.mount.version)
            != n.mount.version
        {
            exact = false;
        }
        if n.why == Use::List {
            lists.push(n.requirement());
            return;
        }
        exact &= !n.path.ends_with('/');
        rules
            .entry(Arc::clone(n.folder_rule))
            .or_default()
            .extend(n.capabilities.iter().copied());
    });
    let nested = mounts.keys().any(|a| {
        mounts
            .keys()
            .any(|b| a != b && (b.is_empty() || a.starts_with(&format!("{b}/"))))
    });
    if !exact || nested {
        return super::minimal_rules(&requirements(plan, detected));
    }
    for r in merged(lists) {
        rules
            .entry(r.folder_rule)
            .or_default()
            .extend(r.capabilities);
    }
    super::check::rules_in_order(rules.into_iter().map(|(p, c)| Rule::new(&*p, c)).collect())
}

/// One thing ESO needs, as [`each_need`] finds it; its path lives in a buffer reused for the next
/// one.
struct Need<'a> {
    path: &'a str,
    mount: &'a KvMount,
    capabilities: &'static [Capability],
    why: Use,
    folder_rule: &'a Arc<str>,
    params: Params<'a>,
    /// A path another application provides (read under its exact path).
    provided: bool,
    /// The application whose need it is.
    app: &'a str,
}

/// The top-level parameters of ESO's write, made only when a [`Requirement`] is.
#[derive(Clone, Copy)]
enum Params<'a> {
    /// It only reads or lists.
    None,
    /// A PushSecret on KV v2: `{"data": {...}}`.
    Data,
    /// A PushSecret on KV v1: the fields themselves and `custom_metadata`.
    Fields(&'a [Field]),
}

impl Need<'_> {
    /// This need as a requirement of its own.
    fn requirement(&self) -> Requirement {
        // Counted in tests: what `policy` holds grows with these records, not with its rules.
        super::eval::probes::record();
        Requirement {
            path: self.path.to_string(),
            capabilities: self.capabilities.iter().copied().collect(),
            uses: vec![self.why],
            folder_rule: Arc::clone(self.folder_rule),
            params: match self.params {
                Params::None => Vec::new(),
                Params::Data => vec![Param::object("data")],
                Params::Fields(fields) => fields
                    .iter()
                    .map(|f| Param {
                        name: f.name.clone(),
                        object: false,
                    })
                    .chain([Param::object("custom_metadata")])
                    .collect(),
            },
        }
    }
}

/// Every need of ESO's for `plan`'s secrets, one at a time, in spec order (see
/// [`requirements`]): nothing per path is kept.
#[allow(clippy::too_many_lines)] // Vault's rule followed step by step as its source has it
fn each_need(
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
    f: &mut dyn FnMut(Need<'_>),
) {
    use Capability::{Create, List, Read, Update};
    let by_spec = plan.targets_by_spec();
    let mut path = String::new();
    for ((spec, env), targets) in plan.specs.iter().zip(&by_spec) {
        let access = spec.eso.access;
        let kv = KvVersion::resolve(spec.vault.kv_version, detected(&spec.vault.mount));
        let mount = KvMount::new(&spec.vault.mount, kv);
        let (data, meta) = (mount.data_prefix(), mount.metadata_prefix());
        // A glob over the folder the spec owns; else each path is its own rule ([`scope`]).
        let (data_rule, meta_rule): (Option<Arc<str>>, Option<Arc<str>>) =
            match scope(spec, &env.name) {
                Scope::Folder(base) => (
                    Some(format!("{data}{base}*").into()),
                    Some(format!("{meta}{base}*").into()),
                ),
                Scope::Exact => (None, None),
            };
        let rule = |glob: &Option<Arc<str>>, path: &str| match glob {
            Some(r) => Arc::clone(r),
            None => Arc::from(path),
        };
        for t in targets.iter() {
            // A path another application provides: ESO reads it; writing it is the provider's
            // business (its own PushSecret and policy), so nothing more is required here.
            if t.provided.is_some() {
                if let (true, Some(r)) = (access.read, provided_read(t, detected)) {
                    f(Need {
                        path: &r.path,
                        mount: &t.kv_mount(detected),
                        capabilities: &[Read],
                        why: Use::Read,
                        folder_rule: &r.folder_rule,
                        params: Params::None,
                        provided: true,
                        app: &spec.name,
                    });
                }
                continue;
            }
            path.clear();
            path.push_str(&data);
            path.push_str(&t.path);
            let data_rule = rule(&data_rule, &path);
            let need = |capabilities, why, params| Need {
                path: &path,
                mount: &mount,
                capabilities,
                why,
                folder_rule: &data_rule,
                params,
                provided: false,
                app: &spec.name,
            };
            if access.read {
                f(need(&[Read], Use::Read, Params::None));
            }
            if access.push {
                // ESO's PushSecret body (providers/v1/vault/client_push.go): `{"data": {...}}` on
                // KV v2; on KV v1 the fields themselves plus `custom_metadata`.
                let params = match kv {
                    KvVersion::V2 => Params::Data,
                    KvVersion::V1 => Params::Fields(&t.fields),
                };
                f(need(&[Create, Update, Read], Use::Push, params));
                if kv == KvVersion::V2 {
                    path.clear();
                    path.push_str(&meta);
                    path.push_str(&t.path);
                    f(Need {
                        path: &path,
                        mount: &mount,
                        capabilities: &[Read, List],
                        why: Use::Push,
                        folder_rule: &rule(&meta_rule, &path),
                        params: Params::None,
                        provided: false,
                        app: &spec.name,
                    });
                }
            }
        }
        if access.list {
            let folder = mount.list_path(&spec.folder(&env.name));
            f(Need {
                path: &format!("{folder}/"),
                mount: &mount,
                capabilities: &[List],
                why: Use::List,
                // The folder itself: an exact rule grants a LIST of it with or without its `/`
                // (OpenBao `vault/policy/acl.go` `AllowOperation`).
                folder_rule: &rule(&meta_rule, &folder),
                params: Params::None,
                provided: false,
                app: &spec.name,
            });
        }
    }
}

/// Where the rules for a spec's own secrets go in an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Scope {
    /// A folder the spec owns (with its trailing `/`; empty for the whole mount, which no spec
    /// owns): one rule `<prefix><folder>*` covers its secrets.
    Folder(String),
    /// A folder it shares with others: each path is a rule of its own.
    Exact,
}

/// Whether a spec owns the folder its secrets are in, so that a glob over it reaches only
/// secrets of the environment's specs: a glob is granted over a folder that the application's
/// name or the environment's is a segment of (`ask/core-service/`, `team/dev/`). The folder
/// above `{env}` ([`rule_base`]) is preferred, so one rule covers every environment; else the
/// environment's own folder. Elsewhere (`ask/`, which other applications share) a glob would
/// reach their secrets: each path is named ([`Scope::Exact`]).
pub(super) fn scope(spec: &Spec, env: &str) -> Scope {
    let named = |folder: &str| folder.split('/').any(|s| s == &*spec.name || s == env);
    let base = rule_base(spec, env);
    if named(&base) {
        return Scope::Folder(base);
    }
    let own = format!("{}/", spec.folder(env).trim_matches('/'));
    if named(&own) {
        return Scope::Folder(own);
    }
    Scope::Exact
}

/// The comment lines above printed rules that say where a glob was used and why, and where
/// each path is named instead: gathered from the rules as they are made, said of the rules
/// printed ([`ScopeNotes::lines`]).
#[derive(Debug, Default)]
pub struct ScopeNotes {
    /// The folders globbed (`secret/data/ask/core-service/`).
    owned: indexmap::IndexSet<String>,
    /// Each exact rule of a spec's own secret: the folder it is in, which the spec does not
    /// own, and the application.
    exact: std::collections::HashMap<String, (String, String)>,
    /// The exact rules of paths other applications provide.
    provided: std::collections::HashSet<String>,
}

impl ScopeNotes {
    /// A glob over `folder` (`secret/data/ask/core-service/`).
    pub(super) fn glob(&mut self, folder: &str) {
        self.owned.insert(folder.to_string());
    }

    /// The exact `rule` of `app`'s, in `folder` (with its trailing `/`), which it does not own.
    pub(super) fn exact(&mut self, rule: &str, folder: &str, app: &str) {
        self.exact
            .insert(rule.to_string(), (folder.to_string(), app.to_string()));
    }

    /// The exact `rule` of a path another application provides.
    pub(super) fn provided(&mut self, rule: &str) {
        self.provided.insert(rule.to_string());
    }

    /// What `rule` (an exact path or a glob), made for `app`'s need `why`, says.
    fn rule(&mut self, rule: &str, app: &str, why: Use, provided: bool) {
        if let Some(folder) = rule.strip_suffix('*') {
            self.glob(folder);
        } else if provided {
            self.provided(rule);
        } else if why == Use::List {
            self.exact(rule, &format!("{rule}/"), app);
        } else {
            self.exact(rule, parent(rule), app);
        }
    }

    /// The lines above `rules` (all that were made, or those `--merge` adds), for environment
    /// `env`: each says which choice was made and why.
    pub fn lines(&self, env: &str, rules: &[super::Rule]) -> Vec<String> {
        let few = |set: &indexmap::IndexSet<&str>| {
            crate::spec::few(&set.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        let (mut owned, mut shared, mut apps) = (
            indexmap::IndexSet::new(),
            indexmap::IndexSet::new(),
            indexmap::IndexSet::new(),
        );
        let mut provided = false;
        for r in rules {
            if let Some(folder) = r.pattern.strip_suffix('*') {
                if self.owned.contains(folder) {
                    owned.insert(folder);
                }
            } else if let Some((folder, app)) = self.exact.get(&r.pattern) {
                shared.insert(folder.as_str());
                apps.insert(app.as_str());
            } else {
                provided |= self.provided.contains(&r.pattern);
            }
        }
        let mut out = Vec::new();
        if !owned.is_empty() {
            out.push(format!(
                "`*` only over a folder the specs own (the application or the environment names it): {}",
                few(&owned)
            ));
        }
        if !shared.is_empty() {
            let apps = if apps.len() == 1 {
                format!("application {}", few(&apps))
            } else {
                format!("applications {}", few(&apps))
            };
            out.push(format!(
                "exact paths under {}: a folder neither {apps} nor environment `{}` names, which other applications may share",
                few(&shared),
                crate::base::text::quoted(env)
            ));
        }
        if provided {
            out.push(
                "exact paths for what other applications provide: their folders are theirs"
                    .to_string(),
            );
        }
        out
    }
}

/// `path`'s folder with its trailing `/` (empty at the top).
pub(super) fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..=i])
}

/// What [`eso_rules`] chose for `plan`, as comment lines ([`ScopeNotes::lines`]).
pub fn eso_scope_notes(
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
) -> ScopeNotes {
    let mut notes = ScopeNotes::default();
    each_need(plan, detected, &mut |n| {
        notes.rule(n.folder_rule, n.app, n.why, n.provided)
    });
    notes
}

/// What [`vso_requirements`] chose for `plan`, as comment lines ([`ScopeNotes::lines`]).
pub fn vso_scope_notes(
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
) -> ScopeNotes {
    let mut notes = ScopeNotes::default();
    each_vso_need(plan, detected, &mut |r, app, provided| {
        notes.rule(&r.folder_rule, app, Use::StaticSecret, provided)
    });
    notes
}

/// One requirement per path, sorted by path: the capabilities and the uses of its needs united,
/// the folder rule of the first, the parameters of the last that has some (as a map by path
/// kept them, when each need was added to the path's entry in turn).
fn merged(mut all: Vec<Requirement>) -> Vec<Requirement> {
    all.sort_by(|a, b| a.path.cmp(&b.path)); // stable: needs of one path stay in order
    all.dedup_by(|later, first| {
        if later.path != first.path {
            return false;
        }
        merge_into(first, later);
        true
    });
    all.shrink_to_fit();
    all
}

/// `later`'s need of `first`'s path added to `first`: the capabilities and the uses united, the
/// parameters of `later` when it has some.
fn merge_into(first: &mut Requirement, later: &mut Requirement) {
    first.capabilities.append(&mut later.capabilities);
    if !later.params.is_empty() {
        first.params = std::mem::take(&mut later.params);
    }
    for u in later.uses.drain(..) {
        if !first.uses.contains(&u) {
            first.uses.push(u);
        }
    }
    first.uses.sort();
}

/// Everything the Vault Secrets Operator needs for the secrets of `plan`'s specs that have a
/// `[vso]` section, one entry per API path, sorted by path: `read` on `<mount>/data/<path>` on
/// KV v2, `read` on `<mount>/<path>` on KV v1. VSO reads a KV v2 secret with one `GET` on the
/// data path (`spec.version` is a query parameter of it), never lists and never reads metadata
/// (vault-secrets-operator `vault/requests.go` `kvV2RequestV2`, `vault/utils.go` `JoinPath`;
/// its own test policies in `test/integration/vaultstaticsecret/terraform/main.tf`).
pub fn vso_requirements(
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
) -> Vec<Requirement> {
    let mut by_path: BTreeMap<String, Requirement> = BTreeMap::new();
    each_vso_need(plan, detected, &mut |r, _, _| {
        by_path.entry(r.path.clone()).or_insert(Requirement {
            uses: vec![Use::StaticSecret],
            ..r
        });
    });
    by_path.into_values().collect()
}

/// Each read of VSO's for `plan`'s specs with `[vso]`, in spec order, with the application and
/// whether another application provides the path.
fn each_vso_need(
    plan: &EnvPlan<'_>,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
    f: &mut dyn FnMut(Requirement, &str, bool),
) {
    let by_spec = plan.targets_by_spec();
    let with_vso = plan
        .specs
        .iter()
        .zip(&by_spec)
        .filter(|((s, _), _)| s.vso.is_some());
    for ((spec, env), targets) in with_vso {
        let kv = KvVersion::resolve(spec.vault.kv_version, detected(&spec.vault.mount));
        let mount = KvMount::new(&spec.vault.mount, kv);
        let data_rule: Option<Arc<str>> = match scope(spec, &env.name) {
            Scope::Folder(base) => Some(format!("{}{base}*", mount.data_prefix()).into()),
            Scope::Exact => None,
        };
        for t in targets.iter() {
            // A path another application provides is read by its exact path.
            if let Some(r) = provided_read(t, detected) {
                f(r, &spec.name, true);
                continue;
            }
            let path = mount.data_path(&t.path);
            f(
                Requirement {
                    folder_rule: data_rule.clone().unwrap_or_else(|| path.as_str().into()),
                    path,
                    capabilities: [Capability::Read].into(),
                    uses: Vec::new(),
                    params: Vec::new(),
                },
                &spec.name,
                false,
            );
        }
    }
}

/// What a reader needs on a path another application provides (`t.provided`): `read` on its
/// data path, under a rule for that path alone (the folder is the provider's: a glob over it
/// would reach the provider's other secrets); `None` for a target vault-seed seeds. Never more:
/// writing it is the provider's business. ESO's requirements above use it; so does any other
/// reader's (the Vault Secrets Operator's `policy --for vso`: read; vault-seed's own `policy
/// --for seeder`: read only, since `apply` reads a provided path and never writes it).
pub fn provided_read(
    t: &Target,
    detected: &dyn Fn(&str) -> Option<KvVersion>,
) -> Option<Requirement> {
    t.provided.as_ref()?;
    let path = t.kv_mount(detected).data_path(&t.path);
    Some(Requirement {
        folder_rule: path.as_str().into(),
        path,
        capabilities: [Capability::Read].into_iter().collect(),
        uses: vec![Use::Read],
        params: Vec::new(),
    })
}

/// The folder a rule covers, with a trailing `/` (empty for the whole mount): the application's
/// folder above `{env}` when the template ends with it, so one rule covers every environment as
/// the runbook's does; else the environment's folder itself.
pub(super) fn rule_base(spec: &Spec, env: &str) -> String {
    let template = spec.vault.path.trim_matches('/');
    match template.strip_suffix(ENV_PLACEHOLDER) {
        Some(above) if above.is_empty() || above.ends_with('/') => above.to_string(),
        _ => format!("{}/", spec.folder(env).trim_matches('/')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_files;
    use Capability::*;

    fn load(toml: &str) -> (tempfile::TempDir, crate::spec::SpecSet) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("app.toml");
        std::fs::write(&file, toml).unwrap();
        let set = load_files(&[file]).unwrap();
        (dir, set)
    }

    const SPEC: &str = r#"
name = "app"
[vault]
mount = "kv"
path = "team/app/{env}"
[environments.dev]
[eso]
access = ["ACCESS"]
[secrets.A]
description = "a"
fields.password = { generator = "hex32" }
[secrets.B]
description = "b"
fields.value = { generator = "placeholder" }
"#;

    fn reqs(access: &str, kv: KvVersion) -> Vec<Requirement> {
        let (_d, set) = load(&SPEC.replace("\"ACCESS\"", access));
        let plan = set.plan("dev", &[]).unwrap();
        requirements(&plan, &|_| Some(kv))
    }

    /// A secret another application provides (issue 15), to append to [`SPEC`].
    const PROVIDED: &str = r#"
[secrets.db-password]
description = "d"
provided_by = "db: pushed by PushSecret db-password"
path = "team/db/{env}/db-password"
fields.password = {}
"#;

    /// (path, capabilities, folder rule) of each requirement.
    fn triples(r: &[Requirement]) -> Vec<(&str, Capabilities, &str)> {
        r.iter()
            .map(|r| (r.path.as_str(), r.capabilities, &*r.folder_rule))
            .collect()
    }

    fn caps(c: &[Capability]) -> Capabilities {
        c.iter().copied().collect()
    }

    #[test]
    fn read_only_needs_read_on_data() {
        let r = reqs("\"read\"", KvVersion::V2);
        let paths: Vec<_> = r.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["kv/data/team/app/dev/A", "kv/data/team/app/dev/B"]);
        assert!(r.iter().all(|r| r.capabilities == caps(&[Read])));
        assert!(r.iter().all(|r| &*r.folder_rule == "kv/data/team/app/*"));
        assert!(r.iter().all(|r| r.uses == [Use::Read]));
    }

    #[test]
    fn push_and_list_on_kv_v2() {
        let r = reqs("\"read\", \"push\", \"list\"", KvVersion::V2);
        let got = triples(&r);
        assert_eq!(
            got,
            vec![
                (
                    "kv/data/team/app/dev/A",
                    caps(&[Create, Update, Read]),
                    "kv/data/team/app/*"
                ),
                (
                    "kv/data/team/app/dev/B",
                    caps(&[Create, Update, Read]),
                    "kv/data/team/app/*"
                ),
                (
                    "kv/metadata/team/app/dev/",
                    caps(&[List]),
                    "kv/metadata/team/app/*"
                ),
                (
                    "kv/metadata/team/app/dev/A",
                    caps(&[Read, List]),
                    "kv/metadata/team/app/*"
                ),
                (
                    "kv/metadata/team/app/dev/B",
                    caps(&[Read, List]),
                    "kv/metadata/team/app/*"
                ),
            ]
        );
        assert_eq!(r[0].uses, [Use::Read, Use::Push]);
    }

    #[test]
    fn kv_v1_paths_have_no_data_or_metadata() {
        let r = reqs("\"read\", \"list\"", KvVersion::V1);
        let paths: Vec<_> = r
            .iter()
            .map(|r| (r.path.as_str(), &*r.folder_rule))
            .collect();
        assert_eq!(
            paths,
            [
                ("kv/team/app/dev/", "kv/team/app/*"),
                ("kv/team/app/dev/A", "kv/team/app/*"),
                ("kv/team/app/dev/B", "kv/team/app/*"),
            ]
        );
    }

    #[test]
    fn spec_kv_version_wins_over_the_parameter() {
        let (_d, set) = load(
            &SPEC
                .replace("\"ACCESS\"", "\"read\"")
                .replace("path = \"team", "kv_version = 2\npath = \"team"),
        );
        let r = requirements(&set.plan("dev", &[]).unwrap(), &|_| Some(KvVersion::V1));
        assert_eq!(r[0].path, "kv/data/team/app/dev/A");
    }

    /// VSO reads the data path only, on each mount at its version; a spec without `[vso]`
    /// gives it nothing, and `[vso]` alone gives ESO nothing.
    #[test]
    fn vso_reads_the_data_path_only() {
        let vso_spec = SPEC.replace(
            "[eso]\naccess = [\"ACCESS\"]",
            "[vso]\nstatic_secrets = [\"a\"]",
        );
        let (_d, set) = load(&vso_spec);
        let plan = set.plan("dev", &[]).unwrap();
        let v2 = vso_requirements(&plan, &|_| Some(KvVersion::V2));
        let got = triples(&v2);
        assert_eq!(
            got,
            [
                (
                    "kv/data/team/app/dev/A",
                    caps(&[Read]),
                    "kv/data/team/app/*"
                ),
                (
                    "kv/data/team/app/dev/B",
                    caps(&[Read]),
                    "kv/data/team/app/*"
                ),
            ]
        );
        assert!(v2.iter().all(|r| r.uses == [Use::StaticSecret]));
        let v1 = vso_requirements(&plan, &|_| Some(KvVersion::V1));
        assert_eq!(v1[0].path, "kv/team/app/dev/A");
        assert_eq!(&*v1[0].folder_rule, "kv/team/app/*");
        assert!(requirements(&plan, &|_| Some(KvVersion::V2)).is_empty());
        let (_d, eso_only) = load(&SPEC.replace("\"ACCESS\"", "\"read\""));
        assert!(vso_requirements(&eso_only.plan("dev", &[]).unwrap(), &|_| None).is_empty());
        // A path another application provides: read by its path alone, never a glob over the
        // provider's folder (issue 15; issue 44).
        let (_d, set) = load(&(vso_spec + PROVIDED));
        let r = vso_requirements(&set.plan("dev", &[]).unwrap(), &|_| Some(KvVersion::V2));
        let db = r.iter().find(|r| r.path.contains("db-password")).unwrap();
        assert_eq!(
            (db.path.as_str(), &*db.folder_rule),
            (
                "kv/data/team/db/dev/db-password",
                "kv/data/team/db/dev/db-password"
            )
        );
        assert_eq!(
            (db.capabilities, db.uses.clone()),
            (caps(&[Read]), vec![Use::StaticSecret])
        );
    }

    /// Issue 15: a path another application provides is read by ESO (`read` on its data path,
    /// under a rule for that path alone: the folder is the provider's) and never pushed or
    /// listed from this spec.
    #[test]
    fn a_provided_path_needs_read_only() {
        let spec = SPEC.replace("\"ACCESS\"", "\"read\", \"push\", \"list\"") + PROVIDED;
        let (_d, set) = load(&spec);
        let r = requirements(&set.plan("dev", &[]).unwrap(), &|_| Some(KvVersion::V2));
        let db: Vec<_> = r
            .iter()
            .filter(|r| r.path.contains("db-password"))
            .collect();
        assert_eq!(db.len(), 1, "{r:?}");
        assert_eq!(db[0].path, "kv/data/team/db/dev/db-password");
        assert_eq!(db[0].capabilities, caps(&[Read]));
        assert_eq!(db[0].uses, [Use::Read]);
        assert_eq!(&*db[0].folder_rule, "kv/data/team/db/dev/db-password");
        // The spec's own secrets keep their push and list grants.
        assert!(r.iter().any(|r| r.path == "kv/metadata/team/app/dev/A"));
    }

    /// A glob only over a folder the application's or the environment's name is a segment of:
    /// the one above `{env}` first, else the environment's own; elsewhere each path.
    #[test]
    fn a_folder_is_owned_when_the_application_or_the_environment_names_it() {
        for (template, want) in [
            ("team/app/{env}", Scope::Folder("team/app/".into())),
            ("app/{env}", Scope::Folder("app/".into())),
            ("team/{env}", Scope::Folder("team/dev/".into())),
            ("{env}", Scope::Folder("dev/".into())),
            ("team/{env}/app", Scope::Folder("team/dev/app/".into())),
            ("shared/{env}/web", Scope::Folder("shared/dev/web/".into())),
            ("team/app", Scope::Folder("team/app/".into())),
            ("team", Scope::Exact),
            ("team/app-{env}", Scope::Exact),
            ("team/apps", Scope::Exact),
        ] {
            let (_d, set) = load(
                &SPEC
                    .replace("\"ACCESS\"", "\"read\"")
                    .replace("team/app/{env}", template),
            );
            let spec = &set.specs[0];
            assert_eq!(scope(spec, "dev"), want, "{template}");
        }
    }

    #[test]
    fn folder_rule_without_env_at_the_end() {
        let (_d, set) = load(
            &SPEC
                .replace("\"ACCESS\"", "\"read\"")
                .replace("team/app/{env}", "team/{env}/app"),
        );
        let r = requirements(&set.plan("dev", &[]).unwrap(), &|_| Some(KvVersion::V2));
        assert_eq!(r[0].path, "kv/data/team/dev/app/A");
        assert_eq!(&*r[0].folder_rule, "kv/data/team/dev/app/*");
    }

    fn load_all(files: &[(&str, String)]) -> (tempfile::TempDir, crate::spec::SpecSet) {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = files
            .iter()
            .map(|(name, toml)| {
                let file = dir.path().join(name);
                std::fs::write(&file, toml).unwrap();
                file
            })
            .collect();
        let set = load_files(&paths).unwrap();
        (dir, set)
    }

    /// `policy`'s rules come from each need as it is found, without a record per path, and are
    /// what merging the requirements by path gives: for every access, KV version and provided
    /// path; for two specs listing one folder under different folder rules (merged by path
    /// first); and, where one API path could have needs under two folder rules (a mount at two
    /// versions, a mount inside another), by the requirements themselves.
    #[test]
    fn the_policy_rules_are_the_merged_requirements_rules_without_a_record_per_path() {
        let app = |name: &str, path: &str, extra: &str, access: &str| {
            SPEC.replace("name = \"app\"", &format!("name = \"{name}\""))
                .replace("team/app/{env}", path)
                .replace("\"ACCESS\"", access)
                .replace("[vault]\n", &format!("[vault]\n{extra}"))
        };
        let all = "\"read\", \"push\", \"list\"";
        let cases: Vec<(Vec<(&str, String)>, bool)> = vec![
            (vec![("a.toml", app("a", "team/a/{env}", "", all))], true),
            // A folder the spec does not own: a rule per path, and the folder's own for its LIST.
            (vec![("a.toml", app("a", "team", "", all))], true),
            (
                vec![(
                    "a.toml",
                    app("a", "team", "kv_version = 1\n", all) + PROVIDED,
                )],
                true,
            ),
            (
                vec![("a.toml", app("a", "team/a/{env}", "kv_version = 1\n", all))],
                true,
            ),
            (
                vec![(
                    "a.toml",
                    app("a", "team/a/{env}", "", "\"read\"") + PROVIDED,
                )],
                true,
            ),
            (
                vec![
                    ("a.toml", app("a", "team/x/{env}", "", "\"list\"")),
                    (
                        "b.toml",
                        app("b", "team/x/dev", "", all)
                            .replace("[secrets.A]", "[secrets.C]")
                            .replace("[secrets.B]", "[secrets.D]"),
                    ),
                ],
                true,
            ),
            (
                vec![
                    (
                        "a.toml",
                        app("a", "team/a/{env}", "kv_version = 1\n", "\"read\""),
                    ),
                    ("b.toml", app("b", "team/b/{env}", "kv_version = 2\n", all)),
                ],
                false,
            ),
            (
                vec![
                    (
                        "a.toml",
                        app("a", "a/{env}", "", "\"read\"")
                            .replace("mount = \"kv\"", "mount = \"kv/x\""),
                    ),
                    ("b.toml", app("b", "b/{env}", "", all)),
                ],
                false,
            ),
        ];
        for (files, folds) in cases {
            let (_d, set) = load_all(&files);
            let plan = set.plan("dev", &[]).unwrap();
            let want = super::super::minimal_rules(&requirements(&plan, &|_| None));
            crate::acl::eval::probes::RECORDS.with(|c| c.set(0));
            let got = eso_rules(&plan, &|_| None);
            assert_eq!(got, want, "{files:?}");
            assert!(!got.is_empty());
            let records = crate::acl::eval::probes::RECORDS.with(|c| c.get());
            if folds {
                // At most the folders' listings, one per spec.
                assert!(records <= files.len(), "{records} records: {files:?}");
            } else {
                assert!(records > 0, "{files:?}");
            }
        }
    }
}
