/* util_array.c: room for one more element in the library's growing arrays. */
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int
mate_array_grow(void *arrayp, size_t n, size_t *cap, size_t size, size_t first)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap != 0 ? *cap * 2 : first;
	if (c > SIZE_MAX / size)
		return -1;
	memcpy(&p, arrayp, sizeof(p));
	if ((p = realloc(p, c * size)) == NULL)
		return -1;
	memcpy(arrayp, &p, sizeof(p));
	*cap = c;
	return 0;
}
