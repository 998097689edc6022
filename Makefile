# fxdb — build, test, demo.  See README.md.
#
#   make            build build/fxdb (and the layer libraries)
#   make deps       install the Debian packages fxdb needs (apt-get; sudo when not root); no-op when present
#   make test       deps if missing, build, check-layers, then every test suite (unit, viz, lua, golden,
#                   seeds, ...), libFuzzer a minute per target and valgrind (tests/run_all.sh)
#   make demo       build and run the main job (examples/demo.lua)
#   make asan       the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   make debug      -O0 -g build in build-debug/
#   make valgrind   unit tests and REPL transcripts under valgrind (tests/valgrind.supp)
#   make bench      benchmarks under bench/ (tables, not tests)
#   make bench-deps install python3-torch (torch 1.13) for the benchmarks' anchor columns
#   make fuzz-programs N=10000 [SEED=1]   the differential random-program tester (tests/fuzz/)
#   make fuzz [FUZZ_SECS=600]   libFuzzer over safetensors, the REPL's line entry and the PT2
#                   loader (clang; build-fuzz/); make fuzz-load runs the loader alone
#   make check-layers   the include rule (docs/ARCHITECTURE.md) and acyclic files in each layer folder
#   make format-check   clang-format 14 dry run
#
# BUILD=dir selects the output folder (helpers working side by side use their own).

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
SAN     ?=
WERROR  ?= $(if $(CI),-Werror,)
PKGS    := lua5.4 libgvc libcgraph openblas libedit libcjson cmocka libzip

WARN    := -Wall -Wextra -Wshadow -Wundef -Wwrite-strings -Wmissing-prototypes \
           -Wstrict-prototypes -Wold-style-definition -Wno-unused-parameter
CFLAGS  ?= $(OPT) -g
ALLCFLAGS = -std=c11 -D_GNU_SOURCE $(CFLAGS) $(SAN) $(WARN) $(WERROR) -MMD -MP -I. -fopenmp
PKGCFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS_CORE = $(shell pkg-config --libs openblas libcjson 2>/dev/null) -lm -fopenmp
LDLIBS_ALL  = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -fopenmp

CORE_SRC := $(wildcard core/*.c core/kernels/*.c)
CORE_TEST_SRC := $(filter core/kernels/k_ref.c,$(CORE_SRC))
CORE_LIB_SRC := $(filter-out $(CORE_TEST_SRC),$(CORE_SRC))
LUA_SRC  := $(wildcard lua/lx_*.c)
LUA_EMB  := $(wildcard lua/*.lua)
VIZ_SRC  := $(wildcard viz/*.c)
PT2_SRC  := $(wildcard pt2/*.c)
REPL_SRC := $(wildcard repl/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
VIZT_SRC := $(wildcard tests/viz/test_*.c)

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))
CORE_OBJ := $(call obj,$(CORE_LIB_SRC))
CORE_TEST_OBJ := $(call obj,$(CORE_TEST_SRC))
LUA_OBJ  := $(call obj,$(LUA_SRC)) $(BUILD)/lua/embedded.o
VIZ_OBJ  := $(call obj,$(VIZ_SRC))
PT2_OBJ  := $(call obj,$(PT2_SRC))
REPL_OBJ := $(call obj,$(REPL_SRC)) $(BUILD)/repl/api_doc.o
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
VIZT_BIN := $(patsubst tests/viz/%.c,$(BUILD)/tests/%,$(VIZT_SRC))

.PHONY: all deps test test-unit test-viz test-lua test-golden test-seeds demo asan debug valgrind \
        bench bench-deps check-layers format-check clean need-deps

all: $(BUILD)/fxdb

$(BUILD)/libfxdb.a: $(CORE_OBJ)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libfxdb_test.a: $(CORE_TEST_OBJ)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libfxlua.a: $(LUA_OBJ)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libfxviz.a: $(VIZ_OBJ) $(BUILD)/viz/assets.o
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libfxpt2.a: $(PT2_OBJ)
	@rm -f $@; ar rcs $@ $^

$(BUILD)/fxdb: $(REPL_OBJ) $(BUILD)/libfxlua.a $(BUILD)/libfxpt2.a $(BUILD)/libfxviz.a $(BUILD)/libfxdb.a
	$(CC) $(ALLCFLAGS) -o $@ $(REPL_OBJ) $(BUILD)/libfxlua.a $(BUILD)/libfxpt2.a $(BUILD)/libfxviz.a $(BUILD)/libfxdb.a $(LDLIBS_ALL)

$(BUILD)/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(shell pkg-config --cflags openblas libcjson 2>/dev/null) -c -o $@ $<
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(PKGCFLAGS) -c -o $@ $<

# The Lua-side library (nn.lua, torch.lua) is embedded into the binary as C strings (xxd -i).
$(BUILD)/lua/embedded.c: $(LUA_EMB)
	@mkdir -p $(dir $@)
	@{ echo '/* generated from lua/*.lua by the Makefile; do not edit */'; \
	   for f in $(LUA_EMB); do n=$$(basename $$f .lua); \
	     echo "static const unsigned char fxlua_src_$$n[] = {"; xxd -i < $$f; echo ', 0x00 };'; done; \
	   echo 'const struct { const char *name; const char *src; } fxlua_embedded[] = {'; \
	   for f in $(LUA_EMB); do n=$$(basename $$f .lua); echo "  {\"$$n\", (const char *)fxlua_src_$$n},"; done; \
	   echo '  {0, 0} };'; } > $@
