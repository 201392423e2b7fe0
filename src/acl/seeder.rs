//! The smallest policy vault-seed itself needs on an environment: what `apply`, `verify` and
//! `set`/`rotate` send, path by path, granted per application folder as ESO's policy is
//! ([`super::required`]).
//!
//! The requests, and where they are made:
//! - `auth/token/lookup-self` (read): every command checks its token first
//!   (`cmd/session.rs`); `auth/token/revoke-self` (update): a login's token is revoked at exit
//!   (`vault/login.rs`). OpenBao's `default` policy grants both, but a role may leave `default`
//!   out (`token_no_default_policy`).
//! - No rule for `sys/internal/ui/mounts/<mount>`, which `mounts.rs` reads for each mount's
//!   engine and KV version: OpenBao serves it without an ACL check (`vault/logical_system.go`:
//!   `PathsSpecial.Unauthenticated` lists `internal/ui/mounts/*`) to a token that has any
//!   capability under the mount (`pathInternalUIMountRead`, `hasMountAccess`), which the folder
//!   rules give. tests/suite/seeder_policy.rs checks that every capability printed is needed.
//! - KV v2 `<mount>/data/<folder>/*`: `read` (what exists, `verify`'s values, `set`'s current
//!   version), `create` (`apply`'s `cas=0` write), `update` (`apply` adding a field, `set`,
//!   `rotate`) (`vault/kv.rs`).
//! - KV v2 `<mount>/metadata/<folder>/*`: `list` (one LIST per folder, `seed/mod.rs`), `update`
//!   (vault-seed's `custom_metadata`). Nothing reads metadata by itself: a data read carries it.
//! - KV v1 `<mount>/<folder>/*`: the data capabilities and `list`; v1 has no metadata.
//! - A path another application provides (`provided_by`): `read` only, on that path alone
//!   ([`super::provided_read`]): `apply` and `verify` read and judge it, nothing writes it.
//!   Its folder is not listed either: `apply` notes that it read each such path instead.
//! - `verify`'s policy part (`verify/grants.rs`): `read` on `sys/policies/acl/<name>` of each
//!   policy the spec names for ESO (and for VSO, under `[vso]`) and of `default`, and on their
//!   auth roles `auth/<mount>/role/<name>`, whose `token_policies` it also reads (those are not known
//!   without asking Vault: see [`seeder_notes`]).
//!
//! Nothing else: no `delete`, no `sudo`, nothing on `sys/policies` but reads of those names, and
//! nothing outside each application's folder. A glob only over a folder the spec owns (its name
//! or the environment's is a segment of it, [`super::required`]'s `scope`); in a folder it
//! shares, each path exactly, and a LIST of the folder itself.

use std::collections::BTreeMap;

use super::required::{scope, Scope, ScopeNotes};
use super::{Capabilities, Capability, Rule};
use crate::base::kv::{KvMount, KvVersion};
use crate::spec::{EnvPlan, Target};

/// The rules, in the order they are printed: each application's data and metadata folders, the
/// token's own paths, then what `verify` reads of ESO's policy.
pub fn seeder_rules(plan: &EnvPlan<'_>) -> Vec<Rule> {
    seeder_rules_and_notes(plan).0
}

