#!/usr/bin/env bash
# tests/run_valgrind.sh — the unit tests and the REPL transcripts under valgrind (memcheck).
# Layer: tests. Usage: tests/run_valgrind.sh BUILD   (from the repo root; `make valgrind` and
# `make test` call it)
# Every unit test binary (tests/run_unit.sh) runs with full leak checking; the REPL transcripts
# (tests/run_golden.sh) count definite leaks only (Lua's own allocator pools show as "possibly
# lost"). tests/valgrind.supp names libgomp's and OpenBLAS's thread pools, which live until exit,
# and nothing else. Processes forked to lay out graphs (viz/viz_render.c) end with _exit and are
# not checked (--child-silent-after-fork). A valgrind error fails the test it happens in (exit
# status 99). Ends with
# "valgrind: N passed, N failed" over both runners; exits 1 when anything failed.
set -u

build=${1:?usage: tests/run_valgrind.sh BUILD}
vg="valgrind -q --error-exitcode=99 --leak-check=full --child-silent-after-fork=yes --suppressions=tests/valgrind.supp"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind: not installed (make deps installs it)"
    echo "valgrind: 0 passed, 1 failed"
    exit 1
fi
passed=0
failed=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
run() {   # $1 = VALGRIND prefix, rest = runner
    local prefix=$1 line
    shift
    VALGRIND="$prefix" "$@" 2>&1 | tee "$tmp"
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$tmp" | tail -n 1)
    if [ -z "$line" ]; then
        failed=$((failed + 1))
        return
    fi
    passed=$((passed + $(printf '%s' "$line" | sed -E 's/^(.*[^0-9])?([0-9]+) passed, ([0-9]+) failed.*/\2/')))
    failed=$((failed + $(printf '%s' "$line" | sed -E 's/^(.*[^0-9])?([0-9]+) passed, ([0-9]+) failed.*/\3/')))
}
start=$(date +%s)
run "$vg" tests/run_unit.sh "$build"
run "$vg --errors-for-leak-kinds=definite" tests/run_golden.sh "$build"
echo "valgrind: took $(($(date +%s) - start)) s"
echo "valgrind: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
