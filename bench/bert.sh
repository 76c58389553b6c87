#!/usr/bin/env bash
# Side-by-side benchmark of BERT masked-LM pre-training: ours (configs/bert-mini-english.ini,
# task masked_lm) and the plain-PyTorch reference bench/bert_ref.py (torch.nn.TransformerEncoder
# with the same sizes, post-LN GELU, our run's SentencePiece model, the same packing and masking
# recipe, MLM head on the masked positions with the tied output, AdamW with the same groups,
# betas, eps and time-based schedule), one after the other in one run with the same threads
# (2, OMP_WAIT_POLICY=PASSIVE, the same OpenBLAS core) and the same wall-clock budget. Then
# the optimizer step alone (AdamW over the trained parameters, random gradients), and SST-2
# fine-tuning from each pre-trained encoder for the same time (ours: configs/sst2-bert.ini,
# length-bucketed batches; the reference: 32 random sentences padded to the longest) with
# inference at batch 64. Prints a table: train tokens/s, optimizer
# step ms, peak RSS, model FLOP/s as a share of the measured 1024² matmul rate, valid MLM
# accuracy, fine-tuning and inference sentences/s, with ratios ours/reference.
#   bench/bert.sh [--minutes M (default 5)] [--finetune-minutes F (default 2)] [--data-dir DIR (default data/english)]
#                 [--sst2 DIR (default ../shared/data/sst2)] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=5
FT_MINUTES=2
DATA=data/english
SST2=../shared/data/sst2
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES="$2"; shift 2 ;;
    --finetune-minutes) FT_MINUTES="$2"; shift 2 ;;
    --data-dir) DATA="$2"; shift 2 ;;
    --sst2) SST2="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT="bench/results/bert-$(date +%Y%m%d-%H%M%S)"
CONFIG=configs/bert-mini-english.ini
FT_CONFIG=configs/sst2-bert.ini
REF=bench/bert_ref.py
NLPZOO=build/nlpzoo
[ -x "$NLPZOO" ] || scripts/setup.sh nlpzoo
[ -s "$DATA/english.txt" ] || "$NLPZOO" data english --out "$DATA"
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE NLPZOO_THREADS=2
uptime > "$OUT/load.txt"

echo "== matrix-multiply rate (the yardstick of model FLOP utilisation)"
. bench/blas_core.sh
blas_core_export "$NLPZOO" "$OUT/matmul.txt" --size 1024 --repeat 10

echo "== ours: pre-train $MINUTES min"
/usr/bin/time -v -o "$OUT/ours.train.time" "$NLPZOO" train --config "$CONFIG" --data-dir "$DATA" \
  --run-dir "$OUT/ours" --max-time "$MINUTES" --device cpu --valid_interval 1000000 --log_interval 1 \
  > "$OUT/ours.train.log" 2>&1
tail -2 "$OUT/ours.train.log"
echo "== ours: optimizer step"
"$NLPZOO" bench optimizer --run-dir "$OUT/ours" --checkpoint last --device cpu | tee "$OUT/ours.optim.txt"
"$NLPZOO" bench optimizer --run-dir "$OUT/ours" --checkpoint last --device cpu --flat | tee "$OUT/ours.optim_flat.txt"

echo "== reference: pre-train $MINUTES min (our SentencePiece model and resolved config)"
/usr/bin/time -v -o "$OUT/ref.train.time" /usr/bin/python3 "$REF" train --corpus "$DATA/english.txt" \
  --spm "$OUT/ours/spm.model" --config "$OUT/ours/config.ini" --minutes "$MINUTES" --out "$OUT/ref" \
  > "$OUT/ref.train.log" 2>&1
tail -1 "$OUT/ref.train.log" | cut -c1-200
echo "== reference: optimizer step"
for mode in foreach single flat; do
  /usr/bin/python3 "$REF" optim --config "$OUT/ours/config.ini" --spm "$OUT/ours/spm.model" --mode "$mode" \
    > "$OUT/ref.optim_$mode.txt"
  head -1 "$OUT/ref.optim_$mode.txt"
done

# Fine-tuning on SST-2 and classify at batch 64: the dev sentences 4 times over.
tail -n +2 "$SST2/dev.tsv" | cut -f1 > "$OUT/dev1.txt"
for _ in 1 2 3 4; do cat "$OUT/dev1.txt"; done > "$OUT/dev4.txt"
FT_NA=""
echo "== ours: fine-tune $FT_MINUTES min on SST-2 ($FT_CONFIG, init_from the pre-trained run)"
if /usr/bin/time -v -o "$OUT/ours.sst2.time" "$NLPZOO" train --config "$FT_CONFIG" --data-dir "$SST2" \
    --run-dir "$OUT/ours-sst2" --init_from "$OUT/ours" --max-time "$FT_MINUTES" --device cpu \
    --valid_interval 1000000 --log_interval 1 > "$OUT/ours.sst2.log" 2>&1; then
  tail -2 "$OUT/ours.sst2.log"
  start=$(date +%s.%N)
  "$NLPZOO" classify --run-dir "$OUT/ours-sst2" --checkpoint last --device cpu --batch-size 64 \
    < "$OUT/dev4.txt" > "$OUT/ours.classify.txt"
  echo "$(wc -l < "$OUT/dev4.txt") $(echo "$(date +%s.%N) - $start" | bc -l)" > "$OUT/ours.classify.time"
else
  FT_NA="fine-tuning failed: $(grep -m1 -i error "$OUT/ours.sst2.log" || tail -1 "$OUT/ours.sst2.log")"
