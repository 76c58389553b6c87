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
#                    [--variant "--KEY VALUE ..."] [--no-reference]
# --variant also trains ours with those config overrides (e.g. "--input_feeding true") for the
# same budget in the same run, and adds its column (variant/reference ratio last).
# --no-reference skips the reference (its column reads nan): for comparing ours with a variant,
# 20 minutes sooner.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=gru
MINUTES=20
N_TEST=500
OUT=""
VARIANT=""
REFERENCE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --minutes) MINUTES="$2"; shift 2 ;;
    --n-test) N_TEST="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --variant) VARIANT="$2"; shift 2 ;;
    --no-reference) REFERENCE=0; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
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

train_ours() {  # name, extra train flags...
  local name=$1; shift
  echo "== $name: train $MINUTES min $*"
  /usr/bin/time -v -o "$OUT/$name.train.time" "$NLPZOO" train --config "$CONFIG" \
    --data-dir "$DATA" --run-dir "$OUT/$name" --max-time "$MINUTES" --device cpu \
    --valid_interval 1000000 --log_interval 20 "$@" > "$OUT/$name.train.log"
  tail -2 "$OUT/$name.train.log"
}
train_ours ours
# shellcheck disable=SC2086  # the variant's flags split on spaces, as typed
[ -z "$VARIANT" ] || train_ours variant $VARIANT

if [ "$REFERENCE" = 1 ]; then
  echo "== reference: train $MINUTES min (same SentencePiece models)"
  /usr/bin/python3 "$REF" train --model "$MODEL" --data "$DATA" --spm-src "$OUT/ours/spm.es.model" \
    --spm-tgt "$OUT/ours/spm.en.model" --minutes "$MINUTES" --out "$OUT/ref" > "$OUT/ref.train.log" 2>&1
  tail -1 "$OUT/ref.train.log" | cut -c1-200
  echo "== reference: evaluate"
  /usr/bin/python3 "$REF" eval --model "$MODEL" --data "$DATA" --spm-src "$OUT/ours/spm.es.model" \
    --spm-tgt "$OUT/ours/spm.en.model" --n-test "$N_TEST" --out "$OUT/ref" > "$OUT/ref.eval.log" 2>&1
  tail -1 "$OUT/ref.eval.log"
fi

mkdir -p "$OUT/test$N_TEST"
head -n "$N_TEST" "$DATA/test.es" | tee "$OUT/test.es" > "$OUT/test$N_TEST/test.es"
head -n "$N_TEST" "$DATA/test.en" | tee "$OUT/test.en" > "$OUT/test$N_TEST/test.en"
evaluate_ours() {  # name
  local name=$1
  echo "== $name: evaluate"
  "$NLPZOO" evaluate --run-dir "$OUT/$name" --checkpoint last --split valid --no-bleu | tee "$OUT/$name.valid.txt"
  # Decoding time inside the process (as the reference measures it), greedy and beam 5 batched.
  "$NLPZOO" evaluate --run-dir "$OUT/$name" --checkpoint last --split test --data-dir "$OUT/test$N_TEST" \
    --beam-size 5 --length-penalty 0.6 --length-penalty-form gnmt --batch-size 64 | tee "$OUT/$name.evaluate.txt"
  : > "$OUT/$name.decode.txt"
  decode "$name" greedy --beam-size 1 --batch-size 64
  decode "$name" beam5 --beam-size 5 --length-penalty 0.6 --length-penalty-form gnmt --batch-size 64
  decode "$name" beam5_bs1 --beam-size 5 --length-penalty 0.6 --length-penalty-form gnmt --batch-size 1
  # The reference's (and fairseq's) stopping rule, for a like-for-like speed row.
  decode "$name" beam5_bs1_es --beam-size 5 --length-penalty 0.6 --length-penalty-form gnmt --batch-size 1 \
    --early-stopping beam
}
decode() {  # run name, decode name, translate flags...
  local run=$1 name=$2
  shift 2
  local t0 t1
  t0=$(now)
  /usr/bin/time -v -o "$OUT/$run.$name.time" "$NLPZOO" translate --run-dir "$OUT/$run" --checkpoint last "$@" \
    < "$OUT/test.es" > "$OUT/$run.$name.hyp"
  t1=$(now)
  echo "$name $(echo "$N_TEST / ($t1 - $t0)" | bc -l) $("$NLPZOO" bleu --ref "$OUT/test.en" --hyp "$OUT/$run.$name.hyp" | awk 'NR==1 {print $3}')" >> "$OUT/$run.decode.txt"
}
evaluate_ours ours
[ -z "$VARIANT" ] || evaluate_ours variant

