/* test_recorder_fmt.c: the recorder's number spellings (lib/record/pyfmt.c) against printf and a brute-force shortest repr, and its vectorized float32 statistics (lib/record/stats.c) against the element-by-element path. */
#include "recorder_private.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "xorshift.h"

/* xorshift64, seeded by each case: a case checks the same values alone
 * as in the whole run. */
static uint64_t rng;

static uint64_t
next64(void)
{
	return xorshift64(&rng);
}

/* The significant digits of a decimal string, without leading or trailing
 * zeros: "0.00120" and "1.2e-03" both give "12". */
static void
sig_digits(const char *s, char *out)
{
	int n = 0, started = 0;

	for (; *s != '\0' && *s != 'e'; s++) {
		if (*s < '0' || *s > '9')
			continue;
		if (*s == '0' && !started)
			continue;
		started = 1;
		out[n++] = *s;
	}
	while (n > 1 && out[n - 1] == '0')
		n--;
	if (n == 0)
		out[n++] = '0';
	out[n] = '\0';
}

/* The reference: the least precision whose correctly rounded "%.*e" reads
 * back as d. */
static void
reference_digits(double d, char *out)
{
	char tmp[64];

	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	sig_digits(tmp, out);
}

static int repr_failures;

static void
check_repr(double d)
{
	char buf[MATE_PYFLOAT_MAX], want[32], got[32];

	if (isnan(d) || isinf(d))
		return;
	mate_py_float_repr(d, buf);
	reference_digits(d, want);
	sig_digits(buf, got);
	test_checks++;
	if (strtod(buf, NULL) != d || strcmp(got, want) != 0 || (signbit(d) != 0) != (buf[0] == '-')) {
		if (repr_failures++ < 10)
			fprintf(stderr, "repr(%.17g) = %s, want the digits %s\n", d, buf, want);
		test_failures++;
	}
}

static int fixed_failures;

static void
check_fixed(double x, int decimals)
{
	struct mate_buf b;
	char want[400];

	snprintf(want, sizeof(want), "%.*f", decimals, x);
	mate_buf_init(&b);
	mate_buf_fixed(&b, x, decimals);
	test_checks++;
	if (mate_buf_str(&b) == NULL || strcmp(b.p, want) != 0) {
		if (fixed_failures++ < 10)
			fprintf(stderr, "fixed(%.17g, %d) = %s, want %s\n", x, decimals,
			    b.p ? b.p : "(null)", want);
		test_failures++;
	}
	mate_buf_free(&b);
}

/* The same double, NaNs of any sign and payload alike (all print "nan"). */
static int
same(double x, double y)
{
	return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof(double)) == 0;
}

/* Statistics of n float32 values: contiguous (the vector path) and as a
 * view with stride 2 (one element at a time) must agree exactly. */
static void
check_stats(const float *v, int64_t n)
{
	float *wide = calloc((size_t)(2 * n + 1), sizeof(float));
	mate_tensor a, b;
	int64_t stride = 2;
	struct rec_stats sa, sb;

	for (int64_t i = 0; i < n; i++)
		wide[2 * i] = v[i];
	mate_tensor_init(&a, MATE_F32, 1, &n, NULL, (void *)(uintptr_t)v);
	mate_tensor_init(&b, MATE_F32, 1, &n, &stride, wide);
	mate_rec_stats(&a, &sa);
	mate_rec_stats(&b, &sb);
	test_checks++;
	if (sa.kind != sb.kind || sa.nan_count != sb.nan_count || sa.inf_count != sb.inf_count ||
	    !same(sa.min, sb.min) || !same(sa.max, sb.max) || !same(sa.mean, sb.mean)) {
		test_failures++;
		fprintf(stderr, "stats of %lld values: min %g/%g max %g/%g mean %g/%g nan %lld/%lld inf %lld/%lld\n",
		    (long long)n, sa.min, sb.min, sa.max, sb.max, sa.mean, sb.mean,
		    (long long)sa.nan_count, (long long)sb.nan_count, (long long)sa.inf_count,
		    (long long)sb.inf_count);
	}
	free(wide);
}

/* repr: Python's own examples, then random bit patterns, floats, short
 * decimals, binary fractions and subnormals. */
DEFINE_TEST(repr)
{
	union { uint64_t u; double d; } pun;

	rng = 0x9e3779b97f4a7c15ull;
	check_repr(0.1), check_repr(1e-5), check_repr(5e-324), check_repr(DBL_MAX);
	check_repr(DBL_MIN), check_repr(1e16), check_repr(123456789012345678.0);
	check_repr(0.000244140625), check_repr(9007199254740993.0), check_repr(-2.5);
	for (int i = 0; i < 20000; i++) {
		pun.u = next64();
		check_repr(pun.d);
		check_repr((double)(float)pun.d);
		check_repr((double)(int64_t)(next64() % 100000000) / pow(10, (double)(next64() % 25)));
		check_repr(ldexp((double)(next64() % 100000), -(int)(next64() % 60)));
		pun.u = next64() & 0x000fffffffffffffull;
		check_repr(pun.d);
	}
}

/* fixed: specials as Python writes them, ties, and random values. */
DEFINE_TEST(fixed)
{
	static const int decimals[] = { 0, 1, 2, 6, 9 };
	struct mate_buf b;
	double d;
	union { uint64_t u; double d; } pun;

	rng = 0x2545f4914f6cdd1dull;
	mate_buf_init(&b);
	mate_buf_fixed(&b, NAN, 6);
	mate_buf_fixed(&b, -INFINITY, 6);
	mate_buf_fixed(&b, INFINITY, 2);
	CHECK_STR(mate_buf_str(&b), "nan-infinf");
	mate_buf_free(&b);
	check_fixed(0.125, 2), check_fixed(0.375, 2), check_fixed(2.5, 0), check_fixed(3.5, 0);
	check_fixed(-0.0, 6), check_fixed(-1e-9, 6), check_fixed(0.0000005, 6), check_fixed(1e300, 6);
	check_fixed(4503599627370495.5, 0), check_fixed(4503599627370497.0, 1), check_fixed(1e15, 6);
	for (int i = 0; i < 20000; i++) {
		int dec = decimals[next64() % 5];
		pun.u = next64();
		d = (double)(float)ldexp((double)(int64_t)(next64() % 2000001) - 1000000.0,
		    -(int)(next64() % 40));
		check_fixed(d, dec);
		check_fixed((double)(next64() % 1000000) / 1048576.0, 2);
		check_fixed(((double)(next64() % 2000000) - 1e6) / pow(10, (double)(next64() % 8)), dec);
		if (!isnan(pun.d) && !isinf(pun.d) && fabs(pun.d) < 1e30)
			check_fixed(pun.d, dec);
	}
}

/* float32 statistics: lengths around the vector width, NaN and Inf anywhere. */
DEFINE_TEST(stats)
{
	rng = 0x94d049bb133111ebull;
	for (int round = 0; round < 3000; round++) {
		float v[64];
		int64_t n = (int64_t)(next64() % 40);
		int specials = (int)(next64() % 4);
		for (int64_t i = 0; i < n; i++)
			v[i] = (float)((int)(next64() % 8193) - 4096) / 1024.0f;
		for (int k = 0; k < specials && n > 0; k++) {
			static const float sp[4] = { NAN, INFINITY, -INFINITY, -0.0f };
			v[next64() % (uint64_t)n] = sp[next64() % 4];
		}
		if (round % 50 == 0)
			for (int64_t i = 0; i < n; i++)
				v[i] = NAN;
		check_stats(v, n);
	}
}

TEST_MAIN()
