//! Vault's address, parsed once into the [`Url`] that the HTTP client connects to.
//!
//! Whether plain `http://` is allowed is decided from that same parsed `Url`, never from the
//! text: a second reading of the text can disagree with the client's (the `\@`, `?@` and `#@`
//! spellings once passed a loopback check while the request went to the host before the `@`).
//! The `url` crate parses as browsers do (WHATWG URL): it lowercases the scheme and host, reads
//! `\` as `/`, turns `2130706433`, `0177.0.0.1` and `0x7f.1` into `127.0.0.1`, drops a trailing
//! dot after an IPv4 address, and strips tabs and newlines. Whatever it makes of the text is what
//! the client connects to, so the loopback decision holds for every spelling.
//!
//! A Vault address has no user name or password, query or fragment: the `vault` CLI builds each
//! request from the address's scheme, host and path only (`api/client.go`, `NewRequest`: the
//! request path is joined to the address's path), so they can only mislead a reader. They are
//! refused, and so is a backslash, which parsers read as `/` and people read as text.

use std::net::{Ipv4Addr, Ipv6Addr};

use reqwest::Url;

/// Why an address is refused. Messages read after "Vault address `...` ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// Not parseable as a URL.
    #[error("is not a URL ({0})")]
    NotUrl(String),
    /// A scheme other than `http` or `https`.
    #[error("is not an `https://` or `http://` URL")]
    Scheme,
    /// No host.
    #[error("has no host")]
    NoHost,
    /// `user:password@host`.
    #[error("has a user name or password before `@`; a Vault address has none")]
    Userinfo,
    /// `?...`.
    #[error("has a query (`?...`); a Vault address has none")]
    Query,
    /// `#...`.
    #[error("has a fragment (`#...`); a Vault address has none")]
    Fragment,
    /// A `\`, which URL parsers read as `/`.
    #[error("has a backslash, which URL parsers read as `/`")]
    Backslash,
    /// Plain `http://` to a host that is not loopback.
    #[error("would send the Vault token over plain http:// to `{0}`, which is not loopback")]
    PlainHttp(String),
}

impl AddressError {
    /// What to do about it.
    pub fn help(&self) -> Option<String> {
        Some(self.advice().to_string())
    }

    /// The advice, as written.
    fn advice(&self) -> &'static str {
        match self {
            AddressError::PlainHttp(_) => {
                "use an https:// address, or pass --insecure-http if this network is trusted"
            }
            _ => "e.g. VAULT_ADDR=https://vault.example.internal:8200",
        }
    }
}

/// Parse a Vault address into the URL requests are built on. Plain `http://` is allowed to
/// loopback only (IPv4 `127.0.0.0/8`, `[::1]`, `localhost`), unless `insecure_http`.
///
/// The result has no user name, password, query or fragment; its path (usually `/`) is the
/// prefix under which `v1/` is added.
pub fn parse(addr: &str, insecure_http: bool) -> Result<Url, AddressError> {
    if addr.contains('\\') {
        return Err(AddressError::Backslash);
    }
    let url = Url::parse(addr.trim()).map_err(|e| AddressError::NotUrl(e.to_string()))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(AddressError::Scheme);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(AddressError::Userinfo);
    }
    if url.query().is_some() {
        return Err(AddressError::Query);
    }
    if url.fragment().is_some() {
        return Err(AddressError::Fragment);
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or(AddressError::NoHost)?;
    if url.scheme() == "http" && !insecure_http && !is_loopback(&url) {
        return Err(AddressError::PlainHttp(host.to_string()));
    }
    Ok(url)
}

/// The address as shown to people: the parsed URL without a trailing `/`.
pub fn display(url: &Url) -> String {
    url.as_str().trim_end_matches('/').to_string()
}

/// Whether two addresses name the same Vault: the same scheme, host and port (the scheme's
/// default when none is written) and the same path without a trailing `/`, as the `url` crate
/// reads them (lowercased scheme and host). An address that does not parse names no Vault, so
/// it is the same as none.
pub fn same_vault(a: &str, b: &str) -> bool {
    fn key(addr: &str) -> Option<(String, String, u16, String)> {
        let url = Url::parse(addr.trim()).ok()?;
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        Some((
            url.scheme().to_string(),
            url.host_str().filter(|h| !h.is_empty())?.to_string(),
            url.port_or_known_default()?,
            url.path().trim_end_matches('/').to_string(),
        ))
    }
    matches!((key(a), key(b)), (Some(x), Some(y)) if x == y)
}

