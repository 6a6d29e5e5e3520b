/* replay_export.c: mate-replay --export: one recorded call as a standalone reproducer: repro.py for torch/FlashInfer/MATE calls, repro.c and a Makefile for BLAS calls recorded by mate-record, with the tensors and a README. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "mate_replay.h"
#include "replay_export.h"

#define MAX_RECORD_FILE (64L << 20)  /* metadata.jsonl read for the README */

struct xp {
	const char *dump;
	char tmp[PATH_MAX];             /* the folder being written */
	int made;                       /* tmp exists */
	mate_dump *d;
	const struct mate_dump_info *info;
	mate_value *args, *outs;        /* outs NULL: nothing recorded after the call */
	cJSON *rec;                     /* the record, for the README (NULL: unreadable) */
	struct mate_export *x;
	mate_error *err;
	char files[3][64];              /* the tensor files copied ("" where none) */
	char **seq;                     /* a wrapper's method: the object's calls before it, */
	char **seqfn;                   /* from its __init__ on (dump folders, in call order) */
	char **seqname;                 /* and their methods and dump names */
	size_t nseq;
};

static int
fail(mate_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL) {
		err->code = code;
		err->sys_errno = code == MATE_ERR_IO ? errno : 0;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ---- the folder ------------------------------------------------------------- */

/* MATE_OK when dir does not exist or is an empty folder. */
static int
check_target(const char *dir, mate_error *err)
{
	struct stat st;
	struct dirent *e;
	DIR *dp;

	if (lstat(dir, &st) != 0)
		return errno == ENOENT ? MATE_OK : fail(err, MATE_ERR_IO, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(err, MATE_ERR_ARGUMENT, "%s exists and is not a folder: refusing to "
		    "replace it", dir);
	if ((dp = opendir(dir)) == NULL)
		return fail(err, MATE_ERR_IO, "%s: %s", dir, strerror(errno));
	while ((e = readdir(dp)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			closedir(dp);
			return fail(err, MATE_ERR_ARGUMENT, "%s is not empty: refusing to write into "
			    "it (give a new or empty folder)", dir);
		}
	closedir(dp);
	return MATE_OK;
}

/* The temporary folder beside dir: PARENT/.NAME.export-XXXXXX. */
static int
make_tmp(struct xp *p, const char *dir)
{
	char *copy = strdup(dir), *slash, *base;
	const char *parent;
	size_t n;

	if (copy == NULL)
		return fail(p->err, MATE_ERR_NOMEM, "out of memory");
	for (n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
		copy[n - 1] = '\0';
	slash = strrchr(copy, '/');
	if (slash == NULL) {
		parent = ".";
		base = copy;
	} else {
		*slash = '\0';
		parent = slash == copy ? "/" : copy;
		base = slash + 1;
	}
	if ((size_t)snprintf(p->tmp, sizeof(p->tmp), "%s/.%s.export-XXXXXX", parent, base) >=
	    sizeof(p->tmp)) {
		free(copy);
		return fail(p->err, MATE_ERR_ARGUMENT, "%s: path too long", dir);
	}
	free(copy);
	if (mkdtemp(p->tmp) == NULL)
		return fail(p->err, MATE_ERR_IO, "cannot make a folder beside %s: %s", dir,
		    strerror(errno));
	p->made = 1;
	return MATE_OK;
}

/* Removes the temporary folder and what was written into it (regular files only). */
static void
remove_tmp(struct xp *p)
{
	struct dirent *e;
	DIR *dp;
	int fd;

	if (!p->made)
		return;
	if ((dp = opendir(p->tmp)) != NULL) {
		fd = dirfd(dp);
		while ((e = readdir(dp)) != NULL)
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				(void)unlinkat(fd, e->d_name, 0);
		closedir(dp);
	}
	(void)rmdir(p->tmp);
	p->made = 0;
}

static int
io_fail(struct xp *p, const char *name)
{
	int e = errno;

	return fail(p->err, e == ENOSPC || e == EDQUOT ? MATE_ERR_NOSPACE : MATE_ERR_IO,
	    "%s: %s", name, strerror(e));
}

static int
write_all(int fd, const void *buf, size_t n)
{
	const char *s = buf;

	while (n > 0) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
put_file(struct xp *p, const char *name, const void *data, size_t len, int mode)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", p->tmp, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)) < 0)
		return io_fail(p, name);
	if (write_all(fd, data, len) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return io_fail(p, name);
	}
	if (close(fd) != 0)
		return io_fail(p, name);
	return MATE_OK;
}

/* Copies the dump's file name (a regular file, links not followed) into the folder. */
static int
copy_file(struct xp *p, const char *from, const char *name, const char *prefix)
{
	char src[PATH_MAX + 64], dst[PATH_MAX + 128], buf[1 << 16];
	int in, out, rc = MATE_OK;
	ssize_t n;

	snprintf(src, sizeof(src), "%s/%s", from, name);
	snprintf(dst, sizeof(dst), "%s/%s%s", p->tmp, prefix, name);
	if ((in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return fail(p->err, MATE_ERR_IO, "%s: %s", src, strerror(errno));
	if ((out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
		rc = io_fail(p, name);
		close(in);
		return rc;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fail(p->err, MATE_ERR_IO, "%s: %s", src, strerror(errno));
			break;
		}
		if (write_all(out, buf, (size_t)n) != 0) {
			rc = io_fail(p, name);
			break;
		}
	}
	close(in);
	if (close(out) != 0 && rc == MATE_OK)
		rc = io_fail(p, name);
	return rc;
}

/* The inputs, outputs and in-place files of the dump in `from` as they are
 * on disk, copied as PREFIX<name>; their names in files ("" where none). */
static int
copy_tensor_files(struct xp *p, const char *from, const char *prefix, char files[3][64])
{
	static const char *const stems[] = { "inputs", "outputs", "inplace" };
	static const char *const exts[] = { ".pt", ".safetensors" };
	char path[PATH_MAX + 64], name[64];
	struct stat st;
	int rc;

	for (size_t i = 0; i < 3; i++) {
		files[i][0] = '\0';
		for (size_t k = 0; k < 2; k++) {
			snprintf(name, sizeof(name), "%s%s", stems[i], exts[k]);
			snprintf(path, sizeof(path), "%s/%s", from, name);
			if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			if ((rc = copy_file(p, from, name, prefix)) != MATE_OK)
				return rc;
			snprintf(files[i], 64, "%s%s", prefix, name);
			break;
		}
	}
	return MATE_OK;
}

/* ---- the record (for the README) --------------------------------------------- */

static cJSON *
read_record(const char *dir)
{
	char path[PATH_MAX + 64];
	cJSON *last = NULL;
	char *buf, *line, *save = NULL;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/metadata.jsonl", dir);
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > MAX_RECORD_FILE ||
	    fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)n + 1)) == NULL) {
		fclose(f);
		return NULL;
	}
	n = (long)fread(buf, 1, (size_t)n, f);
	fclose(f);
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);

		if (cJSON_IsObject(o) && cJSON_GetObjectItemCaseSensitive(o, "execution_status")) {
			cJSON_Delete(last);
			last = o;
		} else {
			cJSON_Delete(o);
		}
	}
	free(buf);
	return last;
}

/* ---- text --------------------------------------------------------------------- */

/* s with '_' for all but printable ASCII and for the characters that could
 * end a comment or string of the code it goes into (quotes, backslash, '*'
 * of a C comment's end, '?' of a C trigraph): names from a dump in comments,
 * C strings and prose. */
static void
put_plain(FILE *f, const char *s)
{
	for (; s != NULL && *s != '\0'; s++)
		fputc((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f &&
		    strchr("\"\\'`*?", *s) == NULL ? *s : '_', f);
}

/* A Python bytes literal of s[0..n): b'...'. */
static void
put_py_bytes(FILE *f, const char *s, size_t n)
{
	fputs("b'", f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
	fputc('\'', f);
}

/* A Python str of any bytes from a dump: _s(b'...'). */
static void
put_py_str(FILE *f, const char *s, size_t n)
{
	fputs("_s(", f);
	put_py_bytes(f, s, n);
	fputc(')', f);
}

static void
put_py_cstr(FILE *f, const char *s)
{
	if (s == NULL)
		fputs("None", f);
	else
		put_py_str(f, s, strlen(s));
}

static void
put_py_float(FILE *f, double d)
{
	char b[64];

	if (isnan(d)) {
		fputs("float('nan')", f);
		return;
	}
	if (isinf(d)) {
		fputs(d > 0 ? "float('inf')" : "float('-inf')", f);
		return;
	}
	snprintf(b, sizeof(b), "%.15g", d);
	if (strtod(b, NULL) != d)
		snprintf(b, sizeof(b), "%.17g", d);
	fputs(b, f);
	if (strpbrk(b, ".e") == NULL)
		fputs(".0", f);
}

/* v as a Python expression: tensors as T[KEY] (key: the value's key in the
 * inputs file, NULL inside a dict). */
static int
put_py_value(struct xp *p, FILE *f, const mate_value *v, const char *key, int depth)
{
	size_t n, len;
	const char *s;
	char sub[256];
	int rc;

	if (depth > 64)
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s: nested too deeply", key ? key : "a value");
	switch (mate_value_kind_of(v)) {
	case MATE_V_NONE: fputs("None", f); return MATE_OK;
	case MATE_V_BOOL: fputs(mate_value_get_bool(v) ? "True" : "False", f); return MATE_OK;
	case MATE_V_INT: fprintf(f, "%lld", (long long)mate_value_get_int(v)); return MATE_OK;
	case MATE_V_FLOAT: put_py_float(f, mate_value_get_float(v)); return MATE_OK;
	case MATE_V_STR:
		s = mate_value_get_str(v, &len);
		put_py_str(f, s, len);
		return MATE_OK;
	case MATE_V_BYTES:
		s = mate_value_get_str(v, &len);
		put_py_bytes(f, s, len);
		return MATE_OK;
	case MATE_V_DTYPE:
		fprintf(f, "getattr(torch, '%s')", mate_dtype_name(mate_value_get_dtype(v)));
		return MATE_OK;
	case MATE_V_ENUM:
		fputs("_enum(", f);
		put_py_cstr(f, mate_value_enum_name(v));
		fprintf(f, ", %lld)", (long long)mate_value_get_int(v));
		return MATE_OK;
	case MATE_V_TENSOR:
		if (key == NULL)
			return fail(p->err, MATE_ERR_UNSUPPORTED, "a tensor inside a dict argument: "
			    "repro.py cannot name it in the inputs file");
		fputs("T[", f);
		put_py_cstr(f, key);
		fputc(']', f);
		return MATE_OK;
	case MATE_V_LIST:
	case MATE_V_TUPLE:
		n = mate_value_len(v);
		fputc(mate_value_kind_of(v) == MATE_V_LIST ? '[' : '(', f);
		for (size_t i = 0; i < n; i++) {
			snprintf(sub, sizeof(sub), "%s__%zu", key ? key : "", i);
			if (i > 0)
				fputs(", ", f);
			if ((rc = put_py_value(p, f, mate_value_item(v, i), key ? sub : NULL,
			    depth + 1)) != MATE_OK)
				return rc;
		}
		fputs(mate_value_kind_of(v) == MATE_V_LIST ? "]" : n == 1 ? ",)" : ")", f);
		return MATE_OK;
	case MATE_V_DICT:
		n = mate_value_len(v);
		fputc('{', f);
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				fputs(", ", f);
			if ((rc = put_py_value(p, f, mate_value_key(v, i), NULL, depth + 1)) != MATE_OK)
				return rc;
			fputs(": ", f);
			if ((rc = put_py_value(p, f, mate_value_item(v, i), NULL, depth + 1)) != MATE_OK)
				return rc;
		}
		fputc('}', f);
		return MATE_OK;
	case MATE_V_OBJECT:
	default:
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s is a %s object (%.80s), which repro.py "
		    "cannot rebuild", key ? key : "an argument", mate_value_object_type(v) ?
		    mate_value_object_type(v) : "Python", mate_value_object_repr(v) ?
		    mate_value_object_repr(v) : "no repr");
	}
}

/* ---- repro.py ------------------------------------------------------------------ */

static const char py_head[] =
"import argparse\n"
"import importlib\n"
"import math\n"
"import os\n"
"import sys\n"
"\n"
"import torch\n"
"\n"
"HERE = os.path.dirname(os.path.abspath(__file__))\n"
"MISSING = object()\n"
"\n"
"\n"
"def _s(b):\n"
"    \"\"\"A string from the record (any bytes, written escaped).\"\"\"\n"
"    return b.decode(\"utf-8\", \"surrogateescape\")\n"
"\n"
"\n"
"def _enum(name, value):\n"
"    \"\"\"An enum argument, recorded as its name and value: passed as its value.\"\"\"\n"
"    return value\n"
"\n"
"\n";

