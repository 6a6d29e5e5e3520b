/* dump_value.c: recorded non-tensor values to mate_value trees: structured JSON, MATE's Python-literal strings, and brief formatting. */
#include "mate_private.h"
#include "dump_private.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

/* ---- Python literals ------------------------------------------------------ */

struct lit {
	const char *start, *p, *end;
	int depth;
	mate_error *err;
};

static mate_value *lit_value(struct lit *l);

static void
lit_ws(struct lit *l)
{
	while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
		l->p++;
}

static mate_value *
lit_fail(struct lit *l, const char *what)
{
	mate_set_error(l->err, MATE_ERR_FORMAT, "Python literal: %s at offset %td",
	    what, l->p - l->start);
	return NULL;
}

static int
lit_is(struct lit *l, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(l->end - l->p) < n || memcmp(l->p, word, n) != 0)
		return 0;
	if ((size_t)(l->end - l->p) > n && (isalnum((unsigned char)l->p[n]) || l->p[n] == '_'))
		return 0;
	l->p += n;
	return 1;
}

/* Appends code point cp as UTF-8. */
static size_t
put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int
hexval(const char *p, int n, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < n; i++) {
		int c = (unsigned char)p[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return 0;
		v = v * 16 + (uint32_t)d;
	}
	*out = v;
	return 1;
}

/* One escape after the backslash at l->p; writes its bytes to o. */
static int
lit_escape(struct lit *l, int bytes, char *o, size_t *on)
{
	char c = *l->p++, simple;
	int n = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
	uint32_t cp;

	switch (c) {
	case '\\': case '\'': case '"': simple = c; break;
	case 'n': simple = '\n'; break;
	case 't': simple = '\t'; break;
	case 'r': simple = '\r'; break;
	case 'b': simple = '\b'; break;
	case 'f': simple = '\f'; break;
	case 'v': simple = '\v'; break;
	case 'a': simple = '\a'; break;
	case '0': simple = '\0'; break;
	default: simple = 1; break;
	}
	if (simple != 1) {
		o[(*on)++] = simple;
		return 1;
	}
	if (n == 0 || (bytes && n != 2) || l->end - l->p < n || !hexval(l->p, n, &cp) || cp > 0x10ffff)
		return 0;
	l->p += n;
	if (bytes)
		o[(*on)++] = (char)cp;
	else
		*on += put_utf8(o + *on, cp);
	return 1;
}

static mate_value *
lit_string(struct lit *l, int bytes)
{
	char q = *l->p++;
	const char *start = l->p, *end;
	char *buf;
	size_t n = 0;
	mate_value *v;

	while (l->p < l->end && *l->p != q)
		l->p += *l->p == '\\' && l->p + 1 < l->end ? 2 : 1;
	if (l->p >= l->end)
		return lit_fail(l, "unterminated string");
	buf = malloc((size_t)(l->p - start) * 2 + 1);
	if (buf == NULL)
		return NULL;
	end = l->p;
	for (const char *s = start; s < end;) {
		if (*s != '\\') {
			buf[n++] = *s++;
			continue;
		}
		l->p = s + 1;
		if (!lit_escape(l, bytes, buf, &n)) {
			free(buf);
			return lit_fail(l, "bad escape");
		}
		s = l->p;
	}
	l->p = end + 1;
	v = bytes ? mate_value_bytes(buf, n) : mate_value_str(buf, n);
	free(buf);
	return v;
}

