/*
 * status.c - the control file's text: the grammar (help) until the first
 * capture, then one JSON object per line per recent session, newest last,
 * plus the last rejected line. Reads the manager's state under c->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture-internal.h"

#define XPROFS_CAPTURE_MAX_LINE_STR "8192"
_Static_assert(CAPTURE_MAX_LINE == 8192, "the help text says 8192");

const char *const capture_state_names[] = {
	[ST_RUNNING] = "running",         [ST_OK] = "ok",           [ST_EMPTY] = "empty",
	[ST_UNREACHABLE] = "unreachable", [ST_TIMEOUT] = "timeout", [ST_ERROR] = "error",
	[ST_STOPPED] = "stopped",
};

static const char *const cmd_names[] = {
	[CAPTURE_CMD_PROFILE] = "profile",           [CAPTURE_CMD_STOP] = "stop",
	[CAPTURE_CMD_SNAPSHOT] = "snapshot",         [CAPTURE_CMD_CONT_START] = "continuous start",
	[CAPTURE_CMD_CONT_STOP] = "continuous stop",
};

static void fmt_time(int64_t ns, char *out, size_t cap)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns % 1000000000 / 1000000));
}

/* ---- status ----------------------------------------------------------- */

static int session_json(const struct capture_session *s, struct xprofs_buf *out)
{
	char t[96], note[160];
	int r;

	r = xprofs_buf_printf(out, "{\"id\":%" PRIu64 ",\"command\":\"%s\",\"run\":", s->id,
			      cmd_names[s->req->cmd]);
	r = r ? r : xprofs_buf_add_json_str(out, s->run, strlen(s->run));
	r = r ? r : xprofs_buf_add_json_member(out, ",\"session\":", s->session);
	r = r ? r
	      : xprofs_buf_printf(out, ",\"state\":\"%s\",\"hosts\":[",
				  capture_state_names[s->state]);
	for (size_t i = 0; i < s->n_hosts && r == 0; i++) {
		const struct capture_host *h = &s->hosts[i];
		const char *file = h->by_server        ? h->server_file
				   : h->state == ST_OK ? h->file
						       : NULL;

		r = xprofs_buf_add_json_member(out, i ? ",{\"host\":" : "{\"host\":", h->target);
		r = r ? r
		      : xprofs_buf_printf(out, ",\"state\":\"%s\",\"bytes\":%" PRIu64 ",\"error\":",
					  capture_state_names[h->state], h->bytes);
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
	r = r ? r
	      : xprofs_buf_printf(out, ",\"duration_ms\":%" PRIu64 ",\"deadline_ms\":%" PRIu64,
				  s->req->duration_ms, s->deadline_ms);
	if (s->new_run) {
		r = r ? r : xprofs_buf_adds(out, ",\"new_run\":true,\"note\":");
		snprintf(note, sizeof(note),
			 "run '%.40s%s' did not exist: it is created when a host's data arrives",
			 s->run[0] ? s->run : ".", strlen(s->run) > 40 ? "..." : "");
		r = r ? r : xprofs_buf_add_json_str(out, note, strlen(note));
	}
	r = r ? r : xprofs_buf_adds(out, "}\n");
	return r;
}

static int cmp_id(const void *a, const void *b)
{
	const struct capture_session *x = *(const struct capture_session *const *)a;
	const struct capture_session *y = *(const struct capture_session *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* rejections_json() - the refused lines of @q, oldest first, with reasons and times. */
static int rejections_json(const struct capture_rejects *q, struct xprofs_buf *out)
{
	char t[96];
	int r = 0;

	for (unsigned k = 0; k < q->n && r == 0; k++) {
		unsigned i = (q->next + CAPTURE_REJECTS - q->n + k) % CAPTURE_REJECTS;

		fmt_time(q->e[i].at_ns, t, sizeof(t));
		r = xprofs_buf_add_json_member(out, "{\"rejected\":", q->e[i].line);
		r = r ? r : xprofs_buf_add_json_member(out, ",\"reason\":", q->e[i].reason);
		r = r ? r : xprofs_buf_printf(out, ",\"at\":\"%s\"}\n", t);
	}
	return r;
}

/*
 * c->lock held: the sessions of @run (NULL: every run), oldest first, into
 * *@all (caller frees) and *@n.
 */
static int sessions_sorted(struct xprofs_capture *c, const char *run, struct capture_session ***all,
			   size_t *n)
{
	size_t cap = 0;
	int r;

	*all = NULL;
	*n = 0;
	for (struct capture_run *cr = c->runs; cr; cr = cr->next) {
		if (run && strcmp(cr->run, run) != 0)
			continue;
		for (struct capture_session *s = cr->head; s; s = s->next) {
			if ((r = xprofs_grow(all, &cap, *n, sizeof(**all), 64)) < 0)
				return r;
			(*all)[(*n)++] = s;
		}
	}
	if (*n > 1)
		qsort(*all, *n, sizeof(**all), cmp_id);
	return 0;
}

int xprofs_capture_status(struct xprofs_capture *c, const char *run, struct xprofs_buf *out)
{
	struct capture_session **all = NULL;
	const struct capture_rejects *rej = NULL;
	size_t n = 0;
	int r;

	pthread_mutex_lock(&c->lock);
	if ((r = sessions_sorted(c, run, &all, &n)) < 0)
		goto out;
	if (!run)
		rej = &c->rej;
	for (struct capture_run *cr = c->runs; run && cr; cr = cr->next)
		if (!strcmp(cr->run, run))
			rej = &cr->rej;
	if (n == 0)
		r = xprofs_buf_adds(out, xprofs_capture_help());
	for (size_t i = 0; i < n && r == 0; i++)
		r = session_json(all[i], out);
	if (rej)
		r = r ? r : rejections_json(rej, out);
out:
	pthread_mutex_unlock(&c->lock);
	free(all);
	return r;
}

/* Turn the newline-ended JSON objects appended to @out since @from into array elements. */
static void lines_to_elements(struct xprofs_buf *out, size_t from)
{
	for (size_t i = from; i < out->len; i++)
		if (out->data[i] == '\n')
			out->data[i] = ',';
	if (out->len > from && out->data[out->len - 1] == ',')
		out->len--;
}

/* The refused lines of @q as a JSON array. */
static int rejections_array(const struct capture_rejects *q, struct xprofs_buf *out)
{
	size_t at;
	int r = xprofs_buf_adds(out, "[");

	at = out->len;
	r = r ? r : rejections_json(q, out);
	if (r == 0)
		lines_to_elements(out, at);
	return r ? r : xprofs_buf_adds(out, "]");
}

int xprofs_capture_status_json(struct xprofs_capture *c, struct xprofs_buf *out)
{
	struct capture_session **all = NULL;
	size_t n = 0, at;
	int r;

	pthread_mutex_lock(&c->lock);
	if ((r = sessions_sorted(c, NULL, &all, &n)) < 0)
		goto out;
	r = xprofs_buf_adds(out, "{\"captures\":[");
	at = out->len;
	for (size_t i = 0; i < n && r == 0; i++)
		r = session_json(all[i], out);
	if (r == 0)
		lines_to_elements(out, at);
	r = r ? r : xprofs_buf_adds(out, "],\"rejections\":{\"capture\":");
	r = r ? r : rejections_array(&c->rej, out);
	for (struct capture_run *cr = c->runs; cr && r == 0; cr = cr->next) {
		if (!cr->rej.n)
			continue;
		r = xprofs_buf_adds(out, ",");
		r = r ? r : xprofs_buf_add_json_str(out, cr->run, strlen(cr->run));
		r = r ? r : xprofs_buf_adds(out, ":");
		r = r ? r : rejections_array(&cr->rej, out);
	}
	r = r ? r : xprofs_buf_adds(out, "}}");
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
	       "#       [session=NAME] [host=NAME] [deadline_ms=N] [advanced.KEY=VALUE ...]\n"
	       "#   [run=NAME] stop                         Terminate the running capture; its "
	       "data is kept\n"
	       "#   [run=NAME] snapshot HOST:PORT[,...]     profile of the recent past (continuous "
	       "mode)\n"
	       "#   [run=NAME] continuous start HOST:PORT[,...] [options]\n"
	       "#   [run=NAME] continuous stop HOST:PORT[,...]\n"
	       "#\n"
	       "# duration_ms 1..3600000 (default 1000); host_tracer_level 0..3 (2),\n"
	       "# device_tracer_level 0..2 (1), python_tracer_level 0..1 (0);\n"
	       "# delay_ms 0..600000: start all hosts together this much later (default 0 for\n"
	       "# one host, 3000 for several); deadline_ms 1000..86400000 (default\n"
	       "# max(60000, 2*duration_ms + delay_ms + 10000)). session= names the session\n"
	       "# directory (default: local time YYYY_MM_DD_HH_MM_SS, made unique); host= names\n"
	       "# the host file (default HOST_PORT; one host only). advanced.KEY=VALUE goes to\n"
	       "# ProfileOptions.advanced_configuration[KEY] (integer, true/false, or string);\n"
	       "# any other KEY=VALUE is refused.\n"
	       "# run= (top-level file only; default \"" CAPTURE_DEFAULT_RUN
	       "\", \".\" = the logdir\n"
	       "# root) may be nested (a/b). A top-level 'stop' without run= stops every run.\n"
	       "# Files: logdir/<run>/plugins/profile/<session>/<host>.xplane.pb, never\n"
	       "# overwritten. Read this file again for the captures' status (JSON lines)\n"
	       "# and the last 8 refused lines with their reasons.\n"
	       "# A command is a line: bytes are collected per open file until a newline or\n"
	       "# close(); several lines in one write are several commands; a line is at\n"
	       "# most " XPROFS_CAPTURE_MAX_LINE_STR " bytes.\n";
}
