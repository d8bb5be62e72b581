//! A request's params written out as the text of their members, `_meta`
//! included, without building a JSON tree first: what the client declares
//! on every request (its capabilities and info) is written once, when the
//! client is built, and copied into each request as text.

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::{RawValue, to_raw_value};
use toolwire_protocol::{
    ClientCapabilities, Implementation, JsonObject, LoggingLevel, Params, RawObject, RequestId,
    keys,
};
use toolwire_telemetry::TraceHeaders;

/// The client's capabilities and info as JSON text.
#[derive(Debug)]
pub(crate) struct DeclaredTexts {
    capabilities: Box<RawValue>,
    info: Box<RawValue>,
}

impl DeclaredTexts {
    pub(crate) fn new(capabilities: &ClientCapabilities, info: &Implementation) -> Self {
        DeclaredTexts {
            capabilities: raw(capabilities),
            info: raw(info),
        }
    }
}

/// What one request's `_meta` holds.
pub(crate) struct RequestMeta<'a> {
    /// The caller's own members (`io.modelcontextprotocol/*` ones are left out).
    pub extra: &'a JsonObject,
    pub version: &'a str,
    /// Capabilities other than the client's, for this request only.
    pub capabilities: Option<&'a ClientCapabilities>,
    pub declared: &'a DeclaredTexts,
    pub progress_token: Option<&'a RequestId>,
    pub log_level: Option<LoggingLevel>,
    /// The trace context of the request's span, when telemetry is on.
    pub trace: Option<TraceHeaders>,
}

/// `params` (without any `_meta` of theirs) followed by `meta`.
pub(crate) fn params_with_meta(params: &JsonObject, meta: &RequestMeta<'_>) -> Params {
    let members = params
        .iter()
        .filter(|(key, _)| *key != "_meta")
        .map(|(key, value)| (Box::from(key.as_str()), raw(value)))
        .chain(std::iter::once((Box::from("_meta"), raw(meta))))
        .collect::<RawObject>();
    Params::from_raw_object(members)
}

impl Serialize for RequestMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let set_here = |key: &str| {
            key.starts_with("io.modelcontextprotocol/")
                || (key == keys::PROGRESS_TOKEN && self.progress_token.is_some())
                || ((key == keys::TRACEPARENT || key == keys::TRACESTATE) && self.trace.is_some())
        };
        for (key, value) in self.extra.iter().filter(|(key, _)| !set_here(key)) {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(keys::PROTOCOL_VERSION, self.version)?;
        match self.capabilities {
            Some(capabilities) => map.serialize_entry(keys::CLIENT_CAPABILITIES, capabilities)?,
            None => map.serialize_entry(keys::CLIENT_CAPABILITIES, &self.declared.capabilities)?,
        }
        map.serialize_entry(keys::CLIENT_INFO, &self.declared.info)?;
        if let Some(token) = self.progress_token {
            map.serialize_entry(keys::PROGRESS_TOKEN, token)?;
        }
        if let Some(level) = self.log_level {
            map.serialize_entry(keys::LOG_LEVEL, &level)?;
        }
        if let Some(trace) = &self.trace {
            map.serialize_entry(keys::TRACEPARENT, &trace.traceparent)?;
            if let Some(state) = &trace.tracestate {
                map.serialize_entry(keys::TRACESTATE, state)?;
            }
        }
        map.end()
    }
}

/// A value as JSON text (`null` should it not serialize: the types written
/// here always do).
fn raw(value: &(impl Serialize + ?Sized)) -> Box<RawValue> {
    to_raw_value(value).unwrap_or_else(|_| to_raw_value(&()).expect("null serializes"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn the_params_hold_the_callers_members_and_the_whole_meta() {
        let capabilities = ClientCapabilities::default();
        let info = Implementation::new("c", "1.0");
        let declared = DeclaredTexts::new(&capabilities, &info);
        let extra = object(json!({
            "traceparent": "00-ab-cd-01",
            "progressToken": "theirs",
            "io.modelcontextprotocol/protocolVersion": "1999-01-01",
        }));
        let id = RequestId::Number(7);
        let meta = RequestMeta {
            extra: &extra,
            version: "2026-07-28",
            capabilities: None,
            declared: &declared,
            progress_token: Some(&id),
            log_level: Some(LoggingLevel::Debug),
            trace: None,
        };
        let params =
            object(json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": {"x": 1}}));
        let written = serde_json::to_value(params_with_meta(&params, &meta)).unwrap();
        assert_eq!(
            written,
            json!({
                "name": "echo",
                "arguments": {"text": "hi"},
                "_meta": {
                    "traceparent": "00-ab-cd-01",
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1.0"},
                    "progressToken": 7,
                    "io.modelcontextprotocol/logLevel": "debug",
                }
            })
        );
    }

    #[test]
    fn capabilities_given_for_one_request_replace_the_clients() {
        let declared = DeclaredTexts::new(
            &ClientCapabilities::default(),
            &Implementation::new("c", "1.0"),
        );
        let mine: ClientCapabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
        let extra = JsonObject::new();
        let meta = RequestMeta {
            extra: &extra,
            version: "2026-07-28",
            capabilities: Some(&mine),
            declared: &declared,
            progress_token: None,
            log_level: None,
            trace: None,
        };
        let written = serde_json::to_value(params_with_meta(&JsonObject::new(), &meta)).unwrap();
        assert_eq!(
            written["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            json!({"elicitation": {}})
        );
        assert_eq!(written["_meta"].as_object().unwrap().len(), 3);
    }

    #[test]
    fn the_requests_own_trace_context_replaces_the_callers() {
        let declared = DeclaredTexts::new(
            &ClientCapabilities::default(),
            &Implementation::new("c", "1.0"),
        );
        let extra = object(json!({"traceparent": "00-ab-cd-01", "tracestate": "a=b", "k": 1}));
        let meta = RequestMeta {
            extra: &extra,
            version: "2026-07-28",
            capabilities: None,
            declared: &declared,
            progress_token: None,
            log_level: None,
            trace: Some(TraceHeaders {
                traceparent: "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01".into(),
                tracestate: None,
            }),
        };
        let written = serde_json::to_value(params_with_meta(&JsonObject::new(), &meta)).unwrap();
        let meta = written["_meta"].as_object().unwrap();
        assert_eq!(
            meta["traceparent"],
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
        );
        assert!(!meta.contains_key("tracestate"));
        assert_eq!(meta["k"], 1);
    }
}
