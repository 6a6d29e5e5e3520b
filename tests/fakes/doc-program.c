/* doc-program.c: the "./program" of the examples in the man pages and the README, for
 * tests/cli/test_doc_examples.py: a program that records its calls through libmate, as a
 * library using mate would. It calls rmsnorm, mm, single_decode_with_kv_cache and
 * single_prefill_with_kv_cache (each computed here, so that a replay passes), and a forked
 * child that dies inside a recorded rmsnorm with a mis-sized weight, so that a dump root
 * holds one call that never returned. Exit 0.
 *
 * doc-program --fork-exit: the child makes one good rmsnorm call and exits normally instead
 * (tests/cli/test_profile.py: a forked child's profile). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mate_record.h>

#define ROWS 4
#define COLS 64
#define HQ 4
#define HK 2
#define DIM 16
#define KV 10
#define QLEN 3

static float x[ROWS * COLS], w[COLS], y[ROWS * COLS];
static float a[16 * 32], b[32 * 8], ab[16 * 8];
static float q[QLEN * HQ * DIM], k[KV * HK * DIM], v[KV * HK * DIM], o[QLEN * HQ * DIM];

static void
fill(float *p, int n, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
	}
}

static mate_tensor
tensor(float *p, int ndim, int64_t d0, int64_t d1, int64_t d2)
{
	int64_t shape[3] = { d0, d1, d2 };
	mate_tensor t;

	mate_tensor_init(&t, MATE_F32, ndim, shape, NULL, p);
	return t;
}

/* rmsnorm(input, weight): weight has wcols entries (COLS for a good call) */
static void
rmsnorm(int wcols, int never_return)
{
	mate_tensor tx = tensor(x, 2, ROWS, COLS, 0), tw = tensor(w, 1, wcols, 0, 0);
	mate_tensor ty = tensor(y, 2, ROWS, COLS, 0);
	mate_call *c = mate_call_begin("rmsnorm", "docprog", "(input, weight, eps=1e-06, out=None)");

	mate_call_tensor(c, MATE_ARG, NULL, &tx);
	mate_call_tensor(c, MATE_ARG, NULL, &tw);
	mate_call_float(c, MATE_DEFAULT, "eps", 1e-6);
	mate_call_ready(c);
	if (never_return)
		_exit(3);  /* a crash inside the call: its inputs are on disk, no result */
	for (int r = 0; r < ROWS; r++) {
		double ss = 0;
		for (int i = 0; i < COLS; i++)
			ss += (double)x[r * COLS + i] * x[r * COLS + i];
		float inv = (float)(1 / sqrt(ss / COLS + 1e-6));
		for (int i = 0; i < COLS; i++)
			y[r * COLS + i] = x[r * COLS + i] * inv * w[i];
	}
	mate_call_tensor(c, MATE_RESULT, NULL, &ty);
	mate_call_end(c);
}

static void
mm(void)
{
	mate_tensor ta = tensor(a, 2, 16, 32, 0), tb = tensor(b, 2, 32, 8, 0);
	mate_tensor tr = tensor(ab, 2, 16, 8, 0);
	mate_call *c = mate_call_begin("mm", "docprog", "(a, b, out_dtype=None, out=None)");

	mate_call_tensor(c, MATE_ARG, NULL, &ta);
	mate_call_tensor(c, MATE_ARG, NULL, &tb);
	mate_call_ready(c);
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 8; j++) {
			double s = 0;
			for (int l = 0; l < 32; l++)
				s += (double)a[i * 32 + l] * b[l * 8 + j];
			ab[i * 8 + j] = (float)s;
		}
	mate_call_tensor(c, MATE_RESULT, NULL, &tr);
	mate_call_end(c);
}

/* Attention of nq query rows (the last nq positions of KV keys when causal) over KV keys
 * and values in NHD layout; query head h reads KV head h / (HQ / HK). */
