/* tests/unit/test_alloc_cache.c — core/alloc_cache.c, the cache of large freed blocks behind
 * fx_malloc / fx_free: size classes, reuse (most recently freed first), the byte limit and
 * eviction order, what counts as live, failure injection and FX_ALLOC_MAX before the cache,
 * calloc and realloc through it, the retry after emptying when malloc fails, several threads at
 * once, ASan poisoning of cached blocks, huge-page alignment, and tensor storage going through
 * it.
 * Layer: tests (cmocka). */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/fx.h"

#if defined(__SANITIZE_ADDRESS__)
#define T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_ASAN 1
#endif
#endif
#ifdef T_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#define MIB ((size_t)1 << 20)
#define HDR 16 /* fx_alloc's block header: the cache sees payload + 16 bytes */

/* Every test starts from an empty cache with the default limit and zeroed counters. */
static int setup(void **state) {
    (void)state;
    fx_alloc_cache_set_limit(FX_ALLOC_CACHE_DEFAULT_LIMIT);
    fx_alloc_cache_empty();
    fx_alloc_cache_reset_stats();
    return 0;
}

/* 8 classes per power of two from 1 MiB; slack under 12.5%; small sizes untouched. */
static void test_class_sizes(void **state) {
    (void)state;
    assert_int_equal(fx_alloc_cache_class_size(100), 100);
    assert_int_equal(fx_alloc_cache_class_size(MIB - 1), MIB - 1);
    assert_int_equal(fx_alloc_cache_class_size(MIB), MIB);
    assert_int_equal(fx_alloc_cache_class_size(MIB + 1), MIB + MIB / 8);
    assert_int_equal(fx_alloc_cache_class_size(2 * MIB - 1), 2 * MIB);
    assert_int_equal(fx_alloc_cache_class_size(2 * MIB), 2 * MIB);
    assert_int_equal(fx_alloc_cache_class_size(3 * MIB + HDR), 3 * MIB + MIB / 4);
    assert_int_equal(fx_alloc_cache_class_size(64 * MIB + HDR), 72 * MIB);
    size_t classes = 0, prev = 0;
    for (size_t n = MIB; n <= 16 * MIB; n += 4093) {
        size_t c = fx_alloc_cache_class_size(n);
        assert_true(c >= n);
        assert_true((c - n) * 8 < n);                      /* slack < 1/8 */
        assert_int_equal(fx_alloc_cache_class_size(c), c); /* a class size is its own class */
        if (c != prev) classes++, prev = c;
    }
    assert_int_equal(classes, 4 * 8 + 1); /* 1..16 MiB: four doublings of 8 classes, and 16 */
}

/* A freed large block serves the next request of its class; the most recently freed first;
 * another class misses; small blocks are never cached; cached blocks are not live. */
static void test_reuse_rules(void **state) {
    (void)state;
    fx_alloc_stats s0 = fx_alloc_get_stats();
    size_t big = 3 * MIB;
    unsigned char *a = fx_malloc(big), *b = fx_malloc(big);
    assert_non_null(a), assert_non_null(b);
    memset(a, 1, big), memset(b, 2, big);
    /* new blocks of 2 MiB or more start on a 2 MiB boundary (huge pages), fx_alloc's header first
     */
    assert_int_equal(((uintptr_t)a - HDR) % (2 * MIB), 0);
    assert_int_equal(((uintptr_t)b - HDR) % (2 * MIB), 0);
    assert_int_equal(fx_alloc_get_stats().live_blocks, s0.live_blocks + 2);
    fx_free(a);
    fx_free(b);
    assert_int_equal(fx_alloc_get_stats().live_blocks, s0.live_blocks);
    assert_int_equal(fx_alloc_get_stats().live_bytes, s0.live_bytes);
    fx_alloc_cache_stats cs = fx_alloc_cache_get_stats();
    assert_int_equal(cs.cached_blocks, 2);
    assert_int_equal(cs.cached_bytes, 2 * (int64_t)fx_alloc_cache_class_size(big + HDR));
    assert_int_equal(cs.misses, 2);
    assert_int_equal(cs.hits, 0);
    /* same class (a bit larger): the most recently freed block, b */
    unsigned char *c = fx_malloc(big + 1000);
    assert_ptr_equal(c, b);
    unsigned char *d = fx_malloc(big + 2000);
    assert_ptr_equal(d, a);
    assert_int_equal(fx_alloc_cache_get_stats().hits, 2);
    assert_int_equal(fx_alloc_cache_get_stats().cached_blocks, 0);
    fx_free(d);
    unsigned char *e = fx_malloc(2 * big); /* another class: a new block */
    assert_ptr_not_equal(e, a);
    assert_int_equal(fx_alloc_cache_get_stats().misses, 3);
    assert_int_equal(fx_alloc_cache_get_stats().cached_blocks, 1);
    fx_free(e), fx_free(c);
    /* small blocks stay with malloc */
    void *small = fx_malloc(MIB - 64);
    fx_free(small);
    assert_int_equal(fx_alloc_cache_get_stats().cached_blocks, 3);
    assert_int_equal(fx_alloc_cache_get_stats().misses, 3);
    fx_alloc_cache_empty();
    cs = fx_alloc_cache_get_stats();
    assert_int_equal(cs.cached_blocks, 0);
    assert_int_equal(cs.cached_bytes, 0);
    assert_true(cs.peak_cached_bytes >= 3 * (int64_t)big);
    fx_alloc_cache_reset_stats();
    cs = fx_alloc_cache_get_stats();
    assert_int_equal(cs.hits + cs.misses + cs.evictions + cs.peak_cached_bytes, 0);
    assert_int_equal(fx_alloc_get_stats().live_blocks, s0.live_blocks);
}

