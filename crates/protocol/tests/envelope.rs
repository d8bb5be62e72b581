//! Hand-written vectors for JSON-RPC envelopes: classification, and the exact
//! error for every malformed message.

use serde_json::{Value, json};
use toolwire_protocol::*;

fn invalid(bytes: &str) -> (Option<RequestId>, String) {
    match Message::from_slice(bytes.as_bytes()) {
        Err(MessageError::Invalid { id, reason }) => (id, reason),
        other => panic!("expected MessageError::Invalid for {bytes}, got {other:?}"),
    }
}

/// Parses, checks the message serializes back to the same JSON, returns it.
fn message(text: &str) -> Message {
    let msg = Message::from_slice(text.as_bytes()).unwrap();
    let original: Value = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_value(&msg).unwrap(), original, "{text}");
    msg
}

#[test]
fn request_with_integer_id() {
    let Message::Request(req) =
        message(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"c2"}}"#)
    else {
        panic!("not a request")
    };
    assert_eq!(req.id, RequestId::Number(7));
    assert_eq!(req.method, METHOD_LIST_TOOLS);
    assert_eq!(req.params.unwrap()["cursor"], "c2");
}

#[test]
fn request_with_string_id_and_no_params() {
    let msg = message(r#"{"jsonrpc":"2.0","id":"abc-1","method":"server/discover"}"#);
    assert_eq!(msg.method(), Some(METHOD_DISCOVER));
    let Message::Request(req) = msg else {
        panic!("not a request")
    };
    assert_eq!(req.id, RequestId::String("abc-1".into()));
    assert_eq!(req.params, None);
}

#[test]
fn request_ids_keep_their_form() {
    let Message::Request(req) = message(r#"{"jsonrpc":"2.0","id":-9007199254740993,"method":"m"}"#)
    else {
        panic!("not a request")
    };
    assert_eq!(req.id, RequestId::Number(-9007199254740993));
    let Message::Request(req) = message(r#"{"jsonrpc":"2.0","id":"7","method":"m"}"#) else {
        panic!("not a request")
    };
    assert_eq!(req.id, RequestId::String("7".into()));
    assert_eq!(req.id.to_string(), "\"7\"");
    assert_eq!(RequestId::Number(7).to_string(), "7");
}

#[test]
fn notification_has_no_id() {
    let Message::Notification(n) = message(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}"#,
    ) else {
        panic!("not a notification")
    };
    assert_eq!(n.method, METHOD_CANCELLED);
    let p: CancelledNotificationParams =
        serde_json::from_value(Value::Object(n.params.unwrap())).unwrap();
    assert_eq!(p.request_id, RequestId::Number(3));
    assert_eq!(p.reason.as_deref(), Some("user"));
}

#[test]
fn notification_without_params() {
    let Message::Notification(n) =
        message(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
    else {
        panic!("not a notification")
    };
    assert_eq!(n.method, METHOD_TOOL_LIST_CHANGED);
    assert_eq!(n.params, None);
}

#[test]
fn result_response() {
    let Message::Result(r) =
        message(r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}"#)
    else {
        panic!("not a result")
    };
    assert_eq!(r.id, RequestId::Number(1));
    assert_eq!(r.result.result_type().unwrap(), ResultType::Complete);
    let typed: CallToolResult = r.result.parse().unwrap();
    assert!(typed.content.is_empty());
    let tree = r.result.into_object().unwrap();
    assert_eq!(ResultType::of(&tree).unwrap(), ResultType::Complete);
    assert_eq!(tree["content"], Value::Array(vec![]));
}

#[test]
fn error_response_with_id() {
    let Message::Error(e) = message(
        r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found: foo"}}"#,
    ) else {
        panic!("not an error")
    };
    assert_eq!(e.id, Some(RequestId::String("x".into())));
    assert_eq!(e.error, ErrorObject::method_not_found("foo"));
}

#[test]
fn error_response_without_id() {
    let Message::Error(e) =
        message(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error: eof"}}"#)
    else {
        panic!("not an error")
    };
    assert_eq!(e.id, None);
    assert_eq!(e.error.code, code::PARSE_ERROR);
    assert_eq!(e.error.message, "Parse error: eof");
    assert_eq!(e.error.data, None);
}

#[test]
fn error_response_keeps_data() {
    let Message::Error(e) = message(
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported","data":{"supported":["2026-07-28"],"requested":"1999-01-01"}}}"#,
    ) else {
        panic!("not an error")
    };
    assert_eq!(e.error.code, code::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(
        e.error.data,
        Some(json!({"supported":["2026-07-28"],"requested":"1999-01-01"}))
    );
}

#[test]
fn null_id_is_invalid() {
    let err =
        Message::from_slice(br#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#).unwrap_err();
    assert_eq!(
        err,
        MessageError::Invalid {
            id: None,
            reason: "id must be a string or an integer, not null".into()
        }
    );
    let response = err.to_response();
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({
            "jsonrpc": "2.0",
            "error": {
                "code": -32600,
                "message": "Invalid request: id must be a string or an integer, not null"
            }
        })
    );
}

#[test]
fn float_id_is_invalid() {
    assert!(serde_json::from_str::<RequestId>("1.5").is_err());
    assert!(serde_json::from_str::<RequestId>("1.0").is_err());
    assert!(serde_json::from_str::<RequestId>("true").is_err());
    assert!(serde_json::from_str::<RequestId>("null").is_err());
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#),
        (None, "id must be a string or an integer".into())
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#),
        (None, "id must be a string or an integer".into())
    );
}

#[test]
fn missing_jsonrpc_is_invalid() {
    assert_eq!(
        invalid(r#"{"id":1,"method":"tools/list"}"#),
        (
            Some(RequestId::Number(1)),
            "missing jsonrpc member (must be \"2.0\")".into()
        )
    );
}

#[test]
fn wrong_jsonrpc_is_invalid() {
    assert_eq!(
        invalid(r#"{"jsonrpc":"1.0","id":"a","method":"tools/list"}"#),
        (
            Some(RequestId::String("a".into())),
            "jsonrpc must be \"2.0\"".into()
        )
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":2.0,"id":1,"method":"tools/list"}"#),
        (Some(RequestId::Number(1)), "jsonrpc must be \"2.0\"".into())
    );
    let err = serde_json::from_str::<JsonRpcVersion>(r#""1.0""#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported jsonrpc version \"1.0\", expected \"2.0\""
    );
}

#[test]
fn result_and_error_together_is_invalid() {
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":-32603,"message":"x"}}"#),
        (
            Some(RequestId::Number(4)),
            "a response must not carry both result and error".into()
        )
    );
}

#[test]
fn params_must_be_an_object() {
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":["echo"]}"#),
        (
            Some(RequestId::Number(5)),
            "params must be an object".into()
        )
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":null}"#),
        (None, "params must be an object".into())
    );
}

#[test]
fn other_malformed_envelopes() {
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","id":6,"method":42}"#),
        (Some(RequestId::Number(6)), "method must be a string".into())
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","id":6,"result":[1]}"#),
        (
            Some(RequestId::Number(6)),
            "result must be an object".into()
        )
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","result":{}}"#),
        (None, "a result response must have an id".into())
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","id":6}"#),
        (
            Some(RequestId::Number(6)),
            "a message needs a method, a result or an error".into()
        )
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","id":6,"method":"m","result":{}}"#),
        (
            Some(RequestId::Number(6)),
            "a request must not carry result or error".into()
        )
    );
    assert_eq!(
        invalid(r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#),
        (None, "a JSON-RPC message must be a JSON object".into())
    );
    let (id, reason) = invalid(r#"{"jsonrpc":"2.0","id":6,"error":{"message":"no code"}}"#);
    assert_eq!(id, Some(RequestId::Number(6)));
    assert!(
        reason.starts_with("malformed error object: missing field `code`"),
        "{reason}"
    );
}

#[test]
fn not_json_is_a_parse_error() {
    let err = Message::from_slice(b"{\"jsonrpc\":").unwrap_err();
    let MessageError::Parse(detail) = &err else {
        panic!("expected a parse error, got {err:?}")
    };
    assert!(detail.contains("EOF"), "{detail}");
    assert_eq!(err.id(), None);
    let obj = err.to_error_object();
    assert_eq!(obj.code, code::PARSE_ERROR);
    assert_eq!(obj.message, format!("Parse error: {detail}"));
}

#[test]
fn message_deserialize_uses_the_same_rules() {
    let err =
        serde_json::from_str::<Message>(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid request: id must be a string or an integer, not null"
    );
    let msg: Message = serde_json::from_str(r#"{"jsonrpc":"2.0","method":"m"}"#).unwrap();
    assert_eq!(msg, Message::Notification(Notification::new("m", None)));
}

#[test]
fn constructors_serialize_exactly() {
    let mut params = JsonObject::new();
    params.insert("name".into(), json!("echo"));
    let req = Request::new(1, METHOD_CALL_TOOL, Some(params));
    assert_eq!(
        serde_json::to_string(&Message::from(req)).unwrap(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#
    );
    let res = ResultResponse::new("r".into(), JsonObject::new());
    assert_eq!(
        serde_json::to_string(&Message::from(res)).unwrap(),
        r#"{"jsonrpc":"2.0","id":"r","result":{}}"#
    );
    let err = ErrorResponse::new(None, ErrorObject::internal("boom"));
    assert_eq!(
        serde_json::to_string(&Message::from(err)).unwrap(),
        r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"boom"}}"#
    );
    let n = Notification::new(METHOD_PROMPT_LIST_CHANGED, None);
    assert_eq!(
        serde_json::to_string(&Message::from(n)).unwrap(),
        r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#
    );
}

#[test]
fn error_constructors() {
    assert_eq!(
        serde_json::to_value(ErrorObject::invalid_request("bad")).unwrap(),
        json!({"code": -32600, "message": "Invalid request: bad"})
    );
    assert_eq!(
        serde_json::to_value(ErrorObject::invalid_params("Unknown tool: x")).unwrap(),
        json!({"code": -32602, "message": "Unknown tool: x"})
    );
    assert_eq!(
        serde_json::to_value(ErrorObject::header_mismatch("Mcp-Name")).unwrap(),
        json!({"code": -32020, "message": "Mcp-Name"})
    );
    let caps = ClientCapabilities {
        elicitation: Some(ElicitationCapability::default()),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(ErrorObject::missing_client_capability(&caps)).unwrap(),
        json!({
            "code": -32021,
            "message": "Missing required client capability: elicitation",
            "data": {"requiredCapabilities": {"elicitation": {}}}
        })
    );
    assert_eq!(
        serde_json::to_value(ErrorObject::unsupported_protocol_version(
            &["2026-07-28"],
            "1900-01-01"
        ))
        .unwrap(),
        json!({
            "code": -32022,
            "message": "Unsupported protocol version \"1900-01-01\"; supported: 2026-07-28",
            "data": {"supported": ["2026-07-28"], "requested": "1900-01-01"}
        })
    );
}

/// `from_slice` reads objects straight into their fields; whatever that way
/// refuses goes through a whole JSON value instead. Both must classify
/// every input the same: compare with `from_value` of the parsed value.
#[test]
fn from_slice_agrees_with_from_value() {
    let inputs = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
        "  \n\t{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"m\"}",
        // Duplicate members: the last one wins, as in a JSON value.
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b","params":{"x":1},"params":{"y":2}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/x","params":{"a":[1,2,{"b":null}]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":true}"#,
        r#"["jsonrpc","2.0"]"#,
        r#"{}"#,
    ];
    for input in inputs {
        let value: Value = serde_json::from_str(input).unwrap();
        assert_eq!(
            Message::from_slice(input.as_bytes()),
            Message::from_value(value),
            "{input}"
        );
    }
    // Not JSON, or JSON with trailing bytes: a parse error either way.
    for input in [
        r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
        r#"{"jsonrpc":"2.0""#,
    ] {
        assert!(
            matches!(
                Message::from_slice(input.as_bytes()),
                Err(MessageError::Parse(_))
            ),
            "{input}"
        );
    }
}

#[test]
fn params_nested_past_the_limit_are_a_parse_error() {
    let nested = |depth: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":{}{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    // The message, params and 126 arrays: 128 levels, as deep as a value may be.
    assert!(Message::from_slice(nested(126).as_bytes()).is_ok());
    let refused = Message::from_slice(nested(127).as_bytes()).unwrap_err();
    assert!(
        matches!(&refused, MessageError::Parse(m) if m.starts_with("recursion limit exceeded")),
        "{refused:?}"
    );
    // Brackets inside strings are text, not nesting.
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":"{}\"{}"}}}}"#,
        "[".repeat(500),
        "{".repeat(500)
    );
    assert!(Message::from_slice(text.as_bytes()).is_ok());
}

#[test]
fn params_keep_their_members_text() {
    let text = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo", "arguments":{"text":"hi"}}}"#;
    let Message::Request(request) = Message::from_slice(text).unwrap() else {
        panic!("a request")
    };
    let params = request.params.unwrap();
    assert_eq!(params.member("name").unwrap().get(), r#""echo""#);
    assert_eq!(
        params.member("arguments").unwrap().get(),
        r#"{"text":"hi"}"#
    );
}
