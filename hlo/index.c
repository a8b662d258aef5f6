/*
 * index.c - the index of programs: where each HloProto's bytes lie, and its
 * module name, from the two places a profile keeps them.
 *
 * Sources (openxla/xprof): the session's sidecar files
 * "<module>(<program id>).hlo_proto.pb" (XProf writes them beside the
 * profile; module and id come from the name), and ParseHloProtosFromXSpace()
 * (hlo_proto_map.cc): the first "/host:metadata" plane's event metadata
 * whose "Hlo Proto" stat holds a bytes HloProto, program id = the metadata's
 * id; a plane with plane stats is the legacy form, each bytes plane stat one
 * HloProto keyed by its metadata id. trace/hlo-syms.c finds the same bytes
 * for the trace's symbol resolver.
 *
 * Design: adding a program reads at most its module's top-level fields (for
 * the name); nothing else until a program is decoded (program.c). Limits:
 * XPROFS_HLO_PROGRAMS_MAX programs, each at most XPROFS_HLO_PROTO_MAX bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hlo-internal.h"
#include "xprofs/xspace.h"

struct entry {
	char *module; /* owned */
	uint64_t program_id;
	enum xprofs_hlo_source source;
	const struct xprofs_reader *r; /* borrowed */
	uint64_t off, len;
};

struct xprofs_hlo_index {
	struct entry *e;
	size_t n, cap;
};

int xprofs_hlo_index_new(struct xprofs_hlo_index **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void xprofs_hlo_index_free(struct xprofs_hlo_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->n; i++)
		free(idx->e[i].module);
	free(idx->e);
	free(idx);
}

/* HloProto.hlo_module.name at [c->pos, c->end) (the last one, as protobuf merges); caller frees. */
static int peek_module_name(struct wire_cur *c, char **name)
{
	uint64_t len, save;
	int r;

	while ((r = wire_next_len_field(c, c->end, "HloProto", HLO_F_PROTO_MODULE, &len)) > 0) {
		save = c->end;
		c->end = c->pos + len;
		while ((r = wire_next_len_field(c, c->end, "HloModuleProto", HLO_F_MOD_NAME,
						&len)) > 0) {
			size_t keep = len > XPROFS_HLO_STR_MAX ? XPROFS_HLO_STR_MAX : (size_t)len;
			const uint8_t *s;
			char *n;

			if ((r = wire_at(c, c->pos, keep, &s)) < 0)
				break;
			if (!(n = strndup((const char *)s, keep))) {
				r = -ENOMEM;
				break;
			}
			free(*name);
			*name = n;
			c->pos += len;
		}
		c->pos = c->end;
		c->end = save;
		if (r < 0)
			return r;
	}
	return r;
}

int xprofs_hlo_index_add(struct xprofs_hlo_index *idx, const struct xprofs_reader *r, uint64_t off,
			 uint64_t len, uint64_t program_id, const char *module,
			 enum xprofs_hlo_source source, struct xprofs_buf *err)
{
	char *name = NULL;
	struct entry *e;
	int ret;

	if ((ret = hlo_span_check(r, off, len, err)) < 0)
		return ret;
	if (len > XPROFS_HLO_PROTO_MAX || idx->n >= XPROFS_HLO_PROGRAMS_MAX) {
		if (err && !err->len)
			(void)!xprofs_buf_printf(err,
						 "program %" PRIu64 ": past the limits of %" PRIu64
						 " bytes per HloProto or %zu programs",
						 program_id, XPROFS_HLO_PROTO_MAX,
						 XPROFS_HLO_PROGRAMS_MAX);
		return -E2BIG;
	}
	if (module) {
		if (!(name = strdup(module)))
			return -ENOMEM;
	} else {
		struct wire_cur c;

		wire_cur_init(&c, r, err);
		c.win_pref = 64 << 10; /* a few fields of a large proto: small reads */
		c.pos = off;
		c.end = off + len;
		ret = peek_module_name(&c, &name);
		wire_cur_deinit(&c);
		if (ret < 0) {
			free(name);
			return ret;
		}
		if (!name && !(name = strdup("")))
			return -ENOMEM;
	}
	if ((ret = xprofs_grow(&idx->e, &idx->cap, idx->n, sizeof(*idx->e), 16)) < 0) {
		free(name);
		return ret;
	}
	e = &idx->e[idx->n++];
	e->module = name;
	e->program_id = program_id;
	e->source = source;
	e->r = r;
	e->off = off;
	e->len = len;
	return 0;
}

