-- examples/generate.lua — greedy decoding through the exported program, checked against eager.
-- Layer: examples (Lua only).
--   fxdb examples/generate.lua [--config stories15M] [--tokens 128] [--weights FILE.safetensors]
--                              [--prompt 1,2,3] [--seed N] [--no-check] [--no-reinplace] [--quiet]
--
-- Each step feeds one token at position pos. `pos` is a Lua integer, so torch.export specializes
-- on it: every position gets its own exported program (trace + functionalize), unlifted with
-- ep:module() into a stateful module. The modules share the weights and the KV caches of one
-- model (`share_state`): each step's cache write (slice_scatter + copy_ back, or with the
-- reinplace pass a copy_ into the cache slice) lands in the same cache tensors, so the exported
-- path carries its own context from step to step. A second model — the eager reference, with the
-- same weights and its own caches — runs the Lua forward; each step's logits must match.
-- Prints a progress line while it runs and, at the end, tokens/s of the exported decode (module
-- calls only), of eager decoding, and the export time per step.

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "")
local llama = dofile(here .. "llama.lua")

local function parse(argv)
  local o = {config = "stories15M", tokens = 128, check = true, reinplace = true, seed = 0}
  local i = 1
  while argv and argv[i] do
    local a, v = argv[i], argv[i + 1]
    if a == "--config" then o.config = v; i = i + 1
    elseif a == "--tokens" then o.tokens = math.tointeger(tonumber(v)) or error("--tokens needs an integer", 0); i = i + 1
    elseif a == "--weights" then o.weights = v; i = i + 1
    elseif a == "--prompt" then
      o.prompt = {}
      for t in v:gmatch("%d+") do o.prompt[#o.prompt + 1] = math.tointeger(tonumber(t)) end
      i = i + 1
    elseif a == "--seed" then o.seed = math.tointeger(tonumber(v)); i = i + 1
    elseif a == "--no-check" then o.check = false
    elseif a == "--no-reinplace" then o.reinplace = false
    elseif a == "--quiet" then o.quiet = true
    elseif a == "--help" or a == "-h" then o.help = true
    else error("unknown argument " .. a .. " (try --help)", 0) end
    i = i + 1
  end
  return o
end

local o = parse(arg)
if o.help then
  print("usage: fxdb examples/generate.lua [--config tiny|stories15M|stories110M] [--tokens N]\n" ..
        "         [--weights FILE.safetensors] [--prompt 1,2,3] [--seed N] [--no-check]\n" ..
        "         [--no-reinplace] [--quiet]")
  return
end
local missing = llama.missing_ops()
if #missing > 0 then
  print("generate: this build of fxdb lacks " .. table.concat(missing, ", ") .. "; cannot decode yet")
  return
end

local now = torch._perf_counter
local cfg = llama.config(o.config)
local t0 = now()
local eager = llama.build(cfg, {seed = o.seed})
if o.weights then llama.load(eager, o.weights) end
local model = llama.share_weights(eager)   -- what is exported: same weights, its own caches
local wbytes = llama.weight_bytes(eager)
print(string.format("%s: dim %d, %d layers, %d heads (%d kv), vocab %d, %.1f MB of weights%s; built in %.2fs",
                    cfg.name, cfg.dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.vocab_size,
                    wbytes / 1e6, o.weights and (" from " .. o.weights) or " (seeded random)", now() - t0))
if o.tokens + #(o.prompt or {}) > cfg.max_seq_len then
  error(string.format("%d tokens do not fit in max_seq_len %d", o.tokens, cfg.max_seq_len), 0)
end

local prompt = o.prompt or {1}   -- 1 = <s> in the Llama tokenizer
local out = {}
local t_export, t_trace, t_run, t_eager, max_err = 0, 0, 0, 0, 0
-- a progress line rewritten in place on a terminal; one line every 16 steps otherwise
local tty = not o.quiet and os.getenv("TERM") ~= "dumb" and os.execute("test -t 1") == true
local tok = prompt[1]
local steps = #prompt - 1 + o.tokens
for pos = 0, steps - 1 do
  local x = torch.tensor({{tok}})
  local a = now()
  local ep = torch.export.export(model, {x, pos})
  local b = now()
  local gm = ep:module({share_state = true, reinplace = o.reinplace})
  local c = now()
  local logits = gm(x, pos)
  local d = now()
  t_trace, t_export, t_run = t_trace + (b - a), t_export + (c - a), t_run + (d - c)
  if o.check then
    local e = now()
    local ref = eager(x, pos)
    t_eager = t_eager + (now() - e)
    local err = fxdb._max_abs_diff(logits, ref)
    if err > max_err then max_err = err end
    if err > 1e-4 then
      error(string.format("step %d: exported logits differ from eager by %g", pos, err), 0)
    end
  end
  if pos + 1 < #prompt then
    tok = prompt[pos + 2]                       -- still reading the prompt
  else
    tok = llama.argmax(logits[{0, 0}])          -- greedy
    out[#out + 1] = tok
  end
  if not o.quiet and (tty or (pos + 1) % 16 == 0 or pos + 1 == steps) then
    local line = string.format("[%4d/%d] pos %4d  token %5d  exported %.1f tok/s%s", pos + 1, steps,
                               pos, tok, (pos + 1) / t_run,
                               o.check and string.format("  eager %.1f tok/s  max |diff| %.2g",
                                                         (pos + 1) / t_eager, max_err) or "")
    io.write(tty and ("\r" .. line) or (line .. "\n"))
    io.flush()
  end
end
if tty then io.write("\n") end

local shown = {}
for i = 1, math.min(#out, 24) do shown[i] = tostring(out[i]) end
print(string.format("generated %d tokens: %s%s", #out, table.concat(shown, " "), #out > 24 and " ..." or ""))
print(string.format("exported decode: %.1f tokens/s (%.2f ms/token, %.2f GB/s of weights)", steps / t_run,
                    1e3 * t_run / steps, wbytes * steps / t_run / 1e9))
if o.check then
  print(string.format("eager decode:    %.1f tokens/s (%.2f ms/token); every step matched (max |diff| %g)",
                      steps / t_eager, 1e3 * t_eager / steps, max_err))
end
print(string.format("export per step: %.1f ms (trace + functionalize %.1f ms, unlift%s %.1f ms); " ..
                    "with export %.1f tokens/s", 1e3 * t_export / steps, 1e3 * t_trace / steps,
                    o.reinplace and " + reinplace" or "", 1e3 * (t_export - t_trace) / steps,
                    steps / (t_export + t_run)))
