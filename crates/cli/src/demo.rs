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
    SamplingMessage, TextContent, ToolAnnotations,
};
use toolwire::server::{
    Handles, NoArgs, PromptBuilder, RateLimit, RegistrationError, RequestContext, ResourceBuilder,
    Server, ServerBuilder, Structured, ToolBuilder, ToolError, text_contents,
};
use toolwire_redis::{RedisChangeFeed, RedisConnection, RedisHandles, RedisRateLimits};

use extras::{Extras, toggle_tool};

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
    seconds: u32,
    /// Milliseconds per step (10 to 5000, default 1000).
    #[serde(default)]
    step_ms: Option<u64>,
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

fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..Default::default()
    }
}

async fn echo(args: EchoArgs, _cx: RequestContext) -> String {
    args.text
}

async fn stats(args: StatsArgs, _cx: RequestContext) -> Result<Structured<Stats>, ToolError> {
    let numbers = args.numbers;
    if numbers.is_empty() {
        return Err(ToolError::new(
            "numbers must contain at least one number, e.g. [1, 2, 3]",
        ));
    }
    let count = numbers.len();
    let min = numbers.iter().copied().fold(f64::INFINITY, f64::min);
    let max = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = numbers.iter().sum::<f64>() / count as f64;
    Ok(Structured(Stats {
        count,
        mean,
        min,
        max,
    }))
}

async fn countdown(args: CountdownArgs, cx: RequestContext) -> Result<String, ToolError> {
    if !(1..=60).contains(&args.seconds) {
        return Err(ToolError::new("seconds must be between 1 and 60"));
    }
    let step_ms = args.step_ms.unwrap_or(1000);
    if !(10..=5000).contains(&step_ms) {
        return Err(ToolError::new("step_ms must be between 10 and 5000"));
    }
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

/// Asks for confirmation in a form; the answer arrives with the retry.
async fn delete_file(args: DeleteArgs, cx: RequestContext) -> Result<String, ToolError> {
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

/// Asks the client's model for a one-sentence summary.
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

/// Asks the client where it lets the server work.
async fn show_roots(_: NoArgs, cx: RequestContext) -> Result<String, ToolError> {
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
    sku: String,
    /// How many (1 to 99, default 1).
    #[serde(default)]
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

/// The basket tools: state carried by an explicit handle (`basket_id`),
/// bound to the caller and forgotten after a time without use.
fn basket_tools(baskets: &Handles<Basket>) -> Vec<ToolBuilder> {
    let create = {
        let baskets = baskets.clone();
        move |_: NoArgs, cx: RequestContext| {
            let baskets = baskets.clone();
            async move {
                let basket_id = baskets.create(&cx, Basket::default()).await?;
                Ok::<_, ToolError>(Structured(CreatedBasket { basket_id }))
            }
        }
    };
    let add = {
        let baskets = baskets.clone();
        move |args: AddItemArgs, cx: RequestContext| {
            let baskets = baskets.clone();
            async move {
                let quantity = args.quantity.unwrap_or(1);
                if !(1..=99).contains(&quantity) {
                    return Err(ToolError::new("quantity must be between 1 and 99"));
                }
                if args.sku.trim().is_empty() || args.sku.len() > 64 {
                    return Err(ToolError::new("sku must be 1 to 64 characters"));
                }
                let id = args.basket_id.clone();
                let sku = args.sku.trim().to_owned();
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
        }
    };
    let show = {
        let baskets = baskets.clone();
        move |args: BasketArgs, cx: RequestContext| {
            let baskets = baskets.clone();
            async move {
                let basket = baskets.get(&cx, &args.basket_id).await?;
                Ok::<_, ToolError>(Structured(view(&args.basket_id, &basket)))
            }
        }
    };
    let checkout = {
        let baskets = baskets.clone();
        move |args: BasketArgs, cx: RequestContext| {
            let baskets = baskets.clone();
            async move {
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
        }
    };
    let writes = ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(false),
        open_world_hint: Some(false),
        ..Default::default()
    };
    vec![
        baskets.describe(
            ToolBuilder::new("create_basket")
                .description("Creates an empty shopping basket and returns its basket_id.")
                .annotations(writes.clone())
                .handler(create),
        ),
        ToolBuilder::new("add_item")
            .description("Adds a product to a basket")
            .annotations(writes)
            .handler(add),
        ToolBuilder::new("view_basket")
            .description("Shows what a basket holds")
            .annotations(read_only())
            .handler(show),
        ToolBuilder::new("checkout")
            .description("Orders what a basket holds and closes the basket (pretend)")
            .annotations(ToolAnnotations {
                read_only_hint: Some(false),
                destructive_hint: Some(true),
                open_world_hint: Some(false),
                ..Default::default()
            })
            .handler(checkout),
    ]
}

const ABOUT: &str = "# The toolwire demo server\n\n\
Tools: echo (text), stats (structured output), countdown (progress and logs), \
delete_file (asks for confirmation), summarize (sampling), show_roots (roots), and a \
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
    let mut baskets = Handles::<Basket>::new("bsk", "basket").created_by("create_basket");
    if let Some(ttl) = options.handle_ttl {
        baskets = baskets.idle_timeout(ttl);
    }
    if let Some(redis) = &options.redis {
        baskets = baskets.store(Arc::new(RedisHandles::new(redis.clone(), "baskets")));
    }
    let mut tools = vec![
        ToolBuilder::new("echo")
            .description("Echoes the text back")
            .annotations(ToolAnnotations {
                idempotent_hint: Some(true),
                ..read_only()
            })
            .handler(echo),
        ToolBuilder::new("stats")
            .description("Count, mean, min and max of a list of numbers (structured output)")
            .annotations(read_only())
            .handler(stats),
        ToolBuilder::new("countdown")
            .description("Counts down, reporting progress each step")
            .annotations(read_only())
            .handler(countdown),
        ToolBuilder::new("delete_file")
            .description(
                "Deletes a file after asking the user to confirm (pretend: nothing is deleted)",
            )
            .annotations(ToolAnnotations {
                read_only_hint: Some(false),
                destructive_hint: Some(true),
                idempotent_hint: Some(true),
                open_world_hint: Some(false),
                ..Default::default()
            })
            .handler(delete_file),
        ToolBuilder::new("summarize")
            .description("Summarises text with the client's model (sampling)")
            .annotations(read_only())
            .handler(summarize),
        ToolBuilder::new("show_roots")
            .description("Lists the roots the client shares")
            .annotations(read_only())
            .handler(show_roots),
    ];
    tools.extend(basket_tools(&baskets));
    tools.push(toggle_tool(&extras));
    let mut builder = toolwire::server::Server::builder("toolwire-demo", env!("CARGO_PKG_VERSION"))
        .title("toolwire demo")
        .instructions(
            "A demo of MCP. echo repeats text; stats summarises numbers \
             (structured output); countdown reports progress; delete_file asks the user \
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
