/* dump_pt_read.c: reads torch.save's zip format (.pt) through libarchive and the restricted unpickler. */
#include "mate_private.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#define PT_DEFAULT_MAX_PICKLE ((uint64_t)256 << 20)
#define PT_DEFAULT_MAX_RECORDS 1000000
#define PT_BLOCK_SIZE (1 << 20)
#define PT_MAX_SMALL 64               /* version, byteorder */
#define PT_READ_CHUNK ((size_t)1 << 30)

/* One <root>/data/<key> record, seen in the zip and/or named by the pickle. */
struct pt_record {
	char *key;
	uint64_t size;        /* the zip entry's size, once seen */
	uint64_t want;        /* bytes the pickle declares, once referenced */
	mate_storage *st;     /* the storage it is (or will be) read into */
	int seen, referenced;
};

struct pt_reader {
	struct archive *a;
	const char *path;     /* for messages */
	mate_error *err;
	int failed;
	uint64_t max_pickle, max_records, nentries;
	int load_data;
	uint64_t file_size;
	char *root;
	size_t root_len;
	unsigned char *pickle;
	size_t pickle_len;
	int have_pickle, parsed, have_version;
	mate_value *result;
	struct pt_record **recs;
	size_t nrecs, recs_cap;
	mate_value *index;    /* key -> index into recs */
};

static int pt_fail(struct pt_reader *r, int code, const char *fmt, ...) MATE_PRINTF(3, 4);
static int read_data(struct pt_reader *r, void *dst, uint64_t n, const char *name);

/* Records the first error as "path: why"; returns -1. */
static int
pt_fail(struct pt_reader *r, int code, const char *fmt, ...)
{
	char msg[440];
	va_list ap;

	if (r->failed)
		return -1;
	r->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mate_set_error(r->err, code, "%s: %s", r->path, msg);
	return -1;
}

/* Keeps an error someone else (the unpickler) set, adding the path. */
static int
pt_fail_inner(struct pt_reader *r)
{
	char msg[sizeof(r->err->message)];

	if (r->failed)
		return -1;
	snprintf(msg, sizeof(msg), "%s", r->err->message);
	return pt_fail(r, r->err->code != MATE_OK ? r->err->code : MATE_ERR_FORMAT, "%s", msg);
}

static int
pt_fail_archive(struct pt_reader *r, const char *what)
{
	const char *why = archive_error_string(r->a);

	return pt_fail(r, MATE_ERR_FORMAT, "%s: %s", what, why != NULL ? why : "zip error");
}

/* ---- records ------------------------------------------------------------------ */

static struct pt_record *
rec_find(struct pt_reader *r, const char *key)
{
	mate_value *i = mate_value_lookup(r->index, key);

	return i != NULL ? r->recs[mate_value_get_int(i)] : NULL;
}

static struct pt_record *
rec_add(struct pt_reader *r, const char *key)
{
	struct pt_record *rec;

	if (r->nrecs == r->recs_cap) {
		size_t cap = r->recs_cap ? r->recs_cap * 2 : 64;
		struct pt_record **v = realloc(r->recs, cap * sizeof(*v));
		if (v == NULL)
			goto nomem;
		r->recs = v;
		r->recs_cap = cap;
	}
	rec = calloc(1, sizeof(*rec));
	if (rec == NULL || (rec->key = strdup(key)) == NULL) {
		free(rec);
		goto nomem;
	}
	r->recs[r->nrecs] = rec;
	if (mate_value_set_str(r->index, key, mate_value_int((int64_t)r->nrecs)) != MATE_OK) {
		free(rec->key);
		free(rec);
		goto nomem;
	}
	r->nrecs++;
	return rec;
nomem:
	pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	return NULL;
}

/*
 * The pickle is run twice when data is loaded: first with placeholder
 * storages, to learn which records it needs and how big they must be, so
 * nothing is allocated before the zip's own size of a record has been
 * checked against the pickle; then, after the records were read straight
 * into their storages, for the final tree. Metadata-only reads run it once.
 */

