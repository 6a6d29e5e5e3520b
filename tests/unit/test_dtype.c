/* test_dtype.c: the dtype table and the exact f16/bf16/f8 conversions, checked exhaustively. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mate_core.h"
#include "test.h"

/* ---- the table ------------------------------------------------------------ */

struct expect {
	mate_dtype dt;
	const char *name, *alias;
	size_t size;
	int kind;
	const char *st, *storage;
};

static const struct expect table[] = {
	{ MATE_BOOL, "bool", NULL, 1, MATE_KIND_BOOL, "BOOL", "BoolStorage" },
	{ MATE_U8, "uint8", NULL, 1, MATE_KIND_UINT, "U8", "ByteStorage" },
	{ MATE_I8, "int8", NULL, 1, MATE_KIND_INT, "I8", "CharStorage" },
	{ MATE_I16, "int16", "short", 2, MATE_KIND_INT, "I16", "ShortStorage" },
	{ MATE_U16, "uint16", NULL, 2, MATE_KIND_UINT, "U16", NULL },
	{ MATE_I32, "int32", "int", 4, MATE_KIND_INT, "I32", "IntStorage" },
	{ MATE_U32, "uint32", NULL, 4, MATE_KIND_UINT, "U32", NULL },
	{ MATE_I64, "int64", "long", 8, MATE_KIND_INT, "I64", "LongStorage" },
	{ MATE_U64, "uint64", NULL, 8, MATE_KIND_UINT, "U64", NULL },
	{ MATE_F16, "float16", "half", 2, MATE_KIND_FLOAT, "F16", "HalfStorage" },
	{ MATE_BF16, "bfloat16", NULL, 2, MATE_KIND_FLOAT, "BF16", "BFloat16Storage" },
	{ MATE_F32, "float32", "float", 4, MATE_KIND_FLOAT, "F32", "FloatStorage" },
	{ MATE_F64, "float64", "double", 8, MATE_KIND_FLOAT, "F64", "DoubleStorage" },
	{ MATE_F8_E4M3FN, "float8_e4m3fn", NULL, 1, MATE_KIND_FLOAT, "F8_E4M3", NULL },
	{ MATE_F8_E5M2, "float8_e5m2", NULL, 1, MATE_KIND_FLOAT, "F8_E5M2", NULL },
	{ MATE_F8_E4M3FNUZ, "float8_e4m3fnuz", NULL, 1, MATE_KIND_FLOAT, "F8_E4M3FNUZ", NULL },
	{ MATE_F8_E5M2FNUZ, "float8_e5m2fnuz", NULL, 1, MATE_KIND_FLOAT, "F8_E5M2FNUZ", NULL },
	{ MATE_F8_E8M0FNU, "float8_e8m0fnu", NULL, 1, MATE_KIND_FLOAT, "F8_E8M0", NULL },
	{ MATE_C32, "complex32", "chalf", 4, MATE_KIND_COMPLEX, NULL, NULL },
	{ MATE_C64, "complex64", "cfloat", 8, MATE_KIND_COMPLEX, "C64", "ComplexFloatStorage" },
	{ MATE_C128, "complex128", "cdouble", 16, MATE_KIND_COMPLEX, NULL, "ComplexDoubleStorage" },
	{ MATE_F4_E2M1FN_X2, "float4_e2m1fn_x2", NULL, 1, MATE_KIND_UINT, "F4", NULL },
};
#define NTABLE (sizeof(table) / sizeof(table[0]))

