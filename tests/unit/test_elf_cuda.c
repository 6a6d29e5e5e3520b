/* test_elf_cuda.c: mate_elf_cuda_runtime() on the test programs and libraries, and on broken input. */
#include "mate_record.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[4096];

static const char *
built(const char *rel)
{
	const char *top = getenv("top_builddir");

	snprintf(path, sizeof(path), "%s/%s", top ? top : ".", rel);
	return path;
}

/* The test programs: no runtime, a static one, a shared one. */
DEFINE_TEST(programs)
{
	mate_error err;
	int shared = access(built("tests/fakes/.libs/libcudart.so.13"), R_OK) == 0;

	CHECK_EQ_INT(mate_elf_cuda_runtime(built("tests/record-blas-prog"), &err), MATE_CUDART_NONE);
	CHECK_EQ_INT(mate_elf_cuda_runtime(built("tests/static-cudart-prog"), &err), MATE_CUDART_STATIC);
	/* the fake runtime is libcudart.so.13 in a shared build, linked in otherwise */
	CHECK_EQ_INT(mate_elf_cuda_runtime(built("tests/record-cuda-prog"), &err),
	    shared ? MATE_CUDART_SHARED : MATE_CUDART_STATIC);
	if (shared)
		CHECK_EQ_INT(mate_elf_cuda_runtime(built("tests/fakes/.libs/libcudart.so.13"), &err),
		    MATE_CUDART_SHARED);
}

/* A missing file, and files that are no ELF or a broken one. */
DEFINE_TEST(broken)
{
	mate_error err;
	unsigned char buf[256];

	CHECK(mate_elf_cuda_runtime(built("tests/nonexistent"), &err) == MATE_ERR_IO);
	CHECK_CONTAINS(err.message, "tests/nonexistent");
	CHECK_EQ_INT(mate_elf_cuda_runtime_buf("hello", 5, &err), MATE_ERR_FORMAT);
	/* a header that points its section table outside the file */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "\177ELF\2\1\1", 7);
	buf[0x28] = 0xf0;                   /* e_shoff = 0xf0 */
	buf[0x3a] = 64;                     /* e_shentsize */
	buf[0x3c] = 10;                     /* e_shnum */
	CHECK_EQ_INT(mate_elf_cuda_runtime_buf(buf, sizeof(buf), &err), MATE_ERR_FORMAT);
	CHECK_CONTAINS(err.message, "section header");
	buf[4] = 1;                         /* ELFCLASS32 */
	CHECK_EQ_INT(mate_elf_cuda_runtime_buf(buf, sizeof(buf), &err), MATE_ERR_UNSUPPORTED);
}

TEST_MAIN()
