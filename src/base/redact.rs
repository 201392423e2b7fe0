//! Every secret the run holds, removed from text that came from outside before it is shown.
//!
//! A Vault (or a proxy in front of it) may echo the token or a request body in its `errors`;
//! vault-seed shows that text on stderr and in the JSON `detail`. So each secret is
//! [`register`]ed where it is born (the token when it is read, every generated value, every value
//! read from Vault or typed by a person), and [`redact`] replaces each one, and its JSON-escaped
//! spelling (what an echoed request body holds), with `[redacted]`, makes control characters
//! and bidirectional controls visible, and caps the length of what is shown.
//!
//! Values are not held: each is kept as its length and a 64-bit fingerprint (SipHash-1-3 under
//! this run's random key, the key std's `HashMap` takes from the OS), bucketed by a 12-bit hash of
//! its first four bytes. Redacting a text fingerprints, at each position, the bytes of each length
//! registered in that position's bucket and looks the fingerprint up. So a secret read from Vault
//! lives in memory only as long as its use needs, and the registry is 16 bytes a value: holding
//! the values themselves was 4.8 MB at 100,000 paths, the largest part of `verify` after the
//! targets. Two different texts with the same length and fingerprint (about one chance in 2^64 a
//! comparison) would make harmless text `[redacted]`, never the reverse. Values shorter than
//! [`MIN_LEN`] are not held: they would match ordinary words and carry too little to matter.
//!
//! A token this run never held (ESO's, quoted in an event) is found by its shape instead
//! ([`tokens`], [`next_token`]): Vault's prefixes and lengths, exact enough that words such as
//! `s.t` stay.

use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;

use secrecy::{ExposeSecret, SecretString};

use crate::base::text::push_token_mark;
pub use crate::base::text::{next_token, tokens};

/// Values shorter than this (in bytes) are not redacted.
pub const MIN_LEN: usize = 4;

/// At most this many characters of outside text are shown; the rest is counted, not shown (the
/// one cap of [`crate::base::text`]).
pub const MAX_SHOWN: usize = crate::base::text::MAX_CHARS;

/// What a secret is replaced with.
pub const MARK: &str = crate::base::text::REDACTED;

const BUCKETS: usize = 1 << 12;

/// A registered value: its length and fingerprint. Sorted longest first in its bucket, so a value
/// that contains another is removed whole, and by fingerprint within a length, for the look-up.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    len: std::cmp::Reverse<usize>,
    print: u64,
}

struct Bucket {
    held: Vec<Held>,
    /// How many of `held`, from the start, are sorted and without duplicates: new values are
    /// pushed after them and the whole is sorted when it has grown enough, or before a look-up
    /// (sorting at every registration was quadratic when many values share their first bytes).
    sorted: usize,
}

impl Bucket {
    fn settle(&mut self) {
        if self.sorted < self.held.len() {
            self.held.sort_unstable();
            self.held.dedup();
            self.sorted = self.held.len();
        }
    }
}

struct Registry {
    key: RandomState,
    buckets: Vec<Bucket>,
}

impl Registry {
    fn print(&self, bytes: &[u8]) -> u64 {
        self.key.hash_one(bytes)
    }
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
    let held = Held {
        len: std::cmp::Reverse(value.len()),
        print: reg.print(value.as_bytes()),
    };
    let b = &mut reg.buckets[bucket(value.as_bytes())];
    if b.held[..b.sorted].binary_search(&held).is_ok() {
        return;
    }
    b.held.push(held);
    // Sorted again once the unsorted tail is as long as the sorted part: amortised, and the same
    // value registered again and again (a value read on each poll) is not held twice for long.
    if b.held.len() - b.sorted > b.sorted.max(8) {
        b.settle();
    }
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
        key: RandomState::new(),
        buckets: (0..BUCKETS)
            .map(|_| Bucket {
                held: Vec::new(),
                sorted: 0,
            })
            .collect(),
    });
    insert(reg, value);
    if let Some(e) = escaped {
        insert(reg, e);
    }
}

