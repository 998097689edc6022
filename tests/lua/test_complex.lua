-- tests/lua/test_complex.lua — complex64 / complex128 from Lua (issue 10): every op that
-- computes on complex tensors (elementwise with broadcasting, strides, real and integer
-- operands, Lua numbers, alpha; neg exp abs conj real imag; sum / mean; mm / bmm / matmul;
-- polar / complex / view_as_real / view_as_complex), printing as PyTorch prints complex tensors,
-- type promotion, PyTorch's error messages, views written through (eager and exported: a write
-- through view_as_real of a complex buffer is a BUFFER_MUTATION written back with
-- view_as_complex), safetensors C64 and PT2 round trips. Layer: tests. The expected reprs were
-- printed by torch 1.13 (tests/lua/gen_complex_golden.py) for the same inputs.
local T = dofile("tests/lua/harness.lua")
local P = dofile("tests/peer/peer.lua")

local GOLD = {
  ["add"] = [==[tensor([[ 3.5000-0.5000j, -2.5000+1.2500j,  1.2500-1.0000j],
        [ 5.0000-3.0000j, -0.5000+4.2500j,  0.0000+2.0000j]])]==],
  ["sub"] = [==[tensor([[-0.5000+1.5000j, -1.5000+0.7500j, -0.7500-5.0000j],
        [ 1.0000-1.0000j,  0.5000+3.7500j, -2.0000-2.0000j]])]==],
  ["mul"] = [==[tensor([[ 3.5000-0.5000j,  0.7500-1.0000j,  6.2500-2.5000j],
        [ 4.0000-7.0000j, -1.0000-2.0000j, -1.0000-2.0000j]])]==],
  ["div"] = [==[tensor([[ 0.5000+0.5000j,  4.0000+0.0000j, -1.1500-0.7000j],
        [ 1.6000-0.2000j,  3.2000-6.4000j, -0.2000+0.4000j]])]==],
  ["add_f"] = [==[tensor([[ 2.5000+0.5000j,  0.0000+1.0000j, -0.7500-3.0000j],
        [ 3.5000-2.0000j,  3.0000+4.0000j,  1.0000+0.0000j]])]==],
  ["mul_f"] = [==[tensor([[ 1.5000+0.5000j, -4.0000+2.0000j, -0.2500+3.0000j],
        [ 1.5000-1.0000j,  0.0000+12.0000j, -2.0000+0.0000j]])]==],
  ["mul_i"] = [==[tensor([[ 1.5000+0.5000j, -4.0000+2.0000j,  0.7500-9.0000j],
        [ 3.0000-2.0000j,  0.0000+8.0000j, -3.0000+0.0000j]])]==],
  ["sub_i"] = [==[tensor([-1.0000+1.0000j,  2.5000-0.2500j,  2.0000-2.0000j])]==],
  ["add_n"] = [==[tensor([[3.5000+0.5000j, 0.0000+1.0000j, 2.2500-3.0000j],
        [5.0000-2.0000j, 2.0000+4.0000j, 1.0000+0.0000j]])]==],
  ["mul_n"] = [==[tensor([[ 3.7500+1.2500j, -5.0000+2.5000j,  0.6250-7.5000j],
        [ 7.5000-5.0000j,  0.0000+10.0000j, -2.5000+0.0000j]])]==],
  ["div_n"] = [==[tensor([[ 0.3750+0.1250j, -0.5000+0.2500j,  0.0625-0.7500j],
        [ 0.7500-0.5000j,  0.0000+1.0000j, -0.2500+0.0000j]])]==],
  ["rsub_n"] = [==[tensor([1.0000+1.0000j, 3.5000-0.2500j, 2.0000-2.0000j])]==],
  ["add_alpha"] = [==[tensor([[ 5.5000-1.5000j, -3.0000+1.5000j,  2.2500+1.0000j],
        [ 7.0000-4.0000j, -1.0000+4.5000j,  1.0000+4.0000j]])]==],
  ["sub_alpha"] = [==[tensor([[ 0.5000+1.0000j, -1.7500+0.8750j, -0.2500-4.0000j],
        [ 2.0000-1.5000j,  0.2500+3.8750j, -1.5000-1.0000j]])]==],
  ["t_mul"] = [==[tensor([[ 3.5000-0.5000j,  4.0000-7.0000j],
        [ 0.7500-1.0000j, -1.0000-2.0000j],
        [ 6.2500-2.5000j, -1.0000-2.0000j]])]==],
  ["d_div"] = [==[tensor([[ 0.5000+0.5000j,  4.0000+0.0000j, -1.1500-0.7000j],
        [ 1.6000-0.2000j,  3.2000-6.4000j, -0.2000+0.4000j]],
       dtype=torch.complex128)]==],
  ["neg"] = [==[tensor([[-1.5000-0.5000j,  2.0000-1.0000j, -0.2500+3.0000j],
        [-3.0000+2.0000j, -0.0000-4.0000j,  1.0000-0.0000j]])]==],
  ["exp"] = [==[tensor([[ 3.9331+2.1486j,  0.0731+0.1139j, -1.2712-0.1812j],
        [-8.3585-18.2637j, -0.6536-0.7568j,  0.3679+0.0000j]])]==],
  ["abs"] = [==[tensor([[1.5811, 2.2361, 3.0104],
        [3.6056, 4.0000, 1.0000]])]==],
  ["abs_d"] = [==[tensor([[1.5811, 2.2361, 3.0104],
        [3.6056, 4.0000, 1.0000]], dtype=torch.float64)]==],
  ["conj"] = [==[tensor([[ 1.5000-0.5000j, -2.0000-1.0000j,  0.2500+3.0000j],
        [ 3.0000+2.0000j,  0.0000-4.0000j, -1.0000-0.0000j]])]==],
  ["real"] = [==[tensor([[ 1.5000, -2.0000,  0.2500],
        [ 3.0000,  0.0000, -1.0000]])]==],
  ["imag"] = [==[tensor([[ 0.5000,  1.0000, -3.0000],
        [-2.0000,  4.0000,  0.0000]])]==],
  ["sum"] = [==[tensor(1.7500+0.5000j)]==],
  ["sum1"] = [==[tensor([-0.2500-1.5000j,  2.0000+2.0000j])]==],
  ["mean0k"] = [==[tensor([[ 2.2500-0.7500j, -1.0000+2.5000j, -0.3750-1.5000j]])]==],
  ["sum_dt"] = [==[tensor(7.5000+0.j)]==],
  ["mean_d"] = [==[tensor(0.2917+0.0833j, dtype=torch.complex128)]==],
  ["sum_t"] = [==[tensor([-0.2500-1.5000j,  2.0000+2.0000j])]==],
  ["mm"] = [==[tensor([[ -3.9375-4.0000j,   1.2500-6.5000j],
        [  1.2500-6.5000j, -10.0000-12.0000j]])]==],
  ["mm_d"] = [==[tensor([[ -3.9375-4.0000j,   1.2500-6.5000j],
        [  1.2500-6.5000j, -10.0000-12.0000j]], dtype=torch.complex128)]==],
  ["bmm"] = [==[tensor([[[ -3.9375-4.0000j,   1.2500-6.5000j],
         [  1.2500-6.5000j, -10.0000-12.0000j]],

        [[ -7.8750-8.0000j,   2.5000-13.0000j],
         [  2.5000-13.0000j, -20.0000-24.0000j]]])]==],
  ["matmul_f"] = [==[tensor([[-2.7500+5.5000j, -4.7500-2.7500j],
        [ 4.0000+6.0000j, -0.5000+11.0000j]])]==],
  ["polar"] = [==[tensor([ 1.0000+0.0000j,  1.0806+1.6829j, -0.4006-0.2992j])]==],
  ["complex_bc"] = [==[tensor([[1.+0.5000j, 1.-0.5000j],
        [2.+0.5000j, 2.-0.5000j]])]==],
  ["view_as_real"] = [==[tensor([[[ 1.5000,  0.5000],
         [-2.0000,  1.0000],
         [ 0.2500, -3.0000]],

        [[ 3.0000, -2.0000],
         [ 0.0000,  4.0000],
         [-1.0000,  0.0000]]])]==],
  ["view_as_complex"] = [==[tensor([1.+2.j, 3.-4.j])]==],
  ["to_c64"] = [==[tensor([1.+0.j, 2.+0.j, 3.+0.j])]==],
  ["to_f32"] = [==[tensor([[ 1.5000, -2.0000,  0.2500],
        [ 3.0000,  0.0000, -1.0000]])]==],
  ["full"] = [==[tensor([1.5000+0.j, 1.5000+0.j], dtype=torch.complex128)]==],
  ["print_sci"] = [==[tensor([1.0000e+10+2.0000j, 1.0000e+00-3.5000j])]==],
  ["print_small"] = [==[tensor([1.0000e-05+1.j, 1.0000e+00+100.j])]==],
  ["print_0d"] = [==[tensor(1.5000-2.j)]==],
  ["print_empty"] = [==[tensor([], size=(0, 3), dtype=torch.complex64)]==],
  ["print_wrap"] = [==[tensor([0.0000-0.0000j, 0.3333-0.1429j, 0.6667-0.2857j, 1.0000-0.4286j,
        1.3333-0.5714j, 1.6667-0.7143j, 2.0000-0.8571j, 2.3333-1.0000j,
        2.6667-1.1429j, 3.0000-1.2857j, 3.3333-1.4286j, 3.6667-1.5714j])]==],
  ["print_big"] = [==[tensor([0.0000e+00+1.j, 1.0000e+00+1.j, 2.0000e+00+1.j,  ...,
        1.9970e+03+1.j, 1.9980e+03+1.j, 1.9990e+03+1.j])]==],
  ["print_nan"] = [==[tensor([nan+1.j, 1.+nanj, inf-infj])]==],
  ["print_2d_d"] = [==[tensor([[ 1.5000+0.5000j, -2.0000+1.0000j,  0.2500-3.0000j],
        [ 3.0000-2.0000j,  0.0000+4.0000j, -1.0000+0.0000j]],
       dtype=torch.complex128)]==],
}

