#!/usr/bin/env bash
# stdio-tap.sh CMD ARGS... : runs CMD with its stdin copied (appended) to $TAP_LOG, so a
# test can see what a stdio client sent (legacy-servers.sh: was there a server/discover
# probe?). The log file is in the environment, not the arguments, so the command line
# (toolwire's eras.json key) stays the same between runs.
set -uo pipefail
: "${TAP_LOG:?stdio-tap.sh: set TAP_LOG to the file to append to}"
[ $# -ge 1 ] || { echo "usage: TAP_LOG=FILE stdio-tap.sh CMD ARGS..." >&2; exit 2; }
tee -a "$TAP_LOG" | "$@"
