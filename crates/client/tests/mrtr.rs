//! Multi round-trip requests: handlers answer, retries get new ids, state is
//! echoed exactly, concurrent calls stay apart, rounds are bounded.

mod support;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolwire_client::handlers::{BoxError, InputContext};
use toolwire_client::{Client, Error};
use toolwire_protocol::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitValue, OneOrMany, Request, Role, Root, SamplingContent, TextContent, code,
};

use support::{both, demo_server, fake_stdio, pipe_transport, reply};

fn accept(field: &str, value: Value) -> ElicitResult {
    let value: ElicitValue = serde_json::from_value(value).unwrap();
    ElicitResult::accept([(field.to_owned(), value)].into())
}

fn answer_sample() -> CreateMessageResult {
    CreateMessageResult {
        role: Role::Assistant,
        content: OneOrMany::One(SamplingContent::Text(TextContent {
            text: "Paris".into(),
            ..Default::default()
        })),
        model: "test-model".into(),
        stop_reason: None,
        meta: None,
    }
}

fn with_handlers(
    client: toolwire_client::ClientBuilder,
    log: Arc<Mutex<Vec<InputContext>>>,
) -> Client {
    let elicit_log = log.clone();
    let sample_log = log.clone();
    client
        .elicitation(move |params: ElicitRequestParams, cx: InputContext| {
            elicit_log.lock().unwrap().push(cx.clone());
            async move {
                Ok::<_, BoxError>(match params.message() {
                    m if m.starts_with("Really yes") => accept("ok", json!(true)),
                    m if m.starts_with("Really") => ElicitResult::decline(),
                    _ => accept("name", json!("Ada")),
                })
            }
        })
        .sampling(move |_: CreateMessageRequestParams, cx: InputContext| {
            sample_log.lock().unwrap().push(cx);
            async { Ok::<_, BoxError>(answer_sample()) }
        })
        .roots(vec![Root::new("file:///work")])
        .build()
}

#[tokio::test]
async fn elicitation_round_trip_over_both_transports() {
    let server = demo_server();
    let url = support::http_server(server.clone()).await;
    let builders = [
        Client::builder(pipe_transport(server)).name("demo"),
        Client::builder(toolwire_client::transport::HttpTransport::new(url).unwrap()).name("demo"),
    ];
    for builder in builders {
        let log = Arc::new(Mutex::new(Vec::new()));
        let client = with_handlers(builder, log.clone());
        let yes = client
            .call_tool("confirm", json!({"text": "yes"}))
            .await
            .unwrap();
        assert_eq!(yes.content[0].as_text(), Some("yes: confirmed"));
        let no = client
            .call_tool("confirm", json!({"text": "no"}))
            .await
            .unwrap();
        assert_eq!(no.content[0].as_text(), Some("no: refused"));
        let contexts = log.lock().unwrap().clone();
        assert_eq!(contexts.len(), 2);
        assert_eq!(contexts[0].server, "demo");
        assert_eq!(contexts[0].method, "tools/call");
        assert_eq!(contexts[0].target, "confirm");
        assert_eq!(contexts[0].key, "confirm");
        assert_eq!(contexts[0].round, 1);
    }
}

#[tokio::test]
async fn roots_sampling_and_elicitation_over_two_rounds() {
    let server = demo_server();
    let url = support::http_server(server.clone()).await;
    let builders = [
        Client::builder(pipe_transport(server)),
        Client::builder(toolwire_client::transport::HttpTransport::new(url).unwrap()),
    ];
    for builder in builders {
        let log = Arc::new(Mutex::new(Vec::new()));
        let client = with_handlers(builder, log.clone());
        let result = client.call_tool("ask_all", json!({})).await.unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some(r#"roots=file:///work sample={"type":"text","text":"Paris"} name=Ada"#)
        );
        let rounds: Vec<(String, usize)> = log
            .lock()
            .unwrap()
            .iter()
            .map(|c| (c.key.clone(), c.round))
            .collect();
        assert_eq!(rounds, [("capital".to_owned(), 1), ("name".to_owned(), 2)]);
    }
}

#[tokio::test]
async fn without_handlers_the_server_refuses_with_missing_capability() {
    for (transport, client) in both(demo_server()).await {
        let err = client
            .call_tool("confirm", json!({"text": "x"}))
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            Some(code::MISSING_REQUIRED_CLIENT_CAPABILITY),
            "{transport}: {err:?}"
        );
    }
}

#[tokio::test]
async fn rounds_are_bounded() {
    let client = Client::builder(pipe_transport(demo_server()))
        .roots(vec![Root::new("file:///a")])
        .max_rounds(3)
        .build();
    let err = client.call_tool("nag", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::TooManyRounds(3)), "{err:?}");
}

#[tokio::test]
async fn concurrent_calls_are_kept_apart() {
    let client = with_handlers(
        Client::builder(pipe_transport(demo_server())),
        Arc::default(),
    );
    let calls = (0..8).map(|i| {
        let client = client.clone();
        async move {
            let text = if i % 2 == 0 {
                format!("yes {i}")
            } else {
                format!("not {i}")
            };
            let result = client
                .call_tool("confirm", json!({"text": text}))
                .await
                .unwrap();
            (text, result.content[0].as_text().unwrap().to_owned())
        }
    });
    for (text, answer) in futures::future::join_all(calls).await {
        let expected = if text.starts_with("yes") {
            "confirmed"
        } else {
            "refused"
        };
        assert_eq!(answer, format!("{text}: {expected}"));
    }
}

