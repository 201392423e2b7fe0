//! A spec's text read into toml-span's values: by toml_parser where the text keeps to what
//! specs are made of, else by toml-span itself.
//!
//! toml-span's tokenizer walks every character through an iterator, comments included, and that
//! walk was most of the time spent loading a platform's specs. toml_parser (the `toml` crate's
//! lexer and parser) scans bytes. It only gives events, so the values are built here, exactly as
//! toml-span builds them: the same tables, keys and values with the same spans (a test compares
//! the two on every spec of the repository and on thousands of mutated ones), so every problem is
//! reported at the same file:line:col as before.
//!
//! The fast path takes only what it can build as toml-span does: header tables, dotted keys,
//! single-line strings, booleans, decimal integers, arrays and inline tables, in a text of LF
//! lines without control characters. Anything else (a syntax error, a key or table defined twice,
//! a table reopened through a dotted key, a float, a date, a multi-line string, an array of
//! tables, a CR, deep nesting) goes to `toml_span::parse`, whose value or error is the answer:
//! errors are toml-span's, always.

use std::borrow::Cow;
use std::collections::btree_map::Entry;

use toml_parser::decoder::Encoding;
pub(super) use toml_parser::lexer::Token;
use toml_parser::parser::EventReceiver;
use toml_parser::{ErrorSink, ParseError, Source};
use toml_span::value::{Key, Table, ValueInner};
use toml_span::{Span, Value};

/// The values of `text`, as `toml_span::parse` gives them. `tokens` is a buffer the lexer's
/// tokens go in, kept from one file to the next (see [`fast_in`]).
pub(super) fn parse<'a>(
    text: &'a str,
    tokens: &mut Vec<Token>,
) -> Result<Value<'a>, toml_span::Error> {
    match fast_in(text, tokens) {
        Some(v) => Ok(v),
        None => toml_span::parse(text),
    }
}

/// The values of `text` when the fast path can build them; `None` sends it to toml-span.
#[cfg(test)]
pub(super) fn fast(text: &str) -> Option<Value<'_>> {
    fast_in(text, &mut Vec::new())
}

/// [`fast`], lexing into `tokens` (emptied first). One buffer for every file of a run: the
/// lexer's own vector, sized from each text's length and grown by doubling, was made and freed
/// again for each file, and a block that large makes the allocator sort its free lists.
fn fast_in<'a>(text: &'a str, tokens: &mut Vec<Token>) -> Option<Value<'a>> {
    if !plain(text) {
        return None;
    }
    tokens.clear();
    tokens.extend(Source::new(text).lex());
    let mut b = Builder::new(text);
    let mut error: Option<ParseError> = None;
    toml_parser::parser::parse_document(tokens, &mut b, &mut error);
    if error.is_some() {
        return None;
    }
    b.finish()
}

/// Nothing the two parsers might judge differently outside strings and keys: no control
/// character but tab and LF (a CRLF file takes toml-span's path), no DEL, no byte-order mark.
fn plain(text: &str) -> bool {
    let ok = |b: u8| (b >= 0x20 && b != 0x7f) || b == b'\t' || b == b'\n';
    // By blocks, each folded without a branch, which the compiler turns into vector code.
    !text.starts_with('\u{feff}')
        && text
            .as_bytes()
            .chunks(64)
            .all(|block| block.iter().fold(true, |all, &b| all & ok(b)))
}

/// Keys and containers deeper than this take toml-span's path, which enforces its own limit
/// (128) with its own error.
const MAX_DEPTH: usize = 64;

/// A table being built. Its span, for a header's table, is its section's (known at the end).
struct Tab<'a> {
    entries: Vec<(Key<'a>, Item<'a>)>,
    kind: Kind,
    span: Span,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Root,
    /// A prefix of a header (`secrets` of `[secrets.A]`), from the section that named it first.
    Implicit(usize),
    /// Named by a header, its span from the section that named it or a longer header first.
    Header(usize),
    /// Made by a dotted key (`fields.password = ...`): the span of its first value.
    Dotted,
    /// `{ ... }`.
    Inline,
}

/// A header's section: from its `[` to the end of its last value, or of the header's line.
struct Section {
    at: usize,
    end: usize,
}

enum Item<'a> {
    Scalar(ValueInner<'a>, Span),
    Array(Vec<Item<'a>>, Span),
    Table(usize),
}

/// An array or inline table being read, and the key its value goes to.
enum Frame<'a> {
    Array {
        start: usize,
        items: Vec<Item<'a>>,
        keys: Vec<Key<'a>>,
    },
    Inline {
        table: usize,
        keys: Vec<Key<'a>>,
    },
}

