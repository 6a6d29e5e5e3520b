/* memcap.c: the memory cap of libmate's readers and replays (MATE_MAX_MEMORY, mate_memory_cap_set()). */
#include "mate_private.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MEMCAP_DEFAULT ((uint64_t)1 << 30)

static uint64_t cap_set;        /* mate_memory_cap_set(); 0: not set */

int
mate_size_parse(const char *s, uint64_t *bytes)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return MATE_ERR_ARGUMENT;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || v == 0)
		return MATE_ERR_ARGUMENT;
	if (*end != '\0') {
		const char *u = strchr(units, toupper((unsigned char)*end));
		if (u == NULL)
			return MATE_ERR_ARGUMENT;
		shift = 10 * (unsigned)(u - units + 1);
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
		if (*end != '\0')
			return MATE_ERR_ARGUMENT;
	}
	if (v > UINT64_MAX >> shift)
		return MATE_ERR_ARGUMENT;
	*bytes = (uint64_t)v << shift;
	return MATE_OK;
}

uint64_t
mate_memory_cap(void)
{
	uint64_t v;

	if (__atomic_load_n(&cap_set, __ATOMIC_RELAXED) != 0)
		return __atomic_load_n(&cap_set, __ATOMIC_RELAXED);
	if (mate_size_parse(getenv("MATE_MAX_MEMORY"), &v) == MATE_OK)
		return v;
	return MEMCAP_DEFAULT;
}

void
mate_memory_cap_set(uint64_t bytes)
{
	__atomic_store_n(&cap_set, bytes, __ATOMIC_RELAXED);
}
