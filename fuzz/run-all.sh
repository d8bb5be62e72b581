#!/usr/bin/env bash
# Runs every fuzz target one after another, one job, one worker.
# Usage: fuzz/run-all.sh [SECONDS_PER_TARGET]   (default 600)
set -u
cd "$(dirname "$0")"
secs=${1:-600}
mkdir -p logs
for t in $(cargo +nightly fuzz list); do
    echo "== $t ($secs s)"
    cargo +nightly fuzz run -O "$t" -- -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -jobs=1 -workers=1 -print_final_stats=1 \
        >"logs/$t.log" 2>&1
    echo "   exit $?; $(grep -E '^(stat::number_of_executed_units|Done)' "logs/$t.log" | tr '\n' ' ')"
done
