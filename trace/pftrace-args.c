/*
 * pftrace-args.c - trace.pftrace's args: the "k":v,... JSON fragments that
 * trace.json writes as an event's args (trace-model.c renders them) turned
 * into Perfetto DebugAnnotations, and the interning tables of the render.
 *
 * Design: parsing trace.json's own fragments keeps the args equal to
 * trace.json's by construction (same keys, order and value types: a JSON
 * string is string_value, an integer int_value (uint_value past 2^63), a
 * number with a fraction or exponent double_value, true/false bool_value).
 * Annotation names are interned (DebugAnnotation.name_iid,
 * InternedData.debug_annotation_names); an event metadata's args are encoded
 * once per render (struct trace_pf_md) with their string values interned
 * (string_value_iid, InternedData.debug_annotation_string_values: the HLO
 * text in long_name repeats on every event of the op), so an event costs a
 * copy of those bytes plus its own stats. Iids are unique per trace. Plain
 * numeric stats skip the JSON (trace_pf_event_stat()); the metadata and stat-name
 * entries are found through per-plane caches indexed like the decoder's
 * metadata cache, so the common look-up is one compare. Each table is an
 * array in the order made, indexed by an xprofs_table (util.h): a cached
 * index stays valid as the tables grow.
 *
 * Limits: the tables grow with the distinct metadata and stat names used
 * (O(metadata), as the decoder's own metadata cache); the encoded metadata
 * args take at most BLOBS_MAX bytes (later metadata's args are encoded per
 * event, strings inline); a fragment that does not parse as trace.json
 * writes them ends the annotations there.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pftrace.h"

#define STR_INTERN_MIN 4             /* shorter metadata strings are written inline */
#define BLOBS_MAX ((size_t)32 << 20) /* encoded metadata args kept; past it, per event */

#define PF_SEQ_MEMO 4

/* One interned string (an annotation name, a derived event's name or string arg). */
struct trace_pf_name {
	size_t off, len; /* in its table's strs */
	uint64_t iid;
	/*
	 * The last sequences that defined it: a derived line's events go out
	 * interleaved with its siblings' and its source line's, which share
	 * names ("group_id"), so one would flip on every event.
	 */
	uint32_t seq[PF_SEQ_MEMO];
	uint32_t seq_next;
};

/* Whether @e is defined on @seq; if not, it is remembered as defined there (the caller defines it). */
static bool name_defined(struct trace_pf_name *e, uint32_t seq)
{
	for (int i = 0; i < PF_SEQ_MEMO; i++)
		if (e->seq[i] == seq)
			return true;
	e->seq[e->seq_next++ % PF_SEQ_MEMO] = seq;
	return false;
}

/* Recent strings remembered per table: the same few names recur on every event. */
#define STRTAB_MEMO 16

/* A string-keyed interning table: entries in t[], found through @tab; strings back to back. */
struct trace_pf_strtab {
	struct trace_pf_name *t; /* owned, in the order made */
	size_t cap, n;
	struct xprofs_table *tab; /* string -> index in t[] */
	struct pbw strs;
	uint32_t memo[STRTAB_MEMO]; /* index + 1 of a recent string per strtab_slot(); 0: none */
};

/* Derived events' names and string args, each table: at most this many, of at most this many bytes. */
#define PF_ENAMES_MAX ((size_t)1 << 18)
#define PF_ENAMES_BYTES ((size_t)32 << 20)
/* Annotation names: more than PBW_MAX bytes of distinct names can make (about 17 million). */
#define PF_ANAMES_MAX ((size_t)1 << 25)

struct trace_pf_args {
	struct trace_pf_md *mds; /* owned, in the order made */
	size_t md_cap, n_md;
	struct xprofs_table *md_tab; /* (plane, md) -> index in mds[] */
	struct trace_pf_strtab nm;   /* annotation names; iid from next_ann_iid */
	struct trace_pf_strtab
		en; /* derived events' names (trace_pf_event_name()); iid from next_name_iid */
	struct trace_pf_strtab
		sv; /* derived events' string args (trace_pf_arg_str()); iid from next_str_iid */
	struct pbw blobs; /* the metadata args, encoded */
	struct pbw key, val, da,
		def; /* scratch: unescaped key and value, an annotation, an entry */
	uint64_t next_name_iid, next_ann_iid, next_str_iid;
	uint64_t iid_step; /* iids go first, first + step, ... (trace_pf_args_new()) */
	/* per current plane, by metadata index: 1 + the index of its entry, 0: none (a cache) */
	uint32_t *ev_slot, *st_slot;
	size_t ev_n, st_n, cache_plane;
};

