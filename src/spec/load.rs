//! Phase 1 (parse with spans) and phase 2 (validate into typed values) of spec loading.
//!
//! The TOML is walked by hand over `toml_span` values so that every problem of every file is
//! collected, each with the span of the key or value at fault, before anything is returned.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toml_span::value::{Key, ValueInner};
use toml_span::{de_helpers::TableHelper, ErrorKind, Span, Value};

use super::diag::{is_unshowable, shown, Diagnostic, SourceFile, SHOWN_MAX};
use super::{
    backticked, few, Argocd, AuthRole, Environment, Environments, Eso, EsoAccess, Field, Provided,
    Secret, SecretOverride, Spec, SpecSet, Target, VaultTarget, Vso, ENV_PLACEHOLDER,
};
use crate::generate::{Generator, Param, Params, Syntax, GENERATOR_NAMES};
use crate::kv::KvVersion;
use crate::suggest::suggest;

/// Why the specs could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The specs directory cannot be read.
    #[error("cannot read the specs directory `{}`: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The directory holds no `*.toml` file.
    #[error("no spec files (`*.toml`) in `{}`", .0.display())]
    Empty(PathBuf),
    /// One or more specs are invalid; every problem found is listed.
    #[error("{} problem(s) in the specs", .0.len())]
    Invalid(Vec<Diagnostic>),
}

impl LoadError {
    /// What the user can do about it; `None` for invalid specs, whose every problem says it.
    pub fn help(&self) -> Option<&'static str> {
        match self {
            LoadError::Dir { .. } => {
                Some("run from the repository that holds `secret-specs/`, or pass `--specs DIR`")
            }
            LoadError::Empty(_) => {
                Some("point `--specs` (or VAULT_SEED_SPECS) at the directory of your specs")
            }
            LoadError::Invalid(_) => None,
        }
    }
}

/// Load and validate every `*.toml` file of `dir` (not recursive), in file name order.
///
/// A `*.toml` entry that cannot be read is a problem, never skipped: a broken symbolic link, or
/// an entry the directory listing cannot describe, would otherwise drop a spec from every check
/// without a word.
pub fn load_dir(dir: &Path) -> Result<SpecSet, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| LoadError::Dir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut diags = Vec::new();
    for entry in entries {
        let path = match entry {
            Ok(e) => e.path(),
            Err(e) => {
                diags.push(
                    Diagnostic::global(format!(
                        "cannot list `{}`: {e}",
                        shown(&dir.display().to_string())
                    ))
                    .with_help("check the directory's permissions"),
                );
                continue;
            }
        };
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => files.push(path),
            // A directory named `x.toml` is not a spec.
            Ok(m) if m.is_dir() => {}
            // A FIFO would block the read forever; a device is no spec either.
            Ok(_) => diags.push(
                Diagnostic::global(format!(
                    "`{}` is not a regular file",
                    shown(&path.display().to_string())
                ))
                .with_help("specs are regular files; remove it or rename it"),
            ),
            Err(e) => diags.push(unreadable(&path, &e)),
        }
    }
    files.sort();
    if files.is_empty() && diags.is_empty() {
        return Err(LoadError::Empty(dir.to_path_buf()));
    }
    read_and_load(&files, diags)
}

/// Why a spec file cannot be read, naming it (and where a dangling symbolic link points).
fn unreadable(path: &Path, e: &std::io::Error) -> Diagnostic {
    let name = shown(&path.display().to_string());
    match std::fs::read_link(path) {
        Ok(target) if e.kind() == std::io::ErrorKind::NotFound => Diagnostic::global(format!(
            "`{name}` is a symbolic link to `{}`, which does not exist",
            shown(&target.display().to_string())
        ))
        .with_help("point the link at the spec, or remove it"),
        _ => Diagnostic::global(format!("cannot read `{name}`: {e}"))
            .with_help("check that the file exists and is readable"),
    }
}

/// Load and validate the given spec files.
pub fn load_files(files: &[PathBuf]) -> Result<SpecSet, LoadError> {
    read_and_load(files, Vec::new())
}

/// Read each file (a file that cannot be read is a problem) and load them, after `diags`: one
/// file at a time, so that only one file's text is held at once (a platform's whole set of
/// specs can be tens of megabytes).
fn read_and_load(files: &[PathBuf], mut diags: Vec<Diagnostic>) -> Result<SpecSet, LoadError> {
    // One spec a file: sized once, where doubling could leave half of it unused.
    let mut specs = Vec::with_capacity(files.len());
    let mut shared = Shared::default();
    for path in files {
        match std::fs::read(path) {
            Ok(bytes) => load_one(path, bytes, &mut specs, &mut diags, &mut shared),
            Err(e) => diags.push(unreadable(path, &e)),
        }
    }
    finish(specs, diags)
}

/// Load and validate spec files given as (path, bytes): the in-memory entry point, used by
/// the property tests and the fuzz target. Never panics, whatever the bytes.
pub fn load_sources(
    sources: Vec<(PathBuf, Vec<u8>)>,
    mut diags: Vec<Diagnostic>,
) -> Result<SpecSet, LoadError> {
    let mut specs = Vec::new();
    let mut shared = Shared::default();
    for (path, bytes) in sources {
        load_one(&path, bytes, &mut specs, &mut diags, &mut shared);
    }
    finish(specs, diags)
}

/// Parse and validate one file: its spec joins `specs`, its problems `diags`.
fn load_one(
    path: &Path,
    bytes: Vec<u8>,
    specs: &mut Vec<Spec>,
    diags: &mut Vec<Diagnostic>,
    shared: &mut Shared,
) {
    match String::from_utf8(bytes) {
        Ok(text) => {
            let src = SourceFile::new(path, text);
            let mut cx = Cx {
                src: &src,
                diags,
                shared,
            };
            if let Some(spec) = parse_spec(&mut cx) {
                specs.push(spec);
            }
        }
        Err(e) => diags.push(not_utf8(path, e)),
    }
}

/// The checks across files, then the set or every problem found.
fn finish(mut specs: Vec<Spec>, mut diags: Vec<Diagnostic>) -> Result<SpecSet, LoadError> {
    check_environments(&specs, &mut diags);
    if diags.is_empty() {
        specs.shrink_to_fit();
        Ok(SpecSet { specs })
    } else {
        Err(LoadError::Invalid(diags))
    }
}

/// A spec that is not UTF-8, located at its first invalid byte: the text before that byte is
/// valid, so its lines and characters can be counted.
fn not_utf8(path: &Path, e: std::string::FromUtf8Error) -> Diagnostic {
    let at = e.utf8_error().valid_up_to();
    let bytes = e.as_bytes();
    let byte = bytes[at];
    let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
    let line = valid.matches('\n').count() + 1;
    let col = valid[valid.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    Diagnostic::at(
        super::Location {
            file: path.into(),
            line,
            col,
        },
        format!(
            "`{}` is not UTF-8 text: invalid UTF-8 byte `0x{byte:02x}`",
            shown(&path.display().to_string())
        ),
    )
    .with_help("save the spec as UTF-8")
}

struct Cx<'a> {
    src: &'a SourceFile,
    diags: &'a mut Vec<Diagnostic>,
    /// What secrets share ([`Cx::shared`], [`Cx::name`]).
    shared: &'a mut Shared,
}

/// The distinct secret names and lists of fields, `[eso]` sections and environments of the specs
/// loaded so far, each held once. A platform's applications repeat them (`DB_PASSWORD`;
/// `password` by `hex32`, `value` by `placeholder`, ...): shared, a secret's name and fields cost
/// two pointers, not three allocations (at 100,000 paths, about 15 MB less held through a run).
#[derive(Default)]
struct Shared {
    fields: HashSet<Arc<[Field]>>,
    names: HashSet<Arc<str>>,
    eso: HashSet<Arc<Eso>>,
    environments: HashSet<Environments>,
}

/// The value in `set` equal to `key` (what an earlier spec loaded), else `make(key)`'s, added.
fn interned<K, T>(set: &mut HashSet<T>, key: &K, make: impl FnOnce(&K) -> T) -> T
where
    K: ?Sized + Hash + Eq,
    T: Borrow<K> + Hash + Eq + Clone,
{
    if let Some(same) = set.get(key) {
        return same.clone();
    }
    let made = make(key);
    set.insert(made.clone());
    made
}

