/* test_util.c: the utility layer (lib/core/util.h): one name filter for the recorder and mate-replay, one JSON string writer in each writer's spelling, the text buffer, settings, locales. */
#include "config.h"
#include "util.h"
#include "test.h"

/* ---- name patterns ----------------------------------------------------------- */

DEFINE_TEST(patterns_split)
{
	struct mate_patterns ps = { 0 };

	CHECK_EQ_INT(mate_patterns_add(&ps, " a ,\tb,,c*,  ,"), 0);
	CHECK_EQ_INT(ps.n, 3);
	if (ps.n == 3) {
		CHECK_STR(ps.p[0], "a");
		CHECK_STR(ps.p[1], "b");
		CHECK_STR(ps.p[2], "c*");
	}
	/* repeated options add up, as mate-replay --include X --include Y */
	CHECK_EQ_INT(mate_patterns_add(&ps, "d\n"), 0);
	CHECK_EQ_INT(ps.n, 4);
	if (ps.n == 4)
		CHECK_STR(ps.p[3], "d");   /* isspace(), as Python's str.strip() */
	CHECK_EQ_INT(mate_patterns_add(&ps, NULL), 0);
	CHECK_EQ_INT(mate_patterns_add(&ps, ""), 0);
	CHECK_EQ_INT(ps.n, 4);
	mate_patterns_free(&ps);
	CHECK_EQ_INT(ps.n, 0);
}

static int
selected(const char *inc, const char *exc, const char *name)
{
	struct mate_patterns i = { 0 }, e = { 0 };
	int r;

	mate_patterns_add(&i, inc);
	mate_patterns_add(&e, exc);
	r = mate_patterns_select(&i, &e, name);
	mate_patterns_free(&i);
	mate_patterns_free(&e);
	return r;
}

/* The case the recorder and mate-replay disagreed on: mate-replay also
 * matched "Tensor.softmax" without its "Tensor." prefix. Both now match the
 * whole name, as FlashInfer's _should_dump_function() (fnmatch over
 * "Class.method") and mate.7 say. */
DEFINE_TEST(patterns_select)
{
	CHECK(selected(NULL, NULL, "Tensor.softmax"));               /* no patterns: all */
	CHECK(!selected("softmax", NULL, "Tensor.softmax"));
	CHECK(selected("Tensor.softmax", NULL, "Tensor.softmax"));
	CHECK(selected("*softmax", NULL, "Tensor.softmax"));
	CHECK(selected("softmax", NULL, "softmax"));
	CHECK(selected("softmax", "softmax", "Tensor.softmax") == 0);  /* not included */
	CHECK(selected(NULL, "softmax", "Tensor.softmax"));           /* not excluded */
	CHECK(!selected(NULL, "Tensor.*", "Tensor.softmax"));
	CHECK(selected("*.run", NULL, "BatchDecodeWithPagedKVCacheWrapper.run"));
	CHECK(!selected("run", NULL, "BatchDecodeWithPagedKVCacheWrapper.run"));
	CHECK(!selected("Softmax", NULL, "softmax"));                 /* case-sensitive */
	CHECK(selected("a,soft*", "*max", "softmin"));
	CHECK(!selected("a,soft*", "*max", "softmax"));
}

/* ---- JSON strings ----------------------------------------------------------------- */

static const char *
json(const char *s, size_t len, unsigned flags)
{
	static struct mate_buf b;

	mate_buf_free(&b);
	mate_buf_json(&b, s, len, flags);
	return mate_buf_str(&b);
}

