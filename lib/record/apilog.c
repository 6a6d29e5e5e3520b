/* apilog.c: the API log text of levels 1, 3 and 5, laid out as MATE's Python logger writes it. */
#include "recorder_private.h"
#include "backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char RULE_EQ[] =
    "================================================================================\n";
static const char RULE_DASH[] =
    "--------------------------------------------------------------------------------\n";

/* ---- timestamps ----------------------------------------------------------------- */

void
mate_rec_stamp(char *out)
{
	static __thread time_t last = (time_t)-1;
	static __thread char text[24];
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != last) {
		localtime_r(&ts.tv_sec, &tm);
		strftime(text, sizeof(text), "[%Y-%m-%d %H:%M:%S]", &tm);
		last = ts.tv_sec;
	}
	memcpy(out, text, sizeof(text));
}

void
mate_rec_log_name(const char *name)
{
	const char *who = mate_rec_name();
	size_t n = strlen(name), nw = strlen(who);
	char line[512], *p;

	if (21 + 1 + nw + 11 + n + 1 > sizeof(line)) {
		struct mate_buf b;
		mate_buf_init(&b);
		mate_rec_stamp(line);
		mate_buf_put(&b, line, 21);
		mate_buf_putc(&b, ' ');
		mate_buf_put(&b, who, nw);
		mate_buf_puts(&b, " API Call: ");
		mate_buf_put(&b, name, n);
		mate_buf_putc(&b, '\n');
		if (mate_buf_str(&b) != NULL)
			mate_rec_log(b.p, b.len);
		mate_buf_free(&b);
		return;
	}
	/* no printf: its cost grows when a library registers printf handlers */
	mate_rec_stamp(line);
	p = line + 21;
	*p++ = ' ';
	memcpy(p, who, nw);
	p += nw;
	memcpy(p, " API Call: ", 11);
	p += 11;
	memcpy(p, name, n);
	p += n;
	*p++ = '\n';
	mate_rec_log(line, (size_t)(p - line));
}

/* ---- the header ------------------------------------------------------------------- */

/* The BLAS linked into the process, if any: OpenBLAS names itself, others
 * by the library that holds cblas_sgemm or sgemm_. */
static void
describe_blas(struct mate_buf *b)
{
	typedef char *(*config_fn)(void);
	config_fn openblas = (config_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "openblas_get_config");
	void *sym = dlsym(RTLD_DEFAULT, "cblas_sgemm");
	Dl_info info;

	if (sym == NULL)
		sym = dlsym(RTLD_DEFAULT, "sgemm_");
	mate_buf_puts(b, "BLAS: ");
	if (openblas != NULL && openblas() != NULL) {
		mate_buf_puts(b, openblas());
	} else if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL) {
		const char *base = strrchr(info.dli_fname, '/');
		mate_buf_puts(b, base ? base + 1 : info.dli_fname);
	} else
		mate_buf_puts(b, "<not loaded>");
	mate_buf_putc(b, '\n');
}

static void
print_patterns(struct mate_buf *b, const char *what, char **list, size_t n)
{
	if (n == 0)
		return;
	mate_buf_printf(b, "%s filter: [", what);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			mate_buf_puts(b, ", ");
		mate_buf_pystr(b, list[i], strlen(list[i]));
	}
	mate_buf_puts(b, "]\n");
}

