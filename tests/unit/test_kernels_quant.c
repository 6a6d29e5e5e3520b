/* test_kernels_quant.c: unit tests of the block quantization kernels (NVFP4, MXFP4, MXFP8, their scale layouts and rounding ties), the MXFP4 dequantizers, rmsnorm_quant and the block-scaled GEMMs' operands and row-scaled product, on hand-computed cases. */
#include "config.h"
#include "mate_private.h"
#include "kernels_fi.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static mate_tensor
tens(mate_dtype dt, void *data, int nd, int64_t a, int64_t b)
{
	int64_t s[2] = { a, b };
	mate_tensor t;

	mate_tensor_init(&t, dt, nd, nd == 1 ? &a : s, NULL, data);
	return t;
}

/* n bfloat16 values from floats */
static void
bf16s(uint16_t *dst, const float *src, int n)
{
	for (int i = 0; i < n; i++)
		dst[i] = mate_f32_to_bf16(src[i]);
}

/* Each layout's offsets are distinct and within its padded size: 128x4 and 8x4 as
 * FlashInfer's get_sf_out_offset_128x4 / _8x4 place them. */
DEFINE_TEST(layouts)
{
	static unsigned char seen[256 * 8];
	int64_t rows = 130, cols = 6;

	CHECK(mate_sf_offset(MATE_SF_128X4, 1, 0, 8) == 16);
	CHECK(mate_sf_offset(MATE_SF_128X4, 32, 0, 8) == 4);
	CHECK(mate_sf_offset(MATE_SF_128X4, 0, 4, 8) == 512);
	CHECK(mate_sf_offset(MATE_SF_128X4, 128, 0, 8) == 1024);
	CHECK(mate_sf_offset(MATE_SF_8X4, 1, 0, 8) == 4);
	CHECK(mate_sf_offset(MATE_SF_8X4, 0, 4, 8) == 32);
	CHECK(mate_sf_offset(MATE_SF_8X4, 8, 0, 6) == 64);
	CHECK(mate_sf_offset(MATE_SF_LINEAR, 3, 2, 6) == 20);
	CHECK(mate_sf_rows(MATE_SF_128X4, 130) == 256 && mate_sf_cols(MATE_SF_128X4, 6) == 8);
	CHECK(mate_sf_rows(MATE_SF_8X4, 9) == 16 && mate_sf_cols(MATE_SF_LINEAR, 6) == 6);
	for (int layout = 0; layout < 3; layout++) {
		int64_t size = mate_sf_rows(layout, rows) * mate_sf_cols(layout, cols);
		int dup = 0, out = 0;

		memset(seen, 0, sizeof(seen));
		for (int64_t r = 0; r < rows; r++)
			for (int64_t c = 0; c < cols; c++) {
				int64_t o = mate_sf_offset(layout, r, c, cols);

				if (o < 0 || o >= size)
					out++;
				else
					dup += seen[o]++ != 0;
			}
		CHECK(dup == 0 && out == 0);
	}
}

/* MXFP4: max 6 makes the scale 2^0; e2m1 ties go to the even code, the sign is kept. */
static const float row32[32] = { 6, 0.75f, -2.5f, 0.25f, 1.25f, 5, -0.1f, 0, 1.75f, -3.5f };

static int
mxfp4(const uint16_t *x, uint8_t *q, uint8_t *sf, const mate_tensor *rec_q, mate_error *err)
{
	mate_tensor xt = tens(MATE_BF16, (void *)x, 2, 1, 32), qt = tens(MATE_U8, q, 2, 1, 16);
	mate_tensor st = tens(MATE_U8, sf, 1, 1, 0);
	mate_block_quant p = { .block = 32, .ue8m0 = 1, .layout = MATE_SF_LINEAR,
		.global_scale = 1, .kpad = 32, .rec_q = rec_q };

	return mate_cpu_block_quantize(&xt, &p, &qt, &st, err);
}