static void
test_table_row(const struct expect *e)
{
	char buf[64];

	CHECK_STR(mate_dtype_name(e->dt), e->name);
	CHECK_EQ_INT(mate_dtype_size(e->dt), e->size);
	CHECK_EQ_INT(mate_dtype_kind(e->dt), e->kind);
	CHECK_EQ_INT(mate_dtype_from_name(e->name), e->dt);
	snprintf(buf, sizeof(buf), "torch.%s", e->name);
	CHECK_EQ_INT(mate_dtype_from_name(buf), e->dt);
	if (e->alias != NULL) {
		CHECK_EQ_INT(mate_dtype_from_name(e->alias), e->dt);
		snprintf(buf, sizeof(buf), "torch.%s", e->alias);
		CHECK_EQ_INT(mate_dtype_from_name(buf), e->dt);
	}
	if (e->st != NULL) {
		CHECK_STR(mate_dtype_safetensors_name(e->dt), e->st);
		CHECK_EQ_INT(mate_dtype_from_safetensors(e->st), e->dt);
	} else {
		CHECK(mate_dtype_safetensors_name(e->dt) == NULL);
	}
	if (e->storage != NULL) {
		CHECK_STR(mate_dtype_storage_class(e->dt), e->storage);
		CHECK_EQ_INT(mate_dtype_from_storage_class(e->storage), e->dt);
	} else {
		CHECK(mate_dtype_storage_class(e->dt) == NULL);
	}
}

DEFINE_TEST(table)
{
	static const char *bad_names[] = {
		"", "torch.", "Float32", "FLOAT32", "f32", "float8_e4m3", "torch.torch.float32",
		"torch float32", " float32", "float32 ", "invalid", "quint8", "float128", "bfloat",
	};
	static const char *bad_st[] = {
		"", "f32", "F8_E4M3FN", "F128", "C128", "C32", "Bool", "bool", "F32 ", "F8_E4M3FNUZ\n",
	};
	static const char *bad_storage[] = {
		"", "Storage", "floatStorage", "UntypedStorage", "QInt8Storage", "ComplexHalfStorage",
		"torch.FloatStorage", "FloatStorage ",
	};
	int seen[MATE_DTYPE_COUNT] = { 0 };

	CHECK_EQ_INT(NTABLE, MATE_DTYPE_COUNT - 1);
	for (size_t i = 0; i < NTABLE; i++) {
		test_table_row(&table[i]);
		seen[table[i].dt]++;
	}
	for (int d = 1; d < MATE_DTYPE_COUNT; d++)
		CHECK_EQ_INT(seen[d], 1);
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
		CHECK_EQ_INT(mate_dtype_from_name(bad_names[i]), MATE_DTYPE_INVALID);
	for (size_t i = 0; i < sizeof(bad_st) / sizeof(bad_st[0]); i++)
		CHECK_EQ_INT(mate_dtype_from_safetensors(bad_st[i]), MATE_DTYPE_INVALID);
	for (size_t i = 0; i < sizeof(bad_storage) / sizeof(bad_storage[0]); i++)
		CHECK_EQ_INT(mate_dtype_from_storage_class(bad_storage[i]), MATE_DTYPE_INVALID);
	CHECK_EQ_INT(mate_dtype_from_name(NULL), MATE_DTYPE_INVALID);
	CHECK_EQ_INT(mate_dtype_from_safetensors(NULL), MATE_DTYPE_INVALID);
	CHECK_EQ_INT(mate_dtype_from_storage_class(NULL), MATE_DTYPE_INVALID);

	/* out-of-range enum values */
	static const mate_dtype bad[] = { MATE_DTYPE_INVALID, MATE_DTYPE_COUNT, (mate_dtype)-1,
		(mate_dtype)1000 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_INT(mate_dtype_size(bad[i]), 0);
		CHECK(mate_dtype_kind(bad[i]) < 0);
		CHECK_STR(mate_dtype_name(bad[i]), "invalid");
		CHECK(mate_dtype_safetensors_name(bad[i]) == NULL);
		CHECK(mate_dtype_storage_class(bad[i]) == NULL);
	}
}

/* ---- reference decoders (independent of lib/core/dtype.c) ----------------------- */

/* Value of a sign-magnitude binary float with ebits/mbits, or NaN/inf as
 * the format says; all_ones_nan: only the all-ones pattern is NaN (e4m3fn). */
