/*
 * capture_drive.c - drives a real capture manager over a local store without
 * FUSE, for the integration tests (test_capture.py's "driver" mode; the
 * "mount" mode goes through the daemon instead). Commands on stdin, one per
 * line; answers on stdout:
 *
 *   submit RUN|- LINE...   -> "ret <int> <reason>"
 *   status RUN|-           -> the status text, then ".end"
 *   notified               -> "notified <count> <last run>/<last session>"
 *   call METHOD HOST:PORT  -> one raw unary call with an empty request:
 *                             "call <errno> <grpc status> <curl code> <what>"
 *   quit                   -> frees the manager, "bye <ms it took>"
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "capture-internal.h"
#include "xprofs/capture.h"
#include "xprofs/store.h"

static pthread_mutex_t nlock = PTHREAD_MUTEX_INITIALIZER;
static int n_notified;
static char last[2048];

static void on_notify(void *arg, const char *run, const char *session)
{
	pthread_mutex_lock(&nlock);
	n_notified++;
	snprintf(last, sizeof(last), "%s/%s", run, session);
	pthread_mutex_unlock(&nlock);
}

int main(int argc, char **argv)
{
	struct xprofs_store *st = NULL;
	struct xprofs_capture *c = NULL;
	char line[16384];
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: capture-drive LOGDIR\n");
		return 2;
	}
	xprofs_log_set_level(getenv("XPROFS_DEBUG") ? XPROFS_LOG_DEBUG : XPROFS_LOG_INFO);
	/* The library leaves libcurl's global state to the program. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	r = xprofs_store_local_new(argv[1], &st);
	if (r == 0)
		r = xprofs_capture_new(st, on_notify, NULL, &c);
	if (r < 0) {
		fprintf(stderr, "capture-drive: %s\n", strerror(-r));
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char *nl = strchr(line, '\n'), *run, *rest;

		if (nl)
			*nl = '\0';
		if (strncmp(line, "submit ", 7) == 0) {
			struct xprofs_buf why;

			run = line + 7;
			rest = strchr(run, ' ');
			if (!rest)
				rest = run + strlen(run);
			else
				*rest++ = '\0';
			xprofs_buf_init(&why, 4096);
			r = xprofs_capture_submit(c, strcmp(run, "-") ? run : NULL, rest,
						  strlen(rest), &why);
			printf("ret %d %s\n", r, why.len ? why.data : "");
			xprofs_buf_deinit(&why);
		} else if (strncmp(line, "status ", 7) == 0) {
			struct xprofs_buf out;

			run = line + 7;
			xprofs_buf_init(&out, 1 << 24);
			r = xprofs_capture_status(c, strcmp(run, "-") ? run : NULL, &out);
			printf("%s.end %d\n", out.len ? out.data : "", r);
			xprofs_buf_deinit(&out);
		} else if (strcmp(line, "notified") == 0) {
			pthread_mutex_lock(&nlock);
			printf("notified %d %s\n", n_notified, last);
			pthread_mutex_unlock(&nlock);
		} else if (strncmp(line, "call ", 5) == 0) {
			struct xprofs_buf resp;
			struct capture_call call = {0};
			const char *what = "";
			char *target = strchr(line + 5, ' ');

			if (!target) {
				printf("error usage\n");
				continue;
			}
			*target++ = '\0';
			xprofs_buf_init(&resp, 1 << 20);
			call.target = target;
			call.method = line + 5;
			call.req = (const uint8_t *)"";
			call.deadline_ms = 10000;
			call.connect_ms = 2000;
			call.max_msg = 1 << 20;
			call.ops = &capture_buf_ops;
			call.ops_arg = &resp;
			r = capture_grpc_unary(&call);
			(void)capture_grpc_errno(&call, &what);
			printf("call %d %d %d %s\n", r, call.grpc_status, call.curl_code, what);
			xprofs_buf_deinit(&resp);
		} else if (strcmp(line, "quit") == 0) {
			break;
		} else {
			printf("error unknown command\n");
		}
	}
	{
		int64_t t0 = xprofs_mono_ns();

		xprofs_capture_free(c);
		printf("bye %lld\n", (long long)((xprofs_mono_ns() - t0) / 1000000));
	}
	xprofs_store_free(st);
	curl_global_cleanup();
	return 0;
}
