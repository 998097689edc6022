"""bench/bench_dispatch_torch.py — torch 1.13's per-call cost of the bench_dispatch.lua rows (the
anchor of that table; a table row source, not a test). Layer: bench. Needs python3-torch
(`make bench-deps`); bench/run.sh skips it when torch is missing.

Prints `name microseconds` lines for x + y, x.add(y), torch.add(x, y),
torch.ops.aten.add.Tensor(x, y), x * 2, x.exp(), x.sum() and x.add_(y) on 1-element float32
tensors: the median of 7 timed loops of N calls (after one untimed loop of every row), per call,
in process CPU time (as the Lua side measures). """
import statistics
import sys
import time

import torch

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
torch.set_grad_enabled(False)
x, y = torch.randn(1), torch.randn(1)
add_t = torch.ops.aten.add.Tensor

ROWS = [
    ("x + y", lambda: x + y),
    ("x:add(y)", lambda: x.add(y)),
    ("torch.add(x, y)", lambda: torch.add(x, y)),
    ("torch.ops.aten.add.Tensor(x, y)", lambda: add_t(x, y)),
    ("x * 2 (wrapped number)", lambda: x * 2),
    ("x:exp()", lambda: x.exp()),
    ("x:sum()", lambda: x.sum()),
    ("x:add_(y) (in place)", lambda: x.add_(y)),
]

# one untimed loop of every row first, as the Lua side does (heaps at their steady size)
for _, f in ROWS:
    for _ in range(N):
        f()

for name, f in ROWS:
    runs = []
    for _ in range(7):
        t0 = time.process_time()
        for _ in range(N):
            f()
        runs.append((time.process_time() - t0) / N * 1e6)
    print(f"{name}\t{statistics.median(runs):.3f}")