static void
attention(int nq, int causal)
{
	float scale = 1.0f / sqrtf((float)DIM);

	for (int t = 0; t < nq; t++)
		for (int h = 0; h < HQ; h++) {
			int kh = h / (HQ / HK), nk = causal ? KV - nq + t + 1 : KV;
			double s[KV], m = -INFINITY, sum = 0;
			for (int j = 0; j < nk; j++) {
				double d = 0;
				for (int e = 0; e < DIM; e++)
					d += (double)q[(t * HQ + h) * DIM + e] * k[(j * HK + kh) * DIM + e];
				s[j] = d * scale;
				m = fmax(m, s[j]);
			}
			for (int j = 0; j < nk; j++)
				sum += (s[j] = exp(s[j] - m));
			for (int e = 0; e < DIM; e++) {
				double acc = 0;
				for (int j = 0; j < nk; j++)
					acc += s[j] * v[(j * HK + kh) * DIM + e];
				o[(t * HQ + h) * DIM + e] = (float)(acc / sum);
			}
		}
}

/* One attention call over q, k and v: qlen query rows, the causal mask recorded when set. */
static void
attention_call(const char *name, const char *sig, mate_tensor tq, mate_tensor to, int qlen,
    int causal)
{
	mate_tensor tk = tensor(k, 3, KV, HK, DIM), tv = tensor(v, 3, KV, HK, DIM);
	mate_call *c = mate_call_begin(name, "docprog", sig);

	mate_call_tensor(c, MATE_ARG, NULL, &tq);
	mate_call_tensor(c, MATE_ARG, NULL, &tk);
	mate_call_tensor(c, MATE_ARG, NULL, &tv);
	if (causal)
		mate_call_bool(c, MATE_KWARG, "causal", 1);
	mate_call_ready(c);
	attention(qlen, causal);
	mate_call_tensor(c, MATE_RESULT, NULL, &to);
	mate_call_end(c);
}

static void
decode(void)
{
	attention_call("single_decode_with_kv_cache",
	    "(q, k, v, kv_layout='NHD', pos_encoding_mode='NONE', use_tensor_cores=False, "
	    "q_scale=None, k_scale=None, v_scale=None, window_left=-1, logits_soft_cap=None, "
	    "sm_scale=None, rope_scale=None, rope_theta=None, return_lse=False)",
	    tensor(q, 2, HQ, DIM, 0), tensor(o, 2, HQ, DIM, 0), 1, 0);
}

static void
prefill(void)
{
	attention_call("single_prefill_with_kv_cache",
	    "(q, k, v, scale_q=None, scale_k=None, scale_v=None, o_dtype=None, custom_mask=None, "
	    "packed_custom_mask=None, causal=False, kv_layout='NHD', pos_encoding_mode='NONE', "
	    "use_fp16_qk_reduction=False, sm_scale=None, window_left=-1, logits_soft_cap=None, "
	    "rope_scale=None, rope_theta=None, backend='auto', return_lse=False)",
	    tensor(q, 3, QLEN, HQ, DIM), tensor(o, 3, QLEN, HQ, DIM), QLEN, 1);
}

int
main(int argc, char **argv)
{
	int fork_exit = argc > 1 && strcmp(argv[1], "--fork-exit") == 0;
	pid_t pid;
	int st;

	fill(x, ROWS * COLS, 1);
	fill(w, COLS, 2);
	fill(a, 16 * 32, 3);
	fill(b, 32 * 8, 4);
	fill(q, QLEN * HQ * DIM, 5);
	fill(k, KV * HK * DIM, 6);
	fill(v, KV * HK * DIM, 7);
	rmsnorm(COLS, 0);
	mm();
	decode();
	prefill();
	fflush(NULL);
	if ((pid = fork()) == 0 && fork_exit) {
		rmsnorm(COLS, 0);
		exit(0);
	}
	if (pid == 0)
		rmsnorm(COLS / 2, 1);
	if (pid > 0)
		waitpid(pid, &st, 0);
	printf("doc-program: 4 calls, and a child that died inside a fifth\n");
	return 0;
}
