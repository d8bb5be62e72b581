//! Text a server sent, made safe to show on a terminal.
//!
//! Names, titles, descriptions, results, elicitation forms, log lines,
//! progress messages and error messages all come from the server. Shown as
//! they are, they could carry terminal control sequences: hide text, move the
//! cursor, set the window title (OSC 0/2), write the clipboard (OSC 52), or
//! reorder what is read (bidi overrides). Every such character is replaced by
//! a visible escape, `\u{1b}` (the form of Rust's `char::escape_unicode`),
//! so the person sees that something was there and nothing acts on it:
//!
//! - C0 controls except tab and newline (and `\r` right before `\n`), DEL,
//!   and C1 controls U+0080–U+009F (8-bit CSI U+009B, OSC U+009D, ...). ESC
//!   itself is escaped, so no ESC sequence (CSI, OSC, or other) survives;
//!   the rest of the sequence is left as the plain characters it is made of.
//!   A lone `\r` is escaped because it returns to the start of the line and
//!   lets later text cover earlier text.
//! - Bidirectional controls: U+061C, U+200E, U+200F, U+202A–U+202E,
//!   U+2066–U+2069.
//! - Tag characters U+E0000–U+E007F.
//!
//! `--json` output does not come here: it is exact JSON, with these same
//! characters written as JSON `\uXXXX` escapes (see `safe_json`).

use std::borrow::Cow;

/// Multi-line server text (descriptions, results, messages): newlines and
/// tabs stay, every other control is shown as an escape.
pub fn text(s: &str) -> Cow<'_, str> {
    escape(s, Keep::Lines, false)
}

/// One-line server text (names, titles, URIs, labels): like [`text`], and
/// newlines, `\r` and tabs are escaped too, so a name cannot start a line of
/// its own that looks like toolwire's.
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, Keep::Nothing, false)
}

/// A whole line about to be written to a terminal, that may hold toolwire's
/// own colours (those `terminal::Ui` writes): like [`text`], and when
/// `styles` is true the exact SGR sequences toolwire paints with (bold, dim,
/// yellow, bold red, reset) are kept. Nothing else can pass: no cursor
/// movement, no erasing, no OSC, no concealed text.
pub fn styled(s: &str, styles: bool) -> Cow<'_, str> {
    escape(s, Keep::Lines, styles)
}

/// The SGR sequences toolwire itself writes; see `Ui::paint`.
pub const OWN_STYLES: [&str; 5] = ["\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[33m", "\x1b[1;31m"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// `\n`, `\t` and `\r\n` stay.
    Lines,
    /// Every control is escaped.
    Nothing,
}

/// True for the characters that are never shown as they are.
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// True for the ASCII bytes text shows as they are: printable ones, `\n`
/// and `\t`. A run of them needs no decoding and no escape.
pub fn is_plain_text_byte(b: u8) -> bool {
    matches!(b, b' '..=b'~' | b'\n' | b'\t')
}

/// True when every byte of `bytes` is a [plain text byte](is_plain_text_byte).
pub fn is_plain_text(bytes: &[u8]) -> bool {
    all_bytes(bytes, is_plain_text_byte)
}

/// True when `keep` holds for every byte of `bytes`.
///
/// Checked 32 bytes at a time without an early exit, which the compiler
/// turns into vector compares: a log line is about 250 bytes, and a
/// byte-at-a-time `all` cost about 11 instructions a byte.
pub fn all_bytes(bytes: &[u8], keep: impl Fn(u8) -> bool + Copy) -> bool {
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        if !chunk.iter().fold(true, |kept, &b| kept & keep(b)) {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| keep(b))
}

