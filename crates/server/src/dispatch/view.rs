//! The few members of a request's params read before its handler runs
//! (`_meta`, `name` or `uri`), read from their text without building a map
//! of the params.

use std::borrow::Cow;

use serde_json::value::RawValue;
use toolwire_protocol::{Params, keys};

/// The value of a member when it is a JSON string: borrowed from the text
/// when it has no escapes, decoded otherwise.
pub(crate) fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    toolwire_protocol::string_value(raw?.get())
}

/// The string value of the params' member `name`.
pub(crate) fn string_member(params: Option<&Params>, name: &str) -> Option<String> {
    string(params?.member(name).as_deref()).map(Cow::into_owned)
}

/// Calls `f` with the string value of the params' member `name` (`None`
/// when it is absent or not a string), copied only when it has escapes.
pub(crate) fn with_string_member<R>(
    params: Option<&Params>,
    name: &str,
    f: impl FnOnce(Option<&str>) -> R,
) -> R {
    let member = params.and_then(|p| p.member(name));
    f(string(member.as_deref()).as_deref())
}

/// The `_meta` protocol version of a request's params when it is a string,
/// borrowed from the decoded `_meta` ([`Params::request_meta`], read once
/// per request whoever asks first), else from its members' text.
pub(crate) fn protocol_version_text(params: Option<&Params>) -> Option<Cow<'_, str>> {
    let params = params?;
    if let Some(meta) = params.request_meta() {
        return meta.protocol_version.as_deref().map(Cow::Borrowed);
    }
    string(params.meta()??.get(keys::PROTOCOL_VERSION))
}

/// The `_meta` protocol version of a request's params, when it is a string.
#[cfg(test)]
pub(crate) fn protocol_version(params: Option<&Params>) -> Option<String> {
    protocol_version_text(params).map(Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(text: &str) -> Params {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn members_are_read_from_the_text() {
        let p = params(
            r#"{"name": "echo", "arguments": {"deep": [1, {"x": null}]},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 7}}"#,
        );
        assert_eq!(string_member(Some(&p), "name").as_deref(), Some("echo"));
        assert_eq!(string_member(Some(&p), "uri"), None);
        assert_eq!(protocol_version(Some(&p)).as_deref(), Some("2026-07-28"));
    }

    #[test]
    fn non_strings_and_non_objects_are_not_read() {
        let p = params(r#"{"_meta": null, "name": 5}"#);
        assert_eq!(string_member(Some(&p), "name"), None);
        assert_eq!(protocol_version(Some(&p)), None);
        let p = params(r#"{"_meta": {"io.modelcontextprotocol/protocolVersion": 1}}"#);
        assert_eq!(protocol_version(Some(&p)), None);
    }

    #[test]
    fn strings_with_escapes_are_decoded() {
        let p = params(r#"{"name": "a\"b\u0041", "uri": "plain"}"#);
        assert_eq!(string_member(Some(&p), "name").as_deref(), Some("a\"bA"));
        assert!(matches!(
            string(p.member("uri").as_deref()),
            Some(Cow::Borrowed("plain"))
        ));
        let p = params(
            r#"{"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/protocolVersion": "x"}}"#,
        );
        assert_eq!(protocol_version(Some(&p)).as_deref(), Some("x"));
    }

    #[test]
    fn the_last_of_duplicate_members_counts() {
        let p = params(r#"{"name": "echo", "name": "bump"}"#);
        assert_eq!(string_member(Some(&p), "name").as_deref(), Some("bump"));
    }
}