int xprofs_hlo_sidecar_name(const char *file_name, size_t *module_len, uint64_t *program_id)
{
	static const char suffix[] = ").hlo_proto.pb";
	size_t n = strlen(file_name), k = sizeof(suffix) - 1, open;
	uint64_t id = 0;

	if (n < k + 2 || strcmp(file_name + n - k, suffix))
		return -EINVAL;
	open = n - k;
	while (open > 0 && file_name[open - 1] >= '0' && file_name[open - 1] <= '9')
		open--;
	if (open == n - k || open == 0 || file_name[open - 1] != '(' || n - k - open > 20)
		return -EINVAL;
	for (size_t i = open; i < n - k; i++) {
		uint64_t dgt = (uint64_t)(file_name[i] - '0');

		if (id > (UINT64_MAX - dgt) / 10)
			return -EINVAL;
		id = id * 10 + dgt;
	}
	*module_len = open - 1;
	*program_id = id;
	return 0;
}

int xprofs_hlo_index_add_sidecar(struct xprofs_hlo_index *idx, const char *file_name,
				 const struct xprofs_reader *r, struct xprofs_buf *err)
{
	size_t mlen;
	uint64_t id;
	char *module;
	int ret;

	if (xprofs_hlo_sidecar_name(file_name, &mlen, &id) < 0) {
		if (err && !err->len)
			(void)!xprofs_buf_printf(
				err,
				"%s: not a \"<module>(<program id>).hlo_proto.pb\" "
				"name",
				file_name);
		return -EINVAL;
	}
	if (!(module = strndup(file_name, mlen)))
		return -ENOMEM;
	ret = xprofs_hlo_index_add(idx, r, 0, r->size, id, module, XPROFS_HLO_SIDECAR, err);
	free(module);
	return ret;
}

/* XStat at [pos, end): its metadata id and, when its value is bytes, where they lie. */
static int read_stat(struct wire_cur *c, uint64_t *md, struct xs_span *bytes, bool *is_bytes)
{
	uint32_t f;
	int wt, r;
	uint64_t len;

	*md = 0;
	*is_bytes = false;
	while (c->pos < c->end) {
		if ((r = wire_tag(c, &f, &wt)) < 0)
			return r;
		if (f == XSTAT_F_METADATA_ID) {
			if ((r = wire_varint_field(c, wt, "XStat", f, md)) < 0)
				return r;
		} else if (f >= XSTAT_F_DOUBLE && f <= XSTAT_F_LAST) { /* the oneof: last wins */
			*is_bytes = f == XSTAT_F_BYTES;
			if (!*is_bytes) {
				if ((r = wire_skip(c, wt)) < 0)
					return r;
				continue;
			}
			if ((r = wire_len_field(c, wt, "XStat", f, &len)) < 0)
				return r;
			bytes->off = c->pos;
			bytes->len = len;
			c->pos += len;
		} else if ((r = wire_skip(c, wt)) < 0) {
			return r;
		}
	}
	return 0;
}

/* Add one found proto; one whose module name does not read is skipped. */
static int add_found(struct xprofs_hlo_index *idx, const struct xprofs_xspace *x,
		     const struct xs_span *b, uint64_t pid, ssize_t *added)
{
	int r = xprofs_hlo_index_add(idx, x->r, b->off, b->len, pid, NULL, XPROFS_HLO_METADATA,
				     NULL);

	if (r == 0)
		(*added)++;
	return r == -EINVAL ? 0 : r;
}

