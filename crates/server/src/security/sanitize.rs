//! Output sanitising for `tools/call` results, applied in one place (where
//! the dispatcher finishes a tool result), on by default.
//!
//! The rules, in the order they run:
//!
//! 1. **Control characters.** In text blocks, embedded text resources, and
//!    the title and description of resource links, terminal escape
//!    sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ST`, DCS, SOS, PM,
//!    APC, two- and three-byte `ESC` sequences, and their 8-bit C1 forms)
//!    are removed whole, then every other control character except `\n`
//!    and `\t` (so `\r`, `BEL`, `DEL` and C1 controls too).
//! 2. **Media.** An image or audio block's `data` must be valid base64 and
//!    its `mimeType` must be `image/*` or `audio/*` to match the block; for
//!    PNG, JPEG, GIF, WebP, WAV, MP3 and Ogg the decoded bytes must start
//!    with that format's magic number. Other types pass after the base64
//!    check. Embedded binary resources get the same checks when their
//!    `mimeType` is one of those formats. A block that fails is replaced by
//!    a text block saying it was withheld and why (the rest of the result
//!    is still useful, so the call does not fail).
//! 3. **URIs.** A resource link's or embedded resource's `uri` must have an
//!    allowed scheme: `https`, `http`, `file`, `git`, the schemes of the
//!    server's own resources and templates, and any added with
//!    [`SanitizePolicy::allow_link_scheme`]; `javascript`, `vbscript`,
//!    `data` and `blob` are never allowed. A link that fails is replaced by
//!    a text block. An icon's `src` must be `https:` (or `http:` when
//!    allowed) or a `data:image/…` URI; other icons are dropped.
//! 4. **Size.** Text, media data and embedded contents count towards a cap
//!    (default 1 MiB). The text block where the cap is reached is cut at a
//!    character boundary and ends with `\n[... truncated N bytes by toolwire]`,
//!    N counting every byte dropped; later blocks are dropped. A
//!    `structuredContent` larger than the cap cannot be cut (it must match
//!    the output schema), so such a result is replaced by a tool execution
//!    error.

use std::borrow::Cow;

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use toolwire_protocol::{
    CallToolResult, ContentBlock, EmbeddedResource, Icon, MediaContent, ResourceContents,
    ResourceLink,
};

/// Default cap on a tool result's content: 1 MiB.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1024 * 1024;

/// Schemes never allowed in a resource link, whatever the configuration.
const NEVER_SCHEMES: &[&str] = &["javascript", "vbscript", "data", "blob"];

/// Schemes allowed in resource links by default.
const DEFAULT_LINK_SCHEMES: &[&str] = &["https", "http", "file", "git"];

/// Standard base64 with or without padding, no whitespace.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What the server does to tool results before they leave. Every rule is
/// on by default; turning one off is an explicit call.
///
/// ```
/// use toolwire_server::SanitizePolicy;
/// let policy = SanitizePolicy::default()
///     .max_result_bytes(Some(64 * 1024))
///     .allow_link_scheme("s3");
/// assert!(policy.allows_link("s3://bucket/key"));
/// assert!(!policy.allows_link("javascript:alert(1)"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SanitizePolicy {
    strip_control: bool,
    check_media: bool,
    check_uris: bool,
    max_result_bytes: Option<usize>,
    link_schemes: Vec<String>,
    http_icons: bool,
}

impl Default for SanitizePolicy {
    fn default() -> Self {
        SanitizePolicy {
            strip_control: true,
            check_media: true,
            check_uris: true,
            max_result_bytes: Some(DEFAULT_MAX_RESULT_BYTES),
            link_schemes: DEFAULT_LINK_SCHEMES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            http_icons: false,
        }
    }
}

impl SanitizePolicy {
    /// Every rule off: results leave exactly as the handler made them.
    pub fn off() -> Self {
        SanitizePolicy {
            strip_control: false,
            check_media: false,
            check_uris: false,
            max_result_bytes: None,
            link_schemes: Vec::new(),
            http_icons: true,
        }
    }

    /// Strip terminal escapes and control characters from text (default on).
    pub fn strip_control(mut self, on: bool) -> Self {
        self.strip_control = on;
        self
    }

    /// Check image, audio and embedded binary data (default on).
    pub fn check_media(mut self, on: bool) -> Self {
        self.check_media = on;
        self
    }

    /// Check the schemes of resource links and icons (default on).
    pub fn check_uris(mut self, on: bool) -> Self {
        self.check_uris = on;
        self
    }

