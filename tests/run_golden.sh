#!/usr/bin/env bash
# tests/run_golden.sh — REPL transcripts: feeds tests/golden/NAME.in to fxdb on stdin and compares
# stdout+stderr with tests/golden/NAME.out byte for byte.
# Layer: tests. Usage: tests/run_golden.sh BUILD [NAME...]   (from the repo root)
# When tests/golden/NAME.lua exists, fxdb runs as `fxdb -i tests/golden/NAME.lua` (the script
# first, then the transcript in its globals). Runs with NO_COLOR=1 and HOME set to a fresh
# temporary folder (no history file of the user is read or written). A mismatch shows a unified
# diff. UPDATE=1 rewrites the .out files instead of comparing. Ends with
# "golden: N passed, N failed"; exits 1 when anything failed.
set -u

build=${1:?usage: tests/run_golden.sh BUILD [NAME...]}
shift
fxdb="$build/fxdb"
passed=0
failed=0
if [ ! -x "$fxdb" ]; then
    echo "run_golden: $fxdb is missing"
    echo "golden: 0 passed, 1 failed"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ $# -gt 0 ]; then
    ins=()
    for n in "$@"; do ins+=("tests/golden/$n.in"); done
else
    ins=(tests/golden/*.in)
fi

for inp in "${ins[@]}"; do
    [ -f "$inp" ] || continue
    name=$(basename "$inp" .in)
    exp="tests/golden/$name.out"
    script="tests/golden/$name.lua"
    mkdir -p "$tmp/home"
    if [ -f "$script" ]; then
        NO_COLOR=1 HOME="$tmp/home" ${VALGRIND:-} "$fxdb" -i "$script" < "$inp" > "$tmp/$name.actual" 2>&1
    else
        NO_COLOR=1 HOME="$tmp/home" ${VALGRIND:-} "$fxdb" < "$inp" > "$tmp/$name.actual" 2>&1
    fi
    if [ "${UPDATE:-0}" = 1 ]; then
        cp "$tmp/$name.actual" "$exp"
        echo "$name: updated"
        passed=$((passed + 1))
    elif [ -f "$exp" ] && cmp -s "$exp" "$tmp/$name.actual"; then
        echo "$name: ok"
        passed=$((passed + 1))
    else
        echo "$name: FAILED"
        if [ -f "$exp" ]; then
            diff -u "$exp" "$tmp/$name.actual" | head -n 80
        else
            echo "  (no $exp; run with UPDATE=1 to create it)"
        fi
        failed=$((failed + 1))
    fi
done

echo "golden: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
