/* tests/unit/test_parallel.c — core/parallel.h: fx_parallel_for runs every chunk exactly once on
 * any thread count, nested and concurrent calls run serially, and fx_threads_for's rules.
 * Layer: tests (cmocka, links libfxdb.a). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/parallel.h"

#define N 5000

typedef struct counts {
    int hits[N];
    int64_t n;
} counts;

static void count_chunk(void *ctx, int64_t i) {
    counts *c = ctx;
    __atomic_add_fetch(&c->hits[i], 1, __ATOMIC_RELAXED);
}

static void check_once(const counts *c) {
    for (int64_t i = 0; i < c->n; i++)
        if (c->hits[i] != 1)
            fail_msg("chunk %lld of %lld ran %d times", (long long)i, (long long)c->n, c->hits[i]);
}

/* Every chunk once, for thread counts 1..8 and chunk counts around the edges, many times over
 * (workers left spinning or asleep from the previous call take the next one). */
static void test_every_chunk_once(void **state) {
    (void)state;
    static counts c;
    const int64_t sizes[] = {0, 1, 2, 3, 7, 64, 1000, N};
    for (int threads = 1; threads <= 8; threads++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (int rep = 0; rep < 20; rep++) {
                memset(&c, 0, sizeof c);
                c.n = sizes[s];
                fx_parallel_for(threads, c.n, count_chunk, &c);
                check_once(&c);
            }
}

/* Inside a chunk, fx_threads_for answers 1 and a nested fx_parallel_for runs on the calling
 * thread. */
typedef struct nested {
    int threads_seen[64];
    counts inner[64];
} nested;

static void inner_chunk(void *ctx, int64_t i) { count_chunk(ctx, i); }

static void outer_chunk(void *ctx, int64_t i) {
    nested *s = ctx;
    s->threads_seen[i] = fx_threads_for((int64_t)1 << 30);
    s->inner[i].n = 100;
    fx_parallel_for(4, 100, inner_chunk, &s->inner[i]);
}

static void test_nested(void **state) {
    (void)state;
    static nested s;
    memset(&s, 0, sizeof s);
    fx_parallel_for(4, 64, outer_chunk, &s);
    for (int i = 0; i < 64; i++) {
        assert_int_equal(s.threads_seen[i], 1);
        check_once(&s.inner[i]);
    }
}

/* Calls from several threads at once: each call's chunks all run once. */
static void *caller(void *arg) {
    counts *c = arg;
    for (int rep = 0; rep < 200; rep++) {
        memset(c->hits, 0, sizeof c->hits);
        fx_parallel_for(3, c->n, count_chunk, c);
        for (int64_t i = 0; i < c->n; i++)
            if (c->hits[i] != 1) return (void *)1;
    }
    return NULL;
}

static void test_concurrent_callers(void **state) {
    (void)state;
    static counts c[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        c[i].n = 300 + i;
        assert_int_equal(pthread_create(&t[i], NULL, caller, &c[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
}

static void test_threads_for(void **state) {
    (void)state;
    fx_set_num_threads(3);
    assert_int_equal(fx_get_num_threads(), 3);
    assert_int_equal(fx_threads_for(FX_PAR_MIN_WORK - 1), 1); /* too little work */
    assert_int_equal(fx_threads_for((int64_t)1 << 30), 3);
    assert_int_equal(fx_threads_for(FX_PAR_MIN_WORK), 2); /* capped by work / (MIN / 2) */
    fx_set_num_threads(0);
    assert_true(fx_num_threads_automatic());
    int n = fx_threads_for((int64_t)1 << 30);
    assert_true(n >= 1 && n <= fx_get_num_threads());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_chunk_once),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_concurrent_callers),
        cmocka_unit_test(test_threads_for),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
