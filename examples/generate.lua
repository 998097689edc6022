-- examples/generate.lua — greedy decoding through the exported program, checked against eager.
-- Layer: examples (Lua only).
--   fxdb examples/generate.lua [--config stories15M] [--tokens 128] [--weights FILE.safetensors]
--                              [--prompt 1,2,3] [--seed N] [--no-check] [--no-reinplace] [--quiet]
--
-- The model is exported ONCE, as ExecuTorch exports its Llama: tokens with a dynamic sequence
-- length (Dim "seqlen") and the position as a tensor input_pos that forward reads with item()
-- (llama.export). ep:module() unlifts that single program into a stateful module whose caches
-- carry the context from call to call: one call prefills the whole prompt, then each following
-- token is one call at the next position — no export inside the loop. `share_state` makes the
-- module use the exported model's tensors (its weights are the eager model's, its caches its
-- own); the reinplace pass turns each slice_scatter + trailing copy_ back into a copy_ into the
-- cache slice. A second model — the eager reference, same weights, its own caches — runs the Lua
-- forward on the same inputs; every call's logits must match and the greedy tokens be the same.
-- Prints a progress line while it runs and, at the end, the export time (once), tokens/s of the
-- exported decode (module calls only) and of eager decoding.

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
if o.tokens < 1 then error("--tokens must be at least 1", 0) end
if o.tokens - 1 + #(o.prompt or {1}) > cfg.max_seq_len then
  error(string.format("a prompt of %d and %d tokens do not fit in max_seq_len %d", #(o.prompt or {1}),
                      o.tokens, cfg.max_seq_len), 0)
end

local prompt = o.prompt or {1}   -- 1 = <s> in the Llama tokenizer
local t0 = now()
local ep = llama.export(model)
local t1 = now()
local gm = ep:module({share_state = true, reinplace = o.reinplace})
local t_export, t_unlift = t1 - t0, now() - t1
print(string.format("exported once in %.1f ms (unlift%s %.1f ms): %d nodes, range constraints " ..
                    "{s0: VR[%d, %d], u0: VR[%d, %d]}", 1e3 * t_export,
                    o.reinplace and " + reinplace" or "", 1e3 * t_unlift, #ep.graph.nodes,
                    ep.range_constraints.s0.lower, ep.range_constraints.s0.upper,
                    ep.range_constraints.u0.lower, ep.range_constraints.u0.upper))

-- one call of the program and (with --check) of eager on the same tokens at pos; returns the
-- logits of the last token
local out = {}
local t_prefill, t_run, t_eager, max_err = 0, 0, 0, 0
local function step(toks, pos)
  local x, ip = torch.tensor({toks}), torch.tensor({pos})
  local a = now()
  local logits = gm(x, ip)
  local dt = now() - a
  if o.check then
    local e = now()
    local ref = eager(x, ip)
    t_eager = t_eager + (now() - e)
    local err = fxdb._max_abs_diff(logits, ref)
    if err > max_err then max_err = err end
    if err > 1e-4 then
      error(string.format("pos %d: exported logits differ from eager by %g", pos, err), 0)
    end
    if llama.argmax(logits[{0, #toks - 1}]) ~= llama.argmax(ref[{0, #toks - 1}]) then
      error(string.format("pos %d: exported and eager pick different tokens", pos), 0)
    end
  end
  return logits[{0, #toks - 1}], dt
end

-- a progress line rewritten in place on a terminal; one line every 16 tokens otherwise
local tty = not o.quiet and os.getenv("TERM") ~= "dumb" and os.execute("test -t 1") == true
local last, dt = step(prompt, 0)   -- prefill: the whole prompt in one call
t_prefill = dt
local pos = #prompt
for i = 1, o.tokens do
  local tok = llama.argmax(last)   -- greedy
  out[#out + 1] = tok
  if i == o.tokens then break end
  last, dt = step({tok}, pos)
  t_run = t_run + dt
  pos = pos + 1
  if not o.quiet and (tty or i % 16 == 0 or i + 1 == o.tokens) then
    local line = string.format("[%4d/%d] pos %4d  token %5d  exported %.1f tok/s%s", i, o.tokens - 1,
                               pos - 1, tok, i / t_run,
                               o.check and string.format("  eager %.1f tok/s  max |diff| %.2g",
                                                         (i + 1) / t_eager, max_err) or "")
    io.write(tty and ("\r" .. line) or (line .. "\n"))
    io.flush()
  end
end
if tty then io.write("\n") end

local steps = o.tokens - 1   -- decode calls after the prefill
local shown = {}
for i = 1, math.min(#out, 24) do shown[i] = tostring(out[i]) end
print(string.format("generated %d tokens: %s%s", #out, table.concat(shown, " "), #out > 24 and " ..." or ""))
print(string.format("prefill of %d tokens: %.2f ms", #prompt, 1e3 * t_prefill))
if steps > 0 then
  print(string.format("exported decode: %.1f tokens/s (%.2f ms/token, %.2f GB/s of weights)", steps / t_run,
                      1e3 * t_run / steps, wbytes * steps / t_run / 1e9))
end
if o.check then
  print(string.format("eager (prefill + decode): %.1f calls/s (%.2f ms/call); every call matched " ..
                      "(max |diff| %g), same tokens", (steps + 1) / t_eager,
                      1e3 * t_eager / (steps + 1), max_err))
end
print(string.format("export: %.1f ms once (with it, %.1f tokens/s over this run)", 1e3 * (t_export + t_unlift),
                    #out / (t_export + t_unlift + t_prefill + t_run)))
