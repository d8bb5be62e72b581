//! Helpers shared by the server's integration tests.
#![allow(dead_code)]

use serde_json::{Value, json};
use toolwire_protocol::{JsonObject, Message, Request};
use toolwire_server::{RequestEnv, Server};

/// The `_meta` a well-behaved 2026-07-28 client sends.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}
    })
}

/// A request with the given params plus good `_meta`.
pub fn request(id: i64, method: &str, params: Value) -> Request {
    let mut params = as_object(params);
    params.entry("_meta").or_insert_with(meta);
    Request::new(id, method, Some(params))
}

/// A request whose params are exactly as given (no `_meta` added).
pub fn raw_request(id: i64, method: &str, params: Option<Value>) -> Request {
    Request::new(id, method, params.map(as_object))
}

pub fn as_object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("expected an object, got {other}"),
    }
}

/// Sends a request with no transport and returns the response as JSON.
pub async fn call(server: &Server, request: Request) -> Value {
    let response = server.handle_request(request, RequestEnv::new()).await;
    serde_json::to_value(response).unwrap()
}

/// The `result` of a response, panicking on an error response.
pub async fn result(server: &Server, request: Request) -> Value {
    let response = call(server, request).await;
    assert!(
        response.get("error").is_none(),
        "unexpected error: {response}"
    );
    response["result"].clone()
}

/// The `error` of a response, panicking on a result.
pub async fn error(server: &Server, request: Request) -> Value {
    let response = call(server, request).await;
    assert!(
        response.get("result").is_none(),
        "unexpected result: {response}"
    );
    response["error"].clone()
}

/// Reads a message as JSON.
pub fn json_of(message: &Message) -> Value {
    serde_json::to_value(message).unwrap()
}
