//! Legacy (2025-11-25) sessions shared by two HTTP endpoints through one
//! session store, as instances behind a load balancer share Redis: each of
//! a session's requests may reach either instance, answers and
//! cancellations find the instance waiting on them, changes and endings
//! reach both, and a store outage is refused with a clear error.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::legacy_http::{Endpoint, Events, builder, echo, echoed, legacy};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use toolwire_server::http::HttpConfig;
use toolwire_server::{
    InMemorySessionStore, Server, SessionEvent, SessionRecord, SessionStore,
    SessionStoreUnavailable,
};

/// Two endpoints of `server` sharing `store`.
async fn two_instances(server: &Server, store: Arc<dyn SessionStore>) -> (Endpoint, Endpoint) {
    let config = || HttpConfig::new().session_store(Arc::clone(&store));
    let a = Endpoint::start(server.clone(), config()).await;
    let b = Endpoint::start(server.clone(), config()).await;
    (a, b)
}

fn shared() -> Arc<dyn SessionStore> {
    Arc::new(InMemorySessionStore::new())
}

/// POSTs `tools/call confirm` as request `id`; its SSE events after the
/// priming one, and the elicitation it carries.
async fn ask_to_confirm(endpoint: &Endpoint, session: &str, id: i64) -> (Events, Value) {
    let call = legacy(
        id,
        "tools/call",
        json!({"name": "confirm", "arguments": {}}),
    );
    let response = endpoint.post(Some(session), &call).send().await.unwrap();
    let mut events = Events::new(response);
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let ask = events.message().await;
    assert_eq!(ask["method"], "elicitation/create");
    (events, ask)
}

