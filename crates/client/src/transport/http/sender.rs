//! [`Sender`]: how the transport's requests go out, chosen once when the
//! transport is built (`builder.rs` says when which).

use std::sync::OnceLock;

use reqwest::header::HeaderMap;
use reqwest::{Method, Url};

use super::lean::LeanClient;
use super::request_headers::Headers;
use super::response::HttpResponse;
use super::{redirect, with_causes};
use crate::transport::TransportError;

/// The client the transport sends through.
#[derive(Debug)]
pub(super) enum Sender {
    /// hyper-util's client directly (`lean.rs`).
    Lean(Box<LeanSender>),
    /// reqwest: with OAuth, a caller's client, a proxy that applies, or an
    /// endpoint URL the lean path does not take.
    Reqwest(reqwest::Client),
}

/// The lean path, and the reqwest client for a URL of another origin than
/// the endpoint's (only a 2024-11-05 server's `endpoint` event names one),
/// made the first time one is needed.
#[derive(Debug)]
pub(super) struct LeanSender {
    pub(super) client: LeanClient,
    pub(super) other_origins: OnceLock<reqwest::Client>,
    pub(super) settings: ReqwestSettings,
}

/// What the transport's own reqwest client is built from.
#[derive(Debug, Clone, Default)]
pub(super) struct ReqwestSettings {
    pub(super) http2_prior_knowledge: bool,
    pub(super) ca_pem: Vec<u8>,
}

impl ReqwestSettings {
    /// The certificates of `ca_pem`, read as reqwest reads them (its errors
    /// are the transport's).
    pub(super) fn ca_certificates(&self) -> Result<Vec<reqwest::Certificate>, TransportError> {
        if self.ca_pem.is_empty() {
            return Ok(Vec::new());
        }
        let certificates = reqwest::Certificate::from_pem_bundle(&self.ca_pem).map_err(|e| {
            TransportError::Io(format!("the CA certificates are not PEM certificates: {e}"))
        })?;
        if certificates.is_empty() {
            return Err(TransportError::Io(
                "the CA certificates hold no CERTIFICATE block".to_owned(),
            ));
        }
        Ok(certificates)
    }

    /// The reqwest client a transport builds when given none (also the lean
    /// path's for a URL of another origin).
    pub(super) fn default_client(&self) -> Result<reqwest::Client, TransportError> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(redirect::same_origin());
        if self.http2_prior_knowledge {
            builder = builder.http2_prior_knowledge();
        }
        for certificate in self.ca_certificates()? {
            builder = builder.add_root_certificate(certificate);
        }
        builder
            .build()
            .map_err(|e| TransportError::Io(format!("cannot build HTTP client: {e}")))
    }
}

impl Sender {
    /// Sends `method` to `url` (`endpoint` is the transport's URL), with
    /// `body` when it is a POST.
    pub(super) async fn send(
        &self,
        method: Method,
        url: &Url,
        endpoint: &Url,
        headers: Headers<'_>,
        body: Vec<u8>,
    ) -> Result<HttpResponse, TransportError> {
        let lean = match self {
            Sender::Lean(lean) => lean,
            Sender::Reqwest(client) => {
                return send_reqwest(client, method, url, headers.first, body).await;
            }
        };
        let to_endpoint = std::ptr::eq(url, endpoint) || url == endpoint;
        if to_endpoint || url.origin() == endpoint.origin() {
            let response = lean
                .client
                .send(method, url, to_endpoint, headers, body)
                .await?;
            return Ok(HttpResponse::Lean(response));
        }
        let client = lean.reqwest()?;
        send_reqwest(client, method, url, headers.first, body).await
    }

    /// The reqwest client (for OAuth, which always sends through reqwest).
    pub(super) fn reqwest(&self) -> Result<&reqwest::Client, TransportError> {
        match self {
            Sender::Lean(lean) => lean.reqwest(),
            Sender::Reqwest(client) => Ok(client),
        }
    }
}

impl LeanSender {
    fn reqwest(&self) -> Result<&reqwest::Client, TransportError> {
        if let Some(client) = self.other_origins.get() {
            return Ok(client);
        }
        let client = self.settings.default_client()?;
        Ok(self.other_origins.get_or_init(|| client))
    }
}

/// Sends through reqwest (its redirect policy, proxies and pool).
async fn send_reqwest(
    client: &reqwest::Client,
    method: Method,
    url: &Url,
    headers: HeaderMap,
    body: Vec<u8>,
) -> Result<HttpResponse, TransportError> {
    let mut request = client.request(method.clone(), url.clone()).headers(headers);
    if method == Method::POST {
        request = request.body(body);
    }
    match request.send().await {
        Ok(response) => Ok(HttpResponse::Reqwest(response)),
        Err(e) => Err(TransportError::Io(format!(
            "{method} {url} failed: {}",
            with_causes(&e)
        ))),
    }
}
