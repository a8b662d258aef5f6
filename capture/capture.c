/*
 * capture.c - the capture manager behind the mount's control files.
 *
 * Design:
 * - xprofs_capture_submit() parses every line first (line.c) and acts only
 *   when all are valid, so a write() either fails at once with -EINVAL and a
 *   readable reason or starts something.
 * - One "session" per accepted line. Each session has a coordinator thread
 *   that starts one thread per host (all with the same start timestamp),
 *   joins them, optionally joins a "stopper" thread (Terminate RPCs), calls
 *   the notify callback and publishes the final state. Coordinators are
 *   joinable; finished ones are reaped on the next submit and at free().
 * - A host's XSpace is streamed from the gRPC response straight into a store
 *   writer created lazily with XPROFS_STORE_EXCL on the first byte: an
 *   existing file is never overwritten, an empty trace creates nothing, and
 *   any error aborts the writer so no partial file is left.
 * - `stop` never cancels an RPC (that would discard the data): it sends
 *   Terminate(session_id) so the server ends the capture early and returns
 *   it normally. free() does the same, waits a grace period, then cancels
 *   through the progress callback.
 * - History: per run, the last CAPTURE_HISTORY sessions, plus the last
 *   rejected line. At most MAX_RUNS run records (oldest idle one evicted).
 *
 * Locking: c->lock protects every list and every state field shown by
 * status; a host thread touches its own writer without the lock and
 * publishes results under it. notify() is called without the lock.
 *
 * Limits: at most CAPTURE_MAX_HOSTS hosts per line and MAX_ACTIVE_HOSTS in
 * flight; choosing a default session name stats the store under c->lock
 * (one stat per candidate name; a GCS stat may be a request). Terminate goes
 * to all hosts in parallel, each with a 2 s connect and 10 s call deadline.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "capture-internal.h"
#include "profiler_service.pb-c.h"
#include "xprofs/capture.h"

#define CAPTURE_HISTORY 32
#define MAX_RUNS 256
#define MAX_LINES 16               /* lines acted on per submit */
#define MAX_ACTIVE_HOSTS 256       /* host threads across all sessions */
#define CONNECT_MS 5000
#define MIN_DEADLINE_MS 60000      /* like the official client */
#define DEADLINE_SLACK_MS 10000
#define SNAPSHOT_DEADLINE_MS 60000
#define CONTROL_DEADLINE_MS 30000  /* continuous start/stop */
#define TERMINATE_DEADLINE_MS 10000
#define FREE_GRACE_MS 10000        /* Terminate, then cancel after this */
#define MAX_XSPACE ((uint64_t)UINT32_MAX) /* a gRPC message length is 32 bits */
#define MAX_SMALL_RESPONSE (1u << 20)

enum cap_state {
	ST_RUNNING = 0,
	ST_OK,
	ST_EMPTY,
	ST_UNREACHABLE,
	ST_TIMEOUT,
	ST_ERROR,
	ST_STOPPED,
};

static const char *const state_names[] = {
	[ST_RUNNING] = "running", [ST_OK] = "ok",           [ST_EMPTY] = "empty",
	[ST_UNREACHABLE] = "unreachable", [ST_TIMEOUT] = "timeout", [ST_ERROR] = "error",
	[ST_STOPPED] = "stopped",
};

static const char *const cmd_names[] = {
	[CAPTURE_CMD_PROFILE] = "profile",
	[CAPTURE_CMD_STOP] = "stop",
	[CAPTURE_CMD_SNAPSHOT] = "snapshot",
	[CAPTURE_CMD_CONT_START] = "continuous start",
	[CAPTURE_CMD_CONT_STOP] = "continuous stop",
};

struct cap_session;

struct cap_host {
	struct cap_session *s;
	const char *target;         /* points into s->req */
	char dir[CAPTURE_MAX_NAME + 1];
	char *file;                 /* store path, or NULL (continuous); owned */
	pthread_t thread;
	bool started;
	/* published under c->lock */
	int state;
	uint64_t bytes;
	int grpc_status;            /* -1: none */
	char error[400];
	bool by_server;
	char *server_file;          /* where an old server wrote it; owned */
	/* host thread only */
	struct xprofs_store_writer *w;
	uint64_t off;
};

