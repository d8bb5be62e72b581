//! Reading a hyper reply's body one data frame at a time, with the error
//! reqwest gives for a body that could not be read.

use bytes::Bytes;
use http_body_util::BodyExt;

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