static const char py_body[] =
"def fail(msg):\n"
"    print(\"repro.py: \" + msg, file=sys.stderr)\n"
"    sys.exit(2)\n"
"\n"
"\n"
"def load(name):\n"
"    \"\"\"The tensors of one of the dump's files, by key, on the CPU.\"\"\"\n"
"    if name is None:\n"
"        return {}\n"
"    path = os.path.join(HERE, name)\n"
"    if not os.path.isfile(path):\n"
"        fail(\"%s: no such file (it is part of this reproducer)\" % name)\n"
"    try:\n"
"        if name.endswith(\".safetensors\"):\n"
"            from safetensors.torch import load_file\n"
"            return load_file(path)\n"
"        try:\n"
"            return torch.load(path, map_location=\"cpu\", weights_only=True)\n"
"        except TypeError:  # a torch before 1.13 has no weights_only\n"
"            return torch.load(path, map_location=\"cpu\")\n"
"    except Exception as e:\n"
"        fail(\"%s: cannot be read: %s\" % (name, e))\n"
"\n"
"\n"
"def resolve(what=None):\n"
"    \"\"\"The recorded function (or a wrapper's class, what): MODULE.NAME, else NAME's\n"
"    last part in MODULE's package.\"\"\"\n"
"    why, what = None, what or NAME\n"
"    for mod, name in ((MODULE, what), (MODULE.split(\".\")[0], what.split(\".\")[-1])):\n"
"        try:\n"
"            obj = importlib.import_module(mod)\n"
"            for part in name.split(\".\"):\n"
"                obj = getattr(obj, part)\n"
"            if callable(obj):\n"
"                return obj\n"
"        except Exception as e:\n"
"            why = why or \"%s: %s\" % (type(e).__name__, e)\n"
"    fail(\"cannot find %s.%s: %s\" % (MODULE, what, why))\n"
"\n"
"\n"
"def setup(device):\n"
"    \"\"\"A wrapper's object as the recording made it: CLASS(...) with its __init__'s\n"
"    arguments, then its other recorded calls before this one (SEQUENCE), in order.\"\"\"\n"
"    cls, obj = resolve(CLASS), None\n"
"    for method, files, arguments_of in SEQUENCE:\n"
"        T = {k: v.to(device) for k, v in load(files[0]).items()}\n"
"        try:\n"
"            args, kwargs = arguments_of(T, obj)\n"
"        except KeyError as e:\n"
"            fail(\"%s has no tensor %s\" % (files[0], e))\n"
"        if method == \"__init__\":\n"
"            obj = cls(*args, **kwargs)\n"
"        else:\n"
"            getattr(obj, method)(*args, **kwargs)\n"
"    return obj\n"
"\n"
"\n"
"def index_of(shape, i):\n"
"    idx = []\n"
"    for d in reversed(shape):\n"
"        idx.append(i % d if d else 0)\n"
"        i = i // d if d else 0\n"
"    return \"[\" + \", \".join(str(v) for v in reversed(idx)) + \"]\"\n"
"\n"
"\n"
"def same_bits(x, y):\n"
"    try:\n"
"        return torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8))\n"
"    except Exception:\n"
"        return torch.equal(x, y)\n"
"\n"
"\n"
"def product_bound(T):\n"
"    \"\"\"A matrix product's result may differ from the recorded one by its reduction\n"
"    bound 2 K u (|A| |B|)ij beyond the tolerance, as mate-replay allows:\n"
"    (bound, K), or (None, 0) for another call.\"\"\"\n"
"    a, b = (T.get(k) for k in REDUCTION) if REDUCTION else (None, None)\n"
"    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() in (2, 3)\n"
"            and b.dim() == a.dim() and a.is_floating_point() and b.is_floating_point()):\n"
"        return None, 0\n"
"    u = 2.0 ** -53 if a.dtype == torch.float64 and b.dtype == torch.float64 else 2.0 ** -24\n"
"    mags = torch.matmul(a.detach().cpu().double().abs(), b.detach().cpu().double().abs())\n"
"    return 2 * a.shape[-1] * u * mags, int(a.shape[-1])\n"
"\n"
"\n"
"def compare(key, x, y, rtol, atol, bound=None, k=0):\n"
"    \"\"\"The recorded tensor x against the result y, as mate-replay compares them:\n"
"    floats within atol + rtol |x| (plus a product's bound), NaN where x has NaN,\n"
"    infinities exact; other dtypes exactly. Returns (message or None, bit-exact,\n"
"    max abs err, max rel err, the worst error as a multiple of its bound, K).\"\"\"\n"
"    if not isinstance(y, torch.Tensor):\n"
"        return \"%s: expected a tensor, got %s\" % (key, type(y).__name__), False, 0.0, 0.0, 0.0, 0\n"
"    y = y.detach().to(\"cpu\")\n"
"    if y.dtype != x.dtype:\n"
"        return (\"%s: dtype %s, expected %s\" % (key, str(y.dtype)[6:], str(x.dtype)[6:]),\n"
"                False, 0.0, 0.0, 0.0, 0)\n"
"    if tuple(y.shape) != tuple(x.shape):\n"
"        return (\"%s: shape %s, expected %s\" % (key, tuple(y.shape), tuple(x.shape)),\n"
"                False, 0.0, 0.0, 0.0, 0)\n"
"    xf, yf = x.contiguous().reshape(-1), y.contiguous().reshape(-1)\n"
"    numel = xf.numel()\n"
"    if numel == 0 or same_bits(xf, yf):\n"
"        return None, True, 0.0, 0.0, 0.0, 0\n"
"    if bound is not None and (not x.is_floating_point() or tuple(bound.shape) != tuple(x.shape)):\n"
"        bound, k = None, 0\n"
"    ratio = 0.0\n"
"    parts = x.is_complex()\n"
"    if parts:\n"
"        xf, yf = torch.view_as_real(xf).reshape(-1), torch.view_as_real(yf).reshape(-1)\n"
"    if parts or x.is_floating_point():\n"
"        xd, yd = xf.double(), yf.double()\n"
"        xn, yn, xi, yi = xd.isnan(), yd.isnan(), xd.isinf(), yd.isinf()\n"
"        fin = ~(xn | yn | xi | yi)\n"
"        e = (yd - xd).abs()\n"
"        tol = atol + rtol * xd.abs()\n"
"        if bound is not None:\n"
"            tol = tol + bound.reshape(-1)\n"
"            ratio = float((e[fin] / tol[fin]).max()) if int(fin.sum()) else 0.0\n"
"        bad = torch.where(xn | yn, xn != yn, torch.where(xi | yi, xd != yd, e > tol))\n"
"        ef, xa = e[fin], xd[fin].abs()\n"
"        rel = torch.where(xa != 0, ef / torch.where(xa != 0, xa, torch.ones_like(xa)),\n"
"                          torch.where(ef != 0, torch.full_like(ef, math.inf), torch.zeros_like(ef)))\n"
"        mx_abs = float(ef.max()) if ef.numel() else 0.0\n"
"        mx_rel = float(rel.max()) if rel.numel() else 0.0\n"
"        nz = xa != 0\n"
"        mean_abs = float(ef.mean()) if ef.numel() else 0.0\n"
"        mean_rel = float(rel[nz].mean()) if int(nz.sum()) else 0.0\n"
"    else:\n"
"        bad = xf.long() != yf.long()\n"
"        mx_abs = mx_rel = 0.0\n"
"    nbad = int(bad.sum())\n"
"    if nbad == 0:\n"
"        return None, False, mx_abs, mx_rel, ratio, k\n"
"    first = int(torch.nonzero(bad)[0][0])\n"
"    ex, got = float(xf[first]), float(yf[first])\n"
"    if parts:\n"
"        where = index_of(tuple(x.shape), first // 2) + (\".imag\" if first % 2 else \".real\")\n"
"    else:\n"
"        where = index_of(tuple(x.shape), first)\n"
"    if not (parts or x.is_floating_point()):\n"
"        msg = \"%s%s: expected %.17g, got %.17g; %d of %d elements differ (exact), %.3g%%\" % (\n"
"            key, where, ex, got, nbad, numel, 100.0 * nbad / numel)\n"
"        return msg, False, mx_abs, mx_rel, 0.0, 0\n"
"    n = xf.numel()\n"
"    e1 = abs(got - ex)\n"
"    r1 = e1 / abs(ex) if ex != 0 else math.inf\n"
"    nonfinite = int((bad & ~fin).sum())\n"
"    msg = \"%s%s: expected %.9g, got %.9g (abs err %.3g, rel err %.3g); %d of %d elements beyond \" \\\n"
"        \"rtol %g, atol %g\" % (key, where, ex, got, e1, r1, nbad, n, rtol, atol)\n"
"    if bound is not None and not nonfinite:\n"
"        msg += \" plus the reduction bound 2 K u (|A| |B|)ij (K %d) (%.3g%%); the worst error \" \\\n"
"            \"%.3g times its bound\" % (k, 100.0 * nbad / n, ratio)\n"
"    else:\n"
"        msg += \" (%.3g%%)\" % (100.0 * nbad / n)\n"
"    if nonfinite:\n"
"        msg += \", of them %d NaN or infinite where the other is not\" % nonfinite\n"
"    msg += \"; max abs err %.3g, max rel err %.3g, mean abs err %.3g, mean rel err %.3g\" % (\n"
"        mx_abs, mx_rel, mean_abs, mean_rel)\n"
"    return msg, False, mx_abs, mx_rel, ratio, k\n"
"\n"
"\n"
"def same_value(x, y):\n"
"    \"\"\"A recorded value other than a tensor against the result.\"\"\"\n"
"    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):\n"
"        return len(x) == len(y) and all(same_value(a, b) for a, b in zip(x, y))\n"
"    if isinstance(x, dict) and isinstance(y, dict):\n"
"        return x.keys() == y.keys() and all(same_value(x[k], y[k]) for k in x)\n"
"    if isinstance(y, torch.Tensor) and y.dim() == 0 and not isinstance(x, torch.Tensor):\n"
"        y = y.item()\n"
"    if isinstance(x, float) or isinstance(y, float):\n"
"        if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):\n"
"            return False\n"
"        if math.isnan(x) or math.isnan(y):\n"
"            return math.isnan(x) and math.isnan(y)\n"
"        return x == y or abs(y - x) <= 1e-12 + 1e-12 * abs(x)\n"
"    return x == y\n"
"\n"
"\n"
"def main():\n"
"    default = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
"    ap = argparse.ArgumentParser(description=\"Runs one recorded call again and compares its \"\n"
"                                 \"outputs with the recorded ones: exit 0 when they match, 1 \"\n"
"                                 \"when they do not (or the call fails), 2 when it cannot run.\")\n"
"    ap.add_argument(\"--device\", choices=(\"cpu\", \"cuda\"), default=default,\n"
"                    help=\"where to run the call (default: %s)\" % default)\n"
"    a = ap.parse_args()\n"
"    if a.device == \"cuda\" and not torch.cuda.is_available():\n"
"        fail(\"--device cuda: this torch sees no CUDA device\")\n"
"    T = {k: v.to(a.device) for k, v in load(FILES[0]).items()}\n"
"    E = dict(load(FILES[1]))\n"
"    E.update(load(FILES[2]))\n"
"    fn = None if METHOD or WRAPPER else resolve()\n"
"    obj = None\n"
"    if WRAPPER:\n"
"        try:\n"
"            obj = setup(a.device)\n"
"        except Exception as e:\n"
"            print(\"%s: Error: the object's recorded calls before it: %s: %s\" % (\n"
"                LABEL, type(e).__name__, e))\n"
"            return 1\n"
"    try:\n"
"        args, kwargs = arguments(T, obj)\n"
"    except KeyError as e:\n"
"        fail(\"the inputs file has no tensor %s\" % e)\n"
"    try:\n"
"        if METHOD:\n"
"            ret = getattr(args[0], NAME)(*args[1:], **kwargs)\n"
"        elif WRAPPER:\n"
"            ret = getattr(obj, NAME)(*args, **kwargs)\n"
"        else:\n"
"            ret = fn(*args, **kwargs)\n"
"        if a.device == \"cuda\":\n"
"            torch.cuda.synchronize()\n"
"    except Exception as e:\n"
"        print(\"%s: Error: %s: %s\" % (LABEL, type(e).__name__, e))\n"
"        return 1\n"
"    if not RECORDED:\n"
"        print(\"%s: Ran, unchecked: the recording has no outputs to compare\" % LABEL)\n"
"        return 0\n"
"    bound, k = product_bound(T)\n"
"    bad, exact, mx_abs, mx_rel, ratio, red_k = [], True, 0.0, 0.0, 0.0, 0\n"
"    for key in CHECK:\n"
"        if key == \"result\":\n"
"            got = ret\n"
"        elif key.startswith(\"result_\"):\n"
"            i = int(key[7:])\n"
"            got = ret[i] if isinstance(ret, (tuple, list)) and i < len(ret) else MISSING\n"
"        else:\n"
"            got = T.get(key, MISSING)\n"
"        if got is MISSING:\n"
"            bad.append(\"%s: not produced by the call\" % key)\n"
"            continue\n"
"        if key in E:\n"
"            rtol, atol = TOL.get(key, (0.0, 0.0))\n"
"            msg, ex, ma, mr, q, kk = compare(key, E[key], got, rtol, atol, bound, k)\n"
"            exact = exact and ex\n"
"            mx_abs, mx_rel, ratio, red_k = max(mx_abs, ma), max(mx_rel, mr), max(ratio, q), max(red_k, kk)\n"
"        else:\n"
"            msg = None if same_value(VALUES[key], got) else \"%s: expected %r, got %r\" % (\n"
"                key, VALUES[key], got)\n"
"            exact = exact and msg is None\n"
"        if msg:\n"
"            bad.append(msg)\n"
"    if bad:\n"
"        print(\"%s: Mismatch: %s\" % (LABEL, bad[0]) + (\"; %d more outputs differ\" % (len(bad) - 1)\n"
"                                                     if len(bad) > 1 else \"\"))\n"
"        return 1\n"
"    if exact:\n"
"        print(\"%s: Passed (bit-exact)\" % LABEL)\n"
"    elif red_k:\n"
"        print(\"%s: Passed (max abs err %.3g, max rel err %.3g; within the reduction bound \"\n"
"              \"2 K u (|A| |B|)ij (K %d): the worst error %.3g times its bound)\" % (\n"
"                  LABEL, mx_abs, mx_rel, red_k, ratio))\n"
"    else:\n"
"        print(\"%s: Passed (max abs err %.3g, max rel err %.3g)\" % (LABEL, mx_abs, mx_rel))\n"
"    return 0\n"
"\n"
"\n"
"if __name__ == \"__main__\":\n"
"    sys.exit(main())\n";