DEFINE_TEST(mxfp4_codes)
{
	uint16_t x[32];
	uint8_t q[16], sf[1], rq[16];
	mate_tensor rt = tens(MATE_U8, rq, 2, 1, 16);
	mate_error err;

	bf16s(x, row32, 32);
	CHECK(mxfp4(x, q, sf, NULL, &err) == MATE_OK);
	CHECK(sf[0] == 127);
	CHECK(q[0] == (7 | 2 << 4));          /* 6; 0.75 -> 1.0 (even) */
	CHECK(q[1] == (0xC | 0 << 4));        /* -2.5 -> -2.0; 0.25 -> 0 */
	CHECK(q[2] == (2 | 6 << 4));          /* 1.25 -> 1.0; 5 -> 4 */
	CHECK(q[3] == (0x8 | 0 << 4));        /* -0.1 -> -0; 0 */
	CHECK(q[4] == (4 | 0xE << 4));        /* 1.75 -> 2; -3.5 -> -4 */
	/* a recorded code on the other side of the tie is taken; one further is not */
	memcpy(rq, q, 16);
	rq[0] = 7 | 1 << 4;                   /* 0.75 as 0.5 */
	rq[2] = 3 | 6 << 4;                   /* 1.25 as 1.5 */
	rq[4] = 4 | 0xD << 4;                 /* -3.5 as -3 */
	CHECK(mxfp4(x, q, sf, &rt, &err) == MATE_OK);
	CHECK(memcmp(q, rq, 16) == 0);
	rq[0] = 7 | 3 << 4;                   /* 0.75 as 1.5: not a neighbour */
	rq[3] = 0x9;                          /* -0.1 as -0.5: no tie */
	CHECK(mxfp4(x, q, sf, &rt, &err) == MATE_OK);
	CHECK(q[0] == (7 | 2 << 4) && q[3] == 0x8);
}

/* NVFP4: global scale 448 * 6 / 6 = 448 makes the block's e4m3 scale 448 * max / 6. */
DEFINE_TEST(nvfp4_scale)
{
	uint16_t x[16];
	uint8_t q[8], sf[128 * 4];
	float v[16] = { 3, -1.5f, 0.75f };
	mate_tensor xt = tens(MATE_BF16, x, 2, 1, 16), qt = tens(MATE_U8, q, 2, 1, 8);
	mate_tensor st = tens(MATE_U8, sf, 2, 128, 4);
	mate_block_quant p = { .block = 16, .layout = MATE_SF_128X4, .global_scale = 2, .kpad = 16 };
	mate_error err;

	bf16s(x, v, 16);
	memset(sf, 0xAA, sizeof(sf));
	CHECK(mate_cpu_block_quantize(&xt, &p, &qt, &st, &err) == MATE_OK);
	CHECK(sf[0] == mate_f32_to_f8e4m3fn(1.0f));   /* 2 * 3 / 6 */
	CHECK(sf[1] == 0 && sf[16] == 0 && sf[511] == 0);   /* padding */
	/* values times 1 / (1 / 2) = 2: 6, -3, 1.5 */
	CHECK(q[0] == (7 | 0xD << 4) && q[1] == 3);
	st = tens(MATE_U8, sf, 2, 127, 4);   /* one row of the tile short */
	CHECK(mate_cpu_block_quantize(&xt, &p, &qt, &st, &err) == MATE_ERR_ARGUMENT);
	CHECK(strstr(err.message, "508 scale bytes, expected 512") != NULL);
	xt = tens(MATE_BF16, x, 2, 2, 8);     /* rows of 8: no block of 16 */
	CHECK(mate_cpu_block_quantize(&xt, &p, &qt, &st, &err) == MATE_ERR_ARGUMENT);
	p.global_scale = 0;
	xt = tens(MATE_BF16, x, 2, 1, 16);
	st = tens(MATE_U8, sf, 2, 128, 4);
	CHECK(mate_cpu_block_quantize(&xt, &p, &qt, &st, &err) == MATE_ERR_UNSUPPORTED);
}

