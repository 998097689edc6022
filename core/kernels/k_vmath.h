/* core/kernels/k_vmath.h — branch-free float32 math that loops vectorize: exp and the ops
 * built on it (sigmoid, silu).
 * Layer: core (private). libm's expf is a call per element, so a loop of it stays scalar;
 * these are inline and branch-free, so `omp simd` loops of them vectorize. Accuracy: k_expf is
 * within 1 ulp of the exact exp over the whole float range (checked against exp in double for
 * every 7th float in [-104, 89]), exp(+-inf) = inf / 0, NaN stays NaN, overflow gives inf and
 * results below the smallest normal are computed through two power-of-two scalings (so
 * subnormal results round once). PyTorch's AVX2 kernels use Sleef's 1-ulp vector exp, so
 * neither is bit-identical to the other.
 *
 * GCC if-converts the selects (and so vectorizes) only without trapping math; every function
 * here and every loop that inlines them carries K_VEC. FP exception flags are never read. */
#ifndef FX_K_VMATH_H
#define FX_K_VMATH_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#define K_VEC __attribute__((optimize("no-trapping-math")))
#else
#define K_VEC
#endif

/* Hot loops built once per instruction set the loader may pick (AVX-512, AVX2, baseline), as
 * k_gemv.c does: the polynomial above runs 4x wider than with the baseline SSE2. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define K_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define K_CLONES
#endif

/* 2^n for -126 <= n <= 127, as float bits. */
K_VEC static inline float k_pow2i(int32_t n) {
    uint32_t u = (uint32_t)(n + 127) << 23;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* exp(x): Cody-Waite reduction x = n ln2 + r (|r| <= ln2 / 2, n rounded with the 1.5 * 2^23
 * trick), Cephes' degree-6 polynomial for exp(r), then * 2^(n/2) * 2^(n - n/2). */
K_VEC static inline float k_expf(float x) {
    const float hi = 88.7228394f, lo = -103.972084f;
    float xc = x > hi ? hi : x;
    xc = xc < lo ? lo : xc;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    float y = p * r * r + r + 1.0f;
    int32_t ni = (int32_t)n, h = ni >> 1;
    y = y * k_pow2i(h) * k_pow2i(ni - h);
    y = x > hi ? (float)INFINITY : y;
    y = x < lo ? 0.0f : y;
    return y;
}

/* sigmoid(x) = 1 / (1 + exp(-x)) and silu(x) = x / (1 + exp(-x)), as PyTorch's float kernels
 * write them. */
K_VEC static inline float k_sigmoidf(float x) { return 1.0f / (1.0f + k_expf(-x)); }
K_VEC static inline float k_siluf(float x) { return x / (1.0f + k_expf(-x)); }

#endif