/* def arguments(T): the recorded positional and keyword arguments. */
static int
put_py_arguments(struct xp *p, FILE *f, const char *fname, int self)
{
	size_t n = mate_value_len(p->args), npos = 0;
	char key[32];
	int rc;

	for (size_t i = 0; i < n; i++) {
		const char *k = mate_value_get_str(mate_value_key(p->args, i), NULL);

		if (k != NULL && strncmp(k, "arg_", 4) == 0)
			npos++;
	}
	fprintf(f, "def %s(T, obj=None):\n    \"\"\"The recorded arguments; T: the inputs file's "
	    "tensors on the device%s.\"\"\"\n    args = [\n", fname, self ? "; the recorded "
	    "self (arg_0), the object, is left out" : "");
	for (size_t i = self ? 1 : 0; i < npos; i++) {
		const mate_value *v;

		snprintf(key, sizeof(key), "arg_%zu", i);
		if ((v = mate_value_lookup(p->args, key)) == NULL)
			return fail(p->err, MATE_ERR_UNSUPPORTED, "positional argument %zu was not "
			    "recorded", i);
		fputs("        ", f);
		if ((rc = put_py_value(p, f, v, key, 0)) != MATE_OK)
			return rc;
		fputs(",\n", f);
	}
	fputs("    ]\n    kwargs = {\n", f);
	for (size_t i = 0; i < n; i++) {
		const char *k = mate_value_get_str(mate_value_key(p->args, i), NULL);

		if (k == NULL || strncmp(k, "kwarg_", 6) != 0)
			continue;
		fputs("        ", f);
		put_py_cstr(f, k + 6);
		fputs(": ", f);
		if ((rc = put_py_value(p, f, mate_value_item(p->args, i), k, 0)) != MATE_OK)
			return rc;
		fputs(",\n", f);
	}
	fputs("    }\n    return args, kwargs\n\n\n", f);
	return MATE_OK;
}

/* CHECK, TOL and VALUES: what is compared after the call, and how. */
static int
put_py_checks(struct xp *p, FILE *f)
{
	size_t n = p->outs ? mate_value_len(p->outs) : 0;
	int rc;

	fputs("# the recorded outputs compared after the call: what it returned (result,\n"
	    "# result_<i>) and the arguments it wrote in place; tolerances as mate-replay's\n"
	    "CHECK = [", f);
	for (size_t i = 0; i < n; i++) {
		const char *k = mate_value_get_str(mate_value_key(p->outs, i), NULL);

		if (k == NULL || mate_value_kind_of(mate_value_item(p->outs, i)) == MATE_V_OBJECT)
			continue;
		put_py_cstr(f, k);
		fputs(", ", f);
	}
	fputs("]\nTOL = {  # key: (rtol, atol); integers and bool exactly\n", f);
	for (size_t i = 0; i < n; i++) {
		const char *k = mate_value_get_str(mate_value_key(p->outs, i), NULL);
		const mate_value *v = mate_value_item(p->outs, i);
		const mate_tensor *t;
		double r, a;
		int kind;

		if (k == NULL || mate_value_kind_of(v) != MATE_V_TENSOR)
			continue;
		t = mate_value_get_tensor(v);
		kind = mate_dtype_kind(t->dtype);
		mate_replay_default_tolerance(t->dtype, &r, &a);
		if (kind == MATE_KIND_FLOAT || kind == MATE_KIND_COMPLEX) {
			if (p->x->rtol >= 0)
				r = p->x->rtol;
			if (p->x->atol >= 0)
				a = p->x->atol;
		}
		fputs("    ", f);
		put_py_cstr(f, k);
		fputs(": (", f);
		put_py_float(f, r);
		fputs(", ", f);
		put_py_float(f, a);
		fputs("),  # ", f);
		fputs(mate_dtype_name(t->dtype), f);
		fputc('\n', f);
	}
	fputs("}\nVALUES = {  # the recorded values that are not tensors\n", f);
	for (size_t i = 0; i < n; i++) {
		const char *k = mate_value_get_str(mate_value_key(p->outs, i), NULL);
		const mate_value *v = mate_value_item(p->outs, i);

		if (k == NULL || mate_value_kind_of(v) == MATE_V_TENSOR ||
		    mate_value_kind_of(v) == MATE_V_OBJECT)
			continue;
		fputs("    ", f);
		put_py_cstr(f, k);
		fputs(": ", f);
		if ((rc = put_py_value(p, f, v, NULL, 0)) != MATE_OK)
			return rc;
		fputs(",\n", f);
	}
	fputs("}\n\n\n", f);
	return MATE_OK;
}

/* SEQUENCE: a wrapper's calls before the exported one, their files copied as
 * call<k>_<name>, each with its arguments_<k>(T, obj). */
static int
put_py_sequence(struct xp *p, FILE *f)
{
	char (*files)[3][64] = NULL;
	mate_value *keep = p->args;
	int rc = MATE_OK;

	if (p->seq == NULL) {
		fputs("SEQUENCE = []  # not a wrapper's method\n\n\n", f);
		return MATE_OK;
	}
	if ((files = calloc(p->nseq, sizeof(*files))) == NULL)
		return fail(p->err, MATE_ERR_NOMEM, "out of memory");
	for (size_t k = 0; k < p->nseq && rc == MATE_OK; k++) {
		char prefix[32], fname[32];
		mate_dump *d;

		snprintf(prefix, sizeof(prefix), "call%zu_", k + 1);
		snprintf(fname, sizeof(fname), "arguments_%zu", k + 1);
		if ((d = mate_dump_open(p->seq[k], p->err)) == NULL) {
			rc = p->err->code ? p->err->code : MATE_ERR_IO;
			break;
		}
		if ((p->args = mate_dump_load_args(d, p->err)) == NULL)
			rc = p->err->code ? p->err->code : MATE_ERR_FORMAT;
		if (rc == MATE_OK)
			rc = copy_tensor_files(p, p->seq[k], prefix, files[k]);
		if (rc == MATE_OK)
			rc = put_py_arguments(p, f, fname, 1);
		mate_value_free(p->args);
		mate_dump_free(d);
	}
	p->args = keep;
	if (rc == MATE_OK) {
		fputs("# the object's recorded calls before this one, from its __init__ on:\n"
		    "# (method, its files: inputs, outputs, in place, its arguments)\nSEQUENCE = [\n", f);
		for (size_t k = 0; k < p->nseq; k++) {
			fputs("    (", f);
			put_py_cstr(f, p->seqfn[k]);
			fputs(", (", f);
			for (int j = 0; j < 3; j++) {
				if (files[k][j][0])
					put_py_cstr(f, files[k][j]);
				else
					fputs("None", f);
				fputs(j < 2 ? ", " : "), ", f);
			}
			fprintf(f, "arguments_%zu),\n", k + 1);
		}
		fputs("]\n\n\n", f);
	}
	free(files);
	return rc;
}

/* Which function repro.py calls, or why it cannot. */
static int
python_target(struct xp *p, int *method, const char **name)
{
	const struct mate_dump_info *i = p->info;
	const char *fn = i->function, *mod = i->module;

	*method = 0;
	*name = fn;
	if (strncmp(fn, "Tensor.", 7) == 0 && fn[7] != '\0' && strchr(fn + 7, '.') == NULL) {
		*method = 1;    /* MATE's name of a method of the first argument */
		*name = fn + 7;
		return MATE_OK;
	}
	if (p->seq != NULL)
		*name = strrchr(fn, '.') + 1;   /* a wrapper's method, called on the object */
	else if (i->self_id != NULL || strchr(fn, '.') != NULL)
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s is a method of a recorded object: its "
		    "__init__ and plan calls would have to run first; --export cannot export a "
		    "wrapper's calls yet", fn);
	if (mod == NULL || mod[0] == '\0' || strcmp(mod, "<unknown>") == 0)
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s: the record names no module to import "
		    "it from", fn);
	if (strcmp(mod, "__main__") == 0)
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s is defined in the recorded program "
		    "itself (module __main__), which repro.py cannot import", fn);
	return MATE_OK;
}

static int
write_python(struct xp *p)
{
	const struct mate_dump_info *i = p->info;
	char *text = NULL;
	size_t len = 0;
	const char *name;
	int method, rc;
	FILE *f;

	if ((rc = python_target(p, &method, &name)) != MATE_OK)
		return rc;
	if ((f = open_memstream(&text, &len)) == NULL)
		return fail(p->err, MATE_ERR_NOMEM, "out of memory");
	fputs("#!/usr/bin/env python3\n\"\"\"repro.py: ", f);
	put_plain(f, i->function);
	fputs(" as recorded in ", f);
	put_plain(f, i->name);
	fputs(", standalone.\n\nWritten by mate-replay --export: loads the recorded tensors, calls the "
	    "real API,\ncompares its outputs with the recorded ones at mate-replay's tolerances, "
	    "prints\na verdict and exits 0 when they match, 1 when they do not (or the call fails),\n"
	    "2 when it cannot run (python3 repro.py --device cpu|cuda).\"\"\"\n", f);
	fputs(py_head, f);
	fputs("MODULE = ", f);
	put_py_cstr(f, i->module ? i->module : "");
	fputs("\nNAME = ", f);
	put_py_cstr(f, name);
	fprintf(f, "\nMETHOD = %s  # a method of the first argument (MATE's Tensor.NAME)\n",
	    method ? "True" : "False");
	fprintf(f, "WRAPPER = %s  # a method of a recorded object, made again by setup()\n",
	    p->seq != NULL ? "True" : "False");
	fputs("CLASS = ", f);
	if (p->seq != NULL)
		put_py_str(f, i->function, (size_t)(name - 1 - i->function));
	else
		fputs("None", f);
	fputc('\n', f);
	fputs("LABEL = ", f);
	{
		char label[1024];

		snprintf(label, sizeof(label), "%s (%s)", i->function, i->name);
		put_py_cstr(f, label);
	}
	fputs("\nFILES = (", f);
	for (int k = 0; k < 3; k++) {
		if (p->files[k][0])
			put_py_cstr(f, p->files[k]);
		else
			fputs("None", f);
		fputs(k < 2 ? ", " : ")  # inputs, outputs, in place\n", f);
	}
	fprintf(f, "RECORDED = %s  # the call's outputs were recorded (status %s)\n",
	    p->outs ? "True" : "False", mate_dump_status_name(i->status));
	{
		/* mate-replay's mm and bmm handlers bound their result by the product's reduction */
		int product = strcmp(name, "mm") == 0 || strcmp(name, "bmm") == 0;

		product = product && mate_value_kind_of(mate_value_lookup(p->args, "arg_0")) == MATE_V_TENSOR &&
		    mate_value_kind_of(mate_value_lookup(p->args, "arg_1")) == MATE_V_TENSOR;
		fputs(product ? "REDUCTION = (_s(b'arg_0'), _s(b'arg_1'))  # a matrix product's operands\n" :
		    "REDUCTION = None  # not a matrix product: no reduction bound\n", f);
	}
	if ((rc = put_py_checks(p, f)) == MATE_OK)
		rc = put_py_arguments(p, f, "arguments", p->seq != NULL);
	if (rc == MATE_OK)
		rc = put_py_sequence(p, f);
	fputs(py_body, f);
	if (fclose(f) != 0 && rc == MATE_OK)
		rc = fail(p->err, MATE_ERR_NOMEM, "out of memory");
	if (rc == MATE_OK)
		rc = put_file(p, "repro.py", text, len, 0755);
	free(text);
	p->x->kind = "python";
	return rc;
}

