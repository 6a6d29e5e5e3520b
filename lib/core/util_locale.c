/* util_locale.c: the two locales libmate switches a thread to, made once. */
#include "util.h"

#include <pthread.h>

static pthread_once_t once[2] = { PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT };
static locale_t locales[2];

static void
make_c(void)
{
	locales[MATE_LOCALE_C] = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static void
make_utf8(void)
{
	locales[MATE_LOCALE_UTF8] = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

locale_t
mate_locale(int which)
{
	pthread_once(&once[which], which == MATE_LOCALE_C ? make_c : make_utf8);
	return locales[which];
}

locale_t
mate_locale_enter(int which)
{
	locale_t l = mate_locale(which);

	return l != (locale_t)0 ? uselocale(l) : (locale_t)0;
}

void
mate_locale_leave(locale_t old)
{
	if (old != (locale_t)0)
		uselocale(old);
}
