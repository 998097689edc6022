/* core/fx_alloc.h — the one allocator hook of core, with live-byte counters and fail-at-N.
 * Layer: core. Every core allocation goes through fx_malloc/fx_calloc/fx_realloc/fx_free so the
 * tests can make the N-th allocation fail (SQLite faultsim, Lua Memcontrol) and count leaks. */
#ifndef FX_ALLOC_H
#define FX_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Largest single allocation core will attempt (bytes). Larger requests fail with NULL, so a
 * tensor of absurd size is an FX_ENOMEM error, not an OOM kill. */
#define FX_ALLOC_MAX ((size_t)1 << 40)

/* Allocate / free. Return NULL on failure (never abort). fx_free(NULL) is a no-op. Blocks of
 * about 1 MiB or more come from and go back to the cache of core/alloc_cache.h (freed large
 * blocks wait there for the next request of their size class, so fresh large tensors are not
 * page-faulted in each time); fx_alloc_cache_empty gives them back to the system. */
void *fx_malloc(size_t n);
void *fx_calloc(size_t count, size_t size);
void *fx_realloc(void *p, size_t n);
void fx_free(void *p);
/* fx_strdup: a copy of s owned by the caller (fx_free), or NULL on failure or s == NULL. */
char *fx_strdup(const char *s);

/* Statistics, for tests and benchmarks. Blocks waiting in the cache are not live (their own
 * counters: fx_alloc_cache_get_stats). */
typedef struct fx_alloc_stats {
    int64_t live_blocks; /* blocks allocated and not yet freed */
    int64_t live_bytes;  /* bytes in those blocks */
    int64_t peak_bytes;  /* largest live_bytes seen */
    int64_t total_calls; /* successful allocations so far */
} fx_alloc_stats;
fx_alloc_stats fx_alloc_get_stats(void);

/* Makes the n-th allocation from now fail (1 = the next one), and every one after it when
 * `sticky`. n <= 0 turns injection off. Not thread-safe: for single-threaded tests only. */
void fx_alloc_fail_at(int64_t n, int sticky);

#endif