/* A float8_e4m3fn input (the fp8 recipe): times 6 / global in float16 (448 -> 2688, 64 ->
 * 384), the scale global * 2688 / 6 = 448, the values times 1 / 448: 6 and 6 / 7 -> 1;
 * ue8m0: 448 rounded up to 2^9, the values 5.25 -> 6 and 0.75 -> 1 (the tie to the even
 * code); float8_e5m2 is refused. */
DEFINE_TEST(fp8_input)
{
	uint8_t x[16], q[8], sf[16];
	mate_tensor xt = tens(MATE_F8_E4M3FN, x, 2, 1, 16), qt = tens(MATE_U8, q, 2, 1, 8);
	mate_tensor st = tens(MATE_U8, sf, 2, 1, 1);
	mate_block_quant p = { .block = 16, .layout = MATE_SF_LINEAR, .global_scale = 1, .kpad = 16 };
	mate_error err;

	memset(x, mate_f32_to_f8e4m3fn(64), sizeof(x));
	x[0] = mate_f32_to_f8e4m3fn(448);
	CHECK(mate_cpu_block_quantize(&xt, &p, &qt, &st, &err) == MATE_OK);
	CHECK(sf[0] == mate_f32_to_f8e4m3fn(448) && q[0] == (7 | 2 << 4) && q[7] == (2 | 2 << 4));
	p.ue8m0 = 1;
	CHECK(mate_cpu_block_quantize(&xt, &p, &qt, &st, &err) == MATE_OK);
	CHECK(sf[0] == 127 + 9 && q[0] == (7 | 2 << 4));
	xt.dtype = MATE_F8_E5M2;
	CHECK(mate_cpu_block_quantize(&xt, &p, &qt, &st, &err) == MATE_ERR_UNSUPPORTED);
}

/* MXFP8: max 448 makes the scale 2^0, rows padded to the alignment with zeros. */
DEFINE_TEST(mxfp8)
{
	uint16_t x[32];
	uint8_t q[64], sf[2];
	float v[32] = { 448, -0.3f, 1 };
	mate_tensor xt = tens(MATE_BF16, x, 2, 1, 32), qt = tens(MATE_F8_E4M3FN, q, 2, 1, 64);
	mate_tensor st = tens(MATE_U8, sf, 1, 2, 0);
	mate_block_quant p = { .block = 32, .fp8 = 1, .layout = MATE_SF_LINEAR, .global_scale = 1,
		.kpad = 64 };
	mate_error err;

	bf16s(x, v, 32);
	memset(q, 0x55, sizeof(q));
	CHECK(mate_cpu_block_quantize(&xt, &p, &qt, &st, &err) == MATE_OK);
	CHECK(sf[0] == 127 && sf[1] == 0);
	CHECK(q[0] == 0x7E && q[1] == mate_f32_to_f8e4m3fn(mate_bf16_to_f32(x[1])) && q[2] == 0x38);
	CHECK(q[32] == 0 && q[63] == 0);
}

DEFINE_TEST(dequantize)
{
	uint16_t x[32];
	uint8_t q[16], sf[1];
	float out[32];
	mate_tensor qt = tens(MATE_U8, q, 2, 1, 16), st = tens(MATE_U8, sf, 1, 1, 0);
	mate_tensor ot = tens(MATE_F32, out, 2, 1, 32);
	mate_error err;

	bf16s(x, row32, 32);
	CHECK(mxfp4(x, q, sf, NULL, &err) == MATE_OK);
	sf[0] = 128;   /* times 2 */
	CHECK(mate_cpu_block_dequantize(&qt, &st, 32, MATE_SF_LINEAR, 1, 1, &ot, &err) == MATE_OK);
	CHECK(out[0] == 12 && out[1] == 2 && out[2] == -4 && out[5] == 8 && out[9] == -8);
	CHECK(out[6] == 0 && signbit(out[6]));
	st = tens(MATE_U8, sf, 1, 0, 0);
	CHECK(mate_cpu_block_dequantize(&qt, &st, 32, MATE_SF_LINEAR, 1, 1, &ot, &err) ==
	    MATE_ERR_ARGUMENT);
}

