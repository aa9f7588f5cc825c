#!/usr/bin/env python3
"""A small decoder-only transformer trained on generated text with gradckpt and PyTorch.

    python3 examples/python/train_torch.py --dir run1 --steps 200     # a fresh run into the store run1/
    python3 examples/python/train_torch.py --resume run1              # continue after a crash or Ctrl-C

Each step takes --micro micro-batches of unequal size (from (seed, step)
alone), runs forward and backward on each and hands every p.grad to a
gradckpt.torch.GradientAccumulator (weighted mean by micro-batch size, the
global L2 norm clipped to --clip), then takes an AdamW step. Every --save-every
steps gradckpt.torch.save_state writes the weights, AdamW's moments and step
and the loss into a gradckpt.Store (deltas against the previous version) and
the tag "best" moves to the lowest loss. Killed at any moment (SIGKILL, even
mid-save) and resumed, the run ends with the same weights, bit for bit, as an
uninterrupted one, on 1 or 2 threads alike (see README: why torch is
deterministic here).
"""
import argparse
import json
import math
import os
import random
import sys
import time

# MKL's strict conditional-numerical-reproducibility mode: its GEMMs give the
# same bits whatever the thread count. Read once, when torch loads MKL.
os.environ.setdefault("MKL_CBWR", "AVX2,STRICT")
# torch's OpenMP runtime and gradckpt's are two copies of libgomp in one
# process; busy-waiting, each one's idle threads take the cores the other
# needs (2.5x slower on 2 cores). Waiting passively costs nothing measurable here.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from torch import nn  # noqa: E402

import gradckpt  # noqa: E402
from gradckpt.torch import GradientAccumulator, load_state, save_state, save_file  # noqa: E402

WORDS = {
    "det": ["the", "a", "every", "one"],
    "noun": ["cat", "dog", "bird", "fox", "child", "robot", "tree", "river"],
    "verb": ["sees", "likes", "chases", "finds", "draws", "hears"],
    "adj": ["red", "small", "quick", "old", "green", "quiet"],
}


def generate_text(seed, n_chars):
    """Sentences of a tiny grammar: det (adj) noun verb det (adj) noun."""
    r = random.Random(seed)
    out = []
    size = 0
    while size < n_chars:
        words = [r.choice(WORDS["det"])]
        if r.random() < 0.5:
            words.append(r.choice(WORDS["adj"]))
        words += [r.choice(WORDS["noun"]), r.choice(WORDS["verb"]), r.choice(WORDS["det"])]
        if r.random() < 0.5:
            words.append(r.choice(WORDS["adj"]))
        words.append(r.choice(WORDS["noun"]))
        s = " ".join(words) + ". "
        out.append(s)
        size += len(s)
    return "".join(out)[:n_chars]


class LayerNorm(nn.Module):
    """nn.LayerNorm written out: torch's fused CPU kernel sums the weight and
    bias gradients in per-thread pieces, so they depend on the thread count;
    these plain ops reduce each output element in one fixed order."""

    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        var = (xc * xc).mean(-1, keepdim=True)
        return xc * torch.rsqrt(var + self.eps) * self.weight + self.bias