$(BUILD)/lua/embedded.o: $(BUILD)/lua/embedded.c
	$(CC) -std=c11 $(CFLAGS) $(SAN) -c -o $@ $<

# docs/API.md is embedded into the program: `:help` and fxdb.help print it (repl/help.c).
$(BUILD)/repl/api_doc.c: docs/API.md
	@mkdir -p $(dir $@)
	@{ echo '/* generated from docs/API.md by the Makefile; do not edit */'; \
	   echo 'const char fxdb_api_doc[] = {'; xxd -i < $<; echo ', 0x00 };'; } > $@
$(BUILD)/repl/api_doc.o: $(BUILD)/repl/api_doc.c
	$(CC) -std=c11 $(CFLAGS) $(SAN) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libfxdb.a $(BUILD)/libfxdb_test.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(PKGCFLAGS) -o $@ $< $(BUILD)/libfxdb_test.a $(BUILD)/libfxdb.a $(shell pkg-config --libs cmocka 2>/dev/null) $(LDLIBS_CORE)
$(BUILD)/tests/%: tests/viz/%.c $(BUILD)/libfxviz.a $(BUILD)/libfxdb.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(PKGCFLAGS) -o $@ $< $(BUILD)/libfxviz.a $(BUILD)/libfxdb.a $(LDLIBS_ALL)

# The HTML viewer's assets, embedded like the Lua library: the viewer's own JS/CSS (viz/html/)
# and svg-pan-zoom for pan and zoom, a pinned npm release fetched once into $(BUILD)/js with
# `npm pack` and checked against its SHA-256 (nothing is downloaded when fxdb runs).
SVGPZ_VERSION := 3.6.2
SVGPZ_SHA256  := 1e4c077505a0fdd125c191e93c1843a66db0d2de840d0d94cbc1e8c3823bb61a
SVGPZ_TGZ     := $(BUILD)/js/svg-pan-zoom-$(SVGPZ_VERSION).tgz
SVGPZ_JS      := $(BUILD)/js/package/dist/svg-pan-zoom.min.js
HTML_ASSETS   := viz/html/viewer.js viz/html/viewer.css
$(SVGPZ_TGZ):
	@mkdir -p $(dir $@)
	@command -v npm >/dev/null || { echo "make: npm is needed to fetch svg-pan-zoom (make deps installs it)" >&2; exit 1; }
	cd $(dir $@) && npm pack --silent svg-pan-zoom@$(SVGPZ_VERSION) >/dev/null
	@echo "$(SVGPZ_SHA256)  $@" | sha256sum -c --quiet - || { rm -f $@; echo "make: svg-pan-zoom $(SVGPZ_VERSION): checksum mismatch" >&2; exit 1; }
