/* pt-read-check.c: test driver that reads a .pt with libmate and prints one line per tensor with a checksum of its storage.
 *
 * usage: pt-read-check FILE
 * Prints, for each tensor in depth-first order:
 *   dtype shape stride offset storage_nbytes sum
 * where sum = (sum over the storage's little-endian 64-bit words w_i of
 * w_i * (i + 1)) mod 2^64, the last word zero-padded: cheap to compute for
 * mostly-zero data from Python. Exit status: 0 ok, 1 read error, 2 usage.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mate_core.h"

static uint64_t
checksum(const unsigned char *p, size_t n)
{
	uint64_t sum = 0, i = 0, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		sum += w * ++i;
	}
	if (n > 0) {
		w = 0;
		memcpy(&w, p, n);
		sum += w * ++i;
	}
	return sum;
}

static void
dims(const int64_t *v, int n)
{
	putchar('[');
	for (int i = 0; i < n; i++)
		printf("%s%" PRId64, i ? "," : "", v[i]);
	putchar(']');
}

static void
walk(const mate_value *v)
{
	const mate_tensor *t = mate_value_get_tensor(v);

	if (t != NULL) {
		const mate_storage *st = mate_value_get_storage(v);
		printf("%s ", mate_dtype_name(t->dtype));
		dims(t->shape, t->ndim);
		putchar(' ');
		dims(t->stride, t->ndim);
		printf(" %" PRId64 " %zu %" PRIu64 "\n", t->offset, mate_storage_size(st),
		    checksum(mate_storage_data(st), mate_storage_size(st)));
		return;
	}
	for (size_t i = 0; i < mate_value_len(v); i++)
		walk(mate_value_item(v, i));
}

int
main(int argc, char **argv)
{
	mate_error err;
	mate_value *v;

	if (argc != 2) {
		fprintf(stderr, "usage: pt-read-check FILE\n");
		return 2;
	}
	v = mate_pt_read(argv[1], NULL, &err);
	if (v == NULL) {
		fprintf(stderr, "pt-read-check: %s\n", err.message);
		return 1;
	}
	walk(v);
	mate_value_free(v);
	return 0;
}
