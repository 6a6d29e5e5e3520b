/* test_pickle.c: unit tests for the restricted unpickler (lib/format/pickle.c): every opcode, tensors, and hostile pickles. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mate_core.h"
#include "test.h"
#include "pt_build.h"

/* A loader that fills each storage with 0, 1, 2, ... and counts calls. */
struct loads {
	int calls;
	char last_key[32];
	int fail;
};

static mate_storage *
loader(const char *key, mate_dtype dt, int64_t numel, void *ctx, mate_error *err)
{
	struct loads *l = ctx;
	size_t n = (size_t)numel * mate_dtype_size(dt);
	mate_storage *st;

	l->calls++;
	snprintf(l->last_key, sizeof(l->last_key), "%s", key);
	if (l->fail) {
		if (err != NULL) {
			err->code = MATE_ERR_IO;
			snprintf(err->message, sizeof(err->message), "loader refused %s", key);
		}
		return NULL;
	}
	st = mate_storage_new(n, err);
	for (size_t i = 0; st != NULL && i < n; i++)
		((unsigned char *)mate_storage_data(st))[i] = (unsigned char)i;
	return st;
}

static mate_value *
load(struct buf *b, struct loads *l, mate_error *err)
{
	mate_error_clear(err);
	return mate_pickle_load(b->p, b->n, l ? loader : NULL, l, err);
}

/* Loads the pickle in b, which must work; when it does not, says why and
 * frees b. @return the value, or NULL after a failed check. */
static mate_value *
load_ok(struct buf *b, struct loads *l)
{
	mate_error err;
	mate_value *v = load(b, l, &err);

	CHECK(v != NULL);
	if (v == NULL) {
		fprintf(stderr, "%s\n", err.message);
		b_free(b);
	}
	return v;
}

/* Expects the pickle in b to fail with a message containing want. */
static void
expect_fail(struct buf *b, const char *want, int code)
{
	mate_error err;
	struct loads l = { 0 };
	mate_value *v = load(b, &l, &err);

	CHECK(v == NULL);
	CHECK_CONTAINS(err.message, want);
	if (code != 0)
		CHECK_EQ_INT(err.code, code);
	mate_value_free(v);
	b_free(b);
}

static void
start(struct buf *b)
{
	memset(b, 0, sizeof(*b));
	b_op(b, 0x80);
	b_op(b, 2);
}

static long
maxrss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* A billion laughs through the memo: 10 levels of ten references each (276 bytes). */
static void
laughs(struct buf *b)
{
	start(b);
	p_str(b, "0123456789abcdef");
	b_op(b, 'q'); b_op(b, 0);
	for (int lvl = 1; lvl <= 10; lvl++) {
		b_op(b, ']');
		b_op(b, '(');
		for (int i = 0; i < 10; i++) {
			b_op(b, 'h'); b_op(b, (uint8_t)(lvl - 1));
		}
		b_op(b, 'e');
		b_op(b, 'q'); b_op(b, (uint8_t)lvl);
	}
	b_op(b, '.');
}

/* Billion laughs through the memo: 10 levels of ten references each. Its
 * conversion stops at MATE_MAX_MEMORY (32 MiB here), and the process's
 * peak grows by about that much, not by the 0.5 GB the old per-node
 * guess let through (issue 19, item 15). Run in a child, whose peak is its
 * own; the first case, so that the child's peak starts from a small one. */