/// The one function every server text goes through.
fn escape(s: &str, keep: Keep, styles: bool) -> Cow<'_, str> {
    let plain = |c: char| !is_unsafe(c) || (keep == Keep::Lines && (c == '\n' || c == '\t'));
    // ASCII (every log line, most names) is checked byte by byte: the same
    // test, without decoding characters.
    let clean = if s.is_ascii() {
        match keep {
            Keep::Lines => is_plain_text(s.as_bytes()),
            Keep::Nothing => all_bytes(s.as_bytes(), |b| matches!(b, b' '..=b'~')),
        }
    } else {
        s.chars().all(plain)
    };
    if clean {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if styles && c == '\x1b' {
            if let Some(style) = OWN_STYLES.iter().find(|style| rest.starts_with(**style)) {
                out.push_str(style);
                rest = &rest[style.len()..];
                continue;
            }
        }
        let kept = keep == Keep::Lines
            && (c == '\n' || c == '\t' || (c == '\r' && rest[1..].starts_with('\n')));
        if kept || !is_unsafe(c) {
            out.push(c);
        } else {
            out.extend(c.escape_unicode());
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_bytes_are_the_printable_ascii_ones_and_line_breaks() {
        let plain: Vec<u8> = (0..=127u8).filter(|b| is_plain_text_byte(*b)).collect();
        let expected: Vec<u8> = [b'\t', b'\n'].into_iter().chain(b' '..=b'~').collect();
        assert_eq!(plain, expected);
        for b in plain {
            let c = char::from(b);
            assert!(!is_unsafe(c) || c == '\n' || c == '\t', "{c:?}");
        }
    }

    #[test]
    fn a_run_is_plain_text_only_when_every_byte_is() {
        // Lengths around the 32-byte chunks, with the one odd byte at each
        // place: first, inside a chunk, last, in the remainder.
        for len in [0, 1, 31, 32, 33, 63, 64, 65, 250] {
            let line = vec![b'a'; len];
            assert!(is_plain_text(&line), "{len}");
            for at in 0..len {
                for odd in [0x1b_u8, b'\r', 0x7f, 0x80, 0xc2] {
                    let mut bytes = line.clone();
                    bytes[at] = odd;
                    assert!(!is_plain_text(&bytes), "{len} {at} {odd:#x}");
                }
                let mut bytes = line.clone();
                bytes[at] = b'\t';
                assert!(is_plain_text(&bytes), "{len} {at} tab");
            }
        }
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let plain = "Echoes the text back — «ünïcödé» 🙂\n\tindented";
        assert!(matches!(text(plain), Cow::Borrowed(t) if t == plain));
        assert!(matches!(line("echo"), Cow::Borrowed("echo")));
    }

    #[test]
    fn csi_sequences_are_escaped() {
        // Colours, cursor movement, erase line, conceal.
        assert_eq!(text("\x1b[31mred\x1b[0m"), "\\u{1b}[31mred\\u{1b}[0m");
        assert_eq!(text("a\x1b[2K\x1b[1Ab"), "a\\u{1b}[2K\\u{1b}[1Ab");
        assert_eq!(text("\x1b[8mhidden"), "\\u{1b}[8mhidden");
    }

    #[test]
    fn osc_sequences_are_escaped() {
        // Window title (OSC 0 and 2), ended by BEL or ST.
        assert_eq!(text("\x1b]0;pwned\x07"), "\\u{1b}]0;pwned\\u{7}");
        assert_eq!(text("\x1b]2;t\x1b\\"), "\\u{1b}]2;t\\u{1b}\\");
        // Clipboard write (OSC 52).
        assert_eq!(
            text("\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"),
            "\\u{1b}]52;c;Y3VybCBldmlsIHwgc2g=\\u{7}"
        );
        // Hyperlinks (OSC 8).
        assert_eq!(
            text("\x1b]8;;https://evil\x1b\\x\x1b]8;;\x1b\\"),
            "\\u{1b}]8;;https://evil\\u{1b}\\x\\u{1b}]8;;\\u{1b}\\"
        );
    }

    #[test]
    fn other_escape_sequences_are_escaped() {
        // Save/restore cursor, reset terminal, charset switch, DCS.
        assert_eq!(text("\x1b7\x1b8\x1bc"), "\\u{1b}7\\u{1b}8\\u{1b}c");
        assert_eq!(text("\x1b(0"), "\\u{1b}(0");
        assert_eq!(text("\x1bPq\x1b\\"), "\\u{1b}Pq\\u{1b}\\");
    }

    #[test]
    fn c0_controls_and_del_are_escaped_but_lines_and_tabs_stay() {
        assert_eq!(
            text("a\0b\x07c\x08d\x7fe"),
            "a\\u{0}b\\u{7}c\\u{8}d\\u{7f}e"
        );
        assert_eq!(text("\x0b\x0c\x0e\x1f"), "\\u{b}\\u{c}\\u{e}\\u{1f}");
        assert_eq!(text("one\ntwo\tthree"), "one\ntwo\tthree");
        assert_eq!(text("crlf\r\nnext"), "crlf\r\nnext");
        // A lone carriage return would let "EVIL" cover "safe".
        assert_eq!(text("safe\rEVIL"), "safe\\u{d}EVIL");
        assert_eq!(text("end\r"), "end\\u{d}");
    }

    #[test]
    fn c1_controls_are_escaped() {
        // 8-bit CSI and OSC, NEL, and the ends of the range.
        assert_eq!(text("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(text("\u{9d}0;title\u{9c}"), "\\u{9d}0;title\\u{9c}");
        assert_eq!(text("\u{80}\u{85}\u{9f}"), "\\u{80}\\u{85}\\u{9f}");
        // U+00A0 and above are ordinary text.
        assert_eq!(text("\u{a0}é"), "\u{a0}é");
    }

    #[test]
    fn bidi_controls_are_escaped() {
        assert_eq!(text("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(
            text("\u{202a}\u{202b}\u{202c}\u{202d}"),
            "\\u{202a}\\u{202b}\\u{202c}\\u{202d}"
        );
        assert_eq!(
            text("\u{2066}\u{2067}\u{2068}\u{2069}"),
            "\\u{2066}\\u{2067}\\u{2068}\\u{2069}"
        );
        assert_eq!(
            text("\u{200e}\u{200f}\u{61c}"),
            "\\u{200e}\\u{200f}\\u{61c}"
        );
        // Right-to-left letters themselves are fine.
        assert_eq!(text("שלום مرحبا"), "שלום مرحبا");
    }

    #[test]
    fn tag_characters_are_escaped() {
        // "hi" smuggled as tags, between the tag range's ends.
        assert_eq!(
            text("ok\u{e0000}\u{e0068}\u{e0069}\u{e007f}"),
            "ok\\u{e0000}\\u{e0068}\\u{e0069}\\u{e007f}"
        );
        // Just outside the range: variation selectors supplement.
        assert_eq!(text("\u{e0100}"), "\u{e0100}");
    }

    #[test]
    fn one_line_text_escapes_line_breaks_and_tabs() {
        assert_eq!(
            line("echo\n  trusted — safe\r\tx"),
            "echo\\u{a}  trusted — safe\\u{d}\\u{9}x"
        );
        assert_eq!(line("a\x1b[1Ab"), "a\\u{1b}[1Ab");
    }

    #[test]
    fn escaping_twice_changes_nothing() {
        let once = text("\x1b]52;c;AA==\x07\u{202e}\u{e0041}\u{9b}").into_owned();
        assert_eq!(text(&once), once);
        assert_eq!(line(&once), once);
    }

    #[test]
    fn own_styles_pass_only_when_asked() {
        let painted = "\x1b[1;31mdanger\x1b[0m \x1b[1mb\x1b[0m \x1b[2md\x1b[0m \x1b[33mw\x1b[0m";
        assert_eq!(styled(painted, true), painted);
        assert_eq!(styled("\x1b[1mb\x1b[0m", false), "\\u{1b}[1mb\\u{1b}[0m");
        // Anything else is escaped even when styles are kept.
        assert_eq!(
            styled("\x1b[1m\x1b[8mx\x1b[2J\x1b]0;t\x07\u{9b}1m", true),
            "\x1b[1m\\u{1b}[8mx\\u{1b}[2J\\u{1b}]0;t\\u{7}\\u{9b}1m"
        );
        assert_eq!(styled("a\nb\rc", true), "a\nb\\u{d}c");
    }
}
