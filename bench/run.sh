#!/bin/sh
# bench/run.sh — builds and runs the benchmarks under bench/ (tables, not tests).
# Layer: bench. Usage: bench/run.sh [BUILD_DIR]   (`make bench` passes $(BUILD)).
# Each benchmark is one `bench NAME LIBS...` line at the bottom: bench/NAME.c is compiled with the
# flags tests/viz uses (Makefile ALLCFLAGS + pkg-config cflags), linked with LIBS (libraries of
# BUILD_DIR, in link order) and run; its table goes to stdout.
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CC=${CC:-cc}
PKGS="lua5.4 libgvc libcgraph openblas libedit libcjson cmocka"
WARN="-Wall -Wextra -Wshadow -Wundef -Wwrite-strings -Wmissing-prototypes -Wstrict-prototypes \
-Wold-style-definition -Wno-unused-parameter"
CFLAGS="-std=c11 -D_GNU_SOURCE -O2 -g $WARN -I. -fopenmp $(pkg-config --cflags $PKGS)"
LIBS="$(pkg-config --libs $PKGS) -lm -fopenmp"
# torch 1.13 (python3-torch, `make bench-deps`) for the anchors; empty when not installed
TORCH_PY=""
for py in /usr/bin/python3 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c "import torch" 2>/dev/null; then
        TORCH_PY=$py
        break
    fi
done

# bench NAME LIB...: build the libraries if needed, compile bench/NAME.c, run it.
bench() {
    name=$1
    shift
    libs=""
    for lib in "$@"; do
        make --no-print-directory -s BUILD="$BUILD" "$BUILD/$lib"
        libs="$libs $BUILD/$lib"
    done
    mkdir -p "$BUILD/bench"
    # shellcheck disable=SC2086
    $CC $CFLAGS -o "$BUILD/bench/$name" "bench/$name.c" $libs $LIBS
    echo "== $name"
    "$BUILD/bench/$name"
    echo
}

# ---- issue 12: pictures of real-sized models (bench/bench_viz.c, bench/bench_viz_llama.lua) -----
# bench_viz: a synthetic 5,000-node graph by depth. bench_viz_llama: render time of the Llama
# example at 2/8/16/32 layers and depths 0/1/2/full, and the 32-layer HTML page's time and size.
bench bench_viz libfxviz.a libfxdb.a
make --no-print-directory -s BUILD="$BUILD" "$BUILD/fxdb"
echo "== bench_viz_llama"
"$BUILD/fxdb" bench/bench_viz_llama.lua
echo

# ---- issue 3: kernels (bench/bench_kernels.c, bench/bench_dispatch.lua) -------------------------
# GEMM GFLOP/s (mm vs cblas_sgemm), elementwise and row-op GB/s against memcpy, dispatch µs per op
# from C; then the same dispatch from Lua. Medians of 7 runs; ratios measured side by side.
bench bench_kernels libfxdb.a
make --no-print-directory -s BUILD="$BUILD" "$BUILD/fxdb"
echo "== bench_dispatch (Lua; anchor: torch 1.13 from Python, measured just before when installed)"
anchors="$BUILD/bench/dispatch_torch.txt"
rm -f "$anchors"
if [ -n "$TORCH_PY" ]; then "$TORCH_PY" bench/bench_dispatch_torch.py > "$anchors" || rm -f "$anchors"; fi
"$BUILD/fxdb" bench/bench_dispatch.lua 200000 "$anchors"
echo

# ---- issues 6 and 14: Llama decode and export (bench/bench_interp.c, bench/bench_llama.lua) -----
# bench_interp: µs per node on a graph of 1-element ops, read and memcpy bandwidth. bench_llama.lua decode:
# tokens/s (eager, exported per position, exported steady state) against the machine's limit and
# llama2.c's run.c (the anchor: measured in the same run when LLAMA2C names a build of it, see
# below; else the issue's figures), for thread settings: 1 and 2 fixed (OMP_NUM_THREADS), auto (no
# variable: fxdb's automatic count), and each of 1 / auto beside CPU-bound processes ("+hog", a
# shell loop per CPU that run.sh starts and kills): the default must never be slower than 1 thread.
# bench_llama.lua export: one decode step on meta tensors, µs per node, against torch 1.13's
# make_fx(functionalize(f)) of the same architecture (bench/bench_llama_torch.py) when python3-torch
# is installed (`make bench-deps`); then the 7B shape at 2 / 8 / 32 / 128 layers (scaling: the
# cost per node should stay flat).
# LLAMA_TOKENS sets the decode length (default 64).
bench bench_interp libfxdb.a
make --no-print-directory -s BUILD="$BUILD" "$BUILD/fxdb"
echo "== bench_llama decode (tokens/s; limit = read GB/s / weight bytes; exported = ep:module() per position; load: $(cut -d' ' -f1-3 /proc/loadavg))"
"$BUILD/fxdb" bench/bench_llama.lua header decode
hogs=""
stop_hog() {
    for h in $hogs; do kill "$h" 2>/dev/null || true; wait "$h" 2>/dev/null || true; done
    hogs=""
}
trap stop_hog EXIT
ncpu=$(nproc 2>/dev/null || echo 2)
for cfg in stories15M stories110M; do
    for th in 1 2 auto 1+hog auto+hog; do
        case "$th" in *hog)
            i=0
            while [ "$i" -lt "$ncpu" ]; do
                sh -c 'while :; do :; done' &
                hogs="$hogs $!"
                i=$((i + 1))
            done ;;
        esac
        n=${th%+hog}
        if [ "$n" = auto ]; then set -- env -u OMP_NUM_THREADS
        else set -- env OMP_NUM_THREADS="$n"; fi
        "$@" "$BUILD/fxdb" bench/bench_llama.lua decode "$cfg" "$th" "$BUILD/bench/bench_interp" \
            "${LLAMA_TOKENS:-64}"
        stop_hog
    done
