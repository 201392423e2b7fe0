//! The project's promises to someone who has just cloned it: the clone carries everything its
//! tests read, the scripts set up what they need, and the toolchain claim is true.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (recursively), skipping build output.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// A clone must pass its tests on its own: no code, test, script or CI step reads the workspace's
/// shared folder beside the repository. Fixtures are copied into `tests/fixtures/`, whose
/// READMEs may name the upstream place (they are documentation, not readers).
#[test]
fn nothing_reads_outside_the_repository() {
    // Spelled in pieces so that this file does not match itself.
    let needles = [
        concat!("..", "/shared"),
        concat!("shared", "/fixtures"),
        concat!("/work", "/shared"),
    ];
    let mut files = Vec::new();
    for dir in [
        "src", "tests", "scripts", "bench", ".ci", "examples", "fuzz", "benches",
    ] {
        files_under(&root().join(dir), &mut files);
    }
    for file in ["Cargo.toml", "build.rs", "deny.toml"] {
        files.push(root().join(file));
    }
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("tests/common/fake_kube.rs")),
        "the walk found no test sources under {}",
        root().display()
    );
    let fixtures = root().join("tests/fixtures");
    let mut found = Vec::new();
    for file in &files {
        if file.starts_with(&fixtures) && file.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(file) else {
            continue; // absent (build.rs) or not text (fuzz corpus)
        };
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|needle| line.contains(needle)) {
                let rel = file.strip_prefix(root()).unwrap_or(file);
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "these lines read (or point at) the shared folder outside the repository; copy what they \
         use into tests/fixtures/ and point them there:\n{}",
        found.join("\n")
    );
}
