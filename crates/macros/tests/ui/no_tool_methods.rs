use toolwire::tools;

struct Clock;

#[tools]
impl Clock {
    fn helper(&self) {}
}

fn main() {}
