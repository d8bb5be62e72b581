//! Invisible text (bidi controls, tag characters, zero-width formatting,
//! runs of variation selectors): how it is found, removed or escaped, and
//! the report of what was.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

use super::Invisible;

/// What the sanitiser removed (or escaped) from one result: counts per
/// class, as the audit log reports them (`sanitized` field).
///
/// ```
/// use toolwire_server::SanitizePolicy;
/// let (text, report) = SanitizePolicy::default().clean_text("a\u{202E}b\u{E0041}\u{200B}");
/// assert_eq!(text, "ab");
/// assert_eq!(report.to_string(), "bidi=1 tags=1 zero_width=1");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SanitizeReport {
    /// Bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C).
    pub bidi: usize,
    /// Tag characters (U+E0000–U+E007F).
    pub tags: usize,
    /// Zero-width and other invisible formatting characters.
    pub zero_width: usize,
    /// Variation selectors in runs, or after nothing visible.
    pub variation_selectors: usize,
    /// Terminal escape sequences and control characters (each sequence counts once).
    pub controls: usize,
}

impl SanitizeReport {
    /// Invisible characters removed or escaped (every class but `controls`).
    pub fn invisible(&self) -> usize {
        self.bidi + self.tags + self.zero_width + self.variation_selectors
    }

    /// True when nothing was removed.
    pub fn is_empty(&self) -> bool {
        self.invisible() == 0 && self.controls == 0
    }

    fn count(&mut self, class: Class) {
        match class {
            Class::Bidi => self.bidi += 1,
            Class::Tag => self.tags += 1,
            Class::ZeroWidth => self.zero_width += 1,
            Class::Variation => self.variation_selectors += 1,
        }
    }
}

/// `bidi=1 tags=14` (the classes that are not zero, in this order: `bidi`,
/// `tags`, `zero_width`, `variation_selectors`, `controls`), or `none`.
impl std::fmt::Display for SanitizeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields = [
            ("bidi", self.bidi),
            ("tags", self.tags),
            ("zero_width", self.zero_width),
            ("variation_selectors", self.variation_selectors),
            ("controls", self.controls),
        ];
        let mut first = true;
        for (name, count) in fields.into_iter().filter(|(_, n)| *n > 0) {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{name}={count}")?;
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// The classes of invisible characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Bidi,
    Tag,
    ZeroWidth,
    Variation,
}

const ZWJ: char = '\u{200D}';
const ZWNJ: char = '\u{200C}';

/// The viramas of the Indic scripts, Myanmar and Khmer: a joiner after one
/// picks the consonant's form.
fn is_virama(c: char) -> bool {
    matches!(
        c as u32,
        0x094D
            | 0x09CD
            | 0x0A4D
            | 0x0ACD
            | 0x0B4D
            | 0x0BCD
            | 0x0C4D
            | 0x0CCD
            | 0x0D4D
            | 0x0DCA
            | 0x1039
            | 0x103A
            | 0x17D2
    )
}

/// Letters and marks of the scripts whose spelling needs ZWNJ and ZWJ
/// between them: Arabic (and its supplements and presentation forms),
/// Syriac, the Indic scripts from Devanagari to Sinhala, Myanmar, Khmer and
/// Mongolian. A joiner between two of them is kept; anywhere else, or in
/// a run, it is removed.
fn uses_joiners(c: char) -> bool {
    matches!(c as u32,
        0x0620..=0x065F | 0x066E..=0x06D3 | 0x06D5 | 0x06EE..=0x06FF // Arabic letters, marks
        | 0x0710..=0x074F | 0x0750..=0x077F | 0x08A0..=0x08FF     // Syriac, Arabic supplements
        | 0x0900..=0x0DFF                                          // Devanagari … Sinhala
        | 0x1000..=0x109F | 0x1780..=0x17DD | 0x1820..=0x18AA      // Myanmar, Khmer, Mongolian
        | 0xA8E0..=0xA8FF | 0xFB50..=0xFDFF | 0xFE70..=0xFEFC)
        && !c.is_whitespace()
}