/* First run: note each key's declared size; placeholders without data. */
static mate_storage *
scan_storage(const char *key, mate_dtype dt, int64_t numel, void *ctx, mate_error *err)
{
	struct pt_reader *r = ctx;
	struct pt_record *rec = rec_find(r, key);
	uint64_t n = (uint64_t)numel * mate_dtype_size(dt);

	if (rec == NULL && (rec = rec_add(r, key)) == NULL)
		return NULL;
	if (rec->seen && rec->size != n) {
		mate_set_error(err, MATE_ERR_FORMAT, "record %s/data/%s has %llu bytes, "
		    "but the pickle declares %llu", r->root, key,
		    (unsigned long long)rec->size, (unsigned long long)n);
		return NULL;
	}
	rec->referenced = 1;
	rec->want = n;
	return mate_storage_wrap(NULL, (size_t)n, err);
}

/* Second run: the storages read from the zip. */
static mate_storage *
loaded_storage(const char *key, mate_dtype dt, int64_t numel, void *ctx, mate_error *err)
{
	struct pt_reader *r = ctx;
	struct pt_record *rec = rec_find(r, key);

	if (rec == NULL || rec->st == NULL) {
		mate_set_error(err, MATE_ERR_FORMAT, "storage '%s' was not loaded", key);
		return NULL;
	}
	return mate_storage_ref(rec->st);
}

static int
run_pickle(struct pt_reader *r, mate_storage_loader load)
{
	mate_error perr;

	mate_error_clear(&perr);
	mate_value_free(r->result);
	r->result = mate_pickle_load(r->pickle, r->pickle_len, load, r, &perr);
	if (r->result == NULL) {
		if (r->failed)
			return -1;
		*r->err = perr;
		return pt_fail_inner(r);
	}
	return 0;
}

static int
scan_pickle(struct pt_reader *r)
{
	r->parsed = 1;
	if (run_pickle(r, scan_storage) != 0)
		return -1;
	if (r->load_data) {
		mate_value_free(r->result);
		r->result = NULL;
	}
	return 0;
}

/* A record's storage: allocated only once its size is known and checked. */
static int
load_record(struct pt_reader *r, struct pt_record *rec, const char *name, uint64_t size)
{
	if (!r->load_data)
		return 0;
	if ((rec->st = mate_storage_new((size_t)size, r->err)) == NULL)
		return pt_fail_inner(r);
	return read_data(r, mate_storage_data(rec->st), size, name);
}

/* ---- entries ------------------------------------------------------------------- */

/* Reads exactly n bytes of the current entry into dst. */
static int
read_data(struct pt_reader *r, void *dst, uint64_t n, const char *name)
{
	char *p = dst;

	while (n > 0) {
		size_t want = n > PT_READ_CHUNK ? PT_READ_CHUNK : (size_t)n;
		la_ssize_t got = archive_read_data(r->a, p, want);

		if (got < 0)
			return pt_fail_archive(r, name);
		if (got == 0)
			return pt_fail(r, MATE_ERR_FORMAT, "%s: truncated record", name);
		p += got;
		n -= (uint64_t)got;
	}
	return 0;
}

static int
read_small(struct pt_reader *r, const char *name, uint64_t size, char *buf)
{
	if (size > PT_MAX_SMALL)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: %llu bytes is too long", name,
		    (unsigned long long)size);
	buf[size] = '\0';
	return read_data(r, buf, size, name);
}

/* <root>/version: ASCII decimal in [1, 10], optionally followed by space. */
static int
entry_version(struct pt_reader *r, const char *name, uint64_t size)
{
	char buf[PT_MAX_SMALL + 1], *end;
	unsigned long v;

	if (r->have_version++)
		return 0;   /* both version and .data/version: the first counts */
	if (read_small(r, name, size, buf) != 0)
		return -1;
	errno = 0;
	v = buf[0] >= '0' && buf[0] <= '9' ? strtoul(buf, &end, 10) : 0;
	if (v == 0 || errno != 0 || strspn(end, " \t\r\n") != strlen(end))
		return pt_fail(r, MATE_ERR_FORMAT, "%s: not a version number", name);
	if (v > 10)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "%s: format version %lu is not supported "
		    "(1 to 10 are)", name, v);
	return 0;
}

