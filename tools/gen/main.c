/*
 * main.c - xprofs-gen's command line (getopt_long, strict number parsing).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

/* ---- command line ------------------------------------------------------ */

enum {
	ARG_KIND = 0x100,
	ARG_SIZE,
	ARG_EVENTS,
	ARG_SEED,
	ARG_HOSTS,
	ARG_LOGDIR,
	ARG_RUN,
	ARG_SESSION,
	ARG_DEMO,
	ARG_STATS,
	ARG_SIDECARS,
	ARG_HLO
};

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

/* main() - getopt_long over the options table, then one action; ~120 lines of
 * plain option cases, kept together so every flag is read in one place. */
int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"kind", required_argument, NULL, ARG_KIND},
		{"size", required_argument, NULL, ARG_SIZE},
		{"events", required_argument, NULL, ARG_EVENTS},
		{"seed", required_argument, NULL, ARG_SEED},
		{"hosts", required_argument, NULL, ARG_HOSTS},
		{"logdir", required_argument, NULL, ARG_LOGDIR},
		{"run", required_argument, NULL, ARG_RUN},
		{"session", required_argument, NULL, ARG_SESSION},
		{"demo", required_argument, NULL, ARG_DEMO},
		{"stats", no_argument, NULL, ARG_STATS},
		{"sidecars", no_argument, NULL, ARG_SIDECARS},
		{"hlo", required_argument, NULL, ARG_HLO},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {.kind = KIND_TPU, .size = 1u << 20, .seed = 1};
	struct xprofs_buf j;
	uint64_t v;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "o:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.out = optarg;
			break;
		case ARG_KIND:
			if (!strcmp(optarg, "tpu"))
				o.kind = KIND_TPU;
			else if (!strcmp(optarg, "gpu"))
				o.kind = KIND_GPU;
			else if (!strcmp(optarg, "cpu"))
				o.kind = KIND_CPU;
			else
				goto bad;
			break;
		case ARG_SIZE:
			if (parse_u64(optarg, true, &o.size) || !o.size)
				goto bad;
			break;
		case ARG_EVENTS:
			if (parse_u64(optarg, true, &o.events) || o.events > MAX_EVENTS)
				goto bad;
			o.have_events = true;
			break;
		case ARG_SEED:
			if (parse_u64(optarg, false, &o.seed))
				goto bad;
			break;
		case ARG_HOSTS:
			if (parse_u64(optarg, false, &v) || !v || v > MAX_HOSTS)
				goto bad;
			o.hosts = (unsigned)v;
			break;
		case ARG_LOGDIR:
			o.logdir = optarg;
			break;
		case ARG_RUN:
			o.run = optarg;
			break;
		case ARG_SESSION:
			o.session = optarg;
			break;
		case ARG_DEMO:
			o.demo = optarg;
			break;
		case ARG_SIDECARS:
			o.sidecars = true;
			break;
		case ARG_HLO:
			o.hlo = optarg;
			break;
		case ARG_STATS:
			o.stats = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
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
		ret = gen_file(o.out, o.kind, o.seed, "localhost", o.size, o.events, o.have_events,
			       &j);
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
bad:
	fprintf(stderr, "xprofs-gen: bad value '%s' for option\n", optarg);
	usage(stderr);
	return 2;
}
