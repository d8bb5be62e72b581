//! The lean sending path: the transport's own requests (POST, the legacy GET
//! stream, DELETE) sent without reqwest's layers (its URL parses, redirect
//! layer and header merging per request): through the plain-HTTP/1.1 pool
//! of `plain.rs` to an `http` endpoint, else through hyper-util's pooled
//! client over hyper-rustls. It keeps what reqwest did for these requests:
//! keep-alive connections (idle for up to 90 s), TCP_NODELAY and TCP
//! keep-alive, TLS with the same roots, ALPN `h2`/`http/1.1` (or HTTP/2 only
//! with prior knowledge), `Accept: */*` when a request has no `Accept`, and
//! same-origin redirects followed as `redirect.rs`' policy follows them,
//! with reqwest's method and body rules and its `Referer`.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as PooledClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::{
    ACCEPT, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION,
    REFERER, TRANSFER_ENCODING,
};
use reqwest::{Method, StatusCode, Url};

use super::body::LeanResponse;
use super::plain::{POOL_IDLE, PlainPool, TCP_KEEPALIVE, TCP_KEEPALIVE_RETRIES};
use super::redirect::{self, Verdict};
use super::request_headers::Headers;
use super::with_causes;
use crate::transport::TransportError;

/// Why one request could not be sent (hyper-util's error, or the plain
/// pool's, worded the same).
type SendError = Box<dyn std::error::Error + Send + Sync>;

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// hyper-util's client with its connection pool (for TLS and HTTP/2), the
/// plain-HTTP/1.1 pool for an `http` endpoint, and the endpoint's URL
/// parsed once as the URI hyper sends to.
#[derive(Debug)]
pub(super) struct LeanClient {
    pool: PooledClient<Connector, Full<Bytes>>,
    plain: Option<PlainPool>,
    endpoint: http::Uri,
}

/// What is sent again when a redirect is followed.
struct Resend {
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Bytes,
}

impl LeanClient {
    /// A client for the endpoint `endpoint` (HTTP/1.1, or HTTP/2 from the
    /// first byte with `http2_prior_knowledge`), trusting what `tls` trusts.
    pub(super) fn new(
        endpoint: http::Uri,
        http2_prior_knowledge: bool,
        tls: rustls::ClientConfig,
    ) -> Self {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_keepalive(Some(TCP_KEEPALIVE));
        tcp.set_keepalive_interval(Some(TCP_KEEPALIVE));
        tcp.set_keepalive_retries(Some(TCP_KEEPALIVE_RETRIES));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http();
        let connector = if http2_prior_knowledge {
            https.enable_http2().wrap_connector(tcp)
        } else {
            https.enable_http1().enable_http2().wrap_connector(tcp)
        };
        let mut builder = PooledClient::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .http2_only(http2_prior_knowledge);
        let plain = if http2_prior_knowledge {
            None
        } else {
            PlainPool::for_endpoint(&endpoint)
        };
        LeanClient {
            pool: builder.build(connector),
            plain,
            endpoint,
        }
    }

    /// Sends `method` to `url` (the endpoint when `to_endpoint`, else a URL
    /// of its origin) with `body` when it is a POST, and follows redirects.
    pub(super) async fn send(
        &self,
        method: Method,
        url: &Url,
        to_endpoint: bool,
        headers: Headers<'_>,
        body: Vec<u8>,
    ) -> Result<LeanResponse, TransportError> {
        let uri = if to_endpoint {
            self.endpoint.clone()
        } else {
            uri_of(url).map_err(|e| sending_failed(&method, url, &e))?
        };
        let body = if method == Method::POST {
            Bytes::from(body)
        } else {
            Bytes::new()
        };
        let Headers { first, again } = headers;
        let response = self
            .send_once(method.clone(), uri, with_accept(first), body.clone())
            .await
            .map_err(|e| sending_failed(&method, url, &*e))?;
        if !is_redirect(response.response.status()) {
            return Ok(response);
        }
        let resend = Resend {
            method: method.clone(),
            url: url.clone(),
            headers: with_accept(again()?),
            body,
        };
        // Boxed: in place, following redirects (rare) would add its 2.5 KB
        // to this future and to every one that awaits it, each copied into
        // the box a request's exchange is made in.
        Box::pin(self.follow(resend, response))
            .await
            .map_err(|e| e.with_context(&method, url))
    }

