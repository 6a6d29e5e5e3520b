/* test_recorder_stats.c: level-5 statistics for every dtype (through float32 as MATE computes them), strided
 * views, NaN and Inf, and no statistics for bool, complex and empty tensors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mate_record.h"
#include "test.h"

static char log_path[300];

/* Records one call with tensor t at level 5; returns the statistics lines
 * of its block (after is_contiguous=, up to the closing parenthesis). */
static char *
stats_of(const mate_tensor *t)
{
	static char out[1024];
	struct mate_config cfg;
	char *log, *p, *end;
	mate_call *c;
	size_t n;

	unlink(log_path);
	mate_config_default(&cfg);
	cfg.level = 5;
	cfg.logdest = log_path;
	mate_configure(&cfg, NULL);
	c = mate_call_begin("f", NULL, NULL);
	mate_call_tensor(c, MATE_ARG, NULL, t);
	mate_call_ready(c);
	mate_call_end(c);
	out[0] = '\0';
	log = test_slurp(log_path, NULL);
	if (log == NULL || (p = strstr(log, "is_contiguous=")) == NULL ||
	    (p = strchr(p, '\n')) == NULL || (end = strstr(p, "    )")) == NULL) {
		free(log);
		return out;
	}
	p++;
	n = (size_t)(end - p) < sizeof(out) - 1 ? (size_t)(end - p) : sizeof(out) - 1;
	/* drop the indentation: "      min=1" -> "min=1" */
	for (size_t i = 0, j = 0; i < n; i++) {
		if (p[i] == ' ' && (i == 0 || p[i - 1] == '\n' || p[i - 1] == ' '))
			continue;
		out[j++] = p[i];
		out[j] = '\0';
	}
	free(log);
	return out;
}

static mate_tensor
vec(mate_dtype dt, int64_t n, void *data)
{
	mate_tensor t;
	int64_t shape[] = { n };

	mate_tensor_init(&t, dt, 1, shape, NULL, data);
	return t;
}

#define FLOAT_STATS(mn, mx, mean, nans, infs) \
	"min=" mn "\nmax=" mx "\nmean=" mean "\nnan_count=" #nans "\ninf_count=" #infs "\n"

/* One row of a table: tensor data of dtype dt, n elements, and the
 * statistics its call gets. */
struct stats_case {
	mate_dtype dt;
	int64_t n;
	void *data;
	const char *want;
};

static void
check_stats(const struct stats_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		mate_tensor t = vec(c[i].dt, c[i].n, c[i].data);

		CHECK_STR(stats_of(&t), c[i].want);
	}
}

/* Floating types, through float32 as torch's .float() goes: NaN and Inf
 * counted, float64's 1e300 an inf. */
DEFINE_TEST(floats)
{
	float f32[] = { 1.5f, -2.25f, 3.0f, 0.125f };
	double f64[] = { 1e300, -1.0, 2.0 };
	uint16_t f16[4], bf16[4];
	uint8_t f8a[4], f8b[4];
	float nan_inf[] = { 1.0f, NAN, INFINITY, -2.0f };
	float infs[] = { INFINITY, -INFINITY, 1.0f };
	/* f32's values, exact in each of these types: the same statistics */
	const struct {
		mate_dtype dt;
		void *data;
	} exact[] = {
		{ MATE_F32, f32 }, { MATE_F16, f16 }, { MATE_BF16, bf16 }, { MATE_F8_E4M3FN, f8a },
	};
	const struct stats_case other[] = {
		/* e5m2 rounds -2.25 to -2 and 0.125 stays */
		{ MATE_F8_E5M2, 4, f8b, FLOAT_STATS("-2.000000", "3.000000", "0.656250", 0, 0) },
		/* float64 goes through float32 as torch's .float() does: 1e300 -> inf */
		{ MATE_F64, 3, f64, FLOAT_STATS("-1.000000", "inf", "inf", 0, 1) },
		{ MATE_F32, 4, nan_inf, FLOAT_STATS("nan", "nan", "nan", 1, 1) },
		{ MATE_F32, 3, infs, FLOAT_STATS("-inf", "inf", "nan", 0, 2) },
	};

	for (int i = 0; i < 4; i++) {
		f16[i] = mate_f32_to_f16(f32[i]);
		bf16[i] = mate_f32_to_bf16(f32[i]);
		f8a[i] = mate_f32_to_f8e4m3fn(f32[i]);
		f8b[i] = mate_f32_to_f8e5m2(f32[i]);
	}
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		mate_tensor t = vec(exact[i].dt, 4, exact[i].data);

		CHECK_STR(stats_of(&t), FLOAT_STATS("-2.250000", "3.000000", "0.593750", 0, 0));
	}
	check_stats(other, sizeof(other) / sizeof(other[0]));
}