int trace_pf_args_new(uint64_t first, uint64_t step, struct trace_pf_args **out)
{
	struct trace_pf_args *A = calloc(1, sizeof(*A));

	int r;

	*out = NULL;
	if (!A)
		return -ENOMEM;
	if ((r = xprofs_table_new(XPROFS_TABLE_MAX, &A->md_tab)) < 0 ||
	    (r = xprofs_table_new(PF_ANAMES_MAX, &A->nm.tab)) < 0 ||
	    (r = xprofs_table_new(PF_ENAMES_MAX, &A->en.tab)) < 0 ||
	    (r = xprofs_table_new(PF_ENAMES_MAX, &A->sv.tab)) < 0) {
		trace_pf_args_free(A);
		return r;
	}
	A->next_name_iid = A->next_ann_iid = A->next_str_iid = first ? first : 1;
	A->iid_step = step ? step : 1;
	A->cache_plane = SIZE_MAX;
	*out = A;
	return 0;
}

void trace_pf_args_free(struct trace_pf_args *A)
{
	if (!A)
		return;
	free(A->mds);
	xprofs_table_free(A->md_tab);
	free(A->nm.t);
	xprofs_table_free(A->nm.tab);
	pbw_free(&A->nm.strs);
	free(A->en.t);
	xprofs_table_free(A->en.tab);
	pbw_free(&A->en.strs);
	free(A->sv.t);
	xprofs_table_free(A->sv.tab);
	pbw_free(&A->sv.strs);
	free(A->ev_slot);
	free(A->st_slot);
	pbw_free(&A->blobs);
	pbw_free(&A->key);
	pbw_free(&A->val);
	pbw_free(&A->da);
	pbw_free(&A->def);
	free(A);
}

/* ---- JSON fragments ---------------------------------------------------- */

static unsigned hex4(const char *h)
{
	unsigned u = 0;

	for (int d = 0; d < 4; d++) {
		char c = h[d];

		u = u * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0'
					: ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
						? (c | 0x20) - 'a' + 10
						: 0);
	}
	return u;
}

static void put_utf8(struct pbw *o, unsigned u)
{
	uint8_t b[4];
	size_t n;

	if (u < 0x80) {
		b[0] = (uint8_t)u, n = 1;
	} else if (u < 0x800) {
		b[0] = (uint8_t)(0xc0 | (u >> 6)), b[1] = (uint8_t)(0x80 | (u & 0x3f)), n = 2;
	} else if (u < 0x10000) {
		b[0] = (uint8_t)(0xe0 | (u >> 12)), b[1] = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
		b[2] = (uint8_t)(0x80 | (u & 0x3f)), n = 3;
	} else {
		b[0] = (uint8_t)(0xf0 | (u >> 18)), b[1] = (uint8_t)(0x80 | ((u >> 12) & 0x3f));
		b[2] = (uint8_t)(0x80 | ((u >> 6) & 0x3f)), b[3] = (uint8_t)(0x80 | (u & 0x3f));
		n = 4;
	}
	pbw_bytes(o, b, n);
}

/* JSON's one-letter escapes, and the characters they stand for. */
static const char esc_letters[] = "bfnrt", esc_chars[] = "\b\f\n\r\t";

