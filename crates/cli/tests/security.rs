//! `toolwire serve`'s security switches, driven from the client commands:
//! bearer tokens with scopes, rate limits, and basket handles bound to
//! their creator with an idle expiry.

mod support;

use std::time::Duration;

use support::{Served, run_with_env, toolwire};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-9876543210";

fn secured(extra: &[&str]) -> Served {
    let alice = format!("--token={ALICE}:delete");
    let bob = format!("--token={BOB}");
    let mut args = vec![alice.as_str(), bob.as_str()];
    args.extend_from_slice(extra);
    Served::start(&args)
}

fn basket_id(ran: &support::Ran) -> String {
    ran.expect_code(0);
    ran.json()["structuredContent"]["basket_id"]
        .as_str()
        .expect("a basket_id")
        .to_owned()
}

#[test]
fn a_token_is_required_once_one_is_configured() {
    let server = secured(&[]);
    let anonymous = toolwire(&["list", &server.url], "");
    anonymous.expect_code(2);
    assert!(
        anonymous.stderr.contains("wants a bearer token (HTTP 401)"),
        "{}",
        anonymous.stderr
    );
    assert!(
        anonymous.stderr.contains("pass --bearer TOKEN"),
        "{}",
        anonymous.stderr
    );

    let wrong = toolwire(&["list", &server.url, "--bearer", "not-a-token"], "");
    wrong.expect_code(2);
    assert!(
        wrong
            .stderr
            .contains("did not accept the bearer token (HTTP 401)"),
        "{}",
        wrong.stderr
    );

    let alice = toolwire(&["list", &server.url, "--bearer", ALICE], "");
    alice.expect_code(0);
    assert!(alice.stdout.contains("  delete_file"), "{}", alice.stdout);

    let from_env = run_with_env(
        &["call", &server.url, "echo", "text=hi", "--yes"],
        "",
        &[("TOOLWIRE_BEARER", BOB)],
    );
    from_env.expect_code(0);
    assert_eq!(from_env.stdout, "hi\n");
}

#[test]
fn scopes_decide_which_tools_a_token_sees() {
    let server = secured(&[]);
    // Bob's token has no `delete` scope: delete_file does not exist for him.
    let listed = toolwire(&["list", &server.url, "--bearer", BOB], "");
    listed.expect_code(0);
    assert!(!listed.stdout.contains("delete_file"), "{}", listed.stdout);
    let call = toolwire(
        &[
            "call",
            &server.url,
            "delete_file",
            "path=x",
            "--yes",
            "--bearer",
            BOB,
        ],
        "",
    );
    call.expect_code(2);
    assert!(
        call.stderr.contains("has no tool `delete_file`"),
        "{}",
        call.stderr
    );

    let alice = toolwire(
        &[
            "call",
            &server.url,
            "delete_file",
            "path=x",
            "--yes",
            "--bearer",
            ALICE,
        ],
        "y\n",
    );
    alice.expect_code(0);
    assert!(alice.stdout.starts_with("Deleted x"), "{}", alice.stdout);
}

#[test]
fn the_rate_limit_counts_calls_per_principal_and_tool() {
    let server = secured(&["--rate-limit", "2/3600"]);
    for text in ["one", "two"] {
        toolwire(
            &[
                "call",
                &server.url,
                "echo",
                &format!("text={text}"),
                "--yes",
                "--bearer",
                ALICE,
            ],
            "",
        )
        .expect_code(0);
    }
    let limited = toolwire(
        &[
            "call",
            &server.url,
            "echo",
            "text=three",
            "--yes",
            "--bearer",
            ALICE,
        ],
        "",
    );
    limited.expect_code(1);
    assert!(limited.stderr.contains("retry in"), "{}", limited.stderr);
    // Another tool, and another principal, have their own allowance.
    toolwire(
        &[
            "call",
            &server.url,
            "stats",
            "numbers=[1]",
            "--yes",
            "--bearer",
            ALICE,
        ],
        "",
    )
    .expect_code(0);
    toolwire(
        &[
            "call",
            &server.url,
            "echo",
            "text=bob",
            "--yes",
            "--bearer",
            BOB,
        ],
        "",
    )
    .expect_code(0);
}

