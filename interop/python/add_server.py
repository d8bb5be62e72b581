"""A FastMCP server (MCP Python SDK 1.x, pinned in requirements.txt) with one tool, add.

    python add_server.py                      # stdio
    python add_server.py --http 127.0.0.1:0   # Streamable HTTP at /mcp; prints
                                              # `listening http://127.0.0.1:PORT/mcp` on stderr

Only loopback addresses are accepted for --http. The server is plain FastMCP
defaults otherwise (stateful sessions, SSE responses, DNS-rebinding protection on).
"""

import socket
import sys

import anyio
import uvicorn
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("toolwire-interop-add")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


def serve_http(addr: str) -> None:
    host, _, port = addr.rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        sys.exit(f"add_server.py: --http binds loopback only (127.0.0.1:PORT), not {addr}")
    # Bind the socket here so that port 0 works and the real port can be printed.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(port)))
    sock.listen(128)  # before the address is printed: early clients wait in the backlog
    mcp.settings.host = "127.0.0.1"
    mcp.settings.port = sock.getsockname()[1]
    app = mcp.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)
    print(f"listening http://127.0.0.1:{mcp.settings.port}/mcp", file=sys.stderr, flush=True)
    anyio.run(lambda: server.serve(sockets=[sock]))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        serve_http(sys.argv[2])
    elif len(sys.argv) == 1:
        mcp.run("stdio")
    else:
        sys.exit("usage: add_server.py [--http 127.0.0.1:PORT]")