size_t trace_pf_json_unescape(const char *j, size_t n, struct pbw *out)
{
	pbw_reset(out);
	if (n >= 2 && j[0] == '"') {
		j++;
		n -= 2;
	}
	for (size_t i = 0; i < n; i++) {
		size_t run = i;
		char c;

		while (run < n && j[run] != '\\')
			run++;
		pbw_bytes(out, j + i, run - i);
		if ((i = run) + 1 >= n)
			break;
		c = j[++i];
		if (c != 'u') {
			/* a one-letter escape: its character; \", \\ and \/ the letter itself */
			const char *e = memchr(esc_letters, c, sizeof(esc_letters) - 1);

			pbw_bytes(out, e ? &esc_chars[e - esc_letters] : &c, 1);
		} else {
			unsigned u;

			if (i + 4 >= n)
				return out->len;
			u = hex4(j + i + 1);
			i += 4;
			if (u >= 0xd800 && u < 0xdc00 && i + 6 < n && j[i + 1] == '\\' &&
			    j[i + 2] == 'u') {
				unsigned lo = hex4(j + i + 3);

				if (lo >= 0xdc00 && lo < 0xe000) {
					u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
					i += 6;
				}
			}
			put_utf8(out, u);
		}
	}
	return out->len;
}

/* The end of the JSON string starting at @j[0] == '"' (index past its closing quote), or 0;
 * *@esc: it holds escapes. */
static size_t str_end(const char *j, size_t n, bool *esc)
{
	*esc = false;
	for (size_t i = 1; i < n; i++) {
		const char *q = memchr(j + i, '"', n - i);
		size_t k;

		if (!q)
			return 0;
		i = (size_t)(q - j);
		for (k = i; k > 1 && j[k - 1] == '\\'; k--)
			;
		if ((i - k) % 2 == 0) {
			*esc = memchr(j + 1, '\\', i - 1) != NULL;
			return i + 1;
		}
	}
	return 0;
}

/* One "k":v pair of a fragment. */
struct trace_pf_kv {
	const char *key, *val; /* key: its JSON string; val: the raw JSON value */
	size_t key_len, val_len;
	bool key_esc, val_esc, val_str;
};

/* The pair at @j[*at..n) (commas skipped): 1 and @kv set, 0 at the end or on a bad fragment. */
static int next_kv(const char *j, size_t n, size_t *at, struct trace_pf_kv *kv)
{
	size_t i = *at, e;

	while (i < n && (j[i] == ',' || j[i] == ' ' || j[i] == '\n'))
		i++;
	if (i >= n || j[i] != '"' || !(e = str_end(j + i, n - i, &kv->key_esc)))
		return 0;
	kv->key = j + i;
	kv->key_len = e;
	i += e;
	if (i >= n || j[i] != ':')
		return 0;
	i++;
	if (i >= n)
		return 0;
	kv->val = j + i;
	kv->val_str = j[i] == '"';
	if (kv->val_str) {
		if (!(e = str_end(j + i, n - i, &kv->val_esc)))
			return 0;
	} else {
		for (e = 0; i + e < n && j[i + e] != ','; e++)
			;
		kv->val_esc = false;
	}
	kv->val_len = e;
	*at = i + e;
	return 1;
}

/* The unescaped text of JSON string @s (@n bytes with quotes): borrowed or in @scratch. */
static const char *text(const char *s, size_t n, bool esc, struct pbw *scratch, size_t *len)
{
	if (!esc) {
		*len = n - 2;
		return s + 1;
	}
	*len = trace_pf_json_unescape(s, n, scratch);
	return (const char *)scratch->buf;
}

/* ---- the per-plane slot caches --------------------------------------------- */

/* The slot caches follow rc's current plane (emptied on a change); 0 or -ENOMEM. */
static int cache_plane(struct trace_pf_args *A, const struct xs_rctx *rc)
{
	const struct xs_plane *p = &rc->x->planes[rc->plane];
	uint32_t *e, *st;

	if (A->cache_plane == rc->plane)
		return 0;
	e = calloc(p->ev.n + 1, sizeof(*e));
	st = calloc(p->st.n + 1, sizeof(*st));
	if (!e || !st) {
		free(e);
		free(st);
		return -ENOMEM;
	}
	free(A->ev_slot);
	free(A->st_slot);
	A->ev_slot = e, A->ev_n = p->ev.n;
	A->st_slot = st, A->st_n = p->st.n;
	A->cache_plane = rc->plane;
	return 0;
}

/* The cache entry of metadata entry @m of array @base (@n entries), or NULL. */
static uint32_t *cached(uint32_t *c, const void *base, size_t n, const void *m, size_t size)
{
	uintptr_t b = (uintptr_t)base, x = (uintptr_t)m;

	if (!c || x < b || x >= b + n * size)
		return NULL;
	return &c[(x - b) / size];
}

