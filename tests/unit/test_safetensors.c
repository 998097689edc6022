/* tests/unit/test_safetensors.c — core/safetensors.c: round trips and every load error.
 * Layer: tests (cmocka, links libfxdb.a). Round trips write tensors of every dtype, contiguous and
 * strided, 0-dim and empty, with metadata, and read back the same bytes. Files for the errors are
 * written byte by byte here (an 8-byte length, a JSON header, data), independently of the writer,
 * following the format of huggingface/safetensors; each must fail with its own message and leak
 * nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/fx.h"
#include "core/safetensors.h"

static char g_path[64];

static int setup(void **state) {
    (void)state;
    snprintf(g_path, sizeof g_path, "/tmp/fxdb_st_%d.safetensors", (int)getpid());
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(g_path);
    return 0;
}

/* Writes a file: little-endian hlen (the header's length unless hlen_override >= 0), the header
 * text, then ndata bytes of data (0, 1, 2, ...). */
static void write_raw(const char *header, int64_t hlen_override, size_t ndata) {
    FILE *fp = fopen(g_path, "wb");
    assert_non_null(fp);
    uint64_t hl = hlen_override >= 0 ? (uint64_t)hlen_override : strlen(header);
    for (int i = 0; i < 8; i++) fputc((int)((hl >> (8 * i)) & 0xff), fp);
    fputs(header, fp);
    for (size_t i = 0; i < ndata; i++) fputc((int)(i & 0xff), fp);
    fclose(fp);
}

/* Opens g_path expecting failure with `code` and a message containing `want`. */
static void expect_open_error(int code, const char *want) {
    fx_alloc_stats before = fx_alloc_get_stats();
    fx_err err;
    fx_err_clear(&err);
    fx_st_file *f = (fx_st_file *)1;
    int rc = fx_safetensors_open(g_path, &f, &err);
    if (rc != code || !strstr(err.msg, want))
        fprintf(stderr, "want code %d containing \"%s\"\n got code %d: %s\n", code, want, rc,
                err.msg);
    assert_int_equal(rc, code);
    assert_null(f);
    assert_non_null(strstr(err.msg, want));
    assert_string_equal(err.kind, "safetensors");
    fx_alloc_stats after = fx_alloc_get_stats();
    assert_int_equal(after.live_blocks, before.live_blocks);
}

static fx_tensor *ramp(fx_dtype dt, int nd, const int64_t *sizes) {
    fx_tensor *t = NULL;
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_tensor_empty(nd, sizes, dt, FX_DEVICE_CPU, &t, &err), FX_OK);
    int64_t n = fx_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        fx_dtype_store_f64(dt, fx_tensor_data(t), i, dt == FX_DTYPE_BOOL ? (double)(i % 3 == 0)
                                                                           : (double)i * 0.5 - 3);
    return t;
}

/* ---- round trips ------------------------------------------------------------------------- */

