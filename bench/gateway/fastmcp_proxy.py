"""FastMCP's proxy in front of one Streamable HTTP upstream, for `bench gateway`.

    python fastmcp_proxy.py PORT UPSTREAM_URL

Serves streamable-http on 127.0.0.1:PORT at /mcp. FastMCP 4 spells
`FastMCP.as_proxy(url)` as `create_proxy(url)`; older releases have only
`as_proxy`, so either is used.
"""

import sys

import fastmcp
from fastmcp import FastMCP


def main() -> None:
    port, upstream = int(sys.argv[1]), sys.argv[2]
    if hasattr(FastMCP, "as_proxy"):
        proxy = FastMCP.as_proxy(upstream, name="bench-proxy")
    else:
        from fastmcp.server import create_proxy

        proxy = create_proxy(upstream, name="bench-proxy")
    print(f"fastmcp {fastmcp.__version__} proxy -> {upstream}", file=sys.stderr)
    proxy.run(
        transport="streamable-http",
        host="127.0.0.1",
        port=port,
        path="/mcp",
        show_banner=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
