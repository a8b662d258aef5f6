/*
 * line.c - the control-line grammar (see xprofs_capture_help() for the
 * user's view). A line is split on blanks into at most 256 words and every
 * word is validated strictly: numbers with strtoull and a range, names as
 * safe path components, hosts as HOST:PORT with a numeric port. Anything not
 * understood is -EINVAL with a reason that names the word, so a user who
 * typos a key learns it at write() time rather than from a capture that
 * quietly ran with defaults.
 *
 * Pure and allocation-free (struct capture_req is a fixed-size value), so
 * it is fuzzed directly (fuzz-capture-line).
 */
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "capture-internal.h"
#include "xprofs/store.h"

#define MAX_WORDS 256
#define ADV_PREFIX "advanced." /* KEY=VALUE for advanced_configuration */
#define ADV_PREFIX_LEN (sizeof(ADV_PREFIX) - 1)

struct word {
	const char *p;
	size_t n;
};

static int reject(struct xprofs_buf *reason, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int reject(struct xprofs_buf *reason, const char *fmt, ...)
{
	va_list ap;

	if (reason) {
		va_start(ap, fmt);
		/* A reason that does not fit is still a rejection. */
		(void)!xprofs_buf_vprintf(reason, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool word_is(const struct word *w, const char *s)
{
	return strlen(s) == w->n && memcmp(w->p, s, w->n) == 0;
}

bool capture_name_valid(const char *s, size_t len)
{
	if (len == 0 || len > CAPTURE_MAX_NAME)
		return false;
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '/' || ch == '\\' || ch < 0x20 || ch == 0x7f)
			return false;
	}
	return true;
}

bool xprofs_capture_run_valid(const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > CAPTURE_MAX_RUN)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || s[i] == '/') {
			if (!capture_name_valid(s + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

int capture_host_dirname(const char *host, char *out, size_t cap)
{
	size_t n = strlen(host);

	if (n + 1 > cap)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < n; i++)
		out[i] = host[i] == ':' ? '_' : host[i];
	out[n] = '\0';
	return 0;
}

/* Whole-word unsigned decimal in [lo, hi]. */
static int parse_u64(const struct word *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char tmp[32];
	char *end;
	unsigned long long x;

	if (v->n == 0 || v->n >= sizeof(tmp))
		return -EINVAL;
	for (size_t i = 0; i < v->n; i++)
		if (!isdigit((unsigned char)v->p[i]))
			return -EINVAL; /* strtoull would accept "-1", " 1" and "+1" */
	memcpy(tmp, v->p, v->n);
	tmp[v->n] = '\0';
	errno = 0;
	x = strtoull(tmp, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -ERANGE;
	*out = x;
	return 0;
}

static int parse_i64(const struct word *v, int64_t *out)
{
	char tmp[32];
	char *end;
	long long x;
	size_t i = 0;

	if (v->n == 0 || v->n >= sizeof(tmp))
		return -EINVAL;
	if (v->p[0] == '-')
		i = 1;
	if (i == v->n)
		return -EINVAL;
	for (; i < v->n; i++)
		if (!isdigit((unsigned char)v->p[i]))
			return -EINVAL;
	memcpy(tmp, v->p, v->n);
	tmp[v->n] = '\0';
	errno = 0;
	x = strtoll(tmp, &end, 10);
	if (errno || *end)
		return -ERANGE;
	*out = x;
	return 0;
}

/* HOST:PORT or [V6]:PORT; HOST is letters, digits, '.', '-', '_'. */
static bool host_valid(const char *p, size_t n)
{
	size_t colon, i;
	struct word port;
	uint64_t pn;

	if (n == 0 || n > CAPTURE_MAX_HOSTLEN)
		return false;
	if (p[0] == '[') {
		for (i = 1; i < n && p[i] != ']'; i++)
			if (!isxdigit((unsigned char)p[i]) && p[i] != ':' && p[i] != '.')
				return false;
		if (i == n || i == 1 || i + 1 >= n || p[i + 1] != ':')
			return false;
		colon = i + 1;
	} else {
		for (colon = n; colon > 0 && p[colon - 1] != ':'; colon--)
			;
		if (colon == 0)
			return false;
		colon--;
		if (colon == 0)
			return false;
		for (i = 0; i < colon; i++) {
			unsigned char ch = (unsigned char)p[i];

			if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_')
				return false;
		}
	}
	port.p = p + colon + 1;
	port.n = n - colon - 1;
	return parse_u64(&port, 1, 65535, &pn) == 0;
}

static int parse_hosts(const struct word *w, struct capture_req *out, struct xprofs_buf *reason)
{
	size_t start = 0;

	if (out->n_hosts)
		return reject(reason, "more than one host list ('%.*s'); separate hosts with ','",
			      (int)w->n, w->p);
	for (size_t i = 0; i <= w->n; i++) {
		if (i < w->n && w->p[i] != ',')
			continue;
		if (!host_valid(w->p + start, i - start))
			return reject(reason, "bad host '%.*s': expected HOST:PORT",
				      (int)(i - start), w->p + start);
		if (out->n_hosts == CAPTURE_MAX_HOSTS)
			return reject(reason, "too many hosts (at most %d)", CAPTURE_MAX_HOSTS);
		for (size_t k = 0; k < out->n_hosts; k++)
			if (strlen(out->hosts[k]) == i - start &&
			    memcmp(out->hosts[k], w->p + start, i - start) == 0)
				return reject(reason, "host '%.*s' given twice", (int)(i - start),
					      w->p + start);
		memcpy(out->hosts[out->n_hosts], w->p + start, i - start);
		out->hosts[out->n_hosts][i - start] = '\0';
		out->n_hosts++;
		start = i + 1;
	}
	return 0;
}

static bool adv_key_valid(const char *p, size_t n)
{
	if (n == 0 || n > CAPTURE_MAX_ADV_KEY)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (!isalnum(ch) && ch != '_' && ch != '.' && ch != '-')
			return false;
	}
	return true;
}

/* The keys a line knows, for "did you mean" (advanced ones are advanced.KEY=). */
static const char *const known_keys[] = {
	"duration_ms",
	"host_tracer_level",
	"device_tracer_level",
	"python_tracer_level",
	"delay_ms",
	"deadline_ms",
	"session",
	"host",
	"run",
};

/* edit_distance() - Levenshtein distance of @a and @b (@b at most 31 bytes), capped at 9. */
static size_t edit_distance(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b), row[32], i, j;

	if (na > 40 || nb >= sizeof(row) / sizeof(row[0]))
		return 9;
	for (j = 0; j <= nb; j++)
		row[j] = j;
	for (i = 1; i <= na; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= nb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[nb] > 9 ? 9 : row[nb];
}

/*
 * unknown_option() - refuse @k: a typo of a known key must not turn into
 * an advanced option and a capture with defaults. Suggests the nearest key
 * (edit distance at most 2).
 */
static int unknown_option(const struct word *k, struct xprofs_buf *reason)
{
	const char *best = NULL;
	size_t bd = 3;

	for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++) {
		size_t d = edit_distance(k->p, k->n, known_keys[i]);

		if (d < bd) {
			bd = d;
			best = known_keys[i];
		}
	}
	return reject(reason,
		      "unknown option '%.*s'%s%s%s; options for "
		      "ProfileOptions.advanced_configuration are written " ADV_PREFIX "KEY=VALUE",
		      (int)k->n, k->p, best ? " (did you mean '" : "", best ? best : "",
		      best ? "'?)" : "");
}

/* One KEY=VALUE option; @k/@v split at the first '='. */
static int parse_option(const struct word *k, const struct word *v, struct capture_req *out,
			struct xprofs_buf *reason)
{
	static const struct {
		const char *name;
		uint64_t lo, hi;
	} nums[] = {
		{"duration_ms", 1, 3600000},   {"host_tracer_level", 0, 3},
		{"device_tracer_level", 0, 2}, {"python_tracer_level", 0, 1},
		{"delay_ms", 0, 600000},       {"deadline_ms", 1000, 86400000},
	};
	uint64_t x;
	struct capture_adv *a;
	struct word adv;

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (!word_is(k, nums[i].name))
			continue;
		if (parse_u64(v, nums[i].lo, nums[i].hi, &x) < 0)
			return reject(reason,
				      "%s must be an integer in [%" PRIu64 ", %" PRIu64
				      "], not '%.*s'",
				      nums[i].name, nums[i].lo, nums[i].hi, (int)v->n, v->p);
		switch (i) {
		case 0:
			out->duration_ms = x;
			break;
		case 1:
			out->host_tracer_level = (uint32_t)x;
			break;
		case 2:
			out->device_tracer_level = (uint32_t)x;
			break;
		case 3:
			out->python_tracer_level = (uint32_t)x;
			break;
		case 4:
			out->delay_ms = x;
			out->has_delay = true;
			break;
		default:
			out->deadline_ms = x;
			out->has_deadline = true;
			break;
		}
		return 0;
	}
	if (word_is(k, "session") || word_is(k, "host")) {
		char *dst = word_is(k, "session") ? out->session : out->host_dir;

		if (!capture_name_valid(v->p, v->n))
			return reject(reason,
				      "%.*s= must be a plain file name (no '/', '..' or control "
				      "characters), not '%.*s'",
				      (int)k->n, k->p, (int)v->n, v->p);
		memcpy(dst, v->p, v->n);
		dst[v->n] = '\0';
		return 0;
	}
	if (k->n <= ADV_PREFIX_LEN || memcmp(k->p, ADV_PREFIX, ADV_PREFIX_LEN) != 0)
		return unknown_option(k, reason);
	adv.p = k->p + ADV_PREFIX_LEN;
	adv.n = k->n - ADV_PREFIX_LEN;
	k = &adv;
	if (!adv_key_valid(k->p, k->n))
		return reject(reason, "bad option name '%.*s'", (int)k->n, k->p);
	if (v->n > CAPTURE_MAX_ADV_VAL)
		return reject(reason, "value of %.*s is too long (at most %d bytes)", (int)k->n,
			      k->p, CAPTURE_MAX_ADV_VAL);
	for (size_t i = 0; i < out->n_adv; i++)
		if (strlen(out->adv[i].key) == k->n && memcmp(out->adv[i].key, k->p, k->n) == 0)
			return reject(reason, "option %.*s given twice", (int)k->n, k->p);
	if (out->n_adv == CAPTURE_MAX_ADV)
		return reject(reason, "too many advanced options (at most %d)", CAPTURE_MAX_ADV);
	a = &out->adv[out->n_adv];
	memset(a, 0, sizeof(*a));
	memcpy(a->key, k->p, k->n);
	if (word_is(v, "true") || word_is(v, "false")) {
		a->type = CAPTURE_ADV_BOOL;
		a->b = word_is(v, "true");
	} else if (parse_i64(v, &a->i) == 0) {
		a->type = CAPTURE_ADV_INT;
	} else {
		for (size_t i = 0; i < v->n; i++)
			if ((unsigned char)v->p[i] < 0x20 || v->p[i] == 0x7f)
				return reject(reason, "control character in the value of %.*s",
					      (int)k->n, k->p);
		a->type = CAPTURE_ADV_STRING;
		memcpy(a->str, v->p, v->n);
	}
	out->n_adv++;
	return 0;
}

static int split_words(const char *line, size_t len, struct word *w, size_t *nw,
		       struct xprofs_buf *reason)
{
	size_t i = 0, n = 0;

	while (i < len) {
		size_t s;

		while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
			i++;
		if (i == len)
			break;
		s = i;
		while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			i++;
		if (n == MAX_WORDS)
			return reject(reason, "too many words (at most %d)", MAX_WORDS);
		w[n].p = line + s;
		w[n].n = i - s;
		n++;
	}
	*nw = n;
	return 0;
}

int capture_line_parse(const char *line, size_t len, struct capture_req *out,
		       struct xprofs_buf *reason)
{
	struct word w[MAX_WORDS];
	size_t nw = 0, i;
	bool seen_cmd = false;
	int r;

	memset(out, 0, sizeof(*out));
	out->cmd = CAPTURE_CMD_PROFILE;
	out->duration_ms = CAPTURE_DEFAULT_DURATION_MS;
	out->host_tracer_level = 2; /* the server's own defaults */
	out->device_tracer_level = 1;
	out->python_tracer_level = 0;

	if (len > CAPTURE_MAX_LINE)
		return reject(reason, "line too long (at most %d bytes)", CAPTURE_MAX_LINE);
	if (memchr(line, '\0', len) || memchr(line, '\n', len))
		return reject(reason, "NUL or newline inside a line");
	r = split_words(line, len, w, &nw, reason);
	if (r < 0)
		return r;
	if (nw == 0 || w[0].p[0] == '#')
		return -ENODATA;

	for (i = 0; i < nw; i++) {
		const char *eq = memchr(w[i].p, '=', w[i].n);
		struct word k, v;

		if (eq) {
			k.p = w[i].p;
			k.n = (size_t)(eq - w[i].p);
			v.p = eq + 1;
			v.n = w[i].n - k.n - 1;
			if (word_is(&k, "run")) {
				if (out->has_run)
					return reject(reason, "run= given twice");
				if (v.n == 1 && v.p[0] == '.') {
					out->run[0] = '\0'; /* the logdir root itself */
				} else {
					if (!xprofs_capture_run_valid(v.p, v.n))
						return reject(
							reason,
							"bad run name '%.*s': '/'-separated plain "
							"names, no '..' or control characters",
							(int)v.n, v.p);
					memcpy(out->run, v.p, v.n);
					out->run[v.n] = '\0';
				}
				out->has_run = true;
				continue;
			}
			seen_cmd = true; /* options before any command word: a capture */
			out->n_opts++;
			r = parse_option(&k, &v, out, reason);
			if (r < 0)
				return r;
			continue;
		}
		if (!seen_cmd) {
			seen_cmd = true;
			if (word_is(&w[i], "stop")) {
				out->cmd = CAPTURE_CMD_STOP;
				continue;
			}
			if (word_is(&w[i], "snapshot")) {
				out->cmd = CAPTURE_CMD_SNAPSHOT;
				continue;
			}
			if (word_is(&w[i], "continuous")) {
				if (i + 1 < nw && word_is(&w[i + 1], "start"))
					out->cmd = CAPTURE_CMD_CONT_START;
				else if (i + 1 < nw && word_is(&w[i + 1], "stop"))
					out->cmd = CAPTURE_CMD_CONT_STOP;
				else
					return reject(reason, "'continuous' must be followed by "
							      "'start' or 'stop'");
				i++;
				continue;
			}
		}
		if (memchr(w[i].p, ':', w[i].n)) {
			r = parse_hosts(&w[i], out, reason);
			if (r < 0)
				return r;
			continue;
		}
		return reject(reason,
			      "unknown word '%.*s' (expected HOST:PORT, KEY=VALUE or a command; "
			      "read the control file for help)",
			      (int)w[i].n, w[i].p);
	}
	switch (out->cmd) {
	case CAPTURE_CMD_STOP:
		if (out->n_hosts || out->n_opts)
			return reject(reason, "'stop' takes no hosts or options (only run=)");
		break;
	case CAPTURE_CMD_CONT_STOP:
		if (out->n_opts)
			return reject(reason, "'continuous stop' takes only HOST:PORT[,...]");
		/* fall through */
	default:
		if (out->n_hosts == 0)
			return reject(reason, "no HOST:PORT given");
		if (out->host_dir[0] && out->n_hosts > 1)
			return reject(
				reason,
				"host= names one host's directory; it needs exactly one HOST:PORT");
		break;
	}
	return 0;
}