static mate_value *
lit_number(struct lit *l)
{
	const char *s = l->p;
	char buf[64];
	int is_float = 0;
	size_t n;

	if (l->p >= l->end)
		return lit_fail(l, "expected a number");
	if (*l->p == '-' || *l->p == '+')
		l->p++;
	if (lit_is(l, "inf"))
		return mate_value_float(*s == '-' ? -INFINITY : INFINITY);
	if (lit_is(l, "nan"))
		return mate_value_float(NAN);
	while (l->p < l->end && (isdigit((unsigned char)*l->p) || strchr(".eE+-_", *l->p))) {
		if (strchr(".eE", *l->p))
			is_float = 1;
		if ((*l->p == '+' || *l->p == '-') && l->p[-1] != 'e' && l->p[-1] != 'E')
			break;
		l->p++;
	}
	n = (size_t)(l->p - s);
	if (n == 0 || n >= sizeof(buf))
		return lit_fail(l, "bad number");
	for (size_t i = 0, o = 0; i <= n; i++)   /* drop digit separators */
		if (i == n || s[i] != '_')
			buf[o++] = i == n ? '\0' : s[i];
	errno = 0;
	if (!is_float) {
		char *e;
		long long v = strtoll(buf, &e, 10);

		if (*e == '\0' && errno == 0)
			return mate_value_int(v);
		if (*e != '\0')
			return lit_fail(l, "bad number");
	}
	{
		char *e;
		double d = strtod(buf, &e);

		if (*e != '\0')
			return lit_fail(l, "bad number");
		return mate_value_float(d);
	}
}

/* After an item of a sequence or dict: steps over a ',' (counted in *commas
 * when commas is not NULL) or stops at the closing bracket; 0, with the
 * error set, on anything else. */
static int
lit_after_item(struct lit *l, char close, const char *expected, int *commas)
{
	lit_ws(l);
	if (l->p < l->end && *l->p == ',') {
		l->p++;
		if (commas != NULL)
			(*commas)++;
		lit_ws(l);
	} else if (l->p >= l->end || *l->p != close) {
		lit_fail(l, expected);
		return 0;
	}
	return 1;
}

/* Steps over the closing bracket; 0, with the error set, where the input
 * ended before it. */
static int
lit_close(struct lit *l, const char *unterminated)
{
	if (l->p >= l->end) {
		lit_fail(l, unterminated);
		return 0;
	}
	l->p++;
	return 1;
}

/* Items up to the closing bracket; tuples note whether a comma was seen. */
static mate_value *
lit_seq(struct lit *l, mate_value *seq, char close, int *commas)
{
	*commas = 0;
	lit_ws(l);
	while (l->p < l->end && *l->p != close) {
		mate_value *item = lit_value(l);

		if (item == NULL || mate_value_append(seq, item) != MATE_OK ||
		    !lit_after_item(l, close, "expected ',' or a closing bracket", commas))
			goto fail;
	}
	if (!lit_close(l, "unterminated sequence"))
		goto fail;
	return seq;
fail:
	mate_value_free(seq);
	return NULL;
}

static mate_value *
lit_dict(struct lit *l)
{
	mate_value *d = mate_value_dict();

	if (d == NULL)
		return NULL;
	lit_ws(l);
	while (l->p < l->end && *l->p != '}') {
		mate_value *k = lit_value(l), *v = NULL;

		lit_ws(l);
		if (k == NULL || l->p >= l->end || *l->p != ':') {
			mate_value_free(k);
			if (k != NULL)
				lit_fail(l, "expected ':'");
			goto fail;
		}
		l->p++;
		if ((v = lit_value(l)) == NULL) {
			mate_value_free(k);
			goto fail;
		}
		if (mate_value_set(d, k, v) != MATE_OK ||
		    !lit_after_item(l, '}', "expected ',' or '}'", NULL))
			goto fail;
	}
	if (!lit_close(l, "unterminated dict"))
		goto fail;
	return d;
fail:
	mate_value_free(d);
	return NULL;
}

/* <Mode.FAST: 0> */
static mate_value *
lit_enum(struct lit *l)
{
	const char *name = ++l->p, *colon;
	char buf[256];
	struct lit sub;
	mate_value *num, *v;

	while (l->p < l->end && *l->p != ':' && *l->p != '>')
		l->p++;
	colon = l->p;
	if (l->p >= l->end || *l->p != ':' || (size_t)(colon - name) >= sizeof(buf))
		return lit_fail(l, "bad <...> value");
	l->p++;
	lit_ws(l);
	sub = *l;
	num = lit_number(&sub);
	*l = sub;
	lit_ws(l);
	if (num == NULL || mate_value_kind_of(num) != MATE_V_INT || l->p >= l->end || *l->p != '>') {
		mate_value_free(num);
		return lit_fail(l, "bad enum value");
	}
	l->p++;
	memcpy(buf, name, (size_t)(colon - name));
	buf[colon - name] = '\0';
	v = mate_value_enum(buf, mate_value_get_int(num));
	mate_value_free(num);
	return v;
}