#[test]
fn baskets_live_behind_handles_bound_to_their_creator() {
    let server = secured(&[]);
    let created = toolwire(
        &[
            "call",
            &server.url,
            "create_basket",
            "--yes",
            "--json",
            "--bearer",
            ALICE,
        ],
        "",
    );
    let id = basket_id(&created);
    assert!(id.starts_with("bsk_"), "{id}");

    let basket = format!("basket_id={id}");
    let added = toolwire(
        &[
            "call",
            &server.url,
            "add_item",
            &basket,
            "sku=apple",
            "quantity=2",
            "--yes",
            "--json",
            "--bearer",
            ALICE,
        ],
        "",
    );
    added.expect_code(0);
    toolwire(
        &[
            "call",
            &server.url,
            "add_item",
            &basket,
            "sku=apple",
            "--yes",
            "--bearer",
            ALICE,
        ],
        "",
    )
    .expect_code(0);
    let viewed = toolwire(
        &[
            "call",
            &server.url,
            "view_basket",
            &basket,
            "--yes",
            "--json",
            "--bearer",
            ALICE,
        ],
        "",
    );
    viewed.expect_code(0);
    assert_eq!(
        viewed.json()["structuredContent"],
        serde_json::json!({"basket_id": id, "items": [{"sku": "apple", "quantity": 3}], "total_quantity": 3})
    );

    // Bob holding Alice's id is told exactly what an unknown id gets.
    let foreign = toolwire(
        &[
            "call",
            &server.url,
            "view_basket",
            &basket,
            "--yes",
            "--bearer",
            BOB,
        ],
        "",
    );
    foreign.expect_code(1);
    assert!(
        foreign.stderr.contains("was not found or has expired"),
        "{}",
        foreign.stderr
    );
    assert!(
        foreign
            .stderr
            .contains("create a new one with create_basket")
    );

    let checkout = toolwire(
        &["call", &server.url, "checkout", &basket, "--bearer", ALICE],
        "y\n",
    );
    checkout.expect_code(0);
    assert!(
        checkout.stderr.contains("DESTRUCTIVE"),
        "{}",
        checkout.stderr
    );
    assert!(checkout.stdout.contains("3 item(s)"), "{}", checkout.stdout);
    let gone = toolwire(
        &[
            "call",
            &server.url,
            "view_basket",
            &basket,
            "--yes",
            "--bearer",
            ALICE,
        ],
        "",
    );
    gone.expect_code(1);
}

#[test]
fn an_unused_basket_expires_after_the_handle_ttl() {
    let server = Served::start(&["--handle-ttl", "1"]);
    let listed = toolwire(&["list", &server.url], "");
    assert!(
        listed
            .stdout
            .contains("Baskets expire after 1 second of inactivity"),
        "{}",
        listed.stdout
    );
    let id = basket_id(&toolwire(
        &["call", &server.url, "create_basket", "--yes", "--json"],
        "",
    ));
    std::thread::sleep(Duration::from_millis(2500));
    let expired = toolwire(
        &[
            "call",
            &server.url,
            "view_basket",
            &format!("basket_id={id}"),
            "--yes",
        ],
        "",
    );
    expired.expect_code(1);
    assert!(
        expired
            .stderr
            .contains("was not found or has expired (baskets expire after 1 second of inactivity)"),
        "{}",
        expired.stderr
    );
}

#[test]
fn http_only_switches_are_refused_with_stdio() {
    let ran = toolwire(&["serve", "--stdio", "--token", "abc"], "");
    ran.expect_code(2);
    let ran = toolwire(&["serve", "--rate-limit", "ten"], "");
    ran.expect_code(2);
    assert!(ran.stderr.contains("expected N/SECS"), "{}", ran.stderr);
}
