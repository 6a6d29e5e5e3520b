/* dtype.c: the dtype table (torch, safetensors and storage-class names) and exact float conversions. */
#include "mate_private.h"

#include <math.h>
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

mate_dtype
mate_dtype_from_name(const char *name)
{
	if (name == NULL)
		return MATE_DTYPE_INVALID;
	if (strncmp(name, "torch.", 6) == 0)
		name += 6;
	for (int i = 1; i < MATE_DTYPE_COUNT; i++) {
		if (strcmp(name, dtypes[i].name) == 0 ||
		    (dtypes[i].alias != NULL && strcmp(name, dtypes[i].alias) == 0))
			return (mate_dtype)i;
	}
	return MATE_DTYPE_INVALID;
}

const char *
mate_dtype_safetensors_name(mate_dtype dt)
{
	return valid(dt) ? dtypes[dt].st_name : NULL;
}

mate_dtype
mate_dtype_from_safetensors(const char *name)
{
	if (name == NULL)
		return MATE_DTYPE_INVALID;
	for (int i = 1; i < MATE_DTYPE_COUNT; i++)
		if (dtypes[i].st_name != NULL && strcmp(name, dtypes[i].st_name) == 0)
			return (mate_dtype)i;
	return MATE_DTYPE_INVALID;
}

const char *
mate_dtype_storage_class(mate_dtype dt)
{
	return valid(dt) ? dtypes[dt].storage : NULL;
}

mate_dtype
mate_dtype_from_storage_class(const char *cls)
{
	if (cls == NULL)
		return MATE_DTYPE_INVALID;
	for (int i = 1; i < MATE_DTYPE_COUNT; i++)
		if (dtypes[i].storage != NULL && strcmp(cls, dtypes[i].storage) == 0)
			return (mate_dtype)i;
	return MATE_DTYPE_INVALID;
}

/* ---- conversions -------------------------------------------------------- */

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

float
mate_f8e4m3fn_to_f32(uint8_t v)
{
	unsigned e = (v >> 3) & 0xf, m = v & 7;
	float r;

	if ((v & 0x7f) == 0x7f)
		return NAN;
	r = e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + (float)m / 8, (int)e - 7);
	return (v & 0x80) ? -r : r;
}

uint8_t
mate_f32_to_f8e4m3fn(float f)
{
	unsigned sign = (f2u(f) >> 24) & 0x80;

	if (isnan(f))
		return 0x7f | sign;
	/* no infinity: everything beyond 448 saturates to 448 (0x7e) */
	return (uint8_t)(sign | encode_small(fabs((double)f), 3, 7, 15, 0x7e, 0x7e));
}

float
mate_f8e5m2_to_f32(uint8_t v)
{
	unsigned e = (v >> 2) & 0x1f, m = v & 3;
	float r;

	if (e == 31)
		r = m == 0 ? INFINITY : NAN;
	else
		r = e == 0 ? ldexpf((float)m, -16) : ldexpf(1.0f + (float)m / 4, (int)e - 15);
	return (v & 0x80) ? -r : r;
}

uint8_t
mate_f32_to_f8e5m2(float f)
{
	unsigned sign = (f2u(f) >> 24) & 0x80;

	if (isnan(f))
		return 0x7e | sign;
	if (isinf(f))
		return 0x7c | sign;
	return (uint8_t)(sign | encode_small(fabs((double)f), 2, 15, 30, 0x7c, 0x7b));
}

static double
fnuz_to_f64(uint8_t v, int mbits, int bias)
{
	int ebits = 7 - mbits;
	unsigned e = (v >> mbits) & ((1u << ebits) - 1), m = v & ((1u << mbits) - 1);
	double r;

	if (v == 0x80)
		return NAN;
	r = e == 0 ? ldexp((double)m, 1 - bias - mbits)
	           : ldexp(1.0 + ldexp((double)m, -mbits), (int)e - bias);
	return (v & 0x80) ? -r : r;
}

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
	case MATE_F8_E4M3FNUZ: return fnuz_to_f64(*(const uint8_t *)p, 3, 8);
	case MATE_F8_E5M2FNUZ: return fnuz_to_f64(*(const uint8_t *)p, 2, 16);
	case MATE_F8_E8M0FNU: {
		uint8_t v = *(const uint8_t *)p;
		return v == 0xff ? NAN : ldexp(1.0, (int)v - 127);
	}
	default: return NAN;
	}
}
