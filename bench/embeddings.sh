#!/usr/bin/env bash
# Side-by-side benchmark: our word2vec (task word2vec, default configs/skipgram-ns.ini),
# Debian's fastText (`fasttext skipgram|cbow` with the config's minn/maxn/bucket: -minn 0 -maxn 0,
# plain word2vec, unless the config has subwords) and Debian's gensim (python3-gensim through
# /usr/bin/python3, bench/embeddings_ref.py: Word2Vec, or FastText with subwords), one after
# the other in one run, on the same corpus with the same hyperparameters (read from the config:
# dim, window, negative, min_count, sample, lr; epochs) and the same threads (2 by default,
# OMP_WAIT_POLICY=PASSIVE). Each tool's vectors are scored by the same `nlpzoo embed eval`
# (gensim's analogy conventions: restrict 30,000, case-insensitive) on the Google analogy set and
# WordSim-353. Prints a table: words/s, wall time, peak RSS, analogy accuracy (overall, coverage,
# family), WordSim ρ, with the ratios ours/peer; writes OUT/table.txt.
#   bench/embeddings.sh [--data DIR (default data/english)] [--config INI] [--epochs N (5)]
#                       [--threads N (2)] [--seed N] [--out DIR] [--skip-fasttext] [--skip-gensim]
#                       [--gensim-one-worker] [--gensim-iterable]
# --gensim-one-worker adds a column "gensim1w": gensim again with one worker. In corpus_file mode
# each gensim worker decays the rate by the share of the lines *it* has read, so with 2 workers
# the rate falls only halfway each epoch; one worker follows the schedule the config asks for
# (README, "Word2vec against gensim"): the like-for-like quality column for word2vec.
# --gensim-iterable adds "gensimit": gensim with the same workers reading the corpus as an
# iterable (LineSentence: one reader hands jobs to the workers), where the rate follows the whole
# corpus's progress; it tells gensim's schedule in corpus_file mode from its worker count.
# --seed N seeds every tool alike (ours' config seed, gensim's seed, fastText's -seed; default:
# each one's own default; glove.c's run.sh takes no seed, so with a GloVe config it seeds ours
# only); with 2 threads a tool's runs still vary a little, so compare seed means.
# words/s = epochs x the corpus's whitespace words / whole-process wall time (vocabulary scan
# included, the same numerator for every tool); ours also holds out 1 line in valid_every (500)
# for its validation loss, which the peers train on.
# With a GloVe config (task = glove, e.g. --config configs/glove.ini) the peer is the original
# glove.c (../shared/bench/peers/glove/run.sh: vocab_count, cooccur, shuffle, glove) with the
# config's dim, window, min_count, x_max, alpha, iterations (--epochs, default the config's
# max_epochs) and eta = 1/sqrt(adagrad_initial_accumulator) (glove.c's step equals our AdaGrad at
# lr 1 with that accumulator; see configs/glove.ini); the table then gives entries/s
# (iterations x non-zero co-occurrences / whole-process wall, counting and shuffling included).
# Ours holds out 1 pair in valid_every (100) for its validation loss; glove.c trains on all.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=data/english
CONFIG=configs/skipgram-ns.ini
EPOCHS=""
THREADS=2
SEED=""
OUT=""
FASTTEXT=1
GENSIM=1
GENSIM_ONE=0
GENSIM_IT=0
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    --config) CONFIG="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --skip-fasttext) FASTTEXT=0; shift ;;
    --skip-gensim) GENSIM=0; shift ;;
    --gensim-one-worker) GENSIM_ONE=1; shift ;;
    --gensim-iterable) GENSIM_IT=1; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || OUT="bench/results/embeddings-$(date +%Y%m%d-%H%M%S)"
[ -f "$CONFIG" ] || { echo "bench: $CONFIG not found" >&2; exit 1; }
SHARED=${SHARED:-../shared/data}
ANALOGY="$SHARED/analogy/questions-words.txt"
SIMILARITY="$SHARED/similarity/wordsim353.tsv"
for f in "$ANALOGY" "$SIMILARITY"; do [ -f "$f" ] || { echo "bench: $f not found (set SHARED=.../shared/data)" >&2; exit 1; }; done
NLPZOO=${NLPZOO:-build/nlpzoo}  # another build: NLPZOO=path/to/nlpzoo bench/embeddings.sh
[ -x "$NLPZOO" ] || scripts/setup.sh
[ -s "$DATA/english.txt" ] || "$NLPZOO" data english --out "$DATA"
CORPUS="$DATA/english.txt"
if [ -e "$OUT/ours/checkpoint_last.pt" ]; then
  echo "bench: $OUT already holds a run; choose another --out" >&2; exit 1
