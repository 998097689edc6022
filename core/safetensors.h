/* core/safetensors.h — reading and writing .safetensors weight files.
 * Layer: core. The format of huggingface/safetensors: an 8-byte little-endian header length N,
 * N bytes of JSON ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
 * ..., "__metadata__": {"key": "value"}}, possibly padded with spaces), then the data section:
 * each tensor's bytes, row-major, little-endian, at [begin, end) from the section's start. The
 * tensors must tile the section exactly (no gap, no overlap, nothing left over), as the reference
 * implementation checks. Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL (the ones fxdb has).
 *
 * Reading is two-step so a caller can check names and shapes before any data is read: open
 * parses and validates the header (every tensor's dtype, shape, byte range), read loads one
 * tensor. Every malformed-file error is FX_EIO with kind "safetensors" and a message that gives
 * the byte offset in the file where the problem lies. */
#ifndef FX_SAFETENSORS_H
#define FX_SAFETENSORS_H

#include <stdint.h>

#include "core/tensor.h"

/* Largest header accepted (bytes), as the reference implementation's MAX_HEADER_SIZE. */
#define FX_ST_MAX_HEADER 100000000

typedef struct fx_st_file fx_st_file;

/* One tensor of an opened file, as its header describes it. */
typedef struct fx_st_info {
    const char *name; /* owned by the file */
    fx_dtype dtype;
    int ndim;                   /* 0..FX_MAX_DIMS */
    int64_t sizes[FX_MAX_DIMS]; /* (ndim,) */
    uint64_t begin, end;        /* byte range within the data section */
} fx_st_info;

/* Opens `path` and validates its header. On success *out owns the open file (close it with
 * fx_safetensors_close). Errors: FX_EIO (kind "safetensors") for an unreadable or malformed file
 * (too small, header length past the end of the file, header larger than FX_ST_MAX_HEADER, not a
 * JSON object, an entry without a valid dtype / shape / data_offsets, a byte range that does not
 * match dtype * shape, ranges that leave a gap or overlap or do not end at the file's end,
 * duplicate names, non-string metadata), FX_ETYPE for a dtype fxdb does not have (U16, U32,
 * U64, F8_*), FX_ENOMEM. */
int fx_safetensors_open(const char *path, fx_st_file **out, fx_err *err);
/* Closes the file and frees everything it owns. NULL-safe. */
void fx_safetensors_close(fx_st_file *f);

/* Number of tensors, and each one's description in header order (borrowed, valid until close). */
int fx_safetensors_count(const fx_st_file *f);
const fx_st_info *fx_safetensors_info(const fx_st_file *f, int i);
/* Index of the tensor called name, or -1. */
int fx_safetensors_find(const fx_st_file *f, const char *name);
/* The "__metadata__" entries: count, and key / value of entry i (borrowed). */
int fx_safetensors_metadata_count(const fx_st_file *f);
const char *fx_safetensors_metadata_key(const fx_st_file *f, int i);
const char *fx_safetensors_metadata_value(const fx_st_file *f, int i);

/* Reads tensor i into a new contiguous cpu tensor of its stored dtype and shape (new reference in
 * *out). FX_EIO when the bytes cannot be read (file truncated since open), FX_ENOMEM. */
int fx_safetensors_read(fx_st_file *f, int i, fx_tensor **out, fx_err *err);

/* Writes n tensors (borrowed; any strides, cpu only) under the given names, in that order, with
 * optional string metadata (nmeta key/value pairs: meta[2k] key, meta[2k+1] value; may be NULL
 * when nmeta is 0). The header is padded with spaces so the data section starts at a multiple of
 * 8 bytes. Errors: FX_EARG for a meta tensor, an empty or duplicate name, or the reserved name
 * "__metadata__"; FX_EIO when the file cannot be written; FX_ENOMEM. */
int fx_safetensors_save(const char *path, int n, const char *const *names,
                        fx_tensor *const *tensors, int nmeta, const char *const *meta, fx_err *err);

/* The safetensors name of a dtype ("F32", "BF16", "BOOL"), or NULL when it has none. */
const char *fx_safetensors_dtype_name(fx_dtype dt);

#endif
