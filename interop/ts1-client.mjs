#!/usr/bin/env node
// Interop scenario driven by the official MCP TypeScript SDK 1.x client
// (@modelcontextprotocol/sdk, pinned in package.json). It speaks only the 2025 era:
// initialize handshake, Mcp-Session-Id, server->client requests.
//   node ts1-client.mjs --url http://127.0.0.1:8931/mcp
//   node ts1-client.mjs --stdio -- CMD ARGS...
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
    ElicitRequestSchema,
    ListRootsRequestSchema,
    ToolListChangedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import { parseArgs, pkgVersion, runScenario, tracingFetch, tapTransport } from './scenario.mjs';

const opts = parseArgs(process.argv.slice(2));
const version = pkgVersion('@modelcontextprotocol/sdk');

await runScenario(
    {
        client: `ts-sdk-${version}`,
        era: 'legacy (1.x has no other)',
        create({ capabilities, opts }) {
            const client = new Client({ name: 'toolwire-interop-ts1', version }, { capabilities });
            const transport = opts.url
                ? new StreamableHTTPClientTransport(new URL(opts.url), { fetch: tracingFetch(opts.trace) })
                : new StdioClientTransport({ command: opts.stdio.command, args: opts.stdio.args, stderr: 'inherit' });
            return { client, transport: tapTransport(transport, opts.trace) };
        },
        onElicit: (client, fn) => client.setRequestHandler(ElicitRequestSchema, req => fn(req)),
        onRoots: (client, fn) => client.setRequestHandler(ListRootsRequestSchema, req => fn(req)),
        onToolsListChanged: (client, fn) => client.setNotificationHandler(ToolListChangedNotificationSchema, n => fn(n)),
        listTools: (client, { reqOpts }) => client.listTools(undefined, reqOpts),
        callTool: (client, params, reqOpts) => client.callTool(params, undefined, reqOpts),
        terminate: async transport => {
            await transport.terminateSession();
            return true;
        }
    },
    opts
);