$(SVGPZ_JS): $(SVGPZ_TGZ)
	tar -xzf $< -C $(BUILD)/js package/dist/svg-pan-zoom.min.js package/LICENSE && touch $@
$(BUILD)/viz/assets.c: $(HTML_ASSETS) $(SVGPZ_JS)
	@mkdir -p $(dir $@)
	@{ echo '/* generated by the Makefile from viz/html/ and svg-pan-zoom $(SVGPZ_VERSION); do not edit */'; \
	   emit() { echo "const unsigned char $$1[] = {"; xxd -i < $$2; echo ', 0x00 };'; }; \
	   emit vz_asset_viewer_js viz/html/viewer.js; emit vz_asset_viewer_css viz/html/viewer.css; \
	   emit vz_asset_panzoom_js $(SVGPZ_JS); emit vz_asset_panzoom_license $(BUILD)/js/package/LICENSE; \
	   echo 'const char vz_asset_panzoom_version[] = "$(SVGPZ_VERSION)";'; } > $@
$(BUILD)/viz/assets.o: $(BUILD)/viz/assets.c
	$(CC) -std=c11 $(CFLAGS) $(SAN) -c -o $@ $<

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# --- dependencies -------------------------------------------------------------------------------
DEBS := liblua5.4-dev libgraphviz-dev graphviz libopenblas-dev libedit-dev libcjson-dev \
        libzip-dev libfp16-dev libcmocka-dev xxd pkg-config gcc make tmux chromium valgrind \
        clang libclang-rt-14-dev libomp-dev
# npm only where no npm is installed: machines whose Node.js comes from NodeSource ship npm inside
# their nodejs package, which conflicts with Debian's npm (apt-get would refuse the whole list).
DEBS += $(if $(shell command -v npm 2>/dev/null),,npm)
# true when every package of DEBS is in place (libFuzzer: clang's runtime folder; libomp for -fopenmp)
DEPS_PRESENT = pkg-config --exists $(PKGS) && [ -f /usr/include/fp16.h ] && command -v xxd >/dev/null \
    && command -v dot >/dev/null && command -v tmux >/dev/null && command -v npm >/dev/null \
    && command -v chromium >/dev/null && command -v valgrind >/dev/null && command -v clang >/dev/null \
    && [ -f "$$(clang --print-runtime-dir)/libclang_rt.fuzzer-x86_64.a" ] \
    && ls /usr/lib/llvm-*/lib/libomp.so >/dev/null 2>&1
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	@if $(DEPS_PRESENT); then echo "deps: all present"; else \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEBS); fi
need-deps:
	@$(DEPS_PRESENT) || $(MAKE) --no-print-directory deps

# --- tests --------------------------------------------------------------------------------------
test: need-deps
	@$(MAKE) --no-print-directory all-tests-built
	@$(MAKE) --no-print-directory fuzz-build
	@$(MAKE) --no-print-directory check-layers
	@FXDB_LIBFUZZER="$(FUZZ_BUILD) 60" FXDB_VALGRIND=1 tests/run_all.sh $(BUILD)

all-tests-built: $(BUILD)/fxdb $(UNIT_BIN) $(VIZT_BIN)
.PHONY: all-tests-built

test-unit: $(UNIT_BIN)
	@tests/run_unit.sh $(BUILD)
test-viz: $(VIZT_BIN)
	@tests/run_unit.sh $(BUILD) viz
test-lua: $(BUILD)/fxdb
	@tests/run_lua.sh $(BUILD)
test-golden: $(BUILD)/fxdb
	@tests/run_golden.sh $(BUILD)

demo: need-deps
	@$(MAKE) --no-print-directory $(BUILD)/fxdb
	$(BUILD)/fxdb examples/demo.lua

asan: need-deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    all-tests-built
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/run_all.sh build-asan

debug:
	@$(MAKE) --no-print-directory BUILD=build-debug OPT=-O0 all

