#!/usr/bin/env bash
# tests/run_lua.sh — runs the Lua test files and the seed cases with the fxdb binary.
# Layer: tests. Usage: tests/run_lua.sh BUILD   (from the repo root)
# Each tests/lua/test_*.lua and tests/seeds/*.lua runs as `$BUILD/fxdb FILE` and should print a
# line "N passed, N failed" (the last such line counts). A file without that line counts as one
# pass when it exits 0 and as one failure when it crashes or exits non-zero; a file whose line
# reports no failure but that exits non-zero gets one more failure. Output of failing files is
# shown. Ends with "lua: N passed, N failed"; exits 1 when anything failed.
set -u

build=${1:?usage: tests/run_lua.sh BUILD}
fxdb="$build/fxdb"
passed=0
failed=0
if [ ! -x "$fxdb" ]; then
    echo "run_lua: $fxdb is missing (build it with make BUILD=$build $fxdb)"
    echo "lua: 0 passed, 1 failed"
    exit 1
fi

for f in tests/lua/test_*.lua tests/seeds/*.lua; do
    [ -f "$f" ] || continue
    out=$(NO_COLOR=1 "$fxdb" "$f" 2>&1)
    rc=$?
    line=$(printf '%s\n' "$out" | grep -E '(^|[^0-9])[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ -n "$line" ]; then
        p=$(printf '%s' "$line" | sed -E 's/^(.*[^0-9])?([0-9]+) passed, ([0-9]+) failed.*/\2/')
        n=$(printf '%s' "$line" | sed -E 's/^(.*[^0-9])?([0-9]+) passed, ([0-9]+) failed.*/\3/')
        if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then n=1; fi
    elif [ "$rc" -eq 0 ]; then
        p=1; n=0
    else
        p=0; n=1
    fi
    if [ "$n" -ne 0 ]; then
        printf '%s\n' "$out" | tail -n 40
        [ "$rc" -ne 0 ] && echo "$f: exit status $rc"
    fi
    echo "$f: $p passed, $n failed"
    passed=$((passed + p))
    failed=$((failed + n))
done

echo "lua: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
