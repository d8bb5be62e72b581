use toolwire::tool;

/// Echoes nothing.
#[tool(destructive = "yes")]
async fn echo() -> String {
    String::new()
}

fn main() {}