/* ---- repro.c: BLAS --------------------------------------------------------------- */

/* Where a GEMM's arguments are, as replay_blas.c reads them. */
struct gemm_layout {
	const char *fn;
	int order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc;
	int fortran, dbl, cublas;
	int atype, btype, ctype, compute, algo;   /* cublasGemmEx's (-1: none) */
	int sa, sb, sc, batch;                    /* cublasGemmStridedBatchedEx's (-1: none) */
};

static const struct gemm_layout gemm_layouts[] = {
	{ "cblas_sgemm", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 0, 0, -1, -1, -1, -1, -1,
	    -1, -1, -1, -1 },
	{ "cblas_dgemm", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 1, 0, -1, -1, -1, -1, -1,
	    -1, -1, -1, -1 },
	{ "sgemm_", -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 0, 0, -1, -1, -1, -1, -1, -1, -1,
	    -1, -1 },
	{ "dgemm_", -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 1, 0, -1, -1, -1, -1, -1, -1, -1,
	    -1, -1 },
	{ "cublasSgemm_v2", -1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 0, 1, -1, -1, -1, -1,
	    -1, -1, -1, -1, -1 },
	{ "cublasSgemm", -1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 0, 1, -1, -1, -1, -1, -1,
	    -1, -1, -1, -1 },
	/* (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
	 *  ldc, computeType, algo): float32 operands */
	{ "cublasGemmEx", -1, 1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 13, 14, 16, 0, 0, 1, 8, 11, 15, 17,
	    18, -1, -1, -1, -1 },
	/* (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,
	 *  beta, C, Ctype, ldc, strideC, batchCount, computeType, algo): float32 operands */
	{ "cublasGemmStridedBatchedEx", -1, 1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 15, 16, 18, 0, 0, 1, 8,
	    12, 17, 21, 22, 10, 14, 19, 20 },
};

/* The cuBLAS compute types a float32 GemmEx takes (alpha and beta float), with the unit
 * roundoff of their products as mate-replay bounds them (replay_blas.c's compute_unit()):
 * TF32 and FP16 keep 10 bits of mantissa, BF16 7. */
struct compute_type {
	int v;
	const char *name;
	double u;
};
static const struct compute_type compute_types[] = {
	{ 68, "CUBLAS_COMPUTE_32F", 0x1p-24 }, { 69, "CUBLAS_COMPUTE_32F_PEDANTIC", 0x1p-24 },
	{ 74, "CUBLAS_COMPUTE_32F_FAST_16F", 0x1p-11 },
	{ 75, "CUBLAS_COMPUTE_32F_FAST_16BF", 0x1p-8 },
	{ 77, "CUBLAS_COMPUTE_32F_FAST_TF32", 0x1p-11 }, { 0, "CUDA_R_32F", 0x1p-24 },
};

static const mate_value *
arg_at(struct xp *p, int pos)
{
	char key[32];

	snprintf(key, sizeof(key), "arg_%d", pos);
	return mate_value_lookup(p->args, key);
}

static int
arg_int(struct xp *p, int pos, const char *what, int64_t lo, int64_t *out)
{
	const mate_value *v = arg_at(p, pos);
	mate_value_kind k = mate_value_kind_of(v);

	if (v == NULL || (k != MATE_V_INT && k != MATE_V_ENUM))
		return fail(p->err, MATE_ERR_FORMAT, "%s: %s (argument %d) is not a recorded integer",
		    p->info->name, what, pos);
	*out = mate_value_get_int(v);
	if (*out < lo || *out > INT_MAX)
		return fail(p->err, MATE_ERR_FORMAT, "%s: %s is %lld (want %lld to %d)", p->info->name,
		    what, (long long)*out, (long long)lo, INT_MAX);
	return MATE_OK;
}

static int
arg_float(struct xp *p, int pos, const char *what, double *out)
{
	const mate_value *v = arg_at(p, pos);
	mate_value_kind k = mate_value_kind_of(v);

	if (v == NULL || (k != MATE_V_INT && k != MATE_V_FLOAT))
		return fail(p->err, MATE_ERR_FORMAT, "%s: %s (argument %d) is not a recorded number",
		    p->info->name, what, pos);
	*out = mate_value_get_float(v);
	return MATE_OK;
}

/* A long long argument from 0 up (a batch's stride). */
static int
arg_ll(struct xp *p, int pos, const char *what, int64_t *out)
{
	const mate_value *v = arg_at(p, pos);

	if (mate_value_kind_of(v) != MATE_V_INT || mate_value_get_int(v) < 0)
		return fail(p->err, MATE_ERR_FORMAT, "%s: %s (argument %d) is not a recorded "
		    "count from 0", p->info->name, what, pos);
	*out = mate_value_get_int(v);
	return MATE_OK;
}

/* An integer argument of any value an int holds (cublasGemmAlgo_t's -1 and up). */
static int
arg_int_any(struct xp *p, int pos, const char *what, int64_t *out)
{
	const mate_value *v = arg_at(p, pos);
	mate_value_kind k = mate_value_kind_of(v);

	if (v == NULL || (k != MATE_V_INT && k != MATE_V_ENUM) ||
	    mate_value_get_int(v) < INT_MIN || mate_value_get_int(v) > INT_MAX)
		return fail(p->err, MATE_ERR_FORMAT, "%s: %s (argument %d) is not a recorded int",
		    p->info->name, what, pos);
	*out = mate_value_get_int(v);
	return MATE_OK;
}

/* A transpose as 'N', 'T' or 'C'. */
static int
arg_trans(struct xp *p, const struct gemm_layout *l, int pos, const char *what, char *out)
{
	const mate_value *v = arg_at(p, pos);
	const char *s;
	int64_t i;
	int rc;

	if (mate_value_kind_of(v) == MATE_V_STR) {
		s = mate_value_get_str(v, NULL);
		if (s == NULL || s[0] == '\0' || strchr("NnTtCc", s[0]) == NULL)
			return fail(p->err, MATE_ERR_FORMAT, "%s: %s: expected 'N', 'T' or 'C'",
			    p->info->name, what);
		*out = (char)(s[0] >= 'a' ? s[0] - 'a' + 'A' : s[0]);
		return MATE_OK;
	}
	if ((rc = arg_int(p, pos, what, 0, &i)) != MATE_OK)
		return rc;
	if (l->cublas && i <= 2)
		*out = "NTC"[i];
	else if (!l->cublas && i >= 111 && i <= 113)
		*out = "NTC"[i - 111];
	else
		return fail(p->err, MATE_ERR_FORMAT, "%s: %s: bad value %lld", p->info->name, what,
		    (long long)i);
	return MATE_OK;
}

/* One operand: the stored rows x cols matrix with leading dimension ld. */
struct operand {
	char key[32];                   /* arg_<i> */
	const mate_tensor *t;           /* its recorded value before the call */
	int64_t rows, cols, ld, extent; /* extent: elements of the buffer */
	int64_t batch, stride;          /* a strided batch of matrices (batch 0: one) */
};

/* Operand what (argument pos): a rows x cols matrix with leading dimension ld, or (batch > 0)
 * batch of them stride elements apart, recorded as [batch, rows, cols]. */
static int
operand(struct xp *p, int pos, const char *what, int64_t rows, int64_t cols, int64_t ld,
    int colmajor, mate_dtype dt, int64_t batch, int64_t stride, struct operand *o)
{
	const mate_value *v = arg_at(p, pos);
	int64_t inner = colmajor ? rows : cols, outer = colmajor ? cols : rows;
	int b = batch > 0;

	snprintf(o->key, sizeof(o->key), "arg_%d", pos);
	if (mate_value_kind_of(v) != MATE_V_TENSOR)
		return fail(p->err, MATE_ERR_FORMAT, "%s: %s (argument %d) is not a recorded tensor",
		    p->info->name, what, pos);
	o->t = mate_value_get_tensor(v);
	if (o->t->dtype != dt || o->t->device_type != MATE_DEVICE_CPU)
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s: %s is %s, not the %s the function takes",
		    p->info->name, what, mate_dtype_name(o->t->dtype), mate_dtype_name(dt));
	if (o->t->ndim != 2 + b || (b && o->t->shape[0] != batch) || o->t->shape[b] != rows ||
	    o->t->shape[b + 1] != cols)
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s: %s is not recorded as the %s%lld x %lld "
		    "matri%s the arguments describe", p->info->name, what, b ? "batch of " : "",
		    (long long)rows, (long long)cols, b ? "ces" : "x");
	if (ld < (inner > 1 ? inner : 1))
		return fail(p->err, MATE_ERR_FORMAT, "%s: the leading dimension of %s is %lld, below "
		    "%lld", p->info->name, what, (long long)ld, (long long)inner);
	o->rows = rows;
	o->cols = cols;
	o->ld = ld;
	o->batch = batch;
	o->stride = stride;
	o->extent = rows == 0 || cols == 0 ? 0 : (outer - 1) * ld + inner;
	if (b && o->extent > 0) {   /* the last matrix's end, its stride checked first */
		if (stride < 0 || (stride > 0 && batch - 1 > (INT64_MAX - o->extent) / stride))
			return fail(p->err, MATE_ERR_FORMAT, "%s: the stride of %s is %lld (want 0 "
			    "and up, and a batch that ends in reach)", p->info->name, what,
			    (long long)stride);
		o->extent += (batch - 1) * stride;
	}
	if ((uint64_t)o->extent > mate_memory_cap() / mate_dtype_size(dt))
		return fail(p->err, MATE_ERR_LIMIT, "%s: %s takes %lld elements of %zu bytes, past "
		    "the memory limit", p->info->name, what, (long long)o->extent, mate_dtype_size(dt));
	return MATE_OK;
}

/* The buffer the library saw: t's elements at their places, the rest zero. */
static int
put_bin(struct xp *p, const char *name, const struct operand *o, const mate_tensor *t,
    int colmajor)
{
	size_t es = mate_dtype_size(t->dtype);
	unsigned char *buf = calloc((size_t)(o->extent > 0 ? o->extent : 1), es);
	int rc;

	if (buf == NULL)
		return fail(p->err, MATE_ERR_NOMEM, "%s: out of memory", name);
	for (int64_t bt = 0; bt < (o->batch > 0 ? o->batch : 1); bt++)
		for (int64_t i = 0; i < o->rows; i++)
			for (int64_t j = 0; j < o->cols; j++) {
				int64_t at = bt * o->stride + (colmajor ? i + j * o->ld : i * o->ld + j);

				memcpy(buf + (size_t)at * es,
				    mate_tensor_element(t, (bt * o->rows + i) * o->cols + j), es);
			}
	rc = put_file(p, name, buf, (size_t)o->extent * es, 0644);
	free(buf);
	return rc;
}

