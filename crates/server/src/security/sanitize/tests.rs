//! Unit tests of the sanitiser.

use super::*;

#[test]
fn escapes_go_whole() {
    let cases = [
        ("\u{1b}[31mred\u{1b}[0m", "red"),
        ("a\u{1b}[1;2;3Hb", "ab"),
        ("\u{1b}]0;title\u{07}text", "text"),
        (
            "\u{1b}]8;;https://evil\u{1b}\\link\u{1b}]8;;\u{1b}\\",
            "link",
        ),
        ("\u{1b}P1$r\u{1b}\\ok", "ok"),
        ("\u{1b}_apc\u{9c}ok", "ok"),
        ("\u{9b}2Jclear", "clear"),
        ("\u{9d}0;t\u{07}x", "x"),
        ("\u{1b}(Bx", "x"),
        ("\u{1b}7save\u{1b}8", "save"),
        ("line\r\nnext\tcol\u{7}\u{7f}\u{85}", "line\nnext\tcol"),
        ("\u{1b}]unterminated text", "unterminated text"),
        ("\u{1b}[\nkeep", "\nkeep"),
        ("trailing\u{1b}", "trailing"),
        ("héllo ✓", "héllo ✓"),
    ];
    for (input, expected) in cases {
        assert_eq!(strip_control(input), expected, "{input:?}");
    }
    assert!(matches!(strip_control("plain\ntext"), Cow::Borrowed(_)));
}

fn strip(text: &str) -> (String, SanitizeReport) {
    let mut report = SanitizeReport::default();
    let out = scrub_invisible(text, Invisible::Strip, &mut report).into_owned();
    (out, report)
}

#[test]
fn invisible_classes_go() {
    // Bidirectional controls, each one.
    for c in [
        '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
        '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
    ] {
        let (out, report) = strip(&format!("a{c}b"));
        assert_eq!(out, "ab", "{c:?}");
        assert_eq!(report.to_string(), "bidi=1", "{c:?}");
    }
    // Tag characters: "IGNORE" smuggled after a visible word.
    let (out, report) =
        strip("ok\u{E0001}\u{E0049}\u{E0047}\u{E004E}\u{E004F}\u{E0052}\u{E0045}\u{E007F}.");
    assert_eq!(out, "ok.");
    assert_eq!(report.to_string(), "tags=8");
    // Zero-width and invisible formatting.
    for c in [
        '\u{200B}',
        '\u{200C}',
        '\u{200D}',
        '\u{2060}',
        '\u{2061}',
        '\u{2064}',
        '\u{206A}',
        '\u{206F}',
        '\u{FEFF}',
        '\u{180E}',
        '\u{00AD}',
        '\u{034F}',
        '\u{115F}',
        '\u{1160}',
        '\u{17B4}',
        '\u{17B5}',
        '\u{3164}',
        '\u{FFA0}',
        '\u{FFF9}',
        '\u{FFFB}',
        '\u{1BCA0}',
        '\u{1D173}',
        '\u{1D17A}',
    ] {
        let (out, report) = strip(&format!("pass{c}word"));
        assert_eq!(out, "password", "{c:?}");
        assert_eq!(report.to_string(), "zero_width=1", "{c:?}");
    }
    // Runs of variation selectors carry bytes: the whole run goes.
    let (out, report) = strip("x\u{FE00}\u{FE01}\u{E0100}\u{E01EF}y");
    assert_eq!(out, "xy");
    assert_eq!(report.to_string(), "variation_selectors=4");
    let (out, report) = strip("😀\u{E0130}\u{E0121}\u{E0155} hi");
    assert_eq!(out, "😀 hi");
    assert_eq!(report.variation_selectors, 3);
    // One after nothing visible (start, a space, a removed character) goes.
    assert_eq!(strip("\u{FE0F}a \u{FE0F}b\u{200B}\u{FE0F}").0, "a b");
    // A supplementary one only after an ideograph.
    assert_eq!(strip("葛\u{E0100}").0, "葛\u{E0100}");
    assert_eq!(strip("a\u{E0100}").0, "a");
}

#[test]
fn emoji_sequences_stay() {
    for kept in [
        "👨\u{200D}👩\u{200D}👧",
        "❤\u{FE0F}",
        "❤\u{FE0F}\u{200D}🔥",
        "🏳\u{FE0F}\u{200D}🌈",
        "🧑🏽\u{200D}💻",
        "#\u{FE0F}\u{20E3}",
        "☺\u{FE0E}",
        "Grüße — “quoted” … ✓ 日本語 العربية",
    ] {
        let mut report = SanitizeReport::default();
        let out = scrub_invisible(kept, Invisible::Strip, &mut report);
        assert!(matches!(out, Cow::Borrowed(_)), "{kept:?}");
        assert_eq!(out, kept);
        assert!(report.is_empty(), "{kept:?}");
    }
    // A ZWJ not between two emoji goes.
    assert_eq!(strip("a\u{200D}b 👨\u{200D} \u{200D}👩").0, "ab 👨 👩");
    // A doubled selector after an emoji is a run.
    assert_eq!(strip("❤\u{FE0F}\u{FE0F}").0, "❤");
}

