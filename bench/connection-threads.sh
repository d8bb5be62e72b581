#!/usr/bin/env bash
# toolwire-echo served on the runtime's threads (--connection-threads 0) and
# on connection threads (--connection-threads N), one after the other, each
# round with fresh servers: 2026-07-28 echo and 2025-11-25 session echo from
# loadgen, which shares the machine's cores with the server.
#
#   bench/connection-threads.sh [THREADS] [ROUNDS] [CONNECTIONS] [DURATION]
#
# THREADS defaults to the number of CPUs. Needs the bench binaries
# (bench/run.sh builds them; CARGO_TARGET_DIR is honoured). Only 127.0.0.1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
threads=${1:-$(nproc)} rounds=${2:-3} connections=${3:-32} duration=${4:-5}
bin="${CARGO_TARGET_DIR:-$here/target}/release"
for binary in toolwire-echo loadgen; do
    [ -x "$bin/$binary" ] || { echo "$bin/$binary missing: bench/run.sh builds it" >&2; exit 1; }
done
port=$((20000 + RANDOM % 20000))
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null' EXIT
for round in $(seq 1 "$rounds"); do
    for count in 0 "$threads"; do
        for workload in echo legacy; do
            "$bin/toolwire-echo" "$port" --connection-threads "$count" >/dev/null 2>&1 &
            server=$!
            for _ in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
            "$bin/loadgen" "$port" "$workload" --connections "$connections" --duration 1 >/dev/null
            result=$("$bin/loadgen" "$port" "$workload" --connections "$connections" --duration "$duration" | sed -n 1p)
            echo "round $round, connection threads $count: $result"
            kill "$server"
            wait "$server" 2>/dev/null || true
            server=
        done
    done
done
