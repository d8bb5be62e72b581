//! `subscriptions/listen`: a long-lived request whose response is a stream
//! of notifications, ended by the client (cancel / disconnect) or by a
//! graceful server shutdown (a completion result).

use std::collections::HashMap;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{
    DetailedTask, ErrorObject, ErrorResponse, JsonObject, METHOD_TASKS_NOTIFICATION, Message,
    Notification, RequestId, ResultResponse, SubscriptionFilter, SubscriptionsListenRequestParams,
    TASKS_EXTENSION, keys,
};

use crate::context::{Outbox, RequestContext};
use crate::features::listen::SubscriptionSlot;
use crate::server::Server;
use crate::store::change_feed::{Change, ChangeTopics};
use crate::store::task_record::TaskRecord;
use crate::store::tasks::TaskLookup;

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
            task_ids: None,
        }
    }

    /// The task ids of a listen request this server sends
    /// `notifications/tasks` for: the caller's own live tasks. Asking
    /// without the extension declared is -32021.
    async fn honoured_tasks(
        &self,
        requested: Option<&[String]>,
        cx: &RequestContext,
    ) -> Result<Option<Vec<String>>, ErrorObject> {
        let Some(requested) = requested else {
            return Ok(None);
        };
        if !self.tasks_declared(cx) {
            return Err(ErrorObject::missing_extension(TASKS_EXTENSION));
        }
        let owner = cx.principal().key();
        let mut honoured = Vec::new();
        for id in requested
            .iter()
            .take(self.inner.config.tasks.max_per_principal.max(64))
        {
            if let Ok(TaskLookup::Found(_)) = self.inner.task_store.get(id, &owner).await {
                if !honoured.contains(id) {
                    honoured.push(id.clone());
                }
            }
        }
        Ok((!honoured.is_empty()).then_some(honoured))
    }

    /// Admits a `subscriptions/listen` request: its stream is what the
    /// transport runs ([`Listening`]); nothing runs until it is polled.
    pub(crate) async fn listen(
        &self,
        params: SubscriptionsListenRequestParams,
        cx: &RequestContext,
    ) -> Result<Listening, ErrorObject> {
        let inner = &self.inner;
        // Task notifications: only for a client that declared the
        // extension, and only for its own tasks (others' are unknown).
        let task_ids = self
            .honoured_tasks(params.notifications.task_ids.as_deref(), cx)
            .await?;
        let slot = inner
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
        let tasks = match &task_ids {
            Some(ids) => only_changed(inner.task_store.watch(ids.clone())),
            None => futures::stream::pending().boxed(),
        };
        let honoured = SubscriptionFilter {
            task_ids,
            ..honoured
        };
        let ack = json!({"notifications": honoured});
        let ack = notification(&id, "notifications/subscriptions/acknowledged", ack);
        Ok(Listening {
            changes: inner.changes.subscribe(topics),
            tasks,
            ack: Some(Box::new(ack)),
            shutdown: inner.shutdown.clone(),
            server: self.clone(),
            id,
            _slot: slot,
        })
    }
}

/// An admitted `subscriptions/listen`: what its stream needs and nothing
/// more (no task, no request context), so that thousands can stay open
/// cheaply. It yields the acknowledgement, then a notification per change,
/// then, when the server shuts down gracefully, the final result. Dropping
/// it ends the subscription and frees its slot.
pub(crate) struct Listening {
    id: RequestId,
    /// The acknowledgement, until it is sent.
    ack: Option<Box<Message>>,
    changes: BoxStream<'static, Change>,
    /// Changes of the tasks listened to.
    tasks: BoxStream<'static, TaskRecord>,
    shutdown: CancellationToken,
    server: Server,
    _slot: SubscriptionSlot,
}

/// What a subscription yields next.
pub(crate) enum Heard {
    /// A notification to pass on.
    Notification(Message),
    /// The final result: the subscription is over.
    Done(Message),
}

