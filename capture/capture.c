/*
 * capture.c - the capture manager (skeleton: grammar and API surface only;
 * captures are not started yet).
 */
#include <errno.h>
#include <stdlib.h>

#include "xprofs/capture.h"

struct xprofs_capture {
	struct xprofs_store *store;
	xprofs_capture_notify_fn notify;
	void *arg;
};

int xprofs_capture_new(struct xprofs_store *store, xprofs_capture_notify_fn notify, void *arg,
		       struct xprofs_capture **out)
{
	struct xprofs_capture *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->store = store;
	c->notify = notify;
	c->arg = arg;
	*out = c;
	return 0;
}

struct xprofs_capture *xprofs_capture_free(struct xprofs_capture *c)
{
	free(c);
	return NULL;
}

int xprofs_capture_submit(struct xprofs_capture *c, const char *run, const char *line, size_t len,
			  struct xprofs_buf *reason)
{
	if (reason && xprofs_buf_adds(reason, "capture: not implemented yet") < 0)
		return -ENOMEM;
	return -ENOSYS;
}

int xprofs_capture_status(struct xprofs_capture *c, const char *run, struct xprofs_buf *out)
{
	return xprofs_buf_adds(out, xprofs_capture_help());
}

const char *xprofs_capture_help(void)
{
	return "xprofs capture control file (not implemented yet)\n";
}
