//! What the HTTP/1.1 and HTTP/2 connections share: handing a request to
//! the endpoint or the router, and logging how a connection ended.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::response::Response;
use futures::future::Either;
use hyper::body::Incoming;
use tower::ServiceExt;
use tower::util::Oneshot;

use super::endpoint::{Endpoint, serve};

/// Where a connection's requests go: the MCP endpoint's path straight to
/// its handler, every other path (health, OAuth metadata, the caller's own
/// routes) through the router.
///
/// The endpoint is also in the router (its public form, [`super::router`],
/// is the router alone); going around the router for it saves its
/// matching, the boxed handler and the response mapping on every call
/// (about 3,000 instructions of a 69,000-instruction `tools/call`).
#[derive(Clone)]
pub(super) struct Routes {
    pub(super) router: Router,
    pub(super) endpoint: Arc<Endpoint>,
}

/// A reply on its way: the endpoint's or the router's.
///
/// The endpoint's future (about 4 KB) is boxed per request on purpose.
/// Unboxed, it would size the slot hyper keeps for the whole life of an
/// HTTP/1.1 connection, so every connection, an idle listen stream's too,
/// would hold it: 3.7 KB more per stream for 670 fewer instructions per
/// call (bench/README, "The endpoint's future unboxed").
pub(super) type RouteFuture = Either<
    Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>,
    Oneshot<Router, axum::extract::Request>,
>;

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field("router", &self.router)
            .field("endpoint", &self.endpoint.config.path)
            .finish()
    }
}

impl Routes {
    /// Hands `request` from `peer` to the endpoint or the router.
    pub(super) fn route(&self, peer: SocketAddr, request: hyper::Request<Incoming>) -> RouteFuture {
        let mut request = request.map(axum::body::Body::new);
        if request.uri().path() == self.endpoint.config.path {
            // The endpoint is handed the address itself; an authenticator
            // may read it from the extensions.
            if self.endpoint.config.auth.is_some() {
                request.extensions_mut().insert(ConnectInfo(peer));
            }
            let endpoint = Arc::clone(&self.endpoint);
            Either::Left(Box::pin(async move {
                Ok(serve(&endpoint, request, Some(peer)).await)
            }))
        } else {
            request.extensions_mut().insert(ConnectInfo(peer));
            Either::Right(self.router.clone().oneshot(request))
        }
    }
}

pub(super) fn log_end(result: Result<(), hyper::Error>) {
    if let Err(error) = result {
        tracing::trace!(%error, "connection ended with an error");
    }
}
