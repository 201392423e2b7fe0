//! What happened to each path and field, and the counts.

use serde::Serialize;

use crate::seed::notes::SeedNote;
use crate::spec::Target;
use crate::vault::VaultError;

/// What happened to one field (or, for `plan`, what would happen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A path another application provides, present: read and judged, never written.
    #[serde(rename = "provided-present")]
    ProvidedPresent,
    /// A path another application provides, absent: not vault-seed's to make; waiting for its
    /// provider (does not fail `apply`).
    #[serde(rename = "provided-absent")]
    ProvidedAbsent,
    /// Written where nothing was (`plan`: would be).
    Created,
    /// Present and valid: left alone.
    Exists,
    /// Present but fails its generator's validator: left alone, and the run fails.
    Invalid,
    /// A placeholder still holding its marker: a person has to fill it in.
    Pending,
    /// Written again over a soft-deleted or destroyed latest version.
    Recreated,
    /// Added to a secret that lacked this field; its other fields unchanged.
    Extended,
    /// The token lacks a capability (HTTP 403).
    Denied,
    /// Anything else that failed.
    Error,
    /// Not attempted (interrupted).
    Skipped,
    /// Internal: the field is absent from a live secret (becomes `extended` or an error).
    #[serde(skip)]
    Missing,
}

crate::base::codes::codes!(
    Outcome,
    Outcome {
        ProvidedPresent => "provided-present",
        ProvidedAbsent => "provided-absent",
        Created => "created",
        Exists => "exists",
        Invalid => "invalid",
        Pending => "pending",
        Recreated => "recreated",
        Extended => "extended",
        Denied => "denied",
        Error => "error",
        Skipped => "skipped",
        Missing => "missing",
    }
);

impl Outcome {
    /// The word for reports; `plan` speaks of what would happen.
    pub fn label(self, dry_run: bool) -> &'static str {
        match (self, dry_run) {
            (Outcome::Created, false) => "created",
            (Outcome::Created, true) => "create",
            (Outcome::Recreated, false) => "recreated",
            (Outcome::Recreated, true) => "recreate",
            (Outcome::Extended, false) => "extended",
            (Outcome::Extended, true) => "extend",
            (Outcome::Exists, _) => "exists",
            (Outcome::Invalid, _) => "invalid",
            (Outcome::Pending, _) => "pending",
            (Outcome::Denied, _) => "denied",
            (Outcome::Error, _) => "error",
            (Outcome::Skipped, _) => "skipped",
            (Outcome::Missing, _) => "missing",
            (Outcome::ProvidedPresent, _) => "provided-present",
            (Outcome::ProvidedAbsent, _) => "provided-absent",
        }
    }

    /// The verb recorded in custom_metadata.
    pub fn verb(self) -> &'static str {
        self.label(false)
    }

    /// Whether it makes the run fail (exit 1).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Outcome::Invalid
                | Outcome::Denied
                | Outcome::Error
                | Outcome::Skipped
                | Outcome::Missing
        )
    }
}

/// One field's result.
#[derive(Debug, Clone, Serialize)]
pub struct FieldResult {
    /// The field's name.
    pub field: String,
    /// Its generator (`hex(bytes=32)`, `fernet`).
    pub generator: String,
    /// What happened.
    pub outcome: Outcome,
    /// Why, when there is more to say (never a value).
    pub detail: Option<String>,
}

/// One path's result.
#[derive(Debug, Clone)]
pub struct PathResult {
    /// The target.
    pub target: Target,
    /// The secret's version after the run (KV v2), when known.
    pub version: Option<u64>,
    /// Per field.
    pub fields: Vec<FieldResult>,
    /// Whether vault-seed wrote to the path in this run.
    pub written: bool,
    /// A note about the whole path.
    pub detail: Option<String>,
    /// The path failed because Vault was unreachable, timing out or sealed.
    pub vault_unavailable: bool,
    /// When the secret's current version was created (RFC 3339), when it was read.
    pub created_time: Option<String>,
    /// Fields the live secret holds that its spec does not name (a likely rename), as stored;
    /// never those of a provided secret, whose provider writes what it likes.
    pub unnamed: Vec<String>,
}

