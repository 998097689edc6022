/* core/random.h — the global random generator behind rand / randn, as torch.manual_seed sets it.
 * Layer: core. Reproduces PyTorch's default CPU generator (CPUGeneratorImpl): an mt19937 engine
 * seeded with the low 32 bits of the seed, a cached second Box-Muller sample, and the exact
 * transformations of aten/src/ATen/core/DistributionsHelper.h and the CPU normal_fill path, so
 * that after fx_manual_seed(0) torch.rand(4) gives 0.4963, 0.7682, 0.0885, 0.1320 as PyTorch
 * does. Not thread-safe: one generator per process, used from one thread at a time. */
#ifndef FX_RANDOM_H
#define FX_RANDOM_H

#include <stdint.h>

/* torch.manual_seed(seed): reseeds the engine and drops the cached normal samples. */
void fx_manual_seed(uint64_t seed);
/* torch.initial_seed(): the last seed set (67280421310721, c10's default, before any). */
uint64_t fx_initial_seed(void);
/* One raw 32-bit draw of the engine (generator->random()); for tests. */
uint32_t fx_random_u32(void);

#endif
