//! The few members of a request's params read before its handler runs
//! (`_meta`, `name` or `uri`), read from their text without building a map
//! of the params.

use serde_json::value::RawValue;
use toolwire_protocol::{Params, keys};

/// The value of a member when it is a JSON string.
pub(crate) fn string(raw: Option<&RawValue>) -> Option<String> {
    raw.filter(|r| r.get().starts_with('"'))
        .and_then(|r| serde_json::from_str(r.get()).ok())
}

/// The string value of the params' member `name`.
pub(crate) fn string_member(params: Option<&Params>, name: &str) -> Option<String> {
    string(params?.member(name).as_deref())
}

/// The `_meta` protocol version of a request's params, when it is a string.
pub(crate) fn protocol_version(params: Option<&Params>) -> Option<String> {
    let meta = params?.meta()??;
    string(meta.get(keys::PROTOCOL_VERSION))
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
    fn the_last_of_duplicate_members_counts() {
        let p = params(r#"{"name": "echo", "name": "bump"}"#);
        assert_eq!(string_member(Some(&p), "name").as_deref(), Some("bump"));
    }
}