static double
ref_decode(unsigned v, int ebits, int mbits, int ieee_special, int all_ones_nan)
{
	unsigned emax = (1u << ebits) - 1, mmax = (1u << mbits) - 1;
	unsigned e = (v >> mbits) & emax, m = v & mmax;
	int bias = (1 << (ebits - 1)) - 1, neg = (v >> (ebits + mbits)) & 1;
	double r;

	if (ieee_special && e == emax)
		r = m == 0 ? INFINITY : NAN;
	else if (all_ones_nan && e == emax && m == mmax)
		r = NAN;
	else if (e == 0)
		r = ldexp((double)m, 1 - bias - mbits);
	else
		r = ldexp((double)(m + (1u << mbits)), (int)e - bias - mbits);
	return neg ? -r : r;
}

static int
same_value(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return a == b && signbit(a) == signbit(b);
}

/* ---- the formats, round trips over every pattern ---------------------------- */

struct fmt {
	const char *name;
	double (*dec)(unsigned);
	unsigned (*enc)(float);
	int ebits, mbits;     /* ref_decode()'s view of it */
	int ieee_special, all_ones_nan;
	int nan_sign;         /* a NaN encodes back with its sign */
	unsigned maxfinite;   /* largest positive finite code */
	unsigned signbit;
	double next_above;    /* the value one step past maxfinite */
	unsigned overflow;    /* code for values rounding past maxfinite */
};

static double dec_f16(unsigned v) { return mate_f16_to_f32((uint16_t)v); }
static unsigned enc_f16(float f) { return mate_f32_to_f16(f); }
static double dec_bf16(unsigned v) { return mate_bf16_to_f32((uint16_t)v); }
static unsigned enc_bf16(float f) { return mate_f32_to_bf16(f); }
static double dec_e4m3(unsigned v) { return mate_f8e4m3fn_to_f32((uint8_t)v); }
static unsigned enc_e4m3(float f) { return mate_f32_to_f8e4m3fn(f); }
static double dec_e5m2(unsigned v) { return mate_f8e5m2_to_f32((uint8_t)v); }
static unsigned enc_e5m2(float f) { return mate_f32_to_f8e5m2(f); }

static const struct fmt fmt_f16 = { .name = "f16", .dec = dec_f16, .enc = enc_f16,
	.ebits = 5, .mbits = 10, .ieee_special = 1, .nan_sign = 1,
	.maxfinite = 0x7bff, .signbit = 0x8000, .next_above = 65536.0, .overflow = 0x7c00 };
static const struct fmt fmt_bf16 = { .name = "bf16", .dec = dec_bf16, .enc = enc_bf16,
	.ebits = 8, .mbits = 7, .ieee_special = 1, .nan_sign = 1,
	.maxfinite = 0x7f7f, .signbit = 0x8000, .next_above = 0x1p128, .overflow = 0x7f80 };
/* e4m3fn: the step past 448 would be 480, which is NaN's slot; saturate */
static const struct fmt fmt_e4m3 = { .name = "e4m3fn", .dec = dec_e4m3, .enc = enc_e4m3,
	.ebits = 4, .mbits = 3, .all_ones_nan = 1,
	.maxfinite = 0x7e, .signbit = 0x80, .next_above = 480.0, .overflow = 0x7e };
static const struct fmt fmt_e5m2 = { .name = "e5m2", .dec = dec_e5m2, .enc = enc_e5m2,
	.ebits = 5, .mbits = 2, .ieee_special = 1,
	.maxfinite = 0x7b, .signbit = 0x80, .next_above = 65536.0, .overflow = 0x7c };

/* Every code of F decodes to what ref_decode() says and encodes back to
 * itself; a NaN to a NaN (of its sign where F says so). */
static void
check_all_codes(const struct fmt *F)
{
	int bad_dec = 0, bad_rt = 0, digits = F->signbit > 0xff ? 4 : 2;

	for (unsigned v = 0; v < F->signbit << 1; v++) {
		float f = (float)F->dec(v);
		double want = ref_decode(v, F->ebits, F->mbits, F->ieee_special, F->all_ones_nan);
		unsigned back = F->enc(f);

		if (!same_value(f, want) && bad_dec++ < 5)
			fprintf(stderr, "%s 0x%0*x decodes to %g, want %g\n", F->name, digits, v, f, want);
		if (isnan(want)) {
			if ((!isnan(ref_decode(back, F->ebits, F->mbits, F->ieee_special, F->all_ones_nan)) ||
			    (F->nan_sign && (back & F->signbit) != (v & F->signbit))) && bad_rt++ < 5)
				fprintf(stderr, "%s NaN 0x%0*x came back as 0x%0*x\n", F->name, digits, v,
				    digits, back);
		} else if (back != v && bad_rt++ < 5) {
			fprintf(stderr, "%s 0x%0*x came back as 0x%0*x\n", F->name, digits, v, digits, back);
		}
	}
	CHECK_EQ_INT(bad_dec, 0);
	CHECK_EQ_INT(bad_rt, 0);
}

