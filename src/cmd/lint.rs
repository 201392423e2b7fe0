//! `vault-seed lint`: validate every spec offline.

use crate::app::cli::GlobalArgs;
use crate::report::specs::LintReport;

use super::Failure;

pub(super) fn run(g: &GlobalArgs) -> Result<LintReport, Failure> {
    let set = super::load_specs(g)?;
    Ok(LintReport::of(&set))
}
