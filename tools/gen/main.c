/*
 * main.c - xprofs-gen's command line: one table of options (xprofs_args_parse())
 * with strict number parsing, then one action.
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

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- command line ------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xprofs-gen [options] -o FILE\n"
		"       xprofs-gen [options] --hosts N --logdir DIR --run NAME --session NAME\n"
		"       xprofs-gen --demo DIR\n"
		"Writes realistic XSpace profiles (*.xplane.pb), streaming in constant memory.\n"
		"  -o, --output FILE   output file ('-' = stdout)\n"
		"      --kind K        tpu (default), gpu or cpu\n"
		"      --size N[K|M|G] approximate file size (default 1M)\n"
		"      --events N      exact number of events instead of --size\n"
		"      --seed N        RNG seed (default 1); same seed, same bytes\n"
		"      --hosts N       hosts of a session (with --logdir/--run/--session)\n"
		"      --demo DIR      write a small demo logdir into DIR\n"
		"      --stats         print JSON facts (planes, lines, event counts) to stdout\n"
		"      --sidecars      with --hosts: also each module's "
		"<module>(<id>).hlo_proto.pb\n"
		"      --hlo FILE      one large HloProto of about --size bytes (bench/hlo.sh)\n"
		"      --ungrouped     with -o: no group_id stats (XProf preprocesses the trace)\n"
		"      --regions       with -o: threadpool listener regions on the host\n"
		"  -h, --help\n");
}

/* Strict unsigned parse; with @suffix, a size with an optional K/M/G/T suffix. */
static int parse_u64(const char *s, bool suffix, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (suffix)
		return xprofs_size_parse(s, out);
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int arg_kind(const char *v, void *dst)
{
	static const char *const names[] = {
		[KIND_TPU] = "tpu", [KIND_GPU] = "gpu", [KIND_CPU] = "cpu"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] && !strcmp(v, names[i])) {
			*(enum kind *)dst = (enum kind)i;
			return 0;
		}
	return -EINVAL;
}

static int arg_size(const char *v, void *dst)
{
	return parse_u64(v, true, dst) || !*(uint64_t *)dst ? -EINVAL : 0;
}

static int arg_events(const char *v, void *dst)
{
	struct opts *o = dst;

	o->have_events = true;
	return parse_u64(v, true, &o->events) || o->events > MAX_EVENTS ? -EINVAL : 0;
}

static int arg_seed(const char *v, void *dst)
{
	return parse_u64(v, false, dst);
}

static int arg_hosts(const char *v, void *dst)
{
	uint64_t n;

	if (parse_u64(v, false, &n) || !n || n > MAX_HOSTS)
		return -EINVAL;
	*(unsigned *)dst = (unsigned)n;
	return 0;
}

/* main() - the options (xprofs_args_parse()), their checks, then one action. */
int main(int argc, char **argv)
{
	struct opts o = {.kind = KIND_TPU, .size = 1u << 20, .seed = 1};
	const struct xprofs_arg args[] = {
		{"output", 'o', XPROFS_ARG_STR, &o.out, NULL, NULL},
		{"kind", 0, XPROFS_ARG_FN, &o.kind, arg_kind, "tpu, gpu or cpu"},
		{"size", 0, XPROFS_ARG_FN, &o.size, arg_size, "a size > 0 (N[K|M|G])"},
		{"events", 0, XPROFS_ARG_FN, &o, arg_events, "a count (N[K|M|G])"},
		{"seed", 0, XPROFS_ARG_FN, &o.seed, arg_seed, "a number"},
		{"hosts", 0, XPROFS_ARG_FN, &o.hosts, arg_hosts, "1.." STR(MAX_HOSTS)},
		{"logdir", 0, XPROFS_ARG_STR, &o.logdir, NULL, NULL},
		{"run", 0, XPROFS_ARG_STR, &o.run, NULL, NULL},
		{"session", 0, XPROFS_ARG_STR, &o.session, NULL, NULL},
		{"demo", 0, XPROFS_ARG_STR, &o.demo, NULL, NULL},
		{"stats", 0, XPROFS_ARG_FLAG, &o.stats, NULL, NULL},
		{"sidecars", 0, XPROFS_ARG_FLAG, &o.sidecars, NULL, NULL},
		{"ungrouped", 0, XPROFS_ARG_FLAG, &o.ungrouped, NULL, NULL},
		{"regions", 0, XPROFS_ARG_FLAG, &o.regions, NULL, NULL},
		{"hlo", 0, XPROFS_ARG_STR, &o.hlo, NULL, NULL},
		{"help", 'h', XPROFS_ARG_STOP, NULL, NULL, NULL},
	};
	struct xprofs_buf j;
	int ret = 0;

	switch (xprofs_args_parse("xprofs-gen", argc, argv, args, sizeof(args) / sizeof(args[0]))) {
	case -1:
		break;
	case -2:
		usage(stderr);
		return 2;
	default: /* --help */
		usage(stdout);
		return 0;
	}
	if (optind != argc) {
		fprintf(stderr, "xprofs-gen: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o.hlo) {
		ret = gen_hlo_big(o.hlo, o.size);
		if (ret)
			fprintf(stderr, "xprofs-gen: %s: %s\n", o.hlo, strerror(-ret));
		return ret ? 1 : 0;
	}
	if (!o.demo && !o.out && !o.hosts) {
		fprintf(stderr, "xprofs-gen: one of -o, --hosts, --demo or --hlo is required\n");
		usage(stderr);
		return 2;
	}
	if (o.hosts && (!o.logdir || !o.run || !o.session || strstr(o.session, "/"))) {
		fprintf(stderr,
			"xprofs-gen: --hosts needs --logdir, --run and --session (no '/')\n");
		return 2;
	}
	if (o.stats && o.out && !strcmp(o.out, "-")) {
		fprintf(stderr, "xprofs-gen: --stats cannot share stdout with -o -\n");
		return 2;
	}

	xprofs_buf_init(&j, 256u << 20);
	ret = xprofs_buf_adds(&j, "[");
	if (!ret && o.demo)
		ret = gen_demo(o.demo, o.seed, &j);
	if (!ret && o.hosts)
		ret = gen_session(o.logdir, o.run, o.session, o.kind, o.seed, o.hosts, "host",
				  o.size, o.events, o.have_events, o.sidecars, &j);
	if (!ret && o.out)
		ret = gen_file(o.out, o.kind, o.seed,
			       (o.ungrouped ? GEN_UNGROUPED : 0) | (o.regions ? GEN_REGIONS : 0),
			       "localhost", o.size, o.events, o.have_events, &j);
	if (!ret)
		ret = xprofs_buf_adds(&j, "]");
	if (!ret && o.stats)
		printf("{\"files\":%s}\n", j.data);
	xprofs_buf_deinit(&j);
	if (ret) { /* one line: what we were writing and why it failed */
		fprintf(stderr, "xprofs-gen: %s: %s\n",
			o.out      ? o.out
			: o.demo   ? o.demo
			: o.logdir ? o.logdir
				   : "failed",
			strerror(-ret));
		return 1;
	}
	return 0;
}
