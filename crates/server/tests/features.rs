//! Resources, prompts and completion through the dispatcher.

mod common;

use common::*;
use serde_json::json;
use toolwire_protocol::{PromptMessage, Role};
use toolwire_server::{
    NoArgs, PromptBuilder, RequestContext, RequestEnv, ResourceBuilder, ResourceTemplateBuilder,
    Server, ServerBuilder, ToolBuilder, ToolError, blob_contents, text_contents,
};

fn server() -> Server {
    builder().build().unwrap()
}

fn builder() -> ServerBuilder {
    Server::builder("features", "1")
        .tool(ToolBuilder::new("noop").description("Does nothing").handler(|_: NoArgs| async { Ok::<_, ToolError>("done") }))
        .resource(
            ResourceBuilder::new("test://static-text", "static-text")
                .description("A text resource")
                .mime_type("text/plain")
                .handler(|req, _cx| async move { Ok(vec![text_contents(req.uri, "text/plain", "hello")]) }),
        )
        .resource(
            ResourceBuilder::new("test://static-binary", "static-binary")
                .mime_type("image/png")
                .handler(|req, _cx| async move { Ok(vec![blob_contents(req.uri, "image/png", &[0, 1, 2, 255])]) }),
        )
        .resource(ResourceBuilder::new("test://empty", "empty").handler(|_, _cx| async { Ok(vec![]) }))
        .resource_template(
            ResourceTemplateBuilder::new("test://items/{id}/data", "item")
                .mime_type("application/json")
                .complete("id", |value, _| async move {
                    (0..1000).map(|i| format!("{i}")).filter(|v| v.starts_with(&value)).collect()
                })
                .handler(|req, _cx| async move {
                    let id = &req.variables["id"];
                    Ok(vec![text_contents(req.uri.clone(), "application/json", json!({"id": id}).to_string())])
                }),
        )
        .prompt(
            PromptBuilder::new("greet")
                .description("Greets someone")
                .argument("name", "Who to greet", true)
                .argument("style", "How", false)
                .complete("name", |value, _| async move {
                    ["alice", "bob", "alfred"].iter().filter(|n| n.starts_with(&value)).map(|n| n.to_string()).collect()
                })
                .handler(|args, _cx| async move {
                    Ok(vec![PromptMessage::text(Role::User, format!("Say hi to {}", args["name"]))])
                }),
        )
        .prompt(
            PromptBuilder::new("ask")
                .description("Asks for context first")
                .handler(|_, cx: RequestContext| async move {
                    let schema = json!({"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]});
                    let answer = cx.elicit_form("ctx", "Which context?", schema)?;
                    let text = serde_json::to_value(&answer.content).map_err(ToolError::from_error)?;
                    Ok(vec![PromptMessage::text(Role::User, format!("Context: {}", text["context"]))])
                }),
        )
}

#[tokio::test]
async fn discover_declares_what_is_served() {
    let r = result(&server(), request(1, "server/discover", json!({}))).await;
    assert_eq!(
        r["capabilities"],
        json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "completions": {}
        })
    );
}

#[tokio::test]
async fn a_tools_only_server_answers_resource_methods_with_method_not_found() {
    let s = Server::builder("t", "1").build().unwrap();
    let e = error(&s, request(1, "resources/list", json!({}))).await;
    assert_eq!(e["code"], -32601);
    let e = error(&s, request(2, "prompts/get", json!({"name": "x"}))).await;
    assert_eq!(e["code"], -32601);
}

#[tokio::test]
async fn lists_carry_cache_hints() {
    let s = server();
    let r = result(&s, request(1, "resources/list", json!({}))).await;
    assert_eq!(
        r["resources"][0],
        json!({"uri": "test://static-text", "name": "static-text", "description": "A text resource", "mimeType": "text/plain"})
    );
    assert_eq!(
        (r["ttlMs"].clone(), r["cacheScope"].clone()),
        (json!(60_000), json!("public"))
    );
    let r = result(&s, request(2, "resources/templates/list", json!({}))).await;
    assert_eq!(
        r["resourceTemplates"],
        json!([{"uriTemplate": "test://items/{id}/data", "name": "item", "mimeType": "application/json"}])
    );
    assert_eq!(r["ttlMs"], 60_000);
    let r = result(&s, request(3, "prompts/list", json!({}))).await;
    assert_eq!(
        r["prompts"][0]["arguments"],
        json!([
            {"name": "name", "description": "Who to greet", "required": true},
            {"name": "style", "description": "How", "required": false}
        ])
    );
    assert_eq!(r["cacheScope"], "public");
}

