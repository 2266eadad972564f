# bench/char_lm.py — the PyTorch twin of examples/char_lm.lua: the same
# corpus, split, vocabulary, batch order, architectures, initialisation scheme (PyTorch's
# defaults, which gpulua's layers copy) and optimizer, so that per-step times and validation
# losses can be compared. Run by bench/char_lm.sh beside the Lua example; alone:
#   /usr/bin/python3 bench/char_lm.py --model transformer --steps 500 [--threads 2]
# Prints "charlm<TAB>key<TAB>value" lines (bench/char_lm.sh reads them).
import argparse, math, os, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

FORTUNES = "/usr/share/games/fortunes"
MASK64 = (1 << 64) - 1


def corpus_files(folder):
    """Every plain text file of the folder in sorted order: regular files (the .u8 names
    are links), not the strfile indexes (.dat)."""
    names = sorted(os.listdir(folder))
    return [os.path.join(folder, n) for n in names
            if not n.endswith(".dat") and os.path.isfile(os.path.join(folder, n))
            and not os.path.islink(os.path.join(folder, n))]


class SplitMix64:
    """The batch order of both twins: SplitMix64 (Steele et al.), one 64-bit draw per batch
    row, the offset = (draw >> 1) % span (examples/char_lm.lua does the same in Lua)."""
    def __init__(self, seed):
        self.s = seed & MASK64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def load(folder, limit=None):
    data = b"".join(open(f, "rb").read() for f in corpus_files(folder))
    if limit:
        data = data[:limit]
    vocab = sorted(set(data))
    index = {b: i for i, b in enumerate(vocab)}
    ids = torch.tensor([index[b] for b in data], dtype=torch.long)
    n_train = int(len(ids) * 0.9)
    return ids[:n_train], ids[n_train:], vocab


def batch(ids, rng, batch_size, ctx):
    span = len(ids) - ctx - 1
    offs = [(rng.next() >> 1) % span for _ in range(batch_size)]
    x = torch.stack([ids[o:o + ctx] for o in offs])
    y = torch.stack([ids[o + 1:o + ctx + 1] for o in offs])
    return x, y


class GPT(nn.Module):
    """A GPT-style decoder: token and learned position embeddings, pre-norm blocks of causal
    self-attention and a GELU MLP of 4x width, a final LayerNorm and a linear head."""
    def __init__(self, vocab, width=128, layers=4, heads=4, ctx=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(ctx, width)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=4 * width, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)
        self.register_buffer("mask", torch.triu(torch.full((ctx, ctx), float("-inf")), diagonal=1))

    def forward(self, x):
        t = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(t))
        h = self.blocks(h, mask=self.mask[:t, :t])
        return self.head(self.norm(h))


class CharRNN(nn.Module):
    """char-rnn's classic model: 2 x 256 LSTM over embedded characters, a linear head."""
    def __init__(self, vocab, hidden=256, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x):
        h, _ = self.lstm(self.tok(x))
        return self.head(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="transformer", choices=["transformer", "lstm"])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--eval-batches", type=int, default=20)
    ap.add_argument("--limit", type=int, default=0, help="use only the corpus's first N bytes")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train, val, vocab = load(FORTUNES, args.limit or None)
    if args.model == "transformer":
        model = GPT(len(vocab), ctx=args.context)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
        clip = None
    else:
        model = CharRNN(len(vocab))
        opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.95), weight_decay=0.0)
        clip = 5.0
    rng = SplitMix64(args.seed)
    times = []
    for step in range(1, args.steps + 1):
        x, y = batch(train, rng, args.batch, args.context)
        t = time.perf_counter()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        times.append(time.perf_counter() - t)
    model.eval()
    vrng = SplitMix64(args.seed + 1000)
    with torch.no_grad():
        tot = 0.0
        for _ in range(args.eval_batches):
            x, y = batch(val, vrng, args.batch, args.context)
            tot += F.cross_entropy(model(x).reshape(-1, len(vocab)), y.reshape(-1)).item()
    val_loss = tot / args.eval_batches
    steady = sorted(times[1:] or times)
    print("charlm\tvocab\t%d" % len(vocab))
    print("charlm\ttrain_chars\t%d" % len(train))
    print("charlm\tstep_ms_median\t%.2f" % (steady[len(steady) // 2] * 1e3))
    print("charlm\ttrain_loss_last\t%.4f" % loss.item())
    print("charlm\tval_loss\t%.4f" % val_loss)
    print("charlm\tval_bpc\t%.4f" % (val_loss / math.log(2)))


if __name__ == "__main__":
    sys.exit(main())
