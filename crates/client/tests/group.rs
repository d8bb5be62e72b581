//! `ClientGroup`: prefixed names, routing, limits.

mod support;

use std::sync::Arc;

use serde_json::json;
use toolwire_client::{Client, ClientGroup, Error, MAX_NAME_LEN};
use toolwire_protocol::Request;

use support::{demo_server, fake_stdio, pipe_transport, reply};

fn named_tools(names: Vec<String>) -> support::Script {
    Arc::new(move |request: &Request| match request.method.as_str() {
        "tools/list" => {
            let tools: Vec<_> = names
                .iter()
                .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                .collect();
            vec![reply(request, json!({"tools": tools}))]
        }
        _ => {
            let name = request.params.as_ref().unwrap()["name"].clone();
            vec![reply(
                request,
                json!({"content": [{"type": "text", "text": format!("called {}", name.as_str().unwrap())}]}),
            )]
        }
    })
}

#[tokio::test]
async fn tools_are_prefixed_and_calls_routed_back() {
    let group = ClientGroup::builder()
        .client(
            "alpha",
            Client::builder(pipe_transport(demo_server())).build(),
        )
        .client(
            "beta",
            Client::builder(pipe_transport(demo_server())).build(),
        )
        .build();
    let list = group.list_tools().await;
    assert!(list.failures.is_empty());
    let names: Vec<&str> = list.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"alpha_echo") && names.contains(&"beta_echo"),
        "{names:?}"
    );
    assert_eq!(list.tools.len(), 18);
    let beta_echo = list.tools.iter().find(|t| t.name == "beta_echo").unwrap();
    assert_eq!(beta_echo.server, "beta");
    assert_eq!(beta_echo.info.name(), "echo");
    let result = group
        .call_tool("beta_echo", json!({"text": "routed"}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("routed"));
    assert_eq!(
        group.resolve("alpha_add"),
        Some(("alpha", "add".to_owned()))
    );
    let err = group.call_tool("gamma_echo", json!({})).await.unwrap_err();
    assert!(
        matches!(err, Error::UnknownTool(ref n) if n == "gamma_echo"),
        "{err:?}"
    );
}

#[tokio::test]
async fn separator_and_prefix_are_configurable() {
    let (one, received) = fake_stdio(named_tools(vec!["search".into()]));
    let (two, _) = fake_stdio(named_tools(vec!["search".into()]));
    let group = ClientGroup::builder()
        .client_with_prefix("github", "gh", Client::builder(one).build())
        .client_with_prefix("local", "", Client::builder(two).build())
        .separator("__")
        .build();
    let names: Vec<String> = group
        .list_tools()
        .await
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["gh__search", "search"]);
    // Calls go out with the original name.
    let result = group.call_tool("gh__search", json!({})).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("called search"));
    let call = received
        .requests()
        .into_iter()
        .find(|r| r.method == "tools/call")
        .unwrap();
    assert_eq!(call.params.unwrap()["name"], "search");
}

#[tokio::test]
async fn long_and_colliding_names_stay_unique_within_128_characters() {
    let long = "x".repeat(127);
    let (one, _) = fake_stdio(named_tools(vec![
        long.clone(),
        format!("{long}y"),
        "b_c".into(),
    ]));
    let (two, received) = fake_stdio(named_tools(vec!["c".into()]));
    let group = ClientGroup::builder()
        .client("a", Client::builder(one).build())
        .client("a_b", Client::builder(two).build())
        .build();
    let tools = group.list_tools().await.tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.iter().all(|n| n.len() <= MAX_NAME_LEN), "{names:?}");
    let unique: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(unique.len(), 4, "{names:?}");
    assert_eq!(names[2], "a_b_c");
    assert_ne!(names[3], "a_b_c", "a_b + c collides with a + b_c");
    // The disambiguated one still routes to its own server and name.
    let exposed = names[3].to_owned();
    group.call_tool(&exposed, json!({})).await.unwrap();
    let call = received
        .requests()
        .into_iter()
        .find(|r| r.method == "tools/call")
        .unwrap();
    assert_eq!(call.params.unwrap()["name"], "c");
}

#[tokio::test]
async fn a_failing_member_is_reported_and_the_others_listed() {
    let (good, _) = fake_stdio(named_tools(vec!["ok".into()]));
    let broken =
        toolwire_client::transport::StdioTransport::command("/nonexistent/toolwire-none").build();
    let group = ClientGroup::builder()
        .client("good", Client::builder(good).build())
        .client("broken", Client::builder(broken).build())
        .build();
    let list = group.list_tools().await;
    assert_eq!(list.tools.len(), 1);
    assert_eq!(list.failures.len(), 1);
    assert_eq!(list.failures[0].0, "broken");
    assert!(matches!(list.failures[0].1, Error::Transport(_)));
}