/* ---- string tables (annotation names, derived events' names) ------------ */

struct strkey {
	const char *s;
	size_t n;
};

/* An xprofs_table_eq_fn: entry @idx of the trace_pf_strtab @ctx holds the struct strkey @key. */
static bool strtab_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct trace_pf_strtab *tab = ctx;
	const struct trace_pf_name *e = &tab->t[idx];
	const struct strkey *k = key;

	/* an empty string has no bytes (and the buffer may have none yet) */
	return e->len == k->n && (!k->n || !memcmp(tab->strs.buf + e->off, k->s, k->n));
}

/*
 * The entry of @s (@n bytes) in @tab, or when new (*@made set) one made with
 * @iid; NULL when a new one cannot be made: @tab is full (its table's
 * maximum, or @max_bytes of strings) or out of memory.
 */
static struct trace_pf_name *strtab_get(struct trace_pf_strtab *tab, const char *s, size_t n,
					size_t max_bytes, uint64_t iid, bool *made)
{
	struct strkey k = {s, n};
	uint32_t *memo = &tab->memo[(n + (n ? (unsigned char)s[n - 1] : 0)) % STRTAB_MEMO];
	uint64_t h;
	size_t at = tab->strs.len;
	struct trace_pf_name *e;
	uint32_t i;

	*made = false;
	/* the memo first: one compare instead of hashing the string and probing */
	if (*memo && strtab_eq(tab, *memo - 1, &k))
		return &tab->t[*memo - 1];
	h = xprofs_table_hash(0, s, n);
	if (xprofs_table_find(tab->tab, h, strtab_eq, tab, &k, &i) == 0) {
		*memo = i + 1;
		return &tab->t[i];
	}
	if (at + n > max_bytes || xprofs_grow(&tab->t, &tab->cap, tab->n, sizeof(*tab->t), 64) < 0)
		return NULL;
	pbw_bytes(&tab->strs, s, n);
	if (tab->strs.overflow || xprofs_table_add(tab->tab, h, (uint32_t)tab->n) < 0) {
		tab->strs.len = at; /* not stored */
		return NULL;
	}
	*memo = (uint32_t)tab->n + 1;
	e = &tab->t[tab->n++];
	*e = (struct trace_pf_name){.off = at, .len = n, .iid = iid};
	*made = true;
	return e;
}

/* The entry of annotation name @s (@n bytes), made when new; NULL when out of memory. */
static struct trace_pf_name *name_get(struct trace_pf_args *A, const char *s, size_t n)
{
	bool made;
	struct trace_pf_name *e = strtab_get(&A->nm, s, n, SIZE_MAX, A->next_ann_iid, &made);

	if (made)
		A->next_ann_iid += A->iid_step;
	return e;
}

/* The name entry of stat metadata @m (a cache hit is one compare); NULL on failure. */
static struct trace_pf_name *stat_name(struct trace_pf_args *A, const struct xs_rctx *rc,
				       const struct xs_stmd *m)
{
	uint32_t *c = NULL;
	struct trace_pf_name *e;

	if (cache_plane(A, rc) == 0)
		c = cached(A->st_slot, rc->stmd, A->st_n, m, sizeof(*m));
	if (c && *c)
		return &A->nm.t[*c - 1];
	if ((e = name_get(A, m->name, m->name_len)) && c)
		*c = (uint32_t)(e - A->nm.t) + 1;
	return e;
}

/* An interned entry { iid, name } as field @field of InternedData @id. */
static void define(struct trace_pf_args *A, struct pbw *id, uint32_t field, uint64_t iid,
		   const void *s, size_t n)
{
	struct pbw *d = &A->def;

	pbw_reset(d);
	pbw_u64(d, F_EN_IID, iid);
	pbw_str(d, F_EN_NAME, s, n);
	pbw_msg(id, field, d);
}

/* ---- derived events' names and strings ------------------------------------ */

/*
 * The iid of @s (@n bytes) in @tab (a new one from *@next), defined as
 * InternedData field @field into @id when not yet defined on @seq; 0 when
 * the table is full (PF_ENAMES_MAX strings or PF_ENAMES_BYTES of them).
 */