/* torch.float16 and other dotted names. */
static mate_value *
lit_name(struct lit *l)
{
	const char *s = l->p;
	char buf[256];
	size_t n;
	mate_dtype dt;

	while (l->p < l->end && (isalnum((unsigned char)*l->p) || *l->p == '_' || *l->p == '.'))
		l->p++;
	n = (size_t)(l->p - s);
	if (n == 0 || n >= sizeof(buf))
		return lit_fail(l, "unexpected character");
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (l->p < l->end && *l->p == '(')
		return lit_fail(l, "call expression");
	if (strncmp(buf, "torch.", 6) == 0 && (dt = mate_dtype_from_name(buf)) != MATE_DTYPE_INVALID)
		return mate_value_dtype(dt);
	if (strchr(buf, '.') != NULL)
		return mate_value_enum(buf, 0);
	return lit_fail(l, "unknown name");
}

static mate_value *
lit_value(struct lit *l)
{
	mate_value *v;
	int commas;
	char c;

	lit_ws(l);
	if (l->p >= l->end)
		return lit_fail(l, "unexpected end");
	if (++l->depth > MAX_DEPTH)
		return lit_fail(l, "nested too deeply");
	c = *l->p;
	if (c == '[') {
		l->p++;
		v = lit_seq(l, mate_value_list(), ']', &commas);
	} else if (c == '(') {
		l->p++;
		v = lit_seq(l, mate_value_tuple(), ')', &commas);
		if (v != NULL && mate_value_len(v) == 1 && commas == 0) {  /* (x) is x */
			mate_value *x = mate_value_copy(mate_value_item(v, 0));
			mate_value_free(v);
			v = x;
		}
	} else if (c == '{') {
		l->p++;
		v = lit_dict(l);
	} else if (c == '\'' || c == '"') {
		v = lit_string(l, 0);
	} else if (c == 'b' && l->end - l->p > 1 && (l->p[1] == '\'' || l->p[1] == '"')) {
		l->p++;
		v = lit_string(l, 1);
	} else if (c == '<') {
		v = lit_enum(l);
	} else if (isdigit((unsigned char)c) || c == '-' || c == '+' || c == '.') {
		v = lit_number(l);
	} else if (lit_is(l, "None")) {
		v = mate_value_none();
	} else if (lit_is(l, "True")) {
		v = mate_value_bool(1);
	} else if (lit_is(l, "False")) {
		v = mate_value_bool(0);
	} else if (lit_is(l, "inf")) {
		v = mate_value_float(INFINITY);
	} else if (lit_is(l, "nan")) {
		v = mate_value_float(NAN);
	} else {
		v = lit_name(l);
	}
	l->depth--;
	return v;
}

mate_value *
mate_pyliteral_parse(const char *s, size_t len, mate_error *err)
{
	struct lit l = { s, s, s + len, 0, err };
	mate_value *v = lit_value(&l);

	if (v == NULL)
		return NULL;
	lit_ws(&l);
	if (l.p != l.end) {
		mate_value_free(v);
		return lit_fail(&l, "trailing characters");
	}
	return v;
}

/* ---- structured JSON ------------------------------------------------------ */

static mate_value *decode(const cJSON *j, int depth, mate_error *err);

static mate_value *
number_value(double d)
{
	if (d == floor(d) && fabs(d) < 9.2e18)
		return mate_value_int((int64_t)d);
	return mate_value_float(d);
}

static mate_value *
string_value(const char *s)
{
	if (strncmp(s, "\001mate:", 6) == 0) {
		if (strcmp(s + 6, "nan") == 0)
			return mate_value_float(NAN);
		if (strcmp(s + 6, "inf") == 0)
			return mate_value_float(INFINITY);
		if (strcmp(s + 6, "-inf") == 0)
			return mate_value_float(-INFINITY);
	}
	return mate_value_str(s, (size_t)-1);
}

static mate_value *
decode_items(const cJSON *items, mate_value *seq, int depth, mate_error *err)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, items) {
		mate_value *v = decode(it, depth + 1, err);

		if (v == NULL || mate_value_append(seq, v) != MATE_OK) {
			mate_value_free(seq);
			return NULL;
		}
	}
	return seq;
}

