#!/usr/bin/env bash
# Side-by-side benchmark: our LSTM language model (configs/lm-lstm-bible.ini, task
# language_model) and the Python PyTorch reference bench/rnn_ref.py, on the same English Bible
# stream, the same SentencePiece model (ours, passed to the reference), the same config values
# (our run's resolved config.ini, passed to the reference), the same thread setup (2 threads,
# OMP_WAIT_POLICY=PASSIVE) and the same wall-clock training budget, one after the other in one
# run. Prints a table: train tokens/s, updates, peak RSS, valid perplexity after the budget and
# at our update count, eval tokens/s, with ratios ours/reference; writes OUT/table.txt.
#   bench/rnn.sh [--minutes M (default 10)] [--out DIR] [--data DIR (default data/bible)]
#                [--config INI (default configs/lm-lstm-bible.ini)]
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=10
OUT=""
DATA=data/bible
CONFIG=configs/lm-lstm-bible.ini
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --config) CONFIG="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT="bench/results/rnn-$(date +%Y%m%d-%H%M%S)"
REF=bench/rnn_ref.py
[ -f "$CONFIG" ] || { echo "bench: $CONFIG not found" >&2; exit 1; }
NLPZOO=${NLPZOO:-build/nlpzoo}  # another build: NLPZOO=path/to/nlpzoo bench/rnn.sh
[ -x "$NLPZOO" ] || scripts/setup.sh
[ -s "$DATA/train.en" ] || "$NLPZOO" data bible --out "$DATA"
if [ -e "$OUT/ours/checkpoint_last.pt" ]; then
  echo "bench: $OUT already holds a run; choose another --out" >&2; exit 1
fi
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE NLPZOO_THREADS=2
now() { date +%s.%N; }

echo "== matrix-multiply rate (the yardstick of model FLOP utilisation)"
. bench/blas_core.sh
blas_core_export "$NLPZOO" "$OUT/matmul.txt" --size 2048 --repeat 10

echo "== ours: train $MINUTES min"
# No validation inside the budget (one at the end, outside it): the reference validates
# only afterwards too, and a plateau schedule then never decays on either side.
/usr/bin/time -v -o "$OUT/ours.train.time" "$NLPZOO" train --config "$CONFIG" \
  --data-dir "$DATA" --run-dir "$OUT/ours" --max-time "$MINUTES" --device cpu \
  --valid_interval 1000000 --log_interval 20 > "$OUT/ours.train.log"
tail -2 "$OUT/ours.train.log"
cfg() { awk -F' = ' -v k="$1" '$1 == k {print $2}' "$OUT/ours/config.ini"; }
# Our peak RSS above includes training the SentencePiece model at the start (outside the
# budget; the reference is given that model). Its own peak, for comparison:
/usr/bin/time -v -o "$OUT/ours.spm.time" "$NLPZOO" tokenize train --input "$DATA/train.$(cfg lang)" \
  --model-prefix "$OUT/spm-alone/spm" --vocab-size "$(cfg vocab_size)" --model-type "$(cfg spm_model_type)" \
  --character-coverage "$(cfg character_coverage)" --soft-vocab-limit > "$OUT/ours.spm.log" 2>&1
OURS_STEPS=$(/usr/bin/python3 -c 'import json,sys; print(max([json.loads(l).get("step", 0) for l in open(sys.argv[1])] or [0]))' \
  "$OUT/ours/metrics.jsonl")

echo "== reference: train $MINUTES min (our SentencePiece model and resolved config; snapshot at update $OURS_STEPS)"
/usr/bin/time -v -o "$OUT/ref.train.time" /usr/bin/python3 "$REF" train --data "$DATA" \
  --spm "$OUT/ours/spm.en.model" --config "$OUT/ours/config.ini" --minutes "$MINUTES" \
  --snapshot-step "$OURS_STEPS" --out "$OUT/ref" > "$OUT/ref.train.log" 2>&1
tail -1 "$OUT/ref.train.log" | cut -c1-200

ref_eval() {  # name, extra flags...
  local name=$1; shift
  local t0 t1
  t0=$(now)
  /usr/bin/time -v -o "$OUT/ref.$name.time" /usr/bin/python3 "$REF" eval --data "$DATA" \
    --spm "$OUT/ours/spm.en.model" --config "$OUT/ours/config.ini" --split valid --out "$OUT/ref" "$@" \
    > "$OUT/ref.$name.log" 2>&1
  t1=$(now)
  echo "$t0 $t1" > "$OUT/ref.$name.wall"
  tail -2 "$OUT/ref.$name.log" | head -1
}
echo "== reference: evaluate (valid)"
ref_eval eval
REF_STEPS=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"])' "$OUT/ref/lm_train.json")
if [ -f "$OUT/ref/lm.step$OURS_STEPS.pt" ] && [ "$REF_STEPS" != "$OURS_STEPS" ]; then
  echo "== reference: evaluate the parameters after update $OURS_STEPS (our update count)"
  ref_eval eval_at_ours --checkpoint "$OUT/ref/lm.step$OURS_STEPS.pt"
fi

