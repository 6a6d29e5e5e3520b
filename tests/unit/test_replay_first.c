/* test_replay_first.c: mate-replay --first's parts that need no dumps: XXH64 against the published vectors, and the records' timestamps as milliseconds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay_first.h"
#include "test.h"

DEFINE_TEST(xxh64_vectors)
{
	/* xxHash's own test values (xxhsum, python-xxhash) */
	CHECK(mate_first_xxh64("", 0, 0) == UINT64_C(0xef46db3751d8e999));
	CHECK(mate_first_xxh64("a", 1, 0) == UINT64_C(0xd24ec4f1a98c6e5b));
	CHECK(mate_first_xxh64("abc", 3, 0) == UINT64_C(0x44bc2cf5ad770999));
	CHECK(mate_first_xxh64("Nobody inspects the spammish repetition", 39, 0) ==
	    UINT64_C(0xfbcea83c8a378bf1));
}

DEFINE_TEST(xxh64_alignment_and_tails)
{
	unsigned char *buf = malloc(300), *copy = malloc(300);

	CHECK(buf != NULL && copy != NULL);
	if (buf == NULL || copy == NULL)
		goto out;
	for (int i = 0; i < 300; i++)
		buf[i] = (unsigned char)(i * 37 + 11);
	/* every length through the 32-byte stripes, 8- and 4-byte and 1-byte tails,
	 * from an odd address: the same as from an aligned copy, and seeds differ */
	for (size_t n = 0; n < 260; n++) {
		memcpy(copy, buf + 1, n);
		CHECK(mate_first_xxh64(buf + 1, n, 7) == mate_first_xxh64(copy, n, 7));
		CHECK(mate_first_xxh64(copy, n, 7) != mate_first_xxh64(copy, n, 8));
		if (n > 0)
			CHECK(mate_first_xxh64(copy, n, 0) != mate_first_xxh64(copy, n - 1, 0));
	}
out:
	free(buf);
	free(copy);
}

DEFINE_TEST(timestamps)
{
	CHECK(mate_first_timestamp_ms("19700101_000000_000") == 0);
	CHECK(mate_first_timestamp_ms("19700101_000001_002") == 1002);
	CHECK(mate_first_timestamp_ms("20000301_000000_000") == INT64_C(951868800000));
	CHECK(mate_first_timestamp_ms("20261231_235959_999") -
	    mate_first_timestamp_ms("20270101_000000_000") == -1);
	CHECK(mate_first_timestamp_ms("") == -1);
	CHECK(mate_first_timestamp_ms(NULL) == -1);
	CHECK(mate_first_timestamp_ms("20261301_000000_000") == -1);   /* month 13 */
	CHECK(mate_first_timestamp_ms("20261128_240000_000") == -1);   /* hour 24 */
	CHECK(mate_first_timestamp_ms("20261128-120000_000") == -1);
	CHECK(mate_first_timestamp_ms("20261128_120000_00") == -1);
	CHECK(mate_first_timestamp_ms("20261128_120000_0000") == -1);
	CHECK(mate_first_timestamp_ms("2026112a_120000_000") == -1);
}

TEST_MAIN()
