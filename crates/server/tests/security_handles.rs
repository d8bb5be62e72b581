//! State handles over HTTP: create, use, another principal's handle, an
//! unknown handle and an expired one (short idle time), each answered as
//! the Tools page asks, and the retention policy in the creating tool's
//! description.

mod security_support;

use std::time::Duration;

use security_support::{Endpoint, names};
use serde_json::{Value, json};
use toolwire_server::auth::{AuthConfig, StaticTokens};
use toolwire_server::http::HttpConfig;
use toolwire_server::{
    Handles, NoArgs, Principal, RequestContext, Server, Structured, ToolBuilder, ToolError,
};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    basket_id: String,
    sku: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct View {
    basket_id: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Created {
    basket_id: String,
}

fn server(idle: Duration, max: usize) -> Server {
    let baskets: Handles<Vec<String>> = Handles::new("bsk", "basket")
        .idle_timeout(idle)
        .max_per_principal(max)
        .created_by("create_basket");
    let (b1, b2, b3, b4) = (
        baskets.clone(),
        baskets.clone(),
        baskets.clone(),
        baskets.clone(),
    );
    Server::builder("handles-test", "1")
        .tool(
            baskets.describe(
                ToolBuilder::new("create_basket")
                    .description("Creates a basket.")
                    .handler(move |_: NoArgs, cx: RequestContext| {
                        let baskets = b1.clone();
                        async move {
                            let basket_id = baskets.create(&cx, Vec::new()).await?;
                            Ok::<_, ToolError>(Structured(Created { basket_id }))
                        }
                    }),
            ),
        )
        .tool(
            ToolBuilder::new("add_item").handler(move |a: Add, cx: RequestContext| {
                let baskets = b2.clone();
                async move {
                    let n = baskets
                        .with(&cx, &a.basket_id, |items| {
                            items.push(a.sku.clone());
                            items.len()
                        })
                        .await?;
                    Ok::<_, ToolError>(format!("{n} item(s)"))
                }
            }),
        )
        .tool(
            ToolBuilder::new("view_basket").handler(move |a: View, cx: RequestContext| {
                let baskets = b3.clone();
                async move {
                    let items = baskets.get(&cx, &a.basket_id).await?;
                    Ok::<_, ToolError>(items.join(","))
                }
            }),
        )
        .tool(
            ToolBuilder::new("delete_basket").handler(move |a: View, cx: RequestContext| {
                let baskets = b4.clone();
                async move {
                    baskets.remove(&cx, &a.basket_id).await?;
                    Ok::<_, ToolError>("deleted")
                }
            }),
        )
        .build()
        .unwrap()
}

async fn endpoint(idle: Duration, max: usize) -> Endpoint {
    let tokens = StaticTokens::new()
        .token(ALICE, Principal::new("alice"))
        .token(BOB, Principal::new("bob"));
    let auth = AuthConfig::new("https://mcp.example.com/mcp", tokens)
        .unwrap()
        .authorization_server("https://auth.example.com");
    Endpoint::start(server(idle, max), HttpConfig::new().auth(auth)).await
}

async fn create(endpoint: &Endpoint, token: &str) -> String {
    let reply = endpoint
        .call_tool(Some(token), "create_basket", json!({}))
        .await;
    reply.result()["structuredContent"]["basket_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn not_found(id: &str, idle: &str) -> String {
    format!(
        "Basket {id} was not found or has expired (baskets expire after {idle} of inactivity); \
         create a new one with create_basket"
    )
}

#[tokio::test]
async fn create_use_and_foreign_principal() {
    let endpoint = endpoint(Duration::from_secs(1800), 100).await;
    let id = create(&endpoint, ALICE).await;
    assert!(id.starts_with("bsk_"), "{id}");
    let random = &id[4..];
    assert_eq!(random.len(), 26, "128 bits in base32");
    assert!(
        random
            .bytes()
            .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))
    );
    assert_ne!(create(&endpoint, ALICE).await, id, "every handle is new");

    let add = |token: &'static str, id: String, sku: &'static str| {
        let endpoint = &endpoint;
        async move {
            endpoint
                .call_tool(
                    Some(token),
                    "add_item",
                    json!({"basket_id": id, "sku": sku}),
                )
                .await
        }
    };
    assert_eq!(add(ALICE, id.clone(), "apple").await.text0(), "1 item(s)");
    assert_eq!(add(ALICE, id.clone(), "pear").await.text0(), "2 item(s)");
    let view = endpoint
        .call_tool(Some(ALICE), "view_basket", json!({"basket_id": id}))
        .await;
    assert_eq!(view.text0(), "apple,pear");

    // Bob holds the id but not the basket: the same answer as an unknown id.
    let foreign = add(BOB, id.clone(), "plum").await;
    assert!(foreign.is_tool_error());
    assert_eq!(foreign.text0(), not_found(&id, "30 minutes"));
    let foreign_view = endpoint
        .call_tool(Some(BOB), "view_basket", json!({"basket_id": id}))
        .await;
    assert_eq!(foreign_view.text0(), not_found(&id, "30 minutes"));
    let foreign_delete = endpoint
        .call_tool(Some(BOB), "delete_basket", json!({"basket_id": id}))
        .await;
    assert_eq!(foreign_delete.text0(), not_found(&id, "30 minutes"));
    // Alice's basket is untouched by Bob's attempts.
    let view = endpoint
        .call_tool(Some(ALICE), "view_basket", json!({"basket_id": id}))
        .await;
    assert_eq!(view.text0(), "apple,pear");
    // Deleting ends it.
    let deleted = endpoint
        .call_tool(Some(ALICE), "delete_basket", json!({"basket_id": id}))
        .await;
    assert_eq!(deleted.text0(), "deleted");
    let gone = endpoint
        .call_tool(Some(ALICE), "view_basket", json!({"basket_id": id}))
        .await;
    assert_eq!(gone.text0(), not_found(&id, "30 minutes"));
    endpoint.stop().await;
}