local a = torch.complex(torch.tensor{{1.5, -2.0, 0.25}, {3.0, 0.0, -1.0}},
                        torch.tensor{{0.5, 1.0, -3.0}, {-2.0, 4.0, 0.0}})
local b = torch.complex(torch.tensor{2.0, -0.5, 1.0}, torch.tensor{-1.0, 0.25, 2.0})
local f = torch.tensor{{1.0, 2.0, -1.0}, {0.5, 3.0, 2.0}}
local i = torch.tensor{1, 2, 3}
local d = a:to(torch.complex128)
local nan, inf = 0 / 0, math.huge

local CASES = {
  add = function() return a + b end, sub = function() return a - b end,
  mul = function() return a * b end, div = function() return a / b end,
  add_f = function() return a + f end, mul_f = function() return f * a end,
  mul_i = function() return a * i end, sub_i = function() return i - b end,
  add_n = function() return a + 2 end, mul_n = function() return a * 2.5 end,
  div_n = function() return a / 4 end, rsub_n = function() return 3 - b end,
  add_alpha = function() return torch.add(a, b, {alpha = 2}) end,
  sub_alpha = function() return torch.sub(a, b, {alpha = 0.5}) end,
  t_mul = function() return a:t() * b:view(3, 1) end, d_div = function() return d / b end,
  neg = function() return -a end, exp = function() return a:exp() end,
  abs = function() return a:abs() end, abs_d = function() return d:abs() end,
  conj = function() return a:conj() end, real = function() return a.real end,
  imag = function() return a.imag end,
  sum = function() return a:sum() end, sum1 = function() return a:sum(1) end,
  mean0k = function() return a:mean(0, true) end,
  sum_dt = function() return f:sum({dtype = torch.complex64}) end,
  mean_d = function() return d:mean() end, sum_t = function() return a:t():sum(0) end,
  mm = function() return torch.mm(a, a:t()) end, mm_d = function() return d:matmul(d:t()) end,
  bmm = function() return torch.bmm(torch.stack({a, a * 2}), torch.stack({a:t(), a:t()})) end,
  matmul_f = function() return torch.matmul(a, f:t():to(torch.complex64)) end,
  polar = function() return torch.polar(torch.tensor{1.0, 2.0, 0.5}, torch.tensor{0.0, 1.0, -2.5}) end,
  complex_bc = function() return torch.complex(torch.tensor{{1.0}, {2.0}}, torch.tensor{0.5, -0.5}) end,
  view_as_real = function() return torch.view_as_real(a) end,
  view_as_complex = function() return torch.view_as_complex(torch.tensor{{1.0, 2.0}, {3.0, -4.0}}) end,
  to_c64 = function() return i:to(torch.complex64) end, to_f32 = function() return a.real:clone() end,
  full = function() return torch.full({2}, 1.5, {dtype = torch.complex128}) end,
  print_sci = function() return torch.complex(torch.tensor{1e10, 1.0}, torch.tensor{2.0, -3.5}) end,
  print_small = function() return torch.complex(torch.tensor{1e-5, 1.0}, torch.tensor{1.0, 100.0}) end,
  print_0d = function() return torch.complex(torch.tensor(1.5), torch.tensor(-2.0)) end,
  print_empty = function() return torch.zeros(0, 3, {dtype = torch.complex64}) end,
  print_wrap = function() return torch.complex(torch.arange(12):float() / 3, -torch.arange(12):float() / 7) end,
  print_big = function() return torch.complex(torch.arange(2000):float(), torch.ones(2000)) end,
  print_nan = function() return torch.complex(torch.tensor{nan, 1.0, inf}, torch.tensor{1.0, nan, -inf}) end,
  print_2d_d = function() return d end,
}