DEFINE_TEST(memory_cap)
{
	struct buf b;
	pid_t pid;
	int status = -1;   /* not an exit: a waitpid() that failed fails the check */

	laughs(&b);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		long before, grown;
		mate_error err;
		mate_value *v;

		setenv("MATE_MAX_MEMORY", "32M", 1);
		before = maxrss_kib();
		v = load(&b, NULL, &err);
		grown = (maxrss_kib() - before) / 1024;
		printf("billion laughs (%zu bytes): %s; peak grew by %ld MiB\n", b.n,
		    v == NULL ? err.message : "loaded", grown);
		fflush(stdout);
		_exit(v == NULL && err.code == MATE_ERR_LIMIT &&
		    strstr(err.message, "MATE_MAX_MEMORY") != NULL && grown < 80 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	b_free(&b);
}

/* The same pickle under the default limit (1 GiB): its objects may take memory in
 * proportion to the pickle's 276 bytes (16 MiB and 256 bytes a byte), not the whole cap
 * (issue 32): refused, and the peak grows by tens of MiB, not by a GiB. */
DEFINE_TEST(memory_in_proportion)
{
	struct buf b;
	pid_t pid;
	int status = -1;

	laughs(&b);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		long before, grown;
		mate_error err;
		mate_value *v;

		unsetenv("MATE_MAX_MEMORY");
		before = maxrss_kib();
		v = load(&b, NULL, &err);
		grown = (maxrss_kib() - before) / 1024;
		printf("billion laughs (%zu bytes), default limit: %s; peak grew by %ld MiB\n", b.n,
		    v == NULL ? err.message : "loaded", grown);
		fflush(stdout);
		_exit(v == NULL && err.code == MATE_ERR_LIMIT &&
		    strstr(err.message, "256 bytes per byte of the pickle") != NULL && grown < 64 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	b_free(&b);
}

/* ---- plain values, every opcode ---- */

DEFINE_TEST(scalars)
{
	struct buf b;
	mate_value *v;
	const unsigned char d[8] = { 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18 };

	start(&b);
	b_op(&b, ']');                 /* EMPTY_LIST */
	b_op(&b, '(');                 /* MARK ... APPENDS */
	p_int(&b, 7);                  /* BININT1 */
	p_int(&b, 300);                /* BININT2 */
	p_int(&b, -5);                 /* BININT */
	p_int(&b, INT64_MIN);          /* LONG1, 8 bytes */
	b_op(&b, 0x8a); b_op(&b, 0);   /* LONG1, 0 bytes: 0 */
	b_op(&b, 0x8a); b_op(&b, 5); b_le(&b, 0x80000000ull, 5);   /* 2^31 as Python writes it */
	b_op(&b, 0x8a); b_op(&b, 2); b_le(&b, 0xff7f, 2);           /* -129 */
	b_op(&b, 0x8a); b_op(&b, 9); b_le(&b, UINT64_MAX, 8); b_op(&b, 0xff); /* -1, 9 bytes */
	b_op(&b, 'G'); b_bytes(&b, d, 8);                             /* BINFLOAT pi */
	b_op(&b, 'N');
	b_op(&b, 0x88);
	b_op(&b, 0x89);
	p_str(&b, "h\xc3\xa9llo");
	b_op(&b, 0x8c); b_op(&b, 2); b_bytes(&b, "ab", 2);            /* SHORT_BINUNICODE */
	b_op(&b, 'U'); b_op(&b, 3); b_bytes(&b, "py2", 3);            /* SHORT_BINSTRING */
	b_op(&b, 'C'); b_op(&b, 2); b_bytes(&b, "\x00\xff", 2);       /* SHORT_BINBYTES */
	b_op(&b, 'B'); b_le(&b, 3, 4); b_bytes(&b, "xyz", 3);         /* BINBYTES */
	b_op(&b, 'e');
	b_op(&b, '.');
	v = load_ok(&b, NULL);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_LIST);
	CHECK_EQ_INT(mate_value_len(v), 17);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 0)), 7);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 1)), 300);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 2)), -5);
	CHECK(mate_value_get_int(mate_value_item(v, 3)) == INT64_MIN);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 4)), 0);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 5)), 2147483648LL);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 6)), -129);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 7)), -1);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 8)), MATE_V_FLOAT);
	CHECK(mate_value_get_float(mate_value_item(v, 8)) == 3.141592653589793);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 9)), MATE_V_NONE);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 10)), MATE_V_BOOL);
	CHECK_EQ_INT(mate_value_get_bool(mate_value_item(v, 10)), 1);
	CHECK_EQ_INT(mate_value_get_bool(mate_value_item(v, 11)), 0);
	CHECK_STR(mate_value_get_str(mate_value_item(v, 12), NULL), "h\xc3\xa9llo");
	CHECK_STR(mate_value_get_str(mate_value_item(v, 13), NULL), "ab");
	CHECK_STR(mate_value_get_str(mate_value_item(v, 14), NULL), "py2");
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 15)), MATE_V_BYTES);
	{
		size_t n;
		const char *s = mate_value_get_str(mate_value_item(v, 15), &n);
		CHECK_EQ_INT(n, 2);
		CHECK(s != NULL && memcmp(s, "\x00\xff", 2) == 0);
		CHECK_STR(mate_value_get_str(mate_value_item(v, 16), NULL), "xyz");
	}
	mate_value_free(v);
	b_free(&b);
}

DEFINE_TEST(containers)
{
	struct buf b;
	mate_value *v, *t;

	start(&b);
	b_op(&b, 0x95); b_le(&b, 0, 8);      /* FRAME (ignored) */
	b_op(&b, '}');                       /* EMPTY_DICT */
	p_str(&b, "one");
	b_op(&b, ']'); p_int(&b, 1); b_op(&b, 'a');      /* APPEND */
	b_op(&b, 's');                       /* SETITEM */
	b_op(&b, '(');
	p_str(&b, "t0"); b_op(&b, ')');
	p_str(&b, "t1"); p_int(&b, 1); b_op(&b, 0x85);
	p_str(&b, "t2"); p_int(&b, 1); p_int(&b, 2); b_op(&b, 0x86);
	p_str(&b, "t3"); p_int(&b, 1); p_int(&b, 2); p_int(&b, 3); b_op(&b, 0x87);
	p_str(&b, "t4"); b_op(&b, '('); p_int(&b, 1); p_int(&b, 2); p_int(&b, 3); p_int(&b, 4); b_op(&b, 't');
	p_str(&b, "set"); b_op(&b, 0x8f); b_op(&b, '('); p_int(&b, 5); p_int(&b, 6); b_op(&b, 0x90);
	p_str(&b, "od"); p_global(&b, "collections", "OrderedDict"); b_op(&b, ')'); b_op(&b, 0x81);
	b_op(&b, 'u');                       /* SETITEMS */
	b_op(&b, '.');
	v = load_ok(&b, NULL);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_DICT);
	CHECK_EQ_INT(mate_value_is_ordered(v), 0);
	CHECK_EQ_INT(mate_value_len(v), 8);
	CHECK_STR(mate_value_get_str(mate_value_key(v, 0), NULL), "one");
	CHECK_EQ_INT(mate_value_len(mate_value_lookup(v, "one")), 1);
	for (int i = 0; i <= 4; i++) {
		char k[4];
		snprintf(k, sizeof(k), "t%d", i);
		t = mate_value_lookup(v, k);
		CHECK_EQ_INT(mate_value_kind_of(t), MATE_V_TUPLE);
		CHECK_EQ_INT(mate_value_len(t), i);
		if (i > 0)
			CHECK_EQ_INT(mate_value_get_int(mate_value_item(t, i - 1)), i);
	}
	t = mate_value_lookup(v, "set");
	CHECK_EQ_INT(mate_value_kind_of(t), MATE_V_LIST);
	CHECK_EQ_INT(mate_value_len(t), 2);
	t = mate_value_lookup(v, "od");
	CHECK_EQ_INT(mate_value_kind_of(t), MATE_V_DICT);
	CHECK_EQ_INT(mate_value_is_ordered(t), 1);
	mate_value_free(v);
	b_free(&b);

	/* MARK TUPLE on an empty stack: (). */
	start(&b);
	b_op(&b, '('); b_op(&b, 't'); b_op(&b, '.');
	v = load_ok(&b, NULL);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_TUPLE);
	CHECK_EQ_INT(mate_value_len(v), 0);
	mate_value_free(v);
	b_free(&b);
}

