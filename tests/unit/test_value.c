/* test_value.c: storages and the value tree: constructors, getters, dicts, deep copy and freeing. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mate_core.h"
#include "test.h"

DEFINE_TEST(storage)
{
	mate_error err;
	mate_storage *s = mate_storage_new(100, &err);
	unsigned char *p;
	int zero = 1;

	CHECK(s != NULL);
	CHECK_EQ_INT(mate_storage_size(s), 100);
	p = mate_storage_data(s);
	CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
	for (int i = 0; i < 100; i++)
		zero &= p[i] == 0;
	CHECK(zero);
	memset(p, 1, 100); /* writable */
	CHECK(mate_storage_ref(s) == s);
	mate_storage_unref(s);
	CHECK(mate_storage_data(s) == p); /* still alive: one reference left */
	mate_storage_unref(s);

	s = mate_storage_new(0, &err);
	CHECK(s != NULL && mate_storage_size(s) == 0 && mate_storage_data(s) != NULL);
	mate_storage_unref(s);

	mate_error_clear(&err);
	s = mate_storage_new(SIZE_MAX - 10, &err);
	CHECK(s == NULL);
	CHECK_EQ_INT(err.code, MATE_ERR_NOMEM);
	CHECK_CONTAINS(err.message, "storage");

	/* wrap borrows: unref must not free the caller's memory (ASan would see a double free) */
	char *mine = malloc(32);
	s = mate_storage_wrap(mine, 32, NULL);
	CHECK(mate_storage_data(s) == mine && mate_storage_size(s) == 32);
	mate_storage_unref(s);
	mine[0] = 'x';
	free(mine);

	mate_storage_unref(NULL);
	CHECK(mate_storage_ref(NULL) == NULL);
	CHECK(mate_storage_data(NULL) == NULL);
	CHECK_EQ_INT(mate_storage_size(NULL), 0);
}

