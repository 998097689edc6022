/* core/kernels/k_random.c — the global generator (mt19937) and the rand / randn kernels.
 * Layer: core (private). Follows PyTorch's CPU generator bit for bit where it can:
 *   - at::mt19937 seeded with seed & 0xffffffff (init_genrand), random() one 32-bit draw,
 *     random64() two draws (first one in the high half);
 *   - uniform_real_distribution<T>: (draw & (2^digits - 1)) * 2^-digits, digits = 24 for float
 *     (from random()), 53 for double (from random64()), 11 for half, 8 for bfloat16;
 *   - normal: tensors of >= 16 contiguous elements use normal_fill (all uniforms first, then
 *     Box-Muller over batches of 16: u1 = 1 - data[j], u2 = data[j + 8], the last partial batch
 *     recomputed from 16 fresh uniforms over the tail); smaller tensors draw one
 *     normal_distribution<double> sample per element (two random64 uniforms per pair, the sine
 *     sample cached in the generator for the next call).
 *   - normal_ with mean / std: the same two paths (normal_fill for contiguous tensors of >= 16
 *     elements, else one normal_distribution<double> draw per element * std + mean);
 *   - uniform_(from, to): one uniform_real_distribution draw per element, (to - from) * u + from;
 *   - randint: random() % range + low (random64() for ranges of 2^32 or more), randperm: the
 *     swap loop of randperm_cpu; bernoulli: uniform < p (the build without MKL; PyTorch's MKL
 *     builds draw bernoulli_(float p) from MKL's stream instead);
 *   - serial kernels (normal_ on small or strided tensors, uniform_, bernoulli) draw in
 *     TensorIterator's order: dims by decreasing stride.
 * The float path's transcendental functions are libm's, where PyTorch's AVX2 build uses its own
 * vector approximations: values agree to ~1 ulp of float, not always bit for bit. */
#include <math.h>

#include "core/kernels/k_cast.h"
#include "core/kernels/k_iter.h"
#include "core/ops_impl.h"
#include "core/random.h"

#define MT_N 624
#define MT_M 397

static struct {
    uint32_t state[MT_N];
    int next;                   /* index of the next state word to temper */
    uint64_t seed;              /* as given to fx_manual_seed */
    int seeded;                 /* 0 until the first use or fx_manual_seed */
    int has_next_double_normal; /* normal_distribution<double>'s cached sine sample */
    double next_double_normal;
} g_gen;

static void mt_seed(uint32_t s) {
    g_gen.state[0] = s;
    for (int j = 1; j < MT_N; j++)
        g_gen.state[j] =
            1812433253u * (g_gen.state[j - 1] ^ (g_gen.state[j - 1] >> 30)) + (uint32_t)j;
    g_gen.next = MT_N;
}

