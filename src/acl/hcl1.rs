//! The syntax OpenBao reads policies in: HCL 1 (hashicorp/hcl v1, the `v1.0.1-vault-7` fork that
//! OpenBao pins) and HCL 1's own JSON reader, into the same tree. A port of that module's scanner,
//! parser and JSON flattening, kept to what decides whether a text is accepted and what it means:
//! `hcl/scanner/scanner.go`, `hcl/parser/parser.go` (`ParseDontErrorOnDuplicateKeys`, as
//! OpenBao's `sdk/helper/hclutil.ParseConfig` calls it), `hcl/strconv/quote.go`,
//! `hcl/token/token.go` (`Value`, heredocs), `json/scanner/scanner.go`, `json/parser/parser.go`
//! and `json/parser/flatten.go`.
//!
//! What HCL 2 (hcl-rs) rejects and this accepts, as OpenBao does: several blocks or attributes on
//! one line, commas after attributes, `path "a" "b" { ... }`, a dangling `key =` at the end of the
//! text, nested lists, and in JSON a missing closing brace, `true` inside a list (dropped), and
//! anything after the first object.

/// A token's kind; only the ones the parsers look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Eof,
    Ident,
    Number,
    Float,
    Bool,
    String,
    Heredoc,
    Null,
    LBrack,
    RBrack,
    LBrace,
    RBrace,
    Comma,
    Assign,
    Colon,
    /// `.`, `+`, `-` on their own: valid tokens that no rule accepts.
    Other,
}

/// A literal or key token.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub kind: Kind,
    /// The source text (quotes and escapes included).
    pub text: String,
    /// From the JSON reader: strings unquote with Go's rules, not HCL's.
    pub json: bool,
    /// 1-based line, for messages.
    pub line: usize,
}

/// A node of the tree.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    /// A number, bool, string or heredoc.
    Literal(Token),
    /// `{ ... }`: its items.
    Object(Vec<Item>),
    /// `[ ... ]`.
    List(Vec<Node>),
}

/// `key key... = value` or `key key... { ... }`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Item {
    pub keys: Vec<Token>,
    pub val: Node,
}

/// How deep `{ }` and `[ ]` may nest in a policy, counted from the top level (a `path` block is
/// level 1; in JSON, `{"path": {"a": {` is level 3). Both parsers recurse once per level, so
/// without a bound a policy of 10,000 nested blocks (which OpenBao stores: its Go stacks grow)
/// overflows the stack and aborts the process before the token is revoked. A real policy
/// nests fewer than ten levels (the deepest, a JSON `control_group` factor's capabilities, is
/// seven), so 64 refuses no real one, and 64 levels of these parsers stay far below the 2 MiB stack of a spawned thread
/// (the tests run on those; the main thread has 8 MiB).
pub(super) const MAX_DEPTH: usize = 64;

/// A syntax error, with the line where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SyntaxError {
    pub line: usize,
    pub message: String,
    /// The text nests deeper than [`MAX_DEPTH`] (`message` says so).
    pub too_deep: bool,
}

impl SyntaxError {
    fn too_deep(line: usize) -> SyntaxError {
        SyntaxError {
            line,
            message: format!("nests deeper than {MAX_DEPTH} levels"),
            too_deep: true,
        }
    }
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Parser outcome: `Eof` is the upstream `errEofToken`, which some callers treat as the end.
enum Stop {
    Eof,
    Error(SyntaxError),
}

impl From<SyntaxError> for Stop {
    fn from(e: SyntaxError) -> Stop {
        Stop::Error(e)
    }
}

const EOF: char = '\0';

/// The rune cursor both scanners share (`next`, `unread`, `peek` of the Go scanner). Positions
/// count characters.
struct Cursor<'a> {
    chars: Chars<'a>,
    pos: usize,
    /// Whether the last `next` consumed a character (Go cannot unread past the end either).
    advanced: bool,
    line: usize,
}

/// The text's characters, by position: an ASCII text as it is (a byte is a character), any
/// other decoded once. (Decoded always, a 3 MB policy took 12 MB more while it was read.)
enum Chars<'a> {
    Ascii(&'a [u8]),
    Wide(Vec<char>),
}

