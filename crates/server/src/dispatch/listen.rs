//! `subscriptions/listen`: a long-lived request whose response is a stream
//! of notifications, ended by the client (cancel / disconnect) or by a
//! graceful server shutdown (a completion result).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};
use toolwire_protocol::{
    ErrorObject, JsonObject, Message, Notification, RequestId, SubscriptionFilter,
    SubscriptionsListenRequestParams, keys,
};

use crate::context::RequestContext;
use crate::server::Server;

/// How long a listener waits after a change for more changes, so that a burst
/// of edits becomes one notification.
const COALESCE_WINDOW: Duration = Duration::from_millis(20);

/// What one listener watches.
struct Watches {
    tools: Option<watch::Receiver<u64>>,
    prompts: Option<watch::Receiver<u64>>,
    resources: Option<watch::Receiver<u64>>,
    updates: Option<(broadcast::Receiver<String>, HashSet<String>)>,
}

impl Server {
    /// The part of `requested` this server honours.
    fn honoured(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let caps = self.capabilities();
        let list_changed = |cap: Option<bool>, asked: Option<bool>| {
            (cap == Some(true) && asked == Some(true)).then_some(true)
        };
        let resources = caps.resources.unwrap_or_default();
        SubscriptionFilter {
            tools_list_changed: list_changed(
                caps.tools.and_then(|c| c.list_changed),
                requested.tools_list_changed,
            ),
            prompts_list_changed: list_changed(
                caps.prompts.and_then(|c| c.list_changed),
                requested.prompts_list_changed,
            ),
            resources_list_changed: list_changed(
                resources.list_changed,
                requested.resources_list_changed,
            ),
            resource_subscriptions: requested
                .resource_subscriptions
                .clone()
                .filter(|uris| resources.subscribe == Some(true) && !uris.is_empty()),
        }
    }

    pub(crate) async fn listen(
        &self,
        params: SubscriptionsListenRequestParams,
        cx: RequestContext,
    ) -> Result<JsonObject, ErrorObject> {
        let inner = &self.inner;
        let _slot = inner
            .subscriptions
            .admit(cx.principal(), inner.config.max_subscriptions_per_principal)?;
        let id = cx.request_id().clone();
        let honoured = self.honoured(&params.notifications);
        let mut watches = Watches {
            tools: honoured.tools_list_changed.map(|_| inner.tools.subscribe()),
            prompts: honoured
                .prompts_list_changed
                .map(|_| inner.prompts.subscribe()),
            resources: honoured
                .resources_list_changed
                .map(|_| inner.resources.subscribe()),
            updates: honoured.resource_subscriptions.clone().map(|uris| {
                (
                    inner.resource_updates.subscribe(),
                    uris.into_iter().collect(),
                )
            }),
        };
        let ack = json!({"notifications": honoured});
        send(&cx, &id, "notifications/subscriptions/acknowledged", ack).await;
        let shutdown = inner.shutdown.clone();
        loop {
            tokio::select! {
                _ = cx.cancellation().cancelled() => {
                    return Err(ErrorObject::internal("subscription cancelled"));
                }
                _ = shutdown.cancelled() => break,
                _ = changed(&mut watches.tools) => {
                    send(&cx, &id, "notifications/tools/list_changed", json!({})).await;
                }
                _ = changed(&mut watches.prompts) => {
                    send(&cx, &id, "notifications/prompts/list_changed", json!({})).await;
                }
                _ = changed(&mut watches.resources) => {
                    send(&cx, &id, "notifications/resources/list_changed", json!({})).await;
                }
                uri = updated(&mut watches.updates) => {
                    send(&cx, &id, "notifications/resources/updated", json!({"uri": uri})).await;
                }
            }
        }
        let mut result = JsonObject::new();
        result.insert("resultType".into(), json!("complete"));
        result.insert("_meta".into(), json!({ keys::SUBSCRIPTION_ID: id }));
        Ok(self.finish(result))
    }
}

/// Waits for the next change (coalescing a burst); never returns when not watched.
async fn changed(receiver: &mut Option<watch::Receiver<u64>>) {
    let Some(rx) = receiver else {
        return std::future::pending().await;
    };
    if rx.changed().await.is_err() {
        return std::future::pending().await;
    }
    tokio::time::sleep(COALESCE_WINDOW).await;
    rx.borrow_and_update();
}

/// Waits for an update to one of the watched URIs; never returns when not watched.
async fn updated(receiver: &mut Option<(broadcast::Receiver<String>, HashSet<String>)>) -> String {
    let Some((rx, uris)) = receiver else {
        return std::future::pending().await;
    };
    loop {
        match rx.recv().await {
            Ok(uri) if uris.contains(&uri) => return uri,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        }
    }
}

/// Sends one notification tagged with the subscription id.
async fn send(cx: &RequestContext, id: &RequestId, method: &str, params: Value) {
    let mut params = match params {
        Value::Object(params) => params,
        _ => JsonObject::new(),
    };
    params.insert("_meta".into(), json!({ keys::SUBSCRIPTION_ID: id }));
    cx.send(Message::Notification(Notification::new(
        method,
        Some(params),
    )))
    .await;
}
