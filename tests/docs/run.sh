#!/usr/bin/env bash
# tests/docs/run.sh — the manual against the repository and the program.
# Layer: tests. Usage: tests/docs/run.sh BUILD   (from the repo root; tests/run_all.sh runs it)
#   - every relative link of every Markdown file in the repository points at a file that exists
#     (and none leaves the repository)
#   - docs/API.md has an entry for every colon command and every public name of torch, nn,
#     torch.export and fxdb, and documents nothing that does not exist (check_reference.lua)
#   - every lesson runs to its end with `fxdb --lesson N` (stdin not a terminal: all steps)
# Prints "ok - " / "not ok - " lines and "N passed, N failed"; exit status 1 on a failure.
set -u
build=${1:?usage: tests/docs/run.sh BUILD}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
pass=0
fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "not ok - $1"; fail=$((fail + 1)); }

# links: [text](target) outside code spans; http(s)/mailto and pure #anchors are not files
nlinks=0
broken=()
while IFS= read -r -d '' md; do
    dir=$(dirname "$md")
    while IFS= read -r target; do
        target=${target%%#*}
        target=${target%% *}
        [ -z "$target" ] && continue
        case "$target" in http://* | https://* | mailto:*) continue ;; esac
        nlinks=$((nlinks + 1))
        resolved=$(realpath -m "$dir/$target")
        case "$resolved" in
        "$root"/*) [ -e "$resolved" ] || broken+=("$md -> $target") ;;
        *) broken+=("$md -> $target (outside the repository)") ;;
        esac
    done < <(sed -E 's/`[^`]*`//g' "$md" | grep -oE '\]\([^)]+\)' | sed -E 's/^\]\((.*)\)$/\1/')
done < <(git ls-files -z '*.md' 2>/dev/null || find . -name '*.md' -print0)
if [ ${#broken[@]} -eq 0 ]; then
    ok "$nlinks relative links in the Markdown files resolve"
else
    bad "broken links: ${broken[*]}"
fi
if grep -rn --include='*.md' '\.\./shared' . >/dev/null; then
    bad "a Markdown file refers to ../shared: $(grep -rln --include='*.md' '\.\./shared' . | tr '\n' ' ')"
else
    ok "no Markdown file refers to ../shared"
fi

# the reference: commands from the program's own completion of ":"
mapfile -t cmds < <("$build/fxdb" -e ':complete :')
out=$("$build/fxdb" tests/docs/check_reference.lua "${cmds[@]}" 2>&1)
echo "$out" | grep -E '^(not )?ok - '
p=$(echo "$out" | sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p')
f=$(echo "$out" | sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p')
if [ -z "$p" ]; then
    bad "check_reference.lua ran: $out"
else
    pass=$((pass + p))
    fail=$((fail + f))
fi

# lessons: `fxdb --lesson N` with stdin not a terminal runs every step; each must finish cleanly
# (their exact transcripts, through :lesson in the REPL, are tests/golden/lesson_NN)
for f in examples/lessons/[0-9][0-9]_*.lua; do
    [ -f "$f" ] || continue
    n=$((10#$(basename "$f" | cut -c1-2)))
    out=$(NO_COLOR=1 "$build/fxdb" --lesson "$n" < /dev/null 2>&1)
    rc=$?
    if [ "$rc" -eq 0 ] && echo "$out" | grep -q "^-- end of lesson $n;" && ! echo "$out" | grep -q '^error'; then
        ok "fxdb --lesson $n runs every step ($(basename "$f"))"
    else
        bad "fxdb --lesson $n (status $rc): $(echo "$out" | grep -m3 '^error')"
    fi
done
out=$("$build/fxdb" --lesson 99 < /dev/null 2>&1)
rc=$?
if [ "$rc" -eq 1 ] && echo "$out" | grep -q "no lesson 99"; then
    ok "fxdb --lesson 99: 'no lesson 99', status 1"
else
    bad "fxdb --lesson 99: status $rc, $out"
fi
out=$("$build/fxdb" --lesson 2>&1)
rc=$?
if [ "$rc" -eq 1 ] && echo "$out" | grep -q "'--lesson' needs argument"; then
    ok "fxdb --lesson without N: usage error"
else
    bad "fxdb --lesson without N: status $rc, $out"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
