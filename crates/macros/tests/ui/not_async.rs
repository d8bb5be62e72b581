use toolwire::tool;

/// Echoes nothing.
#[tool]
fn echo() -> String {
    String::new()
}

fn main() {}