static const char c_compare[] =
"/* An element of the stored matrix m (leading dimension ld) at row r, column c. */\n"
"static double\n"
"stored(const elem *m, long long ld, long long r, long long c)\n"
"{\n"
"\treturn (double)m[COLMAJOR ? r + c * ld : r * ld + c];\n"
"}\n"
"\n"
"/* C[i, j]'s reduction bound, as mate-replay allows another BLAS's order of the K-term\n"
" * sum: 2 K u S (|op(A)| |op(B)|)ij, plus 2 K u |expected| where RELATIVE (beta not 0). */\n"
"static double\n"
"bound(const elem *a, const elem *b, long long i, long long j, double x)\n"
"{\n"
"\tdouble s = 0;\n"
"\n"
"\tfor (long long q = 0; q < KDIM; q++)\n"
"\t\ts += fabs(TA ? stored(a, LDA, q, i) : stored(a, LDA, i, q)) *\n"
"\t\t    fabs(TB ? stored(b, LDB, j, q) : stored(b, LDB, q, j));\n"
"\ts *= 2 * (double)KDIM * U * S;\n"
"\tif (RELATIVE)\n"
"\t\ts += 2 * (double)KDIM * U * fabs(x);\n"
"\treturn s;\n"
"}\n"
"\n"
"/* C's m x n elements (of each of the BATCH matrices, SC apart) at their places against\n"
" * the recorded ones, as mate-replay compares them: within ATOL + RTOL |expected| plus the\n"
" * reduction bound, NaN where the record has NaN, infinities exactly; the first bad element\n"
" * in row-major order of the recorded matrices. The exit status: 0 they match, 1 they do\n"
" * not. */\n"
"static int\n"
"compare(const elem *e, const elem *c, const elem *a, const elem *b)\n"
"{\n"
"\tlong long n = 0, nbad = 0, fb = 0, fi = 0, fj = 0, nabs = 0, nrel = 0;\n"
"\tdouble ex = 0, got = 0, max_abs = 0, max_rel = 0, sum_abs = 0, sum_rel = 0, worst = 0;\n"
"\tint exact = 1;\n"
"\tchar idx[80];\n"
"\n"
"\tfor (long long bt = 0; bt < BATCH; bt++)\n"
"\tfor (long long i = 0; i < ROWS; i++)\n"
"\t\tfor (long long j = 0; j < COLS; j++) {\n"
"\t\t\tsize_t at = (size_t)(bt * SC + (COLMAJOR ? i + j * LDC : i * LDC + j));\n"
"\t\t\tdouble x = e[at], y = c[at];\n"
"\t\t\tint bad;\n"
"\n"
"\t\t\tn++;\n"
"\t\t\tif (memcmp(&e[at], &c[at], sizeof(elem)) != 0)\n"
"\t\t\t\texact = 0;\n"
"\t\t\tif (isfinite(x) && isfinite(y)) {\n"
"\t\t\t\tdouble d = fabs(y - x), r = x != 0 ? d / fabs(x) : (d != 0 ? INFINITY : 0);\n"
"\t\t\t\tdouble tol = ATOL + RTOL * fabs(x) +\n"
"\t\t\t\t    (KDIM > 0 ? bound(a + bt * SA, b + bt * SB, i, j, x) : 0);\n"
"\n"
"\t\t\t\tmax_abs = d > max_abs ? d : max_abs;\n"
"\t\t\t\tmax_rel = r > max_rel ? r : max_rel;\n"
"\t\t\t\tsum_abs += d;\n"
"\t\t\t\tnabs++;\n"
"\t\t\t\tif (x != 0) {\n"
"\t\t\t\t\tsum_rel += r;\n"
"\t\t\t\t\tnrel++;\n"
"\t\t\t\t}\n"
"\t\t\t\tif (d / tol > worst)\n"
"\t\t\t\t\tworst = d / tol;\n"
"\t\t\t\tbad = d > tol;\n"
"\t\t\t} else if (isnan(x) || isnan(y)) {\n"
"\t\t\t\tbad = isnan(x) != isnan(y);\n"
"\t\t\t} else {\n"
"\t\t\t\tbad = x != y;\n"
"\t\t\t}\n"
"\t\t\tif (bad && nbad++ == 0) {\n"
"\t\t\t\tfb = bt;\n"
"\t\t\t\tfi = i;\n"
"\t\t\t\tfj = j;\n"
"\t\t\t\tex = x;\n"
"\t\t\t\tgot = y;\n"
"\t\t\t}\n"
"\t\t}\n"
"\tif (nbad == 0 && exact) {\n"
"\t\tprintf(\"%s: Passed (bit-exact)\\n\", LABEL);\n"
"\t\treturn 0;\n"
"\t}\n"
"\tif (nbad == 0 && KDIM > 0) {\n"
"\t\tprintf(\"%s: Passed (max abs err %.3g, max rel err %.3g; within the reduction bound \"\n"
"\t\t    \"%s (K %lld): the worst error %.3g times its bound)\\n\", LABEL, max_abs, max_rel,\n"
"\t\t    FORM, KDIM, worst);\n"
"\t\treturn 0;\n"
"\t}\n"
"\tif (nbad == 0) {\n"
"\t\tprintf(\"%s: Passed (max abs err %.3g, max rel err %.3g)\\n\", LABEL, max_abs, max_rel);\n"
"\t\treturn 0;\n"
"\t}\n"
"\tif (BATCHED)   /* the recorded tensor's index: [batch, row, column] */\n"
"\t\tsnprintf(idx, sizeof(idx), \"%lld, %lld, %lld\", fb, fi, fj);\n"
"\telse\n"
"\t\tsnprintf(idx, sizeof(idx), \"%lld, %lld\", fi, fj);\n"
"\tprintf(\"%s: Mismatch: %s[%s]: expected %.9g, got %.9g (abs err %.3g, rel err %.3g); \"\n"
"\t    \"%lld of %lld elements beyond rtol %g, atol %g\", LABEL, KEY, idx, ex, got,\n"
"\t    fabs(got - ex), ex != 0 ? fabs(got - ex) / fabs(ex) : INFINITY, nbad, n, RTOL, ATOL);\n"
"\tif (KDIM > 0)\n"
"\t\tprintf(\" plus the reduction bound %s (K %lld) (%.3g%%); the worst error %.3g times its \"\n"
"\t\t    \"bound\", FORM, KDIM, 100.0 * (double)nbad / (double)n, worst);\n"
"\telse\n"
"\t\tprintf(\" (%.3g%%)\", 100.0 * (double)nbad / (double)n);\n"
"\tprintf(\"; max abs err %.3g, max rel err %.3g, mean abs err %.3g, mean rel err %.3g\\n\",\n"
"\t    max_abs, max_rel, nabs ? sum_abs / (double)nabs : 0.0, nrel ? sum_rel / (double)nrel : 0.0);\n"
"\treturn 1;\n"
"}\n"
"\n"
"/* The bytes of a .bin file beside this program: exactly n elements. */\n"
"static elem *\n"
"load(const char *name, size_t n)\n"
"{\n"
"\tFILE *f = fopen(name, \"rb\");\n"
"\telem *p = (elem *)malloc(n ? n * sizeof(elem) : 1);\n"
"\tsize_t got;\n"
"\tint more;\n"
"\n"
"\tif (f == NULL) {\n"
"\t\tfprintf(stderr, \"repro: %s: %s\\n\", name, strerror(errno));\n"
"\t\texit(2);\n"
"\t}\n"
"\tif (p == NULL) {\n"
"\t\tfprintf(stderr, \"repro: out of memory\\n\");\n"
"\t\texit(2);\n"
"\t}\n"
"\tgot = fread(p, sizeof(elem), n, f);\n"
"\tmore = fgetc(f);\n"
"\tfclose(f);\n"
"\tif (got != n || more != EOF) {\n"
"\t\tfprintf(stderr, \"repro: %s: not the %zu bytes this call's buffer takes\\n\", name,\n"
"\t\t    n * sizeof(elem));\n"
"\t\texit(2);\n"
"\t}\n"
"\treturn p;\n"
"}\n"
"\n";

static void
c_label(FILE *f, const struct xp *p)
{
	fputs("#define LABEL \"", f);
	put_plain(f, p->info->function);
	fputs(" (", f);
	put_plain(f, p->info->name);
	fputs(")\"\n", f);
}

/* The cuBLAS function a repro.cu calls. */
static const char *
call_name(const struct compute_type *ct, int64_t batch)
{
	return ct == NULL ? "cublasSgemm" : batch > 0 ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
}

static const char *
cuda_type(mate_dtype d)
{
	return d == MATE_F16 ? "CUDA_R_16F" : d == MATE_BF16 ? "CUDA_R_16BF" : "CUDA_R_32F";
}

/* What repro.cu adds for float16 and bfloat16 operands: the buffers read as stored (their
 * bits, to the device as they are), then widened to float for the comparison. */
static const char c_narrow[] =
"/* A float16 (bf 0) or bfloat16 (bf 1) value from its bits. */\n"
"static float\n"
"from_bits(unsigned short h, int bf)\n"
"{\n"
"\tunsigned int u = (unsigned int)h << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;\n"
"\tfloat f;\n"
"\n"
"\tif (bf) {\n"
"\t\tmemcpy(&f, &u, sizeof(f));\n"
"\t\treturn f;\n"
"\t}\n"
"\tif (e == 31)\n"
"\t\tf = m != 0 ? NAN : INFINITY;\n"
"\telse\n"
"\t\tf = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 0x400), (int)e - 25);\n"
"\treturn (h & 0x8000) ? -f : f;\n"
"}\n"
"\n"
"/* The n elements of size bytes of a .bin file beside this program, as stored. */\n"
"static void *\n"
"load_raw(const char *name, size_t n, size_t size)\n"
"{\n"
"\tFILE *f = fopen(name, \"rb\");\n"
"\tvoid *p = malloc(n ? n * size : 1);\n"
"\tsize_t got;\n"
"\tint more;\n"
"\n"
"\tif (f == NULL || p == NULL) {\n"
"\t\tfprintf(stderr, \"repro: %s: %s\\n\", name, f == NULL ? strerror(errno) : \"out of memory\");\n"
"\t\texit(2);\n"
"\t}\n"
"\tgot = fread(p, size, n, f);\n"
"\tmore = fgetc(f);\n"
"\tfclose(f);\n"
"\tif (got != n || more != EOF) {\n"
"\t\tfprintf(stderr, \"repro: %s: not the %zu bytes this call's buffer takes\\n\", name,\n"
"\t\t    n * size);\n"
"\t\texit(2);\n"
"\t}\n"
"\treturn p;\n"
"}\n"
"\n"
"/* n stored elements as float: kind 0 float, 1 float16, 2 bfloat16. */\n"
"static elem *\n"
"widen(const void *p, size_t n, int kind)\n"
"{\n"
"\telem *w = (elem *)malloc(n ? n * sizeof(elem) : 1);\n"
"\n"
"\tif (w == NULL) {\n"
"\t\tfprintf(stderr, \"repro: out of memory\\n\");\n"
"\t\texit(2);\n"
"\t}\n"
"\tfor (size_t i = 0; i < n; i++)\n"
"\t\tw[i] = kind == 0 ? ((const float *)p)[i] :\n"
"\t\t    from_bits(((const unsigned short *)p)[i], kind == 2);\n"
"\treturn w;\n"
"}\n"
"\n";

