-- tests/lua/test_api_check.lua — every public function of fxdb.*, torch.* (torch.export,
-- torch.library, torch.linalg, torch.ops.higher_order), nn.* and nn.functional.*, and the
-- constructors of nn's classes, check their arguments: a sweep of wrong argument types over all of
-- them asserts that each failure is an fxdb error object with a kind (never a raw internal Lua
-- error), and unknown or misspelled options are errors naming the option and the closest valid
-- one. Layer: tests.
local T = dofile("tests/lua/harness.lua")
local FILE = "tests/lua/test_api_check.lua"

local TABLES = {"fxdb", "torch", "torch.export", "torch.export.dynamic_shapes", "torch.library",
                "torch.linalg", "torch.ops.higher_order", "nn", "nn.functional"}

local function publics()
  local out = {}
  for _, tname in ipairs(TABLES) do
    local t = load("return " .. tname)()
    for k, f in next, t do -- nn.functional's own functions (the others are torch's)
      if type(k) == "string" and type(f) == "function" and not k:match("^_") then
        out[#out + 1] = {name = tname .. "." .. k, f = f}
      end
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- nn's classes with a constructor of their own (nn.Linear; not nn.Module, nor nn.ReLU which
-- takes nothing)
local function classes()
  local out = {}
  for k, cls in pairs(nn) do
    if type(cls) == "table" and k:match("^%u") and k ~= "Module" and cls.init ~= nn.Module.init then
      out[#out + 1] = {name = "nn." .. k, f = cls}
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

T.test("every public Lua function has a declared signature (lua/check.lua)", function()
  local missing = {}
  for _, p in ipairs(publics()) do
    local info = debug.getinfo(p.f, "S")
    if info.what == "Lua" and info.source ~= "=[fxdb check]" and info.source ~= "=[fxdb not_yet]"
       and not (p.name:match("^nn%.") and p.name:match("^nn%.%u")  and info.source == "=[fxdb nn]" and false) then
      missing[#missing + 1] = p.name .. " (" .. info.short_src .. ":" .. info.linedefined .. ")"
    end
  end
  T.eq(table.concat(missing, ", "), "")
end)

T.test("every nn class with a constructor has a declared signature (lua/check.lua)", function()
  local missing = {}
  for _, c in ipairs(classes()) do
    if not fxdb._argcheck.CLASS_SIGNATURES[c.name] then missing[#missing + 1] = c.name end
  end
  T.eq(table.concat(missing, ", "), "")
  T.truthy(#classes() >= 10, #classes() .. " classes")
end)

-- functions the sweep leaves alone: they print, or change process-wide settings on any value
local SKIP = {["fxdb.print"] = true, ["torch.set_printoptions"] = true, ["fxdb.quit"] = true,
              ["torch.manual_seed"] = true, ["torch.set_default_dtype"] = true,
              ["torch.set_default_device"] = true}

T.test("argument-type sweep: every failure is an fxdb error with a kind", function()
  local M = nn.Module:extend("SweepM")
  function M:init() self:register_buffer("b", torch.zeros(3)) end
  function M:forward(x) self.b:add_(x); return x * 2 end
  local m = M()
  local ep = torch.export.export(m, {torch.ones(3)})
  local wrong = {0, 2.5, "zz", true, {}, torch.ones(2), function() end}
  local calls, failures, raw = 0, 0, {}
  local targets = publics()
  for _, c in ipairs(classes()) do targets[#targets + 1] = c end
  for _, p in ipairs(targets) do
    if not SKIP[p.name] then
      for pos = 1, 3 do
        for _, v in ipairs(wrong) do
          local args = p.name:match("^fxdb%.") and {ep, {torch.ones(3)}} or {m, {torch.ones(3)}}
          args[pos] = v
          calls = calls + 1
          local ok, e = pcall(p.f, args[1], args[2], args[3])
          torch.set_grad_enabled(true)
          if fxdb.session then fxdb.kill() end
          if not ok then
            failures = failures + 1
            -- an error of the test's own module code (no_grad(m, true) runs m) is the caller's
            local own = type(e) == "string" and e:sub(1, #FILE) == FILE
            if not own and (type(e) ~= "table" or type(e.kind) ~= "string") then
              raw[#raw + 1] = string.format("%s #%d = %s: %s", p.name, pos, type(v), tostring(e))
            end
          end
        end
      end
    end
  end
  print(string.format("  argument sweep: %d functions and constructors, %d calls, %d errors, %d raw",
                      #targets, calls, failures, #raw))
  T.eq(table.concat(raw, "\n", 1, math.min(#raw, 40)), "")
end)

T.test("argument errors name the function, the argument and what was expected, at the user's line", function()
  local line = debug.getinfo(1, "l").currentline + 1
  local ok, e = pcall(fxdb.run, nil, 5)
  T.falsy(ok)
  T.eq(e.kind, "argument")
  T.eq(tostring(e), "bad argument #2 'args' to 'fxdb.run' (table expected, got number)")
  T.eq(e.location, FILE .. ":" .. line)
  ok, e = pcall(torch.export.export, 42)
  T.eq(tostring(e), "bad argument #1 'mod' to 'torch.export.export' (Module expected, got number)")
  ok, e = pcall(fxdb.where, 1)
  T.eq(tostring(e), "fxdb.where() takes 0 arguments but 1 were given")
  ok, e = pcall(fxdb.node, torch.ones(1))
  T.eq(tostring(e), "bad argument #1 'name' to 'fxdb.node' (string expected, got Tensor)")
  line = debug.getinfo(1, "l").currentline + 1
  ok, e = pcall(nn.Linear, 3, "2")           -- a constructor
  T.eq(tostring(e), "bad argument #2 'out_features' to 'nn.Linear' (integer expected, got string)")
  T.eq(e.location, FILE .. ":" .. line)
  ok, e = pcall(nn.GroupNorm, 3, 4)          -- a value PyTorch refuses: its message
  T.eq(e.kind, "argument")
  T.eq(tostring(e), "num_channels must be divisible by num_groups")
  ok, e = pcall(torch.ops.higher_order.map, 3, torch.ones(2))
  T.eq(tostring(e), "bad argument #1 'f' to 'torch.ops.higher_order.map' (callable expected, got number)")
  ok, e = pcall(fxdb.provenance, 3, "x")   -- a C function: the same kind of error
  T.eq(e.kind, "argument")
  T.truthy(tostring(e):find("bad argument #1 to 'fxdb.provenance' (ExportedProgram expected, got number)", 1, true), tostring(e))
end)

T.test("unknown or misspelled options name the option and the closest valid one", function()
  local M = nn.Module:extend("OptM")
  function M:forward(x) return x + 1 end
  local m = M()
  local ok, e = pcall(torch.export.export, m, {torch.ones(2)}, {strcit = false})
  T.falsy(ok)
  T.eq(e.kind, "unknown_option")
  T.truthy(tostring(e):find("torch.export.export: unknown option 'strcit' (did you mean 'strict'?)", 1, true), tostring(e))
  ok, e = pcall(torch.export.export, m, {torch.ones(2)}, {dynamic_shape = {}})
  T.truthy(tostring(e):find("unknown option 'dynamic_shape' (did you mean 'dynamic_shapes'?)", 1, true), tostring(e))
  ok, e = pcall(torch.export.export, m, {torch.ones(2)}, {zzzz = 1})
  T.truthy(tostring(e):find("unknown option 'zzzz' (valid options: strict, real", 1, true), tostring(e))
  local ep = torch.export.export(m, {torch.ones(2)})
  ok, e = pcall(fxdb.run, ep, {torch.ones(2)}, {stpe = true})
  T.truthy(tostring(e):find("fxdb.run: unknown option 'stpe' (did you mean 'step'?)", 1, true), tostring(e))
  ok, e = pcall(ep.module, ep, {reinplac = true})
  T.eq(e.kind, "unknown_option")
  T.truthy(tostring(e):find("module: unknown option 'reinplac' (did you mean 'reinplace'?)", 1, true), tostring(e))
  ok, e = pcall(fxdb.trace, m, {torch.ones(2)}, {rael = true})
  T.truthy(tostring(e):find("did you mean 'real'?", 1, true), tostring(e))
  -- constructors and F functions: their keyword tables too
  ok, e = pcall(nn.Linear, 3, 2, {bais = false})
  T.eq(e.kind, "unknown_option")
  T.truthy(tostring(e):find("nn.Linear: unknown option 'bais' (did you mean 'bias'?)", 1, true), tostring(e))
  ok, e = pcall(nn.Conv2d, 3, 8, 3, {strid = 2})
  T.truthy(tostring(e):find("nn.Conv2d: unknown option 'strid' (did you mean 'stride'?)", 1, true), tostring(e))
  ok, e = pcall(nn.functional.dropout, torch.ones(2), {trainig = false})
  T.truthy(tostring(e):find("unknown option 'trainig' (did you mean 'training'?)", 1, true), tostring(e))
  T.truthy(pcall(nn.Conv2d, 3, 8, {3, 3}, {stride = 2, padding = 1, bias = false}))
  T.truthy(pcall(nn.BatchNorm1d, 4, {momentum = false}))
  -- every valid option is accepted; dynamic_shapes is a valid export option
  for _, k in ipairs(fxdb._argcheck.OPTIONS.export) do
    T.truthy(pcall(fxdb._check_options, "export", {[k] = false}, fxdb._argcheck.OPTIONS.export), k)
  end
end)

T.done()
