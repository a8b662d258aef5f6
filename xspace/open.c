/*
 * open.c - the public face of an indexed XSpace: xprofs_xspace_open()
 * (the structural pass itself is index.c), free, totals, and the track
 * file-name mapping and look-ups.
 *
 * Design: after the pass, every plane and line gets a unique, safe file
 * name, and the totals are summed from the planes (the Task Environment
 * plane's stats give the wall-clock start/stop).
 *
 * File names: a plane or line name is percent-encoded ('/', '%', '~', NUL,
 * control bytes, DEL and a leading '.'); the empty name is "%". Names whose
 * encoding passes the length limit are cut and get "~h<16 hex of FNV-1a>".
 * Duplicates in one directory get "~<index>" (plane index in the file, or
 * line index in its plane); since '~' itself is always encoded, suffixes
 * cannot collide with plain names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/xspace.h"

/* ---- file names ------------------------------------------------------ */

#define NAME_FILE_MAX 255

static bool name_must_escape(unsigned char ch, size_t i)
{
	return ch < 0x20 || ch == 0x7f || ch == '/' || ch == '%' || ch == '~' ||
	       (i == 0 && ch == '.');
}

/*
 * Encode @name into at most @max bytes (@max >= 32). Caller owns the result;
 * free with free().
 */
static char *name_encode_max(const char *name, size_t len, size_t max)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t cap = len * 3 + 1, o = 0;
	char *s;

	if (len == 0)
		return strdup("%");
	if (len > SIZE_MAX / 4)
		return NULL;
	s = malloc(cap > 64 ? cap : 64);
	if (!s)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (name_must_escape(ch, i)) {
			s[o++] = '%';
			s[o++] = hex[ch >> 4];
			s[o++] = hex[ch & 15];
		} else {
			s[o++] = (char)ch;
		}
	}
	s[o] = '\0';
	if (o > max) {
		/* cut before an escape or a UTF-8 continuation, then hash */
		size_t cut = max - 18;

		while (cut > 0 && (s[cut - 1] == '%' || (cut > 1 && s[cut - 2] == '%') ||
				   ((unsigned char)s[cut] & 0xc0) == 0x80))
			cut--;
		snprintf(s + cut, 19, "~h%016" PRIx64, xprofs_hash64(name, len));
	}
	return s;
}

char *xprofs_xspace_name_encode(const char *name, size_t len)
{
	return name_encode_max(name ? name : "", name ? len : 0, NAME_FILE_MAX);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

char *xprofs_xspace_name_decode(const char *file, size_t *len)
{
	size_t n, o = 0;
	char *s;

	if (!file)
		return NULL;
	n = strlen(file);
	if (n == 1 && file[0] == '%') {
		s = strdup("");
		if (s && len)
			*len = 0;
		return s;
	}
	s = malloc(n + 1);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (file[i] == '~') /* a disambiguation or hash suffix */
			break;
		if (file[i] == '%') {
			int h, l;

			if (i + 2 >= n || (h = hexval(file[i + 1])) < 0 ||
			    (l = hexval(file[i + 2])) < 0)
				goto bad;
			s[o++] = (char)(h << 4 | l);
			i += 2;
			continue;
		}
		s[o++] = file[i];
	}
	s[o] = '\0';
	if (len)
		*len = o;
	return s;
bad:
	free(s);
	return NULL;
}

/* ---- names and totals after the pass --------------------------------- */

/* Tiny open-addressing set of borrowed strings, for duplicate detection. */
struct nameset {
	const char **slot;
	size_t cap;
};

static int nameset_init(struct nameset *s, size_t n)
{
	s->cap = 16;
	while (s->cap < n * 2 + 2)
		s->cap *= 2;
	s->slot = calloc(s->cap, sizeof(*s->slot));
	return s->slot ? 0 : -ENOMEM;
}

/* Returns true if @k was already present; inserts it otherwise. */
static bool nameset_add(struct nameset *s, const char *k)
{
	size_t i = (size_t)xprofs_hash64(k, strlen(k)) & (s->cap - 1);

	while (s->slot[i]) {
		if (!strcmp(s->slot[i], k))
			return true;
		i = (i + 1) & (s->cap - 1);
	}
	s->slot[i] = k;
	return false;
}

