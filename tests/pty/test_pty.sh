#!/usr/bin/env bash
# tests/pty/test_pty.sh — the REPL in a real terminal: line editing, history, Tab completion,
# Ctrl-C and Ctrl-D, driven through tmux.
# Layer: tests. Usage: tests/pty/test_pty.sh BUILD   (run_all.sh runs it when tmux is installed)
# Starts $BUILD/fxdb in a detached tmux session on a private server socket (never touching the
# user's tmux), with HOME set to a temporary folder, types keys with send-keys and reads the
# screen with capture-pane. Ends with "pty: N passed, N failed"; exits 1 when anything failed.
set -u

build=${1:-build}
if ! command -v tmux >/dev/null 2>&1; then
    echo "pty: tmux is not installed"
    echo "pty: 0 passed, 1 failed"
    exit 1
fi
if [ ! -x "$build/fxdb" ]; then
    echo "pty: $build/fxdb is missing"
    echo "pty: 0 passed, 1 failed"
    exit 1
fi
fxdb="$(cd "$build" && pwd)/fxdb"
sock="fxdb-pty-$$"
home=$(mktemp -d)
passed=0
failed=0

T() { tmux -L "$sock" -f "$home/tmux.conf" "$@"; }
cleanup() {
    T kill-server >/dev/null 2>&1
    rm -rf "$home"
}
trap cleanup EXIT

screen() { T capture-pane -p -t fx -S -200 2>/dev/null | sed 's/[[:space:]]*$//'; }

# wait_for REGEX [TENTHS]: until a screen line matches (default 5 s)
wait_for() {
    local i
    for ((i = 0; i < ${2:-50}; i++)); do
        screen | grep -Eq -- "$1" && return 0
        sleep 0.1
    done
    return 1
}

# count REGEX: screen lines matching
count() { screen | grep -Ec -- "$1"; }

