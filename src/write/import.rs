//! `import`'s engine: copy into Vault the value a component wrote to a Kubernetes Secret, for
//! each `from_secret = "NAMESPACE/NAME:KEY"` field ([`Generator::FromSecret`]).
//!
//! The Secret's key is read through the real kube client ([`Cluster::secret_value`]) and
//! held as a [`SecretString`] from the moment it is decoded; it is compared with Vault's value
//! without either being shown. What may be written is the gate's ([`crate::gate`]) to decide;
//! writes use [`crate::write::replace::write`]: check-and-set with
//! the version read (`cas=0` for a path that does not exist yet, holding only the imported
//! fields; `apply` adds the others, as it adds any field a live secret lacks).
//!
//! `verify`'s part `imports` reads the Secrets with [`read_source`] too.

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;

use crate::base::kv::KvMount;
use crate::gate::{self, Held, Intent};
use crate::generate::Generator;
use crate::kube::{Cluster, SecretKey};
use crate::seed;
use crate::spec::mounts::Mounts;
use crate::spec::{Field, Target};
use crate::vault::{FieldValue, Vault, VaultError};
use crate::write::replace::{self, ChangeError};

/// A `from_secret` field: where its value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source<'a> {
    /// The Secret's namespace.
    pub namespace: &'a str,
    /// The Secret's name.
    pub name: &'a str,
    /// The key of its `data`.
    pub key: &'a str,
}

impl Source<'_> {
    /// The field's source, if it is a `from_secret` field.
    pub fn of(field: &Field) -> Option<Source<'_>> {
        match &field.generator {
            Generator::FromSecret {
                namespace,
                name,
                key,
            } => Some(Source {
                namespace,
                name,
                key,
            }),
            _ => None,
        }
    }

    /// `namespace/name`.
    pub fn secret(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Whether a field of `t` is a `from_secret` field.
pub fn imports_into(t: &Target) -> bool {
    t.fields.iter().any(|f| Source::of(f).is_some())
}

/// Whether a field of any of `targets` is a `from_secret` field.
pub fn any(targets: &[Target]) -> bool {
    targets.iter().any(imports_into)
}

/// Why a Secret's key gave no value to import or compare. Each reads as a sentence; none holds
/// a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The Secret does not exist (yet).
    NoSecret {
        /// `namespace/name`.
        secret: String,
        /// The key.
        key: String,
    },
    /// The Secret has no such key (yet).
    NoKey {
        /// `namespace/name`.
        secret: String,
        /// The key.
        key: String,
    },
    /// The key's value is empty.
    Empty {
        /// `namespace/name`.
        secret: String,
        /// The key.
        key: String,
    },
    /// The key's value is not UTF-8 text.
    NotText {
        /// `namespace/name`.
        secret: String,
        /// The key.
        key: String,
    },
    /// The Secret could not be read (403, unreachable...): the error, cleaned by the kube
    /// module.
    Unreadable {
        /// The error.
        error: String,
    },
}

impl Unavailable {
    /// Whether it is "not checked" (the Secret could not be read), not "not done" (the value
    /// is not there yet, or cannot go into Vault).
    pub fn unreadable(&self) -> bool {
        matches!(self, Unavailable::Unreadable { .. })
    }

    /// The sentence.
    pub fn message(&self) -> String {
        match self {
            Unavailable::NoSecret { secret, key } => format!(
                "Secret `{secret}` does not exist yet, so has no key `{key}` (the component writes it after deploy)"
            ),
            Unavailable::NoKey { secret, key } => format!(
                "Secret `{secret}` has no key `{key}` yet (the component writes it after deploy)"
            ),
            Unavailable::Empty { secret, key } => {
                format!("key `{key}` of Secret `{secret}` is empty")
            }
            Unavailable::NotText { secret, key } => format!(
                "key `{key}` of Secret `{secret}` is not UTF-8 text; Vault's fields hold strings"
            ),
            Unavailable::Unreadable { error } => error.clone(),
        }
    }
}

