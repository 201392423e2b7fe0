//! The write gate: every write to Vault's KV data is decided here, whichever command makes it.
//!
//! A command says what it means to do ([`Intent`]), what Vault holds at the path ([`Held`], read
//! just before), and the values it wants to write. [`check`] returns the whole data to write
//! ([`Approved`]) or every rule the write would break ([`Refusal`]); [`write`] sends only an
//! approved write, with check-and-set against the version read, so a writer in between is never
//! overwritten. Commands keep no write rule of their own: `apply`'s create and extend, `set`,
//! `rotate`, `import`, the follow-ups of copies and templates and `move` all ask here, so a rule
//! fixed once holds for every command.
//!
//! The rules:
//! - a path another application provides is never written;
//! - a fixed value that exists never changes; a fixed secret is created whole, only by `apply`
//!   (or `move`), and never gains a field (its value may be stored under another name); nothing
//!   is added beside a fixed field that is missing;
//! - a real value (not a marker) is replaced only by `set --force`, `import --force`, `rotate`
//!   or a follow-up of its source; a marker never replaces a real value, and a value a person
//!   or the cluster gives is never a marker, nor one the field's check refuses (a keyring longer
//!   than its `keep` included);
//! - an input never gets a new value while a stored value made from its old one stays: the write
//!   that changes it makes those again (`set`, `rotate`, `import` do), or it is refused (`apply`
//!   never makes a key under an existing certificate);
//! - a secret with a field that is not a string is not rewritten (the field would be lost).

mod refusal;

use std::collections::BTreeMap;

use secrecy::{ExposeSecret, SecretString};

pub use refusal::{FixedBy, Refusal, Rule};

use crate::base::kv::{KvMount, KvVersion};
use crate::generate::Validity;
use crate::spec::{Field, Target};
use crate::vault::{Existing, FieldValue, Present, Vault, VaultError, WriteFields};

/// What a command means to do with the fields it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// `apply`: an absent (or deleted) path, every field made.
    Create,
    /// `apply`: the fields a live path lacks, made; the others unchanged.
    Extend,
    /// `set`: a value a person gives; `force` replaces a real one.
    Set {
        /// `--force`.
        force: bool,
    },
    /// `rotate --yes`: fresh values from the generators.
    Rotate,
    /// `import`: the value a component wrote to a Kubernetes Secret; `force` replaces another.
    Import {
        /// `--force`.
        force: bool,
    },
    /// A copy or template made again after its source in another secret changed.
    Follow,
    /// `move`: a secret's data copied from the path it was at before the layout changed.
    Move,
}

impl Intent {
    /// Whether the values come from outside vault-seed (a person, the cluster, an old path):
    /// they must pass the field's check and may not be a marker.
    fn given(self) -> bool {
        matches!(
            self,
            Intent::Set { .. } | Intent::Import { .. } | Intent::Move
        )
    }

    /// Whether the intent may replace a real value.
    fn replaces(self) -> bool {
        matches!(
            self,
            Intent::Set { force: true }
                | Intent::Import { force: true }
                | Intent::Rotate
                | Intent::Follow
        )
    }

    /// Whether the command makes again, in the same write, the stored fields made from the
    /// fields it changes.
    fn rederives(self) -> bool {
        matches!(
            self,
            Intent::Set { .. } | Intent::Rotate | Intent::Import { .. } | Intent::Follow
        )
    }
}

/// What Vault holds at the path, read just before the write.
#[derive(Debug, Default)]
pub struct Held {
    /// The version to check-and-set against: the live one, the deleted one, or 0 (never written).
    pub version: u64,
    /// Whether a live version is there (not absent, not deleted).
    pub live: bool,
    /// The live version's fields.
    pub fields: BTreeMap<String, FieldValue>,
    /// The custom metadata (KV v2), kept when vault-seed marks the path again.
    pub custom_metadata: BTreeMap<String, String>,
    /// When the live version was created (RFC 3339, KV v2).
    pub created_time: Option<String>,
}

impl Held {
    /// What a read found.
    pub fn of(existing: Existing) -> Held {
        match existing {
            Existing::Absent => Held::default(),
            Existing::Deleted {
                version,
                custom_metadata,
            } => Held {
                version,
                custom_metadata,
                ..Held::default()
            },
            Existing::Present(p) => Held::live(p),
        }
    }