impl Cx<'_> {
    /// `fields` as a shared list: the one already loaded when an earlier secret has the same.
    fn shared(&mut self, fields: Vec<Field>) -> Arc<[Field]> {
        interned(&mut self.shared.fields, &fields[..], |f| Arc::from(f))
    }

    /// `[eso]` as a shared value: the one already loaded when an earlier spec has the same.
    fn shared_eso(&mut self, eso: Eso) -> Arc<Eso> {
        interned(&mut self.shared.eso, &eso, |e| Arc::new(e.clone()))
    }

    /// A spec's environments, shared with the earlier specs that have the same.
    fn shared_environments(&mut self, environments: Environments) -> Environments {
        interned(&mut self.shared.environments, &environments, Clone::clone)
    }

    /// A secret's name, shared with the earlier secrets of that name.
    fn name(&mut self, name: &str) -> Arc<str> {
        interned(&mut self.shared.names, name, |n| Arc::from(n))
    }

    fn err(&mut self, span: Span, msg: impl Into<String>, help: Option<String>) {
        let d = self.src.diag(span, msg);
        self.diags.push(match help {
            Some(h) => d.with_help(h),
            None => d,
        });
    }

    /// Convert toml-span's errors (syntax, duplicate keys, unknown keys) into diagnostics.
    fn toml_error(&mut self, e: toml_span::Error, context: &str) {
        match e.kind {
            ErrorKind::UnexpectedKeys { keys, expected } => {
                for (key, span) in keys {
                    let help = match suggest(&key, &expected) {
                        Some(s) => {
                            format!("did you mean `{s}`? {context} takes {}", list(&expected))
                        }
                        None => format!("{context} takes {}", list(&expected)),
                    };
                    self.err(
                        span,
                        format!("unknown key `{}` in {context}", shown(&key)),
                        Some(help),
                    );
                }
            }
            ErrorKind::DuplicateKey { key, first } => {
                let (l, c) = self.src.line_col(first.start);
                self.err(
                    e.span,
                    format!("duplicate key `{}`", shown(&key)),
                    Some(format!(
                        "first defined at {}:{l}:{c}; keep one",
                        self.src.path.display()
                    )),
                );
            }
            ErrorKind::DuplicateTable { name, first } => {
                let (l, c) = self.src.line_col(first.start);
                self.err(
                    e.span,
                    format!("duplicate table `[{}]`", shown(&name)),
                    Some(format!(
                        "first defined at {}:{l}:{c}; merge the two",
                        self.src.path.display()
                    )),
                );
            }
            ErrorKind::MissingField(name) => {
                self.err(e.span, format!("missing key `{name}` in {context}"), None)
            }
            ErrorKind::ExceededDepthLimit => self.err(
                e.span,
                format!("the spec nests deeper than {SPEC_MAX_DEPTH} levels"),
                Some(
                    "a spec nests a few levels (`[secrets.NAME]`, `fields.NAME = { ... }`); each part of a dotted key or table header, each array and inline table counts one"
                        .into(),
                ),
            ),
            kind => self.err(e.span, format!("invalid TOML: {kind}"), None),
        }
    }

    fn table<'de>(&mut self, v: &mut Value<'de>, context: &str) -> Option<TableHelper<'de>> {
        match TableHelper::new(v) {
            Ok(th) => Some(th),
            Err(errs) => {
                for e in errs.errors {
                    let found = match &e.kind {
                        ErrorKind::Wanted { found, .. } => *found,
                        _ => "another type",
                    };
                    self.err(
                        e.span,
                        format!("{context} must be a table, found {found}"),
                        None,
                    );
                }
                None
            }
        }
    }

    fn finish(&mut self, th: TableHelper<'_>, context: &str) {
        if let Err(errs) = th.finalize(None) {
            for e in errs.errors {
                self.toml_error(e, context);
            }
        }
    }

    fn string(&mut self, v: &mut Value<'_>, what: &str) -> Option<String> {
        let span = v.span;
        match v.take() {
            ValueInner::String(s) => Some(s.into_owned()),
            other => {
                self.err(
                    span,
                    format!("{what} must be a string, found {}", other.type_str()),
                    None,
                );
                None
            }
        }
    }

    fn take_string(
        &mut self,
        th: &mut TableHelper<'_>,
        key: &'static str,
        ctx: &str,
    ) -> Option<(String, Span)> {
        let (_, mut v) = th.take(key)?;
        let span = v.span;
        self.string(&mut v, &format!("`{key}` in {ctx}"))
            .map(|s| (s, span))
    }

    /// A string that must pass `check`; when it does not, the problem is reported at the value,
    /// quoting it (elided, escaped), with `help`.
    fn take_checked(
        &mut self,
        th: &mut TableHelper<'_>,
        key: &'static str,
        ctx: &str,
        check: impl Fn(&str) -> Result<(), String>,
        help: &str,
    ) -> Option<String> {
        let (v, span) = self.take_string(th, key, ctx)?;
        match check(&v) {
            Ok(()) => Some(v),
            Err(why) => {
                let what = match v.is_empty() {
                    true => format!("`{key}`"),
                    false => format!("`{key}` `{}`", shown(&v)),
                };
                self.err(span, format!("{what} {why}"), Some(help.into()));
                None
            }
        }
    }

    fn take_int(
        &mut self,
        th: &mut TableHelper<'_>,
        key: &'static str,
        ctx: &str,
    ) -> Option<(i64, Span)> {
        let (_, mut v) = th.take(key)?;
        let span = v.span;
        match v.take() {
            ValueInner::Integer(i) => Some((i, span)),
            other => {
                self.err(
                    span,
                    format!(
                        "`{key}` in {ctx} must be an integer, found {}",
                        other.type_str()
                    ),
                    None,
                );
                None
            }
        }
    }

    fn take_bool(
        &mut self,
        th: &mut TableHelper<'_>,
        key: &'static str,
        ctx: &str,
    ) -> Option<bool> {
        let (_, mut v) = th.take(key)?;
        let span = v.span;
        match v.take() {
            ValueInner::Boolean(b) => Some(b),
            other => {
                self.err(
                    span,
                    format!(
                        "`{key}` in {ctx} must be `true` or `false`, found {}",
                        other.type_str()
                    ),
                    None,
                );
                None
            }
        }
    }

    fn take_strings(
        &mut self,
        th: &mut TableHelper<'_>,
        key: &'static str,
        ctx: &str,
    ) -> Option<Vec<(String, Span)>> {
        let (_, mut v) = th.take(key)?;
        let span = v.span;
        match v.take() {
            ValueInner::Array(items) => Some(
                items
                    .into_iter()
                    .filter_map(|mut item| {
                        let s = item.span;
                        self.string(&mut item, &format!("an item of `{key}` in {ctx}"))
                            .map(|v| (v, s))
                    })
                    .collect(),
            ),
            other => {
                self.err(
                    span,
                    format!(
                        "`{key}` in {ctx} must be a list of strings, found {}",
                        other.type_str()
                    ),
                    Some(format!("write `{key} = [\"...\"]`")),
                );
                None
            }
        }
    }

    /// The entries of a sub-table in file order (toml-span keeps them sorted by name).
    fn entries<'de>(&mut self, mut v: Value<'de>, ctx: &str) -> Vec<(Key<'de>, Value<'de>)> {
        let span = v.span;
        match v.take() {
            ValueInner::Table(t) => {
                let mut e: Vec<_> = t.into_iter().collect();
                e.sort_by_key(|(k, _)| k.span.start);
                e
            }
            other => {
                self.err(
                    span,
                    format!("{ctx} must be a table, found {}", other.type_str()),
                    None,
                );
                Vec::new()
            }
        }
    }
}

const ROOT_KEYS_CTX: &str = "the spec";

/// How deep a spec may nest, keys and brackets counted together: toml-span's own limit
/// (`MAX_NESTING_DEPTH`, private to it), which bounds its recursion and so keeps a spec of
/// 10,000 nested arrays from overflowing the stack. Named here for the message, and pinned by a
/// test, so that an upgrade that changes it is seen. A spec nests about four levels; 128 take a
/// small part of a spawned thread's 2 MiB stack.
const SPEC_MAX_DEPTH: usize = 128;

