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
//!    Then, in every text that reaches a model (see **Invisible text**
//!    below), invisible characters are stripped.
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
//!
//! **Invisible text.** Characters a person cannot see but a model reads
//! (the "ASCII smuggling" and "Trojan Source" channels) are stripped from
//! every text the server sends towards a model: tool results (text blocks,
//! every string of `structuredContent`, embedded text resources, link
//! names, titles and descriptions), `prompts/get` descriptions and message
//! texts, `resources/read` text contents, the entries of the four `*/list`
//! results (names, titles, descriptions, schemas), the `instructions` of
//! `server/discover`, and error messages. Four classes:
//!
//! - bidirectional controls: U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
//!   U+061C;
//! - tag characters: U+E0000–U+E007F;
//! - zero-width and other invisible formatting: U+200B–U+200D, U+2060–U+2064,
//!   U+206A–U+206F, U+FEFF, U+180E, U+00AD, U+034F, U+115F, U+1160, U+17B4,
//!   U+17B5, U+3164, U+FFA0, U+FFF9–U+FFFB, U+1BCA0–U+1BCA3,
//!   U+1D173–U+1D17A; a ZWJ (U+200D) between two emoji stays (`👨‍👩‍👧`);
//! - variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF): one right after
//!   a visible base character stays (`❤️`, `#️⃣`; a U+E0100–U+E01EF one only
//!   after a CJK ideograph), a run of two or more is removed whole (such a
//!   run carries hidden bytes), and so is one after nothing visible.
//!
//! With [`SanitizePolicy::escape_invisible`] each such character becomes
//! the visible text `[U+XXXX]` instead, and the tool, prompt or resource
//! result is flagged with `_meta` [`INVISIBLE_FLAG_KEY`]. What was removed
//! is counted in a [`SanitizeReport`] that goes to the audit log.

use std::borrow::Cow;
use std::fmt::Write as _;

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;
use toolwire_protocol::{
    CallToolResult, ContentBlock, EmbeddedResource, ErrorObject, Icon, JsonObject, MediaContent,
    Meta, ResourceContents, ResourceLink,
};

/// The `_meta` key that flags a result whose invisible characters were
/// escaped ([`SanitizePolicy::escape_invisible`]): its value counts them,
/// `{"escaped": 3, "bidi": 1, "tags": 2, "zeroWidth": 0, "variationSelectors": 0}`.
pub const INVISIBLE_FLAG_KEY: &str = "toolwire/invisibleText";

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
    invisible: Invisible,
}

