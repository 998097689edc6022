-- bench/bench_dispatch.lua — per-op dispatch overhead from Lua on 1-element tensors (a table,
-- not a test). Layer: bench. Run by bench/run.sh: fxdb bench/bench_dispatch.lua [N]
-- Each row times N calls of one spelling of an add of two 1-element float32 tensors (the Lua
-- operator, the method, torch.add, torch.ops.aten.add.Tensor) and of a few other ops, eager:
-- µs per op = the median of 7 timed loops / N. The C-side number (fx_dispatch) is in
-- bench_kernels' last table; the difference is the binding (overload resolution, argument
-- conversion, the userdata of the result).
local now = torch._perf_counter
local N = tonumber(arg and arg[1]) or 200000
local x, y = torch.randn(1), torch.randn(1)

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function bench(name, f)
  f() -- warm
  local runs = {}
  for r = 1, 7 do
    local t0 = now()
    f()
    runs[r] = (now() - t0) / N * 1e6
  end
  print(string.format("%-34s %8.3f", name, median(runs)))
end

print(string.format("Dispatch overhead from Lua (%d calls per loop)    µs per op", N))
bench("x + y", function() local z for _ = 1, N do z = x + y end return z end)
bench("x:add(y)", function() local z for _ = 1, N do z = x:add(y) end return z end)
bench("torch.add(x, y)", function() local z for _ = 1, N do z = torch.add(x, y) end return z end)
local add_t = torch.ops.aten.add.Tensor
bench("torch.ops.aten.add.Tensor(x, y)", function() local z for _ = 1, N do z = add_t(x, y) end return z end)
bench("x * 2 (wrapped number)", function() local z for _ = 1, N do z = x * 2 end return z end)
bench("x:exp()", function() local z for _ = 1, N do z = x:exp() end return z end)
bench("x:sum()", function() local z for _ = 1, N do z = x:sum() end return z end)
bench("x:add_(y) (in place)", function() for _ = 1, N do x:add_(y) end end)
bench("empty loop (Lua only)", function() local z for _ = 1, N do z = x end return z end)
