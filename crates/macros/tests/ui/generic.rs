use toolwire::tool;

/// Echoes anything.
#[tool]
async fn echo<T: Default>() -> String {
    String::new()
}

fn main() {}
