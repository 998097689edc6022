-- tests/lua/test_render.lua — fxdb.render from Lua: options reach the picture (read back as DOT
-- text), a module drawn alone, the .html page, and clear errors for wrong options.
local T = dofile("tests/lua/harness.lua")
local llama = dofile("examples/llama.lua")

local cfg = llama.config("llama2_7b")
cfg.n_layers = 2
local ep = torch.export.export(llama.build(cfg, {device = "meta"}), {torch.zeros({1, 1}, torch.int64), 0})
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p " .. dir)

local function dot(opts)
  local file = dir .. "/g.dot"
  fxdb.render(ep, file, opts)
  local f = assert(io.open(file))
  local text = f:read("a")
  f:close()
  return text
end

local function has(text, s) return text:find(s, 1, true) ~= nil end
-- node `id` (an identifier, which DOT writes unquoted) is declared in the DOT text
local function declares(text, id) return text:find("\n%s*" .. id .. "%s*%[") ~= nil end

T.test("depth 0: the program as module boxes, one output per cache", function()
  local d = dot({depth = 0, progress = false})
  T.truthy(has(d, '"module.layers.0"'), "box of layers.0")
  T.truthy(has(d, '"module.layers.1"'), "box of layers.1")
  T.truthy(has(d, "61 ops, 2 mutations"), "op and mutation counts")
  T.falsy(has(d, "cluster_layers.0"), "no cluster at depth 0")
  T.truthy(has(d, '"output.buffer_mutation.layers.1.attention.cache_v"'), "per-state output")
  T.falsy(has(d, "p_layers_0_attention_wq_weight"), "parameters folded")
  T.truthy(declares(d, "tokens"), "user input drawn")
end)

T.test("full depth: every op, parameters named in their user's label", function()
  local d = dot({progress = false})
  T.truthy(has(d, "cluster_layers.0.attention"), "nested clusters")
  T.truthy(has(d, "weight f32[4096, 4096]"), "folded parameter line")
  local p = dot({params = true, progress = false})
  T.truthy(declares(p, "p_layers_0_attention_wq_weight"), "--params draws them")
end)

T.test("expand, collapse, a module alone, --why through boxes", function()
  local d = dot({depth = 0, expand = "layers.1.attention", progress = false})
  T.truthy(has(d, "cluster_layers.1.attention"), "expanded path open")
  T.truthy(has(d, '"module.layers.0"'), "others stay boxes")
  d = dot({collapse = {"layers.0"}, progress = false})
  T.truthy(has(d, '"module.layers.0"'), "collapsed")
  T.truthy(has(d, "cluster_layers.1.attention"), "the rest open")
  d = dot({module = "layers.1.attention", progress = false})
  T.falsy(has(d, "layers.0.attention"), "only the module")
  T.truthy(has(d, "slice_scatter"), "its ops")
  d = dot({depth = 0, why = "layers.0.attention.cache_k", progress = false})
  T.truthy(has(d, "why: v0, v1 of layers.0.attention.cache_k"), "the box names the versions")
end)

T.test("the html page is written", function()
  local file = dir .. "/p.html"
  T.eq(fxdb.render(ep, file, {progress = false}), file)
  local f = assert(io.open(file))
  local text = f:read("a")
  f:close()
  T.truthy(has(text, "<!DOCTYPE html>"), "html")
  T.truthy(has(text, '"layers.1.attention.cache_k":{"kind":"BUFFER"'), "provenance data")
end)

T.test("wrong options are errors", function()
  T.checkerr("unknown option 'dpeth'", fxdb.render, ep, dir .. "/x.svg", {dpeth = 1})
  T.checkerr("opts.depth must be a non-negative integer", fxdb.render, ep, dir .. "/x.svg", {depth = -1})
  T.checkerr("opts.expand must be a module path", fxdb.render, ep, dir .. "/x.svg", {expand = 3})
  T.checkerr("no node of the graph is inside module 'nope'", fxdb.render, ep, dir .. "/x.svg", {module = "nope"})
  T.checkerr("cannot tell the format", fxdb.render, ep, dir .. "/x.txt")
end)

os.execute("rm -rf " .. dir)
T.done()