fn parse_spec(cx: &mut Cx<'_>) -> Option<Spec> {
    let text = &cx.src.text;
    let mut root = match toml_span::parse(text) {
        Ok(v) => v,
        Err(e) => {
            cx.toml_error(e, ROOT_KEYS_CTX);
            return None;
        }
    };
    let errors_before = cx.diags.len();
    let mut th = cx.table(&mut root, ROOT_KEYS_CTX)?;
    let stem = cx
        .src
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match cx.take_string(&mut th, "name", ROOT_KEYS_CTX) {
        Some((n, span)) => {
            if let Err(why) = check_segment(&n) {
                cx.err(
                    span,
                    format!("application name `{}` {why}", shown(&n)),
                    Some(SEGMENT_HELP.into()),
                );
            }
            n
        }
        None => stem,
    };
    // Checked (a string), not kept: see [`Spec`].
    let _description = cx.take_string(&mut th, "description", ROOT_KEYS_CTX);
    let root_span = Span::new(0, 0);
    let vault = match th.take("vault") {
        Some((_, v)) => parse_vault(cx, v),
        None => {
            cx.err(
                root_span,
                "missing table `[vault]`",
                Some(
                    "add `[vault]` with `mount = \"secret\"` and `path = \"<team>/<app>/{env}\"`"
                        .into(),
                ),
            );
            None
        }
    };
    let environments = match th.take("environments") {
        Some((_, v)) => parse_environments(cx, v),
        None => {
            cx.err(
                root_span,
                "missing table `[environments]`",
                Some("add at least one environment, e.g. `[environments.auh1-dev]` with `vault_addr = \"https://vault.example\"`".into()),
            );
            BTreeMap::new()
        }
    };
    let vso = th
        .take("vso")
        .map(|(_, v)| parse_vso(cx, v).unwrap_or_default());
    let eso = match th.take("eso") {
        Some((_, v)) => parse_eso(cx, v).unwrap_or_default(),
        // A spec for VSO alone gives ESO nothing; without either section, ESO's default (the
        // runbook's read and push) as before.
        None if vso.is_some() => Eso {
            access: EsoAccess {
                read: false,
                push: false,
                list: false,
            },
            ..Eso::default()
        },
        None => Eso::default(),
    };
    let eso = cx.shared_eso(eso);
    let argocd = th
        .take("argocd")
        .and_then(|(_, v)| parse_argocd(cx, v, &environments));
    let env_names: Vec<String> = environments.keys().cloned().collect();
    let secrets = match th.take("secrets") {
        Some((k, v)) => parse_secrets(cx, v, k.span, &env_names),
        None => {
            cx.err(
                root_span,
                "missing table `[secrets]`",
                Some("add at least one secret, e.g. `[secrets.API_KEY_SALT]` with `description` and `fields.password = { generator = \"hex32\" }`".into()),
            );
            Vec::new()
        }
    };
    cx.finish(th, ROOT_KEYS_CTX);

    let vault = vault?;
    // `{env}`-less template used by several environments: they would all write one path.
    if !vault.0.path.contains(ENV_PLACEHOLDER) && environments.len() > 1 {
        cx.err(
            vault.1,
            format!(
                "path template `{}` has no `{ENV_PLACEHOLDER}` but {} environments use it ({}): they would share one Vault path",
                shown(&vault.0.path),
                environments.len(),
                few(&environments.keys().cloned().collect::<Vec<_>>())
            ),
            Some(format!("add `{ENV_PLACEHOLDER}`, e.g. `path = \"{}/{ENV_PLACEHOLDER}\"`", shown(&vault.0.path))),
        );
    }
    check_kv_endpoint_folder(cx, &vault.0.path, vault.1, environments.keys());
    // Overrides must name secrets and fields that exist. By a set of names, not a search per
    // override; and "did you mean" (an edit distance to every name) only for the first few.
    let known: HashSet<&str> = secrets.iter().map(|s| &*s.name).collect();
    let mut suggestions_left = SHOWN_MAX;
    let mut names: Option<Vec<String>> = None;
    for env in environments.values() {
        for (secret, (ov_span, _)) in env.1.iter() {
            if known.contains(secret.as_str()) {
                continue;
            }
            let names =
                names.get_or_insert_with(|| secrets.iter().map(|s| s.name.to_string()).collect());
            let suggestion = if suggestions_left > 0 {
                suggestions_left -= 1;
                suggest(secret, names)
            } else {
                None
            };
            let help = suggestion
                .map(|s| format!("did you mean `{}`?", shown(s)))
                .unwrap_or_else(|| format!("secrets of this spec: {}", few(names)));
            cx.err(
                *ov_span,
                format!(
                    "environment `{}` overrides unknown secret `{}`",
                    env.0.name,
                    shown(secret)
                ),
                Some(help),
            );
        }
    }
    if cx.diags.len() > errors_before {
        return None;
    }
    let environments = environments
        .into_iter()
        .map(|(_, (mut e, ov))| {
            e.overrides = ov.into_iter().map(|(n, (_, o))| (n, o)).collect();
            e
        })
        .collect();
    Some(Spec {
        file: Arc::clone(&cx.src.path),
        name: name.into(),
        vault: vault.0,
        environments: cx.shared_environments(environments),
        eso,
        vso: vso.map(Box::new),
        argocd: argocd.map(Box::new),
        secrets,
    })
}

fn parse_vault(cx: &mut Cx<'_>, mut v: Value<'_>) -> Option<(VaultTarget, Span)> {
    const CTX: &str = "`[vault]`";
    let mut th = cx.table(&mut v, CTX)?;
    let mount = cx.take_string(&mut th, "mount", CTX);
    let path = cx.take_string(&mut th, "path", CTX);
    let kv = cx.take_int(&mut th, "kv_version", CTX);
    let table_span = v.span;
    if mount.is_none() && !th.contains("mount") {
        cx.err(
            table_span,
            "missing key `mount` in `[vault]`",
            Some("the KV engine's mount, e.g. `mount = \"secret\"`".into()),
        );
    }
    if path.is_none() && !th.contains("path") {
        cx.err(
            table_span,
            "missing key `path` in `[vault]`",
            Some("the folder under the mount, e.g. `path = \"ask/core-service/{env}\"`".into()),
        );
    }
    cx.finish(th, CTX);
    let kv_version = match kv {
        Some((n, span)) => KvVersion::from_number(n).or_else(|| {
            cx.err(
                span,
                format!("`kv_version` must be 1 or 2, not {n}"),
                Some("leave it out to detect the mount's version".into()),
            );
            None
        }),
        None => None,
    };
    let (mount, mount_span) = mount?;
    let (path, path_span) = path?;
    let mut ok = true;
    if let Err(why) = check_path(&mount) {
        cx.err(
            mount_span,
            format!("mount `{}` {why}", shown(&mount)),
            Some("write the mount without slashes, e.g. `mount = \"secret\"`".into()),
        );
        ok = false;
    } else if let Err((why, help)) = check_kv_mount(&mount) {
        cx.err(mount_span, format!("mount `{mount}` {why}"), Some(help));
        ok = false;
    }
    if let Err(why) = check_path(&path.replace(ENV_PLACEHOLDER, "env")) {
        cx.err(
            path_span,
            format!("path template `{}` {why}", shown(&path)),
            Some(format!(
                "e.g. `path = \"ask/core-service/{ENV_PLACEHOLDER}\"`; {SEGMENT_HELP}"
            )),
        );
        ok = false;
    }
    let leftover = path.replace(ENV_PLACEHOLDER, "");
    if leftover.contains('{') || leftover.contains('}') {
        cx.err(
            path_span,
            format!(
                "path template `{}` has an unknown placeholder",
                shown(&path)
            ),
            Some(format!("only `{ENV_PLACEHOLDER}` is replaced")),
        );
        ok = false;
    }
    ok.then_some((
        VaultTarget {
            mount: mount.into(),
            path,
            kv_version,
        },
        path_span,
    ))
}

type EnvEntry = (Environment, BTreeMap<String, (Span, SecretOverride)>);

fn parse_environments(cx: &mut Cx<'_>, v: Value<'_>) -> BTreeMap<String, EnvEntry> {
    let span = v.span;
    let before = cx.diags.len();
    let mut out = BTreeMap::new();
    for (key, mut val) in cx.entries(v, "`[environments]`") {
        let name = key.name.to_string();
        let ctx = format!("`[environments.{name}]`");
        if let Err(why) = check_segment(&name) {
            cx.err(
                key.span,
                format!("environment name `{}` {why}", shown(&name)),
                Some(SEGMENT_HELP.into()),
            );
            continue;
        }
        let Some(mut th) = cx.table(&mut val, &ctx) else {
            continue;
        };
        let vault_addr = cx
            .take_string(&mut th, "vault_addr", &ctx)
            .and_then(|(a, s)| match check_addr(&a) {
                Ok(()) => Some(a),
                Err(why) => {
                    cx.err(
                        s,
                        format!("`vault_addr` `{a}` {why}"),
                        Some("e.g. `vault_addr = \"https://vault.example.internal\"`".into()),
                    );
                    None
                }
            });
        let vault_namespace = cx.take_checked(
            &mut th,
            "vault_namespace",
            &ctx,
            check_namespace,
            NAMESPACE_HELP,
        );
        let kube_context = cx.take_checked(
            &mut th,
            "kube_context",
            &ctx,
            check_context,
            "the name of a context in your kubeconfig (`kubectl config get-contexts`)",
        );
        let kube_namespace = cx.take_checked(
            &mut th,
            "kube_namespace",
            &ctx,
            check_k8s_namespace,
            K8S_NAMESPACE_HELP,
        );
        let overrides = match th.take("secrets") {
            Some((_, ov)) => parse_overrides(cx, ov, &name),
            None => BTreeMap::new(),
        };
        cx.finish(th, &ctx);
        out.insert(
            name.clone(),
            (
                Environment {
                    name,
                    vault_addr,
                    vault_namespace,
                    kube_context,
                    kube_namespace,
                    overrides: BTreeMap::new(),
                },
                overrides,
            ),
        );
    }
    if out.is_empty()
        && !cx.diags[before..]
            .iter()
            .any(|d| d.message.contains("environment"))
    {
        cx.err(
            span,
            "`[environments]` is empty",
            Some("add at least one, e.g. `[environments.auh1-dev]`".into()),
        );
    }
    out
}

