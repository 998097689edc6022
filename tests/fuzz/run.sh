#!/usr/bin/env bash
# tests/fuzz/run.sh — the random-program tester as a test suite: 1,000 programs (seeds 1..1000),
# then the same seeds with dynamic shapes (--dynamic: exported once with Dim.AUTO dims, run at
# other sizes inside the range constraints, compared with eager at each), then seeds 1..400 of
# programs that define and call custom ops (--custom-ops), static and dynamic.
# Layer: tests. Usage: tests/fuzz/run.sh BUILD [N [SEED]]   (from the repo root; run_all.sh calls it)
# Ends with "fuzz: N passed, N failed" over both runs (each run prints gen_programs.lua's own
# "fuzz: N passed, N failed, N skipped" line first); exits 1 on a failure (the failing program is
# shrunk and printed with its seed). `make fuzz-programs N=...` runs more.
set -u

build=${1:?usage: tests/fuzz/run.sh BUILD [N [SEED]]}
n=${2:-1000}
seed=${3:-1}
fxdb="$build/fxdb"
if [ ! -x "$fxdb" ]; then
    echo "fuzz: $fxdb is missing (build it with make BUILD=$build $fxdb)"
    echo "fuzz: 0 passed, 1 failed"
    exit 1
fi
passed=0
failed=0
status=0
for mode in "" --dynamic --custom-ops "--custom-ops --dynamic"; do
    count=$n
    # programs defining and calling custom ops: the first 400 seeds (about 10 s of CPU)
    case $mode in --custom-ops*) count=$((n < 400 ? n : 400)) ;; esac
    out=$(NO_COLOR=1 "$fxdb" tests/fuzz/gen_programs.lua "$count" "$seed" $mode) || status=1
    printf '%s\n' "$out" | sed "s/^fuzz: /fuzz${mode:+ ($mode)}: /"
    line=$(printf '%s\n' "$out" | grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' | tail -n 1)
    if [ -z "$line" ]; then
        failed=$((failed + 1))
        continue
    fi
    passed=$((passed + $(printf '%s' "$line" | sed -E 's/^fuzz: ([0-9]+) passed.*/\1/')))
    failed=$((failed + $(printf '%s' "$line" | sed -E 's/^fuzz: [0-9]+ passed, ([0-9]+) failed.*/\1/')))
done
echo "fuzz: $passed passed, $failed failed"
[ "$status" = 0 ] && [ "$failed" = 0 ]
