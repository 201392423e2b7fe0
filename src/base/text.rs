//! Text that comes from outside, made safe to show: the one policy and the one place for it.
//!
//! Outside text is a cluster's event and condition messages, object names, a server's error
//! text, and a spec's own names quoted back in a diagnostic. It can carry escape sequences that
//! retitle the window (`ESC ] 0 ;`), clear the screen (`ESC [ 2 J`), ring the bell, move the cursor
//! back over earlier lines (CR), or reorder what follows (bidirectional overrides); it can quote a
//! token; and it can be megabytes long. So, everywhere:
//! - the characters that act on a terminal rather than show ([`is_hidden`]) are removed
//!   ([`for_terminal`]) or written as escapes ([`escaped`], [`SafeJson`]);
//! - anything shaped like a Vault token is redacted ([`tokens`]), and values this
//!   run holds are too ([`crate::base::redact::redact`]);
//! - a whole text is kept to [`MAX_CHARS`] characters, the rest counted ([`cap`]); a name quoted
//!   inside a sentence to [`QUOTE_CHARS`], cut in the middle ([`quoted`]).

use std::borrow::Cow;

/// The most characters of one outside text that are kept (a message, a reason, a server's error).
pub const MAX_CHARS: usize = 500;

/// The most characters of a name (a key, a path, a role) quoted inside a sentence: its start and
/// end are what tell two names apart.
pub const QUOTE_CHARS: usize = 64;

/// A name as quoted inside a sentence: [`escaped`], and when longer than [`QUOTE_CHARS`]
/// characters, cut in the middle with `…` (half of them from the start, a quarter from the end).
pub fn quoted(s: &str) -> String {
    let n = s.chars().count();
    if n <= QUOTE_CHARS {
        return escaped(s).into_owned();
    }
    let head: String = s.chars().take(QUOTE_CHARS / 2).collect();
    let tail: String = s.chars().skip(n - QUOTE_CHARS / 4).collect();
    format!("{}…{}", escaped(&head), escaped(&tail))
}

/// Text from the cluster as it is kept: anything shaped like a Vault token redacted
/// ([`tokens`]: an ESO event may quote one), then cut to [`MAX_CHARS`] characters
/// with an elision mark saying how many were left out. Control characters are kept (JSON escapes
/// them); use [`for_terminal`] for human output.
pub fn cap(s: &str) -> Cow<'_, str> {
    match tokens(s) {
        Cow::Borrowed(s) => cap_at(s, MAX_CHARS),
        Cow::Owned(o) => Cow::Owned(cap_at(&o, MAX_CHARS).into_owned()),
    }
}

fn cap_at(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((end, _)) => {
            let left = s[end..].chars().count();
            Cow::Owned(format!("{}… ({left} more characters)", &s[..end]))
        }
    }
}

/// `s` safe for a terminal: escape sequences (CSI `ESC [ ... final`, OSC `ESC ] ... BEL` or
/// `ESC \`) removed whole, every other control character (C0, DEL, C1) and bidirectional
/// override or isolate (U+202A–U+202E, U+2066–U+2069, and the marks U+200E, U+200F, U+061C)
/// removed, tabs and line breaks turned into spaces, tokens redacted; then capped like [`cap`].
pub fn for_terminal(s: &str) -> String {
    let s = &*tokens(s);
    let mut out = String::new();
    let mut kept = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if kept == MAX_CHARS {
            let left = s[i..].chars().count();
            out.push_str(&format!("… ({left} more characters)"));
            break;
        }
        match c {
            '\u{1b}' => match chars.peek().map(|&(_, c)| c) {
                Some('[') => {
                    chars.next();
                    // Parameters and intermediates, then one final byte in `@`..`~`.
                    for (_, c) in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    // A string, ended by BEL or ST (`ESC \`).
                    while let Some((_, c)) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            if chars.peek().map(|&(_, c)| c) == Some('\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                // A two-character escape (`ESC c`, `ESC 7`...).
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\t' | '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}' => {
                out.push(' ');
                kept += 1;
            }
            c if is_hidden(c) => {}
            c => {
                out.push(c);
                kept += 1;
            }
        }
    }
    out
}

