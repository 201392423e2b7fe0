//! The ESO check of `verify`'s cluster part: are the spec's ExternalSecrets Ready, synced after seeding,
//! with every key in their target Secret, reading only paths the spec knows? When one is not
//! Ready, say why from what vault-seed sees itself and from its Warning events, since ESO's
//! condition message is generic ("could not get secret data from provider").

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;
use time::OffsetDateTime;

use super::delivery::{self, Compare, Held};
use super::facts::{Facts, PathFacts};
use super::findings::{
    any_problem, before_in_whole_seconds, colon, joined, rfc3339, Finding, Severity, Shape, Verdict,
};
use super::notes::RunNote;
use super::store::{self, StoreFinding, StoreUser};
use super::stuck::Stuck;
use crate::generate::Generator;
use crate::kube::{
    Cluster, DataFrom, ExternalSecretInfo, KubeError, ReadyCondition, RemoteRef, StoreKind,
};
use crate::seed::Status;
use crate::spec::{Field, Provided, Target};

/// One ExternalSecret's check.
#[derive(Debug, Clone, Serialize)]
pub struct EsCheck {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Whether everything about it is right.
    pub ok: bool,
    /// The API version that answered (`external-secrets.io/v1`), when found.
    pub api_version: Option<String>,
    /// The Ready condition's status.
    pub ready: Option<bool>,
    /// Its reason (`SecretSynced`, `SecretSyncedError`).
    pub reason: Option<String>,
    /// Its message.
    pub message: Option<String>,
    /// Last successful sync.
    #[serde(with = "time::serde::rfc3339::option")]
    pub refresh_time: Option<OffsetDateTime>,
    /// The target Secret.
    pub target_secret: Option<String>,
    /// Whether its target Secret was read (`false` with `--skip-target-secrets`: whether it
    /// exists with every key, none empty, is not proven).
    pub target_checked: bool,
    /// Whether every key it maps holds the value of the Vault version its mapping selects,
    /// compared by digest: `true` proves delivery whatever the clocks say; `false` when a key
    /// holds another value; `null` when not every key could be compared.
    pub values_match: Option<bool>,
    /// What is wrong (one sentence each, most important first), why it is not Ready (from
    /// vault-seed's view and ESO's Warning events), and what is worth knowing (what was not
    /// checked, a template that does not read a fetched value); `findings` with their codes.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// What keeps it from being done that waiting cannot fix ([`Stuck`]).
    #[serde(skip)]
    pub(crate) stuck: Vec<Stuck>,
    /// Whether a note is a warning (a template entry that reads no fetched value, a
    /// `dataFrom` vault-seed does not judge): listed even where ok objects are only counted.
    #[serde(skip)]
    pub warned: bool,
}

/// A PushSecret's or a store's check.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectCheck {
    /// `PushSecret`, `SecretStore` or `ClusterSecretStore`.
    pub kind: String,
    /// Namespace (none for a ClusterSecretStore).
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Ready and with a good reason.
    pub ok: bool,
    /// The Ready condition's reason.
    pub reason: Option<String>,
    /// What is wrong, and what is worth knowing (how a store logs in, when that is judged
    /// elsewhere); `findings` with their codes.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The findings `verdict` is made from.
    #[serde(skip)]
    pub(crate) findings: Vec<ObjectFinding>,
    /// What keeps it from being right that waiting cannot fix ([`Stuck`]).
    #[serde(skip)]
    pub(crate) stuck: Option<Stuck>,
}

/// A path another application provides (a spec's `provided_by`), and, while it is absent or
/// invalid, what its provider's PushSecret says.
#[derive(Debug, Clone, Serialize)]
pub struct ProvidedCheck {
    /// The full path (`secret/ask/postgresql/auh1-dev/core-service-db-password`).
    pub path: String,
    /// The provider, in words.
    pub provided_by: String,
    /// Present and valid in Vault.
    pub ok: bool,
    /// What is wrong with it in Vault when not ok: `absent`, `invalid` or `unreadable` (the
    /// token cannot read it).
    pub state: Option<&'static str>,
    /// The provider's PushSecret (`namespace/name`), when the spec declares it.
    pub push_secret: Option<String>,
    /// Its Ready condition's status, when it was looked at and has one.
    pub ready: Option<bool>,
    /// Its Ready condition's reason (`Errored`).
    pub reason: Option<String>,
    /// Its Ready condition's message.
    pub message: Option<String>,
    /// Its latest Warning event, `REASON: message` (a 403 from Vault: the provider's policy).
    pub event: Option<String>,
    /// What its provider's PushSecret says, in one sentence per finding (`explanations`, and
    /// `findings` with their codes).
    #[serde(flatten)]
    pub verdict: Verdict,
    /// What its PushSecret says that waiting cannot fix ([`Stuck`]).
    #[serde(skip)]
    pub(crate) stuck: Option<Stuck>,
}

impl ProvidedCheck {
    /// Its state in words (`not in Vault yet`), when not ok.
    pub fn state_words(&self) -> Option<&'static str> {
        Some(match self.state? {
            "invalid" => "invalid in Vault",
            "unreadable" => "vault-seed cannot read it",
            _ => "not in Vault yet",
        })
    }
}

/// The ESO check's result (in the JSON of the part `kube`).
#[derive(Debug, Clone, Serialize)]
pub struct EsoReport {
    /// ExternalSecrets.
    pub external_secrets: Vec<EsCheck>,
    /// PushSecrets and the stores the ExternalSecrets use.
    pub objects: Vec<ObjectCheck>,
    /// The paths other applications provide, and why each absent one is.
    pub provided: Vec<ProvidedCheck>,
}

impl EsoReport {
    /// Every ExternalSecret, PushSecret and store is right.
    pub fn ok(&self) -> bool {
        self.external_secrets.iter().all(|e| e.ok) && self.objects.iter().all(|o| o.ok)
    }

    /// ExternalSecrets done, of all, for progress while waiting.
    pub fn progress(&self) -> String {
        format!(
            "{}/{} ExternalSecret(s) done",
            self.external_secrets.iter().filter(|e| e.ok).count(),
            self.external_secrets.len()
        )
    }
}

/// The ExternalSecrets and PushSecrets to check, per namespace.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// (namespace, name) of each ExternalSecret.
    pub external_secrets: Vec<(String, String)>,
    /// (namespace, name) of each PushSecret.
    pub push_secrets: Vec<(String, String)>,
    /// (namespace, name) of each VSO VaultStaticSecret.
    pub static_secrets: Vec<(String, String)>,
    /// Do not read target Secrets (`--skip-target-secrets`): their keys are not checked.
    pub skip_target_secrets: bool,
}

/// Whether ESO syncs it only once: `refreshPolicy: CreatedOnce` refreshes only while it has
/// never synced, whatever its annotations (external-secrets v2.9.0
/// `pkg/controllers/externalsecret/externalsecret_controller.go`, `shouldRefresh`).
fn created_once(es: &ExternalSecretInfo) -> bool {
    es.refresh_policy.as_deref() == Some("CreatedOnce")
}

/// Annotate each wanted ExternalSecret with `force-sync=<unix time>`; returns what was done.
/// One that ESO syncs only once is left alone and said so.
pub async fn force_sync(cluster: &Cluster, wanted: &Wanted) -> Vec<RunNote> {
    let mut done = Vec::new();
    for (ns, name) in &wanted.external_secrets {
        let object = format!("{ns}/{name}");
        let failed = |unread, e: KubeError| RunNote::ForceSyncFailed {
            kind: "ExternalSecret",
            object: object.clone(),
            unread,
            why: e.to_string(),
        };
        let version = match cluster.external_secret(ns, name).await {
            Ok(Some(es)) if created_once(&es) => {
                done.push(RunNote::ForceSyncIgnored {
                    object: object.clone(),
                });
                continue;
            }
            Ok(Some(es)) => es.api_version,
            // Its check says it does not exist.
            Ok(None) => continue,
            Err(e) => {
                done.push(failed(true, e));
                continue;
            }
        };
        done.push(match cluster.force_sync(ns, name, &version).await {
            Ok(_) => RunNote::ForceSynced {
                kind: "ExternalSecret",
                object: object.clone(),
            },
            Err(e) => failed(false, e),
        });
    }
    done
}