/// The secrets of a run that hold fields no spec names, gathered for one note: the first few
/// named, the rest counted (a platform may have thousands).
#[derive(Debug, Default)]
pub struct Unnamed {
    /// `path (`a`, `b`)` of the first few.
    shown: Vec<String>,
    /// How many secrets in all.
    count: usize,
}

impl Unnamed {
    /// The most secrets named in the note.
    const SHOWN: usize = 5;
    /// The most field names shown for one secret.
    const FIELDS: usize = 3;

    /// Count `r` when its secret holds fields no spec names.
    pub fn add(&mut self, r: &PathResult) {
        if r.unnamed.is_empty() {
            return;
        }
        self.count += 1;
        if self.shown.len() < Self::SHOWN {
            let mut names: Vec<String> = r
                .unnamed
                .iter()
                .take(Self::FIELDS)
                .map(|n| format!("`{}`", crate::base::text::quoted(n)))
                .collect();
            if r.unnamed.len() > Self::FIELDS {
                names.push(format!("{} more", r.unnamed.len() - Self::FIELDS));
            }
            self.shown
                .push(format!("`{}` ({})", r.target.full_path(), names.join(", ")));
        }
    }

    /// The note, when some secret holds such fields.
    pub fn note(&self) -> Option<SeedNote> {
        if self.count == 0 {
            return None;
        }
        Some(SeedNote::UnnamedFields {
            shown: self.shown.clone(),
            more: self.count - self.shown.len(),
        })
    }
}

/// Map a Vault error to an outcome and a message that names the path and what is missing.
pub(crate) fn error_outcome(e: &VaultError) -> (Outcome, String) {
    match e {
        VaultError::Denied { capability, path } => (
            Outcome::Denied,
            format!("the token lacks `{capability}` on `{path}`"),
        ),
        other => (Outcome::Error, other.to_string()),
    }
}

impl PathResult {
    /// Every field with the same outcome.
    pub fn all(t: &Target, outcome: Outcome, version: Option<u64>, detail: Option<String>) -> Self {
        PathResult {
            target: t.clone(),
            version: version.filter(|v| *v > 0),
            fields: t
                .fields
                .iter()
                .map(|f| FieldResult {
                    field: f.name.clone(),
                    generator: f.generator.to_string(),
                    outcome,
                    detail: None,
                })
                .collect(),
            written: false,
            detail,
            vault_unavailable: false,
            created_time: None,
            unnamed: Vec::new(),
        }
    }

    /// From a failed request. `while_writing` says whether the write itself failed, in which case
    /// nothing was written (Vault applies a write whole or not at all).
    pub fn from_error(t: &Target, e: &VaultError, while_writing: bool) -> Self {
        let (o, d) = error_outcome(e);
        let d = if while_writing {
            format!("{d}; nothing was written")
        } else {
            d
        };
        let mut r = PathResult::all(t, o, None, Some(d));
        r.vault_unavailable = e.is_unavailable();
        r
    }

    /// Mark as written in this run.
    pub fn written(mut self) -> Self {
        self.written = true;
        self
    }
}

/// Whether field `name` of `fields` holds no real value once made: a placeholder's or
/// `import`'s marker, or a value made from one in the same secret (a template of the Harbor
/// robot's name). One made from another secret's field is not judged here.
fn made_pending(fields: &[crate::spec::Field], name: &str) -> bool {
    fn at(fields: &[crate::spec::Field], name: &str, depth: usize) -> bool {
        let Some(f) = fields.iter().find(|f| f.name == name) else {
            return false;
        };
        if f.generator.is_placeholder() {
            return true;
        }
        // The loader refuses cycles; the bound keeps a mistake there from recursing forever.
        depth < fields.len()
            && f.generator.derived().is_some_and(|d| {
                d.inputs()
                    .iter()
                    .any(|r| r.secret.is_none() && at(fields, &r.field, depth + 1))
            })
    }
    at(fields, name, 0)
}

