/* util.h: the utility layer shared inside mate (warnings, growable text, JSON strings, name patterns); never installed. */
#ifndef MATE_UTIL_H_INCLUDED
#define MATE_UTIL_H_INCLUDED

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* As mate_private.h spells them (that header is not for the frontends and
 * the preload library, which build some of these files too). */
#ifndef MATE_HIDDEN
#if defined(__GNUC__)
#define MATE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define MATE_HIDDEN __attribute__((visibility("hidden")))
#else
#define MATE_PRINTF(a, b)
#define MATE_HIDDEN
#endif
#endif

/* ---- warnings (util_warn.c; also built into libmate-preload.so) ------------- */

/* "mate: MESSAGE\n" on stderr in one write(2), cut to 1 KiB: a recorder
 * inside someone else's program says what went wrong without stdio. */
void mate_warn(const char *fmt, ...) MATE_PRINTF(1, 2) MATE_HIDDEN;
void mate_vwarn(const char *fmt, va_list ap) MATE_PRINTF(1, 0) MATE_HIDDEN;

#endif /* MATE_UTIL_H_INCLUDED */
