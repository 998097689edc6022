/* core/safetensors.c — .safetensors header parsing (cJSON), validation, tensor reads and writes.
 * Layer: core.
 *
 * Invariants of an open fx_st_file: `infos` holds every tensor of the header in header order,
 * each with a supported dtype, a shape whose byte size equals end - begin, and ranges that tile
 * [0, data_len) exactly; `data_start` = 8 + header length is the file offset of the data section.
 * Tensor bytes are little-endian in the file and copied as they are: fxdb runs on little-endian
 * hosts only (x86-64, aarch64). */
#include "core/safetensors.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/strbuf.h"

struct fx_st_file {
    FILE *fp;            /* open for reading */
    char *path;          /* owned copy, for messages */
    uint64_t data_start; /* file offset of the data section */
    uint64_t data_len;   /* bytes in the data section */
    fx_st_info *infos;   /* (n,) in header order; names owned */
    int n;
    char **meta; /* (2 * nmeta,) key, value, ...; owned */
    int nmeta;
};

/* ==== dtypes ================================================================================== */

static const struct {
    const char *name;
    fx_dtype dt;
} k_dtypes[] = {
    {"F64", FX_DTYPE_F64}, {"F32", FX_DTYPE_F32},   {"F16", FX_DTYPE_F16}, {"BF16", FX_DTYPE_BF16},
    {"I64", FX_DTYPE_I64}, {"I32", FX_DTYPE_I32},   {"I16", FX_DTYPE_I16}, {"I8", FX_DTYPE_I8},
    {"U8", FX_DTYPE_U8},   {"BOOL", FX_DTYPE_BOOL}, {"C64", FX_DTYPE_C64},
};

/* Names the format defines that fxdb has no dtype for. */
static const char *const k_unsupported[] = {"U16",     "U32",     "U64",     "F8_E5M2", "F8_E4M3",
                                            "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4"};

const char *fx_safetensors_dtype_name(fx_dtype dt) {
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (k_dtypes[i].dt == dt) return k_dtypes[i].name;
    return NULL;
}

static fx_dtype dtype_from_name(const char *s) {
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (!strcmp(k_dtypes[i].name, s)) return k_dtypes[i].dt;
    return FX_DTYPE_UNDEFINED;
}

static bool is_known_unsupported(const char *s) {
    for (size_t i = 0; i < sizeof k_unsupported / sizeof k_unsupported[0]; i++)
        if (!strcmp(k_unsupported[i], s)) return true;
    return false;
}

/* ==== errors ================================================================================== */

/* Sets an FX_EIO "safetensors" error prefixed with the file name. Returns FX_EIO. */
static int st_fail(fx_err *err, const char *path, const char *fmt, ...) FX_PRINTF(3, 4);
static int st_fail(fx_err *err, const char *path, const char *fmt, ...) {
    char msg[FX_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fx_err_setf(err, FX_EIO, "%s: %s", path, msg);
    fx_err_kind(err, "safetensors");
    return FX_EIO;
}

/* ==== open ==================================================================================== */

void fx_safetensors_close(fx_st_file *f) {
    if (!f) return;
    if (f->fp) fclose(f->fp);
    for (int i = 0; i < f->n; i++) fx_free((char *)f->infos[i].name);
    for (int i = 0; i < 2 * f->nmeta; i++) fx_free(f->meta[i]);
    fx_free(f->meta);
    fx_free(f->infos);
    fx_free(f->path);
    fx_free(f);
}

/* Reads a JSON number that must be a non-negative integer below 2^53. */
static bool json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0) || d > 9007199254740992.0 || d != (double)(uint64_t)d) return false;
    *out = (uint64_t)d;
    return true;
}

/* Parses one tensor entry into info (name already set). Header offsets in messages are those of
 * the header start (the JSON's own positions are not kept by cJSON once parsed). */