static void test_round_trip_dtypes(void **state) {
    (void)state;
    fx_alloc_stats before = fx_alloc_get_stats();
    static const fx_dtype dts[] = {FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_F16, FX_DTYPE_BF16,
                                   FX_DTYPE_I64, FX_DTYPE_I32, FX_DTYPE_I16, FX_DTYPE_I8,
                                   FX_DTYPE_U8,  FX_DTYPE_BOOL};
    enum { N = sizeof dts / sizeof dts[0] };
    fx_tensor *ts[N + 2];
    const char *names[N + 2];
    char namebuf[N + 2][32];
    int64_t s23[2] = {2, 3}, s03[2] = {0, 3};
    for (int i = 0; i < N; i++) {
        ts[i] = ramp(dts[i], 2, s23);
        snprintf(namebuf[i], sizeof namebuf[i], "model.t%d.%s", i, fx_dtype_name(dts[i]));
        names[i] = namebuf[i];
    }
    ts[N] = ramp(FX_DTYPE_F32, 0, NULL); /* 0-dim */
    names[N] = "scalar";
    ts[N + 1] = ramp(FX_DTYPE_F32, 2, s03); /* empty */
    names[N + 1] = "empty";
    const char *meta[] = {"format", "pt", "origin", "fxdb test"};
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_safetensors_save(g_path, N + 2, names, ts, 2, meta, &err), FX_OK);

    /* the data section starts at a multiple of 8 and the header length is little-endian */
    FILE *fp = fopen(g_path, "rb");
    unsigned char lb[8];
    assert_int_equal(fread(lb, 1, 8, fp), 8);
    fclose(fp);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | lb[i];
    assert_int_equal((8 + hl) % 8, 0);

    fx_st_file *f = NULL;
    assert_int_equal(fx_safetensors_open(g_path, &f, &err), FX_OK);
    assert_int_equal(fx_safetensors_count(f), N + 2);
    assert_int_equal(fx_safetensors_metadata_count(f), 2);
    assert_string_equal(fx_safetensors_metadata_key(f, 0), "format");
    assert_string_equal(fx_safetensors_metadata_value(f, 1), "fxdb test");
    for (int i = 0; i < N + 2; i++) {
        const fx_st_info *info = fx_safetensors_info(f, i);
        assert_string_equal(info->name, names[i]); /* header order = save order */
        assert_int_equal(fx_safetensors_find(f, names[i]), i);
        assert_int_equal(info->dtype, fx_tensor_dtype(ts[i]));
        assert_int_equal(info->ndim, fx_tensor_ndim(ts[i]));
        fx_tensor *r = NULL;
        assert_int_equal(fx_safetensors_read(f, i, &r, &err), FX_OK);
        assert_int_equal(fx_tensor_ndim(r), fx_tensor_ndim(ts[i]));
        for (int d = 0; d < fx_tensor_ndim(r); d++)
            assert_int_equal(fx_tensor_size(r, d), fx_tensor_size(ts[i], d));
        size_t nb = (size_t)fx_tensor_numel(r) * fx_dtype_size(fx_tensor_dtype(r));
        if (nb) assert_memory_equal(fx_tensor_data(r), fx_tensor_data(ts[i]), nb);
        fx_tensor_release(r);
    }
    assert_int_equal(fx_safetensors_find(f, "nope"), -1);
    assert_string_equal(fx_safetensors_dtype_name(FX_DTYPE_BF16), "BF16");
    fx_safetensors_close(f);
    for (int i = 0; i < N + 2; i++) fx_tensor_release(ts[i]);
    fx_alloc_stats after = fx_alloc_get_stats();
    assert_int_equal(after.live_blocks, before.live_blocks);
}

/* A transposed view and a strided slice are written in row-major order of their own shape. */
static void test_round_trip_strided(void **state) {
    (void)state;
    fx_err err;
    fx_err_clear(&err);
    int64_t s[2] = {3, 4};
    fx_tensor *base = ramp(FX_DTYPE_F32, 2, s);
    int64_t ts_sizes[2] = {4, 3}, ts_strides[2] = {1, 4}, sl_sizes[2] = {3, 2}, sl_str[2] = {4, 2};
    fx_tensor *tr = NULL, *sl = NULL;
    assert_int_equal(fx_tensor_as_strided(base, 2, ts_sizes, ts_strides, 0, &tr, &err), FX_OK);
    assert_int_equal(fx_tensor_as_strided(base, 2, sl_sizes, sl_str, 1, &sl, &err), FX_OK);
    fx_tensor *ts[2] = {tr, sl};
    const char *names[2] = {"transposed", "sliced"};
    assert_int_equal(fx_safetensors_save(g_path, 2, names, ts, 0, NULL, &err), FX_OK);
    fx_st_file *f = NULL;
    assert_int_equal(fx_safetensors_open(g_path, &f, &err), FX_OK);
    for (int k = 0; k < 2; k++) {
        fx_tensor *r = NULL;
        assert_int_equal(fx_safetensors_read(f, k, &r, &err), FX_OK);
        assert_true(fx_tensor_is_contiguous(r));
        int64_t n = fx_tensor_numel(r);
        assert_int_equal(n, fx_tensor_numel(ts[k]));
        for (int64_t i = 0; i < n; i++)
            assert_true(fx_tensor_flat_f64(r, i) == fx_tensor_flat_f64(ts[k], i));
        fx_tensor_release(r);
    }
    fx_safetensors_close(f);
    fx_tensor_release(tr);
    fx_tensor_release(sl);
    fx_tensor_release(base);
}

