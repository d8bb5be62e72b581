use toolwire::tool;

#[tool(read_only)]
async fn echo() -> String {
    String::new()
}

fn main() {}