static int parse_entry(fx_st_file *f, const cJSON *e, fx_st_info *info, fx_err *err) {
    const char *p = f->path, *nm = info->name;
    if (!cJSON_IsObject(e))
        return st_fail(err, p, "header entry '%s' (header at byte 8) is not an object", nm);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt))
        return st_fail(err, p, "tensor '%s': missing or non-string \"dtype\" in the header", nm);
    info->dtype = dtype_from_name(dt->valuestring);
    if (info->dtype == FX_DTYPE_UNDEFINED) {
        if (is_known_unsupported(dt->valuestring)) {
            fx_err_setf(err, FX_ETYPE,
                        "%s: tensor '%s' has dtype %s, which fxdb does not support (supported: "
                        "F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)",
                        p, nm, dt->valuestring);
            fx_err_kind(err, "safetensors");
            return FX_ETYPE;
        }
        return st_fail(err, p, "tensor '%s': unknown dtype \"%s\"", nm, dt->valuestring);
    }
    if (!cJSON_IsArray(shape))
        return st_fail(err, p, "tensor '%s': missing or non-list \"shape\" in the header", nm);
    int nd = cJSON_GetArraySize(shape);
    if (nd > FX_MAX_DIMS)
        return st_fail(err, p, "tensor '%s': shape has %d dims, fxdb supports at most %d", nm, nd,
                       FX_MAX_DIMS);
    info->ndim = nd;
    uint64_t numel = 1;
    for (int d = 0; d < nd; d++) {
        uint64_t s;
        if (!json_uint(cJSON_GetArrayItem(shape, d), &s))
            return st_fail(err, p, "tensor '%s': shape[%d] is not a non-negative integer", nm, d);
        info->sizes[d] = (int64_t)s;
        if (s && numel > UINT64_MAX / 16 / s)
            return st_fail(err, p, "tensor '%s': shape overflows the byte count", nm);
        numel *= s;
    }
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
        !json_uint(cJSON_GetArrayItem(offs, 0), &info->begin) ||
        !json_uint(cJSON_GetArrayItem(offs, 1), &info->end))
        return st_fail(err, p,
                       "tensor '%s': \"data_offsets\" must be a list of two non-negative "
                       "integers [begin, end]",
                       nm);
    if (info->end < info->begin)
        return st_fail(err, p, "tensor '%s': data_offsets [%llu, %llu] end before they begin", nm,
                       (unsigned long long)info->begin, (unsigned long long)info->end);
    uint64_t want = numel * fx_dtype_size(info->dtype);
    if (info->end - info->begin != want)
        return st_fail(err, p,
                       "tensor '%s': data_offsets [%llu, %llu] hold %llu bytes (file bytes %llu to "
                       "%llu) but dtype %s and its shape need %llu",
                       nm, (unsigned long long)info->begin, (unsigned long long)info->end,
                       (unsigned long long)(info->end - info->begin),
                       (unsigned long long)(f->data_start + info->begin),
                       (unsigned long long)(f->data_start + info->end), dt->valuestring,
                       (unsigned long long)want);
    return FX_OK;
}

static int parse_metadata(fx_st_file *f, const cJSON *m, fx_err *err) {
    if (!cJSON_IsObject(m))
        return st_fail(err, f->path, "\"__metadata__\" must be an object of strings");
    int n = cJSON_GetArraySize(m);
    f->meta = fx_calloc((size_t)(2 * n + 1), sizeof *f->meta);
    if (!f->meta) return fx_err_setf(err, FX_ENOMEM, "out of memory reading %s", f->path);
    for (const cJSON *kv = m->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv))
            return st_fail(err, f->path, "\"__metadata__\" value of '%s' is not a string",
                           kv->string);
        char *k = fx_strdup(kv->string), *v = fx_strdup(kv->valuestring);
        f->meta[2 * f->nmeta] = k;
        f->meta[2 * f->nmeta + 1] = v;
        f->nmeta++;
        if (!k || !v) return fx_err_setf(err, FX_ENOMEM, "out of memory reading %s", f->path);
    }
    return FX_OK;
}

