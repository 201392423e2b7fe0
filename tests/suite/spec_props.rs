//! Property tests of the spec loader: no input panics it, every problem carries a
//! file:line:col location, and what it reports stays proportional to the input (the promises
//! of `support/spec_invariants.rs`, which the fuzz target checks too).

#[path = "../support/spec_invariants.rs"]
mod invariants;

use proptest::prelude::*;

const REAL: &str = include_str!("../../secret-specs/core-service.toml");

/// Load one file's bytes, checking the loader's promises; the problems, or none when it loads.
fn problems(bytes: Vec<u8>) -> Vec<vault_seed::spec::Diagnostic> {
    invariants::check(&bytes)
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
        problems(text.into_bytes());
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        problems(text.into_bytes());
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_every_problem_is_located(
        bytes in proptest::collection::vec(any::<u8>(), 0..400)
    ) {
        problems(bytes);
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

/// The fuzz target's corpus and the hostile shapes found by hand, as a normal test with a fixed
/// budget: a bounded list of inputs (about 6 MB in all), each checked for the loader's promises
/// (no panic, every problem located, each rendered problem small, at most a few per input byte),
/// so the one-line case stays covered without running `cargo fuzz`.
#[test]
fn fuzz_corpus_and_hostile_shapes_stay_within_budget() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/spec_loader");
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.display().to_string(), std::fs::read(&p).unwrap())
        })
        .collect();
    assert!(!inputs.is_empty(), "no fuzz corpus in {}", corpus.display());
    let head = "name = \"big\"\nvault = { mount = \"secret\", path = \"big/{env}\" }\n";
    let envs = "environments = { dev = { vault_addr = \"http://127.0.0.1:8200\" } }\n";
    let one_line = |n: usize, entry: &dyn Fn(usize) -> String| {
        let entries: Vec<String> = (0..n).map(entry).collect();
        format!("{head}{envs}secrets = {{ {} }}\n", entries.join(", ")).into_bytes()
    };
    // Issue 12, finding 6: N secrets without `description` on one line.
    inputs.push((
        "one line, 20k problems".into(),
        one_line(20_000, &|i| {
            format!("S{i} = {{ fields.password = {{ generator = \"hex32\" }} }}")
        }),
    ));
    // Two problems per entry, with long names elided in each message.
    let long = "N".repeat(300);
    inputs.push((
        "one line, long bad names".into(),
        one_line(2_000, &|i| {
            format!("\"{long}{i}\" = {{ fields.x = \"hex32\" }}")
        }),
    ));
    // Multi-byte text before every span: columns are counted in characters.
    inputs.push((
        "one line, multi-byte".into(),
        one_line(5_000, &|i| {
            format!("\"É{i}\" = {{ description = \"ééé\", fields.v = {{ generator = \"nope\" }} }}")
        }),
    ));
    // Every override names an unknown secret: the help must not list all secrets each time.
    let mut text = format!("{head}[environments.dev]\n");
    for i in 0..3_000 {
        text.push_str(&format!("secrets.X{i}.skip = true\n"));
    }
    text.push_str("[secrets]\n");
    for i in 0..3_000 {
        text.push_str(&format!(
            "S{i} = {{ description = \"d\", fields.v = {{ generator = \"uuid\" }} }}\n"
        ));
    }
    inputs.push(("3k unknown overrides".into(), text.into_bytes()));
    // Many environments times many secrets.
    let mut text = format!("{head}[environments]\n");
    for i in 0..300 {
        text.push_str(&format!("e{i} = {{}}\n"));
    }
    text.push_str("[secrets]\n");
    for i in 0..300 {
        text.push_str(&format!(
            "\"a{i}.b\" = {{ description = \"d\", fields.c = {{ generator = \"uuid\" }} }}\n"
        ));
        text.push_str(&format!(
            "a{i} = {{ description = \"d\", fields.\"b.c\" = {{ generator = \"uuid\" }} }}\n"
        ));
    }
    inputs.push((
        "300 environments x 600 clashing secrets".into(),
        text.into_bytes(),
    ));
    // Not UTF-8 at the end of a long line; control characters in names.
    let mut bytes = one_line(1_000, &|i| {
        format!("S{i} = {{ description = \"d\", fields.v = {{ generator = \"uuid\" }} }}")
    });
    bytes.insert(bytes.len() - 3, 0xc3);
    inputs.push(("invalid UTF-8 at the end of a long line".into(), bytes));
    inputs.push((
        "control characters".into(),
        format!("{head}{envs}[secrets.\"\\u001b[2J\\u202e\"]\ndescription = \"\\u0007\"\nfields.v = {{ generator = \"\\u001b]0;x\\u0007\" }}\n").into_bytes(),
    ));
    let total: usize = inputs.iter().map(|(_, b)| b.len()).sum();
    assert!(total < 8 << 20, "the budget is 8 MB of input, not {total}");
    for (name, bytes) in &inputs {
        let diags = invariants::check(bytes);
        if name.starts_with("one line") {
            assert!(diags.len() >= 2_000, "{name}: {} problems", diags.len());
        }
    }
}
