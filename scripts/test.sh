#!/usr/bin/env bash
# Installs dependencies, builds everything (the CLI and the test binaries), and runs every test
# (unit and regression) with ctest.
#   scripts/test.sh                 all tests
#   scripts/test.sh -L unit         only one label (any ctest arguments pass through)
#   scripts/test.sh --zoo [NAME ...] the slow suite instead (not CI): train the reference models of
#                                   checkpoints/MANIFEST.json (nlpzoo zoo train) and check them (zoo check)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--zoo" ]; then
  shift
  scripts/setup.sh nlpzoo
  [ -f data/bible/train.en ] || build/nlpzoo data bible --out data/bible
  [ -f data/english/english.txt ] || build/nlpzoo data english --out data/english
  build/nlpzoo zoo train "$@"
  exec build/nlpzoo zoo check "$@"
fi
scripts/setup.sh
cd build
ctest --output-on-failure -j"${JOBS:-$(nproc)}" "$@"
