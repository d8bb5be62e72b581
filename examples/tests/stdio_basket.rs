//! The basket example over stdio, as a real child process: the handle
//! carried from call to call, and the schema's bounds refusing bad
//! arguments before the handler runs.

mod support;

use serde_json::{Value, json};
use support::Peer;

async fn call(peer: &mut Peer, id: i64, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    peer.request(id, "tools/call", params).await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], id, "{reply}");
    reply["result"].clone()
}

#[tokio::test]
async fn a_basket_is_created_filled_and_viewed() {
    let mut peer = Peer::spawn(env!("CARGO_BIN_EXE_basket"));
    peer.request(1, "tools/list", json!({})).await;
    let listed = peer.recv().await;
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["create_basket", "add_item", "view_basket"]);
    assert_eq!(
        tools[0]["description"],
        "Creates an empty shopping basket and returns its basket_id. \
         Baskets expire after 30 minutes of inactivity."
    );
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["quantity"],
        json!({"description": "How many to add (default 1).", "type": ["integer", "null"],
               "format": "uint32", "minimum": 1, "maximum": 99})
    );

    let created = call(&mut peer, 2, "create_basket", json!({})).await;
    let id = created["structuredContent"]["basket_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("bsk_"), "{id}");
    let added = call(
        &mut peer,
        3,
        "add_item",
        json!({"basket_id": id, "sku": "tea"}),
    )
    .await;
    assert_eq!(
        added["content"][0]["text"],
        format!("Added 1 × tea to {id}; it now holds 1 item(s).")
    );
    let args = json!({"basket_id": id, "sku": "tea", "quantity": 2});
    call(&mut peer, 4, "add_item", args).await;
    let viewed = call(&mut peer, 5, "view_basket", json!({"basket_id": id})).await;
    assert_eq!(viewed["structuredContent"], json!({"items": {"tea": 3}}));
}

#[tokio::test]
async fn arguments_out_of_bounds_are_refused_before_the_handler() {
    let mut peer = Peer::spawn(env!("CARGO_BIN_EXE_basket"));
    let created = call(&mut peer, 1, "create_basket", json!({})).await;
    let id = created["structuredContent"]["basket_id"].clone();
    let bad = [
        (
            json!({"basket_id": id, "sku": "tea", "quantity": 100}),
            "/quantity",
        ),
        (
            json!({"basket_id": id, "sku": "tea", "quantity": 0}),
            "/quantity",
        ),
        (json!({"basket_id": id, "sku": ""}), "/sku"),
        (json!({"basket_id": id, "sku": "green tea"}), "/sku"),
        (json!({"basket_id": id, "sku": "x".repeat(65)}), "/sku"),
    ];
    for (n, (arguments, pointer)) in bad.into_iter().enumerate() {
        let refused = call(&mut peer, 2 + n as i64, "add_item", arguments).await;
        assert_eq!(refused["isError"], true, "{refused}");
        let text = refused["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("Invalid arguments for tool add_item:") && text.contains(pointer),
            "{text}"
        );
    }
    // Nothing reached the basket.
    let viewed = call(&mut peer, 9, "view_basket", json!({"basket_id": id})).await;
    assert_eq!(viewed["structuredContent"], json!({"items": {}}));
}