static int by_range(const void *a, const void *b) {
    const fx_st_info *x = *(const fx_st_info *const *)a, *y = *(const fx_st_info *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* The ranges must tile [0, data_len): sorted by begin, each begins where the previous ended. */
static int check_tiling(fx_st_file *f, fx_err *err) {
    if (f->n == 0) {
        if (f->data_len)
            return st_fail(err, f->path,
                           "%llu bytes of data after the header (from byte %llu) belong to no "
                           "tensor",
                           (unsigned long long)f->data_len, (unsigned long long)f->data_start);
        return FX_OK;
    }
    const fx_st_info **order = fx_malloc(sizeof *order * (size_t)f->n);
    if (!order) return fx_err_setf(err, FX_ENOMEM, "out of memory reading %s", f->path);
    for (int i = 0; i < f->n; i++) order[i] = &f->infos[i];
    qsort(order, (size_t)f->n, sizeof *order, by_range);
    uint64_t at = 0;
    int rc = FX_OK;
    for (int i = 0; i < f->n && !rc; i++) {
        const fx_st_info *t = order[i];
        if (t->begin > at)
            rc = st_fail(err, f->path,
                         "gap in the data section: bytes %llu to %llu (file bytes %llu to %llu) "
                         "belong to no tensor; '%s' begins at %llu",
                         (unsigned long long)at, (unsigned long long)t->begin,
                         (unsigned long long)(f->data_start + at),
                         (unsigned long long)(f->data_start + t->begin), t->name,
                         (unsigned long long)t->begin);
        else if (t->begin < at)
            rc = st_fail(err, f->path,
                         "tensor '%s' data_offsets [%llu, %llu] overlap tensor '%s', which ends "
                         "at %llu (file byte %llu)",
                         t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
                         order[i - 1]->name, (unsigned long long)at,
                         (unsigned long long)(f->data_start + at));
        at = t->end;
    }
    if (!rc && at != f->data_len) {
        if (at > f->data_len)
            rc = st_fail(err, f->path,
                         "the data section holds %llu bytes (file bytes %llu to %llu) but the "
                         "header's tensors need %llu: the file is truncated",
                         (unsigned long long)f->data_len, (unsigned long long)f->data_start,
                         (unsigned long long)(f->data_start + f->data_len), (unsigned long long)at);
        else
            rc = st_fail(err, f->path,
                         "%llu bytes of data after the last tensor (from file byte %llu) belong to "
                         "no tensor",
                         (unsigned long long)(f->data_len - at),
                         (unsigned long long)(f->data_start + at));
    }
    fx_free(order);
    return rc;
}

/* Parses and validates the JSON header text (n bytes, not NUL-terminated in the file). */
static int parse_header(fx_st_file *f, const char *text, size_t n, fx_err *err) {
    size_t i = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) i++;
    if (i == n || text[i] != '{')
        return st_fail(err, f->path,
                       "the header (bytes 8 to %llu) must be a JSON object starting with '{', "
                       "found %s at byte %llu",
                       (unsigned long long)(8 + n), i == n ? "nothing" : "another character",
                       (unsigned long long)(8 + i));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t pos = (at && at >= text && at <= text + n) ? (size_t)(at - text) : 0;
        return st_fail(err, f->path, "the header is not valid JSON (error near file byte %llu)",
                       (unsigned long long)(8 + pos));
    }
    for (const char *q = end; q && q < text + n; q++)
        if (*q != ' ' && *q != '\0' && *q != '\n' && *q != '\r' && *q != '\t') {
            cJSON_Delete(root);
            return st_fail(err, f->path,
                           "unexpected bytes after the header's JSON object at file byte %llu "
                           "(only space padding may follow)",
                           (unsigned long long)(8 + (size_t)(q - text)));
        }
    int rc = FX_OK;
    if (!cJSON_IsObject(root)) rc = st_fail(err, f->path, "the header is not a JSON object");
    int count = rc ? 0 : cJSON_GetArraySize(root);
    if (!rc) {
        f->infos = fx_calloc((size_t)count + 1, sizeof *f->infos);
        if (!f->infos) rc = fx_err_setf(err, FX_ENOMEM, "out of memory reading %s", f->path);
    }
    for (const cJSON *e = rc ? NULL : root->child; e && !rc; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (f->meta)
                rc = st_fail(err, f->path, "duplicate \"__metadata__\" entry in the header");
            else
                rc = parse_metadata(f, e, err);
            continue;
        }
        if (fx_safetensors_find(f, e->string) >= 0) {
            rc = st_fail(err, f->path, "duplicate tensor name '%s' in the header", e->string);
            break;
        }
        fx_st_info *info = &f->infos[f->n];
        info->name = fx_strdup(e->string);
        if (!info->name) {
            rc = fx_err_setf(err, FX_ENOMEM, "out of memory reading %s", f->path);
            break;
        }
        f->n++;
        rc = parse_entry(f, e, info, err);
    }
    cJSON_Delete(root);
    if (!rc) rc = check_tiling(f, err);
    return rc;
}