T.test("every case prints as torch 1.13 prints it", function()
  local names = {}
  for k in pairs(GOLD) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do
    T.truthy(CASES[k], "no Lua case for " .. k)
    T.eq(tostring(CASES[k]()), GOLD[k], k)
  end
end)

local function close(x, y, tol)
  return (x - y):abs():max():item() <= (tol or 1e-6)
end

-- Naive references: each element as (re, im) Lua numbers through the textbook formulas.
local function parts(t)
  local out = {}
  for k, v in ipairs(t:reshape(-1):tolist()) do out[k] = v end
  return out
end

T.test("elementwise ops against a naive per-element reference (broadcast, strides, dtypes)", function()
  torch.manual_seed(11)
  local x = torch.complex(torch.randn(4, 5), torch.randn(4, 5))
  local y = torch.complex(torch.randn(5, 4), torch.randn(5, 4)):t() -- a transposed operand
  local z = torch.complex(torch.randn(5), torch.randn(5))           -- broadcast
  for _, case in ipairs{{"add", x, y}, {"mul", x, y}, {"div", x, y}, {"mul", x, z}, {"sub", z, x}} do
    local op, p, q = case[1], case[2], case[3]
    local r = torch[op](p, q)
    local pb, qb = p:expand(4, 5):contiguous(), q:expand(4, 5):contiguous()
    local rp, pp, qp = parts(r), parts(pb), parts(qb)
    for k = 1, #rp do
      local A, B, C, D = pp[k][1], pp[k][2], qp[k][1], qp[k][2]
      local re, im
      if op == "add" then re, im = A + C, B + D
      elseif op == "sub" then re, im = A - C, B - D
      elseif op == "mul" then re, im = A * C - B * D, A * D + B * C
      else
        local den = C * C + D * D
        re, im = (A * C + B * D) / den, (B * C - A * D) / den
      end
      T.near(rp[k][1], re, 1e-5 * (1 + math.abs(re)), op .. " re " .. k)
      T.near(rp[k][2], im, 1e-5 * (1 + math.abs(im)), op .. " im " .. k)
    end
  end
  -- exp and abs against e^a (cos b + i sin b) and sqrt(a^2 + b^2)
  local e, ab, xp = parts(x:exp()), x:abs():reshape(-1):tolist(), parts(x)
  for k = 1, #xp do
    local A, B = xp[k][1], xp[k][2]
    T.near(e[k][1], math.exp(A) * math.cos(B), 1e-5 * math.exp(A), "exp re")
    T.near(e[k][2], math.exp(A) * math.sin(B), 1e-5 * math.exp(A), "exp im")
    T.near(ab[k], math.sqrt(A * A + B * B), 1e-6, "abs")
  end
  -- mm against the sum of products
  local yt = y:t() -- [5, 4], itself a transposed view
  local m = torch.mm(x, yt)
  local want = torch.zeros(4, 4, {dtype = torch.complex64})
  for r = 0, 3 do
    for c = 0, 3 do want[{r, c}] = (x[r] * yt[{":", c}]):sum() end
  end
  T.truthy(close(m, want, 1e-5), tostring(m - want))
end)

