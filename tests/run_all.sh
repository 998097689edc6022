#!/usr/bin/env bash
# tests/run_all.sh — every test suite, each suite's summary, and one total.
# Layer: tests. Usage: tests/run_all.sh BUILD   (from the repo root; `make test` calls it)
# Suites: unit (C, cmocka), viz (Graphviz C tests), browser (the HTML viewer in headless
# Chromium), lua (tests/lua + tests/seeds), golden (REPL transcripts, lessons among them), cli
# (command-line options and exit codes), docs (links, the reference against the program), peer
# (ExportDB ports), pt2 (PT2 archives: round trips, hand-built and malformed files), fuzz (1,000
# random programs), libfuzzer (the libFuzzer targets a minute each) and valgrind (unit tests and
# REPL transcripts under memcheck), both only under `make test`, pty
# (line editing in a real terminal; only when tmux is installed). A suite that ends without its
# "N passed, N failed" line counts as one failure. The last line is the total, "N passed,
# N failed"; the exit status is 1 when anything failed.
set -u

build=${1:?usage: tests/run_all.sh BUILD}
here=$(cd "$(dirname "$0")" && pwd)
total_p=0
total_f=0
summary=()
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run_suite() {   # $1 = name, rest = command
    local name=$1
    shift
    echo "=== $name"
    local rc line p f
    "$@" 2>&1 | tee "$tmp/out"
    rc=${PIPESTATUS[0]}
    line=$(grep -E '(^|[^0-9])[0-9]+ passed, [0-9]+ failed' "$tmp/out" | tail -n 1)
    if [ -n "$line" ]; then
        p=$(printf '%s' "$line" | sed -E 's/^(.*[^0-9])?([0-9]+) passed, ([0-9]+) failed.*/\2/')
        f=$(printf '%s' "$line" | sed -E 's/^(.*[^0-9])?([0-9]+) passed, ([0-9]+) failed.*/\3/')
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    else
        p=0
        f=1
        echo "$name: no summary line (exit status $rc)"
    fi
    summary+=("$name: $p passed, $f failed")
    total_p=$((total_p + p))
    total_f=$((total_f + f))
}

run_suite unit "$here/run_unit.sh" "$build"
run_suite viz "$here/run_unit.sh" "$build" viz
run_suite browser "$here/viz/test_browser.sh" "$build"
run_suite lua "$here/run_lua.sh" "$build"
run_suite golden "$here/run_golden.sh" "$build"
run_suite cli "$here/cli/test_cli.sh" "$build"
run_suite docs "$here/docs/run.sh" "$build"
run_suite peer "$here/peer/run.sh" "$build"
run_suite pt2 "$here/pt2/run.sh" "$build"
run_suite fuzz "$here/fuzz/run.sh" "$build"
# FXDB_LIBFUZZER="FUZZBUILD SECS" (set by `make test`, after `make fuzz-build`): each libFuzzer
# target runs SECS seconds (tests/fuzz/libfuzzer.sh)
if [ -n "${FXDB_LIBFUZZER:-}" ]; then
    read -r fuzz_build fuzz_secs <<<"$FXDB_LIBFUZZER"
    FUZZ_SEED=${FUZZ_SEED:-1} run_suite libfuzzer "$here/fuzz/libfuzzer.sh" "$build" "$fuzz_build" "$fuzz_secs" safetensors repl load
else
    summary+=("libfuzzer: not run here (make test runs it; make fuzz runs it longer)")
fi
# FXDB_VALGRIND=1 (set by `make test`): the unit tests and REPL transcripts again under valgrind
if [ -n "${FXDB_VALGRIND:-}" ]; then
    run_suite valgrind "$here/run_valgrind.sh" "$build"
else
    summary+=("valgrind: not run here (make test and make valgrind run it)")
fi
if command -v tmux >/dev/null 2>&1; then
    run_suite pty "$here/pty/test_pty.sh" "$build"
else
    summary+=("pty: skipped (tmux is not installed)")
fi

echo "=== summary"
for s in "${summary[@]}"; do echo "$s"; done
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
