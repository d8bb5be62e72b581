//! Multi round-trip requests: a handler asks the client for input, and the
//! dispatcher seals what it needs to continue into `requestState`.
//!
//! The sealed payload carries a format version, the principal, an expiry, the
//! method and a digest of the request's salient parameters, the answers so
//! far, the keys asked in the last round, and the handler's own state.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolwire_protocol::{
    ClientCapabilities, CreateMessageRequestParams, ElicitationCapability, ErrorObject,
    InputRequest, JsonObject, SamplingCapability,
};

use crate::context::seal::Sealer;

const FORMAT_VERSION: u32 = 1;

/// A handler's request for more input: named input requests and optional state.
///
/// ```
/// use toolwire_server::InputRequired;
/// let ask = InputRequired::new()
///     .elicit_form("confirm", "Delete the file?", serde_json::json!({
///         "type": "object",
///         "properties": {"ok": {"type": "boolean"}},
///         "required": ["ok"]
///     }))
///     .with_state(&"step-1");
/// assert_eq!(ask.keys().collect::<Vec<_>>(), ["confirm"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequired {
    pub(crate) requests: JsonObject,
    pub(crate) state: Option<Value>,
}

impl InputRequired {
    /// No requests yet.
    pub fn new() -> Self {
        InputRequired::default()
    }

    /// Asks the user to fill in a form (`elicitation/create`, form mode).
    pub fn elicit_form(
        self,
        key: impl Into<String>,
        message: impl Into<String>,
        requested_schema: Value,
    ) -> Self {
        let params =
            json!({"mode": "form", "message": message.into(), "requestedSchema": requested_schema});
        self.request(key, "elicitation/create", Some(params))
    }

    /// Asks the user to visit a URL (`elicitation/create`, URL mode).
    pub fn elicit_url(
        self,
        key: impl Into<String>,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        let params = json!({"mode": "url", "message": message.into(), "url": url.into()});
        self.request(key, "elicitation/create", Some(params))
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub fn sample(self, key: impl Into<String>, params: CreateMessageRequestParams) -> Self {
        let params = serde_json::to_value(params).expect("sampling params serialize");
        self.request(key, "sampling/createMessage", Some(params))
    }

    /// Asks for the client's roots (`roots/list`).
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.request(key, "roots/list", None)
    }

    /// Asks `request` as it is, e.g. one passed on from another server.
    ///
    /// ```
    /// use toolwire_server::InputRequired;
    /// use toolwire_server::protocol::InputRequest;
    /// let ask = InputRequired::new().ask("roots", &InputRequest::ListRoots(None));
    /// assert_eq!(ask.keys().collect::<Vec<_>>(), ["roots"]);
    /// ```
    pub fn ask(mut self, key: impl Into<String>, request: &InputRequest) -> Self {
        let request = serde_json::to_value(request).expect("input requests serialize");
        self.requests.insert(key.into(), request);
        self
    }

    /// Keeps the handler's own state for the next round (sealed, never readable by the client).
    pub fn with_state<T: Serialize + ?Sized>(mut self, state: &T) -> Self {
        self.state = Some(serde_json::to_value(state).expect("state serializes"));
        self
    }

    /// The keys of the requests, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.requests.keys().map(String::as_str)
    }

    fn request(mut self, key: impl Into<String>, method: &str, params: Option<Value>) -> Self {
        let mut request = JsonObject::new();
        request.insert("method".into(), json!(method));
        if let Some(params) = params {
            request.insert("params".into(), params);
        }
        self.requests.insert(key.into(), Value::Object(request));
        self
    }

    /// The client capabilities these requests need that `declared` lacks.
    pub(crate) fn missing_capabilities(
        &self,
        declared: &ClientCapabilities,
    ) -> Option<ClientCapabilities> {
        let mut missing = ClientCapabilities::default();
        for request in self.requests.values() {
            match request["method"].as_str() {
                Some("sampling/createMessage") if declared.sampling.is_none() => {
                    missing.sampling = Some(SamplingCapability::default());
                }
                Some("roots/list") if declared.roots.is_none() => {
                    missing.roots = Some(JsonObject::new())
                }
                Some("elicitation/create") => {
                    let url_mode = request["params"]["mode"] == "url";
                    let supported = declared.elicitation.as_ref().is_some_and(|e| {
                        if url_mode {
                            e.supports_url()
                        } else {
                            e.supports_form()
                        }
                    });
                    if !supported {
                        let need = missing
                            .elicitation
                            .get_or_insert_with(ElicitationCapability::default);
                        if url_mode {
                            need.url = Some(JsonObject::new());
                        } else {
                            need.form = Some(JsonObject::new());
                        }
                    }
                }
                _ => {}
            }
        }
        (!missing.declared_names().is_empty()).then_some(missing)
    }
}

