#!/usr/bin/env bash
# Writes the golden regression files under tests/data/golden/ that `ctest -L golden`
# (tests/test_golden.cpp) compares today's code with. Run it deliberately, as torchvision's
# accept flag: after a change that is meant to alter numerics or search output, then review
# `git diff tests/data/golden` and commit it with the change.
#
#   scripts/make_golden.sh                       rewrite every expected.json from the committed
#                                                checkpoints (e.g. after a beam-search change)
#   scripts/make_golden.sh FAMILY ...            only these families (names in families.tsv)
#   scripts/make_golden.sh --retrain [FAMILY ...]
#                                                also train the families' tiny checkpoints anew
#                                                (checkpoint_v2.pt and checkpoint_v1.pt) from
#                                                slices of `nlpzoo data bible` and ../shared/data/sst2,
#                                                as tests/data/golden/families.tsv says
#
# Deterministic: one thread (NLPZOO_THREADS=1), the configs' seed, fixed data slices; run twice
# on one machine it writes the same bytes. Retraining on another machine may change the last
# bits of the checkpoints (BLAS kernels), so do it only when the checkpoint format or a
# family's model changes. Environment: BUILD_DIR (default build), NLPZOO_SHARED_DIR (default
# ../shared, else /work/shared), GOLDEN_WORK (default $BUILD_DIR/golden: data slices and runs).
set -euo pipefail
cd "$(dirname "$0")/.."

retrain=0
families=()
for arg in "$@"; do
  case "$arg" in
    --retrain) retrain=1 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make_golden.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
    *) families+=("$arg") ;;
  esac
done

build=${BUILD_DIR:-build}
work=${GOLDEN_WORK:-$build/golden}
table=tests/data/golden/families.tsv
export NLPZOO_THREADS=1 OMP_NUM_THREADS=1

# The families asked for (all by default), checked against the table.
known=$(grep -v '^#' "$table" | cut -f1 | sed '/^$/d')
if [ ${#families[@]} -eq 0 ]; then
  mapfile -t families <<<"$known"
fi
for f in "${families[@]}"; do
  grep -qx -- "$f" <<<"$known" || { echo "make_golden.sh: '$f' is not a family of $table" >&2; exit 2; }
done

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}" --target nlpzoo nlpzoo_tests
nlpzoo=$build/nlpzoo

runs_env=()
if [ "$retrain" = 1 ]; then
  shared=${NLPZOO_SHARED_DIR:-../shared}
  [ -d "$shared/data" ] || shared=/work/shared
  # The slices: the first verse pairs of each split and the first 1000 lines of english.txt
  # (Genesis: WEB, then KJV), and the first 400 SST-2 training sentences.
  if [ ! -f "$work/bible-full/english.txt" ]; then
    "$nlpzoo" data bible --out "$work/bible-full"
  fi
  mkdir -p "$work/data/bible" "$work/data/sst2"
  head -n 300 "$work/bible-full/train.es" >"$work/data/bible/train.es"
  head -n 300 "$work/bible-full/train.en" >"$work/data/bible/train.en"
  for split in valid test; do
    for lang in es en; do head -n 40 "$work/bible-full/$split.$lang" >"$work/data/bible/$split.$lang"; done
  done
  head -n 1000 "$work/bible-full/english.txt" >"$work/data/bible/english.txt"
  head -n 401 "$shared/data/sst2/train.tsv" >"$work/data/sst2/train.tsv"
  head -n 101 "$shared/data/sst2/dev.tsv" >"$work/data/sst2/dev.tsv"

  for f in "${families[@]}"; do
    IFS=$'\t' read -r _ config data steps flags < <(grep -P "^\Q$f\E\t" "$table")
    echo "== $f: $config, $steps updates"
    rm -rf "$work/runs/$f"
    eval "words=($flags)"  # flags are shell words ('' is an empty value), as the tests read them
    "$nlpzoo" train --config "configs/$config" --data-dir "$work/data/$data" --run-dir "$work/runs/$f" \
      "${words[@]}" --max-steps "$steps" --valid_interval "$steps" --log_interval 50 --device cpu
  done
  runs_env=(NLPZOO_GOLDEN_RUNS="$work/runs")
fi

filter=""
for f in "${families[@]}"; do filter+="RegressionGolden/*/${f//[^A-Za-z0-9]/_}:"; done
env NLPZOO_GOLDEN_ACCEPT=1 "${runs_env[@]}" "$build/nlpzoo_tests" --gtest_filter="${filter%:}"
echo
du -cb tests/data/golden/*/* | tail -n 1 | awk '{printf "tests/data/golden: %d bytes\n", $1}'
git status --short tests/data/golden
