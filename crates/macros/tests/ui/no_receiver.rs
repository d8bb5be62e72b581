use toolwire::tools;

struct Clock;

#[tools]
impl Clock {
    /// Says the time.
    #[tool]
    async fn now() -> String {
        "noon".to_owned()
    }
}

fn main() {}
