//! The typed API against our own server, over both transports.

mod support;

use serde_json::json;
use toolwire_client::{Error, Freshness};
use toolwire_protocol::{
    CompletionArgument, CompletionReference, PromptReference, ResourceContents, code,
};

use support::{both, demo_server};

#[tokio::test]
async fn discover_reports_versions_and_capabilities() {
    for (transport, client) in both(demo_server()).await {
        let discovered = client.discover().await.unwrap();
        assert_eq!(
            discovered.value.supported_versions,
            ["2026-07-28"],
            "{transport}"
        );
        assert!(discovered.value.capabilities.tools.is_some(), "{transport}");
        assert_eq!(discovered.freshness, Freshness::Fetched);
        let again = client.discover().await.unwrap();
        assert_eq!(
            again.freshness,
            Freshness::Cached,
            "{transport}: discover is cached for its ttl"
        );
    }
}

#[tokio::test]
async fn list_tools_walks_every_page() {
    for (transport, client) in both(demo_server()).await {
        let list = client.list_tools().await.unwrap();
        let names: Vec<&str> = list.tools.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            [
                "echo", "add", "fail", "sleep", "progress", "region", "confirm", "ask_all", "nag"
            ],
            "{transport}"
        );
        assert!(list.rejected.is_empty());
        assert_eq!(list.freshness, Freshness::Fetched);
        let again = client.list_tools().await.unwrap();
        assert_eq!(
            again.freshness,
            Freshness::Cached,
            "{transport}: pages are cached"
        );
        assert_eq!(again.tools, list.tools);
    }
}

#[tokio::test]
async fn call_tool_returns_content_and_structured_content() {
    for (transport, client) in both(demo_server()).await {
        let echoed = client
            .call_tool("echo", json!({"text": "hi"}))
            .await
            .unwrap();
        assert_eq!(echoed.content[0].as_text(), Some("hi"), "{transport}");
        let sum = client
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(
            sum.structured_content,
            Some(json!({"total": 5})),
            "{transport}"
        );
    }
}

#[tokio::test]
async fn a_tool_execution_error_is_its_own_error_with_the_result() {
    for (transport, client) in both(demo_server()).await {
        let err = client.call_tool("fail", json!({})).await.unwrap_err();
        let Error::ToolExecution { tool, result } = &err else {
            panic!("{transport}: expected a tool execution error, got {err:?}");
        };
        assert_eq!(tool, "fail");
        assert!(result.is_error());
        assert_eq!(result.content[0].as_text(), Some("it broke"));
        assert_eq!(err.to_string(), "tool fail reported an error: it broke");
    }
}

#[tokio::test]
async fn protocol_errors_keep_code_message_and_data() {
    for (transport, client) in both(demo_server()).await {
        let err = client.call_tool("nope", json!({})).await.unwrap_err();
        match err {
            Error::Protocol { code, message, .. } => {
                assert_eq!(code, code::INVALID_PARAMS, "{transport}");
                assert_eq!(message, "Unknown tool: nope", "{transport}");
            }
            other => panic!("{transport}: {other:?}"),
        }
        // The client still works after an error.
        assert!(
            client
                .call_tool("echo", json!({"text": "again"}))
                .await
                .is_ok()
        );
    }
}

#[tokio::test]
async fn arguments_must_be_an_object() {
    let (_, client) = both(demo_server()).await.remove(0);
    let err = client.call_tool("echo", json!([1, 2])).await.unwrap_err();
    assert!(matches!(err, Error::InvalidArguments(_)), "{err:?}");
}

#[tokio::test]
async fn resources_prompts_and_completion() {
    for (transport, client) in both(demo_server()).await {
        let resources = client.list_resources().await.unwrap();
        assert_eq!(resources.value[0].uri, "test://greeting", "{transport}");
        let read = client.read_resource("test://greeting").await.unwrap();
        let ResourceContents::Text(text) = &read.value.contents[0] else {
            panic!("{transport}: expected text");
        };
        assert_eq!(text.text, "hello");
        let prompts = client.list_prompts().await.unwrap();
        assert_eq!(prompts.value[0].name, "review", "{transport}");
        let prompt = client
            .get_prompt("review", [("code".to_owned(), "x = 1".to_owned())].into())
            .await
            .unwrap();
        assert_eq!(
            prompt.messages[0].content.as_text(),
            Some("Review: x = 1"),
            "{transport}"
        );
        let completed = client
            .complete(
                CompletionReference::Prompt(PromptReference {
                    name: "review".into(),
                    title: None,
                }),
                CompletionArgument {
                    name: "code".into(),
                    value: "ab".into(),
                },
                None,
            )
            .await
            .unwrap();
        assert_eq!(completed.completion.values, ["ab1", "ab2"], "{transport}");
    }
}

#[tokio::test]
async fn concurrent_requests_each_get_only_their_own_progress() {
    use std::sync::{Arc, Mutex};
    use toolwire_client::{RequestNotification, RequestOptions};
    for (transport, client) in both(demo_server()).await {
        let sinks: Vec<Arc<Mutex<Vec<f64>>>> = (0..4).map(|_| Arc::default()).collect();
        let calls = sinks.iter().map(|sink| {
            let sink = sink.clone();
            let client = client.clone();
            async move {
                let options = RequestOptions::new().on_notification(move |n| {
                    if let RequestNotification::Progress(p) = n {
                        sink.lock().unwrap().push(p.progress);
                    }
                });
                client
                    .call_tool_with("progress", json!({}), &options)
                    .await
                    .unwrap();
            }
        });
        futures::future::join_all(calls).await;
        for sink in sinks {
            assert_eq!(*sink.lock().unwrap(), [1.0, 2.0, 3.0], "{transport}");
        }
    }
}

#[tokio::test]
async fn an_oversized_http_reply_is_refused() {
    let url = support::http_server(demo_server()).await;
    let transport = toolwire_client::transport::HttpTransport::builder(url)
        .max_message_bytes(64)
        .build()
        .unwrap();
    let client = toolwire_client::Client::builder(transport).build();
    let err = client.list_tools().await.unwrap_err();
    assert!(
        matches!(err, Error::Transport(toolwire_client::TransportError::Malformed(ref m)) if m == "reply larger than 64 bytes"),
        "{err:?}"
    );
}
