#!/usr/bin/env bash
# Builds the benchmark servers and the load generator, then runs a scenario.
#
#   bench/run.sh                 # compare: toolwire vs rmcp vs bare hyper (about 1 minute)
#   bench/run.sh all             # every scenario (compare, sse, list, schema, legacy, stdio, listen, sessions)
#   bench/run.sh compare --rounds 3 --duration 10 --connections 64
#   bench/run.sh legacy          # 2025-11-25 clients (a session per connection): toolwire vs rmcp --sessions
#   bench/run.sh redis           # echo (rate-limit check) and bump (+ handle modify), memory vs Redis (own redis-server)
#   bench/run.sh redis-instructions   # the same four under callgrind, and Redis commands per call
#   bench/run.sh gateway         # 2025-11-25 echo: direct vs `toolwire gateway` vs FastMCP's proxy (TOOLWIRE_BIN)
#   bench/run.sh sessions        # 10,000 legacy sessions, their expiry, a second wave (about 1.5 minutes)
#   bench/run.sh instructions    # callgrind instructions per request (needs valgrind)
#   bench/run.sh toolwire-instructions   # only the toolwire rows of it (no peer built)
#   bench/run.sh toolwire-growth  # callgrind: a call and a list page with 10 to 10,000 tools registered
#   bench/run.sh stdio-instructions      # callgrind: echo over stdio, split into parsing, serving, transport
#   bench/run.sh gateway-instructions   # callgrind: echo directly vs through `toolwire gateway` (TOOLWIRE_BIN)
#   bench/run.sh soak --duration 120   # soak `toolwire serve` (default 600 s; build toolwire-cli first)
#   bench/run.sh client          # client SDKs against hyper-echo: toolwire's vs rmcp's (client-compare.sh)
#   bench/run.sh client-instructions   # the same clients under callgrind: instructions per call
#
# Everything runs on 127.0.0.1; each server is started fresh per run and
# killed after it. Only same-run ratios mean anything on a shared machine.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ "${1:-}" = toolwire-instructions ] || [ "${1:-}" = stdio-instructions ]; then
    cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bin bench --bin toolwire-echo
elif [ "${1:-}" = client ] || [ "${1:-}" = client-instructions ]; then
    cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bin hyper-echo --bin client-load
else
    cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bins
fi
# The binaries are where cargo put them (CARGO_TARGET_DIR, if set).
bin="${CARGO_TARGET_DIR:-$here/target}/release"
# 10,000 listen streams need 10,000+ descriptors in each process (the
# sessions scenario needs only a few: its sessions share 16 connections).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "${1:-}" = gateway ]; then
    # FastMCP's proxy, from PyPI, in a venv of its own (git-ignored).
    fastmcp_version=4.2.3
    venv="$here/.venv"
    if [ -z "${FASTMCP_PYTHON:-}" ] && ! "$venv/bin/python" -c \
        "import fastmcp, sys; sys.exit(fastmcp.__version__ != '$fastmcp_version')" 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet "fastmcp==$fastmcp_version"
    fi
fi
if [ "${1:-}" = gateway ] || [ "${1:-}" = gateway-instructions ]; then
    # The gateway: TOOLWIRE_BIN, else the root workspace's release build.
    export TOOLWIRE_BIN="${TOOLWIRE_BIN:-$here/../target/release/toolwire}"
    if [ ! -x "$TOOLWIRE_BIN" ]; then
        echo "run.sh: $TOOLWIRE_BIN not found: cargo build --release -p toolwire-cli, or set TOOLWIRE_BIN" >&2
        exit 1
    fi
fi
if [ "${1:-}" = client ] || [ "${1:-}" = client-instructions ]; then
    exec "$here/client-compare.sh" "$@"
fi
if [ "${1:-}" = soak ]; then
    shift
    exec "$bin/soak" "$@"
fi
exec "$bin/bench" "$@"
