/* tests/fuzz/fuzz_load.c — libFuzzer target over the PT2 loader (`make fuzz-load`).
 * Layer: tests. Each input is taken as the bytes of a .pt2 file: fx_pt2_load_buffer must either
 * fail with a message or give a program that prints; never crash, leak or read out of bounds
 * (built with ASan + UBSan). An input starting with 'J' is instead the text of models/model.json
 * (the serialized program): it is packed into an archive with no weights first, so mutations
 * reach the JSON reader (graph, arguments, symbolic expressions, range constraints, fxdb's
 * shape environment) without breaking the zip's checksums. The seed corpus is archives fxdb
 * saved from small programs, static and dynamic, and the 'J' form of their JSON (the Makefile
 * target writes it with tests/pt2/make_corpus.lua). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "core/fx.h"
#include "pt2/pt2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void load_and_print(const uint8_t *data, size_t size) {
    fx_err err;
    fx_err_clear(&err);
    fx_program *p = NULL;
    if (fx_pt2_load_buffer(data, size, "fuzz.pt2", &p, &err) == FX_OK) {
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_program_format(&sb, p);
        fx_strbuf_free(&sb);
        fx_program_free(p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || data[0] != 'J') {
        load_and_print(data, size);
        return 0;
    }
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/fxdb_fuzz_load_%d.pt2", (int)getpid());
    const char *names[] = {"f/archive_format", "f/models/model.json",
                           "f/data/weights/model_weights_config.json"};
    const void *bytes[] = {"pt2", data + 1, "{\"config\": {}}"};
    size_t lens[] = {3, size - 1, 14};
    fx_err err;
    fx_err_clear(&err);
    if (fx_pt2_write_zip(path, names, bytes, lens, 3, &err) != FX_OK) return 0;
    fx_program *p = NULL;
    if (fx_pt2_load(path, &p, &err) == FX_OK) {
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_program_format(&sb, p);
        fx_strbuf_free(&sb);
        fx_program_free(p);
    }
    remove(path);
    return 0;
}
