//! Every example in the specification's `schema/examples/` folder must parse
//! into the type this crate models for it and serialize back to the same JSON.
//!
//! The examples are read from the shared spec checkout next to the workspace;
//! they are not copied into the repository. When the folder is absent the test
//! prints a note and passes.
//!
//! Each folder is named after a schema type. [`table`] maps every folder to a
//! check; a folder missing from the table fails the test, so a new example type
//! is never skipped silently.

use std::any::type_name;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolwire_protocol::*;

type Typed = fn(&Value) -> Result<Value, String>;

/// What a folder's examples are and how to check them.
enum Kind {
    /// A bare value of some type: typed round trip.
    Type(Typed),
    /// A JSON-RPC request with this method: `Message` round trip, then `params` typed.
    Request(&'static str, Typed),
    /// A JSON-RPC notification with this method: `Message` round trip, then `params` typed.
    Notification(&'static str, Typed),
    /// A JSON-RPC result response: `Message` round trip, then `result` typed.
    Response(Typed),
    /// A JSON-RPC error response with this code; `data` checked by the function.
    ErrorResponse(i64, fn(&Value) -> Result<(), String>),
    /// A bare error object with this code.
    Error(i64),
}

fn from<T: DeserializeOwned>(v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone())
        .map_err(|e| format!("does not deserialize as {}: {e}", type_name::<T>()))
}

fn to<T: Serialize>(t: &T) -> Result<Value, String> {
    serde_json::to_value(t).map_err(|e| format!("{} does not serialize: {e}", type_name::<T>()))
}

/// Typed round trip through `T`.
fn rt<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    to(&from::<T>(v)?)
}

/// A result that is either an `InputRequiredResult` or a complete `T`, by `resultType`.
fn result_or_input<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let obj = v.as_object().ok_or("result is not an object")?;
    match ResultType::of(obj).map_err(|e| format!("bad resultType: {e}"))? {
        ResultType::InputRequired => rt::<InputRequiredResult>(v),
        ResultType::Complete => rt::<T>(v),
        ResultType::Task => rt::<toolwire_protocol::CreateTaskResult>(v),
    }
}

/// Round trip through an enum, checking the variant it lands in.
macro_rules! variant {
    ($ty:ty, $pat:pat) => {
        Kind::Type(|v| {
            let t: $ty = from(v)?;
            if !matches!(t, $pat) {
                return Err(format!("parsed as the wrong variant: {t:?}"));
            }
            to(&t)
        })
    };
}

fn no_data_check(_: &Value) -> Result<(), String> {
    Ok(())
}

