//! Names in messages are written in backticks: one helper joins a list of them.

use std::fmt;

/// `a`, `b` as "`a`, `b`".
pub(crate) fn backticked<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_item_in_backticks_joined_by_a_comma() {
        assert_eq!(backticked(["a", "b c"]), "`a`, `b c`");
        assert_eq!(backticked(&["x".to_string()]), "`x`");
        assert_eq!(backticked(Vec::<String>::new()), "");
    }
}