static mate_value *
decode_dict_items(const cJSON *items, int depth, mate_error *err)
{
	mate_value *d = mate_value_dict();
	const cJSON *it;

	if (d == NULL)
		return NULL;
	cJSON_ArrayForEach(it, items) {
		mate_value *k = decode(cJSON_GetObjectItemCaseSensitive(it, "key"), depth + 1, err);
		mate_value *v = decode(cJSON_GetObjectItemCaseSensitive(it, "value"), depth + 1, err);

		if (k == NULL || v == NULL || mate_value_set(d, k, v) != MATE_OK) {
			if (k == NULL || v == NULL) {
				mate_value_free(k);
				mate_value_free(v);
			}
			mate_value_free(d);
			return NULL;
		}
	}
	return d;
}

/* {"type": "list"|"tuple"|"dict"|"set", ...} in either form. */
static mate_value *
decode_container(const cJSON *j, const char *type, int depth, mate_error *err)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "items");
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(j, "value");
	const cJSON *trunc = cJSON_GetObjectItemCaseSensitive(j, "truncated");
	mate_value *v;
	mate_error lerr;

	if (cJSON_IsTrue(trunc))
		return mate_value_object(type, "<truncated when recorded>");
	if (cJSON_IsArray(items)) {
		if (strcmp(type, "dict") == 0)
			return decode_dict_items(items, depth, err);
		return decode_items(items, strcmp(type, "tuple") == 0 ? mate_value_tuple() :
		    mate_value_list(), depth, err);
	}
	if (!cJSON_IsString(value))
		return mate_value_object(type, "");
	v = mate_pyliteral_parse(value->valuestring, strlen(value->valuestring), &lerr);
	if (v == NULL)
		return mate_value_object(type, value->valuestring);
	return v;
}

static mate_value *
decode_typed(const cJSON *j, const char *type, int depth, mate_error *err)
{
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(j, "value");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
	const cJSON *repr = cJSON_GetObjectItemCaseSensitive(j, "repr");
	mate_error lerr;

	if (strcmp(type, "torch.dtype") == 0 && cJSON_IsString(value)) {
		mate_dtype dt = mate_dtype_from_name(value->valuestring);
		return dt != MATE_DTYPE_INVALID ? mate_value_dtype(dt) :
		    mate_value_object(type, value->valuestring);
	}
	if (strcmp(type, "enum") == 0 && cJSON_IsString(name)) {
		int64_t iv = 0;

		if (cJSON_IsNumber(value))
			mate_double_to_i64(value->valuedouble, &iv);
		return mate_value_enum(name->valuestring, iv);
	}
	if (!strcmp(type, "list") || !strcmp(type, "tuple") || !strcmp(type, "dict") ||
	    !strcmp(type, "set"))
		return decode_container(j, type, depth, err);
	if ((!strcmp(type, "float") || !strcmp(type, "int")) && cJSON_IsString(value)) {
		mate_value *v = mate_pyliteral_parse(value->valuestring,
		    strlen(value->valuestring), &lerr);
		if (v != NULL)
			return v;
	}
	if ((!strcmp(type, "float") || !strcmp(type, "int")) && cJSON_IsNumber(value))
		return !strcmp(type, "float") ? mate_value_float(value->valuedouble) :
		    number_value(value->valuedouble);
	return mate_value_object(type, cJSON_IsString(repr) ? repr->valuestring :
	    cJSON_IsString(value) ? value->valuestring : "");
}

