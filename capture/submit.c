/*
 * submit.c - xprofs_capture_submit(): act on control lines.
 *
 * Every line is parsed first (line.c) and the manager acts only when all are
 * valid, so a write() either fails at once with -EINVAL and a readable
 * reason (kept with the run's record, runs.c) or starts something. One session per accepted line; its
 * coordinator thread (session.c) does the work. Finished coordinators are
 * reaped on each submit.
 *
 * Limits: at most MAX_LINES lines acted on per submit, CAPTURE_MAX_HOSTS
 * hosts per line and MAX_ACTIVE_HOSTS host threads in flight; choosing a
 * default session name stats the store under c->lock (one stat per
 * candidate name; a GCS stat may be a request).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture-internal.h"

#define MAX_LINES 16          /* lines acted on per submit */
#define MAX_ACTIVE_HOSTS 256  /* host threads across all sessions */
#define MIN_DEADLINE_MS 60000 /* like the official client */
#define DEADLINE_SLACK_MS 10000
#define SNAPSHOT_DEADLINE_MS 60000
#define CONTROL_DEADLINE_MS 30000 /* continuous start/stop */

/* @a@b@c, all borrowed. Caller owns the result; free with free(). NULL: ENOMEM. */
static char *join3(const char *a, const char *b, const char *c)
{
	char *s;

	if (asprintf(&s, "%s%s%s", a, b, c) < 0)
		return NULL;
	return s;
}

/* "<run>/plugins/profile" with no leading '/' for the root run. Caller owns; free with free(). */
static char *profile_dir(const char *run)
{
	return run[0] ? join3(run, "/", "plugins/profile") : strdup("plugins/profile");
}

/* ---- submit ----------------------------------------------------------- */

/* A session name not used in @r's history nor present in the store (c->lock held). */
static int pick_session(struct xprofs_capture *c, struct capture_run *r, const char *base,
			char *out, size_t cap)
{
	struct xprofs_store_stat st;
	char *pdir = profile_dir(r->run), *path;
	int ret = -EEXIST;

	if (!pdir)
		return -ENOMEM;
	for (unsigned n = 0; n < 1000; n++) {
		bool used = false;

		if (n == 0)
			snprintf(out, cap, "%s", base);
		else
			snprintf(out, cap, "%s_%u", base, n);
		for (struct capture_session *s = r->head; s && !used; s = s->next)
			used = strcmp(s->session, out) == 0;
		if (used)
			continue;
		path = join3(pdir, "/", out);
		if (!path) {
			ret = -ENOMEM;
			break;
		}
		used = xprofs_store_stat(c->store, path, &st) == 0;
		free(path);
		if (!used) {
			ret = 0;
			break;
		}
	}
	free(pdir);
	return ret;
}

/*
 * The logdir as the server sees it (source + run + plugins/profile), for old
 * servers that write the file themselves. Caller owns; free with free().
 */
static char *repository_root(struct xprofs_capture *c, const char *run)
{
	const char *src = xprofs_store_source(c->store);
	size_t n = src ? strlen(src) : 0;
	char *pdir = profile_dir(run), *s = NULL;

	while (n > 1 && src[n - 1] == '/')
		n--;
	if (pdir && asprintf(&s, "%.*s/%s", (int)n, src ? src : "", pdir) < 0)
		s = NULL;
	free(pdir);
	return s;
}

/* Start one capture for @run (c->lock held); consumes @q. */
static int start_session(struct xprofs_capture *c, struct capture_run *r, struct capture_req *q,
			 struct xprofs_buf *reason)
{
	struct capture_session *s = NULL;
	char base[CAPTURE_MAX_NAME + 1];
	char *pdir = NULL;
	uint64_t delay;
	int ret;

