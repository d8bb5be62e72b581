//! Terminal escape sequences and control characters: what `strip_control`
//! removes from text results.

use std::borrow::Cow;

/// Removes terminal escape sequences and control characters other than
/// `\n` and `\t`; borrows when there is nothing to remove.
pub fn strip_control(text: &str) -> Cow<'_, str> {
    strip_control_counted(text, &mut 0)
}

/// True when `bytes` (ASCII) hold a control character other than `\n` and
/// `\t`. Branch-free over 64-byte chunks, so it vectorises.
fn has_ascii_control(bytes: &[u8]) -> bool {
    bytes.chunks(64).any(|chunk| {
        chunk.iter().fold(false, |found, &b| {
            found | ((b < 0x20) & (b != b'\n') & (b != b'\t')) | (b == 0x7f)
        })
    })
}

/// True when `bytes` (UTF-8) hold a control character other than `\n`
/// and `\t`: an ASCII one, or a C1 control (U+0080–U+009F, `C2 80`–`C2 9F`).
fn has_control(bytes: &[u8]) -> bool {
    if has_ascii_control(bytes) {
        return true;
    }
    bytes.chunks(64).enumerate().any(|(n, chunk)| {
        chunk.iter().fold(false, |found, &b| found | (b == 0xC2))
            && chunk.iter().enumerate().any(|(i, &b)| {
                b == 0xC2 && bytes.get(n * 64 + i + 1).is_some_and(|&next| next < 0xA0)
            })
    })
}

/// [`strip_control`], adding to `removed` one per escape sequence or
/// control character removed.
pub(super) fn strip_control_counted<'a>(text: &'a str, removed: &mut usize) -> Cow<'a, str> {
    if !has_control(text.as_bytes()) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let after = &rest[c.len_utf8()..];
        rest = match c {
            '\n' | '\t' => {
                out.push(c);
                after
            }
            '\u{1b}' => {
                *removed += 1;
                skip_escape(after)
            }
            '\u{9b}' => {
                *removed += 1;
                skip_csi(after)
            }
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                *removed += 1;
                skip_string(after)
            }
            c if c.is_control() => {
                *removed += 1;
                after
            }
            c => {
                out.push(c);
                after
            }
        };
    }
    Cow::Owned(out)
}

/// After `ESC`: skips the rest of the sequence.
fn skip_escape(rest: &str) -> &str {
    let Some(next) = rest.chars().next() else {
        return rest;
    };
    let after = &rest[next.len_utf8()..];
    match next {
        '[' => skip_csi(after),
        ']' | 'P' | 'X' | '^' | '_' => skip_string(after),
        // nF: intermediates, then one final byte.
        '\u{20}'..='\u{2f}' => {
            let body = after.trim_start_matches(|c| ('\u{20}'..='\u{2f}').contains(&c));
            match body.chars().next() {
                Some(f @ '\u{30}'..='\u{7e}') => &body[f.len_utf8()..],
                _ => body,
            }
        }
        // Fp, Fe, Fs: one byte.
        '\u{30}'..='\u{7e}' => after,
        _ => rest,
    }
}

/// After a CSI introducer: parameters, intermediates, one final byte.
fn skip_csi(rest: &str) -> &str {
    let body = rest.trim_start_matches(|c| ('\u{20}'..='\u{3f}').contains(&c));
    match body.chars().next() {
        Some(f @ '\u{40}'..='\u{7e}') => &body[f.len_utf8()..],
        _ => body,
    }
}

/// After an OSC, DCS, SOS, PM or APC introducer: everything up to and
/// including the terminator (BEL, `ESC \` or ST). Unterminated, only the
/// introducer goes (the text after it is kept, minus control characters).
fn skip_string(rest: &str) -> &str {
    for (i, c) in rest.char_indices() {
        match c {
            '\u{07}' | '\u{9c}' => return &rest[i + c.len_utf8()..],
            '\u{1b}' if rest[i + 1..].starts_with('\\') => return &rest[i + 2..],
            _ => {}
        }
    }
    rest
}
