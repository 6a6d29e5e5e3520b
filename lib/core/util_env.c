/* util_env.c: integer settings from the environment. */
#include "util.h"

#include <stdlib.h>

int
mate_env_long(const char *name, long lo, long hi, long *v)
{
	const char *s = getenv(name);
	char *end;

	if (s == NULL || *s == '\0')
		return 0;
	*v = strtol(s, &end, 10);
	return *end == '\0' && *v >= lo && *v <= hi ? 1 : -1;
}