	if (c->active_hosts + q->n_hosts > MAX_ACTIVE_HOSTS) {
		(void)!xprofs_buf_printf(reason, "too many captures in flight");
		ret = -EAGAIN;
		goto fail;
	}
	s = calloc(1, sizeof(*s) + q->n_hosts * sizeof(s->hosts[0]));
	if (!s) {
		ret = -ENOMEM;
		goto fail;
	}
	s->c = c;
	s->req = q;
	q = NULL;
	s->n_hosts = s->req->n_hosts;
	s->id = ++c->next_id;
	s->state = ST_RUNNING;
	atomic_init(&s->cancel, 0);
	s->started_ns = xprofs_now_ns();
	s->run = strdup(r->run);
	s->repo_root = repository_root(c, r->run);
	pdir = profile_dir(r->run);
	if (!s->run || !s->repo_root || !pdir) {
		ret = -ENOMEM;
		goto fail;
	}
	if (s->req->session[0]) {
		snprintf(s->session, sizeof(s->session), "%s", s->req->session);
	} else {
		time_t now = time(NULL);
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(base, sizeof(base), "%Y_%m_%d_%H_%M_%S", &tm);
		ret = pick_session(c, r, base, s->session, sizeof(s->session));
		if (ret < 0) {
			(void)!xprofs_buf_printf(reason, "cannot find a free session name");
			goto fail;
		}
	}
	delay = s->req->has_delay ? s->req->delay_ms
		: s->n_hosts > 1  ? CAPTURE_MULTI_HOST_DELAY_MS
				  : 0;
	s->start_ts_ns = delay ? (uint64_t)xprofs_now_ns() + delay * 1000000u : 0;
	switch (s->req->cmd) {
	case CAPTURE_CMD_PROFILE:
		s->deadline_ms = 2 * s->req->duration_ms + delay + DEADLINE_SLACK_MS;
		if (s->deadline_ms < MIN_DEADLINE_MS)
			s->deadline_ms = MIN_DEADLINE_MS;
		break;
	case CAPTURE_CMD_SNAPSHOT:
		s->deadline_ms = SNAPSHOT_DEADLINE_MS;
		break;
	default:
		s->deadline_ms = CONTROL_DEADLINE_MS;
		break;
	}
	if (s->req->has_deadline)
		s->deadline_ms = s->req->deadline_ms;
	for (size_t i = 0; i < s->n_hosts; i++) {
		struct capture_host *h = &s->hosts[i];

		h->s = s;
		h->target = s->req->hosts[i];
		h->state = ST_RUNNING;
		h->grpc_status = -1;
		if (s->req->host_dir[0])
			snprintf(h->dir, sizeof(h->dir), "%s", s->req->host_dir);
		else if (capture_host_dirname(h->target, h->dir, sizeof(h->dir)) < 0) {
			ret = -EINVAL;
			goto fail;
		}
		if (s->req->cmd == CAPTURE_CMD_PROFILE || s->req->cmd == CAPTURE_CMD_SNAPSHOT) {
			if (asprintf(&h->file, "%s/%s/%s.xplane.pb", pdir, s->session, h->dir) <
			    0) {
				h->file = NULL;
				ret = -ENOMEM;
				goto fail;
			}
			if (!xprofs_store_path_valid(h->file)) {
				(void)!xprofs_buf_printf(reason, "bad profile path '%s'", h->file);
				ret = -EINVAL;
				goto fail;
			}
		}
	}
	if (s->hosts[0].file) {
		struct xprofs_store_stat st;

		/* refuse now what could never be stored, before any server profiles */
		ret = xprofs_store_writable(c->store, s->hosts[0].file);
		if (ret < 0) {
			(void)!xprofs_buf_printf(reason, "cannot store profiles in run '%s': %s",
						 r->run[0] ? r->run : ".", strerror(-ret));
			goto fail;
		}
		s->new_run = xprofs_store_stat(c->store, pdir, &st) == -ENOENT;
		if (s->new_run)
			xprofs_info("capture: run '%s' does not exist yet: it is created when a "
				    "host's data arrives",
				    r->run);
	}
	ret = pthread_create(&s->coord, NULL, capture_coord_main, s);
	if (ret) {
		ret = -ret;
		goto fail;
	}
	s->coord_started = true;
	c->active_hosts += s->n_hosts;
	if (r->tail)
		r->tail->next = s;
	else
		r->head = s;
	r->tail = s;
	r->n++;
	r->running = s;
	c->top_used = true;
	free(pdir);
	return 0;
fail:
	free(pdir);
	free(q);
	capture_session_free(s);
	return ret;
}

