/*
 * xprofs-decode - decode one *.xplane.pb host file into the JSON views that
 * xprofs mounts, without FUSE.
 *
 *   xprofs-decode FILE --view summary|trace|ops|steps|trace.json.gz|trace.pftrace   (default: summary)
 *                      or overview|kernels|overview.svg|memory_profile|memory_viewer|memory.svg|hlo_stats|roofline|op_profile|framework_op_stats (docs/stats.md;
 *                      kernels: exit 1 without GPU planes)
 *                      [--host NAME]   trace's host name (default: FILE's name
 *                                      without its directory and ".xplane.pb")
 *                      [--lod]         the level-of-detail trace (the mount's lod/)
 *                      [--hlo FILE]... the session's XLA programs, files
 *                                      "<module>(<id>).hlo_proto.pb", as the
 *                                      mount gives a host's views the
 *                                      sidecars of its session directory
 *   xprofs-decode SESSION_DIR --session
 *                [--view ops|hlo_stats|roofline|op_profile|framework_op_stats]
 *                                                        a session's summary.json
 *                                                        or that view (hosts combined)
 *   xprofs-decode --compare BASE_DIR SESSION_DIR [--view ops|steps|op_profile|summary]
 *                                                        the mount's
 *                                                        SESSION/compare/BASE/ views
 *   xprofs-decode FILE --tracks                          list PLANE_FILE/LINE_FILE
 *   xprofs-decode FILE --track PLANE_FILE/LINE_FILE      one track
 *   xprofs-decode FILE --unpack                          baseline: whole-message
 *                                                        protobuf_c unpack
 *
 * --session and --compare attach the *.hlo_proto.pb files of each session
 * directory to its hosts, as the mount does.
 *
 * FILE "-" is standard input, spooled to an unlinked file in $TMPDIR (or
 * /tmp) first: the decoder seeks. Its host name is then "stdin".
 *
 * The file is read with pread() through a bounded window (memory does not
 * grow with the file); --mmap uses the zero-copy path instead (faster, but
 * the mapped pages count in the process's RSS). Planes are indexed on
 * --threads threads (files of 64 MiB and more), and the stats views split
 * their planes over as many. Output goes to stdout,
 * errors to stderr with a non-zero exit.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xprofs/decode.h"
#include "xprofs/util.h"
#include "xplane.pb-c.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: xprofs-decode FILE.xplane.pb [--view summary|trace|ops|steps|"
		   "trace.json.gz|trace.pftrace|\n"
		   "                    "
		   "overview|kernels|overview.svg|memory_profile|memory_viewer|hlo_stats|\n"
		   "                    memory.svg|roofline|op_profile|framework_op_stats]   (FILE "
		   "\"-\": "
		   "standard "
		   "input)\n"
		   "                    [--host NAME (trace's host; default: FILE minus "
		   ".xplane.pb)]\n"
		   "                    [--window FROM-TO (µs, trace.json's ts) | --step N "
		   "(steps.json's steps[N])] [--lod]\n"
		   "                    [--hlo FILE (a <module>(<id>).hlo_proto.pb of the session; "
		   "repeatable)]\n"
		   "       xprofs-decode SESSION_DIR --session [--view summary|ops|hlo_stats|"
		   "roofline|op_profile|framework_op_stats]\n"
		   "                    (the session's summary.json, or that view: the hosts "
		   "combined)\n"
		   "       xprofs-decode --compare BASE_DIR SESSION_DIR [--view "
		   "ops|steps|op_profile|summary]\n"
		   "                    (SESSION's compare/<BASE>/<view>.json: BASE to SESSION)\n"
		   "       xprofs-decode FILE.xplane.pb --tracks\n"
		   "       xprofs-decode FILE.xplane.pb --track PLANE_FILE/LINE_FILE\n"
		   "       xprofs-decode FILE.xplane.pb --unpack   (whole-message protobuf-c "
		   "baseline)\n"
		   "options: --mmap (zero-copy reads), --threads N (index planes and compute the\n"
		   "         stats views on N threads; default: online CPUs, at most 4),\n"
		   "         --log-level LEVEL, --help, --version\n");
}

static ssize_t fd_pread(void *arg, void *buf, size_t n, uint64_t off)
{
	return xprofs_pread_ahead(*(int *)arg, buf, n, off);
}

/* ---- sidecar files: XLA programs beside the profiles ----------------------- */

