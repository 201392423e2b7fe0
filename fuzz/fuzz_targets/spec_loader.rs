//! The spec loader, fed arbitrary bytes: the promises of `tests/support/spec_invariants.rs`
//! (never a panic, every problem located, output proportional to the input), the same ones the
//! property tests check on every `cargo test`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/spec_invariants.rs"]
mod invariants;

fuzz_target!(|data: &[u8]| {
    invariants::check(data);
});
