//! Output: human text or JSON on stdout, diagnostics on stderr, colour per `--color`/`NO_COLOR`.
//!
//! Each command's result is a [`Report`] (one module per document: [`seeding`] for `plan` and
//! `apply`, [`verification`], [`changes`] for `set` and `rotate`, [`imports`] for `import`, [`specs`] for `lint`, [`hcl`]
//! for `policy`, [`ordering`], [`generated`] for `gen`), and the renderers of what the domain
//! modules find ([`diagnostics`] for spec problems, [`gaps`] for ESO's policy gaps). Reports
//! render; `run.rs` prints.

use std::io::{IsTerminal, Write};

use serde::Serialize;
use zeroize::Zeroizing;

pub mod auditing;
pub mod changes;
pub mod diagnostics;
pub mod gaps;
pub mod generated;
pub mod hcl;
pub mod imports;
pub mod moves;
pub mod ordering;
pub mod seeding;
pub mod specs;
pub mod verification;

/// `--output`: how results are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// Tables and sentences for people.
    #[default]
    Human,
    /// One JSON document; its schema: `vault-seed man` (JSON OUTPUT), or docs/ in the repository.
    Json,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal and `NO_COLOR` is unset.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// ANSI styling, on or off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    /// Styling for a stream: on with `always`; with `auto` when it is a terminal and `NO_COLOR`
    /// is unset or empty.
    pub fn for_stream(choice: ColorChoice, is_terminal: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            on: match choice {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => is_terminal && !no_color,
            },
        }
    }

    /// Styling for stderr.
    pub fn stderr(choice: ColorChoice) -> Self {
        Self::for_stream(choice, std::io::stderr().is_terminal())
    }

    /// Styling for stdout.
    pub fn stdout(choice: ColorChoice) -> Self {
        Self::for_stream(choice, std::io::stdout().is_terminal())
    }

    /// No styling.
    pub fn plain() -> Self {
        Style { on: false }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Bold red.
    pub fn error(&self, s: &str) -> String {
        self.paint("1;31", s)
    }
    /// Bold yellow.
    pub fn warn(&self, s: &str) -> String {
        self.paint("1;33", s)
    }
    /// Green.
    pub fn ok(&self, s: &str) -> String {
        self.paint("32", s)
    }
    /// Bold cyan.
    pub fn help(&self, s: &str) -> String {
        self.paint("1;36", s)
    }
    /// Dim blue, for gutters.
    pub fn dim(&self, s: &str) -> String {
        self.paint("34", s)
    }
    /// Bold.
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
}

/// How a result is to be shown: the format asked for, the styles of stdout and stderr, and how
/// much to say.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// `--output`.
    pub format: Format,
    /// Styling of stdout.
    pub out: Style,
    /// Styling of stderr.
    pub err: Style,
    /// The number of `-v`.
    pub verbose: u8,
}

/// A command's result, shown by the one printing place (`run.rs`): people's text or one JSON
/// document on stdout, diagnostics on stderr. A report renders; it never prints.
pub trait Report {
    /// The result as `view` asks for it.
    fn render(&self, view: &View) -> Rendered<'_>;
}

/// Writes a streamed result to the writer it is given.
pub type WriteFn<'a> = dyn Fn(&mut dyn Write) -> std::io::Result<()> + 'a;

/// Where a command that writes its result while it runs (`plan`, `apply`) writes it: stdout,
/// handed over by the printing place (`run.rs`), as the view asks. The command produces rows; its
/// report writes them here as they come; the printing place shows the [`Ending`].
pub struct Printer<'o> {
    /// How to show it.
    pub view: View,
    /// stdout.
    pub out: &'o mut dyn Write,
}

/// How a result written while its command ran ([`Printer`]) ended.
pub struct Ending {
    /// Diagnostics for stderr, known only at the end (notes).
    pub notes: String,
    /// Diagnostics for stderr, after the notes (what is left to do).
    pub after: String,
    /// Whether everything is right: exit 0, else 1.
    pub ok: bool,
    /// Why stdout stopped taking the result, if it did: the work went on to its end (nothing
    /// is left half done), but the result is incomplete.
    pub stdout: Option<std::io::Error>,
}