fn table() -> Vec<(&'static str, Kind)> {
    use Kind::*;
    vec![
        (
            "AudioContent",
            variant!(ContentBlock, ContentBlock::Audio(_)),
        ),
        (
            "BlobResourceContents",
            Type(|v| {
                rt::<BlobResourceContents>(v)?;
                let c: ResourceContents = from(v)?;
                if !matches!(c, ResourceContents::Blob(_)) {
                    return Err(format!("parsed as the wrong variant: {c:?}"));
                }
                to(&c)
            }),
        ),
        (
            "BooleanSchema",
            Type(|v| {
                rt::<BooleanSchema>(v)?;
                let s: PrimitiveSchemaDefinition = from(v)?;
                if !matches!(s, PrimitiveSchemaDefinition::Boolean(_)) {
                    return Err(format!("parsed as the wrong variant: {s:?}"));
                }
                to(&s)
            }),
        ),
        (
            "CallToolRequest",
            Request(METHOD_CALL_TOOL, rt::<CallToolRequestParams>),
        ),
        ("CallToolRequestParams", Type(rt::<CallToolRequestParams>)),
        ("CallToolResult", Type(rt::<CallToolResult>)),
        (
            "CallToolResultResponse",
            Response(result_or_input::<CallToolResult>),
        ),
        (
            "CancelledNotification",
            Notification(METHOD_CANCELLED, rt::<CancelledNotificationParams>),
        ),
        (
            "CancelledNotificationParams",
            Type(rt::<CancelledNotificationParams>),
        ),
        ("ClientCapabilities", Type(rt::<ClientCapabilities>)),
        (
            "CompleteRequest",
            Request(METHOD_COMPLETE, rt::<CompleteRequestParams>),
        ),
        ("CompleteRequestParams", Type(rt::<CompleteRequestParams>)),
        ("CompleteResult", Type(rt::<CompleteResult>)),
        ("CompleteResultResponse", Response(rt::<CompleteResult>)),
        (
            "CreateMessageRequest",
            variant!(InputRequest, InputRequest::CreateMessage(_)),
        ),
        (
            "CreateMessageRequestParams",
            Type(rt::<CreateMessageRequestParams>),
        ),
        (
            "CreateMessageResult",
            Type(|v| {
                let r = rt::<CreateMessageResult>(v)?;
                let i: InputResponse = from(v)?;
                if !matches!(i, InputResponse::CreateMessage(_)) {
                    return Err(format!("InputResponse parsed as the wrong variant: {i:?}"));
                }
                Ok(r)
            }),
        ),
        (
            "DiscoverRequest",
            Request(METHOD_DISCOVER, rt::<RequestParams>),
        ),
        ("DiscoverResult", Type(rt::<DiscoverResult>)),
        ("DiscoverResultResponse", Response(rt::<DiscoverResult>)),
        (
            "ElicitRequest",
            variant!(InputRequest, InputRequest::Elicit(_)),
        ),
        (
            "ElicitRequestFormParams",
            Type(|v| {
                rt::<ElicitRequestFormParams>(v)?;
                let p: ElicitRequestParams = from(v)?;
                let ElicitRequestParams::Form(form) = &p else {
                    return Err(format!("parsed as the wrong variant: {p:?}"));
                };
                form.requested_properties()
                    .map_err(|e| format!("requestedSchema properties: {e}"))?;
                to(&p)
            }),
        ),
        (
            "ElicitRequestURLParams",
            variant!(ElicitRequestParams, ElicitRequestParams::Url(_)),
        ),
        (
            "ElicitResult",
            Type(|v| {
                let r = rt::<ElicitResult>(v)?;
                let i: InputResponse = from(v)?;
                if !matches!(i, InputResponse::Elicit(_)) {
                    return Err(format!("InputResponse parsed as the wrong variant: {i:?}"));
                }
                Ok(r)
            }),
        ),
        (
            "EmbeddedResource",
            variant!(ContentBlock, ContentBlock::Resource(_)),
        ),
        (
            "GetPromptRequest",
            Request(METHOD_GET_PROMPT, rt::<GetPromptRequestParams>),
        ),
        ("GetPromptRequestParams", Type(rt::<GetPromptRequestParams>)),
        ("GetPromptResult", Type(rt::<GetPromptResult>)),
        (
            "GetPromptResultResponse",
            Response(result_or_input::<GetPromptResult>),
        ),
        (
            "HeaderMismatchError",
            ErrorResponse(code::HEADER_MISMATCH, no_data_check),
        ),
        (
            "ImageContent",
            variant!(ContentBlock, ContentBlock::Image(_)),
        ),
        ("InputRequests", Type(rt::<InputRequests>)),
        ("InputRequiredResult", Type(rt::<InputRequiredResult>)),
        (
            "InputResponses",
            Type(|v| {
                let raw: InputResponses = from(v)?;
                let mut typed = JsonObject::new();
                for (key, answer) in &raw {
                    let parsed = input_response(&raw, key)
                        .ok_or("key vanished")?
                        .map_err(|e| format!("{key}: {e}"))?;
                    let back = to(&parsed)?;
                    if &back != answer {
                        return Err(format!("{key}: typed InputResponse round trip differs"));
                    }
                    typed.insert(key.clone(), back);
                }
                Ok(Value::Object(typed))
            }),
        ),
        ("InternalError", Error(code::INTERNAL_ERROR)),
        ("InvalidParamsError", Error(code::INVALID_PARAMS)),
        (
            "ListPromptsRequest",
            Request(METHOD_LIST_PROMPTS, rt::<PaginatedRequestParams>),
        ),
        ("ListPromptsResult", Type(rt::<ListPromptsResult>)),
        (
            "ListPromptsResultResponse",
            Response(rt::<ListPromptsResult>),
        ),
        (
            "ListResourceTemplatesRequest",
            Request(METHOD_LIST_RESOURCE_TEMPLATES, rt::<PaginatedRequestParams>),
        ),
        (
            "ListResourceTemplatesResult",
            Type(rt::<ListResourceTemplatesResult>),
        ),
        (
            "ListResourceTemplatesResultResponse",
            Response(rt::<ListResourceTemplatesResult>),
        ),
        (
            "ListResourcesRequest",
            Request(METHOD_LIST_RESOURCES, rt::<PaginatedRequestParams>),
        ),
        ("ListResourcesResult", Type(rt::<ListResourcesResult>)),
        (
            "ListResourcesResultResponse",
            Response(rt::<ListResourcesResult>),
        ),
        (
            "ListRootsRequest",
            variant!(InputRequest, InputRequest::ListRoots(_)),
        ),
        (
            "ListRootsResult",
            Type(|v| {
                let r = rt::<ListRootsResult>(v)?;
                let i: InputResponse = from(v)?;
                if !matches!(i, InputResponse::ListRoots(_)) {
                    return Err(format!("InputResponse parsed as the wrong variant: {i:?}"));
                }
                Ok(r)
            }),
        ),
        (
            "ListToolsRequest",
            Request(METHOD_LIST_TOOLS, rt::<PaginatedRequestParams>),
        ),
        ("ListToolsResult", Type(rt::<ListToolsResult>)),
        ("ListToolsResultResponse", Response(rt::<ListToolsResult>)),
        (
            "LoggingMessageNotification",
            Notification(
                METHOD_LOGGING_MESSAGE,
                rt::<LoggingMessageNotificationParams>,
            ),
        ),
        (
            "LoggingMessageNotificationParams",
            Type(rt::<LoggingMessageNotificationParams>),
        ),
        ("MethodNotFoundError", Error(code::METHOD_NOT_FOUND)),
        (
            "MissingRequiredClientCapabilityError",
            ErrorResponse(code::MISSING_REQUIRED_CLIENT_CAPABILITY, |data| {
                let caps = data
                    .get("requiredCapabilities")
                    .ok_or("data.requiredCapabilities missing")?;
                let back = rt::<ClientCapabilities>(caps)?;
                if &back != caps {
                    return Err("data.requiredCapabilities does not round-trip".into());
                }
                Ok(())
            }),
        ),
        ("ModelPreferences", Type(rt::<ModelPreferences>)),
        (
            "NumberSchema",
            Type(|v| {
                rt::<NumberSchema>(v)?;
                let s: PrimitiveSchemaDefinition = from(v)?;
                if !matches!(s, PrimitiveSchemaDefinition::Number(_)) {
                    return Err(format!("parsed as the wrong variant: {s:?}"));
                }
                to(&s)
            }),
        ),
        ("PaginatedRequestParams", Type(rt::<PaginatedRequestParams>)),
        ("ParseError", Error(code::PARSE_ERROR)),
        (
            "ProgressNotification",
            Notification(METHOD_PROGRESS, rt::<ProgressNotificationParams>),
        ),
        (
            "ProgressNotificationParams",
            Type(rt::<ProgressNotificationParams>),
        ),
        (
            "PromptListChangedNotification",
            Notification(METHOD_PROMPT_LIST_CHANGED, rt::<NotificationParams>),
        ),
        (
            "ReadResourceRequest",
            Request(METHOD_READ_RESOURCE, rt::<ReadResourceRequestParams>),
        ),
        ("ReadResourceResult", Type(rt::<ReadResourceResult>)),
        (
            "ReadResourceResultResponse",
            Response(result_or_input::<ReadResourceResult>),
        ),
        ("Resource", Type(rt::<Resource>)),
        (
            "ResourceLink",
            variant!(ContentBlock, ContentBlock::ResourceLink(_)),
        ),
        (
            "ResourceListChangedNotification",
            Notification(METHOD_RESOURCE_LIST_CHANGED, rt::<NotificationParams>),
        ),
        (
            "ResourceUpdatedNotification",
            Notification(
                METHOD_RESOURCE_UPDATED,
                rt::<ResourceUpdatedNotificationParams>,
            ),
        ),
        (
            "ResourceUpdatedNotificationParams",
            Type(rt::<ResourceUpdatedNotificationParams>),
        ),
        ("Root", Type(rt::<Root>)),
        ("SamplingMessage", Type(rt::<SamplingMessage>)),
        ("ServerCapabilities", Type(rt::<ServerCapabilities>)),
        (
            "StringSchema",
            Type(|v| {
                rt::<StringSchema>(v)?;
                let s: PrimitiveSchemaDefinition = from(v)?;
                if !matches!(s, PrimitiveSchemaDefinition::String(_)) {
                    return Err(format!("parsed as the wrong variant: {s:?}"));
                }
                to(&s)
            }),
        ),
        (
            "SubscriptionsAcknowledgedNotification",
            Notification(
                METHOD_SUBSCRIPTIONS_ACKNOWLEDGED,
                rt::<SubscriptionsAcknowledgedNotificationParams>,
            ),
        ),
        (
            "SubscriptionsListenRequest",
            Request(
                METHOD_SUBSCRIPTIONS_LISTEN,
                rt::<SubscriptionsListenRequestParams>,
            ),
        ),
        (
            "SubscriptionsListenResult",
            Type(|v| {
                let r: SubscriptionsListenResult = from(v)?;
                if r.subscription_id().is_none() {
                    return Err("no subscriptionId in _meta".into());
                }
                to(&r)
            }),
        ),
        (
            "SubscriptionsListenResultResponse",
            Response(rt::<SubscriptionsListenResult>),
        ),
        ("TextContent", variant!(ContentBlock, ContentBlock::Text(_))),
        (
            "TextResourceContents",
            Type(|v| {
                rt::<TextResourceContents>(v)?;
                let c: ResourceContents = from(v)?;
                if !matches!(c, ResourceContents::Text(_)) {
                    return Err(format!("parsed as the wrong variant: {c:?}"));
                }
                to(&c)
            }),
        ),
        (
            "TitledMultiSelectEnumSchema",
            variant!(
                PrimitiveSchemaDefinition,
                PrimitiveSchemaDefinition::TitledMultiSelectEnum(_)
            ),
        ),
        (
            "TitledSingleSelectEnumSchema",
            variant!(
                PrimitiveSchemaDefinition,
                PrimitiveSchemaDefinition::TitledSingleSelectEnum(_)
            ),
        ),
        ("Tool", Type(rt::<Tool>)),
        (
            "ToolListChangedNotification",
            Notification(METHOD_TOOL_LIST_CHANGED, rt::<NotificationParams>),
        ),
        (
            "ToolResultContent",
            variant!(SamplingContent, SamplingContent::ToolResult(_)),
        ),
        (
            "ToolUseContent",
            variant!(SamplingContent, SamplingContent::ToolUse(_)),
        ),
        (
            "UnsupportedProtocolVersionError",
            ErrorResponse(code::UNSUPPORTED_PROTOCOL_VERSION, |data| {
                let supported = data
                    .get("supported")
                    .and_then(Value::as_array)
                    .ok_or("data.supported missing")?;
                if supported.is_empty() || !supported.iter().all(Value::is_string) {
                    return Err("data.supported must be a non-empty list of strings".into());
                }
                data.get("requested")
                    .and_then(Value::as_str)
                    .ok_or("data.requested missing")?;
                Ok(())
            }),
        ),
        (
            "UntitledMultiSelectEnumSchema",
            variant!(
                PrimitiveSchemaDefinition,
                PrimitiveSchemaDefinition::UntitledMultiSelectEnum(_)
            ),
        ),
        (
            "UntitledSingleSelectEnumSchema",
            variant!(
                PrimitiveSchemaDefinition,
                PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_)
            ),
        ),
    ]
}

