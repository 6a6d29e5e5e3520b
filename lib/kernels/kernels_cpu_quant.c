/* kernels_cpu_quant.c: CPU kernels of FlashInfer's block quantization (NVFP4, MXFP4, MXFP8: fp4_quantize, mxfp8_quantize), MXFP4 dequantization, the block-scaled GEMMs' operands, with its scale-factor layouts, and of its RMSNorm to float8 (rmsnorm_quant). */
#include "kernels_cpu.h"
#include "kernels_fi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How far from a rounding midpoint a value may lie for the recorded side of it to be
 * taken: FlashInfer's kernels scale through up to three rcp.approx.ftz reciprocals and
 * two rounded products, each within 2^-23 of exact, where this kernel divides exactly. */
#define TIE_REL 0x1p-20

int64_t
mate_sf_cols(int layout, int64_t cols)
{
	return layout == MATE_SF_LINEAR ? cols : (cols + 3) / 4 * 4;
}

int64_t
mate_sf_rows(int layout, int64_t rows)
{
	int64_t tile = layout == MATE_SF_128X4 ? 128 : layout == MATE_SF_8X4 ? 8 : 1;

	return (rows + tile - 1) / tile * tile;
}

int64_t
mate_sf_offset(int layout, int64_t row, int64_t col, int64_t cols)
{
	int64_t pc = mate_sf_cols(layout, cols);

	switch (layout) {
	case MATE_SF_128X4:   /* [row tiles, col tiles, 32, 4, 4]: a tile's 32 x 4 rows column-major */
		return (row / 128) * 128 * pc + (col / 4) * 512 + (row % 32) * 16 +
		    (row % 128) / 32 * 4 + col % 4;
	case MATE_SF_8X4:     /* [row tiles, col tiles, 8, 4] */
		return (row / 8) * 8 * pc + (col / 4) * 32 + (row % 8) * 4 + col % 4;
	default:
		return row * cols + col;
	}
}

/* A host tensor of one-byte elements (codes), any strides. */
static int
check_bytes(const mate_tensor *t, const char *what, mate_error *err)
{
	if (t == NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: missing tensor", what);
	if (t->device_type != MATE_DEVICE_CPU)
		return mate_set_error(err, MATE_ERR_ARGUMENT,
		    "%s: tensor is on a CUDA device; the CPU kernels need host memory", what);
	if (t->ndim < 1 || t->ndim > MATE_MAX_DIMS || mate_dtype_size(t->dtype) != 1)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: expected a tensor of bytes, got "
		    "%d dimensions of %s", what, t->ndim, mate_dtype_name(t->dtype));
	if (mate_tensor_storage_extent(t) < 0 || mate_tensor_numel(t) < 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: invalid shape or strides", what);
	if (t->data == NULL && mate_tensor_numel(t) > 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: no data", what);
	return MATE_OK;
}

/* A block of 16 or 32 values a scale and one of the three layouts. */
static int
check_block_layout(const char *what, int block, int layout, mate_error *err)
{
	if (block != 16 && block != 32)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s = %d: expected 16 or 32", what,
		    block);
	if (layout != MATE_SF_128X4 && layout != MATE_SF_8X4 && layout != MATE_SF_LINEAR)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "scale layout %d: expected 0 (128x4), "
		    "1 (8x4) or 2 (linear)", layout);
	return MATE_OK;
}

/* The scale tensor holds exactly the layout's bytes for rows x cols scales. */
static int
check_sf_size(const mate_tensor *sf, const char *what, int layout, int64_t rows, int64_t cols,
    mate_error *err)
{
	int64_t want;

	if (!mate_mul_ok(mate_sf_rows(layout, rows), mate_sf_cols(layout, cols), &want) ||
	    mate_tensor_numel(sf) != want)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "%s: %lld scale bytes, expected %lld "
		    "for %lld rows of %lld blocks", what, (long long)mate_tensor_numel(sf),
		    (long long)want, (long long)rows, (long long)cols);
	return MATE_OK;
}