/usr/bin/python3 - "$OUT" "$MODEL" "$VARIANT" <<'PY'
import json, os, re, statistics, sys
out, model, variant = sys.argv[1], sys.argv[2], sys.argv[3]
def rss(path):
    for line in open(path):
        if "Maximum resident set size" in line:
            return int(line.split()[-1]) / 1024
def ours(name):
    """The table's numbers for one of our runs (ours, variant), from its files in out."""
    metrics = [json.loads(l) for l in open(f"{out}/{name}/metrics.jsonl")]
    train = [m for m in metrics if "tokens_per_s" in m]
    # After 20 warm-up updates, as the reference; its windows stop at step 200, ours run to the
    # end of the budget (the median of the logged intervals resists a passing disturbance).
    window = [m["tokens_per_s"] for m in train if m["step"] > 20] or [m["tokens_per_s"] for m in train]
    valid = open(f"{out}/{name}.valid.txt").read()
    dec = {l.split()[0]: (float(l.split()[1]), float(l.split()[2].rstrip(",")))
           for l in open(f"{out}/{name}.decode.txt")}
    inproc = {m.group(1): float(m.group(2)) for m in
              re.finditer(r"BLEU (greedy|beam 5): .*\n.*\n.*\(([0-9.]+) sent/s\)",
                          open(f"{out}/{name}.evaluate.txt").read())}
    return [statistics.median(window) if window else float("nan"), train[-1]["step"] if train else 0, rss(f"{out}/{name}.train.time"),
            float(re.search(r"perplexity ([0-9.]+)", valid).group(1)), dec["greedy"][1], dec["beam5"][1],
            inproc["greedy"], inproc["beam 5"], dec["greedy"][0], dec["beam5"][0], dec["beam5_bs1"][0],
            dec["beam5_bs1_es"][0], dec["beam5_bs1_es"][1], rss(f"{out}/{name}.beam5.time")]
nan = float("nan")
have_ref = os.path.exists(f"{out}/ref/{model}_eval.json")  # not with --no-reference
rt = json.load(open(f"{out}/ref/{model}_train.json")) if have_ref else {}
re_ = json.load(open(f"{out}/ref/{model}_eval.json")) if have_ref else {}
ref_tok = rt["bench"]["tok_s_median"] if rt.get("bench") else nan
names = ["train target tokens/s (median after 20 updates)", "updates in the budget", "peak RSS training (MiB)",
         "valid perplexity", "test BLEU greedy", "test BLEU beam 5", "greedy decoding sent/s (batch 64, in process)",
         "beam-5 decoding sent/s (batch 64, in process)", "greedy decoding sent/s (batch 64, whole process)",
         "beam-5 decoding sent/s (whole process; ref: one at a time)", "beam-5 decoding sent/s (one at a time)",
         "  the same, --early-stopping beam (the reference's rule)", "  its test BLEU", "peak RSS beam-5 decoding (MiB)"]
refs = [ref_tok, rt["steps"], rt["peak_rss_mib_end"], re_["valid_ppl"], re_["greedy_bs64"]["bleu"],
        re_["beam5"]["bleu"], re_["greedy_bs64"]["sent_s"], re_["beam5"]["sent_s"], re_["greedy_bs64"]["sent_s"],
        re_["beam5"]["sent_s"], re_["beam5"]["sent_s"], re_["beam5"]["sent_s"], re_["beam5"]["bleu"],
        re_["peak_rss_mib"]] if have_ref else [nan] * len(names)
columns = [ours("ours")] + ([ours("variant")] if variant else [])
rows = [(n, [c[i] for c in columns], refs[i]) for i, n in enumerate(names)]
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
    rows.insert(1, ("train GFLOP/s (~6 x weights x tokens)", [c[0] * flops_per_token / 1e9 for c in columns],
                    ref_tok * flops_per_token / 1e9))
    rows.insert(2, ("  as % of measured matmul rate", [100 * c[0] * flops_per_token / mm for c in columns],
                    100 * ref_tok * flops_per_token / mm))
header = f"{'metric':58} {'ours':>10}" + (f" {'variant':>10}" if variant else "") + f" {'reference':>10} {'ours/ref':>9}"
header += f" {'var/ref':>8}" if variant else ""
lines = [f"OpenBLAS core (all runs): {os.environ.get('BLAS_CORE') or 'n/a'}, ATen kernels {os.environ.get('ATEN_KERNELS') or 'n/a'}"]
lines += [f"variant: {variant}"] if variant else []
lines.append(header)
for name, values, b in rows:
    ratios = [a / b if b and b == b else float("nan") for a in values]
    lines.append(f"{name:58} " + " ".join(f"{a:10.2f}" for a in values) + f" {b:10.2f} " +
                 " ".join(f"{r:9.2f}" for r in ratios))
table = "\n".join(lines)
print(table)
open(f"{out}/table.txt", "w").write(table + "\n")
PY
echo "results in $OUT (table.txt)"