/// Examples that do not match their schema type exactly, and how the typed
/// form is expected to differ. Everything else must round-trip unchanged.
fn expected_typed(rel: &str, mut value: Value) -> Value {
    match rel {
        // `ReadResourceResult` requires `ttlMs` and `cacheScope`; this example
        // omits them, and the typed result fills the spec's defaults in.
        "ReadResourceResultResponse/read-resource-result-response.json" => {
            let obj = value.as_object_mut().unwrap();
            obj.insert("ttlMs".into(), json!(0));
            obj.insert("cacheScope".into(), json!("private"));
        }
        // An input request is `{method, params}`; this example also carries an
        // `id`, which is no part of `ListRootsRequest` and is not kept.
        "ListRootsRequest/list-roots-request.json" => {
            value.as_object_mut().unwrap().remove("id");
        }
        _ => {}
    }
    value
}

/// Files [`expected_typed`] knows about, so a stale entry is noticed.
const DEVIATIONS: &[&str] = &[
    "ReadResourceResultResponse/read-resource-result-response.json",
    "ListRootsRequest/list-roots-request.json",
];

fn same(what: &str, expected: &Value, got: &Value) -> Result<(), String> {
    if expected == got {
        Ok(())
    } else {
        Err(format!(
            "{what} round trip differs\n  expected: {expected}\n       got: {got}"
        ))
    }
}