echo "== ours: evaluate (valid)"
t0=$(now)
/usr/bin/time -v -o "$OUT/ours.eval.time" "$NLPZOO" evaluate --run-dir "$OUT/ours" --checkpoint last \
  --split valid --no-bleu --data-dir "$DATA" --json | tee "$OUT/ours.valid.json"
t1=$(now)
echo "$t0 $t1" > "$OUT/ours.eval.wall"

/usr/bin/python3 - "$OUT" "$MINUTES" <<'PY'
import json, math, os, re, statistics, sys
out = sys.argv[1]
nan = float("nan")
def rss(path):
    for line in open(path):
        if "Maximum resident set size" in line:
            return int(line.split()[-1]) / 1024
    return nan
def wall(path):
    t0, t1 = map(float, open(path).read().split())
    return t1 - t0
metrics = [json.loads(l) for l in open(f"{out}/ours/metrics.jsonl")]
train = [m for m in metrics if "tokens_per_s" in m]
# Windows of log_interval (20) updates that end after update 20, as the reference's.
# (Only the warm-up window when a run made fewer than 40 updates: the count says so.)
after_warm = [m["tokens_per_s"] for m in train if m["step"] > 20]
window = after_warm or [m["tokens_per_s"] for m in train]
ours_tok = statistics.median(window) if window else nan
ours_steps = max([m["step"] for m in metrics] or [0])
cfg = dict(l.split(" = ", 1) for l in open(f"{out}/ours/config.ini").read().splitlines() if " = " in l)
tokens_per_update = int(cfg["batch_size"]) * int(cfg["bptt"]) * int(cfg.get("update_freq", "1"))
valid = json.load(open(f"{out}/ours.valid.json"))["metrics"]
ours_ppl = valid["perplexity"]["value"]
ours_eval_tokens = valid["tokens"]["value"]
ours_eval_inproc = nan  # `nlpzoo evaluate` reports no in-process time
rt = json.load(open(f"{out}/ref/lm_train.json"))
re_ = json.load(open(f"{out}/ref/lm_eval.json"))
at_ours = nan
snap = rt.get("snapshot")
if snap and os.path.exists(f"{out}/ref/lm_eval.{os.path.splitext(os.path.basename(snap))[0]}.json"):
    at_ours = json.load(open(f"{out}/ref/lm_eval.{os.path.splitext(os.path.basename(snap))[0]}.json"))["ppl"]
elif rt["steps"] == ours_steps:
    at_ours = re_["ppl"]  # the same parameters as after the budget
if re_["tokens"] != ours_eval_tokens:
    print(f"warning: valid tokens differ (ours {ours_eval_tokens}, reference {re_['tokens']}): "
          "the two pipelines do not cut the stream alike", file=sys.stderr)
budget_s = float(sys.argv[2]) * 60
rows = [
    (f"train tokens/s (median of windows after 20; {len(after_warm)} / {rt['tok_s_windows']})",
     ours_tok, rt["tok_s_median"] or nan),
    ("train tokens/s (updates x batch x bptt / budget)", ours_steps * tokens_per_update / budget_s,
     rt["steps"] * tokens_per_update / budget_s),
    ("updates in the budget", ours_steps, rt["steps"]),
    ("peak RSS training (MiB)", rss(f"{out}/ours.train.time"), rss(f"{out}/ref.train.time")),
    ("  peak RSS of our SentencePiece training alone (MiB)", rss(f"{out}/ours.spm.time"), nan),
    ("valid perplexity after the budget", ours_ppl, re_["ppl"]),
    (f"valid perplexity after {ours_steps} updates (ours' count)", ours_ppl, at_ours),
    ("eval tokens/s (valid, in process)", ours_eval_inproc, re_["tok_s"]),
    ("eval tokens/s (valid, whole process: start, load, tokenize)",
     ours_eval_tokens / wall(f"{out}/ours.eval.wall"), re_["tokens"] / wall(f"{out}/ref.eval.wall")),
    ("peak RSS evaluation (MiB)", rss(f"{out}/ours.eval.time"), rss(f"{out}/ref.eval.time")),
]
def fmt(x):
    return f"{x:10.2f}" if x == x else f"{'n/a':>10}"
lines = [f"OpenBLAS core (both sides): {os.environ.get('BLAS_CORE') or 'n/a'}, ATen kernels {os.environ.get('ATEN_KERNELS') or 'n/a'}",
         f"{'metric':62} {'ours':>10} {'reference':>10} {'ours/ref':>9}"]
for name, a, b in rows:
    ratio = a / b if b and b == b and a == a else nan
    lines.append(f"{name:62} {fmt(a)} {fmt(b)} {fmt(ratio)[1:]}")
if ours_eval_inproc != ours_eval_inproc:
    lines.append("(nlpzoo evaluate prints no in-process time: compare the whole-process row)")
lines.append(f"budget {rt['train_sec'] / 60:.1f} min each; {rt['train_stream_shape']} train stream, "
             f"{ours_eval_tokens} valid tokens; reference: {json.dumps(rt['hyper'])}")
table = "\n".join(lines)
print(table)
open(f"{out}/table.txt", "w").write(table + "\n")
PY
echo "results in $OUT (table.txt)"
