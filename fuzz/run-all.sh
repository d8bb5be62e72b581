#!/usr/bin/env bash
# Runs fuzz targets one after another, one job, one worker, and fails if any
# of them found a crash, a leak or a hang.
# Usage: fuzz/run-all.sh [SECONDS_PER_TARGET [TARGET ...]]
#        (default 600 s, every target)
set -u
cd "$(dirname "$0")"
secs=${1:-600}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build -O || { echo "fuzz: the targets do not build"; exit 1; }
mkdir -p logs
failed=()
for t in "${targets[@]}"; do
    echo "== $t ($secs s)"
    cargo +nightly fuzz run -O "$t" -- -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -jobs=1 -workers=1 -print_final_stats=1 \
        >"logs/$t.log" 2>&1
    status=$?
    # With -jobs, the run's own log is the child's fuzz-0.log.
    [ -f fuzz-0.log ] && cat fuzz-0.log >>"logs/$t.log" && rm -f fuzz-0.log
    if grep -qE '^(==[0-9]+==ERROR|SUMMARY: libFuzzer|.*deadly signal)' "logs/$t.log"; then
        status=1
    fi
    echo "   exit $status; $(grep -E '^(stat::number_of_executed_units|Done)' "logs/$t.log" | sort -u | tr '\n' ' ')"
    [ "$status" -eq 0 ] || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]} (see fuzz/logs/ and fuzz/artifacts/)"
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, $secs s each, no crash, leak or hang"
