//! The `_meta` members MCP defines for every request, decoded in one pass
//! over `_meta`'s text.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::{ClientCapabilities, Implementation, LoggingLevel, ProgressToken, keys};

/// The members of a request's `_meta` that MCP defines, decoded (each
/// `None` when absent). Read by [`RequestMeta::read`], or through
/// [`crate::Params::request_meta`], which reads it once per request.
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
    pub protocol_version: Option<String>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub client_capabilities: Option<ClientCapabilities>,
    /// `io.modelcontextprotocol/clientInfo`.
    pub client_info: Option<Implementation>,
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
                Field::ProtocolVersion => once(&mut meta.protocol_version, map.next_value()?)?,
                Field::ClientCapabilities => {
                    once(&mut meta.client_capabilities, map.next_value()?)?;
                }
                Field::ClientInfo => once(&mut meta.client_info, map.next_value()?)?,
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
                client_capabilities: Some(serde_json::from_value(capabilities).unwrap()),
                client_info: Some(Implementation::new("c", "1")),
                progress_token: None,
                log_level: Some(LoggingLevel::Debug),
            }
        );
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
