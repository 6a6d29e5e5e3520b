/* util_tmp.c: mate_tmp_create(), the one way mate makes a temporary file beside the file it will be renamed to, and its names; needs only libc (the tools that write beside libmate build it in). */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* "<path>.tmp.<pid>.<16 hex digits>", the digits from getrandom() (a
 * clock and a counter where it has nothing), so that no one can plant a
 * file at the name beforehand; without printf, whose cost grows when a
 * library of the host (libquadmath) registers printf handlers, and which
 * a signal handler may not call. out has room for path and 64 more bytes. */
void
mate_tmp_name(char *out, const char *path)
{
	static const char hex[] = "0123456789abcdef";
	static uint64_t counter;
	size_t len = strlen(path);
	uint64_t v = (uint64_t)getpid(), r;
	char num[24];
	int k = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		uint64_t seed[3] = { mate_mono_ns(), __atomic_fetch_add(&counter, 1,
		    __ATOMIC_RELAXED), v };
		r = mate_fnv1a64(seed, sizeof(seed));
	}
	memcpy(out, path, len);
	memcpy(out + len, ".tmp.", 5);
	len += 5;
	do
		num[k++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (k > 0)
		out[len++] = num[--k];
	out[len++] = '.';
	for (int i = 60; i >= 0; i -= 4)
		out[len++] = hex[(r >> i) & 15];
	out[len] = '\0';
}

int
mate_tmp_create(char *out, const char *path)
{
	int fd, tries = 0;

	do {
		mate_tmp_name(out, path);
		fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    0644);
	} while (fd < 0 && errno == EEXIST && ++tries < 8);
	return fd >= 0 ? fd : -errno;
}