impl Chars<'_> {
    fn get(&self, i: usize) -> Option<char> {
        match self {
            Chars::Ascii(b) => b.get(i).map(|&c| char::from(c)),
            Chars::Wide(c) => c.get(i).copied(),
        }
    }

    /// The characters from `from` to `to`.
    fn text(&self, from: usize, to: usize) -> String {
        match self {
            Chars::Ascii(b) => b[from..to].iter().map(|&c| char::from(c)).collect(),
            Chars::Wide(c) => c[from..to].iter().collect(),
        }
    }
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            chars: if text.is_ascii() {
                Chars::Ascii(text.as_bytes())
            } else {
                Chars::Wide(text.chars().collect())
            },
            pos: 0,
            advanced: false,
            line: 1,
        }
    }

    fn next(&mut self) -> Result<char, SyntaxError> {
        match self.chars.get(self.pos) {
            None => {
                self.advanced = false;
                Ok(EOF)
            }
            Some(c) => {
                self.pos += 1;
                self.advanced = true;
                if c == '\n' {
                    self.line += 1;
                }
                match c {
                    '\0' => Err(self.error("unexpected null character (0x00)")),
                    '\u{E123}' => {
                        Err(self.error("unicode code point U+E123 reserved for internal use"))
                    }
                    _ => Ok(c),
                }
            }
        }
    }

    fn unread(&mut self) {
        if self.advanced && self.pos > 0 {
            self.pos -= 1;
            if self.chars.get(self.pos) == Some('\n') {
                self.line -= 1;
            }
            self.advanced = false;
        }
    }

    fn peek(&self) -> char {
        self.chars.get(self.pos).unwrap_or(EOF)
    }

    fn error(&self, message: &str) -> SyntaxError {
        SyntaxError {
            line: self.line,
            message: message.to_string(),
            too_deep: false,
        }
    }

    fn text(&self, from: usize) -> String {
        self.chars.text(from, self.pos)
    }

    /// Whitespace as both scanners skip it.
    fn skip_whitespace(&mut self) -> Result<char, SyntaxError> {
        let mut ch = self.next()?;
        while matches!(ch, ' ' | '\t' | '\n' | '\r') {
            ch = self.next()?;
        }
        Ok(ch)
    }

    fn scan_mantissa(&mut self, mut ch: char) -> Result<char, SyntaxError> {
        let mut scanned = false;
        while ch.is_ascii_digit() {
            ch = self.next()?;
            scanned = true;
        }
        if scanned && ch != EOF {
            self.unread();
        }
        Ok(ch)
    }

    fn scan_fraction(&mut self, ch: char) -> Result<char, SyntaxError> {
        if ch == '.' {
            let peeked = self.peek();
            return self.scan_mantissa(peeked);
        }
        Ok(ch)
    }

    fn scan_exponent(&mut self, mut ch: char) -> Result<char, SyntaxError> {
        if ch == 'e' || ch == 'E' {
            ch = self.next()?;
            if ch == '-' || ch == '+' {
                ch = self.next()?;
            }
            ch = self.scan_mantissa(ch)?;
        }
        Ok(ch)
    }

    /// The rest of a number whose first digit `ch` was read: digits, then a fraction or an
    /// exponent makes it a float.
    fn scan_decimal(&mut self, ch: char) -> Result<Kind, SyntaxError> {
        self.scan_mantissa(ch)?;
        let mut c = self.next()?;
        if c == 'e' || c == 'E' {
            self.scan_exponent(c)?;
            return Ok(Kind::Float);
        }
        if c == '.' {
            c = self.scan_fraction(c)?;
            if c == 'e' || c == 'E' {
                c = self.next()?;
                self.scan_exponent(c)?;
            }
            return Ok(Kind::Float);
        }
        if c != EOF {
            self.unread();
        }
        Ok(Kind::Number)
    }

    /// After a `.`: a float when a digit follows, else the lone period.
    fn scan_period(&mut self) -> Result<Kind, SyntaxError> {
        let peeked = self.peek();
        if !peeked.is_ascii_digit() {
            return Ok(Kind::Other);
        }
        let c = self.scan_mantissa(peeked)?;
        self.scan_exponent(c)?;
        Ok(Kind::Float)
    }

    /// A quoted string after its opening quote; `${...}` may hold quotes (and, in HCL, newlines).
    fn scan_string(&mut self, newline_in_braces: bool) -> Result<(), SyntaxError> {
        let mut braces = 0;
        loop {
            let ch = self.next()?;
            if (ch == '\n' && (braces == 0 || !newline_in_braces)) || ch == EOF {
                return Err(self.error("literal not terminated"));
            }
            if ch == '"' && (braces == 0 || !newline_in_braces) {
                return Ok(());
            }
            if braces == 0 && ch == '$' && self.peek() == '{' {
                braces += 1;
                self.next()?;
            } else if braces > 0 && ch == '{' {
                braces += 1;
            }
            if braces > 0 && ch == '}' {
                braces -= 1;
            }
            if ch == '\\' {
                self.scan_escape()?;
            }
        }
    }

    fn scan_escape(&mut self) -> Result<(), SyntaxError> {
        let ch = self.next()?;
        match ch {
            'a' | 'b' | 'f' | 'n' | 'r' | 't' | 'v' | '\\' | '"' => Ok(()),
            '0'..='7' => self.scan_digits(ch, 8, 3),
            'x' => {
                let c = self.next()?;
                self.scan_digits(c, 16, 2)
            }
            'u' => {
                let c = self.next()?;
                self.scan_digits(c, 16, 4)
            }
            'U' => {
                let c = self.next()?;
                self.scan_digits(c, 16, 8)
            }
            _ => Err(self.error("illegal char escape")),
        }
    }

    fn scan_digits(&mut self, mut ch: char, base: u32, mut n: u32) -> Result<(), SyntaxError> {
        let start = n;
        while n > 0 && ch.to_digit(16).is_some_and(|d| d < base) {
            ch = self.next()?;
            if ch == EOF {
                break;
            }
            n -= 1;
        }
        if n > 0 {
            return Err(self.error("illegal char escape"));
        }
        if n != start && ch != EOF {
            self.unread();
        }
        Ok(())
    }
}

fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || (c as u32 >= 0x80 && c.is_alphabetic())
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (c as u32 >= 0x80 && c.is_numeric())
}

// ---- HCL ------------------------------------------------------------------------------------

struct HclScanner<'a> {
    cur: Cursor<'a>,
}