DEFINE_TEST(json)
{
	/* quote, backslash, controls, DEL, UTF-8 (é, U+1F600), a stray byte */
	static const char s[] = "q\"b\\n\n\t\x01\x7f\xc3\xa9\xf0\x9f\x98\x80\xff";
	size_t n = sizeof(s) - 1;

	/* the live frames' spelling (monitor.c) */
	CHECK_STR(json(s, n, 0), "\"q\\\"b\\\\n\\u000a\\u0009\\u0001\x7f\xc3\xa9\xf0\x9f\x98\x80\xff\"");
	/* serde_json's (safetensors headers) */
	CHECK_STR(json(s, n, MATE_JSON_SHORT),
	    "\"q\\\"b\\\\n\\n\\t\\u0001\x7f\xc3\xa9\xf0\x9f\x98\x80\xff\"");
	/* Perfetto and mate-list-dumps --jsonl: invalid UTF-8 as U+FFFD */
	CHECK_STR(json(s, n, MATE_JSON_UTF8),
	    "\"q\\\"b\\\\n\\u000a\\u0009\\u0001\x7f\xc3\xa9\xf0\x9f\x98\x80\\ufffd\"");
	/* Python's json.dumps (dumps' metadata, the profile) */
	CHECK_STR(json(s, n, MATE_JSON_SHORT | MATE_JSON_ASCII),
	    "\"q\\\"b\\\\n\\n\\t\\u0001\\u007f\\u00e9\\ud83d\\ude00\\u00ff\"");
	/* NUL inside, overlong and surrogate forms are not UTF-8 */
	CHECK_STR(json("a\0b", 3, MATE_JSON_SHORT), "\"a\\u0000b\"");
	CHECK_STR(json("\xc0\xaf\xed\xa0\x80", 5, MATE_JSON_UTF8), "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(json("", 0, 0), "\"\"");
}

/* ---- the text buffer ------------------------------------------------------------------ */

DEFINE_TEST(buf)
{
	struct mate_buf b = { 0 };
	char big[5000];

	mate_buf_int(&b, -42);
	mate_buf_putc(&b, ' ');
	mate_buf_uint(&b, UINT64_MAX);
	mate_buf_putc(&b, ' ');
	mate_buf_hex(&b, 255);
	mate_buf_spaces(&b, 2);
	mate_buf_printf(&b, "%s|", "x");
	CHECK_STR(mate_buf_str(&b), "-42 18446744073709551615 0xff  x|");
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mate_buf_puts(&b, big);
	CHECK_EQ_INT(b.len, 33 + sizeof(big) - 1);
	CHECK_EQ_INT(strlen(mate_buf_str(&b)), b.len);
	mate_buf_free(&b);
	CHECK(b.p == NULL && b.len == 0);
}

/* ---- settings from the environment ---------------------------------------------------- */

DEFINE_TEST(env_long)
{
	long v = 0;

	unsetenv("MATE_TEST_ENV_LONG");
	CHECK_EQ_INT(mate_env_long("MATE_TEST_ENV_LONG", 1, 10, &v), 0);
	setenv("MATE_TEST_ENV_LONG", "", 1);
	CHECK_EQ_INT(mate_env_long("MATE_TEST_ENV_LONG", 1, 10, &v), 0);
	setenv("MATE_TEST_ENV_LONG", "7", 1);
	CHECK_EQ_INT(mate_env_long("MATE_TEST_ENV_LONG", 1, 10, &v), 1);
	CHECK_EQ_INT(v, 7);
	setenv("MATE_TEST_ENV_LONG", "11", 1);
	CHECK_EQ_INT(mate_env_long("MATE_TEST_ENV_LONG", 1, 10, &v), -1);
	setenv("MATE_TEST_ENV_LONG", "3x", 1);
	CHECK_EQ_INT(mate_env_long("MATE_TEST_ENV_LONG", 1, 10, &v), -1);
	setenv("MATE_TEST_ENV_LONG", "99999999999999999999", 1);
	CHECK_EQ_INT(mate_env_long("MATE_TEST_ENV_LONG", 1, 10, &v), -1);
	unsetenv("MATE_TEST_ENV_LONG");
}

/* ---- thread locales ------------------------------------------------------------------- */

DEFINE_TEST(locale)
{
	locale_t old;
	char tmp[16];

	CHECK(mate_locale(MATE_LOCALE_C) != (locale_t)0);
	CHECK(mate_locale(MATE_LOCALE_C) == mate_locale(MATE_LOCALE_C));
	old = mate_locale_enter(MATE_LOCALE_C);
	CHECK(old != (locale_t)0);
	snprintf(tmp, sizeof(tmp), "%.1f", 1.5);
	CHECK_STR(tmp, "1.5");
	CHECK(uselocale((locale_t)0) == mate_locale(MATE_LOCALE_C));
	mate_locale_leave(old);
	CHECK(uselocale((locale_t)0) == old);
	mate_locale_leave((locale_t)0);  /* nothing to go back to: nothing changes */
	CHECK(uselocale((locale_t)0) == old);
}

TEST_MAIN()