/* PUT stores the object itself: later mutation shows through GET, as in Python. */
DEFINE_TEST(memo)
{
	struct buf b;
	mate_value *v;

	start(&b);
	b_op(&b, '(');
	b_op(&b, ']'); b_op(&b, 'q'); b_op(&b, 0);                 /* BINPUT 0 */
	p_str(&b, "s"); b_op(&b, 'r'); b_le(&b, 30, 4);             /* LONG_BINPUT */
	b_op(&b, 'a');                                              /* list.append('s') */
	b_op(&b, 'h'); b_op(&b, 0);                                 /* BINGET 0: same list */
	b_op(&b, 'j'); b_le(&b, 30, 4);                             /* LONG_BINGET */
	p_int(&b, 9); b_op(&b, 0x94);                               /* MEMOIZE -> key 2 */
	b_op(&b, 'h'); b_op(&b, 2);
	b_op(&b, 'q'); b_op(&b, 0);                                 /* overwrite key 0 */
	b_op(&b, 'h'); b_op(&b, 0);
	b_op(&b, 't');
	b_op(&b, '.');
	v = load_ok(&b, NULL);
	CHECK_EQ_INT(mate_value_len(v), 6);
	CHECK_EQ_INT(mate_value_len(mate_value_item(v, 0)), 1);
	CHECK_EQ_INT(mate_value_len(mate_value_item(v, 1)), 1);
	CHECK_STR(mate_value_get_str(mate_value_item(mate_value_item(v, 1), 0), NULL), "s");
	CHECK_STR(mate_value_get_str(mate_value_item(v, 2), NULL), "s");
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 3)), 9);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 4)), 9);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(v, 5)), 9);
	mate_value_free(v);
	b_free(&b);
}

/* torch.device, torch.Size, dtypes, _codecs.encode and empty bytes. */
DEFINE_TEST(torch_values)
{
	struct buf b;
	mate_value *v;
	size_t n;
	const char *s;

	start(&b);
	b_op(&b, '(');
	p_global(&b, "torch", "device"); p_str(&b, "cuda"); p_int(&b, 1); b_op(&b, 0x86); b_op(&b, 'R');
	p_global(&b, "torch", "device"); p_str(&b, "cpu"); b_op(&b, 0x85); b_op(&b, 'R');
	p_global(&b, "torch", "Size"); p_int(&b, 2); p_int(&b, 3); b_op(&b, 0x86); b_op(&b, 0x85); b_op(&b, 'R');
	p_global(&b, "torch", "bfloat16");
	p_global(&b, "torch", "float8_e4m3fn");
	p_global(&b, "_codecs", "encode"); p_str(&b, "\x01\xc3\xbf\xc2\x80"); p_str(&b, "latin1");
	b_op(&b, 0x86); b_op(&b, 'R');
	p_global(&b, "__builtin__", "bytes"); b_op(&b, ')'); b_op(&b, 'R');
	p_global(&b, "builtins", "set"); b_op(&b, ']'); p_int(&b, 4); b_op(&b, 'a'); b_op(&b, 0x85); b_op(&b, 'R');
	p_global(&b, "collections", "OrderedDict");
	b_op(&b, 't');
	b_op(&b, '.');
	if ((v = load_ok(&b, NULL)) == NULL)
		return;
	CHECK_STR(mate_value_object_type(mate_value_item(v, 0)), "torch.device");
	CHECK_STR(mate_value_object_repr(mate_value_item(v, 0)), "cuda:1");
	CHECK_STR(mate_value_object_repr(mate_value_item(v, 1)), "cpu");
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 2)), MATE_V_TUPLE);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(mate_value_item(v, 2), 1)), 3);
	CHECK_EQ_INT(mate_value_get_dtype(mate_value_item(v, 3)), MATE_BF16);
	CHECK_EQ_INT(mate_value_get_dtype(mate_value_item(v, 4)), MATE_F8_E4M3FN);
	s = mate_value_get_str(mate_value_item(v, 5), &n);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 5)), MATE_V_BYTES);
	CHECK_EQ_INT(n, 3);
	CHECK(s != NULL && memcmp(s, "\x01\xff\x80", 3) == 0);
	mate_value_get_str(mate_value_item(v, 6), &n);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_item(v, 6)), MATE_V_BYTES);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(mate_value_len(mate_value_item(v, 7)), 1);
	CHECK_STR(mate_value_object_type(mate_value_item(v, 8)), "global");
	mate_value_free(v);
	b_free(&b);
}

