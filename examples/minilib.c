/* minilib.c: the demo's instrumented operations (rmsnorm, fused_add_rmsnorm, silu_and_mul, softmax, mm) on a worker pool. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <mate_record.h>

#include "minilib.h"

/* ---- worker pool ---------------------------------------------------------- */

struct task {
	int (*fn)(void *arg);
	void *arg;
	int rc, done;
	struct task *next;
	uint64_t call;             /* the recorded call it runs for (0: none) */
	const char *op;
	int64_t in_bytes, out_bytes;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work, finished;
	struct task *head, *tail;
	pthread_t *threads;
	int nthreads, stop;
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	   PTHREAD_COND_INITIALIZER, NULL, NULL, NULL, 0, 0 };

static __thread char last_error[256];

const char *
mini_last_error(void)
{
	return last_error;
}

static int
fail(const char *fmt, const char *what, long a, long b)
{
	snprintf(last_error, sizeof(last_error), fmt, what, a, b);
	return -1;
}

/* Each worker thread shows as worker_<i> in live events (mate_work_*). */
static void *
worker_main(void *arg)
{
	char name[32];

	snprintf(name, sizeof(name), "worker_%d", (int)(intptr_t)arg);
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		struct task *t;
		while (pool.head == NULL && !pool.stop)
			pthread_cond_wait(&pool.work, &pool.lock);
		if (pool.head == NULL)
			break;
		t = pool.head;
		pool.head = t->next;
		if (pool.head == NULL)
			pool.tail = NULL;
		pthread_mutex_unlock(&pool.lock);
		mate_work w;
		mate_work_begin(&w, t->call, name, t->op, t->in_bytes);
		t->rc = t->fn(t->arg);
		mate_work_end(&w, t->out_bytes, t->rc == 0);
		pthread_mutex_lock(&pool.lock);
		t->done = 1;
		pthread_cond_broadcast(&pool.finished);
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

int
mini_init(int workers)
{
	pool.threads = calloc((size_t)workers, sizeof(pthread_t));
	if (pool.threads == NULL)
		return -1;
	for (int i = 0; i < workers; i++) {
		if (pthread_create(&pool.threads[i], NULL, worker_main, (void *)(intptr_t)i) != 0)
			return -1;
		pool.nthreads++;
	}
	return 0;
}

void
mini_shutdown(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.stop = 1;
	pthread_cond_broadcast(&pool.work);
	pthread_mutex_unlock(&pool.lock);
	for (int i = 0; i < pool.nthreads; i++)
		pthread_join(pool.threads[i], NULL);
	free(pool.threads);
}

static int64_t
nbytes(const mate_tensor *t)
{
	return t != NULL ? mate_tensor_nbytes(t) : 0;
}

/* Runs fn(arg) on a worker for call c (NULL when not recorded) and waits
 * for it; op and the bytes in and out describe the work in live events. */
static int
run_on_pool(int (*fn)(void *), void *arg, const mate_call *c, const char *op,
    int64_t in_bytes, int64_t out_bytes)
{
	struct task t = { fn, arg, 0, 0, NULL, mate_call_id(c), op, in_bytes, out_bytes };

	pthread_mutex_lock(&pool.lock);
	if (pool.tail != NULL)
		pool.tail->next = &t;
	else
		pool.head = &t;
	pool.tail = &t;
	pthread_cond_signal(&pool.work);
	while (!t.done)
		pthread_cond_wait(&pool.finished, &pool.lock);
	pthread_mutex_unlock(&pool.lock);
	return t.rc;
}

/* ---- element access --------------------------------------------------------- */

static float
load(const mate_tensor *t, int64_t i)
{
	const void *p = mate_tensor_element(t, i);

	switch (t->dtype) {
	case MATE_F16: return mate_f16_to_f32(*(const uint16_t *)p);
	case MATE_BF16: return mate_bf16_to_f32(*(const uint16_t *)p);
	default: return *(const float *)p;
	}
}

static void
store(const mate_tensor *t, int64_t i, float v)
{
	void *p = mate_tensor_element(t, i);

	switch (t->dtype) {
	case MATE_F16: *(uint16_t *)p = mate_f32_to_f16(v); break;
	case MATE_BF16: *(uint16_t *)p = mate_f32_to_bf16(v); break;
	default: *(float *)p = v; break;
	}
}

static int64_t
last_dim(const mate_tensor *t)
{
	return t->ndim > 0 ? t->shape[t->ndim - 1] : 1;
}

/* ---- kernels (run on the pool) ---------------------------------------------- */

struct norm_args {
	mate_tensor *input, *residual, *out;
	const mate_tensor *weight;
	double eps;
};

static void
norm_row(const mate_tensor *src, const mate_tensor *w, const mate_tensor *dst,
    int64_t row, int64_t h, double eps)
{
	float ss = 0;

	for (int64_t j = 0; j < h; j++) {
		float x = load(src, row * h + j);
		ss += x * x;
	}
	float inv = 1.0f / sqrtf(ss / (float)h + (float)eps);
	for (int64_t j = 0; j < h; j++)
		store(dst, row * h + j, load(src, row * h + j) * inv * load(w, j));
}

static int
rmsnorm_work(void *arg)
{
	struct norm_args *a = arg;
	int64_t h = last_dim(a->input), rows = mate_tensor_numel(a->input) / h;

	for (int64_t r = 0; r < rows; r++) {
		if (a->residual != NULL) {
			for (int64_t j = 0; j < h; j++) {
				float s = load(a->residual, r * h + j) + load(a->input, r * h + j);
				store(a->residual, r * h + j, s);
			}
			norm_row(a->residual, a->weight, a->input, r, h, a->eps);
		} else {
			norm_row(a->input, a->weight, a->out, r, h, a->eps);
		}
	}
	return 0;
}

static int
silu_work(void *arg)
{
	mate_tensor **t = arg;
	int64_t d = last_dim(t[0]) / 2, rows = mate_tensor_numel(t[0]) / (2 * d);

	for (int64_t r = 0; r < rows; r++)
		for (int64_t j = 0; j < d; j++) {
			float x = load(t[0], r * 2 * d + j), y = load(t[0], r * 2 * d + d + j);
			store(t[1], r * d + j, x / (1.0f + expf(-x)) * y);
		}
	return 0;
}

struct softmax_args {
	const mate_tensor *logits;
	mate_tensor *out;
	double temperature;
};

static int
softmax_work(void *arg)
{
	struct softmax_args *a = arg;
	int64_t v = last_dim(a->logits), rows = mate_tensor_numel(a->logits) / v;
	float t = (float)a->temperature;

	for (int64_t r = 0; r < rows; r++) {
		float mx = -INFINITY, sum = 0;
		for (int64_t j = 0; j < v; j++)
			mx = fmaxf(mx, load(a->logits, r * v + j) / t);
		for (int64_t j = 0; j < v; j++) {
			float e = expf(load(a->logits, r * v + j) / t - mx);
			store(a->out, r * v + j, e);
			sum += e;
		}
		for (int64_t j = 0; j < v; j++)
			store(a->out, r * v + j, load(a->out, r * v + j) / sum);
	}
	return 0;
}

static float *
to_f32(const mate_tensor *t)
{
	int64_t n = mate_tensor_numel(t);
	float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));

	for (int64_t i = 0; f != NULL && i < n; i++)
		f[i] = load(t, i);
	return f;
}

