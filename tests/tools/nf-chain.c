/* nf-chain.c: records a chain of calls through libmate's API, each call's output the next one's input, one call's kernel making NaN and infinities (mate-list-dumps --nonfinite's tests and benchmark).
 *
 * usage: nf-chain DTYPE CALLS PLANT [ROWS COLS [transpose]]
 * Call i (1..CALLS) computes y = x * 0.5 + 1 on x, the previous call's y
 * (call 1: finite values). Odd calls return y (MATE_RESULT); even calls
 * write it into their out= argument (MATE_INPLACE, the in-place file). Call
 * PLANT (0: none) also writes NaN at [12, 3], +inf at [20, 5] and -inf at
 * [30, 7] of y (where ROWS and COLS allow), as a faulty kernel would; the
 * later calls pass them on. With "transpose", call PLANT + 1 reads its x as
 * the transposed view of call PLANT's y (shape [COLS, ROWS], strides
 * [1, COLS]) and the calls after it work on [COLS, ROWS]. DTYPE is float32,
 * float64, float16, bfloat16, float8_e4m3fn or float8_e5m2; ROWS x COLS
 * defaults to 64 x 16. NF_CHAIN_NAN_AT="R,C" adds a NaN at [R, C] of call
 * PLANT's y. NF_CHAIN_DIE_AT="K:HOW" makes call K die inside (see die()).
 * NF_CHAIN_FAIL_AT=K ends call K with mate_call_fail(). NF_CHAIN_FLUSH_AT=K calls mate_ring_flush() after call K. NF_CHAIN_EXIT=N ends it with exit(N) after its calls (MATE_RING's tests).
 * The MATE_* variables configure the recorder.
 * Exit status 0, 2 for bad arguments.
 */
#include <math.h>
#include <stdio.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "mate_record.h"

static mate_dtype dt;

static float
get(const unsigned char *p, size_t i)
{
	switch (dt) {
	case MATE_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
	case MATE_F64: { double v; memcpy(&v, p + 8 * i, 8); return (float)v; }
	case MATE_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return mate_f16_to_f32(v); }
	case MATE_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return mate_bf16_to_f32(v); }
	case MATE_F8_E4M3FN: return mate_f8e4m3fn_to_f32(p[i]);
	default: return mate_f8e5m2_to_f32(p[i]);
	}
}

static void
put(unsigned char *p, size_t i, float f)
{
	switch (dt) {
	case MATE_F32: memcpy(p + 4 * i, &f, 4); break;
	case MATE_F64: { double v = f; memcpy(p + 8 * i, &v, 8); break; }
	case MATE_F16: { uint16_t v = mate_f32_to_f16(f); memcpy(p + 2 * i, &v, 2); break; }
	case MATE_BF16: { uint16_t v = mate_f32_to_bf16(f); memcpy(p + 2 * i, &v, 2); break; }
	case MATE_F8_E4M3FN: p[i] = mate_f32_to_f8e4m3fn(f); break;
	default: p[i] = mate_f32_to_f8e5m2(f); break;
	}
}

/* NF_CHAIN_DIE_AT="K:HOW": call K dies inside, after its inputs are recorded: segv (a
 * write through NULL), abort, or fpe, bus, ill (raised). */
static const char *die_how;
static int die_at = -1;

static void
die(void)
{
	if (strcmp(die_how, "segv") == 0) {
		volatile int *volatile nowhere = NULL;

		*nowhere = 1;
	}
	if (strcmp(die_how, "abort") == 0)
		abort();
	raise(strcmp(die_how, "fpe") == 0 ? SIGFPE : strcmp(die_how, "bus") == 0 ? SIGBUS : SIGILL);
	_exit(99);
}

