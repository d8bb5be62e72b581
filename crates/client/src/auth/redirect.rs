//! The user-facing step: sending the user to the authorization URL and
//! getting the redirect back.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::LOCATION;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::AuthError;
use crate::future::BoxFuture;

/// Takes the user through the authorization server and brings back the
/// redirect.
///
/// `authorize` gets the authorization URL (already holding `state`, the PKCE
/// challenge and `resource`) and returns the URL the authorization server
/// redirected to: `redirect_uri` with `code`, `state` and maybe `iss`. The
/// client checks all of them.
pub trait RedirectHandler: Send + Sync + fmt::Debug {
    /// The redirect URI to register and send (HTTPS, or HTTP on loopback).
    fn redirect_uri(&self) -> String;

    /// Opens `authorization_url` for the user and waits for the redirect.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>>;
}

impl<T: RedirectHandler + ?Sized> RedirectHandler for Arc<T> {
    fn redirect_uri(&self) -> String {
        (**self).redirect_uri()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        (**self).authorize(authorization_url)
    }
}

/// Follows the authorization URL with a plain GET and takes the redirect
/// from the `Location` header: for authorization servers that approve
/// without a user (tests, the conformance suite's mocks, machine accounts).
#[derive(Debug, Clone)]
pub struct FollowRedirect {
    redirect_uri: String,
    client: reqwest::Client,
}

impl FollowRedirect {
    /// Claims `redirect_uri` (nothing listens there: the redirect is read, not followed).
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        FollowRedirect {
            redirect_uri: redirect_uri.into(),
            client: super::fetch::default_client(),
        }
    }
}

impl RedirectHandler for FollowRedirect {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let url = Url::parse(authorization_url)
                .map_err(|e| AuthError::Redirect(format!("invalid authorization URL: {e}")))?;
            let response = self.client.get(url.clone()).send().await.map_err(|e| {
                AuthError::Redirect(format!("GET the authorization endpoint failed: {e}"))
            })?;
            if !response.status().is_redirection() {
                return Err(AuthError::Redirect(format!(
                    "the authorization endpoint answered HTTP {} instead of redirecting (it needs a user)",
                    response.status().as_u16()
                )));
            }
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| AuthError::Redirect("redirect without a Location".into()))?;
            let target = url
                .join(location)
                .map_err(|e| AuthError::Redirect(format!("invalid Location: {e}")))?;
            if !same_endpoint(&target, &self.redirect_uri) {
                return Err(AuthError::Redirect(format!(
                    "the authorization server redirected to {}, not to the redirect URI (it needs a user)",
                    without_query(&target)
                )));
            }
            Ok(target.into())
        })
    }
}

/// Receives the redirect on a loopback listener (`http://127.0.0.1:PORT/callback`,
/// RFC 8252 §7.3) and shows the authorization URL through a callback
/// (by default printed to stderr): for command-line and desktop programs.
pub struct LoopbackRedirect {
    /// Bound now (`bind`), or only while an authorization is under way (`on_port`).
    listener: tokio::sync::Mutex<Option<TcpListener>>,
    port: u16,
    redirect_uri: String,
    show: Box<dyn Fn(&str) + Send + Sync>,
    timeout: Duration,
}

impl fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackRedirect {
    /// Listens on `127.0.0.1:port` from now on (0 picks a free port).
    pub async fn bind(port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        Ok(Self::with(Some(listener), port))
    }

    /// Listens on `127.0.0.1:port` only while an authorization is under way.
    /// A fixed port keeps the redirect URI, and so a dynamic client
    /// registration, valid from one run of a program to the next.
    pub fn on_port(port: u16) -> Self {
        Self::with(None, port)
    }

    fn with(listener: Option<TcpListener>, port: u16) -> Self {
        LoopbackRedirect {
            listener: tokio::sync::Mutex::new(listener),
            port,
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
            show: Box::new(|url| {
                eprintln!("Open this URL in a browser to authorize:\n\n  {url}\n")
            }),
            timeout: Duration::from_secs(300),
        }
    }

    /// How the authorization URL reaches the user (print it, open a browser…).
    pub fn on_url(mut self, show: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.show = Box::new(show);
        self
    }

