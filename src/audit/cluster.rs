//! `audit`'s cluster side: every ExternalSecret and VaultStaticSecret in the specs' namespaces,
//! and those reading a path under the specs' folders that no spec names. Keys are matched to
//! spec paths by `verify`'s rules ([`TargetIndex::of_key`], [`target_of_vss`]), not a copy of them.
//! An object, or a field of one, that cannot be read is "not checked", never fine.

use std::collections::BTreeSet;

use super::findings::Finding;
use super::{Ignore, KubeTarget, Scanned};
use crate::kube::{
    DataFrom, EsoCluster, ExternalSecretInfo, FieldProblem, KubeError, VaultStaticSecretInfo,
};
use crate::spec::{EnvPlan, Target, TargetIndex};
use crate::text::cap;
use crate::verify::cluster::vso_namespace;
use crate::verify::store::eso_namespace;
use crate::verify::vso::target_of_vss;

/// The kubeconfig context: `--context`, else the first `kube_context` the specs give.
pub fn context(plan: &EnvPlan<'_>, kube: &KubeTarget) -> Option<String> {
    kube.context
        .clone()
        .or_else(|| plan.specs.iter().find_map(|(_, e)| e.kube_context.clone()))
}

/// The cluster side of the audit; findings and counts added to `found` and `scanned`.
pub(super) async fn audit(
    plan: &EnvPlan<'_>,
    named: &[Target],
    owned: &[(String, String, String)],
    kube: &KubeTarget,
    ignore: &Ignore,
    found: &mut Vec<Finding>,
    scanned: &mut Scanned,
) {
    let context = context(plan, kube);
    let cluster = match EsoCluster::connect(kube.kubeconfig.as_deref(), context.as_deref()).await {
        Ok(c) => c,
        Err(e) => {
            found.push(Finding::NotChecked {
                what: "the cluster".into(),
                why: format!(
                    "{}; run with --skip-kube to audit Vault only",
                    cap(&e.to_string())
                ),
            });
            return;
        }
    };
    let default_ns = cluster.default_namespace().to_string();
    let mut namespaces = BTreeSet::new();
    let (mut uses_eso, mut uses_vso) = (false, false);
    for (spec, env) in &plan.specs {
        namespaces.insert(eso_namespace(spec, env, &default_ns));
        uses_eso |= !spec.eso.external_secrets.is_empty();
        if let Some(v) = &spec.vso {
            namespaces.insert(vso_namespace(v, env, &default_ns));
            uses_vso = true;
        }
    }
    let judge = Judge {
        named: &TargetIndex::new(named),
        owned,
        ignore,
    };
    for ns in &namespaces {
        scanned.namespaces.push(ns.clone());
        match cluster.external_secrets_in(ns).await {
            Ok(items) => {
                scanned.external_secrets += items.len();
                for item in items {
                    match item {
                        Ok(es) => judge.external_secret(&es, found, scanned),
                        Err(u) => found.push(unreadable("ExternalSecret", &u.object, &u.why)),
                    }
                }
            }
            Err(e) => found.push(list_failed("ExternalSecrets", ns, &e, uses_eso)),
        }
        match cluster.vault_static_secrets_in(ns).await {
            Ok(items) => {
                scanned.vault_static_secrets += items.len();
                for item in items {
                    match item {
                        Ok(v) => judge.vault_static_secret(&v, found, scanned),
                        Err(u) => found.push(unreadable("VaultStaticSecret", &u.object, &u.why)),
                    }
                }
            }
            Err(e) => found.push(list_failed("VaultStaticSecrets", ns, &e, uses_vso)),
        }
    }
}

/// A list that could not be made: "not checked", or only a note when the kind is not served and
/// no spec of the environment uses it.
fn list_failed(what: &str, ns: &str, e: &KubeError, used: bool) -> Finding {
    let why = cap(&e.to_string()).into_owned();
    match e {
        KubeError::NotServed { .. } if !used => Finding::Note {
            text: format!("{what} in `{ns}`: not served by the cluster ({why})"),
        },
        _ => Finding::NotChecked {
            what: format!("{what} in `{}`", cap(ns)),
            why,
        },
    }
}

fn problem_words(p: &FieldProblem) -> String {
    match p {
        FieldProblem::Missing => "missing".into(),
        FieldProblem::Empty => "empty".into(),
        FieldProblem::NotString { found } => format!("not a string ({found})"),
    }
}

fn unreadable(kind: &str, object: &str, why: &str) -> Finding {
    Finding::NotChecked {
        what: format!("{kind} `{object}`"),
        why: format!("its shape cannot be read: {why}"),
    }
}

