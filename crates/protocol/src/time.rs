//! The wire's timestamps: ISO 8601 in UTC (a task's `createdAt` and
//! `lastUpdatedAt`), from milliseconds since the Unix epoch.

/// `ms` since the Unix epoch as ISO 8601 in UTC, with milliseconds.
///
/// ```
/// use toolwire_protocol::time::iso8601_utc;
/// assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
/// assert_eq!(iso8601_utc(1_785_234_600_042), "2026-07-28T10:30:00.042Z");
/// ```
pub fn iso8601_utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (year, month, day) = civil_from_days(i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2));
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::iso8601_utc;

    #[test]
    fn dates_are_utc() {
        assert_eq!(iso8601_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601_utc(1_796_526_245_123), "2026-12-06T03:04:05.123Z");
    }
}