/// What a report puts on stdout.
pub enum Body<'a> {
    /// Bytes made whole; wiped on drop (`gen`'s hold a value).
    Bytes(Zeroizing<Vec<u8>>),
    /// Written as it is made, for results that grow with the paths (a table or a JSON list of
    /// 100,000 rows): the printing place hands it stdout, so the whole text is never held.
    /// Never used for text that holds a value.
    Stream(Box<WriteFn<'a>>),
}

impl Default for Body<'_> {
    fn default() -> Self {
        Body::Bytes(Zeroizing::new(Vec::new()))
    }
}

/// A rendered result.
#[derive(Default)]
pub struct Rendered<'a> {
    /// Diagnostics for stderr, before the result (notes).
    pub before: String,
    /// The result for stdout.
    pub stdout: Body<'a>,
    /// Diagnostics for stderr, after the result (what is left to do).
    pub after: String,
    /// Whether everything is right: exit 0, else 1.
    pub ok: bool,
    /// A write the gate refused ([`crate::gate`]): exit 2, as every refused request, whatever
    /// `ok` says.
    pub refused: bool,
}

impl<'a> Rendered<'a> {
    /// Text for stdout.
    pub fn text(text: String, ok: bool) -> Rendered<'a> {
        Rendered {
            stdout: Body::Bytes(Zeroizing::new(text.into_bytes())),
            ok,
            ..Rendered::default()
        }
    }

    /// Exit 2 when `refused`: a write was refused by a rule and nothing of it was written.
    pub fn refused(mut self, refused: bool) -> Rendered<'a> {
        self.refused = refused;
        self
    }

    /// One JSON document for stdout.
    pub fn json<T: Serialize>(value: &T, ok: bool) -> Rendered<'a> {
        Rendered {
            stdout: Body::Bytes(Zeroizing::new(json(value))),
            ok,
            ..Rendered::default()
        }
    }

    /// A result written to stdout as it is made ([`Body::Stream`]).
    pub fn stream(
        write: impl Fn(&mut dyn Write) -> std::io::Result<()> + 'a,
        ok: bool,
    ) -> Rendered<'a> {
        Rendered {
            stdout: Body::Stream(Box::new(write)),
            ok,
            ..Rendered::default()
        }
    }

    /// The same, with `before` for stderr.
    pub fn with_before(mut self, before: String) -> Rendered<'a> {
        self.before = before;
        self
    }

    /// The same, with `after` for stderr.
    pub fn with_after(mut self, after: String) -> Rendered<'a> {
        self.after = after;
        self
    }
}

/// A JSON object written to `out` a member at a time, the same bytes as [`json_to`] writes for
/// the whole object: for a document one of whose members is a list made while the command
/// runs ([`Printer`]).
pub struct JsonObject<'o> {
    out: &'o mut dyn Write,
    members: usize,
    /// The items written of the list that is open, if one is.
    items: Option<usize>,
}

impl<'o> JsonObject<'o> {
    /// Open the object.
    pub fn begin(out: &'o mut dyn Write) -> std::io::Result<JsonObject<'o>> {
        out.write_all(b"{")?;
        Ok(JsonObject {
            out,
            members: 0,
            items: None,
        })
    }

    fn key(&mut self, key: &str) -> std::io::Result<()> {
        let sep: &[u8] = if self.members == 0 { b"\n  " } else { b",\n  " };
        self.out.write_all(sep)?;
        self.members += 1;
        indented(&mut *self.out, key, 1)?;
        self.out.write_all(b": ")
    }

    /// A member.
    pub fn member<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> std::io::Result<()> {
        self.key(key)?;
        indented(&mut *self.out, value, 1)
    }

    /// Open a member that is a list; [`JsonObject::item`] adds to it.
    pub fn begin_list(&mut self, key: &str) -> std::io::Result<()> {
        self.key(key)?;
        self.items = Some(0);
        self.out.write_all(b"[")
    }

    /// An item of the open list.
    pub fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> std::io::Result<()> {
        let n = self.items.get_or_insert(0);
        let sep: &[u8] = if *n == 0 { b"\n    " } else { b",\n    " };
        *n += 1;
        self.out.write_all(sep)?;
        indented(&mut *self.out, value, 2)
    }

    /// Close the open list.
    pub fn end_list(&mut self) -> std::io::Result<()> {
        match self.items.take() {
            Some(0) | None => self.out.write_all(b"]"),
            Some(_) => self.out.write_all(b"\n  ]"),
        }
    }

    /// Pass on what was written (to stdout, when `out` is its buffer).
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Close the object; a newline ends the document, as [`json_to`]'s.
    pub fn end(self) -> std::io::Result<()> {
        let close: &[u8] = if self.members == 0 { b"}\n" } else { b"\n}\n" };
        self.out.write_all(close)
    }
}

/// `value` as pretty JSON, each line after the first indented `level` steps deeper: what it is
/// as a member (level 1) or an item of a member (level 2) of a pretty document. A pretty JSON
/// text has no newline but between its tokens (strings escape theirs).
fn indented<T: Serialize + ?Sized>(
    out: &mut dyn Write,
    value: &T,
    level: usize,
) -> std::io::Result<()> {
    let mut text = Vec::new();
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut text,
            crate::base::text::SafeJson::new(),
        ))
        .map_err(std::io::Error::other)?;
    let indent = "  ".repeat(level);
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        if i > 0 {
            out.write_all(b"\n")?;
            out.write_all(indent.as_bytes())?;
        }
        out.write_all(line)?;
    }
    Ok(())
}

