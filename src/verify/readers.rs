//! Who reads a value that `set --force` or `rotate` is about to replace: the ExternalSecrets
//! and VaultStaticSecrets the specs list that map the secret's path, found with `verify`'s own
//! matchers ([`TargetIndex::of_key`], [`super::vso::target_of_vss`]). Replacing the Fernet
//! key or a salt silently breaks what reads it; the person sees the readers before the write.
//!
//! The cluster only informs: when it cannot tell (no kubeconfig, unreachable, forbidden, a CRD
//! missing), the readers are "not checked" and the write still goes ahead. Wording and
//! severity live in [`ReaderFinding`].

use std::sync::Arc;

use serde::Serialize;

use super::findings::Coded;
use super::vso;
use crate::base::codes::Code;
use crate::base::text;
use crate::kube::{Cluster, DataFrom, ExternalSecretInfo, VaultStaticSecretInfo};
use crate::order::findings::Severity;
use crate::spec::{Target, TargetIndex};

/// One object that reads (or may read) the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reader {
    /// `ExternalSecret` or `VaultStaticSecret`.
    pub kind: &'static str,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The Vault field it reads; `None`: every field.
    pub field: Option<String>,
    /// The key of the target Secret it writes the value to (an ExternalSecret's `secretKey`).
    pub secret_key: Option<String>,
    /// The Secret it writes.
    pub secret: Option<String>,
    /// How it reads: `remoteRef`, `dataFrom.extract`, `dataFrom.find`, `spec.path`.
    pub via: &'static str,
    /// The KV version it is pinned to (`remoteRef.version`, `spec.version`): it keeps serving
    /// that version, never the new one.
    pub pinned_version: Option<String>,
    /// False when vault-seed cannot tell whether it reads this path (`dataFrom.find`).
    pub certain: bool,
}

/// What was found of the secret's readers: `-o json`'s `readers`, `readers_checked` and
/// `readers_note` of `set` and `rotate`.
#[derive(Debug, Clone, Serialize)]
pub struct Readers {
    /// The objects that read the secret's path (those found before a failure too).
    pub readers: Vec<Reader>,
    /// Every ExternalSecret and VaultStaticSecret the specs list was read.
    pub readers_checked: bool,
    /// Why they were not checked; `None` when they were.
    pub readers_note: Option<String>,
    /// The workloads that read the readers' target Secrets through env or a `subPath`: they
    /// run with the old value until restarted.
    pub restarts: Vec<super::consumers::Restart>,
    /// Why those workloads were not looked for, when readers were found but they were not.
    pub restarts_note: Option<String>,
    /// Every sentence said on stderr about the readers, their workloads and the next step, in
    /// the order said, each with its code (`docs/errors.md`, "set and rotate").
    pub findings: Vec<Coded>,
    /// How many ExternalSecrets and VaultStaticSecrets the specs list.
    #[serde(skip)]
    listed: (usize, usize),
    /// The readers' target Secrets that exist (namespace, name): for a placeholder filled in,
    /// where the placeholder already reached the cluster.
    #[serde(skip)]
    pub delivered: Vec<(String, String)>,
}

impl Default for Readers {
    /// No real value is replaced (a first write, a placeholder filled, an unchanged value): the
    /// readers are not asked about.
    fn default() -> Readers {
        Readers::not_checked("no real value is replaced".into())
    }
}

impl Readers {
    /// Not checked, for `reason`.
    pub fn not_checked(reason: String) -> Readers {
        Readers {
            readers: Vec::new(),
            readers_checked: false,
            readers_note: Some(reason),
            restarts: Vec::new(),
            restarts_note: None,
            findings: Vec::new(),
            listed: (0, 0),
            delivered: Vec::new(),
        }
    }

    /// The readers pinned to KV version `version` (`remoteRef.version`, `spec.version`), as
    /// `KIND \`NAMESPACE/NAME\`` cleaned for a terminal.
    pub fn pinned_to(&self, version: u64) -> Vec<String> {
        let version = version.to_string();
        self.readers
            .iter()
            .filter(|r| r.pinned_version.as_deref() == Some(version.as_str()))
            .map(|r| {
                format!(
                    "{} `{}/{}`",
                    r.kind,
                    text::quoted(&r.namespace),
                    text::quoted(&r.name)
                )
            })
            .collect()
    }

    /// The target Secrets the readers write, as (namespace, name).
    pub fn secrets(&self) -> std::collections::BTreeSet<(String, String)> {
        self.readers
            .iter()
            .filter_map(|r| Some((r.namespace.clone(), r.secret.clone()?)))
            .collect()
    }

