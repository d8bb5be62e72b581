//! Which HTTP redirects the transport follows.

use super::response::HttpResponse;
use crate::transport::TransportError;

/// The most redirects followed for one request.
const MAX_REDIRECTS: usize = 5;

/// What to do with a redirect to `next`.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Send the request there.
    Follow,
    /// Return the redirect itself (the transport then refuses it).
    Stop,
    /// Fail the request, for this reason.
    TooMany(&'static str),
}

/// Redirects are followed only within the endpoint's origin (scheme, host
/// and port), at most five: a redirect elsewhere would carry the request's
/// headers (an API key given as a header, the session id) and its body to
/// another site. `previous` holds the URLs redirected from so far, the
/// endpoint first.
pub(super) fn judge(previous: &[reqwest::Url], next: &reqwest::Url) -> Verdict {
    let same_origin = previous
        .first()
        .is_some_and(|first| first.origin() == next.origin());
    if !same_origin {
        Verdict::Stop
    } else if previous.len() > MAX_REDIRECTS {
        Verdict::TooMany("more than 5 redirects")
    } else {
        Verdict::Follow
    }
}

/// [`judge`] as reqwest's redirect policy. A client passed to
/// [`super::HttpTransportBuilder::http_client`] brings its own policy.
pub(super) fn same_origin() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| match judge(attempt.previous(), attempt.url()) {
        Verdict::Follow => attempt.follow(),
        Verdict::Stop => attempt.stop(),
        Verdict::TooMany(reason) => attempt.error(reason),
    })
}

/// The error for a redirect that was not followed.
pub(super) fn refused(url: &reqwest::Url, response: &HttpResponse) -> TransportError {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(texts: &[&str]) -> Vec<reqwest::Url> {
        texts
            .iter()
            .map(|t| reqwest::Url::parse(t).unwrap())
            .collect()
    }

    #[test]
    fn only_the_endpoints_origin_is_followed_five_times_at_most() {
        let next = reqwest::Url::parse("http://h:1/b").unwrap();
        assert_eq!(judge(&urls(&["http://h:1/a"]), &next), Verdict::Follow);
        assert_eq!(judge(&urls(&["http://h:2/a"]), &next), Verdict::Stop);
        assert_eq!(judge(&urls(&["https://h:1/a"]), &next), Verdict::Stop);
        let six = ["http://h:1/a"; 6];
        assert_eq!(
            judge(&urls(&six), &next),
            Verdict::TooMany("more than 5 redirects")
        );
    }
}
