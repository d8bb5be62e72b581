//! Multi round-trip requests: `InputRequiredResult`, input requests and responses.
//!
//! A server that needs more input answers `tools/call`, `prompts/get` or
//! `resources/read` with an [`InputRequiredResult`] holding [`InputRequests`]
//! and/or an opaque `requestState`; the client retries the original request with
//! [`InputResponses`] (keyed like the requests) and the `requestState` echoed.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::discover::RequestParams;
use crate::elicitation::{ElicitRequestParams, ElicitResult, METHOD_ELICIT};
use crate::meta::Meta;
use crate::result::ResultType;
use crate::roots::{ListRootsResult, METHOD_LIST_ROOTS};
use crate::sampling::{CreateMessageRequestParams, CreateMessageResult, METHOD_CREATE_MESSAGE};

/// Answers to input requests, by the keys of the `inputRequests` map.
///
/// Kept raw so that a server can check each answer on its own; see
/// [`InputResponse`] for the typed form and [`input_response`] to read one.
pub type InputResponses = JsonObject;

/// Server-to-client requests, by server-chosen keys.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// A request the server needs the client to fulfil before it can complete,
/// tagged by `method` with its `params`.
///
/// ```
/// use toolwire_protocol::InputRequest;
/// let r: InputRequest = serde_json::from_str(r#"{"method":"roots/list"}"#).unwrap();
/// assert_eq!(r, InputRequest::ListRoots(None));
/// assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"method":"roots/list"}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequestParams),
    /// `roots/list`, whose `params` (only `_meta`) are optional.
    ListRoots(Option<RequestParams>),
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            InputRequest::Elicit(_) => METHOD_ELICIT,
            InputRequest::CreateMessage(_) => METHOD_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => METHOD_LIST_ROOTS,
        }
    }

    /// Parses the client's answer to this request as the result type it calls for.
    pub fn parse_response(&self, value: &Value) -> Result<InputResponse, serde_json::Error> {
        match self {
            InputRequest::Elicit(_) => ElicitResult::deserialize(value).map(InputResponse::Elicit),
            InputRequest::CreateMessage(_) => {
                CreateMessageResult::deserialize(value).map(InputResponse::CreateMessage)
            }
            InputRequest::ListRoots(_) => {
                ListRootsResult::deserialize(value).map(InputResponse::ListRoots)
            }
        }
    }
}

impl From<ElicitRequestParams> for InputRequest {
    fn from(value: ElicitRequestParams) -> Self {
        InputRequest::Elicit(value)
    }
}

impl From<CreateMessageRequestParams> for InputRequest {
    fn from(value: CreateMessageRequestParams) -> Self {
        InputRequest::CreateMessage(value)
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let has_params = !matches!(self, InputRequest::ListRoots(None));
        let mut map = serializer.serialize_map(Some(1 + usize::from(has_params)))?;
        map.serialize_entry("method", self.method())?;
        match self {
            InputRequest::Elicit(p) => map.serialize_entry("params", p)?,
            InputRequest::CreateMessage(p) => map.serialize_entry("params", p)?,
            InputRequest::ListRoots(Some(p)) => map.serialize_entry("params", p)?,
            InputRequest::ListRoots(None) => {}
        }
        map.end()
    }
}

/// The members of an input request, before dispatch on `method`.
#[derive(Deserialize)]
struct RawInputRequest {
    method: String,
    #[serde(default, deserialize_with = "crate::present")]
    params: Option<Value>,
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawInputRequest::deserialize(deserializer)?;
        let required = |params: Option<Value>| {
            params.ok_or_else(|| {
                de::Error::custom(format!("input request {:?} needs params", raw.method))
            })
        };
        match raw.method.as_str() {
            METHOD_ELICIT => serde_json::from_value(required(raw.params.clone())?)
                .map(InputRequest::Elicit)
                .map_err(de::Error::custom),
            METHOD_CREATE_MESSAGE => serde_json::from_value(required(raw.params.clone())?)
                .map(InputRequest::CreateMessage)
                .map_err(de::Error::custom),
            METHOD_LIST_ROOTS => match raw.params {
                None => Ok(InputRequest::ListRoots(None)),
                Some(p) => serde_json::from_value(p)
                    .map(|p| InputRequest::ListRoots(Some(p)))
                    .map_err(de::Error::custom),
            },
            other => Err(de::Error::custom(format!(
                "unknown input request method {other:?}"
            ))),
        }
    }
}

