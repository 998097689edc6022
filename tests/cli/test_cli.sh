#!/usr/bin/env bash
# tests/cli/test_cli.sh — the command line of fxdb (docs/API.md §1): --version, --help, bad options,
# scripts with arguments, exit codes, -e (Lua and ':' commands), -i, and "-" for stdin.
# Layer: tests. Usage: tests/cli/test_cli.sh BUILD   (from the repo root; run_all.sh runs it)
# Ends with "cli: N passed, N failed"; exits 1 when anything failed.
set -u

build=${1:?usage: tests/cli/test_cli.sh BUILD}
fxdb="$build/fxdb"
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NO_COLOR=1 HOME="$tmp"

# expect NAME WANT_STATUS WANT_OUTPUT -- COMMAND...: stdout+stderr must equal WANT_OUTPUT
expect() {
    local name=$1 want_rc=$2 want=$3
    shift 4
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" = "$want_rc" ] && [ "$out" = "$want" ]; then
        echo "ok - $name"
        passed=$((passed + 1))
    else
        echo "FAILED - $name (status $rc, want $want_rc)"
        diff -u <(printf '%s\n' "$want") <(printf '%s\n' "$out") | tail -n +3 | head -n 30
        failed=$((failed + 1))
    fi
}

# expect_match NAME WANT_STATUS REGEX -- COMMAND...: some output line must match REGEX
expect_match() {
    local name=$1 want_rc=$2 re=$3
    shift 4
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" = "$want_rc" ] && printf '%s\n' "$out" | grep -Eq -- "$re"; then
        echo "ok - $name"
        passed=$((passed + 1))
    else
        echo "FAILED - $name (status $rc, want $want_rc; no line matches $re)"
        printf '%s\n' "$out" | head -n 20
        failed=$((failed + 1))
    fi
}

if [ ! -x "$fxdb" ]; then
    echo "cli: $fxdb is missing"
    echo "cli: 0 passed, 1 failed"
    exit 1
fi

cat > "$tmp/args.lua" <<'LUA'
print(#arg, arg[0], arg[1], arg[2], select('#', ...), ...)
print(arg[-1] ~= nil)
LUA
cat > "$tmp/fail.lua" <<'LUA'
print("before")
local t = nil
print(t.x)
LUA
cat > "$tmp/lib.lua" <<'LUA'
greeting = "hello from lib"
LUA

expect_match "--version" 0 '^fxdb [0-9]+\.[0-9]+\.[0-9]+ \(Lua 5\.4\.[0-9]+\)$' -- "$fxdb" --version
expect_match "--help prints usage on stdout" 0 '^usage: .*fxdb \[options\]' -- "$fxdb" --help
expect_match "bad option: message" 1 "unrecognized option '-x'" -- "$fxdb" -x
expect_match "bad option: usage on stderr" 1 '^usage:' -- "$fxdb" --frob
out=$("$fxdb" -x 2>/dev/null)
if [ -z "$out" ]; then echo "ok - bad option prints nothing on stdout"; passed=$((passed + 1));
else echo "FAILED - bad option prints on stdout: $out"; failed=$((failed + 1)); fi
expect_match "-e without a chunk" 1 "'-e' needs argument" -- "$fxdb" -e
expect "script gets arg and ..." 0 "2	$tmp/args.lua	a	b c	2	a	b c
true" -- "$fxdb" "$tmp/args.lua" a "b c"
expect_match "uncaught error exits 1" 1 "^error: .*fail.lua:3: attempt to index a nil value" -- "$fxdb" "$tmp/fail.lua"
expect_match "missing script exits 1" 1 "cannot open" -- "$fxdb" "$tmp/nosuch.lua"
expect "-e chunks run in order" 0 "1
2" -- "$fxdb" -e 'x = 1' -e 'print(x)' -e 'print(x + 1)'
expect_match "-e stops at the first error" 1 "^error: .*boom" -- "$fxdb" -e 'error("boom")' -e 'print("not reached")'
out=$("$fxdb" -e 'error("boom")' -e 'print("not reached")' 2>&1)
case "$out" in *"not reached"*) echo "FAILED - -e went on after an error"; failed=$((failed + 1)) ;;
*) echo "ok - nothing runs after a failing -e"; passed=$((passed + 1)) ;; esac
expect_match "-e runs a ':' command" 0 '^:graph \[raw' -- "$fxdb" -e ':help graph'
expect_match "-e ':' command error exits 1" 1 "unknown command ':nosuch'" -- "$fxdb" -e ':nosuch'
expect "-e ':quit' stops quietly" 0 "" -- "$fxdb" -e ':quit' -e 'print("no")'
cat > "$tmp/greet.lua" <<'LUA'
print(greeting)
LUA
expect "-e runs before the script, in the same globals" 0 "from -e" -- "$fxdb" -e 'greeting = "from -e"' "$tmp/greet.lua"
expect "-i runs the script then the REPL" 0 "hello from lib
14" -- bash -c "printf '=greeting\n=2*7\n' | '$fxdb' -i '$tmp/lib.lua'"
expect "-i opens the REPL even after the script failed" 0 "before
error: $tmp/fail.lua:3: attempt to index a nil value (local 't')
stack traceback:
	$tmp/fail.lua:3: in main chunk
	[C]: in ?
ok" -- bash -c "printf 'print(\"ok\")\n' | '$fxdb' -i '$tmp/fail.lua'"
expect "- runs stdin as a script" 0 "from stdin	x" -- bash -c "printf 'print(\"from stdin\", ...)\n' | '$fxdb' - x"
expect "REPL on a pipe: no prompt, no banner" 0 "3" -- bash -c "printf '=1+2\n' | '$fxdb'"
expect_match "REPL on a pipe: an error goes on, then exits 1" 1 "^after$" -- bash -c "printf 'error(\"boom\")\nprint(\"after\")\n' | '$fxdb'"
expect_match "REPL on a pipe: a failing ':' command exits 1" 1 "unknown command ':nosuch'" -- bash -c "printf ':nosuch\n=1\n' | '$fxdb'"
expect_match "REPL on a pipe: :load of a missing file names it" 1 "cannot open $tmp/nofile.lua" -- bash -c "printf ':load $tmp/nofile.lua\n' | '$fxdb'"
expect "script after -- may start with a dash" 1 "error: cannot open -x: No such file or directory" -- "$fxdb" -- -x

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