static void
fmt_banner(struct mate_buf *b)
{
	const struct rec_config *cfg = &mate_rec_cfg;
	const char *ring;
	char *end;
	long keep;

	mate_buf_puts(b, RULE_EQ);
	mate_buf_printf(b,
	    "WARNING: %s API Logging is set to Level 10 (Tensor Dumping).\n"
	    "This will dump ALL input and outputs including tensors for %s APIs to disk in\n"
	    "the configured dump directory. Ensure that you are NOT processing sensitive data\n"
	    "or that the dump directory is secure. To disable dumping, unset %s_LOGLEVEL or\n"
	    "set it to below 10.\n", mate_rec_name(), mate_rec_name(), mate_rec_prefix());
	mate_buf_printf(b, "Current dump directory is: %s\n", cfg->dump_dir_shown);
	if ((ring = mate_rec_getenv("RING")) != NULL && *ring != '\0') {
		/* not in MATE's banner: no call reaches the disk until the program fails */
		errno = 0;
		keep = strtol(ring, &end, 10);
		if (errno == 0 && *end == '\0' && keep >= 1 && keep <= 1000000000)
			mate_buf_printf(b,
			    "RING mode (%s_RING=%ld): only the last %ld calls are kept, in memory, and\n"
			    "    written to the dump directory when the program fails (mate(7)).\n",
			    mate_rec_prefix(), keep, keep);
	}
	if (cfg->safetensors)
		mate_buf_puts(b,
		    "SAFETENSORS mode enabled: tensor stride/non-contiguity will NOT be preserved.\n"
		    "    Tensors will be saved as contiguous. Use torch.save (default) to preserve strides.\n");
	print_patterns(b, "Include", cfg->include.p, cfg->include.n);
	print_patterns(b, "Exclude", cfg->exclude.p, cfg->exclude.n);
	mate_buf_puts(b, RULE_EQ);
}

void
mate_rec_fmt_header(struct mate_buf *b)
{
	const mate_backend *be = mate_backend_get();
	char stamp[24], desc[1024];

	mate_rec_stamp(stamp);
	mate_buf_puts(b, RULE_EQ);
	mate_buf_printf(b, "%s %s API Logging - System Information\n", stamp, mate_rec_name());
	mate_buf_puts(b, RULE_EQ);
	mate_buf_printf(b, "mate version: %s\n", mate_version_string());
	desc[0] = '\0';
	be->describe(desc, sizeof(desc));
	mate_buf_printf(b, "Backend: %s\n", desc);
	if (mate_rec_flashinfer_text()) {  /* the same fact in FlashInfer's spelling */
		int n = be->device_count();
		if (n > 0)
			mate_buf_printf(b, "Number of GPUs: %d\n", n);
		else
			mate_buf_puts(b, "CUDA: Not available (CPU-only mode)\n");
	}
	describe_blas(b);
	mate_buf_puts(b, RULE_EQ);
	mate_buf_putc(b, '\n');
	if (mate_rec_cfg.level >= 10)
		fmt_banner(b);
}

/* ---- values ------------------------------------------------------------------------- */

static void
fmt_shape(struct mate_buf *b, const int64_t *v, int n)
{
	mate_buf_putc(b, '(');
	for (int i = 0; i < n; i++) {
		if (i > 0)
			mate_buf_put(b, ", ", 2);
		mate_buf_int(b, v[i]);
	}
	mate_buf_puts(b, n == 1 ? ",)" : ")");
}

static void
fmt_device(struct mate_buf *b, const mate_tensor *t)
{
	if (t->device_type == MATE_DEVICE_CUDA) {
		mate_buf_puts(b, "cuda:");
		mate_buf_int(b, t->device_index);
	} else
		mate_buf_puts(b, "cpu");
}

static void
fmt_stats_of(struct mate_buf *b, const mate_call *c, const mate_value *v, int pad)
{
	struct rec_tensor *rt = mate_rec_find(c, v);
	const mate_tensor *t = mate_value_get_tensor(v);
	struct rec_stats s;

	if (mate_rec_capturing(t)) {
		mate_buf_spaces(b, pad);
		mate_buf_puts(b, "[statistics skipped: CUDA graph capture in progress]\n");
		return;
	}
	if (rt == NULL || rt->staged <= 0) {
		mate_buf_spaces(b, pad);
		mate_buf_puts(b, "[statistics error: the tensor could not be read]\n");
		return;
	}
	mate_rec_stats(&rt->host, &s);
	mate_rec_fmt_stats(b, &s, pad);
}

