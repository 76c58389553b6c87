#!/usr/bin/env bash
# Installs dependencies, builds everything (the CLI and the test binaries), and runs every test
# (unit and regression) with ctest.
#   scripts/test.sh                 all tests
#   scripts/test.sh -L unit         only one label (any ctest arguments pass through)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure -j"${JOBS:-$(nproc)}" "$@"
