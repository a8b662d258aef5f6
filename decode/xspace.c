/*
 * xspace.c - temporary skeleton of the decode module: every function of
 * xprofs/decode.h is defined so that dependants link; rendering is not
 * implemented yet and fails with -ENOSYS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/decode.h"

static const char *const view_names[XPROFS_VIEW_COUNT] = {
	"summary.json", "trace.json", "ops.json", "steps.json"};

const char *xprofs_view_name(enum xprofs_view v)
{
	if ((unsigned)v >= XPROFS_VIEW_COUNT)
		return NULL;
	return view_names[v];
}

int xprofs_view_parse(const char *name)
{
	for (int i = 0; i < XPROFS_VIEW_COUNT; i++) {
		size_t l = strlen(view_names[i]) - 5;

		if (!strcmp(name, view_names[i]) ||
		    (strlen(name) == l && !strncmp(name, view_names[i], l)))
			return i;
	}
	return -EINVAL;
}

struct xprofs_xspace {
	int unused;
};

int xprofs_xspace_open(const struct xprofs_reader *r, struct xprofs_buf *err,
		       struct xprofs_xspace **out)
{
	if (err)
		(void)!xprofs_buf_adds(err, "decoder not implemented yet");
	return -ENOSYS;
}

struct xprofs_xspace *xprofs_xspace_free(struct xprofs_xspace *x)
{
	free(x);
	return NULL;
}

int xprofs_xspace_get_totals(const struct xprofs_xspace *x, struct xprofs_xspace_totals *t)
{
	memset(t, 0, sizeof(*t));
	return -ENOSYS;
}

int xprofs_xspace_render(struct xprofs_xspace *x, enum xprofs_view v,
			 const struct xprofs_sink *out, struct xprofs_buf *err)
{
	return -ENOSYS;
}

size_t xprofs_xspace_track_count(const struct xprofs_xspace *x)
{
	return 0;
}

int xprofs_xspace_track_names(const struct xprofs_xspace *x, size_t i,
			      const char **plane_file, const char **line_file)
{
	return -ERANGE;
}

int xprofs_xspace_track_find(const struct xprofs_xspace *x, const char *plane_file,
			     const char *line_file)
{
	return -ENOENT;
}

int xprofs_xspace_render_track(struct xprofs_xspace *x, size_t i,
			       const struct xprofs_sink *out, struct xprofs_buf *err)
{
	return -ENOSYS;
}

int xprofs_decode_session_summary(const char *session, const char *const *hosts,
				  struct xprofs_xspace *const *xs,
				  const char *const *host_errors, size_t n,
				  const struct xprofs_sink *out)
{
	return -ENOSYS;
}

char *xprofs_decode_name_encode(const char *name, size_t len)
{
	return NULL;
}

char *xprofs_decode_name_decode(const char *file, size_t *len)
{
	return NULL;
}