    /// A live version.
    pub fn live(p: Present) -> Held {
        Held {
            version: p.version,
            live: true,
            fields: p.fields,
            custom_metadata: p.custom_metadata,
            created_time: p.created_time,
        }
    }

    /// The text of `field`, if it holds text.
    fn text(&self, field: &str) -> Option<&SecretString> {
        match self.fields.get(field) {
            Some(FieldValue::Text(v)) => Some(v),
            _ => None,
        }
    }
}

/// A write the gate allowed: the whole data of the new version, and the version it replaces.
/// Only [`check`] makes one, and only [`write`] sends one.
pub struct Approved {
    path: Box<str>,
    data: Vec<(String, SecretString)>,
    version: u64,
    live: bool,
}

impl Approved {
    /// The version the write checks-and-sets against.
    pub fn base_version(&self) -> u64 {
        self.version
    }
}

/// The refusals the spec alone decides, before anything is read: `intent` on `fields` of `t`.
pub fn refuse_by_spec(t: &Target, intent: Intent, fields: &[&Field]) -> Vec<Refusal> {
    explain(t, rules_by_spec(t, intent, fields))
}

/// Each rule with the spec's reason for its field (or, for a rule on the whole secret, the
/// reason its fields share), from `t`.
fn explain(t: &Target, rules: Vec<Rule>) -> Vec<Refusal> {
    rules
        .into_iter()
        .map(|rule| {
            let reason = match rule.field() {
                Some(name) => t.fields.iter().find(|f| f.name == name),
                None => t.fields.first(),
            }
            .and_then(|f| f.reason.clone());
            let reason = reason.filter(|_| t.provided.is_none());
            Refusal { rule, reason }
        })
        .collect()
}

/// Which key of the spec makes field `f` of `t` fixed.
fn fixed_by(t: &Target, f: &Field) -> FixedBy {
    match (t.fixed, f.rotation) {
        (true, _) => FixedBy::Secret,
        (false, crate::spec::Rotation::Fixed) => FixedBy::Field,
        (false, _) => FixedBy::Never,
    }
}