DEFINE_TEST(f16_all)
{
	check_all_codes(&fmt_f16);
}

DEFINE_TEST(bf16_all)
{
	int bad = 0;

	check_all_codes(&fmt_bf16);
	/* bfloat16 is float32's top half: widening keeps every bit */
	for (uint32_t b = 0; b < 65536; b++) {
		float f = mate_bf16_to_f32((uint16_t)b);

		if (test_f32_bits(f) != b << 16 && !isnan(ref_decode(b, 8, 7, 1, 0)) && bad++ < 5)
			fprintf(stderr, "bf16 0x%04x widened to bits 0x%08x\n", b, test_f32_bits(f));
	}
	CHECK_EQ_INT(bad, 0);
}

static int
is_e4m3_nan(unsigned v)
{
	return (v & 0x7f) == 0x7f;
}

static int
is_e5m2_nan(unsigned v)
{
	return (v & 0x7c) == 0x7c && (v & 3) != 0;
}

DEFINE_TEST(f8_all)
{
	check_all_codes(&fmt_e4m3);
	check_all_codes(&fmt_e5m2);
	/* landmarks */
	CHECK(mate_f8e4m3fn_to_f32(0x7e) == 448.0f);
	CHECK(mate_f8e4m3fn_to_f32(0xfe) == -448.0f);
	CHECK(mate_f8e4m3fn_to_f32(0x38) == 1.0f);
	CHECK(mate_f8e4m3fn_to_f32(0x08) == ldexpf(1, -6));
	CHECK(mate_f8e4m3fn_to_f32(0x01) == ldexpf(1, -9));
	CHECK(isnan(mate_f8e4m3fn_to_f32(0x7f)) && isnan(mate_f8e4m3fn_to_f32(0xff)));
	CHECK(!isinf(mate_f8e4m3fn_to_f32(0x78)) && mate_f8e4m3fn_to_f32(0x78) == 256.0f);
	CHECK(mate_f8e5m2_to_f32(0x7b) == 57344.0f);
	CHECK(mate_f8e5m2_to_f32(0x3c) == 1.0f);
	CHECK(mate_f8e5m2_to_f32(0x01) == ldexpf(1, -16));
	CHECK(isinf(mate_f8e5m2_to_f32(0x7c)) && mate_f8e5m2_to_f32(0x7c) > 0);
	CHECK(isinf(mate_f8e5m2_to_f32(0xfc)) && mate_f8e5m2_to_f32(0xfc) < 0);
	CHECK(isnan(mate_f8e5m2_to_f32(0x7d)) && isnan(mate_f8e5m2_to_f32(0xff)));
}

/* ---- rounding at every boundary -------------------------------------------- *
 * For each pair of neighbouring finite codes a < b (positive), the exact
 * midpoint must round to the even one, and one float below/above it to a/b.
 * Every midpoint of these formats is exactly representable in float. */

static int
check_round(const struct fmt *F, float x, unsigned want)
{
	unsigned got = F->enc(x), gotn = F->enc(-x);

	if (got == want && gotn == (want | F->signbit))
		return 0;
	fprintf(stderr, "%s: %.9g (bits 0x%08x) -> 0x%x / -x -> 0x%x, want 0x%x\n",
	    F->name, x, test_f32_bits(x), got, gotn, want);
	return 1;
}

