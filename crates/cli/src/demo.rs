//! The built-in demo server of `toolwire serve`: one tool per idea of the
//! protocol (plain text, structured output, progress and logs, confirmation
//! through a multi round-trip request, sampling, roots, state behind a
//! handle, a tool list that changes at run time), plus a resource and a
//! prompt. `toggle_extras` is in [`extras`].

mod extras;

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolwire::protocol::{
    CreateMessageRequestParams, ElicitAction, LoggingLevel, PromptMessage, Role, SamplingContent,
    SamplingMessage, TextContent,
};
use toolwire::server::{
    Handles, PromptBuilder, RateLimit, RegistrationError, RequestContext, ResourceBuilder, Server,
    ServerBuilder, State, Structured, TaskSupport, ToolError, text_contents,
};
use toolwire::tool;
use toolwire_redis::{RedisChangeFeed, RedisConnection, RedisHandles, RedisRateLimits};

use extras::{Extras, toggle_extras_tool};

/// What `serve`'s switches change in the demo.
#[derive(Debug, Clone, Default)]
pub struct DemoOptions {
    /// Calls of each tool allowed per principal (`--rate-limit`).
    pub rate_limit: Option<RateLimit>,
    /// How long an unused basket lives (`--handle-ttl`); default 30 minutes.
    pub handle_ttl: Option<Duration>,
    /// Tokens are in use (`--token`): `delete_file` then needs the scope
    /// [`DELETE_SCOPE`].
    pub scopes: bool,
    /// Baskets, rate-limit buckets and list changes go through this Redis
    /// (`--redis`).
    pub redis: Option<RedisConnection>,
}

/// The scope `delete_file` needs when the server authenticates.
pub const DELETE_SCOPE: &str = "delete";

/// The URI of the demo's one resource.
pub const ABOUT_URI: &str = "toolwire://demo/about";

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The numbers to summarise (at least one).
    #[schemars(length(min = 1))]
    numbers: Vec<f64>,
}

#[derive(Serialize, JsonSchema)]
struct Stats {
    /// How many numbers there are.
    count: usize,
    /// Their arithmetic mean.
    mean: f64,
    /// The smallest.
    min: f64,
    /// The largest.
    max: f64,
}

#[derive(Deserialize, JsonSchema)]
struct CountdownArgs {
    /// Seconds to count down from (1 to 60).
    #[schemars(range(min = 1, max = 60))]
    seconds: u32,
    /// Milliseconds per step (10 to 5000, default 1000).
    #[serde(default)]
    #[schemars(range(min = 10, max = 5000))]
    step_ms: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
struct BuildReportArgs {
    /// How long the report takes to build, in seconds (1 to 600).
    #[schemars(range(min = 1, max = 600))]
    seconds: u32,
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to delete (nothing is really deleted: this is a demo).
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The text to summarise.
    text: String,
}

/// Echoes the text back
#[tool(read_only, idempotent, open_world = false)]
async fn echo(args: EchoArgs) -> String {
    args.text
}

/// Count, mean, min and max of a list of numbers (structured output)
#[tool(read_only, open_world = false)]
async fn stats(args: StatsArgs) -> Structured<Stats> {
    let numbers = args.numbers;
    let count = numbers.len();
    let min = numbers.iter().copied().fold(f64::INFINITY, f64::min);
    let max = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = numbers.iter().sum::<f64>() / count as f64;
    Structured(Stats {
        count,
        mean,
        min,
        max,
    })
}

/// Counts down, reporting progress each step
#[tool(read_only, open_world = false)]
async fn countdown(args: CountdownArgs, cx: RequestContext) -> Result<String, ToolError> {
    let step_ms = args.step_ms.unwrap_or(1000);
    cx.log(
        LoggingLevel::Info,
        Some("countdown"),
        format!("counting down from {}", args.seconds),
    )
    .await;
    let total = f64::from(args.seconds);
    for done in 1..=args.seconds {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(step_ms)) => {}
            _ = cx.cancellation().cancelled() => return Err(ToolError::new("cancelled")),
        }
        let left = args.seconds - done;
        cx.progress(f64::from(done), Some(total), Some(&format!("{left} left")))
            .await;
    }
    Ok("Lift-off!".to_owned())
}

/// Builds a report that takes a while (one section a second). A client that
/// supports the Tasks extension gets a task to poll instead of holding the
/// request open
#[tool(read_only, open_world = false)]
async fn build_report(args: BuildReportArgs, cx: RequestContext) -> Result<String, ToolError> {
    let seconds = args.seconds.clamp(1, 600);
    let total = f64::from(seconds);
    for done in 1..=seconds {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = cx.cancellation().cancelled() => {
                return Err(ToolError::new("the report was cancelled"));
            }
        }
        let message = format!("section {done} of {seconds} written");
        cx.progress(f64::from(done), Some(total), Some(&message))
            .await;
    }
    let plural = if seconds == 1 { "" } else { "s" };
    Ok(format!("Report ready: {seconds} section{plural}."))
}

