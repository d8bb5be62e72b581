use toolwire::tool;

/// Echoes nothing.
#[tool(readonly)]
async fn echo() -> String {
    String::new()
}

fn main() {}