/* repro.cu's main for a GemmEx (or strided-batched one) of float16 or bfloat16 operands. */
static void
write_narrow_main(FILE *f, struct xp *p, const char *call, char ta, char tb, int64_t m,
    int64_t n, int64_t k, double alpha, double beta, const struct operand *const o[3],
    const mate_dtype dts[3], int64_t batch, int64_t compute, int64_t algo,
    const struct compute_type *ct, int checked)
{
	static const char nm[3] = { 'a', 'b', 'c' };
	const char *const bins[3] = { "A.bin", "B.bin", "C.bin" };

	(void)p;
	fputs(c_narrow, f);
	fputs("int\nmain(int argc, char **argv)\n{\n"
	    "\tvoid *ra, *rb, *rc, *re = NULL;\n\telem *a, *b, *c, *e = NULL;\n"
	    "\tint status = 0;\n\n"
	    "\t(void)load;   /* the buffers are read as stored (load_raw) */\n"
	    "\tif (argc > 1 && chdir(argv[1]) != 0) {\n"
	    "\t\tfprintf(stderr, \"repro: %s: %s\\n\", argv[1], strerror(errno));\n"
	    "\t\treturn 2;\n\t}\n", f);
	for (int i = 0; i < 3; i++)
		fprintf(f, "\tr%c = load_raw(\"%s\", %lldu, %zu);   /* %s */\n", nm[i], bins[i],
		    (long long)o[i]->extent, mate_dtype_size(dts[i]), mate_dtype_name(dts[i]));
	if (checked)
		fprintf(f, "\tre = load_raw(\"C_expected.bin\", %lldu, %zu);\n",
		    (long long)o[2]->extent, mate_dtype_size(dts[2]));
	fprintf(f, "\t{\n\t\tconst float alpha = %.9g, beta = %.9g;\n"
	    "\t\tsize_t bytes[3] = { %lldu * %zu, %lldu * %zu, %lldu * %zu };\n"
	    "\t\tvoid *d[3], *h[3] = { ra, rb, rc };\n\t\tcublasHandle_t hd;\n"
	    "\t\tcublasStatus_t st;\n\n"
	    "\t\tfor (int i = 0; i < 3; i++) {\n"
	    "\t\t\tCUDA(cudaMalloc(&d[i], bytes[i] ? bytes[i] : 1));\n"
	    "\t\t\tCUDA(cudaMemcpy(d[i], h[i], bytes[i], cudaMemcpyHostToDevice));\n\t\t}\n"
	    "\t\tif (cublasCreate(&hd) != CUBLAS_STATUS_SUCCESS) {\n"
	    "\t\t\tfprintf(stderr, \"repro: cublasCreate failed\\n\");\n\t\t\treturn 2;\n\t\t}\n",
	    alpha, beta, (long long)o[0]->extent, mate_dtype_size(dts[0]), (long long)o[1]->extent,
	    mate_dtype_size(dts[1]), (long long)o[2]->extent, mate_dtype_size(dts[2]));
	fprintf(f, "\t\tst = %s(hd, CUBLAS_OP_%c, CUBLAS_OP_%c, %lld, %lld, %lld, &alpha,\n"
	    "\t\t    d[0], %s, %lld%s, d[1], %s, %lld%s, &beta, d[2], %s, %lld%s,\n"
	    "\t\t    (cublasComputeType_t)%lld /* %s */, (cublasGemmAlgo_t)%lld);\n",
	    call, ta, tb, (long long)m, (long long)n, (long long)k,
	    cuda_type(dts[0]), (long long)o[0]->ld, batch > 0 ? ", SA" : "",
	    cuda_type(dts[1]), (long long)o[1]->ld, batch > 0 ? ", SB" : "",
	    cuda_type(dts[2]), (long long)o[2]->ld, batch > 0 ? ", SC, (int)BATCH" : "",
	    (long long)compute, ct->name, (long long)algo);
	fprintf(f, "\t\tif (st != CUBLAS_STATUS_SUCCESS) {\n"
	    "\t\t\tprintf(\"%%s: Error: %s returned %%d\\n\", LABEL, (int)st);\n"
	    "\t\t\treturn 1;\n\t\t}\n"
	    "\t\tCUDA(cudaDeviceSynchronize());\n"
	    "\t\tCUDA(cudaMemcpy(rc, d[2], bytes[2], cudaMemcpyDeviceToHost));\n"
	    "\t\tcublasDestroy(hd);\n\t\tfor (int i = 0; i < 3; i++)\n\t\t\tcudaFree(d[i]);\n"
	    "\t}\n", call);
	for (int i = 0; i < 3; i++)
		fprintf(f, "\t%c = widen(r%c, %lldu, %d);\n", nm[i], nm[i], (long long)o[i]->extent,
		    dts[i] == MATE_F16 ? 1 : dts[i] == MATE_BF16 ? 2 : 0);
	if (checked)
		fprintf(f, "\te = widen(re, %lldu, %d);\n\tstatus = compare(e, c, a, b);\n",
		    (long long)o[2]->extent, dts[2] == MATE_F16 ? 1 : dts[2] == MATE_BF16 ? 2 : 0);
	else
		fputs("\tprintf(\"%s: Ran, unchecked: the recording has no outputs to compare\\n\", "
		    "LABEL);\n\t(void)compare;\n", f);
	fputs("\tfree(ra);\n\tfree(rb);\n\tfree(rc);\n\tfree(re);\n"
	    "\tfree(a);\n\tfree(b);\n\tfree(c);\n\tfree(e);\n\treturn status;\n}\n", f);
}

