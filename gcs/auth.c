/*
 * gcs/auth.c - Google credentials for the GCS client (ADC order).
 *
 * Minimal first cut: only anonymous credentials are resolved; every other
 * source reports -ENOTSUP until the full ADC implementation lands.
 */
#include <errno.h>
#include <stdlib.h>

#include "xprofs/gcs.h"

struct xprofs_gcs_auth {
	const char *kind;
};

int xprofs_gcs_auth_new(const struct xprofs_gcs_options *o, struct xprofs_gcs_auth **out)
{
	struct xprofs_gcs_auth *a;

	if (!o || !out)
		return -EINVAL;
	if (!o->anonymous && !getenv("CLOUD_STORAGE_EMULATOR_ENDPOINT") &&
	    !getenv("STORAGE_EMULATOR_HOST")) {
		xprofs_err("gcs: only anonymous credentials are supported in this build");
		return -ENOTSUP;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->kind = "anonymous";
	*out = a;
	return 0;
}

struct xprofs_gcs_auth *xprofs_gcs_auth_free(struct xprofs_gcs_auth *a)
{
	free(a);
	return NULL;
}

int xprofs_gcs_auth_header(struct xprofs_gcs_auth *a, struct xprofs_buf *out)
{
	(void)out;
	return a ? 0 : -EINVAL;
}

const char *xprofs_gcs_auth_kind(const struct xprofs_gcs_auth *a)
{
	return a ? a->kind : "anonymous";
}