/* state_dict(): OrderedDict, SETITEMS, then BUILD with {'_metadata': ...}. */
DEFINE_TEST(state_dict)
{
	struct buf b;
	struct loads l = { 0 };
	mate_value *v;
	int64_t size[2] = { 2, 3 }, stride[2] = { 3, 1 };

	start(&b);
	p_odict(&b);
	b_op(&b, 'q'); b_op(&b, 0);
	b_op(&b, '(');
	p_str(&b, "w"); p_tensor_v2(&b, "FloatStorage", "0", 6, 0, 2, size, stride);
	p_str(&b, "b"); p_tensor_v2(&b, "FloatStorage", "1", 3, 0, 1, size + 1, stride + 1);
	b_op(&b, 'u');
	b_op(&b, '}');
	p_str(&b, "_metadata");
	p_odict(&b);
	p_str(&b, ""); b_op(&b, '}'); p_str(&b, "version"); p_int(&b, 1); b_op(&b, 's');
	b_op(&b, 's');
	b_op(&b, 's');
	b_op(&b, 'b');
	b_op(&b, '.');
	v = load_ok(&b, &l);
	CHECK_EQ_INT(l.calls, 2);
	CHECK_EQ_INT(mate_value_is_ordered(v), 1);
	CHECK_EQ_INT(mate_value_len(v), 2);
	CHECK(mate_value_lookup(v, "_metadata") == NULL);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_lookup(v, "w"))->shape[1], 3);
	mate_value_free(v);
	b_free(&b);
}

/* ---- tensors ---- */

DEFINE_TEST(tensor_v2)
{
	struct buf b;
	struct loads l = { 0 };
	mate_value *v;
	const mate_tensor *t, *u;
	int64_t size[2] = { 2, 3 }, stride[2] = { 3, 1 }, tsize[2] = { 3, 2 }, tstride[2] = { 1, 3 };
	int64_t esize[2] = { 4, 3 }, estride[2] = { 0, 1 }, one = 1;

	start(&b);
	b_op(&b, '(');
	p_tensor_v2(&b, "FloatStorage", "0", 6, 0, 2, size, stride);
	p_tensor_v2(&b, "FloatStorage", "0", 6, 0, 2, tsize, tstride);    /* t(): same key */
	p_tensor_v2(&b, "FloatStorage", "0", 6, 5, 1, &one, &one);         /* offset 5 */
	p_tensor_v2(&b, "LongStorage", "1", 3, 0, 2, esize, estride);      /* expand */
	p_tensor_v2(&b, "DoubleStorage", "2", 1, 0, 0, NULL, NULL);        /* 0-dim */
	p_tensor_v2(&b, "HalfStorage", "3", 0, 0, 2, (int64_t[]){ 0, 3 }, stride); /* empty */
	b_op(&b, 't');
	b_op(&b, '.');
	if ((v = load_ok(&b, &l)) == NULL)
		return;
	CHECK_EQ_INT(l.calls, 4);
	t = mate_value_get_tensor(mate_value_item(v, 0));
	u = mate_value_get_tensor(mate_value_item(v, 1));
	CHECK_EQ_INT(t->dtype, MATE_F32);
	CHECK_EQ_INT(t->ndim, 2);
	CHECK_EQ_INT(t->requires_grad, 0);
	CHECK(mate_value_get_storage(mate_value_item(v, 0)) == mate_value_get_storage(mate_value_item(v, 1)));
	CHECK(mate_value_get_storage(mate_value_item(v, 0)) == mate_value_get_storage(mate_value_item(v, 2)));
	CHECK_EQ_INT(mate_storage_size(mate_value_get_storage(mate_value_item(v, 0))), 24);
	CHECK(t->data == mate_storage_data(mate_value_get_storage(mate_value_item(v, 0))));
	CHECK_EQ_INT(((unsigned char *)t->data)[23], 23);
	CHECK_EQ_INT(u->stride[0], 1);
	CHECK_EQ_INT(u->stride[1], 3);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 2))->offset, 5);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 3))->dtype, MATE_I64);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 3))->stride[0], 0);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 4))->ndim, 0);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 5))->shape[0], 0);
	CHECK_EQ_INT(mate_storage_size(mate_value_get_storage(mate_value_item(v, 5))), 0);
	mate_value_free(v);
	b_free(&b);

	/* Without a loader the storages are placeholders with no data. */
	start(&b);
	p_tensor_v2(&b, "IntStorage", "0", 6, 0, 2, size, stride);
	b_op(&b, '.');
	v = load_ok(&b, NULL);
	CHECK(mate_storage_data(mate_value_get_storage(v)) == NULL);
	CHECK_EQ_INT(mate_storage_size(mate_value_get_storage(v)), 24);
	mate_value_free(v);
	b_free(&b);
}

/* _rebuild_tensor_v3 (UntypedStorage, numel in bytes, dtype last), the old
 * 4-argument _rebuild_tensor and tensor metadata. */
