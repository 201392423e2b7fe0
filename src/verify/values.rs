//! The part `vault`: each field of each secret, as it is in Vault, judged by its generator.
//!
//! The part keeps the targets (moved from the plan, not copied) and what [`crate::seed::inspect`]
//! kept: one compact state per path ([`crate::seed::Found`]); a field's row, with its path,
//! field and generator as text, is made when it is shown ([`ValuesPart::rows`]), so 100,000 paths never hold 100,000 rows of copied
//! strings.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::findings::{Coded, Finding, Severity};
use super::Part;
use crate::seed::notes::SeedNote;
use crate::seed::{Inspection, Status};
use crate::spec::Target;
use crate::write::replace::selector;

/// One field's row, made when it is shown: borrowed from the part, never held.
#[derive(Debug, Serialize)]
pub struct ValueRow<'a> {
    /// The full path (`secret/ask/core-service/auh1-dev/X`).
    pub path: String,
    /// The field.
    pub field: &'a str,
    /// Its generator.
    pub generator: String,
    /// What is in Vault.
    pub status: Status,
    /// The secret's current version (KV v2).
    pub version: Option<u64>,
    /// When that version was created (RFC 3339).
    pub created_time: Option<Cow<'a, str>>,
    /// Why, when there is more to say (never a value).
    pub detail: Option<&'a str>,
    /// The provider, in words, of a path another application provides (never written by
    /// vault-seed); else null.
    pub provided_by: Option<&'a str>,
    #[serde(skip)]
    target: &'a Target,
    #[serde(skip)]
    shared_names: &'a BTreeSet<String>,
}

impl ValueRow<'_> {
    /// How `set` names this field (`NAME`, `NAME.FIELD`, or the path when names clash).
    pub fn set_as(&self) -> String {
        selector(self.target, self.field, self.shared_names)
    }

    /// The field's generator in the spec.
    fn generator_of(&self) -> Option<&crate::generate::Generator> {
        let field = self.target.fields.iter().find(|f| f.name == self.field);
        field.map(|f| &f.generator)
    }

    /// Whether the field's value comes from a Kubernetes Secret (`from_secret`): `import`
    /// fills it, not `set`.
    pub fn is_imported(&self) -> bool {
        matches!(
            self.generator_of(),
            Some(crate::generate::Generator::FromSecret { .. })
        )
    }

    /// Whether a person must fill it in before the first sync (`needed = "before-sync"`).
    pub fn before_sync(&self) -> bool {
        let field = self.target.fields.iter().find(|f| f.name == self.field);
        field.is_some_and(|f| f.before_sync)
    }

    /// Whether the field is made from others (pending on them, not filled in by a person).
    pub fn is_derived(&self) -> bool {
        self.generator_of().is_some_and(|g| g.derived().is_some())
    }
}

/// The part's report.
#[derive(Debug)]
pub struct ValuesPart {
    /// Every field is valid (or pending, unless strict).
    pub ok: bool,
    /// Fields per status (`valid`, `pending`, ...).
    pub counts: BTreeMap<&'static str, usize>,
    /// What is not about one path (a `list` fallback).
    pub notes: Vec<String>,
    /// The same sentences with their codes ([`crate::seed::notes::SeedNote`]).
    pub findings: Vec<Coded>,
    /// The targets the states point into.
    targets: Vec<Target>,
    /// The states kept, in the order of the rows (its notes are moved to `notes`).
    found: Inspection,
    /// The secret names more than one application of the environment uses (for `set_as`).
    shared_names: BTreeSet<String>,
}

impl Part for ValuesPart {
    fn ok(&self) -> bool {
        self.ok
    }
}