impl Listening {
    /// The next notification, or the final result once the server shuts
    /// down gracefully.
    pub async fn next(&mut self) -> Heard {
        if let Some(ack) = self.ack.take() {
            return Heard::Notification(*ack);
        }
        tokio::select! {
            biased;
            () = self.shutdown.cancelled() => Heard::Done(self.result()),
            Some(change) = self.changes.next() => Heard::Notification(change_notification(&self.id, change)),
            Some(task) = self.tasks.next() => Heard::Notification(task_notification(&self.id, &task)),
            // The feed ended: nothing more will be heard; end as on shutdown.
            else => Heard::Done(self.result()),
        }
    }

    /// Runs the subscription for a transport that takes one reply per
    /// request: notifications go to `outbox`, the final result is returned;
    /// a cancelled subscription ends with an error (that nobody reads).
    pub async fn drive(mut self, outbox: Option<Outbox>, cancel: CancellationToken) -> Message {
        loop {
            let heard = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    let error = ErrorObject::internal("subscription cancelled");
                    return Message::Error(ErrorResponse::new(Some(self.id), error));
                }
                heard = self.next() => heard,
            };
            match heard {
                Heard::Notification(message) => {
                    if let Some(outbox) = &outbox {
                        outbox.send(message).await;
                    }
                }
                Heard::Done(message) => return message,
            }
        }
    }

    /// The answer when a subscription reaches a writer that does not stream
    /// it (a server bug: every transport streams or drives it).
    pub fn not_streamed(&self) -> Message {
        let error = ErrorObject::internal("the subscription was not streamed");
        Message::Error(ErrorResponse::new(Some(self.id.clone()), error))
    }

    /// The final result: `_meta` names the subscription.
    fn result(&self) -> Message {
        let mut result = JsonObject::new();
        result.insert("resultType".into(), json!("complete"));
        result.insert("_meta".into(), json!({ keys::SUBSCRIPTION_ID: self.id }));
        Message::Result(ResultResponse::new(
            self.id.clone(),
            self.server.finish(result),
        ))
    }
}

/// The notification of one change.
fn change_notification(id: &RequestId, change: Change) -> Message {
    match change {
        Change::ToolsListChanged => notification(id, "notifications/tools/list_changed", json!({})),
        Change::PromptsListChanged => {
            notification(id, "notifications/prompts/list_changed", json!({}))
        }
        Change::ResourcesListChanged => {
            notification(id, "notifications/resources/list_changed", json!({}))
        }
        Change::ResourceUpdated(uri) => {
            notification(id, "notifications/resources/updated", json!({"uri": uri}))
        }
    }
}

/// The records of `watched` whose public view differs from the last one
/// passed on for that task: a store update the client cannot see (a lease
/// renewed, the audit mark) is not worth a notification.
fn only_changed(watched: BoxStream<'static, TaskRecord>) -> BoxStream<'static, TaskRecord> {
    let mut last_seen: HashMap<String, DetailedTask> = HashMap::new();
    watched
        .filter_map(move |record| {
            let view = record.detailed();
            let changed = last_seen.get(&record.id) != Some(&view);
            if changed {
                last_seen.insert(record.id.clone(), view);
            }
            std::future::ready(changed.then_some(record))
        })
        .boxed()
}

/// `notifications/tasks`: the task as `tasks/get` would show it now.
fn task_notification(id: &RequestId, task: &TaskRecord) -> Message {
    let params = serde_json::to_value(task.detailed()).unwrap_or_default();
    notification(id, METHOD_TASKS_NOTIFICATION, params)
}

/// One notification tagged with the subscription id.
fn notification(id: &RequestId, method: &str, params: Value) -> Message {
    let mut params = match params {
        Value::Object(params) => params,
        _ => JsonObject::new(),
    };
    params.insert("_meta".into(), json!({ keys::SUBSCRIPTION_ID: id }));
    Message::Notification(Notification::new(method, Some(params)))
}
