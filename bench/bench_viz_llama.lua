-- bench/bench_viz_llama.lua — how long fxdb.render takes on the Llama example (examples/llama.lua,
-- llama2_7b shapes on the meta device) at 2, 8, 16 and 32 layers and --depth 0, 1, 2 and full,
-- and the size and time of the interactive HTML page at 32 layers. Wall-clock seconds
-- (torch._perf_counter: the layout runs in a child process), median of REPEAT runs.
-- Usage: fxdb bench/bench_viz_llama.lua [REPEAT [LAYERS...]]    defaults: 5, 2 8 16 32
local llama = dofile("examples/llama.lua")
local repeat_n = tonumber(arg[1] or "5")
local layer_list = {}
for i = 2, #arg do layer_list[#layer_list + 1] = tonumber(arg[i]) end
if #layer_list == 0 then layer_list = {2, 8, 16, 32} end
local dir = os.getenv("TMPDIR") or "/tmp"
local base = string.format("%s/fxdb-bench-viz-%d", dir, math.random(1, 1e9))

local function median(xs)
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
end

local function timed(ep, file, opts)
  local xs = {}
  for _ = 1, repeat_n do
    local t0 = torch._perf_counter()
    fxdb.render(ep, file, opts)
    xs[#xs + 1] = torch._perf_counter() - t0
  end
  return median(xs)
end

local function size_of(file)
  local f = assert(io.open(file, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end

local depths = {{"0", 0}, {"1", 1}, {"2", 2}, {"full", nil}}
print(string.format("render to SVG, median of %d (s); graph nodes = exported program's nodes", repeat_n))
io.write(string.format("%-7s %6s", "layers", "nodes"))
for _, d in ipairs(depths) do io.write(string.format(" %9s", "depth " .. d[1])) end
io.write("\n")
local ep32
for _, L in ipairs(layer_list) do
  local cfg = llama.config("llama2_7b")
  cfg.n_layers = L
  local ep = torch.export.export(llama.build(cfg, {device = "meta"}),
                                 {torch.zeros({1, 1}, torch.int64), 0})
  io.write(string.format("%-7d %6d", L, #ep.graph.nodes))
  for _, d in ipairs(depths) do
    local t = timed(ep, base .. ".svg", {depth = d[2], progress = false})
    io.write(string.format(" %9.3f", t))
    io.flush()
  end
  io.write("\n")
  if L == 32 then ep32 = ep end
end
os.remove(base .. ".svg")
if ep32 then
  local t = timed(ep32, base .. ".html", {progress = false})
  print(string.format("\nHTML viewer, 32 layers: %.3f s (median of %d), %.2f MB", t, repeat_n,
                      size_of(base .. ".html") / 1e6))
  os.remove(base .. ".html")
end
