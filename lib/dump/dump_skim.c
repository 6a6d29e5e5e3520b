/* dump_skim.c: an allocation-free, validating scan of one JSON record that locates its top-level members (the listing's fast path; cJSON does the full parse elsewhere). */
#include "mate_private.h"
#include "dump_private.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SKIM_DEPTH 128

struct skim {
	const char *p, *end;
	int deep;             /* a value deeper than SKIM_DEPTH was skipped */
};

static int skim_value(struct skim *s, int depth);

static void
ws(struct skim *s)
{
	const char *p = s->p, *end = s->end;

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	s->p = p;
}

static int
word(struct skim *s, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
		return 0;
	s->p += n;
	return 1;
}

static int
is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Four hex digits at p (before end), or 0x10000 when there are none. */
static unsigned
hex4(const char *p, const char *end)
{
	unsigned v = 0;

	if (end - p < 4)
		return 0x10000;
	for (int i = 0; i < 4; i++) {
		char c = p[i];

		if (!is_hex(c))
			return 0x10000;
		v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	return v;
}

/* Whether any of the 8 bytes of v ends a string's plain run: '"', '\\' or
 * a control character (below 0x20). Exact, as the has-zero-byte test is. */
static int
run_ends(uint64_t v)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');

	return (((q - ones) & ~q) | ((b - ones) & ~b) | ((v - ones * 0x20) & ~v)) & highs ? 1 : 0;
}

/* A string at s->p (the opening quote); *has_escape tells whether to unescape.
 * Local pointers: a char store through s->p could alias, and the plain runs
 * between quotes and escapes are skipped eight bytes at a time. */
static int
skim_string(struct skim *s, int *has_escape)
{
	const char *p = s->p + 1, *end = s->end;

	for (;;) {
		unsigned char c;

		while (end - p >= 8) {
			uint64_t v;

			memcpy(&v, p, 8);
			if (run_ends(v))
				break;
			p += 8;
		}
		while (p < end && (c = (unsigned char)*p) != '"' && c != '\\' && c >= 0x20)
			p++;
		if (p >= end)
			return 0;
		c = (unsigned char)*p;
		if (c == '"') {
			s->p = p + 1;
			return 1;
		}
		if (c < 0x20)
			return 0;
		/* a backslash */
		*has_escape = 1;
		if (end - p < 2)
			return 0;
		c = (unsigned char)p[1];
		if (c == 'u') {
			unsigned u = hex4(p + 2, end);

			/* a surrogate must be a high one followed by a low one */
			if (u > 0xffff || (u >= 0xdc00 && u <= 0xdfff))
				return 0;
			p += 6;
			if (u >= 0xd800 && u <= 0xdbff) {
				unsigned lo = end - p >= 2 && p[0] == '\\' && p[1] == 'u' ?
				    hex4(p + 2, end) : 0x10000;

				if (lo < 0xdc00 || lo > 0xdfff)
					return 0;
				p += 6;
			}
			continue;
		}
		if (c == '\0' || !strchr("\"\\/bfnrt", c))
			return 0;
		p += 2;
	}
}

static int
digits(struct skim *s)
{
	const char *start = s->p, *p = start, *end = s->end;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	s->p = p;
	return p > start;
}

static int
skim_number(struct skim *s)
{
	if (s->p < s->end && *s->p == '-') {
		s->p++;
		if (word(s, "Infinity"))
			return 1;
	}
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else if (!digits(s))
		return 0;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!digits(s))
			return 0;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!digits(s))
			return 0;
	}
	return 1;
}

/* Steps into the bracket at s->p; 1 where its closing one follows at once
 * (stepped over too), else 0. */
static int
skim_empty(struct skim *s, char close)
{
	s->p++;
	ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return 1;
	}
	return 0;
}

/* After an item: steps over a ',' (1: another item follows) or the closing
 * bracket (0: the end); -1 on anything else. */
