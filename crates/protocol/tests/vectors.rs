//! Hand-written JSON vectors for every wire type: each parses to the expected
//! values and serializes back to the same JSON; malformed input fails with the
//! expected error.

use std::collections::BTreeMap;
use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolwire_protocol::*;

/// Parses `text` as `T`, checks it serializes back to the same JSON value, returns it.
fn rt<T: DeserializeOwned + Serialize + Debug>(text: &str) -> T {
    let value: T = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("{} from {text}: {e}", std::any::type_name::<T>()));
    let original: Value = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_value(&value).unwrap(), original, "{value:?}");
    value
}

/// The error message of parsing `text` as `T`.
fn err<T: DeserializeOwned + Debug>(text: &str) -> String {
    match serde_json::from_str::<T>(text) {
        Ok(v) => panic!("{text} parsed as {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn meta(value: Value) -> Meta {
    Meta(serde_json::from_value(value).unwrap())
}

// ---------------------------------------------------------------- results

mod results {
    use super::*;

    #[test]
    fn result_without_result_type_reads_as_complete() {
        let r: CallToolResult =
            serde_json::from_str(r#"{"content":[{"type":"text","text":"ok"}]}"#).unwrap();
        assert_eq!(r.result_type, ResultType::Complete);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType":"complete","content":[{"type":"text","text":"ok"}]})
        );
        assert_eq!(
            ResultType::of(&JsonObject::new()).unwrap(),
            ResultType::Complete
        );
    }

    #[test]
    fn unknown_result_type_is_rejected() {
        let e = err::<CallToolResult>(r#"{"resultType":"later","content":[]}"#);
        assert!(
            e.starts_with(
                "unknown variant `later`, expected one of `complete`, `input_required`, `task`"
            ),
            "{e}"
        );
        let obj: JsonObject = serde_json::from_str(r#"{"resultType":"partial"}"#).unwrap();
        assert!(ResultType::of(&obj).is_err());
        let obj: JsonObject = serde_json::from_str(r#"{"resultType":7}"#).unwrap();
        assert!(ResultType::of(&obj).is_err());
    }

    #[test]
    fn structured_content_null_round_trips_as_null() {
        let r = rt::<CallToolResult>(
            r#"{"resultType":"complete","content":[],"structuredContent":null}"#,
        );
        assert_eq!(r.structured_content, Some(Value::Null));
        let r = rt::<CallToolResult>(r#"{"resultType":"complete","content":[]}"#);
        assert_eq!(r.structured_content, None);
        let r = rt::<CallToolResult>(
            r#"{"resultType":"complete","content":[],"structuredContent":[1,"two",{"n":3.5}]}"#,
        );
        assert_eq!(r.structured_content, Some(json!([1, "two", {"n": 3.5}])));
    }

    #[test]
    fn call_tool_result_error() {
        let r = rt::<CallToolResult>(
            r#"{"resultType":"complete","content":[{"type":"text","text":"bad date"}],"isError":true,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
        );
        assert!(r.is_error());
        assert_eq!(r.content[0].as_text(), Some("bad date"));
        let info = r.meta.unwrap().server_info().unwrap().unwrap();
        assert_eq!(info, Implementation::new("s", "1"));
        assert_eq!(
            serde_json::to_string(&CallToolResult::error("no")).unwrap(),
            r#"{"resultType":"complete","content":[{"type":"text","text":"no"}],"isError":true}"#
        );
    }

    #[test]
    fn empty_result() {
        let r = rt::<EmptyResult>(r#"{"resultType":"complete"}"#);
        assert_eq!(r.result_type, ResultType::Complete);
        assert_eq!(r.meta, None);
        let r: EmptyResult = serde_json::from_str("{}").unwrap();
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"resultType":"complete"}"#
        );
    }

    #[test]
    fn cache_scope() {
        assert_eq!(
            serde_json::from_str::<CacheScope>(r#""public""#).unwrap(),
            CacheScope::Public
        );
        assert_eq!(CacheScope::default(), CacheScope::Private);
        assert!(serde_json::from_str::<CacheScope>(r#""shared""#).is_err());
    }
}

// ---------------------------------------------------------------- mrtr

mod mrtr {
    use super::*;

    const INPUT_REQUIRED: &str = r#"{
        "resultType": "input_required",
        "inputRequests": {
            "confirm": {
                "method": "elicitation/create",
                "params": {"message": "Delete 3 files?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}
            },
            "summary": {
                "method": "sampling/createMessage",
                "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Summarise"}}], "maxTokens": 50}
            },
            "where": {"method": "roots/list"},
            "where2": {"method": "roots/list", "params": {"_meta": {"k": 1}}}
        },
        "requestState": "c3RhdGU",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    }"#;

    #[test]
    fn input_required_result() {
        let r = rt::<InputRequiredResult>(INPUT_REQUIRED);
        assert_eq!(r.result_type, ResultType::InputRequired);
        assert_eq!(r.request_state.as_deref(), Some("c3RhdGU"));
        let reqs = r.input_requests.unwrap();
        assert_eq!(reqs.len(), 4);
        let InputRequest::Elicit(ElicitRequestParams::Form(form)) = &reqs["confirm"] else {
            panic!("{:?}", reqs["confirm"])
        };
        assert_eq!(form.mode, None);
        assert_eq!(form.message, "Delete 3 files?");
        let InputRequest::CreateMessage(sampling) = &reqs["summary"] else {
            panic!("{:?}", reqs["summary"])
        };
        assert_eq!(sampling.max_tokens, 50);
        assert_eq!(reqs["where"], InputRequest::ListRoots(None));
        assert_eq!(
            reqs["where2"],
            InputRequest::ListRoots(Some(RequestParams {
                meta: Some(meta(json!({"k": 1})))
            }))
        );
        assert_eq!(reqs["summary"].method(), METHOD_CREATE_MESSAGE);
        assert_eq!(reqs["confirm"].method(), METHOD_ELICIT);
        assert_eq!(reqs["where"].method(), METHOD_LIST_ROOTS);
    }

    #[test]
    fn input_required_result_type_is_enforced() {
        let e = err::<InputRequiredResult>(r#"{"resultType":"complete","requestState":"s"}"#);
        assert!(
            e.starts_with(
                "an InputRequiredResult must have resultType \"input_required\", not \"complete\""
            ),
            "{e}"
        );
        let r: InputRequiredResult = serde_json::from_str(r#"{"requestState":"s"}"#).unwrap();
        assert_eq!(r.result_type, ResultType::InputRequired);
        let forced = InputRequiredResult {
            result_type: ResultType::Complete,
            ..InputRequiredResult::new().with_request_state("s")
        };
        assert_eq!(
            serde_json::to_string(&forced).unwrap(),
            r#"{"resultType":"input_required","requestState":"s"}"#
        );
        assert_eq!(
            serde_json::to_string(&InputRequiredResult::default()).unwrap(),
            r#"{"resultType":"input_required"}"#
        );
    }

    #[test]
    fn input_request_errors() {
        let e = err::<InputRequest>(r#"{"method":"tools/call","params":{}}"#);
        assert_eq!(e, "unknown input request method \"tools/call\"");
        let e = err::<InputRequest>(r#"{"method":"elicitation/create"}"#);
        assert_eq!(e, "input request \"elicitation/create\" needs params");
        let e = err::<InputRequest>(r#"{"method":"sampling/createMessage"}"#);
        assert_eq!(e, "input request \"sampling/createMessage\" needs params");
        let e = err::<InputRequest>(r#"{"params":{}}"#);
        assert!(e.starts_with("missing field `method`"), "{e}");
        let e =
            err::<InputRequest>(r#"{"method":"sampling/createMessage","params":{"messages":[]}}"#);
        assert!(e.starts_with("missing field `maxTokens`"), "{e}");
    }

    #[test]
    fn input_request_ignores_unknown_members() {
        let r: InputRequest =
            serde_json::from_str(r#"{"id":"x","method":"roots/list","jsonrpc":"2.0"}"#).unwrap();
        assert_eq!(r, InputRequest::ListRoots(None));
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"method":"roots/list"}"#
        );
    }

    #[test]
    fn input_request_constructors() {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), json!({}));
        let r = InputRequest::from(ElicitRequestParams::form("Name?", schema));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{}}}})
        );
        let r = InputRequest::from(ElicitRequestParams::url("Log in", "https://x.test/a"));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"method":"elicitation/create","params":{"mode":"url","message":"Log in","url":"https://x.test/a"}})
        );
    }

    const RESPONSES: &str = r#"{
        "confirm": {"action": "accept", "content": {"ok": true}},
        "summary": {"role": "assistant", "content": {"type": "text", "text": "Done."}, "model": "m-1", "stopReason": "endTurn"},
        "where": {"roots": [{"uri": "file:///w"}]},
        "junk": {"hello": 1},
        "scalar": 5
    }"#;

    #[test]
    fn input_responses_are_raw_and_typed_on_demand() {
        let responses: InputResponses = serde_json::from_str(RESPONSES).unwrap();
        let confirm = input_response(&responses, "confirm").unwrap().unwrap();
        let ElicitResult { action, content } = confirm.as_elicit().unwrap();
        assert_eq!(*action, ElicitAction::Accept);
        assert_eq!(content.as_ref().unwrap()["ok"], ElicitValue::Boolean(true));
        let summary = input_response(&responses, "summary").unwrap().unwrap();
        let msg = summary.as_create_message().unwrap();
        assert_eq!(msg.model, "m-1");
        assert_eq!(msg.stop_reason.as_deref(), Some(stop_reason::END_TURN));
        let roots = input_response(&responses, "where").unwrap().unwrap();
        assert_eq!(roots.as_list_roots().unwrap().roots[0].uri, "file:///w");
        assert!(roots.as_elicit().is_none());

        let junk = input_response(&responses, "junk").unwrap().unwrap_err();
        assert_eq!(
            junk.to_string(),
            "an input response must be an ElicitResult (action), a ListRootsResult (roots) or a CreateMessageResult (model, role, content)"
        );
        let scalar = input_response(&responses, "scalar").unwrap().unwrap_err();
        assert_eq!(scalar.to_string(), "an input response must be an object");
        assert!(input_response(&responses, "missing").is_none());
    }

    #[test]
    fn input_response_round_trips() {
        for text in [
            r#"{"action":"cancel"}"#,
            r#"{"action":"accept","content":{"name":"octo","n":2,"tags":["a","b"],"ok":false}}"#,
            r#"{"roots":[]}"#,
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"w","input":{}}],"model":"m"}"#,
        ] {
            rt::<InputResponse>(text);
        }
        let e = err::<InputResponse>(r#"{"action":"maybe"}"#);
        assert!(e.starts_with("unknown variant `maybe`"), "{e}");
        let e = err::<InputResponse>(r#"{"model":"m","role":"assistant"}"#);
        assert!(e.starts_with("missing field `content`"), "{e}");
    }

    #[test]
    fn parse_response_uses_the_request_kind() {
        let elicit = InputRequest::Elicit(ElicitRequestParams::url("m", "https://x.test"));
        let roots = InputRequest::ListRoots(None);
        let answer = json!({"action": "decline"});
        assert_eq!(
            elicit.parse_response(&answer).unwrap(),
            InputResponse::Elicit(ElicitResult::decline())
        );
        let e = roots.parse_response(&answer).unwrap_err();
        assert!(e.to_string().starts_with("missing field `roots`"), "{e}");
    }

    #[test]
    fn input_response_request_params() {
        let p = rt::<InputResponseRequestParams>(
            r#"{"inputResponses":{"a":{"action":"decline"}},"requestState":"s1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        assert_eq!(p.request_state.as_deref(), Some("s1"));
        assert_eq!(p.meta.unwrap().protocol_version(), Some("2026-07-28"));
        assert!(p.input_responses.unwrap().contains_key("a"));
    }
}

// ---------------------------------------------------------------- elicitation

mod elicitation {
    use super::*;

    #[test]
    fn form_params_with_and_without_mode() {
        let p = rt::<ElicitRequestParams>(
            r#"{"message":"Who?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"]}}"#,
        );
        let ElicitRequestParams::Form(form) = &p else {
            panic!("{p:?}")
        };
        assert_eq!(form.mode, None);
        assert_eq!(form.required_fields(), vec!["name"]);
        let props = form.requested_properties().unwrap();
        let PrimitiveSchemaDefinition::String(name) = &props["name"] else {
            panic!("{props:?}")
        };
        assert_eq!(name.min_length, Some(1));

        let p = rt::<ElicitRequestParams>(
            r#"{"mode":"form","message":"Who?","requestedSchema":{"type":"object","properties":{},"$schema":"https://json-schema.org/draft/2020-12/schema"}}"#,
        );
        let ElicitRequestParams::Form(form) = &p else {
            panic!("{p:?}")
        };
        assert_eq!(form.mode, Some(FormMode));
        assert_eq!(p.message(), "Who?");
    }

    #[test]
    fn url_params() {
        let p = rt::<ElicitRequestParams>(
            r#"{"mode":"url","message":"Pay","url":"https://pay.test/checkout?id=1"}"#,
        );
        let ElicitRequestParams::Url(url) = &p else {
            panic!("{p:?}")
        };
        assert_eq!(url.url, "https://pay.test/checkout?id=1");
        let e = err::<ElicitRequestParams>(r#"{"mode":"url","message":"Pay"}"#);
        assert!(e.starts_with("missing field `url`"), "{e}");
        let e = err::<ElicitRequestUrlParams>(r#"{"mode":"form","message":"Pay","url":"u"}"#);
        assert!(e.starts_with(r#"expected "url", found "form""#), "{e}");
    }

    #[test]
    fn unknown_mode_is_rejected() {
        let e = err::<ElicitRequestParams>(r#"{"mode":"popup","message":"m"}"#);
        assert_eq!(
            e,
            r#"unknown elicitation mode "popup", expected "form" or "url""#
        );
        let e = err::<ElicitRequestParams>(r#"["form"]"#);
        assert_eq!(e, "elicitation parameters must be an object");
        let e = err::<ElicitRequestParams>(r#"{"message":"m"}"#);
        assert!(e.starts_with("missing field `requestedSchema`"), "{e}");
    }

    #[test]
    fn elicit_result_values() {
        let r = rt::<ElicitResult>(
            r#"{"action":"accept","content":{"s":"x","i":30,"f":2.5,"neg":-4,"b":true,"list":["a","c"]}}"#,
        );
        let c = r.content.unwrap();
        assert_eq!(c["s"].as_str(), Some("x"));
        assert_eq!(c["i"].as_i64(), Some(30));
        assert_eq!(c["f"].as_f64(), Some(2.5));
        assert_eq!(c["f"].as_i64(), None);
        assert_eq!(c["neg"], ElicitValue::from(-4));
        assert_eq!(c["b"].as_bool(), Some(true));
        assert_eq!(
            c["list"],
            ElicitValue::StringArray(vec!["a".into(), "c".into()])
        );
        let r = rt::<ElicitResult>(r#"{"action":"decline"}"#);
        assert_eq!(r, ElicitResult::decline());
        let r = rt::<ElicitResult>(r#"{"action":"cancel"}"#);
        assert_eq!(r, ElicitResult::cancel());
        let e = err::<ElicitResult>(r#"{"action":"accept","content":{"x":{"nested":1}}}"#);
        assert!(e.contains("did not match any variant"), "{e}");
        let e = err::<ElicitResult>(r#"{"action":"accept","content":{"x":[1]}}"#);
        assert!(e.contains("did not match any variant"), "{e}");
        let mut content = BTreeMap::new();
        content.insert("n".to_owned(), ElicitValue::from("v"));
        assert_eq!(
            serde_json::to_string(&ElicitResult::accept(content)).unwrap(),
            r#"{"action":"accept","content":{"n":"v"}}"#
        );
    }

    #[test]
    fn primitive_schemas() {
        use PrimitiveSchemaDefinition as P;
        let s = rt::<P>(
            r#"{"type":"string","title":"When","description":"d","minLength":1,"maxLength":10,"format":"date-time","default":"2026-01-01T00:00:00Z"}"#,
        );
        let P::String(s) = s else { panic!("{s:?}") };
        assert_eq!(s.format, Some(StringFormat::DateTime));
        assert_eq!(s.max_length, Some(10));

        let n = rt::<P>(r#"{"type":"integer","minimum":-5,"maximum":5,"default":0}"#);
        let P::Number(n) = n else { panic!("{n:?}") };
        assert_eq!(n.r#type, NumberType::Integer);
        assert_eq!(
            (n.minimum, n.maximum, n.default),
            (Some(-5.0), Some(5.0), Some(0.0))
        );
        let n = rt::<P>(r#"{"type":"number","minimum":0.5,"maximum":1000}"#);
        assert!(matches!(
            n,
            P::Number(NumberSchema {
                minimum: Some(0.5),
                maximum: Some(1000.0),
                ..
            })
        ));
        // An integral float literal reads as the same number and is written as an integer.
        let n: NumberSchema = serde_json::from_str(r#"{"type":"number","maximum":1e3}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#"{"type":"number","maximum":1000}"#
        );

        let b = rt::<P>(r#"{"type":"boolean","default":true}"#);
        assert!(matches!(
            b,
            P::Boolean(BooleanSchema {
                default: Some(true),
                ..
            })
        ));

        let e = rt::<P>(r#"{"type":"string","enum":["a","b"],"default":"a"}"#);
        let P::UntitledSingleSelectEnum(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!(e.r#enum, vec!["a", "b"]);

        let e = rt::<P>(
            r#"{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}"#,
        );
        let P::TitledSingleSelectEnum(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            e.one_of[1],
            EnumOption {
                r#const: "b".into(),
                title: "B".into()
            }
        );

        let e = rt::<P>(
            r#"{"type":"array","minItems":0,"items":{"type":"string","enum":["x","y"]},"default":[]}"#,
        );
        let P::UntitledMultiSelectEnum(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!(e.items.r#enum, vec!["x", "y"]);
        assert_eq!(e.default, Some(vec![]));

        let e = rt::<P>(
            r#"{"type":"array","maxItems":1,"items":{"anyOf":[{"const":"x","title":"Ex"}]}}"#,
        );
        let P::TitledMultiSelectEnum(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!(e.items.any_of[0].title, "Ex");

        let e = rt::<P>(r#"{"type":"string","enum":["a","b"],"enumNames":["Aye","Bee"]}"#);
        let P::LegacyTitledEnum(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!(e.enum_names, Some(vec!["Aye".into(), "Bee".into()]));
    }

    #[test]
    fn primitive_schema_errors() {
        use PrimitiveSchemaDefinition as P;
        assert_eq!(
            err::<P>(r#"{"type":"object","properties":{}}"#),
            r#"unsupported primitive schema type "object""#
        );
        assert_eq!(
            err::<P>(r#"{"enum":["a"]}"#),
            r#"a primitive schema needs a string "type""#
        );
        assert_eq!(err::<P>("true"), "a primitive schema must be an object");
        let e = err::<P>(r#"{"type":"string","format":"phone"}"#);
        assert!(e.starts_with("unknown variant `phone`"), "{e}");
        let e = err::<BooleanSchema>(r#"{"type":"string"}"#);
        assert!(
            e.starts_with(r#"expected "boolean", found "string""#),
            "{e}"
        );
        let e = err::<P>(r#"{"type":"array","items":{"type":"string"}}"#);
        assert!(e.starts_with("missing field `enum`"), "{e}");
    }
}

// ---------------------------------------------------------------- sampling

mod sampling {
    use super::*;

    #[test]
    fn full_request_params() {
        let p = rt::<CreateMessageRequestParams>(
            r#"{
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "Hi"}},
                    {"role": "assistant", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}], "_meta": {"k": "v"}}
                ],
                "modelPreferences": {"hints": [{"name": "sonnet"}, {}], "costPriority": 0, "speedPriority": 1, "intelligencePriority": 0.25},
                "systemPrompt": "Be brief.",
                "includeContext": "thisServer",
                "temperature": 0.7,
                "maxTokens": 4096,
                "stopSequences": ["\n\n"],
                "metadata": {"provider": {"x": 1}},
                "tools": [{"name": "w", "inputSchema": {"type": "object"}}],
                "toolChoice": {"mode": "required"}
            }"#,
        );
        assert_eq!(p.max_tokens, 4096);
        assert_eq!(p.temperature, Some(0.7));
        assert_eq!(p.include_context, Some(IncludeContext::ThisServer));
        assert_eq!(
            p.tool_choice,
            Some(ToolChoice {
                mode: Some(ToolChoiceMode::Required)
            })
        );
        let prefs = p.model_preferences.unwrap();
        assert_eq!(prefs.cost_priority, Some(0.0));
        assert_eq!(prefs.speed_priority, Some(1.0));
        assert_eq!(prefs.hints.unwrap()[1], ModelHint::default());
        assert!(matches!(
            p.messages[0].content,
            OneOrMany::One(SamplingContent::Text(_))
        ));
        assert_eq!(p.messages[1].content.len(), 1);
        assert!(matches!(p.messages[1].content, OneOrMany::Many(_)));
        assert_eq!(p.tools.unwrap()[0].name, "w");
    }

    #[test]
    fn max_tokens_must_be_a_non_negative_integer() {
        let e = err::<CreateMessageRequestParams>(r#"{"messages":[],"maxTokens":1.5}"#);
        assert!(e.starts_with("invalid type: floating point `1.5`"), "{e}");
        let e = err::<CreateMessageRequestParams>(r#"{"messages":[],"maxTokens":-1}"#);
        assert!(e.starts_with("invalid value: integer `-1`"), "{e}");
        let e = err::<CreateMessageRequestParams>(r#"{"messages":[]}"#);
        assert!(e.starts_with("missing field `maxTokens`"), "{e}");
    }

    #[test]
    fn include_context_and_tool_choice_values() {
        for (text, v) in [
            (r#""none""#, IncludeContext::None),
            (r#""thisServer""#, IncludeContext::ThisServer),
            (r#""allServers""#, IncludeContext::AllServers),
        ] {
            assert_eq!(rt::<IncludeContext>(text), v);
        }
        for (text, v) in [
            (r#"{"mode":"auto"}"#, Some(ToolChoiceMode::Auto)),
            (r#"{"mode":"none"}"#, Some(ToolChoiceMode::None)),
            (r#"{}"#, None),
        ] {
            assert_eq!(rt::<ToolChoice>(text).mode, v);
        }
    }

    #[test]
    fn sampling_message_one_or_many() {
        let m = rt::<SamplingMessage>(
            r#"{"role":"user","content":[{"type":"tool_result","toolUseId":"t1","content":[],"structuredContent":null,"isError":true}]}"#,
        );
        let OneOrMany::Many(blocks) = &m.content else {
            panic!("{m:?}")
        };
        let SamplingContent::ToolResult(r) = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert_eq!(r.structured_content, Some(Value::Null));
        assert_eq!(r.is_error, Some(true));

        let m = rt::<SamplingMessage>(
            r#"{"role":"assistant","content":{"type":"audio","data":"UklG","mimeType":"audio/wav"}}"#,
        );
        assert_eq!(m.content.as_slice().len(), 1);
        assert!(matches!(
            m.content,
            OneOrMany::One(SamplingContent::Audio(_))
        ));

        let m = rt::<SamplingMessage>(r#"{"role":"user","content":[]}"#);
        assert!(m.content.is_empty());

        let e = err::<SamplingMessage>(
            r#"{"role":"user","content":{"type":"resource_link","uri":"u","name":"n"}}"#,
        );
        assert!(e.starts_with("unknown variant `resource_link`"), "{e}");
        let e = err::<SamplingMessage>(r#"{"role":"system","content":[]}"#);
        assert!(e.starts_with("unknown variant `system`"), "{e}");
    }

    #[test]
    fn create_message_result() {
        let r = rt::<CreateMessageResult>(
            r#"{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get","input":{"q":1}},{"type":"text","text":"calling"}],"model":"m-2","stopReason":"toolUse","_meta":{"x":true}}"#,
        );
        assert_eq!(r.stop_reason.as_deref(), Some(stop_reason::TOOL_USE));
        assert_eq!(r.content.iter().count(), 2);
        let r = rt::<CreateMessageResult>(
            r#"{"role":"assistant","content":{"type":"text","text":"x"},"model":"m","stopReason":"somethingElse"}"#,
        );
        assert_eq!(r.stop_reason.as_deref(), Some("somethingElse"));
        let e = err::<CreateMessageResult>(
            r#"{"role":"assistant","content":{"type":"text","text":"x"}}"#,
        );
        assert!(e.starts_with("missing field `model`"), "{e}");
    }

    #[test]
    fn model_preferences_keep_integers() {
        let p = rt::<ModelPreferences>(
            r#"{"costPriority":1,"speedPriority":0,"intelligencePriority":0.5}"#,
        );
        assert_eq!(p.cost_priority, Some(1.0));
        assert_eq!(
            serde_json::to_string(&ModelPreferences {
                cost_priority: Some(1.0),
                ..Default::default()
            })
            .unwrap(),
            r#"{"costPriority":1}"#
        );
    }
}

// ---------------------------------------------------------------- roots

mod roots {
    use super::*;

    #[test]
    fn roots() {
        let r = rt::<ListRootsResult>(
            r#"{"roots":[{"uri":"file:///a","name":"A","_meta":{"k":1}},{"uri":"file:///b"}]}"#,
        );
        assert_eq!(r.roots[0].name.as_deref(), Some("A"));
        assert_eq!(r.roots[1], Root::new("file:///b"));
        let e = err::<Root>(r#"{"name":"x"}"#);
        assert!(e.starts_with("missing field `uri`"), "{e}");
    }
}

// ---------------------------------------------------------------- resources

mod resources {
    use super::*;

    #[test]
    fn list_resources() {
        let r = rt::<ListResourcesResult>(
            r#"{"resultType":"complete","resources":[{"uri":"file:///r","name":"r","size":1024,"annotations":{"priority":1,"audience":["assistant"]}}],"nextCursor":"n","ttlMs":5,"cacheScope":"public"}"#,
        );
        assert_eq!(r.resources[0].size, Some(1024));
        assert_eq!(
            r.resources[0].annotations.as_ref().unwrap().priority,
            Some(1.0)
        );
        assert_eq!(r.ttl_ms, 5);
        assert_eq!(r.cache_scope, CacheScope::Public);
        assert_eq!(r.next_cursor.as_deref(), Some("n"));
    }

    #[test]
    fn caching_fields_default_when_absent() {
        let r: ListResourcesResult = serde_json::from_str(r#"{"resources":[]}"#).unwrap();
        assert_eq!((r.ttl_ms, r.cache_scope), (0, CacheScope::Private));
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"resultType":"complete","resources":[],"ttlMs":0,"cacheScope":"private"}"#
        );
        let e = err::<ListResourcesResult>(r#"{"resources":[],"ttlMs":-1}"#);
        assert!(e.starts_with("invalid value: integer `-1`"), "{e}");
    }

    #[test]
    fn resource_templates() {
        let r = rt::<ListResourceTemplatesResult>(
            r#"{"resultType":"complete","resourceTemplates":[{"uriTemplate":"db://{table}/{id}","name":"row","title":"Row","description":"A row","mimeType":"application/json","icons":[{"src":"data:image/png;base64,AA","theme":"dark"}],"annotations":{"audience":["user"]},"_meta":{"a":1}}],"ttlMs":0,"cacheScope":"private"}"#,
        );
        let t = &r.resource_templates[0];
        assert_eq!(t.uri_template, "db://{table}/{id}");
        assert_eq!(t.icons.as_ref().unwrap()[0].theme, Some(IconTheme::Dark));
    }

    #[test]
    fn read_resource() {
        let p = rt::<ReadResourceRequestParams>(
            r#"{"uri":"file:///x","inputResponses":{"k":{"action":"accept"}},"requestState":"st","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        );
        assert_eq!(p.uri, "file:///x");
        assert_eq!(p.request_state.as_deref(), Some("st"));
        assert_eq!(
            p.meta.unwrap().client_capabilities().unwrap().unwrap(),
            ClientCapabilities::default()
        );
        let r = rt::<ReadResourceResult>(
            r#"{"resultType":"complete","contents":[{"uri":"file:///x","text":"hi"},{"uri":"file:///y","mimeType":"image/png","blob":"AAAA","_meta":{"m":1}}],"ttlMs":60000,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"}}}"#,
        );
        assert!(matches!(r.contents[0], ResourceContents::Text(_)));
        assert!(matches!(r.contents[1], ResourceContents::Blob(_)));
        assert_eq!(r.contents[1].uri(), "file:///y");
        assert_eq!(r.ttl_ms, 60000);
    }

    #[test]
    fn resource_updated() {
        let p = rt::<ResourceUpdatedNotificationParams>(
            r#"{"uri":"file:///c.json","_meta":{"io.modelcontextprotocol/subscriptionId":7}}"#,
        );
        assert_eq!(
            p.meta.unwrap().subscription_id().unwrap().unwrap(),
            RequestId::Number(7)
        );
    }
}

// ---------------------------------------------------------------- prompts

mod prompts {
    use super::*;

    #[test]
    fn list_prompts() {
        let r = rt::<ListPromptsResult>(
            r#"{"resultType":"complete","prompts":[{"name":"review","title":"Review","description":"d","arguments":[{"name":"code","title":"Code","description":"c","required":true},{"name":"lang"}],"icons":[{"src":"https://i.test/a.svg","sizes":["any"]}],"_meta":{}}],"ttlMs":10,"cacheScope":"public"}"#,
        );
        let p = &r.prompts[0];
        let args = p.arguments.as_ref().unwrap();
        assert_eq!(args[0].required, Some(true));
        assert_eq!(
            args[1],
            PromptArgument {
                name: "lang".into(),
                ..Default::default()
            }
        );
        assert_eq!(p.meta, Some(Meta::new()));
    }

    #[test]
    fn get_prompt() {
        let p = rt::<GetPromptRequestParams>(
            r#"{"name":"review","arguments":{"code":"x = 1","lang":"py"},"requestState":"s","inputResponses":{},"_meta":{"progressToken":5}}"#,
        );
        assert_eq!(p.arguments.unwrap()["lang"], "py");
        assert_eq!(
            p.meta.unwrap().progress_token().unwrap().unwrap(),
            RequestId::Number(5)
        );
        let e = err::<GetPromptRequestParams>(r#"{"name":"r","arguments":{"n":1}}"#);
        assert!(
            e.starts_with("invalid type: integer `1`, expected a string"),
            "{e}"
        );

        let r = rt::<GetPromptResult>(
            r#"{"resultType":"complete","description":"d","messages":[{"role":"user","content":{"type":"text","text":"Review this"}},{"role":"assistant","content":{"type":"resource","resource":{"uri":"file:///a.py","text":"x = 1","mimeType":"text/x-python"}}},{"role":"user","content":{"type":"resource_link","uri":"file:///b","name":"b"}}]}"#,
        );
        assert_eq!(
            r.messages[0],
            PromptMessage::text(Role::User, "Review this")
        );
        assert!(matches!(r.messages[1].content, ContentBlock::Resource(_)));
        assert!(matches!(
            r.messages[2].content,
            ContentBlock::ResourceLink(_)
        ));
        let e = err::<PromptMessage>(
            r#"{"role":"user","content":{"type":"tool_use","id":"1","name":"n","input":{}}}"#,
        );
        assert!(e.starts_with("unknown variant `tool_use`"), "{e}");
    }
}

// ---------------------------------------------------------------- completion

mod completion {
    use super::*;

    #[test]
    fn complete_request_params() {
        let p = rt::<CompleteRequestParams>(
            r#"{"ref":{"type":"ref/prompt","name":"review","title":"Review"},"argument":{"name":"lang","value":"p"},"context":{"arguments":{"framework":"flask"}},"_meta":{}}"#,
        );
        assert_eq!(
            p.r#ref,
            CompletionReference::Prompt(PromptReference {
                name: "review".into(),
                title: Some("Review".into())
            })
        );
        assert_eq!(p.argument.value, "p");
        assert_eq!(p.context.unwrap().arguments.unwrap()["framework"], "flask");

        let p = rt::<CompleteRequestParams>(
            r#"{"ref":{"type":"ref/resource","uri":"file:///{path}"},"argument":{"name":"path","value":""}}"#,
        );
        assert_eq!(
            p.r#ref,
            CompletionReference::ResourceTemplate(ResourceTemplateReference {
                uri: "file:///{path}".into()
            })
        );
        let e = err::<CompleteRequestParams>(
            r#"{"ref":{"type":"ref/tool","name":"x"},"argument":{"name":"a","value":"b"}}"#,
        );
        assert!(e.starts_with("unknown variant `ref/tool`"), "{e}");
        let e = err::<CompleteRequestParams>(r#"{"ref":{"type":"ref/prompt","name":"x"}}"#);
        assert!(e.starts_with("missing field `argument`"), "{e}");
    }

    #[test]
    fn complete_result() {
        let r = rt::<CompleteResult>(
            r#"{"resultType":"complete","completion":{"values":["python","pytorch"],"total":12,"hasMore":true}}"#,
        );
        assert_eq!(r.completion.total, Some(12));
        assert_eq!(r.completion.has_more, Some(true));
        let r = rt::<CompleteResult>(r#"{"resultType":"complete","completion":{"values":[]}}"#);
        assert_eq!(r.completion, Completion::default());
    }
}

// ---------------------------------------------------------------- subscriptions

mod subscriptions {
    use super::*;

    #[test]
    fn listen_and_acknowledge() {
        let p = rt::<SubscriptionsListenRequestParams>(
            r#"{"notifications":{"toolsListChanged":true,"promptsListChanged":false,"resourcesListChanged":true,"resourceSubscriptions":["file:///a","file:///b"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        assert_eq!(
            p.notifications,
            SubscriptionFilter {
                tools_list_changed: Some(true),
                prompts_list_changed: Some(false),
                resources_list_changed: Some(true),
                resource_subscriptions: Some(vec!["file:///a".into(), "file:///b".into()]),
                task_ids: None,
            }
        );
        let e = err::<SubscriptionsListenRequestParams>(r#"{"_meta":{}}"#);
        assert!(e.starts_with("missing field `notifications`"), "{e}");

        let a = rt::<SubscriptionsAcknowledgedNotificationParams>(
            r#"{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{}}"#,
        );
        assert_eq!(a.notifications, SubscriptionFilter::default());
        assert_eq!(
            a.meta.unwrap().subscription_id().unwrap().unwrap(),
            RequestId::Number(1)
        );
    }

    #[test]
    fn listen_result_requires_meta() {
        let r = rt::<SubscriptionsListenResult>(
            r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":3,"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#,
        );
        assert_eq!(r.subscription_id(), Some(RequestId::Number(3)));
        let e = err::<SubscriptionsListenResult>(r#"{"resultType":"complete"}"#);
        assert!(e.starts_with("missing field `_meta`"), "{e}");
        assert_eq!(
            serde_json::to_string(&SubscriptionsListenResult::new(&RequestId::Number(9))).unwrap(),
            r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":9}}"#
        );
    }
}

// ---------------------------------------------------------------- notifications

mod notifications {
    use super::*;

    #[test]
    fn progress() {
        let p = rt::<ProgressNotificationParams>(
            r#"{"progressToken":42,"progress":0.5,"total":1,"message":"half","_meta":{"io.modelcontextprotocol/subscriptionId":"s"}}"#,
        );
        assert_eq!(p.progress_token, RequestId::Number(42));
        assert_eq!(p.progress, 0.5);
        assert_eq!(p.total, Some(1.0));
        let p = rt::<ProgressNotificationParams>(r#"{"progressToken":"t","progress":3}"#);
        assert_eq!(p, ProgressNotificationParams::new("t".into(), 3.0));
        assert_eq!(
            serde_json::to_string(
                &ProgressNotificationParams::new(1.into(), 2.25).with_message("m")
            )
            .unwrap(),
            r#"{"progressToken":1,"progress":2.25,"message":"m"}"#
        );
        let e = err::<ProgressNotificationParams>(r#"{"progressToken":1.5,"progress":1}"#);
        assert!(e.contains("did not match any variant"), "{e}");
        let e = err::<ProgressNotificationParams>(r#"{"progressToken":"t"}"#);
        assert!(e.starts_with("missing field `progress`"), "{e}");
    }

    #[test]
    fn cancelled() {
        let p = rt::<CancelledNotificationParams>(r#"{"requestId":"abc"}"#);
        assert_eq!(p, CancelledNotificationParams::new("abc".into()));
        let e = err::<CancelledNotificationParams>(r#"{"reason":"x"}"#);
        assert!(e.starts_with("missing field `requestId`"), "{e}");
    }

    #[test]
    fn list_changed_params() {
        let p = rt::<NotificationParams>("{}");
        assert_eq!(p.meta, None);
        let p = rt::<NotificationParams>(
            r#"{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"}}"#,
        );
        assert_eq!(
            p.meta.unwrap().subscription_id().unwrap().unwrap(),
            RequestId::String("l-1".into())
        );
    }

    #[test]
    fn logging_message() {
        let p = rt::<LoggingMessageNotificationParams>(
            r#"{"level":"warning","logger":"db","data":["any", {"json": null}]}"#,
        );
        assert_eq!(p.level, LoggingLevel::Warning);
        let p = rt::<LoggingMessageNotificationParams>(r#"{"level":"emergency","data":null}"#);
        assert_eq!(p.data, Value::Null);
        let e = err::<LoggingMessageNotificationParams>(r#"{"level":"fatal","data":1}"#);
        assert!(e.starts_with("unknown variant `fatal`"), "{e}");
    }

    #[test]
    fn method_names() {
        assert_eq!(METHOD_PROGRESS, "notifications/progress");
        assert_eq!(METHOD_CANCELLED, "notifications/cancelled");
        assert_eq!(METHOD_LOGGING_MESSAGE, "notifications/message");
        assert_eq!(METHOD_TOOL_LIST_CHANGED, "notifications/tools/list_changed");
        assert_eq!(
            METHOD_PROMPT_LIST_CHANGED,
            "notifications/prompts/list_changed"
        );
        assert_eq!(
            METHOD_RESOURCE_LIST_CHANGED,
            "notifications/resources/list_changed"
        );
        assert_eq!(METHOD_RESOURCE_UPDATED, "notifications/resources/updated");
        assert_eq!(
            METHOD_SUBSCRIPTIONS_ACKNOWLEDGED,
            "notifications/subscriptions/acknowledged"
        );
        assert_eq!(METHOD_SUBSCRIPTIONS_LISTEN, "subscriptions/listen");
        assert_eq!(METHOD_LIST_RESOURCES, "resources/list");
        assert_eq!(METHOD_LIST_RESOURCE_TEMPLATES, "resources/templates/list");
        assert_eq!(METHOD_READ_RESOURCE, "resources/read");
        assert_eq!(METHOD_LIST_PROMPTS, "prompts/list");
        assert_eq!(METHOD_GET_PROMPT, "prompts/get");
        assert_eq!(METHOD_COMPLETE, "completion/complete");
        assert_eq!(METHOD_ELICIT, "elicitation/create");
        assert_eq!(METHOD_CREATE_MESSAGE, "sampling/createMessage");
        assert_eq!(METHOD_LIST_ROOTS, "roots/list");
        assert_eq!(METHOD_LIST_TOOLS, "tools/list");
        assert_eq!(METHOD_CALL_TOOL, "tools/call");
        assert_eq!(METHOD_DISCOVER, "server/discover");
    }
}

// ---------------------------------------------------------------- pre-existing types

mod content {
    use super::*;

    #[test]
    fn content_blocks() {
        let b = rt::<ContentBlock>(
            r#"{"type":"text","text":"hi","annotations":{"audience":["user","assistant"],"priority":0.25,"lastModified":"2026-01-01T00:00:00Z"},"_meta":{"a":1}}"#,
        );
        assert_eq!(b.as_text(), Some("hi"));
        let b = rt::<ContentBlock>(r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#);
        assert_eq!(b, ContentBlock::image("AAAA", "image/png"));
        let b = rt::<ContentBlock>(r#"{"type":"audio","data":"UklG","mimeType":"audio/wav"}"#);
        assert_eq!(b, ContentBlock::audio("UklG", "audio/wav"));
        let b = rt::<ContentBlock>(
            r#"{"type":"resource_link","uri":"file:///r","name":"r","title":"R","description":"d","mimeType":"text/plain","size":0}"#,
        );
        assert!(matches!(
            b,
            ContentBlock::ResourceLink(Resource { size: Some(0), .. })
        ));
        let b = rt::<ContentBlock>(
            r#"{"type":"resource","resource":{"uri":"file:///b","blob":"AAEC"},"annotations":{"priority":1}}"#,
        );
        let ContentBlock::Resource(e) = &b else {
            panic!("{b:?}")
        };
        assert!(matches!(e.resource, ResourceContents::Blob(_)));
        assert_eq!(e.annotations.as_ref().unwrap().priority, Some(1.0));

        let e = err::<ContentBlock>(r#"{"type":"video","data":"x"}"#);
        assert!(e.starts_with("unknown variant `video`"), "{e}");
        let e = err::<ContentBlock>(r#"{"text":"no type"}"#);
        assert!(e.starts_with("missing field `type`"), "{e}");
    }

    #[test]
    fn sampling_content() {
        let c = rt::<SamplingContent>(
            r#"{"type":"tool_use","id":"c1","name":"w","input":{"city":"Paris"},"_meta":{}}"#,
        );
        let SamplingContent::ToolUse(u) = c else {
            panic!()
        };
        assert_eq!(u.input["city"], "Paris");
        let c = rt::<SamplingContent>(
            r#"{"type":"tool_result","toolUseId":"c1","content":[{"type":"text","text":"18C"}],"structuredContent":{"t":18},"isError":false}"#,
        );
        let SamplingContent::ToolResult(r) = c else {
            panic!()
        };
        assert_eq!(r.structured_content, Some(json!({"t": 18})));
    }

    #[test]
    fn annotations_priority_keeps_its_form() {
        let a = rt::<Annotations>(r#"{"priority":0}"#);
        assert_eq!(a.priority, Some(0.0));
        rt::<Annotations>(r#"{"priority":0.5}"#);
        rt::<Annotations>(r#"{}"#);
    }
}

mod tools {
    use super::*;

    #[test]
    fn tool_definition() {
        let t = rt::<Tool>(
            r##"{"name":"get.weather_v2","title":"Weather","description":"d","icons":[{"src":"https://i.test/w.png","mimeType":"image/png","sizes":["48x48","96x96"],"theme":"light"}],"inputSchema":{"type":"object","$defs":{"x":{"type":"integer"}},"properties":{"x":{"$ref":"#/$defs/x"}}},"outputSchema":{"type":"array"},"annotations":{"title":"W","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"_meta":{"vendor/x":1}}"##,
        );
        assert_eq!(t.annotations.unwrap().read_only_hint, Some(true));
        assert_eq!(t.input_schema["$defs"]["x"]["type"], "integer");
        assert_eq!(t.output_schema.unwrap()["type"], "array");
        let e = err::<Tool>(r#"{"name":"x"}"#);
        assert!(e.starts_with("missing field `inputSchema`"), "{e}");
    }

    #[test]
    fn list_tools_and_call() {
        let r = rt::<ListToolsResult>(
            r#"{"resultType":"complete","tools":[],"ttlMs":1,"cacheScope":"private"}"#,
        );
        assert!(r.tools.is_empty());
        let p = rt::<PaginatedRequestParams>(r#"{"cursor":"c","_meta":{}}"#);
        assert_eq!(p.cursor.as_deref(), Some("c"));
        let p = rt::<CallToolRequestParams>(
            r#"{"name":"echo","arguments":{"text":"hi","n":1.5},"inputResponses":{"k":{"roots":[]}},"requestState":"rs","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{"tools":{}}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"0"},"io.modelcontextprotocol/logLevel":"debug","progressToken":"p","traceparent":"00-abc-def-01"}}"#,
        );
        let m = p.meta.unwrap();
        assert_eq!(m.log_level().unwrap().unwrap(), LoggingLevel::Debug);
        assert_eq!(m.traceparent(), Some("00-abc-def-01"));
        assert!(
            m.client_capabilities()
                .unwrap()
                .unwrap()
                .sampling
                .unwrap()
                .tools
                .is_some()
        );
        assert_eq!(p.arguments.unwrap()["n"], json!(1.5));
    }
}

mod capabilities {
    use super::*;

    #[test]
    fn client_capabilities() {
        let c = rt::<ClientCapabilities>(
            r#"{"elicitation":{"form":{},"url":{}},"sampling":{"context":{},"tools":{}},"roots":{},"experimental":{"x":{"a":1}},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}}}"#,
        );
        assert_eq!(c.declared_names(), vec!["elicitation", "sampling", "roots"]);
        let e = c.elicitation.unwrap();
        assert!(e.supports_form() && e.supports_url());
        let only_url = rt::<ElicitationCapability>(r#"{"url":{}}"#);
        assert!(!only_url.supports_form());
        let implicit = rt::<ElicitationCapability>("{}");
        assert!(implicit.supports_form() && !implicit.supports_url());
    }

    #[test]
    fn server_capabilities_and_discover() {
        let r = rt::<DiscoverResult>(
            r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true,"listChanged":false},"completions":{},"logging":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"instructions":"Use get_weather.","ttlMs":3600000,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","title":"S","version":"1.0","description":"d","websiteUrl":"https://s.test","icons":[{"src":"https://s.test/i.png"}]}}}"#,
        );
        assert_eq!(r.capabilities.tools.unwrap().list_changed, Some(true));
        assert_eq!(r.capabilities.resources.unwrap().subscribe, Some(true));
        let info = r.meta.unwrap().server_info().unwrap().unwrap();
        assert_eq!(info.website_url.as_deref(), Some("https://s.test"));
        let p = rt::<RequestParams>(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        assert_eq!(
            p.meta.unwrap().protocol_version(),
            Some(LATEST_PROTOCOL_VERSION)
        );
    }

    #[test]
    fn error_object() {
        let e = rt::<ErrorObject>(r#"{"code":-32602,"message":"Invalid cursor","data":null}"#);
        assert_eq!(e.code, code::INVALID_PARAMS);
        assert_eq!(e.data, Some(Value::Null));
        let e = rt::<ErrorObject>(r#"{"code":-32603,"message":"x"}"#);
        assert_eq!(e.data, None);
    }
}