#define HLO_FILES_MAX 4096 /* --hlo files, or *.hlo_proto.pb of a session directory */

struct sfile {
	int fd;
	struct xprofs_reader r;
	char *name; /* owned: the base name */
};

/* Opened sidecars, attached to profiles with xprofs_xspace_set_sidecars(). */
struct sidecars {
	struct sfile **f;                 /* owned */
	struct xprofs_xspace_sidecar *sc; /* owned: what the profiles borrow */
	size_t n;
};

static void sidecars_close(struct sidecars *s)
{
	for (size_t i = 0; i < s->n; i++) {
		close(s->f[i]->fd);
		free(s->f[i]->name);
		free(s->f[i]);
	}
	free(s->f);
	free(s->sc);
	memset(s, 0, sizeof(*s));
}

/* sidecar_add() - open @path as one more sidecar: 0, or -1 after printing why. */
static int sidecar_add(struct sidecars *s, const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	struct xprofs_xspace_sidecar *sc;
	struct sfile *f, **fv;
	struct stat st;

	if (s->n >= HLO_FILES_MAX) {
		fprintf(stderr, "xprofs-decode: more than %d HLO files\n", HLO_FILES_MAX);
		return -1;
	}
	if (!(f = calloc(1, sizeof(*f))) || !(fv = realloc(s->f, (s->n + 1) * sizeof(*fv))) ||
	    !(sc = realloc(s->sc, (s->n + 1) * sizeof(*sc)))) {
		free(f);
		fprintf(stderr, "xprofs-decode: %s\n", strerror(ENOMEM));
		return -1;
	}
	s->f = fv;
	s->sc = sc;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &st) < 0 || !(f->name = strdup(base))) {
		fprintf(stderr, "xprofs-decode: --hlo %s: %s\n", path, strerror(errno));
		if (f->fd >= 0)
			close(f->fd);
		free(f);
		return -1;
	}
	f->r = (struct xprofs_reader){
		.pread = fd_pread, .arg = &f->fd, .size = (uint64_t)st.st_size};
	s->f[s->n] = f;
	s->sc[s->n++] = (struct xprofs_xspace_sidecar){.name = f->name, .r = &f->r};
	return 0;
}

static int is_sidecar(const struct dirent *d)
{
	size_t n = strlen(d->d_name), k = strlen(".hlo_proto.pb");

	return d->d_name[0] != '.' && n > k && !strcmp(d->d_name + n - k, ".hlo_proto.pb");
}

/* sidecars_dir() - the *.hlo_proto.pb files of directory @dir, in name order: 0 or -1. */
static int sidecars_dir(struct sidecars *s, const char *dir)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, is_sidecar, alphasort), r = 0;
	char p[PATH_MAX];

	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, ents[i]->d_name);
		if (r == 0)
			r = sidecar_add(s, p);
		free(ents[i]);
	}
	free(ents);
	return r;
}

/* The straightforward decoder, for comparison: read all, unpack all. */
static int do_unpack(int fd, uint64_t size)
{
	Tensorflow__Profiler__XSpace *xs;
	uint64_t lines = 0, events = 0;
	uint8_t *data;
	ssize_t got;

	if (size > SIZE_MAX / 2)
		return -E2BIG;
	data = malloc(size ? size : 1);
	if (!data)
		return -ENOMEM;
	got = xprofs_pread_full(fd, data, size, 0);
	if (got < 0 || (uint64_t)got != size) {
		free(data);
		return got < 0 ? (int)got : -EIO;
	}
	xs = tensorflow__profiler__xspace__unpack(NULL, size, data);
	free(data);
	if (!xs)
		return -EINVAL;
	for (size_t i = 0; i < xs->n_planes; i++) {
		lines += xs->planes[i]->n_lines;
		for (size_t j = 0; j < xs->planes[i]->n_lines; j++)
			events += xs->planes[i]->lines[j]->n_events;
	}
	printf("{\"planes\":%zu,\"lines\":%llu,\"events\":%llu}\n", xs->n_planes,
	       (unsigned long long)lines, (unsigned long long)events);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	return 0;
}

