/*
 * frames.c - the two parsers a gRPC response body goes through, both
 * incremental (they take the body in whatever pieces libcurl hands over,
 * down to one byte) and neither trusts a length for allocation:
 *
 * 1. struct capture_frames: gRPC length-prefixed messages (flag byte 0,
 *    4-byte big-endian length). Compressed messages are refused (we never
 *    advertise an encoding); a length over the caller's maximum is
 *    -EMSGSIZE before a byte of it is consumed.
 * 2. struct capture_resp: tensorflow.ProfileResponse wire format. The xspace
 *    field (8) is copied to a sink as it arrives, so a multi-GB profile
 *    passes through ~16 KiB at a time; tool_data (6) is buffered under
 *    CAPTURE_MAX_TOOL_DATA; empty_trace (7) is read; unknown fields are
 *    skipped. Every field length is checked against what is left of the
 *    enclosing message.
 *
 * Both are fuzzed by fuzz-grpc-frames.
 */
#include <errno.h>
#include <string.h>

#include "capture-internal.h"
#include "profiler_service.pb-c.h"

/* ---- gRPC framing ----------------------------------------------------- */

void capture_frames_init(struct capture_frames *f, const struct capture_msg_ops *ops, void *arg,
			 uint64_t max_msg, unsigned max_msgs)
{
	memset(f, 0, sizeof(*f));
	f->ops = ops;
	f->arg = arg;
	f->max_msg = max_msg;
	f->max_msgs = max_msgs;
}

int capture_frames_feed(struct capture_frames *f, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	int r;

	if (f->err)
		return f->err;
	while (n > 0) {
		if (!f->in_msg) {
			uint64_t len;

			while (f->hdr_len < 5 && n > 0) {
				f->hdr[f->hdr_len++] = *p++;
				n--;
			}
			if (f->hdr_len < 5)
				break;
			f->hdr_len = 0;
			if (f->hdr[0] != 0) {
				f->err = -EPROTO; /* 1 = compressed, others undefined */
				return f->err;
			}
			len = (uint64_t)f->hdr[1] << 24 | (uint64_t)f->hdr[2] << 16 |
			      (uint64_t)f->hdr[3] << 8 | f->hdr[4];
			if (len > f->max_msg) {
				f->err = -EMSGSIZE;
				return f->err;
			}
			if (f->n_msgs >= f->max_msgs) {
				f->err = -EPROTO;
				return f->err;
			}
			f->n_msgs++;
			r = f->ops->begin(f->arg, len);
			if (r < 0)
				goto fail;
			f->left = len;
			f->in_msg = true;
		}
		if (f->left > 0 && n > 0) {
			size_t k = n < f->left ? n : (size_t)f->left;

			r = f->ops->data(f->arg, p, k);
			if (r < 0)
				goto fail;
			p += k;
			n -= k;
			f->left -= k;
		}
		if (f->left == 0) {
			f->in_msg = false;
			r = f->ops->end(f->arg);
			if (r < 0)
				goto fail;
		}
	}
	return 0;
fail:
	f->err = r;
	return r;
}

int capture_frames_finish(struct capture_frames *f)
{
	if (f->err)
		return f->err;
	if (f->in_msg || f->hdr_len)
		return -EPROTO;
	return 0;
}

/* ---- a small message, collected whole --------------------------------- */

static int buf_begin(void *arg, uint64_t len)
{
	struct xprofs_buf *b = arg;

	return len > b->max - b->len ? -EMSGSIZE : 0;
}

static int buf_data(void *arg, const uint8_t *p, size_t n)
{
	return xprofs_buf_add(arg, p, n);
}

static int buf_end(void *arg)
{
	return 0;
}

const struct capture_msg_ops capture_buf_ops = {buf_begin, buf_data, buf_end};

/* ---- ProfileResponse -------------------------------------------------- */

enum {
	ST_TAG = 0, /* reading a field key varint */
	ST_VARINT,  /* reading a varint value */
	ST_LEN,     /* reading a length-delimited field's length */
	ST_XSPACE,  /* streaming field 8 to the sink */
	ST_TOOL,    /* buffering one tool_data entry */
	ST_SKIP,    /* skipping fleft bytes */
};

#define F_TOOL_DATA 6
#define F_EMPTY_TRACE 7
#define F_XSPACE 8

void capture_resp_init(struct capture_resp *r, struct xprofs_sink xspace)
{
	memset(r, 0, sizeof(*r));
	r->xspace = xspace;
	xprofs_buf_init(&r->tool, CAPTURE_MAX_TOOL_DATA);
}

void capture_resp_deinit(struct capture_resp *r)
{
	xprofs_buf_deinit(&r->tool);
}

/*
 * Append one byte to the varint being read. 1 when complete (*v set), 0 when
 * more bytes are needed, -EPROTO past 10 bytes or 64 bits.
 */
