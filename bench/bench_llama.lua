-- bench/bench_llama.lua — decode speed and export cost of examples/llama.lua (a table, not a test).
-- Layer: bench. Run by bench/run.sh with OMP_NUM_THREADS / OPENBLAS_NUM_THREADS set:
--   fxdb bench/bench_llama.lua decode CONFIG THREADS MEMCPY_TOOL [TOKENS]
--       one row: eager and exported decode tokens/s over TOKENS positions (each position its own
--       exported program, run through ep:module{share_state, reinplace} as generate.lua does; the
--       export itself is not timed here; tokens/s = 1 / the median step time, since the machine
--       is shared), the same program rerun at one position (steady state, best of 5 batches),
--       and the machine's limit = memcpy bandwidth of a weight-sized buffer on THREADS threads
--       (MEMCPY_TOOL --memcpy BYTES THREADS) / weight bytes per token.
--   fxdb bench/bench_llama.lua export CONFIG [meta]
--       one row: time to export one decode step (trace = running forward on tracing tensors,
--       functionalize = building the program from the raw graph), node count, peak RSS.
--   fxdb bench/bench_llama.lua header decode|export
local llama = dofile("examples/llama.lua")
local now = torch._perf_counter
local mode = arg[1]

if mode == "header" then
  if arg[2] == "decode" then
    print(string.format("%-12s %3s %10s %10s %10s %10s %10s %8s", "config", "thr", "eager",
                        "exported", "exp.steady", "limit", "GB/s w.", "ratio"))
    print(string.format("%-12s %3s %10s %10s %10s %10s %10s %8s", "", "", "tok/s", "tok/s",
                        "tok/s", "tok/s", "exported", "exp/lim"))
  else
    print(string.format("%-12s %6s %10s %14s %10s %8s %12s", "config", "device", "trace ms",
                        "functionalize", "total ms", "nodes", "peak RSS MiB"))
  end
  return
end

local missing = llama.missing_ops()
if #missing > 0 then
  print("bench_llama: this build lacks " .. table.concat(missing, ", "))
  return
end

local name = arg[2]
local cfg = llama.config(name)

-- The median of a list of numbers (robust to the preemptions of a shared machine).
local function median(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  local n = #c
  return n % 2 == 1 and c[(n + 1) // 2] or (c[n // 2] + c[n // 2 + 1]) / 2
end

if mode == "decode" then
  local label, tool, ntok = arg[3], arg[4], tonumber(arg[5] or 64)
  local threads = tonumber((label:gsub("%D", "")))
  local eager = llama.build(cfg)
  local model = llama.share_weights(eager)
  local wbytes = llama.weight_bytes(eager)
  local t_eager, t_exp = {}, {}
  local tok = torch.tensor({{1}})
  local steady_gm, steady_pos
  for pos = 0, ntok - 1 do
    local ep = torch.export.export(model, {tok, pos})
    local gm = ep:module({share_state = true, reinplace = true})
    local a = now()
    local logits = gm(tok, pos)
    local b = now()
    eager(tok, pos)
    local c = now()
    t_exp[#t_exp + 1], t_eager[#t_eager + 1] = b - a, c - b
    if pos == ntok // 2 then steady_gm, steady_pos = gm, pos end
    tok = torch.tensor({{llama.argmax(logits[{0, 0}])}})
  end
  -- steady state: the same program again and again (its plan made once); the best of 5 batches
  local reps = math.max(4, ntok // 8)
  steady_gm(tok, steady_pos)
  local t_steady = math.huge
  for _ = 1, 5 do
    local a = now()
    for _ = 1, reps do steady_gm(tok, steady_pos) end
    t_steady = math.min(t_steady, (now() - a) / reps)
  end
  local p = io.popen(string.format("%s --memcpy %d %d", tool, wbytes, threads))
  local gbs = tonumber(p:read("l"))
  p:close()
  local limit = gbs * 1e9 / wbytes
  local exp_tps = 1 / median(t_exp)
  print(string.format("%-12s %3s %10.1f %10.1f %10.1f %10.1f %10.2f %7.0f%%", name, label,
                      1 / median(t_eager), exp_tps, 1 / t_steady, limit, wbytes * exp_tps / 1e9,
                      100 * exp_tps / limit))
elseif mode == "export" then
  local meta = arg[3] == "meta"
  local m = llama.build(cfg, {device = meta and "meta" or nil})
  -- time the tracer's build (functionalization + lifting) apart from the trace itself
  local methods = debug.getregistry()["fxdb.Tracer"].__index
  local build, t_build = methods.build, 0
  methods.build = function(...)
    local a = now()
    local r = build(...)
    t_build = t_build + (now() - a)
    return r
  end
  local tok = torch.zeros({1, 1}, torch.int64)
  torch.export.export(m, {tok, 0}) -- warm up
  local reps, total, nodes = 3, 0, 0
  t_build = 0
  for _ = 1, reps do
    local a = now()
    local ep = torch.export.export(m, {tok, 1})
    total = total + (now() - a)
    nodes = #ep.graph.nodes
  end
  methods.build = build
  local rss = llama.peak_rss() or 0
  print(string.format("%-12s %6s %10.1f %14.1f %10.1f %8d %12.1f", name, meta and "meta" or "cpu",
                      1e3 * (total - t_build) / reps, 1e3 * t_build / reps, 1e3 * total / reps,
                      nodes, rss / 2 ^ 20))
else
  error("usage: fxdb bench/bench_llama.lua decode|export|header ...", 0)
end
