/* util_json.c: the one JSON string writer (dumps, safetensors headers, Perfetto traces, live frames, listings). */
#include "util.h"

#include <string.h>

int
mate_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	int len;
	uint32_t c = s[0], min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0)
		len = 2, c &= 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		len = 3, c &= 0x0f, min = 0x800;
	else if ((c & 0xf8) == 0xf0)
		len = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	if ((size_t)len > n)
		return 0;
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Whether byte c is copied as it is under flags. */
static int
plain(unsigned char c, unsigned flags)
{
	if (c < 0x20 || c == '"' || c == '\\')
		return 0;
	if (c < 0x7f)
		return 1;
	if (flags & MATE_JSON_ASCII)
		return 0;
	return c == 0x7f || !(flags & MATE_JSON_UTF8);
}

static const char hex[] = "0123456789abcdef";

/* "\uXXXX" for a code point below 0x10000 into o (6 bytes). */
static void
u_escape(char *o, uint32_t cp)
{
	o[0] = '\\';
	o[1] = 'u';
	o[2] = hex[(cp >> 12) & 15];
	o[3] = hex[(cp >> 8) & 15];
	o[4] = hex[(cp >> 4) & 15];
	o[5] = hex[cp & 15];
}

/* The escape of the character at u (not plain) into esc; returns its
 * length and sets *used to the bytes it stands for. */
static size_t
escape_one(const unsigned char *u, size_t len, unsigned flags, char esc[12], size_t *used)
{
	static const char special[] = "\b\t\n\f\r", letter[] = "btnfr";
	const char *e;
	uint32_t cp = u[0];
	int n;

	*used = 1;
	if (cp == '"' || cp == '\\') {
		esc[0] = '\\';
		esc[1] = (char)cp;
		return 2;
	}
	if (cp < 0x20) {
		if ((flags & MATE_JSON_SHORT) && cp != 0 && (e = strchr(special, (int)cp)) != NULL) {
			esc[0] = '\\';
			esc[1] = letter[e - special];
			return 2;
		}
		u_escape(esc, cp);
		return 6;
	}
	n = mate_utf8_decode(u, len, &cp);
	if (flags & MATE_JSON_ASCII) {
		if (n == 0)
			cp = u[0];
		else
			*used = (size_t)n;
		if (cp < 0x10000) {
			u_escape(esc, cp);
			return 6;
		}
		cp -= 0x10000;
		u_escape(esc, 0xd800 + (cp >> 10));
		u_escape(esc + 6, 0xdc00 + (cp & 0x3ff));
		return 12;
	}
	/* MATE_JSON_UTF8: a well-formed sequence as it is, else U+FFFD */
	if (n > 0) {
		memcpy(esc, u, (size_t)n);
		*used = (size_t)n;
		return (size_t)n;
	}
	memcpy(esc, "\\ufffd", 6);
	return 6;
}

void
mate_json_string(const char *s, size_t len, unsigned flags,
    void (*put)(void *ctx, const char *p, size_t n), void *ctx)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	put(ctx, "\"", 1);
	while (i < len) {
		size_t run = 0, used, n;
		char esc[12];

		while (i + run < len && plain(u[i + run], flags))
			run++;
		if (run > 0) {
			put(ctx, s + i, run);
			i += run;
			continue;
		}
		n = escape_one(u + i, len - i, flags, esc, &used);
		put(ctx, esc, n);
		i += used;
	}
	put(ctx, "\"", 1);
}
