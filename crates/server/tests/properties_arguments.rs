//! Property tests of argument validation over real `tools/call` dispatch
//! (issue 21): arguments valid for a tool's `inputSchema` always reach the
//! handler, exactly as sent; invalid ones never do, and the caller gets a
//! tool execution error (`isError`) or `-32602`.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolwire_protocol::JsonObject;
use toolwire_server::{Server, ToolBuilder};

const MODES: [&str; 3] = ["fast", "safe", "dry-run"];

fn schema() -> JsonObject {
    as_object(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 16, "pattern": "^[a-z][a-z0-9_-]*$"},
            "count": {"type": "integer", "minimum": 1, "maximum": 100},
            "mode": {"type": "string", "enum": MODES},
            "verbose": {"type": "boolean"},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "target": {
                "type": "object",
                "properties": {
                    "host": {"type": "string", "minLength": 1, "maxLength": 32},
                    "port": {"type": "integer", "minimum": 1, "maximum": 65535}
                },
                "required": ["host"],
                "additionalProperties": false
            },
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 4}
        },
        "required": ["name", "count", "mode"],
        "additionalProperties": false
    }))
}

type Calls = Arc<Mutex<Vec<JsonObject>>>;

/// A server whose tool `configure` records every arguments object it gets.
fn server() -> (Server, Calls) {
    let calls: Calls = Arc::default();
    let seen = Arc::clone(&calls);
    let tool = ToolBuilder::new("configure").raw_handler(schema(), move |args, _cx| {
        seen.lock().unwrap().push(args);
        async { "configured" }
    });
    let server = Server::builder("args", "1")
        .no_tool_call_limit()
        .tool(tool)
        .build()
        .unwrap();
    (server, calls)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn call_with(server: &Server, arguments: &JsonObject) -> Value {
    call(
        server,
        request(
            1,
            "tools/call",
            json!({"name": "configure", "arguments": arguments}),
        ),
    )
    .await
}

/// Arguments valid by construction, with optional fields present or not.
fn valid() -> impl Strategy<Value = JsonObject> {
    let target =
        ("[ -~\u{e9}\u{4e16}]{1,32}", prop::option::of(1i64..=65535)).prop_map(|(host, port)| {
            let mut t = json!({"host": host});
            if let Some(port) = port {
                t["port"] = json!(port);
            }
            t
        });
    (
        "[a-z][a-z0-9_-]{0,15}",
        1i64..=100,
        prop::sample::select(&MODES[..]),
        prop::option::of(any::<bool>()),
        prop::option::of(1u32..=1000),
        prop::option::of(target),
        prop::option::of(prop::collection::vec("[a-z0-9]{0,8}", 0..=4)),
    )
        .prop_map(|(name, count, mode, verbose, ratio, target, tags)| {
            let mut args = as_object(json!({"name": name, "count": count, "mode": mode}));
            let optional = [
                ("verbose", verbose.map(Value::from)),
                ("ratio", ratio.map(|r| json!(f64::from(r) / 1000.0))),
                ("target", target),
                ("tags", tags.map(Value::from)),
            ];
            for (key, value) in optional {
                if let Some(value) = value {
                    args.insert(key.to_owned(), value);
                }
            }
            args
        })
}

/// A value of a JSON type other than `keep`.
fn wrong_type(keep: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(("null", Value::Null)),
        any::<bool>().prop_map(|b| ("boolean", Value::from(b))),
        any::<i32>().prop_map(|n| ("integer", Value::from(n))),
        (-1e6f64..1e6)
            .prop_filter("a fraction", |x| x.fract() != 0.0)
            .prop_map(|x| ("number", json!(x))),
        "[a-z0-9]{0,6}".prop_map(|s| ("string", Value::from(s))),
        Just(("array", json!([1]))),
        Just(("object", json!({"a": 1}))),
    ]
    .prop_filter("another type", move |(kind, _)| !keep.contains(kind))
    .prop_map(|(_, value)| value)
}

