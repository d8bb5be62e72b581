#!/usr/bin/env bash
# A callgrind profile of `toolwire gateway` in front of toolwire-echo: 100
# calls of warm-up, the counters zeroed, then REQUESTS calls (default 2000)
# over one connection, and the profile dumped to OUT.1 (the gateway's log
# lines, at their default level, go to /dev/null).
#
#   bench/gateway/profile.sh TOOLWIRE_BIN OUT [WORKLOAD] [REQUESTS]
#
# WORKLOAD is a loadgen workload (default `legacy`, 2025-11-25 echo calls).
# Build the gateway with line tables so the profile names lines:
#   CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release -p toolwire-cli
# then, e.g., `callgrind_annotate --inclusive=yes OUT.1`; divide by REQUESTS.
#
# Needs valgrind, the bench binaries (bench/run.sh builds them;
# CARGO_TARGET_DIR is honoured) and ports 19011 and 19012 free on 127.0.0.1.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ $# -ge 2 ] || { echo "usage: $0 TOOLWIRE_BIN OUT [WORKLOAD] [REQUESTS]" >&2; exit 2; }
toolwire=$1 out=$2 workload=${3:-legacy} requests=${4:-2000}
config="$(mktemp --suffix=.toml)"
trap 'rm -f "$config"' EXIT
write_gateway_config "$config" 19012 19011
"$bin/toolwire-echo" 19011 >/dev/null 2>&1 &
upstream=$!
valgrind --tool=callgrind --callgrind-out-file="$out" "$toolwire" gateway --config "$config" \
    >/dev/null 2>&1 &
gateway=$!
for _ in $(seq 60); do
    curl -s -o /dev/null http://127.0.0.1:19012/ && break
    sleep 0.5
done
"$bin/loadgen" 19012 "$workload" --connections 1 --requests 100 --warmup 0 >/dev/null
callgrind_control -z $gateway >/dev/null 2>&1
"$bin/loadgen" 19012 "$workload" --connections 1 --requests "$requests" --duration 600 --warmup 0 |
    head -1
callgrind_control -d $gateway >/dev/null 2>&1
kill $gateway $upstream
wait $gateway $upstream 2>/dev/null || true
echo "profile of $requests calls: $out.1"