/// What the check of one ExternalSecret finds.
#[derive(Debug, Clone)]
pub(crate) enum EsFinding {
    /// It does not exist.
    Missing { namespace: String, name: String },
    /// A remoteRef reads a path the spec does not have.
    NotSpecPath { key: String, secret_key: String },
    /// A remoteRef's property is not a field of its path.
    NotSpecField { key: String, property: String },
    /// A field it reads is not valid in Vault.
    FieldNot {
        path: String,
        field: String,
        status: Status,
    },
    /// A provided path it reads is not right yet: named once here, its provider and causes
    /// said once, in the part's `provided` list.
    Provided { path: String },
    /// ESO's policy lacks capabilities on a path it reads.
    PolicyMissing {
        caps: Vec<String>,
        data_path: String,
    },
    /// A `dataFrom` entry vault-seed does not judge (`find`, `sourceRef`).
    DataFromNotJudged { what: &'static str },
    /// A `dataFrom` entry with neither `extract`, `find` nor `sourceRef`.
    DataFromEmpty { index: usize },
    /// A `dataFrom.extract` reads a path the spec does not have.
    ExtractNotSpecPath { key: String },
    /// A `dataFrom.extract` names a property: ESO would read a map inside that field.
    ExtractProperty { key: String, property: String },
    /// Neither `spec.data` nor `dataFrom`: it maps nothing.
    MapsNothing,
    /// A remoteRef without `property` on a path with fields: ESO delivers the whole JSON object.
    WholeSecret {
        key: String,
        secret_key: String,
        fields: Vec<String>,
    },
    /// `remoteRef.version` pins another version than the current one (`current`: `None` when
    /// not known).
    Pinned {
        key: String,
        pin: String,
        current: Option<u64>,
    },
    /// `decodingStrategy` decodes a value its generator does not encode that way.
    Decoding {
        key: String,
        field: String,
        strategy: String,
        generator: &'static str,
        encoding: &'static str,
    },
    /// `decodingStrategy` is not one ESO knows.
    DecodingUnknown { key: String, strategy: String },
    /// A template entry for a mapped key does not read the value fetched for it.
    TemplateStatic { key: String },
    /// Its target Secret's type, or the one its template writes, is not the spec's
    /// `secret_type` for a path it reads.
    SecretType(super::secret_type::TypeFinding),
    /// A field of the object is missing or not of its type.
    BadField {
        object: String,
        field: String,
        problem: crate::kube::FieldProblem,
    },
    /// ESO synced an older generation than the object's.
    GenerationBehind { synced: i64, generation: i64 },
    /// Ready, but which generation ESO synced cannot be told.
    GenerationUnknown { missing: &'static str },
    /// `refreshTime` is later than now (beyond clock skew).
    RefreshInFuture {
        refreshed: OffsetDateTime,
        now: OffsetDateTime,
    },
    /// Several `Ready` conditions that disagree.
    ReadyConflict { states: Vec<String> },
    /// `metadata.deletionTimestamp` is set.
    Deleting { since: String },
    /// Ready, but synced before the secret was created in Vault (`created_once`: its
    /// `refreshPolicy: CreatedOnce` makes ESO ignore `--force-sync`).
    SyncedBeforeSeeding {
        refreshed: OffsetDateTime,
        created: OffsetDateTime,
        created_once: bool,
    },
    /// Ready without a `refreshTime`.
    NeverSynced,
    /// Not Ready.
    NotReady {
        reason: Option<String>,
        message: Option<String>,
    },
    /// One of its Warning events.
    Event { reason: String, message: String },
    /// Its target Secret does not exist.
    TargetMissing { namespace: String, secret: String },
    /// Its target Secret lacks keys it maps.
    TargetLacksKeys {
        namespace: String,
        secret: String,
        keys: Vec<String>,
    },
    /// Its target Secret has keys it maps with empty values.
    TargetEmptyValues {
        namespace: String,
        secret: String,
        keys: Vec<String>,
    },
    /// Its target Secret was not read (`--skip-target-secrets`).
    TargetNotChecked { namespace: String, secret: String },
    /// Every key it maps holds the value Vault's selected version has.
    Delivered,
    /// A key of its target Secret holds another value than the version its mapping selects.
    HoldsOther {
        namespace: String,
        secret: String,
        key: String,
        selected: Option<u64>,
        older: Option<u64>,
    },
    /// Keys of its target Secret not compared with Vault, each with why.
    NotCompared {
        namespace: String,
        secret: String,
        keys: Vec<(String, String)>,
    },
}

crate::base::codes::codes!(
    EsFinding,
    EsFinding {
        Missing => "missing",
        NotSpecPath => "not-spec-path",
        NotSpecField => "not-spec-field",
        FieldNot => "field-not-valid",
        Provided => "provided-not-right",
        PolicyMissing => "policy-missing",
        DataFromNotJudged => "data-from-not-judged",
        DataFromEmpty => "data-from-empty",
        ExtractNotSpecPath => "extract-not-spec-path",
        ExtractProperty => "extract-property",
        MapsNothing => "maps-nothing",
        WholeSecret => "whole-secret",
        Pinned => "pinned-version",
        Decoding => "decoding-mismatch",
        DecodingUnknown => "decoding-unknown",
        TemplateStatic => "template-static",
        BadField => "bad-field",
        GenerationBehind => "generation-behind",
        GenerationUnknown => "generation-unknown",
        RefreshInFuture => "refresh-in-future",
        ReadyConflict => "ready-conflict",
        Deleting => "deleting",
        SyncedBeforeSeeding => "synced-before-seeding",
        NeverSynced => "never-synced",
        NotReady => "not-ready",
        Event => "warning-event",
        TargetMissing => "target-missing",
        TargetLacksKeys => "target-lacks-keys",
        TargetEmptyValues => "target-empty-values",
        TargetNotChecked => "target-not-checked",
        Delivered => "delivered",
        HoldsOther => "stale-target",
        NotCompared => "not-compared",
    } nested {
        SecretType => super::secret_type::TypeFinding,
    }
);

impl Finding for EsFinding {
    fn severity(&self) -> Severity {
        use EsFinding::*;
        match self {
            SyncedBeforeSeeding { .. }
            | NeverSynced
            | NotReady { .. }
            | GenerationBehind { .. }
            | GenerationUnknown { .. }
            | RefreshInFuture { .. }
            | ReadyConflict { .. }
            | Deleting { .. } => Severity::Leading,
            Missing { .. }
            | NotSpecPath { .. }
            | NotSpecField { .. }
            | DataFromEmpty { .. }
            | ExtractNotSpecPath { .. }
            | ExtractProperty { .. }
            | MapsNothing
            | WholeSecret { .. }
            | Pinned { .. }
            | Decoding { .. }
            | DecodingUnknown { .. }
            | BadField { .. }
            | TargetMissing { .. }
            | TargetLacksKeys { .. }
            | TargetEmptyValues { .. }
            | HoldsOther { .. } => Severity::Problem,
            SecretType(t) => t.severity(),
            FieldNot { .. } | Provided { .. } | PolicyMissing { .. } | Event { .. } => {
                Severity::Cause
            }
            DataFromNotJudged { .. }
            | TemplateStatic { .. }
            | TargetNotChecked { .. }
            | Delivered
            | NotCompared { .. } => Severity::Note,
        }
    }

    fn message(&self) -> String {
        use EsFinding::*;
        match self {
            Missing { namespace, name } => format!(
                "ExternalSecret `{namespace}/{name}` does not exist (is the secrets app synced?)"
            ),
            NotSpecPath { key, secret_key } => format!(
                "remoteRef `{key}` (secretKey `{secret_key}`) is not a path of the spec"
            ),
            NotSpecField { key, property } => {
                format!("remoteRef `{key}` property `{property}` is not a field of the spec")
            }
            FieldNot { path, field, status: Status::Pending } => {
                format!("`{path}` field `{field}` is still a placeholder")
            }
            FieldNot { path, field, status } => {
                format!("`{path}` field `{field}` is {status} in Vault")
            }
            Provided { path } => format!(
                "`{path}` is provided by another application and is not right yet (its `provided` entry says why)"
            ),
            SecretType(t) => t.message(),
            PolicyMissing { caps, data_path } => format!(
                "ESO's policy does not grant `{}` on `{data_path}`",
                joined(caps)
            ),
            DataFromNotJudged { .. }
            | DataFromEmpty { .. }
            | ExtractNotSpecPath { .. }
            | ExtractProperty { .. }
            | MapsNothing
            | WholeSecret { .. }
            | Pinned { .. }
            | Decoding { .. }
            | DecodingUnknown { .. }
            | TemplateStatic { .. } => self.mapping_message(),
            BadField { .. }
            | GenerationBehind { .. }
            | GenerationUnknown { .. }
            | RefreshInFuture { .. }
            | ReadyConflict { .. }
            | Deleting { .. } => self.currency_message(),
            SyncedBeforeSeeding {
                refreshed,
                created,
                created_once,
            } => format!(
                "Ready, but last synced at {} — before the secret was created in Vault at {}: the Ready is from before seeding ({})",
                rfc3339(*refreshed),
                rfc3339(*created),
                if *created_once {
                    "its `refreshPolicy: CreatedOnce` makes ESO ignore --force-sync; deleting its target Secret makes it sync again"
                } else {
                    "try --force-sync"
                }
            ),
            NeverSynced => "Ready, but it has no `refreshTime`: it never synced".into(),
            NotReady { reason, message } => format!(
                "not Ready: {}{}",
                reason.as_deref().unwrap_or("no Ready condition yet"),
                colon(message.as_deref())
            ),
            Event { reason, message } => format!("event {reason}: {message}"),
            TargetMissing { namespace, secret } => {
                format!("target Secret `{namespace}/{secret}` does not exist")
            }
            TargetLacksKeys { namespace, secret, keys } => format!(
                "target Secret `{namespace}/{secret}` lacks key(s) `{}`",
                joined(keys)
            ),
            TargetEmptyValues { namespace, secret, keys } => format!(
                "target Secret `{namespace}/{secret}` has empty value(s) for key(s) `{}`",
                joined(keys)
            ),
            Delivered | HoldsOther { .. } | NotCompared { .. } => self.delivery_message(),
            TargetNotChecked { namespace, secret } => format!(
                "target Secret `{namespace}/{secret}` not checked (--skip-target-secrets): that it exists with every key, none empty, is not proven"
            ),
        }
    }
}

impl EsFinding {
    /// The sentence of a finding about the values the target Secret holds.
    fn delivery_message(&self) -> String {
        use EsFinding::*;
        match self {
            Delivered => {
                "every key it maps holds the value in Vault (compared by digest)".into()
            }
            HoldsOther {
                namespace,
                secret,
                key,
                selected,
                older,
            } => format!(
                "target Secret `{namespace}/{secret}` key `{key}` does not hold the value in Vault{}{}",
                selected.map(|v| format!(" (version {v})")).unwrap_or_default(),
                match older {
                    Some(o) => format!(": it holds version {o}'s"),
                    None => String::new(),
                }
            ),
            NotCompared {
                namespace,
                secret,
                keys,
            } => format!(
                "target Secret `{namespace}/{secret}`: {} not compared with Vault, so its delivery is judged by the times only",
                keys.iter()
                    .map(|(k, why)| format!("key `{k}` ({why})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => String::new(),
        }
    }

    /// The sentence of a finding about what a mapping delivers.
    fn mapping_message(&self) -> String {
        use EsFinding::*;
        match self {
            DataFromNotJudged { what } => format!(
                "`dataFrom.{what}` is not judged: which paths and fields it delivers is ESO's choice, not the spec's"
            ),
            DataFromEmpty { index } => format!(
                "`spec.dataFrom[{index}]` has neither `extract`, `find` nor `sourceRef`: it maps nothing"
            ),
            ExtractNotSpecPath { key } => {
                format!("`dataFrom.extract` key `{key}` is not a path of the spec")
            }
            ExtractProperty { key, property } => format!(
                "`dataFrom.extract` key `{key}` has property `{property}`: ESO would extract the fields of a map inside `{property}`, which the spec's text fields are not"
            ),
            MapsNothing => {
                "`spec.data` is empty and there is no `dataFrom`: it maps nothing from Vault".into()
            }
            WholeSecret { key, secret_key, fields } => format!(
                "remoteRef `{key}` (secretKey `{secret_key}`) has no `property`: ESO delivers the whole secret as a JSON object, not a value; set `property: {}`",
                match fields.as_slice() {
                    [one] => one.clone(),
                    _ => format!("<one of `{}`>", joined(fields)),
                }
            ),
            Pinned { key, pin, current: Some(current) } => format!(
                "remoteRef `{key}` pins version {pin} (`remoteRef.version`), but the current version in Vault is {current}: ESO keeps serving version {pin}; remove `version`"
            ),
            Pinned { key, pin, current: None } => format!(
                "remoteRef `{key}` pins version `{pin}` (`remoteRef.version`), and the current version in Vault is not known: whether ESO serves the seeded value cannot be told"
            ),
            Decoding { key, field, strategy, generator, encoding } => format!(
                "remoteRef `{key}` property `{field}`: decodingStrategy `{strategy}` decodes the value, but generator `{generator}` makes {encoding}: ESO would deliver other bytes than the seeded value (or fail); set `decodingStrategy: None`"
            ),
            DecodingUnknown { key, strategy } => format!(
                "remoteRef `{key}`: decodingStrategy `{strategy}` is not one ESO knows (`None`, `Base64`, `Base64URL`, `Auto`)"
            ),
            TemplateStatic { key } => format!(
                "warning: `target.template.data` entry `{key}` does not read the value fetched for it (`.{key}`): the Secret holds the template's text, not the seeded value"
            ),
            _ => String::new(),
        }
    }

    /// The sentence of a finding about whether the object and its Ready are current.
    fn currency_message(&self) -> String {
        use EsFinding::*;
        match self {
            BadField { object, field, problem } => format!(
                "field `{field}` of ExternalSecret `{object}` {problem}: not taken as matching anything"
            ),
            GenerationBehind { synced, generation } => format!(
                "ESO has not processed the current spec: it synced generation {synced} (`status.syncedResourceVersion`), the object is at generation {generation}"
            ),
            GenerationUnknown { missing } => format!(
                "Ready, but `{missing}` is missing: whether ESO synced the current spec cannot be told"
            ),
            RefreshInFuture { refreshed, now } => format!(
                "`refreshTime` {} is later than now ({}): it does not prove a sync",
                rfc3339(*refreshed),
                rfc3339(*now)
            ),
            ReadyConflict { states } => format!(
                "it has {} `Ready` conditions that disagree ({}): ESO keeps one, so its state is unknown",
                states.len(),
                states.join(", ")
            ),
            Deleting { since } => format!(
                "it is being deleted (`deletionTimestamp` {since}): ESO is removing it, not syncing it"
            ),
            _ => String::new(),
        }
    }
}

/// What the check of a PushSecret, a store, a VaultAuth or a VaultConnection finds.
#[derive(Debug, Clone)]
pub(crate) enum ObjectFinding {
    /// It does not exist (`shown`: the kind and name as the sentence names them).
    Missing { shown: String },
    /// Its Ready condition is not True.
    NotReady {
        reason: Option<String>,
        message: Option<String>,
    },
    /// VSO's default cannot be looked for.
    DefaultUnsearchable { kind: String, error: String },
    /// No VSO default exists.
    NoDefault { kind: String },
    /// Several VSO defaults exist (`found`: each `namespace/name`): which one VSO uses is not
    /// known here.
    SeveralDefaults { found: Vec<String> },
    /// VSO says it is not valid (`error` on one line).
    NotValid {
        valid: Option<bool>,
        error: Option<String>,
    },
    /// VSO says it is not Healthy (`message` on one line).
    NotHealthy { message: Option<String> },
    /// What the store check finds about a store's Vault provider ([`super::store`]).
    Store(StoreFinding),
}

crate::base::codes::codes!(
    ObjectFinding,
    ObjectFinding {
        Missing => "missing",
        NotReady => "not-ready",
        DefaultUnsearchable => "default-unsearchable",
        NoDefault => "no-default",
        SeveralDefaults => "several-defaults",
        NotValid => "not-valid",
        NotHealthy => "not-healthy",
    } nested {
        Store => StoreFinding,
    }
);

impl Finding for ObjectFinding {
    fn severity(&self) -> Severity {
        match self {
            ObjectFinding::Store(f) => f.severity(),
            _ => Severity::Problem,
        }
    }

    fn message(&self) -> String {
        use ObjectFinding::*;
        match self {
            Store(f) => f.message(),
            Missing { shown } => format!("{shown} does not exist"),
            NotReady { reason, message } => format!(
                "not Ready: {}{}",
                reason.as_deref().unwrap_or_default(),
                colon(message.as_deref())
            ),
            DefaultUnsearchable { kind, error } => format!(
                "VSO's default {kind} (`default` in the operator's namespace) cannot be looked for: {error}"
            ),
            NoDefault { kind } => format!(
                "no {kind} named `default` exists: VSO's default, used when nothing names one, is missing"
            ),
            SeveralDefaults { found } => format!(
                "several are named `default` (`{}`) and VSO uses the one in its own namespace, which vault-seed does not know: not checked",
                joined(found)
            ),
            NotValid { valid, error } => format!(
                "not valid (`status.valid` is {}){}",
                valid.map_or("unset".into(), |v| v.to_string()),
                colon(error.as_deref())
            ),
            NotHealthy { message } => format!("not Healthy{}", colon(message.as_deref())),
        }
    }
}

impl ObjectCheck {
    /// The check of an object of `kind`, from its findings.
    pub(crate) fn new(
        kind: &str,
        namespace: Option<String>,
        name: String,
        reason: Option<String>,
        findings: Vec<ObjectFinding>,
    ) -> ObjectCheck {
        ObjectCheck {
            kind: kind.into(),
            namespace,
            name,
            ok: !any_problem(&findings),
            reason,
            verdict: Verdict::of(&findings).shaped(Shape::PROBLEMS_NOTES),
            findings,
            stuck: None,
        }
    }

    /// Whether its controller's own status says it is wrong (not Ready, not valid, not
    /// Healthy) or it is missing; when not, a failure is vault-seed's finding alone, and its
    /// status reason (`Valid`) must not read as the verdict.
    pub fn status_fails(&self) -> bool {
        self.findings.iter().any(|f| {
            matches!(
                f,
                ObjectFinding::Missing { .. }
                    | ObjectFinding::NotReady { .. }
                    | ObjectFinding::NotValid { .. }
                    | ObjectFinding::NotHealthy { .. }
            )
        })
    }
}

/// What the check of a provided path finds: each is a cause.
#[derive(Debug, Clone)]
enum ProvidedFinding {
    /// The provider's PushSecret does not exist.
    PushMissing { shown: String },
    /// The provider's PushSecret's Ready condition.
    PushState {
        shown: String,
        condition: ReadyCondition,
    },
    /// The provider's PushSecret cannot be read.
    PushUnreadable { shown: String, error: String },
    /// Its latest Warning event, `REASON: message`.
    PushEvent { shown: String, line: String },
    /// Its events cannot be read.
    EventsUnreadable { shown: String, error: String },
}

crate::base::codes::codes!(
    ProvidedFinding,
    ProvidedFinding {
        PushMissing => "push-secret-missing",
        PushState => "push-secret-state",
        PushUnreadable => "push-secret-unreadable",
        PushEvent => "push-secret-event",
        EventsUnreadable => "events-unreadable",
    }
);

impl Finding for ProvidedFinding {
    fn severity(&self) -> Severity {
        Severity::Cause
    }

    fn message(&self) -> String {
        use ProvidedFinding::*;
        match self {
            PushMissing { shown } => {
                format!("PushSecret `{shown}` does not exist (has its app synced?)")
            }
            PushState { shown, condition } => format!(
                "PushSecret `{shown}`: {}{}{}",
                match condition.ready {
                    Some(true) => "Ready",
                    Some(false) => "not Ready",
                    None => "no Ready condition yet",
                },
                condition
                    .reason
                    .as_ref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default(),
                colon(condition.message.as_deref())
            ),
            PushUnreadable { shown, error } => format!("cannot read PushSecret `{shown}`: {error}"),
            PushEvent { shown, line } => {
                format!("PushSecret `{shown}` latest Warning event {line}")
            }
            EventsUnreadable { shown, error } => {
                format!("cannot read the events of PushSecret `{shown}`: {error}")
            }
        }
    }
}

/// What the checks of one run share.
struct Ctx<'a> {
    cluster: &'a Cluster,
    facts: &'a Facts<'a>,
    /// The provided paths not right yet.
    provided_wrong: HashSet<&'a str>,
    skip_target_secrets: bool,
    /// Compares the target Secrets' values with Vault's; `None` when it cannot.
    compare: Option<&'a Compare<'a>>,
}

/// The checks of a poll before, by `(namespace, name)`: those done are kept, not made again.
pub type Done = std::collections::HashMap<(String, String), EsCheck>;

/// Check everything once; an ExternalSecret done in `done` (the poll before) is kept as it was.
pub async fn check(
    cluster: &Cluster,
    wanted: &Wanted,
    targets: &[Target],
    facts: &Facts<'_>,
    inputs: &store::Inputs<'_>,
    compare: Option<&Compare<'_>>,
    done: &Done,
) -> Result<EsoReport, KubeError> {
    let provided = provided_checks(cluster, targets, facts).await;
    let ctx = Ctx {
        cluster,
        facts,
        provided_wrong: provided
            .iter()
            .filter(|p| !p.ok)
            .map(|p| p.path.as_str())
            .collect(),
        skip_target_secrets: wanted.skip_target_secrets,
        compare,
    };
    // Held to the end of the run: sized once, not at the last doubling.
    let mut external_secrets = Vec::with_capacity(wanted.external_secrets.len());
    let mut stores: BTreeMap<(Option<String>, StoreKind, String), Vec<StoreUser<'_>>> =
        BTreeMap::new();
    for (ns, name) in &wanted.external_secrets {
        let kept = done.get(&(ns.clone(), name.clone())).filter(|c| c.ok);
        let found = cluster.external_secret(ns, name).await?;
        if let Some(es) = &found {
            if let Some(key) = store_of(es, ns) {
                stores.entry(key).or_default().push(StoreUser {
                    namespace: ns,
                    name,
                    refs: es.data.clone(),
                });
            }
        }
        external_secrets.push(match (kept, found) {
            (Some(kept), _) => kept.clone(),
            (None, None) => EsCheck::new(
                ns,
                name,
                None,
                vec![EsFinding::Missing {
                    namespace: ns.clone(),
                    name: name.clone(),
                }],
            ),
            (None, Some(es)) => {
                let findings = check_external_secret(&ctx, ns, name, &es).await?;
                let stuck = stuck_of(&findings, &provided);
                let mut check = EsCheck::new(ns, name, Some(es), findings);
                check.stuck = stuck;
                check
            }
        });
    }
    let mut objects = push_secret_checks(cluster, wanted).await?;
    let mut at: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, (ns, name)) in wanted.external_secrets.iter().enumerate() {
        at.entry((ns, name)).or_insert(i);
    }
    for ((ns, kind, name), users) in stores {
        let check = store_check(cluster, inputs, facts, (ns, kind, name), &users).await?;
        if let Some(stuck) = &check.stuck {
            for u in &users {
                let at = at.get(&(u.namespace, u.name)).copied();
                if let Some(es) = at.and_then(|i| external_secrets.get_mut(i)) {
                    if !es.ok && !es.stuck.contains(stuck) {
                        es.stuck.push(stuck.clone());
                    }
                }
            }
        }
        objects.push(check);
    }
    Ok(EsoReport {
        external_secrets,
        objects,
        provided,
    })
}

/// The causes waiting cannot fix among an ExternalSecret's findings: ESO's policy lacks a
/// grant on a path it reads, Vault's 403 in one of its Warning events, a provided path it
/// reads whose PushSecret is stuck.
fn stuck_of(findings: &[EsFinding], provided: &[ProvidedCheck]) -> Vec<Stuck> {
    let mut out: Vec<Stuck> = Vec::new();
    for f in findings {
        let s = match f {
            EsFinding::PolicyMissing { data_path, .. } => Some(Stuck::VaultDenied {
                path: Some(data_path.clone()),
            }),
            EsFinding::Event { message, .. } if message.contains("Code: 403") => {
                Some(Stuck::VaultDenied { path: None })
            }
            EsFinding::Provided { path, .. } => provided
                .iter()
                .find(|p| &p.path == path)
                .and_then(|p| p.stuck.clone()),
            _ => None,
        };
        if let Some(s) = s.filter(|s| !out.contains(s)) {
            out.push(s);
        }
    }
    out
}

/// The PushSecrets the specs name: each exists and is Ready (a failure ESO wrote that waiting
/// cannot fix is kept as [`Stuck`]).
async fn push_secret_checks(
    cluster: &Cluster,
    wanted: &Wanted,
) -> Result<Vec<ObjectCheck>, KubeError> {
    let mut objects = Vec::new();
    for (ns, name) in &wanted.push_secrets {
        let found = cluster.push_secret(ns, name).await?;
        let findings = match &found {
            None => vec![ObjectFinding::Missing {
                shown: format!("PushSecret `{ns}/{name}`"),
            }],
            Some(ps) => ready_finding(&ps.condition),
        };
        let stuck = found
            .as_ref()
            .filter(|ps| ps.condition.ready != Some(true))
            .and_then(|ps| ps.condition.message.as_deref())
            .and_then(|m| Stuck::in_eso_message(m, &format!("{ns}/{name}")));
        let reason = found.and_then(|ps| ps.condition.reason);
        let mut check = ObjectCheck::new(
            "PushSecret",
            Some(ns.clone()),
            name.clone(),
            reason,
            findings,
        );
        check.stuck = stuck;
        objects.push(check);
    }
    Ok(objects)
}

/// A store's check: it exists, is Ready, and its Vault provider is the one vault-seed seeded
/// and judged ([`store::check`]).
async fn store_check(
    cluster: &Cluster,
    inputs: &store::Inputs<'_>,
    facts: &Facts<'_>,
    (ns, kind, name): (Option<String>, StoreKind, String),
    users: &[StoreUser<'_>],
) -> Result<ObjectCheck, KubeError> {
    let found = cluster
        .secret_store(ns.as_deref().unwrap_or(""), kind, &name)
        .await?;
    let findings = match &found {
        None => vec![ObjectFinding::Missing {
            shown: format!("{} `{name}`", kind.kind()),
        }],
        Some(s) => {
            let mut f = ready_finding(&s.condition);
            let of_store = store::check(inputs, facts, &s.vault, users).await;
            f.extend(of_store.into_iter().map(ObjectFinding::Store));
            f
        }
    };
    let missing = found.is_none();
    let reason = found.and_then(|s| s.condition.reason);
    let mut check = ObjectCheck::new(kind.kind(), ns, name, reason, findings);
    if missing {
        check.stuck = Some(Stuck::StoreMissing {
            store: format!("{} `{}`", kind.kind(), check.name),
        });
    }
    Ok(check)
}

/// Not Ready, unless its Ready condition is True.
fn ready_finding(c: &ReadyCondition) -> Vec<ObjectFinding> {
    if c.ready == Some(true) {
        return Vec::new();
    }
    vec![ObjectFinding::NotReady {
        reason: c.reason.clone(),
        message: c.message.clone(),
    }]
}

/// The store an ExternalSecret in `ns` reads through: (namespace for a SecretStore, kind, name).
fn store_of(es: &ExternalSecretInfo, ns: &str) -> Option<(Option<String>, StoreKind, String)> {
    let store = es.store_ref.as_ref()?;
    let kind = store.kind.unwrap_or(StoreKind::SecretStore);
    let store_ns = (kind == StoreKind::SecretStore).then(|| ns.to_string());
    Some((store_ns, kind, store.name.clone()))
}

impl EsCheck {
    /// The check of `ns/name`, from what was read of it and its findings.
    fn new(
        ns: &str,
        name: &str,
        es: Option<ExternalSecretInfo>,
        findings: Vec<EsFinding>,
    ) -> EsCheck {
        let ok = !any_problem(&findings);
        let values_match = if findings
            .iter()
            .any(|f| matches!(f, EsFinding::HoldsOther { .. }))
        {
            Some(false)
        } else {
            findings
                .iter()
                .any(|f| matches!(f, EsFinding::Delivered))
                .then_some(true)
        };
        let shown: Vec<&EsFinding> = findings
            .iter()
            .filter(|f| !matches!(f, EsFinding::Delivered))
            .collect();
        let verdict = Verdict::of(&shown);
        let warned = findings.iter().any(|f| {
            matches!(
                f,
                EsFinding::TemplateStatic { .. } | EsFinding::DataFromNotJudged { .. }
            )
        });
        let target_checked = es.is_some()
            && !findings
                .iter()
                .any(|f| matches!(f, EsFinding::TargetNotChecked { .. }));
        let (api_version, condition, refresh_time, target_secret) = match es {
            Some(es) => (
                Some(es.api_version),
                es.condition,
                es.refresh_time,
                Some(es.target_secret),
            ),
            None => (None, ReadyCondition::default(), None, None),
        };
        EsCheck {
            namespace: ns.to_string(),
            name: name.to_string(),
            ok,
            api_version,
            ready: condition.ready,
            reason: condition.reason,
            message: condition.message,
            refresh_time,
            target_secret,
            target_checked,
            values_match,
            verdict,
            stuck: Vec::new(),
            warned,
        }
    }
}

/// One ExternalSecret's findings: its fields, its mappings, its Ready condition and whether it
/// is about the current object, its target Secret.
async fn check_external_secret(
    ctx: &Ctx<'_>,
    ns: &str,
    name: &str,
    es: &ExternalSecretInfo,
) -> Result<Vec<EsFinding>, KubeError> {
    let mut found = bad_fields(es);
    let mut newest_created: Option<OffsetDateTime> = None;
    for r in es.data.iter() {
        newest_created = newest_created.max(remote_ref(ctx, r, &mut found));
    }
    newest_created = newest_created.max(data_from(ctx, es, &mut found));
    found.extend(readiness(es, newest_created));
    found.extend(currency(es, OffsetDateTime::now_utc()));
    found.extend(template_findings(es));
    if es.condition.ready != Some(true) {
        let events = ctx
            .cluster
            .warning_events(ns, "ExternalSecret", name)
            .await?;
        found.extend(events.into_iter().take(3).map(|ev| EsFinding::Event {
            reason: ev.reason.unwrap_or_default(),
            message: ev.message.unwrap_or_default(),
        }));
    }
    // The target Secret exists with every key the ExternalSecret maps, none empty; unless
    // reading Secrets is not allowed (a Role without `get secrets`): then it is said unchecked.
    if ctx.skip_target_secrets {
        found.push(EsFinding::TargetNotChecked {
            namespace: ns.to_string(),
            secret: es.target_secret.clone(),
        });
    } else if let Some(compare) = ctx.compare {
        let digests = ctx
            .cluster
            .secret_digests(ns, &es.target_secret, compare.digester())
            .await?;
        let entries = digests
            .as_ref()
            .map(|d| d.iter().map(|(k, v)| (k.clone(), v.empty)).collect());
        let wanted = mapped_keys(ctx, es);
        found.extend(target_keys(ns, es, &wanted, entries));
        if let Some(digests) = digests {
            let compared = delivered(compare, ns, es, &wanted, &digests).await;
            settle_timing(&mut found, &compared);
            found.extend(compared);
        }
    } else {
        let entries = ctx.cluster.secret_entries(ns, &es.target_secret).await?;
        let wanted = mapped_keys(ctx, es);
        found.extend(target_keys(ns, es, &wanted, entries));
    }
    if !ctx.skip_target_secrets {
        found.extend(target_type(ctx, ns, es).await?);
    }
    Ok(found)
}

/// The target Secret's type against the spec's `secret_type` of the paths the ExternalSecret
/// reads ([`super::secret_type`]): `target.template.type` when set, and the Secret's own.
async fn target_type(
    ctx: &Ctx<'_>,
    ns: &str,
    es: &ExternalSecretInfo,
) -> Result<Vec<EsFinding>, KubeError> {
    let keys = es
        .data
        .iter()
        .map(|r| &*r.key)
        .chain(es.data_from.iter().filter_map(|d| match d {
            DataFrom::Extract { reference, .. } => Some(&*reference.key),
            _ => None,
        }));
    let Some(want) = keys
        .filter_map(|k| spec_target(ctx, k))
        .find_map(|t| t.secret_type.as_deref())
    else {
        return Ok(Vec::new());
    };
    let has = ctx.cluster.secret_type(ns, &es.target_secret).await?;
    let asks = es
        .template_type
        .as_deref()
        .map(|a| ("spec.target.template.type", a));
    let shown = format!("{ns}/{}", es.target_secret);
    Ok(
        super::secret_type::check(want, asks, &shown, has.as_deref())
            .into_iter()
            .map(EsFinding::SecretType)
            .collect(),
    )
}

/// Each mapped key of the target Secret compared with the Vault value its mapping selects
/// ([`super::delivery`]): a key holding another value is not delivered (and which recent
/// version it holds, when one does); keys not compared are named in a note. When every key was
/// compared and holds the selected version, [`EsFinding::Delivered`] says so.
async fn delivered(
    compare: &Compare<'_>,
    ns: &str,
    es: &ExternalSecretInfo,
    wanted: &[String],
    digests: &BTreeMap<String, crate::kube::KeyDigest>,
) -> Vec<EsFinding> {
    let mut found = Vec::new();
    let mut not_compared: Vec<(String, String)> = Vec::new();
    let mut all = !wanted.is_empty();
    let mut names = crate::base::interned::Interner::default();
    for (key, mapping) in delivery::eso_mappings(es, compare.index(), &mut names) {
        if !wanted.iter().any(|w| **w == *key) {
            continue;
        }
        let Some(d) = digests.get(&*key) else {
            all = false;
            continue;
        };
        match compare.held(&mapping, d).await {
            Held::Selected { .. } => {}
            Held::Other { selected, older } => {
                all = false;
                found.push(EsFinding::HoldsOther {
                    namespace: ns.to_string(),
                    secret: es.target_secret.clone(),
                    key: key.to_string(),
                    selected,
                    older,
                });
            }
            Held::NotCompared(why) => {
                all = false;
                not_compared.push((key.to_string(), why));
            }
        }
    }
    if !not_compared.is_empty() {
        found.push(EsFinding::NotCompared {
            namespace: ns.to_string(),
            secret: es.target_secret.clone(),
            keys: not_compared,
        });
    }
    if all && found.is_empty() {
        found.push(EsFinding::Delivered);
    }
    found
}

/// A delivery proven by the values outweighs the clocks: a `refreshTime` that reads as before
/// the write is not a problem when every key holds the value written.
fn settle_timing(found: &mut Vec<EsFinding>, compared: &[EsFinding]) {
    if compared.iter().any(|f| matches!(f, EsFinding::Delivered)) {
        found.retain(|f| !matches!(f, EsFinding::SyncedBeforeSeeding { .. }));
    }
}

/// The fields of the object that are missing or not of their type.
fn bad_fields(es: &ExternalSecretInfo) -> Vec<EsFinding> {
    let object = format!("{}/{}", es.namespace, es.name);
    es.bad_fields
        .iter()
        .map(|b| EsFinding::BadField {
            object: object.clone(),
            field: b.field.clone(),
            problem: b.problem.clone(),
        })
        .collect()
}

/// The spec's path a remoteRef key names: `ask/x` below the mount, or `secret/ask/x` (a
/// leading `/` ignored), [`TargetIndex::of_key`]'s rule.
fn spec_target<'t>(ctx: &Ctx<'t>, key: &str) -> Option<&'t Target> {
    ctx.facts.index().of_key(key)
}

/// A remoteRef must be a path and field of the spec, present in Vault, delivered as seeded: its
/// findings, and the time its path was created in Vault.
fn remote_ref(ctx: &Ctx<'_>, r: &RemoteRef, found: &mut Vec<EsFinding>) -> Option<OffsetDateTime> {
    let Some(t) = spec_target(ctx, &r.key) else {
        found.push(EsFinding::NotSpecPath {
            key: r.key.to_string(),
            secret_key: r.secret_key.to_string(),
        });
        return None;
    };
    let fields: Vec<&Field> = match &r.property {
        Some(p) => match t.fields.iter().find(|f| *f.name == **p) {
            Some(f) => vec![f],
            None => {
                found.push(EsFinding::NotSpecField {
                    key: r.key.to_string(),
                    property: p.to_string(),
                });
                return None;
            }
        },
        None => {
            found.push(whole_secret(r, t));
            t.fields.iter().collect()
        }
    };
    path_findings(ctx, r, t, &fields, found)
}

/// What a read of `fields` of `t` through `r` finds: each field's state in Vault, its decoding,
/// the version pinned, the provider's state and ESO's policy; the time the path was created.
fn path_findings(
    ctx: &Ctx<'_>,
    r: &RemoteRef,
    t: &Target,
    fields: &[&Field],
    found: &mut Vec<EsFinding>,
) -> Option<OffsetDateTime> {
    let path = t.full_path();
    let f = ctx.facts.get(&path).unwrap_or_default();
    for field in fields {
        found.extend(field_finding(&path, &field.name, &f));
        found.extend(decoding_finding(r, field));
    }
    found.extend(pinned(r, &f));
    // A provided path not yet right: who makes it, and what its PushSecret says, are the
    // provided check's to say.
    if ctx.provided_wrong.contains(path.as_str()) {
        found.push(EsFinding::Provided { path: path.clone() });
    }
    if !f.policy_missing.is_empty() {
        found.push(EsFinding::PolicyMissing {
            caps: f
                .policy_missing
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            data_path: f.data_path.clone(),
        });
    }
    f.created
}

/// No `property`: ESO's Vault provider returns the whole secret JSON-encoded, whatever its
/// fields (external-secrets `providers/v1/vault/client_get.go`, `getSecretValue`: "return raw
/// json if no property is defined"; no special case for one field or for `value`).
fn whole_secret(r: &RemoteRef, t: &Target) -> EsFinding {
    EsFinding::WholeSecret {
        key: r.key.to_string(),
        secret_key: r.secret_key.to_string(),
        fields: t.fields.iter().map(|f| f.name.clone()).collect(),
    }
}

/// `remoteRef.version` pins a KV v2 version: ESO reads that one (`readSecret` sends
/// `?version=`), never a newer value written by `rotate` or `set`.
fn pinned(r: &RemoteRef, f: &PathFacts) -> Option<EsFinding> {
    let pin = r.version.as_ref()?;
    let current = f.version;
    if pin.parse::<u64>().ok().is_some_and(|p| Some(p) == current) {
        return None;
    }
    Some(EsFinding::Pinned {
        key: r.key.to_string(),
        pin: pin.to_string(),
        current,
    })
}

/// The encoding a generator's values are in, as `decodingStrategy` sees them: `Some(strategy)`
/// when its values are always valid input of that decoding.
fn generator_encoding(g: &Generator) -> (&'static str, Option<&'static str>) {
    match g {
        Generator::Base64 {
            url_safe: false, ..
        } => ("standard base64", Some("Base64")),
        Generator::Base64 { url_safe: true, .. } | Generator::Fernet => {
            ("URL-safe base64", Some("Base64URL"))
        }
        Generator::Hex { .. } | Generator::Masterkey => ("hex", None),
        Generator::Uuid => ("a UUID", None),
        Generator::Key(_) | Generator::SshEd25519 => ("a PEM key", None),
        Generator::Jwks { .. } => ("a JSON Web Key Set", None),
        Generator::Password { .. } => ("a password", None),
        Generator::Placeholder { .. } => ("text a person fills in", None),
        Generator::FromSecret { .. } => ("a value imported from the cluster", None),
        Generator::Derived(_) => ("a value made from other fields", None),
        Generator::Any => ("a value of a format it does not know", None),
    }
}

/// Whether a generator's values can never read as padded base64 (Go's `StdEncoding` and
/// `URLEncoding` want a length that is a multiple of 4), so `Auto` leaves them alone.
fn never_base64(g: &Generator) -> bool {
    match g {
        Generator::Hex { bytes } => (2 * bytes) % 4 != 0,
        Generator::Password { length, .. } => length % 4 != 0,
        // `-----BEGIN PRIVATE KEY-----` has spaces, which no base64 decoding takes.
        Generator::Key(_) | Generator::SshEd25519 => true,
        // JSON's `{` and `"` are in no base64 alphabet.
        Generator::Jwks { .. } => true,
        _ => false,
    }
}

/// `decodingStrategy` must deliver the seeded value: `None` (or left out) always does; `Base64`
/// and `Base64URL` only decode values made in that encoding; `Auto` tries standard base64, then
/// URL-safe, and keeps the text only when neither decodes (external-secrets
/// `runtime/decoding/decoding.go`, `Decode`), so it changes any value that reads as base64
/// (hex of an even number of bytes does).
fn decoding_finding(r: &RemoteRef, field: &Field) -> Option<EsFinding> {
    let strategy = r.decoding.as_deref().unwrap_or("None");
    let (encoding, decodes_as) = generator_encoding(&field.generator);
    let fine = match strategy {
        "None" | "" => true,
        "Base64" | "Base64URL" => decodes_as == Some(strategy),
        "Auto" => decodes_as.is_some() || never_base64(&field.generator),
        _ => {
            return Some(EsFinding::DecodingUnknown {
                key: r.key.to_string(),
                strategy: strategy.to_string(),
            })
        }
    };
    (!fine).then(|| EsFinding::Decoding {
        key: r.key.to_string(),
        field: field.name.clone(),
        strategy: strategy.to_string(),
        generator: field.generator.name(),
        encoding,
    })
}

/// `dataFrom`: `extract` of a spec path maps each of its fields (checked like a remoteRef);
/// `find` and `sourceRef` are not judged; nothing in `data` nor `dataFrom` maps nothing.
fn data_from(
    ctx: &Ctx<'_>,
    es: &ExternalSecretInfo,
    found: &mut Vec<EsFinding>,
) -> Option<OffsetDateTime> {
    if es.data.is_empty() && es.data_from.is_empty() {
        found.push(EsFinding::MapsNothing);
    }
    let mut newest = None;
    for (index, d) in es.data_from.iter().enumerate() {
        match d {
            DataFrom::Extract { reference: r, .. } => {
                let Some(t) = spec_target(ctx, &r.key) else {
                    found.push(EsFinding::ExtractNotSpecPath {
                        key: r.key.to_string(),
                    });
                    continue;
                };
                if let Some(p) = &r.property {
                    found.push(EsFinding::ExtractProperty {
                        key: r.key.to_string(),
                        property: p.to_string(),
                    });
                }
                let fields: Vec<&Field> = t.fields.iter().collect();
                newest = newest.max(path_findings(ctx, r, t, &fields, found));
            }
            DataFrom::Find => found.push(EsFinding::DataFromNotJudged { what: "find" }),
            DataFrom::SourceRef => found.push(EsFinding::DataFromNotJudged { what: "sourceRef" }),
            DataFrom::Empty => found.push(EsFinding::DataFromEmpty { index }),
        }
    }
    newest
}

/// The keys of the target Secret it maps: each `secretKey` and the fields of each spec path
/// `dataFrom.extract` reads without renaming them, when ESO keeps the fetched keys (no
/// template, or `mergePolicy: Merge`: [`crate::model::producers::keeps_fetched_keys`]); and
/// each key of `template.data`, which ESO always writes.
fn mapped_keys(ctx: &Ctx<'_>, es: &ExternalSecretInfo) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    if es.keeps_fetched {
        keys.extend(es.data.iter().map(|r| r.secret_key.to_string()));
        for d in &es.data_from {
            if let DataFrom::Extract {
                reference,
                rewritten: false,
            } = d
            {
                if let (Some(t), None) = (spec_target(ctx, &reference.key), &reference.property) {
                    keys.extend(t.fields.iter().map(|f| f.name.clone()));
                }
            }
        }
    }
    for t in &es.template {
        if !keys.contains(&t.key) {
            keys.push(t.key.clone());
        }
    }
    keys
}

/// How far ahead of this machine's clock a `refreshTime` may be (clock skew between the
/// controller's node and here).
const CLOCK_SKEW: time::Duration = time::Duration::minutes(5);

/// Whether the Ready is about the object as it is now: ESO synced its current generation
/// (`markAsDone` writes `syncedResourceVersion` from `GetResourceVersion`, `<generation>-<hash>`:
/// external-secrets `pkg/controllers/externalsecret/externalsecret_controller.go` and
/// `pkg/controllers/util/util.go`), its `refreshTime` is not in the future, its `Ready`
/// conditions agree (`SetExternalSecretCondition` keeps one per type: `util.go`), and it is not
/// being deleted.
fn currency(es: &ExternalSecretInfo, now: OffsetDateTime) -> Vec<EsFinding> {
    let mut found = Vec::new();
    if let Some(since) = &es.deletion_timestamp {
        found.push(EsFinding::Deleting {
            since: since.clone(),
        });
    }
    let all = || std::iter::once(&es.condition).chain(&es.other_ready_conditions);
    let states: BTreeSet<Option<bool>> = all().map(|c| c.ready).collect();
    if states.len() > 1 {
        found.push(EsFinding::ReadyConflict {
            states: all()
                .map(|c| match c.ready {
                    Some(true) => "True".to_string(),
                    Some(false) => "False".to_string(),
                    None => "Unknown".to_string(),
                })
                .collect(),
        });
    }
    if let Some(refreshed) = es.refresh_time.filter(|t| *t > now + CLOCK_SKEW) {
        found.push(EsFinding::RefreshInFuture { refreshed, now });
    }
    found.extend(generation_finding(es));
    found
}

/// ESO's last sync was of the object's current generation. Only judged when it says Ready (a
/// not-Ready one is not done already); a malformed `syncedResourceVersion` is a bad field.
fn generation_finding(es: &ExternalSecretInfo) -> Option<EsFinding> {
    if es.condition.ready != Some(true) {
        return None;
    }
    match (es.synced_generation, es.generation) {
        (Some(synced), Some(generation)) if synced < generation => {
            Some(EsFinding::GenerationBehind { synced, generation })
        }
        (Some(_), Some(_)) => None,
        (None, _) if es.synced_resource_version.is_some() => None,
        (None, _) => Some(EsFinding::GenerationUnknown {
            missing: "status.syncedResourceVersion",
        }),
        (Some(_), None) => Some(EsFinding::GenerationUnknown {
            missing: "metadata.generation",
        }),
    }
}

/// A template entry for a key the ExternalSecret fetches must read that key's value; else the
/// Secret holds the template's text (ESO renders `template.data` over the fetched data:
/// external-secrets `pkg/controllers/externalsecret/externalsecret_controller_template.go`,
/// `ApplyTemplate`).
fn template_findings(es: &ExternalSecretInfo) -> Vec<EsFinding> {
    es.template
        .iter()
        .filter(|e| es.data.iter().any(|r| *r.secret_key == *e.key))
        .filter(|e| !e.reads.contains(&e.key))
        .map(|e| EsFinding::TemplateStatic { key: e.key.clone() })
        .collect()
}

/// A field read that is not valid in Vault.
fn field_finding(path: &str, field: &str, f: &PathFacts) -> Option<EsFinding> {
    match f.fields.get(field) {
        Some(Status::Valid) | None => None,
        Some(status) => Some(EsFinding::FieldNot {
            path: path.to_string(),
            field: field.to_string(),
            status: *status,
        }),
    }
}

/// Ready, and synced after the newest path it reads was created in Vault.
fn readiness(es: &ExternalSecretInfo, newest_created: Option<OffsetDateTime>) -> Option<EsFinding> {
    match es.condition.ready {
        // `refreshTime` is whole seconds: only a sync before the write's second is before it.
        Some(true) => match (es.refresh_time, newest_created) {
            (Some(refreshed), Some(created)) if before_in_whole_seconds(refreshed, created) => {
                Some(EsFinding::SyncedBeforeSeeding {
                    refreshed,
                    created,
                    created_once: created_once(es),
                })
            }
            (None, _) => Some(EsFinding::NeverSynced),
            _ => None,
        },
        _ => Some(EsFinding::NotReady {
            reason: es.condition.reason.clone(),
            message: es.condition.message.clone(),
        }),
    }
}

/// The target Secret exists with every key the ExternalSecret maps (`wanted`), none empty.
fn target_keys(
    ns: &str,
    es: &ExternalSecretInfo,
    wanted: &[String],
    entries: Option<BTreeMap<String, bool>>,
) -> Vec<EsFinding> {
    let namespace = ns.to_string();
    let secret = es.target_secret.clone();
    let Some(entries) = entries else {
        return vec![EsFinding::TargetMissing { namespace, secret }];
    };
    let mut missing = Vec::new();
    let mut empty = Vec::new();
    for k in wanted {
        match entries.get(k) {
            None if !missing.contains(k) => missing.push(k.clone()),
            Some(true) if !empty.contains(k) => empty.push(k.clone()),
            _ => {}
        }
    }
    let mut found = Vec::new();
    if !missing.is_empty() {
        found.push(EsFinding::TargetLacksKeys {
            namespace: namespace.clone(),
            secret: secret.clone(),
            keys: missing,
        });
    }
    if !empty.is_empty() {
        found.push(EsFinding::TargetEmptyValues {
            namespace,
            secret,
            keys: empty,
        });
    }
    found
}

/// Each provided path, judged from what Vault holds; for one absent or invalid, its provider
/// named and, when the spec declares the provider's PushSecret, that PushSecret's Ready condition
/// and latest Warning event. A failed push sets Ready=False, reason `Errored`, message
/// `set secret failed: could not write remote ref ...: <the store's error>` and records the same
/// as a Warning event (external-secrets `pkg/controllers/pushsecret/pushsecret_controller.go`,
/// `Reconcile`, `errFailedSetSecret`): there Vault's 403 shows when the provider's own policy lacks
/// a grant. A PushSecret that cannot be read is said, never fatal: it is an explanation.
async fn provided_checks(
    cluster: &Cluster,
    targets: &[Target],
    facts: &Facts<'_>,
) -> Vec<ProvidedCheck> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for t in targets {
        let Some(p) = &t.provided else { continue };
        let path = t.full_path();
        if seen.insert(path.clone()) {
            let f = facts.get(&path).unwrap_or_default();
            out.push(provided_check(cluster, path, p, &f).await);
        }
    }
    out
}

