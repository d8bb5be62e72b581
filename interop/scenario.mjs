// The fixed interop scenario, shared by ts1-client.mjs (SDK 1.x) and ts2-client.mjs (SDK 2.x).
// Each client script supplies an adapter with the SDK-specific calls; the steps, checks and
// output format live here so both generations run exactly the same scenario.
//
// Output: one JSON line per step on stdout ({"client","transport","step","ok",...}); with
// --trace, every HTTP exchange and JSON-RPC message also goes to stderr as JSON lines.
// Exit status: 0 all steps passed, 1 some step failed, 2 bad usage, 124 overall timeout.
import { readFileSync } from 'node:fs';

export const USAGE = `usage: node SCRIPT [options] (--url http://127.0.0.1:PORT/mcp | --stdio -- CMD ARGS...)
options:
  --timeout SECS     overall time limit for the whole scenario (default 60)
  --step-timeout S   per-request timeout (default 15)
  --trace            log HTTP exchanges and JSON-RPC messages to stderr (JSON lines)
  --era MODE         (ts2 only) legacy | auto | 2026-07-28  (default legacy = initialize handshake)
env: ECHO_TOOL, DELETE_TOOL, TOGGLE_TOOL override the tool names (defaults echo, delete_file, toggle_extras)`;

export function parseArgs(argv, { allowEra = false } = {}) {
    const o = { timeout: 60, stepTimeout: 15, trace: false, era: 'legacy', url: undefined, stdio: undefined };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const val = () => {
            if (i + 1 >= argv.length) usage(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--url') o.url = val();
        else if (a === '--stdio') {
            const rest = argv.slice(i + 1);
            if (rest[0] === '--') rest.shift();
            if (rest.length === 0) usage('--stdio needs -- CMD ARGS...');
            o.stdio = { command: rest[0], args: rest.slice(1) };
            break;
        } else if (a === '--timeout') o.timeout = Number(val());
        else if (a === '--step-timeout') o.stepTimeout = Number(val());
        else if (a === '--trace') o.trace = true;
        else if (a === '--era' && allowEra) o.era = val();
        else if (a === '-h' || a === '--help') usage();
        else usage(`unknown argument ${a}`);
    }
    if (!o.url === !o.stdio) usage('give exactly one of --url or --stdio');
    if (!(o.timeout > 0) || !(o.stepTimeout > 0)) usage('bad timeout');
    if (allowEra && !['legacy', 'auto', '2026-07-28'].includes(o.era)) usage(`bad --era ${o.era}`);
    return o;
}

function usage(msg) {
    if (msg) process.stderr.write(`${msg}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exit(msg ? 2 : 0);
}

export function pkgVersion(pkg) {
    const p = new URL(`./node_modules/${pkg}/package.json`, import.meta.url);
    return JSON.parse(readFileSync(p, 'utf8')).version;
}

export function errorJson(e) {
    if (!(e instanceof Error)) return { value: String(e) };
    const out = { name: e.name, message: e.message };
    for (const k of ['code', 'data', 'status']) if (e[k] !== undefined) out[k] = e[k];
    if (e.cause) out.cause = errorJson(e.cause);
    return out;
}

const trace = obj => process.stderr.write(`${JSON.stringify({ trace: obj })}\n`);

// A fetch that logs each HTTP exchange (method, url, request headers/body, status,
// response headers). Response bodies are not read here (SSE streams stay streaming).
export function tracingFetch(enabled) {
    if (!enabled) return undefined;
    let n = 0;
    return async (url, init = {}) => {
        const id = ++n;
        const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries());
        trace({ http: id, method: init.method ?? 'GET', url: String(url), headers, body: init.body ? String(init.body) : undefined });
        try {
            const res = await fetch(url, init);
            trace({ http: id, status: res.status, headers: Object.fromEntries(res.headers.entries()) });
            return res;
        } catch (e) {
            trace({ http: id, error: errorJson(e) });
            throw e;
        }
    };
}

// Taps JSON-RPC messages in both directions without replacing the transport object (the
// 2.x client treats its own StdioClientTransport class specially): remembers the
// initialize request and its result (1.x has no getter for the negotiated version) and,
// with --trace, logs every message.
export function tapTransport(transport, enabled) {
    const tap = { initialize: undefined };
    let initId;
    const send = transport.send.bind(transport);
    transport.send = (msg, opts) => {
        if (transport.pid) tap.pid = transport.pid; // stdio child, for the exit handler
        if (enabled) trace({ out: msg });
        if (msg?.method === 'initialize') {
            initId = msg.id;
            tap.initialize = { requested: msg.params?.protocolVersion };
        }
        return send(msg, opts);
    };
    let handler;
    Object.defineProperty(transport, 'onmessage', {
        configurable: true,
        get: () => handler,
        set: h => {
            handler =
                h &&
                ((msg, extra) => {
                    if (enabled) trace({ in: msg });
                    if (initId !== undefined && msg?.id === initId && tap.initialize) {
                        tap.initialize.result = msg.result;
                        tap.initialize.error = msg.error;
                    }
                    return h(msg, extra);
                });
        }
    });
    transport.__tap = tap;
    return transport;
}

const ELICIT_ANSWER = { action: 'accept', content: { confirm: true } };
const ROOTS = [{ uri: 'file:///tmp/toolwire-interop', name: 'interop' }];

const textOf = result =>
    (result?.content ?? [])
        .filter(c => c.type === 'text')
        .map(c => c.text)
        .join('');

/**
 * adapter: {
 *   client: string,                                 // e.g. "ts-sdk-1.32.2"
 *   create({ capabilities, opts }) -> { client, transport },
 *   onElicit(client, fn(request) -> result),
 *   onRoots(client, fn(request) -> result),
 *   onToolsListChanged(client, fn(notification)),
 *   afterConnect?(client, transport, opts) -> extra fields for the connect line,
 *   subscribe?(client) -> extra fields (e.g. 2026-07-28 subscriptions/listen),
 *   listTools(client, { again, reqOpts }) -> ListToolsResult,
 *   callTool(client, params, reqOpts) -> CallToolResult,
 *   pingUnsupported?(client) -> reason string when the era has no ping,
 *   terminate?(transport) -> bool (DELETE sent)
 * }
 */
export async function runScenario(adapter, opts) {
    const transportKind = opts.url ? 'http' : 'stdio';
    const t0 = Date.now();
    const failed = [];
    let current = 'setup';
    const emit = (step, ok, fields) => {
        if (!ok && step !== 'summary' && step !== 'timeout') failed.push(step);
        process.stdout.write(
            `${JSON.stringify({ client: adapter.client, transport: transportKind, step, ok, ms: Date.now() - t0, ...fields })}\n`
        );
    };
    const ECHO = process.env.ECHO_TOOL || 'echo';
    const DELETE = process.env.DELETE_TOOL || 'delete_file';
    const TOGGLE = process.env.TOGGLE_TOOL || 'toggle_extras';
    const reqOpts = { timeout: opts.stepTimeout * 1000 };

    const overall = setTimeout(() => {
        emit('timeout', false, { error: `scenario exceeded ${opts.timeout}s`, during: current, failed });
        process.exit(124);
    }, opts.timeout * 1000);
    overall.unref?.();

    const capabilities = { elicitation: { form: {} }, roots: { listChanged: true } };
    const { client, transport } = adapter.create({ capabilities, opts });
    // Never leave a stdio child behind, whatever way we exit (timeout, failed connect...).
    process.on('exit', () => {
        const pid = transport.pid ?? transport.__tap?.pid;
        if (pid) {
            try {
                process.kill(pid, 'SIGTERM');
            } catch {}
        }
    });

    const elicitations = [];
    adapter.onElicit(client, async request => {
        elicitations.push(request);
        return ELICIT_ANSWER;
    });
    adapter.onRoots(client, async () => ({ roots: ROOTS }));
    const listChanged = [];
    let wake;
    adapter.onToolsListChanged(client, n => {
        listChanged.push({ at: Date.now() - t0, notification: n });
        wake?.();
    });
    client.onerror = e => process.stderr.write(`${JSON.stringify({ client: adapter.client, onerror: errorJson(e) })}\n`);

    emit('start', true, {
        node: process.version,
        target: opts.url ?? [opts.stdio.command, ...opts.stdio.args].join(' '),
        era: adapter.era
    });

    // 1. connect
    current = 'connect';
    try {
        await client.connect(transport, reqOpts);
        emit('connect', true, {
            protocolVersion: client.getNegotiatedProtocolVersion?.() ?? transport.__tap?.initialize?.result?.protocolVersion,
            requestedProtocolVersion: transport.__tap?.initialize?.requested,
            serverInfo: client.getServerVersion(),
            serverCapabilities: client.getServerCapabilities(),
            sessionId: transport.sessionId,
            ...(adapter.afterConnect?.(client, transport, opts) ?? {})
        });
    } catch (e) {
        emit('connect', false, { error: errorJson(e) });
        emit('summary', false, { failed });
        await client.close().catch(() => {});
        process.exit(1);
    }

    // 2. tools/list
    current = 'tools/list';
    let before = [];
    try {
        const r = await adapter.listTools(client, { again: false, reqOpts });
        before = r.tools.map(t => t.name);
        const missing = [ECHO, DELETE, TOGGLE].filter(n => !before.includes(n));
        emit('tools/list', missing.length === 0, { names: before, ...(missing.length ? { missing } : {}) });
    } catch (e) {
        emit('tools/list', false, { error: errorJson(e) });
    }

    // 3. echo
    current = 'echo';
    try {
        const r = await adapter.callTool(client, { name: ECHO, arguments: { text: 'hello' } }, reqOpts);
        const text = textOf(r);
        emit('echo', text === 'hello' && !r.isError, { text, isError: r.isError ?? false, ...(text === 'hello' ? {} : { result: r }) });
    } catch (e) {
        emit('echo', false, { error: errorJson(e) });
    }

    // 4. elicitation during a tool call
    current = 'elicitation';
    try {
        const r = await adapter.callTool(client, { name: DELETE, arguments: { path: 'notes.txt' } }, reqOpts);
        const text = textOf(r);
        const ok = elicitations.length === 1 && !r.isError;
        emit('elicitation', ok, {
            elicitationRequests: elicitations,
            answered: ELICIT_ANSWER,
            text,
            isError: r.isError ?? false,
            ...(elicitations.length === 1 ? {} : { problem: `handler called ${elicitations.length} times, expected 1` })
        });
    } catch (e) {
        emit('elicitation', false, { elicitationRequests: elicitations, error: errorJson(e) });
    }

    // 5. list_changed
    current = 'list_changed';
    let sub = {};
    try {
        sub = (await adapter.subscribe?.(client, reqOpts)) ?? {};
        const seen = listChanged.length;
        const arrived = new Promise(resolve => {
            wake = () => listChanged.length > seen && resolve(true);
            setTimeout(() => resolve(false), 5000).unref?.();
        });
        const toggled = await adapter.callTool(client, { name: TOGGLE, arguments: {} }, reqOpts);
        const got = listChanged.length > seen || (await arrived);
        const r = await adapter.listTools(client, { again: true, reqOpts });
        const after = r.tools.map(t => t.name);
        const added = after.filter(n => !before.includes(n));
        const removed = before.filter(n => !after.includes(n));
        emit('list_changed', got && added.length + removed.length > 0 && !toggled.isError, {
            ...sub,
            toggleText: textOf(toggled),
            notificationReceived: got,
            notifications: listChanged.slice(seen),
            names: after,
            added,
            removed
        });
    } catch (e) {
        emit('list_changed', false, { ...sub, notifications: listChanged, error: errorJson(e) });
    }

    // 6. ping + close
    current = 'ping';
    try {
        const skip = adapter.pingUnsupported?.(client);
        if (skip) emit('ping', true, { skipped: skip });
        else emit('ping', true, { result: await client.ping(reqOpts) });
    } catch (e) {
        emit('ping', false, { error: errorJson(e) });
    }
    current = 'close';
    try {
        const sessionId = transport.sessionId;
        // DELETE only when there is a session to end (the SDKs skip it without one).
        let terminated;
        if (adapter.terminate && opts.url) terminated = sessionId ? await adapter.terminate(transport) : false;
        await client.close();
        emit('close', true, { sessionId, terminated, sessionIdAfter: transport.sessionId ?? null });
    } catch (e) {
        emit('close', false, { error: errorJson(e) });
    }

    emit('summary', failed.length === 0, { failed });
    clearTimeout(overall);
    process.exit(failed.length === 0 ? 0 : 1);
}
