-- bench/bench_llama.lua — decode speed and export cost of examples/llama.lua (a table, not a test).
-- Layer: bench. Run by bench/run.sh:
--   fxdb bench/bench_llama.lua decode CONFIG LABEL MEMCPY_TOOL [TOKENS [ROUNDS [CLOCK]]]
--       one row: decode tokens/s over TOKENS positions of eager, of the per-position export
--       (each position its own exported program run through ep:module{share_state, reinplace};
--       the export itself is not timed), and of the single program (examples/llama.lua's
--       llama.export: one export, input_pos a tensor, one module call per token, as
--       generate.lua decodes); the three are called in turn at each position (order rotated),
--       tokens/s = 1 / the median step time of a round (the machine is shared), and with ROUNDS
--       > 1 (default 1) the median over that many rounds, each from position 0 with fresh
--       caches. CLOCK "cpu" times each call with the process's CPU time (os.clock: at 1 thread,
--       what a loaded machine disturbs least) instead of the wall clock. cpu/wall is the
--       single program's CPU time over its wall time (all threads; ~1 when no thread spins
--       idle beside the one working, up to the thread count when all compute). Then the
--       per-position program rerun at one position (steady state, median of 5 batches), the
--       machine's limit = read bandwidth of a weight-sized buffer (MEMCPY_TOOL --read BYTES
--       THREADS: a decode step streams every weight once) / weight bytes per token, llama2.c's rate (LLAMA2C below: run once per round,
--       after fxdb's; its CPU-time rate with CLOCK "cpu"; the median) and the ratio to it of the
--       single program's rate counted as llama2.c counts (steps after the first over their
--       total time, not the median step; the median over rounds). LABEL names the thread setting run.sh chose ("1",
--       "2", "auto", "auto+hog" ...): its digits are the threads for the bandwidth limit, else
--       torch.get_num_threads().
--   fxdb bench/bench_llama.lua side CONFIG LABEL [TOKENS [ROUNDS]]
--       one row: the single program alone and llama2.c (LLAMA2C, below) side by side, taking
--       turns: ROUNDS (default 5) rounds of one fxdb decode of TOKENS (default 64) positions from
--       position 0, then one llama2.c run of as many steps; both timed as run.c times (tokens
--       after the first over their total time), by the wall clock and by CPU time; medians over
--       the rounds, ratios fxdb / llama2.c of the medians, fxdb's CPU time over wall time.
--   fxdb bench/bench_llama.lua icount CONFIG KIND TOKENS
--       for valgrind --tool=callgrind: a prefill of 3 tokens at position 0, then TOKENS decode
--       calls, of one KIND — "single" and "perpos" call the unlifted module (callgrind's
--       --toggle-collect=gm_call --dump-before=gm_call count each module call apart, not the
--       per-position exports), "eager" calls the model inside xpcall (the same with
--       luaB_xpcall). bench/run.sh takes the median over the decode calls after the first two
--       (the single program plans its size set on the second one).
--   fxdb bench/bench_llama.lua export CONFIG [meta] [LAYERS] [TORCH_SECONDS]
--       one row: time to export one decode step (trace = running forward on tracing tensors,
--       functionalize = building the program from the raw graph; medians of 5 after a
--       warm-up; wall clock, and the process's CPU time, which a shared machine disturbs far
--       less), node count, µs per node, peak RSS, and when TORCH_SECONDS is given (the CPU time
--       of torch 1.13's make_fx(functionalize(f)) of the same architecture,
--       bench/bench_llama_torch.py) the ratio torch / fxdb of CPU times. LAYERS overrides
--       n_layers (for the scaling rows).
--   fxdb bench/bench_llama.lua header decode|side|export
--
-- The llama2.c anchor: karpathy/llama2.c's run.c (-Ofast -march=native, 1 thread) decoding the
-- same shapes. Its code is not part of fxdb: build it (or a copy of its forward pass on random
-- weights of the stories15M / stories110M shapes) outside the repository and name it in the
-- environment, LLAMA2C=/path/to/program; it is run as `$LLAMA2C CONFIG STEPS` (CONFIG is
-- stories15M or stories110M) and must print "<X> tok/s" (timed after the first step, as run.c
-- does; "<X> tok/s wall, <Y> tok/s cpu" gives both clocks) or run.c's "achieved tok/s: <X>". The
-- decode rows then run it once per round, between fxdb's rounds (interleaved), and the ratio is
-- taken from the same run. Without LLAMA2C the column shows the figures issue 14 quotes for this
-- machine kind (165 tok/s for stories15M, 18.8 for stories110M), marked with a '*'.
local LLAMA2C = {stories15M = 165, stories110M = 18.8}