static void
test_rounding(const struct fmt *F)
{
	int bad = 0;

	for (unsigned a = 0; a <= F->maxfinite && bad < 10; a++) {
		double va = F->dec(a), vb = a < F->maxfinite ? F->dec(a + 1) : F->next_above;
		unsigned b = a < F->maxfinite ? a + 1 : F->overflow;
		unsigned even = (a & 1) == 0 ? a : b;
		double mid = (va + vb) / 2;
		float m = (float)mid;

		if ((double)m != mid) {
			fprintf(stderr, "%s: midpoint %.17g not a float\n", F->name, mid);
			bad++;
			continue;
		}
		bad += check_round(F, (float)va, a);
		bad += check_round(F, m, even);
		bad += check_round(F, nextafterf(m, 0), a);
		bad += check_round(F, nextafterf(m, INFINITY), b);
	}
	CHECK_EQ_INT(bad, 0);
}

DEFINE_TEST(all_rounding)
{
	test_rounding(&fmt_f16);
	test_rounding(&fmt_bf16);
	test_rounding(&fmt_e4m3);
	test_rounding(&fmt_e5m2);
}

/* ---- specific cases -------------------------------------------------------- */

DEFINE_TEST(specials)
{
	const float huge[] = { INFINITY, FLT_MAX, 1e30f, 65536.0f, 1000.0f, 512.0f, 480.0f, 464.0f,
		449.0f };

	/* e4m3fn: no infinity, everything large saturates to +-448 */
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		CHECK_EQ_INT(mate_f32_to_f8e4m3fn(huge[i]), 0x7e);
		CHECK_EQ_INT(mate_f32_to_f8e4m3fn(-huge[i]), 0xfe);
	}
	CHECK(is_e4m3_nan(mate_f32_to_f8e4m3fn(NAN)));
	CHECK(is_e4m3_nan(mate_f32_to_f8e4m3fn(-NAN)));
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(432.0f), 0x7e);   /* 416|448 tie -> 448 (even) */
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(431.99f), 0x7d);
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(1.0625f), 0x38);  /* 1|1.125 tie -> 1 */
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(1.1875f), 0x3a);  /* 1.125|1.25 tie -> 1.25 */
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(ldexpf(1, -10)), 0x00);  /* half the min subnormal */
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(ldexpf(3, -10)), 0x02);  /* 1.5 units -> 2 */
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(ldexpf(15, -10)), 0x08); /* 7.5 units -> min normal */
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(1e-45f), 0x00);

	/* e5m2: overflow to inf by round-to-nearest-even */
	CHECK_EQ_INT(mate_f32_to_f8e5m2(INFINITY), 0x7c);
	CHECK_EQ_INT(mate_f32_to_f8e5m2(-INFINITY), 0xfc);
	CHECK_EQ_INT(mate_f32_to_f8e5m2(FLT_MAX), 0x7c);
	CHECK_EQ_INT(mate_f32_to_f8e5m2(61440.0f), 0x7c);
	CHECK_EQ_INT(mate_f32_to_f8e5m2(nextafterf(61440.0f, 0)), 0x7b);
	CHECK_EQ_INT(mate_f32_to_f8e5m2(57344.0f), 0x7b);
	CHECK(is_e5m2_nan(mate_f32_to_f8e5m2(NAN)));
	CHECK_EQ_INT(mate_f32_to_f8e5m2(ldexpf(1, -17)), 0x00);
	CHECK_EQ_INT(mate_f32_to_f8e5m2(ldexpf(3, -17)), 0x02);

	/* f16 / bf16 */
	CHECK_EQ_INT(mate_f32_to_f16(65504.0f), 0x7bff);
	CHECK_EQ_INT(mate_f32_to_f16(65519.996f), 0x7bff);
	CHECK_EQ_INT(mate_f32_to_f16(65520.0f), 0x7c00);
	CHECK_EQ_INT(mate_f32_to_f16(INFINITY), 0x7c00);
	CHECK_EQ_INT(mate_f32_to_f16(-INFINITY), 0xfc00);
	CHECK_EQ_INT(mate_f32_to_f16(FLT_MAX), 0x7c00);
	CHECK_EQ_INT(mate_f32_to_f16(ldexpf(1, -24)), 0x0001);
	CHECK_EQ_INT(mate_f32_to_f16(ldexpf(1, -25)), 0x0000);      /* tie -> 0 */
	CHECK_EQ_INT(mate_f32_to_f16(ldexpf(3, -26)), 0x0001);
	CHECK_EQ_INT(mate_f32_to_f16(ldexpf(3, -25)), 0x0002);      /* 1.5 units -> 2 */
	CHECK_EQ_INT(mate_f32_to_f16(ldexpf(1, -14)), 0x0400);
	CHECK_EQ_INT(mate_f32_to_f16(1e-45f), 0x0000);
	CHECK_EQ_INT(mate_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00); /* tie -> even */
	CHECK_EQ_INT(mate_f32_to_f16(1.0f + ldexpf(3, -11)), 0x3c02);
	CHECK(isnan(mate_f16_to_f32(mate_f32_to_f16(NAN))));
	CHECK_EQ_INT(mate_f32_to_bf16(1.0f), 0x3f80);
	CHECK_EQ_INT(mate_f32_to_bf16(test_bits_f32(0x3f808000)), 0x3f80); /* tie -> even */
	CHECK_EQ_INT(mate_f32_to_bf16(test_bits_f32(0x3f818000)), 0x3f82); /* tie -> even (up) */
	CHECK_EQ_INT(mate_f32_to_bf16(test_bits_f32(0x3f808001)), 0x3f81);
	CHECK_EQ_INT(mate_f32_to_bf16(FLT_MAX), 0x7f80);
	CHECK_EQ_INT(mate_f32_to_bf16(test_bits_f32(0x00008000)), 0x0000);
	CHECK_EQ_INT(mate_f32_to_bf16(test_bits_f32(0x00018000)), 0x0002);
	CHECK_EQ_INT(mate_f32_to_bf16(test_bits_f32(0x7fc00001)) & 0x7fc0, 0x7fc0);
	CHECK_EQ_INT(mate_f32_to_bf16(test_bits_f32(0x7f800001)) & 0x7f80, 0x7f80); /* sNaN stays NaN */
	CHECK(mate_f32_to_bf16(test_bits_f32(0x7f800001)) != 0x7f80);

	/* negative zero everywhere */
	CHECK_EQ_INT(mate_f32_to_f16(-0.0f), 0x8000);
	CHECK_EQ_INT(mate_f32_to_bf16(-0.0f), 0x8000);
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(-0.0f), 0x80);
	CHECK_EQ_INT(mate_f32_to_f8e5m2(-0.0f), 0x80);
	CHECK_EQ_INT(mate_f32_to_f16(-1e-45f), 0x8000);  /* underflow keeps the sign */
	CHECK_EQ_INT(mate_f32_to_f8e4m3fn(-1e-30f), 0x80);
	CHECK(signbit(mate_f16_to_f32(0x8000)) && mate_f16_to_f32(0x8000) == 0);
	CHECK(signbit(mate_bf16_to_f32(0x8000)));
	CHECK(signbit(mate_f8e4m3fn_to_f32(0x80)) && mate_f8e4m3fn_to_f32(0x80) == 0);
	CHECK(signbit(mate_f8e5m2_to_f32(0x80)) && mate_f8e5m2_to_f32(0x80) == 0);
}

