//! Every secret the run holds, removed from text that came from outside before it is shown.
//!
//! A Vault (or a proxy in front of it) may echo the token or a request body in its `errors`;
//! vault-seed shows that text on stderr and in the JSON `detail`. So each secret is
//! [`register`]ed where it is born (the token when it is read, every generated value, every value
//! read from Vault or typed by a person), and [`redact`] replaces each one, and its JSON-escaped
//! spelling (what an echoed request body holds), with `[redacted]`, makes control characters
//! visible, and caps the length of what is shown.
//!
//! Values are held as [`SecretString`] (zeroized on drop), bucketed by a 12-bit hash of their
//! first four bytes, so memory is what the run holds and redacting a text checks only the
//! values that could start at each position. Values shorter than [`MIN_LEN`] are not held: they
//! would match ordinary words and carry too little to matter.

use std::sync::Mutex;

use secrecy::{ExposeSecret, SecretString};

/// Values shorter than this (in bytes) are not redacted.
pub const MIN_LEN: usize = 4;

/// At most this many characters of outside text are shown; the rest is counted, not shown.
pub const MAX_SHOWN: usize = 400;

/// What a secret is replaced with.
pub const MARK: &str = "[redacted]";

const BUCKETS: usize = 1 << 12;

struct Registry {
    buckets: Vec<Vec<SecretString>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn bucket(prefix: &[u8]) -> usize {
    // FNV-1a over the first four bytes, folded to 12 bits.
    let mut h: u32 = 0x811c_9dc5;
    for b in &prefix[..MIN_LEN] {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    ((h >> 12) ^ h) as usize & (BUCKETS - 1)
}

fn insert(reg: &mut Registry, value: &str) {
    if value.len() < MIN_LEN {
        return;
    }
    let list = &mut reg.buckets[bucket(value.as_bytes())];
    if list.iter().any(|v| v.expose_secret() == value) {
        return;
    }
    list.push(SecretString::from(value.to_string()));
    // Longest first, so a value that contains another is removed whole.
    list.sort_by_key(|v| std::cmp::Reverse(v.expose_secret().len()));
}

/// Hold a secret for the rest of the run, so that [`redact`] removes it from outside text.
pub fn register(value: &SecretString) {
    let value = value.expose_secret();
    if value.len() < MIN_LEN {
        return;
    }
    // The JSON-escaped spelling, as an echoed request body holds it (a password may have `"`
    // or `\`); only kept when it differs.
    let escaped = zeroize::Zeroizing::new(serde_json::to_string(value).unwrap_or_default());
    let escaped = escaped
        .strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .filter(|e| *e != value);
    let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let reg = guard.get_or_insert_with(|| Registry {
        buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
    });
    insert(reg, value);
    if let Some(e) = escaped {
        insert(reg, e);
    }
}

/// `text` with every registered secret replaced by `[redacted]`, control characters shown as
/// escapes, and at most [`MAX_SHOWN`] characters kept (the rest is counted).
pub fn redact(text: &str) -> String {
    let guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let reg = guard.as_ref();
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut shown = 0;
    let mut i = 0;
    while i < bytes.len() {
        if shown >= MAX_SHOWN {
            let rest = text[i..].chars().count();
            out.push_str(&format!("… ({rest} more characters)"));
            break;
        }
        if let Some(reg) = reg {
            if bytes.len() - i >= MIN_LEN {
                let hit = reg.buckets[bucket(&bytes[i..])]
                    .iter()
                    .map(|v| v.expose_secret().as_bytes())
                    .find(|v| bytes[i..].starts_with(v));
                if let Some(v) = hit {
                    out.push_str(MARK);
                    shown += MARK.len();
                    i += v.len();
                    continue;
                }
            }
        }
        // `i` is always on a character boundary: it moves by whole characters or whole values.
        let c = text[i..].chars().next().unwrap_or('\u{fffd}');
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        shown += 1;
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> SecretString {
        SecretString::from(s.to_string())
    }

    #[test]
    fn registered_values_are_removed_wherever_they_appear() {
        register(&secret("hvs.redact-test-token-7f3a"));
        register(&secret("redact-value-\"quoted\"\\slash"));
        let text = "invalid token hvs.redact-test-token-7f3a: body {\"data\":{\"p\":\"redact-value-\\\"quoted\\\"\\\\slash\"}}";
        let shown = redact(text);
        assert!(!shown.contains("redact-test-token"), "{shown}");
        assert!(!shown.contains("redact-value"), "{shown}");
        assert_eq!(
            shown,
            "invalid token [redacted]: body {\"data\":{\"p\":\"[redacted]\"}}"
        );
        // Raw, too (a server that decoded the body before echoing it).
        assert_eq!(
            redact("x redact-value-\"quoted\"\\slash y"),
            "x [redacted] y"
        );
    }

    #[test]
    fn a_value_containing_another_is_removed_whole() {
        register(&secret("nest-abcd"));
        register(&secret("nest-abcd-longer-value"));
        assert_eq!(redact("a nest-abcd-longer-value b"), "a [redacted] b");
        assert_eq!(redact("a nest-abcd b"), "a [redacted] b");
    }

    #[test]
    fn short_values_are_not_held_and_text_is_cleaned_and_capped() {
        register(&secret("ab"));
        assert_eq!(redact("ab cd"), "ab cd");
        assert_eq!(
            redact("a\u{1b}]0;title\u{7}b\n"),
            "a\\u{1b}]0;title\\u{7}b\\n"
        );
        let long = "x".repeat(10 * MAX_SHOWN);
        let shown = redact(&long);
        assert!(shown.starts_with(&"x".repeat(MAX_SHOWN)), "{shown}");
        assert!(shown.ends_with(&format!("… ({} more characters)", 9 * MAX_SHOWN)));
    }

    #[test]
    fn a_secret_past_the_cap_is_never_shown_in_part() {
        // Secrets are matched in the whole text before anything is cut.
        let v = "cap-test-".to_string() + &"z".repeat(2 * MAX_SHOWN);
        register(&secret(&v));
        let text = format!("{}{v}", "y".repeat(MAX_SHOWN - 3));
        let shown = redact(&text);
        assert!(!shown.contains("cap-test"), "{shown}");
        assert!(!shown.contains('z'), "{shown}");
    }
}
