#!/usr/bin/python3
"""Reference peer in plain PyTorch (Python) for bench/bert.sh: BERT masked-LM pre-training as
nlpzoo's `masked_lm` task does it (configs/bert-mini-english.ini), so that the two run one
after the other on the same corpus, SentencePiece model, sizes, recipe, threads and budget.
Run it with Debian's python3-torch, python3-sentencepiece and numpy (/usr/bin/python3).

  bert_ref.py train --corpus FILE --spm RUN/spm.model --config RUN/config.ini --minutes M --out OUT
        pre-trains for a wall-clock budget (or --max-steps N), then evaluates the valid split;
        writes OUT/bert.pt and OUT/bert_train.json
  bert_ref.py optim --config RUN/config.ini --spm RUN/spm.model [--steps 50] [--mode foreach|single|flat]
        the time of one AdamW step (the training groups, random gradients) on the model's parameters
  bert_ref.py finetune --init OUT/bert.pt --config RUN/config.ini --spm RUN/spm.model --data DIR
        --minutes M --out OUT [--batch-size 32 --lr 5e-5 ...]
        SST-2-style fine-tuning (DIR/train.tsv, DIR/dev.tsv: header, sentence <TAB> label) of the
        pre-trained encoder with BERT's classification head; then dev accuracy and inference
        sentences/s at batch 64; writes OUT/finetune.json

The last line each command prints is a JSON summary.

Data (as nlpzoo's MaskedLmTask): line i (0-based) of the corpus with (i+1) % valid_every == 0 is
held out for validation; every line is encoded with the SentencePiece model (pad 0, unk 1, bos
2, eos 3, [CLS] 4, [SEP] 5, [MASK] 6: pass the run's own spm.model) and consecutive lines are
packed into [CLS] s_1 s_2 ... [SEP] of at most max_positions pieces (RoBERTa's FULL-SENTENCES; a
longer line is cut and fills a sequence alone). Batches of batch_size sequences in a random
order per epoch, padded to the longest. Masking (dynamic, a new draw for every batch): of a
sequence's m non-special positions, n = max(1, round(mask_prob * m)) chosen uniformly; of
those 80% become [MASK], 10% a random piece in [7, V), 10% stay. Validation draws one fixed
mask (seed 1234) so its numbers are comparable between runs of this script; nlpzoo's own fixed
mask is drawn with another generator, so the two valid accuracies are two samples of the
same statistic.

Model (nlpzoo's BertForPreTraining with the config's sizes): token (padding_idx 0) + learned
position + segment embeddings, LayerNorm, dropout; torch.nn.TransformerEncoder (post-LN unless
pre_norm, GELU, dropout = attention_dropout = the config's dropout); an unused pooler (nlpzoo's
BertModel has one, so the optimizer sees the same parameters); MLM head on the masked positions
only: dense, GELU, LayerNorm, then the token embedding as the output matrix plus its own bias.
Initialisation as nlpzoo's: tables and head matrices N(0, 0.02), encoder matrices Xavier-uniform
(each of Q, K, V on its own), biases 0.

Update (the order of nlpzoo's Trainer): cross-entropy summed over the masked positions, divided
by their number; backward; clip the global gradient norm to clip_norm; AdamW (betas, eps,
weight_decay from the config; no decay on 1-D parameters: biases and LayerNorm weights) at the
rate lr * min(1, t / warmup) * max(0, 1 - t / budget), t the training time at the update's
start and warmup = warmup_fraction * budget (nlpzoo's time-based linear_decay; with
--max-steps the same in steps).

Throughput: masked positions and input pieces per second over each window of log_interval
updates (default 1: each update); the summary gives the median of the windows ending after
update 20 (after update 1 when the budget gave fewer). Peak RSS is the
process's maximum resident set size (getrusage). Torch threads are set to 2.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

# Spinning OpenMP workers fight OpenBLAS's threads on small machines; libgomp reads this when
# torch loads it, so it must be set before the import.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import sentencepiece as spm  # noqa: E402

PAD, UNK, BOS, EOS, CLS, SEP, MASK = range(7)
SPECIALS = (PAD, BOS, EOS, CLS, SEP, MASK)
WARM_STEPS = 20
torch.set_num_threads(2)


def read_config(path):
    """The resolved config.ini of an nlpzoo run: key = value lines."""
    cfg = {}
    for line in open(path):
        if " = " in line and not line.lstrip().startswith("#"):
            key, value = line.split(" = ", 1)
            cfg[key.strip()] = value.strip()
    return cfg


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- data
def load_split(corpus, valid_every):
    train, valid = [], []
    with open(corpus, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.rstrip("\n").rstrip("\r")
            (valid if (i + 1) % valid_every == 0 else train).append(line)
    return train, valid


def pack(sp, lines, max_positions, chunk=20000):
    """FULL-SENTENCES packing; returns (flat int64 ids, offsets) of the sequences."""
    room = max_positions - 2
    seqs, current = [], []

    def flush():
        if current:
            seqs.append(np.array([CLS] + current + [SEP], dtype=np.int64))
            current.clear()

    for start in range(0, len(lines), chunk):
        for s in sp.encode(lines[start:start + chunk]):
            if not s:
                continue
            if len(current) + len(s) > room:
                flush()
            if len(s) > room:
                current.extend(s[:room])
                flush()
                continue
            current.extend(s)
    flush()
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in seqs])
    return np.concatenate(seqs), offsets


def masked_count(lengths, mask_prob):
    # llround: halves away from zero; m = length - 2 (no other specials in packed text).
    m = lengths - 2
    return np.where(m > 0, np.maximum(1, np.floor(mask_prob * m + 0.5)), 0).astype(np.int64)


def make_batch(flat, offsets, rows, mask_prob, vocab, gen):
    """rows: sequence indices. Returns input [B,S], masked [B,S] bool, targets [N]."""
    lens = offsets[rows + 1] - offsets[rows]
    S = int(lens.max())
    tokens = torch.zeros(len(rows), S, dtype=torch.long)
    for r, k in enumerate(rows):
        tokens[r, :lens[r]] = torch.from_numpy(flat[offsets[k]:offsets[k + 1]])
    maskable = torch.ones_like(tokens, dtype=torch.bool)
    for s in SPECIALS:
        maskable &= tokens != s
    m = maskable.sum(1)
    n = torch.where(m > 0, torch.clamp(torch.floor(mask_prob * m + 0.5), min=1), torch.zeros_like(m, dtype=torch.float))
    scores = torch.rand(tokens.shape, generator=gen).masked_fill(~maskable, 2.0)
    order = scores.argsort(dim=1)
    ranks = torch.empty_like(order).scatter_(1, order, torch.arange(S).expand_as(order).contiguous())
    chosen = (ranks < n.long().unsqueeze(1)) & maskable
    targets = tokens[chosen]
    coin = torch.rand(tokens.shape, generator=gen)
    random_ids = torch.randint(MASK + 1, vocab, tokens.shape, generator=gen)
    inputs = tokens.clone()
    inputs[chosen & (coin < 0.8)] = MASK
    swap = chosen & (coin >= 0.8) & (coin < 0.9)
    inputs[swap] = random_ids[swap]
    return inputs, chosen, targets


# ---------------------------------------------------------------- model
class Bert(nn.Module):
    def __init__(self, vocab, d, heads, layers, ffn, dropout, max_positions, type_vocab, pre_norm):
        super().__init__()
        self.token = nn.Embedding(vocab, d, padding_idx=PAD)
        self.position = nn.Embedding(max_positions, d)
        self.segment = nn.Embedding(type_vocab, d)
        self.norm = nn.LayerNorm(d)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d, heads, ffn, dropout, activation="gelu", batch_first=True,
                                           norm_first=pre_norm)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d) if pre_norm else None,
                                             enable_nested_tensor=False)
        self.pooler = nn.Linear(d, d)  # unused by the MLM objective, as nlpzoo's
        self.mlm_dense = nn.Linear(d, d)
        self.mlm_norm = nn.LayerNorm(d)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab))
        with torch.no_grad():
            for e in (self.token, self.position, self.segment):
                e.weight.normal_(0, 0.02)
            self.token.weight[PAD].zero_()
            for lin in (self.pooler, self.mlm_dense):
                lin.weight.normal_(0, 0.02)
                lin.bias.zero_()
            for lay in self.encoder.layers:
                for chunk in lay.self_attn.in_proj_weight.chunk(3):
                    nn.init.xavier_uniform_(chunk)
                lay.self_attn.in_proj_bias.zero_()
                for lin in (lay.self_attn.out_proj, lay.linear1, lay.linear2):
                    nn.init.xavier_uniform_(lin.weight)
                    lin.bias.zero_()

    def encode(self, tokens):
        positions = torch.arange(tokens.shape[1]).unsqueeze(0)
        x = self.token(tokens) + self.position(positions) + self.segment(torch.zeros_like(tokens))
        return self.encoder(self.dropout(self.norm(x)), src_key_padding_mask=tokens == PAD)

    def forward(self, tokens, masked):
        h = self.encode(tokens)[masked]  # [N, d]: only the masked positions meet the vocabulary
        return F.linear(self.mlm_norm(F.gelu(self.mlm_dense(h))), self.token.weight, self.mlm_bias)


def build_model(cfg, vocab):
    return Bert(vocab, int(cfg["d_model"]), int(cfg["num_heads"]), int(cfg["num_layers"]), int(cfg["ffn_dim"]),
                float(cfg["dropout"]), int(cfg["max_positions"]), int(cfg.get("type_vocab_size", 2)),
                cfg.get("pre_norm", "false") == "true")


def make_optimizer(cfg, model, params=None):
    named = list(model.named_parameters()) if params is None else params
    decay = [p for _, p in named if p.dim() >= 2]
    exempt = [p for _, p in named if p.dim() < 2]
    wd = float(cfg["weight_decay"])
    groups = [{"params": decay}, {"params": exempt, "weight_decay": 0.0}] if wd != 0 else [{"params": decay + exempt}]
    return torch.optim.AdamW(groups, lr=float(cfg["lr"]), betas=(float(cfg["adam_beta1"]), float(cfg["adam_beta2"])),
                             eps=float(cfg["adam_eps"]), weight_decay=wd)


def flops_per_piece(cfg, seq_len, pieces_per_masked, vocab):
    """Training FLOPs per input piece: 3 x forward (forward + backward); forward = 2 x the
    multiply-adds of the encoder's weight matrices (4 d^2 + 2 d f per layer), of attention's
    QK^T and AV (2 S d per layer) and of the MLM head (d^2 + d V) at the masked share."""
    d, f, L = int(cfg["d_model"]), int(cfg["ffn_dim"]), int(cfg["num_layers"])
    return 6 * (L * (4 * d * d + 2 * d * f + 2 * seq_len * d) + (d * d + d * vocab) / pieces_per_masked)


# ---------------------------------------------------------------- commands
def evaluate(model, flat, offsets, cfg, vocab):
    model.eval()
    gen = torch.Generator().manual_seed(1234)
    bs, loss, correct, n = int(cfg["batch_size"]), 0.0, 0, 0
    with torch.no_grad():
        for start in range(0, len(offsets) - 1, bs):
            rows = np.arange(start, min(start + bs, len(offsets) - 1))
            inputs, masked, targets = make_batch(flat, offsets, rows, float(cfg["mask_prob"]), vocab, gen)
            logits = model(inputs, masked)
            loss += F.cross_entropy(logits, targets, reduction="sum").item()
            correct += (logits.argmax(-1) == targets).sum().item()
            n += len(targets)
    model.train()
    return loss / n, correct / n


def cmd_train(a):
    cfg = read_config(a.config)
    sp = spm.SentencePieceProcessor(model_file=a.spm)
    vocab = sp.get_piece_size()
    assert sp.id_to_piece(MASK) == "[MASK]", "the SentencePiece model has no [MASK] at id 6 (pass the run's spm.model)"
    torch.manual_seed(int(cfg.get("seed", 1)))
    t0 = time.perf_counter()
    train_lines, valid_lines = load_split(a.corpus, int(cfg["valid_every"]))
    P = int(cfg["max_positions"])
    tflat, toff = pack(sp, train_lines, P)
    vflat, voff = pack(sp, valid_lines, P)
    del train_lines, valid_lines
    lengths = np.diff(toff)
    mask_prob = float(cfg["mask_prob"])
    pieces_per_masked = lengths.sum() / masked_count(lengths, mask_prob).sum()
    print(f"data: {len(toff) - 1} train / {len(voff) - 1} valid sequences, {lengths.mean():.1f} pieces per sequence, "
          f"{pieces_per_masked:.3f} pieces per masked position ({time.perf_counter() - t0:.1f} s)", flush=True)
    model = build_model(cfg, vocab)
    opt = make_optimizer(cfg, model)
    params = [p for p in model.parameters()]
    bs, clip, lr0 = int(cfg["batch_size"]), float(cfg["clip_norm"]), float(cfg["lr"])
    budget = a.minutes * 60 if a.minutes > 0 else 0
    # nlpzoo's resolved config holds the warm-up as minutes of the time budget (warmup_time of
    # decay_time) or as steps (warmup_steps of decay_steps); its share of the budget is kept.
    warm_frac = 0.06
    if float(cfg.get("decay_time", 0)) > 0:
        warm_frac = float(cfg.get("warmup_time", 0)) / float(cfg["decay_time"])
    elif int(cfg.get("decay_steps", 0)) > 0:
        warm_frac = int(cfg.get("warmup_steps", 0)) / int(cfg["decay_steps"])
    gen = torch.Generator().manual_seed(int(cfg.get("seed", 1)))
    log_interval = a.log_interval
    windows, opt_ms, step, epoch = [], [], 0, 0
    win_start, win_masked, win_pieces = time.perf_counter(), 0, 0
    start = time.perf_counter()
    done = False
    while not done:
        order = np.random.default_rng(int(cfg.get("seed", 1)) + epoch).permutation(len(toff) - 1)
        for b in range(0, len(order), bs):
            t = time.perf_counter() - start
            if (budget and t >= budget) or (a.max_steps and step >= a.max_steps):
                done = True
                break
            frac = t / budget if budget else step / a.max_steps
            lr = lr0 * (min(1.0, frac / warm_frac) if warm_frac > 0 else 1.0) * max(0.0, 1.0 - frac)
            rows = order[b:b + bs]
            inputs, masked, targets = make_batch(tflat, toff, rows, mask_prob, vocab, gen)
            opt.zero_grad(set_to_none=True)
            logits = model(inputs, masked)
            loss = F.cross_entropy(logits, targets, reduction="sum") / len(targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, clip)
            for g in opt.param_groups:
                g["lr"] = lr
            o0 = time.perf_counter()
            opt.step()
            opt_ms.append((time.perf_counter() - o0) * 1e3)
            step += 1
            win_masked += len(targets)
            win_pieces += int((inputs != PAD).sum())
            if step % log_interval == 0:
                now = time.perf_counter()
                windows.append({"step": step, "masked_per_s": win_masked / (now - win_start),
                                "pieces_per_s": win_pieces / (now - win_start), "loss": loss.item(), "lr": lr})
                print(json.dumps(windows[-1]), flush=True)
                win_start, win_masked, win_pieces = now, 0, 0
        epoch += 1
    train_s = time.perf_counter() - start
    e0 = time.perf_counter()
    vloss, vacc = evaluate(model, vflat, voff, cfg, vocab)
    eval_s = time.perf_counter() - e0
    os.makedirs(a.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(a.out, "bert.pt"))
    late = [w for w in windows if w["step"] > WARM_STEPS] or [w for w in windows if w["step"] > 1] or windows
    summary = {
        "steps": step, "train_s": train_s, "eval_s": eval_s,
        "masked_per_s_median": statistics.median(w["masked_per_s"] for w in late) if late else float("nan"),
        "pieces_per_s_median": statistics.median(w["pieces_per_s"] for w in late) if late else float("nan"),
        "optimizer_ms_median": statistics.median(opt_ms[5:] or opt_ms),
        "pieces_per_masked": float(pieces_per_masked), "mean_sequence": float(lengths.mean()),
        "flops_per_piece": flops_per_piece(cfg, float(lengths.mean()), float(pieces_per_masked), vocab),
        "valid_loss": vloss, "valid_ppl": math.exp(vloss), "valid_accuracy": vacc,
        "parameters": sum(p.numel() for p in params), "peak_rss_mib": peak_rss_mib(),
        "threads": torch.get_num_threads(),
    }
    json.dump(summary, open(os.path.join(a.out, "bert_train.json"), "w"), indent=1)
    print(json.dumps(summary))


def cmd_optim(a):
    cfg = read_config(a.config)
    vocab = spm.SentencePieceProcessor(model_file=a.spm).get_piece_size()
    model = build_model(cfg, vocab)
    named = list(model.named_parameters())
    for _, p in named:
        p.grad = torch.randn_like(p) * 1e-3
    if a.mode == "flat":
        # One flat tensor per group (the layout nlpzoo's bench optimizer --flat measures).
        groups = [[p for _, p in named if p.dim() >= 2], [p for _, p in named if p.dim() < 2]]
        flats = []
        for g in groups:
            fp = torch.cat([p.detach().reshape(-1) for p in g]).requires_grad_()
            fp.grad = torch.cat([p.grad.reshape(-1) for p in g])
            flats.append(fp)
        wd = float(cfg["weight_decay"])
        opt = torch.optim.AdamW([{"params": [flats[0]]}, {"params": [flats[1]], "weight_decay": 0.0}],
                                lr=float(cfg["lr"]), betas=(float(cfg["adam_beta1"]), float(cfg["adam_beta2"])),
                                eps=float(cfg["adam_eps"]), weight_decay=wd)
    else:
        opt = make_optimizer(cfg, model)
        for g in opt.param_groups:
            g["foreach"] = a.mode == "foreach"
    for _ in range(5):
        opt.step()
    ms = []
    for _ in range(a.steps):
        t = time.perf_counter()
        opt.step()
        ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    print(f"AdamW step over {sum(p.numel() for _, p in named)} parameters in {len(named)} tensors, "
          f"{len(opt.param_groups)} groups, {a.mode}, {torch.get_num_threads()} threads: "
          f"{ms[len(ms) // 2]:.2f} ms/step (median of {a.steps}; min {ms[0]:.2f})")
    print(json.dumps({"mode": a.mode, "ms_median": ms[len(ms) // 2], "ms_min": ms[0]}))


class Classifier(nn.Module):
    """BERT's fine-tuning head on the pooled [CLS] state: linear(dropout(tanh(W h_[CLS] + b)))."""

    def __init__(self, bert, labels, dropout):
        super().__init__()
        self.bert, self.dropout = bert, nn.Dropout(dropout)
        self.output = nn.Linear(bert.token.weight.shape[1], labels)
        with torch.no_grad():
            self.output.weight.normal_(0, 0.02)
            self.output.bias.zero_()

    def forward(self, tokens):
        pooled = torch.tanh(self.bert.pooler(self.bert.encode(tokens)[:, 0]))
        return self.output(self.dropout(pooled))