static uint64_t strtab_intern(struct trace_pf_args *A, struct trace_pf_strtab *tab, uint32_t field,
			      uint64_t *next, const char *s, size_t n, uint32_t seq, struct pbw *id)
{
	bool made;
	/* full (or out of memory): known strings still resolve */
	struct trace_pf_name *e = strtab_get(tab, s, n, PF_ENAMES_BYTES, *next, &made);

	if (!e)
		return 0;
	if (made)
		*next += A->iid_step;
	if (!name_defined(e, seq)) {
		define(A, id, field, e->iid, s, n);
	}
	return e->iid;
}

uint64_t trace_pf_event_name(struct trace_pf_args *A, const char *s, size_t n, uint32_t seq,
			     struct pbw *id)
{
	return strtab_intern(A, &A->en, F_ID_EVENT_NAMES, &A->next_name_iid, s, n, seq, id);
}

/* Name @s of an annotation into @da, interned unless PF_INLINE (defined on @seq for PF_EVENT). */
static void ann_name_e(struct trace_pf_args *A, struct pbw *da, struct trace_pf_name *e,
		       const char *s, size_t n, enum trace_pf_mode mode, uint32_t seq,
		       struct pbw *id)
{
	if (mode == PF_INLINE || !e) {
		pbw_str(da, F_DA_NAME, s, n);
		return;
	}
	if (mode == PF_EVENT && !name_defined(e, seq)) {
		define(A, id, F_ID_ANN_NAMES, e->iid, s, n);
	}
	pbw_u64(da, F_DA_NAME_IID, e->iid);
}

static void ann_name(struct trace_pf_args *A, struct pbw *da, const char *s, size_t n,
		     enum trace_pf_mode mode, uint32_t seq, struct pbw *id)
{
	ann_name_e(A, da, mode == PF_INLINE ? NULL : name_get(A, s, n), s, n, mode, seq, id);
}

/* The value of @kv into annotation @da (@str_iid: its interned string id, 0: inline). */
static void ann_value(struct trace_pf_args *A, struct pbw *da, const struct trace_pf_kv *kv,
		      uint64_t str_iid)
{
	char num[64];
	size_t n = kv->val_len;

	if (kv->val_str) {
		const char *s;
		size_t len;

		if (str_iid) {
			pbw_u64(da, F_DA_STRING_IID, str_iid);
			return;
		}
		s = text(kv->val, kv->val_len, kv->val_esc, &A->val, &len);
		pbw_str(da, F_DA_STRING, s, len);
		return;
	}
	if (n == 4 && !memcmp(kv->val, "true", 4)) {
		pbw_u64(da, F_DA_BOOL, 1);
		return;
	}
	if (n == 5 && !memcmp(kv->val, "false", 5)) {
		pbw_u64(da, F_DA_BOOL, 0);
		return;
	}
	if (n >= sizeof(num))
		n = sizeof(num) - 1;
	memcpy(num, kv->val, n);
	num[n] = '\0';
	if (strpbrk(num, ".eE")) {
		double d = strtod(num, NULL);
		uint64_t bits;

		memcpy(&bits, &d, sizeof(bits));
		pbw_fixed64(da, F_DA_DOUBLE, bits);
	} else if (num[0] == '-') {
		pbw_u64(da, F_DA_INT, (uint64_t)strtoll(num, NULL, 10));
	} else {
		unsigned long long u = strtoull(num, NULL, 10);

		pbw_u64(da, u > INT64_MAX ? F_DA_UINT : F_DA_INT, u);
	}
}

/* A metadata string value long enough to intern. */
static bool interned_str(const struct trace_pf_kv *kv)
{
	return kv->val_str && kv->val_len >= STR_INTERN_MIN + 2;
}

