-- tests/lua/test_llama_update_cache.lua — examples/llama_update_cache.lua on the `tiny` config:
-- ExecuTorch's llama::update_cache custom op in place of index assignment. The functional IR
-- wraps every cache write in auto_functionalized with a BUFFER_MUTATION output and provenance
-- naming the op and its Lua line; fxdb.reinplace writes each cache buffer in place (no clone of a
-- cache, no copy_); logits over several decode steps match eager for the exported, unlifted and
-- reinplaced programs, and match the index-assignment form exactly.
-- Layer: tests. Skipped (with a message) when this build lacks an op the model needs.
local T = dofile("tests/lua/harness.lua")
local uc = dofile("examples/llama_update_cache.lua")
local llama = uc.llama

local missing = llama.missing_ops()
if #missing > 0 then
  print("test_llama_update_cache: skipping: this build lacks " .. table.concat(missing, ", "))
  T.done()
  return
end

local cfg = llama.config("tiny")
local base = llama.build(cfg, {seed = 3})
local function op_model() return uc.use(llama.share_weights(base)) end
local tok = torch.tensor({{5}})

T.test("functional IR: one auto_functionalized per cache, BUFFER_MUTATION, provenance", function()
  local ep = torch.export.export(op_model(), {tok, 2})
  local code = ep.graph_module.code
  local n = select(2, code:gsub("torch%.ops%.higher_order%.auto_functionalized%(torch%.ops%.llama%.update_cache%.default", ""))
  T.eq(n, 2 * cfg.n_layers)
  T.truthy(code:find("torch.ops.higher_order.auto_functionalized(torch.ops.llama.update_cache.default, "
    .. "value = add_1, cache = b_layers_0_attention_cache_k, start_pos = 2)", 1, true), code)
  T.truthy(not code:find("slice_scatter", 1, true), "no index-assignment write is left")
  local muts = {}
  for _, s in ipairs(ep.graph_signature.output_specs) do
    if s.kind == "BUFFER_MUTATION" then muts[#muts + 1] = s.target end
  end
  table.sort(muts)
  local want = base:cache_paths()
  table.sort(want)
  T.eq(table.concat(muts, " "), table.concat(want, " "))
  local pv = fxdb.provenance(ep, "layers.1.attention.cache_v")
  T.eq(pv.steps[2].from_op, "llama.update_cache.default")
  T.truthy(tostring(pv.steps[2].location):find("llama_update_cache.lua:", 1, true), tostring(pv.steps[2].location))
end)

T.test("reinplaced: every cache written in place, no clone of a cache, no copy_", function()
  local gm = fxdb.reinplace(torch.export.export(op_model(), {tok, 2}))
  local code = gm.code
  T.truthy(code:find("torch.ops.llama.update_cache.default(mul_2, layers_0_attention_cache_k, 2)", 1, true), code)
  T.truthy(not code:find("auto_functionalized", 1, true), code)
  T.truthy(not code:find("aten.copy_.default(", 1, true), code)
  for line in code:gmatch("[^\n]+") do
    T.truthy(not (line:find("aten.clone.default(", 1, true) and line:find("cache", 1, true)), line)
  end
  local notes = gm.reinplace_notes
  T.eq(select(2, notes:gsub("written in place", "")), 2 * cfg.n_layers, notes)
end)

T.test("decode: exported, unlifted and reinplaced logits match eager; both forms agree", function()
  local index_form, op_form = llama.share_weights(base), op_model()
  local exported, reinplaced = op_model(), op_model()
  local t = 1
  for pos = 0, 5 do
    local x = torch.tensor({{t}})
    local ref = index_form(x, pos)
    T.eq(fxdb._max_abs_diff(op_form(x, pos), ref), 0, "eager forms, pos " .. pos)
    local ep = torch.export.export(exported, {x, pos})
    T.eq(fxdb._max_abs_diff(ep:module({share_state = true})(x, pos), ref), 0, "unlifted, pos " .. pos)
    local ep2 = torch.export.export(reinplaced, {x, pos})
    T.eq(fxdb._max_abs_diff(ep2:module({share_state = true, reinplace = true})(x, pos), ref), 0,
         "reinplaced, pos " .. pos)
    t = llama.argmax(ref[{0, 0}])
  end
  for _, path in ipairs(base:cache_paths()) do
    local owner, name = path:match("^(.*)%.([^.]+)$")
    local want = index_form:get_submodule(owner)[name]
    T.eq(fxdb._max_abs_diff(reinplaced:get_submodule(owner)[name], want), 0, path)
    T.eq(fxdb._max_abs_diff(exported:get_submodule(owner)[name], want), 0, path)
  end
end)

T.test("the script runs and reports what it did", function()
  -- run it as `fxdb examples/llama_update_cache.lua --tokens 3` would, capturing its printing
  local saved_arg, saved_print, lines = arg, print, {}
  arg = {[0] = "examples/llama_update_cache.lua", "--tokens", "3"}
  print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    lines[#lines + 1] = table.concat(parts, "\t")
  end
  local ok, err = pcall(dofile, "examples/llama_update_cache.lua") -- a second load: no redefinition
  arg, print = saved_arg, saved_print
  T.truthy(ok, tostring(err))
  local out = table.concat(lines, "\n")
  T.truthy(out:find("clones of a cache: 0, copy_ nodes: 0", 1, true), out)
  T.truthy(out:find("every step's logits matched eager", 1, true), out)
end)

T.done()
