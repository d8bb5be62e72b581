//! Which HTTP redirects the transport follows.

use crate::transport::TransportError;

/// Redirects are followed only within the endpoint's origin (scheme, host
/// and port), at most five: a redirect elsewhere would carry the request's
/// headers (an API key given as a header, the session id) and its body to
/// another site. A client passed to [`super::HttpTransportBuilder::http_client`]
/// brings its own policy.
pub(super) fn same_origin() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 5 {
            attempt.error("more than 5 redirects")
        } else {
            attempt.follow()
        }
    })
}

/// The error for a redirect that was not followed.
pub(super) fn refused(url: &reqwest::Url, response: &reqwest::Response) -> TransportError {
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("nowhere");
    TransportError::Io(format!(
        "{url} answered {} with a redirect to {location}: not followed, redirects are followed \
         only within the endpoint's origin",
        response.status().as_u16()
    ))
}
