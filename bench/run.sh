#!/usr/bin/env bash
# Builds the benchmark servers and the load generator, then runs a scenario.
#
#   bench/run.sh                 # compare: toolwire vs rmcp vs bare hyper (about 1 minute)
#   bench/run.sh all             # every scenario (compare, sse, list, schema, stdio, listen)
#   bench/run.sh compare --rounds 3 --duration 10 --connections 64
#
# Everything runs on 127.0.0.1; each server is started fresh per run and
# killed after it. Only same-run ratios mean anything on a shared machine.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bins
# 10,000 listen streams need 10,000+ descriptors in each process.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec "$here/target/release/bench" "$@"