fi
[ "$FASTTEXT" = 0 ] || command -v fasttext >/dev/null || { echo "bench: fasttext not found (apt-get install fasttext, or --skip-fasttext)" >&2; exit 1; }
mkdir -p "$OUT"
export OMP_WAIT_POLICY=PASSIVE NLPZOO_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
. bench/blas_core.sh
blas_core_export "$NLPZOO" "$OUT/matmul.txt" --size 512 --repeat 4  # gensim's numpy: same OpenBLAS core
cfg() { awk -F' *= *' -v k="$1" '$1 == k {print $2}' "$CONFIG" | tail -1; }
now() { date +%s.%N; }
timed() {  # name, command...: wall seconds to OUT/name.wall, GNU time -v to OUT/name.time
  local name=$1; shift
  local t0 t1
  t0=$(now)
  /usr/bin/time -v -o "$OUT/$name.time" "$@" > "$OUT/$name.log" 2>&1 || { tail -20 "$OUT/$name.log"; exit 1; }
  t1=$(now)
  echo "$t1 - $t0" | bc > "$OUT/$name.wall"
  echo "   $(cat "$OUT/$name.wall") s"
}
evaluate() {  # name, vector flags...
  local name=$1; shift
  "$NLPZOO" embed eval "$@" --analogy "$ANALOGY" --similarity "$SIMILARITY" --json "$OUT/$name.eval.json" \
    > "$OUT/$name.eval.txt"
}
wc -w < "$CORPUS" > "$OUT/corpus_words.txt"

if [ "$(cfg task)" = glove ]; then
  EPOCHS=${EPOCHS:-$(cfg max_epochs)}
  PEER=${GLOVE_PEER:-../shared/bench/peers/glove/run.sh}
  [ -x "$PEER" ] || { echo "bench: $PEER not found (set GLOVE_PEER=.../peers/glove/run.sh)" >&2; exit 1; }
  [ "$(cfg lr)" = 1 ] || echo "bench: warning: lr = $(cfg lr) in $CONFIG; glove.c's step equals ours only at lr 1" >&2
  ETA=$(/usr/bin/python3 -c "print(1 / $(cfg adagrad_initial_accumulator) ** 0.5)")
  echo "dim=$(cfg dim) window=$(cfg window) min_count=$(cfg min_count) x_max=$(cfg x_max) alpha=$(cfg alpha)" \
       "iterations=$EPOCHS eta=$ETA threads=$THREADS corpus=$CORPUS" | tee "$OUT/hyper.txt"
  echo "== ours: nlpzoo train --config $CONFIG --max_epochs $EPOCHS"
  timed ours "$NLPZOO" train --config "$CONFIG" --data-dir "$DATA" --run-dir "$OUT/ours" --max_epochs "$EPOCHS" \
    ${SEED:+--seed "$SEED"}
  evaluate ours --run-dir "$OUT/ours" --checkpoint last
  echo "== glove.c ($PEER)"
  timed glovec env DIM="$(cfg dim)" WINDOW="$(cfg window)" MIN_COUNT="$(cfg min_count)" X_MAX="$(cfg x_max)" \
    ALPHA="$(cfg alpha)" ITER="$EPOCHS" ETA="$ETA" "$PEER" "$CORPUS" "$OUT/glovec" "$THREADS"
  evaluate glovec --vectors "$OUT/glovec/vectors.w2v.txt"
  /usr/bin/python3 - "$OUT" "$EPOCHS" <<'PY'
import json, re, sys
out, iters = sys.argv[1], int(sys.argv[2])
nan = float("nan")
m = re.search(r"(\d+) non-zeros", open(f"{out}/ours.log").read())
entries = int(m.group(1)) if m else nan
def rss(t):
    for line in open(f"{out}/{t}.time"):
        if "Maximum resident set size" in line:
            return int(line.split()[-1]) / 1024
    return nan
col = {}
for t in ("ours", "glovec"):
    e = json.load(open(f"{out}/{t}.eval.json"))
    a = e["analogy"]["total"]
    wall = float(open(f"{out}/{t}.wall").read())
    col[t] = {"eps": iters * entries / wall, "wall": wall, "rss": rss(t), "vocab": e["words"],
              "acc": 100 * a["accuracy"], "cov": 100 * a["coverage"],
              "rho": e["similarity"]["spearman"] if e["similarity"]["spearman"] is not None else nan}
