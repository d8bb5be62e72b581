//! Criterion micro-benchmarks of toolwire's hot path, with no socket:
//!
//! - `dispatch/*`: parse one request's bytes and run it through
//!   `Server::handle_request` (the dispatcher every transport calls);
//! - `http_router/*`: the same request through the axum router of the HTTP
//!   transport (header checks, body read, reply), still without a socket;
//! - `validate/*`: `CompiledSchema::validate` of realistic arguments;
//! - `serialise/*`: writing the `tools/call` reply to bytes.
//!
//! Run with `cargo bench --manifest-path bench/Cargo.toml`.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::BodyExt;
use toolwire_bench::servers::{ToolwireOptions, toolwire_server};
use toolwire_bench::workload::{Workload, order_arguments, order_schema};
use toolwire_protocol::Message;
use toolwire_schema::CompiledSchema;
use toolwire_server::{RequestEnv, Server};
use tower::ServiceExt;

fn server() -> Server {
    toolwire_server(ToolwireOptions {
        fillers: 0,
        max_listeners: None,
        order_tools: true,
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn dispatch(c: &mut Criterion) {
    let server = server();
    let runtime = runtime();
    let mut group = c.benchmark_group("dispatch");
    for workload in [Workload::Echo, Workload::Order, Workload::OrderLoose] {
        let body = workload.body(1);
        group.bench_function(workload.tool().unwrap_or("list"), |b| {
            b.iter(|| {
                let Ok(Message::Request(request)) = Message::from_slice(black_box(body.as_bytes()))
                else {
                    panic!("a request")
                };
                let reply = runtime.block_on(server.handle_request(request, RequestEnv::new()));
                black_box(reply)
            })
        });
    }
    group.bench_function("parse_only/echo", |b| {
        let body = Workload::Echo.body(1);
        b.iter(|| black_box(Message::from_slice(black_box(body.as_bytes())).unwrap()))
    });
    group.finish();
}

fn http_router(c: &mut Criterion) {
    let runtime = runtime();
    let router = toolwire_server::http::router(server(), toolwire_server::http::HttpConfig::new());
    let body = Bytes::from(Workload::Echo.body(1));
    c.bench_function("http_router/echo", |b| {
        b.iter(|| {
            let request = http::Request::builder()
                .method("POST")
                .uri("/mcp")
                .header("host", "127.0.0.1:8080")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "echo")
                .body(axum::body::Body::from(body.clone()))
                .unwrap();
            let router = router.clone();
            runtime.block_on(async move {
                let response = router.oneshot(request).await.unwrap();
                assert_eq!(response.status(), 200);
                black_box(response.into_body().collect().await.unwrap().to_bytes())
            })
        })
    });
}

fn validate(c: &mut Criterion) {
    let schema = CompiledSchema::compile(&order_schema()).expect("the order schema compiles");
    let arguments: serde_json::Value = serde_json::from_str(order_arguments()).unwrap();
    c.bench_function("validate/order", |b| {
        b.iter(|| black_box(schema.validate(black_box(&arguments)).is_ok()))
    });
    let echo = CompiledSchema::compile(&serde_json::json!({
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]
    }))
    .unwrap();
    let text = serde_json::json!({"text": "hello from request 1"});
    c.bench_function("validate/echo", |b| {
        b.iter(|| black_box(echo.validate(black_box(&text)).is_ok()))
    });
}

fn serialise(c: &mut Criterion) {
    let server = server();
    let runtime = runtime();
    let Ok(Message::Request(request)) = Message::from_slice(Workload::Echo.body(1).as_bytes())
    else {
        panic!("a request")
    };
    let reply = runtime.block_on(server.handle_request(request, RequestEnv::new()));
    c.bench_function("serialise/echo_result", |b| {
        b.iter(|| black_box(serde_json::to_vec(black_box(&reply)).unwrap()))
    });
}

criterion_group!(benches, dispatch, http_router, validate, serialise);
criterion_main!(benches);