struct Builder<'a> {
    text: &'a str,
    /// False once the text needs toml-span's path; later events are ignored.
    ok: bool,
    tables: Vec<Tab<'a>>,
    sections: Vec<Section>,
    /// The table key-value lines go into.
    current: usize,
    in_header: bool,
    header_at: usize,
    /// The last header's line has not ended yet: its section runs to that line's end.
    header_line_open: bool,
    /// The dotted key being read (of a header, a key-value line or an inline table's entry).
    keys: Vec<Key<'a>>,
    frames: Vec<Frame<'a>>,
    depth: usize,
}

impl<'a> Builder<'a> {
    fn new(text: &'a str) -> Self {
        Builder {
            text,
            ok: true,
            tables: vec![Tab {
                entries: Vec::new(),
                kind: Kind::Root,
                span: Span::new(0, text.len()),
            }],
            sections: Vec::new(),
            current: 0,
            in_header: false,
            header_at: 0,
            header_line_open: false,
            keys: Vec::new(),
            frames: Vec::new(),
            depth: 0,
        }
    }

    fn table(&mut self, kind: Kind, span: Span) -> usize {
        self.tables.push(Tab {
            entries: Vec::new(),
            kind,
            span,
        });
        self.tables.len() - 1
    }

    /// The table under `key` in `table`, if that entry is one.
    fn find(&self, table: usize, key: &Key<'_>) -> Option<&Item<'a>> {
        self.tables[table]
            .entries
            .iter()
            .find(|(k, _)| k.name == key.name)
            .map(|(_, item)| item)
    }

    fn close_header(&mut self) {
        let path = std::mem::take(&mut self.keys);
        if path.is_empty() || !self.frames.is_empty() {
            self.ok = false;
            return;
        }
        let section = self.sections.len();
        self.sections.push(Section {
            at: self.header_at,
            end: 0,
        });
        let last = path.len() - 1;
        let mut t = 0;
        for (i, key) in path.into_iter().enumerate() {
            t = match self.find(t, &key) {
                Some(&Item::Table(j)) => match self.tables[j].kind {
                    // `[a]` after `[a.b]`: toml-span spans `a` by `[a.b]`, which named it first.
                    Kind::Implicit(s) if i == last => {
                        self.tables[j].kind = Kind::Header(s);
                        j
                    }
                    Kind::Implicit(_) | Kind::Header(_) if i < last => j,
                    _ => {
                        self.ok = false;
                        return;
                    }
                },
                Some(_) => {
                    self.ok = false;
                    return;
                }
                None => {
                    let kind = match i == last {
                        true => Kind::Header(section),
                        false => Kind::Implicit(section),
                    };
                    let new = self.table(kind, Span::default());
                    self.tables[t].entries.push((key, Item::Table(new)));
                    new
                }
            };
        }
        self.current = t;
        self.header_line_open = true;
    }

    /// `item` under the dotted key read ([`Builder::keys`], emptied) in `table`, making the
    /// dotted tables on the way, each spanned by this first value, as toml-span's
    /// `add_dotted_key` does.
    fn insert(&mut self, mut table: usize, item: Item<'a>) {
        // Taken and given back empty: one buffer serves every line.
        let mut keys = std::mem::take(&mut self.keys);
        let Some(key) = keys.pop() else {
            self.ok = false;
            return;
        };
        let span = self.item_span(&item);
        for part in keys.drain(..) {
            table = match self.find(table, &part) {
                Some(&Item::Table(j)) if self.tables[j].kind == Kind::Dotted => j,
                Some(_) => {
                    self.ok = false;
                    return;
                }
                None => {
                    let new = self.table(Kind::Dotted, span);
                    self.tables[table].entries.push((part, Item::Table(new)));
                    new
                }
            };
        }
        self.tables[table].entries.push((key, item));
        self.keys = keys;
    }

    fn item_span(&self, item: &Item<'_>) -> Span {
        match item {
            Item::Scalar(_, span) | Item::Array(_, span) => *span,
            Item::Table(t) => self.tables[*t].span,
        }
    }

    /// A value is complete, ending at `end`: into the array or inline table open, else into the
    /// current table, its line extending the section.
    fn deliver(&mut self, item: Item<'a>, end: usize) {
        match self.frames.last_mut() {
            Some(Frame::Array { items, .. }) => items.push(item),
            Some(Frame::Inline { table, .. }) => {
                let table = *table;
                self.insert(table, item);
            }
            None => {
                self.insert(self.current, item);
                if let Some(s) = self.sections.last_mut().filter(|_| self.current != 0) {
                    s.end = s.end.max(end);
                }
            }
        }
    }

    fn open(&mut self, frame: impl FnOnce(Vec<Key<'a>>) -> Frame<'a>) -> bool {
        self.depth += self.keys.len() + 1;
        if self.depth > MAX_DEPTH {
            self.ok = false;
            return false;
        }
        let keys = std::mem::take(&mut self.keys);
        self.frames.push(frame(keys));
        true
    }

    fn close(&mut self) -> Option<Frame<'a>> {
        let frame = self.frames.pop()?;
        let keys = match &frame {
            Frame::Array { keys, .. } | Frame::Inline { keys, .. } => keys.len(),
        };
        self.depth -= keys + 1;
        Some(frame)
    }

    fn finish(mut self) -> Option<Value<'a>> {
        if !self.ok || self.in_header || !self.frames.is_empty() || !self.keys.is_empty() {
            return None;
        }
        if self.header_line_open {
            let len = self.text.len();
            if let Some(s) = self.sections.last_mut() {
                s.end = s.end.max(len);
            }
        }
        let root = self.value_of_table(0)?;
        Some(Value::with_span(root, Span::new(0, self.text.len())))
    }

