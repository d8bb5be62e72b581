use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{
    ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router, transport::stdio,
};
use serde::{Deserialize, Serialize};

type Items = BTreeMap<String, u32>;

#[derive(Deserialize, schemars::JsonSchema)]
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

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Basket {
    /// The basket's handle: pass it to add_item and view_basket.
    basket_id: String,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Contents {
    /// Quantities by SKU.
    items: Items,
}

#[derive(Clone, Default)]
struct Shop {
    baskets: Arc<Mutex<HashMap<String, Items>>>,
}

fn not_found(id: &str) -> String {
    format!("Basket {id} was not found; create a new one with create_basket")
}

#[tool_router]
impl Shop {
    /// Creates an empty shopping basket and returns its basket_id.
    #[tool(annotations(destructive_hint = false))]
    fn create_basket(&self) -> Json<Basket> {
        let basket_id = format!("bsk_{:032x}", rand::random::<u128>());
        let mut baskets = self.baskets.lock().unwrap();
        baskets.insert(basket_id.clone(), Items::new());
        Json(Basket { basket_id })
    }

    /// Adds an item (by SKU) to a basket.
    #[tool(annotations(destructive_hint = false))]
    fn add_item(&self, Parameters(args): Parameters<AddItem>) -> Result<String, String> {
        // rmcp does not check arguments against the schema: the handler must.
        let quantity = args.quantity.unwrap_or(1);
        if !(1..=99).contains(&quantity) {
            return Err("quantity must be between 1 and 99".into());
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
        if args.sku.is_empty() || args.sku.len() > 64 || !args.sku.chars().all(allowed) {
            return Err("sku must be 1 to 64 of A-Z a-z 0-9 . _ -".into());
        }
        let mut baskets = self.baskets.lock().unwrap();
        let items = baskets
            .get_mut(&args.basket_id)
            .ok_or_else(|| not_found(&args.basket_id))?;
        let count = items.entry(args.sku.clone()).or_default();
        *count = count.saturating_add(quantity);
        let total: u32 = items.values().sum();
        let (sku, id) = (args.sku, args.basket_id);
        Ok(format!(
            "Added {quantity} × {sku} to {id}; it now holds {total} item(s)."
        ))
    }

    /// Shows what is in a basket.
    #[tool(annotations(read_only_hint = true))]
    fn view_basket(&self, Parameters(args): Parameters<Basket>) -> Result<Json<Contents>, String> {
        let baskets = self.baskets.lock().unwrap();
        let items = baskets
            .get(&args.basket_id)
            .ok_or_else(|| not_found(&args.basket_id))?;
        Ok(Json(Contents {
            items: items.clone(),
        }))
    }
}

#[tool_handler(
    name = "basket",
    instructions = "Create a basket with create_basket, then pass its basket_id to the others."
)]
impl ServerHandler for Shop {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    Shop::default().serve(stdio()).await?.waiting().await?;
    Ok(())
}