DEFINE_TEST(scalars)
{
	mate_value *v;
	size_t len;

	v = mate_value_none();
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_NONE);
	CHECK_EQ_INT(mate_value_len(v), 0);
	CHECK(mate_value_get_str(v, NULL) == NULL);
	mate_value_free(v);

	v = mate_value_bool(5);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_BOOL);
	CHECK_EQ_INT(mate_value_get_bool(v), 1);
	CHECK_EQ_INT(mate_value_get_int(v), 1);
	CHECK(mate_value_get_float(v) == 1.0);
	mate_value_free(v);
	v = mate_value_bool(0);
	CHECK_EQ_INT(mate_value_get_bool(v), 0);
	mate_value_free(v);

	v = mate_value_int(INT64_MIN);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_INT);
	CHECK(mate_value_get_int(v) == INT64_MIN);
	CHECK_EQ_INT(mate_value_get_bool(v), 1);
	CHECK(mate_value_get_float(v) == -9223372036854775808.0);
	mate_value_free(v);
	v = mate_value_int(INT64_MAX);
	CHECK(mate_value_get_int(v) == INT64_MAX);
	mate_value_free(v);

	v = mate_value_float(-2.75);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_FLOAT);
	CHECK(mate_value_get_float(v) == -2.75);
	CHECK_EQ_INT(mate_value_get_int(v), -2);
	mate_value_free(v);
	/* out-of-range floats saturate to an int rather than being UB */
	v = mate_value_float(1e300);
	CHECK(mate_value_get_int(v) == INT64_MAX);
	mate_value_free(v);
	v = mate_value_float(-INFINITY);
	CHECK(mate_value_get_int(v) == INT64_MIN);
	mate_value_free(v);
	v = mate_value_float(NAN);
	CHECK(isnan(mate_value_get_float(v)));
	CHECK_EQ_INT(mate_value_get_int(v), 0);
	mate_value_free(v);

	v = mate_value_str("hello", (size_t)-1);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_STR);
	CHECK_STR(mate_value_get_str(v, &len), "hello");
	CHECK_EQ_INT(len, 5);
	CHECK_EQ_INT(mate_value_get_int(v), 0);
	mate_value_free(v);
	v = mate_value_str("a\0b", 3); /* embedded NUL, explicit length */
	const char *s = mate_value_get_str(v, &len);
	CHECK(len == 3 && memcmp(s, "a\0b", 4) == 0);
	mate_value_free(v);
	v = mate_value_str("abcdef", 2);
	CHECK_STR(mate_value_get_str(v, NULL), "ab");
	mate_value_free(v);
	v = mate_value_str(NULL, (size_t)-1);
	CHECK_STR(mate_value_get_str(v, &len), "");
	CHECK_EQ_INT(len, 0);
	mate_value_free(v);

	unsigned char raw[4] = { 0, 0xff, 0x80, 0 };
	v = mate_value_bytes(raw, 4);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_BYTES);
	s = mate_value_get_str(v, &len);
	CHECK(len == 4 && memcmp(s, raw, 4) == 0 && s[4] == '\0');
	mate_value_free(v);
	v = mate_value_bytes(NULL, 0);
	CHECK(mate_value_get_str(v, &len) != NULL && len == 0);
	mate_value_free(v);

	v = mate_value_dtype(MATE_BF16);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_DTYPE);
	CHECK_EQ_INT(mate_value_get_dtype(v), MATE_BF16);
	mate_value_free(v);

	v = mate_value_enum("Mode.FAST", 3);
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_ENUM);
	CHECK_STR(mate_value_enum_name(v), "Mode.FAST");
	CHECK_EQ_INT(mate_value_get_int(v), 3);
	CHECK(mate_value_object_type(v) == NULL);
	mate_value_free(v);

	v = mate_value_object("torch.device", "device(type='cpu')");
	CHECK_EQ_INT(mate_value_kind_of(v), MATE_V_OBJECT);
	CHECK_STR(mate_value_object_type(v), "torch.device");
	CHECK_STR(mate_value_object_repr(v), "device(type='cpu')");
	CHECK(mate_value_enum_name(v) == NULL);
	mate_value_free(v);
	v = mate_value_object("X", NULL);
	CHECK_STR(mate_value_object_repr(v), "");
	mate_value_free(v);

	/* getters on NULL */
	CHECK_EQ_INT(mate_value_kind_of(NULL), MATE_V_NONE);
	CHECK_EQ_INT(mate_value_get_bool(NULL), 0);
	CHECK_EQ_INT(mate_value_get_int(NULL), 0);
	CHECK(mate_value_get_float(NULL) == 0);
	CHECK(mate_value_get_str(NULL, &len) == NULL);
	CHECK(mate_value_get_tensor(NULL) == NULL);
	CHECK(mate_value_get_storage(NULL) == NULL);
	CHECK_EQ_INT(mate_value_get_dtype(NULL), MATE_DTYPE_INVALID);
	CHECK_EQ_INT(mate_value_is_ordered(NULL), 0);
	CHECK(mate_value_item(NULL, 0) == NULL);
	CHECK(mate_value_key(NULL, 0) == NULL);
	CHECK(mate_value_lookup(NULL, "a") == NULL);
	mate_value_free(NULL);
}

DEFINE_TEST(sequences)
{
	mate_value *l = mate_value_list(), *t = mate_value_tuple(), *n = mate_value_int(1);

	CHECK_EQ_INT(mate_value_kind_of(l), MATE_V_LIST);
	CHECK_EQ_INT(mate_value_kind_of(t), MATE_V_TUPLE);
	for (int i = 0; i < 100; i++)
		CHECK_EQ_INT(mate_value_append(l, mate_value_int(i * 3)), MATE_OK);
	CHECK_EQ_INT(mate_value_len(l), 100);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(l, 0)), 0);
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(l, 99)), 297);
	CHECK(mate_value_item(l, 100) == NULL);
	CHECK(mate_value_key(l, 0) == NULL);
	CHECK(mate_value_lookup(l, "0") == NULL);
	CHECK_EQ_INT(mate_value_is_ordered(l), 0);
	CHECK_EQ_INT(mate_value_append(t, mate_value_str("x", 1)), MATE_OK);
	CHECK_EQ_INT(mate_value_len(t), 1);
	CHECK_EQ_INT(mate_value_len(n), 0);
	CHECK(mate_value_item(n, 0) == NULL);

	/* append to a non-sequence or of NULL fails, and the item is freed (LSan) */
	CHECK_EQ_INT(mate_value_append(n, mate_value_str("lost", 4)), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_append(NULL, mate_value_str("lost", 4)), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_append(t, NULL), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_len(t), 1);
	mate_value_free(l);
	mate_value_free(t);
	mate_value_free(n);
}