int fx_safetensors_open(const char *path, fx_st_file **out, fx_err *err) {
    *out = NULL;
    fx_st_file *f = fx_calloc(1, sizeof *f);
    if (!f || !(f->path = fx_strdup(path))) {
        fx_free(f);
        return fx_err_setf(err, FX_ENOMEM, "out of memory opening %s", path);
    }
    int rc = FX_OK;
    char *text = NULL;
    f->fp = fopen(path, "rb");
    if (!f->fp) {
        rc = st_fail(err, path, "cannot open the file for reading");
        goto done;
    }
    if (fseeko(f->fp, 0, SEEK_END) != 0) {
        rc = st_fail(err, path, "cannot seek in the file");
        goto done;
    }
    off_t fsize = ftello(f->fp);
    unsigned char lenbuf[8];
    if (fsize < 8) {
        rc = st_fail(err, path,
                     "the file is %lld bytes long; a safetensors file starts with an 8-byte "
                     "header length",
                     (long long)(fsize < 0 ? 0 : fsize));
        goto done;
    }
    if (fseeko(f->fp, 0, SEEK_SET) != 0 || fread(lenbuf, 1, 8, f->fp) != 8) {
        rc = st_fail(err, path, "cannot read the header length (bytes 0 to 8)");
        goto done;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | lenbuf[i];
    if (hlen > FX_ST_MAX_HEADER) {
        rc = st_fail(err, path,
                     "the header length at byte 0 says %llu bytes, more than the %d allowed",
                     (unsigned long long)hlen, FX_ST_MAX_HEADER);
        goto done;
    }
    if (hlen > (uint64_t)fsize - 8) {
        rc = st_fail(err, path,
                     "the header length at byte 0 says %llu bytes, but only %llu bytes follow it",
                     (unsigned long long)hlen, (unsigned long long)((uint64_t)fsize - 8));
        goto done;
    }
    if (hlen < 2) {
        rc = st_fail(err, path, "the header length at byte 0 is %llu: too small for a JSON object",
                     (unsigned long long)hlen);
        goto done;
    }
    f->data_start = 8 + hlen;
    f->data_len = (uint64_t)fsize - f->data_start;
    text = fx_malloc((size_t)hlen + 1);
    if (!text) {
        rc = fx_err_setf(err, FX_ENOMEM, "out of memory reading the header of %s", path);
        goto done;
    }
    if (fread(text, 1, (size_t)hlen, f->fp) != (size_t)hlen) {
        rc = st_fail(err, path, "cannot read the header (bytes 8 to %llu)",
                     (unsigned long long)(8 + hlen));
        goto done;
    }
    text[hlen] = '\0';
    rc = parse_header(f, text, (size_t)hlen, err);
done:
    fx_free(text);
    if (rc) {
        fx_safetensors_close(f);
        return rc;
    }
    *out = f;
    return FX_OK;
}

int fx_safetensors_count(const fx_st_file *f) { return f->n; }

const fx_st_info *fx_safetensors_info(const fx_st_file *f, int i) {
    return (i >= 0 && i < f->n) ? &f->infos[i] : NULL;
}

int fx_safetensors_find(const fx_st_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->infos[i].name, name)) return i;
    return -1;
}