    fn value_of_table(&mut self, t: usize) -> Option<ValueInner<'a>> {
        let mut table = Table::new();
        for (key, item) in std::mem::take(&mut self.tables[t].entries) {
            let value = self.value(item)?;
            match table.entry(key) {
                Entry::Vacant(v) => {
                    v.insert(value);
                }
                // A key defined twice: toml-span's error.
                Entry::Occupied(_) => return None,
            }
        }
        Some(ValueInner::Table(table))
    }

    fn value(&mut self, item: Item<'a>) -> Option<Value<'a>> {
        Some(match item {
            Item::Scalar(v, span) => Value::with_span(v, span),
            Item::Array(items, span) => {
                let values = items
                    .into_iter()
                    .map(|i| self.value(i))
                    .collect::<Option<Vec<_>>>()?;
                Value::with_span(ValueInner::Array(values), span)
            }
            Item::Table(t) => {
                let span = match self.tables[t].kind {
                    Kind::Implicit(s) | Kind::Header(s) => {
                        Span::new(self.sections[s].at, self.sections[s].end)
                    }
                    _ => self.tables[t].span,
                };
                Value::with_span(self.value_of_table(t)?, span)
            }
        })
    }

    fn key(&mut self, span: toml_parser::Span, kind: Option<Encoding>) {
        if self.keys.len() >= MAX_DEPTH {
            self.ok = false;
            return;
        }
        let raw = &self.text[span.start()..span.end()];
        let key = match kind {
            None if !raw.is_empty() && raw.bytes().all(is_keylike) => Key {
                name: Cow::Borrowed(raw),
                span: Span::new(span.start(), span.end()),
            },
            None => {
                self.ok = false;
                return;
            }
            Some(kind) => match string(raw, span.start(), kind) {
                Some((name, span)) => Key { name, span },
                None => {
                    self.ok = false;
                    return;
                }
            },
        };
        self.keys.push(key);
    }
}

/// toml-span's bare key characters.
fn is_keylike(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// A single-line string token `raw` at `at` decoded, with toml-span's span: its characters
/// without the quotes, or the opening quote alone for an empty string.
fn string(raw: &str, at: usize, kind: Encoding) -> Option<(Cow<'_, str>, Span)> {
    let quote = match kind {
        Encoding::BasicString => '"',
        Encoding::LiteralString => '\'',
        _ => return None,
    };
    let inner = raw.strip_prefix(quote)?.strip_suffix(quote)?;
    let span = match inner.is_empty() {
        true => Span::new(at, at + 1),
        false => Span::new(at + 1, at + 1 + inner.len()),
    };
    let value = match quote {
        '"' if inner.contains('\\') => Cow::Owned(unescape(inner)?),
        _ => Cow::Borrowed(inner),
    };
    Some((value, span))
}

/// A basic string's escapes, as toml-span reads them (TOML 1.1's `\e` and `\xHH` included);
/// `None` for any other, which toml-span reports.
fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let hex = |chars: &mut std::str::Chars<'_>, n: usize| {
            let digits: String = chars.by_ref().take(n).collect();
            if digits.len() != n || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
        };
        out.push(match chars.next()? {
            '"' => '"',
            '\\' => '\\',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'e' => '\u{1b}',
            'u' => hex(&mut chars, 4)?,
            'U' => hex(&mut chars, 8)?,
            'x' => hex(&mut chars, 2)?,
            _ => return None,
        });
    }
    Some(out)
}