    /// What to say once the value is written: each workload that will need a restart, or why
    /// they were not looked for.
    pub fn after_write(&self) -> Vec<RestartFinding<'_>> {
        let mut found: Vec<RestartFinding<'_>> = self
            .restarts
            .iter()
            .map(|r| match (&r.how, &r.restarted_by) {
                (None, _) => RestartFinding::Unreadable(r),
                (Some(_), Some(by)) => RestartFinding::RestartedBy(r, by),
                (Some(_), None) => RestartFinding::Needs(r),
            })
            .collect();
        if let Some(why) = &self.restarts_note {
            found.push(RestartFinding::NotChecked(why));
        }
        found
    }

    /// What to say once a placeholder of environment `env` is replaced: when it had reached
    /// the cluster, which readers wrote it to which Secret, the workloads that will keep it
    /// until restarted, and the command that brings the new value to them all; when the
    /// cluster could not tell, that command as a maybe. Nothing when it had not reached it.
    pub fn next_step<'a>(&'a self, env: &'a str) -> Vec<NextStep<'a>> {
        if !self.readers_checked {
            return match &self.readers_note {
                Some(why) => vec![NextStep::NotChecked { env, why }],
                None => Vec::new(),
            };
        }
        let reached: Vec<&Reader> = self
            .readers
            .iter()
            .filter(|r| {
                r.secret.as_ref().is_some_and(|s| {
                    self.delivered
                        .iter()
                        .any(|(ns, d)| *ns == r.namespace && d == s)
                })
            })
            .collect();
        if reached.is_empty() {
            return Vec::new();
        }
        let mut out: Vec<NextStep<'a>> = reached.into_iter().map(NextStep::Reached).collect();
        let restarts = self.after_write();
        let restart = restarts
            .iter()
            .any(|r| !matches!(r, RestartFinding::RestartedBy(..)));
        out.extend(restarts.into_iter().map(NextStep::Restart));
        out.push(NextStep::Command { env, restart });
        out
    }

    /// What to say before the write of `path` in environment `env`, in order.
    pub fn findings<'a>(&'a self, path: &'a str, env: &'a str) -> Vec<ReaderFinding<'a>> {
        let mut found = Vec::new();
        for r in &self.readers {
            found.push(if r.certain {
                ReaderFinding::Reads(r)
            } else {
                ReaderFinding::MayRead(r)
            });
            if r.pinned_version.is_some() {
                found.push(ReaderFinding::Pinned(r));
            }
        }
        // A pinned reader never takes the new value: only the others are said to.
        let pinned = self
            .readers
            .iter()
            .filter(|r| r.pinned_version.is_some())
            .count();
        if pinned < self.readers.len() {
            found.push(ReaderFinding::Refresh {
                env,
                others: pinned > 0,
            });
        }
        match &self.readers_note {
            Some(reason) => found.push(ReaderFinding::NotChecked { reason }),
            None if self.readers.is_empty() => found.push(ReaderFinding::NoReader {
                path,
                external_secrets: self.listed.0,
                static_secrets: self.listed.1,
            }),
            None => {}
        }
        found
    }
}

