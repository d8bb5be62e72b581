//! What the HTTP/1.1 and HTTP/2 connections share: handing a request to
//! the router, and logging how a connection ended.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use tower::ServiceExt;
use tower::util::Oneshot;

/// Hands `request` from `peer` to the router.
pub(super) fn route(
    router: &Router,
    peer: SocketAddr,
    request: hyper::Request<Incoming>,
) -> Oneshot<Router, axum::extract::Request> {
    let mut request = request.map(axum::body::Body::new);
    request.extensions_mut().insert(ConnectInfo(peer));
    router.clone().oneshot(request)
}

pub(super) fn log_end(result: Result<(), hyper::Error>) {
    if let Err(error) = result {
        tracing::trace!(%error, "connection ended with an error");
    }
}
