-- tests/fuzz/gen_custom_ops.lua — custom-op statements for the random-program tester
-- (gen_programs.lua --custom-ops). Layer: tests. Loaded by gen_programs.lua with dofile; returns
-- a table of functions that work on its generator (`g`, a Gen) and its helpers.
--
-- A program made with --custom-ops defines, at the top of its source, the custom ops it calls
-- (namespace `fuzz`, torch.library as PyTorch spells it) and calls them from forward:
--   fuzz::scale_add   (Tensor x, Tensor y, int k) -> Tensor            custom_op, no mutation
--   fuzz::pair        (Tensor x) -> (Tensor, Tensor)                  define + impl + register_fake
--   fuzz::add_into    (Tensor(a!) x, Tensor y) -> ()                  define + impl + register_fake
--   fuzz::mul_ret     (Tensor(a!) x, int k) -> Tensor                 custom_op, mutates_args {"x"}
--   fuzz::update_two  (Tensor(a!) x, Tensor(b!) z, Tensor y) -> Tensor  two mutated arguments
--   fuzz::add_twice   (Tensor(a!) x, Tensor y) -> Tensor              CompositeImplicitAutograd
--                                                                     calling fuzz::add_into
--   fuzz::log         (Tensor x) -> ()                                effectful (ORDERED)
--   fuzz::log_scaled  (Tensor x) -> Tensor                            effectful, with a value
-- Mutated arguments are anything writable the generator holds: inputs, buffers, views of them.
-- Tensors read by a mutating op never share storage with its mutated arguments (cloned when
-- they may), nor do two mutated arguments: PyTorch leaves aliasing between the arguments of a
-- mutating custom op undefined. The effectful ops append a line to the global `fuzz_log`;
-- gen_programs.lua compares that log between eager and every program run (same calls, same
-- order, same values).

local C = {}

