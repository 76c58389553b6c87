#!/usr/bin/env bash
# Decoding speed and BLEU of models bench/seq2seq.sh (or bench/transformer.sh) trained, in each
# inference precision, beside the Python reference decoding its own model, in one run without
# retraining, so that decoding can be measured again on a quiet machine (bench/RESULTS.md).
#   bench/decode.sh --from DIR [--run ours|variant] [--n-test N (default 500)]
#                   [--precisions "fp32 bf16 int8"] [--no-reference] [--out DIR]
# (int8: float32 with --quantize int8, dynamic int8 linear layers.)
# DIR is a results folder of bench/seq2seq.sh: its run (ours, or variant), its ref/ model and its
# test.es/test.en. Per precision, `nlpzoo evaluate` at batch 64 and at batch 1 (one sentence at a
# time): greedy and beam 5 (GNMT alpha 0.6, as the reference), sentences/s inside the process, BLEU.
# The reference's model is evaluated again (`seq2seq_ref.py eval`, greedy batch 64 and beam 5 one
# at a time) in a copy of DIR/ref. Prints a table with ratios ours/reference.
set -euo pipefail
cd "$(dirname "$0")/.."

FROM=""
RUN=ours
N_TEST=500
PRECISIONS="fp32 bf16"
REFERENCE=1
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --from) FROM="$2"; shift 2 ;;
    --run) RUN="$2"; shift 2 ;;
    --n-test) N_TEST="$2"; shift 2 ;;
    --precisions) PRECISIONS="$2"; shift 2 ;;
    --no-reference) REFERENCE=0; shift ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$FROM" ] || { echo "bench: --from DIR is required (a bench/seq2seq.sh results folder)" >&2; exit 2; }
[ -f "$FROM/$RUN/checkpoint_last.pt" ] || { echo "bench: $FROM/$RUN/checkpoint_last.pt not found (--run ours|variant)" >&2; exit 1; }
if [ ! -s "$FROM/test.es" ] || [ ! -s "$FROM/test.en" ]; then
  echo "bench: $FROM/test.es or test.en missing" >&2
  exit 1
fi
MODEL=gru
grep -q '^arch = transformer' "$FROM/$RUN/config.ini" && MODEL=transformer
REF=../shared/bench/seq2seq_ref.py
if [ "$REFERENCE" = 1 ] && [ ! -f "$FROM/ref/$MODEL.pt" ]; then
  echo "bench: $FROM/ref/$MODEL.pt not found (pass --no-reference to time ours alone)" >&2
  exit 1
fi
NLPZOO=build/nlpzoo
[ -x "$NLPZOO" ] || scripts/setup.sh
[ -n "$OUT" ] || OUT="$FROM/decode-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE NLPZOO_THREADS=2
. bench/blas_core.sh
blas_core_export "$NLPZOO" "$OUT/matmul.txt" --size 2048 --repeat 10
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"

mkdir -p "$OUT/test$N_TEST"
head -n "$N_TEST" "$FROM/test.es" > "$OUT/test$N_TEST/test.es"
head -n "$N_TEST" "$FROM/test.en" > "$OUT/test$N_TEST/test.en"
for precision in $PRECISIONS; do
  for batch in 64 1; do
    echo "== ours: $precision, batch $batch"
    "$NLPZOO" evaluate --run-dir "$FROM/$RUN" --checkpoint last --split test --data-dir "$OUT/test$N_TEST" \
      --beam-size 5 --length-penalty 0.6 --length-penalty-form gnmt --batch-size "$batch" \
      $([ "$precision" = int8 ] && echo "--precision fp32 --quantize int8" || echo "--precision $precision") \
      | tee "$OUT/$precision.bs$batch.txt"
  done
done
if [ "$REFERENCE" = 1 ]; then
  echo "== reference: evaluate its model (a copy of $FROM/ref, where it writes its outputs)"
  rm -rf "$OUT/ref"
  cp -r "$FROM/ref" "$OUT/ref"
  /usr/bin/python3 "$REF" eval --model "$MODEL" --data data/bible --spm-src "$FROM/$RUN/spm.es.model" \
    --spm-tgt "$FROM/$RUN/spm.en.model" --n-test "$N_TEST" --out "$OUT/ref" > "$OUT/ref.eval.log" 2>&1
  tail -1 "$OUT/ref.eval.log" | cut -c1-200
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"

/usr/bin/python3 - "$OUT" "$PRECISIONS" <<'PY' | tee "$OUT/table.txt"
import json, os, re, sys
out, precisions = sys.argv[1], sys.argv[2].split()
def rates(path):
    """{"greedy": (sent/s, BLEU), "beam 5": ...} from an `nlpzoo evaluate` output (in process)."""
    text = open(path).read()
    return {m.group(1): (float(m.group(3)), float(m.group(2))) for m in
            re.finditer(r"BLEU (greedy|beam 5): BLEU = ([0-9.]+).*\n.*\n.*\(([0-9.]+) sent/s\)", text)}
ours = {(p, b): rates(f"{out}/{p}.bs{b}.txt") for p in precisions for b in (64, 1)}
nan = float("nan")
ref_file = [f"{out}/ref/{m}_eval.json" for m in ("gru", "transformer") if os.path.exists(f"{out}/ref/{m}_eval.json")]
ref = json.load(open(ref_file[0])) if ref_file else {}
rows = [("greedy, batch 64", 64, "greedy", "greedy_bs64"), ("greedy, one sentence at a time", 1, "greedy", "greedy_bs1"),
        ("beam 5, batch 64 (ref: one at a time)", 64, "beam 5", "beam5"),
        ("beam 5, one sentence at a time", 1, "beam 5", "beam5")]
print(f"OpenBLAS core: {os.environ.get('BLAS_CORE') or 'n/a'}, ATen kernels {os.environ.get('ATEN_KERNELS') or 'n/a'}; "
      "sentences/s inside the process, both sides")
print(f"{'decoding':40} {'precision':>9} {'sent/s':>8} {'BLEU':>7} {'ref sent/s':>10} {'ref BLEU':>8} {'ours/ref':>8}")
for label, batch, search, ref_key in rows:
    for p in precisions:
        speed, bleu = ours[(p, batch)][search]
        rs, rb = ref.get(ref_key, {}).get("sent_s", nan), ref.get(ref_key, {}).get("bleu", nan)
        print(f"{label:40} {p:>9} {speed:8.2f} {bleu:7.2f} {rs:10.2f} {rb:8.2f} {speed / rs if rs == rs else nan:8.2f}")
PY
