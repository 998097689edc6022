/* core/fx_alloc.c — counting allocator with failure injection.
 * Layer: core, above core/alloc_cache.c (large blocks come from its cache). Each block carries a
 * 16-byte header holding its size, so counters stay exact. */
#include "core/fx_alloc.h"

#include "core/alloc_cache.h"

#include <stdlib.h>
#include <string.h>

/* Each block starts with a 16-byte header: the payload size, then the block's size when it came
 * from the large-block cache (core/alloc_cache.h: blocks of FX_ALLOC_CACHE_MIN bytes or more,
 * header included), 0 when it came from malloc. */
#define HDR 16

static void set_hdr(unsigned char *base, size_t n, size_t cap) {
    memcpy(base, &n, sizeof n);
    memcpy(base + sizeof n, &cap, sizeof cap);
}
static void get_hdr(const unsigned char *base, size_t *n, size_t *cap) {
    memcpy(n, base, sizeof *n);
    memcpy(cap, base + sizeof *n, sizeof *cap);
}

/* A new block for n payload bytes (zeroed when `zero`): from the cache when large. */
static unsigned char *block_new(size_t n, int zero) {
    size_t cap = 0;
    unsigned char *p;
    if (n + HDR >= FX_ALLOC_CACHE_MIN)
        p = fx_alloc_cache_get(n + HDR, zero, &cap);
    else
        p = zero ? calloc(1, n + HDR) : malloc(n + HDR);
    if (p) set_hdr(p, n, cap);
    return p;
}

static void block_free(unsigned char *base) {
    size_t n, cap;
    get_hdr(base, &n, &cap);
    if (cap)
        fx_alloc_cache_put(base, cap);
    else
        free(base);
}

static fx_alloc_stats g_stats;
static int64_t g_fail_at; /* 0 = off; else countdown to the failing call */
static int g_fail_sticky;

static int should_fail(void) {
    if (g_fail_at <= 0) return 0;
    if (g_fail_at == 1) {
        if (!g_fail_sticky) g_fail_at = 0;
        return 1;
    }
    g_fail_at--;
    return 0;
}

static void account(int64_t blocks, int64_t bytes) {
    __atomic_add_fetch(&g_stats.live_blocks, blocks, __ATOMIC_RELAXED);
    int64_t live = __atomic_add_fetch(&g_stats.live_bytes, bytes, __ATOMIC_RELAXED);
    if (live > g_stats.peak_bytes) g_stats.peak_bytes = live;
    if (blocks > 0) __atomic_add_fetch(&g_stats.total_calls, 1, __ATOMIC_RELAXED);
}

void *fx_malloc(size_t n) {
    if (n > FX_ALLOC_MAX || should_fail()) return NULL;
    unsigned char *p = block_new(n, 0);
    if (!p) return NULL;
    account(1, (int64_t)n);
    return p + HDR;
}

void *fx_calloc(size_t count, size_t size) {
    if (size && count > FX_ALLOC_MAX / size) return NULL;
    size_t n = count * size;
    if (should_fail()) return NULL;
    unsigned char *p = block_new(n, 1);
    if (!p) return NULL;
    account(1, (int64_t)n);
    return p + HDR;
}

void *fx_realloc(void *q, size_t n) {
    if (!q) return fx_malloc(n);
    if (n > FX_ALLOC_MAX || should_fail()) return NULL;
    unsigned char *base = (unsigned char *)q - HDR, *p;
    size_t old, cap;
    get_hdr(base, &old, &cap);
    int large = n + HDR >= FX_ALLOC_CACHE_MIN;
    if (!cap && !large) { /* small to small: malloc's own realloc */
        if (!(p = realloc(base, n + HDR))) return NULL;
        set_hdr(p, n, 0);
    } else if (cap && large && fx_alloc_cache_class_size(n + HDR) == cap) { /* same class */
        fx_alloc_cache_resized(base, old + HDR, n + HDR);
        p = base;
        set_hdr(p, n, cap);
    } else { /* into or out of the cache, or another class: move */
        if (!(p = block_new(n, 0))) return NULL;
        memcpy(p + HDR, q, old < n ? old : n);
        block_free(base);
    }
    account(0, (int64_t)n - (int64_t)old);
    return p + HDR;
}

void fx_free(void *q) {
    if (!q) return;
    unsigned char *base = (unsigned char *)q - HDR;
    size_t n, cap;
    get_hdr(base, &n, &cap);
    account(-1, -(int64_t)n);
    block_free(base);
}

char *fx_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = fx_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

fx_alloc_stats fx_alloc_get_stats(void) { return g_stats; }

void fx_alloc_fail_at(int64_t n, int sticky) {
    g_fail_at = n > 0 ? n : 0;
    g_fail_sticky = sticky;
}