/// Whether the URL's host is loopback: IPv4 `127.0.0.0/8`, IPv6 `::1`, or the name `localhost`
/// exactly (not `localhost.`, `localhost.example`, nor an IPv4-mapped IPv6 address).
pub fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    // `host_str` is the parsed host serialised: IPv4 dotted-decimal, IPv6 in brackets, names
    // lowercased and IDNA-mapped.
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6
            .parse::<Ipv6Addr>()
            .is_ok_and(|ip| ip == Ipv6Addr::LOCALHOST);
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return ip.is_loopback();
    }
    host == "localhost"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_vault_ignores_case_default_ports_and_a_trailing_slash_only() {
        assert!(same_vault(
            "http://vault.vault.svc:8200",
            "HTTP://Vault.vault.svc:8200/"
        ));
        assert!(same_vault(
            "https://vault.example",
            "https://vault.example:443"
        ));
        assert!(same_vault(
            "http://127.0.0.1:8200/",
            "http://127.0.0.1:8200"
        ));
        assert!(!same_vault("https://vault.example", "http://vault.example"));
        assert!(!same_vault(
            "https://vault.example:8200",
            "https://vault.example"
        ));
        assert!(!same_vault(
            "https://vault.example",
            "https://vault.example.evil"
        ));
        assert!(!same_vault(
            "https://vault.example/a",
            "https://vault.example/b"
        ));
        assert!(!same_vault("not a url", "not a url"));
        assert!(!same_vault("", ""));
    }

    fn refused(addr: &str) -> AddressError {
        parse(addr, false).expect_err(addr)
    }

    #[test]
    fn loopback_over_plain_http_is_allowed() {
        for a in [
            "http://127.0.0.1:8200",
            "http://127.1.2.3:8200/",
            "http://localhost:8200",
            "HTTP://LOCALHOST:8200",
            "http://[::1]:8200",
            "http://2130706433:8200",
            "http://0177.0.0.1:8200",
            "http://0x7f.1:8200",
            "http://127.0.0.1.:8200",
            " http://127.0.0.1:8200 ",
        ] {
            let url = parse(a, false).unwrap_or_else(|e| panic!("{a}: {e}"));
            assert!(is_loopback(&url), "{a}");
        }
        // The URL keeps what requests are built on: the normalised host and the path prefix.
        assert_eq!(
            display(&parse("http://2130706433:8200/", false).unwrap()),
            "http://127.0.0.1:8200"
        );
        assert_eq!(
            parse("https://vault.example/prefix", false).unwrap().path(),
            "/prefix"
        );
    }

    #[test]
    fn every_bypass_spelling_is_refused() {
        let plain = |a: &str, host: &str| {
            assert_eq!(refused(a), AddressError::PlainHttp(host.into()), "{a}");
        };
        plain("http://192.0.2.1:18200", "192.0.2.1");
        plain("http://3221225985:18200/", "192.0.2.1");
        plain("http://0300.0.2.1:18200/", "192.0.2.1");
        plain("http://0xc0.0.2.1:18200/", "192.0.2.1");
        plain("http://192.0.2.1.:18200/", "192.0.2.1");
        plain("HTTP://192.0.2.1:18200/", "192.0.2.1");
        plain("http://192.0.2.1:18200/@127.0.0.1:18200", "192.0.2.1");
        plain("http://localhost.evil:8200", "localhost.evil");
        plain("http://localhost.:8200", "localhost.");
        plain("http://127.0.0.1.nip.io:8200", "127.0.0.1.nip.io");
        plain("http://0.0.0.0:8200", "0.0.0.0");
        plain("http://[::ffff:127.0.0.1]:8200", "[::ffff:7f00:1]");
        plain("http://[::]:8200", "[::]");
        plain("http://vault.example:8200", "vault.example");
        assert_eq!(
            refused("http://192.0.2.1:18200\\@127.0.0.1:18200"),
            AddressError::Backslash
        );
        assert_eq!(
            refused("http://192.0.2.1:18200?@127.0.0.1:18200"),
            AddressError::Query
        );
        assert_eq!(
            refused("http://192.0.2.1:18200#@127.0.0.1:18200"),
            AddressError::Fragment
        );
        assert_eq!(
            refused("http://127.0.0.1:18200@192.0.2.1:18200"),
            AddressError::Userinfo
        );
        assert_eq!(
            refused("http://user@127.0.0.1:8200"),
            AddressError::Userinfo
        );
        // Refused even with --insecure-http, and over https: a Vault address has none of these.
        assert_eq!(
            parse("https://u:p@vault.example", true),
            Err(AddressError::Userinfo)
        );
        assert_eq!(
            parse("https://vault.example/?x", true),
            Err(AddressError::Query)
        );
        assert_eq!(
            parse("https://vault.example/#x", true),
            Err(AddressError::Fragment)
        );
        assert_eq!(refused("vault.example:8200"), AddressError::Scheme);
        assert_eq!(refused("ftp://127.0.0.1"), AddressError::Scheme);
        assert!(matches!(refused("http://"), AddressError::NotUrl(_)));
        assert!(matches!(refused("no url"), AddressError::NotUrl(_)));
    }

    #[test]
    fn insecure_http_allows_plain_http_anywhere_and_https_is_always_allowed() {
        assert!(parse("http://192.0.2.1:8200", true).is_ok());
        assert!(parse("https://192.0.2.1:8200", false).is_ok());
        assert!(parse("https://vault.example.internal:8200", false).is_ok());
    }
}
