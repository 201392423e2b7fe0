//! The fast path against toml-span: where it answers, its values are toml-span's, spans and all.

use std::fmt::Write as _;
use std::path::Path;

use proptest::prelude::*;
use toml_span::value::ValueInner;
use toml_span::Value;

use super::{fast, parse};

/// Every value with its span and every key with its span, in key order: two documents read
/// alike dump alike.
fn dump(v: &Value<'_>) -> String {
    let mut out = String::new();
    dump_into(v, &mut out);
    out
}

fn dump_into(v: &Value<'_>, out: &mut String) {
    let _ = write!(out, "@{}..{}:", v.span.start, v.span.end);
    match v.as_ref() {
        ValueInner::String(s) => {
            let _ = write!(out, "{s:?}");
        }
        ValueInner::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        ValueInner::Float(f) => {
            let _ = write!(out, "{f:?}");
        }
        ValueInner::Boolean(b) => {
            let _ = write!(out, "{b}");
        }
        ValueInner::Array(items) => {
            out.push('[');
            for i in items {
                dump_into(i, out);
                out.push(',');
            }
            out.push(']');
        }
        ValueInner::Table(t) => {
            out.push('{');
            for (k, v) in t {
                let _ = write!(out, "{:?}@{}..{}=", k.name, k.span.start, k.span.end);
                dump_into(v, out);
                out.push(',');
            }
            out.push('}');
        }
    }
}

/// toml-span's reading of `text`: its values dumped, or its error.
fn reference(text: &str) -> Result<String, String> {
    toml_span::parse(text)
        .map(|v| dump(&v))
        .map_err(|e| format!("{:?} at {:?}", e.kind, e.span))
}

/// The fast path reads `text`, exactly as toml-span does.
#[track_caller]
fn read_alike(text: &str) {
    let ours = fast(text).map(|v| dump(&v));
    assert_eq!(
        ours.as_deref(),
        Some(&*reference(text).unwrap()),
        "{text:?}"
    );
}

/// The fast path leaves `text` to toml-span, and `parse` answers as toml-span does.
#[track_caller]
fn left_to_toml_span(text: &str) {
    assert!(fast(text).is_none(), "{text:?}");
    let ours = parse(text, &mut Vec::new())
        .map(|v| dump(&v))
        .map_err(|e| format!("{:?} at {:?}", e.kind, e.span));
    assert_eq!(ours, reference(text), "{text:?}");
}

/// The repository's TOML: the specs, and cargo's and cargo-deny's files for more shapes.
fn repository_toml() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        "secret-specs/core-service.toml",
        "secret-specs-airgap/core-service.toml",
        "deploy/core-service-secrets/secret-specs/core-service.toml",
        "fuzz/corpus/spec_loader/core-service.toml",
        "Cargo.toml",
        "fuzz/Cargo.toml",
        "clippy.toml",
        "deny.toml",
    ]
    .into_iter()
    .map(|p| {
        (
            p.to_string(),
            std::fs::read_to_string(root.join(p)).unwrap(),
        )
    })
    .collect()
}

#[test]
fn every_spec_of_the_repository_reads_alike_on_the_fast_path() {
    for (path, text) in repository_toml() {
        if path.ends_with("core-service.toml") {
            read_alike(&text);
        } else if let Some(v) = fast(&text) {
            assert_eq!(Ok(dump(&v)), reference(&text), "{path}");
        }
    }
}

/// One buffer of tokens for a run of files, longer and shorter ones in turn (as a platform's
/// specs come), reads each as a buffer of its own does: nothing of one file is left for the next.
#[test]
fn files_read_with_one_token_buffer_read_as_each_alone() {
    let texts: Vec<String> = repository_toml()
        .into_iter()
        .map(|(_, text)| text)
        .chain(["a = 1\n".to_string(), "[t]\nb = \"x\"\n".to_string()])
        .collect();
    let mut tokens = Vec::new();
    for text in texts.iter().chain(texts.iter().rev()) {
        let shared = parse(text, &mut tokens).map(|v| dump(&v));
        let alone = parse(text, &mut Vec::new()).map(|v| dump(&v));
        assert_eq!(shared.ok(), alone.ok(), "{text:?}");
    }
}

/// Shapes the fast path builds, each where toml-span's spans are least obvious.
#[test]
fn the_shapes_specs_use_read_alike() {
    for text in [
        "",
        "# only a comment",
        "a = 1",
        "a = -0\nb = -9223372036854775808\nc = 9223372036854775807\nd = true\ne = false\n",
        "s = \"\"\nt = ''\nu = \"x\"\nv = 'y'\n\"\" = 1\n'q' = 2\n\"k y\" = 3\n",
        "e = \"a\\\"b\\\\c\\n\\t\\u00e9\\U0001F600\\e\\x41\"\n",
        "[a]\n",
        "[a] # header comment\nx = 1 # value comment\n\n# trailing\n",
        "[a]",
        "[ a . \"b c\" . 'd' ]\nx = 1\n",
        "[a.b]\nx = 1\n[a]\ny = 2\n",
        "[a.b.c]\nx = 1\n[a.d]\n[a.b]\nz = 3\n",
        "[x]\n[a.b]\n[a.c]\nk = \"v\"\n[a]\nq = 1\n",
        "fields.password = { generator = \"hex32\" }\nfields.value = { generator = \"placeholder\" }\n",
        "a.b.c = \"deep\"\na.b.d = 2\na.e = []\n",
        "[secrets.A]\ndescription = \"d\"\nfields.password = { generator = \"hex32\", length = 32 }\n",
        "x = [1, 2, 3]\ny = [ ]\nz = [\n  \"a\", # one\n  # between\n  \"b\",\n]\n",
        "x = [[1, [2]], [], [{ a = 1 }, { b.c = \"d\" }]]\n",
        "t = { a = 1, b.c = 2, b.d = { e = [] } }\n",
        "t = {\n  a = 1, # TOML 1.1, as toml-span 0.7 reads it\n  b = 2,\n}\n",
        "t = {}\nu = { }\n",
        "a = 1\n[b]\n[c]\nx = 'y'",
        "   [indented]   \n   k   =   'v'   \n",
        "[a]\nb = { c = 1 }\n[d]\ne.f = [1]\n",
        "name = \"é-ü\"\n# ünïcödé comment ✓\n",
    ] {
        read_alike(text);
    }
}

