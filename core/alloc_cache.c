/* core/alloc_cache.c — size-class free lists of large freed blocks, under a byte limit.
 * Layer: core (libc, pthreads; the sanitizer and valgrind headers when present). The rules are in
 * core/alloc_cache.h. Each cached block has a small node (plain malloc) on two lists: its class's
 * list (most recently freed first) and the age list of all cached blocks (least recently freed
 * first, for eviction). */
#include "core/alloc_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define FX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FX_ASAN 1
#endif
#endif
#ifdef FX_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define FX_VALGRIND 1
#endif
#endif
#ifdef FX_VALGRIND
#define VG_NOACCESS(p, n) VALGRIND_MAKE_MEM_NOACCESS((p), (n))
#define VG_UNDEFINED(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#else
#define VG_NOACCESS(p, n) ((void)(p), (void)(n))
#define VG_UNDEFINED(p, n) ((void)(p), (void)(n))
#endif

/* No access to [p, p + n): a cached block, or the slack of a handed-out one. */
static void hide(unsigned char *p, size_t n) {
    if (!n) return;
    POISON(p, n);
    VG_NOACCESS(p, n);
}
/* [p, p + n) handed out: accessible, contents undefined. */
static void show(unsigned char *p, size_t n) {
    if (!n) return;
    UNPOISON(p, n);
    VG_UNDEFINED(p, n);
}

/* Classes: 8 per power of two from FX_ALLOC_CACHE_MIN (2^20) up to the largest block fx_alloc
 * makes (FX_ALLOC_MAX = 2^40 plus its header, rounded up: class 2^40 + 2^37). */
#define MIN_LOG 20
#define SUBCLASSES 8
#define NCLASS ((41 - MIN_LOG) * SUBCLASSES)

#define HUGE_PAGE ((size_t)2 << 20) /* x86-64 and arm64 (4 KiB base pages) */

static int floor_log2(size_t n) { return 63 - __builtin_clzll((unsigned long long)n); }

size_t fx_alloc_cache_class_size(size_t bytes) {
    if (bytes < FX_ALLOC_CACHE_MIN || bytes > (size_t)1 << 62) return bytes;
    size_t step = (size_t)1 << (floor_log2(bytes) - 3); /* 1/8 of the power of two below */
    return (bytes + step - 1) & ~(step - 1);
}

/* The class of a class size (a value fx_alloc_cache_class_size returned), or -1 past the last. */
static int class_of(size_t cap) {
    int k = floor_log2(cap);
    int idx = (k - MIN_LOG) * SUBCLASSES + (int)(cap >> (k - 3)) - SUBCLASSES;
    return idx < NCLASS ? idx : -1;
}

typedef struct node {
    unsigned char *block;
    size_t cap;
    int cls;
    struct node *cprev, *cnext; /* its class's list, newest first */
    struct node *older, *newer; /* the age list */
} node;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static node *g_class[NCLASS];
static node *g_oldest, *g_newest;
static fx_alloc_cache_stats g_st = {.limit = FX_ALLOC_CACHE_DEFAULT_LIMIT};

/* Unlinks n from both lists and the counters (lock held). */
static void unlink_node(node *n) {
    if (n->cprev)
        n->cprev->cnext = n->cnext;
    else
        g_class[n->cls] = n->cnext;
    if (n->cnext) n->cnext->cprev = n->cprev;
    if (n->older)
        n->older->newer = n->newer;
    else
        g_oldest = n->newer;
    if (n->newer)
        n->newer->older = n->older;
    else
        g_newest = n->older;
    g_st.cached_blocks--;
    g_st.cached_bytes -= (int64_t)n->cap;
}

/* Unlinks the least recently freed blocks until `room` more bytes fit under the limit; returns
 * them as a chain through `newer` for the caller to free outside the lock (lock held). */
static node *evict_for(size_t room) {
    node *chain = NULL, **tail = &chain;
    while (g_oldest && (size_t)g_st.cached_bytes + room > g_st.limit) {
        node *n = g_oldest;
        unlink_node(n);
        n->newer = NULL;
        *tail = n;
        tail = &n->newer;
        g_st.evictions++;
    }
    return chain;
}

/* Frees a chain from evict_for (or the whole cache). */
static void free_chain(node *n) {
    while (n) {
        node *next = n->newer;
        UNPOISON(n->block, n->cap);
        free(n->block);
        free(n);
        n = next;
    }
}

