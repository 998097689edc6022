-- examples/lessons/09_dynamic_shapes.lua — lesson 9: dynamic shapes: a Dim makes an input size
-- symbolic, the program runs at other sizes, and a program that pins the size is reported with
-- its suggested fixes. Run: build/fxdb --lesson 9.
return {
  title = "Dynamic shapes",
  {"A Dim makes a size symbolic", [[
Without dynamic_shapes, export specializes every size to the example's. A torch.export.Dim names
an input dim that may vary: in the graph it becomes a symbol (s0), the placeholder's type reads
f32[s0, 4], and sizes computed from it are nodes of the graph.]],
  function()
    Pairs = nn.Module:extend("Pairs")
    function Pairs:forward(x)
      local n = x:size(0)                  -- a SymInt while tracing: s0
      return x:view(n * 2, 2):relu()
    end
    m = Pairs()
    batch = torch.export.Dim("batch", {min = 2, max = 64})
    ep = torch.export.export(m, {torch.randn(3, 4)}, {dynamic_shapes = {x = {[0] = batch}}})
    print(ep)
  end},
  {"Symbolic sizes in the graph", [[
The program reads the size it needs from its input at run time: aten.sym_size.int gives s0, and
the multiplication is an operator.mul node whose value is the expression 2*s0. The range
constraints say which values of each symbol the program was exported for: the Dim's range.]],
  function()
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "call_function" then
        print(string.format("%-14s %-28s %s", n.name, tostring(n.target), tostring(n.meta.val)))
      end
    end
    print("range_constraints:", ep.range_constraints)
  end},
  {"Running at other sizes", [[
One exported program serves every size in range: run it at two batch sizes it was not traced
with. Before the first node, the interpreter binds s0 to the input's size and checks it against
the range constraints, so a size out of range is refused with PyTorch's message.]],
  function()
    for _, b in ipairs({2, 7}) do
      local x = torch.randn(b, 4)
      local out = fxdb.run(ep, {x}).outputs[1]
      print(("batch %d: output %s, equal to eager: %s"):format(b, tostring(out.shape),
            tostring((out - m(x)):abs():max():item() == 0)))
    end
    local ok, err = pcall(fxdb.run, ep, {torch.randn(65, 4)})
    print("batch 65:", err.kind, "-", err.message)
  end},
  {"A program that pins the size", [[
Lua's == never compares a SymInt with a number (it is false without asking fxdb), so a size test
in forward is written torch.sym_eq(n, 4), which decides under the example and records a guard.
A guard that fixes a Dim's value contradicts dynamic_shapes: export ends with a
ConstraintViolation error whose "Suggested fixes:" say how to change the spec.]],
  function()
    Square = nn.Module:extend("Square")
    function Square:forward(x)
      local n = x:size(0)
      print("  in forward: n =", n, " n == 4:", n == 4, " torch.sym_eq(n, 4):", torch.sym_eq(n, 4))
      if torch.sym_eq(n, 4) then return x:t() end
      return x
    end
    spec = {x = {[0] = torch.export.Dim("batch", {max = 64})}}
    ok, err = pcall(torch.export.export, Square(), {torch.randn(4, 4)}, {dynamic_shapes = spec})
    print(err.kind)
    print(err.message)
  end},
  {"Applying the suggested fixes", [[
refine_dynamic_shapes_from_suggested_fixes reads the fixes from the error and returns the spec
with them applied; exporting with it succeeds. Here the fix is a constant, so the program is
static again: the placeholder is f32[4, 4] and there are no range constraints.]],
  function()
    fixed = torch.export.refine_dynamic_shapes_from_suggested_fixes(err, spec)
    print("refined spec: x[0] =", fixed.x[0])
    ep = torch.export.export(Square(), {torch.randn(4, 4)}, {dynamic_shapes = fixed})
    print(ep)
  end},
}
