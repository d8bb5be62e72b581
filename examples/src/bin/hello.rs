use toolwire::server::{Server, stdio::serve_stdio};
use toolwire::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// Greets someone by name.
#[tool(read_only)]
async fn greet(args: Greet) -> String {
    format!("Hello, {}!", args.name)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let server = Server::builder("hello", "1.0.0")
        .tool(greet_tool())
        .build()
        .unwrap();
    serve_stdio(server).await
}