impl HclScanner<'_> {
    /// The next token, comments skipped (the parser's `scan` consumes them too).
    fn scan(&mut self) -> Result<Token, SyntaxError> {
        loop {
            let ch = self.cur.skip_whitespace()?;
            let start = self.cur.pos.saturating_sub(usize::from(ch != EOF));
            let line = self.cur.line - usize::from(ch == '\n');
            let kind = if is_letter(ch) {
                let ident = self.scan_identifier()?;
                if ident == "true" || ident == "false" {
                    Kind::Bool
                } else {
                    Kind::Ident
                }
            } else if ch.is_ascii_digit() {
                self.scan_number(ch)?
            } else {
                match ch {
                    EOF => Kind::Eof,
                    '"' => {
                        self.cur.scan_string(true)?;
                        Kind::String
                    }
                    '#' | '/' => {
                        self.scan_comment(ch)?;
                        continue;
                    }
                    '.' => self.cur.scan_period()?,
                    '<' => {
                        self.scan_heredoc()?;
                        Kind::Heredoc
                    }
                    '[' => Kind::LBrack,
                    ']' => Kind::RBrack,
                    '{' => Kind::LBrace,
                    '}' => Kind::RBrace,
                    ',' => Kind::Comma,
                    '=' => Kind::Assign,
                    '+' => Kind::Other,
                    '-' => {
                        if self.cur.peek().is_ascii_digit() {
                            let c = self.cur.next()?;
                            self.scan_number(c)?
                        } else {
                            Kind::Other
                        }
                    }
                    _ => return Err(self.cur.error("illegal char")),
                }
            };
            return Ok(Token {
                kind,
                text: self.cur.text(start),
                json: false,
                line,
            });
        }
    }

    fn scan_identifier(&mut self) -> Result<String, SyntaxError> {
        let start = self.cur.pos - 1;
        let mut ch = self.cur.next()?;
        while is_letter(ch) || is_digit(ch) || ch == '-' || ch == '.' {
            ch = self.cur.next()?;
        }
        if ch != EOF {
            self.cur.unread();
        }
        Ok(self.cur.text(start))
    }

    fn scan_comment(&mut self, ch: char) -> Result<(), SyntaxError> {
        if ch == '#' || (ch == '/' && self.cur.peek() != '*') {
            if ch == '/' && self.cur.peek() != '/' {
                return Err(self.cur.error("expected '/' for comment"));
            }
            let mut c = self.cur.next()?;
            while c != '\n' && c != EOF {
                c = self.cur.next()?;
            }
            if c != EOF {
                self.cur.unread();
            }
            return Ok(());
        }
        // `/*`: read past the `*`, then up to `*/`.
        self.cur.next()?;
        let mut c = self.cur.next()?;
        loop {
            if c == EOF {
                return Err(self.cur.error("comment not terminated"));
            }
            let prev = c;
            c = self.cur.next()?;
            if prev == '*' && c == '/' {
                return Ok(());
            }
        }
    }

    fn scan_number(&mut self, ch: char) -> Result<Kind, SyntaxError> {
        if ch == '0' {
            let mut c = self.cur.next()?;
            if c == 'x' || c == 'X' {
                c = self.cur.next()?;
                let mut found = false;
                while c.is_ascii_hexdigit() {
                    c = self.cur.next()?;
                    found = true;
                }
                if !found {
                    return Err(self.cur.error("illegal hexadecimal number"));
                }
                if c != EOF {
                    self.cur.unread();
                }
                return Ok(Kind::Number);
            }
            let mut illegal_octal = false;
            while c.is_ascii_digit() {
                c = self.cur.next()?;
                if c == '8' || c == '9' {
                    illegal_octal = true;
                }
            }
            if c == 'e' || c == 'E' {
                self.cur.scan_exponent(c)?;
                return Ok(Kind::Float);
            }
            if c == '.' {
                c = self.cur.scan_fraction(c)?;
                if c == 'e' || c == 'E' {
                    c = self.cur.next()?;
                    self.cur.scan_exponent(c)?;
                }
                return Ok(Kind::Float);
            }
            if illegal_octal {
                return Err(self.cur.error("illegal octal number"));
            }
            if c != EOF {
                self.cur.unread();
            }
            return Ok(Kind::Number);
        }
        self.cur.scan_decimal(ch)
    }

    /// `<<EOF\n...\nEOF\n` (or `<<-EOF`); the terminator line may be indented.
    fn scan_heredoc(&mut self) -> Result<(), SyntaxError> {
        if self.cur.next()? != '<' {
            return Err(self.cur.error("heredoc expected second '<', didn't see it"));
        }
        let anchor_start = self.cur.pos;
        let mut ch = self.cur.next()?;
        if ch == '-' {
            ch = self.cur.next()?;
        }
        while is_letter(ch) || is_digit(ch) {
            ch = self.cur.next()?;
        }
        if ch == EOF {
            return Err(self.cur.error("heredoc not terminated"));
        }
        if ch == '\r' && self.cur.peek() == '\n' {
            ch = self.cur.next()?;
        }
        if ch != '\n' {
            return Err(self.cur.error("invalid characters in heredoc anchor"));
        }
        let anchor: String = self.cur.chars.text(anchor_start, self.cur.pos - 1);
        let anchor = anchor.trim_end_matches('\r').to_string();
        if anchor.is_empty() || anchor == "-" {
            return Err(self.cur.error("zero-length heredoc anchor"));
        }
        let ident = anchor.strip_prefix('-').unwrap_or(&anchor).to_string();
        let mut line_start = self.cur.pos;
        loop {
            let c = self.cur.next()?;
            if c == '\n' {
                let line: String = self.cur.chars.text(line_start, self.cur.pos - 1);
                // `^[[:space:]]*IDENT\r*\z`, on a line at least as long as the anchor as
                // written (`-` included).
                let trimmed = line
                    .trim_start_matches([' ', '\t', '\n', '\u{b}', '\u{c}', '\r'])
                    .trim_end_matches('\r');
                if line.len() >= anchor.len() && trimmed == ident {
                    return Ok(());
                }
                line_start = self.cur.pos;
            }
            if c == EOF {
                return Err(self.cur.error("heredoc not terminated"));
            }
        }
    }
}

struct HclParser<'a> {
    sc: HclScanner<'a>,
    tok: Token,
    /// One token pushed back (`unscan`).
    pushed: bool,
    /// How many `{` and `[` are open.
    depth: usize,
}

