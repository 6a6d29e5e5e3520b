/* mate_dump.h: libmate's public API for tools: values, tensor files (.pt, safetensors) and dumps. */
#ifndef MATE_DUMP_H_INCLUDED
#define MATE_DUMP_H_INCLUDED

#include <stdint.h>
#include <stdio.h>
#include "mate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Storages ----------------------------------------------------------
 * A reference-counted byte buffer that tensors view. Tensors that share a
 * storage object are written once to a .pt file. */
typedef struct mate_storage mate_storage;

/*! mate_storage_new() : nbytes of zeroed, 64-byte aligned memory, refcount 1. */
mate_storage *mate_storage_new(size_t nbytes, mate_error *err);
/*! mate_storage_wrap() : borrows caller memory (not copied, not freed): it
 * must outlive every reference. refcount 1. */
mate_storage *mate_storage_wrap(void *data, size_t nbytes, mate_error *err);
mate_storage *mate_storage_ref(mate_storage *s);
/*! mate_storage_unref() : drops one reference; frees at zero. NULL ok. */
void mate_storage_unref(mate_storage *s);
void *mate_storage_data(const mate_storage *s);
size_t mate_storage_size(const mate_storage *s);

/* ---- Values ------------------------------------------------------------
 * A tree of Python-like values: what a .pt file's pickle holds, what a
 * recorded call's arguments are. Containers own their children; getters
 * borrow (valid while the parent lives). */
typedef enum mate_value_kind {
	MATE_V_NONE,
	MATE_V_BOOL,
	MATE_V_INT,
	MATE_V_FLOAT,
	MATE_V_STR,
	MATE_V_BYTES,
	MATE_V_LIST,
	MATE_V_TUPLE,
	MATE_V_DICT,    /* ordered; keys are values (usually strings) */
	MATE_V_TENSOR,
	MATE_V_DTYPE,   /* a torch.dtype */
	MATE_V_ENUM,    /* name ("Mode.FAST") and integer value */
	MATE_V_OBJECT   /* anything else: a type name and a repr */
} mate_value_kind;

typedef struct mate_value mate_value;

mate_value *mate_value_none(void);
mate_value *mate_value_bool(int b);
mate_value *mate_value_int(int64_t i);
mate_value *mate_value_float(double d);
/*! mate_value_str() : copies len bytes of UTF-8 (len (size_t)-1: strlen). */
mate_value *mate_value_str(const char *s, size_t len);
mate_value *mate_value_bytes(const void *p, size_t len);
mate_value *mate_value_list(void);
mate_value *mate_value_tuple(void);
mate_value *mate_value_dict(void);
/*! mate_value_ordered_dict() : a dict that pickles as collections.OrderedDict. */
mate_value *mate_value_ordered_dict(void);
/*! mate_value_tensor() : a tensor viewing storage st (takes a new reference
 * to st; t->data is set to the storage's data). */
mate_value *mate_value_tensor(const mate_tensor *t, mate_storage *st);
mate_value *mate_value_dtype(mate_dtype dt);
mate_value *mate_value_enum(const char *name, int64_t v);
mate_value *mate_value_object(const char *type, const char *repr);
/*! mate_value_free() : frees v and its children. NULL ok. */
void mate_value_free(mate_value *v);
/*! mate_value_copy() : deep copy of the tree (tensor storages are shared). */
mate_value *mate_value_copy(const mate_value *v);

/*! mate_value_append() : adds item (ownership moves) to a list or tuple.
 * @return MATE_OK or MATE_ERR_ARGUMENT (item is then freed). */
int mate_value_append(mate_value *seq, mate_value *item);
/*! mate_value_set() : dict[key] = item, replacing an equal string key.
 * Ownership of key and item moves into the dict. */
int mate_value_set(mate_value *dict, mate_value *key, mate_value *item);
/*! mate_value_set_str() : mate_value_set() with a string key (copied). */
int mate_value_set_str(mate_value *dict, const char *key, mate_value *item);