stages = {l.split()[0]: float(l.split()[2]) for l in open(f"{out}/glovec/times.txt") if "wall_s" in l}
rows = [("entries/s (iterations x non-zeros / whole-process wall)", "eps", "{:12.0f}"),
        ("wall time (s)", "wall", "{:12.1f}"), ("peak RSS (MiB)", "rss", "{:12.0f}"),
        ("vocabulary (words)", "vocab", "{:12.0f}"), ("analogy accuracy, overall (%)", "acc", "{:12.2f}"),
        ("analogy coverage (% of questions)", "cov", "{:12.2f}"), ("WordSim-353 Spearman rho", "rho", "{:12.3f}")]
lines = [f"{'metric':58}{'ours':>12}{'glove.c':>12}{'ours/glove.c':>14}"]
for name, key, f in rows:
    a, b = col["ours"][key], col["glovec"][key]
    lines.append(f"{name:58}" + f.format(a) + f.format(b) + (f"{a / b:14.2f}" if b else f"{'n/a':>14}"))
lines.append(f"{entries} non-zero co-occurrences x {iters} iterations; glove.c stages (wall s): "
             + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))
lines.append(open(f"{out}/hyper.txt").read().strip())
table = "\n".join(lines)
print(table)
open(f"{out}/table.txt", "w").write(table + "\n")
PY
  echo "results in $OUT (table.txt)"
  exit 0
fi

EPOCHS=${EPOCHS:-5}
MODEL=$(cfg model); OBJECTIVE=$(cfg objective)
DIM=$(cfg dim); WINDOW=$(cfg window); NEGATIVE=$(cfg negative); MIN_COUNT=$(cfg min_count)
SAMPLE=$(cfg sample); LR=$(cfg lr); MIN_LR=$(cfg min_lr)
MINN=$(cfg minn); MAXN=$(cfg maxn); BUCKET=$(cfg bucket)
MINN=${MINN:-3}; MAXN=${MAXN:-0}; BUCKET=${BUCKET:-2000000}
[ "$MAXN" = 0 ] && MINN=0
[ "$OBJECTIVE" = softmax ] && { echo "bench: the peers have no full-softmax word2vec; use ns or hs" >&2; exit 1; }
SG=1; [ "$MODEL" = cbow ] && SG=0
HS=0; NEG=$NEGATIVE; FT_LOSS=ns
[ "$OBJECTIVE" = hs ] && { HS=1; NEG=0; FT_LOSS=hs; }
echo "model=$MODEL objective=$OBJECTIVE dim=$DIM window=$WINDOW negative=$NEGATIVE min_count=$MIN_COUNT" \
     "sample=$SAMPLE lr=$LR minn=$MINN maxn=$MAXN bucket=$BUCKET epochs=$EPOCHS threads=$THREADS seed=${SEED:-default}" \
     "corpus=$CORPUS" \
  | tee "$OUT/hyper.txt"

echo "== ours: nlpzoo train --config $CONFIG --max_epochs $EPOCHS"
timed ours "$NLPZOO" train --config "$CONFIG" --data-dir "$DATA" --run-dir "$OUT/ours" --device cpu \
  --max_epochs "$EPOCHS" ${SEED:+--seed "$SEED"}
evaluate ours --run-dir "$OUT/ours" --checkpoint last

gensim() {  # name, workers, input mode
  timed "$1" /usr/bin/python3 bench/embeddings_ref.py --corpus "$CORPUS" --out "$OUT/$1" --input "$3" --sg "$SG" \
    --hs "$HS" --dim "$DIM" --window "$WINDOW" --negative "$NEG" --min-count "$MIN_COUNT" --sample "$SAMPLE" \
    --epochs "$EPOCHS" --alpha "$LR" --min-alpha "$MIN_LR" --workers "$2" --minn "$MINN" --maxn "$MAXN" \
    --bucket "$BUCKET" ${SEED:+--seed "$SEED"}
  evaluate "$1" --vectors "$OUT/$1.bin"
}
if [ "$GENSIM" = 1 ]; then
  echo "== gensim $(/usr/bin/python3 -c 'import gensim; print(gensim.__version__)')"
  gensim gensim "$THREADS" corpus_file
  if [ "$GENSIM_ONE" = 1 ]; then
    echo "== gensim, one worker"
    gensim gensim1w 1 corpus_file
  fi
  if [ "$GENSIM_IT" = 1 ]; then
    echo "== gensim, $THREADS workers, the corpus as an iterable"
    gensim gensimit "$THREADS" iterable
  fi
fi

