/* harness/models/rng.h: the host-side seeded generator (xoshiro256** seeded by splitmix64) that makes
 * initial weights bit-identical on every device, and its normal draws (Box-Muller in double). */
#ifndef RNG_H
#define RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
    int have_spare;
    double spare;
} rng_state;

void rng_seed(rng_state *r, uint64_t seed);
uint64_t rng_next(rng_state *r);
double rng_uniform(rng_state *r);                 /* [0, 1) with 53 random bits */
double rng_normal(rng_state *r, double mean, double std);

#endif