/* ---- the formats --------------------------------------------------------------- */

static const float e2m1_mag[8] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6 };

/* cvt.rn.satfinite.e2m1: nearest, ties to the even code, |y| > 6 saturated, the sign
 * kept (a negative value that rounds to zero is code 8). */
static uint8_t
e2m1_code(float y)
{
	float a = fabsf(y);
	int c = 0;

	while (c < 7 && (a > (e2m1_mag[c] + e2m1_mag[c + 1]) / 2 ||
	    (a == (e2m1_mag[c] + e2m1_mag[c + 1]) / 2 && (c & 1))))
		c++;
	return (uint8_t)((signbit(y) ? 8 : 0) | c);
}

/* __nv_cvt_float_to_e8m0(v, satfinite, round toward +inf) of a finite v >= 0: the
 * exponent of the least power of two >= v (subnormals up to 2^-127 are code 0). */
static uint8_t
e8m0_ceil(float v)
{
	uint32_t b, e, m;

	memcpy(&b, &v, 4);
	e = (b >> 23) & 0xff;
	m = b & 0x7fffff;
	e += m != 0 && (e != 0 || m > 0x400000);
	return (uint8_t)(e > 254 ? 254 : e);
}

/* Within TIE_REL of the midpoint between magnitudes lo and hi. */
static int
near_mid(float v, float lo, float hi)
{
	double mid = ((double)lo + hi) / 2;

	return fabs(fabs((double)v) - mid) <= mid * TIE_REL;
}

/* The recorded scale code r where this kernel's code c differs from it only across a
 * rounding boundary that the value v lies on. */
static int
scale_tie(int ue8m0, float v, uint8_t c, uint8_t r)
{
	uint8_t lo = c < r ? c : r;

	if (c == r || (c > r ? c - r : r - c) != 1 || (r & 0x80))
		return 0;
	if (ue8m0) {   /* the boundary is the smaller code's power of two */
		double p = ldexp(1.0, (int)lo - 127);
		return fabs((double)v - p) <= p * TIE_REL;
	}
	return near_mid(v, mate_f8e4m3fn_to_f32(lo), mate_f8e4m3fn_to_f32((uint8_t)(lo + 1)));
}

/* The same for an element code of e2m1 (fp4) or e4m3 (fp8): same sign, neighbours. */
static int
elem_tie(int fp8, float y, uint8_t c, uint8_t r)
{
	int sign = fp8 ? 0x80 : 0x8, mag = sign - 1;
	int a = c & mag, b = r & mag, lo = a < b ? a : b;

	if (c == r || (c & sign) != (r & sign) || (a > b ? a - b : b - a) != 1)
		return 0;
	if (fp8)
		return near_mid(y, mate_f8e4m3fn_to_f32((uint8_t)lo),
		    mate_f8e4m3fn_to_f32((uint8_t)(lo + 1)));
	return near_mid(y, e2m1_mag[lo], e2m1_mag[lo + 1]);
}

/* ---- quantization --------------------------------------------------------------- */

/* The byte at logical (row-major) index i of t: direct where t is contiguous. */
static uint8_t *
byte_at(const mate_tensor *t, int64_t i)
{
	return mate_tensor_is_contiguous(t) ? (uint8_t *)kc_at(t, t->offset + i) :
	    (uint8_t *)mate_tensor_element(t, i);
}

/* The recorded byte at logical index i of t, or -1 without one. */
static int
rec_byte(const mate_tensor *t, int64_t i)
{
	return t != NULL ? *byte_at(t, i) : -1;
}

/* The scale of one block of max |x| vmax: its code and the factor the elements are
 * multiplied by, as FlashInfer's cvt_warp_fp16_to_fp4 and cvt_warp_fp16_to_mxfp8 make
 * them; rec (>= 0) is the recorded code, taken where the two are a tie apart. */
