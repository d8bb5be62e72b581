//! JSON for `--json` and log lines for stderr, safe on a terminal.
//!
//! `--json` prints the exact JSON value the server sent, pretty-printed as
//! serde_json does, except that a character `safe_text` never shows as it
//! is (C0 and C1 controls, DEL, bidi controls, tag characters) is written
//! as a JSON `\uXXXX` escape (a surrogate pair above U+FFFF). serde_json
//! already escapes C0 controls; DEL, C1 controls (8-bit CSI U+009B, OSC
//! U+009D) and bidi overrides it writes raw. Any JSON parser reads back
//! the same value.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

use crate::log_sink;
use crate::safe_text::{self, is_unsafe};

/// `value` as pretty JSON, every unsafe character escaped (a binary's
/// private item: its examples are the tests below).
pub fn to_safe_json(value: &impl Serialize) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(128);
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut out, SafeFormatter(PrettyFormatter::new()));
    value.serialize(&mut serializer)?;
    // Only valid UTF-8 is ever written: str fragments and ASCII escapes.
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// serde_json's pretty formatter, with unsafe characters in strings escaped.
struct SafeFormatter(PrettyFormatter<'static>);

impl Formatter for SafeFormatter {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in s.char_indices() {
            if is_unsafe(c) {
                w.write_all(&s.as_bytes()[start..i])?;
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(w, "\\u{unit:04x}")?;
                }
                start = i + c.len_utf8();
            }
        }
        w.write_all(&s.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// A `tracing` writer for stderr that passes every log line through
/// `safe_text::text`: a server's stderr lines, error texts and names in
/// log fields cannot drive the terminal either. A warning or an error is
/// `urgent` (see `log_sink`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SafeStderr {
    urgent: bool,
}

impl Write for SafeStderr {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // Nearly every log line is printable ASCII: one pass, no decoding.
        if safe_text::is_plain_text(bytes) {
            log_sink::write_stderr(bytes, self.urgent)?;
            return Ok(bytes.len());
        }
        let text = String::from_utf8_lossy(bytes);
        log_sink::write_stderr(safe_text::text(&text).as_bytes(), self.urgent)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for SafeStderr {
    type Writer = SafeStderr;

    fn make_writer(&'a self) -> SafeStderr {
        SafeStderr::default()
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> SafeStderr {
        SafeStderr {
            urgent: is_urgent(meta),
        }
    }
}

/// Warnings and errors are written at once, with the lines before them.
fn is_urgent(meta: &tracing::Metadata<'_>) -> bool {
    level_is_urgent(*meta.level())
}

fn level_is_urgent(level: tracing::Level) -> bool {
    // tracing orders levels by verbosity: ERROR is the least.
    level <= tracing::Level::WARN
}

/// Standard error for JSON log lines (`--log-format json`): each line is
/// JSON as serde_json writes it, and a character `safe_text` never shows
/// as it is (serde_json already escapes C0 controls, and such characters
/// appear only inside strings) becomes a `\uXXXX` escape, so that the
/// line is still JSON, and the same JSON.
#[derive(Default)]
pub struct SafeJsonStderr {
    urgent: bool,
}

impl Write for SafeJsonStderr {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // Printable ASCII and the line's end: as `json_escaped` leaves them.
        if safe_text::all_bytes(bytes, |b| matches!(b, b' '..=b'~' | b'\n')) {
            log_sink::write_stderr(bytes, self.urgent)?;
            return Ok(bytes.len());
        }
        let text = String::from_utf8_lossy(bytes);
        log_sink::write_stderr(json_escaped(&text).as_bytes(), self.urgent)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for SafeJsonStderr {
    type Writer = SafeJsonStderr;

    fn make_writer(&'a self) -> SafeJsonStderr {
        SafeJsonStderr::default()
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> SafeJsonStderr {
        SafeJsonStderr {
            urgent: is_urgent(meta),
        }
    }
}

/// `text` with every unsafe character but `\n` (which ends a JSON line)
/// written as a JSON escape.
fn json_escaped(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c != '\n' && is_unsafe(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn warnings_and_errors_are_urgent_the_rest_waits() {
        use tracing::Level;
        assert!(level_is_urgent(Level::ERROR));
        assert!(level_is_urgent(Level::WARN));
        assert!(!level_is_urgent(Level::INFO));
        assert!(!level_is_urgent(Level::DEBUG));
        assert!(!level_is_urgent(Level::TRACE));
    }

    #[test]
    fn unsafe_characters_become_json_escapes_and_the_value_is_unchanged() {
        let value = json!({
            "del\u{7f}": "csi \u{9b}2J osc \u{9d}0;t\u{7} bidi \u{202E}rev tag \u{E0041} esc \u{1b}[31m",
            "plain": ["héllo ✓ 🙂", 1, null]
        });
        let text = to_safe_json(&value).unwrap();
        assert_eq!(
            text,
            "{\n  \"del\\u007f\": \"csi \\u009b2J osc \\u009d0;t\\u0007 bidi \\u202erev tag \
             \\udb40\\udc41 esc \\u001b[31m\",\n  \"plain\": [\n    \"héllo ✓ 🙂\",\n    1,\n    \
             null\n  ]\n}"
        );
        assert!(!text.chars().any(is_unsafe_raw));
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
    }

    #[test]
    fn safe_text_is_written_as_serde_json_writes_it() {
        let value = json!({"a": [1, {"b": "tab\tnew\nline \"q\" \\"}], "c": {}});
        assert_eq!(
            to_safe_json(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
    }

    /// Unsafe characters other than the newlines of pretty printing.
    fn is_unsafe_raw(c: char) -> bool {
        c != '\n' && is_unsafe(c)
    }

    #[test]
    fn json_log_lines_stay_the_same_json() {
        let value = json!({"fields": {"message": "csi \u{9b}2J bidi \u{202E}rev tag \u{E0041}"}});
        let line = format!("{}\n", serde_json::to_string(&value).unwrap());
        let escaped = json_escaped(&line);
        assert!(escaped.ends_with('\n'));
        assert!(!escaped.trim_end().chars().any(is_unsafe));
        assert_eq!(serde_json::from_str::<Value>(&escaped).unwrap(), value);
        assert!(matches!(
            json_escaped("{}\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
