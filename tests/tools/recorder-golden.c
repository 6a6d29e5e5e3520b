/* recorder-golden.c: makes the calls of MATE's reference program (tests/fixtures/mate-reference) through the C recording API.
 *
 * usage: recorder-golden TENSORS.bin [PREFIX:NAME]
 * The MATE_* variables configure the recorder as in any recorded program; with
 * PREFIX:NAME the program first calls mate_set_identity(PREFIX, NAME), and
 * PREFIX_* configure it.
 * TENSORS.bin holds the reference tensors' bytes (tests/tools/gen-golden-tensors.py).
 * Exit status: 0 ok, 1 the tensor file is unreadable or malformed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mate_record.h"

#define MAX_TENSORS 32

static unsigned char *blobs[MAX_TENSORS];
static size_t blob_sizes[MAX_TENSORS];
static int nblobs, next_blob;

static int
load(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char len[8];

	if (f == NULL) {
		perror(path);
		return -1;
	}
	while (nblobs < MAX_TENSORS && fread(len, 1, 8, f) == 8) {
		uint64_t n = 0;
		for (int i = 7; i >= 0; i--)
			n = n << 8 | len[i];
		if (n > (1u << 24) || (blobs[nblobs] = malloc(n ? n : 1)) == NULL ||
		    fread(blobs[nblobs], 1, n, f) != n) {
			fprintf(stderr, "%s: truncated or bad tensor %d\n", path, nblobs);
			fclose(f);
			return -1;
		}
		blob_sizes[nblobs++] = n;
	}
	fclose(f);
	return 0;
}

/* The next reference tensor as a view with this dtype, shape and strides. */
static mate_tensor
next(mate_dtype dt, int ndim, const int64_t *shape, const int64_t *stride)
{
	mate_tensor t;

	if (next_blob >= nblobs) {
		fprintf(stderr, "recorder-golden: too few tensors in the file\n");
		exit(1);
	}
	mate_tensor_init(&t, dt, ndim, shape, stride, blobs[next_blob]);
	if ((size_t)mate_tensor_storage_extent(&t) * mate_dtype_size(dt) != blob_sizes[next_blob]) {
		fprintf(stderr, "recorder-golden: tensor %d has %zu bytes\n", next_blob,
		    blob_sizes[next_blob]);
		exit(1);
	}
	next_blob++;
	return t;
}

/* The call name (module __main__) with its tensor arguments a and b (b may be NULL), or
 * NULL while nothing records. */
static mate_call *
begin_call(const char *name, const char *sig, const mate_tensor *a, const mate_tensor *b)
{
	mate_call *c;

	if (!MATE_ACTIVE())
		return NULL;
	c = mate_call_begin(name, "__main__", sig);
	mate_call_tensor(c, MATE_ARG, NULL, a);
	if (b != NULL)
		mate_call_tensor(c, MATE_ARG, NULL, b);
	return c;
}

/* The API has run: its result is the reference output. */
static void
end_call(mate_call *c, const mate_tensor *out)
{
	mate_call_tensor(c, MATE_RESULT, NULL, out);
	mate_call_end(c);
}

static void
gemm(mate_dtype dt, int explicit_out_dtype)
{
	int64_t sa[] = { 16, 32 }, sb[] = { 32, 8 }, stb[] = { 1, 32 }, so[] = { 16, 8 };
	mate_tensor a = next(dt, 2, sa, NULL), b = next(dt, 2, sb, stb), out = next(dt, 2, so, NULL);
	mate_call *c = begin_call("gemm", "(a, b, out_dtype=torch.float32)", &a, &b);

	if (c != NULL) {
		if (explicit_out_dtype)
			mate_call_dtype(c, MATE_KWARG, "out_dtype", dt);
		else
			mate_call_dtype(c, MATE_DEFAULT, "out_dtype", MATE_F32);
		mate_call_ready(c);
	}
	end_call(c, &out);
}

static void
rmsnorm(mate_dtype dt, int rows, int explicit_eps)
{
	int64_t sx[] = { rows, 64 }, sw[] = { 64 };
	mate_tensor x = next(dt, 2, sx, NULL), w = next(dt, 1, sw, NULL), out = next(dt, 2, sx, NULL);
	mate_call *c = begin_call("rmsnorm", "(input, weight, eps=1e-06, out=None)", &x, &w);

	if (c != NULL) {
		if (explicit_eps)
			mate_call_float(c, MATE_KWARG, "eps", 1e-5);
		else
			mate_call_float(c, MATE_DEFAULT, "eps", 1e-6);
		mate_call_none(c, MATE_DEFAULT, "out");
		mate_call_ready(c);
	}
	end_call(c, &out);
}