#[tokio::test]
async fn a_session_opened_on_one_instance_is_served_by_the_other() {
    let server = builder().build().unwrap();
    let (a, b) = two_instances(&server, shared()).await;
    let id = a.open(None).await;
    assert_eq!(b.sessions.len(), 0);
    assert_eq!(
        b.call(&id, &echo(2, "via b")).await,
        (200, echoed(2, "via b"))
    );
    assert_eq!(b.sessions.len(), 1, "b runs the session now");
    assert_eq!(
        a.call(&id, &echo(3, "via a")).await,
        (200, echoed(3, "via a"))
    );
    let (status, reply) = b.call(&id, &legacy(4, "initialize", json!({}))).await;
    assert_eq!(status, 200);
    assert_eq!(
        reply["error"]["message"],
        "Invalid request: this session is already initialized; send initialize once per session"
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_elicitation_answered_through_the_other_instance_completes() {
    let server = builder().build().unwrap();
    let (a, b) = two_instances(&server, shared()).await;
    let id = a.open(None).await;
    let (mut events, ask) = ask_to_confirm(&b, &id, 9).await;
    assert!(ask["id"].is_string(), "tagged per instance: {ask}");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"ok": true}}});
    let posted = a.post(Some(&id), &answer).send().await.unwrap();
    assert_eq!(posted.status(), 202);
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": "accepted {\"ok\":true}"}]}})
    );
    assert!(
        events.next().await.is_none(),
        "the stream ends after the response"
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_cancellation_sent_to_the_other_instance_stops_the_request() {
    let server = builder().build().unwrap();
    let (a, b) = two_instances(&server, shared()).await;
    let id = a.open(None).await;
    let (mut events, ask) = ask_to_confirm(&b, &id, 10).await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10}});
    assert_eq!(
        a.post(Some(&id), &cancel).send().await.unwrap().status(),
        202
    );
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": ask["id"], "reason": "the server no longer needs the answer"}})
    );
    assert!(
        events.next().await.is_none(),
        "no response to a cancelled request"
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn delete_on_one_instance_ends_the_session_on_both() {
    let server = builder().build().unwrap();
    let (a, b) = two_instances(&server, shared()).await;
    let id = a.open(None).await;
    let standalone = b.standalone(&id).send().await.unwrap();
    let mut events = Events::new(standalone);
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let delete = a.delete(&id).send().await.unwrap();
    assert_eq!(delete.status(), 204);
    assert!(
        events.next().await.is_none(),
        "b's stream of the session ends"
    );
    assert_eq!(b.call(&id, &echo(5, "x")).await.0, 404);
    assert_eq!(a.call(&id, &echo(6, "x")).await.0, 404);
    assert_eq!((a.sessions.len(), b.sessions.len()), (0, 0));
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_subscription_made_through_one_instance_holds_on_the_others_stream() {
    let server = builder().build().unwrap();
    let (a, b) = two_instances(&server, shared()).await;
    let id = a.open(None).await;
    let standalone = b.standalone(&id).send().await.unwrap();
    let mut events = Events::new(standalone);
    assert_eq!(events.next().await.unwrap().data, "", "priming event");
    let subscribe = legacy(7, "resources/subscribe", json!({"uri": "test://watched"}));
    assert_eq!(
        a.call(&id, &subscribe).await,
        (200, json!({"jsonrpc": "2.0", "id": 7, "result": {}}))
    );
    // The update event travels on after the subscription's: wait until b
    // has adopted it (its next request loads the record as well).
    assert_eq!(b.call(&id, &echo(8, "sync")).await.0, 200);
    server.notify_resource_updated("test://unwatched");
    server.notify_resource_updated("test://watched");
    assert_eq!(
        events.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://watched"}})
    );
    a.stop().await;
    b.stop().await;
}

/// An in-memory store that can be taken down.
#[derive(Debug, Default)]
struct FlakyStore {
    records: InMemorySessionStore,
    down: AtomicBool,
}

impl FlakyStore {
    fn check(&self) -> Result<(), SessionStoreUnavailable> {
        if self.down.load(Ordering::SeqCst) {
            return Err(SessionStoreUnavailable(
                "Redis at 127.0.0.1:1: connection refused".into(),
            ));
        }
        Ok(())
    }
}

impl SessionStore for FlakyStore {
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SessionStoreUnavailable>> {
        Box::pin(async move {
            self.check()?;
            self.records.create(id, record, ttl).await
        })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SessionStoreUnavailable>> {
        Box::pin(async move {
            self.check()?;
            self.records.load(id, ttl).await
        })
    }

    fn save<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, SessionStoreUnavailable>> {
        Box::pin(async move {
            self.check()?;
            self.records.save(id, record, ttl).await
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, SessionStoreUnavailable>> {
        Box::pin(async move {
            self.check()?;
            self.records.remove(id).await
        })
    }

    fn publish(&self, event: SessionEvent) {
        self.records.publish(event);
    }

    fn events(&self) -> BoxStream<'static, SessionEvent> {
        self.records.events()
    }
}

#[tokio::test]
async fn while_the_store_is_down_new_sessions_are_refused_and_running_ones_go_on() {
    let server = builder().build().unwrap();
    let store = Arc::new(FlakyStore::default());
    let (a, b) = two_instances(&server, store.clone()).await;
    let id = a.open(None).await;
    store.down.store(true, Ordering::SeqCst);

    let refused = a
        .post(None, &common::legacy_http::initialize(1))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(
        refused.json::<Value>().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message":
            "the session cannot be opened: Redis at 127.0.0.1:1: connection refused; retry in 1 s"}})
    );
    assert_eq!(
        a.call(&id, &echo(2, "still here")).await,
        (200, echoed(2, "still here"))
    );
    assert_eq!(
        b.call(&id, &echo(3, "elsewhere")).await,
        (
            503,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32000, "message":
            "the session cannot be looked up: Redis at 127.0.0.1:1: connection refused; retry in 1 s"}})
        )
    );

    store.down.store(false, Ordering::SeqCst);
    assert_eq!(
        b.call(&id, &echo(4, "back")).await,
        (200, echoed(4, "back"))
    );
    a.stop().await;
    b.stop().await;
}