#[tokio::test]
async fn reads_text_binary_and_templates() {
    let s = server();
    let r = result(
        &s,
        request(1, "resources/read", json!({"uri": "test://static-text"})),
    )
    .await;
    assert_eq!(
        r["contents"],
        json!([{"uri": "test://static-text", "mimeType": "text/plain", "text": "hello"}])
    );
    assert_eq!(
        (r["ttlMs"].clone(), r["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    let r = result(
        &s,
        request(2, "resources/read", json!({"uri": "test://static-binary"})),
    )
    .await;
    assert_eq!(r["contents"][0]["blob"], "AAEC/w==");
    let r = result(
        &s,
        request(3, "resources/read", json!({"uri": "test://items/123/data"})),
    )
    .await;
    assert_eq!(r["contents"][0]["text"], "{\"id\":\"123\"}");
}

#[tokio::test]
async fn unknown_or_empty_resource_is_invalid_params_with_uri() {
    let s = server();
    for uri in ["test://nope", "test://items//data", "test://empty"] {
        let e = error(&s, request(1, "resources/read", json!({"uri": uri}))).await;
        assert_eq!(
            e,
            json!({"code": -32602, "message": "Resource not found", "data": {"uri": uri}})
        );
    }
}

#[tokio::test]
async fn prompts_check_required_arguments() {
    let s = server();
    let r = result(
        &s,
        request(
            1,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        ),
    )
    .await;
    assert_eq!(
        r["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Say hi to Ada"}}])
    );
    assert_eq!(r["description"], "Greets someone");
    assert_eq!(r["resultType"], "complete");
    let e = error(&s, request(2, "prompts/get", json!({"name": "greet"}))).await;
    assert_eq!(
        e,
        json!({"code": -32602, "message": "Missing required argument \"name\" for prompt greet"})
    );
    let e = error(&s, request(3, "prompts/get", json!({"name": "nope"}))).await;
    assert_eq!(
        e,
        json!({"code": -32602, "message": "Unknown prompt: nope"})
    );
}

#[tokio::test]
async fn prompts_may_ask_for_input() {
    let s = server();
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    let r = result(
        &s,
        request(1, "prompts/get", json!({"name": "ask", "_meta": m})),
    )
    .await;
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["inputRequests"]["ctx"]["method"], "elicitation/create");
    let retry = json!({"name": "ask", "_meta": m, "requestState": r["requestState"],
        "inputResponses": {"ctx": {"action": "accept", "content": {"context": "tests"}}}});
    let r = result(&s, request(2, "prompts/get", retry)).await;
    assert_eq!(r["messages"][0]["content"]["text"], "Context: \"tests\"");
}

#[tokio::test]
async fn completion_for_prompt_arguments_and_template_variables() {
    let s = server();
    let params = json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "al"}});
    let r = result(&s, request(1, "completion/complete", params)).await;
    assert_eq!(
        r["completion"],
        json!({"values": ["alice", "alfred"], "total": 2, "hasMore": false})
    );
    let params = json!({"ref": {"type": "ref/resource", "uri": "test://items/{id}/data"}, "argument": {"name": "id", "value": "1"}});
    let r = result(&s, request(2, "completion/complete", params)).await;
    assert_eq!(
        r["completion"]["values"].as_array().unwrap().len(),
        100,
        "capped at 100"
    );
    assert_eq!(r["completion"]["total"], 111);
    assert_eq!(r["completion"]["hasMore"], true);
    let params = json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "style", "value": ""}});
    let r = result(&s, request(3, "completion/complete", params)).await;
    assert_eq!(
        r["completion"],
        json!({"values": []}),
        "no completer, no suggestions"
    );
    let params = json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}});
    let e = error(&s, request(4, "completion/complete", params)).await;
    assert_eq!(e["code"], -32602);
}

/// Over HTTP, list pages are written from each entry's encoded JSON and tool
/// results straight from their type: the bytes must be exactly those of the
/// dispatcher's response.
#[tokio::test]
async fn lists_and_tool_results_over_http_are_the_dispatchers_responses_byte_for_byte() {
    let server = builder().page_size(2).build().unwrap();
    let http = ServedHttp::start(server.clone()).await;
    let mut pages = 0;
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let (status, over_http) = http.post(&request(7, method, params.clone())).await;
            assert_eq!(status, 200, "{method}");
            let direct = server
                .handle_request(request(7, method, params), RequestEnv::new())
                .await;
            assert_eq!(
                over_http,
                serde_json::to_string(&direct).unwrap(),
                "{method} {cursor:?}"
            );
            pages += 1;
            let reply: serde_json::Value = serde_json::from_str(&over_http).unwrap();
            match reply["result"]["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
    }
    // tools 1, prompts 2, resources 3, templates 1: one page each but resources (two).
    assert_eq!(pages, 5);

    // Tool results are written without a JSON tree too: a result, and the
    // tool error of arguments its schema refuses.
    for arguments in [json!({}), json!({"unexpected": 1})] {
        let params = json!({"name": "noop", "arguments": arguments});
        let (_, over_http) = http.post(&request(8, "tools/call", params.clone())).await;
        let direct = server
            .handle_request(request(8, "tools/call", params), RequestEnv::new())
            .await;
        assert_eq!(
            over_http,
            serde_json::to_string(&direct).unwrap(),
            "{arguments}"
        );
    }
    http.stop().await;
}

/// Over stdio too: each line is exactly the dispatcher's response.
#[tokio::test]
async fn lines_over_stdio_are_the_dispatchers_responses_byte_for_byte() {
    let server = server();
    let mut stdio = ServedStdio::start(server.clone());
    let requests = [
        request(1, "tools/list", json!({})),
        request(2, "resources/list", json!({})),
        request(3, "tools/call", json!({"name": "noop", "arguments": {}})),
        request(
            4,
            "tools/call",
            json!({"name": "noop", "arguments": {"x": 1}}),
        ),
        request(
            5,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        ),
    ];
    for request in requests {
        stdio.send(&request).await;
        let got = stdio.next_line().await;
        let direct = server.handle_request(request, RequestEnv::new()).await;
        assert_eq!(got, serde_json::to_string(&direct).unwrap());
    }
    stdio.close().await;
}
