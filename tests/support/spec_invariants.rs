//! What the spec loader promises for any input, checked by the property tests
//! (`tests/suite/spec_props.rs`) and by the fuzz target (`fuzz/fuzz_targets/spec_loader.rs`), so that
//! `cargo test` and `cargo fuzz` hold it to the same rules:
//!
//! - it never panics, whatever the bytes;
//! - every problem has a `file:line:col` location, also for text that is not UTF-8;
//! - what it keeps and prints is proportional to the input: each rendered problem is small (a
//!   window of the source line, user text elided) and there are at most a few per input byte.

use std::path::PathBuf;

use vault_seed::report::{diagnostics, Style};
use vault_seed::spec::{load_sources, Diagnostic, LoadError};

/// The most bytes one rendered problem may take (message, location, a window of the source line,
/// the caret, help).
pub const MAX_RENDERED: usize = 4096;

/// Load `data` as the one spec file `specs/fuzz.toml`, check the promises, return the problems.
pub fn check(data: &[u8]) -> Vec<Diagnostic> {
    let diags = match load_sources(
        vec![(PathBuf::from("specs/fuzz.toml"), data.to_vec())],
        Vec::new(),
    ) {
        Ok(_) => return Vec::new(),
        Err(LoadError::Invalid(d)) => d,
        Err(other) => panic!("unexpected error kind: {other}"),
    };
    // The three missing top-level tables of an empty file, then at most one per input byte.
    assert!(
        diags.len() <= data.len() + 3,
        "{} problems for {} bytes",
        diags.len(),
        data.len()
    );
    let style = Style::plain();
    for d in &diags {
        let loc = d.location.as_ref();
        assert!(loc.is_some(), "a problem without a location: {d}");
        let loc = loc.unwrap();
        assert!(loc.line >= 1 && loc.col >= 1, "{d}");
        let shown = diagnostics::render(d, &style);
        assert!(
            shown.len() <= MAX_RENDERED,
            "a problem rendered in {} bytes: {}",
            shown.len(),
            shown.chars().take(400).collect::<String>()
        );
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "a control character reaches the terminal: {shown:?}"
        );
    }
    diags
}