/// One provided path's check.
async fn provided_check(
    cluster: &Cluster,
    path: String,
    p: &Provided,
    f: &PathFacts,
) -> ProvidedCheck {
    let wrong = f
        .fields
        .values()
        .find(|s| !matches!(s, Status::Valid | Status::Pending));
    let mut check = ProvidedCheck {
        path: path.clone(),
        provided_by: p.by.clone(),
        ok: wrong.is_none() && !f.fields.is_empty(),
        state: None,
        push_secret: p.push_secret.as_ref().map(|(n, m)| format!("{n}/{m}")),
        ready: None,
        reason: None,
        message: None,
        event: None,
        verdict: Verdict::default().shaped(Shape::EXPLANATIONS),
        stuck: None,
    };
    if check.ok {
        return check;
    }
    check.state = Some(match wrong {
        Some(Status::Invalid) => "invalid",
        Some(Status::Denied) => "unreadable",
        _ => "absent",
    });
    let mut found = Vec::new();
    if let Some((ns, name)) = &p.push_secret {
        push_secret_state(cluster, ns, name, &mut check, &mut found).await;
        let said = [check.message.as_deref(), check.event.as_deref()];
        check.stuck = said
            .into_iter()
            .flatten()
            .find_map(|m| Stuck::in_eso_message(m, &format!("{ns}/{name}")));
    }
    check.verdict = Verdict::of(&found).shaped(Shape::EXPLANATIONS);
    check
}