mate_value_kind mate_value_kind_of(const mate_value *v);
int mate_value_is_ordered(const mate_value *v);
int mate_value_get_bool(const mate_value *v);
int64_t mate_value_get_int(const mate_value *v);
double mate_value_get_float(const mate_value *v);
/*! mate_value_get_str() : the string (NUL-terminated) or bytes; len may be NULL. */
const char *mate_value_get_str(const mate_value *v, size_t *len);
/*! mate_value_len() : items of a list, tuple or dict; 0 otherwise. */
size_t mate_value_len(const mate_value *v);
/*! mate_value_item() : i-th item of a list/tuple, or i-th value of a dict. */
mate_value *mate_value_item(const mate_value *v, size_t i);
/*! mate_value_key() : i-th key of a dict. */
mate_value *mate_value_key(const mate_value *v, size_t i);
/*! mate_value_lookup() : dict value for a string key, or NULL. */
mate_value *mate_value_lookup(const mate_value *dict, const char *key);
/*! mate_value_get_tensor() : the tensor view (data points into the storage). */
const mate_tensor *mate_value_get_tensor(const mate_value *v);
mate_storage *mate_value_get_storage(const mate_value *v);
mate_dtype mate_value_get_dtype(const mate_value *v);
/*! mate_value_enum_name() / mate_value_object_type(): borrowed strings. */
const char *mate_value_enum_name(const mate_value *v);
const char *mate_value_object_type(const mate_value *v);
const char *mate_value_object_repr(const mate_value *v);

/* ---- .pt files (torch.save's zip + pickle) ------------------------------ */
struct mate_pt_write_options {
	const char *root;   /* archive root folder; NULL: "archive" */
	int use_v3;         /* 1: every tensor as _rebuild_tensor_v3 (torch 2.x only) */
};
/*! mate_pt_write() : writes root (any value tree) as a .pt file that
 * torch.load reads. The file appears under path only when complete
 * (written to a temporary name, renamed). opts may be NULL. Enums are
 * written as their name and objects as their repr (str); floats and bytes
 * load with torch 1.13 only when weights_only=False. */
int mate_pt_write(const char *path, const mate_value *root,
    const struct mate_pt_write_options *opts, mate_error *err);

struct mate_pt_read_options {
	uint64_t max_pickle_bytes;  /* 0: 256 MiB */
	uint64_t max_records;       /* 0: 1,000,000 zip entries */
	int load_data;              /* 0: tensors' storages are not read (metadata only) */
};
/*! mate_pt_read() : reads a .pt file with a restricted unpickler that never
 * executes anything. @return the value tree (caller frees) or NULL. */
mate_value *mate_pt_read(const char *path,
    const struct mate_pt_read_options *opts, mate_error *err);

/*! mate_pickle_load() : the restricted unpickler on its own. Storages are
 * resolved through load_storage(key, dtype, numel, ctx), which returns a
 * new reference or NULL with err set; NULL load_storage makes empty
 * placeholders. */
typedef mate_storage *(*mate_storage_loader)(const char *key, mate_dtype dt,
    int64_t numel, void *ctx, mate_error *err);
mate_value *mate_pickle_load(const void *buf, size_t len,
    mate_storage_loader load_storage, void *ctx, mate_error *err);

/* ---- safetensors --------------------------------------------------------- */
/*! mate_safetensors_write() : tensors is a dict of name -> tensor; metadata
 * a dict of str -> str or NULL. Canonical order, padding and JSON; views are
 * written as contiguous copies. Atomic like mate_pt_write(). */
int mate_safetensors_write(const char *path, const mate_value *tensors,
    const mate_value *metadata, mate_error *err);
/*! mate_safetensors_read() : validates like the reference implementation
 * (and rejects duplicate names). @return a dict of name -> tensor in file
 * order; *metadata (if not NULL) gets the __metadata__ dict or NULL. */
mate_value *mate_safetensors_read(const char *path, mate_value **metadata,
    mate_error *err);
/*! mate_safetensors_parse() : the same on a buffer holding a whole file;
 * tensors are copied out of buf. */
mate_value *mate_safetensors_parse(const void *buf, size_t len,
    mate_value **metadata, mate_error *err);

#ifdef __cplusplus
}
#endif
#endif /* MATE_DUMP_H_INCLUDED */
