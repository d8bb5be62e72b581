use toolwire::tools;

struct Clock;

#[tools(prefix = "clock")]
impl Clock {
    /// Says the time.
    #[tool]
    async fn now(&self) -> String {
        "noon".to_owned()
    }
}

fn main() {}