DEFINE_TEST(dict_basics)
{
	mate_value *d = mate_value_dict(), *o = mate_value_ordered_dict(), *n = mate_value_none();

	CHECK_EQ_INT(mate_value_kind_of(d), MATE_V_DICT);
	CHECK_EQ_INT(mate_value_is_ordered(d), 0);
	CHECK_EQ_INT(mate_value_kind_of(o), MATE_V_DICT);
	CHECK_EQ_INT(mate_value_is_ordered(o), 1);

	CHECK_EQ_INT(mate_value_set_str(d, "a", mate_value_int(1)), MATE_OK);
	CHECK_EQ_INT(mate_value_set_str(d, "b", mate_value_int(2)), MATE_OK);
	CHECK_EQ_INT(mate_value_set_str(d, "a", mate_value_int(3)), MATE_OK);
	CHECK_EQ_INT(mate_value_len(d), 2);
	CHECK_STR(mate_value_get_str(mate_value_key(d, 0), NULL), "a");
	CHECK_STR(mate_value_get_str(mate_value_key(d, 1), NULL), "b");
	CHECK_EQ_INT(mate_value_get_int(mate_value_item(d, 0)), 3);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(d, "a")), 3);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(d, "b")), 2);
	CHECK(mate_value_lookup(d, "c") == NULL);
	CHECK(mate_value_lookup(d, "") == NULL);
	CHECK(mate_value_lookup(d, NULL) == NULL);
	CHECK(mate_value_key(d, 2) == NULL);

	/* keys with embedded NULs and prefixes are distinct */
	CHECK_EQ_INT(mate_value_set(d, mate_value_str("a\0z", 3), mate_value_int(4)), MATE_OK);
	CHECK_EQ_INT(mate_value_set_str(d, "", mate_value_int(5)), MATE_OK);
	CHECK_EQ_INT(mate_value_len(d), 4);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(d, "a")), 3);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(d, "")), 5);

	/* non-string keys are kept as they come (no dedup), and not found by lookup */
	CHECK_EQ_INT(mate_value_set(o, mate_value_int(1), mate_value_str("x", 1)), MATE_OK);
	CHECK_EQ_INT(mate_value_set(o, mate_value_int(1), mate_value_str("y", 1)), MATE_OK);
	CHECK_EQ_INT(mate_value_len(o), 2);
	CHECK(mate_value_lookup(o, "1") == NULL);

	/* failures free what they were given (LSan) */
	CHECK_EQ_INT(mate_value_set(n, mate_value_str("k", 1), mate_value_int(1)), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_set(NULL, mate_value_str("k", 1), mate_value_int(1)),
	    MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_set(d, NULL, mate_value_int(1)), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_set(d, mate_value_str("k", 1), NULL), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_set_str(n, "k", mate_value_int(1)), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_append(d, mate_value_int(1)), MATE_ERR_ARGUMENT);
	CHECK_EQ_INT(mate_value_len(d), 4);
	mate_value_free(d);
	mate_value_free(o);
	mate_value_free(n);
}