/// The client's answer to one [`InputRequest`], told apart by its required
/// members: `action` (elicitation), `roots` (roots) or `model` (sampling).
///
/// ```
/// use toolwire_protocol::{input_response, InputResponse, InputResponses, ElicitAction};
/// let responses: InputResponses = serde_json::from_str(r#"{"login":{"action":"decline"}}"#).unwrap();
/// let answer = input_response(&responses, "login").unwrap().unwrap();
/// assert_eq!(answer.as_elicit().unwrap().action, ElicitAction::Decline);
/// assert!(input_response(&responses, "other").is_none());
/// ```
// A few per retry, parsed once and matched on: plain variants are simpler to use than boxes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputResponse {
    /// The answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// The answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// The answer to `roots/list`.
    ListRoots(ListRootsResult),
}

impl InputResponse {
    /// Parses one answer from a JSON value.
    pub fn from_value(value: Value) -> Result<InputResponse, serde_json::Error> {
        serde_json::from_value(value)
    }

    /// The elicitation answer, if this is one.
    pub fn as_elicit(&self) -> Option<&ElicitResult> {
        match self {
            InputResponse::Elicit(r) => Some(r),
            _ => None,
        }
    }

    /// The sampling answer, if this is one.
    pub fn as_create_message(&self) -> Option<&CreateMessageResult> {
        match self {
            InputResponse::CreateMessage(r) => Some(r),
            _ => None,
        }
    }

    /// The roots answer, if this is one.
    pub fn as_list_roots(&self) -> Option<&ListRootsResult> {
        match self {
            InputResponse::ListRoots(r) => Some(r),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let Value::Object(map) = &value else {
            return Err(de::Error::custom("an input response must be an object"));
        };
        let result = if map.contains_key("action") {
            serde_json::from_value(value).map(InputResponse::Elicit)
        } else if map.contains_key("roots") {
            serde_json::from_value(value).map(InputResponse::ListRoots)
        } else if map.contains_key("model") {
            serde_json::from_value(value).map(InputResponse::CreateMessage)
        } else {
            return Err(de::Error::custom(
                "an input response must be an ElicitResult (action), a ListRootsResult (roots) \
                 or a CreateMessageResult (model, role, content)",
            ));
        };
        result.map_err(de::Error::custom)
    }
}

impl From<ElicitResult> for InputResponse {
    fn from(value: ElicitResult) -> Self {
        InputResponse::Elicit(value)
    }
}

impl From<CreateMessageResult> for InputResponse {
    fn from(value: CreateMessageResult) -> Self {
        InputResponse::CreateMessage(value)
    }
}

impl From<ListRootsResult> for InputResponse {
    fn from(value: ListRootsResult) -> Self {
        InputResponse::ListRoots(value)
    }
}

/// Reads the answer stored under `key`: `None` when there is none, `Some(Err)`
/// when it is not a valid input response.
pub fn input_response(
    responses: &InputResponses,
    key: &str,
) -> Option<Result<InputResponse, serde_json::Error>> {
    responses.get(key).map(InputResponse::deserialize)
}

/// The MRTR members every retriable request's parameters carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResponseRequestParams {
    /// Answers to the input requests of a previous round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The opaque state of a previous round, echoed byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// A result saying more input is needed: `resultType: "input_required"`.
///
/// `result_type` is always written as `input_required`, and reading rejects any
/// other value (an absent `resultType` reads as `input_required`).
///
/// ```
/// use toolwire_protocol::{InputRequiredResult, InputRequest};
/// let r = InputRequiredResult::new()
///     .with_input_request("roots", InputRequest::ListRoots(None))
///     .with_request_state("opaque");
/// assert_eq!(
///     serde_json::to_string(&r).unwrap(),
///     r#"{"resultType":"input_required","inputRequests":{"roots":{"method":"roots/list"}},"requestState":"opaque"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always [`ResultType::InputRequired`].
    #[serde(
        default = "input_required",
        serialize_with = "serialize_input_required",
        deserialize_with = "deserialize_input_required"
    )]
    pub result_type: ResultType,
    /// Requests the client must fulfil before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client must echo on retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests: None,
            request_state: None,
            meta: None,
        }
    }
}

impl InputRequiredResult {
    /// An empty input-required result (add requests and/or state before sending).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input request under `key`.
    pub fn with_input_request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.input_requests
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), request);
        self
    }

    /// Sets `requestState`.
    pub fn with_request_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }
}

fn input_required() -> ResultType {
    ResultType::InputRequired
}

fn serialize_input_required<S: Serializer>(_: &ResultType, s: S) -> Result<S::Ok, S::Error> {
    ResultType::InputRequired.serialize(s)
}

fn deserialize_input_required<'de, D: Deserializer<'de>>(d: D) -> Result<ResultType, D::Error> {
    match ResultType::deserialize(d)? {
        ResultType::InputRequired => Ok(ResultType::InputRequired),
        other => Err(de::Error::custom(format!(
            "an InputRequiredResult must have resultType \"input_required\", not {}",
            serde_json::to_value(other).unwrap_or_default()
        ))),
    }
}
