use toolwire::tools;

struct Counter {
    hits: u64,
}

#[tools]
impl Counter {
    /// Counts a hit.
    #[tool]
    async fn hit(&mut self) -> String {
        self.hits += 1;
        self.hits.to_string()
    }
}

fn main() {}
