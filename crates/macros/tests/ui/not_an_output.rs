use toolwire::tool;

/// Returns a number the protocol cannot show.
#[tool]
async fn count() -> std::time::Instant {
    std::time::Instant::now()
}

fn main() {}
