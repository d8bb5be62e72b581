"""The basket server of examples/src/bin/basket.rs, written with FastMCP."""

import secrets
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

mcp = FastMCP("basket", instructions="Create a basket with create_basket, then pass its basket_id to the others.")
baskets: dict[str, dict[str, int]] = {}
BasketId = Annotated[str, Field(description="The handle returned by create_basket.")]


def find(basket_id: str) -> dict[str, int]:
    if basket_id not in baskets:
        raise ToolError(f"Basket {basket_id} was not found; create a new one with create_basket")
    return baskets[basket_id]


@mcp.tool(annotations={"destructiveHint": False})
def create_basket() -> dict[str, str]:
    """Creates an empty shopping basket and returns its basket_id."""
    basket_id = "bsk_" + secrets.token_hex(16)
    baskets[basket_id] = {}
    return {"basket_id": basket_id}


@mcp.tool(annotations={"destructiveHint": False})
def add_item(
    basket_id: BasketId,
    sku: Annotated[str, Field(description="The product's stock-keeping unit.",
                              min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")],
    quantity: Annotated[int, Field(description="How many to add.", ge=1, le=99)] = 1,
) -> str:
    """Adds an item (by SKU) to a basket."""
    items = find(basket_id)
    items[sku] = items.get(sku, 0) + quantity
    return f"Added {quantity} × {sku} to {basket_id}; it now holds {sum(items.values())} item(s)."


@mcp.tool(annotations={"readOnlyHint": True})
def view_basket(basket_id: BasketId) -> dict[str, dict[str, int]]:
    """Shows what is in a basket."""
    return {"items": find(basket_id)}


if __name__ == "__main__":
    mcp.run()
