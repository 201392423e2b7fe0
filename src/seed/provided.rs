//! Paths another application provides (a spec's `provided_by`) in `plan` and `apply`: read and
//! judged like `verify` reads them ([`super::inspect`]), never written. Present is
//! `provided-present` (with why, when its validator refuses the value); absent or deleted is
//! `provided-absent`, which does not fail the run: making it is its provider's work.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::{inspect, FieldResult, Options, Outcome, PathResult, PathState, Progress, Run, Status};
use crate::mounts::Mounts;
use crate::spec::Target;
use crate::vault::Vault;

/// Seed the targets vault-seed owns with the engine; read and judge the provided ones. The
/// results are in the targets' order.
pub(super) async fn run(
    vault: &Vault,
    detected: &Mounts,
    targets: &[Target],
    opts: &Options,
    cancel: Arc<AtomicBool>,
    progress: &Progress,
) -> Run {
    let (provided, own): (Vec<Target>, Vec<Target>) =
        targets.iter().cloned().partition(|t| t.provided.is_some());
    let mut run = if own.is_empty() {
        Run {
            paths: Vec::new(),
            notes: detected.notes.clone(),
            interrupted: false,
        }
    } else {
        Box::pin(super::pipeline(
            vault,
            std::future::ready(detected),
            0,
            &own,
            opts,
            cancel.clone(),
            progress,
        ))
        .await
    };
    let read = inspect(vault, detected, &provided, opts.concurrency).await;
    for _ in &read.paths {
        progress();
    }
    run.notes.extend(read.notes);
    run.paths.extend(read.paths.into_iter().map(result));
    // Spec order: by each target's place in `targets` (paths are unique in an environment).
    let place: std::collections::HashMap<String, usize> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| (t.full_path(), i))
        .collect();
    run.paths.sort_by_key(|p| {
        place
            .get(&p.target.full_path())
            .copied()
            .unwrap_or(usize::MAX)
    });
    run
}

/// A provided path's state as `apply` reports it.
fn result(p: PathState) -> PathResult {
    let by = p
        .target
        .provided
        .as_ref()
        .map(|x| x.by.clone())
        .unwrap_or_default();
    let fields =
        p.fields
            .into_iter()
            .map(|f| {
                let (outcome, detail) = match f.status {
                    Status::Valid | Status::Pending => (Outcome::ProvidedPresent, None),
                    Status::Invalid => (
                        Outcome::ProvidedPresent,
                        Some(format!(
                        "present, but {}; vault-seed never changes it: tell its provider ({by})",
                        f.detail.as_deref().unwrap_or("not in its validator's format")
                    )),
                    ),
                    Status::Missing => (Outcome::ProvidedAbsent, None),
                    Status::Deleted => (
                        Outcome::ProvidedAbsent,
                        Some("its latest version is deleted".to_string()),
                    ),
                    Status::Denied => (Outcome::Denied, f.detail),
                    Status::Error => (Outcome::Error, f.detail),
                    Status::Skipped => (Outcome::Skipped, f.detail),
                };
                FieldResult {
                    field: f.field,
                    generator: f.generator,
                    outcome,
                    detail,
                }
            })
            .collect();
    PathResult {
        target: p.target,
        version: p.version,
        fields,
        written: false,
        // "present, not marked": vault-seed's marks are not expected on another's path.
        detail: p.detail.filter(|d| !d.starts_with("present, not marked")),
        vault_unavailable: false,
        created_time: p.created_time,
    }
}