static int varint_byte(struct capture_resp *r, uint8_t b, uint64_t *v)
{
	uint64_t x = 0;

	if (r->vlen == 10)
		return -EPROTO;
	r->vbuf[r->vlen++] = b;
	if (b & 0x80)
		return r->vlen == 10 ? -EPROTO : 0;
	if (r->vlen == 10 && r->vbuf[9] > 1)
		return -EPROTO;
	for (unsigned i = 0; i < r->vlen; i++)
		x |= (uint64_t)(r->vbuf[i] & 0x7f) << (7 * i);
	r->vlen = 0;
	*v = x;
	return 1;
}

static void tool_done(struct capture_resp *r)
{
	Tensorflow__ProfileToolData *td;

	r->n_tools++;
	td = tensorflow__profile_tool_data__unpack(NULL, r->tool.len,
						   (const uint8_t *)r->tool.data);
	/* tool_data is informational: a malformed entry is counted, not fatal */
	if (td && r->n_tools <= CAPTURE_MAX_TOOLS && td->name) {
		char *dst = r->tools[r->n_tools - 1];

		strncpy(dst, td->name, sizeof(r->tools[0]) - 1);
		dst[sizeof(r->tools[0]) - 1] = '\0';
	}
	if (td)
		tensorflow__profile_tool_data__free_unpacked(td, NULL);
	xprofs_buf_reset(&r->tool);
}

static int resp_begin(void *arg, uint64_t len)
{
	struct capture_resp *r = arg;

	r->msg_left = len;
	r->st = ST_TAG;
	r->vlen = 0;
	return 0;
}

static int resp_data(void *arg, const uint8_t *p, size_t n)
{
	struct capture_resp *r = arg;
	uint64_t v;
	int k;

	if (n > r->msg_left)
		return -EPROTO; /* the frame layer never does this; be safe anyway */
	while (n > 0) {
		switch (r->st) {
		case ST_TAG:
		case ST_VARINT:
		case ST_LEN:
			k = varint_byte(r, *p++, &v);
			n--;
			r->msg_left--;
			if (k < 0)
				return k;
			if (k == 0)
				break;
			if (r->st == ST_TAG) {
				if (v >> 3 == 0 || v >> 3 > 0x1fffffff)
					return -EPROTO;
				r->field = (uint32_t)(v >> 3);
				r->wire = (uint32_t)(v & 7);
				if ((r->field == F_EMPTY_TRACE && r->wire != 0) ||
				    ((r->field == F_XSPACE || r->field == F_TOOL_DATA) &&
				     r->wire != 2))
					return -EPROTO;
				switch (r->wire) {
				case 0:
					r->st = ST_VARINT;
					break;
				case 2:
					r->st = ST_LEN;
					break;
				case 1: /* fixed64 */
				case 5: /* fixed32 */
					r->st = ST_SKIP;
					r->fleft = r->wire == 1 ? 8 : 4;
					break;
				default:
					return -EPROTO; /* groups and undefined types */
				}
				if (r->st == ST_SKIP && r->fleft > r->msg_left)
					return -EPROTO;
			} else if (r->st == ST_VARINT) {
				if (r->field == F_EMPTY_TRACE)
					r->empty_trace = v != 0;
				r->st = ST_TAG;
			} else {
				if (v > r->msg_left)
					return -EPROTO;
				r->fleft = v;
				if (r->field == F_XSPACE) {
					r->has_xspace = true;
					r->st = ST_XSPACE;
				} else if (r->field == F_TOOL_DATA) {
					if (v > CAPTURE_MAX_TOOL_DATA - r->tool_bytes)
						return -EMSGSIZE;
					r->tool_bytes += v;
					r->st = ST_TOOL;
				} else {
					r->st = ST_SKIP;
				}
			}
			if (r->fleft == 0 && r->st != ST_TAG && r->st != ST_VARINT &&
			    r->st != ST_LEN) {
				if (r->st == ST_TOOL)
					tool_done(r);
				r->st = ST_TAG;
			}
			break;
		default: {
			size_t take = n < r->fleft ? n : (size_t)r->fleft;

			if (r->st == ST_XSPACE) {
				int e = r->xspace.write(r->xspace.arg, p, take);

				if (e < 0)
					return e;
				r->xspace_bytes += take;
			} else if (r->st == ST_TOOL) {
				int e = xprofs_buf_add(&r->tool, p, take);

				if (e < 0)
					return e;
			}
			p += take;
			n -= take;
			r->msg_left -= take;
			r->fleft -= take;
			if (r->fleft == 0) {
				if (r->st == ST_TOOL)
					tool_done(r);
				r->st = ST_TAG;
			}
			break;
		}
		}
	}
	return 0;
}

static int resp_end(void *arg)
{
	struct capture_resp *r = arg;

	if (r->msg_left != 0 || r->st != ST_TAG || r->vlen != 0)
		return -EPROTO;
	return 0;
}

const struct capture_msg_ops capture_resp_ops = {resp_begin, resp_data, resp_end};