/* What the command line asks for. */
struct args {
	const char *path, *track, *host;
	const char *compare; /* --compare BASE_DIR (path: the new session) */
	int view;
	bool window, step; /* a slice (docs/trace.md "Slices") */
	bool lod;          /* the level-of-detail trace (docs/trace.md "Level of detail") */
	xprofs_ps128 from_ps, to_ps;
	uint32_t step_ix;
	bool list, unpack, use_mmap, session;
	unsigned threads;
	const char *hlo[HLO_FILES_MAX]; /* --hlo */
	size_t n_hlo;
};

static int arg_view(const char *v, void *dst)
{
	return (*(int *)dst = xprofs_decode_view_parse(v)) < 0 ? -EINVAL : 0;
}

static int arg_window(const char *v, void *dst)
{
	struct args *a = dst;

	a->window = true;
	return xprofs_decode_window_parse(v, strlen(v), &a->from_ps, &a->to_ps) < 0 ? -EINVAL : 0;
}

static int arg_step(const char *v, void *dst)
{
	struct args *a = dst;

	a->step = true;
	return xprofs_decode_step_parse(v, strlen(v), &a->step_ix) < 0 ? -EINVAL : 0;
}

static int arg_threads(const char *v, void *dst)
{
	unsigned long t;
	char *end;

	errno = 0;
	t = strtoul(v, &end, 10);
	if (errno || *end || end == v || t < 1 || t > 8)
		return -EINVAL;
	*(unsigned *)dst = (unsigned)t;
	return 0;
}

static int arg_log_level(const char *v, void *dst)
{
	int r = xprofs_log_level_parse(v);

	if (r >= 0)
		xprofs_log_set_level(r);
	return r;
}

static int arg_hlo(const char *v, void *dst)
{
	struct args *a = dst;

	if (a->n_hlo >= HLO_FILES_MAX)
		return -E2BIG;
	a->hlo[a->n_hlo++] = v;
	return 0;
}

/* parse_args() - fill @a from argv; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const struct xprofs_arg args[] = {
		{"view", 'V', XPROFS_ARG_FN, &a->view, arg_view, "a view (see --help)"},
		{"tracks", 0, XPROFS_ARG_FLAG, &a->list, NULL, NULL},
		{"session", 0, XPROFS_ARG_FLAG, &a->session, NULL, NULL},
		{"track", 0, XPROFS_ARG_STR, &a->track, NULL, NULL},
		{"unpack", 0, XPROFS_ARG_FLAG, &a->unpack, NULL, NULL},
		{"mmap", 0, XPROFS_ARG_FLAG, &a->use_mmap, NULL, NULL},
		{"log-level", 0, XPROFS_ARG_FN, NULL, arg_log_level,
		 "err|warning|notice|info|debug"},
		{"threads", 0, XPROFS_ARG_FN, &a->threads, arg_threads, "1..8"},
		{"host", 0, XPROFS_ARG_STR, &a->host, NULL, NULL},
		{"window", 0, XPROFS_ARG_FN, a, arg_window, "FROM-TO (µs)"},
		{"step", 0, XPROFS_ARG_FN, a, arg_step, "an index"},
		{"lod", 0, XPROFS_ARG_FLAG, &a->lod, NULL, NULL},
		{"compare", 0, XPROFS_ARG_STR, &a->compare, NULL, NULL},
		{"hlo", 0, XPROFS_ARG_FN, a, arg_hlo, "a file, at most 4096 times"},
		{"help", 'h', XPROFS_ARG_STOP, NULL, NULL, NULL},
		{"version", 0, XPROFS_ARG_STOP, NULL, NULL, NULL},
	};
	int r;

	memset(a, 0, sizeof(*a));
	a->view = -1; /* not given: summary, but for --compare */
	a->threads = ncpu < 1 ? 1 : ncpu > 4 ? 4 : (unsigned)ncpu;
	r = xprofs_args_parse("xprofs-decode", argc, argv, args, sizeof(args) / sizeof(args[0]));
	if (r >= 0 && !strcmp(args[r].name, "version")) {
		printf("xprofs-decode %s\n", XPROFS_VERSION);
		return 0;
	}
	if (r == -2) /* the reason is printed */
		return 2;
	if (r >= 0) { /* --help */
		usage(stdout);
		return 0;
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (a->lod && a->view != XPROFS_VIEW_TRACE && a->view != XPROFS_VIEW_TRACE_GZ &&
	    a->view != XPROFS_VIEW_PFTRACE) {
		fprintf(stderr,
			"xprofs-decode: --lod is for the trace views (trace, trace.json.gz, "
			"trace.pftrace)\n");
		return 2;
	}
	a->path = argv[optind];
	if (a->view < 0)
		a->view = a->compare ? XPROFS_VIEW_OPS : XPROFS_VIEW_SUMMARY;
	return -1;
}