/// [`seeder_rules`], and what they chose (a glob over a folder a spec owns, else each path).
#[allow(clippy::too_many_lines)] // Vault's rule followed step by step as its source has it
pub fn seeder_rules_and_notes(plan: &EnvPlan<'_>) -> (Vec<Rule>, ScopeNotes) {
    use Capability::{Create, List, Read, Update};
    let mut folders: BTreeMap<String, Capabilities> = BTreeMap::new();
    let mut notes = ScopeNotes::default();
    let mut eso: Vec<String> = Vec::new();
    let by_spec = plan.targets_by_spec();
    for ((spec, env), run) in plan.specs.iter().zip(&by_spec) {
        let targets: Vec<&Target> = run.iter().collect();
        if targets.is_empty() {
            continue;
        }
        let mut grant = |pattern: String, caps: &[Capability]| {
            folders.entry(pattern).or_default().extend(caps);
        };
        // No server is asked: a spec without `kv_version` is taken as KV v2, as `policy --for
        // eso` takes it.
        let detected = |_: &str| None;
        // A path another application provides is read (`apply` and `verify` judge it), never
        // written: `read` on its data path alone, as ESO's read of it.
        for t in &targets {
            if let Some(r) = super::provided_read(t, &detected) {
                grant(r.folder_rule.to_string(), &[Read]);
                notes.provided(&r.folder_rule);
            }
        }
        if targets.iter().all(|t| t.provided.is_some()) {
            continue;
        }
        let mount = KvMount::new(
            &spec.vault.mount,
            KvVersion::resolve(spec.vault.kv_version, None),
        );
        let cas = mount.version.has_cas();
        match scope(spec, &env.name) {
            Scope::Folder(base) => {
                let (data, meta) = (mount.data_prefix(), mount.metadata_prefix());
                grant(format!("{data}{base}*"), &[Create, Update, Read]);
                // On KV v1 the metadata prefix is the data prefix: one rule with `list` added.
                grant(format!("{meta}{base}*"), &[List]);
                if cas {
                    grant(format!("{meta}{base}*"), &[Update]);
                }
                notes.glob(&format!("{data}{base}"));
                notes.glob(&format!("{meta}{base}"));
            }
            // Each path, and a LIST of each folder they are in (one per folder, `seed/mod.rs`).
            Scope::Exact => {
                let mut listed: Vec<String> = Vec::new();
                for t in targets.iter().filter(|t| t.provided.is_none()) {
                    let data = mount.data_path(&t.path);
                    notes.exact(&data, super::required::parent(&data), &spec.name);
                    grant(data, &[Create, Update, Read]);
                    if cas {
                        let meta = mount.metadata_path(&t.path);
                        notes.exact(&meta, super::required::parent(&meta), &spec.name);
                        grant(meta, &[Update]);
                    }
                    let folder = t.path.rsplit_once('/').map_or("", |(f, _)| f);
                    let list = mount.list_path(folder);
                    if !listed.contains(&list) {
                        listed.push(list);
                    }
                }
                for list in listed {
                    notes.exact(&list, &format!("{list}/"), &spec.name);
                    grant(list, &[List]);
                }
            }
        }
        eso.extend(
            spec.eso
                .policies
                .iter()
                .map(|p| format!("sys/policies/acl/{p}")),
        );
        // VSO's policies and role, which `verify` reads the same way.
        let vso = spec.vso.iter();
        let roles = spec
            .eso
            .auth_role
            .iter()
            .chain(vso.clone().filter_map(|v| v.auth_role.as_ref()));
        eso.extend(roles.map(|role| format!("auth/{}/role/{}", role.mount, role.name)));
        eso.extend(
            vso.flat_map(|v| v.policies.iter())
                .map(|p| format!("sys/policies/acl/{p}")),
        );
    }
    if !eso.is_empty() {
        eso.push("sys/policies/acl/default".into());
    }
    // Data rules before metadata rules, as the ESO printer writes them.
    let mut rules: Vec<Rule> = folders.into_iter().map(|(p, c)| Rule::new(p, c)).collect();
    rules.sort_by_key(|r| (r.pattern.contains("/metadata/"), r.pattern.clone()));
    let one = |caps: &[Capability]| caps.iter().copied().collect::<Capabilities>();
    rules.push(Rule::new("auth/token/lookup-self", one(&[Read])));
    rules.push(Rule::new("auth/token/revoke-self", one(&[Update])));
    eso.sort();
    eso.dedup();
    rules.extend(eso.into_iter().map(|p| Rule::new(p, one(&[Read]))));
    (rules, notes)
}

/// What the printed policy cannot know without asking Vault, as comment lines.
pub fn seeder_notes(plan: &EnvPlan<'_>) -> Vec<String> {
    let roles: Vec<String> = plan
        .specs
        .iter()
        .flat_map(|(s, _)| {
            s.eso
                .auth_role
                .iter()
                .chain(s.vso.iter().filter_map(|v| v.auth_role.as_ref()))
        })
        .map(|r| format!("`auth/{}/role/{}`", r.mount, r.name))
        .collect();
    if roles.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "verify also reads `sys/policies/acl/<name>` of every policy in the `token_policies` of {}: add a read rule for any the spec does not name",
        roles.join(", ")
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_files;

    fn rules(toml: &str, env: &str) -> Vec<(String, Vec<&'static str>)> {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for (i, t) in toml.split("\n---\n").enumerate() {
            let file = dir.path().join(format!("app{i}.toml"));
            std::fs::write(&file, t).unwrap();
            files.push(file);
        }
        let set = load_files(&files).unwrap();
        let plan = set.plan(env, &[]).unwrap();
        seeder_rules(&plan)
            .into_iter()
            .map(|r| {
                (
                    r.pattern,
                    r.capabilities.iter().map(|c| c.as_str()).collect(),
                )
            })
            .collect()
    }

    const APP: &str = r#"
