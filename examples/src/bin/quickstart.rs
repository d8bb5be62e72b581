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
use toolwire::server::{RequestContext, Server, Structured, ToolError};
use toolwire::tool;

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The numbers to summarise.
    #[schemars(length(min = 1))]
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
    /// Seconds to count down from.
    #[schemars(range(min = 1, max = 60))]
    seconds: u32,
    /// Milliseconds per step (default 1000).
    #[schemars(range(min = 10, max = 5000))]
    step_ms: Option<u64>,
}

/// Greets someone by name
#[tool(read_only)]
async fn greet(args: GreetArgs) -> String {
    format!("Hello, {}!", args.name)
}

/// Count, mean, min and max of a list of numbers
#[tool(read_only)]
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
#[tool(read_only)]
async fn countdown(args: CountdownArgs, cx: RequestContext) -> Result<String, ToolError> {
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
        .tool(greet_tool())
        .tool(stats_tool())
        .tool(countdown_tool())
        .build()
        .expect("the quickstart tools are valid")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    toolwire_examples::serve_args::serve("quickstart", build_server).await
}
