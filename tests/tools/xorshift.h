/* xorshift.h: the tests' pseudo-random numbers, Marsaglia's xorshift generators: the same
 * sequence from the same seed on every machine. */
#ifndef MATE_XORSHIFT_H_INCLUDED
#define MATE_XORSHIFT_H_INCLUDED

#include <stdint.h>

/* The next number of the 32-bit generator whose state (not 0) is *s. */
static inline uint32_t
xorshift32(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* The next number of the 64-bit generator whose state (not 0) is *s. */
static inline uint64_t
xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif /* MATE_XORSHIFT_H_INCLUDED */
