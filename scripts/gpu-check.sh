#!/usr/bin/env bash
# The GPU check, one command on a machine with an NVIDIA GPU:
#   scripts/gpu-check.sh LIBTORCH_DIR      (a CUDA LibTorch 2.x, e.g. an unpacked libtorch/ download)
# 1. builds the CLI and the tests into build-gpu against it (-DCMAKE_PREFIX_PATH=LIBTORCH_DIR);
# 2. runs the tests labelled cuda (`ctest -L cuda`), failing if they skip (no GPU seen);
# 3. trains every family of tests/data/golden/families.tsv (its config and tiny golden sizes) for
#    STEPS updates (default 40) on --device cuda, in fp32 and in bf16, on synthetic corpora like
#    tests/test_resume.cpp's, and prints a table: family, precision, median units/s after 10
#    updates (the unit is the family's own: tokens, words, sentences...), last training loss.
# Output under build-gpu/gpu-check (table.txt, one run folder and log per row). Environment:
# STEPS, JOBS (build jobs, default nproc), FAMILIES (space-separated subset of families.tsv).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "gpu-check: $*" >&2; exit 2; }
if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
LIBTORCH=$(cd "$1" 2>/dev/null && pwd) || die "no folder $1"
compgen -G "$LIBTORCH/share/cmake/Torch/TorchConfig.cmake" >/dev/null || compgen -G "$LIBTORCH/lib*/cmake/Torch/TorchConfig.cmake" >/dev/null ||
  die "$LIBTORCH has no share/cmake/Torch/TorchConfig.cmake: give the LibTorch folder (the one holding lib/ and include/)"
compgen -G "$LIBTORCH/lib/libtorch_cuda*.so" >/dev/null || die "$LIBTORCH has no lib/libtorch_cuda.so: a CPU LibTorch; give a CUDA one"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this machine has no NVIDIA driver (run it where there is a GPU)"
nvidia-smi -L || die "nvidia-smi sees no GPU"
command -v python3 >/dev/null || die "python3 is needed for the synthetic corpora and the table"

BUILD=build-gpu
OUT=$BUILD/gpu-check
STEPS=${STEPS:-40}
[ "$STEPS" -gt 10 ] 2>/dev/null || die "STEPS must be a number > 10 (the rate is the median after update 10)"

echo "== build ($BUILD, LibTorch $LIBTORCH)"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$LIBTORCH" -DNLPZOO_BUILD_TESTS=ON
cmake --build "$BUILD" -j"${JOBS:-$(nproc)}"

echo "== tests labelled cuda"
ctest --test-dir "$BUILD" -L cuda --no-tests=error --output-on-failure | tee "$BUILD/gpu-check-ctest.log"
if grep -q 'Skipped' "$BUILD/gpu-check-ctest.log"; then
  die "CUDA tests skipped: the build's LibTorch sees no CUDA device (torch::cuda::is_available() is false)"
fi

echo "== synthetic corpora ($OUT/data)"
rm -rf "$OUT" && mkdir -p "$OUT/data"
# As test::write_task_corpora (tests/test_util.cpp), ten times over: Spanish-English number and
# colour pairs (translation; the English side for language models and BERT), those English lines
# labelled "is the first word a colour?" (classification, 2 columns, no header), and two topics
# that never share a line (word vectors).
python3 - "$OUT/data" <<'PY'
import random, sys
d = sys.argv[1]
words = [("uno", "one"), ("dos", "two"), ("tres", "three"), ("cuatro", "four"), ("cinco", "five"),
         ("rojo", "red"), ("verde", "green"), ("azul", "blue"), ("negro", "black"), ("blanco", "white")]
pairs = [(a, b) for a in words for b in words] * 10
es = "".join(f"el {a[0]} y el {b[0]}\n" for a, b in pairs)
en = "".join(f"the {a[1]} and the {b[1]}\n" for a, b in pairs)
for split in ("train", "valid", "test"):
    open(f"{d}/{split}.es", "w").write(es)
    open(f"{d}/{split}.en", "w").write(en)
tsv = "".join(f"the {a[1]} and the {b[1]}\t{int(a[0] in ('rojo', 'verde', 'azul', 'negro', 'blanco'))}\n" for a, b in pairs)
for split in ("train", "dev", "test"):
    open(f"{d}/{split}.tsv", "w").write(tsv)
rng = random.Random(3)
topics = (["one", "two", "six", "ten", "nine", "four"], ["cat", "dog", "cow", "pig", "hen", "fox"])
open(f"{d}/english.txt", "w").write("".join(
    " ".join(rng.choice(topics[i % 2]) for _ in range(6)) + (" the\n" if i % 2 else " a\n") for i in range(4000)))
PY

echo "== training rates on cuda ($STEPS updates per row)"
printf '%-30s %-5s %14s %-10s %10s\n' family prec "units/s" unit loss | tee "$OUT/table.txt"
failed=0
while IFS=$'\t' read -r family config _data _steps flags; do
  case "$family" in ''|'#'*) continue ;; esac
  if [ -n "${FAMILIES:-}" ] && [[ " $FAMILIES " != *" $family "* ]]; then continue; fi
  for precision in fp32 bf16; do
    run=$OUT/$family-$precision
    # flags: shell words as tests/data/golden/families.tsv writes them ('' is an empty value).
    if eval "\"$BUILD/nlpzoo\" train --config \"configs/$config\" --data-dir \"$OUT/data\" --run-dir \"$run\" $flags \
        --max-steps $STEPS --device cuda --precision $precision --valid_interval 1000000 --log_interval 5" \
        >"$run.log" 2>&1; then
      python3 - "$run/metrics.jsonl" "$family" "$precision" <<'PY' | tee -a "$OUT/table.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
train = [r for r in rows if any(k.endswith("_per_s") for k in r)]
key = next(k for k in train[-1] if k.endswith("_per_s"))
rate = statistics.median(r[key] for r in train if r["step"] > 10)
print(f"{sys.argv[2]:<30} {sys.argv[3]:<5} {rate:14.1f} {key[:-6]:<10} {train[-1]['loss']:10.4f}")
PY
    else
      failed=1
      printf '%-30s %-5s %14s %s\n' "$family" "$precision" failed "$(grep -m1 -i error "$run.log" || tail -n1 "$run.log")" |
        tee -a "$OUT/table.txt"
    fi
  done
done < tests/data/golden/families.tsv
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/table.txt"
echo "table in $OUT/table.txt"
exit "$failed"