static int
write_blas(struct xp *p, const struct gemm_layout *l)
{
	mate_dtype dt = l->dbl ? MATE_F64 : MATE_F32;
	mate_dtype dts[3] = { dt, dt, dt };   /* A's, B's and C's (a GemmEx's may differ) */
	const char *ty = l->dbl ? "double" : "float";
	int narrow = 0;                       /* a float16 or bfloat16 operand */
	int64_t order = 102, m, n, k, lda, ldb, ldc, compute = -1, algo = -1;
	int64_t batch = 0, sa = 0, sb = 0, sc = 0;
	const struct compute_type *ct = NULL;
	const char *call;
	char ex_tail[160] = "";
	struct operand oa, ob, oc;
	const mate_value *after = NULL;
	double alpha, beta, rtol, atol;
	char ta, tb, *text = NULL;
	size_t len = 0;
	int cm, rc;
	FILE *f;

	if ((l->order >= 0 && (rc = arg_int(p, l->order, "Order", 101, &order)) != MATE_OK) ||
	    (rc = arg_trans(p, l, l->ta, "TransA", &ta)) != MATE_OK ||
	    (rc = arg_trans(p, l, l->tb, "TransB", &tb)) != MATE_OK ||
	    (rc = arg_int(p, l->m, "M", 0, &m)) != MATE_OK ||
	    (rc = arg_int(p, l->n, "N", 0, &n)) != MATE_OK ||
	    (rc = arg_int(p, l->k, "K", 0, &k)) != MATE_OK ||
	    (rc = arg_int(p, l->lda, "lda", 1, &lda)) != MATE_OK ||
	    (rc = arg_int(p, l->ldb, "ldb", 1, &ldb)) != MATE_OK ||
	    (rc = arg_int(p, l->ldc, "ldc", 1, &ldc)) != MATE_OK ||
	    (rc = arg_float(p, l->alpha, "alpha", &alpha)) != MATE_OK ||
	    (rc = arg_float(p, l->beta, "beta", &beta)) != MATE_OK)
		return rc;
	if (order != 101 && order != 102)
		return fail(p->err, MATE_ERR_FORMAT, "%s: Order is %lld (want 101 or 102)",
		    p->info->name, (long long)order);
	if (l->compute >= 0) {   /* cublasGemmEx: float32, float16 or bfloat16 operands */
		static const char *const what[] = { "A", "B", "C" };
		int pos[3] = { l->atype, l->btype, l->ctype };
		const mate_value *v;
		for (int i = 0; i < 3; i++) {
			mate_dtype d = mate_value_kind_of(v = arg_at(p, pos[i])) == MATE_V_DTYPE ?
			    mate_value_get_dtype(v) : MATE_DTYPE_INVALID;
			if (d != MATE_F32 && d != MATE_F16 && d != MATE_BF16)
				return fail(p->err, MATE_ERR_UNSUPPORTED, "%s (cublas): --export writes "
				    "%s calls of float32, float16 or bfloat16 A, B and C; this one's %s "
				    "is %s", p->info->function, p->info->function, what[i],
				    d != MATE_DTYPE_INVALID ? mate_dtype_name(d) : "not a recorded dtype");
			dts[i] = d;
		}
		if ((rc = arg_int(p, l->compute, "computeType", 0, &compute)) != MATE_OK ||
		    (rc = arg_int_any(p, l->algo, "algo", &algo)) != MATE_OK)
			return rc;
		for (size_t i = 0; i < sizeof(compute_types) / sizeof(compute_types[0]); i++)
			if (compute_types[i].v == compute)
				ct = &compute_types[i];
		if (ct == NULL)
			return fail(p->err, MATE_ERR_UNSUPPORTED, "%s (cublas): computeType %lld is not "
			    "one of the float32 compute types --export writes", p->info->function,
			    (long long)compute);
	}
	if (l->batch >= 0 && ((rc = arg_int(p, l->batch, "batchCount", 1, &batch)) != MATE_OK ||
	    (rc = arg_ll(p, l->sa, "strideA", &sa)) != MATE_OK ||
	    (rc = arg_ll(p, l->sb, "strideB", &sb)) != MATE_OK ||
	    (rc = arg_ll(p, l->sc, "strideC", &sc)) != MATE_OK))
		return rc;
	cm = order == 102;
	if ((rc = operand(p, l->a, "A", ta == 'N' ? m : k, ta == 'N' ? k : m, lda, cm, dts[0],
	    batch, sa, &oa)) ||
	    (rc = operand(p, l->b, "B", tb == 'N' ? k : n, tb == 'N' ? n : k, ldb, cm, dts[1],
	    batch, sb, &ob)) ||
	    (rc = operand(p, l->c, "C", m, n, ldc, cm, dts[2], batch, sc, &oc)))
		return rc;
	for (int i = 0; i < 3; i++)
		narrow |= dts[i] == MATE_F16 || dts[i] == MATE_BF16;
	dt = dts[2];
	if (p->outs != NULL) {
		const mate_tensor *t;
		int bd = batch > 0;
		if ((after = mate_value_lookup(p->outs, oc.key)) == NULL ||
		    mate_value_kind_of(after) != MATE_V_TENSOR ||
		    (t = mate_value_get_tensor(after))->dtype != dt || t->ndim != 2 + bd ||
		    (bd && t->shape[0] != batch) || t->shape[bd] != m || t->shape[bd + 1] != n)
			return fail(p->err, MATE_ERR_FORMAT, "%s: the record has no %s%lld x %lld %s "
			    "for C after the call", p->info->name, bd ? "batch of " : "", (long long)m,
			    (long long)n, mate_dtype_name(dt));
	}
	if ((rc = put_bin(p, "A.bin", &oa, oa.t, cm)) != MATE_OK ||
	    (rc = put_bin(p, "B.bin", &ob, ob.t, cm)) != MATE_OK ||
	    (rc = put_bin(p, "C.bin", &oc, oc.t, cm)) != MATE_OK ||
	    (after != NULL &&
	    (rc = put_bin(p, "C_expected.bin", &oc, mate_value_get_tensor(after), cm)) != MATE_OK))
		return rc;
	mate_replay_default_tolerance(dt, &rtol, &atol);
	if (p->x->rtol >= 0)
		rtol = p->x->rtol;
	if (p->x->atol >= 0)
		atol = p->x->atol;

	if ((f = open_memstream(&text, &len)) == NULL)
		return fail(p->err, MATE_ERR_NOMEM, "out of memory");
	fputs(l->cublas ? "/* repro.cu: " : "/* repro.c: ", f);
	put_plain(f, p->info->function);
	fputs(" as recorded in ", f);
	put_plain(f, p->info->name);
	fputs(", standalone (written by\n * mate-replay --export): the call on the recorded buffers "
	    "(A.bin, B.bin, C.bin),\n * C afterwards compared with the recorded one "
	    "(C_expected.bin). ./repro [DIR]\n * runs it in DIR (default: the current folder); exit "
	    "0 when C matches, 1 when\n * it does not (or the call fails), 2 when a buffer cannot "
	    "be read. */\n"
	    "#include <errno.h>\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
	    "#include <string.h>\n#include <unistd.h>\n\n", f);
	if (l->cublas)
		fputs("#include <cublas_v2.h>\n#include <cuda_runtime.h>\n\n"
		    "#define CUDA(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \\\n"
		    "\tfprintf(stderr, \"repro: %s: %s\\n\", #x, cudaGetErrorString(e_)); exit(2); } } "
		    "while (0)\n\n", f);
	else if (l->fortran)
		fprintf(f, "/* the Fortran BLAS interface, as OpenBLAS declares it */\nvoid %s(const "
		    "char *transa, const char *transb, const int *m, const int *n,\n    const int *k, "
		    "const %s *alpha, const %s *a, const int *lda, const %s *b,\n    const int *ldb, "
		    "const %s *beta, %s *c, const int *ldc);\n\n", l->fn, ty, ty, ty, ty, ty);
	else
		fprintf(f, "/* CBLAS (cblas.h), its enums as the ints they are */\nvoid %s(int order, "
		    "int transa, int transb, int m, int n, int k, %s alpha,\n    const %s *a, int lda, "
		    "const %s *b, int ldb, %s beta, %s *c, int ldc);\n\n", l->fn, ty, ty, ty, ty, ty);
	fprintf(f, "typedef %s elem;\n", ty);
	c_label(f, p);
	fprintf(f, "#define KEY \"%s\"           /* C's key in the dump */\n"
	    "#define ROWS %lldLL\n#define COLS %lldLL\n#define LDC %lldLL\n#define COLMAJOR %d\n"
	    "#define RTOL %.17g  /* mate-replay's tolerance for %s */\n#define ATOL %.17g\n",
	    oc.key, (long long)m, (long long)n, (long long)ldc, cm, rtol, mate_dtype_name(dt), atol);
	fprintf(f, "/* a strided batch: BATCH matrices, A's SA elements apart, B's SB, C's SC */\n"
	    "#define BATCHED %d\n#define BATCH %lldLL\n#define SA %lldLL\n#define SB %lldLL\n"
	    "#define SC %lldLL\n", batch > 0, (long long)(batch > 0 ? batch : 1), (long long)sa,
	    (long long)sb, (long long)sc);
	/* mate-replay's bound of a GEMM (mate_replay_set_reduction_gemm() in libmate's
	 * replay.c): s = |alpha| (1 for 0) (K + 2) / K, doubled and |expected| added where
	 * beta is not 0 */
	fprintf(f, "/* the reduction bound (K 0: none): 2 K u S (|op(A)| |op(B)|)ij, plus 2 K u\n"
	    " * |expected| where RELATIVE; S = |alpha| (K + 2) / K, twice that where beta is not 0 */\n"
	    "#define KDIM %lldLL\n#define TA %d\n#define TB %d\n#define LDA %lldLL\n"
	    "#define LDB %lldLL\n#define U %a\n#define S %.17g\n#define RELATIVE %d\n"
	    "#define FORM \"%s\"\n\n", (long long)k, ta != 'N', tb != 'N', (long long)lda,
	    (long long)ldb, l->dbl ? 0x1p-53 : ct != NULL ? ct->u : 0x1p-24,
	    (alpha != 0 ? fabs(alpha) : 1) *
	    (beta != 0 ? 2 : 1) * (k > 0 ? (double)(k + 2) / (double)k : 1), beta != 0,
	    beta != 0 ? "2 K u (s |A| |B| + |C|)ij" : "2 K u s (|A| |B|)ij");
	fputs(c_compare, f);
	if (narrow) {   /* a GemmEx of float16 or bfloat16 operands */
		write_narrow_main(f, p, call_name(ct, batch), ta, tb, m, n, k, alpha, beta,
		    (const struct operand *[3]){ &oa, &ob, &oc }, dts, batch, compute, algo, ct,
		    after != NULL);
		goto written;
	}
	fprintf(f, "int\nmain(int argc, char **argv)\n{\n"
	    "\telem *a, *b, *c, *e = NULL;\n\tint status = 0;\n\n"
	    "\tif (argc > 1 && chdir(argv[1]) != 0) {\n"
	    "\t\tfprintf(stderr, \"repro: %%s: %%s\\n\", argv[1], strerror(errno));\n"
	    "\t\treturn 2;\n\t}\n"
	    "\ta = load(\"A.bin\", %lldu);\n\tb = load(\"B.bin\", %lldu);\n\tc = load(\"C.bin\", %lldu);\n",
	    (long long)oa.extent, (long long)ob.extent, (long long)oc.extent);
	if (after != NULL)
		fprintf(f, "\te = load(\"C_expected.bin\", %lldu);\n", (long long)oc.extent);
	call = call_name(ct, batch);
	if (ct != NULL)   /* the recorded compute type and algorithm, by value and name */
		snprintf(ex_tail, sizeof(ex_tail), ",\n\t\t    (cublasComputeType_t)%lld /* %s */, "
		    "(cublasGemmAlgo_t)%lld", (long long)compute, ct->name, (long long)algo);
	if (l->cublas)
		fprintf(f, "\t{\n\t\tconst elem alpha = %.17g, beta = %.17g;\n"
		    "\t\tsize_t na = %lldu, nb = %lldu, nc = %lldu;\n"
		    "\t\telem *da, *db, *dc;\n\t\tcublasHandle_t h;\n\t\tcublasStatus_t st;\n\n"
		    "\t\tCUDA(cudaMalloc((void **)&da, (na ? na : 1) * sizeof(elem)));\n"
		    "\t\tCUDA(cudaMalloc((void **)&db, (nb ? nb : 1) * sizeof(elem)));\n"
		    "\t\tCUDA(cudaMalloc((void **)&dc, (nc ? nc : 1) * sizeof(elem)));\n"
		    "\t\tCUDA(cudaMemcpy(da, a, na * sizeof(elem), cudaMemcpyHostToDevice));\n"
		    "\t\tCUDA(cudaMemcpy(db, b, nb * sizeof(elem), cudaMemcpyHostToDevice));\n"
		    "\t\tCUDA(cudaMemcpy(dc, c, nc * sizeof(elem), cudaMemcpyHostToDevice));\n"
		    "\t\tif (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {\n"
		    "\t\t\tfprintf(stderr, \"repro: cublasCreate failed\\n\");\n\t\t\treturn 2;\n\t\t}\n"
		    "\t\tst = %s(h, CUBLAS_OP_%c, CUBLAS_OP_%c, %lld, %lld, %lld, &alpha, da, %s%lld%s, "
		    "db, %s%lld%s, &beta, dc, %s%lld%s%s);\n"
		    "\t\tif (st != CUBLAS_STATUS_SUCCESS) {\n"
		    "\t\t\tprintf(\"%%s: Error: %s returned %%d\\n\", LABEL, (int)st);\n"
		    "\t\t\treturn 1;\n\t\t}\n"
		    "\t\tCUDA(cudaDeviceSynchronize());\n"
		    "\t\tCUDA(cudaMemcpy(c, dc, nc * sizeof(elem), cudaMemcpyDeviceToHost));\n"
		    "\t\tcublasDestroy(h);\n\t\tcudaFree(da);\n\t\tcudaFree(db);\n\t\tcudaFree(dc);\n"
		    "\t}\n", alpha, beta, (long long)oa.extent, (long long)ob.extent, (long long)oc.extent,
		    call, ta, tb, (long long)m, (long long)n, (long long)k,
		    ct != NULL ? "CUDA_R_32F, " : "", (long long)lda, batch > 0 ? ", SA" : "",
		    ct != NULL ? "CUDA_R_32F, " : "", (long long)ldb, batch > 0 ? ", SB" : "",
		    ct != NULL ? "CUDA_R_32F, " : "", (long long)ldc, batch > 0 ? ", SC, (int)BATCH" : "",
		    ex_tail, call);
	else if (l->fortran)
		fprintf(f, "\t{\n\t\tconst int m = %lld, n = %lld, k = %lld, lda = %lld, ldb = %lld, "
		    "ldc = %lld;\n\t\tconst elem alpha = %.17g, beta = %.17g;\n\n"
		    "\t\t%s(\"%c\", \"%c\", &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);\n\t}\n",
		    (long long)m, (long long)n, (long long)k, (long long)lda, (long long)ldb,
		    (long long)ldc, alpha, beta, l->fn, ta, tb);
	else
		fprintf(f, "\t%s(%lld, %d, %d, %lld, %lld, %lld, %.17g, a, %lld, b, %lld, %.17g, c, "
		    "%lld);\n", l->fn, (long long)order, 111 + (int)(strchr("NTC", ta) - "NTC"),
		    111 + (int)(strchr("NTC", tb) - "NTC"), (long long)m, (long long)n, (long long)k,
		    alpha, (long long)lda, (long long)ldb, beta, (long long)ldc);
	if (after != NULL)
		fputs("\tstatus = compare(e, c, a, b);\n", f);
	else
		fputs("\tprintf(\"%s: Ran, unchecked: the recording has no outputs to compare\\n\", "
		    "LABEL);\n\t(void)compare;\n", f);
	fputs("\tfree(a);\n\tfree(b);\n\tfree(c);\n\tfree(e);\n\treturn status;\n}\n", f);
written:
	if (fclose(f) != 0) {
		free(text);
		return fail(p->err, MATE_ERR_NOMEM, "out of memory");
	}
	rc = put_file(p, l->cublas ? "repro.cu" : "repro.c", text, len, 0644);
	free(text);
	if (rc != MATE_OK)
		return rc;
	if (l->cublas) {
		static const char mk[] =
		    "# Makefile: builds repro, the recorded call standalone (mate-replay --export):\n"
		    "# compute-sanitizer ./repro, ncu ./repro and nsys profile ./repro run that call.\n"
		    "NVCC ?= nvcc\n"
		    "NVCCFLAGS ?= -O2 -g -lineinfo\n"
		    "\n"
		    "repro: repro.cu\n"
		    "\t$(NVCC) $(NVCCFLAGS) -o $@ repro.cu -lcublas -lcudart\n"
		    "\n"
		    "run: repro\n"
		    "\t./repro\n"
		    "\n"
		    "clean:\n"
		    "\trm -f repro\n"
		    "\n"
		    ".PHONY: run clean\n";

		rc = put_file(p, "Makefile", mk, sizeof(mk) - 1, 0644);
	} else {
		static const char mk[] =
		    "# Makefile: builds repro, the recorded call standalone (mate-replay --export).\n"
		    "# make BLAS_LIBS='-L/path -lmkl_rt' links another BLAS.\n"
		    "CC ?= cc\n"
		    "CFLAGS ?= -O2 -g\n"
		    "BLAS_CFLAGS ?= $(shell pkg-config --cflags openblas 2>/dev/null)\n"
		    "BLAS_LIBS ?= $(shell pkg-config --libs openblas 2>/dev/null || "
		    "pkg-config --libs cblas 2>/dev/null || echo -lopenblas)\n"
		    "\n"
		    "repro: repro.c\n"
		    "\t$(CC) $(CFLAGS) $(BLAS_CFLAGS) -o $@ repro.c $(BLAS_LIBS) -lm\n"
		    "\n"
		    "run: repro\n"
		    "\t./repro\n"
		    "\n"
		    "clean:\n"
		    "\trm -f repro\n"
		    "\n"
		    ".PHONY: run clean\n";

		rc = put_file(p, "Makefile", mk, sizeof(mk) - 1, 0644);
	}
	p->x->kind = l->cublas ? "cuda" : "c";
	return rc;
}

/* ---- README ------------------------------------------------------------------------ */

static void
put_json_plain(FILE *f, const cJSON *v)
{
	char *s;

	if (cJSON_IsString(v)) {
		put_plain(f, v->valuestring);
		return;
	}
	if ((s = cJSON_PrintUnformatted(v)) != NULL) {
		put_plain(f, s);
		cJSON_free(s);
	}
}

