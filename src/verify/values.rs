//! The part `vault`: each field of each secret, as it is in Vault, judged by its generator.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::Part;
use crate::replace::selector;
use crate::seed::{Inspection, Status};

/// One field's row.
#[derive(Debug, Clone, Serialize)]
pub struct ValueRow {
    /// The full path (`secret/ask/core-service/auh1-dev/X`).
    pub path: String,
    /// The field.
    pub field: String,
    /// Its generator.
    pub generator: String,
    /// What is in Vault.
    pub status: Status,
    /// The secret's current version (KV v2).
    pub version: Option<u64>,
    /// When that version was created (RFC 3339).
    pub created_time: Option<String>,
    /// Why, when there is more to say (never a value).
    pub detail: Option<String>,
    /// The provider, in words, of a path another application provides (never written by
    /// vault-seed); else null.
    pub provided_by: Option<String>,
    /// How `set` names this field (`NAME`, `NAME.FIELD`, or the path when names clash).
    #[serde(skip)]
    pub set_as: String,
}

/// The part's report.
#[derive(Debug, Clone, Serialize)]
pub struct ValuesPart {
    /// Every field is valid (or pending, unless strict).
    pub ok: bool,
    /// Fields per status (`valid`, `pending`, ...).
    pub counts: BTreeMap<&'static str, usize>,
    /// One row per path and field, in spec order.
    pub results: Vec<ValueRow>,
    /// What is not about one path (a `list` fallback).
    pub notes: Vec<String>,
}

impl Part for ValuesPart {
    fn ok(&self) -> bool {
        self.ok
    }
}

/// The part's report from what was read. `shared_names` are the secret names more than one
/// application of the environment uses.
pub fn judge(inspection: &Inspection, strict: bool, shared_names: &BTreeSet<String>) -> ValuesPart {
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut results = Vec::new();
    for p in &inspection.paths {
        for f in &p.fields {
            *counts.entry(f.status.as_str()).or_default() += 1;
            results.push(ValueRow {
                path: p.target.full_path(),
                field: f.field.clone(),
                generator: f.generator.clone(),
                status: f.status,
                version: p.version,
                created_time: p.created_time.clone(),
                detail: f.detail.clone().or_else(|| match &p.target.provided {
                    // vault-seed's marks are not expected on another application's path.
                    Some(_) => None,
                    None => p.detail.clone(),
                }),
                provided_by: p.target.provided.as_ref().map(|x| x.by.clone()),
                set_as: selector(&p.target, &f.field, shared_names),
            });
        }
    }
    ValuesPart {
        ok: results.iter().all(|r| r.status.is_done(strict)),
        counts,
        results,
        notes: inspection.notes.clone(),
    }
}