fn check_typed(rel: &str, f: Typed, value: &Value) -> Result<(), String> {
    let got = f(value)?;
    same("typed", &expected_typed(rel, value.clone()), &got)
}

fn check_message(value: &Value) -> Result<Message, String> {
    let msg = Message::from_value(value.clone()).map_err(|e| format!("not a message: {e}"))?;
    same("Message", value, &to(&msg)?)?;
    Ok(msg)
}

fn check(rel: &str, kind: &Kind, value: &Value) -> Result<(), String> {
    match kind {
        Kind::Type(f) => check_typed(rel, *f, value),
        Kind::Request(method, params) => match check_message(value)? {
            Message::Request(req) if req.method == *method => {
                let p = Value::Object(req.params.ok_or("request has no params")?.into_object());
                check_typed(rel, *params, &p)
            }
            other => Err(format!("expected a {method} request, got {other:?}")),
        },
        Kind::Notification(method, params) => match check_message(value)? {
            Message::Notification(n) if n.method == *method => {
                let p = Value::Object(n.params.unwrap_or_default());
                check_typed(rel, *params, &p)
            }
            other => Err(format!("expected a {method} notification, got {other:?}")),
        },
        Kind::Response(result) => match check_message(value)? {
            Message::Result(r) => {
                let tree = r.result.into_object().map_err(|e| e.to_string())?;
                check_typed(rel, *result, &Value::Object(tree))
            }
            other => Err(format!("expected a result response, got {other:?}")),
        },
        Kind::ErrorResponse(code, data) => match check_message(value)? {
            Message::Error(e) if e.error.code == *code => {
                data(e.error.data.as_ref().unwrap_or(&Value::Null))
            }
            other => Err(format!(
                "expected an error response with code {code}, got {other:?}"
            )),
        },
        Kind::Error(code) => {
            let e: ErrorObject = from(value)?;
            if e.code != *code {
                return Err(format!("expected code {code}, got {}", e.code));
            }
            same("ErrorObject", value, &to(&e)?)
        }
    }
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec/2026-07-28/schema/examples")
}

