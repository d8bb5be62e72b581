//! A shopping basket behind an explicit handle (`bsk_…`) that the model
//! carries from call to call, bound to its creator and forgotten after 30
//! minutes unused. The schema bounds `sku` and `quantity`: a bad call is
//! refused before the handler runs, and the model sees the rule.
//!
//! ```sh
//! cargo run -p toolwire-examples --bin basket                          # stdio
//! cargo run -p toolwire-examples --bin basket -- --http 127.0.0.1:8080 # HTTP
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolwire::server::{Handles, RequestContext, Server, State, Structured, ToolError};
use toolwire::tool;

type Items = std::collections::BTreeMap<String, u32>;
type Baskets = Handles<Items>;

#[derive(Deserialize, JsonSchema)]
struct AddItem {
    /// The handle returned by create_basket.
    basket_id: String,
    /// The product's stock-keeping unit.
    #[schemars(length(min = 1, max = 64), pattern(r"^[A-Za-z0-9._-]+$"))]
    sku: String,
    /// How many to add (default 1).
    #[schemars(range(min = 1, max = 99))]
    quantity: Option<u32>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Basket {
    /// The basket's handle: pass it to add_item and view_basket.
    basket_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Contents {
    /// Quantities by SKU.
    items: Items,
}

/// Creates an empty shopping basket and returns its basket_id.
#[tool(destructive = false)]
async fn create_basket(
    State(baskets): State<Baskets>,
    cx: RequestContext,
) -> Result<Structured<Basket>, ToolError> {
    let basket_id = baskets.create(&cx, Items::new()).await?;
    Ok(Structured(Basket { basket_id }))
}

/// Adds an item (by SKU) to a basket.
#[tool(destructive = false)]
async fn add_item(
    State(baskets): State<Baskets>,
    args: AddItem,
    cx: RequestContext,
) -> Result<String, ToolError> {
    let (id, sku, quantity) = (args.basket_id, args.sku, args.quantity.unwrap_or(1));
    let total: u32 = baskets
        .with(&cx, &id, |items| {
            let count = items.entry(sku.clone()).or_default();
            *count = count.saturating_add(quantity);
            items.values().sum()
        })
        .await?;
    Ok(format!(
        "Added {quantity} × {sku} to {id}; it now holds {total} item(s)."
    ))
}

/// Shows what is in a basket.
#[tool(read_only)]
async fn view_basket(
    State(baskets): State<Baskets>,
    args: Basket,
    cx: RequestContext,
) -> Result<Structured<Contents>, ToolError> {
    let items = baskets.get(&cx, &args.basket_id).await?;
    Ok(Structured(Contents { items }))
}

fn build_server() -> Server {
    let baskets = Baskets::new("bsk", "basket").created_by("create_basket");
    Server::builder("basket", env!("CARGO_PKG_VERSION"))
        .instructions("Create a basket with create_basket, then pass its basket_id to the others.")
        .tool(baskets.describe(create_basket_tool()))
        .tool(add_item_tool())
        .tool(view_basket_tool())
        .state(baskets)
        .build()
        .expect("the basket tools are valid")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    toolwire_examples::serve_args::serve("basket", build_server).await
}
