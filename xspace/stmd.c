/*
 * stmd.c - the stat metadata entries of the render's metadata cache: the
 * names every stat's key and every ref value need, decoded on first use.
 *
 * Design: the lowest layer of the cache: it decodes XStatMetadata names
 * only, so XStat decoding (xstat.c) can look names up without depending on
 * event metadata (metadata.c), which in turn decodes stats. The arrays are
 * made and dropped with the plane (metadata.c). Limits: names are cut at
 * XS_STR_MAX; a missing entry reads as the empty name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xprofs/xspace.h"

static struct xs_stmd empty_stmd = {
	.loaded = true, .name = (char *)"", .json = (char *)"\"\":", .json_len = 2};

void xs_stmd_clear(struct xs_stmd *s)
{
	free(s->name);
	free(s->json);
	memset(s, 0, sizeof(*s));
}

/*
 * xs_md_names() - the name (field XSTMD_F_NAME = XEVMD_F_NAME = 2) and, when
 * @disp is not NULL, the display name (XEVMD_F_DISPLAY_NAME) of the metadata
 * message at the cursor. *name and *disp: caller owns (free()), NULL if absent.
 */
int xs_md_names(struct wire_cur *c, const char *msg, char **name, size_t *name_len, char **disp,
		size_t *disp_len)
{
	uint32_t f;
	int wt, r;

	while (c->pos < c->end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if (f == XEVMD_F_NAME || (disp && f == XEVMD_F_DISPLAY_NAME)) {
			if ((r = wire_expect(c, wt, WT_LEN, msg, f)) < 0)
				return r;
			r = f == XEVMD_F_NAME ? wire_string(c, XS_STR_MAX, name, name_len)
					      : wire_string(c, XS_STR_MAX, disp, disp_len);
			if (r < 0)
				return r;
		} else if ((r = wire_skip(c, wt)) < 0) {
			return r;
		}
	}
	return 0;
}

/* Decode the XStatMetadata at the metadata cursor into @s (cleared on failure). */
static int stmd_fill(struct xs_rctx *rc, struct xs_stmd *s)
{
	char *kj;
	int r;

	if ((r = xs_md_names(&rc->md, "XStatMetadata", &s->name, &s->name_len, NULL, NULL)) < 0)
		goto out;
	if (!s->name && !(s->name = strdup(""))) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = xs_json_dup(s->name, s->name_len, &s->json, &s->json_len)) < 0)
		goto out;
	/* keep a ':' after the name: stats write (json, json_len + 1) as their key */
	if (!(kj = realloc(s->json, s->json_len + 2))) {
		r = -ENOMEM;
		goto out;
	}
	kj[s->json_len] = ':';
	kj[s->json_len + 1] = '\0';
	s->json = kj;
	s->loaded = true;
	rc->md_bytes += sizeof(*s) + s->name_len + s->json_len;
out:
	if (r < 0)
		xs_stmd_clear(s);
	return r;
}

int xs_md_decode(struct xs_rctx *rc, const struct xs_md *m, xs_md_decode_fn fn, void *entry)
{
	struct wire_cur *c = &rc->md;
	uint64_t pos = c->pos, end = c->end;
	int r;

	c->pos = m->off;
	c->end = m->off + m->len;
	r = fn(rc, entry, m);
	c->pos = pos;
	c->end = end;
	return r;
}

/* stmd_decode() - an xs_md_decode_fn: the stat metadata entry at the metadata cursor. */
static int stmd_decode(struct xs_rctx *rc, void *entry, const struct xs_md *m)
{
	return stmd_fill(rc, entry);
}

int xs_md_load_stat(struct xs_rctx *rc, int64_t key, const struct xs_stmd **out)
{
	const struct xs_plane *p = &rc->x->planes[rc->plane];
	ssize_t k = xs_md_find(&p->st, key);

	if (k < 0) {
		*out = &empty_stmd;
		return 0;
	}
	*out = &rc->stmd[k];
	if (rc->stmd[k].loaded)
		return 0;
	return xs_md_decode(rc, &p->st.md[k], stmd_decode, &rc->stmd[k]);
}

int64_t xs_stmd_key(struct wire_cur *c, const struct xs_plane *p, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < p->st.n; i++) {
		const struct xs_md *m = &p->st.md[i];
		uint64_t len;

		c->pos = m->off;
		c->end = m->off + m->len;
		while (wire_next_len_field(c, c->end, "XStatMetadata", XSTMD_F_NAME, &len) > 0) {
			const uint8_t *s;

			if (len == n && wire_at(c, c->pos, n, &s) == 0 && !memcmp(s, name, n))
				return m->key;
			c->pos += len;
		}
	}
	return -1;
}
