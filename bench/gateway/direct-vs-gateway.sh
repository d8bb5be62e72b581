#!/usr/bin/env bash
# direct-vs-gateway.sh TOOLWIRE_BIN [ROUNDS] [CONNECTIONS] [DURATION]
#
# Per round: a fresh toolwire-echo and a gateway in front of it
# (write_gateway_config), then `loadgen legacy` for DURATION seconds
# (default 4, after 1 s of warm-up) directly and through the gateway; prints
# both rates and p50s and the gateway's CPU ticks over its load.
# GATEWAY_ENV prefixes the gateway's command (e.g. "env
# TOOLWIRE_CONNECTION_THREADS=2"); ECHO_ARGS are toolwire-echo's extra
# arguments (e.g. "--connection-threads 2").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
toolwire=${1:?usage: direct-vs-gateway.sh TOOLWIRE_BIN [ROUNDS] [CONNECTIONS] [DURATION]} rounds=${2:-3} connections=${3:-1} duration=${4:-4}
dir=$(mktemp -d)
gateway='' upstream=''
# shellcheck disable=SC2317
cleanup() { kill $gateway $upstream 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
rate() { grep -o '[0-9]* req/s, p50 [0-9.]* ms'; }
for round in $(seq "$rounds"); do
    # shellcheck disable=SC2086
    "$bin/toolwire-echo" 19201 ${ECHO_ARGS:-} >/dev/null 2>&1 &
    upstream=$!
    write_gateway_config "$dir/gateway.toml" 19202 19201
    RUST_LOG=warn ${GATEWAY_ENV:-} "$toolwire" gateway --config "$dir/gateway.toml" >/dev/null 2>"$dir/gateway.err" &
    gateway=$!
    sleep 1.5
    direct=$("$bin/loadgen" 19201 legacy --connections "$connections" --duration "$duration" --warmup 1 | sed -n 1p | rate)
    before=$(ticks $gateway)
    through=$("$bin/loadgen" 19202 legacy --connections "$connections" --duration "$duration" --warmup 1 | sed -n 1p | rate)
    after=$(ticks $gateway)
    echo "round $round: direct $direct; gateway $through; gateway CPU ticks $((after - before))"
    kill $gateway $upstream
    wait $gateway $upstream 2>/dev/null || true
    gateway='' upstream=''
done