    /// How long to wait for the redirect (default 5 minutes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn accept_callback(
        listener: &TcpListener,
        redirect_uri: &str,
    ) -> Result<String, AuthError> {
        loop {
            let (mut stream, _) = listener
                .accept()
                .await
                .map_err(|e| AuthError::Redirect(format!("redirect listener failed: {e}")))?;
            let Some(target) = read_request_target(&mut stream).await else {
                continue;
            };
            let (path, query) = target.split_once('?').unwrap_or((&target, ""));
            if path != "/callback" {
                let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
                continue;
            }
            let _ = respond(
                &mut stream,
                "200 OK",
                "Authorization received. You can close this window.",
            )
            .await;
            return Ok(format!("{redirect_uri}?{query}"));
        }
    }
}

impl RedirectHandler for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let mut slot = self.listener.lock().await;
            let bound_here = slot.is_none();
            let listener = match slot.take() {
                Some(listener) => listener,
                // Listen before the user can be redirected.
                None => TcpListener::bind(("127.0.0.1", self.port))
                    .await
                    .map_err(|e| {
                        AuthError::Redirect(format!(
                            "cannot listen on 127.0.0.1:{}: {e}",
                            self.port
                        ))
                    })?,
            };
            (self.show)(authorization_url);
            let result = tokio::time::timeout(
                self.timeout,
                Self::accept_callback(&listener, &self.redirect_uri),
            )
            .await
            .unwrap_or_else(|_| {
                Err(AuthError::Redirect(format!(
                    "no redirect within {:?}",
                    self.timeout
                )))
            });
            if !bound_here {
                // Bound by `bind`: keep listening for the next authorization.
                *slot = Some(listener);
            }
            result
        })
    }
}

/// The request target of a `GET` request, read with a size and time bound.
async fn read_request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let read = async {
        let mut chunk = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .ok()??;
    let line = buf.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_owned)
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: &str,
    text: &str,
) -> std::io::Result<()> {
    let body = format!("<!doctype html><meta charset=utf-8><title>toolwire</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

fn same_endpoint(target: &Url, redirect_uri: &str) -> bool {
    Url::parse(redirect_uri).is_ok_and(|r| {
        r.scheme() == target.scheme()
            && r.host() == target.host()
            && r.port_or_known_default() == target.port_or_known_default()
            && r.path() == target.path()
    })
}

fn without_query(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_receives_the_callback() {
        let handler = LoopbackRedirect::bind(0).await.unwrap().on_url(|_| {});
        let uri = handler.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let base = uri.trim_end_matches("/callback").to_owned();
        let browser = tokio::spawn(async move {
            let client = reqwest::Client::new();
            let miss = client
                .get(format!("{base}/favicon.ico"))
                .send()
                .await
                .unwrap();
            assert_eq!(miss.status(), 404);
            let hit = client
                .get(format!("{base}/callback?code=abc&state=xyz"))
                .send()
                .await
                .unwrap();
            assert_eq!(hit.status(), 200);
        });
        let got = handler
            .authorize("https://as.example/authorize")
            .await
            .unwrap();
        assert_eq!(got, format!("{uri}?code=abc&state=xyz"));
        browser.await.unwrap();
    }

    #[tokio::test]
    async fn loopback_on_port_listens_only_while_authorizing() {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let handler = Arc::new(LoopbackRedirect::on_port(port).on_url(|_| {}));
        assert_eq!(
            handler.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        let h = handler.clone();
        let waiting = tokio::spawn(async move { h.authorize("https://as/").await });
        // The listener is up once the handler shows the URL; retry until then.
        let client = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{port}/callback?code=c&state=s");
        while client.get(&url).send().await.is_err() {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            format!("http://127.0.0.1:{port}/callback?code=c&state=s")
        );
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }

    #[tokio::test]
    async fn loopback_times_out() {
        let handler = LoopbackRedirect::bind(0)
            .await
            .unwrap()
            .on_url(|_| {})
            .timeout(Duration::from_millis(10));
        assert!(matches!(
            handler.authorize("https://as/").await,
            Err(AuthError::Redirect(_))
        ));
    }

    #[test]
    fn redirect_target_must_be_the_redirect_uri() {
        let t = Url::parse("http://127.0.0.1:9/cb?code=1").unwrap();
        assert!(same_endpoint(&t, "http://127.0.0.1:9/cb"));
        assert!(!same_endpoint(&t, "http://127.0.0.1:9/other"));
        assert!(!same_endpoint(&t, "http://127.0.0.1:8/cb"));
        assert_eq!(without_query(&t), "http://127.0.0.1:9/cb");
    }
}
