-- tests/lua/test_llama.lua — examples/llama.lua on the `tiny` config: eager vs exported (the
-- lifted program run by fxdb.run) vs unlifted (ep:module()) logits over 20 decode steps, caches
-- after each step, strict vs non-strict graphs, export leaving the module's buffers untouched,
-- BUFFER_MUTATION and provenance for every cache buffer, Hugging Face key layout and safetensors
-- round trip, prefill with a causal mask, and a llama2_7b build and export on the meta device.
-- Layer: tests. Tests that need ops this build lacks are skipped with a message naming them.
local T = dofile("tests/lua/harness.lua")
local llama = dofile("examples/llama.lua")

local missing = llama.missing_ops()
local can_run = #missing == 0
if not can_run then
  print("test_llama: skipping the model tests: this build lacks " .. table.concat(missing, ", "))
end

local function buffer(m, path)
  local owner, name = path:match("^(.*)%.([^.]+)$")
  return m:get_submodule(owner)[name]
end

-- The line of examples/llama.lua that holds `code`.
local function line_of(code)
  local n = 0
  for l in io.lines("examples/llama.lua") do
    n = n + 1
    if l:find(code, 1, true) then return n end
  end
  error("no line with " .. code)
end

local function max_diff(a, b)
  return fxdb._max_abs_diff(a, b)
end

-- bit-identical, or within float32 round-off for sums done in another order
local function close(a, b, what, tol)
  T.truthy(a.shape == b.shape, (what or "") .. ": shapes " .. tostring(a.shape) .. " vs " .. tostring(b.shape))
  local d = max_diff(a, b)
  T.truthy(d <= (tol or 0), string.format("%s: max abs difference %g", what or "values", d))
end

T.test("configs and Hugging Face key names", function()
  local c = llama.config("stories15M")
  T.eq(c.dim, 288)
  T.eq(c.hidden_dim, 768)
  T.eq(c.n_layers, 6)
  T.eq(llama.config("stories110M").max_seq_len, 1024)
  T.eq(llama.config("llama2_7b").hidden_dim, 11008)
  T.checkerr("unknown config 'huge'", llama.config, "huge")
  T.eq(llama.hf_name("layers.11.feed_forward.w2.weight"), "model.layers.11.mlp.down_proj.weight")
  T.eq(llama.hf_name("layers.0.attention_norm.weight"), "model.layers.0.input_layernorm.weight")
  T.eq(llama.hf_name("tok_embeddings.weight"), "model.embed_tokens.weight")
  T.eq(llama.meta_name("lm_head.weight"), "output.weight")
  T.eq(llama.meta_name("model.layers.3.self_attn.v_proj.weight"), "layers.3.attention.wv.weight")
  T.eq(llama.meta_name("model.layers.3.post_attention_layernorm.weight"), "layers.3.ffn_norm.weight")
  T.eq(llama.hf_name("layers.0.attention.cache_k"), nil)
end)

