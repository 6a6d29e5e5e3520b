/* minilib.h: a tiny tensor-operation library instrumented with libmate, used by the mate-demo workload. */
#ifndef MINILIB_H_INCLUDED
#define MINILIB_H_INCLUDED

#include <mate_core.h>

/* Every operation returns 0 on success or -1 with a message in
 * mini_last_error() (per thread). Work runs on the library's worker pool;
 * the calling thread waits for it, as a synchronous GPU API would. */
int mini_init(int workers);
void mini_shutdown(void);
const char *mini_last_error(void);

/* out = input / sqrt(mean(input^2, -1) + eps) * weight */
int mini_rmsnorm(const mate_tensor *input, const mate_tensor *weight, double eps,
    mate_tensor *out);
/* In place: residual += input; input = rmsnorm(residual) * weight. */
int mini_fused_add_rmsnorm(mate_tensor *input, mate_tensor *residual,
    const mate_tensor *weight, double eps);
/* out = silu(x[..., :d]) * x[..., d:] */
int mini_silu_and_mul(const mate_tensor *input, mate_tensor *out);
/* out (float32) = softmax(logits / temperature, -1) */
int mini_softmax(const mate_tensor *logits, double temperature, mate_tensor *out);
/* out = a @ b through CBLAS (float32 accumulation). */
int mini_mm(const mate_tensor *a, const mate_tensor *b, mate_tensor *out);

#endif /* MINILIB_H_INCLUDED */
