//! `vault-seed gen`: print one fresh value. The one place a value is printed, on purpose.

use crate::app::cli::GenArgs;
use crate::generate::{Generator, Params, Syntax};
use crate::report::generated::Generated;

use super::Failure;

pub(super) fn run(a: &GenArgs) -> Result<Generated, Failure> {
    let params = Params {
        name: &a.generator,
        bytes: a.bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
        length: a.length.map(|l| i64::try_from(l).unwrap_or(i64::MAX)),
        classes: (!a.classes.is_empty()).then_some(a.classes.as_slice()),
        marker: a.marker.as_deref(),
        bits: a.bits.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
        alg: a.alg.as_deref(),
    };
    let generator = Generator::from_params(&params, Syntax::Flag)?;
    let value = generator
        .generate()
        .map_err(|e| Failure::new(e.to_string()))?;
    Ok(Generated {
        generator: generator.name().to_string(),
        value,
    })
}
