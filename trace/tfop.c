/*
 * tfop.c - a framework op (the tf_op stat): TSL's parse of its full name
 * (category, name, type), the name XProf shows for it, and the lines it
 * derives, Framework Name Scope and Framework Ops (ProcessTfOpEvent()), on
 * GPU planes (derive-gpu.c) and TensorCore planes (derive-tpu.c).
 *
 * Sources: TSL tf_op_utils.cc ParseTfOpFullname(), ParseTfNameScopes(),
 * TfOpEventName(), DeriveOpType(), IsTfOpName(), IsTfOpType(),
 * IsJaxOpType(), GetMemcpyOp(); xprof xprof/utils/derived_timeline.cc
 * ProcessTfOpEvent().
 *
 * Design: TSL's regular expressions are matched by hand, with ASCII classes
 * as RE2 reads them (no locale); a parsed op borrows the string it was
 * parsed from. The derived events go to the line builders
 * (derive-builder.c).
 *
 * Limits: the tf_op string is cut at DER_NAME_MAX bytes; name scopes deeper
 * than DER_LEVELS are not derived.
 */
#include <stdint.h>
#include <string.h>

#include "derived.h"

/* ---- TSL's tf_op_utils.cc -------------------------------------------------- */

/* ASCII classes as RE2 reads them (no locale) */
static bool a_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static bool a_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

