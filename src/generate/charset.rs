//! Character classes of the `password` generator.

use std::fmt;

use rand::rngs::SysRng;
use rand::TryRng as _;
use zeroize::Zeroizing;

use super::RngError;

/// One class of characters a password may draw from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CharClass {
    /// `a`-`z`
    Lower,
    /// `A`-`Z`
    Upper,
    /// `0`-`9`
    Digit,
    /// Printable ASCII punctuation that is safe in shells, URLs' userinfo aside, and YAML:
    /// no quotes, backslash, backtick, `$` or space.
    Symbol,
}

const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGIT: &str = "0123456789";
const SYMBOL: &str = "!#%&()*+,-./:;<=>?@[]^_{|}~";

impl CharClass {
    /// All classes, in their canonical order.
    pub const ALL: [CharClass; 4] = [
        CharClass::Lower,
        CharClass::Upper,
        CharClass::Digit,
        CharClass::Symbol,
    ];

    /// The name used in specs (`lower`, `upper`, `digit`, `symbol`).
    pub fn name(self) -> &'static str {
        match self {
            CharClass::Lower => "lower",
            CharClass::Upper => "upper",
            CharClass::Digit => "digit",
            CharClass::Symbol => "symbol",
        }
    }

    /// Parse a class name as written in a spec.
    pub fn from_name(name: &str) -> Option<CharClass> {
        CharClass::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The characters of the class.
    pub fn chars(self) -> &'static str {
        match self {
            CharClass::Lower => LOWER,
            CharClass::Upper => UPPER,
            CharClass::Digit => DIGIT,
            CharClass::Symbol => SYMBOL,
        }
    }
}

/// A non-empty set of character classes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CharClasses(Vec<CharClass>);

impl Default for CharClasses {
    /// Letters and digits: safe to paste anywhere.
    fn default() -> Self {
        CharClasses(vec![CharClass::Lower, CharClass::Upper, CharClass::Digit])
    }
}

impl CharClasses {
    /// A set from the given classes (sorted, deduplicated); `None` when empty.
    pub fn new(mut classes: Vec<CharClass>) -> Option<Self> {
        classes.sort();
        classes.dedup();
        (!classes.is_empty()).then_some(CharClasses(classes))
    }

    /// The classes in the set.
    pub fn classes(&self) -> &[CharClass] {
        &self.0
    }

    /// Whether `c` belongs to one of the classes.
    pub fn contains(&self, c: char) -> bool {
        self.0.iter().any(|class| class.chars().contains(c))
    }

    fn alphabet(&self) -> Vec<u8> {
        self.0.iter().flat_map(|c| c.chars().bytes()).collect()
    }

    /// A password of `length` characters, uniform over the passwords that contain at least one
    /// character of each class (rejection sampling, so no class is favoured).
    pub(super) fn password(&self, length: usize) -> Result<String, RngError> {
        let alphabet = self.alphabet();
        // Rejection sampling on single bytes: accept b < limit, a multiple of the alphabet size,
        // so that every character is equally likely.
        let limit = 256 - (256 % alphabet.len());
        loop {
            let mut out = Zeroizing::new(Vec::with_capacity(length));
            while out.len() < length {
                let mut chunk = Zeroizing::new(vec![0u8; (length - out.len()) * 2 + 8]);
                SysRng
                    .try_fill_bytes(&mut chunk)
                    .map_err(|e| RngError::Failed(e.to_string()))?;
                for &b in chunk.iter() {
                    if (b as usize) < limit && out.len() < length {
                        out.push(alphabet[b as usize % alphabet.len()]);
                    }
                }
            }
            let every_class = self
                .0
                .iter()
                .all(|class| out.iter().any(|&b| class.chars().as_bytes().contains(&b)));
            if every_class || length < self.0.len() {
                // The alphabet is ASCII, so the bytes are valid UTF-8.
                return Ok(String::from_utf8(out.to_vec()).unwrap_or_default());
            }
        }
    }
}

impl fmt::Display for CharClasses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|c| c.name()).collect();
        f.write_str(&names.join(","))
    }
}