/// What judging a key needs: the named targets, the owned folders and what `--ignore` leaves
/// out.
struct Judge<'a> {
    named: &'a TargetIndex<'a>,
    owned: &'a [(String, String, String)],
    ignore: &'a Ignore,
}

impl Judge<'_> {
    /// The Vault path (`mount`, path below it) an ESO key (`ask/x/Y` below the mount, or
    /// `secret/ask/x/Y`) reads, when it is under a folder a spec owns.
    fn key_under_folders<'k>(&self, key: &'k str) -> Option<(&str, &'k str)> {
        let key = key.trim_start_matches('/');
        self.owned.iter().find_map(|(mount, folder, _)| {
            let under = |k: &str| {
                k.strip_prefix(folder.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            };
            if under(key) {
                return Some((mount.as_str(), key));
            }
            key.strip_prefix(mount.as_str())
                .and_then(|k| k.strip_prefix('/'))
                .filter(|k| under(k))
                .map(|k| (mount.as_str(), k))
        })
    }

    fn external_secret(
        &self,
        es: &ExternalSecretInfo,
        found: &mut Vec<Finding>,
        scanned: &mut Scanned,
    ) {
        // Another application's object in a shared namespace: not looked at.
        if self
            .ignore
            .object("ExternalSecret", &es.namespace, &es.name)
        {
            scanned.ignored.objects += 1;
            return;
        }
        let object = format!("ExternalSecret `{}/{}`", cap(&es.namespace), cap(&es.name));
        // Its findings are held until it is known not to read another application's path.
        let mut mine = Vec::new();
        for b in &es.bad_fields {
            mine.push(Finding::NotChecked {
                what: object.clone(),
                why: format!("field `{}` {}", cap(&b.field), cap(&b.problem)),
            });
        }
        let mut keys: Vec<&str> = es.data.iter().map(|r| r.key.as_str()).collect();
        for d in &es.data_from {
            match d {
                DataFrom::Extract { reference, .. } => keys.push(&reference.key),
                DataFrom::Find => mine.push(Finding::NotChecked {
                    what: object.clone(),
                    why: "`dataFrom.find`: ESO chooses the paths it reads, audit cannot tell which"
                        .into(),
                }),
                DataFrom::SourceRef => mine.push(Finding::NotChecked {
                    what: object.clone(),
                    why: "`dataFrom.sourceRef`: a generator or another store, audit cannot tell what it reads".into(),
                }),
                DataFrom::Empty => mine.push(Finding::NotChecked {
                    what: object.clone(),
                    why: "a `dataFrom` entry with neither `extract`, `find` nor `sourceRef`".into(),
                }),
            }
        }
        for key in keys {
            let Some((mount, path)) = self.key_under_folders(key) else {
                continue;
            };
            // A reader of another application's path is that application's object.
            if self.ignore.path(mount, path) {
                scanned.ignored.objects += 1;
                return;
            }
            if self.named.of_key(key).is_none() {
                mine.push(Finding::OrphanConsumer {
                    object_kind: "ExternalSecret",
                    namespace: cap(&es.namespace).into_owned(),
                    name: cap(&es.name).into_owned(),
                    reads: cap(key).into_owned(),
                });
            }
        }
        found.extend(mine);
    }

    fn vault_static_secret(
        &self,
        v: &VaultStaticSecretInfo,
        found: &mut Vec<Finding>,
        scanned: &mut Scanned,
    ) {
        if self
            .ignore
            .object("VaultStaticSecret", &v.namespace, &v.name)
        {
            scanned.ignored.objects += 1;
            return;
        }
        let bad: Vec<_> = v
            .bad
            .iter()
            .filter(|b| matches!(b.field, "spec.mount" | "spec.path"))
            .collect();
        if !bad.is_empty() {
            for b in bad {
                found.push(Finding::NotChecked {
                    what: format!("VaultStaticSecret `{}/{}`", cap(&v.namespace), cap(&v.name)),
                    why: format!("field `{}` is {}", b.field, problem_words(&b.problem)),
                });
            }
            return;
        }
        let (mount, path) = (v.mount.trim_matches('/'), v.path.trim_matches('/'));
        let under = self.owned.iter().any(|(m, folder, _)| {
            m == mount
                && path
                    .strip_prefix(folder.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        if under && self.ignore.path(mount, path) {
            scanned.ignored.objects += 1;
            return;
        }
        if under && target_of_vss(self.named, v).is_none() {
            found.push(Finding::OrphanConsumer {
                object_kind: "VaultStaticSecret",
                namespace: cap(&v.namespace).into_owned(),
                name: cap(&v.name).into_owned(),
                reads: cap(&format!("{mount}/{path}")).into_owned(),
            });
        }
    }
}