/* ---- mate_load_f64 ---------------------------------------------------------- */

/* float4_e2m1fn: each of the 16 codes (OCP MX's E2M1 table); a float4_e2m1fn_x2 element
 * is its byte to mate_load_f64(). */
DEFINE_TEST(f4_e2m1)
{
	static const float want[16] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6,
		-0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6 };
	uint8_t byte = 0xa7;

	for (int v = 0; v < 16; v++) {
		CHECK(mate_f4e2m1_to_f32((uint8_t)v) == want[v]);
		CHECK(mate_f4e2m1_to_f32((uint8_t)(v | 0xf0)) == want[v]);   /* high bits ignored */
	}
	CHECK(signbit(mate_f4e2m1_to_f32(8)));
	CHECK(mate_f4e2m1_to_f32(byte & 15) == 6 && mate_f4e2m1_to_f32(byte >> 4) == -1);
	CHECK(mate_load_f64(MATE_F4_E2M1FN_X2, &byte) == 0xa7);
}

DEFINE_TEST(load_f64)
{
	uint8_t b;
	int16_t i16 = -12345;
	uint16_t u16 = 65535, h = 0x3e00;
	int32_t i32 = INT32_MIN;
	uint32_t u32 = UINT32_MAX;
	int64_t i64 = -(INT64_C(1) << 53);
	uint64_t u64 = UINT64_C(1) << 63;
	float c64[2] = { 2.5f, -7.0f };
	double c128[2] = { -0.125, 3 };
	uint16_t c32[2] = { 0xc000, 0x3c00 };
	int bad = 0;

	b = 7; CHECK(mate_load_f64(MATE_BOOL, &b) == 1.0);
	b = 0; CHECK(mate_load_f64(MATE_BOOL, &b) == 0.0);
	b = 200; CHECK(mate_load_f64(MATE_U8, &b) == 200.0);
	CHECK(mate_load_f64(MATE_I8, &b) == -56.0);
	CHECK(mate_load_f64(MATE_I16, &i16) == -12345.0);
	CHECK(mate_load_f64(MATE_U16, &u16) == 65535.0);
	CHECK(mate_load_f64(MATE_I32, &i32) == (double)INT32_MIN);
	CHECK(mate_load_f64(MATE_U32, &u32) == 4294967295.0);
	CHECK(mate_load_f64(MATE_I64, &i64) == -9007199254740992.0);
	CHECK(mate_load_f64(MATE_U64, &u64) == 9223372036854775808.0);
	CHECK(mate_load_f64(MATE_F16, &h) == 1.5);
	h = 0x3fc0;
	CHECK(mate_load_f64(MATE_BF16, &h) == 1.5);
	CHECK(mate_load_f64(MATE_F32, &c64[0]) == 2.5);
	CHECK(mate_load_f64(MATE_F64, &c128[0]) == -0.125);
	CHECK(mate_load_f64(MATE_C32, c32) == -2.0);
	CHECK(mate_load_f64(MATE_C64, c64) == 2.5);
	CHECK(mate_load_f64(MATE_C128, c128) == -0.125);
	CHECK(isnan(mate_load_f64(MATE_DTYPE_INVALID, &b)));

	for (unsigned v = 0; v < 256; v++) {
		uint8_t x = (uint8_t)v;
		double uz4 = v == 0x80 ? NAN : ref_decode(v, 4, 3, 0, 0) * 0.5;
		double uz5 = v == 0x80 ? NAN : ref_decode(v, 5, 2, 0, 0) * 0.5;
		double e8 = v == 0xff ? NAN : ldexp(1, (int)v - 127);

		/* fnuz: bias one more than IEEE's, no inf, no -0, NaN only at 0x80 */
		bad += !same_value(mate_load_f64(MATE_F8_E4M3FNUZ, &x), uz4);
		bad += !same_value(mate_load_f64(MATE_F8_E5M2FNUZ, &x), uz5);
		bad += !same_value(mate_load_f64(MATE_F8_E8M0FNU, &x), e8);
		bad += !same_value(mate_load_f64(MATE_F8_E4M3FN, &x), ref_decode(v, 4, 3, 0, 1));
		bad += !same_value(mate_load_f64(MATE_F8_E5M2, &x), ref_decode(v, 5, 2, 1, 0));
	}
	CHECK_EQ_INT(bad, 0);
	b = 0x7f; CHECK(mate_load_f64(MATE_F8_E4M3FNUZ, &b) == 240.0);
	b = 0x7f; CHECK(mate_load_f64(MATE_F8_E5M2FNUZ, &b) == 57344.0);
	b = 0x40; CHECK(mate_load_f64(MATE_F8_E4M3FNUZ, &b) == 1.0);
	b = 0x40; CHECK(mate_load_f64(MATE_F8_E5M2FNUZ, &b) == 1.0);
	b = 0x01; CHECK(mate_load_f64(MATE_F8_E4M3FNUZ, &b) == ldexp(1, -10));
	b = 127; CHECK(mate_load_f64(MATE_F8_E8M0FNU, &b) == 1.0);
}

TEST_MAIN()
