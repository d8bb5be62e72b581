#!/usr/bin/env bash
# Client SDKs against hyper-echo (issue 22): toolwire's client vs rmcp's,
# the server pinned to CPU 0 and the client to CPU 1, a fresh hyper-echo per
# run, the clients interleaved round by round.
#
#   bench/client-compare.sh client [--rounds N] [--duration SECS] [--warmup SECS]
#                                  [--concurrency N] [--clients "toolwire rmcp rmcp-pooled"]
#   bench/client-compare.sh client-instructions [--requests N] [--clients "..."] [--keep DIR]
#
# `client`: calls/s, p50/p99 and the client's CPU µs per call (client-load's
# own line) per round, then the mean calls/s per client and toolwire ÷ each.
# `client-instructions`: each client under callgrind (pinned to CPU 1, the
# server beside it, not under callgrind), `--requests` calls (default 2,000)
# from one caller after 100 not counted; instructions per call. `--keep DIR`
# keeps the callgrind dumps there (for callgrind_annotate).
#
# Needs the bench binaries (bench/run.sh builds them; CARGO_TARGET_DIR is
# honoured) and, for client-instructions, valgrind. Only 127.0.0.1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode="${1:-client}"
shift || true
rounds=3 duration=10 warmup=2 concurrency=32 requests=2000 keep=""
clients="toolwire rmcp rmcp-pooled"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --duration) duration="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --concurrency) concurrency="$2"; shift 2 ;;
        --requests) requests="$2"; shift 2 ;;
        --clients) clients="$2"; shift 2 ;;
        --keep) keep="$2"; shift 2 ;;
        *) echo "usage: $0 client|client-instructions [--rounds N] [--duration SECS] [--warmup SECS] [--concurrency N] [--requests N] [--clients LIST] [--keep DIR]" >&2; exit 2 ;;
    esac
done
bin="${CARGO_TARGET_DIR:-$here/target}/release"
for b in hyper-echo client-load; do
    [ -x "$bin/$b" ] || { echo "$bin/$b missing: bench/run.sh builds it" >&2; exit 1; }
done
# Below the ephemeral range (32768+), which rmcp's new connection per call churns through.
port=$((20000 + RANDOM % 10000))
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; true; }
trap cleanup EXIT

start_server() {
    for _ in 1 2 3 4 5; do
        port=$((port + 1))
        taskset -c 0 "$bin/hyper-echo" "$port" >/dev/null 2>&1 &
        server_pid=$!
        for _ in $(seq 1 100); do
            (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && return
            kill -0 "$server_pid" 2>/dev/null || break  # it exited (port taken): next port
            sleep 0.1
        done
        stop_server
    done
    echo "hyper-echo did not listen (ports up to $port)" >&2; exit 1
}
stop_server() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}
field() { echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1==k {print $2}'; }

# The commit the binaries were presumably built at, and what differed from it.
dirty=$(git -C "$here/.." status --porcelain -- . 2>/dev/null | awk '{print $2}' | cut -d/ -f1-2 | sort -u | tr '\n' ' ')
echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)${dirty:+ (uncommitted changes in: ${dirty% })}"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

if [ "$mode" = client ]; then
    echo "$concurrency callers sharing one client, ${warmup} s warm-up + ${duration} s measured, $rounds rounds; hyper-echo on CPU 0, client on CPU 1."
    echo
    echo "| round | client | calls/s | p50 µs | p99 µs | client CPU µs/call (user + sys) | errors |"
    echo "|---:|---|---:|---:|---:|---:|---:|"
    results=""
    for round in $(seq 1 "$rounds"); do
        for client in $clients; do
            start_server
            line=$(taskset -c 1 "$bin/client-load" "$port" "$client" --concurrency "$concurrency" \
                --warmup "$warmup" --duration "$duration" 2>/tmp/client-load.$$.err) || {
                echo "client-load $client failed: $(head -5 /tmp/client-load.$$.err)" >&2
            }
            stop_server
            rps=$(field "$line" calls_per_s)
            errors=$(( $(field "$line" errors || echo 0) + $(field "$line" warmup_errors || echo 0) ))
            echo "| $round | $client | $rps | $(field "$line" p50_us) | $(field "$line" p99_us) | $(field "$line" cpu_us_per_call) ($(field "$line" user_us_per_call) + $(field "$line" sys_us_per_call)) | $errors |"
            results="$results$client $rps $(field "$line" cpu_us_per_call) $(field "$line" user_us_per_call) $(field "$line" sys_us_per_call)"$'\n'
        done
    done
    rm -f /tmp/client-load.$$.err
    echo
    echo "| client | mean calls/s | mean client CPU µs/call (user + sys) | toolwire ÷ this (calls/s) |"
    echo "|---|---:|---:|---:|"
    echo -n "$results" | awk '
        { n[$1]++; rps[$1] += $2; cpu[$1] += $3; usr[$1] += $4; sys[$1] += $5
          if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
        END {
            tw = ("toolwire" in n) ? rps["toolwire"] / n["toolwire"] : 0
            for (i = 1; i <= k; i++) {
                c = order[i]; m = rps[c] / n[c]
                printf "| %s | %.0f | %.1f (%.1f + %.1f) | %s |\n", c, m, cpu[c] / n[c], usr[c] / n[c], sys[c] / n[c], \
                    (tw > 0 && m > 0) ? sprintf("%.2f×", tw / m) : "-"
            }
        }'
elif [ "$mode" = client-instructions ]; then
    command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
    echo "Instructions per call in the client process (user space, callgrind; one caller, $requests calls after 100 not counted)."
    echo
    echo "| client | instructions per call |"
    echo "|---|---:|"
    for client in $clients; do
        dir=$(mktemp -d)
        start_server
        taskset -c 1 valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
            "$bin/client-load" "$port" "$client" --concurrency 1 --requests "$requests" --callgrind \
            >"$dir/stdout" 2>"$dir/stderr" || {
            echo "client-load $client under callgrind failed:" >&2; grep -v '^==' "$dir/stderr" | head -5 >&2
        }
        stop_server
        # The dump after the counted calls: the one callgrind_control -d wrote
        # (callgrind.out.1; the final dump at exit is callgrind.out itself).
        dump="$dir/callgrind.out.1"
        total=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump" 2>/dev/null || true)
        if [ -n "$total" ]; then
            echo "| $client | $(awk -v t="$total" -v n="$requests" 'BEGIN {printf "%.0f", t / n}') |"
        else
            echo "| $client | (no dump: see $dir) |"
            continue
        fi
        if [ -n "$keep" ]; then
            mkdir -p "$keep"
            cp "$dump" "$keep/callgrind.$client.out"
        fi
        rm -rf "$dir"
    done
else
    echo "unknown mode $mode (client or client-instructions)" >&2
    exit 2
fi
echo
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
