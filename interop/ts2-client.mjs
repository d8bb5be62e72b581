#!/usr/bin/env node
// Interop scenario driven by the official MCP TypeScript SDK 2.x client
// (@modelcontextprotocol/client, pinned in package.json).
//   node ts2-client.mjs --url http://127.0.0.1:8931/mcp
//   node ts2-client.mjs --stdio -- CMD ARGS...
//   --era legacy      (default; the SDK's own default) plain 2025 initialize handshake
//   --era auto        probe with server/discover, fall back to initialize
//   --era 2026-07-28  pinned modern era (no initialize; elicitation via input_required,
//                     list_changed via subscriptions/listen)
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { parseArgs, pkgVersion, runScenario, tracingFetch, tapTransport } from './scenario.mjs';

const opts = parseArgs(process.argv.slice(2), { allowEra: true });
const version = pkgVersion('@modelcontextprotocol/client');
const mode = opts.era === '2026-07-28' ? { pin: '2026-07-28' } : opts.era;

await runScenario(
    {
        client: `ts-client-${version}`,
        era: opts.era,
        create({ capabilities, opts }) {
            const client = new Client({ name: 'toolwire-interop-ts2', version }, { capabilities, versionNegotiation: { mode } });
            const transport = opts.url
                ? new StreamableHTTPClientTransport(new URL(opts.url), { fetch: tracingFetch(opts.trace) })
                : new StdioClientTransport({ command: opts.stdio.command, args: opts.stdio.args, stderr: 'inherit' });
            return { client, transport: tapTransport(transport, opts.trace) };
        },
        afterConnect: client => ({ negotiatedEra: client.getProtocolEra() }),
        onElicit: (client, fn) => client.setRequestHandler('elicitation/create', req => fn(req)),
        onRoots: (client, fn) => client.setRequestHandler('roots/list', req => fn(req)),
        onToolsListChanged: (client, fn) => client.setNotificationHandler('notifications/tools/list_changed', n => fn(n)),
        // Modern era: no unsolicited notifications, the client must open subscriptions/listen.
        subscribe: async (client, reqOpts) => {
            if (client.getProtocolEra() !== 'modern') return {};
            const sub = await client.listen({ toolsListChanged: true }, reqOpts);
            return { subscription: { honoredFilter: sub.honoredFilter } };
        },
        // The SDK refuses to send ping on a 2026-07-28 connection (METHOD_NOT_SUPPORTED_BY_PROTOCOL_VERSION).
        pingUnsupported: client =>
            client.getProtocolEra() === 'modern' ? `ping is not part of ${client.getNegotiatedProtocolVersion()} (the SDK refuses to send it)` : undefined,
        listTools: (client, { again, reqOpts }) => client.listTools(undefined, { ...reqOpts, cacheMode: again ? 'refresh' : 'use' }),
        callTool: (client, params, reqOpts) => client.callTool(params, reqOpts),
        terminate: async transport => {
            await transport.terminateSession();
            return true;
        }
    },
    opts
);