/*
 * "stop": Terminate the running capture of run @rn, or of every run for a
 * top-level "stop" without run=. c->lock held. 0, -ESRCH when nothing runs
 * (reason in @why), or -errno.
 */
static int stop_runs(struct xprofs_capture *c, const char *run, const struct capture_req *q,
		     const char *rn, struct xprofs_buf *why)
{
	size_t stopped = 0;
	int ret = 0;

	for (struct capture_run *r = c->runs; r; r = r->next) {
		if (!r->running || (strcmp(r->run, rn) != 0 && (run || q->has_run)))
			continue;
		ret = capture_request_stop(r->running);
		if (ret < 0)
			break;
		stopped++;
	}
	if (ret == 0 && stopped == 0) {
		(void)!xprofs_buf_printf(why, "no capture is running%s%s",
					 run || q->has_run ? " in run " : "",
					 run || q->has_run ? rn : "");
		ret = -ESRCH;
	}
	return ret;
}

int xprofs_capture_submit(struct xprofs_capture *c, const char *run, const char *line, size_t len,
			  struct xprofs_buf *reason)
{
	struct capture_req *reqs[MAX_LINES] = {0};
	struct xprofs_buf why;
	size_t nreq = 0, pos = 0;
	const char *bad_line = line;
	size_t bad_len = len;
	int ret = 0;

	xprofs_buf_init(&why, 4096);
	if (run && run[0] && !xprofs_capture_run_valid(run, strlen(run))) {
		(void)!xprofs_buf_printf(&why, "bad run path");
		ret = -EINVAL;
		goto out;
	}
	/* parse every line first: act on all of them or on none */
	while (pos < len) {
		const char *nl = memchr(line + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (line + pos)) : len - pos;
		struct capture_req *q;

		q = malloc(sizeof(*q));
		if (!q) {
			ret = -ENOMEM;
			goto out;
		}
		ret = capture_line_parse(line + pos, n, q, &why);
		if (ret == 0 && run && q->has_run && strcmp(q->run, run) != 0) {
			(void)!xprofs_buf_printf(&why,
						 "run= is only for the top-level control file");
			ret = -EINVAL;
		}
		if (ret == 0 && nreq == MAX_LINES) {
			(void)!xprofs_buf_printf(&why, "too many lines at once (at most %d)",
						 MAX_LINES);
			ret = -EINVAL;
		}
		if (ret == -ENODATA) {
			free(q);
			ret = 0;
		} else if (ret < 0) {
			free(q);
			bad_line = line + pos;
			bad_len = n;
			goto out;
		} else {
			reqs[nreq++] = q;
		}
		pos += n + (nl ? 1 : 0);
	}
	if (nreq == 0) {
		(void)!xprofs_buf_printf(&why, "empty line: nothing to do");
		ret = -EINVAL;
		goto out;
	}

	pthread_mutex_lock(&c->lock);
	capture_reap(c);
	for (size_t i = 0; i < nreq && ret == 0; i++) {
		struct capture_req *q = reqs[i];
		const char *rn = run ? run : q->has_run ? q->run : CAPTURE_DEFAULT_RUN;
		struct capture_run *r;

		bad_line = line;
		bad_len = len;
		if (c->closing) {
			ret = -ESHUTDOWN;
			break;
		}
		if (q->cmd == CAPTURE_CMD_STOP) {
			ret = stop_runs(c, run, q, rn, &why);
			continue;
		}
		r = capture_run_find(c, rn, true);
		if (!r) {
			ret = -ENOMEM;
			break;
		}
		if (r->running) {
			(void)!xprofs_buf_printf(&why,
						 "a capture of run '%s' is already running "
						 "(session %s); write 'stop' to end it early",
						 rn, r->running->session);
			ret = -EBUSY;
			break;
		}
		reqs[i] = NULL;
		ret = start_session(c, r, q, &why);
	}
	pthread_mutex_unlock(&c->lock);
out:
	if (ret < 0)
		capture_reject(c, run, bad_line, bad_len, reason, "%s",
			       why.len ? why.data : strerror(-ret));
	for (size_t i = 0; i < nreq; i++)
		free(reqs[i]);
	xprofs_buf_deinit(&why);
	return ret;
}