T.test("dot, mv and 1-d matmul (no conjugation) against sums of products", function()
  local function dot(u, v)
    local re, im = 0, 0
    local up, vp = parts(u), parts(v)
    for k = 1, #up do
      re = re + up[k][1] * vp[k][1] - up[k][2] * vp[k][2]
      im = im + up[k][1] * vp[k][2] + up[k][2] * vp[k][1]
    end
    return re, im
  end
  local re, im = dot(b, b) -- 0.1875 - 0.25i
  local r = torch.dot(b, b):item()
  T.near(r[1], re, 1e-6)
  T.near(r[2], im, 1e-6)
  T.eq(tostring(torch.mv(a, b)), "tensor([10.5000-4.j,  2.0000-11.j])") -- torch 1.13
  T.eq(tostring(torch.matmul(b, a:t())), "tensor([10.5000-4.j,  2.0000-11.j])")
  local r0 = torch.mv(d, b:cdouble())[0]:item()
  local w0, w1 = dot(d[0], b:cdouble())
  T.near(r0[1], w0, 1e-12)
  T.near(r0[2], w1, 1e-12)
  T.checkerr("expected m1 and m2 to have the same dtype, but got: c10::complex<float> != float",
    torch.mm, a, f:t())
end)

T.test("cat, stack, repeat and advanced indexing keep both parts (torch 1.13 reprs)", function()
  local z = torch.complex(torch.tensor{1.5, -2.25}, torch.tensor{0.5, 3.75})
  T.eq(tostring(torch.cat({z, z:cdouble()})), "tensor([ 1.5000+0.5000j, -2.2500+3.7500j,  1.5000+0.5000j, -2.2500+3.7500j],\n       dtype=torch.complex128)")
  T.eq(tostring(torch.cat({z:cdouble(), torch.tensor{7, 8}})), "tensor([ 1.5000+0.5000j, -2.2500+3.7500j,  7.0000+0.0000j,  8.0000+0.0000j],\n       dtype=torch.complex128)")
  T.eq(tostring(torch.cat({z:cdouble():view(2, 1), z:cdouble():view(2, 1)}, 1)),
    "tensor([[ 1.5000+0.5000j,  1.5000+0.5000j],\n        [-2.2500+3.7500j, -2.2500+3.7500j]], dtype=torch.complex128)")
  T.eq(tostring(z[torch.tensor{1, 0, 1}]), "tensor([-2.2500+3.7500j,  1.5000+0.5000j, -2.2500+3.7500j])")
  T.eq(tostring(z:cdouble()[torch.tensor{1, 0}]), "tensor([-2.2500+3.7500j,  1.5000+0.5000j], dtype=torch.complex128)")
  T.eq(tostring(torch.stack({z, z}, 1):t()), "tensor([[ 1.5000+0.5000j, -2.2500+3.7500j],\n        [ 1.5000+0.5000j, -2.2500+3.7500j]])")
  T.eq(tostring(z:view(2, 1)["repeat"](z:view(2, 1), 2, 2)), "tensor([[ 1.5000+0.5000j,  1.5000+0.5000j],\n" ..
    "        [-2.2500+3.7500j, -2.2500+3.7500j],\n        [ 1.5000+0.5000j,  1.5000+0.5000j],\n" ..
    "        [-2.2500+3.7500j, -2.2500+3.7500j]])")
end)