DEFINE_TEST(tensor_v3)
{
	struct buf b;
	struct loads l = { 0 };
	mate_value *v;
	int64_t size = 4, stride = 1;

	start(&b);
	b_op(&b, '(');
	p_global(&b, "torch._utils", "_rebuild_tensor_v3");
	p_tensor_args(&b, "torch.storage", "UntypedStorage", "0", 8, 2, 1, &size, &stride);
	b_op(&b, 0x89); p_odict(&b);
	p_global(&b, "torch", "float8_e5m2");
	b_op(&b, '}');                                      /* metadata {} */
	b_op(&b, 't'); b_op(&b, 'R');
	p_global(&b, "torch._utils", "_rebuild_tensor_v3");
	p_tensor_args(&b, "torch", "UntypedStorage", "1", 8, 0, 1, &size, &stride);
	b_op(&b, 0x89); p_odict(&b);
	p_global(&b, "torch", "uint16");
	b_op(&b, 't'); b_op(&b, 'R');
	p_global(&b, "torch._utils", "_rebuild_tensor");
	p_tensor_args(&b, "torch", "ShortStorage", "2", 4, 0, 1, &size, &stride);
	b_op(&b, 't'); b_op(&b, 'R');
	b_op(&b, 't');
	b_op(&b, '.');
	if ((v = load_ok(&b, &l)) == NULL)
		return;
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 0))->dtype, MATE_F8_E5M2);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 0))->offset, 2);
	CHECK_EQ_INT(mate_storage_size(mate_value_get_storage(mate_value_item(v, 0))), 8);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 1))->dtype, MATE_U16);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 2))->dtype, MATE_I16);
	mate_value_free(v);
	b_free(&b);

	/* uint16 x 4 needs 8 bytes: a 6-byte untyped storage is too small. */
	start(&b);
	p_global(&b, "torch._utils", "_rebuild_tensor_v3");
	p_tensor_args(&b, "torch.storage", "UntypedStorage", "0", 6, 0, 1, &size, &stride);
	b_op(&b, 0x89); p_odict(&b); p_global(&b, "torch", "uint16");
	b_op(&b, 't'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "needs 8 bytes of its storage, which has 6", MATE_ERR_FORMAT);

	/* conj/neg metadata would change values: refused. */
	start(&b);
	p_global(&b, "torch._utils", "_rebuild_tensor_v2");
	p_tensor_args(&b, "torch", "ComplexFloatStorage", "0", 4, 0, 1, &size, &stride);
	b_op(&b, 0x89); p_odict(&b);
	b_op(&b, '}'); p_str(&b, "conj"); b_op(&b, 0x88); b_op(&b, 's');
	b_op(&b, 't'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "metadata 'conj'", MATE_ERR_UNSUPPORTED);
}

DEFINE_TEST(parameter)
{
	struct buf b;
	struct loads l = { 0 };
	mate_value *v;
	int64_t size = 3, stride = 1;

	start(&b);
	b_op(&b, '(');
	p_global(&b, "torch._utils", "_rebuild_parameter");
	p_tensor_v2(&b, "FloatStorage", "0", 3, 0, 1, &size, &stride);
	b_op(&b, 0x88); p_odict(&b); b_op(&b, 0x87); b_op(&b, 'R');
	p_global(&b, "torch._utils", "_rebuild_parameter_with_state");
	b_op(&b, '(');
	p_tensor_v2(&b, "FloatStorage", "0", 3, 0, 1, &size, &stride);
	b_op(&b, 0x89); p_odict(&b); b_op(&b, '}');
	b_op(&b, 't'); b_op(&b, 'R');
	/* _rebuild_from_type_v2(_rebuild_tensor_v2, torch.Tensor, (args), {}) */
	p_global(&b, "torch._tensor", "_rebuild_from_type_v2");
	b_op(&b, '(');
	p_global(&b, "torch._utils", "_rebuild_tensor_v2");
	p_global(&b, "torch", "Tensor");
	p_tensor_args(&b, "torch", "BoolStorage", "1", 3, 0, 1, &size, &stride);
	b_op(&b, 0x88); p_odict(&b);
	b_op(&b, 't');
	b_op(&b, '}');
	b_op(&b, 't'); b_op(&b, 'R');
	b_op(&b, 't');
	b_op(&b, '.');
	if ((v = load_ok(&b, &l)) == NULL)
		return;
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 0))->requires_grad, 1);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 1))->requires_grad, 0);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 2))->dtype, MATE_BOOL);
	CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 2))->requires_grad, 1);
	CHECK_EQ_INT(l.calls, 2);
	mate_value_free(v);
	b_free(&b);
}

/* ---- hostile input ---- */

DEFINE_TEST(globals_rejected)
{
	static const char *bad[][2] = {
		{ "os", "system" }, { "builtins", "eval" }, { "posix", "system" },
		{ "__builtin__", "eval" }, { "subprocess", "Popen" }, { "nt", "system" },
		{ "builtins", "getattr" }, { "torch", "load" }, { "torch._utils", "_rebuild_qtensor" },
		{ "torch", "Tensor.__setstate__" }, { "torch", "QInt8Storage" },
	};
	struct buf b;
	char want[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		start(&b);
		p_global(&b, bad[i][0], bad[i][1]);
		p_str(&b, "echo pwned");
		b_op(&b, 0x85);
		b_op(&b, 'R');
		b_op(&b, '.');
		snprintf(want, sizeof(want), "global '%s %s' is not allowed", bad[i][0], bad[i][1]);
		expect_fail(&b, want, MATE_ERR_FORMAT);
	}
	/* torch 2.x dtypes mate has no tensor type for: unsupported, named. */
	start(&b);
	p_global(&b, "torch", "bits16");
	b_op(&b, '.');
	expect_fail(&b, "unsupported dtype torch.bits16", MATE_ERR_UNSUPPORTED);
	start(&b);
	p_global(&b, "torch", "bits8");
	b_op(&b, '.');
	expect_fail(&b, "unsupported dtype torch.bits8", MATE_ERR_UNSUPPORTED);
	/* Allowed globals that are not callable, and REDUCE of a non-global. */
	start(&b);
	p_global(&b, "torch", "Tensor"); b_op(&b, ')'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "global 'torch Tensor' cannot be called", 0);
	start(&b);
	p_global(&b, "torch", "FloatStorage"); b_op(&b, ')'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "cannot be called", 0);
	start(&b);
	p_str(&b, "x"); b_op(&b, ')'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "REDUCE of a str", 0);
	start(&b);
	p_global(&b, "torch", "Size"); b_op(&b, ')'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "bad arguments to 'torch Size'", 0);
	start(&b);
	p_global(&b, "_codecs", "encode"); p_str(&b, "x"); p_str(&b, "rot13"); b_op(&b, 0x86);
	b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "latin1", 0);
	start(&b);
	p_global(&b, "torch", "device"); b_op(&b, ')'); b_op(&b, 0x81); b_op(&b, '.');
	expect_fail(&b, "NEWOBJ of 'torch device' is not allowed", 0);
	/* A GLOBAL line that never ends, and one with a huge name. */
	start(&b);
	b_op(&b, 'c'); b_bytes(&b, "os", 2);
	expect_fail(&b, "unterminated", 0);
	start(&b);
	b_op(&b, 'c');
	for (int i = 0; i < 300; i++)
		b_op(&b, 'a');
	b_bytes(&b, "\nb\n.", 4);
	expect_fail(&b, "longer than", 0);
}