def read_tsv(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path, encoding="utf-8")][1:]
    return [r[0] for r in rows], [int(r[1]) for r in rows]


def batch_tokens(sp, sentences, max_positions):
    ids = [[CLS] + s[:max_positions - 2] + [SEP] for s in sp.encode(sentences)]
    out = torch.zeros(len(ids), max(len(s) for s in ids), dtype=torch.long)
    for r, s in enumerate(ids):
        out[r, :len(s)] = torch.tensor(s)
    return out


def cmd_finetune(a):
    t_start = time.perf_counter()
    cfg = read_config(a.config)
    sp = spm.SentencePieceProcessor(model_file=a.spm)
    bert = build_model(cfg, sp.get_piece_size())
    if a.init:
        bert.load_state_dict(torch.load(a.init))
    torch.manual_seed(1)
    model = Classifier(bert, 2, 0.1)
    P = int(cfg["max_positions"])
    train_x, train_y = read_tsv(os.path.join(a.data, "train.tsv"))
    dev_x, dev_y = read_tsv(os.path.join(a.data, "dev.tsv"))
    named = [(n, p) for n, p in model.named_parameters() if not n.startswith("bert.mlm_")]
    opt = make_optimizer({**cfg, "lr": a.lr, "weight_decay": cfg["weight_decay"]}, model, named)
    budget = a.minutes * 60
    rng = np.random.default_rng(1)
    start, step, sentences, windows = time.perf_counter(), 0, 0, []
    win_start, win_sent = start, 0
    done = False
    while not done:
        order = rng.permutation(len(train_x))
        for b in range(0, len(order), a.batch_size):
            t = time.perf_counter() - start
            if t >= budget:
                done = True
                break
            frac = t / budget
            lr = a.lr * min(1.0, frac / 0.1) * max(0.0, 1.0 - frac)
            rows = order[b:b + a.batch_size]
            tokens = batch_tokens(sp, [train_x[i] for i in rows], P)
            labels = torch.tensor([train_y[i] for i in rows])
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(tokens), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for _, p in named], 1.0)
            for g in opt.param_groups:
                g["lr"] = lr
            opt.step()
            step += 1
            win_sent += len(rows)
            if step % a.log_interval == 0:
                now = time.perf_counter()
                windows.append(win_sent / (now - win_start))
                win_start, win_sent = now, 0
    train_s = time.perf_counter() - start
    # Inference: the dev sentences `repeat` times, batches of 64 in file order.
    model.eval()
    xs = dev_x * a.repeat
    correct = 0
    t = time.perf_counter()
    with torch.no_grad():
        preds = []
        for b in range(0, len(xs), 64):
            preds += model(batch_tokens(sp, xs[b:b + 64], P)).argmax(-1).tolist()
    infer_s = time.perf_counter() - t
    correct = sum(int(p == y) for p, y in zip(preds[:len(dev_x)], dev_y))
    late = windows[WARM_STEPS:] or windows[1:] or windows
    summary = {"steps": step, "train_s": train_s,
               "sentences_per_s_median": statistics.median(late) if late else float("nan"),
               "dev_accuracy": correct / len(dev_x), "infer_sentences": len(xs),
               "infer_sentences_per_s": len(xs) / infer_s,
               "infer_sentences_per_s_with_start": len(xs) / (time.perf_counter() - t_start - train_s),
               "peak_rss_mib": peak_rss_mib()}
    os.makedirs(a.out, exist_ok=True)
    json.dump(summary, open(os.path.join(a.out, "finetune.json"), "w"), indent=1)
    print(json.dumps(summary))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--corpus", required=True)
    t.add_argument("--spm", required=True)
    t.add_argument("--config", required=True)
    t.add_argument("--minutes", type=float, default=3)
    t.add_argument("--max-steps", type=int, default=0)
    t.add_argument("--log-interval", type=int, default=1)
    t.add_argument("--out", required=True)
    o = sub.add_parser("optim")
    o.add_argument("--config", required=True)
    o.add_argument("--spm", required=True)
    o.add_argument("--steps", type=int, default=50)
    o.add_argument("--mode", choices=["foreach", "single", "flat"], default="foreach")
    f = sub.add_parser("finetune")
    f.add_argument("--init", default="")
    f.add_argument("--config", required=True)
    f.add_argument("--spm", required=True)
    f.add_argument("--data", required=True)
    f.add_argument("--minutes", type=float, default=1)
    f.add_argument("--batch-size", type=int, default=32)
    f.add_argument("--lr", type=float, default=1e-4)
    f.add_argument("--log-interval", type=int, default=1)
    f.add_argument("--repeat", type=int, default=4)
    f.add_argument("--out", required=True)
    a = ap.parse_args()
    {"train": cmd_train, "optim": cmd_optim, "finetune": cmd_finetune}[a.command](a)


if __name__ == "__main__":
    sys.exit(main())
