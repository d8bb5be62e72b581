//! Property tests of sealed `requestState` over real `tools/call` dispatch
//! (issue 21): a state opens only for the principal it was issued to, on
//! the same request (tool name and arguments, key order aside), with one
//! of the server's keys, before it expires; any changed byte is refused.

mod common;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolwire_protocol::{JsonObject, PromptMessage, Role};
use toolwire_server::{
    InputRequired, Principal, PromptBuilder, RequestContext, RequestEnv, Server, StateKey,
    ToolBuilder, ToolError,
};

const NOT_OURS: &str =
    "Invalid requestState: it was not issued by this server or has been modified";
const OTHER_PRINCIPAL: &str = "Invalid requestState: it was issued to a different principal";
const OTHER_REQUEST: &str = "Invalid requestState: it was issued for a different request (method, name or arguments differ)";
const EXPIRED: &str =
    "Invalid requestState: it has expired; send the original request again without requestState";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Asks one question, then answers with the arguments it was called with.
async fn ask_then_echo(args: JsonObject, cx: RequestContext) -> Result<String, ToolError> {
    if cx.input_response("ok").is_none() {
        let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
        return Err(InputRequired::new().elicit_form("ok", "OK?", schema).into());
    }
    Ok(format!("done {}", Value::Object(args)))
}

fn server(keys: &[[u8; 32]], ttl: Duration) -> Server {
    let mut builder = Server::builder("state", "1")
        .no_tool_call_limit()
        .state_ttl(ttl);
    for key in keys {
        builder = builder.state_key(StateKey::from_bytes(*key));
    }
    for name in ["ask", "ask_too"] {
        builder = builder.tool(
            ToolBuilder::new(name).raw_handler(as_object(json!({"type": "object"})), ask_then_echo),
        );
    }
    // A prompt of the same name that asks the same question.
    let prompt = PromptBuilder::new("ask").handler(|_, cx: RequestContext| async move {
        if cx.input_response("ok").is_none() {
            let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
            return Err(InputRequired::new().elicit_form("ok", "OK?", schema).into());
        }
        Ok(vec![PromptMessage::text(Role::User, "done")])
    });
    builder.prompt(prompt).build().unwrap()
}

fn env(principal: &Option<String>) -> RequestEnv {
    match principal {
        Some(subject) => RequestEnv::new().with_principal(Principal::new(subject.clone())),
        None => RequestEnv::new().with_principal(Principal::anonymous()),
    }
}

fn params(name: &str, arguments: &JsonObject, state: Option<&str>) -> Value {
    let mut meta = meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    let mut params = json!({"name": name, "arguments": arguments, "_meta": meta});
    if let Some(state) = state {
        params["requestState"] = json!(state);
        params["inputResponses"] = json!({"ok": {"action": "accept", "content": {"ok": true}}});
    }
    params
}

/// The first round's sealed state.
async fn issue(s: &Server, principal: &Option<String>, name: &str, args: &JsonObject) -> String {
    let response = s
        .handle_request(
            request(1, "tools/call", params(name, args, None)),
            env(principal),
        )
        .await;
    let r = json_of(&response)["result"].clone();
    assert_eq!(r["resultType"], "input_required", "{r}");
    r["requestState"].as_str().unwrap().to_owned()
}

/// The retry: `Ok(text)` when it completed, `Err(error)` when refused.
async fn retry(
    s: &Server,
    principal: &Option<String>,
    name: &str,
    args: &JsonObject,
    state: &str,
) -> Result<String, Value> {
    let response = s
        .handle_request(
            request(2, "tools/call", params(name, args, Some(state))),
            env(principal),
        )
        .await;
    let response = json_of(&response);
    match response.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(response["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("not a completed call: {response}"))
            .to_owned()),
    }
}

fn refused(message: &str) -> Result<String, Value> {
    Err(json!({"code": -32602, "message": message}))
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z0-9 ]{0,8}".prop_map(Value::from),
    ]
}

fn arguments() -> impl Strategy<Value = JsonObject> {
    let value = leaf().prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::vec(("[a-z]{1,5}", value), 0..5)
        .prop_map(|pairs| pairs.into_iter().collect::<Map<_, _>>())
}

/// The same object with its keys in reverse order, at every level.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

