//! OpenTelemetry across a real client → server call: span names, kinds,
//! attributes and parent links over the in-process stdio pipe and HTTP,
//! the duration histograms, MRTR rounds in one trace, and no argument
//! value in any span. Spans and metrics are caught in memory.
//!
//! Telemetry is process-wide (one subscriber, one meter provider), so this
//! file is its own test binary and every test finds its spans by the trace
//! id of a root span of its own.

mod support;

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::{SpanId, SpanKind, TraceContextExt, TraceId};
use opentelemetry::{Key, KeyValue, Value as OtelValue};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use toolwire_client::handlers::{BoxError, InputContext};
use toolwire_client::{Client, ClientBuilder, Error};
use toolwire_protocol::{ElicitRequestParams, ElicitResult, ElicitValue};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::prelude::*;

use support::{demo_server, http_server, pipe_transport};

struct Caught {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meters: SdkMeterProvider,
}

fn caught() -> &'static Caught {
    static CAUGHT: OnceLock<Caught> = OnceLock::new();
    CAUGHT.get_or_init(|| {
        let spans = InMemorySpanExporter::default();
        let tracers = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let tracer = opentelemetry::trace::TracerProvider::tracer(&tracers, "test");
        tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(tracer))
            .init();
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        opentelemetry::global::set_meter_provider(meters.clone());
        toolwire_telemetry::enable();
        Caught {
            spans,
            metrics,
            meters,
        }
    })
}

/// A root span of the test's own, and its trace id.
fn root() -> (tracing::Span, TraceId) {
    let root = tracing::info_span!("test root");
    let trace = root.context().span().span_context().trace_id();
    (root, trace)
}

/// The `tools/call` spans of `trace`, once there are `count` of them (the
/// server's span ends just after its response is written). The client's
/// own `server/discover` and `tools/list` (to know the tool) are left out.
async fn spans_of(trace: TraceId, count: usize) -> Vec<SpanData> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let spans: Vec<SpanData> = caught()
            .spans
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .filter(|s| s.span_context.trace_id() == trace && s.name.starts_with("tools/call"))
            .collect();
        if spans.len() >= count || tokio::time::Instant::now() > deadline {
            assert_eq!(spans.len(), count, "spans: {:#?}", names(&spans));
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn names(spans: &[SpanData]) -> Vec<(String, SpanKind)> {
    spans
        .iter()
        .map(|s| (s.name.to_string(), s.span_kind.clone()))
        .collect()
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key == Key::from(key.to_owned()))
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|v| v.as_str().into_owned())
}

fn one<'a>(spans: &'a [SpanData], name: &str, kind: SpanKind) -> &'a SpanData {
    let found: Vec<_> = spans
        .iter()
        .filter(|s| s.name == name && s.span_kind == kind)
        .collect();
    assert_eq!(found.len(), 1, "{name} {kind:?} in {:#?}", names(spans));
    found[0]
}

fn span_id(span: &SpanData) -> SpanId {
    span.span_context.span_id()
}

fn http_client(url: String) -> ClientBuilder {
    Client::builder(toolwire_client::transport::HttpTransport::new(url).unwrap()).name("demo")
}