/// [`json`], written to `out` as it is serialised: a JSON document and a newline.
pub fn json_to<T: Serialize>(value: &T, out: &mut dyn Write) -> std::io::Result<()> {
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut *out,
            crate::base::text::SafeJson::new(),
        ))
        .map_err(std::io::Error::from)?; // keeps an I/O error's kind (a closed pipe)
    out.write_all(b"\n")
}

/// A JSON document and a newline; characters a terminal would act on are escaped
/// ([`crate::base::text::SafeJson`]).
pub fn json<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    // Our documents are maps of strings, numbers and lists: serialising them cannot fail.
    if value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut out,
            crate::base::text::SafeJson::new(),
        ))
        .is_err()
    {
        out.clear();
        out.extend_from_slice(b"null");
    }
    out.push(b'\n');
    out
}

/// Text for stdout that is the same in every format (a completion script, a manual page).
pub struct Text(pub String);

impl Report for Text {
    fn render(&self, _: &View) -> Rendered<'_> {
        Rendered::text(self.0.clone(), true)
    }
}

/// `error: message` and, when there is one, `  help: what to do`: the one shape of every error
/// vault-seed shows, spec problems included.
pub fn error_text(style: &Style, message: &str, help: Option<&str>) -> String {
    let mut out = format!("{}: {message}\n", style.error("error"));
    if let Some(h) = help {
        out.push_str(&format!("  {}: {h}\n", style.help("help")));
    }
    out
}

/// Print `warning: ...` on stderr while a command runs (a failed write to stderr is ignored:
/// there is nowhere else to say it).
pub fn warn(style: &Style, msg: &str) {
    say(&format!("{}: {msg}", style.warn("warning")));
}

/// Print a line of progress on stderr while a command runs (what runs where, a retry, a wait).
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        path: &'static str,
        n: Option<u64>,
        tags: Vec<&'static str>,
    }

    #[derive(Serialize)]
    struct Whole<'a> {
        command: &'a str,
        results: &'a [Row],
        notes: &'a [&'a str],
        summary: Row,
    }

    /// A document written a member at a time is the document serde writes whole, byte for
    /// byte: nested objects, empty lists and characters a terminal would act on included.
    #[test]
    fn a_json_object_written_by_members_is_the_whole_document() {
        let row = |path, n: Option<u64>, tags: Vec<&'static str>| Row { path, n, tags };
        for results in [
            vec![],
            vec![row("a/\u{1b}[31m\"x\"", Some(3), vec!["t", "u"])],
            vec![
                row("a", None, vec![]),
                row("b\nc", Some(1), vec!["\u{202e}"]),
            ],
        ] {
            let summary = row("s", Some(9), vec![]);
            let whole = json(&Whole {
                command: "apply",
                results: &results,
                notes: &["a note"],
                summary: row("s", Some(9), vec![]),
            });
            let mut out = Vec::new();
            let mut doc = JsonObject::begin(&mut out).unwrap();
            doc.member("command", "apply").unwrap();
            doc.begin_list("results").unwrap();
            for r in &results {
                doc.item(r).unwrap();
            }
            doc.end_list().unwrap();
            doc.member("notes", &["a note"]).unwrap();
            doc.member("summary", &summary).unwrap();
            doc.end().unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(whole).unwrap()
            );
        }
    }
}
