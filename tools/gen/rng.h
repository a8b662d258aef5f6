/*
 * rng.h - xprofs-gen's deterministic RNG (splitmix64): every byte of output
 * is a pure function of the seeds derived here. Header-only (static inline)
 * because it runs per event; see pb.h.
 */
#ifndef XPROFS_GEN_RNG_H
#define XPROFS_GEN_RNG_H

#include <stdint.h>

/* ---- deterministic RNG (splitmix64) ----------------------------------- */

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	r->s += UINT64_C(0x9e3779b97f4a7c15);
	return mix64(r->s);
}

/* Uniform in [0, n); n == 0 gives 0. */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

/* Uniform in [0, 1). */
static inline double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static inline double rng_range(struct rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rng_unit(r);
}

/* Skewed pick in [0, n): low indices are much more frequent, like hot ops. */
static inline uint64_t rng_skewed(struct rng *r, uint64_t n)
{
	double u = rng_unit(r);

	return n ? (uint64_t)((double)n * u * u * u) % n : 0;
}

static inline uint64_t seed_of(uint64_t a, uint64_t b, uint64_t c)
{
	return mix64(mix64(mix64(a) ^ b) ^ (c * UINT64_C(0x2545f4914f6cdd1d)));
}

#endif
