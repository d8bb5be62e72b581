# Sourced by the scripts beside it: the bench binaries' folder, a gateway
# config in front of toolwire-echo, and CPU time read from /proc.

# The bench binaries (bench/run.sh builds them; CARGO_TARGET_DIR is honoured).
bin="${CARGO_TARGET_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target}/release"

# write_gateway_config FILE GATEWAY_PORT UPSTREAM_PORT: a config for a gateway
# on GATEWAY_PORT in front of the upstream on UPSTREAM_PORT, its tools under
# their own names and no call limit to speak of. With GATEWAY_AUDIT set, the
# gateway also writes its audit records to that file (as the README's example
# configuration does).
write_gateway_config() {
    local audit=""
    [ -n "${GATEWAY_AUDIT:-}" ] && audit="audit = \"$GATEWAY_AUDIT\""
    cat > "$1" <<TOML
[gateway]
http = "127.0.0.1:$2"
call_limit = "4294967295/1"
$audit

[[upstream]]
name = "echo"
url = "http://127.0.0.1:$3/mcp"
prefix = ""
TOML
}

# ticks PID: the process's CPU time so far (user + system), in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# system_ticks PID: the part of it spent in the kernel.
system_ticks() { awk '{print $15}' "/proc/$1/stat"; }

# per_call TICKS_BEFORE TICKS_AFTER CALLS: nanoseconds of CPU per call.
per_call() { echo $(( ($2 - $1) * 1000000000 / $(getconf CLK_TCK) / $3 )); }
