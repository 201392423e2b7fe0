//! Diagnostics for spec files: `file:line:col`, the source line, a caret, and a hint.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use toml_span::Span;

/// A position in a spec file, 1-based.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The spec file.
    #[serde(serialize_with = "as_path")]
    pub file: Arc<Path>,
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub col: usize,
}

/// A location's file as JSON shows it: the path, as a string.
fn as_path<S: serde::Serializer>(file: &Arc<Path>, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&**file, s)
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.col)
    }
}

/// How many problems are printed in full; the rest are counted ("… and N more problems").
pub const SHOWN_MAX: usize = 50;

/// The most characters a message or a help line keeps. User text inside them is already elided
/// by [`shown`]; this bounds whatever else a message quotes, so that each problem costs memory in
/// proportion to nothing but a constant.
const MAX_TEXT_CHARS: usize = 1000;

/// A source line up to this many characters is shown whole; a longer one, as a window of that
/// many around the span: up to 40 characters before it, up to 60 of the span, then what fits.
const WINDOW: usize = 120;
const WINDOW_BEFORE: usize = 40;
const WINDOW_SPAN: usize = 60;

/// One problem found in a spec, with where it is and what to do about it.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnostic {
    /// What is wrong, lowercase, things named in backticks.
    pub message: String,
    /// Where it is; `None` for problems of the spec directory as a whole.
    pub location: Option<Location>,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// A window of the source line around the span and the caret under it, pre-rendered (not in
    /// JSON output). Never the whole line: a one-line spec would copy it into every problem.
    #[serde(skip)]
    snippet: Option<Snippet>,
}

/// A window of a source line, and where the caret goes in it.
#[derive(Debug, Clone)]
struct Snippet {
    /// The window's text, control characters replaced, `…` where the line was cut.
    text: String,
    /// The caret's column in `text`, from 1.
    col: usize,
    /// The caret's width in characters.
    len: usize,
}

impl Diagnostic {
    /// A diagnostic without a position.
    pub fn global(message: impl Into<String>) -> Self {
        Diagnostic {
            message: bounded(message.into()),
            location: None,
            help: None,
            snippet: None,
        }
    }

    /// A diagnostic at a known location, without a source snippet.
    pub fn at(location: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            location: Some(location),
            ..Diagnostic::global(message)
        }
    }

    /// Attach a hint.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(bounded(help.into()));
        self
    }

    /// A window of the source line around the problem, where its caret starts in that window
    /// (a column from 1) and how wide it is; `None` for a problem without one.
    pub fn snippet(&self) -> Option<(&str, usize, usize)> {
        self.snippet
            .as_ref()
            .map(|s| (s.text.as_str(), s.col, s.len))
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{loc}: {}", self.message)?,
            None => f.write_str(&self.message)?,
        }
        if let Some(help) = &self.help {
            write!(f, " (help: {help})")?;
        }
        Ok(())
    }
}

/// User text (a name, a key, a path) as quoted in a message ([`crate::base::text::quoted`]).
pub(crate) fn shown(s: &str) -> String {
    crate::base::text::quoted(s)
}

/// Whether a character acts on a terminal or reorders text rather than showing
/// ([`crate::base::text::is_hidden`]).
pub(crate) fn is_unshowable(c: char) -> bool {
    crate::base::text::is_hidden(c)
}

