#!/usr/bin/env bash
# tests/peer/run.sh — runs the ExportDB ports (tests/peer/test_*.lua) with the fxdb binary.
# Layer: tests. Usage: tests/peer/run.sh BUILD   (from the repo root; tests/run_all.sh calls it)
# Each file prints "FILE: N passed, N failed" and maybe "(N pending)": tests of behaviour that
# needs code outside tests/ (listed in tests/peer/README.md) count as pending, not as failures.
# A file without that line counts as one failure. Output of failing files is shown. Ends with
# "peer: N passed, N failed, N pending"; exits 1 when anything failed.
set -u

build=${1:?usage: tests/peer/run.sh BUILD}
fxdb="$build/fxdb"
passed=0
failed=0
pending=0
if [ ! -x "$fxdb" ]; then
    echo "peer: $fxdb is missing (build it with make BUILD=$build $fxdb)"
    echo "peer: 0 passed, 1 failed"
    exit 1
fi

for f in tests/peer/test_*.lua; do
    [ -f "$f" ] || continue
    out=$(NO_COLOR=1 "$fxdb" "$f" 2>&1)
    rc=$?
    line=$(printf '%s\n' "$out" | grep -E '(^|[^0-9])[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ -n "$line" ]; then
        p=$(printf '%s' "$line" | sed -E 's/^(.*[^0-9])?([0-9]+) passed, ([0-9]+) failed.*/\2/')
        n=$(printf '%s' "$line" | sed -E 's/^(.*[^0-9])?([0-9]+) passed, ([0-9]+) failed.*/\3/')
        k=$(printf '%s' "$line" | sed -nE 's/.*\(([0-9]+) pending\).*/\1/p')
        if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then n=1; fi
    else
        p=0; n=1; k=
    fi
    if [ "$n" -ne 0 ]; then
        printf '%s\n' "$out" | tail -n 40
        [ "$rc" -ne 0 ] && echo "$f: exit status $rc"
    fi
    printf '%s\n' "$out" | grep -E '^(pending: |NOTE )'
    echo "$f: $p passed, $n failed${k:+ ($k pending)}"
    passed=$((passed + p))
    failed=$((failed + n))
    pending=$((pending + ${k:-0}))
done

echo "peer: $passed passed, $failed failed, $pending pending"
[ "$failed" -eq 0 ]