static uint8_t
block_scale(const mate_block_quant *p, float vmax, int rec, float *os)
{
	uint8_t code;
	float v;

	if (p->fp8_in) {   /* cvt_warp_fp8_to_fp4: the scales from the values times 6 / global */
		float narrow;

		v = p->global_scale * (vmax * (1.0f / 6.0f));
		code = p->ue8m0 ? e8m0_ceil(v) : mate_f32_to_f8e4m3fn(v);
		if (rec >= 0 && scale_tie(p->ue8m0, v, code, (uint8_t)rec))
			code = (uint8_t)rec;
		narrow = p->ue8m0 ? ldexpf(1.0f, (int)code - 127) : mate_f8e4m3fn_to_f32(code);
		/* global_scale / fp32(scale); a scale that rounds to zero zeroes its block, as
		 * the fp16 recipe's test reference has it */
		*os = v != 0 && narrow != 0 ? p->global_scale * (1.0f / narrow) : 0.0f;
		return code;
	}
	if (p->fp8 || p->ue8m0) {
		v = vmax * (p->fp8 ? 1.0f / 448.0f : 1.0f / 6.0f);
		code = e8m0_ceil(v);
		if (rec >= 0 && scale_tie(1, v, code, (uint8_t)rec))
			code = (uint8_t)rec;
		if (p->fp8)   /* FlashInfer's test reference: code 0 quantizes to zero */
			*os = code != 0 ? ldexpf(1.0f, 127 - code) : 0.0f;
		else
			*os = vmax != 0 ? (code != 0 ? ldexpf(1.0f, 127 - code) : 1.0f) : 0.0f;
		return code;
	}
	v = p->global_scale * (vmax * (1.0f / 6.0f));
	code = mate_f32_to_f8e4m3fn(v);
	if (rec >= 0 && scale_tie(0, v, code, (uint8_t)rec))
		code = (uint8_t)rec;
	v = mate_f8e4m3fn_to_f32(code);
	/* reciprocal(fp32(fp8(scale)) * reciprocal(global_scale)); a scale that rounds
	 * to zero quantizes its block to zero, as FlashInfer's test reference does */
	*os = vmax != 0 && v != 0 ? 1.0f / (v * (1.0f / p->global_scale)) : 0.0f;
	return code;
}

/* One row: nb blocks of x (row r) quantized into q's row and their scales into sf. */
static int
quant_row(const mate_tensor *x, const mate_block_quant *p, const mate_tensor *q,
    const mate_tensor *sf, int64_t r, int64_t nb, float *buf, mate_error *err)
{
	int64_t K = x->shape[x->ndim - 1], qs = q->stride[q->ndim - 1], sfc = nb;
	const char *xb = kc_at(x, kc_row_offset(x, x->ndim - 1, r));
	uint8_t *qb = (uint8_t *)kc_at(q, kc_row_offset(q, q->ndim - 1, r));
	int64_t rq = p->rec_q != NULL ? kc_row_offset(p->rec_q, q->ndim - 1, r) : 0;
	int bs = p->block;

	kc_load_f(x->dtype, xb, x->stride[x->ndim - 1], K, buf);
	if (p->fp8_in) {   /* float8 values times 6 / global_scale, rounded to half */
		float d = 6.0f * (1.0f / p->global_scale);

		for (int64_t j = 0; j < K; j++)
			buf[j] = mate_f16_to_f32(mate_f32_to_f16(buf[j] * d));
	}
	for (int64_t b = 0; b < K / bs; b++) {
		const float *v = buf + b * bs;
		int64_t si = mate_sf_offset(p->layout, r, b, sfc);
		float vmax = 0, os;
		uint8_t code;

		for (int i = 0; i < bs; i++) {
			if (!isfinite(v[i]))
				return mate_set_error(err, MATE_ERR_UNSUPPORTED, "input[%lld, %lld] %s %g: "
				    "the kernels' handling of NaN and infinities is not replayed",
				    (long long)r, (long long)(b * bs + i), p->fp8_in ? "times 6 / "
				    "global_scale in float16 is" : "is", v[i]);
			vmax = fmaxf(vmax, fabsf(v[i]));
		}
		code = block_scale(p, vmax, rec_byte(p->rec_sf, si), &os);
		*byte_at(sf, si) = code;
		for (int i = 0; i < bs; i++) {
			int64_t j = b * bs + i, at = p->fp8 ? j : j / 2;
			float y = v[i] * os;
			uint8_t c;
			int rec = -1;

			if (p->fp8) {
				y = fmaxf(fminf(y, 448.0f), -448.0f);
				c = mate_f32_to_f8e4m3fn(y);
			} else {
				c = e2m1_code(y);
			}
			if (p->rec_q != NULL) {
				rec = *(const uint8_t *)kc_at(p->rec_q, rq + at * p->rec_q->stride[q->ndim - 1]);
				if (!p->fp8)
					rec = (j & 1) ? rec >> 4 : rec & 0xf;
				if (elem_tie(p->fp8, y, c, (uint8_t)rec))
					c = (uint8_t)rec;
			}
			if (p->fp8)
				qb[at * qs] = c;
			else if (j & 1)
				qb[at * qs] = (uint8_t)((qb[at * qs] & 0x0f) | (c << 4));
			else
				qb[at * qs] = (uint8_t)((qb[at * qs] & 0xf0) | c);
		}
	}
	return MATE_OK;
}