static int
entry_byteorder(struct pt_reader *r, const char *name, uint64_t size)
{
	char buf[PT_MAX_SMALL + 1];

	if (read_small(r, name, size, buf) != 0)
		return -1;
	if (strcmp(buf, "little") == 0)
		return 0;
	if (strcmp(buf, "big") == 0)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "big-endian .pt files are not supported");
	return pt_fail(r, MATE_ERR_FORMAT, "%s: must be \"little\" or \"big\"", name);
}

static int
entry_pickle(struct pt_reader *r, const char *name, uint64_t size)
{
	if (r->have_pickle++)
		return pt_fail(r, MATE_ERR_FORMAT, "duplicate %s", name);
	if (size > r->max_pickle)
		return pt_fail(r, MATE_ERR_LIMIT, "%s: %llu bytes is more than the limit of %llu",
		    name, (unsigned long long)size, (unsigned long long)r->max_pickle);
	r->pickle = malloc(size > 0 ? (size_t)size : 1);
	if (r->pickle == NULL)
		return pt_fail(r, MATE_ERR_NOMEM, "out of memory");
	r->pickle_len = (size_t)size;
	return read_data(r, r->pickle, size, name);
}

/* <root>/data/<key>: read straight into the storage the pickle asked for. */
static int
entry_record(struct pt_reader *r, const char *key, const char *name, uint64_t size)
{
	struct pt_record *rec = rec_find(r, key);

	if (rec != NULL && rec->seen)
		return pt_fail(r, MATE_ERR_FORMAT, "duplicate record %s", name);
	if (rec == NULL && (rec = rec_add(r, key)) == NULL)
		return -1;
	rec->seen = 1;
	rec->size = size;
	if (!r->parsed)     /* before data.pkl (unusual): keep it in case it is used */
		return load_record(r, rec, name, size);
	if (!rec->referenced)
		return 0;
	if (size != rec->want)
		return pt_fail(r, MATE_ERR_FORMAT, "record %s has %llu bytes, but the pickle "
		    "declares %llu", name, (unsigned long long)size, (unsigned long long)rec->want);
	return load_record(r, rec, name, size);
}

/* Sets the root from the first entry, or checks that name is under it. */
static const char *
check_root(struct pt_reader *r, const char *name)
{
	if (r->root == NULL) {
		const char *slash = strchr(name, '/');

		if (slash == NULL || slash == name) {
			pt_fail(r, MATE_ERR_FORMAT, "entry '%s' is not in a subdirectory", name);
			return NULL;
		}
		r->root_len = (size_t)(slash - name);
		r->root = strndup(name, r->root_len);
		if (r->root == NULL) {
			pt_fail(r, MATE_ERR_NOMEM, "out of memory");
			return NULL;
		}
	}
	if (strncmp(name, r->root, r->root_len) != 0 || name[r->root_len] != '/') {
		pt_fail(r, MATE_ERR_FORMAT, "entry '%s' is outside the archive root '%s' "
		    "(more than one root)", name, r->root);
		return NULL;
	}
	return name + r->root_len + 1;
}

static int
entry(struct pt_reader *r, struct archive_entry *e)
{
	const char *name = archive_entry_pathname_utf8(e), *rest;
	uint64_t size;

	if (name == NULL)
		name = archive_entry_pathname(e);
	if (name == NULL)
		return pt_fail(r, MATE_ERR_FORMAT, "zip entry %llu: name is not valid UTF-8",
		    (unsigned long long)r->nentries);
	if (++r->nentries > r->max_records)
		return pt_fail(r, MATE_ERR_LIMIT, "more than %llu zip entries",
		    (unsigned long long)r->max_records);
	if ((rest = check_root(r, name)) == NULL)
		return -1;
	if (archive_entry_filetype(e) == AE_IFDIR)
		return 0;
	if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0)
		return pt_fail(r, MATE_ERR_FORMAT, "%s: size unknown", name);
	size = (uint64_t)archive_entry_size(e);
	if (strcmp(rest, "constants.pkl") == 0)
		return pt_fail(r, MATE_ERR_UNSUPPORTED, "a TorchScript archive (%s), not a "
		    "torch.save file", name);
	if (strcmp(rest, "data.pkl") == 0)
		return entry_pickle(r, name, size);
	if (strcmp(rest, "version") == 0 || strcmp(rest, ".data/version") == 0)
		return entry_version(r, name, size);
	if (strcmp(rest, "byteorder") == 0)
		return entry_byteorder(r, name, size);
	if (strncmp(rest, "data/", 5) != 0)
		return 0;
	if (r->have_pickle && !r->parsed && scan_pickle(r) != 0)
		return -1;
	return entry_record(r, rest + 5, name, size);
}