#[test]
fn joiners_inside_words_of_scripts_that_spell_with_them_stay() {
    for kept in [
        "\u{0645}\u{06CC}\u{200C}\u{062E}\u{0648}\u{0627}\u{0647}\u{0645}", // Persian
        "\u{0915}\u{094D}\u{200D}\u{0937}",                                 // Devanagari
        "\u{0915}\u{094D}\u{200C}\u{0937}",                                 // Devanagari, half form
        "\u{0D28}\u{0D4D}\u{200D}\u{0D2E}",                                 // Malayalam
        "\u{0D05}\u{0D35}\u{0D28}\u{0D4D}\u{200D} ",                        // Malayalam chillu
    ] {
        let mut report = SanitizeReport::default();
        let out = scrub_invisible(kept, Invisible::Strip, &mut report);
        assert!(matches!(out, Cow::Borrowed(_)), "{kept:?}");
        assert!(report.is_empty(), "{kept:?}");
    }
    // Between Latin letters, doubled, at a word's edge or at the end, they go.
    assert_eq!(strip("pay\u{200C}pal").0, "paypal");
    assert_eq!(
        strip("\u{0645}\u{06CC}\u{200C}\u{200C}\u{062E}").0,
        "\u{0645}\u{06CC}\u{062E}"
    );
    assert_eq!(strip("\u{0645} \u{200C}\u{062E}").0, "\u{0645} \u{062E}");
    assert_eq!(strip("\u{0645}\u{200D}a").0, "\u{0645}a");
    assert_eq!(strip("\u{0D28}\u{200D}").0, "\u{0D28}");
}

#[test]
fn escape_mode_shows_them() {
    let mut report = SanitizeReport::default();
    let out = scrub_invisible(
        "a\u{202E}b\u{E0041}c\u{200B}👨\u{200D}👩",
        Invisible::Escape,
        &mut report,
    );
    assert_eq!(out, "a[U+202E]b[U+E0041]c[U+200B]👨\u{200D}👩");
    assert_eq!(report.to_string(), "bidi=1 tags=1 zero_width=1");
    let mut report = SanitizeReport::default();
    let out = scrub_invisible("a\u{202E}b", Invisible::Keep, &mut report);
    assert_eq!(out, "a\u{202E}b");
    assert!(report.is_empty());
}

#[test]
fn ascii_and_clean_text_are_borrowed() {
    let policy = SanitizePolicy::default();
    let ascii = "plain text\twith\nlines ".repeat(100);
    assert!(matches!(policy.clean_text(&ascii).0, Cow::Borrowed(_)));
    assert!(matches!(
        policy.clean_text("naïve café ✓ 👍").0,
        Cow::Borrowed(_)
    ));
    let (out, report) = policy.clean_text("\u{1b}[31mred\u{1b}[0m\u{202E}!");
    assert_eq!(out, "red!");
    assert_eq!(report.to_string(), "bidi=1 controls=2");
}

#[test]
fn json_strings_and_keys() {
    let mut value = serde_json::json!({
        "na\u{200B}me": ["x\u{202E}y", 1, {"k": "\u{E0041}"}],
        "ok": "❤\u{FE0F}"
    });
    let mut report = SanitizeReport::default();
    scrub_value(&mut value, Invisible::Strip, &mut report);
    assert_eq!(
        value,
        serde_json::json!({"name": ["xy", 1, {"k": ""}], "ok": "❤\u{FE0F}"})
    );
    assert_eq!(report.to_string(), "bidi=1 tags=1 zero_width=1");
    let mut out = br#"{"a":1}"#.to_vec();
    let start = out.len();
    out.extend_from_slice("{\"d\":\"x\u{202E}y\"}".as_bytes());
    scrub_json_tail(&mut out, start, Invisible::Escape);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"{"a":1}{"d":"x[U+202E]y"}"#
    );
}

#[test]
fn schemes() {
    let p = SanitizePolicy::default();
    for ok in ["https://x", "HTTP://x", "file:///etc", "git://r"] {
        assert!(p.allows_link(ok), "{ok}");
    }
    for bad in [
        "javascript:alert(1)",
        "JavaScript:x",
        "vbscript:x",
        "data:text/html,x",
        "java\tscript:x",
        " https://x",
        "no-scheme",
        "1http://x",
        "custom://x",
    ] {
        assert!(!p.allows_link(bad), "{bad}");
    }
    assert!(
        !SanitizePolicy::default()
            .allow_link_scheme("javascript")
            .allows_link("javascript:x")
    );
    assert!(p.allows_icon("https://x/i.png"));
    assert!(p.allows_icon("data:image/png;base64,AAAA"));
    assert!(!p.allows_icon("data:text/html;base64,AAAA"));
    assert!(!p.allows_icon("http://x/i.png"));
    assert!(
        p.clone()
            .allow_http_icons(true)
            .allows_icon("http://x/i.png")
    );
    assert!(!p.allows_icon("javascript:x"));
}

#[test]
fn magic_numbers() {
    assert!(check_magic("image/png", b"\x89PNG\r\n\x1a\nrest").is_ok());
    assert!(check_magic("image/png", b"GIF89a").is_err());
    assert!(check_magic("image/webp", b"RIFF\0\0\0\0WEBPVP8 ").is_ok());
    assert!(check_magic("audio/wav", b"RIFF\0\0\0\0WEBPVP8 ").is_err());
    assert!(check_magic("audio/mpeg", b"\xff\xfb\x90").is_ok());
    assert!(check_magic("audio/mpeg", b"ID3\x04").is_ok());
    assert!(check_magic("audio/ogg", b"OggS\0").is_ok());
    assert!(check_magic("image/x-unknown", b"anything").is_ok());
}