/// What a retry brings: the verified answers so far and the handler's state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Round {
    pub answers: JsonObject,
    pub state: Option<Value>,
}

/// The sealed contents of a `requestState`.
#[derive(Debug, Serialize, Deserialize)]
struct SealedState {
    v: u32,
    /// Principal key.
    p: String,
    /// Expiry, seconds since the Unix epoch.
    e: u64,
    /// Method.
    m: String,
    /// Digest of the request's salient parameters.
    d: String,
    /// Answers collected in earlier rounds.
    a: JsonObject,
    /// Keys asked in the last round.
    k: Vec<String>,
    /// The handler's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<Value>,
}

/// The identity of a request across rounds: method, principal and salient
/// parameters (the members of one object, borrowed: they are copied only
/// when a round is sealed or opened).
#[derive(Debug, Clone)]
pub(crate) struct RoundKey<'a> {
    pub method: &'a str,
    pub principal: &'a str,
    pub salient: &'a [(&'a str, &'a Value)],
}

impl RoundKey<'_> {
    fn digest(&self) -> String {
        let salient: JsonObject = self
            .salient
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).clone()))
            .collect();
        let mut hasher = Sha256::new();
        hasher.update(self.method.as_bytes());
        hasher.update([0]);
        hasher.update(canonical_json(&Value::Object(salient)).as_bytes());
        toolwire_protocol::hex::lower_hex(&hasher.finalize())
    }
}

/// Opens and seals request state for one server.
#[derive(Debug, Clone)]
pub(crate) struct StateCodec {
    pub sealer: Sealer,
    pub ttl: Duration,
    /// Whether a retry without `requestState` may bring answers
    /// ([`crate::ServerBuilder::answers_without_state`]).
    pub answers_without_state: bool,
}

impl StateCodec {
    /// Verifies a retry's `requestState` and merges its `inputResponses`:
    /// answers to keys that were not asked are ignored. Without
    /// `requestState` nothing proves a question was asked, so answers are
    /// ignored too, unless the server accepts answers without state.
    pub fn open(
        &self,
        key: &RoundKey<'_>,
        request_state: Option<&str>,
        responses: Option<&JsonObject>,
    ) -> Result<Round, ErrorObject> {
        let Some(sealed) = request_state else {
            let answers = match responses {
                Some(responses) if self.answers_without_state => responses.clone(),
                // Without state we asked nothing, so any answers are unsolicited.
                _ => JsonObject::new(),
            };
            return Ok(Round {
                answers,
                state: None,
            });
        };
        let invalid =
            |why: &str| ErrorObject::invalid_params(format!("Invalid requestState: {why}"));
        let bytes = self
            .sealer
            .open(sealed)
            .ok_or_else(|| invalid("it was not issued by this server or has been modified"))?;
        let state: SealedState =
            serde_json::from_slice(&bytes).map_err(|_| invalid("unreadable contents"))?;
        if state.v != FORMAT_VERSION {
            return Err(invalid("unsupported format version"));
        }
        if state.e <= now_secs() {
            return Err(invalid(
                "it has expired; send the original request again without requestState",
            ));
        }
        if state.p != key.principal {
            return Err(invalid("it was issued to a different principal"));
        }
        if state.m != key.method || state.d != key.digest() {
            return Err(invalid(
                "it was issued for a different request (method, name or arguments differ)",
            ));
        }
        let mut answers = state.a;
        if let Some(responses) = responses {
            for asked in &state.k {
                if let Some(answer) = responses.get(asked) {
                    answers.insert(asked.clone(), answer.clone());
                }
            }
        }
        Ok(Round {
            answers,
            state: state.s,
        })
    }