/// [`refuse_by_spec`]'s rules.
fn rules_by_spec(t: &Target, intent: Intent, fields: &[&Field]) -> Vec<Rule> {
    let path = t.full_path();
    if let Some(p) = &t.provided {
        return vec![Rule::Provided {
            path,
            by: p.by.to_string(),
        }];
    }
    let mut out = Vec::new();
    for f in fields {
        let field = f.name.clone();
        match intent {
            Intent::Set { .. } => {
                if let Some(d) = f.generator.derived() {
                    out.push(Rule::Derived {
                        path: path.clone(),
                        field,
                        how: d.describe(),
                    });
                }
            }
            Intent::Rotate => {
                if t.is_fixed(f) {
                    out.push(Rule::FixedChanges {
                        path: path.clone(),
                        field,
                        by: fixed_by(t, f),
                    });
                } else if f.generator.is_placeholder() {
                    out.push(Rule::PlaceholderRotates {
                        path: path.clone(),
                        field,
                    });
                } else if f.rotation == crate::spec::Rotation::Unstated && f.generator.keys_data() {
                    out.push(Rule::RotationUnstated {
                        path: path.clone(),
                        field,
                        masterkey: f.generator == crate::generate::Generator::Masterkey,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The refusals of changing `fields` of `t` from `held` with `intent`, whatever the new values
/// turn out to be: what `plan` predicts and what `set` asks before reading a value. [`check`]
/// asks the same rules again with the values.
pub fn refuse_change(t: &Target, held: &Held, intent: Intent, fields: &[String]) -> Vec<Refusal> {
    explain(t, rules_change(t, held, intent, fields))
}

/// [`refuse_change`]'s rules.
fn rules_change(t: &Target, held: &Held, intent: Intent, fields: &[String]) -> Vec<Rule> {
    let mut out = rules_by_spec(t, intent, &named(t, fields));
    if t.provided.is_some() {
        return out;
    }
    out.extend(refuse_by_held(t, held, intent));
    out.extend(refuse_fields(t, held, intent, fields, false));
    if !intent.rederives() {
        out.extend(stale(t, held, fields, &[]));
    }
    out
}

/// The fields of `t` among `names` (a name the spec does not give is left out).
fn named<'t>(t: &'t Target, names: &[String]) -> Vec<&'t Field> {
    names
        .iter()
        .filter_map(|n| t.fields.iter().find(|f| f.name == *n))
        .collect()
}

/// The rules on the secret as a whole: a field that is not a string (rewriting would lose it);
/// a fixed secret that does not exist, which only `apply` (or `move`) creates, whole.
fn refuse_by_held(t: &Target, held: &Held, intent: Intent) -> Option<Rule> {
    let path = t.full_path();
    if held.live {
        held.fields.iter().find_map(|(k, v)| match v {
            FieldValue::NotText(kind) => Some(Rule::NotText {
                path: path.clone(),
                field: k.clone(),
                kind: kind.to_string(),
            }),
            FieldValue::Text(_) => None,
        })
    } else if t.fixed && !matches!(intent, Intent::Create | Intent::Move) {
        Some(Rule::FixedNotCreated { path })
    } else {
        None
    }
}

/// The rules on each of `fields` against what is held: a fixed value never changes, a fixed
/// secret (or field) is never added to a live secret, nothing is added beside a missing fixed
/// field, a real value is replaced only by an intent that may. `remade`: the fields are made
/// again from a changed input in the same write (only the fixed rules hold for them).
fn refuse_fields(
    t: &Target,
    held: &Held,
    intent: Intent,
    fields: &[String],
    remade: bool,
) -> Vec<Rule> {
    let path = t.full_path();
    let mut out = Vec::new();
    let missing_fixed = t
        .fields
        .iter()
        .find(|f| t.is_fixed(f) && !held.fields.contains_key(&f.name));
    for f in fields
        .iter()
        .filter_map(|n| t.fields.iter().find(|f| f.name == *n))
    {
        let field = f.name.clone();
        match held.fields.get(&f.name) {
            None if held.live && t.is_fixed(f) => out.push(Rule::FixedLacks {
                path: path.clone(),
                field,
                holds: held.fields.keys().cloned().collect(),
                whole: t.fixed,
            }),
            None if held.live => {
                if let Some(fixed) = missing_fixed {
                    out.push(Rule::BesideMissingFixed {
                        path: path.clone(),
                        field,
                        fixed: fixed.name.clone(),
                    });
                }
            }
            None | Some(FieldValue::NotText(_)) => {}
            Some(FieldValue::Text(old)) => {
                if f.validate(old) == Validity::Pending {
                    // A marker is no value: filling it in is what it is there for.
                    continue;
                }
                if t.is_fixed(f) {
                    out.push(Rule::FixedChanges {
                        path: path.clone(),
                        field,
                        by: fixed_by(t, f),
                    });
                } else if !remade && !intent.replaces() {
                    out.push(Rule::RealValue {
                        path: path.clone(),
                        field,
                        version: held.version,
                    });
                }
            }
        }
    }
    out
}

/// For each of `changed`, the stored fields of `t` made from it that the write leaves as they
/// are (not among `written`): they would disagree with the new value.
fn stale(t: &Target, held: &Held, changed: &[String], written: &[String]) -> Vec<Rule> {
    let path = t.full_path();
    let mut out = Vec::new();
    for input in changed {
        let derived: Vec<String> = t
            .fields
            .iter()
            .filter(|d| {
                held.fields.contains_key(&d.name)
                    && !written.contains(&d.name)
                    && !changed.contains(&d.name)
                    && d.generator.derived().is_some_and(|how| {
                        how.inputs()
                            .iter()
                            .any(|r| r.secret.is_none() && r.field == *input)
                    })
            })
            .map(|d| d.name.clone())
            .collect();
        if !derived.is_empty() {
            out.push(Rule::DerivedStale {
                path: path.clone(),
                input: input.clone(),
                derived,
            });
        }
    }
    out
}

/// The gate's decision on writing `values` into `t` over `held` with `intent`: the new
/// version's whole data (the fields held and not written kept as they are), or every rule the
/// write would break. A value equal to the one held is no change and breaks no rule.
pub fn check(
    t: &Target,
    held: &Held,
    intent: Intent,
    values: Vec<(String, SecretString)>,
) -> Result<Approved, Vec<Refusal>> {
    let changed: Vec<String> = values
        .iter()
        .filter(|(n, v)| {
            held.text(n)
                .is_none_or(|old| old.expose_secret() != v.expose_secret())
        })
        .map(|(n, _)| n.clone())
        .collect();
    // The values the command gives, and the fields made again from them (derived fields
    // following a changed input): only the fixed rules hold for the latter.
    let derived = |n: &String| {
        t.fields
            .iter()
            .any(|f| f.name == *n && f.generator.derived().is_some())
    };
    let (remade, given): (Vec<String>, Vec<String>) = changed.iter().cloned().partition(derived);
    let mut out = rules_by_spec(t, intent, &named(t, &given));
    if t.provided.is_none() {
        out.extend(refuse_by_held(t, held, intent));
        out.extend(refuse_fields(t, held, intent, &given, false));
        out.extend(refuse_fields(t, held, intent, &remade, true));
        let written: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
        out.extend(stale(t, held, &changed, &written));
    }
    for (name, value) in values.iter().filter(|(n, _)| changed.contains(n)) {
        out.extend(refuse_value_only(t, held, intent, name, value));
    }
    if !out.is_empty() {
        let mut seen = Vec::new();
        out.retain(|r| {
            let new = !seen.contains(r);
            seen.push(r.clone());
            new
        });
        return Err(explain(t, out));
    }
    let mut data: Vec<(String, SecretString)> = held
        .fields
        .iter()
        .filter(|(k, _)| !values.iter().any(|(n, _)| n == *k))
        .filter_map(|(k, v)| match v {
            FieldValue::Text(s) => Some((k.clone(), s.clone())),
            FieldValue::NotText(_) => None,
        })
        .collect();
    data.extend(values);
    Ok(Approved {
        path: t.path.clone(),
        data,
        version: held.version,
        live: held.live,
    })
}

/// The refusals of writing `value` into field `name` of `t` over `held` with `intent`, on
/// its own: `import` and `set` judge each value with it before the whole write is made and
/// [`check`]ed. Empty when the value is the one held, unless it is a marker a person or the
/// cluster gives as if it were a value (a mistake to say, though it changes nothing).
pub fn refuse_value(
    t: &Target,
    held: &Held,
    intent: Intent,
    name: &str,
    value: &SecretString,
) -> Vec<Refusal> {
    if held
        .text(name)
        .is_some_and(|old| old.expose_secret() == value.expose_secret())
    {
        return explain(
            t,
            refuse_value_only(t, &Held::default(), intent, name, value)
                .into_iter()
                .collect(),
        );
    }
    let mut out = rules_change(t, held, intent, &[name.to_string()]);
    out.extend(refuse_value_only(t, held, intent, name, value));
    explain(t, out)
}

/// The rules on the value itself: a field of the spec, not a marker where a real value is or
/// is given, passing the field's check. A derived value is made, not judged here.
fn refuse_value_only(
    t: &Target,
    held: &Held,
    intent: Intent,
    name: &str,
    value: &SecretString,
) -> Option<Rule> {
    let path = t.full_path();
    let Some(f) = t.fields.iter().find(|f| f.name == name) else {
        return (intent != Intent::Move).then(|| Rule::Invalid {
            path,
            field: name.to_string(),
            why: "is not a field of the spec".into(),
            expected: "field the spec names".into(),
        });
    };
    if f.generator.derived().is_some() {
        return None;
    }
    let held_real = held
        .text(name)
        .is_some_and(|old| f.validate(old) != Validity::Pending);
    match f.validate(value) {
        Validity::Valid => None,
        Validity::Pending if held_real || intent.given() => Some(Rule::Marker {
            path,
            field: name.to_string(),
            over_real: held_real,
        }),
        Validity::Pending => None,
        Validity::Invalid(why) => Some(Rule::Invalid {
            path,
            field: name.to_string(),
            why,
            expected: f.generator.describe(),
        }),
    }
}

/// The refusal of making `source` anew (it is absent) while another secret holds fields made
/// from its old values: `followers` are the secrets whose derived fields read it, each with
/// what Vault holds at its path.
pub fn refuse_stale_followers(source: &Target, followers: &[(&Target, Held)]) -> Vec<Refusal> {
    let all: Vec<String> = source.fields.iter().map(|f| f.name.clone()).collect();
    let mut out: Vec<Rule> = Vec::new();
    for (f, held) in followers {
        for (g, fields) in followers_of(std::slice::from_ref(*f), source, &all) {
            let stored: Vec<String> = fields
                .into_iter()
                .filter(|n| held.live && held.fields.contains_key(n))
                .collect();
            if !stored.is_empty() {
                out.push(Rule::FollowerStale {
                    path: source.full_path(),
                    follower: g.full_path(),
                    fields: stored,
                });
            }
        }
    }
    explain(source, out)
}

/// A change of `source`'s fields `changed` that a fixed secret's copy or template would have to
/// follow: refused before anything is written, since that secret never changes.
pub fn refuse_followers(targets: &[Target], source: &Target, changed: &[String]) -> Vec<Refusal> {
    followers_of(targets, source, changed)
        .into_iter()
        .filter(|(f, _)| f.fixed)
        .flat_map(|(f, fields)| {
            let rule = Rule::FixedFollows {
                path: f.full_path(),
                fields,
                source: source.full_path(),
            };
            explain(f, vec![rule])
        })
        .collect()
}

/// The targets of `targets` with a derived field made from a field of `source` in `changed`:
/// each with those fields. They follow a change of `source` in the same run.
pub fn followers_of<'t>(
    targets: &'t [Target],
    source: &Target,
    changed: &[String],
) -> Vec<(&'t Target, Vec<String>)> {
    let mut out = Vec::new();
    for t in targets {
        let Some(sources) = &t.sources else {
            continue;
        };
        let names: Vec<&str> = sources
            .iter()
            .filter(|s| *s.mount == *source.mount() && s.path == source.path)
            .map(|s| &*s.name)
            .collect();
        if names.is_empty() {
            continue;
        }
        let fields: Vec<String> = t
            .fields
            .iter()
            .filter(|f| {
                f.generator.derived().is_some_and(|d| {
                    d.inputs().iter().any(|r| {
                        r.secret.as_deref().is_some_and(|s| names.contains(&s))
                            && changed.contains(&r.field)
                    })
                })
            })
            .map(|f| f.name.clone())
            .collect();
        if !fields.is_empty() {
            out.push((t, fields));
        }
    }
    out
}

/// Send an approved write: the whole data, with check-and-set against the version read (`cas=0`
/// for a path never written), so a change made since the read is refused by Vault itself, never
/// overwritten (KV v1 has no check-and-set: its callers read back). Returns the new version.
pub async fn write(vault: &Vault, mount: &KvMount, a: &Approved) -> Result<u64, VaultError> {
    let fields = WriteFields(a.data.iter().map(|(k, v)| (k.as_str(), v)).collect());
    let capability = if a.live { "update" } else { "create" };
    vault
        .kv_write(mount, &a.path, &fields, mount.cas(a.version), capability)
        .await
}

/// Mark `t`'s path as vault-seed's, recording `action` ([`custom_metadata`]), over the custom
/// metadata `base` read with it. KV v1 has none: nothing is sent.
pub async fn mark(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
    action: &str,
    base: BTreeMap<String, String>,
) -> Result<(), VaultError> {
    if mount.version != KvVersion::V2 {
        return Ok(());
    }
    let meta = custom_metadata(t, action, base);
    vault.kv_set_custom_metadata(mount, &t.path, &meta).await
}

/// Mark the path a secret was moved from (`move`): its custom metadata (`base`, as read) gains
/// `vault-seed/moved-to` = the new full path. Its data is never touched, and nothing is deleted.
pub async fn mark_moved(
    vault: &Vault,
    mount: &KvMount,
    old: &str,
    new_full: &str,
    mut base: BTreeMap<String, String>,
) -> Result<(), VaultError> {
    if mount.version != KvVersion::V2 {
        return Ok(());
    }
    base.insert("vault-seed/moved-to".into(), new_full.into());
    vault.kv_set_custom_metadata(mount, old, &base).await
}

/// vault-seed's custom_metadata: who manages the secret and from which spec. Never
/// `managed-by=external-secrets`, which would let an ESO PushSecret take the path over.
pub fn custom_metadata(
    t: &Target,
    action: &str,
    mut base: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let generators = t
        .fields
        .iter()
        .map(|f| format!("{}={}", f.name, f.generator.name()))
        .collect::<Vec<_>>()
        .join(",");
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    base.insert("managed-by".into(), "vault-seed".into());
    base.insert(
        "vault-seed/spec".into(),
        t.spec_file()
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    base.insert("vault-seed/generators".into(), generators);
    // Spec, environment and secret name a secret whatever its path: a layout change finds the
    // secret made before it ([`crate::seed::layout`]).
    if !t.env().is_empty() {
        base.insert("vault-seed/env".into(), t.env().into());
    }
    base.insert("vault-seed/secret".into(), t.name.to_string());
    base.insert("vault-seed/last-action".into(), action.into());
    base.insert("vault-seed/last-action-at".into(), now);
    base
}

#[cfg(test)]
mod tests;
