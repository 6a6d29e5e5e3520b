/* fuzz_bench_entry.c: libFuzzer target for mate-bench's problems: a profile line (JSON) and the
 * command-line form's KEY=SPEC words read back, and the made-up inputs of what reads. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mate_dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs e on a small memory cap with no timed runs (the kernels are fuzzed elsewhere). */
static void
run(mate_bench_entry *e)
{
	static mate_replay *r;
	struct mate_bench_result res;
	mate_error err;
	char *p;

	if (e == NULL)
		return;
	if (r == NULL && (r = mate_replay_new(&err)) == NULL)
		abort();
	p = mate_bench_entry_problem(e);
	free(p);
	mate_bench_run(r, e, 1, &res);
	mate_bench_entry_free(e);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *words[64], *save = NULL, *w;
	mate_error err;
	int n = 0;

	if (text == NULL)
		return 0;
	mate_memory_cap_set(1 << 20);
	memcpy(text, data, size);
	text[size] = '\0';
	run(mate_bench_entry_from_json(text, &err));
	for (w = strtok_r(text, " \n", &save); w != NULL && n < 64; w = strtok_r(NULL, " \n", &save))
		words[n++] = w;
	if (n > 0)
		run(mate_bench_entry_from_words(NULL, words[0], n - 1, words + 1, &err));
	free(text);
	return 0;
}
