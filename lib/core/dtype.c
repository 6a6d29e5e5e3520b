/* dtype.c: the dtype table (torch, safetensors and storage-class names) and exact float conversions. */
#include "mate_private.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

struct dtype_info {
	const char *name;        /* torch name */
	const char *alias;       /* second torch spelling, or NULL */
	unsigned size;
	int kind;
	const char *st_name;     /* safetensors */
	const char *storage;     /* legacy storage class */
};

static const struct dtype_info dtypes[MATE_DTYPE_COUNT] = {
	[MATE_DTYPE_INVALID] = { "invalid", NULL, 0, 0, NULL, NULL },
	[MATE_BOOL] = { "bool", NULL, 1, MATE_KIND_BOOL, "BOOL", "BoolStorage" },
	[MATE_U8] = { "uint8", NULL, 1, MATE_KIND_UINT, "U8", "ByteStorage" },
	[MATE_I8] = { "int8", NULL, 1, MATE_KIND_INT, "I8", "CharStorage" },
	[MATE_I16] = { "int16", "short", 2, MATE_KIND_INT, "I16", "ShortStorage" },
	[MATE_U16] = { "uint16", NULL, 2, MATE_KIND_UINT, "U16", NULL },
	[MATE_I32] = { "int32", "int", 4, MATE_KIND_INT, "I32", "IntStorage" },
	[MATE_U32] = { "uint32", NULL, 4, MATE_KIND_UINT, "U32", NULL },
	[MATE_I64] = { "int64", "long", 8, MATE_KIND_INT, "I64", "LongStorage" },
	[MATE_U64] = { "uint64", NULL, 8, MATE_KIND_UINT, "U64", NULL },
	[MATE_F16] = { "float16", "half", 2, MATE_KIND_FLOAT, "F16", "HalfStorage" },
	[MATE_BF16] = { "bfloat16", NULL, 2, MATE_KIND_FLOAT, "BF16", "BFloat16Storage" },
	[MATE_F32] = { "float32", "float", 4, MATE_KIND_FLOAT, "F32", "FloatStorage" },
	[MATE_F64] = { "float64", "double", 8, MATE_KIND_FLOAT, "F64", "DoubleStorage" },
	[MATE_F8_E4M3FN] = { "float8_e4m3fn", NULL, 1, MATE_KIND_FLOAT, "F8_E4M3", NULL },
	[MATE_F8_E5M2] = { "float8_e5m2", NULL, 1, MATE_KIND_FLOAT, "F8_E5M2", NULL },
	[MATE_F8_E4M3FNUZ] = { "float8_e4m3fnuz", NULL, 1, MATE_KIND_FLOAT, "F8_E4M3FNUZ", NULL },
	[MATE_F8_E5M2FNUZ] = { "float8_e5m2fnuz", NULL, 1, MATE_KIND_FLOAT, "F8_E5M2FNUZ", NULL },
	[MATE_F8_E8M0FNU] = { "float8_e8m0fnu", NULL, 1, MATE_KIND_FLOAT, "F8_E8M0", NULL },
	[MATE_C32] = { "complex32", "chalf", 4, MATE_KIND_COMPLEX, NULL, NULL },
	[MATE_C64] = { "complex64", "cfloat", 8, MATE_KIND_COMPLEX, "C64", "ComplexFloatStorage" },
	[MATE_C128] = { "complex128", "cdouble", 16, MATE_KIND_COMPLEX, NULL, "ComplexDoubleStorage" },
	/* a byte of two values: its kind is a byte's, exact (safetensors.c maps "F4") */
	[MATE_F4_E2M1FN_X2] = { "float4_e2m1fn_x2", NULL, 1, MATE_KIND_UINT, "F4", NULL },
};

static int
valid(mate_dtype dt)
{
	return dt > MATE_DTYPE_INVALID && dt < MATE_DTYPE_COUNT;
}

size_t
mate_dtype_size(mate_dtype dt)
{
	return valid(dt) ? dtypes[dt].size : 0;
}

int
mate_dtype_kind(mate_dtype dt)
{
	return valid(dt) ? dtypes[dt].kind : -1;
}

const char *
mate_dtype_name(mate_dtype dt)
{
	return valid(dt) ? dtypes[dt].name : "invalid";
}