struct cap_session {
	struct xprofs_capture *c;
	struct cap_session *next;   /* in its run's history, oldest first */
	uint64_t id;
	char *run;                  /* store path of the run, "" = root; owned */
	char session[CAPTURE_MAX_NAME + 16];
	struct capture_req *req;    /* owned */
	char *repo_root;            /* repository_root sent to the server; owned */
	uint64_t start_ts_ns;
	uint64_t deadline_ms;
	atomic_int cancel;          /* set by free() after the grace period */
	int64_t started_ns, finished_ns;
	pthread_t coord;
	bool coord_started, joined;
	/* under c->lock */
	int state;
	bool done;                  /* coordinator finished; may be joined */
	bool stop_requested;
	bool finishing;             /* hosts are done: no new stopper */
	bool stopper_started;
	pthread_t stopper;
	size_t n_hosts;
	struct cap_host hosts[];
};

struct cap_run {
	struct cap_run *next;
	char *run;                  /* owned */
	struct cap_session *head, *tail;
	size_t n;
	struct cap_session *running;
	char *rej_line, *rej_reason; /* owned */
	uint64_t touched;           /* LRU for eviction */
};

struct xprofs_capture {
	struct xprofs_store *store; /* borrowed */
	xprofs_capture_notify_fn notify;
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* a session finished */
	/* protected by lock */
	struct cap_run *runs;
	size_t n_runs;
	uint64_t next_id, tick;
	size_t active_hosts;
	bool closing;
	char *rej_line, *rej_reason; /* top-level control file's last rejection */
	bool top_used;              /* a capture was ever submitted */
};

/* ---- small helpers ---------------------------------------------------- */

static void fmt_time(int64_t ns, char *out, size_t cap)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns % 1000000000 / 1000000));
}

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

/* ---- run records (c->lock held) --------------------------------------- */

/* Frees @s and everything it owns; its threads must be joined. Accepts NULL; returns NULL. */
static struct cap_session *session_free(struct cap_session *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n_hosts; i++) {
		free(s->hosts[i].file);
		free(s->hosts[i].server_file);
	}
	free(s->run);
	free(s->req);
	free(s->repo_root);
	free(s);
	return NULL;
}

static void run_free(struct cap_run *r)
{
	struct cap_session *s, *n;

	for (s = r->head; s; s = n) {
		n = s->next;
		session_free(s);
	}
	free(r->run);
	free(r->rej_line);
	free(r->rej_reason);
	free(r);
}

/*
 * The record of @run (borrowed; duplicated when created). The result is owned
 * by @c and valid while c->lock is held. NULL: not found (or ENOMEM, or every
 * record busy when MAX_RUNS are in use).
 */
static struct cap_run *run_find(struct xprofs_capture *c, const char *run, bool create)
{
	struct cap_run *r, **pp, **victim = NULL;