void trace_pf_args_encode(struct trace_pf_args *A, const char *j, size_t n, enum trace_pf_mode mode,
			  uint32_t seq, uint64_t str_iid, struct pbw *te, struct pbw *id)
{
	struct pbw *da = &A->da;
	struct trace_pf_kv kv;
	size_t at = 0;

	while (next_kv(j, n, &at, &kv) == 1) {
		const char *k;
		size_t kl;
		uint64_t si = 0;

		k = text(kv.key, kv.key_len, kv.key_esc, &A->key, &kl);
		if (mode == PF_MD && interned_str(&kv))
			si = str_iid, str_iid += A->iid_step;
		pbw_reset(da);
		ann_name(A, da, k, kl, mode, seq, id);
		ann_value(A, da, &kv, si);
		pbw_msg(te, F_TE_ANNOTATION, da);
	}
}

void trace_pf_arg_int(struct trace_pf_args *A, const char *name, size_t len, int64_t v,
		      enum trace_pf_mode mode, uint32_t seq, struct pbw *te, struct pbw *id)
{
	struct pbw *da = &A->da;

	pbw_reset(da);
	ann_name(A, da, name, len, mode, seq, id);
	pbw_u64(da, F_DA_INT, (uint64_t)v);
	pbw_msg(te, F_TE_ANNOTATION, da);
}

/* A number trace.json writes as a JSON number: not past 2^53 (XProf quotes those). */
static bool plain_int(const struct xs_statv *s)
{
	uint64_t mag = s->kind == SV_I64 && (int64_t)s->u < 0 ? (uint64_t)0 - s->u : s->u;

	return mag <= (UINT64_C(1) << 53);
}

int trace_pf_event_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_pf_evstats *v = arg;
	struct xs_out *o = v->a.o;
	size_t at = o->len;
	int r;

	if (((s->kind == SV_U64 || s->kind == SV_I64) && plain_int(s)) ||
	    (s->kind == SV_DOUBLE && isfinite(s->d))) {
		const struct xs_stmd *cm;
		struct xs_stmd *m;

		if ((r = xs_md_stat(rc, s->md, &cm)) < 0)
			return r;
		m = (struct xs_stmd *)cm; /* the cache entry is the render's (as trace-model.c) */
		if (!m->tkind)
			m->tkind = (int8_t)(trace_stat_kind(m->name, m->name_len) + 1);
		if (m->tkind - 1 == TS_SHOW || m->tkind - 1 == TS_CORR) {
			/* a plain number: no JSON round trip */
			struct pbw *da = &v->A->da;

			trace_stat_note(&v->a, (enum trace_tstat)(m->tkind - 1), s);
			pbw_reset(da);
			ann_name_e(v->A, da, v->mode == PF_INLINE ? NULL : stat_name(v->A, rc, m),
				   m->name, m->name_len, v->mode, v->seq, v->id);
			if (s->kind == SV_DOUBLE) {
				uint64_t bits;

				memcpy(&bits, &s->d, sizeof(bits));
				pbw_fixed64(da, F_DA_DOUBLE, bits);
			} else {
				pbw_u64(da, F_DA_INT, s->u);
			}
			pbw_msg(v->ann, F_TE_ANNOTATION, da);
			return 0;
		}
	}
	/* anything else as trace.json renders it (special stats, strings, quoted numbers) */
	v->a.first = true;
	if ((r = trace_stat(rc, c, s, &v->a)) < 0)
		return r;
	if (o->len > at && !o->r)
		trace_pf_args_encode(v->A, o->buf + at, o->len - at, v->mode, v->seq, 0, v->ann,
				     v->id);
	return 0;
}

/* ---- event metadata ------------------------------------------------------ */

/* An xprofs_table_eq_fn: entry @idx of mds[] (of the trace_pf_args @ctx) is @key, {plane, md}. */
static bool md_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct trace_pf_md *e = &((const struct trace_pf_args *)ctx)->mds[idx];
	const uint64_t *k = key;

	return e->plane == k[0] && (uint64_t)e->md == k[1];
}