/* list_tracks() - one PLANE_FILE/LINE_FILE per line on stdout. */
static void list_tracks(const struct xprofs_xspace *x)
{
	for (size_t i = 0; i < xprofs_xspace_track_count(x); i++) {
		const char *pf, *lf;

		if (xprofs_xspace_track_names(x, i, &pf, &lf) == 0)
			printf("%s/%s\n", pf, lf);
	}
}

/* render_track() - the track named PLANE_FILE/LINE_FILE; returns -errno, or an exit status > 0. */
static int render_track(struct xprofs_xspace *x, const struct args *a,
			const struct xprofs_sink *sink, struct xprofs_buf *err)
{
	const char *slash = strrchr(a->track, '/');
	char *pf;
	int i;

	if (!slash) {
		fprintf(stderr, "xprofs-decode: --track wants PLANE_FILE/LINE_FILE\n");
		return 2;
	}
	pf = strndup(a->track, (size_t)(slash - a->track));
	i = pf ? xprofs_xspace_track_find(x, pf, slash + 1) : -ENOMEM;
	free(pf);
	if (i < 0) {
		fprintf(stderr, "xprofs-decode: %s: no track '%s' (see --tracks)\n", a->path,
			a->track);
		return 1;
	}
	return xprofs_decode_render_track(x, (size_t)i, sink, err);
}

#define SESSION_HOSTS_MAX 4096

/* A profile of a session directory: "<host>.xplane.pb", not hidden. */
static int is_profile(const struct dirent *d)
{
	size_t n = strlen(d->d_name), k = strlen(".xplane.pb");

	return d->d_name[0] != '.' && n > k && !strcmp(d->d_name + n - k, ".xplane.pb");
}

/* The profiles of one session directory, opened (sess_open()). */
struct sess_files {
	int n;
	char **hosts, **errs, *dir;
	const char *name; /* into @dir: its last component */
	struct xprofs_xspace **xs;
	struct xprofs_reader *rd;
	int *fds;
	struct sidecars sc; /* the directory's, attached to every host */
};

static void sess_close(struct sess_files *s)
{
	for (int i = 0; i < s->n; i++) {
		if (s->xs && s->xs[i])
			xprofs_xspace_free(s->xs[i]);
		if (s->fds && s->fds[i] >= 0)
			close(s->fds[i]);
		if (s->hosts)
			free(s->hosts[i]);
		if (s->errs)
			free(s->errs[i]);
	}
	free(s->hosts);
	free(s->errs);
	free(s->xs);
	free(s->rd);
	free(s->fds);
	free(s->dir);
	sidecars_close(&s->sc);
	memset(s, 0, sizeof(*s));
}

/*
 * sess_open() - every <host>.xplane.pb of directory @path, in name order, as
 * the mount lists runs/<run>/<session>/: a host that does not open keeps its
 * error. 0, or -1 after printing why (@what: the option, for the message).
 * Close with sess_close() either way.
 */
