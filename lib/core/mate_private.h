/* mate_private.h: helpers shared inside libmate; never installed, never reached from a frontend. */
#ifndef MATE_PRIVATE_H_INCLUDED
#define MATE_PRIVATE_H_INCLUDED

#include "config.h"
#include <stddef.h>
#include <stdint.h>
#include "mate.h"

#if defined(__GNUC__)
#define MATE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define MATE_LIKELY(x) __builtin_expect(!!(x), 1)
#define MATE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MATE_HIDDEN __attribute__((visibility("hidden")))
#else
#define MATE_PRINTF(a, b)
#define MATE_LIKELY(x) (x)
#define MATE_UNLIKELY(x) (x)
#define MATE_HIDDEN
#endif

#include "util.h"

/* Sets err (if not NULL) and returns code. */
int mate_set_error(mate_error *err, int code, const char *fmt, ...) MATE_PRINTF(3, 4);
/* Sets an I/O error from errno: "what: path: strerror"; ENOSPC/EDQUOT give
 * MATE_ERR_NOSPACE. Returns the code. */
int mate_set_errno(mate_error *err, int errnum, const char *what, const char *path);

/* Checked arithmetic: return 0 on overflow. */
static inline int mate_mul_ok(int64_t a, int64_t b, int64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}
static inline int mate_add_ok(int64_t a, int64_t b, int64_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}

/* Whether d (from JSON or a float argument) fits an int64_t; then *out is
 * d truncated. Casting a double out of range is undefined behaviour. */
static inline int mate_double_to_i64(double d, int64_t *out)
{
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
		return 0;
	*out = (int64_t)d;
	return 1;
}

/* Opens path (relative to dirfd, or AT_FDCWD) to read it, without blocking
 * on a FIFO or device someone put under that name: O_NONBLOCK, then fstat.
 * nofollow (a file of a dump, whose folder others may write): a symbolic
 * link is refused as well (O_NOFOLLOW), never read through. Returns the fd,
 * or -errno; -EFTYPE_MATE when it is not a regular file. */
#define EFTYPE_MATE 0x4654
int mate_open_regular(int dirfd, const char *path, int nofollow);
/* mate_open_regular() less its fstat: the caller tells a regular file by
 * reading it (pread() fails on a FIFO or a folder) and an fstat() where a
 * read leaves a doubt (nothing read, or a file larger than one read). */
int mate_open_unchecked(int dirfd, const char *path, int nofollow);

/* Writes all of buf to fd, retrying short writes and EINTR. 0 or -errno. */
int mate_write_all(int fd, const void *buf, size_t len);
/* Reads exactly len bytes at offset (pread); 0, -errno, or -EIO on EOF. */
int mate_pread_all(int fd, void *buf, size_t len, uint64_t off);
/* mate_pread_all() for large reads: 64 MiB and more are read by several
 * threads (mate_parallel_threads(), $MATE_NUM_THREADS), in 8 MiB parts. */
int mate_pread_big(int fd, void *buf, size_t len, uint64_t off);

/* Atomic file output: write to a file without a name (O_TMPFILE) and link
 * it as path when complete; where the system cannot, write to a file
 * mate_tmp_create() makes and rename it. A killed process leaves no
 * truncated file under path (and, with O_TMPFILE, no temporary name).
 * An existing path that is not a regular file (a symlink, FIFO, device,
 * directory) is refused with MATE_ERR_ARGUMENT, never replaced. */
/* (mate_tmp_create(), the temporary file, is in util.h.) */

typedef struct mate_atomic_file {
	int fd;
	char *path;
	char *tmp_path;     /* the temporary name (also in messages) */
	int unnamed;        /* fd is an O_TMPFILE file: tmp_path does not exist */
} mate_atomic_file;
int mate_atomic_open(mate_atomic_file *af, const char *path, mate_error *err);
/* The two halves of an atomic file that must never replace another: an
 * unnamed (O_TMPFILE) file, read-write, in path's directory, or -1 where
 * the filesystem has none; and its naming, linkat() without replacing.
 * mate_link_unnamed() returns 0 or an errno (EEXIST: the name is taken). */
int mate_open_unnamed(const char *path);
int mate_link_unnamed(int fd, const char *name);
int mate_atomic_commit(mate_atomic_file *af, mate_error *err);
void mate_atomic_abort(mate_atomic_file *af);

/* Internal tensor-value access used by the file formats. */
mate_value *mate_value_tensor_take(const mate_tensor *t, mate_storage *st);
/* The inverse of mate_tensor_copy_contiguous() (tensor.c): writes contiguous
 * row-major src into the (host) view t. */
void mate_tensor_scatter(const mate_tensor *t, const void *src);
/* The elements of the host view src into the host view dst of the same shape and
 * element size, whatever either's strides (tensor.c); overlapping views are not
 * supported. */
