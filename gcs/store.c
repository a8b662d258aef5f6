/*
 * gcs/store.c - the GCS store backend (placeholder until the full backend
 * lands: xprofs_gcs_store_new() reports -ENOSYS).
 */
#include <errno.h>

#include "gcs-internal.h"

int xprofs_gcs_store_new(const char *url, const struct xprofs_gcs_options *o, struct xprofs_store **out)
{
	(void)url;
	(void)o;
	(void)out;
	xprofs_err("gcs: the GCS backend is not built yet");
	return -ENOSYS;
}