int fx_safetensors_metadata_count(const fx_st_file *f) { return f->nmeta; }
const char *fx_safetensors_metadata_key(const fx_st_file *f, int i) {
    return (i >= 0 && i < f->nmeta) ? f->meta[2 * i] : NULL;
}
const char *fx_safetensors_metadata_value(const fx_st_file *f, int i) {
    return (i >= 0 && i < f->nmeta) ? f->meta[2 * i + 1] : NULL;
}

int fx_safetensors_read(fx_st_file *f, int i, fx_tensor **out, fx_err *err) {
    *out = NULL;
    if (i < 0 || i >= f->n)
        return fx_err_setf(err, FX_EINDEX, "%s has no tensor number %d", f->path, i);
    const fx_st_info *info = &f->infos[i];
    fx_tensor *t = NULL;
    int rc = fx_tensor_empty(info->ndim, info->sizes, info->dtype, FX_DEVICE_CPU, &t, err);
    if (rc) return rc;
    size_t nbytes = (size_t)(info->end - info->begin);
    if (nbytes) {
        if (fseeko(f->fp, (off_t)(f->data_start + info->begin), SEEK_SET) != 0 ||
            fread(fx_tensor_data(t), 1, nbytes, f->fp) != nbytes) {
            fx_tensor_release(t);
            return st_fail(err, f->path,
                           "cannot read tensor '%s' (file bytes %llu to %llu): the file was "
                           "truncated or changed since it was opened",
                           info->name, (unsigned long long)(f->data_start + info->begin),
                           (unsigned long long)(f->data_start + info->end));
        }
    }
    *out = t;
    return FX_OK;
}

/* ==== save ==================================================================================== */

/* Writes t's elements in row-major order: whole rows at once when the last dim is dense. */
static int write_tensor(FILE *fp, const fx_tensor *t) {
    int nd = fx_tensor_ndim(t);
    size_t isz = fx_dtype_size(fx_tensor_dtype(t));
    int64_t numel = fx_tensor_numel(t);
    const char *base = fx_tensor_data(t);
    if (numel == 0) return 0;
    if (fx_tensor_is_contiguous(t))
        return fwrite(base, isz, (size_t)numel, fp) == (size_t)numel ? 0 : -1;
    const int64_t *sz = fx_tensor_sizes(t), *st = fx_tensor_strides(t);
    int64_t idx[FX_MAX_DIMS] = {0};
    int64_t row = nd ? sz[nd - 1] : 1, rs = nd ? st[nd - 1] : 1;
    for (int64_t done = 0; done < numel; done += row) {
        int64_t off = 0;
        for (int d = 0; d + 1 < nd; d++) off += idx[d] * st[d];
        const char *p = base + off * (int64_t)isz;
        if (rs == 1) {
            if (fwrite(p, isz, (size_t)row, fp) != (size_t)row) return -1;
        } else {
            for (int64_t k = 0; k < row; k++)
                if (fwrite(p + k * rs * (int64_t)isz, isz, 1, fp) != 1) return -1;
        }
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < sz[d]) break;
            idx[d] = 0;
        }
    }
    return 0;
}