/// Read `source`'s value from the cluster; registered for redaction as soon as it is read.
pub async fn read_source(
    cluster: &Cluster,
    source: &Source<'_>,
) -> Result<SecretString, Unavailable> {
    let (secret, key) = (source.secret(), source.key.to_string());
    match cluster
        .secret_value(source.namespace, source.name, source.key)
        .await
    {
        Ok(SecretKey::Value(v)) => {
            crate::base::redact::register(&v);
            Ok(v)
        }
        Ok(SecretKey::NoSecret) => Err(Unavailable::NoSecret { secret, key }),
        Ok(SecretKey::NoKey) => Err(Unavailable::NoKey { secret, key }),
        Ok(SecretKey::Empty) => Err(Unavailable::Empty { secret, key }),
        Ok(SecretKey::NotText) => Err(Unavailable::NotText { secret, key }),
        Err(e) => Err(Unavailable::Unreadable {
            error: e.to_string(),
        }),
    }
}

/// What `import` did with one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The field was absent and is now the Secret's value.
    Imported,
    /// The field held the import marker (or, with `--force`, another value) and now holds the
    /// Secret's value.
    Replaced,
    /// The field already holds the Secret's value: nothing written.
    Exists,
    /// The field holds another value; not replaced without `--force`.
    Refused,
    /// `--dry-run`: would be imported.
    WouldImport,
    /// `--dry-run`: would be replaced.
    WouldReplace,
    /// Nothing written: the value is not there yet, or cannot be written.
    NotDone,
    /// The Secret (or Vault's value) could not be read.
    NotChecked,
}

impl Outcome {
    /// The word shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Imported => "imported",
            Outcome::Replaced => "replaced",
            Outcome::Exists => "exists",
            Outcome::Refused => "refused",
            Outcome::WouldImport => "would-import",
            Outcome::WouldReplace => "would-replace",
            Outcome::NotDone => "not-done",
            Outcome::NotChecked => "not-checked",
        }
    }

    /// Whether the field is where it should be (or would be).
    pub fn ok(self) -> bool {
        !matches!(
            self,
            Outcome::Refused | Outcome::NotDone | Outcome::NotChecked
        )
    }
}

/// One field's result. Never holds a value.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The secret's full path.
    pub path: String,
    /// The field.
    pub field: String,
    /// The Secret read: `namespace/name`.
    pub secret: String,
    /// Its key.
    pub key: String,
    /// What was done.
    pub outcome: Outcome,
    /// The version read (KV v2), if the path existed.
    pub old_version: Option<u64>,
    /// The version written (KV v2).
    pub new_version: Option<u64>,
    /// Why, when there is more to say.
    pub detail: Option<String>,
}

/// How to import.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// Replace a different value.
    pub force: bool,
    /// Write nothing.
    pub dry_run: bool,
}

/// Import every `from_secret` field of `targets` whose mount is in `mounts`, one path at a
/// time; a row per field, in spec order.
pub async fn run(
    vault: &Vault,
    cluster: &Cluster,
    mounts: &Mounts,
    targets: &[Target],
    req: Request,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for t in targets {
        let fields: Vec<(&Field, Source<'_>)> = t
            .fields
            .iter()
            .filter_map(|f| Source::of(f).map(|s| (f, s)))
            .collect();
        if fields.is_empty() {
            continue;
        }
        let mut path_rows: Vec<Row> = fields
            .iter()
            .map(|(f, s)| Row {
                path: t.full_path(),
                field: f.name.clone(),
                secret: s.secret(),
                key: s.key.to_string(),
                outcome: Outcome::NotDone,
                old_version: None,
                new_version: None,
                detail: None,
            })
            .collect();
        match (&t.provided, mounts.get(t.mount())) {
            (Some(p), _) => all(
                &mut path_rows,
                Outcome::NotDone,
                format!(
                    "provided by another application ({}): vault-seed never writes it",
                    p.by
                ),
            ),
            (None, None) => {
                let why = mounts.errors.get(t.mount()).cloned().unwrap_or_default();
                all(&mut path_rows, Outcome::NotDone, why)
            }
            (None, Some(mount)) => {
                let at = At {
                    vault,
                    cluster,
                    mounts,
                    mount,
                };
                import_path(&at, t, &fields, req, &mut path_rows).await
            }
        }
        rows.extend(path_rows);
    }
    rows
}

fn all(rows: &mut [Row], outcome: Outcome, detail: String) {
    for r in rows {
        r.outcome = outcome;
        r.detail = Some(detail.clone());
    }
}

/// Where one path's import reads and writes: Vault, the cluster, the usable mounts (for the
/// sources of its derived fields) and the path's own mount.
struct At<'a> {
    vault: &'a Vault,
    cluster: &'a Cluster,
    mounts: &'a Mounts,
    mount: &'a KvMount,
}