static bool a_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool a_space(char c) /* absl::ascii_isspace() */
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* IsTfOpName(): [A-Za-z0-9.][A-Za-z0-9_.\/>-]* */
static bool tf_op_name_ok(const char *s, size_t n)
{
	if (!n || !(a_lower(s[0]) || a_upper(s[0]) || a_digit(s[0]) || s[0] == '.'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(a_lower(s[i]) || a_upper(s[i]) || a_digit(s[i]) || s[i] == '_' ||
		      s[i] == '.' || s[i] == '/' || s[i] == '>' || s[i] == '-'))
			return false;
	return true;
}

/* IsTfOpType(): [A-Z_][a-zA-Z0-9_]* */
static bool tf_op_type_ok(const char *s, size_t n)
{
	if (!n || !(a_upper(s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(a_lower(s[i]) || a_upper(s[i]) || a_digit(s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* IsJaxOpType(): [a-z_][a-z0-9_]*(\[.*\])? ('.' matches any byte but a newline) */
static bool jax_op_type_ok(const char *s, size_t n)
{
	size_t i = 1;

	if (!n || !(a_lower(s[0]) || s[0] == '_'))
		return false;
	while (i < n && (a_lower(s[i]) || a_digit(s[i]) || s[i] == '_'))
		i++;
	if (i == n)
		return true;
	if (s[i] != '[' || n - i < 2 || s[n - 1] != ']')
		return false;
	return !memchr(s + i + 1, '\n', n - i - 2);
}

/* absl::SimpleAtoi() into an int64: whitespace around, one sign, digits, no overflow. */
static bool is_int64(const char *s, size_t n)
{
	uint64_t v = 0, lim = (uint64_t)INT64_MAX;

	while (n && a_space(s[0]))
		s++, n--;
	while (n && a_space(s[n - 1]))
		n--;
	if (n && (s[0] == '-' || s[0] == '+')) {
		if (s[0] == '-')
			lim++;
		s++, n--;
	}
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!a_digit(s[i]) || v > (lim - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return true;
}

/* DeriveOpType(): the last '/' piece without a "_<integer>" suffix. */
static void derive_op_type(const char *s, size_t n, const char **t, size_t *tn)
{
	const char *op = s, *us = NULL;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			op = s + i + 1;
	n -= (size_t)(op - s);
	for (size_t i = 0; i < n; i++)
		if (op[i] == '_')
			us = op + i;
	*t = op;
	*tn = n;
	if (us && is_int64(us + 1, n - (size_t)(us + 1 - op)))
		*tn = (size_t)(us - op);
}

/* absl::StartsWithIgnoreCase() (ASCII) */
static bool starts_icase(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);

	if (n < k)
		return false;
	for (size_t i = 0; i < k; i++) {
		char a = s[i], b = p[i];

		if (a_upper(a))
			a = (char)(a - 'A' + 'a');
		if (a_upper(b))
			b = (char)(b - 'A' + 'a');
		if (a != b)
			return false;
	}
	return true;
}

static void tfop_set(struct trace_tfop *op, enum trace_tfop_cat cat, const char *type,
		     size_t type_len)
{
	op->cat = cat;
	op->type = type;
	op->type_len = type_len;
}

void trace_tfop_parse(const char *s, size_t n, struct trace_tfop *op)
{
	static const struct {
		const char *prefix, *type;
		enum trace_tfop_cat cat;
	} memcpys[] = {
		{"MEMCPYHToD", "MemcpyHToD", TFOP_MEMCPY_HTOD},
		{"MEMCPYDToH", "MemcpyDToH", TFOP_MEMCPY_DTOH},
		{"MEMCPYDToD", "MemcpyDToD", TFOP_MEMCPY_DTOD},
		{"MEMCPYHToH", "MemcpyHToH", TFOP_MEMCPY_HTOH},
	};
	const char *colon = memchr(s, ':', n), *p1, *t;
	size_t n0, n1, tn;

	op->name = s;
	op->name_len = n;
	tfop_set(op, TFOP_UNKNOWN, "", 0); /* kUnknownOp */
	if (!colon) {
		/* "<op_name>:<op_type>" or else a GPU memcpy op (GetMemcpyOp()) */
		for (size_t i = 0; i < sizeof(memcpys) / sizeof(memcpys[0]); i++)
			if (starts_icase(s, n, memcpys[i].prefix)) {
				tfop_set(op, memcpys[i].cat, memcpys[i].type,
					 strlen(memcpys[i].type));
				break;
			}
		return;
	}
	n0 = (size_t)(colon - s);
	p1 = colon + 1;
	n1 = n - n0 - 1;
	if (n0 == 8 && !memcmp(s, "Iterator", 8)) { /* kIterator: a tf.data op */
		tfop_set(op, TFOP_TF_DATA, "Dataset", 7);
		return;
	}
	if (tf_op_name_ok(s, n0) && tf_op_type_ok(p1, n1)) {
		op->name_len = n0;
		tfop_set(op, TFOP_TENSORFLOW, p1, n1);
		return;
	}
	t = p1, tn = n1;
	if (!n1)
		derive_op_type(s, n0, &t, &tn);
	if (jax_op_type_ok(t, tn)) {
		const char *br =
			memchr(t, '[', tn); /* "transpose[permutation=...]" -> "transpose" */

		op->name_len = n0;
		tfop_set(op, TFOP_JAX, t, br ? (size_t)(br - t) : tn);
	} else if (!n1) {
		op->name_len = n0;
		tfop_set(op, TFOP_TENSORFLOW, t, tn);
	}
}

int trace_tfop_event_name(const struct trace_tfop *op, struct xprofs_buf *b)
{
	const char *s = op->name, *last = s, *hit;
	size_t n = op->name_len;
	int r;

	xprofs_buf_reset(b);
	switch (op->cat) {
	case TFOP_UNKNOWN: /* the name without trailing whitespace */
		while (n && a_space(s[n - 1]))
			n--;
		return trace_der_set_str(b, s, n);
	case TFOP_TF_DATA: /* DatasetOpEventName(): "Iterator::" + the last "::" piece */
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
static int name_scopes(struct trace_derive *d, const struct trace_tfop *op,
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
	struct trace_tfop op;
	int r;

	if (n > DER_NAME_MAX)
		n = DER_NAME_MAX;
	trace_tfop_parse(s, n, &op);
	if ((op.cat == TFOP_TENSORFLOW || op.cat == TFOP_JAX) &&
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
