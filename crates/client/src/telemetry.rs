//! The client's side of OpenTelemetry: one client span per request sent
//! (named and attributed by `toolwire-telemetry`), whose trace context goes
//! to the server in `params._meta`.
//!
//! Every function here runs only when telemetry is enabled.

use std::future::Future;

use serde_json::Value;
use toolwire_protocol::{ErrorObject, JsonObject, Request, RequestId, ResultBody};
use toolwire_telemetry::{Network, Operation, Outcome, Side, Started, TraceHeaders};
use tracing::Instrument;

use crate::error::Error;
use crate::transport::TransportKind;

/// Starts the client span of request `id`, a child of the current span.
pub(crate) fn start(
    method: &str,
    params: &JsonObject,
    id: &RequestId,
    version: &str,
    kind: TransportKind,
) -> Started {
    let text = |key: &str| params.get(key).and_then(Value::as_str);
    Operation::new(Side::Client, method)
        .target(text("name"))
        .resource_uri(text("uri"))
        .request_id(Some(id.plain_text()))
        .protocol_version(Some(version))
        .network(network(kind))
        .start(None)
}

/// Runs `request` inside `started`'s span and records how it ended.
pub(crate) async fn traced(
    started: Started,
    request: impl Future<Output = Result<ResultBody, Error>>,
) -> Result<ResultBody, Error> {
    let done = request.instrument(started.span().clone()).await;
    started.finish(outcome(&done));
    done
}

/// The span that holds every round of a request answered with
/// `input_required` (so that all of them are one trace), `None` while
/// telemetry is off.
pub(crate) fn rounds_span(method: &str, target: &str) -> Option<tracing::Span> {
    if !toolwire_telemetry::enabled() {
        return None;
    }
    let name = match (method, target) {
        (_, "") => method.to_owned(),
        ("tools/call" | "prompts/get", target) => format!("{method} {target}"),
        _ => method.to_owned(),
    };
    Some(tracing::info_span!(
        target: toolwire_telemetry::SPAN_TARGET,
        "mcp rounds",
        otel.name = %name,
        otel.kind = "internal",
        mcp.method.name = method,
    ))
}

/// Starts the server span of a request a legacy server sent the client
/// (`elicitation/create`, say), continuing the trace in its `_meta`.
pub(crate) fn start_inbound(request: &Request) -> Started {
    let meta = request
        .params
        .as_ref()
        .and_then(|p| p.parse::<InboundMeta>().ok());
    let parent = meta.and_then(|m| m.meta).and_then(|m| {
        Some(TraceHeaders {
            traceparent: m.traceparent?,
            tracestate: m.tracestate,
        })
    });
    Operation::new(Side::Server, &request.method)
        .request_id(Some(request.id.plain_text()))
        .start(parent.map(|headers| headers.remote_context()))
}

/// Runs an inbound request's answer inside `started`'s span.
pub(crate) async fn traced_inbound(
    started: Started,
    answer: impl Future<Output = Result<JsonObject, ErrorObject>>,
) -> Result<JsonObject, ErrorObject> {
    let done = answer.instrument(started.span().clone()).await;
    started.finish(match &done {
        Ok(_) => Outcome::Ok,
        Err(error) => Outcome::RpcError(error.code),
    });
    done
}

#[derive(serde::Deserialize)]
struct InboundMeta {
    #[serde(rename = "_meta")]
    meta: Option<TraceMeta>,
}

#[derive(serde::Deserialize)]
struct TraceMeta {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

fn outcome(done: &Result<ResultBody, Error>) -> Outcome {
    #[derive(serde::Deserialize)]
    struct IsError {
        #[serde(rename = "isError")]
        is_error: Option<bool>,
    }
    let is_error = |result: &ResultBody| result.parse::<IsError>().ok()?.is_error;
    match done {
        Ok(result) if is_error(result) == Some(true) => Outcome::ToolError,
        Ok(_) => Outcome::Ok,
        Err(Error::Protocol { code, .. }) => Outcome::RpcError(*code),
        Err(Error::Timeout(_)) => Outcome::Failed("timeout"),
        Err(Error::Cancelled) => Outcome::Failed("cancelled"),
        Err(Error::Transport(_)) => Outcome::Failed("transport"),
        Err(_) => Outcome::Failed("invalid_reply"),
    }
}

fn network(kind: TransportKind) -> Network {
    match kind {
        TransportKind::Stdio => Network::Pipe,
        TransportKind::Http => Network::Http,
    }
}
