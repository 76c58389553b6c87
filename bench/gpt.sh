#!/usr/bin/env bash
# Side-by-side benchmark: our GPT (task gpt, configs/gpt-char-shakespeare.ini) and nanoGPT
# (../shared/bench/peers/nanogpt/run.sh, unchanged, on Debian's python3-torch) with the same CPU
# config on tiny Shakespeare, one after the other in one run, with the same threads
# (OMP_WAIT_POLICY=PASSIVE). For each seed, ours trains for --max-steps updates; nanoGPT
# trains once (its seed is fixed at 1337: train.py has no seed option). Both evaluate once at
# the end (ours: valid_interval = max-steps; nanoGPT: eval_interval = max-steps, 20 batches).
# Then, like for like:
#   val loss   nats per character on the whole validation split (111,540 characters, every one
#              scored once in consecutive blocks of 64): ours by `nlpzoo evaluate`, nanoGPT's
#              checkpoint by bench/gpt_ref.py;
#   train      characters per second = max-steps x batch_size x block_size / wall seconds of the
#              whole training process (start-up and the final evaluation included);
#   sample     seconds to draw --new-chars characters (temperature 0.8, top-k 200, as nanoGPT's
#              sample.py): ours is `nlpzoo generate` with the key/value cache, its start-up and
#              checkpoint load subtracted (a run drawing 1 token); nanoGPT's GPT.generate
#              re-reads the whole context at every character.
#   bench/gpt.sh [--seeds 1,2,3] [--max-steps 2000] [--threads 2] [--new-chars 500] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

SEEDS=1,2,3
STEPS=2000
THREADS=2
NEW=500
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) SEEDS="$2"; shift 2 ;;
    --max-steps) STEPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --new-chars) NEW="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT="bench/results/gpt-$(date +%Y%m%d-%H%M%S)"
CONFIG=configs/gpt-char-shakespeare.ini
SHARED=${SHARED:-../shared}
PEER="$SHARED/bench/peers/nanogpt/run.sh"
DATA="$SHARED/data/tinyshakespeare"
[ -x "$PEER" ] || [ -f "$PEER" ] || { echo "bench: $PEER not found (set SHARED=.../shared)" >&2; exit 1; }
NLPZOO=${NLPZOO:-build/nlpzoo}
[ -x "$NLPZOO" ] || scripts/setup.sh
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE NLPZOO_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
now() { date +%s.%N; }
timed() {  # name, command...: wall seconds to OUT/name.wall, output to OUT/name.log
  local name=$1; shift
  local t0 t1
  t0=$(now)
  "$@" > "$OUT/$name.log" 2>&1 || { tail -20 "$OUT/$name.log"; exit 1; }
  t1=$(now)
  echo "$t1 - $t0" | bc > "$OUT/$name.wall"
  echo "   $name: $(cat "$OUT/$name.wall") s"
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); threads $THREADS; $STEPS updates" | tee "$OUT/hyper.txt"

for seed in ${SEEDS//,/ }; do
  run="$OUT/ours-s$seed"
  timed "ours-s$seed.train" "$NLPZOO" train --config "$CONFIG" --data-dir "$DATA" --run-dir "$run" --seed "$seed" \
    --max_steps "$STEPS" --decay_steps "$STEPS" --valid_interval "$STEPS"
  "$NLPZOO" evaluate --run-dir "$run" --split valid --json > "$OUT/ours-s$seed.eval.json"
  gen() { "$NLPZOO" generate --run-dir "$run" --seed 1 --temperature 0.8 --top-k 200 --max-new-tokens "$1"; }
  timed "ours-s$seed.sample1" gen 1
  timed "ours-s$seed.sample" gen "$NEW"
done

timed nanogpt.train bash "$PEER" "$OUT/nanogpt" --max_iters="$STEPS" --lr_decay_iters="$STEPS" \
  --eval_interval="$STEPS" --always_save_checkpoint=True
/usr/bin/python3 bench/gpt_ref.py "$OUT/nanogpt" "$NEW" "$THREADS" | tail -n 1 > "$OUT/nanogpt.ref.json"  # model.py prints warnings first
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/hyper.txt"

/usr/bin/python3 - "$OUT" "$SEEDS" "$STEPS" "$NEW" <<'PY' | tee "$OUT/table.txt"
import json, statistics, sys
out, seeds, steps, new = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])
chars_per_step = 12 * 64
wall = lambda name: float(open(f"{out}/{name}.wall").read())
rows = []
for s in seeds:
    loss = json.load(open(f"{out}/ours-s{s}.eval.json"))["metrics"]["loss"]["value"]
    rows.append((loss, steps * chars_per_step / wall(f"ours-s{s}.train"),
                 wall(f"ours-s{s}.sample") - wall(f"ours-s{s}.sample1")))
ref = json.load(open(f"{out}/nanogpt.ref.json"))
peer = (ref["val_loss"], steps * chars_per_step / wall("nanogpt.train"), ref["sample_seconds"])
ours = tuple(statistics.mean(r[i] for r in rows) for i in range(3))
print(f"{'':28} {'ours (mean of ' + str(len(rows)) + ')':>18} {'nanoGPT':>10} {'ratio':>8}")
print(f"{'val loss (nats/char)':28} {ours[0]:18.4f} {peer[0]:10.4f} {ours[0] / peer[0]:8.3f}")
print(f"{'train (chars/s)':28} {ours[1]:18.0f} {peer[1]:10.0f} {ours[1] / peer[1]:8.2f}")
print(f"{'sample ' + str(new) + ' chars (s)':28} {ours[2]:18.3f} {peer[2]:10.3f} {peer[2] / ours[2]:8.2f}x")
print("ours per seed (val loss, chars/s, sample s): " + "; ".join(f"{s}: {r[0]:.4f}, {r[1]:.0f}, {r[2]:.3f}" for s, r in zip(seeds, rows)))
PY
