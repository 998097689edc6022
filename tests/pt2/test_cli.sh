#!/usr/bin/env bash
# tests/pt2/test_cli.sh — `fxdb model.pt2`, `:load model.pt2` and `fxdb --json FILE...`.
# Layer: tests. Usage: tests/pt2/test_cli.sh BUILD (tests/pt2/run.sh calls it). Prints
# "tests/pt2/test_cli.sh: N passed, N failed".
set -u
fxdb="${1:?usage: tests/pt2/test_cli.sh BUILD}/fxdb"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() {   # what, command status (0 = pass)
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok - $1"; else failed=$((failed + 1)); echo "FAIL - $1"; fi
}
has() { printf '%s' "$1" | grep -qF -- "$2"; }

cat > "$tmp/m.lua" <<'LUA'
local M = nn.Module:extend("M")
function M:init() self:register_buffer("state", torch.zeros(3)) end
function M:forward(x) self.state:mul_(x); return self.state + 1 end
torch.export.save(torch.export.export(M(), {torch.ones(3)}), arg[1])
LUA
NO_COLOR=1 "$fxdb" "$tmp/m.lua" "$tmp/m.pt2" >/dev/null 2>&1
ok "a script saves m.pt2" $([ -s "$tmp/m.pt2" ]; echo $?)

out=$(printf ':sig\n:why state\n:run\n' | NO_COLOR=1 "$fxdb" "$tmp/m.pt2" 2>&1)
rc=$?
ok "fxdb m.pt2 exits 0" $rc
ok "fxdb m.pt2 says the program is current" $(has "$out" "the exported program is current"; echo $?)
ok ":sig shows the signature" $(has "$out" "mul: BUFFER_MUTATION target='state'"; echo $?)
ok ":why state walks to the op" $(has "$out" "v1  mul = aten.mul.Tensor  from aten.mul_.Tensor"; echo $?)
ok ":run runs on zeros" $(has "$out" "output add = tensor([1., 1., 1.])"; echo $?)

out=$(printf ':render %s --why state\n' "$tmp/m.svg" | NO_COLOR=1 "$fxdb" "$tmp/m.pt2" 2>&1)
ok ":render draws the loaded program" $([ -s "$tmp/m.svg" ] && grep -q 'mul' "$tmp/m.svg"; echo $?)

out=$(printf ':load %s\n:graph\n' "$tmp/m.pt2" | NO_COLOR=1 "$fxdb" 2>&1)
ok ":load m.pt2 makes it current" $(has "$out" "torch.ops.aten.mul.Tensor(b_state, x)"; echo $?)

cat > "$tmp/d.lua" <<'LUA'
local M = nn.Module:extend("M")
function M:forward(x) local n = x:size(0); return torch.zeros({n + 1, 2}), x * 2 end
torch.export.save(torch.export.export(M(), {torch.ones(4, 3)},
  {dynamic_shapes = {x = {[0] = torch.export.Dim("b", {min = 2, max = 8})}}}), arg[1])
LUA
NO_COLOR=1 "$fxdb" "$tmp/d.lua" "$tmp/d.pt2" >/dev/null 2>&1
out=$(printf ':graph
:run
:why s0
' | NO_COLOR=1 "$fxdb" "$tmp/d.pt2" 2>&1)
ok "fxdb d.pt2: :graph shows the SymInt nodes" $(has "$out" 'call_function[target=operator.add](args = (%sym_size_int, 1)'; echo $?)
ok "fxdb d.pt2: :run runs on zeros at the example sizes" $(has "$out" "output mul = tensor([[0., 0., 0.],"; echo $?)
ok "fxdb d.pt2: :why s0 tells where the symbol came from" $(has "$out" "s0 = a size from L['x'].size()[0] (input x, dim 0)"; echo $?)

printf 'not a zip' > "$tmp/bad.pt2"
out=$(printf ':sig\n' | NO_COLOR=1 "$fxdb" "$tmp/bad.pt2" 2>&1)
rc=$?
ok "fxdb bad.pt2 exits 1" $([ $rc -eq 1 ]; echo $?)
ok "fxdb bad.pt2 names the file and the problem" $(has "$out" "bad.pt2: not a readable zip archive"; echo $?)

out=$(NO_COLOR=1 "$fxdb" --json "$tmp/m.pt2" "$tmp/m.lua" "$tmp/bad.pt2" 2>/dev/null)
rc=$?
ok "--json exits 1 when a file cannot be read" $([ $rc -eq 1 ]; echo $?)
ok "--json writes one document per file" $([ "$(printf '%s\n' "$out" | grep -c '^{.*}$')" -eq 3 ]; echo $?)
first=$(printf '%s\n' "$out" | sed -n 1p)
ok "--json: the signature" $(has "$first" '{"arg":"mul","kind":"BUFFER_MUTATION","target":"state"}'; echo $?)
ok "--json: op counts" $(has "$first" '"ops":{"aten.add.Tensor":1,"aten.mul.Tensor":1}'; echo $?)
ok "--json: mutations with provenance" $(has "$first" '"from_op":"aten.mul_.Tensor"'; echo $?)
second=$(printf '%s\n' "$out" | sed -n 2p)
ok "--json: a script's :check results" $(has "$second" '"check":{"entries":[{"max_abs_error":0,"ok":true'; echo $?)
ok "--json: a script's :report findings" $(has "$second" '"report":{"entries":'; echo $?)
third=$(printf '%s\n' "$out" | sed -n 3p)
ok "--json: an unreadable file is a document with its error" $(has "$third" '"error":'; echo $?)
out=$(NO_COLOR=1 "$fxdb" --json 2>&1)
ok "--json without files is an error" $(has "$out" "--json needs at least one FILE"; echo $?)

echo "tests/pt2/test_cli.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
