/*
 * demo.c - output files: one host file, a multi-host session in a logdir,
 * and the small demo logdir.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

/* ---- files and directories ------------------------------------------- */

/*
 * Generates one host file at @path ("-" = stdout) with @events events, or
 * sized to @size unless @have_events; appends its stats record to @j if set.
 * Borrows @path, @host and @j.
 */
int gen_file(const char *path, enum kind kind, uint64_t seed, unsigned flags, const char *host,
	     uint64_t size, uint64_t events, bool have_events, struct xprofs_buf *j)
{
	struct gspace *s = calloc(1, sizeof(*s));
	struct out o = {.fd = -1};
	struct gstats st;
	char *tmp = NULL;
	int ret;

	if (!s)
		return -ENOMEM;
	if (!have_events) {
		ret = gen_events_for_size(kind, seed, flags, host, size, &events);
		if (ret)
			goto out;
	}
	ret = gen_plan_build(s, kind, seed, host, events, flags);
	if (ret)
		goto out;
	o.buf = malloc(OUT_BUF_BYTES);
	if (!o.buf) {
		ret = -ENOMEM;
		goto out_plan;
	}
	if (!strcmp(path, "-")) {
		o.fd = STDOUT_FILENO;
	} else {
		/* write beside and rename, so readers never see a partial profile */
		const char *slash = strrchr(path, '/');

		if (slash && slash != path) { /* -o into a directory not made yet: make it */
			char *dir = strndup(path, (size_t)(slash - path));

			ret = dir ? xprofs_mkdir_p(dir) : -ENOMEM;
			free(dir);
			if (ret)
				goto out_buf;
		}
		if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0) {
			tmp = NULL;
			ret = -ENOMEM;
			goto out_buf;
		}
		o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (o.fd < 0) {
			ret = -errno;
			goto out_buf;
		}
	}
	ret = gen_space_write(s, &o, &st);
	if (!ret && st.bytes != o.total) {
		xprofs_err("xprofs-gen: internal error: sized %" PRIu64 " wrote %" PRIu64, st.bytes,
			   o.total);
		ret = -EPROTO;
	}
	if (tmp) {
		if (close(o.fd) < 0 && !ret)
			ret = -errno;
		if (!ret && rename(tmp, path) < 0)
			ret = -errno;
		if (ret)
			unlink(tmp);
	}
	if (!ret && j)
		ret = gen_stats_json(s, path, &st, j);
out_buf:
	free(tmp);
	free(o.buf);
out_plan:
	gen_plan_free(s);
out:
	free(s);
	return ret;
}

static int write_small(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ret;

	if (fd < 0)
		return -errno;
	ret = xprofs_write_full(fd, p, n);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

/*
 * Writes one session directory <logdir>/<run>/plugins/profile/<session>/
 * (all strings borrowed) with @hosts hosts named <@host_prefix><index> and, when @sidecars, one
 * <module>.gen_hlo_proto.pb per module.
 */
int gen_session(const char *logdir, const char *run, const char *session, enum kind kind,
		uint64_t seed, unsigned hosts, const char *host_prefix, uint64_t size,
		uint64_t events, bool have_events, bool sidecars, struct xprofs_buf *j)
{
	char *dir = NULL, *path = NULL;
	int ret;

	if (asprintf(&dir, "%s/%s%splugins/profile/%s", logdir, strcmp(run, ".") ? run : "",
		     strcmp(run, ".") ? "/" : "", session) < 0)
		return -ENOMEM;
	ret = xprofs_mkdir_p(dir);
	if (ret) {
		xprofs_err("xprofs-gen: mkdir %s: %s", dir, strerror(-ret));
		goto out;
	}
	for (unsigned h = 0; h < hosts && !ret; h++) {
		char host[NAME_MAX_LEN];

		snprintf(host, sizeof(host), "%s%u", host_prefix, h);
		free(path);
		if (asprintf(&path, "%s/%s.xplane.pb", dir, host) < 0) {
			path = NULL;
			ret = -ENOMEM;
			break;
		}
		ret = gen_file(path, kind, seed_of(seed, 0x484f5354, h), 0, host, size, events,
			       have_events, j);
	}
	for (uint32_t m = 0; sidecars && !ret && m < N_MODULES; m++) {
		char name[NAME_MAX_LEN];
		static uint8_t hp[GEN_HLO_PROTO_MAX];
		size_t n;

		gen_module_name(m, name, sizeof(name));
		n = gen_hlo_proto(gen_module_names[m], gen_program_id_of(m), true, hp, sizeof(hp));
		free(path);
		if (asprintf(&path, "%s/%s.hlo_proto.pb", dir, name) < 0) {
			path = NULL;
			ret = -ENOMEM;
			break;
		}
		ret = write_small(path, hp, n);
	}
out:
	free(path);
	free(dir);
	return ret;
}

/* The run's empty "events.out.tfevents.<ts>.<host>.profile-empty" marker. */
static int gen_marker(const char *logdir, const char *run, const char *host)
{
	char *path = NULL;
	int ret;

	if (asprintf(&path, "%s/%s/events.out.tfevents.%" PRId64 ".%s.profile-empty", logdir, run,
		     WALL_START_NS / 1000000000, host) < 0)
		return -ENOMEM;
	ret = write_small(path, "", 0);
	free(path);
	return ret;
}

/*
 * A small demo logdir: a TPU run with two sessions of two hosts, a nested
 * GPU run "team/exp2", and a CPU run at the logdir root (run "."). A few MB.
 */
int gen_demo(const char *dir, uint64_t seed, struct xprofs_buf *j)
{
	int ret;

	ret = gen_session(dir, "train_tpu", "2026_11_21_10_00_00", KIND_TPU, seed, 2, "t1v-n-0-w-",
			  0, 12000, true, true, j);
	ret = ret ? ret
		  : gen_session(dir, "train_tpu", "2026_11_21_10_05_00", KIND_TPU, seed + 1, 2,
				"t1v-n-0-w-", 0, 8000, true, true, j);
	ret = ret ? ret : gen_marker(dir, "train_tpu", "t1v-n-0-w-0");
	ret = ret ? ret
		  : gen_session(dir, "team/exp2", "2026_11_21_11_30_00", KIND_GPU, seed + 2, 1,
				"gpu-node-", 0, 15000, true, true, j);
	ret = ret ? ret : gen_marker(dir, "team/exp2", "gpu-node-0");
	ret = ret ? ret
		  : gen_session(dir, ".", "2026_11_21_09_00_00", KIND_CPU, seed + 3, 1,
				"cpu-worker-", 0, 8000, true, false, j);
	ret = ret ? ret : gen_marker(dir, ".", "cpu-worker-0");
	return ret;
}
