//! "Did you mean ...?" for names people mistype: spec keys, secret names, generators.

/// The closest candidate within an edit distance of 2, or sharing its first four characters.
pub(crate) fn suggest<'a>(word: &str, candidates: &'a [String]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    // A prefix by characters, never by bytes: a byte index can fall inside a character.
    let prefix: String = lower.chars().take(4).collect();
    candidates
        .iter()
        .map(|c| (levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|(d, c)| {
            *d <= 2 || (prefix.chars().count() == 4 && c.to_lowercase().starts_with(&prefix))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_str())
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn close_names_are_suggested() {
        let c = names(&["description", "fixed", "fields"]);
        assert_eq!(suggest("descripton", &c), Some("description"));
        assert_eq!(suggest("descr", &c), Some("description"));
        assert_eq!(suggest("zzz", &c), None);
    }

    #[test]
    fn multi_byte_names_never_panic() {
        // Byte 4 of "aéé" falls inside the second `é`.
        let c = names(&["aéé-x", "hex32"]);
        assert_eq!(suggest("aéé", &c), Some("aéé-x"));
        assert_eq!(suggest("ééééé", &c), None);
    }
}