	for (r = c->runs; r; r = r->next)
		if (strcmp(r->run, run) == 0) {
			r->touched = ++c->tick;
			return r;
		}
	if (!create)
		return NULL;
	if (c->n_runs >= MAX_RUNS) {
		/* evict the least recently used run record with nothing in flight */
		for (pp = &c->runs; *pp; pp = &(*pp)->next) {
			bool busy = (*pp)->running != NULL;

			for (struct cap_session *s = (*pp)->head; s && !busy; s = s->next)
				busy = !s->joined;
			if (!busy && (!victim || (*pp)->touched < (*victim)->touched))
				victim = pp;
		}
		if (!victim)
			return NULL;
		r = *victim;
		*victim = r->next;
		run_free(r);
		c->n_runs--;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->run = strdup(run);
	if (!r->run) {
		free(r);
		return NULL;
	}
	r->touched = ++c->tick;
	r->next = c->runs;
	c->runs = r;
	c->n_runs++;
	return r;
}

/* Duplicates @line (truncated to 1 KiB) and @reason into the slots, freeing the old values. */
static int set_rejection(char **line_slot, char **reason_slot, const char *line, size_t len,
			 const char *reason)
{
	char *l = strndup(line, len > 1024 ? 1024 : len), *why = strdup(reason);

	if (!l || !why) {
		free(l);
		free(why);
		return -ENOMEM;
	}
	free(*line_slot);
	free(*reason_slot);
	*line_slot = l;
	*reason_slot = why;
	return 0;
}

/* Join finished coordinators and trim histories (c->lock held). */
static void reap(struct xprofs_capture *c)
{
	for (struct cap_run *r = c->runs; r; r = r->next) {
		for (struct cap_session *s = r->head; s; s = s->next)
			if (s->done && !s->joined) {
				pthread_join(s->coord, NULL); /* it has returned or is returning */
				s->joined = true;
			}
		while (r->n > CAPTURE_HISTORY && r->head && r->head->joined) {
			struct cap_session *s = r->head;

			r->head = s->next;
			if (!r->head)
				r->tail = NULL;
			r->n--;
			session_free(s);
		}
	}
}

/* ---- host side -------------------------------------------------------- */

/* struct xprofs_sink write(): lazily create the EXCL writer, then append. */
static int host_sink_write(void *arg, const void *p, size_t n)
{
	struct cap_host *h = arg;
	const char *q = p;
	int r;

	if (!h->w) {
		r = xprofs_store_writer_new(h->s->c->store, h->file, XPROFS_STORE_EXCL, &h->w);
		if (r < 0)
			return r;
	}
	while (n > 0) {
		ssize_t k = xprofs_store_writer_write(h->w, q, n, h->off);

		if (k < 0)
			return (int)k;
		if (k == 0)
			return -EIO;
		q += k;
		n -= (size_t)k;
		h->off += (uint64_t)k;
	}
	return 0;
}

/* Serializes the ProfileRequest for @h. *@out: caller owns; free with free(). */
static int pack_profile_request(const struct cap_session *s, const struct cap_host *h, uint8_t **out,
				size_t *len)
{
	const struct capture_req *q = s->req;
	Tensorflow__ProfileRequest req = TENSORFLOW__PROFILE_REQUEST__INIT;
	Tensorflow__ProfileOptions opts = TENSORFLOW__PROFILE_OPTIONS__INIT;
	Tensorflow__ProfileOptions__AdvancedConfigurationEntry ents[CAPTURE_MAX_ADV];
	Tensorflow__ProfileOptions__AdvancedConfigurationEntry *entp[CAPTURE_MAX_ADV];
	Tensorflow__ProfileOptions__AdvancedConfigValue vals[CAPTURE_MAX_ADV];
	char host_name[CAPTURE_MAX_HOSTLEN + 1];
	char session_id[sizeof(s->session)];
	uint8_t *buf;

	opts.version = 1; /* otherwise the tracer levels are ignored */
	opts.host_tracer_level = q->host_tracer_level;
	opts.device_tracer_level = q->device_tracer_level;
	opts.python_tracer_level = q->python_tracer_level;
	opts.duration_ms = q->duration_ms;
	opts.start_timestamp_ns = s->start_ts_ns;
	for (size_t i = 0; i < q->n_adv; i++) {
		tensorflow__profile_options__advanced_configuration_entry__init(&ents[i]);
		tensorflow__profile_options__advanced_config_value__init(&vals[i]);
		ents[i].key = (char *)q->adv[i].key;
		ents[i].value = &vals[i];
		switch (q->adv[i].type) {
		case CAPTURE_ADV_BOOL:
			vals[i].value_case = TENSORFLOW__PROFILE_OPTIONS__ADVANCED_CONFIG_VALUE__VALUE_BOOL_VALUE;
			vals[i].bool_value = q->adv[i].b;
			break;
		case CAPTURE_ADV_INT:
			vals[i].value_case = TENSORFLOW__PROFILE_OPTIONS__ADVANCED_CONFIG_VALUE__VALUE_INT64_VALUE;
			vals[i].int64_value = q->adv[i].i;
			break;
		default:
			vals[i].value_case = TENSORFLOW__PROFILE_OPTIONS__ADVANCED_CONFIG_VALUE__VALUE_STRING_VALUE;
			vals[i].string_value = (char *)q->adv[i].str;
			break;
		}
		entp[i] = &ents[i];
	}
	opts.n_advanced_configuration = q->n_adv;
	opts.advanced_configuration = q->n_adv ? entp : NULL;

	/* an old server names its file after host_name (':' -> '_') */
	snprintf(host_name, sizeof(host_name), "%s", q->host_dir[0] ? q->host_dir : h->target);
	snprintf(session_id, sizeof(session_id), "%s", s->session);
	req.duration_ms = q->duration_ms; /* legacy field, as the official client sends it */
	req.opts = &opts;
	req.repository_root = s->repo_root;
	req.session_id = session_id;
	req.host_name = host_name;
	req.emit_xspace = true;

	*len = tensorflow__profile_request__get_packed_size(&req);
	buf = malloc(*len ? *len : 1);
	if (!buf)
		return -ENOMEM;
	tensorflow__profile_request__pack(&req, buf);
	*out = buf;
	return 0;
}

/* *@out: caller owns; free with free(). */
static int pack_snapshot_request(uint8_t **out, size_t *len)
{
	Tensorflow__GetSnapshotRequest req = TENSORFLOW__GET_SNAPSHOT_REQUEST__INIT;
	uint8_t *buf;

	/* no snapshot_session_id: the server returns the data instead of writing it */
	*len = tensorflow__get_snapshot_request__get_packed_size(&req);
	buf = malloc(*len ? *len : 1);
	if (!buf)
		return -ENOMEM;
	tensorflow__get_snapshot_request__pack(&req, buf);
	*out = buf;
	return 0;
}

static int state_of(int err)
{
	switch (err) {
	case 0: return ST_OK;
	case -ECONNREFUSED:
	case -EHOSTUNREACH: return ST_UNREACHABLE;
	case -ETIMEDOUT: return ST_TIMEOUT;
	default: return ST_ERROR;
	}
}

static void *host_main(void *arg)
{
	struct cap_host *h = arg;
	struct cap_session *s = h->s;
	struct xprofs_capture *c = s->c;
	struct capture_call call = { 0 };
	struct capture_resp resp;
	struct xprofs_buf small;
	struct xprofs_store_stat st;
	uint8_t *req = NULL;
	size_t req_len = 0;
	const char *what = NULL;
	char server_name[CAPTURE_MAX_NAME + 1];
	int r, state;

	capture_resp_init(&resp, (struct xprofs_sink){ host_sink_write, h });
	xprofs_buf_init(&small, MAX_SMALL_RESPONSE);

	call.target = h->target;
	call.connect_ms = CONNECT_MS;
	call.cancel = &s->cancel;
	call.deadline_ms = s->deadline_ms;
	switch (s->req->cmd) {
	case CAPTURE_CMD_PROFILE:
		call.method = "/tensorflow.ProfilerService/Profile";
		r = pack_profile_request(s, h, &req, &req_len);
		break;
	case CAPTURE_CMD_SNAPSHOT:
		call.method = "/tensorflow.ProfilerService/GetSnapshot";
		r = pack_snapshot_request(&req, &req_len);
		break;
	case CAPTURE_CMD_CONT_START:
		call.method = "/tensorflow.ProfilerService/StartContinuousProfiling";
		r = pack_profile_request(s, h, &req, &req_len);
		break;
	default:
		call.method = "/tensorflow.ProfilerService/StopContinuousProfiling";
		req = malloc(1); /* Empty message: zero bytes */
		r = req ? 0 : -ENOMEM;
		break;
	}
	if (r < 0) {
		what = "out of memory";
		goto out;
	}
	call.req = req;
	call.req_len = req_len;
	if (h->file) {
		/* fail before profiling rather than after: the file would never be stored */
		r = xprofs_store_stat(c->store, h->file, &st);
		if (r == 0) {
			r = -EEXIST;
			what = "the profile file already exists (not overwritten)";
			goto out;
		}
		call.max_msg = MAX_XSPACE;
		call.ops = &capture_resp_ops;
		call.ops_arg = &resp;
	} else {
		call.max_msg = MAX_SMALL_RESPONSE;
		call.ops = &capture_buf_ops;
		call.ops_arg = &small;
	}
	r = capture_grpc_unary(&call);
	if (r < 0) {
		(void)capture_grpc_errno(&call, &what);
		goto out;
	}
	if (h->file && resp.has_xspace) {
		if (!h->w) {
			/* a present but empty XSpace is still a (tiny) valid profile */
			r = host_sink_write(h, "", 0);
			if (r < 0) {
				what = r == -EEXIST ? "the profile file already exists (not overwritten)"
						    : "storing the profile failed";
				goto out;
			}
		}
		r = xprofs_store_writer_commit(h->w);
		h->w = NULL;
		if (r < 0)
			what = r == -EEXIST ? "the profile file already exists (not overwritten)"
					    : "storing the profile failed";
	}
out:
	state = state_of(r);
	if (r == 0 && h->file && !resp.has_xspace && resp.empty_trace)
		state = ST_EMPTY;
	if (r == 0 && h->file && !resp.has_xspace && !resp.empty_trace &&
	    capture_host_dirname(h->dir, server_name, sizeof(server_name)) == 0) {
		/* an old server ignored emit_xspace and wrote the file itself */
		h->server_file = malloc(strlen(s->repo_root) + strlen(s->session) + strlen(server_name) + 16);
		if (h->server_file)
			sprintf(h->server_file, "%s/%s/%s.xplane.pb", s->repo_root, s->session, server_name);
	}
	xprofs_store_writer_abort(h->w); /* no partial file on any error */
	h->w = NULL;
	pthread_mutex_lock(&c->lock);
	h->state = state;
	h->bytes = resp.xspace_bytes;
	h->grpc_status = call.grpc_status;
	h->by_server = h->server_file != NULL;
	if (r < 0) {
		snprintf(h->error, sizeof(h->error), "%s%s%s", what ? what : strerror(-r),
			 call.grpc_message[0] ? ": " : "", call.grpc_message);
	}
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		xprofs_log(XPROFS_LOG_WARNING, "capture %s/%s from %s: %s", s->run, s->session, h->target,
			   h->error);
	else
		xprofs_info("capture %s/%s from %s: %s, %" PRIu64 " bytes", s->run, s->session, h->target,
			    state_names[state], resp.xspace_bytes);
	free(req);
	xprofs_buf_deinit(&small);
	capture_resp_deinit(&resp);
	return NULL;
}

/* ---- stop: Terminate every host of a session --------------------------- */

/* Terminate(session) on one host; arg: the struct cap_host. */
static void *terminate_main(void *arg)
{
	struct cap_host *h = arg;
	struct cap_session *s = h->s;
	Tensorflow__TerminateRequest treq = TENSORFLOW__TERMINATE_REQUEST__INIT;
	char sid[sizeof(s->session)];
	uint8_t buf[sizeof(sid) + 16];
	struct xprofs_buf small;
	struct capture_call call = {
		.target = h->target,
		.method = "/tensorflow.ProfilerService/Terminate",
		.deadline_ms = TERMINATE_DEADLINE_MS, .connect_ms = 2000,
		.max_msg = MAX_SMALL_RESPONSE, .ops = &capture_buf_ops,
		.cancel = &s->cancel,
	};
	const char *what;

	snprintf(sid, sizeof(sid), "%s", s->session);
	treq.session_id = sid;
	if (tensorflow__terminate_request__get_packed_size(&treq) > sizeof(buf))
		return NULL;
	call.req = buf;
	call.req_len = tensorflow__terminate_request__pack(&treq, buf);
	xprofs_buf_init(&small, MAX_SMALL_RESPONSE);
	call.ops_arg = &small;
	if (capture_grpc_unary(&call) < 0) {
		(void)capture_grpc_errno(&call, &what);
		xprofs_log(XPROFS_LOG_WARNING, "capture %s/%s: Terminate on %s: %s", s->run, s->session,
			   h->target, what);
	}
	xprofs_buf_deinit(&small);
	return NULL;
}

/*
 * Terminate every host of a session in parallel, so one unreachable host
 * (connect timeout) does not delay the others' stop.
 */
static void *stopper_main(void *arg)
{
	struct cap_session *s = arg;
	pthread_t th[CAPTURE_MAX_HOSTS];
	bool started[CAPTURE_MAX_HOSTS];

	for (size_t i = 0; i < s->n_hosts; i++) {
		started[i] = pthread_create(&th[i], NULL, terminate_main, &s->hosts[i]) == 0;
		if (!started[i])
			terminate_main(&s->hosts[i]); /* no thread: do it here */
	}
	for (size_t i = 0; i < s->n_hosts; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	return NULL;
}

/* c->lock held. 0, or -errno when the stopper thread could not start. */
static int request_stop(struct cap_session *s)
{
	int r;

	s->stop_requested = true;
	if (s->finishing || s->stopper_started)
		return 0;
	if (s->req->cmd != CAPTURE_CMD_PROFILE)
		return 0; /* nothing to Terminate; they end by themselves */
	r = pthread_create(&s->stopper, NULL, stopper_main, s);
	if (r)
		return -r;
	s->stopper_started = true;
	return 0;
}

/* ---- coordinator ------------------------------------------------------ */

static void *coord_main(void *arg)
{
	struct cap_session *s = arg;
	struct xprofs_capture *c = s->c;
	int rank[] = { [ST_OK] = 0, [ST_EMPTY] = 1, [ST_UNREACHABLE] = 2, [ST_TIMEOUT] = 3,
		       [ST_ERROR] = 4, [ST_STOPPED] = 0, [ST_RUNNING] = 5 };
	int state = ST_OK;
	bool join_stopper, any_file = false;
	pthread_t stopper;

	for (size_t i = 0; i < s->n_hosts; i++) {
		struct cap_host *h = &s->hosts[i];

		h->started = pthread_create(&h->thread, NULL, host_main, h) == 0;
		if (!h->started) {
			pthread_mutex_lock(&c->lock);
			h->state = ST_ERROR;
			snprintf(h->error, sizeof(h->error), "cannot start a thread");
			pthread_mutex_unlock(&c->lock);
		}
	}
	for (size_t i = 0; i < s->n_hosts; i++)
		if (s->hosts[i].started)
			pthread_join(s->hosts[i].thread, NULL);

	pthread_mutex_lock(&c->lock);
	s->finishing = true;
	join_stopper = s->stopper_started;
	stopper = s->stopper;
	pthread_mutex_unlock(&c->lock);
	if (join_stopper)
		pthread_join(stopper, NULL);

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < s->n_hosts; i++) {
		int hs = s->hosts[i].state;

		if (i == 0 || rank[hs] > rank[state])
			state = hs;
		any_file |= hs == ST_OK;
	}
	if (s->stop_requested && state == ST_OK)
		state = ST_STOPPED;
	pthread_mutex_unlock(&c->lock);

	/* before the state is published, so a reader that sees "ok" finds the files */
	if (any_file && c->notify && s->req->cmd != CAPTURE_CMD_CONT_START &&
	    s->req->cmd != CAPTURE_CMD_CONT_STOP)
		c->notify(c->arg, s->run, s->session);

	pthread_mutex_lock(&c->lock);
	s->state = state;
	s->finished_ns = xprofs_now_ns();
	c->active_hosts -= s->n_hosts;
	for (struct cap_run *r = c->runs; r; r = r->next)
		if (r->running == s)
			r->running = NULL;
	s->done = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ---- submit ----------------------------------------------------------- */

/* A session name not used in @r's history nor present in the store (c->lock held). */
static int pick_session(struct xprofs_capture *c, struct cap_run *r, const char *base, char *out,
			size_t cap)
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
		for (struct cap_session *s = r->head; s && !used; s = s->next)
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
static int start_session(struct xprofs_capture *c, struct cap_run *r, struct capture_req *q,
			 struct xprofs_buf *reason)
{
	struct cap_session *s = NULL;
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
	delay = s->req->has_delay ? s->req->delay_ms : s->n_hosts > 1 ? CAPTURE_MULTI_HOST_DELAY_MS : 0;
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
		struct cap_host *h = &s->hosts[i];

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
			if (asprintf(&h->file, "%s/%s/%s.xplane.pb", pdir, s->session, h->dir) < 0) {
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
	ret = pthread_create(&s->coord, NULL, coord_main, s);
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
	session_free(s);
	return ret;
}

int xprofs_capture_submit(struct xprofs_capture *c, const char *run, const char *line, size_t len,
			  struct xprofs_buf *reason)
{
	struct capture_req *reqs[MAX_LINES] = { 0 };
	struct xprofs_buf why;
	size_t nreq = 0, pos = 0;
	const char *bad_line = line;
	size_t bad_len = len;
	int ret = 0;

	xprofs_buf_init(&why, 4096);
	if (run && run[0] && !capture_run_valid(run, strlen(run))) {
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
			(void)!xprofs_buf_printf(&why, "run= is only for the top-level control file");
			ret = -EINVAL;
		}
		if (ret == 0 && nreq == MAX_LINES) {
			(void)!xprofs_buf_printf(&why, "too many lines at once (at most %d)", MAX_LINES);
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
	reap(c);
	for (size_t i = 0; i < nreq && ret == 0; i++) {
		struct capture_req *q = reqs[i];
		const char *rn = run ? run : q->has_run ? q->run : CAPTURE_DEFAULT_RUN;
		struct cap_run *r;

		bad_line = line;
		bad_len = len;
		if (c->closing) {
			ret = -ESHUTDOWN;
			break;
		}
		if (q->cmd == CAPTURE_CMD_STOP) {
			size_t stopped = 0;

			for (r = c->runs; r; r = r->next) {
				if (!r->running || (strcmp(r->run, rn) != 0 && (run || q->has_run)))
					continue;
				ret = request_stop(r->running);
				if (ret < 0)
					break;
				stopped++;
			}
			if (ret == 0 && stopped == 0) {
				(void)!xprofs_buf_printf(&why, "no capture is running%s%s", run || q->has_run ? " in run " : "",
							 run || q->has_run ? rn : "");
				ret = -ESRCH;
			}
			continue;
		}
		r = run_find(c, rn, true);
		if (!r) {
			ret = -ENOMEM;
			break;
		}
		if (r->running) {
			(void)!xprofs_buf_printf(&why, "a capture of run '%s' is already running (session %s); write 'stop' to end it early",
						 rn, r->running->session);
			ret = -EBUSY;
			break;
		}
		reqs[i] = NULL;
		ret = start_session(c, r, q, &why);
	}
	pthread_mutex_unlock(&c->lock);
out:
	if (ret < 0) {
		const char *msg = why.len ? why.data : strerror(-ret);

		if (reason)
			(void)!xprofs_buf_adds(reason, msg);
		pthread_mutex_lock(&c->lock);
		if (run) {
			struct cap_run *r = run_find(c, run, true);

			if (r)
				(void)set_rejection(&r->rej_line, &r->rej_reason, bad_line, bad_len, msg);
		} else {
			(void)set_rejection(&c->rej_line, &c->rej_reason, bad_line, bad_len, msg);
		}
		pthread_mutex_unlock(&c->lock);
		xprofs_info("capture: rejected '%.*s': %s", (int)(bad_len > 200 ? 200 : bad_len), bad_line, msg);
	}
	for (size_t i = 0; i < nreq; i++)
		free(reqs[i]);
	xprofs_buf_deinit(&why);
	return ret;
}

/* ---- status ----------------------------------------------------------- */

static int session_json(const struct cap_session *s, struct xprofs_buf *out)
{
	char t[96];
	int r;

	r = xprofs_buf_printf(out, "{\"id\":%" PRIu64 ",\"command\":\"%s\",\"run\":", s->id,
			      cmd_names[s->req->cmd]);
	r = r ? r : xprofs_buf_add_json_str(out, s->run, strlen(s->run));
	r = r ? r : xprofs_buf_adds(out, ",\"session\":");
	r = r ? r : xprofs_buf_add_json_str(out, s->session, strlen(s->session));
	r = r ? r : xprofs_buf_printf(out, ",\"state\":\"%s\",\"hosts\":[", state_names[s->state]);
	for (size_t i = 0; i < s->n_hosts && r == 0; i++) {
		const struct cap_host *h = &s->hosts[i];
		const char *file = h->by_server ? h->server_file : h->state == ST_OK ? h->file : NULL;

		r = xprofs_buf_adds(out, i ? ",{\"host\":" : "{\"host\":");
		r = r ? r : xprofs_buf_add_json_str(out, h->target, strlen(h->target));
		r = r ? r : xprofs_buf_printf(out, ",\"state\":\"%s\",\"bytes\":%" PRIu64 ",\"error\":",
					   state_names[h->state], h->bytes);
		if (h->error[0])
			r = r ? r : xprofs_buf_add_json_str(out, h->error, strlen(h->error));
		else
			r = r ? r : xprofs_buf_adds(out, "null");
		if (h->grpc_status >= 0)
			r = r ? r : xprofs_buf_printf(out, ",\"grpc_status\":%d", h->grpc_status);
		else
			r = r ? r : xprofs_buf_adds(out, ",\"grpc_status\":null");
		r = r ? r : xprofs_buf_adds(out, ",\"file\":");
		if (file)
			r = r ? r : xprofs_buf_add_json_str(out, file, strlen(file));
		else
			r = r ? r : xprofs_buf_adds(out, "null");
		if (h->by_server)
			r = r ? r : xprofs_buf_adds(out, ",\"note\":\"written by server\"");
		r = r ? r : xprofs_buf_adds(out, "}");
	}
	fmt_time(s->started_ns, t, sizeof(t));
	r = r ? r : xprofs_buf_printf(out, "],\"started\":\"%s\",\"finished\":", t);
	if (s->done || s->state != ST_RUNNING) {
		fmt_time(s->finished_ns, t, sizeof(t));
		r = r ? r : xprofs_buf_printf(out, "\"%s\"", t);
	} else {
		r = r ? r : xprofs_buf_adds(out, "null");
	}
	r = r ? r : xprofs_buf_printf(out, ",\"duration_ms\":%" PRIu64 ",\"deadline_ms\":%" PRIu64 "}\n",
				   s->req->duration_ms, s->deadline_ms);
	return r;
}

static int cmp_id(const void *a, const void *b)
{
	const struct cap_session *x = *(const struct cap_session *const *)a;
	const struct cap_session *y = *(const struct cap_session *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int rejection_json(const char *line, const char *reason, struct xprofs_buf *out)
{
	int r;

	if (!line)
		return 0;
	r = xprofs_buf_adds(out, "{\"rejected\":");
	r = r ? r : xprofs_buf_add_json_str(out, line, strlen(line));
	r = r ? r : xprofs_buf_adds(out, ",\"reason\":");
	r = r ? r : xprofs_buf_add_json_str(out, reason, strlen(reason));
	r = r ? r : xprofs_buf_adds(out, "}\n");
	return r;
}

int xprofs_capture_status(struct xprofs_capture *c, const char *run, struct xprofs_buf *out)
{
	struct cap_session **all = NULL;
	size_t n = 0, cap = 0;
	const char *rl = NULL, *rr = NULL;
	int r = 0;

	pthread_mutex_lock(&c->lock);
	for (struct cap_run *cr = c->runs; cr; cr = cr->next) {
		if (run && strcmp(cr->run, run) != 0)
			continue;
		if (run) {
			rl = cr->rej_line;
			rr = cr->rej_reason;
		}
		for (struct cap_session *s = cr->head; s; s = s->next) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct cap_session **na = realloc(all, nc * sizeof(*na));

				if (!na) {
					r = -ENOMEM;
					goto out;
				}
				all = na;
				cap = nc;
			}
			all[n++] = s;
		}
	}
	if (!run) {
		rl = c->rej_line;
		rr = c->rej_reason;
	}
	if (n == 0)
		r = xprofs_buf_adds(out, xprofs_capture_help());
	if (n > 1)
		qsort(all, n, sizeof(*all), cmp_id);
	for (size_t i = 0; i < n && r == 0; i++)
		r = session_json(all[i], out);
	r = r ? r : rejection_json(rl, rr, out);
out:
	pthread_mutex_unlock(&c->lock);
	free(all);
	return r;
}

const char *xprofs_capture_help(void)
{
	return "# xprofs capture control file: write one line to capture a profile from a\n"
	       "# running workload's profiler server (jax.profiler.start_server(PORT),\n"
	       "# tf.profiler.experimental.server.start(PORT), torch_xla ... start_server(PORT)).\n"
	       "#\n"
	       "#   [run=NAME] HOST:PORT[,HOST:PORT...] [duration_ms=N] [host_tracer_level=N]\n"
	       "#       [device_tracer_level=N] [python_tracer_level=N] [delay_ms=N]\n"
	       "#       [session=NAME] [host=NAME] [deadline_ms=N] [KEY=VALUE ...]\n"
	       "#   [run=NAME] stop                         Terminate the running capture; its data is kept\n"
	       "#   [run=NAME] snapshot HOST:PORT[,...]     profile of the recent past (continuous mode)\n"
	       "#   [run=NAME] continuous start HOST:PORT[,...] [options]\n"
	       "#   [run=NAME] continuous stop HOST:PORT[,...]\n"
	       "#\n"
	       "# duration_ms 1..3600000 (default 1000); host_tracer_level 0..3 (2),\n"
	       "# device_tracer_level 0..2 (1), python_tracer_level 0..1 (0);\n"
	       "# delay_ms 0..600000: start all hosts together this much later (default 0 for\n"
	       "# one host, 3000 for several); deadline_ms 1000..86400000 (default\n"
	       "# max(60000, 2*duration_ms + delay_ms + 10000)). session= names the session\n"
	       "# directory (default: local time YYYY_MM_DD_HH_MM_SS, made unique); host= names\n"
	       "# the host file (default HOST_PORT; one host only). Any other KEY=VALUE goes\n"
	       "# to ProfileOptions.advanced_configuration (integer, true/false, or string).\n"
	       "# run= (top-level file only; default \"" CAPTURE_DEFAULT_RUN "\", \".\" = the logdir\n"
	       "# root) may be nested (a/b). A top-level 'stop' without run= stops every run.\n"
	       "# Files: logdir/<run>/plugins/profile/<session>/<host>.xplane.pb, never\n"
	       "# overwritten. Read this file again for the captures' status (JSON lines).\n";
}

/* ---- lifecycle -------------------------------------------------------- */

int xprofs_capture_new(struct xprofs_store *store, xprofs_capture_notify_fn notify, void *arg,
		       struct xprofs_capture **out)
{
	struct xprofs_capture *c;
	pthread_condattr_t ca;
	int r;

	if (!store)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		r = -ENOMEM;
		goto err_free;
	}
	c->store = store;
	c->notify = notify;
	c->arg = arg;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = c;
	return 0;
err_free:
	free(c);
	return r;
}

static bool any_running(struct xprofs_capture *c)
{
	for (struct cap_run *r = c->runs; r; r = r->next)
		for (struct cap_session *s = r->head; s; s = s->next)
			if (!s->done)
				return true;
	return false;
}

struct xprofs_capture *xprofs_capture_free(struct xprofs_capture *c)
{
	struct timespec ts;
	struct cap_run *r, *n;

	if (!c)
		return NULL;
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	for (r = c->runs; r; r = r->next)
		for (struct cap_session *s = r->head; s; s = s->next)
			if (!s->done)
				(void)request_stop(s);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += FREE_GRACE_MS / 1000;
	while (any_running(c))
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT)
			break;
	for (r = c->runs; r; r = r->next)
		for (struct cap_session *s = r->head; s; s = s->next)
			atomic_store(&s->cancel, 1);
	pthread_mutex_unlock(&c->lock);

	/* joins without the lock: coordinators take it to publish */
	for (r = c->runs; r; r = r->next)
		for (struct cap_session *s = r->head; s; s = s->next)
			if (s->coord_started && !s->joined) {
				pthread_join(s->coord, NULL);
				s->joined = true;
			}
	for (r = c->runs; r; r = n) {
		n = r->next;
		run_free(r);
	}
	free(c->rej_line);
	free(c->rej_reason);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	curl_global_cleanup();
	free(c);
	return NULL;
}