static int
mm_work(void *arg)
{
	mate_tensor **t = arg;
	int m = (int)t[0]->shape[0], k = (int)t[0]->shape[1], n = (int)t[1]->shape[1];
	float *a = to_f32(t[0]), *b = to_f32(t[1]), *c = malloc((size_t)m * n * sizeof(float));
	int rc = -1;

	if (a != NULL && b != NULL && c != NULL) {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k,
		    1.0f, a, k, b, n, 0.0f, c, n);
		for (int64_t i = 0; i < (int64_t)m * n; i++)
			store(t[2], i, c[i]);
		rc = 0;
	}
	free(a);
	free(b);
	free(c);
	return rc;
}

/* ---- the instrumented API ---------------------------------------------------- */

/* Ends a recorded call with the operation's outcome. */
static int
finish(mate_call *c, int rc, const mate_tensor *result)
{
	if (c == NULL)
		return rc;
	if (rc != 0) {
		mate_call_fail(c, last_error);
		return rc;
	}
	if (result != NULL)
		mate_call_tensor(c, MATE_RESULT, NULL, result);
	mate_call_end(c);
	return rc;
}

/* MINILIB_FAULT=rmsnorm:N:ROW[:nan|:crash]: a planted bug, for the worked example
 * (examples/find-the-bug.sh): the N-th rmsnorm call of the process writes row
 * ROW of its output wrong (every element doubled; with ":nan", its first
 * element NaN; with ":crash", it writes through a null pointer instead, a
 * SIGSEGV inside the call, for run-demo.sh's flight recorder). Unset, as
 * everywhere else, it changes nothing. */
static struct {
	pthread_once_t once;
	long at, row, calls;
	int nan_mode, crash;
} fault = { PTHREAD_ONCE_INIT, -1, -1, 0, 0, 0 };

static void
read_fault(void)
{
	const char *e = getenv("MINILIB_FAULT");
	char mode[8] = "";

	if (e == NULL || sscanf(e, "rmsnorm:%ld:%ld:%7s", &fault.at, &fault.row, mode) < 2)
		fault.at = fault.row = -1;
	fault.nan_mode = strcmp(mode, "nan") == 0;
	fault.crash = strcmp(mode, "crash") == 0;
}