static int
write_readme(struct xp *p)
{
	const struct mate_dump_info *i = p->info;
	const cJSON *versions = p->rec ? cJSON_GetObjectItemCaseSensitive(p->rec, "versions") : NULL;
	const cJSON *details = p->rec ? cJSON_GetObjectItemCaseSensitive(p->rec, "tensor_details") : NULL;
	const cJSON *e;
	int py = strcmp(p->x->kind, "python") == 0, rc;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if ((f = open_memstream(&text, &len)) == NULL)
		return fail(p->err, MATE_ERR_NOMEM, "out of memory");
	fputs("One recorded call, standalone\n=============================\n\n", f);
	fputs("Call:       ", f);
	put_plain(f, i->function);
	if (i->module) {
		fputs(" (module ", f);
		put_plain(f, i->module);
		fputs(")", f);
	}
	fputs("\nDump:       ", f);
	put_plain(f, i->path);
	fprintf(f, "\nStatus:     %s\n", mate_dump_status_name(i->status));
	if (i->timestamp && i->timestamp[0]) {
		fputs("Recorded:   ", f);
		put_plain(f, i->timestamp);
		fputc('\n', f);
	}
	if (i->process_id >= 0)
		fprintf(f, "Process:    %lld, call %lld of its function\n", (long long)i->process_id,
		    (long long)i->call_sequence);
	if (p->rec && (e = cJSON_GetObjectItemCaseSensitive(p->rec, "function_signature")) != NULL) {
		fputs("Signature:  ", f);
		put_json_plain(f, e);
		fputc('\n', f);
	}
	if (p->seq != NULL) {
		fputs("Sequence:   the object's recorded calls, replayed in this order (files\n"
		    "            call<k>_*, then this call's own):\n", f);
		for (size_t k = 0; k <= p->nseq; k++) {
			fprintf(f, "  %zu. ", k + 1);
			put_plain(f, k < p->nseq ? p->seqfn[k] : strrchr(i->function, '.') + 1);
			fputs("  ", f);
			put_plain(f, k < p->nseq ? p->seqname[k] : i->name);
			fputs(k < p->nseq ? "\n" : "  (compared)\n", f);
		}
	}
	fputs("Tensors:    ", f);
	put_plain(f, i->format ? i->format : "torch");
	fputs(" files:", f);
	for (int k = 0; k < 3; k++)
		if (p->files[k][0]) {
			fputc(' ', f);
			put_plain(f, p->files[k]);
		}
	fputc('\n', f);
	fputs("\nEnvironment as recorded (the record's versions)\n", f);
	if (!cJSON_IsObject(versions) || versions->child == NULL)
		fputs("  (the record names none)\n", f);
	else
		cJSON_ArrayForEach(e, versions) {
			fputs("  ", f);
			put_plain(f, e->string);
			fputs(": ", f);
			put_json_plain(f, e);
			fputc('\n', f);
		}
	if (cJSON_IsObject(details)) {
		fputs("\nTensors as recorded (key: dtype shape, device)\n", f);
		cJSON_ArrayForEach(e, details) {
			fputs("  ", f);
			put_plain(f, e->string);
			fputs(": ", f);
			put_json_plain(f, cJSON_GetObjectItemCaseSensitive(e, "dtype"));
			fputc(' ', f);
			put_json_plain(f, cJSON_GetObjectItemCaseSensitive(e, "shape"));
			fputs(", ", f);
			put_json_plain(f, cJSON_GetObjectItemCaseSensitive(e, "device"));
			fputc('\n', f);
		}
	}
	fprintf(f, "\nExported by mate %s", mate_version_string());
	if (p->x->command) {
		fputs(": ", f);
		put_plain(f, p->x->command);
	}
	fputs("\n\nRun\n---\n\n", f);
	if (py)
		fputs("  python3 repro.py                 # on CUDA when torch sees a device, else the CPU\n"
		    "  python3 repro.py --device cpu\n"
		    "  compute-sanitizer python3 repro.py --device cuda\n"
		    "  nsys profile python3 repro.py --device cuda\n\n"
		    "repro.py needs torch (and safetensors for .safetensors files, the recorded\n"
		    "library for its functions: flashinfer for FlashInfer's); it loads the tensors\n"
		    "with torch.load(weights_only=True), calls the real function with the recorded\n"
		    "arguments, and compares each recorded output at mate-replay's tolerances\n"
		    "(TOL in repro.py; for mm and bmm within the product's reduction bound as\n"
		    "mate-replay allows; other ops' bounds, such as a norm's sum, are not applied,\n"
		    "so such a call on another device may show a difference mate-replay would pass).\n", f);
	else if (strcmp(p->x->kind, "cuda") == 0)
		fputs("  make                             # builds ./repro with nvcc, -lcublas -lcudart\n"
		    "  ./repro                          # the call once; exit 1 when C differs\n"
		    "  compute-sanitizer ./repro\n"
		    "  ncu ./repro\n"
		    "  nsys profile ./repro\n\n"
		    "repro.cu copies the recorded buffers to the device and calls cuBLAS once:\n"
		    "A.bin, B.bin and C.bin hold the operands as the library saw them (raw\n"
		    "elements, column-major, leading dimensions included), C_expected.bin the\n"
		    "recorded C after the call.\n", f);
	else
		fputs("  make                             # builds ./repro against OpenBLAS (pkg-config)\n"
		    "  ./repro                          # the call once; exit 1 when C differs\n"
		    "  valgrind ./repro\n"
		    "  perf stat ./repro\n\n"
		    "repro.c calls the real library with the recorded buffers: A.bin, B.bin and\n"
		    "C.bin hold the operands as the library saw them (raw elements, leading\n"
		    "dimensions included), C_expected.bin the recorded C after the call.\n"
		    "make BLAS_LIBS=... links another BLAS.\n", f);
	fputs("\nExit status: 0 the outputs match the recorded ones, 1 they do not (or the\n"
	    "call failed), 2 the reproducer could not run (a missing or short file).\n", f);
	if (fclose(f) != 0) {
		free(text);
		return fail(p->err, MATE_ERR_NOMEM, "out of memory");
	}
	rc = put_file(p, "README", text, len, 0644);
	free(text);
	return rc;
}

/* ---- a wrapper's calls ------------------------------------------------------------- */

/* For a method of a recorded object (CLASS.METHOD with a self_id): the calls
 * on the same object (process and self_id) in the dump's root before it, from
 * the latest CLASS.__init__ on, in the order mate-replay replays them. Refuses
 * when the root holds no such __init__, or no plan for a run. */
static int
find_sequence(struct xp *p)
{
	const struct mate_dump_info *me = p->info, *d;
	const char *fn = me->function, *dot = strrchr(fn, '.');
	char *root = NULL, *slash, init[512];
	size_t n, at, from = (size_t)-1, cls;
	int rc = MATE_OK, planned = 0;
	mate_dump_list *l;

	if (me->self_id == NULL || dot == NULL || dot == fn || dot[1] == '\0' ||
	    strncmp(fn, "Tensor.", 7) == 0)
		return MATE_OK;
	cls = (size_t)(dot - fn);
	if ((size_t)snprintf(init, sizeof(init), "%.*s.__init__", (int)cls, fn) >= sizeof(init))
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s: name too long", fn);
	if (strcmp(dot + 1, "__init__") == 0)
		return fail(p->err, MATE_ERR_UNSUPPORTED, "%s: --export exports a wrapper's plan or "
		    "run (with its __init__ before it), not the __init__ alone", fn);
	if ((root = strdup(me->path)) == NULL)
		return fail(p->err, MATE_ERR_NOMEM, "out of memory");
	for (n = strlen(root); n > 1 && root[n - 1] == '/'; n--)
		root[n - 1] = '\0';
	if ((slash = strrchr(root, '/')) == NULL)
		strcpy(root, ".");
	else
		slash[slash == root ? 1 : 0] = '\0';
	if ((l = mate_dump_list_new(0, p->err)) == NULL) {
		free(root);
		return p->err->code ? p->err->code : MATE_ERR_NOMEM;
	}
	if (mate_dump_list_add(l, root, p->err) < 0) {
		rc = p->err->code ? p->err->code : MATE_ERR_IO;
		goto out;
	}
	mate_dump_list_sort(l);
	n = mate_dump_list_count(l);
	for (at = 0; at < n; at++)
		if (strcmp(mate_dump_list_get(l, at)->name, me->name) == 0)
			break;
	for (size_t i = 0; i < at && i < n; i++) {
		d = mate_dump_list_get(l, i);
		if (d->self_id == NULL || d->process_id != me->process_id ||
		    strcmp(d->self_id, me->self_id) != 0)
			continue;
		if (strcmp(d->function, init) == 0) {
			from = i;
			planned = 0;
		} else if (from != (size_t)-1 && strncmp(d->function, fn, cls + 1) == 0 &&
		    strcmp(d->function + cls + 1, "plan") == 0) {
			planned = 1;
		}
	}
	if (at == n || from == (size_t)-1) {
		rc = fail(p->err, MATE_ERR_UNSUPPORTED, "%s: no %s of its object %lld:%s (process_id:"
		    "self_id) before it in %s: --export needs the dumps of the object's calls before "
		    "this one", me->name, init, (long long)me->process_id, me->self_id, root);
		goto out;
	}
	if (strcmp(dot + 1, "run") == 0 && !planned) {
		rc = fail(p->err, MATE_ERR_UNSUPPORTED, "%s: no %.*s.plan of its object %lld:%s "
		    "(process_id:self_id) between its __init__ and it in %s: --export needs the dumps "
		    "of the object's calls before this one", me->name, (int)cls, fn,
		    (long long)me->process_id, me->self_id, root);
		goto out;
	}
	p->seq = calloc(at - from, sizeof(char *));
	p->seqfn = calloc(at - from, sizeof(char *));
	p->seqname = calloc(at - from, sizeof(char *));
	if (p->seq == NULL || p->seqfn == NULL || p->seqname == NULL) {
		rc = fail(p->err, MATE_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = from; i < at; i++) {
		const char *m;

		d = mate_dump_list_get(l, i);
		if (d->self_id == NULL || d->process_id != me->process_id ||
		    strcmp(d->self_id, me->self_id) != 0)
			continue;
		m = strrchr(d->function, '.');
		if (m == NULL || strncmp(d->function, fn, cls + 1) != 0 ||
		    (size_t)(m - d->function) != cls) {
			rc = fail(p->err, MATE_ERR_UNSUPPORTED, "%s: its object's call %s is not a "
			    "method of %s", d->name, d->function, init);
			goto out;
		}
		if (d->status == MATE_DUMP_INCOMPLETE) {
			rc = fail(p->err, MATE_ERR_FORMAT, "%s: the object's call %s has no complete "
			    "record", d->name, d->function);
			goto out;
		}
		p->seq[p->nseq] = strdup(d->path);
		p->seqfn[p->nseq] = strdup(m + 1);
		p->seqname[p->nseq] = strdup(d->name);
		if (p->seq[p->nseq] == NULL || p->seqfn[p->nseq] == NULL ||
		    p->seqname[p->nseq] == NULL) {
			p->nseq++;
			rc = fail(p->err, MATE_ERR_NOMEM, "out of memory");
			goto out;
		}
		p->nseq++;
	}
out:
	mate_dump_list_free(l);
	free(root);
	return rc;
}

/* ---- the whole ---------------------------------------------------------------------- */

static int
export(struct xp *p, const char *dir)
{
	const struct gemm_layout *blas = NULL;
	const char *mod;
	int rc;

	if ((p->d = mate_dump_open(p->dump, p->err)) == NULL)
		return p->err->code ? p->err->code : MATE_ERR_IO;
	p->info = mate_dump_get_info(p->d);
	mod = p->info->module ? p->info->module : "";
	if (p->info->status == MATE_DUMP_INCOMPLETE)
		return fail(p->err, MATE_ERR_FORMAT, "%s: no complete record", p->dump);
	/* the tensors are read now: a missing or short file is an error before anything is written */
	if ((p->args = mate_dump_load_args(p->d, p->err)) == NULL)
		return p->err->code ? p->err->code : MATE_ERR_FORMAT;
	if (p->info->status == MATE_DUMP_COMPLETED &&
	    (rc = mate_dump_load_outputs(p->d, &p->outs, p->err)) != MATE_OK)
		return rc;
	if (strcmp(mod, "cblas") == 0 || strcmp(mod, "blas") == 0 || strcmp(mod, "cublas") == 0 ||
	    strcmp(mod, "cudart") == 0) {
		for (size_t k = 0; k < sizeof(gemm_layouts) / sizeof(gemm_layouts[0]); k++)
			if (strcmp(gemm_layouts[k].fn, p->info->function) == 0)
				blas = &gemm_layouts[k];
		if (blas == NULL)
			return fail(p->err, MATE_ERR_UNSUPPORTED, "%s (%s): --export writes repro.c for "
			    "cblas_?gemm, ?gemm_, cublasSgemm and float32 cublasGemmEx and "
			    "cublasGemmStridedBatchedEx calls; this one cannot be exported yet",
			    p->info->function, mod);
	}
	if ((rc = find_sequence(p)) != MATE_OK)
		return rc;
	p->rec = read_record(p->info->path);
	if ((rc = check_target(dir, p->err)) != MATE_OK || (rc = make_tmp(p, dir)) != MATE_OK)
		return rc;
	if ((rc = copy_tensor_files(p, p->info->path, "", p->files)) == MATE_OK)
		rc = blas != NULL ? write_blas(p, blas) : write_python(p);
	if (rc == MATE_OK)
		rc = write_readme(p);
	if (rc != MATE_OK)
		return rc;
	{
		mode_t mask = umask(0);

		umask(mask);
		if (chmod(p->tmp, 0777 & ~mask) != 0)
			return fail(p->err, MATE_ERR_IO, "%s: %s", p->tmp, strerror(errno));
	}
	if (rename(p->tmp, dir) != 0) {
		if (errno == ENOTEMPTY || errno == EEXIST)
			return fail(p->err, MATE_ERR_ARGUMENT, "%s is not empty: refusing to write into "
			    "it (give a new or empty folder)", dir);
		return fail(p->err, MATE_ERR_IO, "%s: %s", dir, strerror(errno));
	}
	p->made = 0;
	return MATE_OK;
}

int
mate_export_dump(const char *dump, const char *dir, struct mate_export *x, mate_error *err)
{
	struct xp p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.dump = dump;
	p.x = x;
	p.err = err;
	mate_error_clear(err);
	x->kind = NULL;
	rc = export(&p, dir);
	if (rc != MATE_OK && err->message[0] == '\0')
		fail(err, rc, "%s: cannot be exported", dump);
	remove_tmp(&p);
	for (size_t k = 0; k < p.nseq; k++) {
		free(p.seq[k]);
		free(p.seqfn[k]);
		free(p.seqname[k]);
	}
	free(p.seq);
	free(p.seqfn);
	free(p.seqname);
	cJSON_Delete(p.rec);
	mate_value_free(p.outs);
	mate_value_free(p.args);
	mate_dump_free(p.d);
	return rc;
}
