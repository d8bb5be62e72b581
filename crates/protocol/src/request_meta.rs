//! The `_meta` members MCP defines for every request, decoded in one pass
//! over `_meta`'s text.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::{
    ClientCapabilities, Implementation, LATEST_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSIONS,
    LoggingLevel, ProgressToken, keys, text_memo,
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
    pub fn read(text: &RawValue) -> Option<RequestMeta> {
        let mut deserializer = serde_json::Deserializer::from_str(text.get());
        deserializer.deserialize_map(MetaVisitor).ok()
    }
}

/// Decodes the members [`RequestMeta`] has, skipping the others.
struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = RequestMeta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a _meta object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RequestMeta, A::Error> {
        let mut meta = RequestMeta::default();
        while let Some(field) = map.next_key_seed(FieldSeed)? {
            match field {
                Field::ProtocolVersion => {
                    let version = map.next_value_seed(VersionSeed)?;
                    once(&mut meta.protocol_version, version)?;
                }
                Field::ClientCapabilities => {
                    let text: &RawValue = map.next_value()?;
                    let capabilities =
                        text_memo::client_capabilities(text.get()).map_err(de::Error::custom)?;
                    once(&mut meta.client_capabilities, capabilities)?;
                }
                Field::ClientInfo => {
                    let text: &RawValue = map.next_value()?;
                    let info = text_memo::client_info(text.get()).map_err(de::Error::custom)?;
                    once(&mut meta.client_info, info)?;
                }
                Field::ProgressToken => once(&mut meta.progress_token, map.next_value()?)?,
                Field::LogLevel => once(&mut meta.log_level, map.next_value()?)?,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(meta)
    }
}

/// Fills `slot`; a second value is an error (which of duplicate members
/// counts is for the member-by-member reading to settle).
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => Err(E::custom("duplicate _meta member")),
    }
}

/// A `_meta` member's name, as the field it fills.
enum Field {
    ProtocolVersion,
    ClientCapabilities,
    ClientInfo,
    ProgressToken,
    LogLevel,
    Other,
}

/// Reads a member name as a [`Field`] without copying it.
struct FieldSeed;

impl<'de> de::DeserializeSeed<'de> for FieldSeed {
    type Value = Field;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Field, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for FieldSeed {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
        Ok(match name {
            keys::PROTOCOL_VERSION => Field::ProtocolVersion,
            keys::CLIENT_CAPABILITIES => Field::ClientCapabilities,
            keys::CLIENT_INFO => Field::ClientInfo,
            keys::PROGRESS_TOKEN => Field::ProgressToken,
            keys::LOG_LEVEL => Field::LogLevel,
            _ => Field::Other,
        })
    }
}

/// Reads the protocol version, borrowing a revision this crate knows.
struct VersionSeed;

impl<'de> de::DeserializeSeed<'de> for VersionSeed {
    type Value = Cow<'static, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for VersionSeed {
    type Value = Cow<'static, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a protocol version string")
    }

    fn visit_str<E: de::Error>(self, version: &str) -> Result<Self::Value, E> {
        Ok(revision_text(version))
    }
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
