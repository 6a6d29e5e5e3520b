/* fe.c: libmate_fe: program name, err(3)-style messages and option parsing shared by the mate tools. */
#include "config.h"
#include "fe.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mate.h"

static const char *progname = "mate";

void
fe_set_progname(const char *argv0)
{
	const char *s;

	if (argv0 == NULL || argv0[0] == '\0')
		return;
	s = strrchr(argv0, '/');
	progname = s != NULL ? s + 1 : argv0;
	if (strncmp(progname, "lt-", 3) == 0)   /* libtool's wrapper */
		progname += 3;
}

const char *
fe_progname(void)
{
	return progname;
}

static void
vmsg(int errnum, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", progname);
	vfprintf(stderr, fmt, ap);
	if (errnum != 0)
		fprintf(stderr, ": %s", strerror(errnum));
	fputc('\n', stderr);
}

void
fe_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(0, fmt, ap);
	va_end(ap);
}

void
fe_warn(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(e, fmt, ap);
	va_end(ap);
}

void
fe_errx(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(0, fmt, ap);
	va_end(ap);
	exit(status);
}

void
fe_err(int status, const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(e, fmt, ap);
	va_end(ap);
	exit(status);
}

void
fe_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(0, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help'.\n", progname);
	exit(FE_EXIT_USAGE);
}

void
fe_print_version(void)
{
	printf("%s (mate) %s\nlibmate %s\n", progname, PACKAGE_VERSION, mate_version_string());
}

int
fe_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int
fe_parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

double
fe_opt_double(const char *opt, const char *s, double lo, double hi)
{
	double v;

	if (fe_parse_double(s, lo, hi, &v) != 0)
		fe_usage_error("%s: '%s': expected a number from %g to %g", opt, s, lo, hi);
	return v;
}

long
fe_opt_long(const char *opt, const char *s, long lo, long hi)
{
	long v;

	if (fe_parse_long(s, lo, hi, &v) != 0)
		fe_usage_error("%s: '%s': expected a whole number from %ld to %ld", opt, s, lo, hi);
	return v;
}

const char *
fe_extension(const char *path, char *buf, size_t cap)
{
	const char *base = strrchr(path, '/'), *dot;
	size_t i, n;

	base = base != NULL ? base + 1 : path;
	dot = strrchr(base, '.');
	if (dot != NULL && dot > base && strcasecmp(dot, ".gz") == 0) {
		const char *p = dot - 1;
		while (p > base && *p != '.')
			p--;
		if (*p == '.' && p > base)
			dot = p;
	}
	if (cap == 0)
		return buf;
	if (dot == NULL || dot == base) {
		buf[0] = '\0';
		return buf;
	}
	n = strlen(dot + 1);
	for (i = 0; i < n && i + 1 < cap; i++)
		buf[i] = (char)tolower((unsigned char)dot[1 + i]);
	buf[i] = '\0';
	return buf;
}
