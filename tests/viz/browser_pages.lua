-- tests/viz/browser_pages.lua — writes the pages the browser test opens (tests/viz/test_browser.sh):
--   DIR/seed.html     seed case S1 (a buffer mutated twice in place, shared/cases' first seed)
--   DIR/llama32.html  the Llama-2-7B-shaped program, 32 layers, on the meta device
-- Usage: fxdb tests/viz/browser_pages.lua DIR
local dir = assert(arg[1], "usage: fxdb tests/viz/browser_pages.lua DIR")

local Model = nn.Module:extend("Model")
function Model:init()
  self:register_buffer("state", torch.tensor({7, 5, 6}, torch.float16))
end
function Model:forward(x)
  x = x:type(torch.float16)
  self.state:mul_(x)                                        -- line 13
  self.state:add_(torch.tensor({1, 2, 3}, torch.float16))   -- line 14
  return self.state * 9
end
local ep = torch.export.export(Model(), {torch.tensor({1.5, 2, -1})})
fxdb.render(ep, dir .. "/seed.html", {title = "seed S1", progress = false})

local llama = dofile("examples/llama.lua")
local cfg = llama.config("llama2_7b")
local model = llama.build(cfg, {device = "meta"})
local ep32 = torch.export.export(model, {torch.zeros({1, 1}, torch.int64), 0})
fxdb.render(ep32, dir .. "/llama32.html", {title = "llama2_7b, 32 layers (meta)", progress = false})
print("pages written to " .. dir)
