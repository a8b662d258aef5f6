/*
 * fs/session.c - the files rendered from a whole session, or two:
 * <session>/summary.json, <session>/ops.json (hosts combined) and
 * <session>/compare/<other>/{ops,steps,op_profile,summary}.json. No FUSE here.
 *
 * Design: a render opens and indexes every host of the session(s) (a host
 * that fails is noted in its errors file and shown as failed in the
 * output), hands them to decode/ (xprofs_decode_session_*(),
 * xprofs_decode_compare()) and closes them. It runs on a render thread of
 * live.c like any view (views.c starts it), borrowing the runs index: the
 * open that started it waits for its end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/decode.h"
#include "fs-internal.h"

/* The hosts of one session, opened and indexed for a session-wide view. */
struct sess_profs {
	size_t n;
	struct fs_prof *ps;
	struct fs_sidecars sc; /* the session's, attached to every host */
	const char **names;    /* borrowed from the index */
	struct xprofs_xspace **xs;
	char **errs; /* owned; why a host did not open */
};

static void sess_profs_close(struct sess_profs *s)
{
	for (size_t i = 0; s->ps && s->errs && i < s->n; i++) {
		if (s->ps[i].x)
			xprofs_xspace_set_sidecars(s->ps[i].x, NULL, 0);
		fs_prof_close(&s->ps[i]);
		free(s->errs[i]);
	}
	fs_sidecars_close(&s->sc, NULL);
	free(s->ps);
	free(s->names);
	free(s->xs);
	free(s->errs);
	memset(s, 0, sizeof(*s));
}

/*
 * sess_profs_open() - open and index every host of session @sess of run
 * @node (both borrowed from the index); a host that fails is noted in its
 * errors file under @what (one that opens clears that note) and left NULL.
 * Close with sess_profs_close().
 */
static int sess_profs_open(struct fs_ctx *ctx, const struct fs_run_node *node,
			   const struct fs_session *sess, const char *what, struct sess_profs *s)
{
	char p[XPROFS_PATH_MAX + 1];
	struct xprofs_buf e;
	size_t n = sess->nhosts;
	int r;

	memset(s, 0, sizeof(*s));
	s->ps = calloc(n ? n : 1, sizeof(*s->ps));
	s->names = calloc(n ? n : 1, sizeof(char *));
	s->xs = calloc(n ? n : 1, sizeof(*s->xs));
	s->errs = calloc(n ? n : 1, sizeof(char *));
	if (!s->ps || !s->names || !s->xs || !s->errs)
		return -ENOMEM;
	s->n = n;
	if ((r = fs_sidecars_open(ctx, node, sess, NULL, &s->sc)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		s->names[i] = sess->hosts[i].name;
		xprofs_buf_init(&e, 4096);
		r = fs_store_path(p, sizeof(p), node->path, sess->name, s->names[i]);
		if (r == 0)
			r = fs_prof_open(ctx, p, true, &s->ps[i], &e);
		if (r < 0) {
			s->errs[i] = xprofs_buf_steal(&e, NULL);
			if (!s->errs[i])
				s->errs[i] = strdup(strerror(-r));
			fs_error_note(ctx, p, &sess->hosts[i].st, what,
				      s->errs[i] ? s->errs[i] : "?");
		} else {
			fs_error_clear(ctx, p, &sess->hosts[i].st, what);
		}
		s->xs[i] = s->ps[i].x;
		if (s->xs[i])
			xprofs_xspace_set_sidecars(s->xs[i], s->sc.sc, s->sc.n);
		xprofs_buf_deinit(&e);
	}
	return 0;
}

static struct xprofs_session_in sess_in(const struct fs_session *sess, const struct sess_profs *s)
{
	return (struct xprofs_session_in){.name = sess->name,
					  .hosts = s->names,
					  .xs = s->xs,
					  .host_errors = (const char *const *)s->errs,
					  .n = s->n};
}

/* fs_session_file_name() - what a session-wide file is called in errors and logs. */
const char *fs_session_file_name(const struct fs_target *t)
{
	if (t->kind == FS_K_SESSION_OPS)
		return "session ops";
	if (t->kind == FS_K_SESSION_VIEW)
		switch (t->view) {
		case XPROFS_VIEW_HLO_STATS:
			return "session hlo_stats";
		case XPROFS_VIEW_ROOFLINE:
			return "session roofline";
		case XPROFS_VIEW_OP_PROFILE:
			return "session op profile";
		default:
			return "session framework op stats";
		}
	if (t->kind == FS_K_COMPARE_VIEW)
		return t->view == XPROFS_VIEW_OPS       ? "compare ops"
		       : t->view == XPROFS_VIEW_STEPS   ? "compare steps"
		       : t->view == XPROFS_VIEW_SUMMARY ? "compare summary"
							: "compare op profile";
	return "session summary";
}

/*
 * fs_session_render() - a session-wide file (summary.json, ops.json,
 * compare/<other>/<view>) into @out (borrowed); opens and frees every host
 * of the session(s) it is made from.
 */
int fs_session_render(struct fs_ctx *ctx, const struct fs_target *t, const struct xprofs_sink *out,
		      struct xprofs_buf *err)
{
	const char *what = fs_session_file_name(t);
	struct sess_profs a = {0}, b = {0};
	struct xprofs_session_in ai, bi;
	int r;

	r = sess_profs_open(ctx, t->node, t->session, what, &a);
	if (r == 0 && t->kind == FS_K_COMPARE_VIEW)
		r = sess_profs_open(ctx, t->other_node, t->other, what, &b);
	if (r < 0)
		goto out;
	ai = sess_in(t->session, &a);
	if (t->kind == FS_K_SESSION_OPS) {
		r = xprofs_decode_session_ops(&ai, out);
	} else if (t->kind == FS_K_SESSION_VIEW) {
		r = xprofs_decode_session_view((enum xprofs_view)t->view, &ai, out);
	} else if (t->kind == FS_K_COMPARE_VIEW) {
		bi = sess_in(t->other, &b);
		r = xprofs_decode_compare((enum xprofs_view)t->view, &bi, &ai, out);
	} else {
		r = xprofs_decode_session_summary(t->session->name, a.names, a.xs,
						  (const char *const *)a.errs, a.n, out);
	}
out:
	if (r < 0 && xprofs_buf_printf(err, "%s: %s", what, strerror(-r)) < 0)
		xprofs_buf_reset(err);
	sess_profs_close(&a);
	sess_profs_close(&b);
	return r;
}