/* Integers: exact min and max, mean through float32. */
DEFINE_TEST(integers)
{
	uint8_t u8[] = { 200, 255, 0, 7 };
	int8_t i8[] = { -128, 127, 3 };
	int16_t i16[] = { -300, 300, 1 };
	int32_t i32[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	int64_t i64[] = { INT64_MIN, INT64_MAX, 0 };
	uint64_t u64[] = { UINT64_MAX, 1 };
	const struct stats_case cases[] = {
		{ MATE_I8, 3, i8, "min=-128\nmax=127\nmean=0.666667\n" },
		{ MATE_I16, 3, i16, "min=-300\nmax=300\nmean=0.333333\n" },
		{ MATE_I32, 10, i32, "min=0\nmax=9\nmean=4.500000\n" },
		{ MATE_I64, 3, i64, "min=-9223372036854775808\nmax=9223372036854775807\nmean=0.000000\n" },
		{ MATE_U8, 4, u8, "min=0\nmax=255\nmean=115.500000\n" },
		{ MATE_U64, 2, u64, "min=1\nmax=18446744073709551615\nmean=9223372036854775808.000000\n" },
	};

	check_stats(cases, sizeof(cases) / sizeof(cases[0]));
}

/* None for bool, complex and empty tensors. */
DEFINE_TEST(none)
{
	uint8_t b8[] = { 1, 0, 1 };
	uint16_t c32[4] = { 0 };
	int64_t cshape[] = { 3, 0 };
	mate_tensor t;

	t = vec(MATE_BOOL, 3, b8);
	CHECK_STR(stats_of(&t), "");
	t = vec(MATE_C32, 2, c32);
	CHECK_STR(stats_of(&t), "");
	mate_tensor_init(&t, MATE_F32, 2, cshape, NULL, NULL);
	CHECK_STR(stats_of(&t), "");
}

/* A strided view counts only its own elements; a 0-dim tensor its one. */
DEFINE_TEST(views)
{
	float m[3][4] = { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } };
	int64_t mshape[] = { 2, 2 }, mstride[] = { 4, 2 };
	mate_tensor t;

	/* m[0:2, ::2] */
	mate_tensor_init(&t, MATE_F32, 2, mshape, mstride, m);
	CHECK_STR(stats_of(&t), FLOAT_STATS("1.000000", "7.000000", "4.000000", 0, 0));
	t.offset = 5; /* m[1:3, 1::2] = 6, 8, 10, 12 */
	CHECK_STR(stats_of(&t), FLOAT_STATS("6.000000", "12.000000", "9.000000", 0, 0));
	/* a 0-dim tensor */
	mate_tensor_init(&t, MATE_F32, 0, NULL, NULL, &m[2][3]);
	CHECK_STR(stats_of(&t), FLOAT_STATS("12.000000", "12.000000", "12.000000", 0, 0));
}

int
main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	int st;

	snprintf(log_path, sizeof(log_path), "%s/mate-stats-%ld.log", tmp ? tmp : "/tmp", (long)getpid());
	st = test_main(argc, argv);
	unlink(log_path);
	return st;
}
