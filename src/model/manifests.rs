//! Reading rendered manifests: a YAML file, a directory of them, or stdin; multi-document streams
//! (`helm template` output with `---` and `# Source:` comments), empty documents, and `List`
//! kinds (`kind: List`, `SecretList`, ...) flattened into their items.
//!
//! Each document becomes a JSON value (the shape the Kubernetes API serves, so the live check can
//! hand objects read from a cluster to the same code) with the file and line it starts at.
//! Anything unreadable is an error naming the file and line; every error of every file is
//! collected before the command gives up.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::yaml;

/// Most bytes read in all, every file and stdin together (a rendered chart is a few MiB).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Most YAML nodes in one document, estimated from its text before it is parsed (every `:`,
/// `,`, `-`, `?`, `[`, `{` and line) and counted again as it is built, copies made by aliases and merge keys
/// included. The API server stores an object of at most about 1.5 MiB; a 1 MiB ConfigMap of
/// JSON holds far fewer. This bounds what one document costs, whatever its shape.
pub const MAX_DOC_NODES: usize = 500_000;

/// Most YAML nodes built from all the input together.
pub const MAX_NODES: usize = 4_000_000;

/// Most bytes of strings built from one document, aliases' copies included.
pub const MAX_DOC_STRING_BYTES: usize = 16 << 20;

/// What is left to read of the input, shared by every path of one run.
#[derive(Debug)]
pub struct Budget {
    bytes_left: std::cell::Cell<u64>,
    nodes_left: std::cell::Cell<usize>,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            bytes_left: std::cell::Cell::new(MAX_INPUT_BYTES),
            nodes_left: std::cell::Cell::new(MAX_NODES),
        }
    }
}

/// Where a document starts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Origin {
    /// The file as given (`<stdin>` for `-`).
    pub file: String,
    /// 1-based line of the document's first content line.
    pub line: usize,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One Kubernetes object read from a stream.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The object.
    pub value: Value,
    /// Where it starts.
    pub origin: Origin,
}

/// Why input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file or directory cannot be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The input passes [`MAX_INPUT_BYTES`] at this file.
    #[error("the input passes {} MiB, all files together, at `{path}`", MAX_INPUT_BYTES >> 20)]
    TooLarge {
        /// The path.
        path: String,
    },
    /// Not a regular file (a FIFO, a device, a socket).
    #[error("`{path}` is {what}, not a regular file")]
    NotRegular {
        /// The path.
        path: String,
        /// What it is.
        what: &'static str,
    },
    /// A document passes [`MAX_DOC_NODES`] or [`MAX_DOC_STRING_BYTES`], or the input
    /// [`MAX_NODES`].
    #[error(
        "`{file}:{line}`: more YAML than vault-seed reads ({} nodes in a document, {} in all, \
         {} MiB of strings in a document, aliases' copies included)",
        MAX_DOC_NODES,
        MAX_NODES,
        MAX_DOC_STRING_BYTES >> 20
    )]
    TooComplex {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
    },
    /// A directory without YAML files.
    #[error("`{path}` holds no `*.yaml`, `*.yml` or `*.json` file")]
    EmptyDir {
        /// The directory.
        path: String,
    },
    /// A document is not valid YAML.
    #[error("`{file}:{line}:{column}`: not valid YAML: {message}")]
    Yaml {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message, with any quoted text removed.
        message: String,
    },
    /// The input has none of the objects it must hold.
    #[error("`{path}` holds no {what}")]
    Missing {
        /// The path.
        path: String,
        /// What was looked for.
        what: &'static str,
    },
    /// An object Kubernetes and Argo CD would reject.
    #[error("`{file}:{line}`: {what}")]
    Invalid {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// A document is YAML but not a Kubernetes object.
    #[error("`{file}:{line}`: not a Kubernetes object: {what}")]
    NotObject {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        what: String,
    },
}

impl LoadError {
    /// What to do about it.
    pub fn help(&self) -> Option<String> {
        Some(self.advice().to_string())
    }