#[test]
fn every_spec_example_round_trips() {
    let dir = examples_dir();
    if !dir.is_dir() {
        println!(
            "note: {} not found; spec example check skipped",
            dir.display()
        );
        return;
    }
    let table = table();
    let names: BTreeSet<&str> = table.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), table.len(), "duplicate folder in the table");

    let mut folders: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();

    let mut unmapped = Vec::new();
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    let mut files_checked = 0;
    let mut seen_deviations = BTreeSet::new();
    for folder in &folders {
        let name = folder.file_name().unwrap().to_str().unwrap();
        let Some((_, kind)) = table.iter().find(|(n, _)| *n == name) else {
            unmapped.push(name.to_owned());
            continue;
        };
        seen.insert(name.to_owned());
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{name}: no example files");
        for file in files {
            let rel = format!("{name}/{}", file.file_name().unwrap().to_str().unwrap());
            if DEVIATIONS.contains(&rel.as_str()) {
                seen_deviations.insert(rel.clone());
            }
            let value: Value = serde_json::from_slice(&std::fs::read(&file).unwrap())
                .unwrap_or_else(|e| panic!("{rel}: not JSON: {e}"));
            if let Err(e) = check(&rel, kind, &value) {
                failures.push(format!("{rel}: {e}"));
            }
            files_checked += 1;
        }
    }
    let stale: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !seen.contains(*n))
        .collect();
    let stale_deviations: Vec<&str> = DEVIATIONS
        .iter()
        .copied()
        .filter(|d| !seen_deviations.contains(*d))
        .collect();

    println!(
        "checked {files_checked} example files in {} folders",
        seen.len()
    );
    assert!(
        unmapped.is_empty(),
        "example folders with no entry in the table: {unmapped:?}"
    );
    assert!(
        stale.is_empty(),
        "table entries with no example folder: {stale:?}"
    );
    assert!(
        stale_deviations.is_empty(),
        "deviations for files that no longer exist: {stale_deviations:?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {files_checked} examples failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
