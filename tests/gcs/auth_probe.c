/*
 * tests/gcs/auth_probe.c - drives gcs/auth.c for the credential-flow tests
 * (test_auth_flows.py): resolves credentials in ADC order exactly as a mount
 * does, then asks for the Authorization header several times, optionally
 * sleeping between calls and from several threads at once, and prints each
 * header on stdout. TEST TOOL ONLY: it prints tokens, which the library
 * itself never does.
 *
 *   auth-probe [-c CREDS] [-e ENDPOINT] [-a] [-n CALLS] [-s SLEEP_MS] [-t THREADS]
 * Exit status: 0, or the errno of the first failure (so tests can assert it).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "auth-internal.h"

struct probe {
	struct gcs_auth *auth;
	pthread_mutex_t out_lock;
	int err;
};

static void *probe_thread(void *arg)
{
	struct probe *p = arg;
	struct xprofs_buf b;
	int r;

	xprofs_buf_init(&b, 8192);
	r = gcs_auth_header(p->auth, &b);
	pthread_mutex_lock(&p->out_lock);
	if (r < 0 && !p->err)
		p->err = -r;
	printf("%s%s\n", r < 0 ? "error " : "header ", r < 0 ? strerror(-r) : b.data ? b.data : "");
	pthread_mutex_unlock(&p->out_lock);
	xprofs_buf_deinit(&b);
	return NULL;
}

int main(int argc, char **argv)
{
	struct xprofs_gcs_options o = {0};
	struct probe p = {.out_lock = PTHREAD_MUTEX_INITIALIZER};
	unsigned calls = 1, sleep_ms = 0, threads = 1, i, t;
	pthread_t tid[16];
	int c, r;

	while ((c = getopt(argc, argv, "c:e:an:s:t:v")) != -1) {
		switch (c) {
		case 'c':
			o.credentials = optarg;
			break;
		case 'e':
			o.endpoint = optarg;
			break;
		case 'a':
			o.anonymous = true;
			break;
		case 'n':
			calls = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 's':
			sleep_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'v':
			xprofs_log_set_level(XPROFS_LOG_DEBUG);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-c CREDS] [-e ENDPOINT] [-a] [-n N] [-s MS] [-t "
				"THREADS] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (threads < 1 || threads > 16)
		threads = 1;
	/* libcurl's global state belongs to the program, not to the library */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return ENOMEM;
	r = gcs_auth_new(&o, &p.auth);
	if (r < 0) {
		printf("new-error %s\n", strerror(-r));
		curl_global_cleanup();
		return -r;
	}
	printf("kind %s\n", gcs_auth_kind(p.auth));
	fflush(stdout);
	for (i = 0; i < calls; i++) {
		if (i && sleep_ms)
			usleep(sleep_ms * 1000u);
		for (t = 0; t < threads; t++)
			if (pthread_create(&tid[t], NULL, probe_thread, &p) != 0)
				return EAGAIN;
		for (t = 0; t < threads; t++)
			pthread_join(tid[t], NULL);
		fflush(stdout);
	}
	gcs_auth_free(p.auth);
	curl_global_cleanup();
	return p.err;
}