/// A message or help line, escaped and cut to [`MAX_TEXT_CHARS`].
fn bounded(s: String) -> String {
    if s.len() <= MAX_TEXT_CHARS && !s.chars().any(is_unshowable) {
        return s;
    }
    let mut out = crate::base::text::escaped(&s.chars().take(MAX_TEXT_CHARS).collect::<String>())
        .into_owned();
    if s.chars().nth(MAX_TEXT_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// How often [`SourceFile`] records a character count, in bytes: a column is then found by
/// counting at most this many bytes, however long the line.
const CHAR_CHECKPOINT: usize = 1024;

/// A spec file's text, to turn byte spans into line and column.
pub struct SourceFile {
    /// The path, as given (relative paths stay relative, as users typed them); shared by
    /// every location in the file.
    pub path: Arc<Path>,
    /// The file's contents.
    pub text: String,
    /// Where each line starts: made when a location is first asked for.
    line_starts: OnceLock<Vec<usize>>,
    /// (byte offset, characters before it), every [`CHAR_CHECKPOINT`] bytes or so: made only
    /// when a column is asked for far into a long line.
    char_checkpoints: OnceLock<Vec<(usize, usize)>>,
}

impl SourceFile {
    /// A file's text, to be indexed by line (and by character count, for columns on long
    /// lines) when a location first needs it.
    pub fn new(path: &Path, text: String) -> Self {
        SourceFile {
            path: path.into(),
            text,
            line_starts: OnceLock::new(),
            char_checkpoints: OnceLock::new(),
        }
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            // Counted first (a loop the compiler vectorises), so that the list is made once, at
            // its length, rather than grown by doubling.
            let bytes = self.text.as_bytes();
            let lines = bytes.iter().filter(|&&b| b == b'\n').count();
            let mut starts = Vec::with_capacity(lines + 1);
            starts.push(0);
            starts.extend(self.text.match_indices('\n').map(|(i, _)| i + 1));
            starts
        })
    }

    /// The number of characters between two character boundaries `from` <= `to`: counted
    /// where they are near, else from the checkpoints.
    fn chars_between(&self, from: usize, to: usize) -> usize {
        if to - from <= CHAR_CHECKPOINT {
            return self.text[from..to].chars().count();
        }
        self.chars_before(to) - self.chars_before(from)
    }

    /// The number of characters before byte `offset` (a character boundary).
    fn chars_before(&self, offset: usize) -> usize {
        let checkpoints = self.char_checkpoints.get_or_init(|| {
            let mut checkpoints = vec![(0, 0)];
            let mut next = CHAR_CHECKPOINT;
            for (chars, (i, _)) in self.text.char_indices().enumerate() {
                if i >= next {
                    checkpoints.push((i, chars));
                    next = i + CHAR_CHECKPOINT;
                }
            }
            checkpoints
        });
        let i = checkpoints.partition_point(|&(b, _)| b <= offset) - 1;
        let (at, chars) = checkpoints[i];
        chars + self.text[at..offset].chars().count()
    }

    /// The nearest character boundary at or before `offset`, within the text.
    fn floor(&self, offset: usize) -> usize {
        let mut o = offset.min(self.text.len());
        while !self.text.is_char_boundary(o) {
            o -= 1;
        }
        o
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = self.floor(offset);
        let line_starts = self.line_starts();
        let line = line_starts.partition_point(|&s| s <= offset) - 1;
        let start = line_starts[line];
        (line + 1, self.chars_between(start, offset) + 1)
    }

    /// A diagnostic at `span`, showing a window of its line around the span.
    pub fn diag(&self, span: Span, message: impl Into<String>) -> Diagnostic {
        let (line, col) = self.line_col(span.start);
        let start = self.floor(span.start);
        let line_starts = self.line_starts();
        let line_start = line_starts[line - 1];
        let line_end = line_starts
            .get(line)
            .map_or(self.text.len(), |&next| next - 1);
        let span_end = self.floor(span.end.clamp(start, line_end));
        let before = &self.text[line_start..start];
        let inside = &self.text[start..span_end];
        let after = self.text[span_end..line_end].trim_end_matches('\r');
        let whole = self.chars_between(line_start, line_end) <= WINDOW;
        let (before_max, span_max) = match whole {
            true => (WINDOW, WINDOW),
            false => (WINDOW_BEFORE, WINDOW_SPAN),
        };
        let mut text = String::new();
        let before_n = before.chars().rev().take(before_max + 1).count();
        if before_n > before_max {
            text.push('…');
        }
        let from = match before_n.min(before_max) {
            0 => before.len(),
            n => before.char_indices().rev().nth(n - 1).map_or(0, |(i, _)| i),
        };
        text.push_str(&before[from..]);
        let caret_col = text.chars().count() + 1;
        let mut len = 0;
        for c in inside.chars().take(span_max) {
            text.push(c);
            len += 1;
        }
        if inside.chars().nth(span_max).is_some() {
            text.push('…');
        } else {
            let room = WINDOW.saturating_sub(text.chars().count());
            let mut rest = after.chars();
            text.extend(rest.by_ref().take(room));
            if rest.next().is_some() {
                text.push('…');
            }
        }
        // One character in, one column out: the caret stays under the span.
        let text = text
            .chars()
            .map(|c| match c {
                '\t' => ' ',
                c if is_unshowable(c) => '\u{fffd}',
                c => c,
            })
            .collect();
        Diagnostic {
            message: bounded(message.into()),
            location: Some(Location {
                file: self.path.clone(),
                line,
                col,
            }),
            help: None,
            snippet: Some(Snippet {
                text,
                col: caret_col,
                len: len.max(1),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one_and_in_characters() {
        let f = SourceFile::new(Path::new("a.toml"), "ab\ncé = 1\n".to_string());
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        // `=` is after `c`, `é` (2 bytes) and a space: column 4.
        assert_eq!(f.line_col(7), (2, 4));
        assert_eq!(f.line_col(999), (3, 1));
    }

    #[test]
    fn columns_on_a_long_multi_byte_line_cross_checkpoints() {
        // 5,000 two-byte characters, then `x`: the column counts characters, not bytes.
        let text = format!("a\n{}x = 1\n", "é".repeat(5_000));
        let f = SourceFile::new(Path::new("a.toml"), text.clone());
        let x = text.find('x').unwrap();
        assert_eq!(f.line_col(x), (2, 5_001));
        assert_eq!(f.line_col(x + 1), (2, 5_002));
        // An offset inside a character counts from its start.
        assert_eq!(f.line_col(3), (2, 1));
    }

    #[test]
    fn user_text_in_messages_is_escaped_and_elided() {
        assert_eq!(shown("plain-name"), "plain-name");
        assert_eq!(shown("a\u{1b}[2J\u{202e}b"), "a\\u{1b}[2J\\u{202e}b");
        // The Arabic letter mark reorders text too.
        assert_eq!(shown("a\u{061c}b"), "a\\u{61c}b");
        let long = shown(&"n".repeat(10_000));
        assert!(
            long.chars().count() <= crate::base::text::QUOTE_CHARS + 1 && long.contains('…'),
            "{long}"
        );
        let d = Diagnostic::global("m".repeat(100_000)).with_help("h\u{7}");
        assert!(d.message.chars().count() <= MAX_TEXT_CHARS + 1);
        assert_eq!(d.help.as_deref(), Some("h\\u{7}"));
    }
}