static mate_value *
decode(const cJSON *j, int depth, mate_error *err)
{
	const cJSON *type;
	mate_value *v;

	if (depth > MAX_DEPTH) {
		mate_set_error(err, MATE_ERR_FORMAT, "recorded value nested too deeply");
		return NULL;
	}
	if (j == NULL || cJSON_IsNull(j))
		v = mate_value_none();
	else if (cJSON_IsBool(j))
		v = mate_value_bool(cJSON_IsTrue(j));
	else if (cJSON_IsNumber(j))
		v = number_value(j->valuedouble);
	else if (cJSON_IsString(j))
		v = string_value(j->valuestring);
	else if (cJSON_IsArray(j))
		return decode_items(j, mate_value_list(), depth, err);
	else if (cJSON_IsObject(j) && cJSON_IsString(type = cJSON_GetObjectItemCaseSensitive(j, "type")))
		v = decode_typed(j, type->valuestring, depth, err);
	else {  /* a plain JSON object: a dict of its members */
		const cJSON *it;

		if ((v = mate_value_dict()) == NULL)
			goto nomem;
		cJSON_ArrayForEach(it, j) {
			mate_value *item = decode(it, depth + 1, err);

			if (item == NULL || mate_value_set_str(v, it->string, item) != MATE_OK) {
				mate_value_free(v);
				return NULL;
			}
		}
	}
	if (v == NULL)
		goto nomem;
	return v;
nomem:
	mate_set_error(err, MATE_ERR_NOMEM, "out of memory decoding a recorded value");
	return NULL;
}

mate_value *
mate_record_decode_value(const cJSON *j, mate_error *err)
{
	return decode(j, 0, err);
}

/* ---- brief formatting ------------------------------------------------------ */

struct fmt {
	char *buf;
	size_t len, used;
};

static void
put(struct fmt *f, const char *fmt_, ...) MATE_PRINTF(2, 3);

static void
put(struct fmt *f, const char *fmt_, ...)
{
	va_list ap;
	int w;

	if (f->used >= f->len)
		return;
	va_start(ap, fmt_);
	w = vsnprintf(f->buf + f->used, f->len - f->used, fmt_, ap);
	va_end(ap);
	if (w > 0)
		f->used += (size_t)w;
}

static void
fmt_value(struct fmt *f, const mate_value *v, int depth)
{
	size_t n;

	switch (mate_value_kind_of(v)) {
	case MATE_V_NONE: put(f, "None"); break;
	case MATE_V_BOOL: put(f, "%s", mate_value_get_bool(v) ? "True" : "False"); break;
	case MATE_V_INT: put(f, "%" PRId64, mate_value_get_int(v)); break;
	case MATE_V_FLOAT: put(f, "%.9g", mate_value_get_float(v)); break;
	case MATE_V_STR: put(f, "'%.60s'", mate_value_get_str(v, NULL)); break;
	case MATE_V_BYTES: put(f, "b'...'"); break;
	case MATE_V_DTYPE: put(f, "torch.%s", mate_dtype_name(mate_value_get_dtype(v))); break;
	case MATE_V_ENUM: put(f, "%s", mate_value_enum_name(v)); break;
	case MATE_V_OBJECT: put(f, "<%s>", mate_value_object_type(v)); break;
	case MATE_V_TENSOR: {
		const mate_tensor *t = mate_value_get_tensor(v);
		put(f, "tensor(%s, ndim %d)", mate_dtype_name(t->dtype), t->ndim);
		break;
	}
	case MATE_V_LIST:
	case MATE_V_TUPLE:
	case MATE_V_DICT:
		n = mate_value_len(v);
		put(f, "%c", mate_value_kind_of(v) == MATE_V_LIST ? '[' :
		    mate_value_kind_of(v) == MATE_V_TUPLE ? '(' : '{');
		for (size_t i = 0; i < n && depth < 4; i++) {
			if (i > 0)
				put(f, ", ");
			if (f->used > 200) {
				put(f, "...");
				break;
			}
			if (mate_value_kind_of(v) == MATE_V_DICT) {
				fmt_value(f, mate_value_key(v, i), depth + 1);
				put(f, ": ");
			}
			fmt_value(f, mate_value_item(v, i), depth + 1);
		}
		if (mate_value_kind_of(v) == MATE_V_TUPLE && n == 1)
			put(f, ",");
		put(f, "%c", mate_value_kind_of(v) == MATE_V_LIST ? ']' :
		    mate_value_kind_of(v) == MATE_V_TUPLE ? ')' : '}');
		break;
	}
}

void
mate_value_format_brief(const mate_value *v, char *buf, size_t len)
{
	struct fmt f = { buf, len, 0 };

	if (len == 0)
		return;
	buf[0] = '\0';
	if (v == NULL)
		put(&f, "(nothing)");
	else
		fmt_value(&f, v, 0);
}
