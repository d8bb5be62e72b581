#!/usr/bin/env bash
# Where the CPU of one call goes, direct and through a front, on the same
# cores: 2025-11-25 echo calls (loadgen `legacy`) at CONNECTIONS connections
# (default 32), 1 s warm-up then DURATION seconds (default 5), to
#
#   direct   loadgen -> toolwire-echo
#   hyper    loadgen -> bare hyper proxy -> toolwire-echo
#   gateway  loadgen -> toolwire gateway -> toolwire-echo
#
# For each it prints req/s and the CPU time per call (utime + stime) of the
# load generator, the front (and the kernel's share of the front's) and the
# upstream, so the throughput ratio can be
# accounted for: on shared cores, req/s is about 1 / (CPU per call summed
# over the processes), so a front that costs F per call can reach at most
# (L + U) / (L + U' + F) of direct, L, U and U' being the load generator's and
# the upstream's costs without and with the front.
#
#   bench/gateway/cpu-budget.sh TOOLWIRE_BIN [CONNECTIONS] [DURATION] [ROUNDS]
#
# KINDS picks the rows (default "direct hyper gateway").
# GATEWAY_ENV (e.g. "env RUST_LOG=warn") is put before the gateway's command,
# and its standard error goes to GATEWAY_STDERR (default /dev/null; a file
# shows what writing its log lines costs).
#
# Needs the bench binaries (bench/run.sh builds them; CARGO_TARGET_DIR is
# honoured) and ports 19101 and 19102 free on 127.0.0.1.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ $# -ge 1 ] || { echo "usage: $0 TOOLWIRE_BIN [CONNECTIONS] [DURATION] [ROUNDS]" >&2; exit 2; }
toolwire=$1 connections=${2:-32} duration=${3:-5} rounds=${4:-1}
config="$(mktemp --suffix=.toml)"
load_times="$(mktemp)"
trap 'rm -f "$config" "$load_times"' EXIT
write_gateway_config "$config" 19102 19101
start_front() { # kind -> pid on stdout, nothing for direct
    case $1 in
        direct) ;;
        hyper) "$bin/hyper-proxy" 19102 19101 >/dev/null 2>&1 & echo $! ;;
        # shellcheck disable=SC2086 # GATEWAY_ENV is words
        gateway) ${GATEWAY_ENV:-} "$toolwire" gateway --config "$config" \
            >/dev/null 2>>"${GATEWAY_STDERR:-/dev/null}" & echo $! ;;
    esac
}
run() { # kind
    "$bin/toolwire-echo" 19101 >/dev/null 2>&1 & local upstream=$!
    local front port=19101
    front=$(start_front "$1")
    [ -n "$front" ] && port=19102
    sleep 1.5
    "$bin/loadgen" $port legacy --connections "$connections" --duration 1 --warmup 0 >/dev/null
    local f0=0 f1=0 fs0=0 fs1=0 u0 u1 out n load
    [ -n "$front" ] && f0=$(ticks "$front") && fs0=$(system_ticks "$front")
    u0=$(ticks $upstream)
    out=$(/usr/bin/time -f '%U %S' -o "$load_times" \
        "$bin/loadgen" $port legacy --connections "$connections" --duration "$duration" --warmup 0 |
        grep 'req/s')
    [ -n "$front" ] && f1=$(ticks "$front") && fs1=$(system_ticks "$front")
    u1=$(ticks $upstream)
    n=$(echo "$out" | sed -E 's/.* ([0-9]+) ok.*/\1/')
    load=$(awk -v n="$n" '{printf "%d", ($1 + $2) * 1e9 / n}' "$load_times")
    printf '%-8s %2s conn  %s  loadgen %6s ns/call  front %6s ns/call (system %6s)  upstream %6s ns/call\n' \
        "$1" "$connections" "$(echo "$out" | sed -E 's/.*: ([0-9]+ req\/s), (p50 [0-9.]+ ms).*/\1, \2/')" \
        "$load" "$(per_call "$f0" "$f1" "$n")" "$(per_call "$fs0" "$fs1" "$n")" "$(per_call "$u0" "$u1" "$n")"
    # shellcheck disable=SC2086 # $front is empty for direct
    kill $front $upstream
    wait $front $upstream 2>/dev/null || true
}
for _ in $(seq 1 "$rounds"); do
    for kind in ${KINDS:-direct hyper gateway}; do run $kind; done
done