name = "NAME"
[vault]
mount = "secret"
path = "team/NAME/{env}"
[environments.dev]
[eso]
policies = ["eso-NAME"]
auth_mount = "kubernetes"
auth_role = "eso"
[secrets.A]
description = "a"
fields.password = { generator = "hex32" }
"#;

    fn owned(v: &[(&str, &[&'static str])]) -> Vec<(String, Vec<&'static str>)> {
        v.iter().map(|(p, c)| (p.to_string(), c.to_vec())).collect()
    }

    #[test]
    fn one_folder_per_application_and_what_verify_reads_of_esos_policy() {
        let two = format!(
            "{}\n---\n{}",
            APP.replace("NAME", "api"),
            APP.replace("NAME", "web")
                .replace("mount = \"secret\"", "mount = \"kv\"\nkv_version = 1")
        );
        assert_eq!(
            rules(&two, "dev"),
            owned(&[
                ("kv/team/web/*", &["create", "update", "read", "list"]),
                ("secret/data/team/api/*", &["create", "update", "read"]),
                ("secret/metadata/team/api/*", &["update", "list"]),
                ("auth/token/lookup-self", &["read"]),
                ("auth/token/revoke-self", &["update"]),
                ("auth/kubernetes/role/eso", &["read"]),
                ("sys/policies/acl/default", &["read"]),
                ("sys/policies/acl/eso-api", &["read"]),
                ("sys/policies/acl/eso-web", &["read"]),
            ])
        );
    }

    /// `verify` reads VSO's policies and role as ESO's: the seeder may read them too.
    #[test]
    fn what_verify_reads_of_vsos_policy() {
        let app = APP.replace(
            "[eso]\npolicies = [\"eso-NAME\"]\nauth_mount = \"kubernetes\"\nauth_role = \"eso\"\n",
            "[vso]\nstatic_secrets = [\"a\"]\npolicies = [\"vso-NAME\"]\nauth_role = \"vso\"\n",
        );
        let got = rules(&app.replace("NAME", "api"), "dev");
        let reads: Vec<&str> = got
            .iter()
            .filter(|(p, _)| p.starts_with("sys/policies") || p.starts_with("auth/kubernetes"))
            .map(|(p, _)| p.as_str())
            .collect();
        assert_eq!(
            reads,
            [
                "auth/kubernetes/role/vso",
                "sys/policies/acl/default",
                "sys/policies/acl/vso-api"
            ]
        );
    }

    #[test]
    fn no_eso_policy_or_role_reads_no_policy() {
        let app = APP
            .replace("NAME", "api")
            .replace("policies = [\"eso-api\"]\n", "")
            .replace("auth_mount = \"kubernetes\"\nauth_role = \"eso\"\n", "");
        let got = rules(&app, "dev");
        assert!(
            got.iter()
                .all(|(p, _)| !p.starts_with("sys/policies") && !p.starts_with("auth/kubernetes")),
            "{got:?}"
        );
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[test]
    fn a_provided_path_is_only_read_by_its_own_path() {
        let provided = r#"
[secrets.DB]
description = "d"
provided_by = "db app"
path = "team/db/{env}/DB"
fields.password = {}
"#;
        let app = APP.replace("NAME", "api") + provided;
        let got = rules(&app, "dev");
        assert_eq!(
            got[..3],
            owned(&[
                ("secret/data/team/api/*", &["create", "update", "read"]),
                ("secret/data/team/db/dev/DB", &["read"]),
                ("secret/metadata/team/api/*", &["update", "list"]),
            ])
        );
        // An application whose every secret is provided writes nothing: no folder of its own.
        let only = APP.replace("NAME", "api").replace(
            "[secrets.A]\ndescription = \"a\"\nfields.password = { generator = \"hex32\" }\n",
            provided,
        );
        let got = rules(&only, "dev");
        assert_eq!(
            got[0],
            owned(&[("secret/data/team/db/dev/DB", &["read"])])[0]
        );
        assert!(!got.iter().any(|(p, _)| p.contains("team/api")), "{got:?}");
    }

    #[test]
    fn a_template_not_ending_in_env_is_granted_that_environments_folder_only() {
        let app = APP
            .replace("NAME", "api")
            .replace("team/api/{env}", "team/{env}/api");
        let got = rules(&app, "dev");
        assert_eq!(got[0].0, "secret/data/team/dev/api/*");
        assert_eq!(got[1].0, "secret/metadata/team/dev/api/*");
    }
}
