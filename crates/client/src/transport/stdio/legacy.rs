//! The era on a stdio connection: the `server/discover` probe of auto mode,
//! the legacy handshake (`initialize`, then `notifications/initialized`),
//! and requests on a legacy session.

use std::sync::Arc;
use std::time::Duration;

use toolwire_protocol::{Message, Request};

use super::link::{Link, RouteHints};
use crate::transport::legacy::{
    LegacySession, accept_initialize, discover_probe, initialize_request, initialized_notification,
    internal_id, probe_verdict, strip_modern_meta, subscribe_request,
};
use crate::transport::{Era, Exchange, TransportError};

/// Asks with `server/discover`: a discover result or a modern error means
/// modern; any other error, or no answer within `timeout`, means legacy.
/// When `first` is itself `server/discover` it is the probe, and a modern
/// server's reply to it is returned for delivery.
pub(super) async fn probe(
    link: &Arc<Link>,
    first: &Request,
    timeout: Duration,
) -> Result<(Era, Option<Message>), TransportError> {
    let is_discover = first.method == "server/discover";
    let probe = if is_discover {
        first.clone()
    } else {
        discover_probe(internal_id("probe"), first)
    };
    let id = probe.id.clone();
    let mut exchange = link.send(probe)?;
    match tokio::time::timeout(timeout, first_response(&mut exchange)).await {
        Ok(reply) => {
            let reply = reply?;
            let era = probe_verdict(&reply);
            let deliver = (is_discover && era == Era::Modern).then_some(reply);
            Ok((era, deliver))
        }
        Err(_) => {
            // Forgotten before the exchange is dropped, so no
            // `notifications/cancelled` reaches a server that may accept
            // nothing before `initialize`.
            link.forget(&id);
            tracing::info!(
                timeout_ms = timeout.as_millis() as u64,
                "no answer to server/discover; treating the server as legacy"
            );
            Ok((Era::Legacy, None))
        }
    }
}

/// Opens a legacy session on the connection for `first`.
pub(super) async fn handshake(
    link: &Arc<Link>,
    first: &Request,
    timeout: Duration,
) -> Result<Arc<LegacySession>, TransportError> {
    let initialize = initialize_request(internal_id("initialize"), first);
    let id = initialize.id.clone();
    let mut exchange = link.send(initialize)?;
    let answered = tokio::time::timeout(timeout, first_response(&mut exchange)).await;
    // `initialize` is never cancelled: forget it before the exchange goes.
    link.forget(&id);
    let reply = answered.map_err(|_| {
        TransportError::Handshake(format!(
            "no answer to initialize within {} ms",
            timeout.as_millis()
        ))
    })??;
    let session = Arc::new(LegacySession::new(
        accept_initialize(reply)?,
        toolwire_telemetry::Network::Pipe,
    ));
    link.write(&Message::Notification(initialized_notification()))?;
    tracing::info!(
        version = session.version(),
        "legacy session opened on stdio"
    );
    Ok(session)
}

/// One request on a legacy session: `server/discover` and
/// `subscriptions/listen` are answered here, the rest go out without the
/// modern `_meta` keys (after `logging/setLevel` when the level changed).
pub(super) async fn send(
    link: &Arc<Link>,
    session: &LegacySession,
    mut request: Request,
    timeout: Duration,
) -> Result<Exchange, TransportError> {
    match request.method.as_str() {
        "server/discover" => {
            return Ok(Exchange::ready(vec![
                Ok(session.discover_reply(request.id)),
            ]));
        }
        "subscriptions/listen" => {
            let (exchange, uris) = session.listen(&request);
            for uri in uris {
                let subscribe = subscribe_request(internal_id("subscribe"), &uri);
                if let Err(error) = call(link, subscribe, timeout).await {
                    tracing::warn!(%uri, %error, "resources/subscribe failed");
                }
            }
            return Ok(exchange);
        }
        _ => {}
    }
    let hints = RouteHints::of(&request);
    let asks = strip_modern_meta(&mut request);
    if let Some(set_level) = session.set_level_request(internal_id("set-level"), &asks) {
        if let Err(error) = call(link, set_level, timeout).await {
            tracing::warn!(%error, "logging/setLevel failed");
        }
    }
    link.send_routed(request, hints)
}

/// Sends a request of the transport's own and waits for its response.
async fn call(
    link: &Arc<Link>,
    request: Request,
    timeout: Duration,
) -> Result<Message, TransportError> {
    let method = request.method.clone();
    let mut exchange = link.send(request)?;
    tokio::time::timeout(timeout, first_response(&mut exchange))
        .await
        .map_err(|_| {
            TransportError::Io(format!(
                "no answer to {method} within {} ms",
                timeout.as_millis()
            ))
        })?
}

async fn first_response(exchange: &mut Exchange) -> Result<Message, TransportError> {
    loop {
        match exchange.next().await {
            None => return Err(TransportError::Closed(" (no response)".into())),
            Some(Err(error)) => return Err(error),
            Some(Ok(message @ (Message::Result(_) | Message::Error(_)))) => return Ok(message),
            Some(Ok(_)) => continue,
        }
    }
}
