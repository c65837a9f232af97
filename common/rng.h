/* rng.h: the seeded random number generator (GSL's MT19937) and stateless
 * hashing for deterministic choices such as ECMP.
 *
 * All randomness in trainsim goes through here, so a run is reproducible
 * for a given seed; rand() is banned (banned.h). */
#ifndef TS_RNG_H
#define TS_RNG_H

#include <stdint.h>

#include <gsl/gsl_rng.h>

struct rng {
	gsl_rng *r;      /* owned */
	uint64_t seed;   /* as given */
};

#define RNG_INIT { NULL, 0 }

/* The largest seed a user may give: seeds are read from and written to
 * JSON, whose numbers keep integers exactly up to 2^53 (found by review:
 * --seed took up to 2^62 or 2^63-1 and --json printed it rounded). One
 * less than 2^53, since a cluster file's 2^53 + 1 reads as 2^53: past
 * 2^53 - 1 every whole number a file gives reads as at least 2^53 and is
 * refused, where at 2^53 it was taken rounded (found by review). */
#define RNG_SEED_MAX ((1LL << 53) - 1)

int rng_init(struct rng *g, uint64_t seed);
void rng_release(struct rng *g);

double rng_uniform(struct rng *g);                 /* [0, 1) */
uint64_t rng_below(struct rng *g, uint64_t n);     /* uniform in [0, n), n >= 1 */

/* splitmix64 finaliser: a good 64-bit mix, used to hash (seed, flow) pairs
 * into path choices without any state. */
static inline uint64_t rng_hash64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline uint64_t rng_hash2(uint64_t a, uint64_t b)
{
	return rng_hash64(a ^ rng_hash64(b));
}

/* A Gaussian draw (mean 0) that is a function of (seed, key) alone, so that
 * a draw keyed by what it is for (a rank and an op) is the same however the
 * simulation is folded or ordered: the inverse normal CDF (GSL) of a hashed
 * uniform in (0, 1). */
double rng_keyed_gaussian(uint64_t seed, uint64_t key, double sigma);

#endif
