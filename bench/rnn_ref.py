#!/usr/bin/python3
"""Reference peer in plain PyTorch (Python) for bench/rnn.sh: the recurrent language model of
nlpzoo's `language_model` task (configs/lm-lstm-bible.ini), with the same data pipeline, so the
two can be run one after the other on the same data, tokenizer, sizes, threads and budget.
Run it with Debian's python3-torch and python3-sentencepiece (/usr/bin/python3); it needs
nothing else.

  rnn_ref.py train --data DIR --spm FILE --minutes 10 --out OUT [--config RUN/config.ini] [--KEY VALUE ...]
        trains for a wall-clock budget (or --max-steps N); writes OUT/lm_train.json,
        OUT/lm_metrics.jsonl (one line per log_interval updates) and OUT/lm.pt; with
        --snapshot-step N also OUT/lm.stepN.pt, the parameters after update N
  rnn_ref.py eval --data DIR --spm FILE --out OUT [--checkpoint FILE] [--split valid|test]
        loss, perplexity and tokens/s (no gradient, same batching) of OUT/lm.pt (or FILE);
        writes OUT/lm_eval.json (OUT/lm_eval.<checkpoint name>.json for another checkpoint)

The last line each command prints is a JSON summary.

Data (as nlpzoo's LanguageModelTask): DIR/{train,valid,test}.LANG, one sentence per line, each non-empty
line encoded with the SentencePiece model FILE (pad 0, unk 1, bos 2, eos 3; pass the run's own
spm.en.model) and followed by EOS, all lines of a split concatenated into one stream. The
stream is cut into batch_size rows ([B, N/B], the remainder dropped); batch i holds columns
[i*bptt, (i+1)*bptt) as input and the same columns shifted by one as target (the last batch
is shorter). Batches run in order; the recurrent state is carried from batch to batch,
detached, and reset to zeros at the start of every epoch (and of an evaluation).

Model: embedding (padding_idx 0) -> dropout -> num_layers LSTM (dropout between layers) ->
dropout -> output layer, tied to the embedding weight (plus its own bias, zeros at start)
unless --tie-embeddings false. Initialisation: PyTorch's defaults (embedding N(0, 1),
recurrent weights and biases U(-1/sqrt(H), 1/sqrt(H))), which are LibTorch's defaults too.
Loss: cross-entropy summed over the batch's tokens, divided by their number (B*T). Update:
zero grads, backward, clip the global gradient norm to clip_norm, set the learning rate of
update s (1-based) from the schedule, optimizer step -- the order of nlpzoo's Trainer.

Every model/optimizer value is a flag whose default is configs/lm-lstm-bible.ini's value;
--config INI (e.g. the resolved RUN/config.ini of our run) replaces those defaults with the
file's keys (same names: embed_dim, hidden_size, num_layers, dropout, tie_embeddings, cell,
batch_size, bptt, optimizer, lr, lr_schedule, warmup_steps, clip_norm, adam_beta1, adam_beta2,
adam_eps, weight_decay, momentum, update_freq, seed, log_interval); explicit flags win over both.

Training throughput is measured as our Trainer logs it: tokens (B*T per batch) over the wall
time of each window of log_interval updates; the summary's tok_s_median is the median of the
windows that end after update 20 (the first window, the warm-up, is left out). Peak RSS is
the process's maximum resident set size (getrusage). Torch threads are set to 2.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

# Spinning OpenMP workers fight OpenBLAS's threads on small machines (2.5-2.8x slower there);
# libgomp reads this when torch loads it, so it must be set before the import.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import sentencepiece as spm  # noqa: E402

PAD, UNK, BOS, EOS = 0, 1, 2, 3
WARM_STEPS = 20  # updates left out of the throughput median (as bench/seq2seq.sh)

INITIAL_THREADS = torch.get_num_threads()
torch.set_num_threads(2)

# Defaults = configs/lm-lstm-bible.ini (config key -> (default, type)). --config overrides them.
DEFAULTS = {
    "cell": ("lstm", str),
    "embed_dim": (512, int),
    "hidden_size": (512, int),
    "num_layers": (2, int),
    "dropout": (0.3, float),
    "tie_embeddings": ("true", str),
    "batch_size": (32, int),
    "bptt": (35, int),
    "optimizer": ("adam", str),
    "lr": (0.001, float),
    "lr_schedule": ("plateau", str),
    "warmup_steps": (0, int),
    "clip_norm": (1.0, float),
    "adam_beta1": (0.9, float),
    "adam_beta2": (0.999, float),
    "adam_eps": (1e-8, float),
    "weight_decay": (0.0, float),
    "momentum": (0.0, float),
    "update_freq": (1, int),
    "seed": (1234, int),
    "log_interval": (20, int),
}


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def as_bool(v):
    if isinstance(v, bool):
        return v
    if str(v).lower() in ("1", "true", "yes", "on"):
        return True
    if str(v).lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {v!r}")


def read_ini(path):
    """`key = value` lines of an nlpzoo INI file ('#' and ';' start comments)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith(";") or line.startswith("[") or "=" not in line:
                continue
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


