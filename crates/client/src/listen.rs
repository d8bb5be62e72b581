//! `subscriptions/listen`: a long-lived stream of typed change notifications
//! that also keeps the cache honest (a list-changed notification makes the
//! cached list stale at once).

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use futures::Stream;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};
use toolwire_protocol::{
    JsonObject, Message, Notification, RequestId, SubscriptionFilter,
    SubscriptionsAcknowledgedNotificationParams, code,
};

use crate::cached::params_key;
use crate::client::{Client, ClientInner, write};
use crate::error::{Error, TransportError};
use crate::options::RequestOptions;
use crate::transport::Exchange;
use crate::watch::watched_methods;

/// A notification delivered on a subscription.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListenEvent {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated {
        /// The resource that changed.
        uri: String,
    },
    /// Any other notification on the stream.
    Other(Notification),
}

impl ListenEvent {
    fn from_notification(notification: Notification) -> ListenEvent {
        match notification.method.as_str() {
            "notifications/tools/list_changed" => ListenEvent::ToolsListChanged,
            "notifications/prompts/list_changed" => ListenEvent::PromptsListChanged,
            "notifications/resources/list_changed" => ListenEvent::ResourcesListChanged,
            "notifications/resources/updated" => {
                let uri = notification
                    .params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str);
                match uri {
                    Some(uri) => ListenEvent::ResourceUpdated {
                        uri: uri.to_owned(),
                    },
                    None => ListenEvent::Other(notification),
                }
            }
            _ => ListenEvent::Other(notification),
        }
    }
}

/// An open subscription: a [`Stream`] of [`ListenEvent`]s.
///
/// The stream ends when the server closes the subscription gracefully (its
/// result arrives). An abrupt end yields one error first: a transport error
/// when the stream broke, [`Error::Cancelled`] when the server tore the
/// subscription down with `notifications/cancelled`; listen again to resume.
/// Dropping it cancels the subscription.
#[derive(Debug)]
pub struct Subscription {
    id: RequestId,
    acknowledged: SubscriptionFilter,
    receiver: mpsc::UnboundedReceiver<Result<ListenEvent, Error>>,
    _task: AbortOnDrop,
}

impl Subscription {
    /// The subscription id (the id of the `subscriptions/listen` request).
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The notifications the server agreed to send (a subset of those asked for).
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// The next event, or `None` when the subscription is over.
    pub async fn next_event(&mut self) -> Option<Result<ListenEvent, Error>> {
        self.receiver.recv().await
    }
}

impl Stream for Subscription {
    type Item = Result<ListenEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.receiver.poll_recv(cx)
    }
}

