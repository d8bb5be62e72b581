//! Following a task's `notifications/tasks` while waiting for it: a
//! `subscriptions/listen` with `taskIds` [the task], opened when the wait
//! starts. A notification that tells of a new status wakes the wait at
//! once; the wait then confirms with `tasks/get` (a notification is a
//! hint). Polling at the task's `pollIntervalMs` goes on regardless, and is
//! all that is left when the server refuses the subscription, does not
//! take the task into it, or the stream breaks: following never fails a
//! wait.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use toolwire_protocol::{METHOD_TASKS_NOTIFICATION, SubscriptionFilter, TaskStatus};

use crate::client::Client;
use crate::error::Error;
use crate::listen::{ListenEvent, Subscription};
use crate::options::RequestOptions;
use crate::transport::Era;

/// How long the first `tasks/get` of a wait waits for the subscription to
/// be acknowledged (so that no change falls between the two). A later
/// acknowledgement still counts: the wait then reads the task once more.
pub(crate) const SETTLE: Duration = Duration::from_secs(1);

/// The notifications of one task, while a wait for it lasts. Dropping it
/// ends the subscription.
pub(crate) struct Follow {
    task_id: String,
    state: State,
}

enum State {
    /// The subscription is being opened (not acknowledged yet).
    Opening(BoxFuture<'static, Result<Subscription, Error>>),
    /// Acknowledged, with the task among its `taskIds`.
    Open(Subscription),
    /// Nothing to follow: polling only.
    Off,
}

impl Follow {
    /// Starts opening a subscription to `task_id`'s notifications with
    /// `options` (which declare the Tasks extension). Nothing is opened for
    /// a legacy server (it has no `subscriptions/listen`, nor tasks).
    pub(crate) fn start(client: &Client, task_id: &str, options: RequestOptions) -> Follow {
        if client.era() == Some(Era::Legacy) {
            return Follow::off(task_id);
        }
        let filter = SubscriptionFilter {
            task_ids: Some(vec![task_id.to_owned()]),
            ..SubscriptionFilter::default()
        };
        let client = client.clone();
        let opening = async move { client.listen_with(filter, &options).await };
        Follow {
            task_id: task_id.to_owned(),
            state: State::Opening(Box::pin(opening)),
        }
    }

    /// Polling only.
    fn off(task_id: &str) -> Follow {
        Follow {
            task_id: task_id.to_owned(),
            state: State::Off,
        }
    }

    /// Waits up to `limit` for the subscription to be acknowledged (or
    /// refused).
    pub(crate) async fn settle(&mut self, limit: Duration) {
        if let State::Opening(opening) = &mut self.state
            && let Ok(opened) = tokio::time::timeout(limit, opening).await
        {
            self.state = self.accept(opened);
        }
    }

    /// Sleeps `interval`, or less: until a notification tells of a status
    /// other than `seen` (the one the last `tasks/get` showed), or the
    /// subscription is acknowledged late (a change may have been missed).
    pub(crate) async fn wait(&mut self, interval: Duration, seen: TaskStatus) {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = self.woken(seen) => {}
        }
    }

    /// Returns when there is reason to read the task again; never, once
    /// following is off. Cancel-safe: the opening and the stream are kept
    /// in `self` between calls.
    async fn woken(&mut self, seen: TaskStatus) {
        loop {
            match &mut self.state {
                State::Off => return std::future::pending().await,
                State::Opening(opening) => {
                    let opened = opening.await;
                    self.state = self.accept(opened);
                    if matches!(self.state, State::Open(_)) {
                        return;
                    }
                }
                State::Open(subscription) => match subscription.next_event().await {
                    Some(Ok(ListenEvent::Other(notification)))
                        if notification.method == METHOD_TASKS_NOTIFICATION =>
                    {
                        let params = notification.params.unwrap_or_default();
                        let status = params
                            .get("status")
                            .cloned()
                            .and_then(|s| serde_json::from_value::<TaskStatus>(s).ok());
                        let about = params.get("taskId").and_then(Value::as_str);
                        if about == Some(self.task_id.as_str())
                            && status.is_some_and(|status| status != seen)
                        {
                            return;
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(error)) => {
                        tracing::debug!(task = %self.task_id, %error, "task notifications ended; polling only");
                        self.state = State::Off;
                    }
                    None => self.state = State::Off,
                },
            }
        }
    }

    /// What an opening came to: followed only if the server took the task.
    fn accept(&self, opened: Result<Subscription, Error>) -> State {
        match opened {
            Ok(subscription)
                if subscription
                    .acknowledged()
                    .task_ids
                    .as_ref()
                    .is_some_and(|ids| ids.contains(&self.task_id)) =>
            {
                State::Open(subscription)
            }
            Ok(_) => {
                tracing::debug!(task = %self.task_id, "the server sends no notifications for the task; polling only");
                State::Off
            }
            Err(error) => {
                tracing::debug!(task = %self.task_id, %error, "no task notifications; polling only");
                State::Off
            }
        }
    }
}
