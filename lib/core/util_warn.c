/* util_warn.c: the one "mate: ..." warning writer of the library and the preload interposer. */
#include "util.h"

#include <stdio.h>
#include <unistd.h>

void
mate_vwarn(const char *fmt, va_list ap)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "mate: ");

	n += vsnprintf(msg + n, sizeof(msg) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	(void)!write(STDERR_FILENO, msg, (size_t)n);
}

void
mate_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mate_vwarn(fmt, ap);
	va_end(ap);
}