DEFINE_TEST(opcodes_rejected)
{
	static const unsigned char bad[] = { 'i', 'o', 0x93, 'P', 'I', 'L', 'F', 'S', 'V', 'd',
		'l', 0x82, 0x83, 0x84, 0x8b, 0x8d, 0x8e, 0x91, 0x92, 0x96, 0x97, 0x98, 'g', 'p', '0',
		'1', '2', 0x00, 0xff };
	struct buf b;
	char want[64];

	for (size_t i = 0; i < sizeof(bad); i++) {
		start(&b);
		b_op(&b, 'N');
		b_op(&b, bad[i]);
		b_bytes(&b, "x\n.", 3);
		snprintf(want, sizeof(want), "unsupported opcode 0x%02x", bad[i]);
		expect_fail(&b, want, MATE_ERR_FORMAT);
	}
	start(&b);
	b_op(&b, 'N'); b_op(&b, 'i'); b_op(&b, '.');
	expect_fail(&b, "(offset 3)", 0);
	memset(&b, 0, sizeof(b));
	b_op(&b, 0x80); b_op(&b, 6); b_op(&b, 'N'); b_op(&b, '.');
	expect_fail(&b, "pickle protocol 6", MATE_ERR_UNSUPPORTED);
}

DEFINE_TEST(malformed)
{
	struct buf b;

	start(&b);
	b_op(&b, 'a'); b_op(&b, '.');
	expect_fail(&b, "stack underflow", MATE_ERR_FORMAT);
	start(&b);
	b_op(&b, '}'); p_int(&b, 1); b_op(&b, 's'); b_op(&b, '.');
	expect_fail(&b, "stack underflow", 0);
	start(&b);
	p_int(&b, 1); b_op(&b, 't'); b_op(&b, '.');
	expect_fail(&b, "no MARK", 0);
	start(&b);
	b_op(&b, '.');
	expect_fail(&b, "stack underflow", 0);
	start(&b);
	b_op(&b, '('); b_op(&b, '.');
	expect_fail(&b, "stack underflow", 0);
	start(&b);
	b_op(&b, 'N');
	expect_fail(&b, "no STOP", 0);
	start(&b);
	b_op(&b, 'h'); b_op(&b, 3); b_op(&b, '.');
	expect_fail(&b, "memo key 3 is not defined", 0);
	start(&b);
	b_op(&b, 'q'); b_op(&b, 3); b_op(&b, '.');
	expect_fail(&b, "stack underflow", 0);
	start(&b);
	b_op(&b, 'N'); b_op(&b, 'r'); b_le(&b, 0xfffffff0u, 4); b_op(&b, '.');
	expect_fail(&b, "memo key 4294967280 is out of range", 0);
	start(&b);
	b_op(&b, 'X'); b_le(&b, 0xffffffffu, 4); b_bytes(&b, "abc.", 4);
	expect_fail(&b, "truncated", 0);
	start(&b);
	b_op(&b, 'X'); b_le(&b, 2, 4); b_bytes(&b, "\xc3\x28", 2); b_op(&b, '.');
	expect_fail(&b, "not valid UTF-8", 0);
	start(&b);
	b_op(&b, 0x8a); b_op(&b, 9); b_le(&b, 0, 8); b_op(&b, 1); b_op(&b, '.');
	expect_fail(&b, "does not fit in 64 bits", MATE_ERR_UNSUPPORTED);
	start(&b);
	b_op(&b, 0x95); b_le(&b, 1000, 8); b_op(&b, 'N'); b_op(&b, '.');
	expect_fail(&b, "FRAME longer", 0);
	start(&b);
	b_op(&b, '}'); b_op(&b, '('); p_int(&b, 1); b_op(&b, 'u'); b_op(&b, '.');
	expect_fail(&b, "odd number", 0);
	start(&b);
	b_op(&b, '}'); b_op(&b, ']'); p_int(&b, 1); b_op(&b, 's'); b_op(&b, '.');
	expect_fail(&b, "unhashable", 0);
	start(&b);
	b_op(&b, ']'); b_op(&b, '}'); b_op(&b, 'b'); b_op(&b, '.');
	expect_fail(&b, "BUILD of a list", 0);
	start(&b);
	p_odict(&b); p_int(&b, 1); b_op(&b, 'b'); b_op(&b, '.');
	expect_fail(&b, "BUILD state is a int", 0);
	start(&b);
	p_int(&b, 1); p_int(&b, 2); b_op(&b, 'a'); b_op(&b, '.');
	expect_fail(&b, "APPEND on a int", 0);
	/* MARK fences: an APPEND cannot reach below the open MARK. */
	start(&b);
	b_op(&b, ']'); b_op(&b, '('); p_int(&b, 1); b_op(&b, 'a'); b_op(&b, '.');
	expect_fail(&b, "stack underflow", 0);
	start(&b);
	b_op(&b, 0); b_free(&b);
	{
		mate_error err;
		mate_value *v = mate_pickle_load(NULL, 0, NULL, NULL, &err);
		CHECK(v == NULL);
		CHECK_CONTAINS(err.message, "no STOP");
	}
}