if can_run then
  local cfg = llama.config("tiny")
  local STEPS = 20

  T.test("eager, exported and unlifted logits and caches agree over 20 decode steps", function()
    local eager = llama.build(cfg, {seed = 7})
    local exported = llama.share_weights(eager)   -- same weights, its own caches
    local tok = torch.tensor({{3}})
    for pos = 0, STEPS - 1 do
      local before = {}
      for _, p in ipairs(exported:cache_paths()) do before[p] = buffer(exported, p):clone() end
      local ep = torch.export.export(exported, {tok, pos})
      -- export leaves the module's buffers untouched
      for _, p in ipairs(exported:cache_paths()) do
        T.eq(max_diff(buffer(exported, p), before[p]), 0, "export changed " .. p)
      end
      local r = fxdb.run(ep, {tok, pos})                 -- the lifted, functional program
      local gm = ep:module({share_state = true, reinplace = (pos % 2 == 0)})
      local un = gm(tok, pos)                             -- writes exported's caches
      local ref = eager(tok, pos)
      close(r.outputs[1], ref, "exported logits at " .. pos)
      close(un, ref, "unlifted logits at " .. pos)
      for _, p in ipairs(eager:cache_paths()) do
        local want = buffer(eager, p)
        close(r.mutations[p], want, "exported " .. p .. " at " .. pos)
        close(buffer(exported, p), want, "unlifted " .. p .. " at " .. pos)
      end
      local nxt = llama.argmax(ref[{0, 0}])
      tok = torch.tensor({{nxt}})
    end
  end)

  T.test("a kept unlifted module plans once and reruns at the same position", function()
    local m = llama.build(cfg, {seed = 3})
    local tok = torch.tensor({{5}})
    local ep = torch.export.export(m, {tok, 4})
    local gm = ep:module({reinplace = true})
    local a = gm(tok, 4)
    local st1 = gm:plan_stats()
    local b = gm(tok, 4)
    local st2 = gm:plan_stats()
    -- steady state: the same small number of allocations per call (inputs and outputs only)
    local calls = {}
    for i = 1, 3 do
      local c0 = torch._memory_stats().total_calls
      gm(tok, 4)
      calls[i] = torch._memory_stats().total_calls - c0
    end
    T.eq(calls[3], calls[2], "allocations per call")
    T.truthy(calls[3] < 40, "few allocations per call: " .. calls[3])
    close(a, b, "same step twice")
    T.eq(st1.buffers, st2.buffers)
    T.truthy(st2.direct > 0, "kernels run directly")
    T.truthy(st2.view_hits > st1.view_hits, "views reused on the second run")
    T.truthy(st2.pool_bytes <= st2.planned_bytes)
    T.truthy(not rawequal(a, b), "outputs are fresh tensors")
  end)

  T.test("strict and non-strict graphs are identical", function()
    local m = llama.build(cfg)
    for _, pos in ipairs({0, 5}) do
      local tok = torch.tensor({{1}})
      local s = torch.export.export(m, {tok, pos})
      local ns = torch.export.export(m, {tok, pos}, {strict = false})
      T.eq(tostring(ns.graph), tostring(s.graph))
      T.eq(tostring(ns.graph_signature), tostring(s.graph_signature))
    end
  end)

  T.test("every cache buffer is a BUFFER_MUTATION with its provenance", function()
    local m = llama.build(cfg)
    local ep = torch.export.export(m, {torch.tensor({{1}}), 2})
    local mutated = {}
    for _, s in ipairs(ep.graph_signature.output_specs) do
      if s.kind == "BUFFER_MUTATION" then mutated[s.target] = true end
    end
    local n = 0
    for _, p in ipairs(m:cache_paths()) do
      T.truthy(mutated[p], p .. " is a BUFFER_MUTATION")
      n = n + 1
      local prov = fxdb.provenance(ep, p)
      local text = tostring(prov)
      T.truthy(text:find("aten.copy_", 1, true), "provenance of " .. p .. " names copy_:\n" .. text)
      local kind = p:match("cache_(%a)$")
      T.truthy(text:find("llama.lua:" .. line_of("self.cache_" .. kind .. "[{rows, slice(pos, pos + seqlen)}] = " .. kind), 1, true),
               "provenance of " .. p .. " names the assignment line:\n" .. text)
      T.truthy(text:find("self.cache_" .. kind .. "[{rows, slice(pos, pos + seqlen)}] = " .. kind, 1, true),
               "provenance shows the source line:\n" .. text)
    end
    T.eq(n, 2 * cfg.n_layers)
    local count = 0
    for _ in pairs(mutated) do count = count + 1 end
    T.eq(count, n, "nothing but the caches is mutated")
    -- the layer-0 cache write, as :why shows it
    local steps = fxdb.provenance(ep, "layers.0.attention.cache_k").steps
    local last = steps[#steps]
    T.eq(last.from_op, "aten.copy_.default")
    T.truthy(last.view_path and last.view_path:find("slice", 1, true), "written through a slice")
  end)

  T.test("weights round trip through safetensors in the Hugging Face layout", function()
    local path = os.tmpname() .. ".safetensors"
    local a = llama.build(cfg, {seed = 1})
    llama.save(a, path)
    local f <close> = torch.safe_open(path)
    local keys = {}
    for _, k in ipairs(f:keys()) do keys[k] = true end
    T.truthy(keys["model.embed_tokens.weight"])
    T.truthy(keys["model.layers.1.self_attn.k_proj.weight"])
    T.truthy(keys["model.layers.0.mlp.up_proj.weight"])
    T.truthy(keys["lm_head.weight"], "untied configs save lm_head")
    T.truthy(f:shape("model.layers.0.self_attn.k_proj.weight") == torch.Size({32, 64}))
    f:close()
    local b = llama.build(cfg, {seed = 2})
    llama.load(b, path)
    local tok = torch.tensor({{9}})
    close(b(tok, 0), a(tok, 0), "logits after loading")
    -- a missing key and a wrong shape are load_state_dict's errors
    local sd = torch.load_safetensors(path)
    local keys2 = sd:keys()
    torch.save_safetensors({["model.norm.weight"] = torch.ones(64)}, path)
    T.checkerr('Missing key(s) in state_dict: "tok_embeddings.weight"', llama.load, b, path)
    local bad = {}
    for _, k in ipairs(keys2) do bad[k] = sd[k] end
    bad["model.norm.weight"] = torch.ones(63)
    torch.save_safetensors(bad, path)
    T.checkerr("size mismatch for norm.weight", llama.load, b, path)
    os.remove(path)
  end)

  T.test("tied embeddings: one tensor, saved once", function()
    local c = llama.config("tiny")
    c.tie_embeddings = true
    local m = llama.build(c)
    T.truthy(rawequal(m.output.weight, m.tok_embeddings.weight))
    local path = os.tmpname() .. ".safetensors"
    llama.save(m, path)
    local sd = torch.load_safetensors(path)
    T.eq(sd["lm_head.weight"], nil)
    local m2 = llama.build(c, {seed = 5})
    llama.load(m2, path)
    T.truthy(rawequal(m2.output.weight, m2.tok_embeddings.weight))
    close(m2.output.weight, m.tok_embeddings.weight, "tied weight loaded")
    local ep = torch.export.export(m, {torch.tensor({{2}}), 0})
    local lifted = 0
    for _, s in ipairs(ep.graph_signature.input_specs) do
      if s.kind == "PARAMETER" and (s.target == "tok_embeddings.weight" or s.target == "output.weight") then
        lifted = lifted + 1
      end
    end
    T.eq(lifted, 1, "tied parameter lifted once")
    os.remove(path)
  end)

  if torch._has_op("triu.default") then
    T.test("prefill with a causal mask equals token-by-token decoding", function()
      local m = llama.build(cfg, {seed = 11})
      local toks = {4, 8, 15, 16}
      local seq = m(torch.tensor({toks}), 0)              -- (1, 4, vocab)
      m:reset_cache()
      for i, t in ipairs(toks) do
        local step = m(torch.tensor({{t}}), i - 1)
        close(step[{0, 0}], seq[{0, i - 1}], "position " .. (i - 1), 1e-5)
      end
    end)
  else
    print("test_llama: skipping the prefill test: this build lacks triu.default")
  end

  -- ==== the single program (tensor input_pos read by item(), dynamic sequence length) ====

  T.test("the single program: one export, prefill lengths and positions bit for bit vs eager", function()
    for _, strict in ipairs({true, false}) do
      for _, reinplace in ipairs({false, true}) do
        local eager = llama.build(cfg, {seed = 5})
        local model = llama.share_weights(eager)
        local ep = llama.export(model, {strict = strict})
        local gm = ep:module({share_state = true, reinplace = reinplace})
        local what = (strict and "strict" or "non-strict") .. (reinplace and ", reinplaced" or "")
        torch.manual_seed(9)
        local pos = 0
        -- a prompt, single tokens, short prefills at later positions, up to max_seq_len exactly
        for _, n in ipairs({5, 1, 1, 3, 1, 2, 1, 17, 1}) do
          local toks, ip = torch.randint(0, cfg.vocab_size, {1, n}), torch.tensor({pos})
          local before = {}
          for _, p in ipairs(model:cache_paths()) do before[p] = buffer(model, p):clone() end
          local r = fxdb.run(ep, {toks, ip})          -- the lifted program: model's caches untouched
          local got, want = gm(toks, ip), eager(toks, ip)
          local at = string.format("%s, pos %d, %d tokens", what, pos, n)
          close(got, want, "unlifted logits, " .. at)
          close(r.outputs[1], want, "lifted logits, " .. at)
          for _, p in ipairs(model:cache_paths()) do
            close(buffer(model, p), buffer(eager, p), p .. ", " .. at)
            close(r.mutations[p], buffer(eager, p), "lifted " .. p .. ", " .. at)
            T.truthy(max_diff(buffer(model, p), before[p]) > 0, p .. " written, " .. at)
          end
          pos = pos + n
        end
        T.eq(pos, cfg.max_seq_len)
      end
    end
  end)

  T.test("the single program prints its symbols, range constraints, asserts and cache writes", function()
    local m = llama.build(cfg)
    local ep = llama.export(m)
    local text = tostring(ep)
    local function has(want) T.truthy(text:find(want, 1, true), "missing: " .. want .. "\n" .. text) end
    has('tokens: "i64[1, s0]", input_pos: "i64[1]"):')
    has('_local_scalar_dense: "Sym(u0)" = torch.ops.aten._local_scalar_dense.default(select)')
    has('sym_constrain_range_for_size_default = torch.ops.aten.sym_constrain_range_for_size.default(_local_scalar_dense)')
    has('le: "Sym(u0 <= 31)" = _local_scalar_dense <= 31')
    has([[torch.ops.aten._assert_scalar.default(le, "Runtime assertion failed for expression u0 <= 31 on node 'le'")]])
    has('add: "Sym(s0 + u0)" = sym_size_int + _local_scalar_dense')
    has('le_1: "Sym(s0 + u0 <= 32)" = add <= 32')
    has('slice_1: "f32[s0, 16]" = torch.ops.aten.slice.Tensor(b_freqs_cos, 0, _local_scalar_dense, add_1)')
    has('cat: "f32[s0, s0 + u0]" = torch.ops.aten.cat.default([zeros, triu], 1)')
    has('slice_scatter: "f32[1, 32, 2, 16]" = torch.ops.aten.slice_scatter.default(b_layers_0_attention_cache_k, ')
    has('"Runtime assertion failed for expression s0 + u0 <= 32 on node \'le_1\'"')
    -- the asserts come first: the position's range, then the check over both symbols
    local a1, a2 = text:find("on node 'le_1'", 1, true), text:find("embedding.default", 1, true)
    T.truthy(a1 and a2 and a1 < a2, "asserts before the first op")
    has("slice_scatter: BUFFER_MUTATION target='layers.0.attention.cache_k'")
    has("slice_scatter_3: BUFFER_MUTATION target='layers.1.attention.cache_v'")
    has("Range constraints: {s0: VR[0, 32], u0: VR[0, 31]}")
    T.eq(ep.range_constraints.u0.upper, 31)
    T.eq(ep.range_constraints.s0.upper, 32)
    -- no guard specialized the sequence length or the position
    T.falsy(text:find("Eq(s0", 1, true) or text:find("Eq(u0", 1, true), text)
    -- strict and non-strict agree
    T.eq(tostring(llama.export(m, {strict = false}).graph), tostring(ep.graph))
    -- :why of a cache leads to the Lua line of its write, through the symbolic slice
    local prov = tostring(fxdb.provenance(ep, "layers.1.attention.cache_v"))
    T.truthy(prov:find("examples/llama.lua:" .. line_of("self.cache_v[{rows, slice(pos, pos + seqlen)}] = v") ..
                       "  self.cache_v[{rows, slice(pos, pos + seqlen)}] = v", 1, true), prov)
    T.truthy(prov:find("through slice(1, _local_scalar_dense, add, 1) of layers.1.attention.cache_v", 1,
                       true), prov)
  end)

  T.test("the single program refuses a position beyond max_seq_len at its runtime assert", function()
    local eager = llama.build(cfg, {seed = 2})
    local model = llama.share_weights(eager)
    local ep = llama.export(model)
    local gm = ep:module({share_state = true})
    gm(torch.tensor({{1, 2}}), torch.tensor({0}))
    local before = buffer(model, "layers.0.attention.cache_k"):clone()
    local ok, e = pcall(gm, torch.tensor({{3}}), torch.tensor({cfg.max_seq_len}))
    T.falsy(ok)
    T.eq(e.kind, "runtime_assert")
    T.truthy(tostring(e):find("Runtime assertion failed for expression u0 <= 31 on node 'le'", 1, true),
             tostring(e))
    ok, e = pcall(fxdb.run, ep, {torch.tensor({{3}}), torch.tensor({40})})
    T.falsy(ok)
    T.truthy(tostring(e):find("u0 <= 31", 1, true), tostring(e))
    T.eq(max_diff(buffer(model, "layers.0.attention.cache_k"), before), 0, "caches untouched")
    -- a prefill that starts inside the cache and runs past its end: the check over both symbols
    ok, e = pcall(gm, torch.tensor({{3, 4, 5}}), torch.tensor({cfg.max_seq_len - 2}))
    T.falsy(ok)
    T.truthy(tostring(e):find("Runtime assertion failed for expression s0 + u0 <= 32 on node 'le_1'",
                              1, true), tostring(e))
    T.eq(max_diff(buffer(model, "layers.0.attention.cache_k"), before), 0, "caches untouched")
    -- a negative position fails sym_constrain_range_for_size, as in PyTorch
    ok, e = pcall(gm, torch.tensor({{3}}), torch.tensor({-1}))
    T.falsy(ok)
    T.truthy(tostring(e):find("Invalid value range for -1", 1, true), tostring(e))
    -- eager refuses it at the model's torch._check
    T.checkerr("Expected cond to be True", eager, torch.tensor({{3}}), torch.tensor({cfg.max_seq_len}))
    -- the module goes on at a valid position
    close(gm(torch.tensor({{3}}), torch.tensor({2})), (function()
      eager(torch.tensor({{1, 2}}), torch.tensor({0}))
      return eager(torch.tensor({{3}}), torch.tensor({2}))
    end)(), "after the refused calls")
  end)

  T.test("llama2_7b on the meta device: build and export allocate no weights", function()
    local before = torch._memory_stats().live_bytes
    local m = llama.build("llama2_7b", {device = "meta"})
    T.eq(m.layers[0].attention.wq.weight.device, "meta")
    T.eq(m.layers[31].attention.cache_k.device, "meta")
    T.truthy(torch._memory_stats().live_bytes - before < 64 * 2 ^ 20, "no weight bytes")
    local ep = torch.export.export(m, {torch.zeros({1, 1}, torch.int64), 7})
    local mut = 0
    for _, s in ipairs(ep.graph_signature.output_specs) do
      if s.kind == "BUFFER_MUTATION" then mut = mut + 1 end
    end
    T.eq(mut, 64)
    T.truthy(torch._memory_stats().peak_bytes < 2 ^ 30, "peak core allocation under 1 GiB")
  end)
end

T.done()
