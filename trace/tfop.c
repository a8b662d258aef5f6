/*
 * tfop.c - a framework op (the tf_op stat): the name XProf shows for it and
 * the lines it derives, Framework Name Scope and Framework Ops
 * (ProcessTfOpEvent()), on GPU planes (derive-gpu.c) and TensorCore planes
 * (derive-tpu.c). The parse of its full name (ParseTfOpFullname()) is
 * xs_tfop_parse() (xspace/tfop.c), which stats/ shares.
 *
 * Sources: TSL tf_op_utils.cc ParseTfNameScopes(), TfOpEventName(); xprof
 * xprof/utils/derived_timeline.cc ProcessTfOpEvent().
 *
 * Design: a parsed op borrows the string it was parsed from. The derived
 * events go to the line builders (derive-builder.c).
 *
 * Limits: the tf_op string is cut at DER_NAME_MAX bytes; name scopes deeper
 * than DER_LEVELS are not derived.
 */
#include <stdint.h>
#include <string.h>

#include "derived.h"

/* absl::ascii_isspace() */
static bool a_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

int trace_tfop_event_name(const struct xs_tfop *op, struct xprofs_buf *b)
{
	const char *s = op->name, *last = s, *hit;
	size_t n = op->name_len;
	int r;

	xprofs_buf_reset(b);
	switch (op->cat) {
	case XS_TFOP_UNKNOWN: /* the name without trailing whitespace */
		while (n && a_space(s[n - 1]))
			n--;
		return trace_der_set_str(b, s, n);
	case XS_TFOP_TF_DATA: /* DatasetOpEventName(): "Iterator::" + the last "::" piece */
		while ((hit = memmem(last, n - (size_t)(last - s), "::", 2)) != NULL)
			last = hit + 2;
		n -= (size_t)(last - s);
		if ((r = xprofs_buf_adds(b, "Iterator::")) < 0)
			return r;
		return xprofs_buf_add(b, last, n > DER_NAME_MAX - 10 ? DER_NAME_MAX - 10 : n);
	default:
		return trace_der_set_str(b, op->type, op->type_len);
	}
}

/* ---- ProcessTfOpEvent() ---------------------------------------------------- */

/* ParseTfNameScopes(): every '/' piece of the op name but the last, one level each. */
static int name_scopes(struct trace_derive *d, const struct xs_tfop *op,
		       const struct trace_derived_in *in)
{
	struct der_line *dl = &d->lines[DL_NAME_SCOPE];
	const char *s = op->name, *end = op->name + op->name_len, *slash;
	int level = 0, r;

	while ((slash = memchr(s, '/', (size_t)(end - s))) != NULL) {
		if (level < DER_LEVELS &&
		    ((r = trace_der_set_str(&d->tmp, s, (size_t)(slash - s))) < 0 ||
		     (r = trace_der_expand_or_add(d, dl, level, &d->tmp, NULL, 0, in)) < 0))
			return r;
		level++;
		s = slash + 1;
	}
	if (level) /* ExpandOrAddEvents() of no scope changes nothing */
		trace_der_reset(d, dl, level);
	return 0;
}

/* ProcessTfOpEvent() of tf_op @s (@n bytes, cut at DER_NAME_MAX) for kernel @in. */
int trace_der_tf_op_event(struct trace_derive *d, const char *s, size_t n,
			  const struct trace_derived_in *in)
{
	struct xs_tfop op;
	int r;

	if (n > DER_NAME_MAX)
		n = DER_NAME_MAX;
	xs_tfop_parse(s, n, &op);
	if ((op.cat == XS_TFOP_TENSORFLOW || op.cat == XS_TFOP_JAX) &&
	    !(d->have & (1u << DL_NAME_SCOPE)) && (r = name_scopes(d, &op, in)) < 0)
		return r;
	if (d->have & (1u << DL_TF_OP))
		return 0;
	/* the event is named by the whole tf_op and shown as TfOpEventName() */
	if ((r = trace_tfop_event_name(&op, &d->disp)) < 0 ||
	    (r = trace_der_set_str(&d->tmp, s, n)) < 0)
		return r;
	return trace_der_expand_or_add(d, &d->lines[DL_TF_OP], 0, &d->tmp, d->disp.data,
				       d->disp.len, in);
}