static void
fmt_tensor(struct mate_buf *b, const mate_call *c, const mate_value *v, int indent)
{
	const mate_tensor *t = mate_value_get_tensor(v);
	int pad = indent * 2 + 2;
	size_t es = mate_dtype_size(t->dtype);
	int64_t extent = mate_tensor_storage_extent(t);
	uintptr_t start = (uintptr_t)t->data + (uintptr_t)(t->offset * (int64_t)es);
	uintptr_t end = extent > t->offset ? (uintptr_t)t->data + (uintptr_t)(extent * (int64_t)es) : start;

	mate_buf_spaces(b, indent * 2);
	mate_buf_puts(b, "Tensor(\n");
	mate_buf_spaces(b, pad);
	mate_buf_puts(b, "shape=");
	fmt_shape(b, t->shape, t->ndim);
	mate_buf_putc(b, '\n');
	mate_buf_spaces(b, pad);
	mate_buf_puts(b, "stride=");
	fmt_shape(b, t->stride, t->ndim);
	mate_buf_putc(b, '\n');
	mate_buf_spaces(b, pad);
	mate_buf_puts(b, "dtype=");
	mate_buf_dtype(b, t->dtype);
	mate_buf_putc(b, '\n');
	mate_buf_spaces(b, pad);
	mate_buf_puts(b, "device=");
	fmt_device(b, t);
	mate_buf_putc(b, '\n');
	if (!mate_rec_flashinfer_text()) {  /* FlashInfer's decorator prints no va_range */
		mate_buf_spaces(b, pad);
		mate_buf_puts(b, "va_range=[");
		mate_buf_hex(b, start);
		mate_buf_put(b, ", ", 2);
		mate_buf_hex(b, end);
		mate_buf_put(b, ")\n", 2);
	}
	mate_buf_spaces(b, pad);
	mate_buf_puts(b, t->requires_grad ? "requires_grad=True\n" : "requires_grad=False\n");
	mate_buf_spaces(b, pad);
	mate_buf_puts(b, mate_tensor_is_contiguous(t) ? "is_contiguous=True\n" : "is_contiguous=False\n");
	if (c->level >= 5)
		fmt_stats_of(b, c, v, pad);
	mate_buf_spaces(b, indent * 2);
	mate_buf_putc(b, ')');
}

static void
fmt_bytes(struct mate_buf *b, const unsigned char *s, size_t n)
{
	char quote = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';

	mate_buf_putc(b, 'b');
	mate_buf_putc(b, quote);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == quote || s[i] == '\\')
			mate_buf_printf(b, "\\%c", s[i]);
		else if (s[i] == '\n')
			mate_buf_puts(b, "\\n");
		else if (s[i] == '\r')
			mate_buf_puts(b, "\\r");
		else if (s[i] == '\t')
			mate_buf_puts(b, "\\t");
		else if (s[i] < 0x20 || s[i] >= 0x7f)
			mate_buf_printf(b, "\\x%02x", s[i]);
		else
			mate_buf_putc(b, (char)s[i]);
	}
	mate_buf_putc(b, quote);
}

/* A scalar on the current line (no indentation). */
static void
fmt_scalar(struct mate_buf *b, const mate_value *v)
{
	char tmp[MATE_PYFLOAT_MAX];
	const char *s;
	size_t n;

	switch (mate_value_kind_of(v)) {
	case MATE_V_NONE:
		mate_buf_puts(b, "None");
		break;
	case MATE_V_BOOL:
		mate_buf_puts(b, mate_value_get_bool(v) ? "True" : "False");
		break;
	case MATE_V_INT:
		mate_buf_int(b, mate_value_get_int(v));
		break;
	case MATE_V_FLOAT:
		mate_buf_put(b, tmp, mate_py_float_repr(mate_value_get_float(v), tmp));
		break;
	case MATE_V_STR:
		s = mate_value_get_str(v, &n);
		mate_buf_pystr(b, s, n);
		break;
	case MATE_V_BYTES:
		s = mate_value_get_str(v, &n);
		fmt_bytes(b, (const unsigned char *)s, n);
		break;
	case MATE_V_DTYPE:
		mate_buf_dtype(b, mate_value_get_dtype(v));
		break;
	case MATE_V_ENUM:
		mate_buf_printf(b, "%s (value=%" PRId64 ")", mate_value_enum_name(v),
		    mate_value_get_int(v));
		break;
	case MATE_V_OBJECT:
		mate_buf_puts(b, mate_value_object_repr(v));
		break;
	default:
		mate_buf_puts(b, "<unknown>");
	}
}