int trace_pf_md_get(struct trace_pf_args *A, const struct xs_rctx *rc, int64_t md,
		    const struct xs_evmd *m, struct trace_pf_md **out)
{
	size_t plane = rc->plane;
	uint64_t key[2] = {plane, (uint64_t)md}, h;
	struct trace_pf_md *e;
	uint32_t *c, i;
	size_t at;
	int r;

	if ((r = cache_plane(A, rc)) < 0)
		return r;
	c = cached(A->ev_slot, rc->evmd, A->ev_n, m, sizeof(*m));
	if (c && *c) {
		*out = &A->mds[*c - 1];
		return 0;
	}
	h = xprofs_table_hash(0, key, sizeof(key));
	if (xprofs_table_find(A->md_tab, h, md_eq, A, key, &i) == 0)
		goto found;
	i = (uint32_t)A->n_md;
	if ((r = xprofs_grow(&A->mds, &A->md_cap, A->n_md, sizeof(*A->mds), 1024)) < 0 ||
	    (r = xprofs_table_add(A->md_tab, h, i)) < 0)
		return r;
	e = &A->mds[i];
	memset(e, 0, sizeof(*e));
	e->plane = plane;
	e->md = md;
	e->name_iid = A->next_name_iid;
	A->next_name_iid += A->iid_step;
	e->str_iid = A->next_str_iid;
	at = A->blobs.len;
	e->blob_off = at;
	if (trace_md(m) && trace_md(m)->args_len) {
		struct trace_pf_kv kv;
		size_t p = 0;

		trace_pf_args_encode(A, trace_md(m)->args, trace_md(m)->args_len, PF_MD, 0,
				     e->str_iid, &A->blobs, NULL);
		while (next_kv(trace_md(m)->args, trace_md(m)->args_len, &p, &kv) == 1)
			if (interned_str(&kv))
				A->next_str_iid += A->iid_step;
	}
	if (A->blobs.overflow || A->blobs.len > BLOBS_MAX) {
		/* past the budget: this metadata's args are encoded per event, strings inline */
		A->blobs.len = at;
		A->blobs.overflow = false;
		e->inline_args = true;
	}
	e->blob_len = A->blobs.len - at;
	A->n_md++;
found:
	if (c)
		*c = i + 1;
	*out = &A->mds[i];
	return 0;
}

const uint8_t *trace_pf_md_blob(const struct trace_pf_args *A, const struct trace_pf_md *e)
{
	/* no blob stored yet: the buffer may be NULL, and NULL + 0 is undefined in C */
	return A->blobs.buf ? A->blobs.buf + e->blob_off : (const uint8_t *)"";
}

void trace_pf_md_define(struct trace_pf_args *A, struct trace_pf_md *e, const struct xs_evmd *m,
			const char *name, size_t len, uint32_t seq, struct pbw *id)
{
	uint64_t si = e->str_iid;
	struct trace_pf_kv kv;
	size_t at = 0;

	if (e->seq == seq)
		return;
	e->seq = seq;
	define(A, id, F_ID_EVENT_NAMES, e->name_iid, name, len);
	if (!trace_md(m) || !trace_md(m)->args_len)
		return;
	while (next_kv(trace_md(m)->args, trace_md(m)->args_len, &at, &kv) == 1) {
		const char *s;
		size_t n;
		struct trace_pf_name *nm;

		s = text(kv.key, kv.key_len, kv.key_esc, &A->key, &n);
		if ((nm = name_get(A, s, n)) && !name_defined(nm, seq)) {
			define(A, id, F_ID_ANN_NAMES, nm->iid, s, n);
		}
		if (interned_str(&kv) && !e->inline_args) {
			s = text(kv.val, kv.val_len, kv.val_esc, &A->val, &n);
			define(A, id, F_ID_ANN_STRINGS, si, s, n);
			si += A->iid_step;
		}
	}
}

void trace_pf_arg_str(struct trace_pf_args *A, const char *name, size_t len, const char *v,
		      size_t n, uint32_t seq, struct pbw *te, struct pbw *id)
{
	struct pbw *da = &A->da;
	uint64_t iid = 0;

	pbw_reset(da);
	ann_name(A, da, name, len, PF_EVENT, seq, id);
	if (n >= STR_INTERN_MIN)
		iid = strtab_intern(A, &A->sv, F_ID_ANN_STRINGS, &A->next_str_iid, v, n, seq, id);
	if (iid)
		pbw_u64(da, F_DA_STRING_IID, iid);
	else
		pbw_str(da, F_DA_STRING, v, n);
	pbw_msg(te, F_TE_ANNOTATION, da);
}
