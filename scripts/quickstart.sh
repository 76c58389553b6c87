#!/usr/bin/env bash
# The main job: install, prepare the Bible corpus, train the default Spanish->English
# attention model for a time budget, report perplexity and BLEU, translate held-out verses.
# Run again, it resumes the same run and trains for another budget.
#   scripts/quickstart.sh [--max-time MINUTES] [--config FILE.ini] [--run-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_TIME=20
CONFIG=configs/seq2seq-bahdanau-es-en.ini
RUN_DIR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --max-time) MAX_TIME="${2:?--max-time needs a number of minutes}"; shift 2 ;;
    --config) CONFIG="${2:?--config needs an INI file}"; shift 2 ;;
    --run-dir) RUN_DIR="${2:?--run-dir needs a folder}"; shift 2 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "quickstart: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$RUN_DIR" ] || RUN_DIR="checkpoints/$(basename "$CONFIG" .ini)"
DATA=data/bible
NLPZOO=build/nlpzoo

scripts/setup.sh
if [ ! -s "$DATA/train.es" ]; then
  "$NLPZOO" data bible --out "$DATA"
fi
RESUME=()
if [ -f "$RUN_DIR/checkpoint_last.pt" ]; then
  echo "quickstart: resuming $RUN_DIR"
  RESUME=(--resume)
fi
"$NLPZOO" train --config "$CONFIG" --data-dir "$DATA" --run-dir "$RUN_DIR" --max-time "$MAX_TIME" "${RESUME[@]}"

echo
echo "== valid perplexity"
"$NLPZOO" evaluate --run-dir "$RUN_DIR" --split valid --no-bleu
echo
echo "== test loss, perplexity and BLEU (greedy and beam 5)"
"$NLPZOO" evaluate --run-dir "$RUN_DIR" --split test --beam-size 5
echo
echo "== a few held-out verses (test split), beam 5"
paste -d '\n' <(head -5 "$DATA/test.es" | sed 's/^/es:  /') \
              <(head -5 "$DATA/test.es" | "$NLPZOO" translate --run-dir "$RUN_DIR" --beam-size 5 \
                   --attention-png "$RUN_DIR/attention.png" | sed 's/^/mt:  /') \
              <(head -5 "$DATA/test.en" | sed 's/^/ref: /') \
              <(yes '' | head -5)
echo "attention heatmap of the first verse: $RUN_DIR/attention.png"
