//! `subscriptions/listen`: a long-lived request whose response is a stream
//! of notifications, ended by the client (cancel / disconnect) or by a
//! graceful server shutdown (a completion result).

use futures::StreamExt;
use serde_json::{Value, json};
use toolwire_protocol::{
    ErrorObject, JsonObject, Message, Notification, RequestId, SubscriptionFilter,
    SubscriptionsListenRequestParams, keys,
};

use crate::context::RequestContext;
use crate::server::Server;
use crate::store::change_feed::{Change, ChangeTopics};

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
        let topics = ChangeTopics {
            tools: honoured.tools_list_changed.is_some(),
            prompts: honoured.prompts_list_changed.is_some(),
            resources: honoured.resources_list_changed.is_some(),
            resource_uris: honoured
                .resource_subscriptions
                .clone()
                .map(|uris| uris.into_iter().collect()),
        };
        let mut changes = inner.changes.subscribe(topics);
        let ack = json!({"notifications": honoured});
        send(&cx, &id, "notifications/subscriptions/acknowledged", ack).await;
        let shutdown = inner.shutdown.clone();
        loop {
            tokio::select! {
                _ = cx.cancellation().cancelled() => {
                    return Err(ErrorObject::internal("subscription cancelled"));
                }
                _ = shutdown.cancelled() => break,
                Some(change) = changes.next() => send_change(&cx, &id, change).await,
            }
        }
        let mut result = JsonObject::new();
        result.insert("resultType".into(), json!("complete"));
        result.insert("_meta".into(), json!({ keys::SUBSCRIPTION_ID: id }));
        Ok(self.finish(result))
    }
}

/// Sends the notification of one change.
async fn send_change(cx: &RequestContext, id: &RequestId, change: Change) {
    match change {
        Change::ToolsListChanged => {
            send(cx, id, "notifications/tools/list_changed", json!({})).await
        }
        Change::PromptsListChanged => {
            send(cx, id, "notifications/prompts/list_changed", json!({})).await;
        }
        Change::ResourcesListChanged => {
            send(cx, id, "notifications/resources/list_changed", json!({})).await;
        }
        Change::ResourceUpdated(uri) => {
            send(
                cx,
                id,
                "notifications/resources/updated",
                json!({"uri": uri}),
            )
            .await;
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