static void
silu_and_mul(void)
{
	int64_t si[] = { 2, 5, 128 }, so[] = { 2, 5, 64 };
	mate_tensor x = next(MATE_F32, 3, si, NULL), out = next(MATE_F32, 3, so, NULL);

	end_call(begin_call("silu_and_mul", "(input)", &x, NULL), &out);
}

static void
configure(void)
{
	mate_value *sizes = mate_value_list(), *shape = mate_value_tuple();
	mate_value *opts = mate_value_dict(), *v = mate_value_list(), *ret = mate_value_list();
	mate_call *c = NULL;

	for (int i = 1; i <= 3; i++)
		mate_value_append(sizes, mate_value_int(i));
	mate_value_append(shape, mate_value_int(4));
	mate_value_append(shape, mate_value_int(5));
	mate_value_set_str(opts, "k", mate_value_int(1));
	mate_value_append(v, mate_value_int(2));
	mate_value_set_str(opts, "v", v);
	mate_value_append(ret, mate_value_float(0.5));
	mate_value_append(ret, mate_value_bool(1));
	if (MATE_ACTIVE()) {
		c = mate_call_begin("configure", "__main__",
		    "(n, scale, flag, name, nothing, sizes, shape, opts, mode=<Mode.FAST: 0>, tail=3)");
		mate_call_int(c, MATE_ARG, NULL, 7);
		mate_call_float(c, MATE_ARG, NULL, 0.5);
		mate_call_bool(c, MATE_ARG, NULL, 1);
		mate_call_str(c, MATE_ARG, NULL, "bf16");
		mate_call_none(c, MATE_ARG, NULL);
		mate_call_value(c, MATE_ARG, NULL, sizes);
		mate_call_value(c, MATE_ARG, NULL, shape);
		mate_call_value(c, MATE_ARG, NULL, opts);
		mate_call_int(c, MATE_KWARG, "tail", 9);
		mate_call_enum(c, MATE_DEFAULT, "mode", "Mode.FAST", 0);
		mate_call_ready(c);
		mate_call_int(c, MATE_RESULT, NULL, 14);
		mate_call_value(c, MATE_RESULT, NULL, ret);
		mate_call_end(c);
	} else {
		mate_value_free(sizes);
		mate_value_free(shape);
		mate_value_free(opts);
		mate_value_free(ret);
	}
}

static void
no_args(void)
{
	mate_call *c = MATE_ACTIVE() ? mate_call_begin("no_args", "__main__", "()") : NULL;

	mate_call_end(c);
}

static void
int_ops(void)
{
	int64_t s[] = { 10 };
	mate_tensor idx = next(MATE_I32, 1, s, NULL), counts = next(MATE_I64, 1, s, NULL);
	mate_tensor out = next(MATE_I64, 1, s, NULL);
	mate_call *c = begin_call("int_ops", "(idx, counts)", &idx, &counts);

	if (c != NULL)
		mate_call_ready(c);
	end_call(c, &out);
}

static void
crashes(void)
{
	int64_t s[] = { 3, 3 };
	mate_tensor x = next(MATE_F32, 2, s, NULL);
	mate_call *c = begin_call("crashes", "(x, code)", &x, NULL);

	if (c != NULL) {
		mate_call_int(c, MATE_ARG, NULL, 11);
		mate_call_ready(c);
	}
	mate_call_fail(c, "RuntimeError: crash requested with code 11");
}

int
main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: recorder-golden TENSORS.bin [PREFIX:NAME]\n");
		return 2;
	}
	if (argc == 3) {
		char prefix[64], *name;
		mate_error err;
		snprintf(prefix, sizeof(prefix), "%s", argv[2]);
		name = strchr(prefix, ':');
		if (name != NULL)
			*name++ = '\0';
		if (mate_set_identity(prefix, name, &err) != MATE_OK) {
			fprintf(stderr, "recorder-golden: %s\n", err.message);
			return 2;
		}
	}
	if (load(argv[1]) != 0)
		return 1;
	gemm(MATE_F32, 0);
	gemm(MATE_F16, 1);
	rmsnorm(MATE_BF16, 4, 1);
	rmsnorm(MATE_F32, 3, 0);
	silu_and_mul();
	configure();
	no_args();
	int_ops();
	crashes();
	for (int i = 0; i < nblobs; i++)
		free(blobs[i]);
	return next_blob == nblobs ? 0 : 1;
}
