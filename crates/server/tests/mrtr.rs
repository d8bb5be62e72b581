//! Multi round-trip requests through the dispatcher: asking, answering,
//! sealing, and every way a retry can be wrong.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolwire_protocol::{CreateMessageRequestParams, ElicitAction, ListRootsResult};
use toolwire_server::{
    InputRequired, Principal, RequestContext, RequestEnv, Server, ToolBuilder, ToolError,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct PathArgs {
    path: String,
}

fn confirm_schema() -> Value {
    json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]})
}

async fn confirm_delete(args: PathArgs, cx: RequestContext) -> Result<String, ToolError> {
    let answer = cx.elicit_form(
        "confirm",
        &format!("Delete {}?", args.path),
        confirm_schema(),
    )?;
    let confirmed = answer.action == ElicitAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("confirm"))
            .map(|v| serde_json::to_value(v).unwrap())
            == Some(json!(true));
    Ok(if confirmed {
        format!("Deleted {}", args.path)
    } else {
        format!("Kept {}", args.path)
    })
}

fn sampling_params() -> CreateMessageRequestParams {
    serde_json::from_value(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
        "maxTokens": 20
    }))
    .unwrap()
}

async fn ask_all(_: toolwire_server::NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let (Some(form), Some(model), Some(roots)) = (
        cx.input_response("form"),
        cx.input_response("model"),
        cx.answer::<ListRootsResult>("roots")?,
    ) else {
        return Err(InputRequired::new()
            .elicit_form(
                "form",
                "Name?",
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            )
            .sample("model", sampling_params())
            .list_roots("roots")
            .into());
    };
    Ok(format!(
        "{} / {} / {} roots",
        form["content"]["name"],
        model["content"]["text"],
        roots.roots.len()
    ))
}

/// Round 1 asks a name, round 2 an age; the handler's own state counts rounds.
async fn two_rounds(_: toolwire_server::NoArgs, cx: RequestContext) -> Result<String, ToolError> {
    let rounds: u32 = cx.state().unwrap_or(0);
    let schema =
        |p: &str| json!({"type": "object", "properties": {p: {"type": "string"}}, "required": [p]});
    let Some(name) = cx.input_response("name") else {
        return Err(InputRequired::new()
            .elicit_form("name", "Name?", schema("name"))
            .with_state(&(rounds + 1))
            .into());
    };
    let Some(age) = cx.input_response("age") else {
        return Err(InputRequired::new()
            .elicit_form("age", "Age?", schema("age"))
            .with_state(&(rounds + 1))
            .into());
    };
    Ok(format!(
        "{} is {} (after {rounds} rounds)",
        name["content"]["name"], age["content"]["age"]
    ))
}

fn server() -> Server {
    server_with_ttl(Duration::from_secs(600))
}

fn server_with_ttl(ttl: Duration) -> Server {
    Server::builder("mrtr", "1")
        // One test sends hundreds of tampered retries as fast as it can.
        .no_tool_call_limit()
        .state_ttl(ttl)
        .tool(ToolBuilder::new("confirm_delete").handler(confirm_delete))
        .tool(ToolBuilder::new("ask_all").handler(ask_all))
        .tool(ToolBuilder::new("two_rounds").handler(two_rounds))
        .tool(ToolBuilder::new("sample").handler(
            |_: toolwire_server::NoArgs, cx: RequestContext| async move {
                let answer = cx.sample("q", sampling_params())?;
                Ok::<_, ToolError>(format!("model said via {}", answer.model))
            },
        ))
        .tool(ToolBuilder::new("roots").handler(
            |_: toolwire_server::NoArgs, cx: RequestContext| async move {
                let answer = cx.list_roots("r")?;
                Ok::<_, ToolError>(format!("{} roots", answer.roots.len()))
            },
        ))
        .build()
        .unwrap()
}

fn all_caps() -> Value {
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {}, "sampling": {}, "roots": {}});
    m
}

fn call_params(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments, "_meta": all_caps()})
}

fn retry_params(name: &str, arguments: Value, state: &Value, responses: Value) -> Value {
    json!({"name": name, "arguments": arguments, "_meta": all_caps(), "requestState": state, "inputResponses": responses})
}