/// What the fast path does not build, or toml-span refuses: toml-span answers, value or error.
#[test]
fn the_rest_is_left_to_toml_span() {
    for text in [
        // Values the fast path does not read.
        "f = 1.5",
        "f = 1e3",
        "i = 0x1f",
        "i = 1_000",
        "i = +1",
        "i = 007",
        "n = inf",
        "d = 1979-05-27",
        "s = \"\"\"multi\nline\"\"\"",
        "s = '''x'''",
        "[[array.of.tables]]\nx = 1",
        // Text the fast path does not take.
        "a = 1\r\nb = 2\r\n",
        "\u{feff}a = 1",
        "a = \"\u{7f}\"",
        "# \u{7f}\na = 1",
        "a = \"x\u{1}\"",
        // Errors of every kind toml-span reports.
        "a = 1\na = 2",
        "[a]\n[a]",
        "a.b = 1\na = 2",
        "a = 2\na.b = 1",
        "a = { b = 1 }\na.c = 2",
        "a = 1\n[a.b]",
        "a.b = 1\n[a]",
        "a.b = 1\n[a.c]",
        "[a]\nb = 1\n[a.b]",
        "[a]\nb.c = 1\n[a.b]",
        "[a]\nb.c = 1\n[a.b.d]",
        "t = { a = 1, a = 2 }",
        "a = { b = 1 }\n[a.c]",
        "a =",
        "= 1",
        "a = 1 b = 2",
        "[a] b = 1",
        "[a",
        "a = [1,,2]",
        "a = {",
        "a = \"x",
        "a = \"\\q\"",
        "a = \"\\u12\"",
        "a = \"\\uD800\"",
        "a = 'x\n'",
        "a b = 1",
        "a:b = 1",
        "a = truex",
        "a = 1x",
        "ü = 1",
        "[]",
        "a = 99999999999999999999",
        "a.\"\"\"x\"\"\" = 1",
        "a = []]",
        "a = {}}",
        "a = ]",
        "a = }",
    ] {
        left_to_toml_span(text);
    }
}

/// Deep nesting takes toml-span's path, whose limit and error stay the answer.
#[test]
fn deep_nesting_is_left_to_toml_span() {
    let n = 200;
    for text in [
        format!("x = {}1{}", "[".repeat(n), "]".repeat(n)),
        format!("x = {}1{}", "{a = ".repeat(n), "}".repeat(n)),
        format!("{} = 1", vec!["a"; n].join(".")),
        format!("[{}]", vec!["a"; n].join(".")),
        format!("x = {}1{}", "[".repeat(70), "]".repeat(70)),
    ] {
        left_to_toml_span(&text);
    }
    read_alike(&format!("x = {}1{}", "[".repeat(30), "]".repeat(30)));
}

/// A spec-shaped document with each construct the fast path builds.
const SEED: &str = r#"# a spec
name = "app" # why
[vault]
mount = "secret"
path = 'ask/app/{env}'
kv_version = 2
[environments.dev]
kube_namespace = "ns"
[eso]
external_secrets = ["a", 'b', ]
access = ["read", "push"]
[secrets.ONE]
description = "salt \"quoted\" \u00e9"
fields.password = { generator = "hex32", n = -3 }
fields.other.deep = { x = [1, [2, {y = true}]] }
[secrets."TWO"]
rotation = { keep = 3 }
"#;

/// One edit of a document: at a character position (taken modulo its length), insert, delete
/// or replace with a character TOML gives meaning to.
fn edit() -> impl Strategy<Value = (usize, u8, char)> {
    let chars = prop::sample::select(vec![
        '[', ']', '{', '}', '"', '\'', '=', '.', ',', '#', ' ', '\n', '\t', '\\', 'a', '1', '-',
        '0', 'e', '_', '+', ':', '\r', 'é',
    ]);
    (any::<usize>(), 0u8..3, chars)
}

fn apply(text: &str, edits: &[(usize, u8, char)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(at, op, c) in edits {
        let at = at % (chars.len() + 1);
        match op {
            0 => chars.insert(at, c),
            1 if at < chars.len() => {
                chars.remove(at);
            }
            _ if at < chars.len() => chars[at] = c,
            _ => chars.push(c),
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Wherever the fast path answers on an edited spec, toml-span reads the same values.
    #[test]
    fn an_edited_spec_reads_alike_or_goes_to_toml_span(edits in prop::collection::vec(edit(), 1..4)) {
        let text = apply(SEED, &edits);
        if let Some(v) = fast(&text) {
            prop_assert_eq!(Ok(dump(&v)), reference(&text), "{:?}", text);
        }
    }
}

#[test]
fn the_seed_reads_alike() {
    read_alike(SEED);
}
