#!/usr/bin/env bash
# The Transformer side by side with ../shared/bench/seq2seq_ref.py --model transformer: see
# bench/seq2seq.sh (same options), which also reports training FLOP/s against the measured
# matrix-multiply rate for this model.
exec "$(dirname "$0")/seq2seq.sh" --model transformer "$@"
