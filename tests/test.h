/* test.h: the tiny assertion kit shared by libmate's C unit tests. */
#ifndef MATE_TEST_H_INCLUDED
#define MATE_TEST_H_INCLUDED

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;
static int test_checks;

#define CHECK(cond) do { \
	test_checks++; \
	if (!(cond)) { \
		test_failures++; \
		fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

#define CHECK_EQ_INT(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	test_checks++; \
	if (a_ != b_) { \
		test_failures++; \
		fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", \
		    __FILE__, __LINE__, #a, #b, a_, b_); \
	} \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	test_checks++; \
	if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) { \
		test_failures++; \
		fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", \
		    __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} \
} while (0)

/* CHECK_CONTAINS(haystack, needle): an error message names the right cause. */
#define CHECK_CONTAINS(h, n) do { \
	const char *h_ = (h), *n_ = (n); \
	test_checks++; \
	if (h_ == NULL || strstr(h_, n_) == NULL) { \
		test_failures++; \
		fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", \
		    __FILE__, __LINE__, h_ ? h_ : "(null)", n_); \
	} \
} while (0)

/* Ends main(): prints "N passed, N failed" and returns the exit status,
 * 1 when a check failed or when none ran (a test that checks nothing
 * cannot pass; tests/check-driver.sh holds every test to this line). */
#define TEST_DONE() ( \
	test_checks == 0 ? fprintf(stderr, "0 checks ran\n") : 0, \
	printf("%d passed, %d failed\n", test_checks - test_failures, test_failures), \
	test_failures == 0 && test_checks > 0 ? 0 : 1)

#endif /* MATE_TEST_H_INCLUDED */