    async fn send_once(
        &self,
        method: Method,
        uri: http::Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<LeanResponse, SendError> {
        let mut request = http::Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.headers_mut() = headers;
        let plain = self.plain.as_ref().filter(|p| p.serves(&uri));
        *request.uri_mut() = uri;
        if let Some(plain) = plain {
            let (response, lease) = plain.send(request).await?;
            return Ok(LeanResponse::new(response, Some(lease)));
        }
        let response = self.pool.request(request).await?;
        Ok(LeanResponse::new(response, None))
    }

    /// Follows the redirects `response` starts while `redirect.rs`' policy
    /// allows; the first reply that is not followed is returned.
    async fn follow(
        &self,
        mut resend: Resend,
        mut response: LeanResponse,
    ) -> Result<LeanResponse, FollowError> {
        // The URLs redirected from so far, the endpoint first.
        let mut previous: Vec<Url> = Vec::new();
        loop {
            if !resend.adapt_to(response.response.status()) {
                return Ok(response);
            }
            let Some((uri, next)) = location(&response.response, &resend.url) else {
                return Ok(response);
            };
            previous.push(resend.url.clone());
            match redirect::judge(&previous, &next) {
                Verdict::Follow => {}
                Verdict::Stop => return Ok(response),
                Verdict::TooMany(reason) => {
                    return Err(FollowError::TooMany {
                        from: resend.url,
                        reason,
                    });
                }
            }
            resend.insert_referer(&next);
            resend.url = next;
            response = self
                .send_once(
                    resend.method.clone(),
                    uri,
                    resend.headers.clone(),
                    resend.body.clone(),
                )
                .await
                .map_err(FollowError::Send)?;
        }
    }
}

impl Resend {
    /// Changes the method and body as reqwest (tower-http) does for a
    /// redirect with `status`: a POST answered 301 or 302, and anything but
    /// HEAD answered 303, is sent again as a GET without its body and
    /// payload headers; 307 and 308 keep both. False when `status` is not a
    /// redirect that is followed.
    fn adapt_to(&mut self, status: StatusCode) -> bool {
        match status {
            StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => {
                if self.method == Method::POST {
                    self.method = Method::GET;
                    self.drop_payload();
                }
            }
            StatusCode::SEE_OTHER => {
                if self.method != Method::HEAD {
                    self.method = Method::GET;
                }
                self.drop_payload();
            }
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => {}
            _ => return false,
        }
        true
    }

    fn drop_payload(&mut self) {
        self.body = Bytes::new();
        for name in [
            CONTENT_TYPE,
            CONTENT_LENGTH,
            CONTENT_ENCODING,
            TRANSFER_ENCODING,
        ] {
            self.headers.remove(name);
        }
    }

    /// reqwest's `Referer` on a followed redirect: the URL redirected from,
    /// without credentials or fragment, unless it leaves https for http.
    fn insert_referer(&mut self, next: &Url) {
        if next.scheme() == "http" && self.url.scheme() == "https" {
            return;
        }
        let mut referer = self.url.clone();
        let _ = referer.set_username("");
        let _ = referer.set_password(None);
        referer.set_fragment(None);
        if let Ok(value) = HeaderValue::from_str(referer.as_str()) {
            self.headers.insert(REFERER, value);
        }
    }
}

/// Why following redirects failed.
enum FollowError {
    /// `redirect.rs`' policy refused another redirect from `from`.
    TooMany { from: Url, reason: &'static str },
    /// A redirected request could not be sent.
    Send(SendError),
}

impl FollowError {
    /// The transport's error, worded as reqwest's for the request `method
    /// url` (the first one, before any redirect).
    fn with_context(self, method: &Method, url: &Url) -> TransportError {
        match self {
            FollowError::TooMany { from, reason } => TransportError::Io(format!(
                "{method} {url} failed: error following redirect for url ({from}): {reason}"
            )),
            FollowError::Send(error) => sending_failed(method, url, &*error),
        }
    }
}

/// reqwest's `Accept: */*` for a request without `Accept`.
fn with_accept(mut headers: HeaderMap) -> HeaderMap {
    headers
        .entry(ACCEPT)
        .or_insert(HeaderValue::from_static("*/*"));
    headers
}

fn is_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// Where a redirect points, resolved against `current` as tower-http
/// resolves it for reqwest: the URI to send to and the URL the policy
/// judges. `None` (the reply is returned as it is) without a usable
/// `Location`.
fn location(response: &http::Response<Incoming>, current: &Url) -> Option<(http::Uri, Url)> {
    let location = std::str::from_utf8(response.headers().get(LOCATION)?.as_bytes()).ok()?;
    let resolved = current.join(location).ok()?;
    let uri = http::Uri::try_from(String::from(resolved)).ok()?;
    let url = Url::parse(&uri.to_string()).ok()?;
    Some((uri, url))
}

/// `url` as the URI hyper sends to.
pub(super) fn uri_of(url: &Url) -> Result<http::Uri, http::uri::InvalidUri> {
    http::Uri::try_from(url.as_str())
}

/// reqwest's wording for a request that could not be sent.
fn sending_failed(method: &Method, url: &Url, error: &dyn std::error::Error) -> TransportError {
    TransportError::Io(format!(
        "{method} {url} failed: error sending request for url ({url}): {}",
        with_causes(error)
    ))
}
