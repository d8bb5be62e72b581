#!/usr/bin/env bash
# Fails when two modules of the server crate import each other (directly or
# round a circle) or a file runs past 650 lines of code. Uses modgraph.py
# from the shared tools checked out beside the repository.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool="${MODGRAPH:-$here/../../../shared/tools/modgraph.py}"
if [[ ! -r "$tool" ]]; then
    echo "check-layers: $tool not found (set MODGRAPH to modgraph.py)" >&2
    exit 2
fi
exec python3 "$tool" 650 "$here/src"