static int sess_open(const char *path, const char *what, unsigned threads, struct sess_files *s)
{
	struct dirent **ents = NULL;
	int n = scandir(path, &ents, is_profile, alphasort), r = -1;
	size_t len;

	memset(s, 0, sizeof(*s));
	if (n < 0 || !(s->dir = strdup(path))) {
		fprintf(stderr, "xprofs-decode: %s %s: %s\n", what, path, strerror(errno));
		n = n < 0 ? 0 : n;
		goto out;
	}
	if (n > (int)SESSION_HOSTS_MAX) {
		fprintf(stderr, "xprofs-decode: %s %s: more than %u hosts\n", what, path,
			(unsigned)SESSION_HOSTS_MAX);
		goto out;
	}
	s->hosts = calloc((size_t)n + 1, sizeof(*s->hosts));
	s->errs = calloc((size_t)n + 1, sizeof(*s->errs));
	s->xs = calloc((size_t)n + 1, sizeof(*s->xs));
	s->rd = calloc((size_t)n + 1, sizeof(*s->rd));
	s->fds = calloc((size_t)n + 1, sizeof(*s->fds));
	if (!s->hosts || !s->errs || !s->xs || !s->rd || !s->fds)
		goto out;
	s->n = n;
	for (int i = 0; i < n; i++)
		s->fds[i] = -1;
	if (sidecars_dir(&s->sc, path) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		struct xprofs_buf err;
		struct stat st;
		char p[PATH_MAX];

		s->hosts[i] =
			strndup(ents[i]->d_name, strlen(ents[i]->d_name) - strlen(".xplane.pb"));
		if (!s->hosts[i])
			goto out;
		xprofs_buf_init(&err, 4096);
		snprintf(p, sizeof(p), "%s/%s", path, ents[i]->d_name);
		s->fds[i] = open(p, O_RDONLY | O_CLOEXEC);
		if (s->fds[i] < 0 || fstat(s->fds[i], &st) < 0) {
			s->errs[i] = strdup(strerror(errno));
		} else {
			s->rd[i] = (struct xprofs_reader){.pread = fd_pread,
							  .arg = &s->fds[i],
							  .size = (uint64_t)st.st_size,
							  .data = NULL};
			/* fd_pread() is pread(2): thread-safe, so the index and the
			 * analyses may use --threads */
			struct xprofs_xspace_opts xo = {.threads = threads};

			if ((r = xprofs_xspace_open_opts(&s->rd[i], &xo, &err, &s->xs[i])) < 0) {
				s->errs[i] = xprofs_buf_steal(&err, NULL);
				if (!s->errs[i])
					s->errs[i] = strdup(strerror(-r));
				s->xs[i] = NULL;
			} else {
				xprofs_xspace_set_sidecars(s->xs[i], s->sc.sc, s->sc.n);
			}
		}
		xprofs_buf_deinit(&err);
	}
	len = strlen(s->dir);
	while (len > 1 && s->dir[len - 1] == '/')
		s->dir[--len] = '\0';
	s->name = strrchr(s->dir, '/') ? strrchr(s->dir, '/') + 1 : s->dir;
	r = 0;
out:
	for (int i = 0; ents && i < n; i++)
		free(ents[i]);
	free(ents);
	return r;
}

static struct xprofs_session_in sess_in(const struct sess_files *s)
{
	return (struct xprofs_session_in){.name = s->name,
					  .hosts = (const char *const *)s->hosts,
					  .xs = s->xs,
					  .host_errors = (const char *const *)s->errs,
					  .n = (size_t)s->n};
}

/*
 * do_session() - the session summary.json (or, with --view ops, op_profile
 * or framework_op_stats, that view of the session) of directory a->path, as
 * the mount shows runs/<run>/<session>/. Exit status.
 */