done
echo
# ---- issue 9: the single program at 1 thread --------------------------------------------------
# Decode through the single program (examples/llama.lua's llama.export: input_pos a tensor, one
# export) beside the per-position export and eager, called in turn at each position; medians of
# LLAMA_ROUNDS (default 5) rounds of LLAMA_TOKENS positions, each call timed by the process's CPU
# time (one thread: what a loaded machine disturbs least). Then, when valgrind is installed,
# instructions per decoded token (callgrind; repeatable on a shared machine) for the configs in
# LLAMA_CALLGRIND (default stories15M; stories110M takes minutes under valgrind): the median over
# the decode calls after the first two, module calls only for the exported kinds.
echo "== bench_llama decode at 1 thread: single program vs per-position vs eager (CPU time; median of ${LLAMA_ROUNDS:-5} interleaved rounds; load: $(cut -d' ' -f1-3 /proc/loadavg))"
"$BUILD/fxdb" bench/bench_llama.lua header decode
for cfg in stories15M stories110M; do
    env OMP_NUM_THREADS=1 "$BUILD/fxdb" bench/bench_llama.lua decode "$cfg" 1 \
        "$BUILD/bench/bench_interp" "${LLAMA_TOKENS:-64}" "${LLAMA_ROUNDS:-5}" cpu
done
# ---- issue 14: the single program beside llama2.c ------------------------------------------------
# llama2.c's run.c is not part of fxdb: build it outside the repository and set LLAMA2C to a
# program run as `$LLAMA2C CONFIG STEPS` (see bench/bench_llama.lua); each row alternates one
# fxdb decode and one llama2.c run, LLAMA_ROUNDS times, and takes the ratio from the same run.
# Without LLAMA2C the llama2.c columns are "-" (the decode tables quote the issue's figures).
echo
echo "== single program beside llama2.c (LLAMA2C=${LLAMA2C:-unset}; medians of ${LLAMA_ROUNDS:-5} alternating rounds of ${LLAMA_TOKENS:-64} tokens; load: $(cut -d' ' -f1-3 /proc/loadavg))"
"$BUILD/fxdb" bench/bench_llama.lua header side
for cfg in stories15M stories110M; do
    env OMP_NUM_THREADS=1 "$BUILD/fxdb" bench/bench_llama.lua side "$cfg" 1 "${LLAMA_TOKENS:-64}" \
        "${LLAMA_ROUNDS:-5}"
    env -u OMP_NUM_THREADS "$BUILD/fxdb" bench/bench_llama.lua side "$cfg" auto \
        "${LLAMA_TOKENS:-64}" "${LLAMA_ROUNDS:-5}"
done
if command -v valgrind >/dev/null 2>&1; then
    echo
    echo "== instructions per decoded token (callgrind, 1 thread)"
    printf '%-12s %14s %14s %14s %12s\n' config single per-pos eager per-pos/single
    cg=$(mktemp -d)
    for cfg in ${LLAMA_CALLGRIND:-stories15M}; do
        row=""
        for kind in single perpos eager; do
            fn=gm_call
            [ "$kind" = eager ] && fn=luaB_xpcall
            env OMP_NUM_THREADS=1 valgrind --tool=callgrind \
                --callgrind-out-file="$cg/$kind" --toggle-collect="$fn" --dump-before="$fn" \
                "$BUILD/fxdb" bench/bench_llama.lua icount "$cfg" "$kind" 8 >/dev/null 2>&1
            # dumps $kind.1 .. $kind.N in call order (.1 before the first call), $kind the last
            ir=$( (for f in $(cd "$cg" && ls "$kind".* | sort -t. -k2 -n) "$kind"; do
                       sed -n 's/^totals: //p' "$cg/$f"; done) |
                 awk 'NR > 4' | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }')
            row="$row $ir"
            rm -f "$cg/$kind"*
        done
        set -- $row
        printf '%-12s %14s %14s %14s %12s\n' "$cfg" "$1" "$2" "$3" \
            "$(awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "-" }')"
    done
    rm -rf "$cg"
fi
echo
echo "== bench_llama export (one decode step; each row a fresh process; medians of 5; load: $(cut -d' ' -f1-3 /proc/loadavg))"
"$BUILD/fxdb" bench/bench_llama.lua header export
for row in "stories15M meta" "stories110M meta" "llama2_7b meta"; do
    set -- $row
    t=""
    if [ -n "$TORCH_PY" ]; then t=$("$TORCH_PY" bench/bench_llama_torch.py "$1" | cut -d' ' -f2); fi
    "$BUILD/fxdb" bench/bench_llama.lua export "$1" "$2" "" "$t"
done
for layers in 2 8 32 128; do
    "$BUILD/fxdb" bench/bench_llama.lua export llama2_7b meta "$layers"
done
