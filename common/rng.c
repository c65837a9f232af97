/* rng.c: GSL-backed seeded RNG. */
#include "common/rng.h"

#include <gsl/gsl_cdf.h>

#include "common/error.h"

int rng_init(struct rng *g, uint64_t seed)
{
	g->seed = seed;
	g->r = gsl_rng_alloc(gsl_rng_mt19937);
	if (!g->r)
		return TS_ENOMEM;
	/* MT19937 takes an unsigned long seed; fold the high bits in. */
	gsl_rng_set(g->r, (unsigned long)(rng_hash64(seed) & 0xffffffffUL));
	return 0;
}

void rng_release(struct rng *g)
{
	if (g->r)
		gsl_rng_free(g->r);
	g->r = NULL;
}

double rng_uniform(struct rng *g)
{
	return gsl_rng_uniform(g->r);
}

uint64_t rng_below(struct rng *g, uint64_t n)
{
	TS_ASSERT(n >= 1);
	if (n <= 0xffffffffULL)
		return gsl_rng_uniform_int(g->r, (unsigned long)n);
	/* wider ranges: combine two draws, then reduce (bias < 2^-32) */
	uint64_t hi = gsl_rng_get(g->r) & 0xffffffffULL;
	uint64_t lo = gsl_rng_get(g->r) & 0xffffffffULL;
	return ((hi << 32) | lo) % n;
}

double rng_keyed_gaussian(uint64_t seed, uint64_t key, double sigma)
{
	double u = ((double)(rng_hash2(seed, key) >> 11) + 0.5) * 0x1p-53;
	return gsl_cdf_gaussian_Pinv(u, sigma);
}
