#!/usr/bin/env bash
# sched-stat.sh TOOLWIRE_BIN [CONNECTIONS] [CALLS]
#
# A gateway in front of a fresh toolwire-echo (write_gateway_config), 2,000
# legacy calls of warm-up, then CALLS (default 20,000) legacy calls over
# CONNECTIONS (default 1) with `perf stat` on the gateway: its context
# switches, futex calls, epoll_wait calls and CPU time per call, and the
# load generator's p50. GATEWAY_ENV (e.g. "env TOKIO_WORKER_THREADS=1")
# prefixes the gateway's command. Needs perf.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
toolwire=${1:?usage: sched-stat.sh TOOLWIRE_BIN [CONNECTIONS] [CALLS]} connections=${2:-1} calls=${3:-20000}
dir=$(mktemp -d)
"$bin/toolwire-echo" 19201 >/dev/null 2>&1 &
upstream=$!
write_gateway_config "$dir/gateway.toml" 19202 19201
RUST_LOG=warn ${GATEWAY_ENV:-} "$toolwire" gateway --config "$dir/gateway.toml" >/dev/null 2>"$dir/gateway.err" &
gateway=$!
trap 'kill $gateway $upstream 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1.5
"$bin/loadgen" 19202 legacy --connections "$connections" --requests 2000 --warmup 0 >/dev/null
perf stat -e context-switches,cpu-clock,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait \
    -p "$gateway" -o "$dir/stat.txt" &
stat=$!
sleep 0.3
out=$("$bin/loadgen" 19202 legacy --connections "$connections" --requests "$calls" --duration 600 --warmup 0 | sed -n 1p)
kill -INT $stat
wait $stat || true
echo "$out" | grep -o 'p50 [0-9.]* ms'
awk -v n="$calls" '
    /context-switches|futex|epoll_wait/ { gsub(",", "", $1); printf "%s per call: %.2f\n", $2, $1 / n }
    /cpu-clock/ { gsub(",", "", $1); printf "gateway CPU per call: %.1f us\n", $1 * 1000 / n }' "$dir/stat.txt"
