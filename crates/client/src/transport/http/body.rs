//! A reply of the lean path ([`LeanResponse`]), its body read one data
//! frame at a time with the error reqwest gives for a body that could not
//! be read, and its connection given back to the plain-HTTP pool once the
//! body has been read.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Incoming};

use super::plain::Lease;

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
const BODY_FAILED: &str = "error decoding response body";

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

/// A reply, with the lease of its connection when it came through the
/// plain-HTTP pool (`plain.rs`): the connection goes back to the pool once
/// the body has been read to its end.
#[derive(Debug)]
pub(super) struct LeanResponse {
    pub(super) response: http::Response<Incoming>,
    lease: Option<Lease>,
}

impl LeanResponse {
    /// `response`, whose connection (if `lease`) goes back to its pool as
    /// soon as its body is read: at once when it has none.
    pub(super) fn new(response: http::Response<Incoming>, lease: Option<Lease>) -> Self {
        let mut lean = LeanResponse { response, lease };
        lean.release_if_read();
        lean
    }

    /// The next piece of the body; `None` at its end.
    pub(super) async fn chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        let chunk = next_data(self.response.body_mut()).await;
        self.release_if_read();
        chunk
    }

    /// Gives the connection back to its pool once nothing of the body is
    /// left to read (at once for a reply without one).
    fn release_if_read(&mut self) {
        if self.response.body().is_end_stream()
            && let Some(lease) = self.lease.take()
        {
            lease.release();
        }
    }
}
