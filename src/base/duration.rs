//! Durations as people write them on a command line or in an environment variable.

use std::time::Duration;

/// A duration such as `30s`, `5m`, `1h30m`; a bare number is seconds (as `VAULT_CLIENT_TIMEOUT`
/// takes it).
pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration ({e}); e.g. `30s`, `5m`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse("30").unwrap().as_secs(), 30);
        assert_eq!(parse("5m").unwrap().as_secs(), 300);
        assert!(parse("soon").is_err());
    }
}
