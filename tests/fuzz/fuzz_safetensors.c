/* tests/fuzz/fuzz_safetensors.c — libFuzzer target over the safetensors reader (`make fuzz`).
 * Layer: tests. Each input is taken as the bytes of a .safetensors file (written to an anonymous
 * memory file, opened by its /proc path): fx_safetensors_open must either fail with a message or
 * give a file whose every tensor fx_safetensors_read either loads (and prints) or refuses; never
 * crash, leak or read out of bounds (built with ASan + UBSan). Seeds: tests/fuzz/seeds/safetensors. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/fx.h"
#include "core/safetensors.h"
#include "core/tensor_fmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz.safetensors", 0);
    if (fd < 0) return 0;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    fx_err err;
    fx_err_clear(&err);
    fx_st_file *f = NULL;
    if (done == size && fx_safetensors_open(path, &f, &err) == FX_OK) {
        for (int i = 0; i < fx_safetensors_metadata_count(f); i++)
            if (!fx_safetensors_metadata_key(f, i) || !fx_safetensors_metadata_value(f, i)) __builtin_trap();
        for (int i = 0; i < fx_safetensors_count(f); i++) {
            const fx_st_info *info = fx_safetensors_info(f, i);
            if (fx_safetensors_find(f, info->name) != i) __builtin_trap(); /* names are unique */
            fx_tensor *t = NULL;
            fx_err_clear(&err);
            if (fx_safetensors_read(f, i, &t, &err) != FX_OK) continue;
            fx_strbuf sb = FX_STRBUF_INIT;
            fx_tensor_format(&sb, t);
            fx_strbuf_free(&sb);
            fx_tensor_release(t);
        }
        fx_safetensors_close(f);
    }
    close(fd);
    return 0;
}
