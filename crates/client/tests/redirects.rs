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

/// The error of a `tools/list` sent to `url` (it must fail).
async fn failed_tools_list(url: &str) -> TransportError {
    let transport = HttpTransport::builder(url)
        .protocol(ProtocolMode::Modern)
        .build()
        .unwrap();
    let request = Request::new(1, "tools/list", None);
    match transport.send(OutgoingRequest::new(request)).await {
        Err(error) => error,
        Ok(_) => panic!("tools/list at {url} was answered"),
    }
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let (url, moved) = redirecting_to(|port| format!("http://127.0.0.1:{port}/moved")).await;
    let err = failed_tools_list(&url).await;
    // What comes back is /moved's answer, not the 307.
    assert!(
        matches!(&err, TransportError::Http { status: 404, .. }),
        "{err:?}"
    );
    assert_eq!(moved.load(Ordering::SeqCst), 1);
}

/// A server on 127.0.0.1 whose every path redirects to the next one
/// (`/mcp` to `/r1`, `/r1` to `/r2`, ...), 307 each time.
async fn endless_redirects() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| async move {
        let next = match uri.path().strip_prefix("/r") {
            Some(n) => n.parse::<u32>().unwrap() + 1,
            None => 1,
        };
        (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, format!("/r{next}"))],
        )
            .into_response()
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}/mcp")
}

#[tokio::test]
async fn more_than_five_redirects_fail() {
    let url = endless_redirects().await;
    let err = failed_tools_list(&url).await;
    // reqwest's wording, kept by the lean path: five followed, the sixth
    // (from /r5) refused.
    let base = url.trim_end_matches("/mcp");
    let expected = format!(
        "POST {url} failed: error following redirect for url ({base}/r5): more than 5 redirects"
    );
    assert!(
        matches!(&err, TransportError::Io(m) if *m == expected),
        "{err:?}"
    );
}

/// What the redirect target got.
#[derive(Debug, Clone, Default)]
struct Arrival {
    method: String,
    body: String,
    api_key: Option<String>,
    referer: Option<String>,
}

/// A server on 127.0.0.1 whose `/mcp` answers with `status` and a
/// `Location` of `/moved`, and whose `/moved` records what it gets and
/// answers a JSON-RPC result.
async fn redirecting_with(status: StatusCode) -> (String, Arc<std::sync::Mutex<Vec<Arrival>>>) {
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&arrivals);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || async move {
                (status, [(header::LOCATION, "/moved")]).into_response()
            }),
        )
        .route(
            "/moved",
            axum::routing::any(
                move |method: axum::http::Method, headers: axum::http::HeaderMap, body: String| {
                    let text =
                        |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
                    seen.lock().unwrap().push(Arrival {
                        method: method.to_string(),
                        body,
                        api_key: text("x-api-key"),
                        referer: text("referer"),
                    });
                    async {
                        (
                            [(header::CONTENT_TYPE, "application/json")],
                            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
                        )
                    }
                },
            ),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}/mcp"), arrivals)
}

/// Lists tools at `url`: through the transport's own client, or through
/// reqwest's default client (`http_client`) to compare with.
async fn list_tools_through(url: &str, reqwest_client: bool) -> Result<(), TransportError> {
    let mut builder = HttpTransport::builder(url)
        .protocol(ProtocolMode::Modern)
        .header("X-Api-Key", "secret");
    if reqwest_client {
        builder = builder.http_client(reqwest::Client::new());
    }
    let transport = builder.build().unwrap();
    let request = Request::new(1, "tools/list", None);
    let mut exchange = transport.send(OutgoingRequest::new(request)).await?;
    exchange.next().await.unwrap().map(|_| ())
}

/// What `/moved` got after a redirect with `status`, through the
/// transport's own client and through reqwest's (the two must agree).
async fn arrivals_after(status: StatusCode) -> Vec<Arrival> {
    let (url, arrivals) = redirecting_with(status).await;
    list_tools_through(&url, false).await.unwrap();
    let own = arrivals.lock().unwrap().clone();
    arrivals.lock().unwrap().clear();
    list_tools_through(&url, true).await.unwrap();
    let reqwest = arrivals.lock().unwrap().clone();
    assert_eq!(format!("{own:?}"), format!("{reqwest:?}"));
    own
}

#[tokio::test]
async fn a_307_is_followed_with_the_same_post_and_a_referer() {
    let arrivals = arrivals_after(StatusCode::TEMPORARY_REDIRECT).await;
    assert_eq!(arrivals.len(), 1, "{arrivals:?}");
    let moved = &arrivals[0];
    assert_eq!(moved.method, "POST");
    assert!(moved.body.contains("tools/list"), "{moved:?}");
    assert_eq!(moved.api_key.as_deref(), Some("secret"));
    let referer = moved.referer.as_deref().unwrap();
    assert!(
        referer.starts_with("http://127.0.0.1:") && referer.ends_with("/mcp"),
        "{referer}"
    );
}

#[tokio::test]
async fn a_303_is_followed_with_a_get_without_body() {
    let arrivals = arrivals_after(StatusCode::SEE_OTHER).await;
    assert_eq!(arrivals.len(), 1, "{arrivals:?}");
    assert_eq!(arrivals[0].method, "GET");
    assert_eq!(arrivals[0].body, "");
    assert_eq!(arrivals[0].api_key.as_deref(), Some("secret"));
}
