#!/usr/bin/env node
// A tiny MCP server built on the official TypeScript SDK 1.x (McpServer from
// @modelcontextprotocol/sdk), used only to validate the interop client scripts
// against a server nobody here wrote. It speaks the 2025 ("legacy") era:
// initialize, Mcp-Session-Id sessions, server->client requests.
//
//   node reference-server.mjs --stdio
//   node reference-server.mjs --http 127.0.0.1:0      (prints "listening http://127.0.0.1:PORT/mcp")
//   node reference-server.mjs --http 8931             (port only; always binds 127.0.0.1)
//
// Tools:
//   echo {text}          -> text content = text
//   delete_file {path}   -> elicits {confirm: boolean}; "Deleted <path>" if confirmed
//   toggle_extras {}     -> registers / removes tool `extra` in EVERY live session,
//                           each McpServer then sends notifications/tools/list_changed
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const log = (...a) => process.stderr.write(`[reference-server] ${a.join(' ')}\n`);

// Shared state: the extra tool is on or off for everyone.
let extrasOn = false;
const servers = new Set(); // { mcp, extra?: RegisteredTool }

function addExtra(entry) {
    entry.extra = entry.mcp.registerTool(
        'extra',
        { description: 'Present only after toggle_extras', inputSchema: {} },
        async () => ({ content: [{ type: 'text', text: 'extra' }] })
    );
}

function makeServer() {
    const mcp = new McpServer(
        { name: 'ts-sdk-reference-server', version: '1.32.2' },
        { capabilities: { tools: { listChanged: true } } }
    );
    const entry = { mcp, extra: undefined };

    mcp.registerTool(
        'echo',
        { description: 'Echoes text back', inputSchema: { text: z.string() } },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );

    mcp.registerTool(
        'delete_file',
        { description: 'Deletes a file after asking the user to confirm', inputSchema: { path: z.string() } },
        async ({ path }, extra) => {
            const answer = await extra.sendRequest(
                {
                    method: 'elicitation/create',
                    params: {
                        mode: 'form',
                        message: `Really delete ${path}?`,
                        requestedSchema: {
                            type: 'object',
                            properties: { confirm: { type: 'boolean', title: 'Confirm', description: `Delete ${path}` } },
                            required: ['confirm']
                        }
                    }
                },
                ElicitResultSchema
            );
            if (answer.action === 'accept' && answer.content?.confirm === true) {
                return { content: [{ type: 'text', text: `Deleted ${path}` }] };
            }
            return { content: [{ type: 'text', text: `Not deleted (${answer.action})` }], isError: true };
        }
    );

    mcp.registerTool(
        'toggle_extras',
        { description: 'Adds or removes the tool `extra` for every session', inputSchema: {} },
        async () => {
            extrasOn = !extrasOn;
            for (const e of servers) {
                // McpServer sends notifications/tools/list_changed itself on register/remove
                // (a notification unrelated to any request: over HTTP it goes to the GET SSE stream).
                if (extrasOn && !e.extra) addExtra(e);
                if (!extrasOn && e.extra) {
                    e.extra.remove();
                    e.extra = undefined;
                }
            }
            return { content: [{ type: 'text', text: extrasOn ? 'extras on' : 'extras off' }] };
        }
    );

    if (extrasOn) addExtra(entry);
    servers.add(entry);
    return entry;
}

const argv = process.argv.slice(2);
if (argv[0] === '--stdio') {
    const entry = makeServer();
    const transport = new StdioServerTransport();
    transport.onclose = () => servers.delete(entry);
    await entry.mcp.connect(transport);
    log('serving on stdio');
} else if (argv[0] === '--http') {
    const spec = argv[1] ?? '127.0.0.1:0';
    const port = Number(spec.includes(':') ? spec.slice(spec.lastIndexOf(':') + 1) : spec);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad port in ${spec}`);
    const sessions = new Map(); // sessionId -> { transport, entry }

    const readJson = req =>
        new Promise((resolve, reject) => {
            const chunks = [];
            req.on('data', c => chunks.push(c));
            req.on('end', () => {
                const s = Buffer.concat(chunks).toString('utf8');
                try {
                    resolve(s ? JSON.parse(s) : undefined);
                } catch (e) {
                    reject(e);
                }
            });
            req.on('error', reject);
        });

    const http = createServer(async (req, res) => {
        try {
            const url = new URL(req.url, 'http://127.0.0.1');
            if (url.pathname !== '/mcp') {
                res.writeHead(404).end('not found');
                return;
            }
            const sid = req.headers['mcp-session-id'];
            log(req.method, sid ? `session=${sid}` : 'no-session', `mcp-protocol-version=${req.headers['mcp-protocol-version'] ?? '-'}`);
            let body;
            if (req.method === 'POST') body = await readJson(req);
            if (sid && sessions.has(sid)) {
                await sessions.get(sid).transport.handleRequest(req, res, body);
                return;
            }
            if (!sid && req.method === 'POST' && isInitializeRequest(body)) {
                const entry = makeServer();
                const transport = new StreamableHTTPServerTransport({
                    sessionIdGenerator: () => randomUUID(),
                    onsessioninitialized: id => {
                        sessions.set(id, { transport, entry });
                        log('session opened', id);
                    }
                });
                transport.onclose = () => {
                    if (transport.sessionId) sessions.delete(transport.sessionId);
                    servers.delete(entry);
                    log('session closed', transport.sessionId);
                };
                await entry.mcp.connect(transport);
                await transport.handleRequest(req, res, body);
                return;
            }
            res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' }).end(
                JSON.stringify({
                    jsonrpc: '2.0',
                    error: { code: -32000, message: sid ? 'Session not found' : 'Bad Request: no valid session ID' },
                    id: null
                })
            );
        } catch (e) {
            log('error', e?.stack ?? e);
            if (!res.headersSent) res.writeHead(500).end();
        }
    });
    http.listen(port, '127.0.0.1', () => {
        const { port: actual } = http.address();
        process.stdout.write(`listening http://127.0.0.1:${actual}/mcp\n`);
    });
    const stop = () => {
        for (const { transport } of sessions.values()) transport.close().catch(() => {});
        http.close();
        process.exit(0);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
} else {
    process.stderr.write('usage: reference-server.mjs --stdio | --http [127.0.0.1:]PORT\n');
    process.exit(2);
}