#[tokio::test]
async fn form_elicitation_round_trip() {
    let s = server();
    let r = result(
        &s,
        request(
            1,
            "tools/call",
            call_params("confirm_delete", json!({"path": "/tmp/a"})),
        ),
    )
    .await;
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(
        r["inputRequests"],
        json!({"confirm": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Delete /tmp/a?", "requestedSchema": confirm_schema()}}})
    );
    assert!(r.get("content").is_none());
    assert!(
        r.get("ttlMs").is_none(),
        "input_required results carry no caching hints"
    );
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mrtr"
    );
    let state = r["requestState"].clone();
    assert!(state.is_string());

    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let retry = retry_params("confirm_delete", json!({"path": "/tmp/a"}), &state, accept);
    let r = result(&s, request(2, "tools/call", retry)).await;
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["content"][0]["text"], "Deleted /tmp/a");

    let decline = json!({"confirm": {"action": "decline"}});
    let r = result(
        &s,
        request(
            3,
            "tools/call",
            retry_params("confirm_delete", json!({"path": "/tmp/a"}), &state, decline),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "Kept /tmp/a");
}

#[tokio::test]
async fn sampling_and_roots_round_trips() {
    let s = server();
    let r = result(
        &s,
        request(1, "tools/call", call_params("sample", json!({}))),
    )
    .await;
    assert_eq!(r["inputRequests"]["q"]["method"], "sampling/createMessage");
    assert_eq!(r["inputRequests"]["q"]["params"]["maxTokens"], 20);
    let answer = json!({"q": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m-1"}});
    let r = result(
        &s,
        request(
            2,
            "tools/call",
            retry_params("sample", json!({}), &r["requestState"], answer),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "model said via m-1");

    let r = result(
        &s,
        request(3, "tools/call", call_params("roots", json!({}))),
    )
    .await;
    assert_eq!(r["inputRequests"], json!({"r": {"method": "roots/list"}}));
    let answer = json!({"r": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "b"}]}});
    let r = result(
        &s,
        request(
            4,
            "tools/call",
            retry_params("roots", json!({}), &r["requestState"], answer),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "2 roots");
}

#[tokio::test]
async fn several_requests_in_one_result() {
    let s = server();
    let r = result(
        &s,
        request(1, "tools/call", call_params("ask_all", json!({}))),
    )
    .await;
    let keys: Vec<&String> = r["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["form", "model", "roots"]);
    let answers = json!({
        "form": {"action": "accept", "content": {"name": "Ada"}},
        "model": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"},
        "roots": {"roots": [{"uri": "file:///x"}]},
        "unasked": {"anything": true}
    });
    let r = result(
        &s,
        request(
            2,
            "tools/call",
            retry_params("ask_all", json!({}), &r["requestState"], answers),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "\"Ada\" / \"Paris\" / 1 roots");
}

#[tokio::test]
async fn missing_answer_asks_again() {
    let s = server();
    let r = result(
        &s,
        request(1, "tools/call", call_params("ask_all", json!({}))),
    )
    .await;
    let partial = json!({"form": {"action": "accept", "content": {"name": "Ada"}}});
    let r = result(
        &s,
        request(
            2,
            "tools/call",
            retry_params("ask_all", json!({}), &r["requestState"], partial),
        ),
    )
    .await;
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["inputRequests"].as_object().unwrap().len(), 3);
}

#[tokio::test]
async fn two_rounds_with_changing_state() {
    let s = server();
    let r1 = result(
        &s,
        request(1, "tools/call", call_params("two_rounds", json!({}))),
    )
    .await;
    assert!(r1["inputRequests"]["name"].is_object());
    let name = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    let r2 = result(
        &s,
        request(
            2,
            "tools/call",
            retry_params("two_rounds", json!({}), &r1["requestState"], name),
        ),
    )
    .await;
    assert_eq!(r2["resultType"], "input_required");
    assert!(r2["inputRequests"]["age"].is_object() && r2["inputRequests"].get("name").is_none());
    assert_ne!(r1["requestState"], r2["requestState"]);
    // The third request answers only "age"; "name" travels in the sealed state.
    let age = json!({"age": {"action": "accept", "content": {"age": "36"}}});
    let r3 = result(
        &s,
        request(
            3,
            "tools/call",
            retry_params("two_rounds", json!({}), &r2["requestState"], age),
        ),
    )
    .await;
    assert_eq!(
        r3["content"][0]["text"],
        "\"Ada\" is \"36\" (after 2 rounds)"
    );
}

#[tokio::test]
async fn any_changed_character_in_request_state_is_rejected() {
    let s = server();
    let r = result(
        &s,
        request(
            1,
            "tools/call",
            call_params("confirm_delete", json!({"path": "p"})),
        ),
    )
    .await;
    let state = r["requestState"].as_str().unwrap().to_owned();
    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    for i in 0..state.len() {
        let mut bytes = state.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let tampered = Value::String(String::from_utf8(bytes).unwrap());
        let e = error(
            &s,
            request(
                2,
                "tools/call",
                retry_params(
                    "confirm_delete",
                    json!({"path": "p"}),
                    &tampered,
                    accept.clone(),
                ),
            ),
        )
        .await;
        assert_eq!(e["code"], -32602, "position {i} of {}", state.len());
        assert_eq!(
            e["message"],
            "Invalid requestState: it was not issued by this server or has been modified"
        );
    }
    // The untouched state still works afterwards.
    let r = result(
        &s,
        request(
            3,
            "tools/call",
            retry_params(
                "confirm_delete",
                json!({"path": "p"}),
                &json!(state),
                accept,
            ),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "Deleted p");
}

#[tokio::test]
async fn state_from_another_server_key_is_rejected() {
    let r = result(
        &server(),
        request(
            1,
            "tools/call",
            call_params("confirm_delete", json!({"path": "p"})),
        ),
    )
    .await;
    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let e = error(
        &server(),
        request(
            2,
            "tools/call",
            retry_params(
                "confirm_delete",
                json!({"path": "p"}),
                &r["requestState"],
                accept,
            ),
        ),
    )
    .await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn shared_key_lets_another_instance_continue() {
    let key = toolwire_server::StateKey::from_bytes([9; 32]);
    let build = || {
        Server::builder("a", "1")
            .state_key(key.clone())
            .tool(ToolBuilder::new("confirm_delete").handler(confirm_delete))
            .build()
            .unwrap()
    };
    let r = result(
        &build(),
        request(
            1,
            "tools/call",
            call_params("confirm_delete", json!({"path": "p"})),
        ),
    )
    .await;
    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let r = result(
        &build(),
        request(
            2,
            "tools/call",
            retry_params(
                "confirm_delete",
                json!({"path": "p"}),
                &r["requestState"],
                accept,
            ),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "Deleted p");
}

#[tokio::test]
async fn expired_state_is_rejected() {
    let s = server_with_ttl(Duration::ZERO);
    let r = result(
        &s,
        request(
            1,
            "tools/call",
            call_params("confirm_delete", json!({"path": "p"})),
        ),
    )
    .await;
    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let e = error(
        &s,
        request(
            2,
            "tools/call",
            retry_params(
                "confirm_delete",
                json!({"path": "p"}),
                &r["requestState"],
                accept,
            ),
        ),
    )
    .await;
    assert_eq!(
        e["message"],
        "Invalid requestState: it has expired; send the original request again without requestState"
    );
}

#[tokio::test]
async fn state_presented_by_another_principal_is_rejected() {
    let s = server();
    let alice = RequestEnv::new().with_principal(Principal::new("alice"));
    let first = s
        .handle_request(
            request(
                1,
                "tools/call",
                call_params("confirm_delete", json!({"path": "p"})),
            ),
            alice,
        )
        .await;
    let state = json_of(&first)["result"]["requestState"].clone();
    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let bob = RequestEnv::new().with_principal(Principal::new("bob"));
    let retry = request(
        2,
        "tools/call",
        retry_params("confirm_delete", json!({"path": "p"}), &state, accept),
    );
    let e = json_of(&s.handle_request(retry, bob).await)["error"].clone();
    assert_eq!(
        e["message"],
        "Invalid requestState: it was issued to a different principal"
    );
}

#[tokio::test]
async fn state_presented_on_a_different_request_is_rejected() {
    let s = server();
    let r = result(
        &s,
        request(
            1,
            "tools/call",
            call_params("confirm_delete", json!({"path": "/safe"})),
        ),
    )
    .await;
    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let e = error(
        &s,
        request(
            2,
            "tools/call",
            retry_params(
                "confirm_delete",
                json!({"path": "/etc"}),
                &r["requestState"],
                accept,
            ),
        ),
    )
    .await;
    assert_eq!(
        e["message"],
        "Invalid requestState: it was issued for a different request (method, name or arguments differ)"
    );
}

#[tokio::test]
async fn requests_the_client_cannot_answer_are_never_sent() {
    let s = server();
    let e = error(&s, request(1, "tools/call", json!({"name": "ask_all"}))).await;
    assert_eq!(e["code"], -32021);
    assert_eq!(
        e["data"],
        json!({"requiredCapabilities": {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}})
    );
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
    let e = error(
        &s,
        request(
            2,
            "tools/call",
            json!({"name": "confirm_delete", "arguments": {"path": "p"}, "_meta": m}),
        ),
    )
    .await;
    assert_eq!(
        e["data"],
        json!({"requiredCapabilities": {"elicitation": {"form": {}}}})
    );
}

#[tokio::test]
async fn malformed_answers_are_not_accepted_silently() {
    let s = server();
    let r = result(
        &s,
        request(
            1,
            "tools/call",
            call_params("confirm_delete", json!({"path": "p"})),
        ),
    )
    .await;
    let state = r["requestState"].clone();
    let cases = [
        (
            json!({"confirm": null}),
            "inputResponses[\"confirm\"] must be an object, got null",
        ),
        (
            json!({"confirm": "yes"}),
            "inputResponses[\"confirm\"] must be an object, got \"yes\"",
        ),
        (
            json!({"confirm": {"action": "maybe"}}),
            "inputResponses[\"confirm\"] is malformed",
        ),
        (
            json!({"confirm": {"action": "accept", "content": {"confirm": "yes"}}}),
            "inputResponses[\"confirm\"] does not match the requested schema",
        ),
        (
            json!({"confirm": {"action": "accept", "content": {}}}),
            "inputResponses[\"confirm\"] does not match the requested schema",
        ),
    ];
    for (answer, message) in cases {
        let e = error(
            &s,
            request(
                2,
                "tools/call",
                retry_params(
                    "confirm_delete",
                    json!({"path": "p"}),
                    &state,
                    answer.clone(),
                ),
            ),
        )
        .await;
        assert_eq!(e["code"], -32602, "{answer}");
        assert!(
            e["message"].as_str().unwrap().starts_with(message),
            "{answer}: {e}"
        );
    }
    let ok = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let r = result(
        &s,
        request(
            3,
            "tools/call",
            retry_params("confirm_delete", json!({"path": "p"}), &state, ok),
        ),
    )
    .await;
    assert_eq!(r["content"][0]["text"], "Deleted p");
}

#[tokio::test]
async fn answers_without_request_state_count_when_allowed() {
    let s = Server::builder("mrtr", "1")
        .answers_without_state(true)
        .tool(ToolBuilder::new("confirm_delete").handler(confirm_delete))
        .build()
        .unwrap();
    let answer = |confirm: Value| {
        json!({
            "name": "confirm_delete", "arguments": {"path": "p"}, "_meta": all_caps(),
            "inputResponses": confirm
        })
    };
    // The answer is used; keys nobody asked for are ignored.
    let ok = json!({"confirm": {"action": "accept", "content": {"confirm": true}},
        "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}}});
    let r = result(&s, request(1, "tools/call", answer(ok))).await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(r["content"][0]["text"], "Deleted p");
    // Only other keys: asked again.
    let wrong = json!({"wrong_key": {"action": "accept", "content": {"confirm": true}}});
    let r = result(&s, request(2, "tools/call", answer(wrong))).await;
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert!(r["inputRequests"]["confirm"].is_object(), "{r}");
    // Answers are still validated.
    let e = error(
        &s,
        request(3, "tools/call", answer(json!({"confirm": 12345}))),
    )
    .await;
    assert_eq!(e["code"], -32602, "{e}");
    let bad = json!({"confirm": {"action": "accept", "content": {"confirm": "yes"}}});
    let e = error(&s, request(4, "tools/call", answer(bad))).await;
    assert_eq!(e["code"], -32602, "{e}");
    // The server still answers the next request.
    let r = result(
        &s,
        request(
            5,
            "tools/call",
            call_params("confirm_delete", json!({"path": "p"})),
        ),
    )
    .await;
    assert_eq!(r["resultType"], "input_required", "{r}");
}

#[tokio::test]
async fn answers_without_request_state_are_ignored() {
    let s = server();
    let params = json!({"name": "confirm_delete", "arguments": {"path": "p"}, "_meta": all_caps(),
        "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    let r = result(&s, request(1, "tools/call", params)).await;
    assert_eq!(
        r["resultType"], "input_required",
        "unsolicited answers do not skip the question"
    );
}
