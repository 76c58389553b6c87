#!/usr/bin/env bash
# Checkpoint averaging and beam search's error analysis on a translation preset: trains the
# preset keeping its last validations (keep_last), then prints BLEU (greedy and beam 5, on the
# first N verses of the test split) of the last, the best and the average of the last k
# checkpoints for each k, and the search-errors table of the last checkpoint.
#   bench/averaging.sh --config configs/seq2seq-bahdanau-es-en.ini --run-dir runs/avg-gru
#                      [--valid-interval 100] [--keep 5] [--average "2 3 5"] [--n-test 500]
#                      [--data-dir data/bible] [--max-steps N]
# The budget is the zoo's (checkpoints/MANIFEST.json's budget_steps for the config) unless
# --max-steps is given. An existing run folder is not retrained (its kept checkpoints are used).
set -euo pipefail
cd "$(dirname "$0")/.."

CONFIG=""
RUN=""
VALID=100
KEEP=5
AVERAGE="2 3 5"
N_TEST=500
DATA=data/bible
STEPS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --config) CONFIG="$2"; shift 2 ;;
    --run-dir) RUN="$2"; shift 2 ;;
    --valid-interval) VALID="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    --average) AVERAGE="$2"; shift 2 ;;
    --n-test) N_TEST="$2"; shift 2 ;;
    --data-dir) DATA="$2"; shift 2 ;;
    --max-steps) STEPS="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$CONFIG" ] && [ -n "$RUN" ] || { echo "bench: --config FILE.ini and --run-dir DIR are required" >&2; exit 2; }
NLPZOO=build/nlpzoo
[ -x "$NLPZOO" ] || { echo "bench: $NLPZOO not built (scripts/setup.sh)" >&2; exit 1; }
[ -f "$DATA/test.en" ] || "$NLPZOO" data bible --out "$DATA"
[ -n "$STEPS" ] || STEPS=$(/usr/bin/python3 -c 'import json, sys
m = [x for x in json.load(open("checkpoints/MANIFEST.json"))["models"].values() if x["config"] == sys.argv[1]]
print(m[0]["budget_steps"] if m else "")' "$CONFIG")
[ -n "$STEPS" ] || { echo "bench: $CONFIG has no budget in checkpoints/MANIFEST.json; give --max-steps N" >&2; exit 2; }

if [ ! -f "$RUN/checkpoint_last.pt" ]; then
  "$NLPZOO" train --config "$CONFIG" --data-dir "$DATA" --run-dir "$RUN" --valid_interval "$VALID" \
    --keep_last "$KEEP" ${STEPS:+--max-steps "$STEPS"} >"$RUN.train.log" 2>&1 ||
    { tail -5 "$RUN.train.log"; exit 1; }
fi

bleu() {  # checkpoint -> "greedy beam5"
  "$NLPZOO" evaluate --run-dir "$RUN" --checkpoint "$1" --split test --max-sentences "$N_TEST" --beam-size 5 \
    --data-dir "$DATA" --json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; m=json.load(sys.stdin)["metrics"]; print("%.2f | %.2f" % (m["bleu_greedy"]["value"], m["bleu_beam5"]["value"]))'
}

echo "$(date -u +%F) $CONFIG, valid_interval $VALID, kept $KEEP; first $N_TEST test verses"
echo
echo "| checkpoint | BLEU greedy | BLEU beam 5 |"
echo "| --- | --- | --- |"
echo "| last | $(bleu last) |"
echo "| best | $(bleu best) |"
for k in $AVERAGE; do
  "$NLPZOO" checkpoint average --run-dir "$RUN" --last "$k" --out "$RUN/checkpoint_avg$k.pt" >/dev/null
  ln -f "$RUN/checkpoint_avg$k.pt" "$RUN/checkpoint_averaged.pt"
  echo "| average of last $k | $(bleu averaged) |"
done
echo
"$NLPZOO" search-errors --run-dir "$RUN" --checkpoint last --split test --max-sentences "$N_TEST" \
  --beam-sizes 1,5,10 --data-dir "$DATA" --worst 1
