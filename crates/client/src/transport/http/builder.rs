//! [`HttpTransportBuilder`]: the settings of an [`HttpTransport`].

use std::sync::{Arc, Mutex, OnceLock};

use hyper_util::client::proxy::matcher::Matcher;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use super::lean::{self, LeanClient};
use super::sender::{LeanSender, ReqwestSettings, Sender};
use super::{HttpInner, HttpTransport, tls};
use crate::transport::{Era, InboundSlot, ProtocolMode, TransportError};

/// Configures an [`HttpTransport`].
#[derive(Debug)]
pub struct HttpTransportBuilder {
    url: String,
    client: Option<reqwest::Client>,
    headers: Vec<(String, String)>,
    max_message_bytes: usize,
    oauth: Option<crate::auth::OAuth>,
    mode: ProtocolMode,
    era_hint: Option<Era>,
    http2_prior_knowledge: bool,
    /// PEM certificates trusted besides the platform's and Mozilla's roots.
    ca_pem: Vec<u8>,
}

impl HttpTransport {
    /// Starts configuring a transport for the MCP endpoint at `url`.
    pub fn builder(url: impl Into<String>) -> HttpTransportBuilder {
        HttpTransportBuilder {
            url: url.into(),
            client: None,
            headers: Vec::new(),
            max_message_bytes: 16 * 1024 * 1024,
            oauth: None,
            mode: ProtocolMode::Auto,
            era_hint: None,
            http2_prior_knowledge: false,
            ca_pem: Vec::new(),
        }
    }

    /// A transport for `url` with default settings.
    pub fn new(url: impl Into<String>) -> Result<Self, TransportError> {
        Self::builder(url).build()
    }
}

impl HttpTransportBuilder {
    /// Sends `Authorization: Bearer {token}` on every request.
    pub fn bearer_token(self, token: impl AsRef<str>) -> Self {
        self.header("Authorization", format!("Bearer {}", token.as_ref()))
    }

    /// Sends an extra header on every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Uses this reqwest client (for proxies, TLS roots, connection pools):
    /// every request goes through it, with its own redirect policy.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// The largest JSON reply or SSE event accepted (default 16 MiB).
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Authorizes with OAuth 2.1 when the server answers `401` (see
    /// [`auth`](crate::auth)); the token is sent on every request.
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Which era to speak (default [`ProtocolMode::Auto`]: find out from
    /// the first reply).
    pub fn protocol(mut self, mode: ProtocolMode) -> Self {
        self.mode = mode;
        self
    }

    /// In auto mode, the era found on an earlier run (e.g. read from a
    /// cache); the first request goes straight to it, and a failure that
    /// says otherwise makes the transport find out again.
    pub fn era_hint(mut self, era: Option<Era>) -> Self {
        self.era_hint = era;
        self
    }

    /// Speaks HTTP/2 from the first byte ("prior knowledge": h2c on an
    /// `http://` URL; on `https://` the TLS handshake offers only `h2`)
    /// instead of HTTP/1.1 (the default), so that concurrent requests and
    /// `subscriptions/listen` streams share one connection instead of one
    /// each. Only for a server known to speak HTTP/2 on that port, such as
    /// toolwire's `HttpServer`; an HTTP/1.1-only server fails every request.
    ///
    /// It configures the client the transport builds: with
    /// [`http_client`](Self::http_client), set reqwest's
    /// `http2_prior_knowledge` on that client instead ([`build`](Self::build)
    /// refuses both).
    ///
    /// ```
    /// use toolwire_client::transport::HttpTransport;
    /// let transport = HttpTransport::builder("http://127.0.0.1:8080/mcp")
    ///     .http2_prior_knowledge()
    ///     .build()
    ///     .unwrap();
    /// # drop(transport);
    /// ```
    pub fn http2_prior_knowledge(mut self) -> Self {
        self.http2_prior_knowledge = true;
        self
    }

    /// Trusts the certificates in `pem` (one or more `CERTIFICATE` blocks:
    /// a private CA, or a server's self-signed certificate) besides the
    /// platform's roots and Mozilla's, for `https://` URLs. Like
    /// [`http2_prior_knowledge`](Self::http2_prior_knowledge), it configures
    /// the client the transport builds.
    ///
    /// ```no_run
    /// use toolwire_client::transport::HttpTransport;
    /// let ca = std::fs::read("ca.pem").unwrap();
    /// let transport = HttpTransport::builder("https://mcp.internal:8443/mcp")
    ///     .ca_certificate_pem(ca)
    ///     .build()
    ///     .unwrap();
    /// # drop(transport);
    /// ```
    pub fn ca_certificate_pem(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.ca_pem.extend_from_slice(pem.as_ref());
        self.ca_pem.push(b'\n');
        self
    }

    /// Checks the URL and headers and makes the transport.
    ///
    /// Without [`http_client`](Self::http_client) the transport sends through
    /// a client of its own, chosen here once: hyper-util's pooled client
    /// directly (rustls, keep-alive, same-origin redirects), or a reqwest
    /// client configured the same way when reqwest must keep doing it:
    /// with [`oauth`](Self::oauth) (the OAuth flow sends through reqwest),
    /// when a proxy environment variable applies to the URL (`HTTP_PROXY`,
    /// `HTTPS_PROXY`, `ALL_PROXY`, honouring `NO_PROXY`), and for a URL
    /// with credentials in it (reqwest sends them as basic authorization).
    pub fn build(self) -> Result<HttpTransport, TransportError> {
        let url = reqwest::Url::parse(&self.url)
            .map_err(|e| TransportError::Io(format!("invalid URL {:?}: {e}", self.url)))?;
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| TransportError::Io(format!("invalid header name {name:?}: {e}")))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|e| TransportError::Io(format!("invalid value for header {name}: {e}")))?;
            if name == AUTHORIZATION {
                value.set_sensitive(true);
            }
            headers.insert(name, value);
        }
        let credentials_key = headers
            .get(AUTHORIZATION)
            .map(|v| crate::digest::short_hex(v.as_bytes()))
            .unwrap_or_default();
        let has_oauth = self.oauth.is_some();
        let sender = sender(
            self.client,
            &url,
            has_oauth,
            self.http2_prior_knowledge,
            self.ca_pem,
        )?;
        Ok(HttpTransport {
            inner: Arc::new(HttpInner {
                oauth: self.oauth.map(|o| o.session(url.clone())),
                url,
                sender,
                headers,
                credentials_key,
                max_message_bytes: self.max_message_bytes,
                mode: self.mode,
                verdict: Mutex::new(self.era_hint),
                session: tokio::sync::Mutex::new(None),
                inbound: InboundSlot::default(),
            }),
        })
    }
}

