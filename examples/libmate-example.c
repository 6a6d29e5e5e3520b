/* libmate-example.c: the example of libmate(3): a library function that records its calls. */
#include <math.h>
#include <stdio.h>
#include <mate_record.h>

/* y = x / sqrt(mean(x^2) + eps) * w, row by row; -1 on a bad shape. */
static int
rmsnorm_impl(const float *x, const float *w, float *y, int rows, int cols, double eps)
{
	if (rows < 0 || cols <= 0)
		return -1;
	for (int r = 0; r < rows; r++) {
		double ss = 0;
		for (int i = 0; i < cols; i++)
			ss += (double)x[r * cols + i] * x[r * cols + i];
		float inv = (float)(1 / sqrt(ss / cols + eps));
		for (int i = 0; i < cols; i++)
			y[r * cols + i] = x[r * cols + i] * inv * w[i];
	}
	return 0;
}

/* The recording, out of line: MATE_COLD keeps it apart from the fast path,
 * so that at MATE_LOGLEVEL=0 mylib_rmsnorm() is the branch and the body. */
static MATE_COLD int
rmsnorm_recorded(const float *x, const float *w, float *y, int rows, int cols, double eps)
{
	int64_t shape[2] = { rows, cols };
	mate_tensor tx, tw, ty;
	mate_call *c;
	int rc;

	mate_tensor_init(&tx, MATE_F32, 2, shape, NULL, (void *)x);
	mate_tensor_init(&tw, MATE_F32, 1, shape + 1, NULL, (void *)w);
	mate_tensor_init(&ty, MATE_F32, 2, shape, NULL, y);
	c = mate_call_begin("rmsnorm", "mylib", "(input, weight, eps=1e-06, out=None)");
	mate_call_tensor(c, MATE_ARG, NULL, &tx);
	mate_call_tensor(c, MATE_ARG, NULL, &tw);
	if (eps != 1e-6)
		mate_call_float(c, MATE_KWARG, "eps", eps);
	else
		mate_call_float(c, MATE_DEFAULT, "eps", eps);
	mate_call_tensor(c, MATE_KWARG | MATE_INPLACE, "out", &ty);
	mate_call_ready(c);
	rc = rmsnorm_impl(x, w, y, rows, cols, eps);
	if (rc == 0) {
		mate_call_tensor(c, MATE_RESULT, NULL, &ty);
		mate_call_end(c);
	} else
		mate_call_fail(c, "rmsnorm: bad shape");
	return rc;
}

/* The public function, declared in the library's header (mylib.h);
 * recording costs one branch when MATE_LOGLEVEL=0. */
int mylib_rmsnorm(const float *x, const float *w, float *y, int rows, int cols, double eps);

int
mylib_rmsnorm(const float *x, const float *w, float *y, int rows, int cols, double eps)
{
	if (MATE_ACTIVE())
		return rmsnorm_recorded(x, w, y, rows, cols, eps);
	return rmsnorm_impl(x, w, y, rows, cols, eps);
}

int
main(void)
{
	float x[2][4] = { { 1, 2, 3, 4 }, { -1, 0, 1, 2 } }, w[4] = { 1, 1, 1, 1 }, y[2][4];

	if (mylib_rmsnorm(&x[0][0], w, &y[0][0], 2, 4, 1e-6) != 0)
		return 1;
	if (mylib_rmsnorm(&x[0][0], w, &y[0][0], 2, 0, 1e-5) == 0)
		return 1;
	printf("y[0][3] = %.4f\n", y[0][3]);
	return 0;
}
