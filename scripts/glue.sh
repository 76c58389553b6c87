#!/usr/bin/env bash
# What pre-training buys on GLUE (bench/RESULTS.md, "BERT" and "ELMo"): each task's config
# trained from a pre-trained run and without it, with the same budget and seeds, then `nlpzoo
# evaluate --split dev --json` on each run's best checkpoint (the configs choose it by the dev
# metric, with early stopping). --model bert (configs/<task>-bert.ini): fine-tuned from a
# masked_lm or electra run (--init_from) against random init. --model bilstm
# (configs/<task>-bilstm.ini): the BiLSTM classifier with a bilm run's ELMo features (--elmo)
# against the BiLSTM alone. Prints one row per task and init: the dev metric's mean and spread
# (sample standard deviation) over the seeds.
#   scripts/glue.sh --init-from RUN [--model bert|bilstm] [--tasks "sst2 cola rte stsb"] [--seeds "1 2 3"]
#                   [--inits "pretrained random"] [--out DIR] [--shared DIR (default ../shared)]
#                   [-- EXTRA TRAIN OPTIONS, e.g. --precision bf16]
# Seeds default to 1 for SST-2 and STS-B and 1 2 3 for RTE and CoLA (small and noisy). A run
# whose dev metric is already in OUT is not trained again, so an interrupted sweep continues.
set -euo pipefail
cd "$(dirname "$0")/.."

INIT_FROM=""
MODEL=bert
TASKS="sst2 cola rte stsb"
SEEDS=""
INITS="pretrained random"
OUT=""
SHARED=../shared
[ -d "$SHARED/data" ] || SHARED=/work/shared
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --init-from) INIT_FROM="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --tasks) TASKS="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --inits) INITS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --shared) SHARED="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "glue.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$MODEL" in
  bert) INIT_KEY=--init_from; RUN_KIND="masked_lm or electra" ;;
  bilstm) INIT_KEY=--elmo; RUN_KIND="bilm" ;;
  *) echo "glue.sh: unknown --model $MODEL (bert, bilstm)" >&2; exit 2 ;;
esac
if [ -z "$INIT_FROM" ] || [ ! -f "$INIT_FROM/checkpoint_last.pt" ]; then
  echo "glue.sh: --init-from must name a pre-trained $RUN_KIND run folder (with checkpoint_last.pt), got '$INIT_FROM'" >&2
  exit 2
fi
NLPZOO=${NLPZOO:-build/nlpzoo}  # a copy keeps a long sweep on one binary while build/ changes
[ -x "$NLPZOO" ] || { echo "glue.sh: $NLPZOO is missing; build first (scripts/setup.sh)" >&2; exit 2; }
OUT=${OUT:-bench/results/glue-$MODEL}
mkdir -p "$OUT"

data_dir() {
  case "$1" in
    sst2) echo "$SHARED/data/sst2" ;; cola) echo "$SHARED/data/glue/CoLA" ;;
    rte) echo "$SHARED/data/glue/RTE" ;; stsb) echo "$SHARED/data/glue/STSB" ;;
    *) echo "glue.sh: unknown task $1 (sst2, cola, rte, stsb)" >&2; exit 2 ;;
  esac
}
metric() { case "$1" in sst2|rte) echo accuracy ;; cola) echo mcc ;; stsb) echo pearson ;; esac; }
seeds() { if [ -n "$SEEDS" ]; then echo "$SEEDS"; else case "$1" in cola|rte) echo "1 2 3" ;; *) echo 1 ;; esac; fi; }

for task in $TASKS; do
  data=$(data_dir "$task")
  for init in $INITS; do
    case "$init" in pretrained|random) ;; *) echo "glue.sh: unknown init $init (pretrained, random)" >&2; exit 2 ;; esac
    for seed in $(seeds "$task"); do
      run="$OUT/$task-$init-s$seed"
      [ -s "$run.dev.json" ] && continue
      rm -rf "$run"
      flags=(--config "configs/$task-$MODEL.ini" --data-dir "$data" --run-dir "$run" --seed "$seed")
      [ "$init" = pretrained ] && flags+=("$INIT_KEY" "$INIT_FROM")
      echo "== $task, $init, seed $seed ($(date +%H:%M:%S))"
      start=$(date +%s)
      "$NLPZOO" train "${flags[@]}" ${EXTRA[@]+"${EXTRA[@]}"} > "$run.train.log" 2>&1 ||
        { echo "glue.sh: training failed, see $run.train.log" >&2; tail -3 "$run.train.log" >&2; exit 1; }
      echo $(( $(date +%s) - start )) > "$run.seconds"
      "$NLPZOO" evaluate --run-dir "$run" --split dev --json > "$run.dev.json.tmp"
      mv "$run.dev.json.tmp" "$run.dev.json"
      grep -E "^done|^init_from|^elmo" "$run.train.log" || true
    done
  done
done

/usr/bin/python3 - "$OUT" $TASKS <<'EOF'
import json, os, statistics, sys
out, tasks = sys.argv[1], sys.argv[2:]
names = {"sst2": "accuracy", "rte": "accuracy", "cola": "mcc", "stsb": "pearson"}
print(f"{'task':6} {'metric':9} {'init':11} {'seeds':>5} {'mean':>8} {'sd':>7} {'runs':28} {'min/run':>7}")
for task in tasks:
    for init in ("pretrained", "random"):
        values, minutes = [], []
        for f in sorted(os.listdir(out)):
            if f.startswith(f"{task}-{init}-s") and f.endswith(".dev.json"):
                values.append(json.load(open(os.path.join(out, f)))["metrics"][names[task]]["value"])
                sec = os.path.join(out, f[: -len(".dev.json")] + ".seconds")
                if os.path.exists(sec): minutes.append(int(open(sec).read()) / 60)
        if not values: continue
        sd = statistics.stdev(values) if len(values) > 1 else float("nan")
        runs = " ".join(f"{v:.4f}" for v in values)
        mins = statistics.mean(minutes) if minutes else float("nan")
        print(f"{task:6} {names[task]:9} {init:11} {len(values):>5} {statistics.mean(values):8.4f} {sd:7.4f} {runs:28} {mins:7.1f}")
EOF
