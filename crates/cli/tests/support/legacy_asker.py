# A 2025-11-25 MCP server on stdio that asks its client during a call, as
# servers of that era do: tool `confirm` sends a real `elicitation/create`
# (when the client declared elicitation) and answers with what came back.
# Prompt `confirm` asks the same way while it is got. It also serves the
# resource template `note://{id}` and the resource
# `note://pinned`, whose subscribers hear `notifications/resources/updated`
# when tool `touch` is called.
import json
import sys

asks_allowed = False
subscribed = set()


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read():
    for line in sys.stdin:
        try:
            return json.loads(line)
        except ValueError:
            continue
    sys.exit(0)


def ask(call_id, prompt=False):
    send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": {
        "mode": "form", "message": "Go ahead?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                            "required": ["ok"]}}})
    while True:
        message = read()
        if message.get("id") == "ask-1" and "method" not in message:
            break
    if "error" in message:
        text = "elicitation failed: " + message["error"]["message"]
    else:
        text = "answered " + json.dumps(message["result"], sort_keys=True)
    if prompt:
        result = {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
    else:
        result = {"content": [{"type": "text", "text": text}]}
    send({"jsonrpc": "2.0", "id": call_id, "result": result})

while True:
    message = read()
    method, id_ = message.get("method"), message.get("id")
    if id_ is None:
        continue
    if method == "initialize":
        asks_allowed = "elicitation" in message["params"].get("capabilities", {})
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "prompts": {}, "resources": {"subscribe": True}},
            "serverInfo": {"name": "legacy-asker", "version": "1.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": [{
            "name": "confirm", "inputSchema": {"type": "object", "properties": {}}}, {
            "name": "touch", "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "prompts/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"prompts": [{"name": "confirm"}]}})
    elif method == "prompts/get" and asks_allowed:
        ask(id_, prompt=True)
    elif method == "resources/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"resources": [{
            "uri": "note://pinned", "name": "pinned", "mimeType": "text/plain"}]}})
    elif method in ("resources/subscribe", "resources/unsubscribe"):
        uri = message["params"]["uri"]
        if method == "resources/subscribe":
            subscribed.add(uri)
        else:
            subscribed.discard(uri)
        send({"jsonrpc": "2.0", "id": id_, "result": {}})
    elif method == "tools/call" and message["params"]["name"] == "touch":
        for uri in sorted(subscribed):
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                  "params": {"uri": uri}})
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "content": [{"type": "text", "text": "touched " + ", ".join(sorted(subscribed))}]}})
    elif method == "resources/templates/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"resourceTemplates": [{
            "uriTemplate": "note://{id}", "name": "note", "mimeType": "text/plain"}]}})
    elif method == "resources/read" and message["params"]["uri"].startswith("note://"):
        uri = message["params"]["uri"]
        send({"jsonrpc": "2.0", "id": id_, "result": {"contents": [{
            "uri": uri, "mimeType": "text/plain", "text": "note " + uri[len("note://"):]}]}})
    elif method == "tools/call" and asks_allowed:
        ask(id_)
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": id_, "result": {
            "content": [{"type": "text", "text": "the client cannot be asked"}]}})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "Method not found"}})
