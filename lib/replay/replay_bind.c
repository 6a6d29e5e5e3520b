/* replay_bind.c: Python signatures as str(inspect.signature) writes them: parsing, matching a recorded call's to a handler's, and binding its arguments. */
#include "mate_private.h"
#include "dump_private.h"
#include "replay_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIG_MAX_TEXT (64u << 10)
#define SIG_MAX_PARAMS 256

/* ---- parsing ------------------------------------------------------------------ */

/* The end of the quoted string starting at p (its closing quote + 1). */
static const char *
skip_quoted(const char *p, const char *end)
{
	char q = *p++;

	while (p < end && *p != q)
		p += (*p == '\\' && p + 1 < end) ? 2 : 1;
	return p < end ? p + 1 : end;
}

/* The first ch (one of stops) at bracket depth 0 in [p, end), or end. */
static const char *
find_top(const char *p, const char *end, const char *stops)
{
	int depth = 0;

	while (p < end) {
		char ch = *p;

		if (ch == '\'' || ch == '"') {
			p = skip_quoted(p, end);
			continue;
		}
		if (depth == 0 && strchr(stops, ch) != NULL)
			return p;
		if (ch == '(' || ch == '[' || ch == '{' || ch == '<')
			depth++;
		else if ((ch == ')' || ch == ']' || ch == '}' || ch == '>') && depth > 0)
			depth--;
		p++;
	}
	return end;
}

static void
trim(const char **p, const char **end)
{
	while (*p < *end && (**p == ' ' || **p == '\t' || **p == '\n'))
		(*p)++;
	while (*end > *p && ((*end)[-1] == ' ' || (*end)[-1] == '\t' || (*end)[-1] == '\n'))
		(*end)--;
}

static int
ident_char(char ch, int first)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
	    (unsigned char)ch >= 0x80 || (!first && ch >= '0' && ch <= '9');
}

/* One parameter "name", "name: ann", "name=def", "name: ann = def",
 * "*name", "**name" (markers "/" and "*" are handled by the caller). */
static int
parse_param(struct mate_sig *s, const char *p, const char *end, int kind, mate_error *err)
{
	struct mate_sig_param *pp = &s->p[s->n];
	const char *name, *eq, *colon;

	if (kind == MATE_PARAM_VAR_POSITIONAL || kind == MATE_PARAM_VAR_KEYWORD)
		p += kind == MATE_PARAM_VAR_KEYWORD ? 2 : 1;
	name = p;
	while (p < end && ident_char(*p, p == name))
		p++;
	if (p == name)
		return mate_set_error(err, MATE_ERR_FORMAT, "a parameter has no name");
	pp->name = mate_arena_strndup(&s->arena, name, (size_t)(p - name));
	pp->kind = kind;
	pp->def = NULL;
	eq = find_top(p, end, "=");
	colon = find_top(p, end, ":");
	for (const char *q = p; q < (colon < eq ? colon : eq); q++)
		if (*q != ' ')
			return mate_set_error(err, MATE_ERR_FORMAT, "unexpected text after a parameter name");
	if (eq < end) {
		const char *d = eq + 1, *de = end;

		trim(&d, &de);
		if (d == de || kind == MATE_PARAM_VAR_POSITIONAL || kind == MATE_PARAM_VAR_KEYWORD)
			return mate_set_error(err, MATE_ERR_FORMAT, "bad default of '%s'", pp->name);
		pp->def = mate_arena_strndup(&s->arena, d, (size_t)(de - d));
	}
	if (pp->name == NULL || (eq < end && pp->def == NULL))
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->p[i].name, pp->name) == 0)
			return mate_set_error(err, MATE_ERR_FORMAT, "duplicate parameter '%s'", pp->name);
	s->n++;
	return MATE_OK;
}