/* The dtype whose name at offset off of its entry (one of the names of
 * struct dtype_info) is s. */
static mate_dtype
lookup(size_t off, const char *s)
{
	if (s == NULL)
		return MATE_DTYPE_INVALID;
	for (int i = 1; i < MATE_DTYPE_COUNT; i++) {
		const char *name = *(const char *const *)((const char *)&dtypes[i] + off);
		if (name != NULL && strcmp(s, name) == 0)
			return (mate_dtype)i;
	}
	return MATE_DTYPE_INVALID;
}

mate_dtype
mate_dtype_from_name(const char *name)
{
	mate_dtype dt;

	if (name != NULL && strncmp(name, "torch.", 6) == 0)
		name += 6;
	/* no alias is another dtype's name: name first, then alias, is either */
	dt = lookup(offsetof(struct dtype_info, name), name);
	return dt != MATE_DTYPE_INVALID ? dt : lookup(offsetof(struct dtype_info, alias), name);
}

const char *
mate_dtype_safetensors_name(mate_dtype dt)
{
	return valid(dt) ? dtypes[dt].st_name : NULL;
}

mate_dtype
mate_dtype_from_safetensors(const char *name)
{
	return lookup(offsetof(struct dtype_info, st_name), name);
}

const char *
mate_dtype_storage_class(mate_dtype dt)
{
	return valid(dt) ? dtypes[dt].storage : NULL;
}

mate_dtype
mate_dtype_from_storage_class(const char *cls)
{
	return lookup(offsetof(struct dtype_info, storage), cls);
}

/* ---- conversions -------------------------------------------------------- */

float
mate_f4e2m1_to_f32(uint8_t v)
{
	static const float mag[8] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6 };

	return (v & 8) ? -mag[v & 7] : mag[v & 7];
}

static uint32_t
f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float
u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

float
mate_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;

	if (exp == 0) {
		float v = ldexpf((float)man, -24);
		return sign ? -v : v;
	}
	if (exp == 31)
		return u2f(sign | 0x7f800000u | (man << 13));
	return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

/* Round-to-nearest-even narrowing (F. Giesen's float_to_half_fast3_rtne). */
uint16_t
mate_f32_to_f16(float f)
{
	const uint32_t f32infty = 255u << 23, f16max = (127u + 16) << 23;
	const uint32_t denorm_magic = ((127u - 15) + (23 - 10) + 1) << 23;
	uint32_t u = f2u(f), sign = u & 0x80000000u;
	uint16_t o;

	u ^= sign;
	if (u >= f16max) {
		o = (u > f32infty) ? 0x7e00 : 0x7c00;
	} else if (u < (113u << 23)) {
		volatile float t = u2f(u) + u2f(denorm_magic);
		o = (uint16_t)(f2u(t) - denorm_magic);
	} else {
		uint32_t mant_odd = (u >> 13) & 1;
		u += ((uint32_t)(15 - 127) << 23) + 0xfff;
		u += mant_odd;
		o = (uint16_t)(u >> 13);
	}
	return (uint16_t)(o | (sign >> 16));
}

float
mate_bf16_to_f32(uint16_t b)
{
	return u2f((uint32_t)b << 16);
}