/* After the last entry: everything required was there. */
static int
finish(struct pt_reader *r)
{
	if (r->root == NULL)
		return pt_fail(r, MATE_ERR_FORMAT, "empty zip archive");
	if (!r->have_pickle)
		return pt_fail(r, MATE_ERR_FORMAT, "no %s/data.pkl record", r->root);
	if (!r->have_version)
		return pt_fail(r, MATE_ERR_FORMAT, "no %s/version record", r->root);
	if (!r->parsed && scan_pickle(r) != 0)
		return -1;
	for (size_t i = 0; i < r->nrecs; i++)
		if (r->recs[i]->referenced && !r->recs[i]->seen)
			return pt_fail(r, MATE_ERR_FORMAT, "missing record %s/data/%s",
			    r->root, r->recs[i]->key);
	return r->load_data ? run_pickle(r, loaded_storage) : 0;
}

/* ---- the container ------------------------------------------------------------- */

/* Rejects what is not a torch.save zip before libarchive sees it. */
static int
check_magic(struct pt_reader *r, const unsigned char *p, size_t n)
{
	if (n >= 4 && memcmp(p, "PK\003\004", 4) == 0)
		return 0;
	if (n >= 2 && p[0] == 0x80 && p[1] <= 5)
		return pt_fail(r, MATE_ERR_UNSUPPORTED,
		    "legacy torch.save format (pre-1.6) is not supported");
	if (n < 4)
		return pt_fail(r, MATE_ERR_FORMAT, "too short for a .pt file (%zu bytes)", n);
	return pt_fail(r, MATE_ERR_FORMAT, "not a .pt file (bad magic %02x %02x %02x %02x)",
	    p[0], p[1], p[2], p[3]);
}

static uint64_t
le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Cheap early limit: the entry count of a comment-less end record. tail
 * holds the file's last n bytes (n <= 98). */
static int
check_entry_count(struct pt_reader *r, const unsigned char *tail, size_t n)
{
	const unsigned char *eocd, *loc;
	uint64_t count;

	if (n < 22 || memcmp(tail + n - 22, "PK\005\006", 4) != 0)
		return 0;
	eocd = tail + n - 22;
	count = le(eocd + 10, 2);
	if (count == 0xffff && n >= 98) {
		loc = eocd - 20;
		if (memcmp(loc, "PK\006\007", 4) == 0 && memcmp(tail, "PK\006\006", 4) == 0 &&
		    le(loc + 8, 8) == r->file_size - 98)
			count = le(tail + 32, 8);
	}
	if (count > r->max_records)
		return pt_fail(r, MATE_ERR_LIMIT, "%llu zip entries, more than the limit of %llu",
		    (unsigned long long)count, (unsigned long long)r->max_records);
	return 0;
}

static void
reader_init(struct pt_reader *r, const char *path, const struct mate_pt_read_options *opts,
    mate_error *err, mate_error *local)
{
	memset(r, 0, sizeof(*r));
	mate_error_clear(local);
	r->err = err != NULL ? err : local;
	mate_error_clear(r->err);
	r->path = path;
	r->max_pickle = opts && opts->max_pickle_bytes ? opts->max_pickle_bytes : PT_DEFAULT_MAX_PICKLE;
	r->max_records = opts && opts->max_records ? opts->max_records : PT_DEFAULT_MAX_RECORDS;
	r->load_data = opts ? opts->load_data : 1;
}

