//! Spec problems for a terminal, in the one voice of every error: `error: ...`, `  --> file:line:col`,
//! a window of the source line with a caret under the span, and `  help: ...`.

use crate::report::Style;
use crate::spec::Diagnostic;

/// How many problems are printed in full; the rest are counted ("… and N more problems").
pub const SHOWN_MAX: usize = crate::spec::diag::SHOWN_MAX;

/// One problem, rendered.
pub fn render(d: &Diagnostic, style: &Style) -> String {
    let mut out = format!("{}: {}\n", style.error("error"), d.message);
    if let Some(loc) = &d.location {
        out.push_str(&format!("  {} {loc}\n", style.dim("-->")));
        if let Some((text, col, len)) = d.snippet() {
            let num = loc.line.to_string();
            let pad = " ".repeat(num.len());
            out.push_str(&format!("{pad} {}\n", style.dim("|")));
            out.push_str(&format!("{} {} {text}\n", style.dim(&num), style.dim("|")));
            out.push_str(&format!(
                "{pad} {} {}{}\n",
                style.dim("|"),
                " ".repeat(col.saturating_sub(1)),
                style.error(&"^".repeat(len.max(1)))
            ));
        }
    }
    if let Some(help) = &d.help {
        out.push_str(&format!("  {}: {help}\n", style.help("help")));
    }
    out
}

/// The first [`SHOWN_MAX`] problems in full, then how many more: a hostile spec can have
/// thousands.
pub fn render_all(diags: &[Diagnostic], style: &Style, more_hint: &str) -> String {
    let mut out = String::new();
    for d in diags.iter().take(SHOWN_MAX) {
        out.push_str(&render(d, style));
    }
    if let Some(more) = diags.len().checked_sub(SHOWN_MAX).filter(|&n| n > 0) {
        out.push_str(&format!("… and {more} more problems ({more_hint})\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use toml_span::Span;

    use super::*;
    use crate::spec::diag::SourceFile;

    fn rendered(d: &Diagnostic) -> String {
        render(d, &Style::plain())
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_with_the_caret_under_the_span() {
        let line = format!("{} bad {}", "a".repeat(500), "z".repeat(500));
        let f = SourceFile::new(Path::new("a.toml"), line.clone());
        let at = line.find("bad").unwrap();
        let out = rendered(&f.diag(Span::new(at, at + 3), "m"));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], "  --> a.toml:1:502");
        let (src, caret) = (lines[3], lines[4]);
        assert!(src.starts_with("1 | …") && src.ends_with('…'), "{src}");
        assert!(src.chars().count() < 130, "{src}");
        let col = caret.find('^').unwrap();
        assert_eq!(
            &src[src
                .char_indices()
                .nth(caret[..col].chars().count())
                .unwrap()
                .0..][..3],
            "bad"
        );
        // A short line is shown whole.
        let f = SourceFile::new(Path::new("a.toml"), "k = \"v\"\n".into());
        assert!(rendered(&f.diag(Span::new(4, 7), "m")).contains("1 | k = \"v\"\n"));
    }

    #[test]
    fn a_long_span_is_cut_and_control_characters_do_not_show() {
        let line = format!("k = \"\u{1b}[2J{}\"", "x".repeat(1_000));
        let f = SourceFile::new(Path::new("a.toml"), line.clone());
        let out = rendered(&f.diag(Span::new(4, line.len()), "m"));
        assert!(!out.contains('\u{1b}'), "{out:?}");
        assert!(out.lines().all(|l| l.chars().count() < 130), "{out}");
        assert!(out.contains("^".repeat(60).as_str()) && !out.contains("^".repeat(61).as_str()));
    }
}