# libgomp's, OpenBLAS's and fx_parallel_for's thread pools live until exit: tests/valgrind.supp
# names them, and only them. REPL transcripts count definite leaks only (Lua's own allocator pools are "possibly lost").
# `make test` runs it too (tests/run_valgrind.sh).
valgrind: need-deps
	@$(MAKE) --no-print-directory all-tests-built
	@tests/run_valgrind.sh $(BUILD)

# torch 1.13 from Debian: the anchors of the export and dispatch tables (bench/run.sh measures
# it in the same run when present; the tables print without it)
bench-deps:
	@if /usr/bin/python3 -c "import torch" 2>/dev/null; then echo "bench-deps: python3-torch present"; else \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch; fi

bench: need-deps
	@$(MAKE) --no-print-directory $(BUILD)/fxdb $(BUILD)/libfxdb.a
	@bench/run.sh $(BUILD)

# N random programs (seeds SEED..SEED+N-1) exported, run, unlifted and reinplaced against eager;
# keeps going after a failure (each is shrunk and printed); prints the time taken.
fuzz-programs: need-deps
	@$(MAKE) --no-print-directory $(BUILD)/fxdb
	@$(BUILD)/fxdb tests/fuzz/gen_programs.lua $(or $(N),10000) $(or $(SEED),1) --keep-going
.PHONY: fuzz-programs

# libFuzzer (clang 14, ASan + UBSan, build-fuzz/): tests/fuzz/fuzz_{safetensors,repl,load}.c over
# the safetensors reader, the REPL's line entry (tests/fuzz/fuzz_repl.c) and the PT2 loader.
# `make fuzz` runs each FUZZ_SECS seconds (default 600) from its seeds (tests/fuzz/seeds/, and for
# the loader archives saved by tests/pt2/make_corpus.lua) and prints executions and edges;
# `make test` runs each for 60 s (tests/fuzz/libfuzzer.sh). `make fuzz-load` runs the loader alone.
FUZZ_BUILD := build-fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_NAMES := safetensors repl load
fuzz-build: need-deps
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang OPT=-O1 WERROR= \
	    SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_NAMES))
	@$(MAKE) --no-print-directory $(BUILD)/fxdb
$(BUILD)/fuzz_safetensors: tests/fuzz/fuzz_safetensors.c $(BUILD)/libfxdb.a
	$(CC) $(ALLCFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/libfxdb.a $(LDLIBS_CORE)
$(BUILD)/fuzz_load: tests/fuzz/fuzz_load.c $(BUILD)/libfxpt2.a $(BUILD)/libfxdb.a
	$(CC) $(ALLCFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/libfxpt2.a $(BUILD)/libfxdb.a $(LDLIBS_ALL)
FUZZ_REPL_OBJ := $(filter-out $(BUILD)/repl/main.o $(BUILD)/repl/render_bind.o,$(REPL_OBJ))
$(BUILD)/fuzz_repl: tests/fuzz/fuzz_repl.c $(FUZZ_REPL_OBJ) $(BUILD)/libfxlua.a $(BUILD)/libfxpt2.a $(BUILD)/libfxdb.a
	$(CC) $(ALLCFLAGS) $(PKGCFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_REPL_OBJ) $(BUILD)/libfxlua.a \
	    $(BUILD)/libfxpt2.a $(BUILD)/libfxdb.a $(LDLIBS_ALL) -lpthread
fuzz: fuzz-build
	@tests/fuzz/libfuzzer.sh $(BUILD) $(FUZZ_BUILD) $(or $(FUZZ_SECS),600) $(FUZZ_NAMES)
fuzz-load: fuzz-build
	@tests/fuzz/libfuzzer.sh $(BUILD) $(FUZZ_BUILD) $(or $(FUZZ_SECS),600) load
.PHONY: fuzz fuzz-build fuzz-load

check-layers:
	@tests/check_layers.sh
	@tests/check_cycles.sh $(BUILD) repl viz lua core

format-check:
	@clang-format --dry-run --Werror $(CORE_SRC) $(LUA_SRC) $(VIZ_SRC) $(PT2_SRC) $(REPL_SRC) core/*.h lua/*.h viz/*.h pt2/*.h

clean:
	rm -rf build build-asan build-debug build-fuzz
