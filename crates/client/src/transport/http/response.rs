//! [`HttpResponse`]: a server's reply, read the same way whichever client
//! sent the request (the lean path's hyper-util client, or reqwest).

use bytes::Bytes;
use http_body_util::BodyExt;

use super::lean::LeanResponse;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// The status, headers and body of one HTTP reply.
#[derive(Debug)]
pub(super) enum HttpResponse {
    /// Sent through reqwest (OAuth, a caller's client, a proxy).
    Reqwest(reqwest::Response),
    /// Sent through the lean path (`lean.rs`).
    Lean(LeanResponse),
}

/// Reading the body failed (the connection broke, say).
#[derive(Debug)]
pub(super) struct BodyError(pub(super) String);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What reqwest says of a body that could not be read; the lean path says
/// the same, so that error texts do not depend on the client.
pub(super) const BODY_FAILED: &str = "error decoding response body";

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

/// The next data frame of a hyper body (trailers are skipped).
pub(super) async fn next_data(
    body: &mut hyper::body::Incoming,
) -> Result<Option<Bytes>, BodyError> {
    loop {
        let Some(frame) = body.frame().await else {
            return Ok(None);
        };
        let frame = frame.map_err(|_| BodyError(BODY_FAILED.to_owned()))?;
        if let Ok(data) = frame.into_data() {
            return Ok(Some(data));
        }
    }
}