/* A value on one line, as Python's repr() writes it (dict keys). */
void
mate_rec_fmt_inline(struct mate_buf *b, const mate_value *v)
{
	mate_value_kind k = mate_value_kind_of(v);
	size_t n = mate_value_len(v);

	if (k == MATE_V_TENSOR) {
		mate_buf_puts(b, "tensor(...)");
		return;
	}
	if (k != MATE_V_LIST && k != MATE_V_TUPLE && k != MATE_V_DICT) {
		fmt_scalar(b, v);
		return;
	}
	mate_buf_putc(b, k == MATE_V_LIST ? '[' : k == MATE_V_TUPLE ? '(' : '{');
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			mate_buf_puts(b, ", ");
		if (k == MATE_V_DICT) {
			mate_rec_fmt_inline(b, mate_value_key(v, i));
			mate_buf_puts(b, ": ");
		}
		mate_rec_fmt_inline(b, mate_value_item(v, i));
	}
	if (k == MATE_V_TUPLE && n == 1)
		mate_buf_putc(b, ',');
	mate_buf_putc(b, k == MATE_V_LIST ? ']' : k == MATE_V_TUPLE ? ')' : '}');
}

static void
fmt_seq(struct mate_buf *b, const mate_call *c, const mate_value *v, int indent)
{
	mate_value_kind k = mate_value_kind_of(v);
	size_t n = mate_value_len(v);
	char open = k == MATE_V_LIST ? '[' : k == MATE_V_TUPLE ? '(' : '{';
	char close = k == MATE_V_LIST ? ']' : k == MATE_V_TUPLE ? ')' : '}';

	mate_buf_spaces(b, indent * 2);
	mate_buf_putc(b, open);
	if (n == 0) {
		mate_buf_putc(b, close);
		return;
	}
	mate_buf_putc(b, '\n');
	for (size_t i = 0; i < n; i++) {
		mate_buf_spaces(b, indent * 2 + 2);
		if (k == MATE_V_DICT) {
			mate_rec_fmt_inline(b, mate_value_key(v, i));
			mate_buf_puts(b, ": ");
		} else {
			mate_buf_putc(b, '[');
			mate_buf_int(b, (int64_t)i);
			mate_buf_put(b, "]: ", 3);
		}
		mate_rec_fmt_value(b, c, mate_value_item(v, i), indent + 1);
		mate_buf_putc(b, '\n');
	}
	mate_buf_spaces(b, indent * 2);
	mate_buf_putc(b, close);
}

void
mate_rec_fmt_value(struct mate_buf *b, const mate_call *c, const mate_value *v, int indent)
{
	switch (mate_value_kind_of(v)) {
	case MATE_V_TENSOR:
		fmt_tensor(b, c, v, indent);
		break;
	case MATE_V_LIST:
	case MATE_V_TUPLE:
	case MATE_V_DICT:
		fmt_seq(b, c, v, indent);
		break;
	default:
		mate_buf_spaces(b, indent * 2);
		fmt_scalar(b, v);
	}
}

/* ---- blocks ---------------------------------------------------------------------------- */

static int
has_role(const mate_call *c, int role)
{
	for (size_t i = 0; i < c->nargs; i++)
		if (c->args[i].role == role)
			return 1;
	return 0;
}

/* The arguments of one role, each under its line: "  arg[<i>]:"
 * (positional; "  arg[<i>] (<name>):" with MATE_LOG_EXTRA where the caller
 * named it), "  <name>=" (keyword), "  <name>= [DEFAULT]". */
static void
fmt_args(struct mate_buf *b, const mate_call *c, int role)
{
	size_t idx = 0;

	for (size_t i = 0; i < c->nargs; i++) {
		const struct rec_arg *a = &c->args[i];
		if (a->role != role)
			continue;
		mate_buf_puts(b, "  ");
		if (role == MATE_ARG) {
			mate_buf_puts(b, "arg[");
			mate_buf_int(b, (int64_t)idx++);
			mate_buf_putc(b, ']');
			if (a->name != NULL)
				mate_buf_printf(b, " (%s)", a->name);
			mate_buf_put(b, ":\n", 2);
		} else {
			mate_buf_puts(b, a->name);
			mate_buf_puts(b, role == MATE_KWARG ? "=\n" : "= [DEFAULT]\n");
		}
		mate_rec_fmt_value(b, c, a->v, 2);
		mate_buf_putc(b, '\n');
	}
}