/* The event metadata of plane @p: each one's id and first "Hlo Proto" stat. */
static int each_event_md(struct xprofs_hlo_index *idx, const struct xprofs_xspace *x,
			 struct wire_cur *c, const struct xs_plane *p, int64_t want, ssize_t *added)
{
	for (size_t i = 0; i < p->ev.n; i++) {
		struct xs_span b = {0}, sb;
		bool found = false, bytes = false, is_bytes;
		uint64_t id = 0, md, len, save;
		uint32_t f;
		int wt, r;

		c->pos = p->ev.md[i].off;
		c->end = p->ev.md[i].off + p->ev.md[i].len;
		while (c->pos < c->end) {
			if (wire_tag(c, &f, &wt) < 0)
				break;
			if (f == XEVMD_F_ID) {
				if (wire_varint_field(c, wt, "XEventMetadata", f, &id) < 0)
					break;
			} else if (f == XEVMD_F_STATS && wt == WT_LEN && !found) {
				if (wire_len(c, &len) < 0)
					break;
				save = c->end;
				c->end = c->pos + len;
				r = read_stat(c, &md, &sb, &is_bytes);
				c->pos = c->end;
				c->end = save;
				if (r < 0)
					break;
				if ((int64_t)md == want) {
					found = true;
					bytes = is_bytes;
					b = sb;
				}
			} else if (wire_skip(c, wt) < 0) {
				break;
			}
		}
		if (found && bytes && (r = add_found(idx, x, &b, id, added)) < 0)
			return r;
	}
	return 0;
}

ssize_t xprofs_hlo_index_add_xspace(struct xprofs_hlo_index *idx, const struct xprofs_xspace *x,
				    struct xprofs_buf *err)
{
	const struct xs_plane *p = NULL;
	struct wire_cur c;
	ssize_t added = 0;
	int64_t want;
	int r = 0;

	for (size_t i = 0; i < x->n_planes && !p; i++)
		if (xs_str_eq(x->planes[i].name, x->planes[i].name_len, "/host:metadata"))
			p = &x->planes[i]; /* FindPlaneWithName(): the first */
	if (!p)
		return 0;
	wire_cur_init(&c, x->r, err);
	c.win_pref = 64 << 10;
	if (p->n_stats) { /* the legacy form: every bytes plane stat */
		for (size_t i = 0; i < p->n_stats && r >= 0; i++) {
			struct xs_span b = {0};
			uint64_t md;
			bool is_bytes;

			c.pos = p->stats[i].off;
			c.end = p->stats[i].off + p->stats[i].len;
			if (read_stat(&c, &md, &b, &is_bytes) < 0 || !is_bytes)
				continue;
			r = add_found(idx, x, &b, md, &added);
		}
	} else if ((want = xs_stmd_key(&c, p, "Hlo Proto")) >= 0) {
		r = each_event_md(idx, x, &c, p, want, &added);
	}
	wire_cur_deinit(&c);
	return r < 0 ? r : added;
}

size_t xprofs_hlo_index_count(const struct xprofs_hlo_index *idx)
{
	return idx->n;
}

int xprofs_hlo_index_get(const struct xprofs_hlo_index *idx, size_t i,
			 struct xprofs_hlo_program_info *out)
{
	if (i >= idx->n)
		return -ERANGE;
	out->module = idx->e[i].module;
	out->program_id = idx->e[i].program_id;
	out->source = idx->e[i].source;
	out->r = idx->e[i].r;
	out->off = idx->e[i].off;
	out->len = idx->e[i].len;
	return 0;
}

ssize_t xprofs_hlo_index_find(const struct xprofs_hlo_index *idx, uint64_t program_id)
{
	for (size_t i = 0; i < idx->n; i++)
		if (idx->e[i].program_id == program_id)
			return (ssize_t)i;
	return -ENOENT;
}

int xprofs_hlo_program_load(const struct xprofs_hlo_index *idx, size_t i, struct xprofs_buf *err,
			    struct xprofs_hlo_program **out)
{
	*out = NULL;
	if (i >= idx->n)
		return -ERANGE;
	return xprofs_hlo_program_decode(idx->e[i].r, idx->e[i].off, idx->e[i].len, err, out);
}