/// Counts per outcome, over fields.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Paths in the run.
    pub paths: usize,
    /// Fields in the run.
    pub fields: usize,
    /// Fields created (`plan`: to create).
    pub created: usize,
    /// Fields present and valid.
    pub exists: usize,
    /// Fields present but invalid.
    pub invalid: usize,
    /// Placeholders not yet filled in, and what is made from them: those found and those
    /// written in this run (`created`, `recreated`, `extended` count the latter too).
    pub pending: usize,
    /// Of `pending`, those written in this run (`plan`: to be written).
    pub pending_written: usize,
    /// Fields recreated over a deleted version.
    pub recreated: usize,
    /// Fields added to an existing secret.
    pub extended: usize,
    /// Fields the token may not touch.
    pub denied: usize,
    /// Fields that failed otherwise.
    pub error: usize,
    /// Fields not attempted (interrupted).
    pub skipped: usize,
    /// Paths written in this run.
    pub written_paths: usize,
    /// Fields of provided paths (another application's) that are present.
    pub provided_present: usize,
    /// Fields of provided paths that are absent: waiting for their provider.
    pub provided_absent: usize,
}

impl Summary {
    /// Count one path's result.
    pub fn add(&mut self, p: &PathResult) {
        let s = self;
        s.paths += 1;
        s.written_paths += usize::from(p.written);
        for f in &p.fields {
            s.fields += 1;
            if matches!(
                f.outcome,
                Outcome::Created | Outcome::Recreated | Outcome::Extended
            ) && made_pending(&p.target.fields, &f.field)
            {
                s.pending += 1;
                s.pending_written += 1;
            }
            match f.outcome {
                Outcome::Created => s.created += 1,
                Outcome::Exists => s.exists += 1,
                Outcome::Invalid => s.invalid += 1,
                Outcome::Pending => s.pending += 1,
                Outcome::Recreated => s.recreated += 1,
                Outcome::Extended => s.extended += 1,
                Outcome::Denied => s.denied += 1,
                Outcome::Error | Outcome::Missing => s.error += 1,
                Outcome::Skipped => s.skipped += 1,
                Outcome::ProvidedPresent => s.provided_present += 1,
                Outcome::ProvidedAbsent => s.provided_absent += 1,
            }
        }
    }

    /// Whether anything failed.
    pub fn failed(&self) -> bool {
        self.invalid + self.denied + self.error + self.skipped > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_the_documented_ones() {
        for o in [
            Outcome::Created,
            Outcome::Exists,
            Outcome::Pending,
            Outcome::Recreated,
            Outcome::Extended,
            Outcome::ProvidedPresent,
            Outcome::ProvidedAbsent,
        ] {
            assert!(!o.is_failure(), "{o:?}");
        }
        for o in [
            Outcome::Invalid,
            Outcome::Denied,
            Outcome::Error,
            Outcome::Skipped,
        ] {
            assert!(o.is_failure(), "{o:?}");
        }
    }

    #[test]
    fn provided_outcomes_have_their_json_names() {
        for (o, name) in [
            (Outcome::ProvidedPresent, "provided-present"),
            (Outcome::ProvidedAbsent, "provided-absent"),
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), name);
            assert_eq!(o.label(true), name);
            assert_eq!(o.label(false), name);
        }
    }

    #[test]
    fn plan_labels_are_verbs() {
        assert_eq!(Outcome::Created.label(true), "create");
        assert_eq!(Outcome::Created.label(false), "created");
        assert_eq!(Outcome::Exists.label(true), "exists");
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "apply and plan",
            &Outcome::codes(),
            &Outcome::all_codes(),
        );
    }
}
