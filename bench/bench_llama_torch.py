"""bench/bench_llama_torch.py — the torch 1.13 anchor of bench_llama's export row (a table row,
not a test). Layer: bench. Needs python3-torch (`make bench-deps`); bench/run.sh skips it when
torch is missing.

    python3 bench/bench_llama_torch.py CONFIG      (stories15M, stories110M, llama2_7b)

Builds the architecture of examples/llama.lua (RMSNorm, rotate_half rotary from freqs_cos /
freqs_sin buffers, a k/v cache per layer written in place at `pos`, softmax attention, SiLU-gated
feed-forward) on the meta device, and times one decode step through
make_fx(functionalize(f)) — torch 1.13's equivalent of export's trace + functionalization, with
parameters and buffers passed in through functional_call so the cache writes become input
mutations. Prints one line: config, CPU seconds per export (time.process_time, the median of 3
after a warm-up: a shared machine disturbs CPU time far less than wall time), wall seconds,
nodes.
torch 1.13 has no rms_norm op, so RMSNorm is its decomposition (pow, mean, add, rsqrt, mul). """
import math
import statistics
import sys
import time

import torch
from functorch.experimental import functionalize
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils.stateless import functional_call

CONFIGS = {
    "stories15M": dict(dim=288, hidden_dim=768, n_layers=6, n_heads=6, vocab_size=32000,
                       max_seq_len=256),
    "stories110M": dict(dim=768, hidden_dim=2048, n_layers=12, n_heads=12, vocab_size=32000,
                        max_seq_len=1024),
    "llama2_7b": dict(dim=4096, hidden_dim=11008, n_layers=32, n_heads=32, vocab_size=32000,
                      max_seq_len=4096),
}
META = torch.device("meta")


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=META))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads = c["n_heads"]
        self.head_dim = c["dim"] // c["n_heads"]
        d = c["dim"]
        self.wq = nn.Linear(d, d, bias=False, device=META)
        self.wk = nn.Linear(d, d, bias=False, device=META)
        self.wv = nn.Linear(d, d, bias=False, device=META)
        self.wo = nn.Linear(d, d, bias=False, device=META)
        shape = (1, c["max_seq_len"], self.n_heads, self.head_dim)
        self.register_buffer("cache_k", torch.zeros(shape, device=META), persistent=False)
        self.register_buffer("cache_v", torch.zeros(shape, device=META), persistent=False)

    def forward(self, x, pos, cos, sin):
        b, s = x.shape[0], x.shape[1]
        q = self.wq(x).view(b, s, self.n_heads, self.head_dim)
        k = self.wk(x).view(b, s, self.n_heads, self.head_dim)
        v = self.wv(x).view(b, s, self.n_heads, self.head_dim)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        self.cache_k[:, pos:pos + s] = k
        self.cache_v[:, pos:pos + s] = v
        keys = self.cache_k[:, :pos + s].transpose(1, 2)
        values = self.cache_v[:, :pos + s].transpose(1, 2)
        q = q.transpose(1, 2)
        scores = torch.matmul(q, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = torch.softmax(scores, -1)
        out = torch.matmul(scores, values).transpose(1, 2).contiguous().view(b, s, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False, device=META)
        self.w2 = nn.Linear(hidden, dim, bias=False, device=META)
        self.w3 = nn.Linear(dim, hidden, bias=False, device=META)

    def forward(self, x):
        return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.feed_forward = FeedForward(c["dim"], c["hidden_dim"])
        self.attention_norm = RMSNorm(c["dim"])
        self.ffn_norm = RMSNorm(c["dim"])

    def forward(self, x, pos, cos, sin):
        h = x + self.attention(self.attention_norm(x), pos, cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.tok_embeddings = nn.Embedding(c["vocab_size"], c["dim"], device=META)
        self.layers = nn.ModuleList([Block(c) for _ in range(c["n_layers"])])
        self.norm = RMSNorm(c["dim"])
        self.output = nn.Linear(c["dim"], c["vocab_size"], bias=False, device=META)
        hd = c["dim"] // c["n_heads"]
        self.register_buffer("freqs_cos", torch.empty(c["max_seq_len"], hd, device=META),
                             persistent=False)
        self.register_buffer("freqs_sin", torch.empty(c["max_seq_len"], hd, device=META),
                             persistent=False)

    def forward(self, tokens, pos):
        s = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        cos, sin = self.freqs_cos[pos:pos + s], self.freqs_sin[pos:pos + s]
        for layer in self.layers:
            h = layer(h, pos, cos, sin)
        return self.output(self.norm(h))


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "llama2_7b"
    torch.set_grad_enabled(False)
    torch.set_num_threads(1)  # tracing is single-threaded; keeps the CPU time comparable
    model = Transformer(CONFIGS[name])
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    tokens = torch.zeros(1, 1, dtype=torch.int64, device=META)

    def step(st, tok):
        return functional_call(model, st, (tok, 1))

    make_fx(functionalize(step))(state, tokens)  # warm-up
    cpu, wall, nodes = [], [], 0
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        gm = make_fx(functionalize(step))(state, tokens)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
        nodes = len(gm.graph.nodes)
    print(f"{name} {statistics.median(cpu):.4f} {statistics.median(wall):.4f} {nodes}")


if __name__ == "__main__":
    main()
