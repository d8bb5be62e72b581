//! subscriptions/listen: dispatcher level and over stdio (in-process pipe).

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolwire_protocol::{Message, PromptMessage, Role};
use toolwire_server::{
    NoArgs, Outbox, Principal, PromptBuilder, RequestContext, RequestEnv, ResourceBuilder, Server,
    ToolBuilder, text_contents,
};

fn server() -> Server {
    Server::builder("listen", "1")
        .max_subscriptions_per_principal(2)
        .tool(
            ToolBuilder::new("a")
                .description("a")
                .handler(|_: NoArgs, _cx: RequestContext| async { "a" }),
        )
        .prompt(
            PromptBuilder::new("p")
                .description("p")
                .handler(|_, _cx| async { Ok(vec![PromptMessage::text(Role::User, "p")]) }),
        )
        .resource(
            ResourceBuilder::new("test://r", "r").handler(|req, _cx| async move {
                Ok(vec![text_contents(req.uri, "text/plain", "r")])
            }),
        )
        .build()
        .unwrap()
}

fn tool(name: &str) -> ToolBuilder {
    let text = name.to_owned();
    ToolBuilder::new(name)
        .description("added")
        .handler(move |_: NoArgs, _cx: RequestContext| {
            let text = text.clone();
            async move { text }
        })
}

/// A listen request running on the dispatcher, with its outbox and cancel token.
struct Listener {
    rx: mpsc::Receiver<Message>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<Message>,
}

impl Listener {
    fn open(server: &Server, id: i64, filter: Value, principal: Principal) -> Listener {
        let (tx, rx) = mpsc::channel(64);
        let cancel = CancellationToken::new();
        let env = RequestEnv::new()
            .with_outbox(Outbox::new(tx))
            .with_cancel(cancel.clone())
            .with_principal(principal);
        let request = request(id, "subscriptions/listen", json!({"notifications": filter}));
        let server = server.clone();
        let task = tokio::spawn(async move { server.handle_request(request, env).await });
        Listener { rx, cancel, task }
    }

    async fn next(&mut self) -> Value {
        let message = tokio::time::timeout(Duration::from_secs(5), self.rx.recv())
            .await
            .expect("a message within 5 s")
            .expect("stream open");
        json_of(&message)
    }

    async fn nothing_within(&mut self, ms: u64) {
        if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(ms), self.rx.recv()).await {
            panic!("unexpected message {}", json_of(&m));
        }
    }
}

#[tokio::test]
async fn ack_first_with_the_honoured_subset_and_tagging() {
    let s = server();
    let mut l = Listener::open(
        &s,
        7,
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://r"], "unknownThing": true}),
        Principal::anonymous(),
    );
    assert_eq!(
        l.next().await,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
            "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["test://r"]},
            "_meta": {"io.modelcontextprotocol/subscriptionId": 7}
        }})
    );
    s.add_tool(tool("b")).unwrap();
    assert_eq!(
        l.next().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 7}}})
    );
    s.notify_resource_updated("test://other");
    s.notify_resource_updated("test://r");
    assert_eq!(
        l.next().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"uri": "test://r", "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}})
    );
}

#[tokio::test]
async fn filter_is_honoured() {
    let s = server();
    let mut prompts_only = Listener::open(
        &s,
        1,
        json!({"promptsListChanged": true}),
        Principal::anonymous(),
    );
    assert_eq!(
        prompts_only.next().await["params"]["notifications"],
        json!({"promptsListChanged": true})
    );
    s.add_tool(tool("b")).unwrap();
    s.notify_tools_list_changed();
    prompts_only.nothing_within(200).await;
    s.notify_prompts_list_changed();
    assert_eq!(
        prompts_only.next().await["method"],
        "notifications/prompts/list_changed"
    );
}

