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
echo "== bench_dispatch (Lua)"
"$BUILD/fxdb" bench/bench_dispatch.lua
echo

# ---- issue 6: Llama decode (bench/bench_interp.c, bench/bench_llama.lua) -----------------------
# bench_interp: µs per node on a graph of 1-element ops, memcpy bandwidth. bench_llama.lua: decode
# tokens/s (eager vs exported) against the machine's limit at 1 and 2 threads, and export time and
# peak RSS (llama2_7b on the meta device). LLAMA_TOKENS sets the decode length (default 64).
bench bench_interp libfxdb.a
make --no-print-directory -s BUILD="$BUILD" "$BUILD/fxdb"
echo "== bench_llama decode (tokens/s; limit = memcpy GB/s / weight bytes; exported = ep:module() per position)"
"$BUILD/fxdb" bench/bench_llama.lua header decode
# "2p": 2 threads with OMP_WAIT_POLICY=passive — on a machine shared with other jobs, OpenMP's
# default spinning makes a preempted worker stall every parallel region.
for cfg in stories15M stories110M; do
    for th in 1 2 2p; do
        n=${th%p}
        set -- env OMP_NUM_THREADS="$n" OPENBLAS_NUM_THREADS="$n"
        [ "$th" = 2p ] && set -- "$@" OMP_WAIT_POLICY=passive
        "$@" "$BUILD/fxdb" bench/bench_llama.lua decode "$cfg" "$th" "$BUILD/bench/bench_interp" \
            "${LLAMA_TOKENS:-64}"
    done
done
echo
echo "== bench_llama export (one decode step; each row a fresh process)"
"$BUILD/fxdb" bench/bench_llama.lua header export
"$BUILD/fxdb" bench/bench_llama.lua export stories15M
"$BUILD/fxdb" bench/bench_llama.lua export stories110M
"$BUILD/fxdb" bench/bench_llama.lua export llama2_7b meta
