#!/usr/bin/env bash
# tools/call echo against toolwire, rmcp and bare hyper with wrk, the server
# pinned to CPU 0 and wrk to CPU 1, the same request bytes for all three,
# servers started fresh per run and run one after the other (interleaved).
#
#   bench/wrk-compare.sh [--connections N] [--duration SECS] [--rounds N]
#
# TOOLWIRE_ARGS are toolwire-echo's extra arguments (e.g.
# "--connection-threads 1"). Needs wrk (apt install wrk) and the bench binaries (bench/run.sh builds
# them; CARGO_TARGET_DIR is honoured). Only 127.0.0.1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
connections=64 duration=10 rounds=3
while [ $# -gt 0 ]; do
    case "$1" in
        --connections) connections="$2"; shift 2 ;;
        --duration) duration="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        *) echo "usage: $0 [--connections N] [--duration SECS] [--rounds N]" >&2; exit 2 ;;
    esac
done
bin="${CARGO_TARGET_DIR:-$here/target}/release"
for server in toolwire-echo rmcp-echo hyper-echo; do
    [ -x "$bin/$server" ] || { echo "$bin/$server missing: bench/run.sh builds it" >&2; exit 1; }
done
port=$((20000 + RANDOM % 20000))
for round in $(seq 1 "$rounds"); do
    for server in toolwire-echo rmcp-echo hyper-echo; do
        extra=()
        [ "$server" = toolwire-echo ] && read -ra extra <<< "${TOOLWIRE_ARGS:-}"
        taskset -c 0 "$bin/$server" "$port" "${extra[@]}" >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
        # Warm-up, then the measured run.
        taskset -c 1 wrk -t1 -c"$connections" -d2s -s "$here/wrk-echo.lua" "http://127.0.0.1:$port/mcp" >/dev/null
        out=$(taskset -c 1 wrk -t1 -c"$connections" -d"${duration}s" --latency -s "$here/wrk-echo.lua" "http://127.0.0.1:$port/mcp")
        rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
        p50=$(echo "$out" | awk '$1=="50%" {print $2}')
        p99=$(echo "$out" | awk '$1=="99%" {print $2}')
        bad=$(echo "$out" | awk '/non-200/ {print $3}')
        echo "round $round | $server | $rps req/s | p50 $p50 | p99 $p99 | non-200 $bad"
        kill "$pid"; wait "$pid" 2>/dev/null || true
        port=$((port + 1))
    done
done
