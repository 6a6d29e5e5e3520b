/* dump_stubs.c: placeholders for tensor-file functions whose implementations are still landing; each is removed as its real version arrives. */
#include "mate_private.h"

mate_value *
mate_pt_read(const char *path, const struct mate_pt_read_options *opts, mate_error *err)
{
	mate_set_error(err, MATE_ERR_UNSUPPORTED, "%s: .pt reading is not available in this build", path);
	return NULL;
}

mate_value *
mate_pickle_load(const void *buf, size_t len, mate_storage_loader load_storage,
    void *ctx, mate_error *err)
{
	mate_set_error(err, MATE_ERR_UNSUPPORTED, "pickle loading is not available in this build");
	return NULL;
}