impl HclParser<'_> {
    fn scan(&mut self) -> Result<Token, SyntaxError> {
        if self.pushed {
            self.pushed = false;
        } else {
            self.tok = self.sc.scan()?;
        }
        Ok(self.tok.clone())
    }

    fn unscan(&mut self) {
        self.pushed = true;
    }

    fn error(&self, line: usize, message: String) -> Stop {
        Stop::Error(SyntaxError {
            line,
            message,
            too_deep: false,
        })
    }

    fn object_list(&mut self, in_object: bool) -> Result<Vec<Item>, Stop> {
        let mut items = Vec::new();
        self.object_list_each(in_object, &mut |item| items.push(item))?;
        Ok(items)
    }

    /// The items of an object list, each given to `sink` as soon as it is read.
    fn object_list_each(
        &mut self,
        in_object: bool,
        sink: &mut dyn FnMut(Item),
    ) -> Result<(), Stop> {
        loop {
            if in_object {
                let t = self.scan()?;
                self.unscan();
                if t.kind == Kind::RBrace {
                    break;
                }
            }
            match self.object_item() {
                Ok(item) => sink(item),
                Err(Stop::Eof) => break,
                Err(e) => return Err(e),
            }
            // Items may be separated by commas.
            if self.scan()?.kind != Kind::Comma {
                self.unscan();
            }
        }
        Ok(())
    }

    fn object_item(&mut self) -> Result<Item, Stop> {
        let (keys, end) = self.object_key()?;
        let val = match end {
            Kind::Assign => self.object()?,
            Kind::LBrace => self.object_type()?,
            _ => {
                let names: Vec<&str> = keys.iter().map(|k| k.text.as_str()).collect();
                return Err(self.error(
                    self.tok.line,
                    format!(
                        "key '{}' expected start of object ('{{') or assignment ('=')",
                        names.join(" ")
                    ),
                ));
            }
        };
        Ok(Item { keys, val })
    }

    /// The keys of an item and the token that ended them (`=` or `{`; `Eof` when the text ended
    /// after at least one key, which the caller reports).
    fn object_key(&mut self) -> Result<(Vec<Token>, Kind), Stop> {
        let mut keys = Vec::new();
        loop {
            let t = self.scan()?;
            match t.kind {
                Kind::Eof if keys.is_empty() => return Err(Stop::Eof),
                Kind::Eof => return Ok((keys, Kind::Eof)),
                Kind::Assign if keys.len() > 1 => {
                    return Err(
                        self.error(t.line, "nested object expected: LBRACE got: ASSIGN".into())
                    )
                }
                Kind::Assign if keys.is_empty() => {
                    return Err(self.error(t.line, "no object keys found!".into()))
                }
                Kind::LBrace if keys.is_empty() => {
                    return Err(self.error(t.line, "expected: IDENT | STRING got: LBRACE".into()))
                }
                Kind::Assign | Kind::LBrace => return Ok((keys, t.kind)),
                Kind::Ident | Kind::String => keys.push(t),
                _ => {
                    return Err(self.error(
                        t.line,
                        format!(
                            "expected: IDENT | STRING | ASSIGN | LBRACE got: {}",
                            describe(&t)
                        ),
                    ))
                }
            }
        }
    }

    fn object(&mut self) -> Result<Node, Stop> {
        let t = self.scan()?;
        match t.kind {
            Kind::Number | Kind::Float | Kind::Bool | Kind::String | Kind::Heredoc => {
                Ok(Node::Literal(t))
            }
            Kind::LBrace => self.object_type(),
            Kind::LBrack => self.list_type(),
            Kind::Eof => Err(Stop::Eof),
            _ => Err(self.error(t.line, format!("unknown token: {}", describe(&t)))),
        }
    }

    /// `f`, one level deeper: refused past [`MAX_DEPTH`], at the line of the bracket just read.
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Result<Node, Stop>) -> Result<Node, Stop> {
        if self.depth == MAX_DEPTH {
            return Err(Stop::Error(SyntaxError::too_deep(self.tok.line)));
        }
        self.depth += 1;
        let node = f(self);
        self.depth -= 1;
        node
    }

    fn object_type(&mut self) -> Result<Node, Stop> {
        self.nested(Self::object_body)
    }

    fn object_body(&mut self) -> Result<Node, Stop> {
        let items = self.object_list(true)?;
        let t = self.scan()?;
        if t.kind != Kind::RBrace {
            return Err(self.error(
                t.line,
                format!("object expected closing RBRACE got: {}", describe(&t)),
            ));
        }
        Ok(Node::Object(items))
    }

    fn list_type(&mut self) -> Result<Node, Stop> {
        self.nested(Self::list_body)
    }

    fn list_body(&mut self) -> Result<Node, Stop> {
        let mut list = Vec::new();
        let mut need_comma = false;
        loop {
            let t = self.scan()?;
            if need_comma && !matches!(t.kind, Kind::Comma | Kind::RBrack) {
                return Err(self.error(
                    t.line,
                    format!(
                        "error parsing list, expected comma or list end, got: {}",
                        describe(&t)
                    ),
                ));
            }
            match t.kind {
                Kind::Bool | Kind::Number | Kind::Float | Kind::String | Kind::Heredoc => {
                    list.push(Node::Literal(t));
                    need_comma = true;
                }
                Kind::Comma => need_comma = false,
                Kind::LBrace => {
                    list.push(self.object_type()?);
                    need_comma = true;
                }
                // Upstream does not ask for a comma after a nested list.
                Kind::LBrack => list.push(self.list_type()?),
                Kind::RBrack => return Ok(Node::List(list)),
                _ => {
                    return Err(self.error(
                        t.line,
                        format!("unexpected token while parsing list: {}", describe(&t)),
                    ))
                }
            }
        }
    }
}

fn describe(t: &Token) -> String {
    match t.kind {
        Kind::Eof => "EOF".into(),
        _ => format!("`{}`", t.text.chars().take(40).collect::<String>()),
    }
}

/// Parse HCL 1 text into its top-level items, as `ParseDontErrorOnDuplicateKeys`.
#[cfg(test)]
pub(super) fn parse_hcl(text: &str) -> Result<Vec<Item>, SyntaxError> {
    let mut items = Vec::new();
    let whole = parse_hcl_each(text, &mut |item| items.push(item))?;
    Ok(if whole { items } else { Vec::new() })
}

