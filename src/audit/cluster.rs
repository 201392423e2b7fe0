//! `audit`'s cluster side: every ExternalSecret and VaultStaticSecret in the specs' namespaces,
//! and those reading a path under the specs' folders that no spec names. Keys are matched to
//! spec paths by `verify`'s rules ([`TargetIndex::of_key`], [`target_of_vss`]), not a copy of them.
//! An object, or a field of one, that cannot be read is "not checked", never fine.

use std::collections::BTreeSet;

use super::findings::Finding;
use super::{Ignore, KubeTarget, Scanned};
use crate::base::text::cap;
use crate::kube::{Cluster, DataFrom, ExternalSecretInfo, KubeError, VaultStaticSecretInfo};
use crate::spec::{EnvPlan, Target, TargetIndex};
use crate::verify::store::eso_namespace;
use crate::verify::vso::target_of_vss;
use crate::verify::vso::vso_namespace;

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
    let cluster = match Cluster::connect(kube.kubeconfig.as_deref(), context.as_deref()).await {
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
                why: format!("field `{}` {}", cap(&b.field), b.problem),
            });
        }
        let mut keys: Vec<&str> = es.data.iter().map(|r| &*r.key).collect();
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
            .filter(|b| matches!(b.field.as_str(), "spec.mount" | "spec.path"))
            .collect();
        if !bad.is_empty() {
            for b in bad {
                found.push(Finding::NotChecked {
                    what: format!("VaultStaticSecret `{}/{}`", cap(&v.namespace), cap(&v.name)),
                    why: format!("field `{}` {}", b.field, b.problem),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::{BadField, FieldProblem, RemoteRef, Transformation};

    /// The spec names `secret/app/dev/S`; application `app` owns the folder `app/dev`.
    fn named() -> Vec<Target> {
        vec![crate::write::replace::tests::target(
            "app",
            "S",
            &["password"],
        )]
    }

    fn owned() -> Vec<(String, String, String)> {
        vec![("secret".into(), "app/dev".into(), "app".into())]
    }

    fn reference(key: &str) -> RemoteRef {
        RemoteRef {
            secret_key: "password".into(),
            key: key.into(),
            property: Some("password".into()),
            version: None,
            decoding: None,
            as_is: true,
        }
    }

    /// An ExternalSecret `ns/app` reading `keys` (`spec.data[].remoteRef.key`) and `data_from`.
    fn es(keys: &[&str], data_from: Vec<DataFrom>) -> ExternalSecretInfo {
        let mut es = crate::verify::eso::tests::es(Some(true), None);
        es.data = keys.iter().map(|k| reference(k)).collect();
        es.has_data_from = !data_from.is_empty();
        es.data_from = data_from;
        es
    }

    fn vss(mount: &str, path: &str) -> VaultStaticSecretInfo {
        VaultStaticSecretInfo {
            namespace: "ns".into(),
            name: "app".into(),
            generation: Some(1),
            last_generation: Some(1),
            ready: None,
            healthy: None,
            secret_synced: None,
            has_secret_mac: true,
            hmac: true,
            destination_type: String::new(),
            destination_create: true,
            mount: mount.into(),
            kv_type: "kv-v2".into(),
            path: path.into(),
            pinned_version: None,
            destination: "app".into(),
            transformation: Transformation::default(),
            vault_auth_ref: None,
            vault_namespace: None,
            bad: Vec::new(),
            rollout_restart_targets: Vec::new(),
            rollout_restart_bad: None,
        }
    }

    /// The findings' kinds (`orphan-consumer, not-checked`), and what `--ignore` (one pattern,
    /// or none when empty) counted.
    fn judged(
        ignore: &str,
        look: impl Fn(&Judge<'_>, &mut Vec<Finding>, &mut Scanned),
    ) -> (String, usize) {
        let (targets, owned) = (named(), owned());
        let named = TargetIndex::new(&targets);
        let patterns = Some(ignore.to_string()).filter(|p| !p.is_empty());
        let ignore = Ignore::new(patterns.into_iter().collect()).unwrap();
        let judge = Judge {
            named: &named,
            owned: &owned,
            ignore: &ignore,
        };
        let (mut found, mut scanned) = (Vec::new(), Scanned::default());
        look(&judge, &mut found, &mut scanned);
        let kinds: Vec<String> = found
            .iter()
            .map(|f| {
                serde_json::to_value(f).unwrap()["kind"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        (kinds.join(", "), scanned.ignored.objects)
    }

    fn extract(key: &str) -> DataFrom {
        DataFrom::Extract {
            reference: reference(key),
            rewritten: false,
        }
    }

    /// An ExternalSecret is an orphan when it reads, under a folder a spec owns, a path no spec
    /// names (below the mount or with it); what it reads elsewhere is not audit's; what cannot
    /// be told is "not checked"; `--ignore` leaves out the object, or every object reading a
    /// path it matches (with that object's other findings).
    #[test]
    fn an_external_secret_is_an_orphan_only_for_an_unnamed_path_under_the_folders() {
        let (find, source_ref, empty) = (DataFrom::Find, DataFrom::SourceRef, DataFrom::Empty);
        let legacy = "secret/app/dev/legacy/*";
        // (case, `spec.data` keys, `spec.dataFrom`, `--ignore`, findings, objects ignored)
        #[rustfmt::skip]
        let cases = [
            ("named",                  vec!["app/dev/S"],          vec![],                     "",                       "",                0),
            ("named with its mount",   vec!["secret/app/dev/S"],   vec![],                     "",                       "",                0),
            ("named, leading slash",   vec!["/app/dev/S"],         vec![],                     "",                       "",                0),
            ("unnamed",                vec!["app/dev/OLD"],        vec![],                     "",                       "orphan-consumer", 0),
            ("unnamed with its mount", vec!["secret/app/dev/OLD"], vec![],                     "",                       "orphan-consumer", 0),
            ("another folder",         vec!["other/dev/X"],        vec![],                     "",                       "",                0),
            ("a folder's look-alike",  vec!["app/devx/X"],         vec![],                     "",                       "",                0),
            ("the folder itself",      vec!["app/dev"],            vec![],                     "",                       "",                0),
            ("extract, unnamed",       vec![],                     vec![extract("app/dev/OLD")], "",                     "orphan-consumer", 0),
            ("find",                   vec![],                     vec![find.clone()],         "",                       "not-checked",     0),
            ("sourceRef",              vec![],                     vec![source_ref],           "",                       "not-checked",     0),
            ("an empty dataFrom",      vec![],                     vec![empty],                "",                       "not-checked",     0),
            ("ignored object",         vec!["app/dev/OLD"],        vec![],                     "ExternalSecret ns/*",    "",                1),
            ("another ignored",        vec!["app/dev/OLD"],        vec![],                     "ExternalSecret other/*", "orphan-consumer", 0),
            ("reads an ignored path",  vec!["app/dev/legacy/X"],   vec![find],                 legacy,                   "",                1),
        ];
        for (case, keys, data_from, ignore, want, ignored) in cases {
            let es = es(&keys, data_from);
            let got = judged(ignore, |j, found, scanned| {
                j.external_secret(&es, found, scanned)
            });
            assert_eq!(got, (want.to_string(), ignored), "{case}");
        }
    }

    #[test]
    fn a_bad_field_is_not_checked_and_an_orphan_names_what_it_reads() {
        let mut bad = es(&["secret/app/dev/OLD"], vec![]);
        bad.bad_fields = vec![BadField {
            field: "/spec/data/1/remoteRef/key".into(),
            problem: FieldProblem::NotA {
                want: "a string",
                found: None,
            },
        }];
        let (targets, owned, ignore) = (named(), owned(), Ignore::default());
        let named = TargetIndex::new(&targets);
        let judge = Judge {
            named: &named,
            owned: &owned,
            ignore: &ignore,
        };
        let mut found = Vec::new();
        judge.external_secret(&bad, &mut found, &mut Scanned::default());
        assert_eq!(
            found,
            [
                Finding::NotChecked {
                    what: "ExternalSecret `ns/app`".into(),
                    why: "field `/spec/data/1/remoteRef/key` is not a string".into(),
                },
                Finding::OrphanConsumer {
                    object_kind: "ExternalSecret",
                    namespace: "ns".into(),
                    name: "app".into(),
                    reads: "secret/app/dev/OLD".into(),
                },
            ]
        );
    }

    /// A VaultStaticSecret by its `spec.mount` and `spec.path` (slashes trimmed): an orphan only
    /// under a folder a spec owns, on that folder's mount; a `mount` or `path` that cannot be
    /// read is "not checked", other bad fields are not audit's.
    #[test]
    fn a_vault_static_secret_is_an_orphan_only_for_an_unnamed_path_under_the_folders() {
        let bad = |field: &'static str| {
            let mut v = vss("secret", "app/dev/OLD");
            v.bad = vec![BadField::new(field, FieldProblem::Missing)];
            v
        };
        let orphan = || vss("secret", "app/dev/OLD");
        // (case, the VaultStaticSecret, `--ignore`, findings, objects ignored)
        #[rustfmt::skip]
        let cases = [
            ("named",                 vss("secret", "app/dev/S"),      "",                         "",                0),
            ("named, slashes",        vss("/secret/", "/app/dev/S/"),  "",                         "",                0),
            ("unnamed",               orphan(),                        "",                         "orphan-consumer", 0),
            ("another mount",         vss("kv", "app/dev/OLD"),        "",                         "",                0),
            ("a folder's look-alike", vss("secret", "app/devx/OLD"),   "",                         "",                0),
            ("spec.path unreadable",  bad("spec.path"),                "",                         "not-checked",     0),
            ("another bad field",     bad("spec.destination.name"),    "",                         "orphan-consumer", 0),
            ("ignored object",        orphan(),                        "VaultStaticSecret ns/app", "",                1),
            ("ignored path",          orphan(),                        "secret/app/dev/OLD",       "",                1),
        ];
        for (case, v, ignore, want, ignored) in cases {
            let got = judged(ignore, |j, found, scanned| {
                j.vault_static_secret(&v, found, scanned)
            });
            assert_eq!(got, (want.to_string(), ignored), "{case}");
        }
    }

    /// A kind the cluster does not serve is only a note when no spec of the environment uses
    /// it; otherwise, and for any other error, the namespace is "not checked".
    #[test]
    fn a_kind_not_served_is_a_note_only_when_no_spec_uses_it() {
        let not_served = || KubeError::NotServed {
            kind: "VaultStaticSecret",
            group: crate::kube::VSO_GROUP,
            versions: vec!["v1beta1"],
        };
        let forbidden = KubeError::Api {
            verb: "list",
            resource: "externalsecrets".into(),
            object: "ns".into(),
            code: 403,
            reason: "Forbidden".into(),
            message: "denied".into(),
        };
        for (case, e, used, note) in [
            ("not served, unused", not_served(), false, true),
            ("not served, used", not_served(), true, false),
            ("denied, unused", forbidden, false, false),
        ] {
            let f = list_failed("VaultStaticSecrets", "ns", &e, used);
            assert_eq!(matches!(f, Finding::Note { .. }), note, "{case}: {f:?}");
            assert_eq!(
                matches!(f, Finding::NotChecked { .. }),
                !note,
                "{case}: {f:?}"
            );
        }
    }
}
