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

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;
use toolwire_protocol::{
    CallToolResult, ContentBlock, EmbeddedResource, ErrorObject, Icon, JsonObject, MediaContent,
    Meta, ResourceContents, ResourceLink,
};

mod control;
mod invisible;
#[cfg(test)]
mod tests;

pub use control::strip_control;
use control::strip_control_counted;
pub use invisible::SanitizeReport;
use invisible::{scrub_invisible, scrub_string};
pub(crate) use invisible::{scrub_json_tail, scrub_value};

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
    /// a model or a user (default on): results, prompts, resource texts,
    /// descriptions, errors, completions, input requests, progress and log
    /// notifications. Kept: the joiners of emoji sequences, and ZWNJ/ZWJ
    /// inside words of the scripts that spell with them (Persian, Indic).
    /// `false` leaves them all (loosens a default).
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