impl Client {
    /// Opens `subscriptions/listen` with `filter` and waits for the
    /// acknowledgement (within the request timeout).
    ///
    /// ```no_run
    /// # async fn run(client: toolwire_client::Client) -> Result<(), toolwire_client::Error> {
    /// use futures::StreamExt;
    /// use toolwire_protocol::SubscriptionFilter;
    /// let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    /// let mut events = client.listen(filter).await?;
    /// while let Some(event) = events.next().await {
    ///     println!("{:?}", event?); // the cached tool list is already stale here
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// A filter with `taskIds` (the Tasks extension's `notifications/tasks`)
    /// declares the extension on this request, as the server requires.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, Error> {
        let options = match filter.task_ids {
            Some(_) => self.with_tasks(&RequestOptions::new()),
            None => RequestOptions::new(),
        };
        self.listen_with(filter, &options).await
    }

    /// [`Client::listen`] with per-request options (capabilities, headers,
    /// the acknowledgement's timeout).
    pub(crate) async fn listen_with(
        &self,
        filter: SubscriptionFilter,
        options: &RequestOptions,
    ) -> Result<Subscription, Error> {
        let mut params = JsonObject::new();
        let filter =
            serde_json::to_value(filter).map_err(|e| Error::InvalidArguments(e.to_string()))?;
        params.insert("notifications".into(), filter);
        let mut version = self.request_version();
        let mut retried = false;
        loop {
            let (exchange, id) = self
                .open("subscriptions/listen", &params, options, &[], &version)
                .await?;
            match self.await_ack(exchange, &id, options).await {
                Ok((exchange, acknowledged)) => {
                    return Ok(self.subscribe(id, acknowledged, exchange));
                }
                Err(e) if e.code() == Some(code::UNSUPPORTED_PROTOCOL_VERSION) && !retried => {
                    version = self.renegotiate(&version, e)?;
                    retried = true;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn await_ack(
        &self,
        mut exchange: Exchange,
        id: &RequestId,
        options: &RequestOptions,
    ) -> Result<(Exchange, SubscriptionFilter), Error> {
        let policy = self.inner.timeouts.for_request(options);
        let deadline = Instant::now() + policy.timeout;
        loop {
            let message = tokio::select! {
                message = exchange.next() => message,
                _ = sleep_until(deadline) => return Err(Error::Timeout(policy.timeout)),
            };
            match message {
                None => {
                    return Err(TransportError::Closed(
                        " (before the subscription was acknowledged)".into(),
                    )
                    .into());
                }
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(Message::Error(e))) => return Err(e.error.into()),
                Some(Ok(Message::Notification(n)))
                    if n.method == "notifications/subscriptions/acknowledged" =>
                {
                    let params = Value::Object(n.params.unwrap_or_default());
                    let ack: SubscriptionsAcknowledgedNotificationParams =
                        serde_json::from_value(params).map_err(|e| {
                            Error::InvalidReply(format!("malformed acknowledgement: {e}"))
                        })?;
                    return Ok((exchange, ack.notifications));
                }
                Some(Ok(Message::Result(_))) => {
                    return Err(Error::InvalidReply(format!(
                        "subscription {id} ended before it was acknowledged"
                    )));
                }
                Some(Ok(other)) => {
                    tracing::debug!(?other, "message before the acknowledgement (ignored)")
                }
            }
        }
    }

    fn subscribe(
        &self,
        id: RequestId,
        acknowledged: SubscriptionFilter,
        exchange: Exchange,
    ) -> Subscription {
        let (tx, rx) = mpsc::unbounded_channel();
        // Only a legacy server's lists need a subscription to be cached.
        let legacy = self.era() == Some(crate::transport::Era::Legacy);
        let methods = match legacy {
            true => watched_methods(&acknowledged),
            false => Vec::new(),
        };
        let watch = self.inner.watched.watch(methods);
        let client = Arc::downgrade(&self.inner);
        let task = tokio::spawn(async move {
            let _watch = watch;
            forward(client, exchange, tx).await;
        });
        Subscription {
            id,
            acknowledged,
            receiver: rx,
            _task: AbortOnDrop(task.abort_handle()),
        }
    }
}

/// Moves events from the exchange to the subscriber, invalidating the cache
/// as each one passes.
async fn forward(
    client: Weak<ClientInner>,
    mut exchange: Exchange,
    tx: mpsc::UnboundedSender<Result<ListenEvent, Error>>,
) {
    loop {
        let message = tokio::select! {
            message = exchange.next() => message,
            _ = tx.closed() => return,
        };
        let event = match message {
            None => {
                Err(TransportError::Closed(" (subscription stream ended abruptly)".into()).into())
            }
            Some(Err(e)) => Err(e.into()),
            Some(Ok(Message::Error(e))) => Err(e.error.into()),
            Some(Ok(Message::Result(_))) => return,
            Some(Ok(Message::Notification(n))) if n.method == "notifications/cancelled" => {
                Err(Error::Cancelled)
            }
            Some(Ok(Message::Notification(n))) => Ok(ListenEvent::from_notification(n)),
            Some(Ok(Message::Request(_))) => continue,
        };
        let last = event.is_err();
        if let (Ok(event), Some(client)) = (&event, client.upgrade()) {
            invalidate(&client, event);
        }
        if tx.send(event).is_err() || last {
            return;
        }
    }
}

/// What a notification makes stale.
fn invalidate(client: &ClientInner, event: &ListenEvent) {
    let server = &client.server_key;
    let cache = &client.cache;
    match event {
        ListenEvent::ToolsListChanged => {
            cache.invalidate_method(server, "tools/list");
            write(&client.tools).invalidate();
        }
        ListenEvent::PromptsListChanged => cache.invalidate_method(server, "prompts/list"),
        ListenEvent::ResourcesListChanged => {
            cache.invalidate_method(server, "resources/list");
            cache.invalidate_method(server, "resources/templates/list");
        }
        ListenEvent::ResourceUpdated { uri } => {
            let mut params = JsonObject::new();
            params.insert("uri".into(), Value::String(uri.clone()));
            cache.invalidate(server, "resources/read", &params_key(&params));
        }
        ListenEvent::Other(_) => {}
    }
}

#[derive(Debug)]
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