/// The provider's PushSecret: its Ready condition and its latest Warning event.
async fn push_secret_state(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    check: &mut ProvidedCheck,
    found: &mut Vec<ProvidedFinding>,
) {
    let shown = format!("{ns}/{name}");
    found.push(match cluster.push_secret(ns, name).await {
        Ok(None) => ProvidedFinding::PushMissing {
            shown: shown.clone(),
        },
        Ok(Some(ps)) => {
            check.ready = ps.condition.ready;
            check.reason = ps.condition.reason.clone();
            check.message = ps.condition.message.clone();
            ProvidedFinding::PushState {
                shown: shown.clone(),
                condition: ps.condition,
            }
        }
        Err(e) => ProvidedFinding::PushUnreadable {
            shown: shown.clone(),
            error: e.to_string(),
        },
    });
    match cluster.warning_events(ns, "PushSecret", name).await {
        Ok(events) => {
            if let Some(ev) = events.into_iter().next() {
                let line = format!(
                    "{}: {}",
                    ev.reason.as_deref().unwrap_or_default(),
                    ev.message.as_deref().unwrap_or_default()
                );
                check.event = Some(line.clone());
                // ESO puts the same error in the condition and the event: said once.
                if ev.message.is_none() || ev.message != check.message {
                    found.push(ProvidedFinding::PushEvent { shown, line });
                }
            }
        }
        Err(e) => found.push(ProvidedFinding::EventsUnreadable {
            shown,
            error: e.to_string(),
        }),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An ExternalSecret `ns/app` reading three keys of `ask/app` (other modules' tests use it).
    pub(crate) fn es(ready: Option<bool>, refresh: Option<i64>) -> ExternalSecretInfo {
        let condition = ReadyCondition {
            ready,
            reason: Some("SecretSyncedError".into()),
            message: Some("could not get secret data from provider".into()),
            last_transition_time: None,
        };
        ExternalSecretInfo {
            namespace: "ns".into(),
            name: "app".into(),
            api_version: "external-secrets.io/v1".into(),
            other_ready_conditions: Vec::new(),
            condition,
            refresh_time: refresh.map(|s| OffsetDateTime::from_unix_timestamp(s).unwrap()),
            synced_resource_version: Some("1-abc".into()),
            generation: Some(1),
            synced_generation: Some(1),
            deletion_timestamp: None,
            target_secret: "app-secret".into(),
            store_ref: None,
            data: ["a", "b", "c"]
                .map(|k| RemoteRef {
                    secret_key: k.into(),
                    key: "ask/app".into(),
                    property: None,
                    version: None,
                    decoding: None,
                    as_is: true,
                })
                .to_vec()
                .into(),
            has_data_from: false,
            data_from: Vec::new(),
            template: Vec::new(),
            keeps_fetched: true,
            template_from: false,
            template_type: None,
            refresh_policy: None,
            bad_fields: Vec::new(),
        }
    }

    #[test]
    fn the_state_leads_the_problems_and_a_ready_before_seeding_is_not_ok() {
        let created = OffsetDateTime::from_unix_timestamp(2_000).ok();
        let stale = es(Some(true), Some(1_000));
        let findings = vec![
            EsFinding::TargetMissing {
                namespace: "ns".into(),
                secret: "app-secret".into(),
            },
            readiness(&stale, created).unwrap(),
        ];
        let check = EsCheck::new("ns", "app", Some(stale), findings);
        assert!(!check.ok);
        assert_eq!(check.verdict.problems().len(), 2);
        assert!(check.verdict.problems()[0]
            .starts_with("Ready, but last synced at 1970-01-01T00:16:40Z"));
        assert_eq!(
            check.verdict.problems()[1],
            "target Secret `ns/app-secret` does not exist"
        );
        // Synced after seeding: nothing to say; never synced, or not Ready: said.
        assert!(readiness(&es(Some(true), Some(3_000)), created).is_none());
        assert!(matches!(
            readiness(&es(Some(true), None), created),
            Some(EsFinding::NeverSynced)
        ));
        let not_ready = readiness(&es(None, Some(3_000)), created).unwrap();
        assert_eq!(
            not_ready.message(),
            "not Ready: SecretSyncedError: could not get secret data from provider"
        );
    }

    fn entries(pairs: &[(&str, bool)]) -> Option<BTreeMap<String, bool>> {
        Some(pairs.iter().map(|(k, e)| (k.to_string(), *e)).collect())
    }

    #[test]
    fn a_target_secret_lacking_keys_names_each_missing_key_in_order() {
        let e = es(Some(true), Some(1));
        let wanted: Vec<String> = e.data.iter().map(|r| r.secret_key.to_string()).collect();
        let f = target_keys("ns", &e, &wanted, entries(&[("b", false), ("A", false)]));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity(), Severity::Problem);
        assert_eq!(
            f[0].message(),
            "target Secret `ns/app-secret` lacks key(s) `a`, `c`"
        );
        let all = entries(&[("c", false), ("b", false), ("a", false)]);
        assert!(target_keys("ns", &e, &wanted, all).is_empty());
        // An empty value is not a delivered one.
        let f = target_keys(
            "ns",
            &e,
            &wanted,
            entries(&[("a", true), ("b", false), ("c", true)]),
        );
        assert_eq!(
            f[0].message(),
            "target Secret `ns/app-secret` has empty value(s) for key(s) `a`, `c`"
        );
        assert!(any_problem(&f));
        // Causes and notes never fail an ExternalSecret on their own; an unread target says so.
        let findings = vec![
            EsFinding::Event {
                reason: "UpdateFailed".into(),
                message: "x".into(),
            },
            EsFinding::TargetNotChecked {
                namespace: "ns".into(),
                secret: "app-secret".into(),
            },
        ];
        let check = EsCheck::new("ns", "app", Some(e), findings);
        assert!(check.ok && check.verdict.problems().is_empty());
        assert_eq!(check.verdict.explanations().len(), 1);
        assert!(!check.target_checked);
        assert!(check.verdict.notes()[0].contains("not checked (--skip-target-secrets)"));
    }

    #[test]
    fn a_ready_about_another_generation_a_future_sync_a_conflict_or_a_deletion_is_not_current() {
        let now = OffsetDateTime::from_unix_timestamp(10_000).unwrap();
        let mut e = es(Some(true), Some(9_000));
        assert!(currency(&e, now).is_empty());
        e.generation = Some(3);
        e.synced_generation = Some(2);
        let f = currency(&e, now);
        assert_eq!(f[0].severity(), Severity::Leading);
        assert!(
            f[0].message().contains("synced generation 2"),
            "{}",
            f[0].message()
        );
        e.synced_generation = Some(3);
        // Within the clock skew, fine; beyond it, not a proof of a sync.
        e.refresh_time = Some(now + time::Duration::minutes(4));
        assert!(currency(&e, now).is_empty());
        e.refresh_time = Some(now + time::Duration::minutes(6));
        assert!(matches!(
            currency(&e, now)[..],
            [EsFinding::RefreshInFuture { .. }]
        ));
        e.refresh_time = Some(now);
        let mut other = e.condition.clone();
        other.ready = Some(false);
        e.other_ready_conditions.push(other);
        assert!(currency(&e, now)[0]
            .message()
            .contains("2 `Ready` conditions that disagree (True, False)"));
        e.other_ready_conditions.pop();
        e.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
        assert!(matches!(
            currency(&e, now)[..],
            [EsFinding::Deleting { .. }]
        ));
        e.deletion_timestamp = None;
        e.synced_resource_version = None;
        e.synced_generation = None;
        assert!(matches!(
            currency(&e, now)[..],
            [EsFinding::GenerationUnknown { .. }]
        ));
    }

    fn field(generator: Generator) -> Field {
        Field::new("password", generator)
    }

    fn with_decoding(strategy: &str) -> RemoteRef {
        RemoteRef {
            secret_key: "k".into(),
            key: "ask/app".into(),
            property: Some("password".into()),
            version: None,
            decoding: Some(strategy.into()),
            as_is: true,
        }
    }

    #[test]
    fn a_decoding_is_fine_only_on_values_made_in_that_encoding() {
        let hex = field(Generator::Hex { bytes: 32 });
        let fernet = field(Generator::Fernet);
        let b64 = field(Generator::Base64 {
            bytes: 32,
            url_safe: false,
        });
        for (strategy, f, fine) in [
            ("None", &hex, true),
            ("Base64", &hex, false),
            ("Base64URL", &hex, false),
            // 64 hex characters read as base64: Auto decodes them.
            ("Auto", &hex, false),
            ("Base64URL", &fernet, true),
            ("Base64", &fernet, false),
            ("Auto", &fernet, true),
            ("Base64", &b64, true),
            ("Base64URL", &b64, false),
            ("Auto", &field(Generator::Hex { bytes: 3 }), true),
            ("Auto", &field(Generator::Uuid), false),
            ("Base64", &field(Generator::Any), false),
        ] {
            let found = decoding_finding(&with_decoding(strategy), f);
            assert_eq!(
                found.is_none(),
                fine,
                "{strategy} on {}",
                f.generator.name()
            );
        }
        let f = decoding_finding(&with_decoding("Base64"), &hex).unwrap();
        assert!(
            f.message().contains("generator `hex` makes hex"),
            "{}",
            f.message()
        );
        assert!(matches!(
            decoding_finding(&with_decoding("Base64RawURL"), &hex),
            Some(EsFinding::DecodingUnknown { .. })
        ));
    }

    #[test]
    fn a_pinned_version_must_be_the_current_one() {
        let mut r = with_decoding("None");
        let facts = PathFacts {
            version: Some(2),
            ..PathFacts::default()
        };
        assert!(pinned(&r, &facts).is_none());
        r.version = Some("2".into());
        assert!(pinned(&r, &facts).is_none());
        r.version = Some("1".into());
        let f = pinned(&r, &facts).unwrap();
        assert!(f.message().contains("pins version 1"), "{}", f.message());
        assert!(f.message().contains("current version in Vault is 2"));
        // Not knowing the current version is not a match.
        assert!(pinned(&r, &PathFacts::default()).is_some());
    }

    #[test]
    fn a_template_entry_that_does_not_read_its_key_is_a_note() {
        let mut e = es(Some(true), Some(1));
        e.template = vec![
            crate::kube::TemplateEntry {
                key: "a".into(),
                reads: vec!["a".into()],
                plain: None,
            },
            crate::kube::TemplateEntry {
                key: "b".into(),
                reads: Vec::new(),
                plain: None,
            },
            // Not a fetched key: its text is the template's own business.
            crate::kube::TemplateEntry {
                key: "url".into(),
                reads: Vec::new(),
                plain: None,
            },
        ];
        let f = template_findings(&e);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity(), Severity::Note);
        assert!(f[0].message().contains("entry `b` does not read"));
    }
}