/// Deletes a file after asking the user to confirm (pretend: nothing is deleted)
#[tool(read_only = false, destructive, idempotent, open_world = false)]
async fn delete_file(args: DeleteArgs, cx: RequestContext) -> Result<String, ToolError> {
    // Asks for confirmation in a form; the answer arrives with the retry.
    let schema = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Really delete?"}},
        "required": ["confirm"]
    });
    let answer = cx.elicit_form("confirm", &format!("Delete {}?", args.path), schema)?;
    let confirmed = answer.action == ElicitAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("confirm"))
            .and_then(|v| v.as_bool())
            == Some(true);
    Ok(match (answer.action, confirmed) {
        (_, true) => format!(
            "Deleted {} (pretend: the demo never touches your files)",
            args.path
        ),
        (ElicitAction::Cancel, _) => format!("Cancelled: kept {}", args.path),
        _ => format!("Kept {}", args.path),
    })
}

/// Summarises text with the client's model (sampling)
#[tool(read_only, open_world = false)]
async fn summarize(args: SummarizeArgs, cx: RequestContext) -> Result<String, ToolError> {
    let question = SamplingMessage::new(
        Role::User,
        SamplingContent::Text(TextContent {
            text: format!("Summarise in one sentence:\n\n{}", args.text),
            ..Default::default()
        }),
    );
    let mut params = CreateMessageRequestParams::new(vec![question], 200);
    params.system_prompt = Some("You write short, plain summaries.".to_owned());
    let answer = cx.sample("summary", params)?;
    let text: Vec<String> = answer
        .content
        .as_slice()
        .iter()
        .filter_map(|c| match c {
            SamplingContent::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    Ok(format!("Summary (by {}): {}", answer.model, text.join(" ")))
}

/// Lists the roots the client shares
#[tool(read_only, open_world = false)]
async fn show_roots(cx: RequestContext) -> Result<String, ToolError> {
    let roots = cx.list_roots("roots")?;
    if roots.roots.is_empty() {
        return Ok("The client shares no roots.".to_owned());
    }
    let lines: Vec<String> = roots
        .roots
        .iter()
        .map(|r| match &r.name {
            Some(name) => format!("{} ({name})", r.uri),
            None => r.uri.clone(),
        })
        .collect();
    Ok(format!("The client's roots:\n{}", lines.join("\n")))
}

/// A shopping basket: product codes and quantities, in the order added.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Basket {
    lines: Vec<(String, u32)>,
}

#[derive(Deserialize, JsonSchema)]
struct BasketArgs {
    /// The basket's id, as create_basket returned it (e.g. bsk_...).
    basket_id: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddItemArgs {
    /// The basket's id, as create_basket returned it (e.g. bsk_...).
    basket_id: String,
    /// The product code, e.g. "apple".
    #[schemars(length(min = 1, max = 64))]
    sku: String,
    /// How many (1 to 99, default 1).
    #[serde(default)]
    #[schemars(range(min = 1, max = 99))]
    quantity: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct CreatedBasket {
    /// Pass this to add_item, view_basket and checkout.
    basket_id: String,
}

#[derive(Serialize, JsonSchema)]
struct BasketLine {
    sku: String,
    quantity: u32,
}

#[derive(Serialize, JsonSchema)]
struct BasketView {
    basket_id: String,
    items: Vec<BasketLine>,
    /// The sum of the quantities.
    total_quantity: u32,
}

fn view(basket_id: &str, basket: &Basket) -> BasketView {
    BasketView {
        basket_id: basket_id.to_owned(),
        items: basket
            .lines
            .iter()
            .map(|(sku, quantity)| BasketLine {
                sku: sku.clone(),
                quantity: *quantity,
            })
            .collect(),
        total_quantity: basket.lines.iter().map(|(_, q)| q).sum(),
    }
}

/// The baskets, each behind an explicit handle (`basket_id`), bound to the
/// caller and forgotten after a time without use.
type Baskets = Handles<Basket>;

/// Creates an empty shopping basket and returns its basket_id.
#[tool(read_only = false, destructive = false, open_world = false)]
async fn create_basket(
    State(baskets): State<Baskets>,
    cx: RequestContext,
) -> Result<Structured<CreatedBasket>, ToolError> {
    let basket_id = baskets.create(&cx, Basket::default()).await?;
    Ok(Structured(CreatedBasket { basket_id }))
}

/// Adds a product to a basket
#[tool(read_only = false, destructive = false, open_world = false)]
async fn add_item(
    State(baskets): State<Baskets>,
    args: AddItemArgs,
    cx: RequestContext,
) -> Result<Structured<BasketView>, ToolError> {
    let quantity = args.quantity.unwrap_or(1);
    let sku = args.sku.trim().to_owned();
    if sku.is_empty() {
        return Err(ToolError::new("sku must not be blank"));
    }
    let id = args.basket_id.clone();
    let shown = baskets
        .with(&cx, &args.basket_id, move |basket| {
            match basket.lines.iter_mut().find(|(s, _)| *s == sku) {
                Some((_, q)) => *q = q.saturating_add(quantity),
                None => basket.lines.push((sku, quantity)),
            }
            view(&id, basket)
        })
        .await?;
    Ok(Structured(shown))
}

/// Shows what a basket holds
#[tool(read_only, open_world = false)]
async fn view_basket(
    State(baskets): State<Baskets>,
    args: BasketArgs,
    cx: RequestContext,
) -> Result<Structured<BasketView>, ToolError> {
    let basket = baskets.get(&cx, &args.basket_id).await?;
    Ok(Structured(view(&args.basket_id, &basket)))
}

/// Orders what a basket holds and closes the basket (pretend)
#[tool(read_only = false, destructive, open_world = false)]
async fn checkout(
    State(baskets): State<Baskets>,
    args: BasketArgs,
    cx: RequestContext,
) -> Result<String, ToolError> {
    let basket = baskets.get(&cx, &args.basket_id).await?;
    if basket.lines.is_empty() {
        return Err(ToolError::new(
            "the basket is empty: add items with add_item first",
        ));
    }
    baskets.remove(&cx, &args.basket_id).await?;
    let total: u32 = basket.lines.iter().map(|(_, q)| q).sum();
    Ok(format!(
        "Checked out {}: {total} item(s) (pretend: nothing is ordered). The basket is closed.",
        args.basket_id
    ))
}

const ABOUT: &str = "# The toolwire demo server\n\n\
Tools: echo (text), stats (structured output), countdown (progress and logs), \
build_report (a long call that runs as a task), delete_file (asks for confirmation), summarize (sampling), show_roots (roots), and a \
shopping basket kept behind an explicit handle: create_basket, add_item, view_basket, checkout; \
and toggle_extras, which adds or removes extra_tool for everyone (watch list_changed).\n";

/// The demo server before it is built: its builder, which `serve` may still
/// configure, and what `toggle_extras` needs once the server exists.
pub struct Demo {
    /// The server's tools, resource and prompt.
    pub builder: ServerBuilder,
    extras: Arc<Extras>,
}

impl Demo {
    /// Builds the server and hands it to `toggle_extras`; under `--redis`
    /// it then follows the shared flag (call it within the Tokio runtime).
    pub fn build(self) -> Result<Server, RegistrationError> {
        let server = self.builder.build()?;
        self.extras.start(&server);
        Ok(server)
    }
}

/// The demo server's tools, resource and prompt.
pub fn demo(options: &DemoOptions) -> Demo {
    let extras = Extras::new(options.rate_limit, options.redis.as_ref());
    let mut baskets = Baskets::new("bsk", "basket").created_by("create_basket");
    if let Some(ttl) = options.handle_ttl {
        baskets = baskets.idle_timeout(ttl);
    }
    if let Some(redis) = &options.redis {
        baskets = baskets.store(Arc::new(RedisHandles::new(redis.clone(), "baskets")));
    }
    let tools = [
        echo_tool(),
        stats_tool(),
        countdown_tool(),
        delete_file_tool(),
        summarize_tool(),
        show_roots_tool(),
        baskets.describe(create_basket_tool()),
        add_item_tool(),
        view_basket_tool(),
        checkout_tool(),
        toggle_extras_tool(),
        build_report_tool().task_support(TaskSupport::Optional),
    ];
    let mut builder = toolwire::server::Server::builder("toolwire-demo", env!("CARGO_PKG_VERSION"))
        .title("toolwire demo")
        .state(baskets)
        .state(Arc::clone(&extras))
        .instructions(
            "A demo of MCP. echo repeats text; stats summarises numbers \
             (structured output); countdown reports progress; build_report takes a while \
             and runs as a task for clients that support tasks; delete_file asks the user \
             to confirm (nothing is really deleted); summarize asks the client's model; \
             show_roots lists the client's roots; create_basket, add_item, view_basket and \
             checkout keep a basket behind the basket_id handle; toggle_extras adds or \
             removes extra_tool for every client, so the tool list changes.",
        )
        .resource(
            ResourceBuilder::new(ABOUT_URI, "about")
                .description("What this demo server offers")
                .mime_type("text/markdown")
                .handler(|_request, _cx| async {
                    Ok(vec![text_contents(ABOUT_URI, "text/markdown", ABOUT)])
                }),
        )
        .prompt(
            PromptBuilder::new("greet")
                .description("A friendly greeting")
                .argument("name", "Who to greet", true)
                .handler(|args, _cx| async move {
                    let name = args.get("name").cloned().unwrap_or_default();
                    Ok(vec![PromptMessage::text(
                        Role::User,
                        format!("Say hello to {name} in one friendly sentence."),
                    )])
                }),
        );
    for mut tool in tools {
        if let Some(limit) = options.rate_limit {
            tool = tool.rate_limit(limit);
        }
        if options.scopes && tool.definition().name == "delete_file" {
            tool = tool.require_scopes([DELETE_SCOPE]);
        }
        builder = builder.tool(tool);
    }
    if let Some(redis) = &options.redis {
        builder = builder
            .rate_limit_store(Arc::new(RedisRateLimits::new(redis.clone())))
            .change_feed(Arc::new(RedisChangeFeed::new(redis)));
    }
    Demo { builder, extras }
}