fn parse_overrides(
    cx: &mut Cx<'_>,
    v: Value<'_>,
    env: &str,
) -> BTreeMap<String, (Span, SecretOverride)> {
    let mut out = BTreeMap::new();
    for (key, mut val) in cx.entries(v, &format!("`[environments.{env}.secrets]`")) {
        let name = key.name.to_string();
        let ctx = format!("`[environments.{env}.secrets.{}]`", shown(&name));
        let Some(mut th) = cx.table(&mut val, &ctx) else {
            continue;
        };
        let skip = cx.take_bool(&mut th, "skip", &ctx).unwrap_or(false);
        let fields = match th.take("fields") {
            Some((_, f)) => parse_fields(cx, f, &ctx)
                .into_iter()
                .map(|f| (f.name, f.generator))
                .collect(),
            None => BTreeMap::new(),
        };
        cx.finish(th, &ctx);
        out.insert(name, (key.span, SecretOverride { skip, fields }));
    }
    out
}

fn parse_eso(cx: &mut Cx<'_>, mut v: Value<'_>) -> Option<Eso> {
    const CTX: &str = "`[eso]`";
    let mut th = cx.table(&mut v, CTX)?;
    let namespace = take_k8s_namespace(cx, &mut th, CTX);
    let external_secrets = take_k8s_names(cx, &mut th, "external_secrets", CTX);
    let push_secrets = take_k8s_names(cx, &mut th, "push_secrets", CTX);
    let (policies, auth_role) = take_policies_and_role(cx, &mut th, CTX, "ESO", "eso");
    let access = match cx.take_strings(&mut th, "access", CTX) {
        Some(items) => {
            let mut a = EsoAccess {
                read: false,
                push: false,
                list: false,
            };
            for (item, span) in items {
                match item.as_str() {
                    "read" => a.read = true,
                    "push" => a.push = true,
                    "list" => a.list = true,
                    other => cx.err(span, format!("unknown ESO access `{}`", shown(other)), Some("one of `read` (ExternalSecret), `push` (PushSecret), `list` (dataFrom.find)".into())),
                }
            }
            a
        }
        None => EsoAccess::default(),
    };
    cx.finish(th, CTX);
    Some(Eso {
        namespace,
        external_secrets,
        push_secrets,
        policies,
        auth_role,
        access,
    })
}

/// A list of Kubernetes object names (`external_secrets`, `static_secrets`), each checked.
fn take_k8s_names(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    key: &'static str,
    ctx: &str,
) -> Vec<String> {
    cx.take_strings(th, key, ctx)
        .unwrap_or_default()
        .into_iter()
        .filter(|(n, s)| check_k8s_name(cx, n, *s, &format!("an item of `{key}`")))
        .map(|(n, _)| n)
        .collect::<Vec<_>>()
        .kept()
}

/// A list a spec keeps for the whole run, at its length: collected in place from a list of
/// (text, span), it kept that list's larger allocation (100 bytes a list, three lists a spec).
trait Kept {
    fn kept(self) -> Self;
}

impl<T> Kept for Vec<T> {
    fn kept(mut self) -> Self {
        self.shrink_to_fit();
        self
    }
}

/// `policies`, `auth_mount` and `auth_role` of `[eso]` or `[vso]` (`who` names the operator,
/// `role_example` a typical role name).
fn take_policies_and_role(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    ctx: &'static str,
    who: &str,
    role_example: &str,
) -> (Vec<String>, Option<AuthRole>) {
    // Policy and role names go into request paths (`sys/policies/acl/<name>`,
    // `auth/<mount>/role/<name>`): one plain segment each, as vault-seed's own names.
    let policies: Vec<String> = cx
        .take_strings(th, "policies", ctx)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(p, span)| match check_segment(&p) {
            Ok(()) => Some(p),
            Err(why) => {
                cx.err(
                    span,
                    format!("an item of `policies` `{}` {why}", shown(&p)),
                    Some(format!("a Vault policy's name; {SEGMENT_HELP}")),
                );
                None
            }
        })
        .collect::<Vec<_>>()
        .kept();
    let auth_mount = cx.take_checked(
        th,
        "auth_mount",
        ctx,
        check_path,
        &format!("the path of {who}'s auth method under `auth/`, e.g. `kubernetes`"),
    );
    let auth_role = cx
        .take_checked(
            th,
            "auth_role",
            ctx,
            check_segment,
            &format!("the name of {who}'s role in that auth method, e.g. `{role_example}`"),
        )
        .map(|name| AuthRole {
            mount: auth_mount.clone().unwrap_or_else(|| "kubernetes".into()),
            name,
        });
    (policies, auth_role)
}

/// `[vso]`: the Vault Secrets Operator's VaultStaticSecrets, policies and auth role.
fn parse_vso(cx: &mut Cx<'_>, mut v: Value<'_>) -> Option<Vso> {
    const CTX: &str = "`[vso]`";
    let mut th = cx.table(&mut v, CTX)?;
    let namespace = take_k8s_namespace(cx, &mut th, CTX);
    let static_secrets = take_k8s_names(cx, &mut th, "static_secrets", CTX);
    let (policies, auth_role) = take_policies_and_role(cx, &mut th, CTX, "VSO", "vso");
    cx.finish(th, CTX);
    Some(Vso {
        namespace,
        static_secrets,
        policies,
        auth_role,
    })
}

/// `[argocd]`: Argo CD's namespace (default `argocd`), the secrets app and its consumers. Each
/// Application name, with `{env}` replaced by every environment's name, must be a Kubernetes
/// object name (Argo CD's `metadata.name`: a DNS-1123 subdomain).
fn parse_argocd(
    cx: &mut Cx<'_>,
    mut v: Value<'_>,
    environments: &BTreeMap<String, EnvEntry>,
) -> Option<Argocd> {
    const CTX: &str = "`[argocd]`";
    let table_span = v.span;
    let mut th = cx.table(&mut v, CTX)?;
    let before = cx.diags.len();
    let namespace = take_k8s_namespace(cx, &mut th, CTX);
    let app_name = |cx: &mut Cx<'_>, name: &str, span: Span, what: &str| {
        if environments.is_empty() || !name.contains(ENV_PLACEHOLDER) {
            return check_k8s_name(cx, name, span, what);
        }
        environments.keys().all(|env| {
            check_k8s_name(
                cx,
                &name.replace(ENV_PLACEHOLDER, env),
                span,
                &format!("{what} in environment `{env}`"),
            )
        })
    };
    let secrets_app = match cx.take_string(&mut th, "secrets_app", CTX) {
        Some((name, span)) => app_name(cx, &name, span, "`secrets_app`").then_some(name),
        None => {
            if !th.contains("secrets_app") {
                cx.err(
                    table_span,
                    "missing key `secrets_app` in `[argocd]`",
                    Some("the Argo CD Application that creates the ExternalSecrets, e.g. `secrets_app = \"core-service-secrets\"`".into()),
                );
            }
            None
        }
    };
    let mut consumers = Vec::new();
    for (name, span) in cx
        .take_strings(&mut th, "consumers", CTX)
        .unwrap_or_default()
    {
        if !app_name(cx, &name, span, "an item of `consumers`") {
            continue;
        }
        if secrets_app.as_deref() == Some(name.as_str()) {
            cx.err(
                span,
                format!("`{}` is the secrets app and one of its consumers", shown(&name)),
                Some("a consumer is an Application that reads the secrets and must sync after the secrets app".into()),
            );
        } else if consumers.contains(&name) {
            cx.err(
                span,
                format!("consumer `{}` is listed twice", shown(&name)),
                Some("list each Application once".into()),
            );
        } else {
            consumers.push(name);
        }
    }
    cx.finish(th, CTX);
    if cx.diags.len() > before {
        return None;
    }
    Some(Argocd {
        namespace: namespace.unwrap_or_else(|| "argocd".into()),
        secrets_app: secrets_app?,
        consumers,
    })
}

