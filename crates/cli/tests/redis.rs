//! `toolwire serve --redis URL`: two instances on one Redis (a
//! `redis-server` of the test's own on a loopback port) share baskets and
//! rate limits; an unreachable Redis is refused at start.

#[path = "../../redis/tests/support/mod.rs"]
mod redis_support;
mod support;

use redis_support::RedisServer;
use support::{Served, closed_port, toolwire};

fn call(url: &str, args: &[&str]) -> support::Ran {
    let mut all = vec!["call", url];
    all.extend(args);
    all.extend(["--yes", "--json"]);
    toolwire(&all, "")
}

/// Calls `create_basket` on `url` and returns the new basket's id.
fn create_basket(url: &str) -> String {
    let created = call(url, &["create_basket"]);
    created.expect_code(0);
    created.json()["structuredContent"]["basket_id"]
        .as_str()
        .expect("a basket_id")
        .to_owned()
}

#[test]
fn a_basket_made_on_one_instance_is_filled_on_another_and_read_on_the_first() {
    let redis = RedisServer::start();
    let url = redis.url();
    let a = Served::start(&["--redis", &url]);
    let b = Served::start(&["--redis", &url]);
    let id = create_basket(&a.url);
    let basket = format!("basket_id={id}");
    call(&b.url, &["add_item", &basket, "sku=apple", "quantity=2"]).expect_code(0);
    call(&a.url, &["add_item", &basket, "sku=pear"]).expect_code(0);
    let viewed = call(&b.url, &["view_basket", &basket]);
    viewed.expect_code(0);
    assert_eq!(
        viewed.json()["structuredContent"],
        serde_json::json!({"basket_id": id, "items": [
            {"sku": "apple", "quantity": 2}, {"sku": "pear", "quantity": 1}],
            "total_quantity": 3})
    );
    assert!(
        a.wait_for_log("baskets, rate limits and list changes go through Redis at 127.0.0.1:")
            .contains("(key prefix toolwire:)")
    );
}

#[test]
fn a_rate_limit_holds_across_instances() {
    let redis = RedisServer::start();
    let url = redis.url();
    let a = Served::start(&["--redis", &url, "--rate-limit", "3/3600"]);
    let b = Served::start(&["--redis", &url, "--rate-limit", "3/3600"]);
    for server in [&a, &b, &a] {
        call(&server.url, &["echo", "text=counted"]).expect_code(0);
    }
    let limited = toolwire(&["call", &b.url, "echo", "text=over", "--yes"], "");
    limited.expect_code(1);
    assert!(limited.stderr.contains("retry in"), "{}", limited.stderr);
}

#[test]
fn an_unreachable_redis_is_refused_at_start() {
    let url = format!("redis://127.0.0.1:{}", closed_port());
    let ran = toolwire(&["serve", "--http", "127.0.0.1:0", "--redis", &url], "");
    ran.expect_code(2);
    assert!(
        ran.stderr.starts_with("toolwire: --redis: "),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("start Redis (e.g. `redis-server --port 6379`) or fix the URL"),
        "{}",
        ran.stderr
    );
}

/// Redis going away while serving: calls fail closed with errors that say
/// why (not "rate limit reached"), the server keeps running, and it
/// recovers by itself when Redis is back (empty: the baskets made before
/// are gone, new ones work).
#[test]
fn a_redis_outage_fails_closed_and_recovers() {
    let mut redis = RedisServer::start();
    let a = Served::start(&["--redis", &redis.url()]);
    let id = create_basket(&a.url);

    redis.kill();
    let basket = format!("basket_id={id}");
    let viewed = toolwire(&["call", &a.url, "view_basket", &basket, "--yes"], "");
    viewed.expect_code(1);
    assert!(
        viewed.stderr.ends_with(&format!(
            "toolwire: tool `view_basket` reported an error: Rate limits cannot be checked \
             (Redis at 127.0.0.1:{} is unreachable); retry in 1 s\n",
            redis.port()
        )),
        "{}",
        viewed.stderr
    );

    redis.restart();
    let mut recovered = None;
    for _ in 0..50 {
        let ran = call(&a.url, &["echo", "text=back"]);
        if ran.code == Some(0) {
            recovered = Some(ran);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let recovered = recovered.expect("calls work again within 10 s of Redis coming back");
    assert_eq!(recovered.json()["content"][0]["text"], "back");
    assert!(create_basket(&a.url).starts_with("bsk_"));
}