if [ "$FASTTEXT" = 1 ]; then
  echo "== fastText $(dpkg-query -W -f='${Version}' fasttext 2>/dev/null) (-minn $MINN -maxn $MAXN)"
  FT_MODE=skipgram; [ "$SG" = 0 ] && FT_MODE=cbow
  timed fasttext fasttext "$FT_MODE" -input "$CORPUS" -output "$OUT/fasttext" -dim "$DIM" -ws "$WINDOW" \
    -neg "$NEGATIVE" -loss "$FT_LOSS" -minCount "$MIN_COUNT" -t "$SAMPLE" -lr "$LR" -epoch "$EPOCHS" \
    -thread "$THREADS" -minn "$MINN" -maxn "$MAXN" -bucket "$BUCKET" -verbose 1 ${SEED:+-seed "$SEED"}
  evaluate fasttext --vectors "$OUT/fasttext.vec"
fi

/usr/bin/python3 - "$OUT" "$EPOCHS" <<'PY'
import json, os, sys
out, epochs = sys.argv[1], int(sys.argv[2])
nan = float("nan")
words = int(open(f"{out}/corpus_words.txt").read()) * epochs
tools = [t for t in ("ours", "gensim", "gensim1w", "gensimit", "fasttext") if os.path.exists(f"{out}/{t}.eval.json")]
def rss(t):
    for line in open(f"{out}/{t}.time"):
        if "Maximum resident set size" in line:
            return int(line.split()[-1]) / 1024
    return nan
def score(t):
    e = json.load(open(f"{out}/{t}.eval.json"))
    fam = [s for s in e["analogy"]["sections"] if s["name"] == "family"]
    a = e["analogy"]["total"]
    return {"acc": 100 * a["accuracy"], "cov": 100 * a["coverage"], "seen": a["seen"], "questions": a["questions"],
            "family": 100 * fam[0]["accuracy"] if fam else nan,
            "rho": e["similarity"]["spearman"] if e["similarity"]["spearman"] is not None else nan,
            "oov": e["similarity"]["oov_ratio"], "vocab": e["words"]}
col = {}
for t in tools:
    wall = float(open(f"{out}/{t}.wall").read())
    col[t] = dict(score(t), wall=wall, wps=words / wall, rss=rss(t))
for t in ("gensim", "gensim1w", "gensimit"):
    if t in col:
        g = json.load(open(f"{out}/{t}.json"))
        col[t]["train_wps"] = g["raw_words"] / g["train_seconds"]
if "ours" in col:
    m = [json.loads(l) for l in open(f"{out}/ours/metrics.jsonl")]
    el = [x["elapsed_s"] for x in m if "elapsed_s" in x]
    if el: col["ours"]["train_wps"] = words / max(el)
rows = [("words/s (epochs x corpus words / whole-process wall)", "wps", "{:10.0f}"),
        ("words/s (training loop only)", "train_wps", "{:10.0f}"),
        ("wall time (s)", "wall", "{:10.1f}"),
        ("peak RSS (MiB)", "rss", "{:10.0f}"),
        ("vocabulary (words)", "vocab", "{:10.0f}"),
        ("analogy accuracy, overall (%)", "acc", "{:10.2f}"),
        ("analogy coverage (% of questions)", "cov", "{:10.2f}"),
        ("analogy accuracy, family (%)", "family", "{:10.2f}"),
        ("WordSim-353 Spearman rho", "rho", "{:10.3f}"),
        ("WordSim-353 pairs out of vocabulary (%)", "oov", "{:10.2f}")]
peers = [t for t in tools if t != "ours"]
head = f"{'metric':54}" + "".join(f"{t:>10}" for t in tools) + "".join(f"{'ours/' + p:>15}" for p in peers)
lines = [f"OpenBLAS core (all sides that use it): {os.environ.get('BLAS_CORE') or 'n/a'}, ATen kernels {os.environ.get('ATEN_KERNELS') or 'n/a'}", head]
for name, key, f in rows:
    vals = [col[t].get(key, nan) for t in tools]
    cells = "".join((f.format(v) if v == v else f"{'n/a':>10}") for v in vals)
    for p in peers:
        a, b = col["ours"].get(key, nan), col[p].get(key, nan)
        r = a / b if b and a == a and b == b else nan
        cells += f"{r:15.2f}" if r == r else f"{'n/a':>15}"
    lines.append(f"{name:54}{cells}")
lines.append(f"corpus {words // epochs} words x {epochs} epochs; " + open(f"{out}/hyper.txt").read().strip())
table = "\n".join(lines)
print(table)
open(f"{out}/table.txt", "w").write(table + "\n")
PY
echo "results in $OUT (table.txt)"
