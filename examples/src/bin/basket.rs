//! A stateful tool done the stateless way: a shopping basket kept under an
//! explicit handle (`bsk_…`) that the model carries from call to call.
//!
//! `create_basket` mints the handle (its description states how long
//! baskets live), `add_item` and `view_basket` take it back. A handle is
//! bound to whoever created it, expires after 30 minutes without use, and
//! an unknown or expired one is answered with an error that says to create
//! a new basket.
//!
//! ```sh
//! cargo run -p toolwire-examples --bin basket                          # stdio
//! cargo run -p toolwire-examples --bin basket -- --http 127.0.0.1:8080 # HTTP
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolwire::server::{
    Handles, NoArgs, RequestContext, Server, Structured, ToolBuilder, ToolError,
};

#[derive(Debug, Clone, Default)]
struct Basket {
    items: Vec<Line>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Line {
    sku: String,
    quantity: u32,
}

#[derive(Serialize, JsonSchema)]
struct Created {
    /// The basket's handle: pass it to add_item and view_basket.
    basket_id: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddItem {
    /// The handle returned by create_basket.
    basket_id: String,
    /// The product's stock-keeping unit.
    sku: String,
    /// How many to add (1 to 99, default 1).
    #[serde(default)]
    quantity: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
struct ViewBasket {
    /// The handle returned by create_basket.
    basket_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Contents {
    basket_id: String,
    items: Vec<Line>,
    total_quantity: u32,
}

fn build_server() -> Server {
    let baskets: Handles<Basket> = Handles::new("bsk", "basket").created_by("create_basket");

    let create = {
        let baskets = baskets.clone();
        move |_: NoArgs, cx: RequestContext| {
            let baskets = baskets.clone();
            async move {
                let basket_id = baskets.create(&cx, Basket::default()).await?;
                Ok::<_, ToolError>(Structured(Created { basket_id }))
            }
        }
    };
    let add = {
        let baskets = baskets.clone();
        move |args: AddItem, cx: RequestContext| {
            let baskets = baskets.clone();
            async move {
                let quantity = args.quantity.unwrap_or(1);
                if !(1..=99).contains(&quantity) {
                    return Err(ToolError::new("quantity must be between 1 and 99"));
                }
                let sku = args.sku.trim().to_owned();
                if sku.is_empty() || sku.len() > 64 {
                    return Err(ToolError::new("sku must be 1 to 64 characters"));
                }
                let total = baskets
                    .with(&cx, &args.basket_id, |basket| {
                        match basket.items.iter_mut().find(|l| l.sku == sku) {
                            Some(line) => line.quantity = line.quantity.saturating_add(quantity),
                            None => basket.items.push(Line {
                                sku: sku.clone(),
                                quantity,
                            }),
                        }
                        basket.items.iter().map(|l| l.quantity).sum::<u32>()
                    })
                    .await?;
                Ok(format!(
                    "Added {quantity} × {sku} to {}; it now holds {total} item(s).",
                    args.basket_id
                ))
            }
        }
    };
    let view = {
        let baskets = baskets.clone();
        move |args: ViewBasket, cx: RequestContext| {
            let baskets = baskets.clone();
            async move {
                let basket = baskets.get(&cx, &args.basket_id).await?;
                let total_quantity = basket.items.iter().map(|l| l.quantity).sum();
                Ok::<_, ToolError>(Structured(Contents {
                    basket_id: args.basket_id,
                    items: basket.items,
                    total_quantity,
                }))
            }
        }
    };

    Server::builder("basket", env!("CARGO_PKG_VERSION"))
        .instructions(
            "Create a basket with create_basket, then pass its basket_id to add_item and view_basket.",
        )
        .tool(baskets.describe(
            ToolBuilder::new("create_basket")
                .description("Creates an empty shopping basket and returns its basket_id.")
                .handler(create),
        ))
        .tool(
            ToolBuilder::new("add_item")
                .description("Adds an item (by SKU) to a basket.")
                .handler(add),
        )
        .tool(
            ToolBuilder::new("view_basket")
                .description("Shows what is in a basket.")
                .handler(view),
        )
        .build()
        .expect("the basket tools are valid")
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    toolwire_examples::serve_args::serve("basket", build_server).await
}