/* A file written by hand in the reference layout (offsets out of header order, padding) reads. */
static void test_reads_reference_layout(void **state) {
    (void)state;
    const char *h = "{\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                    "\"a\":{\"dtype\":\"U8\",\"shape\":[2,4],\"data_offsets\":[0,8]}}   ";
    write_raw(h, -1, 16);
    fx_err err;
    fx_err_clear(&err);
    fx_st_file *f = NULL;
    assert_int_equal(fx_safetensors_open(g_path, &f, &err), FX_OK);
    assert_int_equal(fx_safetensors_count(f), 2);
    fx_tensor *a = NULL, *b = NULL;
    assert_int_equal(fx_safetensors_read(f, fx_safetensors_find(f, "a"), &a, &err), FX_OK);
    assert_int_equal(fx_safetensors_read(f, fx_safetensors_find(f, "b"), &b, &err), FX_OK);
    for (int i = 0; i < 8; i++) assert_int_equal(fx_tensor_flat_i64(a, i), i);
    assert_int_equal(fx_tensor_flat_i64(b, 0), 0x0b0a0908);
    assert_int_equal(fx_tensor_flat_i64(b, 1), 0x0f0e0d0c);
    fx_tensor_release(a);
    fx_tensor_release(b);
    fx_safetensors_close(f);
}

/* ---- load errors ------------------------------------------------------------------------- */

#define ENTRY(name, dt, shape, b, e)                                                          \
    "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void test_error_missing_file(void **state) {
    (void)state;
    unlink(g_path);
    expect_open_error(FX_EIO, "cannot open the file for reading");
}

static void test_error_too_small(void **state) {
    (void)state;
    FILE *fp = fopen(g_path, "wb");
    fputs("abc", fp);
    fclose(fp);
    expect_open_error(FX_EIO, "the file is 3 bytes long");
}

static void test_error_header_past_end(void **state) {
    (void)state;
    write_raw("{}", 500, 0);
    expect_open_error(FX_EIO, "the header length at byte 0 says 500 bytes, but only 2 bytes");
}

static void test_error_header_too_large(void **state) {
    (void)state;
    write_raw("{}", (int64_t)FX_ST_MAX_HEADER + 1, 0);
    expect_open_error(FX_EIO, "more than the 100000000 allowed");
}

static void test_error_not_object(void **state) {
    (void)state;
    write_raw("[1, 2, 3]", -1, 0);
    expect_open_error(FX_EIO, "must be a JSON object starting with '{', found another character "
                              "at byte 8");
}

static void test_error_bad_json(void **state) {
    (void)state;
    write_raw("{\"a\": {\"dtype\": }", -1, 0);
    expect_open_error(FX_EIO, "the header is not valid JSON (error near file byte");
}

static void test_error_trailing_bytes(void **state) {
    (void)state;
    write_raw("{}  x", -1, 0);
    expect_open_error(FX_EIO, "unexpected bytes after the header's JSON object at file byte 12");
}

static void test_error_entry_not_object(void **state) {
    (void)state;
    write_raw("{\"w\": 3}", -1, 0);
    expect_open_error(FX_EIO, "header entry 'w' (header at byte 8) is not an object");
}

static void test_error_missing_dtype(void **state) {
    (void)state;
    write_raw("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", -1, 4);
    expect_open_error(FX_EIO, "tensor 'w': missing or non-string \"dtype\"");
}

static void test_error_unknown_dtype(void **state) {
    (void)state;
    write_raw("{" ENTRY("w", "F33", "[1]", 0, 4) "}", -1, 4);
    expect_open_error(FX_EIO, "tensor 'w': unknown dtype \"F33\"");
}

static void test_error_unsupported_dtype(void **state) {
    (void)state;
    write_raw("{" ENTRY("w", "U16", "[2]", 0, 4) "}", -1, 4);
    expect_open_error(FX_ETYPE, "tensor 'w' has dtype U16, which fxdb does not support");
}

