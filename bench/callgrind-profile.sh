#!/usr/bin/env bash
# callgrind-profile.sh WORKLOAD OUT PORT [SERVER]
#
# A callgrind profile of one server (default: the bench's toolwire-echo)
# serving WORKLOAD (a loadgen workload: echo, legacy, list, ...) over one
# connection: 100 calls of warm-up, counters zeroed, then N calls (default
# 2,000) and a dump to OUT.1. EXTRA is passed to the server, VGOPTS to
# valgrind. Read it with `callgrind_annotate --inclusive=yes OUT.1`.
set -euo pipefail
bin="${CARGO_TARGET_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/target}/release"
workload=${1:?usage: callgrind-profile.sh WORKLOAD OUT PORT [SERVER]} out=${2:?} port=${3:?} server=${4:-$bin/toolwire-echo}
# shellcheck disable=SC2086
valgrind --tool=callgrind ${VGOPTS:-} --callgrind-out-file="$out" "$server" "$port" ${EXTRA:-} >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.5; done
"$bin/loadgen" "$port" "$workload" --connections 1 --requests 100 --warmup 0 >/dev/null
callgrind_control -z $pid >/dev/null 2>&1
"$bin/loadgen" "$port" "$workload" --connections 1 --requests "${N:-2000}" --duration 600 --warmup 0 | sed -n 1p
callgrind_control -d $pid >/dev/null 2>&1