/* mxfp4_dequantize_host: scales (n, k / group) as __nv_fp8_e8m0 floats, 0xff NaN (times a
 * zero too), code 0 2^-127; its table's -0 is +0. */
DEFINE_TEST(dequantize_host)
{
	uint8_t q[4] = { 0x17, 0x08, 0x0F, 0x20 }, sf[2] = { 128, 0xff };
	float out[8];
	mate_tensor qt = tens(MATE_U8, q, 2, 1, 4), st = tens(MATE_U8, sf, 2, 1, 2);
	mate_tensor ot = tens(MATE_F32, out, 2, 1, 8);
	mate_error err;

	CHECK(mate_cpu_mxfp4_dequantize_host(&qt, &st, 4, &ot, &err) == MATE_OK);
	CHECK(out[0] == 12 && out[1] == 1 && out[2] == 0 && !signbit(out[2]) && out[3] == 0);
	CHECK(isnan(out[4]) && isnan(out[5]) && isnan(out[6]) && isnan(out[7]));
	sf[0] = 0;
	CHECK(mate_cpu_mxfp4_dequantize_host(&qt, &st, 4, &ot, &err) == MATE_OK);
	CHECK(out[0] == ldexpf(6, -127));
	CHECK(mate_cpu_mxfp4_dequantize_host(&qt, &st, 3, &ot, &err) == MATE_ERR_ARGUMENT);
	CHECK(mate_cpu_mxfp4_dequantize_host(&qt, &st, 0, &ot, &err) == MATE_ERR_ARGUMENT);
}

DEFINE_TEST(rmsnorm_quant)
{
	float x[4] = { 1, -1, 1, -1 }, w[4] = { 1, 2, 0.5f, 1 }, r[4] = { 1, 1, 1, 1 };
	uint8_t out[4];
	mate_tensor xt = tens(MATE_F32, x, 2, 1, 4), wt = tens(MATE_F32, w, 1, 4, 0);
	mate_tensor ot = tens(MATE_F8_E4M3FN, out, 2, 1, 4), rt = tens(MATE_F32, r, 2, 1, 4);
	mate_error err;

	CHECK(mate_cpu_rmsnorm_quant(&xt, NULL, &wt, 0.5f, 0, &ot, &err) == MATE_OK);
	CHECK(mate_f8e4m3fn_to_f32(out[0]) == 2 && mate_f8e4m3fn_to_f32(out[1]) == -4 &&
	    mate_f8e4m3fn_to_f32(out[2]) == 1);
	CHECK(mate_cpu_rmsnorm_quant(&xt, NULL, &wt, 1e-6f, 0, &ot, &err) == MATE_OK);
	CHECK(mate_f8e4m3fn_to_f32(out[0]) == 448 && mate_f8e4m3fn_to_f32(out[1]) == -448);
	/* fused: residual = x + r = (2, 0, 2, 0), rms sqrt(2) */
	CHECK(mate_cpu_rmsnorm_quant(&xt, &rt, &wt, 1, 0, &ot, &err) == MATE_OK);
	CHECK(r[0] == 2 && r[1] == 0 && out[1] == 0);
	CHECK(fabsf(mate_f8e4m3fn_to_f32(out[0]) - 1.375f) < 1e-6);   /* sqrt 2 in e4m3 */
	wt = tens(MATE_F32, w, 1, 3, 0);
	CHECK(mate_cpu_rmsnorm_quant(&xt, NULL, &wt, 1, 0, &ot, &err) == MATE_ERR_ARGUMENT);
}

/* A block-scaled GEMM's operand: e2m1 pairs times e4m3 scales of 16 (NVFP4), e4m3 values
 * times ue8m0 scales of 32 (MXFP8, 255 NaN); sizes that do not fit are refused. */
