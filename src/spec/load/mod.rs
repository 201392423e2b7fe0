//! Phase 1 (parse with spans) and phase 2 (validate into typed values) of spec loading.
//!
//! The TOML is walked by hand over `toml_span` values so that every problem of every file is
//! collected, each with the span of the key or value at fault, before anything is returned.
//! One file per spec section, as cargo-deny has one per check; `cross` holds the checks across
//! the files, `names` the checks of names and paths several sections use.

mod argocd;
mod cross;
mod derived;
mod environments;
mod eso;
mod names;
mod secrets;
mod syntax;
mod vault;
mod vso;

use std::borrow::{Borrow, Cow};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::{self, Display};
use std::hash::Hash;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toml_span::value::{Key, ValueInner};
use toml_span::{de_helpers::TableHelper, ErrorKind, Span, Value};

use super::diag::{is_unshowable, shown, Diagnostic, SourceFile, SHOWN_MAX};
use super::{
    few, Argocd, AuthRole, Environment, Environments, Eso, EsoAccess, Field, Provided, Rotation,
    Secret, SecretOverride, Spec, SpecSet, Target, VaultTarget, Vso, ENV_PLACEHOLDER, MAX_KEEP,
};
use crate::base::backticks::backticked;
use crate::base::kv::KvVersion;
use crate::base::suggest::suggest;
use crate::generate::{Generator, Param, Params, Syntax, GENERATOR_NAMES};
use argocd::*;
use cross::*;
use derived::{Built, SourceKeys};
use environments::*;
use eso::*;
use names::*;
pub(crate) use names::{check_segment, SEGMENT_HELP};
use secrets::*;
use vault::*;
use vso::*;

/// An environment's override may change a keyring field's generator only to one whose values
/// can still form a keyring: the keys already stored are a list, and `rotate` keeps them.
fn keyrings_kept(cx: &mut Cx<'_>, secrets: &[Secret], environments: &BTreeMap<String, EnvEntry>) {
    if !any_override(environments) {
        return;
    }
    let by_name: HashMap<&str, &Secret> = secrets.iter().map(|s| (&*s.name, s)).collect();
    for (env, overrides) in environments.values() {
        for (secret, Written { span, ov, .. }) in overrides {
            let Some(s) = by_name.get(secret.as_str()) else {
                continue;
            };
            for f in s.fields.iter() {
                let Some(g) = ov.fields.get(&f.name) else {
                    continue;
                };
                if matches!(f.rotation, Rotation::Keyring { .. }) && !g.keyring_allowed() {
                    cx.err(
                        *span,
                        format!(
                            "environment `{}` makes keyring field `{}` of `{}` a `{}`, which cannot be a keyring",
                            env.name,
                            f.name,
                            shown(secret),
                            g.name()
                        ),
                        Some("keep a `fernet`, `hex` or `base64` generator in the override, or give the field `rotation = \"replace\"`".into()),
                    );
                }
            }
        }
    }
}

