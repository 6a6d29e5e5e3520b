/* pyfmt.c: the recorder's text buffer and Python-compatible spellings (float repr, str repr, json.dumps). */
#include "recorder_private.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffer ----------------------------------------------------------------- */

void
mate_buf_init(struct mate_buf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}

void
mate_buf_free(struct mate_buf *b)
{
	free(b->p);
	mate_buf_init(b);
}

static int
reserve(struct mate_buf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return 0;
	if (b->len + n + 1 <= b->cap)
		return 1;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n + 1) {
		if (cap > SIZE_MAX / 2) {
			b->oom = 1;
			return 0;
		}
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = 1;
		return 0;
	}
	b->p = p;
	b->cap = cap;
	return 1;
}

void
mate_buf_put(struct mate_buf *b, const char *s, size_t n)
{
	if (n == 0 || !reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

void
mate_buf_puts(struct mate_buf *b, const char *s)
{
	mate_buf_put(b, s, strlen(s));
}

void
mate_buf_putc(struct mate_buf *b, char ch)
{
	if (!reserve(b, 1))
		return;
	b->p[b->len++] = ch;
}

void
mate_buf_printf(struct mate_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!reserve(b, 64))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		if (!reserve(b, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void
mate_buf_int(struct mate_buf *b, int64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--p = '-';
	mate_buf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

void
mate_buf_hex(struct mate_buf *b, uint64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);

	do
		*--p = "0123456789abcdef"[v & 15];
	while ((v >>= 4) != 0);
	*--p = 'x';
	*--p = '0';
	mate_buf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

void
mate_buf_spaces(struct mate_buf *b, int n)
{
	if (n <= 0 || !reserve(b, (size_t)n))
		return;
	memset(b->p + b->len, ' ', (size_t)n);
	b->len += (size_t)n;
}

const char *
mate_buf_str(struct mate_buf *b)
{
	if (!reserve(b, 0))
		return NULL;
	b->p[b->len] = '\0';
	return b->p;
}

/* ---- repr(float) -------------------------------------------------------------- */

/* The shortest "%.*e" that reads back as d, split into digits and exponent.
 * Any character between the first digit and 'e' is the decimal point, so a
 * host program's LC_NUMERIC cannot confuse the parse. */
static int
shortest_digits(double d, char *digits, int *exp10)
{
	char tmp[48];
	int n = 0, lo = 1, hi = 17;

	/* Reading back is monotonic in the precision: bisect for the least
	 * precision that round-trips (17 always does). */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		snprintf(tmp, sizeof(tmp), "%.*e", mid - 1, d);
		if (strtod(tmp, NULL) == d)
			hi = mid;
		else
			lo = mid + 1;
	}
	snprintf(tmp, sizeof(tmp), "%.*e", lo - 1, d);
	char *e = strchr(tmp, 'e');
	if (e == NULL)
		return 0;
	for (char *p = tmp; p < e; p++)
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	*exp10 = atoi(e + 1);
	return n;
}

size_t
mate_py_float_repr(double d, char *buf)
{
	char digits[24];
	int exp10 = 0, n, len = 0;

	if (isnan(d))
		return (size_t)snprintf(buf, MATE_PYFLOAT_MAX, "nan");
	if (isinf(d))
		return (size_t)snprintf(buf, MATE_PYFLOAT_MAX, d < 0 ? "-inf" : "inf");
	if (d == 0)
		return (size_t)snprintf(buf, MATE_PYFLOAT_MAX, signbit(d) ? "-0.0" : "0.0");
	if (d < 0) {
		buf[len++] = '-';
		d = -d;
	}
	n = shortest_digits(d, digits, &exp10);
	if (exp10 < -4 || exp10 >= 16) {
		buf[len++] = digits[0];
		if (n > 1) {
			buf[len++] = '.';
			memcpy(buf + len, digits + 1, (size_t)n - 1);
			len += n - 1;
		}
		len += snprintf(buf + len, MATE_PYFLOAT_MAX - len, "e%c%02d",
		    exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
		return (size_t)len;
	}
	if (exp10 < 0) {
		buf[len++] = '0';
		buf[len++] = '.';
		for (int i = 0; i < -exp10 - 1; i++)
			buf[len++] = '0';
		memcpy(buf + len, digits, (size_t)n);
		len += n;
	} else {
		for (int i = 0; i <= exp10; i++)
			buf[len++] = i < n ? digits[i] : '0';
		buf[len++] = '.';
		if (n > exp10 + 1) {
			memcpy(buf + len, digits + exp10 + 1, (size_t)(n - exp10 - 1));
			len += n - exp10 - 1;
		} else
			buf[len++] = '0';
	}
	buf[len] = '\0';
	return (size_t)len;
}

/* ---- strings ---------------------------------------------------------------- */

/* Decodes one UTF-8 sequence at s (n bytes left); returns its length, or 0
 * for an invalid byte. */
static int
utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
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

/* Python's str.isprintable() for the code points that usually matter. */
static int
py_printable(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad)
		return 0;
	if ((cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f) ||
	    (cp >= 0x2060 && cp <= 0x206f) || cp == 0x3000 || cp == 0xfeff ||
	    cp == 0x1680 || cp == 0x205f || (cp >= 0xe000 && cp <= 0xf8ff) ||
	    (cp >= 0xfff9 && cp <= 0xfffb) || cp >= 0xf0000)
		return 0;
	return 1;
}

void
mate_buf_pystr(struct mate_buf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	char quote = '\'';

	if (memchr(s, '\'', len) != NULL && memchr(s, '"', len) == NULL)
		quote = '"';
	mate_buf_putc(b, quote);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int n = utf8_decode(u + i, len - i, &cp);
		if (n == 0) {
			mate_buf_printf(b, "\\x%02x", u[i++]);
			continue;
		}
		if (cp == (uint32_t)quote || cp == '\\') {
			mate_buf_putc(b, '\\');
			mate_buf_putc(b, (char)cp);
		} else if (cp == '\n')
			mate_buf_puts(b, "\\n");
		else if (cp == '\r')
			mate_buf_puts(b, "\\r");
		else if (cp == '\t')
			mate_buf_puts(b, "\\t");
		else if (py_printable(cp))
			mate_buf_put(b, s + i, (size_t)n);
		else if (cp < 0x100)
			mate_buf_printf(b, "\\x%02x", (unsigned)cp);
		else if (cp < 0x10000)
			mate_buf_printf(b, "\\u%04x", (unsigned)cp);
		else
			mate_buf_printf(b, "\\U%08x", (unsigned)cp);
		i += (size_t)n;
	}
	mate_buf_putc(b, quote);
}

void
mate_buf_jsonstr(struct mate_buf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	mate_buf_putc(b, '"');
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t run = 0;
		int n;

		while (i + run < len && u[i + run] >= 0x20 && u[i + run] < 0x7f &&
		    u[i + run] != '"' && u[i + run] != '\\')
			run++;
		if (run > 0) {
			mate_buf_put(b, s + i, run);
			i += run;
			continue;
		}
		n = utf8_decode(u + i, len - i, &cp);
		if (n == 0) {
			cp = u[i];
			n = 1;
		}
		i += (size_t)n;
		if (cp >= 0x20 && cp < 0x7f && cp != '"' && cp != '\\') {
			mate_buf_putc(b, (char)cp);
			continue;
		}
		switch (cp) {
		case '"': mate_buf_puts(b, "\\\""); break;
		case '\\': mate_buf_puts(b, "\\\\"); break;
		case '\n': mate_buf_puts(b, "\\n"); break;
		case '\r': mate_buf_puts(b, "\\r"); break;
		case '\t': mate_buf_puts(b, "\\t"); break;
		case '\b': mate_buf_puts(b, "\\b"); break;
		case '\f': mate_buf_puts(b, "\\f"); break;
		default:
			if (cp >= 0x10000) {
				cp -= 0x10000;
				mate_buf_printf(b, "\\u%04x\\u%04x", 0xd800 + (unsigned)(cp >> 10),
				    0xdc00 + (unsigned)(cp & 0x3ff));
			} else
				mate_buf_printf(b, "\\u%04x", (unsigned)cp);
		}
	}
	mate_buf_putc(b, '"');
}

void
mate_buf_jsonfloat(struct mate_buf *b, double d)
{
	char tmp[MATE_PYFLOAT_MAX];

	if (isnan(d))
		mate_buf_puts(b, "NaN");
	else if (isinf(d))
		mate_buf_puts(b, d < 0 ? "-Infinity" : "Infinity");
	else
		mate_buf_put(b, tmp, mate_py_float_repr(d, tmp));
}

void
mate_buf_cjson(struct mate_buf *b, const cJSON *item)
{
	const cJSON *it;

	switch (item->type & 0xff) {
	case cJSON_NULL:
		mate_buf_puts(b, "null");
		break;
	case cJSON_False:
		mate_buf_puts(b, "false");
		break;
	case cJSON_True:
		mate_buf_puts(b, "true");
		break;
	case cJSON_Number:
		if (fabs(item->valuedouble) < 9007199254740992.0 &&
		    item->valuedouble == (double)(int64_t)item->valuedouble)
			mate_buf_printf(b, "%lld", (long long)item->valuedouble);
		else
			mate_buf_jsonfloat(b, item->valuedouble);
		break;
	case cJSON_String:
		mate_buf_jsonstr(b, item->valuestring, strlen(item->valuestring));
		break;
	case cJSON_Raw:
		mate_buf_puts(b, item->valuestring);
		break;
	case cJSON_Array:
	case cJSON_Object:
		mate_buf_putc(b, (item->type & 0xff) == cJSON_Array ? '[' : '{');
		for (it = item->child; it != NULL; it = it->next) {
			if (it != item->child)
				mate_buf_puts(b, ", ");
			if ((item->type & 0xff) == cJSON_Object) {
				mate_buf_jsonstr(b, it->string, strlen(it->string));
				mate_buf_puts(b, ": ");
			}
			mate_buf_cjson(b, it);
		}
		mate_buf_putc(b, (item->type & 0xff) == cJSON_Array ? ']' : '}');
		break;
	default:
		mate_buf_puts(b, "null");
	}
}

void
mate_buf_dtype(struct mate_buf *b, mate_dtype dt)
{
	mate_buf_puts(b, "torch.");
	mate_buf_puts(b, mate_dtype_name(dt));
}