/// A fake server that asks once, then completes; it records what came back.
fn asking_server(state: Option<&'static str>) -> support::Script {
    Arc::new(move |request: &Request| match request.method.as_str() {
        "tools/list" => vec![reply(
            request,
            json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
        )],
        _ => {
            let params = request.params.clone().unwrap_or_default();
            if params.contains_key("inputResponses") {
                return vec![reply(
                    request,
                    json!({"content": [{"type": "text", "text": "done"}]}),
                )];
            }
            let mut result = json!({
                "resultType": "input_required",
                "inputRequests": {"where": {"method": "roots/list"}}
            });
            if let Some(state) = state {
                result["requestState"] = json!(state);
            }
            vec![reply(request, result)]
        }
    })
}

#[tokio::test]
async fn the_retry_has_a_new_id_the_same_arguments_and_the_exact_state() {
    let state = "opaque/+=\u{00e9}\\\"state\" \u{1F600}";
    let (transport, received) = fake_stdio(asking_server(Some(state)));
    let client = Client::builder(transport)
        .roots(vec![Root::new("file:///r")])
        .build();
    client
        .call_tool("t", json!({"a": [1, {"b": null}]}))
        .await
        .unwrap();
    let calls: Vec<Request> = received
        .requests()
        .into_iter()
        .filter(|r| r.method == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].id, calls[1].id);
    let first = calls[0].params.clone().unwrap();
    let retry = calls[1].params.clone().unwrap();
    assert_eq!(first["arguments"], retry["arguments"]);
    assert!(!first.contains_key("requestState"));
    assert_eq!(retry["requestState"], json!(state));
    assert_eq!(
        retry["inputResponses"],
        json!({"where": {"roots": [{"uri": "file:///r"}]}})
    );
}

#[tokio::test]
async fn no_state_given_means_no_state_sent() {
    let (transport, received) = fake_stdio(asking_server(None));
    let client = Client::builder(transport)
        .roots(vec![Root::new("file:///r")])
        .build();
    client.call_tool("t", json!({})).await.unwrap();
    let retry = received
        .requests()
        .into_iter()
        .rfind(|r| r.method == "tools/call")
        .unwrap();
    assert!(!retry.params.unwrap().contains_key("requestState"));
}

#[tokio::test]
async fn an_input_request_without_a_handler_fails_locally() {
    // The fake server asks for roots although the client declared nothing.
    let (transport, received) = fake_stdio(asking_server(Some("s")));
    let client = Client::builder(transport).build();
    let err = client.call_tool("t", json!({})).await.unwrap_err();
    match err {
        Error::Input { key, method, .. } => {
            assert_eq!(key, "where");
            assert_eq!(method, "roots/list");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        received.methods(),
        ["tools/list", "tools/call"],
        "no retry was sent"
    );
}

#[tokio::test]
async fn a_failing_handler_fails_the_call() {
    let (transport, _) = fake_stdio(Arc::new(|request: &Request| {
        match request.method.as_str() {
            "tools/list" => vec![reply(request, json!({"tools": []}))],
            _ => vec![reply(
                request,
                json!({
                    "resultType": "input_required",
                    "inputRequests": {"ask": {"method": "elicitation/create", "params": {"mode": "form", "message": "m", "requestedSchema": {"type": "object"}}}}
                }),
            )],
        }
    }));
    let client = Client::builder(transport)
        .elicitation(|_: ElicitRequestParams, _| async {
            Err::<ElicitResult, BoxError>("the user closed the window".into())
        })
        .build();
    let err = client.call_tool("t", json!({})).await.unwrap_err();
    assert!(
        matches!(err, Error::Input { ref reason, .. } if reason == "the user closed the window"),
        "{err:?}"
    );
}

#[tokio::test]
async fn prompts_and_reads_run_rounds_too() {
    let (transport, received) = fake_stdio(Arc::new(|request: &Request| {
        let params = request.params.clone().unwrap_or_default();
        if !params.contains_key("inputResponses") {
            return vec![reply(
                request,
                json!({
                    "resultType": "input_required",
                    "inputRequests": {"r": {"method": "roots/list"}},
                    "requestState": "s1"
                }),
            )];
        }
        match request.method.as_str() {
            "prompts/get" => vec![reply(
                request,
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "p"}}]}),
            )],
            _ => vec![reply(
                request,
                json!({"contents": [{"uri": "x://1", "text": "r"}], "ttlMs": 60000, "cacheScope": "public"}),
            )],
        }
    }));
    let client = Client::builder(transport)
        .roots(vec![Root::new("file:///r")])
        .build();
    let prompt = client.get_prompt("p", Default::default()).await.unwrap();
    assert_eq!(prompt.messages.len(), 1);
    let read = client.read_resource("x://1").await.unwrap();
    assert_eq!(read.value.contents[0].uri(), "x://1");
    // A read that needed input rounds is never cached: reading again asks again.
    client.read_resource("x://1").await.unwrap();
    let methods = received.methods();
    assert_eq!(
        methods,
        [
            "prompts/get",
            "prompts/get",
            "resources/read",
            "resources/read",
            "resources/read",
            "resources/read"
        ]
    );
}