/// Whether an environment overrides a secret: most specs have none, and then no check of
/// overrides needs the secrets by name.
fn any_override(environments: &BTreeMap<String, EnvEntry>) -> bool {
    environments
        .values()
        .any(|(_, overrides)| !overrides.is_empty())
}

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
    pub fn help(&self) -> Option<String> {
        self.advice().map(str::to_string)
    }

    /// The advice, as written.
    fn advice(&self) -> Option<&'static str> {
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
        let entry = match entry {
            Ok(e) => e,
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
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        // The listing's own type where it is a file or a directory (no call to the system); a
        // symbolic link, or a type the listing does not give, is followed and asked.
        match entry.file_type() {
            Ok(t) if t.is_file() => {
                files.push(path);
                continue;
            }
            Ok(t) if t.is_dir() => continue,
            _ => {}
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

/// Files each thread must have before loading is shared between threads: for fewer, starting a
/// thread costs more than it saves.
const FILES_PER_THREAD: usize = 64;

/// Read each file (a file that cannot be read is a problem) and load them, after `diags`, in
/// file order. On several cores, each thread takes a run of consecutive files, and the runs'
/// specs and problems are joined in file order: the same set and the same problems, first to
/// last, as one thread finds them (only what specs share, [`Shared`], is held once per thread).
fn read_and_load(files: &[PathBuf], diags: Vec<Diagnostic>) -> Result<SpecSet, LoadError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(files.len() / FILES_PER_THREAD)
        .max(1);
    read_in_runs(files, diags, threads)
}

/// [`read_and_load`] on `threads` threads.
fn read_in_runs(
    files: &[PathBuf],
    mut diags: Vec<Diagnostic>,
    threads: usize,
) -> Result<SpecSet, LoadError> {
    // One spec a file: sized once, where doubling could leave half of it unused.
    let mut specs = Vec::with_capacity(files.len());
    if threads == 1 {
        load_run(files, &mut specs, &mut diags);
        return finish(specs, diags);
    }
    let runs: Vec<(Vec<Spec>, Vec<Diagnostic>)> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(files.len().div_ceil(threads))
            .map(|run| {
                s.spawn(move || {
                    let (mut specs, mut diags) = (Vec::with_capacity(run.len()), Vec::new());
                    load_run(run, &mut specs, &mut diags);
                    (specs, diags)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    for (run_specs, run_diags) in runs {
        specs.extend(run_specs);
        diags.extend(run_diags);
    }
    finish(specs, diags)
}

/// Read and load `files` one at a time, so that only one file's text is held at once (a
/// platform's whole set of specs can be tens of megabytes).
///
/// Each file is read into the buffer the one before it was read into: a new one a file (as
/// `std::fs::read` makes) is a block large enough that the allocator sorts its free lists
/// before handing it out.
fn load_run(files: &[PathBuf], specs: &mut Vec<Spec>, diags: &mut Vec<Diagnostic>) {
    let mut shared = Shared::default();
    let mut buf = Vec::new();
    for path in files {
        buf.clear();
        match std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut buf)) {
            Ok(_) => buf = load_one(path, buf, specs, diags, &mut shared),
            Err(e) => diags.push(unreadable(path, &e)),
        }
    }
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

/// Parse and validate one file: its spec joins `specs`, its problems `diags`; its bytes are
/// given back, for the next file's.
fn load_one(
    path: &Path,
    bytes: Vec<u8>,
    specs: &mut Vec<Spec>,
    diags: &mut Vec<Diagnostic>,
    shared: &mut Shared,
) -> Vec<u8> {
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
            src.text.into_bytes()
        }
        Err(e) => {
            diags.push(not_utf8(path, &e));
            e.into_bytes()
        }
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
fn not_utf8(path: &Path, e: &std::string::FromUtf8Error) -> Diagnostic {
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

/// `[secrets.NAME]`, as a message names a secret's table. Written out only when a message is:
/// a context is passed to every key read, and a platform's specs have tens of thousands of keys.
pub(super) struct SecretTable<'a>(pub(super) &'a str);

impl Display for SecretTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`[secrets.{}]`", shown(self.0))
    }
}

/// ``field `NAME` of CONTEXT``, as a message names a field (of a secret, or of an override).
pub(super) struct FieldOf<'a>(pub(super) &'a str, pub(super) &'a dyn Display);

impl Display for FieldOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}` of {}", self.0, self.1)
    }
}

/// Words, then a context (``"`fields` of " `[secrets.A]` ``), written out when shown.
pub(super) struct Then<'a>(pub(super) &'static str, pub(super) &'a dyn Display);

impl Display for Then<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)?;
        self.1.fmt(f)
    }
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
/// two pointers, not three allocations.
#[derive(Default)]
struct Shared {
    fields: HashSet<Arc<[Field]>>,
    names: HashSet<Arc<str>>,
    eso: HashSet<Arc<Eso>>,
    environments: HashSet<Environments>,
    /// The lexer's tokens of the file being read: one buffer for the run ([`syntax::parse`]).
    tokens: Vec<syntax::Token>,
}

/// The value in `set` equal to `key` (what an earlier spec loaded), else `make(key)`'s, added:
/// a key owned is moved in, not copied.
fn interned<K, K2, T>(set: &mut HashSet<T>, key: K, make: impl FnOnce(K) -> T) -> T
where
    K: Borrow<K2>,
    K2: ?Sized + Hash + Eq,
    T: Borrow<K2> + Hash + Eq + Clone,
{
    if let Some(same) = set.get(key.borrow()) {
        return same.clone();
    }
    let made = make(key);
    set.insert(made.clone());
    made
}

impl Cx<'_> {
    /// `fields` as a shared list: the one already loaded when an earlier secret has the same.
    fn shared(&mut self, fields: Vec<Field>) -> Arc<[Field]> {
        interned::<_, [Field], _>(&mut self.shared.fields, fields, Arc::from)
    }

    /// `[eso]` as a shared value: the one already loaded when an earlier spec has the same.
    fn shared_eso(&mut self, eso: Eso) -> Arc<Eso> {
        interned::<_, Eso, _>(&mut self.shared.eso, eso, Arc::new)
    }

    /// A spec's environments, shared with the earlier specs that have the same.
    fn shared_environments(&mut self, environments: Environments) -> Environments {
        interned::<_, Environments, _>(&mut self.shared.environments, environments, |e| e)
    }

    /// A secret's name, shared with the earlier secrets of that name.
    fn name(&mut self, name: &str) -> Arc<str> {
        interned::<_, str, _>(&mut self.shared.names, name, Arc::from)
    }

    fn err(&mut self, span: Span, msg: impl Into<String>, help: Option<String>) {
        let d = self.src.diag(span, msg);
        self.diags.push(match help {
            Some(h) => d.with_help(h),
            None => d,
        });
    }

    /// Convert toml-span's errors (syntax, duplicate keys, unknown keys) into diagnostics.
    fn toml_error(&mut self, e: toml_span::Error, context: &dyn Display) {
        match e.kind {
            ErrorKind::UnexpectedKeys { keys, expected } => {
                for (key, span) in keys {
                    let help = match suggest(&key, &expected) {
                        Some(s) => {
                            format!("did you mean `{s}`? {context} takes {}", backticked(&expected))
                        }
                        None => format!("{context} takes {}", backticked(&expected)),
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

    fn table<'de>(
        &mut self,
        v: &mut Value<'de>,
        context: &dyn Display,
    ) -> Option<TableHelper<'de>> {
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

    fn finish(&mut self, th: TableHelper<'_>, context: &dyn Display) {
        if let Err(errs) = th.finalize(None) {
            for e in errs.errors {
                self.toml_error(e, context);
            }
        }
    }

    /// A string value; `what` names it in the problem when it is not one (made only then: a
    /// platform's specs hold tens of thousands of strings). Borrowed from the file's text where
    /// it has no escape: most values are only checked, and a copy is made where one is kept.
    fn string<'de>(
        &mut self,
        v: &mut Value<'de>,
        what: impl FnOnce() -> String,
    ) -> Option<Cow<'de, str>> {
        let span = v.span;
        match v.take() {
            ValueInner::String(s) => Some(s),
            other => {
                self.err(
                    span,
                    format!("{} must be a string, found {}", what(), other.type_str()),
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
        ctx: &dyn Display,
    ) -> Option<(String, Span)> {
        self.take_str(th, key, ctx)
            .map(|(s, span)| (s.into_owned(), span))
    }

    /// [`Cx::take_string`] for a value only checked, or kept other than as a `String`.
    fn take_str<'de>(
        &mut self,
        th: &mut TableHelper<'de>,
        key: &'static str,
        ctx: &dyn Display,
    ) -> Option<(Cow<'de, str>, Span)> {
        let (_, mut v) = th.take(key)?;
        let span = v.span;
        self.string(&mut v, || format!("`{key}` in {ctx}"))
            .map(|s| (s, span))
    }

    /// A string that must pass `check`; when it does not, the problem is reported at the value,
    /// quoting it (elided, escaped), with `help`.
    fn take_checked(
        &mut self,
        th: &mut TableHelper<'_>,
        key: &'static str,
        ctx: &dyn Display,
        check: impl Fn(&str) -> Result<(), String>,
        help: &str,
    ) -> Option<String> {
        let (v, span) = self.take_str(th, key, ctx)?;
        match check(&v) {
            Ok(()) => Some(v.into_owned()),
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
        ctx: &dyn Display,
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
        ctx: &dyn Display,
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
        ctx: &dyn Display,
    ) -> Option<Vec<(String, Span)>> {
        let (_, mut v) = th.take(key)?;
        let span = v.span;
        match v.take() {
            ValueInner::Array(items) => Some(
                items
                    .into_iter()
                    .filter_map(|mut item| {
                        let s = item.span;
                        self.string(&mut item, || format!("an item of `{key}` in {ctx}"))
                            .map(|v| (v.into_owned(), s))
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
    fn entries<'de>(
        &mut self,
        mut v: Value<'de>,
        ctx: &dyn Display,
    ) -> Vec<(Key<'de>, Value<'de>)> {
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

#[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
fn parse_spec(cx: &mut Cx<'_>) -> Option<Spec> {
    let text = &cx.src.text;
    let mut root = match syntax::parse(text, &mut cx.shared.tokens) {
        Ok(v) => v,
        Err(e) => {
            cx.toml_error(e, &ROOT_KEYS_CTX);
            return None;
        }
    };
    let errors_before = cx.diags.len();
    let mut th = cx.table(&mut root, &ROOT_KEYS_CTX)?;
    let stem = cx
        .src
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match cx.take_string(&mut th, "name", &ROOT_KEYS_CTX) {
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
    let _description = cx.take_str(&mut th, "description", &ROOT_KEYS_CTX);
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
    cx.finish(th, &ROOT_KEYS_CTX);

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
    let known: HashSet<&str> = match any_override(&environments) {
        true => secrets.iter().map(|s| &*s.name).collect(),
        false => HashSet::new(),
    };
    let mut suggestions_left = SHOWN_MAX;
    let mut names: Option<Vec<String>> = None;
    for env in environments.values() {
        for (secret, Written { span: ov_span, .. }) in env.1.iter() {
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
    keyrings_kept(cx, &secrets, &environments);
    derived::check_overrides(cx, &secrets, &environments);
    if cx.diags.len() > errors_before {
        return None;
    }
    let environments = environments
        .into_iter()
        .map(|(_, (mut e, ov))| {
            e.overrides = ov.into_iter().map(|(n, w)| (n, w.ov)).collect();
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

/// Spec files loaded in tests, and their problems.
#[cfg(test)]
pub(super) mod testing {
    use super::*;

    /// A problem as a test reads it: its message, line, column and help.
    pub(in crate::spec::load) type Problem = (String, usize, usize, String);

    /// A spec file `specs/app.toml` holding `text`, loaded; else its every problem, in the
    /// order found.
    pub(in crate::spec::load) fn load(text: &str) -> Result<SpecSet, Vec<Problem>> {
        let source = vec![(PathBuf::from("specs/app.toml"), text.as_bytes().to_vec())];
        match load_sources(source, Vec::new()) {
            Ok(set) => Ok(set),
            Err(LoadError::Invalid(d)) => Err(d
                .into_iter()
                .map(|d| {
                    let (line, col) = d.location.as_ref().map_or((0, 0), |l| (l.line, l.col));
                    (d.message, line, col, d.help.unwrap_or_default())
                })
                .collect()),
            Err(e) => panic!("{e}"),
        }
    }

    /// Every problem of a spec file holding `text`.
    pub(in crate::spec::load) fn problems(text: &str) -> Vec<Problem> {
        match load(text) {
            Ok(_) => panic!("loaded"),
            Err(p) => p,
        }
    }

    /// The first problem of a spec file holding `text`.
    pub(in crate::spec::load) fn problem(text: String) -> Problem {
        problems(&text).swap_remove(0)
    }
}

#[cfg(test)]
mod depth_tests {
    use super::testing::problem;
    use super::*;

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
mod run_tests {
    use super::*;

    /// `n` spec files in a new directory; those at `bad` indices each with a problem.
    fn specs(n: usize, bad: &[usize]) -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let files = (0..n)
            .map(|i| {
                let path = dir.path().join(format!("app-{i:04}.toml"));
                let description = match bad.contains(&i) {
                    true => "description = 7",
                    false => "description = \"d\"",
                };
                let text = format!(
                    "[vault]\nmount = \"secret\"\npath = \"app-{i}/{{env}}\"\n[environments.dev]\n\
                     [secrets.ONE]\n{description}\nfields.password = {{ generator = \"hex32\" }}\n"
                );
                std::fs::write(&path, text).unwrap();
                path
            })
            .collect();
        (dir, files)
    }

    fn outcome(result: Result<SpecSet, LoadError>) -> Result<Vec<String>, Vec<String>> {
        match result {
            Ok(set) => Ok(set.specs.iter().map(|s| s.name.to_string()).collect()),
            Err(LoadError::Invalid(d)) => Err(d.iter().map(ToString::to_string).collect()),
            Err(e) => panic!("{e}"),
        }
    }

    /// Split between threads, the specs come in file order, and the problems too (the first
    /// problem is the first file's), exactly as one thread finds them.
    #[test]
    fn specs_loaded_by_several_threads_come_as_one_thread_loads_them() {
        let (_dir, files) = specs(10, &[]);
        let one = outcome(read_in_runs(&files, Vec::new(), 1));
        assert_eq!(one.as_ref().unwrap().len(), 10);
        assert_eq!(outcome(read_in_runs(&files, Vec::new(), 3)), one);
        let (_dir, files) = specs(10, &[1, 5, 9]);
        let one = outcome(read_in_runs(&files, Vec::new(), 1));
        let problems = one.clone().unwrap_err();
        // Two a file: the value's type, and so no `description`.
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(problems[0].contains("app-0001.toml:6:15"), "{problems:?}");
        assert!(problems[5].contains("app-0009.toml:5:10"), "{problems:?}");
        for threads in [2, 3, 4] {
            assert_eq!(outcome(read_in_runs(&files, Vec::new(), threads)), one);
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

    /// `cluster_vault_addr` is one address or a list; an address that is no Vault address is
    /// reported where it is written.
    #[test]
    fn cluster_vault_addr_is_a_string_or_a_list_of_addresses() {
        let spec = |value: &str| {
            format!(
                "[vault]\nmount = \"secret\"\npath = \"a/{{env}}\"\n\
                 [environments.dev]\ncluster_vault_addr = {value}\n\
                 [secrets.ONE]\ndescription = \"d\"\nfields.password = {{ generator = \"hex32\" }}\n"
            )
        };
        let addrs = |value: &str| {
            let set = load_sources(
                vec![("specs/a.toml".into(), spec(value).into_bytes())],
                Vec::new(),
            )
            .unwrap();
            let env = set.specs[0].environments.get("dev").unwrap();
            env.cluster_vault_addrs.clone()
        };
        assert_eq!(
            addrs("\"http://vault.vault.svc:8200\""),
            ["http://vault.vault.svc:8200"]
        );
        assert_eq!(
            addrs("[\"http://vault.vault.svc:8200\", \"https://vault.example\"]"),
            ["http://vault.vault.svc:8200", "https://vault.example"]
        );
        let (message, line, col, help) = super::testing::problem(spec("\"vault.vault.svc\""));
        assert!(
            message.starts_with("`cluster_vault_addr` `vault.vault.svc` is not a URL"),
            "{message}"
        );
        assert_eq!((line, col), (5, 23));
        assert!(help.contains("http://vault.vault.svc:8200"), "{help}");
        let (message, ..) = super::testing::problem(spec("8200"));
        assert_eq!(
            message,
            "`cluster_vault_addr` in `[environments.dev]` must be a string or a list of strings, found integer"
        );
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