-- name -> {def = source lines defining it (guarded, so a program loads more than once),
--          needs = other ops it calls}
local DEFS = {
  scale_add = {[[
torch.library.custom_op("fuzz::scale_add", function(x, y, k) return x * k + y end,
  {schema = "(Tensor x, Tensor y, int k) -> Tensor", mutates_args = {}})
  :register_fake(function(x, y, k) return x * k + y end)]]},
  pair = {[[
torch.library.define("fuzz::pair", "(Tensor x) -> (Tensor, Tensor)")
torch.library.impl("fuzz::pair", "cpu", function(x) return -x, x * 2 end)
torch.library.register_fake("fuzz::pair", function(x) return -x, x * 2 end)]]},
  add_into = {[[
torch.library.define("fuzz::add_into", "(Tensor(a!) x, Tensor y) -> ()")
torch.library.impl("fuzz::add_into", "cpu", function(x, y) x:add_(y) end)
torch.library.register_fake("fuzz::add_into", function(x, y) end)]]},
  mul_ret = {[[
torch.library.custom_op("fuzz::mul_ret", function(x, k) x:mul_(k); return x + 1 end,
  {schema = "(Tensor(a!) x, int k) -> Tensor", mutates_args = {"x"}})
  :register_fake(function(x, k) return x + 1 end)]]},
  update_two = {[[
torch.library.define("fuzz::update_two", "(Tensor(a!) x, Tensor(b!) z, Tensor y) -> Tensor")
torch.library.impl("fuzz::update_two", "cpu", function(x, z, y)
  x:add_(y)
  z:sub_(1)
  return y * 2
end)
torch.library.register_fake("fuzz::update_two", function(x, z, y) return y * 2 end)]]},
  add_twice = {[[
torch.library.define("fuzz::add_twice", "(Tensor(a!) x, Tensor y) -> Tensor")
torch.library.impl("fuzz::add_twice", "CompositeImplicitAutograd", function(x, y)
  torch.ops.fuzz.add_into(x, y)
  torch.ops.fuzz.add_into(x, y)
  return x + 0
end)]], needs = {"add_into"}},
  log = {[[
torch.library.define("fuzz::log", "(Tensor x) -> ()")
torch.library.impl("fuzz::log", "cpu", function(x)
  fuzz_log[#fuzz_log + 1] = "log " .. table.concat(x.shape, "x") .. " " .. x:to(torch.float64):sum():item()
end)
torch.library.register_fake("fuzz::log", function(x) end)
torch.library._register_effectful_op("fuzz::log")]]},
  log_scaled = {[[
torch.library.define("fuzz::log_scaled", "(Tensor x) -> Tensor")
torch.library.impl("fuzz::log_scaled", "cpu", function(x)
  fuzz_log[#fuzz_log + 1] = "log_scaled " .. table.concat(x.shape, "x") .. " " .. x:to(torch.float64):sum():item()
  return x * 3
end)
torch.library.register_fake("fuzz::log_scaled", function(x) return x * 3 end)
torch.library._register_effectful_op("fuzz::log_scaled")]]},
}

-- The source defining the ops of `names` (a set) and those they call, each once per process.
function C.prelude(names)
  local want, order = {}, {}
  local function add(n)
    if want[n] then return end
    for _, d in ipairs(DEFS[n].needs or {}) do add(d) end
    want[n] = true
    order[#order + 1] = n
  end
  local sorted = {}
  for n in pairs(names) do sorted[#sorted + 1] = n end
  table.sort(sorted)
  for _, n in ipairs(sorted) do add(n) end
  if #order == 0 then return nil end
  local L = {"fuzz_log = fuzz_log or {}"}
  for _, n in ipairs(order) do
    L[#L + 1] = 'if not rawget(rawget(torch.ops, "fuzz") or {}, "' .. n .. '") then'
    for line in DEFS[n][1]:gmatch("[^\n]+") do L[#L + 1] = "  " .. line end
    L[#L + 1] = "end"
  end
  return table.concat(L, "\n")
end

-- Defines an op in this process (the generator calls the ops eagerly while generating).
local function ensure(g, name)
  if g.p.custom_ops[name] then return end
  g.p.custom_ops[name] = true
  assert(load(C.prelude({[name] = true}), "=custom ops", "t"))()
end

-- A tensor operand read by an op that writes the tensors of `bases`: a variable whose shape
-- broadcasts to `shape` (any shape when shape is nil), cloned when it may share storage with
-- a written tensor; nil when there is none.
local function read_operand(g, H, shape, bases)
  local v = g:pick_var(function(_, t) return shape == nil or H.broadcasts_to(t.shape, shape) end)
  if not v then return nil end
  for _, b in ipairs(bases) do
    if v.base == b then return v.expr .. ":clone()" end
  end
  return v.expr
end

-- A statement calling a custom op, or nil; with the new variable it binds, if any.
-- H: the generator's helpers {R, broadcasts_to}.
function C.stmt(g, H)
  local R = H.R
  local op = R.pick{"scale_add", "pair", "add_into", "add_into", "mul_ret", "update_two",
                    "update_two", "add_twice", "log", "log_scaled"}
  local text, name, var_kind
  local call = "torch.ops.fuzz." .. op
  if op == "scale_add" or op == "log_scaled" or op == "log" or op == "pair" then
    local a = g:pick_var()
    if op == "scale_add" then
      local ta = g:value(a.expr)
      local y = read_operand(g, H, ta.shape, {})
      if not y then return nil end
      text = call .. "(" .. a.expr .. ", " .. y .. ", " .. R.int(-3, 3) .. ")"
    else
      text = call .. "(" .. a.expr .. ")"
    end
    var_kind = op ~= "log" and "fresh" or nil
  else
    local dst = g:writable()
    if not dst then return nil end
    local t = g:value(dst.expr)
    if op == "mul_ret" then
      text = call .. "(" .. dst.expr .. ", " .. R.int(-2, 3) .. ")"
      var_kind = "fresh"
    elseif op == "add_into" or op == "add_twice" then
      local y = read_operand(g, H, t.shape, {dst.base})
      if not y then return nil end
      text = call .. "(" .. dst.expr .. ", " .. y .. ")"
      var_kind = op == "add_twice" and "fresh" or nil
    else -- update_two: a second written tensor on another base
      local z = g:writable(function(v) return v.base ~= dst.base end)
      if not z then return nil end
      local y = read_operand(g, H, t.shape, {dst.base, z.base})
      if not y then return nil end
      text = call .. "(" .. dst.expr .. ", " .. z.expr .. ", " .. y .. ")"
      var_kind = "fresh"
    end
  end
  ensure(g, op)
  if op == "add_twice" then ensure(g, "add_into") end
  local stmt
  if var_kind then
    name = g:fresh_name()
    if op == "pair" then
      -- one of the two results (Lua's select)
      stmt = {lhs = name, rhs = "select(" .. R.int(1, 2) .. ", " .. text .. ")"}
    else
      stmt = {lhs = name, rhs = text}
    end
  else
    stmt = {text = text}
  end
  if not g:try(stmt) then return nil end
  if not name then return stmt end
  return stmt, {expr = name, base = "fresh:" .. name, kind = "fresh"}
end

-- The effectful ops' log of a program run against eager's (fail(stage, detail) raises).
function C.compare_log(fail, stage, got, want)
  for i = 1, math.max(#got, #want) do
    if got[i] ~= want[i] then
      fail(stage, string.format("effect log line %d: got %s, expected %s (eager's log: %s)", i,
        tostring(got[i]), tostring(want[i]), table.concat(want, "; ")))
    end
  end
end

return C