/// A sentence said before the write.
#[derive(Debug)]
pub enum ReaderFinding<'a> {
    /// It reads the secret.
    Reads(&'a Reader),
    /// It may read the secret; vault-seed cannot tell.
    MayRead(&'a Reader),
    /// It is pinned to a version: it keeps serving the old value.
    Pinned(&'a Reader),
    /// The readers that are not pinned take the new value at their next sync.
    Refresh {
        /// The environment.
        env: &'a str,
        /// Some readers are pinned: the sentence is about the others.
        others: bool,
    },
    /// None of the objects the specs list maps the path.
    NoReader {
        /// The secret's full path.
        path: &'a str,
        /// How many ExternalSecrets the specs list.
        external_secrets: usize,
        /// How many VaultStaticSecrets.
        static_secrets: usize,
    },
    /// The cluster could not tell.
    NotChecked {
        /// Why.
        reason: &'a str,
    },
}

crate::base::codes::codes!(
    ReaderFinding<'_>,
    ReaderFinding {
        Reads => "read-by",
        MayRead => "may-read",
        Pinned => "pinned-reader",
        Refresh => "refresh-at-next-sync",
        NoReader => "no-reader",
        NotChecked => "readers-not-checked",
    }
);

/// A sentence of `set` or `rotate` as `-o json`'s `findings[]` shows it.
fn coded(code: &'static str, severity: Severity, message: String) -> Coded {
    Coded {
        code,
        message,
        severity: severity.name(),
    }
}

impl ReaderFinding<'_> {
    /// With its code, for the JSON.
    pub fn coded(&self) -> Coded {
        coded(self.code(), self.severity(), self.message())
    }

    /// How it counts: a warning when the new value may not reach a reader, or nobody knows.
    pub fn severity(&self) -> Severity {
        match self {
            ReaderFinding::Reads(_) | ReaderFinding::Refresh { .. } => Severity::Note,
            ReaderFinding::NoReader { .. } => Severity::Note,
            ReaderFinding::MayRead(_)
            | ReaderFinding::Pinned(_)
            | ReaderFinding::NotChecked { .. } => Severity::Warning,
        }
    }

    /// The sentence, safe for a terminal (cluster text quoted).
    pub fn message(&self) -> String {
        let q = |s: &str| text::quoted(s);
        let object = |r: &Reader| format!("{} `{}/{}`", r.kind, q(&r.namespace), q(&r.name));
        match self {
            ReaderFinding::Reads(r) => {
                let from = match &r.field {
                    Some(f) => format!("field `{}`", q(f)),
                    None if r.secret_key.is_some() => "every field, as JSON,".to_string(),
                    None => "every field".to_string(),
                };
                let to = match (&r.secret_key, &r.secret) {
                    (Some(k), Some(s)) => format!("key `{}` of Secret `{}`", q(k), q(s)),
                    (Some(k), None) => format!("key `{}`", q(k)),
                    (None, Some(s)) => format!("Secret `{}`", q(s)),
                    (None, None) => "its Secret".to_string(),
                };
                format!("read by {} ({from} -> {to}, {})", object(r), r.via)
            }
            ReaderFinding::MayRead(r) => format!(
                "{} may read it: its `{}` chooses paths by name or tags, which vault-seed does not judge",
                object(r),
                r.via
            ),
            ReaderFinding::Pinned(r) => format!(
                "{} is pinned to version {} (`{}`): it will keep serving the old value, not the new one",
                object(r),
                q(r.pinned_version.as_deref().unwrap_or_default()),
                if r.kind == VSS { "spec.version" } else { "remoteRef.version" }
            ),
            ReaderFinding::Refresh { env, others: false } => format!(
                "they take the new value at their next sync; `vault-seed verify {env} --force-sync` asks now"
            ),
            ReaderFinding::Refresh { env, others: true } => format!(
                "those not pinned take the new value at their next sync; `vault-seed verify {env} --force-sync` asks now"
            ),
            ReaderFinding::NoReader {
                path,
                external_secrets,
                static_secrets,
            } => format!(
                "no reader: none of the {external_secrets} ExternalSecret(s) and {static_secrets} VaultStaticSecret(s) the specs list maps `{path}`"
            ),
            ReaderFinding::NotChecked { reason } => {
                format!("readers not checked: {}", text::for_terminal(reason))
            }
        }
    }
}

const ES: &str = "ExternalSecret";
const VSS: &str = "VaultStaticSecret";

/// The readers of `fields` of `t` among the ExternalSecrets and VaultStaticSecrets `wanted`
/// (`(namespace, name)` each, as [`super::cluster::wanted`] resolves them). A failure to read
/// one stops the look: the readers found so far are kept, and the whole is not checked.
pub async fn find(
    cluster: &Cluster,
    external_secrets: &[(String, String)],
    static_secrets: &[(String, String)],
    t: &Target,
    fields: &[String],
) -> Readers {
    let mut found = Readers {
        readers: Vec::new(),
        readers_checked: true,
        readers_note: None,
        restarts: Vec::new(),
        restarts_note: None,
        findings: Vec::new(),
        listed: (external_secrets.len(), static_secrets.len()),
        delivered: Vec::new(),
    };
    let failed = |mut found: Readers, e: crate::kube::KubeError| {
        found.readers_checked = false;
        found.readers_note = Some(text::cap(&e.to_string()).into_owned());
        found
    };
    // The one target, matched by the rule every part matches keys by.
    let only = TargetIndex::new(std::slice::from_ref(t));
    for (ns, name) in external_secrets {
        match cluster.external_secret(ns, name).await {
            Ok(Some(es)) => found.readers.extend(eso_readers(&es, &only, fields)),
            Ok(None) => {}
            Err(e) => return failed(found, e),
        }
    }
    for (ns, name) in static_secrets {
        match cluster.vault_static_secret(ns, name).await {
            Ok(Some(v)) => found.readers.extend(vso_reader(&v, &only)),
            Ok(None) => {}
            Err(e) => return failed(found, e),
        }
    }
    found
}

/// What of `fields` of `t` an ExternalSecret reads: each `data` entry whose remoteRef maps the
/// path (a property among `fields`, or the whole secret), each `dataFrom.extract` of the path,
/// and each `dataFrom.find`, which may.
fn eso_readers(es: &ExternalSecretInfo, only: &TargetIndex<'_>, fields: &[String]) -> Vec<Reader> {
    let reads = |property: &Option<Arc<str>>| {
        property
            .as_deref()
            .is_none_or(|p| fields.iter().any(|f| f == p))
    };
    let reader = |field: Option<&str>, secret_key, via, version: Option<&str>, certain| Reader {
        kind: ES,
        namespace: es.namespace.clone(),
        name: es.name.clone(),
        field: field.map(|f| text::cap(f).into_owned()),
        secret_key,
        secret: Some(text::cap(&es.target_secret).into_owned()),
        via,
        pinned_version: version.map(|v| text::cap(v).into_owned()),
        certain,
    };
    let mut found = Vec::new();
    for r in es.data.iter() {
        if only.of_key(&r.key).is_some() && reads(&r.property) {
            let key = Some(text::cap(&r.secret_key).into_owned());
            found.push(reader(
                r.property.as_deref(),
                key,
                "remoteRef",
                r.version.as_deref(),
                true,
            ));
        }
    }
    for d in &es.data_from {
        match d {
            DataFrom::Extract { reference: r, .. }
                if only.of_key(&r.key).is_some() && reads(&r.property) =>
            {
                found.push(reader(
                    r.property.as_deref(),
                    None,
                    "dataFrom.extract",
                    r.version.as_deref(),
                    true,
                ));
            }
            DataFrom::Find => found.push(reader(None, None, "dataFrom.find", None, false)),
            _ => {}
        }
    }
    found
}

/// A VaultStaticSecret reads every field of the one path it names.
fn vso_reader(v: &VaultStaticSecretInfo, only: &TargetIndex<'_>) -> Option<Reader> {
    vso::target_of_vss(only, v)?;
    Some(Reader {
        kind: VSS,
        namespace: v.namespace.clone(),
        name: v.name.clone(),
        field: None,
        secret_key: None,
        secret: Some(text::cap(&v.destination).into_owned()).filter(|d| !d.is_empty()),
        via: "spec.path",
        pinned_version: v.pinned_version.map(|p| p.to_string()),
        certain: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::RemoteRef;

    fn remote(key: &str, property: Option<&str>, version: Option<&str>) -> RemoteRef {
        RemoteRef {
            secret_key: "KEY".into(),
            key: key.into(),
            property: property.map(Arc::from),
            version: version.map(Box::from),
            decoding: None,
            as_is: true,
        }
    }

    /// Each reader is named (a pin and a `find` are warnings); none found among what the specs
    /// list says so; not checked says why, never "no reader".
    #[test]
    fn what_is_said_before_the_write() {
        let t = crate::write::replace::tests::target("app", "SALT", &["password"]);
        let mut es = crate::verify::eso::tests::es(Some(true), None);
        es.data = vec![remote("app/dev/SALT", Some("password"), Some("2"))].into();
        es.data_from = vec![DataFrom::Find];
        let readers = Readers {
            readers: eso_readers(
                &es,
                &TargetIndex::new(std::slice::from_ref(&t)),
                &["password".to_string()],
            ),
            readers_checked: true,
            readers_note: None,
            restarts: Vec::new(),
            restarts_note: None,
            findings: Vec::new(),
            listed: (1, 0),
            delivered: Vec::new(),
        };
        let said = |r: &Readers| -> Vec<(Severity, String)> {
            r.findings("secret/app/dev/SALT", "dev")
                .iter()
                .map(|f| (f.severity(), f.message()))
                .collect()
        };
        let lines = said(&readers);
        let severities: Vec<Severity> = lines.iter().map(|(s, _)| *s).collect();
        assert_eq!(
            severities,
            [
                Severity::Note,
                Severity::Warning,
                Severity::Warning,
                Severity::Note
            ],
            "{lines:?}"
        );
        assert!(lines[1]
            .1
            .contains("pinned to version 2 (`remoteRef.version`)"));
        assert!(lines[2]
            .1
            .starts_with("ExternalSecret `ns/app` may read it"));
        let none = Readers {
            readers: Vec::new(),
            ..readers.clone()
        };
        assert_eq!(
            said(&none),
            [(Severity::Note, "no reader: none of the 1 ExternalSecret(s) and 0 VaultStaticSecret(s) the specs list maps `secret/app/dev/SALT`".to_string())]
        );
        assert_eq!(
            said(&Readers::not_checked("forbidden".into())),
            [(
                Severity::Warning,
                "readers not checked: forbidden".to_string()
            )]
        );
    }

    /// After a placeholder is filled in: nothing when no reader's Secret exists; when one
    /// does, the reader, then the command (only `--force-sync` with no workload to restart);
    /// when the cluster could not tell, the command as a maybe.
    #[test]
    fn the_next_step_after_a_placeholder() {
        let t = crate::write::replace::tests::target("app", "PAT", &["value"]);
        let mut es = crate::verify::eso::tests::es(Some(true), None);
        es.data = vec![remote("app/dev/PAT", Some("value"), None)].into();
        let only = [t];
        let index = TargetIndex::new(&only);
        let mut found = Readers {
            readers: eso_readers(&es, &index, &["value".to_string()]),
            readers_checked: true,
            readers_note: None,
            restarts: Vec::new(),
            restarts_note: None,
            findings: Vec::new(),
            listed: (1, 0),
            delivered: Vec::new(),
        };
        assert!(found.next_step("dev").is_empty());
        found.delivered = found.secrets().into_iter().collect();
        let codes: Vec<&str> = found.next_step("dev").iter().map(|n| n.code()).collect();
        assert_eq!(codes, ["placeholder-reached-cluster", "next-step"]);
        assert!(found.next_step("dev")[1]
            .message()
            .starts_with("next: `vault-seed verify dev --force-sync --wait 2m`"));
        let unknown = Readers::not_checked("no kubeconfig".into());
        let said = unknown.next_step("dev");
        assert_eq!(said.len(), 1);
        assert!(said[0].message().contains("(no kubeconfig); if it did, `vault-seed verify dev --only kube,consumers --force-sync --restart --wait 5m`"));
    }

    /// Every sentence `set` and `rotate` say has a code, listed in `docs/errors.md`; the three
    /// enums share one JSON list, so their codes must not collide.
    #[test]
    fn every_sentence_has_a_listed_code() {
        let mut all = ReaderFinding::codes();
        all.extend(RestartFinding::codes());
        all.extend(NextStep::codes());
        let own = all.clone();
        crate::base::codes::assert_documented("set and rotate", &own, &all);
    }

    #[test]
    fn an_external_secret_reads_the_fields_replaced_of_its_path_only() {
        let t = crate::write::replace::tests::target("app", "SALT", &["password", "note"]);
        let mut es = crate::verify::eso::tests::es(Some(true), None);
        es.data = vec![
            remote("app/dev/SALT", Some("password"), None),
            remote("secret/app/dev/SALT", Some("note"), Some("3")),
            remote("app/dev/OTHER", Some("password"), None),
            remote("app/dev/SALT", None, None),
        ]
        .into();
        let fields = ["password".to_string()];
        let found = eso_readers(&es, &TargetIndex::new(std::slice::from_ref(&t)), &fields);
        let shown: Vec<_> = found
            .iter()
            .map(|r| (r.field.as_deref(), r.pinned_version.as_deref()))
            .collect();
        // The note field is not replaced; OTHER is another path; no property reads it all.
        assert_eq!(shown, [(Some("password"), None), (None, None)]);
    }
}

/// What `set` and `rotate` say after the write about the workloads reading the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestartFinding<'a> {
    /// It reads the Secret through env or a `subPath`, and nothing restarts it.
    Needs(&'a super::consumers::Restart),
    /// It does, and this restarts it.
    RestartedBy(&'a super::consumers::Restart, &'a str),
    /// Its shape could not be read: it may read the Secret.
    Unreadable(&'a super::consumers::Restart),
    /// The workloads were not looked for, and why.
    NotChecked(&'a str),
}

crate::base::codes::codes!(
    RestartFinding<'_>,
    RestartFinding {
        Needs => "restart-needed",
        RestartedBy => "restarted-by-controller",
        Unreadable => "workload-unreadable",
        NotChecked => "restarts-not-checked",
    }
);

impl RestartFinding<'_> {
    /// With its code, for the JSON.
    pub fn coded(&self) -> Coded {
        coded(self.code(), self.severity(), self.message())
    }

    /// A warning when a workload will keep the old value until someone restarts it, or when
    /// that is not known; else a note.
    pub fn severity(&self) -> Severity {
        match self {
            RestartFinding::RestartedBy(..) => Severity::Note,
            _ => Severity::Warning,
        }
    }

    /// The sentence, with the command that restarts the workload.
    pub fn message(&self) -> String {
        let who = |r: &super::consumers::Restart| {
            format!("{} `{}/{}`", r.kind, r.namespace, text::quoted(&r.name))
        };
        match self {
            RestartFinding::Needs(r) => format!(
                "{} reads Secret `{}` through {}: it keeps the old value until it restarts, once the Secret is refreshed{}: `{}`",
                who(r),
                r.secret,
                r.how.map_or("env", |h| h.as_str()),
                r.restarter_problem
                    .as_ref()
                    .map(|p| format!(" ({p})"))
                    .unwrap_or_default(),
                r.command
            ),
            RestartFinding::RestartedBy(r, by) => format!(
                "{} reads Secret `{}` through {}: {by} restarts it when the Secret is refreshed",
                who(r),
                r.secret,
                r.how.map_or("env", |h| h.as_str()),
            ),
            RestartFinding::Unreadable(r) => format!(
                "{} could not be read, so it may read Secret `{}`: if it does through env, restart it once the Secret is refreshed: `{}`",
                who(r),
                r.secret,
                r.command
            ),
            RestartFinding::NotChecked(why) => {
                format!("the workloads reading the value were not looked for: {why}")
            }
        }
    }
}

/// What `set` says after it filled in a placeholder that had reached the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextStep<'a> {
    /// This reader wrote the placeholder to its Secret, which exists.
    Reached(&'a Reader),
    /// A workload reading that Secret, and whether it needs a restart.
    Restart(RestartFinding<'a>),
    /// The command that brings the new value to the readers (and restarts the workloads).
    Command {
        /// The environment.
        env: &'a str,
        /// Some workload needs a restart.
        restart: bool,
    },
    /// Whether the placeholder reached the cluster is not known.
    NotChecked {
        /// The environment.
        env: &'a str,
        /// Why.
        why: &'a str,
    },
}

crate::base::codes::codes!(
    NextStep<'_>,
    NextStep {
        Reached => "placeholder-reached-cluster",
        Command => "next-step",
        NotChecked => "placeholder-delivery-not-checked",
    }
    nested { Restart => RestartFinding<'_> }
);

impl NextStep<'_> {
    /// With its code, for the JSON.
    pub fn coded(&self) -> Coded {
        coded(self.code(), self.severity(), self.message())
    }

    /// A warning while the placeholder runs in the cluster; else a note.
    pub fn severity(&self) -> Severity {
        match self {
            NextStep::Reached(_) => Severity::Warning,
            NextStep::Restart(r) => r.severity(),
            NextStep::Command { .. } | NextStep::NotChecked { .. } => Severity::Note,
        }
    }

    /// The sentence, cluster text quoted.
    pub fn message(&self) -> String {
        let all = |env: &str| {
            format!(
                "`vault-seed verify {env} --only kube,consumers --force-sync --restart --wait 5m`"
            )
        };
        match self {
            NextStep::Reached(r) => format!(
                "the placeholder already reached the cluster: {} `{}/{}` wrote it to Secret `{}`, which keeps it until {} syncs again",
                r.kind,
                text::quoted(&r.namespace),
                text::quoted(&r.name),
                text::quoted(r.secret.as_deref().unwrap_or_default()),
                if r.kind == VSS { "VSO" } else { "ESO" },
            ),
            NextStep::Restart(r) => r.message(),
            NextStep::Command { env, restart: true } => format!(
                "next: {} makes ESO and VSO read the new value now and restarts each workload still running with the placeholder (by hand: `vault-seed verify {env} --force-sync`, then the restarts above)",
                all(env)
            ),
            NextStep::Command { env, restart: false } => format!(
                "next: `vault-seed verify {env} --force-sync --wait 2m` makes ESO and VSO read the new value now"
            ),
            NextStep::NotChecked { env, why } => format!(
                "whether the placeholder reached the cluster was not checked ({}); if it did, {} brings the new value to its readers",
                text::for_terminal(why),
                all(env)
            ),
        }
    }
}