# ----------------------------------------------------------------------------- data
def read_lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return [l[:-1] if l.endswith("\n") else l for l in f]


def encode_split(args, sp, split):
    """One stream per split: every non-empty line's pieces (a trailing CR stripped) followed by EOS."""
    lines = [l[:-1] if l.endswith("\r") else l for l in read_lines(f"{args.data}/{split}.{args.lang}")]
    ids = []
    for piece_ids in sp.encode([l for l in lines if l]):  # empty lines are skipped
        ids.extend(piece_ids)
        ids.append(EOS)
    return torch.tensor(ids, dtype=torch.long)


def batchify(stream, rows):
    """[N] -> [rows, N // rows] (the remainder dropped); row r is the r-th contiguous slice."""
    n = stream.numel() // rows
    if n < 2:
        sys.exit(f"rnn_ref: a split of {stream.numel()} tokens is too short for {rows} rows")
    return stream[: n * rows].view(rows, n)


def num_batches(data, bptt):
    return math.ceil((data.size(1) - 1) / bptt)


def get_batch(data, i, bptt):
    """Batch i: input columns [i*bptt, i*bptt+T), target shifted by one, T <= bptt."""
    start = i * bptt
    T = min(bptt, data.size(1) - 1 - start)
    return data[:, start:start + T], data[:, start + 1:start + 1 + T]


