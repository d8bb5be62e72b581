//! The toolwire server the benchmarks measure (also used by the criterion
//! micro-benchmarks, so both measure the same thing).

use serde::Deserialize;
use toolwire_protocol::JsonObject;
use toolwire_server::{
    Handles, NoArgs, RateLimit, RequestContext, Server, ServerBuilder, ToolBuilder, ToolError,
};

use crate::workload::{Order, order_schema};

/// The arguments of `echo` and `echo_progress`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// The arguments of `bump`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BumpArgs {
    /// The counter's id, as new_counter returned it (cnt_...).
    pub counter_id: String,
}

/// What the toolwire server registers.
#[derive(Debug, Clone, Copy)]
pub struct ToolwireOptions {
    /// Filler tools added after the four real ones (the `tools/list` scenario
    /// uses 96, for 100 in all).
    pub fillers: usize,
    /// `subscriptions/listen` streams allowed (all come from one anonymous
    /// principal); the default of the SDK is 64.
    pub max_listeners: Option<usize>,
    /// Whether `order` and `order_loose` are registered (the `schema`
    /// scenario); without them the server has the same two tools as
    /// rmcp-echo.
    pub order_tools: bool,
}

/// The tools every toolwire and rmcp server has: `echo` and `echo_progress`.
pub const REAL_TOOLS: usize = 2;

/// The toolwire server: `echo` (required string `text`, returned as one text
/// block), `echo_progress` (the same after one progress notification),
/// with `order_tools` also `order` (ten validated arguments) and
/// `order_loose` (the same handler, schema `{"type":"object"}`), plus
/// `fillers` tools that only fill lists.
pub fn toolwire_server(options: ToolwireOptions) -> Server {
    toolwire_builder(options)
        .build()
        .expect("the benchmark tools are valid")
}

/// [`toolwire_server`] before it is built (to change a store, say).
pub fn toolwire_builder(options: ToolwireOptions) -> ServerBuilder {
    let mut builder = Server::builder("toolwire-echo", "0.1.0")
        // One principal sends every request of a load run, far above the
        // default limit (100 calls/s). The limit is raised, not removed, so
        // each call still pays for the bucket check a production server runs.
        .tool_call_limit(RateLimit::per_second(u32::MAX).burst(u32::MAX))
        .tool(
            ToolBuilder::new("echo")
                .description("Echoes the text back")
                .handler(|args: EchoArgs, _cx: RequestContext| async move { args.text }),
        )
        .tool(
            ToolBuilder::new("echo_progress")
                .description("Reports progress once, then echoes the text back")
                .handler(|args: EchoArgs, cx: RequestContext| async move {
                    cx.progress(1.0, Some(1.0), Some("echoing")).await;
                    args.text
                }),
        );
    if options.order_tools {
        builder = builder
            .tool(
                ToolBuilder::new("order")
                    .description("Places an order (arguments checked against a realistic schema)")
                    .raw_handler(object(order_schema()), order_handler),
            )
            .tool(
                ToolBuilder::new("order_loose")
                    .description("Places an order (arguments not checked by a schema)")
                    .raw_handler(object(serde_json::json!({"type": "object"})), order_handler),
            );
    }
    for n in 0..options.fillers {
        builder = builder.tool(
            ToolBuilder::new(format!("filler_{n:03}"))
                .description(filler_description(n))
                .handler(|_: NoArgs, _cx: RequestContext| async { "ok" }),
        );
    }
    if let Some(limit) = options.max_listeners {
        builder = builder.max_subscriptions_per_principal(limit);
    }
    builder
}

/// The counter handles of the `bump` scenario: ids `cnt_…`, in memory until
/// [`Handles::store`] puts them elsewhere (Redis). The load generator opens
/// one per connection and Redis keeps them across server restarts (30
/// minutes), so the per-principal cap is raised far above what a run opens.
pub fn counters() -> Handles<u64> {
    Handles::new("cnt", "counter")
        .created_by("new_counter")
        .max_per_principal(1_000_000)
}

/// `new_counter` (mints a counter handle at 0, answers its id) and `bump`
/// (adds one to the caller's counter `counter_id` and answers the new count):
/// each `bump` is one handle read-modify-write (`Handles::with`).
pub fn counter_tools(counters: &Handles<u64>) -> [ToolBuilder; 2] {
    let create = counters.clone();
    let bump = counters.clone();
    [
        counters.describe(
            ToolBuilder::new("new_counter")
                .description("Creates a counter at 0 and returns its counter_id.")
                .handler(move |_: NoArgs, cx: RequestContext| {
                    let counters = create.clone();
                    async move { counters.create(&cx, 0).await }
                }),
        ),
        ToolBuilder::new("bump")
            .description("Adds one to a counter and returns the new count")
            .handler(move |args: BumpArgs, cx: RequestContext| {
                let counters = bump.clone();
                async move {
                    let bumped = |n: &mut u64| {
                        *n += 1;
                        n.to_string()
                    };
                    counters.with(&cx, &args.counter_id, bumped).await
                }
            }),
    ]
}

/// The description of filler tool `n` (the same for every server).
pub fn filler_description(n: usize) -> String {
    format!("Filler tool {n} of the tools/list benchmark: takes no arguments and answers ok")
}

async fn order_handler(args: JsonObject, _cx: RequestContext) -> Result<String, ToolError> {
    let order: Order = serde_json::from_value(serde_json::Value::Object(args))
        .map_err(|e| ToolError::new(format!("Invalid arguments: {e}")))?;
    Ok(order.reply())
}

fn object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(object) => object,
        _ => unreachable!("schemas here are objects"),
    }
}
