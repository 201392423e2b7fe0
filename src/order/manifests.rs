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

use serde_json::{Map, Value};

/// Largest file read (a rendered chart is a few MiB at most); guards against `/dev/zero`.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

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
    /// A file is larger than [`MAX_FILE_BYTES`].
    #[error("`{path}` is larger than {} MiB", MAX_FILE_BYTES >> 20)]
    TooLarge {
        /// The path.
        path: String,
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
    pub fn help(&self) -> &'static str {
        match self {
            LoadError::Read { .. } | LoadError::EmptyDir { .. } => {
                "pass a YAML file, a directory of them, or `-` for stdin (e.g. the output of `helm template` or `argocd app manifests NAME`)"
            }
            LoadError::TooLarge { .. } => "split the manifests, or pass the directory they come from",
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
pub fn load_path(path: &Path, stdin: &mut dyn Read) -> Result<Vec<Doc>, Vec<LoadError>> {
    let files = if path == Path::new("-") {
        let mut text = String::new();
        stdin
            .take(MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|source| {
                vec![LoadError::Read {
                    path: "<stdin>".into(),
                    source,
                }]
            })?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(vec![LoadError::TooLarge {
                path: "<stdin>".into(),
            }]);
        }
        vec![("<stdin>".to_string(), text)]
    } else {
        read_files(path).map_err(|e| vec![e])?
    };
    let mut docs = Vec::new();
    let mut errors = Vec::new();
    for (name, text) in &files {
        match parse_stream(name, text) {
            Ok(d) => docs.extend(d),
            Err(e) => errors.extend(e),
        }
    }
    if errors.is_empty() {
        Ok(docs)
    } else {
        Err(errors)
    }
}

fn read_files(path: &Path) -> Result<Vec<(String, String)>, LoadError> {
    let shown = path.display().to_string();
    let read_err = |source| LoadError::Read {
        path: shown.clone(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    if !meta.is_dir() {
        return Ok(vec![(shown.clone(), read_file(path)?)]);
    }
    let mut names: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(read_err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
                && p.is_file()
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(LoadError::EmptyDir { path: shown });
    }
    names
        .into_iter()
        .map(|p| Ok((p.display().to_string(), read_file(&p)?)))
        .collect()
}

fn read_file(path: &Path) -> Result<String, LoadError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| LoadError::Read {
        path: shown.clone(),
        source,
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| LoadError::Read {
            path: shown.clone(),
            source,
        })?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(LoadError::TooLarge { path: shown });
    }
    String::from_utf8(bytes).map_err(|_| LoadError::Read {
        path: shown,
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
    let mut errors = Vec::new();
    for chunk in split_documents(text) {
        // A chunk of only directives (`%YAML 1.2`) and comments holds no document.
        if chunk.text.lines().all(|l| {
            let t = l.trim();
            t.is_empty() || t.starts_with('#') || l.starts_with('%')
        }) {
            continue;
        }
        let yaml: serde_yaml::Value = match serde_yaml::from_str(&chunk.text) {
            Ok(v) => v,
            Err(e) => {
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
        let origin = Origin {
            file: file.to_string(),
            line: content_line(&chunk),
        };
        let value = match to_json(yaml) {
            Ok(v) => v,
            Err(what) => {
                errors.push(LoadError::NotObject {
                    file: file.to_string(),
                    line: origin.line,
                    what,
                });
                continue;
            }
        };
        if let Err(what) = flatten(value, &origin, 0, &mut docs) {
            errors.push(LoadError::NotObject {
                file: file.to_string(),
                line: origin.line,
                what,
            });
        }
    }
    if errors.is_empty() {
        Ok(docs)
    } else {
        Err(errors)
    }
}

/// Add an object, or a list's items, to `out`.
fn flatten(value: Value, origin: &Origin, depth: usize, out: &mut Vec<Doc>) -> Result<(), String> {
    match value {
        Value::Null => Ok(()),
        Value::Object(map) => {
            let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
            if kind.is_empty() {
                return Err("it has no `kind`".into());
            }
            if map.get("apiVersion").and_then(Value::as_str).is_none() {
                return Err(format!("the {kind} has no `apiVersion`"));
            }
            if kind.ends_with("List") {
                if let Some(items) = map.get("items") {
                    let Value::Array(items) = items.clone() else {
                        return Err(format!("the {kind}'s `items` is not a list"));
                    };
                    if depth >= 4 {
                        return Err("lists nested more than 4 deep".into());
                    }
                    for item in items {
                        flatten(item, origin, depth + 1, out)?;
                    }
                    return Ok(());
                }
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
            out.push(Doc {
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

/// YAML to the JSON the API server would store: scalar keys become strings (as
/// `sigs.k8s.io/yaml` converts them), tags are dropped.
fn to_json(v: serde_yaml::Value) -> Result<Value, String> {
    Ok(match v {
        serde_yaml::Value::Null => Value::Null,
        serde_yaml::Value::Bool(b) => Value::Bool(b),
        serde_yaml::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(Value::Null, Value::Number)
            }
        }
        serde_yaml::Value::String(s) => Value::String(s),
        serde_yaml::Value::Sequence(items) => {
            Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        serde_yaml::Value::Mapping(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let key = match k {
                    serde_yaml::Value::String(s) => s,
                    serde_yaml::Value::Bool(b) => b.to_string(),
                    serde_yaml::Value::Number(n) => n.to_string(),
                    serde_yaml::Value::Null => "null".to_string(),
                    _ => return Err("a mapping has a key that is not a scalar".into()),
                };
                out.insert(key, to_json(v)?);
            }
            Value::Object(out)
        }
        serde_yaml::Value::Tagged(t) => to_json(t.value)?,
    })
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
        let docs = load_path(dir.path(), &mut std::io::empty()).unwrap();
        assert_eq!(names(&docs), vec![("a".into(), 1), ("b".into(), 1)]);
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_path(empty.path(), &mut std::io::empty()).unwrap_err()[0],
            LoadError::EmptyDir { .. }
        ));
        let mut stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n".as_bytes();
        let docs = load_path(Path::new("-"), &mut stdin).unwrap();
        assert_eq!(docs[0].origin.file, "<stdin>");
    }
}