fn parse_secrets(cx: &mut Cx<'_>, v: Value<'_>, key_span: Span, envs: &[String]) -> Vec<Secret> {
    let entries = cx.entries(v, "`[secrets]`");
    // Sized once: a spec's secrets are held for the whole run.
    let mut out = Vec::with_capacity(entries.len());
    if entries.is_empty() {
        cx.err(
            key_span,
            "`[secrets]` is empty",
            Some("add at least one secret, e.g. `[secrets.API_KEY_SALT]`".into()),
        );
    }
    for (key, mut val) in entries {
        let name = key.name.to_string();
        let ctx = format!("`[secrets.{}]`", shown(&name));
        if let Err(why) = check_path(&name) {
            cx.err(
                key.span,
                format!("secret name `{}` {why}", shown(&name)),
                Some(SEGMENT_HELP.into()),
            );
        }
        let Some(mut th) = cx.table(&mut val, &ctx) else {
            continue;
        };
        let description = cx.take_string(&mut th, "description", &ctx);
        if description.is_none() && !th.contains("description") {
            cx.err(key.span, format!("secret `{}` has no `description`", shown(&name)), Some("people read specs: say what the secret is for, e.g. `description = \"Fernet key encrypting stored credentials\"`".into()));
        }
        let fixed_span = th.take("fixed").map(|(k, mut v)| {
            let span = k.span;
            let b = match v.take() {
                ValueInner::Boolean(b) => Some(b),
                other => {
                    cx.err(
                        v.span,
                        format!(
                            "`fixed` in {ctx} must be `true` or `false`, found {}",
                            other.type_str()
                        ),
                        None,
                    );
                    None
                }
            };
            (b.unwrap_or(false), span)
        });
        let fixed = fixed_span.is_some_and(|(b, _)| b);
        let provided = parse_provided(cx, &mut th, &ctx, envs);
        if let (Some(_), Some((true, span))) = (&provided, fixed_span) {
            cx.err(
                span,
                format!("provided secret `{}` cannot be `fixed`", shown(&name)),
                Some("`fixed` stops vault-seed rotating what it wrote; vault-seed never writes a provided secret at all: remove `fixed`".into()),
            );
        }
        let fields = match th.take("fields") {
            Some((fk, f)) => {
                let declared = f.has_keys();
                let fields = parse_fields_of(cx, f, &ctx, provided.is_some());
                if !declared {
                    cx.err(
                        fk.span,
                        format!("secret `{}` has no fields", shown(&name)),
                        Some("e.g. `fields.password = { generator = \"hex32\" }`".into()),
                    );
                }
                fields
            }
            None => {
                cx.err(
                    key.span,
                    format!("secret `{}` has no `fields`", shown(&name)),
                    Some("e.g. `fields.password = { generator = \"hex32\" }`".into()),
                );
                Vec::new()
            }
        };
        cx.finish(th, &ctx);
        let (line, col) = cx.src.line_col(key.span.start);
        out.push(Secret {
            name: cx.name(&name),
            fixed,
            fields: cx.shared(fields),
            provided: provided.map(Arc::new),
            location: super::Location {
                file: Arc::clone(&cx.src.path),
                line,
                col,
            },
        });
    }
    out
}

fn parse_fields(cx: &mut Cx<'_>, v: Value<'_>, secret_ctx: &str) -> Vec<Field> {
    parse_fields_of(cx, v, secret_ctx, false)
}

/// The fields of a secret; a provided secret's fields may leave the generator out (`{}`: any
/// non-empty text), and its generator only validates.
fn parse_fields_of(cx: &mut Cx<'_>, v: Value<'_>, secret_ctx: &str, provided: bool) -> Vec<Field> {
    let mut out = Vec::new();
    for (key, val) in cx.entries(v, &format!("`fields` of {secret_ctx}")) {
        let name = key.name.to_string();
        if let Err(why) = check_segment(&name) {
            cx.err(
                key.span,
                format!("field name `{}` {why}", shown(&name)),
                Some(SEGMENT_HELP.into()),
            );
            continue;
        }
        let ctx = format!("field `{name}` of {secret_ctx}");
        let span = val.span;
        let generator = if provided && val.as_table().is_some_and(|t| t.is_empty()) {
            Some(crate::generate::Generator::Any)
        } else {
            parse_generator(cx, val, &ctx)
        };
        if let Some(generator) = generator {
            if provided && generator.is_placeholder() {
                cx.err(
                    span,
                    format!("{ctx} is provided by another application: a placeholder cannot validate it"),
                    Some("a placeholder accepts any value but its marker; give a generator that checks the value's format, or `{}` to accept any non-empty text".into()),
                );
                continue;
            }
            out.push(Field { name, generator });
        }
    }
    out
}

/// `provided_by`, `push_secret`, `mount`, `path` of a secret: a provided secret, or `None`. The
/// last three without `provided_by` are problems: a secret vault-seed seeds lives under
/// `[vault]`.
fn parse_provided(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    ctx: &str,
    envs: &[String],
) -> Option<Provided> {
    // Present but invalid still makes the secret provided: its other keys are not misreported.
    let has_by = th.contains("provided_by");
    let by = cx.take_checked(
        th,
        "provided_by",
        ctx,
        check_words,
        "name the provider in words, e.g. `provided_by = \"ask-db: CNPG password pushed by PushSecret core-service-db-password\"`",
    );
    let push_secret = cx.take_string(th, "push_secret", ctx).and_then(|(p, span)| {
        match check_push_secret(&p) {
            Ok(()) => p
                .split_once('/')
                .map(|(n, m)| ((n.to_string(), m.to_string()), span)),
            Err(why) => {
                cx.err(
                    span,
                    format!("`push_secret` `{}` {why}", shown(&p)),
                    Some("the provider's PushSecret as `NAMESPACE/NAME`, e.g. `push_secret = \"ask/core-service-db-password\"`".into()),
                );
                None
            }
        }
    });
    let mount = cx.take_string(th, "mount", ctx);
    let path = cx.take_string(th, "path", ctx);
    if !has_by {
        for (key, span) in [
            ("push_secret", push_secret.as_ref().map(|p| p.1)),
            ("mount", mount.as_ref().map(|m| m.1)),
            ("path", path.as_ref().map(|p| p.1)),
        ] {
            if let Some(span) = span {
                cx.err(
                    span,
                    format!("`{key}` in {ctx} is for a secret another application provides"),
                    Some("add `provided_by = \"<the provider, in words>\"`; a secret vault-seed seeds lives under `[vault]`".into()),
                );
            }
        }
        return None;
    }
    let mut mount_ok = None;
    if let Some((m, span)) = mount {
        if let Err(why) = check_path(&m) {
            cx.err(
                span,
                format!("mount `{}` {why}", shown(&m)),
                Some("write the mount without slashes, e.g. `mount = \"secret\"`".into()),
            );
        } else if let Err((why, help)) = check_kv_mount(&m) {
            cx.err(span, format!("mount `{m}` {why}"), Some(help));
        } else {
            mount_ok = Some(m);
        }
    }
    let mut path_ok = None;
    if let Some((p, span)) = path {
        let leftover = p.replace(ENV_PLACEHOLDER, "");
        if let Err(why) = check_path(&p.replace(ENV_PLACEHOLDER, "env")) {
            cx.err(
                span,
                format!("path `{}` {why}", shown(&p)),
                Some(format!("the provided secret's full path under the mount, e.g. `path = \"ask/postgresql/{ENV_PLACEHOLDER}/core-service-db-password\"`; {SEGMENT_HELP}")),
            );
        } else if leftover.contains('{') || leftover.contains('}') {
            cx.err(
                span,
                format!("path `{}` has an unknown placeholder", shown(&p)),
                Some(format!("only `{ENV_PLACEHOLDER}` is replaced")),
            );
        } else {
            let before = cx.diags.len();
            check_kv_endpoint_folder(cx, &p, span, envs.iter());
            if cx.diags.len() == before {
                path_ok = Some(p);
            }
        }
    }
    Some(Provided {
        // An invalid `provided_by` was reported; the spec is not used.
        by: by.unwrap_or_default(),
        push_secret: push_secret.map(|p| p.0),
        mount: mount_ok,
        path: path_ok,
    })
}

/// Words for people (`provided_by`): not empty, nothing that acts on a terminal.
fn check_words(s: &str) -> Result<(), String> {
    check_context(s)
}

/// `NAMESPACE/NAME` of a Kubernetes object.
fn check_push_secret(s: &str) -> Result<(), String> {
    let Some((ns, name)) = s.split_once('/') else {
        return Err("is not `NAMESPACE/NAME`".into());
    };
    check_k8s_namespace(ns)?;
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    match ok {
        true => Ok(()),
        false => Err(format!(
            "has `{}`, which is not a valid Kubernetes name",
            shown(name)
        )),
    }
}

fn parse_generator(cx: &mut Cx<'_>, mut v: Value<'_>, ctx: &str) -> Option<Generator> {
    let span = v.span;
    if let Some(s) = v.as_str() {
        cx.err(
            span,
            format!("{ctx} must be a table, not a string"),
            Some(format!("write `{{ generator = \"{}\" }}`", shown(s))),
        );
        return None;
    }
    let mut th = cx.table(&mut v, ctx)?;
    let gen = cx.take_string(&mut th, "generator", ctx);
    let bytes = cx.take_int(&mut th, "bytes", ctx);
    let length = cx.take_int(&mut th, "length", ctx);
    let classes = cx.take_strings(&mut th, "classes", ctx);
    let marker = cx.take_string(&mut th, "marker", ctx);
    if gen.is_none() && !th.contains("generator") {
        cx.err(
            span,
            format!("{ctx} has no `generator`"),
            Some(format!("one of {}", list_str(GENERATOR_NAMES))),
        );
    }
    cx.finish(th, ctx);
    let (name, gspan) = gen?;
    let class_names: Option<Vec<String>> = classes
        .as_ref()
        .map(|c| c.iter().map(|(n, _)| n.clone()).collect());
    let params = Params {
        name: &name,
        bytes: bytes.map(|b| b.0),
        length: length.map(|l| l.0),
        classes: class_names.as_deref(),
        marker: marker.as_ref().map(|m| m.0.as_str()),
    };
    match Generator::from_params(&params, Syntax::Spec) {
        Ok(g) => Some(g),
        Err(errors) => {
            for e in errors {
                let at = match e.param {
                    Param::Generator => gspan,
                    Param::Bytes => bytes.map_or(span, |b| b.1),
                    Param::Length => length.map_or(span, |l| l.1),
                    Param::Classes(i) => classes
                        .as_ref()
                        .and_then(|c| c.get(i))
                        .map_or(span, |c| c.1),
                    Param::Marker => marker.as_ref().map_or(span, |m| m.1),
                };
                cx.err(at, e.message, Some(e.help));
            }
            None
        }
    }
}