# ----------------------------------------------------------------------------- model
class RNNLM(nn.Module):
    """embedding -> dropout -> RNN stack (dropout between layers) -> dropout -> output layer
    (tied: logits = h E^T + output_bias)."""

    def __init__(self, vocab, cell="lstm", emb=512, hidden=512, layers=2, dropout=0.2, tie=True):
        super().__init__()
        if tie and emb != hidden:
            sys.exit(f"rnn_ref: tied embeddings need embed_dim == hidden_size (got {emb} and {hidden})")
        self.embedding = nn.Embedding(vocab, emb, padding_idx=PAD)
        rnn_cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[cell]
        self.rnn = rnn_cls(emb, hidden, layers, dropout=dropout if layers > 1 else 0.0, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.tie = tie
        if tie:
            self.output_bias = nn.Parameter(torch.zeros(vocab))
        else:
            self.output = nn.Linear(hidden, vocab)

    def forward(self, tokens, state=None):
        h, state = self.rnn(self.drop(self.embedding(tokens)), state)
        h = self.drop(h)
        logits = F.linear(h, self.embedding.weight, self.output_bias) if self.tie else self.output(h)
        return logits, state


def detach(state):
    if state is None:
        return None
    return tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()


def build_model(args, vocab):
    torch.manual_seed(args.seed)
    return RNNLM(vocab, args.cell, args.embed_dim, args.hidden_size, args.num_layers, args.dropout,
                 as_bool(args.tie_embeddings))


def n_params(m):
    return sum(p.numel() for p in m.parameters())


def make_optimizer(args, params):
    if args.optimizer == "sgd":
        return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    cls = torch.optim.AdamW if args.optimizer == "adamw" else torch.optim.Adam
    return cls(params, lr=args.lr, betas=(args.adam_beta1, args.adam_beta2), eps=args.adam_eps,
               weight_decay=args.weight_decay)


def lr_at(args, step):
    """nlpzoo's LrSchedule::lr_at for update `step` (1-based). The plateau decay needs
    validations, which neither side runs inside the benchmark's budget: warm-up only."""
    s = max(step, 1)
    w = min(1.0, s / args.warmup_steps) if args.warmup_steps > 0 else 1.0
    if args.lr_schedule == "constant":
        return args.lr
    if args.lr_schedule in ("linear_warmup", "plateau"):
        return args.lr * w
    if args.lr_schedule == "inverse_sqrt":
        warm = max(args.warmup_steps, 1)
        return args.lr * w * math.sqrt(warm / max(s, warm))
    sys.exit(f"rnn_ref: lr_schedule {args.lr_schedule!r} is not supported")


# ----------------------------------------------------------------------------- training
def train(args):
    sp = spm.SentencePieceProcessor(model_file=args.spm)
    t0 = time.perf_counter()
    data = batchify(encode_split(args, sp, "train"), args.batch_size)
    n_batches = num_batches(data, args.bptt)
    log(f"train stream {data.numel()} tokens as {list(data.shape)}, {n_batches} batches per epoch, "
        f"encoded in {time.perf_counter() - t0:.1f}s; torch {torch.__version__}; "
        f"initial get_num_threads={INITIAL_THREADS} now {torch.get_num_threads()}")
    model = build_model(args, sp.get_piece_size())
    log(f"{args.cell} LM: {n_params(model)} parameters; {json.dumps(hyper(args))}")
    opt = make_optimizer(args, model.parameters())
    model.train()
    budget = args.minutes * 60.0
    metrics = open(f"{args.out}/lm_metrics.jsonl", "w")
    t_start = time.perf_counter()
    step, epoch, index, state = 0, 0, 0, None
    rep_loss, rep_tok, rep_grad, rep_steps, rep_t0 = 0.0, 0, 0.0, 0, time.perf_counter()
    windows = []  # (step, tokens/s)
    snapshot = None
    while True:
        opt.zero_grad(set_to_none=False)
        loss_sum, tokens = 0.0, 0
        for _ in range(args.update_freq):
            if index == 0:
                state = None  # zeros at the start of every epoch
            x, y = get_batch(data, index, args.bptt)
            logits, state = model(x, state)
            state = detach(state)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum")
            loss.backward()
            loss_sum += loss.item()
            tokens += y.numel()
            index += 1
            if index == n_batches:
                index, epoch = 0, epoch + 1
        for p in model.parameters():
            if p.grad is not None:
                p.grad.div_(tokens)
        if args.clip_norm > 0:
            grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_norm))
        else:
            grad_norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters() if p.grad is not None))
        step += 1
        lr = lr_at(args, step)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        rep_loss += loss_sum
        rep_tok += tokens
        rep_grad += grad_norm
        rep_steps += 1
        if step % args.log_interval == 0:
            now = time.perf_counter()
            tok_s = rep_tok / (now - rep_t0)
            windows.append((step, tok_s))
            rec = {"step": step, "epoch": epoch + 1, "loss": rep_loss / rep_tok,
                   "ppl": math.exp(min(rep_loss / rep_tok, 100.0)), "lr": lr, "tokens_per_s": tok_s,
                   "grad_norm": rep_grad / rep_steps, "elapsed_s": now - t_start}
            metrics.write(json.dumps(rec) + "\n")
            metrics.flush()
            log(f"step {step} ep {epoch + 1} loss {rec['loss']:.3f} ppl {rec['ppl']:.1f} lr {lr:.2e} "
                f"{tok_s:.0f} tok/s gnorm {rec['grad_norm']:.2f} elapsed {rec['elapsed_s']:.0f}s "
                f"rss {peak_rss_mib():.0f}MiB loadavg1 {os.getloadavg()[0]:.2f}")
            rep_loss, rep_tok, rep_grad, rep_steps = 0.0, 0, 0.0, 0
            rep_t0 = time.perf_counter()  # after the logging, as our Trainer
        if args.snapshot_step and step == args.snapshot_step:
            snapshot = f"{args.out}/lm.step{step}.pt"
            torch.save(model.state_dict(), snapshot)
        if time.perf_counter() - t_start >= budget or (args.max_steps and step >= args.max_steps):
            break
    train_sec = time.perf_counter() - t_start
    metrics.close()
    torch.save(model.state_dict(), f"{args.out}/lm.pt")
    after_warm = [r for s, r in windows if s > WARM_STEPS]
    median_of = after_warm or [r for _, r in windows]  # only the warm-up window below 40 updates
    res = {"params": n_params(model), "steps": step, "epochs_done": epoch, "batches_per_epoch": n_batches,
           "train_sec": train_sec, "train_stream_shape": list(data.shape), "hyper": hyper(args),
           "tok_s_median": statistics.median(median_of) if median_of else None,
           "tok_s_windows": len(after_warm), "tok_s_overall": step * args.update_freq * args.batch_size * args.bptt / train_sec,
           "snapshot": snapshot, "peak_rss_mib": peak_rss_mib(),
           "initial_num_threads": INITIAL_THREADS, "num_threads": torch.get_num_threads(), "torch": torch.__version__,
           "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}}
    json.dump(res, open(f"{args.out}/lm_train.json", "w"), indent=1)
    log("done")
    print(json.dumps(res), flush=True)


def hyper(args):
    return {k: getattr(args, k) for k in DEFAULTS}


# ----------------------------------------------------------------------------- evaluation
@torch.no_grad()
def evaluate(args):
    sp = spm.SentencePieceProcessor(model_file=args.spm)
    model = build_model(args, sp.get_piece_size())
    ckpt = args.checkpoint or f"{args.out}/lm.pt"
    model.load_state_dict(torch.load(ckpt))
    model.eval()
    bs = args.eval_batch_size or args.batch_size
    data = batchify(encode_split(args, sp, args.split), bs)
    t0 = time.perf_counter()
    total, tokens, state = 0.0, 0, None
    for i in range(num_batches(data, args.bptt)):
        x, y = get_batch(data, i, args.bptt)
        logits, state = model(x, state)
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum").item()
        tokens += y.numel()
    sec = time.perf_counter() - t0
    loss = total / tokens
    res = {"checkpoint": ckpt, "split": args.split, "loss": loss, "ppl": math.exp(min(loss, 100.0)),
           "tokens": tokens, "eval_batch_size": bs, "sec": sec, "tok_s": tokens / sec,
           "peak_rss_mib": peak_rss_mib(), "num_threads": torch.get_num_threads()}
    name = "lm_eval.json" if not args.checkpoint else \
        f"lm_eval.{os.path.splitext(os.path.basename(args.checkpoint))[0]}.json"
    json.dump(res, open(f"{args.out}/{name}", "w"), indent=1)
    log(f"{args.split}: loss {loss:.4f} nats/token | perplexity {res['ppl']:.2f} | {tokens} target tokens "
        f"in {sec:.1f}s ({res['tok_s']:.0f} tokens/s)")
    print(json.dumps(res), flush=True)


# ----------------------------------------------------------------------------- command line
def main():
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config")
    known, _ = pre.parse_known_args()
    defaults = {k: v for k, (v, _) in DEFAULTS.items()}
    lang = "en"
    if known.config:
        ini = read_ini(known.config)
        lang = ini.get("lang", lang)
        for k, (_, typ) in DEFAULTS.items():
            if k in ini:
                defaults[k] = typ(float(ini[k])) if typ is int else typ(ini[k])

    class Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
        pass
    ap = argparse.ArgumentParser(
        description=__doc__,
        epilog="Model/optimizer flags default to configs/lm-lstm-bible.ini's values, or to --config's keys.",
        formatter_class=Formatter)
    ap.add_argument("cmd", choices=["train", "eval"], help="train for a budget, or evaluate a checkpoint")
    ap.add_argument("--data", required=True, help="folder with {train,valid,test}.LANG, one sentence per line")
    ap.add_argument("--spm", required=True, help="SentencePiece model (pad 0, unk 1, bos 2, eos 3), e.g. RUN/spm.en.model")
    ap.add_argument("--lang", default=lang, help="file suffix of the corpus (config key lang)")
    ap.add_argument("--out", required=True, help="folder for checkpoints and JSON results")
    ap.add_argument("--config", help="nlpzoo INI (e.g. RUN/config.ini) whose keys replace the defaults below")
    ap.add_argument("--minutes", type=float, default=10.0, help="train: wall-clock budget")
    ap.add_argument("--max-steps", type=int, default=0, help="train: stop after N updates (0 = budget only)")
    ap.add_argument("--snapshot-step", type=int, default=0, help="train: also save the parameters after update N")
    ap.add_argument("--checkpoint", help="eval: parameters to load (OUT/lm.pt when not given)")
    ap.add_argument("--split", default="valid", choices=["valid", "test"], help="eval: split")
    ap.add_argument("--eval-batch-size", type=int, default=0, help="eval: rows (0 = batch_size)")
    g = ap.add_argument_group("model and optimizer (config keys)")
    for k, (_, typ) in DEFAULTS.items():
        g.add_argument("--" + k.replace("_", "-"), dest=k, type=typ, default=defaults[k])
    args = ap.parse_args()
    if args.cell not in ("lstm", "gru", "rnn"):
        ap.error("--cell: lstm | gru | rnn")
    if args.optimizer not in ("adam", "adamw", "sgd"):
        ap.error("--optimizer: adam | adamw | sgd")
    args.update_freq = max(1, args.update_freq)
    args.log_interval = max(1, args.log_interval)
    as_bool(args.tie_embeddings)
    os.makedirs(args.out, exist_ok=True)
    {"train": train, "eval": evaluate}[args.cmd](args)


if __name__ == "__main__":
    main()
