//! OpenTelemetry from the real program: `toolwire call`, `toolwire serve
//! --stdio` and `toolwire gateway` export to an OTLP receiver started here
//! (a small hyper server on 127.0.0.1:0 that takes OTLP/HTTP in JSON and
//! protobuf, and OTLP/gRPC over h2c, configured through the standard OTEL_*
//! variables), and one trace runs from the client through the gateway to
//! the upstream's tool.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use support::{Served, bin, fresh_dir, run_with_env};

/// What the receiver got: spans with their service, and metric names.
#[derive(Default)]
struct Received {
    spans: Vec<(String, Span)>,
    metrics: Vec<String>,
    content_types: Vec<String>,
}

/// An OTLP/HTTP receiver on 127.0.0.1:0 (its own runtime, on a thread).
struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Received>>,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    fn start() -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let received = Arc::new(Mutex::new(Received::default()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let into = Arc::clone(&received);
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let into = Arc::clone(&into);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let into = Arc::clone(&into);
                        async move { Ok::<_, hyper::Error>(receive(request, &into).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let executor = hyper_util::rt::TokioExecutor::new();
                    let _ = hyper_util::server::conn::auto::Builder::new(executor)
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Receiver {
            addr,
            received,
            _runtime: runtime,
        }
    }

    fn env(&self, protocol: &'static str) -> Vec<(&'static str, String)> {
        vec![
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://{}", self.addr),
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.to_owned()),
        ]
    }

    /// Waits (bounded) until `done` holds for what was received.
    fn wait_for(&self, what: &str, done: impl Fn(&Received) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(&self.received.lock().unwrap()) {
            if Instant::now() > deadline {
                let received = self.received.lock().unwrap();
                let spans: Vec<_> = received
                    .spans
                    .iter()
                    .map(|(service, s)| format!("{service}: {} ({:?})", s.name, s.kind))
                    .collect();
                panic!(
                    "no {what} within 30 s; spans: {spans:#?}, metrics: {:?}",
                    received.metrics
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

async fn receive(request: Request<Incoming>, into: &Mutex<Received>) -> Response<Answer> {
    let path = request.uri().path().to_owned();
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut body = request.into_body().collect().await.unwrap().to_bytes();
    let grpc = content_type.starts_with("application/grpc");
    if grpc {
        // One uncompressed message: a zero flag byte and a 4-byte length.
        assert_eq!(body[0], 0, "an uncompressed gRPC message");
        body = body.slice(5..);
    }
    let json = content_type.starts_with("application/json");
    let mut received = into.lock().unwrap();
    received.content_types.push(content_type.clone());
    match path.as_str() {
        "/v1/traces" | "/opentelemetry.proto.collector.trace.v1.TraceService/Export" => {
            let export: ExportTraceServiceRequest = if json {
                serde_json::from_slice(&body).expect("OTLP JSON traces")
            } else {
                ExportTraceServiceRequest::decode(body).expect("OTLP protobuf traces")
            };
            received.take_spans(export);
        }
        "/v1/metrics" | "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export" => {
            let export: ExportMetricsServiceRequest = if json {
                serde_json::from_slice(&body).expect("OTLP JSON metrics")
            } else {
                ExportMetricsServiceRequest::decode(body).expect("OTLP protobuf metrics")
            };
            for resource in export.resource_metrics {
                for scope in resource.scope_metrics {
                    received
                        .metrics
                        .extend(scope.metrics.into_iter().map(|m| m.name));
                }
            }
        }
        other => panic!("unexpected OTLP path {other}"),
    }
    if grpc {
        let mut response = Response::new(Answer::Grpc(0));
        response
            .headers_mut()
            .insert("content-type", "application/grpc".parse().unwrap());
        response
    } else {
        Response::new(Answer::Http(Full::new(Bytes::new())))
    }
}

impl Received {
    fn take_spans(&mut self, export: ExportTraceServiceRequest) {
        for resource in export.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| string_of(kv.value.as_ref()?))
                .unwrap_or_default();
            for scope in resource.scope_spans {
                for span in scope.spans {
                    self.spans.push((service.clone(), span));
                }
            }
        }
    }
}

/// The receiver's reply: an empty HTTP body, or a gRPC success (an empty
/// message, then the trailers that say `grpc-status: 0`).
enum Answer {
    Http(Full<Bytes>),
    /// How many frames of the gRPC reply were sent.
    Grpc(u8),
}

impl hyper::body::Body for Answer {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        use hyper::body::Frame;
        match self.get_mut() {
            Answer::Http(full) => std::pin::Pin::new(full).poll_frame(cx),
            Answer::Grpc(sent) => {
                *sent += 1;
                std::task::Poll::Ready(match *sent {
                    1 => Some(Ok(Frame::data(Bytes::from_static(&[0, 0, 0, 0, 0])))),
                    2 => {
                        let mut trailers = hyper::HeaderMap::new();
                        trailers.insert("grpc-status", "0".parse().unwrap());
                        Some(Ok(Frame::trailers(trailers)))
                    }
                    _ => None,
                })
            }
        }
    }
}

fn string_of(value: &opentelemetry_proto::tonic::common::v1::AnyValue) -> Option<String> {
    match value.value.as_ref()? {
        any_value::Value::StringValue(text) => Some(text.clone()),
        _ => None,
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| string_of(kv.value.as_ref()?))
}

/// The one span of `service` named `name` of `kind`.
fn find(received: &Received, service: &str, name: &str, kind: SpanKind) -> Span {
    let found: Vec<&Span> = received
        .spans
        .iter()
        .filter(|(s, span)| s == service && span.name == name && span.kind == kind as i32)
        .map(|(_, span)| span)
        .collect();
    assert_eq!(found.len(), 1, "{service}: {name} {kind:?}");
    found[0].clone()
}

fn has(received: &Received, service: &str, name: &str, kind: SpanKind) -> bool {
    received
        .spans
        .iter()
        .any(|(s, span)| s == service && span.name == name && span.kind == kind as i32)
}

/// `toolwire call echo ARGUMENT -- toolwire serve --stdio`, both exporting
/// to `receiver` in `protocol`; the call must succeed.
fn call_over_stdio(receiver: &Receiver, protocol: &'static str, argument: &str) {
    let env = receiver.env(protocol);
    let args = [
        "call",
        "--json",
        "--yes",
        "echo",
        argument,
        "--",
        bin(),
        "serve",
        "--stdio",
    ];
    run_with_env(&args, "", &with_env(&env)).expect_code(0);
}

fn with_env<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'a str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[test]
fn a_call_over_stdio_is_one_trace_across_two_processes_sent_as_otlp_json() {
    let receiver = Receiver::start();
    call_over_stdio(&receiver, "http/json", "text=a-secret-argument");
    receiver.wait_for("client and server spans", |r| {
        has(r, "toolwire", "tools/call echo", SpanKind::Client)
            && has(r, "toolwire", "tools/call echo", SpanKind::Server)
    });
    let received = receiver.received.lock().unwrap();
    let client = find(&received, "toolwire", "tools/call echo", SpanKind::Client);
    let server = find(&received, "toolwire", "tools/call echo", SpanKind::Server);
    assert_eq!(server.trace_id, client.trace_id);
    assert_eq!(server.parent_span_id, client.span_id);
    assert_eq!(
        attribute(&server, "network.transport").as_deref(),
        Some("pipe")
    );
    assert_eq!(
        attribute(&server, "gen_ai.tool.name").as_deref(),
        Some("echo")
    );
    assert_eq!(
        attribute(&server, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    for (_, span) in &received.spans {
        for kv in &span.attributes {
            let value = kv.value.as_ref().and_then(string_of).unwrap_or_default();
            assert!(
                !value.contains("a-secret-argument"),
                "{} in {}",
                kv.key,
                span.name
            );
        }
    }
    assert!(
        received
            .content_types
            .iter()
            .all(|t| t.starts_with("application/json"))
    );
    drop(received);
    receiver.wait_for("both duration histograms", |r| {
        r.metrics
            .iter()
            .any(|m| m == "mcp.server.operation.duration")
            && r.metrics
                .iter()
                .any(|m| m == "mcp.client.operation.duration")
    });
}

#[test]
fn one_trace_runs_from_the_client_through_the_gateway_to_the_upstream_in_protobuf() {
    let receiver = Receiver::start();
    let env = receiver.env("http/protobuf");
    let config = fresh_dir("telemetry").join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nhttp = \"127.0.0.1:0\"\n\n[[upstream]]\nname = \"demo\"\n\
             command = [{:?}, \"serve\", \"--stdio\"]\nallow = [\"echo\"]\n",
            bin()
        ),
    )
    .unwrap();
    let mut gateway = Served::command_with_env(
        &["gateway", "--config", config.to_str().unwrap()],
        &with_env(&env),
    );
    let ran = run_with_env(
        &[
            "call",
            &gateway.url,
            "demo__echo",
            "text=through",
            "--yes",
            "--json",
        ],
        "",
        &with_env(&env),
    );
    ran.expect_code(0);
    // The gateway and its upstream send their spans when they stop.
    assert!(gateway.terminate().success());
    receiver.wait_for("the four spans of the call", |r| {
        has(r, "toolwire", "tools/call demo__echo", SpanKind::Client)
            && has(
                r,
                "toolwire-gateway",
                "tools/call demo__echo",
                SpanKind::Server,
            )
            && has(r, "toolwire-gateway", "tools/call echo", SpanKind::Client)
            && has(r, "toolwire", "tools/call echo", SpanKind::Server)
    });
    let received = receiver.received.lock().unwrap();
    let client = find(
        &received,
        "toolwire",
        "tools/call demo__echo",
        SpanKind::Client,
    );
    let at_gateway = find(
        &received,
        "toolwire-gateway",
        "tools/call demo__echo",
        SpanKind::Server,
    );
    let forwarded = find(
        &received,
        "toolwire-gateway",
        "tools/call echo",
        SpanKind::Client,
    );
    // The upstream child inherits the variables, as `toolwire serve`.
    let upstream = find(&received, "toolwire", "tools/call echo", SpanKind::Server);
    assert_eq!(at_gateway.parent_span_id, client.span_id);
    assert_eq!(
        received
            .spans
            .iter()
            .filter(|(_, s)| s.span_id == forwarded.parent_span_id)
            .map(|(_, s)| s.trace_id.clone())
            .collect::<Vec<_>>(),
        vec![client.trace_id.clone()],
        "the forwarded call's parent is in the client's trace"
    );
    assert_eq!(upstream.parent_span_id, forwarded.span_id);
    for span in [&at_gateway, &forwarded, &upstream] {
        assert_eq!(span.trace_id, client.trace_id);
    }
    assert_eq!(
        attribute(&at_gateway, "network.transport").as_deref(),
        Some("tcp")
    );
    assert_eq!(
        attribute(&upstream, "network.transport").as_deref(),
        Some("pipe")
    );
    assert!(
        received
            .content_types
            .iter()
            .all(|t| t == "application/x-protobuf")
    );
}

#[test]
fn the_exporters_also_speak_grpc() {
    let receiver = Receiver::start();
    call_over_stdio(&receiver, "grpc", "text=over grpc");
    receiver.wait_for("client and server spans over gRPC", |r| {
        has(r, "toolwire", "tools/call echo", SpanKind::Client)
            && has(r, "toolwire", "tools/call echo", SpanKind::Server)
            && r.metrics
                .iter()
                .any(|m| m == "mcp.server.operation.duration")
    });
    let received = receiver.received.lock().unwrap();
    assert!(
        received
            .content_types
            .iter()
            .all(|t| t.starts_with("application/grpc"))
    );
}