/// A secret of the spec set: (spec index, secret index), as `u32`s: the cross-file checks hold
/// one per path and field.
type Owner = (u32, u32);

/// Per environment, across every spec that defines it: two secrets at one Vault path, and two
/// secrets or fields that `set` and `rotate` could not tell apart (secret `a.b` field `c`, secret
/// `a` field `b.c`). Each pair is reported once, however many environments it appears in.
///
/// One environment at a time: its targets made once, and a map from each path, and each name
/// `set` and `rotate` accept, to its first owner.
fn check_environments(specs: &[Spec], diags: &mut Vec<Diagnostic>) {
    let env_names: BTreeSet<&str> = specs
        .iter()
        .flat_map(|s| s.environments.keys().map(String::as_str))
        .collect();
    let secret = |(s, k): Owner| &specs[s as usize].secrets[k as usize];
    // (kind, first, later) -> (the first environment's diagnostic, how many more environments)
    let mut found: HashMap<(bool, Owner, Owner), (Diagnostic, usize)> = HashMap::new();
    let mut order = Vec::new();
    let mut note =
        |key: (bool, Owner, Owner), make: &dyn Fn() -> Diagnostic| match found.get_mut(&key) {
            Some((_, more)) => *more += 1,
            None => {
                order.push(key);
                found.insert(key, (make(), 0));
            }
        };
    for env in env_names {
        let mut targets: Vec<(Owner, Target)> = Vec::new();
        for (si, spec) in specs.iter().enumerate() {
            let Some(e) = spec.environments.get(env) else {
                continue;
            };
            let origin = spec.origin();
            for (ki, s) in spec.secrets.iter().enumerate() {
                if let Some(t) = spec.target(&origin, e, s) {
                    targets.push(((si as u32, ki as u32), t));
                }
            }
        }
        // Each path's first owner, by the path.
        let mut paths: HashMap<String, Owner> = HashMap::new();
        for (later, t) in &targets {
            let path = t.full_path();
            match paths.get(&path) {
                Some(&first) => note((true, first, *later), &|| {
                    Diagnostic::at(
                        secret(*later).location.clone(),
                        format!("duplicate path `{}` in environment `{env}`", shown(&path)),
                    )
                    .with_help(format!(
                        "also defined at {}; each path must have one owner",
                        secret(first).location
                    ))
                }),
                None => {
                    paths.insert(path, *later);
                }
            }
        }
        // What `set`/`rotate` accept for a secret: its path (the whole secret), and its path, a
        // dot and a field. Two different secrets answering to one name are ambiguous; a path
        // claimed twice is the duplicate above. Each name's first claim: (target, field).
        let field_name = |(t, f): (usize, Option<usize>)| f.map(|i| &*targets[t].1.fields[i].name);
        let mut names: HashMap<String, (usize, Option<usize>)> = HashMap::new();
        for (ti, (_, t)) in targets.iter().enumerate() {
            let full = t.full_path();
            let fields = t.fields.iter().enumerate();
            let claims = fields.map(|(i, f)| (format!("{full}.{}", f.name), Some(i)));
            for (name, lf) in std::iter::once((full.clone(), None)).chain(claims) {
                let Some(&(fi, ff)) = names.get(&name) else {
                    names.insert(name, (ti, lf));
                    continue;
                };
                let (first, later) = (targets[fi].0, targets[ti].0);
                // The same field (or none) on both sides means the same path: a duplicate, above.
                if first == later || field_name((fi, ff)) == field_name((ti, lf)) {
                    continue;
                }
                let what = |claim: (usize, Option<usize>)| {
                    let s = secret(targets[claim.0].0);
                    match field_name(claim) {
                        Some(field) => {
                            format!("secret `{}` field `{}`", shown(&s.name), shown(field))
                        }
                        None => format!("secret `{}`", shown(&s.name)),
                    }
                };
                note((false, first, later), &|| {
                    Diagnostic::at(
                        secret(later).location.clone(),
                        format!(
                            "`set` and `rotate` could not tell apart {} and {}: both are `{}` in environment `{env}`",
                            what((fi, ff)),
                            what((ti, lf)),
                            shown(&name)
                        ),
                    )
                    .with_help(format!(
                        "the other is at {}; rename a secret or a field (dots in field names are fine where they clash with nothing)",
                        secret(first).location
                    ))
                });
            }
        }
    }
    for key in order {
        let (mut d, more) = found.remove(&key).unwrap_or_else(|| unreachable!());
        if more > 0 {
            d.message.push_str(&format!(" and {more} other(s)"));
        }
        diags.push(d);
    }
}

const SEGMENT_HELP: &str = "use letters, digits, `_`, `-` and `.` (not `.` or `..` alone)";

/// One path segment: `[A-Za-z0-9_.-]+`, not `.` or `..`. Strict on purpose: nothing that could
/// escape a mount, need URL encoding, or confuse a shell.
pub(crate) fn check_segment(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("is empty".into());
    }
    if s == "." || s == ".." {
        return Err("is a relative path segment".into());
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_-.".contains(*c)))
    {
        return Err(format!("contains {}", describe_char(c)));
    }
    if s.len() > 255 {
        return Err("is longer than 255 characters".into());
    }
    Ok(())
}

/// A path of segments separated by single `/`, no leading or trailing `/`.
pub(crate) fn check_path(p: &str) -> Result<(), String> {
    if p.starts_with('/') || p.ends_with('/') {
        return Err("starts or ends with `/`".into());
    }
    if p.contains("//") {
        return Err("contains `//`".into());
    }
    if p.split('/').count() > 32 {
        return Err("is deeper than 32 folders".into());
    }
    p.split('/').try_for_each(check_segment)
}

fn describe_char(c: char) -> String {
    match c {
        ' ' => "a space".into(),
        '/' => "`/`".into(),
        c if c.is_control() => format!("a control character (U+{:04X})", c as u32),
        c if is_unshowable(c) => format!("an invisible formatting character (U+{:04X})", c as u32),
        c => format!("`{c}`"),
    }
}

/// OpenBao's API prefixes that are not secrets engines, and what is behind each. From openbao
/// `internal/vault/mount.go` (`protectedMounts`: nothing can be mounted under them) and
/// `internal/vault/routing/routing.go` (`CredentialRoutePrefix`, `MountPath*`).
const API_PREFIXES: [(&str, &str); 5] = [
    ("auth", "auth methods: users, roles and their policies"),
    ("sys", "the system backend: policies, mounts, seal"),
    ("identity", "the identity store: entities and groups"),
    ("cubbyhole", "the token's private store"),
    ("audit", "audit devices"),
];

/// KV v2's endpoints that take a path after them (openbao `internal/builtin/logical/kv/`:
/// `path_data.go`, `path_metadata.go`, `path_delete.go`, `path_destroy.go`, `path_subkeys.go`).
/// vault-seed adds `data/` and `metadata/` itself; a mount or folder that names one reaches
/// another path's endpoint (`destroy/` erases versions for good).
const KV2_ENDPOINTS: [&str; 7] = [
    "data",
    "metadata",
    "detailed-metadata",
    "delete",
    "undelete",
    "destroy",
    "subkeys",
];

/// A mount must be a secrets engine's mount: no segment is one of OpenBao's API prefixes (any
/// segment, since a request path may begin with a namespace, and OpenBao reserves the same names
/// for namespaces: `internal/helper/namespace/namespace.go`, `reservedNames`; in any case,
/// though OpenBao's paths are case-sensitive, so that `Sys` is refused too), and no segment after
/// the first is a KV v2 endpoint (`secret/data` is `secret`'s data endpoint, not a mount).
fn check_kv_mount(mount: &str) -> Result<(), (String, String)> {
    for (i, seg) in mount.split('/').enumerate() {
        if let Some((prefix, what)) = API_PREFIXES
            .iter()
            .find(|(p, _)| p.eq_ignore_ascii_case(seg))
        {
            return Err((
                format!("reaches OpenBao's `{prefix}/` API ({what}), not a KV secrets engine"),
                "vault-seed writes only to KV secrets engines: give the KV mount's path, e.g. `mount = \"secret\"`".into(),
            ));
        }
        if i > 0 && KV2_ENDPOINTS.contains(&seg) {
            return Err((
                format!("has the segment `{seg}`, a KV v2 endpoint: requests would reach another path's `{seg}/` endpoint"),
                "give the mount alone, e.g. `mount = \"secret\"`: vault-seed adds `data/` and `metadata/` itself".into(),
            ));
        }
    }
    Ok(())
}