/* The byte limit: the least recently freed blocks go first; a block above the limit is not
 * kept; lowering the limit frees at once; limit 0 turns caching off. */
static void test_limit_and_eviction(void **state) {
    (void)state;
    size_t cls = fx_alloc_cache_class_size(2 * MIB + HDR);
    assert_int_equal(fx_alloc_cache_set_limit(3 * cls), FX_ALLOC_CACHE_DEFAULT_LIMIT);
    unsigned char *p[4];
    for (int i = 0; i < 4; i++) assert_non_null(p[i] = fx_malloc(2 * MIB));
    for (int i = 0; i < 4; i++) fx_free(p[i]);
    fx_alloc_cache_stats cs = fx_alloc_cache_get_stats();
    assert_int_equal(cs.cached_blocks, 3);
    assert_int_equal(cs.cached_bytes, 3 * (int64_t)cls);
    assert_int_equal(cs.evictions, 1);
    /* p[0] was evicted: the three served are p[3], p[2], p[1], then a new block */
    unsigned char *q[4];
    for (int i = 0; i < 4; i++) q[i] = fx_malloc(2 * MIB);
    assert_ptr_equal(q[0], p[3]), assert_ptr_equal(q[1], p[2]), assert_ptr_equal(q[2], p[1]);
    assert_int_equal(fx_alloc_cache_get_stats().hits, 3);
    for (int i = 0; i < 4; i++) fx_free(q[i]);
    /* larger than the whole limit: freed at once */
    void *huge = fx_malloc(4 * cls);
    fx_free(huge);
    cs = fx_alloc_cache_get_stats();
    assert_int_equal(cs.too_large, 1);
    assert_true(cs.cached_bytes <= (int64_t)(3 * cls));
    /* a lower limit frees the excess now, oldest first */
    assert_int_equal(fx_alloc_cache_set_limit(cls), 3 * cls);
    cs = fx_alloc_cache_get_stats();
    assert_int_equal(cs.cached_blocks, 1);
    assert_int_equal(cs.cached_bytes, (int64_t)cls);
    /* 0: nothing is cached */
    fx_alloc_cache_set_limit(0);
    assert_int_equal(fx_alloc_cache_get_stats().cached_blocks, 0);
    void *r = fx_malloc(2 * MIB);
    fx_free(r);
    assert_int_equal(fx_alloc_cache_get_stats().cached_blocks, 0);
    fx_alloc_cache_set_limit(FX_ALLOC_CACHE_DEFAULT_LIMIT);
}

/* Injected failures and the size refusal come first: a cached block of the right class does
 * not make them succeed, and stays cached. */