fn principal() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[a-z0-9@.|-]{0,8}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// The same principal, tool and arguments (keys in any order) with a
    /// server holding the sealing key: the retry completes, on this
    /// instance and on another one sharing the key, also after the key is
    /// rotated out of first place.
    #[test]
    fn state_opens_for_the_same_principal_request_and_key(
        principal in principal(),
        args in arguments(),
        key in any::<[u8; 32]>(),
        newer in any::<[u8; 32]>(),
    ) {
        runtime().block_on(async {
            let ttl = Duration::from_secs(600);
            let s = server(&[key], ttl);
            let state = issue(&s, &principal, "ask", &args).await;
            let done = format!("done {}", Value::Object(args.clone()));
            prop_assert_eq!(retry(&s, &principal, "ask", &args, &state).await, Ok(done.clone()));
            let Value::Object(shuffled) = reversed(&Value::Object(args.clone())) else { unreachable!() };
            let echoed = retry(&server(&[key], ttl), &principal, "ask", &shuffled, &state).await;
            prop_assert_eq!(echoed, Ok(format!("done {}", Value::Object(shuffled))));
            let rotated = server(&[newer, key], ttl);
            prop_assert_eq!(retry(&rotated, &principal, "ask", &args, &state).await, Ok(done));
            Ok(())
        })?;
    }

    /// Another principal, another tool, other arguments or a server without
    /// the key: refused with the error naming that reason.
    #[test]
    fn state_is_refused_for_anything_else(
        principal in principal(),
        other_principal in principal(),
        args in arguments(),
        other_args in arguments(),
        key in any::<[u8; 32]>(),
        other_key in any::<[u8; 32]>(),
    ) {
        runtime().block_on(async {
            let ttl = Duration::from_secs(600);
            let s = server(&[key], ttl);
            let state = issue(&s, &principal, "ask", &args).await;
            if other_principal != principal {
                prop_assert_eq!(
                    retry(&s, &other_principal, "ask", &args, &state).await,
                    refused(OTHER_PRINCIPAL)
                );
            }
            if other_args != args {
                prop_assert_eq!(
                    retry(&s, &principal, "ask", &other_args, &state).await,
                    refused(OTHER_REQUEST)
                );
            }
            prop_assert_eq!(
                retry(&s, &principal, "ask_too", &args, &state).await,
                refused(OTHER_REQUEST)
            );
            if other_key != key {
                prop_assert_eq!(
                    retry(&server(&[other_key], ttl), &principal, "ask", &args, &state).await,
                    refused(NOT_OURS)
                );
            }
            Ok(())
        })?;
    }

    /// A state issued by `prompts/get` does not open `tools/call` of the
    /// same name and arguments, nor the other way round.
    #[test]
    fn state_is_bound_to_its_method(principal in principal(), args in "[a-z]{0,6}") {
        runtime().block_on(async {
            let s = server(&[[7; 32]], Duration::from_secs(600));
            let arguments = as_object(json!({"x": args}));
            let get = |state: Option<&str>| request(3, "prompts/get", params("ask", &arguments, state));
            let response = json_of(&s.handle_request(get(None), env(&principal)).await);
            let from_prompt = response["result"]["requestState"].as_str().unwrap().to_owned();
            prop_assert_eq!(
                retry(&s, &principal, "ask", &arguments, &from_prompt).await,
                refused(OTHER_REQUEST)
            );
            let from_tool = issue(&s, &principal, "ask", &arguments).await;
            let response = json_of(&s.handle_request(get(Some(&from_tool)), env(&principal)).await);
            prop_assert_eq!(&response["error"], &json!({"code": -32602, "message": OTHER_REQUEST}));
            // The prompt's own state does open it.
            let response = json_of(&s.handle_request(get(Some(&from_prompt)), env(&principal)).await);
            prop_assert_eq!(&response["result"]["messages"][0]["content"]["text"], "done", "{}", response);
            Ok(())
        })?;
    }

    /// Any bit of the sealed bytes flipped, or any byte cut off or added:
    /// refused as not ours.
    #[test]
    fn any_changed_byte_is_refused(
        principal in principal(),
        args in arguments(),
        at in any::<prop::sample::Index>(),
        bit in 0u8..8,
        how in 0u8..3,
    ) {
        runtime().block_on(async {
            let s = server(&[[7; 32]], Duration::from_secs(600));
            let state = issue(&s, &principal, "ask", &args).await;
            let mut bytes = URL_SAFE_NO_PAD.decode(&state).unwrap();
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] ^= 1 << bit,
                1 => { bytes.remove(i); }
                _ => bytes.insert(i, 1 << bit),
            }
            let tampered = URL_SAFE_NO_PAD.encode(&bytes);
            prop_assert_eq!(retry(&s, &principal, "ask", &args, &tampered).await, refused(NOT_OURS));
            Ok(())
        })?;
    }

    /// Any string as `requestState` that this server did not seal: refused.
    #[test]
    fn random_state_is_refused(
        principal in principal(),
        state in prop_oneof![
            "[ -~]{0,64}",
            prop::collection::vec(any::<u8>(), 0..120).prop_map(|b| URL_SAFE_NO_PAD.encode(b)),
        ],
    ) {
        runtime().block_on(async {
            let s = server(&[[7; 32]], Duration::from_secs(600));
            prop_assert_eq!(
                retry(&s, &principal, "ask", &JsonObject::new(), &state).await,
                refused(NOT_OURS)
            );
            Ok(())
        })?;
    }

    /// A state whose expiry has passed: refused as expired, even with the
    /// right principal, request and key.
    #[test]
    fn expired_state_is_refused(principal in principal(), args in arguments()) {
        runtime().block_on(async {
            let s = server(&[[7; 32]], Duration::ZERO);
            let state = issue(&s, &principal, "ask", &args).await;
            prop_assert_eq!(retry(&s, &principal, "ask", &args, &state).await, refused(EXPIRED));
            Ok(())
        })?;
    }
}

/// A state issued to an authenticated principal whose subject is empty (a
/// JWT with `"sub": ""` makes one) does not open for an anonymous caller,
/// nor the other way round (`Principal::key` tells them apart).
#[test]
fn an_empty_subject_is_not_the_anonymous_principal() {
    runtime().block_on(async {
        let s = server(&[[7; 32]], Duration::from_secs(600));
        let args = JsonObject::new();
        let state = issue(&s, &Some(String::new()), "ask", &args).await;
        assert_eq!(
            retry(&s, &None, "ask", &args, &state).await,
            refused(OTHER_PRINCIPAL)
        );
    });
}
