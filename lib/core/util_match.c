/* util_match.c: the one function-name filter, for MATE_DUMP_INCLUDE/EXCLUDE and mate-replay's --include/--exclude. */
#include "util.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

int
mate_patterns_add(struct mate_patterns *ps, const char *list)
{
	while (list != NULL && *list != '\0') {
		size_t len = strcspn(list, ","), tl = len;
		const char *t = list;
		char **grown;

		while (tl > 0 && isspace((unsigned char)*t))
			t++, tl--;
		while (tl > 0 && isspace((unsigned char)t[tl - 1]))
			tl--;
		list += len + (list[len] == ',');
		if (tl == 0)
			continue;
		if ((grown = realloc(ps->p, (ps->n + 1) * sizeof(*grown))) == NULL)
			return -1;
		ps->p = grown;
		if ((ps->p[ps->n] = strndup(t, tl)) == NULL)
			return -1;
		ps->n++;
	}
	return 0;
}

void
mate_patterns_free(struct mate_patterns *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->p[i]);
	free(ps->p);
	ps->p = NULL;
	ps->n = 0;
}

static int
any_match(const struct mate_patterns *ps, const char *name)
{
	for (size_t i = 0; i < ps->n; i++)
		if (fnmatch(ps->p[i], name, 0) == 0)
			return 1;
	return 0;
}

int
mate_patterns_select(const struct mate_patterns *include, const struct mate_patterns *exclude,
    const char *name)
{
	return (include->n == 0 || any_match(include, name)) && !any_match(exclude, name);
}