    /// Builds the `input_required` result: the requests plus sealed state.
    pub fn seal(&self, key: &RoundKey<'_>, round: &Round, ask: InputRequired) -> JsonObject {
        let sealed = SealedState {
            v: FORMAT_VERSION,
            p: key.principal.to_owned(),
            e: now_secs().saturating_add(self.ttl.as_secs()),
            m: key.method.to_owned(),
            d: key.digest(),
            a: round
                .answers
                .iter()
                .filter(|(k, _)| !ask.requests.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            k: ask.requests.keys().cloned().collect(),
            s: ask.state,
        };
        let plaintext = serde_json::to_vec(&sealed).expect("sealed state serializes");
        let mut result = JsonObject::new();
        result.insert("resultType".into(), json!("input_required"));
        if !ask.requests.is_empty() {
            result.insert("inputRequests".into(), Value::Object(ask.requests));
        }
        result.insert("requestState".into(), json!(self.sealer.seal(&plaintext)));
        result
    }
}

/// Parses one answer as `T`; a malformed answer is -32602, never silently accepted.
pub(crate) fn parse_answer<T: DeserializeOwned>(
    key: &str,
    answer: &Value,
) -> Result<T, ErrorObject> {
    if !answer.is_object() {
        return Err(ErrorObject::invalid_params(format!(
            "inputResponses[{key:?}] must be an object, got {answer}"
        )));
    }
    T::deserialize(answer).map_err(|e| {
        ErrorObject::invalid_params(format!("inputResponses[{key:?}] is malformed: {e}"))
    })
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// JSON with object keys sorted at every level, so digests ignore key order.
/// The text is what `serde_json` writes compactly for the sorted value; it
/// is written directly, without building that sorted copy first.
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(128);
    write_canonical(&mut out, value);
    into_string(out)
}

/// [`canonical_json`] of an object, without first copying it into a [`Value`].
pub(crate) fn canonical_object_json(object: &JsonObject) -> String {
    let mut out = Vec::with_capacity(128);
    write_canonical_object(&mut out, object);
    into_string(out)
}

fn into_string(out: Vec<u8>) -> String {
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn write_canonical(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(map) => write_canonical_object(out, map),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        scalar => write_scalar(out, scalar),
    }
}

fn write_canonical_object(out: &mut Vec<u8>, map: &JsonObject) {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_scalar(out, key);
        out.push(b':');
        write_canonical(out, value);
    }
    out.push(b'}');
}

/// A string, number, boolean or null, as `serde_json` writes it.
fn write_scalar(out: &mut Vec<u8>, scalar: &(impl serde::Serialize + ?Sized)) {
    serde_json::to_writer(out, scalar).expect("writing JSON to a Vec cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_is_the_sorted_compact_text() {
        let value =
            json!({"b": [1, {"z": null, "a": "\u{7}é\"\\"}], "a": {"y": 2.5, "x": true}, "": -3});
        assert_eq!(
            canonical_json(&value),
            r#"{"":-3,"a":{"x":true,"y":2.5},"b":[1,{"a":"\u0007é\"\\","z":null}]}"#
        );
        let Value::Object(object) = &value else {
            unreachable!()
        };
        assert_eq!(canonical_object_json(object), canonical_json(&value));
    }

    #[test]
    fn digest_ignores_key_order() {
        let (name, one, two) = (json!("t"), json!({"x": 1, "y": 2}), json!({"y": 2, "x": 1}));
        let a = RoundKey {
            method: "tools/call",
            principal: "",
            salient: &[("name", &name), ("arguments", &one)],
        };
        let b = RoundKey {
            method: "tools/call",
            principal: "",
            salient: &[("arguments", &two), ("name", &name)],
        };
        assert_eq!(a.digest(), b.digest());
    }

    #[test]
    fn missing_capabilities_are_named() {
        let ask = InputRequired::new()
            .list_roots("r")
            .elicit_url("u", "m", "https://x");
        let declared = ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..Default::default()
        };
        let missing = ask.missing_capabilities(&declared).unwrap();
        assert_eq!(
            serde_json::to_value(missing).unwrap(),
            json!({"elicitation": {"url": {}}, "roots": {}})
        );
    }
}
