#!/usr/bin/env bash
# tests/fuzz/libfuzzer.sh — runs the libFuzzer targets of `make fuzz` for a while each.
# Layer: tests. Usage: tests/fuzz/libfuzzer.sh BUILD FUZZBUILD SECS NAME...   (from the repo root)
#   NAME is safetensors, repl or load: FUZZBUILD/fuzz_NAME (made by `make fuzz-build`) runs for
#   SECS seconds over FUZZBUILD/corpus/NAME (kept between runs; new inputs are added there) and its
#   seeds: tests/fuzz/seeds/NAME, and for load the archives BUILD/fxdb saves with
#   tests/pt2/make_corpus.lua. Prints one line per target (executions, edges, corpus size), the
#   sanitizer report and the saved input (FUZZBUILD/crash-NAME-*) of a failure, and ends with
#   "libfuzzer: N passed, N failed"; exits 1 when a target failed.
# Each input gets at most 30 s (libFuzzer's -timeout; the REPL target interrupts its inputs after
# 2 s itself) and 4 GiB; an allocation above 1 GiB fails as out of memory (fxdb then reports
# FX_ENOMEM) rather than ending the run. Kernels run on one thread (the machine is shared).
set -u

build=${1:?usage: tests/fuzz/libfuzzer.sh BUILD FUZZBUILD SECS NAME...}
fb=${2:?usage: tests/fuzz/libfuzzer.sh BUILD FUZZBUILD SECS NAME...}
mkdir -p "$fb" && fb=$(cd "$fb" && pwd)   # absolute: the REPL target works in a temporary folder
here=$(pwd)
secs=${3:?usage: tests/fuzz/libfuzzer.sh BUILD FUZZBUILD SECS NAME...}
shift 3
passed=0
failed=0
export ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

for name in "$@"; do
    bin="$fb/fuzz_$name"
    corpus="$fb/corpus/$name"
    log="$fb/fuzz_$name.log"
    mkdir -p "$corpus"
    seeds=()
    [ -d "tests/fuzz/seeds/$name" ] && seeds+=("$here/tests/fuzz/seeds/$name")
    opts=(-max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=4096 -timeout=30
          -artifact_prefix="$fb/crash-$name-")
    case $name in
        repl) opts+=(-max_len=4096 -close_fd_mask=3) ;;
        load)
            mkdir -p "$fb/seeds-load"
            if ! "$build/fxdb" tests/pt2/make_corpus.lua "$fb/seeds-load" >/dev/null; then
                echo "libfuzzer $name: writing the seed archives with $build/fxdb failed"
                failed=$((failed + 1))
                continue
            fi
            seeds+=("$fb/seeds-load")
            opts+=(-max_len=65536) ;;
        *) opts+=(-max_len=65536) ;;
    esac
    [ -f "tests/fuzz/$name.dict" ] && opts+=(-dict="$here/tests/fuzz/$name.dict")
    # FUZZ_SEED fixes libFuzzer's random seed (make test sets it, so a fresh clone replays the
    # same mutations each run: a failure there is reproducible, not luck); unset, each run differs
    [ -n "${FUZZ_SEED:-}" ] && opts+=(-seed="$FUZZ_SEED")
    if [ ! -x "$bin" ]; then
        echo "libfuzzer $name: $bin is missing (make fuzz-build)"
        failed=$((failed + 1))
        continue
    fi
    start=$(date +%s)
    "$bin" "${opts[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ]; then
        echo "libfuzzer $name: ${execs:-?} executions in ${took} s, ${cov:-no coverage line} (edges, features, corpus)"
        passed=$((passed + 1))
    else
        echo "libfuzzer $name: FAILED (exit $rc) after ${execs:-?} executions in ${took} s; the report:"
        grep -vE '^#[0-9]+|^(INFO|MERGE|NEW_FUNC)' "$log" | tail -n 60
        ls "$fb"/crash-"$name"-* "$fb"/timeout-"$name"-* "$fb"/leak-"$name"-* "$fb"/oom-"$name"-* 2>/dev/null
        failed=$((failed + 1))
    fi
done
echo "libfuzzer: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
