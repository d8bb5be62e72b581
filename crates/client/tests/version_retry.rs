//! -32022 naming the very version the request used: one retry with it.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolwire_client::Client;
use toolwire_client::transport::HttpTransport;
use toolwire_protocol::{ErrorObject, ErrorResponse, Message, Request, code};

use support::{fake_http, meta_of, reply};

/// Refuses the first `refusals` requests with -32022 listing `2026-07-28`.
fn flaky_server(refusals: usize) -> (support::Script, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let script: support::Script = Arc::new(move |request: &Request| {
        if counter.fetch_add(1, Ordering::SeqCst) < refusals {
            let error = ErrorObject::unsupported_protocol_version(&["2026-07-28"], "2026-07-28");
            return vec![Message::Error(ErrorResponse::new(
                Some(request.id.clone()),
                error,
            ))];
        }
        vec![reply(
            request,
            json!({"resultType": "complete", "tools": []}),
        )]
    });
    (script, calls)
}

#[tokio::test]
async fn a_refused_version_the_server_lists_is_retried_once_with_a_new_id() {
    let (script, calls) = flaky_server(1);
    let (url, received) = fake_http(script).await;
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    client.list_tools().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let requests = received.requests();
    assert_ne!(requests[0].id, requests[1].id);
    for (request, headers) in requests.iter().zip(received.headers()) {
        assert_eq!(
            meta_of(request)["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let header = headers.iter().find(|(k, _)| k == "mcp-protocol-version");
        assert_eq!(header.map(|(_, v)| v.as_str()), Some("2026-07-28"));
    }
    assert_eq!(client.protocol_version(), "2026-07-28");
}

#[tokio::test]
async fn a_second_refusal_of_the_same_version_is_the_error() {
    let (script, calls) = flaky_server(usize::MAX);
    let (url, _) = fake_http(script).await;
    let client = Client::builder(HttpTransport::new(url).unwrap()).build();
    let err = client.list_tools().await.unwrap_err();
    assert_eq!(err.code(), Some(code::UNSUPPORTED_PROTOCOL_VERSION));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one retry, no more");
}
