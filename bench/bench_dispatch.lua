-- bench/bench_dispatch.lua — per-op dispatch overhead from Lua on 1-element tensors (a table,
-- not a test). Layer: bench. Run by bench/run.sh: fxdb bench/bench_dispatch.lua [N [ANCHORS]]
-- Each row times N calls of one spelling of an add of two 1-element float32 tensors (the Lua
-- operator, the method, torch.add, torch.ops.aten.add.Tensor) and of a few other ops, eager:
-- µs per op = the median of 7 timed loops / N (after one untimed loop of every row), in process
-- CPU time (os.clock: on a shared machine wall time counts the time slices other processes take,
-- which made every row several times slower at load 10 on 2 CPUs, torch's as much as fxdb's).
-- The C-side number (fx_dispatch) is in bench_kernels' last table; the difference is the binding
-- (overload resolution, argument conversion, the userdata of the result). ANCHORS is a file of
-- "name<TAB>µs" lines (torch 1.13's figures for the same rows, bench/bench_dispatch_torch.py,
-- measured by run.sh just before): a torch column and the ratio fxdb / torch are added. Target:
-- torch.add and x:add_ at most 1.0 µs.
local now = os.clock
local N = tonumber(arg and arg[1]) or 200000
local anchor = {}
if arg and arg[2] then
  local f = io.open(arg[2])
  if f then
    for line in f:lines() do
      local name, us = line:match("^(.-)\t([%d.]+)$")
      if name then anchor[name] = tonumber(us) end
    end
    f:close()
  end
end
local x, y = torch.randn(1), torch.randn(1)

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local rows = {}
local function bench(name, f) rows[#rows + 1] = {name, f} end

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

-- One untimed loop of every row first: the process's heaps grow to their steady size (first-touch
-- page faults count as CPU time), which otherwise lands on whichever row runs first.
for _, r in ipairs(rows) do r[2]() end

print(string.format("Dispatch overhead from Lua (%d calls per loop), µs per op", N))
print(string.format("%-34s %8s %10s %8s", "call", "fxdb", "torch1.13", "fxdb/torch"))
for _, r in ipairs(rows) do
  local name, f = r[1], r[2]
  f() -- warm
  local runs = {}
  for k = 1, 7 do
    local t0 = now()
    f()
    runs[k] = (now() - t0) / N * 1e6
  end
  local m, a = median(runs), anchor[name]
  print(string.format("%-34s %8.3f %10s %8s", name, m, a and string.format("%.3f", a) or "-",
                      a and string.format("%.2f", m / a) or "-"))
end