/* Give each item of a directory a unique file name (@suffix after it). */
static int assign_files(char **files, const char *const *names, const size_t *lens, size_t n,
			const char *suffix)
{
	struct nameset set;
	size_t slen = strlen(suffix);
	int r = 0;

	if ((r = nameset_init(&set, n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		char *base = name_encode_max(names[i], lens[i], NAME_FILE_MAX - slen - 24);
		char *f;

		if (!base) {
			r = -ENOMEM;
			goto out;
		}
		if (asprintf(&f, "%s%s", base, suffix) < 0) {
			free(base);
			r = -ENOMEM;
			goto out;
		}
		if (nameset_add(&set, f)) {
			free(f);
			if (asprintf(&f, "%s~%zu%s", base, i, suffix) < 0) {
				free(base);
				r = -ENOMEM;
				goto out;
			}
			nameset_add(&set, f);
		}
		free(base);
		files[i] = f;
	}
out:
	free(set.slot);
	return r;
}

static int ix_names(struct xprofs_xspace *x)
{
	size_t n = x->n_planes > x->n_lines ? x->n_planes : x->n_lines;
	const char **names = calloc(n + 1, sizeof(*names));
	size_t *lens = calloc(n + 1, sizeof(*lens));
	char **files = calloc(n + 1, sizeof(*files));
	int r = -ENOMEM;

	if (!names || !lens || !files)
		goto out;
	for (size_t i = 0; i < x->n_planes; i++) {
		names[i] = x->planes[i].name;
		lens[i] = x->planes[i].name_len;
	}
	if ((r = assign_files(files, names, lens, x->n_planes, "")) < 0)
		goto out;
	for (size_t i = 0; i < x->n_planes; i++)
		x->planes[i].file = files[i];
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		struct xs_plane *p = &x->planes[pi];

		for (size_t j = 0; j < p->n_lines; j++) {
			struct xs_line *l = &x->lines[p->first_line + j];

			if (!l->name && !(l->name = strdup(""))) {
				r = -ENOMEM;
				goto out;
			}
			names[j] = l->name;
			lens[j] = l->name_len;
		}
		if ((r = assign_files(files, names, lens, p->n_lines, ".json")) < 0)
			goto out;
		for (size_t j = 0; j < p->n_lines; j++)
			x->lines[p->first_line + j].file = files[j];
	}
	r = 0;
out:
	free(files);
	free(lens);
	free(names);
	return r;
}

static void ix_totals(struct xprofs_xspace *x, struct wire_cur *c)
{
	struct xprofs_xspace_totals *t = &x->totals;
	bool any = false;

	t->planes = x->n_planes;
	t->lines = x->n_lines;
	t->errors = x->errors.n;
	t->warnings = x->warnings.n;
	for (size_t i = 0; i < x->n_planes; i++) {
		const struct xs_plane *p = &x->planes[i];

		t->events += p->events;
		if (p->has_events) {
			if (!any || p->first_ps < t->first_ps)
				t->first_ps = p->first_ps;
			if (!any || p->last_ps > t->last_ps)
				t->last_ps = p->last_ps;
			any = true;
		}
		if (!strcmp(p->name, "Task Environment")) {
			t->start_walltime_ns = xs_plane_stat_int(p, c, "profile_start_time");
			t->stop_walltime_ns = xs_plane_stat_int(p, c, "profile_stop_time");
		}
	}
}

static void strs_free(struct xs_strs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->s[i]);
	free(s->s);
	free(s->len);
}

struct xprofs_xspace *xprofs_xspace_free(struct xprofs_xspace *x)
{
	if (!x)
		return NULL;
	for (size_t i = 0; i < x->n_lines; i++)
		xs_line_deinit(&x->lines[i]);
	for (size_t i = 0; i < x->n_planes; i++)
		xs_plane_deinit(&x->planes[i]);
	free(x->lines);
	free(x->planes);
	strs_free(&x->hostnames);
	strs_free(&x->errors);
	strs_free(&x->warnings);
	free(x);
	return NULL;
}

void xprofs_xspace_set_sidecars(struct xprofs_xspace *x, const struct xprofs_xspace_sidecar *s,
				size_t n)
{
	x->sidecars = n ? s : NULL;
	x->n_sidecars = s ? n : 0;
}

int xprofs_xspace_open_opts(const struct xprofs_reader *r, const struct xprofs_xspace_opts *opts,
			    struct xprofs_buf *err, struct xprofs_xspace **out)
{
	unsigned threads = opts && opts->threads ? opts->threads : 1;
	struct xprofs_xspace *x;
	struct wire_cur c;
	int ret;

	if (!r || (!r->data && !r->pread) || !out)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x) {
		ret = -ENOMEM;
		goto fail;
	}
	x->r = r;
	x->tracks_only = opts && opts->tracks_only;
	x->threads = threads > XS_THREADS_MAX ? XS_THREADS_MAX : threads;
	if ((ret = xs_index_build(x, threads, err)) < 0 || (ret = ix_names(x)) < 0)
		goto fail;
	wire_cur_init(&c, r, NULL);
	ix_totals(x, &c);
	wire_cur_deinit(&c);
	*out = x;
	return 0;
fail:
	if (ret == -ENOMEM && err && err->len == 0)
		(void)!xprofs_buf_adds(err, "out of memory while indexing the profile");
	xprofs_xspace_free(x);
	return ret;
}

int xprofs_xspace_open(const struct xprofs_reader *r, struct xprofs_buf *err,
		       struct xprofs_xspace **out)
{
	return xprofs_xspace_open_opts(r, NULL, err, out);
}

bool xprofs_xspace_has_gpu(const struct xprofs_xspace *x)
{
	for (size_t i = 0; x && i < x->n_planes; i++)
		if (xs_plane_is_gpu(&x->planes[i]))
			return true;
	return false;
}

int xprofs_xspace_get_totals(const struct xprofs_xspace *x, struct xprofs_xspace_totals *t)
{
	if (!x || !t)
		return -EINVAL;
	*t = x->totals;
	return 0;
}

size_t xprofs_xspace_track_count(const struct xprofs_xspace *x)
{
	return x ? x->n_lines : 0;
}

int xprofs_xspace_track_names(const struct xprofs_xspace *x, size_t i, const char **plane_file,
			      const char **line_file)
{
	if (!x || i >= x->n_lines)
		return -ERANGE;
	if (plane_file)
		*plane_file = x->planes[x->lines[i].plane].file;
	if (line_file)
		*line_file = x->lines[i].file;
	return 0;
}

int xprofs_xspace_track_find(const struct xprofs_xspace *x, const char *plane_file,
			     const char *line_file)
{
	if (!x || !plane_file || !line_file)
		return -ENOENT;
	for (size_t pi = 0; pi < x->n_planes; pi++) {
		const struct xs_plane *p = &x->planes[pi];

		if (strcmp(p->file, plane_file))
			continue;
		for (size_t j = p->first_line; j < p->first_line + p->n_lines; j++)
			if (!strcmp(x->lines[j].file, line_file))
				return j > INT32_MAX ? -ENOENT : (int)j;
	}
	return -ENOENT;
}