/// What is done with invisible characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Invisible {
    /// Removed (the default).
    #[default]
    Strip,
    /// Replaced by `[U+XXXX]`, and the result flagged.
    Escape,
    /// Left alone.
    Keep,
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
            invisible: Invisible::Strip,
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
            invisible: Invisible::Keep,
        }
    }

    /// Strip terminal escapes and control characters from text (default on).
    pub fn strip_control(mut self, on: bool) -> Self {
        self.strip_control = on;
        self
    }

    /// Strip invisible characters (bidi controls, tag characters, zero-width
    /// characters, runs of variation selectors) from every text that reaches
    /// a model (default on). `false` leaves them (loosens a default).
    pub fn strip_invisible(mut self, on: bool) -> Self {
        self.invisible = if on {
            Invisible::Strip
        } else {
            Invisible::Keep
        };
        self
    }

    /// Escape invisible characters instead of stripping them: each becomes
    /// the visible text `[U+XXXX]`, and a tool, prompt or resource result
    /// that had any carries `_meta` [`INVISIBLE_FLAG_KEY`] with their
    /// counts. `false` goes back to stripping.
    ///
    /// ```
    /// use toolwire_server::SanitizePolicy;
    /// let (text, report) = SanitizePolicy::default()
    ///     .escape_invisible(true)
    ///     .clean_text("abc\u{202E}def");
    /// assert_eq!(text, "abc[U+202E]def");
    /// assert_eq!(report.bidi, 1);
    /// ```
    pub fn escape_invisible(mut self, on: bool) -> Self {
        self.invisible = if on {
            Invisible::Escape
        } else {
            Invisible::Strip
        };
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

    /// The invisible-text rule, for the listing writer.
    pub(crate) fn invisible_mode(&self) -> Invisible {
        self.invisible
    }

    /// Applies the text rules (control characters, when on, then invisible
    /// characters) to one text, as a tool result's text block gets them;
    /// borrows when nothing changes.
    pub fn clean_text<'a>(&self, text: &'a str) -> (Cow<'a, str>, SanitizeReport) {
        let mut report = SanitizeReport::default();
        let text = match self.strip_control {
            true => strip_control_counted(text, &mut report.controls),
            false => Cow::Borrowed(text),
        };
        let text = match text {
            Cow::Borrowed(text) => scrub_invisible(text, self.invisible, &mut report),
            Cow::Owned(text) => match scrub_invisible(&text, self.invisible, &mut report) {
                Cow::Borrowed(_) => Cow::Owned(text),
                Cow::Owned(clean) => Cow::Owned(clean),
            },
        };
        (text, report)
    }

    /// Applies every rule to `result` of tool `tool` as the server does
    /// (without knowing the server's own resource schemes) and says what
    /// was removed.
    pub fn sanitize_result(&self, tool: &str, result: &mut CallToolResult) -> SanitizeReport {
        self.apply(tool, result, &|_| false)
    }

    /// Applies every rule to `result` of tool `tool`. `own_scheme` tells
    /// whether a scheme belongs to one of the server's own resources.
    pub(crate) fn apply(
        &self,
        tool: &str,
        result: &mut CallToolResult,
        own_scheme: &dyn Fn(&str) -> bool,
    ) -> SanitizeReport {
        let mut report = SanitizeReport::default();
        self.apply_rules(tool, result, own_scheme, &mut report);
        if let Some(flag) = self.flag(&report) {
            result
                .meta
                .get_or_insert_with(Meta::new)
                .0
                .insert(INVISIBLE_FLAG_KEY.to_owned(), flag);
        }
        report
    }

    fn apply_rules(
        &self,
        tool: &str,
        result: &mut CallToolResult,
        own_scheme: &dyn Fn(&str) -> bool,
        report: &mut SanitizeReport,
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
            self.sanitize_block(block, own_scheme, report);
        }
        if let Some(structured) = &mut result.structured_content {
            scrub_value(structured, self.invisible, report);
        }
        if let Some(cap) = self.max_result_bytes {
            cap_content(&mut result.content, cap);
        }
    }

    fn sanitize_block(
        &self,
        block: &mut ContentBlock,
        own_scheme: &dyn Fn(&str) -> bool,
        report: &mut SanitizeReport,
    ) {
        let kind = match block {
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            _ => "",
        };
        match block {
            ContentBlock::Text(text) => self.clean(&mut text.text, report),
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
                self.clean_link(link, report);
            }
            ContentBlock::Resource(embedded) => {
                if let Err(reason) = self.check_embedded(embedded, own_scheme, report) {
                    *block = withheld("embedded resource", &reason);
                }
            }
        }
    }

    fn clean(&self, text: &mut String, report: &mut SanitizeReport) {
        if self.strip_control {
            if let Cow::Owned(clean) = strip_control_counted(text, &mut report.controls) {
                *text = clean;
            }
        }
        scrub_string(text, self.invisible, report);
    }

    /// The invisible-text rule alone on one text; borrows when nothing changes.
    pub(crate) fn clean_text_invisible<'a>(&self, text: &'a str) -> (Cow<'a, str>, SanitizeReport) {
        let mut report = SanitizeReport::default();
        let text = scrub_invisible(text, self.invisible, &mut report);
        (text, report)
    }

    /// The invisible-text rule on one string (what every text that is not
    /// a tool result's text gets).
    pub(crate) fn clean_invisible(&self, text: &mut String, report: &mut SanitizeReport) {
        scrub_string(text, self.invisible, report);
    }

    /// The invisible-text rule on every string of `value` (keys included).
    pub(crate) fn clean_json(&self, value: &mut Value, report: &mut SanitizeReport) {
        scrub_value(value, self.invisible, report);
    }

    /// The invisible-text rule on the texts of content blocks that are not
    /// a tool result (prompt messages): text, embedded text resources, link
    /// names, titles and descriptions.
    pub(crate) fn clean_content(&self, blocks: &mut [ContentBlock], report: &mut SanitizeReport) {
        for block in blocks {
            match block {
                ContentBlock::Text(text) => self.clean_invisible(&mut text.text, report),
                ContentBlock::ResourceLink(link) => {
                    for field in [&mut link.title, &mut link.description]
                        .into_iter()
                        .flatten()
                    {
                        self.clean_invisible(field, report);
                    }
                    self.clean_invisible(&mut link.name, report);
                }
                ContentBlock::Resource(embedded) => {
                    self.clean_contents(std::slice::from_mut(&mut embedded.resource), report)
                }
                ContentBlock::Image(_) | ContentBlock::Audio(_) => {}
            }
        }
    }

    /// The invisible-text rule on resource contents (`resources/read`).
    pub(crate) fn clean_contents(
        &self,
        contents: &mut [ResourceContents],
        report: &mut SanitizeReport,
    ) {
        for contents in contents {
            if let ResourceContents::Text(text) = contents {
                self.clean_invisible(&mut text.text, report);
            }
        }
    }

    /// The invisible-text rule on an error's message and the strings of its data.
    pub(crate) fn clean_error(&self, error: &mut ErrorObject) {
        let mut report = SanitizeReport::default();
        self.clean_invisible(&mut error.message, &mut report);
        if let Some(data) = &mut error.data {
            self.clean_json(data, &mut report);
        }
    }

    /// The `_meta` flag of a result whose invisible characters were escaped.
    pub(crate) fn flag(&self, report: &SanitizeReport) -> Option<Value> {
        (self.invisible == Invisible::Escape && report.invisible() > 0).then(|| {
            serde_json::json!({
                "escaped": report.invisible(),
                "bidi": report.bidi,
                "tags": report.tags,
                "zeroWidth": report.zero_width,
                "variationSelectors": report.variation_selectors,
            })
        })
    }

    /// Flags a finished result object (`_meta`) when its invisible
    /// characters were escaped.
    pub(crate) fn flag_object(&self, object: &mut JsonObject, report: &SanitizeReport) {
        if let Some(flag) = self.flag(report) {
            let meta = object
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(meta) = meta {
                meta.insert(INVISIBLE_FLAG_KEY.to_owned(), flag);
            }
        }
    }

    fn clean_link(&self, link: &mut ResourceLink, report: &mut SanitizeReport) {
        for field in [&mut link.title, &mut link.description]
            .into_iter()
            .flatten()
        {
            self.clean(field, report);
        }
        self.clean(&mut link.name, report);
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
        report: &mut SanitizeReport,
    ) -> Result<(), String> {
        if self.check_uris {
            self.link_verdict(embedded.resource.uri(), own_scheme)?;
        }
        match &mut embedded.resource {
            ResourceContents::Text(text) => self.clean(&mut text.text, report),
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
fn strip_control_counted<'a>(text: &'a str, removed: &mut usize) -> Cow<'a, str> {
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
fn scrub_invisible<'a>(
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
fn scrub_string(text: &mut String, mode: Invisible, report: &mut SanitizeReport) {
    if let Cow::Owned(clean) = scrub_invisible(text, mode, report) {
        *text = clean;
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
}