static int
parse_params(struct mate_sig *s, const char *p, const char *end, mate_error *err)
{
	int kw_only = 0, slash = 0, rc;

	trim(&p, &end);
	while (p < end) {
		const char *ie = find_top(p, end, ","), *ip = p, *ipe = ie;
		int kind = kw_only ? MATE_PARAM_KEYWORD_ONLY : MATE_PARAM_POSITIONAL_OR_KEYWORD;

		trim(&ip, &ipe);
		if (s->n == SIG_MAX_PARAMS)
			return mate_set_error(err, MATE_ERR_LIMIT, "more than %d parameters", SIG_MAX_PARAMS);
		if (ip == ipe)
			return mate_set_error(err, MATE_ERR_FORMAT, "an empty parameter");
		if (ipe - ip == 1 && *ip == '/') {
			if (slash || kw_only)
				return mate_set_error(err, MATE_ERR_FORMAT, "misplaced '/'");
			for (size_t i = 0; i < s->n; i++)
				s->p[i].kind = MATE_PARAM_POSITIONAL_ONLY;
			slash = 1;
		} else if (ipe - ip == 1 && *ip == '*') {
			if (kw_only)
				return mate_set_error(err, MATE_ERR_FORMAT, "misplaced '*'");
			kw_only = 1;
		} else {
			if (ip[0] == '*')
				kind = ip + 1 < ipe && ip[1] == '*' ? MATE_PARAM_VAR_KEYWORD :
				    MATE_PARAM_VAR_POSITIONAL;
			if ((kind == MATE_PARAM_VAR_POSITIONAL && kw_only) ||
			    (s->n > 0 && s->p[s->n - 1].kind == MATE_PARAM_VAR_KEYWORD))
				return mate_set_error(err, MATE_ERR_FORMAT, "misplaced '*'");
			if ((rc = parse_param(s, ip, ipe, kind, err)) != MATE_OK)
				return rc;
			if (kind == MATE_PARAM_VAR_POSITIONAL)
				kw_only = 1;
		}
		p = ie < end ? ie + 1 : end;
		if (ie < end && p == end)
			return mate_set_error(err, MATE_ERR_FORMAT, "a trailing comma");
	}
	return MATE_OK;
}

struct mate_sig *
mate_sig_parse(const char *text, mate_error *err)
{
	const char *p = text, *end, *close;
	struct mate_sig *s;
	size_t len = text != NULL ? strlen(text) : 0;
	int rc;

	if (len > SIG_MAX_TEXT) {
		mate_set_error(err, MATE_ERR_LIMIT, "the signature is longer than %u bytes", SIG_MAX_TEXT);
		return NULL;
	}
	end = p + len;
	trim(&p, &end);
	if (p == end || *p != '(' || (close = find_top(p + 1, end, ")")) == end) {
		mate_set_error(err, MATE_ERR_FORMAT, "not a parameter list in parentheses");
		return NULL;
	}
	for (p = close + 1; p < end && *p == ' '; p++)
		;
	if (p < end && (end - p < 2 || p[0] != '-' || p[1] != '>')) {  /* "-> annotation" */
		mate_set_error(err, MATE_ERR_FORMAT, "unexpected text after the parameters");
		return NULL;
	}
	p = text;
	end = p + len;
	trim(&p, &end);
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->p = calloc(SIG_MAX_PARAMS, sizeof(*s->p))) == NULL) {
		free(s);
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if ((rc = parse_params(s, p + 1, close, err)) != MATE_OK) {
		mate_sig_free(s);
		return NULL;
	}
	return s;
}

void
mate_sig_free(struct mate_sig *s)
{
	if (s == NULL)
		return;
	mate_arena_free(&s->arena);
	free(s->p);
	free(s);
}

const struct mate_sig_param *
mate_sig_find(const struct mate_sig *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->p[i].name, name) == 0)
			return &s->p[i];
	return NULL;
}

