use toolwire::tool;

struct Clock;

impl Clock {
    /// Says the time.
    #[tool]
    async fn now(&self) -> String {
        "noon".to_owned()
    }
}

fn main() {}
