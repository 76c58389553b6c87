#!/usr/bin/env bash
# Side-by-side benchmark: our attention GRU (configs/seq2seq-bahdanau-es-en.ini) or Transformer
# (configs/transformer-base-es-en.ini, --model transformer) and the Python PyTorch reference
# ../shared/bench/seq2seq_ref.py --model gru|transformer, on the same Bible
# corpus, the same SentencePiece models (ours, passed to the reference), the same thread setup
# (2 threads, OMP_WAIT_POLICY=PASSIVE) and the same wall-clock training budget, one after
# the other in one run. Prints a table: train target tokens/s, peak RSS, valid perplexity,
# test BLEU and decoding sentences/s (greedy batched, beam 5 with the GNMT penalty 0.6 as the
# reference uses), with ratios ours/reference.
#   bench/seq2seq.sh [--model gru|transformer] [--minutes M (default 20)] [--n-test N (default 500)] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=gru
MINUTES=20
N_TEST=500
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --minutes) MINUTES="$2"; shift 2 ;;
    --n-test) N_TEST="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$MODEL" in
  gru) CONFIG=configs/seq2seq-bahdanau-es-en.ini ;;
  transformer) CONFIG=configs/transformer-base-es-en.ini ;;
  *) echo "bench: --model gru|transformer (got $MODEL)" >&2; exit 2 ;;
esac
[ -n "$OUT" ] || OUT="bench/results/$MODEL-$(date +%Y%m%d-%H%M%S)"
REF=../shared/bench/seq2seq_ref.py
[ -f "$REF" ] || { echo "bench: $REF not found (the shared folder sits beside the repository)" >&2; exit 1; }
NLPZOO=build/nlpzoo
[ -x "$NLPZOO" ] || scripts/setup.sh
DATA=data/bible
[ -s "$DATA/train.es" ] || "$NLPZOO" data bible --out "$DATA"
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE NLPZOO_THREADS=2
now() { date +%s.%N; }
# Peak RSS in MiB of a command, from GNU time.
rss_of() { awk '/Maximum resident set size/ {printf "%.0f", $NF / 1024}' "$1"; }

echo "== matrix-multiply rate (the yardstick of model FLOP utilisation)"
. bench/blas_core.sh
blas_core_export "$NLPZOO" "$OUT/matmul.txt" --size 2048 --repeat 10

echo "== ours: train $MINUTES min"
/usr/bin/time -v -o "$OUT/ours.train.time" "$NLPZOO" train --config "$CONFIG" \
  --data-dir "$DATA" --run-dir "$OUT/ours" --max-time "$MINUTES" --device cpu \
  --valid_interval 1000000 --log_interval 20 > "$OUT/ours.train.log"
tail -2 "$OUT/ours.train.log"

echo "== reference: train $MINUTES min (same SentencePiece models)"
/usr/bin/python3 "$REF" train --model "$MODEL" --data "$DATA" --spm-src "$OUT/ours/spm.es.model" \
  --spm-tgt "$OUT/ours/spm.en.model" --minutes "$MINUTES" --out "$OUT/ref" > "$OUT/ref.train.log" 2>&1
tail -1 "$OUT/ref.train.log" | cut -c1-200
echo "== reference: evaluate"
/usr/bin/python3 "$REF" eval --model "$MODEL" --data "$DATA" --spm-src "$OUT/ours/spm.es.model" \
  --spm-tgt "$OUT/ours/spm.en.model" --n-test "$N_TEST" --out "$OUT/ref" > "$OUT/ref.eval.log" 2>&1
tail -1 "$OUT/ref.eval.log"

echo "== ours: evaluate"
"$NLPZOO" evaluate --run-dir "$OUT/ours" --checkpoint last --split valid --no-bleu | tee "$OUT/ours.valid.txt"
mkdir -p "$OUT/test$N_TEST"
head -n "$N_TEST" "$DATA/test.es" | tee "$OUT/test.es" > "$OUT/test$N_TEST/test.es"
head -n "$N_TEST" "$DATA/test.en" | tee "$OUT/test.en" > "$OUT/test$N_TEST/test.en"
# Decoding time inside the process (as the reference measures it), greedy and beam 5 batched.
"$NLPZOO" evaluate --run-dir "$OUT/ours" --checkpoint last --split test --data-dir "$OUT/test$N_TEST" \
  --beam-size 5 --length-penalty 0.6 --length-penalty-form gnmt --batch-size 64 | tee "$OUT/ours.evaluate.txt"
decode() {  # name, translate flags...
  local name=$1; shift
  local t0 t1
  t0=$(now)
  /usr/bin/time -v -o "$OUT/ours.$name.time" "$NLPZOO" translate --run-dir "$OUT/ours" --checkpoint last "$@" \
    < "$OUT/test.es" > "$OUT/ours.$name.hyp"
  t1=$(now)
  echo "$name $(echo "$N_TEST / ($t1 - $t0)" | bc -l) $("$NLPZOO" bleu --ref "$OUT/test.en" --hyp "$OUT/ours.$name.hyp" | awk 'NR==1 {print $3}')" >> "$OUT/ours.decode.txt"
}
: > "$OUT/ours.decode.txt"
decode greedy --beam-size 1 --batch-size 64
decode beam5 --beam-size 5 --length-penalty 0.6 --length-penalty-form gnmt --batch-size 64
decode beam5_bs1 --beam-size 5 --length-penalty 0.6 --length-penalty-form gnmt --batch-size 1