static void test_failures_before_cache(void **state) {
    (void)state;
    void *a = fx_malloc(5 * MIB);
    fx_free(a);
    assert_int_equal(fx_alloc_cache_get_stats().cached_blocks, 1);
    fx_alloc_fail_at(1, 0);
    assert_null(fx_malloc(5 * MIB));
    fx_alloc_fail_at(1, 0);
    assert_null(fx_calloc(5, MIB));
    fx_alloc_fail_at(0, 0);
    assert_null(fx_malloc(FX_ALLOC_MAX + 1));
    assert_null(fx_calloc(FX_ALLOC_MAX / 2, 4));
    assert_int_equal(fx_alloc_cache_get_stats().cached_blocks, 1);
    assert_int_equal(fx_alloc_cache_get_stats().hits, 0);
    /* a tensor too large for the machine is still PyTorch's allocator error */
    fx_err err;
    fx_tensor *t;
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 20};
    assert_int_equal(fx_tensor_empty(2, huge, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_ENOMEM);
    assert_non_null(strstr(err.msg, "DefaultCPUAllocator: can't allocate memory"));
    /* a failing tensor allocation of a cacheable size leaks nothing and keeps the cache whole */
    fx_alloc_stats s0 = fx_alloc_get_stats();
    int64_t n = 5 * (int64_t)MIB / 4; /* 5 MiB of float32: a's class */
    for (int k = 1; k <= 3; k++) {
        fx_alloc_fail_at(k, 0);
        int rc = fx_tensor_empty(1, &n, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err);
        fx_alloc_fail_at(0, 0);
        if (rc == FX_OK)
            fx_tensor_release(t);
        else
            assert_int_equal(rc, FX_ENOMEM);
    }
    assert_int_equal(fx_alloc_get_stats().live_blocks, s0.live_blocks);
    assert_int_equal(fx_alloc_cache_get_stats().cached_blocks, 1);
}

/* calloc from a cached (dirty) block is zeroed; realloc within a class keeps the block, across
 * classes and into or out of the cache it moves with the contents. */
static void test_calloc_and_realloc(void **state) {
    (void)state;
    fx_alloc_stats s0 = fx_alloc_get_stats();
    size_t big = 6 * MIB;
    unsigned char *a = fx_malloc(big);
    memset(a, 0xab, big);
    fx_free(a);
    unsigned char *z = fx_calloc(big / 4, 4);
    assert_ptr_equal(z, a);
    for (size_t i = 0; i < big; i += 4093) assert_int_equal(z[i], 0);
    assert_int_equal(z[big - 1], 0);
    for (size_t i = 0; i < big; i++) z[i] = (unsigned char)(i * 7);
    unsigned char *g = fx_realloc(z, big + 1000); /* same class: same block */
    assert_ptr_equal(g, z);
    g[big + 999] = 5;
    unsigned char *h = fx_realloc(g, 3 * big); /* another class: moved */
    assert_ptr_not_equal(h, g);
    for (size_t i = 0; i < big; i += 1021) assert_int_equal(h[i], (unsigned char)(i * 7));
    assert_int_equal(h[big + 999], 5);
    h[3 * big - 1] = 1;
    unsigned char *s = fx_realloc(h, 1000); /* out of the cache */
    for (size_t i = 0; i < 1000; i++) assert_int_equal(s[i], (unsigned char)(i * 7));
    unsigned char *l = fx_realloc(s, 3 * big); /* into it: the block h freed a moment ago */
    assert_ptr_equal(l, h);
    for (size_t i = 0; i < 1000; i++) assert_int_equal(l[i], (unsigned char)(i * 7));
    assert_int_equal(fx_alloc_get_stats().live_blocks, s0.live_blocks + 1);
    assert_int_equal(fx_alloc_get_stats().live_bytes, s0.live_bytes + (int64_t)(3 * big));
    fx_free(l);
    assert_int_equal(fx_alloc_get_stats().live_bytes, s0.live_bytes);
}

/* When malloc fails for a large block, the cache is emptied and malloc tried again. Run in a
 * child whose address space is capped just above what it holds (not under ASan or valgrind,
 * which need address space of their own). */
static void test_retry_after_empty(void **state) {
    (void)state;
#ifdef T_ASAN
    skip();
#else
    if (RUNNING_ON_VALGRIND) skip();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        size_t big = 64 * MIB;
        void *p[3];
        for (int i = 0; i < 3; i++)
            if (!(p[i] = fx_malloc(big))) _exit(2);
        for (int i = 0; i < 3; i++) fx_free(p[i]);
        if (fx_alloc_cache_get_stats().cached_blocks != 3) _exit(3);
        /* now: room for about two more 64 MiB blocks, but not for a 160 MiB one */
        long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f || fscanf(f, "%ld", &pages) != 1) _exit(0); /* no /proc: nothing to test */
        fclose(f);
        struct rlimit rl = {.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + 128 * MIB};
        rl.rlim_max = RLIM_INFINITY;
        if (setrlimit(RLIMIT_AS, &rl)) _exit(0);
        void *q = fx_malloc(160 * MIB);
        if (!q) _exit(4);
        fx_alloc_cache_stats cs = fx_alloc_cache_get_stats();
        if (cs.retries != 1 || cs.cached_blocks != 0) _exit(5);
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
#endif
}

/* Threads allocating, writing and freeing large blocks at once: every block is theirs alone
 * (a pattern survives), and the counters add up afterwards. */