uint16_t
mate_f32_to_bf16(float f)
{
	uint32_t u = f2u(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* Generic round-to-nearest-even encoder for small float formats. The
 * arithmetic is exact: a float is exact in double and ldexp/rint do not round
 * except where intended. Returns the magnitude bits; overflow gives
 * ovf_bits. */
static unsigned
encode_small(double a, int mbits, int bias, unsigned max_field_exp,
    unsigned ovf_bits, unsigned max_bits)
{
	int e;
	double q;

	if (a == 0)
		return 0;
	if (isinf(a))
		return ovf_bits;
	(void)frexp(a, &e);
	e -= 1; /* a = 1.x * 2^e */
	if (e < 1 - bias) {
		/* subnormal: units of 2^(1-bias-mbits); may round up to min normal */
		q = rint(ldexp(a, mbits - (1 - bias)));
		return (unsigned)q;
	}
	q = rint(ldexp(a, mbits - e));
	if (q >= ldexp(1.0, mbits + 1)) {
		q /= 2;
		e++;
	}
	if ((unsigned)(e + bias) > max_field_exp)
		return ovf_bits;
	unsigned bits = ((unsigned)(e + bias) << mbits) | ((unsigned)q - (1u << mbits));
	return bits > max_bits ? ovf_bits : bits;
}

/* The special values of an 8-bit float format: "fn" has no infinity, and
 * NaN has every bit but the sign set; "ieee" has IEEE 754's infinities
 * and NaNs; "fnuz" has one NaN, where negative zero would be. */
enum f8_kind { F8_FN, F8_IEEE, F8_FNUZ };

/* The 8-bit float v of mbits mantissa bits (the rest, less the sign, its
 * exponent) with bias. */
static double
f8_to_f64(uint8_t v, int mbits, int bias, enum f8_kind kind)
{
	unsigned emax = (1u << (7 - mbits)) - 1;
	unsigned e = (v >> mbits) & emax, m = v & ((1u << mbits) - 1);
	double r;

	if ((kind == F8_FN && (v & 0x7f) == 0x7f) || (kind == F8_FNUZ && v == 0x80))
		return NAN;
	if (kind == F8_IEEE && e == emax)
		r = m == 0 ? INFINITY : NAN;
	else
		r = e == 0 ? ldexp((double)m, 1 - bias - mbits)
		           : ldexp(1.0 + ldexp((double)m, -mbits), (int)e - bias);
	return (v & 0x80) ? -r : r;
}

/* The sign of f, then encode_small's magnitude bits; nan_bits for a NaN. */
static uint8_t
f32_to_f8(float f, unsigned nan_bits, int mbits, int bias, unsigned max_field_exp,
    unsigned ovf_bits, unsigned max_bits)
{
	unsigned sign = (f2u(f) >> 24) & 0x80;

	if (isnan(f))
		return (uint8_t)(nan_bits | sign);
	return (uint8_t)(sign | encode_small(fabs((double)f), mbits, bias, max_field_exp,
	    ovf_bits, max_bits));
}

/* e4m3fn has no infinity: everything beyond 448 saturates to 448 (0x7e);
 * e5m2's infinities stay infinities (0x7c). */
float mate_f8e4m3fn_to_f32(uint8_t v) { return (float)f8_to_f64(v, 3, 7, F8_FN); }
uint8_t mate_f32_to_f8e4m3fn(float f) { return f32_to_f8(f, 0x7f, 3, 7, 15, 0x7e, 0x7e); }
float mate_f8e5m2_to_f32(uint8_t v) { return (float)f8_to_f64(v, 2, 15, F8_IEEE); }
uint8_t mate_f32_to_f8e5m2(float f) { return f32_to_f8(f, 0x7e, 2, 15, 30, 0x7c, 0x7b); }

double
mate_load_f64(mate_dtype dt, const void *p)
{
	switch (dt) {
	case MATE_BOOL: return *(const uint8_t *)p != 0;
	case MATE_U8: return *(const uint8_t *)p;
	case MATE_I8: return *(const int8_t *)p;
	case MATE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
	case MATE_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
	case MATE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case MATE_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
	case MATE_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
	case MATE_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
	case MATE_F16: case MATE_C32: { uint16_t v; memcpy(&v, p, 2); return mate_f16_to_f32(v); }
	case MATE_BF16: { uint16_t v; memcpy(&v, p, 2); return mate_bf16_to_f32(v); }
	case MATE_F32: case MATE_C64: { float v; memcpy(&v, p, 4); return v; }
	case MATE_F64: case MATE_C128: { double v; memcpy(&v, p, 8); return v; }
	case MATE_F8_E4M3FN: return mate_f8e4m3fn_to_f32(*(const uint8_t *)p);
	case MATE_F8_E5M2: return mate_f8e5m2_to_f32(*(const uint8_t *)p);
	case MATE_F8_E4M3FNUZ: return f8_to_f64(*(const uint8_t *)p, 3, 8, F8_FNUZ);
	case MATE_F8_E5M2FNUZ: return f8_to_f64(*(const uint8_t *)p, 2, 16, F8_FNUZ);
	case MATE_F8_E8M0FNU: {
		uint8_t v = *(const uint8_t *)p;
		return v == 0xff ? NAN : ldexp(1.0, (int)v - 127);
	}
	case MATE_F4_E2M1FN_X2: return *(const uint8_t *)p;   /* the byte: two values */
	default: return NAN;
	}
}
