/* mate-layers.c: a model's forward pass in miniature, for the worked example examples/find-the-bug.sh: LAYERS layers over a batch of TOKENS tokens, each rmsnorm, mm (up projection) and silu_and_mul through the instrumented minilib, every call's output the next call's input.
 *
 * usage: mate-layers [LAYERS [TOKENS]]   (default 8 layers of 4096 tokens)
 * Record it with MATE_LOGLEVEL=10 MATE_DUMP_DIR=DIR; plant a bug in the
 * library with MINILIB_FAULT=rmsnorm:N:ROW[:nan] (minilib.c).
 * Exit status: 0 done, 1 a call failed, 2 usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mate_core.h>

#include "minilib.h"

#define HIDDEN 64

static uint32_t
next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* n values in [-scale, scale) */
static float *
filled(size_t n, float scale, uint32_t *seed)
{
	float *p = malloc(n * sizeof(*p));

	for (size_t i = 0; p != NULL && i < n; i++)
		p[i] = ((float)(next_rand(seed) % 4096) / 2048.0f - 1.0f) * scale;
	return p;
}

int
main(int argc, char **argv)
{
	long layers = argc > 1 ? strtol(argv[1], NULL, 10) : 8;
	long tokens = argc > 2 ? strtol(argv[2], NULL, 10) : 4096;
	uint32_t seed = 2463534242u;
	int rc = 0;

	if (argc > 3 || layers < 1 || layers > 1000 || tokens < 1 || tokens > 1 << 20) {
		fprintf(stderr, "usage: mate-layers [LAYERS [TOKENS]] (1 to 1000 layers, "
		    "1 to 1048576 tokens)\n");
		return 2;
	}
	int64_t s_x[2] = { tokens, HIDDEN }, s_w[1] = { HIDDEN };
	int64_t s_up[2] = { HIDDEN, 2 * HIDDEN }, s_g[2] = { tokens, 2 * HIDDEN };
	size_t n = (size_t)tokens * HIDDEN;
	float *x = filled(n, 2, &seed), *y = filled(n, 1, &seed), *g = filled(2 * n, 1, &seed);
	float *w = filled(HIDDEN, 1, &seed), *up = filled(2 * HIDDEN * HIDDEN, 0.25f, &seed);
	mate_tensor tx, ty, tg, tw, tup;

	if (x == NULL || y == NULL || g == NULL || w == NULL || up == NULL || mini_init(2) != 0) {
		fprintf(stderr, "mate-layers: out of memory\n");
		return 1;
	}
	for (int j = 0; j < HIDDEN; j++)
		w[j] += 1.0f;  /* a norm's weight sits near 1 */
	mate_tensor_init(&tx, MATE_F32, 2, s_x, NULL, x);
	mate_tensor_init(&ty, MATE_F32, 2, s_x, NULL, y);
	mate_tensor_init(&tg, MATE_F32, 2, s_g, NULL, g);
	mate_tensor_init(&tw, MATE_F32, 1, s_w, NULL, w);
	mate_tensor_init(&tup, MATE_F32, 2, s_up, NULL, up);
	for (long l = 0; l < layers && rc == 0; l++)
		if ((rc = mini_rmsnorm(&tx, &tw, 1e-6, &ty)) == 0 &&
		    (rc = mini_mm(&ty, &tup, &tg)) == 0)
			rc = mini_silu_and_mul(&tg, &tx);
	if (rc != 0)
		fprintf(stderr, "mate-layers: %s\n", mini_last_error());
	else
		printf("mate-layers: %ld layers of %ld tokens\n", layers, tokens);
	mini_shutdown();
	free(x);
	free(y);
	free(g);
	free(w);
	free(up);
	return rc != 0;
}