/// The rules of an ExternalSecret's own state, one case per row: what the object says, and the
/// codes found ([`bad_fields`], [`currency`], [`template_findings`], [`readiness`]); in-process,
/// so a rule is tested in milliseconds (the suite's `kube_eso` proves the wiring).
#[cfg(test)]
mod table {
    use super::tests::es;
    use super::*;
    use crate::base::codes::Code;
    use crate::kube::{BadField, FieldProblem, TemplateEntry};

    fn at(s: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(s).unwrap()
    }

    /// Seeded at 2000, now 5000.
    fn codes(es: &ExternalSecretInfo) -> Vec<&'static str> {
        let mut found = bad_fields(es);
        found.extend(currency(es, at(5_000)));
        found.extend(template_findings(es));
        found.extend(readiness(es, Some(at(2_000))));
        found.iter().map(Code::code).collect()
    }

    fn with(f: impl FnOnce(&mut ExternalSecretInfo)) -> ExternalSecretInfo {
        let mut e = es(Some(true), Some(3_000));
        f(&mut e);
        e
    }

    #[test]
    fn the_state_rules_give_their_codes() {
        let cases: Vec<(&str, ExternalSecretInfo, &[&str])> = vec![
            (
                "ready, synced after seeding",
                es(Some(true), Some(3_000)),
                &[],
            ),
            ("not ready", es(Some(false), Some(3_000)), &["not-ready"]),
            ("ready status unknown", es(None, None), &["not-ready"]),
            (
                "ready, never synced",
                es(Some(true), None),
                &["never-synced"],
            ),
            (
                "synced before seeding",
                es(Some(true), Some(1_000)),
                &["synced-before-seeding"],
            ),
            (
                "synced in the write's second",
                es(Some(true), Some(2_000)),
                &[],
            ),
            (
                "older generation synced",
                with(|e| e.generation = Some(2)),
                &["generation-behind"],
            ),
            (
                "synced generation unknown",
                with(|e| {
                    e.synced_generation = None;
                    e.synced_resource_version = None;
                }),
                &["generation-unknown"],
            ),
            (
                "being deleted",
                with(|e| e.deletion_timestamp = Some("1970-01-01T01:00:00Z".into())),
                &["deleting"],
            ),
            (
                "ready conditions disagree",
                with(|e| {
                    let mut other = e.condition.clone();
                    other.ready = Some(false);
                    e.other_ready_conditions.push(other);
                }),
                &["ready-conflict"],
            ),
            (
                "refreshed in the future",
                with(|e| e.refresh_time = Some(at(50_000))),
                &["refresh-in-future"],
            ),
            (
                "a template that ignores the fetched value",
                with(|e| {
                    e.template = vec![TemplateEntry {
                        key: "a".into(),
                        reads: Vec::new(),
                        plain: None,
                    }]
                }),
                &["template-static"],
            ),
            (
                "a field of the wrong type",
                with(|e| {
                    e.bad_fields = vec![BadField::new(
                        "/spec/data/0/remoteRef/key",
                        FieldProblem::Missing,
                    )]
                }),
                &["bad-field"],
            ),
        ];
        for (case, es, want) in cases {
            assert_eq!(codes(&es), want, "{case}");
        }
    }

    /// The JSON keeps its keys, in their order; `findings` is the only one added.
    #[test]
    fn the_json_of_each_object_keeps_its_keys() {
        use crate::verify::findings::json_keys;
        let check = EsCheck::new("ns", "app", Some(es(Some(false), None)), vec![]);
        assert_eq!(
            json_keys(&check),
            [
                "namespace",
                "name",
                "ok",
                "api_version",
                "ready",
                "reason",
                "message",
                "refresh_time",
                "target_secret",
                "target_checked",
                "values_match",
                "problems",
                "explanations",
                "notes",
                "findings",
            ]
        );
        let store = ObjectCheck::new("SecretStore", None, "s".into(), None, vec![]);
        assert_eq!(
            json_keys(&store),
            [
                "kind",
                "namespace",
                "name",
                "ok",
                "reason",
                "problems",
                "notes",
                "findings"
            ]
        );
        let provided = ProvidedCheck {
            path: "secret/a".into(),
            provided_by: "b".into(),
            ok: false,
            state: None,
            push_secret: None,
            ready: None,
            reason: None,
            message: None,
            event: None,
            verdict: Verdict::of(&[ProvidedFinding::PushMissing { shown: "p".into() }])
                .shaped(Shape::EXPLANATIONS),
            stuck: None,
        };
        assert_eq!(
            json_keys(&provided),
            [
                "path",
                "provided_by",
                "ok",
                "state",
                "push_secret",
                "ready",
                "reason",
                "message",
                "event",
                "explanations",
                "findings",
            ]
        );
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify kube: ExternalSecrets",
            &EsFinding::codes(),
            &EsFinding::all_codes(),
        );
        crate::base::codes::assert_documented(
            "verify kube: stores and VSO objects",
            &ObjectFinding::codes(),
            &ObjectFinding::all_codes(),
        );
        crate::base::codes::assert_documented(
            "verify kube: provided paths",
            &ProvidedFinding::codes(),
            &ProvidedFinding::all_codes(),
        );
    }
}
