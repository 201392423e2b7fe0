//! Diagnostics for spec files: `file:line:col`, the source line, a caret, and a hint.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml_span::Span;

/// A position in a spec file, 1-based.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// The spec file.
    pub file: PathBuf,
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub col: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.col)
    }
}

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
    /// The source line and the caret under the span, pre-rendered (not in JSON output).
    #[serde(skip)]
    snippet: Option<(String, usize, usize)>,
}

impl Diagnostic {
    /// A diagnostic without a position.
    pub fn global(message: impl Into<String>) -> Self {
        Diagnostic {
            message: message.into(),
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
        self.help = Some(help.into());
        self
    }

    /// Render for a terminal: `error: ...`, `  --> file:line:col`, the line, a caret, `= help`.
    pub fn render(&self, style: &crate::report::Style) -> String {
        let mut out = format!("{}: {}\n", style.error("error"), self.message);
        if let Some(loc) = &self.location {
            out.push_str(&format!("  {} {loc}\n", style.dim("-->")));
            if let Some((line, col, len)) = &self.snippet {
                let num = loc.line.to_string();
                let pad = " ".repeat(num.len());
                out.push_str(&format!("{pad} {}\n", style.dim("|")));
                out.push_str(&format!("{} {} {line}\n", style.dim(&num), style.dim("|")));
                out.push_str(&format!(
                    "{pad} {} {}{}\n",
                    style.dim("|"),
                    " ".repeat(col.saturating_sub(1)),
                    style.error(&"^".repeat((*len).max(1)))
                ));
            }
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("  = {}: {help}\n", style.help("help")));
        }
        out
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

/// A spec file's text, to turn byte spans into line and column.
pub struct SourceFile {
    /// The path, as given (relative paths stay relative, as users typed them).
    pub path: PathBuf,
    /// The file's contents.
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// Index a file's text by line.
    pub fn new(path: &Path, text: String) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceFile {
            path: path.to_path_buf(),
            text,
            line_starts,
        }
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// A diagnostic at `span`.
    pub fn diag(&self, span: Span, message: impl Into<String>) -> Diagnostic {
        let (line, col) = self.line_col(span.start);
        let start = self.line_starts[line - 1];
        let end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let text = self.text[start..end].trim_end_matches('\r').to_string();
        let span_end = span.end.clamp(span.start, end);
        let len = self
            .text
            .get(span.start..span_end)
            .map_or(1, |s| s.chars().count());
        Diagnostic {
            message: message.into(),
            location: Some(Location {
                file: self.path.clone(),
                line,
                col,
            }),
            help: None,
            snippet: Some((text, col, len)),
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
}
