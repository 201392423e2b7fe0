//! The spec loader, fed arbitrary bytes: it must never panic, and every problem it finds in a
//! UTF-8 file must carry a file:line:col location.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vault_seed::spec::{load_sources, LoadError};

fuzz_target!(|data: &[u8]| {
    let result = load_sources(vec![("fuzz.toml".into(), data.to_vec())], Vec::new());
    if let (Err(LoadError::Invalid(diags)), Ok(_)) = (result, std::str::from_utf8(data)) {
        for d in diags {
            assert!(d.location.is_some(), "a problem without a location: {d}");
        }
    }
});
