#!/usr/bin/env bash
# Training rate of the seq2seq configs under each CPU-kernel choice, ours and the Python
# reference (../shared/bench/seq2seq_ref.py) one after the other in one run: a short bench in
# updates, not minutes, for the choices README "Threads" describes. Settings:
#   keep  NLPZOO_BLAS_CORE=keep: OpenBLAS's own core (what nlpzoo did before choosing one)
#   auto  nlpzoo's default: the core it chooses for this CPU (the reference gets the same)
#   bf16  auto plus --precision bf16 (ours only; skipped on a CPU without bf16 arithmetic)
#   avx2  auto with LibTorch's AVX2 kernels (ATEN_CPU_CAPABILITY=avx2, both sides): what Debian's
#         LibTorch picks by itself on an AVX-512 CPU, where nlpzoo now asks for AVX-512
# Each row trains from scratch for --steps updates (2 threads, OMP_WAIT_POLICY=PASSIVE) and
# reports the median target tokens/s after 20 warm-up updates (the reference's window, updates
# 21-80) and our training loss at the last update (the same core must give the same loss).
#   bench/train_rate.sh [--model gru|transformer] [--steps N (default 80)] [--settings "keep auto bf16 avx2"]
#                       [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=transformer
STEPS=80
SETTINGS="keep auto bf16 avx2"
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --settings) SETTINGS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$MODEL" in
  gru) CONFIG=configs/seq2seq-bahdanau-es-en.ini ;;
  transformer) CONFIG=configs/transformer-base-es-en.ini ;;
  *) echo "bench: --model gru|transformer (got $MODEL)" >&2; exit 2 ;;
esac
[ "$STEPS" -ge 80 ] || { echo "bench: --steps must be >= 80 (the reference's rate window ends at update 80)" >&2; exit 2; }
[ -n "$OUT" ] || OUT="bench/results/rate-$MODEL-$(date +%Y%m%d-%H%M%S)"
REF=../shared/bench/seq2seq_ref.py
[ -f "$REF" ] || { echo "bench: $REF not found (the shared folder sits beside the repository)" >&2; exit 1; }
NLPZOO=build/nlpzoo
[ -x "$NLPZOO" ] || scripts/setup.sh nlpzoo
DATA=data/bible
[ -s "$DATA/train.es" ] || "$NLPZOO" data bible --out "$DATA"
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE NLPZOO_THREADS=2
. bench/blas_core.sh

printf '%-6s %-12s %-7s %14s %14s %9s %12s\n' setting core ATen "ours tok/s" "ref tok/s" ours/ref "ours loss" > "$OUT/table.txt"
for setting in $SETTINGS; do
  precision=fp32 core_env=auto
  unset ATEN_CPU_CAPABILITY
  case "$setting" in
    keep) core_env=keep ;;
    auto) ;;
    bf16) precision=bf16 ;;
    avx2) export ATEN_CPU_CAPABILITY=avx2 ;;
    *) echo "bench: unknown setting $setting (keep, auto, bf16, avx2)" >&2; exit 2 ;;
  esac
  echo "== $setting: matrix-multiply rate and core"
  NLPZOO_BLAS_CORE=$core_env blas_core_export "$NLPZOO" "$OUT/$setting.matmul.txt" --size 1024 --repeat 5
  echo "== $setting: ours, $STEPS updates ($precision)"
  if ! NLPZOO_BLAS_CORE=$core_env "$NLPZOO" train --config "$CONFIG" --data-dir "$DATA" --run-dir "$OUT/$setting.ours" \
      --max-steps "$STEPS" --device cpu --precision "$precision" --valid_interval 1000000 --log_interval 10 \
      > "$OUT/$setting.ours.log" 2>&1; then
    echo "   skipped: $(grep -m1 -i error "$OUT/$setting.ours.log")"
    continue
  fi
  read -r ours_rate ours_loss < <(python3 - "$OUT/$setting.ours/metrics.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
train = [r for r in rows if "tokens_per_s" in r]
print(statistics.median(r["tokens_per_s"] for r in train if r["step"] > 20), train[-1]["loss"])
PY
)
  ref_rate=nan
  if [ "$precision" = fp32 ]; then
    echo "== $setting: reference, 80 updates (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset})"
    /usr/bin/python3 "$REF" train --model "$MODEL" --data "$DATA" --spm-src "$OUT/$setting.ours/spm.es.model" \
      --spm-tgt "$OUT/$setting.ours/spm.en.model" --max-steps 80 --out "$OUT/$setting.ref" > "$OUT/$setting.ref.log" 2>&1
    ref_rate=$(sed -n 's/.*window 1: \([0-9.]*\) tgt tok\/s.*/\1/p' "$OUT/$setting.ref.log")
  fi
  printf '%-6s %-12s %-7s %14.1f %14.1f %9.2f %12.4f\n' "$setting" "${BLAS_CORE:-n/a}" "${ATEN_KERNELS:-n/a}" \
    "$ours_rate" "$ref_rate" \
    "$(python3 -c "print($ours_rate / float('$ref_rate'))")" "$ours_loss" | tee -a "$OUT/table.txt"
done
echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/table.txt"
cat "$OUT/table.txt"
echo "results in $OUT (table.txt)"