DEFINE_TEST(dict_big)
{
	enum { N = 10000 };
	mate_value *d = mate_value_dict();
	char key[32];
	int bad = 0;

	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "layers.%d.weight", i);
		bad += mate_value_set_str(d, key, mate_value_int(i)) != MATE_OK;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(mate_value_len(d), N);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "layers.%d.weight", i);
		const mate_value *v = mate_value_lookup(d, key);
		bad += v == NULL || mate_value_get_int(v) != i;
		bad += strcmp(mate_value_get_str(mate_value_key(d, (size_t)i), NULL), key) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(mate_value_lookup(d, "layers.10000.weight") == NULL);
	CHECK(mate_value_lookup(d, "layers.1.weigh") == NULL);

	/* replace every value, in reverse: length and key order stay */
	for (int i = N - 1; i >= 0; i--) {
		snprintf(key, sizeof(key), "layers.%d.weight", i);
		bad += mate_value_set_str(d, key, mate_value_int(-i)) != MATE_OK;
	}
	CHECK_EQ_INT(mate_value_len(d), N);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "layers.%d.weight", i);
		bad += mate_value_get_int(mate_value_lookup(d, key)) != -i;
		bad += mate_value_get_int(mate_value_item(d, (size_t)i)) != -i;
		bad += strcmp(mate_value_get_str(mate_value_key(d, (size_t)i), NULL), key) != 0;
	}
	CHECK_EQ_INT(bad, 0);

	/* a copy has its own index that works the same */
	mate_value *c = mate_value_copy(d);
	CHECK_EQ_INT(mate_value_len(c), N);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(c, "layers.4321.weight")), -4321);
	CHECK_EQ_INT(mate_value_set_str(c, "layers.4321.weight", mate_value_int(7)), MATE_OK);
	CHECK_EQ_INT(mate_value_len(c), N);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(c, "layers.4321.weight")), 7);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(d, "layers.4321.weight")), -4321);
	mate_value_free(c);
	mate_value_free(d);

	/* growing through the point where the index is built (8 keys) keeps replace right */
	d = mate_value_dict();
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 20; i++) {
			snprintf(key, sizeof(key), "k%d", i);
			mate_value_set_str(d, key, mate_value_int(round * 100 + i));
			CHECK_EQ_INT(mate_value_len(d), round ? 20 : i + 1);
		}
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(d, "k7")), 107);
	CHECK_EQ_INT(mate_value_get_int(mate_value_lookup(d, "k8")), 108);
	mate_value_free(d);
}

/* Structural equality; tensors compare by storage identity and view. */
static int
equal(const mate_value *a, const mate_value *b)
{
	int r;

	if (mate_value_kind_of(a) != mate_value_kind_of(b) ||
	    mate_value_is_ordered(a) != mate_value_is_ordered(b))
		return 0;
	if ((r = test_same_scalar(a, b)) >= 0)
		return r;
	switch (mate_value_kind_of(a)) {
	case MATE_V_ENUM:
		return strcmp(mate_value_enum_name(a), mate_value_enum_name(b)) == 0 &&
		    mate_value_get_int(a) == mate_value_get_int(b);
	case MATE_V_OBJECT:
		return strcmp(mate_value_object_type(a), mate_value_object_type(b)) == 0 &&
		    strcmp(mate_value_object_repr(a), mate_value_object_repr(b)) == 0;
	case MATE_V_TENSOR:
		return mate_value_get_storage(a) == mate_value_get_storage(b) &&
		    memcmp(mate_value_get_tensor(a), mate_value_get_tensor(b), sizeof(mate_tensor)) == 0;
	case MATE_V_LIST:
	case MATE_V_TUPLE:
	case MATE_V_DICT:
		if (mate_value_len(a) != mate_value_len(b))
			return 0;
		for (size_t i = 0; i < mate_value_len(a); i++) {
			if (!equal(mate_value_item(a, i), mate_value_item(b, i)))
				return 0;
			if (mate_value_kind_of(a) == MATE_V_DICT &&
			    !equal(mate_value_key(a, i), mate_value_key(b, i)))
				return 0;
			if (mate_value_item(a, i) == mate_value_item(b, i))
				return 0; /* a deep copy shares no nodes */
		}
		return 1;
	default:
		return 1;
	}
}

static mate_value *
tensor_value(mate_storage *st, int64_t rows, int64_t cols)
{
	mate_tensor t;
	int64_t shape[] = { rows, cols };

	mate_tensor_init(&t, MATE_F32, 2, shape, NULL, NULL);
	return mate_value_tensor(&t, st);
}

