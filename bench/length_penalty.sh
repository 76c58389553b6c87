#!/usr/bin/env bash
# BLEU of a trained translation run against beam search's length penalty: greedy, then beam
# --beam-size (5) at each alpha, on the first N verses of a split (valid by default: the one to
# choose on; test to report), with BLEU's brevity penalty and
# hypothesis/reference length ratio, which show whether beam output runs short. The row to
# choose a model's default `length_penalty` from (config key; translate/evaluate take
# --length-penalty).
#   bench/length_penalty.sh --run-dir DIR [--alphas "0 0.6 0.7 1.0 1.2 1.5"] [--form course|gnmt]
#                           [--split valid|test] [--n-test 500] [--data-dir data/bible]
#                           [--checkpoint last|best] [--beam-size 5]
set -euo pipefail
cd "$(dirname "$0")/.."

RUN=""
ALPHAS="0 0.6 0.7 1.0 1.2 1.5"
FORM=course
N_TEST=500
SPLIT=valid
DATA=data/bible
CHECKPOINT=last
BEAM=5
while [ $# -gt 0 ]; do
  case "$1" in
    --run-dir) RUN="$2"; shift 2 ;;
    --alphas) ALPHAS="$2"; shift 2 ;;
    --form) FORM="$2"; shift 2 ;;
    --split) SPLIT="$2"; shift 2 ;;
    --n-test) N_TEST="$2"; shift 2 ;;
    --data-dir) DATA="$2"; shift 2 ;;
    --checkpoint) CHECKPOINT="$2"; shift 2 ;;
    --beam-size) BEAM="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$RUN" ] || { echo "bench: --run-dir DIR is required (a translation run folder)" >&2; exit 2; }
NLPZOO=build/nlpzoo
[ -x "$NLPZOO" ] || { echo "bench: $NLPZOO not built (scripts/setup.sh)" >&2; exit 1; }
SRC=$(sed -n 's/^src_lang *= *//p' "$RUN/config.ini")
TGT=$(sed -n 's/^tgt_lang *= *//p' "$RUN/config.ini")
for f in "$DATA/$SPLIT.$SRC" "$DATA/$SPLIT.$TGT"; do [ -s "$f" ] || { echo "bench: $f missing or empty" >&2; exit 1; }; done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
head -n "$N_TEST" "$DATA/$SPLIT.$SRC" > "$TMP/src"
head -n "$N_TEST" "$DATA/$SPLIT.$TGT" > "$TMP/ref"

row() {  # label, translate flags...
  local label=$1
  shift
  "$NLPZOO" translate --run-dir "$RUN" --checkpoint "$CHECKPOINT" --batch-size 64 "$@" < "$TMP/src" > "$TMP/hyp"
  "$NLPZOO" bleu --ref "$TMP/ref" --hyp "$TMP/hyp" |
    awk -v l="$label" 'NR == 1 { gsub(/[(),=]/, " "); printf "%-12s %6.2f %6.3f %6.3f\n", l, $2, $5, $7 }'
}
echo "$RUN ($CHECKPOINT), first $N_TEST $SPLIT verses, beam $BEAM, length penalty form $FORM"
printf '%-12s %6s %6s %6s\n' search BLEU BP ratio
row greedy --beam-size 1
for a in $ALPHAS; do row "alpha $a" --beam-size "$BEAM" --length-penalty "$a" --length-penalty-form "$FORM"; done