# wait_count REGEX N: until at least N lines match
wait_count() {
    local i
    for ((i = 0; i < 50; i++)); do
        [ "$(count "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# last_line: the last non-empty screen line
last_line() { screen | grep -v '^$' | tail -n 1; }

# wait_echo TEXT: until the line "fxdb> TEXT" is on the screen. After sending a line, the last
# line stays the previous empty prompt until tmux shows the echo: a wait_prompt right away can
# return before fxdb read the line, and keys sent next (a Tab) then race with it.
wait_echo() {
    local i
    for ((i = 0; i < 50; i++)); do
        screen | grep -Fxq -- "fxdb> $1" && return 0
        sleep 0.1
    done
    return 1
}

wait_prompt() {   # the last line is an empty prompt
    local i
    for ((i = 0; i < 50; i++)); do
        [ "$(last_line)" = "fxdb>" ] && return 0
        sleep 0.1
    done
    return 1
}

check() {   # NAME, then a command that succeeds when the check passes
    local name=$1
    shift
    if "$@"; then
        echo "ok - $name"
        passed=$((passed + 1))
    else
        echo "FAILED - $name"
        echo "---- screen ----"
        screen | grep -v '^$' | tail -n 25
        echo "----------------"
        failed=$((failed + 1))
    fi
}

printf 'set -g history-limit 5000\n' > "$home/tmux.conf"
# the wrapper records fxdb's exit status; it ignores SIGINT itself (Ctrl-C reaches the whole
# foreground process group), and fxdb installs its own handler at start
cat > "$home/run.sh" <<EOF
#!/bin/sh
trap '' INT
HOME='$home' TERM=xterm NO_COLOR=1 '$fxdb'
echo \$? > '$home/status'
EOF
T new-session -d -s fx -x 120 -y 50 "sh '$home/run.sh'"

check "banner and prompt" wait_for '^fxdb> ?$'

# 1. a typo fixed with cursor movement: "=6*7" -> Left Left BSpace 9 -> "=9*7"
T send-keys -t fx '=6*7' Left Left BSpace 9 Enter
check "line editing fixes a typo (=9*7 gives 63)" wait_for '^63$'

# 2. Up recalls the previous line
T send-keys -t fx Up
check "Up recalls the line" wait_count '^fxdb> =9\*7$' 2
T send-keys -t fx Enter
check "the recalled line runs again" wait_count '^63$' 2
check "history file written" grep -qF '=9*7' "$home/.fxdb_history"

# 3. Tab completion of a global's field and of a command
wait_prompt
# torch.zero_, torch.zeros and torch.zeros_like share "torch.zero": the first Tab inserts the
# common prefix (or all of torch.zeros where fewer fields exist), the second lists them; then "s"
# and "(2)" finish the call by hand and run it
T send-keys -t fx 'torch.zer' Tab
check "Tab completes torch.zer up to the common prefix torch.zero" wait_for '^fxdb> torch\.zeros?$'
T send-keys -t fx Tab
check "a second Tab lists torch.zeros and torch.zeros_like" wait_for 'torch\.zeros[[:space:]]+torch\.zeros_like'
T send-keys -t fx C-e 's' Tab
check "Tab on torch.zeros keeps torch.zeros" wait_for '^fxdb> torch\.zeros$'
T send-keys -t fx '(2)' Enter
check "the completed call runs" wait_for '^tensor\(\[0\., 0\.\]\)$'
wait_prompt
T send-keys -t fx 'torch.manual_se' Tab
check "Tab completes a unique field: torch.manual_se -> torch.manual_seed" wait_for '^fxdb> torch\.manual_seed$'
T send-keys -t fx C-u
wait_prompt
T send-keys -t fx ':hel' Tab
check "Tab completes :hel -> :help" wait_for '^fxdb> :help$'
T send-keys -t fx C-u

# 4. Ctrl-C interrupts a running loop and the prompt comes back
wait_prompt
T send-keys -t fx 'while true do end' Enter
sleep 0.5
T send-keys -t fx C-c
check "Ctrl-C interrupts: interrupted!" wait_for 'interrupted!'
check "the prompt comes back" wait_prompt
T send-keys -t fx '=1+1' Enter
check "the REPL still works after the interrupt" wait_for '^2$'

# 4b. Ctrl-C inside one long kernel (a sum over 2^34 broadcast elements, about a minute) stops
#     it, naming the user's line. The bound is "long before the kernel would have ended" (20 s of
#     its ~60), not a speed figure: tests are not timers, and a loaded CI machine stretches tmux's
#     polling. The latency itself (~0.15 s) was measured by hand and is in the issue's note.
wait_prompt
n0=$(count 'interrupted!')
T send-keys -t fx 'big = torch.ones(1):expand(2^34 // 1):sum()' Enter
sleep 1
T send-keys -t fx C-c
t0=$(date +%s%N)
stopped=no
for ((i = 0; i < 200; i++)); do
    [ "$(count 'interrupted!')" -ge $((n0 + 1)) ] && { stopped=yes; break; }
    sleep 0.1
done
t1=$(date +%s%N)
check "Ctrl-C stops a long kernel before it ends ($(((t1 - t0) / 1000000)) ms)" test "$stopped" = yes
check "the interrupt names the user's line" wait_for '^  at stdin:1'
check "the prompt comes back after the kernel stopped" wait_prompt
T send-keys -t fx '=3+3' Enter
check "no stale interrupt after the kernel stopped" wait_for '^6$'

# 4c. Ctrl-C during export points at the user's line, not at fxdb's embedded export code
wait_prompt
T send-keys -t fx 'Spin = nn.Module:extend("Spin"); function Spin:forward(x) while true do end end' Enter
wait_prompt
n0=$(count 'interrupted!')
T send-keys -t fx 'torch.export.export(Spin(), {torch.ones(1)})' Enter
sleep 0.5
T send-keys -t fx C-c
check "Ctrl-C interrupts an export" wait_count 'interrupted!' $((n0 + 1))
check "the export interrupt names the user's line" test "$(screen | grep -A1 'interrupted!' | tail -n 1)" = "  at stdin:1"
check "no [fxdb export] location" test "$(count '\[fxdb export\]')" -eq 0

# 5. Ctrl-C twice while idle only gives fresh prompts
wait_prompt
T send-keys -t fx '=7070'
sleep 0.2
T send-keys -t fx C-c
sleep 0.3
T send-keys -t fx C-c
sleep 0.3
T send-keys -t fx '=40+2' Enter
check "Ctrl-C at the prompt discards the line and keeps fxdb running" wait_for '^42$'
check "the discarded line did not run" test "$(count '^7070$')" -eq 0

# 6. the debugger in a terminal: Tab completes a method of a value and a node name; Ctrl-C pauses
#    a runaway trace (the session stays usable); an empty line repeats :step
wait_prompt
T send-keys -t fx 't = torch.ones(2, 3)' Enter
wait_echo 't = torch.ones(2, 3)'
wait_prompt
T send-keys -t fx 't:nume' Tab
check "Tab completes a method: t:nume -> t:numel" wait_for '^fxdb> t:numel$'
T send-keys -t fx '()' Enter
check "the completed method runs" wait_for '^6$'
wait_prompt
T send-keys -t fx 'dofile("tests/golden/seed_s1.lua")' Enter
wait_prompt
T send-keys -t fx ':export m' Enter
wait_echo ':export m'
wait_prompt
T send-keys -t fx ':node %lift_f' Tab
check "Tab completes a node name: %lift_f -> %lift_fresh_copy" wait_for '^fxdb> :node %lift_fresh_copy$'
T send-keys -t fx Enter
check "the completed node prints" wait_for '^%lift_fresh_copy : call_function'
wait_prompt
T send-keys -t fx 'L = nn.Module:extend("L"); function L:forward(x) while true do x = x + 1 end end' Enter
wait_prompt
T send-keys -t fx ':trace L() --args {torch.ones(1)}' Enter
check "a trace session starts" wait_for '^trace session on L '
wait_prompt
T send-keys -t fx ':s' Enter
check ":s stops at the first op" wait_for '^stopped at %add \(aten.add.Tensor\)  \[step\]'
wait_prompt
T send-keys -t fx Enter
check "an empty line repeats :step" wait_for '^stopped at %add_1 \(aten.add.Tensor\)  \[step\]'
wait_prompt
T send-keys -t fx ':c' Enter
sleep 0.7
T send-keys -t fx C-c
check "Ctrl-C pauses a running trace" wait_for '^interrupted  \[Ctrl-C\]'
check "the prompt comes back after the pause" wait_prompt
T send-keys -t fx ':where' Enter
check "the paused session answers :where" wait_for '^#0 +stdin:1 in forward'
wait_prompt
n0=$(count 'interrupted!')
T send-keys -t fx 'big = torch.ones(1):expand(2^34 // 1):sum()' Enter
sleep 0.5
T send-keys -t fx C-c
sleep 0.1
T send-keys -t fx C-c
check "two Ctrl-C with a session open: the kernel stops" wait_count 'interrupted!' $((n0 + 1))
check "fxdb is still running after a second Ctrl-C with a session open" wait_prompt
n1=$(count '^#0 +stdin:1 in forward')
T send-keys -t fx ':where' Enter
check "the session survived the second Ctrl-C" wait_count '^#0 +stdin:1 in forward' $((n1 + 1))
wait_prompt
T send-keys -t fx ':kill' Enter
check ":kill ends the session" wait_for '^trace session ended'
wait_prompt
T send-keys -t fx '=2+3' Enter
check "the REPL still works after the session" wait_for '^5$'

# 6b. Tab completes file names inside folders (:load) and the kinds of a breakpoint (:break)
wait_prompt
T send-keys -t fx ':load examples/les' Tab
check "Tab completes a folder in a folder: :load examples/les -> :load examples/lessons/" \
    wait_for '^fxdb> :load examples/lessons/$'
T send-keys -t fx '03' Tab
check "Tab completes a file there: lessons/03 -> lessons/03_functionalization.lua" \
    wait_for '^fxdb> :load examples/lessons/03_functionalization\.lua$'
T send-keys -t fx C-u
T send-keys -t fx ':break mu' Tab
check "Tab completes a breakpoint kind: :break mu -> :break mutation" \
    wait_for '^fxdb> :break mutation$'
T send-keys -t fx C-u
T send-keys -t fx ':tbreak ' Tab Tab
check "a second Tab lists the breakpoint kinds" \
    wait_for 'item[[:space:]]+line[[:space:]]+module[[:space:]]+mutation'
T send-keys -t fx C-u

# 7. Ctrl-D quits with status 0 (written by the wrapper: tmux itself may reap a multi-threaded
#    child late and leave #{pane_dead_status} empty)
wait_prompt
T send-keys -t fx C-d
exited() {
    local i
    for ((i = 0; i < 50; i++)); do
        [ -s "$home/status" ] && return 0
        sleep 0.1
    done
    return 1
}
check "Ctrl-D quits" exited
st=$(cat "$home/status" 2>/dev/null)
check "exit status 0 (got: $st)" test "$st" = 0

# 8. history persists across sessions: a new fxdb recalls the previous one's lines with Up
rm -f "$home/status"
T kill-session -t fx >/dev/null 2>&1
T new-session -d -s fx2 -x 120 -y 50 "sh '$home/run.sh'"
screen() { T capture-pane -p -t fx2 -S -200 2>/dev/null | sed 's/[[:space:]]*$//'; }
check "a second fxdb starts" wait_for '^fxdb> ?$'
T send-keys -t fx2 Up
check "Up recalls the last line of the previous session" wait_for '^fxdb> =2\+3$'
T send-keys -t fx2 C-u C-d
check "the second fxdb quits" exited

echo "pty: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
