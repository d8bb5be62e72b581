//! The deprecated HTTP+SSE transport of 2024-11-05, as the 2025-11-25
//! revision's backward-compatibility section describes it: when the
//! `initialize` POST is refused with 400, 404 or 405, a `GET` of the URL
//! opens an SSE stream whose first event (`endpoint`) names the URL to POST
//! messages to. Every response and server request then arrives on that one
//! stream; POSTs are answered 202.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{ACCEPT, HeaderValue};
use toolwire_protocol::{Message, Request, RequestId};

use super::super::{Headers, HttpInner, HttpResponse, content_type};
use super::stream::{next_chunk, read_session_stream, too_large};
use super::{HttpSession, base_headers, encode, post_message};
use crate::transport::TransportError;
use crate::transport::legacy::{
    accept_initialize, initialize_request, initialized_notification, internal_id,
};
use crate::transport::sse::SseParser;

/// How long the stream may take to name its endpoint and answer `initialize`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens a session on an HTTP+SSE server for `first`.
pub(super) async fn open(
    inner: &Arc<HttpInner>,
    first: &Request,
) -> Result<Arc<HttpSession>, TransportError> {
    tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(inner, first))
        .await
        .map_err(|_| TransportError::Handshake("the HTTP+SSE handshake timed out".into()))?
}

async fn handshake(
    inner: &Arc<HttpInner>,
    first: &Request,
) -> Result<Arc<HttpSession>, TransportError> {
    let make_headers = || {
        let mut headers = inner.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        Ok(headers)
    };
    let headers = Headers::new(&make_headers)?;
    let mut response = inner.send_raw(Method::GET, headers, Vec::new()).await?;
    let is_sse = content_type(&response).starts_with("text/event-stream");
    if !response.status().is_success() || !is_sse {
        return Err(TransportError::Http {
            status: response.status().as_u16(),
            body: "not an SSE stream".into(),
        });
    }
    let mut parser = SseParser::new(inner.max_message_bytes);
    let endpoint = next_data(&mut response, &mut parser).await?;
    let endpoint = inner
        .url
        .join(endpoint.trim())
        .map_err(|e| TransportError::Handshake(format!("bad endpoint event {endpoint:?}: {e}")))?;
    tracing::info!(url = %inner.url, %endpoint, "the server speaks the 2024-11-05 HTTP+SSE transport");

    let initialize = initialize_request(internal_id("initialize"), first);
    let id = initialize.id.clone();
    let method = initialize.method.clone();
    let make_headers = || base_headers(inner, &method);
    let headers = Headers::new(&make_headers)?;
    let body = encode(&Message::Request(initialize))?;
    let posted = inner
        .send_raw_to(Method::POST, &endpoint, headers, body)
        .await?;
    if !posted.status().is_success() {
        return Err(TransportError::Http {
            status: posted.status().as_u16(),
            body: "the initialize POST was refused".into(),
        });
    }
    let reply = response_to(&id, &mut response, &mut parser).await?;
    let init = accept_initialize(reply)?;
    let session = Arc::new(HttpSession::new(None, Some(endpoint), init));
    read_session_stream(inner, &session, parser, response);
    post_message(
        inner,
        &session,
        &Message::Notification(initialized_notification()),
    )
    .await?;
    Ok(session)
}

/// The data of the stream's next event.
async fn next_data(
    response: &mut HttpResponse,
    parser: &mut SseParser,
) -> Result<String, TransportError> {
    loop {
        let Some(chunk) = next_chunk(response).await? else {
            return Err(TransportError::Handshake(
                "the SSE stream ended before its endpoint event".into(),
            ));
        };
        let events = parser.push(chunk.as_ref()).map_err(too_large)?;
        if let Some(data) = events.into_iter().find(|d| !d.trim().is_empty()) {
            return Ok(data);
        }
    }
}

/// Reads the stream until the response to `id` (the handshake sends
/// nothing else first).
async fn response_to(
    id: &RequestId,
    response: &mut HttpResponse,
    parser: &mut SseParser,
) -> Result<Message, TransportError> {
    loop {
        let data = next_data(response, parser).await?;
        match Message::from_slice(data.as_bytes()) {
            Ok(message @ Message::Result(_)) if message_id(&message) == Some(id) => {
                return Ok(message);
            }
            Ok(message @ Message::Error(_)) if message_id(&message) == Some(id) => {
                return Ok(message);
            }
            _ => tracing::debug!("message before the initialize response (ignored)"),
        }
    }
}

fn message_id(message: &Message) -> Option<&RequestId> {
    match message {
        Message::Result(r) => Some(&r.id),
        Message::Error(e) => e.id.as_ref(),
        _ => None,
    }
}