/// The class of an invisible character, `None` for every other.
fn classify(c: char) -> Option<Class> {
    let u = c as u32;
    if u < 0xAD {
        return None;
    }
    match u {
        0x202A..=0x202E | 0x2066..=0x2069 | 0x200E | 0x200F | 0x061C => Some(Class::Bidi),
        0xE0000..=0xE007F => Some(Class::Tag),
        0xFE00..=0xFE0F | 0xE0100..=0xE01EF => Some(Class::Variation),
        0x00AD
        | 0x034F
        | 0x115F
        | 0x1160
        | 0x17B4
        | 0x17B5
        | 0x180E
        | 0x200B..=0x200D
        | 0x2060..=0x2064
        | 0x206A..=0x206F
        | 0x3164
        | 0xFEFF
        | 0xFFA0
        | 0xFFF9..=0xFFFB
        | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A => Some(Class::ZeroWidth),
        _ => None,
    }
}

/// Emoji (Extended_Pictographic, regional indicators and skin-tone
/// modifiers, approximated by their blocks): what a ZWJ may join.
fn is_emoji(c: char) -> bool {
    matches!(c as u32,
        0x00A9 | 0x00AE | 0x203C | 0x2049 | 0x2122 | 0x2139 | 0x2194..=0x21AA
        | 0x231A..=0x23FF | 0x24C2 | 0x25AA..=0x25FE | 0x2600..=0x27BF | 0x2934 | 0x2935
        | 0x2B05..=0x2B55 | 0x3030 | 0x303D | 0x3297 | 0x3299
        | 0x1F000..=0x1FAFF | 0x1FC00..=0x1FFFD)
}

/// CJK ideographs: the only bases of ideographic variation sequences
/// (U+E0100–U+E01EF).
fn is_ideograph(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF)
}

/// True when a character whose UTF-8 form starts with `b0 b1` may be of
/// one of the four classes (the blocks they live in); most non-ASCII text
/// (accents, punctuation, CJK, emoji) is answered without decoding.
fn maybe_invisible(b0: u8, b1: u8) -> bool {
    match b0 {
        0xC2 => b1 == 0xAD,                              // U+00AD
        0xCD => b1 == 0x8F,                              // U+034F
        0xD8 => b1 == 0x9C,                              // U+061C
        0xE1 => matches!(b1, 0x85 | 0x9E | 0xA0),        // U+115F, U+17B4, U+180E
        0xE2 => matches!(b1, 0x80 | 0x81),               // U+2000–U+207F
        0xE3 => b1 == 0x85,                              // U+3164
        0xEF => matches!(b1, 0xB8 | 0xBB | 0xBE | 0xBF), // U+FE00, U+FEFF, U+FFA0, U+FFF9
        0xF0 => matches!(b1, 0x9B | 0x9D),               // U+1BCA0, U+1D173
        0xF3 => b1 == 0xA0,                              // U+E0000–U+E0FFF
        _ => false,
    }
}

/// The width of the UTF-8 sequence led by `b`.
fn utf8_width(b: u8) -> usize {
    match b {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

/// The next character of `text` at byte `i` (a character boundary) that
/// is of one of the four classes: its index, the character and its class.
fn next_invisible(text: &str, mut i: usize) -> Option<(usize, char, Class)> {
    let bytes = text.as_bytes();
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            i += 1;
            continue;
        }
        if maybe_invisible(b, bytes.get(i + 1).copied().unwrap_or(0)) {
            let c = text[i..].chars().next()?;
            if let Some(class) = classify(c) {
                return Some((i, c, class));
            }
        }
        i += utf8_width(b);
    }
    None
}

/// True when `text` holds a character of one of the four classes. Pure
/// ASCII is answered by `is_ascii` alone.
fn has_invisible(text: &str) -> bool {
    !text.is_ascii() && next_invisible(text, 0).is_some()
}