/usr/bin/python3 - "$OUT" "$MODEL" <<'PY'
import json, os, re, statistics, sys
out, model = sys.argv[1], sys.argv[2]
def rss(path):
    for line in open(path):
        if "Maximum resident set size" in line:
            return int(line.split()[-1]) / 1024
metrics = [json.loads(l) for l in open(f"{out}/ours/metrics.jsonl")]
train = [m for m in metrics if "tokens_per_s" in m]
# After 20 warm-up updates, as the reference; its windows stop at step 200, ours run to the
# end of the budget (the median of the logged intervals resists a passing disturbance).
window = [m["tokens_per_s"] for m in train if m["step"] > 20] or [m["tokens_per_s"] for m in train]
ours_tok = statistics.median(window)
ours_steps = train[-1]["step"] if train else 0
valid = open(f"{out}/ours.valid.txt").read()
ours_ppl = float(re.search(r"perplexity ([0-9.]+)", valid).group(1))
dec = {l.split()[0]: (float(l.split()[1]), float(l.split()[2].rstrip(","))) for l in open(f"{out}/ours.decode.txt")}
inproc = {m.group(1): float(m.group(2)) for m in
          re.finditer(r"BLEU (greedy|beam 5): .*\n.*\n.*\(([0-9.]+) sent/s\)", open(f"{out}/ours.evaluate.txt").read())}
rt = json.load(open(f"{out}/ref/{model}_train.json"))
re_ = json.load(open(f"{out}/ref/{model}_eval.json"))
ref_tok = rt["bench"]["tok_s_median"] if rt.get("bench") else float("nan")
rows = [
    ("train target tokens/s (median after 20 updates)", ours_tok, ref_tok),
    ("updates in the budget", ours_steps, rt["steps"]),
    ("peak RSS training (MiB)", rss(f"{out}/ours.train.time"), rt["peak_rss_mib_end"]),
    ("valid perplexity", ours_ppl, re_["valid_ppl"]),
    ("test BLEU greedy", dec["greedy"][1], re_["greedy_bs64"]["bleu"]),
    ("test BLEU beam 5", dec["beam5"][1], re_["beam5"]["bleu"]),
    ("greedy decoding sent/s (batch 64, in process)", inproc["greedy"], re_["greedy_bs64"]["sent_s"]),
    ("beam-5 decoding sent/s (batch 64, in process)", inproc["beam 5"], re_["beam5"]["sent_s"]),
    ("greedy decoding sent/s (batch 64, whole process)", dec["greedy"][0], re_["greedy_bs64"]["sent_s"]),
    ("beam-5 decoding sent/s (whole process; ref: one at a time)", dec["beam5"][0], re_["beam5"]["sent_s"]),
    ("beam-5 decoding sent/s (one at a time)", dec["beam5_bs1"][0], re_["beam5"]["sent_s"]),
    ("peak RSS beam-5 decoding (MiB)", rss(f"{out}/ours.beam5.time"), re_["peak_rss_mib"]),
]
if model == "transformer":
    # Training FLOPs per target token ~ 3 x forward (forward + backward), forward = 2 x the
    # multiply-adds of the weight matrices a token passes: encoder layers 4d^2 + 2 d f (source
    # tokens, counted as one per target token), decoder layers 8d^2 + 2 d f, output d V.
    # Attention's own QK^T and AV products (short sequences here) are left out.
    cfg = dict(l.split(" = ", 1) for l in open(f"{out}/ours/config.ini").read().splitlines() if " = " in l)
    d, f, V = int(cfg["d_model"]), int(cfg["ffn_dim"]), int(cfg["tgt_vocab_size"])
    le, ld = int(cfg["num_encoder_layers"]), int(cfg["num_decoder_layers"])
    flops_per_token = 6 * (le * (4 * d * d + 2 * d * f) + ld * (8 * d * d + 2 * d * f) + d * V)
    mm = float(re.search(r"([0-9.]+) GFLOP/s", open(f"{out}/matmul.txt").read()).group(1)) * 1e9
    rows.insert(1, ("train GFLOP/s (~6 x weights x tokens)", ours_tok * flops_per_token / 1e9,
                    ref_tok * flops_per_token / 1e9))
    rows.insert(2, ("  as % of measured matmul rate", 100 * ours_tok * flops_per_token / mm,
                    100 * ref_tok * flops_per_token / mm))
lines = [f"OpenBLAS core (both sides): {os.environ.get('BLAS_CORE') or 'n/a'}",
         f"{'metric':54} {'ours':>10} {'reference':>10} {'ours/ref':>9}"]
for name, a, b in rows:
    ratio = a / b if b and b == b else float("nan")
    lines.append(f"{name:54} {a:10.2f} {b:10.2f} {ratio:9.2f}")
table = "\n".join(lines)
print(table)
open(f"{out}/table.txt", "w").write(table + "\n")
PY
echo "results in $OUT (table.txt)"
