//! The timestamp of a log line (text or JSON), written as tracing-subscriber's
//! `SystemTime` timer writes it (`2026-12-07T14:05:09.123456Z`, UTC, to the
//! microsecond) in fewer steps.
//!
//! `SystemTime` formats seven numbers through `core::fmt`, with padding:
//! about 2,300 instructions, a fifth of the audit line that `toolwire
//! serve` and `toolwire gateway` log for every call. Here the digits go
//! into a fixed buffer, written once.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// The log line's timer; see the module.
///
/// ```ignore
/// tracing_subscriber::fmt::layer().with_timer(UtcMicros)
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UtcMicros;

impl FormatTime for UtcMicros {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let now = SystemTime::now();
        match utc_micros(now) {
            Some(text) => w.write_str(as_text(&text)),
            // Before 1970 or after 9999: the library's own timer.
            None => tracing_subscriber::fmt::time::SystemTime.format_time(w),
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
type Stamp = [u8; 27];

fn as_text(stamp: &Stamp) -> &str {
    std::str::from_utf8(stamp).expect("only ASCII digits and separators")
}

/// `time` in UTC to the microsecond, for years 1970 to 9999.
fn utc_micros(time: SystemTime) -> Option<Stamp> {
    let since = time.duration_since(UNIX_EPOCH).ok()?;
    let seconds = since.as_secs();
    let (year, month, day) = civil_from_days(seconds / 86_400);
    if year > 9999 {
        return None;
    }
    let of_day = seconds % 86_400;
    let mut out = *b"0000-00-00T00:00:00.000000Z";
    put_digits(&mut out[0..4], year);
    put_digits(&mut out[5..7], month);
    put_digits(&mut out[8..10], day);
    put_digits(&mut out[11..13], of_day / 3600);
    put_digits(&mut out[14..16], of_day % 3600 / 60);
    put_digits(&mut out[17..19], of_day % 60);
    put_digits(&mut out[20..26], u64::from(since.subsec_micros()));
    Some(out)
}

/// Writes `value`'s last `out.len()` decimal digits, zero-padded.
fn put_digits(out: &mut [u8], mut value: u64) {
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Counted from 0000-03-01, so a leap day ends its 400-year era's year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(seconds: u64, micros: u32) -> String {
        let time = UNIX_EPOCH + Duration::new(seconds, micros * 1_000 + 999);
        as_text(&utc_micros(time).expect("in range")).to_owned()
    }

    #[test]
    fn known_instants_are_written_to_the_microsecond() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_868_799, 999_999), "2000-02-29T23:59:59.999999Z");
        assert_eq!(at(951_868_800, 1), "2000-03-01T00:00:00.000001Z");
        assert_eq!(at(1_796_654_109, 123_456), "2026-12-07T14:35:09.123456Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000000Z");
        assert_eq!(at(253_402_300_799, 999_999), "9999-12-31T23:59:59.999999Z");
    }

    #[test]
    fn every_day_from_1970_to_2500_follows_the_one_before() {
        let mut expected = (1970, 1, 1);
        for days in 0..(530 * 366) {
            let (year, month, day) = civil_from_days(days);
            assert_eq!((year, month, day), expected, "day {days}");
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
            let length = match month {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            expected = match (day == length, month == 12) {
                (false, _) => (year, month, day + 1),
                (true, false) => (year, month + 1, 1),
                (true, true) => (year + 1, 1, 1),
            };
        }
    }

    #[test]
    fn outside_1970_to_9999_there_is_no_stamp_of_ours() {
        assert_eq!(utc_micros(UNIX_EPOCH - Duration::from_secs(1)), None);
        assert_eq!(
            utc_micros(UNIX_EPOCH + Duration::from_secs(253_402_300_800)),
            None
        );
    }

    #[test]
    fn the_library_timer_writes_the_same_minute_in_the_same_form() {
        let written = |timer: &dyn FormatTime| {
            let mut text = String::new();
            timer.format_time(&mut Writer::new(&mut text)).unwrap();
            text
        };
        let shape = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_ascii_digit() { '9' } else { c })
                .collect()
        };
        // Taken a moment apart, the two agree to the minute unless a minute
        // ended between them: then the next try agrees.
        for _ in 0..3 {
            let (ours, theirs) = (
                written(&UtcMicros),
                written(&tracing_subscriber::fmt::time::SystemTime),
            );
            assert_eq!(shape(&ours), shape(&theirs));
            if ours[..16] == theirs[..16] {
                return;
            }
        }
        panic!("the two timers disagree on the minute");
    }
}
