#!/usr/bin/env node
// A server on the deprecated 2024-11-05 HTTP+SSE transport, built on the
// official TypeScript SDK 1.x (SSEServerTransport): GET /sse opens the
// stream (its first event names /messages?sessionId=...), POST /messages
// carries the client's messages. For checking that toolwire's client falls
// back to it. Tools: echo {text}, slow_echo {text} (reports progress once).
//
//   node old-sse-server.mjs 127.0.0.1:0     (prints "listening http://127.0.0.1:PORT/sse")
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';

const transports = new Map();

function newServer() {
  const mcp = new McpServer({ name: 'ts-sdk-old-sse-server', version: '1.32.2' });
  mcp.registerTool('echo', { description: 'Echoes text back', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  mcp.registerTool('slow_echo', { description: 'Echoes after one progress step', inputSchema: { text: z.string() } },
    async ({ text }, extra) => {
      const token = extra._meta?.progressToken;
      if (token !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
      }
      return { content: [{ type: 'text', text }] };
    });
  return mcp;
}

const [host, port] = (process.argv[2] ?? '127.0.0.1:0').split(':');
if (host !== '127.0.0.1' && host !== 'localhost') {
  console.error('binds to 127.0.0.1 only');
  process.exit(2);
}
const http = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  if (req.method === 'GET' && url.pathname === '/sse') {
    const transport = new SSEServerTransport('/messages', res);
    transports.set(transport.sessionId, transport);
    res.on('close', () => transports.delete(transport.sessionId));
    await newServer().connect(transport);
    return;
  }
  if (req.method === 'POST' && url.pathname === '/messages') {
    const transport = transports.get(url.searchParams.get('sessionId'));
    if (!transport) { res.writeHead(404).end('unknown session'); return; }
    await transport.handlePostMessage(req, res);
    return;
  }
  res.writeHead(405).end('Method Not Allowed');
});
http.listen(Number(port), '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${http.address().port}/sse`);
});
