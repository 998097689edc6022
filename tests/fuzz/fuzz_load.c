/* tests/fuzz/fuzz_load.c — libFuzzer target over the PT2 loader (`make fuzz-load`).
 * Layer: tests. Each input is taken as the bytes of a .pt2 file: fx_pt2_load_buffer must either
 * fail with a message or give a program that prints; never crash, leak or read out of bounds
 * (built with ASan + UBSan). The seed corpus is archives fxdb saved from the examples plus the
 * hand-built fixtures of tests/pt2 (the Makefile target writes it). */
#include <stddef.h>
#include <stdint.h>

#include "core/fx.h"
#include "pt2/pt2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fx_err err;
    fx_err_clear(&err);
    fx_program *p = NULL;
    if (fx_pt2_load_buffer(data, size, "fuzz.pt2", &p, &err) == FX_OK) {
        fx_strbuf sb = FX_STRBUF_INIT;
        fx_program_format(&sb, p);
        fx_strbuf_free(&sb);
        fx_program_free(p);
    }
    return 0;
}