void
mate_sig_format(const struct mate_sig *s, char *buf, size_t len)
{
	size_t o = 0;
	int star = 0;

#define PUT(...) do { if (o < len) o += (size_t)snprintf(buf + o, len - o, __VA_ARGS__); } while (0)
	PUT("(");
	for (size_t i = 0; i < s->n; i++) {
		const struct mate_sig_param *p = &s->p[i];

		if (i > 0)
			PUT(", ");
		if (p->kind == MATE_PARAM_KEYWORD_ONLY && !star)
			PUT("*, ");
		star |= p->kind == MATE_PARAM_KEYWORD_ONLY || p->kind == MATE_PARAM_VAR_POSITIONAL;
		PUT("%s%s%s%.60s", p->kind == MATE_PARAM_VAR_POSITIONAL ? "*" :
		    p->kind == MATE_PARAM_VAR_KEYWORD ? "**" : "", p->name, p->def ? "=" : "",
		    p->def ? p->def : "");
		if (p->kind == MATE_PARAM_POSITIONAL_ONLY &&
		    (i + 1 == s->n || s->p[i + 1].kind != MATE_PARAM_POSITIONAL_ONLY))
			PUT(", /");
	}
	PUT(")");
#undef PUT
	if (o >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

/* ---- matching ------------------------------------------------------------------- */

static int
is_var(const struct mate_sig_param *p)
{
	return p->kind == MATE_PARAM_VAR_POSITIONAL || p->kind == MATE_PARAM_VAR_KEYWORD;
}

int
mate_sig_implements(const struct mate_sig *h, const struct mate_sig *rec, char *why, size_t len)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->p[i].def == NULL && !is_var(&h->p[i]) && mate_sig_find(rec, h->p[i].name) == NULL) {
			snprintf(why, len, "no parameter '%s'", h->p[i].name);
			return 0;
		}
	for (size_t i = 0; i < rec->n; i++) {
		const struct mate_sig_param *p = &rec->p[i];

		if (mate_sig_find(h, p->name) != NULL)
			continue;
		/* one the handler lacks binds while None, or, keyword-only (as the peers add
		 * parameters that keep the old behaviour at their default), while at its
		 * default: mate_sig_arguments() checks the call's value */
		if (p->def == NULL || (strcmp(p->def, "None") != 0 && p->kind != MATE_PARAM_KEYWORD_ONLY)) {
			snprintf(why, len, "no parameter '%s'", p->name);
			return 0;
		}
	}
	return 1;
}

/* ---- binding -------------------------------------------------------------------- */

/* "arg_<i>" -> i, else -1. */
static long
arg_index(const char *k)
{
	char *end;
	long i;

	if (strncmp(k, "arg_", 4) != 0 || k[4] < '0' || k[4] > '9')
		return -1;
	i = strtol(k + 4, &end, 10);
	return *end == '\0' && i < 100000 ? i : -1;
}

const char *
mate_signature_arg_name(const char *signature, const char *key, char *buf, size_t cap)
{
	struct mate_sig *s;
	const char *name = NULL;
	long idx, n = 0;

	if (signature == NULL || key == NULL || buf == NULL || cap == 0)
		return NULL;
	if (strncmp(key, "kwarg_", 6) == 0 && key[6] != '\0') {
		snprintf(buf, cap, "%s", key + 6);
		return buf;
	}
	if ((idx = arg_index(key)) < 0 || (s = mate_sig_parse(signature, NULL)) == NULL)
		return NULL;
	for (size_t i = 0; i < s->n && name == NULL; i++) {
		int k = s->p[i].kind;
		if (k == MATE_PARAM_VAR_POSITIONAL)
			break;   /* arg_<idx> from here on is one of *args */
		if (k != MATE_PARAM_POSITIONAL_ONLY && k != MATE_PARAM_POSITIONAL_OR_KEYWORD)
			continue;
		if (n++ == idx)
			name = s->p[i].name;
	}
	if (name != NULL)
		snprintf(buf, cap, "%s", name);
	mate_sig_free(s);
	return name != NULL ? buf : NULL;
}

static int
set_param(mate_value *bound, const char *name, const mate_value *v, mate_error *err)
{
	if (mate_value_lookup(bound, name) != NULL)
		return mate_set_error(err, MATE_ERR_ARGUMENT, "multiple values for argument '%s'", name);
	if (mate_value_set_str(bound, name, v != NULL ? mate_value_copy(v) : mate_value_none()) != MATE_OK)
		return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	return MATE_OK;
}

/* The positional arguments (arg_0 .. arg_<n-1>; a gap is None, as
 * FlashInfer's replay fills it). */
static int
bind_positional(const struct mate_sig *s, const mate_value *args, mate_value *bound,
    mate_value **varpos, mate_error *err)
{
	long n = -1;
	size_t pi = 0;
	char key[32];
	int rc;

	for (size_t i = 0; i < mate_value_len(args); i++) {
		const char *k = mate_value_get_str(mate_value_key(args, i), NULL);
		long idx = k != NULL ? arg_index(k) : -1;

		if (idx > n)
			n = idx;
	}
	for (long i = 0; i <= n; i++) {
		const mate_value *v;

		snprintf(key, sizeof(key), "arg_%ld", i);
		v = mate_value_lookup(args, key);
		while (pi < s->n && s->p[pi].kind != MATE_PARAM_POSITIONAL_ONLY &&
		    s->p[pi].kind != MATE_PARAM_POSITIONAL_OR_KEYWORD &&
		    s->p[pi].kind != MATE_PARAM_VAR_POSITIONAL)
			pi++;
		if (pi == s->n)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "too many positional arguments (%ld)",
			    n + 1);
		if (s->p[pi].kind == MATE_PARAM_VAR_POSITIONAL) {
			if (*varpos == NULL && (*varpos = mate_value_tuple()) == NULL)
				return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
			if (mate_value_append(*varpos, v ? mate_value_copy(v) : mate_value_none()) != MATE_OK)
				return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
			continue;
		}
		if ((rc = set_param(bound, s->p[pi++].name, v, err)) != MATE_OK)
			return rc;
	}
	return MATE_OK;
}