/// One way to make valid arguments invalid.
#[derive(Debug, Clone)]
enum Fault {
    /// A required field left out.
    Missing(&'static str),
    /// A field of the wrong type.
    Set(&'static str, Value),
    /// A field in `target` set to this value (`None`: `host` left out).
    Target(Option<(&'static str, Value)>),
    /// A property the schema does not know, at the top level.
    Extra(String, Value),
}

fn fault() -> impl Strategy<Value = Fault> {
    let name_bad = prop_oneof![
        "[a-z][a-z0-9_-]{16,24}",       // too long
        "[0-9A-Z_-][a-z0-9_-]{0,10}",   // bad first character
        "[a-z]{1,4}[ .A-Z/][a-z]{0,4}", // bad character later
        Just(String::new()),
    ];
    prop_oneof![
        prop::sample::select(&["name", "count", "mode"][..]).prop_map(Fault::Missing),
        wrong_type(&["string"]).prop_map(|v| Fault::Set("name", v)),
        name_bad.prop_map(|s| Fault::Set("name", json!(s))),
        wrong_type(&["integer"]).prop_map(|v| Fault::Set("count", v)),
        prop_oneof![i64::MIN..1, 101..i64::MAX].prop_map(|n| Fault::Set("count", json!(n))),
        "[a-z-]{0,8}"
            .prop_filter("not a mode", |m| !MODES.contains(&m.as_str()))
            .prop_map(|m| Fault::Set("mode", json!(m))),
        wrong_type(&["string"]).prop_map(|v| Fault::Set("mode", v)),
        wrong_type(&["boolean"]).prop_map(|v| Fault::Set("verbose", v)),
        prop_oneof![-1e9f64..=0.0, 1.000_001f64..1e9].prop_map(|x| Fault::Set("ratio", json!(x))),
        wrong_type(&["integer", "number"]).prop_map(|v| Fault::Set("ratio", v)),
        wrong_type(&["object"]).prop_map(|v| Fault::Set("target", v)),
        Just(Fault::Target(None)),
        Just(Fault::Target(Some(("host", json!(""))))),
        "[a-z]{33,40}".prop_map(|h| Fault::Target(Some(("host", json!(h))))),
        prop_oneof![i64::MIN..1, 65536..i64::MAX]
            .prop_map(|p| Fault::Target(Some(("port", json!(p))))),
        wrong_type(&["string"]).prop_map(|v| Fault::Target(Some(("extra", v)))),
        wrong_type(&["array"]).prop_map(|v| Fault::Set("tags", v)),
        prop::collection::vec("[a-z]{0,8}", 5..8).prop_map(|t| Fault::Set("tags", json!(t))),
        "[a-z]{9,12}".prop_map(|t| Fault::Set("tags", json!([t]))),
        wrong_type(&["string"]).prop_map(|v| Fault::Set("tags", json!([v]))),
        ("[a-z_]{1,8}", wrong_type(&[]))
            .prop_filter("unknown", |(k, _)| !schema()["properties"]
                .as_object()
                .unwrap()
                .contains_key(k))
            .prop_map(|(k, v)| Fault::Extra(k, v)),
    ]
}

impl Fault {
    /// What the error must name: the path of the faulty value, or the key.
    fn named(&self) -> String {
        match self {
            Fault::Missing(key) => format!("\"{key}\""),
            Fault::Set(key, _) => format!("/{key}"),
            Fault::Target(_) => "/target".to_owned(),
            Fault::Extra(key, _) => format!("'{key}'"),
        }
    }
}

fn apply(mut args: JsonObject, fault: &Fault) -> JsonObject {
    match fault {
        Fault::Missing(key) => {
            args.remove(*key);
        }
        Fault::Set(key, value) => {
            args.insert((*key).to_owned(), value.clone());
        }
        Fault::Target(change) => {
            let mut target = as_object(json!({"host": "example.org", "port": 443}));
            match change {
                None => {
                    target.remove("host");
                }
                Some((key, value)) => {
                    target.insert((*key).to_owned(), value.clone());
                }
            }
            args.insert("target".to_owned(), Value::Object(target));
        }
        Fault::Extra(key, value) => {
            args.insert(key.clone(), value.clone());
        }
    }
    args
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Valid arguments reach the handler once, exactly as sent, and the
    /// call completes.
    #[test]
    fn valid_arguments_reach_the_handler(args in valid()) {
        runtime().block_on(async {
            let (s, calls) = server();
            let response = call_with(&s, &args).await;
            let r = &response["result"];
            prop_assert_eq!(&r["content"][0]["text"], "configured", "{}", response);
            prop_assert!(r.get("isError").is_none_or(|e| e == false), "{}", response);
            prop_assert_eq!(&*calls.lock().unwrap(), &vec![args.clone()]);
            Ok(())
        })?;
    }

    /// Arguments with one fault never reach the handler; the caller gets a
    /// tool execution error naming the tool and where the fault is, or -32602.
    #[test]
    fn invalid_arguments_never_reach_the_handler(args in valid(), fault in fault()) {
        runtime().block_on(async {
            let (s, calls) = server();
            let args = apply(args, &fault);
            let response = call_with(&s, &args).await;
            prop_assert!(calls.lock().unwrap().is_empty(), "handler called with {:?}", args);
            if let Some(error) = response.get("error") {
                prop_assert_eq!(&error["code"], -32602, "{}", response);
            } else {
                let r = &response["result"];
                prop_assert_eq!(&r["isError"], true, "{}", response);
                let text = r["content"][0]["text"].as_str().unwrap_or_default();
                prop_assert!(text.contains("configure"), "{}", response);
                prop_assert!(text.contains(&fault.named()), "{} does not name {}", response, fault.named());
            }
            Ok(())
        })?;
    }
}
