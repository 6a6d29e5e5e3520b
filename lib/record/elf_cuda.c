/* elf_cuda.c: tells from an ELF file whether it carries a static CUDA runtime (which preloading cannot interpose), with bounded reads of untrusted input. */
#include "mate_private.h"
#include "mate_record.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SYMBOLS (UINT64_C(1) << 24)

/* Functions every program using the CUDA runtime references. */
static const char *const runtime_names[] = {
	"__cudaRegisterFatBinary", "cudaMalloc", "cudaLaunchKernel", "cudaMemcpy",
	"cudaGetDeviceCount", "cudaStreamCreate", "cudaSetDevice",
};

struct elf {
	const unsigned char *p;
	size_t len;
	size_t shoff;           /* section header table */
	size_t nsh;
	size_t shstr;           /* index of the section name table */
	int defines, imports, needs, device_code, is_runtime;
};

static int
in_bounds(const struct elf *e, uint64_t off, uint64_t size)
{
	return off <= e->len && size <= e->len - off;
}

static void
section(const struct elf *e, size_t i, Elf64_Shdr *h)
{
	memcpy(h, e->p + e->shoff + i * sizeof(*h), sizeof(*h));
}

/* The NUL-terminated string at off in section s, or NULL. */
static const char *
str_at(const struct elf *e, size_t s, uint64_t off)
{
	Elf64_Shdr h;
	const char *base;

	if (s >= e->nsh)
		return NULL;
	section(e, s, &h);
	if (h.sh_type != SHT_STRTAB || !in_bounds(e, h.sh_offset, h.sh_size) || off >= h.sh_size)
		return NULL;
	base = (const char *)e->p + h.sh_offset;
	return memchr(base + off, '\0', h.sh_size - off) != NULL ? base + off : NULL;
}

static int
is_runtime_name(const char *n)
{
	for (size_t i = 0; i < sizeof(runtime_names) / sizeof(runtime_names[0]); i++)
		if (strcmp(n, runtime_names[i]) == 0)
			return 1;
	return 0;
}

static void
scan_symbols(struct elf *e, const Elf64_Shdr *h)
{
	uint64_t n;

	if (h->sh_entsize != sizeof(Elf64_Sym) || !in_bounds(e, h->sh_offset, h->sh_size))
		return;
	n = h->sh_size / sizeof(Elf64_Sym);
	if (n > MAX_SYMBOLS)
		n = MAX_SYMBOLS;
	for (uint64_t i = 1; i < n; i++) {
		Elf64_Sym s;
		const char *name;
		memcpy(&s, e->p + h->sh_offset + i * sizeof(s), sizeof(s));
		if (ELF64_ST_TYPE(s.st_info) != STT_FUNC && ELF64_ST_TYPE(s.st_info) != STT_NOTYPE)
			continue;
		if ((name = str_at(e, h->sh_link, s.st_name)) == NULL || !is_runtime_name(name))
			continue;
		if (s.st_shndx == SHN_UNDEF)
			e->imports = 1;
		else
			e->defines = 1;
	}
}

static void
scan_dynamic(struct elf *e, const Elf64_Shdr *h)
{
	uint64_t n;

	if (h->sh_entsize != sizeof(Elf64_Dyn) || !in_bounds(e, h->sh_offset, h->sh_size))
		return;
	n = h->sh_size / sizeof(Elf64_Dyn);
	for (uint64_t i = 0; i < n; i++) {
		Elf64_Dyn d;
		const char *name;
		memcpy(&d, e->p + h->sh_offset + i * sizeof(d), sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag != DT_NEEDED && d.d_tag != DT_SONAME)
			continue;
		if ((name = str_at(e, h->sh_link, d.d_un.d_val)) == NULL ||
		    strncmp(name, "libcudart.so", 12) != 0)
			continue;
		if (d.d_tag == DT_NEEDED)
			e->needs = 1;
		else
			e->is_runtime = 1;
	}
}

/* Reads the ELF and section headers. */
static int
headers(struct elf *e, mate_error *err)
{
	Elf64_Ehdr eh;
	Elf64_Shdr first;

	if (e->len < sizeof(eh) || memcmp(e->p, ELFMAG, SELFMAG) != 0)
		return mate_set_error(err, MATE_ERR_FORMAT, "not an ELF file");
	memcpy(&eh, e->p, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return mate_set_error(err, MATE_ERR_UNSUPPORTED, "not a 64-bit little-endian ELF file");
	if (eh.e_shoff == 0)
		return MATE_OK;     /* no section headers: nothing to tell */
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff % 8 != 0 ||
	    !in_bounds(e, eh.e_shoff, sizeof(Elf64_Shdr)))
		return mate_set_error(err, MATE_ERR_FORMAT, "bad section header table");
	memcpy(&first, e->p + eh.e_shoff, sizeof(first));
	e->nsh = eh.e_shnum ? eh.e_shnum : first.sh_size;
	e->shstr = eh.e_shstrndx != SHN_XINDEX ? eh.e_shstrndx : first.sh_link;
	if (e->nsh > e->len / sizeof(Elf64_Shdr) ||
	    !in_bounds(e, eh.e_shoff, e->nsh * sizeof(Elf64_Shdr)))
		return mate_set_error(err, MATE_ERR_FORMAT, "bad section header table");
	e->shoff = eh.e_shoff;
	return MATE_OK;
}

int
mate_elf_cuda_runtime_buf(const void *buf, size_t len, mate_error *err)
{
	struct elf e;
	int rc;

	memset(&e, 0, sizeof(e));
	e.p = buf;
	e.len = len;
	if ((rc = headers(&e, err)) != MATE_OK)
		return rc;
	for (size_t i = 0; i < e.nsh; i++) {
		Elf64_Shdr h;
		const char *name;
		section(&e, i, &h);
		if ((name = str_at(&e, e.shstr, h.sh_name)) != NULL &&
		    (strcmp(name, ".nv_fatbin") == 0 || strcmp(name, ".nvFatBinSegment") == 0))
			e.device_code = 1;
		if (h.sh_type == SHT_SYMTAB || h.sh_type == SHT_DYNSYM)
			scan_symbols(&e, &h);
		else if (h.sh_type == SHT_DYNAMIC)
			scan_dynamic(&e, &h);
	}
	if (e.is_runtime)
		return MATE_CUDART_SHARED;
	if (e.defines)
		return MATE_CUDART_STATIC;
	if (e.imports || e.needs)
		return MATE_CUDART_SHARED;
	return e.device_code ? MATE_CUDART_STATIC : MATE_CUDART_NONE;
}

int
mate_elf_cuda_runtime(const char *path, mate_error *err)
{
	struct stat sb;
	void *p;
	int fd, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return mate_set_errno(err, errno, "cannot open", path);
	if (fstat(fd, &sb) != 0) {
		rc = mate_set_errno(err, errno, "cannot stat", path);
		close(fd);
		return rc;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return mate_set_error(err, MATE_ERR_FORMAT, "%s: not an ELF file", path);
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return mate_set_errno(err, errno, "cannot map", path);
	rc = mate_elf_cuda_runtime_buf(p, (size_t)sb.st_size, err);
	munmap(p, (size_t)sb.st_size);
	return rc;
}
