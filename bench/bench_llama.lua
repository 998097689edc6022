-- bench/bench_llama.lua — decode speed and export cost of examples/llama.lua (a table, not a test).
-- Layer: bench. Run by bench/run.sh:
--   fxdb bench/bench_llama.lua decode CONFIG LABEL MEMCPY_TOOL [TOKENS]
--       one row: eager and exported decode tokens/s over TOKENS positions (each position its own
--       exported program, run through ep:module{share_state, reinplace} as generate.lua does; the
--       export itself is not timed here; tokens/s = 1 / the median step time, since the machine
--       is shared), the same program rerun at one position (steady state, median of 5
--       batches), the machine's limit = memcpy bandwidth of a weight-sized buffer
--       (MEMCPY_TOOL --memcpy BYTES THREADS) / weight bytes per token, and the ratio of the
--       exported rate to llama2.c's run.c (the anchor). LABEL names the thread setting run.sh
--       chose ("1", "2", "auto", "auto+hog" ...): its digits are the threads for the memcpy
--       limit, else torch.get_num_threads().
--   fxdb bench/bench_llama.lua export CONFIG [meta] [LAYERS] [TORCH_SECONDS]
--       one row: time to export one decode step (trace = running forward on tracing tensors,
--       functionalize = building the program from the raw graph; medians of 5 after a
--       warm-up; wall clock, and the process's CPU time, which a shared machine disturbs far
--       less), node count, µs per node, peak RSS, and when TORCH_SECONDS is given (the CPU time
--       of torch 1.13's make_fx(functionalize(f)) of the same architecture,
--       bench/bench_llama_torch.py) the ratio torch / fxdb of CPU times. LAYERS overrides
--       n_layers (for the scaling rows).
--   fxdb bench/bench_llama.lua header decode|export
--
-- The llama2.c anchor: karpathy/llama2.c's run.c (-Ofast -march=native, 1 thread) decoding the
-- same shapes on this machine kind, as quoted in issue 14 (its source cannot be fetched here, so
-- the bench cannot build it): 165 tok/s for stories15M, 18.8 for stories110M.
local LLAMA2C = {stories15M = 165, stories110M = 18.8}
local llama = dofile("examples/llama.lua")
local now = torch._perf_counter
local mode = arg[1]

if mode == "header" then
  if arg[2] == "decode" then
    print(string.format("%-12s %-9s %8s %9s %10s %8s %9s %9s", "config", "threads", "eager",
                        "exported", "exp.steady", "limit", "llama2.c", "exp/llama2.c"))
    print(string.format("%-12s %-9s %8s %9s %10s %8s %9s %9s", "", "", "tok/s", "tok/s",
                        "tok/s", "tok/s", "tok/s", ""))
  else
    print(string.format("%-12s %6s %6s %9s %9s %9s %8s %6s %8s %8s %8s %9s %9s", "config",
                        "device", "layers", "trace ms", "funct. ms", "total ms", "cpu ms", "nodes",
                        "us/node", "cpu us/n", "RSS MiB", "torch cpu s", "torch/fxdb"))
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
  local threads = tonumber((label:gsub("%D", ""))) or torch.get_num_threads()
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
  -- steady state: the same program again and again (its plan made once); median of 5 batches
  local reps = math.max(4, ntok // 8)
  steady_gm(tok, steady_pos)
  local batches = {}
  for i = 1, 5 do
    local a = now()
    for _ = 1, reps do steady_gm(tok, steady_pos) end
    batches[i] = (now() - a) / reps
  end
  local p = io.popen(string.format("%s --memcpy %d %d", tool, wbytes, threads))
  local gbs = tonumber(p:read("l"))
  p:close()
  local limit = gbs * 1e9 / wbytes
  local exp_tps = 1 / median(t_exp)
  local anchor = LLAMA2C[name]
  print(string.format("%-12s %-9s %8.1f %9.1f %10.1f %8.1f %9s %9s", name, label,
                      1 / median(t_eager), exp_tps, 1 / median(batches), limit,
                      anchor and string.format("%.1f", anchor) or "-",
                      anchor and string.format("%.2fx", exp_tps / anchor) or "-"))
elseif mode == "export" then
  local meta = arg[3] == "meta"
  if tonumber(arg[4]) then cfg.n_layers = tonumber(arg[4]) end
  local torch_s = tonumber(arg[5])
  local m = llama.build(cfg, {device = meta and "meta" or nil})
  -- time the tracer's build (functionalization + lifting) apart from the trace itself
  local methods = debug.getregistry()["fxdb.Tracer"].__index
  local build, t_build = methods.build, 0
  methods.build = function(...)
    local a = now()
    local r = build(...)
    t_build = now() - a
    return r
  end
  local tok = torch.zeros({1, 1}, torch.int64)
  torch.export.export(m, {tok, 0}) -- warm up
  local totals, builds, cpus, nodes = {}, {}, {}, 0
  for i = 1, 5 do
    local a, ca = now(), os.clock()
    local ep = torch.export.export(m, {tok, 1})
    totals[i], builds[i], cpus[i] = now() - a, t_build, os.clock() - ca
    nodes = #ep.graph.nodes
  end
  methods.build = build
  local rss = llama.peak_rss() or 0
  local total, cpu = median(totals), median(cpus)
  print(string.format("%-12s %6s %6d %9.1f %9.1f %9.1f %8.1f %6d %8.2f %8.2f %8.1f %9s %9s", name,
                      meta and "meta" or "cpu", cfg.n_layers, 1e3 * (total - median(builds)),
                      1e3 * median(builds), 1e3 * total, 1e3 * cpu, nodes, 1e6 * total / nodes,
                      1e6 * cpu / nodes, rss / 2 ^ 20,
                      torch_s and string.format("%.3f", torch_s) or "-",
                      torch_s and string.format("%.1fx", torch_s / cpu) or "-"))
else
  error("usage: fxdb bench/bench_llama.lua decode|export|header ...", 0)
end
