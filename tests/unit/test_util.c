/* test_util.c: the utility layer (lib/core/util.h): one name filter for the recorder and mate-replay, one JSON string writer in each writer's spelling, the text buffer, settings, locales, the hash map, the calls made at a thread's exit. */
#include "config.h"
#include "util.h"
#include "util_map.h"
#include "test.h"
#include <pthread.h>

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

/* ---- the hash map ---------------------------------------------------------------------- */

/* n keys other than 0 sharing the home slot of `first` in a table of cap slots. */
static void
same_home(uint64_t *k, int n, uint64_t first, size_t cap)
{
	size_t home = mate_map_home(first, cap);

	k[0] = first;
	for (uint64_t c = first + 1; n > 1; c++)
		if (mate_map_home(c, cap) == home)
			k[--n] = c;
}

DEFINE_TEST(map_basic)
{
	struct mate_map m = { 0 };
	uint64_t *v, val = 7;
	int found = -1;

	CHECK(mate_map_get(&m, 5) == NULL);
	CHECK(mate_map_get(&m, 0) == NULL);
	CHECK_EQ_INT(mate_map_take(&m, 5, &val), 0);
	CHECK_EQ_INT(mate_map_take(&m, 0, &val), 0);
	CHECK((v = mate_map_put(&m, 5, &found)) != NULL && found == 0 && *v == 0);
	*v = 50;
	CHECK((v = mate_map_put(&m, 5, &found)) != NULL && found == 1 && *v == 50);
	*v = 51;                                  /* replace */
	CHECK((v = mate_map_get(&m, 5)) != NULL && *v == 51);
	/* 0 and UINT64_MAX are keys like any other */
	CHECK((v = mate_map_put(&m, 0, &found)) != NULL && found == 0 && *v == 0);
	*v = 100;
	CHECK((v = mate_map_put(&m, UINT64_MAX, &found)) != NULL && found == 0);
	*v = UINT64_MAX;
	CHECK_EQ_INT(mate_map_count(&m), 3);
	CHECK((v = mate_map_get(&m, 0)) != NULL && *v == 100);
	CHECK((v = mate_map_get(&m, UINT64_MAX)) != NULL && *v == UINT64_MAX);
	CHECK_EQ_INT(mate_map_take(&m, 0, &val), 1);
	CHECK(val == 100 && mate_map_get(&m, 0) == NULL);
	CHECK_EQ_INT(mate_map_take(&m, 5, &val), 1);
	CHECK(val == 51 && mate_map_get(&m, 5) == NULL);
	CHECK_EQ_INT(mate_map_take(&m, 5, &val), 0);
	CHECK_EQ_INT(mate_map_count(&m), 1);
	mate_map_free(&m);
	CHECK(m.keys == NULL && m.cap == 0 && mate_map_count(&m) == 0);
}

/* Deleting from the middle of a probe chain, also one that wraps past the last slot. */
DEFINE_TEST(map_chain_delete)
{
	struct mate_map m = { 0 };
	uint64_t k[4], val = 0;
	int found;

	for (int wrap = 0; wrap < 2; wrap++) {
		uint64_t first = 1;
		while (wrap && mate_map_home(first, MATE_MAP_FIRST) != MATE_MAP_FIRST - 2)
			first++;
		same_home(k, 4, first, MATE_MAP_FIRST);
		for (int i = 0; i < 4; i++)
			*mate_map_put(&m, k[i], &found) = k[i] * 3;
		CHECK_EQ_INT(m.cap, MATE_MAP_FIRST);
		for (int gone = 0; gone < 4; gone++) {
			CHECK_EQ_INT(mate_map_take(&m, k[gone], &val), 1);
			CHECK(val == k[gone] * 3);
			for (int i = 0; i < 4; i++) {
				uint64_t *v = mate_map_get(&m, k[i]);
				CHECK(i <= gone ? v == NULL : v != NULL && *v == k[i] * 3);
			}
		}
		CHECK_EQ_INT(mate_map_count(&m), 0);
		mate_map_free(&m);
	}
}

/* A pseudo-random run of puts and takes over a small set of keys (probe
 * chains form, the table grows), checked against a plain array. */
DEFINE_TEST(map_random)
{
	enum { NKEYS = 3000, STEPS = 200000 };
	static uint64_t key[NKEYS], ref[NKEYS];
	static unsigned char in[NKEYS];
	struct mate_map m = { 0 };
	uint64_t s = 88172645463325252u, val, k, v;
	size_t count = 0, seen = 0, pos = 0;
	int found, bad = 0;

	for (int i = 0; i < NKEYS; i++)          /* 0, pointers, and the top of the range */
		key[i] = i == 0 ? 0 : i % 3 == 0 ? UINT64_MAX - (uint64_t)i : (uint64_t)i * 256;
	for (int step = 0; step < STEPS && !bad; step++) {
		int i, op;
		uint64_t *p;
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		/* the first half fills (inserts twice as likely), the second drains */
		i = (int)((s >> 8) % NKEYS);
		op = (int)(s % 3) + (step < STEPS / 2 ? 0 : 1);
		if (op <= 1) {
			p = mate_map_put(&m, key[i], &found);
			bad |= p == NULL || found != in[i] || (found && *p != ref[i]);
			if (p != NULL)
				*p = ref[i] = s;
			count += !in[i];
			in[i] = 1;
		} else {
			int took = mate_map_take(&m, key[i], &val);
			bad |= took != in[i] || (took && val != ref[i]);
			count -= in[i];
			in[i] = 0;
		}
		if (step % 1000 == 0)
			for (int j = 0; j < NKEYS; j++) {
				p = mate_map_get(&m, key[j]);
				bad |= in[j] ? p == NULL || *p != ref[j] : p != NULL;
			}
		bad |= mate_map_count(&m) != count;
		if (bad)
			fprintf(stderr, "map_random: wrong at step %d (key %#llx)\n", step,
			    (unsigned long long)key[i]);
	}
	CHECK(!bad);
	CHECK(m.cap >= 1024 && (m.cap & (m.cap - 1)) == 0);   /* it grew, by doubling */
	while (mate_map_next(&m, &pos, &k, &v)) {
		int j = 0;
		while (j < NKEYS - 1 && key[j] != k)
			j++;
		CHECK(key[j] == k && in[j] && ref[j] == v);
		seen++;
	}
	CHECK_EQ_INT(seen, count);
	mate_map_free(&m);
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

/* ---- a thread's caches, freed at its exit ---------------------------------------------- */

static char exit_order[8];

static void
note_exit(void *arg)
{
	size_t n = strlen(exit_order);

	exit_order[n] = *(const char *)arg;
	exit_order[n + 1] = '\0';
}

static void *
register_exits(void *arg)
{
	static const char names[] = "abcde";
	int *rc = arg;

	for (int i = 0; i < 5; i++)
		rc[i] = mate_thread_at_exit(note_exit, (void *)(names + i));
	return NULL;
}

DEFINE_TEST(thread_at_exit)
{
	pthread_t th;
	int rc[5];

	exit_order[0] = '\0';
	CHECK(pthread_create(&th, NULL, register_exits, rc) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK(rc[0] == 0 && rc[1] == 0 && rc[2] == 0 && rc[3] == 0);
	CHECK_EQ_INT(rc[4], -1);              /* four a thread */
	CHECK_STR(exit_order, "dcba");        /* each called once at its exit, the last first */
}

TEST_MAIN()