fi
[ -z "$FT_NA" ] || echo "   ours: n/a ($FT_NA)"
FT_LR=$(sed -n 's/^lr *= *//p' "$FT_CONFIG" 2>/dev/null | head -1 || true)
FT_BATCH=$(sed -n 's/^batch_size *= *//p' "$FT_CONFIG" 2>/dev/null | head -1 || true)
echo "== reference: fine-tune $FT_MINUTES min on SST-2 (from the reference's pre-trained encoder)"
/usr/bin/python3 "$REF" finetune --init "$OUT/ref/bert.pt" --config "$OUT/ours/config.ini" --spm "$OUT/ours/spm.model" \
  --data "$SST2" --minutes "$FT_MINUTES" --lr "${FT_LR:-1e-4}" --batch-size "${FT_BATCH:-32}" --out "$OUT/ref" \
  > "$OUT/ref.sst2.log" 2>&1
tail -1 "$OUT/ref.sst2.log" | cut -c1-200
uptime >> "$OUT/load.txt"

FT_NA="$FT_NA" /usr/bin/python3 - "$OUT" <<'PY'
import json, os, re, statistics, sys
out = sys.argv[1]
nan = float("nan")
def rss(path):
    for line in open(path):
        if "Maximum resident set size" in line:
            return int(line.split()[-1]) / 1024
    return nan
def ms(path):
    return float(re.search(r": ([0-9.]+) ms/step", open(path).read()).group(1))
def per_s(path, key):
    rows = [json.loads(l) for l in open(path)]
    train = [r for r in rows if key in r]
    # Each update's rate (log_interval 1); the first 20 are warm-up (only the first when the
    # budget gave fewer), as bert_ref.py counts.
    late = [r[key] for r in train if r["step"] > 20] or [r[key] for r in train if r["step"] > 1] or [r[key] for r in train]
    return statistics.median(late) if late else nan, train[-1]["step"] if train else 0, rows
ref = json.load(open(f"{out}/ref/bert_train.json"))
masked_s, ours_steps, rows = per_s(f"{out}/ours/metrics.jsonl", "masked_per_s")
valid = [r for r in rows if "valid_accuracy" in r]
ours_acc = valid[-1]["valid_accuracy"] if valid else nan
# The same packing gives the same pieces per masked position on both sides (the count of a
# sequence's masked positions is fixed by its length); the reference counts it over the split.
ours_pieces = masked_s * ref["pieces_per_masked"]
mm = float(re.search(r"([0-9.]+) GFLOP/s", open(f"{out}/matmul.txt").read()).group(1)) * 1e9
fpp = ref["flops_per_piece"]
rows = [
    ("train input pieces/s (median update after 20)", ours_pieces, ref["pieces_per_s_median"]),
    ("train masked pieces/s", masked_s, ref["masked_per_s_median"]),
    ("updates in the budget", ours_steps, ref["steps"]),
    ("train GFLOP/s (model FLOPs, see bert_ref.py)", ours_pieces * fpp / 1e9, ref["pieces_per_s_median"] * fpp / 1e9),
    ("  as % of the measured 1024^2 matmul rate", 100 * ours_pieces * fpp / mm, 100 * ref["pieces_per_s_median"] * fpp / mm),
    ("AdamW step ms (per tensor; ref: foreach, its default)", ms(f"{out}/ours.optim.txt"), ms(f"{out}/ref.optim_foreach.txt")),
    ("AdamW step ms (ref: foreach=False)", ms(f"{out}/ours.optim.txt"), ms(f"{out}/ref.optim_single.txt")),
    ("AdamW step ms (one flat tensor per group, both)", ms(f"{out}/ours.optim_flat.txt"), ms(f"{out}/ref.optim_flat.txt")),
    ("peak RSS pre-training (MiB; ours trains its tokenizer)", rss(f"{out}/ours.train.time"), rss(f"{out}/ref.train.time")),
    ("valid MLM accuracy after the budget", ours_acc, ref["valid_accuracy"]),
]
ft = json.load(open(f"{out}/ref/finetune.json"))
na = os.environ.get("FT_NA", "")
if na:
    text_rows = [(name, f"n/a ({na})", value) for name, value in [
        ("SST-2 fine-tuning sentences/s", ft["sentences_per_s_median"]),
        ("SST-2 dev accuracy after fine-tuning", ft["dev_accuracy"]),
        ("classify sentences/s (batch 64)", ft["infer_sentences_per_s"])]]
else:
    ft_s, _, ft_rows = per_s(f"{out}/ours-sst2/metrics.jsonl", "sentences_per_s")
    ft_valid = [r for r in ft_rows if "valid_accuracy" in r]
    n, seconds = open(f"{out}/ours.classify.time").read().split()
    rows += [("SST-2 fine-tuning sentences/s", ft_s, ft["sentences_per_s_median"]),
             ("SST-2 dev accuracy after fine-tuning", ft_valid[-1]["valid_accuracy"] if ft_valid else nan, ft["dev_accuracy"]),
             ("classify sentences/s (batch 64; ours: whole process)", int(n) / float(seconds), ft["infer_sentences_per_s"])]
    text_rows = []
lines = [f"OpenBLAS core (both sides): {os.environ.get('BLAS_CORE') or 'n/a'}, ATen kernels {os.environ.get('ATEN_KERNELS') or 'n/a'}; load average: "
         + " -> ".join(l.split("load average:")[1].strip() for l in open(f"{out}/load.txt")),
         f"{'metric':56} {'ours':>10} {'reference':>10} {'ours/ref':>9}"]
for name, a, b in rows:
    ratio = a / b if b and b == b else nan
    lines.append(f"{name:56} {a:10.2f} {b:10.2f} {ratio:9.2f}")
for name, a, b in text_rows:
    lines.append(f"{name:56} {a} | reference {b:.2f}")
table = "\n".join(lines)
print(table)
open(f"{out}/table.txt", "w").write(table + "\n")
PY
echo "results in $OUT (table.txt)"
