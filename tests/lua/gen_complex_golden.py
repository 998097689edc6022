#!/usr/bin/env python3
# tests/lua/gen_complex_golden.py — prints the expected values of tests/lua/test_complex.lua with
# torch 1.13 (python3-torch): each case as `["name"] = [[repr]],` in the Lua table GOLD.
# Layer: tests. Run: /usr/bin/python3 tests/lua/gen_complex_golden.py > /tmp/gold.lua and paste.
import torch

a = torch.complex(torch.tensor([[1.5, -2.0, 0.25], [3.0, 0.0, -1.0]]),
                  torch.tensor([[0.5, 1.0, -3.0], [-2.0, 4.0, 0.0]]))
b = torch.complex(torch.tensor([2.0, -0.5, 1.0]), torch.tensor([-1.0, 0.25, 2.0]))
f = torch.tensor([[1.0, 2.0, -1.0], [0.5, 3.0, 2.0]])
i = torch.tensor([1, 2, 3])
d = a.to(torch.complex128)

cases = {
    "add": a + b, "sub": a - b, "mul": a * b, "div": a / b,
    "add_f": a + f, "mul_f": f * a, "mul_i": a * i, "sub_i": i - b,
    "add_n": a + 2, "mul_n": a * 2.5, "div_n": a / 4, "rsub_n": 3 - b,
    "add_alpha": torch.add(a, b, alpha=2), "sub_alpha": torch.sub(a, b, alpha=0.5),
    "t_mul": a.t() * b.view(3, 1), "d_div": d / b,
    "neg": -a, "exp": a.exp(), "abs": a.abs(), "abs_d": d.abs(), "conj": a.conj(),
    "real": a.real, "imag": a.imag,
    "sum": a.sum(), "sum1": a.sum(1), "mean0k": a.mean(0, keepdim=True), "sum_dt": f.sum(dtype=torch.complex64),
    "mean_d": d.mean(), "sum_t": a.t().sum(0),
    "mm": a @ a.t(), "mm_d": d @ d.t(), "bmm": torch.bmm(torch.stack([a, a * 2]), torch.stack([a.t(), a.t()])),
    "matmul_f": torch.matmul(a, f.t().to(torch.complex64)),
    "polar": torch.polar(torch.tensor([1.0, 2.0, 0.5]), torch.tensor([0.0, 1.0, -2.5])),
    "complex_bc": torch.complex(torch.tensor([[1.0], [2.0]]), torch.tensor([0.5, -0.5])),
    "view_as_real": torch.view_as_real(a), "view_as_complex": torch.view_as_complex(torch.tensor([[1.0, 2.0], [3.0, -4.0]])),
    "to_c64": i.to(torch.complex64), "to_f32": a.real.clone(), "full": torch.full((2,), 1.5, dtype=torch.complex128),
    "print_sci": torch.complex(torch.tensor([1e10, 1.0]), torch.tensor([2.0, -3.5])),
    "print_small": torch.complex(torch.tensor([1e-5, 1.0]), torch.tensor([1.0, 100.0])),
    "print_0d": torch.complex(torch.tensor(1.5), torch.tensor(-2.0)),
    "print_empty": torch.zeros(0, 3, dtype=torch.complex64),
    "print_wrap": torch.complex(torch.arange(12.0) / 3, -torch.arange(12.0) / 7),
    "print_big": torch.complex(torch.arange(2000.0), torch.ones(2000)),
    "print_nan": torch.complex(torch.tensor([float("nan"), 1.0, float("inf")]), torch.tensor([1.0, float("nan"), -float("inf")])),
    "print_2d_d": d,
}
print("local GOLD = {")
for k, v in cases.items():
    print('  ["%s"] = [==[%s]==],' % (k, repr(v)))
print("}")
