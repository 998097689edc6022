#!/usr/bin/env bash
# tests/fuzz/run.sh — the random-program tester as a test suite: 1,000 programs, seeds 1..1000.
# Layer: tests. Usage: tests/fuzz/run.sh BUILD [N [SEED]]   (from the repo root; run_all.sh calls it)
# Ends with gen_programs.lua's "fuzz: N passed, N failed, N skipped" line; exits 1 on a failure
# (the failing program is shrunk and printed with its seed). `make fuzz-programs N=...` runs more.
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
NO_COLOR=1 "$fxdb" tests/fuzz/gen_programs.lua "$n" "$seed"
