/* fuzz_ring.c: libFuzzer target for flight recorder rings (MATE_RING's shared memory files): the head, the scan for complete entries, their payloads (half the inputs resealed, their checksums made to match, so that changed payloads are read), and the dumps written from them (mate-list-dumps --ring). */
#include "config.h"

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_tmp.h"
#include "ring.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("MATE_MAX_MEMORY", "64M", 1);
	fuzz_tmp_make("fuzz-ring");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char ring[300], out[300];
	struct mate_ring_stats st;
	mate_error err;
	FILE *f;

	fuzz_tmp_empty();
	snprintf(ring, sizeof(ring), "%s/ring", fuzz_tmp);
	snprintf(out, sizeof(out), "%s/out", fuzz_tmp);
	if ((f = fopen(ring, "wb")) == NULL)
		return 0;
	if (size > 0 && data[size - 1] & 1) {
		/* half the inputs resealed: their changed payloads pass the checksums */
		unsigned char *copy = malloc(size);

		if (copy != NULL) {
			memcpy(copy, data, size);
			mate_ring_reseal(copy, size);
			fwrite(copy, 1, size, f);
			free(copy);
		}
	} else
		fwrite(data, 1, size, f);
	fclose(f);
	mate_error_clear(&err);
	mate_ring_convert(ring, out, &st, &err);
	return 0;
}
