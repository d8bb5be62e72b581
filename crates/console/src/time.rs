//! Milliseconds since the Unix epoch as a UTC date and time, as the
//! console shows them.

use toolwire_server::protocol::time::iso8601_utc;

/// `2026-12-06 03:04:05` (UTC) for `millis` since the epoch.
pub(crate) fn utc(millis: u64) -> String {
    let iso = iso8601_utc(millis);
    iso.get(..19).unwrap_or(&iso).replacen('T', " ", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_796_526_245_123), "2026-12-06 03:04:05");
    }
}
