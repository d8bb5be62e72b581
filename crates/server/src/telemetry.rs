//! The server's side of OpenTelemetry: one server span per request (named
//! and attributed by `toolwire-telemetry`), continuing the trace the
//! client put in `params._meta`, and its outcome.
//!
//! Every function here runs only when telemetry is enabled; a transport
//! states how requests arrive ([`RequestEnv::network`]).

use std::future::Future;

use serde::Deserialize;
use toolwire_protocol::{Message, Params, Request, RequestId, keys};
use toolwire_telemetry::semconv::{TRACEPARENT, TRACESTATE};
use toolwire_telemetry::{Operation, Outcome, Side, Started, TraceHeaders};
use tracing::Instrument;

use crate::context::RequestEnv;

/// The few members of a request's params the span needs: read only when
/// telemetry is on, never the arguments.
#[derive(Debug, Default, Deserialize)]
struct Peek {
    name: Option<String>,
    uri: Option<String>,
    #[serde(rename = "_meta")]
    meta: Option<PeekMeta>,
}

#[derive(Debug, Default, Deserialize)]
struct PeekMeta {
    traceparent: Option<String>,
    tracestate: Option<String>,
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<String>,
}

/// Starts the server span of `request`. `version` is the session's
/// revision for a legacy request; a modern one names its own in `_meta`.
pub(crate) fn start(request: &Request, env: &RequestEnv, version: Option<&str>) -> Started {
    debug_assert_eq!(
        keys::PROTOCOL_VERSION,
        "io.modelcontextprotocol/protocolVersion"
    );
    let peek: Peek = request
        .params
        .as_ref()
        .and_then(|params| params.parse().ok())
        .unwrap_or_default();
    let meta = peek.meta.unwrap_or_default();
    let parent = meta.traceparent.map(|traceparent| {
        TraceHeaders {
            traceparent,
            tracestate: meta.tracestate,
        }
        .remote_context()
    });
    Operation::new(Side::Server, &request.method)
        .target(peek.name.as_deref())
        .resource_uri(peek.uri.as_deref())
        .request_id(Some(request.id.plain_text()))
        .protocol_version(version.or(meta.protocol_version.as_deref()))
        .session_id(env.session_id.as_deref())
        .network(env.network)
        .start(parent)
}

/// Starts the client span of a request the server sends its client (a
/// legacy session's `elicitation/create`, say), a child of the current
/// span, and puts its trace context in the request's `_meta`.
pub(crate) fn start_peer_request(method: &str, id: &RequestId, params: &mut Params) -> Started {
    let started = Operation::new(Side::Client, method)
        .request_id(Some(id.plain_text()))
        .start(None);
    if let Some(headers) = TraceHeaders::of(started.span()) {
        let meta = params
            .object_mut()
            .entry("_meta")
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        if let serde_json::Value::Object(meta) = meta {
            meta.insert(TRACEPARENT.to_owned(), headers.traceparent.into());
            if let Some(state) = headers.tracestate {
                meta.insert(TRACESTATE.to_owned(), state.into());
            }
        }
    }
    started
}

/// Runs `serve` inside `started`'s span and records how it ended.
pub(crate) async fn traced<T>(
    started: Started,
    serve: impl Future<Output = T>,
    outcome: impl FnOnce(&T) -> Outcome,
) -> T {
    let done = serve.instrument(started.span().clone()).await;
    started.finish(outcome(&done));
    done
}

/// How a response message ends its request.
pub(crate) fn message_outcome(message: &Message) -> Outcome {
    match message {
        Message::Error(error) => Outcome::RpcError(error.error.code),
        Message::Result(result)
            if result
                .result
                .to_object()
                .is_ok_and(|result| is_error(result.get("isError"))) =>
        {
            Outcome::ToolError
        }
        _ => Outcome::Ok,
    }
}

pub(crate) fn is_error(value: Option<&serde_json::Value>) -> bool {
    value.and_then(serde_json::Value::as_bool) == Some(true)
}
