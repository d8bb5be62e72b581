//! The notifications a legacy session receives without asking each time:
//! `notifications/{tools,prompts,resources}/list_changed` and
//! `notifications/resources/updated` for the URIs it subscribed to, read
//! from the server's [`ChangeFeed`](crate::ChangeFeed).

use std::collections::HashSet;

use futures::StreamExt;
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{JsonObject, Message, Notification};

use crate::context::Outbox;
use crate::server::Server;
use crate::store::change_feed::{Change, ChangeTopics};

/// Sends the session's change notifications to `outbox` until `stop`
/// fires. A new `resources/subscribe` (seen on `subscribed`) renews the
/// subscription to the feed.
pub(crate) async fn forward_changes(
    server: Server,
    mut subscribed: watch::Receiver<HashSet<String>>,
    outbox: Outbox,
    stop: CancellationToken,
) {
    loop {
        let uris = subscribed.borrow_and_update().clone();
        let mut changes = server.inner.changes.subscribe(topics(&server, uris));
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                renewed = subscribed.changed() => {
                    if renewed.is_err() {
                        return;
                    }
                    break;
                }
                change = changes.next() => match change {
                    Some(change) => outbox.send(notification(change)).await,
                    None => return,
                },
            }
        }
    }
}

/// The lists the server declares `listChanged` for, and the subscribed URIs.
fn topics(server: &Server, uris: HashSet<String>) -> ChangeTopics {
    let caps = server.capabilities();
    let changes = |declared: Option<Option<bool>>| declared.flatten() == Some(true);
    let resources = caps.resources.as_ref();
    ChangeTopics {
        tools: changes(caps.tools.map(|c| c.list_changed)),
        prompts: changes(caps.prompts.map(|c| c.list_changed)),
        resources: changes(resources.map(|c| c.list_changed)),
        resource_uris: (!uris.is_empty()).then_some(uris),
    }
}

fn notification(change: Change) -> Message {
    let (method, params) = match change {
        Change::ToolsListChanged => ("notifications/tools/list_changed", None),
        Change::PromptsListChanged => ("notifications/prompts/list_changed", None),
        Change::ResourcesListChanged => ("notifications/resources/list_changed", None),
        Change::ResourceUpdated(uri) => {
            let mut params = JsonObject::new();
            params.insert("uri".into(), json!(uri));
            ("notifications/resources/updated", Some(params))
        }
    };
    Message::Notification(Notification::new(method, params))
}
