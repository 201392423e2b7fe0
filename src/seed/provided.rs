//! Paths another application provides (a spec's `provided_by`) in `plan` and `apply`: read and
//! judged like `verify` reads them ([`super::inspect`]), never written. Present is
//! `provided-present` (with why, when its validator refuses the value); absent or deleted is
//! `provided-absent`, which does not fail the run: making it is its provider's work.
//!
//! They go through the same pipeline as the paths vault-seed owns ([`super::run`]), under the
//! same concurrency limit and after the same gate: their folder's LIST goes out with the others',
//! and each present one is read as soon as that LIST is in, while the owned paths are written.

use super::inspect::{self, PathState, Status};
use super::{FieldResult, Outcome, PathResult};
use crate::base::kv::KvMount;
use crate::spec::Target;
use crate::vault::Vault;

/// Read and judge the provided `t` (absent without a request when its folder's LIST lacks it).
/// `vault_unavailable` is set when the read found Vault gone, for the pipeline to start no more
/// work.
pub(super) async fn read(
    vault: &Vault,
    mount: &KvMount,
    t: &Target,
    known_absent: bool,
) -> PathResult {
    let read = inspect::read_known(vault, mount, t, known_absent, &Default::default()).await;
    let down = read.vault_unavailable;
    let mut r = result(PathState::from(read));
    r.vault_unavailable = down;
    r
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
        unnamed: Vec::new(),
    }
}
