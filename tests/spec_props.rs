//! Property tests of the spec loader: no input panics it, and every problem found in a UTF-8
//! file carries a file:line:col location.

use std::path::PathBuf;

use proptest::prelude::*;
use vault_seed::spec::{load_sources, LoadError};

const REAL: &str = include_str!("../secret-specs/core-service.toml");

/// Load one file's bytes; the problems, or none when it loads.
fn problems(bytes: Vec<u8>) -> Vec<vault_seed::spec::Diagnostic> {
    match load_sources(vec![(PathBuf::from("specs/fuzz.toml"), bytes)], Vec::new()) {
        Ok(_) => Vec::new(),
        Err(LoadError::Invalid(d)) => d,
        Err(other) => panic!("unexpected error kind: {other}"),
    }
}

/// The real spec with random edits: a range deleted, TOML-ish text inserted, a line repeated.
fn mutated_spec() -> impl Strategy<Value = String> {
    let insert = proptest::string::string_regex(r#"[\[\]{}=",.a-z0-9_ \n#'{}-]{0,24}"#).unwrap();
    (
        0..REAL.len(),
        0..64usize,
        0..REAL.len(),
        insert,
        0..REAL.lines().count(),
        any::<u8>(),
    )
        .prop_map(|(del_at, del_len, ins_at, ins, dup_line, which)| {
            let mut s = REAL.to_string();
            let fix = |s: &String, i: usize| {
                (0..=i.min(s.len()))
                    .rev()
                    .find(|&j| s.is_char_boundary(j))
                    .unwrap_or(0)
            };
            match which % 3 {
                0 => {
                    let a = fix(&s, del_at);
                    let b = fix(&s, a + del_len);
                    s.replace_range(a..b, "");
                }
                1 => {
                    let a = fix(&s, ins_at);
                    s.insert_str(a, &ins);
                }
                _ => {
                    let line = REAL.lines().nth(dup_line).unwrap_or("");
                    s.push('\n');
                    s.push_str(line);
                    s.push('\n');
                }
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn mutated_real_spec_never_panics_and_every_problem_is_located(text in mutated_spec()) {
        for d in problems(text.into_bytes()) {
            let loc = d.location.as_ref();
            prop_assert!(loc.is_some(), "no location: {}", d);
            let loc = loc.unwrap();
            prop_assert!(loc.line >= 1 && loc.col >= 1);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        for d in problems(text.into_bytes()) {
            prop_assert!(d.location.is_some(), "no location: {}", d);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_every_problem_is_located(
        bytes in proptest::collection::vec(any::<u8>(), 0..400)
    ) {
        for d in problems(bytes) {
            prop_assert!(d.location.is_some(), "no location: {}", d);
        }
    }
}

#[test]
fn hostile_names_are_rejected_with_locations() {
    for name in [
        "../x",
        "a//b",
        "with space",
        "x?y",
        "x#y",
        "x%2Fy",
        "/abs",
        "a/../b",
        "é",
    ] {
        let text = REAL.replace(
            "[secrets.ZITADEL_MASTERKEY]",
            &format!("[secrets.\"{name}\"]"),
        );
        let ds = problems(text.into_bytes());
        assert!(!ds.is_empty(), "{name} was accepted");
        assert!(ds.iter().all(|d| d.location.is_some()), "{name}");
        assert!(
            ds.iter()
                .any(|d| d.message.contains(&format!("secret name `{name}`"))),
            "{name}: {ds:?}"
        );
    }
    let deep = (0..40)
        .map(|i| format!("d{i}"))
        .collect::<Vec<_>>()
        .join("/");
    let text = REAL.replace(
        "[secrets.ZITADEL_MASTERKEY]",
        &format!("[secrets.\"{deep}\"]"),
    );
    assert!(problems(text.into_bytes())
        .iter()
        .any(|d| d.message.contains("deeper than 32 folders")));
}

#[test]
fn huge_spec_values_are_errors_not_crashes() {
    let big = "x".repeat(1 << 20);
    let text = REAL.replace("description = \"Salt", &format!("description = \"{big}"));
    // A long description is fine; a huge secret name is not.
    assert!(problems(text.into_bytes()).is_empty());
    let text = REAL.replace(
        "[secrets.ZITADEL_MASTERKEY]",
        &format!("[secrets.{}]", "N".repeat(300)),
    );
    assert!(problems(text.into_bytes())
        .iter()
        .any(|d| d.message.contains("longer than 255")));
}

/// Found in review: "did you mean" sliced an unknown key by bytes and panicked when byte 4 fell
/// inside a character. An unknown key `aéé` must be an error, not a crash.
#[test]
fn unknown_multi_byte_key_is_an_error_not_a_panic() {
    let text = REAL.replace("[vault]\n", "[vault]\n\"aéé\" = 1\n");
    let ds = problems(text.into_bytes());
    assert!(
        ds.iter().any(|d| d.message.contains("unknown key `aéé`")),
        "{ds:?}"
    );
}
