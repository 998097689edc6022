/* core/alloc_cache.h — the cache of large freed blocks behind fx_malloc / fx_free.
 * Layer: core (below fx_alloc.c; libc, pthreads only).
 *
 * Why: tensor programs free and allocate buffers of the same large sizes over and over (every
 * op's fresh output, every interpreter step). glibc maps each block above its mmap threshold
 * (at most 32 MiB) afresh and unmaps it on free, so every use page-faults the whole buffer in
 * again: an elementwise op writing a fresh 64 MiB tensor ran at 1-2% of memcpy speed from C
 * (bench/bench_kernels.c, "elementwise"). PyTorch's caching allocators keep freed blocks for the
 * next request instead (c10/cuda/CUDACachingAllocator.cpp; torch.cuda.empty_cache and
 * torch.cuda.memory_stats are its controls); this is the same idea for libfxdb's CPU buffers.
 *
 * The rules (tests/unit/test_alloc_cache.c checks each):
 *  - Only blocks of at least FX_ALLOC_CACHE_MIN bytes are cached; smaller ones stay with malloc.
 *  - A large request is rounded up to its size class: 8 classes per power of two (so at most
 *    12.5% of a block is slack), e.g. 1 MiB, 1.125 MiB, 1.25 MiB, ... 2 MiB, 2.25 MiB, ... A
 *    freed block waits on its class's free list; a request takes the most recently freed block
 *    of its class (its pages are the likeliest still in cache and TLB), else a new block of the
 *    class size comes from malloc. A growing buffer (a KV cache gaining a row per step) stays in
 *    its class for many steps instead of missing an exact-size match each time.
 *  - The cached bytes never exceed the limit (FX_ALLOC_CACHE_DEFAULT_LIMIT, 1 GiB, or
 *    fx_alloc_cache_set_limit): a block that does not fit pushes out the least recently freed
 *    blocks; a block larger than the limit is freed at once. Limit 0 turns caching off.
 *  - When malloc fails for a large block, the cache is emptied and malloc tried once more (as
 *    the CUDA allocator frees its cached blocks and retries), so cached memory never causes an
 *    out-of-memory error that an uncached program would not have.
 *  - Cached blocks are not live: fx_alloc_get_stats counts only blocks the program holds, so the
 *    leak checks of the tests see a freed tensor as freed. Allocation-failure injection
 *    (fx_alloc_fail_at) and the FX_ALLOC_MAX refusal happen in fx_alloc.c before the cache is
 *    asked, so a cached block never hides an injected failure or an absurd size.
 *  - Under AddressSanitizer a cached block is poisoned (ASAN_POISON_MEMORY_REGION), so a read or
 *    write through a dangling pointer into it is reported ("use-after-poison") as a use after
 *    free would be; a block handed out is unpoisoned only up to the bytes asked for, so an
 *    overflow into the class's slack is reported too. Under valgrind (memcheck) the same is done
 *    with its client requests (cached: no access; handed out: undefined, as malloc's memory is).
 *  - A new block of 2 MiB or more starts on a 2 MiB boundary and is advised for transparent
 *    huge pages (madvise MADV_HUGEPAGE) before its first touch, so large tensors (weights,
 *    activations) cost far fewer TLB misses; where THP is off the advice does nothing.
 *  - Thread-safe: one mutex around the lists (large allocations are rare next to the work done
 *    on them). fx_alloc_cache_empty may be called at any time.
 */
#ifndef FX_ALLOC_CACHE_H
#define FX_ALLOC_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* Smallest block (bytes, fx_alloc's header included) the cache keeps. */
#define FX_ALLOC_CACHE_MIN ((size_t)1 << 20)
/* The byte limit until fx_alloc_cache_set_limit changes it. */
#define FX_ALLOC_CACHE_DEFAULT_LIMIT ((size_t)1 << 30)

/* Frees every cached block (torch.cuda.empty_cache). Live blocks are untouched. Thread-safe. */
void fx_alloc_cache_empty(void);

/* Sets the most bytes the cache may hold (0: no caching) and returns the previous limit. Cached
 * blocks beyond the new limit are freed at once, least recently freed first. Thread-safe. */
size_t fx_alloc_cache_set_limit(size_t bytes);

/* The counters (torch.cuda.memory_stats's "reserved" side). Bytes are block sizes (class sizes,
 * headers included). */
typedef struct fx_alloc_cache_stats {
    int64_t cached_blocks;     /* blocks waiting for reuse now */
    int64_t cached_bytes;      /* their bytes */
    int64_t peak_cached_bytes; /* largest cached_bytes since the last reset */
    int64_t hits;              /* large requests served from the cache */
    int64_t misses;            /* large requests that went to malloc */
    int64_t evictions;         /* cached blocks freed to make room under the limit */
    int64_t too_large;         /* freed blocks larger than the limit (freed at once) */
    int64_t retries;           /* malloc failures retried after emptying the cache */
    size_t limit;              /* the byte limit */
} fx_alloc_cache_stats;
fx_alloc_cache_stats fx_alloc_cache_get_stats(void);
/* Zeroes hits, misses, evictions, too_large and retries and sets peak_cached_bytes to
 * cached_bytes (torch.cuda.reset_peak_memory_stats). */
void fx_alloc_cache_reset_stats(void);

/* Class size of a large block: `bytes` rounded up to its size class (a multiple of 1/8 of the
 * power of two at or below it). `bytes` below FX_ALLOC_CACHE_MIN (or above 2^62) are returned as
 * they are. */
size_t fx_alloc_cache_class_size(size_t bytes);

/* ---- the allocator's side (core/fx_alloc.c); not for other callers -------------------------- */

/* A block of at least `used` bytes (used >= FX_ALLOC_CACHE_MIN): a cached block of used's class,
 * else a new one from malloc (calloc when `zero`; cached blocks are zeroed with memset then).
 * Stores the block's size (its class size) in *cap. NULL when malloc fails even after the cache
 * was emptied. The first `used` bytes are accessible; the rest is poisoned under ASan. */
void *fx_alloc_cache_get(size_t used, int zero, size_t *cap);
/* Gives back a block of `cap` bytes from fx_alloc_cache_get: kept for reuse, or freed. */
void fx_alloc_cache_put(void *block, size_t cap);
/* A handed-out block resized within its class from `old_used` to `used` bytes: bytes it gains
 * become accessible (undefined for valgrind), bytes it loses poisoned. No-op without ASan or
 * valgrind. */
void fx_alloc_cache_resized(void *block, size_t old_used, size_t used);

#endif