static void test_error_bad_shape(void **state) {
    (void)state;
    write_raw("{\"w\":{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,4]}}", -1, 4);
    expect_open_error(FX_EIO, "tensor 'w': missing or non-list \"shape\"");
    write_raw("{" ENTRY("w", "F32", "[2,-1]", 0, 4) "}", -1, 4);
    expect_open_error(FX_EIO, "tensor 'w': shape[1] is not a non-negative integer");
    write_raw("{" ENTRY("w", "F32", "[1.5]", 0, 4) "}", -1, 4);
    expect_open_error(FX_EIO, "tensor 'w': shape[0] is not a non-negative integer");
    write_raw("{" ENTRY("w", "F32", "[1,1,1,1,1,1,1,1,1]", 0, 4) "}", -1, 4);
    expect_open_error(FX_EIO, "tensor 'w': shape has 9 dims, fxdb supports at most 8");
}

static void test_error_bad_offsets(void **state) {
    (void)state;
    write_raw("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", -1, 4);
    expect_open_error(FX_EIO, "\"data_offsets\" must be a list of two non-negative integers");
    write_raw("{" ENTRY("w", "F32", "[1]", 4, 0) "}", -1, 4);
    expect_open_error(FX_EIO, "data_offsets [4, 0] end before they begin");
}

static void test_error_size_mismatch(void **state) {
    (void)state;
    const char *h = "{" ENTRY("w", "F32", "[2,3]", 0, 20) "}";
    write_raw(h, -1, 20);
    char want[160];
    size_t d = 8 + strlen(h);
    snprintf(want, sizeof want,
             "tensor 'w': data_offsets [0, 20] hold 20 bytes (file bytes %zu to %zu) but dtype "
             "F32 and its shape need 24",
             d, d + 20);
    expect_open_error(FX_EIO, want);
}

static void test_error_gap(void **state) {
    (void)state;
    const char *h = "{" ENTRY("a", "F32", "[1]", 0, 4) "," ENTRY("b", "F32", "[1]", 8, 12) "}";
    write_raw(h, -1, 12);
    char want[160];
    size_t d = 8 + strlen(h);
    snprintf(want, sizeof want,
             "gap in the data section: bytes 4 to 8 (file bytes %zu to %zu) belong to no tensor; "
             "'b' begins at 8",
             d + 4, d + 8);
    expect_open_error(FX_EIO, want);
}

static void test_error_overlap(void **state) {
    (void)state;
    write_raw("{" ENTRY("a", "F32", "[2]", 0, 8) "," ENTRY("b", "F32", "[1]", 4, 8) "}", -1, 8);
    expect_open_error(FX_EIO, "tensor 'b' data_offsets [4, 8] overlap tensor 'a', which ends at 8");
}

static void test_error_trailing_data(void **state) {
    (void)state;
    const char *h = "{" ENTRY("a", "F32", "[1]", 0, 4) "}";
    write_raw(h, -1, 10);
    char want[160];
    snprintf(want, sizeof want, "6 bytes of data after the last tensor (from file byte %zu)",
             8 + strlen(h) + 4);
    expect_open_error(FX_EIO, want);
}

static void test_error_truncated(void **state) {
    (void)state;
    write_raw("{" ENTRY("a", "F32", "[4]", 0, 16) "}", -1, 10);
    expect_open_error(FX_EIO, "the data section holds 10 bytes");
    expect_open_error(FX_EIO, "need 16: the file is truncated");
}

static void test_error_duplicate_name(void **state) {
    (void)state;
    write_raw("{" ENTRY("a", "F32", "[1]", 0, 4) "," ENTRY("a", "F32", "[1]", 4, 8) "}", -1, 8);
    expect_open_error(FX_EIO, "duplicate tensor name 'a' in the header");
}

static void test_error_bad_metadata(void **state) {
    (void)state;
    write_raw("{\"__metadata__\":{\"format\":1}}", -1, 0);
    expect_open_error(FX_EIO, "\"__metadata__\" value of 'format' is not a string");
    write_raw("{\"__metadata__\":[1]}", -1, 0);
    expect_open_error(FX_EIO, "\"__metadata__\" must be an object of strings");
}

/* ---- save errors ------------------------------------------------------------------------- */