#[tokio::test]
async fn a_tool_call_is_one_trace_from_client_to_server_over_both_transports() {
    caught();
    let server = demo_server();
    let url = http_server(server.clone()).await;
    let clients = [
        (
            "pipe",
            None,
            Client::builder(pipe_transport(server)).name("demo").build(),
        ),
        ("tcp", Some("1.1"), http_client(url).build()),
    ];
    for (transport, http_version, client) in clients {
        let (root, trace) = root();
        let result = client
            .call_tool("echo", json!({"text": "a-secret-argument"}))
            .instrument(root.clone())
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("a-secret-argument"));
        drop(root);
        let spans = spans_of(trace, 3).await;
        // call_tool's span holds one client span per request it sends.
        let call_span = one(&spans, "tools/call echo", SpanKind::Internal);
        let client_span = one(&spans, "tools/call echo", SpanKind::Client);
        let server_span = one(&spans, "tools/call echo", SpanKind::Server);
        assert_eq!(client_span.parent_span_id, span_id(call_span));
        assert_eq!(
            server_span.parent_span_id,
            span_id(client_span),
            "{transport}"
        );
        assert!(server_span.parent_span_is_remote);
        for span in [client_span, server_span] {
            assert_eq!(text(span, "mcp.method.name").as_deref(), Some("tools/call"));
            assert_eq!(text(span, "gen_ai.tool.name").as_deref(), Some("echo"));
            assert_eq!(
                text(span, "gen_ai.operation.name").as_deref(),
                Some("execute_tool")
            );
            assert_eq!(
                text(span, "mcp.protocol.version").as_deref(),
                Some("2026-07-28")
            );
            assert_eq!(text(span, "network.transport").as_deref(), Some(transport));
            assert_eq!(attr(span, "error.type"), None);
            let id = text(span, "jsonrpc.request.id").expect("request id");
            assert!(id.parse::<i64>().is_ok(), "a string holding the id: {id}");
        }
        assert_eq!(
            text(server_span, "network.protocol.version").as_deref(),
            http_version
        );
        assert_eq!(
            text(client_span, "jsonrpc.request.id"),
            text(server_span, "jsonrpc.request.id")
        );
        assert_no_value(&spans, "a-secret-argument");
    }
}

#[tokio::test]
async fn failures_carry_error_type_as_the_conventions_say() {
    caught();
    let server = demo_server();
    let client = http_client(http_server(server).await).build();
    let (root, trace) = root();
    let failed = client
        .call_tool("fail", json!({}))
        .instrument(root.clone())
        .await;
    assert!(
        matches!(failed, Err(Error::ToolExecution { .. })),
        "{failed:?}"
    );
    let unknown = client
        .call_tool("no_such_tool", json!({}))
        .instrument(root.clone())
        .await;
    let code = unknown.unwrap_err().code();
    drop(root);
    let spans = spans_of(trace, 6).await;
    for kind in [SpanKind::Client, SpanKind::Server] {
        let fail = one(&spans, "tools/call fail", kind.clone());
        assert_eq!(text(fail, "error.type").as_deref(), Some("tool_error"));
        assert_eq!(fail.status, opentelemetry::trace::Status::error(""));
        let unknown = one(&spans, "tools/call no_such_tool", kind);
        let code = code.expect("a JSON-RPC error").to_string();
        assert_eq!(text(unknown, "error.type"), Some(code.clone()));
        assert_eq!(text(unknown, "rpc.response.status_code"), Some(code));
    }
}

fn accept(field: &str, value: serde_json::Value) -> ElicitResult {
    let value: ElicitValue = serde_json::from_value(value).unwrap();
    ElicitResult::accept([(field.to_owned(), value)].into())
}

