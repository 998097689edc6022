#!/usr/bin/env bash
# tests/pt2/run.sh — PT2 archives: the save/load round trip over every example and peer case,
# then tests/pt2/test_*.lua (hand-built archives, the legacy layout, malformed files) and
# tests/pt2/test_cli.sh (fxdb model.pt2, :load, --json).
# Layer: tests. Usage: tests/pt2/run.sh BUILD. Ends with "pt2: N passed, N failed".
set -u
build=${1:?usage: tests/pt2/run.sh BUILD}
fxdb="$build/fxdb"
passed=0
failed=0
for run in examples/*.lua tests/peer/test_*.lua tests/lua/test_dynamic.lua tests/lua/test_unbacked.lua tests/lua/test_conv.lua tests/lua/test_custom_ops.lua tests/lua/test_effects.lua; do
  for mode in functional training; do
    f=$run
    out=$(NO_COLOR=1 "$fxdb" tests/pt2/roundtrip.lua "$f" "$mode" 2>&1)
    line=$(printf '%s\n' "$out" | grep -E '^roundtrip .*: [0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/p')
    n=$(printf '%s' "$line" | sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/p')
    if [ -z "$line" ]; then p=0; n=1; fi
    if [ "$n" -ne 0 ]; then printf '%s\n' "$out" | grep -A30 'ROUNDTRIP FAIL\|script error' | head -60; fi
    echo "roundtrip $f ($mode): $p passed, $n failed"
    passed=$((passed + p))
    failed=$((failed + n))
  done
done
for f in tests/pt2/test_*.lua; do
    [ -f "$f" ] || continue
    out=$(NO_COLOR=1 "$fxdb" "$f" 2>&1)
    rc=$?
    line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | sed -nE 's/.*([^0-9]|^)([0-9]+) passed, ([0-9]+) failed.*/\2/p')
    n=$(printf '%s' "$line" | sed -nE 's/.*([^0-9]|^)([0-9]+) passed, ([0-9]+) failed.*/\3/p')
    if [ -z "$line" ]; then p=0; n=1; fi
    if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then n=1; fi
    if [ "$n" -ne 0 ]; then printf '%s\n' "$out" | tail -n 40; fi
    echo "$f: $p passed, $n failed"
    passed=$((passed + p))
    failed=$((failed + n))
done
out=$(tests/pt2/test_cli.sh "$build" 2>&1)
line=$(printf '%s\n' "$out" | tail -n 1)
p=$(printf '%s' "$line" | sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/p')
n=$(printf '%s' "$line" | sed -nE 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/p')
if [ -z "$p" ]; then p=0; n=1; fi
if [ "$n" -ne 0 ]; then printf '%s\n' "$out" | grep FAIL; fi
echo "$line"
passed=$((passed + p))
failed=$((failed + n))
echo "pt2: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