static void
persid(struct buf *b, const char *tag, const char *cls, const char *key, int64_t numel)
{
	b_op(b, '(');
	p_str(b, tag);
	p_global(b, "torch", cls);
	p_str(b, key);
	p_str(b, "cpu");
	p_int(b, numel);
	b_op(b, 't');
	b_op(b, 'Q');
}

static void
bad_tensor(int64_t numel, int64_t offset, int ndim, const int64_t *size, int nstride,
    const int64_t *stride, const char *want)
{
	struct buf b;

	start(&b);
	p_global(&b, "torch._utils", "_rebuild_tensor_v2");
	b_op(&b, '(');
	p_storage(&b, "torch", "FloatStorage", "0", numel);
	p_int(&b, offset);
	p_ints(&b, ndim, size);
	p_ints(&b, nstride, stride);
	b_op(&b, 0x89);
	p_odict(&b);
	b_op(&b, 't');
	b_op(&b, 'R');
	b_op(&b, '.');
	expect_fail(&b, want, 0);
}

DEFINE_TEST(bad_tensors)
{
	int64_t s23[2] = { 2, 3 }, st31[2] = { 3, 1 }, s24[2] = { 2, 4 }, st41[2] = { 4, 1 };
	int64_t neg[2] = { -1, 1 }, huge[2] = { INT64_MAX / 2, 4 }, big[2] = { 1LL << 40, 1LL << 40 };
	int64_t zero[2] = { 0, 0 }, dims[40];
	struct buf b;

	for (int i = 0; i < 40; i++)
		dims[i] = 1;
	bad_tensor(6, 0, 2, s24, 2, st41, "needs 32 bytes of its storage, which has 24");
	bad_tensor(6, 1, 2, s23, 2, st31, "needs 28 bytes");
	bad_tensor(6, 0, 2, s23, 1, st31, "size has 2 dimensions but stride has 1");
	bad_tensor(6, -1, 2, s23, 2, st31, "storage offset is negative");
	bad_tensor(6, 0, 2, s23, 2, neg, "stride is negative");
	bad_tensor(6, 0, 2, neg, 2, st31, "size is negative");
	bad_tensor(-6, 0, 2, s23, 2, st31, "storage size is negative");
	bad_tensor(INT64_MAX / 2, 0, 2, s23, 2, st31, "storage size overflows");
	bad_tensor(6, 0, 2, huge, 2, st31, "invalid tensor shape");
	bad_tensor(6, 0, 2, s23, 2, huge, "view overflows");
	bad_tensor(6, 0, 2, big, 2, zero, "invalid tensor shape");
	bad_tensor(6, 0, 40, dims, 40, dims, "40 dimensions (at most 32)");
	bad_tensor(6, INT64_MAX, 2, s23, 2, st31, "view overflows");

	/* requires_grad must be a bool; storage must come from BINPERSID. */
	start(&b);
	p_global(&b, "torch._utils", "_rebuild_tensor_v2");
	p_tensor_args(&b, "torch", "FloatStorage", "0", 6, 0, 2, s23, st31);
	p_int(&b, 1); p_odict(&b);
	b_op(&b, 't'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "requires_grad is a int", 0);
	start(&b);
	p_global(&b, "torch._utils", "_rebuild_tensor_v2");
	b_op(&b, '(');
	p_str(&b, "0");
	p_int(&b, 0); p_ints(&b, 2, s23); p_ints(&b, 2, st31);
	b_op(&b, 0x89); p_odict(&b);
	b_op(&b, 't'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "tensor storage is a str", 0);
	start(&b);
	p_global(&b, "torch._utils", "_rebuild_tensor_v2");
	b_op(&b, '('); b_op(&b, 't'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "takes 6 or 7 arguments, not 0", 0);
	/* v2 with an untyped storage. */
	start(&b);
	p_global(&b, "torch._utils", "_rebuild_tensor_v2");
	p_tensor_args(&b, "torch.storage", "UntypedStorage", "0", 24, 0, 2, s23, st31);
	b_op(&b, 0x89); p_odict(&b);
	b_op(&b, 't'); b_op(&b, 'R'); b_op(&b, '.');
	expect_fail(&b, "UntypedStorage needs _rebuild_tensor_v3", 0);

	/* Persistent ids. */
	start(&b);
	persid(&b, "module", "FloatStorage", "0", 1); b_op(&b, '.');
	expect_fail(&b, "not a 'storage'", 0);
	start(&b);
	p_str(&b, "storage"); b_op(&b, 0x85); b_op(&b, 'Q'); b_op(&b, '.');
	expect_fail(&b, "not a 5-tuple", 0);
	start(&b);
	persid(&b, "storage", "Size", "0", 1); b_op(&b, '.');
	expect_fail(&b, "storage class is a global", 0);
	start(&b);
	persid(&b, "storage", "FloatStorage", "", 1); b_op(&b, '.');
	expect_fail(&b, "key or location is not a string", 0);
	start(&b);
	b_op(&b, '('); p_str(&b, "storage"); p_global(&b, "torch", "FloatStorage");
	b_op(&b, 'X'); b_le(&b, 3, 4); b_bytes(&b, "a\0b", 3);
	p_str(&b, "cpu"); p_int(&b, 1); b_op(&b, 't'); b_op(&b, 'Q'); b_op(&b, '.');
	expect_fail(&b, "storage key contains a NUL byte", 0);
	start(&b);
	b_op(&b, '(');
	persid(&b, "storage", "FloatStorage", "0", 4);
	persid(&b, "storage", "FloatStorage", "0", 5);
	b_op(&b, 't'); b_op(&b, '.');
	expect_fail(&b, "storage '0' is declared with 16 and 20 bytes", 0);
	/* The same key with another class but the same byte size is one storage. */
	{
		struct loads l = { 0 };
		mate_value *v;

		start(&b);
		b_op(&b, '(');
		persid(&b, "storage", "FloatStorage", "k", 4);
		persid(&b, "storage", "IntStorage", "k", 4);
		persid(&b, "storage", "ByteStorage", "k", 16);
		b_op(&b, 't'); b_op(&b, '.');
		v = load_ok(&b, &l);
		CHECK_EQ_INT(l.calls, 1);
		CHECK_STR(l.last_key, "k");
		/* A bare storage comes back as a 1-D tensor over it. */
		CHECK_EQ_INT(mate_value_get_tensor(mate_value_item(v, 2))->shape[0], 16);
		CHECK(mate_value_get_storage(mate_value_item(v, 0)) == mate_value_get_storage(mate_value_item(v, 2)));
		mate_value_free(v);
		b_free(&b);
	}
	/* A loader that fails: its message comes through. */
	{
		mate_error err;
		struct loads l = { 0 };
		mate_value *v;

		l.fail = 1;
		start(&b);
		persid(&b, "storage", "FloatStorage", "7", 4); b_op(&b, '.');
		v = load(&b, &l, &err);
		CHECK(v == NULL);
		CHECK_CONTAINS(err.message, "loader refused 7");
		CHECK_EQ_INT(err.code, MATE_ERR_IO);
		b_free(&b);
	}
}

