/* pickle_write.h: the protocol-2 pickler behind mate_pt_write(); private to libmate. */
#ifndef MATE_PICKLE_WRITE_H_INCLUDED
#define MATE_PICKLE_WRITE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include "mate_core.h"

/* One storage record the pickle refers to; its key is its index ("0", "1",
 * ...), in order of first appearance. Pointers are borrowed from the tree. */
struct mate_pickle_storage {
	const void *id;      /* the mate_storage, or the tensor value when it has none */
	const void *data;    /* first byte: a host or a device address */
	uint64_t nbytes;     /* bytes of the record (whole storage) */
	mate_dtype dtype;    /* dtype of the first tensor that views it */
	int device_type;     /* enum mate_device_type of that tensor */
	void *stream;        /* its CUDA stream */
};

struct mate_pickle_out {
	unsigned char *buf;  /* the pickle: PROTO 2 ... STOP */
	size_t len, cap;
	struct mate_pickle_storage *storages;
	size_t nstorages, storages_cap;
	size_t *index;       /* open addressing: hash(id) -> storage index + 1 */
	size_t index_cap;
};

/* Pickles root as torch 1.13 does (without memo) into out, which must be
 * zeroed; the caller frees out with mate_pickle_out_free() on success or
 * failure. use_v3: every tensor as _rebuild_tensor_v3. */
int mate_pickle_dump(const mate_value *root, int use_v3,
    struct mate_pickle_out *out, mate_error *err);
void mate_pickle_out_free(struct mate_pickle_out *out);

#endif /* MATE_PICKLE_WRITE_H_INCLUDED */
