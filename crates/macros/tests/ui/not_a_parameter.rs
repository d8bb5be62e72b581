use toolwire::tool;

/// Says when it was called.
#[tool]
async fn when(started: std::time::Instant) -> String {
    format!("{started:?}")
}

fn main() {}
