#!/usr/bin/env bash
# tests/run_unit.sh — runs the C unit test binaries and sums their results.
# Layer: tests. Usage: tests/run_unit.sh BUILD [viz]
#   BUILD   the build folder (binaries are $BUILD/tests/test_*)
#   viz     run only the Graphviz tests (test_viz*, or built from tests/viz/); without it, every
#           other test binary
# $VALGRIND, when set, prefixes every run (e.g. "valgrind -q --error-exitcode=99").
# Counts come from cmocka's "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)" lines, or a
# runner's own "N passed, N failed" line; a binary that exits non-zero without reporting a
# failure (crash, valgrind error) counts as one failure. Ends with "unit: N passed, N failed"
# (or "viz: ..."); exits 1 when anything failed.
set -u

build=${1:?usage: tests/run_unit.sh BUILD [viz]}
mode=${2:-unit}
label=$mode
passed=0
failed=0
ran=0

is_viz() {   # $1 = binary name
    case "$1" in test_viz*) return 0 ;; esac
    [ -f "tests/viz/$1.c" ] && [ ! -f "tests/unit/$1.c" ]
}

for bin in "$build"/tests/test_*; do
    [ -f "$bin" ] && [ -x "$bin" ] || continue
    name=$(basename "$bin")
    if [ "$mode" = viz ]; then is_viz "$name" || continue; else is_viz "$name" && continue; fi
    ran=$((ran + 1))
    out=$(${VALGRIND:-} "$bin" 2>&1)
    rc=$?
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
    if [ "$p" = 0 ] && [ "$f" = 0 ]; then
        line=$(printf '%s\n' "$out" | grep -E '^[^0-9]*[0-9]+ passed, [0-9]+ failed' | tail -n 1)
        if [ -n "$line" ]; then
            p=$(printf '%s' "$line" | sed -E 's/^[^0-9]*([0-9]+) passed, ([0-9]+) failed.*/\1/')
            f=$(printf '%s' "$line" | sed -E 's/^[^0-9]*([0-9]+) passed, ([0-9]+) failed.*/\2/')
        fi
    fi
    if [ "$rc" -ne 0 ] && [ "$f" = 0 ]; then
        f=1
        echo "$name: exited with status $rc without reporting a failure"
    fi
    if [ "$f" -ne 0 ]; then
        printf '%s\n' "$out" | tail -n 40
    fi
    echo "$name: $p passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
done

[ "$ran" -eq 0 ] && echo "$label: no test binaries in $build/tests"
echo "$label: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
