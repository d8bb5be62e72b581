//! [`HttpResponse`]: a server's reply, read the same way whichever client
//! sent the request (the lean path's hyper client, or reqwest).

use bytes::Bytes;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use super::body::{BodyError, LeanResponse};

/// The status, headers and body of one HTTP reply.
#[derive(Debug)]
pub(super) enum HttpResponse {
    /// Sent through reqwest (OAuth, a caller's client, a proxy).
    Reqwest(reqwest::Response),
    /// Sent through the lean path (`lean.rs`).
    Lean(LeanResponse),
}

impl HttpResponse {
    /// The reply's status.
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Self::Reqwest(response) => response.status(),
            Self::Lean(lean) => lean.response.status(),
        }
    }

    /// The reply's headers.
    pub(super) fn headers(&self) -> &HeaderMap {
        match self {
            Self::Reqwest(response) => response.headers(),
            Self::Lean(lean) => lean.response.headers(),
        }
    }

    /// The next piece of the body; `None` at its end.
    pub(super) async fn chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        match self {
            Self::Reqwest(response) => response.chunk().await.map_err(|e| BodyError(e.to_string())),
            Self::Lean(lean) => lean.chunk().await,
        }
    }
}