int
main(int argc, char **argv)
{
	int calls, plant, transpose = argc > 6 && strcmp(argv[6], "transpose") == 0;
	int64_t rows = argc > 5 ? atoll(argv[4]) : 64, cols = argc > 5 ? atoll(argv[5]) : 16;
	static const int64_t at[3][2] = { { 12, 3 }, { 20, 5 }, { 30, 7 } };
	static const float bad[3] = { NAN, INFINITY, -INFINITY };
	const char *extra = getenv("NF_CHAIN_NAN_AT");
	long long er = -1, ec = -1;
	unsigned char *x, *y;
	size_t es, n;

	if (argc < 4 || (dt = mate_dtype_from_name(argv[1])) == MATE_DTYPE_INVALID ||
	    mate_dtype_kind(dt) != MATE_KIND_FLOAT || rows < 1 || cols < 1) {
		fprintf(stderr, "usage: nf-chain DTYPE CALLS PLANT [ROWS COLS [transpose]]\n");
		return 2;
	}
	if (extra != NULL && sscanf(extra, "%lld,%lld", &er, &ec) != 2)
		return 2;
	if (getenv("NF_CHAIN_DIE_AT") != NULL) {
		die_at = atoi(getenv("NF_CHAIN_DIE_AT"));
		die_how = strchr(getenv("NF_CHAIN_DIE_AT"), ':') != NULL ?
		    strchr(getenv("NF_CHAIN_DIE_AT"), ':') + 1 : "segv";
	}
	calls = atoi(argv[2]);
	plant = atoi(argv[3]);
	es = mate_dtype_size(dt);
	n = (size_t)(rows * cols);
	x = malloc(n * es);
	y = malloc(n * es);
	if (x == NULL || y == NULL)
		return 2;
	for (size_t i = 0; i < n; i++)
		put(x, i, (float)((i * 7919) % 13) / 4 - 1);
	for (int k = 1; k <= calls; k++) {
		int64_t shape[2] = { rows, cols }, stride[2] = { cols, 1 };
		mate_tensor tx, ty;
		mate_call *c;

		if (transpose && k == plant + 1) {     /* x viewed transposed */
			shape[0] = cols;
			shape[1] = rows;
			stride[0] = 1;
			stride[1] = cols;
		}
		mate_tensor_init(&tx, dt, 2, shape, stride, x);
		if (transpose && k == plant + 1) {     /* y is made contiguous [cols, rows] */
			rows = shape[0];
			cols = shape[1];
			stride[0] = cols;
			stride[1] = 1;
		}
		mate_tensor_init(&ty, dt, 2, shape, NULL, y);
		c = mate_call_begin("chain_step", "nfchain", "(x, alpha=0.5, out=None)");
		mate_call_tensor(c, MATE_ARG, NULL, &tx);
		mate_call_float(c, MATE_DEFAULT, "alpha", 0.5);
		if (k % 2 == 0)
			mate_call_tensor(c, MATE_KWARG | MATE_INPLACE, "out", &ty);
		mate_call_ready(c);
		if (k == die_at)                       /* dies inside the call */
			die();
		for (int64_t r = 0; r < shape[0]; r++)
			for (int64_t q = 0; q < shape[1]; q++)
				put(y, (size_t)(r * cols + q),
				    get(x, (size_t)(r * tx.stride[0] + q * tx.stride[1])) * 0.5f + 1);
		for (int b = 0; k == plant && b < 3; b++)
			if (at[b][0] < rows && at[b][1] < cols)
				put(y, (size_t)(at[b][0] * cols + at[b][1]), bad[b]);
		if (k == plant && er >= 0 && er < rows && ec >= 0 && ec < cols)
			put(y, (size_t)(er * cols + ec), NAN);
		if (k % 2 == 1)
			mate_call_tensor(c, MATE_RESULT, NULL, &ty);
		if (getenv("NF_CHAIN_FAIL_AT") != NULL && k == atoi(getenv("NF_CHAIN_FAIL_AT")))
			mate_call_fail(c, "chain_step: failing on purpose");
		else
			mate_call_end(c);
		if (getenv("NF_CHAIN_FLUSH_AT") != NULL && k == atoi(getenv("NF_CHAIN_FLUSH_AT"))) {
			mate_error err;

			if (mate_ring_flush(&err) != MATE_OK)
				fprintf(stderr, "nf-chain: mate_ring_flush: %s\n", err.message);
		}
		memcpy(x, y, n * es);
	}
	free(x);
	free(y);
	if (getenv("NF_CHAIN_EXIT") != NULL)
		exit(atoi(getenv("NF_CHAIN_EXIT")));
	return 0;
}