impl ValuesPart {
    /// One row per path and field, in spec order (a target on a mount that cannot be used
    /// after the others).
    pub fn rows(&self) -> impl Iterator<Item = ValueRow<'_>> + '_ {
        let found = &self.found;
        found.paths.iter().flat_map(move |p| {
            let t = &self.targets[p.target()];
            t.fields
                .iter()
                .zip(found.fields(p))
                .map(move |(spec, f)| ValueRow {
                    path: t.full_path(),
                    field: &spec.name,
                    generator: spec.generator.to_string(),
                    status: f.status,
                    version: p.version(),
                    created_time: found.created_time(p),
                    detail: found.detail(f.detail).or(match &t.provided {
                        // vault-seed's marks are not expected on another application's path.
                        Some(_) => None,
                        None => found.detail(p.detail),
                    }),
                    provided_by: t.provided.as_ref().map(|x| x.by.as_str()),
                    target: t,
                    shared_names: &self.shared_names,
                })
        })
    }

    /// The number of rows (fields).
    pub fn fields(&self) -> usize {
        self.counts.values().sum()
    }
}

/// The seeding engine's notes, as this part's `findings`: all notes, the verdict is the paths'.
impl Finding for SeedNote {
    fn severity(&self) -> Severity {
        Severity::Note
    }

    fn message(&self) -> String {
        SeedNote::message(self)
    }
}

/// The JSON object `{"ok", "counts", "results", "notes", "findings"}`, its rows serialised one at a time.
impl Serialize for ValuesPart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Rows<'a>(&'a ValuesPart);
        impl Serialize for Rows<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.fields()))?;
                for row in self.0.rows() {
                    seq.serialize_element(&row)?;
                }
                seq.end()
            }
        }
        let mut o = s.serialize_struct("ValuesPart", 5)?;
        o.serialize_field("ok", &self.ok)?;
        o.serialize_field("counts", &self.counts)?;
        o.serialize_field("results", &Rows(self))?;
        o.serialize_field("notes", &self.notes)?;
        o.serialize_field("findings", &self.findings)?;
        o.end()
    }
}