#[tokio::test]
async fn unknown_handles_say_how_to_recover() {
    let endpoint = endpoint(Duration::from_secs(1800), 100).await;
    let made_up = format!("bsk_{}", "a".repeat(26));
    for id in [
        made_up.as_str(),
        "bsk_short",
        "not-a-handle",
        "",
        "cart_aaaaaaaaaaaaaaaaaaaaaaaaaa",
    ] {
        let reply = endpoint
            .call_tool(Some(ALICE), "view_basket", json!({"basket_id": id}))
            .await;
        assert!(reply.is_tool_error(), "{id}");
        assert_eq!(reply.text0(), not_found(id, "30 minutes"));
        // The next good request is answered.
        let id = create(&endpoint, ALICE).await;
        let ok = endpoint
            .call_tool(Some(ALICE), "view_basket", json!({"basket_id": id}))
            .await;
        assert!(!ok.is_tool_error());
    }
    // A very long id is echoed only in part.
    let long = "x".repeat(10_000);
    let reply = endpoint
        .call_tool(Some(ALICE), "view_basket", json!({"basket_id": long}))
        .await;
    assert_eq!(
        reply.text0(),
        not_found(&format!("{}…", "x".repeat(64)), "30 minutes")
    );
    endpoint.stop().await;
}

#[tokio::test]
async fn idle_handles_expire_and_use_keeps_them_alive() {
    let idle = Duration::from_secs(1);
    let endpoint = endpoint(idle, 100).await;
    let kept = create(&endpoint, ALICE).await;
    let dropped = create(&endpoint, ALICE).await;
    // Touch `kept` far more often than the idle time, for longer than the
    // idle time; leave `dropped` alone.
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let reply = endpoint
            .call_tool(
                Some(ALICE),
                "add_item",
                json!({"basket_id": kept, "sku": "x"}),
            )
            .await;
        assert!(!reply.is_tool_error(), "{}", reply.text);
    }
    let expired = endpoint
        .call_tool(Some(ALICE), "view_basket", json!({"basket_id": dropped}))
        .await;
    assert!(expired.is_tool_error());
    assert_eq!(expired.text0(), not_found(&dropped, "1 second"));
    let alive = endpoint
        .call_tool(Some(ALICE), "view_basket", json!({"basket_id": kept}))
        .await;
    assert_eq!(alive.text0(), ["x"; 12].join(","));
    // Recovering as the error says: create a new one.
    let fresh = create(&endpoint, ALICE).await;
    let ok = endpoint
        .call_tool(Some(ALICE), "view_basket", json!({"basket_id": fresh}))
        .await;
    assert!(!ok.is_tool_error());
    endpoint.stop().await;
}

#[tokio::test]
async fn handles_per_principal_are_capped() {
    let endpoint = endpoint(Duration::from_secs(60), 2).await;
    create(&endpoint, ALICE).await;
    create(&endpoint, ALICE).await;
    let full = endpoint
        .call_tool(Some(ALICE), "create_basket", json!({}))
        .await;
    assert!(full.is_tool_error());
    assert_eq!(
        full.text0(),
        "Too many baskets are open for you (limit 2); reuse one you have, or wait for one to expire \
         (baskets expire after 1 minute of inactivity)"
    );
    // Bob is not affected.
    assert!(create(&endpoint, BOB).await.starts_with("bsk_"));
    endpoint.stop().await;
}

#[tokio::test]
async fn the_retention_policy_is_in_the_description() {
    let endpoint = endpoint(Duration::from_secs(1800), 100).await;
    let list = endpoint.list_tools(Some(ALICE)).await;
    let tools = list.result()["tools"].as_array().unwrap().clone();
    let create: &Value = tools.iter().find(|t| t["name"] == "create_basket").unwrap();
    assert_eq!(
        create["description"],
        "Creates a basket. Baskets expire after 30 minutes of inactivity."
    );
    assert_eq!(names(list.result(), "tools", "name").len(), 4);
    endpoint.stop().await;
}
