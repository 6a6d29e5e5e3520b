/* harness-demo.c: a test program of a few cases for tests/cli/test_harness.sh, which runs the harness of tests/test.h through it. */
#include "config.h"

#include <signal.h>

#include "test.h"

/* Two cases that pass, with 2 and 3 checks. */
DEFINE_TEST(one)
{
	CHECK(1 + 1 == 2);
	CHECK_STR("one", "one");
}

DEFINE_TEST(two)
{
	CHECK_EQ_INT(2, 2);
	CHECK_CONTAINS("two cases", "cases");
	CHECK(2 > 1);
}

/* Fails its second check when MATE_HARNESS_FAIL is set, crashes when
 * MATE_HARNESS_CRASH is set; passes otherwise. */
DEFINE_TEST(sometimes)
{
	CHECK(1);
	CHECK_EQ_INT(getenv("MATE_HARNESS_FAIL") != NULL, 0);
	if (getenv("MATE_HARNESS_CRASH") != NULL)
		raise(SIGABRT);
}

/* The shared helpers: a temporary folder made and removed, a file read
 * whole, a command's output and exit status. */
DEFINE_TEST(helpers)
{
	char *dir = test_tmpdir("harness"), *path, *text;
	size_t len = 99;
	int st;
	FILE *f;

	CHECK(dir != NULL);
	if (dir == NULL)
		return;
	CHECK_CONTAINS(dir, "/mate-harness.");
	path = malloc(strlen(dir) + sizeof("/sub/f"));
	sprintf(path, "%s/sub", dir);
	CHECK(mkdir(path, 0755) == 0);
	strcat(path, "/f");
	CHECK((f = fopen(path, "w")) != NULL);
	if (f != NULL) {
		fwrite("ab\0cd", 1, 5, f);
		fclose(f);
	}
	text = test_slurp(path, &len);
	CHECK_EQ_INT(len, 5);
	CHECK(text != NULL && memcmp(text, "ab\0cd", 6) == 0);
	free(text);
	CHECK(test_slurp("/nonexistent/f", &len) == NULL);
	CHECK_EQ_INT(len, 0);
	text = test_capture("printf 'out\\n'; printf 'err\\n' >&2; exit 3", &st);
	CHECK_STR(text, "out\n");
	CHECK_EQ_INT(st, 3);
	free(text);
	text = test_capture("kill -9 $$", &st);
	CHECK_STR(text, "");
	CHECK_EQ_INT(st, 128 + 9);
	free(text);
	CHECK_EQ_INT(test_rmtree(dir), 0);
	CHECK(access(dir, F_OK) != 0);
	CHECK_EQ_INT(test_rmtree(dir), 0);   /* gone already: nothing to do */
	free(path);
	free(dir);
}

TEST_MAIN()