static void mt_twist(void) {
    uint32_t *s = g_gen.state;
    for (int k = 0; k < MT_N; k++) {
        uint32_t y = (s[k] & 0x80000000u) | (s[(k + 1) % MT_N] & 0x7fffffffu);
        s[k] = s[(k + MT_M) % MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    g_gen.next = 0;
}

static void ensure_seeded(void) {
    if (!g_gen.seeded) fx_manual_seed(67280421310721ull);
}

void fx_manual_seed(uint64_t seed) {
    g_gen.seed = seed;
    g_gen.seeded = 1;
    g_gen.has_next_double_normal = 0;
    mt_seed((uint32_t)(seed & 0xffffffffu));
}

uint64_t fx_initial_seed(void) {
    ensure_seeded();
    return g_gen.seed;
}

static uint32_t draw32(void) {
    if (g_gen.next >= MT_N) mt_twist();
    uint32_t y = g_gen.state[g_gen.next++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint32_t fx_random_u32(void) {
    ensure_seeded();
    return draw32();
}

static uint64_t draw64(void) {
    uint64_t hi = draw32(), lo = draw32();
    return (hi << 32) | lo;
}

/* uniform_real_distribution<T>(0, 1) for each dtype, as its accumulate type. */
static float uniform_f32(void) { return (float)(draw32() & 0xffffffu) * (1.0f / 16777216.0f); }
static double uniform_f64(void) {
    return (double)(draw64() & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}
static float uniform_f16(void) { return (float)(draw32() & 0x7ffu) * (1.0f / 2048.0f); }
static float uniform_bf16(void) { return (float)(draw32() & 0xffu) * (1.0f / 256.0f); }

static double uniform_of(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F64: return uniform_f64();
    case FX_DTYPE_F16: return uniform_f16();
    case FX_DTYPE_BF16: return uniform_bf16();
    default: return uniform_f32();
    }
}

/* normal_distribution<double>(0, 1): Box-Muller with the cached second sample. */
static double normal_double(void) {
    if (g_gen.has_next_double_normal) {
        g_gen.has_next_double_normal = 0;
        return g_gen.next_double_normal;
    }
    double u1 = uniform_f64(), u2 = uniform_f64();
    double r = sqrt(-2.0 * log1p(-u2));
    double theta = 2.0 * M_PI * u1;
    g_gen.next_double_normal = r * sin(theta);
    g_gen.has_next_double_normal = 1;
    return r * cos(theta);
}

/* Rounds a float to what a `const scalar_t` of dtype dt holds. */
static float as_scalar(fx_dtype dt, float v) {
    if (dt == FX_DTYPE_F16) return k_h2f(k_f2h(v));
    if (dt == FX_DTYPE_BF16) return k_b2f(k_f2b(v));
    return v;
}

/* normal_fill_16 on 16 uniforms held as values of dtype dt: Box-Muller, then * std + mean.
 * float64 computes in double; the float types in float with each `const scalar_t` rounded to
 * the dtype; float32 multiplies theta in float and fuses * std + mean, as normal_fill_16_AVX2. */
static void normal_fill_16(fx_dtype dt, double *d, double mean, double std) {
    for (int j = 0; j < 8; j++) {
        if (dt == FX_DTYPE_F64) {
            double u1 = 1 - d[j], u2 = d[j + 8];
            double radius = sqrt(-2 * log(u1));
            double theta = 2.0 * M_PI * u2;
            d[j] = radius * cos(theta) * std + mean;
            d[j + 8] = radius * sin(theta) * std + mean;
        } else if (dt == FX_DTYPE_F32) {
            float u1 = 1.0f - (float)d[j], u2 = (float)d[j + 8];
            float radius = sqrtf(-2.0f * logf(u1));
            float theta = (float)(2.0 * M_PI) * u2;
            d[j] = fmaf(radius * cosf(theta), (float)std, (float)mean);
            d[j + 8] = fmaf(radius * sinf(theta), (float)std, (float)mean);
        } else {
            float sd = as_scalar(dt, (float)std), mu = as_scalar(dt, (float)mean);
            float u1 = as_scalar(dt, 1.0f - (float)d[j]), u2 = (float)d[j + 8];
            float radius = as_scalar(dt, sqrtf(-2.0f * logf(u1)));
            float theta = as_scalar(dt, (float)(2.0 * M_PI * (double)u2));
            d[j] = as_scalar(dt, radius * cosf(theta) * sd + mu);
            d[j + 8] = as_scalar(dt, radius * sinf(theta) * sd + mu);
        }
    }
}

/* normal_fill over a contiguous tensor of >= 16 elements: uniforms into the data, then
 * Box-Muller in place over 16-element batches, the last partial batch recomputed from 16 fresh
 * uniforms over the tail. */
static void normal_fill(fx_tensor *t, double mean, double std) {
    const fx_dtype dt = t->dtype;
    const int64_t n = fx_tensor_numel(t), es = (int64_t)fx_dtype_size(dt);
    char *o = fx_tensor_data(t);
    double batch[16];
    for (int64_t i = 0; i < n; i++) fx_k_store_f64(dt, o + i * es, uniform_of(dt));
    for (int64_t i = 0; i + 16 <= n; i += 16) {
        for (int j = 0; j < 16; j++) batch[j] = fx_dtype_load_f64(dt, o, i + j);
        normal_fill_16(dt, batch, mean, std);
        for (int j = 0; j < 16; j++) fx_k_store_f64(dt, o + (i + j) * es, batch[j]);
    }
    if (n % 16 != 0) {
        int64_t i = n - 16;
        for (int j = 0; j < 16; j++) fx_k_store_f64(dt, o + (i + j) * es, uniform_of(dt));
        for (int j = 0; j < 16; j++) batch[j] = fx_dtype_load_f64(dt, o, i + j);
        normal_fill_16(dt, batch, mean, std);
        for (int j = 0; j < 16; j++) fx_k_store_f64(dt, o + (i + j) * es, batch[j]);
    }
}

/* The element offsets (in elements) of t in TensorIterator's order for a nullary op: dims
 * sorted by stride, the largest outermost, then row-major; calls fn(ud, offset) for each, in
 * order. The serial random kernels draw in this order. */
static void for_each_element(const fx_tensor *t, void (*fn)(void *ud, int64_t off), void *ud) {
    int nd = t->ndim, perm[FX_MAX_DIMS];
    for (int d = 0; d < nd; d++) perm[d] = d;
    for (int i = 1; i < nd; i++) /* stable insertion sort by stride, descending */
        for (int j = i; j > 0 && t->strides[perm[j]] > t->strides[perm[j - 1]]; j--) {
            int tmp = perm[j];
            perm[j] = perm[j - 1];
            perm[j - 1] = tmp;
        }
    int64_t n = fx_tensor_numel(t), idx[FX_MAX_DIMS] = {0}, off = t->offset;
    for (int64_t k = 0; k < n; k++) {
        fn(ud, off);
        for (int i = nd - 1; i >= 0; i--) {
            int d = perm[i];
            if (++idx[d] < t->sizes[d]) {
                off += t->strides[d];
                break;
            }
            off -= (t->sizes[d] - 1) * t->strides[d];
            idx[d] = 0;
        }
    }
}

typedef struct draw_ud {
    fx_tensor *t;
    const fx_tensor *p; /* bernoulli's probabilities (same shape and layout order), or NULL */
    double a, b;        /* mean / std, from / to, p */
} draw_ud;

static void draw_normal(void *ud, int64_t off) {
    draw_ud *u = ud;
    fx_dtype dt = u->t->dtype;
    fx_dtype_store_f64(dt, u->t->storage->data, off, normal_double() * u->b + u->a);
}

/* uniform_real_distribution<T>(from, to) with from / to held as T, in T's accumulate type:
 * (bits & mask) * 2^-digits * (to - from) + from (to - from rounded to T for the half types). */
static double uniform_from_to(fx_dtype dt, double from, double to) {
    switch (dt) {
    case FX_DTYPE_F64: return uniform_f64() * (to - from) + from;
    case FX_DTYPE_F32: {
        float f = (float)from, t = (float)to;
        return uniform_f32() * (t - f) + f;
    }
    default: {
        float f = as_scalar(dt, (float)from), t = as_scalar(dt, (float)to);
        float x = dt == FX_DTYPE_F16 ? uniform_f16() : uniform_bf16();
        return x * as_scalar(dt, t - f) + f;
    }
    }
}

static void draw_uniform(void *ud, int64_t off) {
    draw_ud *u = ud;
    fx_dtype dt = u->t->dtype;
    fx_dtype_store_f64(dt, u->t->storage->data, off, uniform_from_to(dt, u->a, u->b));
}

/* bernoulli_distribution<double>(p): a 53-bit uniform below p. */
static void draw_bernoulli_p(void *ud, int64_t off) {
    draw_ud *u = ud;
    fx_dtype_store_i64(u->t->dtype, u->t->storage->data, off, uniform_f64() < u->a);
}

/* bernoulli(self): p read at the same position of u->p (same strides as the result); a double
 * p draws a 53-bit uniform, other dtypes a 24-bit float one (bernoulli_tensor_cpu_kernel). */
static void draw_bernoulli_tensor(void *ud, int64_t off) {
    draw_ud *u = ud;
    int64_t poff = off - u->t->offset + u->p->offset;
    double pv = fx_dtype_load_f64(u->p->dtype, u->p->storage->data, poff);
    int hit = u->p->dtype == FX_DTYPE_F64 ? uniform_f64() < pv : uniform_f32() < (float)pv;
    fx_dtype_store_i64(u->t->dtype, u->t->storage->data, off, hit);
}

/* rand / randn: out[0] is a fresh contiguous floating tensor. */
int fx_k_random(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)a;
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    ensure_seeded();
    if (fx_dtype_is_complex(t->dtype)) {
        /* the real view of its 2n parts, drawn as a real tensor (uniform_ / normal_ on
         * view_as_real); randn's parts have variance 1/2 each (std 1/sqrt(2)), as normal_'s
         * complex case */
        int64_t n2 = 2 * fx_tensor_numel(t), one = 1;
        fx_tensor *r;
        int rc = fx_tensor_as_strided_dtype(t, fx_dtype_to_real(t->dtype), 1, &n2, &one, 2 * t->offset,
                                            &r, ctx->err);
        if (rc) return rc;
        char *o = fx_tensor_data(r);
        const fx_dtype dt = r->dtype;
        const int64_t es = (int64_t)fx_dtype_size(dt);
        const double sd = 1.0 / sqrt(2.0);
        if (ctx->op->id == FX_OP_RAND)
            for (int64_t i = 0; i < n2; i++) fx_k_store_f64(dt, o + i * es, uniform_of(dt));
        else if (n2 < 16)
            for (int64_t i = 0; i < n2; i++) fx_k_store_f64(dt, o + i * es, normal_double() * sd);
        else
            normal_fill(r, 0.0, sd);
        fx_tensor_release(r);
        return FX_OK;
    }
    const fx_dtype dt = t->dtype;
    const int64_t n = fx_tensor_numel(t);
    const size_t es = fx_dtype_size(dt);
    char *o = fx_tensor_data(t);
    if (ctx->op->id == FX_OP_RAND) {
        for (int64_t i = 0; i < n; i++) fx_k_store_f64(dt, o + i * (int64_t)es, uniform_of(dt));
        return FX_OK;
    }
    if (n < 16) {
        for (int64_t i = 0; i < n; i++) fx_k_store_f64(dt, o + i * (int64_t)es, normal_double());
        return FX_OK;
    }
    normal_fill(t, 0.0, 1.0);
    return FX_OK;
}

/* normal_ / normal_functional, uniform_ / uniform, bernoulli / bernoulli.p / bernoulli_.float:
 * out[0] is self or a fresh tensor like self, filled in place as the CPU kernels fill it. */
int fx_k_random_(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t) || fx_tensor_numel(t) == 0) return FX_OK;
    ensure_seeded();
    draw_ud u = {t, NULL, 0, 0};
    switch (ctx->op->id) {
    case FX_OP_NORMAL_:
    case FX_OP_NORMAL_FUNCTIONAL:
        u.a = fx_ivalue_to_f64(&a[1]), u.b = fx_ivalue_to_f64(&a[2]);
        if (fx_tensor_numel(t) >= 16 && fx_tensor_is_contiguous(t))
            normal_fill(t, u.a, u.b);
        else
            for_each_element(t, draw_normal, &u);
        return FX_OK;
    case FX_OP_UNIFORM_:
    case FX_OP_UNIFORM:
        u.a = fx_ivalue_to_f64(&a[1]), u.b = fx_ivalue_to_f64(&a[2]);
        for_each_element(t, draw_uniform, &u);
        return FX_OK;
    case FX_OP_BERNOULLI_P:
    case FX_OP_BERNOULLI__FLOAT:
        u.a = fx_ivalue_to_f64(&a[1]);
        for_each_element(t, draw_bernoulli_p, &u);
        return FX_OK;
    default: { /* bernoulli(self): p is self, drawn in the order of the result */
        const fx_tensor *p = a[0].u.t;
        fx_tensor *pc = NULL;
        bool same = true;
        for (int d = 0; d < t->ndim; d++) same = same && p->strides[d] == t->strides[d];
        if (!same) { /* p laid out like the result, so one walk serves both */
            int rc = fx_tensor_empty_strided(t->ndim, t->sizes, t->strides, p->dtype, FX_DEVICE_CPU,
                                             &pc, ctx->err);
            if (rc) return rc;
            fx_k_copy_tensor(pc, p);
            p = pc;
        }
        u.p = p;
        for_each_element(t, draw_bernoulli_tensor, &u);
        fx_tensor_release(pc);
        return FX_OK;
    }
    }
}

/* ---- randint, randperm ---------------------------------------------------------------------- */

/* randint / randint.low: out[0] is fresh and contiguous; element i = draw % range + low, the
 * draw 64-bit (random64) when range >= 2^32 for int64 / float / double / bfloat16, else 32-bit
 * (uniform_int_from_to_distribution), in element order. */
int fx_k_randint(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    ensure_seeded();
    bool low_form = ctx->op->id == FX_OP_RANDINT_LOW;
    int64_t low = low_form ? a[0].u.i : 0, high = a[low_form ? 1 : 0].u.i;
    uint64_t range = (uint64_t)high - (uint64_t)low;
    const fx_dtype dt = t->dtype;
    bool wide = range >= (1ull << 32) && (dt == FX_DTYPE_I64 || dt == FX_DTYPE_F64 ||
                                          dt == FX_DTYPE_F32 || dt == FX_DTYPE_BF16);
    const int64_t n = fx_tensor_numel(t);
    char *o = fx_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = wide ? draw64() : draw32();
        int64_t v = (int64_t)(r % range + (uint64_t)low);
        fx_dtype_store_i64(dt, o, i, v);
    }
    return FX_OK;
}