static void test_save_errors(void **state) {
    (void)state;
    fx_err err;
    fx_err_clear(&err);
    int64_t s = 2;
    fx_tensor *m = NULL, *c = ramp(FX_DTYPE_F32, 1, &s);
    assert_int_equal(fx_tensor_empty(1, &s, FX_DTYPE_F32, FX_DEVICE_META, &m, &err), FX_OK);
    fx_tensor *ts[2] = {c, m};
    const char *names[2] = {"a", "b"};
    assert_int_equal(fx_safetensors_save(g_path, 2, names, ts, 0, NULL, &err), FX_EARG);
    assert_non_null(strstr(err.msg, "tensor 'b' is on the meta device"));
    ts[1] = c;
    names[1] = "a";
    assert_int_equal(fx_safetensors_save(g_path, 2, names, ts, 0, NULL, &err), FX_EARG);
    assert_non_null(strstr(err.msg, "duplicate tensor name 'a'"));
    names[1] = "__metadata__";
    assert_int_equal(fx_safetensors_save(g_path, 2, names, ts, 0, NULL, &err), FX_EARG);
    assert_non_null(strstr(err.msg, "'__metadata__' is reserved"));
    assert_int_equal(fx_safetensors_save("/nonexistent-dir/x.safetensors", 1, names, ts, 0, NULL,
                                         &err),
                     FX_EIO);
    assert_non_null(strstr(err.msg, "cannot open the file for writing"));
    fx_tensor_release(m);
    fx_tensor_release(c);
}

/* Allocation failures while opening and reading return FX_ENOMEM and leak nothing. */
static void test_allocation_failures(void **state) {
    (void)state;
    int64_t s = 3;
    fx_tensor *a = ramp(FX_DTYPE_F32, 1, &s), *b = ramp(FX_DTYPE_I64, 1, &s);
    fx_tensor *ts[2] = {a, b};
    const char *names[2] = {"a", "b"};
    const char *meta[2] = {"k", "v"};
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_safetensors_save(g_path, 2, names, ts, 1, meta, &err), FX_OK);
    int failures = 0;
    for (int n = 1; n < 40; n++) {
        fx_alloc_stats before = fx_alloc_get_stats();
        fx_alloc_fail_at(n, 0);
        fx_st_file *f = NULL;
        fx_tensor *r = NULL;
        int rc = fx_safetensors_open(g_path, &f, &err);
        if (!rc) rc = fx_safetensors_read(f, 1, &r, &err);
        fx_alloc_fail_at(0, 0);
        if (rc) {
            assert_int_equal(rc, FX_ENOMEM);
            failures++;
        }
        fx_tensor_release(r);
        fx_safetensors_close(f);
        fx_alloc_stats after = fx_alloc_get_stats();
        assert_int_equal(after.live_blocks, before.live_blocks);
    }
    assert_true(failures > 3);
    fx_tensor_release(a);
    fx_tensor_release(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_dtypes),
        cmocka_unit_test(test_round_trip_strided),
        cmocka_unit_test(test_reads_reference_layout),
        cmocka_unit_test(test_error_missing_file),
        cmocka_unit_test(test_error_too_small),
        cmocka_unit_test(test_error_header_past_end),
        cmocka_unit_test(test_error_header_too_large),
        cmocka_unit_test(test_error_not_object),
        cmocka_unit_test(test_error_bad_json),
        cmocka_unit_test(test_error_trailing_bytes),
        cmocka_unit_test(test_error_entry_not_object),
        cmocka_unit_test(test_error_missing_dtype),
        cmocka_unit_test(test_error_unknown_dtype),
        cmocka_unit_test(test_error_unsupported_dtype),
        cmocka_unit_test(test_error_bad_shape),
        cmocka_unit_test(test_error_bad_offsets),
        cmocka_unit_test(test_error_size_mismatch),
        cmocka_unit_test(test_error_gap),
        cmocka_unit_test(test_error_overlap),
        cmocka_unit_test(test_error_trailing_data),
        cmocka_unit_test(test_error_truncated),
        cmocka_unit_test(test_error_duplicate_name),
        cmocka_unit_test(test_error_bad_metadata),
        cmocka_unit_test(test_save_errors),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