#[tokio::test]
async fn every_round_of_an_input_required_call_is_in_the_same_trace() {
    caught();
    let client = http_client(http_server(demo_server()).await)
        .elicitation(|_: ElicitRequestParams, _: InputContext| async {
            Ok::<_, BoxError>(accept("ok", json!(true)))
        })
        .build();
    // No span of the caller's: the rounds still share one trace.
    let result = client
        .call_tool("confirm", json!({"text": "yes"}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("yes: confirmed"));
    // The call's span: the one whose trace holds two client requests
    // (a legacy test's call of the same tool holds one).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let rounds = loop {
        let spans = caught().spans.get_finished_spans().unwrap();
        let requests_in = |trace: TraceId| {
            spans
                .iter()
                .filter(|s| s.span_context.trace_id() == trace && s.span_kind == SpanKind::Client)
                .count()
        };
        let rounds = spans
            .iter()
            .find(|s| {
                s.name == "tools/call confirm"
                    && s.span_kind == SpanKind::Internal
                    && requests_in(s.span_context.trace_id()) == 2
            })
            .cloned();
        if rounds.is_some() || tokio::time::Instant::now() > deadline {
            break rounds.expect("the call's span");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let spans = spans_of(rounds.span_context.trace_id(), 5).await;
    let requests: Vec<_> = spans
        .iter()
        .filter(|s| s.span_kind == SpanKind::Client)
        .collect();
    assert_eq!(requests.len(), 2, "two requests: {:#?}", names(&spans));
    for request in &requests {
        assert_eq!(request.parent_span_id, span_id(&rounds));
        let served = spans
            .iter()
            .filter(|s| s.span_kind == SpanKind::Server && s.parent_span_id == span_id(request))
            .count();
        assert_eq!(served, 1);
    }
    assert_ne!(
        text(requests[0], "jsonrpc.request.id"),
        text(requests[1], "jsonrpc.request.id")
    );
}

#[tokio::test]
async fn the_duration_histograms_are_recorded_with_their_attributes() {
    let caught = caught();
    let client = http_client(http_server(demo_server()).await).build();
    client
        .call_tool("echo", json!({"text": "measured"}))
        .await
        .unwrap();
    // The server records after writing its response: wait (bounded).
    let echo_call = |attributes: &[&KeyValue]| {
        has(attributes, "mcp.method.name", "tools/call")
            && has(attributes, "gen_ai.tool.name", "echo")
            && has(attributes, "network.transport", "tcp")
            && !attributes
                .iter()
                .any(|kv| kv.key.as_str() == "jsonrpc.request.id")
    };
    let names = [
        "mcp.server.operation.duration",
        "mcp.client.operation.duration",
    ];
    assert!(
        histograms_have(caught, &names, echo_call).await,
        "{names:?}"
    );
}

/// Waits (bounded) until each histogram of `names` has a point whose
/// attributes satisfy `matches`.
async fn histograms_have(
    caught: &Caught,
    names: &[&str],
    matches: impl Fn(&[&KeyValue]) -> bool,
) -> bool {
    for _ in 0..100 {
        caught.meters.force_flush().unwrap();
        let exported = caught.metrics.get_finished_metrics().unwrap();
        if names
            .iter()
            .all(|name| has_point(&exported, name, &matches))
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// True when histogram `name` has a point whose attributes satisfy `matches`.
fn has_point(
    exported: &[opentelemetry_sdk::metrics::data::ResourceMetrics],
    name: &str,
    matches: &impl Fn(&[&KeyValue]) -> bool,
) -> bool {
    exported
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .filter(|m| m.name() == name)
        .any(|metric| {
            let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else {
                return false;
            };
            histogram.data_points().any(|point| {
                let attributes: Vec<&KeyValue> = point.attributes().collect();
                point.count() >= 1 && matches(&attributes)
            })
        })
}

/// True when `attributes` has `key` = `value`.
fn has(attributes: &[&KeyValue], key: &str, value: &str) -> bool {
    attributes
        .iter()
        .any(|kv| kv.key.as_str() == key && kv.value.as_str() == value)
}

/// No attribute or event of `spans` holds `value`.
fn assert_no_value(spans: &[SpanData], value: &str) {
    for span in spans {
        for kv in &span.attributes {
            assert!(
                !kv.value.as_str().contains(value),
                "{} in {}",
                kv.key,
                span.name
            );
        }
        for event in span.events.iter() {
            for kv in &event.attributes {
                assert!(
                    !kv.value.as_str().contains(value),
                    "{} in an event of {}",
                    kv.key,
                    span.name
                );
            }
        }
    }
}

#[tokio::test]
async fn a_legacy_servers_request_to_the_client_is_a_span_pair_inside_the_call() {
    use toolwire_client::transport::{HttpTransport, ProtocolMode};
    caught();
    let server = demo_server();
    let url = http_server(server.clone()).await;
    let transports: [(
        &str,
        std::sync::Arc<dyn toolwire_client::transport::Transport>,
    ); 2] = [
        (
            "pipe",
            std::sync::Arc::new(
                support::pipe_builder(server)
                    .protocol(ProtocolMode::Legacy)
                    .build(),
            ),
        ),
        (
            "tcp",
            std::sync::Arc::new(
                HttpTransport::builder(url)
                    .protocol(ProtocolMode::Legacy)
                    .build()
                    .unwrap(),
            ),
        ),
    ];
    for (transport, shared) in transports {
        let client = Client::builder_shared(shared)
            .name("demo")
            .elicitation(|_: ElicitRequestParams, _: InputContext| async {
                Ok::<_, BoxError>(accept("ok", json!(true)))
            })
            .build();
        let (root, trace) = root();
        let result = client
            .call_tool("confirm", json!({"text": "yes"}))
            .instrument(root.clone())
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("yes: confirmed"));
        drop(root);
        let spans = spans_of(trace, 3).await;
        let served = one(&spans, "tools/call confirm", SpanKind::Server);
        assert_eq!(
            text(served, "mcp.protocol.version").as_deref(),
            Some("2025-11-25")
        );
        assert_eq!(
            text(served, "network.transport").as_deref(),
            Some(transport)
        );
        assert_eq!(
            text(served, "mcp.session.id").is_some(),
            transport == "tcp",
            "a session id over HTTP only"
        );
        let all = caught().spans.get_finished_spans().unwrap();
        let asked = all
            .iter()
            .find(|s| {
                s.name == "elicitation/create"
                    && s.span_kind == SpanKind::Client
                    && s.parent_span_id == span_id(served)
            })
            .expect("the server's request to the client");
        let answered = all
            .iter()
            .find(|s| {
                s.name == "elicitation/create"
                    && s.span_kind == SpanKind::Server
                    && s.parent_span_id == span_id(asked)
            })
            .expect("the client's answer");
        assert_eq!(answered.span_context.trace_id(), trace, "{transport}");
    }
}

#[tokio::test]
async fn a_legacy_session_ending_records_its_duration_on_both_sides() {
    use toolwire_client::transport::{HttpTransport, ProtocolMode};
    let caught = caught();
    let url = http_server(demo_server()).await;
    let transport = HttpTransport::builder(url)
        .protocol(ProtocolMode::Legacy)
        .build()
        .unwrap();
    let client = Client::builder(transport).name("demo").build();
    client
        .call_tool("echo", json!({"text": "session"}))
        .await
        .unwrap();
    // Closing ends the session on the server too (DELETE).
    client.close().await;
    drop(client);
    let legacy_over_http = |attributes: &[&KeyValue]| {
        has(attributes, "mcp.protocol.version", "2025-11-25")
            && has(attributes, "network.transport", "tcp")
    };
    let names = ["mcp.server.session.duration", "mcp.client.session.duration"];
    assert!(
        histograms_have(caught, &names, legacy_over_http).await,
        "{names:?}"
    );
}

#[tokio::test]
async fn a_malformed_traceparent_starts_a_new_trace_and_the_call_is_served() {
    use toolwire_protocol::{Message, Request};
    caught();
    let server = demo_server();
    let params = json!({
        "name": "echo",
        "arguments": {"text": "still served"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": "00-not-a-trace-context-01",
        }
    });
    let request = Request::new(41_017, "tools/call", Some(support::object(params)));
    let Message::Result(response) = server
        .handle_request(request, toolwire_server::RequestEnv::new())
        .await
    else {
        panic!("the call should be answered");
    };
    assert_eq!(
        response.result.to_object().unwrap()["content"][0]["text"],
        "still served"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let span = loop {
        let found = caught()
            .spans
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .find(|s| text(s, "jsonrpc.request.id").as_deref() == Some("41017"));
        if let Some(span) = found {
            break span;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no span for the call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(span.name, "tools/call echo");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.parent_span_id, SpanId::INVALID, "a root span");
    assert!(!span.parent_span_is_remote);
}
