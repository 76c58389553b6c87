"""nanoGPT's side of bench/gpt.sh, measured as ours is: the loss of a trained nanoGPT checkpoint
on its whole validation split (consecutive blocks of block_size, every character scored once,
as `nlpzoo evaluate` scores ours) and the seconds its GPT.generate takes for N new characters
(sample.py's settings: temperature 0.8, top-k 200, one sample from "\\n").

usage: /usr/bin/python3 bench/gpt_ref.py NANOGPT_OUT_DIR NEW_CHARS THREADS
NANOGPT_OUT_DIR is where ../shared/bench/peers/nanogpt/run.sh ran (model.py, data/, out-*/ckpt.pt).
Prints one JSON line: val_loss, val_chars, sample_seconds."""
import glob, json, os, sys, time

out, new_chars, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, out)
import numpy as np
import torch
import torch.nn.functional as F
from model import GPT, GPTConfig

torch.set_num_threads(threads)
ckpt = torch.load(glob.glob(os.path.join(out, "out-*", "ckpt.pt"))[0], map_location="cpu")
model = GPT(GPTConfig(**ckpt["model_args"]))
state = {k.removeprefix("_orig_mod."): v for k, v in ckpt["model"].items()}
model.load_state_dict(state)
model.eval()
T = model.config.block_size
val = torch.from_numpy(np.fromfile(os.path.join(out, "data", "shakespeare_char", "val.bin"), dtype=np.uint16).astype(np.int64))

nats, count = 0.0, 0
with torch.no_grad():
    starts = list(range(0, len(val) - 1, T))
    for i in range(0, len(starts), 64):
        xs, ys = [], []
        for s in starts[i:i + 64]:
            x = val[s:s + T]
            y = val[s + 1:s + T + 1]
            pad = T - len(y)
            xs.append(F.pad(x[:len(y)], (0, pad)))
            ys.append(F.pad(y, (0, pad), value=-1))
        x, y = torch.stack(xs), torch.stack(ys)
        logits, _ = model(x, y)  # with targets: logits at every position
        nats += F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-1, reduction="sum").item()
        count += int((y >= 0).sum())

meta = __import__("pickle").load(open(os.path.join(out, "data", "shakespeare_char", "meta.pkl"), "rb"))
torch.manual_seed(1)
start = torch.tensor([[meta["stoi"]["\n"]]])
with torch.no_grad():
    t0 = time.perf_counter()
    model.generate(start, new_chars, temperature=0.8, top_k=200)
    seconds = time.perf_counter() - t0
print(json.dumps({"val_loss": nats / count, "val_chars": count + 1, "sample_seconds": seconds}))