static int
bind_keywords(const struct mate_sig *s, const mate_value *args, mate_value *bound,
    mate_value **varkw, mate_error *err)
{
	const struct mate_sig_param *vk = NULL;
	int rc;

	for (size_t i = 0; i < s->n; i++)
		if (s->p[i].kind == MATE_PARAM_VAR_KEYWORD)
			vk = &s->p[i];
	for (size_t i = 0; i < mate_value_len(args); i++) {
		const char *k = mate_value_get_str(mate_value_key(args, i), NULL), *name;
		const struct mate_sig_param *p;

		if (k == NULL || strncmp(k, "kwarg_", 6) != 0)
			continue;
		name = k + 6;
		p = mate_sig_find(s, name);
		if (p != NULL && p->kind != MATE_PARAM_POSITIONAL_ONLY && !is_var(p)) {
			if ((rc = set_param(bound, name, mate_value_item(args, i), err)) != MATE_OK)
				return rc;
			continue;
		}
		if (vk == NULL)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "an unexpected keyword argument '%s'",
			    name);
		if ((*varkw == NULL && (*varkw = mate_value_dict()) == NULL) ||
		    mate_value_set_str(*varkw, name, mate_value_copy(mate_value_item(args, i))) != MATE_OK)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	return MATE_OK;
}

/* The missing parameters: required ones fail, defaults are filled (one
 * that cannot be read is left out: the caller finds it absent). */
static int
bind_defaults(const struct mate_sig *s, mate_value *bound, mate_value **varpos,
    mate_value **varkw, mate_error *err)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct mate_sig_param *p = &s->p[i];
		mate_value *v = NULL;
		mate_error perr;

		if (p->kind == MATE_PARAM_VAR_POSITIONAL || p->kind == MATE_PARAM_VAR_KEYWORD) {
			mate_value **var = p->kind == MATE_PARAM_VAR_POSITIONAL ? varpos : varkw;

			if (*var == NULL)
				*var = p->kind == MATE_PARAM_VAR_POSITIONAL ? mate_value_tuple() : mate_value_dict();
			if (*var == NULL || mate_value_set_str(bound, p->name, *var) != MATE_OK)
				return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
			*var = NULL;
			continue;
		}
		if (mate_value_lookup(bound, p->name) != NULL)
			continue;
		if (p->def == NULL)
			return mate_set_error(err, MATE_ERR_ARGUMENT, "missing a required argument: '%s'",
			    p->name);
		mate_error_clear(&perr);
		if ((v = mate_pyliteral_parse(p->def, strlen(p->def), &perr)) == NULL)
			continue;
		if (mate_value_set_str(bound, p->name, v) != MATE_OK)
			return mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
	}
	return MATE_OK;
}

