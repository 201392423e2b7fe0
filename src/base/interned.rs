//! One shared copy of each text that many records repeat (a platform's Secrets use a few key
//! and field names thousands of times over).

use std::collections::HashSet;
use std::sync::Arc;

/// Hands out one `Arc<str>` per distinct text.
#[derive(Debug, Default)]
pub struct Interner(HashSet<Arc<str>>);

impl Interner {
    /// The shared copy of `text`, made on its first use.
    pub fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(text) {
            return Arc::clone(shared);
        }
        let shared: Arc<str> = Arc::from(text);
        self.0.insert(Arc::clone(&shared));
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_shared_and_another_is_not() {
        let mut names = Interner::default();
        let a = names.get("password");
        let b = names.get("password");
        let c = names.get("value");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!((&*a, &*c), ("password", "value"));
    }
}
