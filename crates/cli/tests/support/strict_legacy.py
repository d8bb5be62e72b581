# A strictly legacy (2025-06-18) MCP server on stdio, for the CLI tests: it
# refuses every request before `initialize` (as the Python SDK 1.x does),
# then serves one tool, `add`. Each request's method is appended to the
# file named by STRICT_LEGACY_LOG, if set.
import json
import os
import sys

initialized = False
log = os.environ.get("STRICT_LEGACY_LOG")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method, id_ = message.get("method"), message.get("id")
    if log and method:
        with open(log, "a") as f:
            f.write(method + "\n")
    if id_ is None:
        continue
    if method == "initialize":
        initialized = True
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "strict-legacy", "version": "1.0"}}})
    elif not initialized:
        send({"jsonrpc": "2.0", "id": id_,
              "error": {"code": -32600, "message": "Received request before initialization was complete"}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": [{
            "name": "add", "inputSchema": {"type": "object", "properties": {
                "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}]}})
    elif method == "tools/call":
        args = message["params"]["arguments"]
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "content": [{"type": "text", "text": str(args["a"] + args["b"])}]}})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "Method not found"}})