static int
skim_next(struct skim *s, char close)
{
	ws(s);
	if (s->p < s->end && (*s->p == ',' || *s->p == close))
		return *s->p++ == ',';
	return -1;
}

/* The object at s->p; its members go to m[0..max) when m is not NULL. */
static int
skim_object(struct skim *s, int depth, struct mate_skim_member *m, size_t max, size_t *n)
{
	int more;

	if (skim_empty(s, '}'))
		return 1;
	do {
		const char *k;
		int esc = 0, keep;

		ws(s);
		if (s->p >= s->end || *s->p != '"')
			return 0;
		k = s->p + 1;
		if (!skim_string(s, &esc))
			return 0;
		keep = m != NULL && *n < max;
		if (keep) {
			m[*n].key = k;
			m[*n].klen = (size_t)(s->p - 1 - k);
		}
		ws(s);
		if (s->p >= s->end || *s->p++ != ':')
			return 0;
		ws(s);
		if (keep)
			m[*n].val = s->p;
		if (!skim_value(s, depth + 1))
			return 0;
		if (keep) {
			m[*n].vlen = (size_t)(s->p - m[*n].val);
			(*n)++;
		}
	} while ((more = skim_next(s, '}')) > 0);
	return more == 0;
}

/* An array; *count gets its items when count is not NULL. */
static int
skim_array(struct skim *s, int depth, size_t *count)
{
	size_t c = 0;
	int more = 0;

	if (!skim_empty(s, ']'))
		do {
			if (!skim_value(s, depth + 1))
				return 0;
			c++;
		} while ((more = skim_next(s, ']')) > 0);
	if (more < 0)
		return 0;
	if (count != NULL)
		*count = c;
	return 1;
}

/* An object or array nested deeper than SKIM_DEPTH, skipped by matching
 * brackets without recursion (strings are still checked): s->deep makes
 * the caller check the record with the full parser. */
static int
skip_deep(struct skim *s)
{
	size_t open = 0;
	int esc = 0;

	s->deep = 1;
	do {
		ws(s);
		if (s->p >= s->end)
			return 0;
		switch (*s->p) {
		case '{':
		case '[':
			open++;
			s->p++;
			break;
		case '}':
		case ']':
			open--;
			s->p++;
			break;
		case '"':
			if (!skim_string(s, &esc))
				return 0;
			break;
		default:
			s->p++;
		}
	} while (open > 0);
	return 1;
}

static int
skim_value(struct skim *s, int depth)
{
	int esc = 0;
	size_t n = 0;

	ws(s);
	if (s->p >= s->end)
		return 0;
	switch (*s->p) {
	case '{': return depth > SKIM_DEPTH ? skip_deep(s) : skim_object(s, depth, NULL, 0, &n);
	case '[': return depth > SKIM_DEPTH ? skip_deep(s) : skim_array(s, depth, NULL);
	case '"': return skim_string(s, &esc);
	case 't': return word(s, "true");
	case 'f': return word(s, "false");
	case 'n': return word(s, "null");
	case 'N': return word(s, "NaN");
	case 'I': return word(s, "Infinity");
	default: return skim_number(s);
	}
}

int
mate_skim_object(const char *p, size_t len, struct mate_skim_member *m, size_t max, size_t *n)
{
	struct skim s = { p, p + len, 0 };

	*n = 0;
	ws(&s);
	if (s.p >= s.end || *s.p != '{' || !skim_object(&s, 0, m, max, n))
		return 0;
	ws(&s);
	return s.p != s.end ? 0 : s.deep ? 2 : 1;
}

int
mate_skim_array_len(const char *p, size_t len, size_t *count)
{
	struct skim s = { p, p + len, 0 };

	*count = 0;
	ws(&s);
	return s.p < s.end && *s.p == '[' && skim_array(&s, 0, count);
}

const struct mate_skim_member *
mate_skim_find(const struct mate_skim_member *m, size_t n, const char *key)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i < n; i++)
		if (m[i].klen == kl && memcmp(m[i].key, key, kl) == 0)
			return &m[i];
	return NULL;
}