-- One run of the user's llama2.c program: tokens/s by the wall clock and by CPU time (the same
-- when it prints one figure), or nil when LLAMA2C is unset or its output has no rate.
local function llama2c_rate(config, steps)
  local prog = os.getenv("LLAMA2C")
  if not prog or prog == "" then return nil end
  local p = io.popen(string.format("%s %s %d 2>&1", prog, config, steps))
  local out = p:read("a")
  p:close()
  local wall = tonumber(out:match("([%d.]+) tok/s wall") or out:match("([%d.]+) tok/s") or
                        out:match("tok/s:%s*([%d.]+)"))
  local cpu = tonumber(out:match("([%d.]+) tok/s cpu")) or wall
  return wall, cpu
end
local llama = dofile("examples/llama.lua")
local now = torch._perf_counter
local mode = arg[1]

if mode == "header" then
  if arg[2] == "decode" then
    print(string.format("%-12s %-9s %8s %9s %9s %8s %10s %8s %9s %10s", "config", "threads",
                        "eager", "per-pos", "single", "cpu/wall", "pp.steady", "limit", "llama2.c",
                        "single/l2c"))
    print(string.format("%-12s %-9s %8s %9s %9s %8s %10s %8s %9s %10s", "", "", "tok/s", "tok/s",
                        "tok/s", "single", "tok/s", "tok/s", "tok/s", ""))
  elseif arg[2] == "side" then
    print(string.format("%-12s %-9s %9s %9s %8s %9s %9s %9s %9s", "config", "threads",
                        "fxdb", "fxdb", "cpu/wall", "llama2.c", "llama2.c", "ratio", "ratio"))
    print(string.format("%-12s %-9s %9s %9s %8s %9s %9s %9s %9s", "", "", "wall", "cpu", "fxdb",
                        "wall", "cpu", "wall", "cpu"))
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
  local label, tool = arg[3], arg[4]
  local ntok, rounds = tonumber(arg[5] or 64), tonumber(arg[6] or 1)
  local clock = arg[7] == "cpu" and os.clock or now
  local threads = tonumber((label:gsub("%D", ""))) or torch.get_num_threads()
  local eager = llama.build(cfg)
  local perpos = llama.share_weights(eager)   -- exported at each position
  local single = llama.share_weights(eager)   -- exported once
  local gm1 = llama.export(single):module({share_state = true, reinplace = true})
  local wbytes = llama.weight_bytes(eager)
  local rates = {eager = {}, perpos = {}, single = {}}
  local l2c, cpu_wall, single_mean = {}, {}, {}
  local steady_gm, steady_pos
  for round = 1, rounds do
    eager:reset_cache()
    perpos:reset_cache()
    single:reset_cache()
    local t = {eager = {}, perpos = {}, single = {}}
    local single_wall, single_cpu = 0, 0
    local tok = 1
    for pos = 0, ntok - 1 do
      local x, ip = torch.tensor({{tok}}), torch.tensor({pos})
      local gm = torch.export.export(perpos, {x, pos}):module({share_state = true, reinplace = true})
      local calls = {
        eager = function() return eager(x, ip) end,
        perpos = function() return gm(x, pos) end,
        single = function() return gm1(x, ip) end,
      }
      local order = ({{"eager", "perpos", "single"}, {"perpos", "single", "eager"},
                      {"single", "eager", "perpos"}})[pos % 3 + 1]
      local logits
      for _, k in ipairs(order) do
        local a, w, c = clock(), now(), os.clock()
        local l = calls[k]()
        t[k][#t[k] + 1] = clock() - a
        if k == "single" then
          logits = l
          single_wall, single_cpu = single_wall + now() - w, single_cpu + os.clock() - c
        end
      end
      if round == 1 and pos == ntok // 2 then steady_gm, steady_pos = gm, pos end
      tok = llama.argmax(logits[{0, 0}])
    end
    for k, v in pairs(t) do rates[k][round] = 1 / median(v) end
    cpu_wall[round] = single_cpu / single_wall
    local sum = 0 -- llama2.c's own figure: steps after the first over their total time
    for i = 2, #t.single do sum = sum + t.single[i] end
    single_mean[round] = (#t.single - 1) / sum
    local wall, cpu = llama2c_rate(name, ntok) -- interleaved with fxdb's rounds
    l2c[round] = clock == os.clock and cpu or wall
  end
  -- steady state: one per-position program again and again (its plan made once); median of 5
  local reps = math.max(4, ntok // 8)
  local tok = torch.tensor({{1}})
  steady_gm(tok, steady_pos)
  local batches = {}
  for i = 1, 5 do
    local a = clock()
    for _ = 1, reps do steady_gm(tok, steady_pos) end
    batches[i] = (clock() - a) / reps
  end
  local p = io.popen(string.format("%s --read %d %d", tool, wbytes, threads))
  local gbs = tonumber(p:read("l"))
  p:close()
  local limit = gbs * 1e9 / wbytes
  local single_tps = median(rates.single)
  local anchor, mark = LLAMA2C[name], "*"
  if #l2c > 0 then anchor, mark = median(l2c), "" end
  print(string.format("%-12s %-9s %8.1f %9.1f %9.1f %8.2f %10.1f %8.1f %9s %10s", name, label,
                      median(rates.eager), median(rates.perpos), single_tps, median(cpu_wall),
                      1 / median(batches), limit,
                      anchor and string.format("%.1f%s", anchor, mark) or "-",
                      anchor and string.format("%.2fx", median(single_mean) / anchor) or "-"))
elseif mode == "side" then
  -- the single program alone beside llama2.c, alternating: per round one decode of TOKENS
  -- positions from position 0 with fresh caches, timed as run.c times (after the first step)
  local label, ntok, rounds = arg[3], tonumber(arg[4] or 64), tonumber(arg[5] or 5)
  local m = llama.build(cfg)
  local gm = llama.export(m):module({share_state = true, reinplace = true})
  local fw, fc, lw, lc, cw = {}, {}, {}, {}, {}
  for round = 1, rounds do
    m:reset_cache()
    local tok, w0, c0 = 1, 0, 0
    for pos = 0, ntok - 1 do
      if pos == 1 then w0, c0 = now(), os.clock() end
      tok = llama.argmax(gm(torch.tensor({{tok}}), torch.tensor({pos}))[{0, 0}])
    end
    local w, c = now() - w0, os.clock() - c0
    fw[round], fc[round], cw[round] = (ntok - 1) / w, (ntok - 1) / c, c / w
    lw[round], lc[round] = llama2c_rate(name, ntok)
  end
  local has = #lw > 0
  local function f(t) return has and string.format("%.1f", median(t)) or "-" end
  local function r(a, b) return has and string.format("%.2fx", median(a) / median(b)) or "-" end
  print(string.format("%-12s %-9s %9.1f %9.1f %8.2f %9s %9s %9s %9s", name, label, median(fw),
                      median(fc), median(cw), f(lw), f(lc), r(fw, lw), r(fc, lc)))
elseif mode == "icount" then
  local kind, ntok = arg[3], tonumber(arg[4] or 8)
  local m = llama.build(cfg)
  -- the same calls for every kind: a prefill of 3 tokens at position 0, then ntok single tokens
  local calls = {{torch.tensor({{1, 2, 3}}), 0}}
  for pos = 3, 3 + ntok - 1 do calls[#calls + 1] = {torch.tensor({{5}}), pos} end
  if kind == "single" then
    local gm = llama.export(m):module({share_state = true, reinplace = true})
    for _, c in ipairs(calls) do gm(c[1], torch.tensor({c[2]})) end
  elseif kind == "perpos" then
    for _, c in ipairs(calls) do
      torch.export.export(m, c):module({share_state = true, reinplace = true})(c[1], c[2])
    end
  elseif kind == "eager" then
    for _, c in ipairs(calls) do assert(xpcall(m, debug.traceback, c[1], torch.tensor({c[2]}))) end
  else
    error("icount: KIND is single, perpos or eager", 0)
  end
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
  error("usage: fxdb bench/bench_llama.lua decode|icount|export|header ...", 0)
end
