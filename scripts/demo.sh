#!/usr/bin/env bash
# Builds ameba and runs its main job on the bundled false-sharing example:
# the program is built with `ameba cc`, run, and its exact per-object counts
# are printed as a table, heaviest object first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target ameba ameba-runtime
out=$(mktemp -d)
echo "== building tests/workloads/false_sharing.c with ameba cc"
"$BUILD_DIR/bin/ameba" cc -O2 -pthread tests/workloads/false_sharing.c -o "$out/false_sharing"
echo "== running it with AMEBA_ORACLE=$out/oracle.json"
AMEBA_ORACLE="$out/oracle.json" "$out/false_sharing"
echo "== exact per-object counts"
"$BUILD_DIR/bin/ameba" oracle "$out/oracle.json" --top 10