/// `s` with every character [`is_hidden`] written as Rust escapes it (`\u{1b}`, `\u{202e}`,
/// `\n`), so that it shows instead of acting on the terminal; the rest unchanged.
pub fn escaped(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Control characters and the invisible marks that reorder text ("Trojan Source",
/// CVE-2021-42574): the bidirectional embeddings, overrides and isolates, and the marks. The one
/// list every escaping helper uses.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
        )
}

/// A pretty JSON formatter that also escapes (`\uXXXX`) the characters serde_json leaves raw but a
/// terminal would act on: DEL, C1 controls and the bidirectional and invisible marks of
/// [`for_terminal`]. The JSON means the same; printed on a terminal, it does nothing.
pub struct SafeJson(serde_json::ser::PrettyFormatter<'static>);

impl SafeJson {
    /// Two-space indentation, as `to_writer_pretty`.
    pub fn new() -> SafeJson {
        SafeJson(serde_json::ser::PrettyFormatter::new())
    }
}

impl Default for SafeJson {
    fn default() -> Self {
        SafeJson::new()
    }
}

impl serde_json::ser::Formatter for SafeJson {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_hidden(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// What stands where a secret or a token was.
pub const REDACTED: &str = "[redacted]";

/// Vault's token prefixes, as OpenBao mints them (`sdk/helper/consts/token_consts.go`): service,
/// batch and recovery tokens, each body at least [`TOKEN_ID_LEN`] characters of base62 or
/// base64url (a service token's signed form is longer; a namespace's id may follow after a `.`).
const PREFIXES: [&str; 3] = ["hvs", "hvb", "hvr"];

/// The random id of a token (`TokenLength` in OpenBao's `token_store.go`): the whole body of a
/// legacy `s.` or `r.` token.
pub(crate) const TOKEN_ID_LEN: usize = 24;

/// The least body of a legacy batch token (`b.`): base64url of an encrypted entry, which with its
/// nonce, tag and policies is longer than this, where a short `b.` word is ordinary text.
const BATCH_BODY_MIN: usize = 64;

/// Where the next thing shaped like a Vault token starts and ends in `text`, at or after byte
/// `from`. A token starts a word (no letter or digit before it); a legacy `s.`/`r.` body is
/// exactly `TOKEN_ID_LEN` letters and digits, so `s.t` or `s.example-name` are words.
pub fn next_token(text: &str, from: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut at = from;
    while let Some(off) = b.get(at..)?.iter().position(|&c| c == b'.') {
        let dot = at + off;
        if let Some((start, end)) = token_around(b, dot).filter(|&(start, _)| start >= from) {
            return Some((start, end));
        }
        at = dot + 1;
    }
    None
}

/// The token whose prefix ends at the `.` at `dot`, if there is one.
fn token_around(b: &[u8], dot: usize) -> Option<(usize, usize)> {
    let starts_word = |start: usize| start == 0 || !b[start - 1].is_ascii_alphanumeric();
    let rest = &b[dot + 1..];
    let body = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
        .count();
    if dot >= 3
        && PREFIXES.iter().any(|p| &b[dot - 3..dot] == p.as_bytes())
        && starts_word(dot - 3)
        && body >= TOKEN_ID_LEN
    {
        return Some((dot - 3, dot + 1 + body));
    }
    if dot == 0 || !starts_word(dot - 1) {
        return None;
    }
    let base62 = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    match b[dot - 1] {
        b's' | b'r' if base62 == TOKEN_ID_LEN && body == TOKEN_ID_LEN => {
            Some((dot - 1, dot + 1 + body))
        }
        b'b' if body >= BATCH_BODY_MIN => Some((dot - 1, dot + 1 + body)),
        _ => None,
    }
}

/// `text` with everything shaped like a Vault token ([`next_token`]) replaced by its prefix and
/// `[redacted]` (`hvs.[redacted]`): for text from outside that may quote a token nobody
/// registered here (an ESO event quoting the token ESO was given).
pub fn tokens(text: &str) -> std::borrow::Cow<'_, str> {
    let Some(mut next) = next_token(text, 0) else {
        return std::borrow::Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    loop {
        let (start, end) = next;
        out.push_str(&text[done..start]);
        push_token_mark(&mut out, &text[start..end]);
        done = end;
        match next_token(text, end) {
            Some(n) => next = n,
            None => break,
        }
    }
    out.push_str(&text[done..]);
    std::borrow::Cow::Owned(out)
}

/// A token's prefix (up to its `.`), then [`REDACTED`].
pub(crate) fn push_token_mark(out: &mut String, token: &str) {
    let dot = token.find('.').map_or(0, |d| d + 1);
    out.push_str(&token[..dot]);
    out.push_str(REDACTED);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{1b}[2Jc\u{1b}[1;31md\r\ne\u{7}f\u{9b}g\u{202e}h\u{2066}i\u{1b}]8;;http://x\u{1b}\\j\u{0}k\u{7f}";
        assert_eq!(for_terminal(hostile), "abcd  efghijk");
    }

    #[test]
    fn long_text_is_capped_with_a_mark() {
        let long = "x".repeat(20_000_000);
        let t = for_terminal(&long);
        assert!(t.starts_with(&"x".repeat(MAX_CHARS)));
        assert!(t.ends_with("… (19999500 more characters)"), "{t}");
        assert!(t.chars().count() < MAX_CHARS + 40);
        let c = cap(&long);
        assert!(c.ends_with("… (19999500 more characters)"));
        assert_eq!(cap("short"), "short");
        // Multi-byte characters are cut on a boundary.
        assert_eq!(cap_at("ééé", 2), "éé… (1 more characters)");
    }

    #[test]
    fn json_escapes_what_a_terminal_would_act_on() {
        use serde::Serialize;
        let v = serde_json::json!({ "m": "a\u{1b}[2Jb\u{9b}c\u{202e}d\u{7f}é" });
        let mut out = Vec::new();
        v.serialize(&mut serde_json::Serializer::with_formatter(
            &mut out,
            SafeJson::new(),
        ))
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\n  \"m\": \"a\\u001b[2Jb\\u009bc\\u202ed\\u007fé\"\n}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn escaped_shows_controls_and_every_bidirectional_control() {
        let bidi = [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
        ];
        for c in bidi {
            let s = format!("a{c}b");
            let e = escaped(&s);
            assert_eq!(e, format!("a\\u{{{:x}}}b", u32::from(c)));
            assert!(!for_terminal(&s).contains(c));
        }
        assert_eq!(escaped("a\u{1b}[2Jb\n"), "a\\u{1b}[2Jb\\n");
        assert!(matches!(escaped("plain é"), Cow::Borrowed("plain é")));
    }

    #[test]
    fn tokens_are_redacted_on_the_way_in_and_on_the_terminal() {
        let msg = "forbidden: token s.Kq3kP9vLm2Wn8Rt5Yb7Zc1Ad is not allowed";
        let want = "forbidden: token s.[redacted] is not allowed";
        assert_eq!(cap(msg), want);
        assert_eq!(for_terminal(msg), want);
        // Before the cut: a token across the cap is never shown in part.
        let long = format!("{} hvs.{}", "x".repeat(MAX_CHARS - 10), "Q".repeat(200));
        assert!(!cap(&long).contains("QQ"), "{}", cap(&long));
    }

    #[test]
    fn plain_text_is_unchanged() {
        let s = "error retrieving secret at .data[0], key: ask/core-service/auh1-dev/X, Code: 403 — ünïcödé";
        assert_eq!(for_terminal(s), s);
        assert_eq!(cap(s), s);
    }
}