static int do_session(const struct args *a)
{
	int out_fd = STDOUT_FILENO, r = 1;
	struct xprofs_sink sink = xprofs_sink_fd(&out_fd);
	struct xprofs_session_in in;
	struct sess_files s;

	if (a->view != XPROFS_VIEW_SUMMARY && a->view != XPROFS_VIEW_OPS &&
	    a->view != XPROFS_VIEW_HLO_STATS && a->view != XPROFS_VIEW_ROOFLINE &&
	    a->view != XPROFS_VIEW_OP_PROFILE && a->view != XPROFS_VIEW_TF_STATS) {
		fprintf(stderr, "xprofs-decode: --session has the views summary, ops, hlo_stats, "
				"roofline, op_profile and framework_op_stats\n");
		return 2;
	}
	if (sess_open(a->path, "--session", a->threads, &s) < 0)
		goto out;
	in = sess_in(&s);
	if (a->view == XPROFS_VIEW_OPS)
		r = xprofs_decode_session_ops(&in, &sink);
	else if (a->view != XPROFS_VIEW_SUMMARY) /* the views of the hosts combined */
		r = xprofs_decode_session_view(a->view, &in, &sink);
	else
		r = xprofs_decode_session_summary(in.name, in.hosts, s.xs, in.host_errors, in.n,
						  &sink);
	if (r < 0)
		fprintf(stderr, "xprofs-decode: --session %s: %s\n", a->path, strerror(-r));
	r = r < 0;
out:
	sess_close(&s);
	return r;
}

/*
 * do_compare() - compare/<base>/ops.json, steps.json, op_profile.json or summary.json
 * (--view; default ops)
 * of session directory a->path against session directory a->compare, as the
 * mount shows runs/<run>/<session>/compare/<base>/. Exit status.
 */
static int do_compare(const struct args *a)
{
	int out_fd = STDOUT_FILENO, r = 1;
	struct xprofs_sink sink = xprofs_sink_fd(&out_fd);
	struct xprofs_session_in bi, ci;
	struct sess_files b, c;
	int v = a->view;

	memset(&c, 0, sizeof(c));
	if (v != XPROFS_VIEW_OPS && v != XPROFS_VIEW_STEPS && v != XPROFS_VIEW_OP_PROFILE &&
	    v != XPROFS_VIEW_SUMMARY) {
		fprintf(stderr, "xprofs-decode: --compare has the views ops, steps, op_profile and "
				"summary\n");
		return 2;
	}
	if (sess_open(a->compare, "--compare", a->threads, &b) < 0 ||
	    sess_open(a->path, "--compare", a->threads, &c) < 0)
		goto out;
	bi = sess_in(&b);
	ci = sess_in(&c);
	if ((r = xprofs_decode_compare((enum xprofs_view)v, &bi, &ci, &sink)) < 0)
		fprintf(stderr, "xprofs-decode: --compare %s %s: %s\n", a->compare, a->path,
			strerror(-r));
	r = r < 0;
out:
	sess_close(&b);
	sess_close(&c);
	return r;
}

