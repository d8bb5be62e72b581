//! Key names. Every key starts with the configured prefix. See the crate
//! docs for the layout.

/// Why a key prefix is refused: a brace in it would change which part of
/// each key Redis Cluster hashes.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.contains(['{', '}']) {
        return Err(format!(
            "the key prefix {prefix:?} contains a brace; the stores place their own hash tags"
        ));
    }
    Ok(())
}

/// The bucket of rate-limit key `key`: `{prefix}rl:{key}`.
pub(crate) fn rate_key(prefix: &str, key: &str) -> String {
    format!("{prefix}rl:{key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_with_braces_are_refused() {
        assert!(check_prefix("toolwire:").is_ok());
        assert!(check_prefix("").is_ok());
        assert!(check_prefix("app{1}:").is_err());
        assert!(check_prefix("x}").is_err());
        assert_eq!(
            rate_key("toolwire:", "tools\u{0}s:a"),
            "toolwire:rl:tools\u{0}s:a"
        );
    }
}