/// The folder's first segment, in each environment, must not be a KV v2 endpoint: on a KV v1
/// mount, or on a mount that is not what the spec says, a write to `<mount>/destroy/...` would
/// erase another secret's versions.
fn check_kv_endpoint_folder<'a>(
    cx: &mut Cx<'_>,
    template: &str,
    span: Span,
    envs: impl Iterator<Item = &'a String>,
) {
    let first = template.split('/').next().unwrap_or_default();
    let help = "rename the folder: where the mount is KV v1, or not what the spec says, writes there reach a KV v2 endpoint (`destroy/` erases versions)";
    if !first.contains(ENV_PLACEHOLDER) {
        if KV2_ENDPOINTS.contains(&first) {
            cx.err(
                span,
                format!(
                    "path template `{}` starts with `{first}`, a KV v2 endpoint",
                    shown(template)
                ),
                Some(help.into()),
            );
        }
        return;
    }
    for env in envs {
        let seg = first.replace(ENV_PLACEHOLDER, env);
        if KV2_ENDPOINTS.contains(&seg.as_str()) {
            cx.err(
                span,
                format!(
                    "path `{}` of environment `{env}` starts with `{seg}`, a KV v2 endpoint",
                    shown(&template.replace(ENV_PLACEHOLDER, env))
                ),
                Some(help.into()),
            );
        }
    }
}

/// The characters and names OpenBao refuses in a namespace path (openbao
/// `internal/helper/namespace/namespace.go`: `reservedNames`; `Validate`: no spaces, no
/// non-graphic characters, no `+` or `*`).
const RESERVED_NAMESPACES: [&str; 8] = [
    ".",
    "..",
    "root",
    "sys",
    "audit",
    "auth",
    "cubbyhole",
    "identity",
];

const NAMESPACE_HELP: &str = "an OpenBao namespace path such as `platform` or `platform/team-a`: segments of visible ASCII without `+` or `*`, none of them `root`, `sys`, `audit`, `auth`, `cubbyhole`, `identity`, `.` or `..`";

/// An OpenBao namespace path, as `X-Vault-Namespace` carries it: segments separated by `/` (one
/// trailing `/` allowed, as OpenBao adds one), each by OpenBao's rules. Stricter than OpenBao in
/// one way: ASCII only, since an HTTP header value is visible ASCII.
fn check_namespace(ns: &str) -> Result<(), String> {
    if ns.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) = ns
        .chars()
        .find(|c| !c.is_ascii_graphic() || matches!(c, '+' | '*'))
    {
        return Err(format!("contains {}", describe_char(c)));
    }
    for seg in ns.strip_suffix('/').unwrap_or(ns).split('/') {
        if seg.is_empty() {
            return Err("has an empty segment".into());
        }
        if RESERVED_NAMESPACES.contains(&seg) {
            return Err(format!("has the reserved segment `{seg}`"));
        }
    }
    Ok(())
}

/// A kubeconfig context name: any text (contexts are free-form, e.g. an EKS ARN), but not empty
/// and nothing that acts on a terminal when it is shown.
fn check_context(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) = name.chars().find(|&c| is_unshowable(c)) {
        return Err(format!("contains {}", describe_char(c)));
    }
    if name.trim() != name {
        return Err("starts or ends with whitespace".into());
    }
    Ok(())
}

const K8S_NAMESPACE_HELP: &str = "a DNS-1123 label: at most 63 lowercase letters, digits and `-`, starting and ending with a letter or digit";

/// A Kubernetes namespace: a DNS-1123 label (k8s.io/apimachinery
/// `pkg/api/validation/generic.go`: `ValidateNamespaceName = NameIsDNSLabel`).
fn check_k8s_namespace(n: &str) -> Result<(), String> {
    let ok = !n.is_empty()
        && n.len() <= 63
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && n.starts_with(|c: char| c.is_ascii_alphanumeric())
        && n.ends_with(|c: char| c.is_ascii_alphanumeric());
    match ok {
        true => Ok(()),
        false => Err("is not a valid Kubernetes namespace name".into()),
    }
}

/// The key `namespace` of a table, a Kubernetes namespace.
fn take_k8s_namespace(cx: &mut Cx<'_>, th: &mut TableHelper<'_>, ctx: &str) -> Option<String> {
    cx.take_checked(
        th,
        "namespace",
        ctx,
        check_k8s_namespace,
        K8S_NAMESPACE_HELP,
    )
}

/// The address as `apply` will parse it (plain http off loopback is decided at run time, where
/// `--insecure-http` is known).
fn check_addr(a: &str) -> Result<(), String> {
    if a.chars().any(|c| c.is_whitespace()) {
        return Err("contains whitespace".into());
    }
    crate::vault::address::parse(a, true)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A Kubernetes object name (DNS-1123 subdomain, lowercase).
fn check_k8s_name(cx: &mut Cx<'_>, n: &str, span: Span, what: &str) -> bool {
    let ok = !n.is_empty()
        && n.len() <= 253
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && n.starts_with(|c: char| c.is_ascii_alphanumeric())
        && n.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !ok {
        cx.err(span, format!("{what} `{}` is not a valid Kubernetes name", shown(n)), Some("lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit".into()));
    }
    ok
}

fn list(items: &[String]) -> String {
    backticked(items)
}

fn list_str(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_text(secrets: &str) -> Vec<(PathBuf, Vec<u8>)> {
        let text = format!(
            "[vault]\nmount = \"secret\"\npath = \"app/{{env}}\"\n[environments.dev]\n[environments.prod]\n{secrets}"
        );
        vec![(PathBuf::from("specs/app.toml"), text.into_bytes())]
    }

    #[test]
    fn many_secrets_in_one_file_load_and_clashes_are_found_once() {
        let mut secrets = String::new();
        for i in 0..20_000 {
            secrets.push_str(&format!(
                "[secrets.S{i}]\ndescription = \"d\"\nfields.v = {{ generator = \"uuid\" }}\n"
            ));
        }
        let set = load_sources(spec_text(&secrets), Vec::new()).unwrap();
        assert_eq!(set.specs[0].secrets.len(), 20_000);
        // `S1.v` (the whole secret) against `S1` field `v`: one problem, not one per environment.
        secrets.push_str(
            "[secrets.\"S1.v\"]\ndescription = \"d\"\nfields.x = { generator = \"uuid\" }\n",
        );
        let Err(LoadError::Invalid(d)) = load_sources(spec_text(&secrets), Vec::new()) else {
            panic!("the clash was not found");
        };
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message
                .contains("secret `S1` field `v` and secret `S1.v`"),
            "{}",
            d[0]
        );
        assert!(
            d[0].message
                .ends_with("in environment `dev` and 1 other(s)"),
            "{}",
            d[0]
        );
    }
}

#[cfg(test)]
mod depth_tests {
    use super::*;

    /// The one problem of a spec file holding `text`: its message, line, column and help.
    fn problem(text: String) -> (String, usize, usize, String) {
        let source = vec![(PathBuf::from("specs/app.toml"), text.into_bytes())];
        let Err(LoadError::Invalid(d)) = load_sources(source, Vec::new()) else {
            panic!("loaded");
        };
        let l = d[0].location.as_ref().unwrap();
        (
            d[0].message.clone(),
            l.line,
            l.col,
            d[0].help.clone().unwrap_or_default(),
        )
    }

    /// 10,000 levels of each nesting TOML has (arrays, inline tables, dotted keys, table and
    /// array-of-tables headers, and all at once): one problem naming the limit at its
    /// line:column, on a test thread's 2 MiB stack.
    #[test]
    fn a_spec_nested_10000_deep_is_refused_naming_the_limit() {
        const N: usize = 10_000;
        let keys = |k: &str, n: usize| vec![k; n].join(".");
        for (what, text, col) in [
            // `x` is level 1: the 128th `[` is level 129, at column 5 + 127.
            (
                "arrays",
                format!("x = {}1{}\n", "[".repeat(N), "]".repeat(N)),
                133,
            ),
            // Two levels each (`{`, `a`): the 64th `{a = ` holds level 129's value.
            (
                "inline tables",
                format!("x = {}1{}\n", "{a = ".repeat(N), "}".repeat(N)),
                325,
            ),
            ("dotted keys", format!("{} = 1\n", keys("a", N)), 257),
            ("table header", format!("[{}]\n", keys("a", N)), 258),
            (
                "array-of-tables header",
                format!("[[{}]]\n", keys("a", N)),
                259,
            ),
            (
                "all at once",
                format!(
                    "[{}]\n{} = {}1{}\n",
                    keys("a", N),
                    keys("b", N),
                    "[".repeat(N),
                    "]".repeat(N)
                ),
                258,
            ),
        ] {
            let (message, line, c, help) = problem(format!("name = \"app\"\n{text}"));
            assert_eq!(message, "the spec nests deeper than 128 levels", "{what}");
            assert_eq!((line, c), (2, col), "{what}");
            assert!(help.contains("`fields.NAME = { ... }`"), "{what}: {help}");
        }
    }

