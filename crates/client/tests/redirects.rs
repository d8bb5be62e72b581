//! HTTP redirects: followed within the endpoint's origin, never to another
//! one (which would get the request's headers, an API key among them, and
//! its body).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde_json::json;
use toolwire_client::transport::{HttpTransport, OutgoingRequest, ProtocolMode, Transport};
use toolwire_client::{Client, Error, TransportError};
use toolwire_protocol::Request;

/// A server on 127.0.0.1 whose `/mcp` answers every POST with a 307 to
/// `target` (given the server's port), and whose `/moved` counts what it
/// gets and answers 404.
async fn redirecting_to(
    target: impl Fn(u16) -> String + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let location = target(port);
    let moved = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&moved);
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || {
                let location = location.clone();
                async move {
                    (
                        StatusCode::TEMPORARY_REDIRECT,
                        [(header::LOCATION, location)],
                    )
                        .into_response()
                }
            }),
        )
        .route(
            "/moved",
            axum::routing::post(move || {
                seen.fetch_add(1, Ordering::SeqCst);
                async { StatusCode::NOT_FOUND }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}/mcp"), moved)
}

/// A server on 127.0.0.1 that counts the requests it gets.
async fn counting() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hits);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().fallback(move || {
        seen.fetch_add(1, Ordering::SeqCst);
        async { StatusCode::OK }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}/collect"), hits)
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed() {
    let (elsewhere, hits) = counting().await;
    let target = elsewhere.clone();
    let (url, _) = redirecting_to(move |_| target.clone()).await;
    let transport = HttpTransport::builder(&url)
        .header("X-Api-Key", "secret")
        .build()
        .unwrap();
    let err = Client::builder(transport)
        .build()
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap_err();
    let expected = format!(
        "{url} answered 307 with a redirect to {elsewhere}: not followed, redirects are \
         followed only within the endpoint's origin"
    );
    assert!(
        matches!(&err, Error::Transport(TransportError::Io(m)) if *m == expected),
        "{err:?}"
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the other origin got nothing"
    );
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let (url, moved) = redirecting_to(|port| format!("http://127.0.0.1:{port}/moved")).await;
    let transport = HttpTransport::builder(&url)
        .protocol(ProtocolMode::Modern)
        .build()
        .unwrap();
    let request = Request::new(1, "tools/list", None);
    let Err(err) = transport.send(OutgoingRequest::new(request)).await else {
        panic!("/moved answers 404");
    };
    // What comes back is /moved's answer, not the 307.
    assert!(
        matches!(&err, TransportError::Http { status: 404, .. }),
        "{err:?}"
    );
    assert_eq!(moved.load(Ordering::SeqCst), 1);
}