#[tokio::test]
async fn a_burst_of_edits_is_one_notification_and_reaches_every_listener() {
    let s = server();
    let mut first = Listener::open(
        &s,
        1,
        json!({"toolsListChanged": true}),
        Principal::new("a"),
    );
    let mut second = Listener::open(
        &s,
        2,
        json!({"toolsListChanged": true}),
        Principal::new("b"),
    );
    first.next().await;
    second.next().await;
    let editor = s.clone();
    tokio::spawn(async move {
        for i in 0..20 {
            editor.add_tool(tool(&format!("t{i}"))).unwrap();
        }
    })
    .await
    .unwrap();
    for l in [&mut first, &mut second] {
        assert_eq!(l.next().await["method"], "notifications/tools/list_changed");
        l.nothing_within(200).await;
    }
}

#[tokio::test]
async fn cancel_frees_the_subscription_and_the_cap_applies_per_principal() {
    let s = server();
    let mut a = Listener::open(
        &s,
        1,
        json!({"toolsListChanged": true}),
        Principal::new("p"),
    );
    let mut b = Listener::open(
        &s,
        2,
        json!({"toolsListChanged": true}),
        Principal::new("p"),
    );
    a.next().await;
    b.next().await;
    assert_eq!(s.open_subscriptions(), 2);
    let third = Listener::open(&s, 3, json!({}), Principal::new("p"));
    let refused = json_of(&third.task.await.unwrap());
    assert_eq!(refused["error"]["code"], -32600);
    assert_eq!(
        refused["error"]["message"],
        "Invalid request: too many open subscriptions for this principal (limit 2); close one before opening another"
    );
    let mut other = Listener::open(&s, 4, json!({}), Principal::new("q"));
    other.next().await;
    a.cancel.cancel();
    a.task.await.unwrap();
    assert_eq!(s.open_subscriptions(), 2);
    let mut again = Listener::open(&s, 5, json!({}), Principal::new("p"));
    assert_eq!(
        again.next().await["method"],
        "notifications/subscriptions/acknowledged"
    );
}

#[tokio::test]
async fn shutdown_answers_every_listener_with_its_completion() {
    let s = server();
    let mut a = Listener::open(
        &s,
        10,
        json!({"toolsListChanged": true}),
        Principal::anonymous(),
    );
    let mut b = Listener::open(&s, "x".len() as i64 + 20, json!({}), Principal::anonymous());
    a.next().await;
    b.next().await;
    s.shutdown();
    let done = json_of(&a.task.await.unwrap());
    assert_eq!(
        done,
        json!({"jsonrpc": "2.0", "id": 10, "result": {"resultType": "complete", "_meta": {
            "io.modelcontextprotocol/subscriptionId": 10,
            "io.modelcontextprotocol/serverInfo": {"name": "listen", "version": "1"}
        }}})
    );
    assert_eq!(
        json_of(&b.task.await.unwrap())["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        21
    );
}

#[tokio::test]
async fn list_changed_can_be_turned_off() {
    let s = Server::builder("quiet", "1")
        .list_changed(false)
        .build()
        .unwrap();
    let r = result(&s, request(1, "server/discover", json!({}))).await;
    assert_eq!(r["capabilities"]["tools"], json!({}));
    let mut l = Listener::open(
        &s,
        1,
        json!({"toolsListChanged": true}),
        Principal::anonymous(),
    );
    assert_eq!(l.next().await["params"]["notifications"], json!({}));
}

#[tokio::test]
async fn stdio_subscriptions_share_the_pipe_and_cancel_one_by_one() {
    let s = server();
    let mut stdio = ServedStdio::start(s.clone());
    for id in [1, 2] {
        let listen = request(
            id,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        stdio.send(&listen).await;
    }
    let mut acked = [stdio.next().await, stdio.next().await];
    acked.sort_by_key(|m| m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].as_i64());
    assert_eq!(
        acked[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        acked[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        2
    );
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    stdio.send(&cancel).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.add_tool(tool("b")).unwrap();
    let note = stdio.next().await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 2,
        "only the live subscription hears it"
    );
    // End of input ends the open subscription and the server.
    stdio.close().await;
}
