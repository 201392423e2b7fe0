//! Output: human text or JSON on stdout, diagnostics on stderr, colour per `--color`/`NO_COLOR`.

use std::io::{IsTerminal, Write};

use serde::Serialize;

pub mod text;

/// `--output`: how results are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// Tables and sentences for people.
    #[default]
    Human,
    /// One JSON document; its schema: `vault-seed man` (JSON OUTPUT), or the README.
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

/// Write a JSON document to stdout, followed by a newline; characters a terminal would act on
/// are escaped ([`text::SafeJson`]).
pub fn print_json<T: Serialize>(value: &T) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out,
        text::SafeJson::new(),
    ))?;
    writeln!(out)
}

/// Print `warning: ...` on stderr.
pub fn warn(style: &Style, msg: &str) {
    eprintln!("{}: {msg}", style.warn("warning"));
}

/// Print `error: ...` and an optional `help:` line on stderr.
pub fn error(style: &Style, msg: &str, help: Option<&str>) {
    eprintln!("{}: {msg}", style.error("error"));
    if let Some(h) = help {
        eprintln!("  {}: {h}", style.help("help"));
    }
}
