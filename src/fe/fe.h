/* fe.h: libmate_fe, the small helpers every mate tool shares (program name, err(3)-style messages, option parsing); not installed. */
#ifndef MATE_FE_H_INCLUDED
#define MATE_FE_H_INCLUDED

#include <stdio.h>

#if defined(__GNUC__)
#define FE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define FE_NORETURN __attribute__((noreturn))
#else
#define FE_PRINTF(a, b)
#define FE_NORETURN
#endif

/* Exit statuses shared by the tools (each man page's EXIT STATUS). */
enum {
	FE_EXIT_OK = 0,
	FE_EXIT_FAILURE = 1,  /* an input or output failed */
	FE_EXIT_USAGE = 2     /* bad options or arguments */
};

/* Sets the name messages start with (basename of argv0). */
void fe_set_progname(const char *argv0);
const char *fe_progname(void);

/* "progname: message" on stderr (warnx); fe_warn adds ": strerror(errno)". */
void fe_warnx(const char *fmt, ...) FE_PRINTF(1, 2);
void fe_warn(const char *fmt, ...) FE_PRINTF(1, 2);
/* The same, then exit(status). */
void fe_errx(int status, const char *fmt, ...) FE_PRINTF(2, 3) FE_NORETURN;
void fe_err(int status, const char *fmt, ...) FE_PRINTF(2, 3) FE_NORETURN;
/* "progname: message" and "Try 'progname --help'." on stderr, exit 2. */
void fe_usage_error(const char *fmt, ...) FE_PRINTF(1, 2) FE_NORETURN;
/* "<tool> (mate) X.Y.Z" and "libmate X.Y.Z" on stdout. */
void fe_print_version(void);

/* Option values. Each returns 0, or -1 when s is not a whole number in
 * range (no trailing text, finite). */
int fe_parse_double(const char *s, double lo, double hi, double *out);
int fe_parse_long(const char *s, long lo, long hi, long *out);
/* Same, but on failure: usage error naming the option. */
double fe_opt_double(const char *opt, const char *s, double lo, double hi);
long fe_opt_long(const char *opt, const char *s, long lo, long hi);

/* The extension of path after its last '.', lower-cased into buf ("" if
 * none); ".gz" is looked through: "a.json.gz" gives "json.gz". */
const char *fe_extension(const char *path, char *buf, size_t cap);

#endif /* MATE_FE_H_INCLUDED */
