use toolwire::tool;

/// Builds a report.
#[tool(task_support = "sometimes")]
async fn report() -> String {
    String::new()
}

fn main() {}
