-- tests/viz/browser_pages.lua — writes the pages the browser test opens (tests/viz/test_browser.sh):
--   DIR/seed.html     seed case S1 (a buffer mutated twice in place), the model of tests/golden/seed_s1.lua
--   DIR/llama32.html  the Llama-2-7B-shaped program, 32 layers, on the meta device
-- Usage: fxdb tests/viz/browser_pages.lua DIR
local dir = assert(arg[1], "usage: fxdb tests/viz/browser_pages.lua DIR")

dofile("tests/golden/seed_s1.lua")   -- defines the global m (seed S1) with m.example_inputs
local ep = torch.export.export(m, m.example_inputs)
fxdb.render(ep, dir .. "/seed.html", {title = "seed S1", progress = false})

local llama = dofile("examples/llama.lua")
local cfg = llama.config("llama2_7b")
local model = llama.build(cfg, {device = "meta"})
local ep32 = torch.export.export(model, {torch.zeros({1, 1}, torch.int64), 0})
fxdb.render(ep32, dir .. "/llama32.html", {title = "llama2_7b, 32 layers (meta)", progress = false})
print("pages written to " .. dir)
