//! A small server with three tools: plain text, structured output, progress.
//!
//! Run it over stdio:
//!
//! ```sh
//! cargo run -p toolwire-examples --bin quickstart
//! ```
//!
//! or over Streamable HTTP, at `http://127.0.0.1:8080/mcp`:
//!
//! ```sh
//! cargo run -p toolwire-examples --bin quickstart -- --http 127.0.0.1:8080
//! ```

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolwire::server::{RequestContext, Server, Structured, ToolBuilder, ToolError};

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The numbers to summarise (at least one).
    numbers: Vec<f64>,
}

#[derive(Serialize, JsonSchema)]
struct Stats {
    count: usize,
    mean: f64,
    min: f64,
    max: f64,
}

#[derive(Deserialize, JsonSchema)]
struct CountdownArgs {
    /// Seconds to count down from (1 to 60).
    seconds: u32,
    /// Milliseconds per step (default 1000).
    #[serde(default)]
    step_ms: Option<u64>,
}

async fn greet(args: GreetArgs, _cx: RequestContext) -> String {
    format!("Hello, {}!", args.name)
}

async fn stats(args: StatsArgs, _cx: RequestContext) -> Result<Structured<Stats>, ToolError> {
    let numbers = args.numbers;
    if numbers.is_empty() {
        return Err(ToolError::new("numbers must contain at least one number"));
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
    let step = Duration::from_millis(args.step_ms.unwrap_or(1000));
    let total = f64::from(args.seconds);
    for done in 1..=args.seconds {
        tokio::select! {
            _ = tokio::time::sleep(step) => {}
            _ = cx.cancellation().cancelled() => return Err(ToolError::new("cancelled")),
        }
        let left = args.seconds - done;
        cx.progress(f64::from(done), Some(total), Some(&format!("{left} left")))
            .await;
    }
    Ok("Lift-off!".to_owned())
}

fn build_server() -> Server {
    Server::builder("quickstart", env!("CARGO_PKG_VERSION"))
        .instructions("Three demo tools: greet, stats and countdown.")
        .tool(
            ToolBuilder::new("greet")
                .description("Greets someone by name")
                .handler(greet),
        )
        .tool(
            ToolBuilder::new("stats")
                .description("Count, mean, min and max of a list of numbers")
                .handler(stats),
        )
        .tool(
            ToolBuilder::new("countdown")
                .description("Counts down, reporting progress each step")
                .handler(countdown),
        )
        .build()
        .expect("the quickstart tools are valid")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    toolwire_examples::serve_args::serve("quickstart", build_server).await
}
