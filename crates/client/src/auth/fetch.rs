//! The HTTP requests of the authorization machinery: bounded, with a
//! timeout, and never following redirects.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::header::ACCEPT;
use reqwest::{StatusCode, Url};
use serde_json::Value;

use super::AuthError;

/// The largest metadata or token response read.
pub(crate) const MAX_BODY: usize = 1024 * 1024;
/// How long one request to a metadata, registration or token endpoint may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// The client used for authorization requests: rustls, no redirects.
pub(crate) fn default_client() -> reqwest::Client {
    reqwest::Client::builder()
        .use_rustls_tls()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .unwrap_or_default()
}

/// A parsed, absolute URL.
pub(crate) fn parse_url(url: &str, what: &str) -> Result<Url, AuthError> {
    Url::parse(url).map_err(|e| AuthError::Discovery(format!("invalid {what} URL {url:?}: {e}")))
}

/// True for `localhost`, `127.0.0.0/8` and `::1`.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// Authorization server endpoints must be HTTPS; plain HTTP is allowed on
/// loopback, and elsewhere only when the caller opted in.
pub(crate) fn require_secure(url: &Url, allow_insecure: bool) -> Result<(), AuthError> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if allow_insecure || is_loopback(url) => Ok(()),
        _ => Err(AuthError::Insecure(url.to_string())),
    }
}

/// A JSON response: its status and (when the body is JSON) its value.
#[derive(Debug)]
pub(crate) struct JsonReply {
    pub status: StatusCode,
    pub body: Option<Value>,
}

/// GETs a JSON document. `Ok(None)` when the server answers 4xx (the
/// document is not there); an error for anything else that is not 2xx JSON.
pub(crate) async fn get_json(
    client: &reqwest::Client,
    url: &Url,
) -> Result<Option<Value>, AuthError> {
    let response = client
        .get(url.clone())
        .header(ACCEPT, "application/json")
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| AuthError::Http(format!("GET {url} failed: {e}")))?;
    let reply = read_json(response, url).await?;
    if reply.status.is_client_error() {
        return Ok(None);
    }
    if !reply.status.is_success() {
        return Err(AuthError::Http(format!("GET {url}: HTTP {}", reply.status)));
    }
    match reply.body {
        Some(value @ Value::Object(_)) => Ok(Some(value)),
        _ => Err(AuthError::Discovery(format!(
            "{url} did not return a JSON object"
        ))),
    }
}

/// Sends `request` (to `url`, for messages) and reads a JSON reply of any status.
pub(crate) async fn send_json(
    request: reqwest::RequestBuilder,
    url: &Url,
) -> Result<JsonReply, AuthError> {
    let response = request
        .header(ACCEPT, "application/json")
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| AuthError::Http(format!("POST {url} failed: {e}")))?;
    read_json(response, url).await
}

async fn read_json(mut response: reqwest::Response, url: &Url) -> Result<JsonReply, AuthError> {
    let status = response.status();
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| AuthError::Http(format!("reading the reply of {url} failed: {e}")))?
    {
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(AuthError::Http(format!(
                "the reply of {url} is larger than {MAX_BODY} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    // Whatever the Content-Type says: some servers send JSON as text/plain.
    let body = serde_json::from_slice(&bytes).ok();
    Ok(JsonReply { status, body })
}

/// `application/x-www-form-urlencoded` encoding of `pairs`.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for u in [
            "http://localhost:1/x",
            "http://127.0.0.1/",
            "http://127.9.9.9/",
            "http://[::1]:8/",
        ] {
            assert!(is_loopback(&Url::parse(u).unwrap()), "{u}");
            assert!(require_secure(&Url::parse(u).unwrap(), false).is_ok());
        }
        for u in [
            "http://example.com/",
            "http://10.0.0.1/",
            "http://localhost.evil.com/",
        ] {
            let url = Url::parse(u).unwrap();
            assert!(!is_loopback(&url), "{u}");
            assert_eq!(
                require_secure(&url, false),
                Err(AuthError::Insecure(url.to_string()))
            );
            assert!(require_secure(&url, true).is_ok());
        }
        assert!(require_secure(&Url::parse("https://example.com/").unwrap(), false).is_ok());
        assert!(require_secure(&Url::parse("ftp://example.com/").unwrap(), true).is_err());
    }
}