/// A bare value toml-span reads the same way: `true`, `false`, or a decimal integer without a
/// sign other than `-`, leading zeros or underscores. Floats, other integers and dates take
/// toml-span's path.
fn bare(raw: &str) -> Option<ValueInner<'_>> {
    match raw {
        "true" => return Some(ValueInner::Boolean(true)),
        "false" => return Some(ValueInner::Boolean(false)),
        _ => {}
    }
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    let plain = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    match plain {
        true => raw.parse().ok().map(ValueInner::Integer),
        false => None,
    }
}

impl EventReceiver for Builder<'_> {
    fn std_table_open(&mut self, span: toml_parser::Span, _: &mut dyn ErrorSink) {
        if !self.ok {
            return;
        }
        if self.in_header || !self.keys.is_empty() || !self.frames.is_empty() {
            self.ok = false;
        }
        self.in_header = true;
        self.header_at = span.start();
    }

    fn std_table_close(&mut self, _: toml_parser::Span, _: &mut dyn ErrorSink) {
        if !self.ok {
            return;
        }
        self.in_header = false;
        self.close_header();
    }

    fn array_table_open(&mut self, _: toml_parser::Span, _: &mut dyn ErrorSink) {
        self.ok = false;
    }

    fn inline_table_open(&mut self, span: toml_parser::Span, _: &mut dyn ErrorSink) -> bool {
        if !self.ok {
            return false;
        }
        let table = self.table(Kind::Inline, Span::new(span.start(), span.end()));
        self.open(|keys| Frame::Inline { table, keys })
    }

    fn inline_table_close(&mut self, span: toml_parser::Span, _: &mut dyn ErrorSink) {
        if !self.ok {
            return;
        }
        match self.close() {
            Some(Frame::Inline { table, keys }) => {
                self.tables[table].span.end = span.end();
                self.keys = keys;
                self.deliver(Item::Table(table), span.end());
            }
            _ => self.ok = false,
        }
    }

    fn array_open(&mut self, span: toml_parser::Span, _: &mut dyn ErrorSink) -> bool {
        if !self.ok {
            return false;
        }
        let start = span.start();
        self.open(|keys| Frame::Array {
            start,
            items: Vec::new(),
            keys,
        })
    }

    fn array_close(&mut self, span: toml_parser::Span, _: &mut dyn ErrorSink) {
        if !self.ok {
            return;
        }
        match self.close() {
            Some(Frame::Array { start, items, keys }) => {
                self.keys = keys;
                let item = Item::Array(items, Span::new(start, span.end()));
                self.deliver(item, span.end());
            }
            _ => self.ok = false,
        }
    }

    fn simple_key(
        &mut self,
        span: toml_parser::Span,
        kind: Option<Encoding>,
        _: &mut dyn ErrorSink,
    ) {
        if self.ok {
            self.key(span, kind);
        }
    }

    fn scalar(&mut self, span: toml_parser::Span, kind: Option<Encoding>, _: &mut dyn ErrorSink) {
        if !self.ok {
            return;
        }
        let raw = &self.text[span.start()..span.end()];
        let item = match kind {
            None => bare(raw).map(|v| Item::Scalar(v, Span::new(span.start(), span.end()))),
            Some(kind) => string(raw, span.start(), kind)
                .map(|(s, at)| Item::Scalar(ValueInner::String(s), at)),
        };
        match item {
            Some(item) => self.deliver(item, span.end()),
            None => self.ok = false,
        }
    }

    fn newline(&mut self, span: toml_parser::Span, _: &mut dyn ErrorSink) {
        if self.header_line_open && self.frames.is_empty() {
            self.header_line_open = false;
            if let Some(s) = self.sections.last_mut() {
                s.end = s.end.max(span.end());
            }
        }
    }

    fn error(&mut self, _: toml_parser::Span, _: &mut dyn ErrorSink) {
        self.ok = false;
    }
}

#[cfg(test)]
mod tests;