/* MATE_LOG_EXTRA: " (call N, thread T)" after a block's title, so that the
 * blocks of calls made at once on several threads can be told apart. */
static void
fmt_call_tag(struct mate_buf *b, const mate_call *c)
{
	if (c->log_id == 0)
		return;
	mate_buf_printf(b, " (call %llu, thread %ld)", (unsigned long long)c->log_id, c->log_tid);
}

void
mate_rec_fmt_inputs(struct mate_buf *b, const mate_call *c)
{
	int pos = has_role(c, MATE_ARG), kw = has_role(c, MATE_KWARG);

	mate_buf_puts(b, RULE_EQ);
	mate_buf_puts(b, c->stamp);
	mate_buf_printf(b, " %s API Call: ", mate_rec_name());
	mate_buf_puts(b, c->name);
	fmt_call_tag(b, c);
	mate_buf_putc(b, '\n');
	mate_buf_puts(b, RULE_DASH);
	if (pos)
		mate_buf_puts(b, "Positional input arguments:\n");
	fmt_args(b, c, MATE_ARG);
	if (kw)
		mate_buf_puts(b, "Keyword input arguments:\n");
	fmt_args(b, c, MATE_KWARG);
	if (!pos && !kw)
		mate_buf_puts(b, "(No explicit arguments)\n");
	if (has_role(c, MATE_DEFAULT))
		mate_buf_puts(b, "Default parameters (not explicitly provided):\n");
	fmt_args(b, c, MATE_DEFAULT);
}

/* MATE_LOG_EXTRA: the in-place arguments again, as the call left them (at
 * level 5 their statistics after the call: the NaNs it wrote, not those of
 * the buffer it was given). */
static void
fmt_inplace_after(struct mate_buf *b, const mate_call *c)
{
	size_t pos = 0;
	int any = 0;

	for (size_t i = 0; i < c->nargs; i++) {
		const struct rec_arg *a = &c->args[i];
		if (a->role == MATE_ARG)
			pos++;
		if (!a->inplace || mate_value_kind_of(a->v) != MATE_V_TENSOR)
			continue;
		if (!any)
			mate_buf_puts(b, "In-place arguments after the call:\n");
		any = 1;
		if (a->role == MATE_ARG && a->name != NULL)
			mate_buf_printf(b, "  arg[%zu] (%s):\n", pos - 1, a->name);
		else if (a->role == MATE_ARG)
			mate_buf_printf(b, "  arg[%zu]:\n", pos - 1);
		else
			mate_buf_printf(b, "  %s=\n", a->name != NULL ? a->name : "?");
		mate_rec_fmt_value(b, c, a->v, 2);
		mate_buf_putc(b, '\n');
	}
}

void
mate_rec_fmt_outputs(struct mate_buf *b, const mate_call *c)
{
	size_t n = 0, k = 0;

	for (size_t i = 0; i < c->nargs; i++)
		n += c->args[i].role == MATE_RESULT;
	mate_buf_puts(b, "Output value");
	if (c->log_id != 0)
		fmt_call_tag(b, c);
	mate_buf_puts(b, ":\n");
	if (n == 0)
		mate_buf_puts(b, "  None");
	else if (n == 1) {
		for (size_t i = 0; i < c->nargs; i++)
			if (c->args[i].role == MATE_RESULT)
				mate_rec_fmt_value(b, c, c->args[i].v, 1);
	} else {
		mate_buf_puts(b, "  (\n");
		for (size_t i = 0; i < c->nargs; i++) {
			if (c->args[i].role != MATE_RESULT)
				continue;
			mate_buf_puts(b, "    [");
			mate_buf_int(b, (int64_t)k++);
			mate_buf_puts(b, "]: ");
			mate_rec_fmt_value(b, c, c->args[i].v, 2);
			mate_buf_putc(b, '\n');
		}
		mate_buf_puts(b, "  )");
	}
	mate_buf_putc(b, '\n');
	if (c->log_id != 0)
		fmt_inplace_after(b, c);
	mate_buf_puts(b, RULE_EQ);
	mate_buf_putc(b, '\n');
}