    /// Cap on a result's content in bytes (default 1 MiB); `None` for no cap.
    pub fn max_result_bytes(mut self, cap: Option<usize>) -> Self {
        self.max_result_bytes = cap;
        self
    }

    /// Allows another scheme in resource links (`javascript`, `vbscript`,
    /// `data` and `blob` stay refused).
    pub fn allow_link_scheme(mut self, scheme: impl Into<String>) -> Self {
        self.link_schemes.push(scheme.into().to_ascii_lowercase());
        self
    }

    /// Allows `http:` icons (default: only `https:` and `data:image/…`).
    pub fn allow_http_icons(mut self, on: bool) -> Self {
        self.http_icons = on;
        self
    }

    /// The size cap.
    pub fn get_max_result_bytes(&self) -> Option<usize> {
        self.max_result_bytes
    }

    /// True when a resource link to `uri` passes (ignoring the server's own schemes).
    pub fn allows_link(&self, uri: &str) -> bool {
        self.link_verdict(uri, &|_| false).is_ok()
    }

    fn link_verdict(&self, uri: &str, own_scheme: &dyn Fn(&str) -> bool) -> Result<(), String> {
        let Some(scheme) = scheme_of(uri) else {
            return Err("its URI has no valid scheme".to_owned());
        };
        let scheme = scheme.to_ascii_lowercase();
        if NEVER_SCHEMES.contains(&scheme.as_str()) {
            return Err(format!("the {scheme}: scheme is not allowed"));
        }
        if self.link_schemes.contains(&scheme) || own_scheme(&scheme) {
            Ok(())
        } else {
            Err(format!("the {scheme}: scheme is not allowed"))
        }
    }

    fn allows_icon(&self, src: &str) -> bool {
        match scheme_of(src).map(str::to_ascii_lowercase).as_deref() {
            Some("https") => true,
            Some("http") => self.http_icons,
            Some("data") => src[5..]
                .get(..6)
                .is_some_and(|t| t.eq_ignore_ascii_case("image/")),
            _ => false,
        }
    }

    /// Applies every rule to `result` of tool `tool`. `own_scheme` tells
    /// whether a scheme belongs to one of the server's own resources.
    pub(crate) fn apply(
        &self,
        tool: &str,
        result: &mut CallToolResult,
        own_scheme: &dyn Fn(&str) -> bool,
    ) {
        if let (Some(cap), Some(structured)) = (self.max_result_bytes, &result.structured_content) {
            let size = serde_json::to_vec(structured).map_or(0, |v| v.len());
            if size > cap {
                tracing::warn!(
                    tool,
                    size,
                    cap,
                    "structuredContent over the result cap; result withheld"
                );
                *result = CallToolResult::error(format!(
                    "The result of tool {tool} was withheld: its structuredContent is {size} bytes, \
                     more than the limit of {cap} bytes. Ask for less data, for example with a narrower query."
                ));
                return;
            }
        }
        for block in &mut result.content {
            self.sanitize_block(block, own_scheme);
        }
        if let Some(cap) = self.max_result_bytes {
            cap_content(&mut result.content, cap);
        }
    }

    fn sanitize_block(&self, block: &mut ContentBlock, own_scheme: &dyn Fn(&str) -> bool) {
        let kind = match block {
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            _ => "",
        };
        match block {
            ContentBlock::Text(text) => self.clean(&mut text.text),
            ContentBlock::Image(media) | ContentBlock::Audio(media) => {
                if self.check_media {
                    if let Err(reason) = check_media(kind, media) {
                        *block = withheld(kind, &reason);
                    }
                }
            }
            ContentBlock::ResourceLink(link) => {
                if self.check_uris {
                    if let Err(reason) = self.link_verdict(&link.uri, own_scheme) {
                        *block = withheld("resource link", &reason);
                        return;
                    }
                }
                self.clean_link(link);
            }
            ContentBlock::Resource(embedded) => {
                if let Err(reason) = self.check_embedded(embedded, own_scheme) {
                    *block = withheld("embedded resource", &reason);
                }
            }
        }
    }

    fn clean(&self, text: &mut String) {
        if self.strip_control {
            if let Cow::Owned(clean) = strip_control(text) {
                *text = clean;
            }
        }
    }

    fn clean_link(&self, link: &mut ResourceLink) {
        for field in [&mut link.title, &mut link.description]
            .into_iter()
            .flatten()
        {
            self.clean(field);
        }
        self.clean(&mut link.name);
        if self.check_uris {
            if let Some(icons) = &mut link.icons {
                icons.retain(|icon: &Icon| self.allows_icon(&icon.src));
                if icons.is_empty() {
                    link.icons = None;
                }
            }
        }
    }