    /// The limit is toml-span's: 128 levels are read, 129 refused, as [`SPEC_MAX_DEPTH`] says.
    #[test]
    fn the_spec_depth_limit_is_toml_spans() {
        let arrays = |n: usize| format!("x = {}1{}\n", "[".repeat(n), "]".repeat(n));
        let dotted = |n: usize| format!("{} = 1\n", vec!["a"; n].join("."));
        // Read (the first problem is the missing `[vault]`, not the nesting).
        for text in [arrays(SPEC_MAX_DEPTH - 1), dotted(SPEC_MAX_DEPTH)] {
            assert_eq!(problem(text).0, "missing table `[vault]`");
        }
        for text in [arrays(SPEC_MAX_DEPTH), dotted(SPEC_MAX_DEPTH + 1)] {
            assert_eq!(problem(text).0, "the spec nests deeper than 128 levels");
        }
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;
    use crate::spec::Target;

    fn sources() -> Vec<(PathBuf, Vec<u8>)> {
        let spec = |app: &str, env: &str, extra: &str| {
            format!(
                "[vault]\nmount = \"secret\"\npath = \"{app}/{{env}}\"\n[environments.{env}]\n{extra}\n\
                 [secrets.ONE]\ndescription = \"d\"\nfields.password = {{ generator = \"hex32\" }}\n\
                 [secrets.TWO]\ndescription = \"d\"\nfields.password = {{ generator = \"hex32\" }}\n"
            )
            .into_bytes()
        };
        vec![
            ("specs/a.toml".into(), spec("a", "dev", "")),
            (
                "specs/b.toml".into(),
                spec(
                    "b",
                    "dev",
                    "vault_addr = \"https://v\"\nvault_namespace = \"ns\"",
                ),
            ),
            ("specs/c.toml".into(), spec("c", "prod", "")),
        ]
    }

    /// Specs with the same `[eso]` share it, and the same environments share them; another
    /// `[eso]` (here one more ExternalSecret) or other environments (here a namespace) are their
    /// own, and each spec reads as it was written.
    #[test]
    fn an_eso_section_and_environments_repeated_across_specs_are_held_once() {
        let spec = |app: &str, externals: &str, env: &str| {
            format!(
                "[vault]\nmount = \"secret\"\npath = \"{app}/{{env}}\"\n[environments.dev]\n{env}\n\
                 [eso]\nnamespace = \"ask\"\nexternal_secrets = [{externals}]\npolicies = [\"eso\"]\n\
                 auth_role = \"eso\"\naccess = [\"read\"]\n\
                 [secrets.ONE]\ndescription = \"d\"\nfields.password = {{ generator = \"hex32\" }}\n"
            )
            .into_bytes()
        };
        let set = load_sources(
            vec![
                ("specs/a.toml".into(), spec("a", "\"es-a\"", "")),
                ("specs/b.toml".into(), spec("b", "\"es-a\"", "")),
                (
                    "specs/c.toml".into(),
                    spec("c", "\"es-a\", \"es-c\"", "kube_namespace = \"apps\""),
                ),
            ],
            Vec::new(),
        )
        .unwrap();
        let [a, b, c] = [0, 1, 2].map(|i| &set.specs[i]);
        assert!(Arc::ptr_eq(&a.eso, &b.eso));
        assert!(!Arc::ptr_eq(&a.eso, &c.eso));
        assert_eq!(a.eso.external_secrets, ["es-a"]);
        assert_eq!(c.eso.external_secrets, ["es-a", "es-c"]);
        assert_eq!(c.eso.namespace.as_deref(), Some("ask"));
        assert_eq!(
            c.eso.auth_role.as_ref().map(|r| r.name.as_str()),
            Some("eso")
        );
        assert!(c.eso.access.read && !c.eso.access.push);
        assert!(Arc::ptr_eq(&a.environments.0, &b.environments.0));
        assert!(!Arc::ptr_eq(&a.environments.0, &c.environments.0));
        let namespace = |s: &Spec| s.environments.get("dev").unwrap().kube_namespace.clone();
        assert_eq!((namespace(a), namespace(c)), (None, Some("apps".into())));
    }

    /// Secrets of different specs with the same name or the same fields share them: held
    /// once, however many applications repeat them.
    #[test]
    fn names_and_fields_repeated_across_specs_are_held_once() {
        let set = load_sources(sources(), Vec::new()).unwrap();
        let (a, b) = (&set.specs[0], &set.specs[1]);
        assert!(Arc::ptr_eq(&a.secrets[0].name, &b.secrets[0].name));
        assert!(Arc::ptr_eq(&a.secrets[0].fields, &b.secrets[0].fields));
        // `ONE` and `TWO` have the same fields, not the same name.
        assert!(Arc::ptr_eq(&a.secrets[0].fields, &a.secrets[1].fields));
        assert_eq!(&*a.secrets[1].name, "TWO");
        // Equal lists only: another generator is another list.
        let other = "[vault]\nmount = \"secret\"\npath = \"x/{env}\"\n[environments.dev]\n\
                     [secrets.ONE]\ndescription = \"d\"\nfields.password = { generator = \"fernet\" }\n";
        let mut with_other = sources();
        with_other.push(("specs/d.toml".into(), other.as_bytes().to_vec()));
        let set = load_sources(with_other, Vec::new()).unwrap();
        let d = &set.specs[3];
        assert!(Arc::ptr_eq(
            &set.specs[0].secrets[0].name,
            &d.secrets[0].name
        ));
        assert!(!Arc::ptr_eq(
            &set.specs[0].secrets[0].fields,
            &d.secrets[0].fields
        ));
        assert_eq!(
            d.secrets[0].fields[0].generator,
            crate::generate::Generator::Fernet
        );
    }

    /// `into_targets` (which drops each spec once its targets are made) resolves an
    /// environment as `plan` does: the same targets, shared names, address and namespace, and
    /// the same refusals.
    #[test]
    fn into_targets_resolves_as_plan_does() {
        let only_b = ["b".to_string()];
        let only_a = ["specs/a.toml".to_string()];
        let nothing = ["nothing".to_string()];
        for (env, only) in [
            ("dev", &[][..]),
            ("dev", &only_b[..]),
            ("dev", &only_a[..]),
            ("prod", &[][..]),
            ("dev", &nothing[..]),
            ("staging", &[][..]),
        ] {
            let set = load_sources(sources(), Vec::new()).unwrap();
            let planned = set.plan(env, only);
            let owned = load_sources(sources(), Vec::new())
                .unwrap()
                .into_targets(env, only);
            match (planned, owned) {
                (Ok(p), Ok(o)) => {
                    let paths = |t: &[Target]| t.iter().map(Target::full_path).collect::<Vec<_>>();
                    assert_eq!(paths(&p.targets), paths(&o.targets), "{env} {only:?}");
                    assert!(!o.targets.is_empty());
                    assert_eq!(p.shared_names, o.shared_names);
                    assert_eq!(p.vault_addr(), o.vault_addr.as_deref(), "{env} {only:?}");
                    assert_eq!(p.vault_namespace(), o.vault_namespace.as_deref());
                    assert_eq!(p.env, o.env);
                }
                (Err(p), Err(o)) => assert_eq!(p.to_string(), o.to_string()),
                (p, o) => panic!("{env} {only:?}: plan {p:?}, into_targets {o:?}"),
            }
        }
    }

    /// `plan_without_secrets` (verify's) resolves every environment as `plan` does, with the
    /// same refusals, and leaves the specs of the environment without their secrets (their
    /// targets say all they did).
    #[test]
    fn a_plan_without_secrets_resolves_as_plan_does_and_drops_the_secrets() {
        let only_b = ["b".to_string()];
        let nothing = ["nothing".to_string()];
        for (env, only) in [
            ("dev", &[][..]),
            ("dev", &only_b[..]),
            ("prod", &[][..]),
            ("dev", &nothing[..]),
            ("staging", &[][..]),
        ] {
            let set = load_sources(sources(), Vec::new()).unwrap();
            let planned = set.plan(env, only);
            let mut lean = load_sources(sources(), Vec::new()).unwrap();
            match (planned, lean.plan_without_secrets(env, only)) {
                (Ok(p), Ok(l)) => {
                    let paths = |t: &[Target]| t.iter().map(Target::full_path).collect::<Vec<_>>();
                    assert_eq!(paths(&p.targets), paths(&l.targets), "{env} {only:?}");
                    let fields = |t: &[Target]| t.iter().map(|t| t.fields.len()).sum::<usize>();
                    assert_eq!(fields(&p.targets), fields(&l.targets));
                    assert_eq!(p.shared_names, l.shared_names);
                    let files = |x: &crate::spec::EnvPlan<'_>| {
                        x.specs
                            .iter()
                            .map(|(s, _)| s.file.clone())
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(files(&p), files(&l));
                    assert!(l.specs.iter().all(|(s, _)| s.secrets.is_empty()));
                }
                (Err(p), Err(l)) => assert_eq!(p.to_string(), l.to_string()),
                (p, l) => panic!("{env} {only:?}: plan {p:?}, plan_without_secrets {l:?}"),
            }
        }
    }
}