/* randperm: out[0] is fresh and contiguous. For n < 2^32 / 20, PyTorch's randperm_cpu: the
 * identity, then for i < n - 1 swap element i with element i + random() % (n - i); beyond,
 * the inside-out Fisher-Yates with random64() % (i + 1). */
int fx_k_randperm(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)ctx, (void)a;
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    ensure_seeded();
    const fx_dtype dt = t->dtype;
    const int64_t n = fx_tensor_numel(t);
    char *o = fx_tensor_data(t);
    if (n < (int64_t)(UINT32_MAX / 20)) {
        for (int64_t i = 0; i < n; i++) fx_dtype_store_i64(dt, o, i, i);
        for (int64_t i = 0; i < n - 1; i++) {
            int64_t z = (int64_t)(draw32() % (uint64_t)(n - i));
            int64_t sav = fx_dtype_load_i64(dt, o, i);
            fx_dtype_store_i64(dt, o, i, fx_dtype_load_i64(dt, o, z + i));
            fx_dtype_store_i64(dt, o, z + i, sav);
        }
        return FX_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t z = (int64_t)(draw64() % (uint64_t)(i + 1));
        fx_dtype_store_i64(dt, o, i, fx_dtype_load_i64(dt, o, z));
        fx_dtype_store_i64(dt, o, z, i);
    }
    return FX_OK;
}