/// The part's report from what was read, taking over the targets `inspection` points into.
/// `shared_names` are the secret names more than one application of the environment uses.
pub fn judge(
    mut inspection: Inspection,
    targets: Vec<Target>,
    strict: bool,
    shared_names: BTreeSet<String>,
) -> ValuesPart {
    let counted = || Status::ALL.into_iter().map(|s| (s, inspection.count(s)));
    let counts: BTreeMap<&'static str, usize> = counted()
        .filter(|&(_, n)| n > 0)
        .map(|(s, n)| (s.as_str(), n))
        .collect();
    let ok = counted().all(|(s, n)| n == 0 || s.is_done(strict));
    let (notes, findings) = super::findings::said(&std::mem::take(&mut inspection.notes));
    ValuesPart {
        ok,
        counts,
        notes,
        findings,
        targets,
        found: inspection,
        shared_names,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::seed::{Outcome, PathResult};

    fn target(app: &str, fields: &[&str]) -> Target {
        crate::write::replace::tests::target(app, "A", fields)
    }

    /// `t` read at version 3, unmarked, each field with its outcome.
    fn result(t: &Target, outcomes: &[Outcome]) -> PathResult {
        let mut r = PathResult::all(
            t,
            Outcome::Exists,
            Some(3),
            Some("present, not marked (no vault-seed custom_metadata)".into()),
        );
        r.created_time = Some("2026-11-30T16:27:41.5Z".into());
        for (f, &o) in r.fields.iter_mut().zip(outcomes) {
            f.outcome = o;
        }
        r
    }

    /// What `inspect` keeps of `results` (the result for target `i` at `i`), as it keeps them.
    pub(crate) fn inspected(results: Vec<PathResult>) -> Inspection {
        let fields = results.iter().map(|r| r.fields.len()).sum();
        let mut inspection = Inspection::new(results.len(), fields);
        for (i, r) in results.into_iter().enumerate() {
            inspection.add(i, r);
        }
        inspection
    }

    /// The part keeps one compact state per path and the targets it was given (moved, not
    /// copied); each row is made from them when shown: its field's name is the target's own
    /// string, not a copy. Before, every row held its own copies of the path, field, generator,
    /// time and detail, next to an inspection holding a copy of every target.
    #[test]
    fn a_row_is_made_from_the_targets_when_shown_and_the_part_holds_no_copy_of_them() {
        let targets = vec![target("a", &["x", "y"]), target("b", &["value"])];
        let names: Vec<*const u8> = targets
            .iter()
            .flat_map(|t| t.fields.iter().map(|f| f.name.as_ptr()))
            .collect();
        let inspection = inspected(vec![
            result(&targets[0], &[Outcome::Exists, Outcome::Missing]),
            result(&targets[1], &[Outcome::Pending]),
        ]);
        let part = judge(inspection, targets, false, BTreeSet::new());
        assert!(!part.ok, "a missing field");
        assert_eq!(part.fields(), 3);
        let rows: Vec<ValueRow<'_>> = part.rows().collect();
        let shown: Vec<(&str, &str, Status)> = rows
            .iter()
            .map(|r| (r.path.as_str(), r.field, r.status))
            .collect();
        assert_eq!(
            shown,
            [
                ("secret/a/dev/A", "x", Status::Valid),
                ("secret/a/dev/A", "y", Status::Missing),
                ("secret/b/dev/A", "value", Status::Pending),
            ]
        );
        let row_names: Vec<*const u8> = rows.iter().map(|r| r.field.as_ptr()).collect();
        assert_eq!(row_names, names, "a row's field is its target's own name");
        assert_eq!(rows[2].set_as(), "A");
        assert_eq!(rows[0].generator, "uuid");
    }

    /// The part's verdict and counts are over every field: a pending field fails only with
    /// `--strict`, and a valid path still counts.
    #[test]
    fn the_counts_and_verdict_are_over_every_field() {
        let targets = vec![target("a", &["x"]), target("b", &["value"])];
        for (strict, ok) in [(false, true), (true, false)] {
            let inspection = inspected(vec![
                result(&targets[0], &[Outcome::Exists]),
                result(&targets[1], &[Outcome::Pending]),
            ]);
            let part = judge(inspection, targets.clone(), strict, BTreeSet::new());
            assert_eq!(part.ok, ok, "strict {strict}");
            assert_eq!(part.counts, BTreeMap::from([("pending", 1), ("valid", 1)]));
            assert_eq!(part.fields(), 2);
            assert_eq!(part.rows().count(), 2);
        }
    }

    /// The JSON object keeps its keys and their order (`ok`, `counts`, `results`, `notes`), each
    /// row's too, though rows are now made while they are serialised.
    #[test]
    fn the_json_of_the_part_is_the_documented_object_with_its_rows_in_order() {
        let t = target("a", &["value"]);
        let mut inspection = inspected(vec![result(&t, &[Outcome::Pending])]);
        inspection.notes.push(SeedNote::NoMetadata);
        let part = judge(inspection, vec![t], true, BTreeSet::new());
        let json = String::from_utf8(crate::report::json(&part)).unwrap();
        let keys: Vec<&str> = json
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix('"')?.split_once("\":"))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(
            keys,
            [
                "ok",
                "counts",
                "pending",
                "results",
                "path",
                "field",
                "generator",
                "status",
                "version",
                "created_time",
                "detail",
                "provided_by",
                "notes",
                "findings",
                "code",
                "message",
                "severity"
            ],
            "{json}"
        );
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            doc,
            serde_json::json!({
                "ok": false,
                "counts": {"pending": 1},
                "results": [{
                    "path": "secret/a/dev/A",
                    "field": "value",
                    "generator": "uuid",
                    "status": "pending",
                    "version": 3,
                    "created_time": "2026-11-30T16:27:41.5Z",
                    "detail": "present, not marked (no vault-seed custom_metadata)",
                    "provided_by": null
                }],
                "notes": [SeedNote::NoMetadata.message()],
                "findings": [{
                    "code": "no-metadata",
                    "message": SeedNote::NoMetadata.message(),
                    "severity": "note"
                }]
            })
        );
    }
}
