/*
 * session.c - the threads of one capture session: a coordinator per
 * accepted line, which starts one host thread per server (all with the same
 * start timestamp), joins them, optionally joins a stopper thread, calls
 * the notify callback and publishes the final state.
 *
 * A host's XSpace is streamed from the gRPC response straight into a store
 * writer made lazily with XPROFS_STORE_EXCL on the first byte: an existing
 * file is never overwritten, an empty trace creates nothing, and any error
 * aborts the writer so no partial file is left. `stop` never cancels an RPC
 * (that would discard the data): it sends Terminate(session_id) to all hosts
 * in parallel (stopper thread), each with a 2 s connect and 10 s call
 * deadline, so the server ends the capture early and returns it normally.
 *
 * Locking: a host thread touches its own writer without c->lock and
 * publishes results under it; notify() is called without it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture-internal.h"

#include "profiler_service.pb-c.h"

#define CONNECT_MS 5000
#define TERMINATE_DEADLINE_MS 10000
#define MAX_XSPACE ((uint64_t)UINT32_MAX) /* a gRPC message length is 32 bits */
#define MAX_SMALL_RESPONSE (1u << 20)

/* ---- host side -------------------------------------------------------- */

/* struct xprofs_sink write(): lazily create the EXCL writer, then append. */
static int host_sink_write(void *arg, const void *p, size_t n)
{
	struct capture_host *h = arg;
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
static int pack_profile_request(const struct capture_session *s, const struct capture_host *h,
				uint8_t **out, size_t *len)
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
			vals[i].value_case =
				TENSORFLOW__PROFILE_OPTIONS__ADVANCED_CONFIG_VALUE__VALUE_BOOL_VALUE;
			vals[i].bool_value = q->adv[i].b;
			break;
		case CAPTURE_ADV_INT:
			vals[i].value_case =
				TENSORFLOW__PROFILE_OPTIONS__ADVANCED_CONFIG_VALUE__VALUE_INT64_VALUE;
			vals[i].int64_value = q->adv[i].i;
			break;
		default:
			vals[i].value_case =
				TENSORFLOW__PROFILE_OPTIONS__ADVANCED_CONFIG_VALUE__VALUE_STRING_VALUE;
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
	case 0:
		return ST_OK;
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
		return ST_UNREACHABLE;
	case -ETIMEDOUT:
		return ST_TIMEOUT;
	default:
		return ST_ERROR;
	}
}

/* store_error() - the text of a store failure @r, with its errno text, in @buf. */
static const char *store_error(int r, char *buf, size_t n)
{
	if (r == -EEXIST)
		return "the profile file already exists (not overwritten)";
	snprintf(buf, n, "storing the profile failed: %s", strerror(-r));
	return buf;
}

static void *host_main(void *arg)
{
	struct capture_host *h = arg;
	struct capture_session *s = h->s;
	struct xprofs_capture *c = s->c;
	struct capture_call call = {0};
	struct capture_resp resp;
	struct xprofs_buf small;
	struct xprofs_store_stat st;
	uint8_t *req = NULL;
	size_t req_len = 0;
	const char *what = NULL;
	char server_name[CAPTURE_MAX_NAME + 1];
	char whatbuf[160];
	int r, state;

	capture_resp_init(&resp, (struct xprofs_sink){.write = host_sink_write, .arg = h});
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
		if (r == call.stream_err && r != -EMSGSIZE && r != -EPROTO)
			what = store_error(r, whatbuf,
					   sizeof(whatbuf)); /* from host_sink_write() */
		goto out;
	}
	if (h->file && resp.has_xspace) {
		if (!h->w) {
			/* a present but empty XSpace is still a (tiny) valid profile */
			r = host_sink_write(h, "", 0);
			if (r < 0) {
				what = store_error(r, whatbuf, sizeof(whatbuf));
				goto out;
			}
		}
		r = xprofs_store_writer_commit(h->w);
		h->w = NULL;
		if (r < 0)
			what = store_error(r, whatbuf, sizeof(whatbuf));
	}
out:
	state = state_of(r);
	if (r == 0 && h->file && !resp.has_xspace && resp.empty_trace)
		state = ST_EMPTY;
	if (r == 0 && h->file && !resp.has_xspace && !resp.empty_trace &&
	    capture_host_dirname(h->dir, server_name, sizeof(server_name)) == 0) {
		/* an old server ignored emit_xspace and wrote the file itself */
		h->server_file = malloc(strlen(s->repo_root) + strlen(s->session) +
					strlen(server_name) + 16);
		if (h->server_file)
			sprintf(h->server_file, "%s/%s/%s.xplane.pb", s->repo_root, s->session,
				server_name);
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
		xprofs_log(XPROFS_LOG_WARNING, "capture %s/%s from %s: %s", s->run, s->session,
			   h->target, h->error);
	else
		xprofs_info("capture %s/%s from %s: %s, %" PRIu64 " bytes", s->run, s->session,
			    h->target, capture_state_names[state], resp.xspace_bytes);
	free(req);
	xprofs_buf_deinit(&small);
	capture_resp_deinit(&resp);
	return NULL;
}

/* ---- stop: Terminate every host of a session --------------------------- */

/* Terminate(session) on one host; arg: the struct capture_host. */
static void *terminate_main(void *arg)
{
	struct capture_host *h = arg;
	struct capture_session *s = h->s;
	Tensorflow__TerminateRequest treq = TENSORFLOW__TERMINATE_REQUEST__INIT;
	char sid[sizeof(s->session)];
	uint8_t buf[sizeof(sid) + 16];
	struct xprofs_buf small;
	struct capture_call call = {
		.target = h->target,
		.method = "/tensorflow.ProfilerService/Terminate",
		.deadline_ms = TERMINATE_DEADLINE_MS,
		.connect_ms = 2000,
		.max_msg = MAX_SMALL_RESPONSE,
		.ops = &capture_buf_ops,
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
		xprofs_log(XPROFS_LOG_WARNING, "capture %s/%s: Terminate on %s: %s", s->run,
			   s->session, h->target, what);
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
	struct capture_session *s = arg;
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
int capture_request_stop(struct capture_session *s)
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

void *capture_coord_main(void *arg)
{
	struct capture_session *s = arg;
	struct xprofs_capture *c = s->c;
	int rank[] = {[ST_OK] = 0,    [ST_EMPTY] = 1,   [ST_UNREACHABLE] = 2, [ST_TIMEOUT] = 3,
		      [ST_ERROR] = 4, [ST_STOPPED] = 0, [ST_RUNNING] = 5};
	int state = ST_OK;
	bool join_stopper, any_file = false;
	pthread_t stopper;

	for (size_t i = 0; i < s->n_hosts; i++) {
		struct capture_host *h = &s->hosts[i];

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
	for (struct capture_run *r = c->runs; r; r = r->next)
		if (r->running == s)
			r->running = NULL;
	s->done = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}
