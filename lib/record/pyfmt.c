/* pyfmt.c: the recorder's text buffer and Python-compatible spellings (float repr, str repr, json.dumps). */
#include "recorder_private.h"

#include <float.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double pow10_exact[23] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

/* The decimal digits of an integer below 2^64; returns how many. */
static int
u64_digits(uint64_t m, char *out)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = (char)('0' + m % 10);
	while ((m /= 10) != 0);
	for (int i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

void
mate_buf_fixed(struct mate_buf *b, double x, int decimals)
{
	double ax = fabs(x), y, r, frac, err;
	char tmp[48];
	uint64_t m, scale;
	int n = 0;

	if (isnan(x) || isinf(x)) {
		mate_buf_puts(b, isnan(x) ? "nan" : x < 0 ? "-inf" : "inf");
		return;
	}
	y = decimals >= 0 && decimals <= 15 ? ax * pow10_exact[decimals] : INFINITY;
	if (!(y < 4503599627370496.0)) { /* 2^52: y's fraction is exact below it */
		mate_buf_printf(b, "%.*f", decimals, x);
		return;
	}
	/* ax * 10^decimals is exactly y + err; round it half to even. y and
	 * the half-way points are doubles, so only an exact tie in y can turn
	 * on err. */
	err = fma(ax, pow10_exact[decimals], -y);
	r = floor(y);
	frac = y - r;
	if (frac > 0.5 || (frac == 0.5 && (err > 0 || (err == 0 && fmod(r, 2.0) != 0))))
		r += 1;
	m = (uint64_t)r;
	scale = (uint64_t)pow10_exact[decimals];
	if (signbit(x))
		tmp[n++] = '-';
	n += u64_digits(m / scale, tmp + n);
	if (decimals > 0) {
		tmp[n++] = '.';
		m %= scale;
		for (int i = decimals - 1; i >= 0; i--, m /= 10)
			tmp[n + i] = (char)('0' + m % 10);
		n += decimals;
	}
	mate_buf_put(b, tmp, (size_t)n);
}

/* ---- repr(float) -------------------------------------------------------------- */

/* When d (> 0) is exactly m * 10^-k with m below 10^15: no shorter string
 * reads back as d (any string of at most 15 digits that does is d rounded
 * to 15 digits), so m's digits are repr's. Needs no printf, whose cost
 * grows when a library (libquadmath) registers printf handlers. */
static int
exact_digits(double d, char *digits, int *exp10)
{
	for (int k = 0; k < 23; k++) {
		double y = d * pow10_exact[k];
		int n;
		if (!(y < 1e15))
			return 0;
		if (y != floor(y) || fma(d, pow10_exact[k], -y) != 0)
			continue;
		n = u64_digits((uint64_t)y, digits);
		*exp10 = n - 1 - k;
		while (n > 1 && digits[n - 1] == '0')
			n--;
		digits[n] = '\0';
		return n;
	}
	return 0;
}

/* The shortest "%.*e" that reads back as d (> 0), split into digits and
 * exponent. For normal numbers 15 digits read back exactly when any
 * shorter string does, and then the shortest is those digits without
 * trailing zeros; else 16, else 17 (always enough). Any character between the first digit and 'e' is
 * the decimal point, so a host program's LC_NUMERIC cannot confuse the
 * parse. */
static int
shortest_digits(double d, char *digits, int *exp10)
{
	char tmp[48], *e;
	int n = exact_digits(d, digits, exp10), prec;

	if (n > 0)
		return n;
	/* subnormals carry fewer digits: try every precision */
	for (prec = d < DBL_MIN ? 1 : 15; prec < 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	if (prec == 17)
		snprintf(tmp, sizeof(tmp), "%.16e", d);
	if ((e = strchr(tmp, 'e')) == NULL)
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

/* Python's repr() escapes of s without the quotes: quote (0: none) and '\\'
 * escaped, the rest as repr() writes it. */
static void
escaped(struct mate_buf *b, const char *s, size_t len, char quote)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int n = mate_utf8_decode(u + i, len - i, &cp);
		if (n == 0) {
			mate_buf_printf(b, "\\x%02x", u[i++]);
			continue;
		}
		if ((quote != 0 && cp == (uint32_t)quote) || cp == '\\') {
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
}

void
mate_buf_pystr(struct mate_buf *b, const char *s, size_t len)
{
	char quote = '\'';

	if (memchr(s, '\'', len) != NULL && memchr(s, '"', len) == NULL)
		quote = '"';
	mate_buf_putc(b, quote);
	escaped(b, s, len, quote);
	mate_buf_putc(b, quote);
}

char *
mate_text_escape(const char *s, size_t len)
{
	struct mate_buf b;

	mate_buf_init(&b);
	escaped(&b, s, len, 0);
	if (mate_buf_str(&b) == NULL) {
		mate_buf_free(&b);
		return NULL;
	}
	return b.p;
}

void
mate_buf_jsonstr(struct mate_buf *b, const char *s, size_t len)
{
	mate_buf_json(b, s, len, MATE_JSON_SHORT | MATE_JSON_ASCII);
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
mate_buf_dtype(struct mate_buf *b, mate_dtype dt)
{
	mate_buf_puts(b, "torch.");
	mate_buf_puts(b, mate_dtype_name(dt));
}