int
mate_cpu_block_quantize(const mate_tensor *x, const mate_block_quant *p, const mate_tensor *q,
    const mate_tensor *sf, mate_error *err)
{
	mate_block_quant lp;
	int64_t K, rows, nb, qlen, sfn;
	float *buf;
	int rc = MATE_OK, nd;

	if ((rc = kc_check(x, "input", -1, 0, err)) != MATE_OK ||
	    (rc = check_bytes(q, "quantized output", err)) != MATE_OK ||
	    (rc = check_bytes(sf, "scale output", err)) != MATE_OK)
		return rc;
	if (x->dtype != MATE_F16 && x->dtype != MATE_BF16 && (p->fp8 || x->dtype != MATE_F8_E4M3FN))
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "input: dtype %s: the float16 and "
		    "bfloat16 recipes are replayed%s", mate_dtype_name(x->dtype), p->fp8 ? "" :
		    ", and float8_e4m3fn's");
	if ((rc = check_block_layout("sf_vec_size", p->block, p->layout, err)) != MATE_OK)
		return rc;
	if (!p->fp8 && (!p->ue8m0 || x->dtype == MATE_F8_E4M3FN) &&
	    !(isfinite(p->global_scale) && p->global_scale > 0))
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "global scale %g: the kernel's "
		    "scales are defined for a positive finite one", p->global_scale);
	nd = x->ndim;
	K = x->shape[nd - 1];
	rows = K > 0 ? mate_tensor_numel(x) / K : 0;
	if (K % p->block != 0 || K < p->block)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "input: %lld elements a row, expected a "
		    "positive multiple of the block of %d", (long long)K, p->block);
	if (p->kpad < K || p->kpad % p->block != 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "padded row of %lld elements for %lld",
		    (long long)p->kpad, (long long)K);
	qlen = p->fp8 ? p->kpad : p->kpad / 2;
	if (q->ndim != nd)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "quantized output: %d dimensions, "
		    "expected %d", q->ndim, nd);
	for (int d = 0; d < nd; d++)
		if ((rc = kc_check_dim(q, "quantized output", d, d < nd - 1 ? x->shape[d] : qlen,
		    err)) != MATE_OK)
			return rc;
	nb = p->kpad / p->block;
	if ((rc = check_sf_size(sf, "scale output", p->layout, rows, nb, err)) != MATE_OK)
		return rc;
	/* recorded outputs unlike ours (the comparison reports them) lend no ties */
	lp = *p;
	lp.fp8_in = !p->fp8 && x->dtype == MATE_F8_E4M3FN;
	if (lp.rec_q != NULL && (lp.rec_q->ndim != nd || memcmp(lp.rec_q->shape, q->shape,
	    sizeof(int64_t) * (size_t)nd) != 0 || check_bytes(lp.rec_q, "", NULL) != MATE_OK))
		lp.rec_q = NULL;
	if (lp.rec_sf != NULL && (mate_tensor_numel(lp.rec_sf) != mate_tensor_numel(sf) ||
	    check_bytes(lp.rec_sf, "", NULL) != MATE_OK))
		lp.rec_sf = NULL;
	/* padding (rows and columns past the input's) holds zeros */
	sfn = mate_tensor_numel(sf);
	for (int64_t i = 0; i < sfn; i++)
		*byte_at(sf, i) = 0;
	if ((buf = kc_alloc(K, sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	for (int64_t r = 0; r < rows && rc == MATE_OK; r++) {
		uint8_t *qb = (uint8_t *)kc_at(q, kc_row_offset(q, nd - 1, r));

		for (int64_t j = 0; j < qlen; j++)
			qb[j * q->stride[nd - 1]] = 0;
		rc = quant_row(x, &lp, q, sf, r, nb, buf, err);
	}
	free(buf);
	return rc;
}

/* ---- dequantization ------------------------------------------------------------- */

int
mate_cpu_block_dequantize(const mate_tensor *q, const mate_tensor *sf, int block, int layout,
    int ue8m0, float global_scale, const mate_tensor *out, mate_error *err)
{
	int64_t rows, K, nb;
	int rc;

	if ((rc = check_bytes(q, "a_fp4", err)) != MATE_OK ||
	    (rc = check_bytes(sf, "a_sf", err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK)
		return rc;
	if (q->ndim != 2)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "a_fp4: %d dimensions, expected 2 "
		    "(rows, packed columns)", q->ndim);
	if ((rc = check_block_layout("block", block, layout, err)) != MATE_OK)
		return rc;
	rows = q->shape[0];
	K = q->shape[1] * 2;
	if (K % block != 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "a_fp4: %lld values a row, expected a "
		    "multiple of the block of %d", (long long)K, block);
	nb = K / block;
	if ((rc = check_sf_size(sf, "a_sf", layout, rows, nb, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 0, rows, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 1, K, err)) != MATE_OK)
		return rc;
	for (int64_t r = 0; r < rows; r++) {
		const uint8_t *qb = (const uint8_t *)kc_at(q, kc_row_offset(q, 1, r));
		char *ob = kc_at(out, kc_row_offset(out, 1, r));

		for (int64_t b = 0; b < nb; b++) {
			uint8_t code = *byte_at(sf, mate_sf_offset(layout, r, b, nb));
			uint32_t bits = (uint32_t)code << 23;
			float s, v[32];

			if (ue8m0)   /* the code as a float's exponent field: 0 is 0, 255 infinity */
				memcpy(&s, &bits, 4);
			else
				s = mate_f8e4m3fn_to_f32(code);
			s *= global_scale;
			for (int i = 0; i < block; i++) {
				int64_t j = b * block + i;
				uint8_t byte = qb[j / 2 * q->stride[1]];
				uint8_t c = (j & 1) ? byte >> 4 : byte & 0xf;

				v[i] = mate_f4e2m1_to_f32(c) * s;
			}
			kc_store_f(out->dtype, ob + b * block * out->stride[1] *
			    (int64_t)mate_dtype_size(out->dtype), out->stride[1], block, v);
		}
	}
	return MATE_OK;
}

int
mate_cpu_dequantize_operand(const mate_scaled_operand *op, const mate_tensor *out,
    mate_error *err)
{
	const mate_tensor *q = op->q;
	int64_t rows, K, nb;
	float *v;
	int rc;

	if ((rc = check_bytes(q, "operand", err)) != MATE_OK ||
	    (rc = check_bytes(op->sf, "scale", err)) != MATE_OK ||
	    (rc = kc_check(out, "dequantized operand", 2, 1, err)) != MATE_OK)
		return rc;
	if (q->ndim != 2)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "operand: %d dimensions, expected 2 "
		    "(rows, %s)", q->ndim, op->fp4 ? "K / 2 bytes" : "K");
	if ((rc = check_block_layout("block", op->block, op->layout, err)) != MATE_OK)
		return rc;
	rows = q->shape[0];
	K = op->fp4 ? q->shape[1] * 2 : q->shape[1];
	if (K % op->block != 0)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "operand: %lld values a row, expected a "
		    "multiple of the block of %d", (long long)K, op->block);
	nb = K / op->block;
	if ((rc = check_sf_size(op->sf, "scale", op->layout, rows, nb, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "dequantized operand", 0, rows, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "dequantized operand", 1, K, err)) != MATE_OK)
		return rc;
	if ((v = kc_alloc(K > 0 ? K : 1, sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	for (int64_t r = 0; r < rows; r++) {
		const uint8_t *qb = (const uint8_t *)kc_at(q, kc_row_offset(q, 1, r));

		for (int64_t b = 0; b < nb; b++) {
			uint8_t code = *byte_at(op->sf, mate_sf_offset(op->layout, r, b, nb));
			float s = !op->ue8m0 ? mate_f8e4m3fn_to_f32(code) :
			    code == 0xff ? NAN : ldexpf(1.0f, (int)code - 127);

			for (int64_t j = b * op->block; j < (b + 1) * op->block; j++) {
				uint8_t byte = qb[(op->fp4 ? j / 2 : j) * q->stride[1]];

				v[j] = s * (!op->fp4 ? mate_f8e4m3fn_to_f32(byte) :
				    mate_f4e2m1_to_f32((j & 1) ? byte >> 4 : byte & 0xf));
			}
		}
		kc_store_f(out->dtype, kc_at(out, kc_row_offset(out, 1, r)), out->stride[1], K, v);
	}
	free(v);
	return MATE_OK;
}

/* ---- RMSNorm quantized to float8 ------------------------------------------------ */

int
mate_cpu_rmsnorm_quant(const mate_tensor *x, const mate_tensor *residual, const mate_tensor *w,
    float scale, double eps, const mate_tensor *out, mate_error *err)
{
	int64_t rows, H;
	float *row, *wt, *rs, inv, maxv;
	int rc;

	if ((rc = kc_check(x, "input", 2, 0, err)) != MATE_OK ||
	    (residual != NULL && (rc = kc_check(residual, "residual", 2, 1, err)) != MATE_OK) ||
	    (rc = kc_check(w, "weight", 1, 0, err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK)
		return rc;
	if (out->dtype != MATE_F8_E4M3FN && out->dtype != MATE_F8_E5M2)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "out: dtype %s: expected "
		    "float8_e4m3fn or float8_e5m2", mate_dtype_name(out->dtype));
	rows = x->shape[0];
	H = x->shape[1];
	if ((rc = kc_check_dim(w, "weight", 0, H, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 0, rows, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 1, H, err)) != MATE_OK ||
	    (residual != NULL && ((rc = kc_check_dim(residual, "residual", 0, rows, err)) != MATE_OK ||
	    (rc = kc_check_dim(residual, "residual", 1, H, err)) != MATE_OK)))
		return rc;
	if (!(isfinite(scale) && scale > 0))
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "scale %g: the kernel's output is "
		    "defined for a positive finite one", scale);
	if (!(eps >= 0))
		return mate_set_error(err, MATE_ERR_ARGUMENT, "eps = %g: expected >= 0", eps);
	if ((row = kc_alloc(3 * (H > 0 ? H : 1), sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	wt = row + H;
	rs = wt + H;
	kc_load_f(w->dtype, kc_at(w, w->offset), w->stride[0], H, wt);
	inv = 1.0f / scale;
	maxv = out->dtype == MATE_F8_E4M3FN ? 448.0f : 57344.0f;
	for (int64_t r = 0; r < rows && H > 0; r++) {
		float sum = 0, rr;

		kc_load_f(x->dtype, kc_at(x, kc_row_offset(x, 1, r)), x->stride[1], H, row);
		if (residual != NULL) {   /* the sum in float normed; the residual rounded */
			char *rb = kc_at(residual, kc_row_offset(residual, 1, r));

			kc_load_f(residual->dtype, rb, residual->stride[1], H, rs);
			for (int64_t j = 0; j < H; j++)
				row[j] += rs[j];
			kc_store_f(residual->dtype, rb, residual->stride[1], H, row);
		}
		for (int64_t j = 0; j < H; j++)
			sum += row[j] * row[j];
		rr = 1.0f / sqrtf(sum / (float)H + (float)eps);
		for (int64_t j = 0; j < H; j++)
			row[j] = fmaxf(-maxv, fminf(row[j] * rr * wt[j] * inv, maxv));
		kc_store_f(out->dtype, kc_at(out, kc_row_offset(out, 1, r)), out->stride[1], H, row);
	}
	free(row);
	return MATE_OK;
}

int
mate_cpu_mxfp4_dequantize_host(const mate_tensor *q, const mate_tensor *sf, int64_t group,
    const mate_tensor *out, mate_error *err)
{
	int64_t rows, K;
	float *v;
	int rc;

	if ((rc = check_bytes(q, "weight", err)) != MATE_OK ||
	    (rc = check_bytes(sf, "scale", err)) != MATE_OK ||
	    (rc = kc_check(out, "out", 2, 1, err)) != MATE_OK)
		return rc;
	if (q->ndim != 2 || sf->ndim != 2)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "weight (n, k / 2) and scale "
		    "(n, k / group_size) must be 2-D, got %d and %d dimensions", q->ndim, sf->ndim);
	rows = q->shape[0];
	K = q->shape[1] * 2;
	if (group < 1 || sf->shape[0] != rows || sf->shape[1] > K / group ||
	    sf->shape[1] * group != K)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "scale (%lld, %lld) with group_size %lld "
		    "does not cover weight (%lld, %lld)", (long long)sf->shape[0],
		    (long long)sf->shape[1], (long long)group, (long long)rows, (long long)q->shape[1]);
	if ((rc = kc_check_dim(out, "out", 0, rows, err)) != MATE_OK ||
	    (rc = kc_check_dim(out, "out", 1, K, err)) != MATE_OK)
		return rc;
	if ((v = kc_alloc(K > 0 ? K : 1, sizeof(float), err)) == NULL)
		return MATE_ERR_NOMEM;
	for (int64_t r = 0; r < rows; r++) {
		const uint8_t *qb = (const uint8_t *)kc_at(q, kc_row_offset(q, 1, r));
		const uint8_t *sb = (const uint8_t *)kc_at(sf, kc_row_offset(sf, 1, r));

		for (int64_t j = 0; j < K; j++) {
			uint8_t code = sb[j / group * sf->stride[1]], byte = qb[j / 2 * q->stride[1]];
			uint8_t c = (j & 1) ? byte >> 4 : byte & 0xf;
			/* __nv_fp8_e8m0 as a float (0xff NaN); its table's code 8 is +0 */
			float s = code == 0xff ? NAN : ldexpf(1.0f, (int)code - 127);

			v[j] = (c == 8 ? 0.0f : mate_f4e2m1_to_f32(c)) * s;
		}
		kc_store_f(out->dtype, kc_at(out, kc_row_offset(out, 1, r)), out->stride[1], K, v);
	}
	free(v);
	return MATE_OK;
}