/// The length of the longest registered value `rest` starts with (at least [`MIN_LEN`] bytes).
fn held_at(reg: &Registry, rest: &str) -> Option<usize> {
    let bytes = rest.as_bytes();
    let held = &reg.buckets[bucket(bytes)].held;
    // Each length once, longest first: its fingerprint, then that length's run of fingerprints.
    let mut i = 0;
    while i < held.len() {
        let len = held[i].len.0;
        let run = held[i..].partition_point(|h| h.len.0 == len);
        // A value is text: it ends on a character boundary (which also keeps the caller's cut on
        // one, even if two fingerprints ever collided).
        if rest.is_char_boundary(len) {
            let print = reg.print(&bytes[..len]);
            if held[i..i + run]
                .binary_search_by(|h| h.print.cmp(&print))
                .is_ok()
            {
                return Some(len);
            }
        }
        i += run;
    }
    None
}

/// `text` with every registered secret replaced by `[redacted]`, anything shaped like a Vault
/// token by its prefix and `[redacted]`, control characters and
/// bidirectional controls shown as escapes, and at most [`MAX_SHOWN`] characters kept (the rest is counted).
pub fn redact(text: &str) -> String {
    let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(reg) = guard.as_mut() {
        reg.buckets.iter_mut().for_each(Bucket::settle);
    }
    let reg = guard.as_ref();
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut shown = 0;
    let mut i = 0;
    let mut token = next_token(text, 0);
    while i < bytes.len() {
        if shown >= MAX_SHOWN {
            let rest = text[i..].chars().count();
            out.push_str(&format!("… ({rest} more characters)"));
            break;
        }
        if let Some(reg) = reg {
            if bytes.len() - i >= MIN_LEN {
                if let Some(len) = held_at(reg, &text[i..]) {
                    out.push_str(MARK);
                    shown += MARK.len();
                    i += len;
                    continue;
                }
            }
        }
        // Registered values first: one may hold something token-shaped, and must go whole.
        if token.is_some_and(|(start, _)| start < i) {
            token = next_token(text, i);
        }
        if let Some((start, end)) = token.filter(|&(start, _)| start == i) {
            let before = out.len();
            push_token_mark(&mut out, &text[start..end]);
            shown += out.len() - before;
            i = end;
            continue;
        }
        // `i` is always on a character boundary: it moves by whole characters or whole values.
        let c = text[i..].chars().next().unwrap_or('\u{fffd}');
        if crate::base::text::is_hidden(c) {
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
    fn many_values_sharing_their_first_bytes_are_each_removed_even_registered_after_a_redaction() {
        // One bucket, many lengths and values: the look-up walks each length once.
        let values: Vec<String> = (0..3000)
            .map(|i| format!("pfx-share-{i}-{}", "q".repeat(i % 37)))
            .collect();
        for v in &values {
            register(&secret(v));
        }
        for v in values.iter().step_by(97) {
            assert_eq!(redact(&format!("<{v}>")), "<[redacted]>", "{v}");
        }
        // A prefix of a value that is not itself a value stays.
        assert_eq!(redact("<pfx-share-12>"), "<pfx-share-12>");
        register(&secret("pfx-share-late"));
        assert_eq!(redact("a pfx-share-late b"), "a [redacted] b");
    }

    #[test]
    fn a_value_registered_again_and_again_is_held_once_as_its_fingerprint() {
        let v = "held-once-".to_string() + &"w".repeat(47);
        let count = || {
            let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
            let reg = guard.as_mut().expect("registered");
            let print = reg.print(v.as_bytes());
            let b = &mut reg.buckets[bucket(v.as_bytes())];
            b.settle();
            b.held
                .iter()
                .filter(|h| h.len.0 == v.len() && h.print == print)
                .count()
        };
        register(&secret(&v));
        assert_eq!(count(), 1);
        for _ in 0..1000 {
            register(&secret(&v));
        }
        assert_eq!(count(), 1);
        assert_eq!(redact(&format!("x{v}y")), "x[redacted]y");
    }

    #[test]
    fn values_with_multibyte_characters_are_removed_on_character_boundaries() {
        register(&secret("mb-ключ-värde-🔑"));
        assert_eq!(redact("é mb-ключ-värde-🔑 é"), "é [redacted] é");
        assert_eq!(redact("é mb-ключ-värde é"), "é mb-ключ-värde é");
    }

    #[test]
    fn short_values_are_not_held_and_text_is_cleaned_and_capped() {
        register(&secret("ab"));
        assert_eq!(redact("ab cd"), "ab cd");
        assert_eq!(
            redact("a\u{1b}]0;title\u{7}b\n"),
            "a\\u{1b}]0;title\\u{7}b\\n"
        );
        // Bidirectional controls would reorder what the terminal shows: escaped like ESC.
        assert_eq!(
            redact("role \u{202e}nimda\u{2066}x\u{200f}\u{061c}"),
            "role \\u{202e}nimda\\u{2066}x\\u{200f}\\u{61c}"
        );
        let long = "x".repeat(10 * MAX_SHOWN);
        let shown = redact(&long);
        assert!(shown.starts_with(&"x".repeat(MAX_SHOWN)), "{shown}");
        assert!(shown.ends_with(&format!("… ({} more characters)", 9 * MAX_SHOWN)));
    }

    /// A service token's signed form, as OpenBao 2 mints it (base64url, 95 characters).
    const HVS: &str = "hvs.CAESIJlU8oQp3vW_kX-9x7Tq1bq2Yw3yZcFvJ6n8sWbK0mE1Gh4KHGh2cy5ZV0V3WkM0dE1UZ3pPRFF4T0RRd01qRQ";

    #[test]
    fn token_shapes_are_redacted_wherever_they_appear() {
        let legacy = "s.Xq3kP9vLm2Wn8Rt5Yb7Zc1Ad";
        assert_eq!(legacy.len(), 2 + crate::base::text::TOKEN_ID_LEN);
        let batch = format!("b.{}", "AAEC_-9z".repeat(10));
        let text = format!(
            "permission denied: token {HVS}; old \"{legacy}\", ns {legacy}.aB3dE, root hvs.Xq3kP9vLm2Wn8Rt5Yb7Zc1Ad, recovery r.Xq3kP9vLm2Wn8Rt5Yb7Zc1Ad, batch {batch}: hvb.{0} hvr.{0}",
            "Q".repeat(30)
        );
        assert_eq!(
            tokens(&text),
            "permission denied: token hvs.[redacted]; old \"s.[redacted]\", ns s.[redacted].aB3dE, root hvs.[redacted], recovery r.[redacted], batch b.[redacted]: hvb.[redacted] hvr.[redacted]"
        );
        let shown = redact(&text);
        for secret in [HVS, legacy, &batch[2..], "QQQQ"] {
            assert!(!shown.contains(&secret[2..]), "{shown}");
        }
        assert!(
            shown.starts_with("permission denied: token hvs.[redacted];"),
            "{shown}"
        );
    }

    #[test]
    fn words_shaped_almost_like_tokens_stay() {
        for text in [
            "s.t",
            "i.e. s.a. r.s.v.p.",
            "kubernetes.io/service-account-token",
            "secrets.example.com",
            // One character short or long, or with a `-` or `_`, is not a legacy id.
            "s.Xq3kP9vLm2Wn8Rt5Yb7Zc1A",
            "s.Xq3kP9vLm2Wn8Rt5Yb7Zc1AdE",
            "s.Xq3kP9vLm2Wn8Rt5Yb7Zc1A-",
            // Inside a longer word.
            "params.Xq3kP9vLm2Wn8Rt5Yb7Zc1Ad",
            "xhvs.QQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
            "hvs.short",
            "b.short-batch-looking-name",
        ] {
            assert_eq!(tokens(text), text);
        }
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