/* A new block of c bytes from the system (the first `used` zeroed when `zero`). Blocks of 2 MiB
 * or more start on a 2 MiB boundary and are marked for transparent huge pages before anything
 * touches them (MADV_HUGEPAGE; THP is often in "madvise" mode): a GEMV streaming large weights
 * then misses the TLB 512 times less often. posix_memalign keeps the block a malloc block, so
 * ASan, LeakSanitizer and valgrind track it as any other. */
static unsigned char *fresh(size_t c, size_t used, int zero) {
    if (c < HUGE_PAGE) return zero ? calloc(1, c) : malloc(c);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, c)) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, c & ~(HUGE_PAGE - 1), MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
    if (zero) memset(p, 0, used);
    return p;
}

void *fx_alloc_cache_get(size_t used, int zero, size_t *cap) {
    size_t c = fx_alloc_cache_class_size(used);
    int cls = class_of(c);
    *cap = c;
    node *n = NULL;
    pthread_mutex_lock(&g_lock);
    if (cls >= 0 && (n = g_class[cls]) != NULL) {
        unlink_node(n);
        g_st.hits++;
    } else {
        g_st.misses++;
    }
    pthread_mutex_unlock(&g_lock);
    if (n) {
        unsigned char *b = n->block;
        free(n);
        show(b, used);
        if (zero) memset(b, 0, used);
        return b;
    }
    unsigned char *b = fresh(c, used, zero);
    if (!b) { /* memory is short: give the cached blocks back and try once more */
        pthread_mutex_lock(&g_lock);
        int had = g_oldest != NULL;
        if (had) g_st.retries++;
        pthread_mutex_unlock(&g_lock);
        if (!had) return NULL;
        fx_alloc_cache_empty();
        if (!(b = fresh(c, used, zero))) return NULL;
    }
    hide(b + used, c - used);
    return b;
}

void fx_alloc_cache_put(void *block, size_t cap) {
    if (!block) return;
    unsigned char *b = block;
    int cls = class_of(cap);
    node *n = cls >= 0 ? malloc(sizeof *n) : NULL;
    node *evicted = NULL;
    int kept = 0;
    hide(b, cap); /* before it is on a list: from then on another thread may take it */
    pthread_mutex_lock(&g_lock);
    if (n && cap <= g_st.limit) {
        evicted = evict_for(cap);
        *n = (node){.block = b, .cap = cap, .cls = cls, .cnext = g_class[cls], .older = g_newest};
        if (g_class[cls]) g_class[cls]->cprev = n;
        g_class[cls] = n;
        if (g_newest)
            g_newest->newer = n;
        else
            g_oldest = n;
        g_newest = n;
        g_st.cached_blocks++;
        g_st.cached_bytes += (int64_t)cap;
        if (g_st.cached_bytes > g_st.peak_cached_bytes) g_st.peak_cached_bytes = g_st.cached_bytes;
        kept = 1;
    } else if (cap > g_st.limit) {
        g_st.too_large++;
    }
    pthread_mutex_unlock(&g_lock);
    free_chain(evicted);
    if (!kept) {
        free(n);
        UNPOISON(b, cap);
        free(b);
    }
}

void fx_alloc_cache_resized(void *block, size_t old_used, size_t used) {
    unsigned char *b = block;
    if (used > old_used)
        show(b + old_used, used - old_used);
    else
        hide(b + used, old_used - used);
}

void fx_alloc_cache_empty(void) {
    pthread_mutex_lock(&g_lock);
    node *all = g_oldest; /* the age list already chains every node through `newer` */
    for (int i = 0; i < NCLASS; i++) g_class[i] = NULL;
    g_oldest = g_newest = NULL;
    g_st.cached_blocks = 0;
    g_st.cached_bytes = 0;
    pthread_mutex_unlock(&g_lock);
    free_chain(all);
}

size_t fx_alloc_cache_set_limit(size_t bytes) {
    pthread_mutex_lock(&g_lock);
    size_t old = g_st.limit;
    g_st.limit = bytes;
    node *evicted = evict_for(0);
    pthread_mutex_unlock(&g_lock);
    free_chain(evicted);
    return old;
}

fx_alloc_cache_stats fx_alloc_cache_get_stats(void) {
    pthread_mutex_lock(&g_lock);
    fx_alloc_cache_stats s = g_st;
    pthread_mutex_unlock(&g_lock);
    return s;
}

void fx_alloc_cache_reset_stats(void) {
    pthread_mutex_lock(&g_lock);
    g_st.hits = g_st.misses = g_st.evictions = g_st.too_large = g_st.retries = 0;
    g_st.peak_cached_bytes = g_st.cached_bytes;
    pthread_mutex_unlock(&g_lock);
}