DEFINE_TEST(scaled_operand)
{
	uint8_t q[2][16], sf[4] = { 0x40, 0x38, 0x38, 0x40 }, q8[32], sf8[1] = { 128 };
	float out[2][32], o8[32];
	mate_tensor qt = tens(MATE_U8, q, 2, 2, 16), st = tens(MATE_U8, sf, 2, 2, 2);
	mate_tensor ot = tens(MATE_F32, out, 2, 2, 32);
	mate_scaled_operand op = { &qt, &st, 1, 0, 16, MATE_SF_LINEAR };
	mate_error err;

	memset(q, 0, sizeof(q));
	q[0][0] = 0xF3;      /* 1.5, -6 */
	q[1][15] = 0x70;     /* value 31: 6 */
	CHECK(mate_cpu_dequantize_operand(&op, &ot, &err) == MATE_OK);
	CHECK(out[0][0] == 3 && out[0][1] == -12 && out[0][2] == 0);   /* scale 2 */
	CHECK(out[1][31] == 12 && out[1][30] == 0);                    /* block 1 of row 1: 2 */
	st = tens(MATE_U8, sf, 1, 3, 0);                               /* a scale short */
	CHECK(mate_cpu_dequantize_operand(&op, &ot, &err) == MATE_ERR_ARGUMENT &&
	    strstr(err.message, "3 scale bytes, expected 4") != NULL);
	op.layout = MATE_SF_128X4;                                      /* wants 128 x 4 */
	st = tens(MATE_U8, sf, 2, 2, 2);
	CHECK(mate_cpu_dequantize_operand(&op, &ot, &err) == MATE_ERR_ARGUMENT);
	op.layout = MATE_SF_LINEAR;
	qt = tens(MATE_U8, q, 2, 2, 12);                                /* 24 values: not 16s */
	CHECK(mate_cpu_dequantize_operand(&op, &ot, &err) == MATE_ERR_ARGUMENT);
	/* MXFP8: 32 e4m3 values (1.0 is 0x38) times 2^(128 - 127) */
	memset(q8, 0x38, sizeof(q8));
	qt = tens(MATE_F8_E4M3FN, q8, 2, 1, 32);
	st = tens(MATE_U8, sf8, 1, 1, 0);
	ot = tens(MATE_F32, o8, 2, 1, 32);
	op = (mate_scaled_operand){ &qt, &st, 0, 1, 32, MATE_SF_LINEAR };
	CHECK(mate_cpu_dequantize_operand(&op, &ot, &err) == MATE_OK && o8[0] == 2 && o8[31] == 2);
	sf8[0] = 255;
	CHECK(mate_cpu_dequantize_operand(&op, &ot, &err) == MATE_OK && isnan(o8[5]));
}

/* alpha per row times a @ b in float32, rounded once into out; an alpha of neither one
 * value nor one a row is refused. */
DEFINE_TEST(mm_row_scaled)
{
	float a[2][2] = { { 1, 2 }, { 3, 4 } }, b[2][2] = { { 1, 0 }, { 1, 1 } }, al[3] = { 2, 0.5f, 1 };
	uint16_t out[2][2];
	mate_tensor at = tens(MATE_F32, a, 2, 2, 2), bt = tens(MATE_F32, b, 2, 2, 2);
	mate_tensor lt = tens(MATE_F32, al, 1, 2, 0), ot = tens(MATE_BF16, out, 2, 2, 2);
	mate_error err;

	CHECK(mate_cpu_mm_row_scaled(&at, &bt, &lt, &ot, &err) == MATE_OK);
	CHECK(mate_bf16_to_f32(out[0][0]) == 6 && mate_bf16_to_f32(out[0][1]) == 4 &&
	    mate_bf16_to_f32(out[1][0]) == 3.5f && mate_bf16_to_f32(out[1][1]) == 2);
	CHECK(mate_cpu_mm_row_scaled(&at, &bt, NULL, &ot, &err) == MATE_OK &&
	    mate_bf16_to_f32(out[1][0]) == 7);
	lt = tens(MATE_F32, al, 1, 3, 0);
	CHECK(mate_cpu_mm_row_scaled(&at, &bt, &lt, &ot, &err) == MATE_ERR_ARGUMENT);
}

TEST_MAIN()