typedef struct {
    unsigned seed;
    int bad;
} worker;
static void *work(void *ud) {
    worker *w = ud;
    for (int it = 0; it < 200; it++) {
        w->seed = w->seed * 1103515245u + 12345u;
        size_t n = MIB + (w->seed >> 8) % (3 * MIB);
        unsigned char *p = fx_malloc(n);
        if (!p) {
            w->bad++;
            continue;
        }
        unsigned char tag = (unsigned char)w->seed;
        p[0] = tag, p[n / 2] = tag, p[n - 1] = tag;
        sched_yield();
        if (p[0] != tag || p[n / 2] != tag || p[n - 1] != tag) w->bad++;
        fx_free(p);
    }
    return NULL;
}
static void test_threads(void **state) {
    (void)state;
    fx_alloc_stats s0 = fx_alloc_get_stats();
    fx_alloc_cache_set_limit(8 * MIB); /* small: evictions happen too */
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.seed = 17u * (unsigned)i + 1u};
        assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].bad, 0);
    }
    fx_alloc_cache_stats cs = fx_alloc_cache_get_stats();
    assert_int_equal(cs.hits + cs.misses, 4 * 200);
    assert_true(cs.cached_bytes <= (int64_t)(8 * MIB));
    assert_true(cs.peak_cached_bytes <= (int64_t)(8 * MIB));
    assert_int_equal(fx_alloc_get_stats().live_blocks, s0.live_blocks);
    assert_int_equal(fx_alloc_get_stats().live_bytes, s0.live_bytes);
    fx_alloc_cache_set_limit(FX_ALLOC_CACHE_DEFAULT_LIMIT);
}

/* Under ASan a cached block is poisoned, so a dangling pointer into it is caught; a block handed
 * out is accessible up to the bytes asked for and poisoned in its class's slack. */
static void test_asan_poisoning(void **state) {
    (void)state;
#ifndef T_ASAN
    skip();
#else
    size_t big = 2 * MIB + 100;
    unsigned char *a = fx_malloc(big);
    assert_false(__asan_address_is_poisoned(a));
    assert_false(__asan_address_is_poisoned(a + big - 1));
    assert_true(__asan_address_is_poisoned(a + big)); /* the slack up to 2.25 MiB */
    assert_true(__asan_address_is_poisoned(a + 2 * MIB + MIB / 8));
    fx_free(a);
    assert_true(__asan_address_is_poisoned(a));
    assert_true(__asan_address_is_poisoned(a + big / 2));
    unsigned char *b = fx_malloc(big - 50);
    assert_ptr_equal(b, a);
    assert_false(__asan_address_is_poisoned(b + big - 51));
    assert_true(__asan_address_is_poisoned(b + big - 50));
    unsigned char *c = fx_realloc(b, big); /* grown within the class */
    assert_ptr_equal(c, b);
    assert_false(__asan_address_is_poisoned(c + big - 1));
    assert_true(__asan_address_is_poisoned(c + big));
    fx_free(c);
#endif
}

/* Tensor storage goes through the cache: a fresh tensor after a freed one of the same class
 * reuses its buffer, and zeros() is still all zeros on a dirty block. */
static void test_tensor_storage(void **state) {
    (void)state;
    fx_err err;
    int64_t n = 4 * (int64_t)MIB; /* 16 MiB of float32 */
    fx_tensor *a, *b;
    assert_int_equal(fx_tensor_empty(1, &n, FX_DTYPE_F32, FX_DEVICE_CPU, &a, &err), FX_OK);
    float *pa = fx_tensor_data(a);
    for (int64_t i = 0; i < n; i++) pa[i] = 3.0f;
    fx_tensor_release(a);
    assert_int_equal(fx_tensor_zeros(1, &n, FX_DTYPE_F32, FX_DEVICE_CPU, &b, &err), FX_OK);
    assert_ptr_equal(fx_tensor_data(b), pa);
    const float *pb = fx_tensor_data(b);
    for (int64_t i = 0; i < n; i += 997) assert_true(pb[i] == 0.0f);
    fx_tensor_release(b);
    assert_int_equal(fx_alloc_cache_get_stats().hits, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_class_sizes, setup),
        cmocka_unit_test_setup(test_reuse_rules, setup),
        cmocka_unit_test_setup(test_limit_and_eviction, setup),
        cmocka_unit_test_setup(test_failures_before_cache, setup),
        cmocka_unit_test_setup(test_calloc_and_realloc, setup),
        cmocka_unit_test_setup(test_retry_after_empty, setup),
        cmocka_unit_test_setup(test_threads, setup),
        cmocka_unit_test_setup(test_asan_poisoning, setup),
        cmocka_unit_test_setup(test_tensor_storage, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
