//! Kubernetes' name rules (k8s.io/apimachinery `pkg/util/validation/validation.go`), the one
//! place vault-seed checks them: the spec's names, and the names a cluster sends before they
//! go into a command a person may paste.

/// A DNS-1123 label (`IsDNS1123Label`): a namespace's name.
pub fn is_dns1123_label(n: &str) -> bool {
    n.len() <= 63 && is_dns1123(n) && !n.contains('.')
}

/// A DNS-1123 subdomain (`IsDNS1123Subdomain`): most objects' names.
pub fn is_dns1123_subdomain(n: &str) -> bool {
    n.len() <= 253 && is_dns1123(n)
}

fn is_dns1123(n: &str) -> bool {
    !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && n.starts_with(|c: char| c.is_ascii_alphanumeric())
        && n.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_kubernetes_validates_them() {
        assert!(is_dns1123_subdomain("web-1.v2"));
        assert!(!is_dns1123_label("web-1.v2"));
        assert!(is_dns1123_label("ask"));
        for bad in ["", "-a", "a-", "A", "a_b", "evil\u{1b}[31m", "a b"] {
            assert!(!is_dns1123_subdomain(bad), "{bad:?}");
        }
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(!is_dns1123_subdomain(&"a".repeat(254)));
    }
}
