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

/* normal_fill_16 on 16 uniforms held as values of dtype dt (mean 0, std 1). */
static void normal_fill_16(fx_dtype dt, double *d) {
    for (int j = 0; j < 8; j++) {
        if (dt == FX_DTYPE_F64) {
            double u1 = 1 - d[j], u2 = d[j + 8];
            double radius = sqrt(-2 * log(u1));
            double theta = 2.0 * M_PI * u2;
            d[j] = radius * cos(theta);
            d[j + 8] = radius * sin(theta);
        } else {
            float u1 = as_scalar(dt, 1.0f - (float)d[j]), u2 = (float)d[j + 8];
            float radius = as_scalar(dt, sqrtf(-2.0f * logf(u1)));
            float theta = as_scalar(dt, (float)(2.0 * M_PI * (double)u2));
            d[j] = as_scalar(dt, radius * cosf(theta));
            d[j + 8] = as_scalar(dt, radius * sinf(theta));
        }
    }
}

/* rand / randn: out[0] is a fresh contiguous floating tensor. */
int fx_k_random(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)a;
    fx_tensor *t = out[0].u.t;
    if (fx_tensor_is_meta(t)) return FX_OK;
    ensure_seeded();
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
    /* normal_fill: uniforms into the output, then Box-Muller in place over 16-element batches */
    double batch[16];
    for (int64_t i = 0; i < n; i++) fx_k_store_f64(dt, o + i * (int64_t)es, uniform_of(dt));
    for (int64_t i = 0; i + 16 <= n; i += 16) {
        for (int j = 0; j < 16; j++) batch[j] = fx_dtype_load_f64(dt, o, i + j);
        normal_fill_16(dt, batch);
        for (int j = 0; j < 16; j++) fx_k_store_f64(dt, o + (i + j) * (int64_t)es, batch[j]);
    }
    if (n % 16 != 0) {
        int64_t i = n - 16; /* recompute the last 16 values from fresh uniforms */
        for (int j = 0; j < 16; j++) fx_k_store_f64(dt, o + (i + j) * (int64_t)es, uniform_of(dt));
        for (int j = 0; j < 16; j++) batch[j] = fx_dtype_load_f64(dt, o, i + j);
        normal_fill_16(dt, batch);
        for (int j = 0; j < 16; j++) fx_k_store_f64(dt, o + (i + j) * (int64_t)es, batch[j]);
    }
    return FX_OK;
}