static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void
utf8_locale_init(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* libarchive converts zip names (UTF-8 in torch files) to the current
 * locale, which fails for non-ASCII names in the C locale; this thread
 * uses C.UTF-8 while reading (uselocale is per thread), where available. */
static locale_t
enter_utf8(void)
{
	pthread_once(&utf8_once, utf8_locale_init);
	return utf8_locale != (locale_t)0 ? uselocale(utf8_locale) : (locale_t)0;
}

static void
leave_utf8(locale_t old)
{
	if (old != (locale_t)0)
		uselocale(old);
}

static struct archive *
new_archive(struct pt_reader *r)
{
	struct archive *a = archive_read_new();

	if (a == NULL) {
		pt_fail(r, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	archive_read_support_format_zip_seekable(a);
	/* torch 2.x may write CRC 0; torch itself never checks CRCs. */
	archive_read_set_options(a, "zip:ignorecrc32");
	return a;
}

/* Walks the entries of an opened archive, then checks and returns the tree. */
static mate_value *
read_archive(struct pt_reader *r)
{
	struct archive_entry *e;
	int rc;

	r->index = mate_value_dict();
	if (r->index == NULL) {
		pt_fail(r, MATE_ERR_NOMEM, "out of memory");
		return NULL;
	}
	while (!r->failed) {
		rc = archive_read_next_header(r->a, &e);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc < ARCHIVE_WARN) {
			pt_fail_archive(r, "zip");
			break;
		}
		entry(r, e);
	}
	if (!r->failed)
		finish(r);
	return r->failed ? NULL : r->result;
}

static mate_value *
reader_done(struct pt_reader *r, mate_value *v)
{
	if (r->a != NULL)
		archive_read_free(r->a);
	for (size_t i = 0; i < r->nrecs; i++) {
		mate_storage_unref(r->recs[i]->st);
		free(r->recs[i]->key);
		free(r->recs[i]);
	}
	free(r->recs);
	mate_value_free(r->index);
	free(r->root);
	free(r->pickle);
	if (v == NULL)
		mate_value_free(r->result);
	return v;
}

/* Opens the archive (path, or buf/len) and reads it; frees the reader. */
static mate_value *
read_zip(struct pt_reader *r, const char *path, const void *buf, size_t len)
{
	locale_t old = enter_utf8();
	mate_value *v = NULL;
	int rc;

	if ((r->a = new_archive(r)) != NULL) {
		if (path != NULL)
			rc = archive_read_open_filename(r->a, path, PT_BLOCK_SIZE);
		else
			rc = archive_read_open_memory(r->a, buf, len);
		if (rc != ARCHIVE_OK)
			pt_fail_archive(r, "zip");
		else
			v = read_archive(r);
	}
	v = reader_done(r, v);
	leave_utf8(old);
	return v;
}

/* Reads the first and last bytes of path for the early checks. */
static int
read_ends(struct pt_reader *r, const char *path, unsigned char *head, size_t *nhead,
    unsigned char *tail, size_t *ntail)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fstat(fd, &sb) != 0) {
		mate_set_errno(r->err, errno, "cannot open", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	r->file_size = (uint64_t)sb.st_size;
	*nhead = r->file_size < *nhead ? (size_t)r->file_size : *nhead;
	*ntail = r->file_size < *ntail ? (size_t)r->file_size : *ntail;
	if ((rc = mate_pread_all(fd, head, *nhead, 0)) == 0)
		rc = mate_pread_all(fd, tail, *ntail, r->file_size - *ntail);
	if (rc != 0)
		mate_set_errno(r->err, -rc, "cannot read", path);
	close(fd);
	return rc != 0 ? -1 : 0;
}

mate_value *
mate_pt_read(const char *path, const struct mate_pt_read_options *opts, mate_error *err)
{
	struct pt_reader r;
	mate_error local;
	unsigned char head[4], tail[98];
	size_t nhead = sizeof(head), ntail = sizeof(tail);

	reader_init(&r, path, opts, err, &local);
	if (read_ends(&r, path, head, &nhead, tail, &ntail) != 0)
		return NULL;
	if (check_magic(&r, head, nhead) != 0 || check_entry_count(&r, tail, ntail) != 0)
		return NULL;
	return read_zip(&r, path, NULL, 0);
}

mate_value *
mate_pt_read_memory(const void *buf, size_t len, const struct mate_pt_read_options *opts,
    mate_error *err)
{
	struct pt_reader r;
	mate_error local;
	size_t ntail = len < 98 ? len : 98;

	reader_init(&r, "<memory>", opts, err, &local);
	r.file_size = len;
	if (check_magic(&r, buf, len) != 0 ||
	    check_entry_count(&r, (const unsigned char *)buf + len - ntail, ntail) != 0)
		return NULL;
	return read_zip(&r, NULL, buf, len);
}
