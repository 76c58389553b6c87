#!/usr/bin/env bash
# Data-parallel training on this machine (README: "Data-parallel training"). One run is started
# (tokenizers and one update of 2 batches, 1 process), copied, and resumed three ways with the
# same global batch of 2 batches per update for --steps updates:
#   one      1 process x 2 threads, update_freq 2
#   nproc    2 processes x 1 thread: nlpzoo train --nproc 2
#   torchrun torchrun --nproc_per_node 2 (Debian's python3-torch)
# It prints the loss of every update side by side (the three curves must agree; exactly with
# --dropout 0, as dropout's masks differ between 1 process and 2 ranks), target tokens/s (the
# median of the per-update rates after the first) and the share of an update spent in all-reduce
# (the "data-parallel:" line, the wait for the slower rank included). Then the all-reduce time of
# the model's gradient size with Gloo, 2 ranks on 127.0.0.1 (torch.distributed in Python: the
# same c10d code), for projecting to more workers. This machine has 2 cores: expect no
# speed-up; the point is correctness and overhead.
#   bench/distributed.sh [--config FILE (default configs/transformer-base-es-en.ini)] [--steps N (default 20)]
#                        [--out DIR] [-- EXTRA TRAIN FLAGS (e.g. --dropout 0)]
set -euo pipefail
cd "$(dirname "$0")/.."

CONFIG=configs/transformer-base-es-en.ini
STEPS=20
OUT=""
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --config) CONFIG="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT="bench/results/distributed-$(date +%Y%m%d-%H%M%S)"
NLPZOO=$(realpath build/nlpzoo)
[ -x "$NLPZOO" ] || { echo "bench: build/nlpzoo not built (scripts/setup.sh)" >&2; exit 1; }
DATA=data/bible
[ -s "$DATA/train.es" ] || "$NLPZOO" data bible --out "$DATA"
mkdir -p "$OUT/data"
# The full training split; validation (once, at the end) on 200 lines: training speed is the point.
for f in "$DATA"/train.*; do ln -sf "$(realpath "$f")" "$OUT/data/"; done
for f in "$DATA"/valid.*; do head -n 200 "$f" > "$OUT/data/$(basename "$f")"; done
export OMP_WAIT_POLICY=PASSIVE
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

echo "== start: tokenizers and 1 update (1 process, 2 threads)"
NLPZOO_THREADS=2 "$NLPZOO" train --config "$CONFIG" --data-dir "$OUT/data" --run-dir "$OUT/start" --device cpu \
  --max-steps 1 --update_freq 2 --valid_interval 1000000 --log_interval 1 --log_seconds 0 "${EXTRA[@]}" \
  > "$OUT/start.log"
LAST=$((STEPS + 1))
RESUME=(train --resume --max-steps "$LAST" --valid_interval 1000000 --log_interval 1 --log_seconds 0 "${EXTRA[@]}")
for mode in one nproc torchrun; do
  rm -rf "${OUT:?}/$mode"
  cp -r "$OUT/start" "$OUT/$mode"
  echo "== $mode: $STEPS updates of 2 batches"
  case "$mode" in
    one) NLPZOO_THREADS=2 "$NLPZOO" "${RESUME[@]}" --run-dir "$OUT/$mode" --update_freq 2 > "$OUT/$mode.log" ;;
    nproc) "$NLPZOO" "${RESUME[@]}" --run-dir "$OUT/$mode" --update_freq 1 --nproc 2 > "$OUT/$mode.log" ;;
    torchrun) /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node 2 \
                --master_port $((20000 + RANDOM % 20000)) --no_python \
                "$NLPZOO" "${RESUME[@]}" --run-dir "$OUT/$mode" --update_freq 1 > "$OUT/$mode.log" 2>&1 ;;
  esac
  grep -h "data-parallel: [0-9]* updates" "$OUT/$mode.log" | sed 's/^\[[^]]*\]:*//' || true
done

# Losses side by side, and the rates.
python3 - "$OUT" "$STEPS" <<'EOF'
import json, re, statistics, sys
out, steps = sys.argv[1], int(sys.argv[2])
modes = ["one", "nproc", "torchrun"]
records = {}
for m in modes:
    records[m] = {r["step"]: r for r in map(json.loads, open(f"{out}/{m}/metrics.jsonl")) if "loss" in r and r["step"] > 1}
print("step  " + "  ".join(f"{m:>12}" for m in modes))
for step in sorted(records["one"]):
    print(f"{step:4d}  " + "  ".join(f"{records[m].get(step, {}).get('loss', float('nan')):12.6f}" for m in modes))
rate_key = next(k for k in next(iter(records["one"].values())) if k.endswith("_per_s"))
share = {}
for m in modes:
    text = open(f"{out}/{m}.log").read()
    found = re.findall(r"data-parallel: \d+ updates of ([\d.]+) ms, ([\d.]+)% of it in all-reduce \(([\d.]+) ms per update: (\d+) bytes", text)
    share[m] = found[-1] if found else None
print()
print(f"{'mode':10} {rate_key:>16} {'ms/update':>10} {'all-reduce':>11} {'ms':>8}  max |loss - one|")
for m in modes:
    rates = [records[m][s][rate_key] for s in sorted(records[m])][1:]
    diff = max(abs(records[m][s]["loss"] - records["one"][s]["loss"]) for s in records["one"] if s in records[m])
    sh = share[m]
    print(f"{m:10} {statistics.median(rates):16.1f} {sh[0] if sh else '-':>10} {(sh[1] + '%') if sh else '-':>11} {sh[2] if sh else '-':>8}  {diff:.2e}")
if share["nproc"]:
    open(f"{out}/gradient_bytes", "w").write(share["nproc"][3])
EOF

BYTES=$(cat "$OUT/gradient_bytes")
echo "== all-reduce of $BYTES bytes (float32), Gloo, 2 ranks on 127.0.0.1, 1 thread each"
cat > "$OUT/allreduce.py" <<'EOF'
import os, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
tensor = torch.ones(int(os.environ["NUMEL"]))
for _ in range(3):
    dist.all_reduce(tensor)
times = []
for _ in range(20):
    dist.barrier()
    start = time.perf_counter()
    dist.all_reduce(tensor)
    times.append(time.perf_counter() - start)
if dist.get_rank() == 0:
    times.sort()
    print(f"allreduce {tensor.numel() * 4} bytes: median {times[10]:.4f} s, min {times[0]:.4f} s over 20")
EOF
NUMEL=$((BYTES / 4)) OMP_NUM_THREADS=1 /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 \
  --nproc_per_node 2 --master_port $((20000 + RANDOM % 20000)) "$OUT/allreduce.py" > "$OUT/allreduce.log" 2>&1 || true
grep -h "allreduce" "$OUT/allreduce.log" | sed 's/^\[[^]]*\]:*//' || cat "$OUT/allreduce.log"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "results in $OUT"