/// [`parse_hcl`], giving each top-level item to `sink` as soon as it is read, so that a large
/// policy is never held as a whole tree (33,334 rules: 20 MB). `Ok(false)`: the text reads as
/// no item at all, whatever `sink` was given; an error comes after the items before it.
pub(super) fn parse_hcl_each(text: &str, sink: &mut dyn FnMut(Item)) -> Result<bool, SyntaxError> {
    // Copied only when there is something to replace.
    let text = if text.contains("\r\n") {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    let mut p = HclParser {
        sc: HclScanner {
            cur: Cursor::new(&text),
        },
        tok: Token {
            kind: Kind::Eof,
            text: String::new(),
            json: false,
            line: 1,
        },
        pushed: false,
        depth: 0,
    };
    match p.object_list_each(false, sink) {
        Ok(()) => Ok(true),
        Err(Stop::Eof) => Ok(false),
        Err(Stop::Error(e)) => Err(e),
    }
}

// ---- JSON -----------------------------------------------------------------------------------

struct JsonParser<'a> {
    cur: Cursor<'a>,
    tok: Token,
    /// How many `{` and `[` are open.
    depth: usize,
}

impl JsonParser<'_> {
    fn scan(&mut self) -> Result<Token, SyntaxError> {
        let ch = self.cur.skip_whitespace()?;
        let start = self.cur.pos.saturating_sub(usize::from(ch != EOF));
        let line = self.cur.line - usize::from(ch == '\n');
        let kind = if is_letter(ch) {
            let s = self.cur.pos - 1;
            let mut c = self.cur.next()?;
            while is_letter(c) || is_digit(c) || c == '-' {
                c = self.cur.next()?;
            }
            if c != EOF {
                self.cur.unread();
            }
            match self.cur.text(s).as_str() {
                "true" | "false" => Kind::Bool,
                "null" => Kind::Null,
                _ => return Err(self.cur.error("illegal char")),
            }
        } else if ch.is_ascii_digit() {
            self.scan_number(ch)?
        } else {
            match ch {
                EOF => Kind::Eof,
                '"' => {
                    self.cur.scan_string(false)?;
                    Kind::String
                }
                '.' => self.cur.scan_period()?,
                '[' => Kind::LBrack,
                ']' => Kind::RBrack,
                '{' => Kind::LBrace,
                '}' => Kind::RBrace,
                ',' => Kind::Comma,
                ':' => Kind::Colon,
                '-' if self.cur.peek().is_ascii_digit() => {
                    let c = self.cur.next()?;
                    self.scan_number(c)?
                }
                _ => return Err(self.cur.error("illegal char")),
            }
        };
        self.tok = Token {
            kind,
            text: self.cur.text(start),
            json: true,
            line,
        };
        Ok(self.tok.clone())
    }

    fn scan_number(&mut self, ch: char) -> Result<Kind, SyntaxError> {
        let start = self.cur.pos;
        let kind = self.cur.scan_decimal(ch)?;
        if kind == Kind::Number && ch == '0' && self.cur.pos != start {
            return Err(self.cur.error("numbers cannot start with 0"));
        }
        Ok(kind)
    }

    fn error(&self, message: String) -> Stop {
        Stop::Error(SyntaxError {
            line: self.tok.line,
            message,
            too_deep: false,
        })
    }

    /// The items of an object and the error that ended it early, if any (the caller forgives it
    /// when the current token is `}`).
    fn object_list(&mut self) -> Result<(Vec<Item>, Option<Stop>), SyntaxError> {
        let mut items = Vec::new();
        loop {
            match self.object_item() {
                Ok(item) => items.push(item),
                Err(Stop::Eof) => break,
                Err(e) => return Ok((items, Some(e))),
            }
            // Anything but a comma ends the object, whatever it is.
            if self.scan()?.kind != Kind::Comma {
                break;
            }
        }
        Ok((items, None))
    }

    fn object_item(&mut self) -> Result<Item, Stop> {
        let mut keys = Vec::new();
        loop {
            let t = self.scan()?;
            match t.kind {
                Kind::Eof => return Err(Stop::Eof),
                Kind::String => keys.push(t),
                Kind::Colon if keys.is_empty() => {
                    return Err(self.error("expected: STRING got: COLON".into()))
                }
                Kind::Colon => break,
                _ => return Err(self.error(format!("expected: STRING got: {}", describe(&t)))),
            }
        }
        let t = self.scan()?;
        let val = match t.kind {
            Kind::Number | Kind::Float | Kind::Bool | Kind::String => Node::Literal(t),
            // HCL reads `null` as an empty string (`HCLToken`).
            Kind::Null => Node::Literal(Token {
                kind: Kind::String,
                text: String::new(),
                ..t
            }),
            Kind::LBrace => self.object_type()?,
            Kind::LBrack => self.list_type()?,
            Kind::Eof => return Err(Stop::Eof),
            _ => {
                return Err(self.error(format!(
                    "expected object value, got unknown token: {}",
                    describe(&t)
                )))
            }
        };
        Ok(Item { keys, val })
    }

    /// `f`, one level deeper: refused past [`MAX_DEPTH`], at the line of the bracket just read.
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Result<Node, Stop>) -> Result<Node, Stop> {
        if self.depth == MAX_DEPTH {
            return Err(Stop::Error(SyntaxError::too_deep(self.tok.line)));
        }
        self.depth += 1;
        let node = f(self);
        self.depth -= 1;
        node
    }

    fn object_type(&mut self) -> Result<Node, Stop> {
        self.nested(Self::object_body)
    }

    fn object_body(&mut self) -> Result<Node, Stop> {
        let (items, err) = self.object_list()?;
        match err {
            // Nesting too deep is never forgiven, whatever token it stopped at.
            Some(Stop::Error(e)) if e.too_deep => Err(Stop::Error(e)),
            Some(e) if self.tok.kind != Kind::RBrace => Err(e),
            _ => Ok(Node::Object(items)),
        }
    }

    fn list_type(&mut self) -> Result<Node, Stop> {
        self.nested(Self::list_body)
    }

    fn list_body(&mut self) -> Result<Node, Stop> {
        let mut list = Vec::new();
        loop {
            let t = self.scan()?;
            match t.kind {
                Kind::Number | Kind::Float | Kind::String => list.push(Node::Literal(t)),
                Kind::Comma => {}
                Kind::LBrace => list.push(self.object_type()?),
                // Upstream skips booleans and the bracket of a nested list.
                Kind::Bool | Kind::LBrack => {}
                Kind::RBrack => return Ok(Node::List(list)),
                _ => {
                    return Err(self.error(format!(
                        "unexpected token while parsing list: {}",
                        describe(&t)
                    )))
                }
            }
        }
    }
}

