/* strcmp-count-shim.c: an LD_PRELOAD library for tests that counts a program's calls of strcmp (each step of a walk of a JSON object's members by name is one) and appends the count to MATE_TEST_STRCMP_OUT at exit.
 *
 * A test runs a tool on N keys and on N/4 and compares the counts: a search
 * per key makes about 4 (or a little more, n log n) times as many, a walk
 * of every member per key 16 times. Counting work, not time, keeps the test
 * independent of the machine's speed and load. Calls made inside libc itself
 * are not counted, nor strcmp()s a compiler inlined; the comparisons of
 * libmate and of cJSON (shared libraries) all are.
 */
#include <stdio.h>
#include <stdlib.h>

static unsigned long long calls;

int
strcmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
	while (*x != '\0' && *x == *y) {
		x++;
		y++;
	}
	return (int)*x - (int)*y;
}

__attribute__((destructor)) static void
report(void)
{
	const char *out = getenv("MATE_TEST_STRCMP_OUT");
	FILE *f;

	if (out == NULL || (f = fopen(out, "a")) == NULL)
		return;
	fprintf(f, "%llu\n", __atomic_load_n(&calls, __ATOMIC_RELAXED));
	fclose(f);
}
