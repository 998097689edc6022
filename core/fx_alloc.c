/* core/fx_alloc.c — counting allocator with failure injection.
 * Layer: core. Each block carries a 16-byte header holding its size, so counters stay exact. */
#include "core/fx_alloc.h"

#include <stdlib.h>
#include <string.h>

#define HDR 16

static fx_alloc_stats g_stats;
static int64_t g_fail_at;  /* 0 = off; else countdown to the failing call */
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
    unsigned char *p = malloc(n + HDR);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    account(1, (int64_t)n);
    return p + HDR;
}

void *fx_calloc(size_t count, size_t size) {
    if (size && count > FX_ALLOC_MAX / size) return NULL;
    size_t n = count * size;
    if (should_fail()) return NULL;
    unsigned char *p = calloc(1, n + HDR);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    account(1, (int64_t)n);
    return p + HDR;
}

void *fx_realloc(void *q, size_t n) {
    if (!q) return fx_malloc(n);
    if (n > FX_ALLOC_MAX || should_fail()) return NULL;
    unsigned char *base = (unsigned char *)q - HDR;
    size_t old;
    memcpy(&old, base, sizeof old);
    unsigned char *p = realloc(base, n + HDR);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    account(0, (int64_t)n - (int64_t)old);
    return p + HDR;
}

void fx_free(void *q) {
    if (!q) return;
    unsigned char *base = (unsigned char *)q - HDR;
    size_t n;
    memcpy(&n, base, sizeof n);
    account(-1, -(int64_t)n);
    free(base);
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