/* Deep nesting, cycles and exponential sharing fail cleanly. */
DEFINE_TEST(limits)
{
	struct buf b;

	start(&b);
	for (int i = 0; i < 100000; i++)
		b_op(&b, '(');
	b_op(&b, '.');
	expect_fail(&b, "nested MARKs", MATE_ERR_LIMIT);
	start(&b);
	for (int i = 0; i < 100000; i++)
		b_op(&b, '(');
	for (int i = 0; i < 100000; i++)
		b_op(&b, 't');
	b_op(&b, '.');
	expect_fail(&b, "nested MARKs", MATE_ERR_LIMIT);
	start(&b);
	b_op(&b, ')');
	for (int i = 0; i < 100000; i++)
		b_op(&b, 0x85);
	b_op(&b, '.');
	expect_fail(&b, "nested deeper than", MATE_ERR_LIMIT);
	start(&b);
	for (int i = 0; i < 100000; i++)
		b_op(&b, ']');
	for (int i = 0; i < 99999; i++)
		b_op(&b, 'a');
	b_op(&b, '.');
	expect_fail(&b, "nested deeper than", MATE_ERR_LIMIT);
	/* l = []; l.append(l) */
	start(&b);
	b_op(&b, ']'); b_op(&b, 'q'); b_op(&b, 0); b_op(&b, 'h'); b_op(&b, 0); b_op(&b, 'a'); b_op(&b, '.');
	expect_fail(&b, "or a cycle", MATE_ERR_LIMIT);
	/* x0 = [s]; x(i+1) = [xi, xi]: 2^60 copies on conversion. */
	start(&b);
	p_str(&b, "0123456789abcdef0123456789abcdef");
	b_op(&b, 0x85);
	for (int i = 0; i < 60; i++) {
		b_op(&b, 'q'); b_op(&b, 0); b_op(&b, 'h'); b_op(&b, 0); b_op(&b, 0x86);
	}
	b_op(&b, '.');
	expect_fail(&b, "memory limit", MATE_ERR_LIMIT);
	/* A big but honest list is fine. */
	{
		mate_value *v;

		start(&b);
		b_op(&b, ']');
		for (int k = 0; k < 200; k++) {
			b_op(&b, '(');
			for (int i = 0; i < 1000; i++)
				p_int(&b, i);
			b_op(&b, 'e');
		}
		b_op(&b, '.');
		v = load_ok(&b, NULL);
		CHECK_EQ_INT(mate_value_len(v), 200000);
		mate_value_free(v);
		b_free(&b);
	}
}

/* Every prefix of a valid pickle fails cleanly. */
DEFINE_TEST(truncation)
{
	struct buf b;
	int64_t size[2] = { 2, 3 }, stride[2] = { 3, 1 };
	mate_error err;
	struct loads l = { 0 };
	mate_value *v;
	int fails = 0;

	start(&b);
	b_op(&b, '}');
	p_str(&b, "w");
	p_tensor_v2(&b, "FloatStorage", "0", 6, 0, 2, size, stride);
	b_op(&b, 's');
	b_op(&b, '.');
	for (size_t n = 0; n < b.n; n++) {
		mate_error_clear(&err);
		v = mate_pickle_load(b.p, n, loader, &l, &err);
		fails += v == NULL && err.code != MATE_OK;
		mate_value_free(v);
	}
	CHECK_EQ_INT(fails, (long long)b.n);
	v = mate_pickle_load(b.p, b.n, loader, &l, &err);
	CHECK(v != NULL);
	mate_value_free(v);
	b_free(&b);
}

TEST_MAIN()