/// Applies the invisible-text rule to `text` (see the module docs);
/// borrows when nothing changes (a ZWJ sequence of emoji, a single `❤️`).
/// Only the characters of the four classes are decoded; what they need
/// to know of their neighbours is read from the text around them.
pub(super) fn scrub_invisible<'a>(
    text: &'a str,
    mode: Invisible,
    report: &mut SanitizeReport,
) -> Cow<'a, str> {
    if mode == Invisible::Keep || text.is_ascii() {
        return Cow::Borrowed(text);
    }
    let mut out: Option<String> = None;
    // Text before `copied` is in `out` already (or needed no change).
    let mut copied = 0;
    // Where the last removed character ended: what follows it has no
    // visible character before it.
    let mut removed_to = usize::MAX;
    let mut i = 0;
    while let Some((start, c, class)) = next_invisible(text, i) {
        let end = start + c.len_utf8();
        let before = || {
            (removed_to != start)
                .then(|| text[..start].chars().next_back())
                .flatten()
        };
        let keep_to = match class {
            Class::Variation => {
                let mut run_end = end;
                let mut run = 1;
                while let Some(next) = text[run_end..].chars().next() {
                    if classify(next) != Some(Class::Variation) {
                        break;
                    }
                    run += 1;
                    run_end += next.len_utf8();
                }
                // Kept: one selector after a visible character (`❤️`,
                // `☺︎`, an ideographic variant).
                let fits = before().is_some_and(|b| {
                    !b.is_whitespace()
                        && !b.is_control()
                        && classify(b).is_none()
                        && (c < '\u{E0100}' || is_ideograph(b))
                });
                if run == 1 && fits {
                    None
                } else {
                    Some(run_end)
                }
            }
            // ZWNJ or ZWJ between two letters of a script that spells
            // with them (Persian `می‌خواهم`, Devanagari `क्‍ष`), or after a
            // virama, even at a word's end (Malayalam chillu `ന്‍`).
            _ if (c == ZWNJ || c == ZWJ)
                && before().is_some_and(|b| {
                    is_virama(b)
                        || (uses_joiners(b) && text[end..].chars().next().is_some_and(uses_joiners))
                }) =>
            {
                None
            }
            // A ZWJ joining two emoji (the first may carry its selector).
            _ if c == ZWJ => {
                let after_emoji = before().is_some_and(|b| {
                    is_emoji(b)
                        || (matches!(b, '\u{FE0E}' | '\u{FE0F}')
                            && text[..start - b.len_utf8()]
                                .chars()
                                .next_back()
                                .is_some_and(is_emoji))
                });
                let emoji_next = text[end..].chars().next().is_some_and(is_emoji);
                if after_emoji && emoji_next {
                    None
                } else {
                    Some(end)
                }
            }
            _ => Some(end),
        };
        match keep_to {
            None => i = end,
            Some(stop) => {
                let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
                out.push_str(&text[copied..start]);
                for c in text[start..stop].chars() {
                    if let Some(class) = classify(c) {
                        report.count(class);
                    }
                    if mode == Invisible::Escape {
                        let _ = write!(out, "[U+{:04X}]", c as u32);
                    }
                }
                copied = stop;
                removed_to = stop;
                i = stop;
            }
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// [`scrub_invisible`] in place.
pub(super) fn scrub_string(text: &mut String, mode: Invisible, report: &mut SanitizeReport) {
    if let Cow::Owned(clean) = scrub_invisible(text, mode, report) {
        *text = clean;
    }
}

impl super::SanitizePolicy {
    /// The invisible-text rule as a filter of notification texts (progress
    /// messages, log data), or `None` when the rule is off.
    pub(crate) fn text_filter(&self) -> Option<crate::context::TextFilter> {
        let mode = self.invisible_mode();
        (mode != Invisible::Keep).then(|| {
            crate::context::TextFilter(std::sync::Arc::new(move |value: &mut Value| {
                scrub_value(value, mode, &mut SanitizeReport::default());
            }))
        })
    }
}

/// [`scrub_invisible`] on every string of `value`, object keys included
/// (an object is rebuilt, in order, only when one of its keys changes).
pub(crate) fn scrub_value(value: &mut Value, mode: Invisible, report: &mut SanitizeReport) {
    if mode == Invisible::Keep {
        return;
    }
    match value {
        Value::String(text) => scrub_string(text, mode, report),
        Value::Array(items) => {
            for item in items {
                scrub_value(item, mode, report);
            }
        }
        Value::Object(object) => {
            for item in object.values_mut() {
                scrub_value(item, mode, report);
            }
            if object.keys().any(|k| has_invisible(k)) {
                let old = std::mem::take(object);
                for (key, item) in old {
                    let key = match scrub_invisible(&key, mode, report) {
                        Cow::Borrowed(_) => key,
                        Cow::Owned(clean) => clean,
                    };
                    object.insert(key, item);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// [`scrub_invisible`] on JSON text appended to `out` from `start` (a
/// `*/list` page as written): invisible characters can only be inside its
/// strings, and `[U+XXXX]` needs no JSON escaping.
pub(crate) fn scrub_json_tail(out: &mut Vec<u8>, start: usize, mode: Invisible) {
    if mode == Invisible::Keep || out[start..].is_ascii() {
        return;
    }
    let Ok(text) = std::str::from_utf8(&out[start..]) else {
        return;
    };
    if let Cow::Owned(clean) = scrub_invisible(text, mode, &mut SanitizeReport::default()) {
        out.truncate(start);
        out.extend_from_slice(clean.as_bytes());
    }
}