/// Parse a policy written as JSON with HCL 1's JSON reader, flattened as it flattens it.
pub(super) fn parse_json(text: &str) -> Result<Vec<Item>, SyntaxError> {
    let mut p = JsonParser {
        cur: Cursor::new(text),
        tok: Token {
            kind: Kind::Eof,
            text: String::new(),
            json: true,
            line: 1,
        },
        depth: 0,
    };
    let t = p.scan()?;
    let root = match t.kind {
        Kind::LBrace => p.object_type(),
        _ => Err(p.error(format!("expected object, got: {}", describe(&t)))),
    };
    match root {
        Ok(Node::Object(mut items)) => {
            flatten_list(&mut items);
            Ok(items)
        }
        Ok(_) | Err(Stop::Eof) => Err(SyntaxError {
            line: 1,
            message: "expected a JSON object".into(),
            too_deep: false,
        }),
        Err(Stop::Error(e)) => Err(e),
    }
}

/// `flatten.go`: an item whose value is an object of objects becomes one item per inner object
/// (keys joined), one whose value is a list of objects one item per object; recursively, then
/// in every nested object.
fn flatten_list(items: &mut Vec<Item>) {
    let mut out = Vec::with_capacity(items.len());
    for item in items.drain(..) {
        flatten_item(item, &mut out);
    }
    for item in &mut out {
        flatten_node(&mut item.val);
    }
    *items = out;
}

fn flatten_item(item: Item, out: &mut Vec<Item>) {
    match item.val {
        Node::Object(inner)
            if !inner.is_empty() && inner.iter().all(|i| matches!(i.val, Node::Object(_))) =>
        {
            for sub in inner {
                let mut keys = item.keys.clone();
                keys.extend(sub.keys);
                flatten_item(Item { keys, val: sub.val }, out);
            }
        }
        Node::List(elems)
            if !elems.is_empty() && elems.iter().all(|e| matches!(e, Node::Object(_))) =>
        {
            for elem in elems {
                flatten_item(
                    Item {
                        keys: item.keys.clone(),
                        val: elem,
                    },
                    out,
                );
            }
        }
        val => out.push(Item {
            keys: item.keys,
            val,
        }),
    }
}

fn flatten_node(node: &mut Node) {
    match node {
        Node::Object(items) => flatten_list(items),
        Node::List(elems) => elems.iter_mut().for_each(flatten_node),
        Node::Literal(_) => {}
    }
}

// ---- values ---------------------------------------------------------------------------------

impl Token {
    /// The string a key, string or heredoc stands for (`Token.Value` upstream); numbers give
    /// their text, as the decoder reads them into strings.
    pub fn string_value(&self) -> Result<String, SyntaxError> {
        let bad = |what: &str| SyntaxError {
            line: self.line,
            message: format!(
                "cannot read {what} `{}`",
                self.text.chars().take(40).collect::<String>()
            ),
            too_deep: false,
        };
        match self.kind {
            Kind::Ident | Kind::Number => Ok(self.text.clone()),
            Kind::String if self.text.is_empty() => Ok(String::new()),
            Kind::String if self.json => go_unquote(&self.text).ok_or_else(|| bad("the string")),
            Kind::String => hcl_unquote(&self.text).ok_or_else(|| bad("the string")),
            Kind::Heredoc => unindent_heredoc(&self.text).ok_or_else(|| bad("the heredoc")),
            _ => Err(bad("as a string")),
        }
    }
}

/// `hcl/strconv.Unquote`: Go's escapes, with `${...}` copied as written.
fn hcl_unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('$') && !inner.contains('{') && inner.contains('\n') {
        return None;
    }
    let mut out = Vec::new();
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && b.get(i + 1) == Some(&b'{') {
            out.extend_from_slice(b"${");
            i += 2;
            let mut braces = 1;
            while i < b.len() && braces > 0 {
                match b[i] {
                    b'{' => braces += 1,
                    b'}' => braces -= 1,
                    _ => {}
                }
                out.push(b[i]);
                i += 1;
            }
            if braces != 0 {
                return None;
            }
            continue;
        }
        if b[i] == b'\n' {
            return None;
        }
        i = unquote_char(b, i, &mut out)?;
    }
    String::from_utf8(out).ok()
}

/// Go's `strconv.Unquote` of a double-quoted string (JSON strings in HCL 1).
fn go_unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\n') {
        return None;
    }
    let b = inner.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        i = unquote_char(b, i, &mut out)?;
    }
    String::from_utf8(out).ok()
}