class Block(nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.ln1 = LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.heads = heads
        self.register_buffer("mask", torch.triu(torch.full((ctx, ctx), float("-inf")), diagonal=1))

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h)) + self.mask[:t, :t]
        y = torch.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab, d, heads, layers, ctx):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads, ctx) for _ in range(layers))
        self.ln = LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def micro_sizes(batch, micro):
    """Unequal micro-batch sizes summing to batch (e.g. 16 in 4: 6, 4, 3, 3)."""
    sizes = [batch // micro] * micro
    sizes[0] += batch - sum(sizes)
    if micro > 1 and sizes[-1] > 1:
        sizes[0] += 1
        sizes[-1] -= 1
    return sizes


def batch_of(data, seed, step, micro_index, rows, ctx):
    """Training windows of step `step`, micro-batch `micro_index`: from (seed, step, index) alone."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 101 + micro_index)
    starts = torch.randint(0, data.numel() - ctx - 1, (rows,), generator=g)
    x = torch.stack([data[s:s + ctx] for s in starts.tolist()])
    y = torch.stack([data[s + 1:s + ctx + 1] for s in starts.tolist()])
    return x, y


def lr_at(cfg, step):
    warm = max(1, cfg["steps"] // 10)
    if step < warm:
        return cfg["lr"] * (step + 1) / warm
    return cfg["lr"] * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, cfg["steps"] - warm))))


def weights_digest(model):
    h = gradckpt.FNV1A64_INIT
    for name, t in sorted(model.state_dict().items()):
        h = gradckpt.fnv1a64(name.encode(), h)
        h = gradckpt.fnv1a64(t.detach().contiguous().view(-1).view(torch.uint8), h)
    return h


def write_config(path, cfg):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="a new run: its store directory")
    ap.add_argument("--resume", metavar="DIR", help="continue the run in DIR (its options are read from it)")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--micro", type=int, default=4, help="micro-batches per step")
    ap.add_argument("--batch", type=int, default=16, help="sequences per step (over all micro-batches)")
    ap.add_argument("--ctx", type=int, default=32)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--save-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=1, help="torch and gradckpt threads (the result is the same)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    if (args.dir is None) == (args.resume is None):
        ap.error("give exactly one of --dir and --resume")
    torch.set_num_threads(args.threads)
    gradckpt.set_num_threads(args.threads)

    run_dir = args.dir or args.resume
    cfg_path = os.path.join(run_dir, "config.json")
    if args.dir:
        if os.path.exists(cfg_path):
            sys.exit(f"train_torch.py: {run_dir} already holds a run (use --resume {run_dir})")
        os.makedirs(run_dir, exist_ok=True)
        cfg = {k: getattr(args, k) for k in ("steps", "micro", "batch", "ctx", "dim", "heads", "layers", "lr",
                                              "clip", "save_every", "seed")}
        write_config(cfg_path, cfg)
    else:
        with open(cfg_path, encoding="utf-8") as f:
            cfg = json.load(f)

    text = generate_text(cfg["seed"], 60000)
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    torch.manual_seed(cfg["seed"])
    model = TinyGPT(len(chars), cfg["dim"], cfg["heads"], cfg["layers"], cfg["ctx"])
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01, foreach=False)
    sizes = micro_sizes(cfg["batch"], cfg["micro"])
    acc = GradientAccumulator(model.named_parameters(), mode="weighted_mean", clip_norm=cfg["clip"],
                              weights=[float(s) for s in sizes])

    store = gradckpt.Store(os.path.join(run_dir, "store"), max_checkpoints=4, keep_every_n=5)
    start, best = 0, math.inf
    if store.latest is not None:
        st = load_state(store, model, opt)
        start, best = st.step, st.metadata["best"]
        if not args.quiet:
            print(f"resumed at step {start} (version {st.version})", flush=True)

    n_params = sum(p.numel() for p in model.parameters())
    if not args.quiet and start == 0:
        print(f"TinyGPT: {n_params} parameters, vocab {len(chars)}, {cfg['steps']} steps of {cfg['micro']} "
              f"micro-batches {sizes}", flush=True)
    t0 = time.perf_counter()
    loss_f = nn.CrossEntropyLoss()
    for step in range(start, cfg["steps"]):
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, step)
        loss_sum = 0.0
        for j, rows in enumerate(sizes):
            x, y = batch_of(data, cfg["seed"], step, j, rows, cfg["ctx"])
            loss = loss_f(model(x).view(-1, len(chars)), y.view(-1))
            loss.backward()
            acc.accumulate()
            loss_sum += loss.item() * rows
        norm = acc.step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_avg = loss_sum / cfg["batch"]
        done = step + 1
        if done % cfg["save_every"] == 0 or done == cfg["steps"]:
            best = min(best, loss_avg)
            v = save_state(store, model, opt, done, loss=loss_avg, best=best, grad_norm=norm)
            if loss_avg <= best:
                for old in store.versions:
                    if old != v and "best" in store.info(old)["tags"]:
                        store.untag(old, "best")
                store.tag(v, "best")
            if not args.quiet:
                print(f"step {done:5d}  loss {loss_avg:.4f}  grad norm {norm:.3f}  saved v{v}", flush=True)
    if not args.quiet:
        st = store.stats()
        print(f"{cfg['steps'] - start} steps in {time.perf_counter() - t0:.1f} s; store: {st['versions']} versions, "
              f"{st['disk_bytes']} bytes on disk for {st['logical_bytes']} logical", flush=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(run_dir, "final.safetensors"))
    print(f"weights digest: fnv1a64:{weights_digest(model):016x}", flush=True)
    store.close()


if __name__ == "__main__":
    main()