    /// The advice, as written.
    fn advice(&self) -> &'static str {
        match self {
            LoadError::Read { .. } | LoadError::EmptyDir { .. } => {
                "pass a YAML file, a directory of them, or `-` for stdin (e.g. the output of `helm template` or `argocd app manifests NAME`)"
            }
            LoadError::TooLarge { .. } => "check fewer apps at a time: a rendered chart is a few MiB",
            LoadError::NotRegular { .. } => {
                "pass a regular file or a directory of them; to read a pipe, pass `-` and send it to stdin"
            }
            LoadError::TooComplex { .. } => {
                "a Kubernetes object holds a few thousand nodes at most: check what rendered this file"
            }
            LoadError::Yaml { .. } => "fix the YAML at that line (`kubectl apply --dry-run=client -f FILE` shows the same problem)",
            LoadError::Missing { .. } => {
                "`--applications` takes Argo CD Application manifests (`kubectl get applications -n argocd -o yaml`), `--argocd-cm` the argocd-cm ConfigMap (`kubectl get configmap argocd-cm -n argocd -o yaml`)"
            }
            LoadError::Invalid { .. } => "fix the manifest: the API server and Argo CD reject it as it is",
            LoadError::NotObject { .. } => {
                "every document must be a Kubernetes object with `apiVersion`, `kind` and `metadata.name`, or a `List` of them"
            }
        }
    }
}

/// Read every document of a file, a directory's `*.yaml`/`*.yml`/`*.json` files (not recursive,
/// in name order, as `kubectl apply -f DIR`), or stdin (`-`).
pub fn load_path(
    path: &Path,
    stdin: &mut dyn Read,
    budget: &Budget,
) -> Result<Vec<Doc>, Vec<LoadError>> {
    let mut docs = Vec::new();
    for_each_doc(path, stdin, budget, &mut |d| docs.push(d))?;
    Ok(docs)
}

