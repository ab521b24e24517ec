#!/usr/bin/env bash
# Builds ameba from scratch-or-incrementally and runs the whole test suite.
#   scripts/test.sh            build in ./build and run ctest
# Environment: BUILD_DIR (default build), JOBS (default nproc).
case ${1:-} in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
[ $# = 0 ] || { echo "test.sh: takes no arguments, got '$1' (test.sh --help)" >&2; exit 2; }
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -DAMEBA_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD_DIR" -j "$JOBS"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 900