void mate_tensor_copy_view(const mate_tensor *dst, const mate_tensor *src);

/* mate_storage_new() without clearing the bytes: for readers that overwrite
 * all of them (saves a pass over fresh memory). */
mate_storage *mate_storage_new_uninit(size_t nbytes, mate_error *err);

/* A read-only file mapped copy-on-write (MAP_PRIVATE, PROT_READ | PROT_WRITE:
 * a kernel that writes into an input changes its copy, never the file), shared
 * by the storages that view it and unmapped with the last of them. The
 * readers map a file when MATE_MMAP is not 0 and fall back to reading when
 * the mapping fails. A file truncated by someone else while mapped faults
 * (SIGBUS) where it is touched: dumps are complete when named, and never
 * rewritten in place. */
typedef struct mate_map mate_map;
/* Maps the file fd of size bytes, or NULL: below 64 KiB (reading is as
 * cheap), when MATE_MMAP=0 turned mapping off, or when mmap() fails. */
mate_map *mate_map_file(int fd, uint64_t size);
const unsigned char *mate_map_data(const mate_map *m);
void mate_map_unref(mate_map *m);
/* A tensor's data is viewed where it lies when it is aligned to its element
 * size (what C's accesses need; the kernels assume no more), else copied out. */
#define MATE_MAP_ALIGNED(p, dt) ((uintptr_t)(p) % mate_dtype_size(dt) == 0)
/* A storage viewing nbytes of m at data (m gains a reference). */
mate_storage *mate_storage_view(mate_map *m, void *data, size_t nbytes, mate_error *err);

/* What malloc adds to each block, for memory budgets. */
#define MATE_MALLOC_OVERHEAD 16
/* The heap bytes one mate_value node takes, for memory budgets: a string's
 * bytes and a container's item arrays come on top. */
size_t mate_value_node_bytes(void);
/* What a container's items cost on top of their nodes: list and tuple
 * arrays grow by doubling; dicts keep keys and a hash index too. */
#define MATE_VALUE_ITEM_BYTES 16
#define MATE_VALUE_DICT_ITEM_BYTES 48

/* Offset of the first byte that is not UTF-8 as Rust's str::from_utf8
 * reads it (no overlongs, surrogates or code points past U+10FFFF), or len
 * when all of s is. */
size_t mate_utf8_invalid_at(const unsigned char *s, size_t len);

/* mate_safetensors_read() without the data: every check of the header
 * and of the offsets against the file's size, tensors without storages. */
mate_value *mate_safetensors_read_header(const char *path, mate_error *err);

/* mate_safetensors_read() (header_only: _read_header()) and mate_pt_read()
 * of a file already opened by mate_open_regular(): fd is its result, a
 * negative one reported as the open's error; the reader closes fd. path
 * only names the file in messages (and for libarchive, pt_read's fallback,
 * which reads fd too). */
mate_value *mate_safetensors_read_fd(int fd, const char *path, mate_value **metadata,
    int header_only, mate_error *err);
mate_value *mate_pt_read_fd(int fd, const char *path,
    const struct mate_pt_read_options *opts, mate_error *err);

/* Streaming a tensor file's storages without holding them (mate-list-dumps
 * --nonfinite): the reader checks the file as mate_pt_read() or
 * mate_safetensors_read() would, hands begin() the dict of tensors (borrowed
 * until the read returns; each storage a placeholder without data, one per
 * .pt record, shared by the views of it, or one per safetensors tensor),
 * then each storage's bytes in file order through chunk(): pieces of at
 * most MATE_STREAM_CHUNK bytes at offsets off that are multiples of it,
 * within a storage in order. A callback's nonzero return stops the read
 * with the error it set on err. */
#define MATE_STREAM_CHUNK ((size_t)1 << 20)
struct mate_tensor_stream {
	int (*begin)(void *ctx, const mate_value *tensors, mate_error *err);
	int (*chunk)(void *ctx, const mate_storage *st, uint64_t off, const void *p, size_t n,
	    mate_error *err);
	void *ctx;
};
/* Each reads fd (mate_open_regular()'s result; closed) once, path naming it
 * in messages. @return MATE_OK or a negative status with err set. */
int mate_pt_read_stream(int fd, const char *path, const struct mate_tensor_stream *s,
    mate_error *err);
int mate_safetensors_read_stream(int fd, const char *path, const struct mate_tensor_stream *s,
    mate_error *err);

/* mate_pt_read() on a whole .pt file held in memory (the fuzz target). */
mate_value *mate_pt_read_memory(const void *buf, size_t len,
    const struct mate_pt_read_options *opts, mate_error *err);

#endif /* MATE_PRIVATE_H_INCLUDED */