/// How the transport sends, chosen once: the caller's reqwest client; the
/// lean path (hyper-util, `lean.rs`) when it behaves exactly as reqwest
/// would ([`lean_endpoint`]); else a reqwest client of the transport's own.
fn sender(
    client: Option<reqwest::Client>,
    url: &reqwest::Url,
    has_oauth: bool,
    http2_prior_knowledge: bool,
    ca_pem: Vec<u8>,
) -> Result<Sender, TransportError> {
    if let Some(client) = client {
        if http2_prior_knowledge {
            return Err(TransportError::Io(
                "http2_prior_knowledge applies to the HTTP client the transport builds; \
                 with http_client, set it on that reqwest client"
                    .to_owned(),
            ));
        }
        if !ca_pem.is_empty() {
            return Err(TransportError::Io(
                "ca_certificate_pem applies to the HTTP client the transport builds; \
                 with http_client, add the root certificate to that reqwest client"
                    .to_owned(),
            ));
        }
        return Ok(Sender::Reqwest(client));
    }
    let settings = ReqwestSettings {
        http2_prior_knowledge,
        ca_pem,
    };
    let endpoint = match lean_endpoint(url, has_oauth) {
        Ok(endpoint) => endpoint,
        Err(reason) => {
            tracing::debug!(%url, reason, "the HTTP transport sends through reqwest");
            return Ok(Sender::Reqwest(settings.default_client()?));
        }
    };
    settings.ca_certificates()?;
    let tls = tls::client_config(&settings.ca_pem)?;
    Ok(Sender::Lean(Box::new(LeanSender {
        client: LeanClient::new(endpoint, http2_prior_knowledge, tls),
        other_origins: OnceLock::new(),
        settings,
    })))
}

/// The endpoint's URI when the lean path sends to it as reqwest would;
/// otherwise why it does not. reqwest stays for OAuth (its flow sends
/// through reqwest), for a proxy that applies to the URL (reqwest honours
/// `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY`, and whatever
/// else hyper-util's system matcher reads), for credentials in the URL
/// (reqwest sends them as basic authorization) and for a URL that is not
/// `http(s)` or that hyper cannot take (reqwest's own error says why).
fn lean_endpoint(url: &reqwest::Url, has_oauth: bool) -> Result<http::Uri, &'static str> {
    if has_oauth {
        return Err("OAuth is configured");
    }
    if !matches!(url.scheme(), "http" | "https") {
        return Err("not an http or https URL");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the URL holds credentials");
    }
    let uri = lean::uri_of(url).map_err(|_| "the URL is not a URI hyper takes")?;
    if Matcher::from_system().intercept(&uri).is_some() {
        return Err("a proxy applies to the URL");
    }
    Ok(uri)
}