mate_value *
mate_sig_bind(const struct mate_sig *s, const mate_value *args, mate_error *err)
{
	mate_value *bound = mate_value_dict(), *varpos = NULL, *varkw = NULL;
	int rc;

	if (bound == NULL) {
		mate_set_error(err, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if ((rc = bind_positional(s, args, bound, &varpos, err)) != MATE_OK ||
	    (rc = bind_keywords(s, args, bound, &varkw, err)) != MATE_OK ||
	    (rc = bind_defaults(s, bound, &varpos, &varkw, err)) != MATE_OK) {
		mate_value_free(varpos);
		mate_value_free(varkw);
		mate_value_free(bound);
		return NULL;
	}
	return bound;
}

/* ---- the handler's arguments ---------------------------------------------------- */

/* Whether v is the value of the Python literal def (None, a bool, an int, a
 * float to the bit, a string); anything else is not taken as equal. */
static int
is_default(const mate_value *v, const char *def)
{
	mate_value *d;
	mate_error err;
	int same = 0;

	mate_error_clear(&err);
	if (def == NULL || (d = mate_pyliteral_parse(def, strlen(def), &err)) == NULL)
		return 0;
	if (mate_value_kind_of(d) == mate_value_kind_of(v)) {
		switch (mate_value_kind_of(v)) {
		case MATE_V_NONE:
			same = 1;
			break;
		case MATE_V_BOOL:
		case MATE_V_INT:
			same = mate_value_get_int(v) == mate_value_get_int(d);
			break;
		case MATE_V_FLOAT: {
			double a = mate_value_get_float(v), b = mate_value_get_float(d);
			same = memcmp(&a, &b, sizeof(a)) == 0;
			break;
		}
		case MATE_V_STR:
			same = strcmp(mate_value_get_str(v, NULL), mate_value_get_str(d, NULL)) == 0;
			break;
		default:
			break;
		}
	}
	mate_value_free(d);
	return same;
}

int
mate_sig_arguments(const struct mate_sig *h, const struct mate_sig *rec, const mate_value *bound,
    mate_value **out, char *why, size_t len, char *note, size_t notelen)
{
	mate_value *args = mate_value_dict();
	char key[300];
	int pos = 0;

	*out = NULL;
	if (notelen > 0)
		note[0] = '\0';
	if (args == NULL) {
		snprintf(why, len, "out of memory");
		return MATE_ERR_NOMEM;
	}
	for (size_t i = 0; i < rec->n; i++) {
		const struct mate_sig_param *p = &rec->p[i];
		const mate_value *v = mate_value_lookup(bound, p->name);
		const struct mate_sig_param *hp = mate_sig_find(h, p->name);
		char brief[80];

		/* a default no literal spells (a sentinel object) that the handler states
		 * too: it is left absent, for the handler to apply as it documents */
		if (v == NULL && hp != NULL && hp->def != NULL && p->def != NULL &&
		    strcmp(hp->def, p->def) == 0)
			continue;
		if (v == NULL && hp != NULL) {
			snprintf(why, len, "the recorded default of '%s' (%.80s) cannot be read", p->name,
			    p->def ? p->def : "?");
			goto unsupported;
		}
		if (v == NULL || mate_sig_find(h, p->name) != NULL || mate_value_kind_of(v) == MATE_V_NONE ||
		    is_var(p))
			continue;
		mate_value_format_brief(v, brief, sizeof(brief));
		if (p->kind == MATE_PARAM_KEYWORD_ONLY && is_default(v, p->def)) {
			/* a parameter newer than the handler, left at its default: named */
			size_t n = strlen(note);

			if (n + 1 < notelen)
				snprintf(note + n, notelen - n, "%s%s=%s, its default, ignored", n ? "; " : "",
				    p->name, brief);
			continue;
		}
		snprintf(why, len, "the handler takes no argument '%s' (%s)%s%.60s%s", p->name, brief,
		    p->kind == MATE_PARAM_KEYWORD_ONLY && p->def ? "; only its default, " : "",
		    p->kind == MATE_PARAM_KEYWORD_ONLY && p->def ? p->def : "",
		    p->kind == MATE_PARAM_KEYWORD_ONLY && p->def ? ", is replayed" : "");
		goto unsupported;
	}
	for (size_t i = 0; i < h->n; i++) {
		const struct mate_sig_param *p = &h->p[i];
		const mate_value *v = mate_value_lookup(bound, p->name);
		int positional = p->kind == MATE_PARAM_POSITIONAL_ONLY ||
		    p->kind == MATE_PARAM_POSITIONAL_OR_KEYWORD;

		if (v != NULL && positional) {
			snprintf(key, sizeof(key), "arg_%d", pos);
			if (mate_value_set_str(args, key, mate_value_copy(v)) != MATE_OK)
				goto nomem;
		}
		if (v != NULL && p->kind != MATE_PARAM_POSITIONAL_ONLY) {
			snprintf(key, sizeof(key), "kwarg_%.280s", p->name);
			if (mate_value_set_str(args, key, mate_value_copy(v)) != MATE_OK)
				goto nomem;
		}
		pos += positional;
	}
	*out = args;
	return MATE_OK;
nomem:
	snprintf(why, len, "out of memory");
	mate_value_free(args);
	return MATE_ERR_NOMEM;
unsupported:
	mate_value_free(args);
	return MATE_ERR_UNSUPPORTED;
}