T.test("complex -> real copies warn as PyTorch does (UserWarning), once per site", function()
  fxdb.warnings({clear = true})
  local prev = fxdb.simplefilter("always")
  local r = a:to(torch.float32)
  T.eq(tostring(r), tostring(a.real))
  local w = fxdb.warnings({clear = true})
  T.eq(#w, 1)
  T.eq(w[1].category, "UserWarning")
  T.eq(w[1].message, "Casting complex values to real discards the imaginary part")
  T.truthy(w[1].location:find("test_complex.lua", 1, true), w[1].location)
  torch.zeros(2, 3):copy_(a)
  T.eq(#fxdb.warnings({clear = true}), 1, "copy_")
  local _ = a:to(torch.complex128) + a.real:float()
  T.eq(#fxdb.warnings({clear = true}), 0, "no warning without a complex -> real cast")
  fxdb.simplefilter("error")
  local e = T.checkerr("Casting complex values to real discards the imaginary part", function() return a:float() end)
  T.eq(e.kind, "warning")
  fxdb.simplefilter(prev)
end)

T.test("in-place ops, views written through, dtypes of the results", function()
  local z = a:clone()
  z:mul_(b)
  T.eq(tostring(z), GOLD.mul)
  z:add_(1):sub_(1)
  T.eq(tostring(z), GOLD.mul)
  z:div_(b)
  T.truthy(close(z, a), "div_ undoes mul_")
  z = a:clone()
  z.real:mul_(2)                     -- a view: the real parts double
  torch.view_as_real(z)[{":", ":", 1}]:zero_()
  T.eq(tostring(z), tostring(torch.complex(a.real * 2, torch.zeros(2, 3))))
  z:neg_()
  T.eq(tostring(z.real), tostring(a.real * -2))
  local fz = torch.zeros(3)
  T.checkerr("result type ComplexFloat can't be cast to the desired output type Float", function() fz:add_(b) end)
  T.checkerr("In-place abs is not supported for complex tensors.", function() a:clone():abs_() end)
  T.eq((a + f:double()).dtype, torch.complex128)
  T.eq((torch.ones(2, {dtype = torch.float64}) * torch.complex(torch.tensor(1.0), torch.tensor(0.0))).dtype,
    torch.complex128, "a complex 0-dim tensor lifts float64 to complex128")
  T.eq((torch.ones(2) * d[{0, 0}]).dtype, torch.complex64, "complex128 0-dim with float32: complex64")
  T.eq((i + d).dtype, torch.complex128)
  T.eq((a / 2).dtype, torch.complex64)
  T.eq(a:abs().dtype, torch.float32)
  T.eq(d.real.dtype, torch.float64)
  T.eq(torch.real(f), f, "real of a real tensor is the tensor")
  T.eq(f:conj(), f, "conj of a real tensor is the tensor")
  T.eq(a:cdouble().dtype, torch.complex128)
  T.eq(d:cfloat().dtype, torch.complex64)
  T.truthy(a:is_complex() and torch.is_complex(d) and not torch.is_complex(f))
  T.truthy(torch.complex64.is_complex and not torch.complex64.is_floating_point)
  T.eq(torch.complex64.itemsize, 8)
  T.eq(torch.cdouble, torch.complex128)
  T.eq(tostring(torch.cfloat), "torch.complex64")
  T.eq(a:type(), "torch.ComplexFloatTensor")
end)

T.test("item and tolist give {re, im}; torch.tensor of complex scalars is complex64", function()
  local v = b[1]:item()
  T.eq(type(v), "table")
  T.eq(v[1], -0.5)
  T.eq(v[2], 0.25)
  local l = b:tolist()
  T.eq(#l, 3)
  T.eq(l[3][2], 2.0)
  local t = torch.tensor{b[0], b[2], 7}
  T.eq(t.dtype, torch.complex64)
  T.eq(tostring(t), "tensor([2.-1.j, 1.+2.j, 7.+0.j])")
  T.eq(tostring(torch.tensor({1, 2}, torch.complex128)), "tensor([1.+0.j, 2.+0.j], dtype=torch.complex128)")
end)

T.test("PyTorch's messages for the complex ops", function()
  T.checkerr("Tensor must have a last dimension of size 2", torch.view_as_complex, torch.zeros(3, 3))
  T.checkerr("Tensor must have a last dimension with stride 1", torch.view_as_complex, torch.zeros(2, 3):t())
  T.checkerr("Tensor must have a storage_offset divisible by 2", torch.view_as_complex, torch.zeros(3, 4)[{":", "1:3"}])
  T.checkerr("Tensor must have a stride divisible by 2 for all but last dimension", torch.view_as_complex,
    torch.zeros(3, 3)[{":", ":2"}])
  T.checkerr("view_as_real is only supported for complex tensors", torch.view_as_real, torch.zeros(3))
  T.checkerr("view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: Long",
    torch.view_as_complex, torch.zeros({3, 2}, torch.int64))
  T.checkerr("Input tensor must have one or more dimensions", torch.view_as_complex, torch.tensor(1.0))
  T.checkerr("fxdb has no complex32", torch.view_as_complex, torch.zeros({3, 2}, torch.float16))
  T.checkerr("Expected object of scalar type Float but got scalar type Double for second argument",
    torch.polar, torch.zeros(2), torch.zeros({2}, torch.float64))
  T.checkerr("Expected both inputs to be Half, Float or Double tensors but got Long and Float",
    torch.complex, torch.zeros({2}, torch.int64), torch.zeros(2))
  T.checkerr("imag is not implemented for tensors with non-complex dtypes.", function() return f.imag end)
  -- ops without a complex kernel refuse, naming the op (never a wrong number)
  T.checkerr([["erf" not implemented for 'ComplexFloat']], function() return a:erf() end)
  T.checkerr([["relu" not implemented for 'ComplexDouble']], function() return d:relu() end)
  T.checkerr([["amax" not implemented for 'ComplexFloat']], function() return a:amax() end)
  -- ordering comparisons: PyTorch's CPU kernels refuse complex operands
  T.checkerr([["lt_cpu" not implemented for 'ComplexFloat']], function() return a:lt(b) end)
  T.checkerr([["ge_cpu" not implemented for 'ComplexDouble']], function() return d:ge(0) end)
  T.checkerr("not implemented for 'ComplexFloat'", function() return torch.cat({f, a}) + a:erf() end)
end)

-- A complex buffer written through view_as_real and .real in forward.
local M = nn.Module:extend("ComplexBuf")
function M:init() self:register_buffer("buf", torch.complex(torch.ones(2, 3), torch.zeros(2, 3))) end
function M:forward(x)
  torch.view_as_real(self.buf)[{":", ":", 1}]:add_(x)
  self.buf.real:mul_(2)
  return self.buf * b
end

P.modes(function(strict, mode)
  T.test("writes through view_as_real / .real of a complex buffer: BUFFER_MUTATION, " .. mode, function()
    local m = M()
    local ep = torch.export.export(m, {torch.ones(2, 3)}, {strict = strict})
    local seq = {}
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "call_function" then seq[#seq + 1] = n.target:gsub("^aten%.", "") end
    end
    T.eq(table.concat(seq, " "), "view_as_real.default select.int add.Tensor select_scatter.default " ..
      "view_as_complex.default view_as_real.default select.int mul.Tensor select_scatter.default " ..
      "view_as_complex.default mul.Tensor")
    local _, outs = P.sig(ep)
    T.eq(outs, "view_as_complex_1: BUFFER_MUTATION target='buf'\nmul_1: USER_OUTPUT")
    P.numbers(m, ep, {torch.randn(2, 3)})
    local gm = ep:module()
    local e = M()
    for step = 1, 3 do
      local x = torch.full({2, 3}, step * 0.5)
      T.truthy(P.same(gm(x), e(x)), "step " .. step)
      T.truthy(P.same(gm.buf, e.buf), "buffer after step " .. step)
    end
  end)
end)

T.test("dynamic shapes: complex / real / imag / conj / abs keep the symbolic dim", function()
  local D = nn.Module:extend("ComplexDyn")
  function D:forward(x)
    local z = torch.complex(x, x * 2)
    return z.real + z.imag, z:conj():abs()
  end
  local b = torch.export.Dim("b", {min = 2, max = 10})
  local ep = torch.export.export(D(), {torch.ones(4, 3)}, {dynamic_shapes = {x = {[0] = b}}})
  local g = tostring(ep)
  T.truthy(g:find('complex_1: "c64[s0, 3]" = torch.ops.aten.complex.default(x, mul)', 1, true), g)
  T.truthy(g:find('select_1: "f32[s0, 3]" = torch.ops.aten.select.int(view_as_real_1, 2, 1)', 1, true), g)
  T.truthy(g:find('abs_1: "f32[s0, 3]" = torch.ops.aten.abs.default(conj_physical)', 1, true), g)
  for _, n in ipairs{2, 7} do
    local x = torch.randn(n, 3)
    local r = fxdb.run(ep, {x})
    T.truthy(P.same(r.outputs[1], x * 3), "real + imag, " .. n .. " rows")
    T.truthy(close(r.outputs[2], x:abs() * math.sqrt(5)), "abs, " .. n .. " rows")
  end
end)

T.test("safetensors: complex64 as C64 round trip; complex128 refused", function()
  local path = os.tmpname()
  torch.save_safetensors({z = a, w = f}, path)
  local t = torch.load_safetensors(path)
  T.eq(t.z.dtype, torch.complex64)
  T.truthy(P.same(t.z, a))
  local fh = io.open(path, "rb")
  local head = fh:read(200)
  fh:close()
  T.truthy(head:find('"dtype":"C64"', 1, true), head)
  T.checkerr("save_safetensors: tensor 'd' has dtype complex128", torch.save_safetensors, {d = d}, path)
  os.remove(path)
end)

T.test("PT2 archive: complex buffer and constants keep their dtypes and values", function()
  local Phase = nn.Module:extend("Phase")
  function Phase:init()
    self:register_buffer("phase", torch.complex(torch.ones(3), torch.zeros(3)))
    self.step = torch.polar(torch.ones(3), torch.tensor{0.1, 0.2, 0.3})
    self.off = torch.zeros({2}, torch.complex128)
  end
  function Phase:forward(x)
    self.phase:mul_(self.step)
    return torch.view_as_real(self.phase) * x, self.off + 1
  end
  local m = Phase()
  local ep = torch.export.export(m, {torch.ones(3, 2)})
  local path = os.tmpname() .. ".pt2"
  torch.export.save(ep, path)
  local ep2 = torch.export.load(path)
  os.remove(path)
  T.eq(tostring(ep2), tostring(ep))
  T.eq(ep2.state_dict.phase.dtype, torch.complex64)
  T.eq(ep2.constants.off.dtype, torch.complex128)
  T.truthy(P.same(ep2.constants.step, m.step))
  local r1, r2 = fxdb.run(ep, {torch.ones(3, 2)}), fxdb.run(ep2, {torch.ones(3, 2)})
  T.truthy(P.same(r1.outputs[1], r2.outputs[1]))
  T.truthy(P.same(r1.outputs[2], r2.outputs[2]))
end)

T.done()
