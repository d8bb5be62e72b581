#!/usr/bin/env bash
# Two or more builds of `toolwire gateway`, side by side in alternating runs:
# 2025-11-25 echo calls (loadgen `legacy`) through each build in front of a
# fresh toolwire-echo, at one connection and at 32, 1 s warm-up then 5 s.
# Prints req/s, p50, and the CPU time per call of the gateway and of its
# upstream (utime + stime from /proc/<pid>/stat around the measured run).
#
#   bench/gateway/compare-builds.sh ROUNDS TOOLWIRE_BIN...
#
# GATEWAY_ENV (e.g. "TOKIO_WORKER_THREADS=1") is set for the gateways only.
#
# Needs the bench binaries (bench/run.sh builds them; CARGO_TARGET_DIR is
# honoured) and ports 19001 and 19002 free on 127.0.0.1.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
config="$(mktemp --suffix=.toml)"
trap 'rm -f "$config"' EXIT
write_gateway_config "$config" 19002 19001
run() { # toolwire connections
    "$bin/toolwire-echo" 19001 >/dev/null 2>&1 & local upstream=$!
    # shellcheck disable=SC2086 # GATEWAY_ENV is a list of NAME=VALUE words
    env ${GATEWAY_ENV:-} "$1" gateway --config "$config" 2>/dev/null & local gateway=$!
    sleep 1.5
    "$bin/loadgen" 19002 legacy --connections "$2" --duration 1 --warmup 0 >/dev/null
    local g0 u0 g1 u1 out n
    g0=$(ticks $gateway); u0=$(ticks $upstream)
    out=$("$bin/loadgen" 19002 legacy --connections "$2" --duration 5 --warmup 0 | grep 'req/s')
    g1=$(ticks $gateway); u1=$(ticks $upstream)
    n=$(echo "$out" | sed -E 's/.* ([0-9]+) ok.*/\1/')
    printf '%-40s %2s conn  %s  gateway CPU %s ns/call  upstream CPU %s ns/call\n' \
        "$1" "$2" "$(echo "$out" | sed -E 's/.*: ([0-9]+ req\/s), (p50 [0-9.]+ ms).*/\1, \2/')" \
        "$(per_call "$g0" "$g1" "$n")" "$(per_call "$u0" "$u1" "$n")"
    kill $gateway $upstream
    wait $gateway $upstream 2>/dev/null || true
}
[ $# -ge 2 ] || { echo "usage: $0 ROUNDS TOOLWIRE_BIN..." >&2; exit 2; }
rounds=$1
shift
for _ in $(seq 1 "$rounds"); do
    for connections in 1 32; do
        for toolwire in "$@"; do run "$toolwire" "$connections"; done
    done
done