static void
planted_fault(const mate_tensor *out)
{
	long n, row;
	int64_t h;

	pthread_once(&fault.once, read_fault);
	row = fault.row;
	n = __atomic_add_fetch(&fault.calls, 1, __ATOMIC_RELAXED);
	if (fault.at < 1 || n != fault.at || row < 0 || out->ndim < 1 || row >= out->shape[0])
		return;
	if (fault.crash) {
		volatile float *volatile nowhere = NULL;

		*nowhere = 1;
	}
	h = mate_tensor_numel(out) / out->shape[0];

	for (int64_t j = 0; j < h; j++)
		store(out, row * h + j, fault.nan_mode && j == 0 ? NAN : 2 * load(out, row * h + j));
}

int
mini_rmsnorm(const mate_tensor *input, const mate_tensor *weight, double eps,
    mate_tensor *out)
{
	struct norm_args a = { (mate_tensor *)input, NULL, out, weight, eps };
	mate_call *c = NULL;
	int rc;

	if (MATE_ACTIVE()) {
		c = mate_call_begin("rmsnorm", "minilib", "(input, weight, eps=1e-06, out=None)");
		mate_call_tensor(c, MATE_ARG, NULL, input);
		mate_call_tensor(c, MATE_ARG, NULL, weight);
		mate_call_float(c, MATE_KWARG, "eps", eps);
		mate_call_none(c, MATE_DEFAULT, "out");
		mate_call_ready(c);
	}
	if (weight->ndim != 1 || weight->shape[0] != last_dim(input))
		rc = fail("%s: weight has %ld elements, expected %ld", "rmsnorm",
		    (long)weight->shape[0], (long)last_dim(input));
	else
		rc = run_on_pool(rmsnorm_work, &a, c, "rmsnorm",
		    nbytes(input) + nbytes(weight), nbytes(out));
	if (rc == 0)
		planted_fault(out);
	return finish(c, rc, out);
}

int
mini_fused_add_rmsnorm(mate_tensor *input, mate_tensor *residual,
    const mate_tensor *weight, double eps)
{
	struct norm_args a = { input, residual, NULL, weight, eps };
	mate_call *c = NULL;
	int rc;

	if (MATE_ACTIVE()) {
		c = mate_call_begin("fused_add_rmsnorm", "minilib",
		    "(input, residual, weight, eps=1e-06)");
		mate_call_tensor(c, MATE_ARG | MATE_INPLACE, NULL, input);
		mate_call_tensor(c, MATE_ARG | MATE_INPLACE, NULL, residual);
		mate_call_tensor(c, MATE_ARG, NULL, weight);
		mate_call_float(c, MATE_KWARG, "eps", eps);
		mate_call_ready(c);
	}
	rc = run_on_pool(rmsnorm_work, &a, c, "fused_add_rmsnorm",
	    nbytes(input) + nbytes(residual) + nbytes(weight), nbytes(input) + nbytes(residual));
	return finish(c, rc, NULL);
}

int
mini_silu_and_mul(const mate_tensor *input, mate_tensor *out)
{
	mate_tensor *t[2] = { (mate_tensor *)input, out };
	mate_call *c = NULL;
	int rc;

	if (MATE_ACTIVE()) {
		c = mate_call_begin("silu_and_mul", "minilib", "(input, out=None)");
		mate_call_tensor(c, MATE_ARG, NULL, input);
		mate_call_none(c, MATE_DEFAULT, "out");
		mate_call_ready(c);
	}
	rc = run_on_pool(silu_work, t, c, "silu_and_mul", nbytes(input), nbytes(out));
	return finish(c, rc, out);
}

int
mini_softmax(const mate_tensor *logits, double temperature, mate_tensor *out)
{
	struct softmax_args a = { logits, out, temperature };
	mate_call *c = NULL;
	int rc;

	if (MATE_ACTIVE()) {
		c = mate_call_begin("softmax", "minilib", "(logits, temperature=None)");
		mate_call_tensor(c, MATE_ARG, NULL, logits);
		mate_call_float(c, MATE_KWARG, "temperature", temperature);
		mate_call_ready(c);
	}
	rc = run_on_pool(softmax_work, &a, c, "softmax", nbytes(logits), nbytes(out));
	return finish(c, rc, out);
}

int
mini_mm(const mate_tensor *a, const mate_tensor *b, mate_tensor *out)
{
	mate_tensor *t[3] = { (mate_tensor *)a, (mate_tensor *)b, out };
	mate_call *c = NULL;
	int rc;

	if (MATE_ACTIVE()) {
		c = mate_call_begin("mm", "minilib", "(a, b, out_dtype=None)");
		mate_call_tensor(c, MATE_ARG, NULL, a);
		mate_call_tensor(c, MATE_ARG, NULL, b);
		mate_call_none(c, MATE_DEFAULT, "out_dtype");
		mate_call_ready(c);
	}
	if (a->shape[1] != b->shape[0])
		rc = fail("%s: inner dimensions differ (%ld vs %ld)", "mm",
		    (long)a->shape[1], (long)b->shape[0]);
	else
		rc = run_on_pool(mm_work, t, c, "mm", nbytes(a) + nbytes(b), nbytes(out));
	return finish(c, rc, out);
}