/// One path: read Vault's version, each field's Secret, decide, and write the fields to write
/// in one check-and-set request, with the fields of the secret made from them made again.
#[allow(clippy::too_many_lines)] // its steps in the order they run; split when it next changes
async fn import_path(
    at: &At<'_>,
    t: &Target,
    fields: &[(&Field, Source<'_>)],
    req: Request,
    rows: &mut [Row],
) {
    let (vault, cluster, mount) = (at.vault, at.cluster, at.mount);
    let held = match vault.kv_read(mount, &t.path).await {
        Ok(existing) => Held::of(existing),
        Err(e) => return all(rows, Outcome::NotChecked, e.to_string()),
    };
    let intent = Intent::Import { force: req.force };
    let mut writes: Vec<(String, SecretString)> = Vec::new();
    let mut written: Vec<usize> = Vec::new();
    for (i, (f, source)) in fields.iter().enumerate() {
        let row = &mut rows[i];
        row.old_version = Some(held.version).filter(|v| *v > 0 && held.live);
        let value = match read_source(cluster, source).await {
            Ok(v) => v,
            Err(why) => {
                row.outcome = match why.unreadable() {
                    true => Outcome::NotChecked,
                    false => Outcome::NotDone,
                };
                row.detail = Some(why.message());
                continue;
            }
        };
        let decided = decide(t, f, &held, &value, intent);
        row.outcome = decided.0;
        row.detail = decided.1;
        if matches!(row.outcome, Outcome::Imported | Outcome::Replaced) {
            writes.push((f.name.clone(), value));
            written.push(i);
        }
    }
    if writes.is_empty() {
        return;
    }
    let not_done = |rows: &mut [Row], why: String| {
        for &i in &written {
            rows[i].outcome = Outcome::NotDone;
            rows[i].detail = Some(why.clone());
        }
    };
    match follow(at, t, &held, &writes).await {
        Ok(made) => writes.extend(made),
        Err(why) => return not_done(rows, why),
    }
    let approved = match gate::check(t, &held, intent, writes) {
        Ok(a) => a,
        Err(refused) => {
            let why = refused
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            for &i in &written {
                rows[i].outcome = Outcome::Refused;
                rows[i].detail = Some(format!("{why}; nothing was written"));
            }
            return;
        }
    };
    if req.dry_run {
        for &i in &written {
            rows[i].outcome = match rows[i].outcome {
                Outcome::Imported => Outcome::WouldImport,
                _ => Outcome::WouldReplace,
            };
        }
        return;
    }
    match replace::write(vault, mount, t, &held, &approved, "import").await {
        Ok(v) => {
            for &i in &written {
                rows[i].new_version = Some(v).filter(|v| *v > 0);
            }
        }
        Err(e) => {
            let why = match e {
                ChangeError::Vault(VaultError::CasMismatch { .. }) => format!(
                    "the secret changed after vault-seed read it (version {}); nothing was written: run the import again",
                    held.version
                ),
                e => format!("{e}; nothing was written"),
            };
            not_done(rows, why);
        }
    }
}

/// The fields of `t` made from the imported ones (a template of the PAT, a copy, a bcrypt hash),
/// made again from the new values for the same write, as `set` does: a derived field is never
/// left made from a value that is no longer there. Err: why nothing may be written.
async fn follow(
    at: &At<'_>,
    t: &Target,
    current: &Held,
    writes: &[(String, SecretString)],
) -> Result<Vec<(String, SecretString)>, String> {
    // Only a stored field can be left stale: one not written yet (the path is new, or another
    // secret it reads had no value) is made by the next `apply` from the imported value.
    let moved = t.fields.iter().any(|f| {
        current.fields.contains_key(&f.name)
            && f.generator.derived().is_some_and(|d| {
                d.inputs()
                    .iter()
                    .any(|r| r.secret.is_none() && writes.iter().any(|(n, _)| *n == r.field))
            })
    });
    if !moved {
        return Ok(Vec::new());
    }
    let sources = seed::source_mounts(t, at.mounts)?;
    let outside = seed::read_sources(at.vault, &sources).await?;
    seed::follow(t, &current.fields, writes, &[], &outside)
        .map_err(|e| format!("`{}`: {e}", t.full_path()))
}

/// What to do with field `f` of `t`, which Vault holds as `held`, given the Secret's `value`:
/// the gate's word on the value alone ([`gate::refuse_value`]); the whole write is checked
/// again with what follows it.
fn decide(
    t: &Target,
    f: &Field,
    held: &Held,
    value: &SecretString,
    intent: Intent,
) -> (Outcome, Option<String>) {
    let old = match held.fields.get(&f.name) {
        Some(FieldValue::Text(v)) => Some(v),
        _ => None,
    };
    // Asked first: a Secret holding the marker itself is refused even where Vault holds it too.
    let refused = gate::refuse_value(t, held, intent, &f.name, value);
    if !refused.is_empty() {
        let why = refused
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        let why = match refused
            .iter()
            .any(|r| matches!(r.rule, gate::Rule::RealValue { .. }))
        {
            true => format!("{why}; pass --force to replace it"),
            false => why,
        };
        return (Outcome::Refused, Some(why));
    }
    if old.is_some_and(|v| v.expose_secret() == value.expose_secret()) {
        return (
            Outcome::Exists,
            Some("Vault already holds the Secret's value".into()),
        );
    }
    match old {
        None => (Outcome::Imported, None),
        Some(v) if f.validate(v) == crate::generate::Validity::Pending => (
            Outcome::Replaced,
            Some("Vault held the import marker".into()),
        ),
        Some(_) => (
            Outcome::Replaced,
            Some(
                "Vault held a different value (--force); the old one stays in KV v2 history".into(),
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::generate::IMPORT_MARKER;

    const PAT: &str = "zitadel-pat-Tq8vLw3nXe5RkZ1m";
    const OTHER: &str = "a-pat-someone-set-9Kd2";

    fn from_secret(name: &str) -> Field {
        Field::new(
            name,
            Generator::FromSecret {
                namespace: "ask".into(),
                name: "zitadel-admin-pat".into(),
                key: "pat".into(),
            },
        )
    }

    /// `secret/app/dev/S` with the import field `pat` and a uuid `client`.
    fn target(fixed: bool) -> Target {
        let mut t = crate::write::replace::tests::target("app", "S", &["client"]);
        let mut fields = t.fields.to_vec();
        fields.insert(0, from_secret("pat"));
        t.fields = Arc::from(fields);
        t.fixed = fixed;
        t
    }

    fn held(pat: Option<&str>) -> Held {
        Held {
            version: 3,
            live: true,
            fields: pat
                .map(|v| ("pat".to_string(), FieldValue::Text(SecretString::from(v))))
                .into_iter()
                .collect(),
            ..Held::default()
        }
    }

    /// What `import` does with the Secret's value, given what Vault holds: imported where the
    /// field is absent, the marker replaced, the same value left alone, another real value
    /// replaced only with `--force` and a fixed one never, the marker itself never imported.
    #[test]
    fn what_import_writes_and_what_it_refuses() {
        use Outcome::*;
        // (case, Vault holds, the Secret holds, `--force`, a fixed secret, outcome, detail)
        type Case<'a> = (
            &'a str,
            Option<&'a str>,
            &'a str,
            bool,
            bool,
            Outcome,
            Option<&'a str>,
        );
        #[rustfmt::skip]
        let cases: &[Case<'_>] = &[
            ("absent field",           None,                PAT,           false, false, Imported, None),
            ("the same value",         Some(PAT),           PAT,           false, false, Exists,   Some("already holds")),
            ("the marker apply wrote", Some(IMPORT_MARKER), PAT,           false, false, Replaced, Some("import marker")),
            ("another real value",     Some(OTHER),         PAT,           false, false, Refused,  Some("pass --force")),
            ("another, --force",       Some(OTHER),         PAT,           true,  false, Replaced, Some("(--force)")),
            ("the Secret's marker",    None,                IMPORT_MARKER, false, false, Refused,  Some("marker")),
            ("both hold the marker",   Some(IMPORT_MARKER), IMPORT_MARKER, true,  false, Refused,  Some("marker")),
            ("fixed, --force",         Some(OTHER),         PAT,           true,  true,  Refused,  Some("fixed")),
            ("fixed, the same",        Some(PAT),           PAT,           false, true,  Exists,   None),
        ];
        for &(case, vault, secret, force, fixed, want, detail) in cases {
            let t = target(fixed);
            let value = SecretString::from(secret);
            let intent = Intent::Import { force };
            let (got, why) = decide(&t, &t.fields[0], &held(vault), &value, intent);
            assert_eq!(got, want, "{case}: {why:?}");
            let why = why.unwrap_or_default();
            if let Some(d) = detail {
                assert!(why.contains(d), "{case}: {why}");
            }
            // `--force` is offered only where it would help, and no value is ever named.
            assert_eq!(
                why.contains("--force") && got == Refused,
                detail == Some("pass --force"),
                "{case}: {why}"
            );
            assert!(!why.contains(PAT) && !why.contains(OTHER), "{case}: {why}");
        }
    }

    /// A Secret that is not there yet, lacks the key, or holds nothing usable is "not done";
    /// only a Secret that could not be read is "not checked". Each sentence names the Secret
    /// and the key.
    #[test]
    fn a_missing_value_is_not_done_and_an_unreadable_secret_not_checked() {
        let (secret, key) = ("ask/zitadel-admin-pat".to_string(), "pat".to_string());
        let unavailable = [
            Unavailable::NoSecret {
                secret: secret.clone(),
                key: key.clone(),
            },
            Unavailable::NoKey {
                secret: secret.clone(),
                key: key.clone(),
            },
            Unavailable::Empty {
                secret: secret.clone(),
                key: key.clone(),
            },
            Unavailable::NotText {
                secret: secret.clone(),
                key: key.clone(),
            },
        ];
        for u in &unavailable {
            assert!(!u.unreadable(), "{u:?}");
            let m = u.message();
            assert!(
                m.contains("`ask/zitadel-admin-pat`") && m.contains("`pat`"),
                "{m}"
            );
        }
        let forbidden = Unavailable::Unreadable {
            error: "forbidden: cannot get secrets".into(),
        };
        assert!(forbidden.unreadable());
        assert_eq!(forbidden.message(), "forbidden: cannot get secrets");
    }

    /// Which outcomes leave the run done, and the word shown is the JSON's.
    #[test]
    fn refused_not_done_and_not_checked_fail_the_run() {
        use Outcome::*;
        for (o, ok) in [
            (Imported, true),
            (Replaced, true),
            (Exists, true),
            (WouldImport, true),
            (WouldReplace, true),
            (Refused, false),
            (NotDone, false),
            (NotChecked, false),
        ] {
            assert_eq!(o.ok(), ok, "{o:?}");
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str(), "{o:?}");
        }
    }

    #[test]
    fn only_from_secret_fields_are_imported() {
        let t = target(false);
        let sources: Vec<Source<'_>> = t.fields.iter().filter_map(Source::of).collect();
        assert_eq!(
            sources,
            [Source {
                namespace: "ask",
                name: "zitadel-admin-pat",
                key: "pat"
            }]
        );
        assert_eq!(sources[0].secret(), "ask/zitadel-admin-pat");
        let plain = crate::write::replace::tests::target("app", "U", &["client"]);
        assert!(imports_into(&t) && !imports_into(&plain));
        assert!(any(&[plain.clone(), t]) && !any(&[plain]));
    }
}
