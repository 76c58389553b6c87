#!/usr/bin/env bash
# The main job: install, build the CLI, prepare the Bible corpus, train the default Spanish->English
# attention model for a time budget, report perplexity and BLEU, translate held-out verses.
# Run again, it resumes the same run and trains for another budget.
#   scripts/quickstart.sh [--max-time MINUTES] [--config FILE.ini] [--run-dir DIR] [--full-test]
# BLEU is scored on the first 500 test verses (as the benches do); --full-test scores all of them.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_TIME=20
CONFIG=configs/seq2seq-bahdanau-es-en.ini
RUN_DIR=""
N_TEST=500
while [ $# -gt 0 ]; do
  case "$1" in
    --max-time) MAX_TIME="${2:?--max-time needs a number of minutes}"; shift 2 ;;
    --config) CONFIG="${2:?--config needs an INI file}"; shift 2 ;;
    --run-dir) RUN_DIR="${2:?--run-dir needs a folder}"; shift 2 ;;
    --full-test) N_TEST=0; shift ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "quickstart: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$RUN_DIR" ] || RUN_DIR="checkpoints/$(basename "$CONFIG" .ini)"
DATA=data/bible
NLPZOO=build/nlpzoo

# Wall time of each phase, printed at the end.
PHASES=""
t0=$(date +%s)
phase_done() { local now; now=$(date +%s); PHASES+="$1 $((now - t0)) s, "; t0=$now; }

scripts/setup.sh nlpzoo   # the CLI only: scripts/test.sh builds the tests
phase_done build
if [ ! -s "$DATA/train.es" ]; then
  "$NLPZOO" data bible --out "$DATA"
fi
phase_done data
RESUME=()
if [ -f "$RUN_DIR/checkpoint_last.pt" ]; then
  echo "quickstart: resuming $RUN_DIR"
  RESUME=(--resume)
fi
"$NLPZOO" train --config "$CONFIG" --data-dir "$DATA" --run-dir "$RUN_DIR" --max-time "$MAX_TIME" "${RESUME[@]}"
phase_done train

echo
echo "== valid perplexity"
"$NLPZOO" evaluate --run-dir "$RUN_DIR" --split valid --no-bleu
echo
if [ "$N_TEST" -gt 0 ]; then
  echo "== test loss and perplexity (all verses), BLEU greedy and beam 5 on the first $N_TEST verses (--full-test: all)"
else
  echo "== test loss, perplexity and BLEU (greedy and beam 5), all verses"
fi
"$NLPZOO" evaluate --run-dir "$RUN_DIR" --split test --beam-size 5 --max-sentences "$N_TEST"
echo
echo "== a few held-out verses (test split), beam 5"
paste -d '\n' <(head -5 "$DATA/test.es" | sed 's/^/es:  /') \
              <(head -5 "$DATA/test.es" | "$NLPZOO" translate --run-dir "$RUN_DIR" --beam-size 5 \
                   --attention-png "$RUN_DIR/attention.png" | sed 's/^/mt:  /') \
              <(head -5 "$DATA/test.en" | sed 's/^/ref: /') \
              <(yes '' | head -5)
echo "attention heatmap of the first verse: $RUN_DIR/attention.png"
phase_done evaluate
echo "quickstart: wall time ${PHASES%, }"