/// Hand each document of `path` (as [`load_path`] reads them) to `f` as it is parsed, one file
/// at a time, so that only one file and one document's JSON are held at once.
pub fn for_each_doc(
    path: &Path,
    stdin: &mut dyn Read,
    budget: &Budget,
    f: &mut dyn FnMut(Doc),
) -> Result<(), Vec<LoadError>> {
    let mut errors = Vec::new();
    let mut parse = |name: &str, text: &str| {
        if let Err(e) = parse_stream_into(name, text, budget, f) {
            errors.extend(e);
        }
    };
    if path == Path::new("-") {
        let text = read_text("<stdin>", stdin, budget).map_err(|e| vec![e])?;
        parse("<stdin>", &text);
    } else {
        for file in files(path).map_err(|e| vec![e])? {
            let shown = file.display().to_string();
            let text = open_regular(&file)
                .and_then(|mut r| read_text(&shown, &mut r, budget))
                .map_err(|e| vec![e])?;
            parse(&shown, &text);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The files of a path: itself, or a directory's YAML files. Anything else than a regular file
/// or a directory is refused, so that a FIFO or a device never blocks or floods the read.
fn files(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let shown = path.display().to_string();
    let read_err = |source| LoadError::Read {
        path: shown.clone(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    if !meta.is_dir() {
        regular(&shown, &meta)?;
        return Ok(vec![path.to_path_buf()]);
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(path).map_err(read_err)? {
        let p = entry.map_err(read_err)?.path();
        let yaml = p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if !yaml {
            continue;
        }
        let meta = std::fs::metadata(&p).map_err(|source| LoadError::Read {
            path: p.display().to_string(),
            source,
        })?;
        // `kubectl apply -f DIR` skips subdirectories.
        if meta.is_dir() {
            continue;
        }
        regular(&p.display().to_string(), &meta)?;
        names.push(p);
    }
    names.sort();
    if names.is_empty() {
        return Err(LoadError::EmptyDir { path: shown });
    }
    Ok(names)
}

/// Refuse what is not a regular file, naming what it is.
fn regular(shown: &str, meta: &std::fs::Metadata) -> Result<(), LoadError> {
    match crate::base::files::not_regular(meta.file_type()) {
        None => Ok(()),
        Some(what) => Err(LoadError::NotRegular {
            path: shown.to_string(),
            what,
        }),
    }
}

/// Open a file that was a regular file when listed. With O_NONBLOCK, a FIFO put in its place
/// since cannot block the open either, and the opened file is checked again.
fn open_regular(path: &Path) -> Result<std::fs::File, LoadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display().to_string();
    let read_err = |source| LoadError::Read {
        path: shown.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(read_err)?;
    regular(&shown, &file.metadata().map_err(read_err)?)?;
    Ok(file)
}

/// Read UTF-8 text within what is left of the input budget.
fn read_text(shown: &str, r: &mut dyn Read, budget: &Budget) -> Result<String, LoadError> {
    let left = budget.bytes_left.get();
    let mut bytes = Vec::new();
    r.take(left + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| LoadError::Read {
            path: shown.to_string(),
            source,
        })?;
    if bytes.len() as u64 > left {
        return Err(LoadError::TooLarge {
            path: shown.to_string(),
        });
    }
    budget.bytes_left.set(left - bytes.len() as u64);
    String::from_utf8(bytes).map_err(|_| LoadError::Read {
        path: shown.to_string(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
    })
}

/// One document's text and the line its first line has in the file.
struct Chunk {
    first_line: usize,
    text: String,
}

/// Split a stream at document markers: a line that is `---` (or `...`) at column 0, alone or
/// followed by a space (`--- # Source: ...`). YAML forbids such a line inside a document, so this
/// split is what the parser would do, and it tells each document's line.
fn split_documents(text: &str) -> Vec<Chunk> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut chunks = Vec::new();
    let mut current = Chunk {
        first_line: 1,
        text: String::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let marker = ["---", "..."].into_iter().find(|m| {
            line.strip_prefix(m)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
        });
        match marker {
            Some(m) => {
                chunks.push(std::mem::replace(
                    &mut current,
                    Chunk {
                        first_line: i + 1,
                        text: String::new(),
                    },
                ));
                // Keep what follows `--- ` on the line, at its column.
                if m == "---" {
                    current.text.push_str("   ");
                    current.text.push_str(&line[3..]);
                }
                current.text.push('\n');
            }
            None => {
                current.text.push_str(line);
                current.text.push('\n');
            }
        }
    }
    chunks.push(current);
    chunks
}

/// The first line of a chunk that is neither blank nor a comment.
fn content_line(chunk: &Chunk) -> usize {
    chunk
        .text
        .lines()
        .position(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        })
        .map_or(chunk.first_line, |i| chunk.first_line + i)
}

/// Remove quoted text from a parser message, so that no value of the file is ever echoed.
fn scrub(message: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in message.chars() {
        match (c, quoted) {
            ('"', false) => {
                quoted = true;
                out.push_str("\"…");
            }
            ('"', true) => {
                quoted = false;
                out.push('"');
            }
            (_, false) => out.push(c),
            (_, true) => {}
        }
    }
    // Drop serde_yaml's own " at line X column Y": we print the file's position.
    match out.find(" at line ") {
        Some(i) => out[..i].to_string(),
        None => out,
    }
}

/// Parse a multi-document stream into objects (`List` kinds flattened).
pub fn parse_stream(file: &str, text: &str) -> Result<Vec<Doc>, Vec<LoadError>> {
    let mut docs = Vec::new();
    parse_stream_into(file, text, &Budget::default(), &mut |d| docs.push(d))?;
    Ok(docs)
}

/// An estimate of a document's nodes from its text, about one per node: nodes are separated by
/// lines, indicators (`-`, `:`, `?`) or flow separators (`,`, `[`, `{`).
fn estimated_nodes(text: &str) -> usize {
    1 + text
        .bytes()
        .filter(|b| matches!(b, b'\n' | b':' | b'-' | b'?' | b',' | b'[' | b'{'))
        .count()
}

/// Parse a multi-document stream, handing each object to `f` as it is read.
fn parse_stream_into(
    file: &str,
    text: &str,
    budget: &Budget,
    f: &mut dyn FnMut(Doc),
) -> Result<(), Vec<LoadError>> {
    let mut errors = Vec::new();
    for chunk in split_documents(text) {
        // A chunk of only directives (`%YAML 1.2`) and comments holds no document.
        if chunk.text.lines().all(|l| {
            let t = l.trim();
            t.is_empty() || t.starts_with('#') || l.starts_with('%')
        }) {
            continue;
        }
        let origin = Origin {
            file: file.to_string(),
            line: content_line(&chunk),
        };
        let too_complex = || LoadError::TooComplex {
            file: file.to_string(),
            line: origin.line,
        };
        // serde_yaml holds every event of a document before it is built: refuse a document
        // that would hold too many before it is parsed.
        if estimated_nodes(&chunk.text) > MAX_DOC_NODES {
            errors.push(too_complex());
            return Err(errors);
        }
        let doc_budget = yaml::Budget::new(
            budget.nodes_left.get().min(MAX_DOC_NODES),
            MAX_DOC_STRING_BYTES,
        );
        let converted = yaml::to_json(&chunk.text, &doc_budget);
        // What was built counts, even when the document is refused after.
        let used = budget.nodes_left.get().min(MAX_DOC_NODES) - doc_budget.nodes_left();
        budget.nodes_left.set(budget.nodes_left.get() - used);
        let value = match converted {
            Ok(v) => v,
            Err(yaml::Error::TooMuch) => {
                errors.push(too_complex());
                return Err(errors);
            }
            Err(yaml::Error::Yaml(e)) => {
                // The end of the stream is reported past the last line: point at the last.
                let last = chunk.first_line + chunk.text.lines().count().max(1) - 1;
                let (line, column) = e.location().map_or((content_line(&chunk), 1), |l| {
                    (chunk.first_line + l.line() - 1, l.column())
                });
                let line = line.min(last);
                errors.push(LoadError::Yaml {
                    file: file.to_string(),
                    line,
                    column,
                    message: scrub(&e.to_string()),
                });
                continue;
            }
        };
        if let Err(what) = flatten(value, &origin, 0, f) {
            errors.push(LoadError::NotObject {
                file: file.to_string(),
                line: origin.line,
                what,
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Hand an object, or a list's items, to `f`.
fn flatten(
    value: Value,
    origin: &Origin,
    depth: usize,
    f: &mut dyn FnMut(Doc),
) -> Result<(), String> {
    match value {
        Value::Null => Ok(()),
        Value::Object(mut map) => {
            let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
            if kind.is_empty() {
                return Err("it has no `kind`".into());
            }
            if map.get("apiVersion").and_then(Value::as_str).is_none() {
                return Err(format!("the {kind} has no `apiVersion`"));
            }
            if kind.ends_with("List") && map.contains_key("items") {
                let kind = kind.to_string();
                let Some(Value::Array(items)) = map.remove("items") else {
                    return Err(format!("the {kind}'s `items` is not a list"));
                };
                if depth >= 4 {
                    return Err("lists nested more than 4 deep".into());
                }
                for item in items {
                    flatten(item, origin, depth + 1, f)?;
                }
                return Ok(());
            }
            let meta = map.get("metadata").and_then(Value::as_object);
            let named = |k: &str| {
                meta.and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            };
            if !named("name") && !named("generateName") {
                return Err(format!("the {kind} has no `metadata.name`"));
            }
            f(Doc {
                value: Value::Object(map),
                origin: origin.clone(),
            });
            Ok(())
        }
        Value::Array(_) => {
            Err("it is a list, not a mapping (use `kind: List` with `items`)".into())
        }
        _ => Err("it is a scalar, not a mapping".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(docs: &[Doc]) -> Vec<(String, usize)> {
        docs.iter()
            .map(|d| {
                (
                    d.value["metadata"]["name"].as_str().unwrap().to_string(),
                    d.origin.line,
                )
            })
            .collect()
    }

    #[test]
    fn helm_template_stream_with_comments_and_empty_documents() {
        let text = "\
---
# Source: chart/templates/a.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
---
# Source: chart/templates/empty.yaml
---
--- # Source: chart/templates/b.yaml
apiVersion: v1
kind: Secret
metadata: {name: b}
...
";
        let docs = parse_stream("f.yaml", text).unwrap();
        assert_eq!(names(&docs), vec![("a".into(), 3), ("b".into(), 11)]);
    }

    #[test]
    fn lists_are_flattened() {
        let text = "\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: x}
- apiVersion: v1
  kind: SecretList
  items:
  - {apiVersion: v1, kind: Secret, metadata: {name: y}}
";
        let docs = parse_stream("l.yaml", text).unwrap();
        assert_eq!(names(&docs), vec![("x".into(), 1), ("y".into(), 1)]);
    }

    #[test]
    fn bad_yaml_names_file_and_line_of_the_stream() {
        let text = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: ok}
---
apiVersion: v1
kind: Secret
metadata:
  name: bad
stringData:
  password: \"hunter2-value
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: x
  labels: [a
";
        let errs = parse_stream("bad.yaml", text).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        let LoadError::Yaml { line, .. } = &errs[0] else {
            panic!("{:?}", errs[0])
        };
        assert!((10..=11).contains(line), "line {line}");
        let LoadError::Yaml { line, .. } = &errs[1] else {
            panic!("{:?}", errs[1])
        };
        assert!((16..=17).contains(line), "line {line}");
        for e in &errs {
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn documents_that_are_not_objects_are_errors() {
        for (text, what) in [
            ("just a string\n", "scalar"),
            ("- a\n- b\n", "list"),
            ("metadata: {name: x}\n", "no `kind`"),
            ("kind: Secret\nmetadata: {name: x}\n", "no `apiVersion`"),
            ("apiVersion: v1\nkind: Secret\n", "no `metadata.name`"),
            ("apiVersion: v1\nkind: List\nitems: 3\n", "not a list"),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {[a]: b}\n",
                "key",
            ),
        ] {
            let errs = parse_stream("x.yaml", text).unwrap_err();
            assert!(errs[0].to_string().contains(what), "{text}: {}", errs[0]);
        }
    }

    #[test]
    fn generate_name_is_enough_and_scalar_keys_become_strings() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {80: http, true: yes}\n";
        let docs = parse_stream("x.yaml", text).unwrap();
        assert_eq!(docs.len(), 2);
        let data = docs[1].value["data"].as_object().unwrap();
        assert!(data.contains_key("80") && data.contains_key("true"));
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_errors_not_hangs() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..12 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("l{}", i - 1)
            };
            bomb.push_str(&format!(
                "l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        assert!(parse_stream("bomb.yaml", &bomb).is_err());
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse_stream("deep.yaml", &deep).is_err());
    }

    #[test]
    fn nodes_count_across_documents_and_files_of_one_run() {
        let budget = Budget {
            bytes_left: std::cell::Cell::new(1 << 20),
            nodes_left: std::cell::Cell::new(60),
        };
        // 11 nodes a document: the mapping, 4 keys, 2 scalars, `metadata` (3), `data` (1).
        let doc = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {}\n";
        let mut n = 0;
        let errs = parse_stream_into("a.yaml", &doc.repeat(4), &budget, &mut |_| n += 1);
        assert!(errs.is_ok() && n == 4, "{errs:?}");
        // The 16 left run out in a second file, at its second document (line 7).
        let errs =
            parse_stream_into("b.yaml", &doc.repeat(4), &budget, &mut |_| n += 1).unwrap_err();
        assert!(
            matches!(&errs[..], [LoadError::TooComplex { file, line: 7 }] if file == "b.yaml"),
            "{errs:?}"
        );
        // A document refused after it was built still counts.
        let budget = Budget {
            bytes_left: std::cell::Cell::new(1 << 20),
            nodes_left: std::cell::Cell::new(100),
        };
        let bad = "a: [1, 2, 3, 4, 5, 6, 7, 8]\nb:\n  <<: 3\n";
        assert!(parse_stream_into("c.yaml", bad, &budget, &mut |_| ()).is_err());
        assert!(budget.nodes_left.get() < 100 - 10, "{budget:?}");
    }

    #[test]
    fn scrub_removes_quoted_text() {
        assert_eq!(
            scrub("duplicate entry with key \"s3cr3t\" at line 3 column 1"),
            "duplicate entry with key \"…\""
        );
    }

    #[test]
    fn directories_read_yaml_files_in_name_order_and_stdin_works() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("b.yml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("a.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not yaml: [").unwrap();
        let docs = load_path(dir.path(), &mut std::io::empty(), &Budget::default()).unwrap();
        assert_eq!(names(&docs), vec![("a".into(), 1), ("b".into(), 1)]);
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_path(empty.path(), &mut std::io::empty(), &Budget::default()).unwrap_err()[0],
            LoadError::EmptyDir { .. }
        ));
        let mut stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n".as_bytes();
        let docs = load_path(Path::new("-"), &mut stdin, &Budget::default()).unwrap();
        assert_eq!(docs[0].origin.file, "<stdin>");
    }
}