/* spool_stdin() - standard input copied to an unlinked temporary file; its fd or -errno. */
static int spool_stdin(void)
{
	char buf[1 << 16];
	int fd = xprofs_tmpfile(NULL, "xprofs-decode-stdin");
	ssize_t n;
	int r = 0;

	if (fd < 0)
		return fd;
	while (r == 0 && (n = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
		if (n < 0)
			r = errno == EINTR ? 0 : -errno;
		else
			r = xprofs_write_full(fd, buf, (size_t)n);
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* render_view() - view a.view; its host name from --host, else the file's name. */
static int render_view(struct xprofs_xspace *x, const struct args *a,
		       const struct xprofs_sink *sink, struct xprofs_buf *err)
{
	struct xprofs_render_opts ro = {0};
	const char *base = strrchr(a->path, '/');
	const char *suffix = ".xplane.pb";
	char *host = NULL;
	size_t n;
	int r = 0;

	base = base ? base + 1 : a->path;
	n = strlen(base);
	if (n > strlen(suffix) && !strcmp(base + n - strlen(suffix), suffix))
		n -= strlen(suffix);
	if (!a->host && !(host = strndup(base, n)))
		return -ENOMEM;
	ro.host = a->host ? a->host : !strcmp(a->path, "-") ? "stdin" : host;
	ro.window = a->window;
	ro.lod = a->lod;
	ro.from_ps = a->from_ps;
	ro.to_ps = a->to_ps;
	if (a->step) { /* the window of steps.json's steps[N] */
		struct xprofs_step_window *w = NULL;
		size_t ns = 0;

		if ((r = xprofs_decode_steps(x, &w, &ns, err)) == 0 && a->step_ix >= ns) {
			(void)!xprofs_buf_printf(err, "no step %u (%zu steps)",
						 (unsigned)a->step_ix, ns);
			r = -ENOENT;
		}
		if (r == 0) {
			ro.window = true;
			ro.from_ps = w[a->step_ix].begin_ps;
			ro.to_ps = w[a->step_ix].end_ps;
		}
		free(w);
	}
	if (r == 0)
		r = xprofs_decode_render_opts(x, (enum xprofs_view)a->view, &ro, sink, err);
	free(host);
	return r;
}

int main(int argc, char **argv)
{
	int out_fd = STDOUT_FILENO, fd = -1, r;
	struct xprofs_xspace *x = NULL;
	struct xprofs_xspace_opts xo = {0};
	struct xprofs_reader rd;
	struct xprofs_sink sink;
	struct xprofs_buf err;
	void *map = MAP_FAILED;
	struct sidecars sc = {0};
	static struct args a; /* large (the --hlo list) */
	struct stat st;

	if ((r = parse_args(argc, argv, &a)) >= 0)
		return r;
	if (a.compare)
		return do_compare(&a);
	if (a.session)
		return do_session(&a);
	xprofs_buf_init(&err, 4096);
	if (!strcmp(a.path, "-")) {
		fd = spool_stdin();
		if (fd < 0) {
			fprintf(stderr, "xprofs-decode: standard input: %s\n", strerror(-fd));
			r = 1;
			goto out;
		}
	} else {
		fd = open(a.path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "xprofs-decode: %s: %s\n", a.path, strerror(errno));
		r = 1;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "xprofs-decode: %s: not a regular file\n", a.path);
		r = 1;
		goto out;
	}
	if (a.unpack) {
		if ((r = do_unpack(fd, (uint64_t)st.st_size)) < 0) {
			fprintf(stderr, "xprofs-decode: %s: unpack failed: %s\n", a.path,
				strerror(-r));
			r = 1;
		}
		goto out;
	}
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (a.use_mmap && st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			fprintf(stderr, "xprofs-decode: %s: mmap: %s\n", a.path, strerror(errno));
			r = 1;
			goto out;
		}
		rd = xprofs_reader_mem(map, (size_t)st.st_size);
	} else {
		rd = (struct xprofs_reader){
			.pread = fd_pread, .arg = &fd, .size = (uint64_t)st.st_size, .data = NULL};
	}
	xo.threads = a.threads;
	xo.tracks_only = a.list || a.track; /* track names need no event statistics */
	if ((r = xprofs_xspace_open_opts(&rd, &xo, &err, &x)) < 0) {
		fprintf(stderr, "xprofs-decode: %s: %s\n", a.path,
			err.len ? err.data : strerror(-r));
		r = 1;
		goto out;
	}
	for (size_t i = 0; i < a.n_hlo; i++)
		if (sidecar_add(&sc, a.hlo[i]) < 0) {
			r = 1;
			goto out;
		}
	xprofs_xspace_set_sidecars(x, sc.sc, sc.n);
	sink = xprofs_sink_fd(&out_fd);
	if (a.list) {
		list_tracks(x);
		r = 0;
		goto out;
	}
	if (a.track)
		r = render_track(x, &a, &sink, &err);
	else
		r = render_view(x, &a, &sink, &err);
	if (r < 0) {
		fprintf(stderr, "xprofs-decode: %s: %s\n", a.path,
			err.len ? err.data : strerror(-r));
		r = 1;
	}
out:
	xprofs_xspace_free(x);
	sidecars_close(&sc);
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	xprofs_buf_deinit(&err);
	return r;
}