DEFINE_TEST(tensor_and_copy)
{
	mate_storage *st = mate_storage_new(6 * sizeof(float), NULL);
	float *data = mate_storage_data(st);
	mate_value *root = mate_value_list(), *inner = mate_value_ordered_dict();
	mate_value *tup = mate_value_tuple(), *tv, *copy;
	const mate_tensor *t;

	for (int i = 0; i < 6; i++)
		data[i] = (float)i;
	tv = tensor_value(st, 2, 3);
	t = mate_value_get_tensor(tv);
	CHECK_EQ_INT(mate_value_kind_of(tv), MATE_V_TENSOR);
	CHECK(t != NULL && t->data == data && t->shape[1] == 3);
	CHECK(mate_value_get_storage(tv) == st);
	CHECK(mate_value_get_tensor(root) == NULL);

	mate_value_append(tup, mate_value_int(1));
	mate_value_append(tup, mate_value_none());
	mate_value_append(tup, tensor_value(st, 3, 2)); /* a second view of the same storage */
	mate_value_set_str(inner, "w", tv);
	mate_value_set_str(inner, "t", tup);
	mate_value_set_str(inner, "bytes", mate_value_bytes("\0\1\2", 3));
	mate_value_set(inner, mate_value_int(42), mate_value_float(0.5));
	mate_value_append(root, inner);
	mate_value_append(root, mate_value_str("s", 1));
	mate_value_append(root, mate_value_bool(1));
	mate_value_append(root, mate_value_dtype(MATE_F8_E5M2));
	mate_value_append(root, mate_value_enum("E.A", -1));
	mate_value_append(root, mate_value_object("T", "r"));
	mate_value_append(root, mate_value_dict());
	mate_value_append(root, mate_value_list());

	copy = mate_value_copy(root);
	CHECK(copy != NULL && copy != root);
	CHECK(equal(root, copy));
	/* storages are shared, not copied */
	const mate_value *cw = mate_value_lookup(mate_value_item(copy, 0), "w");
	CHECK(mate_value_get_storage(cw) == st);
	CHECK(mate_value_get_tensor(cw)->data == data);
	CHECK(mate_value_is_ordered(mate_value_item(copy, 0)));
	CHECK(!mate_value_is_ordered(mate_value_item(copy, 6)));
	/* the copy is independent */
	mate_value_append(copy, mate_value_none());
	mate_value_set_str(mate_value_item(copy, 0), "w", mate_value_none());
	CHECK_EQ_INT(mate_value_len(root), 8);
	CHECK_EQ_INT(mate_value_kind_of(mate_value_lookup(mate_value_item(root, 0), "w")),
	    MATE_V_TENSOR);
	CHECK(mate_value_copy(NULL) == NULL);

	/* refcounts: st has the caller's ref plus two views in root and one left in
	 * the copy. Free both trees and the storage must still be alive (ASan
	 * catches a use after free); the last unref frees it (LSan catches a leak). */
	mate_value_free(root);
	mate_value_free(copy);
	CHECK(mate_storage_size(st) == 24 && data[5] == 5.0f);
	mate_storage_unref(st);

	/* a tensor with no storage keeps its own data pointer */
	float local[2];
	mate_tensor lt;
	int64_t two = 2;
	mate_tensor_init(&lt, MATE_F32, 1, &two, NULL, local);
	tv = mate_value_tensor(&lt, NULL);
	CHECK(mate_value_get_tensor(tv)->data == local);
	CHECK(mate_value_get_storage(tv) == NULL);
	copy = mate_value_copy(tv);
	CHECK(mate_value_get_tensor(copy)->data == local);
	mate_value_free(copy);
	mate_value_free(tv);
}

/* Deep nesting of every container kind; freeing must release all of it (LSan). */
DEFINE_TEST(free_nested)
{
	mate_value *top = mate_value_list(), *cur = top;

	for (int depth = 0; depth < 500; depth++) {
		mate_value *d = mate_value_dict(), *l = mate_value_tuple();
		mate_storage *st = mate_storage_new(16, NULL);
		mate_tensor t;
		int64_t four = 4;

		mate_tensor_init(&t, MATE_F32, 1, &four, NULL, NULL);
		mate_value_append(cur, d);
		mate_value_set_str(d, "str", mate_value_str("payload", (size_t)-1));
		mate_value_set_str(d, "obj", mate_value_object("T", "repr"));
		mate_value_set_str(d, "enum", mate_value_enum("E.X", 1));
		mate_value_set_str(d, "tensor", mate_value_tensor(&t, st));
		mate_storage_unref(st); /* the tree holds the only reference now */
		mate_value_set(d, mate_value_bytes("k", 1), mate_value_bytes("v", 1));
		mate_value_set_str(d, "next", l);
		cur = l;
	}
	mate_value *copy = mate_value_copy(top);
	CHECK(equal(top, copy));
	mate_value_free(top);
	mate_value_free(copy);
}

TEST_MAIN()