static cJSON *entry_json(const fx_tensor *t, uint64_t begin, uint64_t end) {
    cJSON *e = cJSON_CreateObject();
    cJSON *shape = cJSON_CreateArray(), *offs = cJSON_CreateArray();
    if (!e || !shape || !offs) {
        cJSON_Delete(e);
        cJSON_Delete(shape);
        cJSON_Delete(offs);
        return NULL;
    }
    cJSON_AddItemToObject(e, "dtype",
                          cJSON_CreateString(fx_safetensors_dtype_name(fx_tensor_dtype(t))));
    for (int d = 0; d < fx_tensor_ndim(t); d++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)fx_tensor_size(t, d)));
    cJSON_AddItemToObject(e, "shape", shape);
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)begin));
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)end));
    cJSON_AddItemToObject(e, "data_offsets", offs);
    return e;
}

int fx_safetensors_save(const char *path, int n, const char *const *names,
                        fx_tensor *const *tensors, int nmeta, const char *const *meta,
                        fx_err *err) {
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0])
            return fx_err_setf(err, FX_EARG, "save_safetensors: tensor %d has an empty name", i);
        if (!strcmp(names[i], "__metadata__"))
            return fx_err_setf(err, FX_EARG,
                               "save_safetensors: '__metadata__' is reserved and cannot name a "
                               "tensor");
        if (fx_tensor_is_meta(tensors[i]))
            return fx_err_setf(err, FX_EARG,
                               "save_safetensors: tensor '%s' is on the meta device and has no "
                               "data to save",
                               names[i]);
        if (!fx_safetensors_dtype_name(fx_tensor_dtype(tensors[i])))
            return fx_err_setf(err, FX_ETYPE, "save_safetensors: tensor '%s' has dtype %s",
                               names[i], fx_dtype_name(fx_tensor_dtype(tensors[i])));
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j]))
                return fx_err_setf(err, FX_EARG, "save_safetensors: duplicate tensor name '%s'",
                                   names[i]);
    }
    cJSON *root = cJSON_CreateObject();
    if (!root) return fx_err_setf(err, FX_ENOMEM, "out of memory writing %s", path);
    bool ok = true;
    if (nmeta > 0) {
        cJSON *m = cJSON_CreateObject();
        ok = m != NULL;
        for (int k = 0; ok && k < nmeta; k++)
            ok = cJSON_AddStringToObject(m, meta[2 * k], meta[2 * k + 1]) != NULL;
        if (m) cJSON_AddItemToObject(root, "__metadata__", m);
    }
    uint64_t at = 0;
    for (int i = 0; ok && i < n; i++) {
        uint64_t nb =
            (uint64_t)fx_tensor_numel(tensors[i]) * fx_dtype_size(fx_tensor_dtype(tensors[i]));
        cJSON *e = entry_json(tensors[i], at, at + nb);
        ok = e != NULL;
        if (e) cJSON_AddItemToObject(root, names[i], e);
        at += nb;
    }
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json) return fx_err_setf(err, FX_ENOMEM, "out of memory writing %s", path);
    size_t jl = strlen(json), hl = (jl + 7) / 8 * 8; /* 8 + hl is a multiple of 8 */
    unsigned char lenbuf[8];
    for (int i = 0; i < 8; i++) lenbuf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    FILE *fp = fopen(path, "wb");
    int rc = FX_OK;
    if (!fp) {
        rc = st_fail(err, path, "cannot open the file for writing");
    } else {
        bool w = fwrite(lenbuf, 1, 8, fp) == 8 && fwrite(json, 1, jl, fp) == jl;
        for (size_t k = jl; w && k < hl; k++) w = fputc(' ', fp) != EOF;
        for (int i = 0; w && i < n; i++) w = write_tensor(fp, tensors[i]) == 0;
        if (fclose(fp) != 0) w = false;
        if (!w) rc = st_fail(err, path, "cannot write the file (disk full?)");
    }
    cJSON_free(json);
    return rc;
}
