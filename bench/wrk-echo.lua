-- wrk script: tools/call echo, the same request bytes for every server
-- (the body of bench's Workload::Echo with a fixed text). Used by
-- bench/wrk-compare.sh.
wrk.method = "POST"
wrk.path = "/mcp"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from wrk"},' ..
  '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{}},' ..
  '"io.modelcontextprotocol/clientInfo":{"name":"toolwire-bench","version":"0.1.0"}}}}'

-- Counts replies that are not 200 (wrk counts only socket errors).
local bad = 0
response = function(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("non-200 replies: %d\n", bad))
end
