//! The `_meta` members MCP defines for every request, decoded in one pass
//! over `_meta`'s text.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::{
    ClientCapabilities, Implementation, LATEST_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSIONS,
    LoggingLevel, ProgressToken, checked_text, keys, text_memo,
};

/// The members of a request's `_meta` that MCP defines, decoded (each
/// `None` when absent). Read by [`RequestMeta::read`], or through
/// [`crate::Params::request_meta`], which reads it once per request.
///
/// The client's capabilities and info are shared: a thread decodes each
/// distinct text of them once and hands out the same value for it again
/// (clients send the same ones with every request). A revision this crate
/// knows is borrowed, not copied.
///
/// ```
/// use serde_json::value::RawValue;
/// use toolwire_protocol::RequestMeta;
/// let text: &RawValue = serde_json::from_str(
///     r#"{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 7, "x": [1]}"#,
/// ).unwrap();
/// let meta = RequestMeta::read(text).unwrap();
/// assert_eq!(meta.protocol_version.as_deref(), Some("2026-07-28"));
/// assert!(meta.progress_token.is_some() && meta.client_capabilities.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub protocol_version: Option<Cow<'static, str>>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub client_capabilities: Option<Arc<ClientCapabilities>>,
    /// `io.modelcontextprotocol/clientInfo`.
    pub client_info: Option<Arc<Implementation>>,
    /// `progressToken`.
    pub progress_token: Option<ProgressToken>,
    /// `io.modelcontextprotocol/logLevel`.
    pub log_level: Option<LoggingLevel>,
}

impl RequestMeta {
    /// The members decoded from `_meta`'s text; `None` when it is not an
    /// object, when one of these members does not decode as its type (the
    /// version: is not a string), or when one comes twice. A reader that
    /// must say what is wrong, or that wants the last of duplicate members,
    /// reads the members one by one instead ([`crate::RawObject`]).
    ///
    /// The text was checked when it was read, so the members are found by
    /// their delimiters; only the members decoded here are read as JSON.
    pub fn read(text: &RawValue) -> Option<RequestMeta> {
        let mut meta = RequestMeta::default();
        let mut members = checked_text::object_reader(text)?;
        while let Some(name) = members.next_name() {
            match &*name {
                keys::PROTOCOL_VERSION => {
                    let version = checked_text::string_value(members.next_value())?;
                    once(&mut meta.protocol_version, revision_text(&version))?;
                }
                keys::CLIENT_CAPABILITIES => {
                    let (capabilities, length) =
                        text_memo::client_capabilities(members.rest()).ok()?;
                    members.pass(length);
                    once(&mut meta.client_capabilities, capabilities)?;
                }
                keys::CLIENT_INFO => {
                    let (info, length) = text_memo::client_info(members.rest()).ok()?;
                    members.pass(length);
                    once(&mut meta.client_info, info)?;
                }
                keys::PROGRESS_TOKEN => {
                    let token = serde_json::from_str(members.next_value()).ok()?;
                    once(&mut meta.progress_token, token)?;
                }
                keys::LOG_LEVEL => {
                    let level = serde_json::from_str(members.next_value()).ok()?;
                    once(&mut meta.log_level, level)?;
                }
                _ => {
                    members.next_value();
                }
            }
        }
        Some(meta)
    }
}

/// Fills `slot`; a second value is refused (which of duplicate members
/// counts is for the member-by-member reading to settle).
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    slot.replace(value).is_none().then_some(())
}

/// `version`, borrowed from this crate's constants when it is a revision
/// the crate knows ([`LATEST_PROTOCOL_VERSION`],
/// [`LEGACY_PROTOCOL_VERSIONS`]), copied otherwise.
///
/// ```
/// use std::borrow::Cow;
/// use toolwire_protocol::revision_text;
/// assert!(matches!(revision_text("2025-11-25"), Cow::Borrowed("2025-11-25")));
/// assert!(matches!(revision_text("1999-01-01"), Cow::Owned(_)));
/// ```
pub fn revision_text(version: &str) -> Cow<'static, str> {
    let known = std::iter::once(LATEST_PROTOCOL_VERSION)
        .chain(LEGACY_PROTOCOL_VERSIONS.iter().copied())
        .find(|known| *known == version);
    match known {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(version.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<RequestMeta> {
        RequestMeta::read(&RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn members_are_decoded_and_others_skipped() {
        let meta = read(
            r#"{"io.modelcontextprotocol/protocolVersion": "2026-\u00307-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "roots": {}},
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
                "io.modelcontextprotocol/logLevel": "debug", "other": {"deep": [1]}}"#,
        )
        .unwrap();
        let capabilities = serde_json::json!({"elicitation": {"form": {}}, "roots": {}});
        assert_eq!(
            meta,
            RequestMeta {
                protocol_version: Some("2026-07-28".into()),
                client_capabilities: Some(Arc::new(serde_json::from_value(capabilities).unwrap())),
                client_info: Some(Arc::new(Implementation::new("c", "1"))),
                progress_token: None,
                log_level: Some(LoggingLevel::Debug),
            }
        );
        // A known revision is borrowed (even written with an escape), others copied.
        assert!(matches!(meta.protocol_version, Some(Cow::Borrowed(_))));
        let meta = read(r#"{"io.modelcontextprotocol/protocolVersion": "2099-01-01"}"#).unwrap();
        assert!(matches!(meta.protocol_version, Some(Cow::Owned(ref v)) if v == "2099-01-01"));
    }

    #[test]
    fn every_revision_a_peer_negotiates_is_borrowed_and_others_copied() {
        for version in ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"] {
            assert!(matches!(revision_text(version), Cow::Borrowed(v) if v == version));
        }
        assert!(matches!(revision_text("2099-01-01"), Cow::Owned(v) if v == "2099-01-01"));
    }

    #[test]
    fn what_does_not_decode_or_comes_twice_is_left_to_the_members() {
        for text in [
            "[1]",
            "null",
            r#"{"io.modelcontextprotocol/protocolVersion": 1}"#,
            r#"{"io.modelcontextprotocol/protocolVersion": null}"#,
            r#"{"io.modelcontextprotocol/clientCapabilities": "all"}"#,
            r#"{"progressToken": null}"#,
            r#"{"io.modelcontextprotocol/logLevel": "loud"}"#,
            r#"{"progressToken": 1, "progressToken": 2}"#,
        ] {
            assert!(read(text).is_none(), "{text}");
        }
        assert!(read(r#"{"x": 1, "x": 2}"#).is_some());
    }
}