    fn check_embedded(
        &self,
        embedded: &mut EmbeddedResource,
        own_scheme: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        if self.check_uris {
            self.link_verdict(embedded.resource.uri(), own_scheme)?;
        }
        match &mut embedded.resource {
            ResourceContents::Text(text) => self.clean(&mut text.text),
            ResourceContents::Blob(blob) if self.check_media => {
                let bytes = BASE64
                    .decode(&blob.blob)
                    .map_err(|_| "its blob is not valid base64".to_owned())?;
                if let Some(mime) = &blob.mime_type {
                    check_magic(&essence(mime), &bytes)?;
                }
            }
            ResourceContents::Blob(_) => {}
        }
        Ok(())
    }
}

/// A text block that stands where a withheld block was.
fn withheld(kind: &str, reason: &str) -> ContentBlock {
    ContentBlock::text(format!("[{kind} withheld by toolwire: {reason}]"))
}

/// The scheme of `uri` per RFC 3986 (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`).
fn scheme_of(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// The MIME type without parameters, lowercased.
fn essence(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn check_media(kind: &str, media: &MediaContent) -> Result<(), String> {
    let mime = essence(&media.mime_type);
    if !mime.starts_with(&format!("{kind}/")) {
        return Err(format!(
            "its mimeType {:?} is not an {kind} type",
            media.mime_type
        ));
    }
    let bytes = BASE64
        .decode(&media.data)
        .map_err(|_| "its data is not valid base64".to_owned())?;
    check_magic(&mime, &bytes)
}

/// For the formats known here, checks that `bytes` start with the format's
/// magic number; other types pass.
fn check_magic(mime: &str, bytes: &[u8]) -> Result<(), String> {
    let riff = |form: &[u8]| bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == form;
    let (format, ok) = match mime {
        "image/png" => ("PNG", bytes.starts_with(b"\x89PNG\r\n\x1a\n")),
        "image/jpeg" | "image/jpg" | "image/pjpeg" => ("JPEG", bytes.starts_with(b"\xff\xd8\xff")),
        "image/gif" => (
            "GIF",
            bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        ),
        "image/webp" => ("WebP", riff(b"WEBP")),
        "audio/wav" | "audio/wave" | "audio/x-wav" | "audio/vnd.wave" => ("WAV", riff(b"WAVE")),
        "audio/mpeg" | "audio/mp3" | "audio/mpeg3" | "audio/x-mpeg-3" => (
            "MP3",
            bytes.starts_with(b"ID3")
                || (bytes.len() >= 2 && bytes[0] == 0xff && bytes[1] & 0xe0 == 0xe0),
        ),
        "audio/ogg" | "audio/opus" | "audio/vorbis" | "application/ogg" => {
            ("Ogg", bytes.starts_with(b"OggS"))
        }
        _ => return Ok(()),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "its data is not {format} data although its mimeType is {mime}"
        ))
    }
}

/// Bytes a block counts towards the size cap.
fn block_size(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(t) => t.text.len(),
        ContentBlock::Image(m) | ContentBlock::Audio(m) => m.data.len(),
        ContentBlock::ResourceLink(_) => 0,
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::Text(t) => t.text.len(),
            ResourceContents::Blob(b) => b.blob.len(),
        },
    }
}

/// Cuts `content` to `cap` bytes, marking the cut.
fn cap_content(content: &mut Vec<ContentBlock>, cap: usize) {
    let mut used = 0usize;
    for index in 0..content.len() {
        let size = block_size(&content[index]);
        if used + size <= cap {
            used += size;
            continue;
        }
        let room = cap - used;
        let dropped: usize = content[index..].iter().map(block_size).sum::<usize>();
        match &mut content[index] {
            ContentBlock::Text(text) => {
                let mut end = room.min(text.text.len());
                while !text.text.is_char_boundary(end) {
                    end -= 1;
                }
                let dropped = dropped - end;
                text.text.truncate(end);
                text.text
                    .push_str(&format!("\n[... truncated {dropped} bytes by toolwire]"));
                content.truncate(index + 1);
            }
            _ => {
                content.truncate(index);
                content.push(ContentBlock::text(format!(
                    "[... truncated {dropped} bytes by toolwire]"
                )));
            }
        }
        return;
    }
}

/// Removes terminal escape sequences and control characters other than
/// `\n` and `\t`; borrows when there is nothing to remove.
pub fn strip_control(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
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
            '\u{1b}' => skip_escape(after),
            '\u{9b}' => skip_csi(after),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(after),
            c if c.is_control() => after,
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

#[cfg(test)]
mod tests {
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
}