/// One character of a Go double-quoted literal at `i`, appended to `out`; the next index.
fn unquote_char(b: &[u8], i: usize, out: &mut Vec<u8>) -> Option<usize> {
    match b[i] {
        b'"' => None,
        b'\\' => {
            let c = *b.get(i + 1)?;
            let rest = i + 2;
            let simple = |v: u8, out: &mut Vec<u8>| {
                out.push(v);
                Some(rest)
            };
            match c {
                b'a' => simple(7, out),
                b'b' => simple(8, out),
                b'f' => simple(12, out),
                b'n' => simple(b'\n', out),
                b'r' => simple(b'\r', out),
                b't' => simple(b'\t', out),
                b'v' => simple(11, out),
                b'\\' => simple(b'\\', out),
                b'"' => simple(b'"', out),
                b'x' | b'u' | b'U' => {
                    let n = match c {
                        b'x' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let hex = std::str::from_utf8(b.get(rest..rest + n)?).ok()?;
                    let v = u32::from_str_radix(hex, 16).ok()?;
                    if c == b'x' {
                        out.push(u8::try_from(v).ok()?);
                    } else {
                        let ch = char::from_u32(v)?;
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    Some(rest + n)
                }
                b'0'..=b'7' => {
                    let digits = b.get(i + 1..i + 4)?;
                    let mut v: u32 = 0;
                    for d in digits {
                        if !(b'0'..=b'7').contains(d) {
                            return None;
                        }
                        v = v * 8 + u32::from(d - b'0');
                    }
                    out.push(u8::try_from(v).ok()?);
                    Some(i + 4)
                }
                _ => None,
            }
        }
        _ => {
            // A whole UTF-8 character.
            let len = match b[i] {
                0x00..=0x7f => 1,
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                _ => 4,
            };
            out.extend_from_slice(b.get(i..i + len)?);
            Some(i + len)
        }
    }
}

/// `unindentHeredoc`: the text between the anchor line and the terminator; with `<<-`, the
/// terminator's indentation is removed from every line when all lines have it.
fn unindent_heredoc(heredoc: &str) -> Option<String> {
    let idx = heredoc.find('\n')?;
    let unindent = heredoc.as_bytes().get(2) == Some(&b'-');
    if !unindent {
        return heredoc
            .get(idx + 1..(heredoc.len() + 1).checked_sub(idx)?)
            .map(str::to_string);
    }
    let body = heredoc.get(idx + 1..(heredoc.len() + 2).checked_sub(idx)?)?;
    let lines: Vec<&str> = body.split('\n').collect();
    let prefix = *lines.last()?;
    if !lines.iter().all(|l| l.starts_with(prefix)) {
        let whole = heredoc.get(idx + 1..(heredoc.len() + 1).checked_sub(idx)?)?;
        return Some(whole.trim_end_matches([' ', '\t']).to_string());
    }
    let mut out: Vec<&str> = lines[..lines.len() - 1]
        .iter()
        .map(|l| l.strip_prefix(prefix).unwrap_or(l))
        .collect();
    out.push("");
    Some(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(item: &Item) -> Vec<String> {
        item.keys
            .iter()
            .map(|k| k.string_value().unwrap())
            .collect()
    }

    #[test]
    fn blocks_on_one_line_commas_and_labels() {
        let items = parse_hcl(
            r#"path "a" { capabilities = ["read"], } path "b" "c" { policy = "read" }, name = "x""#,
        )
        .unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(keys(&items[0]), ["path", "a"]);
        assert_eq!(keys(&items[1]), ["path", "b", "c"]);
        assert_eq!(keys(&items[2]), ["name"]);
    }

    #[test]
    fn what_upstream_rejects() {
        for text in [
            "path \"a\" = { capabilities = [] }",
            "path \"a\" { capabilities = ['read'] }",
            "path \"a\" { capabilities = [\"read\" }",
            "path \"a\" {",
            "path \"a\" { x = [\"a\" \"b\"] }",
            "path <<EOF\na\nEOF\n { }",
            "path \"a\" { x = \"unterminated }",
            "path \"a\" { x = 1 } }",
            "a = b",
            "/ comment",
            "/* open",
        ] {
            assert!(parse_hcl(text).is_err(), "{text}");
        }
    }

    #[test]
    fn what_upstream_accepts_that_looks_wrong() {
        // A dangling `key =` at the end of the text ends the file (errEofToken).
        assert_eq!(parse_hcl("path \"a\" {}\nname =").unwrap().len(), 1);
        // Nested lists need no comma after them.
        assert!(parse_hcl("x = [[\"a\"] [\"b\"]]").is_ok());
        // Comments of all three kinds.
        assert_eq!(
            parse_hcl("# a\n// b\n/* c */ path \"a\" {} /* d\n */")
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn string_values_and_heredocs() {
        let items = parse_hcl(
            "a = \"x\\ty\\u00e9${ \"q\" }\"\nb = <<EOF\nline\nEOF\nc = <<-EOT\n    one\n    two\n    EOT\nd = 0x1f\ne = 1.5e3",
        )
        .unwrap();
        let val = |i: usize| match &items[i].val {
            Node::Literal(t) => (t.kind, t.string_value().unwrap()),
            other => panic!("{other:?}"),
        };
        assert_eq!(val(0), (Kind::String, "x\tyé${ \"q\" }".into()));
        assert_eq!(val(1), (Kind::Heredoc, "line\n".into()));
        assert_eq!(val(2), (Kind::Heredoc, "one\ntwo\n".into()));
        assert_eq!(val(3), (Kind::Number, "0x1f".into()));
        assert!(matches!(&items[4].val, Node::Literal(t) if t.kind == Kind::Float));
    }

    /// An ASCII text is read from its bytes, any other from its decoded characters: both read
    /// the same (the same tree, the same errors on the same lines), heredocs and CRLF included.
    #[test]
    fn a_non_ascii_text_reads_as_an_ascii_one() {
        for text in [
            "path \"a\" { capabilities = [\"read\"], } path \"b\" \"c\" { policy = \"read\" }",
            "a = \"x\\ty\\u00e9\"\nb = <<EOF\nline\nEOF\nc = <<-EOT\n    one\n    EOT\nd = 0x1f\ne = 1.5e3",
            "a = <<EOF\r\nline\r\nEOF\r\nb = 1\r\n",
            "b = <<EOF\nline\n",
            "path \"a\" {\n capabilities = [\"read\" }",
            "path \"a\" { x = \"unterminated }",
            "x = 1 }",
            "path \"a\" {}\nname =",
            "/* open",
            "/ comment",
        ] {
            let wide = format!("/* é */ {text}");
            let ascii = format!("/* e */ {text}");
            assert_eq!(parse_hcl(&wide), parse_hcl(&ascii), "{text}");
            let value = serde_json::to_string(text).unwrap();
            for json in [
                format!("{{\"é\": 1, \"path\": {{\"a\": {{\"x\": [{value}, 2]}}}}}}"),
                format!("{{\"é\": [{value}, {{\"b\": tru"),
            ] {
                assert_eq!(
                    format!("{:?}", parse_json(&json)).replace('é', "e"),
                    format!("{:?}", parse_json(&json.replace('é', "e"))),
                    "{json}"
                );
            }
        }
        // A non-ASCII character in a token is kept whole.
        let items = parse_hcl("path \"sécret/*\" {}").unwrap();
        assert_eq!(keys(&items[0]), ["path", "sécret/*"]);
    }

    /// Each top-level item goes to the sink as soon as it is read: the rules before an error
    /// at the end of the text have been given when the error comes.
    #[test]
    fn top_level_items_are_given_as_they_are_read() {
        let mut seen = Vec::new();
        let e = parse_hcl_each(
            "path \"a\" { x = 1 }\npath \"b\" {}\npath \"c\" {",
            &mut |item| seen.push(keys(&item)),
        )
        .unwrap_err();
        assert_eq!(seen, [["path", "a"], ["path", "b"]]);
        assert_eq!(e.line, 3, "{e}");
        let mut n = 0;
        assert!(parse_hcl_each("a = 1, b { }", &mut |_| n += 1).unwrap());
        assert_eq!(n, 2);
    }

    #[test]
    fn json_is_read_leniently_and_flattened() {
        // Unterminated, a boolean in a list (dropped), text after the object.
        let items = parse_json(r#"{"path": {"a": {"capabilities": [true, "read"]"#).unwrap();
        assert_eq!(keys(&items[0]), ["path", "a"]);
        let Node::Object(body) = &items[0].val else {
            panic!()
        };
        let Node::List(caps) = &body[0].val else {
            panic!()
        };
        assert_eq!(caps.len(), 1);
        assert!(parse_json(r#"{"path": {}} garbage [[["#).is_ok());
        // Objects of objects become one item each, lists of objects too.
        let items = parse_json(
            r#"{"path": [{"a": {"b": {"policy": "read"}}}, {"c": {"policy": "deny"}}]}"#,
        )
        .unwrap();
        let all: Vec<Vec<String>> = items.iter().map(keys).collect();
        assert_eq!(all, [vec!["path", "a", "b"], vec!["path", "c"]]);
        for bad in [r#"{"a": nul}"#, r#"{"a": "\/"}"#, r#"{"a": 01}"#, "[1]"] {
            assert!(parse_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn go_and_hcl_unquoting() {
        assert_eq!(go_unquote(r#""a\u00e9\x41\101""#).unwrap(), "aéAA");
        assert_eq!(go_unquote(r#""a\'""#), None);
        assert_eq!(hcl_unquote("\"a\nb\""), None);
        assert_eq!(hcl_unquote("\"${a\n}\"").unwrap(), "${a\n}");
    }

    /// `open` `n` times, then `inner`, then `close` `n` times.
    fn nested(open: &str, inner: &str, close: &str, n: usize) -> String {
        format!("{}{inner}{}", open.repeat(n), close.repeat(n))
    }

    /// 10,000 levels of every nesting each grammar allows, closed or not: refused with the
    /// limit and the line of the first bracket too deep, on a test thread's 2 MiB stack (the
    /// parsers recurse once per level, so without a limit the stack overflows and the process
    /// aborts).
    #[test]
    fn nesting_deeper_than_the_limit_is_refused_not_a_stack_overflow() {
        const N: usize = 10_000;
        let too_deep = |e: SyntaxError, line: usize, what: &str| {
            assert_eq!(
                e.to_string(),
                format!("line {line}: nests deeper than 64 levels"),
                "{what}"
            );
        };
        for (what, text, line) in [
            // A level a line, after one line of rule: level 65 is on line 66.
            ("blocks", nested("x {\n", "", "}\n", N), 66),
            ("objects", nested("x = {\n", "", "}\n", N), 66),
            ("lists", format!("x = {}", nested("[\n", "1", "]\n", N)), 66),
            ("blocks left open", "x {\n".repeat(N), 66),
            ("lists left open", format!("x = {}", "[\n".repeat(N)), 66),
            // Two levels a line: level 65 opens line 34.
            ("lists of objects", nested("x = [{\n", "", "}]\n", N), 34),
        ] {
            let text = format!("path \"a\" {{ capabilities = [\"read\"] }}\n{text}");
            too_deep(parse_hcl(&text).unwrap_err(), line, what);
        }
        for (what, text, line) in [
            ("objects", nested("{\"x\":\n", "1", "}\n", N), 65),
            ("objects left open", "{\"x\":\n".repeat(N), 65),
            (
                "lists of objects",
                nested("{\"x\": [\n", "1", "]}\n", N),
                33,
            ),
        ] {
            too_deep(parse_json(&text).unwrap_err(), line, what);
        }
    }

    /// Nesting up to the limit is read; one more level is refused.
    #[test]
    fn nesting_to_the_limit_is_read() {
        let lists = |n| format!("x = {}", nested("[", "1", "]", n));
        assert!(parse_hcl(&lists(MAX_DEPTH)).is_ok());
        assert!(parse_hcl(&lists(MAX_DEPTH + 1)).unwrap_err().too_deep);
        let objects = |n| nested("{\"x\": ", "1", "}", n);
        assert_eq!(parse_json(&objects(MAX_DEPTH)).unwrap().len(), 1);
        assert!(parse_json(&objects(MAX_DEPTH + 1)).unwrap_err().too_deep);
    }

    /// HCL 1's JSON reader skips the bracket of a nested list, so nested lists do not recurse:
    /// 10,000 of them read as one list of the innermost values, as OpenBao reads them.
    #[test]
    fn json_lists_nested_10000_deep_read_as_one_list() {
        let lists = nested("[", "\"v\", \"w\"", "]", 10_000);
        let items = parse_json(&format!("{{\"x\": {lists}}}")).unwrap();
        let Node::List(values) = &items[0].val else {
            panic!("{:?}", items[0].val)
        };
        assert_eq!(values.len(), 2);
    }
}
