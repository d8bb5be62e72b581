//! Health checks for load balancers and orchestrators, served beside the
//! endpoint with [`HttpServer::with_routes`](super::HttpServer::with_routes):
//!
//! - `GET /healthz`: the process is up and serving HTTP: always **200**
//!   with the body `ok`.
//! - `GET /readyz`: the server can serve calls: **200** with
//!   `{"status":"ready"}`, or **503** with
//!   `{"status":"not ready","notReady":[...]}` listing what is not (one
//!   short line each, from the check you supply).
//!
//! Neither goes through the endpoint's checks (Host and Origin,
//! authentication, rate limits), and neither says anything a caller could
//! not learn by calling a tool; serve them only where your infrastructure
//! needs them.
//!
//! ```no_run
//! # async fn demo(server: toolwire_server::Server) -> std::io::Result<()> {
//! use toolwire_server::http::{HttpConfig, HttpServer, health_routes};
//! let health = health_routes(|| async { Vec::<String>::new() });
//! HttpServer::bind("127.0.0.1:0".parse().unwrap(), server, HttpConfig::new())
//!     .await?
//!     .with_routes(health)
//!     .run()
//!     .await
//! # }
//! ```

use std::future::Future;

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};

/// The path of the liveness check.
pub const HEALTHZ_PATH: &str = "/healthz";

/// The path of the readiness check.
pub const READYZ_PATH: &str = "/readyz";

/// `GET /healthz` and `GET /readyz`. `not_ready` is asked at each
/// `/readyz` request for what keeps the server from serving now (a store
/// it cannot reach, an upstream that is down), one short line each; none
/// means ready.
pub fn health_routes<F, Fut>(not_ready: F) -> Router
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Vec<String>> + Send + 'static,
{
    Router::new()
        .route(
            HEALTHZ_PATH,
            get(|| async { uncached(StatusCode::OK, "ok") }),
        )
        .route(
            READYZ_PATH,
            get(move || {
                let not_ready = not_ready.clone();
                async move { readiness(not_ready().await) }
            }),
        )
}

/// [`health_routes`] for `server`: once its graceful stop has begun
/// ([`Server::is_stopping`](crate::Server::is_stopping)) `/readyz` answers
/// 503 with `draining` first, so that a balancer still holding a connection
/// stops sending new calls.
pub fn health_routes_for<F, Fut>(server: &crate::Server, not_ready: F) -> Router
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Vec<String>> + Send + 'static,
{
    let server = server.clone();
    health_routes(move || {
        let stopping = server.is_stopping();
        let rest = not_ready();
        async move {
            let mut lines = Vec::new();
            if stopping {
                lines.push("draining".to_owned());
            }
            lines.extend(rest.await);
            lines
        }
    })
}

/// The `/readyz` reply for what is not ready.
fn readiness(not_ready: Vec<String>) -> Response {
    let (status, body) = if not_ready.is_empty() {
        (StatusCode::OK, r#"{"status":"ready"}"#.to_owned())
    } else {
        let list = serde_json::to_string(&not_ready).unwrap_or_else(|_| "[]".into());
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(r#"{{"status":"not ready","notReady":{list}}}"#),
        )
    };
    let mut response = uncached(status, body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn uncached(status: StatusCode, body: impl IntoResponse) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use axum::body::{Body, to_bytes};
    use tower::ServiceExt;

    use super::*;

    async fn get(router: Router, path: &str) -> (StatusCode, String, String) {
        let request = http::Request::get(path).body(Body::empty()).unwrap();
        let response = router.oneshot(request).await.unwrap();
        let status = response.status();
        let kind = response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let body = to_bytes(response.into_body(), 1 << 16).await.unwrap();
        (status, kind, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn ready_and_not_ready() {
        let ready = health_routes(|| async { Vec::new() });
        assert_eq!(
            get(ready.clone(), "/healthz").await,
            (
                StatusCode::OK,
                "text/plain; charset=utf-8".into(),
                "ok".into()
            )
        );
        assert_eq!(
            get(ready, "/readyz").await,
            (
                StatusCode::OK,
                "application/json".into(),
                r#"{"status":"ready"}"#.into()
            )
        );
        let down = health_routes(|| async { vec!["upstream notes: backing off".to_owned()] });
        assert_eq!(
            get(down.clone(), "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "application/json".into(),
                r#"{"status":"not ready","notReady":["upstream notes: backing off"]}"#.into()
            )
        );
        assert_eq!(get(down, "/healthz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn a_stopping_server_is_not_ready_draining_first() {
        let server = crate::Server::builder("health", "1").build().unwrap();
        let routes = health_routes_for(&server, || async { vec!["redis down".to_owned()] });
        let (status, _, body) = get(routes.clone(), "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, r#"{"status":"not ready","notReady":["redis down"]}"#);
        server.shutdown();
        let (status, _, body) = get(routes, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            r#"{"status":"not ready","notReady":["draining","redis down"]}"#
        );
    }
}
